/*
 * reconcile/capacity: a provider's cap on running sandboxes, its decisions
 * (pure; plan_capacity.c).
 */
#ifndef SK_RECONCILE_CAPACITY_H
#define SK_RECONCILE_CAPACITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../api/kvlist.h"
#include "../api/quota.h"

typedef enum sk_capacity_verdict {
	SK_CAPACITY_START, /* a slot is free for it: start now */
	SK_CAPACITY_EVICT, /* evict one more awake space, then wait */
	SK_CAPACITY_WAIT, /* the evictions asked will free its slot: wait */
} sk_capacity_verdict;

typedef struct sk_capacity_state {
	int max_running; /* the cap (configured, or the provider's as learned); 0: none */
	int running; /* running at the provider, starts granted but not seen included */
	int evicting; /* evictions asked and not done yet */
	size_t position; /* the space's place in the provider's FIFO queue, 0: first */
} sk_capacity_state;

sk_capacity_verdict sk_capacity_decide(const sk_capacity_state *s);

/* The cap a provider's refusal of a start shows (learned: the one learned
 * so far, 0 none): what ran when it refused, the awake spaces seen now and
 * those seen stopping since the start was let through (an eviction's pause
 * that ended while the refused start was in flight ran then). A lower
 * figure replaces the one learned; nothing running keeps it. */
int sk_capacity_learn(int learned, int awake, int stopped);

/* An awake space at the provider, as the controller knows it. */
typedef struct sk_capacity_candidate {
	const char *name;
	const char *tenant; /* its quota tenant, NULL: none */
	int64_t activity_ms; /* the last connect or heartbeat (wall ms), 0: none */
	/* when it was seen running first (since its last stop): the last use
	 * of a space never used, or woken after its last activity */
	int64_t started_ms;
	bool busy; /* lifecycle.busy: processes run (the Busy condition True) */
	bool always_on; /* lifecycle.idleTimeout 0 */
	bool evicting; /* already asked to pause */
	/* For sk_capacity_gate: at the starting space's provider, and its
	 * labels (which SpaceQuotas' tenant it is in; NULL: none). */
	bool here;
	const sk_kvlist *labels;
} sk_capacity_candidate;

/* The index of the space to evict at now_ms, -1 when none may be: the one
 * whose last use is oldest (ties: by name), skipping busy, always-on,
 * already evicting and just-connected (within recent_ms; a space started
 * after its last activity, woken for a connect, counts from its start)
 * ones; with tenant given, one of that tenant when there is one. */
int sk_capacity_pick_victim(const sk_capacity_candidate *c, size_t n, const char *tenant,
        int64_t now_ms, int64_t recent_ms);

/* In how many ms a start that found none of c[] evictable asks again: when
 * the first just-connected one may be, else recent_ms (the awake spaces
 * are busy, evicting, or starts granted and not seen yet, which are not
 * candidates); never 0: nothing else asks for it (no slot frees while
 * nothing is evicted), and a connect would wait out its timeout. */
int64_t sk_capacity_retry_ms(
        const sk_capacity_candidate *c, size_t n, int64_t now_ms, int64_t recent_ms);

/* A SpaceQuota whose tenant the starting space is in, with the tenant's
 * use (the space itself not counted). */
typedef struct sk_capacity_quota_use {
	const sk_spacequota *quota;
	int running; /* running, or a start granted and not seen yet */
	int evicting; /* asked to pause, not done yet */
} sk_capacity_quota_use;

/* Everything one start at the capacity gate is decided on. */
typedef struct sk_capacity_gate_in {
	bool connect; /* a waiting connect's start (its wake is asked again) */
	/* Its provider: the cap in force (0 none), what runs there (starts
	 * granted included), evictions asked, the start's place in the FIFO
	 * queue (queued false: position is the queue's length). */
	int max_running;
	int running;
	int evicting;
	size_t position;
	bool queued;
	bool queued_wake; /* its place was a connect's */
	/* A start token (createsPerSecond) is free; else the next is due in
	 * token_wait_ms. */
	bool token;
	int64_t token_wait_ms;
	/* The SpaceQuotas whose tenant it is in, in the set's order (the first
	 * is its tenant, whose spaces a capacity eviction takes first). */
	const sk_capacity_quota_use *quotas;
	size_t n_quotas;
	/* The awake spaces a pause may be asked of (running, no start pending),
	 * at its provider or in its tenants, with their last activity. */
	const sk_capacity_candidate *candidates;
	size_t n_candidates;
	int64_t now_ms;
	int64_t evict_after_ms; /* its provider's capacity.evictAfter */
	int64_t quota_evict_after_ms; /* a quota's eviction: the first provider's */
	int64_t resync_ms; /* controller.resyncPeriod: how long a refused start's place is held */
} sk_capacity_gate_in;

typedef enum sk_capacity_gate_kind {
	SK_GATE_START, /* start now (a start granted) */
	SK_GATE_QUOTA, /* a SpaceQuota's spec.hard.running holds it back */
	SK_GATE_RATE, /* no start token left (createsPerSecond) */
	SK_GATE_CAPACITY, /* the provider is at its cap */
} sk_capacity_gate_kind;

/* The decision: anything but START waits in the provider's queue, refused
 * (a slot freeing there queues it again). */
typedef struct sk_capacity_gate {
	sk_capacity_gate_kind kind;
	size_t quota; /* QUOTA: the index in quotas */
	bool refuse; /* QUOTA: spec.hard.running 0, nothing to evict for */
	bool evict; /* QUOTA or CAPACITY: one more awake space must pause */
	int victim; /* evict: the index in candidates to pause, -1: none may be */
	/* Its place in the queue: (re)entered for queue_ms with queue_wake;
	 * queue_ms 0: kept as it is. */
	int64_t queue_ms;
	bool queue_wake;
	/* What the start asks of itself: its wake again (a connect's), and a
	 * reconcile in retry_ms (0: a freed slot queues it). */
	bool wake_again;
	int64_t retry_ms;
} sk_capacity_gate;

/* A refused start not queued yet (a create at apply) keeps its place
 * this long beyond a resync. */
#define SK_CAPACITY_CREATE_WAIT_EXTRA_MS 5000
/* A start a quota holds back asks again after this. */
#define SK_CAPACITY_QUOTA_RETRY_MS 1000

/* Decides one start at the capacity gate: the SpaceQuotas first (the
 * tenant as the provider), then the provider's cap (sk_capacity_decide),
 * then the start rate; an eviction's victim by sk_capacity_pick_victim,
 * within the quota's tenant for a quota, at the provider (the tenant's
 * first) for the cap. Pure. */
void sk_capacity_gate_decide(const sk_capacity_gate_in *in, sk_capacity_gate *out);

#endif
