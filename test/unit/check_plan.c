/*
 * Table tests for the pure planner (pkg/reconcile/plan.c), one case at least
 * per rule of docs/architecture.md's Invariants and per branch. Every case is also checked for
 * idempotence: the plan's actions are applied to the observed state by a
 * small fake provider, the status becomes the plan's next status, and a
 * second plan must hold no mutating action. Also: orphans, descriptions.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/kvlist.h"
#include "api/names.h"
#include "api/network.h"
#include "api/sandbox_values.h"
#include "api/status.h"
#include "api/storage.h"
#include "api/userspace.h"
#include "reconcile/observe.h"
#include "reconcile/observe_int.h"
#include "reconcile/options.h"
#include "reconcile/orphans.h"
#include "reconcile/plan.h"
#include "reconcile/reconcile_int.h"

Suite *sk_suite_plan(void);

#define NOW INT64_C(1800000000000)
#define SEC INT64_C(1000)
#define MIN (60 * SEC)
#define HOUR (60 * MIN)

typedef struct sb_spec {
	const char *id;
	sk_sandbox_state state;
	int64_t started; /* offset from NOW */
	int64_t end; /* offset from NOW; 0: unknown */
	const char *tmpl; /* NULL: "base" */
	int cpu;
} sb_spec;

typedef struct probe_spec {
	const char *id;
	sk_health health;
	int status;
} probe_spec;

typedef struct plan_case {
	const char *name;
	/* desired */
	sk_mode mode;
	const char *bound;
	sk_phase phase;
	int64_t last_reconcile; /* offset from NOW */
	bool hold;
	bool deleting;
	bool no_finalizer;
	sk_deletion_policy policy;
	sk_remediation remediation;
	const char *tmpl;
	int cpu;
	const char *prev_drift; /* type; sandbox = bound */
	int64_t prev_drift_since;
	const char *prev_dp_reason; /* DataPlaneHealthy Unknown with this reason */
	int64_t prev_healthy_since; /* DataPlaneHealthy True since (offset from NOW); 0 none */
	int64_t prev_dp_since;
	int64_t ttl; /* 0: 1h */
	int64_t idle; /* spec.lifecycle.idleTimeout; 0: always on */
	int64_t prev_activity; /* status.lastActivityTime, offset from NOW; 0: none */
	bool no_env; /* spec.env empty */
	bool busy_ignore; /* spec.lifecycle.busy Ignore */
	int64_t max_busy; /* spec.lifecycle.maxBusy; 0: the default (2h) */
	bool prev_busy; /* status: Busy True */
	bool slides; /* opts.deadline_slides */
	const char *fork_from; /* spec.source.fork.userSpace */
	int64_t prev_creates; /* status.usage.creates */
	/* observed */
	sb_spec sbs[4];
	sk_lookup bound_lookup;
	int bound_err;
	sk_lookup user_lookup;
	int user_err;
	probe_spec probes[3];
	int64_t activity; /* the controller's last activity, offset from NOW; 0: none */
	bool wake; /* a connect waits */
	bool replace_now; /* a connect found the keeper unreachable */
	int procs; /* envd's process list: -1 not made, else how many run */
	int64_t deadline; /* the deadline spacekeeper set on the bound keeper (offset); 0 none */
	int64_t deadline_set; /* when it set it (offset from NOW) */
	bool evict; /* capacity: the controller asks to pause the keeper */
	const char *evict_quota; /* evict: for this SpaceQuota (NULL: the provider's capacity) */
	bool capacity_wait; /* capacity: no slot for a start now */
	/* expected */
	const char *
	        actions; /* non-event actions: "create bind kill:i1(Replace)", a fork "create<fork:SRC>" */
	sk_phase want_phase;
	const char *want_drift; /* "Duplicate:i1,Duplicate:i3" */
	const char *want_bound; /* "-" for none; NULL: not checked */
	const char *want_ready; /* NULL: not checked */
	int want_wait;
	int64_t requeue_min, requeue_max; /* 0: not checked */
	int64_t want_since; /* since of the first drift, offset from NOW; 0 unchecked */
	const char *want_event; /* an EVENT reason that must be planned */
	const char *want_event_says; /* ... whose message holds this */
	const char *no_event; /* an EVENT reason that must not be planned */
	int64_t want_activity; /* next lastActivityTime, offset from NOW; 0 unchecked */
	int want_follow_up; /* 1: follow_up set, -1: not set, 0 unchecked */
	const char *want_synced; /* reason of Synced; NULL unchecked */
	const char *want_busy; /* status of the Busy condition; "-" none; NULL unchecked */
	int64_t want_timeout; /* the SET_TIMEOUT's timeout; 0 unchecked */
} plan_case;

#define RUN(id_, started_, end_)                                                                   \
	{                                                                                          \
		id_, SK_SANDBOX_RUNNING, started_, end_, NULL, 0                                   \
	}
#define PAUSED(id_, started_)                                                                      \
	{                                                                                          \
		id_, SK_SANDBOX_PAUSED, started_, 0, NULL, 0                                       \
	}
#define OK(id_)                                                                                    \
	{                                                                                          \
		id_, SK_HEALTH_OK, 200                                                             \
	}
#define GW(id_)                                                                                    \
	{                                                                                          \
		id_, SK_HEALTH_UNREACHABLE, 504                                                    \
	}

static const plan_case cases[] = {
	/* rule 1: create only with no binding or a confirmed 404 */
	{ .name = "new user: create and bind",
	        .actions = "create bind",
	        .want_phase = SK_PHASE_CREATING,
	        .want_ready = "False",
	        .want_bound = "-",
	        .requeue_max = 2 * SEC },
	{ .name = "empty list, binding, GET found: no create",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .sbs = { RUN("i1", -HOUR, 50 * MIN) },
	        .bound_lookup = SK_LOOKUP_FOUND,
	        .probes = { OK("i1") },
	        .actions = "",
	        .want_phase = SK_PHASE_RUNNING,
	        .want_ready = "True",
	        .want_bound = "i1" },
	{ .name = "empty list, binding, GET 404: create",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .bound_lookup = SK_LOOKUP_NOT_FOUND,
	        .actions = "create bind",
	        .want_phase = SK_PHASE_CREATING,
	        .want_bound = "-" },
	/* spec.source.fork: the provider's fork on the first create only */
	{ .name = "fork source on first create",
	        .fork_from = "bob",
	        .actions = "create<fork:bob> bind",
	        .want_phase = SK_PHASE_CREATING,
	        .want_bound = "-" },
	{ .name = "fork source, bound sandbox gone (404): a plain create",
	        .fork_from = "bob",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .prev_creates = 1,
	        .bound_lookup = SK_LOOKUP_NOT_FOUND,
	        .actions = "create bind",
	        .want_phase = SK_PHASE_CREATING,
	        .want_bound = "-" },
	{ .name = "fork source, a create counted, nothing bound: a plain create",
	        .fork_from = "bob",
	        .prev_creates = 1,
	        .actions = "create bind",
	        .want_phase = SK_PHASE_CREATING,
	        .want_bound = "-" },
	{ .name = "empty list, binding, GET transient: no create, requeue",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .bound_lookup = SK_LOOKUP_ERROR,
	        .bound_err = SK_ETRANSIENT,
	        .actions = "",
	        .want_phase = SK_PHASE_RUNNING,
	        .want_bound = "i1",
	        .want_wait = SK_ETRANSIENT,
	        .requeue_max = 2 * SEC },
	{ .name = "bound listed as gone: create",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .sbs = { { "i1", SK_SANDBOX_GONE, -HOUR, 0, NULL, 0 } },
	        .actions = "create bind",
	        .want_phase = SK_PHASE_CREATING },
	{ .name = "bound 404, another of the user listed: adopt, no create",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .bound_lookup = SK_LOOKUP_NOT_FOUND,
	        .sbs = { RUN("i2", -MIN, 50 * MIN) },
	        .probes = { OK("i2") },
	        .actions = "",
	        .want_phase = SK_PHASE_RUNNING,
	        .want_bound = "i2" },
	/* crash between create and bind */
	{ .name = "crash: Creating, nothing bound, list empty, within grace: wait",
	        .phase = SK_PHASE_CREATING,
	        .last_reconcile = -5 * SEC,
	        .user_lookup = SK_LOOKUP_NOT_FOUND,
	        .actions = "",
	        .want_phase = SK_PHASE_CREATING,
	        .want_bound = "-",
	        .requeue_min = 29 * SEC,
	        .requeue_max = 30 * SEC },
	{ .name = "crash: Creating, nothing bound, list empty, lookup not made: wait",
	        .phase = SK_PHASE_CREATING,
	        .last_reconcile = -HOUR,
	        .actions = "",
	        .want_phase = SK_PHASE_CREATING,
	        .want_bound = "-" },
	{ .name = "crash: Creating, the created sandbox listed: adopt",
	        .phase = SK_PHASE_CREATING,
	        .last_reconcile = -5 * SEC,
	        .sbs = { RUN("i1", -4 * SEC, HOUR) },
	        .probes = { OK("i1") },
	        .actions = "",
	        .want_phase = SK_PHASE_RUNNING,
	        .want_bound = "i1",
	        .want_ready = "True" },
	{ .name = "crash: Creating, lookup after grace finds none: create",
	        .phase = SK_PHASE_CREATING,
	        .last_reconcile = -40 * SEC,
	        .user_lookup = SK_LOOKUP_NOT_FOUND,
	        .actions = "create bind",
	        .want_phase = SK_PHASE_CREATING },
	{ .name = "crash: Creating, lookup failed: wait with error",
	        .phase = SK_PHASE_CREATING,
	        .last_reconcile = -40 * SEC,
	        .user_lookup = SK_LOOKUP_ERROR,
	        .user_err = SK_EUNAVAILABLE,
	        .actions = "",
	        .want_phase = SK_PHASE_CREATING,
	        .want_wait = SK_EUNAVAILABLE },
	/* rule 2: keeper choice and duplicates */
	{ .name = "three sandboxes: keeper newest healthy running, two duplicates killed",
	        .sbs = { RUN("i1", -3 * SEC, HOUR), RUN("i2", -1 * SEC, HOUR), PAUSED("i3", 0) },
	        .probes = { OK("i1"), OK("i2") },
	        .actions = "bind:i2 kill:i1(Duplicate) kill:i3(Duplicate)",
	        .want_phase = SK_PHASE_RUNNING,
	        .want_bound = "i2",
	        .want_drift = "Duplicate:i1,Duplicate:i3",
	        .want_event = "Duplicate" },
	{ .name = "bound keeper wins over a newer one",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .sbs = { RUN("i1", -HOUR, HOUR), RUN("i2", -SEC, HOUR) },
	        .probes = { OK("i1") },
	        .actions = "kill:i2(Duplicate)",
	        .want_bound = "i1",
	        .want_drift = "Duplicate:i2",
	        .want_phase = SK_PHASE_RUNNING },
	{ .name = "unbound: healthy beats newer unhealthy",
	        .sbs = { RUN("i1", -HOUR, HOUR), RUN("i2", -SEC, HOUR) },
	        .probes = { GW("i2"), OK("i1") },
	        .actions = "bind:i1 kill:i2(Duplicate)",
	        .want_bound = "i1",
	        .want_phase = SK_PHASE_RUNNING },
	{ .name = "unbound, only paused: newest paused kept and resumed",
	        .sbs = { PAUSED("i1", -HOUR), PAUSED("i2", -MIN) },
	        .actions = "bind:i2 kill:i1(Duplicate) connect:i2",
	        .want_bound = "i2",
	        .want_phase = SK_PHASE_RESUMING },
	{ .name = "duplicate drift with since kept",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .prev_drift = "Duplicate",
	        .prev_drift_since = -MIN,
	        .sbs = { RUN("i1", -HOUR, HOUR), RUN("i2", -SEC, HOUR) },
	        .probes = { OK("i1") },
	        .actions = "kill:i2(Duplicate)",
	        .want_drift = "Duplicate:i2",
	        .want_phase = SK_PHASE_RUNNING },
	/* lifecycle.busy: never sleep mid-command */
	{ .name = "busy: no activity, envd runs processes, deadline in its second half: renew",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .idle = 10 * MIN,
	        .prev_activity = -20 * MIN,
	        .sbs = { RUN("i1", -HOUR, 4 * MIN) },
	        .probes = { OK("i1") },
	        .procs = 2,
	        .actions = "set-timeout:i1",
	        .want_phase = SK_PHASE_RUNNING,
	        .want_event = "KeptAwake",
	        .want_busy = "True",
	        .want_timeout = 10 * MIN },
	{ .name = "busy, already kept awake: renew, no second KeptAwake event",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .idle = 10 * MIN,
	        .prev_activity = -20 * MIN,
	        .prev_busy = true,
	        .sbs = { RUN("i1", -HOUR, 4 * MIN) },
	        .probes = { OK("i1") },
	        .procs = 1,
	        .actions = "set-timeout:i1",
	        .no_event = "KeptAwake",
	        .want_busy = "True" },
	{ .name = "busy near maxBusy: renewed only up to maxBusy after the last activity",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .idle = 10 * MIN,
	        .max_busy = 25 * MIN,
	        .prev_activity = -20 * MIN,
	        .sbs = { RUN("i1", -HOUR, 4 * MIN) },
	        .probes = { OK("i1") },
	        .procs = 1,
	        .actions = "set-timeout:i1",
	        .want_busy = "True",
	        .want_timeout = 5 * MIN },
	{ .name = "busy past maxBusy: no renewal, Busy False",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .idle = 10 * MIN,
	        .max_busy = 15 * MIN,
	        .prev_activity = -20 * MIN,
	        .prev_busy = true,
	        .sbs = { RUN("i1", -HOUR, 4 * MIN) },
	        .probes = { OK("i1") },
	        .procs = 3,
	        .actions = "",
	        .want_event = "MaxBusyReached",
	        .want_busy = "False" },
	{ .name = "busy Ignore: processes do not renew",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .idle = 10 * MIN,
	        .busy_ignore = true,
	        .prev_activity = -20 * MIN,
	        .sbs = { RUN("i1", -HOUR, 4 * MIN) },
	        .probes = { OK("i1") },
	        .procs = 2,
	        .actions = "",
	        .no_event = "KeptAwake",
	        .want_busy = "-" },
	{ .name = "work ended (no process): no renewal, Busy False",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .idle = 10 * MIN,
	        .prev_activity = -20 * MIN,
	        .prev_busy = true,
	        .sbs = { RUN("i1", -HOUR, 4 * MIN) },
	        .probes = { OK("i1") },
	        .procs = 0,
	        .actions = "",
	        .want_busy = "False" },
	{ .name = "process list not made (envd down): no renewal, Busy kept",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .idle = 10 * MIN,
	        .prev_activity = -20 * MIN,
	        .prev_busy = true,
	        .sbs = { RUN("i1", -HOUR, 4 * MIN) },
	        .probes = { OK("i1") },
	        .procs = -1,
	        .actions = "",
	        .want_busy = "True" },
	/* a deadline set by someone else (rule 9's deadline) */
	{ .name = "provider deadline later than the one set: re-asserted, DeadlineOverridden",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .idle = 10 * MIN,
	        .prev_activity = -MIN,
	        .sbs = { RUN("i1", -HOUR, HOUR) },
	        .probes = { OK("i1") },
	        .deadline = 8 * MIN,
	        .deadline_set = -2 * MIN,
	        .actions = "set-timeout:i1",
	        .want_event = "DeadlineOverridden",
	        .want_timeout = 8 * MIN },
	{ .name = "provider deadline earlier than the one set: re-asserted",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .idle = 10 * MIN,
	        .prev_activity = -MIN,
	        .sbs = { RUN("i1", -HOUR, 6 * MIN) },
	        .probes = { OK("i1") },
	        .deadline = 9 * MIN,
	        .deadline_set = -MIN,
	        .actions = "set-timeout:i1",
	        .want_event = "DeadlineOverridden" },
	{ .name = "deadline within the slack of the one set: nothing",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .idle = 10 * MIN,
	        .prev_activity = -MIN,
	        .sbs = { RUN("i1", -HOUR, 8 * MIN + 3 * SEC) },
	        .probes = { OK("i1") },
	        .deadline = 8 * MIN,
	        .deadline_set = -2 * MIN,
	        .actions = "",
	        .no_event = "DeadlineOverridden" },
	{ .name = "list older than our own setting: no override seen",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .idle = 10 * MIN,
	        .prev_activity = -MIN,
	        .sbs = { RUN("i1", -HOUR, HOUR) },
	        .probes = { OK("i1") },
	        .deadline = 8 * MIN,
	        .deadline_set = -5 * SEC,
	        .actions = "",
	        .no_event = "DeadlineOverridden" },
	{ .name = "our deadline lapsed, keeper woken since (autoResume): adopted, no event",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .idle = 10 * MIN,
	        .prev_activity = -MIN,
	        .sbs = { RUN("i1", -HOUR, 9 * MIN) },
	        .probes = { OK("i1") },
	        .deadline = -MIN,
	        .deadline_set = -11 * MIN,
	        .actions = "",
	        .no_event = "DeadlineOverridden" },
	{ .name = "a provider whose deadline slides with traffic: no override",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .idle = 10 * MIN,
	        .slides = true,
	        .prev_activity = -MIN,
	        .sbs = { RUN("i1", -HOUR, HOUR) },
	        .probes = { OK("i1") },
	        .deadline = 8 * MIN,
	        .deadline_set = -2 * MIN,
	        .actions = "",
	        .no_event = "DeadlineOverridden" },
	{ .name = "override under the paused annotation: observed only",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .hold = true,
	        .idle = 10 * MIN,
	        .prev_activity = -MIN,
	        .sbs = { RUN("i1", -HOUR, HOUR) },
	        .probes = { OK("i1") },
	        .deadline = 8 * MIN,
	        .deadline_set = -2 * MIN,
	        .actions = "",
	        .no_event = "DeadlineOverridden" },
	/* rule 3: resume */
	{ .name = "always on (idleTimeout 0), keeper paused: resume (one call)",
	        .bound = "i1",
	        .phase = SK_PHASE_PAUSED,
	        .sbs = { PAUSED("i1", -HOUR) },
	        .actions = "connect:i1",
	        .want_phase = SK_PHASE_RESUMING,
	        .want_ready = "False",
	        .want_follow_up = 1,
	        .requeue_max = 2 * SEC },
	/* rule 3: idle is not drift; no resume without a connect */
	{ .name = "idle: keeper paused by the provider, no connect: Idle, nothing done",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .idle = 15 * MIN,
	        .sbs = { PAUSED("i1", -HOUR) },
	        .activity = -20 * MIN,
	        .actions = "",
	        .want_phase = SK_PHASE_IDLE,
	        .want_ready = "True",
	        .want_drift = "",
	        .want_event = "Idle",
	        .want_follow_up = -1 },
	{ .name = "idle already: no second Idle event",
	        .bound = "i1",
	        .phase = SK_PHASE_IDLE,
	        .idle = 15 * MIN,
	        .sbs = { PAUSED("i1", -HOUR) },
	        .actions = "",
	        .want_phase = SK_PHASE_IDLE,
	        .no_event = "Idle" },
	{ .name = "idle: a connect waits: resume with the idle timeout, then probe",
	        .bound = "i1",
	        .phase = SK_PHASE_IDLE,
	        .idle = 15 * MIN,
	        .sbs = { PAUSED("i1", -HOUR) },
	        .wake = true,
	        .activity = -1 * SEC,
	        .actions = "connect:i1",
	        .want_phase = SK_PHASE_RESUMING,
	        .want_follow_up = 1,
	        .want_activity = -1 * SEC },
	{ .name = "idle + paused annotation: a connect does not resume",
	        .bound = "i1",
	        .phase = SK_PHASE_IDLE,
	        .idle = 15 * MIN,
	        .hold = true,
	        .sbs = { PAUSED("i1", -HOUR) },
	        .wake = true,
	        .actions = "",
	        .want_phase = SK_PHASE_IDLE },
	/* rule 9: renewal only for recent activity, below half of D */
	{ .name = "running, below D/2, no activity since the deadline was set: let it sleep",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .idle = 10 * MIN,
	        .sbs = { RUN("i1", -HOUR, 4 * MIN) },
	        .probes = { OK("i1") },
	        .activity = -7 * MIN, /* before end - D = -6m */
	        .actions = "",
	        .want_phase = SK_PHASE_RUNNING },
	{ .name = "running, below D/2 but outside the renewal window, activity since: not yet "
	          "(one renewal per D, not two)",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .idle = 10 * MIN,
	        .busy_ignore = true,
	        .sbs = { RUN("i1", -HOUR, 80 * SEC) },
	        .probes = { OK("i1") },
	        .activity = -5 * MIN,
	        .actions = "",
	        .want_phase = SK_PHASE_RUNNING,
	        .requeue_min = 20 * SEC - 1,
	        .requeue_max = 20 * SEC + 1 },
	{ .name = "within the renewal window, activity since: renew to D after the last activity",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .idle = 10 * MIN,
	        .sbs = { RUN("i1", -HOUR, 50 * SEC) },
	        .probes = { OK("i1") },
	        .activity = -5 * MIN,
	        .actions = "set-timeout:i1",
	        .want_phase = SK_PHASE_RUNNING,
	        .want_timeout = 5 * MIN },
	{ .name = "within the renewal window, the deadline already past the last activity + D: "
	          "no renewal",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .idle = MIN,
	        .sbs = { RUN("i1", -HOUR, 10 * SEC) },
	        .probes = { OK("i1") },
	        .activity = -50 * SEC,
	        .actions = "",
	        .want_phase = SK_PHASE_RUNNING },
	{ .name = "busy Processes, above D/2: requeue at D/2, when a busy check may be due",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .idle = MIN,
	        .sbs = { RUN("i1", -HOUR, 40 * SEC) },
	        .probes = { OK("i1") },
	        .activity = -SEC,
	        .actions = "",
	        .want_phase = SK_PHASE_RUNNING,
	        .requeue_min = 10 * SEC - 1,
	        .requeue_max = 10 * SEC + 1 },
	{ .name = "running, above the renewal window, activity: no renewal yet, requeue when due",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .idle = MIN,
	        .busy_ignore = true,
	        .sbs = { RUN("i1", -HOUR, 40 * SEC) },
	        .probes = { OK("i1") },
	        .activity = -SEC,
	        .actions = "",
	        .want_phase = SK_PHASE_RUNNING,
	        .requeue_min = 25 * SEC - 1,
	        .requeue_max = 25 * SEC + 1 },
	{ .name = "falling asleep: not probed (a probe would wake it), no GET at the deadline: "
	          "the next list says",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .idle = MIN,
	        .sbs = { RUN("i1", -HOUR, SEC) },
	        .actions = "",
	        .want_phase = SK_PHASE_RUNNING,
	        .requeue_min = 30 * SEC },
	{ .name = "state unknown at its deadline, a connect waits: resume with the deadline (one "
	          "call answers and acts)",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .idle = MIN,
	        .sbs = { { "i1", SK_SANDBOX_UNKNOWN, -HOUR, SEC, NULL, 0 } },
	        .activity = -SEC,
	        .wake = true,
	        .actions = "connect:i1",
	        .want_phase = SK_PHASE_RESUMING,
	        .want_follow_up = 1 },
	{ .name = "state unknown at its deadline, nobody waits: not asked, not woken, as before",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .idle = MIN,
	        .sbs = { { "i1", SK_SANDBOX_UNKNOWN, -HOUR, SEC, NULL, 0 } },
	        .actions = "",
	        .want_phase = SK_PHASE_RUNNING },
	{ .name = "quiet: no activity within D, not probed (traffic keeps Cube awake): as before",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .idle = 10 * MIN,
	        .prev_healthy_since = -20 * MIN,
	        .sbs = { RUN("i1", -HOUR, 8 * MIN) },
	        .activity = -11 * MIN,
	        .actions = "",
	        .want_phase = SK_PHASE_RUNNING,
	        .requeue_min = 30 * SEC },
	{ .name = "Idle keeper resumed by traffic (autoResume): env re-asserted",
	        .bound = "i1",
	        .phase = SK_PHASE_IDLE,
	        .idle = 10 * MIN,
	        .sbs = { RUN("i1", -HOUR, 9 * MIN) },
	        .probes = { OK("i1") },
	        .activity = -SEC,
	        .actions = "init-env:i1",
	        .want_phase = SK_PHASE_RUNNING },
	{ .name = "create uses the idle timeout as the deadline",
	        .idle = 10 * MIN,
	        .actions = "create bind",
	        .want_phase = SK_PHASE_CREATING,
	        .want_follow_up = 1 },
	/* activity persisted at most once per D/4 */
	{ .name = "activity: first one persisted",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .idle = 10 * MIN,
	        .sbs = { RUN("i1", -HOUR, 8 * MIN) },
	        .probes = { OK("i1") },
	        .activity = -SEC,
	        .actions = "",
	        .want_activity = -SEC },
	{ .name = "activity: within D/4 of the persisted one, not written again",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .idle = 10 * MIN,
	        .prev_activity = -2 * MIN,
	        .sbs = { RUN("i1", -HOUR, 8 * MIN) },
	        .probes = { OK("i1") },
	        .activity = -SEC,
	        .actions = "",
	        .want_activity = -2 * MIN },
	{ .name = "activity: past D/4, persisted",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .idle = 10 * MIN,
	        .prev_activity = -3 * MIN,
	        .sbs = { RUN("i1", -HOUR, 8 * MIN) },
	        .probes = { OK("i1") },
	        .activity = -SEC,
	        .actions = "",
	        .want_activity = -SEC },
	/* rule 9: the environment re-asserted once the data plane answers after a start */
	{ .name = "after a resume the data plane answers: re-assert env",
	        .bound = "i1",
	        .phase = SK_PHASE_RESUMING,
	        .prev_dp_reason = "Resuming",
	        .prev_dp_since = -SEC,
	        .sbs = { RUN("i1", -HOUR, 50 * MIN) },
	        .probes = { OK("i1") },
	        .actions = "init-env:i1",
	        .want_phase = SK_PHASE_RUNNING,
	        .want_ready = "True" },
	{ .name = "after a resume, no env: nothing to re-assert",
	        .bound = "i1",
	        .phase = SK_PHASE_RESUMING,
	        .prev_dp_reason = "Resuming",
	        .prev_dp_since = -SEC,
	        .no_env = true,
	        .sbs = { RUN("i1", -HOUR, 50 * MIN) },
	        .probes = { OK("i1") },
	        .actions = "",
	        .want_phase = SK_PHASE_RUNNING },
	{ .name = "healthy and steady: env not re-asserted",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .sbs = { RUN("i1", -HOUR, 50 * MIN) },
	        .probes = { OK("i1") },
	        .actions = "",
	        .want_phase = SK_PHASE_RUNNING },
	{ .name = "504 within the resume grace is transient",
	        .bound = "i1",
	        .phase = SK_PHASE_RESUMING,
	        .prev_dp_reason = "Resuming",
	        .prev_dp_since = -5 * SEC,
	        .sbs = { RUN("i1", -HOUR, HOUR) },
	        .probes = { GW("i1") },
	        .actions = "",
	        .want_phase = SK_PHASE_RESUMING,
	        .want_drift = "",
	        .requeue_max = 2 * SEC },
	{ .name = "504 after the resume grace is drift",
	        .bound = "i1",
	        .phase = SK_PHASE_RESUMING,
	        .prev_dp_reason = "Resuming",
	        .prev_dp_since = -30 * SEC,
	        .sbs = { RUN("i1", -HOUR, HOUR) },
	        .probes = { GW("i1") },
	        .actions = "",
	        .want_phase = SK_PHASE_DEGRADED,
	        .want_drift = "DataPlaneUnreachable:i1",
	        .want_event = "DataPlaneUnreachable" },
	{ .name = "504 right after create within grace: still Creating",
	        .bound = "i1",
	        .phase = SK_PHASE_CREATING,
	        .prev_dp_reason = "Starting",
	        .prev_dp_since = -2 * SEC,
	        .sbs = { RUN("i1", -2 * SEC, HOUR) },
	        .probes = { GW("i1") },
	        .actions = "",
	        .want_phase = SK_PHASE_CREATING,
	        .want_drift = "" },
	/* rule 4: running but the data plane answers 504 */
	{ .name = "504 first seen: DataPlaneUnreachable since now",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .remediation = SK_REMEDIATION_REPLACE,
	        .sbs = { RUN("i1", -HOUR, HOUR) },
	        .probes = { GW("i1") },
	        .actions = "",
	        .want_phase = SK_PHASE_DEGRADED,
	        .want_drift = "DataPlaneUnreachable:i1",
	        .want_ready = "False",
	        .requeue_min = 29 * SEC,
	        .requeue_max = 30 * SEC,
	        .want_event = "DataPlaneUnreachable" },
	{ .name = "Replace before unhealthyAfter: wait, since kept",
	        .bound = "i1",
	        .phase = SK_PHASE_DEGRADED,
	        .remediation = SK_REMEDIATION_REPLACE,
	        .prev_drift = "DataPlaneUnreachable",
	        .prev_drift_since = -40 * SEC,
	        .sbs = { RUN("i1", -HOUR, HOUR) },
	        .probes = { GW("i1") },
	        .actions = "",
	        .want_phase = SK_PHASE_DEGRADED,
	        .want_drift = "DataPlaneUnreachable:i1",
	        .want_since = -40 * SEC,
	        .requeue_min = 19 * SEC,
	        .requeue_max = 20 * SEC },
	{ .name = "Replace after unhealthyAfter: create, bind, kill old",
	        .bound = "i1",
	        .phase = SK_PHASE_DEGRADED,
	        .remediation = SK_REMEDIATION_REPLACE,
	        .prev_drift = "DataPlaneUnreachable",
	        .prev_drift_since = -61 * SEC,
	        .sbs = { RUN("i1", -HOUR, HOUR) },
	        .probes = { GW("i1") },
	        .actions = "create bind kill:i1(Replace)",
	        .want_phase = SK_PHASE_CREATING,
	        .want_bound = "-",
	        .want_follow_up = 1 },
	{ .name = "Replace, a connect found it unreachable: replace now",
	        .bound = "i1",
	        .phase = SK_PHASE_DEGRADED,
	        .remediation = SK_REMEDIATION_REPLACE,
	        .prev_drift = "DataPlaneUnreachable",
	        .prev_drift_since = -10 * SEC,
	        .sbs = { RUN("i1", -HOUR, HOUR) },
	        .probes = { GW("i1") },
	        .replace_now = true,
	        .actions = "create bind kill:i1(Replace)",
	        .want_phase = SK_PHASE_CREATING,
	        .want_follow_up = 1 },
	{ .name = "Replace, a user's report on a keeper healthy until now: replace now",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .remediation = SK_REMEDIATION_REPLACE,
	        .prev_healthy_since = -HOUR,
	        .sbs = { RUN("i1", -HOUR, HOUR) },
	        .probes = { GW("i1") },
	        .replace_now = true,
	        .actions = "create bind kill:i1(Replace)",
	        .want_phase = SK_PHASE_CREATING,
	        .want_bound = "-",
	        .want_follow_up = 1 },
	{ .name = "Replace, the killed old keeper is gone: only the replacement, no 2nd kill",
	        .bound = "i2",
	        .phase = SK_PHASE_CREATING,
	        .remediation = SK_REMEDIATION_REPLACE,
	        .prev_dp_reason = "Starting",
	        .prev_dp_since = -1 * SEC,
	        .sbs = { RUN("i2", -1 * SEC, HOUR), { "i1", SK_SANDBOX_GONE, -HOUR, 0, NULL, 0 } },
	        .probes = { OK("i2") },
	        .replace_now = true,
	        .actions = "init-env:i2",
	        .want_phase = SK_PHASE_RUNNING,
	        .want_drift = "",
	        .want_bound = "i2" },
	{ .name = "Replace, a connect within the resume grace: no replace",
	        .bound = "i1",
	        .phase = SK_PHASE_RESUMING,
	        .remediation = SK_REMEDIATION_REPLACE,
	        .prev_dp_reason = "Resuming",
	        .prev_dp_since = -5 * SEC,
	        .sbs = { RUN("i1", -HOUR, HOUR) },
	        .probes = { GW("i1") },
	        .replace_now = true,
	        .actions = "",
	        .want_phase = SK_PHASE_RESUMING },
	{ .name = "Report never replaces",
	        .bound = "i1",
	        .phase = SK_PHASE_DEGRADED,
	        .remediation = SK_REMEDIATION_REPORT,
	        .prev_drift = "DataPlaneUnreachable",
	        .prev_drift_since = -10 * HOUR,
	        .sbs = { RUN("i1", -HOUR, HOUR) },
	        .probes = { GW("i1") },
	        .actions = "",
	        .want_phase = SK_PHASE_DEGRADED,
	        .want_drift = "DataPlaneUnreachable:i1",
	        .want_since = -10 * HOUR },
	{ .name = "data plane healthy again: drift cleared",
	        .bound = "i1",
	        .phase = SK_PHASE_DEGRADED,
	        .prev_drift = "DataPlaneUnreachable",
	        .prev_drift_since = -MIN,
	        .sbs = { RUN("i1", -HOUR, HOUR) },
	        .probes = { OK("i1") },
	        .actions = "",
	        .want_phase = SK_PHASE_RUNNING,
	        .want_drift = "",
	        .want_ready = "True" },
	/* rule 5: pause */
	{ .name = "mode Paused, keeper running: pause",
	        .mode = SK_MODE_PAUSED,
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .sbs = { RUN("i1", -HOUR, HOUR) },
	        .actions = "pause:i1",
	        .want_phase = SK_PHASE_PAUSED,
	        .want_ready = "True" },
	{ .name = "mode Paused, keeper paused: nothing",
	        .mode = SK_MODE_PAUSED,
	        .bound = "i1",
	        .phase = SK_PHASE_PAUSED,
	        .sbs = { PAUSED("i1", -HOUR) },
	        .actions = "",
	        .want_phase = SK_PHASE_PAUSED,
	        .want_ready = "True" },
	{ .name = "mode Paused, no sandbox: nothing created",
	        .mode = SK_MODE_PAUSED,
	        .actions = "",
	        .want_phase = SK_PHASE_PAUSED,
	        .want_bound = "-" },
	/* rule 6: SpecMismatch */
	{ .name = "template and cpu differ: SpecMismatch reported only",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .cpu = 2,
	        .sbs = { { "i1", SK_SANDBOX_RUNNING, -HOUR, HOUR, "other", 4 } },
	        .probes = { OK("i1") },
	        .actions = "",
	        .want_phase = SK_PHASE_RUNNING,
	        .want_drift = "SpecMismatch:i1",
	        .want_event = "SpecMismatch" },
	/* rule 7: deletion */
	{ .name = "deletion Delete: kill all, then drop the finalizer",
	        .deleting = true,
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .sbs = { RUN("i1", -HOUR, HOUR), PAUSED("i2", -MIN) },
	        .user_lookup = SK_LOOKUP_FOUND,
	        .actions = "kill:i1(Delete) kill:i2(Delete) remove-finalizer",
	        .want_phase = SK_PHASE_DELETING },
	{ .name = "deletion Delete: bound not listed is killed too (404 is done)",
	        .deleting = true,
	        .bound = "i9",
	        .phase = SK_PHASE_RUNNING,
	        .user_lookup = SK_LOOKUP_NOT_FOUND,
	        .actions = "kill:i9(Delete) remove-finalizer",
	        .want_phase = SK_PHASE_DELETING },
	{ .name = "deletion Delete: lookup failed keeps the finalizer",
	        .deleting = true,
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .sbs = { RUN("i1", -HOUR, HOUR) },
	        .user_lookup = SK_LOOKUP_ERROR,
	        .user_err = SK_ETRANSIENT,
	        .actions = "kill:i1(Delete)",
	        .want_phase = SK_PHASE_DELETING,
	        .want_wait = SK_ETRANSIENT },
	{ .name = "deletion Retain: finalizer dropped at once",
	        .deleting = true,
	        .policy = SK_DELETE_RETAIN,
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .sbs = { RUN("i1", -HOUR, HOUR) },
	        .actions = "remove-finalizer",
	        .want_phase = SK_PHASE_DELETING },
	{ .name = "deletion without the finalizer: nothing",
	        .deleting = true,
	        .no_finalizer = true,
	        .bound = "i1",
	        .sbs = { RUN("i1", -HOUR, HOUR) },
	        .user_lookup = SK_LOOKUP_FOUND,
	        .actions = "",
	        .want_phase = SK_PHASE_DELETING },
	/* rule 9: requeue before the TTL; lifecycle re-asserted */
	{ .name = "requeue at half the remaining TTL",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .ttl = 20 * SEC,
	        .sbs = { RUN("i1", -HOUR, 15 * SEC) },
	        .probes = { OK("i1") },
	        .actions = "",
	        .want_phase = SK_PHASE_RUNNING,
	        .requeue_min = 7 * SEC,
	        .requeue_max = 7500 },
	{ .name = "TTL past half: set timeout again",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .sbs = { RUN("i1", -HOUR, 20 * MIN) },
	        .probes = { OK("i1") },
	        .actions = "set-timeout:i1",
	        .want_phase = SK_PHASE_RUNNING,
	        .requeue_max = 30 * SEC },
	{ .name = "TTL nearly out: requeue at least 1s",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .ttl = 10 * SEC,
	        .sbs = { RUN("i1", -HOUR, 6 * SEC) },
	        .probes = { OK("i1") },
	        .actions = "",
	        .requeue_min = 1 * SEC,
	        .requeue_max = 3 * SEC },
	/* rule 10: the paused annotation */
	{ .name = "paused annotation: duplicates reported, nothing killed",
	        .hold = true,
	        .sbs = { RUN("i1", -3 * SEC, HOUR), RUN("i2", -SEC, HOUR) },
	        .probes = { OK("i2") },
	        .actions = "",
	        .want_drift = "Duplicate:i1",
	        .want_bound = "-",
	        .want_event = "ReconcilePaused" },
	{ .name = "paused annotation: no sandbox, no create",
	        .hold = true,
	        .actions = "",
	        .want_drift = "Missing:-",
	        .want_phase = SK_PHASE_PENDING },
	{ .name = "paused annotation: paused keeper not resumed",
	        .hold = true,
	        .bound = "i1",
	        .phase = SK_PHASE_PAUSED,
	        .sbs = { PAUSED("i1", -HOUR) },
	        .actions = "",
	        .want_drift = "StateMismatch:i1",
	        .want_phase = SK_PHASE_PAUSED },
	{ .name = "paused annotation: running keeper not paused",
	        .hold = true,
	        .mode = SK_MODE_PAUSED,
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .sbs = { RUN("i1", -HOUR, HOUR) },
	        .actions = "",
	        .want_drift = "StateMismatch:i1" },
	{ .name = "paused annotation: no replace",
	        .hold = true,
	        .bound = "i1",
	        .phase = SK_PHASE_DEGRADED,
	        .remediation = SK_REMEDIATION_REPLACE,
	        .prev_drift = "DataPlaneUnreachable",
	        .prev_drift_since = -HOUR,
	        .sbs = { RUN("i1", -HOUR, 5 * MIN) },
	        .probes = { GW("i1") },
	        .actions = "",
	        .want_drift = "DataPlaneUnreachable:i1" },
	{ .name = "paused annotation: deletion waits, and says why",
	        .bound = "i1",
	        .phase = SK_PHASE_DELETING,
	        .hold = true,
	        .deleting = true,
	        .sbs = { RUN("i1", -HOUR, HOUR) },
	        .actions = "",
	        .want_phase = SK_PHASE_DELETING,
	        .want_synced = "DeletionHeld",
	        .want_event = "DeletionHeld" },
	{ .name = "paused annotation: deletion does nothing",
	        .hold = true,
	        .deleting = true,
	        .bound = "i1",
	        .sbs = { RUN("i1", -HOUR, HOUR) },
	        .user_lookup = SK_LOOKUP_FOUND,
	        .actions = "",
	        .want_phase = SK_PHASE_DELETING },
	/* other branches */
	{ .name = "transitional keeper: wait",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .sbs = { { "i1", SK_SANDBOX_TRANSITIONAL, -HOUR, 0, NULL, 0 } },
	        .actions = "",
	        .requeue_max = 2 * SEC,
	        .want_ready = "False" },
	{ .name = "backend without a probe: Ready on the control plane",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .sbs = { RUN("i1", -HOUR, HOUR) },
	        .probes = { { "i1", SK_HEALTH_ERROR, -1 } },
	        .actions = "",
	        .want_phase = SK_PHASE_RUNNING,
	        .want_ready = "True" },
	{ .name = "running keeper not probed yet: Ready Unknown",
	        .bound = "i1",
	        .phase = SK_PHASE_CREATING,
	        .sbs = { RUN("i1", -SEC, HOUR) },
	        .actions = "",
	        .want_phase = SK_PHASE_RUNNING,
	        .want_ready = "Unknown" },
	/* capacity (providers[].capacity): eviction and waiting for a slot */
	{ .name = "capacity: evict the awake keeper, Idle with Ready True",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .idle = 15 * MIN,
	        .prev_activity = -10 * MIN,
	        .sbs = { RUN("i1", -HOUR, 5 * MIN) },
	        .probes = { OK("i1") },
	        .evict = true,
	        .actions = "pause:i1",
	        .want_phase = SK_PHASE_IDLE,
	        .want_ready = "True",
	        .want_event = "Evicted",
	        .want_event_says = "to free a slot at provider default (the oldest activity)" },
	{ .name = "quota: the eviction's event names the SpaceQuota, not the provider",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .idle = 15 * MIN,
	        .prev_activity = -10 * MIN,
	        .sbs = { RUN("i1", -HOUR, 5 * MIN) },
	        .probes = { OK("i1") },
	        .evict = true,
	        .evict_quota = "team-red",
	        .actions = "pause:i1",
	        .want_phase = SK_PHASE_IDLE,
	        .want_ready = "True",
	        .want_event = "Evicted",
	        .want_event_says =
	                "to free a slot under SpaceQuota team-red (the oldest activity)" },
	{ .name = "capacity: a just-connected keeper is not evicted",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .idle = 15 * MIN,
	        .activity = -10 * SEC,
	        .sbs = { RUN("i1", -HOUR, 14 * MIN) },
	        .probes = { OK("i1") },
	        .evict = true,
	        .actions = "",
	        .want_phase = SK_PHASE_RUNNING,
	        .no_event = "Evicted" },
	{ .name = "capacity: a busy keeper is not evicted",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .idle = 15 * MIN,
	        .prev_activity = -10 * MIN,
	        .prev_busy = true,
	        .sbs = { RUN("i1", -HOUR, 5 * MIN) },
	        .probes = { OK("i1") },
	        .evict = true,
	        .actions = "",
	        .no_event = "Evicted",
	        .want_phase = SK_PHASE_RUNNING },
	{ .name = "capacity: an always-on keeper is not evicted",
	        .bound = "i1",
	        .phase = SK_PHASE_RUNNING,
	        .prev_activity = -10 * MIN,
	        .sbs = { RUN("i1", -HOUR, 50 * MIN) },
	        .probes = { OK("i1") },
	        .evict = true,
	        .actions = "",
	        .want_phase = SK_PHASE_RUNNING },
	{ .name = "capacity: a wake waits for a slot, Idle, nothing resumed",
	        .bound = "i1",
	        .phase = SK_PHASE_IDLE,
	        .idle = 15 * MIN,
	        .sbs = { PAUSED("i1", -HOUR) },
	        .wake = true,
	        .capacity_wait = true,
	        .actions = "",
	        .want_phase = SK_PHASE_IDLE,
	        .want_ready = "True" },
	{ .name = "capacity: a create waits for a slot, Pending",
	        .capacity_wait = true,
	        .actions = "",
	        .want_phase = SK_PHASE_PENDING,
	        .want_ready = "False" },
};

#define NCASES (sizeof(cases) / sizeof(cases[0]))

static void
opts_for(const plan_case *tc, sk_plan_options *o)
{
	sk_plan_options_init(o);
	if (tc->ttl)
		o->sandbox_timeout_ms = tc->ttl;
	o->deadline_slides = tc->slides;
}

static int64_t
at(int64_t offset)
{
	return offset ? NOW + offset : 0;
}

static void
add_cond(sk_userspace_status *st, const char *type, const char *status, const char *reason,
        int64_t since)
{
	sk_condition *c;

	st->conditions = realloc(st->conditions, (st->n_conditions + 1) * sizeof(*c));
	c = &st->conditions[st->n_conditions++];
	memset(c, 0, sizeof(*c));
	c->type = strdup(type);
	c->status = strdup(status);
	c->reason = strdup(reason);
	c->message = strdup("");
	c->last_transition_ms = since;
	c->observed_generation = 1;
}

static sk_userspace *
build_us(const plan_case *tc)
{
	sk_userspace *us = calloc(1, sizeof(*us));
	sk_userspace_spec *s = &us->spec;

	us->meta.name = strdup("alice");
	us->meta.uid = strdup("uid-1");
	us->meta.generation = 1;
	us->meta.resource_version = 5;
	if (!tc->no_finalizer) {
		us->meta.finalizers = calloc(1, sizeof(char *));
		us->meta.finalizers[0] = strdup(SK_FINALIZER);
		us->meta.n_finalizers = 1;
	}
	if (tc->hold)
		sk_kvlist_set(&us->meta.annotations, SK_ANNOTATION_PAUSED, "true");
	if (tc->deleting)
		us->meta.deletion_ms = NOW - SEC;
	s->user_id = strdup("alice@example.com");
	s->fork_from = tc->fork_from ? strdup(tc->fork_from) : NULL;
	us->status.usage.creates = tc->prev_creates;
	s->template_id = tc->tmpl ? strdup(tc->tmpl) : NULL;
	s->mode = tc->mode;
	s->cpu_count = tc->cpu;
	s->on_timeout = SK_ON_TIMEOUT_PAUSE;
	s->auto_resume = true;
	s->deletion_policy = tc->policy;
	s->remediation = tc->remediation;
	if (!tc->no_env)
		sk_kvlist_set(&s->env, "KEY", "value");
	sk_kvlist_set(&s->metadata, "team", "research lab");
	sk_userspace_apply_defaults(us);
	s->idle_timeout_ms = tc->idle;
	if (tc->busy_ignore)
		s->busy = SK_BUSY_IGNORE;
	s->max_busy_ms = tc->max_busy ? tc->max_busy : 2 * 60 * MIN; /* the default */
	us->status.last_activity_ms = at(tc->prev_activity);
	us->status.phase = tc->phase;
	us->status.sandbox_id = tc->bound ? strdup(tc->bound) : NULL;
	us->status.observed_generation = 1;
	us->status.last_reconcile_ms = NOW + tc->last_reconcile;
	if (tc->prev_dp_reason)
		add_cond(&us->status, SK_COND_DATAPLANE, "Unknown", tc->prev_dp_reason,
		        NOW + tc->prev_dp_since);
	if (tc->prev_healthy_since)
		add_cond(&us->status, SK_COND_DATAPLANE, "True", "Healthy",
		        NOW + tc->prev_healthy_since);
	if (tc->prev_busy)
		add_cond(&us->status, SK_COND_BUSY, "True", SK_REASON_PROCESSES_RUNNING, NOW - MIN);
	if (tc->prev_drift) {
		us->status.drift = calloc(1, sizeof(sk_drift));
		us->status.drift[0].type = strdup(tc->prev_drift);
		us->status.drift[0].sandbox_id = strdup(tc->bound);
		us->status.drift[0].since_ms = NOW + tc->prev_drift_since;
		us->status.drift[0].detail = strdup("");
		us->status.n_drift = 1;
	}
	return us;
}

static void
add_sandbox(sk_observed *ob, const char *id, sk_sandbox_state state, int64_t started, int64_t end,
        const char *tmpl, int cpu)
{
	sk_sandbox sb;

	memset(&sb, 0, sizeof(sb));
	sb.id = strdup(id);
	sb.template_id = strdup(tmpl ? tmpl : "base");
	sb.state = state;
	sb.started_ms = started;
	sb.end_ms = end;
	sb.cpu_count = cpu;
	sk_kvlist_set(&sb.metadata, SK_META_USER_ID, "alice-example.com");
	sk_kvlist_set(&sb.metadata, SK_META_MANAGED_BY, SK_MANAGED_BY_VALUE);
	sk_observed_add(ob, &sb);
	sk_sandbox_dispose(&sb);
}

static void
build_ob(const plan_case *tc, sk_observed *ob)
{
	sk_observed_init(ob);
	ob->list_valid = true;
	ob->listed_ms = NOW - 10 * SEC;
	for (size_t i = 0; i < 4 && tc->sbs[i].id; i++) {
		const sb_spec *s = &tc->sbs[i];
		add_sandbox(ob, s->id, s->state, NOW + s->started, s->end ? NOW + s->end : 0,
		        s->tmpl, s->cpu);
	}
	ob->bound = tc->bound_lookup;
	if (tc->bound_err) {
		ob->bound_error.code = tc->bound_err;
		snprintf(ob->bound_error.message, sizeof(ob->bound_error.message), "GET: 503");
	}
	ob->user = tc->user_lookup;
	ob->user_ms = NOW;
	ob->activity_ms = at(tc->activity);
	ob->wake = tc->wake;
	ob->replace_now = tc->replace_now;
	ob->evict = tc->evict;
	ob->evict_quota = tc->evict_quota;
	ob->capacity_wait = tc->capacity_wait;
	ob->procs_made = tc->procs >= 0 && (tc->procs > 0 || tc->want_busy != NULL);
	ob->procs_running = tc->procs > 0 ? tc->procs : 0;
	if (tc->deadline) {
		ob->deadline_for = tc->bound;
		ob->deadline_ms = NOW + tc->deadline;
		ob->deadline_set_ms = NOW + tc->deadline_set;
	}
	if (tc->user_err) {
		ob->user_error.code = tc->user_err;
		snprintf(ob->user_error.message, sizeof(ob->user_error.message), "list: down");
	}
	for (size_t i = 0; i < 3 && tc->probes[i].id; i++) {
		bool made = tc->probes[i].status >= 0; /* -1: the backend has no probe */
		sk_observed_add_probe(ob, tc->probes[i].id, made, tc->probes[i].health,
		        made ? tc->probes[i].status : 0, NOW, made ? 0 : SK_ENOTSUPPORTED);
	}
}

static void
actions_str(const sk_plan_result *r, char *buf, size_t n)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < r->n_actions; i++) {
		const sk_action *a = &r->actions[i];
		if (a->type == SK_ACTION_EVENT)
			continue;
		off += snprintf(buf + off, n - off, "%s%s%s%s%s%s%s%s%s%s", off ? " " : "",
		        sk_action_type_name(a->type), a->sandbox_id ? ":" : "",
		        a->sandbox_id ? a->sandbox_id : "", a->why ? "(" : "",
		        a->why ? sk_kill_reason_name(a->why) : "", a->why ? ")" : "",
		        a->fork_from ? "<fork:" : "", a->fork_from ? a->fork_from : "",
		        a->fork_from ? ">" : "");
	}
}

static void
drift_str(const sk_userspace_status *st, char *buf, size_t n)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < st->n_drift; i++)
		off += snprintf(buf + off, n - off, "%s%s:%s", off ? "," : "", st->drift[i].type,
		        st->drift[i].sandbox_id ? st->drift[i].sandbox_id : "-");
}

static const sk_condition *
cond(const sk_userspace_status *st, const char *type)
{
	for (size_t i = 0; i < st->n_conditions; i++) {
		if (strcmp(st->conditions[i].type, type) == 0)
			return &st->conditions[i];
	}
	return NULL;
}

/* The first EVENT action of this reason, NULL: none planned. */
static const sk_action *
event_of(const sk_plan_result *r, const char *reason)
{
	for (size_t i = 0; i < r->n_actions; i++) {
		if (r->actions[i].type == SK_ACTION_EVENT &&
		        strcmp(r->actions[i].reason, reason) == 0)
			return &r->actions[i];
	}
	return NULL;
}

static bool
has_event(const sk_plan_result *r, const char *reason)
{
	return event_of(r, reason) != NULL;
}

static void
check_expectations(const plan_case *tc, const sk_plan_result *r)
{
	char buf[1024];
	const sk_condition *ready = cond(&r->next, SK_COND_READY);
	const sk_condition *drifted = cond(&r->next, SK_COND_DRIFTED);

	actions_str(r, buf, sizeof(buf));
	ck_assert_msg(strcmp(buf, tc->actions) == 0, "%s: actions \"%s\", want \"%s\"", tc->name,
	        buf, tc->actions);
	if (tc->want_phase)
		ck_assert_msg(r->next.phase == tc->want_phase, "%s: phase %s, want %s", tc->name,
		        sk_phase_name(r->next.phase), sk_phase_name(tc->want_phase));
	if (tc->want_drift) {
		drift_str(&r->next, buf, sizeof(buf));
		ck_assert_msg(strcmp(buf, tc->want_drift) == 0, "%s: drift \"%s\", want \"%s\"",
		        tc->name, buf, tc->want_drift);
	}
	ck_assert_ptr_nonnull(drifted);
	ck_assert_str_eq(drifted->status, r->next.n_drift ? "True" : "False");
	if (r->next.n_drift)
		ck_assert_str_eq(drifted->reason, r->next.drift[0].type);
	if (tc->want_bound)
		ck_assert_msg(
		        strcmp(r->next.sandbox_id ? r->next.sandbox_id : "-", tc->want_bound) == 0,
		        "%s: bound %s, want %s", tc->name, r->next.sandbox_id, tc->want_bound);
	if (tc->want_ready) {
		ck_assert_ptr_nonnull(ready);
		ck_assert_msg(strcmp(ready->status, tc->want_ready) == 0, "%s: Ready %s, want %s",
		        tc->name, ready->status, tc->want_ready);
	}
	ck_assert_msg(r->wait_code == tc->want_wait, "%s: wait %d, want %d", tc->name, r->wait_code,
	        tc->want_wait);
	if (tc->requeue_min)
		ck_assert_msg(r->requeue_after_ms >= tc->requeue_min, "%s: requeue %lld < %lld",
		        tc->name, (long long)r->requeue_after_ms, (long long)tc->requeue_min);
	if (tc->requeue_max)
		ck_assert_msg(r->requeue_after_ms <= tc->requeue_max, "%s: requeue %lld > %lld",
		        tc->name, (long long)r->requeue_after_ms, (long long)tc->requeue_max);
	ck_assert_int_gt(r->requeue_after_ms, 0);
	if (tc->want_since) {
		ck_assert_int_ge(r->next.n_drift, 1);
		ck_assert_int_eq(r->next.drift[0].since_ms, NOW + tc->want_since);
	}
	if (tc->want_event)
		ck_assert_msg(
		        has_event(r, tc->want_event), "%s: no %s event", tc->name, tc->want_event);
	if (tc->want_event_says) {
		const sk_action *ev = event_of(r, tc->want_event);
		ck_assert_msg(ev != NULL && strstr(ev->message, tc->want_event_says) != NULL,
		        "%s: the %s event says \"%s\", want \"%s\"", tc->name, tc->want_event,
		        ev ? ev->message : "", tc->want_event_says);
	}
	if (tc->no_event)
		ck_assert_msg(!has_event(r, tc->no_event), "%s: unwanted %s event", tc->name,
		        tc->no_event);
	if (tc->want_activity)
		ck_assert_msg(r->next.last_activity_ms == NOW + tc->want_activity,
		        "%s: lastActivityTime %lld, want %lld", tc->name,
		        (long long)(r->next.last_activity_ms - NOW), (long long)tc->want_activity);
	if (tc->want_follow_up)
		ck_assert_msg(r->follow_up == (tc->want_follow_up > 0), "%s: follow_up %d",
		        tc->name, (int)r->follow_up);
	if (tc->want_synced) {
		const sk_condition *synced = cond(&r->next, SK_COND_SYNCED);
		ck_assert_msg(strcmp(synced->reason, tc->want_synced) == 0, "%s: Synced %s",
		        tc->name, synced->reason);
	}
	ck_assert_int_eq(r->next.observed_generation, 1);
	ck_assert_int_eq(r->next.n_conditions, 4 + (cond(&r->next, SK_COND_BUSY) != NULL));
	if (tc->want_busy) {
		const sk_condition *b = cond(&r->next, SK_COND_BUSY);
		ck_assert_msg(strcmp(b ? b->status : "-", tc->want_busy) == 0,
		        "%s: Busy %s, want %s", tc->name, b ? b->status : "-", tc->want_busy);
	}
	for (size_t i = 0; tc->want_timeout && i < r->n_actions; i++) {
		if (r->actions[i].type == SK_ACTION_SET_TIMEOUT)
			ck_assert_msg(r->actions[i].timeout_ms == tc->want_timeout,
			        "%s: timeout %lld, want %lld", tc->name,
			        (long long)r->actions[i].timeout_ms, (long long)tc->want_timeout);
	}
}

/* ---- the fake provider for the idempotence check ---- */

static sk_sandbox *
fake_find(sk_observed *ob, const char *id)
{
	for (size_t i = 0; id && i < ob->sandboxes.len; i++) {
		if (strcmp(ob->sandboxes.items[i].id, id) == 0)
			return &ob->sandboxes.items[i];
	}
	return NULL;
}

static void
fake_kill(sk_observed *ob, sk_userspace *us, const char *id)
{
	sk_sandbox_list *l = &ob->sandboxes;

	for (size_t i = 0; i < l->len; i++) {
		if (strcmp(l->items[i].id, id) == 0) {
			sk_sandbox_dispose(&l->items[i]);
			memmove(&l->items[i], &l->items[i + 1],
			        (l->len - i - 1) * sizeof(*l->items));
			l->len--;
			break;
		}
	}
	if (us->status.sandbox_id && strcmp(us->status.sandbox_id, id) == 0)
		ob->bound = SK_LOOKUP_NOT_FOUND;
}

static void
fake_apply(const sk_plan_result *r, sk_observed *ob, sk_userspace *us, int64_t now)
{
	const char *created = NULL;

	for (size_t i = 0; i < r->n_actions; i++) {
		const sk_action *a = &r->actions[i];
		const char *id = a->sandbox_id ? a->sandbox_id : created;
		sk_sandbox *sb = fake_find(ob, id);
		switch (a->type) {
		case SK_ACTION_CREATE:
			add_sandbox(ob, "new1", SK_SANDBOX_RUNNING, now, now + a->timeout_ms,
			        a->template_id, a->cpu_count);
			sk_observed_add_probe(ob, "new1", true, SK_HEALTH_OK, 200, now, 0);
			created = "new1";
			break;
		case SK_ACTION_CONNECT:
			ck_assert_ptr_nonnull(sb);
			sb->state = SK_SANDBOX_RUNNING;
			sb->end_ms = now + a->timeout_ms;
			sk_observed_add_probe(ob, id, true, SK_HEALTH_OK, 200, now, 0);
			break;
		case SK_ACTION_PAUSE:
			ck_assert_ptr_nonnull(sb);
			sb->state = SK_SANDBOX_PAUSED;
			break;
		case SK_ACTION_KILL: fake_kill(ob, us, id); break;
		case SK_ACTION_SET_TIMEOUT:
			ck_assert_ptr_nonnull(sb);
			sb->end_ms = now + a->timeout_ms;
			break;
		case SK_ACTION_REMOVE_FINALIZER:
			for (size_t f = 0; f < us->meta.n_finalizers; f++)
				free(us->meta.finalizers[f]);
			us->meta.n_finalizers = 0;
			break;
		case SK_ACTION_SET_NETWORK:
			ck_assert_ptr_nonnull(sb);
			sk_network_dispose(&sb->network);
			sk_network_copy(&sb->network, &a->network);
			sb->network_known = true;
			break;
		case SK_ACTION_ARCHIVE:
		case SK_ACTION_RESTORE:
		case SK_ACTION_PURGE_ARCHIVE:
		case SK_ACTION_DELETE_SNAPSHOT:
		case SK_ACTION_SNAPSHOT:
		case SK_ACTION_BIND:
		case SK_ACTION_EVENT:
		case SK_ACTION_INIT_ENV:
		case SK_ACTION_WRITE_MARKER: break;
		}
	}
	sk_userspace_status_dispose(&us->status);
	sk_userspace_status_copy(&us->status, &r->next);
	if (us->status.sandbox_id == NULL && created) {
		us->status.sandbox_id = strdup(created);
		ob->bound = SK_LOOKUP_FOUND;
	}
}

static bool
starts_keeper(const sk_plan_result *r)
{
	for (size_t i = 0; i < r->n_actions; i++) {
		if (r->actions[i].type == SK_ACTION_CREATE ||
		        r->actions[i].type == SK_ACTION_CONNECT)
			return true;
	}
	return false;
}

START_TEST(test_plan_table)
{
	const plan_case *tc = &cases[_i];
	sk_plan_options o;
	sk_userspace *us = build_us(tc);
	sk_observed ob;
	sk_plan_result r, again;

	opts_for(tc, &o);
	build_ob(tc, &ob);
	ck_assert_int_eq(sk_plan(us, &ob, NOW, &o, &r), 0);
	check_expectations(tc, &r);
	/* idempotence: apply, plan again, no mutating action left (a plan that
	 * starts the keeper is followed, in the same reconcile or the next, by
	 * the round that ends the warm-up and re-asserts the env: apply that
	 * one too) */
	fake_apply(&r, &ob, us, NOW);
	ck_assert_int_eq(sk_plan(us, &ob, NOW + SEC, &o, &again), 0);
	if (starts_keeper(&r)) {
		ck_assert(!again.follow_up);
		fake_apply(&again, &ob, us, NOW + SEC);
		sk_plan_result_dispose(&again);
		ck_assert_int_eq(sk_plan(us, &ob, NOW + 2 * SEC, &o, &again), 0);
	}
	for (size_t i = 0; i < again.n_actions; i++) {
		sk_buf b = SK_BUF_INIT(1024);
		sk_action_describe(&again.actions[i], &b);
		ck_assert_msg(!sk_action_is_mutating(&again.actions[i]),
		        "%s: not idempotent, second plan: %s", tc->name, b.data);
		sk_buf_dispose(&b);
	}
	sk_plan_result_dispose(&again);
	sk_plan_result_dispose(&r);
	sk_observed_dispose(&ob);
	sk_userspace_free(us);
}
END_TEST

/* When observe asks envd for the keeper's processes: only in the deadline's
 * second half, not at its very end, without activity that renews anyway,
 * within maxBusy, for busy Processes and a space that may sleep. */
START_TEST(test_busy_check)
{
	plan_case tc = { .bound = "i1", .phase = SK_PHASE_RUNNING, .idle = 10 * MIN };
	sk_userspace *us = build_us(&tc);
	sk_plan_options o;
	sk_sandbox k = { .id = "i1", .state = SK_SANDBOX_RUNNING, .started_ms = NOW - HOUR };

	sk_plan_options_init(&o);
	us->status.last_activity_ms = NOW - 20 * MIN;
	k.end_ms = NOW + 4 * MIN;
	ck_assert(sk_plan_busy_check(us, &k, 0, NOW, &o));
	k.end_ms = NOW + 6 * MIN; /* first half: nothing may lapse yet */
	ck_assert(!sk_plan_busy_check(us, &k, 0, NOW, &o));
	k.end_ms = NOW + SEC; /* within the sleep margin: a call could wake it */
	ck_assert(!sk_plan_busy_check(us, &k, 0, NOW, &o));
	k.end_ms = NOW + 4 * MIN;
	ck_assert(!sk_plan_busy_check(us, &k, NOW - MIN, NOW, &o)); /* activity renews */
	/* activity the deadline already covers (last activity + D is the
	 * deadline: no renewal for it): envd is asked */
	ck_assert(sk_plan_busy_check(us, &k, NOW - 6 * MIN, NOW, &o));
	us->spec.max_busy_ms = 15 * MIN; /* 20 min since the last activity */
	ck_assert(!sk_plan_busy_check(us, &k, 0, NOW, &o));
	us->spec.max_busy_ms = 2 * 60 * MIN;
	us->spec.busy = SK_BUSY_IGNORE;
	ck_assert(!sk_plan_busy_check(us, &k, 0, NOW, &o));
	us->spec.busy = SK_BUSY_PROCESSES;
	us->spec.idle_timeout_ms = 0; /* always on: renewed anyway */
	ck_assert(!sk_plan_busy_check(us, &k, 0, NOW, &o));
	us->spec.idle_timeout_ms = 10 * MIN;
	k.state = SK_SANDBOX_PAUSED;
	ck_assert(!sk_plan_busy_check(us, &k, 0, NOW, &o));
	sk_userspace_free(us);
}
END_TEST

/* Pure: the same inputs give the same plan; and nothing in the input changes. */
START_TEST(test_plan_deterministic)
{
	const plan_case *tc = &cases[11];
	sk_plan_options o;
	sk_userspace *us = build_us(tc);
	sk_userspace *copy = sk_userspace_dup(us);
	sk_observed ob;
	sk_plan_result a, b;
	char sa[1024], sb[1024];

	opts_for(tc, &o);
	build_ob(tc, &ob);
	sk_plan(us, &ob, NOW, &o, &a);
	sk_plan(us, &ob, NOW, &o, &b);
	actions_str(&a, sa, sizeof(sa));
	actions_str(&b, sb, sizeof(sb));
	ck_assert_str_eq(sa, sb);
	ck_assert(sk_userspace_status_equal(&a.next, &b.next));
	ck_assert(sk_userspace_status_equal(&us->status, &copy->status));
	sk_plan_result_dispose(&a);
	sk_plan_result_dispose(&b);
	sk_observed_dispose(&ob);
	sk_userspace_free(us);
	sk_userspace_free(copy);
}
END_TEST

/* A template the controller only reports says how to roll it out (once
 * plan said "no changes" and nothing more). */
START_TEST(test_spec_mismatch_says_how_to_roll_out)
{
	const plan_case *tc = NULL;
	sk_plan_options o;
	sk_userspace *us;
	sk_observed ob;
	sk_plan_result r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]) && tc == NULL; i++) {
		if (strncmp(cases[i].name, "template and cpu differ", 23) == 0)
			tc = &cases[i];
	}
	ck_assert_ptr_nonnull(tc);
	us = build_us(tc);
	opts_for(tc, &o);
	build_ob(tc, &ob);
	sk_plan(us, &ob, NOW, &o, &r);
	ck_assert_uint_eq(r.next.n_drift, 1);
	ck_assert_msg(strstr(r.next.drift[0].detail, "template other, spec wants base") != NULL &&
	                strstr(r.next.drift[0].detail, "spec.updateStrategy: Migrate") != NULL &&
	                strstr(r.next.drift[0].detail, "spacectl rollout restart") != NULL,
	        "%s", r.next.drift[0].detail);
	sk_plan_result_dispose(&r);
	sk_observed_dispose(&ob);
	sk_userspace_free(us);
}
END_TEST

/* status.storage is the executor's (what the last create mounted): a plan
 * keeps it while spec.storage asks for a volume, and drops it when no more. */
START_TEST(test_storage_status_kept_while_asked)
{
	sk_plan_options o;
	sk_userspace *us = build_us(&cases[0]);
	sk_observed ob;
	sk_plan_result r;

	sk_plan_options_init(&o);
	sk_observed_init(&ob);
	us->status.storage.state = strdup(SK_STORAGE_MOUNTED);
	us->status.storage.volume_name = strdup("sk-alice");
	us->status.storage.volume_id = strdup("vol1");
	us->status.storage.mount_path = strdup("/home/user");
	us->spec.storage.volume_policy = SK_VOLUME_RETAIN;
	ck_assert_int_eq(sk_plan(us, &ob, NOW, &o, &r), 0);
	ck_assert(sk_storage_status_equal(&r.next.storage, &us->status.storage));
	sk_plan_result_dispose(&r);
	us->spec.storage.volume_policy = SK_VOLUME_UNSET;
	ck_assert_int_eq(sk_plan(us, &ob, NOW, &o, &r), 0);
	ck_assert_ptr_null(r.next.storage.state);
	sk_plan_result_dispose(&r);
	sk_observed_dispose(&ob);
	sk_userspace_free(us);
}
END_TEST

START_TEST(test_create_request)
{
	sk_plan_options o;
	sk_userspace *us = build_us(&cases[0]);
	sk_observed ob;
	sk_plan_result r;
	const sk_action *a;
	sk_buf b = SK_BUF_INIT(1024);

	sk_plan_options_init(&o);
	us->spec.cpu_count = 2;
	us->spec.memory_mb = 1024;
	sk_observed_init(&ob);
	sk_plan(us, &ob, NOW, &o, &r);
	ck_assert_int_ge(r.n_actions, 2);
	a = &r.actions[0];
	ck_assert_int_eq(a->type, SK_ACTION_CREATE);
	ck_assert_str_eq(a->template_id, "base");
	ck_assert_int_eq(a->timeout_ms, HOUR);
	ck_assert(a->auto_pause);
	ck_assert(a->auto_resume);
	ck_assert_int_eq(a->cpu_count, 2);
	ck_assert_int_eq(a->memory_mb, 1024);
	ck_assert_str_eq(sk_kvlist_get(&a->metadata, "user_id"), "alice-example.com");
	ck_assert_str_eq(sk_kvlist_get(&a->metadata, "userspace"), "alice");
	ck_assert_str_eq(sk_kvlist_get(&a->metadata, "userspace_uid"), "uid-1");
	ck_assert_str_eq(sk_kvlist_get(&a->metadata, "managed_by"), "spacekeeper");
	ck_assert_str_eq(sk_kvlist_get(&a->metadata, "team"), "research-lab");
	ck_assert_str_eq(sk_kvlist_get(&a->env, "KEY"), "value");
	ck_assert_int_eq(r.actions[1].type, SK_ACTION_BIND);
	sk_action_describe(a, &b);
	ck_assert_msg(strncmp(b.data, "create sandbox (template base, timeout 1h", 41) == 0, "%s",
	        b.data);
	sk_buf_dispose(&b);
	/* onTimeout kill -> autoPause false */
	sk_plan_result_dispose(&r);
	us->spec.on_timeout = SK_ON_TIMEOUT_KILL;
	sk_plan(us, &ob, NOW, &o, &r);
	ck_assert(!r.actions[0].auto_pause);
	sk_plan_result_dispose(&r);
	sk_observed_dispose(&ob);
	sk_userspace_free(us);
}
END_TEST

START_TEST(test_describe)
{
	sk_action a;
	sk_buf b = SK_BUF_INIT(1024);

	memset(&a, 0, sizeof(a));
	a.type = SK_ACTION_KILL;
	a.sandbox_id = "i123";
	a.why = SK_KILL_DUPLICATE;
	sk_action_describe(&a, &b);
	ck_assert_str_eq(b.data, "kill i123 (Duplicate)");
	sk_buf_reset(&b);
	a.type = SK_ACTION_CONNECT;
	a.timeout_ms = HOUR;
	sk_action_describe(&a, &b);
	ck_assert_str_eq(b.data, "resume i123 (timeout 1h)");
	sk_buf_dispose(&b);
}
END_TEST

/* Conditions keep lastTransitionTime when their status does not change. */
START_TEST(test_transition_time_kept)
{
	const plan_case *tc = &cases[1];
	sk_plan_options o;
	sk_userspace *us = build_us(tc);
	sk_observed ob;
	sk_plan_result r1, r2;
	const sk_condition *c1, *c2;

	opts_for(tc, &o);
	build_ob(tc, &ob);
	sk_plan(us, &ob, NOW, &o, &r1);
	sk_userspace_status_dispose(&us->status);
	sk_userspace_status_copy(&us->status, &r1.next);
	sk_plan(us, &ob, NOW + MIN, &o, &r2);
	c1 = cond(&r1.next, SK_COND_READY);
	c2 = cond(&r2.next, SK_COND_READY);
	ck_assert_str_eq(c2->status, "True");
	ck_assert_int_eq(c1->last_transition_ms, NOW);
	ck_assert_int_eq(c2->last_transition_ms, NOW);
	/* steady state: the next status equals the stored one (no write) */
	ck_assert(sk_userspace_status_equal(&r2.next, &us->status));
	sk_plan_result_dispose(&r1);
	sk_plan_result_dispose(&r2);
	sk_observed_dispose(&ob);
	sk_userspace_free(us);
}
END_TEST

/* ---- orphans ---- */

static bool
has_user(const char *user, void *arg)
{
	(void)arg;
	return strcmp(user, "alice") == 0;
}

static void
orphan_list(sk_sandbox_list *l)
{
	static const struct {
		const char *id, *user, *managed;
	} in[] = {
		{ "a1", "alice", "spacekeeper" },
		{ "o1", "bob", "spacekeeper" },
		{ "u1", "carol", NULL },
	};

	memset(l, 0, sizeof(*l));
	l->items = calloc(3, sizeof(sk_sandbox));
	for (size_t i = 0; i < 3; i++) {
		l->items[i].id = strdup(in[i].id);
		l->items[i].state = SK_SANDBOX_RUNNING;
		l->items[i].started_ms = NOW - HOUR;
		sk_kvlist_set(&l->items[i].metadata, SK_META_USER_ID, in[i].user);
		if (in[i].managed)
			sk_kvlist_set(&l->items[i].metadata, SK_META_MANAGED_BY, in[i].managed);
	}
	l->len = 3;
}

START_TEST(test_orphans)
{
	sk_sandbox_list all;
	sk_plan_options o;
	sk_orphan_list out;
	sk_kvlist seen = { 0 };

	orphan_list(&all);
	sk_plan_options_init(&o);
	/* default: reported, left alone */
	sk_plan_orphans(&all, has_user, NULL, NULL, NOW, &o, &out);
	ck_assert_int_eq(out.len, 1);
	ck_assert_str_eq(out.items[0].sandbox_id, "o1");
	ck_assert_str_eq(out.items[0].user_id, "bob");
	ck_assert(!out.items[0].kill);
	sk_orphan_list_dispose(&out);
	/* delete_orphans, first seen now: within the grace */
	o.delete_orphans = true;
	sk_plan_orphans(&all, has_user, NULL, &seen, NOW, &o, &out);
	ck_assert_int_eq(out.len, 1);
	ck_assert(!out.items[0].kill);
	ck_assert_int_eq(out.items[0].first_seen_ms, NOW);
	ck_assert_int_eq(seen.len, 1);
	sk_orphan_list_dispose(&out);
	/* later, past the grace: kill; first seen kept */
	sk_plan_orphans(&all, has_user, NULL, &seen, NOW + 11 * MIN, &o, &out);
	ck_assert_int_eq(out.len, 1);
	ck_assert(out.items[0].kill);
	ck_assert_int_eq(out.items[0].first_seen_ms, NOW);
	sk_orphan_list_dispose(&out);
	/* without memory, started time counts (an hour ago > 10m) */
	sk_plan_orphans(&all, has_user, NULL, NULL, NOW, &o, &out);
	ck_assert(out.items[0].kill);
	sk_orphan_list_dispose(&out);
	/* the orphan went away: forgotten */
	sk_sandbox_dispose(&all.items[1]);
	all.items[1] = all.items[2];
	all.len = 2;
	sk_plan_orphans(&all, has_user, NULL, &seen, NOW + 12 * MIN, &o, &out);
	ck_assert_int_eq(out.len, 0);
	ck_assert_int_eq(seen.len, 0);
	sk_orphan_list_dispose(&out);
	sk_kvlist_dispose(&seen);
	sk_sandbox_list_dispose(&all);
}
END_TEST

START_TEST(test_meta_value)
{
	char *v = sk_reconcile_meta_value("a b/c%d.e_f-G9");

	ck_assert_str_eq(v, "a-b-c-d.e_f-G9");
	free(v);
}
END_TEST

Suite *
sk_suite_plan(void)
{
	Suite *s = suite_create("plan");
	TCase *tc = tcase_create("table");

	tcase_add_loop_test(tc, test_plan_table, 0, (int)NCASES);
	tcase_add_test(tc, test_busy_check);
	tcase_add_test(tc, test_plan_deterministic);
	tcase_add_test(tc, test_spec_mismatch_says_how_to_roll_out);
	tcase_add_test(tc, test_create_request);
	tcase_add_test(tc, test_storage_status_kept_while_asked);
	tcase_add_test(tc, test_describe);
	tcase_add_test(tc, test_transition_time_kept);
	tcase_add_test(tc, test_orphans);
	tcase_add_test(tc, test_meta_value);
	suite_add_tcase(s, tc);
	return s;
}
