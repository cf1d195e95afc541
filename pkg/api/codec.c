/* api/codec: UserSpace <-> jansson (the stored and printed shape), defaults applied on
 * decode. The spec is encoded and decoded row by row from sk_spec_fields (schema.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "kvlist.h"
#include "meta.h"
#include "migration.h"
#include "schema.h"
#include "status.h"
#include "storage.h"
#include "strlist.h"
#include "userspace.h"

/* ---- encode ---- */

void
sk_json_set_str(json_t *o, const char *key, const char *v)
{
	if (v != NULL)
		json_object_set_new(o, key, json_string(v));
}

void
sk_json_set_time(json_t *o, const char *key, int64_t ms)
{
	char buf[64];

	if (ms == 0)
		return;
	sk_time_format(ms, buf, sizeof(buf));
	json_object_set_new(o, key, json_string(buf));
}

json_t *
sk_meta_to_json(const sk_object_meta *m)
{
	json_t *o = json_object();

	sk_json_set_str(o, "name", m->name);
	if (m->labels.len > 0)
		json_object_set_new(o, "labels", sk_kvlist_to_json(&m->labels));
	if (m->annotations.len > 0)
		json_object_set_new(o, "annotations", sk_kvlist_to_json(&m->annotations));
	sk_json_set_str(o, "uid", m->uid);
	if (m->generation != 0)
		json_object_set_new(o, "generation", json_integer(m->generation));
	if (m->resource_version != 0)
		json_object_set_new(o, "resourceVersion", json_integer(m->resource_version));
	sk_json_set_time(o, "creationTimestamp", m->creation_ms);
	sk_json_set_time(o, "deletionTimestamp", m->deletion_ms);
	if (m->n_finalizers > 0) {
		json_t *a = json_array();
		for (size_t i = 0; i < m->n_finalizers; i++)
			json_array_append_new(a, json_string(m->finalizers[i]));
		json_object_set_new(o, "finalizers", a);
	}
	return o;
}

static json_t *
duration_json(int64_t ms)
{
	char buf[64];

	sk_duration_format(ms, buf, sizeof(buf));
	return json_string(buf);
}

/* A LIST field: its strings, or [default] when empty (NULL without one). */
static json_t *
strlist_json(const sk_field *f, const sk_strlist *l)
{
	json_t *a = json_array();

	for (size_t i = 0; i < l->len; i++)
		json_array_append_new(a, json_string(l->items[i]));
	if (l->len == 0 && f->def != NULL)
		json_array_append_new(a, json_string(f->def));
	if (l->len == 0 && f->def == NULL) { /* unset, left out */
		json_decref(a);
		return NULL;
	}
	return a;
}

/* The JSON value of one field (new reference); NULL leaves it out: unset
 * INT and MAP fields. Unset STRING and DURATION fields are their default. */
static json_t *
field_to_json(const sk_field *f, const sk_userspace_spec *s)
{
	const char *str;
	int64_t n = sk_field_get_int(f, s);

	switch (f->type) {
	case SK_FIELD_STRING:
		str = *SK_FIELD_AT(f, s, char *const);
		str = str != NULL ? str : f->def;
		return str != NULL ? json_string(str) : NULL;
	case SK_FIELD_ENUM:
		str = sk_field_enum_name(f, (int)n);
		return json_string(str != NULL ? str : f->def);
	case SK_FIELD_INT: return n != 0 ? json_integer(n) : NULL;
	case SK_FIELD_BOOL: return json_boolean(n);
	case SK_FIELD_DURATION: /* 0 is a value where the row allows it (min 0) */
		return duration_json(n != 0 || f->min == 0 ? n : sk_field_default_int(f));
	case SK_FIELD_MAP:
		if (SK_FIELD_AT(f, s, const sk_kvlist)->len == 0)
			return NULL;
		return sk_kvlist_to_json(SK_FIELD_AT(f, s, const sk_kvlist));
	case SK_FIELD_LIST: return strlist_json(f, SK_FIELD_AT(f, s, const sk_strlist));
	}
	return NULL;
}

json_t *
sk_userspace_spec_to_json(const sk_userspace_spec *s)
{
	json_t *o = json_object();

	for (size_t i = 0; i < sk_spec_n_fields; i++) {
		const sk_field *f = &sk_spec_fields[i];
		json_t *v = field_to_json(f, s), *parent;
		const char *leaf;

		if (v == NULL)
			continue;
		parent = sk_json_parent(o, f->path + strlen("spec."), true, &leaf);
		json_object_set_new(parent, leaf, v);
	}
	return o;
}

/* ---- the status, by its rows (status.c) ---- */

static json_t *rows_to_json(const sk_status_row *rows, const void *obj);

static size_t
row_count(const sk_status_row *r, const void *obj)
{
	return *(const size_t *)(const void *)((const char *)obj + r->count_offset);
}

static void
array_to_json(json_t *o, const sk_status_row *r, const void *obj)
{
	const char *items = *SK_STATUS_AT(r, obj, char *const);
	size_t n = row_count(r, obj);
	json_t *a;

	if (n == 0)
		return;
	a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, rows_to_json(r->rows, items + i * r->item_size));
	json_object_set_new(o, r->key, a);
}

static void
object_to_json(json_t *o, const sk_status_row *r, const void *obj)
{
	const void *part = SK_STATUS_AT(r, obj, const void);
	json_t *x;

	if (!r->present(part))
		return;
	x = rows_to_json(r->rows, part);
	json_object_set_new(o, r->key, r->inner != NULL ? json_pack("{s:o}", r->inner, x) : x);
}

static void
strlist_to_json(json_t *o, const char *key, const sk_strlist *l)
{
	json_t *a;

	if (l->len == 0)
		return;
	a = json_array();
	for (size_t i = 0; i < l->len; i++)
		json_array_append_new(a, json_string(l->items[i]));
	json_object_set_new(o, key, a);
}

static void
row_to_json(json_t *o, const sk_status_row *r, const void *obj)
{
	int64_t n;
	int e;

	switch (r->kind) {
	case SK_STATUS_STR: sk_json_set_str(o, r->key, *SK_STATUS_AT(r, obj, char *const)); break;
	case SK_STATUS_INT:
		n = *SK_STATUS_AT(r, obj, const int64_t);
		if (n != 0 || r->always)
			json_object_set_new(o, r->key, json_integer((json_int_t)n));
		break;
	case SK_STATUS_TIME:
		sk_json_set_time(o, r->key, *SK_STATUS_AT(r, obj, const int64_t));
		break;
	case SK_STATUS_ENUM:
		e = *SK_STATUS_AT(r, obj, const int);
		if (e != 0)
			json_object_set_new(o, r->key, json_string(r->name(e)));
		break;
	case SK_STATUS_ARRAY: array_to_json(o, r, obj); break;
	case SK_STATUS_STRLIST:
		strlist_to_json(o, r->key, SK_STATUS_AT(r, obj, const sk_strlist));
		break;
	case SK_STATUS_OBJECT: object_to_json(o, r, obj); break;
	case SK_STATUS_MIGRATION:
		if (SK_STATUS_AT(r, obj, const sk_migration_status)->phase != SK_MIG_NONE)
			json_object_set_new(o, r->key,
			        sk_migration_to_json(
			                SK_STATUS_AT(r, obj, const sk_migration_status)));
		break;
	}
}

static json_t *
rows_to_json(const sk_status_row *rows, const void *obj)
{
	json_t *o = json_object();

	for (const sk_status_row *r = rows; r->key != NULL; r++)
		row_to_json(o, r, obj);
	return o;
}

json_t *
sk_userspace_status_to_json(const sk_userspace_status *st)
{
	return rows_to_json(sk_status_rows, st);
}

json_t *
sk_userspace_to_json(const sk_userspace *us)
{
	json_t *o = json_object();
	json_t *st = sk_userspace_status_to_json(&us->status);

	json_object_set_new(o, "apiVersion", json_string(SK_API_VERSION));
	json_object_set_new(o, "kind", json_string(SK_KIND_USERSPACE));
	json_object_set_new(o, "metadata", sk_meta_to_json(&us->meta));
	json_object_set_new(o, "spec", sk_userspace_spec_to_json(&us->spec));
	if (json_object_size(st) > 0)
		json_object_set(o, "status", st);
	json_decref(st);
	return o;
}

/* ---- decode (lenient about unknown fields; strictness is the validator's job) ---- */

typedef struct dctx {
	sk_error *err;
	int rc;
} dctx;

static void
dfail(dctx *c, const char *path, const char *what)
{
	if (c->rc == SK_OK)
		c->rc = sk_error_set(c->err, SK_EINVALID, "%s: %s", path, what);
}

static char *
get_str(dctx *c, json_t *o, const char *key, const char *path)
{
	json_t *v = json_object_get(o, key);

	if (v == NULL || json_is_null(v))
		return NULL;
	if (!json_is_string(v)) {
		dfail(c, path, "must be a string");
		return NULL;
	}
	return sk_strdup(json_string_value(v));
}

/* A number as jansson or MongoDB extended JSON ({"$numberLong": "5"}), or a decimal string. */
static bool
number_value(json_t *v, int64_t *out)
{
	const char *s;
	char *end;

	if (json_is_object(v)) {
		v = json_object_get(v, "$numberLong") ? json_object_get(v, "$numberLong")
		                                      : json_object_get(v, "$numberInt");
	}
	if (!json_is_string(v))
		return sk_json_int(v, out);
	s = json_string_value(v);
	*out = strtoll(s, &end, 10);
	return *end == '\0' && end != s;
}

static int64_t
get_int(dctx *c, json_t *o, const char *key, const char *path)
{
	json_t *v = json_object_get(o, key);
	int64_t n = 0;

	if (v == NULL || json_is_null(v))
		return 0;
	if (!number_value(v, &n))
		dfail(c, path, "must be an integer");
	return n;
}

/* RFC 3339 string, integer ms, or a MongoDB extended-JSON {"$date": ...}. */
static int64_t
get_time(dctx *c, json_t *o, const char *key, const char *path)
{
	json_t *v = json_object_get(o, key);
	int64_t ms = 0;

	if (json_is_object(v))
		v = json_object_get(v, "$date");
	if (v == NULL || json_is_null(v))
		return 0;
	if (json_is_string(v)) {
		if (sk_time_parse(json_string_value(v), &ms) != SK_OK)
			dfail(c, path, "must be an RFC 3339 time");
		return ms;
	}
	if (!number_value(v, &ms))
		dfail(c, path, "must be an RFC 3339 time");
	return ms;
}

static int64_t
get_duration(dctx *c, json_t *o, const char *key, const char *path, int64_t def)
{
	json_t *v = json_object_get(o, key);
	int64_t ms = def;

	if (v == NULL || json_is_null(v))
		return def;
	if (json_is_string(v)) {
		if (sk_duration_parse(json_string_value(v), &ms) != SK_OK)
			dfail(c, path, "must be a duration");
		return ms;
	}
	if (!sk_json_int(v, &ms))
		dfail(c, path, "must be a duration");
	return ms;
}

static bool
get_bool(dctx *c, json_t *o, const char *key, const char *path, bool def)
{
	json_t *v = json_object_get(o, key);

	if (v == NULL || json_is_null(v))
		return def;
	if (!json_is_boolean(v)) {
		dfail(c, path, "must be a boolean");
		return def;
	}
	return json_is_true(v);
}

/* The C value of an ENUM field; def when absent. */
static int
get_enum(dctx *c, json_t *o, const char *key, const sk_field *f, int def)
{
	json_t *v = json_object_get(o, key);
	int e;

	if (v == NULL || json_is_null(v))
		return def;
	if (sk_field_enum_value(f, json_string_value(v), &e))
		return e;
	dfail(c, f->path, "unknown value");
	return def;
}

static void
get_kvlist(dctx *c, json_t *o, const char *key, const char *path, sk_kvlist *out)
{
	json_t *m = json_object_get(o, key);
	const char *k;
	json_t *v;

	if (m == NULL || json_is_null(m))
		return;
	if (!json_is_object(m)) {
		dfail(c, path, "must be an object");
		return;
	}
	json_object_foreach(m, k, v)
	{
		if (!json_is_string(v)) {
			dfail(c, path, "values must be strings");
			continue;
		}
		sk_kvlist_set(out, k, json_string_value(v));
	}
}

static void
decode_meta(dctx *c, json_t *m, sk_object_meta *out)
{
	json_t *fin = json_object_get(m, "finalizers");

	out->name = get_str(c, m, "name", "metadata.name");
	get_kvlist(c, m, "labels", "metadata.labels", &out->labels);
	get_kvlist(c, m, "annotations", "metadata.annotations", &out->annotations);
	out->uid = get_str(c, m, "uid", "metadata.uid");
	out->generation = get_int(c, m, "generation", "metadata.generation");
	out->resource_version = get_int(c, m, "resourceVersion", "metadata.resourceVersion");
	out->creation_ms = get_time(c, m, "creationTimestamp", "metadata.creationTimestamp");
	out->deletion_ms = get_time(c, m, "deletionTimestamp", "metadata.deletionTimestamp");
	if (fin != NULL && !json_is_null(fin) && !json_is_array(fin))
		dfail(c, "metadata.finalizers", "must be a list");
	if (json_is_array(fin) && json_array_size(fin) > 0) {
		out->finalizers = sk_calloc(json_array_size(fin), sizeof(char *));
		for (size_t i = 0; i < json_array_size(fin); i++) {
			json_t *f = json_array_get(fin, i);
			if (json_is_string(f))
				out->finalizers[out->n_finalizers++] =
				        sk_strdup(json_string_value(f));
		}
	}
}

int
sk_meta_decode(json_t *m, sk_object_meta *out, sk_error *err)
{
	dctx c = { err, SK_OK };

	decode_meta(&c, m, out);
	return c.rc;
}

static void
get_strlist(dctx *c, json_t *o, const char *key, const char *path, sk_strlist *out)
{
	json_t *a = json_object_get(o, key), *item;
	size_t i;

	if (a == NULL || json_is_null(a))
		return;
	if (!json_is_array(a)) {
		dfail(c, path, "must be a list of strings");
		return;
	}
	json_array_foreach(a, i, item)
	{
		if (json_is_string(item))
			sk_strlist_add(out, json_string_value(item));
		else
			dfail(c, path, "must be a list of strings");
	}
}

static void
decode_field(dctx *c, json_t *spec, const sk_field *f, sk_userspace_spec *out)
{
	const char *leaf;
	json_t *o = sk_json_parent(spec, f->path + strlen("spec."), false, &leaf);
	int64_t def = sk_field_default_int(f);

	switch (f->type) {
	case SK_FIELD_STRING: *SK_FIELD_AT(f, out, char *) = get_str(c, o, leaf, f->path); break;
	case SK_FIELD_ENUM: sk_field_set_int(f, out, get_enum(c, o, leaf, f, (int)def)); break;
	case SK_FIELD_INT: sk_field_set_int(f, out, get_int(c, o, leaf, f->path)); break;
	case SK_FIELD_BOOL: sk_field_set_int(f, out, get_bool(c, o, leaf, f->path, def)); break;
	case SK_FIELD_DURATION:
		sk_field_set_int(f, out, get_duration(c, o, leaf, f->path, def));
		break;
	case SK_FIELD_MAP: get_kvlist(c, o, leaf, f->path, SK_FIELD_AT(f, out, sk_kvlist)); break;
	case SK_FIELD_LIST:
		get_strlist(c, o, leaf, f->path, SK_FIELD_AT(f, out, sk_strlist));
		break;
	}
}

static void
decode_spec(dctx *c, json_t *s, sk_userspace_spec *out)
{
	for (size_t i = 0; i < sk_spec_n_fields; i++)
		decode_field(c, s, &sk_spec_fields[i], out);
}

static void decode_rows(dctx *c, const sk_status_row *rows, json_t *o, const char *path, void *out);

static void
decode_enum(dctx *c, const sk_status_row *r, json_t *o, const char *path, void *out)
{
	char *name = get_str(c, o, r->key, path);
	int v = 0; /* 0 is not written, but read by its name too (ObjectStorage) */

	while (name != NULL && v < r->n_values && strcmp(r->name(v), name) != 0)
		v++;
	if (name != NULL && v < r->n_values)
		*SK_STATUS_AT(r, out, int) = v;
	else if (name != NULL && name[0] != '\0')
		dfail(c, path, r->bad);
	free(name);
}

/* An array of strings (anything else: an error that names the path). */
static void
decode_strlist(dctx *c, json_t *a, const char *path, sk_strlist *out)
{
	size_t i;
	json_t *v;

	if (a == NULL || json_is_null(a))
		return;
	if (!json_is_array(a)) {
		dfail(c, path, "must be a list of strings");
		return;
	}
	json_array_foreach(a, i, v)
	{
		if (json_is_string(v))
			sk_strlist_add(out, json_string_value(v));
		else
			dfail(c, path, "must be a list of strings");
	}
}

/* The objects of an array, each to a new item (other entries skipped). */
static void
decode_array(dctx *c, const sk_status_row *r, json_t *a, const char *path, void *out)
{
	size_t *n = (size_t *)(void *)((char *)out + r->count_offset);
	char *items;

	if (!json_is_array(a) || json_array_size(a) == 0)
		return;
	items = sk_calloc(json_array_size(a), r->item_size);
	*SK_STATUS_AT(r, out, char *) = items;
	for (size_t i = 0; i < json_array_size(a); i++) {
		json_t *o = json_array_get(a, i);
		if (json_is_object(o))
			decode_rows(c, r->rows, o, path, items + (*n)++ * r->item_size);
	}
}

static void
decode_row(dctx *c, const sk_status_row *r, json_t *o, const char *parent, void *out)
{
	char path[128];
	json_t *v;

	snprintf(path, sizeof(path), "%s.%s", parent, r->key);
	switch (r->kind) {
	case SK_STATUS_STR: *SK_STATUS_AT(r, out, char *) = get_str(c, o, r->key, path); break;
	case SK_STATUS_INT: *SK_STATUS_AT(r, out, int64_t) = get_int(c, o, r->key, path); break;
	case SK_STATUS_TIME: *SK_STATUS_AT(r, out, int64_t) = get_time(c, o, r->key, path); break;
	case SK_STATUS_ENUM: decode_enum(c, r, o, path, out); break;
	case SK_STATUS_ARRAY: decode_array(c, r, json_object_get(o, r->key), path, out); break;
	case SK_STATUS_STRLIST:
		decode_strlist(
		        c, json_object_get(o, r->key), path, SK_STATUS_AT(r, out, sk_strlist));
		break;
	case SK_STATUS_OBJECT:
		v = json_object_get(o, r->key);
		if (r->inner != NULL) {
			v = json_object_get(v, r->inner);
			snprintf(path, sizeof(path), "%s.%s.%s", parent, r->key, r->inner);
		}
		if (json_is_object(v))
			decode_rows(c, r->rows, v, path, SK_STATUS_AT(r, out, void));
		break;
	case SK_STATUS_MIGRATION:
		if (c->rc == SK_OK)
			c->rc = sk_migration_from_json(json_object_get(o, r->key),
			        SK_STATUS_AT(r, out, sk_migration_status), c->err);
		break;
	}
}

static void
decode_rows(dctx *c, const sk_status_row *rows, json_t *o, const char *path, void *out)
{
	for (const sk_status_row *r = rows; r->key != NULL; r++)
		decode_row(c, r, o, path, out);
}

static void
decode_status(dctx *c, json_t *s, sk_userspace_status *out)
{
	decode_rows(c, sk_status_rows, s, "status", out);
}

int
sk_userspace_decode(json_t *root, sk_userspace **out, sk_error *err)
{
	dctx c = { err, SK_OK };
	sk_userspace *us;
	json_t *meta = json_object_get(root, "metadata");
	json_t *spec = json_object_get(root, "spec");
	json_t *status = json_object_get(root, "status");

	*out = NULL;
	if (!json_is_object(root))
		return sk_error_set(err, SK_EINVALID, "a UserSpace must be an object");
	if (!json_is_object(meta) || !json_is_string(json_object_get(meta, "name")))
		return sk_error_set(err, SK_EINVALID, "metadata.name: required");
	if (spec != NULL && !json_is_object(spec))
		return sk_error_set(err, SK_EINVALID, "spec: must be an object");
	us = sk_calloc(1, sizeof(*us));
	decode_meta(&c, meta, &us->meta);
	decode_spec(&c, spec, &us->spec);
	if (json_is_object(status))
		decode_status(&c, status, &us->status);
	sk_userspace_apply_defaults(us);
	if (c.rc != SK_OK) {
		sk_userspace_free(us);
		return c.rc;
	}
	*out = us;
	return SK_OK;
}
