/*
 * End-to-end tests of how the binaries start: spacekeeper before
 * its database; where the MongoDB URI comes from; a
 * world-readable apiKeyFile.
 */
#include <check.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../testutil.h"
#include "util/util.h"

Suite *sk_suite_startup(void);

#define DUMMY_KEY "E2B_API_KEY=e2b_0000000000000000000000000000000000000000"
#define ASSERT_HAS(hay, needle)                                                                    \
	ck_assert_msg(strstr((hay), (needle)) != NULL, "expected \"%s\" in:\n%s", (needle), (hay))
#define ASSERT_HASNT(hay, needle)                                                                  \
	ck_assert_msg(strstr((hay), (needle)) == NULL, "unexpected \"%s\" in:\n%s", (needle), (hay))

/* The status of GET url, 0 when nothing answered. */
static long
http_status(const char *url)
{
	CURL *h = curl_easy_init();
	long status = 0;

	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
	curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(h);
	return status;
}

static long
keeper_get(int port, const char *path)
{
	char url[128];

	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
	return http_status(url);
}

/* Polls GET path until it answers want, up to timeout_s. */
static bool
eventually_status(int port, const char *path, long want, int timeout_s)
{
	for (int i = 0; i < timeout_s * 4; i++) {
		if (keeper_get(port, path) == want)
			return true;
		usleep(250 * 1000);
	}
	return false;
}

/* ---- item 1: no database at start ---- */

START_TEST(test_once_without_database_exits_69)
{
	char uri[64], *out = NULL, *err = NULL;
	const char *env[] = { DUMMY_KEY, NULL };
	const char *argv[] = { "spacekeeper", "--once", "--listen", "", "--mongodb-uri", uri,
		NULL };
	int rc;

	snprintf(uri, sizeof(uri), "mongodb://127.0.0.1:%d", sk_test_free_port());
	rc = sk_test_run(argv, env, NULL, &out, &err, 60);
	ck_assert_msg(rc == 69, "rc=%d (want 69, EX_UNAVAILABLE)\n%s", rc, err);
	ASSERT_HAS(err, "msg=\"database unavailable\"");
	ASSERT_HAS(err, "cannot reach MongoDB at mongodb://127.0.0.1:");
	ASSERT_HASNT(err, "runtime error");
	free(out);
	free(err);
}
END_TEST

/* A URI libmongoc refuses: a config error, not a crash in the cleanup. */
START_TEST(test_bad_uri_is_a_config_error)
{
	char *out = NULL, *err = NULL;
	const char *env[] = { DUMMY_KEY, NULL };
	const char *argv[] = { "spacekeeper", "--listen", "", "--mongodb-uri", "mongodb://", NULL };
	int rc = sk_test_run(argv, env, NULL, &out, &err, 60);

	ck_assert_msg(rc == 78, "rc=%d (want 78, EX_CONFIG)\n%s", rc, err);
	ASSERT_HAS(err, "invalid MongoDB URI");
	ASSERT_HASNT(err, "runtime error");
	free(out);
	free(err);
}
END_TEST

/* How many times needle occurs in hay. */
static int
count_of(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
		n++;
	return n;
}

START_TEST(test_daemon_waits_for_database)
{
	char uri[64], listen[64], log[700], dir[700], *text;
	const char *env[] = { DUMMY_KEY, NULL };
	int db_port = sk_test_free_port(), port = sk_test_free_port();
	const char *argv[] = { "spacekeeper", "--listen", listen, "--connect-listen", "127.0.0.1:0",
		"--mongodb-uri", uri, "--database", sk_test_unique_db(), "--poll", "200ms", NULL };
	pid_t keeper, fdb;

	snprintf(uri, sizeof(uri), "mongodb://127.0.0.1:%d", db_port);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	snprintf(log, sizeof(log), "%s/keeper-nodb.log", sk_test_tmpdir());
	snprintf(dir, sizeof(dir), "%s/late-ferretdb", sk_test_tmpdir());
	keeper = sk_test_spawn(argv, env, log);
	ck_assert_msg(sk_test_wait_port(port, 20000), "no HTTP without a database (%s)", log);
	/* Alive but not ready while the database is missing. */
	ck_assert_int_eq(keeper_get(port, "/healthz"), 200);
	ck_assert_int_eq(keeper_get(port, "/readyz"), 503);
	sleep(2);
	ck_assert_int_eq(keeper_get(port, "/readyz"), 503);
	text = sk_test_slurp(log);
	ASSERT_HAS(text, "msg=\"database unavailable\"");
	ASSERT_HAS(text, "retry_in=");
	ASSERT_HASNT(text, "controller started");
	free(text);

	/* The database appears: the controller starts on its own. */
	fdb = sk_test_ferretdb_start_at(dir, db_port);
	ck_assert_msg(
	        eventually_status(port, "/readyz", 200, 60), "not ready after the database came");
	text = sk_test_slurp(log);
	ASSERT_HAS(text, "msg=\"controller started\"");
	/* A single replica takes the 64 shards in one round: one info line, the
	 * per-shard ones at debug level. */
	ck_assert_msg(count_of(text, "msg=\"shards acquired\" count=64 held=64 total=64 ") == 1,
	        "not one summary of the shards taken (log %s)", log);
	ck_assert_msg(
	        !strstr(text, "msg=\"shard acquired\""), "a per-shard line at info (log %s)", log);
	free(text);
	ck_assert_int_eq(sk_test_stop(keeper, false), 0);
	text = sk_test_slurp(log);
	ck_assert_msg(count_of(text, "msg=\"shards released\" count=64 held=0 total=64 ") == 1,
	        "not one summary of the shards released at stop (log %s)", log);
	ck_assert_msg(
	        !strstr(text, "msg=\"shard released\""), "a per-shard line at info (log %s)", log);
	free(text);
	sk_test_stop(fdb, false);
}
END_TEST

/* A stop while waiting for the database is prompt and clean. */
START_TEST(test_daemon_stops_while_waiting)
{
	char uri[64], listen[64], log[700];
	const char *env[] = { DUMMY_KEY, NULL };
	int port = sk_test_free_port();
	const char *argv[] = { "spacekeeper", "--listen", listen, "--connect-listen", "127.0.0.1:0",
		"--mongodb-uri", uri, NULL };
	pid_t keeper;
	int64_t t0;

	snprintf(uri, sizeof(uri), "mongodb://127.0.0.1:%d", sk_test_free_port());
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	snprintf(log, sizeof(log), "%s/keeper-stop.log", sk_test_tmpdir());
	keeper = sk_test_spawn(argv, env, log);
	ck_assert(sk_test_wait_port(port, 20000));
	t0 = sk_monotonic_ms();
	ck_assert_int_eq(sk_test_stop(keeper, false), 0);
	ck_assert_msg(sk_monotonic_ms() - t0 < 8000, "stop took %lld ms",
	        (long long)(sk_monotonic_ms() - t0));
}
END_TEST

/* ---- item 2: flags > environment > file > defaults, both binaries ---- */

/* A config whose mongodb.uri points at nothing, with a sandboxsim provider. */
static const char *
dead_uri_config(const char *sim_url)
{
	char yaml[1024];

	snprintf(yaml, sizeof(yaml),
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: ControllerConfig\n"
	        "mongodb: {uri: 'mongodb://127.0.0.1:%d'}\n"
	        "providers:\n  - name: default\n    type: e2b\n    apiURL: %s\n"
	        "    sandboxURL: %s\n    apiKeyEnv: E2B_API_KEY\n",
	        sk_test_free_port(), sim_url, sim_url);
	return sk_test_write_file("dead-uri.yaml", yaml);
}

START_TEST(test_env_uri_beats_config_file)
{
	char sim_url[128], cfg[700], env_uri[300], *out = NULL, *err = NULL;
	const char *env[] = { DUMMY_KEY, env_uri, NULL };
	pid_t sim = sk_test_sim_start(NULL, sim_url, sizeof(sim_url));
	const char *db = sk_test_unique_db();
	const char *keeper[] = { "spacekeeper", "--config", cfg, "--once", "--listen", "",
		"--database", db, NULL };
	const char *plan[] = { "spacectl", "plan", "--config", cfg, "--database", db, NULL };
	int rc;

	snprintf(cfg, sizeof(cfg), "%s", dead_uri_config(sim_url));
	snprintf(env_uri, sizeof(env_uri), "SPACEKEEPER_MONGODB_URI=%s", sk_test_mongodb_uri());
	rc = sk_test_run(keeper, env, NULL, &out, &err, 120);
	ck_assert_msg(
	        rc == 0, "spacekeeper --config with $SPACEKEEPER_MONGODB_URI: rc=%d\n%s", rc, err);
	ASSERT_HAS(err, "once done");
	free(out);
	free(err);
	rc = sk_test_run(plan, env, NULL, &out, &err, 60);
	ck_assert_msg(rc == 0, "spacectl plan --config with $SPACEKEEPER_MONGODB_URI: rc=%d\n%s",
	        rc, err);
	free(out);
	free(err);
	/* Without the variable the file decides: its database is not there. */
	env[1] = NULL;
	rc = sk_test_run(keeper, env, NULL, &out, &err, 120);
	ck_assert_msg(rc == 69, "the file's URI was not used: rc=%d\n%s", rc, err);
	free(out);
	free(err);
	sk_test_stop(sim, true);
}
END_TEST

START_TEST(test_bad_flag_values_share_the_file_rules)
{
	char *out = NULL, *err = NULL;
	const char *workers[] = { "spacekeeper", "--workers", "1025", NULL };
	const char *resync[] = { "spacekeeper", "--resync", "1ms", NULL };
	int rc;

	rc = sk_test_run(workers, NULL, NULL, &out, &err, 30);
	ck_assert_int_eq(rc, 64);
	ASSERT_HAS(err, "--workers: must be between 1 and 1024");
	free(out);
	free(err);
	rc = sk_test_run(resync, NULL, NULL, &out, &err, 30);
	ck_assert_int_eq(rc, 64);
	ASSERT_HAS(err, "--resync: must be between 1s and 24h");
	free(out);
	free(err);
}
END_TEST

/* ---- item 16: a world-readable apiKeyFile ---- */

static const char *
key_file_config(const char *sim_url, mode_t mode)
{
	char yaml[1024], key[600];

	snprintf(key, sizeof(key), "%s",
	        sk_test_write_file("e2b.key", "e2b_0000000000000000000000000000000000000000\n"));
	ck_assert_int_eq(chmod(key, mode), 0);
	snprintf(yaml, sizeof(yaml),
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: ControllerConfig\n"
	        "providers:\n  - name: default\n    type: e2b\n    apiURL: %s\n"
	        "    sandboxURL: %s\n    apiKeyFile: %s\n",
	        sim_url, sim_url, key);
	return sk_test_write_file("keyfile.yaml", yaml);
}

START_TEST(test_world_readable_key_file_warned)
{
	char sim_url[128], cfg[700], env_uri[300], *out = NULL, *err = NULL;
	const char *env[] = { env_uri, NULL };
	pid_t sim = sk_test_sim_start(NULL, sim_url, sizeof(sim_url));
	const char *keeper[] = { "spacekeeper", "--config", cfg, "--once", "--listen", "",
		"--database", sk_test_unique_db(), NULL };
	const char *sandboxes[] = { "spacectl", "sandboxes", "--config", cfg, NULL };
	int rc;

	snprintf(env_uri, sizeof(env_uri), "SPACEKEEPER_MONGODB_URI=%s", sk_test_mongodb_uri());
	snprintf(cfg, sizeof(cfg), "%s", key_file_config(sim_url, 0644));
	rc = sk_test_run(sandboxes, env, NULL, &out, &err, 60);
	ck_assert_msg(rc == 0, "the key must still be used: rc=%d\n%s", rc, err);
	ASSERT_HAS(err, "spacectl: warning: provider default: API key file ");
	ASSERT_HAS(err, "(mode 0644)");
	free(out);
	free(err);
	rc = sk_test_run(keeper, env, NULL, &out, &err, 120);
	ck_assert_msg(rc == 0, "rc=%d\n%s", rc, err);
	ASSERT_HAS(err, "level=warn msg=\"API key file readable by others\"");
	ASSERT_HAS(err, "mode 0644");
	free(out);
	free(err);
	/* owner-only: not a word */
	snprintf(cfg, sizeof(cfg), "%s", key_file_config(sim_url, 0600));
	rc = sk_test_run(sandboxes, env, NULL, &out, &err, 60);
	ck_assert_int_eq(rc, 0);
	ASSERT_HASNT(err, "warning");
	free(out);
	free(err);
	rc = sk_test_run(keeper, env, NULL, &out, &err, 120);
	ck_assert_int_eq(rc, 0);
	ASSERT_HASNT(err, "API key file");
	free(out);
	free(err);
	sk_test_stop(sim, true);
}
END_TEST

Suite *
sk_suite_startup(void)
{
	Suite *s = suite_create("startup");
	TCase *db = tcase_create("database");

	tcase_set_timeout(db, 180);
	tcase_add_test(db, test_once_without_database_exits_69);
	tcase_add_test(db, test_bad_uri_is_a_config_error);
	tcase_add_test(db, test_daemon_waits_for_database);
	tcase_add_test(db, test_daemon_stops_while_waiting);
	suite_add_tcase(s, db);
	db = tcase_create("settings");
	tcase_set_timeout(db, 240);
	tcase_add_test(db, test_env_uri_beats_config_file);
	tcase_add_test(db, test_bad_flag_values_share_the_file_rules);
	tcase_add_test(db, test_world_readable_key_file_warned);
	suite_add_tcase(s, db);
	return s;
}
