/*
 * The store's contract, run once per backend: the in-memory backend (suite
 * store_contract_memory, no server) and the MongoDB-wire backend against a
 * real FerretDB (suite store_contract_mongo). Every test gets a fresh store
 * from open_backend(_i), _i being the backend of the suite (a loop test
 * over one index), so the two backends run the same table of tests:
 * compare-and-swap conflicts, generation and resourceVersion rules, userID
 * uniqueness, finalizers and deletion, list-since, selectors, events
 * aggregation, leases, apply records and shared provider lists.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../testutil.h"
#include "store/store.h"

Suite *sk_suite_store_contract_memory(void);
Suite *sk_suite_store_contract_mongo(void);

enum { BACKEND_MEMORY, BACKEND_MONGO };

static sk_store *
open_backend(int backend)
{
	sk_store_options o = SK_STORE_OPTIONS_INIT;
	sk_store *s = NULL;
	sk_error err = { 0 };

	if (backend == BACKEND_MEMORY) {
		o.uri = "memory://";
	} else {
		o.uri = sk_test_mongodb_uri();
		o.database = sk_test_unique_db();
	}
	ck_assert_msg(sk_store_open(&s, &o, &err) == 0, "open: %s", err.message);
	ck_assert_str_eq(
	        sk_store_backend_name(s), backend == BACKEND_MEMORY ? "memory" : "mongodb");
	return s;
}

static void
close_backend(sk_store *s)
{
	sk_error err = { 0 };

	ck_assert_msg(sk_store_drop(s, &err) == 0, "drop: %s", err.message);
	sk_store_close(s);
}

/* A UserSpace as a user declares it (no store-owned fields). */
static sk_userspace *
declared(const char *name, const char *user_id, const char *team)
{
	sk_userspace *us = sk_calloc(1, sizeof(*us));

	us->meta.name = sk_strdup(name);
	us->spec.user_id = sk_strdup(user_id);
	us->spec.template_id = sk_strdup("base");
	us->spec.mode = SK_MODE_RUNNING;
	if (team != NULL)
		sk_kvlist_set(&us->meta.labels, "team", team);
	return us;
}

static sk_userspace *
create(sk_store *s, const char *name, const char *user_id, const char *team)
{
	sk_userspace *in = declared(name, user_id, team), *out = NULL;
	sk_error err = { 0 };

	ck_assert_msg(sk_store_create(s, in, &out, &err) == 0, "create %s: %s", name, err.message);
	sk_userspace_free(in);
	return out;
}

static sk_userspace *
get(sk_store *s, const char *name)
{
	sk_userspace *out = NULL;
	sk_error err = { 0 };

	ck_assert_msg(sk_store_get(s, name, &out, &err) == 0, "get %s: %s", name, err.message);
	return out;
}

static void
set_template(sk_userspace *us, const char *t)
{
	free(us->spec.template_id);
	us->spec.template_id = sk_strdup(t);
}

/* Writes phase (and nothing else new) over `base`; returns the result. */
static int
write_phase(sk_store *s, const sk_userspace *base, sk_phase phase, sk_userspace **out)
{
	sk_userspace_status st;
	sk_error err = { 0 };
	int rc;

	memset(&st, 0, sizeof(st));
	sk_userspace_status_copy(&st, &base->status);
	st.phase = phase;
	rc = sk_store_write_status(s, base, &st, out, &err);
	sk_userspace_status_dispose(&st);
	return rc;
}

START_TEST(test_create_sets_store_fields)
{
	sk_store *s = open_backend(_i);
	sk_userspace *in = declared("alice", "u-alice", "x"), *a = NULL, *again = NULL, *got;
	sk_error err = { 0 };

	in->meta.generation = 7;
	in->status.phase = SK_PHASE_RUNNING; /* status is not written by create */
	ck_assert_msg(sk_store_create(s, in, &a, &err) == 0, "%s", err.message);
	ck_assert_int_eq(a->meta.generation, 1);
	ck_assert_int_gt(a->meta.resource_version, 0);
	ck_assert_ptr_nonnull(a->meta.uid);
	ck_assert_int_gt(a->meta.creation_ms, 0);
	ck_assert_uint_eq(a->meta.n_finalizers, 1);
	ck_assert_str_eq(a->meta.finalizers[0], SK_FINALIZER);
	ck_assert_int_eq(a->status.phase, SK_PHASE_NONE);
	got = get(s, "alice");
	ck_assert_str_eq(got->meta.uid, a->meta.uid);
	ck_assert_int_eq(got->meta.resource_version, a->meta.resource_version);
	ck_assert_str_eq(sk_kvlist_get(&got->meta.labels, "team"), "x");
	ck_assert_str_eq(got->spec.user_id, "u-alice");
	ck_assert_int_eq(got->status.phase, SK_PHASE_NONE);
	ck_assert_int_eq(sk_store_create(s, in, &again, &err), SK_EEXISTS);
	ck_assert_ptr_null(again);
	ck_assert_int_eq(sk_store_get(s, "nobody", &again, &err), SK_ENOTFOUND);
	ck_assert_ptr_nonnull(strstr(err.message, "nobody"));
	sk_userspace_free(got);
	sk_userspace_free(a);
	sk_userspace_free(in);
	close_backend(s);
}
END_TEST

START_TEST(test_invalid_input)
{
	sk_store *s = open_backend(_i);
	sk_userspace *in = declared("Not_A_Name", "u", NULL), *out = NULL;
	sk_error err = { 0 };

	ck_assert_int_eq(sk_store_create(s, in, &out, &err), SK_EINVALID);
	ck_assert_ptr_nonnull(strstr(err.message, "metadata.name"));
	free(in->meta.name);
	in->meta.name = sk_strdup("ok");
	free(in->spec.user_id);
	in->spec.user_id = sk_strdup("bad id!");
	ck_assert_int_eq(sk_store_create(s, in, &out, &err), SK_EINVALID);
	ck_assert_ptr_nonnull(strstr(err.message, "spec.userID"));
	ck_assert_int_eq(sk_store_get(s, "", &out, &err), SK_EINVALID);
	ck_assert_int_eq(sk_store_remove(s, NULL, &err), SK_EINVALID);
	sk_userspace_free(in);
	close_backend(s);
}
END_TEST

START_TEST(test_user_id_unique)
{
	sk_store *s = open_backend(_i);
	sk_userspace *a = create(s, "alice", "shared", NULL), *b, *in, *out = NULL;
	sk_error err = { 0 };

	in = declared("bob", "shared", NULL);
	ck_assert_int_eq(sk_store_create(s, in, &out, &err), SK_ECONFLICT);
	ck_assert_msg(strstr(err.message, "\"alice\"") != NULL, "message: %s", err.message);
	ck_assert_int_eq(sk_store_get(s, "bob", &out, &err), SK_ENOTFOUND);
	sk_userspace_free(in);
	/* an update onto a taken userID loses too, and names the holder */
	b = create(s, "bob", "bob", NULL);
	free(b->spec.user_id);
	b->spec.user_id = sk_strdup("shared");
	ck_assert_int_eq(sk_store_update(s, b, &out, &err), SK_ECONFLICT);
	ck_assert_msg(strstr(err.message, "\"alice\"") != NULL, "message: %s", err.message);
	sk_userspace_free(b);
	b = get(s, "bob");
	ck_assert_str_eq(b->spec.user_id, "bob");
	/* once alice is gone the userID is free */
	ck_assert_int_eq(sk_store_remove(s, "alice", &err), 0);
	free(b->spec.user_id);
	b->spec.user_id = sk_strdup("shared");
	ck_assert_msg(sk_store_update(s, b, &out, &err) == 0, "%s", err.message);
	ck_assert_str_eq(out->spec.user_id, "shared");
	sk_userspace_free(out);
	sk_userspace_free(b);
	sk_userspace_free(a);
	close_backend(s);
}
END_TEST

START_TEST(test_cas_stale_writer_loses)
{
	sk_store *s = open_backend(_i);
	sk_userspace *v1 = create(s, "alice", "alice", NULL), *v2 = NULL, *out = NULL, *got;
	sk_error err = { 0 };

	set_template(v1, "gpu");
	ck_assert_msg(sk_store_update(s, v1, &v2, &err) == 0, "%s", err.message);
	ck_assert_int_gt(v2->meta.resource_version, v1->meta.resource_version);
	set_template(v1, "cpu"); /* still at the version read before */
	ck_assert_int_eq(sk_store_update(s, v1, &out, &err), SK_ECONFLICT);
	ck_assert_ptr_null(out);
	ck_assert_ptr_nonnull(strstr(err.message, "modified"));
	v1->meta.resource_version = 0; /* 0 never matches */
	ck_assert_int_eq(sk_store_update(s, v1, &out, &err), SK_ECONFLICT);
	ck_assert_int_eq(write_phase(s, v1, SK_PHASE_ERROR, &out), SK_ECONFLICT);
	got = get(s, "alice");
	ck_assert_str_eq(got->spec.template_id, "gpu");
	ck_assert_int_eq(got->meta.resource_version, v2->meta.resource_version);
	ck_assert_int_eq(got->status.phase, SK_PHASE_NONE);
	free(v1->meta.name);
	v1->meta.name = sk_strdup("gone");
	v1->meta.resource_version = 5;
	ck_assert_int_eq(sk_store_update(s, v1, &out, &err), SK_ENOTFOUND);
	sk_userspace_free(got);
	sk_userspace_free(v1);
	sk_userspace_free(v2);
	close_backend(s);
}
END_TEST

typedef struct racer {
	sk_store *s;
	const sk_userspace *base;
	int index;
	int rc;
} racer;

static void *
race_update(void *arg)
{
	racer *r = arg;
	sk_userspace *mine = sk_userspace_dup(r->base), *out = NULL;
	char t[32];
	sk_error err = { 0 };

	snprintf(t, sizeof(t), "t%d", r->index);
	set_template(mine, t);
	r->rc = sk_store_update(r->s, mine, &out, &err);
	sk_userspace_free(out);
	sk_userspace_free(mine);
	return NULL;
}

/* Writers racing from one version: exactly one wins, the others conflict. */
START_TEST(test_cas_one_winner)
{
	sk_store *s = open_backend(_i);
	sk_userspace *v1 = create(s, "alice", "alice", NULL);
	racer r[6];
	pthread_t th[6];
	int won = 0;

	for (int i = 0; i < 6; i++) {
		r[i] = (racer){ s, v1, i, -1 };
		pthread_create(&th[i], NULL, race_update, &r[i]);
	}
	for (int i = 0; i < 6; i++) {
		pthread_join(th[i], NULL);
		ck_assert_msg(r[i].rc == 0 || r[i].rc == SK_ECONFLICT, "rc %d", r[i].rc);
		won += r[i].rc == 0;
	}
	ck_assert_int_eq(won, 1);
	sk_userspace_free(v1);
	close_backend(s);
}
END_TEST

START_TEST(test_generation_rules)
{
	sk_store *s = open_backend(_i);
	sk_userspace *v1 = create(s, "alice", "alice", "x"), *v2 = NULL, *v3 = NULL, *v4 = NULL;
	sk_userspace *same = NULL, *v5 = NULL;
	sk_error err = { 0 };

	/* labels only: new resourceVersion, same generation */
	sk_kvlist_set(&v1->meta.labels, "team", "y");
	ck_assert_msg(sk_store_update(s, v1, &v2, &err) == 0, "%s", err.message);
	ck_assert_int_eq(v2->meta.generation, 1);
	ck_assert_int_gt(v2->meta.resource_version, v1->meta.resource_version);
	/* the spec: generation bumps */
	set_template(v2, "gpu");
	ck_assert_msg(sk_store_update(s, v2, &v3, &err) == 0, "%s", err.message);
	ck_assert_int_eq(v3->meta.generation, 2);
	ck_assert_int_gt(v3->meta.resource_version, v2->meta.resource_version);
	/* nothing changed: nothing written */
	ck_assert_msg(sk_store_update(s, v3, &same, &err) == 0, "%s", err.message);
	ck_assert_int_eq(same->meta.resource_version, v3->meta.resource_version);
	sk_userspace_free(same);
	/* status: resourceVersion bumps, generation stays, spec untouched */
	ck_assert_int_eq(write_phase(s, v3, SK_PHASE_RUNNING, &v4), 0);
	ck_assert_int_eq(v4->meta.generation, 2);
	ck_assert_int_gt(v4->meta.resource_version, v3->meta.resource_version);
	ck_assert_str_eq(v4->spec.template_id, "gpu");
	ck_assert_int_eq(v4->status.phase, SK_PHASE_RUNNING);
	/* the same status again writes nothing */
	ck_assert_int_eq(write_phase(s, v4, SK_PHASE_RUNNING, &same), 0);
	ck_assert_int_eq(same->meta.resource_version, v4->meta.resource_version);
	sk_userspace_free(same);
	/* an update keeps the status */
	v4->spec.cpu_count = 4;
	ck_assert_msg(sk_store_update(s, v4, &v5, &err) == 0, "%s", err.message);
	ck_assert_int_eq(v5->meta.generation, 3);
	ck_assert_int_eq(v5->status.phase, SK_PHASE_RUNNING);
	same = get(s, "alice");
	ck_assert_int_eq(same->status.phase, SK_PHASE_RUNNING);
	ck_assert_int_eq(same->spec.cpu_count, 4);
	ck_assert_str_eq(sk_kvlist_get(&same->meta.labels, "team"), "y");
	sk_userspace_free(same);
	sk_userspace_free(v1);
	sk_userspace_free(v2);
	sk_userspace_free(v3);
	sk_userspace_free(v4);
	sk_userspace_free(v5);
	close_backend(s);
}
END_TEST

START_TEST(test_finalizers_and_deletion)
{
	sk_store *s = open_backend(_i);
	sk_userspace *v1 = create(s, "alice", "alice", NULL), *v2, *v3, *out = NULL;
	sk_error err = { 0 };

	ck_assert_int_eq(sk_store_mark_deleted(s, "alice", &err), 0);
	v2 = get(s, "alice"); /* a finalizer holds it */
	ck_assert_int_gt(v2->meta.deletion_ms, 0);
	ck_assert_int_gt(v2->meta.resource_version, v1->meta.resource_version);
	ck_assert_int_eq(sk_store_mark_deleted(s, "alice", &err), 0); /* idempotent */
	v3 = get(s, "alice");
	ck_assert_int_eq(v3->meta.resource_version, v2->meta.resource_version);
	ck_assert_int_eq(v3->meta.deletion_ms, v2->meta.deletion_ms);
	/* a stale finalizer removal loses; the current one removes the object */
	ck_assert_int_eq(sk_store_remove_finalizer(
	                         s, "alice", v1->meta.resource_version, SK_FINALIZER, &err),
	        SK_ECONFLICT);
	ck_assert_int_eq(sk_store_remove_finalizer(
	                         s, "alice", v3->meta.resource_version, SK_FINALIZER, &err),
	        0);
	ck_assert_int_eq(sk_store_get(s, "alice", &out, &err), SK_ENOTFOUND);
	ck_assert_int_eq(sk_store_mark_deleted(s, "alice", &err), SK_ENOTFOUND);
	ck_assert_int_eq(sk_store_remove(s, "alice", &err), SK_ENOTFOUND);
	sk_userspace_free(v1);
	sk_userspace_free(v2);
	sk_userspace_free(v3);
	close_backend(s);
}
END_TEST

START_TEST(test_finalizer_removed_before_deletion)
{
	sk_store *s = open_backend(_i);
	sk_userspace *v1 = create(s, "bob", "bob", NULL), *v2, *out = NULL;
	sk_error err = { 0 };

	/* an unknown finalizer: nothing to remove, nothing written */
	ck_assert_int_eq(
	        sk_store_remove_finalizer(s, "bob", v1->meta.resource_version, "other/x", &err), 0);
	v2 = get(s, "bob");
	ck_assert_int_eq(v2->meta.resource_version, v1->meta.resource_version);
	sk_userspace_free(v2);
	/* no deletion asked: the object stays, without finalizers */
	ck_assert_int_eq(
	        sk_store_remove_finalizer(s, "bob", v1->meta.resource_version, SK_FINALIZER, &err),
	        0);
	v2 = get(s, "bob");
	ck_assert_uint_eq(v2->meta.n_finalizers, 0);
	ck_assert_int_gt(v2->meta.resource_version, v1->meta.resource_version);
	/* then deletion removes it at once */
	ck_assert_int_eq(sk_store_mark_deleted(s, "bob", &err), 0);
	ck_assert_int_eq(sk_store_get(s, "bob", &out, &err), SK_ENOTFOUND);
	sk_userspace_free(v1);
	sk_userspace_free(v2);
	/* remove ignores finalizers */
	v1 = create(s, "carol", "carol", NULL);
	ck_assert_int_eq(sk_store_remove(s, "carol", &err), 0);
	ck_assert_int_eq(sk_store_get(s, "carol", &out, &err), SK_ENOTFOUND);
	sk_userspace_free(v1);
	close_backend(s);
}
END_TEST

START_TEST(test_list_since)
{
	sk_store *s = open_backend(_i);
	sk_userspace *a = create(s, "alice", "alice", NULL), *b = create(s, "bob", "bob", NULL);
	sk_userspace *a2 = NULL;
	sk_userspace_list l;
	sk_error err = { 0 };

	ck_assert_int_gt(b->meta.resource_version, a->meta.resource_version);
	ck_assert_int_eq(sk_store_list_since(s, 0, &l, &err), 0);
	ck_assert_uint_eq(l.len, 2);
	ck_assert_str_eq(l.items[0]->meta.name, "alice"); /* by resourceVersion */
	ck_assert_int_eq(l.resource_version, b->meta.resource_version);
	sk_userspace_list_dispose(&l);
	ck_assert_int_eq(sk_store_list_since(s, a->meta.resource_version, &l, &err), 0);
	ck_assert_uint_eq(l.len, 1);
	ck_assert_str_eq(l.items[0]->meta.name, "bob");
	sk_userspace_list_dispose(&l);
	/* a write moves alice past bob */
	ck_assert_int_eq(write_phase(s, a, SK_PHASE_RUNNING, &a2), 0);
	ck_assert_int_eq(sk_store_list_since(s, b->meta.resource_version, &l, &err), 0);
	ck_assert_uint_eq(l.len, 1);
	ck_assert_str_eq(l.items[0]->meta.name, "alice");
	ck_assert_int_eq(l.items[0]->status.phase, SK_PHASE_RUNNING);
	ck_assert_int_eq(l.resource_version, a2->meta.resource_version);
	sk_userspace_list_dispose(&l);
	/* nothing newer: empty, and the version asked for comes back */
	ck_assert_int_eq(sk_store_list_since(s, a2->meta.resource_version, &l, &err), 0);
	ck_assert_uint_eq(l.len, 0);
	ck_assert_int_eq(l.resource_version, a2->meta.resource_version);
	sk_userspace_list_dispose(&l);
	sk_userspace_free(a);
	sk_userspace_free(a2);
	sk_userspace_free(b);
	close_backend(s);
}
END_TEST

static void
count_packed(sk_packed_userspace *p, void *arg)
{
	sk_buf *names = arg;

	sk_buf_printf(names, "%s,", sk_packed_name(p));
	sk_packed_free(p);
}

START_TEST(test_list_selector_and_scan)
{
	sk_store *s = open_backend(_i);
	const char *names[] = { "dave", "alice", "carol", "bob" };
	const char *teams[] = { "x", "x", "y", NULL };
	sk_selector *sel = NULL;
	sk_userspace_list l;
	sk_buf seen = SK_BUF_INIT(1024);
	sk_error err = { 0 };

	for (int i = 0; i < 4; i++)
		sk_userspace_free(create(s, names[i], names[i], teams[i]));
	ck_assert_int_eq(sk_store_list(s, NULL, &l, &err), 0);
	ck_assert_uint_eq(l.len, 4);
	ck_assert_str_eq(l.items[0]->meta.name, "alice"); /* by name */
	ck_assert_str_eq(l.items[3]->meta.name, "dave");
	sk_userspace_list_dispose(&l);
	ck_assert_int_eq(sk_selector_parse("team=x", &sel, &err), 0);
	ck_assert_int_eq(sk_store_list(s, sel, &l, &err), 0);
	ck_assert_uint_eq(l.len, 2);
	ck_assert_str_eq(l.items[0]->meta.name, "alice");
	ck_assert_str_eq(l.items[1]->meta.name, "dave");
	sk_userspace_list_dispose(&l);
	sk_selector_free(sel);
	ck_assert_int_eq(sk_selector_parse("!team", &sel, &err), 0);
	ck_assert_int_eq(sk_store_list(s, sel, &l, &err), 0);
	ck_assert_uint_eq(l.len, 1);
	ck_assert_str_eq(l.items[0]->meta.name, "bob");
	sk_userspace_list_dispose(&l);
	sk_selector_free(sel);
	ck_assert_int_eq(sk_store_scan_packed(s, -1, count_packed, &seen, &err), 0);
	ck_assert_str_eq(seen.data, "alice,bob,carol,dave,");
	sk_buf_dispose(&seen);
	close_backend(s);
}
END_TEST

START_TEST(test_events_aggregate)
{
	sk_store *s = open_backend(_i);
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
	ck_assert_str_eq(l.items[0].reason, "Created"); /* oldest first */
	ck_assert_int_eq(l.items[0].count, 2);
	ck_assert_str_eq(l.items[0].message, "created i-3");
	ck_assert_str_eq(l.items[0].source, "spacekeeper");
	ck_assert_int_lt(l.items[0].first_ms, l.items[0].last_ms);
	ck_assert_str_eq(l.items[1].reason, "DataPlaneUnreachable");
	ck_assert_int_eq(l.items[1].count, 1);
	sk_event_list_dispose(&l);
	ck_assert_int_eq(sk_store_events(s, NULL, NULL, 0, &l, &err), 0);
	ck_assert_uint_eq(l.len, 3);
	sk_event_list_dispose(&l);
	ck_assert_int_eq(sk_store_events(s, "alice", NULL, 1, &l, &err), 0);
	ck_assert_uint_eq(l.len, 1);
	ck_assert_str_eq(l.items[0].reason, "DataPlaneUnreachable"); /* the newest kept */
	sk_event_list_dispose(&l);
	ck_assert_int_eq(sk_store_event(s, "alice", NULL, NULL, "X", "m", &err), SK_EINVALID);
	close_backend(s);
}
END_TEST

/* Events belong to one object by uid: a successor with the same name starts clean. */
START_TEST(test_events_keyed_by_uid)
{
	sk_store *s = open_backend(_i);
	sk_event_list l;
	sk_error err = { 0 };

	ck_assert_int_eq(sk_store_event(s, "alice", "uid-1", "Normal", "Created", "i-1", &err), 0);
	ck_assert_int_eq(sk_store_event(s, "alice", "uid-1", "Warning", "Orphan", "x", &err), 0);
	ck_assert_int_eq(sk_store_event(s, "alice", "uid-2", "Normal", "Created", "i-2", &err), 0);
	ck_assert_int_eq(sk_store_events(s, "alice", "uid-2", 0, &l, &err), 0);
	ck_assert_uint_eq(l.len, 1);
	ck_assert_int_eq(l.items[0].count, 1); /* not aggregated with uid-1's Created */
	ck_assert_str_eq(l.items[0].message, "i-2");
	ck_assert_str_eq(l.items[0].uid, "uid-2");
	sk_event_list_dispose(&l);
	ck_assert_int_eq(sk_store_events(s, "alice", "uid-1", 0, &l, &err), 0);
	ck_assert_uint_eq(l.len, 2);
	sk_event_list_dispose(&l);
	ck_assert_int_eq(sk_store_events(s, "alice", NULL, 0, &l, &err), 0);
	ck_assert_uint_eq(l.len, 3); /* NULL: every uid of the name */
	sk_event_list_dispose(&l);
	ck_assert_int_eq(sk_store_event(s, "alice", NULL, "Normal", "Created", "none", &err), 0);
	ck_assert_int_eq(sk_store_events(s, "alice", "", 0, &l, &err), 0);
	ck_assert_uint_eq(l.len, 1); /* no uid is a uid of its own */
	ck_assert_str_eq(l.items[0].uid, "");
	sk_event_list_dispose(&l);
	close_backend(s);
}
END_TEST

START_TEST(test_lease_rules)
{
	sk_store *s = open_backend(_i);
	sk_lease a, b, r;
	sk_lease_list l;
	sk_error err = { 0 };

	ck_assert_msg(
	        sk_store_lease_acquire(s, "shard-0", "A", 1500, &a, &err) == 0, "%s", err.message);
	ck_assert_str_eq(a.holder, "A");
	ck_assert_int_eq(a.duration_ms, 1500);
	ck_assert_int_eq(a.acquire_ms, a.renew_ms);
	/* held: B cannot take it, renew or release it */
	ck_assert_int_eq(sk_store_lease_acquire(s, "shard-0", "B", 1500, NULL, &err), SK_ECONFLICT);
	ck_assert_msg(strstr(err.message, "\"A\"") != NULL, "message: %s", err.message);
	ck_assert_int_eq(sk_store_lease_renew(s, "shard-0", "B", NULL, &err), SK_ECONFLICT);
	ck_assert_int_eq(sk_store_lease_release(s, "shard-0", "B", &err), SK_ECONFLICT);
	/* the holder renews: same acquire time, later renew time, new version */
	usleep(20 * 1000);
	ck_assert_msg(sk_store_lease_renew(s, "shard-0", "A", &r, &err) == 0, "%s", err.message);
	ck_assert_int_eq(r.acquire_ms, a.acquire_ms);
	ck_assert_int_gt(r.renew_ms, a.renew_ms);
	ck_assert_int_gt(r.version, a.version);
	/* no clock decides for B: past its renew time plus its
	 * duration the lease is still A's to acquire; B takes it over only by
	 * naming the version it saw unchanged, and not over an older one */
	usleep(1600 * 1000);
	ck_assert_int_eq(sk_store_lease_acquire(s, "shard-0", "B", 1500, NULL, &err), SK_ECONFLICT);
	ck_assert_int_eq(sk_store_lease_take_over(s, &a, "B", 1500, NULL, &err), SK_ECONFLICT);
	ck_assert_msg(strstr(err.message, "changed since it was observed") != NULL, "message: %s",
	        err.message);
	ck_assert_msg(sk_store_lease_take_over(s, &r, "B", 1500, &b, &err) == 0, "%s", err.message);
	sk_lease_dispose(&r);
	ck_assert_str_eq(b.holder, "B");
	ck_assert_int_gt(b.acquire_ms, a.acquire_ms);
	ck_assert_int_eq(sk_store_lease_renew(s, "shard-0", "A", NULL, &err), SK_ECONFLICT);
	/* B releases: A takes it at once */
	ck_assert_int_eq(sk_store_lease_release(s, "shard-0", "B", &err), 0);
	ck_assert_int_eq(sk_store_lease_release(s, "shard-0", "B", &err), 0); /* no-op */
	ck_assert_int_eq(sk_store_lease_renew(s, "shard-0", "B", NULL, &err), SK_ECONFLICT);
	ck_assert_msg(sk_store_lease_acquire(s, "shard-0", "A", 1500, NULL, &err) == 0, "%s",
	        err.message);
	ck_assert_int_eq(sk_store_lease_renew(s, "nothing", "A", NULL, &err), SK_ENOTFOUND);
	ck_assert_int_eq(sk_store_lease_release(s, "nothing", "A", &err), SK_ENOTFOUND);
	ck_assert_int_eq(sk_store_lease_acquire(s, "shard-1", "", 1500, NULL, &err), SK_EINVALID);
	ck_assert_int_eq(sk_store_lease_acquire(s, "shard-1", "C", 0, NULL, &err), SK_EINVALID);
	ck_assert_int_eq(sk_store_lease_acquire(s, "shard-1", "C", 1500, NULL, &err), 0);
	ck_assert_int_eq(sk_store_lease_list(s, &l, &err), 0);
	ck_assert_uint_eq(l.len, 2);
	ck_assert_str_eq(l.items[0].name, "shard-0");
	ck_assert_str_eq(l.items[0].holder, "A");
	ck_assert_str_eq(l.items[1].name, "shard-1");
	ck_assert_str_eq(l.items[1].holder, "C");
	sk_lease_list_dispose(&l);
	sk_lease_dispose(&a);
	sk_lease_dispose(&b);
	close_backend(s);
}
END_TEST

typedef struct lease_racer {
	sk_store *s;
	const char *lease;
	char holder[16];
	pthread_barrier_t *go;
	const sk_lease *seen; /* a take-over of this version, else an acquire */
	int rc;
} lease_racer;

static void *
race_acquire(void *arg)
{
	lease_racer *r = arg;
	sk_error err = { 0 };

	pthread_barrier_wait(r->go);
	r->rc = r->seen ? sk_store_lease_take_over(r->s, r->seen, r->holder, 600, NULL, &err)
	                : sk_store_lease_acquire(r->s, r->lease, r->holder, 600, NULL, &err);
	return NULL;
}

/* The lease as listed (the caller disposes it). */
static void
listed(sk_store *s, const char *name, sk_lease *out)
{
	sk_lease_list l;
	sk_error err = { 0 };
	bool found = false;

	ck_assert_msg(sk_store_lease_list(s, &l, &err) == 0, "%s", err.message);
	for (size_t i = 0; i < l.len; i++)
		if (strcmp(l.items[i].name, name) == 0) {
			*out = l.items[i];
			memset(&l.items[i], 0, sizeof(l.items[i]));
			found = true;
		}
	sk_lease_list_dispose(&l);
	ck_assert_msg(found, "lease %s not listed", name);
}

/* Acquirers racing for one lease, started together (taking over the
 * version seen, when not NULL): exactly one wins. */
static void
race_once(sk_store *s, const char *lease, const char *round, const sk_lease *seen)
{
	enum { N = 8 };
	lease_racer r[N];
	pthread_t th[N];
	pthread_barrier_t go;
	sk_lease got;
	sk_error err = { 0 };
	int won = 0;
	const char *winner = NULL;

	pthread_barrier_init(&go, NULL, N);
	for (int i = 0; i < N; i++) {
		r[i] = (lease_racer){ s, lease, "", &go, seen, -1 };
		snprintf(r[i].holder, sizeof(r[i].holder), "%s%d", round, i);
		pthread_create(&th[i], NULL, race_acquire, &r[i]);
	}
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		ck_assert_msg(r[i].rc == 0 || r[i].rc == SK_ECONFLICT, "rc %d", r[i].rc);
		if (r[i].rc == 0) {
			won++;
			winner = r[i].holder;
		}
	}
	pthread_barrier_destroy(&go);
	ck_assert_int_eq(won, 1);
	/* the winner holds it: its renew succeeds */
	ck_assert_msg(sk_store_lease_renew(s, lease, winner, &got, &err) == 0, "%s", err.message);
	ck_assert_str_eq(got.holder, winner);
	sk_lease_dispose(&got);
}

/* Races for new leases, then to take the same leases over (a steal). */
START_TEST(test_lease_one_holder)
{
	sk_store *s = open_backend(_i);
	int rounds = _i == BACKEND_MEMORY ? 100 : 3;
	char lease[32];

	for (int i = 0; i < rounds; i++) {
		snprintf(lease, sizeof(lease), "shard-%d", i);
		race_once(s, lease, "new", NULL);
	}
	for (int i = 0; i < rounds; i++) {
		sk_lease seen;
		snprintf(lease, sizeof(lease), "shard-%d", i);
		listed(s, lease, &seen);
		race_once(s, lease, "steal", &seen);
		sk_lease_dispose(&seen);
	}
	close_backend(s);
}
END_TEST

/* Apply records: put once, listed by id with the body as given (keys with
 * dots and dollars too: they are user label keys), removed once. */
START_TEST(test_apply_records)
{
	sk_store *s = open_backend(_i);
	sk_apply_record_list l = { 0 };
	sk_error err = { 0 };
	json_t *b1 = json_pack("{s:s, s:[{s:s, s:{s:s}}]}", "holder", "host pid 1", "items", "name",
	        "a", "labels", "app.kubernetes.io/$name", "x");
	json_t *b2 = json_pack("{s:i}", "part", 2);
	json_t *big = json_object();
	char *pad = sk_calloc(1, SK_STORE_RECORD_MAX_BYTES + 2);
	int64_t before = sk_now_ms();

	ck_assert_msg(sk_store_record_put(s, "r-2", b2, &err) == 0, "%s", err.message);
	ck_assert_msg(sk_store_record_put(s, "r-1", b1, &err) == 0, "%s", err.message);
	ck_assert_int_eq(sk_store_record_put(s, "r-1", b2, &err), SK_EEXISTS);
	ck_assert_int_eq(sk_store_record_put(s, "", b2, &err), SK_EINVALID);
	ck_assert_int_eq(sk_store_record_put(s, "r-3", json_array_get(b1, 0), &err), SK_EINVALID);
	memset(pad, 'x', SK_STORE_RECORD_MAX_BYTES + 1);
	json_object_set_new(big, "pad", json_string(pad));
	ck_assert_int_eq(sk_store_record_put(s, "r-big", big, &err), SK_EINVALID);
	ck_assert_msg(sk_store_record_list(s, &l, &err) == 0, "%s", err.message);
	ck_assert_uint_eq(l.len, 2);
	ck_assert_str_eq(l.items[0].id, "r-1");
	ck_assert_str_eq(l.items[1].id, "r-2");
	ck_assert_msg(json_equal(l.items[0].body, b1), "body changed on the way");
	ck_assert_int_ge(l.items[0].create_ms, before - 1000);
	ck_assert_int_le(l.items[0].create_ms, sk_now_ms() + 1000);
	sk_apply_record_list_dispose(&l);
	ck_assert_msg(sk_store_record_remove(s, "r-1", &err) == 0, "%s", err.message);
	ck_assert_int_eq(sk_store_record_remove(s, "r-1", &err), SK_ENOTFOUND);
	ck_assert_msg(sk_store_record_list(s, &l, &err) == 0, "%s", err.message);
	ck_assert_uint_eq(l.len, 1);
	ck_assert_str_eq(l.items[0].id, "r-2");
	sk_apply_record_list_dispose(&l);
	free(pad);
	json_decref(big);
	json_decref(b1);
	json_decref(b2);
	close_backend(s);
}
END_TEST

/* Shared provider lists: parts written once per list and read back by
 * list in the order asked (missing ones left out); the head names the
 * current list and only a newer list replaces it (an old writer waking up
 * loses); prune removes the parts of older lists of that group only. */
START_TEST(test_observations)
{
	sk_store *s = open_backend(_i);
	sk_observation_list l = { 0 };
	sk_observation h = { 0 };
	sk_error err = { 0 };
	json_t *b1 = json_pack("{s:[{s:s, s:{s:s}}]}", "sandboxes", "id", "i-1", "metadata",
	        "user.id.$x", "alice");
	json_t *b2 = json_pack("{s:[]}", "sandboxes");
	json_t *head = json_pack("{s:i}", "shards", 2);
	const char *parts[] = { "shard-02", "shard-09", "shard-01" };

	ck_assert_msg(sk_store_observation_put(s, "e2b", "shard-01", 1000, "a", b1, &err) == 0,
	        "%s", err.message);
	ck_assert_msg(sk_store_observation_put(s, "e2b", "shard-02", 1000, "a", b2, &err) == 0,
	        "%s", err.message);
	ck_assert_msg(sk_store_observation_put(s, "e2b", "shard-01", 2000, "b", b2, &err) == 0,
	        "%s", err.message);
	ck_assert_msg(sk_store_observation_put(s, "cube", "shard-01", 500, "b", b2, &err) == 0,
	        "%s", err.message);
	ck_assert_int_eq(
	        sk_store_observation_put(s, "e2b", "shard-01", 1000, "b", b2, &err), SK_EEXISTS);
	ck_assert_int_eq(sk_store_observation_put(s, "e2b", "", 3000, "b", b2, &err), SK_EINVALID);
	ck_assert_int_eq(
	        sk_store_observation_put(s, "e/2b", "p", 3000, "b", b2, &err), SK_EINVALID);
	ck_assert_int_eq(sk_store_observation_put(
	                         s, "e2b", "x", 3000, "b", json_object_get(b1, "sandboxes"), &err),
	        SK_EINVALID);
	/* the list at 1000, in the order asked */
	ck_assert_msg(sk_store_observation_get(s, "e2b", 1000, parts, 3, &l, &err) == 0, "%s",
	        err.message);
	ck_assert_uint_eq(l.len, 2);
	ck_assert_str_eq(l.items[0].id, "shard-02");
	ck_assert_str_eq(l.items[1].id, "shard-01");
	ck_assert_int_eq(l.items[1].listed_ms, 1000);
	ck_assert_str_eq(l.items[1].writer, "a");
	ck_assert_msg(json_equal(l.items[1].body, b1), "body changed on the way");
	sk_observation_list_dispose(&l);
	/* the head: absent, then set, then refused for an older or equal list */
	ck_assert_int_eq(sk_store_observation_head_get(s, "e2b", &h, &err), SK_ENOTFOUND);
	ck_assert_msg(sk_store_observation_head_put(s, "e2b", 2000, "b", head, &err) == 0, "%s",
	        err.message);
	ck_assert_int_eq(
	        sk_store_observation_head_put(s, "e2b", 1000, "a", head, &err), SK_ECONFLICT);
	ck_assert_int_eq(
	        sk_store_observation_head_put(s, "e2b", 2000, "a", head, &err), SK_ECONFLICT);
	ck_assert_msg(sk_store_observation_head_get(s, "e2b", &h, &err) == 0, "%s", err.message);
	ck_assert_str_eq(h.id, "e2b");
	ck_assert_int_eq(h.listed_ms, 2000);
	ck_assert_str_eq(h.writer, "b");
	ck_assert_msg(json_equal(h.body, head), "head body changed on the way");
	sk_observation_dispose(&h);
	/* prune: e2b's lists before 2000 go, its 2000 and cube's stay */
	ck_assert_msg(sk_store_observation_prune(s, "e2b", 2000, &err) == 0, "%s", err.message);
	ck_assert_msg(sk_store_observation_get(s, "e2b", 1000, parts, 3, &l, &err) == 0, "%s",
	        err.message);
	ck_assert_uint_eq(l.len, 0);
	sk_observation_list_dispose(&l);
	ck_assert_msg(sk_store_observation_get(s, "e2b", 2000, parts + 2, 1, &l, &err) == 0, "%s",
	        err.message);
	ck_assert_uint_eq(l.len, 1);
	sk_observation_list_dispose(&l);
	ck_assert_msg(sk_store_observation_get(s, "cube", 500, parts + 2, 1, &l, &err) == 0, "%s",
	        err.message);
	ck_assert_uint_eq(l.len, 1);
	sk_observation_list_dispose(&l);
	json_decref(head);
	json_decref(b1);
	json_decref(b2);
	close_backend(s);
}
END_TEST

static void
add_contract(Suite *s, int backend)
{
	const TTest *tests[] = { test_create_sets_store_fields, test_invalid_input,
		test_user_id_unique, test_cas_stale_writer_loses, test_cas_one_winner,
		test_generation_rules, test_finalizers_and_deletion,
		test_finalizer_removed_before_deletion, test_list_since,
		test_list_selector_and_scan, test_events_aggregate, test_events_keyed_by_uid,
		test_lease_rules, test_lease_one_holder, test_apply_records, test_observations };
	TCase *tc = tcase_create("contract");

	tcase_set_timeout(tc, 60);
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		tcase_add_loop_test(tc, tests[i], backend, backend + 1);
	suite_add_tcase(s, tc);
}

Suite *
sk_suite_store_contract_memory(void)
{
	Suite *s = suite_create("store_contract_memory");

	add_contract(s, BACKEND_MEMORY);
	return s;
}

Suite *
sk_suite_store_contract_mongo(void)
{
	Suite *s = suite_create("store_contract_mongo");

	add_contract(s, BACKEND_MONGO);
	return s;
}
