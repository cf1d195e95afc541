/*
 * reconcile/plan_status: helpers of the pure planner that build the plan's
 * actions and its next status: conditions with their transition times, the
 * drift list with `since` kept across rounds, and the requeue delay.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "../api/migration.h"
#include "../api/status.h"
#include "plan.h"
#include "plan_int.h"
#include "reconcile_int.h"

static const char *const cond_types[SK_C_COUNT] = {
	SK_COND_READY,
	SK_COND_SYNCED,
	SK_COND_DATAPLANE,
	SK_COND_DRIFTED,
};

bool
sk_str_eq(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

sk_action *
sk_plan_push(sk_pctx *c, sk_action_type type, const char *sandbox_id)
{
	sk_plan_result *r = c->r;
	sk_action *a;

	r->actions = sk_realloc(r->actions, (r->n_actions + 1) * sizeof(*r->actions));
	a = &r->actions[r->n_actions++];
	memset(a, 0, sizeof(*a));
	a->type = type;
	a->sandbox_id = sk_strdup(sandbox_id);
	return a;
}

void
sk_plan_event(sk_pctx *c, const char *type, const char *reason, const char *fmt, ...)
{
	sk_action *a = sk_plan_push(c, SK_ACTION_EVENT, NULL);
	sk_buf b = SK_BUF_INIT(4096);
	va_list ap;

	va_start(ap, fmt);
	sk_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	a->event_type = sk_strdup(type);
	a->reason = sk_strdup(reason);
	a->message = b.data ? sk_buf_detach(&b) : sk_strdup("");
}

void
sk_plan_cond(sk_pctx *c, int which, const char *status, const char *reason, const char *fmt, ...)
{
	sk_cond_decision *d = &c->cond[which];
	sk_buf b = SK_BUF_INIT(4096);
	va_list ap;

	va_start(ap, fmt);
	sk_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	free(d->message);
	d->status = status;
	d->reason = reason;
	d->message = b.data ? sk_buf_detach(&b) : sk_strdup("");
}

const sk_drift *
sk_plan_prev_drift(const sk_pctx *c, const char *type, const char *sandbox_id)
{
	for (size_t i = 0; i < c->prev->n_drift; i++) {
		const sk_drift *d = &c->prev->drift[i];
		if (sk_str_eq(d->type, type) && sk_str_eq(d->sandbox_id, sandbox_id))
			return d;
	}
	return NULL;
}

const sk_condition *
sk_plan_prev_cond(const sk_pctx *c, const char *type)
{
	for (size_t i = 0; i < c->prev->n_conditions; i++) {
		if (sk_str_eq(c->prev->conditions[i].type, type))
			return &c->prev->conditions[i];
	}
	return NULL;
}

int64_t
sk_plan_drift(sk_pctx *c, const char *type, const char *sandbox_id, const char *fmt, ...)
{
	sk_userspace_status *n = &c->r->next;
	const sk_drift *old = sk_plan_prev_drift(c, type, sandbox_id);
	sk_buf b = SK_BUF_INIT(4096);
	sk_drift *d;
	va_list ap;

	va_start(ap, fmt);
	sk_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	n->drift = sk_realloc(n->drift, (n->n_drift + 1) * sizeof(*n->drift));
	d = &n->drift[n->n_drift++];
	d->type = sk_strdup(type);
	d->sandbox_id = sk_strdup(sandbox_id);
	d->since_ms = old ? old->since_ms : c->now;
	d->detail = b.data ? sk_buf_detach(&b) : sk_strdup("");
	if (old == NULL)
		sk_plan_event(c, "Warning", type, "%s", d->detail);
	return d->since_ms;
}

void
sk_plan_requeue(sk_pctx *c, int64_t ms)
{
	if (ms < c->o->min_requeue_ms)
		ms = c->o->min_requeue_ms;
	if (c->requeue == 0 || ms < c->requeue)
		c->requeue = ms;
}

void
sk_plan_wait(sk_pctx *c, int code, const char *fmt, ...)
{
	sk_buf b = SK_BUF_INIT(4096);
	va_list ap;

	va_start(ap, fmt);
	sk_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	free(c->r->wait_message);
	c->r->wait_message = b.data ? sk_buf_detach(&b) : sk_strdup("");
	if (code != 0)
		c->r->wait_code = code;
}

void
sk_plan_set_binding(sk_pctx *c, const char *id)
{
	free(c->r->next.sandbox_id);
	c->r->next.sandbox_id = sk_strdup(id);
}

static void
finish_cond(sk_pctx *c, int which, sk_condition *out)
{
	const sk_cond_decision *d = &c->cond[which];
	const sk_condition *old = sk_plan_prev_cond(c, cond_types[which]);
	const char *status = d->status ? d->status : "Unknown";

	out->type = sk_strdup(cond_types[which]);
	out->status = sk_strdup(status);
	out->reason = sk_strdup(d->reason ? d->reason : "Unknown");
	out->message = sk_strdup(d->message ? d->message : "");
	out->observed_generation = c->us->meta.generation;
	out->last_transition_ms = c->now;
	/* Entering a warm-up (Starting/Resuming) restarts the clock: the grace
	 * after a create or resume is measured from it. */
	if (old != NULL && sk_str_eq(old->status, status) &&
	        (sk_str_eq(old->reason, out->reason) ||
	                (!sk_str_eq(out->reason, SK_REASON_STARTING) &&
	                        !sk_str_eq(out->reason, SK_REASON_RESUMING))))
		out->last_transition_ms = old->last_transition_ms;
}

/* Condition Migrated, once a migration was recorded: True when done (or the
 * source is retiring), False with the reason when aborted, Unknown while
 * it runs. */
static void
finish_migrated(sk_pctx *c)
{
	sk_userspace_status *n = &c->r->next;
	const sk_migration_status *m = &n->migration;
	const sk_condition *old = sk_plan_prev_cond(c, SK_COND_MIGRATED);
	char msg[512];
	const char *status = "Unknown", *reason = SK_REASON_MIGRATING;
	sk_condition *out;

	if (m->phase == SK_MIG_NONE)
		return;
	snprintf(msg, sizeof(msg), "%s -> %s/%s: %s%s%s", m->source.provider, m->target.provider,
	        m->target.template_id, sk_migration_phase_name(m->phase), m->reason ? ": " : "",
	        m->reason ? m->reason : "");
	if (m->phase == SK_MIG_ABORTED) {
		status = "False";
		reason = SK_REASON_MIGRATION_ABORTED;
	} else if (m->phase >= SK_MIG_RETIRING) {
		status = "True";
		reason = SK_REASON_MIGRATION_DONE;
	}
	n->conditions = sk_realloc(n->conditions, (n->n_conditions + 1) * sizeof(*n->conditions));
	out = &n->conditions[n->n_conditions++];
	out->type = sk_strdup(SK_COND_MIGRATED);
	out->status = sk_strdup(status);
	out->reason = sk_strdup(reason);
	out->message = sk_strdup(msg);
	out->observed_generation = c->us->meta.generation;
	out->last_transition_ms = c->now;
	if (old != NULL && sk_str_eq(old->status, status) && sk_str_eq(old->reason, reason))
		out->last_transition_ms = old->last_transition_ms;
}

/* A condition present once decided (Busy, WorkspaceIntact, NetworkPolicy,
 * Archived): as decided this round, else the previous one kept. */
void
sk_plan_finish_kept(sk_pctx *c, const char *type, sk_cond_decision *d)
{
	sk_userspace_status *n = &c->r->next;
	const sk_condition *old = sk_plan_prev_cond(c, type);
	sk_condition *out;

	if (d->status == NULL && old == NULL)
		return;
	n->conditions = sk_realloc(n->conditions, (n->n_conditions + 1) * sizeof(*n->conditions));
	out = &n->conditions[n->n_conditions++];
	out->type = sk_strdup(type);
	out->status = sk_strdup(d->status ? d->status : old->status);
	out->reason = sk_strdup(d->status ? d->reason : old->reason);
	out->message = sk_strdup(d->status ? d->message : old->message);
	out->observed_generation = c->us->meta.generation;
	out->last_transition_ms = c->now;
	if (old != NULL && sk_str_eq(old->status, out->status) &&
	        sk_str_eq(old->reason, out->reason))
		out->last_transition_ms = old->last_transition_ms;
	free(d->message);
	d->message = NULL;
}

void
sk_plan_finish(sk_pctx *c)
{
	sk_userspace_status *n = &c->r->next;

	if (n->n_drift > 0)
		sk_plan_cond(c, SK_C_DRIFTED, "True", n->drift[0].type, "%s", n->drift[0].detail);
	else
		sk_plan_cond(c, SK_C_DRIFTED, "False", "NoDrift", "observed state matches");
	n->conditions = sk_calloc(SK_C_COUNT, sizeof(*n->conditions));
	n->n_conditions = SK_C_COUNT;
	for (int i = 0; i < SK_C_COUNT; i++) {
		finish_cond(c, i, &n->conditions[i]);
		free(c->cond[i].message);
		c->cond[i].message = NULL;
	}
	finish_migrated(c);
	sk_plan_finish_kept(c, SK_COND_BUSY, &c->busy);
	sk_plan_finish_kept(c, SK_COND_NETWORK, &c->network);
	sk_plan_finish_kept(c, SK_COND_WORKSPACE, &c->workspace);
	sk_plan_finish_kept(c, SK_COND_ARCHIVED, &c->archived);
	n->observed_generation = c->us->meta.generation;
	c->r->requeue_after_ms = c->requeue ? c->requeue : c->o->resync_ms;
	if (c->r->requeue_after_ms > c->o->resync_ms && c->o->resync_ms > 0)
		c->r->requeue_after_ms = c->o->resync_ms;
}
