/*
 * guard: the connect API on its own listener (controller.connectListen),
 * apart from /metrics and health (http.c):
 *   POST /v1/userspaces/{name}/connect[?timeout=30s][&fresh=1]
 *   GET  /v1/users/{userID}/sandbox[?timeout=30s][&fresh=1]
 *   POST /v1/users/{userID}/unhealthy[?timeout=30s]   (= the GET with fresh=1)
 *   POST /v1/users/{userID}/activity
 * Every request needs "Authorization: Bearer <token>" when
 * connectTokenFile or connectTokens is set (tokens.c: compared in constant
 * time, reloaded when a file changes; a tenant's token carries its scope to
 * connect.c), else 401 with WWW-Authenticate. TLS when a certificate and
 * key are configured.
 *
 * Threading: a few polling threads over epoll accept and parse every
 * connection (no thread per connection, so half-open clients cost a socket
 * and a short idle timeout, nothing more). A connect answered from memory
 * (sk_ctl_connect_fast) is answered there, with no thread (the
 * thread per call was most of the fast path's cost). A connect that may
 * wait for a reconcile, up to its timeout, has its connection suspended
 * and runs in a thread of its own; at most connectMaxWaiting run at once,
 * beyond that the answer is 429 with Retry-After, at once.
 * Limits: request line and headers within GUARD_MEMORY (431 beyond), bodies
 * within GUARD_BODY_MAX (413), connectMaxConnections open connections
 * (capped below the file-descriptor limit), connectMaxConnectionsPerIP.
 */
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>

#include "ground_int.h"
#include "http_int.h"
#include "shards_int.h"

#define CONNECT_DEFAULT_MS 30000
#define CONNECT_MAX_MS 300000
#define GUARD_THREADS 2
#define GUARD_IDLE_S 10 /* a client silent this long is closed (half-open) */
/* Each connection's memory pool: the request line and headers, and the
 * answer's headers. libmicrohttpd zeroes the whole pool at every request
 * on a kept-alive connection: at 32 KB that memset was 5-6% of the fast
 * path's CPU. 8 KiB is nginx's and Apache's header limit too. */
#define GUARD_MEMORY (8 * 1024)
#define GUARD_BODY_MAX (64 * 1024)
#define GUARD_STACK (512 * 1024) /* per waiting connect */
#define GUARD_FD_RESERVE 256 /* descriptors kept for MongoDB, providers, logs */
#define GUARD_PEM_MAX (1024 * 1024)
#define METRIC_REJECTED "spacekeeper_connect_rejected_total"
#define METRIC_WAITING "spacekeeper_connect_waiting"

struct sk_ctl_guard {
	struct MHD_Daemon *d;
	int port;
	sk_ctl_tokens *tokens; /* NULL: no authentication */
	char *cert, *key; /* PEM, while serving TLS */
	char *pin; /* the cert's public key pin, for forwards (forward.c) */
	size_t key_len;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	int waiting; /* connect threads running */
};

typedef enum call_kind { CALL_CONNECT, CALL_USER } call_kind;

/* One request on the connect listener. */
typedef struct call {
	sk_controller *c;
	struct MHD_Connection *conn;
	call_kind kind;
	char *arg;
	int64_t ms;
	bool fresh; /* probe now, no answer from memory */
	sk_ctl_origin from; /* its header values live as long as conn */
	size_t body; /* bytes of body seen */
	bool done; /* r holds the answer of a connect thread */
	bool unauthorized;
	sk_http_reply r;
} call;

/* ---- answers ---- */

static void
count_rejected(sk_controller *c, const char *reason)
{
	char l[64];

	snprintf(l, sizeof(l), "reason=\"%s\"", reason);
	sk_metrics_add(c->metrics, METRIC_REJECTED, l, 1);
}

static enum MHD_Result
send_reply(call *q)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;
	const char *body = q->r.body ? q->r.body : "";

	resp = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_FREE);
	q->r.body = NULL; /* the response owns it */
	MHD_add_response_header(resp, "Content-Type", q->r.type ? q->r.type : "text/plain");
	if (q->r.retry_after[0])
		MHD_add_response_header(resp, "Retry-After", q->r.retry_after);
	if (q->unauthorized)
		MHD_add_response_header(resp, "WWW-Authenticate", "Bearer realm=\"spacekeeper\"");
	ret = MHD_queue_response(q->conn, q->r.status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static void
request_done(
        void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	call *q = *con_cls;

	if (q == NULL)
		return;
	free(q->arg);
	free(q->r.body);
	free(q);
	*con_cls = NULL;
}

/* ---- authentication ---- */

/* Whether the Authorization header holds a bearer token at all. */
static bool
has_bearer_token(const char *h)
{
	if (h == NULL || strncasecmp(h, "Bearer ", 7) != 0)
		return false;
	h += 7;
	return h[strspn(h, " ")] != '\0';
}

/* "Bearer <token>" against the configured tokens (tokens.c); sets the
 * caller's token name and scope in *from. Refused: *why says whether no
 * token came ("no token") or one that matches none ("token not accepted"),
 * the two mistakes a caller fixes differently. */
static bool
authorized(sk_controller *c, struct MHD_Connection *conn, sk_ctl_origin *from, const char **why)
{
	const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
	struct sk_ctl_guard *g = c->http->guard;

	if (g->tokens == NULL || sk_ctl_tokens_check(c, g->tokens, h, from))
		return true;
	*why = has_bearer_token(h)
	        ? "token not accepted: the bearer token matches no token of "
	          "controller.connectTokenFile or controller.connectTokens"
	        : "no token: the connect API wants an Authorization: Bearer token";
	return false;
}

/* ---- routing ---- */

/* ?timeout= of a connect: a duration (default 30s, at most 5m). Anything
 * else is the caller's mistake, answered 400, never silently the default. */
static bool
timeout_arg(struct MHD_Connection *conn, int64_t *ms, sk_http_reply *r)
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

/* ?fresh= of a connect: 1/true or 0/false (absent: false); else 400. */
static bool
fresh_arg(struct MHD_Connection *conn, bool *fresh, sk_http_reply *r)
{
	const char *f = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "fresh");

	*fresh = f != NULL && (strcmp(f, "1") == 0 || strcmp(f, "true") == 0);
	if (f == NULL || *fresh || strcmp(f, "0") == 0 || strcmp(f, "false") == 0)
		return true;
	sk_ctl_reply_error(r, 400, "BadFresh", "fresh: want 1 or 0");
	return false;
}

/* Who sent a connect: another replica, and the caller's Authorization
 * (its token and scope are already in *o). */
static void
origin_of(struct MHD_Connection *conn, sk_ctl_origin *o)
{
	o->forwarded =
	        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, SK_CTL_FORWARDED_HEADER) != NULL;
	o->authorization = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
}

/* Fills q->kind/arg/ms for a connect to run in a thread (true), or answers
 * q->r at once (false). */
static bool
route(call *q, const char *method, const char *url)
{
	char *arg;

	origin_of(q->conn, &q->from);
	if ((arg = sk_ctl_path_segment(url, "/v1/userspaces/", "/connect")) != NULL) {
		q->kind = CALL_CONNECT;
		if (strcmp(method, "POST") != 0)
			sk_ctl_reply_error(&q->r, 405, "MethodNotAllowed", "use POST");
	} else if ((arg = sk_ctl_path_segment(url, "/v1/users/", "/sandbox")) != NULL) {
		/* GET may create or resume: HEAD, a read, must not. */
		q->kind = CALL_USER;
		if (strcmp(method, "GET") != 0)
			sk_ctl_reply_error(&q->r, 405, "MethodNotAllowed", "use GET");
	} else if ((arg = sk_ctl_path_segment(url, "/v1/users/", "/unhealthy")) != NULL) {
		/* the application saw the data plane fail: a fresh look, now */
		q->kind = CALL_USER;
		q->fresh = true;
		if (strcmp(method, "POST") != 0)
			sk_ctl_reply_error(&q->r, 405, "MethodNotAllowed", "use POST");
	} else if ((arg = sk_ctl_path_segment(url, "/v1/users/", "/activity")) != NULL) {
		if (strcmp(method, "POST") != 0)
			sk_ctl_reply_error(&q->r, 405, "MethodNotAllowed", "use POST");
		else
			sk_ctl_activity(q->c, arg, &q->from, &q->r);
		free(arg);
		return false;
	} else {
		sk_ctl_reply_error(&q->r, 404, "UnknownEndpoint",
		        "no such endpoint: the connect API's routes are /v1/users/USERID/sandbox, "
		        "/v1/users/USERID/activity, /v1/users/USERID/unhealthy and "
		        "/v1/userspaces/NAME/connect");
		return false;
	}
	if (q->r.status != 0 || !timeout_arg(q->conn, &q->ms, &q->r) ||
	        (!q->fresh && !fresh_arg(q->conn, &q->fresh, &q->r))) {
		free(arg);
		return false;
	}
	q->arg = arg;
	return true;
}

/* ---- connects in their own threads ---- */

static void *
call_main(void *arg)
{
	call *q = arg;
	sk_controller *c = q->c;
	struct sk_ctl_guard *g = c->http->guard;

	if (q->kind == CALL_CONNECT)
		sk_ctl_connect(c, q->arg, q->ms, q->fresh, &q->from, &q->r);
	else
		sk_ctl_connect_user(c, q->arg, q->ms, q->fresh, &q->from, &q->r);
	q->done = true;
	/* q belongs to the listener again from here on */
	MHD_resume_connection(q->conn);
	pthread_mutex_lock(&g->mu);
	g->waiting--;
	sk_metrics_set(c->metrics, METRIC_WAITING, NULL, g->waiting);
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->mu);
	return NULL;
}

/* A place among the waiting connects, or 429/503 in q->r. */
static bool
take_slot(call *q)
{
	struct sk_ctl_guard *g = q->c->http->guard;
	bool ok;

	pthread_mutex_lock(&g->mu);
	ok = !sk_ctl_stopping(q->c) && g->waiting < q->c->cfg->connect_max_waiting;
	if (ok)
		g->waiting++;
	sk_metrics_set(q->c->metrics, METRIC_WAITING, NULL, g->waiting);
	pthread_mutex_unlock(&g->mu);
	if (ok)
		return true;
	if (sk_ctl_stopping(q->c)) {
		sk_ctl_reply_error(&q->r, 503, "ShuttingDown", "the controller is stopping");
		return false;
	}
	count_rejected(q->c, "waiting");
	snprintf(q->r.retry_after, sizeof(q->r.retry_after), "1");
	sk_ctl_reply_error(&q->r, 429, "TooManyConnects",
	        "too many connects in progress (controller.connectMaxWaiting); retry later");
	return false;
}

/* Suspends the connection and runs the connect in a thread; false with an
 * answer in q->r when it cannot. */
static bool
start_call(call *q)
{
	struct sk_ctl_guard *g = q->c->http->guard;
	pthread_attr_t attr;
	pthread_t th;
	int rc;

	if (!take_slot(q))
		return false;
	MHD_suspend_connection(q->conn);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, GUARD_STACK);
	rc = pthread_create(&th, &attr, call_main, q);
	pthread_attr_destroy(&attr);
	if (rc == 0)
		return true;
	pthread_mutex_lock(&g->mu);
	g->waiting--;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->mu);
	count_rejected(q->c, "threads");
	snprintf(q->r.retry_after, sizeof(q->r.retry_after), "1");
	sk_ctl_reply_error(&q->r, 503, "Overloaded", "cannot start a thread for this connect");
	q->done = true;
	MHD_resume_connection(q->conn);
	return true;
}

/* ---- the handler ---- */

static bool
body_too_large(struct MHD_Connection *conn)
{
	const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");

	return cl != NULL && strtoull(cl, NULL, 10) > GUARD_BODY_MAX;
}

static enum MHD_Result
reject_body(call *q)
{
	count_rejected(q->c, "body");
	sk_ctl_reply_error(&q->r, 413, "PayloadTooLarge", "the connect API takes no request body");
	return send_reply(q);
}

static enum MHD_Result
handler(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
        const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	sk_controller *c = cls;
	call *q = *con_cls;
	const char *why = NULL;

	if (q == NULL) { /* the first call of a request: headers only */
		q = sk_calloc(1, sizeof(*q));
		q->c = c;
		q->conn = conn;
		*con_cls = q;
		return body_too_large(conn) ? reject_body(q) : MHD_YES;
	}
	if (q->done) /* back from a connect thread */
		return send_reply(q);
	if (*upload_data_size != 0) {
		q->body += *upload_data_size;
		*upload_data_size = 0;
		return q->body > GUARD_BODY_MAX ? reject_body(q) : MHD_YES;
	}
	if (!authorized(c, conn, &q->from, &why)) {
		count_rejected(c, "unauthorized");
		q->unauthorized = true;
		sk_ctl_reply_error(&q->r, 401, "Unauthorized", why);
		return send_reply(q);
	}
	if (!route(q, method, url))
		return send_reply(q);
	if (!q->fresh && sk_ctl_connect_fast(c, q->arg, q->kind == CALL_USER, &q->from, &q->r))
		return send_reply(q); /* answered from memory: no thread, no suspend */
	if (start_call(q))
		return MHD_YES;
	return send_reply(q);
}

/* ---- start / stop ---- */

/* connectMaxConnections, kept below the descriptors this process may open. */
static unsigned int
connection_limit(const sk_controller_config *cfg)
{
	struct rlimit rl;
	rlim_t n = (rlim_t)cfg->connect_max_connections;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	        rl.rlim_cur < n + GUARD_FD_RESERVE)
		n = rl.rlim_cur > 16 + GUARD_FD_RESERVE ? rl.rlim_cur - GUARD_FD_RESERVE : 16;
	return (unsigned int)n;
}

static int
read_pem(const char *path, const char *what, char **out, size_t *len, sk_error *err)
{
	sk_error ferr = { 0 };

	if (sk_file_read(path, GUARD_PEM_MAX, out, len, &ferr) != 0)
		return sk_error_set(err, SK_EINVALID, "%s %s: cannot be read", what, path);
	return 0;
}

static int
load_secrets(sk_controller *c, struct sk_ctl_guard *g, sk_error *err)
{
	const sk_controller_config *cfg = c->cfg;
	size_t n;
	int rc;

	if ((rc = sk_ctl_tokens_new(c, &g->tokens, err)) != 0)
		return rc;
	if (cfg->connect_tls_cert_file == NULL)
		return 0;
	if (!MHD_is_feature_supported(MHD_FEATURE_TLS))
		return sk_error_set(err, SK_EINVALID,
		        "controller.connectTLSCertFile: this libmicrohttpd has no TLS support");
	if ((rc = read_pem(cfg->connect_tls_cert_file, "controller.connectTLSCertFile", &g->cert,
	             &n, err)) != 0)
		return rc;
	if ((g->pin = sk_ctl_forward_pin(g->cert, n)) == NULL)
		return sk_error_set(err, SK_EINVALID,
		        "controller.connectTLSCertFile %s: no PEM certificate with a public key",
		        cfg->connect_tls_cert_file);
	return read_pem(cfg->connect_tls_key_file, "controller.connectTLSKeyFile", &g->key,
	        &g->key_len, err);
}

static void
guard_free(struct sk_ctl_guard *g)
{
	if (g == NULL)
		return;
	if (g->key)
		memset(g->key, 0, g->key_len);
	free(g->key);
	free(g->cert);
	free(g->pin);
	sk_ctl_tokens_free(g->tokens);
	pthread_mutex_destroy(&g->mu);
	pthread_cond_destroy(&g->cond);
	free(g);
}

static struct MHD_Daemon *
daemon_start(sk_controller *c, struct sk_ctl_guard *g, struct sockaddr_in *sa)
{
	struct MHD_OptionItem o[12];
	unsigned int flags =
	        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
	size_t n = 0;

	o[n++] = (struct MHD_OptionItem){ MHD_OPTION_SOCK_ADDR, 0, sa };
	o[n++] = (struct MHD_OptionItem){ MHD_OPTION_THREAD_POOL_SIZE, GUARD_THREADS, NULL };
	o[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_LIMIT,
		(intptr_t)connection_limit(c->cfg), NULL };
	o[n++] = (struct MHD_OptionItem){ MHD_OPTION_PER_IP_CONNECTION_LIMIT,
		(intptr_t)c->cfg->connect_max_per_ip, NULL };
	o[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_TIMEOUT, GUARD_IDLE_S, NULL };
	o[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_MEMORY_LIMIT, GUARD_MEMORY, NULL };
	o[n++] = (struct MHD_OptionItem){ MHD_OPTION_LISTEN_BACKLOG_SIZE, 4096, NULL };
	o[n++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)request_done,
		NULL };
	if (g->cert) {
		flags |= MHD_USE_TLS;
		o[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, g->cert };
		o[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, g->key };
	}
	o[n++] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
	return MHD_start_daemon(flags, ntohs(sa->sin_port), NULL, NULL, handler, c,
	        MHD_OPTION_ARRAY, o, MHD_OPTION_END);
}

static void
declare_metrics(sk_metrics *m)
{
	static const char *const reasons[] = { "waiting", "unauthorized", "body", "threads" };
	char l[64];

	sk_metrics_declare(m, METRIC_REJECTED, SK_METRIC_COUNTER,
	        "Connect API requests refused by the guard: waiting (429 beyond "
	        "connectMaxWaiting), unauthorized (401), body (413), threads (503)");
	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++) {
		snprintf(l, sizeof(l), "reason=\"%s\"", reasons[i]);
		sk_metrics_add(m, METRIC_REJECTED, l, 0);
	}
	sk_metrics_declare(m, METRIC_WAITING, SK_METRIC_GAUGE,
	        "Connects in progress (each in its own thread)");
	sk_metrics_set(m, METRIC_WAITING, NULL, 0);
}

int
sk_ctl_guard_start(sk_controller *c, sk_error *err)
{
	struct sk_ctl_guard *g = sk_calloc(1, sizeof(*g));
	const union MHD_DaemonInfo *info;
	struct sockaddr_in sa;
	int rc;

	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cond, NULL);
	if ((rc = sk_ctl_parse_listen(c->cfg->connect_listen, &sa, err)) != 0 ||
	        (rc = load_secrets(c, g, err)) != 0) {
		guard_free(g);
		return rc;
	}
	declare_metrics(c->metrics);
	c->http->guard = g;
	if ((g->d = daemon_start(c, g, &sa)) == NULL) {
		c->http->guard = NULL;
		guard_free(g);
		return sk_error_set(err, SK_EUNAVAILABLE,
		        "controller.connectListen %s: cannot serve (address in use, or a bad TLS "
		        "certificate or key)",
		        c->cfg->connect_listen);
	}
	info = MHD_get_daemon_info(g->d, MHD_DAEMON_INFO_BIND_PORT);
	g->port = info ? info->port : ntohs(sa.sin_port);
	if (g->tokens == NULL)
		sk_ctl_log(c, SK_LOG_WARN, "connect API without authentication",
		        "connect_listen=%s hint=\"set controller.connectTokenFile or "
		        "controller.connectTokens\"",
		        c->cfg->connect_listen);
	return 0;
}

void
sk_ctl_guard_stop(sk_controller *c)
{
	struct sk_ctl_guard *g = c->http->guard;

	if (g == NULL)
		return;
	/* Connect threads end soon after the stop flag; a suspended connection
	 * must be resumed before its daemon stops. */
	pthread_mutex_lock(&g->mu);
	while (g->waiting > 0)
		pthread_cond_wait(&g->cond, &g->mu);
	pthread_mutex_unlock(&g->mu);
	MHD_stop_daemon(g->d);
	c->http->guard = NULL;
	guard_free(g);
}

int
sk_ctl_guard_port(sk_controller *c)
{
	return c->http->guard ? c->http->guard->port : 0;
}

const char *
sk_ctl_guard_pin(sk_controller *c)
{
	return c->http->guard ? c->http->guard->pin : NULL;
}
