/*
 * store/mongo_lease: named leases in the "leases" collection of the
 * MongoDB-wire backend, one document per lease: {_id: name, holder,
 * acquireTime, renewTime (dates), durationMs, version}. A new lease is an
 * insert (the _id index lets one of two racing acquirers win); every other
 * write goes over version V under the claim "lease/NAME/V" (mongo_cas.c),
 * like a UserSpace write, so two holders can never both take one.
 */
#include <stdlib.h>
#include <string.h>

#include "mongo_int.h"

static bson_t *
lease_doc(const sk_lease *l)
{
	return BCON_NEW("_id", BCON_UTF8(l->name), "holder", BCON_UTF8(l->holder), "acquireTime",
	        BCON_DATE_TIME(l->acquire_ms), "renewTime", BCON_DATE_TIME(l->renew_ms),
	        "durationMs", BCON_INT64(l->duration_ms), "version", BCON_INT64(l->version));
}

static int64_t
doc_int(const bson_t *doc, const char *key)
{
	bson_iter_t it;

	if (!bson_iter_init_find(&it, doc, key))
		return 0;
	if (BSON_ITER_HOLDS_DATE_TIME(&it))
		return bson_iter_date_time(&it);
	return bson_iter_as_int64(&it);
}

static char *
doc_string(const bson_t *doc, const char *key)
{
	bson_iter_t it;

	if (bson_iter_init_find(&it, doc, key) && BSON_ITER_HOLDS_UTF8(&it))
		return sk_strdup(bson_iter_utf8(&it, NULL));
	return sk_strdup("");
}

static void
lease_from_doc(const bson_t *doc, sk_lease *l)
{
	l->name = doc_string(doc, "_id");
	l->holder = doc_string(doc, "holder");
	l->acquire_ms = doc_int(doc, "acquireTime");
	l->renew_ms = doc_int(doc, "renewTime");
	l->duration_ms = doc_int(doc, "durationMs");
	l->version = doc_int(doc, "version");
}

/* Reads the leases a filter matches, by name, into out. */
static int
query(sk_mongo *s, sk_store_conn *c, const bson_t *filter, sk_lease_list *out, sk_error *err)
{
	bson_t *opts = BCON_NEW("sort", "{", "_id", BCON_INT32(1), "}");
	mongoc_cursor_t *cur = mongoc_collection_find_with_opts(c->coll, filter, opts, NULL);
	const bson_t *doc;
	bson_error_t berr;
	int rc = 0;

	while (mongoc_cursor_next(cur, &doc)) {
		out->items = sk_realloc(out->items, (out->len + 1) * sizeof(*out->items));
		lease_from_doc(doc, &out->items[out->len++]);
	}
	if (mongoc_cursor_error(cur, &berr)) {
		rc = sk_store_fail(s, &berr, "read leases", err);
		sk_lease_list_dispose(out);
	}
	mongoc_cursor_destroy(cur);
	bson_destroy(opts);
	return rc;
}

static int
load(sk_mongo *s, sk_store_conn *c, const char *name, sk_lease *out, sk_error *err)
{
	bson_t *filter = BCON_NEW("_id", BCON_UTF8(name));
	sk_lease_list l = { 0 };
	int rc = query(s, c, filter, &l, err);

	if (rc == 0 && l.len == 0)
		rc = sk_error_set(err, SK_ENOTFOUND, "lease \"%s\" not found", name);
	if (rc == 0) {
		*out = l.items[0];
		memset(&l.items[0], 0, sizeof(l.items[0]));
	}
	sk_lease_list_dispose(&l);
	bson_destroy(filter);
	return rc;
}

int
sk_mongo_lease_get(sk_store *store, const char *name, sk_lease *out, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	sk_store_conn c = { 0 };
	int rc;

	sk_store_conn_open(s, &c, SK_COLL_LEASES);
	rc = load(s, &c, name, out, err);
	sk_store_conn_close(s, &c);
	return rc;
}

int
sk_mongo_lease_list(sk_store *store, sk_lease_list *out, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	sk_store_conn c = { 0 };
	bson_t filter = BSON_INITIALIZER;
	int rc;

	sk_store_conn_open(s, &c, SK_COLL_LEASES);
	rc = query(s, &c, &filter, out, err);
	sk_store_conn_close(s, &c);
	bson_destroy(&filter);
	return rc;
}

static int
taken(const char *name, sk_error *err)
{
	return sk_error_set(
	        err, SK_ECONFLICT, "lease \"%s\": changed by another holder meanwhile", name);
}

/* A new lease: the insert fails when another acquirer made it first. */
static int
insert(sk_mongo *s, sk_store_conn *c, sk_lease *next, sk_error *err)
{
	bson_error_t berr;
	bson_t *doc;
	int rc = sk_store_next_rv(s, c->client, 0, &next->version, err);

	if (rc != 0)
		return rc;
	doc = lease_doc(next);
	if (!mongoc_collection_insert_one(c->coll, doc, NULL, NULL, &berr))
		rc = sk_store_is_duplicate(&berr) ? taken(next->name, err)
		                                  : sk_store_fail(s, &berr, "write lease", err);
	bson_destroy(doc);
	return rc;
}

/* A swap from cur to next (sk_store_claimed's arg). */
typedef struct lease_swap {
	const sk_lease *cur;
	sk_lease *next;
} lease_swap;

/* Still at version cur->version, and the claim young enough to write under. */
static int
verify(sk_mongo *s, sk_store_conn *c, void *arg, sk_error *err)
{
	const char *name = ((lease_swap *)arg)->cur->name;
	sk_lease now = { 0 }; /* disposed even when load fails */
	int rc = load(s, c, name, &now, err);

	if (rc == 0 && now.version != ((lease_swap *)arg)->cur->version)
		rc = taken(name, err);
	if (rc == 0 && !sk_store_claim_usable(c->claim_ms))
		rc = sk_error_set(err, SK_ECONFLICT,
		        "lease \"%s\": the write took too long after its claim; not written", name);
	sk_lease_dispose(&now);
	return rc;
}

static int
replace(sk_mongo *s, sk_store_conn *c, const sk_lease *next, sk_error *err)
{
	bson_t *filter = BCON_NEW("_id", BCON_UTF8(next->name));
	bson_t *doc = lease_doc(next);
	bson_error_t berr;
	int rc = 0;

	if (mongoc_collection_replace_one(c->coll, filter, doc, NULL, NULL, &berr)) {
		c->written = true;
	} else {
		rc = sk_store_fail(s, &berr, "write lease", err);
		c->unsure = true;
	}
	bson_destroy(doc);
	bson_destroy(filter);
	return rc;
}

/* The next version over the verified one. */
static int
write_next(sk_mongo *s, sk_store_conn *c, void *arg, sk_error *err)
{
	lease_swap *w = arg;
	int rc = sk_store_next_rv(s, c->client, w->cur->version, &w->next->version, err);

	return rc == 0 ? replace(s, c, w->next, err) : rc;
}

/* Over version cur->version: claim it, check it, write the next version. */
static int
swap(sk_mongo *s, sk_store_conn *c, const sk_lease *cur, sk_lease *next, sk_error *err)
{
	lease_swap w = { cur, next };
	sk_claimed_write cw = { &sk_claim_lease, cur->name, cur->version, NULL, verify, write_next,
		&w };

	return sk_store_claimed(s, c, &cw, err);
}

int
sk_mongo_lease_swap(sk_store *store, const sk_lease *cur, sk_lease *next, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	sk_store_conn c = { 0 };
	int rc;

	sk_store_conn_open(s, &c, SK_COLL_LEASES);
	rc = cur == NULL ? insert(s, &c, next, err) : swap(s, &c, cur, next, err);
	sk_store_conn_close(s, &c);
	return rc;
}
