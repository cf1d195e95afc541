/*
 * End-to-end: one sandbox per user when the hosts' clocks disagree (issue
 * 21). Two replicas against one FerretDB and one sandboxsim (20 ms per
 * call); replica-1's wall clock is shifted with faketime
 * (FAKETIME_DONT_FAKE_MONOTONIC=1: only the wall clock is off, as on a host
 * whose NTP is broken; the offset read from a file, so a test can jump it).
 *   - replica-1 at +90 s, then restarted at -90 s, then a run at +20 s, 200
 *     new users each time: exactly 200 creates, no user ever seen with two
 *     live sandboxes (sandboxsim's list sampled every 100 ms), every space
 *     Ready; the skewed replica shows its skew (metric, /readyz, log) and
 *     acts on nothing; a spacectl at the same skew refuses to write, naming
 *     the skew, and changes nothing.
 *   - replica-1 SIGSTOPped past its lease while creates are in flight, its
 *     clock jumped +90 s meanwhile: after SIGCONT no call starts and nothing
 *     is written on the stale lease, it stays halted; once its clock is
 *     right again it takes its share back, still one sandbox per user.
 */
#include <check.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../testutil.h"
#include "replicas_testlib.h"
#include "util/util.h"

Suite *sk_suite_clock(void);
Suite *sk_suite_clock_jump(void);

#define SHARDS 16
#define USERS 200

static char faketime_lib[512];
static char ts_file[600];

/* The library the faketime wrapper preloads (its path differs by distribution). */
static void
find_faketime(void)
{
	const char *argv[] = { "sh", "-c",
		"command -v faketime >/dev/null && exec faketime -f +0s sh -c 'printf %s "
		"\"$LD_PRELOAD\"'",
		NULL };
	char *out = NULL;

	ck_assert_msg(sk_test_run(argv, NULL, NULL, &out, NULL, 30) == 0 && out && out[0],
	        "faketime is not installed (hack/deps.sh installs it)");
	snprintf(faketime_lib, sizeof(faketime_lib), "%s", out);
	free(out);
}

/* replica-1's wall-clock offset, e.g. "+90s" (faketime re-reads it every second). */
static void
set_skew(const char *offset)
{
	FILE *f = fopen(ts_file, "w");

	ck_assert_ptr_nonnull(f);
	fprintf(f, "%s\n", offset);
	fclose(f);
}

static void
setup(void)
{
	const char *args[] = { "--latency", "20ms", NULL };

	rl_setup("clock", SHARDS, args);
	find_faketime();
	snprintf(ts_file, sizeof(ts_file), "%s/faketime-%s", sk_test_tmpdir(), rl.db);
	set_skew("+0s");
}

static char env_preload[600], env_file[700];
static const char *skew_env[] = { env_preload, env_file, "FAKETIME_CACHE_DURATION=1",
	"FAKETIME_DONT_FAKE_MONOTONIC=1",
	/* ASan wants to be first in the preload order; its leak check is
	 * meaningless under a faked clock anyway */
	"ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0", NULL };

static void
start_skewed(int i)
{
	snprintf(env_preload, sizeof(env_preload), "LD_PRELOAD=%s", faketime_lib);
	snprintf(env_file, sizeof(env_file), "FAKETIME_TIMESTAMP_FILE=%s", ts_file);
	rl_start_env(i, NULL, skew_env);
}

/* Replica i with a fixed offset (FAKETIME, no file to re-read). */
static void
start_fixed_skew(int i, const char *offset)
{
	static char env_offset[64];
	const char *env[] = { env_preload, env_offset, "FAKETIME_DONT_FAKE_MONOTONIC=1",
		"ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0", NULL };

	snprintf(env_preload, sizeof(env_preload), "LD_PRELOAD=%s", faketime_lib);
	snprintf(env_offset, sizeof(env_offset), "FAKETIME=%s", offset);
	rl_start_env(i, NULL, env);
}

/* ---- observation ---- */

/* Samples sandboxsim's list every 100 ms: the most extra live sandboxes of
 * one prefix's users seen at once. */
typedef struct sampler {
	const char *prefix;
	pthread_t th;
	volatile bool stop;
	int max_dups, samples;
} sampler;

static void *
sample_main(void *arg)
{
	sampler *s = arg;

	while (!s->stop) {
		int dups = 0;
		rl_count_one_each(s->prefix, USERS, &dups);
		if (dups > s->max_dups)
			s->max_dups = dups;
		s->samples++;
		usleep(100000);
	}
	return NULL;
}

/* Creates sandboxsim answered with success since its stats were reset. */
static int
sim_creates(void)
{
	char url[256], *text = NULL;
	json_t *v;
	const char *code;
	json_t *count;
	int n = 0;

	snprintf(url, sizeof(url), "%s/_sim/stats", rl.sim_url);
	rl_http("GET", url, &text);
	v = json_loads(text ? text : "", 0, NULL);
	free(text);
	json_object_foreach(json_object_get(json_object_get(v, "requests"), "create"), code, count)
	{
		if (code[0] == '2')
			n += (int)json_integer_value(count);
	}
	json_decref(v);
	return n;
}

static void
sim_stats_reset(void)
{
	char url[256], *text = NULL;

	snprintf(url, sizeof(url), "%s/_sim/stats/reset", rl.sim_url);
	rl_http("POST", url, &text);
	free(text);
}

/* /readyz of a replica: its status and body (into body). */
static long
readyz(const rl_replica *r, char *body, size_t len)
{
	char url[128], *text = NULL;
	long st;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/readyz", r->port);
	st = rl_http("GET", url, &text);
	snprintf(body, len, "%s", text ? text : "");
	free(text);
	return st;
}

/* Waits until replica r says it is halted by the clock check (/readyz 503
 * naming the skew, the metric near want_s). */
static bool
halted_by_clock(const rl_replica *r, double want_s, int timeout_s)
{
	char body[256];

	for (int64_t t0 = sk_monotonic_ms(); sk_monotonic_ms() - t0 < timeout_s * 1000;) {
		double skew = rl_metric(r, "spacekeeper_clock_skew_seconds");
		if (readyz(r, body, sizeof(body)) == 503 && strstr(body, "clock skew") &&
		        skew > want_s - 2 && skew < want_s + 2) {
			printf("clock: replica at %+.0fs: skew metric %.3f s, /readyz 503 %s",
			        want_s, skew, body);
			return true;
		}
		usleep(250000);
	}
	return false;
}

static bool
log_has(const rl_replica *r, const char *what)
{
	char *text = rl_log_since(r, 0);
	bool has = strstr(text, what) != NULL;

	free(text);
	return has;
}

/* A spacectl with the skewed clock patches PREFIX000: it refuses, naming
 * the skew, and the object is unchanged. */
static void
spacectl_at_skew(const char *prefix, const char *direction)
{
	char name[64], wrapped[900], *out = NULL, *err = NULL;
	const char *patch[] = { "spacectl", "--mongodb-uri", rl.mongo_uri, "--database", rl.db,
		"patch", "us", name, "-p", "{\"spec\":{\"mode\":\"Paused\"}}", NULL };
	const char *get[] = { "spacectl", "--mongodb-uri", rl.mongo_uri, "--database", rl.db, "get",
		"us", name, "-o", "jsonpath={.spec.mode}", NULL };
	int rc;

	snprintf(name, sizeof(name), "%s000", prefix);
	snprintf(env_preload, sizeof(env_preload), "LD_PRELOAD=%s", faketime_lib);
	snprintf(env_file, sizeof(env_file), "FAKETIME_TIMESTAMP_FILE=%s", ts_file);
	rc = sk_test_run(patch, skew_env, NULL, &out, &err, 60);
	snprintf(wrapped, sizeof(wrapped), "%s", err ? err : "");
	printf("clock: spacectl %s the server's clock: exit %d: %s", direction, rc, wrapped);
	ck_assert_int_eq(rc, 3);
	ck_assert_msg(strstr(wrapped, "clock skew") && strstr(wrapped, direction), "%s", wrapped);
	free(out);
	free(err);
	out = NULL;
	ck_assert_int_eq(sk_test_run(get, NULL, NULL, &out, NULL, 60), 0);
	ck_assert_str_eq(out, "Running");
	free(out);
}

/* 200 new users while replica-1 runs at `offset`: exactly 200 creates, no
 * two live sandboxes for one user in any sample, every space Ready. */
static void
run_users(const char *prefix, const char *offset, double want_s)
{
	sampler s = { prefix, 0, false, 0, 0 };
	int creates;
	int64_t t0;

	ck_assert_msg(halted_by_clock(&rl.reps[1], want_s, 30),
	        "replica-1 at %s did not stop acting (log %s)", offset, rl.reps[1].log);
	ck_assert_msg(rl_split_settled(0x3, 0, sk_monotonic_ms(), 30, "with replica-1 halted"),
	        "replica-0 did not take every shard");
	ck_assert_int_eq(rl_held(&rl.reps[1]), 0);
	sim_stats_reset();
	pthread_create(&s.th, NULL, sample_main, &s);
	t0 = sk_monotonic_ms();
	rl_apply_users(prefix, 0, USERS);
	ck_assert_msg(rl_converged(prefix, USERS, 300), "%d users did not converge", USERS);
	s.stop = true;
	pthread_join(s.th, NULL);
	creates = sim_creates();
	printf("clock: replica-1 at %s: %d users Ready in %.1fs, %d creates, %d samples of the "
	       "list, at most %d extra sandboxes seen\n",
	        offset, USERS, (double)(sk_monotonic_ms() - t0) / 1000.0, creates, s.samples,
	        s.max_dups);
	ck_assert_int_eq(s.max_dups, 0);
	ck_assert_int_ge(s.samples, 10);
	ck_assert_int_eq(creates, USERS);
	ck_assert_int_eq(rl_held(&rl.reps[1]), 0);
	ck_assert(log_has(&rl.reps[1], "msg=\"clock skew: not acting\""));
}

START_TEST(test_skew_ahead_then_behind)
{
	rl_start(0, NULL);
	set_skew("+90s");
	start_skewed(1);
	run_users("p", "+90s", 90);
	spacectl_at_skew("p", "ahead of");
	/* the same replica, restarted 90 s behind */
	ck_assert_int_eq(sk_test_stop(rl.reps[1].pid, false), 0);
	set_skew("-90s");
	start_skewed(1);
	run_users("m", "-90s", -90);
	spacectl_at_skew("m", "behind");
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(sk_test_stop(rl.reps[i].pid, false), 0);
		rl.reps[i].pid = 0;
	}
}
END_TEST

START_TEST(test_skew_twenty_seconds)
{
	rl_start(0, NULL);
	set_skew("+20s");
	start_skewed(1);
	run_users("t", "+20s", 20);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(sk_test_stop(rl.reps[i].pid, false), 0);
		rl.reps[i].pid = 0;
	}
}
END_TEST

/* SIGSTOP past the lease while creates are in flight, the wall clock jumped
 * forward meanwhile (an NTP step, a VM resumed): no stale action, halted
 * until the clock is right, then its share back. */
START_TEST(test_stop_and_clock_jump)
{
	int in_flight = 0, fenced = 0, dups = 0;
	bool busy = false;
	int64_t t0;
	off_t off;

	rl_start(0, NULL);
	start_skewed(1);
	ck_assert_msg(rl_split_settled(0x3, SHARDS / 2 - 1, sk_monotonic_ms(), 30, "at start"),
	        "no even split");
	rl_apply_users("j", 0, 40);
	ck_assert_msg(rl_converged("j", 40, 120), "40 spaces did not converge");
	rl_sim_faults("{\"latency\": {\"create\": {\"fixed_ms\": 1500}}}");
	rl_apply_users("j", 40, 80);
	for (int t = 0; t < 300 && !busy; t++)
		busy = rl_creating_on(&rl.reps[1]);
	ck_assert_msg(busy, "replica-1 never started a create");
	usleep(200000);
	t0 = sk_monotonic_ms();
	ck_assert_int_eq(kill(rl.reps[1].pid, SIGSTOP), 0);
	set_skew("+90s");
	sleep(RL_LEASE_S + 2);
	rl_sim_faults(NULL);
	ck_assert_msg(
	        rl_split_settled(0x1, SHARDS, t0, RL_LEASE_S + 6, "while replica-1 is stopped"),
	        "replica-0 did not take the stopped replica's shards");
	off = rl_file_size(rl.reps[1].log);
	ck_assert_int_eq(kill(rl.reps[1].pid, SIGCONT), 0);
	ck_assert_msg(halted_by_clock(&rl.reps[1], 90, 20), "replica-1 not halted after the jump");
	ck_assert_msg(rl_converged("j", 80, 120), "80 spaces did not converge");
	rl_assert_no_stale_action(&rl.reps[1], off, &in_flight, &fenced);
	printf("clock: replica-1 after SIGCONT and a +90s jump: %d calls in flight at SIGSTOP "
	       "returned, %d fenced stops, no call on a stale lease\n",
	        in_flight, fenced);
	ck_assert_int_ge(fenced, 1);
	ck_assert_int_eq(rl_held(&rl.reps[1]), 0);
	/* the clock is right again: it acts again, still one sandbox each */
	set_skew("+0s");
	ck_assert_msg(rl_split_settled(0x3, SHARDS / 2 - 1, sk_monotonic_ms(), 40,
	                      "after replica-1's clock was fixed"),
	        "replica-1 did not take its share back");
	ck_assert(log_has(&rl.reps[1], "msg=\"clock skew within the limit again: acting\""));
	rl_apply_users("j", 80, 100);
	ck_assert_msg(rl_converged("j", 100, 120), "100 spaces did not converge");
	rl_count_one_each("j", 100, &dups);
	ck_assert_int_eq(dups, 0);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(sk_test_stop(rl.reps[i].pid, false), 0);
		rl.reps[i].pid = 0;
	}
}
END_TEST

/* The issue saw replicas under a shifted clock not exit within 20 s of
 * SIGTERM once their database had gone. Two causes, neither the wall clock
 * (every wait of the stop is on the monotonic clock): the faketime wrapper
 * forks and waits, so a SIGTERM to it orphans the controller, which never
 * sees the signal (this suite preloads the library instead); and a replica
 * holding shards released each lease with the store's timeout (3 s each:
 * a minute for 22 shards). Both replicas, one 1 s ahead, hold shards when
 * the database goes; each exits 0 within 15 s of SIGTERM (8 s measured:
 * the in-flight store read and libmongoc's endSessions, 3 s each). */
START_TEST(test_stop_after_database_gone)
{
	pid_t db;
	int64_t t0;

	db = sk_test_ferretdb_start(rl.mongo_uri, sizeof(rl.mongo_uri));
	ck_assert_int_gt(db, 0);
	rl_track_pid(db);
	rl_start(0, NULL);
	start_fixed_skew(1, "+1s");
	ck_assert_msg(rl_split_settled(0x3, SHARDS / 2 - 1, sk_monotonic_ms(), 30, "at start"),
	        "no even split");
	rl_apply_users("g", 0, 20);
	ck_assert_msg(rl_converged("g", 20, 120), "20 spaces did not converge");
	ck_assert_int_eq(sk_test_stop(db, true), 128 + SIGKILL);
	sleep(2);
	t0 = sk_monotonic_ms();
	for (int i = 0; i < 2; i++)
		kill(rl.reps[i].pid, SIGTERM);
	for (int i = 0; i < 2; i++) {
		int rc = sk_test_wait(rl.reps[i].pid, 15);
		printf("clock: replica-%d exited %d %.1fs after SIGTERM, its database gone\n", i,
		        rc, (double)(sk_monotonic_ms() - t0) / 1000.0);
		ck_assert_int_eq(rc, 0);
		rl.reps[i].pid = 0;
		ck_assert(log_has(&rl.reps[i], "msg=\"shards not released\""));
	}
	ck_assert_int_le(sk_monotonic_ms() - t0, 15000);
}
END_TEST

/* One case per scenario, each with its own database, simulator and replicas:
 * CK_RUN_SUITE=clock CK_RUN_CASE=skew90|skew20, CK_RUN_SUITE=clock_jump
 * CK_RUN_CASE=jump|dbgone (two suites: make test runs them side by side). */
static void
add_case(Suite *s, const char *name, const TTest *test)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, setup, rl_teardown);
	tcase_add_unchecked_fixture(tc, NULL, rl_kill_leftovers);
	tcase_set_timeout(tc, 900); /* skew90: two runs of 200 users on a loaded machine */
	tcase_add_test(tc, test);
	suite_add_tcase(s, tc);
}

Suite *
sk_suite_clock(void)
{
	Suite *s = suite_create("clock");

	add_case(s, "skew90", test_skew_ahead_then_behind);
	add_case(s, "skew20", test_skew_twenty_seconds);
	return s;
}

Suite *
sk_suite_clock_jump(void)
{
	Suite *s = suite_create("clock_jump");

	add_case(s, "jump", test_stop_and_clock_jump);
	add_case(s, "dbgone", test_stop_after_database_gone);
	return s;
}
