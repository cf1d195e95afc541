/*
 * reconcile/options: what the planner and the observer are told by the
 * configuration (sk_plan_options): timeouts, graces, probing, the optional
 * features (markers, live network, archive).
 */
#ifndef SK_RECONCILE_OPTIONS_H
#define SK_RECONCILE_OPTIONS_H

#include "../api/config.h"
#include "../sandbox/sandbox.h"
#include "../util/util.h"

typedef struct sk_plan_options {
	int64_t sandbox_timeout_ms; /* provider TTL set on create/connect/set_timeout (1h) */
	int64_t resume_grace_ms; /* 502/503/504 after a create/resume is transient (20s) */
	int64_t create_grace_ms; /* wait before re-creating after an unfinished create (30s) */
	int64_t resync_ms; /* longest requeue (30s) */
	int64_t short_requeue_ms; /* after create/connect, to probe (2s) */
	int64_t min_requeue_ms; /* shortest requeue (1s) */
	bool probe; /* probe the data plane of the running keeper (true) */
	size_t max_probes; /* unbound: running candidates probed at most (3) */
	bool delete_orphans; /* false */
	int64_t orphan_grace_ms; /* 10m */
	/* How long a healthy probe answers a connect from memory (10s; from a
	 * config: 1.5 resync periods); see
	 * sk_connect_decide. */
	int64_t probe_fresh_ms;
	/* A running sandbox this close to its deadline (or past it) may be
	 * asleep: its data plane is not probed, since traffic would wake it
	 * (autoResume); the control plane is asked instead (2s). */
	int64_t sleep_margin_ms;
	/* The provider moves a sandbox's deadline on data-plane traffic (Cube's
	 * idle window): a deadline other than the one set is not an override. */
	bool deadline_slides;
	/* providers[].capacity.evictAfter: a space connected to within this
	 * long is never evicted (1m). */
	int64_t evict_after_ms;
	/* The workspace marker (plan_workspace.c): written at create, read back
	 * after every resume; a bound sandbox gone is a lost workspace. On from
	 * a config (the providers' data planes have files); off by default. */
	bool markers;
	/* The provider changes a live sandbox's network policy (E2B): a change
	 * of spec.network is applied in place, else by migration or reported. */
	bool network_live;
	/* An archive is configured (the ControllerConfig's archive): asleep
	 * spaces are archived after spec.lifecycle.archiveAfter, or before the
	 * provider's pausedRetention (paused_retention_ms, 0: none) deletes
	 * their paused sandbox (plan_archive.c). */
	bool archive;
	int64_t paused_retention_ms;
	/* The provider keeps persistent snapshots (E2B): an archive with
	 * spec.lifecycle.archive.method Snapshot keeps one instead of copying
	 * files, and needs no archive configured. */
	bool snapshots;
} sk_plan_options;

void sk_plan_options_init(sk_plan_options *o);
/* Defaults, then the provider entry's TTL/orphan settings and the resync period
 * (resync_ms 0 keeps the default). The create grace is the provider's request
 * timeout plus 5 s. */
void sk_plan_options_from_config(
        sk_plan_options *o, const sk_provider_config *pc, int64_t resync_ms);

#endif
