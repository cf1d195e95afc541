/*
 * sandboxsim fault injection, request statistics and the /_sim admin API.
 *
 * Fault document (POST /_sim/faults merges it; each top-level key given
 * replaces that setting, each endpoint given replaces that entry, null
 * removes it; DELETE /_sim/faults clears everything; GET shows the state):
 *
 *   {
 *     "latency": { "<endpoint>|*": { "fixed_ms": 100, "jitter_ms": 50 } },
 *     "errors":  { "<endpoint>|*": { "rate": 0.5, "status": 429,
 *                                    "retry_after_s": 2, "count": 3 } },
 *     "resume_504_s": 5,            data plane answers 504 for N s after a resume
 *     "unreachable": ["<id>", ...], data plane answers 504 for these, indefinitely
 *     "list_empty_s": 10,           lists return [] for N s (-1: until cleared)
 *     "overload": { "max_inflight": 8, "retry_after_s": 2 },
 *                                   503 + Retry-After above N concurrent API calls
 *     "resume_lose_files": { "mode": "empty|partial", "count": 1 },
 *                                   a resume of a paused sandbox loses its
 *                                   files: all of them, or every other regular
 *                                   file (count: resumes left, default unlimited)
 *     "bodies":  { "<endpoint>|*": { "mode": "truncate|garbage|oversize",
 *                                    "size_mb": 16, "count": 1 } }
 *                                   bad response bodies: JSON cut in half, an
 *                                   HTML page, or JSON padded to size_mb MiB
 *     "caps": { "max_running": 5, "creates_per_second": 1 }
 *                                   a plan's limits, refused as E2B does (caps.c)
 *   }
 *
 * Endpoints: create get list list_v1 kill pause connect resume timeout
 * refreshes start stop archive labels autostop api_health health envd init
 * process files (envd GET/POST /files, the Daytona toolbox's /files...)
 * filesystem (envd filesystem.Filesystem/...).
 * "*" means every control-plane endpoint; an explicit entry wins over "*".
 * "rate" defaults to 1, "count" (injections left) to unlimited; latency
 * jitter is uniform in [0, jitter_ms] from the --seed PRNG.
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

void
sim_faults_init(sim_faults *f, uint64_t seed)
{
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->lock, NULL);
	f->rng = seed ^ 0x5851f42d4c957f2dULL;
}

static void
clear_locked(sim_faults *f)
{
	for (int i = 0; i < f->nunreachable; i++)
		free(f->unreachable[i]);
	free(f->unreachable);
	f->unreachable = NULL;
	f->nunreachable = 0;
	memset(f->latency, 0, sizeof(f->latency));
	memset(f->errors, 0, sizeof(f->errors));
	memset(f->bodies, 0, sizeof(f->bodies));
	f->resume_504_s = 0;
	f->list_empty_s = 0;
	f->list_empty_until = 0;
	f->overload_max_inflight = 0;
	f->overload_retry_after_s = 0;
	memset(&f->caps, 0, sizeof(f->caps));
	f->resume_lose_mode = SIM_LOSE_NONE;
	f->resume_lose_count = 0;
}

void
sim_faults_clear(sim_faults *f)
{
	pthread_mutex_lock(&f->lock);
	clear_locked(f);
	pthread_mutex_unlock(&f->lock);
}

void
sim_faults_destroy(sim_faults *f)
{
	clear_locked(f);
	pthread_mutex_destroy(&f->lock);
}

/* ---- parsing ---- */

static int
fail(char *why, size_t len, const char *msg, const char *what)
{
	snprintf(why, len, msg, what);
	return -1;
}

static int
parse_latency(sim_latency *out, json_t *v, char *why, size_t len)
{
	json_t *fx = json_object_get(v, "fixed_ms"), *jt = json_object_get(v, "jitter_ms");

	if (!json_is_object(v) || (fx && !json_is_integer(fx)) || (jt && !json_is_integer(jt)))
		return fail(why, len, "latency entry %s: want {fixed_ms, jitter_ms} integers", "");
	out->set = true;
	out->fixed_ms = fx ? json_integer_value(fx) : 0;
	out->jitter_ms = jt ? json_integer_value(jt) : 0;
	if (out->fixed_ms < 0 || out->jitter_ms < 0 || out->fixed_ms + out->jitter_ms > 600000)
		return fail(why, len, "latency entry%s: out of range", "");
	return 0;
}

static int
parse_error(sim_errfault *out, json_t *v, char *why, size_t len)
{
	json_t *rate = json_object_get(v, "rate"), *st = json_object_get(v, "status");
	json_t *ra = json_object_get(v, "retry_after_s"), *cnt = json_object_get(v, "count");

	if (!json_is_object(v) || !json_is_integer(st) || (rate && !json_is_number(rate)) ||
	        (ra && !json_is_integer(ra)) || (cnt && !json_is_integer(cnt)))
		return fail(
		        why, len, "errors entry%s: want {status, rate, retry_after_s, count}", "");
	out->set = true;
	out->status = (int)json_integer_value(st);
	out->rate = rate ? json_number_value(rate) : 1.0;
	out->retry_after_s = ra ? (int)json_integer_value(ra) : 0;
	out->count = cnt ? (int)json_integer_value(cnt) : -1;
	if (out->status < 400 || out->status > 599 || out->rate < 0 || out->rate > 1)
		return fail(why, len, "errors entry%s: status 400..599, rate 0..1", "");
	return 0;
}

static const char *const body_modes[] = { "none", "truncate", "garbage", "oversize" };

static int
parse_body(sim_bodyfault *out, json_t *v, char *why, size_t len)
{
	json_t *mode = json_object_get(v, "mode"), *mb = json_object_get(v, "size_mb");
	json_t *cnt = json_object_get(v, "count");

	memset(out, 0, sizeof(*out));
	if (!json_is_object(v) || !json_is_string(mode) || (mb && !json_is_integer(mb)) ||
	        (cnt && !json_is_integer(cnt)))
		return fail(why, len, "bodies entry%s: want {mode, size_mb, count}", "");
	for (int i = 1; i < 4; i++)
		if (strcmp(json_string_value(mode), body_modes[i]) == 0)
			out->mode = i;
	out->size_mb = mb ? (int)json_integer_value(mb) : 16;
	out->count = cnt ? (int)json_integer_value(cnt) : -1;
	if (out->mode == SIM_BODY_NONE || out->size_mb < 1 || out->size_mb > 256)
		return fail(why, len,
		        "bodies entry%s: mode truncate|garbage|oversize, size_mb 1..256", "");
	return 0;
}

static int
parse_entry(sim_faults *f, int ep, int kind, json_t *v, char *why, size_t len)
{
	if (json_is_null(v)) {
		if (kind == 'l')
			memset(&f->latency[ep], 0, sizeof(f->latency[ep]));
		else if (kind == 'e')
			memset(&f->errors[ep], 0, sizeof(f->errors[ep]));
		else
			memset(&f->bodies[ep], 0, sizeof(f->bodies[ep]));
		return 0;
	}
	if (kind == 'l')
		return parse_latency(&f->latency[ep], v, why, len);
	if (kind == 'e')
		return parse_error(&f->errors[ep], v, why, len);
	return parse_body(&f->bodies[ep], v, why, len);
}

/* kind: 'l'atency, 'e'rrors or 'b'odies */
static int
parse_per_endpoint(sim_faults *f, json_t *obj, int kind, char *why, size_t len)
{
	const char *k;
	json_t *v;

	if (!json_is_object(obj))
		return fail(why, len, "%s must be an object keyed by endpoint",
		        kind == 'l'           ? "latency"
		                : kind == 'e' ? "errors"
		                              : "bodies");
	json_object_foreach(obj, k, v)
	{
		int ep = sim_ep_lookup(k);
		if (ep < 0 || ep == SIM_EP_SIM)
			return fail(why, len, "unknown endpoint \"%s\"", k);
		if (parse_entry(f, ep, kind, v, why, len) != 0)
			return -1;
	}
	return 0;
}

static int
parse_unreachable(sim_faults *f, json_t *arr, char *why, size_t len)
{
	size_t i;
	json_t *v;

	if (!json_is_array(arr))
		return fail(why, len, "unreachable must be an array of sandbox IDs%s", "");
	json_array_foreach(arr, i, v) if (!json_is_string(v)) return fail(
	        why, len, "unreachable must be an array of sandbox IDs%s", "");
	for (int j = 0; j < f->nunreachable; j++)
		free(f->unreachable[j]);
	free(f->unreachable);
	f->nunreachable = (int)json_array_size(arr);
	f->unreachable = sk_calloc((size_t)f->nunreachable + 1, sizeof(char *));
	json_array_foreach(arr, i, v) f->unreachable[i] = sk_strdup(json_string_value(v));
	return 0;
}

static int
parse_overload(sim_faults *f, json_t *v, char *why, size_t len)
{
	json_t *m = json_object_get(v, "max_inflight"), *ra = json_object_get(v, "retry_after_s");

	if (json_is_null(v)) {
		f->overload_max_inflight = 0;
		return 0;
	}
	if (!json_is_object(v) || !json_is_integer(m) || (ra && !json_is_integer(ra)))
		return fail(why, len, "overload%s: want {max_inflight, retry_after_s}", "");
	f->overload_max_inflight = (int)json_integer_value(m);
	f->overload_retry_after_s = ra ? (int)json_integer_value(ra) : 1;
	return 0;
}

static const char *const lose_modes[] = { "none", "empty", "partial" };

static int
parse_lose(sim_faults *f, json_t *v, char *why, size_t len)
{
	json_t *mode = json_object_get(v, "mode"), *cnt = json_object_get(v, "count");

	f->resume_lose_mode = SIM_LOSE_NONE;
	if (json_is_null(v))
		return 0;
	if (!json_is_object(v) || !json_is_string(mode) || (cnt && !json_is_integer(cnt)))
		return fail(why, len, "resume_lose_files%s: want {mode, count}", "");
	for (int i = 1; i < 3; i++)
		if (strcmp(json_string_value(mode), lose_modes[i]) == 0)
			f->resume_lose_mode = i;
	f->resume_lose_count = cnt ? (int)json_integer_value(cnt) : -1;
	if (f->resume_lose_mode == SIM_LOSE_NONE)
		return fail(why, len, "resume_lose_files%s: mode empty|partial", "");
	return 0;
}

static int
apply_key(sim_faults *f, const char *k, json_t *v, char *why, size_t len)
{
	if (strcmp(k, "latency") == 0 || strcmp(k, "errors") == 0 || strcmp(k, "bodies") == 0)
		return parse_per_endpoint(f, v, k[0], why, len);
	if (strcmp(k, "unreachable") == 0)
		return parse_unreachable(f, v, why, len);
	if (strcmp(k, "overload") == 0)
		return parse_overload(f, v, why, len);
	if (strcmp(k, "caps") == 0)
		return sim_caps_parse(&f->caps, v, why, len);
	if (strcmp(k, "resume_lose_files") == 0)
		return parse_lose(f, v, why, len);
	if (strcmp(k, "resume_504_s") == 0 || strcmp(k, "list_empty_s") == 0) {
		int n;
		if (!json_is_integer(v) || json_integer_value(v) < -1)
			return fail(why, len, "%s must be an integer >= -1", k);
		n = (int)json_integer_value(v);
		if (k[0] == 'r') {
			f->resume_504_s = n;
		} else {
			f->list_empty_s = n;
			f->list_empty_until = n == 0 ? 0
			        : n < 0              ? INT64_MAX
			                             : sk_now_ms() + (int64_t)n * 1000;
		}
		return 0;
	}
	return fail(why, len, "unknown fault \"%s\"", k);
}

int
sim_faults_apply_json(sim_faults *f, json_t *doc, char *why, size_t whylen)
{
	const char *k;
	json_t *v;
	int rc = 0;

	if (!json_is_object(doc))
		return fail(why, whylen, "faults must be a JSON object%s", "");
	pthread_mutex_lock(&f->lock);
	json_object_foreach(doc, k, v)
	{
		if ((rc = apply_key(f, k, v, why, whylen)) != 0)
			break;
	}
	pthread_mutex_unlock(&f->lock);
	return rc;
}

json_t *
sim_faults_to_json(sim_faults *f)
{
	json_t *lat = json_object(), *err = json_object(), *unr = json_array(),
	       *bod = json_object();
	json_t *o;

	pthread_mutex_lock(&f->lock);
	for (int i = 0; i <= SIM_EP_COUNT; i++) {
		const char *name = i == SIM_EP_COUNT ? "*" : sim_ep_names[i];
		if (f->latency[i].set)
			json_object_set_new(lat, name,
			        json_pack("{s:I,s:I}", "fixed_ms",
			                (json_int_t)f->latency[i].fixed_ms, "jitter_ms",
			                (json_int_t)f->latency[i].jitter_ms));
		if (f->errors[i].set)
			json_object_set_new(err, name,
			        json_pack("{s:f,s:i,s:i,s:i}", "rate", f->errors[i].rate, "status",
			                f->errors[i].status, "retry_after_s",
			                f->errors[i].retry_after_s, "count", f->errors[i].count));
		if (f->bodies[i].mode != SIM_BODY_NONE)
			json_object_set_new(bod, name,
			        json_pack("{s:s,s:i,s:i}", "mode", body_modes[f->bodies[i].mode],
			                "size_mb", f->bodies[i].size_mb, "count",
			                f->bodies[i].count));
	}
	for (int i = 0; i < f->nunreachable; i++)
		json_array_append_new(unr, json_string(f->unreachable[i]));
	o = json_pack("{s:o,s:o,s:i,s:o,s:i,s:{s:i,s:i}}", "latency", lat, "errors", err,
	        "resume_504_s", f->resume_504_s, "unreachable", unr, "list_empty_s",
	        f->list_empty_s, "overload", "max_inflight", f->overload_max_inflight,
	        "retry_after_s", f->overload_retry_after_s);
	json_object_set_new(o, "bodies", bod);
	json_object_set_new(o, "caps", sim_caps_json(&f->caps));
	if (f->resume_lose_mode != SIM_LOSE_NONE)
		json_object_set_new(o, "resume_lose_files",
		        json_pack("{s:s,s:i}", "mode", lose_modes[f->resume_lose_mode], "count",
		                f->resume_lose_count));
	pthread_mutex_unlock(&f->lock);
	return o;
}

/* ---- applying ---- */

int
sim_faults_resume_loss(sim *s)
{
	sim_faults *f = &s->faults;
	int mode;

	pthread_mutex_lock(&f->lock);
	mode = f->resume_lose_mode;
	if (mode != SIM_LOSE_NONE && f->resume_lose_count > 0 && --f->resume_lose_count == 0)
		f->resume_lose_mode = SIM_LOSE_NONE;
	pthread_mutex_unlock(&f->lock);
	return mode;
}

int64_t
sim_faults_delay_ms(sim *s, int ep)
{
	sim_faults *f = &s->faults;
	bool control = sim_ep_is_control(ep);
	int64_t ms = control ? s->latency_ms : 0;
	sim_latency *l;

	pthread_mutex_lock(&f->lock);
	l = f->latency[ep].set ? &f->latency[ep] : control ? &f->latency[SIM_EP_COUNT] : NULL;
	if (l && l->set) {
		ms += l->fixed_ms;
		if (l->jitter_ms > 0)
			ms += (int64_t)(sim_rand(&f->rng) % (uint64_t)(l->jitter_ms + 1));
	}
	pthread_mutex_unlock(&f->lock);
	return ms;
}

int
sim_faults_error(sim *s, int ep, int *retry_after_s)
{
	sim_faults *f = &s->faults;
	sim_errfault *e;
	int status = 0;

	pthread_mutex_lock(&f->lock);
	e = f->errors[ep].set           ? &f->errors[ep]
	        : sim_ep_is_control(ep) ? &f->errors[SIM_EP_COUNT]
	                                : NULL;
	if (e && e->set && e->count != 0 &&
	        (double)(sim_rand(&f->rng) >> 11) / (double)(1ULL << 53) < e->rate) {
		status = e->status;
		*retry_after_s = e->retry_after_s;
		if (e->count > 0)
			e->count--;
	}
	pthread_mutex_unlock(&f->lock);
	return status;
}

bool
sim_faults_list_empty(sim *s, int64_t now)
{
	bool empty;

	pthread_mutex_lock(&s->faults.lock);
	empty = s->faults.list_empty_until > now;
	pthread_mutex_unlock(&s->faults.lock);
	return empty;
}

bool
sim_faults_unreachable(sim *s, const sim_sandbox *sb, int64_t now)
{
	sim_faults *f = &s->faults;
	bool hit = false;

	pthread_mutex_lock(&f->lock);
	if (f->resume_504_s > 0 && sb->resumed_ms > 0 &&
	        now < sb->resumed_ms + (int64_t)f->resume_504_s * 1000)
		hit = true;
	for (int i = 0; !hit && i < f->nunreachable; i++)
		hit = strcmp(f->unreachable[i], sb->id) == 0;
	pthread_mutex_unlock(&f->lock);
	return hit;
}

bool
sim_faults_overload_enter(sim *s, int *retry_after_s)
{
	sim_faults *f = &s->faults;
	bool ok = true;

	pthread_mutex_lock(&f->lock);
	if (f->overload_max_inflight > 0 && f->inflight >= f->overload_max_inflight) {
		ok = false;
		*retry_after_s = f->overload_retry_after_s;
	} else {
		f->inflight++;
	}
	pthread_mutex_unlock(&f->lock);
	return ok;
}

void
sim_faults_overload_leave(sim *s)
{
	pthread_mutex_lock(&s->faults.lock);
	s->faults.inflight--;
	pthread_mutex_unlock(&s->faults.lock);
}

static int
take_body_fault(sim_faults *f, int ep, int *size_mb)
{
	sim_bodyfault *b;
	int mode = SIM_BODY_NONE;

	pthread_mutex_lock(&f->lock);
	b = f->bodies[ep].mode          ? &f->bodies[ep]
	        : sim_ep_is_control(ep) ? &f->bodies[SIM_EP_COUNT]
	                                : NULL;
	if (b && b->mode != SIM_BODY_NONE && b->count != 0) {
		mode = b->mode;
		*size_mb = b->size_mb;
		if (b->count > 0)
			b->count--;
	}
	pthread_mutex_unlock(&f->lock);
	return mode;
}

void
sim_faults_mangle(sim *s, sim_req *r)
{
	static const char html[] = "<html><body><h1>502 Bad Gateway</h1></body></html>\n";
	int size_mb = 0, mode = take_body_fault(&s->faults, r->ep, &size_mb);
	size_t n;

	if (mode == SIM_BODY_TRUNCATE && r->resp) {
		r->resp_len /= 2;
	} else if (mode == SIM_BODY_GARBAGE) {
		sim_reply_text(r, r->status, "text/html", html);
	} else if (mode == SIM_BODY_OVERSIZE) {
		/* valid JSON: the original body followed by whitespace padding */
		n = (size_t)size_mb << 20;
		if (r->resp_len < n) {
			r->resp = sk_realloc(r->resp, n);
			memset(r->resp + r->resp_len, ' ', n - r->resp_len);
			if (r->resp_len == 0)
				r->resp[0] = '{', r->resp[n - 1] = '}';
			r->resp_len = n;
			if (r->ctype == NULL)
				r->ctype = "application/json";
		}
	}
}

/* ---- stats ---- */

void
sim_stats_count(sim *s, int ep, int status)
{
	if (status < 0 || status >= 600)
		return;
	pthread_mutex_lock(&s->stats.lock);
	s->stats.counts[ep][status]++;
	s->stats.total++;
	pthread_mutex_unlock(&s->stats.lock);
}

json_t *
sim_stats_json(sim *s)
{
	json_t *req = json_object(), *o;
	json_int_t running = 0;
	char code[16];

	/* Sandboxes running now (after expiry): sampled, running-sandbox-seconds. */
	pthread_mutex_lock(&s->lock);
	sim_store_sweep(s, sk_now_ms());
	for (sim_sandbox *sb = s->store.head; sb; sb = sb->next)
		running += sb->state == SIM_RUNNING;
	pthread_mutex_unlock(&s->lock);
	pthread_mutex_lock(&s->stats.lock);
	for (int ep = 0; ep < SIM_EP_COUNT; ep++) {
		json_t *by = NULL;
		for (int st = 0; st < 600; st++) {
			if (s->stats.counts[ep][st] == 0)
				continue;
			if (by == NULL)
				by = json_object();
			snprintf(code, sizeof(code), "%d", st);
			json_object_set_new(
			        by, code, json_integer((json_int_t)s->stats.counts[ep][st]));
		}
		if (by)
			json_object_set_new(req, sim_ep_names[ep], by);
	}
	o = json_pack("{s:o,s:I,s:I,s:i,s:{s:I,s:I}}", "requests", req, "total",
	        (json_int_t)s->stats.total, "running", running, "max_running",
	        s->stats.max_running > running ? s->stats.max_running : (int)running, "refused",
	        "concurrency", (json_int_t)s->stats.refused_concurrency, "rate",
	        (json_int_t)s->stats.refused_rate);
	pthread_mutex_unlock(&s->stats.lock);
	return o;
}

void
sim_stats_reset(sim *s)
{
	pthread_mutex_lock(&s->stats.lock);
	memset(s->stats.counts, 0, sizeof(s->stats.counts));
	s->stats.total = 0;
	s->stats.max_running = 0;
	s->stats.refused_concurrency = 0;
	s->stats.refused_rate = 0;
	pthread_mutex_unlock(&s->stats.lock);
}
