/*
 * spaces_int: spaces and activity, private to pkg/controller. What the
 * controller remembers of each space (by name) between reconciles, in
 * memory only, in two maps:
 *   by_name   spaces.c, under spaces.mu: one record per space: the keeper
 *             the last reconcile saw (the connect fast path), the last
 *             activity, the requests a connect left for the next reconcile
 *             (wake, replace), the drift the last reconcile left (the drift
 *             gauges of metrics.c, the page's list), the resourceVersion
 *             our writes left (worker.c: a cached copy older than it is
 *             not used);
 *   finished  worker.c, under spaces.done_mu, apart so that connects
 *             waiting on reconciles (woken by every one that finishes,
 *             sleeping on spaces.done) never hold up the connect fast path:
 *             each space's last reconcile (its number, whether it failed),
 *             the count of reconciles finished and of spaces failed.
 */
#ifndef SK_CONTROLLER_SPACES_INT_H
#define SK_CONTROLLER_SPACES_INT_H

#include <pthread.h>

#include "../api/userspace.h"
#include "../reconcile/reconcile.h"
#include "../util/util.h"
#include "controller.h"

/* The drift types counted per space ("Missing", ...: sk_ctl_drift_type). */
#define SK_CTL_DRIFT_TYPES 6

/* The last reconcile of one space (finished), and the one running when it
 * told that its start is healthy before its writes (answer first). */
typedef struct sk_ctl_done {
	uint64_t gen; /* its number in spaces.gen */
	bool failed;
	uint64_t started_gen; /* the start's number in spaces.gen, 0: none */
	sk_userspace *started; /* the object about to be written; NULL once finished */
} sk_ctl_done;
void sk_ctl_done_free(void *d); /* worker.c */

typedef struct sk_ctl_spaces {
	pthread_mutex_t mu; /* guards by_name */
	sk_strmap *by_name; /* name -> its record (spaces.c) */
	pthread_mutex_t done_mu; /* guards gen, n_done, finished, n_failed */
	pthread_cond_t
	        done; /* with done_mu: a reconcile finished or told its start, or the stop (monotonic) */
	uint64_t gen; /* reconciles finished and starts told: their sequence */
	uint64_t n_done; /* reconciles finished */
	sk_strmap *finished; /* name -> sk_ctl_done* */
	size_t n_failed; /* spaces whose last reconcile failed */
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
	/* of mem.sandbox_id, as the provider's answers said: "" unknown. The
	 * token is a secret: wipe the copy after use (explicit_bzero). */
	char envd_token[512];
	char envd_version[64];
	int64_t deadline_ms; /* the deadline spacekeeper set, 0 unknown */
	bool detail_seen; /* a create, connect or get answer of it was seen */
} sk_ctl_keeper;
/* A connect or heartbeat at now_ms (wall clock). */
void sk_ctl_space_touch(sk_controller *c, const char *name, int64_t now_ms);
/* Asks the next reconcile to wake the Idle keeper / replace the unreachable one. */
void sk_ctl_space_request(sk_controller *c, const char *name, bool wake, bool replace_now);
/* capacity.c: asks the next reconcile to pause the running keeper (eviction),
 * to free a slot under the SpaceQuota named quota (NULL: at its provider). */
void sk_ctl_space_request_evict(sk_controller *c, const char *name, const char *quota);
/* The last connect or heartbeat (wall ms), 0: none. */
int64_t sk_ctl_space_activity(sk_controller *c, const char *name);
/* Copies the activity, the requests (consumed) and what is known of the
 * keeper (env->known: copies, sk_ctl_space_known_dispose) into env. */
void sk_ctl_space_take(sk_controller *c, const char *name, sk_reconcile_env *env);
void sk_ctl_space_known_dispose(sk_reconcile_env *env);
/* What a reconcile saw (ok: it succeeded). */
void sk_ctl_space_note(sk_controller *c, const char *name, const sk_reconcile_report *r, bool ok);
void sk_ctl_space_forget(sk_controller *c, const char *name);
/* false: nothing remembered (out zeroed). */
bool sk_ctl_space_keeper(sk_controller *c, const char *name, sk_ctl_keeper *out);
/* The drift the last reconcile left, since_ms per type (NULL: none). */
void sk_ctl_space_set_drift(sk_controller *c, const char *name, const int64_t *since);
/* fn for each space with drift, under spaces.mu (fn locks nothing). */
typedef void (*sk_ctl_drift_fn)(const char *name, const int64_t *since, void *payload);
void sk_ctl_spaces_drift(sk_controller *c, sk_ctl_drift_fn fn, void *payload);
/* The resourceVersion our last writes to name left (0: none known). */
int64_t sk_ctl_space_written_rv(sk_controller *c, const char *name);
void sk_ctl_space_set_written_rv(sk_controller *c, const char *name, int64_t rv);

/* metrics.c: spacekeeper_drift_spaces{type} and
 * spacekeeper_drift_oldest_seconds{type}, from the drift each space's last
 * reconcile left (us: the object as it stands after it; NULL: gone). */
void sk_ctl_note_drift(sk_controller *c, const char *name, const sk_userspace *us);
/* The drift type of index t < SK_CTL_DRIFT_TYPES ("Missing", ...). */
const char *sk_ctl_drift_type(size_t t);

/* worker.c: waits until a reconcile of name finishes after gen0 or the
 * deadline (monotonic ms) passes; false on timeout or stop. With started
 * (not NULL), also until a reconcile still running tells after gen0 that
 * the keeper it started is healthy: *started is then a copy of the object
 * it is about to write (the caller frees it; NULL when it finished) and
 * *at that start's number (a later wait from it waits for the finish). */
bool sk_ctl_wait_reconciled(sk_controller *c, const char *name, uint64_t gen0, int64_t deadline,
        sk_userspace **started, uint64_t *at);
/* worker.c: the object a reconcile still running told it is about to
 * write after the start it found healthy (a copy: the caller frees it),
 * NULL when none. */
sk_userspace *sk_ctl_started(sk_controller *c, const char *name);
/* worker.c: the current number in spaces.gen (what a wait starts from). */
uint64_t sk_ctl_gen(sk_controller *c);
/* worker.c: reconciles finished so far. */
uint64_t sk_ctl_reconciles(sk_controller *c);
/* worker.c: how many spaces' last reconcile failed (--once). */
size_t sk_ctl_spaces_failed(sk_controller *c);

#endif
