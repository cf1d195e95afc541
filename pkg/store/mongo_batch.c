/*
 * store/mongo_batch: status writes and events of many objects, coalesced
 * into one command each where the server allows it (the store's
 * cost per new user).
 *
 * Writers that call at the same time join one batch: the first to find no
 * batch in flight sends it (its own write and every one queued by then),
 * the others wait for theirs, so no thread of its own and no timer; a lone
 * writer sends its write alone, as before. Every write keeps its own
 * compare-and-swap (mongo_cas.c) statement by statement:
 *   1. the claims "NAME/V" of the whole batch: one insert, ordered false, so
 *      each claim stands or falls alone (FerretDB reports a duplicate per
 *      document); a write whose claim is another's leaves the batch and
 *      takes the single path (mongo_userspace.c), which says why;
 *   2. the objects whose copy is not fresh: read by _id, each checked still
 *      at V under its claim (else not found or conflict, as alone);
 *   3. the new objects: one update of one replace statement each, by _id.
 *      A statement that matched nothing (the object removed by force
 *      meanwhile) is told from one that did by reading the versions back;
 *   4. the claims of writes that surely wrote nothing are deleted.
 * A command that fails without saying which statements ran leaves every
 * write of it unsure: its claims stay for the sweep, as for one write.
 * The fencing check (the shard lease, sk_ctl_fence_holds) is the caller's,
 * made just before it calls; a write may wait for the batch in flight
 * before its own is sent, at most one command round more than alone.
 *
 * Events: one update of one upsert statement per event (same $inc/$set as
 * mongo_events.c). A failed command is reported to every event of it
 * (events are informational; retrying statements that may have run would
 * count an occurrence twice).
 */
#include <stdlib.h>
#include <string.h>

#include "mongo_int.h"

#define SK_BATCH_MAX 128 /* writes per command at most */

/* ---- the queue both kinds share ---- */

typedef struct sk_batch_item sk_batch_item;
typedef void (*sk_batch_flush)(sk_mongo *s, sk_batch_item **items, size_t n);

struct sk_batch_item {
	sk_batch_item *link;
	bool done;
	int rc;
	sk_error *err;
	/* status writes */
	const sk_userspace *base;
	const sk_userspace_status *status;
	sk_userspace **out;
	sk_userspace *next; /* owned: the object to write */
	char *claim; /* the claim's id once taken (owned) */
	bool fallback; /* the claim is another's: the single path decides */
	bool written, unsure;
	/* events */
	const char *object, *uid, *type, *reason, *message;
};

typedef struct sk_batch_queue {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	sk_batch_item *head, **tail;
	bool flushing;
} sk_batch_queue;

struct sk_mongo_batches {
	sk_batch_queue status, events;
};

static void
queue_init(sk_batch_queue *q)
{
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->cv, NULL);
	q->head = NULL;
	q->tail = &q->head;
	q->flushing = false;
}

static void
queue_destroy(sk_batch_queue *q)
{
	pthread_mutex_destroy(&q->mu);
	pthread_cond_destroy(&q->cv);
}

void
sk_mongo_batches_init(sk_mongo *s)
{
	s->batches = sk_calloc(1, sizeof(*s->batches));
	queue_init(&s->batches->status);
	queue_init(&s->batches->events);
}

void
sk_mongo_batches_destroy(sk_mongo *s)
{
	if (s->batches == NULL)
		return;
	queue_destroy(&s->batches->status);
	queue_destroy(&s->batches->events);
	free(s->batches);
	s->batches = NULL;
}

/* Queues it and returns once a flush (this thread's or another's) did it. */
static void
submit(sk_mongo *s, sk_batch_queue *q, sk_batch_item *it, sk_batch_flush flush)
{
	sk_batch_item *batch[SK_BATCH_MAX];

	pthread_mutex_lock(&q->mu);
	it->link = NULL;
	*q->tail = it;
	q->tail = &it->link;
	while (!it->done) {
		size_t n = 0;

		if (q->flushing) {
			pthread_cond_wait(&q->cv, &q->mu);
			continue;
		}
		while (q->head != NULL && n < SK_BATCH_MAX) {
			batch[n++] = q->head;
			q->head = q->head->link;
		}
		if (q->head == NULL)
			q->tail = &q->head;
		q->flushing = true;
		pthread_mutex_unlock(&q->mu);
		flush(s, batch, n);
		pthread_mutex_lock(&q->mu);
		for (size_t i = 0; i < n; i++)
			batch[i]->done = true;
		q->flushing = false;
		pthread_cond_broadcast(&q->cv);
	}
	pthread_mutex_unlock(&q->mu);
}

/* ---- status writes ---- */

static void
fail_all(sk_batch_item **items, size_t n, int rc, const sk_error *e)
{
	for (size_t i = 0; i < n; i++) {
		if (items[i]->rc != 0 || items[i]->fallback)
			continue;
		items[i]->rc = rc;
		*items[i]->err = *e;
	}
}

static bool
pending(const sk_batch_item *it)
{
	return it->rc == 0 && !it->fallback && *it->out == NULL;
}

/* 1. One insert of every claim; a duplicate sends its write to the single path. */
static int
take_claims(sk_mongo *s, mongoc_client_t *client, sk_batch_item **items, size_t n, sk_error *err)
{
	mongoc_collection_t *coll =
	        mongoc_client_get_collection(client, s->database, SK_COLL_CLAIMS);
	bson_t *docs[SK_BATCH_MAX];
	bson_t *opts = BCON_NEW("ordered", BCON_BOOL(false));
	int64_t now = sk_now_ms();
	bson_t reply;
	bson_error_t berr;
	bson_iter_t it, arr, we;
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		items[i]->claim = sk_asprintf("%s%s/%lld", sk_claim_userspace.prefix,
		        items[i]->base->meta.name,
		        (long long)items[i]->base->meta.resource_version);
		docs[i] = BCON_NEW("_id", BCON_UTF8(items[i]->claim), "at", BCON_DATE_TIME(now));
	}
	if (!mongoc_collection_insert_many(coll, (const bson_t **)docs, n, opts, &reply, &berr)) {
		bool per_doc = bson_iter_init_find(&it, &reply, "writeErrors") &&
		        BSON_ITER_HOLDS_ARRAY(&it) && bson_iter_recurse(&it, &arr);

		/* Without per-document errors nothing says which claims were taken. */
		if (!per_doc)
			rc = sk_store_fail(s, &berr, "claim userspace version", err);
		while (per_doc && bson_iter_next(&arr)) {
			int64_t idx = -1, code = 0;

			if (!BSON_ITER_HOLDS_DOCUMENT(&arr) || !bson_iter_recurse(&arr, &we))
				continue;
			while (bson_iter_next(&we)) {
				if (strcmp(bson_iter_key(&we), "index") == 0)
					idx = bson_iter_as_int64(&we);
				else if (strcmp(bson_iter_key(&we), "code") == 0)
					code = bson_iter_as_int64(&we);
			}
			if (idx < 0 || (size_t)idx >= n)
				continue;
			free(items[idx]->claim); /* not ours */
			items[idx]->claim = NULL;
			if (code == SK_DUPLICATE_KEY)
				items[idx]->fallback = true;
			else
				items[idx]->rc = sk_store_fail(
				        s, &berr, "claim userspace version", items[idx]->err);
		}
	} else {
		sk_store_sweep_claims(s, coll);
	}
	bson_destroy(&reply);
	for (size_t i = 0; i < n; i++)
		bson_destroy(docs[i]);
	bson_destroy(opts);
	mongoc_collection_destroy(coll);
	return rc;
}

/* 2. The objects whose copy is not fresh, read under their claims (by _id
 * one by one: FerretDB's SQLite backend looks up only an _id equality in
 * its index, an `$in` reads the whole collection); each is written over as
 * stored, or not at all. */
static void
reread(sk_mongo *s, mongoc_collection_t *coll, sk_batch_item **items, size_t n)
{
	bson_t *opts = BCON_NEW("limit", BCON_INT64(1));

	for (size_t i = 0; i < n; i++) {
		sk_batch_item *it = items[i];
		bson_t *filter;
		mongoc_cursor_t *cur;
		const bson_t *doc;
		bson_error_t berr;
		sk_userspace *stored = NULL;
		int64_t t0;

		if (!pending(it) || it->next != NULL)
			continue;
		filter = BCON_NEW("_id", BCON_UTF8(it->base->meta.name));
		t0 = sk_monotonic_ms();
		cur = mongoc_collection_find_with_opts(coll, filter, opts, NULL);
		if (mongoc_cursor_next(cur, &doc)) {
			it->rc = sk_store_userspace_from_doc(doc, &stored, it->err);
			if (stored != NULL)
				stored->meta.read_ms = t0; /* a copy as fresh as a get's */
		} else if (mongoc_cursor_error(cur, &berr)) {
			it->rc = sk_store_fail(s, &berr, "read userspace", it->err);
		} else { /* gone under its claim */
			it->rc = sk_store_not_found(it->base->meta.name, it->err);
		}
		if (stored != NULL) {
			sk_store_rv_observe(s, stored->meta.resource_version);
			if (stored->meta.resource_version != it->base->meta.resource_version)
				it->rc = sk_store_conflict(stored->meta.name,
				        it->base->meta.resource_version,
				        stored->meta.resource_version, it->err);
			else if ((it->next = sk_store_with_status(stored, it->status)) == NULL)
				*it->out = stored; /* unchanged: nothing to write */
			if (*it->out != stored)
				sk_userspace_free(stored);
		}
		mongoc_cursor_destroy(cur);
		bson_destroy(filter);
	}
	bson_destroy(opts);
}

/* After an update that matched fewer objects than it had statements: which
 * were written, read back by version. */
static void
read_back(sk_mongo *s, mongoc_collection_t *coll, sk_batch_item **w, size_t k)
{
	for (size_t i = 0; i < k; i++) {
		bson_t *filter = BCON_NEW("_id", BCON_UTF8(w[i]->next->meta.name),
		        "metadata.resourceVersion", BCON_INT64(w[i]->next->meta.resource_version));
		int64_t found =
		        mongoc_collection_count_documents(coll, filter, NULL, NULL, NULL, NULL);

		bson_destroy(filter);
		if (found == 1)
			w[i]->written = true;
		else if (found == 0)
			w[i]->rc = sk_store_not_found(w[i]->next->meta.name, w[i]->err);
		else
			w[i]->unsure = true;
	}
}

/* 3. One update of a replace statement per object still to write. */
static void
replace_all(sk_mongo *s, sk_store_conn *c, sk_batch_item **items, size_t n, int64_t claim_ms)
{
	mongoc_collection_t *coll = c->coll;
	sk_batch_item *w[SK_BATCH_MAX];
	bson_t *opts = BCON_NEW("ordered", BCON_BOOL(false));
	mongoc_bulk_operation_t *bulk =
	        mongoc_collection_create_bulk_operation_with_opts(coll, opts);
	int64_t t0 = sk_monotonic_ms();
	bson_t reply;
	bson_error_t berr;
	sk_error e;
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		sk_batch_item *it = items[i];
		bson_t *filter, *doc;

		if (it->rc != 0 || it->fallback || it->next == NULL || *it->out != NULL)
			continue;
		if (!sk_store_claim_usable(claim_ms)) {
			it->rc = sk_error_set(it->err, SK_ECONFLICT,
			        "userspace \"%s\": the write took too long after its claim; not "
			        "written, retry",
			        it->next->meta.name);
			continue;
		}
		it->rc = sk_store_next_rv(s, c->client, it->base->meta.resource_version,
		        &it->next->meta.resource_version, it->err);
		doc = it->rc == 0 ? sk_store_doc_from_userspace(it->next, it->err) : NULL;
		if (doc == NULL) {
			if (it->rc == 0)
				it->rc = SK_EINVALID;
			continue;
		}
		filter = BCON_NEW("_id", BCON_UTF8(it->next->meta.name));
		mongoc_bulk_operation_replace_one_with_opts(bulk, filter, doc, NULL, NULL);
		bson_destroy(filter);
		bson_destroy(doc);
		w[k++] = it;
	}
	if (k > 0) {
		bool ok = mongoc_bulk_operation_execute(bulk, &reply, &berr) != 0;
		bson_iter_t it;
		int64_t matched =
		        bson_iter_init_find(&it, &reply, "nMatched") ? bson_iter_as_int64(&it) : -1;

		if (ok && matched == (int64_t)k) {
			for (size_t i = 0; i < k; i++)
				w[i]->written = true;
		} else if (ok) {
			read_back(s, coll, w, k);
		} else {
			sk_store_fail(s, &berr, "update userspace", &e);
			for (size_t i = 0; i < k; i++) {
				w[i]->unsure = true;
				w[i]->rc = e.code;
				*w[i]->err = e;
			}
		}
		bson_destroy(&reply);
	}
	for (size_t i = 0; i < k; i++) {
		if (!w[i]->written)
			continue;
		w[i]->next->meta.read_ms = t0;
		*w[i]->out = w[i]->next;
		w[i]->next = NULL;
	}
	mongoc_bulk_operation_destroy(bulk);
	bson_destroy(opts);
}

/* 4. The claims whose writes surely wrote nothing, deleted one by one by
 * _id (the index; rare: a conflict, a status found unchanged). */
static void
release_unused(sk_mongo *s, mongoc_client_t *client, sk_batch_item **items, size_t n)
{
	mongoc_collection_t *coll = NULL;

	for (size_t i = 0; i < n; i++) {
		bson_t *filter;

		if (items[i]->claim == NULL || items[i]->written || items[i]->unsure)
			continue;
		if (coll == NULL)
			coll = mongoc_client_get_collection(client, s->database, SK_COLL_CLAIMS);
		filter = BCON_NEW("_id", BCON_UTF8(items[i]->claim));
		mongoc_collection_delete_one(coll, filter, NULL, NULL, NULL);
		bson_destroy(filter);
	}
	if (coll != NULL)
		mongoc_collection_destroy(coll);
}

static void
flush_status(sk_mongo *s, sk_batch_item **items, size_t n)
{
	sk_store_conn c = { 0 };
	sk_error e;
	int64_t claim_ms;

	if (n == 1) { /* alone: the single path, as before */
		items[0]->rc = sk_mongo_write_status_one(
		        &s->base, items[0]->base, items[0]->status, items[0]->out, items[0]->err);
		return;
	}
	sk_error_clear(&e);
	for (size_t i = 0; i < n; i++) { /* waited long enough to be stale: re-read */
		if (items[i]->next != NULL && !sk_store_copy_fresh(items[i]->base->meta.read_ms)) {
			sk_userspace_free(items[i]->next);
			items[i]->next = NULL;
		}
	}
	sk_store_conn_open(s, &c, SK_COLL_USERSPACES);
	claim_ms = sk_monotonic_ms();
	/* A claim is stamped with the wall clock: the guard first. */
	if (sk_mongo_clock_guard(s, c.client, &e) != 0) {
		fail_all(items, n, e.code, &e);
	} else if (take_claims(s, c.client, items, n, &e) != 0) {
		fail_all(items, n, e.code, &e);
		for (size_t i = 0; i < n; i++)
			items[i]->unsure = true; /* the claims may stand: left to the sweep */
	} else {
		reread(s, c.coll, items, n);
		replace_all(s, &c, items, n, claim_ms);
	}
	release_unused(s, c.client, items, n);
	sk_store_conn_close(s, &c);
}

int
sk_mongo_write_status(sk_store *store, const sk_userspace *base, const sk_userspace_status *status,
        sk_userspace **out, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	sk_batch_item it;

	memset(&it, 0, sizeof(it));
	*out = NULL;
	it.base = base;
	it.status = status;
	it.out = out;
	it.err = err;
	if (sk_store_copy_fresh(base->meta.read_ms)) {
		/* A fresh copy: written over without a re-read (mongo_cas.c), and
		 * "did the status change?" asked before any claim. */
		it.next = sk_store_with_status(base, status);
		if (it.next == NULL) {
			*out = sk_userspace_dup(base);
			return 0;
		}
	}
	submit(s, &s->batches->status, &it, flush_status);
	sk_userspace_free(it.next);
	free(it.claim);
	if (it.fallback) /* another holds the claim: the single path says why */
		return sk_mongo_write_status_one(store, base, status, out, err);
	return it.rc;
}

/* ---- events ---- */

static void
flush_events(sk_mongo *s, sk_batch_item **items, size_t n)
{
	sk_store_conn c = { 0 };
	mongoc_bulk_operation_t *bulk;
	bson_t *opts;
	bson_t reply;
	bson_error_t berr;
	sk_error e;

	if (n == 1) {
		items[0]->rc = sk_mongo_event_one(&s->base, items[0]->object, items[0]->uid,
		        items[0]->type, items[0]->reason, items[0]->message, items[0]->err);
		return;
	}
	sk_store_conn_open(s, &c, SK_COLL_EVENTS);
	opts = BCON_NEW("ordered", BCON_BOOL(true));
	bulk = mongoc_collection_create_bulk_operation_with_opts(c.coll, opts);
	for (size_t i = 0; i < n; i++) {
		sk_batch_item *it = items[i];
		char *id = sk_asprintf("%s/%s/%s/%s", it->object, it->uid, it->type, it->reason);
		bson_t *filter = BCON_NEW("_id", BCON_UTF8(id));
		bson_t *update = sk_mongo_event_update(
		        it->object, it->uid, it->type, it->reason, it->message);
		bson_t *uopts = BCON_NEW("upsert", BCON_BOOL(true));

		mongoc_bulk_operation_update_one_with_opts(bulk, filter, update, uopts, NULL);
		bson_destroy(uopts);
		bson_destroy(update);
		bson_destroy(filter);
		free(id);
	}
	if (!mongoc_bulk_operation_execute(bulk, &reply, &berr)) {
		sk_store_fail(s, &berr, "record event", &e);
		fail_all(items, n, e.code, &e);
	}
	bson_destroy(&reply);
	mongoc_bulk_operation_destroy(bulk);
	bson_destroy(opts);
	sk_store_conn_close(s, &c);
}

int
sk_mongo_event(sk_store *store, const char *object, const char *uid, const char *type,
        const char *reason, const char *message, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	sk_batch_item it;
	sk_userspace *none = NULL;

	memset(&it, 0, sizeof(it));
	it.out = &none;
	it.err = err;
	it.object = object;
	it.uid = uid;
	it.type = type;
	it.reason = reason;
	it.message = message ? message : "";
	submit(s, &s->batches->events, &it, flush_events);
	return it.rc;
}
