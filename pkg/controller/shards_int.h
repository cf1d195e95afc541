/*
 * shards_int: shards and forwarding, private to pkg/controller. Replicas
 * share the spaces by shard leases (shards.c: the lease thread, fencing);
 * a connect for a user whose shard another replica holds is forwarded there
 * (forward.c). Lock shards->mu guards sk_ctl_shards' per-shard state and
 * live; n and holder are set before the lease thread starts, thread and
 * running belong to the thread that starts and stops it.
 */
#ifndef SK_CONTROLLER_SHARDS_INT_H
#define SK_CONTROLLER_SHARDS_INT_H

#include <pthread.h>

#include "../store/store.h"
#include "../util/util.h"
#include "ground_int.h"
#include "http_int.h"

#define SK_CTL_METRIC_SHARDS_HELD "spacekeeper_shards_held"
#define SK_CTL_METRIC_SHARDS_TOTAL "spacekeeper_shards"
#define SK_CTL_METRIC_MASTER_STATUS "spacekeeper_leader_election_master_status"
#define SK_CTL_METRIC_RENEW_FAILURES "spacekeeper_lease_renew_failures_total"
#define SK_CTL_METRIC_CLOCK_SKEW "spacekeeper_clock_skew_seconds"
#define SK_CTL_RELEASE_MS 3000 /* the stop's lease releases, at most (monotonic) */

typedef struct sk_ctl_shard {
	bool held;
	int64_t renewed; /* monotonic ms at the start of the last successful renew */
	int64_t gen; /* this holding's generation (new at each take), fencing */
	char *holder; /* the holder as last listed ("" none) */
} sk_ctl_shard;

struct sk_ctl_shards {
	pthread_mutex_t mu; /* guards s[] and live */
	int n;
	sk_ctl_shard *s;
	char *holder; /* this replica's "ID@ADDRESS" */
	size_t live; /* live members at the last tick */
	pthread_t thread;
	bool running;
	bool all; /* --once: no leases, every shard is ours (under mu) */
	int64_t gens; /* the last generation given (under mu) */
	bool halted; /* the clock check failed: no shard valid (under mu) */
	int64_t skew_ms; /* the last reading's skew (under mu) */
	bool skew_warned; /* the lease thread's */
	bool store_down; /* the last round's list failed: unreachable (under mu) */
	sk_lease_observer seen; /* the lease thread's: when each lease last changed */
};

/* A reconcile's fence: the generation of its user's shard when it began. */
typedef struct sk_ctl_fence {
	sk_controller *c;
	int64_t gen; /* 0: the shard was not validly held */
} sk_ctl_fence;

/* The shard of a userID among n (FNV-1a of its bytes, mod n). */
int sk_ctl_shard_of(const char *user_id, int n);
void sk_ctl_shards_init(sk_controller *c);
void sk_ctl_shards_dispose(sk_controller *c);
/* Sets the holder string ("ID@ADDRESS") once HTTP has its port. */
void sk_ctl_shards_prepare(sk_controller *c);
/* Reads who holds each shard without taking or renewing any (before the
 * first round: a starting replica forwards connects to the holders). */
void sk_ctl_shards_look(sk_controller *c);
/* One round: list, renew, balance. Returns how many shards it gained. */
int sk_ctl_shards_tick(sk_controller *c);
int sk_ctl_shards_start(sk_controller *c, sk_error *err);
/* Joins the lease thread and releases every lease held (after the workers). */
void sk_ctl_shards_stop(sk_controller *c);
/* --once: every shard counts as held, no lease is taken. */
void sk_ctl_shards_all(sk_controller *c);
/* Fencing: the shard is held and was renewed within the renew deadline. */
bool sk_ctl_shard_valid(sk_controller *c, int shard);
bool sk_ctl_may_act(sk_controller *c, const char *user_id);
bool sk_ctl_may_act_cb(void *arg, const char *user_id); /* arg: the controller */
/* Takes the fence of a reconcile of user_id: false (gen 0) when the shard
 * is not validly held now. sk_ctl_fence_holds (arg: the fence, a may_act
 * callback): the shard is still validly held under that same generation. */
bool sk_ctl_fence_take(sk_controller *c, const char *user_id, sk_ctl_fence *out);
bool sk_ctl_fence_holds(void *arg, const char *user_id);
/* The clock check halted this replica: the skew of the reading in *skew_ms. */
bool sk_ctl_shards_halted(sk_controller *c, int64_t *skew_ms);
/* HOST:PORT of the replica holding the user's shard (caller frees); NULL
 * when it is free or ours. */
char *sk_ctl_shard_holder_address(sk_controller *c, const char *user_id);
size_t sk_ctl_shards_held(sk_controller *c);
/* The shards this replica may act on now (sk_ctl_shard_valid: renewed
 * within the renew deadline), and the shard metrics set from it at every
 * scrape (the lease thread may wait on a database that does not answer). */
size_t sk_ctl_shards_valid(sk_controller *c);
void sk_ctl_shards_metrics(sk_controller *c);
/* The shards held, ascending, into out (room for cfg->shards); their number. */
size_t sk_ctl_shards_held_list(sk_controller *c, int *out);
/* Every shard is this replica's (one replica, or --once). */
bool sk_ctl_shards_own_all(sk_controller *c);
/* /readyz: how many shards were free at the last round while this replica
 * holds none (0 when it holds some, or under --once). */
size_t sk_ctl_shards_free_unheld(sk_controller *c);
const char *sk_ctl_identity(sk_controller *c);

/* forward.c: the public key pin of a PEM certificate (libcurl's
 * "sha256//BASE64"; NULL when it holds none). */
char *sk_ctl_forward_pin(const char *pem, size_t len);
/* forward.c: POSTs path to the replica at addr (GETs the GET route,
 * /v1/users/ID/sandbox) and copies its answer
 * (HTTPS pinned to our certificate's key when connect TLS is on). */
void sk_ctl_forward(sk_controller *c, const char *addr, const char *path, int64_t timeout_ms,
        const sk_ctl_origin *from, sk_http_reply *r);
/* When another replica holds the user's shard: forwards there (or answers
 * 503 with Retry-After when none does, or when from was itself forwarded)
 * and returns true; false when this replica may act on the user. */
bool sk_ctl_forward_user(sk_controller *c, const char *user_id, const char *path,
        int64_t timeout_ms, const sk_ctl_origin *from, sk_http_reply *r);

#endif
