/*
 * spaces: what the controller remembers of each space between reconciles,
 * in memory only: the keeper its last reconcile saw (for the connect fast
 * path), the last activity (a connect or heartbeat; persisted by the
 * planner at most once per idleTimeout/4), and the requests a connect left
 * for the next reconcile (wake an Idle keeper, replace an unreachable one).
 * Also the set-up of the whole part (spaces_int.h: its maps and locks).
 */
#include <stdlib.h>
#include <string.h>

#include "controller_int.h"

typedef struct space_mem {
	char *keeper_id;
	bool running;
	bool healthy;
	int64_t seen_ms;
	int64_t end_ms;
	int64_t activity_ms;
	bool wake;
	bool replace_now;
	char *replaced_id;
	int64_t replaced_ms;
} space_mem;

static void
mem_free(void *v)
{
	space_mem *m = v;

	if (m == NULL)
		return;
	free(m->keeper_id);
	free(m->replaced_id);
	free(m);
}

void
sk_ctl_spaces_init(sk_controller *c)
{
	sk_ctl_spaces *s = &c->spaces;

	pthread_mutex_init(&s->mu, NULL);
	s->mem = sk_strmap_new(mem_free);
	s->drift = sk_strmap_new(free);
	s->written_rv = sk_strmap_new(free);
	pthread_mutex_init(&s->done_mu, NULL);
	sk_cond_init_monotonic(&s->done);
	s->done_gen = sk_strmap_new(free);
	s->failed = sk_strmap_new(NULL);
}

void
sk_ctl_spaces_dispose(sk_controller *c)
{
	sk_ctl_spaces *s = &c->spaces;

	sk_strmap_free(s->mem);
	sk_strmap_free(s->drift);
	sk_strmap_free(s->written_rv);
	pthread_mutex_destroy(&s->mu);
	sk_strmap_free(s->done_gen);
	sk_strmap_free(s->failed);
	pthread_cond_destroy(&s->done);
	pthread_mutex_destroy(&s->done_mu);
	memset(s, 0, sizeof(*s));
}

void
sk_ctl_spaces_wake(sk_controller *c)
{
	pthread_mutex_lock(&c->spaces.done_mu);
	pthread_cond_broadcast(&c->spaces.done);
	pthread_mutex_unlock(&c->spaces.done_mu);
}

/* Under spaces.mu. */
static space_mem *
mem_of(sk_controller *c, const char *name)
{
	space_mem *m = sk_strmap_get(c->spaces.mem, name);

	if (m == NULL) {
		m = sk_calloc(1, sizeof(*m));
		sk_strmap_put(c->spaces.mem, name, m);
	}
	return m;
}

void
sk_ctl_space_touch(sk_controller *c, const char *name, int64_t now_ms)
{
	pthread_mutex_lock(&c->spaces.mu);
	space_mem *m = mem_of(c, name);
	if (now_ms > m->activity_ms)
		m->activity_ms = now_ms;
	pthread_mutex_unlock(&c->spaces.mu);
}

void
sk_ctl_space_request(sk_controller *c, const char *name, bool wake, bool replace_now)
{
	pthread_mutex_lock(&c->spaces.mu);
	space_mem *m = mem_of(c, name);
	m->wake = m->wake || wake;
	m->replace_now = m->replace_now || replace_now;
	pthread_mutex_unlock(&c->spaces.mu);
}

void
sk_ctl_space_take(sk_controller *c, const char *name, sk_reconcile_env *env)
{
	pthread_mutex_lock(&c->spaces.mu);
	space_mem *m = sk_strmap_get(c->spaces.mem, name);
	if (m != NULL) {
		env->activity_ms = m->activity_ms;
		env->wake = m->wake;
		env->replace_now = m->replace_now;
		m->wake = false;
		m->replace_now = false;
	}
	pthread_mutex_unlock(&c->spaces.mu);
}

void
sk_ctl_space_note(sk_controller *c, const char *name, const sk_reconcile_report *r, bool ok)
{
	pthread_mutex_lock(&c->spaces.mu);
	space_mem *m = mem_of(c, name);
	free(m->keeper_id);
	m->keeper_id = sk_strdup(r->keeper_id);
	m->running = r->running;
	m->healthy = ok && r->healthy; /* a failed run proves nothing healthy */
	m->seen_ms = r->seen_ms;
	m->end_ms = r->end_ms;
	if (r->replaced_id != NULL) {
		free(m->replaced_id);
		m->replaced_id = sk_strdup(r->replaced_id);
		m->replaced_ms = r->replaced_ms;
	}
	pthread_mutex_unlock(&c->spaces.mu);
}

void
sk_ctl_space_forget(sk_controller *c, const char *name)
{
	pthread_mutex_lock(&c->spaces.mu);
	sk_strmap_remove(c->spaces.mem, name);
	pthread_mutex_unlock(&c->spaces.mu);
}

bool
sk_ctl_space_keeper(sk_controller *c, const char *name, sk_ctl_keeper *out)
{
	bool found;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&c->spaces.mu);
	space_mem *m = sk_strmap_get(c->spaces.mem, name);
	found = m != NULL;
	if (found) {
		snprintf(out->id, sizeof(out->id), "%s", m->keeper_id ? m->keeper_id : "");
		snprintf(out->replaced_id, sizeof(out->replaced_id), "%s",
		        m->replaced_id ? m->replaced_id : "");
		out->mem.running = m->running;
		out->mem.healthy = m->healthy;
		out->mem.seen_ms = m->seen_ms;
		out->mem.end_ms = m->end_ms;
		out->replaced_ms = m->replaced_ms;
	}
	pthread_mutex_unlock(&c->spaces.mu);
	out->mem.sandbox_id = out->id[0] ? out->id : NULL;
	return found;
}
