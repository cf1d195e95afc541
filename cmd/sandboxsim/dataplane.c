/*
 * sandboxsim data plane: envd's GET /health (and GET /envs) on the same
 * listener, routed like the E2B edge proxy: E2b-Sandbox-Id/E2b-Sandbox-Port
 * headers, or Host "{port}-{sandboxID}.{domain}". 204 for a running sandbox,
 * 502 for unknown/not running (Cube: 500), 504 while a fault says the proxy
 * is stale; traffic auto-resumes a paused sandbox created with autoResume.
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

void
sim_dataplane(sim *s, sim_req *r, const char *id)
{
	int64_t now = sk_now_ms();
	sim_sandbox *sb;
	json_t *envs = NULL;

	pthread_mutex_lock(&s->lock);
	sb = sim_store_get(s, id, now);
	if (sb && sb->state == SIM_PAUSED && sb->auto_resume && s->flavor == SIM_E2B)
		sim_sandbox_resume(s, sb, now,
		        sb->timeout_s > AUTO_RESUME_MIN_S ? sb->timeout_s : AUTO_RESUME_MIN_S);
	if (sb == NULL || sb->state != SIM_RUNNING) {
		pthread_mutex_unlock(&s->lock);
		gone(s, r, id, "The sandbox was not found");
		return;
	}
	if (r->dp_port != ENVD_PORT) {
		pthread_mutex_unlock(&s->lock);
		gone(s, r, id, "The sandbox is running but port is not open");
		return;
	}
	if (sim_faults_unreachable(s, sb, now)) {
		pthread_mutex_unlock(&s->lock);
		stale(r);
		return;
	}
	sim_sandbox_touch(s, sb, now);
	if (r->nseg == 1 && strcmp(r->segs[0], "envs") == 0)
		envs = sim_kv_to_json(&sb->env);
	pthread_mutex_unlock(&s->lock);
	if (r->nseg == 1 && strcmp(r->segs[0], "health") == 0) {
		sim_reply_header(r, "Cache-Control", "no-store");
		sim_reply_empty(r, 204);
	} else if (envs) {
		sim_reply_json(s, r, 200, envs);
	} else {
		sim_reply_text(r, 404, "text/plain", "404 page not found\n");
	}
}
