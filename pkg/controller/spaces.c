/*
 * spaces: what the controller remembers of each space between reconciles,
 * in memory only: the keeper its last reconcile saw (for the connect fast
 * path), the last activity (a connect or heartbeat; persisted by the
 * planner at most once per idleTimeout/4), the requests a connect left
 * for the next reconcile (wake an Idle keeper, replace an unreachable one),
 * and what the provider's answers said of the keeper beyond its lists:
 * envd's version and access token (a secret: wiped when dropped, only ever
 * handed to a connect answer and the keeper's own envd calls) and the
 * deadline spacekeeper set on it.
 * Also the set-up of the whole part (spaces_int.h: its maps and locks).
 */
#include <stdlib.h>
#include <string.h>

#include "../reconcile/reconcile.h"
#include "ground_int.h"
#include "spaces_int.h"

/* What is remembered of one space. Kept while the controller runs (a
 * deleted space's written_rv must outlive it); forget clears the memory the
 * connect path reads. */
typedef struct space_record {
	bool known; /* the fields up to replaced_ms were set since the last forget */
	char *keeper_id;
	bool running;
	bool healthy;
	int64_t seen_ms;
	int64_t end_ms;
	int64_t activity_ms;
	bool wake;
	bool replace_now;
	bool evict; /* capacity.c: pause the keeper to free a slot */
	char *evict_quota; /* the SpaceQuota the eviction frees a slot under, NULL: capacity */
	char *replaced_id;
	int64_t replaced_ms;
	char *envd_token; /* secret */
	char *envd_version;
	bool detail_seen;
	int64_t deadline_ms;
	int64_t deadline_set_ms;
	int64_t look_ms; /* the last reconcile's look at the keeper (sk_keeper_known) */
	sk_sandbox_state look_state;
	int64_t look_end_ms;
	bool drifting; /* drift_since holds the drift its last reconcile left */
	int64_t drift_since[SK_CTL_DRIFT_TYPES]; /* per type, 0: none */
	int64_t written_rv; /* resourceVersion after our last writes, 0: none */
} space_record;

static void
mem_clear(space_record *m)
{
	free(m->keeper_id);
	free(m->replaced_id);
	sk_wipe_free(m->envd_token);
	free(m->envd_version);
	free(m->evict_quota);
	m->evict_quota = NULL;
	m->keeper_id = NULL;
	m->replaced_id = NULL;
	m->envd_token = m->envd_version = NULL;
	m->known = m->running = m->healthy = m->wake = m->replace_now = m->evict = false;
	m->detail_seen = false;
	m->seen_ms = m->end_ms = m->activity_ms = m->replaced_ms = 0;
	m->deadline_ms = m->deadline_set_ms = 0;
	m->look_ms = m->look_end_ms = 0;
	m->look_state = SK_SANDBOX_UNKNOWN;
}

static void
record_free(void *v)
{
	space_record *m = v;

	if (m == NULL)
		return;
	mem_clear(m);
	free(m);
}

void
sk_ctl_spaces_init(sk_controller *c)
{
	sk_ctl_spaces *s = sk_calloc(1, sizeof(*s));

	c->spaces = s;
	pthread_mutex_init(&s->mu, NULL);
	s->by_name = sk_strmap_new(record_free);
	pthread_mutex_init(&s->done_mu, NULL);
	sk_cond_init_monotonic(&s->done);
	s->finished = sk_strmap_new(sk_ctl_done_free);
}

void
sk_ctl_spaces_dispose(sk_controller *c)
{
	sk_ctl_spaces *s = c->spaces;

	if (s == NULL)
		return;
	sk_strmap_free(s->by_name);
	pthread_mutex_destroy(&s->mu);
	sk_strmap_free(s->finished);
	pthread_cond_destroy(&s->done);
	pthread_mutex_destroy(&s->done_mu);
	free(s);
	c->spaces = NULL;
}

void
sk_ctl_spaces_wake(sk_controller *c)
{
	pthread_mutex_lock(&c->spaces->done_mu);
	pthread_cond_broadcast(&c->spaces->done);
	pthread_mutex_unlock(&c->spaces->done_mu);
}

/* The space's record, made when missing (under spaces->mu). */
static space_record *
record_of(sk_controller *c, const char *name)
{
	space_record *m = sk_strmap_get(c->spaces->by_name, name);

	if (m == NULL) {
		m = sk_calloc(1, sizeof(*m));
		sk_strmap_put(c->spaces->by_name, name, m);
	}
	return m;
}

/* ... about to hold what the connect path reads (under spaces->mu). */
static space_record *
mem_of(sk_controller *c, const char *name)
{
	space_record *m = record_of(c, name);

	m->known = true;
	return m;
}

/* The record when it holds what the connect path reads, else NULL. */
static space_record *
known(sk_controller *c, const char *name)
{
	space_record *m = sk_strmap_get(c->spaces->by_name, name);

	return m != NULL && m->known ? m : NULL;
}

void
sk_ctl_space_touch(sk_controller *c, const char *name, int64_t now_ms)
{
	pthread_mutex_lock(&c->spaces->mu);
	space_record *m = mem_of(c, name);
	if (now_ms > m->activity_ms)
		m->activity_ms = now_ms;
	pthread_mutex_unlock(&c->spaces->mu);
}

void
sk_ctl_space_request(sk_controller *c, const char *name, bool wake, bool replace_now)
{
	pthread_mutex_lock(&c->spaces->mu);
	space_record *m = mem_of(c, name);
	m->wake = m->wake || wake;
	m->replace_now = m->replace_now || replace_now;
	pthread_mutex_unlock(&c->spaces->mu);
}

void
sk_ctl_space_request_evict(sk_controller *c, const char *name, const char *quota)
{
	pthread_mutex_lock(&c->spaces->mu);
	space_record *m = mem_of(c, name);
	m->evict = true;
	free(m->evict_quota);
	m->evict_quota = sk_strdup(quota);
	pthread_mutex_unlock(&c->spaces->mu);
}

int64_t
sk_ctl_space_activity(sk_controller *c, const char *name)
{
	space_record *m;
	int64_t a;

	pthread_mutex_lock(&c->spaces->mu);
	m = sk_strmap_get(c->spaces->by_name, name);
	a = m ? m->activity_ms : 0;
	pthread_mutex_unlock(&c->spaces->mu);
	return a;
}

void
sk_ctl_space_take(sk_controller *c, const char *name, sk_reconcile_env *env)
{
	pthread_mutex_lock(&c->spaces->mu);
	space_record *m = known(c, name);
	if (m != NULL) {
		env->activity_ms = m->activity_ms;
		env->wake = m->wake;
		env->replace_now = m->replace_now;
		env->evict = m->evict;
		env->evict_quota = m->evict_quota; /* env's now (sk_ctl_space_known_dispose) */
		m->evict_quota = NULL;
		m->wake = false;
		m->replace_now = false;
		m->evict = false;
		env->known.sandbox_id = sk_strdup(m->keeper_id);
		env->known.envd_access_token = sk_strdup(m->envd_token);
		env->known.envd_version = sk_strdup(m->envd_version);
		env->known.detail_seen = m->detail_seen;
		env->known.deadline_ms = m->deadline_ms;
		env->known.deadline_set_ms = m->deadline_set_ms;
		env->known.look_ms = m->look_ms;
		env->known.look_state = m->look_state;
		env->known.look_end_ms = m->look_end_ms;
		env->known.wake = env->wake;
		env->known.replace_now = env->replace_now;
		env->known.killed_id = sk_strdup(m->replaced_id);
		env->known.killed_ms = m->replaced_ms;
	}
	env->known.fetch_detail = true;
	pthread_mutex_unlock(&c->spaces->mu);
}

void
sk_ctl_space_known_dispose(sk_reconcile_env *env)
{
	free((char *)env->known.sandbox_id);
	sk_wipe_free((char *)env->known.envd_access_token);
	free((char *)env->known.envd_version);
	free((char *)env->known.killed_id);
	memset(&env->known, 0, sizeof(env->known));
	free((char *)env->evict_quota);
	env->evict_quota = NULL;
}

void
sk_ctl_space_note(sk_controller *c, const char *name, const sk_reconcile_report *r, bool ok)
{
	pthread_mutex_lock(&c->spaces->mu);
	space_record *m = mem_of(c, name);
	free(m->keeper_id);
	m->keeper_id = sk_strdup(r->keeper_id);
	m->running = r->running;
	m->healthy = ok && r->healthy; /* a failed run proves nothing healthy */
	m->seen_ms = r->seen_ms;
	m->end_ms = r->end_ms;
	m->look_ms = r->look_ms;
	m->look_state = r->look_state;
	m->look_end_ms = r->look_end_ms;
	if (ok || r->detail_seen) {
		sk_wipe_free(m->envd_token);
		free(m->envd_version);
		m->envd_token = sk_strdup(r->envd_access_token);
		m->envd_version = sk_strdup(r->envd_version);
		m->detail_seen = r->detail_seen;
		m->deadline_ms = r->deadline_ms;
		m->deadline_set_ms = r->deadline_set_ms;
	}
	if (r->replaced_id != NULL) {
		free(m->replaced_id);
		m->replaced_id = sk_strdup(r->replaced_id);
		m->replaced_ms = r->replaced_ms;
	}
	pthread_mutex_unlock(&c->spaces->mu);
}

void
sk_ctl_space_forget(sk_controller *c, const char *name)
{
	pthread_mutex_lock(&c->spaces->mu);
	space_record *m = sk_strmap_get(c->spaces->by_name, name);
	if (m != NULL)
		mem_clear(m);
	pthread_mutex_unlock(&c->spaces->mu);
}

/* src (NULL: "") into dst of size n, cut to fit: snprintf's "%s" without
 * its formatting, which the fast path paid for four times a connect. */
static void
copy_str(char *dst, size_t n, const char *src)
{
	size_t len = src ? strnlen(src, n - 1) : 0;

	if (len > 0)
		memcpy(dst, src, len);
	dst[len] = '\0';
}

bool
sk_ctl_space_keeper(sk_controller *c, const char *name, sk_ctl_keeper *out)
{
	bool found;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&c->spaces->mu);
	space_record *m = known(c, name);
	found = m != NULL;
	if (found) {
		copy_str(out->id, sizeof(out->id), m->keeper_id);
		copy_str(out->replaced_id, sizeof(out->replaced_id), m->replaced_id);
		out->mem.running = m->running;
		out->mem.healthy = m->healthy;
		out->mem.seen_ms = m->seen_ms;
		out->mem.end_ms = m->end_ms;
		out->replaced_ms = m->replaced_ms;
		copy_str(out->envd_token, sizeof(out->envd_token), m->envd_token);
		copy_str(out->envd_version, sizeof(out->envd_version), m->envd_version);
		out->deadline_ms = m->deadline_ms;
		out->detail_seen = m->detail_seen;
	}
	pthread_mutex_unlock(&c->spaces->mu);
	out->mem.sandbox_id = out->id[0] ? out->id : NULL;
	return found;
}

void
sk_ctl_space_set_drift(sk_controller *c, const char *name, const int64_t *since)
{
	pthread_mutex_lock(&c->spaces->mu);
	space_record *m = since ? record_of(c, name) : sk_strmap_get(c->spaces->by_name, name);
	if (m != NULL) {
		m->drifting = since != NULL;
		for (size_t t = 0; t < SK_CTL_DRIFT_TYPES; t++)
			m->drift_since[t] = since ? since[t] : 0;
	}
	pthread_mutex_unlock(&c->spaces->mu);
}

typedef struct drift_walk {
	sk_ctl_drift_fn fn;
	void *payload;
} drift_walk;

static void
walk_drift(const char *name, void *value, void *payload)
{
	const space_record *m = value;
	drift_walk *w = payload;

	if (m->drifting)
		w->fn(name, m->drift_since, w->payload);
}

void
sk_ctl_spaces_drift(sk_controller *c, sk_ctl_drift_fn fn, void *payload)
{
	drift_walk w = { fn, payload };

	pthread_mutex_lock(&c->spaces->mu);
	sk_strmap_foreach(c->spaces->by_name, walk_drift, &w);
	pthread_mutex_unlock(&c->spaces->mu);
}

int64_t
sk_ctl_space_written_rv(sk_controller *c, const char *name)
{
	int64_t rv;

	pthread_mutex_lock(&c->spaces->mu);
	space_record *m = sk_strmap_get(c->spaces->by_name, name);
	rv = m ? m->written_rv : 0;
	pthread_mutex_unlock(&c->spaces->mu);
	return rv;
}

void
sk_ctl_space_set_written_rv(sk_controller *c, const char *name, int64_t rv)
{
	pthread_mutex_lock(&c->spaces->mu);
	record_of(c, name)->written_rv = rv;
	pthread_mutex_unlock(&c->spaces->mu);
}
