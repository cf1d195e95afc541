/*
 * store/mongo_observation: shared provider lists (store.h).
 *
 * Parts live in "observations", one document per part and list:
 * {_id: "GROUP/PART/LISTED_MS", group, part, listedTime (date), writer, body
 * (the JSON text: metadata keys never become BSON field names)}. A part is
 * inserted once, which the _id index checks without a scan, and removed by
 * the writer's prune (one delete, one scan); a reader's get is one find.
 * Heads live in "observation_heads", {_id: GROUP, listedTime, writer,
 * body}, a handful of small documents, so the readers' polls scan little. A
 * head put replaces the head only when the stored one is older: the filter
 * asks for an older listedTime, so a newer or equal head makes the upsert's
 * insert hit the _id index instead.
 */
#include <stdlib.h>
#include <string.h>

#include "mongo_int.h"

static char *
part_key(const char *group, const char *part, int64_t listed_ms)
{
	return sk_asprintf("%s/%s/%lld", group, part, (long long)listed_ms);
}

int
sk_mongo_observation_put(sk_store *store, const char *group, const char *part, int64_t listed_ms,
        const char *writer, const char *body, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	sk_store_conn c = { 0 };
	char *key = part_key(group, part, listed_ms);
	bson_t *doc = BCON_NEW("_id", BCON_UTF8(key), "group", BCON_UTF8(group), "part",
	        BCON_UTF8(part), "listedTime", BCON_DATE_TIME(listed_ms), "writer",
	        BCON_UTF8(writer), "body", BCON_UTF8(body));
	bson_error_t berr;
	int rc = 0;

	sk_store_conn_open(s, &c, SK_COLL_OBSERVATIONS);
	if (!mongoc_collection_insert_one(c.coll, doc, NULL, NULL, &berr))
		rc = sk_store_is_duplicate(&berr)
		        ? sk_observation_exists(group, part, listed_ms, err)
		        : sk_store_fail(s, &berr, "write observation", err);
	sk_store_conn_close(s, &c);
	bson_destroy(doc);
	free(key);
	return rc;
}

/* One stored document (a part: its name is field `part`; a head: _id). */
static int
decode(const bson_t *doc, const char *name_field, sk_observation *out, sk_error *err)
{
	bson_iter_t it;
	const char *name = NULL, *writer = NULL, *body = NULL;
	int64_t listed_ms = 0;

	if (bson_iter_init_find(&it, doc, name_field) && BSON_ITER_HOLDS_UTF8(&it))
		name = bson_iter_utf8(&it, NULL);
	if (bson_iter_init_find(&it, doc, "listedTime") && BSON_ITER_HOLDS_DATE_TIME(&it))
		listed_ms = bson_iter_date_time(&it);
	if (bson_iter_init_find(&it, doc, "writer") && BSON_ITER_HOLDS_UTF8(&it))
		writer = bson_iter_utf8(&it, NULL);
	if (bson_iter_init_find(&it, doc, "body") && BSON_ITER_HOLDS_UTF8(&it))
		body = bson_iter_utf8(&it, NULL);
	if (name == NULL || body == NULL)
		return sk_error_set(err, SK_EINVALID, "observation without %s or body", name_field);
	return sk_observation_set(out, name, listed_ms, writer, body, err);
}

/* Puts out's items in the order of parts. */
static void
order_by(sk_observation_list *out, const char *const *parts, size_t n)
{
	size_t next = 0;

	for (size_t i = 0; i < n; i++)
		for (size_t k = next; k < out->len; k++)
			if (strcmp(out->items[k].id, parts[i]) == 0) {
				sk_observation t = out->items[next];
				out->items[next++] = out->items[k];
				out->items[k] = t;
				break;
			}
}

static void
append_keys(
        bson_t *filter, const char *group, int64_t listed_ms, const char *const *parts, size_t n)
{
	bson_t id_doc, in;

	BSON_APPEND_DOCUMENT_BEGIN(filter, "_id", &id_doc);
	BSON_APPEND_ARRAY_BEGIN(&id_doc, "$in", &in);
	for (size_t i = 0; i < n; i++) {
		char idx[16], *key = part_key(group, parts[i], listed_ms);
		const char *k;
		bson_uint32_to_string((uint32_t)i, &k, idx, sizeof(idx));
		BSON_APPEND_UTF8(&in, k, key);
		free(key);
	}
	bson_append_array_end(&id_doc, &in);
	bson_append_document_end(filter, &id_doc);
}

int
sk_mongo_observation_get(sk_store *store, const char *group, int64_t listed_ms,
        const char *const *parts, size_t n, sk_observation_list *out, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	sk_store_conn c = { 0 };
	bson_t filter = BSON_INITIALIZER;
	mongoc_cursor_t *cur;
	const bson_t *doc;
	bson_error_t berr;
	int rc = 0;

	append_keys(&filter, group, listed_ms, parts, n);
	sk_store_conn_open(s, &c, SK_COLL_OBSERVATIONS);
	cur = mongoc_collection_find_with_opts(c.coll, &filter, NULL, NULL);
	while (rc == 0 && mongoc_cursor_next(cur, &doc)) {
		out->items = sk_realloc(out->items, (out->len + 1) * sizeof(*out->items));
		if ((rc = decode(doc, "part", &out->items[out->len], err)) == 0)
			out->len++;
	}
	if (rc == 0 && mongoc_cursor_error(cur, &berr))
		rc = sk_store_fail(s, &berr, "read observations", err);
	if (rc != 0)
		sk_observation_list_dispose(out);
	else
		order_by(out, parts, n);
	mongoc_cursor_destroy(cur);
	sk_store_conn_close(s, &c);
	bson_destroy(&filter);
	return rc;
}

int
sk_mongo_observation_head_put(sk_store *store, const char *group, int64_t listed_ms,
        const char *writer, const char *body, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	sk_store_conn c = { 0 };
	bson_t *filter = BCON_NEW(
	        "_id", BCON_UTF8(group), "listedTime", "{", "$lt", BCON_DATE_TIME(listed_ms), "}");
	bson_t *doc = BCON_NEW("_id", BCON_UTF8(group), "listedTime", BCON_DATE_TIME(listed_ms),
	        "writer", BCON_UTF8(writer), "body", BCON_UTF8(body));
	bson_t *opts = BCON_NEW("upsert", BCON_BOOL(true));
	bson_error_t berr;
	int rc = 0;

	sk_store_conn_open(s, &c, SK_COLL_OBSERVATION_HEADS);
	if (!mongoc_collection_replace_one(c.coll, filter, doc, opts, NULL, &berr))
		rc = sk_store_is_duplicate(&berr)
		        ? sk_observation_stale(group, err)
		        : sk_store_fail(s, &berr, "write observation head", err);
	sk_store_conn_close(s, &c);
	bson_destroy(opts);
	bson_destroy(doc);
	bson_destroy(filter);
	return rc;
}

int
sk_mongo_observation_head_get(
        sk_store *store, const char *group, sk_observation *out, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	sk_store_conn c = { 0 };
	bson_t *filter = BCON_NEW("_id", BCON_UTF8(group));
	mongoc_cursor_t *cur;
	const bson_t *doc;
	bson_error_t berr;
	int rc;

	sk_store_conn_open(s, &c, SK_COLL_OBSERVATION_HEADS);
	cur = mongoc_collection_find_with_opts(c.coll, filter, NULL, NULL);
	if (mongoc_cursor_next(cur, &doc))
		rc = decode(doc, "_id", out, err);
	else if (mongoc_cursor_error(cur, &berr))
		rc = sk_store_fail(s, &berr, "read observation head", err);
	else
		rc = sk_error_set(err, SK_ENOTFOUND, "observation head %s not found", group);
	mongoc_cursor_destroy(cur);
	sk_store_conn_close(s, &c);
	bson_destroy(filter);
	return rc;
}

int
sk_mongo_observation_prune(sk_store *store, const char *group, int64_t before_ms, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	sk_store_conn c = { 0 };
	bson_t *filter = BCON_NEW("group", BCON_UTF8(group), "listedTime", "{", "$lt",
	        BCON_DATE_TIME(before_ms), "}");
	bson_error_t berr;
	int rc = 0;

	sk_store_conn_open(s, &c, SK_COLL_OBSERVATIONS);
	if (!mongoc_collection_delete_many(c.coll, filter, NULL, NULL, &berr))
		rc = sk_store_fail(s, &berr, "prune observations", err);
	sk_store_conn_close(s, &c);
	bson_destroy(filter);
	return rc;
}
