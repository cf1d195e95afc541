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
