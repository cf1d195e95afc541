/*
 * Unit tests for reading input documents: the duplicate check in
 * linear time; NUL refused in every string.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../testutil.h"
#include "api/doc.h"
#include "api/errlist.h"
#include "api/userspace.h"

Suite *sk_suite_input(void);

#define US_DOC "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"

/* n documents u0..u(n-1), userIDs user-0.., as one YAML stream. */
static char *
many_docs(size_t n)
{
	sk_buf b = SK_BUF_INIT(0);

	for (size_t i = 0; i < n; i++)
		sk_buf_printf(&b,
		        "---\n" US_DOC "metadata: {name: u%zu}\nspec: {userID: user-%zu}\n", i, i);
	sk_buf_append(&b, "", 0);
	return sk_buf_detach(&b);
}

typedef struct decoded {
	sk_doclist docs;
	sk_userspace **objs;
} decoded;

static void
decode_all(const char *text, decoded *d)
{
	sk_error err = { 0 };

	memset(d, 0, sizeof(*d));
	ck_assert_msg(sk_doc_parse(text, strlen(text), "many.yaml", &d->docs, &err) == SK_OK, "%s",
	        err.message);
	d->objs = sk_calloc(d->docs.len, sizeof(*d->objs));
	for (size_t i = 0; i < d->docs.len; i++) {
		sk_errlist errs = { 0 };
		ck_assert_int_eq(sk_userspace_from_doc(d->docs.items[i], &d->objs[i], &errs), 0);
		sk_errlist_dispose(&errs);
	}
}

static void
decoded_dispose(decoded *d)
{
	for (size_t i = 0; i < d->docs.len; i++)
		sk_userspace_free(d->objs[i]);
	free(d->objs);
	sk_doclist_dispose(&d->docs);
}

static size_t
check_unique(decoded *d, sk_errlist *errs)
{
	return sk_userspaces_check_unique(
	        d->objs, (const sk_doc *const *)d->docs.items, d->docs.len, errs);
}

START_TEST(duplicates_named_with_both_positions)
{
	decoded d;
	sk_errlist errs = { 0 };

	decode_all("---\n" US_DOC "metadata: {name: a}\nspec: {userID: x}\n"
	           "---\n" US_DOC "metadata: {name: b}\nspec: {userID: w}\n"
	           "---\n" US_DOC "metadata: {name: a}\nspec: {userID: z}\n"
	           "---\n" US_DOC "metadata: {name: c}\nspec: {userID: w}\n",
	        &d);
	ck_assert_uint_eq(check_unique(&d, &errs), 2);
	ck_assert_str_eq(errs.items[0].path, "metadata.name");
	ck_assert_str_eq(errs.items[0].message,
	        "duplicate name \"a\" in the input (many.yaml:4:12 and many.yaml:14:12)");
	ck_assert_str_eq(errs.items[1].path, "spec.userID");
	ck_assert_str_eq(errs.items[1].message,
	        "\"w\" is used by both userspace/b (many.yaml:10:8) and userspace/c "
	        "(many.yaml:20:8); a userID must be unique");
	sk_errlist_dispose(&errs);
	decoded_dispose(&d);
}
END_TEST

/* 100,000 documents: every pair compared took minutes (40,000: 18.8 s); a
 * hash set takes well under a second. The time is printed, not asserted. */
START_TEST(hundred_thousand_documents)
{
	const size_t n = 100000;
	char *text = many_docs(n);
	decoded d;
	sk_errlist errs = { 0 };
	int64_t t0, t1, t2;

	t0 = sk_monotonic_ms();
	decode_all(text, &d);
	t1 = sk_monotonic_ms();
	ck_assert_uint_eq(d.docs.len, n);
	ck_assert_uint_eq(check_unique(&d, &errs), 0);
	/* the last object takes the first one's userID: found */
	free(d.objs[n - 1]->spec.user_id);
	d.objs[n - 1]->spec.user_id = sk_strdup("user-0");
	ck_assert_uint_eq(check_unique(&d, &errs), 1);
	ck_assert_ptr_nonnull(strstr(errs.items[0].message, "userspace/u0"));
	ck_assert_ptr_nonnull(strstr(errs.items[0].message, "userspace/u"));
	t2 = sk_monotonic_ms();
	printf("input: %zu documents parsed and decoded in %lld ms, duplicates checked twice in "
	       "%lld ms\n",
	        n, (long long)(t1 - t0), (long long)(t2 - t1));
	sk_errlist_dispose(&errs);
	decoded_dispose(&d);
	free(text);
}
END_TEST

/* ---- item 11: an escaped NUL must not cut a string short ---- */

static const struct {
	const char *text;
	const char *want; /* substring of the error: path and file:line:col */
} nul_cases[] = {
	/* the hostile probe's document, YAML */
	{ US_DOC "metadata:\n  name: \"alice\\u0000-staging\"\nspec:\n  userID: alice\n",
	        "in.yaml:4:9: metadata.name: a string must not contain a NUL" },
	{ US_DOC "metadata: {name: a}\nspec:\n  userID: a\n  template: \"evil\\0-ignored\"\n",
	        "in.yaml:6:13: spec.template: a string must not contain a NUL" },
	/* JSON alike */
	{ "{\"apiVersion\": \"spacekeeper.dev/v1alpha1\", \"kind\": \"UserSpace\",\n"
	  " \"metadata\": {\"name\": \"a\"},\n"
	  " \"spec\": {\"userID\": \"alice\\u0000-staging\"}}\n",
	        "in.yaml:3:21: spec.userID: a string must not contain a NUL" },
	/* keys, list items and labels too */
	{ US_DOC "metadata:\n  name: a\n  labels: {\"te\\0am\": x}\n",
	        "in.yaml:5:12: metadata.labels: a key must not contain a NUL" },
	{ US_DOC "metadata:\n  name: a\n  finalizers: [x, \"y\\u0000\"]\n",
	        "in.yaml:5:19: metadata.finalizers[1]: a string must not contain a NUL" },
};

START_TEST(nul_in_any_string_is_refused)
{
	sk_doclist l = { NULL, 0 };
	sk_error err = { 0 };
	const char *text = nul_cases[_i].text;

	ck_assert_int_eq(sk_doc_parse(text, strlen(text), "in.yaml", &l, &err), SK_EINVALID);
	ck_assert_uint_eq(l.len, 0);
	ck_assert_msg(
	        strstr(err.message, nul_cases[_i].want) != NULL, "case %d: %s", _i, err.message);
}
END_TEST

/* A plain string with the same characters written out is fine. */
START_TEST(escaped_backslash_zero_is_text)
{
	sk_doclist l = { NULL, 0 };
	sk_error err = { 0 };
	const char *text = US_DOC "metadata: {name: a}\nspec: {userID: a, template: \"x\\\\0\"}\n";

	ck_assert_int_eq(sk_doc_parse(text, strlen(text), "in.yaml", &l, &err), SK_OK);
	ck_assert_str_eq(json_string_value(json_object_get(
	                         json_object_get(sk_doc_root(l.items[0]), "spec"), "template")),
	        "x\\0");
	sk_doclist_dispose(&l);
}
END_TEST

Suite *
sk_suite_input(void)
{
	Suite *s = suite_create("input");
	TCase *tc = tcase_create("unique");

	tcase_set_timeout(tc, 300); /* 100,000 documents under ASan: 15-40 s */
	tcase_add_test(tc, duplicates_named_with_both_positions);
	tcase_add_test(tc, hundred_thousand_documents);
	suite_add_tcase(s, tc);
	tc = tcase_create("nul");
	tcase_add_loop_test(tc, nul_in_any_string_is_refused, 0,
	        (int)(sizeof(nul_cases) / sizeof(nul_cases[0])));
	tcase_add_test(tc, escaped_backslash_zero_is_text);
	suite_add_tcase(s, tc);
	return s;
}
