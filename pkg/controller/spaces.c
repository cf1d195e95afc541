/*
 * spaces: what the controller remembers of each space between reconciles,
 * in memory only: the keeper its last reconcile saw (for the connect fast
 * path), the last activity (a connect or heartbeat; persisted by the
 * planner at most once per idleTimeout/4), the requests a connect left
 * for the next reconcile (wake an Idle keeper, replace an unreachable one,
 * probe it now), and what the provider's answers said of the keeper beyond
 * its lists: envd's version and access token (a secret: wiped when
 * dropped, only ever handed to a connect answer and the keeper's own envd
 * calls) and the deadline spacekeeper set on it.
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
	char *envd_token; /* secret */
	char *envd_version;
	bool detail_seen;
	int64_t deadline_ms;
	int64_t deadline_set_ms;
} space_mem;

static void
mem_free(void *v)
{
	space_mem *m = v;

	if (m == NULL)
		return;
	free(m->keeper_id);
	free(m->replaced_id);
	sk_secret_free(m->envd_token);
	free(m->envd_version);
	free(m);
}

void
sk_ctl_spaces_init(sk_controller *c)
{
	pthread_mutex_init(&c->spaces_mu, NULL);
	c->spaces = sk_strmap_new(mem_free);
}

void
sk_ctl_spaces_dispose(sk_controller *c)
{
	sk_strmap_free(c->spaces);
	c->spaces = NULL;
	pthread_mutex_destroy(&c->spaces_mu);
}

/* Under spaces_mu. */
static space_mem *
mem_of(sk_controller *c, const char *name)
{
	space_mem *m = sk_strmap_get(c->spaces, name);

	if (m == NULL) {
		m = sk_calloc(1, sizeof(*m));
		sk_strmap_put(c->spaces, name, m);
	}
	return m;
}

void
sk_ctl_space_touch(sk_controller *c, const char *name, int64_t now_ms)
{
	pthread_mutex_lock(&c->spaces_mu);
	space_mem *m = mem_of(c, name);
	if (now_ms > m->activity_ms)
		m->activity_ms = now_ms;
	pthread_mutex_unlock(&c->spaces_mu);
}

void
sk_ctl_space_request(sk_controller *c, const char *name, bool wake, bool replace_now)
{
	pthread_mutex_lock(&c->spaces_mu);
	space_mem *m = mem_of(c, name);
	m->wake = m->wake || wake;
	m->replace_now = m->replace_now || replace_now;
	pthread_mutex_unlock(&c->spaces_mu);
}

void
sk_ctl_space_take(sk_controller *c, const char *name, sk_reconcile_env *env)
{
	pthread_mutex_lock(&c->spaces_mu);
	space_mem *m = sk_strmap_get(c->spaces, name);
	if (m != NULL) {
		env->activity_ms = m->activity_ms;
		env->wake = m->wake;
		env->replace_now = m->replace_now;
		m->wake = false;
		m->replace_now = false;
		env->known.sandbox_id = sk_strdup(m->keeper_id);
		env->known.envd_access_token = sk_strdup(m->envd_token);
		env->known.envd_version = sk_strdup(m->envd_version);
		env->known.detail_seen = m->detail_seen;
		env->known.deadline_ms = m->deadline_ms;
		env->known.deadline_set_ms = m->deadline_set_ms;
	}
	env->known.fetch_detail = true;
	pthread_mutex_unlock(&c->spaces_mu);
}

void
sk_ctl_space_known_dispose(sk_reconcile_env *env)
{
	free((char *)env->known.sandbox_id);
	sk_secret_free((char *)env->known.envd_access_token);
	free((char *)env->known.envd_version);
	memset(&env->known, 0, sizeof(env->known));
}

void
sk_ctl_space_note(sk_controller *c, const char *name, const sk_reconcile_report *r, bool ok)
{
	pthread_mutex_lock(&c->spaces_mu);
	space_mem *m = mem_of(c, name);
	free(m->keeper_id);
	m->keeper_id = sk_strdup(r->keeper_id);
	m->running = r->running;
	m->healthy = ok && r->healthy; /* a failed run proves nothing healthy */
	m->seen_ms = r->seen_ms;
	m->end_ms = r->end_ms;
	if (ok || r->detail_seen) {
		sk_secret_free(m->envd_token);
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
	pthread_mutex_unlock(&c->spaces_mu);
}

void
sk_ctl_space_forget(sk_controller *c, const char *name)
{
	pthread_mutex_lock(&c->spaces_mu);
	sk_strmap_remove(c->spaces, name);
	pthread_mutex_unlock(&c->spaces_mu);
}

bool
sk_ctl_space_keeper(sk_controller *c, const char *name, sk_ctl_keeper *out)
{
	bool found;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&c->spaces_mu);
	space_mem *m = sk_strmap_get(c->spaces, name);
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
		snprintf(out->envd_token, sizeof(out->envd_token), "%s",
		        m->envd_token ? m->envd_token : "");
		snprintf(out->envd_version, sizeof(out->envd_version), "%s",
		        m->envd_version ? m->envd_version : "");
		out->deadline_ms = m->deadline_ms;
		out->detail_seen = m->detail_seen;
	}
	pthread_mutex_unlock(&c->spaces_mu);
	out->mem.sandbox_id = out->id[0] ? out->id : NULL;
	return found;
}
