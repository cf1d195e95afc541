/*
 * controller/capacity_setup: each provider's capacity made from its config
 * (the cap, the start rate, the queue's bound, its metrics declared at zero),
 * and freed.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../util/util.h"
#include "capacity_int.h"
#include "ground_int.h"

static void
space_free(void *p)
{
	sk_ctl_cap_space *s = p;

	sk_kvlist_dispose(&s->labels);
	free(s);
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
