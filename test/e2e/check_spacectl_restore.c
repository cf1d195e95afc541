/*
 * End-to-end tests of spacectl output other tools can read and input it
 * cannot be fooled by: resourceVersion printed as a string and
 * read as string or number, `get -o yaml|json | apply -f -` (kind: List) as a
 * backup and restore; an escaped NUL refused.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../testutil.h"
#include "spacectl_testlib.h"

Suite *sk_suite_spacectl_restore(void);

#define US "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"

static void
apply_three(void)
{
	char *out, *err;
	char *p = ctl_write_text("three.yaml",
	        US "metadata: {name: r-a, labels: {team: research}}\nspec: {userID: ua, template: "
	           "gpu}\n---\n" US
	           "metadata: {name: r-b}\nspec: {userID: ub, mode: Paused}\n---\n" US
	           "metadata: {name: r-c, annotations: {note: 'x y'}}\nspec: {userID: uc, env: {A: "
	           "'1'}}\n");

	ck_assert_msg(ctl(&out, &err, "apply", "-f", p, NULL) == 0, "%s", err);
	ctl_free(&out, &err);
	free(p);
}

START_TEST(resource_version_is_a_string)
{
	char *out, *err;
	json_t *v, *rv;
	sk_userspace *us;

	apply_three();
	ck_assert_int_eq(ctl(&out, &err, "get", "us", "r-a", "-o", "json", NULL), 0);
	v = json_loads(out, 0, NULL);
	ck_assert_ptr_nonnull(v);
	rv = json_object_get(json_object_get(v, "metadata"), "resourceVersion");
	ck_assert_msg(json_is_string(rv), "resourceVersion is not a string:\n%s", out);
	us = ctl_stored("r-a");
	ck_assert_int_eq(strtoll(json_string_value(rv), NULL, 10), us->meta.resource_version);
	sk_userspace_free(us);
	json_decref(v);
	ctl_free(&out, &err);
	/* YAML quotes it, so a YAML reader sees a string too */
	ck_assert_int_eq(ctl(&out, &err, "get", "us", "-o", "yaml", NULL), 0);
	ASSERT_HAS(out, "    resourceVersion: \"");
	ctl_free(&out, &err);
}
END_TEST

/* Input takes it as Kubernetes writes it (string) and as we used to (number). */
START_TEST(resource_version_read_as_string_or_number)
{
	char *out, *err, doc[512];
	sk_userspace *us;

	apply_three();
	us = ctl_stored("r-b");
	snprintf(doc, sizeof(doc),
	        US "metadata: {name: r-b, resourceVersion: \"%lld\"}\nspec: {userID: ub, mode: "
	           "Paused}\n---\n" US "metadata: {name: r-c, resourceVersion: \"\", annotations: "
	           "{note: 'x y'}}\nspec: {userID: uc, env: {A: '1'}}\n",
	        (long long)us->meta.resource_version);
	sk_userspace_free(us);
	ck_assert_msg(ctl_stdin(doc, &out, &err, "apply", "-f", "-", NULL) == 0, "%s", err);
	ck_assert_str_eq(out, "userspace/r-b unchanged\nuserspace/r-c unchanged\n");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl_stdin(US "metadata: {name: r-a, resourceVersion: 12}\nspec: {userID: "
	                              "ua}\n",
	                         &out, &err, "validate", "-f", "-", NULL),
	        0);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl_stdin(US "metadata: {name: r-a, resourceVersion: 'v12'}\nspec: "
	                              "{userID: ua}\n",
	                         &out, &err, "validate", "-f", "-", NULL),
	        1);
	ASSERT_HAS(err, "metadata.resourceVersion");
	ctl_free(&out, &err);
}
END_TEST

static void
assert_restored(void)
{
	sk_userspace *a = ctl_stored("r-a"), *b = ctl_stored("r-b"), *c = ctl_stored("r-c");

	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_nonnull(c);
	ck_assert_str_eq(a->spec.template_id, "gpu");
	ck_assert_str_eq(sk_kvlist_get(&a->meta.labels, "team"), "research");
	ck_assert_int_eq(b->spec.mode, SK_MODE_PAUSED);
	ck_assert_str_eq(sk_kvlist_get(&c->meta.annotations, "note"), "x y");
	ck_assert_str_eq(sk_kvlist_get(&c->spec.env, "A"), "1");
	ck_assert_uint_eq(ctl_count(), 3);
	sk_userspace_free(a);
	sk_userspace_free(b);
	sk_userspace_free(c);
}

/* get -o yaml|json of several objects is a List; apply takes it back. */
static void
round_trip(const char *format)
{
	char *backup, *out, *err, *path;

	apply_three();
	ck_assert_int_eq(ctl(&backup, &err, "get", "us", "-o", format, NULL), 0);
	free(err);
	ASSERT_HAS(backup, "List");
	/* applied over the live objects: nothing changes */
	ck_assert_msg(ctl_stdin(backup, &out, &err, "apply", "-f", "-", NULL) == 0, "%s", err);
	ck_assert_str_eq(out,
	        "userspace/r-a unchanged\nuserspace/r-b unchanged\n"
	        "userspace/r-c unchanged\n");
	ctl_free(&out, &err);
	/* a restore into an empty database brings every object back */
	ck_assert_int_eq(ctl(&out, &err, "delete", "--force", "us", "r-a", "r-b", "r-c", NULL), 0);
	ctl_free(&out, &err);
	ck_assert_uint_eq(ctl_count(), 0);
	path = ctl_write_text(strcmp(format, "json") == 0 ? "backup.json" : "backup.yaml", backup);
	ck_assert_msg(ctl(&out, &err, "apply", "-f", path, NULL) == 0, "%s", err);
	ck_assert_str_eq(
	        out, "userspace/r-a created\nuserspace/r-b created\nuserspace/r-c created\n");
	ctl_free(&out, &err);
	assert_restored();
	free(path);
	free(backup);
}

START_TEST(get_yaml_list_restores_through_apply)
{
	round_trip("yaml");
}
END_TEST

START_TEST(get_json_list_restores_through_apply)
{
	round_trip("json");
}
END_TEST

START_TEST(list_errors_name_the_item)
{
	char *out, *err;

	/* an invalid item: its own path and line, as if it stood alone */
#define ITEM "- apiVersion: spacekeeper.dev/v1alpha1\n  kind: UserSpace\n"
	ck_assert_int_eq(ctl_stdin("apiVersion: v1\nkind: List\nitems:\n" ITEM
	                           "  metadata: {name: ok}\n  spec: {userID: ok}\n" ITEM
	                           "  metadata:\n    name: Bad_Name\n  spec: {userID: b}\n",
	                         &out, &err, "apply", "-f", "-", NULL),
	        1);
	ASSERT_HAS(err, "metadata.name");
	ASSERT_HAS(err, "(<stdin>:11:5)");
	ck_assert_uint_eq(ctl_count(), 0);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl_stdin("apiVersion: v1\nkind: List\nitems: {a: 1}\n", &out, &err,
	                         "apply", "-f", "-", NULL),
	        1);
	ASSERT_HAS(err, "<stdin>:3:");
	ASSERT_HAS(err, "items");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl_stdin("apiVersion: v1\nkind: List\nitems: [1]\n", &out, &err, "apply",
	                         "-f", "-", NULL),
	        1);
	ASSERT_HAS(err, "items[0]: must be an object");
	ctl_free(&out, &err);
}
END_TEST

/* ---- item 11: the hostile probe's document ---- */

START_TEST(escaped_nul_is_refused)
{
	char *out, *err;

	apply_three();
	ck_assert_int_eq(
	        ctl_stdin(US "metadata:\n  name: \"r-a\\u0000-staging\"\nspec:\n  userID: "
	                     "\"r-a\\u0000-staging\"\n  template: \"evil\\u0000-ignored\"\n",
	                &out, &err, "apply", "-f", "-", NULL),
	        1);
	ASSERT_HAS(err, "<stdin>:4:9: metadata.name: a string must not contain a NUL");
	ASSERT_HASNT(out, "configured");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl_stdin("{\"apiVersion\": \"spacekeeper.dev/v1alpha1\", \"kind\": "
	                           "\"UserSpace\", \"metadata\": {\"name\": \"r-a\"}, \"spec\": "
	                           "{\"userID\": \"ua\", \"template\": \"evil\\u0000x\"}}\n",
	                         &out, &err, "apply", "-f", "-", NULL),
	        1);
	ASSERT_HAS(err, "spec.template: a string must not contain a NUL");
	ctl_free(&out, &err);
	{
		sk_userspace *a = ctl_stored("r-a");
		ck_assert_str_eq(a->spec.template_id, "gpu"); /* untouched */
		sk_userspace_free(a);
	}
}
END_TEST

Suite *
sk_suite_spacectl_restore(void)
{
	Suite *s = suite_create("spacectl_restore");
	TCase *tc = tcase_create("restore");

	tcase_add_checked_fixture(tc, ctl_setup, NULL);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, resource_version_is_a_string);
	tcase_add_test(tc, resource_version_read_as_string_or_number);
	tcase_add_test(tc, get_yaml_list_restores_through_apply);
	tcase_add_test(tc, get_json_list_restores_through_apply);
	tcase_add_test(tc, list_errors_name_the_item);
	tcase_add_test(tc, escaped_nul_is_refused);
	suite_add_tcase(s, tc);
	return s;
}
