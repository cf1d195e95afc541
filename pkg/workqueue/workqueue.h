/*
 * workqueue: the controller's rate-limited work queue (client-go's workqueue
 * in C) plus the small shared containers the controller packages use.
 *
 * Queue guarantees (DESIGN §5, style.md §3.2):
 *   - stingy: a key is queued at most once however often it is added;
 *   - a key is never handed to two workers at once; a key added while it is
 *     being processed is queued again when the worker calls done;
 *   - delayed adds (a min-heap by due time), per-key exponential backoff
 *     (base 5 ms doubling up to 1000 s) combined with a global token bucket
 *     (10 qps, burst 100 by default): the delay is the larger of the two;
 *   - shutdown wakes every waiter; workers still call done for their key.
 * The clock is injectable (monotonic milliseconds) so tests need no sleeps.
 *
 * sk_limiter is a token bucket plus an in-flight cap, used per provider
 * (maxInFlight, qps, burst from sk_provider_config).
 *
 * sk_strmap is a string-keyed hash map (keys copied, values owned through
 * an optional free function). Not thread-safe: callers lock.
 */
#ifndef SK_WORKQUEUE_H
#define SK_WORKQUEUE_H

#include "../util/util.h"

/* A monotonic clock in milliseconds. NULL in options means sk_monotonic_ms. */
typedef int64_t (*sk_clock_fn)(void *payload);

/* ---- string map ---- */

typedef struct sk_strmap sk_strmap;
typedef void (*sk_strmap_free_fn)(void *value);
typedef void (*sk_strmap_visit_fn)(const char *key, void *value, void *payload);

/* free_value may be NULL (values are not owned). */
sk_strmap *sk_strmap_new(sk_strmap_free_fn free_value);
void sk_strmap_free(sk_strmap *m); /* NULL-safe; frees every value */
/* Borrowed value or NULL. */
void *sk_strmap_get(const sk_strmap *m, const char *key);
bool sk_strmap_has(const sk_strmap *m, const char *key);
/* Inserts or replaces (the old value is freed). Takes ownership of value. */
void sk_strmap_put(sk_strmap *m, const char *key, void *value);
/* Removes and frees the value; returns whether the key was present. */
bool sk_strmap_remove(sk_strmap *m, const char *key);
/* Removes without freeing and returns the value (NULL when absent). */
void *sk_strmap_take(sk_strmap *m, const char *key);
size_t sk_strmap_len(const sk_strmap *m);
/* Visits every entry; the callback must not modify the map. */
void sk_strmap_foreach(const sk_strmap *m, sk_strmap_visit_fn fn, void *payload);
/* Every key, sorted (caller frees with sk_strv_free). */
char **sk_strmap_keys(const sk_strmap *m, size_t *n_out);
void sk_strv_free(char **v, size_t n);

/* ---- token bucket + in-flight limiter ---- */

typedef struct sk_limiter sk_limiter;

typedef struct sk_limiter_options {
	double qps; /* tokens per second; <= 0 means unlimited */
	int burst; /* bucket size; < 1 is taken as 1 */
	int max_in_flight; /* concurrent holders; <= 0 means unlimited */
	sk_clock_fn clock; /* NULL: sk_monotonic_ms */
	void *clock_payload;
} sk_limiter_options;
#define SK_LIMITER_OPTIONS_INIT                                                                    \
	{                                                                                          \
		10, 100, 0, NULL, NULL                                                             \
	}

sk_limiter *sk_limiter_new(const sk_limiter_options *opts);
void sk_limiter_free(sk_limiter *l); /* NULL-safe */
/* Takes one token now, possibly on credit: returns how many milliseconds the
 * caller should wait before acting (0 when a token was available). */
int64_t sk_limiter_reserve(sk_limiter *l);
/* Takes a token only when one is available now. */
bool sk_limiter_try_take(sk_limiter *l);
/* Blocks until an in-flight slot is free and a token is due (sleeping with
 * the real clock), or until cancel_flag becomes true (checked every 50 ms)
 * or timeout_ms passes (< 0: no timeout). Returns 0, SK_ETIMEOUT, or
 * SK_ERROR when cancelled. On success the caller must sk_limiter_release. */
int sk_limiter_acquire(sk_limiter *l, int64_t timeout_ms, const volatile bool *cancel_flag);
void sk_limiter_release(sk_limiter *l);
int sk_limiter_in_flight(sk_limiter *l);

/* ---- the work queue ---- */

typedef struct sk_workqueue sk_workqueue;

typedef struct sk_workqueue_options {
	double qps; /* global bucket for rate-limited adds; default 10 */
	int burst; /* default 100 */
	int64_t base_delay_ms; /* per-key backoff base, default 5 */
	int64_t max_delay_ms; /* per-key backoff cap, default 1000 s */
	sk_clock_fn clock; /* NULL: sk_monotonic_ms */
	void *clock_payload;
} sk_workqueue_options;
#define SK_WORKQUEUE_OPTIONS_INIT                                                                  \
	{                                                                                          \
		10, 100, 5, 1000000, NULL, NULL                                                    \
	}

typedef struct sk_workqueue_stats {
	size_t depth; /* keys ready in the queue */
	size_t processing; /* keys held by workers */
	size_t delayed; /* keys waiting for a due time */
	uint64_t adds_total; /* adds that queued a key */
	uint64_t retries_total; /* add_rate_limited calls */
} sk_workqueue_stats;

/* opts may be NULL for the defaults. */
sk_workqueue *sk_workqueue_new(const sk_workqueue_options *opts);
/* NULL-safe. Call after every worker has returned. */
void sk_workqueue_free(sk_workqueue *q);

/* Queues key unless it is already queued (or marks it dirty when processing). */
void sk_workqueue_add(sk_workqueue *q, const char *key);
/* Like add, but a key that is waiting moves to the front of the queue. */
void sk_workqueue_add_priority(sk_workqueue *q, const char *key);
/* A resync add: like add, but skipped when the key is already queued, held
 * by a worker, or has a delayed add due within within_ms (so a periodic
 * resync does not double the planner's own requeue). Returns whether added. */
bool sk_workqueue_add_resync(sk_workqueue *q, const char *key, int64_t within_ms);
/* Adds after delay_ms (<= 0: now). An earlier pending due time wins. */
void sk_workqueue_add_after(sk_workqueue *q, const char *key, int64_t delay_ms);
/* Adds after max(per-key backoff, global bucket) and counts a failure for
 * the key. Returns the delay used. */
int64_t sk_workqueue_add_rate_limited(sk_workqueue *q, const char *key);
/* The backoff the next add_rate_limited would use, without counting. */
int64_t sk_workqueue_backoff_peek(sk_workqueue *q, const char *key);
/* Clears the key's failure count (on success). */
void sk_workqueue_forget(sk_workqueue *q, const char *key);
int sk_workqueue_num_requeues(sk_workqueue *q, const char *key);

/* Waits up to timeout_ms (< 0: forever) for a key. On 0, *key_out is a copy
 * the caller frees after calling done. SK_ETIMEOUT when nothing came,
 * SK_ERROR once the queue is shut down (and drained of ready keys when
 * drain was asked). */
int sk_workqueue_get(sk_workqueue *q, int64_t timeout_ms, char **key_out);
/* Marks the key finished; re-queues it when it was added meanwhile. */
void sk_workqueue_done(sk_workqueue *q, const char *key);

/* Stops handing out keys and wakes every waiter. */
void sk_workqueue_shutdown(sk_workqueue *q);
bool sk_workqueue_shutting_down(sk_workqueue *q);

void sk_workqueue_get_stats(sk_workqueue *q, sk_workqueue_stats *out);
/* Milliseconds until the next delayed key is due; -1 when none. */
int64_t sk_workqueue_next_due_ms(sk_workqueue *q);
/* Moves due delayed keys into the queue (get does this too). */
void sk_workqueue_promote(sk_workqueue *q);

#endif
