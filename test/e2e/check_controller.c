/*
 * End-to-end tests of the controller with the real binaries: FerretDB (the
 * runner's), sandboxsim, spacekeeper and spacectl on loopback (the
 * controller's scenarios, plus the daemon's own surface: --once, signals, HTTP).
 */
#include <check.h>
#include <curl/curl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../testutil.h"
#include "objstore/objstore.h"
#include "sandbox/sandbox.h"
#include "store/store.h"

Suite *sk_suite_controller(void);
Suite *sk_suite_controller_archive(void);

#define DUMMY_KEY "E2B_API_KEY=e2b_0000000000000000000000000000000000000000"

/* Per-test world: one database, one simulator, one controller. */
static char db[64];
static char mongo_uri[128]; /* the runner's FerretDB, or a private one (test i) */
static char sim_url[128];
static pid_t sim_pid;
static pid_t keeper_pid;
static int keeper_port;
static int connect_port; /* controller.connectListen */
static char cfg_path[600];
static int keeper_runs;
static char keeper_log[700]; /* the last keeper_start's log */

/* ---- HTTP against the simulator and the controller ---- */

static void
sim_post(const char *path, const char *body)
{
	sk_test_sim_post(sim_url, path, body);
}

/* Every sandbox the simulator holds (any state). */
static json_t *
sim_sandboxes(void)
{
	char url[256];
	json_t *v;

	snprintf(url, sizeof(url), "%s/_sim/sandboxes", sim_url);
	v = sk_test_http_json("GET", url, NULL, NULL);
	ck_assert_msg(json_is_array(v), "GET /_sim/sandboxes");
	return v;
}

/* Creates a sandbox directly at the simulator, tagged as ours; returns its id. */
static char *
sim_create(const char *user_id, const char *userspace)
{
	char url[256], body[512];
	json_t *v;
	char *id;
	long st;

	snprintf(url, sizeof(url), "%s/sandboxes", sim_url);
	snprintf(body, sizeof(body),
	        "{\"templateID\":\"base\",\"timeout\":3600,\"metadata\":{\"user_id\":\"%s\","
	        "\"userspace\":\"%s\",\"managed_by\":\"spacekeeper\"}}",
	        user_id, userspace);
	v = sk_test_http_json("POST", url, body, &st);
	ck_assert_msg(st == 201 || st == 200, "sim create: %ld", st);
	id = sk_strdup(json_string_value(json_object_get(v, "sandboxID")));
	json_decref(v);
	ck_assert_ptr_nonnull(id);
	return id;
}

static const char *
meta(json_t *sb, const char *key)
{
	return json_string_value(json_object_get(json_object_get(sb, "metadata"), key));
}

static const char *
sb_state(json_t *sb)
{
	return json_string_value(json_object_get(sb, "state"));
}

/* Sandboxes of user_id in state (NULL: running or paused). */
static int
count_user(json_t *all, const char *user_id, const char *state)
{
	size_t i;
	json_t *sb;
	int n = 0;

	json_array_foreach(all, i, sb)
	{
		const char *s = sb_state(sb), *u = meta(sb, "user_id");
		if (!u || strcmp(u, user_id) != 0)
			continue;
		if (state ? strcmp(s, state) == 0
		          : (strcmp(s, "running") == 0 || strcmp(s, "paused") == 0))
			n++;
	}
	return n;
}

static const char *
sim_state_of(json_t *all, const char *id)
{
	size_t i;
	json_t *sb;

	json_array_foreach(all, i, sb)
	{
		if (id && strcmp(json_string_value(json_object_get(sb, "sandboxID")), id) == 0)
			return sb_state(sb);
	}
	return NULL;
}

/* ---- spacectl ---- */

static int
spacectl(const char *const *args, char **out)
{
	return sk_test_spacectl(mongo_uri, db, args, out);
}

static void
apply_yaml(const char *name, const char *yaml)
{
	const char *path = sk_test_write_file(name, yaml);
	char p[600];
	const char *args[] = { "apply", "-f", p, NULL };

	snprintf(p, sizeof(p), "%s", path);
	ck_assert_int_eq(spacectl(args, NULL), 0);
}

static void
apply_users(int n, const char *prefix, const char *extra_spec)
{
	sk_buf b = SK_BUF_INIT(16 << 20);

	for (int i = 0; i < n; i++)
		sk_buf_printf(&b,
		        "---\napiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
		        "metadata:\n  name: %s%03d\nspec:\n  userID: %s%03d\n%s",
		        prefix, i, prefix, i, extra_spec ? extra_spec : "");
	apply_yaml("users.yaml", b.data);
	sk_buf_dispose(&b);
}

/* The objects as `spacectl get userspaces -o json` prints them (a List). */
static json_t *
get_items(void)
{
	const char *args[] = { "get", "userspaces", "-o", "json", NULL };
	char *out = NULL;
	json_t *v, *items;

	ck_assert_int_eq(spacectl(args, &out), 0);
	v = json_loads(out ? out : "", 0, NULL);
	free(out);
	ck_assert_ptr_nonnull(v);
	items = json_object_get(v, "items");
	if (!items) /* a single object */
		return json_pack("[o]", v);
	json_incref(items);
	json_decref(v);
	return items;
}

static json_t *
find_item(json_t *items, const char *name)
{
	size_t i;
	json_t *it;

	json_array_foreach(items, i, it)
	{
		json_t *m = json_object_get(it, "metadata");
		if (strcmp(json_string_value(json_object_get(m, "name")), name) == 0)
			return it;
	}
	return NULL;
}

static bool
item_ready(json_t *it)
{
	size_t i;
	json_t *c;

	json_array_foreach(json_object_get(json_object_get(it, "status"), "conditions"), i, c)
	{
		if (strcmp(json_string_value(json_object_get(c, "type")), "Ready") == 0)
			return strcmp(json_string_value(json_object_get(c, "status")), "True") == 0;
	}
	return false;
}

static const char *
item_sandbox(json_t *it)
{
	return json_string_value(json_object_get(json_object_get(it, "status"), "sandboxID"));
}

static const char *
item_phase(json_t *it)
{
	return json_string_value(json_object_get(json_object_get(it, "status"), "phase"));
}

static bool
item_has_drift(json_t *it, const char *type)
{
	size_t i;
	json_t *d;

	json_array_foreach(json_object_get(json_object_get(it, "status"), "drift"), i, d)
	{
		if (strcmp(json_string_value(json_object_get(d, "type")), type) == 0)
			return true;
	}
	return false;
}

/* ---- the controller ---- */

static void
write_config(const char *provider_extra)
{
	char yaml[2048];

	keeper_port = sk_test_free_port();
	connect_port = sk_test_free_port();
	snprintf(yaml, sizeof(yaml),
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: ControllerConfig\n"
	        "providers:\n  - name: default\n    type: e2b\n    apiURL: %s\n"
	        "    sandboxURL: %s\n    apiKeyEnv: E2B_API_KEY\n    requestTimeout: 5s\n"
	        "    sandboxTimeout: 1h\n%s"
	        "controller:\n  workers: 8\n  resyncPeriod: 1s\n  listen: 127.0.0.1:%d\n"
	        "  connectListen: 127.0.0.1:%d\n",
	        sim_url, sim_url, provider_extra ? provider_extra : "", keeper_port, connect_port);
	snprintf(cfg_path, sizeof(cfg_path), "%s", sk_test_write_file("config.yaml", yaml));
}

/* /readyz 200: started (informer synced, first shard round, workers up),
 * as a Kubernetes readiness probe waits for it. HTTP listens before that. */
static void
keeper_wait_ready(const char *log)
{
	char url[128];
	int64_t deadline = sk_monotonic_ms() + 30000;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/readyz", keeper_port);
	while (sk_test_http("GET", url, NULL, NULL) != 200) {
		ck_assert_msg(sk_monotonic_ms() < deadline, "spacekeeper not ready (%s)", log);
		sk_sleep_ms(50);
	}
}

static void
keeper_start(void)
{
	char log[700];
	const char *env[] = { DUMMY_KEY, NULL };
	const char *argv[] = { "spacekeeper", "--config", cfg_path, "--mongodb-uri", mongo_uri,
		"--database", db, "--poll", "200ms", "--log-level", "debug", NULL };

	snprintf(log, sizeof(log), "%s/spacekeeper-%s-%d.log", sk_test_tmpdir(), db, ++keeper_runs);
	snprintf(keeper_log, sizeof(keeper_log), "%s", log);
	keeper_pid = sk_test_spawn(argv, env, log);
	ck_assert_msg(
	        sk_test_wait_port(keeper_port, 20000), "spacekeeper did not listen (%s)", log);
	keeper_wait_ready(log);
}

/* The keeper log's msg="action" lines: at least one with action=WANT (and
 * why=WHY when why is not NULL), and none with an empty field ("why=" at the
 * end of the line or before a blank). */
static void
assert_action_lines(const char *want, const char *why)
{
	char *text = sk_test_slurp(keeper_log), *line, *save = NULL;
	char action[64], reason[64];
	bool seen = false;

	ck_assert_ptr_nonnull(text);
	snprintf(action, sizeof(action), "action=%s ", want);
	snprintf(reason, sizeof(reason), "why=%s", why ? why : "");
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		size_t len = strlen(line);
		if (strstr(line, "msg=\"action\"") == NULL)
			continue;
		ck_assert_msg(
		        len < 4 || strcmp(line + len - 4, "why=") != 0, "empty why: %s", line);
		ck_assert_msg(strstr(line, "= ") == NULL, "an empty field: %s", line);
		if (strstr(line, action) && (why == NULL || strstr(line, reason)))
			seen = true;
	}
	ck_assert_msg(seen, "no action=%s line in %s", want, keeper_log);
	free(text);
}

static void
keeper_stop_checked(void)
{
	int rc = sk_test_stop(keeper_pid, false);

	keeper_pid = 0;
	/* Graceful stop: exit 0, and no ASan report (that would exit non-zero). */
	ck_assert_int_eq(rc, 0);
}

static void
setup(void)
{
	const char *args[] = { "--latency", "2ms", NULL };

	curl_global_init(CURL_GLOBAL_DEFAULT);
	snprintf(db, sizeof(db), "%s", sk_test_unique_db());
	snprintf(mongo_uri, sizeof(mongo_uri), "%s", sk_test_mongodb_uri());
	sim_pid = sk_test_sim_start(args, sim_url, sizeof(sim_url));
	keeper_pid = 0;
	write_config(NULL);
}

static void
teardown(void)
{
	if (keeper_pid > 0)
		sk_test_stop(keeper_pid, true);
	if (sim_pid > 0)
		sk_test_stop(sim_pid, true);
	curl_global_cleanup();
}

/* Polls check() every 250 ms up to timeout_s. */
static bool
eventually(bool (*check)(void *), void *arg, int timeout_s)
{
	for (int i = 0; i < timeout_s * 4; i++) {
		if (check(arg))
			return true;
		usleep(250000);
	}
	return check(arg);
}

/* ---- convergence checks ---- */

typedef struct conv {
	const char *prefix;
	int n;
} conv;

static int
count_prefix(json_t *items, const char *prefix)
{
	size_t i;
	json_t *it;
	int n = 0;

	json_array_foreach(items, i, it)
	{
		const char *name =
		        json_string_value(json_object_get(json_object_get(it, "metadata"), "name"));
		if (name && strncmp(name, prefix, strlen(prefix)) == 0)
			n++;
	}
	return n;
}

/* Every user has exactly one running sandbox, bound, and Ready. */
static bool
converged(void *arg)
{
	conv *c = arg;
	json_t *items = get_items(), *all = sim_sandboxes();
	bool ok = count_prefix(items, c->prefix) == c->n;
	char name[64];

	for (int i = 0; ok && i < c->n; i++) {
		json_t *it;
		snprintf(name, sizeof(name), "%s%03d", c->prefix, i);
		it = find_item(items, name);
		ok = it && item_ready(it) && count_user(all, name, NULL) == 1 &&
		        count_user(all, name, "running") == 1 && item_sandbox(it) &&
		        sim_state_of(all, item_sandbox(it)) &&
		        strcmp(sim_state_of(all, item_sandbox(it)), "running") == 0;
	}
	json_decref(items);
	json_decref(all);
	return ok;
}

static void
assert_one_each(const char *prefix, int n)
{
	json_t *all = sim_sandboxes();
	char name[64];

	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s%03d", prefix, i);
		ck_assert_msg(count_user(all, name, NULL) == 1, "%s has %d sandboxes", name,
		        count_user(all, name, NULL));
	}
	json_decref(all);
}

static int
sim_stat(const char *endpoint)
{
	char url[256];
	json_t *v, *req;
	int n = 0;

	snprintf(url, sizeof(url), "%s/_sim/stats", sim_url);
	v = sk_test_http_json("GET", url, NULL, NULL);
	req = json_object_get(json_object_get(v, "requests"), endpoint);
	if (json_is_integer(req)) {
		n = (int)json_integer_value(req);
	} else if (json_is_object(req)) {
		const char *k;
		json_t *x;
		json_object_foreach(req, k, x)
		{
			if (k[0] == '2') /* successful calls only */
				n += (int)json_integer_value(x);
		}
	}
	json_decref(v);
	return n;
}

/* ---- (a) 50 converge ---- */

START_TEST(test_a_fifty_converge)
{
	conv c = { "a", 50 };

	apply_users(50, "a", NULL);
	keeper_start();
	ck_assert_msg(eventually(converged, &c, 90), "50 UserSpaces did not converge");
	/* Stable: a few more resyncs change nothing. */
	sleep(3);
	ck_assert(converged(&c));
	ck_assert_int_eq(sim_stat("create"), 50);
	keeper_stop_checked();
}
END_TEST

/* ---- (b) three existing sandboxes -> one ---- */

static bool
dup_settled(void *arg)
{
	json_t *items = get_items(), *all = sim_sandboxes();
	json_t *it = find_item(items, "dup");
	bool ok = it && item_ready(it) && count_user(all, "dup", NULL) == 1 &&
	        !item_has_drift(it, "Duplicate");

	(void)arg;
	json_decref(items);
	json_decref(all);
	return ok;
}

START_TEST(test_b_duplicates_deleted)
{
	sk_store_options so = SK_STORE_OPTIONS_INIT;
	sk_store *st = NULL;
	sk_event_list ev = { 0 };
	sk_error err = { 0 };
	char *ids[3];
	bool dup_event = false;
	json_t *items, *all;

	for (int i = 0; i < 3; i++) {
		ids[i] = sim_create("dup", "dup");
		usleep(20000);
	}
	apply_yaml("dup.yaml",
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	        "metadata:\n  name: dup\nspec:\n  userID: dup\n");
	keeper_start();
	ck_assert_msg(eventually(dup_settled, NULL, 60), "duplicates not cleaned");
	items = get_items();
	all = sim_sandboxes();
	/* The keeper is one of the three (no create happened). */
	ck_assert_int_eq(sim_stat("create"), 3);
	ck_assert(strcmp(item_sandbox(find_item(items, "dup")), ids[0]) == 0 ||
	        strcmp(item_sandbox(find_item(items, "dup")), ids[1]) == 0 ||
	        strcmp(item_sandbox(find_item(items, "dup")), ids[2]) == 0);
	json_decref(items);
	json_decref(all);
	/* Duplicate drift was reported (an event) and is cleared from status now. */
	so.uri = mongo_uri;
	so.database = db;
	ck_assert_int_eq(sk_store_open(&st, &so, &err), 0);
	ck_assert_int_eq(sk_store_events(st, "dup", NULL, 0, &ev, &err), 0);
	for (size_t i = 0; i < ev.len; i++)
		if (strstr(ev.items[i].reason, "Duplicate"))
			dup_event = true;
	ck_assert_msg(dup_event, "no Duplicate event among %zu", ev.len);
	assert_action_lines("kill", "Duplicate");
	sk_event_list_dispose(&ev);
	sk_store_close(st);
	for (int i = 0; i < 3; i++)
		free(ids[i]);
	keeper_stop_checked();
}
END_TEST

/* "NAME=Phase": the object's status.phase is Phase. */
static bool
phase_is(void *arg)
{
	char name[64];
	const char *want = strchr(arg, '=') + 1;
	json_t *items = get_items(), *it;
	bool ok;

	snprintf(name, sizeof(name), "%.*s", (int)(want - 1 - (const char *)arg), (char *)arg);
	it = find_item(items, name);
	ok = it && item_phase(it) && strcmp(item_phase(it), want) == 0;
	json_decref(items);
	return ok;
}

/* ---- (c) pause and resume ---- */

/* POST /v1/userspaces/NAME/connect (within timeout_s): 200 and ready;
 * *out (may be NULL) the answer. */
static void
connect_within(const char *name, int timeout_s, json_t **out)
{
	char url[256];
	json_t *v;
	long st;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/userspaces/%s/connect?timeout=%ds",
	        connect_port, name, timeout_s);
	v = sk_test_http_json("POST", url, "", &st);
	ck_assert_msg(st == 200, "connect %s: %ld", name, st);
	ck_assert(json_is_true(json_object_get(v, "ready")));
	if (out)
		*out = v;
	else
		json_decref(v);
}

static void
connect_ok(const char *name, json_t **out)
{
	connect_within(name, 30, out);
}

static const char *c_spec_fmt = "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
                                "metadata:\n  name: pam\nspec:\n  userID: pam\n  mode: %s\n";

typedef struct want_state {
	const char *phase;
	const char *sim_state;
	char bound[64];
} want_state;

static bool
pam_in(void *arg)
{
	want_state *w = arg;
	json_t *items = get_items(), *all = sim_sandboxes();
	json_t *it = find_item(items, "pam");
	const char *sb = it ? item_sandbox(it) : NULL;
	const char *s = sb ? sim_state_of(all, sb) : NULL;
	bool ok = it && sb && s && strcmp(s, w->sim_state) == 0 && item_phase(it) &&
	        strcmp(item_phase(it), w->phase) == 0 && count_user(all, "pam", NULL) == 1;

	if (ok)
		snprintf(w->bound, sizeof(w->bound), "%s", sb);
	json_decref(items);
	json_decref(all);
	return ok;
}

START_TEST(test_c_pause_resume)
{
	char yaml[512], first[64];
	want_state w = { "Running", "running", "" };

	snprintf(yaml, sizeof(yaml), c_spec_fmt, "Running");
	apply_yaml("pam.yaml", yaml);
	keeper_start();
	ck_assert_msg(eventually(pam_in, &w, 30), "not running");
	snprintf(first, sizeof(first), "%s", w.bound);
	snprintf(yaml, sizeof(yaml), c_spec_fmt, "Paused");
	apply_yaml("pam.yaml", yaml);
	w = (want_state){ "Paused", "paused", "" };
	ck_assert_msg(eventually(pam_in, &w, 30), "not paused");
	ck_assert_str_eq(w.bound, first);
	/* Running means available: the paused sandbox is Idle until a connect. */
	snprintf(yaml, sizeof(yaml), c_spec_fmt, "Running");
	apply_yaml("pam.yaml", yaml);
	w = (want_state){ "Idle", "paused", "" };
	ck_assert_msg(eventually(pam_in, &w, 30), "not Idle");
	ck_assert_int_eq(sim_stat("resume") + sim_stat("connect"), 0);
	connect_ok("pam", NULL);
	w = (want_state){ "Running", "running", "" };
	ck_assert_msg(eventually(pam_in, &w, 30), "not resumed");
	/* Resumed, not replaced. */
	ck_assert_str_eq(w.bound, first);
	ck_assert_int_eq(sim_stat("create"), 1);
	/* the log's action lines: no reason, no empty why= at the end */
	assert_action_lines("create", NULL);
	assert_action_lines("pause", NULL);
	keeper_stop_checked();
}
END_TEST

/* ---- (f) SIGKILL while 200 converge ---- */

START_TEST(test_f_sigkill_restart)
{
	conv c = { "f", 200 };

	apply_users(200, "f", NULL);
	keeper_start();
	/* Let it get going, then kill it without warning. */
	for (int i = 0; i < 100 && sim_stat("create") < 40; i++)
		usleep(50000);
	sk_test_stop(keeper_pid, true);
	keeper_pid = 0;
	ck_assert_int_lt(sim_stat("create"), 200);
	keeper_start();
	ck_assert_msg(eventually(converged, &c, 150), "200 did not converge after restart");
	assert_one_each("f", 200);
	keeper_stop_checked();
}
END_TEST

/* ---- (e) the list comes back empty for a while ---- */

START_TEST(test_e_empty_list_no_duplicates)
{
	conv c = { "e", 10 };
	int creates;

	apply_users(10, "e", NULL);
	keeper_start();
	ck_assert(eventually(converged, &c, 60));
	creates = sim_stat("create");
	ck_assert_int_eq(creates, 10);
	sim_post("/_sim/faults", "{\"list_empty_s\": 6}");
	sleep(8); /* several resyncs see an empty list */
	ck_assert_int_eq(sim_stat("create"), creates);
	ck_assert(converged(&c));
	keeper_stop_checked();
}
END_TEST

/* ---- (g) deletion policies ---- */

typedef struct gone {
	const char *name;
} gone;

static bool
object_gone(void *arg)
{
	gone *g = arg;
	json_t *items = get_items();
	bool ok = find_item(items, g->name) == NULL;

	json_decref(items);
	return ok;
}

START_TEST(test_g_deletion_policies)
{
	conv c = { "g", 2 };
	json_t *items, *all;
	char del_sb[64], ret_sb[64];
	gone g0 = { "g000" }, g1 = { "g001" };
	const char *d0[] = { "delete", "userspace", "g000", NULL };
	const char *d1[] = { "delete", "userspace", "g001", NULL };

	apply_yaml("g.yaml",
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	        "metadata:\n  name: g000\nspec:\n  userID: g000\n"
	        "  deletionPolicy: Delete\n---\n"
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	        "metadata:\n  name: g001\nspec:\n  userID: g001\n"
	        "  deletionPolicy: Retain\n");
	keeper_start();
	ck_assert(eventually(converged, &c, 60));
	items = get_items();
	snprintf(del_sb, sizeof(del_sb), "%s", item_sandbox(find_item(items, "g000")));
	snprintf(ret_sb, sizeof(ret_sb), "%s", item_sandbox(find_item(items, "g001")));
	json_decref(items);
	ck_assert_int_eq(spacectl(d0, NULL), 0);
	ck_assert_int_eq(spacectl(d1, NULL), 0);
	ck_assert_msg(eventually(object_gone, &g0, 30), "Delete: object not removed");
	ck_assert_msg(eventually(object_gone, &g1, 30), "Retain: object not removed");
	all = sim_sandboxes();
	ck_assert_int_eq(count_user(all, "g000", NULL), 0);
	ck_assert_ptr_nonnull(sim_state_of(all, ret_sb));
	ck_assert_str_eq(sim_state_of(all, ret_sb), "running");
	json_decref(all);
	keeper_stop_checked();
}
END_TEST

/* ---- (h) orphans are reported and left alone ---- */

static bool
orphan_metric(void *arg)
{
	char url[128], *body = NULL;
	bool ok;

	(void)arg;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", keeper_port);
	sk_test_http("GET", url, NULL, &body);
	ok = body && strstr(body, "spacekeeper_orphan_sandboxes{provider=\"default\"} 1\n");
	free(body);
	return ok;
}

START_TEST(test_h_orphans_left_alone)
{
	char *orphan = sim_create("ghost", "ghost");
	sk_store_options so = SK_STORE_OPTIONS_INIT;
	sk_store *st = NULL;
	sk_event_list ev = { 0 };
	sk_error err = { 0 };
	json_t *all;
	conv c = { "h", 1 };

	apply_users(1, "h", NULL);
	keeper_start();
	ck_assert(eventually(converged, &c, 30));
	ck_assert_msg(eventually(orphan_metric, NULL, 10), "orphan not reported in /metrics");
	sleep(3);
	all = sim_sandboxes();
	ck_assert_str_eq(sim_state_of(all, orphan), "running");
	json_decref(all);
	so.uri = mongo_uri;
	so.database = db;
	ck_assert_int_eq(sk_store_open(&st, &so, &err), 0);
	ck_assert_int_eq(sk_store_events(st, NULL, NULL, 0, &ev, &err), 0);
	{
		bool found = false;
		for (size_t i = 0; i < ev.len; i++)
			if (strcmp(ev.items[i].reason, "Orphan") == 0 &&
			        strstr(ev.items[i].message, orphan))
				found = true;
		ck_assert_msg(found, "no Orphan event for %s", orphan);
	}
	sk_event_list_dispose(&ev);
	sk_store_close(st);
	free(orphan);
	keeper_stop_checked();
}
END_TEST

static bool
sandbox_killed(void *arg)
{
	json_t *all = sim_sandboxes();
	const char *st = sim_state_of(all, arg);
	bool ok = st == NULL || strcmp(st, "killed") == 0;

	json_decref(all);
	return ok;
}

START_TEST(test_h_orphans_deleted_when_configured)
{
	char *orphan = sim_create("ghost2", "ghost2");
	conv c = { "hd", 1 };
	json_t *all;

	write_config("    deleteOrphans: true\n    orphanGracePeriod: 2s\n");
	apply_users(1, "hd", NULL);
	keeper_start();
	ck_assert(eventually(converged, &c, 30));
	ck_assert_msg(eventually(sandbox_killed, orphan, 20), "orphan not deleted");
	/* The user's own sandbox is untouched. */
	all = sim_sandboxes();
	ck_assert_int_eq(count_user(all, "hd000", "running"), 1);
	json_decref(all);
	free(orphan);
	keeper_stop_checked();
}
END_TEST

/* ---- (d) data plane 504: drift, then Replace after unhealthyAfter ---- */

typedef struct d_state {
	char first[64];
	bool saw_drift;
	bool cli_drift; /* `spacectl drift` listed it and exited 1 */
	bool metric_drift; /* /metrics counted it */
} d_state;

/* Whether the controller's /metrics holds the line `series value`. */
static bool
metrics_line(const char *series, const char *value)
{
	char url[96], want[256], *body = NULL;
	bool ok;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", keeper_port);
	snprintf(want, sizeof(want), "\n%s %s\n", series, value);
	ok = sk_test_http("GET", url, NULL, &body) == 200 && body && strstr(body, want);
	free(body);
	return ok;
}

static bool
no_dataplane_drift_metric(void *arg)
{
	(void)arg;
	return metrics_line("spacekeeper_drift_spaces{type=\"DataPlaneUnreachable\"}", "0");
}

static bool
d_replaced(void *arg)
{
	d_state *d = arg;
	json_t *items = get_items(), *all = sim_sandboxes();
	json_t *it = find_item(items, "dpu");
	const char *sb = it ? item_sandbox(it) : NULL;
	bool ok;

	if (it && item_has_drift(it, "DataPlaneUnreachable")) {
		const char *args[] = { "drift", NULL };
		char *out = NULL;
		d->saw_drift = true;
		if (spacectl(args, &out) == 1 && out && strstr(out, "DataPlaneUnreachable") &&
		        strstr(out, "dpu"))
			d->cli_drift = true;
		free(out);
		if (metrics_line("spacekeeper_drift_spaces{type=\"DataPlaneUnreachable\"}", "1"))
			d->metric_drift = true;
	}
	ok = sb && strcmp(sb, d->first) != 0 && item_ready(it) &&
	        count_user(all, "dpu", "running") == 1;
	json_decref(items);
	json_decref(all);
	return ok;
}

START_TEST(test_d_unreachable_replaced)
{
	conv c = { "dpu", 0 };
	d_state d = { "", false, false, false };
	json_t *items, *all;
	char body[256];

	(void)c;
	apply_yaml("dpu.yaml",
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	        "metadata:\n  name: dpu\nspec:\n  userID: dpu\n"
	        "  health:\n    unhealthyAfter: 4s\n    remediation: Replace\n");
	keeper_start();
	for (int i = 0; i < 120 && !d.first[0]; i++) {
		items = get_items();
		if (find_item(items, "dpu") && item_ready(find_item(items, "dpu")))
			snprintf(d.first, sizeof(d.first), "%s",
			        item_sandbox(find_item(items, "dpu")));
		json_decref(items);
		usleep(250000);
	}
	ck_assert_msg(d.first[0], "dpu never became Ready");
	snprintf(body, sizeof(body), "{\"unreachable\": [\"%s\"]}", d.first);
	sim_post("/_sim/faults", body);
	ck_assert_msg(eventually(d_replaced, &d, 60), "not replaced");
	ck_assert_msg(d.saw_drift, "DataPlaneUnreachable never reported");
	ck_assert_msg(d.cli_drift, "spacectl drift did not show DataPlaneUnreachable (exit 1)");
	ck_assert_msg(
	        d.metric_drift, "spacekeeper_drift_spaces never counted DataPlaneUnreachable");
	ck_assert_msg(eventually(no_dataplane_drift_metric, NULL, 5),
	        "spacekeeper_drift_spaces still counts DataPlaneUnreachable after the replace");
	all = sim_sandboxes();
	ck_assert_str_ne(
	        sim_state_of(all, d.first) ? sim_state_of(all, d.first) : "gone", "running");
	json_decref(all);
	keeper_stop_checked();
}
END_TEST

/* ---- (i) FerretDB restarted mid-run ---- */

START_TEST(test_i_ferretdb_restart)
{
	char dir[700];
	int port = sk_test_free_port();
	pid_t fdb;
	conv c1 = { "i", 10 }, c2 = { "k", 10 };

	snprintf(dir, sizeof(dir), "%s/fdb-restart-%s", sk_test_tmpdir(), db);
	fdb = sk_test_ferretdb_start_at(dir, port);
	snprintf(mongo_uri, sizeof(mongo_uri), "mongodb://127.0.0.1:%d", port);
	apply_users(10, "i", NULL);
	keeper_start();
	ck_assert(eventually(converged, &c1, 60));
	sk_test_stop(fdb, false);
	sleep(4); /* polls, status writes and resyncs fail meanwhile */
	ck_assert_int_eq(kill(keeper_pid, 0), 0);
	fdb = sk_test_ferretdb_start_at(dir, port);
	apply_users(10, "k", NULL);
	ck_assert_msg(eventually(converged, &c2, 60), "no convergence after the restart");
	ck_assert(converged(&c1));
	assert_one_each("i", 10);
	assert_one_each("k", 10);
	keeper_stop_checked();
	sk_test_stop(fdb, false);
}
END_TEST

/* ---- (j) a 429 storm ---- */

START_TEST(test_j_429_storm)
{
	conv c = { "j", 20 };
	json_t *items;
	int ready = 0;

	sim_post("/_sim/faults",
	        "{\"errors\": {\"*\": {\"status\": 429, \"rate\": 1.0, "
	        "\"retry_after_s\": 1}}}");
	apply_users(20, "j", NULL);
	keeper_start();
	sleep(4);
	items = get_items();
	for (size_t i = 0; i < json_array_size(items); i++)
		ready += item_ready(json_array_get(items, i));
	json_decref(items);
	ck_assert_int_eq(ready, 0);
	/* The controller is still alive and backing off. */
	ck_assert_int_eq(kill(keeper_pid, 0), 0);
	sim_post("/_sim/faults", "{\"errors\": {\"*\": null}}");
	ck_assert_msg(eventually(converged, &c, 90), "no convergence after the storm");
	assert_one_each("j", 20);
	keeper_stop_checked();
}
END_TEST

/* ---- the lifecycle: sleep when idle, wake on demand ---- */

/* Every sandbox of users PREFIX000..PREFIX(n-1) is in sim state `state`. */
typedef struct sim_states {
	const char *prefix;
	int n;
	const char *state;
} sim_states;

static bool
all_in_state(void *arg)
{
	sim_states *w = arg;
	json_t *all = sim_sandboxes();
	char name[64];
	bool ok = true;

	for (int i = 0; ok && i < w->n; i++) {
		snprintf(name, sizeof(name), "%s%03d", w->prefix, i);
		ok = count_user(all, name, w->state) == 1 && count_user(all, name, NULL) == 1;
	}
	json_decref(all);
	return ok;
}

static bool
all_phase(void *arg)
{
	sim_states *w = arg;
	json_t *items = get_items();
	char name[64];
	bool ok = true;

	for (int i = 0; ok && i < w->n; i++) {
		json_t *it;
		snprintf(name, sizeof(name), "%s%03d", w->prefix, i);
		it = find_item(items, name);
		ok = it && item_phase(it) && strcmp(item_phase(it), w->state) == 0;
	}
	json_decref(items);
	return ok;
}

static int
provider_mutations(void)
{
	return sim_stat("resume") + sim_stat("connect") + sim_stat("timeout") + sim_stat("create");
}

START_TEST(test_idle_sleep_and_wake)
{
	sim_states asleep = { "z", 50, "paused" }, idle = { "z", 50, "Idle" };
	sim_states awake = { "on", 3, "running" };
	json_t *v;
	char name[64];

	apply_users(50, "z", "  lifecycle:\n    idleTimeout: 3s\n");
	apply_users(3, "on", "  lifecycle:\n    idleTimeout: 0s\n");
	keeper_start();
	for (int i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "z%03d", i);
		connect_ok(name, NULL);
	}
	/* Left alone: asleep at the provider within D + one resync (plus slack
	 * for 50 connects), Idle in the status, not drift. */
	ck_assert_msg(eventually(all_in_state, &asleep, 15), "not all asleep");
	ck_assert_msg(eventually(all_phase, &idle, 15), "not all Idle");
	/* The controller never resumes or renews a sleeping sandbox on its own. */
	sim_post("/_sim/stats/reset", "");
	sleep(4); /* three resyncs and more */
	ck_assert_int_eq(provider_mutations(), 0);
	ck_assert(all_in_state(&asleep));
	/* Always-on spaces stay running. */
	ck_assert_msg(eventually(all_in_state, &awake, 30), "idleTimeout 0 not running");
	/* A connect wakes one with one resume. */
	connect_ok("z007", &v);
	ck_assert_str_eq(json_string_value(json_object_get(v, "path")), "wake");
	json_decref(v);
	ck_assert_int_eq(sim_stat("connect") + sim_stat("resume"), 1);
	ck_assert_int_eq(sim_stat("create"), 0);
	/* A second connect right after is answered from memory. */
	connect_ok("z007", &v);
	ck_assert_str_eq(json_string_value(json_object_get(v, "path")), "fast");
	json_decref(v);
	ck_assert_int_eq(sim_stat("connect") + sim_stat("resume"), 1);
	keeper_stop_checked();
}
END_TEST

/* GET path of a sandbox's envd at the simulator: the body (caller frees),
 * *status the answer's status. */
static char *
envd_get(const char *id, const char *path, long *status)
{
	char url[1024], hid[160];
	const char *const hdrs[] = { hid, "E2b-Sandbox-Port: 49983", NULL };
	sk_test_req r = { .extra = hdrs, .timeout_s = 10 };

	snprintf(url, sizeof(url), "%s%s", sim_url, path);
	snprintf(hid, sizeof(hid), "E2b-Sandbox-Id: %s", id);
	*status = sk_test_http_do(url, &r);
	ck_assert_msg(*status != 0, "GET %s of %s: no answer", path, id);
	free(r.headers);
	return r.out;
}

/* GET /envs of a sandbox's envd at the simulator: the value of key, or NULL. */
static char *
sandbox_env(const char *id, const char *key)
{
	long status = 0;
	char *body = envd_get(id, "/envs", &status);
	json_t *v = json_loads(body, 0, NULL);
	char *out = NULL;

	if (json_is_string(json_object_get(v, key)))
		out = sk_strdup(json_string_value(json_object_get(v, key)));
	json_decref(v);
	free(body);
	return out;
}

/* spec.env survives a pause/resume: re-asserted through envd /init (commands
 * run as `bash -l -c` lose create-time envVars after a resume). */
START_TEST(test_env_after_create_and_resume)
{
	json_t *v;
	char *id, *val;

	apply_yaml("envy.yaml",
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	        "metadata:\n  name: envy\nspec:\n  userID: envy\n"
	        "  env:\n    FOO: bar\n  lifecycle:\n    idleTimeout: 3s\n");
	keeper_start();
	connect_ok("envy", &v);
	id = sk_strdup(json_string_value(json_object_get(v, "sandboxID")));
	json_decref(v);
	val = sandbox_env(id, "FOO");
	ck_assert_msg(
	        val && strcmp(val, "bar") == 0, "after create: FOO=%s", val ? val : "(unset)");
	free(val);
	ck_assert_msg(eventually(phase_is, (void *)"envy=Idle", 30), "envy never Idle");
	connect_ok("envy", &v);
	ck_assert_str_eq(json_string_value(json_object_get(v, "path")), "wake");
	ck_assert_str_eq(json_string_value(json_object_get(v, "sandboxID")), id);
	json_decref(v);
	val = sandbox_env(id, "FOO");
	ck_assert_msg(
	        val && strcmp(val, "bar") == 0, "after resume: FOO=%s", val ? val : "(unset)");
	free(val);
	free(id);
	keeper_stop_checked();
}
END_TEST

/* ---- no silent loss of a workspace ---- */

#define MARKER_PATH "/files?path=/home/user/.spacekeeper/workspace.json"

/* "NAME=STATUS": NAME's WorkspaceIntact condition has that status. */
static bool
workspace_is(void *arg)
{
	char name[64];
	const char *want = strchr(arg, '=') + 1;
	json_t *items = get_items(), *it, *c;
	bool ok = false;
	size_t i;

	snprintf(name, sizeof(name), "%.*s", (int)(want - 1 - (const char *)arg), (char *)arg);
	it = find_item(items, name);
	json_array_foreach(json_object_get(json_object_get(it, "status"), "conditions"), i, c)
	{
		if (strcmp(json_string_value(json_object_get(c, "type")), "WorkspaceIntact") == 0)
			ok = strcmp(json_string_value(json_object_get(c, "status")), want) == 0;
	}
	json_decref(items);
	return ok;
}

static bool
has_drift(const char *name, const char *type)
{
	json_t *items = get_items();
	bool ok = item_has_drift(find_item(items, name), type);

	json_decref(items);
	return ok;
}

/* The marker written at create is read back after a resume: a resume that
 * lost the files (the simulator's fault) is WorkspaceLost, a Warning event
 * and workspaceLost in the connect answer until acknowledged; the marker is
 * written again, so the next resume without a loss stays quiet. */
START_TEST(test_workspace_lost_after_resume)
{
	char *id, *body, *out = NULL;
	const char *events[] = { "events", "lossy", NULL };
	char ack[128], when[64];
	const char *annotate[] = { "annotate", "userspace", "lossy", ack, NULL };
	json_t *v;
	long st = 0;

	apply_yaml("lossy.yaml",
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	        "metadata:\n  name: lossy\nspec:\n  userID: lossy\n"
	        "  lifecycle:\n    idleTimeout: 3s\n");
	keeper_start();
	connect_ok("lossy", &v);
	id = sk_strdup(json_string_value(json_object_get(v, "sandboxID")));
	ck_assert_ptr_null(json_object_get(v, "workspaceLost"));
	json_decref(v);
	ck_assert_msg(eventually(workspace_is, (void *)"lossy=True", 30), "no marker written");
	body = envd_get(id, MARKER_PATH, &st);
	ck_assert_int_eq(st, 200);
	ck_assert_msg(strstr(body, "\"space\":\"lossy\"") != NULL, "marker: %s", body);
	free(body);
	/* a resume with the files: intact */
	ck_assert_msg(eventually(phase_is, (void *)"lossy=Idle", 30), "lossy never Idle");
	connect_ok("lossy", &v);
	ck_assert_str_eq(json_string_value(json_object_get(v, "path")), "wake");
	ck_assert_ptr_null(json_object_get(v, "workspaceLost"));
	json_decref(v);
	ck_assert(workspace_is((void *)"lossy=True"));
	/* a resume without them: reported, never silent */
	ck_assert_msg(eventually(phase_is, (void *)"lossy=Idle", 30), "lossy never Idle again");
	sim_post("/_sim/faults", "{\"resume_lose_files\": {\"mode\": \"empty\", \"count\": 1}}");
	connect_ok("lossy", &v);
	ck_assert_str_eq(json_string_value(json_object_get(v, "path")), "wake");
	ck_assert_str_eq(json_string_value(json_object_get(v, "sandboxID")), id);
	ck_assert_msg(json_is_true(json_object_get(v, "workspaceLost")), "no workspaceLost");
	json_decref(v);
	ck_assert(workspace_is((void *)"lossy=False"));
	ck_assert(has_drift("lossy", "WorkspaceLost"));
	ck_assert_int_eq(spacectl(events, &out), 0);
	ck_assert_msg(strstr(out, "WorkspaceLost") && strstr(out, "resumed without its files"),
	        "events: %s", out);
	free(out);
	/* the marker is back, and the flag stays on every answer */
	body = envd_get(id, MARKER_PATH, &st);
	ck_assert_int_eq(st, 200);
	free(body);
	connect_ok("lossy", &v);
	ck_assert(json_is_true(json_object_get(v, "workspaceLost")));
	json_decref(v);
	/* until someone acknowledges it */
	sk_time_format(sk_now_ms(), when, sizeof(when));
	snprintf(ack, sizeof(ack), "spacekeeper.dev/workspaceLossAcknowledged=%s", when);
	ck_assert_int_eq(spacectl(annotate, NULL), 0);
	ck_assert_msg(eventually(workspace_is, (void *)"lossy=True", 30), "not acknowledged");
	ck_assert(!has_drift("lossy", "WorkspaceLost"));
	connect_ok("lossy", &v);
	ck_assert_ptr_null(json_object_get(v, "workspaceLost"));
	json_decref(v);
	free(id);
	keeper_stop_checked();
}
END_TEST

/* "ID": the simulator no longer holds that sandbox. */
static bool
sim_gone(void *id)
{
	json_t *all = sim_sandboxes();
	bool absent = sim_state_of(all, id) == NULL;

	json_decref(all);
	return absent;
}

/* A sandbox the provider deleted while asleep (sandboxsim --paused-retention,
 * as E2B deletes paused sandboxes after 30 days) is reported lost, never
 * silently replaced: the next connect gets a new sandbox and workspaceLost. */
START_TEST(test_workspace_gone_while_asleep)
{
	const char *args[] = { "--latency", "2ms", "--paused-retention", "6s", NULL };
	char *id;
	json_t *v;

	sk_test_stop(sim_pid, true);
	sim_pid = sk_test_sim_start(args, sim_url, sizeof(sim_url));
	write_config(NULL);
	apply_yaml("gone.yaml",
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	        "metadata:\n  name: gone\nspec:\n  userID: gone\n"
	        "  lifecycle:\n    idleTimeout: 3s\n");
	keeper_start();
	connect_ok("gone", &v);
	id = sk_strdup(json_string_value(json_object_get(v, "sandboxID")));
	json_decref(v);
	ck_assert_msg(eventually(phase_is, (void *)"gone=Idle", 30), "gone never Idle");
	ck_assert(workspace_is((void *)"gone=True"));
	ck_assert_msg(eventually(sim_gone, id, 30), "the simulator kept %s", id);
	connect_ok("gone", &v);
	ck_assert_str_ne(json_string_value(json_object_get(v, "sandboxID")), id);
	ck_assert_msg(json_is_true(json_object_get(v, "workspaceLost")), "no workspaceLost");
	json_decref(v);
	ck_assert(workspace_is((void *)"gone=False"));
	ck_assert(has_drift("gone", "WorkspaceLost"));
	free(id);
	keeper_stop_checked();
}
END_TEST

/* The status page's text at path (200 expected; caller frees). */
static char *
page_text(const char *path)
{
	char url[256], *body = NULL;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", keeper_port, path);
	ck_assert_int_eq(sk_test_http("GET", url, NULL, &body), 200);
	return body;
}

/* The index page warns about NAME (a row of its Retention table). */
static bool
page_warns(void *name)
{
	char *body = page_text("/"), row[160];
	bool ok;

	snprintf(row, sizeof(row), "<a href=\"/spaces/%s\">%s</a></td><td>default</td>",
	        (char *)name, (char *)name);
	ok = strstr(body, "<h2>Retention</h2>") != NULL && strstr(body, row) != NULL;
	free(body);
	return ok;
}

static bool
page_quiet(void *name)
{
	return !page_warns(name);
}

/* spacectl get userspaces --config CONFIG [-o json]: exit 0; *err gets stderr
 * (caller frees), stdout is checked to be the listing alone. */
static void
get_warnings(const char *config, bool json, char **err)
{
	const char *argv[] = { "spacectl", "--mongodb-uri", mongo_uri, "--database", db, "get",
		"userspaces", "--config", config, json ? "-o" : NULL, "json", NULL };
	char *out = NULL;
	json_t *v;

	ck_assert_int_eq(sk_test_run(argv, NULL, NULL, &out, err, 120), 0);
	ck_assert_msg(strstr(out, "Warning") == NULL, "a warning on stdout: %s", out);
	if (json) {
		ck_assert_ptr_nonnull(v = json_loads(out, 0, NULL));
		json_decref(v);
	} else {
		ck_assert_ptr_nonnull(strstr(out, "sleepy"));
	}
	free(out);
}

/* No archive, and the provider's pausedRetention known (the simulator's
 * --paused-retention, the same in the config): a space asleep near it is
 * warned about on the status page (index and its own page), an awake one
 * is not, and the warning goes when the space wakes; spacectl get prints
 * the same as a Warning line on stderr, none with an archive configured. */
START_TEST(test_retention_warning_without_archive)
{
	const char *args[] = { "--latency", "2ms", "--paused-retention", "40s", NULL };
	const char *bad_config[] = { "get", "userspaces", "--config", "/nonexistent/sk.yaml",
		NULL };
	char *body, *errs = NULL, keys[600], yaml[2600];

	sk_test_stop(sim_pid, true);
	sim_pid = sk_test_sim_start(args, sim_url, sizeof(sim_url));
	write_config("    pausedRetention: 40s\n");
	apply_yaml("sleepy.yaml",
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	        "metadata:\n  name: sleepy\nspec:\n  userID: sleepy\n"
	        "  lifecycle:\n    idleTimeout: 3s\n---\n"
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	        "metadata:\n  name: awake\nspec:\n  userID: awake\n"
	        "  lifecycle:\n    idleTimeout: 0s\n");
	keeper_start();
	connect_ok("sleepy", NULL);
	connect_ok("awake", NULL);
	ck_assert(page_quiet((void *)"sleepy")); /* awake: nothing to say */
	ck_assert_msg(eventually(phase_is, (void *)"sleepy=Idle", 30), "sleepy never Idle");
	ck_assert_msg(eventually(page_warns, (void *)"sleepy", 10), "no warning on the index");
	body = page_text("/");
	ck_assert_msg(strstr(body, "/spaces/awake\">awake</a></td><td>default") == NULL,
	        "an awake space warned about");
	ck_assert_ptr_nonnull(strstr(body, "provider default deletes a sandbox paused 40s"));
	free(body);
	body = page_text("/spaces/sleepy");
	ck_assert_msg(strstr(body, "Warning: userspace sleepy has slept") != NULL, "%s", body);
	ck_assert_ptr_nonnull(strstr(body, "no archive is configured"));
	free(body);
	body = page_text("/spaces/awake");
	ck_assert(strstr(body, "Warning: userspace") == NULL);
	free(body);
	/* spacectl get: a Warning line on stderr, as kubectl prints them */
	get_warnings(cfg_path, false, &errs);
	ck_assert_msg(strstr(errs, "Warning: userspace sleepy has slept") != NULL &&
	                strstr(errs, "no archive is configured") != NULL,
	        "%s", errs);
	ck_assert(strstr(errs, "userspace awake") == NULL);
	free(errs);
	get_warnings(cfg_path, true, &errs);
	ck_assert_ptr_nonnull(strstr(errs, "Warning: userspace sleepy"));
	free(errs);
	/* with an archive configured the space is archived in time: no warning */
	snprintf(keys, sizeof(keys), "%s", sk_test_write_file("ak", "access\n"));
	snprintf(yaml, sizeof(yaml),
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: ControllerConfig\n"
	        "providers:\n  - name: default\n    type: e2b\n    apiURL: %s\n"
	        "    apiKeyEnv: E2B_API_KEY\n    pausedRetention: 40s\n"
	        "archive:\n  endpoint: http://127.0.0.1:9\n  bucket: spaces\n"
	        "  accessKeyFile: %s\n  secretKeyFile: %s\n",
	        sim_url, keys, keys);
	snprintf(keys, sizeof(keys), "%s", sk_test_write_file("with-archive.yaml", yaml));
	get_warnings(keys, false, &errs);
	ck_assert_msg(strstr(errs, "Warning: userspace") == NULL, "%s", errs);
	free(errs);
	ck_assert_int_eq(spacectl(bad_config, NULL), 1); /* named, so read: an error */
	/* awake again: the warnings go */
	connect_ok("sleepy", NULL);
	ck_assert_msg(eventually(page_quiet, (void *)"sleepy", 10), "the warning stayed");
	get_warnings(cfg_path, false, &errs);
	ck_assert_msg(strstr(errs, "Warning: userspace") == NULL, "%s", errs);
	free(errs);
	keeper_stop_checked();
}
END_TEST

/* Waits until NAME is Degraded with DataPlaneUnreachable drift. */
static bool
degraded(void *arg)
{
	json_t *items = get_items(), *it = find_item(items, arg);
	bool ok = it && item_has_drift(it, "DataPlaneUnreachable") && item_phase(it) &&
	        strcmp(item_phase(it), "Degraded") == 0;

	json_decref(items);
	return ok;
}

static char *
make_unreachable(const char *name)
{
	json_t *v;
	char body[256];
	char *id;

	connect_ok(name, &v);
	id = sk_strdup(json_string_value(json_object_get(v, "sandboxID")));
	json_decref(v);
	snprintf(body, sizeof(body), "{\"unreachable\": [\"%s\"]}", id);
	sim_post("/_sim/faults", body);
	ck_assert_msg(eventually(degraded, (void *)name, 30), "%s never Degraded", name);
	return id;
}

START_TEST(test_connect_unreachable_report)
{
	char url[256];
	json_t *v;
	long st;
	int64_t t0;
	char *id;

	apply_yaml("rep.yaml",
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	        "metadata:\n  name: rep\nspec:\n  userID: rep\n"
	        "  health:\n    remediation: Report\n");
	keeper_start();
	id = make_unreachable("rep");
	/* Known unreachable: 503 at once, not after the caller's 20 s. */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/userspaces/rep/connect?timeout=20s",
	        connect_port);
	t0 = sk_monotonic_ms();
	v = sk_test_http_json("POST", url, "", &st);
	ck_assert_int_eq(st, 503);
	ck_assert_int_lt(sk_monotonic_ms() - t0, 2000);
	ck_assert_str_eq(json_string_value(json_object_get(v, "reason")), "DataPlaneUnreachable");
	ck_assert(json_is_integer(json_object_get(v, "driftAgeSeconds")));
	json_decref(v);
	/* Bad timeouts are the caller's mistake, not the default. */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/userspaces/rep/connect?timeout=abc",
	        connect_port);
	ck_assert_int_eq(sk_test_http("POST", url, "", NULL), 400);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/users/rep/sandbox?timeout=-1s",
	        connect_port);
	ck_assert_int_eq(sk_test_http("GET", url, NULL, NULL), 400);
	/* HEAD is a read: it never creates or resumes. */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/users/rep/sandbox", connect_port);
	ck_assert_int_eq(sk_test_http("HEAD", url, NULL, NULL), 405);
	/* The heartbeat: 204, no body. */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/users/rep/activity", connect_port);
	ck_assert_int_eq(sk_test_http("POST", url, "", NULL), 204);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/users/nobody/activity", connect_port);
	ck_assert_int_eq(sk_test_http("POST", url, "", NULL), 404);
	free(id);
	keeper_stop_checked();
}
END_TEST

START_TEST(test_connect_unreachable_replace)
{
	json_t *v;
	char *old;

	apply_yaml("rpl.yaml",
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	        "metadata:\n  name: rpl\nspec:\n  userID: rpl\n"
	        "  health:\n    unhealthyAfter: 10m\n    remediation: Replace\n");
	keeper_start();
	old = make_unreachable("rpl");
	/* A connect replaces at once (not after unhealthyAfter) and says so. */
	connect_ok("rpl", &v);
	ck_assert_str_ne(json_string_value(json_object_get(v, "sandboxID")), old);
	ck_assert_str_eq(json_string_value(json_object_get(v, "previousSandboxID")), old);
	ck_assert(json_is_string(json_object_get(v, "replacedAt")));
	json_decref(v);
	free(old);
	keeper_stop_checked();
}
END_TEST

/* ---- the daemon: HTTP, --once, signals ---- */

/* A connect that arrives while the controller is still starting (its first
 * provider list takes 2 s here, before the first shard round and the
 * workers) is answered within its timeout, not with a 503 for a shard not
 * taken yet. (connect.c also waits out the informer's first sync, a window
 * too short to hit on purpose here.) */
START_TEST(test_connect_during_start_waits)
{
	const char *env[] = { DUMMY_KEY, NULL };
	const char *argv[] = { "spacekeeper", "--config", cfg_path, "--mongodb-uri", mongo_uri,
		"--database", db, "--poll", "200ms", NULL };
	char url[256], log[700], ready[128];
	json_t *v;
	long st;

	apply_yaml("early.yaml",
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	        "metadata:\n  name: early\nspec:\n  userID: early-user\n");
	sim_post("/_sim/faults", "{\"latency\": {\"list\": {\"fixed_ms\": 2000}}}");
	snprintf(log, sizeof(log), "%s/spacekeeper-%s-%d.log", sk_test_tmpdir(), db, ++keeper_runs);
	keeper_pid = sk_test_spawn(argv, env, log);
	ck_assert_msg(
	        sk_test_wait_port(keeper_port, 20000), "spacekeeper did not listen (%s)", log);
	snprintf(ready, sizeof(ready), "http://127.0.0.1:%d/readyz", keeper_port);
	ck_assert_int_eq(sk_test_http("GET", ready, NULL, NULL), 503); /* still listing */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/users/early-user/sandbox?timeout=30s",
	        connect_port);
	v = sk_test_http_json("GET", url, NULL, &st);
	ck_assert_msg(st == 200, "connect during start: %ld (%s)", st, log);
	ck_assert(json_is_true(json_object_get(v, "ready")));
	json_decref(v);
	sim_post("/_sim/faults", "{\"latency\": {\"list\": null}}");
	keeper_stop_checked();
}
END_TEST

START_TEST(test_http_endpoints_and_connect)
{
	char url[256], *body = NULL;
	json_t *v;
	long st;

	apply_yaml("web.yaml",
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	        "metadata:\n  name: web\nspec:\n  userID: web-user\n---\n"
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	        "metadata:\n  name: sleepy\nspec:\n  userID: sleepy\n  mode: Paused\n");
	keeper_start();
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/healthz", keeper_port);
	ck_assert_int_eq(sk_test_http("GET", url, NULL, NULL), 200);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/readyz", keeper_port);
	ck_assert_int_eq(sk_test_http("GET", url, NULL, NULL), 200);
	/* Connect answers once the sandbox is Ready, whatever state it was in. */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/userspaces/web/connect?timeout=30s",
	        connect_port);
	v = sk_test_http_json("POST", url, "", &st);
	ck_assert_int_eq(st, 200);
	ck_assert_int_eq(json_is_true(json_object_get(v, "ready")), 1);
	ck_assert_str_eq(json_string_value(json_object_get(v, "state")), "Running");
	{
		json_t *all = sim_sandboxes();
		const char *id = json_string_value(json_object_get(v, "sandboxID"));
		ck_assert_ptr_nonnull(id);
		ck_assert_str_eq(sim_state_of(all, id), "running");
		/* Paused out of band while its user is active: connects get it
		 * running again, the same sandbox (the controller wakes it once it
		 * sees it Idle, or its own probe resumed it through autoResume). */
		snprintf(url, sizeof(url), "/_sim/sandboxes/%s/pause", id);
		sim_post(url, "");
		json_decref(all);
		snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/users/web-user/sandbox",
		        connect_port);
		for (int i = 0; i < 120; i++) {
			bool running;
			all = sk_test_http_json("GET", url, NULL, &st);
			ck_assert_int_eq(st, 200);
			ck_assert_str_eq(json_string_value(json_object_get(all, "sandboxID")), id);
			json_decref(all);
			all = sim_sandboxes();
			running = strcmp(sim_state_of(all, id), "running") == 0;
			json_decref(all);
			if (running)
				break;
			usleep(250000);
		}
		all = sim_sandboxes();
		ck_assert_str_eq(sim_state_of(all, id), "running");
		json_decref(all);
	}
	json_decref(v);
	snprintf(
	        url, sizeof(url), "http://127.0.0.1:%d/v1/userspaces/sleepy/connect", connect_port);
	v = sk_test_http_json("POST", url, "", &st);
	ck_assert_int_eq(st, 503);
	ck_assert_str_eq(json_string_value(json_object_get(v, "reason")), "ModePaused");
	json_decref(v);
	snprintf(
	        url, sizeof(url), "http://127.0.0.1:%d/v1/userspaces/nobody/connect", connect_port);
	ck_assert_int_eq(sk_test_http("POST", url, "", NULL), 404);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", keeper_port);
	ck_assert_int_eq(sk_test_http("GET", url, NULL, &body), 200);
	ck_assert_ptr_nonnull(strstr(body,
	        "controller_runtime_reconcile_total{controller="
	        "\"userspace\",result=\"requeue_after\"}"));
	ck_assert_ptr_nonnull(
	        strstr(body, "workqueue_depth{name=\"userspace\",controller=\"userspace\"}"));
	/* the provider requests of the reconciles above, and this connect's latency */
	ck_assert_ptr_nonnull(strstr(body,
	        "spacekeeper_provider_requests_total{provider=\"default\",endpoint=\"POST "
	        "/sandboxes\",code=\"201\"}"));
	ck_assert_ptr_nonnull(strstr(body,
	        "spacekeeper_connect_duration_seconds_bucket{path=\"none\",le=\"+Inf\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(body,
	        "\n# TYPE controller_runtime_reconcile_time_seconds "
	        "histogram\n"));
	ck_assert_ptr_null(strstr(body, "controller_runtime_reconcile_time_seconds_sum counter"));
	free(body);
	keeper_stop_checked();
}
END_TEST

/* The status page: the spaces of a running controller, one space's page,
 * every value escaped (an annotation holding a script stays text). */
START_TEST(test_status_page)
{
	char url[256], *body = NULL;
	conv c = { "pg", 1 };

	apply_yaml("page.yaml",
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	        "metadata:\n  name: pg000\n  labels:\n    team: a-b\n  annotations:\n"
	        "    note: \"<script>alert('x')</script> & more\"\n"
	        "spec:\n  userID: pg000\n");
	keeper_start();
	ck_assert(eventually(converged, &c, 60));
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", keeper_port);
	ck_assert_int_eq(sk_test_http("GET", url, NULL, &body), 200);
	ck_assert_ptr_nonnull(strstr(body, "<h2>Spaces by phase</h2>"));
	{
		/* the reconciles that converged pg000 are counted in the reconcile
		 * chart; no connect was made, so the connect chart counts none */
		const char *rc = strstr(body, "<h2>Reconcile time, last hour</h2><svg");
		const char *cc = strstr(body, "<h2>Connect latency, last hour</h2><svg");
		ck_assert(rc && cc && rc < cc);
		ck_assert_ptr_eq(strstr(rc, "(0 in the hour)"), strstr(cc, "(0 in the hour)"));
		ck_assert_ptr_nonnull(strstr(cc, "(0 in the hour)"));
	}
	ck_assert_ptr_nonnull(strstr(body, "<a href=\"/spaces/pg000\">pg000</a>"));
	ck_assert_ptr_nonnull(strstr(body, "<td>pg000</td><td>Running</td><td class=\"ok\">True"));
	ck_assert_ptr_null(strstr(body, "<script"));
	free(body);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/spaces/pg000", keeper_port);
	ck_assert_int_eq(sk_test_http("GET", url, NULL, &body), 200);
	ck_assert_ptr_nonnull(
	        strstr(body, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; more"));
	ck_assert_ptr_null(strstr(body, "<script"));
	ck_assert_ptr_nonnull(strstr(body, "<h2>Conditions</h2>"));
	ck_assert_ptr_nonnull(strstr(body, "<td>Ready</td><td>True</td>"));
	ck_assert_ptr_nonnull(strstr(body, "<h2>Recent events</h2>"));
	ck_assert_ptr_nonnull(
	        strstr(body, "<h2>At the provider</h2><p>The last list of default ("));
	free(body);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/spaces/nobody", keeper_port);
	ck_assert_int_eq(sk_test_http("GET", url, NULL, &body), 404);
	ck_assert_ptr_nonnull(strstr(body, "No such UserSpace."));
	free(body);
	keeper_stop_checked();
}
END_TEST

START_TEST(test_once_pass)
{
	const char *env[] = { DUMMY_KEY, NULL };
	const char *argv[] = { "spacekeeper", "--config", cfg_path, "--mongodb-uri", mongo_uri,
		"--database", db, "--once", "--log-format", "json", NULL };
	char *out = NULL, *err = NULL;
	conv c = { "o", 5 };
	int rc;

	apply_users(5, "o", NULL);
	rc = sk_test_run(argv, env, NULL, &out, &err, 120);
	ck_assert_msg(rc == 0, "--once exit %d: %s", rc, err);
	ck_assert(converged(&c));
	/* JSON logs: one object per line. */
	{
		char *line = strtok(err, "\n");
		ck_assert_ptr_nonnull(line);
		for (; line; line = strtok(NULL, "\n")) {
			json_t *v = json_loads(line, 0, NULL);
			ck_assert_msg(json_is_object(v), "not JSON: %s", line);
			ck_assert_ptr_nonnull(json_object_get(v, "msg"));
			json_decref(v);
		}
	}
	free(out);
	free(err);
	/* A provider that refuses everything: --once fails (non-zero). */
	sim_post("/_sim/faults", "{\"errors\": {\"*\": {\"status\": 400}}}");
	apply_users(1, "x", NULL);
	{
		const char *argv2[] = { "spacekeeper", "--config", cfg_path, "--mongodb-uri",
			mongo_uri, "--database", db, "--once", "--once-timeout", "60s", NULL };
		rc = sk_test_run(argv2, env, NULL, &out, &err, 120);
		ck_assert_int_ne(rc, 0);
		free(out);
		free(err);
	}
}
END_TEST

START_TEST(test_sigterm_graceful)
{
	conv c = { "s", 30 };
	int64_t t0;
	int rc;

	apply_users(30, "s", NULL);
	keeper_start();
	usleep(800000); /* mid-flight */
	t0 = sk_monotonic_ms();
	rc = sk_test_stop(keeper_pid, false);
	keeper_pid = 0;
	ck_assert_int_eq(rc, 0);
	ck_assert_int_lt(sk_monotonic_ms() - t0, 10000);
	/* A restart finishes the job without duplicates. */
	keeper_start();
	ck_assert(eventually(converged, &c, 60));
	assert_one_each("s", 30);
	keeper_stop_checked();
}
END_TEST

START_TEST(test_usage_and_bad_config)
{
	const char *h[] = { "spacekeeper", "--help", NULL };
	const char *v[] = { "spacekeeper", "--version", NULL };
	const char *bad[] = { "spacekeeper", "--workers", "zero", NULL };
	const char *missing[] = { "spacekeeper", "--config", "/nonexistent.yaml", NULL };
	char *out = NULL, *err = NULL;

	ck_assert_int_eq(sk_test_run(h, NULL, NULL, &out, &err, 10), 0);
	ck_assert_ptr_nonnull(strstr(out, "usage: spacekeeper"));
	free(out);
	free(err);
	ck_assert_int_eq(sk_test_run(v, NULL, NULL, &out, &err, 10), 0);
	ck_assert_ptr_nonnull(strstr(out, "spacekeeper "));
	free(out);
	free(err);
	ck_assert_int_eq(sk_test_run(bad, NULL, NULL, &out, &err, 10), 64);
	free(out);
	free(err);
	ck_assert_int_ne(sk_test_run(missing, NULL, NULL, &out, &err, 10), 0);
	free(out);
	free(err);
}
END_TEST

/* ---- the archive: a space outlives its sandbox ---- */

#define S3_ACCESS "e2e-archive"
#define S3_SECRET "e2e-archive-secret-0123456789"
#define WS "/home/user/ws"
#define BIG_BYTES (50L << 20)

static pid_t gw_pid;
static int gw_port;
static char gw_url[64], gw_dir[600];

/* A versitygw for the archive and the config's archive section (after
 * provider_extra, itself inside the provider entry). */
static void
archive_start(const char *provider_extra)
{
	char block[2048];
	const char *ak = sk_test_write_file("s3-access", S3_ACCESS "\n");
	char akp[600];

	snprintf(akp, sizeof(akp), "%s", ak);
	gw_port = sk_test_free_port();
	snprintf(gw_dir, sizeof(gw_dir), "%s/e2e-s3-%d", sk_test_tmpdir(), gw_port);
	gw_pid = sk_test_s3_start(
	        gw_dir, gw_port, "spaces", S3_ACCESS, S3_SECRET, gw_url, sizeof(gw_url));
	snprintf(block, sizeof(block),
	        "%sarchive:\n  endpoint: %s\n  bucket: spaces\n  prefix: spaces\n"
	        "  accessKeyFile: %s\n  secretKeyFile: %s\n",
	        provider_extra ? provider_extra : "", gw_url, akp,
	        sk_test_write_file("s3-secret", S3_SECRET "\n"));
	write_config(block);
}

static void
archive_gw_restart(void)
{
	gw_pid = sk_test_s3_start(
	        gw_dir, gw_port, "spaces", S3_ACCESS, S3_SECRET, gw_url, sizeof(gw_url));
}

static sk_provider *
sim_provider(void)
{
	sk_provider_config c = { 0 };
	sk_provider *p = NULL;
	sk_error err;

	setenv("SK_E2E_ARCHIVE_KEY", strchr(DUMMY_KEY, '=') + 1, 1);
	c.name = "default";
	c.type = SK_PROVIDER_E2B;
	c.api_url = sim_url;
	c.sandbox_url = sim_url;
	c.domain = "e2b.app";
	c.api_key_env = "SK_E2E_ARCHIVE_KEY";
	c.max_in_flight = 4;
	c.qps = 100;
	c.burst = 100;
	c.request_timeout_ms = 30000;
	c.sandbox_timeout_ms = 3600000;
	ck_assert_msg(sk_provider_new(&c, &p, &err) == 0, "provider: %s", err.message);
	return p;
}

static void
sim_fill(const char *id, const char *path, long bytes, int seed)
{
	char body[300], path_url[160];

	snprintf(body, sizeof(body), "{\"path\":\"%s\",\"bytes\":%ld,\"seed\":%d}", path, bytes,
	        seed);
	snprintf(path_url, sizeof(path_url), "/_sim/sandboxes/%s/files", id);
	sim_post(path_url, body);
}

/* The workspace: a 50 MB file made in place, an empty file, a private
 * directory, a mode, a symlink (big_bytes: the large file's size). */
static void
seed_workspace(sk_provider *p, const char *id, long big_bytes)
{
	sk_sandbox sb = { .id = (char *)id };
	sk_file_entry dir = { .path = WS "/secret", .type = SK_FILE_DIR, .mode = 0700 };
	sk_file_entry link = { .path = WS "/latest",
		.type = SK_FILE_SYMLINK,
		.mode = 0777,
		.link_target = "data/big.bin" };
	sk_error err;

	sim_fill(id, WS "/data/big.bin", big_bytes, 3);
	sim_fill(id, WS "/data/empty", 0, 1);
	sim_fill(id, WS "/secret/key", 64, 9);
	ck_assert_msg(
	        sk_sandbox_write_file(p, &sb, &dir, NULL, NULL, &err) == 0, "%s", err.message);
	ck_assert_msg(
	        sk_sandbox_write_file(p, &sb, &link, NULL, NULL, &err) == 0, "%s", err.message);
}

/* A sandbox of no user seeded the same way: what the files must equal. */
static char *
reference_sandbox(sk_provider *p, long big_bytes)
{
	sk_create_request req = { .template_id = "base", .timeout_ms = 3600000 };
	sk_sandbox sb = { 0 };
	sk_error err;
	char *id;

	ck_assert_msg(sk_sandbox_create(p, &req, &sb, &err) == 0, "%s", err.message);
	id = sk_strdup(sb.id);
	sk_sandbox_dispose(&sb);
	seed_workspace(p, id, big_bytes);
	return id;
}

/* Every file under WS identical (type, mode, size, target, SHA-256). */
static void
assert_same_files(sk_provider *p, const char *ref, const char *id)
{
	static const char *const roots[] = { WS };
	sk_copy_options o = { .paths = roots, .npaths = 1 };
	sk_sandbox a = { .id = (char *)ref }, b = { .id = (char *)id };
	sk_copy_report rep = { 0 };
	sk_error err;

	ck_assert_msg(sk_workspace_verify(p, &a, p, &b, &o, &rep, &err) == 0,
	        "the restored files differ: %s", rep.mismatch ? rep.mismatch : err.message);
	ck_assert_int_ge(rep.files_total, 3);
	sk_copy_report_free(&rep);
}

/* status.archive.FIELD of NAME as a string ("" when absent; caller frees). */
static char *
archive_field(const char *name, const char *field)
{
	json_t *items = get_items(), *it = find_item(items, name);
	json_t *a = json_object_get(json_object_get(it, "status"), "archive");
	json_t *v = json_object_get(a, field);
	char *out = json_is_string(v) ? sk_strdup(json_string_value(v))
	        : json_is_integer(v)  ? sk_asprintf("%lld", (long long)json_integer_value(v))
	                              : sk_strdup("");

	json_decref(items);
	return out;
}

static bool
archiving(void *name)
{
	char *since = archive_field(name, "archivingSince");
	bool ok = since[0] != '\0';

	free(since);
	return ok;
}

/* The archive recorded for NAME has its manifest in the bucket. */
static void
assert_manifest(const char *name)
{
	sk_s3_config cfg = { .endpoint = gw_url,
		.bucket = "spaces",
		.access_key = S3_ACCESS,
		.secret_key = S3_SECRET };
	char *key = archive_field(name, "key"), obj[300];
	uint64_t size = 0;
	sk_s3 *s3 = NULL;
	sk_error err;

	ck_assert_msg(key[0] != '\0', "no archive recorded for %s", name);
	snprintf(obj, sizeof(obj), "%s/manifest.json", key);
	ck_assert_int_eq(sk_s3_new(&cfg, &s3, &err), 0);
	ck_assert_msg(sk_s3_head(s3, obj, &size, &err) == 0, "%s: %s", obj, err.message);
	ck_assert_int_gt(size, 0);
	sk_s3_free(s3);
	free(key);
}

static bool
has_event(const char *name, const char *reason)
{
	const char *args[] = { "events", name, NULL };
	char *out = NULL;
	bool ok;

	ck_assert_int_eq(spacectl(args, &out), 0);
	ok = out && strstr(out, reason) != NULL;
	free(out);
	return ok;
}

static bool
archive_failed(void *name)
{
	return has_event(name, "ArchiveFailed");
}

static int
user_sandboxes(const char *user)
{
	json_t *all = sim_sandboxes();
	int n = (int)count_user(all, user, NULL);

	json_decref(all);
	return n;
}

/* The UserSpace NAME (userID NAME) with the rest of its spec (tail). */
static void
apply_space(const char *name, const char *tail)
{
	char file[64],
	        *yaml = sk_asprintf("apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	                            "metadata:\n  name: %s\nspec:\n  userID: %s\n%s",
	                name, name, tail);

	snprintf(file, sizeof(file), "%s.yaml", name);
	apply_yaml(file, yaml);
	free(yaml);
}

/* A space with files in its sandbox, and their copy to compare with. */
typedef struct filled {
	sk_provider *p;
	char *id; /* its sandbox */
	char *ref; /* a sandbox with the same files */
} filled;

/* The S3 server (archive_start's provider_extra), the space NAME (tail:
 * the rest of its spec), the controller, a first connect, and the
 * workspace seeded with bytes in its largest file. */
static void
fill_space(const char *name, const char *provider_extra, const char *tail, long bytes, filled *f)
{
	json_t *v;

	archive_start(provider_extra);
	apply_space(name, tail);
	keeper_start();
	f->p = sim_provider();
	connect_ok(name, &v);
	f->id = sk_strdup(json_string_value(json_object_get(v, "sandboxID")));
	json_decref(v);
	seed_workspace(f->p, f->id, bytes);
	f->ref = reference_sandbox(f->p, bytes);
}

/* A connect restores NAME from its archive (path restore), every file as
 * in the reference; f->id is the new sandbox; the answer (caller frees). */
static json_t *
restored(const char *name, filled *f)
{
	json_t *v;

	connect_within(name, 55, &v);
	ck_assert_str_eq(json_string_value(json_object_get(v, "path")), "restore");
	free(f->id);
	f->id = sk_strdup(json_string_value(json_object_get(v, "sandboxID")));
	assert_same_files(f->p, f->ref, f->id);
	return v;
}

static void
filled_done(filled *f)
{
	sk_provider_free(f->p);
	free(f->ref);
	free(f->id);
	keeper_stop_checked();
}

/* A space with files archived after archiveAfter 5s asleep (its sandbox
 * deleted, the manifest in the bucket, describe says where), then a
 * connect restores it: path restore, every file identical, env present. */
START_TEST(test_archive_after_sleep_and_restore)
{
	const char *describe[] = { "describe", "userspace", "deep", NULL };
	const char *get[] = { "get", "userspace", "deep", NULL };
	char *out = NULL, *val;
	filled f;

	fill_space("deep", NULL,
	        "  env:\n    FOO: bar\n  lifecycle:\n    idleTimeout: 3s\n    archiveAfter: 5s\n",
	        BIG_BYTES, &f);
	ck_assert_msg(eventually(phase_is, (void *)"deep=Idle", 30), "deep never Idle");
	ck_assert_msg(eventually(phase_is, (void *)"deep=Archived", 120), "deep never Archived");
	ck_assert(sim_gone(f.id));
	ck_assert_int_eq(user_sandboxes("deep"), 0);
	assert_manifest("deep");
	ck_assert(has_event("deep", "ArchivedSandboxDeleted"));
	ck_assert_int_eq(spacectl(describe, &out), 0);
	ck_assert_msg(strstr(out, "Files:") && strstr(out, "archive s3://spaces/spaces/deep/1/"),
	        "describe: %s", out);
	free(out);
	ck_assert_int_eq(spacectl(get, &out), 0);
	ck_assert_msg(strstr(out, "Archived") != NULL, "get: %s", out);
	free(out);
	/* a connect restores it */
	json_decref(restored("deep", &f));
	val = sandbox_env(f.id, "FOO");
	ck_assert_msg(val && strcmp(val, "bar") == 0, "after restore: FOO=%s", val ? val : "-");
	free(val);
	ck_assert_int_eq(user_sandboxes("deep"), 1);
	ck_assert(phase_is((void *)"deep=Running"));
	filled_done(&f);
}
END_TEST

/* The provider deletes paused sandboxes after 40s (sandboxsim
 * --paused-retention, the config's pausedRetention): a space that never
 * sets archiveAfter is archived before that, and comes back whole. */
START_TEST(test_archive_before_retention)
{
	const char *args[] = { "--latency", "2ms", "--paused-retention", "40s", NULL };
	filled f;
	json_t *v;

	sk_test_stop(sim_pid, true);
	sim_pid = sk_test_sim_start(args, sim_url, sizeof(sim_url));
	fill_space("kept", "    pausedRetention: 40s\n", "  lifecycle:\n    idleTimeout: 3s\n",
	        1 << 20, &f);
	ck_assert_msg(eventually(phase_is, (void *)"kept=Archived", 90), "kept never Archived");
	ck_assert(has_event("kept", "ArchivedSandboxDeleted")); /* ours, not the provider's */
	ck_assert(!workspace_is((void *)"kept=False"));
	assert_manifest("kept");
	v = restored("kept", &f);
	ck_assert_ptr_null(json_object_get(v, "workspaceLost"));
	json_decref(v);
	filled_done(&f);
}
END_TEST

static bool
file_present(void *id)
{
	long st = 0;
	char *body = envd_get(id, "/files?path=" WS "/secret/key", &st);

	free(body);
	return st == 200;
}

/* A resume that loses the files with onLoss Restore: reported
 * (workspaceLost), and the files come back from the archive. */
START_TEST(test_archive_restores_lost_files)
{
	filled f;
	json_t *v;

	fill_space("lost", NULL,
	        "  health:\n    onLoss: Restore\n"
	        "  lifecycle:\n    idleTimeout: 3s\n    archiveAfter: 4s\n",
	        1 << 20, &f);
	ck_assert_msg(eventually(phase_is, (void *)"lost=Archived", 90), "lost never Archived");
	/* no more archiving: the next sleep must keep its sandbox */
	apply_space("lost",
	        "  health:\n    onLoss: Restore\n"
	        "  lifecycle:\n    idleTimeout: 3s\n    archiveAfter: 0s\n");
	connect_within("lost", 55, &v);
	free(f.id);
	f.id = sk_strdup(json_string_value(json_object_get(v, "sandboxID")));
	json_decref(v);
	ck_assert_msg(eventually(phase_is, (void *)"lost=Idle", 30), "lost never Idle");
	sim_post("/_sim/faults", "{\"resume_lose_files\": {\"mode\": \"empty\", \"count\": 1}}");
	connect_ok("lost", &v);
	ck_assert_str_eq(json_string_value(json_object_get(v, "sandboxID")), f.id);
	ck_assert_msg(json_is_true(json_object_get(v, "workspaceLost")), "no workspaceLost");
	json_decref(v);
	ck_assert_msg(eventually(file_present, f.id, 60), "the files never came back");
	ck_assert_msg(eventually(workspace_is, (void *)"lost=False", 10), "loss not reported");
	assert_same_files(f.p, f.ref, f.id);
	filled_done(&f);
}
END_TEST

/* NAME's sandbox ID is gone only with a verified archive recorded. */
static void
assert_never_lost(const char *name, const char *id)
{
	if (sim_gone((void *)id)) {
		ck_assert_msg(phase_is((void *)strcat(strcpy((char[80]){ 0 }, name), "=Archived")),
		        "%s: sandbox %s gone without an archive recorded", name, id);
		assert_manifest(name);
	}
	ck_assert_int_le(user_sandboxes(name), 1);
}

static void
archive_teardown(void)
{
	if (gw_pid > 0)
		sk_test_stop(gw_pid, true);
	gw_pid = 0;
	teardown();
}

/* kill -9 of the controller, then of the S3 server, while an archive of a
 * 50 MB workspace runs: the sandbox stays until a verified archive is
 * recorded, never two; the archive is redone and completes. */
START_TEST(test_archive_interrupted)
{
	filled f;

	fill_space("cut", NULL, "  lifecycle:\n    idleTimeout: 3s\n    archiveAfter: 4s\n",
	        BIG_BYTES, &f);
	/* the controller killed once the archive started */
	ck_assert_msg(eventually(archiving, (void *)"cut", 60), "no archive started");
	sk_test_stop(keeper_pid, true);
	keeper_pid = 0;
	assert_never_lost("cut", f.id);
	/* the S3 server killed during the redo */
	keeper_start();
	sk_test_stop(gw_pid, true);
	gw_pid = 0;
	ck_assert_msg(eventually(archiving, (void *)"cut", 30), "the archive is not under way");
	/* the redo (once the killed controller's shard leases expired) meets
	 * the dead server */
	ck_assert_msg(eventually(archive_failed, (void *)"cut", 90), "no ArchiveFailed");
	assert_never_lost("cut", f.id);
	ck_assert_msg(!sim_gone(f.id), "the sandbox went while the S3 server was down");
	archive_gw_restart();
	ck_assert_msg(eventually(phase_is, (void *)"cut=Archived", 120), "cut never Archived");
	ck_assert(sim_gone(f.id));
	assert_manifest("cut");
	ck_assert_int_eq(user_sandboxes("cut"), 0);
	json_decref(restored("cut", &f));
	filled_done(&f);
}
END_TEST

/* The archive's object of FILE (a path under WS) of NAME overwritten with
 * as many other bytes: its SHA-256 no longer matches the manifest. */
static void
corrupt_archived_file(const char *name, const char *file, size_t len)
{
	sk_s3_config cfg = { .endpoint = gw_url,
		.bucket = "spaces",
		.access_key = S3_ACCESS,
		.secret_key = S3_SECRET };
	char *key = archive_field(name, "key"), obj[400], *junk = sk_malloc(len);
	sk_s3 *s3 = NULL;
	sk_error err;

	memset(junk, 'x', len);
	snprintf(obj, sizeof(obj), "%s/files%s%s", key, WS, file);
	ck_assert_int_eq(sk_s3_new(&cfg, &s3, &err), 0);
	ck_assert_msg(sk_s3_put_bytes(s3, obj, junk, len, &err) == 0, "%s: %s", obj, err.message);
	sk_s3_free(s3);
	free(junk);
	free(key);
}

/* The reason of NAME's condition TYPE ("" when absent; caller frees). */
static char *
cond_reason(const char *name, const char *type)
{
	json_t *items = get_items(), *c;
	char *out = NULL;
	size_t i;

	json_array_foreach(
	        json_object_get(json_object_get(find_item(items, name), "status"), "conditions"), i,
	        c)
	{
		if (strcmp(json_string_value(json_object_get(c, "type")), type) == 0)
			out = sk_strdup(json_string_value(json_object_get(c, "reason")));
	}
	json_decref(items);
	return out ? out : sk_strdup("");
}

/* NAME's Ready and Synced conditions both say RestoreFailed. */
static bool
restore_failed_reported(void *name)
{
	char *ready = cond_reason(name, "Ready"), *synced = cond_reason(name, "Synced");
	bool ok = strcmp(ready, "RestoreFailed") == 0 && strcmp(synced, "RestoreFailed") == 0;

	free(ready);
	free(synced);
	return ok;
}

/* A connect of NAME within timeout_s: the status, the answer's reason
 * (caller frees) and its Retry-After header (0 when none). */
static long
connect_refused(const char *name, int timeout_s, char **reason, long *retry_after)
{
	char url[256];
	sk_test_req r = { .method = "POST", .body = "", .timeout_s = timeout_s + 30 };
	const char *ra;
	json_t *v;
	long st;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/userspaces/%s/connect?timeout=%ds",
	        connect_port, name, timeout_s);
	st = sk_test_http_do(url, &r);
	v = json_loads(r.out ? r.out : "", 0, NULL);
	*reason = sk_strdup(v && json_is_string(json_object_get(v, "reason"))
	                ? json_string_value(json_object_get(v, "reason"))
	                : "");
	ra = r.headers ? strcasestr(r.headers, "Retry-After:") : NULL;
	*retry_after = ra ? atol(ra + strlen("Retry-After:")) : 0;
	json_decref(v);
	free(r.out);
	free(r.headers);
	return st;
}

/* A restore that fails (an object of the archive corrupted: its checksum
 * does not match the manifest): the waiting connect is answered with 503
 * RestoreFailed as soon as the restore failed, never after its timeout; a
 * connect inside the back-off at once, with Retry-After; the space says
 * why (Ready and Synced False, RestoreFailed) and the restore is not
 * retried meanwhile (status.archive.failures stays 1). */
START_TEST(test_restore_failure_answered_at_once)
{
	char *reason = NULL;
	long retry_after = 0, st;
	int64_t t0;
	filled f;

	fill_space("broken", NULL, "  lifecycle:\n    idleTimeout: 3s\n    archiveAfter: 4s\n",
	        1 << 20, &f);
	ck_assert_msg(eventually(phase_is, (void *)"broken=Archived", 90), "broken never Archived");
	corrupt_archived_file("broken", "/secret/key", 64);
	/* the connect that starts the restore */
	t0 = sk_monotonic_ms();
	st = connect_refused("broken", 120, &reason, &retry_after);
	ck_assert_msg(st == 503 && strcmp(reason, "RestoreFailed") == 0,
	        "connect: %ld %s after %lld ms", st, reason, (long long)(sk_monotonic_ms() - t0));
	ck_assert_int_lt(sk_monotonic_ms() - t0, 110 * 1000);
	ck_assert_int_gt(retry_after, 0);
	free(reason);
	/* the next one inside the back-off (1m): at once, nothing retried */
	t0 = sk_monotonic_ms();
	st = connect_refused("broken", 60, &reason, &retry_after);
	ck_assert_msg(
	        st == 503 && strcmp(reason, "RestoreFailed") == 0, "again: %ld %s", st, reason);
	ck_assert_int_lt(sk_monotonic_ms() - t0, 10 * 1000);
	ck_assert_int_gt(retry_after, 0);
	ck_assert_int_le(retry_after, 60);
	free(reason);
	/* the status says why once its write lands (it may follow the answer) */
	ck_assert_msg(eventually(restore_failed_reported, (void *)"broken", 30),
	        "Ready and Synced not RestoreFailed (log %s)", keeper_log);
	reason = archive_field("broken", "failures");
	ck_assert_str_eq(reason, "1");
	free(reason);
	filled_done(&f);
}
END_TEST

/* ---- fork ---- */

#define FORK_FILE "/home/user/try/notes.txt"
#define FORK_TEXT "written in alice's sandbox before the fork\n"

static int64_t
text_source(void *payload, void *buf, size_t len)
{
	const char **rest = payload;
	size_t n = strlen(*rest) < len ? strlen(*rest) : len;

	memcpy(buf, *rest, n);
	*rest += n;
	return (int64_t)n;
}

/* "NAME": the object has a sandbox bound and Ready True. */
static bool
bound_and_ready(void *arg)
{
	json_t *items = get_items(), *it = find_item(items, arg);
	bool ok = it && item_sandbox(it) && item_ready(it);

	json_decref(items);
	return ok;
}

/* A copy of NAME's status.sandboxID (NULL: none). */
static char *
bound_id(const char *name)
{
	json_t *items = get_items();
	char *id = sk_strdup(item_sandbox(find_item(items, name)));

	json_decref(items);
	return id;
}

/* spacectl fork: alice-try's first sandbox is the provider's fork of alice's
 * (one fork, no create), with the file written through alice's data plane;
 * alice keeps her sandbox, her files and her one sandbox; later rounds of
 * alice-try create nothing more. */
START_TEST(test_fork_from_alice)
{
	const char *fork_args[] = { "fork", "userspace/alice", "--name", "alice-try", NULL };
	const char *taken[] = { "fork", "userspace/alice", "--name", "alice-try", "--user-id",
		"other", NULL };
	const char *missing[] = { "fork", "userspace/nobody", "--name", "nobody-try", NULL };
	const char *events[] = { "events", "alice-try", NULL };
	const char *rest = FORK_TEXT;
	sk_file_entry e = {
		.path = FORK_FILE, .type = SK_FILE_REGULAR, .size = strlen(FORK_TEXT), .mode = 0644
	};
	sk_provider *p;
	sk_sandbox sb = { 0 };
	char *alice_id, *try_id, *body, *out = NULL;
	json_t *all;
	sk_error err;
	long st = 0;

	apply_yaml("alice.yaml",
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	        "metadata:\n  name: alice\nspec:\n  userID: alice\n"
	        "  lifecycle:\n    idleTimeout: 0s\n");
	keeper_start();
	ck_assert_msg(eventually(bound_and_ready, (void *)"alice", 30), "alice never Ready");
	alice_id = bound_id("alice");
	p = sim_provider();
	sb.id = alice_id;
	ck_assert_msg(sk_sandbox_write_file(p, &sb, &e, text_source, &rest, &err) == 0, "%s",
	        err.message);
	sk_provider_free(p);
	sim_post("/_sim/stats/reset", "");

	ck_assert_int_eq(spacectl(fork_args, &out), 0);
	ck_assert_msg(strstr(out, "userspace/alice-try forked from userspace/alice"), "%s", out);
	free(out);
	out = NULL;
	ck_assert_msg(
	        eventually(bound_and_ready, (void *)"alice-try", 30), "alice-try never Ready");
	try_id = bound_id("alice-try");
	ck_assert_str_ne(try_id, alice_id);
	body = envd_get(try_id, "/files?path=" FORK_FILE, &st);
	ck_assert_int_eq(st, 200);
	ck_assert_str_eq(body, FORK_TEXT);
	free(body);
	/* the original: the same sandbox, its file, one sandbox of alice's */
	ck_assert(bound_and_ready((void *)"alice"));
	body = bound_id("alice");
	ck_assert_str_eq(body, alice_id);
	free(body);
	body = envd_get(alice_id, "/files?path=" FORK_FILE, &st);
	ck_assert_int_eq(st, 200);
	ck_assert_str_eq(body, FORK_TEXT);
	free(body);
	all = sim_sandboxes();
	ck_assert_int_eq(count_user(all, "alice", NULL), 1);
	ck_assert_str_eq(sim_state_of(all, alice_id), "running");
	ck_assert_str_eq(sim_state_of(all, try_id), "running");
	json_decref(all);
	/* one fork, no create, also after later rounds (Ready needed one) */
	ck_assert_int_eq(sim_stat("fork"), 1);
	ck_assert_int_eq(sim_stat("create"), 0);
	ck_assert_int_eq(spacectl(events, &out), 0);
	ck_assert_msg(strstr(out, "Forked") && strstr(out, alice_id), "events: %s", out);
	free(out);
	/* the CLI's refusals: the name taken, an unknown source */
	ck_assert_int_eq(spacectl(taken, NULL), 1);
	ck_assert_int_eq(spacectl(missing, NULL), 1);
	body = bound_id("alice-try");
	ck_assert_str_eq(body, try_id);
	free(body);
	ck_assert_int_eq(sim_stat("create"), 0);
	free(try_id);
	free(alice_id);
	keeper_stop_checked();
}
END_TEST

Suite *
sk_suite_controller(void)
{
	Suite *s = suite_create("controller");
	TCase *core = tcase_create("converge");
	TCase *fault = tcase_create("faults");
	TCase *daemon = tcase_create("daemon");
	TCase *retention = tcase_create("retention");
	TCase *fork_tc = tcase_create("fork");

	tcase_set_timeout(retention, 300);
	tcase_add_checked_fixture(retention, setup, teardown);
	tcase_add_test(retention, test_retention_warning_without_archive);
	tcase_set_timeout(core, 300);
	tcase_set_timeout(fault, 300);
	tcase_set_timeout(daemon, 300);
	tcase_add_checked_fixture(fork_tc, setup, teardown);
	tcase_set_timeout(fork_tc, 120);
	tcase_add_test(fork_tc, test_fork_from_alice);
	suite_add_tcase(s, fork_tc);
	tcase_add_checked_fixture(core, setup, teardown);
	tcase_add_checked_fixture(fault, setup, teardown);
	tcase_add_checked_fixture(daemon, setup, teardown);
	tcase_add_test(core, test_a_fifty_converge);
	tcase_add_test(core, test_b_duplicates_deleted);
	tcase_add_test(core, test_c_pause_resume);
	tcase_add_test(core, test_g_deletion_policies);
	tcase_add_test(core, test_h_orphans_left_alone);
	tcase_add_test(core, test_h_orphans_deleted_when_configured);
	tcase_add_test(fault, test_f_sigkill_restart);
	tcase_add_test(fault, test_e_empty_list_no_duplicates);
	tcase_add_test(fault, test_d_unreachable_replaced);
	tcase_add_test(fault, test_j_429_storm);
	tcase_add_test(fault, test_i_ferretdb_restart);
	tcase_add_test(daemon, test_http_endpoints_and_connect);
	tcase_add_test(daemon, test_connect_during_start_waits);
	tcase_add_test(daemon, test_status_page);
	tcase_add_test(daemon, test_idle_sleep_and_wake);
	tcase_add_test(daemon, test_env_after_create_and_resume);
	tcase_add_test(daemon, test_workspace_lost_after_resume);
	tcase_add_test(daemon, test_workspace_gone_while_asleep);
	tcase_add_test(daemon, test_connect_unreachable_report);
	tcase_add_test(daemon, test_connect_unreachable_replace);
	tcase_add_test(daemon, test_once_pass);
	tcase_add_test(daemon, test_sigterm_graceful);
	tcase_add_test(daemon, test_usage_and_bad_config);
	suite_add_tcase(s, core);
	suite_add_tcase(s, fault);
	suite_add_tcase(s, daemon);
	suite_add_tcase(s, retention);
	return s;
}

/* The archive's cases, a suite of their own: half of this file's time,
 * run beside the rest by make test (hack/run-tests.sh). */
Suite *
sk_suite_controller_archive(void)
{
	Suite *s = suite_create("controller_archive");
	TCase *archive = tcase_create("archive");
	TCase *restore = tcase_create("restore");

	tcase_set_timeout(archive, 600);
	tcase_add_checked_fixture(archive, setup, archive_teardown);
	tcase_add_test(archive, test_archive_after_sleep_and_restore);
	tcase_add_test(archive, test_archive_before_retention);
	tcase_add_test(archive, test_archive_restores_lost_files);
	tcase_add_test(archive, test_archive_interrupted);
	tcase_set_timeout(restore, 600);
	tcase_add_checked_fixture(restore, setup, archive_teardown);
	tcase_add_test(restore, test_restore_failure_answered_at_once);
	suite_add_tcase(s, archive);
	suite_add_tcase(s, restore);
	return s;
}
