/*
 * sandboxsim /_sim admin API (no API key, no latency, not in stats):
 *   GET|POST|DELETE /_sim/faults          fault document (see faults.c)
 *   GET  /_sim/sandboxes                  every sandbox with its state (and env:
 *                                         envVars, initEnvVars, createEnvLost)
 *   POST /_sim/sandboxes/{id}/kill|pause  out-of-band kill or pause
 *   POST /_sim/sandboxes/{id}/files       {"path", "bytes", "seed"}: a regular file
 *                                         of pseudo-random bytes (benchmark trees)
 *   POST /_sim/reset                      drop sandboxes, faults and stats
 *   GET  /_sim/stats, POST /_sim/stats/reset
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

/* The simulator's own accounting, up to now: runningSeconds, pausedSeconds. */
static void
account_json(json_t *o, const sim_sandbox *sb)
{
	sim_sandbox copy = *sb;

	sim_sandbox_account(&copy, sk_now_ms());
	json_object_set_new(o, "runningSeconds", json_real((double)copy.run_ms / 1000.0));
	json_object_set_new(o, "pausedSeconds", json_real((double)copy.pause_ms / 1000.0));
}

static json_t *
sim_sandbox_json(sim *s, const sim_sandbox *sb)
{
	char started[40], end[40], created[40];
	json_t *o;

	sim_time(sb->started_ms, started, sizeof(started));
	sim_time(sb->end_ms, end, sizeof(end));
	sim_time(sb->created_ms, created, sizeof(created));
	o = json_pack("{s:s,s:s,s:s,s:o,s:o,s:s,s:s,s:s,s:b,s:b,s:i,s:b}", "sandboxID", sb->id,
	        "templateID", sb->template_id, "state", sim_state_name(s, sb->state), "metadata",
	        sim_kv_to_json(&sb->meta), "envVars", sim_kv_to_json(&sb->env), "createdAt",
	        created, "startedAt", started, "endAt", end, "autoPause", sb->auto_pause,
	        "autoResume", sb->auto_resume, "timeout", sb->timeout_s, "neverTimeout", sb->never);
	json_object_set_new(o, "initEnvVars", sim_kv_to_json(&sb->init_env));
	json_object_set_new(o, "createEnvLost", json_boolean(sb->boot_env_lost));
	if (sb->resumed_ms > 0) {
		sim_time(sb->resumed_ms, started, sizeof(started));
		json_object_set_new(o, "resumedAt", json_string(started));
	}
	if (sb->name)
		json_object_set_new(o, "name", json_string(sb->name));
	account_json(o, sb);
	return o;
}

/* Serialised item by item: 100,000 sandboxes never exist as one JSON tree. */
static void
list_all(sim *s, sim_req *r)
{
	sk_buf b = SK_BUF_INIT((size_t)1 << 30);
	int64_t now = sk_now_ms();
	char *item;
	size_t len;

	sk_buf_append(&b, "[", 1);
	pthread_mutex_lock(&s->lock);
	sim_store_sweep(s, now);
	for (sim_sandbox *sb = s->store.head; sb; sb = sb->next) {
		json_t *o = sim_sandbox_json(s, sb);
		item = json_dumps(o, JSON_COMPACT);
		json_decref(o);
		if (sb != s->store.head)
			sk_buf_append(&b, ",", 1);
		sk_buf_append(&b, item, strlen(item));
		free(item);
	}
	pthread_mutex_unlock(&s->lock);
	sk_buf_append(&b, "]", 1);
	len = b.len;
	sim_reply_owned(r, 200, "application/json", sk_buf_detach(&b), len);
}

static void
out_of_band(sim *s, sim_req *r, const char *id, const char *action)
{
	int64_t now = sk_now_ms();
	sim_sandbox *sb;

	pthread_mutex_lock(&s->lock);
	sb = sim_store_get(s, id, now);
	if (sb == NULL) {
		sim_reply_error(s, r, 404, "sandbox %s not found", id);
	} else if (strcmp(action, "kill") == 0) {
		sim_store_remove(&s->store, sb);
		sim_reply_empty(r, 204);
	} else if (strcmp(action, "pause") == 0 && sb->state == SIM_RUNNING) {
		sim_sandbox_pause(sb, now); /* as the provider's auto-pause would */
		sb->cold = !sb->auto_pause_memory;
		sim_reply_empty(r, 204);
	} else if (strcmp(action, "pause") == 0) {
		sim_reply_error(s, r, 409, "sandbox %s is not running", id);
	} else {
		sim_reply_error(s, r, 404, "unknown action %s", action);
	}
	pthread_mutex_unlock(&s->lock);
}

/* A file made in place: large trees without uploading them. */
static void
fill(sim *s, sim_req *r, const char *id)
{
	json_t *doc = sim_req_json(s, r, false), *path, *bytes, *seed;
	sim_sandbox *sb;
	char *abs;
	int rc;

	if (doc == NULL)
		return;
	path = json_object_get(doc, "path");
	bytes = json_object_get(doc, "bytes");
	seed = json_object_get(doc, "seed");
	if (!json_is_string(path) || !json_is_integer(bytes) || json_integer_value(bytes) < 0 ||
	        json_integer_value(bytes) > ((json_int_t)1 << 32) ||
	        (seed && !json_is_integer(seed))) {
		json_decref(doc);
		sim_reply_error(s, r, 400, "files: want {path, bytes (0..4Gi), seed}");
		return;
	}
	pthread_mutex_lock(&s->lock);
	sb = sim_store_get(s, id, sk_now_ms());
	if (sb == NULL) {
		sim_reply_error(s, r, 404, "sandbox %s not found", id);
	} else {
		sim_fs *fs = sim_sandbox_fs(s, sb);
		abs = sim_fs_path(fs, json_string_value(path));
		rc = sim_fs_fill(fs, abs, (size_t)json_integer_value(bytes),
		        seed ? (uint64_t)json_integer_value(seed) : 1);
		free(abs);
		sim_mounts_push(s, sb);
		if (rc != 0)
			sim_reply_error(
			        s, r, 400, "files: %s: error %d", json_string_value(path), rc);
		else
			sim_reply_empty(r, 204);
	}
	pthread_mutex_unlock(&s->lock);
	json_decref(doc);
}

static void
faults(sim *s, sim_req *r)
{
	char why[300];
	json_t *doc;

	if (strcmp(r->method, "DELETE") == 0) {
		sim_faults_clear(&s->faults);
		sim_reply_empty(r, 204);
		return;
	}
	if (strcmp(r->method, "POST") == 0) {
		if ((doc = sim_req_json(s, r, false)) == NULL)
			return;
		if (sim_faults_apply_json(&s->faults, doc, why, sizeof(why)) != 0) {
			json_decref(doc);
			sim_reply_error(s, r, 400, "faults: %s", why);
			return;
		}
		json_decref(doc);
	}
	sim_reply_json(s, r, 200, sim_faults_to_json(&s->faults));
}

static void
reset(sim *s, sim_req *r)
{
	pthread_mutex_lock(&s->lock);
	sim_store_clear(&s->store);
	sim_volumes_clear(s);
	pthread_mutex_unlock(&s->lock);
	sim_faults_clear(&s->faults);
	sim_stats_reset(s);
	sim_reply_empty(r, 204);
}

void
sim_admin_route(sim *s, sim_req *r)
{
	char **seg = r->segs;
	int n = r->nseg;
	bool get = strcmp(r->method, "GET") == 0, post = strcmp(r->method, "POST") == 0;

	if (n == 2 && strcmp(seg[1], "faults") == 0)
		faults(s, r);
	else if (n == 2 && strcmp(seg[1], "sandboxes") == 0 && get)
		list_all(s, r);
	else if (n == 4 && strcmp(seg[1], "sandboxes") == 0 && post && strcmp(seg[3], "files") == 0)
		fill(s, r, seg[2]);
	else if (n == 4 && strcmp(seg[1], "sandboxes") == 0 && post)
		out_of_band(s, r, seg[2], seg[3]);
	else if (n == 2 && strcmp(seg[1], "reset") == 0 && post)
		reset(s, r);
	else if (n == 2 && strcmp(seg[1], "stats") == 0 && get)
		sim_reply_json(s, r, 200, sim_stats_json(s));
	else if (n == 3 && strcmp(seg[1], "stats") == 0 && strcmp(seg[2], "reset") == 0 && post) {
		sim_stats_reset(s);
		sim_reply_empty(r, 204);
	} else
		sim_reply_error(s, r, 404, "unknown simulator endpoint %s %s", r->method, r->url);
}
