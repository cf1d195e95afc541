/*
 * store/mongo_cas: resourceVersions and write claims of the MongoDB-wire
 * backend, and the one statement of why they are safe.
 *
 * FerretDB 1.24 runs findAndModify and filtered updates as read-then-write,
 * so neither `$inc` nor a `{resourceVersion: expected}` filter is atomic
 * there (tests showed two writers getting the same number, or both
 * "matching"). What is atomic on every server is an insert into a unique
 * index, so a write over version V of an object first inserts the claim
 * {_id: "NAME/V"} into "claims": one writer per version. It then checks
 * that the object is still at V and replaces it by _id; only the holder of
 * claim V can move an object away from V, so check + replace act as one
 * compare-and-swap.
 *
 * Round-trips matter: FerretDB's SQLite backend does not use its _id index
 * for finds, updates or deletes (its query says `_sjson->'$._id'`, the index
 * is on `_sjson->"_id"`), so every one of them scans its collection, while an
 * insert is checked through the unique index. Hence:
 *   - resourceVersions come from a hybrid logical clock, not a counter
 *     collection: max(wall clock in SK_RV_UNIT_MS ticks, last seen + 1,
 *     expected + 1), held per store (sk_mongo, no process-global clock),
 *     seeded from the highest stored version before the store's first write
 *     and advanced by every version it reads. Per-object monotonicity is what
 *     the CAS needs, and the claim on NAME/V plus "expected + 1" gives it.
 *     Uniqueness across objects is not needed: the informer polls `> since`
 *     with a look-back of 256 versions, and a tick of 10 ms makes that window
 *     at least 2.56 s of wall time (the clock runs ahead of the wall only when
 *     a store writes faster than one version per tick, and then the window is
 *     256 of its writes, as with a counter). Another process's clock may
 *     trail a bursting writer's by far more, but no version is below its
 *     writer's wall tick, so the informer also re-reads from the tick of its
 *     last read minus a margin (sk_store_rv_floor).
 *   - a claim whose holder moved the object off V is left in place (it can
 *     never be needed again: versions only grow, and verify() still checks
 *     the object) and swept in batches once older than SK_CLAIM_EXPIRY_MS;
 *     only a claim whose holder surely wrote nothing is deleted at once (a
 *     write that failed without saying whether it happened keeps it). One
 *     left by a writer that died expires after SK_CLAIM_EXPIRY_MS too.
 *   - a writer writes under a claim only within SK_CLAIM_USE_MS of taking it
 *     (later it gives up: a transient conflict), so a claim is swept long
 *     after its write. That makes the re-read needless for a copy read less
 *     than SK_COPY_FRESH_MS ago (sk_store_write_status, the controller's
 *     status writes): whoever moved the object off V did so after the copy
 *     was read, under a claim on V taken at most SK_CLAIM_USE_MS before, so
 *     that claim is younger than SK_COPY_FRESH_MS + SK_CLAIM_USE_MS plus the
 *     time a request can spend in flight, still in place, and our claim on V
 *     fails. Safe while in-flight time plus clock skew between the sweeping
 *     and the claiming process stay under 20 s (for a lease claim, expired
 *     after 10 s and used within 5 s: under 5 s).
 * The clock skew in these arguments is not assumed but enforced
 * (mongo_clock.c): every claimed write and every new version first passes
 * sk_mongo_clock_guard, which refuses it while this host's clock is more
 * than SK_STORE_CLOCK_SKEW_MAX_MS (2 s) off the server's, so two writers
 * differ by at most 4 s plus the drift since their last reading (at most
 * SK_STORE_CLOCK_RECHECK_MS old).
 * Leases (mongo_lease.c) use the same claims, keyed "lease/NAME/V", always
 * with the re-read (no fresh-copy shortcut).
 * Every write of both goes through sk_store_claimed: claim, verify, write,
 * then retire or delete the claim; what differs is its sk_claim_kind. Status
 * writes of many objects at once take the same steps in shared commands
 * (mongo_batch.c: one insert of their claims, one update of their replaces).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mongo_int.h"

#define SK_RV_UNIT_MS 10 /* one clock tick */
#define SK_CLAIM_EXPIRY_MS 30000 /* a claim older than this was abandoned */
#define SK_CLAIM_SWEEP_MS 10000 /* at most one sweep of old claims per store this often */
#define SK_CLAIM_USE_MS 5000 /* a claim is written under only this long after it was taken */
#define SK_COPY_FRESH_MS 5000 /* a copy this recent is written over without a re-read */

const sk_claim_kind sk_claim_userspace = { "userspace", "resourceVersion", "", SK_CLAIM_EXPIRY_MS };
/* A lease claim is abandoned sooner: lease writes always re-read under the
 * claim and write within SK_CLAIM_USE_MS of taking it, so after twice that
 * no writer is left (unless a request stayed in flight over 5 s), and a
 * replica killed in the middle of a renew must not keep its shard from the
 * others for 30 s, longer than the lease itself. */
const sk_claim_kind sk_claim_lease = { "lease", "version", "lease/", 2 * SK_CLAIM_USE_MS };

bool
sk_store_claim_usable(int64_t claim_ms)
{
	return sk_monotonic_ms() - claim_ms < SK_CLAIM_USE_MS;
}

bool
sk_store_copy_fresh(int64_t read_ms)
{
	return read_ms > 0 && sk_monotonic_ms() - read_ms < SK_COPY_FRESH_MS;
}

void
sk_store_rv_observe(sk_mongo *s, int64_t rv)
{
	pthread_mutex_lock(&s->hlc_mu);
	if (rv > s->hlc_last)
		s->hlc_last = rv;
	pthread_mutex_unlock(&s->hlc_mu);
}

/* The highest resourceVersion stored in the database (0 when empty). */
static int
highest_stored(sk_mongo *s, mongoc_client_t *client, int64_t *out, sk_error *err)
{
	mongoc_collection_t *coll =
	        mongoc_client_get_collection(client, s->database, SK_COLL_USERSPACES);
	bson_t filter = BSON_INITIALIZER;
	bson_t *opts = BCON_NEW("sort", "{", "metadata.resourceVersion", BCON_INT32(-1), "}",
	        "limit", BCON_INT64(1), "projection", "{", "metadata.resourceVersion",
	        BCON_INT32(1), "}");
	mongoc_cursor_t *cur = mongoc_collection_find_with_opts(coll, &filter, opts, NULL);
	const bson_t *doc;
	bson_error_t berr;
	bson_iter_t it;
	int rc = 0;

	*out = 0;
	if (mongoc_cursor_next(cur, &doc)) {
		if (bson_iter_init(&it, doc) &&
		        bson_iter_find_descendant(&it, "metadata.resourceVersion", &it))
			*out = bson_iter_as_int64(&it);
	} else if (mongoc_cursor_error(cur, &berr)) {
		rc = sk_store_fail(s, &berr, "read resourceVersion", err);
	}
	mongoc_cursor_destroy(cur);
	bson_destroy(opts);
	bson_destroy(&filter);
	mongoc_collection_destroy(coll);
	return rc;
}

int64_t
sk_store_mongo_rv_floor(sk_store *store, int64_t wall_ms)
{
	return wall_ms / SK_RV_UNIT_MS;
}

int
sk_store_next_rv(
        sk_mongo *s, mongoc_client_t *client, int64_t expected, int64_t *out, sk_error *err)
{
	int64_t v;
	int grc = sk_mongo_clock_guard(s, client, err); /* a version is a wall-clock tick */

	if (grc != 0)
		return grc;
	if (!__atomic_load_n(&s->rv_seeded, __ATOMIC_ACQUIRE)) {
		int64_t high = 0;
		int rc = highest_stored(s, client, &high, err);

		if (rc != 0)
			return rc;
		sk_store_rv_observe(s, high);
		__atomic_store_n(&s->rv_seeded, true, __ATOMIC_RELEASE);
	}
	pthread_mutex_lock(&s->hlc_mu);
	v = sk_now_ms() / SK_RV_UNIT_MS;
	if (v <= s->hlc_last)
		v = s->hlc_last + 1;
	if (v <= expected)
		v = expected + 1;
	s->hlc_last = v;
	pthread_mutex_unlock(&s->hlc_mu);
	*out = v;
	return 0;
}

static int
insert_claim(mongoc_collection_t *coll, const char *id, bson_error_t *berr)
{
	bson_t *doc = BCON_NEW("_id", BCON_UTF8(id), "at", BCON_DATE_TIME(sk_now_ms()));
	bool ok = mongoc_collection_insert_one(coll, doc, NULL, NULL, berr);

	bson_destroy(doc);
	return ok ? 0 : sk_store_is_duplicate(berr) ? SK_ECONFLICT : SK_ERROR;
}

/* Deletes the claim when it was taken longer ago than expiry_ms. */
static bool
expire_claim(mongoc_collection_t *coll, const char *id, int64_t expiry_ms)
{
	bson_t *filter = BCON_NEW("_id", BCON_UTF8(id), "at", "{", "$lt",
	        BCON_DATE_TIME(sk_now_ms() - expiry_ms), "}");
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

/* Deletes every claim older than the expiry, at most once per
 * SK_CLAIM_SWEEP_MS per store: the ones left by writes that completed. */
void
sk_store_sweep_claims(sk_mongo *s, mongoc_collection_t *coll)
{
	int64_t now = sk_now_ms();
	int64_t last = __atomic_load_n(&s->claims_swept_ms, __ATOMIC_RELAXED);
	bson_t *filter;

	if (now - last < SK_CLAIM_SWEEP_MS ||
	        !__atomic_compare_exchange_n(
	                &s->claims_swept_ms, &last, now, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return;
	filter = BCON_NEW("at", "{", "$lt", BCON_DATE_TIME(now - SK_CLAIM_EXPIRY_MS), "}");
	mongoc_collection_delete_many(coll, filter, NULL, NULL, NULL);
	bson_destroy(filter);
}

/* Claims version `base` of the object (kind, name) for one writer:
 * SK_ECONFLICT when another writer holds it. *out (the claim's id) goes
 * to release. */
static int
claim(sk_mongo *s, mongoc_client_t *client, const sk_claim_kind *kind, const char *name,
        int64_t base, char **out, sk_error *err)
{
	mongoc_collection_t *coll =
	        mongoc_client_get_collection(client, s->database, SK_COLL_CLAIMS);
	char *id = sk_asprintf("%s%s/%lld", kind->prefix, name, (long long)base);
	bson_error_t berr;
	int rc = insert_claim(coll, id, &berr);

	if (rc == SK_ECONFLICT && expire_claim(coll, id, kind->abandoned_ms))
		rc = insert_claim(coll, id, &berr);
	if (rc == SK_ECONFLICT)
		sk_error_set(err, SK_ECONFLICT,
		        "%s \"%s\": the object has been modified; please apply your changes to "
		        "the latest version (expected %s %lld, another write to it is in progress)",
		        kind->noun, name, kind->version, (long long)base);
	else if (rc != 0)
		rc = sk_store_fail(s, &berr, "claim userspace version", err);
	else
		sk_store_sweep_claims(s, coll);
	mongoc_collection_destroy(coll);
	if (rc == 0)
		*out = id;
	else
		free(id);
	return rc;
}

/* Deletes the claim (its holder surely wrote nothing). */
static void
release(sk_mongo *s, mongoc_client_t *client, char *claim)
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

int
sk_store_claimed(sk_mongo *s, sk_store_conn *c, const sk_claimed_write *w, sk_error *err)
{
	char *id = NULL;
	int rc;

	c->claim_ms = sk_monotonic_ms();
	c->written = false;
	rc = sk_mongo_clock_guard(s, c->client, err); /* a claim is stamped with the wall clock */
	if (rc != 0)
		return rc;
	rc = claim(s, c->client, w->kind, w->name, w->expected, &id, err);
	if (rc == SK_ECONFLICT && w->lost != NULL)
		rc = w->lost(s, c, w->arg, err);
	if (rc == 0 && w->verify != NULL)
		rc = w->verify(s, c, w->arg, err);
	if (rc == 0)
		rc = w->write(s, c, w->arg, err);
	if (c->written || c->unsure) { /* the object moved off the version, or may have */
		free(id);
		id = NULL;
	}
	release(s, c->client, id);
	return rc;
}
