/*
 * Unit tests for the status table (pkg/api/status.c): every row of
 * sk_status_rows and of its parts is filled with a value of its own, and
 * the status goes through every codec that carries it: JSON out and back
 * (api/codec.c), the stored BSON document read by both of the store's
 * readers (store/codec.c, codec_read.c), the packed cache (store/packed.c),
 * copy and equality. A field that a codec drops, or a member with no row,
 * fails here.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/migration.h"
#include "api/status.h"
#include "api/storage.h"
#include "api/strlist.h"
#include "api/userspace.h"
#include "store/store_int.h"

Suite *sk_suite_status_table(void);

/* Each leaf row a value no other row has (n counts them). */
static void fill_rows(const sk_status_row *rows, void *obj, int *n);

static void
fill_array(const sk_status_row *r, void *obj, int *n)
{
	char *items = sk_calloc(2, r->item_size);

	for (size_t i = 0; i < 2; i++)
		fill_rows(r->rows, items + i * r->item_size, n);
	*SK_STATUS_AT(r, obj, char *) = items;
	*(size_t *)(void *)((char *)obj + r->count_offset) = 2;
}

static void
fill_migration(sk_migration_status *m, int *n)
{
	char buf[32];

	m->phase = SK_MIG_RETIRING;
	snprintf(buf, sizeof(buf), "v%d", ++*n);
	m->source = (sk_migration_end){ sk_strdup("e2b"), sk_strdup("base"), sk_strdup(buf) };
	m->target = (sk_migration_end){ sk_strdup("cube"), sk_strdup("python"), sk_strdup("t1") };
	m->files_done = 3;
	m->files_total = 4;
	m->bytes_done = 5;
	m->bytes_total = 6;
	m->start_ms = 1700000000000;
	m->step_ms = 1700000001000;
	m->trigger = sk_strdup("ProviderChanged");
	m->reason = sk_strdup("why");
}

static void
fill_rows(const sk_status_row *rows, void *obj, int *n)
{
	char buf[32];

	for (const sk_status_row *r = rows; r->key != NULL; r++) {
		switch (r->kind) {
		case SK_STATUS_STR:
			snprintf(buf, sizeof(buf), "v%d", ++*n);
			*SK_STATUS_AT(r, obj, char *) = sk_strdup(buf);
			break;
		case SK_STATUS_INT: *SK_STATUS_AT(r, obj, int64_t) = ++*n; break;
		case SK_STATUS_TIME:
			*SK_STATUS_AT(r, obj, int64_t) = 1700000000000 + 1001 * ++*n;
			break;
		case SK_STATUS_ENUM: *SK_STATUS_AT(r, obj, int) = r->n_values - 1; break;
		case SK_STATUS_ARRAY: fill_array(r, obj, n); break;
		case SK_STATUS_STRLIST:
			for (int k = 0; k < 2; k++) {
				snprintf(buf, sizeof(buf), "v%d", ++*n);
				sk_strlist_add(SK_STATUS_AT(r, obj, sk_strlist), buf);
			}
			break;
		case SK_STATUS_OBJECT: fill_rows(r->rows, SK_STATUS_AT(r, obj, void), n); break;
		case SK_STATUS_MIGRATION:
			fill_migration(SK_STATUS_AT(r, obj, sk_migration_status), n);
			break;
		}
	}
}

/* rare: with a migration, an archive, a volume and snapshots, which the store's
 * direct reader leaves to its general one. */
static sk_userspace *
full_space(bool rare)
{
	sk_userspace *us = sk_calloc(1, sizeof(*us));
	int n = 0;

	us->meta.name = sk_strdup("alice");
	us->meta.uid = sk_strdup("uid-1");
	us->meta.generation = 2;
	us->meta.resource_version = 7;
	us->spec.user_id = sk_strdup("alice");
	sk_userspace_apply_defaults(us);
	fill_rows(sk_status_rows, &us->status, &n);
	if (!rare) {
		sk_migration_dispose(&us->status.migration);
		sk_archive_status_dispose(&us->status.archive);
		sk_storage_status_dispose(&us->status.storage);
		sk_snapshots_status_dispose(&us->status.snapshots);
	}
	return us;
}

/* ---- every member has a row ---- */

static size_t
row_size(const sk_status_row *r)
{
	switch (r->kind) {
	case SK_STATUS_STR:
	case SK_STATUS_ARRAY: return sizeof(char *);
	case SK_STATUS_INT:
	case SK_STATUS_TIME: return sizeof(int64_t);
	case SK_STATUS_ENUM: return sizeof(int);
	case SK_STATUS_STRLIST: return sizeof(sk_strlist);
	case SK_STATUS_OBJECT:
	case SK_STATUS_MIGRATION: return r->item_size;
	}
	return 0;
}

static void
mark(bool *covered, size_t size, size_t at, size_t len, const char *key)
{
	ck_assert_msg(at + len <= size, "%s: past the struct", key);
	for (size_t i = at; i < at + len; i++) {
		ck_assert_msg(!covered[i], "%s: two rows on one member", key);
		covered[i] = true;
	}
}

/* The rows cover the struct of size bytes but for padding: no gap is as
 * wide as the member after it is aligned (a member of 8 bytes has no row
 * when a gap of 8 is left). */
static void
assert_covers(const sk_status_row *rows, size_t size, const char *what)
{
	bool *covered = sk_calloc(size, 1);
	size_t gap = 0;

	for (const sk_status_row *r = rows; r->key != NULL; r++) {
		mark(covered, size, r->offset, row_size(r), r->key);
		if (r->kind == SK_STATUS_ARRAY)
			mark(covered, size, r->count_offset, sizeof(size_t), r->key);
		if (r->kind == SK_STATUS_OBJECT)
			assert_covers(r->rows, r->item_size, r->key);
		if (r->kind == SK_STATUS_ARRAY)
			assert_covers(r->rows, r->item_size, r->key);
	}
	for (size_t i = 0; i <= size; i++) {
		if (i < size && !covered[i]) {
			gap++;
			continue;
		}
		ck_assert_msg(gap < sizeof(int64_t), "%s: %zu bytes before offset %zu have no row",
		        what, gap, i);
		gap = 0;
	}
	free(covered);
}

START_TEST(test_rows_cover_the_struct)
{
	assert_covers(sk_status_rows, sizeof(sk_userspace_status), "status");
}
END_TEST

/* ---- equality sees every row ---- */

/* Changes the leaf rows of rows one at a time in a copy of us's status
 * (obj: the part of that copy the rows describe), each change must make the
 * copy unequal, and be undone. */
static void assert_each_row_counts(
        const sk_status_row *rows, void *obj, sk_userspace_status *copy, const sk_userspace *us);

static void
assert_leaf_counts(
        const sk_status_row *r, void *obj, sk_userspace_status *copy, const sk_userspace *us)
{
	char **s;
	int64_t *i;
	int *e;

	switch (r->kind) {
	case SK_STATUS_STR:
		s = SK_STATUS_AT(r, obj, char *);
		(*s)[0] = 'X';
		ck_assert_msg(!sk_userspace_status_equal(copy, &us->status), "%s", r->key);
		(*s)[0] = 'v';
		break;
	case SK_STATUS_INT:
	case SK_STATUS_TIME:
		i = SK_STATUS_AT(r, obj, int64_t);
		(*i)++;
		ck_assert_msg(!sk_userspace_status_equal(copy, &us->status), "%s", r->key);
		(*i)--;
		break;
	case SK_STATUS_ENUM:
		e = SK_STATUS_AT(r, obj, int);
		(*e)--;
		ck_assert_msg(!sk_userspace_status_equal(copy, &us->status), "%s", r->key);
		(*e)++;
		break;
	case SK_STATUS_ARRAY:
		assert_each_row_counts(r->rows, *SK_STATUS_AT(r, obj, char *), copy, us);
		break;
	case SK_STATUS_STRLIST:
		s = &SK_STATUS_AT(r, obj, sk_strlist)->items[1];
		(*s)[0] = 'X';
		ck_assert_msg(!sk_userspace_status_equal(copy, &us->status), "%s", r->key);
		(*s)[0] = 'v';
		break;
	case SK_STATUS_OBJECT:
		assert_each_row_counts(r->rows, SK_STATUS_AT(r, obj, void), copy, us);
		break;
	case SK_STATUS_MIGRATION:
		SK_STATUS_AT(r, obj, sk_migration_status)->files_done++;
		ck_assert_msg(!sk_userspace_status_equal(copy, &us->status), "%s", r->key);
		SK_STATUS_AT(r, obj, sk_migration_status)->files_done--;
		break;
	}
	ck_assert_msg(sk_userspace_status_equal(copy, &us->status), "%s: not undone", r->key);
}

static void
assert_each_row_counts(
        const sk_status_row *rows, void *obj, sk_userspace_status *copy, const sk_userspace *us)
{
	for (const sk_status_row *r = rows; r->key != NULL; r++)
		assert_leaf_counts(r, obj, copy, us);
}

START_TEST(test_copy_and_equal)
{
	sk_userspace *us = full_space(true);
	sk_userspace_status copy;

	sk_userspace_status_copy(&copy, &us->status);
	ck_assert(sk_userspace_status_equal(&copy, &us->status));
	assert_each_row_counts(sk_status_rows, &copy, &copy, us);
	sk_userspace_status_dispose(&copy);
	sk_userspace_free(us);
}
END_TEST

/* ---- every codec keeps every row ---- */

static void
assert_same_status(const sk_userspace *want, const sk_userspace *got, const char *codec)
{
	json_t *a = sk_userspace_status_to_json(&want->status);
	json_t *b = sk_userspace_status_to_json(&got->status);
	char *ta = json_dumps(a, JSON_SORT_KEYS), *tb = json_dumps(b, JSON_SORT_KEYS);

	ck_assert_msg(sk_userspace_status_equal(&want->status, &got->status),
	        "%s changed the status:\nwant %s\ngot  %s", codec, ta, tb);
	free(ta);
	free(tb);
	json_decref(a);
	json_decref(b);
}

START_TEST(test_json_round_trip)
{
	sk_userspace *us = full_space(true), *back = NULL;
	json_t *j = sk_userspace_to_json(us);
	sk_error err = { 0 };

	ck_assert_msg(sk_userspace_decode(j, &back, &err) == 0, "decode: %s", err.message);
	assert_same_status(us, back, "JSON");
	json_decref(j);
	sk_userspace_free(back);
	sk_userspace_free(us);
}
END_TEST

static void
bson_round_trip(bool rare)
{
	sk_userspace *us = full_space(rare), *fast = NULL, *general = NULL, *both = NULL;
	sk_error err = { 0 };
	bson_t *doc = sk_store_doc_from_userspace(us, &err);

	ck_assert_msg(doc != NULL, "encode: %s", err.message);
	ck_assert_msg(sk_store_userspace_from_doc_general(doc, &general, &err) == 0, "general: %s",
	        err.message);
	assert_same_status(us, general, "the stored document (general reader)");
	ck_assert_msg(sk_store_userspace_from_doc(doc, &both, &err) == 0, "read: %s", err.message);
	assert_same_status(us, both, "the stored document");
	if (!rare) {
		ck_assert_int_eq(sk_store_userspace_read(doc, &fast), 0);
		assert_same_status(us, fast, "the stored document (direct reader)");
	}
	bson_destroy(doc);
	sk_userspace_free(fast);
	sk_userspace_free(general);
	sk_userspace_free(both);
	sk_userspace_free(us);
}

START_TEST(test_bson_round_trip)
{
	bson_round_trip(true);
	bson_round_trip(false);
}
END_TEST

START_TEST(test_packed_round_trip)
{
	sk_userspace *us = full_space(true), *back = NULL;
	sk_error err = { 0 };
	sk_packed_userspace *p = sk_store_pack(us, &err);

	ck_assert_msg(p != NULL, "pack: %s", err.message);
	ck_assert_msg(sk_store_unpack(p, &back, &err) == 0, "unpack: %s", err.message);
	assert_same_status(us, back, "the packed cache");
	sk_packed_free(p);
	sk_userspace_free(back);
	sk_userspace_free(us);
}
END_TEST

Suite *
sk_suite_status_table(void)
{
	Suite *s = suite_create("status_table");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_rows_cover_the_struct);
	tcase_add_test(tc, test_copy_and_equal);
	tcase_add_test(tc, test_json_round_trip);
	tcase_add_test(tc, test_bson_round_trip);
	tcase_add_test(tc, test_packed_round_trip);
	suite_add_tcase(s, tc);
	return s;
}
