/*
 * reconcile/plan: the pure planner (docs/architecture.md, Invariants). Desired UserSpace + observed
 * sandboxes + now -> ordered actions, next status, requeue delay. No I/O and
 * no clock: every rule is table-tested in test/unit/check_plan.c.
 *
 * Choices documented here:
 * - Ready for mode Paused is True when the keeper is paused as desired (or
 *   there is no sandbox at all: a Paused UserSpace never creates one).
 * - A create or resume opens a warm-up window (DataPlaneHealthy Unknown with
 *   reason Starting/Resuming; its lastTransitionTime is the start): within
 *   resume_grace_ms an unreachable data plane is transient (phase Resuming or
 *   Creating), afterwards it is DataPlaneUnreachable drift.
 * - See reconcile.h for the crash-safe create (phase Creating, nothing bound).
 * - Idle (rule 3): with lifecycle.idleTimeout D > 0 the provider pauses the
 *   sandbox after D without activity. A paused keeper of a Running space is
 *   phase Idle, not drift, and Ready stays True (reason Idle): the space is
 *   available, a connect resumes it. So `spacectl wait --for=condition=Ready`
 *   after an apply returns once the space has a sandbox, awake or asleep.
 *   The planner resumes an Idle keeper only when a connect is waiting
 *   (observed.wake), and renews a running keeper's deadline only when there
 *   was activity since the deadline was last set and less than D/2 is left.
 *   D = 0 is always on: paused keepers are resumed, deadlines renewed at
 *   half-life, whatever the activity.
 * - Busy (lifecycle.busy) and a deadline set by someone else
 *   (DeadlineOverridden): keep_alive asks plan_deadline.c.
 * - The environment (rule 9): after a create or resume, once the data plane
 *   first answers (the warm-up ends), spec.env is re-asserted through envd
 *   /init, since commands run as `bash -l -c` may lose create-time envVars.
 */
#include <stdlib.h>
#include <string.h>

#include "../api/kvlist.h"
#include "../api/migration.h"
#include "../api/names.h"
#include "../api/network.h"
#include "../api/sandbox_values.h"
#include "../api/status.h"
#include "../api/storage.h"
#include "../api/userspace.h"
#include "migrate_int.h"
#include "observe.h"
#include "observe_int.h"
#include "options.h"
#include "outcome_int.h"
#include "plan.h"
#include "plan_int.h"
#include "reconcile_int.h"

static bool
always_on(const sk_pctx *c)
{
	return c->us->spec.idle_timeout_ms <= 0;
}

/* The last activity known: the controller's memory or the persisted one. */
static int64_t
activity(const sk_pctx *c)
{
	int64_t a = c->prev->last_activity_ms;

	return c->ob->activity_ms > a ? c->ob->activity_ms : a;
}

/* Re-asserts spec.env (envd /init) on id (NULL: the sandbox just created). */
static void
push_init_env(sk_pctx *c, const char *id)
{
	const sk_kvlist *env = &c->us->spec.env;
	sk_action *a;

	if (env->len == 0 || c->hold)
		return;
	a = sk_plan_push(c, SK_ACTION_INIT_ENV, id);
	for (size_t i = 0; i < env->len; i++)
		sk_kvlist_set(&a->env, env->items[i].key, env->items[i].value);
}

/* spec.source.fork on the space's first create: no sandbox ever bound and
 * none counted (status.usage.creates). A copy, or NULL. */
char *
sk_plan_fork_source(const sk_userspace *us)
{
	const sk_userspace_status *st = &us->status;

	if (us->spec.fork_from == NULL || st->sandbox_id != NULL || st->usage.creates > 0)
		return NULL;
	return sk_strdup(us->spec.fork_from);
}

static void
push_create(sk_pctx *c)
{
	sk_action *a = sk_plan_push(c, SK_ACTION_CREATE, NULL);
	sk_create_request req;

	sk_reconcile_create_request(c->us, c->o, &a->metadata, &req);
	a->template_id = sk_strdup(req.template_id);
	a->timeout_ms = req.timeout_ms;
	a->auto_pause = req.auto_pause;
	a->auto_resume = req.auto_resume;
	a->cpu_count = req.cpu_count;
	a->memory_mb = req.memory_mb;
	for (size_t i = 0; i < req.env->len; i++)
		sk_kvlist_set(&a->env, req.env->items[i].key, req.env->items[i].value);
	sk_network_copy(&a->network, req.network);
	a->fork_from = sk_plan_fork_source(c->us);
	if (sk_plan_archive_snapshot(c->prev) != NULL) {
		/* archived as a snapshot: the next sandbox starts from it, and
		 * says so (its template is the snapshot's, no drift) */
		char *v = sk_reconcile_meta_value(sk_plan_archive_snapshot(c->prev));
		free(a->template_id);
		a->template_id = sk_strdup(sk_plan_archive_snapshot(c->prev));
		sk_kvlist_set(&a->metadata, SK_META_SNAPSHOT, v);
		free(v);
	}
	if (!c->o->probe)
		push_init_env(c, NULL);
	sk_plan_push(c, SK_ACTION_BIND, NULL);
	sk_plan_set_binding(c, NULL);
	sk_plan_requeue(c, c->o->short_requeue_ms);
}

/* No keeper and a create is allowed (no binding, or the bound one is gone). */
static void
plan_absent(sk_pctx *c)
{
	sk_userspace_status *n = &c->r->next;

	if (c->us->spec.mode == SK_MODE_PAUSED) {
		n->phase = SK_PHASE_PAUSED;
		sk_plan_cond(c, SK_C_READY, "True", SK_REASON_PAUSED,
		        "no sandbox; one is created when mode is Running");
		sk_plan_cond(c, SK_C_DATAPLANE, "Unknown", SK_REASON_NO_SANDBOX, "no sandbox");
		return;
	}
	if (c->hold) {
		n->phase = SK_PHASE_PENDING;
		sk_plan_drift(c, SK_DRIFT_MISSING, NULL, "no sandbox (not created: %s is set)",
		        SK_ANNOTATION_PAUSED);
		sk_plan_cond(c, SK_C_READY, "False", SK_REASON_SANDBOX_MISSING, "no sandbox");
		sk_plan_cond(c, SK_C_DATAPLANE, "Unknown", SK_REASON_NO_SANDBOX, "no sandbox");
		return;
	}
	if (c->ob->capacity_wait) {
		sk_plan_capacity_wait(c);
		return;
	}
	push_create(c);
	n->phase = SK_PHASE_CREATING;
	sk_plan_cond(c, SK_C_READY, "False", SK_REASON_CREATING, "creating the sandbox");
	sk_plan_cond(c, SK_C_DATAPLANE, "Unknown", SK_REASON_STARTING,
	        "waiting for the data plane of the new sandbox");
}

static void
check_spec(sk_pctx *c, const sk_sandbox *k)
{
	const sk_userspace_spec *s = &c->us->spec;
	sk_buf b = SK_BUF_INIT(1024);
	bool tmpl = !sk_sandbox_restored(k) && k->template_id != NULL && s->template_id != NULL &&
	        !sk_str_eq(s->template_id, k->template_id) && !sk_str_eq(s->template_id, k->alias);

	if (tmpl)
		sk_buf_printf(&b, "template %s, spec wants %s",
		        k->alias ? k->alias : k->template_id, s->template_id);
	if (s->cpu_count > 0 && k->cpu_count > 0 && s->cpu_count != k->cpu_count)
		sk_buf_printf(&b, "%scpuCount %d, spec wants %d", b.len ? "; " : "", k->cpu_count,
		        s->cpu_count);
	if (s->memory_mb > 0 && k->memory_mb > 0 && s->memory_mb != k->memory_mb)
		sk_buf_printf(&b, "%smemoryMB %d, spec wants %d", b.len ? "; " : "", k->memory_mb,
		        s->memory_mb);
	sk_plan_network(c, k, &b);
	/* A template can be rolled out (a new sandbox, files moved); say how. */
	if (tmpl)
		sk_plan_drift(c, SK_DRIFT_SPEC, k->id,
		        "%s (report only: updateStrategy Report; roll it out with "
		        "spec.updateStrategy: Migrate or spacectl rollout restart)",
		        b.data);
	else if (b.len > 0)
		sk_plan_drift(c, SK_DRIFT_SPEC, k->id, "%s (report only)", b.data);
	sk_buf_dispose(&b);
}

static void
keep_previous(sk_pctx *c, int which, const char *type)
{
	const sk_condition *old = sk_plan_prev_cond(c, type);

	if (old != NULL)
		sk_plan_cond(c, which, old->status, old->reason, "%s", old->message);
}

/* The keeper was just created or resumed and its data plane has not
 * answered yet (DataPlaneHealthy Unknown, reason Starting or Resuming). */
static bool
started(const sk_pctx *c)
{
	const sk_condition *dp = sk_plan_prev_cond(c, SK_COND_DATAPLANE);

	return dp != NULL && sk_str_eq(dp->status, "Unknown") &&
	        (sk_str_eq(dp->reason, SK_REASON_STARTING) ||
	                sk_str_eq(dp->reason, SK_REASON_RESUMING));
}

/* Started, and still within the grace in which 502/503/504 is transient. */
static bool
warming(const sk_pctx *c)
{
	const sk_condition *dp = sk_plan_prev_cond(c, SK_COND_DATAPLANE);

	return started(c) && c->now - dp->last_transition_ms < c->o->resume_grace_ms;
}

static void
replace(sk_pctx *c, const sk_sandbox *k)
{
	push_create(c);
	sk_action *a = sk_plan_push(c, SK_ACTION_KILL, k->id);
	a->why = SK_KILL_REPLACE;
	c->r->next.phase = SK_PHASE_CREATING;
	sk_plan_cond(c, SK_C_READY, "False", SK_REASON_REPLACING,
	        "replacing %s: data plane unreachable%s", k->id,
	        c->ob->replace_now ? " when a user connected" : " past health.unhealthyAfter");
	sk_plan_cond(c, SK_C_DATAPLANE, "Unknown", SK_REASON_STARTING,
	        "waiting for the data plane of the replacement");
}

static void
unreachable(sk_pctx *c, const sk_sandbox *k, const sk_probe *p)
{
	const sk_userspace_spec *s = &c->us->spec;
	int64_t since, due;

	if (warming(c)) {
		const sk_condition *dp = sk_plan_prev_cond(c, SK_COND_DATAPLANE);
		c->r->next.phase =
		        c->prev->phase == SK_PHASE_CREATING ? SK_PHASE_CREATING : SK_PHASE_RESUMING;
		sk_plan_cond(c, SK_C_READY, "False", dp->reason,
		        "data plane answered %d right after start; within the grace",
		        p->http_status);
		sk_plan_cond(c, SK_C_DATAPLANE, "Unknown", dp->reason, "%s", dp->message);
		sk_plan_requeue(c, c->o->short_requeue_ms);
		return;
	}
	since = sk_plan_drift(c, SK_DRIFT_DATAPLANE, k->id,
	        p->http_status ? "data plane answered %d" : "data plane unreachable (status %d)",
	        p->http_status);
	c->r->next.phase = SK_PHASE_DEGRADED;
	sk_plan_cond(c, SK_C_READY, "False", SK_DRIFT_DATAPLANE,
	        "sandbox %s runs but its data "
	        "plane is unreachable",
	        k->id);
	sk_plan_cond(
	        c, SK_C_DATAPLANE, "False", SK_DRIFT_DATAPLANE, "GET /health: %d", p->http_status);
	if (s->remediation != SK_REMEDIATION_REPLACE)
		return;
	due = since + s->unhealthy_after_ms;
	if ((c->now >= due || c->ob->replace_now) && !c->hold)
		replace(c, k);
	else
		sk_plan_requeue(c, due - c->now);
}

/* The running keeper's deadline (rule 9): always-on spaces are renewed at
 * half-life; others only when the deadline would otherwise fall before
 * the last activity + D, within the renewal window before it
 * (sk_plan_renew_window), and then to D after the last activity: an active
 * user costs one set_timeout per D minus the window (not two per D), an inactive one none; a busy one (lifecycle.busy) is renewed
 * below D/2 left as before; and a deadline someone else set is put back. */
static void
keep_alive(sk_pctx *c, const sk_sandbox *k)
{
	int64_t ttl = sk_plan_ttl(c->us, c->o), timeout = ttl, fix = 0;
	int64_t remaining = k->end_ms - c->now, window = ttl / 2;
	bool due = remaining <= window;

	if (k->end_ms <= 0)
		return;
	if (!always_on(c)) {
		/* activity: renewed within the window before the deadline, to
		 * idleTimeout after the last activity, when that is later; busy:
		 * in the second half, as before (sk_plan_busy) */
		int64_t want = activity(c) + ttl - c->now;
		bool renew;
		window = sk_plan_renew_window(ttl, c->o);
		renew = remaining <= window && want > remaining + SK_RENEW_SLACK_MS;
		if (renew)
			timeout = want;
		due = renew || (due && sk_plan_busy(c, k, &timeout));
	}
	if (sk_plan_overridden(c, k, &fix) && !due) {
		due = true;
		timeout = fix;
	}
	if (due && !c->hold) {
		sk_action *a = sk_plan_push(c, SK_ACTION_SET_TIMEOUT, k->id);
		a->timeout_ms = timeout;
		remaining = timeout;
	}
	if (always_on(c))
		sk_plan_requeue(c, remaining / 2);
	else if (remaining > ttl / 2 && c->us->spec.busy == SK_BUSY_PROCESSES &&
	        c->us->spec.max_busy_ms > 0)
		sk_plan_requeue(c, remaining - ttl / 2); /* when a busy check may be due */
	else if (remaining > window)
		sk_plan_requeue(c, remaining - window); /* when a renewal may be due */
}

static void
plan_running(sk_pctx *c, const sk_sandbox *k)
{
	const sk_probe *p = sk_observed_probe(c->ob, k->id);
	size_t before = c->r->n_actions;

	c->r->next.phase = SK_PHASE_RUNNING;
	if (!c->o->probe || (p != NULL && !p->made && p->error_code == SK_ENOTSUPPORTED)) {
		/* no data-plane probe (disabled, or the backend has none, e.g. daytona) */
		sk_plan_cond(
		        c, SK_C_READY, "True", SK_REASON_RUNNING, "sandbox %s is running", k->id);
		sk_plan_cond(c, SK_C_DATAPLANE, "Unknown", SK_REASON_NOT_PROBED,
		        "the data plane is not probed");
		if (c->o->probe && started(c))
			push_init_env(c, k->id);
	} else if (p == NULL &&
	        ((k->end_ms > 0 && k->end_ms <= c->now + c->o->sleep_margin_ms) ||
	                sk_plan_quiet(c->us, c->ob->activity_ms, c->now))) {
		/* falling asleep, or quiet: not probed (traffic would wake it or
		 * keep it awake); the conditions stay as they were, and the next
		 * list says whether it sleeps (no GET at the deadline) */
		keep_previous(c, SK_C_READY, SK_COND_READY);
		keep_previous(c, SK_C_DATAPLANE, SK_COND_DATAPLANE);
	} else if (p == NULL || !p->made) {
		sk_plan_cond(c, SK_C_READY, "Unknown", SK_REASON_NOT_PROBED,
		        "data plane not probed yet");
		sk_plan_cond(c, SK_C_DATAPLANE, "Unknown", SK_REASON_NOT_PROBED, "no probe result");
		sk_plan_requeue(c, c->o->short_requeue_ms);
	} else if (p->health == SK_HEALTH_OK) {
		sk_plan_cond(
		        c, SK_C_READY, "True", SK_REASON_RUNNING, "sandbox %s is running", k->id);
		sk_plan_cond(c, SK_C_DATAPLANE, "True", SK_REASON_HEALTHY, "GET /health: %d",
		        p->http_status);
		/* The warm-up ends (the data plane answers), or the provider resumed
		 * an Idle keeper on traffic (autoResume): either way the env the
		 * create set may be gone. */
		bool restore = sk_plan_archive_pending(c) && !c->hold && !sk_plan_restore_held(c);
		if (restore)
			sk_plan_restore(c, k);
		if (started(c) || c->prev->phase == SK_PHASE_IDLE || restore)
			push_init_env(c, k->id);
		if (restore)
			sk_plan_workspace_restored(c, k);
		else
			sk_plan_workspace(c, k);
	} else if (p->health == SK_HEALTH_UNREACHABLE) {
		unreachable(c, k, p);
	} else {
		c->r->next.phase = SK_PHASE_DEGRADED;
		sk_plan_cond(c, SK_C_READY, "False", SK_REASON_DATAPLANE_ERROR, "data plane error");
		sk_plan_cond(c, SK_C_DATAPLANE, "False", SK_REASON_DATAPLANE_ERROR,
		        "GET /health: %d", p->http_status);
	}
	for (size_t i = before; i < c->r->n_actions; i++) {
		if (c->r->actions[i].type == SK_ACTION_CREATE)
			return; /* replaced: no lifecycle for the old one */
	}
	keep_alive(c, k);
}

/* A paused keeper of a Running space that nothing asks to wake: asleep. */
static void
idle(sk_pctx *c, const sk_sandbox *k)
{
	c->r->next.phase = SK_PHASE_IDLE;
	sk_plan_cond(c, SK_C_READY, "True", SK_REASON_IDLE,
	        "sandbox %s is asleep after lifecycle.idleTimeout; a connect resumes it", k->id);
	sk_plan_cond(c, SK_C_DATAPLANE, "Unknown", SK_REASON_IDLE, "sandbox is asleep");
	if (sk_plan_was_busy(c))
		sk_plan_busy_cond(
		        c, "False", SK_REASON_NO_PROCESSES, "sandbox %s is asleep", k->id);
	if (c->prev->phase != SK_PHASE_IDLE)
		sk_plan_event(c, "Normal", SK_REASON_IDLE, "sandbox %s is asleep (idle)", k->id);
	if (!sk_plan_archive_pending(c))
		sk_plan_archive_idle(c, k);
	else
		sk_plan_restore_failed(c); /* asleep without its files: not Ready */
}

static void
resume(sk_pctx *c, const sk_sandbox *k)
{
	sk_action *a;

	if ((!always_on(c) && !(c->ob->wake && !c->hold)) || (c->ob->capacity_wait && !c->hold)) {
		idle(c, k); /* asleep; or waiting for a slot at its provider */
		return;
	}
	if (c->hold) {
		c->r->next.phase = SK_PHASE_PAUSED;
		sk_plan_drift(c, SK_DRIFT_STATE, k->id, "paused, spec.mode is Running");
		sk_plan_cond(c, SK_C_READY, "False", SK_REASON_PAUSED_ANNOTATION,
		        "sandbox %s is paused", k->id);
		sk_plan_cond(c, SK_C_DATAPLANE, "Unknown", SK_REASON_PAUSED, "sandbox is paused");
		return;
	}
	/* connect resumes with the lifecycle's deadline: one provider call */
	a = sk_plan_push(c, SK_ACTION_CONNECT, k->id);
	a->timeout_ms = sk_plan_ttl(c->us, c->o);
	a->wake = c->ob->wake ? SK_WAKE_CONNECT : SK_WAKE_NONE;
	if (!c->o->probe)
		push_init_env(c, k->id);
	c->r->next.phase = SK_PHASE_RESUMING;
	sk_plan_cond(c, SK_C_READY, "False", SK_REASON_RESUMING, "resuming sandbox %s", k->id);
	sk_plan_cond(c, SK_C_DATAPLANE, "Unknown", SK_REASON_RESUMING,
	        "waiting for the data plane after resume");
	sk_plan_requeue(c, c->o->short_requeue_ms);
}

static void
park(sk_pctx *c, const sk_sandbox *k)
{
	if (k->state == SK_SANDBOX_RUNNING) {
		if (c->hold) {
			c->r->next.phase = SK_PHASE_RUNNING;
			sk_plan_drift(c, SK_DRIFT_STATE, k->id, "running, spec.mode is Paused");
			sk_plan_cond(c, SK_C_READY, "False", SK_REASON_PAUSED_ANNOTATION,
			        "sandbox %s is running", k->id);
			return;
		}
		sk_plan_push(c, SK_ACTION_PAUSE, k->id);
	}
	c->r->next.phase = SK_PHASE_PAUSED;
	sk_plan_cond(
	        c, SK_C_READY, "True", SK_REASON_PAUSED, "sandbox %s is paused as desired", k->id);
	sk_plan_cond(c, SK_C_DATAPLANE, "Unknown", SK_REASON_PAUSED, "sandbox is paused");
}

/* The keeper exists but may have fallen asleep at its deadline (observe
 * did not ask: SK_LOOK_ASLEEP_MAYBE). A waiting connect resumes it with
 * the deadline, which answers and acts in one call (resumes it if asleep,
 * renews it if not); else it is left to sleep and the next list says. */
static void
plan_unknown(sk_pctx *c, const sk_sandbox *k)
{
	if (c->ob->wake && !c->hold) {
		resume(c, k);
		return;
	}
	keep_previous(c, SK_C_READY, SK_COND_READY);
	keep_previous(c, SK_C_DATAPLANE, SK_COND_DATAPLANE);
}

static void
plan_keeper(sk_pctx *c, const sk_sandbox *k)
{
	check_spec(c, k);
	if (k->state == SK_SANDBOX_UNKNOWN && c->us->spec.mode == SK_MODE_RUNNING) {
		plan_unknown(c, k);
		return;
	}
	if (k->state != SK_SANDBOX_RUNNING && k->state != SK_SANDBOX_PAUSED) {
		if (c->r->next.phase == SK_PHASE_NONE)
			c->r->next.phase = SK_PHASE_PENDING;
		sk_plan_cond(c, SK_C_READY, "False", SK_REASON_TRANSITIONING, "sandbox %s is %s",
		        k->id, sk_sandbox_state_name(k->state));
		sk_plan_requeue(c, c->o->short_requeue_ms);
		return;
	}
	if (c->us->spec.mode == SK_MODE_PAUSED)
		park(c, k);
	else if (k->state == SK_SANDBOX_PAUSED)
		resume(c, k);
	else if (!sk_plan_archive_running(c, k) && !sk_plan_evict(c, k))
		plan_running(c, k);
}

/* The source of a migration while it is kept (Retiring, or Done with
 * sourcePolicy Retain) is no duplicate: the migration retires it. */
static bool
kept_source(const sk_pctx *c, const char *id)
{
	const sk_migration_status *m = &c->prev->migration;

	return sk_str_eq(m->source.sandbox_id, id) &&
	        (m->phase == SK_MIG_RETIRING ||
	                (m->phase == SK_MIG_DONE && c->us->spec.source_policy == SK_DELETE_RETAIN));
}

/* A migration starts (status.migration Pending; the migration round takes
 * it from there, once the space is idle). */
static void
start_migration(sk_pctx *c, const sk_sandbox *k, const char *why)
{
	sk_migration_status *m = &c->r->next.migration;
	const sk_userspace_spec *s = &c->us->spec;

	sk_migration_dispose(m);
	m->phase = SK_MIG_PENDING;
	m->source.provider = sk_strdup(sk_bound_provider(c->us));
	m->source.template_id = sk_strdup(k->alias ? k->alias : k->template_id);
	m->source.sandbox_id = sk_strdup(k->id);
	m->target.provider = sk_strdup(s->provider);
	m->target.template_id = sk_strdup(s->template_id);
	m->start_ms = c->now;
	m->step_ms = c->now;
	m->trigger = sk_strdup(why);
	if (sk_migration_is_restore(m)) {
		/* the snapshot lives at the bound provider; recorded here, the
		 * annotation is acted on once (the next restartedAt starts another) */
		free(m->target.provider);
		free(m->target.template_id);
		m->target.provider = sk_strdup(sk_bound_provider(c->us));
		m->target.template_id = sk_strdup(sk_migration_restore_from(c->us));
		sk_plan_event(c, "Normal", SK_REASON_MIGRATION_PENDING,
		        "restoring from snapshot %s: the next sandbox starts from it; "
		        "sandbox %s goes once the new one answers its probe",
		        m->target.template_id, k->id);
		sk_plan_requeue(c, c->o->min_requeue_ms);
		return;
	}
	sk_plan_event(c, "Normal", SK_REASON_MIGRATION_PENDING,
	        "moving to provider %s, template %s (%s); starts when idle for %lld s%s",
	        s->provider, s->template_id, why, (long long)(s->when_idle_ms / 1000),
	        sk_migration_now(c->us) ? " or now (rollout --now)" : "");
	sk_plan_requeue(c, c->o->min_requeue_ms);
}

/* Every managed sandbox of the user but the keeper: bind first, then kill. */
static void
duplicates(sk_pctx *c, const char *keeper)
{
	const sk_userspace_status *n = &c->r->next;
	bool bound = false;

	for (size_t i = 0; i < c->ob->sandboxes.len; i++) {
		const sk_sandbox *sb = &c->ob->sandboxes.items[i];
		if (keeper == NULL || sb->state == SK_SANDBOX_GONE || sk_str_eq(sb->id, keeper) ||
		        kept_source(c, sb->id) || sk_plan_archived_sandbox(c, sb->id))
			continue;
		sk_plan_drift(c, SK_DRIFT_DUPLICATE, sb->id, "duplicate of %s%s", keeper,
		        c->hold ? " (not deleted: paused annotation)" : "; deleting");
		if (c->hold)
			continue;
		if (!bound && !sk_str_eq(n->sandbox_id, c->prev->sandbox_id))
			sk_plan_push(c, SK_ACTION_BIND, n->sandbox_id);
		bound = true;
		sk_plan_push(c, SK_ACTION_KILL, sb->id)->why = SK_KILL_DUPLICATE;
	}
}

static void
plan_live(sk_pctx *c)
{
	const sk_sandbox *k = NULL;
	int ks = sk_plan_pick_keeper(c, &k);
	sk_userspace_status *n = &c->r->next;

	if (ks == SK_KEEPER_FOUND && !c->hold)
		sk_plan_set_binding(c, k->id);
	if (ks == SK_KEEPER_CREATE && !c->hold) {
		if (!sk_plan_archive_gone(c, c->prev->sandbox_id))
			sk_plan_workspace_gone(c, c->prev->sandbox_id);
		sk_plan_set_binding(c, NULL);
		if (!sk_str_eq(sk_bound_provider(c->us), c->us->spec.provider)) {
			/* nothing to move: the next round creates at spec.provider */
			free(n->provider);
			n->provider = sk_strdup(c->us->spec.provider);
			n->phase = SK_PHASE_PENDING;
			sk_plan_requeue(c, c->o->min_requeue_ms);
			sk_plan_workspace_finish(c);
			return;
		}
	}
	if (ks == SK_KEEPER_FOUND && !c->hold) {
		/* a sandbox started from a snapshot has the snapshot's template */
		const char *why = sk_sandbox_restored(k)
		        ? sk_migration_trigger(c->us, NULL, NULL)
		        : sk_migration_trigger(c->us, k->template_id, k->alias);
		if (why == NULL)
			why = sk_plan_network_trigger(c, k);
		if (why != NULL)
			start_migration(c, k, why);
	}
	duplicates(c, ks == SK_KEEPER_FOUND ? k->id : c->prev->sandbox_id);
	sk_plan_archive_cleanup(c);
	sk_plan_snapshot_cleanup(c);
	switch (ks) {
	case SK_KEEPER_FOUND:
		plan_keeper(c, k);
		sk_plan_snapshots(c, k);
		break;
	case SK_KEEPER_CREATE:
		/* archived: a sandbox is made (and the files restored) for a connect */
		if (n->archive.state == SK_ARCHIVE_ARCHIVED && !c->ob->wake &&
		        c->us->spec.mode == SK_MODE_RUNNING && !c->hold)
			sk_plan_archived(c);
		else
			plan_absent(c);
		break;
	case SK_KEEPER_WAIT:
		if (n->phase == SK_PHASE_NONE)
			n->phase = SK_PHASE_PENDING;
		keep_previous(c, SK_C_READY, SK_COND_READY);
		keep_previous(c, SK_C_DATAPLANE, SK_COND_DATAPLANE);
		if (!c->hold)
			sk_plan_cond(c, SK_C_SYNCED, "False", SK_REASON_OBSERVE_FAILED, "%s",
			        c->r->wait_message);
		break;
	case SK_KEEPER_WAIT_CREATING:
		n->phase = SK_PHASE_CREATING;
		sk_plan_cond(c, SK_C_READY, "False", SK_REASON_CREATING, "%s", c->r->wait_message);
		if (!c->hold)
			sk_plan_cond(c, SK_C_SYNCED, c->r->wait_code ? "False" : "True",
			        c->r->wait_code ? SK_REASON_OBSERVE_FAILED
			                        : SK_REASON_AWAITING_CREATE,
			        "%s", c->r->wait_message);
		break;
	}
	sk_plan_workspace_finish(c);
}

/* lastActivityTime is persisted at most once per D/4 (D: the deadline). */
static int64_t
next_activity(const sk_pctx *c)
{
	int64_t prev = c->prev->last_activity_ms;
	int64_t step = sk_plan_ttl(c->us, c->o) / 4;

	if (c->ob->activity_ms > prev && (prev == 0 || c->ob->activity_ms - prev >= step))
		return c->ob->activity_ms;
	return prev;
}

/* A plan that starts the keeper (create or resume) and does nothing that
 * needs its binding stored first (kill, pause, finalizer): observe the
 * started sandbox at once and write binding and health together. A
 * replacement's kill of the old keeper is no such thing: the Creating mark
 * written before the create already unbound it, so the replacement is
 * probed in the same reconcile, not one requeue later. */
static bool
wants_follow_up(const sk_pctx *c)
{
	bool starts = false;

	if (!c->o->probe || c->us->spec.mode != SK_MODE_RUNNING || c->r->wait_code != 0)
		return false;
	for (size_t i = 0; i < c->r->n_actions; i++) {
		switch (c->r->actions[i].type) {
		case SK_ACTION_CREATE:
		case SK_ACTION_CONNECT: starts = true; break;
		case SK_ACTION_KILL:
			if (c->r->actions[i].why == SK_KILL_REPLACE)
				break;
			return false;
		case SK_ACTION_PAUSE:
		case SK_ACTION_REMOVE_FINALIZER: return false;
		default: break;
		}
	}
	return starts;
}

int
sk_plan(const sk_userspace *desired, const sk_observed *observed, int64_t now_ms,
        const sk_plan_options *opts, sk_plan_result *out)
{
	sk_pctx c;
	const sk_condition *synced;
	const char *ann = sk_kvlist_get(&desired->meta.annotations, SK_ANNOTATION_PAUSED);

	memset(out, 0, sizeof(*out));
	memset(&c, 0, sizeof(c));
	c.us = desired;
	c.prev = &desired->status;
	c.ob = observed;
	c.o = opts;
	c.now = now_ms;
	c.r = out;
	c.hold = ann != NULL && strcmp(ann, "true") == 0;
	out->next.phase = c.prev->phase;
	out->next.sandbox_id = sk_strdup(c.prev->sandbox_id);
	out->next.last_reconcile_ms = c.prev->last_reconcile_ms;
	out->next.last_activity_ms = next_activity(&c);
	out->next.provider = sk_strdup(sk_bound_provider(desired));
	sk_migration_copy(&out->next.migration, &c.prev->migration);
	sk_archive_status_copy(&out->next.archive, &c.prev->archive);
	sk_network_status_copy(&out->next.network, &c.prev->network);
	sk_snapshots_status_copy(&out->next.snapshots, &c.prev->snapshots);
	/* status.storage: what the last create mounted (the executor's), while asked for */
	if (sk_storage_wanted(&desired->spec))
		sk_storage_status_copy(&out->next.storage, &c.prev->storage);
	if (observed->wake)
		out->next.archive.intent_ms = 0; /* a connect first: no archive under way */
	sk_plan_cond(&c, SK_C_SYNCED, "True", SK_REASON_RECONCILED, "observed state converged");
	if (c.hold && desired->meta.deletion_ms == 0) {
		synced = sk_plan_prev_cond(&c, SK_COND_SYNCED);
		sk_plan_cond(&c, SK_C_SYNCED, "False", SK_REASON_PAUSED_ANNOTATION,
		        "%s is true: observing only", SK_ANNOTATION_PAUSED);
		if (synced == NULL || !sk_str_eq(synced->reason, SK_REASON_PAUSED_ANNOTATION))
			sk_plan_event(&c, "Normal", SK_REASON_PAUSED_ANNOTATION,
			        "%s is true: observing only", SK_ANNOTATION_PAUSED);
	}
	if (desired->meta.deletion_ms != 0)
		sk_plan_delete(&c);
	else
		plan_live(&c);
	sk_plan_archive_awake(&c);
	sk_plan_usage(&c);
	sk_plan_finish(&c);
	out->follow_up = wants_follow_up(&c);
	return 0;
}
