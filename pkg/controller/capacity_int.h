/*
 * capacity_int: each provider's capacity (providers[].capacity), private to
 * pkg/controller (capacity.c, capacity_quota.c; lock capacity->mu, a leaf).
 * The controller counts the running sandboxes per provider from what its
 * reconciles saw; a start (create or wake) beyond maxRunning evicts the
 * awake space whose last activity is oldest (sk_capacity_pick_victim), else
 * waits in the provider's FIFO queue; connects beyond maxQueued waiting get
 * 429. The provider's own 429 on a start lowers the cap to what runs then
 * (for capacity.learnedFor). Starts also pass a token bucket at
 * createsPerSecond.
 */
#ifndef SK_CONTROLLER_CAPACITY_INT_H
#define SK_CONTROLLER_CAPACITY_INT_H

#include <pthread.h>

#include "../api/kvlist.h"
#include "../api/quota.h"
#include "../api/userspace.h"
#include "../reconcile/reconcile.h"
#include "../util/util.h"
#include "controller.h"
#include "http_int.h"
#include "quota_int.h"

typedef struct sk_ctl_capacity sk_ctl_capacity;

#define SK_CTL_METRIC_SANDBOXES_RUNNING "spacekeeper_sandboxes_running"
#define SK_CTL_METRIC_CAPACITY_MAX "spacekeeper_capacity_max"
#define SK_CTL_METRIC_QUEUE_LENGTH "spacekeeper_connect_queue_length"
#define SK_CTL_METRIC_EVICTIONS "spacekeeper_evictions_total"

/* At new (after the metrics), at free. */
sk_ctl_capacity *sk_ctl_capacity_new(sk_controller *c);
void sk_ctl_capacity_free(sk_ctl_capacity *cap);
/* The reconcile's gate (sk_reconcile_env.may_start; arg: the controller). */
bool sk_ctl_capacity_may_start(
        void *controller, const sk_userspace *us, bool connect, char *why, size_t len);
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
/* capacity.c, with cap->mu released: picks the space to evict at prov (a
 * capacity eviction, prefer's tenant first) or in only's tenant (a
 * quota's), and asks it to pause unless dry; false when none may be, with
 * *next_ms (may be NULL) when to ask again. */
bool sk_ctl_cap_evict_one(sk_controller *c, int prov, const sk_spacequota *only,
        const sk_spacequota *prefer, bool dry, char *victim, size_t len, int64_t *next_ms);

/* ---- capacity_quota.c: SpaceQuotas' spec.hard.running at the gate ---- */

typedef enum {
	SK_CTL_QUOTA_OK,
	SK_CTL_QUOTA_EVICT,
	SK_CTL_QUOTA_WAIT,
	SK_CTL_QUOTA_REFUSE
} sk_ctl_quota_verdict;

/* Under cap->mu: starting us against the SpaceQuotas whose tenant it is in. */
sk_ctl_quota_verdict sk_ctl_cap_quota_decide(sk_ctl_capacity *cap, const sk_ctl_quota_set *set,
        const sk_userspace *us, const sk_spacequota **which, int *used);
/* The first quota whose tenant us is in; NULL none. */
const sk_spacequota *sk_ctl_cap_quota_tenant_of(
        const sk_ctl_quota_set *set, const sk_userspace *us);
/* Entered with cap->mu held, returns with it released (false): the start
 * the quota holds back (v not OK) waits in p's queue, refused; why says so
 * (connect: a waiting connect's, whose wake is asked again). */
bool sk_ctl_cap_quota_hold(sk_controller *c, sk_ctl_cap_provider *p, const sk_userspace *us,
        bool connect, sk_ctl_quota_verdict v, const sk_spacequota *q, int used, char *why,
        size_t len);
/* A connect's start beyond a quota with nothing in the tenant to evict:
 * false with r set to 429 QuotaExceeded. */
bool sk_ctl_cap_quota_admits_wake(sk_controller *c, const sk_userspace *us, sk_http_reply *r);

#endif
