/*
 * capacity_int: each provider's capacity (providers[].capacity), private to
 * pkg/controller (capacity.c, capacity_quota.c; lock capacity->mu, a leaf).
 * The controller counts the running sandboxes per provider from what its
 * reconciles saw; a start (create or wake) beyond maxRunning evicts the
 * awake space whose last activity is oldest (sk_capacity_pick_victim), else
 * waits in the provider's FIFO queue; connects beyond maxQueued waiting get
 * 429. The provider's own 429 on a start lowers the cap to what runs then
 * (for capacity.learnedFor). Starts also pass a token bucket at
 * createsPerSecond. What a start's gate decides is the planner's
 * (sk_capacity_gate_decide, pure and table-tested); what it asks of other
 * spaces is carried out after the reconcile (sk_ctl_gate).
 */
#ifndef SK_CONTROLLER_CAPACITY_INT_H
#define SK_CONTROLLER_CAPACITY_INT_H

#include <pthread.h>

#include "../api/kvlist.h"
#include "../api/quota.h"
#include "../api/userspace.h"
#include "../reconcile/capacity.h"
#include "../reconcile/reconcile.h"
#include "../util/util.h"
#include "ground_int.h"
#include "http_int.h"
#include "quota_int.h"

#define SK_CTL_METRIC_SANDBOXES_RUNNING "spacekeeper_sandboxes_running"
#define SK_CTL_METRIC_CAPACITY_MAX "spacekeeper_capacity_max"
#define SK_CTL_METRIC_QUEUE_LENGTH "spacekeeper_connect_queue_length"
#define SK_CTL_METRIC_EVICTIONS "spacekeeper_evictions_total"

/* At new (after the metrics), at free. */
sk_ctl_capacity *sk_ctl_capacity_new(sk_controller *c);
void sk_ctl_capacity_free(sk_ctl_capacity *cap);
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

/* ---- capacity.c and capacity_quota.c: the state, under capacity->mu ---- */

typedef struct sk_ctl_cap_space {
	int prov; /* -1: not known */
	bool running;
	bool busy;
	bool always_on;
	bool granted; /* a start was let through; its reconcile has not ended */
	bool evicting; /* asked to pause; its reconcile has not ended */
	int64_t started_ms; /* wall ms it was first seen running */
	uint64_t stops_at_grant; /* its provider's stops when its start was let through */
	sk_kvlist labels; /* its labels: which SpaceQuotas' tenant it is in */
} sk_ctl_cap_space;

typedef struct sk_ctl_cap_waiter {
	char *name;
	int64_t until; /* monotonic ms */
	bool wake; /* a connect: the space's wake request is put back when its turn comes */
	bool refused; /* the gate refused its start: a slot freeing queues it again */
} sk_ctl_cap_waiter;

typedef struct sk_ctl_cap_count {
	int running; /* running or granted */
	int awake; /* running */
	int evicting;
} sk_ctl_cap_count;

typedef struct sk_ctl_cap_provider {
	int configured;
	int learned; /* 0: none */
	int64_t learned_until; /* monotonic */
	int64_t learned_for; /* capacity.learnedFor */
	double rate;
	sk_limiter *starts; /* the start rate, NULL: none */
	int max_queued;
	sk_ctl_cap_waiter *queue;
	size_t n_queue, cap_queue;
	uint64_t evictions;
	uint64_t stops; /* spaces seen running, then not (sk_capacity_learn) */
	sk_ctl_cap_count count; /* of the spaces at this provider (tally) */
} sk_ctl_cap_provider;

struct sk_ctl_capacity {
	pthread_mutex_t mu;
	sk_strmap *spaces; /* name -> sk_ctl_cap_space* */
	sk_ctl_cap_provider *prov;
	size_t n_prov;
};

/* capacity.c, under cap->mu: name's place in p's queue (appended when
 * absent, its deadline moved on when later). */
size_t sk_ctl_cap_queue_enter(sk_ctl_cap_provider *p, const char *name, int64_t until, bool wake);

/* ---- the gate (sk_ctl_capacity_may_start) ---- */

/* What a start's gate asks of other spaces and of its own, carried out by
 * the worker after the reconcile (sk_ctl_capacity_carry_out), never from
 * the middle of a round: the pause of a victim (marked evicting at the
 * decision, under capacity->mu), the start's wake again and its retry. */
typedef struct sk_ctl_gate_ask {
	char *name;
	bool evict; /* pause name (at provider prov) to free a slot */
	int prov;
	char *quota; /* evict: the SpaceQuota it frees a slot under, NULL: capacity */
	bool wake; /* name's wake request again (a connect's) */
	int64_t after_ms; /* a reconcile of name after this, 0: none */
} sk_ctl_gate_ask;

/* The gate's argument (sk_reconcile_env.may_start_arg): one per reconcile. */
typedef struct sk_ctl_gate {
	sk_controller *c;
	sk_ctl_gate_ask *asks;
	size_t n, cap;
} sk_ctl_gate;

/* The reconcile's gate (sk_reconcile_env.may_start; arg: an sk_ctl_gate):
 * decides by sk_capacity_gate_decide and holds the decision under
 * capacity->mu (a start granted, a place in the queue, a victim marked);
 * what it asks of others waits in the gate. */
bool sk_ctl_capacity_may_start(
        void *gate, const sk_userspace *us, bool connect, char *why, size_t len);
/* After the reconcile: the gate's asks carried out (pauses asked, keys
 * queued), then forgotten. */
void sk_ctl_capacity_carry_out(sk_ctl_gate *g);

/* ---- capacity_quota.c: the SpaceQuotas at the gate, under cap->mu ---- */

/* The quotas whose tenant us is in, in the set's order, into out (room
 * for set->n); with count, each tenant's use (us not counted). */
size_t sk_ctl_cap_quota_uses(sk_ctl_capacity *cap, const sk_ctl_quota_set *set,
        const sk_userspace *us, bool count, sk_capacity_quota_use *out);
/* A quota's spec.hard.running applies to us. */
bool sk_ctl_cap_quota_limits(const sk_ctl_quota_set *set, const sk_userspace *us);
/* s is in the tenant of one of uses' quotas. */
bool sk_ctl_cap_in_tenants(const sk_capacity_quota_use *uses, size_t n, const sk_ctl_cap_space *s);

#endif
