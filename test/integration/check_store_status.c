/*
 * Integration tests of sk_store_write_status against a real FerretDB: the
 * status write from the caller's copy, which skips the re-read when the
 * copy is fresh (pkg/store/mongo_cas.c), must still never overwrite anyone; and
 * the test server answers lookups by _id from its index.
 */
#include <check.h>
#include <mongoc/mongoc.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "../testutil.h"
#include "store/store.h"

Suite *sk_suite_store_status(void);

static char dbname[64];

static sk_store *
open_store(void)
{
	sk_store_options o = SK_STORE_OPTIONS_INIT;
	sk_store *s = NULL;
	sk_error err = { 0 };

	snprintf(dbname, sizeof(dbname), "%s", sk_test_unique_db());
	o.uri = sk_test_mongodb_uri();
	o.database = dbname;
	ck_assert_msg(sk_store_open(&s, &o, &err) == 0, "open: %s", err.message);
	return s;
}

static void
close_store(sk_store *s)
{
	sk_error err;

	ck_assert_msg(sk_store_drop(s, &err) == 0, "drop: %s", err.message);
	sk_store_close(s);
}

static sk_userspace *
create(sk_store *s, const char *name)
{
	sk_userspace in = { 0 }, *out = NULL;
	sk_error err = { 0 };

	in.meta.name = (char *)name;
	in.spec.user_id = (char *)name;
	in.spec.template_id = (char *)"base";
	ck_assert_msg(sk_store_create(s, &in, &out, &err) == 0, "create: %s", err.message);
	return out;
}

/* Another writer changes the spec (the template) of `base`'s object. */
static sk_userspace *
edit_template(sk_store *s, const sk_userspace *base, const char *t)
{
	sk_userspace *edit = sk_userspace_dup(base), *out = NULL;
	sk_error err = { 0 };

	free(edit->spec.template_id);
	edit->spec.template_id = strdup(t);
	ck_assert_msg(sk_store_update(s, edit, &out, &err) == 0, "update: %s", err.message);
	sk_userspace_free(edit);
	return out;
}

/* What the sweep of old claims does (mongo_cas.c), at once. */
static void
sweep_all_claims(void)
{
	mongoc_client_t *client = mongoc_client_new(sk_test_mongodb_uri());
	mongoc_collection_t *coll = mongoc_client_get_collection(client, dbname, "claims");
	bson_t all = BSON_INITIALIZER;
	bson_error_t berr;

	ck_assert_msg(
	        mongoc_collection_delete_many(coll, &all, NULL, NULL, &berr), "%s", berr.message);
	mongoc_collection_destroy(coll);
	mongoc_client_destroy(client);
}

static sk_userspace *
get(sk_store *s, const char *name)
{
	sk_userspace *us = NULL;
	sk_error err = { 0 };

	ck_assert_msg(sk_store_get(s, name, &us, &err) == 0, "get: %s", err.message);
	return us;
}

/* A fresh copy writes its status, keeps spec and metadata, and the result is
 * itself a fresh copy for the next write. */
START_TEST(test_fresh_copy_writes)
{
	sk_store *s = open_store();
	sk_userspace *v1 = create(s, "alice"), *v2 = NULL, *v3 = NULL, *got;
	sk_userspace_status st = { 0 };
	sk_error err = { 0 };

	ck_assert_int_gt(v1->meta.read_ms, 0);
	st.phase = SK_PHASE_CREATING;
	ck_assert_msg(sk_store_write_status(s, v1, &st, &v2, &err) == 0, "%s", err.message);
	ck_assert_int_gt(v2->meta.resource_version, v1->meta.resource_version);
	ck_assert_int_ge(v2->meta.read_ms, v1->meta.read_ms);
	st.phase = SK_PHASE_RUNNING;
	st.sandbox_id = "i-1";
	ck_assert_msg(sk_store_write_status(s, v2, &st, &v3, &err) == 0, "%s", err.message);
	got = get(s, "alice");
	ck_assert_int_eq(got->status.phase, SK_PHASE_RUNNING);
	ck_assert_str_eq(got->status.sandbox_id, "i-1");
	ck_assert_str_eq(got->spec.template_id, "base");
	ck_assert_str_eq(got->meta.uid, v1->meta.uid);
	ck_assert_int_eq(got->meta.generation, 1);
	ck_assert_int_eq(got->meta.resource_version, v3->meta.resource_version);
	sk_userspace_free(got);
	sk_userspace_free(v1);
	sk_userspace_free(v2);
	sk_userspace_free(v3);
	close_store(s);
}
END_TEST

/* The read and write commands the store sent, by collection: a get is one
 * read of userspaces; a status write from a fresh copy reads nothing. */
START_TEST(test_commands_counted)
{
	sk_store *s = open_store();
	sk_userspace *v1 = create(s, "dave"), *v2 = NULL, *got;
	sk_userspace_status st = { .phase = SK_PHASE_CREATING };
	uint64_t r0[SK_STORE_WRITE_COLLS], r1[SK_STORE_WRITE_COLLS], r2[SK_STORE_WRITE_COLLS];
	uint64_t w0[SK_STORE_WRITE_COLLS], w1[SK_STORE_WRITE_COLLS];
	sk_error err = { 0 };
	const int us = SK_STORE_WRITES_USERSPACES;

	sk_store_read_commands(s, r0);
	sk_store_write_commands(s, w0);
	ck_assert_msg(sk_store_write_status(s, v1, &st, &v2, &err) == 0, "%s", err.message);
	sk_store_read_commands(s, r1);
	sk_store_write_commands(s, w1);
	ck_assert_uint_gt(w1[us], w0[us]);
	for (int i = 0; i < SK_STORE_WRITE_COLLS; i++)
		ck_assert_msg(r1[i] == r0[i], "%s: %llu reads behind a fresh copy's write",
		        sk_store_write_coll_name((sk_store_write_coll)i),
		        (unsigned long long)(r1[i] - r0[i]));
	got = get(s, "dave");
	sk_store_read_commands(s, r2);
	ck_assert_uint_eq(r2[us], r1[us] + 1); /* one find */
	sk_userspace_free(got);
	sk_userspace_free(v1);
	sk_userspace_free(v2);
	close_store(s);
}
END_TEST

/* A fresh copy that someone else moved past meanwhile loses (their claim on
 * its version is still there), and their spec edit survives. */
START_TEST(test_fresh_copy_conflict)
{
	sk_store *s = open_store();
	sk_userspace *v1 = create(s, "bob"), *edited = edit_template(s, v1, "gpu"), *out = NULL;
	sk_userspace *got;
	sk_userspace_status st = { .phase = SK_PHASE_RUNNING };
	sk_error err = { 0 };

	ck_assert_int_eq(sk_store_write_status(s, v1, &st, &out, &err), SK_ECONFLICT);
	ck_assert_ptr_null(out);
	got = get(s, "bob");
	ck_assert_str_eq(got->spec.template_id, "gpu");
	ck_assert_int_eq(got->meta.resource_version, edited->meta.resource_version);
	ck_assert_int_ne(got->status.phase, SK_PHASE_RUNNING);
	sk_userspace_free(got);
	sk_userspace_free(v1);
	sk_userspace_free(edited);
	close_store(s);
}
END_TEST

/* A copy that is not fresh is checked against the stored object, so it
 * loses even when the claims that would have stopped it were swept. */
START_TEST(test_old_copy_rereads)
{
	sk_store *s = open_store();
	sk_userspace *v1 = create(s, "carol"), *edited = edit_template(s, v1, "gpu"), *out = NULL;
	sk_userspace *got;
	sk_userspace_status st = { .phase = SK_PHASE_RUNNING };
	sk_error err = { 0 };

	sweep_all_claims();
	v1->meta.read_ms = sk_monotonic_ms() - 60000;
	ck_assert_int_eq(sk_store_write_status(s, v1, &st, &out, &err), SK_ECONFLICT);
	ck_assert_ptr_null(out);
	v1->meta.read_ms = 0; /* unknown: the same */
	ck_assert_int_eq(sk_store_write_status(s, v1, &st, &out, &err), SK_ECONFLICT);
	got = get(s, "carol");
	ck_assert_str_eq(got->spec.template_id, "gpu");
	ck_assert_int_ne(got->status.phase, SK_PHASE_RUNNING);
	/* The copy just read writes. */
	ck_assert_msg(sk_store_write_status(s, got, &st, &out, &err) == 0, "%s", err.message);
	sk_userspace_free(out);
	sk_userspace_free(got);
	sk_userspace_free(v1);
	sk_userspace_free(edited);
	close_store(s);
}
END_TEST

/* A forced removal claims the version it removes: a fresh copy of the old
 * object cannot write over a new object of the same name. */
START_TEST(test_fresh_copy_after_remove)
{
	sk_store *s = open_store();
	sk_userspace *old = create(s, "erin"), *out = NULL, *now, *got;
	sk_userspace_status st = { .phase = SK_PHASE_RUNNING };
	sk_error err = { 0 };

	ck_assert_msg(sk_store_remove(s, "erin", &err) == 0, "%s", err.message);
	now = create(s, "erin");
	ck_assert_int_ne(sk_store_write_status(s, old, &st, &out, &err), 0);
	ck_assert_ptr_null(out);
	got = get(s, "erin");
	ck_assert_str_eq(got->meta.uid, now->meta.uid);
	ck_assert_int_eq(got->meta.resource_version, now->meta.resource_version);
	ck_assert_int_ne(got->status.phase, SK_PHASE_RUNNING);
	sk_userspace_free(got);
	sk_userspace_free(now);
	sk_userspace_free(old);
	close_store(s);
}
END_TEST

/* Status writes of many objects at once share commands (mongo_batch.c) and
 * keep every compare-and-swap: of two writers from one version of an object
 * one wins and the other conflicts; an old copy is still re-read (and loses
 * to an edit it did not see); an object removed meanwhile is not found; and
 * the writes that won are stored as written. */
#define BATCH_OBJECTS 8
#define BATCH_WRITERS (2 * BATCH_OBJECTS + 3)

typedef struct batch_writer {
	sk_store *s;
	const sk_userspace *base;
	pthread_barrier_t *start;
	char sandbox[32];
	int rc;
	sk_userspace *out;
} batch_writer;

static void *
batch_write(void *arg)
{
	batch_writer *w = arg;
	sk_userspace_status st = { .phase = SK_PHASE_RUNNING, .sandbox_id = w->sandbox };
	sk_error err = { 0 };

	pthread_barrier_wait(w->start);
	w->rc = sk_store_write_status(w->s, w->base, &st, &w->out, &err);
	return NULL;
}

START_TEST(test_batched_writes_keep_cas)
{
	sk_store *s = open_store();
	sk_userspace *base[BATCH_OBJECTS], *old, *edited_old, *stale, *gone, *edited;
	batch_writer w[BATCH_WRITERS];
	pthread_t th[BATCH_WRITERS];
	pthread_barrier_t start;
	uint64_t c0[SK_STORE_WRITE_COLLS], c1[SK_STORE_WRITE_COLLS];
	uint64_t n0, n1;
	sk_error err = { 0 };
	char name[32];
	int k = 0;

	for (int i = 0; i < BATCH_OBJECTS; i++) {
		snprintf(name, sizeof(name), "b%02d", i);
		base[i] = create(s, name);
	}
	old = create(s, "old"); /* an old copy, nobody else wrote: it re-reads and wins */
	old->meta.read_ms = sk_monotonic_ms() - 60000;
	stale = create(s, "stale"); /* an old copy of an edited object: it loses */
	edited = edit_template(s, stale, "gpu");
	sweep_all_claims(); /* only the re-read can tell */
	stale->meta.read_ms = sk_monotonic_ms() - 60000;
	gone = create(s, "gone"); /* removed before the write */
	ck_assert_msg(sk_store_remove(s, "gone", &err) == 0, "%s", err.message);
	ck_assert_int_eq(pthread_barrier_init(&start, NULL, BATCH_WRITERS), 0);
	for (int i = 0; i < BATCH_OBJECTS; i++) {
		for (int j = 0; j < 2; j++, k++) {
			w[k] = (batch_writer){ s, base[i], &start, "", -1, NULL };
			snprintf(w[k].sandbox, sizeof(w[k].sandbox), "i-%d-%d", i, j);
		}
	}
	w[k++] = (batch_writer){ s, old, &start, "i-old", -1, NULL };
	w[k++] = (batch_writer){ s, stale, &start, "i-stale", -1, NULL };
	w[k++] = (batch_writer){ s, gone, &start, "i-gone", -1, NULL };
	ck_assert_int_eq(k, BATCH_WRITERS);
	n0 = sk_store_write_commands(s, c0);
	for (int i = 0; i < BATCH_WRITERS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, batch_write, &w[i]), 0);
	for (int i = 0; i < BATCH_WRITERS; i++)
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
	n1 = sk_store_write_commands(s, c1);
	ck_assert_uint_gt(n1, n0); /* counted */
	for (int i = 0; i < BATCH_OBJECTS; i++) {
		batch_writer *a = &w[2 * i], *b = &w[2 * i + 1], *won = a->rc == 0 ? a : b;
		sk_userspace *got;

		ck_assert_msg((a->rc == 0 && b->rc == SK_ECONFLICT) ||
		                (b->rc == 0 && a->rc == SK_ECONFLICT),
		        "object %d: rc %d and %d, want one 0 and one conflict", i, a->rc, b->rc);
		got = get(s, base[i]->meta.name);
		ck_assert_str_eq(got->status.sandbox_id, won->sandbox);
		ck_assert_int_eq(got->meta.resource_version, won->out->meta.resource_version);
		ck_assert_int_gt(got->meta.resource_version, base[i]->meta.resource_version);
		sk_userspace_free(got);
	}
	ck_assert_int_eq(w[k - 3].rc, 0);
	ck_assert_str_eq(w[k - 3].out->status.sandbox_id, "i-old");
	ck_assert_int_eq(w[k - 2].rc, SK_ECONFLICT);
	ck_assert_int_eq(w[k - 1].rc, SK_ENOTFOUND);
	edited_old = get(s, "stale");
	ck_assert_str_eq(edited_old->spec.template_id, "gpu");
	ck_assert_ptr_null(edited_old->status.sandbox_id);
	for (int i = 0; i < BATCH_WRITERS; i++)
		sk_userspace_free(w[i].out);
	for (int i = 0; i < BATCH_OBJECTS; i++)
		sk_userspace_free(base[i]);
	pthread_barrier_destroy(&start);
	sk_userspace_free(edited_old);
	sk_userspace_free(edited);
	sk_userspace_free(old);
	sk_userspace_free(stale);
	sk_userspace_free(gone);
	close_store(s);
}
END_TEST

/* Events recorded at the same time share commands (mongo_batch.c) and
 * still aggregate: 16 threads recording one event of one object count 16
 * (one store sends one batch at a time, so no two of its $inc race), and
 * 16 events of 16 objects are each there once. */
#define EVENT_THREADS 16

typedef struct event_writer {
	sk_store *s;
	pthread_barrier_t *start;
	char object[32];
	int rc;
} event_writer;

static void *
event_write(void *arg)
{
	event_writer *w = arg;
	sk_error err = { 0 };

	pthread_barrier_wait(w->start);
	w->rc = sk_store_event(w->s, w->object, "uid-1", "Normal", "Created", "created", &err);
	return NULL;
}

START_TEST(test_batched_events_aggregate)
{
	sk_store *s = open_store();
	event_writer w[2 * EVENT_THREADS];
	pthread_t th[2 * EVENT_THREADS];
	pthread_barrier_t start;
	sk_event_list l = { 0 };
	sk_error err = { 0 };

	ck_assert_int_eq(pthread_barrier_init(&start, NULL, 2 * EVENT_THREADS), 0);
	for (int i = 0; i < 2 * EVENT_THREADS; i++) {
		w[i] = (event_writer){ s, &start, "", -1 };
		if (i < EVENT_THREADS)
			snprintf(w[i].object, sizeof(w[i].object), "same");
		else
			snprintf(w[i].object, sizeof(w[i].object), "e%02d", i);
		ck_assert_int_eq(pthread_create(&th[i], NULL, event_write, &w[i]), 0);
	}
	for (int i = 0; i < 2 * EVENT_THREADS; i++) {
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
		ck_assert_int_eq(w[i].rc, 0);
	}
	ck_assert_msg(sk_store_events(s, "same", NULL, 0, &l, &err) == 0, "%s", err.message);
	ck_assert_uint_eq(l.len, 1);
	ck_assert_int_eq(l.items[0].count, EVENT_THREADS);
	sk_event_list_dispose(&l);
	ck_assert_msg(sk_store_events(s, NULL, NULL, 0, &l, &err) == 0, "%s", err.message);
	ck_assert_uint_eq(l.len, 1 + EVENT_THREADS);
	for (size_t i = 0; i < l.len; i++)
		ck_assert_int_eq(l.items[i].count,
		        strcmp(l.items[i].object, "same") == 0 ? EVENT_THREADS : 1);
	sk_event_list_dispose(&l);
	pthread_barrier_destroy(&start);
	close_store(s);
}
END_TEST

/* The FerretDB the tests and the demo run (hack/deps.sh builds it with its
 * _id filter written like its _id index) finds an object by _id through the
 * index; without that fix every status write reads the whole collection. */
START_TEST(test_id_lookup_uses_index)
{
	sk_store *s = open_store();
	sk_userspace *us = create(s, "dora");
	mongoc_client_t *client = mongoc_client_new(sk_test_mongodb_uri());
	mongoc_database_t *db = mongoc_client_get_database(client, dbname);
	bson_t *cmd = BCON_NEW("explain", "{", "find", BCON_UTF8("userspaces"), "filter", "{",
	        "_id", BCON_UTF8("dora"), "}", "}");
	bson_t reply;
	bson_error_t berr;
	char *text;

	ck_assert_msg(
	        mongoc_database_command_simple(db, cmd, NULL, &reply, &berr), "%s", berr.message);
	text = bson_as_relaxed_extended_json(&reply, NULL);
	ck_assert_msg(strstr(text, "USING INDEX") != NULL, "query plan: %s", text);
	bson_free(text);
	bson_destroy(&reply);
	bson_destroy(cmd);
	mongoc_database_destroy(db);
	mongoc_client_destroy(client);
	sk_userspace_free(us);
	close_store(s);
}
END_TEST

Suite *
sk_suite_store_status(void)
{
	Suite *s = suite_create("store_status");
	TCase *tc = tcase_create("write_status");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_fresh_copy_writes);
	tcase_add_test(tc, test_commands_counted);
	tcase_add_test(tc, test_fresh_copy_conflict);
	tcase_add_test(tc, test_old_copy_rereads);
	tcase_add_test(tc, test_fresh_copy_after_remove);
	tcase_add_test(tc, test_batched_writes_keep_cas);
	tcase_add_test(tc, test_batched_events_aggregate);
	tcase_add_test(tc, test_id_lookup_uses_index);
	suite_add_tcase(s, tc);
	return s;
}
