/*
 * reconcile/plan_snapshot: an archive kept as a provider snapshot (pure;
 * spec.lifecycle.archive.method Snapshot).
 *
 * The archive runs as plan_archive.c describes (the intent first, the wake
 * through the capacity gate, the record, only then the kill), but its
 * ARCHIVE action takes a persistent snapshot of the sandbox through the
 * provider (E2B's POST /sandboxes/{id}/snapshots) instead of copying its
 * files through the data plane: no object storage is needed, no byte goes
 * through envd, and the snapshot keeps what the provider keeps (E2B: the
 * filesystem and, taken from a running sandbox, its memory and processes).
 * E2B snapshots running sandboxes only (a paused one is not found), so the
 * sandbox is woken for it as for a copy, for the length of one call.
 *
 * status.archive records method Snapshot and the snapshot's ID. A connect
 * to the Archived space creates the next sandbox from it (templateID = the
 * snapshot's ID, metadata restored_from: its template is the snapshot's,
 * no drift); once that sandbox answers its probe the archive is Restored
 * (nothing to copy), that status is written, and a later round deletes the
 * snapshot (DELETE_SNAPSHOT; status.archive.snapshotID cleared once the
 * provider answered). A failed deletion is retried every round; the space
 * is in use meanwhile. A space deleted with deletionPolicy Delete deletes
 * its pending snapshot before the finalizer goes.
 */
#include <stdlib.h>
#include <string.h>

#include "../api/sandbox_values.h"
#include "../api/status.h"
#include "../api/userspace.h"
#include "archive_int.h"
#include "options.h"
#include "outcome_int.h"
#include "plan.h"
#include "plan_int.h"
#include "reconcile_int.h"

bool
sk_archive_method_ready(sk_archive_method m, const sk_plan_options *opts)
{
	return m == SK_ARCHIVE_SNAPSHOT ? opts->snapshots : opts->archive;
}

void
sk_archive_record_snapshot(sk_userspace_status *st, const char *snapshot_id, int64_t generation,
        int64_t now_ms, int64_t observed_gen)
{
	char msg[512];

	sk_archive_record(st, NULL, NULL, generation, 0, 0, now_ms, observed_gen);
	st->archive.method = SK_ARCHIVE_SNAPSHOT;
	st->archive.snapshot_id = sk_strdup(snapshot_id);
	snprintf(msg, sizeof(msg),
	        "the space is kept in snapshot %s; a connect starts a sandbox from it",
	        snapshot_id);
	sk_status_set_condition(
	        st, SK_COND_READY, "True", SK_REASON_ARCHIVED, msg, now_ms, observed_gen);
}

const char *
sk_plan_archive_snapshot(const sk_userspace_status *st)
{
	const sk_archive_status *a = &st->archive;

	if (a->state != SK_ARCHIVE_ARCHIVED || a->method != SK_ARCHIVE_SNAPSHOT)
		return NULL;
	return a->snapshot_id;
}

void
sk_plan_snapshot_restored(sk_pctx *c, const sk_sandbox *k)
{
	sk_archive_status *a = &c->r->next.archive;

	a->state = SK_ARCHIVE_RESTORED;
	a->restore_ms = c->now;
	a->failures = 0;
	a->failed_ms = 0;
	sk_plan_event(c, "Normal", SK_REASON_RESTORED,
	        "sandbox %s started from snapshot %s answers its probe; the snapshot is deleted "
	        "next",
	        k->id, a->snapshot_id ? a->snapshot_id : "-");
	sk_plan_requeue(c, c->o->min_requeue_ms); /* the deletion, once this is written */
}

static void
push_delete(sk_pctx *c, const char *snapshot_id)
{
	sk_action *d = sk_plan_push(c, SK_ACTION_DELETE_SNAPSHOT, NULL);

	d->snapshot_id = sk_strdup(snapshot_id);
}

void
sk_plan_snapshot_cleanup(sk_pctx *c)
{
	const sk_archive_status *a = &c->prev->archive;

	if (c->hold || !c->o->snapshots || a->method != SK_ARCHIVE_SNAPSHOT ||
	        a->state != SK_ARCHIVE_RESTORED || a->snapshot_id == NULL)
		return;
	push_delete(c, a->snapshot_id);
}

void
sk_plan_snapshot_purge(sk_pctx *c)
{
	const sk_archive_status *a = &c->prev->archive;

	if (c->o->snapshots && a->method == SK_ARCHIVE_SNAPSHOT && a->snapshot_id != NULL)
		push_delete(c, a->snapshot_id);
}

/* ---- spec.snapshots: snapshots on a schedule ----
 * The schedule starts when the controller first sees it
 * (status.snapshots.lastScheduleTime written then): no snapshot is taken
 * for a time before it. When the next scheduled time after
 * lastScheduleTime has come, a running keeper is snapshotted; a sleeping
 * one only when it was used since the last snapshot (else it is unchanged:
 * the time counts as handled), then woken for it through the capacity gate
 * (its Woken event says "a snapshot"), and paused again. Times missed
 * meanwhile (the controller down) make one snapshot, not one each. A
 * round that already starts, stops or archives the keeper takes none: the
 * next round does. */

/* The plan already changes the keeper's state: no snapshot in this round. */
static bool
keeper_busy(const sk_pctx *c)
{
	for (size_t i = 0; i < c->r->n_actions; i++) {
		switch (c->r->actions[i].type) {
		case SK_ACTION_CREATE:
		case SK_ACTION_CONNECT:
		case SK_ACTION_PAUSE:
		case SK_ACTION_KILL:
		case SK_ACTION_ARCHIVE:
		case SK_ACTION_RESTORE: return true;
		default: break;
		}
	}
	return false;
}

/* The oldest scheduled snapshots beyond keep, deleted; taking: one more
 * is taken before (its deletions run only once it exists). */
static void
prune(sk_pctx *c, bool taking)
{
	const sk_strlist *ids = &c->prev->snapshots.ids;
	size_t keep = (size_t)(c->us->spec.snapshot_keep > 0 ? c->us->spec.snapshot_keep
	                                                     : SK_SNAPSHOTS_KEEP_DEFAULT);

	for (size_t i = 0; i + keep < ids->len + (taking ? 1 : 0); i++)
		push_delete(c, ids->items[i]);
}

/* The schedule's next time after after_ms, requeued for. */
static void
requeue_next(sk_pctx *c, const sk_cron *cron, int64_t after_ms)
{
	int64_t next = sk_cron_next(cron, after_ms);

	if (next > c->now)
		sk_plan_requeue(c, next - c->now);
}

void
sk_plan_snapshots(sk_pctx *c, const sk_sandbox *k)
{
	const sk_snapshots_status *prev = &c->prev->snapshots;
	sk_snapshots_status *n = &c->r->next.snapshots;
	int64_t due, used;
	sk_action *a;
	sk_cron cron;
	char why[256];

	if (c->hold || !c->o->snapshots || c->us->spec.snapshot_schedule == NULL ||
	        sk_cron_parse(c->us->spec.snapshot_schedule, &cron, why, sizeof(why)) != SK_OK)
		return;
	if (prev->schedule_ms == 0) { /* the schedule starts now */
		n->schedule_ms = c->now;
		requeue_next(c, &cron, c->now);
		prune(c, false);
		return;
	}
	due = sk_cron_next(&cron, prev->schedule_ms);
	if (due == 0 || due > c->now) {
		if (due > c->now)
			sk_plan_requeue(c, due - c->now);
		prune(c, false);
		return;
	}
	if (keeper_busy(c) || (k->state != SK_SANDBOX_RUNNING && k->state != SK_SANDBOX_PAUSED)) {
		sk_plan_requeue(c, c->o->short_requeue_ms);
		prune(c, false);
		return;
	}
	used = c->ob->activity_ms > c->prev->last_activity_ms ? c->ob->activity_ms
	                                                      : c->prev->last_activity_ms;
	if (k->state == SK_SANDBOX_PAUSED && prev->last_ms != 0 && used <= prev->last_ms) {
		n->schedule_ms = c->now; /* asleep and unchanged since the last one */
		requeue_next(c, &cron, c->now);
		prune(c, false);
		return;
	}
	if (k->state == SK_SANDBOX_PAUSED && c->ob->capacity_wait) {
		sk_plan_requeue(c, sk_archive_slot_retry(0)); /* no slot for its wake yet */
		prune(c, false);
		return;
	}
	if (k->state == SK_SANDBOX_PAUSED) {
		a = sk_plan_push(c, SK_ACTION_CONNECT, k->id);
		a->timeout_ms = sk_plan_ttl(c->us, c->o);
		a->wake = SK_WAKE_SNAPSHOT; /* no user's: no activity */
	}
	sk_plan_push(c, SK_ACTION_SNAPSHOT, k->id);
	prune(c, true);
	if (k->state == SK_SANDBOX_PAUSED)
		sk_plan_push(c, SK_ACTION_PAUSE, k->id);
	n->schedule_ms = c->now;
	requeue_next(c, &cron, c->now);
}
