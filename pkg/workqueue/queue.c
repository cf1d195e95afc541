/*
 * queue: the deduplicating FIFO with dirty/processing flags per key, a
 * min-heap of delayed adds, and per-key exponential backoff. One mutex and
 * one condition variable (CLOCK_MONOTONIC) guard everything.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "workqueue.h"

typedef struct wq_entry {
	char *key;
	bool dirty; /* needs a run (queued, or re-run after done) */
	bool processing; /* held by a worker */
	int failures; /* for backoff; cleared by forget */
	int64_t due; /* pending delayed add, 0 when none */
	int heap_refs; /* heap items pointing here (some may be stale) */
	bool in_ring;
	/* a priority add came while a worker held it: it goes back to the
	 * front when done, not behind everything queued meanwhile (a connect
	 * that needs a reconcile is served ahead of background resyncs) */
	bool priority;
	int64_t queued_at; /* when it entered the ring (queue duration) */
	int64_t started_at; /* when a worker took it (work duration) */
} wq_entry;

typedef struct wq_delayed {
	int64_t due;
	uint64_t seq;
	wq_entry *e;
} wq_delayed;

struct sk_workqueue {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	sk_workqueue_options opts;
	sk_strmap *entries; /* key -> wq_entry */
	wq_entry **ring; /* the FIFO of ready keys */
	size_t ring_cap, ring_head, ring_len;
	wq_delayed *heap;
	size_t heap_len, heap_cap;
	uint64_t seq;
	size_t n_processing;
	size_t n_delayed;
	uint64_t adds_total, retries_total;
	sk_limiter *bucket;
	bool shutting_down;
};

static int64_t
wq_now(const sk_workqueue *q)
{
	return q->opts.clock ? q->opts.clock(q->opts.clock_payload) : sk_monotonic_ms();
}

static void
entry_free(void *p)
{
	wq_entry *e = p;

	if (e) {
		free(e->key);
		free(e);
	}
}

sk_workqueue *
sk_workqueue_new(const sk_workqueue_options *opts)
{
	sk_workqueue_options def = SK_WORKQUEUE_OPTIONS_INIT;
	sk_limiter_options lo = SK_LIMITER_OPTIONS_INIT;
	sk_workqueue *q = sk_calloc(1, sizeof(*q));

	q->opts = opts ? *opts : def;
	if (q->opts.base_delay_ms <= 0)
		q->opts.base_delay_ms = 5;
	if (q->opts.max_delay_ms <= 0)
		q->opts.max_delay_ms = 1000000;
	pthread_mutex_init(&q->mu, NULL);
	sk_cond_init_monotonic(&q->cond);
	q->entries = sk_strmap_new(entry_free);
	q->ring_cap = 64;
	q->ring = sk_calloc(q->ring_cap, sizeof(*q->ring));
	lo.qps = q->opts.qps;
	lo.burst = q->opts.burst;
	lo.clock = q->opts.clock;
	lo.clock_payload = q->opts.clock_payload;
	q->bucket = sk_limiter_new(&lo);
	return q;
}

void
sk_workqueue_free(sk_workqueue *q)
{
	if (!q)
		return;
	sk_strmap_free(q->entries);
	free(q->ring);
	free(q->heap);
	sk_limiter_free(q->bucket);
	pthread_mutex_destroy(&q->mu);
	pthread_cond_destroy(&q->cond);
	free(q);
}

/* ---- entries ---- */

static wq_entry *
entry_get(sk_workqueue *q, const char *key)
{
	wq_entry *e = sk_strmap_get(q->entries, key);

	if (!e) {
		e = sk_calloc(1, sizeof(*e));
		e->key = sk_strdup(key);
		sk_strmap_put(q->entries, key, e);
	}
	return e;
}

/* Drops an entry that carries no state any more. */
static void
entry_maybe_drop(sk_workqueue *q, wq_entry *e)
{
	if (!e->dirty && !e->processing && e->failures == 0 && e->due == 0 && e->heap_refs == 0)
		sk_strmap_remove(q->entries, e->key);
}

/* ---- the ring (FIFO with push-front for priority) ---- */

static void
ring_grow(sk_workqueue *q)
{
	wq_entry **r = sk_calloc(q->ring_cap * 2, sizeof(*r));

	for (size_t i = 0; i < q->ring_len; i++)
		r[i] = q->ring[(q->ring_head + i) % q->ring_cap];
	free(q->ring);
	q->ring = r;
	q->ring_head = 0;
	q->ring_cap *= 2;
}

static void
ring_push(sk_workqueue *q, wq_entry *e, bool front)
{
	if (!e->in_ring) { /* a priority move keeps its time */
		e->in_ring = true;
		e->queued_at = wq_now(q);
	}
	if (q->ring_len == q->ring_cap)
		ring_grow(q);
	if (front) {
		q->ring_head = (q->ring_head + q->ring_cap - 1) % q->ring_cap;
		q->ring[q->ring_head] = e;
	} else {
		q->ring[(q->ring_head + q->ring_len) % q->ring_cap] = e;
	}
	q->ring_len++;
}

static wq_entry *
ring_pop(sk_workqueue *q)
{
	wq_entry *e = q->ring[q->ring_head];

	q->ring_head = (q->ring_head + 1) % q->ring_cap;
	q->ring_len--;
	return e;
}

/* Removes e from wherever it sits in the ring (priority re-ordering). */
static void
ring_remove(sk_workqueue *q, wq_entry *e)
{
	size_t i, n = q->ring_len;

	for (i = 0; i < n; i++)
		if (q->ring[(q->ring_head + i) % q->ring_cap] == e)
			break;
	if (i == n)
		return;
	for (; i + 1 < n; i++)
		q->ring[(q->ring_head + i) % q->ring_cap] =
		        q->ring[(q->ring_head + i + 1) % q->ring_cap];
	q->ring_len--;
}

/* ---- adds ---- */

static void
add_locked(sk_workqueue *q, wq_entry *e, bool priority)
{
	if (q->shutting_down)
		return;
	if (e->dirty) {
		if (priority && !e->processing) {
			ring_remove(q, e);
			ring_push(q, e, true);
		} else if (priority) {
			e->priority = true;
		}
		return;
	}
	e->dirty = true;
	q->adds_total++;
	if (e->processing) {
		e->priority = priority;
		return;
	}
	ring_push(q, e, priority);
	pthread_cond_signal(&q->cond);
}

void
sk_workqueue_add(sk_workqueue *q, const char *key)
{
	pthread_mutex_lock(&q->mu);
	add_locked(q, entry_get(q, key), false);
	pthread_mutex_unlock(&q->mu);
}

void
sk_workqueue_add_priority(sk_workqueue *q, const char *key)
{
	pthread_mutex_lock(&q->mu);
	add_locked(q, entry_get(q, key), true);
	pthread_mutex_unlock(&q->mu);
}

bool
sk_workqueue_add_resync(sk_workqueue *q, const char *key, int64_t within_ms)
{
	wq_entry *e;
	bool add;

	pthread_mutex_lock(&q->mu);
	e = sk_strmap_get(q->entries, key);
	add = !e ||
	        (!e->dirty && !e->processing && (e->due == 0 || e->due - wq_now(q) > within_ms));
	if (add)
		add_locked(q, entry_get(q, key), false);
	pthread_mutex_unlock(&q->mu);
	return add;
}

/* ---- the delay heap ---- */

static bool
heap_less(const wq_delayed *a, const wq_delayed *b)
{
	return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

static void
heap_swap(sk_workqueue *q, size_t i, size_t j)
{
	wq_delayed t = q->heap[i];

	q->heap[i] = q->heap[j];
	q->heap[j] = t;
}

static void
heap_push(sk_workqueue *q, int64_t due, wq_entry *e)
{
	size_t i;

	if (q->heap_len == q->heap_cap) {
		q->heap_cap = q->heap_cap ? q->heap_cap * 2 : 64;
		q->heap = sk_realloc(q->heap, q->heap_cap * sizeof(*q->heap));
	}
	i = q->heap_len++;
	q->heap[i] = (wq_delayed){ due, q->seq++, e };
	e->heap_refs++;
	while (i > 0 && heap_less(&q->heap[i], &q->heap[(i - 1) / 2])) {
		heap_swap(q, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static wq_delayed
heap_pop(sk_workqueue *q)
{
	wq_delayed top = q->heap[0];
	size_t i = 0;

	q->heap[0] = q->heap[--q->heap_len];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < q->heap_len && heap_less(&q->heap[l], &q->heap[m]))
			m = l;
		if (r < q->heap_len && heap_less(&q->heap[r], &q->heap[m]))
			m = r;
		if (m == i)
			break;
		heap_swap(q, i, m);
		i = m;
	}
	top.e->heap_refs--;
	return top;
}

/* Moves every due heap item to the queue; stale items (superseded by an
 * earlier due time) are dropped. Called with the lock held. */
static void
promote_locked(sk_workqueue *q)
{
	int64_t now = wq_now(q);

	while (q->heap_len > 0 && q->heap[0].due <= now) {
		wq_delayed d = heap_pop(q);
		if (d.e->due == d.due) {
			d.e->due = 0;
			q->n_delayed--;
			add_locked(q, d.e, false);
		}
		entry_maybe_drop(q, d.e);
	}
}

void
sk_workqueue_add_after(sk_workqueue *q, const char *key, int64_t delay_ms)
{
	wq_entry *e;
	int64_t due;

	if (delay_ms <= 0) {
		sk_workqueue_add(q, key);
		return;
	}
	pthread_mutex_lock(&q->mu);
	if (q->shutting_down)
		goto done;
	e = entry_get(q, key);
	due = wq_now(q) + delay_ms;
	if (e->due != 0 && e->due <= due)
		goto done;
	if (e->due == 0)
		q->n_delayed++;
	e->due = due;
	heap_push(q, due, e);
	/* A waiter may need to wake earlier than it planned. */
	pthread_cond_broadcast(&q->cond);
done:
	pthread_mutex_unlock(&q->mu);
}

/* ---- backoff ---- */

static int64_t
backoff_for(const sk_workqueue *q, int failures)
{
	int64_t d = q->opts.base_delay_ms;

	for (int i = 0; i < failures; i++) {
		if (d >= q->opts.max_delay_ms / 2)
			return q->opts.max_delay_ms;
		d *= 2;
	}
	return d > q->opts.max_delay_ms ? q->opts.max_delay_ms : d;
}

int64_t
sk_workqueue_backoff_peek(sk_workqueue *q, const char *key)
{
	wq_entry *e;
	int64_t d;

	pthread_mutex_lock(&q->mu);
	e = sk_strmap_get(q->entries, key);
	d = backoff_for(q, e ? e->failures : 0);
	pthread_mutex_unlock(&q->mu);
	return d;
}

int64_t
sk_workqueue_add_rate_limited(sk_workqueue *q, const char *key)
{
	int64_t per_key, global;
	wq_entry *e;

	pthread_mutex_lock(&q->mu);
	e = entry_get(q, key);
	per_key = backoff_for(q, e->failures);
	if (e->failures < 1000)
		e->failures++;
	q->retries_total++;
	pthread_mutex_unlock(&q->mu);
	global = sk_limiter_reserve(q->bucket);
	if (global > per_key)
		per_key = global;
	sk_workqueue_add_after(q, key, per_key);
	return per_key;
}

void
sk_workqueue_forget(sk_workqueue *q, const char *key)
{
	wq_entry *e;

	pthread_mutex_lock(&q->mu);
	e = sk_strmap_get(q->entries, key);
	if (e) {
		e->failures = 0;
		entry_maybe_drop(q, e);
	}
	pthread_mutex_unlock(&q->mu);
}

int
sk_workqueue_num_requeues(sk_workqueue *q, const char *key)
{
	wq_entry *e;
	int n;

	pthread_mutex_lock(&q->mu);
	e = sk_strmap_get(q->entries, key);
	n = e ? e->failures : 0;
	pthread_mutex_unlock(&q->mu);
	return n;
}

/* ---- get / done ---- */

/* How long a waiter may sleep: until its deadline or the next due item. */
static int64_t
wait_slice(sk_workqueue *q, int64_t deadline)
{
	int64_t slice = 1000, now = sk_monotonic_ms();

	if (deadline >= 0)
		slice = deadline - now;
	if (q->heap_len > 0) {
		int64_t due_in = q->heap[0].due - wq_now(q);
		if (due_in < slice)
			slice = due_in;
	}
	return slice < 1 ? 1 : slice;
}

int
sk_workqueue_get(sk_workqueue *q, int64_t timeout_ms, char **key_out)
{
	int64_t deadline = timeout_ms < 0 ? -1 : sk_monotonic_ms() + timeout_ms;
	int64_t waited = 0;
	int rc = 0;
	wq_entry *e;

	*key_out = NULL;
	pthread_mutex_lock(&q->mu);
	for (;;) {
		if (q->shutting_down) {
			rc = SK_ERROR;
			goto done;
		}
		promote_locked(q);
		if (q->ring_len > 0)
			break;
		if (deadline >= 0 && sk_monotonic_ms() >= deadline) {
			rc = SK_ETIMEOUT;
			goto done;
		}
		sk_cond_wait_ms(&q->cond, &q->mu, wait_slice(q, deadline));
	}
	e = ring_pop(q);
	e->dirty = false;
	e->processing = true;
	e->in_ring = false;
	e->started_at = wq_now(q);
	waited = e->started_at - e->queued_at;
	q->n_processing++;
	*key_out = sk_strdup(e->key);
done:
	pthread_mutex_unlock(&q->mu);
	if (rc == 0 && q->opts.observe)
		q->opts.observe(q->opts.observe_payload, false, waited);
	return rc;
}

void
sk_workqueue_done(sk_workqueue *q, const char *key)
{
	wq_entry *e;
	int64_t worked = -1;

	pthread_mutex_lock(&q->mu);
	e = sk_strmap_get(q->entries, key);
	if (!e || !e->processing)
		goto done;
	worked = wq_now(q) - e->started_at;
	e->processing = false;
	q->n_processing--;
	if (e->dirty && !q->shutting_down) {
		ring_push(q, e, e->priority);
		pthread_cond_signal(&q->cond);
	}
	e->priority = false;
	entry_maybe_drop(q, e);
done:
	pthread_mutex_unlock(&q->mu);
	if (worked >= 0 && q->opts.observe)
		q->opts.observe(q->opts.observe_payload, true, worked);
}

void
sk_workqueue_shutdown(sk_workqueue *q)
{
	pthread_mutex_lock(&q->mu);
	q->shutting_down = true;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->mu);
}

bool
sk_workqueue_shutting_down(sk_workqueue *q)
{
	bool s;

	pthread_mutex_lock(&q->mu);
	s = q->shutting_down;
	pthread_mutex_unlock(&q->mu);
	return s;
}

typedef struct running_acc {
	int64_t now, sum, longest;
} running_acc;

static void
add_running(const char *key, void *value, void *payload)
{
	const wq_entry *e = value;
	running_acc *a = payload;
	int64_t d = a->now - e->started_at;

	(void)key;
	if (!e->processing)
		return;
	a->sum += d;
	if (d > a->longest)
		a->longest = d;
}

void
sk_workqueue_get_stats(sk_workqueue *q, sk_workqueue_stats *out)
{
	running_acc a = { 0, 0, 0 };

	pthread_mutex_lock(&q->mu);
	a.now = wq_now(q);
	if (q->n_processing > 0)
		sk_strmap_foreach(q->entries, add_running, &a);
	out->unfinished_ms = a.sum;
	out->longest_running_ms = a.longest;
	out->depth = q->ring_len;
	out->processing = q->n_processing;
	out->delayed = q->n_delayed;
	out->adds_total = q->adds_total;
	out->retries_total = q->retries_total;
	pthread_mutex_unlock(&q->mu);
}

int64_t
sk_workqueue_next_due_ms(sk_workqueue *q)
{
	int64_t d = -1;

	pthread_mutex_lock(&q->mu);
	/* Skip stale heap tops so the answer reflects a real pending add. */
	for (size_t i = 0; i < q->heap_len; i++) {
		wq_delayed *h = &q->heap[i];
		if (h->e->due == h->due && (d < 0 || h->due < d))
			d = h->due;
	}
	if (d >= 0) {
		d -= wq_now(q);
		if (d < 0)
			d = 0;
	}
	pthread_mutex_unlock(&q->mu);
	return d;
}
