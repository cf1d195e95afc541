/*
 * http: the controller's main listener (controller.listen) on libmicrohttpd:
 * /healthz, /readyz, /metrics and the status page (/, /spaces/NAME). The
 * connect API has its own listener (guard.c); here its paths answer 404
 * naming where it is. One polling thread per core over epoll with short
 * idle timeouts and connection caps: every handler here is quick, so slow or
 * half-open clients cannot hold a thread, and health answers while connects
 * wait on the other listener. /readyz also fails when the store has not
 * answered for controller.storeUnavailableAfter (a probe thread pings it).
 */
#include <arpa/inet.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "ground_int.h"
#include "http_int.h"
#include "shards_int.h"

/* Health and metrics clients are few (kubelet, Prometheus, a person). */
#define MAIN_THREADS 2
#define MAIN_MAX_CONNECTIONS 1024
#define MAIN_MAX_PER_IP 64
#define MAIN_IDLE_S 10
#define MAIN_MEMORY (32 * 1024) /* request line and headers */
/* The store probe pings this often (at most every second). */
#define PROBE_MAX_MS 1000

typedef sk_http_reply reply;

static void
reply_text(reply *r, unsigned int status, const char *text)
{
	r->status = status;
	r->body = sk_strdup(text);
	r->type = "text/plain; charset=utf-8";
}

char *
sk_ctl_path_segment(const char *url, const char *prefix, const char *suffix)
{
	size_t pl = strlen(prefix), sl = strlen(suffix), ul = strlen(url);

	if (ul <= pl + sl || strncmp(url, prefix, pl) != 0 || strcmp(url + ul - sl, suffix) != 0)
		return NULL;
	if (memchr(url + pl, '/', ul - pl - sl))
		return NULL;
	return sk_strndup(url + pl, ul - pl - sl);
}

/* ---- the store probe ---- */

static void *
probe_main(void *arg)
{
	sk_controller *c = arg;
	int64_t every = c->cfg->store_unavailable_after_ms / 4;

	if (every <= 0 || every > PROBE_MAX_MS)
		every = PROBE_MAX_MS;
	while (!sk_ctl_stopping(c)) {
		sk_error err = { 0 };
		if (sk_store_ping(c->store, &err) == 0)
			atomic_store(&c->http->store_ok_ms, sk_monotonic_ms());
		else if (!sk_ctl_stopping(c))
			sk_ctl_store_error(c, "ping");
		for (int64_t t = 0; t < every && !sk_ctl_stopping(c); t += 50)
			sk_sleep_ms(50);
	}
	return NULL;
}

/* How long the store has not answered; 0 before its first answer (until
 * then the informer's first list stands for it). */
static int64_t
store_silent_ms(sk_controller *c)
{
	int64_t ok = atomic_load(&c->http->store_ok_ms);

	return ok > 0 ? sk_monotonic_ms() - ok : 0;
}

static void
readyz(sk_controller *c, reply *r)
{
	int64_t silent = store_silent_ms(c), skew = 0;
	size_t n_free;
	char msg[200];

	if (!sk_controller_ready(c)) {
		reply_text(r, 503, "not started (informer sync, first shard round, workers)\n");
	} else if (sk_ctl_shards_halted(c, &skew)) {
		snprintf(msg, sizeof(msg),
		        "clock skew: this host's clock is %.3f s off the database server's "
		        "(limit %d s); not acting\n",
		        (double)skew / 1000.0, SK_STORE_CLOCK_SKEW_MAX_MS / 1000);
		reply_text(r, 503, msg);
	} else if (silent > c->cfg->store_unavailable_after_ms) {
		snprintf(msg, sizeof(msg), "store unreachable for %llds\n",
		        (long long)(silent / 1000));
		reply_text(r, 503, msg);
	} else if ((n_free = sk_ctl_shards_free_unheld(c)) > 0) {
		snprintf(msg, sizeof(msg), "no shard held while %zu are free\n", n_free);
		reply_text(r, 503, msg);
	} else {
		reply_text(r, 200, "ok\n");
	}
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
		readyz(c, r);
	} else if (get && strcmp(url, "/metrics") == 0) {
		sk_buf b = SK_BUF_INIT(16 * 1024 * 1024);
		sk_controller_render_metrics(c, &b);
		r->status = 200;
		r->body = sk_buf_detach(&b);
		r->type = "text/plain; version=0.0.4; charset=utf-8";
	} else if (get && strcmp(url, "/") == 0) {
		sk_ctl_page_index(c,
		        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "after"),
		        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "limit"), r);
	} else if (get && (arg = sk_ctl_path_segment(url, "/spaces/", "")) != NULL) {
		sk_ctl_page_space(c, arg, r);
		free(arg);
	} else if (strncmp(url, "/v1/", 4) == 0) {
		sk_ctl_reply_error(r, 404, "UnknownEndpoint",
		        "the connect API is served on controller.connectListen (--connect-listen), "
		        "not on the metrics and health listener");
	} else {
		sk_ctl_reply_error(r, 404, "UnknownEndpoint", "no such endpoint");
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
		*upload_data_size = 0; /* bodies are read and dropped */
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

int
sk_ctl_parse_listen(const char *listen, struct sockaddr_in *sa, sk_error *err)
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

static int
main_start(sk_controller *c, sk_error *err)
{
	struct sockaddr_in sa;
	struct MHD_Daemon *d;
	const union MHD_DaemonInfo *info;
	int rc = sk_ctl_parse_listen(c->cfg->listen, &sa, err);

	if (rc != 0)
		return rc;
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, ntohs(sa.sin_port),
	        NULL, NULL, handler, c, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_THREAD_POOL_SIZE,
	        (unsigned int)MAIN_THREADS, MHD_OPTION_CONNECTION_LIMIT,
	        (unsigned int)MAIN_MAX_CONNECTIONS, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
	        (unsigned int)MAIN_MAX_PER_IP, MHD_OPTION_CONNECTION_TIMEOUT,
	        (unsigned int)MAIN_IDLE_S, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)MAIN_MEMORY,
	        MHD_OPTION_END);
	if (!d)
		return sk_error_set(err, SK_EUNAVAILABLE, "listen %s: cannot bind", c->cfg->listen);
	info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	c->http->port = info ? info->port : ntohs(sa.sin_port);
	c->http->daemon = d;
	return 0;
}

int
sk_ctl_http_start(sk_controller *c, sk_error *err)
{
	int rc = 0;

	if (c->cfg->listen && c->cfg->listen[0] && (rc = main_start(c, err)) != 0)
		return rc;
	if (c->cfg->connect_listen && c->cfg->connect_listen[0] &&
	        (rc = sk_ctl_guard_start(c, err)) != 0) {
		sk_ctl_http_stop(c);
		return rc;
	}
	if (pthread_create(&c->http->probe, NULL, probe_main, c) == 0)
		c->http->probe_running = true;
	return 0;
}

void
sk_ctl_http_stop(sk_controller *c)
{
	sk_ctl_guard_stop(c);
	if (c->http->daemon) {
		MHD_stop_daemon(c->http->daemon);
		c->http->daemon = NULL;
	}
	if (c->http->probe_running) {
		pthread_join(c->http->probe, NULL);
		c->http->probe_running = false;
	}
}
