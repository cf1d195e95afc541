/* Unit tests for pkg/api/sandbox.c: the sandbox value types (deep copy, dispose, names). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "api/kvlist.h"
#include "api/names.h"
#include "api/sandbox_values.h"

Suite *sk_suite_api_sandbox(void);

static void
fill(sk_sandbox *sb, const char *id)
{
	memset(sb, 0, sizeof(*sb));
	sb->id = sk_strdup(id);
	sb->template_id = sk_strdup("base");
	sb->alias = sk_strdup("alias");
	sb->state = SK_SANDBOX_PAUSED;
	sb->started_ms = 1234;
	sb->cpu_count = 2;
	sb->memory_mb = 512;
	sb->domain = sk_strdup("example.test");
	sb->envd_access_token = sk_strdup("token");
	sk_kvlist_set(&sb->metadata, SK_META_USER_ID, "alice");
	sk_kvlist_set(&sb->metadata, SK_META_MANAGED_BY, SK_MANAGED_BY_VALUE);
}

START_TEST(test_copy_is_deep)
{
	sk_sandbox src, dst;

	fill(&src, "i-1");
	sk_sandbox_copy(&dst, &src);
	ck_assert_ptr_ne(dst.id, src.id);
	ck_assert_ptr_ne(dst.metadata.items, src.metadata.items);
	sk_sandbox_dispose(&src); /* dst must not share anything with src (ASan) */
	ck_assert_ptr_null(src.id);
	ck_assert_str_eq(dst.id, "i-1");
	ck_assert_str_eq(dst.template_id, "base");
	ck_assert_str_eq(dst.alias, "alias");
	ck_assert_str_eq(dst.domain, "example.test");
	ck_assert_str_eq(dst.envd_access_token, "token");
	ck_assert_int_eq(dst.state, SK_SANDBOX_PAUSED);
	ck_assert_int_eq(dst.started_ms, 1234);
	ck_assert_int_eq(dst.cpu_count, 2);
	ck_assert_int_eq(dst.memory_mb, 512);
	ck_assert_uint_eq(dst.metadata.len, 2);
	ck_assert_str_eq(sk_kvlist_get(&dst.metadata, SK_META_USER_ID), "alice");
	sk_sandbox_dispose(&dst);
}
END_TEST

START_TEST(test_copy_of_nulls)
{
	sk_sandbox src, dst;

	memset(&src, 0, sizeof(src));
	src.id = sk_strdup("i-2");
	sk_sandbox_copy(&dst, &src);
	ck_assert_ptr_null(dst.domain);
	ck_assert_ptr_null(dst.envd_access_token);
	ck_assert_uint_eq(dst.metadata.len, 0);
	sk_sandbox_dispose(&src);
	sk_sandbox_dispose(&dst);
	sk_sandbox_dispose(NULL);
	sk_sandbox_free(NULL);
}
END_TEST

START_TEST(test_list_dispose)
{
	sk_sandbox_list l = { 0 };
	sk_sandbox *heap = sk_calloc(1, sizeof(*heap));

	l.items = sk_calloc(3, sizeof(*l.items));
	for (size_t i = 0; i < 3; i++)
		fill(&l.items[i], i == 0 ? "a" : i == 1 ? "b" : "c");
	l.len = 3;
	sk_sandbox_list_dispose(&l);
	ck_assert_ptr_null(l.items);
	ck_assert_uint_eq(l.len, 0);
	sk_sandbox_list_dispose(&l); /* twice is fine */
	sk_sandbox_list_dispose(NULL);
	fill(heap, "h");
	sk_sandbox_free(heap);
}
END_TEST

START_TEST(test_state_names)
{
	ck_assert_str_eq(sk_sandbox_state_name(SK_SANDBOX_RUNNING), "running");
	ck_assert_str_eq(sk_sandbox_state_name(SK_SANDBOX_PAUSED), "paused");
	ck_assert_str_eq(sk_sandbox_state_name(SK_SANDBOX_TRANSITIONAL), "transitional");
	ck_assert_str_eq(sk_sandbox_state_name(SK_SANDBOX_GONE), "gone");
	ck_assert_str_eq(sk_sandbox_state_name(SK_SANDBOX_UNKNOWN), "unknown");
	ck_assert_str_eq(sk_sandbox_state_name((sk_sandbox_state)99), "unknown");
}
END_TEST

/* The JSON form keeps every field but the envd access token, and reads back. */
START_TEST(test_json_round_trip)
{
	sk_sandbox src, back;
	sk_error err = { 0 };
	json_t *j;

	fill(&src, "i-3");
	src.end_ms = 99;
	j = sk_sandbox_to_json(&src);
	ck_assert_ptr_null(json_object_get(j, "envdAccessToken"));
	ck_assert_str_eq(json_string_value(json_object_get(j, "state")), "paused");
	ck_assert_int_eq(sk_sandbox_from_json(j, &back, &err), 0);
	ck_assert_str_eq(back.id, "i-3");
	ck_assert_str_eq(back.template_id, "base");
	ck_assert_str_eq(back.alias, "alias");
	ck_assert_str_eq(back.domain, "example.test");
	ck_assert_ptr_null(back.envd_access_token);
	ck_assert_int_eq(back.state, SK_SANDBOX_PAUSED);
	ck_assert_int_eq(back.started_ms, 1234);
	ck_assert_int_eq(back.end_ms, 99);
	ck_assert_int_eq(back.cpu_count, 2);
	ck_assert_int_eq(back.memory_mb, 512);
	ck_assert_str_eq(sk_kvlist_get(&back.metadata, SK_META_USER_ID), "alice");
	ck_assert_str_eq(sk_kvlist_get(&back.metadata, SK_META_MANAGED_BY), SK_MANAGED_BY_VALUE);
	sk_sandbox_dispose(&back);
	json_decref(j);
	sk_sandbox_dispose(&src);
}
END_TEST

START_TEST(test_json_refuses_no_id)
{
	sk_sandbox back;
	sk_error err = { 0 };
	json_t *j = json_pack("{s:s}", "state", "running");

	ck_assert_int_eq(sk_sandbox_from_json(j, &back, &err), SK_EINVALID);
	ck_assert_ptr_null(back.id);
	json_decref(j);
	ck_assert_int_eq(sk_sandbox_from_json(NULL, &back, &err), SK_EINVALID);
}
END_TEST

Suite *
sk_suite_api_sandbox(void)
{
	Suite *s = suite_create("api_sandbox");
	TCase *tc = tcase_create("values");

	tcase_add_test(tc, test_copy_is_deep);
	tcase_add_test(tc, test_copy_of_nulls);
	tcase_add_test(tc, test_list_dispose);
	tcase_add_test(tc, test_state_names);
	tcase_add_test(tc, test_json_round_trip);
	tcase_add_test(tc, test_json_refuses_no_id);
	suite_add_tcase(s, tc);
	return s;
}
