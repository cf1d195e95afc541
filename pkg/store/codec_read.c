/*
 * store/codec_read: a stored document straight into the struct, without the
 * jansson tree in between (the read path of every get, list and informer
 * poll: BSON -> JSON -> struct cost about 9 us and ~150 allocations per
 * object, nearly all of it the tree).
 *
 * It reads what the codec writes (codec.c): strings, int32/int64, booleans,
 * dates, times and durations as text, [{k, v}] pairs for the user-keyed maps.
 * Anything else (a type the writer never uses, a value the general decoder
 * would reject, a status.migration, text that is not UTF-8) is left to the
 * general path (sk_store_userspace_from_doc: BSON -> JSON ->
 * sk_userspace_decode), which decides it exactly as before: this file
 * never decides what a document means, it only takes the common case faster.
 * test/unit/check_store_decode.c holds the two paths to the same result.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../api/schema.h"
#include "../api/status.h"
#include "store_int.h"

/* Whether jansson takes s as a string (what the general path's tree needs
 * of every key and string): ASCII at once, anything else asked of jansson. */
static bool
utf8_ok(const char *s, size_t len)
{
	json_t *t;

	for (size_t i = 0; i < len; i++) {
		if ((unsigned char)s[i] >= 0x80)
			goto ask;
	}
	return true;
ask:
	t = json_stringn(s, len);
	json_decref(t);
	return t != NULL;
}

/* Every key and string of a document UTF-8 as jansson reads it. */
static bool
doc_utf8_ok(bson_iter_t *it)
{
	bson_iter_t child;
	uint32_t len;
	const char *s;

	while (bson_iter_next(it)) {
		s = bson_iter_key(it);
		if (!utf8_ok(s, strlen(s)))
			return false;
		if (BSON_ITER_HOLDS_UTF8(it)) {
			s = bson_iter_utf8(it, &len);
			if (!utf8_ok(s, len))
				return false;
		} else if (BSON_ITER_HOLDS_DOCUMENT(it) || BSON_ITER_HOLDS_ARRAY(it)) {
			if (!bson_iter_recurse(it, &child) || !doc_utf8_ok(&child))
				return false;
		}
	}
	return true;
}

/* One read: slow once anything needs the general decoder. */
typedef struct rd {
	bool slow;
} rd;

/* BSON null reads as absent, as the JSON decoder reads null. */
static bool
absent(const bson_iter_t *it)
{
	return it == NULL || BSON_ITER_HOLDS_NULL(it);
}

/* A UTF-8 value without an embedded NUL (the general decoder reads C strings). */
static const char *
text(rd *r, const bson_iter_t *it)
{
	uint32_t len;
	const char *s;

	if (!BSON_ITER_HOLDS_UTF8(it)) {
		r->slow = true;
		return NULL;
	}
	s = bson_iter_utf8(it, &len);
	if (strlen(s) != len) {
		r->slow = true;
		return NULL;
	}
	return s;
}

static char *
r_str(rd *r, const bson_iter_t *it)
{
	return absent(it) ? NULL : sk_strdup(text(r, it));
}

static int64_t
r_int(rd *r, const bson_iter_t *it)
{
	if (absent(it))
		return 0;
	if (BSON_ITER_HOLDS_INT32(it) || BSON_ITER_HOLDS_INT64(it))
		return bson_iter_as_int64(it);
	r->slow = true;
	return 0;
}

/* RFC 3339 text (what the codec writes), a BSON date, or integer ms. */
static int64_t
r_time(rd *r, const bson_iter_t *it)
{
	int64_t ms = 0;

	if (absent(it))
		return 0;
	if (BSON_ITER_HOLDS_DATE_TIME(it))
		return bson_iter_date_time(it);
	if (!BSON_ITER_HOLDS_UTF8(it))
		return r_int(r, it);
	if (sk_time_parse(text(r, it), &ms) != SK_OK)
		r->slow = true;
	return ms;
}

/* [{k, v}] pairs of strings into l (a later k replaces an earlier one, as
 * the general path's object does). */
static void
r_pairs(rd *r, const bson_iter_t *it, sk_kvlist *l)
{
	bson_iter_t arr, item, kv;

	if (absent(it))
		return;
	if (!BSON_ITER_HOLDS_ARRAY(it) || !bson_iter_recurse(it, &arr)) {
		r->slow = true;
		return;
	}
	while (!r->slow && bson_iter_next(&arr)) {
		const char *k = NULL, *v = NULL;

		if (!BSON_ITER_HOLDS_DOCUMENT(&arr) || !bson_iter_recurse(&arr, &item)) {
			r->slow = true;
			break;
		}
		kv = item;
		if (bson_iter_find(&kv, "k"))
			k = text(r, &kv);
		kv = item;
		if (bson_iter_find(&kv, "v"))
			v = text(r, &kv);
		if (k == NULL || v == NULL)
			r->slow = true;
		else
			sk_kvlist_set(l, k, v);
	}
}

static void
r_strlist(rd *r, const bson_iter_t *it, sk_strlist *l)
{
	bson_iter_t arr;

	if (absent(it))
		return;
	if (!BSON_ITER_HOLDS_ARRAY(it) || !bson_iter_recurse(it, &arr)) {
		r->slow = true;
		return;
	}
	while (!r->slow && bson_iter_next(&arr)) {
		const char *s = text(r, &arr);
		if (s != NULL)
			sk_strlist_add(l, s);
	}
}

/* ---- spec: row by row of sk_spec_fields ---- */

static void
r_enum(rd *r, const bson_iter_t *it, const sk_field *f, sk_userspace_spec *out)
{
	const char *s = text(r, it);
	int e;

	if (s != NULL && sk_field_enum_value(f, s, &e))
		sk_field_set_int(f, out, e);
	else
		r->slow = true;
}

static void
r_duration(rd *r, const bson_iter_t *it, const sk_field *f, sk_userspace_spec *out)
{
	int64_t ms = 0;

	if (!BSON_ITER_HOLDS_UTF8(it))
		ms = r_int(r, it);
	else if (sk_duration_parse(text(r, it), &ms) != SK_OK)
		r->slow = true;
	sk_field_set_int(f, out, ms);
}

/* The value at it (NULL: absent) into f's member of out. */
static void
r_field(rd *r, const bson_iter_t *it, const sk_field *f, sk_userspace_spec *out)
{
	if (absent(it)) {
		if (f->type == SK_FIELD_ENUM || f->type == SK_FIELD_BOOL ||
		        f->type == SK_FIELD_DURATION)
			sk_field_set_int(f, out, sk_field_default_int(f));
		return;
	}
	switch (f->type) {
	case SK_FIELD_STRING: *SK_FIELD_AT(f, out, char *) = r_str(r, it); break;
	case SK_FIELD_ENUM: r_enum(r, it, f, out); break;
	case SK_FIELD_INT: sk_field_set_int(f, out, r_int(r, it)); break;
	case SK_FIELD_BOOL:
		if (BSON_ITER_HOLDS_BOOL(it))
			sk_field_set_int(f, out, bson_iter_bool(it));
		else
			r->slow = true;
		break;
	case SK_FIELD_DURATION: r_duration(r, it, f, out); break;
	case SK_FIELD_MAP: r_pairs(r, it, SK_FIELD_AT(f, out, sk_kvlist)); break;
	case SK_FIELD_LIST: r_strlist(r, it, SK_FIELD_AT(f, out, sk_strlist)); break;
	}
}

/* Walks one object of the spec once, each value to its row: rows [lo, hi)
 * are the ones below this object, their paths `off` bytes of prefix long
 * ("spec.", then "spec.lifecycle.", ...); rows of one object are adjacent
 * (schema.c). seen[i]: row i was given (twice: the general path's). */
static void
walk_spec(rd *r, const bson_iter_t *doc, size_t off, size_t lo, size_t hi, bool *seen,
        sk_userspace_spec *out)
{
	bson_iter_t it;

	if (!bson_iter_recurse(doc, &it)) {
		r->slow = true;
		return;
	}
	while (!r->slow && bson_iter_next(&it)) {
		const char *key = bson_iter_key(&it);
		size_t klen = strlen(key), clo = hi, chi = lo;
		const sk_field *f = NULL;

		for (size_t i = lo; i < hi && f == NULL; i++) {
			const char *p = sk_spec_fields[i].path + off;

			if (strncmp(p, key, klen) != 0)
				continue;
			if (p[klen] == '\0')
				f = &sk_spec_fields[i];
			else if (p[klen] == '.' && (clo == hi || i == chi)) {
				clo = clo == hi ? i : clo;
				chi = i + 1;
			} else if (p[klen] == '.') {
				r->slow = true; /* rows of one object apart: not this reader's */
			}
		}
		if (f != NULL && seen[f - sk_spec_fields]) {
			r->slow = true; /* given twice */
		} else if (f != NULL) {
			seen[f - sk_spec_fields] = true;
			r_field(r, &it, f, out);
		} else if (clo < chi && BSON_ITER_HOLDS_DOCUMENT(&it)) {
			walk_spec(r, &it, off + klen + 1, clo, chi, seen, out);
		}
	}
}

static void
r_spec(rd *r, const bson_iter_t *spec, sk_userspace_spec *out)
{
	bool seen[64] = { false };

	if (sk_spec_n_fields > 64) {
		r->slow = true;
		return;
	}
	if (spec != NULL)
		walk_spec(r, spec, strlen("spec."), 0, sk_spec_n_fields, seen, out);
	for (size_t i = 0; i < sk_spec_n_fields; i++) {
		if (!seen[i])
			r_field(r, NULL, &sk_spec_fields[i], out);
	}
}

/* ---- status: members by key, the rows of the status table (api/status.c) ---- */

/* The value at it into the member of out named by its key; false when the
 * key is not one of the leaf rows (STR, INT, TIME) of rows. A key given twice keeps the last value, as
 * the general path's object does. */
static bool
r_member(rd *r, const bson_iter_t *it, const sk_status_row *rows, void *out)
{
	const char *key = bson_iter_key(it);

	for (const sk_status_row *m = rows; m->key != NULL; m++) {
		if (m->kind > SK_STATUS_TIME || strcmp(key, m->key) != 0)
			continue;
		if (m->kind == SK_STATUS_STR) {
			free(*SK_STATUS_AT(m, out, char *));
			*SK_STATUS_AT(m, out, char *) = r_str(r, it);
		} else {
			*SK_STATUS_AT(m, out, int64_t) =
			        m->kind == SK_STATUS_INT ? r_int(r, it) : r_time(r, it);
		}
		return true;
	}
	return false;
}

/* An array of documents, each read by members into a new element of
 * *items (size bytes each); other elements are skipped, as the general path
 * skips them. An array given twice goes to the general path. */
static void
r_array(rd *r, const bson_iter_t *it, const sk_status_row *members, void **items, size_t *n,
        size_t size)
{
	bson_iter_t arr, doc;
	uint32_t count = 0;

	if (!BSON_ITER_HOLDS_ARRAY(it))
		return; /* ignored, as the general path ignores it */
	if (*items != NULL || !bson_iter_recurse(it, &arr)) {
		r->slow = true;
		return;
	}
	while (bson_iter_next(&arr))
		count++;
	if (count == 0 || !bson_iter_recurse(it, &arr))
		return;
	*items = sk_calloc(count, size);
	while (bson_iter_next(&arr)) {
		void *item = (char *)*items + *n * size;

		if (!BSON_ITER_HOLDS_DOCUMENT(&arr) || !bson_iter_recurse(&arr, &doc))
			continue;
		(*n)++;
		while (bson_iter_next(&doc))
			r_member(r, &doc, members, item);
	}
}

/* An object of rows (status.usage, status.network): its members, anything
 * else to the general path. */
static void
r_object(rd *r, const bson_iter_t *it, const sk_status_row *rows, void *out)
{
	bson_iter_t u;

	if (!BSON_ITER_HOLDS_DOCUMENT(it) || !bson_iter_recurse(it, &u)) {
		r->slow = true;
		return;
	}
	while (!r->slow && bson_iter_next(&u)) {
		if (!r_member(r, &u, rows, out))
			r->slow = true;
	}
}

static void
r_status(rd *r, const bson_iter_t *it, sk_userspace_status *out)
{
	bson_iter_t s;
	const char *phase;

	if (!bson_iter_recurse(it, &s)) {
		r->slow = true;
		return;
	}
	while (!r->slow && bson_iter_next(&s)) {
		const char *key = bson_iter_key(&s);

		if (r_member(r, &s, sk_status_rows, out))
			continue;
		if (strcmp(key, "phase") == 0 && !absent(&s)) {
			phase = text(r, &s);
			if (phase != NULL && phase[0] != '\0' &&
			        sk_phase_parse(phase, &out->phase) != SK_OK)
				r->slow = true;
		} else if (strcmp(key, "conditions") == 0) {
			r_array(r, &s, sk_condition_rows, (void **)&out->conditions,
			        &out->n_conditions, sizeof(sk_condition));
		} else if (strcmp(key, "drift") == 0) {
			r_array(r, &s, sk_drift_rows, (void **)&out->drift, &out->n_drift,
			        sizeof(sk_drift));
		} else if (strcmp(key, "migration") == 0 && !absent(&s)) {
			r->slow = true; /* rare: sk_migration_from_json decides it */
		} else if ((strcmp(key, "archive") == 0 || strcmp(key, "storage") == 0 ||
		                   strcmp(key, "snapshots") == 0) &&
		        !absent(&s)) {
			r->slow = true; /* rare: the JSON codec decides it */
		} else if (strcmp(key, "usage") == 0 && !absent(&s)) {
			r_object(r, &s, sk_usage_rows, &out->usage);
		} else if (strcmp(key, "network") == 0 && !absent(&s)) {
			r_object(r, &s, sk_network_status_rows, &out->network);
		}
	}
}

/* ---- the document ---- */

/* Which store-owned members of metadata were read: the first of each key
 * counts (as a search by path finds it). */
typedef struct owned_seen {
	bool uid, generation, rv, created, deleted, finalizers;
} owned_seen;

static void
r_finalizers(const bson_iter_t *it, sk_object_meta *m)
{
	bson_iter_t arr;

	if (!BSON_ITER_HOLDS_ARRAY(it) || !bson_iter_recurse(it, &arr))
		return;
	while (bson_iter_next(&arr)) {
		if (!BSON_ITER_HOLDS_UTF8(&arr))
			continue;
		m->finalizers = sk_realloc(m->finalizers, (m->n_finalizers + 1) * sizeof(char *));
		m->finalizers[m->n_finalizers++] = sk_strdup(bson_iter_utf8(&arr, NULL));
	}
}

/* A number as the codec stores it (int64; int32 and double read too), else 0. */
static int64_t
owned_int(const bson_iter_t *it)
{
	if (BSON_ITER_HOLDS_INT32(it) || BSON_ITER_HOLDS_INT64(it) || BSON_ITER_HOLDS_DOUBLE(it))
		return bson_iter_as_int64(it);
	return 0;
}

/* The store-owned member at it (typed BSON, codec.c) into m; false when
 * the key is not one of them. A value of another type reads as unset. */
static bool
r_owned(const bson_iter_t *it, sk_object_meta *m, owned_seen *seen)
{
	const char *key = bson_iter_key(it);
	bool *first = strcmp(key, "uid") == 0           ? &seen->uid
	        : strcmp(key, "generation") == 0        ? &seen->generation
	        : strcmp(key, "resourceVersion") == 0   ? &seen->rv
	        : strcmp(key, "creationTimestamp") == 0 ? &seen->created
	        : strcmp(key, "deletionTimestamp") == 0 ? &seen->deleted
	        : strcmp(key, "finalizers") == 0        ? &seen->finalizers
	                                                : NULL;
	bool date = BSON_ITER_HOLDS_DATE_TIME(it);

	if (first == NULL)
		return false;
	if (*first)
		return true;
	*first = true;
	if (first == &seen->uid)
		m->uid = BSON_ITER_HOLDS_UTF8(it) ? sk_strdup(bson_iter_utf8(it, NULL)) : NULL;
	else if (first == &seen->generation)
		m->generation = owned_int(it);
	else if (first == &seen->rv)
		m->resource_version = owned_int(it);
	else if (first == &seen->created)
		m->creation_ms = date ? bson_iter_date_time(it) : 0;
	else if (first == &seen->deleted)
		m->deletion_ms = date ? bson_iter_date_time(it) : 0;
	else
		r_finalizers(it, m);
	return true;
}

void
sk_store_read_owned_fields(const bson_t *doc, sk_object_meta *m)
{
	owned_seen seen = { false };
	bson_iter_t it, meta;

	free(m->uid);
	for (size_t i = 0; i < m->n_finalizers; i++)
		free(m->finalizers[i]);
	free(m->finalizers);
	m->uid = NULL;
	m->finalizers = NULL;
	m->n_finalizers = 0;
	m->generation = m->resource_version = m->creation_ms = m->deletion_ms = 0;
	if (!bson_iter_init_find(&it, doc, "metadata") || !BSON_ITER_HOLDS_DOCUMENT(&it) ||
	        !bson_iter_recurse(&it, &meta))
		return;
	while (bson_iter_next(&meta))
		r_owned(&meta, m, &seen);
}

static void
r_meta(rd *r, const bson_iter_t *it, sk_object_meta *out)
{
	owned_seen seen = { false };
	bson_iter_t m;

	if (!BSON_ITER_HOLDS_DOCUMENT(it) || !bson_iter_recurse(it, &m)) {
		r->slow = true;
		return;
	}
	while (!r->slow && bson_iter_next(&m)) {
		const char *key = bson_iter_key(&m);

		if (r_owned(&m, out, &seen)) {
			continue;
		} else if (strcmp(key, "name") == 0) {
			free(out->name);
			out->name = r_str(r, &m);
		} else if (strcmp(key, "labels") == 0) {
			r->slow = r->slow || out->labels.len > 0; /* given twice */
			r_pairs(r, &m, &out->labels);
		} else if (strcmp(key, "annotations") == 0) {
			r->slow = r->slow || out->annotations.len > 0;
			r_pairs(r, &m, &out->annotations);
		}
	}
	if (out->name == NULL)
		r->slow = true; /* "metadata.name: required" is the general path's to say */
}

/* The top-level members; false when one is missing or given twice. */
static bool
find_parts(const bson_t *doc, bson_iter_t *meta, bson_iter_t *spec, bson_iter_t *status,
        bool *has_spec, bool *has_status)
{
	bson_iter_t it;
	bool has_meta = false;

	*has_spec = *has_status = false;
	if (!bson_iter_init(&it, doc))
		return false;
	while (bson_iter_next(&it)) {
		const char *key = bson_iter_key(&it);
		bool *seen = strcmp(key, "metadata") == 0 ? &has_meta
		        : strcmp(key, "spec") == 0        ? has_spec
		        : strcmp(key, "status") == 0      ? has_status
		                                          : NULL;
		if (seen == NULL)
			continue;
		if (*seen)
			return false;
		*seen = true;
		*(seen == &has_meta ? meta : seen == has_spec ? spec : status) = it;
	}
	return has_meta;
}

int
sk_store_userspace_read(const bson_t *doc, sk_userspace **out)
{
	bson_iter_t meta, spec, status, all;
	bool has_spec, has_status;
	sk_userspace *us;
	rd r = { false };

	*out = NULL;
	if (!bson_iter_init(&all, doc) || !doc_utf8_ok(&all) ||
	        !find_parts(doc, &meta, &spec, &status, &has_spec, &has_status))
		return SK_EINVALID;
	if (has_spec && !BSON_ITER_HOLDS_DOCUMENT(&spec))
		return SK_EINVALID;
	us = sk_calloc(1, sizeof(*us));
	r_meta(&r, &meta, &us->meta);
	if (!r.slow)
		r_spec(&r, has_spec ? &spec : NULL, &us->spec);
	if (!r.slow && has_status && BSON_ITER_HOLDS_DOCUMENT(&status))
		r_status(&r, &status, &us->status);
	if (r.slow) {
		sk_userspace_free(us);
		return SK_EINVALID;
	}
	sk_userspace_apply_defaults(us);
	*out = us;
	return 0;
}
