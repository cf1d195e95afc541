/*
 * sandboxsim server: libmicrohttpd glue (one thread per connection, so an
 * injected delay only holds its own connection), request bodies, the
 * dispatch between data plane, /_sim admin and the flavour's control plane,
 * the common pre-checks (API key, overload, latency, injected errors) and
 * response helpers.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim.h"

#define SIM_BODY_MAX (1 << 20)
/* A file upload (envd POST /files, the toolbox's /files/...): 50 MB files and more. */
#define SIM_FILE_BODY_MAX ((size_t)1 << 30)

const char *const sim_ep_names[SIM_EP_COUNT] = { "create", "get", "list", "list_v1", "kill",
	"pause", "connect", "resume", "timeout", "refreshes", "start", "stop", "archive", "labels",
	"autostop", "volumes", "snapshots", "fork", "metrics", "api_health", "health", "envd",
	"init", "process", "files", "filesystem", "network", "unknown", "sim" };

int
sim_ep_lookup(const char *name)
{
	if (strcmp(name, "*") == 0)
		return SIM_EP_COUNT;
	for (int i = 0; i < SIM_EP_COUNT; i++)
		if (strcmp(sim_ep_names[i], name) == 0)
			return i;
	return -1;
}

bool
sim_ep_is_control(int ep)
{
	return ep < SIM_EP_API_HEALTH;
}

/* ---- response helpers ---- */

static void
set_resp(sim_req *r, int status, char *body, size_t len, const char *ctype)
{
	free(r->resp);
	r->status = status;
	r->resp = body;
	r->resp_len = len;
	r->ctype = ctype;
}

void
sim_reply_json(sim *s, sim_req *r, int status, json_t *body)
{
	char *text = json_dumps(body, JSON_COMPACT);

	json_decref(body);
	set_resp(r, status, text, strlen(text), "application/json");
}

static const char *
reason_phrase(int status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 404: return "Not Found";
	case 409: return "Conflict";
	case 413: return "Payload Too Large";
	case 429: return "Too Many Requests";
	case 503: return "Service Unavailable";
	default: return status >= 500 ? "Internal Server Error" : "Error";
	}
}

void
sim_reply_error(sim *s, sim_req *r, int status, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (s->flavor == SIM_DAYTONA)
		sim_reply_json(s, r, status,
		        json_pack("{s:i,s:s,s:s}", "statusCode", status, "message", msg, "error",
		                reason_phrase(status)));
	else
		sim_reply_json(
		        s, r, status, json_pack("{s:i,s:s}", "code", status, "message", msg));
}

void
sim_reply_owned(sim_req *r, int status, const char *ctype, char *data, size_t len)
{
	set_resp(r, status, data, len, ctype);
}

void
sim_reply_empty(sim_req *r, int status)
{
	set_resp(r, status, NULL, 0, NULL);
}

void
sim_reply_text(sim_req *r, int status, const char *ctype, const char *text)
{
	set_resp(r, status, sk_strdup(text), strlen(text), ctype);
}

void
sim_reply_header(sim_req *r, const char *name, const char *value)
{
	if (r->nhdr >= SIM_MAX_HDRS)
		return;
	snprintf(r->hdr_name[r->nhdr], sizeof(r->hdr_name[0]), "%s", name);
	snprintf(r->hdr_val[r->nhdr], sizeof(r->hdr_val[0]), "%s", value);
	r->nhdr++;
}

/* ---- request helpers ---- */

const char *
sim_req_header(sim_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *
sim_req_arg(sim_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

struct arg_collect {
	const char *name;
	sk_buf buf;
	int n;
};

static enum MHD_Result
collect_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct arg_collect *c = cls;

	if (strcmp(key, c->name) != 0)
		return MHD_YES;
	if (c->n++ > 0)
		sk_buf_append(&c->buf, ",", 1);
	if (value)
		sk_buf_append(&c->buf, value, strlen(value));
	return MHD_YES;
}

char *
sim_req_arg_all(sim_req *r, const char *name)
{
	struct arg_collect c = { name, SK_BUF_INIT(65536), 0 };

	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, collect_arg, &c);
	if (c.n == 0) {
		sk_buf_dispose(&c.buf);
		return NULL;
	}
	if (c.buf.data == NULL)
		return sk_strdup("");
	return sk_buf_detach(&c.buf);
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int
sim_unescape(char *str, bool plus)
{
	char *w = str;

	for (char *p = str; *p; p++) {
		if (*p == '%') {
			int hi = hexval(p[1]), lo = hi < 0 ? -1 : hexval(p[2]);
			if (hi < 0 || lo < 0)
				return -1;
			*w++ = (char)(hi * 16 + lo);
			p += 2;
		} else if (*p == '+' && plus) {
			*w++ = ' ';
		} else {
			*w++ = *p;
		}
	}
	*w = '\0';
	return 0;
}

json_t *
sim_req_json(sim *s, sim_req *r, bool optional)
{
	json_error_t jerr;
	json_t *doc;

	if (r->body_len == 0 && optional)
		return json_object();
	if (r->body_len == 0) {
		sim_reply_error(s, r, 400,
		        "validation error: request body has an error: value is "
		        "required but missing");
		return NULL;
	}
	doc = json_loadb(r->body, r->body_len, 0, &jerr);
	if (doc == NULL) {
		sim_reply_error(s, r, 400,
		        "validation error: request body has an error: failed "
		        "to decode request body: %s",
		        jerr.text);
		return NULL;
	}
	if (!json_is_object(doc)) {
		json_decref(doc);
		sim_reply_error(s, r, 400,
		        "validation error: request body has an error: value "
		        "must be an object");
		return NULL;
	}
	return doc;
}

/* ---- pre-checks ---- */

static bool
e2b_key_ok(const char *key)
{
	if (key == NULL || strncmp(key, "e2b_", 4) != 0 || key[4] == '\0')
		return false;
	for (const char *p = key + 4; *p; p++)
		if (hexval(*p) < 0 || (*p >= 'A' && *p <= 'F'))
			return false;
	return true;
}

static const char *
bearer(sim_req *r)
{
	const char *a = sim_req_header(r, "Authorization");

	if (a && strncasecmp(a, "Bearer ", 7) == 0)
		return a + 7;
	return NULL;
}

static bool
check_auth(sim *s, sim_req *r)
{
	const char *key = sim_req_header(r, "X-API-Key");

	if (s->flavor == SIM_DAYTONA) {
		key = bearer(r);
		if (key && *key && (s->api_key == NULL || strcmp(key, s->api_key) == 0))
			return true;
		sim_reply_error(s, r, 401, "Unauthorized");
		return false;
	}
	if (s->flavor == SIM_CUBE) {
		const char *b = bearer(r);
		if (s->api_key == NULL || (b && strcmp(b, s->api_key) == 0) ||
		        (key && strcmp(key, s->api_key) == 0))
			return true;
		sim_reply_error(s, r, 401, "Invalid API key");
		return false;
	}
	if (key == NULL || *key == '\0') {
		sim_reply_error(s, r, 401,
		        "Invalid API key, please visit "
		        "https://e2b.dev/docs/api-key for more information.");
		return false;
	}
	if (s->api_key ? strcmp(key, s->api_key) == 0 : e2b_key_ok(key))
		return true;
	sim_reply_error(s, r, 401,
	        s->api_key ? "Invalid API key, please visit https://e2b.dev/docs/api-key"
	                   : "Invalid API key format");
	return false;
}

/* Delay and injected errors; returns false when a fault already replied. */
static bool
apply_faults(sim *s, sim_req *r)
{
	int64_t delay = sim_faults_delay_ms(s, r->ep);
	int retry = 0, status;
	char buf[32];

	if (delay > 0)
		usleep((useconds_t)(delay * 1000));
	status = sim_faults_error(s, r->ep, &retry);
	if (status == 0)
		return true;
	if (retry > 0) {
		snprintf(buf, sizeof(buf), "%d", retry);
		sim_reply_header(r, "Retry-After", buf);
	}
	if (status == 429)
		sim_reply_error(s, r, 429, "Rate limit exceeded");
	else
		sim_reply_error(s, r, status, "injected fault: %d", status);
	return false;
}

/* The flavour handlers call this once they know the endpoint. */
bool
sim_precheck(sim *s, sim_req *r, bool auth)
{
	if (auth && !check_auth(s, r))
		return false;
	return apply_faults(s, r);
}

/* ---- dispatch ---- */

static void
split_path(sim_req *r)
{
	char *save = NULL, *tok;

	r->path = sk_strdup(r->url);
	for (tok = strtok_r(r->path, "/", &save); tok && r->nseg < SIM_MAX_SEGS;
	        tok = strtok_r(NULL, "/", &save))
		r->segs[r->nseg++] = tok;
}

static void
dispatch(sim *s, sim_req *r)
{
	char id[64];
	int retry = 0;
	char buf[16];

	split_path(r);
	if (sim_dataplane_target(s, r, id, sizeof(id))) {
		r->ep = sim_dataplane_ep(r);
		if (r->body_too_big)
			sim_reply_error(s, r, 413, "request body too large");
		else if (apply_faults(s, r))
			sim_dataplane(s, r, id);
		return;
	}
	if (r->nseg > 0 && strcmp(r->segs[0], "_sim") == 0) {
		r->ep = SIM_EP_SIM;
		sim_admin_route(s, r);
		return;
	}
	if (!sim_faults_overload_enter(s, &retry)) {
		r->ep = SIM_EP_UNKNOWN;
		snprintf(buf, sizeof(buf), "%d", retry);
		sim_reply_header(r, "Retry-After", buf);
		sim_reply_error(s, r, 503, "service is overloaded, retry later");
		return;
	}
	if (r->body_too_big) {
		r->ep = SIM_EP_UNKNOWN;
		sim_reply_error(s, r, 413, "request body too large");
	} else if (s->flavor == SIM_DAYTONA) {
		sim_daytona_route(s, r);
	} else {
		sim_e2b_route(s, r);
	}
	sim_faults_overload_leave(s);
}

static enum MHD_Result
send_reply(sim *s, sim_req *r)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	if (r->status == 0)
		sim_reply_error(s, r, 500, "no response");
	if (r->ep != SIM_EP_SIM && r->stream == NULL)
		sim_faults_mangle(s, r);
	if (r->stream != NULL) /* the reader owns stream_cls from here on */
		resp = MHD_create_response_from_callback(
		        MHD_SIZE_UNKNOWN, 4096, r->stream, r->stream_cls, r->stream_free);
	else
		resp = MHD_create_response_from_buffer(r->resp_len, r->resp,
		        r->resp ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	r->resp = NULL;
	if (r->ctype)
		MHD_add_response_header(resp, "Content-Type", r->ctype);
	for (int i = 0; i < r->nhdr; i++)
		MHD_add_response_header(resp, r->hdr_name[i], r->hdr_val[i]);
	ret = MHD_queue_response(r->conn, (unsigned)r->status, resp);
	MHD_destroy_response(resp);
	if (r->ep != SIM_EP_SIM)
		sim_stats_count(s, r->ep, r->status);
	return ret;
}

static bool
carries_file(const char *method, const char *url)
{
	return strcmp(method, "POST") == 0 &&
	        (strcmp(url, "/files") == 0 || strstr(url, "/files/") != NULL);
}

/* Appends an upload chunk, the buffer doubling (a 50 MB body is not copied
 * chunk by chunk); past the cap the body is dropped and marked too big. */
static void
body_append(sim_req *r, const char *data, size_t n)
{
	size_t max = carries_file(r->method, r->url) ? SIM_FILE_BODY_MAX : SIM_BODY_MAX;

	if (r->body_too_big || r->body_len + n > max) {
		r->body_too_big = true;
		return;
	}
	if (r->body_len + n + 1 > r->body_cap) {
		size_t cap = r->body_cap ? r->body_cap : 4096;
		while (cap < r->body_len + n + 1)
			cap *= 2;
		r->body = sk_realloc(r->body, cap);
		r->body_cap = cap;
	}
	memcpy(r->body + r->body_len, data, n);
	r->body_len += n;
	r->body[r->body_len] = '\0';
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
        const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	sim *s = cls;
	sim_req *r = *con_cls;

	if (r == NULL) {
		r = sk_calloc(1, sizeof(*r));
		r->conn = conn;
		r->url = url;
		r->method = method;
		r->ep = SIM_EP_UNKNOWN;
		*con_cls = r;
		return MHD_YES;
	}
	if (*upload_size > 0) {
		body_append(r, upload, *upload_size);
		*upload_size = 0;
		return MHD_YES;
	}
	dispatch(s, r);
	return send_reply(s, r);
}

static void
on_completed(
        void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	sim_req *r = *con_cls;

	if (r == NULL)
		return;
	free(r->body);
	free(r->path);
	free(r->resp);
	free(r);
	*con_cls = NULL;
}

static void *
sweeper(void *arg)
{
	sim *s = arg;

	while (!s->stopping) {
		usleep(200 * 1000);
		pthread_mutex_lock(&s->lock);
		sim_store_sweep(s, sk_now_ms());
		pthread_mutex_unlock(&s->lock);
	}
	return NULL;
}

int
sim_serve(sim *s, const char *host, int port)
{
	sigset_t set;
	int sig = 0;
	struct sockaddr_in addr = { 0 };
	struct MHD_Daemon *d;
	const union MHD_DaemonInfo *info;
	static const char *const flavors[] = { "e2b", "cube", "daytona" };

	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) {
		fprintf(stderr, "sandboxsim: bad listen address %s\n", host);
		return -1;
	}
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
	                MHD_USE_POLL | MHD_USE_ERROR_LOG,
	        (uint16_t)port, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, &addr,
	        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_CONNECTION_LIMIT,
	        (unsigned)4000, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120,
	        MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024, MHD_OPTION_END);
	if (d == NULL) {
		fprintf(stderr, "sandboxsim: cannot listen on %s:%d\n", host, port);
		return -1;
	}
	info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	fprintf(stderr, "sandboxsim: listening on http://%s:%u flavor=%s\n", host,
	        info ? (unsigned)info->port : (unsigned)port, flavors[s->flavor]);
	pthread_create(&s->sweeper, NULL, sweeper, s);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigwait(&set, &sig);
	fprintf(stderr, "sandboxsim: shutting down\n");
	s->stopping = 1;
	MHD_stop_daemon(d);
	pthread_join(s->sweeper, NULL);
	return 0;
}
