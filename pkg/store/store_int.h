/*
 * store internals shared by the store's .c files: the handle, error
 * classification, resourceVersions and claims, and the document codec.
 */
#ifndef SK_STORE_INT_H
#define SK_STORE_INT_H

#include <mongoc/mongoc.h>

#include "store.h"

#define SK_COLL_USERSPACES "userspaces"
#define SK_COLL_EVENTS "events"
#define SK_COLL_CLAIMS "claims"
#define SK_INDEX_USER_ID "spec_userID_unique"
#define SK_EVENT_TTL_S 3600
#define SK_DUPLICATE_KEY 11000

struct sk_store {
	mongoc_client_pool_t *pool;
	char *database;
	char *uri_shown; /* the URI with any password redacted */
	int64_t timeout_ms;
	bool rv_seeded; /* the clock saw the highest stored resourceVersion (cas.c) */
	int64_t claims_swept_ms; /* when old claims were last swept (cas.c) */
};

#define SK_STORE_SOCKET_TIMEOUT_MS 60000 /* unless the URI sets socketTimeoutMS */
/* Documents per reply when listing: the server's default fills 16 MB
 * replies, which the client holds whole while it decodes them. */
#define SK_STORE_LIST_BATCH 500

/* A client popped from the pool and one collection of it. */
typedef struct sk_store_conn {
	mongoc_client_t *client;
	mongoc_collection_t *coll;
	int64_t claim_ms; /* monotonic time just before the claim was taken; 0 none */
	bool unsure; /* a write failed without saying whether it happened */
} sk_store_conn;

void sk_store_conn_open(sk_store *s, sk_store_conn *c, const char *collection);
void sk_store_conn_close(sk_store *s, sk_store_conn *c);

/* Classifies a libmongoc error into an SK_E* code and fills err with
 * "what: message" (or "cannot reach MongoDB at URI: message"). */
int sk_store_fail(const sk_store *s, const bson_error_t *e, const char *what, sk_error *err);
bool sk_store_is_duplicate(const bson_error_t *e);

/* cas.c: the next resourceVersion for a write over version `expected` (0
 * for a create): greater than expected and than every version this process
 * wrote or saw (a hybrid logical clock, see cas.c). */
int sk_store_next_rv(
        sk_store *s, mongoc_client_t *client, int64_t expected, int64_t *out, sk_error *err);
/* Advances the clock past a resourceVersion read from the server. */
void sk_store_rv_observe(int64_t rv);
/* Claims version `base` of object `name` for one writer; SK_ECONFLICT when
 * another writer holds it. *claim is released (and freed) by sk_store_release. */
int sk_store_claim(sk_store *s, mongoc_client_t *client, const char *name, int64_t base,
        char **claim, sk_error *err);
void sk_store_release(sk_store *s, mongoc_client_t *client, char *claim);
/* For a claim whose holder moved the object off its version: frees *claim
 * and leaves the claim document to the batched sweep (see cas.c). */
void sk_store_retire(char **claim);
/* Whether a claim taken at claim_ms (monotonic) is still young enough to
 * write under, and whether a copy read at read_ms is recent enough to write
 * over without reading the object again (see cas.c). */
bool sk_store_claim_usable(int64_t claim_ms);
bool sk_store_copy_fresh(int64_t read_ms);

/* A copy of uri with the password of any "user:pass@" replaced by "***". */
char *sk_store_redact_uri(const char *uri);

/* codec.c: the UserSpace as the stored document (labels, annotations,
 * spec.env and spec.metadata as [{k, v}] arrays; store-owned metadata as
 * typed BSON: int64 generation/resourceVersion, dates for timestamps). */
bson_t *sk_store_doc_from_userspace(const sk_userspace *us, sk_error *err);
int sk_store_userspace_from_doc(const bson_t *doc, sk_userspace **out, sk_error *err);

/* packed.c: decodes a stored document and packs it. */
sk_packed_userspace *sk_store_pack_doc(const bson_t *doc, int64_t read_ms, sk_error *err);

#endif
