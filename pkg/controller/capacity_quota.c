/*
 * controller/capacity_quota: the SpaceQuotas at the capacity gate: which
 * quotas' tenant a starting space is in and each tenant's use, counted from
 * capacity's spaces under capacity->mu (capacity_int.h). What they decide
 * (evict within the tenant, wait in the provider's queue, or refuse;
 * a connect with nothing to evict gets 429 QuotaExceeded) is the planner's
 * pure sk_capacity_gate_decide, carried out by capacity.c.
 */
#include <string.h>

#include "../reconcile/capacity.h"
#include "capacity_int.h"
#include "ground_int.h"
#include "quota_int.h"

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

size_t
sk_ctl_cap_quota_uses(sk_ctl_capacity *cap, const sk_ctl_quota_set *set, const sk_userspace *us,
        bool count, sk_capacity_quota_use *out)
{
	size_t n = 0;

	for (size_t i = 0; i < set->n; i++) {
		const sk_spacequota *q = set->items[i];
		tenant_count t = { q, us->meta.name, 0, 0 };
		if (!sk_spacequota_matches(q, &us->meta.labels))
			continue;
		if (count && q->hard_running >= 0) /* no limit: its tenant alone counts */
			sk_strmap_foreach(cap->spaces, count_tenant, &t);
		out[n].quota = q;
		out[n].running = t.running;
		out[n++].evicting = t.evicting;
	}
	return n;
}

bool
sk_ctl_cap_quota_limits(const sk_ctl_quota_set *set, const sk_userspace *us)
{
	for (size_t i = 0; i < set->n; i++) {
		if (set->items[i]->hard_running >= 0 &&
		        sk_spacequota_matches(set->items[i], &us->meta.labels))
			return true;
	}
	return false;
}

bool
sk_ctl_cap_in_tenants(const sk_capacity_quota_use *uses, size_t n, const sk_ctl_cap_space *s)
{
	for (size_t i = 0; i < n; i++) {
		if (sk_spacequota_matches(uses[i].quota, &s->labels))
			return true;
	}
	return false;
}
