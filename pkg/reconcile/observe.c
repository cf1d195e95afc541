/*
 * reconcile/observe: gathers what the planner needs for one UserSpace.
 * The controller's list is used as is (it may be stale or empty); the
 * provider is asked directly only where absence would lead to a create or
 * where deletion must be complete: a GET of the bound sandbox when neither
 * the list nor the controller's own last look tells its state (sk_plan_look,
 * plan_look.c), a lookup by user_id on deletion or to resolve an unfinished
 * create; plus the data-plane probe of the running keeper (or of the running
 * candidates when nothing usable is bound), and, before an idle deadline may
 * lapse, the keeper's envd process list (lifecycle.busy).
 */
#include <stdlib.h>
#include <string.h>

#include "../api/names.h"
#include "reconcile_int.h"

static bool
managed(const sk_sandbox *sb)
{
	return sk_str_eq(sk_kvlist_get(&sb->metadata, SK_META_MANAGED_BY), SK_MANAGED_BY_VALUE);
}

static sk_sandbox *
find_id(sk_observed *o, const char *id)
{
	for (size_t i = 0; id != NULL && i < o->sandboxes.len; i++) {
		if (sk_str_eq(o->sandboxes.items[i].id, id))
			return &o->sandboxes.items[i];
	}
	return NULL;
}

static void
drop(sk_observed *o, const char *id)
{
	sk_sandbox_list *l = &o->sandboxes;

	for (size_t i = 0; i < l->len; i++) {
		if (sk_str_eq(l->items[i].id, id)) {
			sk_sandbox_dispose(&l->items[i]);
			memmove(&l->items[i], &l->items[i + 1],
			        (l->len - i - 1) * sizeof(*l->items));
			l->len--;
			return;
		}
	}
}

static void
get_bound(sk_provider *p, const char *id, sk_observed *o)
{
	sk_sandbox sb;
	int rc;

	memset(&sb, 0, sizeof(sb));
	o->bound_ms = sk_now_ms();
	rc = sk_sandbox_get(p, id, &sb, &o->bound_error);
	if (rc == 0 && sb.state != SK_SANDBOX_GONE) {
		o->bound = SK_LOOKUP_FOUND;
		sk_observed_add(o, &sb);
	} else if (rc == 0 || rc == SK_ENOTFOUND) {
		o->bound = SK_LOOKUP_NOT_FOUND; /* a stale list entry goes too */
		sk_error_clear(&o->bound_error);
		drop(o, id);
	} else {
		o->bound = SK_LOOKUP_ERROR;
		o->bound_error.code = rc;
	}
	sk_sandbox_dispose(&sb);
}

static void
lookup_user(sk_provider *p, const sk_userspace *us, sk_observed *o)
{
	sk_kvlist match = { 0 };
	sk_sandbox_list l = { 0 };
	char *uid = sk_reconcile_meta_value(us->spec.user_id);
	int rc;

	sk_kvlist_set(&match, SK_META_USER_ID, uid);
	sk_kvlist_set(&match, SK_META_MANAGED_BY, SK_MANAGED_BY_VALUE);
	o->user_ms = sk_now_ms();
	rc = sk_sandbox_list_all(p, &match, &l, &o->user_error);
	if (rc != 0) {
		o->user = SK_LOOKUP_ERROR;
		o->user_error.code = rc;
	} else {
		size_t found = 0;
		for (size_t i = 0; i < l.len; i++) {
			if (l.items[i].state == SK_SANDBOX_GONE || !managed(&l.items[i]))
				continue;
			sk_observed_add(o, &l.items[i]);
			found++;
		}
		o->user = found ? SK_LOOKUP_FOUND : SK_LOOKUP_NOT_FOUND;
	}
	sk_sandbox_list_dispose(&l);
	sk_kvlist_dispose(&match);
	free(uid);
}

/* Running, but so close to its deadline that it may be asleep by now: a
 * probe could wake it (autoResume resumes on traffic), so none is made. */
static bool
near_sleep(const sk_sandbox *sb, const sk_plan_options *opts)
{
	return sb->end_ms > 0 && sb->end_ms <= sk_now_ms() + opts->sleep_margin_ms;
}

static void
probe_one(sk_provider *p, const sk_sandbox *sb, sk_observed *o)
{
	sk_health h = SK_HEALTH_ERROR;
	int status = 0;
	sk_error e;
	int64_t when = sk_now_ms();
	int rc;

	sk_error_clear(&e);
	rc = sk_sandbox_probe_health(p, sb, &h, &status, &e);
	sk_observed_add_probe(o, sb->id, rc == 0, h, status, when, rc);
}

static int
cmp_newest(const void *a, const void *b)
{
	const sk_sandbox *x = *(const sk_sandbox *const *)a, *y = *(const sk_sandbox *const *)b;

	if (x->started_ms != y->started_ms)
		return x->started_ms > y->started_ms ? -1 : 1;
	return strcmp(y->id, x->id);
}

/* The running keeper, or the newest running candidates when none is bound. */
static void
probe(sk_provider *p, const sk_userspace *us, const sk_plan_options *opts, sk_observed *o)
{
	const sk_sandbox *bound = find_id(o, us->status.sandbox_id);
	const sk_sandbox **run;
	size_t n = 0;

	if (bound != NULL) {
		if (bound->state == SK_SANDBOX_RUNNING && !near_sleep(bound, opts))
			probe_one(p, bound, o);
		return;
	}
	run = sk_calloc(o->sandboxes.len + 1, sizeof(*run));
	for (size_t i = 0; i < o->sandboxes.len; i++) {
		if (o->sandboxes.items[i].state == SK_SANDBOX_RUNNING &&
		        !near_sleep(&o->sandboxes.items[i], opts))
			run[n++] = &o->sandboxes.items[i];
	}
	qsort(run, n, sizeof(*run), cmp_newest);
	for (size_t i = 0; i < n && i < opts->max_probes; i++) {
		probe_one(p, run[i], o);
		if (o->probes[o->n_probes - 1].made &&
		        o->probes[o->n_probes - 1].health == SK_HEALTH_OK)
			break;
	}
	free(run);
}

/* A running keeper whose data plane did not answer: confirm the control
 * plane still says running (it may have been paused or killed since the list). */
static void
confirm_unhealthy(sk_provider *p, const sk_userspace *us, const sk_keeper_known *known,
        sk_observed *o, bool got)
{
	const sk_probe *pr = sk_observed_probe(o, us->status.sandbox_id);

	if (got || pr == NULL || (pr->made && pr->health == SK_HEALTH_OK) ||
	        !sk_plan_confirm_unreachable(us, known))
		return;
	get_bound(p, us->status.sandbox_id, o);
}

/* The bound keeper as known beyond the list: its envd token and version
 * from an earlier answer (a list carries neither), else one GET when it
 * runs, no answer of it was seen (e.g. a controller restarted) and a user
 * came for it (activity_ms: a connect or heartbeat since this controller
 * started) or its envd is about to be asked for its processes (the token
 * is needed), so a restart costs a GET per returning user, not per space. */
static bool
fill_known(sk_provider *p, const sk_userspace *us, const sk_plan_options *opts,
        const sk_keeper_known *known, int64_t activity_ms, sk_observed *o, bool got)
{
	sk_sandbox *k = find_id(o, us->status.sandbox_id);

	if (k == NULL)
		return false;
	if (known != NULL && sk_str_eq(known->sandbox_id, k->id)) {
		if (k->envd_access_token == NULL && known->envd_access_token != NULL)
			k->envd_access_token = sk_strdup(known->envd_access_token);
		if (k->envd_version == NULL && known->envd_version != NULL)
			k->envd_version = sk_strdup(known->envd_version);
	}
	if (known == NULL || !known->fetch_detail || got || k->state != SK_SANDBOX_RUNNING ||
	        us->meta.deletion_ms != 0 ||
	        (activity_ms <= 0 && !sk_plan_busy_check(us, k, activity_ms, sk_now_ms(), opts)) ||
	        (known->detail_seen && sk_str_eq(known->sandbox_id, k->id)))
		return false;
	get_bound(p, us->status.sandbox_id, o);
	return true;
}

/* lifecycle.busy: the keeper's processes, when a renewal may hinge on them. */
static void
check_busy(sk_provider *p, const sk_userspace *us, const sk_plan_options *opts, int64_t activity_ms,
        sk_observed *o)
{
	const sk_sandbox *k = find_id(o, us->status.sandbox_id);
	sk_error e;
	int rc;

	if (k == NULL || !sk_plan_busy_check(us, k, activity_ms, sk_now_ms(), opts))
		return;
	sk_error_clear(&e);
	rc = sk_sandbox_list_processes(p, k, &o->procs_running, &e);
	o->procs_made = rc == 0;
	o->procs_error = rc;
}

/* The workspace marker of the running keeper whose data plane answered,
 * when the planner will judge it (after a resume). */
static void
check_marker(sk_provider *p, const sk_userspace *us, const sk_plan_options *opts, sk_observed *o)
{
	const sk_sandbox *k = find_id(o, us->status.sandbox_id);
	const sk_probe *pr = k ? sk_observed_probe(o, k->id) : NULL;

	if (pr == NULL || !pr->made || pr->health != SK_HEALTH_OK ||
	        k->state != SK_SANDBOX_RUNNING ||
	        sk_plan_marker_step(us, opts) != SK_MARKER_STEP_CHECK)
		return;
	o->marker = sk_marker_read(p, k, us, o->marker_detail, sizeof(o->marker_detail));
}

int
sk_observe(sk_provider *p, const sk_userspace *us, const sk_list_view *list,
        const sk_plan_options *opts, int64_t activity_ms, sk_observed *out, sk_error *err)
{
	return sk_observe_known(p, us, list, opts, activity_ms, NULL, out, err);
}

/* When the bound keeper's state was last truly seen, beyond the list or
 * the controller's look: a GET of it, or a healthy probe (it answers: it
 * runs). */
static void
note_look(const sk_userspace *us, sk_observed *o)
{
	const sk_probe *pr = sk_observed_probe(o, us->status.sandbox_id);

	if (o->bound == SK_LOOKUP_FOUND && o->bound_ms > o->look_ms)
		o->look_ms = o->bound_ms;
	if (pr != NULL && pr->made && pr->health == SK_HEALTH_OK && pr->probed_ms > o->look_ms)
		o->look_ms = pr->probed_ms;
}

/* The bound keeper as the controller knows it (SK_LOOK_KNOWN): its list
 * entry, when listed, with the state and deadline the look found; else
 * one made from the look (no template, size or metadata: the planner
 * checks those only when it knows them). */
static sk_sandbox *
use_known(sk_observed *o, const char *bound, const sk_keeper_known *known)
{
	sk_sandbox *k = find_id(o, bound);
	sk_sandbox sb;

	if (k == NULL) {
		memset(&sb, 0, sizeof(sb));
		sb.id = (char *)bound;
		sk_observed_add(o, &sb);
		k = find_id(o, bound);
	}
	k->state = known->look_state;
	k->end_ms = known->look_end_ms;
	o->look_ms = known->look_ms;
	return k;
}

/* The bound keeper's state: the list's, the controller's own look, or a
 * GET (sk_plan_look decides). true when a GET was made. */
static bool
look_bound(sk_provider *p, const sk_userspace *us, const sk_list_view *list,
        const sk_plan_options *opts, int64_t activity_ms, const sk_keeper_known *known,
        sk_observed *out)
{
	const char *bound = us->status.sandbox_id;
	sk_sandbox *k = find_id(out, bound);

	out->look = sk_plan_look(us, k, list, known, activity_ms, sk_now_ms(), opts);
	switch (out->look) {
	case SK_LOOK_NONE: return false;
	case SK_LOOK_GET: get_bound(p, bound, out); return true;
	case SK_LOOK_LIST: out->look_ms = list->listed_ms; return false;
	case SK_LOOK_KNOWN: use_known(out, bound, known); return false;
	case SK_LOOK_ASLEEP_MAYBE:
		/* the look it was running is carried (look_ms), its state is not */
		if (known != NULL && known->look_ms > 0 && sk_str_eq(known->sandbox_id, bound))
			k = use_known(out, bound, known);
		else
			out->look_ms =
			        list->listed_ms; /* as listed: sk_plan_look had a list entry */
		k->state = SK_SANDBOX_UNKNOWN; /* running or asleep: not asked */
		return false;
	}
	return false;
}

int
sk_observe_known(sk_provider *p, const sk_userspace *us, const sk_list_view *list,
        const sk_plan_options *opts, int64_t activity_ms, const sk_keeper_known *known,
        sk_observed *out, sk_error *err)
{
	const char *bound = us->status.sandbox_id;
	bool deleting = us->meta.deletion_ms != 0;
	bool got = false;

	sk_observed_init(out);
	if (known != NULL && known->sandbox_id != NULL) {
		out->deadline_for = known->sandbox_id;
		out->deadline_ms = known->deadline_ms;
		out->deadline_set_ms = known->deadline_set_ms;
	}
	if (list != NULL) {
		out->list_valid = list->valid;
		out->listed_ms = list->listed_ms;
		for (size_t i = 0; list->for_user && i < list->for_user->len; i++) {
			const sk_sandbox *sb = &list->for_user->items[i];
			if (sb->state != SK_SANDBOX_GONE && managed(sb) &&
			        !sk_plan_listed_killed(sb, list, known))
				sk_observed_add(out, sb);
		}
	}
	got = look_bound(p, us, list, opts, activity_ms, known, out);
	if (deleting ||
	        (bound == NULL && us->status.phase == SK_PHASE_CREATING && out->sandboxes.len == 0))
		lookup_user(p, us, out);
	if (bound != NULL && fill_known(p, us, opts, known, activity_ms, out, got))
		got = true;
	if (!deleting && opts->probe && us->spec.mode == SK_MODE_RUNNING &&
	        !sk_plan_quiet(us, activity_ms, sk_now_ms())) {
		probe(p, us, opts, out);
		if (bound != NULL && out->bound != SK_LOOKUP_NOT_FOUND)
			confirm_unhealthy(p, us, known, out, got);
		check_marker(p, us, opts, out);
	}
	if (!deleting && us->spec.mode == SK_MODE_RUNNING)
		check_busy(p, us, opts, activity_ms, out);
	note_look(us, out);
	return 0;
}
