/*
 * reconcile/capacity: a provider's cap on running sandboxes, its decisions
 * (pure; plan_capacity.c).
 */
#ifndef SK_RECONCILE_CAPACITY_H
#define SK_RECONCILE_CAPACITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

#endif
