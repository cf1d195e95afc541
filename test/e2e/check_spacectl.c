/*
 * End-to-end tests of the spacectl binary: help and usage, version, validate
 * (offline), apply, get, describe, delete and diff; each checks the output,
 * the exit code and the database state afterwards (read back through pkg/store).
 * Bad input and database faults: check_spacectl_faults.c.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../testutil.h"
#include "spacectl_testlib.h"
#include "util/version.h"

Suite *sk_suite_spacectl_cli(void);
Suite *sk_suite_spacectl_apply(void);
Suite *sk_suite_spacectl_read(void);

/* ------------------------------------------------------------------ help, version, usage */

static const char *const all_commands[] = { "apply", "get", "describe", "delete", "diff",
	"validate", "version" };

START_TEST(help_on_every_command)
{
	char *out, *err, want[64];
	int rc;

	for (size_t i = 0; i < sizeof(all_commands) / sizeof(all_commands[0]); i++) {
		rc = ctl(&out, &err, all_commands[i], "--help", NULL);
		ck_assert_msg(rc == 0, "%s --help: rc %d, %s", all_commands[i], rc, err);
		snprintf(want, sizeof(want), "usage: spacectl %s", all_commands[i]);
		ASSERT_HAS(out, want);
		ASSERT_HAS(out, "--mongodb-uri");
		ctl_free(&out, &err);
		rc = ctl(&out, &err, "help", all_commands[i], NULL);
		ck_assert_int_eq(rc, 0);
		ASSERT_HAS(out, want);
		ctl_free(&out, &err);
	}
	rc = ctl(&out, &err, "--help", NULL);
	ck_assert_int_eq(rc, 0);
	ASSERT_HAS(out, "usage: spacectl");
	for (size_t i = 0; i < sizeof(all_commands) / sizeof(all_commands[0]); i++)
		ASSERT_HAS(out, all_commands[i]);
	ASSERT_HAS(out, "Exit codes");
	ctl_free(&out, &err);
	rc = ctl(&out, &err, "get", "-h", NULL);
	ck_assert_int_eq(rc, 0);
	ASSERT_HAS(out, "usage: spacectl get");
	ctl_free(&out, &err);
}
END_TEST

START_TEST(usage_errors_exit_2)
{
	char *out, *err;

	ck_assert_int_eq(ctl(&out, &err, "apply", "--bogus", "-f", "x.yaml", NULL), 2);
	ASSERT_HAS(err, "unknown flag --bogus");
	ASSERT_HAS(err, "usage: spacectl apply");
	ASSERT_HAS(err, "spacectl apply --help");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "frobnicate", NULL), 2);
	ASSERT_HAS(err, "unknown command");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, NULL), 2);
	ASSERT_HAS(err, "usage: spacectl");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "apply", NULL), 2);
	ASSERT_HAS(err, "-f");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "apply", "--prune", "-f", "x.yaml", NULL), 2);
	ASSERT_HAS(err, "--prune needs a label selector");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "get", NULL), 2);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "get", "pods", NULL), 2);
	ASSERT_HAS(err, "unknown resource type");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "get", "us", "-o", "xml", NULL), 2);
	ctl_free(&out, &err);
	{
		const char *argv[] = { "spacectl", "get", "us", "-o", NULL };
		ck_assert_int_eq(sk_test_run(argv, NULL, NULL, &out, &err, 30), 2);
		ASSERT_HAS(err, "flag -o needs an argument");
		ctl_free(&out, &err);
	}
	/* describe with no name describes all (kubectl's habit): no usage error */
	ck_assert_int_eq(ctl(&out, &err, "describe", NULL), 2);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "describe", "us", "alice", "-l", "a=b", NULL), 2);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "delete", NULL), 2);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "diff", NULL), 2);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "validate", "extra", NULL), 2);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "get", "us", "--timeout", "soon", NULL), 2);
	ASSERT_HAS(err, "--timeout");
	ctl_free(&out, &err);
}
END_TEST

START_TEST(version_text_and_json)
{
	char *out, *err;
	json_t *v;

	ck_assert_int_eq(ctl(&out, &err, "version", NULL), 0);
	ASSERT_HAS(out, SK_VERSION);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "--version", NULL), 0);
	ASSERT_HAS(out, SK_VERSION);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "version", "-o", "json", NULL), 0);
	v = json_loads(out, 0, NULL);
	ck_assert_ptr_nonnull(v);
	ck_assert_str_eq(json_string_value(json_object_get(v, "version")), SK_VERSION);
	json_decref(v);
	ctl_free(&out, &err);
}
END_TEST

/* validate needs no database: the URI points at a closed port (ctl_setup_offline). */
START_TEST(validate_offline)
{
	char *out, *err;
	char *good = ctl_write_us("good.yaml", "alice", "alice", "  template: gpu\n");
	char *bad = ctl_write_us("bad.yaml", "bob", "bob", "  mode: Sleeping\n");
	int64_t t0 = sk_monotonic_ms();

	ck_assert_int_eq(ctl(&out, &err, "validate", "-f", good, NULL), 0);
	ASSERT_HAS(out, "1 valid userspace");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "validate", "-f", bad, NULL), 1);
	ASSERT_HAS(err, "spec.mode");
	ASSERT_HAS(err, "bad.yaml:7:");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "validate", "-f", good, "-f", bad, NULL), 1);
	ctl_free(&out, &err);
	ck_assert_int_eq(
	        ctl(&out, &err, "validate", "-f", sk_test_path("manifests/examples"), NULL), 0);
	ASSERT_HAS(out, "valid userspace");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "validate", "-f", "/nonexistent/x.yaml", NULL), 1);
	ctl_free(&out, &err);
	ck_assert_int_lt(sk_monotonic_ms() - t0, 20000);
	free(good);
	free(bad);
}
END_TEST

/* ------------------------------------------------------------------ apply */

START_TEST(apply_created_configured_unchanged)
{
	char *out, *err, *path = ctl_write_us("alice.yaml", "alice", "alice", NULL);
	sk_userspace *us;
	int64_t rv1, rv2;

	ck_assert_int_eq(ctl(&out, &err, "apply", "-f", path, NULL), 0);
	ck_assert_str_eq(out, "userspace/alice created\n");
	ctl_free(&out, &err);
	us = ctl_stored("alice");
	ck_assert_ptr_nonnull(us);
	ck_assert_int_eq(us->meta.generation, 1);
	ck_assert_str_eq(us->spec.template_id, "base");
	rv1 = us->meta.resource_version;
	sk_userspace_free(us);

	/* The same input again: nothing is written. */
	ck_assert_int_eq(ctl(&out, &err, "apply", "-f", path, NULL), 0);
	ck_assert_str_eq(out, "userspace/alice unchanged\n");
	ctl_free(&out, &err);
	us = ctl_stored("alice");
	ck_assert_int_eq(us->meta.generation, 1);
	ck_assert_int_eq(us->meta.resource_version, rv1);
	sk_userspace_free(us);

	/* Writing the defaults explicitly is the same object. */
	free(path);
	path = ctl_write_us("alice.yaml", "alice", "alice",
	        "  template: base\n  mode: Running\n  lifecycle: {idleTimeout: 15m}\n");
	ck_assert_int_eq(ctl(&out, &err, "apply", "-f", path, NULL), 0);
	ck_assert_str_eq(out, "userspace/alice unchanged\n");
	ctl_free(&out, &err);

	/* A spec change bumps generation. */
	free(path);
	path = ctl_write_us("alice.yaml", "alice", "alice", "  template: gpu\n");
	ck_assert_int_eq(ctl(&out, &err, "apply", "-f", path, NULL), 0);
	ck_assert_str_eq(out, "userspace/alice configured\n");
	ctl_free(&out, &err);
	us = ctl_stored("alice");
	ck_assert_int_eq(us->meta.generation, 2);
	ck_assert_str_eq(us->spec.template_id, "gpu");
	rv2 = us->meta.resource_version;
	ck_assert_int_gt(rv2, rv1);
	sk_userspace_free(us);

	/* A label change is configured too, without a generation bump. */
	free(path);
	path = ctl_write_text("alice.yaml",
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	        "metadata:\n  name: alice\n  labels: {team: research}\n"
	        "spec:\n  userID: alice\n  template: gpu\n");
	ck_assert_int_eq(ctl(&out, &err, "apply", "-f", path, NULL), 0);
	ck_assert_str_eq(out, "userspace/alice configured\n");
	ctl_free(&out, &err);
	us = ctl_stored("alice");
	ck_assert_int_eq(us->meta.generation, 2);
	ck_assert_int_gt(us->meta.resource_version, rv2);
	ck_assert_str_eq(sk_kvlist_get(&us->meta.labels, "team"), "research");
	sk_userspace_free(us);
	free(path);
}
END_TEST

START_TEST(apply_from_stdin_and_directory)
{
	char *out, *err, *yaml = ctl_us_yaml("stdin-one", "u-stdin", NULL);
	char sub[1100];
	char *p1, *p2, *p3;

	ck_assert_int_eq(ctl_stdin(yaml, &out, &err, "apply", "-f", "-", NULL), 0);
	ck_assert_str_eq(out, "userspace/stdin-one created\n");
	ctl_free(&out, &err);
	free(yaml);
	{
		sk_userspace *us = ctl_stored("stdin-one");
		ck_assert_ptr_nonnull(us);
		sk_userspace_free(us);
	}

	snprintf(sub, sizeof(sub), "%s/many", ctl_dir);
	mkdir(sub, 0755);
	p1 = ctl_write_us("many/a.yaml", "d-a", "d-a", NULL);
	p2 = ctl_write_text("many/b.yaml",
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\nmetadata: {name: d-b}\n"
	        "spec: {userID: d-b}\n---\napiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	        "metadata: {name: d-c}\nspec: {userID: d-c, mode: Paused}\n");
	p3 = ctl_write_text("many/d.json",
	        "{\"apiVersion\":\"spacekeeper.dev/v1alpha1\",\"kind\":\"UserSpace\","
	        "\"metadata\":{\"name\":\"d-d\"},\"spec\":{\"userID\":\"d-d\"}}");
	ck_assert_int_eq(ctl(&out, &err, "apply", "-f", sub, NULL), 0);
	ASSERT_HAS(out, "userspace/d-a created\n");
	ASSERT_HAS(out, "userspace/d-b created\n");
	ASSERT_HAS(out, "userspace/d-c created\n");
	ASSERT_HAS(out, "userspace/d-d created\n");
	ctl_free(&out, &err);
	ck_assert_uint_eq(ctl_count(), 5);
	{
		sk_userspace *c = ctl_stored("d-c");
		ck_assert_int_eq(c->spec.mode, SK_MODE_PAUSED);
		sk_userspace_free(c);
	}
	free(p1);
	free(p2);
	free(p3);
}
END_TEST

START_TEST(apply_dry_run_writes_nothing)
{
	char *out, *err, *path = ctl_write_us("a.yaml", "dry", "dry", NULL);
	sk_userspace *us;
	int64_t rv;

	ck_assert_int_eq(ctl(&out, &err, "apply", "--dry-run", "-f", path, NULL), 0);
	ck_assert_str_eq(out, "userspace/dry created (dry run)\n");
	ctl_free(&out, &err);
	ck_assert_uint_eq(ctl_count(), 0);

	ck_assert_int_eq(ctl(&out, &err, "apply", "-f", path, NULL), 0);
	ctl_free(&out, &err);
	us = ctl_stored("dry");
	rv = us->meta.resource_version;
	sk_userspace_free(us);
	free(path);
	path = ctl_write_us("a.yaml", "dry", "dry", "  mode: Paused\n");
	ck_assert_int_eq(ctl(&out, &err, "apply", "--dry-run", "-f", path, NULL), 0);
	ck_assert_str_eq(out, "userspace/dry configured (dry run)\n");
	ctl_free(&out, &err);
	us = ctl_stored("dry");
	ck_assert_int_eq(us->meta.resource_version, rv);
	ck_assert_int_eq(us->spec.mode, SK_MODE_RUNNING);
	sk_userspace_free(us);
	free(path);
}
END_TEST

START_TEST(apply_prune_with_selector)
{
	char *out, *err, *all, *fewer;
	sk_userspace *us;

	all = ctl_write_text("all.yaml",
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\nmetadata: {name: p-a, "
	        "labels: {team: x}}\nspec: {userID: p-a}\n---\n"
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\nmetadata: {name: p-b, "
	        "labels: {team: x}}\nspec: {userID: p-b}\n---\n"
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\nmetadata: {name: p-c, "
	        "labels: {team: z}}\nspec: {userID: p-c}\n");
	ck_assert_int_eq(ctl(&out, &err, "apply", "-f", all, NULL), 0);
	ctl_free(&out, &err);
	fewer = ctl_write_text("fewer.yaml",
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\nmetadata: {name: p-a, "
	        "labels: {team: x}}\nspec: {userID: p-a}\n");
	ck_assert_int_eq(
	        ctl(&out, &err, "apply", "--prune", "-l", "team=x", "--dry-run", "-f", fewer, NULL),
	        0);
	ASSERT_HAS(out, "userspace/p-b pruned (dry run)");
	ctl_free(&out, &err);
	us = ctl_stored("p-b");
	ck_assert_int_eq(us->meta.deletion_ms, 0);
	sk_userspace_free(us);

	ck_assert_int_eq(ctl(&out, &err, "apply", "--prune", "-l", "team=x", "-f", fewer, NULL), 0);
	ASSERT_HAS(out, "userspace/p-a unchanged\n");
	ASSERT_HAS(out, "userspace/p-b pruned\n");
	ASSERT_HASNT(out, "p-c");
	ctl_free(&out, &err);
	us = ctl_stored("p-b"); /* marked; the finalizer keeps it until the controller is done */
	ck_assert_ptr_nonnull(us);
	ck_assert_int_ne(us->meta.deletion_ms, 0);
	sk_userspace_free(us);
	us = ctl_stored("p-c");
	ck_assert_int_eq(us->meta.deletion_ms, 0);
	sk_userspace_free(us);
	us = ctl_stored("p-a");
	ck_assert_int_eq(us->meta.deletion_ms, 0);
	sk_userspace_free(us);
	free(all);
	free(fewer);
}
END_TEST

/* ------------------------------------------------------------------ get, describe */

static void
apply_three(void)
{
	char *out, *err;
	char *p = ctl_write_text("three.yaml",
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\nmetadata: {name: g-a, "
	        "labels: {team: research}}\nspec: {userID: ua, template: gpu}\n---\n"
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\nmetadata: {name: g-b, "
	        "labels: {team: research}}\nspec: {userID: ub, mode: Paused}\n---\n"
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\nmetadata: {name: g-c, "
	        "labels: {team: ops}}\nspec: {userID: uc}\n");

	ck_assert_int_eq(ctl(&out, &err, "apply", "-f", p, NULL), 0);
	ctl_free(&out, &err);
	free(p);
}

START_TEST(get_formats_and_selectors)
{
	char *out, *err;
	json_t *v;

	ck_assert_int_eq(ctl(&out, &err, "get", "userspaces", NULL), 0);
	ASSERT_HAS(err, "No resources found.");
	ck_assert_str_eq(out, "");
	ctl_free(&out, &err);
	apply_three();

	ck_assert_int_eq(ctl(&out, &err, "get", "us", NULL), 0);
	ASSERT_HAS(out, "NAME");
	ASSERT_HAS(out, "USERID");
	ASSERT_HAS(out, "MODE");
	ASSERT_HAS(out, "PHASE");
	ASSERT_HAS(out, "SANDBOX");
	ASSERT_HAS(out, "READY");
	ASSERT_HAS(out, "AGE");
	ASSERT_HAS(out, "g-a");
	ASSERT_HAS(out, "Paused");
	ASSERT_HASNT(out, "TEMPLATE");
	ctl_free(&out, &err);

	ck_assert_int_eq(ctl(&out, &err, "get", "userspace", "-o", "wide", NULL), 0);
	ASSERT_HAS(out, "PROVIDER");
	ASSERT_HAS(out, "TEMPLATE");
	ASSERT_HAS(out, "GENERATION");
	ASSERT_HAS(out, "LABELS");
	ASSERT_HAS(out, "gpu");
	ASSERT_HAS(out, "team=ops");
	ctl_free(&out, &err);

	ck_assert_int_eq(ctl(&out, &err, "get", "us", "-o", "json", NULL), 0);
	v = json_loads(out, 0, NULL);
	ck_assert_ptr_nonnull(v);
	ck_assert_str_eq(json_string_value(json_object_get(v, "kind")), "List");
	ck_assert_uint_eq(json_array_size(json_object_get(v, "items")), 3);
	json_decref(v);
	ctl_free(&out, &err);

	ck_assert_int_eq(
	        ctl(&out, &err, "get", "us", "-l", "team=research", "-o", "json", NULL), 0);
	v = json_loads(out, 0, NULL);
	ck_assert_uint_eq(json_array_size(json_object_get(v, "items")), 2);
	json_decref(v);
	ctl_free(&out, &err);

	ck_assert_int_eq(ctl(&out, &err, "get", "us", "-l", "team!=research", NULL), 0);
	ASSERT_HAS(out, "g-c");
	ASSERT_HASNT(out, "g-a");
	ctl_free(&out, &err);

	ck_assert_int_eq(ctl(&out, &err, "get", "us", "g-b", "-o", "json", NULL), 0);
	v = json_loads(out, 0, NULL);
	ck_assert_ptr_nonnull(v);
	ck_assert_str_eq(json_string_value(json_object_get(v, "kind")), "UserSpace");
	ck_assert_str_eq(
	        json_string_value(json_object_get(json_object_get(v, "metadata"), "name")), "g-b");
	ck_assert_str_eq(
	        json_string_value(json_object_get(json_object_get(v, "spec"), "mode")), "Paused");
	json_decref(v);
	ctl_free(&out, &err);

	ck_assert_int_eq(ctl(&out, &err, "get", "us", "-o", "yaml", NULL), 0);
	ASSERT_HAS(out, "kind: List");
	ASSERT_HAS(out, "items:");
	ASSERT_HAS(out, "name: g-c");
	ctl_free(&out, &err);

	ck_assert_int_eq(ctl(&out, &err, "get", "us", "g-a", "-o", "yaml", NULL), 0);
	ASSERT_HAS(out, "kind: UserSpace");
	ASSERT_HAS(out, "template: gpu");
	ctl_free(&out, &err);

	ck_assert_int_eq(ctl(&out, &err, "get", "us", "nobody", NULL), 1);
	ASSERT_HAS(err, "userspaces \"nobody\" not found");
	ctl_free(&out, &err);

	/* Global flags also go before the command, in both spellings. */
	{
		char dbflag[128];
		const char *env[] = { ctl_env_uri, NULL };
		const char *argv[] = { "spacectl", dbflag, "--timeout", "5s", "get", "us", "g-a",
			NULL };
		snprintf(dbflag, sizeof(dbflag), "--database=%s", ctl_db);
		ck_assert_int_eq(sk_test_run(argv, env, NULL, &out, &err, 60), 0);
		ASSERT_HAS(out, "g-a");
		ctl_free(&out, &err);
	}

	ck_assert_int_eq(ctl(&out, &err, "get", "us", "-l", "team in (", NULL), 2);
	ctl_free(&out, &err);
}
END_TEST

/* get -o yaml output is valid input for apply: unchanged. */
START_TEST(get_yaml_round_trips_through_apply)
{
	char *out, *err, *p;

	apply_three();
	ck_assert_int_eq(ctl(&out, &err, "get", "us", "g-a", "-o", "yaml", NULL), 0);
	p = ctl_write_text("back.yaml", out);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "apply", "-f", p, NULL), 0);
	ck_assert_str_eq(out, "userspace/g-a unchanged\n");
	ctl_free(&out, &err);
	free(p);
}
END_TEST

START_TEST(describe_shows_status_and_events)
{
	char *out, *err,
	        *p = ctl_write_text("d.yaml",
	                "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\nmetadata: {name: "
	                "desc, "
	                "labels: {team: research}}\nspec: {userID: udesc, env: {EDITOR: vim}}\n");
	sk_userspace_status status;
	sk_condition cond;
	sk_userspace *us, *updated = NULL;
	sk_store *st;
	sk_error e;

	ck_assert_int_eq(ctl(&out, &err, "apply", "-f", p, NULL), 0);
	ctl_free(&out, &err);
	st = ctl_open_store();
	us = ctl_stored("desc");
	memset(&status, 0, sizeof(status));
	memset(&cond, 0, sizeof(cond));
	cond.type = "Ready";
	cond.status = "True";
	cond.reason = "SandboxRunning";
	cond.message = "sandbox answers";
	cond.last_transition_ms = sk_now_ms();
	status.phase = SK_PHASE_RUNNING;
	status.sandbox_id = "isb123";
	status.observed_generation = 1;
	status.conditions = &cond;
	status.n_conditions = 1;
	ck_assert_msg(sk_store_write_status(st, us, &status, &updated, &e) == 0, "%s", e.message);
	ck_assert_int_eq(sk_store_event(st, "desc", us->meta.uid, "Normal", "Created",
	                         "created sandbox isb123", &e),
	        0);
	ck_assert_int_eq(
	        sk_store_event(st, "desc", us->meta.uid, "Warning", "ProbeFailed", "envd 504", &e),
	        0);
	ck_assert_int_eq(sk_store_event(st, "desc", us->meta.uid, "Warning", "ProbeFailed",
	                         "envd 504 again", &e),
	        0);
	sk_userspace_free(us);
	sk_userspace_free(updated);
	sk_store_close(st);

	ck_assert_int_eq(ctl(&out, &err, "describe", "userspace", "desc", NULL), 0);
	ASSERT_HAS(out, "Name:");
	ASSERT_HAS(out, "desc");
	ASSERT_HAS(out, "team=research");
	ASSERT_HAS(out, "Generation:");
	ASSERT_HAS(out, "Finalizers:");
	ASSERT_HAS(out, "spacekeeper.dev/cleanup");
	ASSERT_HAS(out, "Spec:");
	ASSERT_HAS(out, "udesc");
	ASSERT_HAS(out, "base"); /* defaults are shown */
	ASSERT_HAS(out, "15m");
	ASSERT_HAS(out, "EDITOR");
	ASSERT_HAS(out, "Running");
	ASSERT_HAS(out, "isb123");
	ASSERT_HAS(out, "Conditions:");
	ASSERT_HAS(out, "SandboxRunning");
	ASSERT_HAS(out, "Events:");
	ASSERT_HAS(out, "ProbeFailed");
	ASSERT_HAS(out, "envd 504 again");
	ASSERT_HAS(out, "created sandbox isb123");
	ctl_free(&out, &err);

	ck_assert_int_eq(ctl(&out, &err, "describe", "us", "ghost", NULL), 1);
	ASSERT_HAS(err, "not found");
	ctl_free(&out, &err);
	free(p);
}
END_TEST

/* ------------------------------------------------------------------ delete, diff */

START_TEST(delete_marks_and_force_removes)
{
	char *out, *err;
	char *p = ctl_write_us("del.yaml", "g-c", "uc", NULL);
	sk_userspace *us;

	apply_three();
	ck_assert_int_eq(ctl(&out, &err, "delete", "userspace", "g-a", "--wait=false", NULL), 0);
	ck_assert_str_eq(out, "userspace/g-a deleted\n");
	ctl_free(&out, &err);
	us = ctl_stored("g-a");
	ck_assert_ptr_nonnull(us); /* the finalizer keeps it for the controller */
	ck_assert_int_ne(us->meta.deletion_ms, 0);
	sk_userspace_free(us);
	ck_assert_int_eq(ctl(&out, &err, "get", "us", "g-a", NULL), 0);
	ASSERT_HAS(out, "Deleting"); /* the phase's word, as metrics and the connect API say */
	ASSERT_HASNT(out, "Terminating");
	ctl_free(&out, &err);

	ck_assert_int_eq(ctl(&out, &err, "delete", "us", "nobody", NULL), 1);
	ASSERT_HAS(err, "not found");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "delete", "us", "nobody", "--ignore-not-found", NULL), 0);
	ctl_free(&out, &err);

	ck_assert_int_eq(ctl(&out, &err, "delete", "us", "g-b", "--force", NULL), 0);
	ASSERT_HAS(out, "userspace/g-b deleted");
	ASSERT_HAS(err, "warning");
	ASSERT_HAS(err, "not cleaned up");
	ctl_free(&out, &err);
	ck_assert_ptr_null(ctl_stored("g-b"));

	ck_assert_int_eq(ctl(&out, &err, "delete", "-f", p, "--wait=false", NULL), 0);
	ck_assert_str_eq(out, "userspace/g-c deleted\n");
	ctl_free(&out, &err);
	us = ctl_stored("g-c");
	ck_assert_int_ne(us->meta.deletion_ms, 0);
	sk_userspace_free(us);
	free(p);
}
END_TEST

START_TEST(diff_exit_codes)
{
	char *out, *err, *p = ctl_write_us("diff.yaml", "dalice", "dalice", NULL);
	char *bad = ctl_write_us("bad.yaml", "dbad", "bad id!", NULL);

	ck_assert_int_eq(ctl(&out, &err, "diff", "-f", p, NULL), 1);
	ASSERT_HAS(out, "--- live/dalice");
	ASSERT_HAS(out, "+++ merged/dalice");
	ASSERT_HAS(out, "+  userID: dalice");
	ASSERT_HAS(out, "+  template: base");
	ctl_free(&out, &err);
	ck_assert_uint_eq(ctl_count(), 0);

	ck_assert_int_eq(ctl(&out, &err, "apply", "-f", p, NULL), 0);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "diff", "-f", p, NULL), 0);
	ck_assert_str_eq(out, "");
	ctl_free(&out, &err);

	free(p);
	p = ctl_write_us("diff.yaml", "dalice", "dalice", "  template: gpu\n");
	ck_assert_int_eq(ctl(&out, &err, "diff", "-f", p, NULL), 1);
	ASSERT_HAS(out, "-  template: base");
	ASSERT_HAS(out, "+  template: gpu");
	ASSERT_HASNT(out, "resourceVersion");
	ASSERT_HASNT(out, "status");
	ctl_free(&out, &err);
	{
		sk_userspace *us = ctl_stored("dalice");
		ck_assert_str_eq(us->spec.template_id, "base");
		sk_userspace_free(us);
	}

	ck_assert_int_ge(ctl(&out, &err, "diff", "-f", bad, NULL), 2);
	ASSERT_HAS(err, "spec.userID");
	ctl_free(&out, &err);
	free(p);
	free(bad);
}
END_TEST

Suite *
sk_suite_spacectl_cli(void)
{
	Suite *s = suite_create("spacectl_cli");
	TCase *tc = tcase_create("offline");

	tcase_add_checked_fixture(tc, ctl_setup_offline, NULL);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, help_on_every_command);
	tcase_add_test(tc, usage_errors_exit_2);
	tcase_add_test(tc, version_text_and_json);
	tcase_add_test(tc, validate_offline);
	suite_add_tcase(s, tc);
	return s;
}

Suite *
sk_suite_spacectl_apply(void)
{
	Suite *s = suite_create("spacectl_apply");
	TCase *tc = tcase_create("apply");

	tcase_add_checked_fixture(tc, ctl_setup, NULL);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, apply_created_configured_unchanged);
	tcase_add_test(tc, apply_from_stdin_and_directory);
	tcase_add_test(tc, apply_dry_run_writes_nothing);
	tcase_add_test(tc, apply_prune_with_selector);
	suite_add_tcase(s, tc);
	return s;
}

Suite *
sk_suite_spacectl_read(void)
{
	Suite *s = suite_create("spacectl_read");
	TCase *tc = tcase_create("read");

	tcase_add_checked_fixture(tc, ctl_setup, NULL);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, get_formats_and_selectors);
	tcase_add_test(tc, get_yaml_round_trips_through_apply);
	tcase_add_test(tc, describe_shows_status_and_events);
	tcase_add_test(tc, delete_marks_and_force_removes);
	tcase_add_test(tc, diff_exit_codes);
	suite_add_tcase(s, tc);
	return s;
}
