/*
 * End-to-end tests of spacectl on bad input and database faults: every case
 * of the "bad input gets a clear error and loses nothing" list, racing
 * applies, a database that is down, and one that dies in the middle of an apply.
 * Each checks the message and that the database is unchanged afterwards.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../testutil.h"
#include "spacectl_testlib.h"

Suite *sk_suite_spacectl_input(void);
Suite *sk_suite_spacectl_faults(void);

/* ------------------------------------------------------------------ bad input */

#define GOOD_DOC                                                                                   \
	"apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\nmetadata:\n  name: good\n"         \
	"spec:\n  userID: good\n---\n"
/* Line 8 is the first line of the second document. */
#define DOC2(body) GOOD_DOC "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n" body

typedef struct bad_case {
	const char *what;
	const char *content; /* NULL: generated */
	const char *expect[3];
} bad_case;

static const bad_case bad_cases[] = {
	{ "malformed YAML", GOOD_DOC "apiVersion: v\nmetadata: {name: [x\n",
	        { "case.yaml:", NULL } },
	{ "wrong apiVersion",
	        GOOD_DOC
	        "apiVersion: v1\nkind: UserSpace\nmetadata: {name: x}\nspec: {userID: x}\n",
	        { "apiVersion", "case.yaml:8:", NULL } },
	{ "wrong kind",
	        GOOD_DOC "apiVersion: spacekeeper.dev/v1alpha1\nkind: Pod\nmetadata: {name: x}\n"
	                 "spec: {userID: x}\n",
	        { "kind", "case.yaml:9:", NULL } },
	{ "missing userID", DOC2("metadata:\n  name: x\nspec:\n  template: base\n"),
	        { "spec.userID", "required", "case.yaml:" } },
	{ "bad userID", DOC2("metadata:\n  name: x\nspec:\n  userID: \"bad user!\"\n"),
	        { "spec.userID", "case.yaml:13:", NULL } },
	{ "invalid duration",
	        DOC2("metadata:\n  name: x\nspec:\n  userID: x\n  lifecycle:\n    idleTimeout: "
	             "15x\n"),
	        { "spec.lifecycle.idleTimeout", "case.yaml:15:", NULL } },
	{ "unknown field", DOC2("metadata:\n  name: x\nspec:\n  userID: x\n  colour: red\n"),
	        { "spec.colour", "case.yaml:14:", NULL } },
	{ "reserved metadata key",
	        DOC2("metadata:\n  name: x\nspec:\n  userID: x\n  metadata:\n    user_id: evil\n"),
	        { "spec.metadata", "user_id", "case.yaml:15:" } },
	{ "dollar key",
	        DOC2("metadata:\n  name: x\nspec:\n  userID: x\n  env:\n    $where: \"1\"\n"),
	        { "spec.env", "$where", "case.yaml:15:" } },
	{ "dotted key", DOC2("metadata:\n  name: x\nspec:\n  userID: x\n  metadata:\n    a.b: c\n"),
	        { "spec.metadata", "a.b", "case.yaml:15:" } },
	{ "same name twice", DOC2("metadata:\n  name: good\nspec:\n  userID: other\n"),
	        { "duplicate name \"good\"", "case.yaml:4:", "case.yaml:11:" } },
	{ "same userID twice", DOC2("metadata:\n  name: other\nspec:\n  userID: good\n"),
	        { "spec.userID", "\"good\"", "case.yaml:13:" } },
	{ "userID of a stored object",
	        DOC2("metadata:\n  name: other\nspec:\n  userID: seed-user\n"),
	        { "already used by userspace/seed", "case.yaml:13:", NULL } },
	{ "empty file", "", { "no objects found", "case.yaml", NULL } },
	{ "comments only", "# nothing here\n", { "no objects found", NULL } },
	{ "binary file", NULL, { "case.yaml", NULL } },
	{ "document over 1 MiB", NULL, { "case.yaml", NULL } },
	{ "alias bomb", NULL, { "case.yaml", NULL } },
	{ "deep nesting", NULL, { "case.yaml", NULL } },
};

static char *
gen_case(const char *what, size_t *len)
{
	sk_buf b = SK_BUF_INIT(0);

	if (strcmp(what, "binary file") == 0) {
		static const unsigned char elf[] = { 0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0xff,
			0xfe, 0x00, 0x01, 0x80, 0x90 };
		sk_buf_append(&b, elf, sizeof(elf));
	} else if (strcmp(what, "document over 1 MiB") == 0) {
		sk_buf_printf(&b, DOC2("metadata:\n  name: x\n  annotations:\n    big: \""));
		for (int i = 0; i < 1100 * 1024 / 64; i++)
			sk_buf_printf(&b, "%s",
			        "abcdefghabcdefghabcdefghabcdefghabcdefghabcdefghabcdefghabcdefgh");
		sk_buf_printf(&b, "\"\nspec:\n  userID: x\n");
	} else if (strcmp(what, "alias bomb") == 0) {
		sk_buf_printf(&b, GOOD_DOC "a0: &a0 [x, x, x, x, x, x, x, x, x]\n");
		for (int i = 1; i < 10; i++)
			sk_buf_printf(&b,
			        "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, "
			        "*a%d]\n",
			        i, i, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1,
			        i - 1);
	} else {
		sk_buf_printf(&b, GOOD_DOC "apiVersion: ");
		for (int i = 0; i < 20000; i++)
			sk_buf_append(&b, "[", 1);
	}
	*len = b.len;
	return sk_buf_detach(&b);
}

START_TEST(bad_input_changes_nothing)
{
	const bad_case *c = &bad_cases[_i];
	char *out, *err, *path, *seed, *data;
	size_t len;
	sk_userspace *before, *after;
	int64_t t0;
	int rc;

	seed = ctl_write_us("seed.yaml", "seed", "seed-user", NULL);
	ck_assert_int_eq(ctl(&out, &err, "apply", "-f", seed, NULL), 0);
	ctl_free(&out, &err);
	before = ctl_stored("seed");
	if (c->content) {
		path = ctl_write_text("case.yaml", c->content);
	} else {
		data = gen_case(c->what, &len);
		path = ctl_write_file("case.yaml", data, len);
		free(data);
	}
	t0 = sk_monotonic_ms();
	rc = ctl(&out, &err, "apply", "-f", path, NULL);
	ck_assert_msg(rc == 1, "%s: rc %d, stderr:\n%s", c->what, rc, err);
	ck_assert_msg(sk_monotonic_ms() - t0 < 20000, "%s: took too long", c->what);
	for (size_t k = 0; k < 3 && c->expect[k]; k++)
		ck_assert_msg(strstr(err, c->expect[k]) != NULL, "%s: expected \"%s\" in:\n%s",
		        c->what, c->expect[k], err);
	ASSERT_HAS(err, "spacectl: ");
	ASSERT_HAS(err, "no changes made");
	ck_assert_msg(strstr(out, "created") == NULL, "%s: wrote:\n%s", c->what, out);
	ctl_free(&out, &err);

	/* The database is unchanged: the seed as it was, nothing else. */
	ck_assert_uint_eq(ctl_count(), 1);
	after = ctl_stored("seed");
	ck_assert_int_eq(after->meta.resource_version, before->meta.resource_version);
	ck_assert_ptr_null(ctl_stored("good"));

	/* validate agrees (exit 1), except on what only the database knows. */
	if (strstr(c->what, "stored") == NULL) {
		ck_assert_int_eq(ctl(&out, &err, "validate", "-f", path, NULL), 1);
		ctl_free(&out, &err);
	}
	sk_userspace_free(before);
	sk_userspace_free(after);
	free(path);
	free(seed);
}
END_TEST

/* Two spacectl processes apply different names with the same userID at once:
 * exactly one wins, the other fails with exit 1 and writes nothing. */
START_TEST(racing_applies_same_user_id)
{
	for (int round = 0; round < 4; round++) {
		char name_a[32], name_b[32], uid[32], log_a[1100], log_b[1100];
		char *pa, *pb, fa[32], fb[32];
		const char *env[] = { ctl_env_uri, NULL };
		sk_userspace *a, *b;
		pid_t ka, kb;
		int ra, rb;

		snprintf(name_a, sizeof(name_a), "race%d-a", round);
		snprintf(name_b, sizeof(name_b), "race%d-b", round);
		snprintf(uid, sizeof(uid), "racer%d", round);
		snprintf(fa, sizeof(fa), "ra%d.yaml", round);
		snprintf(fb, sizeof(fb), "rb%d.yaml", round);
		pa = ctl_write_us(fa, name_a, uid, NULL);
		pb = ctl_write_us(fb, name_b, uid, NULL);
		snprintf(log_a, sizeof(log_a), "%s/race%d-a.log", ctl_dir, round);
		snprintf(log_b, sizeof(log_b), "%s/race%d-b.log", ctl_dir, round);
		{
			const char *argv_a[] = { "spacectl", "apply", "-f", pa, "--database",
				ctl_db, NULL };
			const char *argv_b[] = { "spacectl", "apply", "-f", pb, "--database",
				ctl_db, NULL };
			ka = sk_test_spawn(argv_a, env, log_a);
			kb = sk_test_spawn(argv_b, env, log_b);
		}
		ra = sk_test_wait(ka, 60);
		rb = sk_test_wait(kb, 60);
		ck_assert_msg((ra == 0 && rb == 1) || (ra == 1 && rb == 0),
		        "round %d: exits %d and %d", round, ra, rb);
		a = ctl_stored(name_a);
		b = ctl_stored(name_b);
		ck_assert_msg(
		        (a != NULL) != (b != NULL), "round %d: both or neither stored", round);
		ck_assert_ptr_nonnull(ra == 0 ? a : b);
		sk_userspace_free(a);
		sk_userspace_free(b);
		free(pa);
		free(pb);
	}
	ck_assert_uint_eq(ctl_count(), 4);
}
END_TEST

/* ------------------------------------------------------------------ database faults */

START_TEST(database_down_exit_3_fast)
{
	char *out, *err, uri[64];
	char *p = ctl_write_us("a.yaml", "down", "down", NULL);
	static const char *const cmds[][4] = {
		{ "apply", "-f", NULL, NULL },
		{ "get", "us", NULL, NULL },
		{ "describe", "us", "x", NULL },
		{ "delete", "us", "x", NULL },
		{ "diff", "-f", NULL, NULL },
	};

	snprintf(uri, sizeof(uri), "mongodb://127.0.0.1:%d", sk_test_free_port());
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		const char *a2 = cmds[i][2] ? cmds[i][2] : p;
		int64_t t0 = sk_monotonic_ms();
		int rc;

		if (strcmp(cmds[i][1], "us") == 0 && cmds[i][2] == NULL)
			rc = ctl(&out, &err, cmds[i][0], cmds[i][1], "--mongodb-uri", uri, NULL);
		else
			rc = ctl(
			        &out, &err, cmds[i][0], cmds[i][1], a2, "--mongodb-uri", uri, NULL);
		ck_assert_msg(rc == 3, "%s: rc %d, %s", cmds[i][0], rc, err);
		ck_assert_msg(sk_monotonic_ms() - t0 < 5000, "%s took %lld ms", cmds[i][0],
		        (long long)(sk_monotonic_ms() - t0));
		ASSERT_HAS(err, "spacectl: ");
		ASSERT_HAS(err, uri + strlen("mongodb://"));
		ctl_free(&out, &err);
	}
	/* --timeout is honoured. */
	{
		int64_t t0 = sk_monotonic_ms();
		ck_assert_int_eq(ctl(&out, &err, "get", "us", "--mongodb-uri", uri, "--timeout",
		                         "500ms", NULL),
		        3);
		ck_assert_int_lt(sk_monotonic_ms() - t0, 3000);
		ctl_free(&out, &err);
	}
	free(p);
}
END_TEST

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

/* FerretDB is killed while apply writes a directory of objects and comes back
 * on the same data: afterwards the store holds all of them or none. */
START_TEST(database_dies_mid_apply)
{
	enum { N = 120 };
	char fdir[1100], sub[1100], uri[64], log[1100], *out = NULL;
	const char *env[] = { ctl_env_uri, NULL };
	int port = sk_test_free_port();
	size_t seen = 0, final;
	pid_t fdb, ctl_pid;
	int rc;

	snprintf(fdir, sizeof(fdir), "%s/fdb", ctl_dir);
	snprintf(sub, sizeof(sub), "%s/docs", ctl_dir);
	mkdir(sub, 0755);
	for (int i = 0; i < N; i++) {
		char name[16], file[64];
		snprintf(name, sizeof(name), "m%03d", i % 1000);
		snprintf(file, sizeof(file), "docs/%s.yaml", name);
		free(ctl_write_us(file, name, name, NULL));
	}
	fdb = sk_test_ferretdb_start_at(fdir, port);
	ck_assert_int_gt(fdb, 0);
	snprintf(uri, sizeof(uri), "mongodb://127.0.0.1:%d", port);
	snprintf(log, sizeof(log), "%s/apply.log", ctl_dir);
	{
		const char *argv[] = { "spacectl", "apply", "-f", sub, "--mongodb-uri", uri,
			"--database", ctl_db, "--timeout", "2s", NULL };
		ctl_pid = sk_test_spawn(argv, env, log);
	}
	/* Kill the server once some, not all, objects are written. */
	for (int i = 0; i < 2000; i++) {
		seen = count_at(uri);
		if (seen != (size_t)-1 && seen >= 10)
			break;
		usleep(5 * 1000);
	}
	ck_assert_msg(seen != (size_t)-1 && seen < N, "the kill came too late (%zu stored)", seen);
	sk_test_stop(fdb, true);
	usleep(500 * 1000);
	fdb = sk_test_ferretdb_start_at(fdir, port);
	ck_assert_int_gt(fdb, 0);
	rc = sk_test_wait(ctl_pid, 90);
	final = count_at(uri);
	{
		FILE *f = fopen(log, "r");
		char buf[8192];
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
		buf[n] = '\0';
		if (f)
			fclose(f);
		out = strdup(buf);
	}
	sk_test_stop(fdb, false);
	ck_assert_msg(final == 0 || final == N,
	        "after the crash %zu of %d objects stored (seen %zu "
	        "before the kill); apply rc %d:\n%s",
	        final, N, seen, rc, out);
	if (final == 0) {
		ck_assert_msg(rc != 0, "apply claimed success but nothing is stored:\n%s", out);
		ASSERT_HAS(out, "no changes made");
	} else {
		ck_assert_msg(rc == 0, "everything stored but apply failed (rc %d):\n%s", rc, out);
	}
	free(out);
}
END_TEST

Suite *
sk_suite_spacectl_input(void)
{
	Suite *s = suite_create("spacectl_input");
	TCase *bad = tcase_create("bad_input");
	TCase *race = tcase_create("race");

	tcase_add_checked_fixture(bad, ctl_setup, NULL);
	tcase_set_timeout(bad, 120);
	tcase_add_loop_test(
	        bad, bad_input_changes_nothing, 0, (int)(sizeof(bad_cases) / sizeof(bad_cases[0])));
	suite_add_tcase(s, bad);
	tcase_add_checked_fixture(race, ctl_setup, NULL);
	tcase_set_timeout(race, 120);
	tcase_add_test(race, racing_applies_same_user_id);
	suite_add_tcase(s, race);
	return s;
}

Suite *
sk_suite_spacectl_faults(void)
{
	Suite *s = suite_create("spacectl_faults");
	TCase *tc = tcase_create("faults");

	tcase_add_checked_fixture(tc, ctl_setup, NULL);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, database_down_exit_3_fast);
	tcase_add_test(tc, database_dies_mid_apply);
	suite_add_tcase(s, tc);
	return s;
}
