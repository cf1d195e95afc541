/*
 * How a reconcile learns the bound keeper's state (sk_plan_look,
 * pkg/reconcile/plan_look.c), table-tested: each GET that the controller's
 * own knowledge removes (its create, resume or set_timeout answer, its
 * last look) beside the doubt case that still asks; and the renewal window;
 * the list entry of a sandbox killed since, and when a failed probe is
 * confirmed by a GET.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "api/kvlist.h"
#include "api/sandbox_values.h"
#include "api/status.h"
#include "api/userspace.h"
#include "reconcile/observe.h"
#include "reconcile/observe_int.h"
#include "reconcile/options.h"
#include "reconcile/outcome_int.h"

Suite *sk_suite_plan_look(void);

#define NOW INT64_C(1800000000000)
#define SEC INT64_C(1000)
#define MIN (60 * SEC)

typedef struct look_case {
	const char *name;
	const char *bound; /* status.sandboxID; NULL none */
	int64_t last_change; /* status.lastReconcileTime, offset from NOW */
	int64_t idle; /* 0: 10s */
	int64_t prev_activity; /* status.lastActivityTime, offset; 0 none */
	bool quiet; /* DataPlaneHealthy True long ago, no activity since */
	/* the list */
	bool list_valid;
	int64_t listed; /* offset from NOW */
	const char *listed_id; /* its entry for the user; NULL none */
	sk_sandbox_state listed_state;
	int64_t listed_end; /* offset; 0 unknown */
	/* what the controller knows */
	const char *known_id;
	int64_t look; /* offset; 0: no look */
	sk_sandbox_state look_state; /* what the look found; 0 (UNKNOWN): running */
	int64_t look_end; /* offset */
	int64_t activity; /* the controller's last activity, offset; 0 none */
	bool wake; /* a connect waits */
	/* want */
	sk_look want;
} look_case;

static const look_case cases[] = {
	{ .name = "nothing bound: nothing to look at", .want = SK_LOOK_NONE },
	{ .name = "list newer than the last provider change: as listed",
	        .bound = "i1",
	        .last_change = -20 * SEC,
	        .list_valid = true,
	        .listed = -5 * SEC,
	        .listed_id = "i1",
	        .listed_end = 8 * SEC,
	        .want = SK_LOOK_LIST },
	/* removed GET 1: our own set_timeout (or resume) after the list */
	{ .name = "list older than our set_timeout, no look: doubt, GET (as before)",
	        .bound = "i1",
	        .last_change = -3 * SEC,
	        .list_valid = true,
	        .listed = -5 * SEC,
	        .listed_id = "i1",
	        .listed_end = 4 * SEC,
	        .want = SK_LOOK_GET },
	{ .name = "list older than our set_timeout, its answer is the look: known, no GET",
	        .bound = "i1",
	        .last_change = -3 * SEC,
	        .list_valid = true,
	        .listed = -5 * SEC,
	        .listed_id = "i1",
	        .listed_end = 4 * SEC,
	        .known_id = "i1",
	        .look = -3 * SEC,
	        .look_end = 7 * SEC,
	        .want = SK_LOOK_KNOWN },
	/* removed GET 2: the first look after a create (the list predates it) */
	{ .name = "created after the list (not listed), the create's answer: known, no GET",
	        .bound = "i1",
	        .last_change = -4 * SEC,
	        .list_valid = true,
	        .listed = -9 * SEC,
	        .known_id = "i1",
	        .look = -4 * SEC,
	        .look_end = 6 * SEC,
	        .want = SK_LOOK_KNOWN },
	{ .name = "created after the list, no look (controller restarted): GET",
	        .bound = "i1",
	        .last_change = -4 * SEC,
	        .list_valid = true,
	        .listed = -9 * SEC,
	        .want = SK_LOOK_GET },
	/* doubt: each still asks */
	{ .name = "look older than the window (probe_fresh_ms): GET",
	        .bound = "i1",
	        .last_change = -20 * SEC,
	        .list_valid = true,
	        .listed = -30 * SEC,
	        .listed_id = "i1",
	        .known_id = "i1",
	        .look = -20 * SEC,
	        .look_end = MIN,
	        .idle = 2 * MIN,
	        .want = SK_LOOK_GET },
	{ .name = "look of another sandbox: GET",
	        .bound = "i1",
	        .last_change = -3 * SEC,
	        .list_valid = false,
	        .known_id = "i0",
	        .look = -SEC,
	        .look_end = 9 * SEC,
	        .want = SK_LOOK_GET },
	{ .name = "look older than the last provider change (another replica acted): GET",
	        .bound = "i1",
	        .last_change = -SEC,
	        .list_valid = false,
	        .known_id = "i1",
	        .look = -3 * SEC,
	        .look_end = 7 * SEC,
	        .want = SK_LOOK_GET },
	{ .name = "a list newer than the look lacks the keeper (out-of-band kill): GET",
	        .bound = "i1",
	        .last_change = -4 * SEC,
	        .list_valid = true,
	        .listed = -SEC,
	        .known_id = "i1",
	        .look = -4 * SEC,
	        .look_end = 6 * SEC,
	        .want = SK_LOOK_GET },
	{ .name = "the look found it neither running nor paused (transitional): GET",
	        .bound = "i1",
	        .last_change = -4 * SEC,
	        .list_valid = false,
	        .known_id = "i1",
	        .look = -2 * SEC,
	        .look_state = SK_SANDBOX_TRANSITIONAL,
	        .want = SK_LOOK_GET },
	/* removed GET 4: our own pause after the list */
	{ .name = "paused by us after the list: known (paused), no GET",
	        .bound = "i1",
	        .last_change = -3 * SEC,
	        .list_valid = true,
	        .listed = -5 * SEC,
	        .listed_id = "i1",
	        .listed_end = 8 * MIN,
	        .known_id = "i1",
	        .look = -3 * SEC,
	        .look_state = SK_SANDBOX_PAUSED,
	        .want = SK_LOOK_KNOWN },
	/* removed GET 5 and a second renewal: a renewal writes no status when
	 * nothing else changed, so a list made before it still looks fresh */
	{ .name = "our renewal after a list that looks fresh: known (the list's deadline is old)",
	        .bound = "i1",
	        .last_change = -30 * SEC,
	        .list_valid = true,
	        .listed = -5 * SEC,
	        .listed_id = "i1",
	        .listed_end = SEC,
	        .known_id = "i1",
	        .look = -2 * SEC,
	        .look_end = 8 * SEC,
	        .activity = -SEC,
	        .want = SK_LOOK_KNOWN },
	{ .name = "a list newer than our look: as listed",
	        .bound = "i1",
	        .last_change = -30 * SEC,
	        .list_valid = true,
	        .listed = -SEC,
	        .listed_id = "i1",
	        .listed_end = 8 * SEC,
	        .known_id = "i1",
	        .look = -2 * SEC,
	        .look_end = 8 * SEC,
	        .want = SK_LOOK_LIST },
	{ .name = "no valid list, fresh look: known",
	        .bound = "i1",
	        .last_change = -4 * SEC,
	        .list_valid = false,
	        .known_id = "i1",
	        .look = -2 * SEC,
	        .look_end = 8 * SEC,
	        .want = SK_LOOK_KNOWN },
	/* removed GET 3: near the deadline, the state is unknown */
	{ .name = "near its deadline, a connect waits: not asked (the resume answers and acts)",
	        .bound = "i1",
	        .last_change = -9 * SEC,
	        .list_valid = true,
	        .listed = -12 * SEC,
	        .known_id = "i1",
	        .look = -9 * SEC,
	        .look_end = SEC,
	        .activity = -SEC / 2,
	        .wake = true,
	        .want = SK_LOOK_ASLEEP_MAYBE },
	{ .name = "near its deadline, no activity since it was set: left to sleep, not asked",
	        .bound = "i1",
	        .last_change = -9 * SEC,
	        .list_valid = true,
	        .listed = -12 * SEC,
	        .known_id = "i1",
	        .look = -9 * SEC,
	        .look_end = SEC,
	        .activity = -10 * SEC,
	        .want = SK_LOOK_ASLEEP_MAYBE },
	{ .name = "listed near its deadline, a connect waits: not asked",
	        .bound = "i1",
	        .last_change = -20 * SEC,
	        .list_valid = true,
	        .listed = -2 * SEC,
	        .listed_id = "i1",
	        .listed_end = SEC,
	        .wake = true,
	        .want = SK_LOOK_ASLEEP_MAYBE },
	{ .name = "near its deadline, activity wants a renewal, no connect waits: GET",
	        .bound = "i1",
	        .last_change = -9 * SEC,
	        .list_valid = true,
	        .listed = -12 * SEC,
	        .known_id = "i1",
	        .look = -9 * SEC,
	        .look_end = SEC,
	        .activity = -2 * SEC,
	        .want = SK_LOOK_GET },
	{ .name = "near its deadline but quiet (never probed): as listed",
	        .bound = "i1",
	        .idle = 10 * SEC,
	        .quiet = true,
	        .last_change = -20 * SEC,
	        .list_valid = true,
	        .listed = -2 * SEC,
	        .listed_id = "i1",
	        .listed_end = SEC,
	        .want = SK_LOOK_LIST },
};

START_TEST(test_look_table)
{
	const look_case *tc = &cases[_i];
	sk_userspace *us = calloc(1, sizeof(*us));
	sk_sandbox listed = { 0 };
	sk_sandbox_list l = { 0 };
	sk_list_view view = { 0 };
	sk_keeper_known k = { 0 };
	sk_plan_options o;
	sk_look got;

	sk_plan_options_init(&o);
	us->meta.name = strdup("alice");
	us->spec.user_id = strdup("alice");
	us->spec.mode = SK_MODE_RUNNING;
	us->spec.idle_timeout_ms = tc->idle ? tc->idle : 10 * SEC;
	us->status.phase = SK_PHASE_RUNNING;
	us->status.sandbox_id = tc->bound ? strdup(tc->bound) : NULL;
	us->status.last_reconcile_ms = NOW + tc->last_change;
	us->status.last_activity_ms = tc->prev_activity ? NOW + tc->prev_activity : 0;
	if (tc->quiet)
		sk_status_set_condition(
		        &us->status, SK_COND_DATAPLANE, "True", "Healthy", "", NOW - 10 * MIN, 1);
	if (tc->listed_id) {
		listed.id = (char *)tc->listed_id;
		listed.state = tc->listed_state ? tc->listed_state : SK_SANDBOX_RUNNING;
		listed.end_ms = tc->listed_end ? NOW + tc->listed_end : 0;
		l.items = &listed;
		l.len = 1;
	}
	view.for_user = &l;
	view.valid = tc->list_valid;
	view.listed_ms = tc->list_valid ? NOW + tc->listed : 0;
	k.sandbox_id = tc->known_id;
	k.look_ms = tc->look ? NOW + tc->look : 0;
	k.look_state = tc->look_state ? tc->look_state : SK_SANDBOX_RUNNING;
	k.look_end_ms = tc->look_end ? NOW + tc->look_end : 0;
	k.wake = tc->wake;
	got = sk_plan_look(us, tc->listed_id ? &listed : NULL, &view, &k,
	        tc->activity ? NOW + tc->activity : 0, NOW, &o);
	ck_assert_msg(got == tc->want, "%s: %s, want %s", tc->name, sk_look_name(got),
	        sk_look_name(tc->want));
	sk_userspace_free(us);
}
END_TEST

/* Without what the controller knows (sk_observe without it): the list or a GET. */
START_TEST(test_look_without_knowledge)
{
	sk_userspace *us = calloc(1, sizeof(*us));
	sk_plan_options o;

	sk_plan_options_init(&o);
	us->spec.mode = SK_MODE_RUNNING;
	us->status.sandbox_id = strdup("i1");
	us->status.last_reconcile_ms = NOW - SEC;
	ck_assert_int_eq(sk_plan_look(us, NULL, NULL, NULL, 0, NOW, &o), SK_LOOK_GET);
	sk_userspace_free(us);
}
END_TEST

START_TEST(test_renew_window)
{
	sk_plan_options o;

	sk_plan_options_init(&o); /* sleep margin 2s */
	ck_assert_int_eq(sk_plan_renew_window(10 * SEC, &o), 3 * SEC); /* margin + 1s */
	ck_assert_int_eq(sk_plan_renew_window(MIN, &o), 15 * SEC); /* D/4 */
	ck_assert_int_eq(sk_plan_renew_window(15 * MIN, &o), MIN); /* at most 1m */
	ck_assert_int_eq(sk_plan_renew_window(4 * SEC, &o), 2 * SEC); /* at most D/2 */
}
END_TEST

/* A list entry of the sandbox the controller killed as a replacement's
 * old one: left out while the list is older than the kill. */
typedef struct killed_case {
	const char *name;
	const char *listed_id;
	int64_t listed; /* offset from NOW */
	const char *killed_id; /* NULL: none */
	int64_t killed; /* offset from NOW */
	bool want; /* left out */
} killed_case;

static const killed_case killed_cases[] = {
	{ "nothing killed: as listed", "i1", -5 * SEC, NULL, 0, false },
	{ "killed after the list: stale, left out", "i1", -5 * SEC, "i1", -2 * SEC, true },
	{ "killed in the list's millisecond: left out", "i1", -2 * SEC, "i1", -2 * SEC, true },
	{ "a list after the kill still shows it: as listed (killed again)", "i1", -1 * SEC, "i1",
	        -2 * SEC, false },
	{ "another sandbox was killed: as listed", "i2", -5 * SEC, "i1", -2 * SEC, false },
};

START_TEST(test_listed_killed_table)
{
	const killed_case *tc = &killed_cases[_i];
	sk_sandbox listed = { .id = (char *)tc->listed_id, .state = SK_SANDBOX_RUNNING };
	sk_list_view view = { .valid = true, .listed_ms = NOW + tc->listed };
	sk_keeper_known k = { .killed_id = tc->killed_id,
		.killed_ms = tc->killed_id ? NOW + tc->killed : 0 };

	ck_assert_msg(sk_plan_listed_killed(&listed, &view, &k) == tc->want, "%s", tc->name);
	ck_assert(!sk_plan_listed_killed(&listed, &view, NULL));
}
END_TEST

/* A failed probe of the running keeper is confirmed by a GET, except on a
 * user's report under remediation Replace with nothing holding the space. */
typedef struct confirm_case {
	const char *name;
	bool report; /* known.replace_now */
	sk_remediation remediation;
	bool hold; /* the paused annotation */
	bool deleting;
	sk_mode mode;
	bool want; /* a GET */
} confirm_case;

static const confirm_case confirm_cases[] = {
	{ "a resync's probe failed, Replace: GET", false, SK_REMEDIATION_REPLACE, false, false,
	        SK_MODE_RUNNING, true },
	{ "a user's report, Replace: the report is evidence, no GET", true, SK_REMEDIATION_REPLACE,
	        false, false, SK_MODE_RUNNING, false },
	{ "a user's report, Report: GET (503 only for a keeper still running)", true,
	        SK_REMEDIATION_REPORT, false, false, SK_MODE_RUNNING, true },
	{ "a user's report, Replace, paused annotation (no replace): GET", true,
	        SK_REMEDIATION_REPLACE, true, false, SK_MODE_RUNNING, true },
	{ "a user's report, Replace, deleting: GET", true, SK_REMEDIATION_REPLACE, false, true,
	        SK_MODE_RUNNING, true },
	{ "a user's report, Replace, mode Paused: GET", true, SK_REMEDIATION_REPLACE, false, false,
	        SK_MODE_PAUSED, true },
};

START_TEST(test_confirm_unreachable_table)
{
	const confirm_case *tc = &confirm_cases[_i];
	sk_userspace *us = calloc(1, sizeof(*us));
	sk_keeper_known k = { .sandbox_id = "i1", .replace_now = tc->report };

	us->spec.mode = tc->mode;
	us->spec.remediation = tc->remediation;
	us->meta.deletion_ms = tc->deleting ? NOW : 0;
	if (tc->hold)
		sk_kvlist_set(&us->meta.annotations, SK_ANNOTATION_PAUSED, "true");
	us->status.sandbox_id = strdup("i1");
	ck_assert_msg(sk_plan_confirm_unreachable(us, &k) == tc->want, "%s", tc->name);
	ck_assert(sk_plan_confirm_unreachable(us, NULL)); /* nothing known: GET */
	sk_userspace_free(us);
}
END_TEST

Suite *
sk_suite_plan_look(void)
{
	Suite *s = suite_create("plan_look");
	TCase *tc = tcase_create("look");

	tcase_add_loop_test(tc, test_look_table, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_test(tc, test_look_without_knowledge);
	tcase_add_test(tc, test_renew_window);
	tcase_add_loop_test(tc, test_listed_killed_table, 0,
	        (int)(sizeof(killed_cases) / sizeof(killed_cases[0])));
	tcase_add_loop_test(tc, test_confirm_unreachable_table, 0,
	        (int)(sizeof(confirm_cases) / sizeof(confirm_cases[0])));
	suite_add_tcase(s, tc);
	return s;
}
