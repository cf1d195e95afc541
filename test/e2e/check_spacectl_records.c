/*
 * End-to-end tests: an interrupted apply is recoverable (the
 * apply record) and diff refuses what apply refuses (a spec.userID
 * another object holds). Each interruption is real: spacectl killed with
 * SIGKILL mid-apply, or the database killed and brought back; after the
 * recovery the apply is all-or-nothing.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../testutil.h"
#include "spacectl_testlib.h"

Suite *sk_suite_spacectl_records(void);

enum { N = 500, PRE = 50 };

/* N documents in DIR/docs; the first PRE already stored with another
 * template, so the apply configures those and creates the rest. */
static char *
write_docs(void)
{
	char *dir = sk_asprintf("%s/docs", ctl_dir), *out, *err, *pre;

	mkdir(dir, 0755);
	for (int i = 0; i < N; i++) {
		char name[16], file[64];
		snprintf(name, sizeof(name), "r%03d", i);
		snprintf(file, sizeof(file), "docs/%s.yaml", name);
		free(ctl_write_us(file, name, name, "  template: v2\n"));
		if (i < PRE) {
			snprintf(file, sizeof(file), "pre/%s.yaml", name);
			if (i == 0) {
				char *p = sk_asprintf("%s/pre", ctl_dir);
				mkdir(p, 0755);
				free(p);
			}
			free(ctl_write_us(file, name, name, "  template: v1\n"));
		}
	}
	pre = sk_asprintf("%s/pre", ctl_dir);
	ck_assert_int_eq(ctl(&out, &err, "apply", "-f", pre, NULL), 0);
	ctl_free(&out, &err);
	free(pre);
	return dir;
}

/* The objects stored at uri (NULL: the test's server) with template t (NULL:
 * any); (size_t)-1 when the server does not answer. */
static size_t
count_at(const char *uri, const char *t)
{
	sk_store_options opts = SK_STORE_OPTIONS_INIT;
	sk_userspace_list l = { NULL, 0, 0 };
	sk_store *st = NULL;
	sk_error err;
	size_t n = (size_t)-1;

	opts.uri = uri ? uri : sk_test_mongodb_uri();
	opts.database = ctl_db;
	opts.timeout_ms = 1000;
	opts.ensure_indexes = false;
	if (sk_store_open(&st, &opts, &err) != 0)
		return n;
	if (sk_store_list(st, NULL, &l, &err) == 0) {
		n = 0;
		for (size_t i = 0; i < l.len; i++)
			n += t == NULL || strcmp(l.items[i]->spec.template_id, t) == 0;
	}
	sk_userspace_list_dispose(&l);
	sk_store_close(st);
	return n;
}

/* Starts `spacectl apply -f dir` and SIGKILLs it once `at` objects carry
 * the new template (some written, not all). */
static void
apply_and_kill(const char *dir, size_t at)
{
	const char *env[] = { ctl_env_uri, NULL };
	const char *argv[] = { "spacectl", "apply", "-f", dir, "--database", ctl_db, NULL };
	char log[1100];
	pid_t pid;
	size_t seen = 0;

	snprintf(log, sizeof(log), "%s/killed.log", ctl_dir);
	pid = sk_test_spawn(argv, env, log);
	for (int i = 0; i < 6000 && seen < at; i++) {
		seen = count_at(NULL, NULL);
		usleep(5 * 1000);
	}
	kill(pid, SIGKILL);
	sk_test_wait(pid, 30);
	seen = count_at(NULL, NULL);
	ck_assert_msg(seen >= at && seen < N, "the kill came at %zu stored objects", seen);
}

/* spacectl killed mid-apply: get warns, --recover rolls back to the state
 * before the apply (all-or-nothing: nothing), a second --recover has nothing. */
START_TEST(killed_apply_is_rolled_back_by_recover)
{
	char *dir = write_docs(), *out, *err;

	apply_and_kill(dir, 150);
	ck_assert_int_eq(ctl(&out, &err, "get", "us", NULL), 0);
	ASSERT_HAS(err, "has not finished; objects may be half-written");
	ASSERT_HAS(err, "500 objects");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "apply", "--recover", NULL), 0);
	ASSERT_HAS(err, "found an interrupted apply");
	ASSERT_HAS(err, "interrupted apply rolled back");
	ctl_free(&out, &err);
	ck_assert_uint_eq(count_at(NULL, NULL), PRE);
	ck_assert_uint_eq(count_at(NULL, "v1"), PRE);
	ck_assert_int_eq(ctl(&out, &err, "get", "us", NULL), 0);
	ASSERT_HASNT(err, "has not finished");
	ctl_free(&out, &err);
	free(dir);
}
END_TEST

/* The next apply finds the record of the killed one (its process is gone),
 * rolls it back, says so, then applies: all of the input, once. */
START_TEST(next_apply_recovers_a_killed_one)
{
	char *dir = write_docs(), *out, *err;

	apply_and_kill(dir, 100);
	ck_assert_int_eq(ctl(&out, &err, "diff", "-f", dir, NULL), 1);
	ASSERT_HAS(err, "has not finished");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "apply", "-f", dir, NULL), 0);
	ASSERT_HAS(err, "found an interrupted apply");
	ASSERT_HAS(err, "rolled back");
	ASSERT_HAS(out, "userspace/r000 configured");
	ASSERT_HAS(out, "userspace/r499 created");
	ctl_free(&out, &err);
	ck_assert_uint_eq(count_at(NULL, NULL), N);
	ck_assert_uint_eq(count_at(NULL, "v2"), N);
	free(dir);
}
END_TEST

/* A record whose process may still run (here: this test process's own pid)
 * is not rolled back behind its back: apply refuses, --recover overrides. */
START_TEST(live_holder_is_not_rolled_back)
{
	sk_store *st = ctl_open_store();
	sk_error e = { 0 };
	char host[256] = "";
	char *p = ctl_write_us("x.yaml", "x", "x", NULL), *out, *err;
	json_t *body;

	gethostname(host, sizeof(host) - 1);
	body = json_pack("{s:s, s:s, s:I, s:I, s:I, s:[{s:s, s:s, s:{s:{s:s}, s:{s:s}}}]}", "apply",
	        "t-live", "host", host, "pid", (json_int_t)getpid(), "start",
	        (json_int_t)sk_now_ms(), "objects", (json_int_t)1, "items", "name", "y", "action",
	        "create", "after", "metadata", "name", "y", "spec", "userID", "y");
	ck_assert_msg(sk_store_record_put(st, "t-live#00000", body, &e) == 0, "%s", e.message);
	ck_assert_int_eq(ctl(&out, &err, "apply", "-f", p, NULL), 1);
	ASSERT_HAS(err, "has not finished: it is still running");
	ASSERT_HAS(err, "no changes made");
	ctl_free(&out, &err);
	ck_assert_ptr_null(ctl_stored("x"));
	ck_assert_int_eq(ctl(&out, &err, "apply", "--recover", "-f", p, NULL), 0);
	ASSERT_HAS(err, "rolled back: 0 object(s) restored or removed, 1 not written by it");
	ASSERT_HAS(out, "userspace/x created");
	ctl_free(&out, &err);
	json_decref(body);
	sk_store_close(st);
	free(p);
}
END_TEST

/* A record from another host, started two hours ago: taken as abandoned
 * (its pod is gone), so the next apply rolls it back on its own. */
START_TEST(abandoned_record_of_another_host_is_rolled_back)
{
	sk_store *st = ctl_open_store();
	sk_error e = { 0 };
	char *z = ctl_write_us("z.yaml", "z", "z", NULL),
	     *x = ctl_write_us("x.yaml", "x", "x", NULL);
	char *out, *err;
	json_t *body;

	ck_assert_int_eq(ctl(&out, &err, "apply", "-f", z, NULL), 0);
	ctl_free(&out, &err);
	body = json_pack("{s:s, s:s, s:I, s:I, s:I, s:[{s:s, s:s, s:{s:{s:s}, s:{s:s}}}]}", "apply",
	        "t-old", "host", "elsewhere", "pid", (json_int_t)1, "start",
	        (json_int_t)(sk_now_ms() - 2 * 3600 * 1000), "objects", (json_int_t)1, "items",
	        "name", "z", "action", "create", "after", "metadata", "name", "z", "spec", "userID",
	        "z");
	ck_assert_msg(sk_store_record_put(st, "t-old#00000", body, &e) == 0, "%s", e.message);
	ck_assert_int_eq(ctl(&out, &err, "apply", "-f", x, NULL), 0);
	ASSERT_HAS(err, "by elsewhere pid 1, 1 objects): rolling it back");
	ASSERT_HAS(err, "rolled back: 1 object(s) restored or removed");
	ctl_free(&out, &err);
	ck_assert_ptr_null(ctl_stored("z"));
	ck_assert_uint_eq(count_at(NULL, NULL), 1);
	json_decref(body);
	sk_store_close(st);
	free(z);
	free(x);
}
END_TEST

/* The database killed mid-apply and kept down: spacectl gives up within its
 * deadline and keeps the record; with the database back, --recover leaves
 * the state as before the apply. */
START_TEST(dead_database_apply_recovered_after_restart)
{
	char fdir[1100], uri[64], log[1100], *dir, *out, *err, *text = NULL;
	char uri_env[128];
	const char *env[] = { uri_env, NULL };
	int port = sk_test_free_port(), rc;
	sk_error ferr = { 0 };
	size_t len, seen = 0;
	pid_t fdb, pid;

	snprintf(fdir, sizeof(fdir), "%s/fdb", ctl_dir);
	fdb = sk_test_ferretdb_start_at(fdir, port);
	ck_assert_int_gt(fdb, 0);
	snprintf(uri, sizeof(uri), "mongodb://127.0.0.1:%d", port);
	snprintf(uri_env, sizeof(uri_env), "SPACEKEEPER_MONGODB_URI=%s", uri);
	snprintf(ctl_env_uri, sizeof(ctl_env_uri), "%s", uri_env); /* ctl() */
	dir = write_docs();
	snprintf(log, sizeof(log), "%s/apply.log", ctl_dir);
	{
		const char *argv[] = { "spacectl", "apply", "-f", dir, "--database", ctl_db,
			"--timeout", "1s", NULL };
		pid = sk_test_spawn(argv, env, log);
	}
	for (int i = 0; i < 6000 && (seen == (size_t)-1 || seen < PRE + 100); i++) {
		seen = count_at(uri, NULL);
		usleep(5 * 1000);
	}
	ck_assert_msg(seen != (size_t)-1 && seen < N, "the kill came at %zu objects", seen);
	sk_test_stop(fdb, true);
	rc = sk_test_wait(pid, 120);
	if (sk_file_read(log, 1 << 20, &text, &len, &ferr) != 0)
		text = sk_strdup("");
	ck_assert_msg(rc == 3, "rc %d:\n%.2000s", rc, text + (len > 2000 ? len - 2000 : 0));
	ASSERT_HAS(text, "the apply record stays");
	fdb = sk_test_ferretdb_start_at(fdir, port);
	ck_assert_int_gt(fdb, 0);
	ck_assert_int_eq(ctl(&out, &err, "apply", "--recover", NULL), 0);
	ASSERT_HAS(err, "interrupted apply rolled back");
	ctl_free(&out, &err);
	ck_assert_uint_eq(count_at(uri, NULL), PRE);
	ck_assert_uint_eq(count_at(uri, "v1"), PRE);
	sk_test_stop(fdb, false);
	free(text);
	free(dir);
}
END_TEST

/* apply refuses a spec.userID another object holds; diff says the same and exits 1. */
START_TEST(diff_refuses_a_taken_user_id)
{
	char *a = ctl_write_us("a.yaml", "a", "shared", NULL);
	char *b = ctl_write_us("b.yaml", "b", "shared", NULL);
	char *out, *err, *apply_err;
	const char *msg = "spec.userID: \"shared\" is already used by userspace/a";

	ck_assert_int_eq(ctl(&out, &err, "apply", "-f", a, NULL), 0);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "apply", "-f", b, NULL), 1);
	ASSERT_HAS(err, msg);
	apply_err = sk_strndup(strstr(err, msg), strcspn(strstr(err, msg), "\n"));
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "diff", "-f", b, NULL), 1);
	ASSERT_HAS(err, apply_err); /* the same message, position included */
	ASSERT_HAS(out, "+  name: b");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "diff", "-f", a, NULL), 0);
	ASSERT_HASNT(err, "already used");
	ctl_free(&out, &err);
	free(apply_err);
	free(a);
	free(b);
}
END_TEST

Suite *
sk_suite_spacectl_records(void)
{
	Suite *s = suite_create("spacectl_records");
	TCase *tc = tcase_create("records");

	tcase_add_checked_fixture(tc, ctl_setup, NULL);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, diff_refuses_a_taken_user_id);
	tcase_add_test(tc, live_holder_is_not_rolled_back);
	tcase_add_test(tc, abandoned_record_of_another_host_is_rolled_back);
	tcase_add_test(tc, killed_apply_is_rolled_back_by_recover);
	tcase_add_test(tc, next_apply_recovers_a_killed_one);
	tcase_add_test(tc, dead_database_apply_recovered_after_restart);
	suite_add_tcase(s, tc);
	return s;
}
