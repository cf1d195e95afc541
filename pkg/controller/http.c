/*
 * http: the controller's HTTP endpoint on libmicrohttpd (a thread per
 * connection, so a connect call waiting for readiness never blocks
 * /metrics): /healthz, /readyz, /metrics, the status page (/, /spaces/NAME)
 * and the connect API.
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

typedef sk_http_reply reply;

static void
reply_text(reply *r, unsigned int status, const char *text)
{
	r->status = status;
	r->body = sk_strdup(text);
	r->type = "text/plain; charset=utf-8";
}

/* ?timeout= of a connect: a duration (default 30s, at most 5m). Anything
 * else is the caller's mistake, answered 400, never silently the default. */
static bool
timeout_arg(struct MHD_Connection *conn, int64_t *ms, reply *r)
{
	const char *t = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "timeout");

	*ms = CONNECT_DEFAULT_MS;
	if (t == NULL)
		return true;
	if (sk_duration_parse(t, ms) != 0 || *ms <= 0) {
		sk_ctl_reply_error(r, 400, "BadTimeout",
		        "timeout: want a positive duration like 500ms, 10s or 1m (at most 5m)");
		return false;
	}
	if (*ms > CONNECT_MAX_MS)
		*ms = CONNECT_MAX_MS;
	return true;
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

/* ---- routing ---- */

/* Who sent a connect: another replica, and the caller's Authorization. */
static sk_ctl_origin
origin_of(struct MHD_Connection *conn)
{
	sk_ctl_origin o = { 0 };

	o.forwarded =
	        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, SK_CTL_FORWARDED_HEADER) != NULL;
	o.authorization = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
	return o;
}

static void
route(sk_controller *c, struct MHD_Connection *conn, const char *method, const char *url, reply *r)
{
	bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
	sk_ctl_origin from = origin_of(conn);
	int64_t ms;
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
	} else if (get && strcmp(url, "/") == 0) {
		sk_ctl_page_index(c, r);
	} else if (get && (arg = path_segment(url, "/spaces/", "")) != NULL) {
		sk_ctl_page_space(c, arg, r);
		free(arg);
	} else if ((arg = path_segment(url, "/v1/userspaces/", "/connect")) != NULL) {
		if (strcmp(method, "POST") != 0)
			sk_ctl_reply_error(r, 405, "MethodNotAllowed", "use POST");
		else if (timeout_arg(conn, &ms, r))
			sk_ctl_connect(c, arg, ms, &from, r);
		free(arg);
	} else if ((arg = path_segment(url, "/v1/users/", "/sandbox")) != NULL) {
		/* GET may create or resume: HEAD, a read, must not. */
		if (strcmp(method, "GET") != 0)
			sk_ctl_reply_error(r, 405, "MethodNotAllowed", "use GET");
		else if (timeout_arg(conn, &ms, r))
			sk_ctl_connect_user(c, arg, ms, &from, r);
		free(arg);
	} else if ((arg = path_segment(url, "/v1/users/", "/activity")) != NULL) {
		if (strcmp(method, "POST") != 0)
			sk_ctl_reply_error(r, 405, "MethodNotAllowed", "use POST");
		else
			sk_ctl_activity(c, arg, &from, r);
		free(arg);
	} else {
		sk_ctl_reply_error(r, 404, "NotFound", "no such endpoint");
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
	if (r.retry_after[0])
		MHD_add_response_header(resp, "Retry-After", r.retry_after);
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
