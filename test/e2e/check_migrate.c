/*
 * End-to-end tests of migrations with the real binaries: FerretDB
 * (the runner's), two or three sandboxsim instances as providers (flavours
 * e2b, cube, daytona), spacekeeper and spacectl. A space's workspace (200
 * files in nested directories, a 50 MB file, a symlink, an empty file) is
 * seeded through the simulator's file API; changing spec.provider moves it
 * with every file identical at the target and exactly one binding at every
 * poll; the source is paused, then deleted after keepSourceFor. Also: a
 * persistent 504 at the target's file API aborts with the source still
 * bound and untouched; SIGKILL of the controller during the copy, then a
 * restart, completes or aborts cleanly; rollout restart moves the files to
 * a sandbox of a changed template. spec.network on each flavour: created
 * with the policy, which commands meet; a change applied live on e2b,
 * migrated on cube (Migrate), reported on daytona (Report).
 */
#include <check.h>
#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "../testutil.h"
#include "api/names.h"
#include "reconcile/reconcile.h"
#include "reconcile/reconcile_int.h" /* SK_TRIGGER_PROVIDER */
#include "sandbox/sandbox.h"
#include "store/store.h"

Suite *sk_suite_migrate_e2e(void);

#define KEY "e2b_0000000000000000000000000000000000000000"
#define KEY_VAR "E2B_API_KEY"
#define WS "/home/user"
#define BIG_BYTES (50u * 1024 * 1024)
#define NFILES 200 /* regular files, the big and the empty one included */

static const char *const flavors[] = { "e2b", "cube", "daytona" };
static const sk_provider_type types[] = { SK_PROVIDER_E2B, SK_PROVIDER_CUBE, SK_PROVIDER_DAYTONA };

typedef struct sim {
	pid_t pid;
	char url[128];
	sk_provider *p;
} sim;

static sim sims[3];
static char db[64];
static char mongo_uri[128];
static char cfg_path[600];
static pid_t keeper_pid;
static int keeper_port;
static sk_store *store;

/* ---- simulators and clients ---- */

static sk_provider *
client(int f, const char *url)
{
	sk_provider_config c = { 0 };
	sk_provider *p = NULL;
	sk_error err;

	c.name = (char *)flavors[f];
	c.type = types[f];
	c.api_url = (char *)url;
	c.sandbox_url = (char *)url;
	c.domain = "e2b.app";
	c.api_key_env = KEY_VAR;
	c.max_in_flight = 64;
	c.qps = 500;
	c.burst = 1000;
	c.request_timeout_ms = 20000;
	c.sandbox_timeout_ms = 3600000;
	sk_error_clear(&err);
	ck_assert_msg(sk_provider_new(&c, &p, &err) == 0, "sk_provider_new: %s", err.message);
	return p;
}

static long
admin_post(const sim *s, const char *path, const char *json)
{
	return sk_test_post_json(s->url, path, json);
}

/* The state of id at a simulator: running, paused, or gone (404). */
static sk_sandbox_state
state_at(int f, const char *id)
{
	sk_sandbox sb;
	sk_error err;
	sk_sandbox_state st;
	int rc;

	memset(&sb, 0, sizeof(sb));
	sk_error_clear(&err);
	rc = sk_sandbox_get(sims[f].p, id, &sb, &err);
	st = rc == SK_ENOTFOUND ? SK_SANDBOX_GONE : sb.state;
	ck_assert_msg(rc == 0 || rc == SK_ENOTFOUND, "get %s: %s", id, err.message);
	sk_sandbox_dispose(&sb);
	return st;
}

static void
sandbox_at(int f, const char *id, sk_sandbox *out)
{
	sk_error err;

	memset(out, 0, sizeof(*out));
	sk_error_clear(&err);
	ck_assert_msg(sk_sandbox_get(sims[f].p, id, out, &err) == 0, "get %s: %s", id, err.message);
}

/* ---- the workspace: deterministic content, written and checked streamed ---- */

typedef struct gen {
	uint32_t seed;
	uint64_t len, off;
} gen;

static unsigned char
gen_byte(uint32_t seed, uint64_t i)
{
	uint64_t x = (i / 8 + 1) * 0x9E3779B97F4A7C15ULL ^ seed;

	x ^= x >> 31;
	x *= 0xBF58476D1CE4E5B9ULL;
	x ^= x >> 29;
	return (unsigned char)(x >> (8 * (i % 8)));
}

static int64_t
gen_read(void *payload, void *buf, size_t n)
{
	gen *g = payload;
	size_t k = g->len - g->off < n ? (size_t)(g->len - g->off) : n;

	for (size_t i = 0; i < k; i++)
		((unsigned char *)buf)[i] = gen_byte(g->seed, g->off + i);
	g->off += k;
	return (int64_t)k;
}

/* Compares what is read with the generator; counts mismatches. */
typedef struct cmp {
	gen g;
	uint64_t bad;
} cmp;

static int
cmp_sink(void *payload, const void *buf, size_t n)
{
	cmp *c = payload;

	for (size_t i = 0; i < n; i++)
		if (((const unsigned char *)buf)[i] != gen_byte(c->g.seed, c->g.off + i))
			c->bad++;
	c->g.off += n;
	return 0;
}

/* File i of the workspace: its path and size (0: the empty file; 1: the big one). */
static void
file_of(int i, char *path, size_t len, uint64_t *size)
{
	if (i == 0) {
		snprintf(path, len, WS "/empty");
		*size = 0;
	} else if (i == 1) {
		snprintf(path, len, WS "/data/big.bin");
		*size = BIG_BYTES;
	} else {
		snprintf(path, len, WS "/src/d%d/sub%d/f%03d.txt", i % 7, i % 3, i);
		*size = (uint64_t)(i * 37 % 4000) + 1;
	}
}

static void
put(int f, const sk_sandbox *sb, const sk_file_entry *e, gen *g)
{
	sk_error err;

	sk_error_clear(&err);
	ck_assert_msg(sk_sandbox_write_file(sims[f].p, sb, e, g ? gen_read : NULL, g, &err) == 0,
	        "write %s: %s", e->path, err.message);
}

static void
seed_workspace(int f, const char *id)
{
	sk_sandbox sb;
	sk_file_entry link = { .path = WS "/latest",
		.type = SK_FILE_SYMLINK,
		.mode = 0777,
		.link_target = "data/big.bin" };

	sandbox_at(f, id, &sb);
	for (int i = 0; i < NFILES; i++) {
		char path[256];
		sk_file_entry e = { .path = path, .type = SK_FILE_REGULAR, .mode = 0644 };
		gen g = { (uint32_t)i + 1, 0, 0 };
		file_of(i, path, sizeof(path), &e.size);
		g.len = e.size;
		put(f, &sb, &e, &g);
	}
	put(f, &sb, &link, NULL);
	sk_sandbox_dispose(&sb);
}

/* Every file identical (bytes), the symlink's target kept. */
static void
assert_workspace(int f, const char *id)
{
	sk_sandbox sb;
	sk_file_list l;
	sk_error err;
	int regular = 0;

	sandbox_at(f, id, &sb);
	for (int i = 0; i < NFILES; i++) {
		char path[256];
		uint64_t size;
		cmp c = { { (uint32_t)i + 1, 0, 0 }, 0 };
		file_of(i, path, sizeof(path), &size);
		sk_error_clear(&err);
		ck_assert_msg(sk_sandbox_read_file(sims[f].p, &sb, path, cmp_sink, &c, &err) == 0,
		        "read %s at %s: %s", path, flavors[f], err.message);
		ck_assert_msg(c.g.off == size && c.bad == 0, "%s at %s: %llu bytes, %llu differ",
		        path, flavors[f], (unsigned long long)c.g.off, (unsigned long long)c.bad);
	}
	ck_assert_msg(
	        sk_sandbox_list_files(sims[f].p, &sb, WS, &l, &err) == 0, "list: %s", err.message);
	for (size_t i = 0; i < l.len; i++) {
		/* the workspace marker the controller wrote at create moves along */
		if (strcmp(l.items[i].path, WS "/.spacekeeper/workspace.json") == 0)
			continue;
		if (l.items[i].type == SK_FILE_REGULAR)
			regular++;
		if (strcmp(l.items[i].path, WS "/latest") == 0) {
			ck_assert_int_eq(l.items[i].type, SK_FILE_SYMLINK);
			ck_assert_str_eq(l.items[i].link_target, "data/big.bin");
		}
	}
	ck_assert_int_eq(regular, NFILES);
	sk_file_list_free(&l);
	sk_sandbox_dispose(&sb);
}

/* ---- the controller ---- */

static void
write_config(void)
{
	char yaml[4096];
	size_t off = 0;

	keeper_port = sk_test_free_port();
	off += (size_t)snprintf(yaml + off, sizeof(yaml) - off,
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: ControllerConfig\nproviders:\n");
	for (int f = 0; f < 3; f++)
		off += (size_t)snprintf(yaml + off, sizeof(yaml) - off,
		        "  - name: %s\n    type: %s\n    apiURL: %s\n    sandboxURL: %s\n"
		        "    apiKeyEnv: " KEY_VAR "\n    requestTimeout: 20s\n"
		        "    sandboxTimeout: 1h\n",
		        flavors[f], flavors[f], sims[f].url, sims[f].url);
	snprintf(yaml + off, sizeof(yaml) - off,
	        "controller:\n  workers: 4\n  resyncPeriod: 1s\n  listen: 127.0.0.1:%d\n"
	        "  connectListen: 127.0.0.1:0\n", /* not the default 9091: suites run side by side */
	        keeper_port);
	snprintf(cfg_path, sizeof(cfg_path), "%s", sk_test_write_file("migrate.yaml", yaml));
}

static void
keeper_start(void)
{
	static int runs;
	char log[700];
	const char *env[] = { KEY_VAR "=" KEY, NULL };
	const char *argv[] = { "spacekeeper", "--config", cfg_path, "--mongodb-uri", mongo_uri,
		"--database", db, "--poll", "200ms", NULL };

	snprintf(
	        log, sizeof(log), "%s/spacekeeper-migrate-%s-%d.log", sk_test_tmpdir(), db, ++runs);
	keeper_pid = sk_test_spawn(argv, env, log);
	ck_assert_msg(
	        sk_test_wait_port(keeper_port, 20000), "spacekeeper did not listen (%s)", log);
}

static int
spacectl(const char *const *args, char **out)
{
	return sk_test_spacectl(mongo_uri, db, args, out);
}

static void
apply_space(const char *provider, const char *tmpl, const char *extra)
{
	char yaml[1024], path[600];
	const char *args[] = { "apply", "-f", path, NULL };

	snprintf(yaml, sizeof(yaml),
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\nmetadata:\n  name: alice\n"
	        "spec:\n  userID: alice\n  provider: %s\n  template: %s\n"
	        "  lifecycle: {idleTimeout: 0s}\n  workspace: {paths: [" WS "]}\n"
	        "  migration:\n    whenIdleFor: 0s\n%s",
	        provider, tmpl, extra ? extra : "    keepSourceFor: 1h\n");
	snprintf(path, sizeof(path), "%s", sk_test_write_file("alice.yaml", yaml));
	ck_assert_int_eq(spacectl(args, NULL), 0);
}

static sk_userspace *
stored(void)
{
	sk_userspace *us = NULL;
	sk_error err;

	sk_error_clear(&err);
	ck_assert_msg(sk_store_get(store, "alice", &us, &err) == 0, "get: %s", err.message);
	return us;
}

/* Waits for a binding at provider f; returns the sandbox id (caller frees). */
static char *
wait_bound(const char *provider, int timeout_s)
{
	for (int i = 0; i < timeout_s * 5; i++) {
		sk_userspace *us = stored();
		char *id = NULL;
		if (us->status.sandbox_id != NULL &&
		        strcmp(us->status.provider ? us->status.provider : us->spec.provider,
		                provider) == 0 &&
		        us->status.phase == SK_PHASE_RUNNING)
			id = sk_strdup(us->status.sandbox_id);
		sk_userspace_free(us);
		if (id != NULL)
			return id;
		usleep(200000);
	}
	ck_abort_msg("no binding at %s after %d s", provider, timeout_s);
	return NULL;
}

/* Polls until status.migration reaches one of the phases; checks at every
 * poll that the binding is the source until the switch and the target after
 * it, never anything else, never back. Returns the last phase. */
typedef struct move_watch {
	const char *source;
	char target[128];
	bool switched;
	int polls;
} move_watch;

static sk_migration_phase
watch_until(move_watch *w, sk_migration_phase a, sk_migration_phase b, int timeout_s)
{
	for (int i = 0; i < timeout_s * 10; i++) {
		sk_userspace *us = stored();
		const sk_migration_status *m = &us->status.migration;
		sk_migration_phase ph = m->phase;
		const char *bound = us->status.sandbox_id;

		w->polls++;
		if (m->target.sandbox_id != NULL && w->target[0] == '\0')
			snprintf(w->target, sizeof(w->target), "%s", m->target.sandbox_id);
		ck_assert_ptr_nonnull(bound);
		if (strcmp(bound, w->source) != 0) {
			ck_assert_msg(w->target[0] && strcmp(bound, w->target) == 0,
			        "bound to %s: neither source %s nor target %s", bound, w->source,
			        w->target);
			w->switched = true;
		} else {
			ck_assert_msg(!w->switched, "binding went back to the source");
		}
		sk_userspace_free(us);
		if (ph == a || ph == b)
			return ph;
		usleep(100000);
	}
	ck_abort_msg("migration did not reach %s/%s in %d s", sk_migration_phase_name(a),
	        sk_migration_phase_name(b), timeout_s);
	return SK_MIG_NONE;
}

static void
setup(void)
{
	const char *sim_args[3][8] = {
		{ "--flavor", "e2b", "--api-key", KEY, NULL },
		{ "--flavor", "cube", "--api-key", KEY, NULL },
		{ "--flavor", "daytona", "--api-key", KEY, NULL },
	};
	sk_store_options o = SK_STORE_OPTIONS_INIT;
	sk_error err;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	setenv(KEY_VAR, KEY, 1);
	snprintf(db, sizeof(db), "%s", sk_test_unique_db());
	snprintf(mongo_uri, sizeof(mongo_uri), "%s", sk_test_mongodb_uri());
	for (int f = 0; f < 3; f++) {
		sims[f].pid = sk_test_sim_start(sim_args[f], sims[f].url, sizeof(sims[f].url));
		sims[f].p = client(f, sims[f].url);
	}
	write_config();
	o.uri = mongo_uri;
	o.database = db;
	sk_error_clear(&err);
	ck_assert_msg(sk_store_open(&store, &o, &err) == 0, "store: %s", err.message);
	keeper_start();
}

static void
teardown(void)
{
	if (keeper_pid > 0)
		sk_test_stop(keeper_pid, true);
	keeper_pid = 0;
	for (int f = 0; f < 3; f++) {
		sk_provider_free(sims[f].p);
		if (sims[f].pid > 0)
			sk_test_stop(sims[f].pid, true);
		sims[f].pid = 0;
	}
	sk_store_close(store);
	store = NULL;
	curl_global_cleanup();
}

/* ---- tests ---- */

/* e2b -> cube (and e2b -> daytona): files identical, one binding throughout,
 * the source paused, then deleted after keepSourceFor. */
START_TEST(test_move_provider)
{
	int to = _i + 1;
	char *src = NULL;
	move_watch w = { 0 };
	sk_userspace *us;

	apply_space("e2b", "base", "    keepSourceFor: 6s\n");
	src = wait_bound("e2b", 60);
	seed_workspace(0, src);
	apply_space(flavors[to], "base", "    keepSourceFor: 6s\n");
	w.source = src;
	ck_assert_int_eq(watch_until(&w, SK_MIG_RETIRING, SK_MIG_DONE, 240), SK_MIG_RETIRING);
	ck_assert(w.switched);
	us = stored();
	ck_assert_str_eq(us->status.provider, flavors[to]);
	ck_assert_str_eq(us->status.sandbox_id, w.target);
	/* the files, the symlink, 30 directories (data, src, src/dN, src/dN/subM),
	 * and the workspace marker with its directory */
	ck_assert_int_eq(us->status.migration.files_total, NFILES + 1 + 30 + 2);
	ck_assert_int_eq(us->status.migration.files_done, us->status.migration.files_total);
	ck_assert_int_ge(us->status.migration.bytes_total, BIG_BYTES);
	sk_userspace_free(us);
	assert_workspace(to, w.target);
	/* the source: paused while kept, then deleted */
	for (int i = 0; i < 50 && state_at(0, src) == SK_SANDBOX_RUNNING; i++)
		usleep(100000);
	ck_assert_int_ne(state_at(0, src), SK_SANDBOX_RUNNING);
	ck_assert_int_eq(watch_until(&w, SK_MIG_DONE, SK_MIG_DONE, 60), SK_MIG_DONE);
	ck_assert_int_eq(state_at(0, src), SK_SANDBOX_GONE);
	ck_assert_int_eq(state_at(to, w.target), SK_SANDBOX_RUNNING);
	free(src);
}
END_TEST

/* Whether us has condition Migrated with status. */
static bool
migrated_is(const sk_userspace *us, const char *status)
{
	const sk_condition *c = sk_userspace_condition(us, SK_COND_MIGRATED);

	return c != NULL && strcmp(c->status, status) == 0;
}

/* A 504 at the target's file API that does not stop: the engine retries,
 * then the migration aborts; the source stays bound, running, untouched,
 * and the target is killed. */
START_TEST(test_abort_on_504)
{
	const char *wide[] = { "get", "userspaces", "alice", "-o", "wide", NULL };
	const char *describe[] = { "describe", "userspace", "alice", NULL };
	const char *status[] = { "rollout", "status", "userspace", "alice", "--timeout", "5s",
		NULL };
	char *src = NULL, *out = NULL;
	move_watch w = { 0 };
	sk_userspace *us;

	apply_space("e2b", "base", NULL);
	src = wait_bound("e2b", 60);
	seed_workspace(0, src);
	ck_assert_int_eq(admin_post(&sims[1], "/_sim/faults",
	                         "{\"errors\": {\"files\": {\"status\": 504}}}"),
	        200);
	apply_space("cube", "base", NULL);
	w.source = src;
	ck_assert_int_eq(watch_until(&w, SK_MIG_ABORTED, SK_MIG_ABORTED, 240), SK_MIG_ABORTED);
	ck_assert(!w.switched);
	/* the engine writes phase Aborted; Migrated turns False in the plan of
	 * the reconcile after it: wait for that one */
	us = stored();
	for (int i = 0; i < 300 && !migrated_is(us, "False"); i++) {
		sk_userspace_free(us);
		usleep(100000);
		us = stored();
	}
	ck_assert_str_eq(us->status.sandbox_id, src);
	ck_assert_str_eq(us->status.provider, "e2b");
	ck_assert_ptr_nonnull(us->status.migration.reason);
	ck_assert_ptr_nonnull(sk_userspace_condition(us, SK_COND_MIGRATED));
	ck_assert_str_eq(sk_userspace_condition(us, SK_COND_MIGRATED)->status, "False");
	sk_userspace_free(us);
	ck_assert_int_eq(state_at(0, src), SK_SANDBOX_RUNNING);
	ck_assert_int_eq(state_at(1, w.target), SK_SANDBOX_GONE);
	assert_workspace(0, src);
	/* visible: get -o wide, describe, rollout status (exit 1) */
	ck_assert_int_eq(spacectl(wide, &out), 0);
	ck_assert_ptr_nonnull(strstr(out, "MIGRATION"));
	ck_assert_ptr_nonnull(strstr(out, "Aborted"));
	free(out);
	ck_assert_int_eq(spacectl(describe, &out), 0);
	ck_assert_ptr_nonnull(strstr(out, "Migration:"));
	ck_assert_ptr_nonnull(strstr(out, "Reason:"));
	ck_assert_ptr_nonnull(strstr(out, "MigrationAborted"));
	free(out);
	ck_assert_int_eq(spacectl(status, &out), 1);
	ck_assert_ptr_nonnull(strstr(out, "migration aborted"));
	free(out);
	free(src);
}
END_TEST

/* SIGKILL of the controller while it copies, then a restart: the migration
 * completes (files identical, one binding) or aborts (source bound). */
START_TEST(test_sigkill_during_copy)
{
	char *src = NULL;
	move_watch w = { 0 };
	sk_migration_phase end;

	apply_space("e2b", "base", NULL);
	src = wait_bound("e2b", 60);
	seed_workspace(0, src);
	/* a slow target, so the kill lands in the copy */
	ck_assert_int_eq(admin_post(&sims[1], "/_sim/faults",
	                         "{\"latency\": {\"files\": {\"fixed_ms\": 30}}}"),
	        200);
	apply_space("cube", "base", NULL);
	w.source = src;
	ck_assert_int_eq(watch_until(&w, SK_MIG_COPYING, SK_MIG_COPYING, 120), SK_MIG_COPYING);
	ck_assert_int_eq(kill(keeper_pid, SIGKILL), 0);
	sk_test_wait(keeper_pid, 10);
	keeper_pid = 0;
	ck_assert_int_eq(
	        admin_post(&sims[1], "/_sim/faults", "{\"latency\": {\"files\": null}}"), 200);
	keeper_start();
	end = watch_until(&w, SK_MIG_RETIRING, SK_MIG_ABORTED, 240);
	if (end == SK_MIG_RETIRING)
		assert_workspace(1, w.target);
	else
		assert_workspace(0, src);
	free(src);
}
END_TEST

/* rollout restart after a template change (updateStrategy Report): the
 * files move to a sandbox of the new template; rollout status exits 0. */
START_TEST(test_rollout_restart_template)
{
	const char *restart[] = { "rollout", "restart", "userspace", "alice", "--now", NULL };
	const char *status[] = { "rollout", "status", "userspace", "alice", "--timeout", "4m",
		NULL };
	char *src = NULL, *out = NULL;
	move_watch w = { 0 };
	sk_sandbox sb;

	apply_space("e2b", "base", NULL);
	src = wait_bound("e2b", 60);
	seed_workspace(0, src);
	apply_space("e2b", "python", NULL);
	ck_assert_int_eq(spacectl(restart, NULL), 0);
	ck_assert_int_eq(spacectl(status, &out), 0);
	ck_assert_ptr_nonnull(strstr(out, "successfully rolled out"));
	free(out);
	w.source = src;
	ck_assert_int_eq(watch_until(&w, SK_MIG_RETIRING, SK_MIG_DONE, 10), SK_MIG_RETIRING);
	sandbox_at(0, w.target, &sb);
	ck_assert_str_eq(sb.alias ? sb.alias : sb.template_id, "python");
	sk_sandbox_dispose(&sb);
	assert_workspace(0, w.target);
	/* the source is kept (keepSourceFor 1h), paused, and not a duplicate */
	for (int i = 0; i < 50 && state_at(0, src) == SK_SANDBOX_RUNNING; i++)
		usleep(100000);
	ck_assert_int_eq(state_at(0, src), SK_SANDBOX_PAUSED);
	free(src);
}
END_TEST

/* spacectl plan for a space whose spec.provider changed (the controller
 * stopped, so nothing moves meanwhile): the migration and its steps, the
 * current one marked. */
START_TEST(test_plan_shows_migration)
{
	const char *plan[] = { "plan", "--config", cfg_path, "alice", NULL };
	const char *steps[] = { "wait until idle for spec.migration.whenIdleFor",
		"create the target sandbox", "copy spec.workspace.paths",
		"verify (file count, bytes, SHA-256 per file)", "switch the binding to the target",
		"pause the source; delete it after keepSourceFor" };
	char *src = NULL, *out = NULL, *at = NULL, head[256];
	int marked = 0;

	apply_space("e2b", "base", NULL);
	src = wait_bound("e2b", 60);
	ck_assert_int_eq(sk_test_stop(keeper_pid, false), 0);
	keeper_pid = 0;
	apply_space("cube", "base", NULL);
	ck_assert_int_eq(spacectl(plan, &out), 0);
	snprintf(head, sizeof(head), "    migration (%s): e2b/base %s -> cube/base, keep source ",
	        SK_TRIGGER_PROVIDER, src);
	at = strstr(out, head);
	ck_assert_msg(at != NULL, "no \"%s\" in:\n%s", head, out);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		char cur[160], other[160];
		snprintf(cur, sizeof(cur), "\n      -> %s\n", steps[i]);
		snprintf(other, sizeof(other), "\n         %s\n", steps[i]);
		ck_assert_msg(strstr(at, cur) || strstr(at, other), "no step \"%s\" in:\n%s",
		        steps[i], out);
		marked += strstr(at, cur) != NULL;
		/* in order */
		at = strstr(at, steps[i]);
	}
	ck_assert_msg(marked == 1, "%d steps marked current in:\n%s", marked, out);
	free(out);
	free(src);
}
END_TEST

/* ---- spec.network ---- */

static size_t
collect_body(char *data, size_t size, size_t n, void *arg)
{
	return sk_buf_append(arg, data, size * n) == 0 ? size * n : 0;
}

/* Runs cmd in sandbox id at flavour f as an SDK does (envd's
 * process.Process/Start; Daytona's toolbox process/execute); its exit code. */
static int
run_in(int f, const char *id, const char *cmd)
{
	sk_buf b = SK_BUF_INIT(1 << 20), body = SK_BUF_INIT(1 << 16);
	struct curl_slist *h = NULL;
	CURL *c = curl_easy_init();
	char url[300], hdr[160];
	json_t *msg;
	const char *code;
	int rc = 0;

	if (types[f] == SK_PROVIDER_DAYTONA) {
		snprintf(url, sizeof(url), "%s/toolbox/%s/process/execute", sims[f].url, id);
		h = curl_slist_append(h, "Authorization: Bearer " KEY);
		h = curl_slist_append(h, "Content-Type: application/json");
		msg = json_pack("{s:s}", "command", cmd);
	} else {
		unsigned char env[5] = { 0 };
		snprintf(url, sizeof(url), "%s/process.Process/Start", sims[f].url);
		snprintf(hdr, sizeof(hdr), "E2b-Sandbox-Id: %s", id);
		h = curl_slist_append(h, hdr);
		h = curl_slist_append(h, "E2b-Sandbox-Port: 49983");
		h = curl_slist_append(h, "Content-Type: application/connect+json");
		msg = json_pack("{s:{s:s,s:[s,s,s]}}", "process", "cmd", "/bin/bash", "args", "-l",
		        "-c", cmd);
		sk_buf_append(&body, env, sizeof(env)); /* the envelope, its length below */
	}
	{
		char *text = json_dumps(msg, JSON_COMPACT);
		size_t n = strlen(text);
		sk_buf_append(&body, text, n);
		if (types[f] != SK_PROVIDER_DAYTONA) {
			body.data[1] = (char)(n >> 24), body.data[2] = (char)(n >> 16);
			body.data[3] = (char)(n >> 8), body.data[4] = (char)n;
		}
		free(text);
		json_decref(msg);
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)body.len);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);
	sk_buf_append(&b, "", 0);
	/* both answers carry "exitCode": N, left out when 0 (envd's proto3 JSON);
	 * envd's frames have NUL bytes in their headers */
	code = memmem(b.data, b.len, "\"exitCode\":", 11);
	if (code != NULL)
		rc = atoi(code + strlen("\"exitCode\":"));
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	sk_buf_dispose(&b);
	sk_buf_dispose(&body);
	return rc;
}

static int
count_sink(void *payload, const void *buf, size_t n)
{
	return 0;
}

/* The network lines of a space at flavour f with allowOut [cidr]. */
static void
apply_network(int f, const char *cidr, const char *strategy)
{
	char extra[512];

	snprintf(extra, sizeof(extra),
	        "    keepSourceFor: 1h\n  updateStrategy: %s\n"
	        "  network: {internet: Deny, allowOut: [\"%s\"]}\n",
	        strategy, cidr);
	apply_space(flavors[f], "base", extra);
}

static bool
has_network_drift(void)
{
	sk_userspace *us = stored();
	bool found = false;

	for (size_t i = 0; i < us->status.n_drift; i++)
		found = found ||
		        (strcmp(us->status.drift[i].type, SK_DRIFT_SPEC) == 0 &&
		                strstr(us->status.drift[i].detail,
		                        "spec wants internet Deny, "
		                        "allowOut 192.168.0.0/16"));
	sk_userspace_free(us);
	return found;
}

/* What the provider holds for id, as its detail reports it (E2B, Daytona)
 * or as the create-time digest says (Cube). */
static bool
policy_at(int f, const char *id, const char *cidr)
{
	sk_network want = { .internet = SK_NET_DENY };
	sk_sandbox sb;
	char digest[17];
	const char *have;
	bool ok;

	sk_strlist_add(&want.allow_out, cidr);
	sandbox_at(f, id, &sb);
	sk_network_digest(&want, digest);
	have = sk_kvlist_get(&sb.metadata, SK_META_NETWORK);
	ok = sb.network_known ? sk_network_satisfies(&want, &sb.network)
	                      : have != NULL && strcmp(have, digest) == 0;
	sk_sandbox_dispose(&sb);
	sk_network_dispose(&want);
	return ok;
}

static bool
eventually_policy(int f, const char *id, const char *cidr, int timeout_s)
{
	for (int i = 0; i < timeout_s * 5; i++) {
		if (policy_at(f, id, cidr))
			return true;
		usleep(200000);
	}
	return false;
}

/* plan, describe and the status page show the policy and the difference. */
static void
assert_network_shown(void)
{
	const char *plan[] = { "plan", "--config", cfg_path, "alice", NULL };
	const char *describe[] = { "describe", "userspace", "alice", NULL };
	const char *want = "spec wants internet Deny, allowOut 192.168.0.0/16";
	char url[128], *out = NULL;
	sk_buf page = SK_BUF_INIT(16 << 20);
	CURL *c = curl_easy_init();

	ck_assert_int_eq(spacectl(plan, &out), 0);
	ck_assert_msg(strstr(out, want) != NULL, "plan:\n%s", out);
	free(out);
	ck_assert_int_eq(spacectl(describe, &out), 0);
	ck_assert_msg(strstr(out, "Network:") && strstr(out, "192.168.0.0/16") && strstr(out, want),
	        "describe:\n%s", out);
	free(out);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/spaces/alice", keeper_port);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &page);
	ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);
	curl_easy_cleanup(c);
	sk_buf_append(&page, "", 0);
	ck_assert_msg(strstr(page.data, "&quot;allowOut&quot;") && strstr(page.data, want),
	        "status page:\n%s", page.data);
	sk_buf_dispose(&page);
}

/* A space with internet Deny and allowOut [10.0.0.0/8] on each flavour:
 * created with that policy, which its commands meet; allowOut changed to
 * 192.168.0.0/16: live on e2b (same sandbox), by migration on cube (files
 * kept, a new sandbox), reported only on daytona (Report). */
START_TEST(test_network_policy)
{
	int f = _i;
	const char *strategy = f == 0 ? "Report" : f == 1 ? "Migrate" : "Report";
	char note[] = WS "/notes.txt";
	sk_file_entry e = { .path = note, .type = SK_FILE_REGULAR, .mode = 0644, .size = 0 };
	char *id, *now_id;
	sk_sandbox sb;

	apply_network(f, "10.0.0.0/8", strategy);
	id = wait_bound(flavors[f], 60);
	ck_assert_msg(policy_at(f, id, "10.0.0.0/8"), "%s: created without the policy", flavors[f]);
	ck_assert_int_eq(run_in(f, id, "curl -s http://10.1.2.3/"), 0);
	ck_assert_int_eq(run_in(f, id, "curl -s http://93.184.216.34/"), 7);
	if (f == 1) { /* a file the migration must carry */
		sandbox_at(f, id, &sb);
		put(f, &sb, &e, NULL);
		sk_sandbox_dispose(&sb);
	}
	apply_network(f, "192.168.0.0/16", strategy);
	if (f == 0) { /* e2b: live, the same sandbox */
		ck_assert_msg(eventually_policy(f, id, "192.168.0.0/16", 30), "not applied live");
		now_id = wait_bound(flavors[f], 10);
		ck_assert_str_eq(now_id, id);
		free(now_id);
		ck_assert_int_eq(run_in(f, id, "curl -s http://10.1.2.3/"), 7);
		ck_assert_int_eq(run_in(f, id, "curl -s http://192.168.1.1/"), 0);
	} else if (f == 1) { /* cube: migrated, files kept */
		move_watch w = { .source = id };
		ck_assert_int_eq(
		        watch_until(&w, SK_MIG_RETIRING, SK_MIG_DONE, 120), SK_MIG_RETIRING);
		ck_assert(w.switched);
		ck_assert_str_ne(w.target, id);
		ck_assert(policy_at(f, w.target, "192.168.0.0/16"));
		ck_assert_int_eq(state_at(f, w.target), SK_SANDBOX_RUNNING);
		ck_assert_int_eq(run_in(f, w.target, "curl -s http://192.168.1.1/"), 0);
		ck_assert_int_eq(run_in(f, w.target, "curl -s http://10.1.2.3/"), 7);
		sandbox_at(f, w.target, &sb);
		ck_assert_int_eq(
		        sk_sandbox_read_file(sims[f].p, &sb, note, count_sink, NULL, NULL), 0);
		sk_sandbox_dispose(&sb);
	} else { /* daytona, Report: drift, the same sandbox and policy */
		for (int i = 0; i < 100 && !has_network_drift(); i++)
			usleep(200000);
		ck_assert_msg(has_network_drift(), "no SpecMismatch for the network");
		now_id = wait_bound(flavors[f], 10);
		ck_assert_str_eq(now_id, id);
		free(now_id);
		ck_assert(policy_at(f, id, "10.0.0.0/8"));
		assert_network_shown();
	}
	free(id);
}
END_TEST

Suite *
sk_suite_migrate_e2e(void)
{
	Suite *s = suite_create("migrate_e2e");
	TCase *tc = tcase_create("migrate");

	tcase_set_timeout(tc, 600);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_move_provider, 0, 2);
	tcase_add_test(tc, test_abort_on_504);
	tcase_add_test(tc, test_sigkill_during_copy);
	tcase_add_test(tc, test_rollout_restart_template);
	tcase_add_test(tc, test_plan_shows_migration);
	suite_add_tcase(s, tc);
	tc = tcase_create("network");
	tcase_set_timeout(tc, 300);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_network_policy, 0, 3);
	suite_add_tcase(s, tc);
	return s;
}
