/*
 * Integration tests of pkg/store against a real FerretDB: round trips,
 * uniqueness (also under concurrency), compare-and-swap, generation rules,
 * lists, finalizers, events and an unreachable or vanishing server.
 * Each test uses a fresh database.
 */
#include <check.h>
#include <jansson.h>
#include <mongoc/mongoc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../testutil.h"
#include "store/store.h"

Suite *sk_suite_store(void);

static sk_store *
open_db(const char *uri, const char *db)
{
	sk_store_options o = SK_STORE_OPTIONS_INIT;
	sk_store *s = NULL;
	sk_error err = { 0 };

	o.uri = uri;
	o.database = db;
	ck_assert_msg(sk_store_open(&s, &o, &err) == 0, "open: %s", err.message);
	return s;
}

static char dbname[64];

static sk_store *
open_store(void)
{
	snprintf(dbname, sizeof(dbname), "%s", sk_test_unique_db());
	return open_db(sk_test_mongodb_uri(), dbname);
}

static void
close_store(sk_store *s)
{
	sk_error err;

	ck_assert_msg(sk_store_drop(s, &err) == 0, "drop: %s", err.message);
	sk_store_close(s);
}

/* A decoded UserSpace with labels and maps whose keys have dots and slashes. */
static sk_userspace *
make_us(const char *name, const char *user_id, const char *team)
{
	json_error_t jerr;
	json_t *root = json_pack_ex(&jerr, 0,
	        "{s:s,s:s,s:{s:s,s:{s:s,s:s},s:{s:s}},s:{s:s,s:{s:s},s:{s:s}}}", "apiVersion",
	        SK_API_VERSION, "kind", SK_KIND_USERSPACE, "metadata", "name", name, "labels",
	        "team", team, "app.kubernetes.io/name", "spaces", "annotations",
	        "example.com/owner", "ops team", "spec", "userID", user_id, "env", "API_MODE",
	        "fast", "metadata", "project", "p-1");
	sk_userspace *us = NULL;
	sk_error err = { 0 };

	ck_assert_msg(root != NULL, "json_pack: %s", jerr.text);
	ck_assert_msg(sk_userspace_decode(root, &us, &err) == 0, "decode: %s", err.message);
	json_decref(root);
	return us;
}

static sk_userspace *
create(sk_store *s, const char *name, const char *user_id, const char *team)
{
	sk_userspace *in = make_us(name, user_id, team), *out = NULL;
	sk_error err = { 0 };

	ck_assert_msg(sk_store_create(s, in, &out, &err) == 0, "create %s: %s", name, err.message);
	sk_userspace_free(in);
	return out;
}

static sk_userspace *
get(sk_store *s, const char *name)
{
	sk_userspace *us = NULL;
	sk_error err = { 0 };

	ck_assert_msg(sk_store_get(s, name, &us, &err) == 0, "get %s: %s", name, err.message);
	return us;
}

static int
get_code(sk_store *s, const char *name)
{
	sk_userspace *us = NULL;
	sk_error err = { 0 };
	int rc = sk_store_get(s, name, &us, &err);

	sk_userspace_free(us);
	return rc;
}

static sk_userspace *update(sk_store *s, const sk_userspace *us);

static void
set_template(sk_userspace *us, const char *t)
{
	free(us->spec.template_id);
	us->spec.template_id = strdup(t);
}

START_TEST(test_create_get_roundtrip)
{
	sk_store *s = open_store();
	sk_userspace *in = make_us("alice", "alice", "research"), *out = NULL, *got;
	sk_error err = { 0 };
	int64_t now = sk_now_ms();

	/* Status and store-owned metadata in the input are not taken. */
	in->status.phase = SK_PHASE_RUNNING;
	in->status.sandbox_id = strdup("i-bogus");
	in->meta.generation = 42;
	ck_assert_int_eq(sk_store_create(s, in, &out, &err), 0);
	ck_assert_int_eq(out->meta.generation, 1);
	ck_assert_int_gt(out->meta.resource_version, 0);
	ck_assert_uint_eq(strlen(out->meta.uid), 36);
	got = get(s, "alice");
	ck_assert_str_eq(got->meta.uid, out->meta.uid);
	ck_assert_int_eq(got->meta.generation, 1);
	ck_assert_int_eq(got->meta.resource_version, out->meta.resource_version);
	ck_assert(got->meta.creation_ms >= now - 5000 && got->meta.creation_ms <= now + 5000);
	ck_assert_int_eq(got->meta.deletion_ms, 0);
	ck_assert(sk_userspace_has_finalizer(got, SK_FINALIZER));
	ck_assert_uint_eq(got->meta.n_finalizers, 1);
	ck_assert_int_eq(got->status.phase, SK_PHASE_NONE);
	ck_assert_ptr_null(got->status.sandbox_id);
	/* Defaults are stored explicitly and read back. */
	ck_assert_str_eq(got->spec.user_id, "alice");
	ck_assert_str_eq(got->spec.provider, "default");
	ck_assert_str_eq(got->spec.template_id, "base");
	ck_assert_int_eq(got->spec.mode, SK_MODE_RUNNING);
	ck_assert_int_eq(got->spec.idle_timeout_ms, 15 * 60 * 1000);
	ck_assert(sk_userspace_spec_equal(&got->spec, &in->spec));
	/* Keys with dots and slashes survive. */
	ck_assert(sk_kvlist_equal(&got->meta.labels, &in->meta.labels));
	ck_assert(sk_kvlist_equal(&got->meta.annotations, &in->meta.annotations));
	ck_assert_str_eq(sk_kvlist_get(&got->meta.labels, "app.kubernetes.io/name"), "spaces");
	ck_assert_str_eq(sk_kvlist_get(&got->meta.annotations, "example.com/owner"), "ops team");
	ck_assert_str_eq(sk_kvlist_get(&got->spec.env, "API_MODE"), "fast");
	ck_assert_int_eq(get_code(s, "nobody"), SK_ENOTFOUND);
	sk_userspace_free(in);
	sk_userspace_free(out);
	sk_userspace_free(got);
	close_store(s);
}
END_TEST

/* The stored document keeps user-chosen keys out of BSON field names. */
static bson_type_t
raw_type(const char *name, const char *path)
{
	mongoc_client_t *client = mongoc_client_new(sk_test_mongodb_uri());
	mongoc_collection_t *coll = mongoc_client_get_collection(client, dbname, "userspaces");
	bson_t *filter = BCON_NEW("_id", BCON_UTF8(name));
	mongoc_cursor_t *cur = mongoc_collection_find_with_opts(coll, filter, NULL, NULL);
	const bson_t *doc;
	bson_iter_t it, v;
	bson_type_t t = BSON_TYPE_EOD;

	if (mongoc_cursor_next(cur, &doc) && bson_iter_init(&it, doc) &&
	        bson_iter_find_descendant(&it, path, &v))
		t = bson_iter_type(&v);
	mongoc_cursor_destroy(cur);
	bson_destroy(filter);
	mongoc_collection_destroy(coll);
	mongoc_client_destroy(client);
	return t;
}

START_TEST(test_labels_stored_as_pairs)
{
	sk_store *s = open_store();
	sk_userspace *us = make_us("bob", "bob", "a"), *out = NULL, *got;
	sk_error err = { 0 };

	sk_kvlist_set(&us->meta.labels, "example.com/$weird.key", "v");
	ck_assert_int_eq(sk_store_create(s, us, &out, &err), 0);
	ck_assert_int_eq(raw_type("bob", "metadata.labels"), BSON_TYPE_ARRAY);
	ck_assert_int_eq(raw_type("bob", "metadata.annotations"), BSON_TYPE_ARRAY);
	ck_assert_int_eq(raw_type("bob", "spec.env"), BSON_TYPE_ARRAY);
	ck_assert_int_eq(raw_type("bob", "metadata.resourceVersion"), BSON_TYPE_INT64);
	ck_assert_int_eq(raw_type("bob", "metadata.creationTimestamp"), BSON_TYPE_DATE_TIME);
	got = get(s, "bob");
	ck_assert_str_eq(sk_kvlist_get(&got->meta.labels, "example.com/$weird.key"), "v");
	ck_assert(sk_kvlist_equal(&got->meta.labels, &us->meta.labels));
	sk_userspace_free(us);
	sk_userspace_free(out);
	sk_userspace_free(got);
	close_store(s);
}
END_TEST

START_TEST(test_create_duplicate_name)
{
	sk_store *s = open_store();
	sk_userspace *first = create(s, "alice", "alice", "a");
	sk_userspace *again = make_us("alice", "alice2", "b"), *out = NULL, *got;
	sk_error err = { 0 };

	ck_assert_int_eq(sk_store_create(s, again, &out, &err), SK_EEXISTS);
	ck_assert_ptr_null(out);
	ck_assert_msg(strstr(err.message, "alice") != NULL, "message: %s", err.message);
	got = get(s, "alice");
	ck_assert_str_eq(got->spec.user_id, "alice");
	ck_assert_str_eq(got->meta.uid, first->meta.uid);
	ck_assert_int_eq(got->meta.resource_version, first->meta.resource_version);
	sk_userspace_free(first);
	sk_userspace_free(again);
	sk_userspace_free(got);
	close_store(s);
}
END_TEST

START_TEST(test_unique_user_id)
{
	sk_store *s = open_store();
	sk_userspace *old = create(s, "alice-old", "alice", "a");
	sk_userspace *dup = make_us("alice", "alice", "a"), *out = NULL, *other, *got;
	sk_error err = { 0 };
	int rc;

	ck_assert_int_eq(sk_store_create(s, dup, &out, &err), SK_ECONFLICT);
	ck_assert_ptr_null(out);
	ck_assert_msg(strstr(err.message,
	                      "spec.userID \"alice\" is already used by userspace "
	                      "\"alice-old\"") != NULL,
	        "message: %s", err.message);
	ck_assert_int_eq(get_code(s, "alice"), SK_ENOTFOUND);
	/* An update that takes a used userID fails the same way and writes nothing. */
	other = create(s, "carol", "carol", "a");
	free(other->spec.user_id);
	other->spec.user_id = strdup("alice");
	rc = sk_store_update(s, other, &out, &err);
	ck_assert_msg(rc == SK_ECONFLICT, "update: %d %s", rc, err.message);
	ck_assert_msg(strstr(err.message, "alice-old") != NULL, "message: %s", err.message);
	got = get(s, "carol");
	ck_assert_str_eq(got->spec.user_id, "carol");
	ck_assert_int_eq(got->meta.resource_version, other->meta.resource_version);
	/* A free userID can be taken, and the old one is free again. */
	free(got->spec.user_id);
	got->spec.user_id = strdup("carol2");
	out = update(s, got);
	ck_assert_str_eq(out->spec.user_id, "carol2");
	ck_assert_int_eq(out->meta.generation, 2);
	sk_userspace_free(out);
	sk_userspace_free(dup);
	dup = make_us("carol-new", "carol", "a");
	ck_assert_int_eq(sk_store_create(s, dup, &out, &err), 0);
	sk_userspace_free(out);
	sk_userspace_free(old);
	sk_userspace_free(dup);
	sk_userspace_free(other);
	sk_userspace_free(got);
	close_store(s);
}
END_TEST

#define RACERS 8

struct racer {
	sk_store *s;
	int i;
	int rc;
};

static void *
race_create(void *arg)
{
	struct racer *r = arg;
	char name[32];
	sk_userspace *us, *out = NULL;
	sk_error err = { 0 };

	snprintf(name, sizeof(name), "racer-%d", r->i);
	us = make_us(name, "contested", "race");
	r->rc = sk_store_create(r->s, us, &out, &err);
	sk_userspace_free(us);
	sk_userspace_free(out);
	return NULL;
}

static size_t
count_all(sk_store *s)
{
	sk_userspace_list l;
	sk_error err = { 0 };
	size_t n;

	ck_assert_msg(sk_store_list(s, NULL, &l, &err) == 0, "list: %s", err.message);
	n = l.len;
	sk_userspace_list_dispose(&l);
	return n;
}

START_TEST(test_concurrent_user_id_threads)
{
	sk_store *s = open_store();
	pthread_t th[RACERS];
	struct racer r[RACERS];
	int wins = 0, conflicts = 0;

	for (int i = 0; i < RACERS; i++) {
		r[i] = (struct racer){ s, i, -100 };
		pthread_create(&th[i], NULL, race_create, &r[i]);
	}
	for (int i = 0; i < RACERS; i++) {
		pthread_join(th[i], NULL);
		wins += r[i].rc == 0;
		conflicts += r[i].rc == SK_ECONFLICT;
	}
	ck_assert_int_eq(wins, 1);
	ck_assert_int_eq(conflicts, RACERS - 1);
	ck_assert_uint_eq(count_all(s), 1);
	close_store(s);
}
END_TEST

/* Separate processes, each with its own client pool, race on one userID. */
START_TEST(test_concurrent_user_id_processes)
{
	sk_store *s = open_store();
	pid_t pids[RACERS];
	int wins = 0, conflicts = 0;

	for (int i = 0; i < RACERS; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			struct racer r = { open_db(sk_test_mongodb_uri(), dbname), i, -100 };
			race_create(&r);
			sk_store_close(r.s);
			_exit(r.rc == 0 ? 0 : r.rc == SK_ECONFLICT ? 1 : 2);
		}
	}
	for (int i = 0; i < RACERS; i++) {
		int st;
		ck_assert_int_eq(waitpid(pids[i], &st, 0), pids[i]);
		ck_assert(WIFEXITED(st));
		wins += WEXITSTATUS(st) == 0;
		conflicts += WEXITSTATUS(st) == 1;
	}
	ck_assert_int_eq(wins, 1);
	ck_assert_int_eq(conflicts, RACERS - 1);
	ck_assert_uint_eq(count_all(s), 1);
	close_store(s);
}
END_TEST

struct updater {
	sk_store *s;
	sk_userspace *base;
	int rc;
	int64_t rv;
};

static void *
race_update(void *arg)
{
	struct updater *u = arg;
	sk_userspace *out = NULL;
	sk_error err = { 0 };

	u->rc = sk_store_update(u->s, u->base, &out, &err);
	u->rv = out ? out->meta.resource_version : 0;
	sk_userspace_free(out);
	return NULL;
}

/* Writers that all read the same version race: exactly one wins, and every
 * write took its own resourceVersion. */
START_TEST(test_concurrent_cas_update)
{
	sk_store *s = open_store();
	sk_userspace *v1 = create(s, "alice", "alice", "a"), *got;
	pthread_t th[RACERS];
	struct updater u[RACERS];
	int wins = 0, conflicts = 0;
	char tmpl[32];

	for (int i = 0; i < RACERS; i++) {
		u[i] = (struct updater){ s, sk_userspace_dup(v1), -100, 0 };
		snprintf(tmpl, sizeof(tmpl), "t%d", i);
		set_template(u[i].base, tmpl);
		pthread_create(&th[i], NULL, race_update, &u[i]);
	}
	for (int i = 0; i < RACERS; i++)
		pthread_join(th[i], NULL);
	got = get(s, "alice");
	for (int i = 0; i < RACERS; i++) {
		wins += u[i].rc == 0;
		conflicts += u[i].rc == SK_ECONFLICT;
		if (u[i].rc == 0) {
			ck_assert_str_eq(got->spec.template_id, u[i].base->spec.template_id);
			ck_assert_int_eq(got->meta.resource_version, u[i].rv);
		}
		sk_userspace_free(u[i].base);
	}
	ck_assert_int_eq(wins, 1);
	ck_assert_int_eq(conflicts, RACERS - 1);
	ck_assert_int_eq(got->meta.generation, 2);
	sk_userspace_free(got);
	sk_userspace_free(v1);
	close_store(s);
}
END_TEST

static void *
create_distinct(void *arg)
{
	struct racer *r = arg;
	char name[32];
	sk_userspace *us, *out = NULL;
	sk_error err = { 0 };

	snprintf(name, sizeof(name), "user-%d", r->i);
	us = make_us(name, name, "x");
	r->rc = sk_store_create(r->s, us, &out, &err);
	r->i = out ? (int)out->meta.resource_version : -1;
	sk_userspace_free(us);
	sk_userspace_free(out);
	return NULL;
}

START_TEST(test_concurrent_resource_versions_distinct)
{
	sk_store *s = open_store();
	pthread_t th[RACERS];
	struct racer r[RACERS];

	for (int i = 0; i < RACERS; i++) {
		r[i] = (struct racer){ s, i, -100 };
		pthread_create(&th[i], NULL, create_distinct, &r[i]);
	}
	for (int i = 0; i < RACERS; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(r[i].rc, 0);
	}
	for (int i = 0; i < RACERS; i++) {
		for (int j = i + 1; j < RACERS; j++)
			ck_assert_int_ne(r[i].i, r[j].i);
	}
	ck_assert_uint_eq(count_all(s), RACERS);
	close_store(s);
}
END_TEST

START_TEST(test_cas_stale_writer_loses)
{
	sk_store *s = open_store();
	sk_userspace *created = create(s, "alice", "alice", "a");
	sk_userspace *a = get(s, "alice"), *b = get(s, "alice"), *out = NULL, *got;
	sk_error err = { 0 };
	char want[160];

	set_template(a, "winner");
	set_template(b, "loser");
	ck_assert_int_eq(sk_store_update(s, a, &out, &err), 0);
	ck_assert_int_gt(out->meta.resource_version, created->meta.resource_version);
	ck_assert_int_eq(sk_store_update(s, b, &got, &err), SK_ECONFLICT);
	ck_assert_ptr_null(got);
	snprintf(want, sizeof(want), "(expected resourceVersion %lld, found %lld)",
	        (long long)b->meta.resource_version, (long long)out->meta.resource_version);
	ck_assert_msg(strstr(err.message, "userspace \"alice\": the object has been modified") &&
	                strstr(err.message, want),
	        "message: %s", err.message);
	got = get(s, "alice");
	ck_assert_str_eq(got->spec.template_id, "winner");
	ck_assert_int_eq(got->meta.resource_version, out->meta.resource_version);
	/* Updating a missing object is not found, not a conflict. */
	sk_userspace_free(out);
	ck_assert_int_eq(sk_store_remove(s, "alice", &err), 0);
	ck_assert_int_eq(sk_store_update(s, got, &out, &err), SK_ENOTFOUND);
	sk_userspace_free(created);
	sk_userspace_free(a);
	sk_userspace_free(b);
	sk_userspace_free(got);
	close_store(s);
}
END_TEST

static sk_userspace *
update(sk_store *s, const sk_userspace *us)
{
	sk_userspace *out = NULL;
	sk_error err = { 0 };

	ck_assert_msg(sk_store_update(s, us, &out, &err) == 0, "update: %s", err.message);
	return out;
}

START_TEST(test_generation_rules)
{
	sk_store *s = open_store();
	sk_userspace *v1 = create(s, "alice", "alice", "a"), *v2, *v3, *v4, *v5, *v6, *same, *got;
	sk_userspace_status st = { 0 };
	sk_error err = { 0 };

	/* Label change: resourceVersion moves, generation stays. */
	sk_kvlist_set(&v1->meta.labels, "team", "b");
	v2 = update(s, v1);
	ck_assert_int_gt(v2->meta.resource_version, v1->meta.resource_version);
	ck_assert_int_eq(v2->meta.generation, 1);
	got = get(s, "alice");
	ck_assert_str_eq(sk_kvlist_get(&got->meta.labels, "team"), "b");
	ck_assert_int_eq(got->meta.resource_version, v2->meta.resource_version);
	sk_userspace_free(got);
	/* Spec change: generation bumps. */
	v2->spec.mode = SK_MODE_PAUSED;
	v3 = update(s, v2);
	ck_assert_int_eq(v3->meta.generation, 2);
	ck_assert_int_gt(v3->meta.resource_version, v2->meta.resource_version);
	/* Nothing changed: nothing written. */
	same = update(s, v3);
	ck_assert_int_eq(same->meta.resource_version, v3->meta.resource_version);
	ck_assert_int_eq(same->meta.generation, 2);
	sk_userspace_free(same);
	/* Status: resourceVersion moves, generation never. */
	st.phase = SK_PHASE_PAUSED;
	st.sandbox_id = "i-123";
	st.observed_generation = 2;
	ck_assert_int_eq(sk_store_write_status(s, v3, &st, &v4, &err), 0);
	ck_assert_int_eq(v4->meta.generation, 2);
	ck_assert_int_gt(v4->meta.resource_version, v3->meta.resource_version);
	v5 = get(s, "alice");
	ck_assert_int_eq(v5->status.phase, SK_PHASE_PAUSED);
	ck_assert_str_eq(v5->status.sandbox_id, "i-123");
	ck_assert_int_eq(v5->status.observed_generation, 2);
	ck_assert_int_eq(v5->spec.mode, SK_MODE_PAUSED);
	ck_assert_int_eq(v5->meta.resource_version, v4->meta.resource_version);
	/* The same status again writes nothing. */
	ck_assert_int_eq(sk_store_write_status(s, v4, &st, &same, &err), 0);
	ck_assert_int_eq(same->meta.resource_version, v4->meta.resource_version);
	sk_userspace_free(same);
	/* A stale status writer loses. */
	st.phase = SK_PHASE_RUNNING;
	ck_assert_int_eq(sk_store_write_status(s, v3, &st, &same, &err), SK_ECONFLICT);
	ck_assert_ptr_null(same);
	/* A spec update keeps the status. */
	set_template(v5, "gpu");
	v6 = update(s, v5);
	ck_assert_int_eq(v6->meta.generation, 3);
	got = get(s, "alice");
	ck_assert_int_eq(got->status.phase, SK_PHASE_PAUSED);
	ck_assert_str_eq(got->spec.template_id, "gpu");
	sk_userspace_free(got);
	sk_userspace_free(v1);
	sk_userspace_free(v2);
	sk_userspace_free(v3);
	sk_userspace_free(v4);
	sk_userspace_free(v5);
	sk_userspace_free(v6);
	close_store(s);
}
END_TEST

static void
insert_claim(const char *name, int64_t rv, int64_t at_ms)
{
	mongoc_client_t *client = mongoc_client_new(sk_test_mongodb_uri());
	mongoc_collection_t *coll = mongoc_client_get_collection(client, dbname, "claims");
	char id[128];
	bson_t *doc;
	bson_error_t berr;

	snprintf(id, sizeof(id), "%s/%lld", name, (long long)rv);
	doc = BCON_NEW("_id", BCON_UTF8(id), "at", BCON_DATE_TIME(at_ms));
	ck_assert_msg(
	        mongoc_collection_insert_one(coll, doc, NULL, NULL, &berr), "%s", berr.message);
	bson_destroy(doc);
	mongoc_collection_destroy(coll);
	mongoc_client_destroy(client);
}

/* A write in progress on the same version blocks a second writer; a claim
 * left behind by a writer that died expires instead of wedging the object. */
START_TEST(test_claims)
{
	sk_store *s = open_store();
	sk_userspace *v1 = create(s, "alice", "alice", "a"), *v2 = create(s, "bob", "bob", "a");
	sk_userspace *out = NULL;
	sk_error err = { 0 };

	insert_claim("alice", v1->meta.resource_version, sk_now_ms());
	set_template(v1, "x");
	ck_assert_int_eq(sk_store_update(s, v1, &out, &err), SK_ECONFLICT);
	ck_assert_msg(strstr(err.message, "another write") != NULL, "message: %s", err.message);
	insert_claim("bob", v2->meta.resource_version, sk_now_ms() - 120 * 1000);
	set_template(v2, "y");
	out = update(s, v2);
	ck_assert_str_eq(out->spec.template_id, "y");
	sk_userspace_free(out);
	sk_userspace_free(v1);
	sk_userspace_free(v2);
	close_store(s);
}
END_TEST

/* A lease's write claim left by a replica that died in a renew is given up
 * after 10 s (not the 30 s of a UserSpace's), so its shard is not wedged for
 * longer than the lease; a younger one still blocks. */
START_TEST(test_lease_claims)
{
	sk_store *s = open_store();
	sk_userspace *v1 = create(s, "alice", "alice", "a"), *out = NULL;
	sk_lease l = { 0 };
	sk_error err = { 0 };

	ck_assert_int_eq(sk_store_lease_acquire(s, "shard-00", "a", 15000, &l, &err), 0);
	insert_claim("lease/shard-00", l.version, sk_now_ms() - 2000);
	ck_assert_int_eq(sk_store_lease_renew(s, "shard-00", "a", NULL, &err), SK_ECONFLICT);
	ck_assert_msg(strstr(err.message, "another write") != NULL, "message: %s", err.message);
	sk_lease_dispose(&l);
	ck_assert_int_eq(sk_store_lease_acquire(s, "shard-01", "a", 15000, &l, &err), 0);
	insert_claim("lease/shard-01", l.version, sk_now_ms() - 15000);
	ck_assert_msg(sk_store_lease_renew(s, "shard-01", "a", NULL, &err) == 0, "%s", err.message);
	/* a UserSpace's claim of the same age still holds */
	insert_claim("alice", v1->meta.resource_version, sk_now_ms() - 15000);
	set_template(v1, "x");
	ck_assert_int_eq(sk_store_update(s, v1, &out, &err), SK_ECONFLICT);
	sk_lease_dispose(&l);
	sk_userspace_free(v1);
	close_store(s);
}
END_TEST

/* The server's clock (hello's localTime, FerretDB 1.24 answers it): the
 * test's FerretDB runs on this host, so the reading is within a second and
 * writes pass the guard; the memory backend has no clock to read. */
START_TEST(test_clock_reading)
{
	sk_store *s = open_store(), *m = NULL;
	sk_clock_reading r;
	sk_error err = { 0 };

	ck_assert_msg(sk_store_clock_check(s, &r, &err) == 0, "%s", err.message);
	ck_assert(r.measured);
	ck_assert_int_ge(r.rtt_ms, 0);
	ck_assert_msg(llabs(r.skew_ms) < 1000, "skew %lld ms on one host", (long long)r.skew_ms);
	ck_assert_int_eq(sk_store_clock_verdict(&r, 0, &err), 0);
	ck_assert_int_eq(sk_store_open_memory(&m), 0);
	ck_assert_int_eq(sk_store_clock_check(m, &r, &err), 0);
	ck_assert(!r.measured);
	sk_store_close(m);
	close_store(s);
}
END_TEST

/* The writes of a pool of one connection (the controller's is 4, with more
 * workers): each renews the clock reading on the connection it holds, the
 * first write (no reading yet) and a status write after the reading aged.
 * Taking a second connection for the reading waited forever once every
 * connection was held by a writer doing the same (a stop's aborted creates,
 * all written at once after the grace). In a thread, bounded. */
typedef struct pool_writes {
	sk_store *s;
	int rc;
	char msg[SK_ERROR_MSG_MAX];
	bool done;
	pthread_mutex_t mu;
} pool_writes;

static void *
pool_writes_main(void *arg)
{
	pool_writes *w = arg;
	sk_userspace *in = make_us("alice", "alice", "a"), *v1 = NULL, *v2 = NULL;
	sk_userspace_status st = { 0 };
	sk_error err = { 0 };
	int64_t aged = 0;

	w->rc = sk_store_create(w->s, in, &v1, &err);
	if (w->rc == 0) {
		aged = sk_monotonic_ms() + SK_STORE_CLOCK_RECHECK_MS + 100;
		while (sk_monotonic_ms() < aged) /* the reading ages past its recheck */
			usleep(50 * 1000);
		st.phase = SK_PHASE_PAUSED;
		w->rc = sk_store_write_status(w->s, v1, &st, &v2, &err);
	}
	pthread_mutex_lock(&w->mu);
	snprintf(w->msg, sizeof(w->msg), "%s", err.message);
	w->done = true;
	pthread_mutex_unlock(&w->mu);
	sk_userspace_free(in);
	sk_userspace_free(v1);
	sk_userspace_free(v2);
	return NULL;
}

START_TEST(test_clock_renewed_on_held_connection)
{
	const char *base = sk_test_mongodb_uri();
	char uri[512];
	pool_writes w = { 0 };
	pthread_t th;
	bool done = false;
	int64_t deadline;

	snprintf(uri, sizeof(uri), "%s%smaxPoolSize=1", base,
	        strchr(base, '?')                       ? "&"
	                : base[strlen(base) - 1] == '/' ? "?"
	                                                : "/?");
	snprintf(dbname, sizeof(dbname), "%s", sk_test_unique_db());
	w.s = open_db(uri, dbname);
	pthread_mutex_init(&w.mu, NULL);
	ck_assert_int_eq(pthread_create(&th, NULL, pool_writes_main, &w), 0);
	deadline = sk_monotonic_ms() + SK_STORE_CLOCK_RECHECK_MS + 30000;
	while (!done && sk_monotonic_ms() < deadline) {
		usleep(50 * 1000);
		pthread_mutex_lock(&w.mu);
		done = w.done;
		pthread_mutex_unlock(&w.mu);
	}
	/* stuck: the test process exits here and takes the thread with it */
	ck_assert_msg(done, "a write on a pool of one connection did not return in 30 s");
	pthread_join(th, NULL);
	ck_assert_msg(w.rc == 0, "write: %s", w.msg);
	pthread_mutex_destroy(&w.mu);
	close_store(w.s);
}
END_TEST

START_TEST(test_list_selector)
{
	sk_store *s = open_store();
	sk_userspace *c = create(s, "carol", "carol", "research");
	sk_userspace *a = create(s, "alice", "alice", "research");
	sk_userspace *b = create(s, "bob", "bob", "infra");
	sk_selector *sel = NULL;
	sk_userspace_list l;
	sk_error err = { 0 };

	ck_assert_int_eq(sk_selector_parse("team=research", &sel, &err), 0);
	ck_assert_int_eq(sk_store_list(s, sel, &l, &err), 0);
	ck_assert_uint_eq(l.len, 2);
	ck_assert_str_eq(l.items[0]->meta.name, "alice");
	ck_assert_str_eq(l.items[1]->meta.name, "carol");
	ck_assert_int_ge(l.resource_version, b->meta.resource_version);
	sk_userspace_list_dispose(&l);
	sk_selector_free(sel);
	ck_assert_int_eq(
	        sk_selector_parse("app.kubernetes.io/name=spaces,team!=research", &sel, &err), 0);
	ck_assert_int_eq(sk_store_list(s, sel, &l, &err), 0);
	ck_assert_uint_eq(l.len, 1);
	ck_assert_str_eq(l.items[0]->meta.name, "bob");
	sk_userspace_list_dispose(&l);
	ck_assert_int_eq(sk_store_list(s, NULL, &l, &err), 0);
	ck_assert_uint_eq(l.len, 3);
	ck_assert_str_eq(l.items[0]->meta.name, "alice");
	ck_assert_str_eq(l.items[2]->meta.name, "carol");
	ck_assert_int_eq(l.resource_version, b->meta.resource_version);
	sk_userspace_list_dispose(&l);
	sk_selector_free(sel);
	sk_userspace_free(a);
	sk_userspace_free(b);
	sk_userspace_free(c);
	close_store(s);
}
END_TEST

START_TEST(test_list_since)
{
	sk_store *s = open_store();
	sk_userspace *c = create(s, "carol", "carol", "x");
	sk_userspace *a = create(s, "alice", "alice", "x");
	sk_userspace *b = create(s, "bob", "bob", "x"), *c2;
	sk_userspace_list l;
	sk_error err = { 0 };

	ck_assert_int_eq(sk_store_list_since(s, c->meta.resource_version, &l, &err), 0);
	ck_assert_uint_eq(l.len, 2);
	ck_assert_str_eq(l.items[0]->meta.name, "alice"); /* resourceVersion order */
	ck_assert_str_eq(l.items[1]->meta.name, "bob");
	ck_assert_int_eq(l.resource_version, b->meta.resource_version);
	sk_userspace_list_dispose(&l);
	set_template(c, "other");
	c2 = update(s, c);
	ck_assert_int_eq(sk_store_list_since(s, b->meta.resource_version, &l, &err), 0);
	ck_assert_uint_eq(l.len, 1);
	ck_assert_str_eq(l.items[0]->meta.name, "carol");
	ck_assert_int_eq(l.resource_version, c2->meta.resource_version);
	sk_userspace_list_dispose(&l);
	ck_assert_int_eq(sk_store_list_since(s, c2->meta.resource_version, &l, &err), 0);
	ck_assert_uint_eq(l.len, 0);
	ck_assert_int_eq(l.resource_version, c2->meta.resource_version);
	sk_userspace_list_dispose(&l);
	sk_userspace_free(a);
	sk_userspace_free(b);
	sk_userspace_free(c);
	sk_userspace_free(c2);
	close_store(s);
}
END_TEST

START_TEST(test_finalizer_deletion)
{
	sk_store *s = open_store();
	sk_userspace *v1 = create(s, "alice", "alice", "x"), *v2, *v3;
	sk_error err = { 0 };

	ck_assert_int_eq(sk_store_mark_deleted(s, "alice", &err), 0);
	v2 = get(s, "alice");
	ck_assert_int_gt(v2->meta.deletion_ms, 0);
	ck_assert_int_gt(v2->meta.resource_version, v1->meta.resource_version);
	ck_assert(sk_userspace_has_finalizer(v2, SK_FINALIZER));
	/* Idempotent: the first deletionTimestamp stays. */
	usleep(20 * 1000);
	ck_assert_int_eq(sk_store_mark_deleted(s, "alice", &err), 0);
	v3 = get(s, "alice");
	ck_assert_int_eq(v3->meta.deletion_ms, v2->meta.deletion_ms);
	ck_assert_int_eq(v3->meta.resource_version, v2->meta.resource_version);
	/* Stale finalizer removal loses; the current one removes the object. */
	ck_assert_int_eq(sk_store_remove_finalizer(
	                         s, "alice", v1->meta.resource_version, SK_FINALIZER, &err),
	        SK_ECONFLICT);
	ck_assert_int_eq(get_code(s, "alice"), 0);
	ck_assert_int_eq(sk_store_remove_finalizer(
	                         s, "alice", v3->meta.resource_version, SK_FINALIZER, &err),
	        0);
	ck_assert_int_eq(get_code(s, "alice"), SK_ENOTFOUND);
	ck_assert_int_eq(sk_store_mark_deleted(s, "alice", &err), SK_ENOTFOUND);
	sk_userspace_free(v1);
	sk_userspace_free(v2);
	sk_userspace_free(v3);
	close_store(s);
}
END_TEST

START_TEST(test_delete_without_finalizers)
{
	sk_store *s = open_store();
	sk_userspace *v1 = create(s, "alice", "alice", "x"), *v2;
	sk_error err = { 0 };

	/* Without deletion asked, dropping the finalizer keeps the object. */
	ck_assert_int_eq(sk_store_remove_finalizer(
	                         s, "alice", v1->meta.resource_version, SK_FINALIZER, &err),
	        0);
	v2 = get(s, "alice");
	ck_assert_uint_eq(v2->meta.n_finalizers, 0);
	ck_assert_int_gt(v2->meta.resource_version, v1->meta.resource_version);
	ck_assert_int_eq(sk_store_mark_deleted(s, "alice", &err), 0);
	ck_assert_int_eq(get_code(s, "alice"), SK_ENOTFOUND);
	sk_userspace_free(v1);
	sk_userspace_free(v2);
	close_store(s);
}
END_TEST

START_TEST(test_remove)
{
	sk_store *s = open_store();
	sk_userspace *v1 = create(s, "alice", "alice", "x"), *v2;
	sk_error err = { 0 };

	ck_assert_int_eq(sk_store_mark_deleted(s, "alice", &err), 0);
	ck_assert_int_eq(sk_store_remove(s, "alice", &err), 0); /* despite the finalizer */
	ck_assert_int_eq(get_code(s, "alice"), SK_ENOTFOUND);
	ck_assert_int_eq(sk_store_remove(s, "alice", &err), SK_ENOTFOUND);
	/* The name and the userID are free again. */
	v2 = create(s, "alice", "alice", "x");
	ck_assert_str_ne(v2->meta.uid, v1->meta.uid);
	ck_assert_int_gt(v2->meta.resource_version, v1->meta.resource_version);
	sk_userspace_free(v1);
	sk_userspace_free(v2);
	close_store(s);
}
END_TEST

START_TEST(test_events_aggregate)
{
	sk_store *s = open_store();
	sk_event_list l;
	sk_error err = { 0 };

	ck_assert_int_eq(
	        sk_store_event(s, "alice", NULL, "Normal", "Created", "created i-1", &err), 0);
	ck_assert_int_eq(
	        sk_store_event(s, "bob", NULL, "Normal", "Created", "created i-2", &err), 0);
	usleep(20 * 1000);
	ck_assert_int_eq(
	        sk_store_event(s, "alice", NULL, "Normal", "Created", "created i-3", &err), 0);
	usleep(20 * 1000);
	ck_assert_int_eq(
	        sk_store_event(s, "alice", NULL, "Warning", "DataPlaneUnreachable", "504", &err),
	        0);
	ck_assert_int_eq(sk_store_events(s, "alice", NULL, 0, &l, &err), 0);
	ck_assert_uint_eq(l.len, 2);
	ck_assert_str_eq(l.items[0].reason, "Created"); /* oldest last first */
	ck_assert_int_eq(l.items[0].count, 2);
	ck_assert_str_eq(l.items[0].message, "created i-3");
	ck_assert_str_eq(l.items[0].object, "alice");
	ck_assert_str_eq(l.items[0].type, "Normal");
	ck_assert_str_eq(l.items[0].source, "spacekeeper");
	ck_assert_int_lt(l.items[0].first_ms, l.items[0].last_ms);
	ck_assert_str_eq(l.items[1].reason, "DataPlaneUnreachable");
	ck_assert_str_eq(l.items[1].type, "Warning");
	ck_assert_int_eq(l.items[1].count, 1);
	ck_assert_int_eq(l.items[1].first_ms, l.items[1].last_ms);
	sk_event_list_dispose(&l);
	ck_assert_int_eq(sk_store_events(s, NULL, NULL, 0, &l, &err), 0);
	ck_assert_uint_eq(l.len, 3);
	sk_event_list_dispose(&l);
	ck_assert_int_eq(sk_store_events(s, "alice", NULL, 1, &l, &err), 0);
	ck_assert_uint_eq(l.len, 1);
	ck_assert_str_eq(l.items[0].reason, "DataPlaneUnreachable"); /* the newest kept */
	sk_event_list_dispose(&l);
	ck_assert_int_eq(sk_store_events(s, "nobody", NULL, 0, &l, &err), 0);
	ck_assert_uint_eq(l.len, 0);
	sk_event_list_dispose(&l);
	close_store(s);
}
END_TEST

START_TEST(test_indexes_idempotent)
{
	sk_store *s = open_store();
	sk_store *again = open_db(sk_test_mongodb_uri(), dbname);
	sk_userspace *a = create(s, "alice", "alice", "x"), *out = NULL, *dup;
	sk_error err = { 0 };

	/* The second handle sees the same unique index. */
	dup = make_us("alice2", "alice", "x");
	ck_assert_int_eq(sk_store_create(again, dup, &out, &err), SK_ECONFLICT);
	ck_assert_int_eq(sk_store_ping(again, &err), 0);
	sk_store_close(again);
	sk_userspace_free(a);
	sk_userspace_free(dup);
	close_store(s);
}
END_TEST

START_TEST(test_unreachable_server)
{
	char uri[128];
	sk_store_options o = SK_STORE_OPTIONS_INIT;
	sk_store *s = NULL;
	sk_error err = { 0 };
	int port = sk_test_free_port();
	int64_t t0, elapsed;

	snprintf(uri, sizeof(uri), "mongodb://spacekeeper:hunter2@127.0.0.1:%d/?authSource=admin",
	        port);
	o.uri = uri;
	t0 = sk_monotonic_ms();
	ck_assert_int_eq(sk_store_open(&s, &o, &err), SK_EUNAVAILABLE);
	elapsed = sk_monotonic_ms() - t0;
	ck_assert_ptr_null(s);
	ck_assert_msg(elapsed < 5000, "took %lld ms", (long long)elapsed);
	ck_assert_msg(strstr(err.message, "cannot reach MongoDB at mongodb://spacekeeper:") != NULL,
	        "message: %s", err.message);
	ck_assert_msg(strstr(err.message, "hunter2") == NULL, "password leaked: %s", err.message);
	ck_assert(sk_error_is_transient(err.code));
}
END_TEST

START_TEST(test_bad_uri)
{
	sk_store_options o = SK_STORE_OPTIONS_INIT;
	sk_store *s = NULL;
	sk_error err = { 0 };

	o.uri = "http://127.0.0.1:27017";
	ck_assert_int_eq(sk_store_open(&s, &o, &err), SK_EINVALID);
	ck_assert_ptr_null(s);
}
END_TEST

/* A server that goes away after open: operations fail as unavailable, fast. */
START_TEST(test_server_goes_away)
{
	char uri[128];
	pid_t pid = sk_test_ferretdb_start(uri, sizeof(uri));
	sk_store_options o = SK_STORE_OPTIONS_INIT;
	sk_store *s = NULL;
	sk_userspace *us = make_us("alice", "alice", "x"), *out = NULL;
	sk_error err = { 0 };
	int64_t t0, elapsed;
	int rc = SK_ERROR;

	o.uri = uri;
	o.database = "gone";
	for (int i = 0; i < 100 && rc != 0; i++) {
		rc = sk_store_open(&s, &o, &err);
		if (rc != 0)
			usleep(100 * 1000);
	}
	ck_assert_msg(rc == 0, "open: %s", err.message);
	ck_assert_int_eq(sk_store_create(s, us, &out, &err), 0);
	sk_userspace_free(out);
	sk_test_stop(pid, true);
	t0 = sk_monotonic_ms();
	ck_assert_int_eq(sk_store_get(s, "alice", &out, &err), SK_EUNAVAILABLE);
	ck_assert_msg(strstr(err.message, uri) != NULL, "message: %s", err.message);
	ck_assert_int_eq(sk_store_list(s, NULL, &(sk_userspace_list){ 0 }, &err), SK_EUNAVAILABLE);
	ck_assert_int_eq(
	        sk_store_event(s, "alice", NULL, "Normal", "X", "y", &err), SK_EUNAVAILABLE);
	elapsed = sk_monotonic_ms() - t0;
	ck_assert_msg(elapsed < 15000, "took %lld ms", (long long)elapsed);
	sk_userspace_free(us);
	sk_store_close(s);
}
END_TEST

/* A database that does not answer is told by the error's domain, not its
 * text: the controller counts store failures by it. */
START_TEST(test_unreachable_domain)
{
	char uri[128];
	sk_store_options o = SK_STORE_OPTIONS_INIT;
	sk_store *s = NULL;
	sk_userspace *out = NULL;
	sk_error err = { 0 };

	snprintf(uri, sizeof(uri), "mongodb://127.0.0.1:%d/?serverSelectionTimeoutMS=500",
	        sk_test_free_port());
	o.uri = uri;
	o.lazy = true;
	ck_assert_int_eq(sk_store_open(&s, &o, &err), 0);
	ck_assert_int_eq(err.domain, SK_EDOMAIN_NONE);
	ck_assert_int_eq(sk_store_get(s, "alice", &out, &err), SK_EUNAVAILABLE);
	ck_assert_int_eq(err.domain, SK_EDOMAIN_DATABASE);
	sk_error_clear(&err);
	ck_assert_int_eq(sk_store_ping(s, &err), SK_EUNAVAILABLE);
	ck_assert_int_eq(err.domain, SK_EDOMAIN_DATABASE);
	/* a failure that is not the database's carries no domain */
	ck_assert_int_eq(sk_error_set(&err, SK_EUNAVAILABLE, "provider down"), SK_EUNAVAILABLE);
	ck_assert_int_eq(err.domain, SK_EDOMAIN_NONE);
	sk_store_close(s);
}
END_TEST

Suite *
sk_suite_store(void)
{
	Suite *s = suite_create("store");
	TCase *tc = tcase_create("store");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_create_get_roundtrip);
	tcase_add_test(tc, test_labels_stored_as_pairs);
	tcase_add_test(tc, test_create_duplicate_name);
	tcase_add_test(tc, test_unique_user_id);
	tcase_add_test(tc, test_concurrent_user_id_threads);
	tcase_add_test(tc, test_concurrent_user_id_processes);
	tcase_add_test(tc, test_cas_stale_writer_loses);
	tcase_add_test(tc, test_concurrent_cas_update);
	tcase_add_test(tc, test_concurrent_resource_versions_distinct);
	tcase_add_test(tc, test_generation_rules);
	tcase_add_test(tc, test_claims);
	tcase_add_test(tc, test_list_selector);
	tcase_add_test(tc, test_list_since);
	tcase_add_test(tc, test_finalizer_deletion);
	tcase_add_test(tc, test_delete_without_finalizers);
	tcase_add_test(tc, test_remove);
	tcase_add_test(tc, test_events_aggregate);
	tcase_add_test(tc, test_indexes_idempotent);
	tcase_add_test(tc, test_unreachable_server);
	tcase_add_test(tc, test_unreachable_domain);
	tcase_add_test(tc, test_bad_uri);
	tcase_add_test(tc, test_lease_claims);
	tcase_add_test(tc, test_clock_reading);
	tcase_add_test(tc, test_clock_renewed_on_held_connection);
	tcase_add_test(tc, test_server_goes_away);
	suite_add_tcase(s, tc);
	return s;
}
