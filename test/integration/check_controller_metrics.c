/*
 * Integration tests for the controller's spacekeeper_userspaces gauge
 * (pkg/controller, sk_ctl_metrics_userspaces) over a real informer on a
 * real FerretDB: counts by phase and Ready, status-only writes, removals;
 * and the spaces part's records (spaces_int.h), which need no server.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../testutil.h"
#include "controller/metrics_int.h"
#include "controller/spaces_int.h"
#include "reconcile/reconcile.h"

Suite *sk_suite_controller_metrics(void);

static sk_store *store;
static sk_informer *inf;
static sk_metrics *metrics;

static void
setup(void)
{
	sk_store_options so = SK_STORE_OPTIONS_INIT;
	sk_informer_options io = SK_INFORMER_OPTIONS_INIT;
	sk_error err = { 0 };

	so.uri = sk_test_mongodb_uri();
	so.database = sk_test_unique_db();
	ck_assert_msg(sk_store_open(&store, &so, &err) == 0, "store: %s", err.message);
	io.store = store;
	io.skip_status_only = true; /* as the controller runs it */
	ck_assert_int_eq(sk_informer_new(&inf, &io, &err), 0);
	metrics = sk_metrics_new();
	sk_metrics_declare(metrics, SK_CTL_METRIC_USERSPACES, SK_METRIC_GAUGE, "test");
}

static void
teardown(void)
{
	sk_informer_free(inf);
	sk_metrics_free(metrics);
	sk_store_drop(store, NULL);
	sk_store_close(store);
	inf = NULL;
	metrics = NULL;
	store = NULL;
}

static void
create(const char *name)
{
	char yaml[256];
	sk_doclist dl = { 0 };
	sk_errlist errs = { 0 };
	sk_userspace *us = NULL, *out = NULL;
	sk_error err = { 0 };

	snprintf(yaml, sizeof(yaml),
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	        "metadata:\n  name: %s\nspec:\n  userID: u-%s\n",
	        name, name);
	ck_assert_int_eq(sk_doc_parse(yaml, strlen(yaml), "t.yaml", &dl, &err), 0);
	ck_assert_int_eq(sk_userspace_from_doc(dl.items[0], &us, &errs), 0);
	ck_assert_msg(sk_store_create(store, us, &out, &err) == 0, "create: %s", err.message);
	sk_doclist_dispose(&dl);
	sk_errlist_dispose(&errs);
	sk_userspace_free(us);
	sk_userspace_free(out);
}

/* Writes phase and a Ready condition with ready_status ("True", "False",
 * "Unknown"), or no condition at all when ready_status is NULL. */
static void
set_status(const char *name, sk_phase phase, const char *ready_status)
{
	sk_userspace *cur = NULL, *next = NULL;
	sk_userspace_status st = { 0 };
	sk_condition cond = { 0 };
	sk_error err = { 0 };

	ck_assert_int_eq(sk_store_get(store, name, &cur, &err), 0);
	st.phase = phase;
	st.sandbox_id = "isim-metrics";
	if (ready_status) {
		cond.type = SK_COND_READY;
		cond.status = (char *)ready_status;
		cond.reason = "Test";
		cond.last_transition_ms = 1700000000000;
		st.conditions = &cond;
		st.n_conditions = 1;
	}
	ck_assert_msg(sk_store_write_status(store, cur, &st, &next, &err) == 0,
	        "write_status %s: %s", name, err.message);
	sk_userspace_free(cur);
	sk_userspace_free(next);
}

static double
gauge(const char *phase, const char *ready)
{
	char l[96];

	snprintf(l, sizeof(l), "phase=\"%s\",ready=\"%s\"", phase, ready);
	return sk_metrics_value(metrics, SK_CTL_METRIC_USERSPACES, l);
}

/* The sum of every series with ready=value, from the rendered text (what
 * test/bench/bench.sh reads). */
static double
rendered_sum(const char *ready)
{
	sk_buf b = SK_BUF_INIT(1 << 20);
	char want[32], *text, *line, *save = NULL;
	double sum = 0;

	snprintf(want, sizeof(want), "ready=\"%s\"}", ready);
	sk_metrics_render(metrics, &b);
	text = sk_buf_detach(&b);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (strncmp(line, SK_CTL_METRIC_USERSPACES "{",
		            strlen(SK_CTL_METRIC_USERSPACES) + 1) == 0 &&
		        strstr(line, want))
			sum += strtod(strchr(line, '}') + 1, NULL);
	free(text);
	return sum;
}

static const char *const phases[] = { "None", "Pending", "Creating", "Running", "Resuming",
	"Paused", "Degraded", "Deleting", "Error" };

START_TEST(test_zero_series_declared)
{
	/* No informer: every phase x ready series exists at 0. */
	sk_ctl_metrics_userspaces(metrics, NULL);
	for (size_t i = 0; i < sizeof(phases) / sizeof(phases[0]); i++) {
		ck_assert_double_eq(gauge(phases[i], "true"), 0);
		ck_assert_double_eq(gauge(phases[i], "false"), 0);
	}
	ck_assert_double_eq(rendered_sum("true"), 0);
}
END_TEST

START_TEST(test_counts_by_phase_and_ready)
{
	sk_error err = { 0 };
	sk_buf b = SK_BUF_INIT(1 << 20);
	char *text;

	create("a"); /* no status */
	create("b");
	create("c");
	create("d");
	create("e");
	create("f");
	create("g");
	set_status("b", SK_PHASE_RUNNING, "True");
	set_status("c", SK_PHASE_RUNNING, "False");
	set_status("d", SK_PHASE_PAUSED, "False");
	set_status("e", SK_PHASE_CREATING, "Unknown");
	set_status("f", SK_PHASE_RUNNING, "True");
	set_status("g", SK_PHASE_DEGRADED, NULL);
	ck_assert_int_eq(sk_informer_relist(inf, &err), 0);
	sk_ctl_metrics_userspaces(metrics, inf);
	ck_assert_double_eq(gauge("Running", "true"), 2);
	ck_assert_double_eq(gauge("Running", "false"), 1);
	ck_assert_double_eq(gauge("Paused", "false"), 1);
	ck_assert_double_eq(gauge("Creating", "false"), 1);
	ck_assert_double_eq(gauge("Degraded", "false"), 1);
	ck_assert_double_eq(gauge("None", "false"), 1);
	ck_assert_double_eq(gauge("Paused", "true"), 0);
	ck_assert_double_eq(gauge("Creating", "true"), 0);
	ck_assert_double_eq(rendered_sum("true"), 2);
	ck_assert_double_eq(rendered_sum("false"), 5);
	sk_metrics_render(metrics, &b);
	text = sk_buf_detach(&b);
	ck_assert_ptr_nonnull(strstr(text, "# TYPE spacekeeper_userspaces gauge\n"));
	ck_assert_ptr_nonnull(
	        strstr(text, "\nspacekeeper_userspaces{phase=\"Running\",ready=\"true\"} 2\n"));
	free(text);
}
END_TEST

/* The controller's own status writes reach the gauge through a poll even
 * though skip_status_only suppresses their change callbacks. */
START_TEST(test_status_only_write_and_removal)
{
	sk_informer_stats st;
	sk_error err = { 0 };

	create("h");
	create("i");
	set_status("h", SK_PHASE_CREATING, "False");
	set_status("i", SK_PHASE_RUNNING, "True");
	ck_assert_int_eq(sk_informer_relist(inf, &err), 0);
	sk_ctl_metrics_userspaces(metrics, inf);
	ck_assert_double_eq(gauge("Creating", "false"), 1);
	ck_assert_double_eq(gauge("Running", "true"), 1);

	set_status("h", SK_PHASE_RUNNING, "True");
	ck_assert_int_eq(sk_informer_poll(inf, &err), 0);
	sk_informer_get_stats(inf, &st);
	ck_assert_uint_eq(st.skipped, 1);
	sk_ctl_metrics_userspaces(metrics, inf);
	ck_assert_double_eq(gauge("Creating", "false"), 0);
	ck_assert_double_eq(gauge("Running", "true"), 2);
	ck_assert_double_eq(rendered_sum("true"), 2);

	/* Ready back to False (e.g. data plane lost). */
	set_status("i", SK_PHASE_DEGRADED, "False");
	ck_assert_int_eq(sk_informer_poll(inf, &err), 0);
	sk_ctl_metrics_userspaces(metrics, inf);
	ck_assert_double_eq(gauge("Running", "true"), 1);
	ck_assert_double_eq(gauge("Degraded", "false"), 1);

	/* Removed from the store: gone from the gauge after the relist. */
	ck_assert_int_eq(sk_store_remove(store, "h", &err), 0);
	ck_assert_int_eq(sk_informer_relist(inf, &err), 0);
	sk_ctl_metrics_userspaces(metrics, inf);
	ck_assert_double_eq(gauge("Running", "true"), 0);
	ck_assert_double_eq(rendered_sum("true"), 0);
	ck_assert_double_eq(rendered_sum("false"), 1);
}
END_TEST

/* ---- the spaces part (spaces_int.h): one record per space ---- */

static void
count_drift(const char *name, const int64_t *since, void *payload)
{
	size_t *n = payload;

	ck_assert_ptr_nonnull(name);
	ck_assert_int_gt(since[0] + since[1], 0);
	(*n)++;
}

static size_t
drifting(sk_controller *c)
{
	size_t n = 0;

	sk_ctl_spaces_drift(c, count_drift, &n);
	return n;
}

/* What each part of a space's record outlives: a forget (the space left the
 * store) clears what the connect path reads, not the resourceVersion our
 * writes left (a cached copy of a removed object is never trusted) nor the
 * drift (the worker clears it apart); reconciles finished count per space. */
START_TEST(test_space_records)
{
	sk_controller *c = sk_calloc(1, sizeof(*c));
	sk_reconcile_report r = { 0 };
	int64_t since[SK_CTL_DRIFT_TYPES] = { 1000, 0 };
	sk_reconcile_env env = { 0 };
	sk_ctl_keeper k;

	sk_ctl_spaces_init(c);
	ck_assert(!sk_ctl_space_keeper(c, "a", &k));
	ck_assert_int_eq(sk_ctl_space_written_rv(c, "a"), 0);
	sk_ctl_space_set_written_rv(c, "a", 7);
	ck_assert(!sk_ctl_space_keeper(c, "a", &k)); /* a write alone is no keeper */
	r.keeper_id = "sb1";
	r.running = r.healthy = true;
	r.seen_ms = 5;
	sk_ctl_space_note(c, "a", &r, true);
	sk_ctl_space_request(c, "a", true, false);
	sk_ctl_space_set_drift(c, "a", since);
	sk_ctl_space_set_drift(c, "b", NULL); /* no drift: no record */
	ck_assert(sk_ctl_space_keeper(c, "a", &k));
	ck_assert_str_eq(k.mem.sandbox_id, "sb1");
	ck_assert(k.mem.healthy);
	ck_assert_uint_eq(drifting(c), 1);
	sk_ctl_space_forget(c, "a");
	ck_assert(!sk_ctl_space_keeper(c, "a", &k));
	ck_assert_ptr_null(k.mem.sandbox_id);
	sk_ctl_space_take(c, "a", &env);
	ck_assert(!env.wake); /* the request went with the forget */
	ck_assert_int_eq(sk_ctl_space_written_rv(c, "a"), 7);
	ck_assert_uint_eq(drifting(c), 1);
	sk_ctl_space_set_drift(c, "a", NULL);
	ck_assert_uint_eq(drifting(c), 0);
	ck_assert_uint_eq(sk_ctl_gen(c), 0);
	ck_assert_uint_eq(sk_ctl_spaces_failed(c), 0);
	sk_ctl_spaces_dispose(c);
	free(c);
}
END_TEST

Suite *
sk_suite_controller_metrics(void)
{
	Suite *s = suite_create("controller_metrics");
	TCase *tc = tcase_create("userspaces");
	TCase *sp = tcase_create("spaces");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_zero_series_declared);
	tcase_add_test(tc, test_counts_by_phase_and_ready);
	tcase_add_test(tc, test_status_only_write_and_removal);
	suite_add_tcase(s, tc);
	tcase_add_test(sp, test_space_records);
	suite_add_tcase(s, sp);
	return s;
}
