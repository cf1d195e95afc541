/*
 * End-to-end tests of the setup scripts: hack/deps.sh
 * returns at once on a second run, every time; hack/ferretdb.sh stop keeps
 * the data, a restart reuses the port, clean removes the directory.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../testutil.h"

Suite *sk_suite_setup_scripts(void);

#define ASSERT_HAS(hay, needle)                                                                    \
	ck_assert_msg(strstr((hay), (needle)) != NULL, "expected \"%s\" in:\n%s", (needle), (hay))
#define ASSERT_HASNT(hay, needle)                                                                  \
	ck_assert_msg(strstr((hay), (needle)) == NULL, "unexpected \"%s\" in:\n%s", (needle), (hay))

static int
run_bash(const char *script, char **out, char **err, int timeout_s)
{
	const char *argv[] = { "/bin/bash", "-c", script, NULL };

	return sk_test_run(argv, NULL, NULL, out, err, timeout_s);
}

/* A scratch .deps where every pin is present: a ferretdb that prints its
 * version and then a long tail (so a reader that stops at the first line
 * makes it die of SIGPIPE) and the pinned npm packages. The PATH has no
 * `go`, so a run that decides to rebuild fails at once instead of building. */
START_TEST(test_deps_second_run_returns_at_once)
{
	char script[4096], *out = NULL, *err = NULL;
	const char *deps = sk_test_path("hack/deps.sh");
	int rc;

	snprintf(script, sizeof(script),
	        "set -eu; d=%s/deps; s=%s\n"
	        "pin() { sed -n \"s/^$1=\\(.*\\)$/\\1/p\" \"$s\"; }\n"
	        "build=$(pin FERRETDB_VERSION)-idindex.1\n"
	        "mkdir -p $d/bin\n"
	        "printf '#!/bin/sh\\necho \"version: %%s\"\\nseq 1 200000\\n' \"$build\" "
	        ">$d/bin/ferretdb\n"
	        "chmod +x $d/bin/ferretdb\n"
	        "eval \"$(grep -E '^[A-Z0-9_]+_VERSION=' \"$s\")\"\n"
	        "for spec in $(sed -n 's/^npm_packages=(\\(.*\\))$/\\1/p' \"$s\" | tr -d '\"'); "
	        "do\n"
	        "  eval \"spec=$spec\"; name=${spec%%@*}\n"
	        "  mkdir -p $d/node/node_modules/$name\n"
	        "  echo \"{\\\"version\\\": \\\"${spec##*@}\\\"}\" "
	        ">$d/node/node_modules/$name/package.json\n"
	        "done\n"
	        "printf '#!/bin/sh\\necho %%s\\n' \"$KUSTOMIZE_VERSION\" >$d/bin/kustomize\n"
	        "chmod +x $d/bin/kustomize\n"
	        "printf '#!/bin/sh\\n' >$d/bin/versitygw; chmod +x $d/bin/versitygw\n"
	        "echo \"$VERSITYGW_VERSION\" >$d/bin/versitygw.version\n"
	        "mkdir -p $d/python; cp \"$(dirname \"$s\")/../test/deploy/requirements.txt\" "
	        "$d/python/\n"
	        "mkdir -p $d/pyclient; cp \"$(dirname \"$s\")/../test/client/requirements.txt\" "
	        "$d/pyclient/\n"
	        "for i in 1 2 3 4 5 6 7 8 9 10; do\n"
	        "  SK_DEPS_DIR=$d PATH=/usr/bin:/bin bash $s 2>&1 || { echo \"run $i failed\"; "
	        "exit 1; }\n"
	        "done\n",
	        sk_test_tmpdir(), deps);
	rc = run_bash(script, &out, &err, 120);
	ck_assert_msg(rc == 0, "rc=%d\n%s%s", rc, out, err);
	ASSERT_HASNT(out, "building FerretDB");
	ASSERT_HASNT(out, "go is required");
	ASSERT_HAS(out, "deps: all dependencies present");
	free(out);
	free(err);
}
END_TEST

static char *
ferretdb(const char *cmd, const char *dir, int *rc)
{
	char script[2048], *out = NULL, *err = NULL;

	snprintf(script, sizeof(script), "%s %s %s", sk_test_path("hack/ferretdb.sh"), cmd, dir);
	*rc = run_bash(script, &out, &err, 60);
	free(err);
	return out;
}

static int
spacectl(const char *uri, const char *stdin_data, char **out, const char *a1, const char *a2,
        const char *a3)
{
	const char *argv[] = { sk_test_bin("spacectl"), "--mongodb-uri", uri, "--database",
		"scripts", a1, a2, a3, NULL };
	char *err = NULL;
	int rc = sk_test_run(argv, NULL, stdin_data, out, &err, 60);

	free(err);
	return rc;
}

START_TEST(test_ferretdb_stop_keeps_data_and_port)
{
	char dir[700], uri1[256], *out = NULL;
	struct stat st;
	int rc;

	snprintf(dir, sizeof(dir), "%s/script-ferretdb", sk_test_tmpdir());
	out = ferretdb("start", dir, &rc);
	ck_assert_msg(rc == 0, "start: %s", out);
	snprintf(uri1, sizeof(uri1), "%.*s", (int)strcspn(out, "\n"), out);
	free(out);
	rc = spacectl(uri1,
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	        "metadata: {name: kept}\nspec: {userID: kept}\n",
	        &out, "apply", "-f", "-");
	ck_assert_msg(rc == 0, "apply: %s", out);
	free(out);

	free(ferretdb("stop", dir, &rc));
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(stat(dir, &st) == 0, "stop removed %s", dir);
	free(ferretdb("uri", dir, &rc));
	ck_assert_msg(rc != 0, "uri answers for a stopped server");

	out = ferretdb("start", dir, &rc);
	ck_assert_msg(rc == 0, "restart: %s", out);
	ck_assert_msg(
	        strncmp(out, uri1, strlen(uri1)) == 0, "restart moved from %s to %s", uri1, out);
	free(out);
	rc = spacectl(uri1, NULL, &out, "get", "userspace", "kept");
	ck_assert_msg(rc == 0, "the object did not survive stop/start: %s", out);
	ASSERT_HAS(out, "kept");
	free(out);

	free(ferretdb("clean", dir, &rc));
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(stat(dir, &st) != 0, "clean left %s", dir);
}
END_TEST

Suite *
sk_suite_setup_scripts(void)
{
	Suite *s = suite_create("setup_scripts");
	TCase *tc = tcase_create("scripts");

	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_deps_second_run_returns_at_once);
	tcase_add_test(tc, test_ferretdb_stop_keeps_data_and_port);
	suite_add_tcase(s, tc);
	return s;
}
