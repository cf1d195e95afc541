/* Unit tests for the ControllerConfig loader (pkg/api/config.c) and API keys. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../testutil.h"
#include "api/config.h"
#include "api/errlist.h"
#include "api/flags.h"

Suite *sk_suite_config(void);

#define HEAD "apiVersion: spacekeeper.dev/v1alpha1\nkind: ControllerConfig\n"
#define ITEM "  - name: default\n    type: e2b\n    apiURL: http://127.0.0.1:3000\n"
#define P0 "providers:\n" ITEM

static sk_controller_config *
load_ok(const char *name, const char *yaml)
{
	const char *path = sk_test_write_file(name, yaml);
	sk_controller_config *c = NULL;
	sk_errlist errs = { 0 };
	sk_error err;
	sk_buf b = SK_BUF_INIT(0);

	sk_error_clear(&err);
	if (sk_config_load(path, &c, &errs, &err) != 0) {
		sk_errlist_format(&errs, &b);
		ck_abort_msg("%s: %s\n%s", name, err.message, b.data ? b.data : "");
	}
	sk_errlist_dispose(&errs);
	return c;
}

START_TEST(example_config_loads)
{
	sk_controller_config *c = NULL;
	sk_errlist errs = { 0 };
	sk_error err;
	const sk_provider_config *p;

	sk_error_clear(&err);
	ck_assert_int_eq(
	        sk_config_load(sk_test_path("manifests/config/spacekeeper.yaml"), &c, &errs, &err),
	        0);
	ck_assert_uint_eq(errs.len, 0);
	ck_assert_str_eq(c->mongodb_uri, "mongodb://127.0.0.1:27017");
	ck_assert_str_eq(c->database, "spacekeeper");
	ck_assert_uint_eq(c->n_providers, 1);
	p = sk_config_provider(c, "default");
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(p->type, SK_PROVIDER_E2B);
	ck_assert_str_eq(p->api_url, "http://127.0.0.1:3000");
	ck_assert_str_eq(p->sandbox_url, "http://127.0.0.1:3000");
	ck_assert_str_eq(p->api_key_env, "E2B_API_KEY");
	ck_assert_ptr_null(p->api_key_file);
	ck_assert_int_eq(p->max_in_flight, 64);
	ck_assert(p->qps == 200.0);
	ck_assert_int_eq(p->burst, 400);
	ck_assert_int_eq(p->request_timeout_ms, 30000);
	ck_assert_int_eq(p->sandbox_timeout_ms, 3600000);
	ck_assert_int_eq(p->orphan_grace_ms, 600000);
	ck_assert(!p->insecure_skip_tls_verify);
	ck_assert_int_eq(c->workers, 8);
	ck_assert_int_eq(c->resync_ms, 30000);
	ck_assert_str_eq(c->listen, "127.0.0.1:9090");
	ck_assert_ptr_null(sk_config_provider(c, "nope"));
	sk_config_free(c);
}
END_TEST

START_TEST(demo_config_loads)
{
	sk_controller_config *c = NULL;
	sk_errlist errs = { 0 };
	sk_error err;

	sk_error_clear(&err);
	ck_assert_int_eq(
	        sk_config_load(sk_test_path("manifests/config/demo.yaml"), &c, &errs, &err), 0);
	ck_assert_uint_eq(c->n_providers, 1);
	ck_assert_str_eq(c->providers[0].api_url, "http://127.0.0.1:3000");
	ck_assert_str_eq(c->providers[0].api_key_env, "E2B_API_KEY");
	ck_assert_int_eq(c->providers[0].type, SK_PROVIDER_E2B);
	sk_config_free(c);
}
END_TEST

START_TEST(minimal_config_gets_defaults)
{
	sk_controller_config *c = load_ok("min.yaml", HEAD P0 "    apiKeyEnv: SOME_KEY\n");
	const sk_provider_config *p = &c->providers[0];

	ck_assert_str_eq(c->mongodb_uri, "mongodb://127.0.0.1:27017");
	ck_assert_str_eq(c->database, "spacekeeper");
	ck_assert_int_eq(c->workers, 8);
	ck_assert_int_eq(c->resync_ms, 30000);
	ck_assert_str_eq(c->listen, "127.0.0.1:9090");
	ck_assert_str_eq(p->domain, "e2b.app");
	ck_assert_ptr_null(p->sandbox_url);
	ck_assert_int_eq(p->max_in_flight, 64);
	ck_assert(p->qps == 200.0);
	ck_assert_int_eq(p->burst, 400);
	ck_assert_int_eq(p->request_timeout_ms, 30000);
	ck_assert_int_eq(p->sandbox_timeout_ms, 3600000);
	ck_assert(!p->delete_orphans);
	ck_assert_int_eq(p->max_running, 0);
	ck_assert(p->creates_per_second == 0);
	ck_assert_int_eq(p->max_queued, 1000);
	ck_assert(!p->has_price);
	sk_config_free(c);
}
END_TEST

START_TEST(capacity_and_price)
{
	sk_controller_config *c = load_ok("cap.yaml",
	        HEAD "providers:\n"
	             "  - name: a\n    type: cube\n    apiURL: http://c:1\n"
	             "    capacity: {maxRunning: 100, createsPerSecond: 0.5, maxQueued: 7}\n"
	             "    price: {runningPerHour: 0.12, pausedPerHour: 0.01}\n");

	ck_assert_int_eq(c->providers[0].max_running, 100);
	ck_assert(c->providers[0].creates_per_second == 0.5);
	ck_assert_int_eq(c->providers[0].max_queued, 7);
	ck_assert(c->providers[0].has_price);
	ck_assert(c->providers[0].price_running_per_hour == 0.12);
	ck_assert(c->providers[0].price_paused_per_hour == 0.01);
	sk_config_free(c);
}
END_TEST

START_TEST(full_config_values)
{
	sk_controller_config *c = load_ok("full.yaml",
	        HEAD
	        "mongodb: {uri: 'mongodb://db:27017', database: sk2}\n"
	        "providers:\n"
	        "  - name: a\n    type: cube\n    apiURL: https://cube.example:3000\n"
	        "    qps: 0.5\n    burst: 1\n    maxInFlight: 4096\n    requestTimeout: 1m30s\n"
	        "    insecureSkipTLSVerify: true\n    deleteOrphans: true\n"
	        "    orphanGracePeriod: 0s\n    domain: cube.app\n"
	        "  - name: b\n    type: daytona\n    apiURL: http://d:1\n    apiKeyFile: /k\n"
	        "controller: {workers: 256, resyncPeriod: 1h, listen: '0.0.0.0:0'}\n");

	ck_assert_str_eq(c->mongodb_uri, "mongodb://db:27017");
	ck_assert_str_eq(c->database, "sk2");
	ck_assert_uint_eq(c->n_providers, 2);
	ck_assert_int_eq(c->providers[0].type, SK_PROVIDER_CUBE);
	ck_assert(c->providers[0].qps == 0.5);
	ck_assert_int_eq(c->providers[0].burst, 1);
	ck_assert_int_eq(c->providers[0].max_in_flight, 4096);
	ck_assert_int_eq(c->providers[0].request_timeout_ms, 90000);
	ck_assert(c->providers[0].insecure_skip_tls_verify);
	ck_assert(c->providers[0].delete_orphans);
	ck_assert_int_eq(c->providers[0].orphan_grace_ms, 0);
	ck_assert_str_eq(c->providers[0].domain, "cube.app");
	ck_assert_int_eq(c->providers[1].type, SK_PROVIDER_DAYTONA);
	ck_assert_str_eq(c->providers[1].api_key_file, "/k");
	ck_assert_str_eq(c->providers[1].domain, "e2b.app");
	ck_assert_ptr_eq(sk_config_provider(c, "b"), &c->providers[1]);
	ck_assert_int_eq(c->workers, 256);
	ck_assert_int_eq(c->resync_ms, 3600000);
	sk_config_free(c);
}
END_TEST

START_TEST(cube_defaults)
{
	sk_controller_config *c = load_ok("cube.yaml",
	        HEAD "providers:\n  - {name: c, type: cube, apiURL: 'http://cube:3000'}\n");

	/* no key needed for CubeAPI; its data plane lives under cube.app */
	ck_assert_ptr_null(c->providers[0].api_key_env);
	ck_assert_ptr_null(c->providers[0].api_key_file);
	ck_assert_str_eq(c->providers[0].domain, "cube.app");
	sk_config_free(c);
}
END_TEST

START_TEST(default_config)
{
	sk_controller_config *c = sk_config_default();
	const sk_provider_config *p = sk_config_provider(c, "default");

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(p->type, SK_PROVIDER_E2B);
	ck_assert_str_eq(p->api_url, "http://127.0.0.1:3000");
	/* the data plane of the built-in provider is the local sandboxsim too
	 * (it was https://49983-<id>.e2b.app, false drift) */
	ck_assert_ptr_nonnull(p->sandbox_url);
	ck_assert_str_eq(p->sandbox_url, "http://127.0.0.1:3000");
	ck_assert_str_eq(p->api_key_env, "E2B_API_KEY");
	ck_assert_int_eq(p->request_timeout_ms, 30000);
	ck_assert_int_eq(c->workers, 8);
	sk_config_free(c);
	sk_config_free(NULL);
}
END_TEST

/* Each bad document: the expected error path and line (0: do not check). */
static const struct bad_case {
	const char *yaml;
	const char *path;
	int line;
	const char *msg; /* substring of the message */
} bad[] = {
	{ "apiVersion: v1\nkind: ControllerConfig\n" P0 "    apiKeyEnv: K\n", "apiVersion", 1,
	        "spacekeeper.dev/v1alpha1" },
	{ "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n" P0 "    apiKeyEnv: K\n", "kind",
	        2, "ControllerConfig" },
	{ "kind: ControllerConfig\n" P0 "    apiKeyEnv: K\n", "apiVersion", 0, "required" },
	{ HEAD "bogus: 1\n" P0 "    apiKeyEnv: K\n", "bogus", 3, "unknown field" },
	{ HEAD P0 "    apiKeyEnv: K\n    colour: red\n", "providers[0].colour", 8,
	        "unknown field" },
	{ HEAD P0 "    apiKeyEnv: K\n    maxInFlight: 0\n", "providers[0].maxInFlight", 8,
	        "1 and 4096" },
	{ HEAD P0 "    apiKeyEnv: K\n    maxInFlight: 4097\n", "providers[0].maxInFlight", 8,
	        "1 and 4096" },
	{ HEAD P0 "    apiKeyEnv: K\n    qps: 0\n", "providers[0].qps", 8, "> 0" },
	{ HEAD P0 "    apiKeyEnv: K\n    capacity: {maxRunning: -1}\n",
	        "providers[0].capacity.maxRunning", 8, "between 0 and" },
	{ HEAD P0 "    apiKeyEnv: K\n    capacity: {maxRuning: 5}\n",
	        "providers[0].capacity.maxRuning", 8, "unknown field" },
	{ HEAD P0 "    apiKeyEnv: K\n    price: {runningPerHour: cheap}\n",
	        "providers[0].price.runningPerHour", 8, "number" },
	{ HEAD P0 "    apiKeyEnv: K\n    qps: fast\n", "providers[0].qps", 8, "number" },
	{ HEAD P0 "    apiKeyEnv: K\n    burst: 0\n", "providers[0].burst", 8, "between" },
	{ HEAD P0 "    apiKeyEnv: K\n    requestTimeout: 30\n", "providers[0].requestTimeout", 8,
	        "duration" },
	{ HEAD P0 "    apiKeyEnv: K\n    requestTimeout: 1d\n", "providers[0].requestTimeout", 8,
	        "duration" },
	{ HEAD P0 "    apiKeyEnv: K\n    sandboxTimeout: 48h\n", "providers[0].sandboxTimeout", 8,
	        "between" },
	{ HEAD P0 "    apiKeyEnv: K\n    insecureSkipTLSVerify: yes please\n",
	        "providers[0].insecureSkipTLSVerify", 8, "true or false" },
	{ HEAD "providers:\n  - name: default\n    type: k8s\n    apiURL: http://x\n    apiKeyEnv: "
	       "K\n",
	        "providers[0].type", 5, "e2b, cube, daytona" },
	{ HEAD "providers:\n  - name: default\n    apiURL: http://x\n    apiKeyEnv: K\n",
	        "providers[0].type", 0, "required" },
	{ HEAD "providers:\n  - name: Default_1\n    type: e2b\n    apiURL: http://x\n    "
	       "apiKeyEnv: K\n",
	        "providers[0].name", 4, "DNS-1123" },
	{ HEAD "providers:\n  - name: default\n    type: e2b\n    apiURL: ftp://x\n    apiKeyEnv: "
	       "K\n",
	        "providers[0].apiURL", 6, "http" },
	{ HEAD P0 "    apiKeyEnv: K\n    sandboxURL: 127.0.0.1:3000\n", "providers[0].sandboxURL",
	        8, "http" },
	{ HEAD P0 "    apiKeyEnv: K\n    apiKeyFile: /k\n", "providers[0].apiKeyFile", 8,
	        "mutually exclusive" },
	{ HEAD P0, "providers[0]", 4, "apiKeyEnv or apiKeyFile" },
	{ HEAD P0 "    apiKeyEnv: 9BAD-NAME\n", "providers[0].apiKeyEnv", 7,
	        "environment variable" },
	{ HEAD P0 "    apiKeyEnv: K\n" ITEM "    apiKeyEnv: K\n", "providers[1].name", 8,
	        "duplicate" },
	{ HEAD "providers: []\n", "providers", 3, "non-empty" },
	{ HEAD "mongodb: {uri: 'http://x'}\n" P0 "    apiKeyEnv: K\n", "mongodb.uri", 3,
	        "mongodb://" },
	{ HEAD P0 "    apiKeyEnv: K\ncontroller: {workers: 0}\n", "controller.workers", 8,
	        "1 and 1024" },
	{ HEAD P0 "    apiKeyEnv: K\ncontroller: {workers: 1025}\n", "controller.workers", 8,
	        "1 and 1024" },
	{ HEAD P0 "    apiKeyEnv: K\ncontroller:\n  resyncPeriod: soon\n",
	        "controller.resyncPeriod", 9, "duration" },
	{ HEAD P0 "    apiKeyEnv: K\ncontroller:\n  listen: nowhere\n", "controller.listen", 9,
	        "HOST:PORT" },
};

START_TEST(bad_config_reports_path_and_line)
{
	const struct bad_case *bc = &bad[_i];
	const char *path;
	sk_controller_config *c = (sk_controller_config *)1;
	sk_errlist errs = { 0 };
	sk_error err;
	bool found = false;
	char name[32];
	sk_buf all = SK_BUF_INIT(0);

	snprintf(name, sizeof(name), "bad%d.yaml", _i);
	path = sk_test_write_file(name, bc->yaml);
	sk_error_clear(&err);
	ck_assert_int_eq(sk_config_load(path, &c, &errs, &err), SK_EINVALID);
	ck_assert_ptr_null(c);
	sk_errlist_format(&errs, &all);
	for (size_t i = 0; i < errs.len; i++) {
		const sk_field_error *e = &errs.items[i];
		if (strcmp(e->path, bc->path) != 0 || strstr(e->message, bc->msg) == NULL)
			continue;
		found = true;
		ck_assert_str_eq(e->file, path);
		if (bc->line)
			ck_assert_msg(e->line == bc->line, "case %d: %s at line %d, want %d", _i,
			        e->path, e->line, bc->line);
		ck_assert_int_gt(e->col, 0);
	}
	ck_assert_msg(found, "case %d: no error %s ~ %s in:\n%s", _i, bc->path, bc->msg,
	        all.data ? all.data : "(none)");
	sk_buf_dispose(&all);
	sk_errlist_dispose(&errs);
}
END_TEST

START_TEST(collects_every_error)
{
	const char *path = sk_test_write_file("many.yaml",
	        HEAD P0 "    apiKeyEnv: K\n    qps: -1\n    burst: 0\n    extra: 1\n"
	                "controller: {workers: 0}\n");
	sk_controller_config *c = NULL;
	sk_errlist errs = { 0 };
	sk_error err;

	ck_assert_int_eq(sk_config_load(path, &c, &errs, &err), SK_EINVALID);
	ck_assert_uint_ge(errs.len, 4);
	sk_errlist_dispose(&errs);
}
END_TEST

START_TEST(missing_file_and_bad_yaml)
{
	sk_controller_config *c = NULL;
	sk_errlist errs = { 0 };
	sk_error err;
	const char *path;

	sk_error_clear(&err);
	ck_assert_int_eq(sk_config_load("/nonexistent/sk.yaml", &c, &errs, &err), SK_EIO);
	ck_assert_ptr_null(c);
	path = sk_test_write_file("broken.yaml", HEAD "providers: [\n");
	ck_assert_int_eq(sk_config_load(path, &c, &errs, &err), SK_EINVALID);
	ck_assert_ptr_nonnull(strstr(err.message, "broken.yaml"));
	path = sk_test_write_file(
	        "two.yaml", HEAD P0 "    apiKeyEnv: K\n---\n" HEAD P0 "    apiKeyEnv: K\n");
	ck_assert_int_eq(sk_config_load(path, &c, &errs, &err), SK_EINVALID);
	ck_assert_ptr_null(c);
	sk_errlist_dispose(&errs);
}
END_TEST

#define SECRET "e2b_5ec7e75ec7e75ec7e7deadbeef"

START_TEST(key_from_env)
{
	sk_provider_config p = { .name = "default", .api_key_env = "SK_TEST_KEY_VAR" };
	sk_error err;
	char *key;

	sk_error_clear(&err);
	unsetenv("SK_TEST_KEY_VAR");
	ck_assert_ptr_null(sk_provider_api_key(&p, &err));
	ck_assert_ptr_nonnull(strstr(err.message, "SK_TEST_KEY_VAR"));
	setenv("SK_TEST_KEY_VAR", SECRET, 1);
	key = sk_provider_api_key(&p, &err);
	ck_assert_str_eq(key, SECRET);
	free(key);
}
END_TEST

START_TEST(key_from_file)
{
	sk_provider_config p = { .name = "default" };
	sk_error err;
	char *key;

	p.api_key_file = sk_strdup(sk_test_write_file("key", SECRET "\n"));
	key = sk_provider_api_key(&p, &err);
	ck_assert_str_eq(key, SECRET);
	free(key);
	free(p.api_key_file);
	p.api_key_file = sk_strdup(sk_test_write_file("key2", SECRET "\r\n"));
	key = sk_provider_api_key(&p, &err);
	ck_assert_str_eq(key, SECRET);
	free(key);
	free(p.api_key_file);
	p.api_key_file = sk_strdup(sk_test_write_file("empty", "\n"));
	sk_error_clear(&err);
	ck_assert_ptr_null(sk_provider_api_key(&p, &err));
	ck_assert_int_eq(err.code, SK_EINVALID);
	free(p.api_key_file);
	p.api_key_file = "/nonexistent/key";
	sk_error_clear(&err);
	ck_assert_ptr_null(sk_provider_api_key(&p, &err));
	ck_assert_int_eq(err.code, SK_EIO);
	ck_assert_ptr_nonnull(strstr(err.message, "/nonexistent/key"));
}
END_TEST

/* The key must never show up in an error, whatever goes wrong. */
START_TEST(key_never_in_errors)
{
	sk_provider_config p = { .name = "default" };
	sk_controller_config *c = NULL;
	sk_errlist errs = { 0 };
	sk_buf all = SK_BUF_INIT(0);
	sk_error err;
	const char *path;

	/* a key file with two lines is rejected without quoting it */
	p.api_key_file = sk_strdup(sk_test_write_file("twolines", SECRET "\n" SECRET "x\n"));
	sk_error_clear(&err);
	ck_assert_ptr_null(sk_provider_api_key(&p, &err));
	ck_assert_ptr_null(strstr(err.message, SECRET));
	ck_assert_ptr_null(strstr(err.message, "5ec7e7"));
	free(p.api_key_file);
	/* a key with a line break would smuggle a header: refused, not quoted */
	p.api_key_file = NULL;
	p.api_key_env = "SK_TEST_EVIL_KEY";
	setenv("SK_TEST_EVIL_KEY", SECRET "\r\nX-Evil: 1", 1);
	sk_error_clear(&err);
	ck_assert_ptr_null(sk_provider_api_key(&p, &err));
	ck_assert_ptr_nonnull(strstr(err.message, "SK_TEST_EVIL_KEY"));
	ck_assert_ptr_null(strstr(err.message, SECRET));
	ck_assert_ptr_null(strstr(err.message, "X-Evil"));
	p.api_key_env = NULL;
	/* a key pasted into the config where a variable name belongs */
	path = sk_test_write_file("pasted.yaml", HEAD P0 "    apiKeyEnv: " SECRET "-x\n");
	ck_assert_int_eq(sk_config_load(path, &c, &errs, &err), SK_EINVALID);
	sk_errlist_format(&errs, &all);
	ck_assert_ptr_nonnull(strstr(all.data, "providers[0].apiKeyEnv"));
	ck_assert_ptr_null(strstr(all.data, SECRET));
	ck_assert_ptr_null(strstr(err.message, SECRET));
	sk_buf_dispose(&all);
	sk_errlist_dispose(&errs);
}
END_TEST

/* A key file others can read is warned about, as ssh does. */
START_TEST(key_file_mode_warning)
{
	sk_provider_config p = { .name = "default" };
	char msg[1200];
	char *key;
	sk_error err;

	p.api_key_file = sk_strdup(sk_test_write_file("openkey", SECRET "\n"));
	ck_assert_int_eq(chmod(p.api_key_file, 0644), 0);
	ck_assert(sk_provider_key_file_warning(&p, msg, sizeof(msg)));
	ck_assert_ptr_nonnull(strstr(msg, "mode 0644"));
	ck_assert_ptr_nonnull(strstr(msg, p.api_key_file));
	ck_assert_ptr_nonnull(strstr(msg, "provider default"));
	ck_assert_ptr_null(strstr(msg, SECRET));
	key = sk_provider_api_key(&p, &err); /* still used */
	ck_assert_str_eq(key, SECRET);
	free(key);
	ck_assert_int_eq(chmod(p.api_key_file, 0640), 0);
	ck_assert(sk_provider_key_file_warning(&p, msg, sizeof(msg)));
	ck_assert_int_eq(chmod(p.api_key_file, 0600), 0);
	ck_assert(!sk_provider_key_file_warning(&p, msg, sizeof(msg)));
	ck_assert_int_eq(chmod(p.api_key_file, 0400), 0);
	ck_assert(!sk_provider_key_file_warning(&p, msg, sizeof(msg)));
	free(p.api_key_file);
	p.api_key_file = NULL;
	p.api_key_env = "E2B_API_KEY";
	ck_assert(!sk_provider_key_file_warning(&p, msg, sizeof(msg)));
}
END_TEST

/* ---- flags > environment > file > defaults (sk_config_resolve) ---- */

static const char *fake_env_uri; /* what $SPACEKEEPER_MONGODB_URI holds in a test */

static const char *
fake_getenv(const char *name)
{
	return strcmp(name, SK_CONFIG_MONGODB_URI_ENV) == 0 ? fake_env_uri : NULL;
}

#define FILE_URI "mongodb://file:1"
#define ENV_URI "mongodb://env:2"
#define FLAG_URI "mongodb://flag:3"

static sk_controller_config *
resolve_ok(sk_config_sources *src)
{
	sk_controller_config *c = NULL;
	sk_errlist errs = { 0 };
	sk_buf b = SK_BUF_INIT(0);
	sk_error err;

	sk_error_clear(&err);
	src->getenv = fake_getenv;
	if (sk_config_resolve(src, &c, &errs, &err) != 0) {
		sk_errlist_format(&errs, &b);
		ck_abort_msg("%s\n%s", err.message, b.data ? b.data : "");
	}
	sk_errlist_dispose(&errs);
	return c;
}

/* Each row: which sources are set, and where the URI must come from. */
static const struct {
	bool file, env, flag;
	const char *want;
} uri_rows[] = {
	{ false, false, false, "mongodb://127.0.0.1:27017" },
	{ true, false, false, FILE_URI },
	{ false, true, false, ENV_URI },
	{ true, true, false, ENV_URI }, /* the env used to lose to --config */
	{ false, false, true, FLAG_URI },
	{ true, true, true, FLAG_URI },
	{ true, false, true, FLAG_URI },
};

START_TEST(uri_precedence)
{
	sk_config_sources src = { 0 };
	sk_controller_config *c;

	if (uri_rows[_i].file)
		src.config_path = sk_test_write_file("prec.yaml",
		        HEAD "mongodb: {uri: '" FILE_URI "', database: filedb}\n" P0
		             "    apiKeyEnv: K\ncontroller: {workers: 3}\n");
	fake_env_uri = uri_rows[_i].env ? ENV_URI : NULL;
	src.mongodb_uri = uri_rows[_i].flag ? FLAG_URI : NULL;
	c = resolve_ok(&src);
	ck_assert_msg(strcmp(c->mongodb_uri, uri_rows[_i].want) == 0, "row %d: %s, want %s", _i,
	        c->mongodb_uri, uri_rows[_i].want);
	/* the other settings of the file stay */
	ck_assert_str_eq(c->database, uri_rows[_i].file ? "filedb" : "spacekeeper");
	ck_assert_int_eq(c->workers, uri_rows[_i].file ? 3 : 8);
	sk_config_free(c);
}
END_TEST

START_TEST(flags_override_file_settings)
{
	sk_config_sources src = {
		.workers = "1024", .resync = "90s", .listen = "", .database = "flagdb"
	};
	sk_controller_config *c;

	src.config_path = sk_test_write_file("over.yaml",
	        HEAD P0 "    apiKeyEnv: K\ncontroller: {workers: 3, resyncPeriod: 5s, "
	                "listen: '127.0.0.1:1'}\n");
	fake_env_uri = "";
	c = resolve_ok(&src);
	ck_assert_int_eq(c->workers, 1024);
	ck_assert_int_eq(c->resync_ms, 90000);
	ck_assert_str_eq(c->listen, ""); /* "" switches HTTP off */
	ck_assert_str_eq(c->database, "flagdb");
	ck_assert_str_eq(c->mongodb_uri, "mongodb://127.0.0.1:27017"); /* empty env ignored */
	ck_assert_uint_eq(c->n_providers, 1);
	sk_config_free(c);
}
END_TEST

/* One rule per setting: a value the file refuses, the flag refuses with the
 * same words, and the other way round. */
static const struct {
	const char *yaml; /* the controller/mongodb section of a file */
	const char *path;
	sk_config_sources flag;
	const char *flag_name;
	const char *msg;
} same_rule[] = {
	{ "controller: {workers: 1025}\n", "controller.workers", { .workers = "1025" }, "--workers",
	        "must be between 1 and 1024" },
	{ "controller: {workers: 0}\n", "controller.workers", { .workers = "0" }, "--workers",
	        "must be between 1 and 1024" },
	{ "controller: {workers: many}\n", "controller.workers", { .workers = "many" }, "--workers",
	        "must be an integer" },
	{ "controller: {resyncPeriod: 1ms}\n", "controller.resyncPeriod", { .resync = "1ms" },
	        "--resync", "must be between 1s and 24h" },
	{ "controller: {resyncPeriod: soon}\n", "controller.resyncPeriod", { .resync = "soon" },
	        "--resync", "must be a duration" },
	{ "controller: {listen: nowhere}\n", "controller.listen", { .listen = "nowhere" },
	        "--listen", "HOST:PORT" },
	{ "mongodb: {uri: 'http://x'}\n", "mongodb.uri", { .mongodb_uri = "http://x" },
	        "--mongodb-uri", "must start with mongodb://" },
	{ "mongodb: {database: 'a.b'}\n", "mongodb.database", { .database = "a.b" }, "--database",
	        "MongoDB database name" },
	{ "controller: {shards: 0}\n", "controller.shards", { .shards = "0" }, "--shards",
	        "must be between 1 and 4096" },
	{ "controller: {identity: 'a b'}\n", "controller.identity", { .identity = "a b" }, "--id",
	        "[A-Za-z0-9._-]" },
	{ "controller: {leaseDuration: 1ms}\n", "controller.leaseDuration",
	        { .lease_duration = "1ms" }, "--lease-duration", "must be between 500ms and 1h" },
	{ "controller: {retryPeriod: often}\n", "controller.retryPeriod",
	        { .retry_period = "often" }, "--retry-period", "must be a duration" },
	{ "controller: {advertiseAddress: nowhere}\n", "controller.advertiseAddress",
	        { .advertise_address = "nowhere" }, "--advertise-address", "HOST:PORT" },
};

static void
assert_error(const sk_errlist *errs, const char *path, const char *msg)
{
	for (size_t i = 0; i < errs->len; i++)
		if (strcmp(errs->items[i].path, path) == 0 && strstr(errs->items[i].message, msg))
			return;
	ck_abort_msg("no error %s: %s (%zu errors, first %s: %s)", path, msg, errs->len,
	        errs->len ? errs->items[0].path : "-", errs->len ? errs->items[0].message : "-");
}

START_TEST(flags_and_file_share_rules)
{
	char yaml[512];
	sk_config_sources src = same_rule[_i].flag, file = { 0 };
	sk_controller_config *c = (sk_controller_config *)1;
	sk_errlist errs = { 0 };
	sk_error err;

	fake_env_uri = NULL;
	src.getenv = file.getenv = fake_getenv;
	ck_assert_uint_eq(sk_config_check_flags(&src, &errs), 1);
	assert_error(&errs, same_rule[_i].flag_name, same_rule[_i].msg);
	ck_assert_int_eq(sk_config_resolve(&src, &c, &errs, &err), SK_EINVALID);
	ck_assert_ptr_null(c);
	sk_errlist_dispose(&errs);
	snprintf(yaml, sizeof(yaml), "%s%s" P0 "    apiKeyEnv: K\n", HEAD, same_rule[_i].yaml);
	file.config_path = sk_test_write_file("rule.yaml", yaml);
	ck_assert_int_eq(sk_config_resolve(&file, &c, &errs, &err), SK_EINVALID);
	assert_error(&errs, same_rule[_i].path, same_rule[_i].msg);
	sk_errlist_dispose(&errs);
}
END_TEST

START_TEST(bad_env_names_the_variable)
{
	sk_config_sources src = { 0 };
	sk_controller_config *c = NULL;
	sk_errlist errs = { 0 };
	sk_error err;

	fake_env_uri = "http://not-mongo";
	src.getenv = fake_getenv;
	ck_assert_int_eq(sk_config_resolve(&src, &c, &errs, &err), SK_EINVALID);
	assert_error(&errs, SK_CONFIG_MONGODB_URI_ENV, "must start with mongodb://");
	sk_errlist_dispose(&errs);
	/* a flag wins, so a bad variable it hides does not matter */
	src.mongodb_uri = FLAG_URI;
	c = resolve_ok(&src);
	ck_assert_str_eq(c->mongodb_uri, FLAG_URI);
	sk_config_free(c);
}
END_TEST

/* Replicas: client-go's lease timings and 64 shards by default; the file
 * and the flags set them; retryPeriod < renewDeadline < leaseDuration. */
START_TEST(replica_settings)
{
	sk_config_sources src = { 0 };
	sk_controller_config *c;
	sk_errlist errs = { 0 };
	sk_error err;

	fake_env_uri = NULL;
	c = resolve_ok(&src);
	ck_assert_int_eq(c->shards, 64);
	ck_assert_str_eq(c->identity, "");
	ck_assert_int_eq(c->lease_duration_ms, 15000);
	ck_assert_int_eq(c->renew_deadline_ms, 10000);
	ck_assert_int_eq(c->retry_period_ms, 2000);
	ck_assert_str_eq(c->advertise_address, "");
	sk_config_free(c);
	src.config_path = sk_test_write_file("rep.yaml",
	        HEAD P0 "    apiKeyEnv: K\ncontroller: {shards: 12, identity: pod-0, "
	                "leaseDuration: 4s, renewDeadline: 3s, retryPeriod: 500ms, "
	                "advertiseAddress: 'pod-0.keeper:9090'}\n");
	src.shards = "24";
	c = resolve_ok(&src);
	ck_assert_int_eq(c->shards, 24); /* the flag wins */
	ck_assert_str_eq(c->identity, "pod-0");
	ck_assert_int_eq(c->lease_duration_ms, 4000);
	ck_assert_int_eq(c->renew_deadline_ms, 3000);
	ck_assert_int_eq(c->retry_period_ms, 500);
	ck_assert_str_eq(c->advertise_address, "pod-0.keeper:9090");
	sk_config_free(c);
	src.renew_deadline = "4s"; /* not shorter than the lease */
	src.retry_period = "5s";
	c = (sk_controller_config *)1;
	src.getenv = fake_getenv;
	ck_assert_int_eq(sk_config_resolve(&src, &c, &errs, &err), SK_EINVALID);
	ck_assert_ptr_null(c);
	assert_error(&errs, "controller.renewDeadline", "shorter than controller.leaseDuration");
	assert_error(&errs, "controller.retryPeriod", "shorter than controller.renewDeadline");
	sk_errlist_dispose(&errs);
}
END_TEST

/* The archive section (config_archive.c): defaults, keys from their files
 * (never in an error), bad input named by field path; a provider's
 * pausedRetention. */
static sk_errlist
load_errors(const char *name, const char *yaml)
{
	sk_controller_config *c = NULL;
	sk_errlist errs = { 0 };
	sk_error err;

	sk_error_clear(&err);
	ck_assert_int_eq(
	        sk_config_load(sk_test_write_file(name, yaml), &c, &errs, &err), SK_EINVALID);
	ck_assert_ptr_null(c);
	return errs;
}

START_TEST(archive_section)
{
	char yaml[2048], afp[600], sfp[600], *access = NULL, *secret = NULL;
	sk_controller_config *c;
	sk_error err = { 0 };

	snprintf(afp, sizeof(afp), "%s", sk_test_write_file("s3-access", "AKIAEXAMPLE\n"));
	snprintf(sfp, sizeof(sfp), "%s", sk_test_write_file("s3-secret", "wJalrXUtnFEMI/K7\n"));
	c = load_ok("no-archive.yaml", HEAD P0 "    apiKeyEnv: K\n");
	ck_assert_ptr_null(c->archive);
	ck_assert_int_eq(c->providers[0].paused_retention_ms, 0);
	sk_config_free(c);
	snprintf(yaml, sizeof(yaml),
	        HEAD P0 "    apiKeyEnv: K\n    pausedRetention: 720h\n"
	                "archive:\n  endpoint: http://127.0.0.1:7070\n  bucket: spaces\n"
	                "  accessKeyFile: %s\n  secretKeyFile: %s\n",
	        afp, sfp);
	c = load_ok("archive.yaml", yaml);
	ck_assert_int_eq(c->providers[0].paused_retention_ms, 720LL * 3600 * 1000);
	ck_assert_str_eq(c->archive->endpoint, "http://127.0.0.1:7070");
	ck_assert_str_eq(c->archive->bucket, "spaces");
	ck_assert_str_eq(c->archive->region, "us-east-1");
	ck_assert_str_eq(c->archive->prefix, "spaces");
	ck_assert_int_eq(c->archive->keep_generations, 1);
	ck_assert_int_eq(sk_config_archive_keys(c->archive, &access, &secret, &err), 0);
	ck_assert_str_eq(access, "AKIAEXAMPLE");
	ck_assert_str_eq(secret, "wJalrXUtnFEMI/K7");
	free(access);
	free(secret);
	/* an empty key file: named, no key in the message */
	free(c->archive->secret_key_file);
	c->archive->secret_key_file = sk_strdup(sk_test_write_file("s3-empty", "\n"));
	ck_assert_int_eq(sk_config_archive_keys(c->archive, &access, &secret, &err), SK_EINVALID);
	ck_assert_ptr_null(access);
	ck_assert_msg(
	        strstr(err.message, "archive secret key file") && strstr(err.message, "empty"),
	        "%s", err.message);
	ck_assert(strstr(err.message, "AKIAEXAMPLE") == NULL);
	sk_config_free(c);
	/* keepGenerations: 0 keeps only the newest */
	snprintf(yaml, sizeof(yaml),
	        HEAD P0 "    apiKeyEnv: K\n"
	                "archive:\n  endpoint: http://127.0.0.1:7070\n  bucket: spaces\n"
	                "  accessKeyFile: %s\n  secretKeyFile: %s\n  keepGenerations: 0\n",
	        afp, sfp);
	c = load_ok("archive-keep0.yaml", yaml);
	ck_assert_int_eq(c->archive->keep_generations, 0);
	sk_config_free(c);
}
END_TEST

START_TEST(archive_bad_input)
{
	sk_errlist errs = load_errors("bad-archive.yaml",
	        HEAD P0 "    apiKeyEnv: K\n    pausedRetention: forever\n"
	                "archive:\n  endpoint: s3.example.com\n  bucket: My_Bucket\n"
	                "  prefix: /spaces/\n  secretKeyFile: /x\n  sekret: y\n"
	                "  keepGenerations: -1\n");

	assert_error(&errs, "providers[0].pausedRetention", "duration");
	assert_error(&errs, "archive.endpoint", "http:// or https://");
	assert_error(&errs, "archive.bucket", "S3 bucket name");
	assert_error(&errs, "archive.prefix", "no leading or trailing");
	assert_error(&errs, "archive.accessKeyFile", "required");
	assert_error(&errs, "archive.sekret", "unknown field");
	assert_error(&errs, "archive.keepGenerations", "between 0 and 1000");
	sk_errlist_dispose(&errs);
	errs = load_errors("list-archive.yaml", HEAD P0 "    apiKeyEnv: K\narchive: [a]\n");
	assert_error(&errs, "archive", "object");
	sk_errlist_dispose(&errs);
}
END_TEST

Suite *
sk_suite_config(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("load");

	tcase_add_test(tc, example_config_loads);
	tcase_add_test(tc, demo_config_loads);
	tcase_add_test(tc, minimal_config_gets_defaults);
	tcase_add_test(tc, full_config_values);
	tcase_add_test(tc, capacity_and_price);
	tcase_add_test(tc, cube_defaults);
	tcase_add_test(tc, default_config);
	tcase_add_loop_test(
	        tc, bad_config_reports_path_and_line, 0, (int)(sizeof(bad) / sizeof(bad[0])));
	tcase_add_test(tc, collects_every_error);
	tcase_add_test(tc, missing_file_and_bad_yaml);
	suite_add_tcase(s, tc);
	tc = tcase_create("precedence");
	tcase_add_loop_test(tc, uri_precedence, 0, (int)(sizeof(uri_rows) / sizeof(uri_rows[0])));
	tcase_add_test(tc, flags_override_file_settings);
	tcase_add_loop_test(
	        tc, flags_and_file_share_rules, 0, (int)(sizeof(same_rule) / sizeof(same_rule[0])));
	tcase_add_test(tc, bad_env_names_the_variable);
	suite_add_tcase(s, tc);
	tc = tcase_create("keys");
	tcase_add_test(tc, key_from_env);
	tcase_add_test(tc, key_from_file);
	tcase_add_test(tc, key_never_in_errors);
	tcase_add_test(tc, key_file_mode_warning);
	tcase_add_test(tc, replica_settings);
	tcase_add_test(tc, archive_section);
	tcase_add_test(tc, archive_bad_input);
	suite_add_tcase(s, tc);
	return s;
}
