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
 * The SpaceQuotas' spec.hard.running, asked first, are capacity_quota.c's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capacity_int.h"
#include "ground_int.h"
#include "http_int.h"
#include "quota_int.h"
#include "spaces_int.h"

/* A create at apply waits this long beyond a resync for its turn. */
#define CREATE_WAIT_EXTRA_MS 5000

static void
space_free(void *p)
{
	sk_ctl_cap_space *s = p;

	sk_kvlist_dispose(&s->labels);
	free(s);
}

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

sk_ctl_capacity *
sk_ctl_capacity_new(sk_controller *c)
{
	sk_ctl_capacity *cap = sk_calloc(1, sizeof(*cap));
	char l[160];

	pthread_mutex_init(&cap->mu, NULL);
	cap->spaces = sk_strmap_new(space_free);
	cap->n_prov = c->n_prov;
	cap->prov = sk_calloc(c->n_prov + 1, sizeof(*cap->prov));
	sk_metrics_declare(c->metrics, SK_CTL_METRIC_SANDBOXES_RUNNING, SK_METRIC_GAUGE,
	        "Sandboxes running per provider, as the controller's reconciles saw them");
	sk_metrics_declare(c->metrics, SK_CTL_METRIC_CAPACITY_MAX, SK_METRIC_GAUGE,
	        "Running sandboxes a provider allows (capacity.maxRunning, or what its 429 "
	        "showed; 0: unlimited)");
	sk_metrics_declare(c->metrics, SK_CTL_METRIC_QUEUE_LENGTH, SK_METRIC_GAUGE,
	        "Starts (connects and creates) waiting for a slot at a provider");
	sk_metrics_declare(c->metrics, SK_CTL_METRIC_EVICTIONS, SK_METRIC_COUNTER,
	        "Awake spaces paused to free a slot, by provider and reason");
	for (size_t i = 0; i < c->n_prov; i++) {
		const sk_provider_config *pc = &c->cfg->providers[i];
		sk_ctl_cap_provider *p = &cap->prov[i];
		p->configured = pc->max_running;
		p->rate = pc->creates_per_second;
		if (p->rate > 0) {
			sk_limiter_options lo = SK_LIMITER_OPTIONS_INIT;
			lo.qps = p->rate;
			lo.burst = p->rate > 1 ? (int)p->rate : 1;
			p->starts = sk_limiter_new(&lo);
		}
		p->max_queued = pc->max_queued;
		p->learned_for = pc->learned_for_ms;
		snprintf(l, sizeof(l), "provider=\"%s\"", pc->name);
		sk_metrics_set(c->metrics, SK_CTL_METRIC_SANDBOXES_RUNNING, l, 0);
		sk_metrics_set(c->metrics, SK_CTL_METRIC_CAPACITY_MAX, l, p->configured);
		sk_metrics_set(c->metrics, SK_CTL_METRIC_QUEUE_LENGTH, l, 0);
		snprintf(l, sizeof(l), "provider=\"%s\",reason=\"capacity\"", pc->name);
		sk_metrics_add(c->metrics, SK_CTL_METRIC_EVICTIONS, l, 0);
		snprintf(l, sizeof(l), "provider=\"%s\",reason=\"quota\"", pc->name);
		sk_metrics_add(c->metrics, SK_CTL_METRIC_EVICTIONS, l, 0);
	}
	return cap;
}

void
sk_ctl_capacity_free(sk_ctl_capacity *cap)
{
	if (cap == NULL)
		return;
	for (size_t i = 0; i < cap->n_prov; i++) {
		for (size_t j = 0; j < cap->prov[i].n_queue; j++)
			free(cap->prov[i].queue[j].name);
		free(cap->prov[i].queue);
		sk_limiter_free(cap->prov[i].starts);
	}
	free(cap->prov);
	sk_strmap_free(cap->spaces);
	pthread_mutex_destroy(&cap->mu);
	free(cap);
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

typedef struct cap_pick {
	int prov; /* -1: any provider */
	const sk_spacequota *only; /* a quota's tenant only; NULL: any space */
	const sk_spacequota *prefer; /* its tenant first (the candidates' tenant); NULL none */
	sk_capacity_candidate *items;
	size_t n, cap;
} cap_pick;

static void
collect_candidate(const char *name, void *value, void *payload)
{
	const sk_ctl_cap_space *s = value;
	cap_pick *pk = payload;
	sk_capacity_candidate *x;

	if ((pk->prov >= 0 && s->prov != pk->prov) || !s->running || s->granted ||
	        (pk->only != NULL && !sk_spacequota_matches(pk->only, &s->labels)))
		return;
	if (pk->n == pk->cap) {
		pk->cap = pk->cap ? 2 * pk->cap : 32;
		pk->items = sk_realloc(pk->items, pk->cap * sizeof(*pk->items));
	}
	x = &pk->items[pk->n++];
	memset(x, 0, sizeof(*x));
	x->name = sk_strdup(name);
	x->busy = s->busy;
	x->always_on = s->always_on;
	x->evicting = s->evicting;
	x->started_ms = s->started_ms;
	if (pk->prefer != NULL && sk_spacequota_matches(pk->prefer, &s->labels))
		x->tenant = pk->prefer->meta.name;
}

/* Asks the victim (at its provider) to pause, under the SpaceQuota quota
 * (metric reason "quota") or for its provider's capacity (quota NULL,
 * reason "capacity"); false when another start claimed it first (it is
 * evicting already, or not running: two waiters polling at once pick the
 * same oldest space from their snapshots, and one eviction must not count
 * for two). */
static bool
evict(sk_controller *c, const char *victim, const sk_spacequota *quota)
{
	const char *reason = quota != NULL ? "quota" : "capacity";
	sk_ctl_capacity *cap = c->capacity;
	sk_ctl_cap_space *vs;
	char l[160];
	int prov;

	pthread_mutex_lock(&cap->mu);
	vs = space_of(cap, victim);
	if (vs->evicting || !vs->running || vs->granted) {
		pthread_mutex_unlock(&cap->mu);
		return false;
	}
	tally(cap, vs, -1);
	vs->evicting = true;
	tally(cap, vs, 1);
	prov = vs->prov;
	if (prov >= 0)
		cap->prov[prov].evictions++;
	pthread_mutex_unlock(&cap->mu);
	if (prov >= 0) {
		snprintf(l, sizeof(l), "provider=\"%s\",reason=\"%s\"",
		        c->cfg->providers[prov].name, reason);
		sk_metrics_add(c->metrics, SK_CTL_METRIC_EVICTIONS, l, 1);
	}
	sk_ctl_space_request_evict(c, victim, quota != NULL ? quota->meta.name : NULL);
	sk_workqueue_add_priority(c->q, victim);
	sk_ctl_log(c, SK_LOG_INFO, "evicting", "userspace=%s provider=%s reason=%s", victim,
	        prov >= 0 ? c->cfg->providers[prov].name : "", reason);
	return true;
}

/* evictAfter is the space's provider's. */
bool
sk_ctl_cap_evict_one(sk_controller *c, int prov, const sk_spacequota *only,
        const sk_spacequota *prefer, bool dry, char *victim, size_t len, int64_t *next_ms)
{
	sk_ctl_capacity *cap = c->capacity;
	cap_pick pk = { prov, only, only != NULL ? only : prefer, NULL, 0, 0 };
	int64_t now = sk_now_ms(), recent = c->cfg->providers[prov >= 0 ? prov : 0].evict_after_ms;
	int i;

	pthread_mutex_lock(&cap->mu);
	sk_strmap_foreach(cap->spaces, collect_candidate, &pk);
	pthread_mutex_unlock(&cap->mu);
	for (size_t j = 0; j < pk.n; j++)
		pk.items[j].activity_ms = sk_ctl_space_activity(c, pk.items[j].name);
	/* the next oldest when another start claimed the pick meanwhile */
	while ((i = sk_capacity_pick_victim(pk.items, pk.n, pk.prefer ? pk.prefer->meta.name : NULL,
	                now, recent)) >= 0 &&
	        !dry && !evict(c, pk.items[i].name, only))
		pk.items[i].evicting = true;
	if (i >= 0 && !dry)
		snprintf(victim, len, "%s", pk.items[i].name);
	if (next_ms != NULL)
		*next_ms = i >= 0 ? 0 : sk_capacity_retry_ms(pk.items, pk.n, now, recent);
	for (size_t j = 0; j < pk.n; j++)
		free((char *)pk.items[j].name);
	free(pk.items);
	return i >= 0;
}

static int
prov_of(sk_controller *c, const sk_userspace *us)
{
	int prov = sk_ctl_provider_index(c, sk_bound_provider(us));

	return prov >= 0 ? prov : sk_ctl_provider_index(c, us->spec.provider);
}

bool
sk_ctl_capacity_may_start(
        void *controller, const sk_userspace *us, bool connect, char *why, size_t len)
{
	sk_controller *c = controller;
	sk_ctl_capacity *cap = c->capacity;
	const char *name = us->meta.name;
	int prov = prov_of(c, us), max;
	int64_t mono = sk_monotonic_ms(), wait_ms = 0;
	sk_capacity_verdict v = SK_CAPACITY_START;
	sk_capacity_state st = { 0 };
	sk_ctl_cap_provider *p;
	sk_ctl_cap_count k;
	char victim[256] = "";
	sk_ctl_cap_space *s;
	ssize_t at;
	sk_ctl_quota_set *set;
	const sk_spacequota *q = NULL;
	sk_ctl_quota_verdict qv;
	int qused = 0;
	int64_t next_ms = 0;
	bool ok, wake_again;

	if (prov < 0)
		return true;
	set = sk_ctl_quotas_get(c);
	pthread_mutex_lock(&cap->mu);
	p = &cap->prov[prov];
	s = space_of(cap, name);
	tally(cap, s, -1);
	s->prov = prov;
	tally(cap, s, 1);
	space_labels(s, &us->meta.labels);
	if ((qv = sk_ctl_cap_quota_decide(cap, set, us, &q, &qused)) != SK_CTL_QUOTA_OK) {
		ok = sk_ctl_cap_quota_hold(c, p, us, connect, qv, q, qused, why, len);
		sk_ctl_quotas_put(c, set);
		return ok;
	}
	max = effective_max(p, mono);
	queue_expire(p, mono);
	at = queue_index(p, name);
	if (max > 0) {
		k = count(cap, prov);
		st.max_running = max;
		st.running = k.running;
		st.evicting = k.evicting;
		st.position = at >= 0 ? (size_t)at : p->n_queue;
		v = sk_capacity_decide(&st);
	}
	sk_ctl_log(c, SK_LOG_DEBUG, "capacity decide",
	        "userspace=%s verdict=%d position=%zu queued=%zu running=%d evicting=%d max=%d",
	        name, (int)v, st.position, p->n_queue, st.running, st.evicting, max);
	if (v == SK_CAPACITY_START && !take_token(p, &wait_ms)) {
		bool wake;
		at = (ssize_t)sk_ctl_cap_queue_enter(
		        p, name, mono + wait_ms + c->cfg->resync_ms, false);
		p->queue[at].refused = true;
		wake = p->queue[at].wake;
		pthread_mutex_unlock(&cap->mu);
		snprintf(why, len, "waiting for a start at provider %s (createsPerSecond %g)",
		        c->cfg->providers[prov].name, p->rate);
		if (wake) /* its turn comes with the next token: the connect's wake again */
			sk_ctl_space_request(c, name, true, false);
		sk_workqueue_add_after(c->q, name, wait_ms);
		sk_ctl_quotas_put(c, set);
		return false;
	}
	if (v == SK_CAPACITY_START) {
		if (at >= 0)
			queue_remove(p, (size_t)at);
		tally(cap, s, -1);
		s->granted = true;
		s->stops_at_grant = p->stops;
		tally(cap, s, 1);
		pthread_mutex_unlock(&cap->mu);
		if (max > 0)
			publish(c, prov);
		sk_ctl_quotas_put(c, set);
		return true;
	}
	/* Not queued yet: a create at apply, the archive's wake, or a connect's
	 * wake whose place went (granted, then not started). Only a connect's
	 * is put back as a wake when its turn comes: the archive's, put back so,
	 * was a connect (the archive given up, its space awake for an idle
	 * timeout, evicted for the next archive and so on, none archived). */
	if (at < 0)
		at = (ssize_t)sk_ctl_cap_queue_enter(
		        p, name, mono + c->cfg->resync_ms + CREATE_WAIT_EXTRA_MS, connect);
	p->queue[at].refused = true;
	wake_again = p->queue[at].wake;
	pthread_mutex_unlock(&cap->mu);
	if (v == SK_CAPACITY_EVICT &&
	        !sk_ctl_cap_evict_one(c, prov, NULL, sk_ctl_cap_quota_tenant_of(set, us), false,
	                victim, sizeof(victim), &next_ms)) {
		/* nothing to evict yet: ask again when the first may be (no slot
		 * frees to kick this start meanwhile: it would wait out its connect) */
		if (wake_again)
			sk_ctl_space_request(c, name, true, false);
		sk_workqueue_add_after(c->q, name, next_ms + 10);
	}
	sk_ctl_quotas_put(c, set);
	snprintf(why, len, "provider %s is at capacity (%d of %d running)%s%s",
	        c->cfg->providers[prov].name, st.running, max, victim[0] ? "; evicting " : "",
	        victim);
	publish(c, prov);
	return false;
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
	if (!sk_ctl_cap_quota_admits_wake(c, us, r))
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
