/*
 * store/mongo internals: the MongoDB-wire backend's handle, connections,
 * error classification, resourceVersions and claims (mongo_cas.c), and its
 * ops (mongo_userspace.c, mongo_events.c, mongo_lease.c).
 */
#ifndef SK_MONGO_INT_H
#define SK_MONGO_INT_H

#include <pthread.h>

#include "store_int.h"

#define SK_COLL_USERSPACES "userspaces"
#define SK_COLL_EVENTS "events"
#define SK_COLL_CLAIMS "claims"
#define SK_COLL_LEASES "leases"
#define SK_COLL_APPLIES "applies" /* apply records (mongo_record.c) */
#define SK_COLL_QUOTAS "spacequotas" /* SpaceQuotas (mongo_quota.c) */
#define SK_COLL_OBSERVATIONS "observations" /* shared lists' parts (mongo_observation.c) */
#define SK_COLL_OBSERVATION_HEADS "observation_heads" /* and their heads */
#define SK_INDEX_USER_ID "spec_userID_unique"
#define SK_EVENT_TTL_S 3600
#define SK_DUPLICATE_KEY 11000

typedef struct sk_mongo_batches sk_mongo_batches; /* mongo_batch.c */

typedef struct sk_mongo {
	sk_store base; /* first: an sk_store * is an sk_mongo * */
	mongoc_client_pool_t *pool;
	char *database;
	char *uri_shown; /* the URI with any password redacted */
	int64_t timeout_ms;
	/* The hybrid logical clock of this store (mongo_cas.c). */
	pthread_mutex_t hlc_mu;
	int64_t hlc_last; /* the highest resourceVersion this store made or saw */
	bool rv_seeded; /* the clock saw the highest stored resourceVersion */
	int64_t claims_swept_ms; /* when old claims were last swept */
	/* mongo_clock.c: the last reading of the server's clock (under
	 * hlc_mu) and the skew beyond which no write is made (<0: none). */
	sk_clock_reading clock;
	int64_t max_skew_ms;
	/* Write commands sent (libmongoc's command monitoring, mongo.c), by
	 * the collection they name (sk_store_write_commands). */
	uint64_t writes[SK_STORE_WRITE_COLLS];
	uint64_t reads[SK_STORE_WRITE_COLLS]; /* the same for reads (sk_store_read_commands) */
	sk_mongo_batches *batches; /* writes of many objects coalesced (mongo_batch.c) */
} sk_mongo;

static inline sk_mongo *
sk_mongo_of(sk_store *s)
{
	return (sk_mongo *)(void *)s;
}

#define SK_STORE_SOCKET_TIMEOUT_MS 60000 /* unless the URI sets socketTimeoutMS */
/* Documents per reply when listing: the server's default fills 16 MB
 * replies, which the client holds whole while it decodes them. */
#define SK_STORE_LIST_BATCH 500

/* A client popped from the pool and one collection of it. */
typedef struct sk_store_conn {
	mongoc_client_t *client;
	mongoc_collection_t *coll;
	int64_t claim_ms; /* monotonic time just before the claim was taken; 0 none */
	bool written; /* the write under the claim happened */
	bool unsure; /* a write failed without saying whether it happened */
} sk_store_conn;

void sk_store_conn_open(sk_mongo *s, sk_store_conn *c, const char *collection);
void sk_store_conn_close(sk_mongo *s, sk_store_conn *c);

/* Classifies a libmongoc error into an SK_E* code and fills err with
 * "what: message" (or "cannot reach MongoDB at URI: message"), its domain
 * SK_EDOMAIN_DATABASE. */
int sk_store_fail(const sk_mongo *s, const bson_error_t *e, const char *what, sk_error *err);
bool sk_store_is_duplicate(const bson_error_t *e);
int64_t sk_mongo_reply_count(const bson_t *reply, const char *field);

/* mongo_cas.c: the next resourceVersion for a write over version `expected`
 * (0 for a create): greater than expected and than every version this store
 * wrote or saw (a hybrid logical clock, see mongo_cas.c). */
/* The lowest version a write made at wall_ms or later can get (store.h). */
int64_t sk_store_mongo_rv_floor(sk_store *s, int64_t wall_ms);
int sk_store_next_rv(
        sk_mongo *s, mongoc_client_t *client, int64_t expected, int64_t *out, sk_error *err);
/* mongo_clock.c: reads the server's clock (sk_store_clock_check), and the
 * guard of every versioned write: SK_EUNAVAILABLE naming the skew when the
 * last reading (renewed when older than SK_STORE_CLOCK_RECHECK_MS, on
 * client: the caller's when it holds one, NULL: one of its own) is beyond
 * the limit. */
int sk_mongo_clock_check(sk_store *store, sk_clock_reading *out, sk_error *err);
int sk_mongo_clock_guard(sk_mongo *s, mongoc_client_t *client, sk_error *err);
/* Advances the store's clock past a resourceVersion read from the server. */
void sk_store_rv_observe(sk_mongo *s, int64_t rv);
/* What differs between the kinds of objects written under claims: their
 * names in messages, the prefix of their claim ids, and when a claim found
 * in place was abandoned by a writer that died (then taken over). */
typedef struct sk_claim_kind {
	const char *noun; /* "userspace", "lease" */
	const char *version; /* "resourceVersion", "version" */
	const char *prefix; /* of the claim ids: "", "lease/" (SK_LEASE_CLAIM_PREFIX) */
	int64_t abandoned_ms;
} sk_claim_kind;
extern const sk_claim_kind sk_claim_userspace, sk_claim_lease;

/* A step of a claimed write; arg is the caller's. */
typedef int (*sk_claim_step)(sk_mongo *s, sk_store_conn *c, void *arg, sk_error *err);

/* One write over version `expected` of `name` (mongo_cas.c): claim the
 * version, then verify (the object is still at it; NULL: a fresh copy is
 * written over without a re-read), then write. When another holds the
 * claim, lost (NULL: none) may say why. The claim is retired (kept for
 * the sweep) once the write happened or may have (c->written, c->unsure;
 * the one retire rule), else deleted at once. */
typedef struct sk_claimed_write {
	const sk_claim_kind *kind;
	const char *name;
	int64_t expected;
	sk_claim_step lost, verify, write;
	void *arg;
} sk_claimed_write;
int sk_store_claimed(sk_mongo *s, sk_store_conn *c, const sk_claimed_write *w, sk_error *err);
/* Whether a claim taken at claim_ms (monotonic) is still young enough to
 * write under, and whether a copy read at read_ms is recent enough to write
 * over without reading the object again (see mongo_cas.c). */
bool sk_store_claim_usable(int64_t claim_ms);
bool sk_store_copy_fresh(int64_t read_ms);

/* Deletes every claim older than its expiry, at most once per sweep period
 * per store (mongo_cas.c): the ones left by writes that completed. */
void sk_store_sweep_claims(sk_mongo *s, mongoc_collection_t *claims);

/* mongo_batch.c: the queues of coalesced writes, made on open, freed on
 * close; the single paths a lone write (or one whose claim is another's)
 * takes; the update an event is recorded with. */
void sk_mongo_batches_init(sk_mongo *s);
void sk_mongo_batches_destroy(sk_mongo *s);
int sk_mongo_write_status_one(sk_store *s, const sk_userspace *base,
        const sk_userspace_status *status, sk_userspace **out, sk_error *err);
int sk_mongo_event_one(sk_store *s, const char *object, const char *uid, const char *type,
        const char *reason, const char *message, sk_error *err);
bson_t *sk_mongo_event_update(const char *object, const char *uid, const char *type,
        const char *reason, const char *message);

/* A copy of uri with the password of any "user:pass@" replaced by "***". */
char *sk_store_redact_uri(const char *uri);

/* The ops of the table in mongo.c. */
int sk_mongo_get(sk_store *s, const char *name, sk_userspace **out, sk_error *err);
int sk_mongo_list(sk_store *s, const sk_selector *sel, sk_userspace_list *out, sk_error *err);
int sk_mongo_list_since(sk_store *s, int64_t since, sk_userspace_list *out, sk_error *err);
int sk_mongo_scan_packed(
        sk_store *s, int64_t since, sk_store_packed_fn fn, void *arg, sk_error *err);
int sk_mongo_create(sk_store *s, const sk_userspace *us, sk_userspace **out, sk_error *err);
int sk_mongo_update(sk_store *s, const sk_userspace *us, sk_userspace **out, sk_error *err);
int sk_mongo_write_status(sk_store *s, const sk_userspace *base, const sk_userspace_status *status,
        sk_userspace **out, sk_error *err);
int sk_mongo_mark_deleted(sk_store *s, const char *name, sk_error *err);
int sk_mongo_remove_finalizer(sk_store *s, const char *name, int64_t resource_version,
        const char *finalizer, sk_error *err);
int sk_mongo_remove(sk_store *s, const char *name, sk_error *err);
int sk_mongo_event(sk_store *s, const char *object, const char *uid, const char *type,
        const char *reason, const char *message, sk_error *err);
int sk_mongo_events(sk_store *s, const char *object, const char *uid, size_t limit,
        sk_event_list *out, sk_error *err);
int sk_mongo_lease_get(sk_store *s, const char *name, sk_lease *out, sk_error *err);
int sk_mongo_lease_swap(sk_store *s, const sk_lease *cur, sk_lease *next, sk_error *err);
int sk_mongo_lease_list(sk_store *s, sk_lease_list *out, sk_error *err);
int sk_mongo_record_put(
        sk_store *s, const char *id, int64_t create_ms, const char *body, sk_error *err);
int sk_mongo_quota_insert(sk_store *s, const char *name, const char *object, sk_error *err);
int sk_mongo_quota_replace(sk_store *s, const char *name, const char *object, sk_error *err);
int sk_mongo_quota_status(sk_store *s, const char *name, const char *status, sk_error *err);
int sk_mongo_quota_list(sk_store *s, sk_spacequota_list *out, sk_error *err);
int sk_mongo_quota_remove(sk_store *s, const char *name, sk_error *err);
int sk_mongo_record_list(sk_store *s, sk_apply_record_list *out, sk_error *err);
int sk_mongo_record_remove(sk_store *s, const char *id, sk_error *err);
int sk_mongo_observation_put(sk_store *s, const char *group, const char *part, int64_t listed_ms,
        const char *writer, const char *body, sk_error *err);
int sk_mongo_observation_get(sk_store *s, const char *group, int64_t listed_ms,
        const char *const *parts, size_t n, sk_observation_list *out, sk_error *err);
int sk_mongo_observation_head_put(sk_store *s, const char *group, int64_t listed_ms,
        const char *writer, const char *body, sk_error *err);
int sk_mongo_observation_head_get(
        sk_store *s, const char *group, sk_observation *out, sk_error *err);
int sk_mongo_observation_prune(sk_store *s, const char *group, int64_t before_ms, sk_error *err);

#endif
