/*
 * Table tests of the workspace marker rules (pkg/reconcile/plan_workspace.c):
 * written after a create, read back after a resume, a loss reported
 * (condition WorkspaceIntact False, drift WorkspaceLost, one Warning event)
 * and kept until acknowledged, a bound sandbox gone reported lost, onLoss
 * Restore without an archive, and nothing of it with markers off.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/names.h"
#include "reconcile/reconcile.h"
#include "reconcile/reconcile_int.h" /* the workspace marker, sk_plan_failure */

Suite *sk_suite_plan_workspace(void);

#define NOW INT64_C(1800000000000)
#define SEC INT64_C(1000)
#define MIN (60 * SEC)

typedef struct ws_case {
	const char *name;
	bool markers_off;
	/* desired / previous status */
	sk_phase phase;
	const char *prev_dp; /* DataPlaneHealthy "Unknown:Resuming", "True:Healthy" */
	const char *prev_ws; /* WorkspaceIntact "True:MarkerWritten", ...; NULL none */
	int64_t prev_ws_since; /* offset from NOW */
	bool prev_drift; /* WorkspaceLost drift on i1 */
	const char *ack; /* the acknowledgement annotation */
	sk_on_loss on_loss;
	/* observed */
	sk_sandbox_state state; /* of the bound i1; 0: gone (GET 404) */
	int marker; /* sk_marker_check */
	/* expected */
	int want_step; /* sk_plan_marker_step */
	const char *want_actions; /* non-event actions */
	const char *want_ws; /* "False:WorkspaceLost"; "-" none */
	bool want_drift;
	const char *want_event; /* a planned event reason; NULL: none of WorkspaceLost */
	const char *want_message; /* a substring of WorkspaceIntact's message */
} ws_case;

static const ws_case cases[] = {
	{ .name = "after a create: write the marker",
	        .phase = SK_PHASE_CREATING,
	        .prev_dp = "Unknown:Starting",
	        .state = SK_SANDBOX_RUNNING,
	        .want_step = SK_MARKER_STEP_WRITE,
	        .want_actions = "init-env write-marker",
	        .want_ws = "True:MarkerWritten" },
	{ .name = "markers off: nothing written, nothing judged",
	        .markers_off = true,
	        .phase = SK_PHASE_CREATING,
	        .prev_dp = "Unknown:Starting",
	        .state = SK_SANDBOX_RUNNING,
	        .want_step = SK_MARKER_STEP_NONE,
	        .want_actions = "init-env",
	        .want_ws = "-" },
	{ .name = "a space without a marker yet (older status): write one",
	        .phase = SK_PHASE_RUNNING,
	        .prev_dp = "True:Healthy",
	        .state = SK_SANDBOX_RUNNING,
	        .want_step = SK_MARKER_STEP_WRITE,
	        .want_actions = "write-marker",
	        .want_ws = "True:MarkerWritten" },
	{ .name = "running with its marker: nothing to do",
	        .phase = SK_PHASE_RUNNING,
	        .prev_dp = "True:Healthy",
	        .prev_ws = "True:MarkerWritten",
	        .state = SK_SANDBOX_RUNNING,
	        .want_step = SK_MARKER_STEP_NONE,
	        .want_actions = "",
	        .want_ws = "True:MarkerWritten" },
	{ .name = "after a resume, marker found: intact",
	        .phase = SK_PHASE_RESUMING,
	        .prev_dp = "Unknown:Resuming",
	        .prev_ws = "True:MarkerWritten",
	        .state = SK_SANDBOX_RUNNING,
	        .marker = SK_MARKER_FOUND,
	        .want_step = SK_MARKER_STEP_CHECK,
	        .want_actions = "init-env",
	        .want_ws = "True:MarkerFound" },
	{ .name = "after a resume, marker missing: lost, reported, marker written again",
	        .phase = SK_PHASE_RESUMING,
	        .prev_dp = "Unknown:Resuming",
	        .prev_ws = "True:MarkerWritten",
	        .state = SK_SANDBOX_RUNNING,
	        .marker = SK_MARKER_MISSING,
	        .want_step = SK_MARKER_STEP_CHECK,
	        .want_actions = "init-env write-marker",
	        .want_ws = "False:WorkspaceLost",
	        .want_drift = true,
	        .want_event = SK_DRIFT_WORKSPACE_LOST,
	        .want_message = "sandbox i1 resumed without its files" },
	{ .name = "after a resume, another space's marker: lost",
	        .phase = SK_PHASE_RESUMING,
	        .prev_dp = "Unknown:Resuming",
	        .prev_ws = "True:MarkerWritten",
	        .state = SK_SANDBOX_RUNNING,
	        .marker = SK_MARKER_FOREIGN,
	        .want_step = SK_MARKER_STEP_CHECK,
	        .want_actions = "init-env write-marker",
	        .want_ws = "False:WorkspaceLost",
	        .want_drift = true,
	        .want_event = SK_DRIFT_WORKSPACE_LOST },
	{ .name = "an Idle keeper found running (autoResume on traffic): checked",
	        .phase = SK_PHASE_IDLE,
	        .prev_dp = "Unknown:Idle",
	        .prev_ws = "True:MarkerWritten",
	        .state = SK_SANDBOX_RUNNING,
	        .marker = SK_MARKER_MISSING,
	        .want_step = SK_MARKER_STEP_CHECK,
	        .want_actions = "init-env write-marker",
	        .want_ws = "False:WorkspaceLost",
	        .want_drift = true,
	        .want_event = SK_DRIFT_WORKSPACE_LOST },
	{ .name = "onLoss Restore without an archive: reported, and says so",
	        .phase = SK_PHASE_RESUMING,
	        .prev_dp = "Unknown:Resuming",
	        .prev_ws = "True:MarkerWritten",
	        .on_loss = SK_ON_LOSS_RESTORE,
	        .state = SK_SANDBOX_RUNNING,
	        .marker = SK_MARKER_MISSING,
	        .want_step = SK_MARKER_STEP_CHECK,
	        .want_actions = "init-env write-marker",
	        .want_ws = "False:WorkspaceLost",
	        .want_drift = true,
	        .want_event = SK_DRIFT_WORKSPACE_LOST,
	        .want_message = "onLoss Restore: no archive to restore from" },
	{ .name = "a read that failed proves nothing: Unknown, checked again",
	        .phase = SK_PHASE_RESUMING,
	        .prev_dp = "Unknown:Resuming",
	        .prev_ws = "True:MarkerWritten",
	        .state = SK_SANDBOX_RUNNING,
	        .marker = SK_MARKER_UNREADABLE,
	        .want_step = SK_MARKER_STEP_CHECK,
	        .want_actions = "init-env",
	        .want_ws = "Unknown:MarkerUnreadable" },
	{ .name = "unreadable before: checked on the next round too",
	        .phase = SK_PHASE_RUNNING,
	        .prev_dp = "True:Healthy",
	        .prev_ws = "Unknown:MarkerUnreadable",
	        .state = SK_SANDBOX_RUNNING,
	        .marker = SK_MARKER_FOUND,
	        .want_step = SK_MARKER_STEP_CHECK,
	        .want_actions = "",
	        .want_ws = "True:MarkerFound" },
	{ .name = "a failed marker write is written again",
	        .phase = SK_PHASE_RUNNING,
	        .prev_dp = "True:Healthy",
	        .prev_ws = "Unknown:MarkerWriteFailed",
	        .state = SK_SANDBOX_RUNNING,
	        .want_step = SK_MARKER_STEP_WRITE,
	        .want_actions = "write-marker",
	        .want_ws = "True:MarkerWritten" },
	{ .name = "a loss stays reported (drift kept, no second event) while running",
	        .phase = SK_PHASE_RUNNING,
	        .prev_dp = "True:Healthy",
	        .prev_ws = "False:WorkspaceLost",
	        .prev_ws_since = -MIN,
	        .prev_drift = true,
	        .state = SK_SANDBOX_RUNNING,
	        .want_step = SK_MARKER_STEP_NONE,
	        .want_actions = "",
	        .want_ws = "False:WorkspaceLost",
	        .want_drift = true },
	{ .name = "a loss stays reported when the next resume finds the new marker",
	        .phase = SK_PHASE_RESUMING,
	        .prev_dp = "Unknown:Resuming",
	        .prev_ws = "False:WorkspaceLost",
	        .prev_ws_since = -MIN,
	        .prev_drift = true,
	        .state = SK_SANDBOX_RUNNING,
	        .marker = SK_MARKER_FOUND,
	        .want_step = SK_MARKER_STEP_CHECK,
	        .want_actions = "init-env",
	        .want_ws = "False:WorkspaceLost",
	        .want_drift = true },
	{ .name = "a loss stays reported while asleep",
	        .phase = SK_PHASE_IDLE,
	        .prev_dp = "Unknown:Idle",
	        .prev_ws = "False:WorkspaceLost",
	        .prev_ws_since = -MIN,
	        .prev_drift = true,
	        .state = SK_SANDBOX_PAUSED,
	        .want_step = SK_MARKER_STEP_CHECK,
	        .want_actions = "",
	        .want_ws = "False:WorkspaceLost",
	        .want_drift = true },
	{ .name = "acknowledged at or after the loss: True again, no drift",
	        .phase = SK_PHASE_RUNNING,
	        .prev_dp = "True:Healthy",
	        .prev_ws = "False:WorkspaceLost",
	        .prev_ws_since = -MIN,
	        .prev_drift = true,
	        .ack = "2027-01-15T08:00:00Z", /* NOW is 2027-01-15T08:00:00Z */
	        .state = SK_SANDBOX_RUNNING,
	        .want_step = SK_MARKER_STEP_NONE,
	        .want_actions = "",
	        .want_ws = "True:LossAcknowledged" },
	{ .name = "acknowledged before the loss: still lost",
	        .phase = SK_PHASE_RUNNING,
	        .prev_dp = "True:Healthy",
	        .prev_ws = "False:WorkspaceLost",
	        .prev_ws_since = -MIN,
	        .prev_drift = true,
	        .ack = "2027-01-15T07:58:00Z",
	        .state = SK_SANDBOX_RUNNING,
	        .want_step = SK_MARKER_STEP_NONE,
	        .want_actions = "",
	        .want_ws = "False:WorkspaceLost",
	        .want_drift = true },
	{ .name = "the bound sandbox is gone: lost, then a new one is created",
	        .phase = SK_PHASE_IDLE,
	        .prev_dp = "Unknown:Idle",
	        .prev_ws = "True:MarkerWritten",
	        .state = 0,
	        .want_step = SK_MARKER_STEP_CHECK,
	        .want_actions = "create bind",
	        .want_ws = "False:WorkspaceLost",
	        .want_drift = true,
	        .want_event = SK_DRIFT_WORKSPACE_LOST,
	        .want_message = "sandbox i1 is gone and its files with it" },
	{ .name = "markers off: a sandbox gone is replaced as before",
	        .markers_off = true,
	        .phase = SK_PHASE_IDLE,
	        .prev_dp = "Unknown:Idle",
	        .state = 0,
	        .want_step = SK_MARKER_STEP_NONE,
	        .want_actions = "create bind",
	        .want_ws = "-" },
};

static void
add_cond(sk_userspace_status *st, const char *type, const char *spec, int64_t since)
{
	char status[32];
	const char *colon = strchr(spec, ':');
	sk_condition *c;

	snprintf(status, sizeof(status), "%.*s", (int)(colon - spec), spec);
	st->conditions = realloc(st->conditions, (st->n_conditions + 1) * sizeof(*c));
	c = &st->conditions[st->n_conditions++];
	memset(c, 0, sizeof(*c));
	c->type = strdup(type);
	c->status = strdup(status);
	c->reason = strdup(colon + 1);
	c->message = strdup("before");
	c->last_transition_ms = since;
}

static sk_userspace *
build_us(const ws_case *tc)
{
	sk_userspace *us = calloc(1, sizeof(*us));

	us->meta.name = strdup("alice");
	us->meta.uid = strdup("uid-1");
	us->meta.generation = 1;
	us->spec.user_id = strdup("alice");
	sk_kvlist_set(&us->spec.env, "KEY", "value");
	sk_userspace_apply_defaults(us);
	us->spec.on_loss = tc->on_loss;
	if (tc->ack)
		sk_kvlist_set(&us->meta.annotations, SK_ANNOTATION_LOSS_ACK, tc->ack);
	us->status.phase = tc->phase;
	us->status.sandbox_id = strdup("i1");
	add_cond(&us->status, SK_COND_DATAPLANE, tc->prev_dp, NOW - 5 * SEC);
	if (tc->prev_ws)
		add_cond(&us->status, SK_COND_WORKSPACE, tc->prev_ws, NOW + tc->prev_ws_since);
	if (tc->prev_drift) {
		us->status.drift = calloc(1, sizeof(sk_drift));
		us->status.drift[0].type = strdup(SK_DRIFT_WORKSPACE_LOST);
		us->status.drift[0].sandbox_id = strdup("i1");
		us->status.drift[0].since_ms = NOW + tc->prev_ws_since;
		us->status.drift[0].detail = strdup("lost before");
		us->status.n_drift = 1;
	}
	return us;
}

static void
build_ob(const ws_case *tc, sk_observed *ob)
{
	sk_sandbox sb;

	sk_observed_init(ob);
	ob->list_valid = true;
	ob->listed_ms = NOW - SEC;
	ob->marker = tc->marker;
	snprintf(ob->marker_detail, sizeof(ob->marker_detail), "the marker said so");
	if (tc->state == 0) {
		ob->bound = SK_LOOKUP_NOT_FOUND;
		return;
	}
	memset(&sb, 0, sizeof(sb));
	sb.id = strdup("i1");
	sb.template_id = strdup("base");
	sb.state = tc->state;
	sb.started_ms = NOW - MIN;
	sb.end_ms = tc->state == SK_SANDBOX_RUNNING ? NOW + 14 * MIN : 0;
	sk_kvlist_set(&sb.metadata, SK_META_USER_ID, "alice");
	sk_kvlist_set(&sb.metadata, SK_META_MANAGED_BY, SK_MANAGED_BY_VALUE);
	sk_observed_add(ob, &sb);
	sk_sandbox_dispose(&sb);
	if (tc->state == SK_SANDBOX_RUNNING)
		sk_observed_add_probe(ob, "i1", true, SK_HEALTH_OK, 200, NOW - SEC, 0);
}

static const sk_condition *
cond_of(const sk_userspace_status *st, const char *type)
{
	for (size_t i = 0; i < st->n_conditions; i++) {
		if (strcmp(st->conditions[i].type, type) == 0)
			return &st->conditions[i];
	}
	return NULL;
}

START_TEST(test_workspace_table)
{
	const ws_case *tc = &cases[_i];
	sk_userspace *us = build_us(tc);
	sk_plan_options o;
	sk_observed ob;
	sk_plan_result r;
	sk_buf acts = SK_BUF_INIT(0);
	const sk_condition *w;
	bool drift = false, event = false;
	char got[128];

	sk_plan_options_init(&o);
	o.markers = !tc->markers_off;
	us->spec.idle_timeout_ms = 15 * MIN;
	build_ob(tc, &ob);
	ck_assert_int_eq(sk_plan_marker_step(us, &o), tc->want_step);
	ck_assert_int_eq(sk_plan(us, &ob, NOW, &o, &r), 0);
	for (size_t i = 0; i < r.n_actions; i++) {
		const sk_action *a = &r.actions[i];
		if (a->type == SK_ACTION_EVENT) {
			event |= strcmp(a->reason, SK_DRIFT_WORKSPACE_LOST) == 0;
			continue;
		}
		sk_buf_printf(&acts, "%s%s", acts.len ? " " : "", sk_action_type_name(a->type));
	}
	ck_assert_msg(strcmp(acts.data ? acts.data : "", tc->want_actions) == 0,
	        "%s: actions \"%s\", want \"%s\"", tc->name, acts.data ? acts.data : "",
	        tc->want_actions);
	w = cond_of(&r.next, SK_COND_WORKSPACE);
	if (w == NULL)
		snprintf(got, sizeof(got), "-");
	else
		snprintf(got, sizeof(got), "%s:%s", w->status, w->reason);
	ck_assert_msg(strcmp(got, tc->want_ws) == 0, "%s: WorkspaceIntact %s, want %s", tc->name,
	        got, tc->want_ws);
	if (tc->want_message)
		ck_assert_msg(strstr(w->message, tc->want_message) != NULL, "%s: message \"%s\"",
		        tc->name, w->message);
	for (size_t i = 0; i < r.next.n_drift; i++)
		drift |= strcmp(r.next.drift[i].type, SK_DRIFT_WORKSPACE_LOST) == 0;
	ck_assert_msg(drift == tc->want_drift, "%s: drift %d", tc->name, drift);
	ck_assert_msg(event == (tc->want_event != NULL), "%s: event %d", tc->name, event);
	if (w != NULL && strcmp(w->status, "False") == 0 && tc->prev_ws &&
	        strncmp(tc->prev_ws, "False", 5) == 0)
		ck_assert_int_eq(w->last_transition_ms, NOW + tc->prev_ws_since); /* kept */
	sk_buf_dispose(&acts);
	sk_plan_result_dispose(&r);
	sk_observed_dispose(&ob);
	sk_userspace_free(us);
}
END_TEST

/* A failed marker write leaves WorkspaceIntact Unknown (written next round);
 * a loss already reported stays False. */
START_TEST(test_marker_write_failure)
{
	ws_case tc = { .phase = SK_PHASE_RUNNING, .prev_dp = "True:Healthy" };
	sk_action a = { .type = SK_ACTION_WRITE_MARKER };
	sk_outcome out = { SK_ETRANSIENT, &a, false, 503, "write-marker: 503", false };
	sk_userspace *us = build_us(&tc);
	sk_userspace_status st;
	sk_plan_options o;
	const sk_condition *w;

	memset(&st, 0, sizeof(st));
	sk_plan_failure(us, &out, NOW, &st);
	w = cond_of(&st, SK_COND_WORKSPACE);
	ck_assert_ptr_nonnull(w);
	ck_assert_str_eq(w->status, "Unknown");
	ck_assert_str_eq(w->reason, SK_REASON_MARKER_WRITE_FAILED);
	ck_assert_str_eq(cond_of(&st, SK_COND_SYNCED)->reason, SK_REASON_MARKER_WRITE_FAILED);
	sk_userspace_status_dispose(&us->status);
	sk_userspace_status_copy(&us->status, &st);
	sk_plan_options_init(&o);
	o.markers = true;
	ck_assert_int_eq(sk_plan_marker_step(us, &o), SK_MARKER_STEP_WRITE);
	sk_userspace_status_dispose(&st);
	sk_userspace_free(us);

	tc.prev_ws = "False:WorkspaceLost";
	us = build_us(&tc);
	memset(&st, 0, sizeof(st));
	sk_plan_failure(us, &out, NOW, &st);
	ck_assert_ptr_null(cond_of(&st, SK_COND_WORKSPACE)); /* the plan's False stays */
	sk_userspace_status_dispose(&st);
	sk_userspace_free(us);
}
END_TEST

Suite *
sk_suite_plan_workspace(void)
{
	Suite *s = suite_create("plan_workspace");
	TCase *tc = tcase_create("table");

	tcase_add_loop_test(tc, test_workspace_table, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_test(tc, test_marker_write_failure);
	suite_add_tcase(s, tc);
	return s;
}
