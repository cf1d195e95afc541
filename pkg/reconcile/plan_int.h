/*
 * reconcile/plan_int: the planner's working context (sk_pctx) and the
 * helpers that build actions, conditions and drift for the next status
 * (private to reconcile).
 */
#ifndef SK_RECONCILE_PLAN_INT_H
#define SK_RECONCILE_PLAN_INT_H

#include "../api/sandbox_values.h"
#include "../api/status.h"
#include "../api/userspace.h"
#include "../sandbox/sandbox.h"
#include "../util/util.h"
#include "observe.h"
#include "options.h"
#include "plan.h"

enum { SK_C_READY, SK_C_SYNCED, SK_C_DATAPLANE, SK_C_DRIFTED, SK_C_COUNT };

typedef struct sk_cond_decision {
	const char *status; /* NULL: not decided (Unknown) */
	const char *reason;
	char *message; /* owned */
} sk_cond_decision;

typedef struct sk_pctx {
	const sk_userspace *us;
	const sk_userspace_status *prev;
	const sk_observed *ob;
	const sk_plan_options *o;
	int64_t now;
	sk_plan_result *r;
	bool hold; /* spacekeeper.dev/paused: report only */
	int64_t requeue; /* 0: resync */
	sk_cond_decision cond[SK_C_COUNT];
	/* The Busy condition (lifecycle.busy): status NULL keeps the previous
	 * one as it is (or none). */
	sk_cond_decision busy;
	/* WorkspaceIntact, the same way (plan_workspace.c) */
	sk_cond_decision workspace;
	/* The Archived condition, the same way (plan_archive.c) */
	sk_cond_decision archived;
	/* The NetworkPolicy condition (plan_network.c): NULL status keeps the
	 * previous one. */
	sk_cond_decision network;
} sk_pctx;

sk_action *sk_plan_push(sk_pctx *c, sk_action_type type, const char *sandbox_id);
void sk_plan_event(sk_pctx *c, const char *type, const char *reason, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
void sk_plan_cond(sk_pctx *c, int which, const char *status, const char *reason, const char *fmt,
        ...) __attribute__((format(printf, 5, 6)));
/* Adds drift (since kept from the previous status for the same type+sandbox);
 * returns its since. An event is planned when the drift is new. */
int64_t sk_plan_drift(sk_pctx *c, const char *type, const char *sandbox_id, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
/* The previous status's drift of that type and sandbox, or NULL. */
const sk_drift *sk_plan_prev_drift(const sk_pctx *c, const char *type, const char *sandbox_id);
const sk_condition *sk_plan_prev_cond(const sk_pctx *c, const char *type);
void sk_plan_requeue(sk_pctx *c, int64_t ms);
void sk_plan_wait(sk_pctx *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A condition outside the fixed set (Busy, NetworkPolicy): as decided
 * this round (d->status set), else the previous one kept; d's message is
 * taken. */
void sk_plan_finish_kept(sk_pctx *c, const char *type, sk_cond_decision *d);
/* Builds next.conditions from the decisions (transition times kept when the
 * status did not change) and sets the requeue delay. */
void sk_plan_finish(sk_pctx *c);
void sk_plan_set_binding(sk_pctx *c, const char *id);

/* A renewal that would move the deadline by less than this is not made. */
#define SK_RENEW_SLACK_MS 1000
/* plan_deadline.c: a running keeper's deadline beyond activity. */
/* Busy (processes run, within maxBusy): true with the renewal's *timeout. */
bool sk_plan_busy(sk_pctx *c, const sk_sandbox *k, int64_t *timeout);
/* A deadline someone else set: one event, true with the *timeout putting ours back. */
bool sk_plan_overridden(sk_pctx *c, const sk_sandbox *k, int64_t *timeout);
/* The previous status's Busy condition is True. */
bool sk_plan_was_busy(const sk_pctx *c);
/* Decides the Busy condition of the next status. */
void sk_plan_busy_cond(sk_pctx *c, const char *status, const char *reason, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
/* plan_capacity.c: the running keeper k paused to free a slot (observed.evict),
 * unless busy or just connected: true when planned. */
bool sk_plan_evict(sk_pctx *c, const sk_sandbox *k);
/* plan_usage.c: status.usage of the next status. */
void sk_plan_usage(sk_pctx *c);
/* plan_capacity.c: a create waits for a slot (observed.capacity_wait). */
void sk_plan_capacity_wait(sk_pctx *c);
/* plan_workspace.c: the marker round of the running, healthy keeper k
 * (write it, or judge what observe read back), the loss of a bound sandbox
 * that is gone, and, every round, the WorkspaceLost drift while the
 * workspace is known lost (until acknowledged). */
void sk_plan_workspace(sk_pctx *c, const sk_sandbox *k);
void sk_plan_workspace_gone(sk_pctx *c, const char *gone_id);
/* k gets the archive's files this round: the marker is written after them. */
void sk_plan_workspace_restored(sk_pctx *c, const sk_sandbox *k);
/* gone_id vanished and its workspace comes back from an archive older than
 * the last activity: the changes since are lost (reported like a loss). */
void sk_plan_workspace_stale(sk_pctx *c, const char *gone_id, const char *detail);
void sk_plan_workspace_finish(sk_pctx *c);
/* plan_archive.c: the archive in the plan (see there). */
bool sk_plan_archive_pending(const sk_pctx *c);
bool sk_plan_archived_sandbox(const sk_pctx *c, const char *id);
void sk_plan_archive_cleanup(sk_pctx *c);
/* The Idle keeper k: archived when due (or an archive under way is redone). */
void sk_plan_archive_idle(sk_pctx *c, const sk_sandbox *k);
/* The running keeper k woken by an archive that did not finish: true when
 * the archive is redone (false: the user came back, the intent dropped). */
bool sk_plan_archive_running(sk_pctx *c, const sk_sandbox *k);
/* No sandbox, the files in the archive, no connect waiting: phase Archived. */
void sk_plan_archived(sk_pctx *c);
/* Awake again with the files in the sandbox: a present Archived condition
 * turns False (Awake). */
void sk_plan_archive_awake(sk_pctx *c);
/* The bound sandbox gone_id is gone and an archive exists: the files are
 * restored from it at the next connect (true), not reported lost. */
bool sk_plan_archive_gone(sk_pctx *c, const char *gone_id);
/* The space is deleted (deletionPolicy Delete): PURGE_ARCHIVE when it has archives. */
void sk_plan_archive_purge(sk_pctx *c);
/* plan_snapshot.c: an archive kept as a provider snapshot (see there). */
/* Whether an archive by method m can be made: object storage configured
 * (opts.archive) or the provider keeps snapshots (opts.snapshots). */
bool sk_archive_method_ready(sk_archive_method m, const sk_plan_options *opts);
/* The snapshot a pending archive's next sandbox starts from, or NULL. */
const char *sk_plan_archive_snapshot(const sk_userspace_status *st);
/* The keeper k started from the pending snapshot answers its probe:
 * Restored (nothing to copy); the snapshot is deleted in a later round. */
void sk_plan_snapshot_restored(sk_pctx *c, const sk_sandbox *k);
/* A restored snapshot archive whose snapshot is still there: DELETE_SNAPSHOT. */
void sk_plan_snapshot_cleanup(sk_pctx *c);
/* The space is deleted: its pending snapshot goes (DELETE_SNAPSHOT). */
void sk_plan_snapshot_purge(sk_pctx *c);
/* spec.snapshots on the keeper k: a snapshot when the schedule is due (a
 * sleeping keeper changed since the last one is woken for it and paused
 * again), the oldest beyond keep deleted. */
void sk_plan_snapshots(sk_pctx *c, const sk_sandbox *k);
/* The observed sandbox with that ID, not gone; NULL when none. */
const sk_sandbox *sk_plan_find(const sk_observed *ob, const char *id);
/* plan_keeper.c: the keeper of the round into *out (SK_KEEPER_FOUND), or what
 * to do without one: create, or wait (a wait already planned). */
enum { SK_KEEPER_FOUND, SK_KEEPER_CREATE, SK_KEEPER_WAIT, SK_KEEPER_WAIT_CREATING };
int sk_plan_pick_keeper(sk_pctx *c, const sk_sandbox **out);
/* plan_delete.c: the plan of a UserSpace with a deletionTimestamp. */
void sk_plan_delete(sk_pctx *c);
/* RESTORE into the running, healthy keeper k (status.archive Restored once done). */
void sk_plan_restore(sk_pctx *c, const sk_sandbox *k);
/* The pending restore failed before: Ready and Synced False (RestoreFailed). */
void sk_plan_restore_failed(sk_pctx *c);
/* The same while inside the failed restore's back-off: true, not retried
 * before its end (requeued then). */
bool sk_plan_restore_held(sk_pctx *c);

/* plan_network.c: spec.network against the keeper's policy. The trigger
 * of a migration (updateStrategy Migrate, a provider without live update),
 * else NULL; sk_plan_network applies it live (SET_NETWORK) or writes the
 * difference into b (SpecMismatch, report only) and decides the
 * NetworkPolicy condition (c->network). */
const char *sk_plan_network_trigger(sk_pctx *c, const sk_sandbox *k);
void sk_plan_network(sk_pctx *c, const sk_sandbox *k, sk_buf *b);

/* plan_usage.c: the usage count (status.usage) is written at most this
 * often when nothing else changes. */
#define SK_USAGE_FOLD_MS (10 * 60 * 1000)

#endif
