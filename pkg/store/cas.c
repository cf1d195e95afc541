/*
 * store/cas: the resourceVersion sequence and write claims.
 *
 * FerretDB 1.24 runs findAndModify and filtered updates as read-then-write,
 * so neither `$inc` nor a `{resourceVersion: expected}` filter is atomic
 * there (tests showed two writers getting the same number, or both
 * "matching"). What is atomic on every server is an insert into a unique
 * index, so:
 *   - resourceVersions are allocated by inserting {_id: N} into "counters"
 *     (N = highest + 1; a writer that loses the race retries with the next;
 *     old entries are pruned, only the highest matters);
 *   - a write over version V of an object first inserts the claim
 *     {_id: "NAME/V"} into "claims": one writer per version. It then checks
 *     that the object is still at V and replaces it by _id; only the holder
 *     of claim V can move an object away from V, so check + replace act as
 *     one compare-and-swap. The claim is released afterwards; one left by a
 *     writer that died expires after SK_CLAIM_EXPIRY_MS.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store_int.h"

#define SK_RV_ATTEMPTS 100
#define SK_RV_KEEP 256 /* sequence entries kept when pruning */
#define SK_CLAIM_EXPIRY_MS 30000 /* a claim older than this was abandoned */

static int
highest_rv(sk_store *s, mongoc_collection_t *coll, int64_t *out, sk_error *err)
{
	bson_t *filter = BCON_NEW("_id", "{", "$gt", BCON_INT64(0), "}");
	bson_t *opts = BCON_NEW("sort", "{", "_id", BCON_INT32(-1), "}", "limit", BCON_INT64(1));
	mongoc_cursor_t *cur = mongoc_collection_find_with_opts(coll, filter, opts, NULL);
	const bson_t *doc;
	bson_error_t berr;
	bson_iter_t it;
	int rc = 0;

	*out = 0;
	if (mongoc_cursor_next(cur, &doc)) {
		if (bson_iter_init_find(&it, doc, "_id"))
			*out = bson_iter_as_int64(&it);
	} else if (mongoc_cursor_error(cur, &berr)) {
		rc = sk_store_fail(s, &berr, "read resourceVersion", err);
	}
	mongoc_cursor_destroy(cur);
	bson_destroy(opts);
	bson_destroy(filter);
	return rc;
}

/* Keeps the sequence collection small; only its highest entry matters. */
static void
prune(mongoc_collection_t *coll, int64_t rv)
{
	bson_t *filter = BCON_NEW("_id", "{", "$lt", BCON_INT64(rv - SK_RV_KEEP), "}");

	mongoc_collection_delete_many(coll, filter, NULL, NULL, NULL);
	bson_destroy(filter);
}

int
sk_store_next_rv(sk_store *s, mongoc_client_t *client, int64_t *out, sk_error *err)
{
	mongoc_collection_t *coll =
	        mongoc_client_get_collection(client, s->database, SK_COLL_COUNTERS);
	bson_error_t berr;
	int rc = SK_ETRANSIENT;

	for (int attempt = 0; attempt < SK_RV_ATTEMPTS; attempt++) {
		int64_t high = 0;
		bson_t *doc;
		bool ok;

		if ((rc = highest_rv(s, coll, &high, err)) != 0)
			break;
		doc = BCON_NEW("_id", BCON_INT64(high + 1), "at", BCON_DATE_TIME(sk_now_ms()));
		ok = mongoc_collection_insert_one(coll, doc, NULL, NULL, &berr);
		bson_destroy(doc);
		if (ok) {
			*out = high + 1;
			if (*out % SK_RV_KEEP == 0)
				prune(coll, *out);
			rc = 0;
			break;
		}
		if (!sk_store_is_duplicate(&berr)) {
			rc = sk_store_fail(s, &berr, "allocate resourceVersion", err);
			break;
		}
		rc = SK_ETRANSIENT; /* another writer took high+1: try the next */
		if (attempt > 4)
			usleep((useconds_t)(1000 * (rand() % 5 + 1)));
	}
	if (rc == SK_ETRANSIENT)
		sk_error_set(err, rc, "allocate resourceVersion: too much contention, retry");
	mongoc_collection_destroy(coll);
	return rc;
}

static int
insert_claim(mongoc_collection_t *coll, const char *id, bson_error_t *berr)
{
	bson_t *doc = BCON_NEW("_id", BCON_UTF8(id), "at", BCON_DATE_TIME(sk_now_ms()));
	bool ok = mongoc_collection_insert_one(coll, doc, NULL, NULL, berr);

	bson_destroy(doc);
	return ok ? 0 : sk_store_is_duplicate(berr) ? SK_ECONFLICT : SK_ERROR;
}

/* Deletes the claim when it was taken longer ago than the expiry. */
static bool
expire_claim(mongoc_collection_t *coll, const char *id)
{
	bson_t *filter = BCON_NEW("_id", BCON_UTF8(id), "at", "{", "$lt",
	        BCON_DATE_TIME(sk_now_ms() - SK_CLAIM_EXPIRY_MS), "}");
	bson_t reply;
	bson_iter_t it;
	bool removed = false;

	if (mongoc_collection_delete_one(coll, filter, NULL, &reply, NULL))
		removed = bson_iter_init_find(&it, &reply, "deletedCount") &&
		        bson_iter_as_int64(&it) > 0;
	bson_destroy(&reply);
	bson_destroy(filter);
	return removed;
}

int
sk_store_claim(sk_store *s, mongoc_client_t *client, const char *name, int64_t base, char **claim,
        sk_error *err)
{
	mongoc_collection_t *coll =
	        mongoc_client_get_collection(client, s->database, SK_COLL_CLAIMS);
	char *id = sk_asprintf("%s/%lld", name, (long long)base);
	bson_error_t berr;
	int rc = insert_claim(coll, id, &berr);

	if (rc == SK_ECONFLICT && expire_claim(coll, id))
		rc = insert_claim(coll, id, &berr);
	if (rc == SK_ECONFLICT)
		sk_error_set(err, rc,
		        "userspace \"%s\": the object has been modified; please apply your changes "
		        "to the latest version (expected resourceVersion %lld, another write to it "
		        "is in progress)",
		        name, (long long)base);
	else if (rc != 0)
		rc = sk_store_fail(s, &berr, "claim userspace version", err);
	mongoc_collection_destroy(coll);
	if (rc == 0)
		*claim = id;
	else
		free(id);
	return rc;
}

void
sk_store_release(sk_store *s, mongoc_client_t *client, char *claim)
{
	mongoc_collection_t *coll;
	bson_t *filter;

	if (claim == NULL)
		return;
	coll = mongoc_client_get_collection(client, s->database, SK_COLL_CLAIMS);
	filter = BCON_NEW("_id", BCON_UTF8(claim));
	mongoc_collection_delete_one(coll, filter, NULL, NULL, NULL);
	bson_destroy(filter);
	mongoc_collection_destroy(coll);
	free(claim);
}
