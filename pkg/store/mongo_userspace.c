/*
 * store/mongo_userspace: create, get, list, compare-and-swap updates,
 * finalizers and removal of UserSpace documents on the MongoDB-wire backend.
 *
 * A write over version V of an object: claim V (mongo_cas.c; one writer per
 * version), check that the stored object is still at V, take the next
 * resourceVersion (a clock, no round-trip), replace the document by _id and
 * leave the claim to the sweep (a claim whose holder wrote nothing is
 * deleted at once): three round-trips. Only the holder of claim V can move
 * an object away from V, so the check and the replace act as one
 * compare-and-swap even on servers where a filtered update is
 * read-then-write (FerretDB); a writer that read an older version gets
 * SK_ECONFLICT.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mongo_int.h"

#define SK_CAS_RETRIES 5

/* Reads one document by a filter; SK_ENOTFOUND when none matches. */
static int
find_one(sk_mongo *s, sk_store_conn *c, const bson_t *filter, sk_userspace **out, sk_error *err)
{
	int64_t t0 = sk_monotonic_ms();
	bson_t *opts = BCON_NEW("limit", BCON_INT64(1));
	mongoc_cursor_t *cur = mongoc_collection_find_with_opts(c->coll, filter, opts, NULL);
	const bson_t *doc;
	bson_error_t berr;
	int rc = SK_ENOTFOUND;

	*out = NULL;
	if (mongoc_cursor_next(cur, &doc)) {
		rc = sk_store_userspace_from_doc(doc, out, err);
		if (rc == 0) {
			(*out)->meta.read_ms = t0;
			sk_store_rv_observe(s, (*out)->meta.resource_version);
		}
	} else if (mongoc_cursor_error(cur, &berr))
		rc = sk_store_fail(s, &berr, "read userspace", err);
	mongoc_cursor_destroy(cur);
	bson_destroy(opts);
	return rc;
}

static int
load(sk_mongo *s, sk_store_conn *c, const char *name, sk_userspace **out, sk_error *err)
{
	bson_t *filter;
	int rc;

	*out = NULL;
	if (name == NULL || *name == '\0')
		return sk_error_set(err, SK_EINVALID, "metadata.name: required");
	filter = BCON_NEW("_id", BCON_UTF8(name));
	rc = find_one(s, c, filter, out, err);

	bson_destroy(filter);
	if (rc == SK_ENOTFOUND)
		sk_store_not_found(name, err);
	return rc;
}

/* SK_ENOTFOUND when gone, SK_ECONFLICT when no longer at version `expected`. */
static int
verify(sk_mongo *s, sk_store_conn *c, const char *name, int64_t expected, sk_error *err)
{
	sk_userspace *now = NULL;
	int rc = load(s, c, name, &now, err);

	if (rc == 0 && now->meta.resource_version != expected)
		rc = sk_store_conflict(name, expected, now->meta.resource_version, err);
	sk_userspace_free(now);
	return rc;
}

/* Claims version `expected` of `name` (mongo_cas.c). When another claim holds it,
 * says why: the object is gone, moved past `expected` (a stale writer; the
 * claim left by the write that moved it), or a write is in progress. */
static int
claim_version(sk_mongo *s, sk_store_conn *c, const char *name, int64_t expected, char **claim,
        sk_error *err)
{
	sk_userspace *now = NULL;
	sk_error e2;
	int rc;

	c->claim_ms = sk_monotonic_ms();
	rc = sk_store_claim(s, c->client, name, expected, claim, err);

	if (rc != SK_ECONFLICT)
		return rc;
	sk_error_clear(&e2);
	if (load(s, c, name, &now, &e2) == SK_ENOTFOUND)
		rc = sk_store_not_found(name, err);
	else if (now != NULL && now->meta.resource_version != expected)
		rc = sk_store_conflict(name, expected, now->meta.resource_version, err);
	sk_userspace_free(now);
	return rc;
}

/* Releases a claim, unless a write under it may have happened (mongo_cas.c). */
static void
release_claim(sk_mongo *s, sk_store_conn *c, char *claim)
{
	if (c->unsure)
		sk_store_retire(&claim);
	sk_store_release(s, c->client, claim);
}

/* Before a write under a claim: SK_ECONFLICT (transient) when the claim is
 * too old to write under (mongo_cas.c). */
static int
claim_still_usable(const sk_store_conn *c, const char *name, sk_error *err)
{
	if (c->claim_ms == 0 || sk_store_claim_usable(c->claim_ms))
		return 0;
	return sk_error_set(err, SK_ECONFLICT,
	        "userspace \"%s\": the write took too long after its claim; not written, retry",
	        name);
}

/* A duplicate-key error on spec.userID: name the object that holds it. */
static int
user_id_taken(sk_mongo *s, sk_store_conn *c, const sk_userspace *us, sk_error *err)
{
	bson_t *filter = BCON_NEW("spec.userID", BCON_UTF8(us->spec.user_id), "_id", "{", "$ne",
	        BCON_UTF8(us->meta.name), "}");
	sk_userspace *other = NULL;
	sk_error ignored;

	find_one(s, c, filter, &other, &ignored);
	sk_store_user_id_taken(us->spec.user_id, other ? other->meta.name : NULL, err);
	sk_userspace_free(other);
	bson_destroy(filter);
	return SK_ECONFLICT;
}

/* Replaces the document (the caller holds the claim and verified the version);
 * next->meta.read_ms becomes the time the write started. */
static int
replace(sk_mongo *s, sk_store_conn *c, sk_userspace *next, sk_error *err)
{
	bson_t *filter = BCON_NEW("_id", BCON_UTF8(next->meta.name));
	bson_t *doc = sk_store_doc_from_userspace(next, err);
	int64_t t0 = sk_monotonic_ms();
	bson_error_t berr;
	bson_t reply; /* initialized by every mongoc_collection_* call */
	int rc = SK_EINVALID;

	if (doc == NULL)
		goto done;
	rc = claim_still_usable(c, next->meta.name, err);
	if (rc != 0)
		goto done;
	if (mongoc_collection_replace_one(c->coll, filter, doc, NULL, &reply, &berr))
		rc = sk_mongo_reply_count(&reply, "matchedCount") == 1
		        ? 0
		        : sk_store_not_found(next->meta.name, err);
	else if (sk_store_is_duplicate(&berr))
		rc = user_id_taken(s, c, next, err);
	else {
		rc = sk_store_fail(s, &berr, "update userspace", err);
		c->unsure = true;
	}
	bson_destroy(&reply);
	if (rc == 0)
		next->meta.read_ms = t0;
done:
	bson_destroy(doc);
	bson_destroy(filter);
	return rc;
}

static int
delete_doc(sk_mongo *s, sk_store_conn *c, const char *name, sk_error *err)
{
	bson_t *filter = BCON_NEW("_id", BCON_UTF8(name));
	bson_error_t berr;
	bson_t reply;
	int rc = claim_still_usable(c, name, err);

	if (rc != 0)
		goto done;
	if (mongoc_collection_delete_one(c->coll, filter, NULL, &reply, &berr))
		rc = sk_mongo_reply_count(&reply, "deletedCount") == 1
		        ? 0
		        : sk_store_not_found(name, err);
	else {
		rc = sk_store_fail(s, &berr, "delete userspace", err);
		c->unsure = true;
	}
	bson_destroy(&reply);
done:
	bson_destroy(filter);
	return rc;
}

/* Deletes the document when its resourceVersion is still `expected`. */
static int
delete_cas(sk_mongo *s, sk_store_conn *c, const char *name, int64_t expected, sk_error *err)
{
	char *claim = NULL;
	int rc = claim_version(s, c, name, expected, &claim, err);

	if (rc == 0)
		rc = verify(s, c, name, expected, err);
	if (rc == 0)
		rc = delete_doc(s, c, name, err);
	if (rc == 0)
		sk_store_retire(&claim);
	release_claim(s, c, claim);
	return rc;
}

static int
insert(sk_mongo *s, sk_store_conn *c, const sk_userspace *obj, sk_error *err)
{
	bson_t *doc = sk_store_doc_from_userspace(obj, err);
	bson_error_t berr;
	sk_userspace *existing = NULL;
	sk_error ignored;
	int rc = SK_EINVALID;

	if (doc == NULL)
		return rc;
	if (mongoc_collection_insert_one(c->coll, doc, NULL, NULL, &berr))
		rc = 0;
	else if (!sk_store_is_duplicate(&berr))
		rc = sk_store_fail(s, &berr, "create userspace", err);
	else if (load(s, c, obj->meta.name, &existing, &ignored) == 0)
		rc = sk_error_set(
		        err, SK_EEXISTS, "userspace \"%s\" already exists", obj->meta.name);
	else
		rc = user_id_taken(s, c, obj, err);
	sk_userspace_free(existing);
	bson_destroy(doc);
	return rc;
}

int
sk_mongo_create(sk_store *store, const sk_userspace *us, sk_userspace **out, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	sk_store_conn c = { 0 };
	sk_userspace *obj = sk_store_new_object(us);
	int rc;

	sk_store_conn_open(s, &c, SK_COLL_USERSPACES);
	rc = sk_store_next_rv(s, c.client, 0, &obj->meta.resource_version, err);
	obj->meta.read_ms = sk_monotonic_ms();
	if (rc == 0)
		rc = insert(s, &c, obj, err);
	sk_store_conn_close(s, &c);
	if (rc == 0)
		*out = obj;
	else
		sk_userspace_free(obj);
	return rc;
}

int
sk_mongo_get(sk_store *store, const char *name, sk_userspace **out, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	sk_store_conn c = { 0 };
	int rc;

	sk_store_conn_open(s, &c, SK_COLL_USERSPACES);
	rc = load(s, &c, name, out, err);
	sk_store_conn_close(s, &c);
	return rc;
}

static void
list_push(sk_userspace_list *l, sk_userspace *us)
{
	l->items = sk_realloc(l->items, (l->len + 1) * sizeof(*l->items));
	l->items[l->len++] = us;
}

/* Runs a query and collects the objects the selector (may be NULL) matches. */
static int
query(sk_mongo *s, const bson_t *filter, const bson_t *opts, const sk_selector *sel,
        sk_userspace_list *out, sk_error *err)
{
	sk_store_conn c = { 0 };
	mongoc_cursor_t *cur;
	const bson_t *doc;
	bson_error_t berr;
	int64_t t0;
	int rc = 0;

	sk_store_conn_open(s, &c, SK_COLL_USERSPACES);
	t0 = sk_monotonic_ms();
	cur = mongoc_collection_find_with_opts(c.coll, filter, opts, NULL);
	while (rc == 0 && mongoc_cursor_next(cur, &doc)) {
		sk_userspace *us = NULL;

		rc = sk_store_userspace_from_doc(doc, &us, err);
		if (rc != 0)
			break;
		us->meta.read_ms = t0;
		if (us->meta.resource_version > out->resource_version)
			out->resource_version = us->meta.resource_version;
		sk_store_rv_observe(s, us->meta.resource_version);
		if (sel == NULL || sk_selector_matches(sel, &us->meta.labels))
			list_push(out, us);
		else
			sk_userspace_free(us);
	}
	if (rc == 0 && mongoc_cursor_error(cur, &berr))
		rc = sk_store_fail(s, &berr, "list userspaces", err);
	mongoc_cursor_destroy(cur);
	sk_store_conn_close(s, &c);
	if (rc != 0)
		sk_userspace_list_dispose(out);
	return rc;
}

int
sk_mongo_list(sk_store *store, const sk_selector *selector, sk_userspace_list *out, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	bson_t filter = BSON_INITIALIZER;
	bson_t *opts = BCON_NEW("sort", "{", "_id", BCON_INT32(1), "}", "batchSize",
	        BCON_INT32(SK_STORE_LIST_BATCH));
	int rc;

	memset(out, 0, sizeof(*out));
	rc = query(s, &filter, opts, selector, out, err);
	bson_destroy(opts);
	bson_destroy(&filter);
	return rc;
}

int
sk_mongo_list_since(sk_store *store, int64_t since, sk_userspace_list *out, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	bson_t *filter = BCON_NEW("metadata.resourceVersion", "{", "$gt", BCON_INT64(since), "}");
	bson_t *opts = BCON_NEW("sort", "{", "metadata.resourceVersion", BCON_INT32(1), "}",
	        "batchSize", BCON_INT32(SK_STORE_LIST_BATCH));
	int rc;

	memset(out, 0, sizeof(*out));
	out->resource_version = since;
	rc = query(s, filter, opts, NULL, out, err);
	bson_destroy(opts);
	bson_destroy(filter);
	return rc;
}

/* The query of sk_store_list (since < 0) or sk_store_list_since. */
static void
scan_query(int64_t since, bson_t **filter, bson_t **opts)
{
	const char *key = since < 0 ? "_id" : "metadata.resourceVersion";

	*filter = since < 0
	        ? bson_new()
	        : BCON_NEW("metadata.resourceVersion", "{", "$gt", BCON_INT64(since), "}");
	*opts = BCON_NEW(
	        "sort", "{", key, BCON_INT32(1), "}", "batchSize", BCON_INT32(SK_STORE_LIST_BATCH));
}

int
sk_mongo_scan_packed(
        sk_store *store, int64_t since, sk_store_packed_fn fn, void *arg, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	sk_store_conn c = { 0 };
	bson_t *filter, *opts;
	mongoc_cursor_t *cur;
	const bson_t *doc;
	bson_error_t berr;
	int64_t t0;
	int rc = 0;

	scan_query(since, &filter, &opts);
	sk_store_conn_open(s, &c, SK_COLL_USERSPACES);
	t0 = sk_monotonic_ms();
	cur = mongoc_collection_find_with_opts(c.coll, filter, opts, NULL);
	while (rc == 0 && mongoc_cursor_next(cur, &doc)) {
		sk_packed_userspace *p = sk_store_pack_doc(doc, t0, err);

		if (p == NULL) {
			rc = SK_EINVALID;
			break;
		}
		sk_store_rv_observe(s, sk_packed_resource_version(p));
		fn(p, arg);
	}
	if (rc == 0 && mongoc_cursor_error(cur, &berr))
		rc = sk_store_fail(s, &berr, "list userspaces", err);
	mongoc_cursor_destroy(cur);
	sk_store_conn_close(s, &c);
	bson_destroy(opts);
	bson_destroy(filter);
	return rc;
}

/* Claims version `expected`, takes the next resourceVersion and writes
 * next over it (see mongo_cas.c for why the claim). */
static int
commit(sk_mongo *s, sk_store_conn *c, sk_userspace *next, int64_t expected, sk_error *err)
{
	char *claim = NULL;
	int rc = claim_version(s, c, next->meta.name, expected, &claim, err);

	if (rc == 0)
		rc = verify(s, c, next->meta.name, expected, err);
	if (rc == 0)
		rc = sk_store_next_rv(s, c->client, expected, &next->meta.resource_version, err);
	if (rc == 0)
		rc = replace(s, c, next, err);
	if (rc == 0)
		sk_store_retire(&claim);
	release_claim(s, c, claim);
	return rc;
}

/* Claims version `expected` of `name` and loads it: SK_ECONFLICT when the
 * stored object is at another version. The caller releases *claim. */
static int
load_claimed(sk_mongo *s, sk_store_conn *c, const char *name, int64_t expected, char **claim,
        sk_userspace **cur, sk_error *err)
{
	int rc = claim_version(s, c, name, expected, claim, err);

	if (rc == 0)
		rc = load(s, c, name, cur, err);
	if (rc == 0 && (*cur)->meta.resource_version != expected)
		rc = sk_store_conflict(name, expected, (*cur)->meta.resource_version, err);
	return rc;
}

/* Writes next under a claim taken by load_claimed; once the object moved
 * off the claimed version the claim is retired, not deleted (mongo_cas.c). */
static int
commit_claimed(sk_mongo *s, sk_store_conn *c, sk_userspace *next, char **claim, sk_error *err)
{
	int64_t expected = next->meta.resource_version;
	int rc = sk_store_next_rv(s, c->client, expected, &next->meta.resource_version, err);

	if (rc == 0)
		rc = replace(s, c, next, err);
	if (rc == 0)
		sk_store_retire(claim);
	return rc;
}

int
sk_mongo_update(sk_store *store, const sk_userspace *us, sk_userspace **out, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	sk_store_conn c = { 0 };
	sk_userspace *cur = NULL, *next = NULL;
	char *claim = NULL;
	int rc;

	sk_store_conn_open(s, &c, SK_COLL_USERSPACES);
	rc = load_claimed(s, &c, us->meta.name, us->meta.resource_version, &claim, &cur, err);
	if (rc != 0)
		goto done;
	next = sk_store_updated_object(cur, us);
	if (next == NULL) {
		*out = cur; /* nothing changed: nothing written */
		cur = NULL;
		goto done;
	}
	rc = commit_claimed(s, &c, next, &claim, err);
	if (rc == 0) {
		*out = next;
		next = NULL;
	}
done:
	release_claim(s, &c, claim);
	sk_store_conn_close(s, &c);
	sk_userspace_free(cur);
	sk_userspace_free(next);
	return rc;
}

/* Writes next (cur with the new status, sk_store_with_status) under the
 * claim on cur's version; next NULL (the status is unchanged): nothing,
 * *out is a copy of cur. Takes next. */
static int
commit_status(sk_mongo *s, sk_store_conn *c, const sk_userspace *cur, sk_userspace *next,
        char **claim, sk_userspace **out, sk_error *err)
{
	int rc = 0;

	if (next == NULL)
		next = sk_userspace_dup(cur);
	else
		rc = commit_claimed(s, c, next, claim, err);
	if (rc == 0)
		*out = next;
	else
		sk_userspace_free(next);
	return rc;
}

/* The status write over the stored object (read again, under the claim). */
static int
update_status(sk_mongo *s, const char *name, int64_t resource_version,
        const sk_userspace_status *status, sk_userspace **out, sk_error *err)
{
	sk_store_conn c = { 0 };
	sk_userspace *cur = NULL;
	char *claim = NULL;
	int rc;

	*out = NULL;
	sk_store_conn_open(s, &c, SK_COLL_USERSPACES);
	rc = load_claimed(s, &c, name, resource_version, &claim, &cur, err);
	if (rc == 0)
		rc = commit_status(s, &c, cur, sk_store_with_status(cur, status), &claim, out, err);
	release_claim(s, &c, claim);
	sk_store_conn_close(s, &c);
	sk_userspace_free(cur);
	return rc;
}

int
sk_mongo_write_status(sk_store *store, const sk_userspace *base, const sk_userspace_status *status,
        sk_userspace **out, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	sk_store_conn c = { 0 };
	sk_userspace *next;
	char *claim = NULL;
	int rc;

	if (!sk_store_copy_fresh(base->meta.read_ms))
		return update_status(
		        s, base->meta.name, base->meta.resource_version, status, out, err);
	/* The one "did the status change?" of this write: unchanged writes
	 * nothing and takes no claim. */
	next = sk_store_with_status(base, status);
	if (next == NULL) {
		*out = sk_userspace_dup(base);
		return 0;
	}
	sk_store_conn_open(s, &c, SK_COLL_USERSPACES);
	rc = claim_version(s, &c, base->meta.name, base->meta.resource_version, &claim, err);
	if (rc == 0)
		rc = commit_status(s, &c, base, next, &claim, out, err);
	else
		sk_userspace_free(next);
	release_claim(s, &c, claim);
	sk_store_conn_close(s, &c);
	return rc;
}

/* One attempt of mark_deleted against the version just read. */
static int
mark_once(sk_mongo *s, sk_store_conn *c, const char *name, sk_error *err)
{
	sk_userspace *cur = NULL;
	int rc = load(s, c, name, &cur, err);

	if (rc != 0)
		return rc;
	if (cur->meta.n_finalizers == 0) {
		rc = delete_cas(s, c, name, cur->meta.resource_version, err);
	} else if (cur->meta.deletion_ms == 0) {
		int64_t expected = cur->meta.resource_version;

		cur->meta.deletion_ms = sk_now_ms();
		rc = commit(s, c, cur, expected, err);
	}
	sk_userspace_free(cur);
	return rc;
}

typedef int (*attempt_fn)(sk_mongo *s, sk_store_conn *c, const char *name, sk_error *err);

/* Runs a read-then-write of `name` again, with a short pause, while another
 * writer beats it to the version it read. */
static int
retry_conflicts(sk_mongo *s, const char *name, attempt_fn once, sk_error *err)
{
	sk_store_conn c = { 0 };
	int rc = SK_ECONFLICT;

	sk_store_conn_open(s, &c, SK_COLL_USERSPACES);
	for (int attempt = 0; attempt < SK_CAS_RETRIES && rc == SK_ECONFLICT; attempt++) {
		if (attempt > 0)
			usleep((useconds_t)(10000 * attempt));
		rc = once(s, &c, name, err);
	}
	sk_store_conn_close(s, &c);
	return rc;
}

int
sk_mongo_mark_deleted(sk_store *store, const char *name, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);

	return retry_conflicts(s, name, mark_once, err);
}

int
sk_mongo_remove_finalizer(sk_store *store, const char *name, int64_t resource_version,
        const char *finalizer, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	sk_store_conn c = { 0 };
	sk_userspace *cur = NULL;
	char *claim = NULL;
	int rc;

	sk_store_conn_open(s, &c, SK_COLL_USERSPACES);
	rc = load_claimed(s, &c, name, resource_version, &claim, &cur, err);
	if (rc != 0 || !sk_userspace_has_finalizer(cur, finalizer))
		goto done;
	sk_store_drop_finalizer(&cur->meta, finalizer);
	if (cur->meta.n_finalizers == 0 && cur->meta.deletion_ms != 0) {
		rc = delete_doc(s, &c, name, err);
		if (rc == 0)
			sk_store_retire(&claim);
	} else {
		rc = commit_claimed(s, &c, cur, &claim, err);
	}
done:
	release_claim(s, &c, claim);
	sk_store_conn_close(s, &c);
	sk_userspace_free(cur);
	return rc;
}

/* One attempt of sk_store_remove against the version just read. */
static int
remove_once(sk_mongo *s, sk_store_conn *c, const char *name, sk_error *err)
{
	sk_userspace *cur = NULL;
	int rc = load(s, c, name, &cur, err);

	if (rc == 0)
		rc = delete_cas(s, c, name, cur->meta.resource_version, err);
	sk_userspace_free(cur);
	return rc;
}

int
sk_mongo_remove(sk_store *store, const char *name, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);

	/* Under a claim on the version removed, like every other write: a
	 * writer holding a fresh copy of it must lose (mongo_cas.c). */
	return retry_conflicts(s, name, remove_once, err);
}
