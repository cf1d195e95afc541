/*
 * Unit tests for the informer's borrowed references (sk_informer_borrow)
 * against the in-memory store, no thread: a reference held while
 * the cache replaces or deletes its object still reads the version it
 * borrowed (under ASan a use after free fails the test), a borrow after the
 * change reads the new version, borrowers of one version share it (no copy
 * per read), and a version nobody borrowed between two relists is decoded
 * again (memory only for the spaces in use).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../testutil.h"
#include "informer/informer.h"

Suite *sk_suite_informer_borrow(void);

static sk_store *store;
static sk_informer *inf;

static void
setup(void)
{
	sk_informer_options o = SK_INFORMER_OPTIONS_INIT;
	sk_error err = { 0 };

	ck_assert_int_eq(sk_store_open_memory(&store), 0);
	o.store = store;
	ck_assert_int_eq(sk_informer_new(&inf, &o, &err), 0);
}

static void
teardown(void)
{
	sk_informer_free(inf);
	sk_store_close(store);
	inf = NULL;
	store = NULL;
}

/* A stored UserSpace NAME of user USER with template TMPL. */
static void
create(const char *name, const char *user, const char *tmpl)
{
	sk_userspace in, *out = NULL;
	sk_error err = { 0 };

	memset(&in, 0, sizeof(in));
	in.meta.name = (char *)name;
	in.spec.user_id = (char *)user;
	in.spec.template_id = (char *)tmpl;
	in.spec.mode = SK_MODE_RUNNING;
	ck_assert_msg(sk_store_create(store, &in, &out, &err) == 0, "create: %s", err.message);
	sk_userspace_free(out);
}

/* Writes a new status (phase and sandbox) over the stored object. */
static void
write_status(const char *name, sk_phase phase, const char *sandbox)
{
	sk_userspace *cur = NULL, *out = NULL;
	sk_userspace_status st;
	sk_error err = { 0 };

	ck_assert_int_eq(sk_store_get(store, name, &cur, &err), 0);
	memset(&st, 0, sizeof(st));
	sk_userspace_status_copy(&st, &cur->status);
	st.phase = phase;
	free(st.sandbox_id);
	st.sandbox_id = sk_strdup(sandbox);
	ck_assert_msg(
	        sk_store_write_status(store, cur, &st, &out, &err) == 0, "status: %s", err.message);
	sk_userspace_status_dispose(&st);
	sk_userspace_free(cur);
	sk_userspace_free(out);
}

static void
relist(void)
{
	sk_error err = { 0 };

	ck_assert_msg(sk_informer_relist(inf, &err) == 0, "relist: %s", err.message);
}

static void
poll_once(void)
{
	sk_error err = { 0 };

	ck_assert_msg(sk_informer_poll(inf, &err) == 0, "poll: %s", err.message);
}

START_TEST(test_replace_while_borrowed)
{
	sk_informer_ref old = SK_INFORMER_REF_INIT, cur = SK_INFORMER_REF_INIT;

	create("alice", "alice-id", "base");
	write_status("alice", SK_PHASE_RUNNING, "sbx-one");
	relist();
	ck_assert_int_eq(sk_informer_borrow(inf, "alice", &old), 0);
	ck_assert_str_eq(old.us->status.sandbox_id, "sbx-one");

	/* replaced by a poll, then again by the owner's own write */
	write_status("alice", SK_PHASE_RUNNING, "sbx-two");
	poll_once();
	ck_assert_int_eq(sk_informer_borrow(inf, "alice", &cur), 0);
	ck_assert_str_eq(cur.us->status.sandbox_id, "sbx-two"); /* never stale */
	ck_assert_ptr_ne(cur.us, old.us);
	/* the old version is whole: read every string of it */
	ck_assert_str_eq(old.us->meta.name, "alice");
	ck_assert_str_eq(old.us->spec.user_id, "alice-id");
	ck_assert_str_eq(old.us->spec.template_id, "base");
	ck_assert_str_eq(old.us->status.sandbox_id, "sbx-one");
	sk_informer_release(&old);
	ck_assert_ptr_null(old.us);
	sk_informer_release(&old); /* a no-op once released */
	ck_assert_str_eq(cur.us->status.sandbox_id, "sbx-two");
	sk_informer_release(&cur);
}
END_TEST

START_TEST(test_delete_while_borrowed)
{
	sk_informer_ref ref = SK_INFORMER_REF_INIT, none = SK_INFORMER_REF_INIT;
	sk_error err = { 0 };

	create("bob", "bob-id", "base");
	relist();
	ck_assert_int_eq(sk_informer_borrow_user(inf, "bob-id", &ref), 0);
	ck_assert_str_eq(ref.us->meta.name, "bob");
	ck_assert_int_eq(sk_store_remove(store, "bob", &err), 0);
	relist(); /* gone from the cache */
	ck_assert_int_eq(sk_informer_borrow(inf, "bob", &none), SK_ENOTFOUND);
	ck_assert_int_eq(sk_informer_borrow_user(inf, "bob-id", &none), SK_ENOTFOUND);
	ck_assert_ptr_null(none.us);
	ck_assert_str_eq(ref.us->spec.template_id, "base");
	/* the informer may even be freed first: the reference is its own */
	sk_informer_free(inf);
	inf = NULL;
	ck_assert_str_eq(ref.us->spec.user_id, "bob-id");
	sk_informer_release(&ref);
}
END_TEST

START_TEST(test_borrowers_share_one_version)
{
	sk_informer_ref a = SK_INFORMER_REF_INIT, b = SK_INFORMER_REF_INIT;
	sk_informer_ref c = SK_INFORMER_REF_INIT;

	create("carol", "carol-id", "base");
	relist();
	ck_assert_int_eq(sk_informer_borrow(inf, "carol", &a), 0);
	ck_assert_int_eq(sk_informer_borrow_user(inf, "carol-id", &b), 0);
	ck_assert_ptr_eq(a.us, b.us); /* one decoded version, no copy per read */
	/* a relist that changes nothing keeps it: it was borrowed since the last */
	relist();
	ck_assert_int_eq(sk_informer_borrow(inf, "carol", &c), 0);
	ck_assert_ptr_eq(c.us, a.us);
	sk_informer_release(&c);
	/* two relists without a borrow drop the cache's decoded copy: the next
	 * borrow decodes anew (a still holds the old one, so its address differs) */
	relist();
	relist();
	ck_assert_int_eq(sk_informer_borrow(inf, "carol", &c), 0);
	ck_assert_ptr_ne(c.us, a.us);
	ck_assert_str_eq(c.us->meta.name, "carol");
	ck_assert_str_eq(a.us->meta.name, "carol");
	sk_informer_release(&a);
	sk_informer_release(&b);
	sk_informer_release(&c);
	sk_informer_release(NULL);
}
END_TEST

/* The userID index points at the cached entry: it follows a change of
 * spec.userID and a delete, and never answers for another object. */
START_TEST(test_user_index_follows_changes)
{
	sk_informer_ref ref = SK_INFORMER_REF_INIT;
	sk_userspace *cur = NULL, *out = NULL;
	sk_error err = { 0 };
	char *name;

	create("dave", "dave-id", "base");
	create("erin", "erin-id", "base");
	relist();
	ck_assert_int_eq(sk_store_get(store, "dave", &cur, &err), 0);
	free(cur->spec.user_id);
	cur->spec.user_id = sk_strdup("dave-new");
	ck_assert_msg(sk_store_update(store, cur, &out, &err) == 0, "update: %s", err.message);
	sk_userspace_free(cur);
	sk_userspace_free(out);
	poll_once();
	ck_assert_int_eq(sk_informer_borrow_user(inf, "dave-id", &ref), SK_ENOTFOUND);
	ck_assert(!sk_informer_has_user(inf, "dave-id"));
	ck_assert_int_eq(sk_informer_borrow_user(inf, "dave-new", &ref), 0);
	ck_assert_str_eq(ref.us->meta.name, "dave");
	sk_informer_release(&ref);
	name = sk_informer_name_for_user(inf, "erin-id");
	ck_assert_str_eq(name, "erin");
	free(name);
	ck_assert_int_eq(sk_store_remove(store, "erin", &err), 0);
	relist();
	ck_assert_ptr_null(sk_informer_name_for_user(inf, "erin-id"));
	ck_assert_int_eq(sk_informer_borrow_user(inf, "erin-id", &ref), SK_ENOTFOUND);
	ck_assert_int_eq(sk_informer_borrow_user(inf, "dave-new", &ref), 0);
	sk_informer_release(&ref);
}
END_TEST

Suite *
sk_suite_informer_borrow(void)
{
	Suite *s = suite_create("informer_borrow");
	TCase *tc = tcase_create("borrow");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_replace_while_borrowed);
	tcase_add_test(tc, test_delete_while_borrowed);
	tcase_add_test(tc, test_borrowers_share_one_version);
	tcase_add_test(tc, test_user_index_follows_changes);
	suite_add_tcase(s, tc);
	return s;
}
