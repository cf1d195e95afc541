/*
 * reconcile/observe_int: the observation's helpers and the pure decisions
 * that steer observe (how the keeper's state is learnt, what is probed)
 * (private to reconcile).
 */
#ifndef SK_RECONCILE_OBSERVE_INT_H
#define SK_RECONCILE_OBSERVE_INT_H

#include "../api/kvlist.h"
#include "../api/sandbox_values.h"
#include "../api/userspace.h"
#include "../sandbox/sandbox.h"
#include "../util/util.h"
#include "observe.h"
#include "options.h"

void sk_observed_init(sk_observed *o);
/* Adds a copy of sb (replacing one with the same id). */
void sk_observed_add(sk_observed *o, const sk_sandbox *sb);
void sk_observed_add_probe(sk_observed *o, const char *id, bool made, sk_health h, int http_status,
        int64_t when_ms, int error_code);

/* Decides sk_look for us's bound keeper: listed is its entry in the list
 * (NULL: not listed), known what the controller knows (may be NULL). The
 * controller's own look wins over an older list (a renewal moves no
 * lastReconcileTime when nothing else changed: the list's deadline is the
 * old one). Doubt asks: a look older than probe_fresh_ms or than the last
 * provider change (status.lastReconcileTime), of another sandbox, that
 * found it neither running nor paused, or a list newer than the look that
 * lacks it; a keeper near its deadline whose renewal is wanted without a
 * waiting connect. */
sk_look sk_plan_look(const sk_userspace *us, const sk_sandbox *listed, const sk_list_view *list,
        const sk_keeper_known *known, int64_t activity_ms, int64_t now_ms,
        const sk_plan_options *opts);
/* A list entry of the sandbox this controller killed (known->killed_id)
 * after that list was made: stale, left out of the observation (planned
 * on, it would be killed again as a duplicate, and answer 404). */
bool sk_plan_listed_killed(
        const sk_sandbox *listed, const sk_list_view *list, const sk_keeper_known *known);
/* Whether a running keeper whose probe failed is confirmed by a GET (it
 * may have been paused or killed since the list, then it is resumed or
 * re-created, not replaced): yes, except when a user's report asks for
 * its replacement now under remediation Replace and nothing holds the
 * space. Then the report is evidence enough, and the kill that follows
 * answers the same question (a 404: it was gone). */
bool sk_plan_confirm_unreachable(const sk_userspace *us, const sk_keeper_known *known);
/* How long before a sleeping space's deadline it is renewed when there was
 * activity since: a quarter of the idle timeout, at least sleep_margin_ms
 * + 1 s, at most a minute (and at most half the timeout). */
int64_t sk_plan_renew_window(int64_t ttl_ms, const sk_plan_options *opts);

/* The sandbox metadata value for a string: characters outside [A-Za-z0-9._-]
 * become '-', at most 256 bytes. Caller frees. */
char *sk_reconcile_meta_value(const char *s);
/* The create request of a sandbox for us, from its spec: the one builder of
 * the planner's CREATE and of a migration's target. Adds the metadata of
 * sk_reconcile_sandbox_metadata to meta (the caller's); req borrows meta and
 * the strings and env of us. */
void sk_reconcile_create_request(const sk_userspace *us, const sk_plan_options *opts,
        sk_kvlist *meta, sk_create_request *req);

/* A space that may sleep (idleTimeout > 0) whose keeper was probed healthy
 * (DataPlaneHealthy True) and that saw no activity (activity_ms,
 * status.lastActivityTime, or the keeper turning healthy after a create or
 * resume) within the last idleTimeout: its keeper's data plane is not
 * probed. A probe is traffic: on a provider whose idle window slides with
 * data-plane requests (Cube) it would keep the sandbox awake forever. It is
 * probed again when its user comes back (a connect is activity). */
bool sk_plan_quiet(const sk_userspace *us, int64_t activity_ms, int64_t now_ms);

/* lifecycle.busy: whether to ask the running keeper k's envd for its
 * processes now. Only for a space that may sleep with busy Processes, when
 * k's deadline is within its second half (a renewal may be due), not so
 * close that it may be asleep (data-plane traffic could wake it), with no
 * activity that renews it anyway, and within maxBusy of the last activity.
 * activity_ms: the caller's memory (status.lastActivityTime counts too). */
bool sk_plan_busy_check(const sk_userspace *us, const sk_sandbox *k, int64_t activity_ms,
        int64_t now_ms, const sk_plan_options *opts);

const sk_probe *sk_observed_probe(const sk_observed *o, const char *id);

/* sk_observe with what the caller knows of the keeper (may be NULL): its
 * token reaches the keeper's envd calls, a running keeper whose envd
 * version is not known is read once (GET), and the deadline goes into out. */
int sk_observe_known(sk_provider *p, const sk_userspace *us, const sk_list_view *list,
        const sk_plan_options *opts, int64_t activity_ms, const sk_keeper_known *known,
        sk_observed *out, sk_error *err);

/* The metadata every created sandbox carries (spec.metadata + the managed keys). */
void sk_reconcile_sandbox_metadata(const sk_userspace *us, sk_kvlist *out);

#endif
