/*
 * End-to-end: replicas share the spaces by shard leases (issue 11 items 1
 * and 2). Three spacekeeper processes on loopback against one FerretDB and
 * one sandboxsim, short lease timings (shards 24, lease 4s, renew deadline
 * 3s, retry 500ms): 300 spaces converge to one sandbox each; a SIGKILLed
 * replica's shards are taken over; a replica SIGSTOPped for longer than the
 * lease calls nothing with its stale lease after SIGCONT; a fourth takes a
 * share; a connect through a replica that does not hold the user's shard
 * answers what the holder answers.
 */
#include <check.h>
#include <curl/curl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../testutil.h"
#include "util/util.h"

Suite *sk_suite_replicas(void);

#define DUMMY_KEY "E2B_API_KEY=e2b_0000000000000000000000000000000000000000"
#define N_REPLICAS 4
#define SHARDS 24
#define LEASE_S 4
#define RESYNC_S 2

static char db[64];
static char mongo_uri[128];
static char sim_url[128];
static pid_t sim_pid;

typedef struct replica {
	pid_t pid;
	int port;
	char cfg[600];
	char log[700];
} replica;
static replica reps[N_REPLICAS];

/* ---- HTTP ---- */

static size_t
collect(char *p, size_t size, size_t n, void *arg)
{
	sk_buf_append(arg, p, size * n);
	return size * n;
}

static long
http(const char *method, const char *url, char **out)
{
	CURL *h = curl_easy_init();
	struct curl_slist *hdr = NULL;
	sk_buf b = SK_BUF_INIT(64 << 20);
	long status = 0;

	hdr = curl_slist_append(hdr, "X-API-Key: e2b_0000000000000000000000000000000000000000");
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	if (strcmp(method, "POST") == 0)
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	sk_buf_append(&b, "", 0);
	*out = sk_buf_detach(&b);
	sk_buf_dispose(&b);
	return status;
}

static json_t *
sim_sandboxes(void)
{
	char url[256], *text = NULL;
	json_t *v;

	snprintf(url, sizeof(url), "%s/_sim/sandboxes", sim_url);
	http("GET", url, &text);
	v = json_loads(text ? text : "", 0, NULL);
	free(text);
	ck_assert_msg(json_is_array(v), "GET /_sim/sandboxes");
	return v;
}

/* Live (running or paused) sandboxes per user "r000".."r<n-1>"; returns
 * how many users have exactly one, and the duplicates in *dups. */
static int
count_one_each(const char *prefix, int n, int *dups)
{
	json_t *all = sim_sandboxes(), *sb;
	int *per = calloc((size_t)n, sizeof(int)), ones = 0;
	size_t i;

	json_array_foreach(all, i, sb)
	{
		const char *st = json_string_value(json_object_get(sb, "state"));
		const char *u = json_string_value(
		        json_object_get(json_object_get(sb, "metadata"), "user_id"));
		if (!u || !st || strncmp(u, prefix, strlen(prefix)) != 0 ||
		        (strcmp(st, "running") != 0 && strcmp(st, "paused") != 0))
			continue;
		int k = atoi(u + strlen(prefix));
		if (k >= 0 && k < n)
			per[k]++;
	}
	*dups = 0;
	for (int k = 0; k < n; k++) {
		ones += per[k] == 1;
		*dups += per[k] > 1 ? per[k] - 1 : 0;
	}
	free(per);
	json_decref(all);
	return ones;
}

/* A gauge of a replica's /metrics (-1 when it does not answer). */
static double
metric(const replica *r, const char *series)
{
	char url[128], *text = NULL, *p;
	double v = -1;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", r->port);
	if (http("GET", url, &text) == 200) {
		size_t len = strlen(series);
		for (p = text; (p = strstr(p, series)) != NULL; p += len)
			if ((p == text || p[-1] == '\n') && p[len] == ' ') {
				v = strtod(p + len + 1, NULL);
				break;
			}
	}
	free(text);
	return v;
}

static int
held(const replica *r)
{
	return (int)metric(r, "spacekeeper_shards_held");
}

/* ---- processes ---- */

/* A failed assertion ends the forked test without its teardown: every
 * child is recorded, and the suite's unchecked teardown (in the runner)
 * kills what is left. */
static void
track_pid(pid_t pid)
{
	char path[600];
	FILE *f;

	snprintf(path, sizeof(path), "%s/replica-pids", sk_test_tmpdir());
	if ((f = fopen(path, "a")) != NULL) {
		fprintf(f, "%d\n", (int)pid);
		fclose(f);
	}
}

static void
kill_leftovers(void)
{
	char path[600], cmd[64], exe[256];
	FILE *f;
	int pid;

	snprintf(path, sizeof(path), "%s/replica-pids", sk_test_tmpdir());
	if ((f = fopen(path, "r")) == NULL)
		return;
	while (fscanf(f, "%d", &pid) == 1) {
		ssize_t n;
		snprintf(cmd, sizeof(cmd), "/proc/%d/exe", pid);
		n = readlink(cmd, exe, sizeof(exe) - 1);
		exe[n > 0 ? n : 0] = '\0';
		if (pid > 0 && (strstr(exe, "spacekeeper") || strstr(exe, "sandboxsim"))) {
			kill(pid, SIGCONT);
			kill(pid, SIGKILL);
		}
	}
	fclose(f);
	unlink(path);
}

static void
write_config(replica *r, int i)
{
	char yaml[2048], name[32];

	r->port = sk_test_free_port();
	snprintf(yaml, sizeof(yaml),
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: ControllerConfig\n"
	        "providers:\n  - name: default\n    type: e2b\n    apiURL: %s\n"
	        "    sandboxURL: %s\n    apiKeyEnv: E2B_API_KEY\n    requestTimeout: 5s\n"
	        "    sandboxTimeout: 1h\n"
	        "controller:\n  workers: 8\n  resyncPeriod: %ds\n  listen: 127.0.0.1:%d\n"
	        "  identity: replica-%d\n  shards: %d\n  leaseDuration: %ds\n"
	        "  renewDeadline: 3s\n  retryPeriod: 500ms\n",
	        sim_url, sim_url, RESYNC_S, r->port, i, SHARDS, LEASE_S);
	snprintf(name, sizeof(name), "replica-%d.yaml", i);
	snprintf(r->cfg, sizeof(r->cfg), "%s", sk_test_write_file(name, yaml));
}

static void
start(int i)
{
	const char *env[] = { DUMMY_KEY, NULL };
	replica *r = &reps[i];
	const char *argv[] = { "spacekeeper", "--config", r->cfg, "--mongodb-uri", mongo_uri,
		"--database", db, "--poll", "200ms", NULL };

	write_config(r, i);
	snprintf(r->log, sizeof(r->log), "%s/replica-%s-%d.log", sk_test_tmpdir(), db, i);
	r->pid = sk_test_spawn(argv, env, r->log);
	track_pid(r->pid);
	ck_assert_msg(
	        sk_test_wait_port(r->port, 20000), "replica %d did not listen (%s)", i, r->log);
}

static void
apply_users(const char *prefix, int from, int to)
{
	sk_buf b = SK_BUF_INIT(16 << 20);
	const char *path;
	char p[600];

	for (int i = from; i < to; i++)
		sk_buf_printf(&b,
		        "---\napiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
		        "metadata:\n  name: %s%03d\nspec:\n  userID: %s%03d\n",
		        prefix, i, prefix, i);
	path = sk_test_write_file("users.yaml", b.data);
	snprintf(p, sizeof(p), "%s", path);
	{
		const char *argv[] = { "spacectl", "--mongodb-uri", mongo_uri, "--database", db,
			"apply", "-f", p, NULL };
		ck_assert_int_eq(sk_test_run(argv, NULL, NULL, NULL, NULL, 120), 0);
	}
	sk_buf_dispose(&b);
}

static void
setup(void)
{
	const char *args[] = { "--latency", "2ms", NULL };

	curl_global_init(CURL_GLOBAL_DEFAULT);
	snprintf(db, sizeof(db), "%s", sk_test_unique_db());
	snprintf(mongo_uri, sizeof(mongo_uri), "%s", sk_test_mongodb_uri());
	sim_pid = sk_test_sim_start(args, sim_url, sizeof(sim_url));
	track_pid(sim_pid);
	memset(reps, 0, sizeof(reps));
}

static void
teardown(void)
{
	for (int i = 0; i < N_REPLICAS; i++)
		if (reps[i].pid > 0) {
			kill(reps[i].pid, SIGCONT);
			sk_test_stop(reps[i].pid, true);
		}
	if (sim_pid > 0)
		sk_test_stop(sim_pid, true);
	curl_global_cleanup();
}

/* Waits until the live replicas (mask) hold every shard between them, each
 * at least min; prints the split. */
static bool
split_settled(unsigned mask, int min, int timeout_s, const char *when)
{
	for (int t = 0; t < timeout_s * 4; t++) {
		int sum = 0, lo = SHARDS, h[N_REPLICAS] = { 0 };
		for (int i = 0; i < N_REPLICAS; i++) {
			if (!(mask & (1u << i)))
				continue;
			h[i] = held(&reps[i]);
			sum += h[i];
			lo = h[i] < lo ? h[i] : lo;
		}
		if (sum == SHARDS && lo >= min) {
			printf("replicas: shard split %s:", when);
			for (int i = 0; i < N_REPLICAS; i++)
				if (mask & (1u << i))
					printf(" replica-%d=%d", i, h[i]);
			printf(" (of %d, %.1fs)\n", SHARDS, t / 4.0);
			return true;
		}
		usleep(250000);
	}
	return false;
}

static bool
converge(const char *prefix, int n, int timeout_s)
{
	int dups = 0;

	for (int t = 0; t < timeout_s; t++) {
		if (count_one_each(prefix, n, &dups) == n && dups == 0)
			return true;
		sleep(1);
	}
	return false;
}

static off_t
file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : 0;
}

/* The log of a replica from offset on. */
static char *
log_since(const replica *r, off_t off)
{
	FILE *f = fopen(r->log, "r");
	off_t end = file_size(r->log);
	char *buf = calloc(1, (size_t)(end - off) + 1);

	if (f && end > off) {
		fseeko(f, off, SEEK_SET);
		size_t got = fread(buf, 1, (size_t)(end - off), f);
		buf[got] = '\0';
	}
	if (f)
		fclose(f);
	return buf;
}

/* After SIGCONT: every mutating action the replica logs comes after it
 * acquired a shard again (a fresh lease); counts the fenced stops. */
static void
assert_no_stale_action(const replica *r, off_t off, int *fenced)
{
	char *text = log_since(r, off);
	char *acquired = strstr(text, "msg=\"shard acquired\"");
	char *action = strstr(text, "msg=\"action\"");

	*fenced = 0;
	for (char *p = text; (p = strstr(p, "msg=\"fenced\"")) != NULL; p++)
		(*fenced)++;
	ck_assert_msg(action == NULL || (acquired != NULL && acquired < action),
	        "replica acted after SIGCONT before taking a lease again: %.300s",
	        action ? action : "");
	free(text);
}

/* ---- connect ---- */

/* The replica (index) holding the shard of user (from master status). */
static int
holder_of(unsigned mask, const char *user)
{
	uint32_t h = 2166136261u; /* the controller's FNV-1a */
	char series[96];

	for (const unsigned char *p = (const unsigned char *)user; *p; p++)
		h = (h ^ *p) * 16777619u;
	snprintf(series, sizeof(series),
	        "spacekeeper_leader_election_master_status{name=\"shard-%02u\"}", h % SHARDS);
	for (int i = 0; i < N_REPLICAS; i++)
		if ((mask & (1u << i)) && metric(&reps[i], series) == 1)
			return i;
	return -1;
}

static json_t *
connect_via(const replica *r, const char *user, long *status)
{
	char url[256], *text = NULL;
	json_t *v;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/users/%s/sandbox?timeout=20s", r->port,
	        user);
	*status = http("GET", url, &text);
	v = json_loads(text ? text : "", 0, NULL);
	free(text);
	return v;
}

static void
assert_same_connect(unsigned mask, const char *user)
{
	int holder = holder_of(mask, user), other = -1;
	long s1, s2;
	json_t *a, *b;
	const char *fields[] = { "name", "userID", "sandboxID", "state", "envdURL" };

	ck_assert_msg(holder >= 0, "no replica holds the shard of %s", user);
	for (int i = 0; i < N_REPLICAS && other < 0; i++)
		if ((mask & (1u << i)) && i != holder)
			other = i;
	a = connect_via(&reps[holder], user, &s1);
	b = connect_via(&reps[other], user, &s2);
	ck_assert_int_eq(s1, 200);
	ck_assert_int_eq(s2, s1);
	for (size_t k = 0; k < sizeof(fields) / sizeof(fields[0]); k++)
		ck_assert_msg(
		        json_equal(json_object_get(a, fields[k]), json_object_get(b, fields[k])),
		        "%s differs between holder and non-holder", fields[k]);
	ck_assert(json_is_true(json_object_get(b, "ready")));
	ck_assert_double_ge(
	        metric(&reps[other], "spacekeeper_connect_total{path=\"forward\",code=\"200\"}"),
	        1);
	printf("replicas: connect %s via holder replica-%d and replica-%d: %s %s\n", user, holder,
	        other, json_string_value(json_object_get(b, "sandboxID")),
	        json_string_value(json_object_get(b, "state")));
	json_decref(a);
	json_decref(b);
}

/* ---- the scenario ---- */

START_TEST(test_replicas_share_take_over_and_fence)
{
	int dups = 0, fenced = 0;
	off_t off;

	for (int i = 0; i < 3; i++)
		start(i);
	ck_assert_msg(split_settled(0x7, SHARDS / 3 - 1, 30, "at start"), "no even split");
	apply_users("r", 0, 300);
	/* Mid-convergence: kill replica 2 without warning. */
	for (int t = 0; t < 600 && count_one_each("r", 300, &dups) < 100; t++)
		usleep(100000);
	sk_test_stop(reps[2].pid, true);
	reps[2].pid = 0;
	ck_assert_msg(split_settled(0x3, 1, LEASE_S + RESYNC_S + 4, "after SIGKILL of replica-2"),
	        "replica-2's shards not taken over within lease + resync");
	ck_assert_msg(converge("r", 300, 120), "300 spaces did not converge");
	count_one_each("r", 300, &dups);
	ck_assert_int_eq(dups, 0);

	/* SIGSTOP replica 1 while it has work, for longer than the lease. */
	apply_users("r", 300, 360);
	ck_assert_int_eq(kill(reps[1].pid, SIGSTOP), 0);
	sleep(LEASE_S + 2);
	ck_assert_msg(split_settled(0x1, SHARDS, 5, "while replica-1 is stopped"),
	        "replica-0 did not take the stopped replica's shards");
	off = file_size(reps[1].log);
	ck_assert_int_eq(kill(reps[1].pid, SIGCONT), 0);
	ck_assert_msg(split_settled(0x3, SHARDS / 2 - 1, 20, "after SIGCONT of replica-1"),
	        "replica-1 did not take its share back");
	ck_assert_msg(converge("r", 360, 120), "360 spaces did not converge");
	assert_no_stale_action(&reps[1], off, &fenced);
	printf("replicas: replica-1 after SIGCONT: %d fenced stops, 0 actions on a stale lease\n",
	        fenced);

	/* A fourth joins and takes a share. */
	start(3);
	ck_assert_msg(split_settled(0xb, SHARDS / 3 - 1, 20, "after replica-3 joined"),
	        "replica-3 took no share");
	ck_assert_msg(converge("r", 360, 60), "not one each after replica-3 joined");
	count_one_each("r", 360, &dups);
	ck_assert_int_eq(dups, 0);

	/* A connect through a non-holder answers the same as the holder. */
	assert_same_connect(0xb, "r007");
	assert_same_connect(0xb, "r123");
	for (int i = 0; i < N_REPLICAS; i++)
		if (reps[i].pid > 0) {
			ck_assert_int_eq(sk_test_stop(reps[i].pid, false), 0);
			reps[i].pid = 0;
		}
}
END_TEST

Suite *
sk_suite_replicas(void)
{
	Suite *s = suite_create("replicas");
	TCase *tc = tcase_create("replicas");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_unchecked_fixture(tc, NULL, kill_leftovers);
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_replicas_share_take_over_and_fence);
	suite_add_tcase(s, tc);
	return s;
}
