/*
 * store/mongo_observation: shared provider lists in the "observations"
 * collection, one document per part: {_id: id, listedTime (date), writer,
 * body (the JSON text: metadata keys never become BSON field names)}. A
 * put replaces the part only when the stored one is older: the filter asks
 * for an older listedTime, so a newer or equal part makes the upsert's
 * insert hit the _id index instead.
 */
#include <stdlib.h>
#include <string.h>

#include "mongo_int.h"

int
sk_mongo_observation_put(sk_store *store, const char *id, int64_t listed_ms, const char *writer,
        const char *body, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	sk_store_conn c = { 0 };
	bson_t *filter = BCON_NEW(
	        "_id", BCON_UTF8(id), "listedTime", "{", "$lt", BCON_DATE_TIME(listed_ms), "}");
	bson_t *doc = BCON_NEW("_id", BCON_UTF8(id), "listedTime", BCON_DATE_TIME(listed_ms),
	        "writer", BCON_UTF8(writer), "body", BCON_UTF8(body));
	bson_t *opts = BCON_NEW("upsert", BCON_BOOL(true));
	bson_error_t berr;
	int rc = 0;

	sk_store_conn_open(s, &c, SK_COLL_OBSERVATIONS);
	if (!mongoc_collection_replace_one(c.coll, filter, doc, opts, NULL, &berr))
		rc = sk_store_is_duplicate(&berr)
		        ? sk_observation_stale(id, err)
		        : sk_store_fail(s, &berr, "write observation", err);
	sk_store_conn_close(s, &c);
	bson_destroy(opts);
	bson_destroy(doc);
	bson_destroy(filter);
	return rc;
}

/* One stored document into the next item of out. */
static int
add_part(sk_observation_list *out, const bson_t *doc, sk_error *err)
{
	bson_iter_t it;
	const char *id = NULL, *writer = NULL, *body = NULL;
	int64_t listed_ms = 0;
	int rc;

	if (bson_iter_init_find(&it, doc, "_id") && BSON_ITER_HOLDS_UTF8(&it))
		id = bson_iter_utf8(&it, NULL);
	if (bson_iter_init_find(&it, doc, "listedTime") && BSON_ITER_HOLDS_DATE_TIME(&it))
		listed_ms = bson_iter_date_time(&it);
	if (bson_iter_init_find(&it, doc, "writer") && BSON_ITER_HOLDS_UTF8(&it))
		writer = bson_iter_utf8(&it, NULL);
	if (bson_iter_init_find(&it, doc, "body") && BSON_ITER_HOLDS_UTF8(&it))
		body = bson_iter_utf8(&it, NULL);
	if (id == NULL || body == NULL)
		return sk_error_set(err, SK_EINVALID, "observation without _id or body");
	out->items = sk_realloc(out->items, (out->len + 1) * sizeof(*out->items));
	rc = sk_observation_set(&out->items[out->len], id, listed_ms, writer, body, err);
	if (rc == 0)
		out->len++;
	return rc;
}

/* Puts out's items in the order of ids. */
static void
order_by_ids(sk_observation_list *out, const char *const *ids, size_t n)
{
	size_t next = 0;

	for (size_t i = 0; i < n; i++)
		for (size_t k = next; k < out->len; k++)
			if (strcmp(out->items[k].id, ids[i]) == 0) {
				sk_observation t = out->items[next];
				out->items[next++] = out->items[k];
				out->items[k] = t;
				break;
			}
}

int
sk_mongo_observation_get(
        sk_store *store, const char *const *ids, size_t n, sk_observation_list *out, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	sk_store_conn c = { 0 };
	bson_t filter = BSON_INITIALIZER, id_doc, in;
	mongoc_cursor_t *cur;
	const bson_t *doc;
	bson_error_t berr;
	int rc = 0;

	BSON_APPEND_DOCUMENT_BEGIN(&filter, "_id", &id_doc);
	BSON_APPEND_ARRAY_BEGIN(&id_doc, "$in", &in);
	for (size_t i = 0; i < n; i++) {
		char key[16];
		const char *k;
		bson_uint32_to_string((uint32_t)i, &k, key, sizeof(key));
		BSON_APPEND_UTF8(&in, k, ids[i]);
	}
	bson_append_array_end(&id_doc, &in);
	bson_append_document_end(&filter, &id_doc);
	sk_store_conn_open(s, &c, SK_COLL_OBSERVATIONS);
	cur = mongoc_collection_find_with_opts(c.coll, &filter, NULL, NULL);
	while (rc == 0 && mongoc_cursor_next(cur, &doc))
		rc = add_part(out, doc, err);
	if (rc == 0 && mongoc_cursor_error(cur, &berr))
		rc = sk_store_fail(s, &berr, "read observations", err);
	if (rc != 0)
		sk_observation_list_dispose(out);
	else
		order_by_ids(out, ids, n);
	mongoc_cursor_destroy(cur);
	sk_store_conn_close(s, &c);
	bson_destroy(&filter);
	return rc;
}
