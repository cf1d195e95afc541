/*
 * reconcile/observe: the observed state of one UserSpace (sk_observed) and
 * how it is gathered (sk_observe): the controller's last list, direct
 * lookups where absence would lead to a create, the data-plane probes, and
 * what the controller remembers of the keeper (sk_keeper_known).
 */
#ifndef SK_RECONCILE_OBSERVE_H
#define SK_RECONCILE_OBSERVE_H

#include "../api/sandbox_values.h"
#include "../api/userspace.h"
#include "../sandbox/sandbox.h"
#include "../util/util.h"
#include "options.h"

/* The controller's view of one user's sandboxes from its last provider list. */
typedef struct sk_list_view {
	const sk_sandbox_list *for_user; /* managed sandboxes tagged user_id; NULL: none */
	bool valid; /* the last list call succeeded (every page) */
	int64_t listed_ms; /* when that list call started; 0 unknown */
} sk_list_view;

typedef enum sk_lookup {
	SK_LOOKUP_NONE, /* not made */
	SK_LOOKUP_FOUND, /* answered, the object exists */
	SK_LOOKUP_NOT_FOUND, /* answered 404 / none matched (confirmed absence) */
	SK_LOOKUP_ERROR, /* failed (transient or not): proves nothing */
} sk_lookup;

typedef struct sk_probe {
	char *sandbox_id;
	bool made; /* false: could not probe (error) */
	sk_health health;
	int http_status;
	int64_t probed_ms;
	int error_code; /* when !made */
} sk_probe;

/* How observe learns the bound keeper's state (sk_plan_look, pure). */
typedef enum sk_look {
	SK_LOOK_NONE, /* nothing bound */
	SK_LOOK_LIST, /* the list saw it after the last provider change and our last look */
	SK_LOOK_KNOWN, /* the controller's own look is fresh and newer: as known, no GET */
	/* known to exist, at or near its deadline, no renewal wanted or a
	 * connect waits: state unknown, not asked (a waiting connect's resume
	 * answers and acts: one call instead of a GET and a resume) */
	SK_LOOK_ASLEEP_MAYBE,
	SK_LOOK_GET, /* doubt: ask the control plane */
} sk_look;

typedef struct sk_observed {
	/* The user's managed sandboxes (list + direct answers), one per id, no GONE. */
	sk_sandbox_list sandboxes;
	bool list_valid;
	int64_t listed_ms;
	/* Direct GET of status.sandboxID (made when the list lacks it). */
	sk_lookup bound;
	sk_error bound_error;
	/* Direct list by user_id (deletion, or phase Creating with nothing bound). */
	sk_lookup user;
	int64_t user_ms; /* when the lookup started */
	sk_error user_error;
	/* Data-plane probes (the keeper, or running candidates when unbound). */
	sk_probe *probes;
	size_t n_probes;
	/* The controller's memory of the user (rule 3, 9): the last connect or
	 * heartbeat (wall ms, 0 none), a connect waiting for the space (wake an
	 * Idle keeper), and a connect that found the keeper's data plane
	 * unreachable (Replace at once, not after health.unhealthyAfter). */
	int64_t activity_ms;
	bool wake;
	bool replace_now;
	/* When the direct GET of the bound sandbox was made (0: not made). */
	int64_t bound_ms;
	/* The keeper's envd process list (lifecycle.busy), made only when
	 * sk_plan_busy_check asks for it: procs_made false when not made or it
	 * failed (procs_error). */
	bool procs_made;
	int procs_running;
	int procs_error;
	/* The deadline spacekeeper last set on deadline_for (the controller's
	 * memory; 0: unknown) and when it set it (wall ms). */
	const char *deadline_for;
	int64_t deadline_ms;
	int64_t deadline_set_ms;
	/* Capacity (providers[].capacity): the controller asks to pause the
	 * running keeper to free a slot at its provider (evict; the planner
	 * still spares a busy or just-connected space), or says no slot is
	 * free for a start now (capacity_wait, why in capacity_message,
	 * borrowed): a create or a wake waits. */
	bool evict;
	const char *evict_quota; /* evict: the SpaceQuota it frees a slot under, NULL: capacity */
	bool capacity_wait;
	const char *capacity_message;
	/* The workspace marker read back from the running keeper, made only when
	 * sk_plan_marker_step says CHECK and its data plane answered. */
	int marker; /* sk_marker_check */
	char marker_detail[256];
	/* How the bound keeper's state was learnt, and when it was last truly
	 * seen (0: not seen; see sk_keeper_known.look_ms). */
	sk_look look;
	int64_t look_ms;
} sk_observed;

void sk_observed_dispose(sk_observed *o);

/* What the controller remembers of a keeper beyond the lists: its envd
 * details from a create, connect or get answer (a list has neither), and
 * the deadline spacekeeper set on it. Borrowed strings. */
typedef struct sk_keeper_known {
	const char *sandbox_id; /* NULL: nothing known */
	const char *envd_access_token; /* secret */
	const char *envd_version;
	int64_t deadline_ms; /* 0: unknown */
	int64_t deadline_set_ms;
	bool detail_seen; /* a create, connect or get answer of sandbox_id was seen */
	/* Read the bound keeper once (GET) when it runs, no answer of it was
	 * seen and there was activity: a list has no envd token (the
	 * controller sets it). */
	bool fetch_detail;
	/* The controller's own last look at the keeper's state (what it did and saw is an observation as good as a GET):
	 * when (wall ms, 0: none), whether it ran then, and its deadline then.
	 * Made by a create, resume, set_timeout or pause answer, a GET, a list
	 * newer than the last provider change, or a healthy probe; never by a
	 * round that only reused it. look_state: RUNNING or PAUSED. */
	int64_t look_ms;
	sk_sandbox_state look_state;
	int64_t look_end_ms;
	/* A connect waits for the keeper (the controller's wake request). */
	bool wake;
	/* A user's report (POST .../unhealthy, a fresh connect) or a connect
	 * that found the keeper unreachable asks for its replacement now
	 * (sk_reconcile_env.replace_now). */
	bool replace_now;
	/* The sandbox this controller last killed as a replacement's old one
	 * (NULL: none) and when: a list made before that still shows it. */
	const char *killed_id;
	int64_t killed_ms;
} sk_keeper_known;

const char *sk_look_name(sk_look l); /* "list", "known", ... */

/* Fills out (caller disposes). Returns 0; provider failures are recorded in
 * out (bound/user/probes), never returned: the planner decides what they mean.
 * list may be NULL (nothing listed). activity_ms: the last activity the
 * caller knows (0: none); a quiet keeper (sk_plan_quiet) is not probed. */
int sk_observe(sk_provider *p, const sk_userspace *us, const sk_list_view *list,
        const sk_plan_options *opts, int64_t activity_ms, sk_observed *out, sk_error *err);

#endif
