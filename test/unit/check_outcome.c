/*
 * The planner's decisions around a plan (pkg/reconcile/outcome.c): the one
 * failure classification, the status a failed action leaves, when a --once
 * pass may stop, and how a connect is answered (table-tested).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/connect.h"
#include "reconcile/observe_int.h"
#include "reconcile/options.h"
#include "reconcile/outcome_int.h"
#include "reconcile/plan.h"
#include "reconcile/reconcile_int.h"

Suite *sk_suite_outcome(void);

#define NOW INT64_C(1800000000000)
#define SEC INT64_C(1000)
#define MIN (60 * SEC)

START_TEST(test_classification)
{
	/* One table: execute, the controller and HTTP agree (a 404 under an
	 * action and a lost compare-and-swap are transient everywhere). */
	ck_assert(sk_error_is_transient(SK_EUNAVAILABLE));
	ck_assert(sk_error_is_transient(SK_ETIMEOUT));
	ck_assert(sk_error_is_transient(SK_ETRANSIENT));
	ck_assert(sk_error_is_transient(SK_ECONFLICT));
	ck_assert(sk_error_is_transient(SK_ENOTFOUND));
	ck_assert(!sk_error_is_transient(SK_ETERMINAL));
	ck_assert(!sk_error_is_transient(SK_EINVALID));
	ck_assert(!sk_error_is_transient(SK_EUNAUTHORIZED));
	ck_assert(!sk_error_is_transient(SK_ENOTSUPPORTED));
	ck_assert_str_eq(sk_failure_reason(SK_ACTION_CREATE), "CreateFailed");
	ck_assert_str_eq(sk_failure_reason(SK_ACTION_CONNECT), "ResumeFailed");
	ck_assert_str_eq(sk_failure_reason(SK_ACTION_INIT_ENV), "InitEnvFailed");
}
END_TEST

static sk_userspace *
space(sk_phase phase, const char *bound)
{
	sk_userspace *us = calloc(1, sizeof(*us));

	us->meta.name = strdup("alice");
	us->meta.generation = 2;
	us->spec.user_id = strdup("alice");
	us->spec.provider = strdup("default");
	us->spec.mode = SK_MODE_RUNNING;
	us->spec.idle_timeout_ms = 10 * MIN;
	us->status.phase = phase;
	us->status.sandbox_id = bound ? strdup(bound) : NULL;
	return us;
}

static void
set_cond(sk_userspace *us, const char *type, const char *status, const char *reason)
{
	sk_status_set_condition(&us->status, type, status, reason, "", NOW - MIN, 2);
}

static const sk_condition *
cond(const sk_userspace_status *st, const char *type)
{
	for (size_t i = 0; i < st->n_conditions; i++) {
		if (strcmp(st->conditions[i].type, type) == 0)
			return &st->conditions[i];
	}
	return NULL;
}

START_TEST(test_failure_create)
{
	sk_userspace *us = space(SK_PHASE_PENDING, NULL);
	sk_userspace_status st;
	sk_action a = { .type = SK_ACTION_CREATE };
	sk_outcome o = { SK_ETRANSIENT, &a, false, 0, "create: connection refused", false };

	/* no answer: the sandbox may exist, the Creating mark stays */
	sk_userspace_status_copy(&st, &us->status);
	sk_plan_failure(us, &o, NOW, &st);
	ck_assert_int_eq(st.phase, SK_PHASE_CREATING);
	ck_assert_str_eq(cond(&st, SK_COND_SYNCED)->reason, "CreateFailed");
	ck_assert_str_eq(cond(&st, SK_COND_READY)->status, "False");
	ck_assert_str_eq(st.message, "create: connection refused");
	sk_userspace_status_dispose(&st);
	/* 429: rejected, nothing made, retried without the grace */
	o.http_status = 429;
	sk_userspace_status_copy(&st, &us->status);
	sk_plan_failure(us, &o, NOW, &st);
	ck_assert_int_eq(st.phase, SK_PHASE_PENDING);
	sk_userspace_status_dispose(&st);
	/* 400: terminal */
	o.http_status = 400;
	o.code = SK_ETERMINAL;
	sk_userspace_status_copy(&st, &us->status);
	sk_plan_failure(us, &o, NOW, &st);
	ck_assert_int_eq(st.phase, SK_PHASE_ERROR);
	sk_userspace_status_dispose(&st);
	/* stopped before the mark (a fork source missing): nothing made, no
	 * answer needed to know it; transient retried as Pending */
	o.http_status = 0;
	o.unmarked = true;
	sk_userspace_status_copy(&st, &us->status);
	sk_plan_failure(us, &o, NOW, &st);
	ck_assert_int_eq(st.phase, SK_PHASE_ERROR);
	sk_userspace_status_dispose(&st);
	o.code = SK_EUNAVAILABLE;
	sk_userspace_status_copy(&st, &us->status);
	sk_plan_failure(us, &o, NOW, &st);
	ck_assert_int_eq(st.phase, SK_PHASE_PENDING);
	sk_userspace_status_dispose(&st);
	sk_userspace_free(us);
}
END_TEST

START_TEST(test_failure_other)
{
	sk_userspace *us = space(SK_PHASE_RUNNING, "i1");
	sk_userspace_status st;
	sk_action a = { .type = SK_ACTION_PAUSE };
	sk_outcome o = { SK_ENOTFOUND, &a, false, 404, "pause: 404", false };

	/* transient: the phase the plan chose stays */
	sk_userspace_status_copy(&st, &us->status);
	sk_plan_failure(us, &o, NOW, &st);
	ck_assert_int_eq(st.phase, SK_PHASE_RUNNING);
	ck_assert_str_eq(cond(&st, SK_COND_SYNCED)->status, "False");
	ck_assert_str_eq(cond(&st, SK_COND_SYNCED)->reason, "PauseFailed");
	sk_userspace_status_dispose(&st);
	/* terminal: Error */
	o.code = SK_EUNAUTHORIZED;
	sk_userspace_status_copy(&st, &us->status);
	sk_plan_failure(us, &o, NOW, &st);
	ck_assert_int_eq(st.phase, SK_PHASE_ERROR);
	sk_userspace_status_dispose(&st);
	sk_userspace_free(us);
}
END_TEST

/* A failed env re-assert goes back to the warm-up, so the next round retries it. */
START_TEST(test_failure_init_env)
{
	sk_userspace *us = space(SK_PHASE_RESUMING, "i1");
	sk_userspace_status st;
	sk_action a = { .type = SK_ACTION_INIT_ENV };
	sk_outcome o = { SK_ETRANSIENT, &a, false, 502, "init-env: POST /init: 502", false };

	set_cond(us, SK_COND_DATAPLANE, "Unknown", SK_REASON_RESUMING);
	sk_userspace_status_copy(&st, &us->status);
	sk_status_set_condition(&st, SK_COND_DATAPLANE, "True", SK_REASON_HEALTHY, "", NOW, 2);
	sk_plan_failure(us, &o, NOW, &st);
	ck_assert_str_eq(cond(&st, SK_COND_DATAPLANE)->status, "Unknown");
	ck_assert_str_eq(cond(&st, SK_COND_DATAPLANE)->reason, SK_REASON_RESUMING);
	ck_assert_int_eq(cond(&st, SK_COND_DATAPLANE)->last_transition_ms, NOW - MIN);
	ck_assert(strstr(st.message, "/init") != NULL);
	sk_userspace_status_dispose(&st);
	sk_userspace_free(us);
}
END_TEST

START_TEST(test_quiet)
{
	sk_userspace *us = space(SK_PHASE_RUNNING, "i1");

	/* health never established: probed */
	ck_assert(!sk_plan_quiet(us, 0, NOW));
	/* healthy since 11m ago (set_cond: NOW - 1m; move it), no activity: quiet */
	set_cond(us, SK_COND_DATAPLANE, "True", SK_REASON_HEALTHY);
	us->status.conditions[0].last_transition_ms = NOW - 11 * MIN;
	ck_assert(sk_plan_quiet(us, 0, NOW));
	/* healthy since 1m ago (a fresh create or resume): probed */
	us->status.conditions[0].last_transition_ms = NOW - MIN;
	ck_assert(!sk_plan_quiet(us, 0, NOW));
	us->status.conditions[0].last_transition_ms = NOW - 11 * MIN;
	ck_assert(!sk_plan_quiet(us, NOW - 9 * MIN, NOW));
	ck_assert(sk_plan_quiet(us, NOW - 11 * MIN, NOW));
	/* the persisted activity counts too */
	us->status.last_activity_ms = NOW - MIN;
	ck_assert(!sk_plan_quiet(us, 0, NOW));
	us->status.last_activity_ms = 0;
	/* just started, or unreachable: probed */
	set_cond(us, SK_COND_DATAPLANE, "Unknown", SK_REASON_RESUMING);
	ck_assert(!sk_plan_quiet(us, 0, NOW));
	set_cond(us, SK_COND_DATAPLANE, "False", SK_DRIFT_DATAPLANE);
	ck_assert(!sk_plan_quiet(us, 0, NOW));
	/* always on: never quiet */
	set_cond(us, SK_COND_DATAPLANE, "True", SK_REASON_HEALTHY);
	us->status.conditions[0].last_transition_ms = NOW - 11 * MIN;
	us->spec.idle_timeout_ms = 0;
	ck_assert(!sk_plan_quiet(us, 0, NOW));
	sk_userspace_free(us);
}
END_TEST

START_TEST(test_settled)
{
	sk_userspace *us = space(SK_PHASE_IDLE, "i1");

	ck_assert(sk_plan_settled(us));
	us->status.phase = SK_PHASE_RESUMING;
	ck_assert(!sk_plan_settled(us));
	us->status.phase = SK_PHASE_RUNNING;
	ck_assert(!sk_plan_settled(us)); /* not Ready */
	set_cond(us, SK_COND_READY, "True", SK_REASON_RUNNING);
	ck_assert(sk_plan_settled(us));
	sk_userspace_free(us);
}
END_TEST

/* ---- connect decisions, table-tested ---- */

typedef struct connect_case {
	const char *name;
	sk_phase phase;
	const char *ready; /* Ready status; NULL none */
	const char *dp; /* DataPlaneHealthy status; NULL none */
	bool drift; /* DataPlaneUnreachable drift since NOW - 1m */
	bool replace;
	bool paused_mode;
	bool hold;
	bool deleting;
	/* memory of the last reconcile */
	const char *mem_id; /* NULL: nothing remembered */
	bool mem_healthy;
	int64_t mem_age;
	int64_t mem_left; /* deadline - NOW; 0 unknown */
	/* want */
	sk_connect_verdict want;
	const char *want_reason;
	bool want_renew;
} connect_case;

static const connect_case ccases[] = {
	{ .name = "healthy, probed 2s ago, deadline far: fast",
	        .phase = SK_PHASE_RUNNING,
	        .ready = "True",
	        .dp = "True",
	        .mem_id = "i1",
	        .mem_healthy = true,
	        .mem_age = 2 * SEC,
	        .mem_left = 9 * MIN,
	        .want = SK_CONNECT_READY },
	{ .name = "healthy, below D/2 but outside the renewal window: fast, no renewal yet",
	        .phase = SK_PHASE_RUNNING,
	        .ready = "True",
	        .dp = "True",
	        .mem_id = "i1",
	        .mem_healthy = true,
	        .mem_age = 2 * SEC,
	        .mem_left = 4 * MIN,
	        .want = SK_CONNECT_READY },
	{ .name = "healthy, within the renewal window (1m of D 10m): fast, renewal due (off the "
	          "request path)",
	        .phase = SK_PHASE_RUNNING,
	        .ready = "True",
	        .dp = "True",
	        .mem_id = "i1",
	        .mem_healthy = true,
	        .mem_age = 2 * SEC,
	        .mem_left = 50 * SEC,
	        .want = SK_CONNECT_READY,
	        .want_renew = true },
	{ .name = "healthy, 3s left (more than the sleep margin): fast, renewal due",
	        .phase = SK_PHASE_RUNNING,
	        .ready = "True",
	        .dp = "True",
	        .mem_id = "i1",
	        .mem_healthy = true,
	        .mem_age = 2 * SEC,
	        .mem_left = 3 * SEC,
	        .want = SK_CONNECT_READY,
	        .want_renew = true },
	{ .name = "probe older than the probe period: reconcile",
	        .phase = SK_PHASE_RUNNING,
	        .ready = "True",
	        .dp = "True",
	        .mem_id = "i1",
	        .mem_healthy = true,
	        .mem_age = 11 * SEC,
	        .mem_left = 9 * MIN,
	        .want = SK_CONNECT_RECONCILE },
	{ .name = "about to fall asleep (within the sleep margin): reconcile",
	        .phase = SK_PHASE_RUNNING,
	        .ready = "True",
	        .dp = "True",
	        .mem_id = "i1",
	        .mem_healthy = true,
	        .mem_age = SEC,
	        .mem_left = 2 * SEC,
	        .want = SK_CONNECT_RECONCILE },
	{ .name = "memory of another sandbox: reconcile",
	        .phase = SK_PHASE_RUNNING,
	        .ready = "True",
	        .dp = "True",
	        .mem_id = "i0",
	        .mem_healthy = true,
	        .mem_age = SEC,
	        .want = SK_CONNECT_RECONCILE },
	{ .name = "nothing remembered (controller restarted): reconcile",
	        .phase = SK_PHASE_RUNNING,
	        .ready = "True",
	        .dp = "True",
	        .want = SK_CONNECT_RECONCILE },
	{ .name = "Idle: wake",
	        .phase = SK_PHASE_IDLE,
	        .ready = "True",
	        .dp = "Unknown",
	        .want = SK_CONNECT_WAKE },
	{ .name = "known 504, Report: 503 at once",
	        .phase = SK_PHASE_DEGRADED,
	        .ready = "False",
	        .dp = "False",
	        .drift = true,
	        .want = SK_CONNECT_UNAVAILABLE,
	        .want_reason = "DataPlaneUnreachable" },
	{ .name = "known 504, Replace: replace now",
	        .phase = SK_PHASE_DEGRADED,
	        .ready = "False",
	        .dp = "False",
	        .drift = true,
	        .replace = true,
	        .want = SK_CONNECT_REPLACE },
	{ .name = "504 within the resume grace (no drift yet): reconcile and wait",
	        .phase = SK_PHASE_RESUMING,
	        .ready = "False",
	        .dp = "Unknown",
	        .want = SK_CONNECT_RECONCILE },
	{ .name = "mode Paused: 503",
	        .phase = SK_PHASE_PAUSED,
	        .paused_mode = true,
	        .want = SK_CONNECT_UNAVAILABLE,
	        .want_reason = "ModePaused" },
	{ .name = "paused annotation: 503",
	        .phase = SK_PHASE_RUNNING,
	        .hold = true,
	        .want = SK_CONNECT_UNAVAILABLE,
	        .want_reason = "ReconcilePaused" },
	{ .name = "being deleted: 503",
	        .phase = SK_PHASE_DELETING,
	        .deleting = true,
	        .want = SK_CONNECT_UNAVAILABLE,
	        .want_reason = "Deleting" },
	{ .name = "no sandbox yet: reconcile (create)",
	        .phase = SK_PHASE_NONE,
	        .want = SK_CONNECT_RECONCILE },
};

START_TEST(test_connect_table)
{
	const connect_case *tc = &ccases[_i];
	sk_userspace *us = space(tc->phase, "i1");
	sk_keeper_memory mem = { 0 };
	sk_connect_decision d;
	sk_plan_options o;

	sk_plan_options_init(&o);
	if (tc->ready)
		set_cond(us, SK_COND_READY, tc->ready, "x");
	if (tc->dp)
		set_cond(us, SK_COND_DATAPLANE, tc->dp, "x");
	if (tc->drift) {
		us->status.drift = calloc(1, sizeof(sk_drift));
		us->status.drift[0].type = strdup(SK_DRIFT_DATAPLANE);
		us->status.drift[0].sandbox_id = strdup("i1");
		us->status.drift[0].since_ms = NOW - MIN;
		us->status.n_drift = 1;
	}
	if (tc->replace)
		us->spec.remediation = SK_REMEDIATION_REPLACE;
	if (tc->paused_mode)
		us->spec.mode = SK_MODE_PAUSED;
	if (tc->hold)
		sk_kvlist_set(&us->meta.annotations, SK_ANNOTATION_PAUSED, "true");
	if (tc->deleting)
		us->meta.deletion_ms = NOW - SEC;
	if (tc->mem_id) {
		mem.sandbox_id = tc->mem_id;
		mem.running = true;
		mem.healthy = tc->mem_healthy;
		mem.seen_ms = NOW - tc->mem_age;
		mem.end_ms = tc->mem_left ? NOW + tc->mem_left : 0;
	}
	sk_connect_decide(us, &mem, NOW, &o, &d);
	ck_assert_msg(d.verdict == tc->want, "%s: verdict %d, want %d", tc->name, (int)d.verdict,
	        (int)tc->want);
	if (tc->want_reason)
		ck_assert_str_eq(d.reason, tc->want_reason);
	ck_assert_msg(d.renew_due == tc->want_renew, "%s: renew_due %d", tc->name, d.renew_due);
	if (tc->drift) {
		ck_assert_int_eq(d.drift_since_ms, NOW - MIN);
		if (!tc->replace)
			ck_assert_int_gt(d.retry_after_ms, 0);
	}
	sk_userspace_free(us);
}
END_TEST

Suite *
sk_suite_outcome(void)
{
	Suite *s = suite_create("outcome");
	TCase *tc = tcase_create("outcome");

	tcase_add_test(tc, test_classification);
	tcase_add_test(tc, test_failure_create);
	tcase_add_test(tc, test_failure_other);
	tcase_add_test(tc, test_failure_init_env);
	tcase_add_test(tc, test_settled);
	tcase_add_test(tc, test_quiet);
	tcase_add_loop_test(tc, test_connect_table, 0, (int)(sizeof(ccases) / sizeof(ccases[0])));
	suite_add_tcase(s, tc);
	return s;
}
