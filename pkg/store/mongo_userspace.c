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

/* One write under a claim on version `expected` of `name` (the arg of
 * sk_store_claimed's steps): the stored object read under the claim, and
 * what the write needs. */
typedef struct wr {
	const char *name;
	int64_t expected;
	sk_userspace *cur; /* verify: the stored object (owned) */
	sk_userspace *next; /* the object to write (owned) */
	const sk_userspace *us; /* update: the caller's object */
	const sk_userspace_status *status; /* status writes */
	const char *finalizer; /* remove_finalizer */
	sk_userspace **out; /* the object as written (or as stored when unchanged) */
} wr;

/* lost: the claim is another's; says why: the object is gone, moved past
 * `expected` (a stale writer; the claim left by the write that moved it),
 * or a write is in progress. */
static int
claim_lost(sk_mongo *s, sk_store_conn *c, void *arg, sk_error *err)
{
	wr *w = arg;
	sk_userspace *now = NULL;
	sk_error e2;
	int rc = SK_ECONFLICT;

	sk_error_clear(&e2);
	if (load(s, c, w->name, &now, &e2) == SK_ENOTFOUND)
		rc = sk_store_not_found(w->name, err);
	else if (now != NULL && now->meta.resource_version != w->expected)
		rc = sk_store_conflict(w->name, w->expected, now->meta.resource_version, err);
	sk_userspace_free(now);
	return rc;
}

/* verify: reads the object under the claim into w->cur; SK_ENOTFOUND when
 * gone, SK_ECONFLICT when no longer at version `expected`. */
static int
load_verified(sk_mongo *s, sk_store_conn *c, void *arg, sk_error *err)
{
	wr *w = arg;
	int rc = load(s, c, w->name, &w->cur, err);

	if (rc == 0 && w->cur->meta.resource_version != w->expected)
		rc = sk_store_conflict(w->name, w->expected, w->cur->meta.resource_version, err);
	return rc;
}

/* The claimed write of w, with the re-read under the claim or (a fresh
 * copy, mongo_cas.c) without it. */
static int
claimed(sk_mongo *s, sk_store_conn *c, wr *w, bool reread, sk_claim_step write, sk_error *err)
{
	sk_claimed_write cw = { &sk_claim_userspace, w->name, w->expected, claim_lost,
		reread ? load_verified : NULL, write, w };

	return sk_store_claimed(s, c, &cw, err);
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
	if (mongoc_collection_replace_one(c->coll, filter, doc, NULL, &reply, &berr)) {
		c->written = sk_mongo_reply_count(&reply, "matchedCount") == 1;
		rc = c->written ? 0 : sk_store_not_found(next->meta.name, err);
	} else if (sk_store_is_duplicate(&berr))
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
	if (mongoc_collection_delete_one(c->coll, filter, NULL, &reply, &berr)) {
		c->written = sk_mongo_reply_count(&reply, "deletedCount") == 1;
		rc = c->written ? 0 : sk_store_not_found(name, err);
	} else {
		rc = sk_store_fail(s, &berr, "delete userspace", err);
		c->unsure = true;
	}
	bson_destroy(&reply);
done:
	bson_destroy(filter);
	return rc;
}

static int
write_delete(sk_mongo *s, sk_store_conn *c, void *arg, sk_error *err)
{
	return delete_doc(s, c, ((wr *)arg)->name, err);
}

/* Deletes the document when its resourceVersion is still `expected`. */
static int
delete_cas(sk_mongo *s, sk_store_conn *c, const char *name, int64_t expected, sk_error *err)
{
	wr w = { .name = name, .expected = expected };
	int rc = claimed(s, c, &w, true, write_delete, err);

	sk_userspace_free(w.cur);
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

/* w->next as the next version over the claimed one (then *w->out when
 * asked; w->next is taken either way). */
static int
write_next(sk_mongo *s, sk_store_conn *c, void *arg, sk_error *err)
{
	wr *w = arg;
	int rc = sk_store_next_rv(s, c->client, w->expected, &w->next->meta.resource_version, err);

	if (rc == 0)
		rc = replace(s, c, w->next, err);
	if (rc == 0 && w->out != NULL) {
		*w->out = w->next;
		w->next = NULL;
	}
	return rc;
}

/* A write whose next is known before the claim (a copy read a moment ago). */
static int
commit(sk_mongo *s, sk_store_conn *c, wr *w, bool reread, sk_error *err)
{
	int rc = claimed(s, c, w, reread, write_next, err);

	sk_userspace_free(w->cur);
	sk_userspace_free(w->next);
	return rc;
}

/* The claimed write of w, re-read under the claim, on a connection of its
 * own; frees what w holds after. */
static int
claimed_reread(sk_mongo *s, wr *w, sk_claim_step write, sk_error *err)
{
	sk_store_conn c = { 0 };
	int rc;

	sk_store_conn_open(s, &c, SK_COLL_USERSPACES);
	rc = claimed(s, &c, w, true, write, err);
	sk_store_conn_close(s, &c);
	sk_userspace_free(w->cur);
	sk_userspace_free(w->next);
	return rc;
}

/* next (the stored object changed) over the claimed version; NULL: nothing
 * changed, nothing written, *out is the stored object. */
static int
write_changed(sk_mongo *s, sk_store_conn *c, wr *w, sk_userspace *next, sk_error *err)
{
	w->next = next;
	if (next != NULL)
		return write_next(s, c, w, err);
	*w->out = w->cur;
	w->cur = NULL;
	return 0;
}

/* write, update: the caller's labels, annotations and spec over the stored object. */
static int
write_update(sk_mongo *s, sk_store_conn *c, void *arg, sk_error *err)
{
	wr *w = arg;

	return write_changed(s, c, w, sk_store_updated_object(w->cur, w->us), err);
}

int
sk_mongo_update(sk_store *store, const sk_userspace *us, sk_userspace **out, sk_error *err)
{
	wr w = {
		.name = us->meta.name, .expected = us->meta.resource_version, .us = us, .out = out
	};

	return claimed_reread(sk_mongo_of(store), &w, write_update, err);
}

/* write, a status write over the stored object (read again under the claim). */
static int
write_status_over(sk_mongo *s, sk_store_conn *c, void *arg, sk_error *err)
{
	wr *w = arg;

	return write_changed(s, c, w, sk_store_with_status(w->cur, w->status), err);
}

/* One status write alone (mongo_batch.c coalesces concurrent ones). */
int
sk_mongo_write_status_one(sk_store *store, const sk_userspace *base,
        const sk_userspace_status *status, sk_userspace **out, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	sk_store_conn c = { 0 };
	wr w = { .name = base->meta.name,
		.expected = base->meta.resource_version,
		.status = status,
		.out = out };
	int rc;

	*out = NULL;
	if (!sk_store_copy_fresh(base->meta.read_ms))
		return claimed_reread(s, &w, write_status_over, err);
	/* A fresh copy: written over without a re-read (mongo_cas.c), and the
	 * one "did the status change?" of this write asked before any claim. */
	w.next = sk_store_with_status(base, status);
	if (w.next == NULL) {
		*out = sk_userspace_dup(base);
		return 0;
	}
	sk_store_conn_open(s, &c, SK_COLL_USERSPACES);
	rc = commit(s, &c, &w, false, err);
	sk_store_conn_close(s, &c);
	return rc;
}

/* One attempt of mark_deleted against the version just read. */
static int
mark_once(sk_mongo *s, sk_store_conn *c, const char *name, sk_error *err)
{
	sk_userspace *cur = NULL;
	int rc = load(s, c, name, &cur, err);
	wr w = { .name = name };

	if (rc != 0)
		return rc;
	w.expected = cur->meta.resource_version;
	if (cur->meta.n_finalizers == 0) {
		rc = delete_cas(s, c, name, w.expected, err);
	} else if (cur->meta.deletion_ms == 0) {
		cur->meta.deletion_ms = sk_now_ms();
		w.next = cur;
		cur = NULL;
		rc = commit(s, c, &w, true, err);
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

/* write, remove_finalizer: the stored object without it; deleted when it
 * was the last and deletion was asked; nothing when it is not there. */
static int
write_without_finalizer(sk_mongo *s, sk_store_conn *c, void *arg, sk_error *err)
{
	wr *w = arg;

	if (!sk_userspace_has_finalizer(w->cur, w->finalizer))
		return 0;
	sk_store_drop_finalizer(&w->cur->meta, w->finalizer);
	if (w->cur->meta.n_finalizers == 0 && w->cur->meta.deletion_ms != 0)
		return delete_doc(s, c, w->name, err);
	w->next = w->cur;
	w->cur = NULL;
	return write_next(s, c, w, err);
}

int
sk_mongo_remove_finalizer(sk_store *store, const char *name, int64_t resource_version,
        const char *finalizer, sk_error *err)
{
	wr w = { .name = name, .expected = resource_version, .finalizer = finalizer };

	return claimed_reread(sk_mongo_of(store), &w, write_without_finalizer, err);
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
