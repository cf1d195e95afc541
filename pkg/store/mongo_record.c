/*
 * store/mongo_record: apply records in the "applies" collection, one
 * document per record: {_id: id, createTime (date), body (the JSON text:
 * user keys such as label keys with dots never become BSON field names)}.
 * A record is written once (insert: the _id index refuses a second) and
 * removed once; it is never updated.
 */
#include <stdlib.h>
#include <string.h>

#include "mongo_int.h"

int
sk_mongo_record_put(
        sk_store *store, const char *id, int64_t create_ms, const char *body, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	sk_store_conn c = { 0 };
	bson_t *doc = BCON_NEW("_id", BCON_UTF8(id), "createTime", BCON_DATE_TIME(create_ms),
	        "body", BCON_UTF8(body));
	bson_error_t berr;
	int rc = sk_mongo_clock_guard(s, NULL, err); /* another spacectl ages it by its clock */

	if (rc != 0) {
		bson_destroy(doc);
		return rc;
	}
	sk_store_conn_open(s, &c, SK_COLL_APPLIES);
	if (!mongoc_collection_insert_one(c.coll, doc, NULL, NULL, &berr))
		rc = sk_store_is_duplicate(&berr)
		        ? sk_error_set(err, SK_EEXISTS, "apply record \"%s\" already exists", id)
		        : sk_store_fail(s, &berr, "write apply record", err);
	sk_store_conn_close(s, &c);
	bson_destroy(doc);
	return rc;
}

/* One stored document into the next item of out. */
static int
add_record(sk_apply_record_list *out, const bson_t *doc, sk_error *err)
{
	bson_iter_t it;
	const char *id = NULL, *body = NULL;
	int64_t create_ms = 0;
	int rc;

	if (bson_iter_init_find(&it, doc, "_id") && BSON_ITER_HOLDS_UTF8(&it))
		id = bson_iter_utf8(&it, NULL);
	if (bson_iter_init_find(&it, doc, "createTime") && BSON_ITER_HOLDS_DATE_TIME(&it))
		create_ms = bson_iter_date_time(&it);
	if (bson_iter_init_find(&it, doc, "body") && BSON_ITER_HOLDS_UTF8(&it))
		body = bson_iter_utf8(&it, NULL);
	if (id == NULL || body == NULL)
		return sk_error_set(err, SK_EINVALID, "apply record without _id or body");
	out->items = sk_realloc(out->items, (out->len + 1) * sizeof(*out->items));
	rc = sk_apply_record_set(&out->items[out->len], id, create_ms, body, err);
	if (rc == 0)
		out->len++;
	return rc;
}

int
sk_mongo_record_list(sk_store *store, sk_apply_record_list *out, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	sk_store_conn c = { 0 };
	bson_t filter = BSON_INITIALIZER;
	bson_t *opts = BCON_NEW("sort", "{", "_id", BCON_INT32(1), "}");
	mongoc_cursor_t *cur;
	const bson_t *doc;
	bson_error_t berr;
	int rc = 0;

	sk_store_conn_open(s, &c, SK_COLL_APPLIES);
	cur = mongoc_collection_find_with_opts(c.coll, &filter, opts, NULL);
	while (rc == 0 && mongoc_cursor_next(cur, &doc))
		rc = add_record(out, doc, err);
	if (rc == 0 && mongoc_cursor_error(cur, &berr))
		rc = sk_store_fail(s, &berr, "read apply records", err);
	if (rc != 0)
		sk_apply_record_list_dispose(out);
	mongoc_cursor_destroy(cur);
	sk_store_conn_close(s, &c);
	bson_destroy(opts);
	bson_destroy(&filter);
	return rc;
}

int
sk_mongo_record_remove(sk_store *store, const char *id, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	sk_store_conn c = { 0 };
	bson_t *filter = BCON_NEW("_id", BCON_UTF8(id));
	bson_t reply;
	bson_error_t berr;
	int rc = 0;

	sk_store_conn_open(s, &c, SK_COLL_APPLIES);
	if (!mongoc_collection_delete_one(c.coll, filter, NULL, &reply, &berr))
		rc = sk_store_fail(s, &berr, "remove apply record", err);
	else if (sk_mongo_reply_count(&reply, "deletedCount") == 0)
		rc = sk_error_set(err, SK_ENOTFOUND, "apply record \"%s\" not found", id);
	bson_destroy(&reply);
	sk_store_conn_close(s, &c);
	bson_destroy(filter);
	return rc;
}
