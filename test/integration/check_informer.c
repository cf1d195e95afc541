/* Integration tests for pkg/informer against a real FerretDB. */
#include <check.h>
#include <mongoc/mongoc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../testutil.h"
#include "informer/informer.h"
#include "workqueue/workqueue.h"

Suite *sk_suite_informer(void);

static sk_store *store;
static char db[64];

/* Change callbacks, counted per name. */
static pthread_mutex_t seen_mu = PTHREAD_MUTEX_INITIALIZER;
static sk_strmap *seen;

static void
on_change(const char *name, void *payload)
{
	int *n;

	(void)payload;
	pthread_mutex_lock(&seen_mu);
	n = sk_strmap_get(seen, name);
	if (!n) {
		n = sk_calloc(1, sizeof(*n));
		sk_strmap_put(seen, name, n);
	}
	(*n)++;
	pthread_mutex_unlock(&seen_mu);
}

static int
seen_count(const char *name)
{
	int *n, v;

	pthread_mutex_lock(&seen_mu);
	n = sk_strmap_get(seen, name);
	v = n ? *n : 0;
	pthread_mutex_unlock(&seen_mu);
	return v;
}

static void
setup(void)
{
	sk_store_options o = SK_STORE_OPTIONS_INIT;
	sk_error err = { 0 };

	o.uri = sk_test_mongodb_uri();
	snprintf(db, sizeof(db), "%s", sk_test_unique_db());
	o.database = db;
	ck_assert_msg(sk_store_open(&store, &o, &err) == 0, "store: %s", err.message);
	seen = sk_strmap_new(free);
}

static void
teardown(void)
{
	sk_store_drop(store, NULL);
	sk_store_close(store);
	sk_strmap_free(seen);
	store = NULL;
}

static sk_userspace *
make_us(const char *name, const char *user, const char *tmpl)
{
	char yaml[512];
	sk_doclist dl = { 0 };
	sk_errlist errs = { 0 };
	sk_userspace *us = NULL;
	sk_error err = { 0 };

	snprintf(yaml, sizeof(yaml),
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	        "metadata:\n  name: %s\nspec:\n  userID: %s\n  template: %s\n",
	        name, user, tmpl);
	ck_assert_int_eq(sk_doc_parse(yaml, strlen(yaml), "t.yaml", &dl, &err), 0);
	ck_assert_int_eq(sk_userspace_from_doc(dl.items[0], &us, &errs), 0);
	sk_doclist_dispose(&dl);
	sk_errlist_dispose(&errs);
	return us;
}

static void
create(const char *name, const char *user)
{
	sk_userspace *us = make_us(name, user, "base"), *out = NULL;
	sk_error err = { 0 };

	ck_assert_msg(sk_store_create(store, us, &out, &err) == 0, "create: %s", err.message);
	sk_userspace_free(us);
	sk_userspace_free(out);
}

static sk_informer *
start_informer(int64_t poll_ms, int64_t relist_ms)
{
	sk_informer_options o = SK_INFORMER_OPTIONS_INIT;
	sk_informer *inf = NULL;
	sk_error err = { 0 };

	o.store = store;
	o.poll_ms = poll_ms;
	o.relist_ms = relist_ms;
	o.on_change = on_change;
	ck_assert_int_eq(sk_informer_new(&inf, &o, &err), 0);
	ck_assert(!sk_informer_has_synced(inf));
	ck_assert_int_eq(sk_informer_start(inf, &err), 0);
	ck_assert(sk_informer_wait_synced(inf, 5000));
	return inf;
}

/* Polls until fn holds or timeout_ms passes. */
static bool
eventually(
        bool (*fn)(sk_informer *, const char *), sk_informer *inf, const char *arg, int timeout_ms)
{
	for (int t = 0; t < timeout_ms; t += 20) {
		if (fn(inf, arg))
			return true;
		usleep(20000);
	}
	return fn(inf, arg);
}

static bool
cached(sk_informer *inf, const char *name)
{
	sk_userspace *us = NULL;
	bool ok = sk_informer_get(inf, name, &us) == 0;

	sk_userspace_free(us);
	return ok;
}

static bool
not_cached(sk_informer *inf, const char *name)
{
	return !cached(inf, name);
}

static bool
has_template(sk_informer *inf, const char *tmpl)
{
	sk_userspace *us = NULL;
	bool ok = sk_informer_get(inf, "bob", &us) == 0 && strcmp(us->spec.template_id, tmpl) == 0;

	sk_userspace_free(us);
	return ok;
}

START_TEST(test_initial_list_and_synced)
{
	sk_informer *inf;
	sk_userspace *got[2] = { NULL, NULL };

	create("alice", "u-alice");
	create("bob", "u-bob");
	inf = start_informer(100, 60000);
	ck_assert_uint_eq(sk_informer_len(inf), 2);
	ck_assert_int_eq(sk_informer_get(inf, "alice", &got[0]), 0);
	ck_assert_int_eq(sk_informer_get(inf, "bob", &got[1]), 0);
	ck_assert_str_eq(got[0]->spec.user_id, "u-alice");
	ck_assert_str_eq(got[1]->spec.user_id, "u-bob");
	sk_userspace_free(got[0]);
	sk_userspace_free(got[1]);
	ck_assert(sk_informer_has_user(inf, "u-bob"));
	ck_assert(!sk_informer_has_user(inf, "u-carol"));
	ck_assert_int_eq(seen_count("alice"), 1);
	ck_assert_int_gt(sk_informer_last_rv(inf), 0);
	sk_informer_free(inf);
}
END_TEST

START_TEST(test_create_update_delete_seen)
{
	sk_informer *inf = start_informer(100, 400);
	sk_userspace *cur = NULL, *next = NULL;
	sk_error err = { 0 };

	create("bob", "u-bob");
	ck_assert(eventually(cached, inf, "bob", 1000));
	ck_assert_int_eq(seen_count("bob"), 1);
	ck_assert(sk_informer_has_user(inf, "u-bob"));

	ck_assert_int_eq(sk_store_get(store, "bob", &cur, &err), 0);
	free(cur->spec.template_id);
	cur->spec.template_id = sk_strdup("python");
	ck_assert_msg(sk_store_update(store, cur, &next, &err) == 0, "%s", err.message);
	ck_assert(eventually(has_template, inf, "python", 1000));
	ck_assert_int_eq(seen_count("bob"), 2);

	ck_assert_int_eq(sk_store_remove(store, "bob", &err), 0);
	/* Removal is caught by the relist (400 ms here). */
	ck_assert(eventually(not_cached, inf, "bob", 2000));
	ck_assert_int_eq(seen_count("bob"), 3);
	ck_assert(!sk_informer_has_user(inf, "u-bob"));
	sk_userspace_free(cur);
	sk_userspace_free(next);
	sk_informer_free(inf);
}
END_TEST

START_TEST(test_status_write_seen)
{
	sk_informer *inf;
	sk_userspace *cur = NULL, *next = NULL, *cached_us = NULL;
	sk_userspace_status st = { 0 };
	sk_error err = { 0 };

	create("carol", "u-carol");
	inf = start_informer(100, 60000);
	ck_assert_int_eq(sk_store_get(store, "carol", &cur, &err), 0);
	st.phase = SK_PHASE_RUNNING;
	st.sandbox_id = "isim1";
	ck_assert_msg(sk_store_write_status(store, cur, &st, &next, &err) == 0, "%s", err.message);
	for (int t = 0; t < 50 && seen_count("carol") < 2; t++)
		usleep(20000);
	ck_assert_int_eq(sk_informer_get(inf, "carol", &cached_us), 0);
	ck_assert_int_eq(cached_us->status.phase, SK_PHASE_RUNNING);
	ck_assert_str_eq(cached_us->status.sandbox_id, "isim1");
	ck_assert_int_eq(cached_us->meta.resource_version, next->meta.resource_version);
	sk_userspace_free(cur);
	sk_userspace_free(next);
	sk_userspace_free(cached_us);
	sk_informer_free(inf);
}
END_TEST

/* Sets the stored resourceVersion of name to rv behind the store's back,
 * as a writer whose clock ran ahead in a burst would have left it. */
static void
raw_set_rv(const char *name, int64_t rv)
{
	mongoc_client_t *client = mongoc_client_new(sk_test_mongodb_uri());
	mongoc_collection_t *coll = mongoc_client_get_collection(client, db, "userspaces");
	bson_t *filter = BCON_NEW("metadata.name", BCON_UTF8(name));
	bson_t *update = BCON_NEW("$set", "{", "metadata.resourceVersion", BCON_INT64(rv), "}");
	bson_error_t berr;

	ck_assert_msg(mongoc_collection_update_one(coll, filter, update, NULL, NULL, &berr), "%s",
	        berr.message);
	bson_destroy(update);
	bson_destroy(filter);
	mongoc_collection_destroy(coll);
	mongoc_client_destroy(client);
}

static bool
dave_running(sk_informer *inf, const char *arg)
{
	sk_userspace *us = NULL;
	bool ok = sk_informer_get(inf, "dave", &us) == 0 && us->status.phase == SK_PHASE_RUNNING;

	(void)arg;
	sk_userspace_free(us);
	return ok;
}

/* Another process writes with a clock far behind the versions the informer
 * has seen (a replica whose clock did not run ahead in a burst, while ours
 * did): its write is below last_rv - lookback, and the poll still reads it
 * (the look-back alone missed it until the next relist). */
START_TEST(test_writer_behind_seen)
{
	sk_store_options o = SK_STORE_OPTIONS_INIT;
	sk_store *other = NULL;
	sk_informer *inf;
	sk_userspace *cur = NULL, *next = NULL;
	sk_userspace_status st = { 0 };
	sk_error err = { 0 };

	o.uri = sk_test_mongodb_uri();
	o.database = db;
	ck_assert_msg(sk_store_open(&other, &o, &err) == 0, "store: %s", err.message);
	create("dave", "u-dave");
	/* other's first write seeds its clock from the stored versions: now */
	ck_assert_int_eq(sk_store_get(other, "dave", &next, &err), 0);
	st.phase = SK_PHASE_CREATING;
	ck_assert_msg(sk_store_write_status(other, next, &st, &cur, &err) == 0, "%s", err.message);
	sk_userspace_free(next);
	create("ahead", "u-ahead");
	raw_set_rv("ahead", sk_now_ms() / 10 + 100000); /* 1000 s ahead of the wall */
	inf = start_informer(100, 600000);
	ck_assert_int_ge(sk_informer_last_rv(inf), sk_now_ms() / 10 + 90000);
	st.phase = SK_PHASE_RUNNING;
	st.sandbox_id = "isim2";
	ck_assert_msg(sk_store_write_status(other, cur, &st, &next, &err) == 0, "%s", err.message);
	ck_assert_int_lt(next->meta.resource_version, sk_informer_last_rv(inf) - 256);
	ck_assert_msg(eventually(dave_running, inf, NULL, 3000),
	        "a write at version %lld below the look-back was not read",
	        (long long)next->meta.resource_version);
	sk_userspace_free(cur);
	sk_userspace_free(next);
	sk_informer_free(inf);
	sk_store_close(other);
}
END_TEST

START_TEST(test_lookback_does_not_refire)
{
	sk_informer_options o = SK_INFORMER_OPTIONS_INIT;
	sk_informer *inf = NULL;
	sk_informer_stats st;
	sk_error err = { 0 };

	create("dave", "u-dave");
	create("erin", "u-erin");
	o.store = store;
	o.on_change = on_change;
	o.lookback = 1000; /* every poll re-reads everything */
	ck_assert_int_eq(sk_informer_new(&inf, &o, &err), 0);
	ck_assert_int_eq(sk_informer_relist(inf, &err), 0);
	ck_assert(sk_informer_has_synced(inf));
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(sk_informer_poll(inf, &err), 0);
	/* Unchanged versions are recognised: one callback each, from the list. */
	ck_assert_int_eq(seen_count("dave"), 1);
	ck_assert_int_eq(seen_count("erin"), 1);
	sk_informer_get_stats(inf, &st);
	ck_assert_uint_eq(st.polls, 3);
	ck_assert_uint_eq(st.changes, 2);
	/* A write with an older version than the cache never wins. */
	create("frank", "u-frank");
	ck_assert_int_eq(sk_informer_poll(inf, &err), 0);
	ck_assert_int_eq(seen_count("frank"), 1);
	sk_informer_free(inf);
}
END_TEST

/* skip_status_only: a status-only write updates the cache without a
 * callback; a spec change, a finalizer or a deletion still calls back. */
START_TEST(test_status_only_skipped)
{
	sk_informer_options o = SK_INFORMER_OPTIONS_INIT;
	sk_informer *inf = NULL;
	sk_userspace *cur = NULL, *next = NULL, *cached_us = NULL;
	sk_userspace_status st = { 0 };
	sk_informer_stats stats;
	sk_error err = { 0 };

	create("gina", "u-gina");
	o.store = store;
	o.on_change = on_change;
	o.skip_status_only = true;
	ck_assert_int_eq(sk_informer_new(&inf, &o, &err), 0);
	ck_assert_int_eq(sk_informer_relist(inf, &err), 0);
	ck_assert_int_eq(seen_count("gina"), 1);
	ck_assert_int_eq(sk_store_get(store, "gina", &cur, &err), 0);
	st.phase = SK_PHASE_RUNNING;
	st.sandbox_id = "isim2";
	ck_assert_msg(sk_store_write_status(store, cur, &st, &next, &err) == 0, "%s", err.message);
	ck_assert_int_eq(sk_informer_poll(inf, &err), 0);
	ck_assert_int_eq(seen_count("gina"), 1);
	ck_assert_int_eq(sk_informer_get(inf, "gina", &cached_us), 0);
	ck_assert_str_eq(cached_us->status.sandbox_id, "isim2");
	ck_assert_int_eq(cached_us->meta.resource_version, next->meta.resource_version);
	sk_informer_get_stats(inf, &stats);
	ck_assert_uint_eq(stats.skipped, 1);
	ck_assert(sk_informer_status_only_change(cur, next));
	/* A spec change is not status-only. */
	sk_userspace_free(cur);
	cur = next;
	next = NULL;
	free(cur->spec.template_id);
	cur->spec.template_id = sk_strdup("python");
	ck_assert(!sk_informer_status_only_change(cached_us, cur));
	ck_assert_msg(sk_store_update(store, cur, &next, &err) == 0, "%s", err.message);
	ck_assert_int_eq(sk_informer_poll(inf, &err), 0);
	ck_assert_int_eq(seen_count("gina"), 2);
	/* Deletion (deletionTimestamp, finalizer kept) calls back too. */
	ck_assert_int_eq(sk_store_mark_deleted(store, "gina", &err), 0);
	ck_assert_int_eq(sk_informer_poll(inf, &err), 0);
	ck_assert_int_eq(seen_count("gina"), 3);
	sk_userspace_free(cur);
	sk_userspace_free(next);
	sk_userspace_free(cached_us);
	sk_informer_free(inf);
}
END_TEST

/* A copy the owner wrote goes into the cache at once: no callback for its own
 * status write, a callback when it carries someone else's spec edit, and an
 * older copy never replaces a newer one. */
START_TEST(test_observe_written_copy)
{
	sk_informer_options o = SK_INFORMER_OPTIONS_INIT;
	sk_informer *inf = NULL;
	sk_userspace *cur = NULL, *next = NULL, *edited = NULL, *got = NULL;
	sk_userspace_status st = { .phase = SK_PHASE_RUNNING, .sandbox_id = "isim3" };
	sk_error err = { 0 };

	create("hana", "u-hana");
	o.store = store;
	o.on_change = on_change;
	o.skip_status_only = true;
	ck_assert_int_eq(sk_informer_new(&inf, &o, &err), 0);
	ck_assert_int_eq(sk_informer_relist(inf, &err), 0);
	ck_assert_int_eq(sk_store_get(store, "hana", &cur, &err), 0);
	ck_assert_msg(sk_store_write_status(store, cur, &st, &next, &err) == 0, "%s", err.message);
	sk_informer_observe(inf, next);
	ck_assert_int_eq(seen_count("hana"), 1); /* the relist only */
	ck_assert_int_eq(sk_informer_get(inf, "hana", &got), 0);
	ck_assert_str_eq(got->status.sandbox_id, "isim3");
	ck_assert_int_eq(got->meta.resource_version, next->meta.resource_version);
	sk_userspace_free(got);
	/* The older copy is ignored. */
	sk_informer_observe(inf, cur);
	ck_assert_int_eq(sk_informer_get(inf, "hana", &got), 0);
	ck_assert_int_eq(got->meta.resource_version, next->meta.resource_version);
	sk_userspace_free(got);
	/* A newer copy with a spec change calls back. */
	edited = sk_userspace_dup(next);
	edited->meta.resource_version++;
	free(edited->spec.template_id);
	edited->spec.template_id = sk_strdup("python");
	sk_informer_observe(inf, edited);
	ck_assert_int_eq(seen_count("hana"), 2);
	sk_userspace_free(cur);
	sk_userspace_free(next);
	sk_userspace_free(edited);
	sk_informer_free(inf);
}
END_TEST

/* Polling stays under a fifth of the time however slow a read is, within bounds. */
START_TEST(test_poll_pause)
{
	ck_assert_int_eq(sk_informer_poll_pause(1000, 5), 1000);
	ck_assert_int_eq(sk_informer_poll_pause(1000, 250), 1000);
	ck_assert_int_eq(sk_informer_poll_pause(1000, 600), 2400);
	ck_assert_int_eq(sk_informer_poll_pause(100, 2500), 10000);
	ck_assert_int_eq(sk_informer_poll_pause(1000, 60000), SK_INFORMER_MAX_PAUSE_MS);
}
END_TEST

Suite *
sk_suite_informer(void)
{
	Suite *s = suite_create("informer");
	TCase *tc = tcase_create("poll");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_initial_list_and_synced);
	tcase_add_test(tc, test_create_update_delete_seen);
	tcase_add_test(tc, test_status_write_seen);
	tcase_add_test(tc, test_lookback_does_not_refire);
	tcase_add_test(tc, test_writer_behind_seen);
	tcase_add_test(tc, test_status_only_skipped);
	tcase_add_test(tc, test_observe_written_copy);
	tcase_add_test(tc, test_poll_pause);
	suite_add_tcase(s, tc);
	return s;
}
