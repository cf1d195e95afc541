/*
 * controller/capacity: each provider's capacity (capacity_int.h says what).
 * The decisions are the planner's (pkg/reconcile/plan_capacity.c); this
 * file keeps the state they are made on, under capacity->mu (a leaf: the
 * spaces, the workqueue and the metrics are called with it released):
 *   spaces    name -> what the last reconcile saw (provider, running, busy,
 *             always on), a start granted and not seen yet, an eviction
 *             asked and not done yet;
 *   queues    per provider, the names waiting for a slot in arrival order
 *             (a connect's own timeout bounds its place; a create at apply
 *             waits one resync period, then asks again);
 *   learned   the cap the provider's own 429 showed (what ran then), for
 *             capacity.learnedFor (5m), also when none is configured;
 *   starts    the start rate (createsPerSecond), a token bucket (sk_limiter).
 * A slot freeing (a keeper seen paused or gone, a start that failed) wakes
 * the first waiters: the connect's wake request is put back, the key queued.
 * The gate a start passes (sk_ctl_capacity_may_start) reads, decides by the
 * planner's pure sk_capacity_gate_decide (the SpaceQuotas' spec.hard.running
 * first, capacity_quota.c counts their tenants; then the cap; then the start
 * rate) and holds the decision under one capacity->mu; what it asks of
 * other spaces (a victim's pause) and of its own (a wake, a retry) waits in
 * the worker's sk_ctl_gate until the reconcile is over
 * (sk_ctl_capacity_carry_out): no other space is touched from a round.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../reconcile/capacity.h"
#include "../reconcile/plan.h"
#include "../reconcile/reconcile.h"
#include "capacity_int.h"
#include "ground_int.h"
#include "http_int.h"
#include "quota_int.h"
#include "spaces_int.h"

/* s->labels = labels (a copy), when they differ. */
static void
space_labels(sk_ctl_cap_space *s, const sk_kvlist *labels)
{
	if (sk_kvlist_equal(&s->labels, labels))
		return;
	sk_kvlist_dispose(&s->labels);
	for (size_t i = 0; i < labels->len; i++)
		sk_kvlist_set(&s->labels, labels->items[i].key, labels->items[i].value);
}

/* ---- state, under cap->mu ---- */

static sk_ctl_cap_space *
space_of(sk_ctl_capacity *cap, const char *name)
{
	sk_ctl_cap_space *s = sk_strmap_get(cap->spaces, name);

	if (s == NULL) {
		s = sk_calloc(1, sizeof(*s));
		s->prov = -1;
		sk_strmap_put(cap->spaces, name, s);
	}
	return s;
}

/* The cap in force: the configured one, lowered by the provider's 429. */
static int
effective_max(sk_ctl_cap_provider *p, int64_t mono)
{
	if (p->learned > 0 && mono >= p->learned_until)
		p->learned = 0;
	if (p->learned > 0 && (p->configured == 0 || p->learned < p->configured))
		return p->learned;
	return p->configured;
}

/* Adds (sign 1) or takes away (-1) what s counts at its provider: call
 * with -1 before changing s, with 1 after, so the counts stay O(1). */
static void
tally(sk_ctl_capacity *cap, const sk_ctl_cap_space *s, int sign)
{
	sk_ctl_cap_count *k;

	if (s->prov < 0)
		return;
	k = &cap->prov[s->prov].count;
	k->running += sign * (s->running || s->granted);
	k->awake += sign * s->running;
	k->evicting += sign * (s->running && s->evicting);
}

static sk_ctl_cap_count
count(sk_ctl_capacity *cap, int prov)
{
	return cap->prov[prov].count;
}

static ssize_t
queue_index(const sk_ctl_cap_provider *p, const char *name)
{
	for (size_t i = 0; i < p->n_queue; i++) {
		if (strcmp(p->queue[i].name, name) == 0)
			return (ssize_t)i;
	}
	return -1;
}

static void
queue_remove(sk_ctl_cap_provider *p, size_t i)
{
	free(p->queue[i].name);
	memmove(&p->queue[i], &p->queue[i + 1], (p->n_queue - i - 1) * sizeof(*p->queue));
	p->n_queue--;
}

size_t
sk_ctl_cap_queue_enter(sk_ctl_cap_provider *p, const char *name, int64_t until, bool wake)
{
	ssize_t i = queue_index(p, name);

	if (i >= 0) {
		if (until > p->queue[i].until)
			p->queue[i].until = until;
		p->queue[i].wake = p->queue[i].wake || wake;
		return (size_t)i;
	}
	if (p->n_queue == p->cap_queue) {
		p->cap_queue = p->cap_queue ? 2 * p->cap_queue : 16;
		p->queue = sk_realloc(p->queue, p->cap_queue * sizeof(*p->queue));
	}
	p->queue[p->n_queue].name = sk_strdup(name);
	p->queue[p->n_queue].until = until;
	p->queue[p->n_queue].wake = wake;
	p->queue[p->n_queue].refused = false;
	return p->n_queue++;
}

static void
queue_expire(sk_ctl_cap_provider *p, int64_t mono)
{
	for (size_t i = 0; i < p->n_queue;) {
		if (p->queue[i].until <= mono)
			queue_remove(p, i);
		else
			i++;
	}
}

/* A token of the start rate (createsPerSecond); false with *wait_ms, about
 * when the next one is due, when none is left. */
static bool
take_token(sk_ctl_cap_provider *p, int64_t *wait_ms)
{
	if (p->starts == NULL || sk_limiter_try_take(p->starts))
		return true;
	*wait_ms = (int64_t)ceil(1000.0 / p->rate);
	return false;
}

/* ---- acting, with cap->mu released ---- */

typedef struct cap_kick {
	char **names;
	bool *wake;
	size_t n;
} cap_kick;

/* The waiters whose verdict is not to wait: the first ones a free slot
 * lets start (all when there is no cap), and every one no eviction in
 * flight covers (the free slots and the evictions asked cover the first
 * ones), which asks for one. A waiter asks
 * for its eviction once, then waits for a kick; a slot taken by another
 * start (a create at apply, a start whose place went), or an eviction its
 * victim's plan declined (busy or used again), left the ones behind
 * uncovered with nobody asking: in the capacity bench 80 connects waited
 * at 0 evictions in flight, each newcomer's eviction serving the head,
 * until they timed out (504). */
static void
collect_kick(sk_ctl_capacity *cap, int prov, cap_kick *out)
{
	sk_ctl_cap_provider *p = &cap->prov[prov];
	int64_t mono = sk_monotonic_ms();
	int max = effective_max(p, mono);
	sk_ctl_cap_count k = count(cap, prov);
	sk_capacity_state st = { max, k.running, k.evicting, 0 };

	memset(out, 0, sizeof(*out));
	if (p->n_queue == 0)
		return;
	queue_expire(p, mono);
	out->names = sk_calloc(p->n_queue + 1, sizeof(char *));
	out->wake = sk_calloc(p->n_queue + 1, sizeof(bool));
	for (size_t i = 0; i < p->n_queue; i++) {
		st.position = i;
		if (sk_capacity_decide(&st) == SK_CAPACITY_WAIT)
			continue; /* an eviction in flight is for it */
		out->names[out->n] = sk_strdup(p->queue[i].name);
		out->wake[out->n++] = p->queue[i].wake;
	}
}

static void
run_kick(sk_controller *c, cap_kick *k)
{
	for (size_t i = 0; i < k->n; i++) {
		sk_ctl_log(c, SK_LOG_DEBUG, "capacity kick", "userspace=%s wake=%d", k->names[i],
		        k->wake[i]);
		if (k->wake[i])
			sk_ctl_space_request(c, k->names[i], true, false);
		sk_workqueue_add_priority(c->q, k->names[i]);
		free(k->names[i]);
	}
	free(k->names);
	free(k->wake);
}

static void
publish(sk_controller *c, int prov)
{
	sk_ctl_capacity_view v;
	char l[160];

	sk_ctl_capacity_view_of(c, (size_t)prov, &v);
	snprintf(l, sizeof(l), "provider=\"%s\"", c->cfg->providers[prov].name);
	sk_metrics_set(c->metrics, SK_CTL_METRIC_SANDBOXES_RUNNING, l, v.running);
	sk_metrics_set(c->metrics, SK_CTL_METRIC_CAPACITY_MAX, l, v.max);
	sk_metrics_set(c->metrics, SK_CTL_METRIC_QUEUE_LENGTH, l, (double)v.queued);
}

static int
prov_of(sk_controller *c, const sk_userspace *us)
{
	int prov = sk_ctl_provider_index(c, sk_bound_provider(us));

	return prov >= 0 ? prov : sk_ctl_provider_index(c, us->spec.provider);
}

/* ---- the gate: read, decide and hold, carry out ---- */

/* The awake spaces a start's eviction may pick from, by name, with their
 * last activity (the spaces part's, read with capacity->mu released). */
typedef struct gate_reads {
	sk_strmap *activity; /* name -> int64_t* */
	sk_capacity_quota_use *uses; /* room for the quota set */
	size_t n_uses;
	int prov;
} gate_reads;

typedef struct gate_names {
	const gate_reads *rd;
	char **names;
	size_t n, cap;
} gate_names;

static void
collect_name(const char *name, void *value, void *payload)
{
	const sk_ctl_cap_space *s = value;
	gate_names *g = payload;

	if (!s->running || s->granted ||
	        (s->prov != g->rd->prov && !sk_ctl_cap_in_tenants(g->rd->uses, g->rd->n_uses, s)))
		return;
	if (g->n == g->cap) {
		g->cap = g->cap ? 2 * g->cap : 32;
		g->names = sk_realloc(g->names, g->cap * sizeof(*g->names));
	}
	g->names[g->n++] = sk_strdup(name);
}

/* First step: notes the space's provider and labels, and when a cap or a
 * quota may make it evict, reads the activity of every awake space it may
 * pick (at its provider or in its tenants). */
static void
gate_read(sk_controller *c, int prov, const sk_userspace *us, const sk_ctl_quota_set *set,
        bool note, gate_reads *rd)
{
	sk_ctl_capacity *cap = c->capacity;
	gate_names g = { rd, NULL, 0, 0 };
	bool capped;

	rd->prov = prov;
	rd->activity = sk_strmap_new(free);
	rd->uses = sk_calloc(set->n + 1, sizeof(*rd->uses));
	pthread_mutex_lock(&cap->mu);
	if (note) {
		sk_ctl_cap_space *s = space_of(cap, us->meta.name);
		tally(cap, s, -1);
		s->prov = prov;
		tally(cap, s, 1);
		space_labels(s, &us->meta.labels);
	}
	rd->n_uses = sk_ctl_cap_quota_uses(cap, set, us, false, rd->uses);
	capped = effective_max(&cap->prov[prov], sk_monotonic_ms()) > 0;
	if (capped || sk_ctl_cap_quota_limits(set, us))
		sk_strmap_foreach(cap->spaces, collect_name, &g);
	pthread_mutex_unlock(&cap->mu);
	for (size_t i = 0; i < g.n; i++) {
		int64_t *a = sk_calloc(1, sizeof(*a));
		*a = sk_ctl_space_activity(c, g.names[i]);
		sk_strmap_put(rd->activity, g.names[i], a);
		free(g.names[i]);
	}
	free(g.names);
}

static void
gate_reads_dispose(gate_reads *rd)
{
	sk_strmap_free(rd->activity);
	free(rd->uses);
}

typedef struct gate_cands {
	const gate_reads *rd;
	sk_capacity_candidate *items;
	size_t n, cap;
} gate_cands;

/* An awake space read in the first step, as it is now (under cap->mu). */
static void
collect_candidate(const char *name, void *value, void *payload)
{
	const sk_ctl_cap_space *s = value;
	gate_cands *g = payload;
	const int64_t *activity = sk_strmap_get(g->rd->activity, name);
	sk_capacity_candidate *x;

	if (activity == NULL || !s->running || s->granted)
		return; /* started since (its activity not read): not this time */
	if (g->n == g->cap) {
		g->cap = g->cap ? 2 * g->cap : 32;
		g->items = sk_realloc(g->items, g->cap * sizeof(*g->items));
	}
	x = &g->items[g->n++];
	memset(x, 0, sizeof(*x));
	x->name = name; /* the map's key: valid while cap->mu is held */
	x->activity_ms = *activity;
	x->started_ms = s->started_ms;
	x->busy = s->busy;
	x->always_on = s->always_on;
	x->evicting = s->evicting;
	x->here = s->prov == g->rd->prov;
	x->labels = &s->labels;
}

/* What the decision held, for the caller's message and the asks. */
typedef struct gate_held {
	sk_capacity_gate d;
	int running, max;
	const sk_spacequota *quota; /* QUOTA: the one holding it back */
	int quota_used;
	char victim[256]; /* "" none */
	int victim_prov;
} gate_held;

/* The victim claimed for the eviction (under cap->mu): marked evicting,
 * counted at its provider. */
static void
claim_victim(sk_ctl_capacity *cap, const sk_capacity_candidate *v, gate_held *h)
{
	sk_ctl_cap_space *vs = space_of(cap, v->name);

	tally(cap, vs, -1);
	vs->evicting = true;
	tally(cap, vs, 1);
	if (vs->prov >= 0)
		cap->prov[vs->prov].evictions++;
	h->victim_prov = vs->prov;
	snprintf(h->victim, sizeof(h->victim), "%s", v->name);
}

/* The decision held (under cap->mu): a start granted, else its place in
 * the queue, refused, and the victim claimed. */
static void
hold(sk_ctl_capacity *cap, sk_ctl_cap_provider *p, const char *name, ssize_t at, int64_t mono,
        const gate_cands *g, gate_held *h)
{
	const sk_capacity_gate *d = &h->d;
	sk_ctl_cap_space *s = space_of(cap, name);

	if (d->kind == SK_GATE_START) {
		if (at >= 0)
			queue_remove(p, (size_t)at);
		tally(cap, s, -1);
		s->granted = true;
		s->stops_at_grant = p->stops;
		tally(cap, s, 1);
		return;
	}
	if (d->queue_ms > 0 || at < 0)
		at = (ssize_t)sk_ctl_cap_queue_enter(p, name, mono + d->queue_ms, d->queue_wake);
	p->queue[at].refused = true;
	if (d->victim >= 0)
		claim_victim(cap, &g->items[d->victim], h);
}

/* Second step, under cap->mu taken and released here: the figures as they
 * are now, sk_capacity_gate_decide, and (with apply) the decision held. */
static void
gate_decide(sk_controller *c, const sk_userspace *us, bool connect, const sk_ctl_quota_set *set,
        gate_reads *rd, bool apply, gate_held *h)
{
	sk_ctl_capacity *cap = c->capacity;
	sk_ctl_cap_provider *p = &cap->prov[rd->prov];
	const char *name = us->meta.name;
	int64_t mono = sk_monotonic_ms();
	gate_cands g = { rd, NULL, 0, 0 };
	sk_capacity_gate_in in = { 0 };
	sk_ctl_cap_count k;
	ssize_t at;

	memset(h, 0, sizeof(*h));
	h->victim_prov = -1;
	pthread_mutex_lock(&cap->mu);
	k = count(cap, rd->prov);
	rd->n_uses = sk_ctl_cap_quota_uses(cap, set, us, true, rd->uses);
	sk_strmap_foreach(cap->spaces, collect_candidate, &g);
	h->max = effective_max(p, mono);
	queue_expire(p, mono);
	at = queue_index(p, name);
	in.connect = connect;
	in.max_running = h->max;
	in.running = h->max > 0 ? k.running : 0;
	in.evicting = h->max > 0 ? k.evicting : 0;
	in.queued = at >= 0;
	in.position = at >= 0 ? (size_t)at : p->n_queue;
	in.queued_wake = at >= 0 && p->queue[at].wake;
	in.token = true;
	in.quotas = rd->uses;
	in.n_quotas = rd->n_uses;
	in.candidates = g.items;
	in.n_candidates = g.n;
	in.now_ms = sk_now_ms();
	in.evict_after_ms = c->cfg->providers[rd->prov].evict_after_ms;
	in.quota_evict_after_ms = c->cfg->providers[0].evict_after_ms;
	in.resync_ms = c->cfg->resync_ms;
	sk_capacity_gate_decide(&in, &h->d);
	if (apply && h->d.kind == SK_GATE_START && !take_token(p, &in.token_wait_ms)) {
		in.token = false;
		sk_capacity_gate_decide(&in, &h->d);
	}
	h->running = in.running;
	if (h->d.kind == SK_GATE_QUOTA) {
		h->quota = rd->uses[h->d.quota].quota;
		h->quota_used = rd->uses[h->d.quota].running;
	}
	if (apply)
		hold(cap, p, name, at, mono, &g, h);
	else if (h->d.victim >= 0)
		snprintf(h->victim, sizeof(h->victim), "%s", g.items[h->d.victim].name);
	pthread_mutex_unlock(&cap->mu);
	sk_ctl_log(c, SK_LOG_DEBUG, "capacity decide",
	        "userspace=%s gate=%d evict=%d victim=%s position=%zu running=%d evicting=%d "
	        "max=%d",
	        name, (int)h->d.kind, h->d.evict, h->victim, in.position, in.running, in.evicting,
	        h->max);
	free(g.items);
}

static void
gate_ask(sk_ctl_gate *g, sk_ctl_gate_ask a)
{
	if (g->n == g->cap) {
		g->cap = g->cap ? 2 * g->cap : 4;
		g->asks = sk_realloc(g->asks, g->cap * sizeof(*g->asks));
	}
	g->asks[g->n++] = a;
}

/* What the start waits for, as its condition says it. */
static void
gate_why(sk_controller *c, int prov, const gate_held *h, char *why, size_t len)
{
	const char *evicting = h->victim[0] ? "; evicting " : "";
	char msg[256];

	switch (h->d.kind) {
	case SK_GATE_QUOTA:
		sk_quota_running_message(h->quota, h->quota_used, msg, sizeof(msg));
		snprintf(why, len, "%s%s%s", msg, evicting, h->victim);
		break;
	case SK_GATE_RATE:
		snprintf(why, len, "waiting for a start at provider %s (createsPerSecond %g)",
		        c->cfg->providers[prov].name, c->capacity->prov[prov].rate);
		break;
	case SK_GATE_CAPACITY:
		snprintf(why, len, "provider %s is at capacity (%d of %d running)%s%s",
		        c->cfg->providers[prov].name, h->running, h->max, evicting, h->victim);
		break;
	case SK_GATE_START: break;
	}
}

bool
sk_ctl_capacity_may_start(void *gate, const sk_userspace *us, bool connect, char *why, size_t len)
{
	sk_ctl_gate *g = gate;
	sk_controller *c = g->c;
	int prov = prov_of(c, us);
	sk_ctl_quota_set *set;
	gate_reads rd = { 0 };
	gate_held h;

	if (prov < 0)
		return true;
	set = sk_ctl_quotas_get(c);
	gate_read(c, prov, us, set, true, &rd);
	gate_decide(c, us, connect, set, &rd, true, &h);
	gate_why(c, prov, &h, why, len);
	if (h.victim[0])
		gate_ask(g,
		        (sk_ctl_gate_ask){ .name = sk_strdup(h.victim),
		                .evict = true,
		                .prov = h.victim_prov,
		                .quota = h.d.kind == SK_GATE_QUOTA ? sk_strdup(h.quota->meta.name)
		                                                   : NULL });
	if (h.d.wake_again || h.d.retry_ms > 0)
		gate_ask(g,
		        (sk_ctl_gate_ask){ .name = sk_strdup(us->meta.name),
		                .prov = prov,
		                .wake = h.d.wake_again,
		                .after_ms = h.d.retry_ms });
	gate_reads_dispose(&rd);
	sk_ctl_quotas_put(c, set);
	if (h.d.kind == SK_GATE_CAPACITY || (h.d.kind == SK_GATE_START && h.max > 0))
		publish(c, prov);
	return h.d.kind == SK_GATE_START;
}

/* A victim's pause asked: its request (evict, under the quota named), its
 * key first in the queue, the metric. */
static void
carry_out_eviction(sk_controller *c, const sk_ctl_gate_ask *a)
{
	const char *reason = a->quota != NULL ? "quota" : "capacity";
	char l[160];

	if (a->prov >= 0) {
		snprintf(l, sizeof(l), "provider=\"%s\",reason=\"%s\"",
		        c->cfg->providers[a->prov].name, reason);
		sk_metrics_add(c->metrics, SK_CTL_METRIC_EVICTIONS, l, 1);
	}
	sk_ctl_space_request_evict(c, a->name, a->quota);
	sk_workqueue_add_priority(c->q, a->name);
	sk_ctl_log(c, SK_LOG_INFO, "evicting", "userspace=%s provider=%s reason=%s", a->name,
	        a->prov >= 0 ? c->cfg->providers[a->prov].name : "", reason);
}

void
sk_ctl_capacity_carry_out(sk_ctl_gate *g)
{
	for (size_t i = 0; i < g->n; i++) {
		sk_ctl_gate_ask *a = &g->asks[i];
		if (a->evict)
			carry_out_eviction(g->c, a);
		if (a->wake)
			sk_ctl_space_request(g->c, a->name, true, false);
		if (a->after_ms > 0)
			sk_workqueue_add_after(g->c->q, a->name, a->after_ms);
		free(a->name);
		free(a->quota);
	}
	free(g->asks);
	g->asks = NULL;
	g->n = g->cap = 0;
}

/* A connect's start beyond a quota's spec.hard.running with nothing in
 * the tenant to evict (and no eviction under way) is answered at once:
 * 429 naming the quota. */
static bool
admits_wake(sk_controller *c, int prov, const sk_userspace *us, sk_http_reply *r)
{
	sk_ctl_quota_set *set = sk_ctl_quotas_get(c);
	gate_reads rd = { 0 };
	gate_held h;
	char msg[256];
	bool ok = true;

	if (sk_ctl_cap_quota_limits(set, us)) {
		gate_read(c, prov, us, set, false, &rd);
		gate_decide(c, us, true, set, &rd, false, &h);
		ok = h.d.kind != SK_GATE_QUOTA || (!h.d.refuse && (!h.d.evict || h.d.victim >= 0));
		gate_reads_dispose(&rd);
	}
	if (!ok) {
		sk_quota_running_message(h.quota, h.quota_used, msg, sizeof(msg));
		snprintf(r->retry_after, sizeof(r->retry_after), "%d", 5);
		sk_ctl_reply_error(r, 429, "QuotaExceeded", msg);
	}
	sk_ctl_quotas_put(c, set);
	return ok;
}

/* The provider ran this many at once: its cap is at least that. A refusal
 * seen while other starts were still in flight counts fewer than ran
 * (3 of a provider's 5 on a loaded machine); what runs afterwards corrects it. */
static void
raise_learned(sk_ctl_cap_provider *p, sk_ctl_cap_count k)
{
	if (p->learned > 0 && k.awake > p->learned)
		p->learned = k.awake;
}

void
sk_ctl_capacity_note(
        sk_controller *c, const char *name, const sk_userspace *us, const sk_reconcile_report *r)
{
	sk_ctl_capacity *cap = c->capacity;
	const sk_condition *busy = sk_userspace_condition(us, SK_COND_BUSY);
	int prov = prov_of(c, us);
	cap_kick kick = { 0 };
	bool freed, rearm = false, was, evicted, s_running;
	sk_ctl_cap_space *s;
	uint64_t stopped;

	if (prov < 0)
		return;
	pthread_mutex_lock(&cap->mu);
	s = space_of(cap, name);
	stopped = s->granted && s->prov == prov ? cap->prov[prov].stops - s->stops_at_grant : 0;
	freed = s->prov != prov || (s->running && !(r->running && r->keeper_id)) ||
	        (s->granted && !r->running) || r->start_refused;
	tally(cap, s, -1);
	s->prov = prov;
	was = s->running;
	evicted = s->evicting;
	if (r->running && r->keeper_id != NULL && !s->running)
		s->started_ms = sk_now_ms();
	s->running = r->running && r->keeper_id != NULL;
	s->busy = busy != NULL && strcmp(busy->status, "True") == 0;
	s->always_on = us->spec.idle_timeout_ms <= 0;
	space_labels(s, &us->meta.labels);
	s->granted = false;
	s->evicting = false;
	s_running = s->running;
	tally(cap, s, 1);
	if (was && !s_running)
		cap->prov[prov].stops++;
	if (!r->start_refused)
		raise_learned(&cap->prov[prov], count(cap, prov));
	if (r->start_refused) {
		/* The provider's own cap: what ran when it refused (this start
		 * not counted; with none of ours running, the plan is someone
		 * else's to free); the start waits its turn, a connect's wake
		 * asked again. */
		sk_ctl_cap_provider *p = &cap->prov[prov];
		sk_ctl_cap_count k = count(cap, prov);
		int64_t mono = sk_monotonic_ms();
		size_t at;
		int learned;
		effective_max(p, mono); /* an expired one goes first */
		learned = sk_capacity_learn(p->learned, k.awake, (int)stopped);
		if (learned != p->learned) {
			p->learned = learned;
			p->learned_until = mono + p->learned_for;
		}
		at = sk_ctl_cap_queue_enter(p, name, mono + c->cfg->resync_ms, false);
		p->queue[at].refused = true;
		rearm = p->queue[at].wake;
	}
	if (freed || (evicted && s_running))
		collect_kick(cap, prov, &kick);
	pthread_mutex_unlock(&cap->mu);
	if (freed || evicted)
		sk_ctl_log(c, SK_LOG_DEBUG, "capacity note",
		        "userspace=%s freed=%d was_evicting=%d running=%d kicked=%zu", name, freed,
		        evicted, s_running, kick.n);
	if (rearm)
		sk_ctl_space_request(c, name, true, false);
	run_kick(c, &kick);
	if (freed || was != (r->running && r->keeper_id != NULL))
		publish(c, prov); /* an O(spaces) count: only on a change */
}

void
sk_ctl_capacity_forget(sk_controller *c, const char *name)
{
	sk_ctl_capacity *cap = c->capacity;
	cap_kick kick = { 0 };
	sk_ctl_cap_space *s;
	int prov = -1;

	pthread_mutex_lock(&cap->mu);
	if ((s = sk_strmap_get(cap->spaces, name)) != NULL) {
		prov = s->prov;
		if (prov >= 0 && s->running)
			cap->prov[prov].stops++;
		tally(cap, s, -1);
		sk_strmap_remove(cap->spaces, name);
	}
	for (size_t i = 0; i < cap->n_prov; i++) {
		ssize_t at = queue_index(&cap->prov[i], name);
		if (at >= 0)
			queue_remove(&cap->prov[i], (size_t)at);
	}
	if (prov >= 0)
		collect_kick(cap, prov, &kick);
	pthread_mutex_unlock(&cap->mu);
	run_kick(c, &kick);
	if (prov >= 0)
		publish(c, prov);
}

bool
sk_ctl_capacity_enter(sk_controller *c, const sk_userspace *us, int64_t deadline, sk_http_reply *r)
{
	sk_ctl_capacity *cap = c->capacity;
	int prov = prov_of(c, us), max;
	int64_t mono = sk_monotonic_ms();
	sk_ctl_cap_provider *p;
	bool full, capped;
	char msg[256];
	size_t at = 0;

	if (prov < 0)
		return true;
	if (!admits_wake(c, prov, us, r))
		return false;
	pthread_mutex_lock(&cap->mu);
	p = &cap->prov[prov];
	max = effective_max(p, mono);
	queue_expire(p, mono);
	/* no cap, no queue: the connect waits for its reconcile as always */
	capped = max > 0 || p->rate > 0;
	full = capped && queue_index(p, us->meta.name) < 0 && p->n_queue >= (size_t)p->max_queued;
	if (capped && !full)
		at = sk_ctl_cap_queue_enter(p, us->meta.name, deadline, true);
	pthread_mutex_unlock(&cap->mu);
	sk_ctl_log(c, SK_LOG_DEBUG, "capacity enter", "userspace=%s position=%zu full=%d",
	        us->meta.name, at, full);
	if (full) {
		snprintf(msg, sizeof(msg),
		        "provider %s is at capacity and %d connects wait for a slot already",
		        c->cfg->providers[prov].name, p->max_queued);
		snprintf(r->retry_after, sizeof(r->retry_after), "%d", 5);
		sk_ctl_reply_error(r, 429, "TooManyConnects", msg);
		return false;
	}
	publish(c, prov);
	return true;
}

void
sk_ctl_capacity_leave(sk_controller *c, const char *name)
{
	sk_ctl_capacity *cap = c->capacity;

	pthread_mutex_lock(&cap->mu);
	for (size_t i = 0; i < cap->n_prov; i++) {
		ssize_t at = queue_index(&cap->prov[i], name);
		if (at >= 0 && cap->prov[i].queue[at].wake)
			queue_remove(&cap->prov[i], (size_t)at);
	}
	pthread_mutex_unlock(&cap->mu);
}

bool
sk_ctl_capacity_queued(sk_controller *c, const char *name)
{
	sk_ctl_capacity *cap = c->capacity;
	bool q = false;

	pthread_mutex_lock(&cap->mu);
	for (size_t i = 0; i < cap->n_prov && !q; i++) {
		ssize_t at = queue_index(&cap->prov[i], name);
		q = at >= 0 && cap->prov[i].queue[at].refused;
	}
	pthread_mutex_unlock(&cap->mu);
	return q;
}

void
sk_ctl_capacity_view_of(sk_controller *c, size_t prov, sk_ctl_capacity_view *out)
{
	sk_ctl_capacity *cap = c->capacity;
	sk_ctl_cap_provider *p = &cap->prov[prov];

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&cap->mu);
	out->running = count(cap, (int)prov).running;
	out->max = effective_max(p, sk_monotonic_ms());
	out->configured = p->configured;
	out->queued = p->n_queue;
	out->evictions = p->evictions;
	pthread_mutex_unlock(&cap->mu);
}
