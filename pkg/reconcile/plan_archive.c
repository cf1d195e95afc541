/*
 * reconcile/plan_archive: a space outlives its sandbox (pure).
 *
 * With an archive configured (opts.archive; with spec.lifecycle.archive.method
 * Snapshot, a provider with persistent snapshots: plan_snapshot.c), a
 * Running space asleep (phase
 * Idle) for spec.lifecycle.archiveAfter, or close to its provider's
 * pausedRetention (whatever archiveAfter says), is archived:
 *   1. BIND writes the intent (status.archive.archivingSince) first;
 *   2. CONNECT wakes the sandbox (its files are read through envd);
 *   3. ARCHIVE copies the workspace to PREFIX/USERID/GENERATION, manifest
 *      last, reloaded and verified, and records it in the status to write
 *      (status.archive, phase Archived, nothing bound);
 *   4. BIND writes that status;
 *   5. KILL deletes the sandbox, only now.
 * The wake of step 2 is a start like any other: the capacity gate
 * (providers[].capacity) may refuse it, and then the archive waits (the
 * Archived condition False, WaitingForCapacity) and asks again, after as
 * long as it waited so far or when a slot frees, whichever comes first.
 * It is no connect: no activity, its Woken event says the archive, and its
 * wait evicts only a space not connected within evictAfter.
 * Crash safety: a round that finds the intent with the sandbox still bound
 * redoes the archive (3 never happened as far as the status knows: the
 * sandbox is kept); a round that finds the archived sandbox
 * (status.archive.sandboxID) still there with nothing bound deletes it. A
 * connect meanwhile drops the intent: the user comes first. A failed
 * archive (a wrong key, a missing bucket, S3 down) counts in
 * status.archive.failures and lastFailureTime, and Synced stays False
 * (ArchiveFailed) until an archive succeeds; the next attempt waits
 * 1m doubling to 1h from it, and inside that back-off the sandbox is put
 * back to sleep and never woken for the archive.
 *
 * Archived (status.archive.state Archived): no sandbox is created until a
 * connect asks (observed.wake); then the usual create (its Creating mark),
 * and once the new keeper's data plane answers, RESTORE copies the files
 * back (verified against the manifest), the env is re-asserted and the
 * marker written before the space is Running again. A failed restore (an
 * object that fails its checksum, the bucket gone) counts in the same
 * status.archive.failures and lastFailureTime (the archive itself, having
 * succeeded, left none) and is retried after the same back-off; until
 * then Ready and Synced are False with reason RestoreFailed and a connect
 * is answered at once with it (sk_connect_decide). A bound sandbox gone
 * while asleep, when an archive exists, goes back to Archived (restored at
 * the next connect); when that archive is older than the last activity the
 * changes since are reported lost (plan_workspace.c); a WorkspaceLost with
 * spec.health.onLoss Restore marks the archive for a restore into the
 * keeper (plan_workspace.c).
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

#define HOUR_MS (3600LL * 1000)
#define MINUTE_MS (60LL * 1000)

int64_t
sk_archive_backoff(int64_t failures)
{
	int64_t d = MINUTE_MS;

	if (failures <= 0)
		return 0;
	for (int64_t i = 1; i < failures && d < HOUR_MS; i++)
		d *= 2;
	return d > HOUR_MS ? HOUR_MS : d;
}

/* The time of the next archive attempt after failed ones; 0: no back-off. */
static int64_t
retry_at(const sk_pctx *c)
{
	const sk_archive_status *a = &c->prev->archive;

	if (a->failures <= 0 || a->failed_ms == 0)
		return 0;
	return a->failed_ms + sk_archive_backoff(a->failures);
}

/* A failed archive (or restore) keeps Synced False with its reason until
 * an attempt succeeds, not only in the round that failed: the message the
 * failure wrote stays, or says when the next attempt is. */
static void
keep_failed(sk_pctx *c, const char *reason)
{
	const sk_condition *s = sk_plan_prev_cond(c, SK_COND_SYNCED);
	char at[40];

	if (s != NULL && sk_str_eq(s->status, "False") && sk_str_eq(s->reason, reason)) {
		sk_plan_cond(c, SK_C_SYNCED, "False", reason, "%s", s->message ? s->message : "");
		return;
	}
	sk_time_format(retry_at(c), at, sizeof(at));
	sk_plan_cond(c, SK_C_SYNCED, "False", reason,
	        "%lld failed attempts (status.archive.failures); the next at %s",
	        (long long)c->prev->archive.failures, at);
}

int64_t
sk_restore_retry_at(const sk_userspace *us)
{
	const sk_archive_status *a = &us->status.archive;

	if (a->state != SK_ARCHIVE_ARCHIVED || a->failures <= 0 || a->failed_ms == 0)
		return 0;
	return a->failed_ms + sk_archive_backoff(a->failures);
}

void
sk_plan_restore_failed(sk_pctx *c)
{
	const sk_condition *r = sk_plan_prev_cond(c, SK_COND_READY);
	char at[40];

	if (!sk_plan_archive_pending(c) || c->prev->archive.failures <= 0)
		return;
	keep_failed(c, SK_REASON_RESTORE_FAILED);
	if (r != NULL && sk_str_eq(r->reason, SK_REASON_RESTORE_FAILED)) {
		sk_plan_cond(c, SK_C_READY, "False", SK_REASON_RESTORE_FAILED, "%s",
		        r->message ? r->message : "");
		return;
	}
	sk_time_format(retry_at(c), at, sizeof(at));
	sk_plan_cond(c, SK_C_READY, "False", SK_REASON_RESTORE_FAILED,
	        "the restore of the archive failed; the next attempt at %s", at);
}

bool
sk_plan_restore_held(sk_pctx *c)
{
	if (!sk_plan_archive_pending(c) || retry_at(c) <= c->now)
		return false;
	sk_plan_restore_failed(c);
	sk_plan_requeue(c, retry_at(c) - c->now);
	return true;
}

int64_t
sk_archive_slot_retry(int64_t waited_ms)
{
	const int64_t least = 1000, most = 30 * 1000;

	return waited_ms < least ? least : waited_ms > most ? most : waited_ms;
}

static void
archived_cond(sk_pctx *c, const char *status, const char *reason, const char *msg)
{
	free(c->archived.message);
	c->archived.status = status;
	c->archived.reason = reason;
	c->archived.message = sk_strdup(msg);
}

int64_t
sk_archive_margin(int64_t retention_ms)
{
	int64_t m = retention_ms / 4;

	return m > HOUR_MS ? HOUR_MS : m;
}

int64_t
sk_archive_due(const sk_userspace *us, int64_t since_ms, const sk_plan_options *opts)
{
	int64_t due = 0, after = us->spec.archive_after_ms, ret = opts->paused_retention_ms;

	if (!sk_archive_method_ready(us->spec.archive_method, opts) ||
	        us->spec.mode != SK_MODE_RUNNING || us->spec.idle_timeout_ms <= 0)
		return 0;
	if (after > 0)
		due = since_ms + after;
	if (ret > 0 && us->spec.on_timeout == SK_ON_TIMEOUT_PAUSE) {
		int64_t r = since_ms + ret - sk_archive_margin(ret);
		if (due == 0 || r < due)
			due = r;
	}
	return due;
}

char *
sk_archive_base(const char *prefix, const char *user_id)
{
	size_t n = prefix ? strlen(prefix) : 0;

	while (n > 0 && prefix[n - 1] == '/')
		n--;
	return sk_asprintf("%.*s%s%s", (int)n, n ? prefix : "", n ? "/" : "", user_id);
}

char *
sk_archive_key(const char *prefix, const char *user_id, int64_t generation)
{
	char *base = sk_archive_base(prefix, user_id);
	char *key = sk_asprintf("%s/%lld", base, (long long)generation);

	free(base);
	return key;
}

/* A UserSpace deleted with deletionPolicy Delete: its archives go before
 * the finalizer (a failure keeps it, retried; deletionPolicy Retain keeps
 * the archives as it keeps the sandbox). */
void
sk_plan_archive_purge(sk_pctx *c)
{
	const sk_archive_status *a = &c->prev->archive;

	if (c->o->archive && (a->state != SK_ARCHIVE_NONE || a->intent_ms != 0 || a->failures != 0))
		sk_plan_push(c, SK_ACTION_PURGE_ARCHIVE, NULL);
	sk_plan_snapshot_purge(c);
}

void
sk_archive_record(sk_userspace_status *st, const char *bucket, const char *key, int64_t generation,
        int64_t files, int64_t bytes, int64_t now_ms, int64_t observed_gen)
{
	sk_archive_status *a = &st->archive;
	char *archived = st->sandbox_id;
	char msg[512];

	st->sandbox_id = NULL;
	sk_archive_status_dispose(a);
	a->state = SK_ARCHIVE_ARCHIVED;
	a->bucket = sk_strdup(bucket);
	a->key = sk_strdup(key);
	a->generation = generation;
	a->time_ms = now_ms;
	a->files = files;
	a->bytes = bytes;
	a->sandbox_id = archived;
	st->phase = SK_PHASE_ARCHIVED;
	snprintf(msg, sizeof(msg),
	        "the workspace is archived at s3://%s/%s/ (%lld files); a connect restores it",
	        bucket ? bucket : "", key ? key : "", (long long)files);
	sk_status_set_condition(
	        st, SK_COND_READY, "True", SK_REASON_ARCHIVED, msg, now_ms, observed_gen);
	sk_status_set_condition(st, SK_COND_SYNCED, "True", SK_REASON_RECONCILED,
	        "observed state converged", now_ms, observed_gen);
	sk_status_set_condition(st, SK_COND_DATAPLANE, "Unknown", SK_REASON_ARCHIVED,
	        "no sandbox: the workspace is archived", now_ms, observed_gen);
	sk_status_set_condition(st, SK_COND_ARCHIVED, "True", SK_REASON_ARCHIVED,
	        "the workspace is archived", now_ms, observed_gen);
}

/* The files are in the archive and in no sandbox (restore pending). */
bool
sk_plan_archive_pending(const sk_pctx *c)
{
	return c->prev->archive.state == SK_ARCHIVE_ARCHIVED;
}

/* id is the archived sandbox, not the binding: never a keeper. */
bool
sk_plan_archived_sandbox(const sk_pctx *c, const char *id)
{
	return id != NULL && sk_str_eq(c->prev->archive.sandbox_id, id) &&
	        !sk_str_eq(c->prev->sandbox_id, id);
}

/* The archived sandbox still there (a crash or a failure after the archive
 * was recorded): deleted now. */
void
sk_plan_archive_cleanup(sk_pctx *c)
{
	for (size_t i = 0; i < c->ob->sandboxes.len && !c->hold; i++) {
		const sk_sandbox *sb = &c->ob->sandboxes.items[i];
		if (sb->state != SK_SANDBOX_GONE && sk_plan_archived_sandbox(c, sb->id))
			sk_plan_push(c, SK_ACTION_KILL, sb->id)->why = SK_KILL_ARCHIVED;
	}
}

static void
push_archive(sk_pctx *c, const sk_sandbox *k, bool wake)
{
	sk_archive_status *a = &c->r->next.archive;
	bool redo = c->prev->archive.intent_ms != 0;

	if (!redo)
		a->intent_ms = c->now;
	sk_plan_push(c, SK_ACTION_BIND, k->id); /* the intent, before anything moves */
	if (wake) {
		sk_action *w = sk_plan_push(c, SK_ACTION_CONNECT, k->id);
		w->timeout_ms = sk_plan_ttl(c->us, c->o);
		w->wake = SK_WAKE_ARCHIVE; /* not a user's: no activity, told as the archive's */
	}
	sk_plan_push(c, SK_ACTION_ARCHIVE, k->id);
	sk_plan_push(c, SK_ACTION_BIND, NULL); /* the archive recorded: nothing bound */
	sk_plan_push(c, SK_ACTION_KILL, k->id)->why = SK_KILL_ARCHIVED;
	if (!redo)
		sk_plan_event(c, "Normal", SK_REASON_ARCHIVING,
		        "archiving the workspace of sandbox %s (asleep since %s)", k->id,
		        c->us->spec.archive_after_ms > 0 ? "archiveAfter" : "pausedRetention");
}

/* When the Idle space fell asleep: the Idle data-plane condition's time,
 * or the last activity plus the idle timeout when that is later; 0 when
 * it was not asleep before this round. */
static int64_t
asleep_since(const sk_pctx *c)
{
	const sk_condition *dp = sk_plan_prev_cond(c, SK_COND_DATAPLANE);
	int64_t since, act;

	if (c->prev->phase != SK_PHASE_IDLE || dp == NULL || !sk_str_eq(dp->reason, SK_REASON_IDLE))
		return 0;
	since = dp->last_transition_ms;
	act = c->prev->last_activity_ms + c->us->spec.idle_timeout_ms;
	return c->prev->last_activity_ms > 0 && act > since ? act : since;
}

/* The archive's wake was refused a slot (observed.capacity_wait): said in
 * the Archived condition, asked again after as long as it waited so far. */
static void
wait_for_slot(sk_pctx *c)
{
	const sk_condition *old = sk_plan_prev_cond(c, SK_COND_ARCHIVED);
	int64_t waited = 0;
	char *msg;

	if (old != NULL && sk_str_eq(old->status, "False") &&
	        sk_str_eq(old->reason, SK_REASON_WAITING_FOR_CAPACITY))
		waited = c->now - old->last_transition_ms;
	msg = sk_asprintf("the archive waits to wake the sandbox: %s",
	        c->ob->capacity_message ? c->ob->capacity_message
	                                : "waiting for a free slot at the provider");
	archived_cond(c, "False", SK_REASON_WAITING_FOR_CAPACITY, msg);
	free(msg);
	sk_plan_requeue(c, sk_archive_slot_retry(waited));
}

void
sk_plan_archive_idle(sk_pctx *c, const sk_sandbox *k)
{
	int64_t since, due;

	if (!sk_archive_method_ready(c->us->spec.archive_method, c->o) || c->hold)
		return;
	if (c->prev->archive.failures > 0)
		keep_failed(c, SK_REASON_ARCHIVE_FAILED);
	if (retry_at(c) > c->now) { /* failed lately: no wake inside the back-off */
		sk_plan_requeue(c, retry_at(c) - c->now);
		return;
	}
	since = asleep_since(c);
	due = since > 0 ? sk_archive_due(c->us, since, c->o) : 0;
	if (c->prev->archive.intent_ms == 0) { /* none under way (one is redone) */
		if (since == 0 && sk_archive_due(c->us, c->now, c->o) > 0)
			sk_plan_requeue(c, c->o->min_requeue_ms); /* just fell asleep */
		if (due > c->now)
			sk_plan_requeue(c, due - c->now);
		if (due == 0 || due > c->now)
			return;
	}
	if (!c->ob->capacity_wait)
		push_archive(c, k, true);
	else if (!c->ob->wake) /* a connect's wait is the connect's to tell */
		wait_for_slot(c);
}

bool
sk_plan_archive_running(sk_pctx *c, const sk_sandbox *k)
{
	sk_archive_status *a = &c->r->next.archive;

	if (c->prev->archive.intent_ms == 0 || c->hold)
		return false;
	if (c->ob->wake || c->ob->activity_ms > c->prev->archive.intent_ms ||
	        !sk_archive_method_ready(c->us->spec.archive_method, c->o)) {
		a->intent_ms = 0; /* the user came back first (a connect, a heartbeat) */
		return false;
	}
	/* woken by the archive, which did not finish: still asleep for the user */
	c->r->next.phase = SK_PHASE_IDLE;
	if (c->prev->archive.failures > 0)
		keep_failed(c, SK_REASON_ARCHIVE_FAILED);
	sk_plan_cond(c, SK_C_READY, "True", SK_REASON_IDLE,
	        "sandbox %s is being archived; a connect keeps it", k->id);
	sk_plan_cond(c, SK_C_DATAPLANE, "Unknown", SK_REASON_IDLE, "sandbox is being archived");
	if (retry_at(c) > c->now) {
		/* the archive failed: back to sleep until its back-off ends */
		sk_plan_push(c, SK_ACTION_PAUSE, k->id);
		sk_plan_requeue(c, retry_at(c) - c->now);
		return true;
	}
	push_archive(c, k, false);
	return true;
}

void
sk_plan_archived(sk_pctx *c)
{
	const sk_archive_status *a = &c->prev->archive;

	c->r->next.phase = SK_PHASE_ARCHIVED;
	archived_cond(c, "True", SK_REASON_ARCHIVED, "the workspace is archived");
	if (a->method == SK_ARCHIVE_SNAPSHOT)
		sk_plan_cond(c, SK_C_READY, "True", SK_REASON_ARCHIVED,
		        "the space is kept in snapshot %s; a connect starts a sandbox from it",
		        a->snapshot_id ? a->snapshot_id : "-");
	else
		sk_plan_cond(c, SK_C_READY, "True", SK_REASON_ARCHIVED,
		        "the workspace is archived at s3://%s/%s/ (%lld files); a connect restores "
		        "it",
		        a->bucket ? a->bucket : "", a->key ? a->key : "", (long long)a->files);
	sk_plan_cond(c, SK_C_DATAPLANE, "Unknown", SK_REASON_ARCHIVED,
	        "no sandbox: the workspace is archived");
}

/* The archive a vanished sandbox comes back from is older than what the
 * user did since: it was already restored into that sandbox, which ran
 * since (a connect made it; archive.time is before the last activity).
 * Archived with a sandbox bound is a restore target that never got the
 * files: it held nothing newer than the archive. */
static bool
archive_stale(const sk_archive_status *a)
{
	return a->state == SK_ARCHIVE_RESTORED;
}

bool
sk_plan_archive_gone(sk_pctx *c, const char *gone_id)
{
	sk_archive_status *a = &c->r->next.archive;
	char at[40];

	if (!sk_archive_method_ready(a->method, c->o) || c->hold || gone_id == NULL ||
	        a->state == SK_ARCHIVE_NONE)
		return false;
	/* a snapshot is deleted once restored from: only a pending one is left */
	if (a->method == SK_ARCHIVE_SNAPSHOT
	                ? a->state != SK_ARCHIVE_ARCHIVED || a->snapshot_id == NULL
	                : a->key == NULL)
		return false;
	if (archive_stale(a)) {
		char *why;

		sk_time_format(a->time_ms, at, sizeof(at));
		why = sk_asprintf("sandbox %s is gone; its workspace is restored from the archive "
		                  "of generation %lld made at %s, older than its last use: files "
		                  "changed since then are lost",
		        gone_id, (long long)a->generation, at);
		sk_plan_workspace_stale(c, gone_id, why);
		free(why);
	} else if (a->state != SK_ARCHIVE_ARCHIVED)
		sk_plan_event(c, "Warning", SK_REASON_ARCHIVED,
		        "sandbox %s is gone; its workspace is restored from the archive of "
		        "generation %lld at the next connect",
		        gone_id, (long long)a->generation);
	a->state = SK_ARCHIVE_ARCHIVED;
	a->intent_ms = 0;
	a->failures = 0; /* the failed archives of the sandbox that is gone: no restore's */
	a->failed_ms = 0;
	return true;
}

void
sk_plan_archive_awake(sk_pctx *c)
{
	const sk_condition *old = sk_plan_prev_cond(c, SK_COND_ARCHIVED);
	sk_phase ph = c->r->next.phase;

	if (old == NULL || c->archived.status != NULL || c->hold ||
	        c->r->next.archive.state == SK_ARCHIVE_ARCHIVED || ph == SK_PHASE_IDLE ||
	        ph == SK_PHASE_ARCHIVED || ph == SK_PHASE_NONE)
		return;
	archived_cond(
	        c, "False", SK_REASON_AWAKE, "the space is in use: its files are in the sandbox");
}

void
sk_plan_restore(sk_pctx *c, const sk_sandbox *k)
{
	if (c->hold)
		return;
	if (c->prev->archive.method == SK_ARCHIVE_SNAPSHOT) {
		sk_plan_snapshot_restored(c, k);
		return;
	}
	sk_plan_push(c, SK_ACTION_RESTORE, k->id);
	c->r->next.archive.state = SK_ARCHIVE_RESTORED;
	c->r->next.archive.restore_ms = c->now;
	c->r->next.archive.failures = 0; /* a failure counts them again (sk_plan_failure) */
	c->r->next.archive.failed_ms = 0;
}
