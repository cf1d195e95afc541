/*
 * quota_int: the SpaceQuotas the controller enforces (pkg/controller/quota.c,
 * private to pkg/controller). The observer thread re-reads them from the
 * store every SK_CTL_QUOTA_REFRESH_MS, counts each tenant's use from the
 * informer's cache (spaces; running: phase Creating, Resuming, Running or
 * Degraded), writes status.used where it changed and sets the metrics.
 * The capacity gate (capacity_quota.c) takes the current set to hold
 * spec.hard.running. A set is immutable and counted: whoever holds one
 * reads it without a lock.
 */
#ifndef SK_CONTROLLER_QUOTA_INT_H
#define SK_CONTROLLER_QUOTA_INT_H

#include "../api/quota.h"
#include "controller.h"

#define SK_CTL_METRIC_QUOTA_USED "spacekeeper_quota_used"
#define SK_CTL_METRIC_QUOTA_HARD "spacekeeper_quota_hard"
#define SK_CTL_QUOTA_REFRESH_MS 2000

typedef struct sk_ctl_quota_set {
	sk_spacequota **items; /* by name */
	size_t n;
	int refs; /* under the controller's quotas lock */
} sk_ctl_quota_set;

typedef struct sk_ctl_quotas sk_ctl_quotas;

sk_ctl_quotas *sk_ctl_quotas_new(sk_controller *c);
void sk_ctl_quotas_free(sk_ctl_quotas *qs);
/* Reads, counts, writes status and metrics (the observer thread). */
void sk_ctl_quotas_refresh(sk_controller *c);
/* The current set (never NULL; empty before the first read); put it back. */
sk_ctl_quota_set *sk_ctl_quotas_get(sk_controller *c);
void sk_ctl_quotas_put(sk_controller *c, sk_ctl_quota_set *set);

#endif
