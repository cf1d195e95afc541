/*
 * Table tests for the migration planner (pkg/reconcile/migrate_plan.c) and
 * for how the regular planner starts one: every trigger, every phase with
 * the observations a restarted controller may meet (the crash points), the
 * abort paths, and the safety rules (never two bindings, never the source
 * deleted before the target verified). Idempotence: a whole migration is
 * walked step by step through a fake world; each re-plan after a step
 * advances, none repeats a mutating step. Also status.migration's JSON and
 * packed round trips.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/names.h"
#include "api/quantity.h"
#include "reconcile/reconcile.h"
#include "reconcile/reconcile_int.h" /* the migration plan, sk_observed_add */
#include "store/store_int.h"

Suite *sk_suite_migrate(void);

#define NOW INT64_C(1800000000000)
#define SEC INT64_C(1000)
#define MIN (60 * SEC)
#define HOUR (60 * MIN)

static sk_userspace *
space(const char *provider, const char *tmpl)
{
	sk_userspace *us = sk_calloc(1, sizeof(*us));

	us->meta.name = sk_strdup("alice");
	us->meta.uid = sk_strdup("u-1");
	us->meta.generation = 2;
	us->spec.user_id = sk_strdup("alice");
	us->spec.provider = sk_strdup(provider);
	us->spec.template_id = sk_strdup(tmpl);
	us->spec.idle_timeout_ms = 15 * MIN;
	sk_userspace_apply_defaults(us);
	us->spec.keep_source_ms = 24 * HOUR;
	us->spec.when_idle_ms = MIN;
	us->status.sandbox_id = sk_strdup("src1");
	us->status.provider = sk_strdup("e2b");
	us->status.phase = SK_PHASE_RUNNING;
	return us;
}

static void
set_migration(sk_userspace *us, sk_migration_phase ph, const char *target_id)
{
	sk_migration_status *m = &us->status.migration;

	sk_migration_dispose(m);
	m->phase = ph;
	m->source.provider = sk_strdup("e2b");
	m->source.template_id = sk_strdup("base");
	m->source.sandbox_id = sk_strdup("src1");
	m->target.provider = sk_strdup("cube");
	m->target.template_id = sk_strdup("base");
	m->target.sandbox_id = sk_strdup(target_id);
	m->start_ms = NOW - 10 * MIN;
	m->step_ms = NOW - 10 * SEC;
	m->trigger = sk_strdup(SK_TRIGGER_PROVIDER);
}

static void
opts(sk_plan_options *o)
{
	sk_plan_options_init(o);
}

/* ---- triggers ---- */

START_TEST(test_trigger_provider)
{
	sk_userspace *us = space("cube", "base");

	ck_assert_str_eq(sk_migration_trigger(us, "base", NULL), SK_TRIGGER_PROVIDER);
	free(us->spec.provider);
	us->spec.provider = sk_strdup("e2b");
	ck_assert_ptr_null(sk_migration_trigger(us, "base", NULL));
	/* an object from before status.provider: assumed at spec.provider */
	free(us->status.provider);
	us->status.provider = NULL;
	ck_assert_ptr_null(sk_migration_trigger(us, "base", NULL));
	sk_userspace_free(us);
}
END_TEST

START_TEST(test_trigger_template_needs_migrate)
{
	sk_userspace *us = space("e2b", "python");

	ck_assert_ptr_null(sk_migration_trigger(us, "base", NULL)); /* Report */
	us->spec.update_strategy = SK_UPDATE_MIGRATE;
	ck_assert_str_eq(sk_migration_trigger(us, "base", NULL), SK_TRIGGER_TEMPLATE);
	ck_assert_ptr_null(sk_migration_trigger(us, "tpl-77", "python")); /* alias matches */
	ck_assert_ptr_null(sk_migration_trigger(us, NULL, NULL)); /* keeper unknown */
	sk_userspace_free(us);
}
END_TEST

START_TEST(test_trigger_rollout_and_abort)
{
	sk_userspace *us = space("e2b", "base");

	/* NOW is 2027-01-15T08:00:00Z; the migration below started at 07:50 */
	sk_kvlist_set(&us->meta.annotations, SK_ANNOTATION_RESTARTED_AT, "2027-01-15T07:40:00Z");
	ck_assert_str_eq(sk_migration_trigger(us, "base", NULL), SK_TRIGGER_ROLLOUT);
	/* a migration started after that request: done, no new one */
	set_migration(us, SK_MIG_DONE, "t1");
	ck_assert_ptr_null(sk_migration_trigger(us, "base", NULL));
	/* an aborted move to cube is not retried by itself... */
	free(us->spec.provider);
	us->spec.provider = sk_strdup("cube");
	us->status.migration.phase = SK_MIG_ABORTED;
	ck_assert_ptr_null(sk_migration_trigger(us, "base", NULL));
	/* ...but another target is, and so does a newer rollout */
	free(us->spec.provider);
	us->spec.provider = sk_strdup("daytona");
	ck_assert_str_eq(sk_migration_trigger(us, "base", NULL), SK_TRIGGER_PROVIDER);
	sk_kvlist_set(&us->meta.annotations, SK_ANNOTATION_RESTARTED_AT, "2030-01-01T00:00:00Z");
	ck_assert_str_eq(sk_migration_trigger(us, "base", NULL), SK_TRIGGER_ROLLOUT);
	/* never while one runs, never without a binding, never while deleting */
	us->status.migration.phase = SK_MIG_COPYING;
	ck_assert_ptr_null(sk_migration_trigger(us, "base", NULL));
	us->status.migration.phase = SK_MIG_DONE;
	us->meta.deletion_ms = NOW;
	ck_assert_ptr_null(sk_migration_trigger(us, "base", NULL));
	us->meta.deletion_ms = 0;
	free(us->status.sandbox_id);
	us->status.sandbox_id = NULL;
	ck_assert_ptr_null(sk_migration_trigger(us, "base", NULL));
	sk_userspace_free(us);
}
END_TEST

START_TEST(test_rollout_now)
{
	sk_userspace *us = space("e2b", "base");

	ck_assert(!sk_migration_now(us));
	sk_kvlist_set(&us->meta.annotations, SK_ANNOTATION_RESTARTED_AT, "2027-01-15T08:00:00Z");
	sk_kvlist_set(&us->meta.annotations, SK_ANNOTATION_ROLLOUT_NOW, "2026-01-15T08:00:00Z");
	ck_assert(!sk_migration_now(us)); /* an older --now */
	sk_kvlist_set(&us->meta.annotations, SK_ANNOTATION_ROLLOUT_NOW, "2027-01-15T08:00:00Z");
	ck_assert(sk_migration_now(us));
	sk_userspace_free(us);
}
END_TEST

/* restoreFrom with a newer restartedAt: a restore, once. */
START_TEST(test_trigger_restore)
{
	sk_userspace *us = space("e2b", "base");

	sk_kvlist_set(&us->meta.annotations, SK_ANNOTATION_RESTARTED_AT, "2027-01-15T07:40:00Z");
	sk_kvlist_set(&us->meta.annotations, SK_ANNOTATION_RESTORE_FROM, "snap-1:default");
	ck_assert_str_eq(sk_migration_trigger(us, "base", NULL), SK_TRIGGER_RESTORE);
	/* an empty restoreFrom is a plain rollout */
	sk_kvlist_set(&us->meta.annotations, SK_ANNOTATION_RESTORE_FROM, "");
	ck_assert_str_eq(sk_migration_trigger(us, "base", NULL), SK_TRIGGER_ROLLOUT);
	/* acted on once: a migration that started after the request is it */
	sk_kvlist_set(&us->meta.annotations, SK_ANNOTATION_RESTORE_FROM, "snap-1:default");
	set_migration(us, SK_MIG_DONE, "t1");
	ck_assert_ptr_null(sk_migration_trigger(us, "base", NULL));
	sk_userspace_free(us);
}
END_TEST

/* ---- the regular plan starts it ---- */

static void
observe_keeper(sk_observed *ob, const char *id, const char *tmpl, sk_sandbox_state st)
{
	sk_sandbox sb;

	memset(&sb, 0, sizeof(sb));
	sb.id = (char *)id;
	sb.template_id = (char *)tmpl;
	sb.state = st;
	sb.started_ms = NOW - HOUR;
	sb.end_ms = NOW + 50 * MIN;
	sk_observed_add(ob, &sb);
}

static bool
has_mutating(const sk_plan_result *r)
{
	for (size_t i = 0; i < r->n_actions; i++) {
		if (sk_action_is_mutating(&r->actions[i]))
			return true;
	}
	return false;
}

START_TEST(test_plan_starts_pending)
{
	sk_userspace *us = space("cube", "base");
	sk_observed ob;
	sk_plan_result r, r2;
	sk_plan_options o;
	const sk_migration_status *m;
	bool event = false;

	opts(&o);
	sk_observed_init(&ob);
	observe_keeper(&ob, "src1", "base", SK_SANDBOX_RUNNING);
	sk_observed_add_probe(&ob, "src1", true, SK_HEALTH_OK, 200, NOW, 0);
	sk_plan(us, &ob, NOW, &o, &r);
	m = &r.next.migration;
	ck_assert_int_eq(m->phase, SK_MIG_PENDING);
	ck_assert_str_eq(m->source.provider, "e2b");
	ck_assert_str_eq(m->source.sandbox_id, "src1");
	ck_assert_str_eq(m->target.provider, "cube");
	ck_assert_ptr_null(m->target.sandbox_id);
	ck_assert_int_eq(m->start_ms, NOW);
	ck_assert_str_eq(r.next.sandbox_id, "src1"); /* the binding does not move */
	ck_assert_str_eq(r.next.provider, "e2b");
	ck_assert(!has_mutating(&r));
	for (size_t i = 0; i < r.n_actions; i++)
		event |= r.actions[i].type == SK_ACTION_EVENT &&
		        strcmp(r.actions[i].reason, SK_REASON_MIGRATION_PENDING) == 0;
	ck_assert(event);
	ck_assert_ptr_nonnull(
	        sk_userspace_condition(&(sk_userspace){ .status = r.next }, SK_COND_MIGRATED));
	/* idempotence: planned again from that status, the same migration stays */
	sk_userspace_status_dispose(&us->status);
	sk_userspace_status_copy(&us->status, &r.next);
	sk_plan(us, &ob, NOW + SEC, &o, &r2);
	ck_assert(sk_migration_equal(&r2.next.migration, &r.next.migration));
	ck_assert(!has_mutating(&r2));
	sk_plan_result_dispose(&r);
	sk_plan_result_dispose(&r2);
	sk_observed_dispose(&ob);
	sk_userspace_free(us);
}
END_TEST

/* While the source is kept (Retiring) it is no Duplicate of the new keeper. */
/* A restore targets the bound provider (not spec.provider) and the snapshot. */
START_TEST(test_plan_starts_restore)
{
	sk_userspace *us = space("cube", "base");
	sk_observed ob;
	sk_plan_result r;
	sk_plan_options o;
	const sk_migration_status *m;

	opts(&o);
	sk_kvlist_set(&us->meta.annotations, SK_ANNOTATION_RESTARTED_AT, "2027-01-15T07:59:00Z");
	sk_kvlist_set(&us->meta.annotations, SK_ANNOTATION_ROLLOUT_NOW, "2027-01-15T07:59:00Z");
	sk_kvlist_set(&us->meta.annotations, SK_ANNOTATION_RESTORE_FROM, "snap-1:default");
	sk_observed_init(&ob);
	observe_keeper(&ob, "src1", "base", SK_SANDBOX_RUNNING);
	sk_observed_add_probe(&ob, "src1", true, SK_HEALTH_OK, 200, NOW, 0);
	sk_plan(us, &ob, NOW, &o, &r);
	m = &r.next.migration;
	ck_assert_int_eq(m->phase, SK_MIG_PENDING);
	ck_assert_str_eq(m->trigger, SK_TRIGGER_RESTORE);
	ck_assert_str_eq(m->target.provider, "e2b"); /* the bound one */
	ck_assert_str_eq(m->target.template_id, "snap-1:default");
	ck_assert_str_eq(r.next.sandbox_id, "src1"); /* the binding does not move yet */
	ck_assert(!has_mutating(&r));
	sk_plan_result_dispose(&r);
	sk_observed_dispose(&ob);
	sk_userspace_free(us);
}
END_TEST

/* A keeper started from a snapshot has the snapshot's template: no
 * TemplateChanged migration (updateStrategy Migrate), no spec drift; the
 * same keeper without the mark is both. */
START_TEST(test_restored_keeper_no_template_drift)
{
	for (int restored = 0; restored < 2; restored++) {
		sk_userspace *us = space("e2b", "base");
		sk_observed ob;
		sk_plan_result r;
		sk_plan_options o;
		sk_sandbox sb;
		bool drift = false;

		opts(&o);
		us->spec.update_strategy = SK_UPDATE_MIGRATE;
		sk_observed_init(&ob);
		memset(&sb, 0, sizeof(sb));
		sb.id = "src1";
		sb.template_id = "snapabc";
		sb.state = SK_SANDBOX_RUNNING;
		sb.started_ms = NOW - HOUR;
		sb.end_ms = NOW + 50 * MIN;
		if (restored)
			sk_kvlist_set(&sb.metadata, SK_META_SNAPSHOT, "sim-team/keep:default");
		sk_observed_add(&ob, &sb);
		sk_kvlist_dispose(&sb.metadata);
		sk_observed_add_probe(&ob, "src1", true, SK_HEALTH_OK, 200, NOW, 0);
		sk_plan(us, &ob, NOW, &o, &r);
		for (size_t i = 0; i < r.next.n_drift; i++)
			drift |= strcmp(r.next.drift[i].type, SK_DRIFT_SPEC) == 0;
		if (restored) {
			ck_assert_int_eq(r.next.migration.phase, SK_MIG_NONE);
			ck_assert(!drift);
		} else {
			ck_assert_int_eq(r.next.migration.phase, SK_MIG_PENDING);
			ck_assert_str_eq(r.next.migration.trigger, SK_TRIGGER_TEMPLATE);
		}
		sk_plan_result_dispose(&r);
		sk_observed_dispose(&ob);
		sk_userspace_free(us);
	}
}
END_TEST

START_TEST(test_kept_source_not_duplicate)
{
	sk_userspace *us = space("e2b", "python");
	sk_observed ob;
	sk_plan_result r;
	sk_plan_options o;

	opts(&o);
	set_migration(us, SK_MIG_RETIRING, "t1");
	free(us->status.migration.target.provider);
	us->status.migration.target.provider = sk_strdup("e2b");
	free(us->status.sandbox_id);
	us->status.sandbox_id = sk_strdup("t1");
	sk_observed_init(&ob);
	observe_keeper(&ob, "t1", "python", SK_SANDBOX_RUNNING);
	observe_keeper(&ob, "src1", "base", SK_SANDBOX_PAUSED);
	sk_observed_add_probe(&ob, "t1", true, SK_HEALTH_OK, 200, NOW, 0);
	sk_plan(us, &ob, NOW, &o, &r);
	for (size_t i = 0; i < r.n_actions; i++)
		ck_assert_msg(
		        r.actions[i].type != SK_ACTION_KILL, "kills %s", r.actions[i].sandbox_id);
	ck_assert_uint_eq(r.next.n_drift, 0);
	sk_plan_result_dispose(&r);
	/* once done with sourcePolicy Delete, a leftover source is a duplicate again */
	us->status.migration.phase = SK_MIG_DONE;
	sk_plan(us, &ob, NOW, &o, &r);
	ck_assert_uint_eq(r.next.n_drift, 1);
	ck_assert_str_eq(r.next.drift[0].type, SK_DRIFT_DUPLICATE);
	sk_plan_result_dispose(&r);
	us->spec.source_policy = SK_DELETE_RETAIN;
	sk_plan(us, &ob, NOW, &o, &r);
	ck_assert_uint_eq(r.next.n_drift, 0);
	sk_plan_result_dispose(&r);
	sk_observed_dispose(&ob);
	sk_userspace_free(us);
}
END_TEST

/* ---- the steps, phase by phase (crash points included) ---- */

typedef struct step_case {
	const char *name;
	sk_migration_phase phase;
	const char *target_id; /* recorded target */
	const char *reason; /* recorded abort reason */
	int64_t activity; /* offset from NOW; 0 none */
	bool now; /* rollout --now */
	int64_t step_age; /* now - step_ms; 0: 10 s */
	sk_lookup source;
	sk_sandbox_state source_state; /* 0: running */
	sk_lookup target;
	int64_t lookup_age; /* now - target_lookup_ms (after the mark) */
	bool unknown_provider;
	/* expected */
	sk_migration_step step;
	sk_migration_phase next_phase;
	const char *next_target; /* NULL: unchecked */
	bool normal;
	int64_t requeue_min, requeue_max; /* 0: unchecked */
	bool restore; /* trigger RestoreSnapshot (spacectl snapshot restore) */
} step_case;

static const step_case steps[] = {
	{ "pending, active a moment ago: wait for idle", SK_MIG_PENDING, NULL, NULL, -10 * SEC,
	        false, 0, SK_LOOKUP_FOUND, 0, SK_LOOKUP_NONE, 0, false, SK_MSTEP_NONE,
	        SK_MIG_PENDING, NULL, true, 49 * SEC, 51 * SEC, false },
	{ "pending, idle: create the target", SK_MIG_PENDING, NULL, NULL, -2 * MIN, false, 0,
	        SK_LOOKUP_FOUND, 0, SK_LOOKUP_NONE, 0, false, SK_MSTEP_CREATE_TARGET,
	        SK_MIG_CREATING, NULL, false, 0, 0, false },
	{ "pending, never active: create", SK_MIG_PENDING, NULL, NULL, 0, false, 0, SK_LOOKUP_FOUND,
	        0, SK_LOOKUP_NONE, 0, false, SK_MSTEP_CREATE_TARGET, SK_MIG_CREATING, NULL, false,
	        0, 0, false },
	{ "pending, active but --now: create", SK_MIG_PENDING, NULL, NULL, -SEC, true, 0,
	        SK_LOOKUP_FOUND, 0, SK_LOOKUP_NONE, 0, false, SK_MSTEP_CREATE_TARGET,
	        SK_MIG_CREATING, NULL, false, 0, 0, false },
	{ "pending, source gone: abort", SK_MIG_PENDING, NULL, NULL, 0, false, 0,
	        SK_LOOKUP_NOT_FOUND, 0, SK_LOOKUP_NONE, 0, false, SK_MSTEP_ABORT, SK_MIG_PENDING,
	        NULL, false, 0, 0, false },
	{ "creating, crash after the create: adopt the marked target", SK_MIG_CREATING, NULL, NULL,
	        0, false, 0, SK_LOOKUP_NONE, 0, SK_LOOKUP_FOUND, 0, false, SK_MSTEP_COPY,
	        SK_MIG_COPYING, "t9", false, 0, 0, false },
	{ "creating, crash before the create, within the grace: wait", SK_MIG_CREATING, NULL, NULL,
	        0, false, 5 * SEC, SK_LOOKUP_NONE, 0, SK_LOOKUP_NOT_FOUND, 1 * SEC, false,
	        SK_MSTEP_NONE, SK_MIG_CREATING, NULL, false, 20 * SEC, 30 * SEC, false },
	{ "creating, none after the grace: create again", SK_MIG_CREATING, NULL, NULL, 0, false,
	        2 * MIN, SK_LOOKUP_NONE, 0, SK_LOOKUP_NOT_FOUND, 0, false, SK_MSTEP_CREATE_TARGET,
	        SK_MIG_CREATING, NULL, false, 0, 0, false },
	{ "creating, lookup failed: wait", SK_MIG_CREATING, NULL, NULL, 0, false, 2 * MIN,
	        SK_LOOKUP_NONE, 0, SK_LOOKUP_ERROR, 0, false, SK_MSTEP_NONE, SK_MIG_CREATING, NULL,
	        false, 0, 0, false },
	{ "copying, crash during the copy: copy again", SK_MIG_COPYING, "t1", NULL, 0, false, 0,
	        SK_LOOKUP_FOUND, 0, SK_LOOKUP_FOUND, 0, false, SK_MSTEP_COPY, SK_MIG_COPYING, "t1",
	        false, 0, 0, false },
	{ "copying, source paused (Idle): copy (the executor wakes it)", SK_MIG_COPYING, "t1", NULL,
	        0, false, 0, SK_LOOKUP_FOUND, SK_SANDBOX_PAUSED, SK_LOOKUP_FOUND, 0, false,
	        SK_MSTEP_COPY, SK_MIG_COPYING, "t1", false, 0, 0, false },
	{ "copying, target vanished: abort", SK_MIG_COPYING, "t1", NULL, 0, false, 0,
	        SK_LOOKUP_FOUND, 0, SK_LOOKUP_NOT_FOUND, 0, false, SK_MSTEP_ABORT, SK_MIG_COPYING,
	        NULL, false, 0, 0, false },
	{ "copying, source gone: abort", SK_MIG_COPYING, "t1", NULL, 0, false, 0,
	        SK_LOOKUP_NOT_FOUND, 0, SK_LOOKUP_FOUND, 0, false, SK_MSTEP_ABORT, SK_MIG_COPYING,
	        NULL, false, 0, 0, false },
	{ "copying, a lookup failed: wait", SK_MIG_COPYING, "t1", NULL, 0, false, 0,
	        SK_LOOKUP_ERROR, 0, SK_LOOKUP_FOUND, 0, false, SK_MSTEP_NONE, SK_MIG_COPYING, NULL,
	        false, 0, 0, false },
	{ "verifying, crash during verify: verify again", SK_MIG_VERIFYING, "t1", NULL, 0, false, 0,
	        SK_LOOKUP_FOUND, 0, SK_LOOKUP_FOUND, 0, false, SK_MSTEP_VERIFY, SK_MIG_VERIFYING,
	        NULL, false, 0, 0, false },
	{ "switching, crash before the write: switch", SK_MIG_SWITCHING, "t1", NULL, 0, false, 0,
	        SK_LOOKUP_FOUND, 0, SK_LOOKUP_FOUND, 0, false, SK_MSTEP_SWITCH, SK_MIG_SWITCHING,
	        NULL, false, 0, 0, false },
	{ "switching, target gone: abort, never bind it", SK_MIG_SWITCHING, "t1", NULL, 0, false, 0,
	        SK_LOOKUP_FOUND, 0, SK_LOOKUP_NOT_FOUND, 0, false, SK_MSTEP_ABORT, SK_MIG_SWITCHING,
	        NULL, false, 0, 0, false },
	{ "copying, crash while aborting: finish the abort", SK_MIG_COPYING, "t1", "verify failed",
	        0, false, 0, SK_LOOKUP_FOUND, 0, SK_LOOKUP_FOUND, 0, false, SK_MSTEP_ABORT,
	        SK_MIG_COPYING, NULL, false, 0, 0, false },
	{ "copying, provider gone from the config: abort", SK_MIG_COPYING, "t1", NULL, 0, false, 0,
	        SK_LOOKUP_NONE, 0, SK_LOOKUP_NONE, 0, true, SK_MSTEP_ABORT, SK_MIG_COPYING, NULL,
	        false, 0, 0, false },
	{ "retiring, source running: pause it", SK_MIG_RETIRING, "t1", NULL, 0, false, 0,
	        SK_LOOKUP_FOUND, 0, SK_LOOKUP_NONE, 0, false, SK_MSTEP_PAUSE_SOURCE,
	        SK_MIG_RETIRING, NULL, true, 23 * HOUR, 24 * HOUR, false },
	{ "retiring, source paused: keep it until keepSourceFor", SK_MIG_RETIRING, "t1", NULL, 0,
	        false, HOUR, SK_LOOKUP_FOUND, SK_SANDBOX_PAUSED, SK_LOOKUP_NONE, 0, false,
	        SK_MSTEP_NONE, SK_MIG_RETIRING, NULL, true, 23 * HOUR, 23 * HOUR, false },
	{ "retiring, keepSourceFor over: retire the source", SK_MIG_RETIRING, "t1", NULL, 0, false,
	        25 * HOUR, SK_LOOKUP_FOUND, SK_SANDBOX_PAUSED, SK_LOOKUP_NONE, 0, false,
	        SK_MSTEP_RETIRE_SOURCE, SK_MIG_RETIRING, NULL, true, 0, 0, false },
	{ "retiring, source already gone: finish", SK_MIG_RETIRING, "t1", NULL, 0, false, HOUR,
	        SK_LOOKUP_NOT_FOUND, 0, SK_LOOKUP_NONE, 0, false, SK_MSTEP_RETIRE_SOURCE,
	        SK_MIG_RETIRING, NULL, true, 0, 0, false },
	{ "retiring with a reason: not aborted (already switched)", SK_MIG_RETIRING, "t1", "stale",
	        0, false, HOUR, SK_LOOKUP_FOUND, SK_SANDBOX_PAUSED, SK_LOOKUP_NONE, 0, false,
	        SK_MSTEP_NONE, SK_MIG_RETIRING, NULL, true, 0, 0, false },
	{ "done: the regular round only", SK_MIG_DONE, "t1", NULL, 0, false, 0, SK_LOOKUP_NONE, 0,
	        SK_LOOKUP_NONE, 0, false, SK_MSTEP_NONE, SK_MIG_DONE, NULL, true, 0, 0, false },
	{ "aborted: the regular round only", SK_MIG_ABORTED, NULL, "x", 0, false, 0, SK_LOOKUP_NONE,
	        0, SK_LOOKUP_NONE, 0, false, SK_MSTEP_NONE, SK_MIG_ABORTED, NULL, true, 0, 0,
	        false },
	{ "restore, crash after the create: adopt the target, probe it (no copy)", SK_MIG_CREATING,
	        NULL, NULL, 0, true, 0, SK_LOOKUP_NONE, 0, SK_LOOKUP_FOUND, 0, false,
	        SK_MSTEP_VERIFY, SK_MIG_VERIFYING, "t9", false, 0, 0, true },
	{ "restore, verifying (the probe): probe again", SK_MIG_VERIFYING, "t1", NULL, 0, true, 0,
	        SK_LOOKUP_FOUND, 0, SK_LOOKUP_FOUND, 0, false, SK_MSTEP_VERIFY, SK_MIG_VERIFYING,
	        "t1", false, 0, 0, true },
	{ "restore, retiring: retire the source at once (no keepSourceFor)", SK_MIG_RETIRING, "t1",
	        NULL, 0, false, 0, SK_LOOKUP_FOUND, 0, SK_LOOKUP_NONE, 0, false,
	        SK_MSTEP_RETIRE_SOURCE, SK_MIG_RETIRING, NULL, true, 0, 0, true },
	{ "restore, source gone before the switch: abort", SK_MIG_VERIFYING, "t1", NULL, 0, true, 0,
	        SK_LOOKUP_NOT_FOUND, 0, SK_LOOKUP_FOUND, 0, false, SK_MSTEP_ABORT, SK_MIG_VERIFYING,
	        NULL, false, 0, 0, true },
};

static void
observed_for(const step_case *c, sk_migration_observed *ob)
{
	sk_migration_observed_init(ob);
	ob->providers_known = !c->unknown_provider;
	ob->activity_ms = c->activity ? NOW + c->activity : 0;
	ob->source = c->source;
	if (c->source == SK_LOOKUP_FOUND) {
		ob->source_sb.id = sk_strdup("src1");
		ob->source_sb.state = c->source_state ? c->source_state : SK_SANDBOX_RUNNING;
	}
	ob->target = c->target;
	if (c->target == SK_LOOKUP_FOUND)
		ob->target_sb.id = sk_strdup(c->target_id ? c->target_id : "t9");
	ob->target_lookup_ms = NOW - c->lookup_age;
}

START_TEST(test_steps)
{
	const step_case *c = &steps[_i];
	sk_userspace *us = space("cube", "base");
	sk_migration_observed ob;
	sk_migration_plan p;
	sk_plan_options o;

	opts(&o);
	set_migration(us, c->phase, c->target_id);
	us->status.migration.reason = sk_strdup(c->reason);
	us->status.migration.step_ms = NOW - (c->step_age ? c->step_age : 10 * SEC);
	if (c->restore) {
		free(us->status.migration.trigger);
		us->status.migration.trigger = sk_strdup(SK_TRIGGER_RESTORE);
	}
	if (c->now) {
		sk_kvlist_set(&us->meta.annotations, SK_ANNOTATION_RESTARTED_AT, "x");
		sk_kvlist_set(&us->meta.annotations, SK_ANNOTATION_ROLLOUT_NOW, "x");
	}
	observed_for(c, &ob);
	sk_plan_migration(us, &ob, NOW, &o, &p);
	ck_assert_msg(p.step == c->step, "%s: step %s, want %s", c->name,
	        sk_migration_step_name(p.step), sk_migration_step_name(c->step));
	ck_assert_msg(p.next.phase == c->next_phase, "%s: next phase %s", c->name,
	        sk_migration_phase_name(p.next.phase));
	ck_assert_msg(p.normal == c->normal, "%s: normal %d", c->name, p.normal);
	if (c->next_target != NULL)
		ck_assert_str_eq(p.next.target.sandbox_id, c->next_target);
	if (c->requeue_min > 0)
		ck_assert_msg(p.requeue_after_ms >= c->requeue_min &&
		                p.requeue_after_ms <= c->requeue_max,
		        "%s: requeue %lld", c->name, (long long)p.requeue_after_ms);
	/* the safety rules hold in every row */
	if (p.step == SK_MSTEP_SWITCH)
		ck_assert_int_eq(c->phase, SK_MIG_SWITCHING);
	if (p.step == SK_MSTEP_RETIRE_SOURCE)
		ck_assert_int_eq(c->phase, SK_MIG_RETIRING);
	if (p.step == SK_MSTEP_ABORT) {
		ck_assert_ptr_nonnull(p.abort_reason);
		ck_assert_str_eq(p.next.reason, p.abort_reason);
		if (c->reason != NULL)
			ck_assert_str_eq(p.abort_reason, c->reason);
	}
	sk_migration_plan_dispose(&p);
	sk_migration_observed_dispose(&ob);
	sk_userspace_free(us);
}
END_TEST

/* ---- a whole migration through a fake world ---- */

typedef struct world {
	bool source_exists, source_running, target_exists;
	char *bound;
	int bindings_changed;
	bool source_killed_before_verified;
	bool verified;
} world;

/* What the executor writes after a step, applied to us and the world. */
static void
apply(sk_userspace *us, world *w, const sk_migration_plan *p, int64_t now)
{
	sk_migration_status *m = &us->status.migration;

	sk_migration_dispose(m);
	sk_migration_copy(m, &p->next);
	switch (p->step) {
	case SK_MSTEP_CREATE_TARGET:
		w->target_exists = true;
		free(m->target.sandbox_id);
		m->target.sandbox_id = sk_strdup("t1");
		m->phase = SK_MIG_COPYING;
		break;
	case SK_MSTEP_COPY: m->phase = SK_MIG_VERIFYING; break;
	case SK_MSTEP_VERIFY:
		w->verified = true;
		m->phase = SK_MIG_SWITCHING;
		break;
	case SK_MSTEP_SWITCH:
		free(us->status.sandbox_id);
		us->status.sandbox_id = sk_strdup(m->target.sandbox_id);
		w->bindings_changed++;
		m->phase = SK_MIG_RETIRING;
		m->step_ms = now;
		break;
	case SK_MSTEP_PAUSE_SOURCE: w->source_running = false; break;
	case SK_MSTEP_RETIRE_SOURCE:
		if (!w->verified)
			w->source_killed_before_verified = true;
		w->source_exists = false;
		m->phase = SK_MIG_DONE;
		break;
	default: break;
	}
}

static void
observe_world(const world *w, const sk_userspace *us, sk_migration_observed *ob)
{
	sk_migration_observed_init(ob);
	ob->source = w->source_exists ? SK_LOOKUP_FOUND : SK_LOOKUP_NOT_FOUND;
	ob->source_sb.id = sk_strdup("src1");
	ob->source_sb.state = w->source_running ? SK_SANDBOX_RUNNING : SK_SANDBOX_PAUSED;
	ob->target = w->target_exists ? SK_LOOKUP_FOUND : SK_LOOKUP_NOT_FOUND;
	ob->target_sb.id = sk_strdup("t1");
	ob->target_lookup_ms = NOW + HOUR; /* well after any mark */
	(void)us;
}

START_TEST(test_walk_idempotent)
{
	static const sk_migration_step want[] = { SK_MSTEP_CREATE_TARGET, SK_MSTEP_COPY,
		SK_MSTEP_VERIFY, SK_MSTEP_SWITCH, SK_MSTEP_PAUSE_SOURCE, SK_MSTEP_RETIRE_SOURCE };
	sk_userspace *us = space("cube", "base");
	world w = { true, true, false, NULL, 0, false, false };
	sk_plan_options o;
	size_t n = 0;
	int64_t now = NOW;

	opts(&o);
	us->spec.keep_source_ms = 5 * MIN;
	set_migration(us, SK_MIG_PENDING, NULL);
	for (int round = 0; round < 20 && us->status.migration.phase != SK_MIG_DONE; round++) {
		sk_migration_observed ob;
		sk_migration_plan p, again;

		observe_world(&w, us, &ob);
		sk_plan_migration(us, &ob, now, &o, &p);
		if (p.step != SK_MSTEP_NONE) {
			ck_assert_uint_lt(n, sizeof(want) / sizeof(want[0]));
			ck_assert_msg(p.step == want[n], "round %d: %s, want %s", round,
			        sk_migration_step_name(p.step), sk_migration_step_name(want[n]));
			n++;
		}
		apply(us, &w, &p, now);
		sk_migration_observed_dispose(&ob);
		/* idempotence: the same round planned again never repeats that step */
		observe_world(&w, us, &ob);
		sk_plan_migration(us, &ob, now, &o, &again);
		ck_assert_msg(again.step != p.step || p.step == SK_MSTEP_NONE, "round %d: %s again",
		        round, sk_migration_step_name(p.step));
		sk_migration_plan_dispose(&again);
		sk_migration_observed_dispose(&ob);
		now += p.step == SK_MSTEP_NONE ? 10 * MIN : SEC;
		sk_migration_plan_dispose(&p);
	}
	ck_assert_uint_eq(n, sizeof(want) / sizeof(want[0]));
	ck_assert_int_eq(us->status.migration.phase, SK_MIG_DONE);
	ck_assert_int_eq(w.bindings_changed, 1);
	ck_assert_str_eq(us->status.sandbox_id, "t1");
	ck_assert(!w.source_killed_before_verified);
	ck_assert(!w.source_exists);
	sk_userspace_free(us);
}
END_TEST

/* ---- status.migration round trips ---- */

START_TEST(test_status_round_trip)
{
	sk_userspace *us = space("cube", "base"), *back = NULL, *unpacked = NULL;
	sk_packed_userspace *packed;
	sk_error err = { 0 };
	json_t *j;

	set_migration(us, SK_MIG_COPYING, "t1");
	us->status.migration.files_done = 120;
	us->status.migration.files_total = 200;
	us->status.migration.bytes_done = 52428800;
	us->status.migration.bytes_total = 62914560;
	us->status.migration.reason = sk_strdup("why");
	us->status.phase = SK_PHASE_MIGRATING;
	j = sk_userspace_to_json(us);
	ck_assert_str_eq(
	        json_string_value(json_object_get(
	                json_object_get(json_object_get(j, "status"), "migration"), "phase")),
	        "Copying");
	ck_assert_int_eq(sk_userspace_decode(j, &back, &err), 0);
	ck_assert(sk_userspace_status_equal(&us->status, &back->status));
	packed = sk_store_pack(us, &err);
	ck_assert_ptr_nonnull(packed);
	ck_assert_int_eq(sk_store_unpack(packed, &unpacked, &err), 0);
	ck_assert(sk_userspace_status_equal(&us->status, &unpacked->status));
	/* a malformed phase names the field */
	json_object_set_new(json_object_get(json_object_get(j, "status"), "migration"), "phase",
	        json_string("Flying"));
	sk_userspace_free(back);
	back = NULL;
	ck_assert_int_eq(sk_userspace_decode(j, &back, &err), SK_EINVALID);
	ck_assert_ptr_nonnull(strstr(err.message, "status.migration.phase"));
	json_decref(j);
	sk_packed_free(packed);
	sk_userspace_free(unpacked);
	sk_userspace_free(us);
}
END_TEST

START_TEST(test_quantity)
{
	int64_t n = 0;

	ck_assert_int_eq(sk_quantity_parse("5Gi", &n), 0);
	ck_assert_int_eq(n, INT64_C(5) << 30);
	ck_assert_int_eq(sk_quantity_parse("10M", &n), 0);
	ck_assert_int_eq(n, 10000000);
	ck_assert_int_eq(sk_quantity_parse("1000", &n), 0);
	ck_assert_int_eq(n, 1000);
	ck_assert_int_eq(sk_quantity_parse("5GB", &n), SK_EINVALID);
	ck_assert_int_eq(sk_quantity_parse("-1", &n), SK_EINVALID);
	ck_assert_int_eq(sk_quantity_parse("99999999999Ti", &n), SK_EINVALID);
}
END_TEST

Suite *
sk_suite_migrate(void)
{
	Suite *s = suite_create("migrate");
	TCase *tc = tcase_create("migrate");

	tcase_add_test(tc, test_trigger_provider);
	tcase_add_test(tc, test_trigger_template_needs_migrate);
	tcase_add_test(tc, test_trigger_rollout_and_abort);
	tcase_add_test(tc, test_trigger_restore);
	tcase_add_test(tc, test_plan_starts_restore);
	tcase_add_test(tc, test_restored_keeper_no_template_drift);
	tcase_add_test(tc, test_rollout_now);
	tcase_add_test(tc, test_plan_starts_pending);
	tcase_add_test(tc, test_kept_source_not_duplicate);
	tcase_add_loop_test(tc, test_steps, 0, (int)(sizeof(steps) / sizeof(steps[0])));
	tcase_add_test(tc, test_walk_idempotent);
	tcase_add_test(tc, test_status_round_trip);
	tcase_add_test(tc, test_quantity);
	suite_add_tcase(s, tc);
	return s;
}
