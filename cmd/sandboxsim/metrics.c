/*
 * sandboxsim E2B sandbox metrics: GET /sandboxes/{id}/metrics and
 * GET /sandboxes/metrics?sandbox_ids=, in the SandboxMetric shape.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

/* SandboxMetric of a running sandbox, now: what it was given, the bytes
 * of its files, and a fixed load (nothing runs in the simulator). */
static json_t *
json_metric(const sim_sandbox *sb, int64_t now)
{
	const json_int_t mib = 1 << 20;
	char ts[40];

	sim_time(now, ts, sizeof(ts));
	return json_pack("{s:s,s:I,s:i,s:f,s:I,s:I,s:I,s:I,s:I}", "timestamp", ts, "timestampUnix",
	        (json_int_t)(now / 1000), "cpuCount", sb->cpu, "cpuUsedPct", 1.0, "memUsed",
	        (json_int_t)64 * mib, "memTotal", (json_int_t)sb->memory_mb * mib, "memCache",
	        (json_int_t)0, "diskUsed", (json_int_t)(sb->fs ? sim_fs_du(sb->fs) : 0),
	        "diskTotal", (json_int_t)sb->disk_mb * mib);
}

/* A query argument that must be a non-negative integer when given. */
static bool
arg_seconds(sim *s, sim_req *r, const char *name, int64_t *out)
{
	const char *arg = sim_req_arg(r, name);
	char *end;

	if (arg == NULL)
		return true;
	*out = strtoll(arg, &end, 10);
	if (*arg != '\0' && *end == '\0' && *out >= 0)
		return true;
	sim_reply_error(s, r, 400, "%s must be a non-negative Unix time in seconds", name);
	return false;
}

/* GET /sandboxes/{id}/metrics?start=&end=: one entry while it runs. */
void
sim_metrics_one(sim *s, sim_req *r, const char *id)
{
	int64_t start = 0, end = INT64_MAX, now = sk_now_ms();
	sim_sandbox *sb;
	json_t *arr;

	if (!arg_seconds(s, r, "start", &start) || !arg_seconds(s, r, "end", &end))
		return;
	if (start > end) {
		sim_reply_error(s, r, 400, "start must not be after end");
		return;
	}
	pthread_mutex_lock(&s->lock);
	if ((sb = sim_e2b_find(s, r, id, now)) != NULL) {
		arr = json_array();
		if (sb->state == SIM_RUNNING && start <= now / 1000 && now / 1000 <= end)
			json_array_append_new(arr, json_metric(sb, now));
		sim_reply_json(s, r, 200, arr);
	}
	pthread_mutex_unlock(&s->lock);
}

/* GET /sandboxes/metrics?sandbox_ids=a,b: the running ones among them. */
void
sim_metrics_many(sim *s, sim_req *r, const char *unused)
{
	char *ids = sim_req_arg_all(r, "sandbox_ids"), *save = NULL, *id;
	int64_t now = sk_now_ms();
	json_t *out;
	int n = 0;

	if (ids == NULL || *ids == '\0') {
		sim_reply_error(s, r, 400, "query parameter sandbox_ids is required");
		free(ids);
		return;
	}
	out = json_object();
	pthread_mutex_lock(&s->lock);
	for (id = strtok_r(ids, ",", &save); id; id = strtok_r(NULL, ",", &save)) {
		sim_sandbox *sb = sim_store_get(s, id, now);
		if (++n > 100)
			break;
		if (sb && sb->state == SIM_RUNNING)
			json_object_set_new(out, id, json_metric(sb, now));
	}
	pthread_mutex_unlock(&s->lock);
	free(ids);
	if (n > 100) {
		json_decref(out);
		sim_reply_error(s, r, 400, "sandbox_ids: at most 100 IDs");
		return;
	}
	sim_reply_json(s, r, 200, json_pack("{s:o}", "sandboxes", out));
}
