/*
 * capacity_int: each provider's capacity (providers[].capacity), private to
 * pkg/controller (capacity.c, lock capacity->mu, a leaf). The controller
 * counts the running sandboxes per provider from what its reconciles saw;
 * a start (create or wake) beyond maxRunning evicts the awake space whose
 * last activity is oldest (sk_capacity_pick_victim), else waits in the
 * provider's FIFO queue; connects beyond maxQueued waiting get 429. The
 * provider's own 429 on a start lowers the cap to what runs then (for
 * capacity.learnedFor). Starts also pass a token bucket at createsPerSecond.
 */
#ifndef SK_CONTROLLER_CAPACITY_INT_H
#define SK_CONTROLLER_CAPACITY_INT_H

#include "../api/api.h"
#include "../reconcile/reconcile.h"
#include "controller.h"
#include "http_int.h"

typedef struct sk_ctl_capacity sk_ctl_capacity;

#define SK_CTL_METRIC_SANDBOXES_RUNNING "spacekeeper_sandboxes_running"
#define SK_CTL_METRIC_CAPACITY_MAX "spacekeeper_capacity_max"
#define SK_CTL_METRIC_QUEUE_LENGTH "spacekeeper_connect_queue_length"
#define SK_CTL_METRIC_EVICTIONS "spacekeeper_evictions_total"

/* At new (after the metrics), at free. */
sk_ctl_capacity *sk_ctl_capacity_new(sk_controller *c);
void sk_ctl_capacity_free(sk_ctl_capacity *cap);
/* The reconcile's gate (sk_reconcile_env.may_start; arg: the controller). */
bool sk_ctl_capacity_may_start(void *controller, const sk_userspace *us, char *why, size_t len);
/* After a reconcile of name: what it saw (us: the object after it). */
void sk_ctl_capacity_note(
        sk_controller *c, const char *name, const sk_userspace *us, const sk_reconcile_report *r);
void sk_ctl_capacity_forget(sk_controller *c, const char *name);
/* A connect that will start its space (wake or create) takes its place in
 * the provider's queue until deadline (monotonic ms); false with r set to
 * 429 + Retry-After when maxQueued connects wait already. */
bool sk_ctl_capacity_enter(
        sk_controller *c, const sk_userspace *us, int64_t deadline, sk_http_reply *r);
/* The connect answered or gave up: its place goes. */
void sk_ctl_capacity_leave(sk_controller *c, const char *name);
/* name waits in a queue, its start refused by the gate (a slot freeing
 * enqueues it: no need to ask again). */
bool sk_ctl_capacity_queued(sk_controller *c, const char *name);

/* One provider's figures (status page, metrics). */
typedef struct sk_ctl_capacity_view {
	int running;
	int max; /* effective: configured, or the provider's as learned; 0 none */
	int configured;
	size_t queued;
	uint64_t evictions;
} sk_ctl_capacity_view;
void sk_ctl_capacity_view_of(sk_controller *c, size_t prov, sk_ctl_capacity_view *out);

#endif
