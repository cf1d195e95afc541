/*
 * store/mongo_quota: SpaceQuotas in the "spacequotas" collection (see
 * store_quota.h): {_id: name, object: JSON text, status: JSON text}.
 * Apply writes `object`, the controller `status`, each with $set.
 */
#include <stdlib.h>
#include <string.h>

#include "mongo_int.h"

int
sk_mongo_quota_insert(sk_store *store, const char *name, const char *object, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	sk_store_conn c = { 0 };
	bson_t *doc = BCON_NEW("_id", BCON_UTF8(name), "object", BCON_UTF8(object));
	bson_error_t berr;
	int rc = 0;

	sk_store_conn_open(s, &c, SK_COLL_QUOTAS);
	if (!mongoc_collection_insert_one(c.coll, doc, NULL, NULL, &berr))
		rc = sk_store_is_duplicate(&berr)
		        ? sk_error_set(err, SK_EEXISTS, "spacequotas \"%s\" already exists", name)
		        : sk_store_fail(s, &berr, "write spacequota", err);
	sk_store_conn_close(s, &c);
	bson_destroy(doc);
	return rc;
}

static int
set_field(sk_store *store, const char *name, const char *field, const char *text, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	sk_store_conn c = { 0 };
	bson_t *filter = BCON_NEW("_id", BCON_UTF8(name));
	bson_t *update = BCON_NEW("$set", "{", field, BCON_UTF8(text), "}");
	bson_t reply;
	bson_error_t berr;
	int rc = 0;

	sk_store_conn_open(s, &c, SK_COLL_QUOTAS);
	if (!mongoc_collection_update_one(c.coll, filter, update, NULL, &reply, &berr))
		rc = sk_store_fail(s, &berr, "write spacequota", err);
	else if (sk_mongo_reply_count(&reply, "matchedCount") == 0)
		rc = sk_store_quota_not_found(name, err);
	bson_destroy(&reply);
	sk_store_conn_close(s, &c);
	bson_destroy(update);
	bson_destroy(filter);
	return rc;
}

int
sk_mongo_quota_replace(sk_store *store, const char *name, const char *object, sk_error *err)
{
	return set_field(store, name, "object", object, err);
}

int
sk_mongo_quota_status(sk_store *store, const char *name, const char *status, sk_error *err)
{
	return set_field(store, name, "status", status, err);
}

static const char *
utf8_of(const bson_t *doc, const char *key)
{
	bson_iter_t it;

	if (bson_iter_init_find(&it, doc, key) && BSON_ITER_HOLDS_UTF8(&it))
		return bson_iter_utf8(&it, NULL);
	return NULL;
}

int
sk_mongo_quota_list(sk_store *store, sk_spacequota_list *out, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	sk_store_conn c = { 0 };
	bson_t filter = BSON_INITIALIZER;
	mongoc_cursor_t *cur;
	const bson_t *doc;
	bson_error_t berr;
	int rc = 0;

	sk_store_conn_open(s, &c, SK_COLL_QUOTAS);
	cur = mongoc_collection_find_with_opts(c.coll, &filter, NULL, NULL);
	while (rc == 0 && mongoc_cursor_next(cur, &doc)) {
		const char *object = utf8_of(doc, "object");
		if (object == NULL)
			rc = sk_error_set(err, SK_EINVALID, "spacequota without an object");
		else
			rc = sk_store_quota_add(out, object, utf8_of(doc, "status"), err);
	}
	if (rc == 0 && mongoc_cursor_error(cur, &berr))
		rc = sk_store_fail(s, &berr, "read spacequotas", err);
	mongoc_cursor_destroy(cur);
	sk_store_conn_close(s, &c);
	bson_destroy(&filter);
	return rc;
}

int
sk_mongo_quota_remove(sk_store *store, const char *name, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	sk_store_conn c = { 0 };
	bson_t *filter = BCON_NEW("_id", BCON_UTF8(name));
	bson_t reply;
	bson_error_t berr;
	int rc = 0;

	sk_store_conn_open(s, &c, SK_COLL_QUOTAS);
	if (!mongoc_collection_delete_one(c.coll, filter, NULL, &reply, &berr))
		rc = sk_store_fail(s, &berr, "remove spacequota", err);
	else if (sk_mongo_reply_count(&reply, "deletedCount") == 0)
		rc = sk_store_quota_not_found(name, err);
	bson_destroy(&reply);
	sk_store_conn_close(s, &c);
	bson_destroy(filter);
	return rc;
}
