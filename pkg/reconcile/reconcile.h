/*
 * reconcile: one UserSpace, observe -> plan -> execute -> status (docs/architecture.md, Invariants).
 *
 *   sk_observe   gathers the observed state: the user's managed sandboxes from
 *                the controller's last list, a direct GET of the bound sandbox
 *                when neither the list nor the controller's own last look
 *                (its create, resume, set_timeout or pause answer, a GET, a
 *                healthy probe) tells its state (sk_plan_look), or when the
 *                keeper's data plane did not answer (is it still running?),
 *                a direct lookup by user_id when the object is being deleted or
 *                an unfinished create must be resolved, and the data-plane
 *                probe of the running keeper.
 *   sk_plan      PURE (no I/O, no clock): desired + observed + now -> ordered
 *                actions, the next status, and the requeue delay.
 *   sk_execute   runs the actions through the provider and the store, writes
 *                status with compare-and-swap, records events, classifies failures.
 *   sk_reconcile_object  observe -> plan -> execute of a copy the caller
 *                holds (the informer's), the migration round (sk_migrate_round)
 *                first when one is active: the call a worker makes
 *                (controller/worker.c).
 *   sk_reconcile get by name, then sk_reconcile_object (the integration tests).
 *
 * Crash safety of create (rule 1, "a list is not proof of absence"):
 * before every create the executor writes status {phase: Creating,
 * sandboxID: none, lastReconcileTime: T} (compare-and-swap; when that write
 * fails nothing is created). A round that finds phase Creating with nothing
 * bound knows a create may have happened without its binding (crash, store
 * down): it adopts a sandbox of the user when any is seen, and creates again
 * only when a direct lookup by user_id made at least create_grace_ms after T
 * (longer than any create request can take) finds none. The controller's
 * cached list (possibly older than T, possibly empty) never justifies a
 * second create. A create that the provider rejected outright (429 or another
 * 4xx) clears the mark at once so the next round retries without the wait.
 */
#ifndef SK_RECONCILE_H
#define SK_RECONCILE_H

#include "../api/config.h"
#include "../api/kvlist.h"
#include "../api/network.h"
#include "../api/sandbox_values.h"
#include "../api/schema.h"
#include "../api/status.h"
#include "../api/userspace.h"
#include "../objstore/objstore.h"
#include "../sandbox/sandbox.h"
#include "../store/store.h"
#include "../util/util.h"
#include "observe.h"
#include "options.h"

/* The package's other headers, one per concern: options.h, observe.h, plan.h,
 * connect.h, capacity.h, orphans.h, retention.h; its private ones (*_int.h)
 * hold what only this package and its tests call. */

/* ---- one reconcile: the environment, the report, the entry points ---- */

typedef struct sk_reconcile_env {
	sk_store *store;
	sk_provider *provider;
	/* Optional: the provider for spec.provider (NULL result or fn: provider). */
	sk_provider *(*provider_for)(const char *name, void *arg);
	void *provider_arg;
	sk_plan_options opts;
	sk_log_fn log; /* optional */
	void *log_payload;
	/* Optional clock for tests (NULL: sk_now_ms). */
	int64_t (*now)(void);
	/* The controller's memory of the user, copied into the observation
	 * (sk_observed.activity_ms, wake, replace_now). */
	int64_t activity_ms;
	bool wake;
	bool replace_now;
	/* Optional: filled with what the run saw of the keeper (for the connect
	 * fast path) and the sandbox it replaced, if any. */
	struct sk_reconcile_report *report;
	/* Optional: told of each migration milestone ("started", "completed",
	 * "aborted", "bytes" with the bytes copied) and the target provider. */
	void (*migration_observer)(void *arg, const char *provider, const char *what, int64_t n);
	void *migration_arg;
	/* Copy bounds (0: the engine's defaults) and the least time between two
	 * progress writes of status.migration (0: 1s). */
	size_t copy_chunk_bytes;
	int copy_attempts;
	int64_t progress_every_ms;
	/* What the controller knows of the keeper (sk_observe_known). */
	sk_keeper_known known;
	/* Optional fencing: asked before every mutating provider call and store
	 * write; false stops the run with SK_EUNAVAILABLE (transient) before
	 * the call and without writing the failure (the caller lost the right
	 * to act on this user, e.g. its shard lease). NULL: always may act. */
	bool (*may_act)(void *arg, const char *user_id);
	void *may_act_arg;
	/* Optional capacity gate (providers[].capacity): asked when a round's
	 * plan starts a sandbox (a create, or the resume of a paused keeper),
	 * before anything runs; connect: the start is a waiting connect's
	 * (observed.wake), not the archive's or a create's; false (why in why):
	 * the start waits, the round is planned again with
	 * observed.capacity_wait. NULL: always. */
	bool (*may_start)(void *arg, const sk_userspace *us, bool connect, char *why, size_t len);
	void *may_start_arg;
	/* The controller asks this run to evict the running keeper (observed.evict),
	 * for the SpaceQuota evict_quota names (NULL: its provider's capacity). */
	bool evict;
	const char *evict_quota;
	/* The archive (opts.archive): the S3 client's settings, keys included
	 * (secrets, borrowed), and the key prefix (PREFIX of PREFIX/USERID/
	 * GENERATION). A client is made per ARCHIVE or RESTORE action. */
	const sk_s3_config *archive_s3;
	const char *archive_prefix;
	int archive_keep; /* archive.keepGenerations: kept when pruning after a restore */
	/* Optional (needs report): the keeper this run started (a create, or
	 * the resume of the bound keeper) answered its probe healthy and every
	 * provider call of the run is done; the status write and the run's
	 * events follow, written the same whatever the callee does. next: the
	 * object as it is about to be written (its resourceVersion the one the
	 * write compares against), report: what the run saw of the keeper, as
	 * after the write; both borrowed for the call. A connect waiting for the
	 * start may be answered from them (answer first). Not told
	 * from a migration's steps, a replacement, a restore, or a run that
	 * failed or lost its fence (may_act is asked first). */
	void (*started)(
	        void *arg, const sk_userspace *next, const struct sk_reconcile_report *report);
	void *started_arg;
} sk_reconcile_env;

typedef struct sk_reconcile_report {
	char *keeper_id; /* the bound keeper after the run, NULL none */
	bool running;
	bool healthy;
	int64_t end_ms;
	int64_t seen_ms;
	char *replaced_id; /* a sandbox this run replaced (Replace remediation), NULL none */
	int64_t replaced_ms;
	/* The keeper's envd details as known after the run (a create, connect or
	 * get answer, else env->known) and the deadline spacekeeper set on it
	 * (0: none known, or it sleeps). The token is a secret. */
	char *envd_access_token;
	char *envd_version;
	bool detail_seen;
	int64_t deadline_ms;
	int64_t deadline_set_ms;
	/* Internal: what this run's create/connect/set_timeout set (id, answer). */
	char *set_id;
	int64_t set_deadline_ms;
	int64_t set_at_ms;
	char *set_token;
	char *set_version;
	bool set_seen; /* set_token/set_version are from that answer */
	/* A start of this run (create or resume) was refused by the provider
	 * with 429 and no Retry-After (its concurrency limit), or waited at the
	 * gate. */
	bool start_refused;
	bool start_waited;
	/* The run's look at the keeper (sk_keeper_known.look_ms): 0 when the
	 * run failed or saw nothing new; its deadline then. */
	int64_t look_ms;
	sk_sandbox_state look_state;
	int64_t look_end_ms;
	/* Internal: this run paused paused_id at paused_at_ms. */
	char *paused_id;
	int64_t paused_at_ms;
	/* How the run's first round learnt the bound keeper's state. */
	sk_look look;
} sk_reconcile_report;
void sk_reconcile_report_dispose(sk_reconcile_report *r);

/* get -> observe -> plan -> execute. A missing object is success (nothing to
 * do). *requeue_after_ms (may be NULL) gets the plan's delay (0 when none). */
int sk_reconcile(const sk_reconcile_env *env, const char *name, const sk_list_view *list,
        int64_t *requeue_after_ms, sk_error *err);
/* observe -> plan -> execute of a given copy (e.g. the informer's cache):
 * every status write is compare-and-swap on us's resourceVersion, so a stale
 * copy ends in SK_ECONFLICT, never in an overwrite. *updated (may be NULL)
 * gets the object after the run's writes, NULL when it was removed. In
 * order (execute.c): an active migration's steps, the round, its follow-up. */
int sk_reconcile_object(const sk_reconcile_env *env, const sk_userspace *us,
        const sk_list_view *list, int64_t *requeue_after_ms, sk_userspace **updated, sk_error *err);

#endif
