/*
 * sandboxsim E2B control plane (also the CubeSandbox flavour, whose
 * differences are marked): create, get, kill, pause, connect, resume,
 * timeout, refreshes, the API health check, and the JSON shapes
 * Sandbox / SandboxDetail / ListedSandbox.
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define E2B_CLIENT_ID "6532622b"
#define CUBE_CLIENT_ID "cube-node-sim-1"
#define MAX_TIMEOUT_S 86400

bool
sim_valid_id(const char *id)
{
	if (*id == '\0')
		return false;
	for (const char *p = id; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')))
			return false;
	return true;
}

static bool
is_cube(sim *s)
{
	return s->flavor == SIM_CUBE;
}

static void
set_time(json_t *o, const char *key, int64_t ms)
{
	char buf[40];

	sim_time(ms, buf, sizeof(buf));
	json_object_set_new(o, key, json_string(buf));
}

/* Sandbox: returned by create, connect, resume and fork. */
json_t *
sim_json_sandbox(sim *s, const sim_sandbox *sb)
{
	json_t *o = json_pack("{s:s,s:s,s:s,s:s}", "templateID", sb->template_id, "sandboxID",
	        sb->id, "clientID", is_cube(s) ? CUBE_CLIENT_ID : E2B_CLIENT_ID, "envdVersion",
	        is_cube(s) ? "0.5.11" : "0.6.13");

	if (!is_cube(s)) {
		json_object_set_new(o, "alias", json_string(sb->template_id));
		if (sb->secure)
			json_object_set_new(o, "envdAccessToken", json_string(sb->token));
	}
	json_object_set_new(o, "domain", json_string(s->domain));
	return o;
}

/* The fields ListedSandbox and SandboxDetail share. */
static json_t *
json_common(sim *s, const sim_sandbox *sb, bool listed)
{
	json_t *o = json_pack("{s:s,s:s,s:s,s:i,s:i,s:i,s:o,s:s,s:s}", "templateID",
	        sb->template_id, "sandboxID", sb->id, "clientID",
	        is_cube(s) ? CUBE_CLIENT_ID : E2B_CLIENT_ID, "cpuCount", sb->cpu, "memoryMB",
	        sb->memory_mb, "diskSizeMB", is_cube(s) && listed ? 0 : sb->disk_mb, "metadata",
	        sim_kv_to_json(&sb->meta), "state", sim_state_name(s, sb->state), "envdVersion",
	        is_cube(s) ? "0.5.11" : "0.6.13");

	set_time(o, "startedAt", sb->started_ms);
	if (!(is_cube(s) && sb->never && sb->state == SIM_RUNNING))
		set_time(o, "endAt", sb->end_ms);
	if (!is_cube(s)) {
		json_object_set_new(o, "alias", json_string(sb->template_id));
		json_object_set_new(o, "volumeMounts", sim_mounts_json(sb));
	}
	return o;
}

json_t *
sim_json_listed(sim *s, const sim_sandbox *sb)
{
	return json_common(s, sb, true);
}

static json_t *
json_detail(sim *s, const sim_sandbox *sb)
{
	json_t *o = json_common(s, sb, false);

	if (is_cube(s)) {
		json_object_set_new(o, "domain", json_string(s->domain));
		return o;
	}
	if (sb->secure)
		json_object_set_new(o, "envdAccessToken", json_string(sb->token));
	json_object_set_new(
	        o, "domain", sb->state == SIM_RUNNING ? json_string(s->domain) : json_null());
	sim_net_e2b_detail(sb, o);
	json_object_set_new(o, "lifecycle",
	        json_pack("{s:b,s:s}", "autoResume", sb->auto_resume, "onTimeout",
	                sb->auto_pause ? "pause" : "kill"));
	return o;
}

/* ---- body field helpers: each replies 400 and returns false on a bad type ---- */

static bool
bad_field(sim *s, sim_req *r, const char *field, const char *what)
{
	sim_reply_error(s, r, 400,
	        "validation error: request body has an error: doesn't match schema: Error at "
	        "\"/%s\": %s",
	        field, what);
	return false;
}

static bool
get_int(sim *s, sim_req *r, json_t *doc, const char *field, bool required, int64_t *out)
{
	json_t *v = json_object_get(doc, field);

	if (v == NULL || json_is_null(v)) {
		if (required)
			return bad_field(s, r, field, "property is missing");
		return true;
	}
	if (json_is_real(v) && json_real_value(v) == (double)(int64_t)json_real_value(v)) {
		*out = (int64_t)json_real_value(v);
		return true;
	}
	if (!json_is_integer(v))
		return bad_field(s, r, field, "value must be an integer");
	*out = json_integer_value(v);
	if (*out > INT32_MAX || *out < INT32_MIN)
		return bad_field(s, r, field, "number must be an int32");
	return true;
}

static bool
get_bool(sim *s, sim_req *r, json_t *doc, const char *field, bool *out)
{
	json_t *v = json_object_get(doc, field);

	if (v == NULL || json_is_null(v))
		return true;
	if (!json_is_boolean(v))
		return bad_field(s, r, field, "value must be a boolean");
	*out = json_is_true(v);
	return true;
}

static bool
get_kv(sim *s, sim_req *r, json_t *doc, const char *field, sim_kv *out)
{
	char why[200];

	if (sim_kv_from_json(json_object_get(doc, field), out, why, sizeof(why)) == 0)
		return true;
	return bad_field(s, r, field, why);
}

/* E2B: 1..24h; Cube: -1 (never) or positive. */
static bool
check_timeout(sim *s, sim_req *r, int64_t t)
{
	if (is_cube(s) && t == -1)
		return true;
	if (t <= 0) {
		sim_reply_error(s, r, 400, "validation error: timeout must be greater than 0");
		return false;
	}
	if (t > MAX_TIMEOUT_S) {
		sim_reply_error(s, r, 400, "Timeout cannot be greater than 24 hours");
		return false;
	}
	return true;
}

/* ---- handlers ---- */

struct create_args {
	const char *template_id;
	int64_t timeout, cpu, mem;
	bool auto_pause, auto_pause_memory, auto_resume, secure;
	sim_kv meta, env;
};

static bool
parse_auto_resume(sim *s, sim_req *r, json_t *doc, bool *out)
{
	json_t *ar = json_object_get(doc, "autoResume");

	if (ar == NULL || json_is_null(ar))
		return true;
	if (!json_is_object(ar))
		return bad_field(s, r, "autoResume", "value must be an object");
	return get_bool(s, r, ar, "enabled", out);
}

static bool
parse_create(sim *s, sim_req *r, json_t *doc, struct create_args *a)
{
	json_t *t = json_object_get(doc, "templateID");

	if (t == NULL)
		return bad_field(s, r, "templateID", "property \"templateID\" is missing");
	if (!json_is_string(t) || json_string_length(t) == 0 || json_string_length(t) > 60)
		return bad_field(s, r, "templateID", "value must be a non-empty string");
	a->template_id = json_string_value(t);
	if (!get_int(s, r, doc, "timeout", false, &a->timeout) ||
	        !get_int(s, r, doc, "cpuCount", false, &a->cpu) ||
	        !get_int(s, r, doc, "memoryMB", false, &a->mem) ||
	        !get_bool(s, r, doc, "autoPause", &a->auto_pause) ||
	        !get_bool(s, r, doc, "autoPauseMemory", &a->auto_pause_memory) ||
	        !get_bool(s, r, doc, "secure", &a->secure) ||
	        !parse_auto_resume(s, r, doc, &a->auto_resume))
		return false;
	if (!check_timeout(s, r, a->timeout))
		return false;
	if (!a->auto_pause_memory && !a->auto_pause) {
		sim_reply_error(s, r, 400, "autoPauseMemory is only valid with autoPause");
		return false;
	}
	if (!a->auto_pause_memory && a->auto_resume) {
		sim_reply_error(s, r, 400,
		        "autoPauseMemory=false cannot be combined with "
		        "autoResume enabled");
		return false;
	}
	if (a->cpu < 1 || a->mem < 128)
		return bad_field(s, r, a->cpu < 1 ? "cpuCount" : "memoryMB", "value is too small");
	if (!get_kv(s, r, doc, "metadata", &a->meta))
		return false;
	if (!get_kv(s, r, doc, "envVars", &a->env)) {
		sim_kv_free(&a->meta);
		return false;
	}
	return true;
}

/* A templateID naming a snapshot starts the sandbox from its files. */
static void
start_from_snapshot(sim *s, sim_sandbox *sb)
{
	sim_snapshot *sn = sim_snapshot_find(s, sb->template_id);

	if (sn == NULL)
		return;
	snprintf(sb->template_id, sizeof(sb->template_id), "%s", sn->template_id);
	sb->fs = sim_fs_clone(sn->fs);
}

static void
h_create(sim *s, sim_req *r, const char *id)
{
	struct create_args a = {
		.timeout = is_cube(s) ? -1 : 15, .cpu = 2, .mem = 512, .auto_pause_memory = true
	};
	json_t *doc = sim_req_json(s, r, false);
	int64_t now = sk_now_ms();
	sim_sandbox *sb, policy = { 0 };
	const char *why;

	if (doc == NULL)
		return;
	if (!parse_create(s, r, doc, &a)) {
		json_decref(doc);
		return;
	}
	if (sim_net_e2b_create(&policy, doc, a.secure, &why) != 0) {
		sim_reply_error(s, r, 400, "validation error: %s", why);
		sim_kv_free(&a.meta);
		sim_kv_free(&a.env);
		json_decref(doc);
		return;
	}
	pthread_mutex_lock(&s->lock);
	if (!is_cube(s) && sim_snapshot_ref(a.template_id) &&
	        sim_snapshot_find(s, a.template_id) == NULL) {
		sim_reply_error(s, r, 404, "template '%s' not found", a.template_id);
		pthread_mutex_unlock(&s->lock);
		json_decref(policy.net);
		sim_kv_free(&a.meta);
		sim_kv_free(&a.env);
		json_decref(doc);
		return;
	}
	if ((!is_cube(s) &&
	            sim_mounts_parse(s, r, &policy, json_object_get(doc, "volumeMounts")) != 0) ||
	        !sim_caps_admit(s, r, now)) {
		pthread_mutex_unlock(&s->lock);
		sim_mounts_free(&policy);
		json_decref(policy.net);
		sim_kv_free(&a.meta);
		sim_kv_free(&a.env);
		json_decref(doc);
		return;
	}
	sb = sim_store_new(s, now);
	sb->net = policy.net;
	sb->mounts = policy.mounts;
	sb->nmounts = policy.nmounts;
	snprintf(sb->template_id, sizeof(sb->template_id), "%s", a.template_id);
	if (!is_cube(s))
		start_from_snapshot(s, sb);
	sb->env = a.env;
	sim_store_set_meta(&s->store, sb, &a.meta);
	sb->timeout_s = (int32_t)a.timeout;
	sb->auto_pause = a.auto_pause;
	sb->auto_resume = a.auto_resume;
	sb->auto_pause_memory = a.auto_pause_memory;
	sb->secure = a.secure && !is_cube(s);
	sb->cpu = (int)a.cpu;
	sb->memory_mb = (int)a.mem;
	sim_sandbox_resume(s, sb, now, (int32_t)a.timeout);
	sb->resumed_ms = 0;
	sim_reply_json(s, r, 201, sim_json_sandbox(s, sb));
	pthread_mutex_unlock(&s->lock);
	json_decref(doc);
}

static void
not_found(sim *s, sim_req *r, const char *id)
{
	sim_reply_error(
	        s, r, 404, "Sandbox \"%s\" doesn't exist or you don't have access to it", id);
}

/* Looks up with the lock held; replies 404 itself when missing. */
sim_sandbox *
sim_e2b_find(sim *s, sim_req *r, const char *id, int64_t now)
{
	sim_sandbox *sb = sim_store_get(s, id, now);

	if (sb == NULL)
		not_found(s, r, id);
	return sb;
}

static void
h_get(sim *s, sim_req *r, const char *id)
{
	sim_sandbox *sb;

	pthread_mutex_lock(&s->lock);
	if ((sb = sim_e2b_find(s, r, id, sk_now_ms())) != NULL)
		sim_reply_json(s, r, 200, json_detail(s, sb));
	pthread_mutex_unlock(&s->lock);
}

static void
h_kill(sim *s, sim_req *r, const char *id)
{
	sim_sandbox *sb;

	pthread_mutex_lock(&s->lock);
	if ((sb = sim_e2b_find(s, r, id, sk_now_ms())) != NULL) {
		sim_store_remove(&s->store, sb);
		sim_reply_empty(r, 204);
	}
	pthread_mutex_unlock(&s->lock);
}

static void
h_pause(sim *s, sim_req *r, const char *id)
{
	json_t *doc = sim_req_json(s, r, true);
	bool memory = true;
	sim_sandbox *sb;
	int64_t now = sk_now_ms();

	if (doc == NULL || !get_bool(s, r, doc, "memory", &memory)) {
		json_decref(doc);
		return;
	}
	json_decref(doc);
	pthread_mutex_lock(&s->lock);
	if ((sb = sim_e2b_find(s, r, id, now)) == NULL) {
		/* replied */
	} else if (sb->state != SIM_RUNNING) {
		if (is_cube(s))
			sim_reply_error(s, r, 409, "Sandbox %s cannot be paused", id);
		else
			sim_reply_error(s, r, 409,
			        "Error pausing sandbox - sandbox '%s' is already paused", id);
	} else {
		sim_sandbox_pause(sb, now);
		sb->cold = !memory;
		sim_reply_empty(r, 204);
	}
	pthread_mutex_unlock(&s->lock);
}

static void
extend(sim *s, sim_sandbox *sb, int64_t now, int64_t t)
{
	if (is_cube(s)) {
		if (t == -1) {
			sb->never = true;
			return;
		}
		if (t > sb->timeout_s)
			sb->timeout_s = (int32_t)t;
	}
	if (!sb->never && now + t * 1000 > sb->end_ms)
		sb->end_ms = now + t * 1000;
	sim_sandbox_touch(s, sb, now);
}

/* POST /sandboxes/{id}/connect (timeout required) and /v2/.../connect (optional). */
static void
h_connect(sim *s, sim_req *r, const char *id)
{
	bool v2 = strcmp(r->segs[0], "v2") == 0;
	json_t *doc = sim_req_json(s, r, v2);
	int64_t t = 15, now = sk_now_ms();
	bool memory = true;
	sim_sandbox *sb;

	if (doc == NULL || !get_int(s, r, doc, "timeout", !v2, &t) ||
	        !get_bool(s, r, doc, "memory", &memory) || !check_timeout(s, r, t)) {
		json_decref(doc);
		return;
	}
	json_decref(doc);
	pthread_mutex_lock(&s->lock);
	if ((sb = sim_e2b_find(s, r, id, now)) != NULL &&
	        (sb->state == SIM_RUNNING || sim_caps_admit(s, r, now))) {
		bool resumed = sb->state != SIM_RUNNING;
		if (resumed && !memory) /* the SDK's onResume "reboot" */
			sb->cold = true;
		if (resumed)
			sim_sandbox_resume(s, sb, now, (int32_t)t);
		else
			extend(s, sb, now, t);
		sim_reply_json(s, r, resumed && !is_cube(s) ? 201 : 200, sim_json_sandbox(s, sb));
	}
	pthread_mutex_unlock(&s->lock);
}

static void
h_resume(sim *s, sim_req *r, const char *id)
{
	json_t *doc = sim_req_json(s, r, true);
	int64_t t = 15, now = sk_now_ms();
	bool auto_pause = false, has_ap;
	sim_sandbox *sb;

	if (doc == NULL || !get_int(s, r, doc, "timeout", false, &t) ||
	        !get_bool(s, r, doc, "autoPause", &auto_pause) || !check_timeout(s, r, t)) {
		json_decref(doc);
		return;
	}
	has_ap = json_is_boolean(json_object_get(doc, "autoPause"));
	json_decref(doc);
	pthread_mutex_lock(&s->lock);
	if ((sb = sim_e2b_find(s, r, id, now)) == NULL) {
		/* replied */
	} else if (sb->state == SIM_RUNNING) {
		sim_reply_error(s, r, 409, "Sandbox %s is already running", id);
	} else if (sim_caps_admit(s, r, now)) {
		if (has_ap)
			sb->auto_pause = auto_pause;
		sim_sandbox_resume(s, sb, now, (int32_t)t);
		sim_reply_json(s, r, 201, sim_json_sandbox(s, sb));
	}
	pthread_mutex_unlock(&s->lock);
}

/* The request body is optional (E2B's document): without one the sandbox
 * gets the default timeout of 15 s; a body must carry timeout. */
static void
h_timeout(sim *s, sim_req *r, const char *id)
{
	json_t *doc = sim_req_json(s, r, true);
	int64_t t = 15, now = sk_now_ms();
	sim_sandbox *sb;

	if (doc == NULL || !get_int(s, r, doc, "timeout", r->body_len > 0, &t)) {
		json_decref(doc);
		return;
	}
	json_decref(doc);
	if (t > MAX_TIMEOUT_S) {
		sim_reply_error(s, r, 400, "Timeout cannot be greater than 24 hours");
		return;
	}
	pthread_mutex_lock(&s->lock);
	sb = sim_store_get(s, id, now);
	if (sb == NULL || sb->state != SIM_RUNNING) {
		not_found(s, r, id);
	} else if (is_cube(s) && t == -1) {
		sb->never = true;
		sim_reply_empty(r, 204);
	} else {
		if (t < 0)
			t = 0;
		sb->never = false;
		sb->timeout_s = (int32_t)t;
		sb->end_ms = now + t * 1000;
		sb->activity_ms = now;
		sim_reply_empty(r, 204);
	}
	pthread_mutex_unlock(&s->lock);
}

static void
h_refreshes(sim *s, sim_req *r, const char *id)
{
	json_t *doc = sim_req_json(s, r, true);
	int64_t d = 15, now = sk_now_ms();
	sim_sandbox *sb;

	if (doc == NULL || !get_int(s, r, doc, "duration", false, &d)) {
		json_decref(doc);
		return;
	}
	json_decref(doc);
	if (d < 0 || d > 3600) {
		sim_reply_error(s, r, 400, "validation error: duration must be between 0 and 3600");
		return;
	}
	if (d < 15)
		d = 15;
	pthread_mutex_lock(&s->lock);
	sb = sim_store_get(s, id, now);
	if (sb == NULL || sb->state != SIM_RUNNING) {
		not_found(s, r, id);
	} else {
		if (!sb->never && now + d * 1000 > sb->end_ms)
			sb->end_ms = now + d * 1000;
		sim_sandbox_touch(s, sb, now);
		sim_reply_empty(r, 204);
	}
	pthread_mutex_unlock(&s->lock);
}

/* PUT /sandboxes/{id}/network: the policy of a running sandbox, live (E2B). */
static void
h_network(sim *s, sim_req *r, const char *id)
{
	json_t *doc;
	sim_sandbox *sb;
	const char *why;

	if (is_cube(s)) {
		sim_reply_error(s, r, 404, "Not Found");
		return;
	}
	if ((doc = sim_req_json(s, r, false)) == NULL)
		return;
	pthread_mutex_lock(&s->lock);
	sb = sim_store_get(s, id, sk_now_ms());
	if (sb == NULL || sb->state != SIM_RUNNING)
		not_found(s, r, id);
	else if (sim_net_e2b_update(sb, doc, &why) != 0)
		sim_reply_error(s, r, 400, "validation error: %s", why);
	else
		sim_reply_empty(r, 204);
	pthread_mutex_unlock(&s->lock);
	json_decref(doc);
}

static void
h_api_health(sim *s, sim_req *r, const char *id)
{
	if (is_cube(s))
		sim_reply_json(s, r, 200, json_pack("{s:s}", "status", "ok"));
	else
		sim_reply_empty(r, 204);
}

static void
h_metrics(sim *s, sim_req *r, const char *id)
{
	if (is_cube(s))
		sim_reply_error(s, r, 404, "Not Found");
	else
		sim_metrics_one(s, r, id);
}

static void
h_snapshot(sim *s, sim_req *r, const char *id)
{
	if (is_cube(s))
		sim_reply_error(s, r, 404, "Not Found");
	else
		sim_snapshot_create(s, r, id);
}

static void
h_fork(sim *s, sim_req *r, const char *id)
{
	if (is_cube(s))
		sim_reply_error(s, r, 404, "Not Found");
	else
		sim_fork(s, r, id);
}

typedef void (*handler_fn)(sim *s, sim_req *r, const char *id);

struct route {
	const char *method;
	const char *action; /* NULL: /sandboxes/{id}; "" : collection */
	int ep;
	handler_fn fn;
};

static const struct route sandbox_routes[] = {
	{ "GET", NULL, SIM_EP_GET, h_get },
	{ "DELETE", NULL, SIM_EP_KILL, h_kill },
	{ "POST", "pause", SIM_EP_PAUSE, h_pause },
	{ "POST", "connect", SIM_EP_CONNECT, h_connect },
	{ "POST", "resume", SIM_EP_RESUME, h_resume },
	{ "POST", "timeout", SIM_EP_TIMEOUT, h_timeout },
	{ "POST", "refreshes", SIM_EP_REFRESHES, h_refreshes },
	{ "PUT", "network", SIM_EP_NETWORK, h_network },
	{ "GET", "metrics", SIM_EP_METRICS, h_metrics },
	{ "POST", "snapshots", SIM_EP_SNAPSHOTS, h_snapshot },
	{ "POST", "fork", SIM_EP_FORK, h_fork },
};

static void
run(sim *s, sim_req *r, int ep, handler_fn fn, const char *id, bool auth)
{
	r->ep = ep;
	if (!sim_precheck(s, r, auth))
		return;
	fn(s, r, id);
}

/* /sandboxes/{id}[/action] and /v2/sandboxes/{id}/connect */
static void
route_sandbox(sim *s, sim_req *r, char **seg, int n, bool v2)
{
	char *id = seg[1], *dash;
	const char *action = n == 3 ? seg[2] : NULL;
	bool wrong_method = false;

	for (size_t i = 0; i < sizeof(sandbox_routes) / sizeof(sandbox_routes[0]); i++) {
		const struct route *rt = &sandbox_routes[i];
		if ((rt->action == NULL) != (action == NULL) ||
		        (action && strcmp(rt->action, action) != 0))
			continue;
		if (v2 && rt->ep != SIM_EP_CONNECT)
			break;
		if (strcmp(rt->method, r->method) != 0) {
			wrong_method = true;
			continue;
		}
		r->ep = rt->ep;
		if (!sim_precheck(s, r, true))
			return;
		if ((dash = strchr(id, '-')) != NULL && !is_cube(s))
			*dash = '\0'; /* legacy <sandboxID>-<clientID> */
		if (!sim_valid_id(id)) {
			sim_reply_error(s, r, 400, "Invalid sandbox ID");
			return;
		}
		rt->fn(s, r, id);
		return;
	}
	if (wrong_method)
		sim_reply_error(s, r, 405, "Method Not Allowed");
	else
		sim_reply_error(s, r, 404, "Not Found");
}

void
sim_e2b_route(sim *s, sim_req *r)
{
	char **seg = r->segs;
	int n = r->nseg;
	bool post = strcmp(r->method, "POST") == 0, get = strcmp(r->method, "GET") == 0;

	if (is_cube(s) && n >= 2 && strcmp(seg[0], "cubeapi") == 0 && strcmp(seg[1], "v1") == 0) {
		seg += 2; /* the dashboard mount of the same routes */
		n -= 2;
	}
	if (n == 1 && strcmp(seg[0], "health") == 0 && get) {
		run(s, r, SIM_EP_API_HEALTH, h_api_health, NULL, false);
		return;
	}
	if (n == 1 && strcmp(seg[0], "sandboxes") == 0 && post) {
		run(s, r, SIM_EP_CREATE, h_create, NULL, true);
		return;
	}
	if (n == 1 && strcmp(seg[0], "sandboxes") == 0 && get) {
		r->ep = SIM_EP_LIST_V1;
		if (sim_precheck(s, r, true))
			sim_e2b_list_v1(s, r);
		return;
	}
	if (n == 2 && strcmp(seg[0], "v2") == 0 && strcmp(seg[1], "sandboxes") == 0) {
		if (post) {
			run(s, r, SIM_EP_CREATE, h_create, NULL, true);
			return;
		}
		r->ep = SIM_EP_LIST;
		if (get && sim_precheck(s, r, true))
			sim_e2b_list(s, r);
		else if (!get)
			sim_reply_error(s, r, 405, "Method Not Allowed");
		return;
	}
	if (n == 2 && strcmp(seg[0], "sandboxes") == 0 && strcmp(seg[1], "metrics") == 0 && get &&
	        !is_cube(s)) {
		run(s, r, SIM_EP_METRICS, sim_metrics_many, NULL, true);
		return;
	}
	if (!is_cube(s) && sim_volumes_route(s, r, seg, n))
		return;
	if ((n == 2 || n == 3) && strcmp(seg[0], "sandboxes") == 0) {
		route_sandbox(s, r, seg, n, false);
		return;
	}
	if (n == 4 && strcmp(seg[0], "v2") == 0 && strcmp(seg[1], "sandboxes") == 0) {
		route_sandbox(s, r, seg + 1, 3, true);
		return;
	}
	sim_reply_error(s, r, 404, "Not Found");
}
