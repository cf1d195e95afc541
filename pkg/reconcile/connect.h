/*
 * reconcile/connect: the platform's connect request, decided from what is
 * known of the space (pure; outcome.c).
 */
#ifndef SK_RECONCILE_CONNECT_H
#define SK_RECONCILE_CONNECT_H

#include "../api/userspace.h"
#include "options.h"

typedef enum sk_connect_verdict {
	SK_CONNECT_READY, /* answer now from memory: keeper running, probed healthy lately */
	SK_CONNECT_WAKE, /* Idle: resume it (one provider call), probe, answer */
	SK_CONNECT_REPLACE, /* keeper unreachable past the grace, remediation Replace: replace now */
	SK_CONNECT_RECONCILE, /* unknown, missing or changing: reconcile now and wait */
	SK_CONNECT_UNAVAILABLE, /* will not become ready by waiting: answer 503 at once */
} sk_connect_verdict;

/* What the controller remembers of a space's keeper from its last reconcile. */
typedef struct sk_keeper_memory {
	const char *sandbox_id; /* the keeper that reconcile saw, NULL none */
	bool running; /* its state then */
	bool healthy; /* its probe then answered 2xx (or probing is off) */
	int64_t seen_ms; /* when (wall ms), 0: never */
	int64_t end_ms; /* its provider deadline then (0 unknown) */
} sk_keeper_memory;

typedef struct sk_connect_decision {
	sk_connect_verdict verdict;
	const char *reason; /* UNAVAILABLE: "Deleting", "ModePaused", "DataPlaneUnreachable",
	                     * "RestoreFailed", ... */
	int64_t retry_after_ms; /* UNAVAILABLE: when asking again may help (0: not soon) */
	int64_t drift_since_ms; /* DataPlaneUnreachable: since when */
	bool renew_due; /* READY: the deadline is within the renewal window (sk_plan_renew_window) */
} sk_connect_decision;

void sk_connect_decide(const sk_userspace *us, const sk_keeper_memory *mem, int64_t now_ms,
        const sk_plan_options *opts, sk_connect_decision *out);

#endif
