/*
 * store internals shared by the store's .c files: the backend table every
 * public sk_store_* function dispatches through (libgit2's refdb/odb
 * backends), the object rules both backends share (object.c), and the
 * document codec and packing (codec.c, packed.c).
 *
 * Backends: mongo*.c (the MongoDB wire protocol, claims-based
 * compare-and-swap, see mongo_cas.c) and memory.c (one mutex, for tests).
 * A backend embeds `sk_store` as its first member; store.c validates the
 * arguments once, so the ops see a name, a valid userID, a non-NULL out.
 */
#ifndef SK_STORE_INT_H
#define SK_STORE_INT_H

#include <mongoc/mongoc.h>

#include "quota.h"
#include "store.h"

/* Every slot is required. Results as documented for the sk_store_* call of
 * the same name in store.h. */
typedef struct sk_store_backend_ops {
	const char *name; /* "mongodb", "memory" */
	void (*close)(sk_store *s);
	int (*ping)(sk_store *s, sk_error *err);
	int (*get)(sk_store *s, const char *name, sk_userspace **out, sk_error *err);
	int (*list)(sk_store *s, const sk_selector *sel, sk_userspace_list *out, sk_error *err);
	int (*list_since)(sk_store *s, int64_t since, sk_userspace_list *out, sk_error *err);
	int (*scan_packed)(
	        sk_store *s, int64_t since, sk_store_packed_fn fn, void *arg, sk_error *err);
	int (*create)(sk_store *s, const sk_userspace *us, sk_userspace **out, sk_error *err);
	int (*update)(sk_store *s, const sk_userspace *us, sk_userspace **out, sk_error *err);
	/* Compare-and-swap on base->meta.resource_version. */
	int (*write_status)(sk_store *s, const sk_userspace *base,
	        const sk_userspace_status *status, sk_userspace **out, sk_error *err);
	int (*mark_deleted)(sk_store *s, const char *name, sk_error *err);
	int (*remove_finalizer)(sk_store *s, const char *name, int64_t resource_version,
	        const char *finalizer, sk_error *err);
	int (*remove)(sk_store *s, const char *name, sk_error *err);
	int (*event)(sk_store *s, const char *object, const char *uid, const char *type,
	        const char *reason, const char *message, sk_error *err);
	int (*events)(sk_store *s, const char *object, const char *uid, size_t limit,
	        sk_event_list *out, sk_error *err);
	/* Leases: one compare-and-swap of `name` from the version `cur` was
	 * read at (cur NULL: the lease must not exist yet) to `next`. */
	int (*lease_get)(sk_store *s, const char *name, sk_lease *out, sk_error *err);
	int (*lease_swap)(sk_store *s, const sk_lease *cur, sk_lease *next, sk_error *err);
	int (*lease_list)(sk_store *s, sk_lease_list *out, sk_error *err);
	/* Apply records: body is JSON text (checked by store.c), create_ms now. */
	int (*record_put)(
	        sk_store *s, const char *id, int64_t create_ms, const char *body, sk_error *err);
	int (*record_list)(sk_store *s, sk_apply_record_list *out, sk_error *err);
	int (*record_remove)(sk_store *s, const char *id, sk_error *err);
	/* Shared provider lists: names and bodies checked by observation.c,
	 * bodies as JSON text. */
	int (*observation_put)(sk_store *s, const char *group, const char *part, int64_t listed_ms,
	        const char *writer, const char *body, sk_error *err);
	int (*observation_get)(sk_store *s, const char *group, int64_t listed_ms,
	        const char *const *parts, size_t n, sk_observation_list *out, sk_error *err);
	int (*observation_head_put)(sk_store *s, const char *group, int64_t listed_ms,
	        const char *writer, const char *body, sk_error *err);
	int (*observation_head_get)(
	        sk_store *s, const char *group, sk_observation *out, sk_error *err);
	int (*observation_prune)(sk_store *s, const char *group, int64_t before_ms, sk_error *err);
	/* SpaceQuotas (store_quota.h): the object and its status as JSON text
	 * (checked by quota.c); insert SK_EEXISTS, the others SK_ENOTFOUND;
	 * list hands each stored pair to sk_store_quota_add. */
	int (*quota_insert)(sk_store *s, const char *name, const char *object, sk_error *err);
	int (*quota_replace)(sk_store *s, const char *name, const char *object, sk_error *err);
	int (*quota_status)(sk_store *s, const char *name, const char *status, sk_error *err);
	int (*quota_list)(sk_store *s, sk_spacequota_list *out, sk_error *err);
	int (*quota_remove)(sk_store *s, const char *name, sk_error *err);
	int64_t (*rv_floor)(sk_store *s, int64_t wall_ms);
	int (*clock_check)(sk_store *s, sk_clock_reading *out, sk_error *err); /* NULL: none */
	/* Write commands sent, by collection (NULL: none, all zero). */
	void (*write_commands)(sk_store *s, uint64_t out[SK_STORE_WRITE_COLLS]);
	void (*read_commands)(sk_store *s, uint64_t out[SK_STORE_WRITE_COLLS]);
	int (*drop)(sk_store *s, sk_error *err);
} sk_store_backend_ops;

struct sk_store {
	const sk_store_backend_ops *ops;
};

extern const sk_store_backend_ops sk_store_mongo_ops;
extern const sk_store_backend_ops sk_store_memory_ops;

int sk_store_open_mongo(sk_store **out, const sk_store_options *opts, sk_error *err);
/* A lazily opened MongoDB store: ping, then the indexes when asked. */
int sk_store_mongo_connect(sk_store *store, bool indexes, sk_error *err);
/* Whether a URI names the in-memory backend ("memory://", anything after it ignored). */
bool sk_store_uri_is_memory(const char *uri);

/* ---- object.c: the rules every backend applies ---- */

#define SK_STORE_EVENT_SOURCE "spacekeeper" /* sk_event.source */

/* The object as create stores it: the caller's labels, annotations and
 * spec with defaults; a new uid, generation 1, creationTimestamp now, the
 * finalizer SK_FINALIZER, no status. resourceVersion is the backend's. */
sk_userspace *sk_store_new_object(const sk_userspace *us);
/* The stored object `cur` with labels, annotations and spec of `us`;
 * generation bumped when the spec changed. NULL when nothing changed. */
sk_userspace *sk_store_updated_object(const sk_userspace *cur, const sk_userspace *us);
/* `cur` with status replaced. NULL when the status is unchanged. */
sk_userspace *sk_store_with_status(const sk_userspace *cur, const sk_userspace_status *status);
/* Removes every occurrence of finalizer from m. */
void sk_store_drop_finalizer(sk_object_meta *m, const char *finalizer);
/* SK_ECONFLICT "the object has been modified" naming both versions. */
int sk_store_conflict(const char *name, int64_t expected, int64_t found, sk_error *err);
int sk_store_user_id_taken(const char *user_id, const char *holder, sk_error *err);

/* lease.c: what one lease operation makes of the lease as read (cur NULL
 * when it does not exist); now_ms (wall) only stamps renew_ms/acquire_ms:
 * 0 and *next, or SK_ECONFLICT (held by another), SK_ENOTFOUND
 * (renew/release of a missing lease). A take-over takes it from whoever
 * holds it: the caller checked the version (sk_store_lease_take_over). */
typedef enum sk_lease_op {
	SK_LEASE_ACQUIRE,
	SK_LEASE_RENEW,
	SK_LEASE_RELEASE,
	SK_LEASE_TAKE_OVER
} sk_lease_op;
int sk_store_lease_next(const sk_lease *cur, sk_lease_op op, const char *name, const char *holder,
        int64_t duration_ms, int64_t now_ms, sk_lease *next, sk_error *err);
void sk_lease_copy(sk_lease *dst, const sk_lease *src);
void sk_event_dispose(sk_event *ev); /* the strings of one event */
/* record.c: a body as stored: compact JSON text of an object, at most
 * SK_STORE_RECORD_MAX_BYTES (else NULL and err, what naming the thing);
 * and back (NULL and err when the text is not an object). */
char *sk_store_body_text(const char *what, const json_t *body, sk_error *err);
json_t *sk_store_body_parse(const char *what, const char *text, sk_error *err);
/* record.c: one record from its stored parts; SK_EINVALID when body is not
 * a JSON object. */
int sk_apply_record_set(
        sk_apply_record *r, const char *id, int64_t create_ms, const char *body, sk_error *err);
/* observation.c: one part or head from its stored fields; SK_EINVALID when
 * body is not a JSON object. The refusals of a part stored already and of a
 * head older than the stored one. */
int sk_observation_set(sk_observation *o, const char *id, int64_t listed_ms, const char *writer,
        const char *body, sk_error *err);
int sk_observation_exists(const char *group, const char *part, int64_t listed_ms, sk_error *err);
int sk_observation_stale(const char *group, sk_error *err);

/* ---- codec.c: the UserSpace as the stored document (labels,
 * annotations, spec.env and spec.metadata as [{k, v}] arrays; store-owned
 * metadata as typed BSON: int64 generation/resourceVersion, dates for
 * timestamps). */
bson_t *sk_store_doc_from_userspace(const sk_userspace *us, sk_error *err);
int sk_store_userspace_from_doc(const bson_t *doc, sk_userspace **out, sk_error *err);
/* codec_read.c: the document straight into the struct, for what the codec
 * writes; SK_EINVALID (nothing decided) when the general path must read it.
 * sk_store_userspace_from_doc tries it first; the general path alone is
 * sk_store_userspace_from_doc_general (tests hold the two to one result). */
int sk_store_userspace_read(const bson_t *doc, sk_userspace **out);
int sk_store_userspace_from_doc_general(const bson_t *doc, sk_userspace **out, sk_error *err);
/* Sets uid, generation, resourceVersion, the timestamps and finalizers of m
 * from the document's typed metadata. */
void sk_store_read_owned_fields(const bson_t *doc, sk_object_meta *m);

/* packed.c: decodes a stored document and packs it. */
sk_packed_userspace *sk_store_pack_doc(const bson_t *doc, int64_t read_ms, sk_error *err);

/* quota.c: a stored quota (object and status text, status may be NULL)
 * appended to out, decoded; SK_EINVALID when it does not decode. The
 * message every backend gives for an absent quota. */
int sk_store_quota_add(
        sk_spacequota_list *out, const char *object, const char *status, sk_error *err);
int sk_store_quota_not_found(const char *name, sk_error *err);

#endif
