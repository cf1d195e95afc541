/*
 * metrics: counters and gauges keyed by "name{labels}" in a sorted array
 * (a few dozen series), rendered as Prometheus text.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

typedef struct metric_family {
	char *name;
	char *help;
	sk_metric_type type;
} metric_family;

typedef struct metric_series {
	char *name;
	char *labels; /* "" when none */
	double value;
} metric_series;

struct sk_metrics {
	pthread_mutex_t mu;
	metric_family *fam;
	size_t n_fam;
	metric_series *ser;
	size_t n_ser;
};

sk_metrics *
sk_metrics_new(void)
{
	sk_metrics *m = sk_calloc(1, sizeof(*m));

	pthread_mutex_init(&m->mu, NULL);
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
	}
	for (size_t i = 0; i < m->n_ser; i++) {
		free(m->ser[i].name);
		free(m->ser[i].labels);
	}
	free(m->fam);
	free(m->ser);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

static metric_family *
family_find(sk_metrics *m, const char *name)
{
	for (size_t i = 0; i < m->n_fam; i++)
		if (strcmp(m->fam[i].name, name) == 0)
			return &m->fam[i];
	return NULL;
}

void
sk_metrics_declare(sk_metrics *m, const char *name, sk_metric_type type, const char *help)
{
	pthread_mutex_lock(&m->mu);
	if (!family_find(m, name)) {
		m->fam = sk_realloc(m->fam, (m->n_fam + 1) * sizeof(*m->fam));
		m->fam[m->n_fam].name = sk_strdup(name);
		m->fam[m->n_fam].help = sk_strdup(help ? help : "");
		m->fam[m->n_fam].type = type;
		m->n_fam++;
	}
	pthread_mutex_unlock(&m->mu);
}

/* The series, created at 0 when missing. Lock held. */
static metric_series *
series_get(sk_metrics *m, const char *name, const char *labels)
{
	metric_series *s;

	if (!labels)
		labels = "";
	for (size_t i = 0; i < m->n_ser; i++)
		if (strcmp(m->ser[i].name, name) == 0 && strcmp(m->ser[i].labels, labels) == 0)
			return &m->ser[i];
	m->ser = sk_realloc(m->ser, (m->n_ser + 1) * sizeof(*m->ser));
	s = &m->ser[m->n_ser++];
	s->name = sk_strdup(name);
	s->labels = sk_strdup(labels);
	s->value = 0;
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

static int
family_cmp(const void *a, const void *b)
{
	return strcmp(((const metric_family *)a)->name, ((const metric_family *)b)->name);
}

static void
render_family(sk_metrics *m, const metric_family *f, sk_buf *out)
{
	sk_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name,
	        f->type == SK_METRIC_COUNTER ? "counter" : "gauge");
	for (size_t i = 0; i < m->n_ser; i++) {
		const metric_series *s = &m->ser[i];
		if (strcmp(s->name, f->name) != 0)
			continue;
		if (s->labels[0])
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
	for (size_t i = 0; i < m->n_fam; i++)
		render_family(m, &m->fam[i], out);
	pthread_mutex_unlock(&m->mu);
	return 0;
}
