/*
 * informer: a cache of UserSpace objects fed from the store (docs/architecture.md).
 *
 * FerretDB has no change streams, so the informer lists once, then polls
 * sk_store_list_since(last_rv - lookback): concurrent writers take their
 * resourceVersion before they commit, so a write with a lower version can
 * land after one with a higher version; the look-back window re-reads the
 * recent versions and each object is accepted only when its version is
 * newer than the cached one. Other processes (replicas, spacectl) take
 * versions from their own clocks, which can trail ours by far more than
 * the look-back after a burst of writes, so a poll also re-reads every
 * version a write made since SK_INFORMER_LATE_MS before the last read can
 * have (sk_store_rv_floor). A periodic full relist also catches objects
 * removed from the store (they vanish from the cache with a change callback).
 *
 * The cache keeps each object packed (one compact allocation, see
 * sk_store_pack): 10,000 decoded objects would be ~300,000 small
 * allocations and three times the bytes. Readers get decoded copies
 * (sk_informer_get), or borrow a shared, read-only decoded version
 * (sk_informer_borrow: no copy per read, the connect fast path's way); the
 * cache sits behind one mutex.
 */
#ifndef SK_INFORMER_H
#define SK_INFORMER_H

#include "../store/store.h"

typedef struct sk_informer sk_informer;

/* A write is read by the next poll when it committed at most this long
 * after its version was taken (and the hosts' clocks agree within it: the
 * store refuses writes from a host more than 2 s off the server's clock,
 * sk_store_clock_verdict). */
#define SK_INFORMER_LATE_MS 10000

/* Called from the informer thread (never with a lock held) for an object
 * that appeared, changed (newer resourceVersion) or disappeared. */
typedef void (*sk_informer_change_fn)(const char *name, void *payload);

typedef struct sk_informer_options {
	sk_store *store; /* borrowed; must outlive the informer */
	int64_t poll_ms; /* default 1000 */
	int64_t relist_ms; /* full relist period, default 5 min */
	int64_t lookback; /* resourceVersions re-read by each poll, default 256 */
	sk_informer_change_fn on_change; /* may be NULL */
	void *payload;
	sk_log_fn log; /* may be NULL */
	void *log_payload;
	/* When true, a newer version that differs from the cached copy only in
	 * status and resourceVersion updates the cache without a callback
	 * (controller-runtime's generation/annotation predicates: the
	 * controller's own status writes do not trigger another reconcile). */
	bool skip_status_only;
} sk_informer_options;
#define SK_INFORMER_OPTIONS_INIT                                                                   \
	{                                                                                          \
		NULL, 1000, 300000, 256, NULL, NULL, NULL, NULL, false                             \
	}

int sk_informer_new(sk_informer **out, const sk_informer_options *opts, sk_error *err);
/* Stops the thread when running, then frees. NULL-safe. */
void sk_informer_free(sk_informer *inf);

/* Starts the background thread (first a full list, then polls). */
int sk_informer_start(sk_informer *inf, sk_error *err);
/* Asks the thread to stop after its current read, without waiting for it:
 * a stopping controller asks every thread first, then joins them, so that
 * their store timeouts run side by side instead of one after another. */
void sk_informer_cancel(sk_informer *inf);
/* Stops and joins the thread (idempotent). */
void sk_informer_stop(sk_informer *inf);

/* One full list now (also used without the thread, e.g. by tests). */
int sk_informer_relist(sk_informer *inf, sk_error *err);
/* One poll now: list_since with the look-back window. */
int sk_informer_poll(sk_informer *inf, sk_error *err);
/* Takes a copy its owner just wrote (or read) into the cache when it is newer
 * than the cached one, as a poll would; the change callback runs as for a
 * poll (not for a status-only change when skip_status_only). */
void sk_informer_observe(sk_informer *inf, const sk_userspace *us);

/* The pause before the next poll when the last read took read_ms: poll_ms,
 * stretched so that reading takes at most 1/SK_INFORMER_DUTY_DIVISOR of the
 * time (and never longer than SK_INFORMER_MAX_PAUSE_MS). */
#define SK_INFORMER_DUTY_DIVISOR 5
#define SK_INFORMER_MAX_PAUSE_MS 30000
int64_t sk_informer_poll_pause(int64_t poll_ms, int64_t read_ms);

/* True once a full list has succeeded. */
bool sk_informer_has_synced(sk_informer *inf);
/* Waits up to timeout_ms for the first full list. */
bool sk_informer_wait_synced(sk_informer *inf, int64_t timeout_ms);

/* A deep copy of the cached object: 0, or SK_ENOTFOUND. */
int sk_informer_get(sk_informer *inf, const char *name, sk_userspace **out);
/* A borrowed, read-only reference to a cached object (the fast
 * path copied the object out of the cache on every connect). The decoded
 * version is shared by every borrower and reference-counted: it stays
 * valid until sk_informer_release whatever the cache does meanwhile (a
 * newer version or a delete replaces the cache's entry and drops the
 * cache's reference, never the borrowers'), and it never changes: a reader
 * sees one version whole, and a borrow after a change sees the new one.
 * Each version is decoded at its first borrow; the decoded form of an
 * object nobody borrowed between two full relists is dropped, so decoded
 * copies are kept only for the spaces in use. Readers must not write
 * through us (shared between threads without a lock). */
typedef struct sk_informer_ref {
	const sk_userspace *us; /* NULL when not held */
	void *held; /* internal */
} sk_informer_ref;
#define SK_INFORMER_REF_INIT                                                                       \
	{                                                                                          \
		NULL, NULL                                                                         \
	}
/* 0 (*out holds a reference), SK_ENOTFOUND, or the decoder's error. */
int sk_informer_borrow(sk_informer *inf, const char *name, sk_informer_ref *out);
/* The same for the object whose spec.userID is user_id: one lock, no copy
 * of its name (us->meta.name). */
int sk_informer_borrow_user(sk_informer *inf, const char *user_id, sk_informer_ref *out);
/* Drops the reference; NULL-safe, a no-op on a ref not held; ref->us is
 * NULL after. Needs no lock: callable after the informer is freed. */
void sk_informer_release(sk_informer_ref *ref);
/* Frees n names and their vector (names collected from the cache). */
void sk_informer_names_free(char **names, size_t n);
/* Whether some cached UserSpace has spec.userID == user_id. */
bool sk_informer_has_user(sk_informer *inf, const char *user_id);
/* The name of the object whose spec.userID is user_id (an index, not a
 * scan); NULL when none. Caller frees. */
char *sk_informer_name_for_user(sk_informer *inf, const char *user_id);
size_t sk_informer_len(sk_informer *inf);
/* Whether b differs from a only in status and resourceVersion. */
bool sk_informer_status_only_change(const sk_userspace *a, const sk_userspace *b);
/* What the cache knows of an object without decoding it. */
typedef struct sk_informer_entry {
	const char *name;
	const char *user_id; /* NULL when unset */
	int64_t resource_version;
	sk_phase phase; /* status.phase */
	bool ready; /* as sk_userspace_is_ready */
} sk_informer_entry;
/* Calls fn for every cached object (in no particular order) with the cache
 * locked: fn must be quick, must not keep e or its strings, and must not
 * call the informer. For cheap aggregates (metrics): nothing is decoded. */
typedef void (*sk_informer_visit_fn)(const sk_informer_entry *e, void *payload);
void sk_informer_foreach(sk_informer *inf, sk_informer_visit_fn fn, void *payload);
/* Highest resourceVersion seen. */
int64_t sk_informer_last_rv(sk_informer *inf);

/* Counters for metrics. */
typedef struct sk_informer_stats {
	uint64_t polls;
	uint64_t relists;
	uint64_t errors;
	uint64_t changes;
	uint64_t skipped; /* status-only changes without a callback (skip_status_only) */
} sk_informer_stats;
void sk_informer_get_stats(sk_informer *inf, sk_informer_stats *out);

#endif
