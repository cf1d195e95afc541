/*
 * sandboxsim data plane: envd on the same listener, routed like the E2B edge
 * proxy: E2b-Sandbox-Id/E2b-Sandbox-Port headers, or Host
 * "{port}-{sandboxID}.{domain}". 502 for unknown/not running (Cube: 500),
 * 504 while a fault says the proxy is stale; traffic auto-resumes a paused
 * sandbox created with autoResume. Routes (E2B's published API):
 *   GET  /health                   204
 *   GET  /envs                     the sandbox-wide env as a JSON map
 *   POST /init                     {"envVars": {...}, "accessToken": ...}: merged, 204
 *   POST /process.Process/Start    Connect server stream (process.c)
 *   GET/POST /files, POST /filesystem.Filesystem/...  the file tree (envd_files.c)
 * A secure sandbox needs X-Access-Token (or /init's accessToken) on all but /health.
 *
 * The env defect this models (seen at E2B): create-time envVars reach envd
 * through the boot path only, and every command runs as `bash -l -c`, so
 * after a pause/resume they are gone; what POST /init set is kept by the
 * agent across the snapshot (the fix CubeSandbox landed). So the sandbox-wide
 * env is create envVars + /init vars until the first resume, and only the
 * /init vars after it (empty if /init was never called). Daytona keeps env.
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define ENVD_PORT 49983
#define AUTO_RESUME_MIN_S 300

static bool
parse_host(const char *host, char *id, size_t idlen, int *port)
{
	const char *p = host, *dash, *dot;

	if (host == NULL || *p < '0' || *p > '9')
		return false;
	while (*p >= '0' && *p <= '9')
		p++;
	dash = p;
	if (*dash != '-')
		return false;
	dot = strchr(dash + 1, '.');
	if (dot == NULL || dot == dash + 1 || (size_t)(dot - dash - 1) >= idlen)
		return false;
	*port = atoi(host);
	memcpy(id, dash + 1, (size_t)(dot - dash - 1));
	id[dot - dash - 1] = '\0';
	/* legacy "<port>-<id>-<clientID>" */
	if (strchr(id, '-') && strlen(id) != 36)
		*strchr(id, '-') = '\0';
	return true;
}

bool
sim_dataplane_target(sim *s, sim_req *r, char *id, size_t idlen)
{
	const char *hid = sim_req_header(r, "E2b-Sandbox-Id");
	const char *hport = sim_req_header(r, "E2b-Sandbox-Port");

	if (hid != NULL) {
		snprintf(id, idlen, "%s", hid);
		r->dp_port = hport ? atoi(hport) : ENVD_PORT;
		return true;
	}
	return parse_host(sim_req_header(r, "Host"), id, idlen, &r->dp_port);
}

static void
gone(sim *s, sim_req *r, const char *id, const char *msg)
{
	if (s->flavor == SIM_CUBE) {
		sim_reply_text(r, 500, "text/plain", "sandbox route not found\n");
		return;
	}
	sim_reply_json(s, r, 502,
	        json_pack("{s:s,s:s,s:i}", "sandboxId", id, "message", msg, "code", 502));
}

static void
stale(sim_req *r)
{
	sim_reply_text(r, 504, "text/html",
	        "<html>\r\n<head><title>504 Gateway Time-out</title></head>\r\n<body>\r\n"
	        "<center><h1>504 Gateway Time-out</h1></center>\r\n</body>\r\n</html>\r\n");
}

int
sim_dataplane_ep(const sim_req *r)
{
	if (r->nseg == 1 && strcmp(r->segs[0], "health") == 0)
		return SIM_EP_HEALTH;
	if (r->nseg == 1 && strcmp(r->segs[0], "init") == 0)
		return SIM_EP_INIT;
	if (r->nseg == 2 && strcmp(r->segs[0], "process.Process") == 0)
		return SIM_EP_PROCESS;
	if (r->nseg == 1 && strcmp(r->segs[0], "files") == 0)
		return SIM_EP_FILES;
	if (r->nseg == 2 && strcmp(r->segs[0], "filesystem.Filesystem") == 0)
		return SIM_EP_FILESYSTEM;
	return SIM_EP_ENVD;
}

static void
envd_error(sim *s, sim_req *r, int status, const char *msg)
{
	sim_reply_json(s, r, status, json_pack("{s:i,s:s}", "code", status, "message", msg));
}

/* The running sandbox behind the request, or NULL once the proxy has replied. */
static sim_sandbox *
reachable(sim *s, sim_req *r, const char *id, int64_t now)
{
	sim_sandbox *sb = sim_store_get(s, id, now);

	if (sb && sb->state == SIM_PAUSED && sb->auto_resume && s->flavor == SIM_E2B) {
		if (!sim_caps_admit(s, r, now))
			return NULL; /* the team's limit: 429, answered */
		sim_sandbox_resume(s, sb, now,
		        sb->timeout_s > AUTO_RESUME_MIN_S ? sb->timeout_s : AUTO_RESUME_MIN_S);
	}
	if (sb == NULL || sb->state != SIM_RUNNING) {
		gone(s, r, id, "The sandbox was not found");
		return NULL;
	}
	if (r->dp_port != ENVD_PORT) {
		gone(s, r, id, "The sandbox is running but port is not open");
		return NULL;
	}
	if (sim_faults_unreachable(s, sb, now)) {
		stale(r);
		return NULL;
	}
	return sb;
}

static bool
token_ok(const sim_sandbox *sb, const char *token)
{
	return token && strcmp(token, sb->token) == 0;
}

/* envd access token check of a secure sandbox; replies 401 itself. */
static bool
authorized(sim *s, sim_req *r, const sim_sandbox *sb, const char *body_token)
{
	if (!sb->secure || token_ok(sb, sim_req_header(r, "X-Access-Token")) ||
	        token_ok(sb, body_token))
		return true;
	if (r->ep != SIM_EP_PROCESS)
		envd_error(s, r, 401, "unauthorized access, please provide a valid access token");
	return false;
}

/* The sandbox-wide env envd holds now (new reference). */
static json_t *
wide_env(const sim_sandbox *sb)
{
	json_t *env = sb->boot_env_lost ? json_object() : sim_kv_to_json(&sb->env);
	json_t *init = sim_kv_to_json(&sb->init_env);

	json_object_update(env, init);
	json_decref(init);
	return env;
}

/* POST /init: envVars are merged key by key into what /init set before. */
static void
h_init(sim *s, sim_req *r, sim_sandbox *sb)
{
	json_t *doc = sim_req_json(s, r, true), *vars, *merged;
	char why[200];
	sim_kv kv;

	if (doc == NULL)
		return;
	if (authorized(s, r, sb, json_string_value(json_object_get(doc, "accessToken")))) {
		vars = json_object_get(doc, "envVars");
		merged = sim_kv_to_json(&sb->init_env);
		if ((vars && !json_is_null(vars) && json_object_update(merged, vars) != 0) ||
		        sim_kv_from_json(merged, &kv, why, sizeof(why)) != 0) {
			envd_error(s, r, 400, "envVars: must be an object of strings");
		} else {
			sim_kv_free(&sb->init_env);
			sb->init_env = kv;
			sim_reply_empty(r, 204);
		}
		json_decref(merged);
	}
	json_decref(doc);
}

void
sim_dataplane(sim *s, sim_req *r, const char *id)
{
	int64_t now = sk_now_ms();
	json_t *env = NULL;
	sim_sandbox *sb;
	int pid = 0;

	pthread_mutex_lock(&s->lock);
	if ((sb = reachable(s, r, id, now)) == NULL)
		goto unlock;
	sim_sandbox_touch(s, sb, now);
	if (r->ep == SIM_EP_HEALTH) {
		sim_reply_header(r, "Cache-Control", "no-store");
		sim_reply_empty(r, 204);
	} else if (r->ep == SIM_EP_INIT && strcmp(r->method, "POST") == 0) {
		h_init(s, r, sb);
	} else if (r->nseg == 1 && strcmp(r->segs[0], "envs") == 0) {
		if (authorized(s, r, sb, NULL))
			sim_reply_json(s, r, 200, wide_env(sb));
	} else if (r->ep == SIM_EP_FILES || r->ep == SIM_EP_FILESYSTEM) {
		if (authorized(s, r, sb, NULL))
			sim_envd_files(s, r, sb);
	} else if (r->ep == SIM_EP_PROCESS && authorized(s, r, sb, NULL)) {
		env = wide_env(sb);
		pid = ++s->next_pid;
	} else if (r->ep != SIM_EP_PROCESS) {
		sim_reply_text(r, 404, "text/plain", "404 page not found\n");
	}
unlock:
	pthread_mutex_unlock(&s->lock);
	if (r->ep == SIM_EP_PROCESS && r->status == 0)
		sim_process_start(s, r, env, pid, id);
	json_decref(env);
}
