/*
 * store: UserSpace objects, events and leases, behind one backend table
 * (store_int.h): the MongoDB-wire backend (libmongoc, client pool; a URI
 * "mongodb://...") and an in-memory backend (sk_store_open_memory or the URI
 * "memory://", one process, for tests). Both keep the same rules:
 *
 * MongoDB collections in the database (default "spacekeeper"):
 *   userspaces  _id = metadata.name; unique index on spec.userID
 *   events      Kubernetes-style, aggregated by (object, reason, type); TTL index
 *   claims      one document per version written over (the
 *               compare-and-swap guard, swept after 30 s, see mongo_cas.c)
 *   leases      named leases (sk_store_lease_*)
 * User-keyed maps (labels, annotations, spec.env, spec.metadata) are stored
 * as [{k, v}] arrays, so their keys never become BSON field names; label
 * selectors are evaluated here, after the query.
 * Every write goes through here: resourceVersion bumps on every write and is
 * the compare-and-swap token; generation bumps on spec changes only.
 * Thread-safe (MongoDB: each call pops a client from the pool; memory: one mutex).
 */
#ifndef SK_STORE_H
#define SK_STORE_H

#include "../api/selector.h"
#include "../api/status.h"
#include "../api/userspace.h"

#define SK_DEFAULT_MONGODB_URI "mongodb://127.0.0.1:27017"
#define SK_DEFAULT_DATABASE "spacekeeper"
#define SK_MONGODB_URI_ENV "SPACEKEEPER_MONGODB_URI"

typedef struct sk_store sk_store;

typedef struct sk_store_options {
	const char *uri; /* NULL: $SPACEKEEPER_MONGODB_URI or the default */
	const char *database; /* NULL: "spacekeeper" */
	int64_t timeout_ms; /* server selection and connect timeout, default 3000 */
	bool ensure_indexes; /* create indexes on open (cheap when present) */
	bool lazy; /* open without contacting the server; sk_store_connect does */
	/* Writes are refused while this host's clock is further than this from
	 * the server's (sk_store_clock_check); 0: SK_STORE_CLOCK_SKEW_MAX_MS,
	 * negative: never checked. */
	int64_t max_clock_skew_ms;
} sk_store_options;
#define SK_STORE_OPTIONS_INIT                                                                      \
	{                                                                                          \
		NULL, NULL, 3000, true, false, 0                                                   \
	}

/* Connects and pings; an unreachable server gives SK_EUNAVAILABLE within
 * timeout_ms. A URI "memory://" opens a new, empty in-memory store. */
int sk_store_open(sk_store **out, const sk_store_options *opts, sk_error *err);
/* A new, empty in-memory store (same rules as MongoDB; lives until closed). */
int sk_store_open_memory(sk_store **out);
/* "mongodb" or "memory". */
const char *sk_store_backend_name(const sk_store *s);
/* With opts->lazy (MongoDB) only the URI is checked: nothing is contacted
 * until sk_store_connect or the first call. sk_store_connect does what a
 * non-lazy open does after parsing: ping, then the indexes when asked;
 * SK_EUNAVAILABLE while the server cannot be reached. */
int sk_store_connect(sk_store *s, bool ensure_indexes, sk_error *err);
void sk_store_close(sk_store *s); /* NULL-safe */
/* Releases libmongoc's global state (mongoc_cleanup); binaries call it once at
 * exit, after every MongoDB store is closed. */
void sk_store_global_cleanup(void);
int sk_store_ping(sk_store *s, sk_error *err);

/* ---- this host's clock against the server's ----
 * The store's timing argument (mongo_cas.c) needs the clocks of the
 * processes sharing a database to agree within a few seconds: pairwise
 * within 2 x SK_STORE_CLOCK_SKEW_MAX_MS, under the 5 s a lease claim is
 * written under before another may judge it abandoned. */
#define SK_STORE_CLOCK_SKEW_WARN_MS 500 /* worth a warning */
#define SK_STORE_CLOCK_SKEW_MAX_MS 2000 /* beyond it: no write, no action */
#define SK_STORE_CLOCK_RECHECK_MS 5000 /* a write re-reads an older reading */
typedef struct sk_clock_reading {
	bool measured; /* false: no reading (the memory backend has no server) */
	int64_t skew_ms; /* this host's wall clock minus the server's: > 0 ahead */
	int64_t rtt_ms; /* the round trip; the reading is off by at most half */
	int64_t at_mono_ms; /* when it was taken (monotonic) */
} sk_clock_reading;
/* Reads the server's clock now (MongoDB: hello's localTime) and keeps the
 * reading for the write guard; the memory backend answers measured false. */
int sk_store_clock_check(sk_store *s, sk_clock_reading *out, sk_error *err);
/* SK_EUNAVAILABLE with a message naming the skew and the limit when
 * |skew| > max_ms (0: SK_STORE_CLOCK_SKEW_MAX_MS); 0 otherwise. Pure. */
int sk_store_clock_verdict(const sk_clock_reading *r, int64_t max_ms, sk_error *err);

/* Create: sets uid, generation=1, resourceVersion, creationTimestamp, and the
 * finalizer SK_FINALIZER. SK_EEXISTS when the name exists; SK_ECONFLICT when
 * another object has the same spec.userID (message names it). Status is not written. */
int sk_store_create(sk_store *s, const sk_userspace *us, sk_userspace **out, sk_error *err);
/* SK_ENOTFOUND with the message every store gives for an absent name. */
int sk_store_not_found(const char *name, sk_error *err);
/* SK_ENOTFOUND when absent. */
int sk_store_get(sk_store *s, const char *name, sk_userspace **out, sk_error *err);

typedef struct sk_userspace_list {
	sk_userspace **items; /* sorted by name */
	size_t len;
	int64_t resource_version; /* highest resourceVersion seen at list time */
} sk_userspace_list;
void sk_userspace_list_dispose(sk_userspace_list *l);

/* selector may be NULL (everything). */
int sk_store_list(sk_store *s, const sk_selector *selector, sk_userspace_list *out, sk_error *err);
/* Objects with resourceVersion > since (for the informer's poll). */
int sk_store_list_since(sk_store *s, int64_t since, sk_userspace_list *out, sk_error *err);

/* ---- packed objects (compact cache entries, see packed.c) ---- */

/* A UserSpace in one allocation (a compact binary image, about a third of
 * the decoded object or of its BSON document), with a header that answers
 * the accessors below without decoding. Immutable; process-local (the
 * layout is not a storage or wire format). */
typedef struct sk_packed_userspace sk_packed_userspace;

/* NULL + err when us has no name (or is larger than 16 MB). */
sk_packed_userspace *sk_store_pack(const sk_userspace *us, sk_error *err);
/* The object back, equal to the packed one including meta.read_ms. */
int sk_store_unpack(const sk_packed_userspace *p, sk_userspace **out, sk_error *err);
void sk_packed_free(sk_packed_userspace *p); /* NULL-safe */
/* Borrowed strings, valid while p lives. */
const char *sk_packed_name(const sk_packed_userspace *p);
const char *sk_packed_user_id(const sk_packed_userspace *p); /* NULL when unset */
int64_t sk_packed_resource_version(const sk_packed_userspace *p);
int64_t sk_packed_read_ms(const sk_packed_userspace *p);
sk_phase sk_packed_phase(const sk_packed_userspace *p);
bool sk_packed_ready(const sk_packed_userspace *p); /* as sk_userspace_is_ready */
size_t sk_packed_size(const sk_packed_userspace *p); /* bytes allocated */
/* sk_informer_status_only_change of the two objects (b differs from a only
 * in status and resourceVersion), answered without decoding them. */
bool sk_packed_status_only_change(const sk_packed_userspace *a, const sk_packed_userspace *b);

/* Takes ownership of p. */
typedef void (*sk_store_packed_fn)(sk_packed_userspace *p, void *arg);
/* Streams the objects of sk_store_list (since < 0, by name, no selector) or of
 * sk_store_list_since(since) to fn as they arrive, each packed as soon as it
 * is decoded, so a list never holds every object decoded at once. On an
 * error fn has seen a prefix of the list. */
int sk_store_scan_packed(
        sk_store *s, int64_t since, sk_store_packed_fn fn, void *arg, sk_error *err);

/* Replaces metadata.labels, metadata.annotations and spec, compare-and-swap on
 * us->meta.resource_version: SK_ECONFLICT when the stored version differs
 * (a stale writer never wins; 0 never matches, read the object first).
 * generation bumps only when the spec changed; an update that changes
 * nothing writes nothing and returns the stored object. SK_ECONFLICT also
 * when the new spec.userID is taken (message names the holder). */
int sk_store_update(sk_store *s, const sk_userspace *us, sk_userspace **out, sk_error *err);
/* Writes status only over the caller's copy of the object, compare-and-swap
 * on base->meta.resource_version: SK_ECONFLICT when the stored version
 * differs; never bumps generation. A status equal to base's writes nothing
 * (resourceVersion stays; *out is a copy). On MongoDB a copy read a moment
 * ago (meta.read_ms) is written over without reading the object again, one
 * round-trip less (see mongo_cas.c for why that is safe); writes of many
 * objects made at the same time share their commands (mongo_batch.c), each
 * still its own compare-and-swap. */
int sk_store_write_status(sk_store *s, const sk_userspace *base, const sk_userspace_status *status,
        sk_userspace **out, sk_error *err);
/* Sets deletionTimestamp (idempotent). When the object has no finalizers it is removed at once. */
int sk_store_mark_deleted(sk_store *s, const char *name, sk_error *err);
/* Removes one finalizer (CAS); removes the object when it was the last and deletion was asked. */
int sk_store_remove_finalizer(sk_store *s, const char *name, int64_t resource_version,
        const char *finalizer, sk_error *err);
/* Removes the document at once, whatever its finalizers (spacectl delete --force). */
int sk_store_remove(sk_store *s, const char *name, sk_error *err);

/* ---- events ---- */

typedef struct sk_event {
	char *object; /* UserSpace name (SK_STORE_ORPHANS: sandboxes without one) */
	char *uid; /* metadata.uid of that object ("" when none): names are reused, uids never */
	char *type; /* "Normal" | "Warning" */
	char *reason; /* CamelCase: Created, Resumed, Paused, DuplicateDeleted, ... */
	char *message;
	int count;
	int64_t first_ms;
	int64_t last_ms;
	char *source; /* "spacekeeper" */
} sk_event;

typedef struct sk_event_list {
	sk_event *items; /* oldest last_ms first */
	size_t len;
} sk_event_list;
void sk_event_list_dispose(sk_event_list *l);

/* The object the controller records orphan events under (spacectl events --orphans). */
#define SK_STORE_ORPHANS "_orphans"

/* Appends or aggregates (same object+uid+type+reason: count++, last_ms, message
 * updated; events recorded at the same time share one command on MongoDB). uid: the object's metadata.uid (NULL or "": none), so that a
 * re-created object with the same name does not inherit its predecessor's events. */
int sk_store_event(sk_store *s, const char *object, const char *uid, const char *type,
        const char *reason, const char *message, sk_error *err);
/* object NULL: every object; uid NULL: any uid of that object (else only that
 * uid's). limit 0: no limit (newest `limit` kept). */
int sk_store_events(sk_store *s, const char *object, const char *uid, size_t limit,
        sk_event_list *out, sk_error *err);

/* ---- leases ---- */

/* A named lease (one per shard of users): at most one holder at a time.
 * Held while holder is set. Whether its holder is still alive is for each
 * reader to judge on its own monotonic clock (sk_lease_observer): no rule
 * compares renew_ms, the writer's wall clock, with another host's. */
typedef struct sk_lease {
	char *name;
	char *holder; /* "" when released */
	int64_t acquire_ms; /* when the holder took it */
	int64_t renew_ms; /* its last acquire or renew */
	int64_t duration_ms;
	int64_t version; /* bumps on every write; the compare-and-swap token */
} sk_lease;
void sk_lease_dispose(sk_lease *l); /* NULL-safe */

typedef struct sk_lease_list {
	sk_lease *items; /* sorted by name */
	size_t len;
} sk_lease_list;
void sk_lease_list_dispose(sk_lease_list *l);

/* Takes lease `name` for holder for duration_ms: when it does not exist or
 * is released (a new acquire_ms), or is already the holder's (a renew).
 * SK_ECONFLICT when another holder has it, expired or not (message names
 * it), also when another acquirer wins the race. out may be NULL. */
int sk_store_lease_acquire(sk_store *s, const char *name, const char *holder, int64_t duration_ms,
        sk_lease *out, sk_error *err);
/* Takes the lease `seen` (as listed) from its holder: the caller judged it
 * expired (sk_lease_observed_expired). Writes only while the lease is
 * still at seen->version: SK_ECONFLICT when it changed since (a renew, a
 * release, another taker). out may be NULL. */
int sk_store_lease_take_over(sk_store *s, const sk_lease *seen, const char *holder,
        int64_t duration_ms, sk_lease *out, sk_error *err);
/* Extends the holder's lease (renew_ms = now), even past its expiry while
 * nobody took it. SK_ECONFLICT when another holds it or it was released,
 * SK_ENOTFOUND when it does not exist. out may be NULL. */
int sk_store_lease_renew(
        sk_store *s, const char *name, const char *holder, sk_lease *out, sk_error *err);
/* Gives the holder's lease up (holder ""), so another can take it at once.
 * SK_ECONFLICT when it is another's (even expired), SK_ENOTFOUND when it
 * does not exist; releasing a released lease writes nothing. */
int sk_store_lease_release(sk_store *s, const char *name, const char *holder, sk_error *err);
int sk_store_lease_list(sk_store *s, sk_lease_list *out, sk_error *err);

/* What one process saw of the leases (client-go's observedTime): for each
 * lease the version last listed and when, on the process's own monotonic
 * clock, it first saw that version. Another's lease is expired when its
 * record has not changed for a full duration of our own time, whatever the
 * clocks of the hosts say. Not locked: one owner. */
typedef struct sk_lease_seen {
	char *name;
	int64_t version;
	int64_t seen_ms; /* monotonic: when this version was first listed */
} sk_lease_seen;
typedef struct sk_lease_observer {
	sk_lease_seen *items;
	size_t len;
} sk_lease_observer;
void sk_lease_observer_dispose(sk_lease_observer *o); /* NULL-safe */
/* Records a full list read at monotonic now_ms: a lease whose version
 * changed (or that is new) restarts its clock; one no longer listed is
 * forgotten. */
void sk_lease_observe(sk_lease_observer *o, const sk_lease_list *ll, int64_t now_ms);
/* Released, or its version unchanged for l->duration_ms of our monotonic
 * time since we first saw it (a lease seen for the first time is not). */
bool sk_lease_observed_expired(const sk_lease_observer *o, const sk_lease *l, int64_t now_ms);
/* The holder's own right, on its monotonic clock: until the start of its
 * last successful renew plus the duration minus a margin (renew_started_ms
 * 0: never renewed). */
bool sk_lease_holder_valid(
        int64_t renew_started_ms, int64_t duration_ms, int64_t margin_ms, int64_t now_ms);

/* ---- apply records ----
 * What an apply of many objects may have changed, with what undoing it needs
 * (spacectl apply writes them before its first object write and removes them
 * after its last; a record found later is an interrupted apply, see
 * cmd/spacectl/record.c). The body is the caller's JSON object, kept as it
 * is; at most SK_STORE_RECORD_MAX_BYTES of JSON text per record (split a
 * large apply into several records). MongoDB: collection "applies". */
#define SK_STORE_RECORD_MAX_BYTES (8 * 1024 * 1024)

typedef struct sk_apply_record {
	char *id;
	int64_t create_ms; /* when it was written (the writer's clock) */
	json_t *body; /* an object; owned */
} sk_apply_record;

typedef struct sk_apply_record_list {
	sk_apply_record *items; /* sorted by id */
	size_t len;
} sk_apply_record_list;
void sk_apply_record_list_dispose(sk_apply_record_list *l);

/* SK_EEXISTS when a record with this id exists; SK_EINVALID when body is not
 * an object or is too large. */
int sk_store_record_put(sk_store *s, const char *id, const json_t *body, sk_error *err);
int sk_store_record_list(sk_store *s, sk_apply_record_list *out, sk_error *err);
/* SK_ENOTFOUND when absent. */
int sk_store_record_remove(sk_store *s, const char *id, sk_error *err);

/* ---- shared provider lists ----
 * One replica lists a provider and stores what it saw for the others
 * (pkg/controller/share.c). A list is a group (the provider) of parts (one
 * per shard of users), each written once under the time the list started,
 * and then the group's head, which names that time: readers take the head,
 * then the parts of the list it names. A head is replaced only by a newer
 * list's, so a writer that wakes with an old list cannot put it back; the
 * writer prunes the parts of lists older than the one before. Parts are
 * insert-only because FerretDB scans a collection for every update: with
 * 64 parts, replacing them in place cost 64 scans of every list per pass.
 * MongoDB: collections "observations" (parts) and "observation_heads".
 * At most SK_STORE_RECORD_MAX_BYTES of JSON text per part or head. */
typedef struct sk_observation {
	char *id; /* the part, or the group for a head */
	int64_t listed_ms; /* when the list started (the writer's clock) */
	char *writer; /* the replica that wrote it */
	json_t *body; /* an object; owned */
} sk_observation;
void sk_observation_dispose(sk_observation *o); /* NULL-safe */

typedef struct sk_observation_list {
	sk_observation *items;
	size_t len;
} sk_observation_list;
void sk_observation_list_dispose(sk_observation_list *l);

/* Writes part `part` of group's list started at listed_ms; SK_EEXISTS when
 * that part of that list is stored. SK_EINVALID: a bad name or body. */
int sk_store_observation_put(sk_store *s, const char *group, const char *part, int64_t listed_ms,
        const char *writer, const json_t *body, sk_error *err);
/* The parts parts[0..n) of group's list started at listed_ms, in that
 * order; missing ones are left out. */
int sk_store_observation_get(sk_store *s, const char *group, int64_t listed_ms,
        const char *const *parts, size_t n, sk_observation_list *out, sk_error *err);
/* Names group's list started at listed_ms as its current one, unless the
 * head names a list started then or later: SK_ECONFLICT (nothing written). */
int sk_store_observation_head_put(sk_store *s, const char *group, int64_t listed_ms,
        const char *writer, const json_t *body, sk_error *err);
/* SK_ENOTFOUND when group has no head. */
int sk_store_observation_head_get(
        sk_store *s, const char *group, sk_observation *out, sk_error *err);
/* Removes group's parts of lists started before before_ms. */
int sk_store_observation_prune(sk_store *s, const char *group, int64_t before_ms, sk_error *err);

/* ---- write commands (the store's cost per new user) ----
 * The write commands (insert, update, delete, findAndModify) this store has
 * sent to the server since it was opened, counted by libmongoc's command
 * monitoring as they leave (failed ones too), by the collection they name.
 * A command of many documents or statements counts once. The memory
 * backend sends none: all zero. */
typedef enum sk_store_write_coll {
	SK_STORE_WRITES_USERSPACES, /* the objects (status and spec writes, creates) */
	SK_STORE_WRITES_CLAIMS, /* the compare-and-swap claims (mongo_cas.c) */
	SK_STORE_WRITES_EVENTS,
	SK_STORE_WRITES_OTHER, /* leases, apply records, shared lists, ... */
	SK_STORE_WRITE_COLLS
} sk_store_write_coll;
/* "userspaces", "claims", "events", "other". */
const char *sk_store_write_coll_name(sk_store_write_coll c);
/* Fills out[SK_STORE_WRITE_COLLS]; returns their sum. */
uint64_t sk_store_write_commands(sk_store *s, uint64_t out[SK_STORE_WRITE_COLLS]);
/* The read commands (find, getMore, aggregate, count, distinct) sent the
 * same way, by the same collections; the same out and sum. */
uint64_t sk_store_read_commands(sk_store *s, uint64_t out[SK_STORE_WRITE_COLLS]);

/* The lowest resourceVersion a write made at wall time wall_ms or later can
 * get, from any process (MongoDB: versions never fall behind the writer's
 * clock); INT64_MAX when versions do not follow a clock (memory: one
 * process's counter). */
int64_t sk_store_rv_floor(sk_store *s, int64_t wall_ms);

/* Drops the database (tests only). */
int sk_store_drop(sk_store *s, sk_error *err);

#endif
