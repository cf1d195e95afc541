/*
 * metrics: counters, gauges and histograms keyed by "name{labels}" in an
 * array, rendered as Prometheus text in the order declared. A map from
 * name (and name + labels) to the array index finds a family or a series
 * without a scan: the connect fast path updates two series per call, and
 * a scan of every series with strcmp under the one lock was the top of its
 * profile.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metrics.h"

const double sk_metrics_buckets_reconcile[] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3,
	0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0,
	4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60 };
const size_t sk_metrics_n_buckets_reconcile =
        sizeof(sk_metrics_buckets_reconcile) / sizeof(sk_metrics_buckets_reconcile[0]);
const double sk_metrics_buckets_workqueue[] = { 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1,
	10, 100, 1000 };
const size_t sk_metrics_n_buckets_workqueue =
        sizeof(sk_metrics_buckets_workqueue) / sizeof(sk_metrics_buckets_workqueue[0]);
const double sk_metrics_buckets_request[] = { 0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30,
	60 };
const size_t sk_metrics_n_buckets_request =
        sizeof(sk_metrics_buckets_request) / sizeof(sk_metrics_buckets_request[0]);
const double sk_metrics_buckets_default[] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
	10 };
const size_t sk_metrics_n_buckets_default =
        sizeof(sk_metrics_buckets_default) / sizeof(sk_metrics_buckets_default[0]);

typedef struct metric_family {
	char *name;
	char *help;
	sk_metric_type type;
	double *bounds; /* histograms: ascending upper bounds */
	size_t n_bounds;
} metric_family;

typedef struct metric_series {
	char *name;
	char *labels; /* "" when none */
	double value; /* counters, gauges; a histogram's sum */
	uint64_t *counts; /* histograms: per bucket, not cumulative (n_bounds) */
	uint64_t count; /* histograms: observations */
} metric_series;

struct sk_metrics {
	pthread_mutex_t mu;
	metric_family *fam;
	size_t n_fam;
	metric_series *ser;
	size_t n_ser;
	sk_strmap *fam_index; /* name -> index + 1 (as a pointer) */
	sk_strmap *ser_index; /* name "\x1f" labels -> index + 1 */
};

sk_metrics *
sk_metrics_new(void)
{
	sk_metrics *m = sk_calloc(1, sizeof(*m));

	pthread_mutex_init(&m->mu, NULL);
	m->fam_index = sk_strmap_new(NULL);
	m->ser_index = sk_strmap_new(NULL);
	return m;
}

void
sk_metrics_free(sk_metrics *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n_fam; i++) {
		free(m->fam[i].name);
		free(m->fam[i].help);
		free(m->fam[i].bounds);
	}
	for (size_t i = 0; i < m->n_ser; i++) {
		free(m->ser[i].name);
		free(m->ser[i].labels);
		free(m->ser[i].counts);
	}
	free(m->fam);
	free(m->ser);
	sk_strmap_free(m->fam_index);
	sk_strmap_free(m->ser_index);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

static metric_family *
family_find(sk_metrics *m, const char *name)
{
	uintptr_t i = (uintptr_t)sk_strmap_get(m->fam_index, name);

	return i ? &m->fam[i - 1] : NULL;
}

static void
declare_locked(sk_metrics *m, const char *name, sk_metric_type type, const char *help,
        const double *bounds, size_t n)
{
	metric_family *f;

	if (family_find(m, name))
		return;
	m->fam = sk_realloc(m->fam, (m->n_fam + 1) * sizeof(*m->fam));
	f = &m->fam[m->n_fam++];
	sk_strmap_put(m->fam_index, name, (void *)(uintptr_t)m->n_fam);
	f->name = sk_strdup(name);
	f->help = sk_strdup(help ? help : "");
	f->type = type;
	f->n_bounds = bounds ? n : 0;
	f->bounds = NULL;
	if (f->n_bounds) {
		f->bounds = sk_calloc(n, sizeof(*f->bounds));
		memcpy(f->bounds, bounds, n * sizeof(*bounds));
	}
}

void
sk_metrics_declare(sk_metrics *m, const char *name, sk_metric_type type, const char *help)
{
	pthread_mutex_lock(&m->mu);
	declare_locked(m, name, type, help, NULL, 0);
	pthread_mutex_unlock(&m->mu);
}

void
sk_metrics_declare_histogram(
        sk_metrics *m, const char *name, const char *help, const double *buckets, size_t n)
{
	pthread_mutex_lock(&m->mu);
	declare_locked(m, name, SK_METRIC_HISTOGRAM, help, buckets, n);
	pthread_mutex_unlock(&m->mu);
}

/* The series, created at 0 when missing. Lock held. */
static metric_series *
series_get(sk_metrics *m, const char *name, const char *labels)
{
	metric_series *s;
	char buf[512], *key = buf;
	size_t nl = strlen(name), ll;
	uintptr_t i;

	if (!labels)
		labels = "";
	ll = strlen(labels);
	/* name \x1f labels, copied (no format to parse: every connect counts) */
	if (nl + ll + 2 > sizeof(buf))
		key = sk_malloc(nl + ll + 2);
	memcpy(key, name, nl);
	key[nl] = '\x1f';
	memcpy(key + nl + 1, labels, ll + 1);
	if ((i = (uintptr_t)sk_strmap_get(m->ser_index, key)) != 0) {
		if (key != buf)
			free(key);
		return &m->ser[i - 1];
	}
	m->ser = sk_realloc(m->ser, (m->n_ser + 1) * sizeof(*m->ser));
	s = &m->ser[m->n_ser++];
	sk_strmap_put(m->ser_index, key, (void *)(uintptr_t)m->n_ser);
	if (key != buf)
		free(key);
	memset(s, 0, sizeof(*s));
	s->name = sk_strdup(name);
	s->labels = sk_strdup(labels);
	return s;
}

void
sk_metrics_add(sk_metrics *m, const char *name, const char *labels, double delta)
{
	pthread_mutex_lock(&m->mu);
	series_get(m, name, labels)->value += delta;
	pthread_mutex_unlock(&m->mu);
}

void
sk_metrics_set(sk_metrics *m, const char *name, const char *labels, double value)
{
	pthread_mutex_lock(&m->mu);
	series_get(m, name, labels)->value = value;
	pthread_mutex_unlock(&m->mu);
}

double
sk_metrics_value(sk_metrics *m, const char *name, const char *labels)
{
	double v;

	pthread_mutex_lock(&m->mu);
	v = series_get(m, name, labels)->value;
	pthread_mutex_unlock(&m->mu);
	return v;
}

void
sk_metrics_observe(sk_metrics *m, const char *name, const char *labels, double value)
{
	metric_family *f;
	metric_series *s;
	size_t i;

	pthread_mutex_lock(&m->mu);
	f = family_find(m, name);
	if (!f || f->type != SK_METRIC_HISTOGRAM)
		goto done;
	s = series_get(m, name, labels);
	if (!s->counts)
		s->counts = sk_calloc(f->n_bounds + 1, sizeof(*s->counts));
	if (isnan(value))
		goto done;
	for (i = 0; i < f->n_bounds && value > f->bounds[i]; i++)
		;
	s->counts[i]++; /* i == n_bounds: only in +Inf */
	s->count++;
	s->value += value;
done:
	pthread_mutex_unlock(&m->mu);
}

uint64_t
sk_metrics_histogram_count(sk_metrics *m, const char *name, const char *labels, double *sum)
{
	metric_series *s;
	uint64_t n;

	pthread_mutex_lock(&m->mu);
	s = series_get(m, name, labels);
	n = s->count;
	if (sum)
		*sum = s->value;
	pthread_mutex_unlock(&m->mu);
	return n;
}

static int
family_cmp(const void *a, const void *b)
{
	return strcmp(((const metric_family *)a)->name, ((const metric_family *)b)->name);
}

static const char *
type_name(sk_metric_type t)
{
	return t == SK_METRIC_COUNTER ? "counter" : t == SK_METRIC_GAUGE ? "gauge" : "histogram";
}

/* name_bucket{labels,le="..."} cumulative, then _sum and _count. */
static void
render_histogram(const metric_family *f, const metric_series *s, sk_buf *out)
{
	const char *sep = s->labels[0] ? "," : "";
	uint64_t cum = 0;

	for (size_t i = 0; i < f->n_bounds; i++) {
		cum += s->counts ? s->counts[i] : 0;
		sk_buf_printf(out, "%s_bucket{%s%sle=\"%.15g\"} %llu\n", s->name, s->labels, sep,
		        f->bounds[i], (unsigned long long)cum);
	}
	sk_buf_printf(out, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", s->name, s->labels, sep,
	        (unsigned long long)s->count);
	if (s->labels[0]) {
		sk_buf_printf(out, "%s_sum{%s} %.15g\n", s->name, s->labels, s->value);
		sk_buf_printf(out, "%s_count{%s} %llu\n", s->name, s->labels,
		        (unsigned long long)s->count);
	} else {
		sk_buf_printf(out, "%s_sum %.15g\n%s_count %llu\n", s->name, s->value, s->name,
		        (unsigned long long)s->count);
	}
}

static void
render_family(sk_metrics *m, const metric_family *f, sk_buf *out)
{
	sk_buf_printf(
	        out, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name, type_name(f->type));
	for (size_t i = 0; i < m->n_ser; i++) {
		const metric_series *s = &m->ser[i];
		if (strcmp(s->name, f->name) != 0)
			continue;
		if (f->type == SK_METRIC_HISTOGRAM)
			render_histogram(f, s, out);
		else if (s->labels[0])
			sk_buf_printf(out, "%s{%s} %.15g\n", s->name, s->labels, s->value);
		else
			sk_buf_printf(out, "%s %.15g\n", s->name, s->value);
	}
}

int
sk_metrics_render(sk_metrics *m, sk_buf *out)
{
	pthread_mutex_lock(&m->mu);
	qsort(m->fam, m->n_fam, sizeof(*m->fam), family_cmp);
	for (size_t i = 0; i < m->n_fam; i++) /* sorted in place: the index follows */
		sk_strmap_put(m->fam_index, m->fam[i].name, (void *)(uintptr_t)(i + 1));
	for (size_t i = 0; i < m->n_fam; i++)
		render_family(m, &m->fam[i], out);
	pthread_mutex_unlock(&m->mu);
	return 0;
}

void
sk_metrics_escape(const char *value, char *out, size_t len)
{
	size_t o = 0;

	if (len == 0)
		return;
	for (const char *p = value ? value : ""; *p; p++) {
		const char *rep = *p == '\\' ? "\\\\"
		        : *p == '"'          ? "\\\""
		        : *p == '\n'         ? "\\n"
		                             : NULL;
		size_t n = rep ? 2 : 1;
		if (o + n >= len)
			break;
		if (rep)
			memcpy(out + o, rep, 2);
		else
			out[o] = *p;
		o += n;
	}
	out[o] = '\0';
}

double
sk_metrics_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
