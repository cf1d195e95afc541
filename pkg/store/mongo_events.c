/*
 * store/mongo_events: Kubernetes-style events in the "events" collection, one
 * document per (object, uid, type, reason) with a count, first and last
 * timestamps (BSON dates) and the latest message; a TTL index on
 * lastTimestamp ages them out where the server supports it. The _id is
 * "object/uid/type/reason" (the uid keeps a re-created object's events
 * apart from its predecessor's), so concurrent first occurrences cannot create two
 * documents; on FerretDB `$inc` is read-then-write, so a count can miss an
 * occurrence under concurrent writers (events are informational).
 */
#include <stdlib.h>
#include <string.h>

#include "mongo_int.h"

bson_t *
sk_mongo_event_update(const char *object, const char *uid, const char *type, const char *reason,
        const char *message)
{
	int64_t now = sk_now_ms();

	return BCON_NEW("$inc", "{", "count", BCON_INT32(1), "}", "$set", "{", "lastTimestamp",
	        BCON_DATE_TIME(now), "message", BCON_UTF8(message ? message : ""), "source",
	        BCON_UTF8(SK_STORE_EVENT_SOURCE), "}", "$setOnInsert", "{", "object",
	        BCON_UTF8(object), "uid", BCON_UTF8(uid), "type", BCON_UTF8(type), "reason",
	        BCON_UTF8(reason), "firstTimestamp", BCON_DATE_TIME(now), "}");
}

/* One event alone (mongo_batch.c coalesces concurrent ones). */
int
sk_mongo_event_one(sk_store *store, const char *object, const char *uid, const char *type,
        const char *reason, const char *message, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	sk_store_conn c = { 0 };
	char *id;
	bson_t *filter, *update, *opts;
	bson_error_t berr;
	bool ok = false;

	id = sk_asprintf("%s/%s/%s/%s", object, uid, type, reason);
	filter = BCON_NEW("_id", BCON_UTF8(id));
	update = sk_mongo_event_update(object, uid, type, reason, message);
	opts = BCON_NEW("upsert", BCON_BOOL(true));

	sk_store_conn_open(s, &c, SK_COLL_EVENTS);
	/* Two first occurrences can race to insert: the loser retries as an update. */
	for (int attempt = 0; attempt < 3 && !ok; attempt++) {
		ok = mongoc_collection_update_one(c.coll, filter, update, opts, NULL, &berr);
		if (!ok && !sk_store_is_duplicate(&berr))
			break;
	}
	sk_store_conn_close(s, &c);
	bson_destroy(opts);
	bson_destroy(update);
	bson_destroy(filter);
	free(id);
	return ok ? 0 : sk_store_fail(s, &berr, "record event", err);
}

static char *
field_string(const bson_t *doc, const char *key)
{
	bson_iter_t it;

	if (bson_iter_init_find(&it, doc, key) && BSON_ITER_HOLDS_UTF8(&it))
		return sk_strdup(bson_iter_utf8(&it, NULL));
	return sk_strdup("");
}

static int64_t
field_int(const bson_t *doc, const char *key)
{
	bson_iter_t it;

	if (!bson_iter_init_find(&it, doc, key))
		return 0;
	if (BSON_ITER_HOLDS_DATE_TIME(&it))
		return bson_iter_date_time(&it);
	if (BSON_ITER_HOLDS_INT32(&it) || BSON_ITER_HOLDS_INT64(&it) || BSON_ITER_HOLDS_DOUBLE(&it))
		return bson_iter_as_int64(&it);
	return 0;
}

static void
event_from_doc(const bson_t *doc, sk_event *ev)
{
	ev->object = field_string(doc, "object");
	ev->uid = field_string(doc, "uid");
	ev->type = field_string(doc, "type");
	ev->reason = field_string(doc, "reason");
	ev->message = field_string(doc, "message");
	ev->source = field_string(doc, "source");
	ev->count = (int)field_int(doc, "count");
	ev->first_ms = field_int(doc, "firstTimestamp");
	ev->last_ms = field_int(doc, "lastTimestamp");
}

static void
reverse(sk_event_list *l)
{
	for (size_t i = 0; i < l->len / 2; i++) {
		sk_event t = l->items[i];
		l->items[i] = l->items[l->len - 1 - i];
		l->items[l->len - 1 - i] = t;
	}
}

int
sk_mongo_events(sk_store *store, const char *object, const char *uid, size_t limit,
        sk_event_list *out, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	sk_store_conn c = { 0 };
	bson_t *filter = object ? BCON_NEW("object", BCON_UTF8(object)) : bson_new();
	bson_t *opts =
	        BCON_NEW("sort", "{", "lastTimestamp", BCON_INT32(-1), "_id", BCON_INT32(1), "}");
	mongoc_cursor_t *cur;
	const bson_t *doc;
	bson_error_t berr;
	int rc = 0;

	if (uid)
		BSON_APPEND_UTF8(filter, "uid", uid);
	if (limit > 0)
		BSON_APPEND_INT64(opts, "limit", (int64_t)limit);
	sk_store_conn_open(s, &c, SK_COLL_EVENTS);
	cur = mongoc_collection_find_with_opts(c.coll, filter, opts, NULL);
	while (mongoc_cursor_next(cur, &doc)) {
		out->items = sk_realloc(out->items, (out->len + 1) * sizeof(*out->items));
		event_from_doc(doc, &out->items[out->len++]);
	}
	if (mongoc_cursor_error(cur, &berr)) {
		rc = sk_store_fail(s, &berr, "list events", err);
		sk_event_list_dispose(out);
	}
	reverse(out); /* newest first from the server, oldest first to the caller */
	mongoc_cursor_destroy(cur);
	sk_store_conn_close(s, &c);
	bson_destroy(opts);
	bson_destroy(filter);
	return rc;
}
