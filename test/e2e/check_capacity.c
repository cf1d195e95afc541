/*
 * End-to-end tests of a provider's capacity: 12 spaces on a plan
 * that runs 5 at once. The users connect in turn; every connect is served,
 * the simulator never runs more than 5 (its own high-water mark, and a
 * sample every 100 ms), the spaces evicted for the newcomers are Idle and
 * wake again on their next connect with their files. Once with the cap
 * configured (providers[].capacity.maxRunning: 5), once with only the
 * simulator capping (its 429s teach the controller the cap).
 * Real binaries: FerretDB, sandboxsim, spacekeeper, spacectl.
 */
#include <check.h>
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../testutil.h"
#include "capacity_testlib.h"
#include "util/util.h"

Suite *sk_suite_capacity(void);
Suite *sk_suite_capacity_archive(void);

#define CAP 5
#define SPACES 12

static void
capw_world_start(const char *const *sim_args, const char *capacity)
{
	capw_world_start_n(sim_args, capacity, SPACES);
}

/* Every space has its sandbox: Running or Idle (asleep, evicted). */
static bool
all_bound(void)
{
	json_t *ph = capw_phases();
	bool ok = capw_count_phase(ph, "Running") + capw_count_phase(ph, "Idle") == SPACES;

	json_decref(ph);
	return ok;
}

static double
metric(const char *series)
{
	char url[128], *text = NULL, *at;
	double v = -1;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", capw_main_port);
	capw_http("GET", url, NULL, NULL, &text);
	if (text && (at = strstr(text, series)) != NULL)
		v = strtod(at + strlen(series), NULL);
	free(text);
	return v;
}

#define CAPACITY_MAX "spacekeeper_capacity_max{provider=\"default\"} "

/* Waits (120 s) until n_run spaces are Running and n_idle Idle; their
 * names into running[] and idle[] (may be NULL). With cap_seen, the
 * highest spacekeeper_capacity_max read meanwhile: a learned cap is seen
 * while it stands (learnedFor may run out before the spaces settle). */
static void
settle(int n_run, int n_idle, const char **running, const char **idle, double *cap_seen)
{
	static const char *const names[] = { "u01", "u02", "u03", "u04", "u05", "u06" };
	int64_t deadline = sk_monotonic_ms() + 120000;
	json_t *ph = NULL;
	int nr = 0, ni = 0;
	double m;

	for (;;) {
		json_decref(ph);
		ph = capw_phases();
		if (cap_seen != NULL && (m = metric(CAPACITY_MAX)) > *cap_seen)
			*cap_seen = m;
		if (capw_count_phase(ph, "Running") == n_run &&
		        capw_count_phase(ph, "Idle") == n_idle)
			break;
		ck_assert_msg(sk_monotonic_ms() < deadline, "not settled (%s)", capw_keeper_log);
		sk_sleep_ms(250);
	}
	for (int i = 0; i < n_run + n_idle; i++) {
		const char *p = json_string_value(json_object_get(ph, names[i]));
		if (running != NULL && strcmp(p, "Running") == 0)
			running[nr++] = names[i];
		else if (idle != NULL && strcmp(p, "Idle") == 0)
			idle[ni++] = names[i];
	}
	json_decref(ph);
}

static void
twelve_users(void)
{
	capw_attach a;
	char user[16];
	int64_t deadline = sk_monotonic_ms() + 120000;
	json_t *ph;

	while (!all_bound()) {
		ck_assert_msg(
		        sk_monotonic_ms() < deadline, "spaces not bound (%s)", capw_keeper_log);
		sk_sleep_ms(250);
	}
	/* 12 users in turn, each a short session (past evictAfter) */
	for (int i = 1; i <= SPACES; i++) {
		snprintf(user, sizeof(user), "u%02d", i);
		capw_connect_user(user, &a);
		capw_write_file(&a, user);
		sk_sleep_ms(1200);
	}
	ph = capw_phases();
	ck_assert_msg(capw_count_phase(ph, "Idle") >= SPACES - CAP, "evicted spaces not Idle");
	json_decref(ph);
	/* they come back: woken with their files */
	for (int i = 1; i <= SPACES; i++) {
		snprintf(user, sizeof(user), "u%02d", i);
		capw_connect_user(user, &a);
		capw_check_file(&a, user);
		sk_sleep_ms(1200);
	}
	ck_assert_int_le(capw_sim_stat("max_running"), CAP);
	ck_assert_int_le(atomic_load(&capw_max_sampled), CAP);
}

/* ... and the start rate: the simulator allows 5 starts a second, the
 * controller keeps to 4 and is never refused. */
START_TEST(test_cap_configured)
{
	static const char *const sim_args[] = { "--creates-per-second", "5", NULL };

	capw_world_start(sim_args, "maxRunning: 5, createsPerSecond: 4, evictAfter: 1s");
	twelve_users();
	/* the configured cap is used, not just respected */
	ck_assert_int_ge(atomic_load(&capw_max_sampled), CAP - 1);
	ck_assert_int_eq(capw_sim_stat("refused.rate"), 0);
	ck_assert_int_eq(capw_sim_stat("refused.concurrency"), 0);
	capw_world_stop();
}
END_TEST

START_TEST(test_cap_only_at_provider)
{
	static const char *const sim_args[] = { "--max-running", "5", NULL };

	capw_world_start(sim_args, "evictAfter: 1s");
	twelve_users();
	ck_assert_int_gt(capw_sim_stat("max_running"), 0);
	/* the cap was reached (the provider refused) and then used: a cap
	 * learned from a refusal while starts were in flight is raised by
	 * what ran (it stayed at 3 of 5 before, on a loaded machine) */
	ck_assert_int_ge(atomic_load(&capw_max_sampled), CAP - 1);
	ck_assert_int_gt(capw_sim_stat("refused.concurrency"), 0);
	capw_world_stop();
}
END_TEST

/* ---- the queue's cap: 429 with Retry-After ---- */

static size_t
collect_body(char *p, size_t size, size_t n, void *arg)
{
	sk_buf_append(arg, p, size * n);
	return size * n;
}

static size_t
header_cb(char *p, size_t size, size_t n, void *arg)
{
	char *retry = arg;
	size_t len = size * n;

	if (len > 12 && strncasecmp(p, "Retry-After:", 12) == 0) {
		const char *v = p + 12 + strspn(p + 12, " ");
		snprintf(retry, 16, "%.*s", (int)strcspn(v, "\r\n"), v);
	}
	return len;
}

/* A connect of user with timeout; the status, the body (caller frees) and
 * the Retry-After header ("" when none). */
static long
connect_raw(const char *user, const char *timeout, char **body, char retry[16])
{
	CURL *h = curl_easy_init();
	sk_buf b = SK_BUF_INIT(1 << 20);
	char url[300];
	long st = 0;

	retry[0] = '\0';
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/users/%s/sandbox?timeout=%s",
	        capw_connect_port, user, timeout);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 120L);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, retry);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
	curl_easy_cleanup(h);
	sk_buf_append(&b, "", 0);
	*body = sk_buf_detach(&b);
	sk_buf_dispose(&b);
	return st;
}

static const char *waiting_user;

static void *
waiting_connect(void *arg)
{
	char retry[16], *body = NULL;
	long *st = arg;

	*st = connect_raw(waiting_user, "20s", &body, retry);
	free(body);
	return NULL;
}

/* The metrics say one connect waits at the provider. */
static bool
queue_has_one(void)
{
	char url[128], *text = NULL;
	bool ok;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", capw_main_port);
	capw_http("GET", url, NULL, NULL, &text);
	ok = text &&
	        strstr(text, "spacekeeper_connect_queue_length{provider=\"default\"} 1") != NULL;
	free(text);
	return ok;
}

/* Cap 2, maxQueued 1, the two running spaces just connected (nothing to
 * evict): one connect waits for a slot, the next gets 429 TooManyConnects
 * with Retry-After at once; the waiting one ends within its own timeout. */
START_TEST(test_queue_full)
{
	capw_attach a;
	pthread_t th;
	long waited = 0, st;
	char retry[16], *body = NULL;
	int64_t deadline, t0;
	const char *running[2];
	const char *idle[2];

	capw_world_start_n(NULL, "maxRunning: 2, maxQueued: 1, evictAfter: 1m", 4);
	settle(2, 2, running, idle, NULL);
	capw_connect_user(running[0], &a);
	capw_connect_user(running[1], &a);
	waiting_user = idle[0];
	ck_assert_int_eq(pthread_create(&th, NULL, waiting_connect, &waited), 0);
	deadline = sk_monotonic_ms() + 30000;
	while (!queue_has_one()) {
		ck_assert_msg(sk_monotonic_ms() < deadline, "%s not queued (%s)", idle[0],
		        capw_keeper_log);
		sk_sleep_ms(50);
	}
	t0 = sk_monotonic_ms();
	st = connect_raw(idle[1], "30s", &body, retry);
	ck_assert_msg(st == 429 && strstr(body, "TooManyConnects") != NULL, "%s: %ld %s", idle[1],
	        st, body);
	ck_assert_str_eq(retry, "5");
	ck_assert_int_lt(sk_monotonic_ms() - t0, 5000); /* at once, not after its timeout */
	free(body);
	pthread_join(th, NULL);
	ck_assert_msg(waited != 200 && waited != 0, "%s ended %ld", idle[0], waited);
	ck_assert_int_le(capw_sim_stat("max_running"), 2);
	capw_world_stop();
}
END_TEST

/* ---- a learned cap expires ---- */

/* The simulator caps at 3 (nothing configured): the controller learns 3
 * from its 429s; the plan is raised to 10; after learnedFor (5 s) the
 * learned cap is gone and the two sleeping users wake with no eviction. */
START_TEST(test_learned_cap_expires)
{
	static const char *const sim_args[] = { "--max-running", "3", NULL };
	const char *evictions =
	        "spacekeeper_evictions_total{provider=\"default\",reason=\"capacity\"} ";
	const char *idle[2];
	char url[200];
	double before, learned = 0;
	capw_attach a;

	capw_world_start_n(sim_args, "evictAfter: 1s, learnedFor: 5s", 5);
	settle(3, 2, NULL, idle, &learned);
	ck_assert_int_eq(learned, 3); /* read while it stood: it may be gone by now */
	snprintf(url, sizeof(url), "%s/_sim/faults", capw_sim_url);
	ck_assert_int_eq(
	        capw_http("POST", url, "{\"caps\": {\"max_running\": 10}}", NULL, NULL), 200);
	sk_sleep_ms(6000); /* past learnedFor */
	before = metric(evictions);
	capw_connect_user(idle[0], &a);
	capw_connect_user(idle[1], &a);
	ck_assert_int_eq(metric(evictions), before); /* nobody paused for them */
	ck_assert_int_eq(capw_sim_stat("running"), 5);
	ck_assert_int_eq(metric(CAPACITY_MAX), 0);
	capw_world_stop();
}
END_TEST

/* ---- Daytona: the simulator's Daytona API caps create and start ---- */

/* No cap configured, the Daytona simulator running at most 3: the five
 * spaces are all bound (3 running, 2 stopped: Idle) through its 429s,
 * never more than 3 run, and a connect to a stopped one is served. */
START_TEST(test_daytona_cap)
{
	static const char *const sim_args[] = { "--flavor", "daytona", "--max-running", "3", NULL };
	char url[300], *text = NULL;
	const char *idle[2];
	long st;

	capw_provider_type = "daytona";
	capw_world_start_n(sim_args, "evictAfter: 1s", 5);
	settle(3, 2, NULL, idle, NULL);
	sk_sleep_ms(1200); /* past evictAfter */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/users/%s/sandbox?timeout=60s",
	        capw_connect_port, idle[0]);
	st = capw_http("GET", url, NULL, NULL, &text);
	ck_assert_msg(st == 200, "connect %s: %ld %s (%s)", idle[0], st, text, capw_keeper_log);
	free(text);
	ck_assert_int_le(capw_sim_stat("max_running"), 3);
	ck_assert_int_le(atomic_load(&capw_max_sampled), 3);
	ck_assert_int_gt(capw_sim_stat("refused.concurrency"), 0);
	capw_world_stop();
	capw_provider_type = "e2b";
}
END_TEST

/* ---- usage and cost: spacectl top against the simulator's own accounting ---- */

/* user -> [runningSeconds, pausedSeconds] as the simulator counts them. */
static json_t *
sim_accounting(void)
{
	char url[200];
	json_t *v, *sb, *out = json_object();
	size_t i;

	snprintf(url, sizeof(url), "%s/_sim/sandboxes", capw_sim_url);
	v = capw_http_json("GET", url, NULL);
	json_array_foreach(v, i, sb)
	{
		const char *user = json_string_value(
		        json_object_get(json_object_get(sb, "metadata"), "user_id"));
		json_object_set_new(out, user,
		        json_pack("[O,O]", json_object_get(sb, "runningSeconds"),
		                json_object_get(sb, "pausedSeconds")));
	}
	json_decref(v);
	return out;
}

/* spacectl top userspaces -o json [--by LABEL | -l SELECTOR]: name -> item. */
static json_t *
top(const char *by, const char *sel)
{
	char cfg[600], *text = NULL;
	const char *args[] = { "top", "userspaces", "-o", "json", "--config", cfg,
		by            ? "--by"
		        : sel ? "-l"
		              : NULL,
		by ? by : sel, NULL };
	json_t *v, *item, *out = json_object();
	size_t i;

	snprintf(cfg, sizeof(cfg), "%s/config.yaml", sk_test_tmpdir());
	ck_assert_int_eq(capw_spacectl(args, &text), 0);
	v = json_loads(text ? text : "", 0, NULL);
	ck_assert_msg(v != NULL, "top: %s", text);
	free(text);
	json_array_foreach(json_object_get(v, "items"), i, item)
	        json_object_set(out, json_string_value(json_object_get(item, "name")), item);
	json_decref(v);
	return out;
}

static bool
all_phase(int n, const char *want)
{
	json_t *ph = capw_phases();
	bool ok = capw_count_phase(ph, want) == n;

	json_decref(ph);
	return ok;
}

#define NEAR(got, want, tol)                                                                       \
	ck_assert_msg((got) >= (want) - (tol) && (got) <= (want) + (tol),                          \
	        "%s = %.1f, want %.1f +- %.1f", #got, (double)(got), (double)(want),               \
	        (double)(tol))

START_TEST(test_top_matches_the_simulator)
{
	const char *pause[] = { "patch", "us", "u02", "-p", "{\"spec\":{\"mode\":\"Paused\"}}",
		NULL };
	json_t *acct, *t, *by, *red;
	double red_run = 0, red_cost = 0;
	int64_t deadline = sk_monotonic_ms() + 60000;

	capw_world_start_n(NULL, "", 3);
	while (!all_phase(3, "Running")) {
		ck_assert_msg(sk_monotonic_ms() < deadline, "not Running (%s)", capw_keeper_log);
		sk_sleep_ms(250);
	}
	ck_assert_int_eq(capw_spacectl(pause, NULL), 0);
	while (!all_phase(2, "Running")) {
		ck_assert_msg(sk_monotonic_ms() < deadline, "u02 not Paused (%s)", capw_keeper_log);
		sk_sleep_ms(250);
	}
	sk_sleep_ms(5000); /* time to count */
	acct = sim_accounting();
	t = top(NULL, NULL);
	by = top("team", NULL);
	red = top(NULL, "team=red");
	for (int i = 1; i <= 3; i++) {
		char u[16];
		json_t *a, *row;
		double run, paused;
		snprintf(u, sizeof(u), "u%02d", i);
		a = json_object_get(acct, u);
		row = json_object_get(t, u);
		ck_assert_ptr_nonnull(a);
		ck_assert_ptr_nonnull(row);
		run = json_number_value(json_object_get(row, "runningHours")) * 3600;
		paused = json_number_value(json_object_get(row, "pausedHours")) * 3600;
		/* within one resync (3 s) and the second between the two reads */
		NEAR(run, json_number_value(json_array_get(a, 0)), 4.0);
		NEAR(paused, json_number_value(json_array_get(a, 1)), 4.0);
		/* price: 3600 per running hour, 360 per paused hour */
		NEAR(json_number_value(json_object_get(row, "cost")), run + paused / 10, 0.1);
		ck_assert_int_eq(json_integer_value(json_object_get(row, "creates")), 1);
		if (i % 2) {
			red_run += run;
			red_cost += json_number_value(json_object_get(row, "cost"));
		}
	}
	ck_assert(json_number_value(json_array_get(json_object_get(acct, "u02"), 1)) >= 4.0);
	NEAR(json_number_value(json_object_get(json_object_get(by, "red"), "runningHours")) * 3600,
	        red_run, 2.0);
	NEAR(json_number_value(json_object_get(json_object_get(by, "red"), "cost")), red_cost, 2.0);
	ck_assert_ptr_nonnull(json_object_get(by, "blue"));
	/* -l: the red spaces only, the same figures */
	ck_assert_uint_eq(json_object_size(red), 2);
	for (int i = 1; i <= 3; i += 2) {
		char u[16];
		snprintf(u, sizeof(u), "u%02d", i);
		ck_assert_ptr_nonnull(json_object_get(red, u));
		NEAR(json_number_value(json_object_get(json_object_get(red, u), "runningHours")) *
		                3600,
		        json_number_value(json_object_get(json_object_get(t, u), "runningHours")) *
		                3600,
		        2.0);
	}
	ck_assert_ptr_null(json_object_get(red, "u02"));
	json_decref(red);
	json_decref(acct);
	json_decref(t);
	json_decref(by);
	capw_world_stop();
}
END_TEST

/* ---- deep sleep under the cap: an archive takes a slot like any start ---- */

#define ARCH_S3_ACCESS "e2e-capacity"
#define ARCH_S3_SECRET "e2e-capacity-secret-0123456789"
#define ARCH_IDLE_S 15
#define ARCH_AFTER_S 20

static pid_t arch_gw_pid;

/* A versitygw for the archive, and the config's archive section. */
static void
archive_config(void)
{
	static char block[2048];
	char url[64], dir[600], ak[600];

	snprintf(dir, sizeof(dir), "%s/cap-s3", sk_test_tmpdir());
	arch_gw_pid = sk_test_s3_start(
	        dir, 0, "spaces", ARCH_S3_ACCESS, ARCH_S3_SECRET, url, sizeof(url));
	snprintf(ak, sizeof(ak), "%s", sk_test_write_file("cap-s3-access", ARCH_S3_ACCESS "\n"));
	snprintf(block, sizeof(block),
	        "archive:\n  endpoint: %s\n  bucket: spaces\n  prefix: spaces\n"
	        "  accessKeyFile: %s\n  secretKeyFile: %s\n",
	        url, ak, sk_test_write_file("cap-s3-secret", ARCH_S3_SECRET "\n"));
	capw_extra_config = block;
}

static json_t *
space_json(const char *name)
{
	const char *args[] = { "get", "userspace", name, "-o", "json", NULL };
	char *text = NULL;
	json_t *v;

	ck_assert_int_eq(capw_spacectl(args, &text), 0);
	v = json_loads(text ? text : "", 0, NULL);
	free(text);
	ck_assert_ptr_nonnull(v);
	return v;
}

/* name's condition of type has this status and reason. */
static bool
has_condition(const char *name, const char *type, const char *status, const char *reason)
{
	json_t *v = space_json(name), *c;
	bool found = false;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(v, "status"), "conditions"), i, c)
	{
		found = found ||
		        (strcmp(json_string_value(json_object_get(c, "type")), type) == 0 &&
		                strcmp(json_string_value(json_object_get(c, "status")), status) ==
		                        0 &&
		                strcmp(json_string_value(json_object_get(c, "reason")), reason) ==
		                        0);
	}
	json_decref(v);
	return found;
}

/* name's events of reason: how many (their aggregated count: one record
 * per reason), and the last one's message into last (may be NULL). */
static int
events_of(const char *name, const char *want, char *last, size_t len)
{
	const char *args[] = { "events", name, "-o", "json", NULL };
	char *text = NULL;
	json_t *v, *e;
	size_t i;
	int n = 0;

	ck_assert_int_eq(capw_spacectl(args, &text), 0);
	v = json_loads(text ? text : "", 0, NULL);
	free(text);
	if (last != NULL)
		last[0] = '\0';
	json_array_foreach(json_object_get(v, "items"), i, e)
	{
		const char *reason = json_string_value(json_object_get(e, "reason"));
		const char *msg = json_string_value(json_object_get(e, "message"));
		json_t *count = json_object_get(e, "count");
		if (reason == NULL || strcmp(reason, want) != 0)
			continue;
		n += json_is_integer(count) ? (int)json_integer_value(count) : 1;
		if (last != NULL)
			snprintf(last, len, "%s", msg ? msg : "");
	}
	json_decref(v);
	return n;
}

/* Four spaces on a cap of two, idleTimeout 15s and archiveAfter 20s: u01
 * and u02 fall asleep (evicted for u03 and u04) while u03 and u04 are in
 * use; their archives wait for a slot and say so (Archived False
 * WaitingForCapacity), evicting nobody connected within evictAfter. Once
 * the users leave, all four are archived within idleTimeout + archiveAfter
 * + one idle session, the simulator never runs more than two, and no
 * archive's wake is told as a connect's. */
START_TEST(test_archive_takes_a_slot)
{
	static const char *const users[] = { "u01", "u02", "u03", "u04" };
	sk_buf y = SK_BUF_INIT(1 << 16);
	capw_attach a;
	int64_t deadline, last_use;
	bool waited[2] = { false, false };
	int woken[4], evicted[2];
	char last[256];
	json_t *ph;

	archive_config();
	for (int i = 0; i < 4; i++)
		sk_buf_printf(&y,
		        "---\napiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
		        "metadata: {name: %s}\nspec:\n  userID: %s\n  template: base\n"
		        "  mode: Running\n  lifecycle: {idleTimeout: %ds, archiveAfter: %ds}\n",
		        users[i], users[i], ARCH_IDLE_S, ARCH_AFTER_S);
	capw_world_start_with(NULL, "maxRunning: 2, evictAfter: 10s", 0, y.data);
	sk_buf_dispose(&y);
	deadline = sk_monotonic_ms() + 120000;
	for (;;) {
		ph = capw_phases();
		bool bound = capw_count_phase(ph, "Running") + capw_count_phase(ph, "Idle") == 4;
		json_decref(ph);
		if (bound)
			break;
		ck_assert_msg(
		        sk_monotonic_ms() < deadline, "spaces not bound (%s)", capw_keeper_log);
		sk_sleep_ms(250);
	}
	for (int i = 0; i < 4; i++) {
		capw_connect_user(users[i], &a);
		capw_write_file(&a, users[i]);
	}
	/* u03 and u04 stay in use until both archives were seen waiting (or
	 * long past their due time: what follows then tells what went wrong) */
	evicted[0] = events_of("u03", "Evicted", NULL, 0);
	evicted[1] = events_of("u04", "Evicted", NULL, 0);
	deadline = sk_monotonic_ms() + (ARCH_IDLE_S + ARCH_AFTER_S + 30) * 1000LL;
	while ((!waited[0] || !waited[1]) && sk_monotonic_ms() < deadline) {
		capw_connect_user("u03", &a);
		capw_connect_user("u04", &a);
		for (int i = 0; i < 2; i++)
			waited[i] = waited[i] ||
			        has_condition(users[i], "Archived", "False", "WaitingForCapacity");
		ph = capw_phases();
		ck_assert_int_eq(capw_count_phase(ph, "Archived"), 0);
		json_decref(ph);
		sk_sleep_ms(1000);
	}
	last_use = sk_monotonic_ms();
	/* the waiting archives evicted neither user (connected within evictAfter) */
	ck_assert_int_eq(events_of("u03", "Evicted", NULL, 0), evicted[0]);
	ck_assert_int_eq(events_of("u04", "Evicted", NULL, 0), evicted[1]);
	for (int i = 0; i < 4; i++)
		woken[i] = events_of(users[i], "Woken", NULL, 0);
	/* the users left: every space is archived */
	deadline = last_use + (ARCH_IDLE_S + ARCH_AFTER_S + ARCH_IDLE_S) * 1000LL;
	for (;;) {
		ph = capw_phases();
		int archived = capw_count_phase(ph, "Archived");
		json_decref(ph);
		if (archived == 4)
			break;
		ck_assert_msg(sk_monotonic_ms() < deadline, "%d of 4 archived after %lld ms (%s)",
		        archived, (long long)(sk_monotonic_ms() - last_use), capw_keeper_log);
		sk_sleep_ms(250);
	}
	ck_assert_int_le(capw_sim_stat("max_running"), 2);
	ck_assert_int_le(atomic_load(&capw_max_sampled), 2);
	/* one wake each since the users left, the archive's (none a connect's) */
	for (int i = 0; i < 4; i++) {
		int n = events_of(users[i], "Woken", last, sizeof(last));
		ck_assert_msg(n == woken[i] + 1 && strstr(last, "the archive woke sandbox") == last,
		        "%s: %d wakes since the users left, the last \"%s\"", users[i],
		        n - woken[i], last);
	}
	ck_assert_msg(waited[0] && waited[1],
	        "u01 %d, u02 %d: no Archived=False WaitingForCapacity while the cap was in use",
	        waited[0], waited[1]);
	for (int i = 0; i < 4; i++)
		ck_assert(has_condition(users[i], "Archived", "True", "Archived"));
	capw_world_stop();
	capw_extra_config = NULL;
	sk_test_stop(arch_gw_pid, true);
}
END_TEST

Suite *
sk_suite_capacity(void)
{
	Suite *s = suite_create("capacity");
	TCase *tc = tcase_create("cap");

	tcase_set_timeout(tc, 400);
	tcase_add_test(tc, test_cap_configured);
	tcase_add_test(tc, test_cap_only_at_provider);
	tcase_add_test(tc, test_queue_full);
	tcase_add_test(tc, test_daytona_cap);
	tcase_add_test(tc, test_learned_cap_expires);
	suite_add_tcase(s, tc);
	tc = tcase_create("usage");
	tcase_set_timeout(tc, 200);
	tcase_add_test(tc, test_top_matches_the_simulator);
	suite_add_tcase(s, tc);
	return s;
}

/* Deep sleep under the cap, a suite of its own: make test runs it beside the
 * other cases (hack/run-tests.sh). */
Suite *
sk_suite_capacity_archive(void)
{
	Suite *s = suite_create("capacity_archive");
	TCase *tc = tcase_create("archive");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_archive_takes_a_slot);
	suite_add_tcase(s, tc);
	return s;
}
