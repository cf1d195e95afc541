/*
 * End-to-end: SIGTERM under load. 900 UserSpaces, 900
 * managed sandboxes at the simulator (ten list pages) and 2 s of provider
 * latency: spacekeeper must exit 0 within the README's promise ("exits 0
 * within N s"), start no reconcile after its "shutting down" line, and log
 * what it abandoned. Once during the start-up list, once mid-work (pauses in
 * flight, keys queued, a resync list in progress); then calls longer than
 * the stop's grace, the same with the database stopped (the stop is bounded
 * all the same), and the provider abort hook on its own.
 *
 * On a loaded machine (make test runs suites side by side on 2 cores) each
 * step waits for what it needs (a log line, with a generous bound), never a
 * fixed sleep; a failed test's processes die with it (sk_test_spawn) and its
 * logs stay (the run keeps its temporary directory and prints where).
 */
#include <check.h>
#include <curl/curl.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../testutil.h"
#include "sandbox/sandbox.h"
#include "util/util.h"

Suite *sk_suite_shutdown(void);

#define N_SPACES 900
#define KEY_ENV "E2B_API_KEY=e2b_0000000000000000000000000000000000000000"

static char db[64];
static char sim_url[128];
static char cfg_path[600];
static char log_path[700];
static char mongo_uri[256]; /* the suite's FerretDB, or a test's own */
static pid_t sim_pid, keeper_pid, ferret_pid;

/* The documented promise (docs/operations.md, Running spacekeeper): "exits 0
 * within N s" (milliseconds). */
static int64_t
promised_ms(void)
{
	char *readme = NULL, *p;
	size_t n = 0;
	FILE *f = fopen(sk_test_path("docs/operations.md"), "r");
	long s = 0;

	ck_assert_msg(f != NULL, "docs/operations.md not found");
	ck_assert(getdelim(&readme, &n, '\0', f) > 0);
	fclose(f);
	p = strstr(readme, "exits 0 within ");
	ck_assert_msg(p != NULL, "docs/operations.md promises no shutdown time");
	s = strtol(p + strlen("exits 0 within "), NULL, 10);
	free(readme);
	ck_assert_int_gt(s, 0);
	return (int64_t)s * 1000;
}

static void
sim_post(const char *path, const char *json)
{
	sk_test_sim_post(sim_url, path, json);
}

static void
sim_faults(const char *json)
{
	sim_post("/_sim/faults", json);
}

/* 900 UserSpaces u0..u899 (n of them), the users of the simulator's preloaded sandboxes. */
static void
apply_n_spaces(int n, const char *extra_spec)
{
	const char *env[] = { NULL };
	sk_buf b = SK_BUF_INIT(0);
	char *out = NULL, *err = NULL;
	const char *argv[] = { "spacectl", "apply", "-f", NULL, "--mongodb-uri", mongo_uri,
		"--database", db, NULL };
	int rc;

	for (int i = 0; i < n; i++)
		sk_buf_printf(&b,
		        "---\napiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
		        "metadata:\n  name: u%d\nspec:\n  userID: u%d\n%s",
		        i, i, extra_spec);
	argv[3] = sk_test_write_file("spaces.yaml", b.data);
	rc = sk_test_run(argv, env, NULL, &out, &err, 300);
	ck_assert_msg(rc == 0, "apply: rc=%d\n%s", rc, err);
	free(out);
	free(err);
	sk_buf_dispose(&b);
}

static void
apply_spaces(const char *extra_spec)
{
	apply_n_spaces(N_SPACES, extra_spec);
}

static void
setup(void)
{
	const char *args[] = { "--preload", "900", NULL };
	char yaml[1024];

	curl_global_init(CURL_GLOBAL_DEFAULT);
	snprintf(db, sizeof(db), "%s", sk_test_unique_db());
	snprintf(mongo_uri, sizeof(mongo_uri), "%s", sk_test_mongodb_uri());
	sim_pid = sk_test_sim_start(args, sim_url, sizeof(sim_url));
	snprintf(yaml, sizeof(yaml),
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: ControllerConfig\n"
	        "providers:\n  - name: default\n    type: e2b\n    apiURL: %s\n"
	        "    sandboxURL: %s\n    apiKeyEnv: E2B_API_KEY\n    requestTimeout: 30s\n"
	        "controller:\n  workers: 16\n  resyncPeriod: 2s\n  listen: 127.0.0.1:0\n"
	        "  connectListen: 127.0.0.1:0\n", /* ports the kernel picks: suites run side by
	                                            side, and a port found free can be taken
	                                            before spacekeeper binds it */
	        sim_url, sim_url);
	snprintf(cfg_path, sizeof(cfg_path), "%s", sk_test_write_file("shutdown.yaml", yaml));
	keeper_pid = ferret_pid = 0;
}

static void
teardown(void)
{
	if (keeper_pid > 0)
		sk_test_stop(keeper_pid, true);
	if (sim_pid > 0)
		sk_test_stop(sim_pid, true);
	if (ferret_pid > 0) {
		kill(ferret_pid, SIGCONT);
		sk_test_stop(ferret_pid, true);
	}
	curl_global_cleanup();
}

static void
keeper_start(void)
{
	const char *env[] = { KEY_ENV, NULL };
	const char *argv[] = { "spacekeeper", "--config", cfg_path, "--mongodb-uri", mongo_uri,
		"--database", db, "--log-level", "debug", NULL };

	snprintf(log_path, sizeof(log_path), "%s/spacekeeper-%s.log", sk_test_tmpdir(), db);
	keeper_pid = sk_test_spawn(argv, env, log_path);
}

static char *
read_log(void)
{
	char *text = NULL;
	size_t n = 0;
	FILE *f = fopen(log_path, "r");

	if (f == NULL)
		return sk_strdup("");
	if (getdelim(&text, &n, '\0', f) < 0) {
		free(text);
		text = sk_strdup("");
	}
	fclose(f);
	return text;
}

static bool
log_has(const char *needle, int timeout_s)
{
	for (int i = 0; i <= timeout_s * 10; i++) {
		char *text = read_log();
		bool found = strstr(text, needle) != NULL;
		free(text);
		if (found)
			return true;
		usleep(100000);
	}
	return false;
}

/* The log's last lines, for a failure message (the log's path says where the
 * rest is). Static buffer. Short: a message past Check's limit ended the test
 * process with "Early exit with return value 2", hiding the failure (the
 * runner raises the limit; a message still stops at 8 KB). */
static const char *
log_tail(void)
{
	static char tail[1200];
	char *text = read_log();
	size_t n = strlen(text);

	snprintf(tail, sizeof(tail), "%s",
	        n > sizeof(tail) - 1 ? text + n - (sizeof(tail) - 1) : text);
	free(text);
	return tail;
}

/* Waits (bounded, generous: the machine may be loaded) for a log line. */
static void
await_log(const char *needle, int timeout_s)
{
	ck_assert_msg(log_has(needle, timeout_s), "no %s within %d s (log %s):\n%s", needle,
	        timeout_s, log_path, log_tail());
}

/* Waits (bounded) until at least n workers are inside a reconcile, as the
 * controller's /metrics counts them (its port from "controller started"). */
static void
await_active_workers(int n, int timeout_s)
{
	char *log = read_log(), *line = strstr(log, "msg=\"controller started\""), url[128];
	const char *series = "controller_runtime_active_workers{controller=\"userspace\"} ";
	const char *p = line ? strstr(line, "http_port=") : NULL;
	int64_t deadline = sk_monotonic_ms() + (int64_t)timeout_s * 1000;
	bool seen = false;

	ck_assert_msg(p != NULL, "no http_port in the start line (log %s)", log_path);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", atoi(p + strlen("http_port=")));
	free(log);
	while (!seen && sk_monotonic_ms() < deadline) {
		char *body = NULL, *at;
		sk_test_http("GET", url, NULL, &body);
		at = body ? strstr(body, series) : NULL;
		seen = at != NULL && atoi(at + strlen(series)) >= n;
		free(body);
		if (!seen)
			usleep(100 * 1000);
	}
	ck_assert_msg(seen, "not %d workers busy within %d s (log %s)", n, timeout_s, log_path);
}

/* How many lines of the log hold needle. */
static int
log_count(const char *needle)
{
	char *text = read_log();
	int n = 0;

	for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	free(text);
	return n;
}

/* Pages of the provider list (GET /v2/sandboxes) the simulator answered. */
static long
sim_list_pages(void)
{
	char url[256];
	json_t *v;
	long n;

	snprintf(url, sizeof(url), "%s/_sim/stats", sim_url);
	v = sk_test_http_json("GET", url, NULL, NULL);
	n = (long)json_integer_value(
	        json_object_get(json_object_get(json_object_get(v, "requests"), "list"), "200"));
	json_decref(v);
	return n;
}

/* Polls COND (an expression) every 100 ms for up to timeout_s seconds. */
#define await_condition(cond, timeout_s, what)                                                     \
	do {                                                                                       \
		int64_t until_ = sk_monotonic_ms() + (int64_t)(timeout_s)*1000;                    \
		while (!(cond)) {                                                                  \
			ck_assert_msg(sk_monotonic_ms() < until_, "%s within %d s (log %s):\n%s",  \
			        what, (int)(timeout_s), log_path, log_tail());                     \
			usleep(100 * 1000);                                                        \
		}                                                                                  \
	} while (0)

/* SIGTERM; returns the milliseconds until the exit, which must be 0. */
static int64_t
term_and_time(void)
{
	int64_t t0 = sk_monotonic_ms();
	int rc;

	kill(keeper_pid, SIGTERM);
	rc = sk_test_wait(keeper_pid, 120);
	keeper_pid = 0;
	ck_assert_msg(rc == 0, "exit status %d (log %s):\n%s", rc, log_path, log_tail());
	return sk_monotonic_ms() - t0;
}

/* The wall-clock milliseconds of a log line's ts=...Z. */
static int64_t
line_ts(const char *line)
{
	struct tm tm = { 0 };
	int ms = 0;
	const char *p = strstr(line, "ts=");

	if (!p ||
	        sscanf(p, "ts=%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
	                &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) != 7)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (int64_t)timegm(&tm) * 1000 + ms;
}

/* Every reconcile that ended after "shutting down" began before it: its end
 * (ts) minus its duration_ms is not later than the signal's line (2 ms for
 * the rounding of two millisecond clocks). Returns how many ended after. */
static int
assert_no_reconcile_started_after_signal(const char *log)
{
	const char *sd = strstr(log, "msg=\"shutting down\"");
	int64_t t_sig, ended_after = 0;
	const char *line;

	ck_assert_msg(sd != NULL, "no \"shutting down\" line (log %s):\n%s", log_path, log_tail());
	while (sd > log && sd[-1] != '\n')
		sd--;
	t_sig = line_ts(sd);
	ck_assert(t_sig > 0);
	for (line = sd; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		const char *d = strstr(line, "duration_ms=");
		const char *eol = strchr(line, '\n');
		if (strncmp(strstr(line, "msg=") ? strstr(line, "msg=") : "", "msg=\"reconcile",
		            14))
			continue;
		ck_assert_msg(d && (!eol || d < eol), "no duration in: %.200s", line);
		ended_after++;
		ck_assert_msg(line_ts(line) - strtoll(d + 12, NULL, 10) <= t_sig + 2,
		        "a reconcile started after \"shutting down\": %.300s", line);
	}
	return (int)ended_after;
}

/* The stop's own account: what it abandoned, then the end. */
static void
assert_logged_abandoned(const char *log)
{
	ck_assert_msg(strstr(log, "msg=\"stopping\" queued_abandoned="), "no stopping line");
	ck_assert_msg(strstr(log, "msg=\"provider list abandoned\""), "list not abandoned");
	ck_assert_msg(strstr(log, "msg=\"controller stopped\""), "no stopped line");
}

/* The SIGTERM comes during the start-up list (ten pages of 2 s). */
START_TEST(test_sigterm_during_first_list)
{
	int64_t promise = promised_ms(), took;
	char *log;

	apply_spaces("");
	sim_faults("{\"latency\": {\"*\": {\"fixed_ms\": 2000}}}");
	keeper_start();
	/* the shards are taken just before the start-up list (ten pages of 2 s) */
	await_log("summary=\"holds ", 120);
	sleep(1);
	took = term_and_time();
	log = read_log();
	ck_assert_msg(took <= promise, "SIGTERM took %lld ms, the README promises %lld ms (log %s)",
	        (long long)took, (long long)promise, log_path);
	assert_no_reconcile_started_after_signal(log);
	assert_logged_abandoned(log);
	free(log);
}
END_TEST

/* The SIGTERM comes mid-work: pauses of 2 s in flight on every worker, most
 * keys queued, and a resync list (2 s a page) in progress. */
START_TEST(test_sigterm_under_load)
{
	int64_t promise = promised_ms(), took;
	int listed;
	long pages;
	char *log;

	apply_spaces("  mode: Paused\n");
	sim_faults("{\"latency\": {\"pause\": {\"fixed_ms\": 2000}}}");
	keeper_start();
	await_log("msg=\"controller started\"", 180);
	sim_faults("{\"latency\": {\"*\": {\"fixed_ms\": 2000}}}");
	/* Workers inside pauses (900 of 2 s each: minutes of work), then a list
	 * ends and the next one (every 2 s) has answered a page: nine more of 2 s
	 * to go at the signal. A fixed 5 s found, on a loaded machine, no
	 * reconcile in flight, or the list just ended. */
	await_active_workers(8, 120);
	listed = log_count("msg=\"provider listed\"");
	await_condition(log_count("msg=\"provider listed\"") > listed, 120, "no list ended");
	pages = sim_list_pages();
	await_condition(sim_list_pages() > pages, 60, "the next list answered no page");
	took = term_and_time();
	log = read_log();
	ck_assert_msg(took <= promise, "SIGTERM took %lld ms, the README promises %lld ms",
	        (long long)took, (long long)promise);
	assert_no_reconcile_started_after_signal(log);
	assert_logged_abandoned(log);
	ck_assert_msg(strstr(log, "in_flight=0 ") == NULL, "no reconcile was in flight");
	free(log);
}
END_TEST

/* In-flight reconciles get the grace, then their provider calls are aborted:
 * creates of 20 s cannot finish, so the stop waits out the grace (5 s), logs
 * each reconcile it cut short, and still exits within the promise. */
START_TEST(test_sigterm_aborts_calls_after_grace)
{
	int64_t promise = promised_ms(), took;
	char *log;

	sim_post("/_sim/reset", "{}"); /* no sandboxes: each space needs a create */
	apply_n_spaces(8, "");
	sim_faults("{\"latency\": {\"create\": {\"fixed_ms\": 20000}}}");
	keeper_start();
	await_log("msg=\"controller started\"", 180);
	await_active_workers(8, 120); /* every space's worker inside its reconcile */
	took = term_and_time();
	log = read_log();
	ck_assert_msg(took <= promise, "SIGTERM took %lld ms", (long long)took);
	ck_assert_msg(
	        took >= 4500, "the in-flight reconciles got no grace: %lld ms", (long long)took);
	ck_assert_msg(strstr(log, "msg=\"reconcile abandoned\""), "nothing abandoned (log %s):\n%s",
	        log_path, log_tail());
	ck_assert_msg(strstr(log, "aborted: the client is stopping"), "no abort (log %s):\n%s",
	        log_path, log_tail());
	assert_no_reconcile_started_after_signal(log);
	free(log);
}
END_TEST

/* The writes after the grace meet a database that stopped answering (its
 * process stopped): the stop is bounded all the same, by the grace and then
 * 4 s for those writes (SK_CONTROLLER_STOP_WRITE_MS), logged, exit 69. A
 * stop that waited on the database took its socket timeout (60 s) per call. */
START_TEST(test_sigterm_store_hung_after_grace)
{
	int64_t promise = promised_ms(), t0, took;
	char *log;
	int rc;

	ferret_pid = sk_test_ferretdb_start(mongo_uri, sizeof(mongo_uri));
	sim_post("/_sim/reset", "{}");
	apply_n_spaces(8, "");
	sim_faults("{\"latency\": {\"create\": {\"fixed_ms\": 20000}}}");
	keeper_start();
	await_log("msg=\"controller started\"", 180);
	await_active_workers(8, 120);
	ck_assert_int_eq(kill(ferret_pid, SIGSTOP), 0);
	t0 = sk_monotonic_ms();
	kill(keeper_pid, SIGTERM);
	rc = sk_test_wait(keeper_pid, 120);
	took = sk_monotonic_ms() - t0;
	keeper_pid = 0;
	kill(ferret_pid, SIGCONT);
	log = read_log();
	ck_assert_msg(rc == 69, "exit status %d after %lld ms (log %s):\n%s", rc, (long long)took,
	        log_path, log_tail());
	ck_assert_msg(took <= promise, "SIGTERM took %lld ms with the database stopped (log %s)",
	        (long long)took, log_path);
	ck_assert_msg(took >= 4500, "no grace: %lld ms", (long long)took);
	ck_assert_msg(strstr(log, "msg=\"stop timed out\""), "no \"stop timed out\" (log %s):\n%s",
	        log_path, log_tail());
	free(log);
}
END_TEST

static bool
stop_now(void *payload)
{
	return *(bool *)payload;
}

static bool
stop_after(void *payload)
{
	return sk_monotonic_ms() >= *(int64_t *)payload;
}

/* The hook itself (sk_provider_set_abort): a request in flight ends within
 * about a second of the hook turning true (curl's progress callback), and a
 * client already stopping sends nothing. */
START_TEST(test_provider_abort_hook)
{
	sk_provider_config pc = { 0 };
	sk_provider *p = NULL;
	sk_sandbox_list l = { 0 };
	sk_sandbox sb = { 0 };
	sk_error err = { 0 };
	int64_t at, t0;
	bool now = true;

	setenv("SK_TEST_ABORT_KEY", "e2b_0000000000000000000000000000000000000000", 1);
	pc.name = "test";
	pc.type = SK_PROVIDER_E2B;
	pc.api_url = pc.sandbox_url = sim_url;
	pc.domain = "e2b.app";
	pc.api_key_env = "SK_TEST_ABORT_KEY";
	pc.max_in_flight = 4;
	pc.qps = 100;
	pc.burst = 100;
	pc.request_timeout_ms = 30000;
	pc.sandbox_timeout_ms = 3600000;
	ck_assert_msg(sk_provider_new(&pc, &p, &err) == 0, "%s", err.message);
	sim_faults("{\"latency\": {\"*\": {\"fixed_ms\": 10000}}}");
	at = sk_monotonic_ms() + 500;
	sk_provider_set_abort(p, stop_after, &at);
	t0 = sk_monotonic_ms();
	ck_assert_int_eq(sk_sandbox_list_all(p, NULL, &l, &err), SK_EUNAVAILABLE);
	ck_assert_msg(sk_monotonic_ms() - t0 < 2500, "the abort took %lld ms",
	        (long long)(sk_monotonic_ms() - t0));
	ck_assert_msg(strstr(err.message, "aborted: the client is stopping"), "%s", err.message);
	sk_provider_set_abort(p, stop_now, &now);
	t0 = sk_monotonic_ms();
	ck_assert_int_eq(sk_sandbox_get(p, "inope", &sb, &err), SK_EUNAVAILABLE);
	ck_assert_int_lt(sk_monotonic_ms() - t0, 100);
	now = false; /* the hook says go: the request is made */
	sim_faults("{\"latency\": {\"*\": null}}");
	ck_assert_int_eq(sk_sandbox_get(p, "inope", &sb, &err), SK_ENOTFOUND);
	sk_sandbox_dispose(&sb);
	sk_sandbox_list_dispose(&l);
	sk_provider_free(p);
}
END_TEST

/* What a failed test started dies with it: a test process that exits at an
 * assert (before its teardown) leaves no sandboxsim running. The child here
 * stands for such a test: it starts one and exits at once. */
START_TEST(test_failed_test_leaves_no_process)
{
	int fds[2];
	pid_t test, sim = 0;
	int64_t deadline;

	ck_assert_int_eq(pipe(fds), 0);
	test = fork();
	if (test == 0) {
		const char *argv[] = { "sandboxsim", "--listen", "127.0.0.1:0", NULL };
		pid_t p = sk_test_spawn(argv, NULL, NULL);
		if (write(fds[1], &p, sizeof(p)) != (ssize_t)sizeof(p))
			_exit(2);
		_exit(1); /* "failed", no teardown */
	}
	close(fds[1]);
	ck_assert_int_eq(read(fds[0], &sim, sizeof(sim)), (ssize_t)sizeof(sim));
	close(fds[0]);
	ck_assert_int_gt(sim, 0);
	ck_assert_int_eq(sk_test_wait(test, 30), 1);
	deadline = sk_monotonic_ms() + 30000;
	while (kill(sim, 0) == 0 && sk_monotonic_ms() < deadline)
		usleep(50000);
	ck_assert_msg(
	        kill(sim, 0) != 0, "sandboxsim %d outlived the test that started it", (int)sim);
}
END_TEST

Suite *
sk_suite_shutdown(void)
{
	Suite *s = suite_create("shutdown");
	TCase *tc = tcase_create("sigterm");

	tcase_set_timeout(tc, 600); /* bounds above: 300 s apply, 180 s start, 120 s stop */
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_sigterm_during_first_list);
	tcase_add_test(tc, test_sigterm_under_load);
	tcase_add_test(tc, test_sigterm_aborts_calls_after_grace);
	tcase_add_test(tc, test_sigterm_store_hung_after_grace);
	tcase_add_test(tc, test_provider_abort_hook);
	tcase_add_test(tc, test_failed_test_leaves_no_process);
	suite_add_tcase(s, tc);
	return s;
}
