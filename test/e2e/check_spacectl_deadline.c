/*
 * End-to-end test of a database that dies mid-apply and
 * stays down must not keep spacectl waiting a full --timeout for every
 * object it rolls back; one deadline bounds the whole rollback.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../testutil.h"
#include "spacectl_testlib.h"

Suite *sk_suite_spacectl_deadline(void);

/* Objects stored at uri, (size_t)-1 when it does not answer. */
static size_t
count_at(const char *uri)
{
	sk_store_options opts = SK_STORE_OPTIONS_INIT;
	sk_userspace_list l = { NULL, 0, 0 };
	sk_store *st = NULL;
	sk_error err;
	size_t n = (size_t)-1;

	opts.uri = uri;
	opts.database = ctl_db;
	opts.timeout_ms = 1000;
	opts.ensure_indexes = false;
	if (sk_store_open(&st, &opts, &err) != 0)
		return n;
	if (sk_store_list(st, NULL, &l, &err) == 0)
		n = l.len;
	sk_userspace_list_dispose(&l);
	sk_store_close(st);
	return n;
}

START_TEST(dead_database_bounds_the_rollback)
{
	enum { N = 300, KILL_AT = 60 };
	char fdir[1100], sub[1100], uri[64], log[1100], *text;
	const char *tail;
	const char *env[] = { ctl_env_uri, NULL };
	int port = sk_test_free_port();
	size_t seen = 0;
	int64_t killed_ms, took_ms;
	sk_error ferr = { 0 };
	size_t len;
	pid_t fdb, ctl_pid;
	int rc;

	snprintf(fdir, sizeof(fdir), "%s/fdb", ctl_dir);
	snprintf(sub, sizeof(sub), "%s/docs", ctl_dir);
	mkdir(sub, 0755);
	for (int i = 0; i < N; i++) {
		char name[16], file[64];
		snprintf(name, sizeof(name), "d%03d", i);
		snprintf(file, sizeof(file), "docs/%s.yaml", name);
		free(ctl_write_us(file, name, name, NULL));
	}
	fdb = sk_test_ferretdb_start_at(fdir, port);
	ck_assert_int_gt(fdb, 0);
	snprintf(uri, sizeof(uri), "mongodb://127.0.0.1:%d", port);
	snprintf(log, sizeof(log), "%s/apply.log", ctl_dir);
	{
		const char *argv[] = { "spacectl", "apply", "-f", sub, "--mongodb-uri", uri,
			"--database", ctl_db, "--timeout", "1s", NULL };
		ctl_pid = sk_test_spawn(argv, env, log);
	}
	/* Kill the server for good once many, not all, objects are written:
	 * each of them needs undoing. */
	for (int i = 0; i < 4000; i++) {
		seen = count_at(uri);
		if (seen != (size_t)-1 && seen >= KILL_AT)
			break;
		usleep(5 * 1000);
	}
	ck_assert_msg(seen != (size_t)-1 && seen < N, "the kill came too late (%zu stored)", seen);
	sk_test_stop(fdb, true);
	killed_ms = sk_monotonic_ms();
	rc = sk_test_wait(ctl_pid, 120);
	took_ms = sk_monotonic_ms() - killed_ms;
	if (sk_file_read(log, 1 << 20, &text, &len, &ferr) != 0)
		text = sk_strdup("");
	tail = text + (strlen(text) > 2000 ? strlen(text) - 2000 : 0); /* Check's message cap */
	printf("spacectl_deadline: %zu objects written at the kill; spacectl exited %lld ms "
	       "later\n",
	        seen, (long long)took_ms);
	/* 4 x --timeout + 2 s for the rollback, plus the write in flight and
	 * the process: well under 20 s. Each object tried in turn took
	 * minutes. */
	ck_assert_msg(took_ms < 20000, "spacectl took %lld ms after the kill:\n%s",
	        (long long)took_ms, tail);
	ck_assert_msg(rc == 3, "rc %d (want 3, database unavailable):\n%s", rc, tail);
	ASSERT_HAS(text, "rollback: out of time (database unavailable); not restored: userspace/");
	ASSERT_HAS(text, "more");
	ASSERT_HAS(text, "apply failed; rollback incomplete");
	free(text);
}
END_TEST

Suite *
sk_suite_spacectl_deadline(void)
{
	Suite *s = suite_create("spacectl_deadline");
	TCase *tc = tcase_create("deadline");

	tcase_add_checked_fixture(tc, ctl_setup, NULL);
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, dead_database_bounds_the_rollback);
	suite_add_tcase(s, tc);
	return s;
}
