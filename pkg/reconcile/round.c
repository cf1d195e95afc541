/*
 * reconcile/round: one reconcile of an object (sk_reconcile_object,
 * sk_reconcile): the migration steps, the round (observe, plan, execute
 * through sk_execute_round) and its follow-up, and the report the
 * controller reads (the keeper, its envd details, its deadline, the look).
 */
#include <stdlib.h>
#include <string.h>

#include "../api/migration.h"
#include "../api/sandbox_values.h"
#include "../api/status.h"
#include "../api/userspace.h"
#include "migrate_int.h"
#include "observe.h"
#include "observe_int.h"
#include "plan.h"
#include "reconcile.h"
#include "reconcile_int.h"
#include "round_int.h"

static void
result_dispose(sk_observed *ob, sk_plan_result *plan)
{
	sk_plan_result_dispose(plan);
	sk_observed_dispose(ob);
}

/* The keeper's envd details: an answer of this run (a create, connect or
 * get), else what the controller knew. */
static void
report_envd(
        const sk_reconcile_env *env, const sk_observed *ob, sk_reconcile_report *r, const char *id)
{
	const sk_keeper_known *k = &env->known;
	const sk_sandbox *sb = NULL;
	const char *tok = NULL, *ver = NULL;
	bool seen = false;

	for (size_t i = 0; id != NULL && i < ob->sandboxes.len; i++) {
		if (sk_str_eq(ob->sandboxes.items[i].id, id))
			sb = &ob->sandboxes.items[i];
	}
	if (id != NULL && sk_str_eq(r->set_id, id) && r->set_seen) {
		tok = r->set_token;
		ver = r->set_version;
		seen = true;
	} else if (sb != NULL && ob->bound == SK_LOOKUP_FOUND) {
		/* the GET's answer (a token the list lacked was filled from known) */
		tok = sb->envd_access_token;
		ver = sb->envd_version;
		seen = true;
	} else if (id != NULL) {
		bool same = sk_str_eq(k->sandbox_id, id);
		tok = same ? k->envd_access_token : NULL;
		ver = sb != NULL && sb->envd_version != NULL ? sb->envd_version
		                                             : (same ? k->envd_version : NULL);
		seen = same && k->detail_seen;
	}
	sk_wipe_free(r->envd_access_token);
	free(r->envd_version);
	r->envd_access_token = sk_strdup(tok);
	r->envd_version = sk_strdup(ver);
	r->detail_seen = seen;
}

/* The deadline spacekeeper set on the running keeper: this run's, else the
 * one known while it has not lapsed, else the provider's as observed (a
 * restarted controller, or a keeper woken by traffic since). */
static void
report_deadline(const sk_reconcile_env *env, sk_reconcile_report *r, const char *id, int64_t now)
{
	const sk_keeper_known *k = &env->known;

	r->deadline_ms = r->deadline_set_ms = 0;
	if (id == NULL || !r->running)
		return;
	if (sk_str_eq(r->set_id, id) && r->set_deadline_ms > 0) {
		r->deadline_ms = r->set_deadline_ms;
		r->deadline_set_ms = r->set_at_ms;
	} else if (sk_str_eq(k->sandbox_id, id) && k->deadline_ms > now) {
		r->deadline_ms = k->deadline_ms;
		r->deadline_set_ms = k->deadline_set_ms;
	} else if (r->end_ms > 0) {
		r->deadline_ms = r->end_ms;
		r->deadline_set_ms = now;
	}
}

static void
report_detail(const sk_reconcile_env *env, const sk_observed *ob, sk_reconcile_report *r,
        const char *id, int64_t now)
{
	report_envd(env, ob, r, id);
	report_deadline(env, r, id, now);
}

/* What the run saw of the keeper, for the controller's connect fast path. */
/* The run's look at the keeper: what its observation saw (a list newer
 * than the last change, a GET, a healthy probe; a look it only reused, or
 * carried while the state near the deadline is unknown, stays as it was),
 * or this run's own create, resume, set_timeout or pause of it, which
 * says the state (and the deadline). None after a failed run: the next
 * one asks. */
static void
report_look(sk_reconcile_report *r, const sk_observed *ob, const char *id, bool ok)
{
	const sk_sandbox *sb = NULL;

	r->look_ms = r->look_end_ms = 0;
	r->look_state = SK_SANDBOX_UNKNOWN;
	if (!ok || id == NULL)
		return;
	for (size_t i = 0; i < ob->sandboxes.len; i++) {
		if (sk_str_eq(ob->sandboxes.items[i].id, id))
			sb = &ob->sandboxes.items[i];
	}
	if (sb != NULL && sb->state != SK_SANDBOX_TRANSITIONAL && sb->state != SK_SANDBOX_GONE) {
		r->look_ms = ob->look_ms;
		r->look_state =
		        sb->state == SK_SANDBOX_PAUSED ? SK_SANDBOX_PAUSED : SK_SANDBOX_RUNNING;
		r->look_end_ms = sb->state == SK_SANDBOX_PAUSED ? 0 : sb->end_ms;
	}
	if (sk_str_eq(r->set_id, id) && r->set_at_ms > 0 && r->set_at_ms >= r->look_ms) {
		r->look_ms = r->set_at_ms;
		r->look_state = SK_SANDBOX_RUNNING;
		r->look_end_ms = r->set_deadline_ms;
		if (r->set_deadline_ms > 0)
			r->end_ms = r->set_deadline_ms;
	}
	if (sk_str_eq(r->paused_id, id) && r->paused_at_ms >= r->look_ms) {
		r->look_ms = r->paused_at_ms;
		r->look_state = SK_SANDBOX_PAUSED;
		r->look_end_ms = 0;
	}
}

void
sk_report_keeper(const sk_reconcile_env *env, const sk_observed *ob, const sk_userspace *after,
        int64_t now, bool ok)
{
	sk_reconcile_report *r = env->report;
	const char *id = after ? after->status.sandbox_id : NULL;
	const sk_probe *p = sk_observed_probe(ob, id);

	if (r == NULL)
		return;
	free(r->keeper_id);
	r->keeper_id = sk_strdup(id);
	r->running = false;
	r->end_ms = 0;
	r->seen_ms = now;
	r->healthy = !env->opts.probe ||
	        (p != NULL &&
	                (p->made ? p->health == SK_HEALTH_OK : p->error_code == SK_ENOTSUPPORTED));
	for (size_t i = 0; id != NULL && i < ob->sandboxes.len; i++) {
		if (sk_str_eq(ob->sandboxes.items[i].id, id)) {
			r->running = ob->sandboxes.items[i].state == SK_SANDBOX_RUNNING;
			r->end_ms = ob->sandboxes.items[i].end_ms;
		}
	}
	report_detail(env, ob, r, id, now);
	report_look(r, ob, id, ok);
}

/* The plan starts a sandbox: a create (not a replacement's) or a resume. */
static bool
starts(const sk_plan_result *plan)
{
	bool create = false;

	for (size_t i = 0; i < plan->n_actions; i++) {
		const sk_action *a = &plan->actions[i];
		if (a->type == SK_ACTION_CONNECT)
			return true;
		if (a->type == SK_ACTION_KILL && a->why == SK_KILL_REPLACE)
			return false;
		create = create || a->type == SK_ACTION_CREATE;
	}
	return create;
}

/* The plan paused sandbox id. */
static bool
paused(const sk_plan_result *plan, const char *id)
{
	for (size_t i = 0; id != NULL && i < plan->n_actions; i++) {
		if (plan->actions[i].type == SK_ACTION_PAUSE &&
		        sk_str_eq(plan->actions[i].sandbox_id, id))
			return true;
	}
	return false;
}

/* The capacity gate (env->may_start): a start it refuses waits; the round
 * is planned again with observed.capacity_wait, and nothing starts. */
static void
gate_start(const sk_reconcile_env *env, const sk_userspace *us, sk_observed *ob, int64_t now,
        sk_plan_result *plan)
{
	char why[256] = "";

	if (env->may_start == NULL || !starts(plan) ||
	        env->may_start(env->may_start_arg, us, ob->wake, why, sizeof(why)))
		return;
	if (env->report != NULL)
		env->report->start_waited = true;
	ob->capacity_wait = true;
	ob->capacity_message = why;
	sk_plan_result_dispose(plan);
	sk_plan(us, ob, now, &env->opts, plan);
	ob->capacity_message = NULL; /* why lives on this frame only */
}

/* What the follow-up round knows of the keeper: the first round's own
 * create or resume answer (its envd details and deadline) when that named
 * a sandbox other than the one the controller knew, so the started keeper
 * is not read again (a GET) for details its start already answered. */
static void
known_after_start(const sk_reconcile_env *env, sk_keeper_known *k)
{
	const sk_reconcile_report *r = env->report;

	*k = env->known;
	if (r == NULL || r->set_id == NULL || !r->set_seen || sk_str_eq(k->sandbox_id, r->set_id))
		return;
	k->sandbox_id = r->set_id;
	k->envd_access_token = r->set_token;
	k->envd_version = r->set_version;
	k->detail_seen = true;
	k->deadline_ms = r->set_deadline_ms;
	k->deadline_set_ms = r->set_at_ms;
	k->look_ms = 0; /* the look was of the other one; the round's own list says */
}

/* One observe -> plan -> execute round. `planned` is observed and planned
 * for; `stored` (the object as stored) is what the status is written over:
 * the same object, except in the follow-up round, whose status was handed
 * on and never stored. A SK_ROUND_FIRST whose status is handed on collects
 * what the follow-up needs in fu. */
static int
round_once(const sk_reconcile_env *env, sk_provider *p, const sk_userspace *planned,
        const sk_userspace *stored, sk_round_kind kind, const sk_list_view *list, sk_followup *fu,
        int64_t *requeue, sk_userspace **updated, sk_error *err)
{
	sk_observed ob;
	sk_plan_result plan;
	sk_keeper_known known = env->known;
	int64_t now = env->now ? env->now() : sk_now_ms();
	int rc;

	if (kind == SK_ROUND_FOLLOW_UP)
		known_after_start(env, &known);
	sk_observe_known(p, planned, list, &env->opts, env->activity_ms, &known, &ob, err);
	ob.activity_ms = env->activity_ms;
	ob.wake = env->wake;
	ob.replace_now = env->replace_now;
	ob.evict = env->evict;
	ob.evict_quota = env->evict_quota;
	sk_plan(planned, &ob, now, &env->opts, &plan);
	gate_start(env, planned, &ob, now, &plan);
	if (env->report != NULL && kind != SK_ROUND_FOLLOW_UP)
		env->report->look = ob.look;
	if (kind == SK_ROUND_FIRST && sk_when_written(kind, &plan, false) != SK_HAND_ON)
		fu = NULL;
	for (size_t i = 0; kind == SK_ROUND_FIRST && fu != NULL && i < ob.sandboxes.len; i++)
		sk_observed_add(&fu->seen, &ob.sandboxes.items[i]);
	if (kind == SK_ROUND_FIRST && fu != NULL)
		fu->seen.list_valid = ob.list_valid;
	rc = sk_execute_round(env, stored, planned, &ob, &plan, kind, fu, updated, err);
	/* The provider's own concurrency cap: a 429 on a start without
	 * Retry-After (a rate limit says when to come back, and is only waited). */
	if (rc != 0 && err->http_status == 429 && err->retry_after_ms == 0 && starts(&plan) &&
	        env->report != NULL)
		env->report->start_refused = true;
	if (rc == 0 && plan.wait_code != 0)
		rc = sk_error_set(err, plan.wait_code, "%s", plan.wait_message);
	if (kind != SK_ROUND_FIRST || fu == NULL || !fu->armed)
		sk_report_keeper(env, &ob, updated ? *updated : NULL, now, rc == 0);
	if (rc == 0 && env->report != NULL && paused(&plan, env->report->keeper_id))
		env->report->running = false; /* observed running, paused by this round */
	*requeue = plan.requeue_after_ms;
	result_dispose(&ob, &plan);
	return rc;
}

/* The follow-up round: plans from the handed-on status and the first
 * round's own answers, writes over the stored object (after the events
 * both rounds held back). */
static int
follow_up(const sk_reconcile_env *env, sk_provider *p, const sk_userspace *stored, sk_followup *fu,
        int64_t *requeue, sk_userspace **updated, sk_error *err)
{
	sk_userspace *planned = sk_userspace_dup(stored);
	sk_list_view after = { 0 };
	int rc;

	sk_userspace_status_dispose(&planned->status);
	sk_userspace_status_copy(&planned->status, &fu->next);
	after.for_user = &fu->seen.sandboxes;
	after.valid = fu->seen.list_valid;
	after.listed_ms = env->now ? env->now() : sk_now_ms();
	/* The round's own answers are newer than the change they made, also
	 * within its millisecond (its events no longer write in between): no
	 * GET for a list that only looks as old as lastReconcileTime. */
	if (after.listed_ms <= fu->next.last_reconcile_ms)
		after.listed_ms = fu->next.last_reconcile_ms + 1;
	rc = round_once(
	        env, p, planned, stored, SK_ROUND_FOLLOW_UP, &after, fu, requeue, updated, err);
	sk_userspace_free(planned);
	if (rc != 0 && updated != NULL) {
		/* Keep no copy whose status may not be the stored one. */
		sk_userspace_free(*updated);
		*updated = NULL;
	}
	return rc;
}

/*
 * 2. The round, and 3. its follow-up when it handed its status on. After a
 * create or a resume the keeper's data plane is probed at once, in a
 * follow-up round, and the binding is written together with what the probe
 * found: one status write instead of two, and no requeue in between. The
 * follow-up observes the round's own answers (the created sandbox, the
 * resumed one running) instead of the older list. Crash safety holds: the
 * Creating mark was written before the create, and a crash before the
 * follow-up's write is resolved like any unfinished create.
 */
static int
round_and_follow_up(const sk_reconcile_env *env, const sk_userspace *us, const sk_list_view *list,
        int64_t *requeue_after_ms, sk_userspace **updated, sk_error *err)
{
	sk_provider *p = env->provider;
	sk_followup fu;
	sk_userspace *mid = NULL;
	sk_error local;
	int64_t requeue = 0;
	int rc;

	if (err == NULL)
		err = &local;
	if (updated != NULL)
		*updated = NULL;
	if (env->provider_for != NULL) {
		sk_provider *named = env->provider_for(sk_bound_provider(us), env->provider_arg);
		if (named != NULL)
			p = named;
	}
	memset(&fu, 0, sizeof(fu));
	sk_observed_init(&fu.seen);
	rc = round_once(env, p, us, us, SK_ROUND_FIRST, list, &fu, &requeue, &mid, err);
	if (rc == 0 && fu.armed && mid != NULL)
		rc = follow_up(env, p, mid, &fu, &requeue, updated, err);
	else if (updated != NULL) {
		*updated = mid;
		mid = NULL;
	}
	sk_userspace_free(mid);
	sk_release_events(env, us, &fu); /* a follow-up that did not run */
	sk_observed_dispose(&fu.seen);
	sk_userspace_status_dispose(&fu.next);
	if (requeue_after_ms != NULL)
		*requeue_after_ms = requeue;
	return rc;
}

/* The migration steps one reconcile runs at most: the first and up to six
 * more (create the target, copy, verify, switch, and room to spare). */
#define MIGRATION_STEPS_MAX 7

/* The step that made `after` from `before` moved the migration on: it is
 * still active, and neither where the step found it (a waiting step) nor
 * back where the reconcile found it (`found`). */
static bool
moved_on(const sk_userspace *found, const sk_userspace *before, const sk_userspace *after)
{
	const sk_migration_status *m = &after->status.migration;

	return sk_migration_active(m) && !sk_migration_equal(m, &found->status.migration) &&
	        !sk_migration_equal(m, &before->status.migration);
}

/* 1. The migration steps: a step done leads to the next at once (create,
 * copy, verify, switch), with no requeue between them, until one fails,
 * waits, ends the migration, leaves the space to the regular round
 * (*normal), or MIGRATION_STEPS_MAX ran. *after: the object after the last. */
static int
migration_steps(const sk_reconcile_env *env, const sk_userspace *us, bool *normal, int64_t *requeue,
        sk_userspace **after, sk_error *err)
{
	sk_userspace *before = NULL;
	int rc = sk_migrate_round(env, us, normal, requeue, after, err);

	for (int n = 1; n < MIGRATION_STEPS_MAX && rc == 0 && !*normal &&
	        moved_on(us, before ? before : us, *after);
	        n++) {
		sk_userspace_free(before);
		before = *after;
		rc = sk_migrate_round(env, before, normal, requeue, after, err);
	}
	sk_userspace_free(before);
	return rc;
}

/* An active migration's steps first; the round (and its follow-up) after
 * them when the migration leaves the space to it (waiting for idle,
 * retiring the source). */
int
sk_reconcile_object(const sk_reconcile_env *env, const sk_userspace *us, const sk_list_view *list,
        int64_t *requeue_after_ms, sk_userspace **updated, sk_error *err)
{
	sk_userspace *after = NULL;
	int64_t mreq = 0, req = 0;
	bool normal = true;
	sk_error local;
	int rc;

	if (err == NULL)
		err = &local;
	if (!sk_migration_active(&us->status.migration))
		return round_and_follow_up(env, us, list, requeue_after_ms, updated, err);
	rc = migration_steps(env, us, &normal, &mreq, &after, err);
	if (rc == 0 && normal && after != NULL) {
		rc = round_and_follow_up(env, after, list, &req, updated, err);
		if (req > 0 && (mreq <= 0 || req < mreq))
			mreq = req;
		sk_userspace_free(after);
	} else if (updated != NULL) {
		*updated = after;
	} else {
		sk_userspace_free(after);
	}
	if (requeue_after_ms != NULL)
		*requeue_after_ms = mreq;
	return rc;
}

void
sk_reconcile_report_dispose(sk_reconcile_report *r)
{
	if (r == NULL)
		return;
	free(r->keeper_id);
	free(r->replaced_id);
	sk_wipe_free(r->envd_access_token);
	free(r->envd_version);
	free(r->set_id);
	free(r->paused_id);
	sk_wipe_free(r->set_token);
	free(r->set_version);
	memset(r, 0, sizeof(*r));
}

int
sk_reconcile(const sk_reconcile_env *env, const char *name, const sk_list_view *list,
        int64_t *requeue_after_ms, sk_error *err)
{
	sk_userspace *us = NULL;
	sk_error local;
	int rc;

	if (err == NULL)
		err = &local;
	if (requeue_after_ms != NULL)
		*requeue_after_ms = 0;
	rc = sk_store_get(env->store, name, &us, err);
	if (rc == SK_ENOTFOUND) {
		sk_error_clear(err);
		return 0;
	}
	if (rc == 0)
		rc = sk_reconcile_object(env, us, list, requeue_after_ms, NULL, err);
	sk_userspace_free(us);
	return rc;
}
