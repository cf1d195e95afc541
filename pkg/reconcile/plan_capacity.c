/*
 * reconcile/plan_capacity: what a provider's capacity (providers[].capacity,
 * or the provider's own 429) decides, pure and table-tested
 * (test/unit/check_plan_capacity.c):
 *   sk_capacity_decide       a start (create or wake) at a provider: start
 *                            now, evict one more awake space first, or wait
 *                            its turn in the FIFO queue;
 *   sk_capacity_learn        the cap a provider's own 429 shows;
 *   sk_capacity_pick_victim  which awake space to evict: the one whose last
 *                            activity is oldest, never a busy, always-on,
 *                            just-connected or already evicting one; within
 *                            the quota tenant first when one is named;
 *   sk_capacity_retry_ms     when a start with none to evict asks again;
 *   sk_capacity_gate_decide  one start at the controller's gate: the
 *                            SpaceQuotas' spec.hard.running, the cap, the
 *                            start rate; whom to evict; its place in the
 *                            queue and when it asks again;
 *   sk_plan_evict            the evicted space's own plan: pause its keeper
 *                            (phase Idle; a connect wakes it again), unless
 *                            it became busy or active meanwhile;
 *   sk_plan_capacity_wait    a create that waits for a slot.
 */
#include <stdlib.h>
#include <string.h>

#include "../api/sandbox_values.h"
#include "../api/status.h"
#include "../api/userspace.h"
#include "capacity.h"
#include "plan.h"
#include "plan_int.h"
#include "reconcile_int.h"

sk_capacity_verdict
sk_capacity_decide(const sk_capacity_state *s)
{
	int free_slots = s->max_running - s->running;

	if (s->max_running <= 0 || (int64_t)s->position < free_slots)
		return SK_CAPACITY_START;
	/* Every waiter up to this one needs a slot: one eviction each, those
	 * already asked for included. */
	if ((int64_t)s->position + 1 - free_slots > s->evicting)
		return SK_CAPACITY_EVICT;
	return SK_CAPACITY_WAIT;
}

int
sk_capacity_learn(int learned, int awake, int stopped)
{
	int ran = awake + stopped;

	/* Counting only the awake ones, a refusal noted after the pause of the
	 * eviction it waited for dropped the cap below the provider's (3 -> 2
	 * in the capacity suite), and nothing ran beyond it to raise it again
	 * for learnedFor: one eviction more for every start meanwhile. */
	if (ran <= 0 || (learned > 0 && ran >= learned))
		return learned;
	return ran;
}

/* The time a space was last used: its activity, else when it started. */
static int64_t
last_used(const sk_capacity_candidate *c)
{
	return c->activity_ms > c->started_ms ? c->activity_ms : c->started_ms;
}

/* The time a space was last connected to, as evictAfter counts it: its
 * activity, or when it started after that activity (a connect that waited
 * in the queue longer than evictAfter woke a space whose activity was
 * already old: it was evicted a few seconds after its wake, before its
 * user's next heartbeat, and woken again: in the capacity bench 386 wakes
 * and 390 evictions for 361 sessions); 0: never (a start alone does not
 * count: nobody waits for a space created at apply). */
static int64_t
last_connect(const sk_capacity_candidate *c)
{
	return c->activity_ms > 0 && c->started_ms > c->activity_ms ? c->started_ms
	                                                            : c->activity_ms;
}

static bool
evictable(const sk_capacity_candidate *c, int64_t now_ms, int64_t recent_ms)
{
	return !c->busy && !c->always_on && !c->evicting && now_ms - last_connect(c) >= recent_ms;
}

static bool
older(const sk_capacity_candidate *a, const sk_capacity_candidate *b)
{
	int64_t ua = last_used(a), ub = last_used(b);

	return ua < ub || (ua == ub && strcmp(a->name, b->name) < 0);
}

int
sk_capacity_pick_victim(const sk_capacity_candidate *c, size_t n, const char *tenant,
        int64_t now_ms, int64_t recent_ms)
{
	int best = -1;
	bool best_in = false;

	for (size_t i = 0; i < n; i++) {
		bool in = tenant != NULL && sk_str_eq(c[i].tenant, tenant);
		if (!evictable(&c[i], now_ms, recent_ms))
			continue;
		if (best < 0 || (in && !best_in) || (in == best_in && older(&c[i], &c[best]))) {
			best = (int)i;
			best_in = in;
		}
	}
	return best;
}

int64_t
sk_capacity_retry_ms(const sk_capacity_candidate *c, size_t n, int64_t now_ms, int64_t recent_ms)
{
	int64_t next = 0;

	for (size_t i = 0; i < n; i++) {
		int64_t due = last_connect(&c[i]) + recent_ms - now_ms;
		if (!c[i].busy && !c[i].always_on && !c[i].evicting && due > 0 &&
		        (next == 0 || due < next))
			next = due;
	}
	/* none due: every awake space is busy, evicting, or a start not seen
	 * yet (not a candidate; a burst's): those may be in recent_ms */
	return next > 0 ? next : recent_ms > 0 ? recent_ms : 1000;
}

/* ---- the gate: one start, decided ---- */

static bool
in_tenant(const sk_spacequota *q, const sk_capacity_candidate *c)
{
	return q != NULL && c->labels != NULL && sk_spacequota_matches(q, c->labels);
}

/* The space to pause: within only's tenant (a quota's eviction, any
 * provider), else at the provider with prefer's tenant first; -1 none,
 * with *retry_ms (may be NULL) when the first may be. */
static int
gate_victim(const sk_capacity_gate_in *in, const sk_spacequota *only, const sk_spacequota *prefer,
        int64_t recent_ms, int64_t *retry_ms)
{
	sk_capacity_candidate *pool = sk_calloc(in->n_candidates + 1, sizeof(*pool));
	size_t *from = sk_calloc(in->n_candidates + 1, sizeof(*from));
	size_t n = 0;
	int i;

	if (only != NULL)
		prefer = only;
	for (size_t j = 0; j < in->n_candidates; j++) {
		const sk_capacity_candidate *x = &in->candidates[j];
		if (only != NULL ? !in_tenant(only, x) : !x->here)
			continue;
		pool[n] = *x;
		pool[n].tenant = in_tenant(prefer, x) ? prefer->meta.name : NULL;
		from[n++] = j;
	}
	i = sk_capacity_pick_victim(
	        pool, n, prefer != NULL ? prefer->meta.name : NULL, in->now_ms, recent_ms);
	if (retry_ms != NULL)
		*retry_ms = i >= 0 ? 0 : sk_capacity_retry_ms(pool, n, in->now_ms, recent_ms);
	i = i >= 0 ? (int)from[i] : -1;
	free(pool);
	free(from);
	return i;
}

/* The first SpaceQuota whose spec.hard.running the start would exceed;
 * false: none. */
static bool
gate_quota(const sk_capacity_gate_in *in, sk_capacity_gate *out)
{
	for (size_t i = 0; i < in->n_quotas; i++) {
		const sk_capacity_quota_use *u = &in->quotas[i];
		sk_capacity_state st = { (int)u->quota->hard_running, u->running, u->evicting, 0 };
		sk_capacity_verdict v;
		if (u->quota->hard_running < 0)
			continue;
		v = u->quota->hard_running == 0 ? SK_CAPACITY_WAIT : sk_capacity_decide(&st);
		if (v == SK_CAPACITY_START)
			continue;
		out->kind = SK_GATE_QUOTA;
		out->quota = i;
		out->refuse = u->quota->hard_running == 0;
		out->evict = v == SK_CAPACITY_EVICT;
		if (out->evict)
			out->victim =
			        gate_victim(in, u->quota, NULL, in->quota_evict_after_ms, NULL);
		out->queue_ms = in->resync_ms;
		out->queue_wake = in->connect; /* the archive's start is no connect's wake */
		out->wake_again = in->connect;
		out->retry_ms = SK_CAPACITY_QUOTA_RETRY_MS;
		return true;
	}
	return false;
}

void
sk_capacity_gate_decide(const sk_capacity_gate_in *in, sk_capacity_gate *out)
{
	sk_capacity_state st = { in->max_running, in->running, in->evicting, in->position };
	sk_capacity_verdict v = SK_CAPACITY_START;
	bool wake;

	memset(out, 0, sizeof(*out));
	out->victim = -1;
	if (gate_quota(in, out))
		return;
	if (in->max_running > 0)
		v = sk_capacity_decide(&st);
	if (v == SK_CAPACITY_START && !in->token) {
		/* its turn comes with the next token: a connect's wake again */
		out->kind = SK_GATE_RATE;
		out->queue_ms = in->token_wait_ms + in->resync_ms;
		out->wake_again = in->queued && in->queued_wake;
		out->retry_ms = in->token_wait_ms;
		return;
	}
	if (v == SK_CAPACITY_START)
		return;
	/* Not queued yet: a create at apply, the archive's wake, or a connect's
	 * wake whose place went (granted, then not started). Only a connect's
	 * is put back as a wake when its turn comes: the archive's, put back so,
	 * was a connect (the archive given up, its space awake for an idle
	 * timeout, evicted for the next archive and so on, none archived). */
	out->kind = SK_GATE_CAPACITY;
	if (!in->queued) {
		out->queue_ms = in->resync_ms + SK_CAPACITY_CREATE_WAIT_EXTRA_MS;
		out->queue_wake = in->connect;
	}
	wake = in->queued ? in->queued_wake : in->connect;
	out->evict = v == SK_CAPACITY_EVICT;
	if (!out->evict)
		return;
	out->victim = gate_victim(in, NULL, in->n_quotas > 0 ? in->quotas[0].quota : NULL,
	        in->evict_after_ms, &out->retry_ms);
	if (out->victim < 0) {
		/* nothing to evict yet: ask again when the first may be (no slot
		 * frees to kick this start meanwhile: it would wait out its connect) */
		out->retry_ms += 10;
		out->wake_again = wake;
	}
}

/* ---- the evicted space's plan ---- */

/* Where the eviction frees a slot, as the event and the condition say it:
 * under the SpaceQuota that asked for it (metric reason "quota"), else at
 * the provider (reason "capacity"). */
static void
evict_where(const sk_pctx *c, char *out, size_t len)
{
	if (c->ob->evict_quota != NULL)
		snprintf(out, len, "under SpaceQuota %s", c->ob->evict_quota);
	else
		snprintf(out, len, "at provider %s", sk_bound_provider(c->us));
}

bool
sk_plan_evict(sk_pctx *c, const sk_sandbox *k)
{
	int64_t act = c->ob->activity_ms > c->prev->last_activity_ms ? c->ob->activity_ms
	                                                             : c->prev->last_activity_ms;
	bool busy = sk_plan_was_busy(c) || (c->ob->procs_made && c->ob->procs_running > 0);
	char where[320];

	if (!c->ob->evict || c->hold || k->state != SK_SANDBOX_RUNNING ||
	        c->us->spec.mode != SK_MODE_RUNNING || c->us->spec.idle_timeout_ms <= 0 || busy ||
	        c->now - act < c->o->evict_after_ms)
		return false;
	sk_plan_push(c, SK_ACTION_PAUSE, k->id);
	c->r->next.phase = SK_PHASE_IDLE;
	evict_where(c, where, sizeof(where));
	sk_plan_cond(c, SK_C_READY, "True", SK_REASON_IDLE,
	        "sandbox %s was paused to free a slot %s; a connect resumes it", k->id, where);
	sk_plan_cond(c, SK_C_DATAPLANE, "Unknown", SK_REASON_IDLE, "sandbox is asleep");
	sk_plan_event(c, "Normal", SK_REASON_EVICTED,
	        "paused sandbox %s to free a slot %s (the oldest activity)", k->id, where);
	return true;
}

void
sk_plan_capacity_wait(sk_pctx *c)
{
	c->r->next.phase = SK_PHASE_PENDING;
	sk_plan_cond(c, SK_C_READY, "False", SK_REASON_WAITING_FOR_CAPACITY, "%s",
	        c->ob->capacity_message ? c->ob->capacity_message
	                                : "waiting for a free slot at the provider");
	sk_plan_cond(c, SK_C_DATAPLANE, "Unknown", SK_REASON_NO_SANDBOX, "no sandbox");
}
