/*
 * End-to-end tests of the spacectl commands that go with the controller:
 * drift, events, wait, plan, and get's DRIFT column and --watch. Status,
 * drift and events are written straight through pkg/store (as the controller
 * would), then the real binary is run and its output and exit code checked.
 */
#include <check.h>
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../testutil.h"
#include "spacectl_testlib.h"

Suite *sk_suite_spacectl_ops(void);
Suite *sk_suite_spacectl_plan(void);

#define DUMMY_KEY "E2B_API_KEY=e2b_0000000000000000000000000000000000000000"

/* ------------------------------------------------------------------ helpers */

static void
apply_us(const char *name, const char *user_id, const char *extra)
{
	char file[160], *path, *out, *err;
	int rc;

	snprintf(file, sizeof(file), "%s.yaml", name);
	path = ctl_write_us(file, name, user_id, extra);
	rc = ctl(&out, &err, "apply", "-f", path, NULL);
	ck_assert_msg(rc == 0, "apply %s: %s", name, err);
	ctl_free(&out, &err);
	free(path);
}

static void
cond_set(sk_condition *c, const char *type, const char *status, const char *reason)
{
	c->type = sk_strdup(type);
	c->status = sk_strdup(status);
	c->reason = sk_strdup(reason);
	c->message = sk_strdup("set by the test");
	c->last_transition_ms = sk_now_ms() - 5000;
	c->observed_generation = 1;
}

/* Writes a status through the store: phase, sandbox, Ready, and one drift
 * item when drift_type is not NULL. */
static void
set_status(sk_store *st, const char *name, sk_phase phase, const char *sandbox, const char *ready,
        const char *drift_type, int64_t drift_age_ms)
{
	sk_userspace_status s;
	sk_userspace *us = NULL, *out = NULL;
	sk_error err;

	memset(&s, 0, sizeof(s));
	ck_assert_msg(sk_store_get(st, name, &us, &err) == 0, "get %s: %s", name, err.message);
	s.phase = phase;
	s.sandbox_id = sk_strdup(sandbox);
	s.observed_generation = us->meta.generation;
	s.conditions = sk_calloc(2, sizeof(*s.conditions));
	cond_set(&s.conditions[s.n_conditions++], SK_COND_READY, ready,
	        strcmp(ready, "True") == 0 ? "SandboxRunning" : "NotReady");
	if (drift_type) {
		cond_set(&s.conditions[s.n_conditions++], SK_COND_DRIFTED, "True", drift_type);
		s.drift = sk_calloc(1, sizeof(*s.drift));
		s.drift[0].type = sk_strdup(drift_type);
		s.drift[0].sandbox_id = sk_strdup(sandbox);
		s.drift[0].since_ms = sk_now_ms() - drift_age_ms;
		s.drift[0].detail = sk_strdup("envd answered 504");
		s.n_drift = 1;
	}
	s.last_reconcile_ms = sk_now_ms();
	ck_assert_msg(sk_store_write_status(st, us, &s, &out, &err) == 0, "update status %s: %s",
	        name, err.message);
	sk_userspace_status_dispose(&s);
	sk_userspace_free(us);
	sk_userspace_free(out);
}

static void
set_status_once(const char *name, sk_phase phase, const char *sandbox, const char *ready,
        const char *drift_type)
{
	sk_store *st = ctl_open_store();

	set_status(st, name, phase, sandbox, ready, drift_type, 3 * 60 * 1000);
	sk_store_close(st);
}

static double
elapsed_s(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static size_t
count_lines_with(const char *text, const char *needle)
{
	size_t n = 0;

	for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

/* ------------------------------------------------------------------ help */

START_TEST(help_of_each_command)
{
	static const char *const cmds[] = { "plan", "drift", "events", "wait" };
	char *out, *err, want[64];

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		int rc = ctl(&out, &err, cmds[i], "--help", NULL);
		ck_assert_msg(rc == 0, "%s --help: rc %d (%s)", cmds[i], rc, err);
		snprintf(want, sizeof(want), "usage: spacectl %s", cmds[i]);
		ASSERT_HAS(out, want);
		ctl_free(&out, &err);
		ck_assert_int_eq(ctl(&out, &err, cmds[i], "--bogus", NULL), 2);
		ASSERT_HAS(err, "unknown flag --bogus");
		ctl_free(&out, &err);
	}
	ck_assert_int_eq(ctl(&out, &err, "--help", NULL), 0);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		ASSERT_HAS(out, cmds[i]);
	ctl_free(&out, &err);
	/* usage errors */
	ck_assert_int_eq(ctl(&out, &err, "wait", "us", "alice", NULL), 2);
	ASSERT_HAS(err, "--for is required");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "wait", "us", "alice", "--for=bogus", NULL), 2);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "wait", "pods", "x", "--for=delete", NULL), 2);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "events", "--limit", "many", NULL), 2);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "drift", "extra", NULL), 2);
	ctl_free(&out, &err);
}
END_TEST

START_TEST(database_down_exits_3)
{
	char *out, *err;

	ck_assert_int_eq(ctl(&out, &err, "drift", "--timeout", "1s", NULL), 3);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "events", "--timeout", "1s", NULL), 3);
	ctl_free(&out, &err);
}
END_TEST

/* ------------------------------------------------------------------ drift */

START_TEST(drift_exit_codes_and_rows)
{
	char *out, *err;
	json_t *v, *items, *d;

	apply_us("alice", "alice", "");
	apply_us("bob", "bob.smith", "");
	ck_assert_int_eq(ctl(&out, &err, "drift", NULL), 0);
	ASSERT_HAS(err, "No drift.");
	ck_assert_str_eq(out, "");
	ctl_free(&out, &err);
	/* status without drift still counts as none */
	set_status_once("bob", SK_PHASE_RUNNING, "ibob1", "True", NULL);
	ck_assert_int_eq(ctl(&out, &err, "drift", NULL), 0);
	ctl_free(&out, &err);

	set_status_once("alice", SK_PHASE_DEGRADED, "ialice1", "False", SK_DRIFT_DATAPLANE);
	ck_assert_int_eq(ctl(&out, &err, "drift", NULL), 1);
	ASSERT_HAS(out, "NAME");
	ASSERT_HAS(out, "USERID");
	ASSERT_HAS(out, "TYPE");
	ASSERT_HAS(out, "DETAIL");
	ASSERT_HAS(out, "alice");
	ASSERT_HAS(out, "DataPlaneUnreachable");
	ASSERT_HAS(out, "ialice1");
	ASSERT_HAS(out, "3m"); /* the age of the drift, since 3 minutes */
	ASSERT_HAS(out, "envd answered 504");
	ASSERT_HASNT(out, "bob");
	ctl_free(&out, &err);

	ck_assert_int_eq(ctl(&out, &err, "drift", "-o", "json", NULL), 1);
	v = json_loads(out, 0, NULL);
	ck_assert_ptr_nonnull(v);
	items = json_object_get(v, "items");
	ck_assert_uint_eq(json_array_size(items), 1);
	ck_assert_str_eq(
	        json_string_value(json_object_get(json_array_get(items, 0), "name")), "alice");
	ck_assert_str_eq(
	        json_string_value(json_object_get(json_array_get(items, 0), "userID")), "alice");
	d = json_array_get(json_object_get(json_array_get(items, 0), "drift"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(d, "type")), "DataPlaneUnreachable");
	ck_assert_str_eq(json_string_value(json_object_get(d, "sandboxID")), "ialice1");
	ck_assert_ptr_nonnull(json_object_get(d, "since"));
	json_decref(v);
	ctl_free(&out, &err);

	/* a selector that leaves alice out: no drift */
	ck_assert_int_eq(ctl(&out, &err, "drift", "-l", "team=none", NULL), 0);
	ASSERT_HAS(err, "No drift.");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "drift", "-o", "json", "-l", "team=none", NULL), 0);
	v = json_loads(out, 0, NULL);
	ck_assert_uint_eq(json_array_size(json_object_get(v, "items")), 0);
	json_decref(v);
	ctl_free(&out, &err);

	/* cleared: exit 0 again */
	set_status_once("alice", SK_PHASE_RUNNING, "ialice1", "True", NULL);
	ck_assert_int_eq(ctl(&out, &err, "drift", NULL), 0);
	ctl_free(&out, &err);
}
END_TEST

/* ------------------------------------------------------------------ events */

START_TEST(events_aggregated_oldest_first)
{
	sk_store *st = ctl_open_store();
	sk_error err_;
	char *out, *err;
	json_t *v, *items;
	sk_userspace *alice;

	apply_us("alice", "alice", "");
	ck_assert_int_eq(ctl(&out, &err, "events", NULL), 0);
	ASSERT_HAS(err, "No events found.");
	ctl_free(&out, &err);
	alice = ctl_stored("alice"); /* events carry the object's uid, as the controller's */
	ck_assert_ptr_nonnull(alice);

	ck_assert_int_eq(sk_store_event(st, "alice", alice->meta.uid, "Normal", "Created",
	                         "created i1", &err_),
	        0);
	usleep(20 * 1000);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(sk_store_event(st, "alice", alice->meta.uid, "Warning",
		                         "DataPlaneUnreachable", "envd answered 504", &err_),
		        0);
	usleep(20 * 1000);
	ck_assert_int_eq(
	        sk_store_event(st, "bob", NULL, "Normal", "Paused", "paused i2", &err_), 0);
	sk_store_close(st);
	sk_userspace_free(alice);

	ck_assert_int_eq(ctl(&out, &err, "events", NULL), 0);
	ASSERT_HAS(out, "FIRST SEEN");
	ASSERT_HAS(out, "LAST SEEN");
	ASSERT_HAS(out, "userspace/alice");
	ASSERT_HAS(out, "userspace/bob");
	ASSERT_HAS(out, "envd answered 504");
	/* oldest first */
	ck_assert_ptr_nonnull(strstr(out, "Created"));
	ck_assert(strstr(out, "Created") < strstr(out, "DataPlaneUnreachable"));
	ck_assert(strstr(out, "DataPlaneUnreachable") < strstr(out, "Paused"));
	ctl_free(&out, &err);

	ck_assert_int_eq(ctl(&out, &err, "events", "alice", "-o", "json", NULL), 0);
	v = json_loads(out, 0, NULL);
	ck_assert_ptr_nonnull(v);
	items = json_object_get(v, "items");
	ck_assert_uint_eq(json_array_size(items), 2);
	ck_assert_str_eq(
	        json_string_value(json_object_get(json_array_get(items, 0), "reason")), "Created");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(items, 1), "reason")),
	        "DataPlaneUnreachable");
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(items, 1), "count")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(items, 0), "count")), 1);
	ck_assert_str_eq(
	        json_string_value(json_object_get(json_array_get(items, 1), "object")), "alice");
	json_decref(v);
	ctl_free(&out, &err);

	/* userspace NAME form, table, count column */
	ck_assert_int_eq(ctl(&out, &err, "events", "userspace", "alice", NULL), 0);
	ASSERT_HASNT(out, "userspace/bob");
	ASSERT_HAS(out, " 3 ");
	ctl_free(&out, &err);

	ck_assert_int_eq(ctl(&out, &err, "events", "--limit", "1", "-o", "json", NULL), 0);
	v = json_loads(out, 0, NULL);
	items = json_object_get(v, "items");
	ck_assert_uint_eq(json_array_size(items), 1);
	ck_assert_str_eq(
	        json_string_value(json_object_get(json_array_get(items, 0), "reason")), "Paused");
	json_decref(v);
	ctl_free(&out, &err);
}
END_TEST

/* ------------------------------------------------------------------ wait */

typedef struct writer {
	int delay_ms;
	const char *name;
} writer;

static void *
write_ready_later(void *arg)
{
	writer *w = arg;
	sk_store *st;

	usleep((useconds_t)w->delay_ms * 1000);
	st = ctl_open_store();
	set_status(st, w->name, SK_PHASE_RUNNING, "i1", "True", NULL, 0);
	sk_store_close(st);
	return NULL;
}

START_TEST(wait_ready_met_when_written)
{
	writer w = { 1500, "alice" };
	struct timespec t0;
	pthread_t th;
	char *out, *err;
	double dt;
	int rc;

	apply_us("alice", "alice", "");
	set_status_once("alice", SK_PHASE_CREATING, NULL, "False", NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(pthread_create(&th, NULL, write_ready_later, &w), 0);
	rc = ctl(&out, &err, "wait", "userspace", "alice", "--for=condition=Ready", "--timeout",
	        "30s", NULL);
	dt = elapsed_s(&t0);
	pthread_join(th, NULL);
	ck_assert_msg(rc == 0, "wait rc %d: %s", rc, err);
	ck_assert_str_eq(out, "userspace/alice condition met\n");
	ck_assert_msg(dt >= 1.3 && dt < 20, "wait returned after %.2fs", dt);
	ctl_free(&out, &err);

	/* already met: at once; other forms of --for */
	ck_assert_int_eq(ctl(&out, &err, "wait", "us/alice", "--for", "condition=ready", NULL), 0);
	ASSERT_HAS(out, "userspace/alice condition met");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "wait", "us", "alice",
	                         "--for=jsonpath={.status.phase}=Running", "--timeout", "2s", NULL),
	        0);
	ctl_free(&out, &err);
	ck_assert_int_eq(
	        ctl(&out, &err, "wait", "us", "alice", "--for=jsonpath='{.status.phase}'=Paused",
	                "--timeout", "1s", NULL),
	        1);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "wait", "us", "alice", "--for=condition=Ready=False",
	                         "--timeout", "1s", NULL),
	        1);
	ctl_free(&out, &err);
}
END_TEST

START_TEST(wait_times_out_and_not_found)
{
	struct timespec t0;
	char *out, *err;
	double dt;
	int rc;

	apply_us("alice", "alice", "");
	apply_us("bob", "bob", "");
	set_status_once("bob", SK_PHASE_RUNNING, "i2", "True", NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = ctl(&out, &err, "wait", "us", "alice", "bob", "--for=condition=Ready", "--timeout",
	        "2s", NULL);
	dt = elapsed_s(&t0);
	ck_assert_int_eq(rc, 1);
	ASSERT_HAS(out, "userspace/bob condition met");
	ASSERT_HAS(err, "error: timed out waiting for the condition on userspaces/alice");
	ASSERT_HASNT(err, "userspaces/bob");
	ck_assert_msg(dt >= 1.8 && dt < 12, "timeout 2s took %.2fs", dt);
	ctl_free(&out, &err);

	/* Ready=False is met for alice (no status: not met, no condition at all) */
	set_status_once("alice", SK_PHASE_CREATING, NULL, "False", NULL);
	ck_assert_int_eq(ctl(&out, &err, "wait", "us", "alice", "--for=condition=Ready=False",
	                         "--timeout", "2s", NULL),
	        0);
	ctl_free(&out, &err);

	/* not found: 1 at once; for delete: met */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(ctl(&out, &err, "wait", "us", "nobody", "--for=condition=Ready",
	                         "--timeout", "30s", NULL),
	        1);
	ck_assert_msg(elapsed_s(&t0) < 10, "not found should fail at once");
	ASSERT_HAS(err, "\"nobody\" not found");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "wait", "us", "nobody", "--for=delete", NULL), 0);
	ASSERT_HAS(out, "userspace/nobody condition met");
	ctl_free(&out, &err);

	/* a selector: no match is an error; a match waits for each */
	ck_assert_int_eq(ctl(&out, &err, "wait", "us", "-l", "team=none", "--for=condition=Ready",
	                         "--timeout", "1s", NULL),
	        1);
	ASSERT_HAS(err, "no matching resources");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "wait", "us", "-l", "!absent", "--for=condition=Ready",
	                         "--timeout", "1s", NULL),
	        1);
	ASSERT_HAS(out, "userspace/bob condition met");
	ctl_free(&out, &err);
}
END_TEST

START_TEST(wait_for_delete)
{
	char *out, *err;
	sk_store *st;
	sk_error e;

	apply_us("alice", "alice", "");
	ck_assert_int_eq(
	        ctl(&out, &err, "wait", "us", "alice", "--for=delete", "--timeout", "1s", NULL), 1);
	ASSERT_HAS(err, "timed out waiting for the condition on userspaces/alice");
	ctl_free(&out, &err);
	st = ctl_open_store();
	ck_assert_int_eq(sk_store_remove(st, "alice", &e), 0);
	sk_store_close(st);
	ck_assert_int_eq(ctl(&out, &err, "wait", "us", "alice", "--for=delete", NULL), 0);
	ctl_free(&out, &err);
}
END_TEST

/* ------------------------------------------------------------------ get: DRIFT, -w */

START_TEST(get_shows_drift_column)
{
	char *out, *err;
	const char *hdr_drift, *hdr_ready, *hdr_age;

	apply_us("alice", "alice", "");
	apply_us("bob", "bob", "");
	set_status_once("alice", SK_PHASE_DEGRADED, "ia", "False", SK_DRIFT_DATAPLANE);
	set_status_once("bob", SK_PHASE_RUNNING, "ib", "True", NULL);
	ck_assert_int_eq(ctl(&out, &err, "get", "us", NULL), 0);
	hdr_ready = strstr(out, "READY");
	hdr_drift = strstr(out, "DRIFT");
	hdr_age = strstr(out, "AGE");
	ck_assert_msg(
	        hdr_ready && hdr_drift && hdr_age && hdr_ready < hdr_drift && hdr_drift < hdr_age,
	        "READY DRIFT AGE in:\n%s", out);
	ASSERT_HAS(out, "DataPlaneUnreachable");
	ctl_free(&out, &err);
}
END_TEST

START_TEST(get_watch_prints_changes)
{
	char log[1200], *text = NULL;
	const char *env[] = { ctl_env_uri, NULL };
	const char *argv[] = { "spacectl", "get", "us", "-w", "--watch-timeout", "4s", "--database",
		ctl_db, NULL };
	struct timespec t0;
	size_t len = 0;
	sk_error e;
	pid_t pid;
	int rc;

	apply_us("alice", "alice", "");
	apply_us("bob", "bob", "");
	snprintf(log, sizeof(log), "%s/watch.log", ctl_dir);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = sk_test_spawn(argv, env, log);
	usleep(1500 * 1000);
	set_status_once("bob", SK_PHASE_RUNNING, "ibob9", "True", NULL);
	rc = sk_test_wait(pid, 30);
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(elapsed_s(&t0) >= 3.5, "watch ended early");
	ck_assert_int_eq(sk_file_read(log, 1 << 20, &text, &len, &e), 0);
	ASSERT_HAS(text, "NAME");
	ASSERT_HAS(text, "ibob9"); /* the new row for the change */
	ck_assert_uint_eq(count_lines_with(text, "\nbob "), 2); /* initial row + change */
	ck_assert_uint_eq(count_lines_with(text, "\nalice "), 1);
	free(text);
}
END_TEST

/* ------------------------------------------------------------------ plan */

static pid_t sim_pid;
static char sim_url[128];
static char cfg_path[1100];

static void
plan_setup(void)
{
	char yaml[1024];

	ctl_setup();
	sim_pid = sk_test_sim_start(NULL, sim_url, sizeof(sim_url));
	snprintf(yaml, sizeof(yaml),
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: ControllerConfig\n"
	        "providers:\n  - name: default\n    type: e2b\n    apiURL: %s\n"
	        "    sandboxURL: %s\n    apiKeyEnv: E2B_API_KEY\n    requestTimeout: 5s\n",
	        sim_url, sim_url);
	snprintf(cfg_path, sizeof(cfg_path), "%s", sk_test_write_file("plan-config.yaml", yaml));
}

static void
plan_teardown(void)
{
	sk_test_stop(sim_pid, false);
}

static size_t
write_cb(char *p, size_t size, size_t n, void *arg)
{
	sk_buf_append(arg, p, size * n);
	return size * n;
}

/* A request to the simulator; returns the JSON answer (caller decrefs). */
static json_t *
sim_call(const char *path, const char *body)
{
	CURL *h = curl_easy_init();
	struct curl_slist *hdr = NULL;
	sk_buf b = SK_BUF_INIT(0);
	char url[256];
	json_t *v;

	snprintf(url, sizeof(url), "%s%s", sim_url, path);
	hdr = curl_slist_append(hdr, "Content-Type: application/json");
	hdr = curl_slist_append(hdr, "X-API-Key: e2b_0000000000000000000000000000000000000000");
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	if (body)
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	ck_assert_int_eq(curl_easy_perform(h), CURLE_OK);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	sk_buf_append(&b, "", 1);
	v = json_loads(b.data, 0, NULL);
	ck_assert_msg(v != NULL, "%s: %s", path, b.data);
	sk_buf_dispose(&b);
	return v;
}

/* How many sandboxes the simulator holds (GET /_sim/sandboxes). */
static size_t
sim_count(void)
{
	json_t *v = sim_call("/_sim/sandboxes", NULL);
	size_t n;

	ck_assert_msg(json_is_array(v), "GET /_sim/sandboxes");
	n = json_array_size(v);
	json_decref(v);
	return n;
}

/* How many of them are running. */
static size_t
sim_running(void)
{
	json_t *v = sim_call("/_sim/sandboxes", NULL);
	size_t n = 0;

	for (size_t i = 0; i < json_array_size(v); i++) {
		const char *st = json_string_value(json_object_get(json_array_get(v, i), "state"));
		n += st && strcmp(st, "running") == 0;
	}
	json_decref(v);
	return n;
}

/* Creates a running sandbox of ours for a user at the simulator; returns its id. */
static char *
sim_create(const char *user_id, const char *userspace)
{
	char body[512];
	json_t *v;
	char *id;

	snprintf(body, sizeof(body),
	        "{\"templateID\":\"base\",\"timeout\":3600,\"metadata\":{\"user_id\":\"%s\","
	        "\"userspace\":\"%s\",\"managed_by\":\"spacekeeper\"}}",
	        user_id, userspace);
	v = sim_call("/sandboxes", body);
	id = sk_strdup(json_string_value(json_object_get(v, "sandboxID")));
	ck_assert_ptr_nonnull(id);
	json_decref(v);
	return id;
}

/* spacectl plan ARGS... --config CFG --database DB, with the dummy key. */
static int
plan_run(char **out, char **err, const char *a1, const char *a2, const char *a3, const char *a4)
{
	const char *env[] = { ctl_env_uri, DUMMY_KEY, NULL };
	const char *argv[16];
	size_t n = 0;

	argv[n++] = "spacectl";
	argv[n++] = "plan";
	argv[n++] = "--config";
	argv[n++] = cfg_path;
	argv[n++] = "--database";
	argv[n++] = ctl_db;
	if (a1)
		argv[n++] = a1;
	if (a2)
		argv[n++] = a2;
	if (a3)
		argv[n++] = a3;
	if (a4)
		argv[n++] = a4;
	argv[n] = NULL;
	return sk_test_run(argv, env, NULL, out, err, 60);
}

START_TEST(plan_shows_create_and_changes_nothing)
{
	sk_userspace *before, *after;
	char *out, *err;
	json_t *v, *it, *a0;
	sk_event_list evs = { NULL, 0 };
	sk_store *st;
	sk_error e;

	apply_us("alice", "alice", "");
	before = ctl_stored("alice");
	ck_assert_int_eq(sim_count(), 0);

	ck_assert_int_eq(plan_run(&out, &err, NULL, NULL, NULL, NULL), 0);
	ASSERT_HAS(out, "userspace/alice");
	ASSERT_HAS(out, "create sandbox (template base");
	ASSERT_HAS(out, "Creating");
	ASSERT_HAS(out, "Plan: 1 of 1"); /* the result, on stdout */
	ASSERT_HASNT(err, "Plan:");
	ctl_free(&out, &err);

	ck_assert_int_eq(plan_run(&out, &err, "alice", "-o", "json", NULL), 0);
	v = json_loads(out, 0, NULL);
	ck_assert_ptr_nonnull(v);
	it = json_array_get(json_object_get(v, "items"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(it, "name")), "alice");
	ck_assert(json_is_true(json_object_get(it, "changes")));
	a0 = json_array_get(json_object_get(it, "actions"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(a0, "type")), "create");
	ck_assert(json_is_true(json_object_get(a0, "mutating")));
	ck_assert_str_eq(json_string_value(json_object_get(it, "nextPhase")), "Creating");
	json_decref(v);
	ctl_free(&out, &err);

	ck_assert_int_eq(plan_run(&out, &err, "--exit-code", NULL, NULL, NULL), 1);
	ctl_free(&out, &err);
	ck_assert_int_eq(plan_run(&out, &err, "nobody", NULL, NULL, NULL), 1);
	ASSERT_HAS(err, "not found");
	ctl_free(&out, &err);

	/* nothing changed: no sandbox, same object, no events */
	ck_assert_int_eq(sim_count(), 0);
	after = ctl_stored("alice");
	ck_assert_int_eq(after->meta.resource_version, before->meta.resource_version);
	ck_assert(sk_userspace_status_equal(&after->status, &before->status));
	st = ctl_open_store();
	ck_assert_int_eq(sk_store_events(st, NULL, NULL, 0, &evs, &e), 0);
	ck_assert_uint_eq(evs.len, 0);
	sk_event_list_dispose(&evs);
	sk_store_close(st);
	sk_userspace_free(before);
	sk_userspace_free(after);
}
END_TEST

START_TEST(plan_shows_duplicate_kill_and_changes_nothing)
{
	char *keep, *dup, *out, *err, *path, want[160];
	sk_userspace *before, *after;

	apply_us("alice", "alice", "");
	keep = sim_create("alice", "alice");
	usleep(20 * 1000);
	dup = sim_create("alice", "alice");
	set_status_once("alice", SK_PHASE_RUNNING, keep, "True", NULL);
	before = ctl_stored("alice");
	ck_assert_int_eq(plan_run(&out, &err, "userspace", "alice", "--exit-code", NULL), 1);
	snprintf(want, sizeof(want), "kill %s (Duplicate)", dup);
	ASSERT_HAS(out, want);
	snprintf(want, sizeof(want), "kill %s", keep);
	ASSERT_HASNT(out, want);
	ctl_free(&out, &err);
	/* -f with mode Paused: the stored binding is kept, the keeper would be paused */
	path = ctl_write_us("alice-paused.yaml", "alice", "alice", "  mode: Paused\n");
	ck_assert_int_eq(plan_run(&out, &err, "-f", path, NULL, NULL), 0);
	snprintf(want, sizeof(want), "pause %s", keep);
	ASSERT_HAS(out, want);
	ctl_free(&out, &err);
	/* both still there and running, the object untouched */
	ck_assert_int_eq(sim_count(), 2);
	ck_assert_int_eq(sim_running(), 2);
	after = ctl_stored("alice");
	ck_assert_int_eq(after->meta.resource_version, before->meta.resource_version);
	ck_assert_int_eq(after->spec.mode, SK_MODE_RUNNING);
	free(path);
	sk_userspace_free(before);
	sk_userspace_free(after);
	free(keep);
	free(dup);
}
END_TEST

START_TEST(plan_from_file_and_exit_code)
{
	char *path, *out, *err;

	/* a new object from a file: planned, not stored */
	path = ctl_write_us("zed.yaml", "zed", "zed", "  template: gpu\n");
	ck_assert_int_eq(plan_run(&out, &err, "-f", path, NULL, NULL), 0);
	ASSERT_HAS(out, "userspace/zed");
	ASSERT_HAS(out, "create sandbox (template gpu");
	ctl_free(&out, &err);
	ck_assert_uint_eq(ctl_count(), 0);
	ck_assert_int_eq(sim_count(), 0);

	/* a Paused object with no sandbox and nothing to do: --exit-code 0 */
	apply_us("pia", "pia", "  mode: Paused\n");
	ck_assert_int_eq(plan_run(&out, &err, "pia", "--exit-code", NULL, NULL), 0);
	ASSERT_HAS(out, "no changes");
	ctl_free(&out, &err);

	/* a broken config is an error (>= 2 with --exit-code) */
	{
		const char *env[] = { ctl_env_uri, NULL };
		const char *argv[] = { "spacectl", "plan", "--database", ctl_db, NULL };
		/* default config, no key in the environment: provider error, exit 1 */
		ck_assert_int_eq(sk_test_run(argv, env, NULL, &out, &err, 60), 1);
		ASSERT_HAS(err, "E2B_API_KEY");
		ctl_free(&out, &err);
	}
	free(path);
}
END_TEST

/* spacectl fork: the new object copies the source's spec but for its user
 * ID and spec.source; the source is not written; the refusals name what is
 * wrong, with exit 1 (not found, taken, a source with a volume) or 2 (usage). */
START_TEST(fork_copies_the_spec_and_refuses_clearly)
{
	char *out, *err;
	char *path = ctl_write_us(
	        "alice.yaml", "alice", "alice", "  template: python\n  env:\n    FOO: bar\n");
	char *vol = ctl_write_us(
	        "vera.yaml", "vera", "vera", "  storage:\n    volume:\n      name: vera-home\n");
	sk_userspace *src, *src_after, *f;

	ck_assert_int_eq(ctl(&out, &err, "apply", "-f", path, "-f", vol, NULL), 0);
	ctl_free(&out, &err);
	/* a source with a volume: its fork would mount the user's own volume */
	ck_assert_int_eq(ctl(&out, &err, "fork", "userspace/vera", "--name", "vera-try", NULL), 1);
	ASSERT_HAS(err, "keeps its files on a volume (spec.storage.volume)");
	ctl_free(&out, &err);
	ck_assert_ptr_null(ctl_stored("vera-try"));
	src = ctl_stored("alice");
	ck_assert_int_eq(ctl(&out, &err, "fork", "--help", NULL), 0);
	ASSERT_HAS(out, "usage: spacectl fork userspace/NAME --name NEW");
	ctl_free(&out, &err);
	ck_assert_int_eq(
	        ctl(&out, &err, "fork", "userspace/alice", "--name", "alice-try", NULL), 0);
	ASSERT_HAS(out, "userspace/alice-try forked from userspace/alice");
	ctl_free(&out, &err);
	f = ctl_stored("alice-try");
	ck_assert_ptr_nonnull(f);
	ck_assert_str_eq(f->spec.user_id, "alice-try");
	ck_assert_str_eq(f->spec.fork_from, "alice");
	ck_assert_str_eq(f->spec.template_id, "python");
	ck_assert_str_eq(sk_kvlist_get(&f->spec.env, "FOO"), "bar");
	ck_assert_ptr_null(f->status.sandbox_id);
	sk_userspace_free(f);
	src_after = ctl_stored("alice");
	ck_assert_int_eq(src_after->meta.resource_version, src->meta.resource_version);
	sk_userspace_free(src_after);
	sk_userspace_free(src);
	/* taken: the name, then the user ID */
	ck_assert_int_eq(ctl(&out, &err, "fork", "alice", "--name", "alice-try", NULL), 1);
	ASSERT_HAS(err, "userspaces \"alice-try\" already exists");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "fork", "us", "alice", "--name", "alice-2", "--user-id",
	                         "alice", NULL),
	        1);
	ASSERT_HAS(err, "alice");
	ASSERT_HAS(err, "--user-id");
	ctl_free(&out, &err);
	ck_assert_ptr_null(ctl_stored("alice-2"));
	/* an unknown source */
	ck_assert_int_eq(ctl(&out, &err, "fork", "userspace/nobody", "--name", "x", NULL), 1);
	ASSERT_HAS(err, "userspaces \"nobody\" not found");
	ctl_free(&out, &err);
	/* usage */
	ck_assert_int_eq(ctl(&out, &err, "fork", "userspace/alice", NULL), 2);
	ASSERT_HAS(err, "--name is required");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "fork", "userspace/alice", "--name", "Bad_Name", NULL), 2);
	ASSERT_HAS(err, "--name: must be a DNS-1123 label");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "fork", "pods/alice", "--name", "x", NULL), 2);
	ASSERT_HAS(err, "only userspaces fork");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl_count(), 3);
	free(path);
	free(vol);
}
END_TEST

Suite *
sk_suite_spacectl_ops(void)
{
	Suite *s = suite_create("spacectl_ops");
	TCase *tc = tcase_create("ops");
	TCase *off = tcase_create("offline");

	tcase_add_checked_fixture(tc, ctl_setup, NULL);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, help_of_each_command);
	tcase_add_test(tc, drift_exit_codes_and_rows);
	tcase_add_test(tc, events_aggregated_oldest_first);
	tcase_add_test(tc, wait_ready_met_when_written);
	tcase_add_test(tc, wait_times_out_and_not_found);
	tcase_add_test(tc, wait_for_delete);
	tcase_add_test(tc, get_shows_drift_column);
	tcase_add_test(tc, get_watch_prints_changes);
	tcase_add_test(tc, fork_copies_the_spec_and_refuses_clearly);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(off, ctl_setup_offline, NULL);
	tcase_set_timeout(off, 60);
	tcase_add_test(off, database_down_exits_3);
	suite_add_tcase(s, off);
	return s;
}

Suite *
sk_suite_spacectl_plan(void)
{
	Suite *s = suite_create("spacectl_plan");
	TCase *tc = tcase_create("plan");

	tcase_add_checked_fixture(tc, plan_setup, plan_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, plan_shows_create_and_changes_nothing);
	tcase_add_test(tc, plan_shows_duplicate_kill_and_changes_nothing);
	tcase_add_test(tc, plan_from_file_and_exit_code);
	suite_add_tcase(s, tc);
	return s;
}
