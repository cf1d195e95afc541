/*
 * End-to-end tests of what a newcomer to spacectl met first: validate counts
 * and names each kind, top without a resource word and why COST is "-", get
 * all, get -w lined up with get, and delete waiting (as kubectl delete does)
 * until the object is gone, with exit codes a script can trust.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../testutil.h"
#include "spacectl_testlib.h"

Suite *sk_suite_spacectl_newcomer(void);

static const char QUOTA[] = "apiVersion: spacekeeper.dev/v1alpha1\nkind: SpaceQuota\n"
                            "metadata:\n  name: team-a\nspec:\n  selector:\n    matchLabels:\n"
                            "      team: a\n  hard:\n    spaces: 5\n";

static const char LABELLED[] = "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
                               "metadata:\n  name: %s\n  labels:\n    team: %s\nspec:\n"
                               "  userID: %s\n";

static void
apply_labelled(const char *name, const char *team)
{
	char yaml[512], file[300], *out, *err, *p;

	snprintf(yaml, sizeof(yaml), LABELLED, name, team, name);
	snprintf(file, sizeof(file), "%s.yaml", name);
	p = ctl_write_text(file, yaml);
	ck_assert_int_eq(ctl(&out, &err, "apply", "-f", p, NULL), 0);
	ctl_free(&out, &err);
	free(p);
}

/* ---- validate ---- */

START_TEST(validate_counts_and_names_each_kind)
{
	char *out, *err, *q = ctl_write_text("quota.yaml", QUOTA);
	char *a = ctl_write_us("a.yaml", "va", "va", NULL),
	     *b = ctl_write_us("b.yaml", "vb", "vb", NULL);

	ck_assert_int_eq(ctl(&out, &err, "validate", "-f", q, NULL), 0);
	ASSERT_HAS(out, "quota.yaml: 1 valid spacequota\n");
	ASSERT_HASNT(out, "userspace");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "validate", "-f", a, "-f", b, "-f", q, NULL), 0);
	ASSERT_HAS(out, "quota.yaml: 2 valid userspaces, 1 valid spacequota\n");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "validate", "-f", a, NULL), 0);
	ASSERT_HAS(out, "a.yaml: 1 valid userspace\n");
	ctl_free(&out, &err);
	free(q);
	free(a);
	free(b);
}
END_TEST

/* ---- top ---- */

START_TEST(top_alone_shows_the_userspaces_and_says_why_cost_is_blank)
{
	char *out, *err, *cfg;

	apply_labelled("ta", "a");
	ck_assert_int_eq(ctl(&out, &err, "top", NULL), 0);
	ck_assert_msg(strncmp(out, "NAME ", 5) == 0, "%s", out);
	ASSERT_HAS(out, "\nta ");
	/* no ControllerConfig with prices: the note says what to pass */
	ASSERT_HAS(err, "COST \"-\": no prices: pass --config FILE");
	ctl_free(&out, &err);

	ck_assert_int_eq(ctl(&out, &err, "top", "nodes", NULL), 2);
	ASSERT_HAS(err, "unknown resource \"nodes\": top measures userspaces");
	ctl_free(&out, &err);

	cfg = ctl_write_text("priced.yaml",
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: ControllerConfig\nproviders:\n"
	        "  - name: default\n    type: e2b\n    apiURL: http://127.0.0.1:1\n"
	        "    apiKeyEnv: E2B_API_KEY\n    price: {runningPerHour: 2, pausedPerHour: 1}\n"
	        "  - name: other\n    type: e2b\n    apiURL: http://127.0.0.1:1\n"
	        "    apiKeyEnv: E2B_API_KEY\n");
	ck_assert_int_eq(ctl(&out, &err, "top", "userspaces", "--config", cfg, NULL), 0);
	ASSERT_HAS(out, "0.00\n"); /* priced: a number, no note */
	ASSERT_HASNT(err, "COST");
	ctl_free(&out, &err);
	{
		char *p = ctl_write_us("o.yaml", "to", "to", "  provider: other\n");
		ck_assert_int_eq(ctl(&out, &err, "apply", "-f", p, NULL), 0);
		ctl_free(&out, &err);
		free(p);
	}
	ck_assert_int_eq(ctl(&out, &err, "top", "--config", cfg, NULL), 0);
	ASSERT_HAS(err, "COST \"-\": provider \"other\" has no price");
	ctl_free(&out, &err);
	free(cfg);
}
END_TEST

/* ---- get all ---- */

START_TEST(get_all_lists_every_kind)
{
	char *out, *err, *q;

	ck_assert_int_eq(ctl(&out, &err, "get", "all", NULL), 0);
	ck_assert_str_eq(out, "");
	ASSERT_HAS(err, "No resources found.");
	ctl_free(&out, &err);

	apply_labelled("ga", "a");
	apply_labelled("gb", "b");
	q = ctl_write_text("quota.yaml", QUOTA);
	ck_assert_int_eq(ctl(&out, &err, "apply", "-f", q, NULL), 0);
	ctl_free(&out, &err);

	ck_assert_int_eq(ctl(&out, &err, "get", "all", NULL), 0);
	ck_assert_msg(strncmp(out, "NAME ", 5) == 0, "%s", out);
	ASSERT_HAS(out, "\nuserspace/ga ");
	ASSERT_HAS(out, "\nuserspace/gb ");
	ASSERT_HAS(out, "\n\nNAME "); /* the quotas' table after a blank line */
	ASSERT_HAS(out, "\nspacequota/team-a ");
	ck_assert(strstr(out, "userspace/gb") < strstr(out, "spacequota/team-a"));
	ctl_free(&out, &err);

	ck_assert_int_eq(ctl(&out, &err, "get", "all", "-o", "name", NULL), 0);
	ck_assert_str_eq(out, "userspace/ga\nuserspace/gb\nspacequota/team-a\n");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "get", "all", "-l", "team=b", "-o", "name", NULL), 0);
	ck_assert_str_eq(out, "userspace/gb\n");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "get", "all", "-o", "yaml", NULL), 2);
	ASSERT_HAS(err, "spacectl get userspaces -o yaml");
	ctl_free(&out, &err);
	free(q);
}
END_TEST

/* ---- get -w ---- */

/* The line of text starting at s (without its newline), malloc'd. */
static char *
line_at(const char *s)
{
	const char *nl = strchr(s, '\n');

	return strndup(s, nl ? (size_t)(nl - s) : strlen(s));
}

START_TEST(get_watch_lines_up_with_get)
{
	char *out, *err, *wout, *werr, *h1, *h2, *age;
	size_t age_col;

	apply_labelled("wa", "a");
	apply_labelled("wb-longer-name", "b");
	ck_assert_int_eq(ctl(&out, &err, "get", "us", "-L", "team", NULL), 0);
	ck_assert_int_eq(
	        ctl(&wout, &werr, "get", "us", "-L", "team", "-w", "--watch-timeout", "1s", NULL),
	        0);
	h1 = line_at(out);
	h2 = line_at(wout);
	ck_assert_str_eq(h1, h2); /* the same columns (-L's too), the same widths */
	ASSERT_HAS(h1, "   TEAM"); /* -L team, after AGE */
	age = strstr(h1, "AGE");
	ck_assert_ptr_nonnull(age);
	age_col = (size_t)(age - h1);
	/* each row alike up to AGE (which may tick between the two runs) */
	for (const char *a = strchr(out, '\n') + 1, *b = strchr(wout, '\n') + 1; *a && *b;) {
		ck_assert_msg(strncmp(a, b, age_col) == 0, "get:\n%s\nget -w:\n%s", out, wout);
		a = strchr(a, '\n') ? strchr(a, '\n') + 1 : "";
		b = strchr(b, '\n') ? strchr(b, '\n') + 1 : "";
	}
	free(h1);
	free(h2);
	ctl_free(&out, &err);
	ctl_free(&wout, &werr);
}
END_TEST

/* ---- delete waits ---- */

/* Removes every finalizer of name, as the controller does once it cleaned up. */
static void
release_finalizers(const char *name)
{
	sk_store *st = ctl_open_store();
	sk_userspace *us = NULL;
	sk_error e;

	sk_error_clear(&e);
	ck_assert_int_eq(sk_store_get(st, name, &us, &e), 0);
	ck_assert_uint_gt(us->meta.n_finalizers, 0);
	ck_assert_int_eq(sk_store_remove_finalizer(
	                         st, name, us->meta.resource_version, us->meta.finalizers[0], &e),
	        0);
	sk_userspace_free(us);
	sk_store_close(st);
}

static bool
log_has(const char *path, const char *text)
{
	char *s = sk_test_slurp(path);
	bool has = s != NULL && strstr(s, text) != NULL;

	free(s);
	return has;
}

START_TEST(delete_waits_until_the_object_is_gone)
{
	const char *env[] = { ctl_env_uri, NULL };
	const char *argv[] = { "spacectl", "delete", "us", "dw", "--timeout", "2m", "--database",
		ctl_db, NULL };
	char log[1200], *out, *err, *s;
	int64_t deadline = sk_monotonic_ms() + 60000;
	sk_userspace *us;
	pid_t pid;

	apply_labelled("dw", "a");
	snprintf(log, sizeof(log), "%s/delete.log", ctl_dir);
	pid = sk_test_spawn(argv, env, log);
	while (!log_has(log, "waiting for userspace/dw to be gone")) {
		ck_assert_msg(sk_monotonic_ms() < deadline, "delete never said it waits");
		ck_assert_msg(kill(pid, 0) == 0, "delete exited without waiting:\n%s",
		        sk_test_slurp(log));
		sk_sleep_ms(50);
	}
	ck_assert_msg(log_has(log, "no controller holds a shard lease"), "no hint");
	ck_assert_int_eq(kill(pid, 0), 0); /* still waiting: the finalizer holds it */
	us = ctl_stored("dw");
	ck_assert_ptr_nonnull(us);
	ck_assert_int_ne(us->meta.deletion_ms, 0);
	sk_userspace_free(us);
	release_finalizers("dw"); /* what the controller does after its cleanup */
	ck_assert_int_eq(sk_test_wait(pid, 60), 0);
	s = sk_test_slurp(log);
	ASSERT_HAS(s, "userspace/dw deleted\n");
	free(s);
	ck_assert_ptr_null(ctl_stored("dw"));

	/* the timeout: exit 1, naming what is still there */
	apply_labelled("dt", "a");
	ck_assert_int_eq(ctl(&out, &err, "delete", "us", "dt", "--timeout", "1s", NULL), 1);
	ASSERT_HAS(out, "userspace/dt deleted\n");
	ASSERT_HAS(err, "error: timed out waiting for userspace/dt to be gone");
	ctl_free(&out, &err);
	us = ctl_stored("dt");
	ck_assert_ptr_nonnull(us); /* marked, still there */
	sk_userspace_free(us);

	/* --wait=false: back once marked, nothing said about waiting */
	apply_labelled("dn", "a");
	ck_assert_int_eq(ctl(&out, &err, "delete", "us", "dn", "--wait=false", NULL), 0);
	ck_assert_str_eq(out, "userspace/dn deleted\n");
	ASSERT_HASNT(err, "waiting");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "delete", "us", "dn", "--timeout", "soon", NULL), 2);
	ctl_free(&out, &err);
}
END_TEST

Suite *
sk_suite_spacectl_newcomer(void)
{
	Suite *s = suite_create("spacectl_newcomer");
	TCase *tc = tcase_create("newcomer");

	tcase_add_checked_fixture(tc, ctl_setup, NULL);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, validate_counts_and_names_each_kind);
	tcase_add_test(tc, top_alone_shows_the_userspaces_and_says_why_cost_is_blank);
	tcase_add_test(tc, get_all_lists_every_kind);
	tcase_add_test(tc, get_watch_lines_up_with_get);
	tcase_add_test(tc, delete_waits_until_the_object_is_gone);
	suite_add_tcase(s, tc);
	return s;
}
