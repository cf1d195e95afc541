/*
 * End-to-end tests of persistent snapshots with the real binaries
 * (FerretDB, sandboxsim, spacekeeper, spacectl): a file written through the
 * sandbox's data plane (envd POST /files), `spacectl snapshot create`, then
 * `snapshot list` shows it (table and JSON); the file is overwritten and a
 * second one written, `snapshot restore` makes the controller start a new
 * sandbox from the snapshot: the space is bound to it, it has the file as
 * it was at the snapshot and not the later one, the old sandbox is gone,
 * and the user has exactly one sandbox at every poll after the swap. A
 * provider without snapshots (cube) answers a clear error.
 *
 * Deep sleep by snapshot (spec.lifecycle.archive.method Snapshot, no object
 * storage configured): the asleep space is archived as a provider snapshot
 * (status.archive method and snapshotID, the sandbox deleted), a connect
 * starts the next sandbox from it with the file in place, the snapshot is
 * deleted once that sandbox answered, and the next deep sleep takes a new
 * one (generation 2).
 *
 * Scheduled snapshots (spec.snapshots, a six-field schedule every 2 s,
 * keep 2): at least four are taken, status.snapshots keeps the newest two,
 * every one pruned from it is gone at the provider, and the provider never
 * holds more than keep + 1 of the sandbox's (one taken before its prune).
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../testutil.h"
#include "util/util.h"

Suite *sk_suite_snapshot(void);

#define USER "snapu"
#define NOTE "/home/user/note.txt"
#define LATER "/home/user/later.txt"
#define ASSERT_HAS(hay, needle)                                                                    \
	ck_assert_msg(strstr((hay), (needle)) != NULL, "expected \"%s\" in:\n%s", (needle), (hay))

static sk_test_world w;
static char cfg_path[700];
static char ctx_env[800]; /* SPACECTL_CONFIG: a context naming cfg_path (describe's providers) */

/* spacectl ARGS... against the world (its database, the simulator's key;
 * snapshot gets the controller's config first, a later --config wins): the
 * exit code; *out stdout, *err stderr. */
static int
ctl(char **out, char **err, const char *a1, const char *a2, const char *a3, const char *a4,
        const char *a5)
{
	const char *argv[16] = { "spacectl", "--mongodb-uri", w.mongo_uri, "--database", w.db };
	const char *env[] = { "E2B_API_KEY=" SK_TEST_SIM_KEY, ctx_env, NULL };
	const char *args[] = { a1, a2, a3, a4, a5 };
	size_t n = 5;

	for (size_t i = 0; i < 5 && args[i]; i++) {
		argv[n++] = args[i];
		if (i == 0 && strcmp(args[i], "snapshot") == 0) {
			argv[n++] = "--config";
			argv[n++] = cfg_path;
		}
	}
	return sk_test_run(argv, env, NULL, out, err, 120);
}

static void
apply_space(void)
{
	char *out = NULL, *err = NULL;
	const char *path = sk_test_write_file("snap-space.yaml",
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	        "metadata:\n  name: " USER "\nspec:\n  userID: " USER "\n");
	int rc = ctl(&out, &err, "apply", "-f", path, NULL, NULL);

	ck_assert_msg(rc == 0, "apply: %d %s", rc, err);
	free(out);
	free(err);
}

/* The stored object, as spacectl get -o json prints it. */
static json_t *
space_json(void)
{
	char *out = NULL, *err = NULL;
	int rc = ctl(&out, &err, "get", "userspace", USER, "-o", "json");
	json_t *v = rc == 0 ? json_loads(out, 0, NULL) : NULL;

	ck_assert_msg(v != NULL, "get: %d %s", rc, err);
	free(out);
	free(err);
	return v;
}

/* status.sandboxID once status.phase is Running and no migration moves it
 * (other than from), within 120 s; caller frees. */
static char *
wait_bound(const char *other_than)
{
	int64_t deadline = sk_monotonic_ms() + 120000;

	for (;;) {
		json_t *v = space_json(), *st = json_object_get(v, "status");
		const char *id = json_string_value(json_object_get(st, "sandboxID"));
		const char *phase = json_string_value(json_object_get(st, "phase"));
		const char *mig = json_string_value(
		        json_object_get(json_object_get(st, "migration"), "phase"));
		char *got = NULL;
		if (id && phase && strcmp(phase, "Running") == 0 &&
		        (other_than == NULL || strcmp(id, other_than) != 0) &&
		        (mig == NULL || strcmp(mig, "Done") == 0 || strcmp(mig, "Retiring") == 0))
			got = sk_strdup(id);
		json_decref(v);
		if (got)
			return got;
		ck_assert_msg(
		        sk_monotonic_ms() < deadline, "userspace " USER " not bound (%s)", w.log);
		sk_sleep_ms(200);
	}
}

/* envd at the simulator: METHOD /files?path=PATH of sandbox id; the status. */
static long
envd_file(const char *method, const char *id, const char *path, const char *body, char **out)
{
	char url[600], hid[160];
	const char *hdrs[] = { hid, "E2b-Sandbox-Port: 49983",
		"Content-Type: application/octet-stream", NULL };
	sk_test_req r = { .method = method, .body = body, .extra = hdrs, .timeout_s = 20 };
	long st;

	snprintf(url, sizeof(url), "%s/files?path=%s", w.sim_url, path);
	snprintf(hid, sizeof(hid), "E2b-Sandbox-Id: %s", id);
	st = sk_test_http_do(url, &r);
	if (out)
		*out = r.out;
	else
		free(r.out);
	free(r.headers);
	return st;
}

static void
write_file(const char *id, const char *path, const char *text)
{
	long st = envd_file("POST", id, path, text, NULL);

	ck_assert_msg(st == 200 || st == 204, "write %s in %s: HTTP %ld", path, id, st);
}

/* The user's sandboxes at the simulator (running and paused). */
static int
user_sandboxes(const char *must_have)
{
	char url[300];
	long st = 0;
	json_t *arr, *sb;
	size_t i;
	int n = 0;
	bool seen = must_have == NULL;

	snprintf(url, sizeof(url), "%s/v2/sandboxes?state=running,paused&limit=100", w.sim_url);
	arr = sk_test_http_json("GET", url, NULL, &st);
	ck_assert_msg(st == 200 && json_is_array(arr), "list: HTTP %ld", st);
	json_array_foreach(arr, i, sb)
	{
		const char *u = json_string_value(
		        json_object_get(json_object_get(sb, "metadata"), "user_id"));
		const char *id = json_string_value(json_object_get(sb, "sandboxID"));
		if (u && strcmp(u, USER) == 0) {
			n++;
			seen |= must_have && id && strcmp(id, must_have) == 0;
		}
	}
	json_decref(arr);
	ck_assert_msg(seen, "the bound sandbox %s is not at the provider", must_have);
	return n;
}

static void
setup(void)
{
	sk_test_keeper_opts o = { .controller = "  resyncPeriod: 2s\n" };

	sk_test_world_setup(&w, NULL);
	sk_test_keeper_start(&w, &o);
	snprintf(cfg_path, sizeof(cfg_path), "%s/config.yaml", sk_test_tmpdir());
	snprintf(ctx_env, sizeof(ctx_env), "SPACECTL_CONFIG=%s/contexts-%s.yaml", sk_test_tmpdir(),
	        w.db);
	{
		const char *argv[] = { "spacectl", "config", "set-context", "snap", "--mongodb-uri",
			w.mongo_uri, "--database", w.db, "--controller-config", cfg_path,
			"--current", NULL };
		const char *env[] = { ctx_env, NULL };
		char *out = NULL, *err = NULL;
		int rc = sk_test_run(argv, env, NULL, &out, &err, 60);
		ck_assert_msg(rc == 0, "set-context: %d %s", rc, err);
		free(out);
		free(err);
	}
}

static void
teardown(void)
{
	sk_test_world_teardown(&w);
}

/* The snapshot ID of `snapshot create -o json`; caller frees. */
static char *
create_snapshot(const char *name)
{
	char *out = NULL, *err = NULL, *id;
	int rc = ctl(
	        &out, &err, "snapshot", "create", "userspace/" USER, name ? "--name" : NULL, name);
	json_t *v;

	ck_assert_msg(rc == 0, "snapshot create: %d %s", rc, err);
	ASSERT_HAS(out, "snapshot/");
	free(out);
	free(err);
	out = err = NULL;
	/* the event is recorded, and describe lists the snapshot */
	rc = ctl(&out, &err, "describe", "userspace", USER, NULL, NULL);
	ck_assert_int_eq(rc, 0);
	ASSERT_HAS(out, "SnapshotCreated");
	ASSERT_HAS(out, "Snapshots:");
	if (name)
		ASSERT_HAS(out, name);
	free(out);
	free(err);
	out = err = NULL;
	rc = ctl(&out, &err, "snapshot", "list", USER, "-o", "json");
	ck_assert_msg(rc == 0, "snapshot list: %d %s", rc, err);
	v = json_loads(out, 0, NULL);
	ck_assert_ptr_nonnull(v);
	ck_assert_str_eq(json_string_value(json_object_get(v, "kind")), "SnapshotList");
	id = sk_strdup(json_string_value(
	        json_object_get(json_array_get(json_object_get(v, "items"), 0), "snapshotID")));
	json_decref(v);
	free(out);
	free(err);
	return id;
}

START_TEST(test_create_list_restore)
{
	char *first, *second, *snap, *out = NULL, *err = NULL, *text = NULL;
	int rc;

	apply_space();
	first = wait_bound(NULL);
	write_file(first, NOTE, "before the snapshot");
	/* nothing yet */
	rc = ctl(&out, &err, "snapshot", "list", USER, NULL, NULL);
	ck_assert_msg(rc == 0, "list: %d %s", rc, err);
	ASSERT_HAS(err, "No snapshots found.");
	free(out);
	free(err);
	out = err = NULL;

	snap = create_snapshot("keep-1");
	ck_assert_str_eq(snap, "sim-team/keep-1:default");
	rc = ctl(&out, &err, "snapshot", "list", "userspace/" USER, NULL, NULL);
	ck_assert_msg(rc == 0, "list: %d %s", rc, err);
	ASSERT_HAS(out, "ID");
	ASSERT_HAS(out, "NAMES");
	ASSERT_HAS(out, "CREATED");
	ASSERT_HAS(out, "sim-team/keep-1:default");
	free(out);
	free(err);
	out = err = NULL;

	/* after the snapshot: the file changes and another one appears */
	write_file(first, NOTE, "after the snapshot");
	write_file(first, LATER, "later");

	/* a snapshot nobody took is refused, and nothing changes */
	rc = ctl(&out, &err, "snapshot", "restore", USER, "sim-team/nope:default", NULL);
	ck_assert_int_eq(rc, 1);
	ASSERT_HAS(err, "no snapshot \"sim-team/nope:default\"");
	free(out);
	free(err);
	out = err = NULL;

	rc = ctl(&out, &err, "snapshot", "restore", USER, snap, NULL);
	ck_assert_msg(rc == 0, "restore: %d %s", rc, err);
	ASSERT_HAS(out, "restoring from snapshot sim-team/keep-1:default");
	free(out);
	free(err);
	out = err = NULL;

	second = wait_bound(first);
	/* the new sandbox has the file as it was at the snapshot, not what came later */
	ck_assert_int_eq(envd_file("GET", second, NOTE, NULL, &text), 200);
	ck_assert_str_eq(text, "before the snapshot");
	free(text);
	text = NULL;
	ck_assert_int_eq(envd_file("GET", second, LATER, NULL, NULL), 404);
	/* the old sandbox is deleted once the new one is bound (not kept for
	 * keepSourceFor, 24h here); one sandbox for the user from then on */
	{
		int64_t deadline = sk_monotonic_ms() + 60000;
		while (user_sandboxes(second) != 1) {
			ck_assert_msg(
			        sk_monotonic_ms() < deadline, "the old sandbox %s stays", first);
			sk_sleep_ms(200);
		}
		for (int i = 0; i < 10; i++) {
			ck_assert_int_eq(user_sandboxes(second), 1);
			sk_sleep_ms(200);
		}
	}
	{
		json_t *v = space_json(),
		       *m = json_object_get(json_object_get(v, "status"), "migration");
		ck_assert_str_eq(
		        json_string_value(json_object_get(m, "trigger")), "RestoreSnapshot");
		json_decref(v);
	}
	rc = ctl(&out, &err, "describe", "userspace", USER, NULL, NULL);
	ck_assert_int_eq(rc, 0);
	ASSERT_HAS(out, "restoring from snapshot sim-team/keep-1:default");
	ASSERT_HAS(out, "MigrationSwitched");
	free(out);
	free(err);
	out = err = NULL;
	/* the snapshot of the sandbox before the restore is still listed */
	rc = ctl(&out, &err, "snapshot", "list", USER, "-o", "yaml");
	ck_assert_msg(rc == 0, "list: %d %s", rc, err);
	ASSERT_HAS(out, "sim-team/keep-1:default");
	ASSERT_HAS(out, first);
	free(out);
	free(err);
	free(snap);
	free(first);
	free(second);
}
END_TEST

/* status.archive of the stored object (a new reference, or NULL). */
static json_t *
archive_status(char **phase)
{
	json_t *v = space_json(), *st = json_object_get(v, "status");
	json_t *a = json_incref(json_object_get(st, "archive"));

	*phase = sk_strdup(json_string_value(json_object_get(st, "phase")));
	json_decref(v);
	return a;
}

/* status.archive's snapshotID once the space is Archived by snapshot with
 * generation gen, within 60 s; caller frees. */
static char *
wait_snapshot_archived(int gen)
{
	int64_t deadline = sk_monotonic_ms() + 60000;

	for (;;) {
		char *phase = NULL, *got = NULL;
		json_t *a = archive_status(&phase);
		const char *method = json_string_value(json_object_get(a, "method"));
		const char *id = json_string_value(json_object_get(a, "snapshotID"));
		if (phase && strcmp(phase, "Archived") == 0 && method &&
		        strcmp(method, "Snapshot") == 0 && id &&
		        json_integer_value(json_object_get(a, "generation")) == gen) {
			ck_assert_ptr_null(
			        json_object_get(a, "key")); /* nothing in object storage */
			got = sk_strdup(id);
		}
		json_decref(a);
		free(phase);
		if (got)
			return got;
		ck_assert_msg(sk_monotonic_ms() < deadline, "not archived by snapshot (%s)", w.log);
		sk_sleep_ms(200);
	}
}

/* Whether the simulator still holds snapshot id (GET /snapshots, every one). */
static bool
sim_has_snapshot(const char *id)
{
	char url[300];
	long st = 0;
	json_t *arr, *sn;
	size_t i;
	bool found = false;

	snprintf(url, sizeof(url), "%s/snapshots?limit=100", w.sim_url);
	arr = sk_test_http_json("GET", url, NULL, &st);
	ck_assert_msg(st == 200 && json_is_array(arr), "snapshots: HTTP %ld", st);
	json_array_foreach(arr, i, sn)
	{
		const char *sid = json_string_value(json_object_get(sn, "snapshotID"));
		found |= sid && strcmp(sid, id) == 0;
	}
	json_decref(arr);
	return found;
}

START_TEST(test_deep_sleep_by_snapshot)
{
	char *first, *snap, *snap2, *out = NULL, *err = NULL, *text = NULL, url[300];
	const char *path = sk_test_write_file("snap-sleep.yaml",
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	        "metadata:\n  name: " USER "\nspec:\n  userID: " USER "\n"
	        "  lifecycle:\n    idleTimeout: 3s\n    archiveAfter: 2s\n"
	        "    archive: {method: Snapshot}\n");
	json_t *v, *st, *sb;
	const char *second;
	int64_t deadline;
	long code;
	int rc = ctl(&out, &err, "apply", "-f", path, NULL, NULL);

	ck_assert_msg(rc == 0, "apply: %d %s", rc, err);
	free(out);
	free(err);
	out = err = NULL;
	first = wait_bound(NULL);
	write_file(first, NOTE, "kept by the snapshot");

	/* asleep 3 s, then 2 s more: a snapshot, and the sandbox deleted */
	snap = wait_snapshot_archived(1);
	ck_assert(sim_has_snapshot(snap));
	ck_assert_int_eq(user_sandboxes(NULL), 0);
	rc = ctl(&out, &err, "describe", "userspace", USER, NULL, NULL);
	ck_assert_int_eq(rc, 0);
	ASSERT_HAS(out, "as snapshot");
	ASSERT_HAS(out, snap);
	free(out);
	free(err);
	out = err = NULL;

	/* a connect: the next sandbox starts from the snapshot, the file in place */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/userspaces/%s/connect?timeout=60s",
	        w.connect_port, USER);
	v = sk_test_http_json("POST", url, "", &code);
	ck_assert_msg(code == 200 && json_is_true(json_object_get(v, "ready")), "connect: %ld (%s)",
	        code, w.log);
	second = json_string_value(json_object_get(v, "sandboxID"));
	ck_assert_ptr_nonnull(second);
	ck_assert_str_ne(second, first);
	ck_assert_int_eq(envd_file("GET", second, NOTE, NULL, &text), 200);
	ck_assert_str_eq(text, "kept by the snapshot");
	free(text);
	snprintf(url, sizeof(url), "%s/sandboxes/%s", w.sim_url, second);
	sb = sk_test_http_json("GET", url, NULL, &code);
	ck_assert_int_eq(code, 200);
	/* restored_from: the snapshot's ID as a metadata value (':' and '/' as '-') */
	{
		char want[256];
		snprintf(want, sizeof(want), "%s", snap);
		for (char *c = want; *c; c++)
			*c = (*c == ':' || *c == '/') ? '-' : *c;
		ck_assert_str_eq(json_string_value(json_object_get(
		                         json_object_get(sb, "metadata"), "restored_from")),
		        want);
	}
	json_decref(sb);
	json_decref(v);

	/* once it answered, the snapshot is deleted (SnapshotDeleted) */
	deadline = sk_monotonic_ms() + 30000;
	while (sim_has_snapshot(snap)) {
		ck_assert_msg(
		        sk_monotonic_ms() < deadline, "snapshot %s not deleted (%s)", snap, w.log);
		sk_sleep_ms(200);
	}
	rc = ctl(&out, &err, "describe", "userspace", USER, NULL, NULL);
	ck_assert_int_eq(rc, 0);
	ASSERT_HAS(out, "SnapshotDeleted");
	free(out);
	free(err);
	out = err = NULL;

	/* asleep again: a new snapshot, the next generation */
	snap2 = wait_snapshot_archived(2);
	ck_assert_str_ne(snap2, snap);
	v = space_json();
	st = json_object_get(v, "status");
	ck_assert_ptr_null(json_object_get(st, "sandboxID"));
	json_decref(v);
	free(snap2);
	free(snap);
	free(first);
}
END_TEST

/* The simulator's snapshots of sandbox id. */
static int
sim_snapshots_of(const char *id)
{
	char url[300];
	long st = 0;
	json_t *arr;
	int n;

	snprintf(url, sizeof(url), "%s/snapshots?limit=100&sandboxID=%s", w.sim_url, id);
	arr = sk_test_http_json("GET", url, NULL, &st);
	ck_assert_msg(st == 200 && json_is_array(arr), "snapshots: HTTP %ld", st);
	n = (int)json_array_size(arr);
	json_decref(arr);
	return n;
}

START_TEST(test_scheduled_snapshots_pruned)
{
	const char *path = sk_test_write_file("snap-sched.yaml",
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	        "metadata:\n  name: " USER "\nspec:\n  userID: " USER "\n"
	        "  lifecycle: {idleTimeout: 0s}\n"
	        "  snapshots: {schedule: '*/2 * * * * *', keep: 2}\n");
	char *out = NULL, *err = NULL, *id, *seen[64];
	int n_seen = 0, rc = ctl(&out, &err, "apply", "-f", path, NULL, NULL);
	int64_t deadline;

	ck_assert_msg(rc == 0, "apply: %d %s", rc, err);
	free(out);
	free(err);
	id = wait_bound(NULL);
	deadline = sk_monotonic_ms() + 90000;
	while (n_seen < 5) {
		json_t *v = space_json(),
		       *ids = json_object_get(
		               json_object_get(json_object_get(v, "status"), "snapshots"),
		               "snapshotIDs"),
		       *x;
		size_t i;
		ck_assert_msg(json_array_size(ids) <= 2, "status keeps %zu snapshots",
		        json_array_size(ids));
		json_array_foreach(ids, i, x)
		{
			bool known = false;
			for (int k = 0; k < n_seen; k++)
				known |= strcmp(seen[k], json_string_value(x)) == 0;
			if (!known && n_seen < 64)
				seen[n_seen++] = sk_strdup(json_string_value(x));
		}
		json_decref(v);
		ck_assert_int_le(sim_snapshots_of(id), 3);
		ck_assert_msg(sk_monotonic_ms() < deadline, "%d snapshots seen in 90 s (%s)",
		        n_seen, w.log);
		sk_sleep_ms(300);
	}
	/* the ones pruned from the status are gone at the provider */
	{
		json_t *v = space_json(),
		       *ids = json_object_get(
		               json_object_get(json_object_get(v, "status"), "snapshots"),
		               "snapshotIDs");
		for (int k = 0; k < n_seen; k++) {
			bool kept = false;
			json_t *x;
			size_t i;
			json_array_foreach(ids, i, x) kept |=
			        strcmp(seen[k], json_string_value(x)) == 0;
			if (!kept)
				ck_assert_msg(!sim_has_snapshot(seen[k]), "pruned %s still there",
				        seen[k]);
		}
		json_decref(v);
	}
	out = err = NULL;
	rc = ctl(&out, &err, "describe", "userspace", USER, NULL, NULL);
	ck_assert_int_eq(rc, 0);
	ASSERT_HAS(out, "SnapshotTaken");
	ASSERT_HAS(out, "SnapshotDeleted");
	free(out);
	free(err);
	for (int k = 0; k < n_seen; k++)
		free(seen[k]);
	free(id);
}
END_TEST

/* A provider without snapshots says so, naming it. */
START_TEST(test_unsupported_provider)
{
	char *out = NULL, *err = NULL, *first, cube[700];
	int rc;

	snprintf(cube, sizeof(cube), "%s",
	        sk_test_write_file("cube.yaml",
	                "apiVersion: spacekeeper.dev/v1alpha1\nkind: ControllerConfig\n"
	                "providers:\n  - name: default\n    type: cube\n    apiURL: "
	                "http://127.0.0.1:9\n"
	                "    apiKeyEnv: E2B_API_KEY\n")); /* a static buffer: copied */

	apply_space();
	first = wait_bound(NULL);
	rc = ctl(&out, &err, "snapshot", "create", USER, "--config", cube);
	ck_assert_int_eq(rc, 1);
	ASSERT_HAS(err, "provider default (type cube) has no persistent snapshots");
	free(out);
	free(err);
	out = err = NULL;
	rc = ctl(&out, &err, "snapshot", "create", USER, "--name", "bad name!");
	ck_assert_int_eq(rc, 2);
	ASSERT_HAS(err, "--name");
	free(out);
	free(err);
	free(first);
}
END_TEST

Suite *
sk_suite_snapshot(void)
{
	Suite *s = suite_create("snapshot");
	TCase *tc = tcase_create("snapshot");

	tcase_set_timeout(tc, 300);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_create_list_restore);
	tcase_add_test(tc, test_unsupported_provider);
	tcase_add_test(tc, test_deep_sleep_by_snapshot);
	tcase_add_test(tc, test_scheduled_snapshots_pruned);
	suite_add_tcase(s, tc);
	return s;
}
