/*
 * Integration tests of the packed scan (sk_store_scan_packed) against a real
 * FerretDB: what it streams decodes to what sk_store_get reads, the header
 * summary follows status writes, and the server hands back the bytes we
 * wrote (so the informer's byte comparison of spec and metadata holds).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../testutil.h"
#include "informer/informer.h"
#include "store/store.h"

Suite *sk_suite_store_packed(void);

static sk_store *store;

static void
setup(void)
{
	sk_store_options o = SK_STORE_OPTIONS_INIT;
	sk_error err = { 0 };

	o.uri = sk_test_mongodb_uri();
	o.database = sk_test_unique_db();
	ck_assert_msg(sk_store_open(&store, &o, &err) == 0, "open: %s", err.message);
}

static void
teardown(void)
{
	sk_store_drop(store, NULL);
	sk_store_close(store);
	store = NULL;
}

static void
create(const char *name)
{
	sk_userspace *us = sk_calloc(1, sizeof(*us)), *out = NULL;
	sk_error err = { 0 };
	char user[64];

	snprintf(user, sizeof(user), "u-%s", name);
	us->meta.name = sk_strdup(name);
	us->spec.user_id = sk_strdup(user);
	sk_kvlist_set(&us->meta.labels, "app.kubernetes.io/name", "spaces");
	sk_kvlist_set(&us->spec.env, "MODE", "fast");
	sk_userspace_apply_defaults(us);
	ck_assert_msg(sk_store_create(store, us, &out, &err) == 0, "create: %s", err.message);
	sk_userspace_free(us);
	sk_userspace_free(out);
}

static void
set_ready(const char *name, const char *ready)
{
	sk_userspace *cur = NULL, *next = NULL;
	sk_userspace_status st = { .phase = SK_PHASE_RUNNING, .sandbox_id = "isb-1" };
	sk_condition cond = { .type = SK_COND_READY, .status = (char *)ready, .reason = "Test" };
	sk_error err = { 0 };

	cond.last_transition_ms = 1700000000123;
	st.conditions = &cond;
	st.n_conditions = 1;
	ck_assert_int_eq(sk_store_get(store, name, &cur, &err), 0);
	ck_assert_msg(sk_store_write_status(store, cur, &st, &next, &err) == 0, "%s", err.message);
	sk_userspace_free(cur);
	sk_userspace_free(next);
}

typedef struct collected {
	sk_packed_userspace *items[16];
	size_t len;
} collected;

static void
collect(sk_packed_userspace *p, void *arg)
{
	collected *c = arg;

	ck_assert_uint_lt(c->len, 16);
	c->items[c->len++] = p;
}

static void
collected_free(collected *c)
{
	for (size_t i = 0; i < c->len; i++)
		sk_packed_free(c->items[i]);
	c->len = 0;
}

/* The streamed object decodes to the stored one, and packing the stored one
 * again gives equal spec and metadata bytes. */
static void
assert_matches_store(const sk_packed_userspace *p)
{
	sk_userspace *got = NULL, *back = NULL;
	sk_packed_userspace *again;
	sk_error err = { 0 };

	ck_assert_int_eq(sk_store_get(store, sk_packed_name(p), &got, &err), 0);
	ck_assert_msg(sk_store_unpack(p, &back, &err) == 0, "unpack: %s", err.message);
	ck_assert_int_eq(back->meta.resource_version, got->meta.resource_version);
	ck_assert_int_eq(sk_packed_resource_version(p), got->meta.resource_version);
	ck_assert(sk_informer_status_only_change(got, back));
	ck_assert(sk_userspace_status_equal(&got->status, &back->status));
	ck_assert_str_eq(sk_packed_user_id(p), got->spec.user_id);
	ck_assert_int_gt(sk_packed_read_ms(p), 0);
	ck_assert_int_eq(back->meta.read_ms, sk_packed_read_ms(p));
	again = sk_store_pack(got, &err);
	ck_assert_ptr_nonnull(again);
	ck_assert(sk_packed_status_only_change(p, again));
	sk_packed_free(again);
	sk_userspace_free(back);
	sk_userspace_free(got);
}

START_TEST(test_scan_all)
{
	collected c = { 0 };
	sk_error err = { 0 };

	create("c");
	create("a");
	create("b");
	set_ready("b", "True");
	ck_assert_int_eq(sk_store_scan_packed(store, -1, collect, &c, &err), 0);
	ck_assert_uint_eq(c.len, 3);
	ck_assert_str_eq(sk_packed_name(c.items[0]), "a"); /* by name */
	ck_assert_str_eq(sk_packed_name(c.items[2]), "c");
	for (size_t i = 0; i < c.len; i++)
		assert_matches_store(c.items[i]);
	ck_assert_int_eq(sk_packed_phase(c.items[0]), SK_PHASE_NONE);
	ck_assert(!sk_packed_ready(c.items[0]));
	ck_assert_int_eq(sk_packed_phase(c.items[1]), SK_PHASE_RUNNING);
	ck_assert(sk_packed_ready(c.items[1]));
	collected_free(&c);
}
END_TEST

START_TEST(test_scan_since)
{
	collected c = { 0 };
	sk_error err = { 0 };
	int64_t since;

	create("a");
	create("b");
	ck_assert_int_eq(sk_store_scan_packed(store, -1, collect, &c, &err), 0);
	since = sk_packed_resource_version(c.items[1]);
	if (sk_packed_resource_version(c.items[0]) > since)
		since = sk_packed_resource_version(c.items[0]);
	collected_free(&c);
	set_ready("a", "False");
	ck_assert_int_eq(sk_store_scan_packed(store, since, collect, &c, &err), 0);
	ck_assert_uint_eq(c.len, 1);
	ck_assert_str_eq(sk_packed_name(c.items[0]), "a");
	ck_assert_int_gt(sk_packed_resource_version(c.items[0]), since);
	ck_assert(!sk_packed_ready(c.items[0]));
	assert_matches_store(c.items[0]);
	collected_free(&c);
}
END_TEST

Suite *
sk_suite_store_packed(void)
{
	Suite *s = suite_create("store_packed");
	TCase *tc = tcase_create("scan");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_scan_all);
	tcase_add_test(tc, test_scan_since);
	suite_add_tcase(s, tc);
	return s;
}
