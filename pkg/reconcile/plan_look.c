/*
 * reconcile/plan_look: how a reconcile learns the bound keeper's state
 * (pure: no I/O, no clock), and when a sleeping space's deadline is renewed.
 *
 * What the controller itself did (create, resume, set_timeout) and saw (a
 * GET, a list newer than its last provider change, a healthy probe) is an
 * observation as good as a GET: within probe_fresh_ms of it, and while no
 * later list or provider change contradicts it, a round uses it instead of
 * asking. Doubt still asks: a look older than that, of
 * another sandbox, that found it not running, a list newer than the look
 * that lacks it. A failed probe still asks too (observe's confirm step),
 * and a failed run clears the look (the report's look_ms is 0).
 *
 * Near its deadline (sleep_margin_ms) a running keeper may be asleep by
 * now, so its state is unknown. When a connect waits, the planner resumes
 * it with the deadline: one call that answers and acts (resumes if asleep,
 * renews if running) instead of a GET and then a resume. When nothing
 * wants it awake, it is left to fall asleep and the next list says so. A
 * renewal wanted without a waiting connect (activity, no connect) asks:
 * a heartbeat keeps an awake space awake but never wakes an Idle one.
 *
 * A user's report of a dead data plane under remediation Replace is
 * evidence enough: the failed probe is not confirmed by a GET, and a list
 * older than the replacement's kill does not show the old sandbox again.
 */
#include "../api/kvlist.h"
#include "../api/sandbox_values.h"
#include "../api/userspace.h"
#include "observe.h"
#include "observe_int.h"
#include "options.h"
#include "plan.h"
#include "reconcile_int.h"

int64_t
sk_plan_renew_window(int64_t ttl_ms, const sk_plan_options *opts)
{
	int64_t w = ttl_ms / 4;

	if (w < opts->sleep_margin_ms + 1000)
		w = opts->sleep_margin_ms + 1000;
	if (w > 60 * 1000)
		w = 60 * 1000;
	if (w > ttl_ms / 2)
		w = ttl_ms / 2;
	return w;
}

static bool
list_fresh(const sk_userspace *us, const sk_list_view *list)
{
	return list != NULL && list->valid && list->listed_ms > us->status.last_reconcile_ms;
}

static bool
known_fresh(const sk_userspace *us, const sk_sandbox *listed, const sk_list_view *list,
        const sk_keeper_known *k, int64_t now, const sk_plan_options *o)
{
	if (k == NULL || k->look_ms <= 0 ||
	        (k->look_state != SK_SANDBOX_RUNNING && k->look_state != SK_SANDBOX_PAUSED) ||
	        !sk_str_eq(k->sandbox_id, us->status.sandbox_id))
		return false;
	if (k->look_ms < us->status.last_reconcile_ms || now - k->look_ms > o->probe_fresh_ms)
		return false;
	/* a valid list made after the look that lacks the keeper: doubt */
	return listed != NULL || list == NULL || !list->valid || list->listed_ms <= k->look_ms;
}

sk_look
sk_plan_look(const sk_userspace *us, const sk_sandbox *listed, const sk_list_view *list,
        const sk_keeper_known *known, int64_t activity_ms, int64_t now, const sk_plan_options *o)
{
	int64_t end, ttl = sk_plan_ttl(us, o);
	bool running;
	sk_look l;
	bool kf = known_fresh(us, listed, list, known, now, o);

	if (us->status.sandbox_id == NULL)
		return SK_LOOK_NONE;
	if (listed != NULL && list_fresh(us, list) && !(kf && known->look_ms > list->listed_ms)) {
		l = SK_LOOK_LIST;
		end = listed->end_ms;
		running = listed->state == SK_SANDBOX_RUNNING;
	} else if (kf) {
		l = SK_LOOK_KNOWN;
		end = known->look_end_ms;
		running = known->look_state == SK_SANDBOX_RUNNING;
	} else {
		return SK_LOOK_GET;
	}
	if (!running || end <= 0 || end > now + o->sleep_margin_ms)
		return l;
	/* Near or past its deadline: asleep by now? (only where the data plane
	 * would be probed: a probe could wake it) */
	if (us->meta.deletion_ms != 0 || !o->probe || us->spec.mode != SK_MODE_RUNNING ||
	        sk_plan_quiet(us, activity_ms, now))
		return l;
	if (known != NULL && known->wake)
		return SK_LOOK_ASLEEP_MAYBE;
	if (us->status.last_activity_ms > activity_ms)
		activity_ms = us->status.last_activity_ms;
	if (us->spec.idle_timeout_ms <= 0 || activity_ms > end - ttl)
		return SK_LOOK_GET; /* a renewal is wanted: is it still awake? */
	return SK_LOOK_ASLEEP_MAYBE;
}

bool
sk_plan_listed_killed(
        const sk_sandbox *listed, const sk_list_view *list, const sk_keeper_known *known)
{
	return known != NULL && known->killed_id != NULL && known->killed_ms > 0 && list != NULL &&
	        sk_str_eq(listed->id, known->killed_id) && list->listed_ms <= known->killed_ms;
}

bool
sk_plan_confirm_unreachable(const sk_userspace *us, const sk_keeper_known *known)
{
	const char *hold = sk_kvlist_get(&us->meta.annotations, SK_ANNOTATION_PAUSED);

	return known == NULL || !known->replace_now ||
	        us->spec.remediation != SK_REMEDIATION_REPLACE || us->meta.deletion_ms != 0 ||
	        us->spec.mode != SK_MODE_RUNNING || (hold != NULL && sk_str_eq(hold, "true"));
}

const char *
sk_look_name(sk_look l)
{
	switch (l) {
	case SK_LOOK_NONE: return "none";
	case SK_LOOK_LIST: return "list";
	case SK_LOOK_KNOWN: return "known";
	case SK_LOOK_ASLEEP_MAYBE: return "asleep-maybe";
	case SK_LOOK_GET: return "get";
	}
	return "?";
}
