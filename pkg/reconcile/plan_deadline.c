/*
 * reconcile/plan_deadline: the planner's rules about a running keeper's
 * deadline beyond activity (pure, like plan.c, which asks them from
 * keep_alive):
 * - busy (lifecycle.busy Processes): a renewal is also due, without
 *   activity, while envd runs a process started through it (observe asks
 *   envd's process list when sk_plan_busy_check says so), for at most
 *   lifecycle.maxBusy after the last activity; the condition Busy and the
 *   events KeptAwake and MaxBusyReached say so;
 * - a deadline set by someone else (an SDK's connect or set_timeout): when
 *   the provider's endAt differs from the deadline spacekeeper set, while
 *   that one has not lapsed, it is re-asserted with one Warning event
 *   DeadlineOverridden (not for providers whose deadline slides with
 *   traffic: deadline_slides).
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "../api/sandbox_values.h"
#include "../api/status.h"
#include "../api/userspace.h"
#include "observe.h"
#include "observe_int.h"
#include "options.h"
#include "plan.h"
#include "plan_int.h"
#include "reconcile_int.h"

/* A provider's deadline within this of the one spacekeeper set is the same
 * (the provider counts from when it got the call). */
#define SK_DEADLINE_SLACK_MS 5000

/* The time maxBusy counts from: the last activity, or the keeper's start. */
static int64_t
busy_base(const sk_userspace *us, const sk_sandbox *k, int64_t activity_ms)
{
	int64_t a = activity_ms > us->status.last_activity_ms ? activity_ms
	                                                      : us->status.last_activity_ms;

	return a > k->started_ms ? a : k->started_ms;
}

bool
sk_plan_busy_check(const sk_userspace *us, const sk_sandbox *k, int64_t activity_ms, int64_t now_ms,
        const sk_plan_options *opts)
{
	const sk_userspace_spec *s = &us->spec;
	int64_t ttl = sk_plan_ttl(us, opts), remaining = k->end_ms - now_ms;
	int64_t act = activity_ms > us->status.last_activity_ms ? activity_ms
	                                                        : us->status.last_activity_ms;

	if (s->busy != SK_BUSY_PROCESSES || s->idle_timeout_ms <= 0 || s->max_busy_ms <= 0 ||
	        k->state != SK_SANDBOX_RUNNING || k->end_ms <= 0)
		return false;
	/* activity that renews it anyway (keep_alive): no need to ask envd */
	if (remaining > ttl / 2 || remaining <= opts->sleep_margin_ms ||
	        act + ttl > k->end_ms + SK_RENEW_SLACK_MS)
		return false;
	return now_ms - busy_base(us, k, activity_ms) < s->max_busy_ms;
}

void
sk_plan_busy_cond(sk_pctx *c, const char *status, const char *reason, const char *fmt, ...)
{
	sk_buf b = SK_BUF_INIT(1024);
	va_list ap;

	va_start(ap, fmt);
	sk_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	free(c->busy.message);
	c->busy.status = status;
	c->busy.reason = reason;
	c->busy.message = sk_buf_detach(&b);
}

bool
sk_plan_was_busy(const sk_pctx *c)
{
	const sk_condition *b = sk_plan_prev_cond(c, SK_COND_BUSY);

	return b != NULL && sk_str_eq(b->status, "True");
}

/* lifecycle.busy: processes started through envd still run in k, within
 * maxBusy of the last activity: true with the renewal's *timeout. */
bool
sk_plan_busy(sk_pctx *c, const sk_sandbox *k, int64_t *timeout)
{
	const sk_userspace_spec *s = &c->us->spec;
	int64_t left;
	char d[32];

	if (!c->ob->procs_made || s->busy != SK_BUSY_PROCESSES)
		return false;
	sk_duration_format(s->max_busy_ms, d, sizeof(d));
	if (c->ob->procs_running == 0) {
		if (sk_plan_was_busy(c))
			sk_plan_busy_cond(c, "False", SK_REASON_NO_PROCESSES,
			        "no process started through envd runs in %s", k->id);
		return false;
	}
	left = busy_base(c->us, k, c->ob->activity_ms) + s->max_busy_ms - c->now;
	if (left <= 0) {
		if (sk_plan_was_busy(c))
			sk_plan_event(c, "Normal", SK_REASON_MAX_BUSY,
			        "sandbox %s still runs processes, but lifecycle.maxBusy (%s) after "
			        "the last activity has passed: it may sleep",
			        k->id, d);
		sk_plan_busy_cond(c, "False", SK_REASON_MAX_BUSY,
		        "processes still run in %s, but lifecycle.maxBusy (%s) after the last "
		        "activity has passed",
		        k->id, d);
		return false;
	}
	*timeout = sk_plan_ttl(c->us, c->o);
	if (left < *timeout)
		*timeout = left;
	if (!sk_plan_was_busy(c))
		sk_plan_event(c, "Normal", SK_REASON_KEPT_AWAKE,
		        "sandbox %s runs processes started through envd: kept awake past "
		        "lifecycle.idleTimeout (for at most lifecycle.maxBusy %s after the last "
		        "activity)",
		        k->id, d);
	sk_plan_busy_cond(c, "True", SK_REASON_PROCESSES_RUNNING,
	        "processes started through envd run in %s: its deadline is renewed while they "
	        "do (at most lifecycle.maxBusy %s after the last activity)",
	        k->id, d);
	return true;
}

/* The deadline spacekeeper set on k, when the provider reports another one
 * (someone else renewed it): one Warning event, and true with the
 * *timeout that puts ours back. Not while ours has lapsed (the keeper was
 * woken since, e.g. by traffic under autoResume), nor from an observation
 * older than our own setting. */
bool
sk_plan_overridden(sk_pctx *c, const sk_sandbox *k, int64_t *timeout)
{
	const sk_observed *ob = c->ob;
	int64_t seen = ob->listed_ms, diff = k->end_ms - ob->deadline_ms;
	char ours[64], theirs[64];

	if (c->hold || c->o->deadline_slides || ob->deadline_ms <= 0 ||
	        !sk_str_eq(ob->deadline_for, k->id))
		return false;
	if (ob->bound == SK_LOOKUP_FOUND && ob->bound_ms > seen)
		seen = ob->bound_ms;
	if (seen <= ob->deadline_set_ms || ob->deadline_ms <= c->now)
		return false;
	if (diff <= SK_DEADLINE_SLACK_MS && diff >= -SK_DEADLINE_SLACK_MS)
		return false;
	sk_time_format(ob->deadline_ms, ours, sizeof(ours));
	sk_time_format(k->end_ms, theirs, sizeof(theirs));
	sk_plan_event(c, "Warning", SK_REASON_DEADLINE_OVERRIDDEN,
	        "sandbox %s: the provider's deadline %s is not the %s spacekeeper set (someone "
	        "else renewed it, e.g. an SDK connect); re-asserted",
	        k->id, theirs, ours);
	*timeout = ob->deadline_ms - c->now;
	if (*timeout < 1000)
		*timeout = 1000;
	return true;
}
