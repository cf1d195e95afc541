/*
 * reconcile/plan_workspace: no silent loss of a workspace (pure).
 *
 * Providers resume a paused sandbox with part of its files or none, and
 * delete paused sandboxes after a retention. So, with plan options
 * `markers` on:
 * - after a create (once its data plane answers), and for a space that has
 *   none yet, the executor writes the workspace marker (marker.c) and
 *   WorkspaceIntact becomes True (MarkerWritten);
 * - after every resume (the warm-up Resuming, or an Idle keeper found
 *   running: autoResume on traffic) observe reads it back: this space's
 *   marker keeps WorkspaceIntact True (MarkerFound); missing or another
 *   space's sets it False (WorkspaceLost), a Warning event and the drift
 *   WorkspaceLost are recorded, and the marker is written again so a later
 *   loss is seen too; a read that failed proves nothing and is retried
 *   (Unknown, MarkerUnreadable);
 * - a bound sandbox that is gone (404, or listed gone) lost its files with
 *   it: WorkspaceIntact False before the new sandbox is created, never a
 *   silent replacement;
 * - a sandbox bound to an Archived space waits for its restore: it is
 *   empty by design, so nothing is read or judged (not even after a resume:
 *   it may fall asleep before the restore runs), and the restore writes the
 *   marker (WorkspaceIntact True, MarkerWritten).
 * WorkspaceIntact False stays, and the connect answer carries
 * workspaceLost: true, until the annotation spacekeeper.dev/
 * workspaceLossAcknowledged holds a time at or after the condition's
 * lastTransitionTime (LossAcknowledged). spec.health.onLoss Restore copies
 * the newest archive back into the keeper (plan_archive.c); without one the
 * loss is only reported. A bound sandbox gone while an archive exists goes
 * back to Archived (plan_archive.c); when that archive is older than the
 * last activity, the changes since are lost: WorkspaceIntact False, reason
 * RestoredFromOlderArchive, drift WorkspaceLost, while the files it has are
 * still restored.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "../api/kvlist.h"
#include "../api/sandbox_values.h"
#include "../api/status.h"
#include "../api/userspace.h"
#include "marker_int.h"
#include "options.h"
#include "plan.h"
#include "plan_int.h"
#include "reconcile_int.h"

static bool
cond_is(const sk_condition *cd, const char *status, const char *reason)
{
	return cd != NULL && sk_str_eq(cd->status, status) &&
	        (reason == NULL || sk_str_eq(cd->reason, reason));
}

sk_marker_step
sk_plan_marker_step(const sk_userspace *us, const sk_plan_options *opts)
{
	const sk_condition *dp = sk_userspace_condition(us, SK_COND_DATAPLANE);
	const sk_condition *w = sk_userspace_condition(us, SK_COND_WORKSPACE);

	if (!opts->markers || us->spec.mode != SK_MODE_RUNNING || us->meta.deletion_ms != 0)
		return SK_MARKER_STEP_NONE;
	/* Archived: the files are in the archive and in no sandbox. The one
	 * made for a connect is empty by design until the restore, whether it
	 * just started or fell asleep and was resumed before the restore ran:
	 * nothing to judge; the restore writes the marker
	 * (sk_plan_workspace_restored). */
	if (us->status.archive.state == SK_ARCHIVE_ARCHIVED)
		return SK_MARKER_STEP_NONE;
	if (cond_is(dp, "Unknown", SK_REASON_STARTING) || w == NULL ||
	        cond_is(w, "Unknown", SK_REASON_MARKER_WRITE_FAILED))
		return SK_MARKER_STEP_WRITE;
	if (cond_is(dp, "Unknown", SK_REASON_RESUMING) || us->status.phase == SK_PHASE_IDLE ||
	        cond_is(w, "Unknown", SK_REASON_MARKER_UNREADABLE))
		return SK_MARKER_STEP_CHECK;
	return SK_MARKER_STEP_NONE;
}

static void decide(sk_pctx *c, const char *status, const char *reason, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

static void
decide(sk_pctx *c, const char *status, const char *reason, const char *fmt, ...)
{
	sk_buf b = SK_BUF_INIT(4096);
	va_list ap;

	va_start(ap, fmt);
	sk_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	free(c->workspace.message);
	c->workspace.status = status;
	c->workspace.reason = reason;
	c->workspace.message = b.data ? sk_buf_detach(&b) : sk_strdup("");
}

/* A loss already reported stays reported: True only when it was not False. */
static bool
known_lost(const sk_pctx *c)
{
	return cond_is(sk_plan_prev_cond(c, SK_COND_WORKSPACE), "False", NULL);
}

/* onLoss Restore with an archive: the archive's files go back into the
 * keeper (plan_archive.c restores a pending archive in the next round). */
static char *
restore_note(sk_pctx *c, bool keeper)
{
	sk_archive_status *a = &c->r->next.archive;

	if (c->us->spec.on_loss != SK_ON_LOSS_RESTORE)
		return sk_strdup("");
	if (!keeper || !c->o->archive || a->state == SK_ARCHIVE_NONE || a->key == NULL)
		return sk_strdup("; onLoss Restore: no archive to restore from");
	a->state = SK_ARCHIVE_ARCHIVED;
	a->failures = 0; /* a later archive's failures: this restore has none yet */
	a->failed_ms = 0;
	sk_plan_requeue(c, c->o->min_requeue_ms);
	return sk_asprintf("; onLoss Restore: restoring the archive of generation %lld",
	        (long long)a->generation);
}

/* A new loss found in sandbox id: the condition, and the drift (its event). */
static void
lost(sk_pctx *c, const char *id, const char *detail, bool keeper)
{
	char *note;

	if (known_lost(c))
		return; /* the first loss's time and message stay */
	note = restore_note(c, keeper);
	decide(c, "False", SK_REASON_WORKSPACE_LOST, "%s%s", detail, note);
	free(note);
	sk_plan_drift(c, SK_DRIFT_WORKSPACE_LOST, id, "%s", c->workspace.message);
}

void
sk_plan_workspace(sk_pctx *c, const sk_sandbox *k)
{
	sk_marker_step step = sk_plan_marker_step(c->us, c->o);

	if (c->hold || step == SK_MARKER_STEP_NONE)
		return;
	if (step == SK_MARKER_STEP_WRITE) {
		sk_plan_push(c, SK_ACTION_WRITE_MARKER, k->id);
		if (!known_lost(c))
			decide(c, "True", SK_REASON_MARKER_WRITTEN,
			        "workspace marker written in sandbox %s", k->id);
		return;
	}
	switch (c->ob->marker) {
	case SK_MARKER_FOUND:
		if (!known_lost(c))
			decide(c, "True", SK_REASON_MARKER_FOUND,
			        "workspace marker found after the resume of sandbox %s", k->id);
		break;
	case SK_MARKER_MISSING:
	case SK_MARKER_FOREIGN: {
		char *why = sk_asprintf(
		        "sandbox %s resumed without its files: %s", k->id, c->ob->marker_detail);
		lost(c, k->id, why, true);
		free(why);
		sk_plan_push(c, SK_ACTION_WRITE_MARKER, k->id);
		break;
	}
	case SK_MARKER_UNREADABLE:
		if (!known_lost(c))
			decide(c, "Unknown", SK_REASON_MARKER_UNREADABLE, "%s",
			        c->ob->marker_detail);
		sk_plan_requeue(c, c->o->short_requeue_ms);
		break;
	default: break; /* not read: nothing known */
	}
}

void
sk_plan_workspace_restored(sk_pctx *c, const sk_sandbox *k)
{
	if (!c->o->markers || c->hold)
		return;
	sk_plan_push(c, SK_ACTION_WRITE_MARKER, k->id);
	if (!known_lost(c))
		decide(c, "True", SK_REASON_MARKER_WRITTEN,
		        "workspace restored from the archive into sandbox %s, marker written",
		        k->id);
}

void
sk_plan_workspace_gone(sk_pctx *c, const char *gone_id)
{
	if (!c->o->markers || c->hold || gone_id == NULL)
		return;
	{
		char *why = sk_asprintf("sandbox %s is gone and its files with it", gone_id);

		lost(c, gone_id, why, false);
		free(why);
	}
}

void
sk_plan_workspace_stale(sk_pctx *c, const char *gone_id, const char *detail)
{
	if (c->hold || gone_id == NULL || known_lost(c))
		return; /* the first loss's time and message stay */
	decide(c, "False", SK_REASON_RESTORED_OLDER, "%s", detail);
	sk_plan_drift(c, SK_DRIFT_WORKSPACE_LOST, gone_id, "%s", c->workspace.message);
}

/* The acknowledgement's time covers the loss (second precision). */
static bool
acknowledged(const sk_pctx *c, const sk_condition *w)
{
	const char *ack = sk_kvlist_get(&c->us->meta.annotations, SK_ANNOTATION_LOSS_ACK);
	int64_t at = 0, since = w->last_transition_ms;

	if (ack == NULL || sk_time_parse(ack, &at) != 0)
		return false;
	return at >= since - since % 1000;
}

void
sk_plan_workspace_finish(sk_pctx *c)
{
	const sk_condition *w = sk_plan_prev_cond(c, SK_COND_WORKSPACE);

	/* decided this round: a new loss brought its drift */
	if (c->workspace.status != NULL || !cond_is(w, "False", NULL))
		return;
	if (acknowledged(c, w)) {
		decide(c, "True", SK_REASON_LOSS_ACKNOWLEDGED, "workspace loss acknowledged (%s)",
		        SK_ANNOTATION_LOSS_ACK);
		return;
	}
	for (size_t i = 0; i < c->prev->n_drift; i++) {
		const sk_drift *d = &c->prev->drift[i];
		if (sk_str_eq(d->type, SK_DRIFT_WORKSPACE_LOST)) {
			sk_plan_drift(c, d->type, d->sandbox_id, "%s", d->detail);
			return;
		}
	}
	sk_plan_drift(c, SK_DRIFT_WORKSPACE_LOST, c->r->next.sandbox_id, "%s", w->message);
}
