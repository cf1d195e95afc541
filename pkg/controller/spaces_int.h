/*
 * spaces_int: spaces and activity, private to pkg/controller. What the
 * controller remembers of each space (by name) between reconciles, in
 * memory only. Under spaces.mu:
 *   mem         spaces.c: the keeper the last reconcile saw (the connect
 *               fast path), the last activity, the requests a connect left
 *               for the next reconcile (wake, replace);
 *   drift       metrics.c: the drift each space's last reconcile left (the
 *               drift gauges; page.c lists it);
 *   written_rv  worker.c: the resourceVersion our writes left (a cached
 *               copy older than it is not used).
 * Under spaces.done_mu, apart so that connects waiting on reconciles (woken
 * by every one that finishes) never hold up the connect fast path's mu:
 *   gen, done_gen, failed
 *               worker.c: reconciles finished, and per space the last
 *               one's number and whether it failed (--once); a waiter
 *               sleeps on spaces.done.
 */
#ifndef SK_CONTROLLER_SPACES_INT_H
#define SK_CONTROLLER_SPACES_INT_H

#include <pthread.h>

#include "../api/api.h"
#include "../reconcile/reconcile.h"
#include "../util/util.h"
#include "controller.h"

/* The drift types counted per space ("Missing", ...: sk_ctl_drift_type). */
#define SK_CTL_DRIFT_TYPES 6

typedef struct sk_ctl_spaces {
	pthread_mutex_t mu; /* guards mem, drift, written_rv */
	sk_strmap *mem; /* name -> what is remembered of the space (spaces.c) */
	sk_strmap *drift; /* name -> int64_t[SK_CTL_DRIFT_TYPES]: since_ms of each drift type
	                     its last reconcile left (0: none); only spaces with drift */
	sk_strmap *written_rv; /* name -> int64_t* resourceVersion after our last writes */
	pthread_mutex_t done_mu; /* guards gen, done_gen, failed */
	pthread_cond_t done; /* with done_mu: a reconcile finished, or the stop (monotonic) */
	uint64_t gen; /* reconciles finished */
	sk_strmap *done_gen; /* name -> uint64_t* gen of its last reconcile */
	sk_strmap *failed; /* names whose last reconcile failed */
} sk_ctl_spaces;

/* spaces.c: every map of the part, and its locks. */
void sk_ctl_spaces_init(sk_controller *c);
void sk_ctl_spaces_dispose(sk_controller *c);
/* spaces.c: wakes every waiter on a reconcile (the stop). */
void sk_ctl_spaces_wake(sk_controller *c);

/* spaces.c: the keeper as remembered, for the connect decision. */
typedef struct sk_ctl_keeper {
	sk_keeper_memory mem; /* mem.sandbox_id points into id (NULL when none) */
	char id[128];
	char replaced_id[128]; /* the sandbox the last Replace killed, "" none */
	int64_t replaced_ms;
} sk_ctl_keeper;
/* A connect or heartbeat at now_ms (wall clock). */
void sk_ctl_space_touch(sk_controller *c, const char *name, int64_t now_ms);
/* Asks the next reconcile to wake the Idle keeper / replace the unreachable one. */
void sk_ctl_space_request(sk_controller *c, const char *name, bool wake, bool replace_now);
/* Copies the activity and the requests into env (the requests are consumed). */
void sk_ctl_space_take(sk_controller *c, const char *name, sk_reconcile_env *env);
/* What a reconcile saw (ok: it succeeded). */
void sk_ctl_space_note(sk_controller *c, const char *name, const sk_reconcile_report *r, bool ok);
void sk_ctl_space_forget(sk_controller *c, const char *name);
/* false: nothing remembered (out zeroed). */
bool sk_ctl_space_keeper(sk_controller *c, const char *name, sk_ctl_keeper *out);

/* metrics.c: spacekeeper_drift_spaces{type} and
 * spacekeeper_drift_oldest_seconds{type}, from the drift each space's last
 * reconcile left (us: the object as it stands after it; NULL: gone). */
void sk_ctl_note_drift(sk_controller *c, const char *name, const sk_userspace *us);
/* The drift type of index t < SK_CTL_DRIFT_TYPES ("Missing", ...). */
const char *sk_ctl_drift_type(size_t t);

/* worker.c: waits until a reconcile of name finishes after gen0 or the
 * deadline (monotonic ms) passes; false on timeout or stop. */
bool sk_ctl_wait_reconciled(sk_controller *c, const char *name, uint64_t gen0, int64_t deadline);
/* worker.c: reconciles finished so far. */
uint64_t sk_ctl_gen(sk_controller *c);
/* worker.c: how many spaces' last reconcile failed (--once). */
size_t sk_ctl_spaces_failed(sk_controller *c);

#endif
