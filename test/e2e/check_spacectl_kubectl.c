/*
 * End-to-end tests of spacectl's kubectl habits: get -o name,
 * -o jsonpath, --no-headers, --show-labels, --sort-by, -o=FORMAT, TYPE/NAME
 * everywhere, delete -l / --all, patch, edit, "did you mean", completion,
 * explain and config contexts. The real binary against FerretDB.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../testutil.h"
#include "api/schema.h"
#include "spacectl_testlib.h"

Suite *sk_suite_spacectl_kubectl(void);

#define US_DOC                                                                                     \
	"apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\nmetadata:\n  name: %s\n"           \
	"  labels: {team: %s}\nspec:\n  userID: %s\n  template: %s\n"

/* alice (team a, user u-c), bob (team b, user u-a), carol (team a, user u-b):
 * name order, user order and team order all differ. */
static void
apply_three(void)
{
	char *doc = sk_asprintf(US_DOC "---\n" US_DOC "---\n" US_DOC, "alice", "a", "u-c", "base",
	        "bob", "b", "u-a", "gpu", "carol", "a", "u-b", "base");
	char *out, *err;

	ck_assert_msg(ctl_stdin(doc, &out, &err, "apply", "-f", "-", NULL) == 0, "apply: %s", err);
	ctl_free(&out, &err);
	free(doc);
}

/* Runs spacectl with extra environment ("K=V", NULL-terminated) and args. */
static int
ctl_env(const char *const *env, const char *in, char **out, char **err, const char *const *args)
{
	const char *argv[40], *envs[12];
	size_t n = 0, e = 0;

	argv[n++] = "spacectl";
	for (size_t i = 0; args[i] && n < 36; i++)
		argv[n++] = args[i];
	argv[n++] = "--database";
	argv[n++] = ctl_db;
	argv[n] = NULL;
	envs[e++] = ctl_env_uri;
	for (size_t i = 0; env && env[i] && e < 11; i++)
		envs[e++] = env[i];
	envs[e] = NULL;
	return sk_test_run(argv, envs, in, out, err, 60);
}

/* The whole file (NULL when unreadable); caller frees. */
static char *
read_text(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0;
	long n;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		buf = calloc(1, (size_t)n + 1);
		len = fread(buf, 1, (size_t)n, f);
		buf[len] = '\0';
	}
	fclose(f);
	return buf;
}

/* ---- get ---- */

START_TEST(get_output_name)
{
	char *out, *err;

	apply_three();
	ck_assert_int_eq(ctl(&out, &err, "get", "us", "-o", "name", NULL), 0);
	ck_assert_str_eq(out, "userspace/alice\nuserspace/bob\nuserspace/carol\n");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "get", "us", "-l", "team=a", "-o=name", NULL), 0);
	ck_assert_str_eq(out, "userspace/alice\nuserspace/carol\n");
	ctl_free(&out, &err);
}
END_TEST

START_TEST(get_jsonpath)
{
	char *out, *err;

	apply_three();
	ck_assert_int_eq(
	        ctl(&out, &err, "get", "us", "-o", "jsonpath={.items[*].metadata.name}", NULL), 0);
	ck_assert_str_eq(out, "alice bob carol");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "get", "us",
	                         "-o=jsonpath={range .items[*]}"
	                         "{.metadata.name}={.spec.userID}{\"\\n\"}{end}",
	                         NULL),
	        0);
	ck_assert_str_eq(out, "alice=u-c\nbob=u-a\ncarol=u-b\n");
	ctl_free(&out, &err);
	/* one object: the root is the object; missing fields print nothing */
	ck_assert_int_eq(ctl(&out, &err, "get", "us/bob", "-o",
	                         "jsonpath=t={.spec.template} l={.metadata.labels} "
	                         "x={.spec.nothing} i={.items[0]}",
	                         NULL),
	        0);
	ck_assert_str_eq(out, "t=gpu l={\"team\":\"b\"} x= i=");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "get", "us", "-o",
	                         "jsonpath={.items[-1].metadata.labels['team']}", NULL),
	        0);
	ck_assert_str_eq(out, "a");
	ctl_free(&out, &err);
}
END_TEST

START_TEST(get_jsonpath_unsupported)
{
	static const char *const bad[][2] = {
		{ "jsonpath={.items[?(@.spec.userID==\"u-a\")]}", "unsupported subscript" },
		{ "jsonpath={..name}", "recursive descent" },
		{ "jsonpath={.items[0:2]}", "unsupported subscript" },
		{ "jsonpath={range .items[*]}{.metadata.name}", "{range} without {end}" },
		{ "jsonpath={end}", "{end} without {range}" },
		{ "jsonpath={.metadata.name", "unclosed" },
	};
	char *out, *err;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(ctl(&out, &err, "get", "us", "-o", bad[i][0], NULL), 2);
		ASSERT_HAS(err, bad[i][1]);
		ASSERT_HAS(err, "at offset");
		ck_assert_str_eq(out, "");
		ctl_free(&out, &err);
	}
}
END_TEST

START_TEST(get_headers_labels_sort)
{
	char *out, *err;

	apply_three();
	ck_assert_int_eq(ctl(&out, &err, "get", "us", "--no-headers", NULL), 0);
	ASSERT_HASNT(out, "NAME");
	ck_assert_msg(strncmp(out, "alice ", 6) == 0, "%s", out);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "get", "us", "--show-labels", NULL), 0);
	ASSERT_HAS(out, "LABELS");
	ASSERT_HAS(out, "team=b");
	ASSERT_HASNT(out, "PROVIDER"); /* not the wide table */
	ctl_free(&out, &err);
	ck_assert_int_eq(
	        ctl(&out, &err, "get", "us", "--sort-by=.spec.userID", "-o", "name", NULL), 0);
	ck_assert_str_eq(out, "userspace/bob\nuserspace/carol\nuserspace/alice\n");
	ctl_free(&out, &err);
	/* stable: equal keys keep the name order */
	ck_assert_int_eq(ctl(&out, &err, "get", "us", "--sort-by", "{.metadata.labels.team}",
	                         "--no-headers", "-o=wide", NULL),
	        0);
	ck_assert_msg(strncmp(out, "alice", 5) == 0 && strstr(out, "carol") < strstr(out, "bob") &&
	                strstr(out, "default") != NULL,
	        "%s", out);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "get", "us", "--sort-by", "{.x[?(@)]}", NULL), 2);
	ASSERT_HAS(err, "--sort-by:");
	ctl_free(&out, &err);
}
END_TEST

START_TEST(output_equals_form_everywhere)
{
	char *out, *err;

	apply_three();
	ck_assert_int_eq(ctl(&out, &err, "get", "us", "alice", "-o=yaml", NULL), 0);
	ASSERT_HAS(out, "name: alice");
	ctl_free(&out, &err);
	{
		const char *const args[] = { "events", "-o=json", NULL };
		ck_assert_int_eq(ctl_env(NULL, NULL, &out, &err, args), 0);
		ctl_free(&out, &err);
	}
	ck_assert_int_eq(ctl(&out, &err, "get", "us", "-o=bogus", NULL), 2);
	ASSERT_HAS(err, "unknown output format \"bogus\"");
	ctl_free(&out, &err);
}
END_TEST

START_TEST(type_slash_name_everywhere)
{
	char *out, *err;

	apply_three();
	ck_assert_int_eq(
	        ctl(&out, &err, "get", "us/alice", "userspace/bob", "-o", "name", NULL), 0);
	ck_assert_str_eq(out, "userspace/alice\nuserspace/bob\n");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "describe", "us/carol", NULL), 0);
	ASSERT_HAS(out, "carol");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "events", "userspace/carol", NULL), 0);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "get", "us/ghost", NULL), 1);
	ASSERT_HAS(err, "\"ghost\" not found");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "get", "us", "us/alice", NULL), 2);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "get", "pods/alice", NULL), 2);
	ASSERT_HAS(err, "unknown resource type \"pods\"");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "delete", "us/bob", "--wait=false", NULL), 0);
	ASSERT_HAS(out, "userspace/bob deleted");
	ctl_free(&out, &err);
	{
		sk_userspace *b = ctl_stored("bob");
		ck_assert_ptr_nonnull(b);
		ck_assert(b->meta.deletion_ms != 0);
		sk_userspace_free(b);
	}
}
END_TEST

START_TEST(mistyped_resource_type)
{
	char *out, *err;

	ck_assert_int_eq(ctl(&out, &err, "get", "userspcae", NULL), 2);
	ASSERT_HAS(err, "did you mean \"userspace\"?");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "get", "nodes", NULL), 2);
	ASSERT_HASNT(err, "did you mean");
	ctl_free(&out, &err);
}
END_TEST

/* ---- delete -l / --all ---- */

START_TEST(delete_by_selector)
{
	char *out, *err;

	apply_three();
	ck_assert_int_eq(ctl(&out, &err, "delete", "us", "-l", "team=a", "--wait=false", NULL), 0);
	ck_assert_str_eq(out, "userspace/alice deleted\nuserspace/carol deleted\n");
	ctl_free(&out, &err);
	{
		sk_userspace *a = ctl_stored("alice"), *b = ctl_stored("bob");
		ck_assert(a->meta.deletion_ms != 0); /* marked, the controller cleans up */
		ck_assert(b->meta.deletion_ms == 0);
		sk_userspace_free(a);
		sk_userspace_free(b);
	}
	ck_assert_int_eq(ctl(&out, &err, "delete", "us", "-l", "team=none", NULL), 0);
	ck_assert_str_eq(out, "");
	ASSERT_HAS(err, "No resources found.");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "delete", "us", "-l", "team in (", NULL), 2);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "delete", "us", "alice", "-l", "team=a", NULL), 2);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "delete", "us", NULL), 2);
	ASSERT_HAS(err, "--all");
	ctl_free(&out, &err);
}
END_TEST

START_TEST(delete_all_forced)
{
	char *out, *err;

	apply_three();
	ck_assert_int_eq(ctl(&out, &err, "delete", "us", "--all", "--force", NULL), 0);
	ASSERT_HAS(out, "userspace/bob deleted (forced)");
	ASSERT_HAS(err, "not cleaned up");
	ctl_free(&out, &err);
	ck_assert_uint_eq(ctl_count(), 0);
	ck_assert_int_eq(ctl(&out, &err, "delete", "us", "--all", NULL), 0);
	ASSERT_HAS(err, "No resources found.");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "delete", "us", "--all", "-l", "a=b", NULL), 2);
	ctl_free(&out, &err);
}
END_TEST

/* ---- patch ---- */

START_TEST(patch_merge)
{
	char *out, *err;
	sk_userspace *a;
	int64_t rv;

	apply_three();
	ck_assert_int_eq(ctl(&out, &err, "patch", "us", "alice", "--type", "merge", "-p",
	                         "{\"spec\":{\"mode\":\"Paused\",\"env\":{\"K\":\"v\"}},"
	                         "\"metadata\":{\"labels\":{\"team\":null,\"x\":\"y\"}}}",
	                         NULL),
	        0);
	ck_assert_str_eq(out, "userspace/alice patched\n");
	ctl_free(&out, &err);
	a = ctl_stored("alice");
	ck_assert_int_eq(a->spec.mode, SK_MODE_PAUSED);
	ck_assert_str_eq(sk_kvlist_get(&a->spec.env, "K"), "v");
	ck_assert_ptr_null(sk_kvlist_get(&a->meta.labels, "team")); /* null removes */
	ck_assert_str_eq(sk_kvlist_get(&a->meta.labels, "x"), "y");
	ck_assert_str_eq(a->spec.template_id, "base"); /* untouched */
	rv = a->meta.resource_version;
	sk_userspace_free(a);
	/* the same patch again: nothing written */
	ck_assert_int_eq(
	        ctl(&out, &err, "patch", "us/alice", "-p", "spec: {mode: Paused}", NULL), 0);
	ck_assert_str_eq(out, "userspace/alice patched (no change)\n");
	ctl_free(&out, &err);
	a = ctl_stored("alice");
	ck_assert_int_eq(a->meta.resource_version, rv);
	sk_userspace_free(a);
}
END_TEST

START_TEST(patch_refusals)
{
	char *out, *err;
	sk_userspace *a;

	apply_three();
	ck_assert_int_eq(
	        ctl(&out, &err, "patch", "us/alice", "-p", "{\"spec\":{\"mode\":\"Bogus\"}}", NULL),
	        1);
	ASSERT_HAS(err, "spec.mode: must be one of");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "patch", "us/alice", "-p",
	                         "{\"metadata\":{\"name\":\"zed\"}}", NULL),
	        1);
	ASSERT_HAS(err, "metadata.name: cannot be changed");
	ctl_free(&out, &err);
	ck_assert_int_eq(
	        ctl(&out, &err, "patch", "us/alice", "-p", "{\"spec\":{\"userID\":\"u-a\"}}", NULL),
	        1); /* bob's */
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "patch", "us/alice", "-p", "{\"spec\":", NULL), 2);
	ASSERT_HAS(err, "-p: <patch>:");
	ctl_free(&out, &err);
	ck_assert_int_eq(
	        ctl(&out, &err, "patch", "us/alice", "--type", "json", "-p", "[]", NULL), 2);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "patch", "us/ghost", "-p", "{}", NULL), 1);
	ASSERT_HAS(err, "not found");
	ctl_free(&out, &err);
	/* --dry-run prints the result and writes nothing */
	ck_assert_int_eq(ctl(&out, &err, "patch", "us/alice", "--dry-run", "-p",
	                         "{\"spec\":{\"template\":\"gpu\"}}", NULL),
	        0);
	ASSERT_HAS(out, "template: gpu");
	ctl_free(&out, &err);
	a = ctl_stored("alice");
	ck_assert_str_eq(a->spec.template_id, "base");
	ck_assert_int_eq(a->spec.mode, SK_MODE_RUNNING);
	sk_userspace_free(a);
}
END_TEST

/* ---- edit ---- */

/* An editor script in the test directory; returns "EDITOR=path" (malloc'd). */
static char *
editor_script(const char *name, const char *body)
{
	char *text = sk_asprintf("#!/bin/sh\n%s", body), *path = ctl_write_text(name, text);
	char *env = sk_asprintf("EDITOR=%s", path);

	chmod(path, 0755);
	free(text);
	free(path);
	return env;
}

START_TEST(edit_applies_with_cas)
{
	char *out, *err,
	        *ed = editor_script("ed.sh", "sed -i 's/template: base/template: gpu/' \"$1\"\n");
	char *dir = sk_asprintf("%s/it's a dir", ctl_dir), *tmp = sk_asprintf("TMPDIR=%s", dir);
	const char *env[] = { ed, tmp, NULL }, *args[] = { "edit", "us/alice", NULL };
	sk_userspace *a;

	mkdir(dir, 0755); /* a quote and spaces in the temporary file's path */
	apply_three();
	ck_assert_int_eq(ctl_env(env, NULL, &out, &err, args), 0);
	ck_assert_str_eq(out, "userspace/alice edited\n");
	ctl_free(&out, &err);
	a = ctl_stored("alice");
	ck_assert_str_eq(a->spec.template_id, "gpu");
	ck_assert_int_eq(a->meta.generation, 2);
	sk_userspace_free(a);
	/* again: the file is the same, nothing to write */
	ck_assert_int_eq(ctl_env(env, NULL, &out, &err, args), 0);
	ck_assert_str_eq(out, "Edit cancelled, no changes made.\n");
	ctl_free(&out, &err);
	free(ed);
	free(tmp);
	free(dir);
}
END_TEST

START_TEST(edit_reopens_on_error)
{
	char *out, *err, *copy = sk_asprintf("%s/round2.yaml", ctl_dir);
	char *body = sk_asprintf(
	        "n=$(cat %s/count 2>/dev/null || echo 0); n=$((n+1)); echo $n >%s/count\n"
	        "cp \"$1\" %s/round$n.yaml\n"
	        "if [ $n = 1 ]; then sed -i 's/mode: Running/mode: Sleeping/' \"$1\";\n"
	        "else sed -i 's/mode: Sleeping/mode: Paused/' \"$1\"; fi\n",
	        ctl_dir, ctl_dir, ctl_dir);
	char *ed = editor_script("ed.sh", body), *text;
	const char *env[] = { ed, NULL }, *args[] = { "edit", "userspace", "bob", NULL };
	sk_userspace *b;

	apply_three();
	ck_assert_int_eq(ctl_env(env, NULL, &out, &err, args), 0);
	ck_assert_str_eq(out, "userspace/bob edited\n");
	ctl_free(&out, &err);
	text = read_text(copy);
	ck_assert_ptr_nonnull(text);
	ck_assert_msg(strncmp(text, "# Please edit", 13) == 0, "%s", text);
	ASSERT_HAS(text, "# userspaces \"bob\" was not valid:\n# * spec.mode: must be one of");
	ASSERT_HAS(text, "mode: Sleeping"); /* the user's text, not the original */
	free(text);
	b = ctl_stored("bob");
	ck_assert_int_eq(b->spec.mode, SK_MODE_PAUSED);
	sk_userspace_free(b);
	free(ed);
	free(body);
	free(copy);
}
END_TEST

START_TEST(edit_cancels)
{
	char *out, *err, *tmp = sk_asprintf("TMPDIR=%s", ctl_dir);
	char *bad = editor_script("bad.sh", "sed -i 's/mode: Running/mode: Sleeping/' \"$1\"\n");
	char *empty = editor_script("empty.sh", ": >\"$1\"\n");
	const char *e_true[] = { "EDITOR=true", NULL }, *e_false[] = { "EDITOR=false", NULL };
	const char *e_empty[] = { empty, NULL }, *e_bad[] = { bad, tmp, NULL };
	const char *args[] = { "edit", "us", "carol", NULL };
	sk_userspace *c;
	int64_t rv;

	apply_three();
	rv = (c = ctl_stored("carol"))->meta.resource_version;
	sk_userspace_free(c);
	ck_assert_int_eq(ctl_env(e_true, NULL, &out, &err, args), 0);
	ck_assert_str_eq(out, "Edit cancelled, no changes made.\n");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl_env(e_empty, NULL, &out, &err, args), 0);
	ck_assert_str_eq(out, "Edit cancelled, saved file was empty.\n");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl_env(e_false, NULL, &out, &err, args), 1);
	ASSERT_HAS(err, "the editor \"false\" failed");
	ctl_free(&out, &err);
	/* the same invalid text saved twice: give up, keep the user's copy */
	ck_assert_int_eq(ctl_env(e_bad, NULL, &out, &err, args), 1);
	ASSERT_HAS(err, "Edit cancelled, no valid changes were saved; your changes are in");
	ASSERT_HAS(err, ctl_dir);
	ctl_free(&out, &err);
	c = ctl_stored("carol");
	ck_assert_int_eq(c->meta.resource_version, rv);
	sk_userspace_free(c);
	free(tmp);
	free(bad);
	free(empty);
}
END_TEST

START_TEST(edit_conflict_writes_nothing)
{
	/* the editor changes the object behind spacectl's back, then edits the file */
	char *body = sk_asprintf("%s --database %s label us alice race=1 >/dev/null\n"
	                         "sed -i 's/template: base/template: gpu/' \"$1\"\n",
	        sk_test_bin("spacectl"), ctl_db);
	char *ed = editor_script("ed.sh", body), *tmp = sk_asprintf("TMPDIR=%s", ctl_dir);
	const char *env[] = { ed, tmp, NULL }, *args[] = { "edit", "us/alice", NULL };
	char *out, *err;
	sk_userspace *a;

	apply_three();
	ck_assert_int_eq(ctl_env(env, NULL, &out, &err, args), 1);
	ASSERT_HAS(err, "has been modified since the edit began");
	ASSERT_HAS(err, "your changes are in");
	ctl_free(&out, &err);
	a = ctl_stored("alice");
	ck_assert_str_eq(a->spec.template_id, "base");
	ck_assert_str_eq(sk_kvlist_get(&a->meta.labels, "race"), "1");
	sk_userspace_free(a);
	free(body);
	free(ed);
	free(tmp);
}
END_TEST

/* ---- did you mean, explain, completion, help ---- */

START_TEST(mistyped_command)
{
	char *out, *err;

	ck_assert_int_eq(ctl(&out, &err, "gett", "us", NULL), 2);
	ASSERT_HAS(err, "unknown command \"gett\"");
	ASSERT_HAS(err, "Did you mean this?\n\tget\n");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "pach", NULL), 2);
	ASSERT_HAS(err, "\tpatch\n");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "frobnicate", NULL), 2);
	ASSERT_HASNT(err, "Did you mean");
	ctl_free(&out, &err);
}
END_TEST

START_TEST(explain_fields)
{
	char *out, *err;

	ck_assert_int_eq(ctl(&out, &err, "explain", "userspace", NULL), 0);
	ASSERT_HAS(out, "KIND:     UserSpace\nVERSION:  spacekeeper.dev/v1alpha1\n");
	ASSERT_HAS(out, "   spec\t<Object>\n");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "explain", "us.spec", NULL), 0);
	ASSERT_HAS(out, "   userID\t<string> -required-\n");
	ASSERT_HAS(out, "   lifecycle\t<Object>\n");
	ASSERT_HASNT(out, "idleTimeout"); /* one level only */
	ctl_free(&out, &err);
	ck_assert_int_eq(
	        ctl(&out, &err, "explain", "userspace.spec.lifecycle.idleTimeout", NULL), 0);
	ASSERT_HAS(out, "FIELD:    idleTimeout <string>");
	ASSERT_HAS(out, "Default: 15m.");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "explain", "userspace.spec.health.remediation", NULL), 0);
	ASSERT_HAS(out, "One of: Replace, Report. Default: Report.");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "explain", "userspace.spec.resources.cpuCount", NULL), 0);
	ASSERT_HAS(out, "<integer>");
	ASSERT_HAS(out, "From 1 to 64.");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "explain", "userspace.spec.nope", NULL), 1);
	ASSERT_HAS(err, "field \"spec.nope\" does not exist");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "explain", "usrspace.spec", NULL), 2);
	ASSERT_HAS(err, "did you mean \"userspace\"?");
	ctl_free(&out, &err);
}
END_TEST

/* Sources the bash script and completes words (the last one is completed). */
static char *
complete_bash(const char *script, const char *words)
{
	char *cmd =
	        sk_asprintf("source %s; COMP_WORDS=(%s); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); "
	                    "_spacectl; echo \"[${COMPREPLY[*]}]\"",
	                script, words);
	const char *argv[] = { "/bin/bash", "-c", cmd, NULL }, *env[] = { ctl_env_uri, NULL };
	char *out, *err;

	ck_assert_int_eq(sk_test_run(argv, env, NULL, &out, &err, 60), 0);
	free(err);
	free(cmd);
	return out;
}

START_TEST(completion_scripts)
{
	char *out, *err, *path, *words, *got;

	apply_three();
	ck_assert_int_eq(ctl(&out, &err, "completion", "bash", NULL), 0);
	ASSERT_HAS(out, "complete -F _spacectl spacectl");
	path = ctl_write_text("comp.bash", out);
	ctl_free(&out, &err);
	got = complete_bash(path, "spacectl pa");
	ck_assert_str_eq(got, "[patch]\n");
	free(got);
	got = complete_bash(path, "spacectl get --no");
	ck_assert_str_eq(got, "[--no-headers]\n");
	free(got);
	got = complete_bash(path, "spacectl delete --al");
	ck_assert_str_eq(got, "[--all]\n");
	free(got);
	/* flags come from the usage and flag lines, not from the prose
	 * ("EDITOR=\"code --wait\"" in edit's help) */
	got = complete_bash(path, "spacectl edit --w");
	ck_assert_str_eq(got, "[]\n");
	free(got);
	/* names from the database the line names */
	words = sk_asprintf("%s --database %s get us ''", sk_test_bin("spacectl"), ctl_db);
	got = complete_bash(path, words);
	ck_assert_str_eq(got, "[userspace userspaces us alice bob carol]\n");
	free(got);
	free(words);
	words = sk_asprintf("%s --database %s describe us/c", sk_test_bin("spacectl"), ctl_db);
	got = complete_bash(path, words);
	ck_assert_str_eq(got, "[us/carol]\n");
	free(got);
	free(words);
	/* a --context value is not the command */
	words = sk_asprintf("%s --context x --database %s ge", sk_test_bin("spacectl"), ctl_db);
	got = complete_bash(path, words);
	ck_assert_str_eq(got, "[get]\n");
	free(got);
	free(words);
	free(path);
	ck_assert_int_eq(ctl(&out, &err, "completion", "zsh", NULL), 0);
	ASSERT_HAS(out, "#compdef spacectl");
	ASSERT_HAS(out, "bashcompinit");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "completion", "fish", NULL), 2);
	ctl_free(&out, &err);
}
END_TEST

START_TEST(help_on_new_commands)
{
	static const char *const cmds[] = { "patch", "edit", "explain", "completion", "config" };
	char *out, *err, want[64];

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		ck_assert_int_eq(ctl(&out, &err, cmds[i], "--help", NULL), 0);
		snprintf(want, sizeof(want), "usage: spacectl %s", cmds[i]);
		ASSERT_HAS(out, want);
		ASSERT_HAS(out, "Example");
		ctl_free(&out, &err);
		ck_assert_int_eq(ctl(&out, &err, "--help", NULL), 0);
		ASSERT_HAS(out, cmds[i]);
		ctl_free(&out, &err);
	}
}
END_TEST

/* ---- config contexts ---- */

/* Runs spacectl with exactly these args (no --database) and environment
 * (the MongoDB variable empty unless env sets it, the context file given). */
static int
ctl_ctx(const char *uri_env, char **out, char **err, const char *const *args)
{
	char *cfg = sk_asprintf("SPACECTL_CONFIG=%s/ctx/config.yaml", ctl_dir);
	char *uri = sk_asprintf("SPACEKEEPER_MONGODB_URI=%s", uri_env ? uri_env : "");
	const char *argv[24], *env[] = { uri, cfg, NULL };
	size_t n = 0;
	int rc;

	argv[n++] = "spacectl";
	for (size_t i = 0; args[i] && n < 22; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	rc = sk_test_run(argv, env, NULL, out, err, 60);
	free(cfg);
	free(uri);
	return rc;
}

#define DEAD_URI "mongodb://127.0.0.1:1"

START_TEST(config_contexts)
{
	const char *real = sk_test_mongodb_uri();
	char *out, *err, *file = ctl_write_us("a.yaml", "ctx-a", "u-ctx", NULL);
	const char *set_t[] = { "config", "set-context", "t", "--mongodb-uri", real, "--database",
		ctl_db, "--current", NULL };
	const char *set_dead[] = { "config", "set-context", "dead", "--mongodb-uri", DEAD_URI,
		"--database", ctl_db, NULL };
	const char *apply[] = { "apply", "-f", file, NULL };
	const char *get_dead[] = { "--context", "dead", "get", "us", "-o", "name", "--timeout",
		"1s", NULL };
	const char *get_dead_flag[] = { "--context", "dead", "get", "us", "-o", "name",
		"--mongodb-uri", real, NULL };
	const char *list[] = { "config", "get-contexts", NULL };
	const char *use[] = { "config", "use-context", "dead", NULL };
	const char *cur[] = { "config", "current-context", NULL };
	const char *nope[] = { "--context", "nope", "get", "us", NULL };
	struct stat st;
	sk_userspace *a;

	ck_assert_int_eq(ctl_ctx(NULL, &out, &err, cur), 1); /* no file yet */
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl_ctx(NULL, &out, &err, set_t), 0);
	ck_assert_str_eq(out, "Context \"t\" created.\nSwitched to context \"t\".\n");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl_ctx(NULL, &out, &err, set_dead), 0);
	ctl_free(&out, &err);
	{
		char *path = sk_asprintf("%s/ctx/config.yaml", ctl_dir);
		ck_assert_int_eq(stat(path, &st), 0);
		ck_assert_int_eq(st.st_mode & 0777, 0600);
		free(path);
	}
	/* no flag, no variable: the current context's URI and database */
	ck_assert_int_eq(ctl_ctx(NULL, &out, &err, apply), 0);
	ctl_free(&out, &err);
	a = ctl_stored("ctx-a");
	ck_assert_ptr_nonnull(a);
	sk_userspace_free(a);
	/* context "dead": unreachable; the variable and the flag override it */
	ck_assert_int_eq(ctl_ctx(NULL, &out, &err, get_dead), 3);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl_ctx(real, &out, &err, get_dead), 0);
	ck_assert_str_eq(out, "userspace/ctx-a\n");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl_ctx(DEAD_URI, &out, &err, get_dead_flag), 0);
	ck_assert_str_eq(out, "userspace/ctx-a\n");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl_ctx(NULL, &out, &err, list), 0);
	ASSERT_HAS(out, "CURRENT");
	ck_assert_msg(strstr(out, "*         t ") != NULL, "%s", out);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl_ctx(NULL, &out, &err, use), 0);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl_ctx(NULL, &out, &err, cur), 0);
	ck_assert_str_eq(out, "dead\n");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl_ctx(NULL, &out, &err, nope), 1);
	ASSERT_HAS(err, "context \"nope\" is not in");
	ctl_free(&out, &err);
	free(file);
}
END_TEST

/* A context's controllerConfig: the providers of sandboxes, plan and drift
 * --orphans when --config is not given (make demo writes one); commands that
 * only read the database never load it. */
START_TEST(config_controller_config)
{
	const char *real = sk_test_mongodb_uri();
	char *key = ctl_write_text("ctx-key", "e2b_00\n");
	char *text = sk_asprintf("apiVersion: spacekeeper.dev/v1alpha1\nkind: ControllerConfig\n"
	                         "mongodb: {uri: \"mongodb://127.0.0.1:1\"}\n"
	                         "providers:\n- {name: ctxprov, type: e2b, apiURL: "
	                         "\"http://127.0.0.1:1\", requestTimeout: 2s, apiKeyFile: %s}\n",
	        key);
	char *cc = ctl_write_text("ctx-cc.yaml", text);
	char *out, *err;
	const char *set[] = { "config", "set-context", "cc", "--mongodb-uri", real, "--database",
		ctl_db, "--controller-config", cc, "--current", NULL };
	const char *sandboxes[] = { "sandboxes", "--provider", "ctxprov", NULL };
	const char *other[] = { "sandboxes", "--provider", "ctxprov", "--config",
		"/nonexistent.yaml", NULL };
	const char *get[] = { "get", "us", "-o", "name", NULL };
	const char *misuse[] = { "config", "get-contexts", "--controller-config", cc, NULL };
	const char *gone[] = { "config", "set-context", "cc", "--controller-config",
		"/nonexistent.yaml", NULL };

	chmod(key, 0600);
	ck_assert_int_eq(ctl_ctx(NULL, &out, &err, set), 0);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl_ctx(NULL, &out, &err, misuse), 2);
	ctl_free(&out, &err);
	/* the context's providers: ctxprov exists (unreachable: exit 3, not "no
	 * such provider"), and its mongodb.uri (dead) loses to the context's */
	ck_assert_int_eq(ctl_ctx(NULL, &out, &err, sandboxes), 3);
	ASSERT_HAS(err, "provider ctxprov: ");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl_ctx(NULL, &out, &err, get), 0);
	ctl_free(&out, &err);
	/* --config wins over the context's file */
	ck_assert_int_eq(ctl_ctx(NULL, &out, &err, other), 1);
	ASSERT_HAS(err, "/nonexistent.yaml");
	ctl_free(&out, &err);
	/* a context naming a file that is gone: the provider commands say so,
	 * the others do not read it */
	ck_assert_int_eq(ctl_ctx(NULL, &out, &err, gone), 0);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl_ctx(NULL, &out, &err, sandboxes), 1);
	ASSERT_HAS(err, "/nonexistent.yaml");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl_ctx(NULL, &out, &err, get), 0);
	ctl_free(&out, &err);
	free(key);
	free(text);
	free(cc);
}
END_TEST

START_TEST(config_file_errors)
{
	const char *bad_uri[] = { "config", "set-context", "x", "--mongodb-uri", "http://x", NULL };
	const char *view[] = { "config", "view", NULL },
	           *raw[] = { "config", "view", "--raw", NULL };
	const char *set_pw[] = { "config", "set-context", "pw", "--mongodb-uri",
		"mongodb://u:s3cret@127.0.0.1:1", NULL };
	const char *get[] = { "get", "us", NULL };
	char *out, *err, *path;

	ck_assert_int_eq(ctl_ctx(NULL, &out, &err, bad_uri), 1);
	ASSERT_HAS(err, "--mongodb-uri: must start with mongodb://");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl_ctx(NULL, &out, &err, set_pw), 0);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl_ctx(NULL, &out, &err, view), 0);
	ASSERT_HAS(out, "mongodb://u:REDACTED@127.0.0.1:1");
	ASSERT_HASNT(out, "s3cret");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl_ctx(NULL, &out, &err, raw), 0);
	ASSERT_HAS(out, "s3cret");
	ctl_free(&out, &err);
	/* a broken file names the field and the line */
	path = ctl_write_text("ctx/config.yaml",
	        "current-context: a\ncontexts:\n- name: a\n  context: {mongodbURI: 5, port: 1}\n");
	ck_assert_int_eq(ctl_ctx(NULL, &out, &err, get), 1);
	ASSERT_HAS(err, "contexts[0].context.mongodbURI: must be a string");
	ASSERT_HAS(err, "config.yaml:4:");
	ASSERT_HAS(err, "contexts[0].context.port: unknown field");
	ctl_free(&out, &err);
	free(path);
	path = ctl_write_text("ctx/config.yaml",
	        "current-context: a\ncontexts:\n- name: a\n  context: {database: \"a b\"}\n");
	ck_assert_int_eq(ctl_ctx(NULL, &out, &err, get), 1);
	ASSERT_HAS(err, "context \"a\" database");
	ctl_free(&out, &err);
	free(path);
}
END_TEST

/* ---- more kubectl habits ---- */

START_TEST(apply_dry_run_modes)
{
	char *out, *err, *file = ctl_write_us("dr.yaml", "dr", "u-dr", NULL);

	ck_assert_int_eq(ctl(&out, &err, "apply", "--dry-run=client", "-f", file, NULL), 0);
	ck_assert_str_eq(out, "userspace/dr created (dry run)\n");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "apply", "--dry-run=server", "-f", file, NULL), 0);
	ck_assert_str_eq(out, "userspace/dr created (server dry run)\n");
	ctl_free(&out, &err);
	ck_assert_uint_eq(ctl_count(), 0);
	ck_assert_int_eq(ctl(&out, &err, "apply", "--dry-run=bogus", "-f", file, NULL), 2);
	ASSERT_HAS(
	        err, "Invalid dry-run value (bogus). Must be \"none\", \"server\", or \"client\".");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "apply", "--dry-run", "server", "-f", file, NULL), 2);
	ASSERT_HAS(err, "the mode goes with =, --dry-run=server");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "apply", "--dry-run=none", "-f", file, NULL), 0);
	ck_assert_str_eq(out, "userspace/dr created\n");
	ctl_free(&out, &err);
	ck_assert_uint_eq(ctl_count(), 1);
	free(file);
}
END_TEST

START_TEST(apply_recursive_output_name_server_side)
{
	char *out, *err, *dir = sk_asprintf("%s/tree", ctl_dir), *sub = sk_asprintf("%s/sub", dir);
	char *y1 = ctl_us_yaml("top", "u-top", NULL), *y2 = ctl_us_yaml("deep", "u-deep", NULL);
	char *p1 = sk_asprintf("%s/a.yaml", dir), *p2 = sk_asprintf("%s/b.yaml", sub);
	FILE *f;

	ck_assert_int_eq(mkdir(dir, 0755), 0);
	ck_assert_int_eq(mkdir(sub, 0755), 0);
	ck_assert_ptr_nonnull(f = fopen(p1, "w"));
	fputs(y1, f);
	fclose(f);
	ck_assert_ptr_nonnull(f = fopen(p2, "w"));
	fputs(y2, f);
	fclose(f);
	/* without -R: the directory's own files only */
	ck_assert_int_eq(ctl(&out, &err, "apply", "--dry-run", "-f", dir, "-o", "name", NULL), 0);
	ck_assert_str_eq(out, "userspace/top\n");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "apply", "-R", "-f", dir, "-o", "name", NULL), 0);
	ck_assert_str_eq(out, "userspace/top\nuserspace/deep\n");
	ctl_free(&out, &err);
	ck_assert_uint_eq(ctl_count(), 2);
	/* --server-side: accepted, explained, the same write */
	ck_assert_int_eq(ctl(&out, &err, "apply", "--server-side", "--force-conflicts",
	                         "--field-manager", "ci", "-R", "-f", dir, NULL),
	        0);
	ck_assert_str_eq(out, "userspace/top unchanged\nuserspace/deep unchanged\n");
	ASSERT_HAS(err, "--server-side: spacectl has no API server");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "apply", "-f", dir, "-o", "json", NULL), 0);
	ASSERT_HAS(out, "\"name\": \"top\"");
	ctl_free(&out, &err);
	free(y1);
	free(y2);
	free(p1);
	free(p2);
	free(sub);
	free(dir);
}
END_TEST

START_TEST(create_replace_and_generate_name)
{
	char *out, *err, *file = ctl_write_us("c.yaml", "cr", "u-cr", NULL);
	char *changed = ctl_write_us("c2.yaml", "cr", "u-cr", "  template: gpu\n");
	char *missing = ctl_write_us("c3.yaml", "nothere", "u-nothere", NULL);
	char *gen = ctl_write_text("gen.yaml",
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	        "metadata: {generateName: trial-}\nspec: {userID: u-trial}\n");
	char *stale = ctl_write_text("stale.yaml",
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	        "metadata: {name: cr, resourceVersion: \"1\"}\nspec: {userID: u-cr}\n");
	sk_userspace *us;

	ck_assert_int_eq(ctl(&out, &err, "create", "-f", file, NULL), 0);
	ck_assert_str_eq(out, "userspace/cr created\n");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "create", "-f", file, NULL), 1);
	ASSERT_HAS(err, "userspaces \"cr\" already exists (AlreadyExists");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "replace", "-f", changed, NULL), 0);
	ck_assert_str_eq(out, "userspace/cr replaced\n");
	ctl_free(&out, &err);
	us = ctl_stored("cr");
	ck_assert_str_eq(us->spec.template_id, "gpu");
	sk_userspace_free(us);
	ck_assert_int_eq(ctl(&out, &err, "replace", "-f", missing, NULL), 1);
	ASSERT_HAS(err, "userspaces \"nothere\" not found (NotFound");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "replace", "-f", stale, NULL), 1);
	ASSERT_HAS(err, "Operation cannot be fulfilled on userspaces \"cr\"");
	ctl_free(&out, &err);
	/* generateName: create names it; apply needs a name */
	ck_assert_int_eq(ctl(&out, &err, "apply", "-f", gen, NULL), 1);
	ASSERT_HAS(err, "metadata.generateName: names an object only on create");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "create", "-f", gen, "-o", "name", NULL), 0);
	ck_assert_msg(strncmp(out, "userspace/trial-", 16) == 0 && strlen(out) == 22 &&
	                strspn(out + 16, "bcdfghjklmnpqrstvwxz2456789") == 5,
	        "%s", out);
	out[21] = '\0';
	us = ctl_stored(out + 10);
	ck_assert_ptr_nonnull(us);
	sk_userspace_free(us);
	ctl_free(&out, &err);
	ck_assert_uint_eq(ctl_count(), 2);
	free(file);
	free(changed);
	free(missing);
	free(gen);
	free(stale);
}
END_TEST

START_TEST(get_from_file_and_label_columns)
{
	char *out, *err, *file = ctl_write_us("g.yaml", "bob", "u-a", NULL);

	apply_three();
	ck_assert_int_eq(ctl(&out, &err, "get", "-f", file, "-o", "name", NULL), 0);
	ck_assert_str_eq(out, "userspace/bob\n");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "get", "us", "-L", "team,absent", NULL), 0);
	ck_assert_msg(strstr(out, "   TEAM   ABSENT\n") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "   b\n") != NULL && strstr(out, "   a\n") != NULL, "%s", out);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "get", "us", "-L", "example.com/team", "--no-headers",
	                         "-o", "name", NULL),
	        0);
	ctl_free(&out, &err);
	free(file);
}
END_TEST

START_TEST(get_custom_columns_and_go_template)
{
	char *out, *err;

	apply_three();
	ck_assert_int_eq(
	        ctl(&out, &err, "get", "us", "-o",
	                "custom-columns=NAME:.metadata.name,USER:{.spec.userID},X:.spec.nope",
	                NULL),
	        0);
	ck_assert_str_eq(out,
	        "NAME    USER   X\nalice   u-c    <none>\nbob     u-a    <none>\n"
	        "carol   u-b    <none>\n");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "get", "us", "-o", "custom-columns=NAME", NULL), 2);
	ASSERT_HAS(err, "expected HEADER:PATH at offset 0");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "get", "us", "-o",
	                         "go-template={{range .items}}{{.metadata.name}}:{{index "
	                         ".metadata.labels \"team\"}}{{\"\\n\"}}{{end}}",
	                         NULL),
	        0);
	ck_assert_str_eq(out, "alice:a\nbob:b\ncarol:a\n");
	ctl_free(&out, &err);
	ck_assert_int_eq(
	        ctl(&out, &err, "get", "us/bob", "-o", "go-template={{.spec.nope}}", NULL), 0);
	ck_assert_str_eq(out, "<no value>");
	ctl_free(&out, &err);
	ck_assert_int_eq(
	        ctl(&out, &err, "get", "us", "-o", "go-template=x{{if .items}}y{{end}}", NULL), 2);
	ASSERT_HAS(err, "unsupported action \"if\"");
	ASSERT_HAS(err, "at offset 3");
	ctl_free(&out, &err);
	ck_assert_int_eq(
	        ctl(&out, &err, "get", "us", "-o", "go-template={{.items | len}}", NULL), 2);
	ASSERT_HAS(err, "at offset 9");
	ctl_free(&out, &err);
}
END_TEST

START_TEST(get_field_selector)
{
	char *out, *err;

	apply_three();
	ck_assert_int_eq(ctl(&out, &err, "get", "us", "--field-selector", "spec.userID=u-a", "-o",
	                         "name", NULL),
	        0);
	ck_assert_str_eq(out, "userspace/bob\n");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "get", "us", "--field-selector",
	                         "metadata.name!=alice,spec.mode==Running", "-o", "name", NULL),
	        0);
	ck_assert_str_eq(out, "userspace/bob\nuserspace/carol\n");
	ctl_free(&out, &err);
	/* no controller: no phase yet, so every object has status.phase "" */
	ck_assert_int_eq(
	        ctl(&out, &err, "get", "us", "--field-selector=status.phase=Running", NULL), 0);
	ck_assert_str_eq(out, "");
	ASSERT_HAS(err, "No resources found.");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "get", "us", "--field-selector", "spec.nope=1", NULL), 2);
	ASSERT_HAS(err, "field label not supported: spec.nope");
	ctl_free(&out, &err);
}
END_TEST

START_TEST(describe_all_and_delete_dry_run_wait)
{
	char *out, *err;

	apply_three();
	ck_assert_int_eq(ctl(&out, &err, "describe", "userspaces", NULL), 0);
	ASSERT_HAS(out, "alice");
	ASSERT_HAS(out, "u-a");
	ASSERT_HAS(out, "carol");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "describe", "us", "-l", "team=b", NULL), 0);
	ASSERT_HAS(out, "bob");
	ASSERT_HASNT(out, "alice");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "delete", "us", "alice", "--dry-run", NULL), 0);
	ck_assert_str_eq(out, "userspace/alice deleted (dry run)\n");
	ctl_free(&out, &err);
	ck_assert_int_eq(
	        ctl(&out, &err, "delete", "us", "-l", "team=a", "--dry-run=server", NULL), 0);
	ck_assert_str_eq(out,
	        "userspace/alice deleted (server dry run)\nuserspace/carol deleted (server dry "
	        "run)\n");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "delete", "us", "nothere", "--dry-run", NULL), 1);
	ctl_free(&out, &err);
	{
		sk_userspace *a = ctl_stored("alice");
		ck_assert_ptr_nonnull(a);
		ck_assert_int_eq(a->meta.deletion_ms, 0);
		sk_userspace_free(a);
	}
	ck_assert_int_eq(ctl(&out, &err, "delete", "us", "bob", "--wait=false", NULL), 0);
	ck_assert_str_eq(out, "userspace/bob deleted\n");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "delete", "us", "carol", "--wait=maybe", NULL), 2);
	ctl_free(&out, &err);
}
END_TEST

START_TEST(api_resources_and_version_client)
{
	char *out, *err;

	ck_assert_int_eq(ctl(&out, &err, "api-resources", NULL), 0);
	ck_assert_str_eq(out,
	        "NAME          SHORTNAMES   APIVERSION                 NAMESPACED   KIND\n"
	        "userspaces    us           spacekeeper.dev/v1alpha1   false        "
	        "UserSpace\n"
	        "spacequotas   sq           spacekeeper.dev/v1alpha1   false        "
	        "SpaceQuota\n");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "api-resources", "-o", "name", NULL), 0);
	ck_assert_str_eq(out, "userspaces.spacekeeper.dev\nspacequotas.spacekeeper.dev\n");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "version", "--client", NULL), 0);
	ASSERT_HAS(out, "spacectl version ");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "version", "--client=true", "-o", "json", NULL), 0);
	ASSERT_HAS(out, "\"apiVersion\": \"spacekeeper.dev/v1alpha1\"");
	ctl_free(&out, &err);
}
END_TEST

/* Every field explain knows (each schema row and each object holding rows) has a
 * description: a new field without one fails here. */
START_TEST(explain_every_field_described)
{
	for (size_t i = 0; i < sk_spec_n_fields; i++) {
		char *path = sk_strdup(sk_spec_fields[i].path);
		for (char *dot = path + strlen(path); dot != NULL;) {
			char *arg = sk_asprintf("userspace.%s", path), *out, *err, *d, *end;
			ck_assert_msg(
			        ctl(&out, &err, "explain", arg, NULL) == 0, "%s: %s", arg, err);
			d = strstr(out, "DESCRIPTION:\n");
			ck_assert_msg(d != NULL, "%s: %s", arg, out);
			d += strlen("DESCRIPTION:\n");
			end = strstr(d, "\n\n");
			ck_assert_msg(strspn(d, " \n") < (size_t)((end ? end : d + strlen(d)) - d),
			        "%s has no description:\n%s", arg, out);
			ASSERT_HASNT(err, "runtime error");
			ctl_free(&out, &err);
			free(arg);
			*dot = '\0';
			dot = strrchr(path, '.');
			if (dot == NULL)
				break;
		}
		free(path);
	}
}
END_TEST

START_TEST(validate_did_you_mean)
{
	char *out, *err,
	        *file = ctl_write_us("typo.yaml", "typo", "u-typo",
	                "  tempalte: gpu\n  lifecycle: {autoResum: true}\n");

	ck_assert_int_eq(ctl(&out, &err, "validate", "-f", file, NULL), 1);
	ASSERT_HAS(err, "spec.tempalte: unknown field (did you mean template?)");
	ASSERT_HAS(err, "spec.lifecycle.autoResum: unknown field (did you mean autoResume?)");
	ctl_free(&out, &err);
	free(file);
}
END_TEST

/* get -w's header is as wide as the rows that follow will be: a phase
 * (Migrating, Deleting) or a sandbox ID arriving later lines up. */
START_TEST(watch_columns_sized_for_later_rows)
{
	char *out, *err;

	apply_three();
	ck_assert_int_eq(ctl(&out, &err, "get", "us", "-w", "--watch-timeout", "1s", NULL), 0);
	ck_assert_msg(strncmp(out,
	                      "NAME    USERID   MODE      PHASE       SANDBOX                 "
	                      "READY     DRIFT          AGE\n",
	                      89) == 0,
	        "%s", out);
	ASSERT_HASNT(out, "xxxxxxxx"); /* the sizing row is not printed */
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "delete", "us", "bob", "--wait=false", NULL), 0);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "get", "us", "bob", NULL), 0);
	ASSERT_HAS(out, "Running   Deleting    -"); /* PHASE as wide as Migrating */
	ctl_free(&out, &err);
}
END_TEST

Suite *
sk_suite_spacectl_kubectl(void)
{
	Suite *s = suite_create("spacectl_kubectl");
	TCase *tc = tcase_create("kubectl");

	tcase_add_checked_fixture(tc, ctl_setup, NULL);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, get_output_name);
	tcase_add_test(tc, get_jsonpath);
	tcase_add_test(tc, get_jsonpath_unsupported);
	tcase_add_test(tc, get_headers_labels_sort);
	tcase_add_test(tc, output_equals_form_everywhere);
	tcase_add_test(tc, type_slash_name_everywhere);
	tcase_add_test(tc, mistyped_resource_type);
	tcase_add_test(tc, delete_by_selector);
	tcase_add_test(tc, delete_all_forced);
	tcase_add_test(tc, patch_merge);
	tcase_add_test(tc, patch_refusals);
	tcase_add_test(tc, edit_applies_with_cas);
	tcase_add_test(tc, edit_reopens_on_error);
	tcase_add_test(tc, edit_cancels);
	tcase_add_test(tc, edit_conflict_writes_nothing);
	tcase_add_test(tc, mistyped_command);
	tcase_add_test(tc, explain_fields);
	tcase_add_test(tc, completion_scripts);
	tcase_add_test(tc, help_on_new_commands);
	tcase_add_test(tc, config_contexts);
	tcase_add_test(tc, config_controller_config);
	tcase_add_test(tc, config_file_errors);
	tcase_add_test(tc, apply_dry_run_modes);
	tcase_add_test(tc, apply_recursive_output_name_server_side);
	tcase_add_test(tc, create_replace_and_generate_name);
	tcase_add_test(tc, get_from_file_and_label_columns);
	tcase_add_test(tc, get_custom_columns_and_go_template);
	tcase_add_test(tc, get_field_selector);
	tcase_add_test(tc, describe_all_and_delete_dry_run_wait);
	tcase_add_test(tc, api_resources_and_version_client);
	tcase_add_test(tc, explain_every_field_described);
	tcase_add_test(tc, validate_did_you_mean);
	tcase_add_test(tc, watch_columns_sized_for_later_rows);
	suite_add_tcase(s, tc);
	return s;
}
