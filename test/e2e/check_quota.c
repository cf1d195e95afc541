/*
 * End-to-end tests of SpaceQuota: six spaces, team red (u01,
 * u03, u05) and blue; the quota team-red allows 3 spaces and 2 running.
 *   - admission: spacectl apply of a fourth red space is refused with the
 *     quota named, nothing written; a blue one passes; status.used follows
 *     creates and deletes, and so do the metrics;
 *   - running: the red users connect in turn, each served, the simulator
 *     never runs more than 2 red sandboxes (sampled every 100 ms), the
 *     evictions are red ones (blue stays running), files survive; a wake
 *     with both running red spaces just connected gets 429 naming the quota.
 * Real binaries: FerretDB, sandboxsim, spacekeeper, spacectl.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../testutil.h"
#include "capacity_testlib.h"
#include "util/util.h"

Suite *sk_suite_quota_e2e(void);

static const char *QUOTA = "apiVersion: spacekeeper.dev/v1alpha1\nkind: SpaceQuota\n"
                           "metadata: {name: team-red}\n"
                           "spec:\n  selector: {matchLabels: {team: red}}\n"
                           "  hard: {spaces: 3, running: 2}\n";

/* ---- the red sandboxes running at the simulator, sampled ---- */

static atomic_bool red_sampling;
static atomic_int red_max;
static pthread_t red_sampler;

static int
red_running(void)
{
	char url[200];
	json_t *v, *sb;
	size_t i;
	int n = 0;

	snprintf(url, sizeof(url), "%s/_sim/sandboxes", capw_sim_url);
	v = capw_http_json("GET", url, NULL);
	json_array_foreach(v, i, sb)
	{
		const char *user = json_string_value(
		        json_object_get(json_object_get(sb, "metadata"), "user_id"));
		const char *state = json_string_value(json_object_get(sb, "state"));
		/* red: the odd users */
		n += user && state && strcmp(state, "running") == 0 && (user[2] - '0') % 2 == 1;
	}
	json_decref(v);
	return n;
}

static void *
red_sample(void *arg)
{
	while (atomic_load(&red_sampling)) {
		int n = red_running();
		if (n > atomic_load(&red_max))
			atomic_store(&red_max, n);
		usleep(100000);
	}
	return NULL;
}

static void
world_start(const char *capacity)
{
	capw_world_start_with(NULL, capacity, 6, QUOTA);
	atomic_store(&red_max, 0);
	atomic_store(&red_sampling, true);
	ck_assert_int_eq(pthread_create(&red_sampler, NULL, red_sample, NULL), 0);
}

static void
world_stop(void)
{
	atomic_store(&red_sampling, false);
	pthread_join(red_sampler, NULL);
	capw_world_stop();
}

/* Red: 2 Running, 1 Idle (the quota evicted one at create); blue: 3 Running. */
static void
wait_settled(void)
{
	int64_t deadline = sk_monotonic_ms() + 120000;

	for (;;) {
		json_t *ph = capw_phases();
		bool ok = capw_count_phase(ph, "Running") == 5 && capw_count_phase(ph, "Idle") == 1;
		json_decref(ph);
		if (ok)
			return;
		ck_assert_msg(
		        sk_monotonic_ms() < deadline, "spaces not settled (%s)", capw_keeper_log);
		sk_sleep_ms(250);
	}
}

/* spacectl with stdout and stderr; the exit code. */
static int
ctl(char **out, char **err, const char *const *args)
{
	const char *argv[24] = { "spacectl", "--mongodb-uri", capw_mongo_uri, "--database",
		capw_db };
	size_t n = 5;

	for (size_t i = 0; args[i] && n < 23; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	return sk_test_run(argv, NULL, NULL, out, err, 120);
}

/* Waits (30 s at most) for an Evicted event whose message holds want. */
static void
wait_evicted_event(const char *want)
{
	const char *args[] = { "events", "-o", "json", NULL };
	int64_t end = sk_monotonic_ms() + 30000;
	char *out = NULL, *err = NULL;
	bool seen = false;

	while (!seen && sk_monotonic_ms() < end) {
		free(out);
		free(err);
		out = err = NULL;
		seen = ctl(&out, &err, args) == 0 && strstr(out, "\"Evicted\"") != NULL &&
		        strstr(out, want) != NULL;
		if (!seen)
			sk_sleep_ms(200);
	}
	ck_assert_msg(
	        seen, "no Evicted event saying \"%s\": %s%s", want, out ? out : "", err ? err : "");
	free(out);
	free(err);
}

static int
apply_space(const char *name, const char *team, char **err)
{
	char yaml[512], path[600];
	const char *args[] = { "apply", "-f", path, NULL };
	char *out = NULL;
	int rc;

	snprintf(yaml, sizeof(yaml),
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	        "metadata: {name: %s, labels: {team: %s}}\nspec: {userID: %s}\n",
	        name, team, name);
	snprintf(path, sizeof(path), "%s", sk_test_write_file("one.yaml", yaml));
	rc = ctl(&out, err, args);
	free(out);
	return rc;
}

/* status.used of team-red (-1, -1 before the controller wrote it). */
static void
quota_used(json_int_t *spaces, json_int_t *running)
{
	const char *args[] = { "get", "sq", "team-red", "-o", "json", NULL };
	char *out = NULL, *err = NULL;
	json_t *v, *used;

	ck_assert_int_eq(ctl(&out, &err, args), 0);
	v = json_loads(out, 0, NULL);
	used = json_object_get(json_object_get(v, "status"), "used");
	*spaces = used ? json_integer_value(json_object_get(used, "spaces")) : -1;
	*running = used ? json_integer_value(json_object_get(used, "running")) : -1;
	json_decref(v);
	free(out);
	free(err);
}

static void
wait_used(json_int_t spaces, json_int_t running)
{
	int64_t deadline = sk_monotonic_ms() + 60000;
	json_int_t s = -1, r = -1;

	for (;;) {
		quota_used(&s, &r);
		if (s == spaces && (running < 0 || r == running))
			return;
		ck_assert_msg(sk_monotonic_ms() < deadline,
		        "status.used spaces %lld running %lld, want %lld %lld", (long long)s,
		        (long long)r, (long long)spaces, (long long)running);
		sk_sleep_ms(250);
	}
}

/* A line of /metrics holds want (polled: the observer refreshes every 2 s). */
static void
wait_metric(const char *want)
{
	int64_t deadline = sk_monotonic_ms() + 30000;
	char url[128], *text = NULL;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", capw_main_port);
	for (;;) {
		bool ok;
		capw_http("GET", url, NULL, NULL, &text);
		ok = text && strstr(text, want) != NULL;
		free(text);
		if (ok)
			return;
		ck_assert_msg(sk_monotonic_ms() < deadline, "no \"%s\" in /metrics", want);
		sk_sleep_ms(250);
	}
}

START_TEST(test_quota_admission_and_status)
{
	const char *get_u07[] = { "get", "us", "u07", NULL };
	const char *del_u01[] = { "delete", "us", "u01", "--wait=false", NULL };
	char *out = NULL, *err = NULL;

	world_start("evictAfter: 1s");
	wait_settled();
	wait_used(3, 2);
	/* a fourth red space: refused, the quota named, nothing written */
	ck_assert_int_eq(apply_space("u07", "red", &err), 1);
	ck_assert_msg(strstr(err,
	                      "exceeded quota: team-red, requested: spaces=1, used: "
	                      "spaces=3, limited: spaces=3") != NULL,
	        "%s", err);
	free(err);
	ck_assert_int_eq(ctl(&out, &err, get_u07), 1);
	free(out);
	free(err);
	/* another tenant's space passes */
	ck_assert_int_eq(apply_space("u08", "blue", &err), 0);
	free(err);
	wait_metric("spacekeeper_quota_used{quota=\"team-red\",resource=\"spaces\"} 3");
	wait_metric("spacekeeper_quota_hard{quota=\"team-red\",resource=\"running\"} 2");
	/* a delete frees a place: status.used follows, then the apply passes */
	ck_assert_int_eq(ctl(&out, &err, del_u01), 0);
	free(out);
	free(err);
	wait_used(2, -1);
	ck_assert_int_eq(apply_space("u07", "red", &err), 0);
	free(err);
	wait_used(3, -1);
	wait_metric("spacekeeper_quota_used{quota=\"team-red\",resource=\"spaces\"} 3");
	ck_assert_int_le(atomic_load(&red_max), 2);
	world_stop();
}
END_TEST

static const char *const RED[] = { "u01", "u03", "u05" };

START_TEST(test_quota_running_evicts_in_tenant)
{
	char url[200], *text = NULL;
	capw_attach a;
	json_t *ph;
	const char *idle = NULL;
	long st;

	world_start("evictAfter: 3s");
	wait_settled();
	/* the red users in turn, twice: each served, their files kept */
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 3; i++) {
			capw_connect_user(RED[i], &a);
			if (round == 0)
				capw_write_file(&a, RED[i]);
			else
				capw_check_file(&a, RED[i]);
			ck_assert_int_le(red_running(), 2);
			sk_sleep_ms(3500); /* past evictAfter */
		}
	}
	ck_assert_int_le(atomic_load(&red_max), 2);
	ck_assert_int_eq(atomic_load(&red_max), 2); /* the quota is used, not just kept */
	/* the evictions were red ones: blue kept running */
	ph = capw_phases();
	ck_assert_str_eq(json_string_value(json_object_get(ph, "u02")), "Running");
	ck_assert_str_eq(json_string_value(json_object_get(ph, "u04")), "Running");
	ck_assert_str_eq(json_string_value(json_object_get(ph, "u06")), "Running");
	wait_metric("spacekeeper_evictions_total{provider=\"default\",reason=\"quota\"}");
	/* the evicted space's event names the quota, as the metric's reason does */
	wait_evicted_event("to free a slot under SpaceQuota team-red (the oldest activity)");
	/* both running red spaces just connected: a wake of the third has
	 * nothing to evict in the tenant and gets 429 naming the quota */
	for (int i = 0; i < 3; i++) {
		const char *p = json_string_value(json_object_get(ph, RED[i]));
		if (p && strcmp(p, "Idle") == 0)
			idle = RED[i];
	}
	ck_assert_ptr_nonnull(idle);
	for (int i = 0; i < 3; i++) {
		if (RED[i] != idle)
			capw_connect_user(RED[i], &a);
	}
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/users/%s/sandbox?timeout=30s",
	        capw_connect_port, idle);
	st = capw_http("GET", url, NULL, NULL, &text);
	ck_assert_msg(st == 429 && strstr(text, "exceeded quota: team-red") != NULL,
	        "connect %s: %ld %s", idle, st, text);
	free(text);
	json_decref(ph);
	ck_assert_int_le(atomic_load(&red_max), 2);
	world_stop();
}
END_TEST

Suite *
sk_suite_quota_e2e(void)
{
	Suite *s = suite_create("quota_e2e");
	TCase *tc = tcase_create("quota");

	tcase_set_timeout(tc, 400);
	tcase_add_test(tc, test_quota_admission_and_status);
	tcase_add_test(tc, test_quota_running_evicts_in_tenant);
	suite_add_tcase(s, tc);
	return s;
}
