/*
 * workqueue: the controller's rate-limited work queue (client-go's workqueue
 * in C).
 *
 * Queue guarantees (client-go's workqueue contract):
 *   - stingy: a key is queued at most once however often it is added;
 *   - a key is never handed to two workers at once; a key added while it is
 *     being processed is queued again when the worker calls done;
 *   - delayed adds (a min-heap by due time), per-key exponential backoff
 *     (base 5 ms doubling up to 1000 s) combined with a global token bucket
 *     (10 qps, burst 100 by default): the delay is the larger of the two;
 *   - shutdown wakes every waiter; workers still call done for their key.
 * The clock is injectable (monotonic milliseconds) so tests need no sleeps.
 * The string map, the clock type and the token bucket it uses live in util.
 */
#ifndef SK_WORKQUEUE_H
#define SK_WORKQUEUE_H

#include "../util/util.h"

/* ---- the work queue ---- */

typedef struct sk_workqueue sk_workqueue;

typedef struct sk_workqueue_options {
	double qps; /* global bucket for rate-limited adds; default 10 */
	int burst; /* default 100 */
	int64_t base_delay_ms; /* per-key backoff base, default 5 */
	int64_t max_delay_ms; /* per-key backoff cap, default 1000 s */
	sk_clock_fn clock; /* NULL: sk_monotonic_ms */
	void *clock_payload;
	/* Timing (client-go's workqueue metrics), NULL for none. Called outside
	 * the queue's lock: work false: a key waited ms in the queue before a get
	 * took it (queue duration); work true: a worker held it ms, get to done
	 * (work duration). */
	void (*observe)(void *payload, bool work, int64_t ms);
	void *observe_payload;
} sk_workqueue_options;
#define SK_WORKQUEUE_OPTIONS_INIT                                                                  \
	{                                                                                          \
		10, 100, 5, 1000000, NULL, NULL, NULL, NULL                                        \
	}

typedef struct sk_workqueue_stats {
	size_t depth; /* keys ready in the queue */
	size_t processing; /* keys held by workers */
	size_t delayed; /* keys waiting for a due time */
	uint64_t adds_total; /* adds that queued a key */
	uint64_t retries_total; /* add_rate_limited calls */
	int64_t unfinished_ms; /* sum over held keys of the time since their get */
	int64_t longest_running_ms; /* the longest of those times, 0 when none */
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

#endif
