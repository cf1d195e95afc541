/*
 * reconcile/retention: a sleeping space near its provider's pausedRetention
 * with no archive to keep its files. A provider deletes
 * a sandbox paused that long (E2B: 30 days); with an archive configured the
 * space is archived before then, without one the files are lost, so
 * spacectl get and the status page warn while there is time to act: within
 * a fifth of the retention or a day of it, whichever is longer. Pure: the
 * config, the object and now in, the verdict out.
 */
#include <stdio.h>
#include <string.h>

#include "../api/config.h"
#include "../api/status.h"
#include "../api/userspace.h"
#include "plan.h"
#include "retention.h"

#define DAY_MS (24LL * 3600 * 1000)

/* When the sleep began: the DataPlaneHealthy condition's turn to Unknown
 * (Idle or Paused), or the last activity plus the idle timeout when that
 * is earlier (the provider pauses then; the controller sees it a resync
 * later). 0 when not known. */
static int64_t
asleep_since(const sk_userspace *us)
{
	const sk_condition *dp = sk_userspace_condition(us, SK_COND_DATAPLANE);
	int64_t since = 0, idle;

	if (dp != NULL && dp->status != NULL && strcmp(dp->status, "Unknown") == 0)
		since = dp->last_transition_ms;
	if (us->status.last_activity_ms > 0 && us->spec.idle_timeout_ms > 0) {
		idle = us->status.last_activity_ms + us->spec.idle_timeout_ms;
		if (since == 0 || idle < since)
			since = idle;
	}
	return since;
}

bool
sk_retention_check(
        const sk_controller_config *cfg, const sk_userspace *us, int64_t now_ms, sk_retention *out)
{
	const sk_provider_config *p;
	int64_t margin;

	memset(out, 0, sizeof(*out));
	if (cfg == NULL || cfg->archive != NULL || us->meta.deletion_ms > 0 ||
	        (us->status.phase != SK_PHASE_IDLE && us->status.phase != SK_PHASE_PAUSED))
		return false;
	p = sk_config_provider(cfg, sk_bound_provider(us));
	if (p == NULL || p->paused_retention_ms <= 0 || (out->since_ms = asleep_since(us)) <= 0)
		return false;
	out->provider = p->name;
	out->retention_ms = p->paused_retention_ms;
	out->left_ms = out->since_ms + p->paused_retention_ms - now_ms;
	margin = p->paused_retention_ms / 5 > DAY_MS ? p->paused_retention_ms / 5 : DAY_MS;
	out->warn = out->left_ms <= margin;
	return out->warn;
}

void
sk_retention_format(const sk_retention *r, const char *name, int64_t now_ms, char *buf, size_t len)
{
	char asleep[32], ret[32], left[32];

	sk_duration_format((now_ms - r->since_ms) / 1000 * 1000, asleep, sizeof(asleep));
	sk_duration_format(r->retention_ms, ret, sizeof(ret));
	sk_duration_format(r->left_ms > 0 ? r->left_ms / 1000 * 1000 : 0, left, sizeof(left));
	if (r->left_ms > 0)
		snprintf(buf, len,
		        "userspace %s has slept %s; provider %s deletes a sandbox paused %s, "
		        "in %s, and no archive is configured: its files will be lost unless it "
		        "wakes",
		        name, asleep, r->provider, ret, left);
	else
		snprintf(buf, len,
		        "userspace %s has slept %s, past provider %s's pausedRetention %s, and no "
		        "archive is configured: its sandbox and files may be gone",
		        name, asleep, r->provider, ret);
}
