/*
 * reconcile/plan_usage: status.usage (pure). The time since the last count
 * goes to the state the previous status recorded (a sandbox ran: Creating,
 * Resuming, Running, Degraded, Migrating; it slept: Idle, Paused); creates
 * and resumes are counted from the plan's actions. The count is folded into
 * the next status only on a phase change, a create or a resume, or once
 * SK_USAGE_FOLD_MS passed: a reconcile that writes nothing else writes no
 * usage either (never a write per connect), and a reader adds the time
 * since lastUpdateTime at the current phase (sk_usage_now).
 */
#include "../api/status.h"
#include "plan.h"
#include "plan_int.h"

static int
state_of(sk_phase p)
{
	switch (p) {
	case SK_PHASE_CREATING:
	case SK_PHASE_RESUMING:
	case SK_PHASE_RUNNING:
	case SK_PHASE_DEGRADED:
	case SK_PHASE_MIGRATING: return 1;
	case SK_PHASE_IDLE:
	case SK_PHASE_PAUSED: return 2;
	default: return 0;
	}
}

void
sk_usage_advance(sk_usage *u, sk_phase phase, int64_t now_ms)
{
	int64_t delta = now_ms - u->updated_ms;

	if (u->since_ms == 0) {
		u->since_ms = u->updated_ms = now_ms;
		return;
	}
	if (delta < 1000)
		return;
	if (state_of(phase) == 1)
		u->running_s += delta / 1000;
	else if (state_of(phase) == 2)
		u->paused_s += delta / 1000;
	u->updated_ms = now_ms - delta % 1000; /* the rest counts next time */
}

void
sk_plan_usage(sk_pctx *c)
{
	const sk_usage *prev = &c->prev->usage;
	sk_usage *next = &c->r->next.usage;
	int64_t creates = 0, wakes = 0;

	*next = *prev;
	for (size_t i = 0; i < c->r->n_actions; i++) {
		creates += c->r->actions[i].type == SK_ACTION_CREATE;
		wakes += c->r->actions[i].type == SK_ACTION_CONNECT;
	}
	if (prev->since_ms != 0 && creates == 0 && wakes == 0 &&
	        state_of(c->r->next.phase) == state_of(c->prev->phase) &&
	        c->now - prev->updated_ms < SK_USAGE_FOLD_MS)
		return;
	sk_usage_advance(next, c->prev->phase, c->now);
	next->creates += creates;
	next->wakes += wakes;
}
