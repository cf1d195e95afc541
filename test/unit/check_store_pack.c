/*
 * Unit tests for the packed UserSpace (pkg/store/packed.c): the round trip
 * through the stored document is exact for every field, read_ms included,
 * and the header accessors agree with the decoded object.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../testutil.h"
#include "informer/informer.h"
#include "store/store_int.h"

Suite *sk_suite_store_pack(void);

static void
add_condition(sk_userspace_status *st, const char *type, const char *status, int64_t ms)
{
	sk_condition *c;

	st->conditions = sk_realloc(st->conditions, (st->n_conditions + 1) * sizeof(*c));
	c = &st->conditions[st->n_conditions++];
	memset(c, 0, sizeof(*c));
	c->type = sk_strdup(type);
	c->status = sk_strdup(status);
	c->reason = sk_strdup("Because");
	c->message = sk_strdup("line one\nline \"two\" \xc3\xa9");
	c->last_transition_ms = ms;
	c->observed_generation = 7;
}

static void
add_drift(sk_userspace_status *st, const char *type, const char *sandbox, int64_t since)
{
	sk_drift *d;

	st->drift = sk_realloc(st->drift, (st->n_drift + 1) * sizeof(*d));
	d = &st->drift[st->n_drift++];
	d->type = sk_strdup(type);
	d->sandbox_id = sk_strdup(sandbox);
	d->since_ms = since;
	d->detail = sk_strdup("504 from envd");
}

static void
fill_meta(sk_object_meta *m)
{
	m->name = sk_strdup("alice");
	sk_kvlist_set(&m->labels, "team", "research");
	sk_kvlist_set(&m->labels, "app.kubernetes.io/name", "spaces");
	sk_kvlist_set(&m->annotations, SK_ANNOTATION_PAUSED, "true");
	sk_kvlist_set(&m->annotations, "example.com/$note", "a=b, c");
	m->uid = sk_strdup("5f0c6c1e-uid");
	m->generation = 3;
	m->resource_version = 1099511627776LL + 17;
	m->creation_ms = 1700000000123;
	m->deletion_ms = 1700000999456;
	m->finalizers = sk_calloc(2, sizeof(char *));
	m->finalizers[0] = sk_strdup(SK_FINALIZER);
	m->finalizers[1] = sk_strdup("example.com/other");
	m->n_finalizers = 2;
	m->read_ms = 424242;
}

static void
fill_spec(sk_userspace_spec *s)
{
	s->user_id = sk_strdup("alice.01_x-y");
	s->provider = sk_strdup("cube");
	s->template_id = sk_strdup("python");
	s->mode = SK_MODE_PAUSED;
	s->cpu_count = 4;
	s->memory_mb = 2048;
	s->idle_timeout_ms = 90500;
	s->on_timeout = SK_ON_TIMEOUT_KILL;
	s->auto_resume = false;
	sk_kvlist_set(&s->env, "API_MODE", "fast");
	sk_kvlist_set(&s->env, "EMPTY", "");
	sk_kvlist_set(&s->metadata, "project", "p-1");
	s->deletion_policy = SK_DELETE_RETAIN;
	s->unhealthy_after_ms = 2 * 3600 * 1000 + 5 * 1000;
	s->remediation = SK_REMEDIATION_REPLACE;
}

/* Every field set, none to its default. */
static sk_userspace *
full_object(void)
{
	sk_userspace *us = sk_calloc(1, sizeof(*us));
	sk_userspace_status *st = &us->status;

	fill_meta(&us->meta);
	fill_spec(&us->spec);
	st->phase = SK_PHASE_DEGRADED;
	st->sandbox_id = sk_strdup("isb-123");
	st->observed_generation = 3;
	st->message = sk_strdup("");
	st->last_reconcile_ms = 1700000500789;
	st->last_activity_ms = 1700000400321;
	st->usage = (sk_usage){ 7200, 360, 4, 1, 1700000000000, 1700000500789 };
	st->archive = (sk_archive_status){ SK_ARCHIVE_RESTORED, sk_strdup("b"),
		sk_strdup("spaces/u/3"), 3, 1700000001000, 12, 4096, sk_strdup("i-old"),
		SK_ARCHIVE_SNAPSHOT, sk_strdup("snap1:default"), 1700000002000, 1700000003000, 2,
		1700000004000 };
	st->storage = (sk_storage_status){ sk_strdup(SK_STORAGE_MOUNTED), sk_strdup("sk-u"),
		sk_strdup("vol123"), sk_strdup("/home/user") };
	st->network = (sk_network_status){ sk_strdup("isb-123"),
		sk_strdup("internet Deny, allowOut 10.0.0.0/8") };
	add_condition(st, SK_COND_SYNCED, "True", 1700000100001);
	add_condition(st, SK_COND_READY, "True", 1700000200002);
	add_condition(st, SK_COND_DATAPLANE, "False", 1700000300003);
	add_condition(st, SK_COND_READY, "False", 1700000400004); /* the first one counts */
	add_drift(st, SK_DRIFT_DATAPLANE, "isb-123", 1700000300003);
	add_drift(st, SK_DRIFT_MISSING, NULL, 1700000400004);
	return us;
}

static sk_userspace *
round_trip(const sk_userspace *us, sk_packed_userspace **packed)
{
	sk_userspace *back = NULL;
	sk_error err = { 0 };
	sk_packed_userspace *p = sk_store_pack(us, &err);

	ck_assert_msg(p != NULL, "pack: %s", err.message);
	ck_assert_msg(sk_store_unpack(p, &back, &err) == 0, "unpack: %s", err.message);
	if (packed)
		*packed = p;
	else
		sk_packed_free(p);
	return back;
}

static void
assert_meta_equal(const sk_object_meta *a, const sk_object_meta *b)
{
	ck_assert_str_eq(a->name, b->name);
	ck_assert(sk_kvlist_equal(&a->labels, &b->labels));
	ck_assert(sk_kvlist_equal(&a->annotations, &b->annotations));
	ck_assert_pstr_eq(a->uid, b->uid);
	ck_assert_int_eq(a->generation, b->generation);
	ck_assert_int_eq(a->resource_version, b->resource_version);
	ck_assert_int_eq(a->creation_ms, b->creation_ms);
	ck_assert_int_eq(a->deletion_ms, b->deletion_ms);
	ck_assert_uint_eq(a->n_finalizers, b->n_finalizers);
	for (size_t i = 0; i < a->n_finalizers; i++)
		ck_assert_str_eq(a->finalizers[i], b->finalizers[i]);
	ck_assert_int_eq(a->read_ms, b->read_ms);
}

START_TEST(test_round_trip_full)
{
	sk_userspace *us = full_object(), *back;
	sk_packed_userspace *p = NULL;

	back = round_trip(us, &p);
	assert_meta_equal(&us->meta, &back->meta);
	ck_assert(sk_userspace_spec_equal(&us->spec, &back->spec));
	ck_assert(sk_userspace_status_equal(&us->status, &back->status));
	ck_assert(sk_informer_status_only_change(us, back));
	ck_assert(sk_informer_status_only_change(back, us));
	/* Spot checks that the helpers compare what they should. */
	ck_assert_int_eq(back->spec.idle_timeout_ms, 90500);
	ck_assert_ptr_null(back->status.drift[1].sandbox_id);
	ck_assert_str_eq(back->status.message, "");
	ck_assert_str_eq(sk_kvlist_get(&back->spec.env, "EMPTY"), "");
	/* The header agrees without decoding. */
	ck_assert_str_eq(sk_packed_name(p), "alice");
	ck_assert_str_eq(sk_packed_user_id(p), "alice.01_x-y");
	ck_assert_int_eq(sk_packed_resource_version(p), us->meta.resource_version);
	ck_assert_int_eq(sk_packed_read_ms(p), 424242);
	ck_assert_int_eq(sk_packed_phase(p), SK_PHASE_DEGRADED);
	ck_assert(sk_packed_ready(p) == sk_userspace_is_ready(us));
	ck_assert(sk_packed_ready(p));
	sk_packed_free(p);
	sk_userspace_free(back);
	sk_userspace_free(us);
}
END_TEST

/* Packing the decoded copy again gives the same document. */
START_TEST(test_repack_stable)
{
	sk_userspace *us = full_object(), *back, *again;
	sk_packed_userspace *p1 = NULL, *p2 = NULL;

	back = round_trip(us, &p1);
	again = round_trip(back, &p2);
	ck_assert_uint_eq(sk_packed_size(p1), sk_packed_size(p2));
	ck_assert_int_eq(memcmp(p1, p2, sk_packed_size(p1)), 0);
	ck_assert(sk_userspace_status_equal(&us->status, &again->status));
	sk_packed_free(p1);
	sk_packed_free(p2);
	sk_userspace_free(again);
	sk_userspace_free(back);
	sk_userspace_free(us);
}
END_TEST

/* A fresh object: no status, no userID, defaults only. */
START_TEST(test_round_trip_minimal)
{
	sk_userspace *us = sk_calloc(1, sizeof(*us)), *back;
	sk_packed_userspace *p = NULL;

	us->meta.name = sk_strdup("bob");
	sk_userspace_apply_defaults(us);
	back = round_trip(us, &p);
	assert_meta_equal(&us->meta, &back->meta);
	ck_assert(sk_userspace_spec_equal(&us->spec, &back->spec));
	ck_assert(sk_userspace_status_equal(&us->status, &back->status));
	ck_assert_ptr_null(back->spec.user_id);
	ck_assert_ptr_null(sk_packed_user_id(p));
	ck_assert_int_eq(sk_packed_phase(p), SK_PHASE_NONE);
	ck_assert(!sk_packed_ready(p));
	ck_assert_int_eq(sk_packed_read_ms(p), 0);
	sk_packed_free(p);
	sk_userspace_free(back);
	sk_userspace_free(us);
}
END_TEST

/* ready follows the first Ready condition, as sk_userspace_is_ready. */
START_TEST(test_ready_summary)
{
	static const char *const cases[][2] = { { "Ready", "True" }, { "Ready", "False" },
		{ "Ready", "Unknown" }, { "Synced", "True" } };
	sk_error err = { 0 };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sk_userspace *us = sk_calloc(1, sizeof(*us));
		sk_packed_userspace *p;

		us->meta.name = sk_strdup("carol");
		us->status.phase = SK_PHASE_RUNNING;
		add_condition(&us->status, cases[i][0], cases[i][1], 1700000000000);
		p = sk_store_pack(us, &err);
		ck_assert_ptr_nonnull(p);
		ck_assert_msg(sk_packed_ready(p) == sk_userspace_is_ready(us), "case %zu", i);
		ck_assert_int_eq(sk_packed_ready(p), i == 0);
		ck_assert_int_eq(sk_packed_phase(p), SK_PHASE_RUNNING);
		sk_packed_free(p);
		sk_userspace_free(us);
	}
}
END_TEST

static bson_type_t
type_at(const bson_t *doc, const char *path)
{
	bson_iter_t it, v;

	ck_assert_msg(bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path, &v),
	        "%s missing", path);
	return bson_iter_type(&v);
}

/* The stored document keeps its types: store-owned numbers int64 and
 * timestamps dates (what queries and the unique index compare), other
 * integers int32, user maps as [{k, v}] arrays. */
START_TEST(test_doc_types)
{
	sk_userspace *us = full_object();
	sk_error err = { 0 };
	bson_t *doc = sk_store_doc_from_userspace(us, &err);

	ck_assert_msg(doc != NULL, "encode: %s", err.message);
	ck_assert_int_eq(type_at(doc, "_id"), BSON_TYPE_UTF8);
	ck_assert_int_eq(type_at(doc, "metadata.generation"), BSON_TYPE_INT64);
	ck_assert_int_eq(type_at(doc, "metadata.resourceVersion"), BSON_TYPE_INT64);
	ck_assert_int_eq(type_at(doc, "metadata.creationTimestamp"), BSON_TYPE_DATE_TIME);
	ck_assert_int_eq(type_at(doc, "metadata.deletionTimestamp"), BSON_TYPE_DATE_TIME);
	ck_assert_int_eq(type_at(doc, "metadata.finalizers"), BSON_TYPE_ARRAY);
	ck_assert_int_eq(type_at(doc, "metadata.labels.0.k"), BSON_TYPE_UTF8);
	ck_assert_int_eq(type_at(doc, "spec.resources.cpuCount"), BSON_TYPE_INT32);
	ck_assert_int_eq(type_at(doc, "spec.lifecycle.autoResume"), BSON_TYPE_BOOL);
	ck_assert_int_eq(type_at(doc, "status.conditions.1.observedGeneration"), BSON_TYPE_INT32);
	ck_assert_int_eq(type_at(doc, "status.drift.0.since"), BSON_TYPE_UTF8);
	bson_destroy(doc);
	sk_userspace_free(us);
}
END_TEST

/* Packs us after edit (on a copy) and compares with the unedited pack. */
static bool
status_only_after(const sk_userspace *us, void (*edit)(sk_userspace *))
{
	sk_userspace *c = sk_userspace_dup(us);
	sk_error err = { 0 };
	sk_packed_userspace *a = sk_store_pack(us, &err), *b;
	bool r;

	edit(c);
	b = sk_store_pack(c, &err);
	ck_assert(a != NULL && b != NULL);
	r = sk_packed_status_only_change(a, b);
	sk_packed_free(a);
	sk_packed_free(b);
	sk_userspace_free(c);
	return r;
}

static void
edit_status(sk_userspace *us)
{
	us->meta.resource_version++;
	us->meta.read_ms += 5;
	us->status.phase = SK_PHASE_RUNNING;
	free(us->status.conditions[0].message);
	us->status.conditions[0].message = sk_strdup("other");
}

static void
edit_label(sk_userspace *us)
{
	sk_kvlist_set(&us->meta.labels, "team", "ops");
}

static void
edit_annotation(sk_userspace *us)
{
	sk_kvlist_set(&us->meta.annotations, "new", "x");
}

static void
edit_generation(sk_userspace *us)
{
	us->meta.generation++;
}

static void
edit_deletion(sk_userspace *us)
{
	us->meta.deletion_ms++;
}

static void
edit_finalizers(sk_userspace *us)
{
	free(us->meta.finalizers[--us->meta.n_finalizers]);
}

static void
edit_template(sk_userspace *us)
{
	free(us->spec.template_id);
	us->spec.template_id = sk_strdup("base");
}

static void
edit_mode(sk_userspace *us)
{
	us->spec.mode = SK_MODE_RUNNING;
}

static void
edit_memory(sk_userspace *us)
{
	us->spec.memory_mb++;
}

static void
edit_env(sk_userspace *us)
{
	sk_kvlist_set(&us->spec.env, "EMPTY", "now set");
}

START_TEST(test_status_only_change)
{
	sk_userspace *us = full_object();

	ck_assert(status_only_after(us, edit_status));
	ck_assert(!status_only_after(us, edit_label));
	ck_assert(!status_only_after(us, edit_annotation));
	ck_assert(!status_only_after(us, edit_generation));
	ck_assert(!status_only_after(us, edit_deletion));
	ck_assert(!status_only_after(us, edit_finalizers));
	ck_assert(!status_only_after(us, edit_template));
	ck_assert(!status_only_after(us, edit_mode));
	ck_assert(!status_only_after(us, edit_memory));
	ck_assert(!status_only_after(us, edit_env));
	sk_userspace_free(us);
}
END_TEST

/* The point of packing: well under the stored document (and the decoded
 * tree, which is about as large). */
START_TEST(test_compact)
{
	sk_userspace *us = full_object();
	sk_error err = { 0 };
	bson_t *doc = sk_store_doc_from_userspace(us, &err);
	sk_packed_userspace *p = sk_store_pack(us, &err);

	ck_assert(doc != NULL && p != NULL);
	ck_assert_msg(sk_packed_size(p) * 2 < doc->len, "packed %zu, BSON %u", sk_packed_size(p),
	        doc->len);
	sk_packed_free(p);
	bson_destroy(doc);
	sk_userspace_free(us);
}
END_TEST

Suite *
sk_suite_store_pack(void)
{
	Suite *s = suite_create("store_pack");
	TCase *tc = tcase_create("pack");

	tcase_add_test(tc, test_round_trip_full);
	tcase_add_test(tc, test_repack_stable);
	tcase_add_test(tc, test_round_trip_minimal);
	tcase_add_test(tc, test_ready_summary);
	tcase_add_test(tc, test_doc_types);
	tcase_add_test(tc, test_status_only_change);
	tcase_add_test(tc, test_compact);
	suite_add_tcase(s, tc);
	return s;
}
