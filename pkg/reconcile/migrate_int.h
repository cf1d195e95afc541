/*
 * reconcile/migrate_int: a migration, its pure plan (migrate_plan.c) and
 * its round (migrate.c) (private to reconcile).
 */
#ifndef SK_RECONCILE_MIGRATE_INT_H
#define SK_RECONCILE_MIGRATE_INT_H

#include "../api/migration.h"
#include "../api/sandbox_values.h"
#include "../api/userspace.h"
#include "../sandbox/sandbox.h"
#include "../util/util.h"
#include "observe.h"
#include "options.h"
#include "reconcile.h"

/* ---- migration: a move to another provider or template (pure; migrate_plan.c) ----
 *
 * Started by the regular plan (status.migration Pending) when the binding's
 * provider (status.provider) is not spec.provider, when spec.template differs
 * from the keeper's and spec.updateStrategy is Migrate, or when the
 * spacekeeper.dev/restartedAt annotation is newer than the last migration's
 * start. Then, one step per round, each recorded before it runs so a
 * restarted controller resumes it: create the target (the Creating mark
 * first; a target found by its marker is adopted) -> copy -> verify ->
 * switch the binding (one compare-and-swap write) -> retire the source
 * (paused, deleted after keepSourceFor unless sourcePolicy Retain). Any
 * failure before the switch aborts: the reason is written first, then the
 * target is killed, then phase Aborted; the binding never moves. */

typedef enum sk_migration_step {
	SK_MSTEP_NONE, /* nothing to do now */
	SK_MSTEP_CREATE_TARGET,
	SK_MSTEP_COPY,
	SK_MSTEP_VERIFY,
	SK_MSTEP_SWITCH,
	SK_MSTEP_PAUSE_SOURCE,
	SK_MSTEP_RETIRE_SOURCE, /* kill it (sourcePolicy Delete) or keep it, then Done */
	SK_MSTEP_ABORT, /* kill the target (when there is one), then Aborted */
} sk_migration_step;

/* What a migration round saw at the two providers. */
typedef struct sk_migration_observed {
	sk_lookup source; /* GET of source.sandboxID at source.provider */
	sk_sandbox source_sb;
	sk_lookup target; /* GET of target.sandboxID, or a list for the marker */
	sk_sandbox target_sb;
	int64_t target_lookup_ms; /* when the target lookup started */
	sk_error error; /* of a failed lookup */
	bool providers_known; /* both provider entries exist */
	int64_t activity_ms; /* the controller's memory of the user's last activity */
} sk_migration_observed;

void sk_migration_observed_init(sk_migration_observed *o);
void sk_migration_observed_dispose(sk_migration_observed *o);

typedef struct sk_migration_plan {
	sk_migration_step step;
	/* status.migration to write before the step runs (the mark) */
	sk_migration_status next;
	bool normal; /* run the regular round too (Pending and waiting, Retiring) */
	int64_t requeue_after_ms;
	char *abort_reason; /* ABORT: why */
} sk_migration_plan;

/* The trigger of a new migration for a space whose keeper has the given
 * template (and alias; may be NULL), or NULL when none. An Aborted attempt
 * at the same provider and template is not retried until a newer rollout. */
const char *sk_migration_trigger(
        const sk_userspace *us, const char *keeper_template, const char *keeper_alias);
/* The rollout said --now: rolloutNow equals restartedAt. */
bool sk_migration_now(const sk_userspace *us);
/* The restoreFrom annotation's snapshot ID, NULL when none (or empty). */
const char *sk_migration_restore_from(const sk_userspace *us);
/* A restore from a snapshot (trigger RestoreSnapshot): the target is created
 * from target.template (the snapshot's ID) at the bound provider, probed
 * healthy instead of copied and verified, then bound; the source retires. */
bool sk_migration_is_restore(const sk_migration_status *m);
/* sb was started from a snapshot (metadata restored_from): its template is
 * the snapshot's, not a drift from spec.template. */
bool sk_sandbox_restored(const sk_sandbox *sb);
/* The next step of us's active migration. */
void sk_plan_migration(const sk_userspace *us, const sk_migration_observed *ob, int64_t now_ms,
        const sk_plan_options *opts, sk_migration_plan *out);
void sk_migration_plan_dispose(sk_migration_plan *p);
const char *sk_migration_step_name(sk_migration_step s); /* "create-target", ... */

/* migrate.c: the migration round of us (status.migration active): observe
 * the source and target at their providers, plan the step, write its mark,
 * run it. *normal: the regular round should run after it (on *updated, the
 * object as last written, owned by the caller). Returns 0 or the failure's
 * code. */
int sk_migrate_round(const sk_reconcile_env *env, const sk_userspace *us, bool *normal,
        int64_t *requeue_after_ms, sk_userspace **updated, sk_error *err);

#endif
