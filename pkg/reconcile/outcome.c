/*
 * reconcile/outcome: the pure decisions around a plan that the executor,
 * the controller and the HTTP layer used to make on their own: what a
 * failure leaves (its reason, the status; transient or terminal is
 * sk_error_retry's call, in util),
 * when a --once pass may stop, and how a connect is answered.
 */
#include <stdlib.h>
#include <string.h>

#include "../api/kvlist.h"
#include "../api/status.h"
#include "../api/userspace.h"
#include "archive_int.h"
#include "connect.h"
#include "observe_int.h"
#include "options.h"
#include "outcome_int.h"
#include "plan.h"
#include "reconcile_int.h"

int64_t
sk_plan_ttl(const sk_userspace *us, const sk_plan_options *opts)
{
	return us->spec.idle_timeout_ms > 0 ? us->spec.idle_timeout_ms : opts->sandbox_timeout_ms;
}

static const struct {
	sk_action_type type;
	const char *reason;
} failure_reasons[] = {
	{ SK_ACTION_CREATE, SK_REASON_CREATE_FAILED },
	{ SK_ACTION_CONNECT, SK_REASON_RESUME_FAILED },
	{ SK_ACTION_PAUSE, SK_REASON_PAUSE_FAILED },
	{ SK_ACTION_KILL, SK_REASON_DELETE_FAILED },
	{ SK_ACTION_SET_TIMEOUT, SK_REASON_SET_TIMEOUT_FAILED },
	{ SK_ACTION_BIND, SK_REASON_STATUS_WRITE_FAILED },
	{ SK_ACTION_REMOVE_FINALIZER, SK_REASON_FINALIZER_FAILED },
	{ SK_ACTION_EVENT, SK_REASON_EVENT_FAILED },
	{ SK_ACTION_INIT_ENV, SK_REASON_INIT_ENV_FAILED },
	{ SK_ACTION_WRITE_MARKER, SK_REASON_MARKER_WRITE_FAILED },
	{ SK_ACTION_SET_NETWORK, SK_REASON_NETWORK_FAILED },
	{ SK_ACTION_ARCHIVE, SK_REASON_ARCHIVE_FAILED },
	{ SK_ACTION_RESTORE, SK_REASON_RESTORE_FAILED },
	{ SK_ACTION_PURGE_ARCHIVE, SK_REASON_ARCHIVE_PURGE_FAILED },
	{ SK_ACTION_DELETE_SNAPSHOT, SK_REASON_SNAPSHOT_DELETE_FAILED },
	{ SK_ACTION_SNAPSHOT, SK_REASON_SNAPSHOT_FAILED },
};

const char *
sk_failure_reason(sk_action_type t)
{
	for (size_t i = 0; i < sizeof(failure_reasons) / sizeof(failure_reasons[0]); i++) {
		if (failure_reasons[i].type == t)
			return failure_reasons[i].reason;
	}
	return "Failed";
}

void
sk_status_set_condition(sk_userspace_status *st, const char *type, const char *status,
        const char *reason, const char *message, int64_t now_ms, int64_t generation)
{
	sk_condition *c = NULL;

	for (size_t i = 0; i < st->n_conditions; i++) {
		if (sk_str_eq(st->conditions[i].type, type))
			c = &st->conditions[i];
	}
	if (c == NULL) {
		st->conditions = sk_realloc(
		        st->conditions, (st->n_conditions + 1) * sizeof(*st->conditions));
		c = &st->conditions[st->n_conditions++];
		memset(c, 0, sizeof(*c));
		c->type = sk_strdup(type);
	}
	if (!sk_str_eq(c->status, status))
		c->last_transition_ms = now_ms;
	free(c->status);
	free(c->reason);
	free(c->message);
	c->status = sk_strdup(status);
	c->reason = sk_strdup(reason);
	c->message = sk_strdup(message);
	c->observed_generation = generation;
}

/* A create the provider answered with 429 or another 4xx made nothing: the
 * Creating mark can go, so the next round retries without the grace. */
static bool
create_rejected(const sk_outcome *o)
{
	return o->unmarked || (o->http_status >= 400 && o->http_status < 500);
}

/* The warm-up a failed env re-assert goes back to, so the next round retries it. */
static void
keep_warm_up(const sk_userspace *us, int64_t now, sk_userspace_status *st)
{
	const sk_condition *dp = sk_userspace_condition(us, SK_COND_DATAPLANE);
	const char *reason = SK_REASON_STARTING;

	if (dp != NULL && sk_str_eq(dp->reason, SK_REASON_RESUMING))
		reason = SK_REASON_RESUMING;
	sk_status_set_condition(st, SK_COND_DATAPLANE, "Unknown", reason,
	        "the environment is re-asserted once the data plane answers", now,
	        us->meta.generation);
	if (dp != NULL && sk_str_eq(dp->status, "Unknown")) {
		for (size_t i = 0; i < st->n_conditions; i++) {
			if (sk_str_eq(st->conditions[i].type, SK_COND_DATAPLANE))
				st->conditions[i].last_transition_ms = dp->last_transition_ms;
		}
	}
}

/* A marker that was not written is written again next round (a loss
 * already reported stays reported). */
static void
marker_not_written(const sk_userspace *us, const char *msg, int64_t now, sk_userspace_status *st)
{
	const sk_condition *w = sk_userspace_condition(us, SK_COND_WORKSPACE);

	if (w != NULL && sk_str_eq(w->status, "False"))
		return;
	sk_status_set_condition(st, SK_COND_WORKSPACE, "Unknown", SK_REASON_MARKER_WRITE_FAILED,
	        msg, now, us->meta.generation);
}

void
sk_plan_failure(const sk_userspace *us, const sk_outcome *o, int64_t now, sk_userspace_status *st)
{
	const sk_action *a = o->failed;
	bool transient = sk_error_is_transient(o->code);
	const char *reason = a ? sk_failure_reason(a->type) : SK_REASON_NO_PROVIDER;
	const char *msg = o->message ? o->message : "";
	int64_t gen = us->meta.generation;

	sk_status_set_condition(st, SK_COND_SYNCED, "False", reason, msg, now, gen);
	free(st->message);
	st->message = sk_strdup(msg);
	if (a != NULL && a->type == SK_ACTION_CREATE && !o->created) {
		if (create_rejected(o))
			st->phase = transient ? SK_PHASE_PENDING : SK_PHASE_ERROR;
		else
			st->phase = SK_PHASE_CREATING; /* it may exist: keep the mark */
		sk_status_set_condition(st, SK_COND_READY, "False", reason, msg, now, gen);
	} else if (a != NULL && a->type == SK_ACTION_INIT_ENV) {
		keep_warm_up(us, now, st);
	} else if (a != NULL && a->type == SK_ACTION_WRITE_MARKER) {
		marker_not_written(us, msg, now, st);
	} else if (a != NULL && a->type == SK_ACTION_ARCHIVE) {
		/* nothing recorded: the sandbox stays bound, the archive is redone
		 * after a back-off counted from here (plan_archive.c) */
		st->archive.failures = us->status.archive.failures + 1;
		st->archive.failed_ms = now;
	} else if (a != NULL && a->type == SK_ACTION_SNAPSHOT) {
		/* the scheduled time stays due: taken again at the next attempt */
		st->snapshots.schedule_ms = us->status.snapshots.schedule_ms;
	} else if (a != NULL && a->type == SK_ACTION_DELETE_SNAPSHOT) {
		/* status.archive.snapshotID stays: retried next round; the space
		 * itself is as it was */
	} else if (a != NULL && a->type == SK_ACTION_PURGE_ARCHIVE) {
		/* the finalizer stays: the purge is retried, the space still Deleting */
	} else if (a != NULL && a->type == SK_ACTION_RESTORE) {
		/* the files are still only in the archive: retried after a
		 * back-off counted from here (plan_archive.c), not ready */
		st->archive.state = SK_ARCHIVE_ARCHIVED;
		st->archive.restore_ms = us->status.archive.restore_ms;
		st->archive.failures = us->status.archive.failures + 1;
		st->archive.failed_ms = now;
		sk_status_set_condition(st, SK_COND_READY, "False", reason, msg, now, gen);
	} else if (!transient) {
		st->phase = SK_PHASE_ERROR;
	}
}

bool
sk_plan_quiet(const sk_userspace *us, int64_t activity_ms, int64_t now)
{
	const sk_condition *dp = sk_userspace_condition(us, SK_COND_DATAPLANE);
	int64_t last = activity_ms > us->status.last_activity_ms ? activity_ms
	                                                         : us->status.last_activity_ms;

	if (us->spec.idle_timeout_ms <= 0)
		return false;
	/* Health not known to be good (never probed, starting, unreachable):
	 * probe until it is. */
	if (dp == NULL || !sk_str_eq(dp->status, "True"))
		return false;
	/* The keeper became healthy (a create or resume) counts as activity. */
	if (dp->last_transition_ms > last)
		last = dp->last_transition_ms;
	return last <= now - us->spec.idle_timeout_ms;
}

bool
sk_plan_settled(const sk_userspace *us)
{
	sk_phase p = us->status.phase;

	return sk_kvlist_get(&us->meta.annotations, SK_ANNOTATION_PAUSED) != NULL ||
	        p == SK_PHASE_PAUSED || p == SK_PHASE_DEGRADED || p == SK_PHASE_ERROR ||
	        p == SK_PHASE_IDLE || p == SK_PHASE_ARCHIVED ||
	        (p == SK_PHASE_RUNNING && sk_userspace_is_ready(us));
}

/* ---- connect ---- */

static const sk_drift *
drift_of(const sk_userspace *us, const char *type)
{
	for (size_t i = 0; i < us->status.n_drift; i++) {
		if (sk_str_eq(us->status.drift[i].type, type))
			return &us->status.drift[i];
	}
	return NULL;
}

static void
unavailable(sk_connect_decision *out, const char *reason, int64_t retry_after_ms)
{
	out->verdict = SK_CONNECT_UNAVAILABLE;
	out->reason = reason;
	out->retry_after_ms = retry_after_ms;
}

/* The keeper the controller last saw is the bound one, running, healthy,
 * seen within probe_fresh_ms, and not about to fall asleep (more than
 * sleep_margin_ms left: a deadline nearer than the renewal window is
 * renewed off the request path, renew_due). */
static bool
fresh(const sk_userspace *us, const sk_keeper_memory *mem, int64_t now, const sk_plan_options *o)
{
	if (mem == NULL || mem->seen_ms == 0 || !mem->running || !mem->healthy)
		return false;
	if (!sk_str_eq(mem->sandbox_id, us->status.sandbox_id))
		return false;
	if (now - mem->seen_ms > o->probe_fresh_ms)
		return false;
	return mem->end_ms == 0 || mem->end_ms - now > o->sleep_margin_ms;
}

void
sk_connect_decide(const sk_userspace *us, const sk_keeper_memory *mem, int64_t now,
        const sk_plan_options *opts, sk_connect_decision *out)
{
	const char *hold = sk_kvlist_get(&us->meta.annotations, SK_ANNOTATION_PAUSED);
	const sk_condition *dp = sk_userspace_condition(us, SK_COND_DATAPLANE);
	const sk_drift *down = drift_of(us, SK_DRIFT_DATAPLANE);
	int64_t ttl = sk_plan_ttl(us, opts);

	memset(out, 0, sizeof(*out));
	out->verdict = SK_CONNECT_RECONCILE;
	if (us->meta.deletion_ms != 0)
		unavailable(out, SK_REASON_DELETING, 0);
	else if (us->spec.mode == SK_MODE_PAUSED)
		unavailable(out, SK_REASON_MODE_PAUSED, 0);
	else if (hold != NULL && strcmp(hold, "true") == 0)
		unavailable(out, SK_REASON_PAUSED_ANNOTATION, 0);
	if (out->verdict == SK_CONNECT_UNAVAILABLE)
		return;
	if (sk_restore_retry_at(us) > now) {
		/* the restore failed lately: not retried before its back-off ends,
		 * so never make the caller wait out its timeout */
		unavailable(out, SK_REASON_RESTORE_FAILED, sk_restore_retry_at(us) - now);
		return;
	}
	if (down != NULL && dp != NULL && sk_str_eq(dp->status, "False")) {
		/* Known unreachable, past the warm-up (the planner only records the
		 * drift after it): never make the caller wait out its timeout. */
		out->drift_since_ms = down->since_ms;
		if (us->spec.remediation == SK_REMEDIATION_REPLACE)
			out->verdict = SK_CONNECT_REPLACE;
		else
			unavailable(out, SK_DRIFT_DATAPLANE, opts->resync_ms);
		return;
	}
	if (us->status.phase == SK_PHASE_IDLE) {
		out->verdict = SK_CONNECT_WAKE;
		return;
	}
	if (us->status.phase == SK_PHASE_RUNNING && sk_userspace_is_ready(us) &&
	        fresh(us, mem, now, opts)) {
		out->verdict = SK_CONNECT_READY;
		out->renew_due = mem->end_ms > 0 &&
		        mem->end_ms - now <= (us->spec.idle_timeout_ms > 0
		                                             ? sk_plan_renew_window(ttl, opts)
		                                             : ttl / 2);
	}
}
