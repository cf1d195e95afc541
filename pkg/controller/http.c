/*
 * http: the controller's HTTP endpoint on libmicrohttpd (a thread per
 * connection, so a connect call waiting for readiness never blocks
 * /metrics): /healthz, /readyz, /metrics and the connect API.
 */
#include <arpa/inet.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "controller_int.h"

#define CONNECT_DEFAULT_MS 30000
#define CONNECT_MAX_MS 300000

typedef struct reply {
	unsigned int status;
	char *body;
	const char *type;
} reply;

static void
reply_text(reply *r, unsigned int status, const char *text)
{
	r->status = status;
	r->body = sk_strdup(text);
	r->type = "text/plain; charset=utf-8";
}

/* Takes obj. */
static void
reply_json(reply *r, unsigned int status, json_t *obj)
{
	char *s = json_dumps(obj, JSON_COMPACT);

	r->status = status;
	r->body = sk_asprintf("%s\n", s ? s : "{}");
	r->type = "application/json";
	free(s);
	json_decref(obj);
}

static void
reply_error(reply *r, unsigned int status, const char *reason, const char *msg)
{
	reply_json(r, status, json_pack("{s:s, s:s}", "reason", reason, "message", msg));
}

/* ---- connect ---- */

static char *
envd_url(sk_controller *c, const sk_userspace *us)
{
	int i = sk_ctl_provider_index(c, us->spec.provider);
	const sk_provider_config *pc = i >= 0 ? &c->cfg->providers[i] : NULL;

	if (pc && pc->sandbox_url)
		return sk_strdup(pc->sandbox_url);
	return sk_asprintf("https://49983-%s.%s", us->status.sandbox_id,
	        pc && pc->domain ? pc->domain : "e2b.app");
}

static void
reply_ready(sk_controller *c, reply *r, const sk_userspace *us)
{
	char *url = envd_url(c, us);

	reply_json(r, 200,
	        json_pack("{s:s, s:s, s:s, s:s, s:b, s:s}", "name", us->meta.name, "userID",
	                us->spec.user_id, "sandboxID", us->status.sandbox_id, "state",
	                sk_phase_name(us->status.phase), "ready", 1, "envdURL", url));
	free(url);
}

/* A reason the object cannot become ready by waiting, or NULL. */
static const char *
not_connectable(const sk_userspace *us)
{
	if (us->meta.deletion_ms)
		return "Deleting";
	if (us->spec.mode == SK_MODE_PAUSED)
		return "ModePaused";
	if (sk_kvlist_get(&us->meta.annotations, SK_ANNOTATION_PAUSED))
		return "ReconcilePaused";
	return NULL;
}

static void
reply_not_ready(reply *r, unsigned int status, const char *why, const sk_userspace *us)
{
	const sk_condition *ready = sk_userspace_condition(us, SK_COND_READY);

	reply_json(r, status,
	        json_pack("{s:s, s:s, s:s, s:s, s:s?}", "reason", why, "name", us->meta.name,
	                "state", sk_phase_name(us->status.phase), "readyReason",
	                ready && ready->reason ? ready->reason : "", "message",
	                ready ? ready->message : NULL));
}

static void
connect_userspace(sk_controller *c, const char *name, int64_t timeout_ms, reply *r)
{
	int64_t deadline = sk_monotonic_ms() + timeout_ms;
	sk_userspace *us = NULL;
	sk_error err = { 0 };
	const char *why;
	uint64_t gen0;
	int rc = sk_store_get(c->store, name, &us, &err);

	if (rc == SK_ENOTFOUND) {
		reply_error(r, 404, "NotFound", err.message);
		return;
	}
	if (rc != 0) {
		reply_error(r, 503, "StoreUnavailable", err.message);
		return;
	}
	if ((why = not_connectable(us)) != NULL) {
		reply_not_ready(r, 503, why, us);
		goto done;
	}
	/* Ready means ready now: wait for a reconcile that starts after this call. */
	gen0 = sk_ctl_gen(c);
	sk_workqueue_add_priority(c->q, name);
	for (;;) {
		bool ran = sk_ctl_wait_reconciled(c, name, gen0, deadline);
		sk_userspace_free(us);
		us = NULL;
		if (sk_ctl_stopping(c)) {
			reply_error(r, 503, "ShuttingDown", "the controller is stopping");
			goto done;
		}
		rc = sk_store_get(c->store, name, &us, &err);
		if (rc != 0) {
			reply_error(r, rc == SK_ENOTFOUND ? 404 : 503,
			        rc == SK_ENOTFOUND ? "NotFound" : "StoreUnavailable", err.message);
			goto done;
		}
		if (ran && sk_userspace_is_ready(us) && us->status.sandbox_id) {
			reply_ready(c, r, us);
			goto done;
		}
		if (sk_monotonic_ms() >= deadline) {
			reply_not_ready(r, 504, "Timeout", us);
			goto done;
		}
		/* Not ready yet: wait for the rounds the planner schedules itself. */
		if (ran)
			gen0 = sk_ctl_gen(c);
	}
done:
	sk_userspace_free(us);
}

static int64_t
timeout_arg(struct MHD_Connection *conn)
{
	const char *t = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "timeout");
	int64_t ms = CONNECT_DEFAULT_MS;

	if (t && sk_duration_parse(t, &ms) != 0)
		ms = CONNECT_DEFAULT_MS;
	return ms > CONNECT_MAX_MS ? CONNECT_MAX_MS : ms;
}

/* "/v1/userspaces/NAME/connect" -> NAME (caller frees), else NULL. */
static char *
path_segment(const char *url, const char *prefix, const char *suffix)
{
	size_t pl = strlen(prefix), sl = strlen(suffix), ul = strlen(url);

	if (ul <= pl + sl || strncmp(url, prefix, pl) != 0 || strcmp(url + ul - sl, suffix) != 0)
		return NULL;
	if (memchr(url + pl, '/', ul - pl - sl))
		return NULL;
	return sk_strndup(url + pl, ul - pl - sl);
}

static void
connect_user(sk_controller *c, const char *user_id, int64_t timeout_ms, reply *r)
{
	char **names;
	size_t n;
	bool found = false;

	/* The informer keeps user -> name; a scan of the cache is fine for a rare call. */
	names = sk_informer_names(c->inf, &n);
	for (size_t i = 0; i < n && !found; i++) {
		sk_userspace *us = NULL;
		if (sk_informer_get(c->inf, names[i], &us) == 0 && us->spec.user_id &&
		        strcmp(us->spec.user_id, user_id) == 0) {
			found = true;
			connect_userspace(c, names[i], timeout_ms, r);
		}
		sk_userspace_free(us);
	}
	sk_informer_names_free(names, n);
	if (!found)
		reply_error(r, 404, "NotFound", "no UserSpace has this userID");
}

/* ---- routing ---- */

static void
route(sk_controller *c, struct MHD_Connection *conn, const char *method, const char *url, reply *r)
{
	bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
	char *arg;

	if (get && strcmp(url, "/healthz") == 0) {
		reply_text(r, 200, "ok\n");
	} else if (get && strcmp(url, "/readyz") == 0) {
		bool ok = sk_controller_ready(c);
		reply_text(r, ok ? 200 : 503, ok ? "ok\n" : "informer not synced\n");
	} else if (get && strcmp(url, "/metrics") == 0) {
		sk_buf b = SK_BUF_INIT(16 * 1024 * 1024);
		sk_controller_render_metrics(c, &b);
		r->status = 200;
		r->body = sk_buf_detach(&b);
		r->type = "text/plain; version=0.0.4; charset=utf-8";
	} else if ((arg = path_segment(url, "/v1/userspaces/", "/connect")) != NULL) {
		if (strcmp(method, "POST") == 0)
			connect_userspace(c, arg, timeout_arg(conn), r);
		else
			reply_error(r, 405, "MethodNotAllowed", "use POST");
		free(arg);
	} else if (get && (arg = path_segment(url, "/v1/users/", "/sandbox")) != NULL) {
		connect_user(c, arg, timeout_arg(conn), r);
		free(arg);
	} else {
		reply_error(r, 404, "NotFound", "no such endpoint");
	}
}

static enum MHD_Result
handler(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
        const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	sk_controller *c = cls;
	struct MHD_Response *resp;
	reply r = { 0 };
	enum MHD_Result ret;

	if (*con_cls == NULL) { /* the first call of a request: only mark it seen */
		*con_cls = c;
		return MHD_YES;
	}
	if (*upload_data_size != 0) {
		*upload_data_size = 0; /* bodies are ignored */
		return MHD_YES;
	}
	route(c, conn, method, url, &r);
	resp = MHD_create_response_from_buffer(strlen(r.body), r.body, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(resp, "Content-Type", r.type);
	ret = MHD_queue_response(conn, r.status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static int
parse_listen(const char *listen, struct sockaddr_in *sa, sk_error *err)
{
	const char *colon = strrchr(listen, ':');
	char host[64];
	long port;
	char *end;

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	if (!colon || (size_t)(colon - listen) >= sizeof(host))
		return sk_error_set(err, SK_EINVALID, "listen %s: want HOST:PORT", listen);
	memcpy(host, listen, (size_t)(colon - listen));
	host[colon - listen] = '\0';
	port = strtol(colon + 1, &end, 10);
	if (*end || port < 0 || port > 65535)
		return sk_error_set(err, SK_EINVALID, "listen %s: bad port", listen);
	if (host[0] == '\0' || strcmp(host, "localhost") == 0)
		snprintf(host, sizeof(host), "127.0.0.1");
	if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
		return sk_error_set(err, SK_EINVALID, "listen %s: want an IPv4 address", listen);
	sa->sin_port = htons((uint16_t)port);
	return 0;
}

int
sk_ctl_http_start(sk_controller *c, sk_error *err)
{
	struct sockaddr_in sa;
	struct MHD_Daemon *d;
	const union MHD_DaemonInfo *info;
	int rc = parse_listen(c->cfg->listen, &sa, err);

	if (rc != 0)
		return rc;
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION,
	        ntohs(sa.sin_port), NULL, NULL, handler, c, MHD_OPTION_SOCK_ADDR, &sa,
	        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)60, MHD_OPTION_END);
	if (!d)
		return sk_error_set(err, SK_EUNAVAILABLE, "listen %s: cannot bind", c->cfg->listen);
	info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	c->http_port = info ? info->port : ntohs(sa.sin_port);
	c->httpd = d;
	return 0;
}

void
sk_ctl_http_stop(sk_controller *c)
{
	if (c->httpd) {
		MHD_stop_daemon(c->httpd);
		c->httpd = NULL;
	}
}
