/*
 * controller/capacity_quota: the SpaceQuotas' spec.hard.running at the
 * capacity gate (capacity.c calls it first, for a start and for a
 * connect's): a start beyond a quota of its tenant evicts within the
 * tenant (sk_capacity_pick_victim), waits in its provider's queue, or is
 * refused (hard.running 0; a connect with nothing to evict gets 429
 * QuotaExceeded). The tenant's use is counted from capacity's spaces,
 * under capacity->mu (capacity_int.h).
 */
#include <stdio.h>
#include <string.h>

#include "capacity_int.h"
#include "ground_int.h"
#include "http_int.h"
#include "quota_int.h"
#include "spaces_int.h"

typedef struct tenant_count {
	const sk_spacequota *q;
	const char *self;
	int running, evicting;
} tenant_count;

static void
count_tenant(const char *name, void *value, void *payload)
{
	const sk_ctl_cap_space *s = value;
	tenant_count *t = payload;

	if (strcmp(name, t->self) == 0 || !sk_spacequota_matches(t->q, &s->labels))
		return;
	t->running += s->running || s->granted;
	t->evicting += s->running && s->evicting;
}

/* Under cap->mu: whether starting us stays within every SpaceQuota's
 * spec.hard.running of its tenant (the planner's rule, the tenant as the
 * provider); else the first quota it exceeds in *which, its use in *used. */
sk_ctl_quota_verdict
sk_ctl_cap_quota_decide(sk_ctl_capacity *cap, const sk_ctl_quota_set *set, const sk_userspace *us,
        const sk_spacequota **which, int *used)
{
	for (size_t i = 0; i < set->n; i++) {
		const sk_spacequota *q = set->items[i];
		tenant_count t = { q, us->meta.name, 0, 0 };
		sk_capacity_state st = { 0 };
		sk_capacity_verdict v;
		if (q->hard_running < 0 || !sk_spacequota_matches(q, &us->meta.labels))
			continue;
		sk_strmap_foreach(cap->spaces, count_tenant, &t);
		*which = q;
		*used = t.running;
		if (q->hard_running == 0)
			return SK_CTL_QUOTA_REFUSE;
		st.max_running = (int)q->hard_running;
		st.running = t.running;
		st.evicting = t.evicting;
		v = sk_capacity_decide(&st);
		if (v != SK_CAPACITY_START)
			return v == SK_CAPACITY_EVICT ? SK_CTL_QUOTA_EVICT : SK_CTL_QUOTA_WAIT;
	}
	return SK_CTL_QUOTA_OK;
}

/* The first quota whose tenant us is in (a capacity eviction takes its
 * spaces first); NULL none. */
const sk_spacequota *
sk_ctl_cap_quota_tenant_of(const sk_ctl_quota_set *set, const sk_userspace *us)
{
	for (size_t i = 0; i < set->n; i++) {
		if (sk_spacequota_matches(set->items[i], &us->meta.labels))
			return set->items[i];
	}
	return NULL;
}

/* A start the quota holds back waits in its provider's queue, refused (a
 * slot freeing there, or the retry, asks again); a wake is asked again. */
bool
sk_ctl_cap_quota_hold(sk_controller *c, sk_ctl_cap_provider *p, const sk_userspace *us,
        bool connect, sk_ctl_quota_verdict v, const sk_spacequota *q, int used, char *why,
        size_t len)
{
	sk_ctl_capacity *cap = c->capacity;
	bool wake = connect; /* the archive's start is no connect's wake */
	char victim[256] = "", msg[256];
	size_t at;

	at = sk_ctl_cap_queue_enter(p, us->meta.name, sk_monotonic_ms() + c->cfg->resync_ms, wake);
	p->queue[at].refused = true;
	pthread_mutex_unlock(&cap->mu);
	if (v == SK_CTL_QUOTA_EVICT)
		sk_ctl_cap_evict_one(c, -1, q, NULL, false, victim, sizeof(victim), NULL);
	sk_quota_running_message(q, used, msg, sizeof(msg));
	snprintf(why, len, "%s%s%s", msg, victim[0] ? "; evicting " : "", victim);
	if (wake)
		sk_ctl_space_request(c, us->meta.name, true, false);
	sk_workqueue_add_after(c->q, us->meta.name, 1000);
	return false;
}

/* A connect's start beyond a quota's spec.hard.running with nothing in
 * the tenant to evict (and no eviction under way) is answered at once:
 * 429 naming the quota. */
bool
sk_ctl_cap_quota_admits_wake(sk_controller *c, const sk_userspace *us, sk_http_reply *r)
{
	sk_ctl_capacity *cap = c->capacity;
	sk_ctl_quota_set *set = sk_ctl_quotas_get(c);
	const sk_spacequota *q = NULL;
	sk_ctl_quota_verdict v;
	int used = 0;
	char msg[256];
	bool ok;

	pthread_mutex_lock(&cap->mu);
	v = sk_ctl_cap_quota_decide(cap, set, us, &q, &used);
	pthread_mutex_unlock(&cap->mu);
	ok = v == SK_CTL_QUOTA_OK || v == SK_CTL_QUOTA_WAIT ||
	        (v == SK_CTL_QUOTA_EVICT &&
	                sk_ctl_cap_evict_one(c, -1, q, NULL, true, NULL, 0, NULL));
	if (!ok) {
		sk_quota_running_message(q, used, msg, sizeof(msg));
		snprintf(r->retry_after, sizeof(r->retry_after), "%d", 5);
		sk_ctl_reply_error(r, 429, "QuotaExceeded", msg);
	}
	sk_ctl_quotas_put(c, set);
	return ok;
}
