/*
 * store/codec: the UserSpace object as the document stored in MongoDB.
 *
 * The API JSON (sk_userspace_to_json) with `_id` = metadata.name, except:
 * - maps whose keys users choose (metadata.labels, metadata.annotations and
 *   the spec's MAP fields) become arrays of {"k": key, "v": value}, since
 *   keys like "app.kubernetes.io/name" cannot be BSON field names;
 * - store-owned metadata is typed: generation and resourceVersion int64,
 *   creationTimestamp and deletionTimestamp BSON dates, uid and finalizers
 *   as they are. Reading strips them from the JSON before decoding and sets
 *   the struct fields from the BSON values.
 */
#include <stdlib.h>
#include <string.h>

#include "../api/schema.h"
#include "store_int.h"

/* The user-keyed maps of metadata; those of spec are the MAP rows of sk_spec_fields. */
static const char *const meta_maps[] = { "metadata.labels", "metadata.annotations" };

static const char *const owned_fields[] = { "uid", "generation", "resourceVersion",
	"creationTimestamp", "deletionTimestamp", "finalizers" };

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

static json_t *
map_to_pairs(json_t *obj)
{
	json_t *arr = json_array(), *v;
	const char *k;

	json_object_foreach(obj, k, v)
	{
		json_array_append_new(arr, json_pack("{s:s,s:O}", "k", k, "v", v));
	}
	return arr;
}

static json_t *
pairs_to_map(json_t *arr)
{
	json_t *obj = json_object(), *item;
	size_t i;

	json_array_foreach(arr, i, item)
	{
		const char *k = json_string_value(json_object_get(item, "k"));
		json_t *v = json_object_get(item, "v");
		if (k != NULL && v != NULL)
			json_object_set(obj, k, v);
	}
	return obj;
}

static void
convert_map(json_t *root, const char *path, bool to_pairs)
{
	const char *leaf;
	json_t *parent = sk_json_parent(root, path, false, &leaf);
	json_t *v = json_object_get(parent, leaf);

	if (to_pairs && json_is_object(v))
		json_object_set_new(parent, leaf, map_to_pairs(v));
	else if (!to_pairs && json_is_array(v))
		json_object_set_new(parent, leaf, pairs_to_map(v));
}

/* Converts every user-keyed map to pairs (to_pairs) or back. */
static void
convert_maps(json_t *root, bool to_pairs)
{
	for (size_t i = 0; i < N_ELEMS(meta_maps); i++)
		convert_map(root, meta_maps[i], to_pairs);
	for (size_t i = 0; i < sk_spec_n_fields; i++) {
		if (sk_spec_fields[i].type == SK_FIELD_MAP)
			convert_map(root, sk_spec_fields[i].path, to_pairs);
	}
}

/* Keys that begin with '$' or contain '.' must never reach MongoDB. */
static const char *
unsafe_key(json_t *v)
{
	const char *k, *bad;
	json_t *child;
	size_t i;

	if (json_is_object(v)) {
		json_object_foreach(v, k, child)
		{
			if (k[0] == '$' || strchr(k, '.') != NULL)
				return k;
			if ((bad = unsafe_key(child)) != NULL)
				return bad;
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, child)
		{
			if ((bad = unsafe_key(child)) != NULL)
				return bad;
		}
	}
	return NULL;
}

static json_t *
ext_int64(int64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lld", (long long)v);
	return json_pack("{s:s}", "$numberLong", buf);
}

static json_t *
ext_date(int64_t ms)
{
	return json_pack("{s:o}", "$date", ext_int64(ms));
}

static void
set_owned_fields(json_t *meta, const sk_object_meta *m)
{
	json_t *fin = json_array();

	for (size_t i = 0; i < N_ELEMS(owned_fields); i++)
		json_object_del(meta, owned_fields[i]);
	if (m->uid)
		json_object_set_new(meta, "uid", json_string(m->uid));
	json_object_set_new(meta, "generation", ext_int64(m->generation));
	json_object_set_new(meta, "resourceVersion", ext_int64(m->resource_version));
	if (m->creation_ms)
		json_object_set_new(meta, "creationTimestamp", ext_date(m->creation_ms));
	if (m->deletion_ms)
		json_object_set_new(meta, "deletionTimestamp", ext_date(m->deletion_ms));
	for (size_t i = 0; i < m->n_finalizers; i++)
		json_array_append_new(fin, json_string(m->finalizers[i]));
	json_object_set_new(meta, "finalizers", fin);
}

/* The int64 of the codec's {"$numberLong": "n"} wrapper. */
static bool
ext_int64_value(json_t *v, int64_t *out)
{
	json_t *s = json_object_get(v, "$numberLong");
	char *end;

	if (json_object_size(v) != 1 || !json_is_string(s))
		return false;
	*out = strtoll(json_string_value(s), &end, 10);
	return *end == '\0';
}

static bool append_json(bson_t *b, const char *key, json_t *v);

static bool
append_object(bson_t *b, const char *key, json_t *v)
{
	json_t *d = json_object_get(v, "$date"), *item;
	bson_t child;
	const char *k;
	int64_t n;
	bool ok = true;

	if (ext_int64_value(v, &n))
		return bson_append_int64(b, key, -1, n);
	if (json_object_size(v) == 1 && ext_int64_value(d, &n))
		return bson_append_date_time(b, key, -1, n);
	bson_append_document_begin(b, key, -1, &child);
	json_object_foreach(v, k, item)
	{
		ok = ok && append_json(&child, k, item);
	}
	return bson_append_document_end(b, &child) && ok;
}

static bool
append_array(bson_t *b, const char *key, json_t *v)
{
	bson_t child;
	json_t *item;
	size_t i;
	bool ok = true;

	bson_append_array_begin(b, key, -1, &child);
	json_array_foreach(v, i, item)
	{
		char buf[16];
		const char *k;

		bson_uint32_to_string((uint32_t)i, &k, buf, sizeof(buf));
		ok = ok && append_json(&child, k, item);
	}
	return bson_append_array_end(b, &child) && ok;
}

/* Appends v as bson_new_from_json would read its JSON text (integers as
 * int32 when they fit, the codec's extended-JSON wrappers as typed values)
 * without printing and parsing that text. */
static bool
append_json(bson_t *b, const char *key, json_t *v)
{
	json_int_t n;

	switch (json_typeof(v)) {
	case JSON_OBJECT: return append_object(b, key, v);
	case JSON_ARRAY: return append_array(b, key, v);
	case JSON_STRING:
		return bson_append_utf8(
		        b, key, -1, json_string_value(v), (int)json_string_length(v));
	case JSON_INTEGER:
		n = json_integer_value(v);
		if (n >= INT32_MIN && n <= INT32_MAX)
			return bson_append_int32(b, key, -1, (int32_t)n);
		return bson_append_int64(b, key, -1, n);
	case JSON_REAL: return bson_append_double(b, key, -1, json_real_value(v));
	case JSON_TRUE:
	case JSON_FALSE: return bson_append_bool(b, key, -1, json_is_true(v));
	default: return bson_append_null(b, key, -1);
	}
}

static bson_t *
json_to_bson(json_t *root)
{
	bson_t *doc = bson_new();
	const char *k;
	json_t *v;
	bool ok = true;

	json_object_foreach(root, k, v)
	{
		ok = ok && append_json(doc, k, v);
	}
	if (!ok) {
		bson_destroy(doc);
		return NULL;
	}
	return doc;
}

bson_t *
sk_store_doc_from_userspace(const sk_userspace *us, sk_error *err)
{
	json_t *api = sk_userspace_to_json(us), *root = NULL, *meta;
	const char *bad;
	bson_t *doc = NULL;

	if (api == NULL || !json_is_object(json_object_get(api, "metadata"))) {
		sk_error_set(err, SK_EINVALID, "userspace %s: cannot encode", us->meta.name);
		goto done;
	}
	convert_maps(api, true);
	if ((bad = unsafe_key(api)) != NULL) {
		sk_error_set(err, SK_EINVALID,
		        "userspace %s: key \"%s\" cannot be stored "
		        "(keys must not begin with '$' or contain '.')",
		        us->meta.name, bad);
		goto done;
	}
	root = json_pack("{s:s}", "_id", us->meta.name);
	json_object_update(root, api);
	meta = json_object_get(root, "metadata");
	set_owned_fields(meta, &us->meta);
	doc = json_to_bson(root);
	if (doc == NULL)
		sk_error_set(err, SK_EINVALID, "userspace %s: cannot encode as BSON (too large)",
		        us->meta.name);
done:
	json_decref(root);
	json_decref(api);
	return doc;
}

static json_t *iter_to_json(bson_iter_t *it, bool array);

/* One value as jansson, without the extended-JSON text round trip: the
 * types the codec writes map one to one, dates become {"$date": ms} (read
 * as such by the decoder), other types null. NULL: a string not UTF-8. */
static json_t *
value_to_json(bson_iter_t *it)
{
	json_t *v;
	bson_iter_t child;
	uint32_t len;
	const char *s;

	switch (bson_iter_type(it)) {
	case BSON_TYPE_UTF8: s = bson_iter_utf8(it, &len); return json_stringn(s, len);
	case BSON_TYPE_INT32: return json_integer(bson_iter_int32(it));
	case BSON_TYPE_INT64: return json_integer(bson_iter_int64(it));
	case BSON_TYPE_DOUBLE: /* json_real: NULL for NaN and inf */
		v = json_real(bson_iter_double(it));
		return v ? v : json_null();
	case BSON_TYPE_BOOL: return json_boolean(bson_iter_bool(it));
	case BSON_TYPE_DATE_TIME:
		return json_pack("{s:I}", "$date", (json_int_t)bson_iter_date_time(it));
	case BSON_TYPE_DOCUMENT:
	case BSON_TYPE_ARRAY:
		if (!bson_iter_recurse(it, &child))
			return NULL;
		return iter_to_json(&child, BSON_ITER_HOLDS_ARRAY(it));
	default: return json_null();
	}
}

static json_t *
iter_to_json(bson_iter_t *it, bool array)
{
	json_t *out = array ? json_array() : json_object();

	while (bson_iter_next(it)) {
		json_t *v = value_to_json(it);
		int bad = v == NULL;

		if (!bad)
			bad = array ? json_array_append_new(out, v)
			            : json_object_set_new(out, bson_iter_key(it), v);
		if (bad) {
			json_decref(out);
			return NULL;
		}
	}
	return out;
}

/* The general path: the document as jansson, then sk_userspace_decode. */
static int
from_doc_general(const bson_t *doc, sk_userspace **out, sk_error *err)
{
	bson_iter_t it;
	json_t *root = bson_iter_init(&it, doc) ? iter_to_json(&it, false) : NULL;
	json_t *meta = json_object_get(root, "metadata");
	int rc = 0;

	*out = NULL;
	if (!json_is_object(meta)) {
		rc = sk_error_set(err, SK_EINVALID, "stored userspace: not an object document");
		goto done;
	}
	json_object_del(root, "_id");
	for (size_t i = 0; i < N_ELEMS(owned_fields); i++)
		json_object_del(meta, owned_fields[i]);
	convert_maps(root, false);
	rc = sk_userspace_decode(root, out, err);
	if (rc != 0) {
		sk_error_prefix(err, "stored userspace");
		goto done;
	}
	sk_store_read_owned_fields(doc, &(*out)->meta);
done:
	json_decref(root);
	return rc;
}

int
sk_store_userspace_from_doc(const bson_t *doc, sk_userspace **out, sk_error *err)
{
	if (sk_store_userspace_read(doc, out) == 0)
		return 0;
	return from_doc_general(doc, out, err);
}

int
sk_store_userspace_from_doc_general(const bson_t *doc, sk_userspace **out, sk_error *err)
{
	return from_doc_general(doc, out, err);
}
