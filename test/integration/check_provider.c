/*
 * Integration tests for pkg/sandbox: the e2b, cube and daytona clients
 * against sandboxsim in each flavour, and against a small scripted fault
 * server of our own (libmicrohttpd in this process, plus raw sockets) for
 * what the simulator does not do: exact statuses, Retry-After forms, broken
 * and oversized bodies, hanging and refusing servers, shifting pages.
 */
#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../testutil.h"
#include "sandbox/sandbox.h"

Suite *sk_suite_provider_faults(void);
Suite *sk_suite_provider_sim(void);

#define KEY "e2b_0000000000000000000000000000000000000000" /* a dummy key */
#define KEY_VAR "SK_TEST_PROVIDER_KEY"

static const sk_provider_type all_types[] = { SK_PROVIDER_E2B, SK_PROVIDER_CUBE,
	SK_PROVIDER_DAYTONA };

/* ---------------------------------------------------------------- */
/* the scripted fault server                                         */

enum fmode {
	FM_FIXED, /* status + body for every request */
	FM_PAGES_SHIFT, /* E2B list: 5 overlapping pages */
	FM_PAGES_FOREVER,
	FM_PAGES_CYCLE, /* p1 -> p2 -> p1 */
	FM_DT_SHIFT, /* Daytona cursor list: 6 pages of 4 overlapping by 1 */
	FM_DT_FOREVER,
	FM_DT_CYCLE, /* c1 -> c2 -> c3 -> c2 */
};

typedef struct fsrv {
	struct MHD_Daemon *d;
	int port;
	char base[64];
	pthread_mutex_t lock;
	/* script */
	enum fmode mode;
	int status;
	const char *body;
	const char *retry_after;
	size_t big;
	bool chunked;
	/* recorded from the last request */
	int nreq;
	char method[16], url[512], metadata[512], state[64], token[128], page[32];
	char cursor[64], labels[512], limit[16];
	char api_key[256], auth[256], sbid[128], sbport[16], access_token[128];
	char req_body[1024];
	size_t req_body_len;
} fsrv;

static fsrv S;

static void
copy_value(
        struct MHD_Connection *c, enum MHD_ValueKind kind, const char *name, char *out, size_t len)
{
	const char *v = MHD_lookup_connection_value(c, kind, name);

	snprintf(out, len, "%s", v ? v : "");
}

static ssize_t
chunk_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
	size_t left = S.big > pos ? S.big - (size_t)pos : 0;

	if (left == 0)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (max > left)
		max = left;
	memset(buf, 'x', max);
	return (ssize_t)max;
}

static char *
listed(int i, const char *state)
{
	return sk_asprintf(
	        "{\"templateID\":\"base\",\"sandboxID\":\"sb%03d\",\"clientID\":\"x\","
	        "\"startedAt\":\"2026-01-01T00:00:00Z\",\"endAt\":\"2026-01-01T01:00:00Z\","
	        "\"cpuCount\":2,\"memoryMB\":512,\"diskSizeMB\":0,\"state\":\"%s\","
	        "\"envdVersion\":\"0.6.13\",\"metadata\":{\"managed_by\":\"spacekeeper\","
	        "\"user_id\":\"u%d\"}}",
	        i, state, i % 2);
}

static char *
dt_item(int i)
{
	return sk_asprintf("{\"id\":\"sb%03d\",\"state\":\"%s\",\"snapshot\":\"base\",\"cpu\":1,"
	                   "\"memory\":1,\"createdAt\":\"2026-01-01T00:00:00Z\","
	                   "\"labels\":{\"managed_by\":\"spacekeeper\",\"user_id\":\"u%d\"}}",
	        i, i % 3 == 0 ? "stopped" : "started", i % 2);
}

/* A Daytona GET /sandbox page for cursor "c<n>" (none: c1). Shift: 6 pages of 4
 * overlapping by 1; forever: one item per page, always a next cursor; cycle:
 * 2 items per page, c3 points back to c2. */
static char *
dt_page_body(void)
{
	sk_buf b = SK_BUF_INIT(0);
	int pg = S.cursor[0] == 'c' ? atoi(S.cursor + 1) : 1;
	int from = S.mode == FM_DT_CYCLE ? (pg - 1) * 2 : (pg - 1) * 3;
	int to = S.mode == FM_DT_FOREVER ? from + 1 : from + (S.mode == FM_DT_CYCLE ? 2 : 4);
	int next = S.mode == FM_DT_CYCLE ? (pg == 3 ? 2 : pg + 1)
	                                 : (S.mode == FM_DT_FOREVER || pg < 6 ? pg + 1 : 0);

	sk_buf_printf(&b, "{\"items\":[");
	for (int i = from; i < to; i++) {
		char *it = dt_item(i);
		sk_buf_printf(&b, "%s%s", i > from ? "," : "", it);
		free(it);
	}
	if (next)
		sk_buf_printf(&b, "],\"nextCursor\":\"c%d\"}", next);
	else
		sk_buf_printf(&b, "],\"nextCursor\":null}");
	return sk_buf_detach(&b);
}

/* Builds a page body; sets *next (static) to the next token or NULL. */
static char *
page_body(const char **next)
{
	static char nb[32];
	sk_buf b = SK_BUF_INIT(0);
	int n = S.token[0] == 'p' ? atoi(S.token + 1) : 0;
	int from, to;

	*next = NULL;
	if (S.mode == FM_DT_SHIFT || S.mode == FM_DT_FOREVER || S.mode == FM_DT_CYCLE)
		return dt_page_body();
	if (S.mode == FM_PAGES_SHIFT) {
		from = n * 3;
		to = from + 5;
		if (n < 4)
			snprintf(nb, sizeof(nb), "p%d", n + 1), *next = nb;
	} else if (S.mode == FM_PAGES_FOREVER) {
		from = n;
		to = n + 1;
		snprintf(nb, sizeof(nb), "p%d", n + 1), *next = nb;
	} else { /* cycle: p0 -> p1 -> p2 -> p1 */
		from = n * 2;
		to = from + 2;
		snprintf(nb, sizeof(nb), "p%d", n == 2 ? 1 : n + 1), *next = nb;
	}
	sk_buf_printf(&b, "[");
	for (int i = from; i < to; i++) {
		char *it = listed(i, i % 3 == 0 ? "paused" : "running");
		sk_buf_printf(&b, "%s%s", i > from ? "," : "", it);
		free(it);
	}
	sk_buf_printf(&b, "]");
	return sk_buf_detach(&b);
}

static void
record(struct MHD_Connection *c, const char *url, const char *method)
{
	S.nreq++;
	snprintf(S.method, sizeof(S.method), "%s", method);
	snprintf(S.url, sizeof(S.url), "%s", url);
	copy_value(c, MHD_GET_ARGUMENT_KIND, "metadata", S.metadata, sizeof(S.metadata));
	copy_value(c, MHD_GET_ARGUMENT_KIND, "state", S.state, sizeof(S.state));
	copy_value(c, MHD_GET_ARGUMENT_KIND, "nextToken", S.token, sizeof(S.token));
	copy_value(c, MHD_GET_ARGUMENT_KIND, "page", S.page, sizeof(S.page));
	copy_value(c, MHD_GET_ARGUMENT_KIND, "cursor", S.cursor, sizeof(S.cursor));
	copy_value(c, MHD_GET_ARGUMENT_KIND, "labels", S.labels, sizeof(S.labels));
	copy_value(c, MHD_GET_ARGUMENT_KIND, "limit", S.limit, sizeof(S.limit));
	copy_value(c, MHD_HEADER_KIND, "X-API-Key", S.api_key, sizeof(S.api_key));
	copy_value(c, MHD_HEADER_KIND, "Authorization", S.auth, sizeof(S.auth));
	copy_value(c, MHD_HEADER_KIND, "E2b-Sandbox-Id", S.sbid, sizeof(S.sbid));
	copy_value(c, MHD_HEADER_KIND, "E2b-Sandbox-Port", S.sbport, sizeof(S.sbport));
	copy_value(c, MHD_HEADER_KIND, "X-Access-Token", S.access_token, sizeof(S.access_token));
}

static struct MHD_Response *
make_response(int *status)
{
	struct MHD_Response *r;
	const char *next = NULL;

	*status = S.status;
	if (S.mode != FM_FIXED) {
		char *body = page_body(&next);
		*status = 200;
		r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
		if (next)
			MHD_add_response_header(r, "X-Next-Token", next);
	} else if (S.big && S.chunked) {
		r = MHD_create_response_from_callback(
		        MHD_SIZE_UNKNOWN, 65536, chunk_cb, NULL, NULL);
	} else if (S.big) {
		char *body = sk_malloc(S.big);
		memset(body, 'x', S.big);
		r = MHD_create_response_from_buffer(S.big, body, MHD_RESPMEM_MUST_FREE);
	} else {
		const char *b = S.body ? S.body : "";
		r = MHD_create_response_from_buffer(strlen(b), (void *)b, MHD_RESPMEM_MUST_COPY);
	}
	MHD_add_response_header(r, "Content-Type", "application/json");
	if (S.retry_after)
		MHD_add_response_header(r, "Retry-After", S.retry_after);
	return r;
}

static enum MHD_Result
handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
        const char *version, const char *upload, size_t *upload_size, void **state)
{
	static int marker;
	struct MHD_Response *r;
	enum MHD_Result ret;
	int status;

	if (*state == NULL) {
		*state = &marker;
		pthread_mutex_lock(&S.lock);
		S.req_body_len = 0;
		S.req_body[0] = '\0';
		pthread_mutex_unlock(&S.lock);
		return MHD_YES;
	}
	if (*upload_size) {
		pthread_mutex_lock(&S.lock);
		if (S.req_body_len + *upload_size < sizeof(S.req_body)) {
			memcpy(S.req_body + S.req_body_len, upload, *upload_size);
			S.req_body_len += *upload_size;
			S.req_body[S.req_body_len] = '\0';
		}
		pthread_mutex_unlock(&S.lock);
		*upload_size = 0;
		return MHD_YES;
	}
	pthread_mutex_lock(&S.lock);
	record(c, url, method);
	r = make_response(&status);
	pthread_mutex_unlock(&S.lock);
	ret = MHD_queue_response(c, (unsigned)status, r);
	MHD_destroy_response(r);
	return ret;
}

static void
fsrv_start(void)
{
	memset(&S, 0, sizeof(S));
	pthread_mutex_init(&S.lock, NULL);
	S.port = sk_test_free_port();
	S.d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION,
	        (uint16_t)S.port, NULL, NULL, handler, NULL, MHD_OPTION_END);
	ck_assert_ptr_nonnull(S.d);
	snprintf(S.base, sizeof(S.base), "http://127.0.0.1:%d", S.port);
	S.status = 200;
}

static void
fsrv_stop(void)
{
	if (S.d)
		MHD_stop_daemon(S.d);
	S.d = NULL;
}

static void
script(int status, const char *body, const char *retry_after)
{
	pthread_mutex_lock(&S.lock);
	S.mode = FM_FIXED;
	S.status = status;
	S.body = body;
	S.retry_after = retry_after;
	S.big = 0;
	S.chunked = false;
	pthread_mutex_unlock(&S.lock);
}

/* ---------------------------------------------------------------- */
/* clients                                                           */

static sk_provider *
client(sk_provider_type t, const char *url, int64_t timeout_ms)
{
	sk_provider_config c = { 0 };
	sk_provider *p = NULL;
	sk_error err;

	setenv(KEY_VAR, KEY, 1);
	c.name = "test";
	c.type = t;
	c.api_url = (char *)url;
	c.sandbox_url = (char *)url;
	c.domain = "e2b.app";
	c.api_key_env = KEY_VAR;
	c.max_in_flight = 64;
	c.qps = 200;
	c.burst = 400;
	c.request_timeout_ms = timeout_ms;
	c.sandbox_timeout_ms = 3600000;
	sk_error_clear(&err);
	ck_assert_msg(sk_provider_new(&c, &p, &err) == 0, "sk_provider_new: %s", err.message);
	ck_assert_str_eq(sk_provider_get_ops(p)->name,
	        t == SK_PROVIDER_E2B ? "e2b" : (t == SK_PROVIDER_CUBE ? "cube" : "daytona"));
	return p;
}

static const char *
get_path(sk_provider_type t)
{
	return t == SK_PROVIDER_DAYTONA ? "/sandbox/abc123" : "/sandboxes/abc123";
}

/* ---------------------------------------------------------------- */
/* classification                                                    */

static const struct status_case {
	int status;
	const char *retry_after;
	int code;
	int64_t retry_ms;
} status_cases[] = {
	{ 404, NULL, SK_ENOTFOUND, 0 },
	{ 409, NULL, SK_ECONFLICT, 0 },
	{ 429, "7", SK_ETRANSIENT, 7000 },
	{ 429, NULL, SK_ETRANSIENT, 0 },
	{ 408, NULL, SK_ETRANSIENT, 0 },
	{ 500, NULL, SK_ETRANSIENT, 0 },
	{ 502, NULL, SK_ETRANSIENT, 0 },
	{ 503, "2", SK_ETRANSIENT, 2000 },
	{ 503, "soon", SK_ETRANSIENT, 0 },
	{ 504, NULL, SK_ETRANSIENT, 0 },
	{ 401, NULL, SK_EUNAUTHORIZED, 0 },
	{ 403, NULL, SK_EUNAUTHORIZED, 0 },
	{ 400, NULL, SK_ETERMINAL, 0 },
	{ 422, NULL, SK_ETERMINAL, 0 },
};

START_TEST(get_classifies_status)
{
	const struct status_case *sc = &status_cases[_i];

	fsrv_start();
	for (size_t t = 0; t < 3; t++) {
		sk_provider *p = client(all_types[t], S.base, 5000);
		sk_sandbox sb;
		sk_error err;
		char msg[128], want[64];

		snprintf(msg, sizeof(msg), "{\"code\":%d,\"message\":\"scripted failure %d\"}",
		        sc->status, sc->status);
		script(sc->status, msg, sc->retry_after);
		sk_error_clear(&err);
		ck_assert_int_eq(sk_sandbox_get(p, "abc123", &sb, &err), sc->code);
		ck_assert_int_eq(err.code, sc->code);
		ck_assert_int_eq(err.http_status, sc->status);
		ck_assert_int_eq(err.retry_after_ms, sc->retry_ms);
		ck_assert_ptr_nonnull(strstr(err.message, "GET"));
		ck_assert_ptr_nonnull(strstr(err.message, get_path(all_types[t])));
		snprintf(want, sizeof(want), "scripted failure %d", sc->status);
		ck_assert_msg(strstr(err.message, want), "message: %s", err.message);
		ck_assert_ptr_null(strstr(err.message, KEY));
		ck_assert_ptr_null(sb.id);
		/* the key went on the wire, in the provider's header */
		if (all_types[t] == SK_PROVIDER_DAYTONA)
			ck_assert_str_eq(S.auth, "Bearer " KEY);
		else
			ck_assert_str_eq(S.api_key, KEY);
		sk_provider_free(p);
	}
	fsrv_stop();
}
END_TEST

START_TEST(retry_after_http_date)
{
	char date[64];
	time_t t = time(NULL) + 30;
	struct tm tm;
	sk_provider *p;
	sk_sandbox sb;
	sk_error err;

	gmtime_r(&t, &tm);
	strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
	fsrv_start();
	p = client(SK_PROVIDER_E2B, S.base, 5000);
	script(429, "{\"code\":429,\"message\":\"Rate limit exceeded\"}", date);
	sk_error_clear(&err);
	ck_assert_int_eq(sk_sandbox_get(p, "abc123", &sb, &err), SK_ETRANSIENT);
	ck_assert_int_eq(err.http_status, 429);
	ck_assert_msg(err.retry_after_ms > 25000 && err.retry_after_ms <= 31000, "retry %lld",
	        (long long)err.retry_after_ms);
	sk_provider_free(p);
	fsrv_stop();
}
END_TEST

START_TEST(key_is_redacted_from_provider_messages)
{
	sk_provider *p;
	sk_sandbox sb;
	sk_error err;

	fsrv_start();
	for (size_t t = 0; t < 3; t++) {
		p = client(all_types[t], S.base, 5000);
		script(401, "{\"code\":401,\"message\":\"Invalid API key " KEY "\"}", NULL);
		sk_error_clear(&err);
		ck_assert_int_eq(sk_sandbox_get(p, "abc123", &sb, &err), SK_EUNAUTHORIZED);
		ck_assert_ptr_null(strstr(err.message, KEY));
		ck_assert_ptr_null(strstr(err.message, "00112233445566778899"));
		ck_assert_ptr_nonnull(strstr(err.message, "Invalid API key"));
		sk_provider_free(p);
	}
	fsrv_stop();
}
END_TEST

START_TEST(success_codes_for_idempotent_calls)
{
	sk_provider *p;
	sk_error err;

	fsrv_start();
	for (size_t t = 0; t < 3; t++) {
		p = client(all_types[t], S.base, 5000);
		/* kill of a sandbox that is gone is a success */
		script(404, "{\"code\":404,\"message\":\"not found\"}", NULL);
		sk_error_clear(&err);
		ck_assert_int_eq(sk_sandbox_kill(p, "abc123", &err), 0);
		ck_assert_str_eq(S.method, "DELETE");
		/* kill answering 503 is transient, not success */
		script(503, "{\"code\":503,\"message\":\"locked\"}", "2");
		ck_assert_int_eq(sk_sandbox_kill(p, "abc123", &err), SK_ETRANSIENT);
		ck_assert_int_eq(err.retry_after_ms, 2000);
		sk_provider_free(p);
	}
	/* pause: 409 (already paused) is a success for the E2B protocols */
	for (size_t t = 0; t < 2; t++) {
		p = client(all_types[t], S.base, 5000);
		script(409, "{\"code\":409,\"message\":\"already paused\"}", NULL);
		sk_error_clear(&err);
		ck_assert_int_eq(sk_sandbox_pause(p, "abc123", &err), 0);
		ck_assert_str_eq(S.method, "POST");
		ck_assert_str_eq(S.url, "/sandboxes/abc123/pause");
		script(404, "{\"code\":404,\"message\":\"nope\"}", NULL);
		ck_assert_int_eq(sk_sandbox_pause(p, "abc123", &err), SK_ENOTFOUND);
		sk_provider_free(p);
	}
	fsrv_stop();
}
END_TEST

#define SANDBOX_JSON                                                                               \
	"{\"templateID\":\"base\",\"sandboxID\":\"abc123\",\"clientID\":\"x\","                    \
	"\"envdVersion\":\"0.6.13\",\"domain\":\"sim.local\",\"envdAccessToken\":\"tok\"}"

START_TEST(e2b_connect_status_means_resumed)
{
	sk_provider *p;
	sk_sandbox sb;
	sk_error err;
	bool resumed = true;

	fsrv_start();
	p = client(SK_PROVIDER_E2B, S.base, 5000);
	script(200, SANDBOX_JSON, NULL);
	sk_error_clear(&err);
	ck_assert_int_eq(sk_sandbox_connect(p, "abc123", 60000, &sb, &resumed, &err), 0);
	ck_assert(!resumed);
	ck_assert_str_eq(sb.id, "abc123");
	ck_assert_str_eq(sb.envd_access_token, "tok");
	ck_assert_int_eq(sb.state, SK_SANDBOX_RUNNING);
	ck_assert_str_eq(S.url, "/sandboxes/abc123/connect");
	sk_sandbox_dispose(&sb);
	script(201, SANDBOX_JSON, NULL);
	ck_assert_int_eq(sk_sandbox_connect(p, "abc123", 60000, &sb, &resumed, &err), 0);
	ck_assert(resumed);
	sk_sandbox_dispose(&sb);
	sk_provider_free(p);
	fsrv_stop();
}
END_TEST

/* ---------------------------------------------------------------- */
/* broken transports and bodies                                      */

START_TEST(connection_refused_is_unavailable)
{
	char url[64];

	snprintf(url, sizeof(url), "http://127.0.0.1:%d", sk_test_free_port());
	for (size_t t = 0; t < 3; t++) {
		sk_provider *p = client(all_types[t], url, 3000);
		sk_sandbox sb;
		sk_sandbox_list l;
		sk_error err;

		sk_error_clear(&err);
		ck_assert_int_eq(sk_sandbox_get(p, "abc123", &sb, &err), SK_EUNAVAILABLE);
		ck_assert_int_eq(err.http_status, 0);
		ck_assert_int_eq(err.retry_after_ms, 0);
		ck_assert_ptr_nonnull(strstr(err.message, "GET"));
		ck_assert_int_eq(sk_sandbox_list_all(p, NULL, &l, &err), SK_EUNAVAILABLE);
		ck_assert_int_eq(sk_sandbox_kill(p, "abc123", &err), SK_EUNAVAILABLE);
		sk_provider_free(p);
	}
}
END_TEST

/* Every request reaches the observer with its endpoint, status and time;
 * a transport failure with status 0. */
typedef struct seen_req {
	char provider[32], endpoint[96];
	int status, n;
	double seconds;
} seen_req;

static void
seen(void *payload, const char *provider, const char *endpoint, int status, double seconds)
{
	seen_req *r = payload;

	snprintf(r->provider, sizeof(r->provider), "%s", provider);
	snprintf(r->endpoint, sizeof(r->endpoint), "%s", endpoint);
	r->status = status;
	r->seconds = seconds;
	r->n++;
}

START_TEST(requests_reach_the_observer)
{
	seen_req r = { 0 };
	sk_sandbox sb;
	sk_error err;
	char url[64];
	sk_provider *p;

	fsrv_start();
	for (size_t t = 0; t < 3; t++) {
		p = client(all_types[t], S.base, 5000);
		sk_provider_set_observer(p, seen, &r);
		script(503, "{}", NULL);
		r.n = 0;
		ck_assert_int_eq(sk_sandbox_get(p, "abc123", &sb, &err), SK_ETRANSIENT);
		ck_assert_int_eq(r.n, 1);
		ck_assert_str_eq(r.provider, "test");
		ck_assert_str_eq(r.endpoint,
		        all_types[t] == SK_PROVIDER_DAYTONA ? "GET /sandbox/:id"
		                                            : "GET /sandboxes/:id");
		ck_assert_int_eq(r.status, 503);
		ck_assert(r.seconds >= 0 && r.seconds < 5);
		sk_provider_free(p);
	}
	fsrv_stop();
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", sk_test_free_port());
	p = client(SK_PROVIDER_E2B, url, 3000);
	sk_provider_set_observer(p, seen, &r);
	ck_assert_int_eq(sk_sandbox_kill(p, "abc123", &err), SK_EUNAVAILABLE);
	ck_assert_str_eq(r.endpoint, "DELETE /sandboxes/:id");
	ck_assert_int_eq(r.status, 0);
	sk_provider_free(p);
}
END_TEST

/* A listening socket nobody accepts on: the handshake completes, no answer comes. */
START_TEST(silent_server_times_out)
{
	struct sockaddr_in sa = { 0 };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	char url[64];

	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(fd, 16), 0);
	getsockname(fd, (struct sockaddr *)&sa, &len);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", ntohs(sa.sin_port));
	for (size_t t = 0; t < 3; t++) {
		sk_provider *p = client(all_types[t], url, 800);
		sk_sandbox sb;
		sk_error err;
		int64_t t0 = sk_monotonic_ms(), took;

		sk_error_clear(&err);
		ck_assert_int_eq(sk_sandbox_get(p, "abc123", &sb, &err), SK_ETIMEOUT);
		took = sk_monotonic_ms() - t0;
		ck_assert_msg(took >= 700 && took < 800 + 1500, "took %lld ms", (long long)took);
		ck_assert_int_eq(err.http_status, 0);
		if (all_types[t] != SK_PROVIDER_DAYTONA) {
			sk_sandbox probe_sb = { .id = "abc123" };
			sk_health h = SK_HEALTH_OK;
			t0 = sk_monotonic_ms();
			ck_assert_int_eq(sk_sandbox_probe_health(p, &probe_sb, &h, NULL, &err), 0);
			ck_assert_int_eq(h, SK_HEALTH_UNREACHABLE);
			ck_assert_int_lt(sk_monotonic_ms() - t0, 800 + 1500);
		}
		sk_provider_free(p);
	}
	close(fd);
}
END_TEST

/* A one-shot raw server: answers each connection with canned bytes, then closes. */
typedef struct raw_srv {
	int fd;
	const char *reply;
	pthread_t th;
} raw_srv;

static void *
raw_loop(void *arg)
{
	raw_srv *r = arg;
	char buf[4096];

	for (;;) {
		int c = accept(r->fd, NULL, NULL);
		if (c < 0)
			return NULL;
		(void)!read(c, buf, sizeof(buf));
		(void)!write(c, r->reply, strlen(r->reply));
		close(c);
	}
}

static void
raw_start(raw_srv *r, const char *reply, char *url, size_t ulen)
{
	struct sockaddr_in sa = { 0 };
	socklen_t len = sizeof(sa);

	r->fd = socket(AF_INET, SOCK_STREAM, 0);
	r->reply = reply;
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(r->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(r->fd, 16), 0);
	getsockname(r->fd, (struct sockaddr *)&sa, &len);
	snprintf(url, ulen, "http://127.0.0.1:%d", ntohs(sa.sin_port));
	pthread_create(&r->th, NULL, raw_loop, r);
}

START_TEST(truncated_transfer_is_an_error)
{
	raw_srv r;
	char url[64];

	raw_start(&r,
	        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n"
	        "Connection: close\r\n\r\n{\"sandboxID\":\"abc",
	        url, sizeof(url));
	for (size_t t = 0; t < 3; t++) {
		sk_provider *p = client(all_types[t], url, 3000);
		sk_sandbox sb;
		sk_error err;
		int rc;

		sk_error_clear(&err);
		rc = sk_sandbox_get(p, "abc123", &sb, &err);
		ck_assert_msg(rc == SK_EUNAVAILABLE, "rc %d: %s", rc, err.message);
		ck_assert_ptr_null(sb.id);
		sk_provider_free(p);
	}
	shutdown(r.fd, SHUT_RDWR);
	close(r.fd);
	pthread_join(r.th, NULL);
}
END_TEST

START_TEST(bad_bodies_are_invalid)
{
	static const char *const bodies[] = { "{\"sandboxID\": \"ab", "<html>oops</html>", "[]",
		"{}", "", "\"text\"" };

	fsrv_start();
	for (size_t t = 0; t < 3; t++) {
		sk_provider *p = client(all_types[t], S.base, 5000);
		for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
			sk_sandbox sb;
			sk_sandbox_list l;
			sk_error err;
			script(200, bodies[i], NULL);
			sk_error_clear(&err);
			ck_assert_msg(sk_sandbox_get(p, "abc123", &sb, &err) == SK_EINVALID,
			        "%s body %s: %s", sk_provider_get_ops(p)->name, bodies[i],
			        err.message);
			ck_assert_ptr_null(sb.id);
			if (strcmp(bodies[i], "[]") == 0 && all_types[t] != SK_PROVIDER_DAYTONA)
				continue; /* an empty list is a fine list */
			ck_assert_int_eq(sk_sandbox_list_all(p, NULL, &l, &err), SK_EINVALID);
			ck_assert_ptr_null(l.items);
		}
		/* an error status with a non-JSON body is still classified by status */
		{
			sk_sandbox sb;
			sk_error err;
			script(502, "<html>Bad Gateway</html>", NULL);
			ck_assert_int_eq(sk_sandbox_get(p, "abc123", &sb, &err), SK_ETRANSIENT);
			ck_assert_int_eq(err.http_status, 502);
		}
		sk_provider_free(p);
	}
	fsrv_stop();
}
END_TEST

START_TEST(oversized_body_is_refused)
{
	fsrv_start();
	for (int chunked = 0; chunked < 2; chunked++) {
		for (size_t t = 0; t < 3; t++) {
			sk_provider *p = client(all_types[t], S.base, 10000);
			sk_sandbox sb;
			sk_sandbox_list l;
			sk_error err;
			int rc;

			script(200, NULL, NULL);
			S.big = 9u * 1024 * 1024;
			S.chunked = chunked;
			sk_error_clear(&err);
			rc = sk_sandbox_get(p, "abc123", &sb, &err);
			ck_assert_msg(
			        rc == SK_ENOMEM, "chunked=%d rc=%d %s", chunked, rc, err.message);
			ck_assert_ptr_nonnull(strstr(err.message, "larger than"));
			rc = sk_sandbox_list_all(p, NULL, &l, &err);
			ck_assert_int_eq(rc, SK_ENOMEM);
			/* the client still works afterwards */
			script(404, "{\"code\":404,\"message\":\"x\"}", NULL);
			ck_assert_int_eq(sk_sandbox_get(p, "abc123", &sb, &err), SK_ENOTFOUND);
			sk_provider_free(p);
		}
	}
	fsrv_stop();
}
END_TEST

/* ---------------------------------------------------------------- */
/* lists                                                             */

static bool
unique_ids(const sk_sandbox_list *l)
{
	for (size_t i = 0; i < l->len; i++)
		for (size_t j = i + 1; j < l->len; j++)
			if (strcmp(l->items[i].id, l->items[j].id) == 0)
				return false;
	return true;
}

START_TEST(list_pages_that_shift)
{
	sk_kvlist match = { 0 };

	fsrv_start();
	sk_kvlist_set(&match, "user_id", "u1");
	for (size_t t = 0; t < 3; t++) {
		sk_provider *p = client(all_types[t], S.base, 5000);
		sk_sandbox_list l;
		sk_error err;

		pthread_mutex_lock(&S.lock);
		S.mode = all_types[t] == SK_PROVIDER_DAYTONA ? FM_DT_SHIFT : FM_PAGES_SHIFT;
		S.nreq = 0;
		pthread_mutex_unlock(&S.lock);
		sk_error_clear(&err);
		ck_assert_msg(sk_sandbox_list_all(p, NULL, &l, &err) == 0, "%s", err.message);
		ck_assert(unique_ids(&l));
		/* e2b: ids 0..16 over 5 pages; daytona: 6 pages of 4 overlapping by 1 -> 0..18 */
		ck_assert_uint_eq(l.len, all_types[t] == SK_PROVIDER_DAYTONA ? 19 : 17);
		sk_sandbox_list_dispose(&l);
		/* the filter is applied here too (the server ignores it) */
		ck_assert_int_eq(sk_sandbox_list_all(p, &match, &l, &err), 0);
		ck_assert(unique_ids(&l));
		for (size_t i = 0; i < l.len; i++)
			ck_assert_str_eq(sk_kvlist_get(&l.items[i].metadata, "user_id"), "u1");
		ck_assert_uint_eq(l.len, all_types[t] == SK_PROVIDER_DAYTONA ? 9 : 8);
		sk_sandbox_list_dispose(&l);
		sk_provider_free(p);
	}
	sk_kvlist_dispose(&match);
	fsrv_stop();
}
END_TEST

START_TEST(list_pages_forever_are_capped)
{
	fsrv_start();
	for (size_t t = 0; t < 3; t++) {
		sk_provider *p = client(all_types[t], S.base, 5000);
		sk_sandbox_list l;
		sk_error err;
		int n;

		pthread_mutex_lock(&S.lock);
		S.mode = all_types[t] == SK_PROVIDER_DAYTONA ? FM_DT_FOREVER : FM_PAGES_FOREVER;
		S.nreq = 0;
		pthread_mutex_unlock(&S.lock);
		sk_error_clear(&err);
		ck_assert_int_eq(sk_sandbox_list_all(p, NULL, &l, &err), SK_ETRANSIENT);
		ck_assert_ptr_nonnull(strstr(err.message, "pages"));
		ck_assert_ptr_null(l.items);
		pthread_mutex_lock(&S.lock);
		n = S.nreq;
		pthread_mutex_unlock(&S.lock);
		ck_assert_int_le(n, 2000);
		sk_provider_free(p);
	}
	fsrv_stop();
}
END_TEST

START_TEST(list_token_cycle_stops)
{
	sk_provider *p;
	sk_sandbox_list l;
	sk_error err;

	fsrv_start();
	for (size_t t = 0; t < 3; t++) {
		p = client(all_types[t], S.base, 5000);
		pthread_mutex_lock(&S.lock);
		S.mode = all_types[t] == SK_PROVIDER_DAYTONA ? FM_DT_CYCLE : FM_PAGES_CYCLE;
		S.nreq = 0;
		pthread_mutex_unlock(&S.lock);
		sk_error_clear(&err);
		ck_assert_int_eq(sk_sandbox_list_all(p, NULL, &l, &err), 0);
		ck_assert(unique_ids(&l));
		ck_assert_uint_eq(l.len, 6); /* p0, p1, p2 (daytona: c1, c2, c3) */
		ck_assert_int_le(S.nreq, all_types[t] == SK_PROVIDER_CUBE ? 8 : 4);
		sk_sandbox_list_dispose(&l);
		sk_provider_free(p);
	}
	fsrv_stop();
}
END_TEST

START_TEST(list_query_encoding)
{
	sk_kvlist match = { 0 };
	sk_provider *p;
	sk_sandbox_list l;
	sk_error err;

	fsrv_start();
	sk_kvlist_set(&match, "managed_by", "spacekeeper");
	sk_kvlist_set(&match, "app", "x y&z=1");
	p = client(SK_PROVIDER_E2B, S.base, 5000);
	script(200, "[]", NULL);
	sk_error_clear(&err);
	ck_assert_int_eq(sk_sandbox_list_all(p, &match, &l, &err), 0);
	ck_assert_uint_eq(l.len, 0);
	ck_assert_str_eq(S.url, "/v2/sandboxes");
	/* decoded once by the server: pairs still escaped individually (§1.5) */
	ck_assert_str_eq(S.metadata, "app=x%20y%26z%3D1&managed_by=spacekeeper");
	ck_assert_str_eq(S.state, "running,paused");
	sk_provider_free(p);
	/* cube: one state per listing, no server-side metadata filter */
	p = client(SK_PROVIDER_CUBE, S.base, 5000);
	S.nreq = 0;
	ck_assert_int_eq(sk_sandbox_list_all(p, &match, &l, &err), 0);
	ck_assert_int_eq(S.nreq, 2);
	ck_assert_str_eq(S.state, "paused");
	ck_assert_str_eq(S.metadata, "");
	sk_provider_free(p);
	/* daytona: labels as a JSON object */
	p = client(SK_PROVIDER_DAYTONA, S.base, 5000);
	script(200, "{\"items\":[],\"nextCursor\":null}", NULL);
	ck_assert_int_eq(sk_sandbox_list_all(p, &match, &l, &err), 0);
	ck_assert_str_eq(S.url, "/sandbox");
	ck_assert_str_eq(S.limit, "200");
	ck_assert_str_eq(S.cursor, "");
	{
		json_t *j = json_loads(S.labels, 0, NULL);
		ck_assert_msg(json_is_object(j), "labels=%s", S.labels);
		ck_assert_int_eq(json_object_size(j), 2);
		ck_assert_str_eq(json_string_value(json_object_get(j, "app")), "x y&z=1");
		ck_assert_str_eq(
		        json_string_value(json_object_get(j, "managed_by")), "spacekeeper");
		json_decref(j);
	}
	sk_provider_free(p);
	sk_kvlist_dispose(&match);
	fsrv_stop();
}
END_TEST

/* ---------------------------------------------------------------- */
/* data-plane probe                                                  */

START_TEST(probe_classifies)
{
	static const struct {
		int status;
		sk_health h;
	} cases[] = { { 204, SK_HEALTH_OK }, { 200, SK_HEALTH_OK }, { 502, SK_HEALTH_UNREACHABLE },
		{ 503, SK_HEALTH_UNREACHABLE }, { 504, SK_HEALTH_UNREACHABLE },
		{ 404, SK_HEALTH_ERROR }, { 500, SK_HEALTH_ERROR } };
	sk_sandbox sb = { .id = "abc123", .envd_access_token = "envd-tok" };
	char url[64];

	fsrv_start();
	for (size_t t = 0; t < 2; t++) {
		sk_provider *p = client(all_types[t], S.base, 3000);
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			sk_health h = SK_HEALTH_ERROR;
			int st = 0;
			sk_error err;
			script(cases[i].status, "", NULL);
			sk_error_clear(&err);
			ck_assert_int_eq(sk_sandbox_probe_health(p, &sb, &h, &st, &err), 0);
			ck_assert_int_eq(h, cases[i].h);
			ck_assert_int_eq(st, cases[i].status);
			ck_assert_str_eq(S.url, "/health");
			ck_assert_str_eq(S.sbid, "abc123");
			ck_assert_str_eq(S.sbport, "49983");
			ck_assert_str_eq(S.access_token, "envd-tok");
			ck_assert_str_eq(S.api_key, ""); /* the API key never goes to envd */
		}
		sk_provider_free(p);
	}
	fsrv_stop();
	/* nobody listening: unreachable, not an error */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", sk_test_free_port());
	{
		sk_provider *p = client(SK_PROVIDER_E2B, url, 2000);
		sk_health h = SK_HEALTH_OK;
		sk_error err;
		ck_assert_int_eq(sk_sandbox_probe_health(p, &sb, &h, NULL, &err), 0);
		ck_assert_int_eq(h, SK_HEALTH_UNREACHABLE);
		sk_provider_free(p);
	}
	/* daytona has no envd */
	{
		sk_provider *p = client(SK_PROVIDER_DAYTONA, url, 2000);
		sk_health h;
		sk_error err;
		ck_assert_int_eq(sk_sandbox_probe_health(p, &sb, &h, NULL, &err), SK_ENOTSUPPORTED);
		sk_provider_free(p);
	}
}
END_TEST

/* envd POST /init: the request, and no value or token in any error message */
START_TEST(init_env_request_and_redaction)
{
	sk_sandbox sb = { .id = "abc123", .envd_access_token = "envd-tok" };
	sk_kvlist env = { 0 };
	json_t *body;

	sk_kvlist_set(&env, "API_SECRET", "s3cr3t-value");
	sk_kvlist_set(&env, "MODE", "dev");
	fsrv_start();
	for (size_t t = 0; t < 2; t++) {
		sk_provider *p = client(all_types[t], S.base, 3000);
		sk_error err;
		script(204, "", NULL);
		sk_error_clear(&err);
		ck_assert_msg(sk_sandbox_init_env(p, &sb, &env, &err) == 0, "%s", err.message);
		ck_assert_str_eq(S.method, "POST");
		ck_assert_str_eq(S.url, "/init");
		ck_assert_str_eq(S.sbid, "abc123");
		ck_assert_str_eq(S.sbport, "49983");
		ck_assert_str_eq(S.access_token, "envd-tok");
		ck_assert_str_eq(S.api_key, ""); /* the API key never goes to envd */
		body = json_loads(S.req_body, 0, NULL);
		ck_assert_msg(body != NULL, "body: %s", S.req_body);
		ck_assert_str_eq(json_string_value(json_object_get(
		                         json_object_get(body, "envVars"), "API_SECRET")),
		        "s3cr3t-value");
		ck_assert_str_eq(
		        json_string_value(json_object_get(body, "accessToken")), "envd-tok");
		json_decref(body);
		/* an envd that echoes the body: the message names the call and status only */
		script(502, "{\"code\":502,\"message\":\"bad env API_SECRET=s3cr3t-value\"}", NULL);
		ck_assert_int_eq(sk_sandbox_init_env(p, &sb, &env, &err), SK_ETRANSIENT);
		ck_assert_int_eq(err.http_status, 502);
		ck_assert_str_eq(err.message, "POST /init: HTTP 502");
		script(401, "{\"message\":\"token envd-tok rejected\"}", NULL);
		ck_assert_int_eq(sk_sandbox_init_env(p, &sb, &env, &err), SK_EUNAUTHORIZED);
		ck_assert_ptr_null(strstr(err.message, "envd-tok"));
		sk_provider_free(p);
	}
	fsrv_stop();
	{
		sk_provider *p = client(SK_PROVIDER_DAYTONA, S.base, 2000);
		sk_error err;
		ck_assert_int_eq(sk_sandbox_init_env(p, &sb, &env, &err), SK_ENOTSUPPORTED);
		sk_provider_free(p);
	}
	sk_kvlist_dispose(&env);
}
END_TEST

START_TEST(provider_new_without_key)
{
	sk_provider_config c = { .name = "x",
		.type = SK_PROVIDER_E2B,
		.api_url = "http://h:1",
		.api_key_env = "SK_TEST_UNSET_KEY_VAR",
		.request_timeout_ms = 1000 };
	sk_provider *p = (sk_provider *)1;
	sk_error err;

	unsetenv("SK_TEST_UNSET_KEY_VAR");
	sk_error_clear(&err);
	ck_assert_int_ne(sk_provider_new(&c, &p, &err), 0);
	ck_assert_ptr_null(p);
	ck_assert_ptr_nonnull(strstr(err.message, "SK_TEST_UNSET_KEY_VAR"));
	ck_assert_str_eq(sk_sandbox_state_name(SK_SANDBOX_PAUSED), "paused");
	ck_assert_str_eq(sk_sandbox_state_name(SK_SANDBOX_RUNNING), "running");
}
END_TEST

/* ---------------------------------------------------------------- */
/* against sandboxsim, in each flavour                               */

static const char *const flavors[] = { "e2b", "cube", "daytona" };

static pid_t sim_pid;
static char sim_url[128];

static void
sim_up(int flavor)
{
	const char *args[] = { "--flavor", flavors[flavor], "--api-key", KEY, "--seed", "7", NULL };

	sim_pid = sk_test_sim_start(args, sim_url, sizeof(sim_url));
	ck_assert_int_gt(sim_pid, 0);
}

static void
sim_down(void)
{
	if (sim_pid > 0)
		sk_test_stop(sim_pid, false);
	sim_pid = 0;
}

/* POST a JSON document to the simulator's admin API; returns the status. */
static long
sim_post(const char *path, const char *json)
{
	return sk_test_post_json(sim_url, path, json);
}

static size_t
collect(char *data, size_t size, size_t n, void *userp)
{
	return sk_buf_append(userp, data, size * n) == 0 ? size * n : 0;
}

/* A request to the simulator with extra headers (NULL-terminated); the JSON answer or NULL. */
static json_t *
sim_call(const char *method, const char *path, const char *body, const char *const *hdrs,
        long *status)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	sk_buf b = SK_BUF_INIT(1 << 20);
	char url[256];
	json_t *j;

	for (; hdrs && *hdrs; hdrs++)
		h = curl_slist_append(h, *hdrs);
	snprintf(url, sizeof(url), "%s%s", sim_url, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (body)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
	ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	j = b.data ? json_loadb(b.data, b.len, 0, NULL) : NULL;
	sk_buf_dispose(&b);
	return j;
}

/* envd GET /envs of a sandbox, as the SDK routes it (by headers). */
static json_t *
sim_envs(const char *id, const char *token)
{
	char hid[128], htok[128];
	const char *hdrs[] = { hid, "E2b-Sandbox-Port: 49983", token ? htok : NULL, NULL };
	long status = 0;
	json_t *j;

	snprintf(hid, sizeof(hid), "E2b-Sandbox-Id: %s", id);
	snprintf(htok, sizeof(htok), "X-Access-Token: %s", token ? token : "");
	j = sim_call("GET", "/envs", NULL, hdrs, &status);
	ck_assert_int_eq(status, 200);
	ck_assert(json_is_object(j));
	return j;
}

static json_int_t
sim_init_calls(void)
{
	long status = 0;
	json_t *j = sim_call("GET", "/_sim/stats", NULL, NULL, &status);
	json_int_t n = json_integer_value(
	        json_object_get(json_object_get(json_object_get(j, "requests"), "init"), "204"));

	json_decref(j);
	return n;
}

static void
create_user(sk_provider *p, const char *user, sk_sandbox *out)
{
	sk_kvlist meta = { 0 }, env = { 0 };
	sk_create_request req = { .template_id = "base",
		.timeout_ms = 600000,
		.auto_pause = true,
		.auto_resume = true,
		.metadata = &meta,
		.env = &env };
	sk_error err;

	sk_kvlist_set(&meta, "managed_by", "spacekeeper");
	sk_kvlist_set(&meta, "user_id", user);
	sk_kvlist_set(&meta, "userspace", user);
	sk_kvlist_set(&env, "GREETING", "hello");
	sk_error_clear(&err);
	ck_assert_msg(sk_sandbox_create(p, &req, out, &err) == 0, "create: %s", err.message);
	ck_assert_ptr_nonnull(out->id);
	ck_assert_int_eq(out->state, SK_SANDBOX_RUNNING);
	ck_assert_str_eq(sk_kvlist_get(&out->metadata, "user_id"), user);
	sk_kvlist_dispose(&meta);
	sk_kvlist_dispose(&env);
}

static size_t
count_user(sk_provider *p, const char *user, sk_sandbox_list *keep)
{
	sk_kvlist match = { 0 };
	sk_sandbox_list l;
	sk_error err;
	size_t n;

	sk_kvlist_set(&match, "managed_by", "spacekeeper");
	if (user)
		sk_kvlist_set(&match, "user_id", user);
	sk_error_clear(&err);
	ck_assert_msg(sk_sandbox_list_all(p, &match, &l, &err) == 0, "list: %s", err.message);
	ck_assert(unique_ids(&l));
	for (size_t i = 0; user && i < l.len; i++)
		ck_assert_str_eq(sk_kvlist_get(&l.items[i].metadata, "user_id"), user);
	n = l.len;
	if (keep)
		*keep = l;
	else
		sk_sandbox_list_dispose(&l);
	sk_kvlist_dispose(&match);
	return n;
}

START_TEST(sim_lifecycle)
{
	sk_provider_type type = all_types[_i];
	sk_provider *p;
	sk_sandbox a, sb;
	sk_sandbox_list l;
	sk_error err;
	bool resumed;
	/* cube lists only the first 100 sandboxes (reference §4.3): stay below it there */
	int nbob = type == SK_PROVIDER_CUBE ? 60 : 230;

	sim_up(_i);
	p = client(type, sim_url, 5000);
	create_user(p, "alice", &a);
	for (int i = 0; i < nbob; i++) {
		create_user(p, "bob", &sb);
		sk_sandbox_dispose(&sb);
	}
	/* get */
	sk_error_clear(&err);
	ck_assert_msg(sk_sandbox_get(p, a.id, &sb, &err) == 0, "get: %s", err.message);
	ck_assert_str_eq(sb.id, a.id);
	ck_assert_int_eq(sb.state, SK_SANDBOX_RUNNING);
	ck_assert_str_eq(sk_kvlist_get(&sb.metadata, "userspace"), "alice");
	ck_assert_str_eq(sb.template_id, "base");
	ck_assert_int_gt(sb.started_ms, 0);
	sk_sandbox_dispose(&sb);
	/* pause, twice */
	ck_assert_msg(sk_sandbox_pause(p, a.id, &err) == 0, "pause: %s", err.message);
	ck_assert_msg(sk_sandbox_pause(p, a.id, &err) == 0, "pause again: %s", err.message);
	ck_assert_int_eq(sk_sandbox_get(p, a.id, &sb, &err), 0);
	ck_assert_int_eq(sb.state, SK_SANDBOX_PAUSED);
	sk_sandbox_dispose(&sb);
	/* list: every page, the filter, the paused one included */
	ck_assert_uint_eq(count_user(p, "alice", &l), 1);
	ck_assert_str_eq(l.items[0].id, a.id);
	ck_assert_int_eq(l.items[0].state, SK_SANDBOX_PAUSED);
	sk_sandbox_list_dispose(&l);
	ck_assert_uint_eq(count_user(p, "bob", NULL), (size_t)nbob);
	ck_assert_uint_eq(count_user(p, NULL, NULL), (size_t)nbob + 1);
	ck_assert_int_eq(sk_sandbox_list_all(p, NULL, &l, &err), 0);
	ck_assert_uint_eq(l.len, (size_t)nbob + 1);
	sk_sandbox_list_dispose(&l);
	/* connect resumes, then only extends */
	resumed = false;
	ck_assert_msg(sk_sandbox_connect(p, a.id, 300000, &sb, &resumed, &err) == 0, "connect: %s",
	        err.message);
	ck_assert(resumed);
	ck_assert_str_eq(sb.id, a.id);
	sk_sandbox_dispose(&sb);
	ck_assert_int_eq(sk_sandbox_connect(p, a.id, 300000, &sb, &resumed, &err), 0);
	ck_assert(!resumed);
	sk_sandbox_dispose(&sb);
	ck_assert_int_eq(sk_sandbox_get(p, a.id, &sb, &err), 0);
	ck_assert_int_eq(sb.state, SK_SANDBOX_RUNNING);
	sk_sandbox_dispose(&sb);
	/* set_timeout */
	ck_assert_msg(
	        sk_sandbox_set_timeout(p, a.id, 120000, &err) == 0, "timeout: %s", err.message);
	if (type == SK_PROVIDER_E2B) {
		int64_t now = sk_now_ms();
		ck_assert_int_eq(sk_sandbox_get(p, a.id, &sb, &err), 0);
		ck_assert_msg(sb.end_ms > now + 100000 && sb.end_ms < now + 125000, "end %lld",
		        (long long)(sb.end_ms - now));
		sk_sandbox_dispose(&sb);
	}
	/* kill, twice; then it is gone */
	ck_assert_msg(sk_sandbox_kill(p, a.id, &err) == 0, "kill: %s", err.message);
	ck_assert_int_eq(sk_sandbox_kill(p, a.id, &err), 0);
	sk_error_clear(&err);
	ck_assert_int_eq(sk_sandbox_get(p, a.id, &sb, &err), SK_ENOTFOUND);
	ck_assert_int_eq(err.http_status, 404);
	ck_assert_uint_eq(count_user(p, "alice", NULL), 0);
	/* operations on a missing sandbox */
	ck_assert_int_eq(sk_sandbox_connect(p, a.id, 300000, &sb, &resumed, &err), SK_ENOTFOUND);
	ck_assert_int_eq(sk_sandbox_set_timeout(p, a.id, 60000, &err), SK_ENOTFOUND);
	sk_sandbox_dispose(&a);
	sk_provider_free(p);
	sim_down();
}
END_TEST

/* Volumes by name (spec.storage.volume): E2B makes one once and finds it
 * after; a delete of none is done; CubeSandbox and Daytona have none. */
START_TEST(sim_volumes)
{
	sk_provider_type type = all_types[_i];
	sk_provider *p;
	char *id = NULL, *again = NULL;
	sk_error err;

	sim_up(_i);
	p = client(type, sim_url, 5000);
	sk_error_clear(&err);
	if (type != SK_PROVIDER_E2B) {
		ck_assert(!sk_sandbox_has_volumes(p));
		ck_assert_int_eq(
		        sk_sandbox_ensure_volume(p, "sk-alice", &id, &err), SK_ENOTSUPPORTED);
		ck_assert_ptr_null(id);
		ck_assert_int_eq(sk_sandbox_delete_volume(p, "sk-alice", &err), SK_ENOTSUPPORTED);
	} else {
		ck_assert(sk_sandbox_has_volumes(p));
		ck_assert_msg(sk_sandbox_ensure_volume(p, "sk-alice", &id, &err) == 0, "ensure: %s",
		        err.message);
		ck_assert_int_eq(sk_sandbox_ensure_volume(p, "sk-alice", &again, &err), 0);
		ck_assert_str_eq(again, id); /* found, not made twice */
		free(again);
		ck_assert_msg(sk_sandbox_delete_volume(p, "sk-alice", &err) == 0, "delete: %s",
		        err.message);
		ck_assert_int_eq(sk_sandbox_delete_volume(p, "sk-alice", &err), 0);
		ck_assert_int_eq(sk_sandbox_ensure_volume(p, "sk-alice", &again, &err), 0);
		ck_assert_str_ne(again, id); /* a new one */
		free(again);
		/* a name the provider refuses: its 400, terminal */
		ck_assert_int_eq(
		        sk_sandbox_ensure_volume(p, "not a name", &again, &err), SK_ETERMINAL);
		ck_assert_int_eq(err.http_status, 400);
	}
	free(id);
	sk_provider_free(p);
	sim_down();
}
END_TEST

/* Fork (spec.source.fork): E2B answers with a new running sandbox, untagged
 * (its fork takes no metadata), the source still running under its ID; a
 * paused source is a conflict; CubeSandbox and Daytona have no fork. */
START_TEST(sim_fork)
{
	sk_provider_type type = all_types[_i];
	sk_provider *p;
	sk_sandbox a, f, sb;
	sk_error err;

	sim_up(_i);
	p = client(type, sim_url, 5000);
	create_user(p, "alice", &a);
	sk_error_clear(&err);
	if (type != SK_PROVIDER_E2B) {
		ck_assert(!sk_sandbox_can_fork(p));
		ck_assert_int_eq(sk_sandbox_fork(p, a.id, 60000, &f, &err), SK_ENOTSUPPORTED);
		ck_assert_ptr_null(f.id);
	} else {
		ck_assert(sk_sandbox_can_fork(p));
		ck_assert_msg(
		        sk_sandbox_fork(p, a.id, 60000, &f, &err) == 0, "fork: %s", err.message);
		ck_assert_str_ne(f.id, a.id);
		ck_assert_int_eq(sk_sandbox_get(p, f.id, &sb, &err), 0);
		ck_assert_int_eq(sb.state, SK_SANDBOX_RUNNING);
		ck_assert_ptr_null(sk_kvlist_get(&sb.metadata, "user_id"));
		sk_sandbox_dispose(&sb);
		ck_assert_int_eq(sk_sandbox_get(p, a.id, &sb, &err), 0);
		ck_assert_int_eq(sb.state, SK_SANDBOX_RUNNING);
		ck_assert_str_eq(sk_kvlist_get(&sb.metadata, "userspace"), "alice");
		sk_sandbox_dispose(&sb);
		sk_sandbox_dispose(&f);
		ck_assert_int_eq(
		        sk_sandbox_fork(p, "nosuchsandbox", 60000, &f, &err), SK_ENOTFOUND);
		ck_assert_int_eq(sk_sandbox_pause(p, a.id, &err), 0);
		ck_assert_int_eq(sk_sandbox_fork(p, a.id, 60000, &f, &err), SK_ECONFLICT);
	}
	sk_sandbox_dispose(&f);
	sk_sandbox_dispose(&a);
	sk_provider_free(p);
	sim_down();
}
END_TEST

/* Persistent snapshots (E2B): taken of a sandbox, listed over every page
 * (more than one of 100), and a sandbox started from one has its files;
 * CubeSandbox and Daytona answer SK_ENOTSUPPORTED naming the type. */
static int64_t
text_source(void *payload, void *buf, size_t len)
{
	const char **rest = payload;
	size_t n = strlen(*rest) < len ? strlen(*rest) : len;

	memcpy(buf, *rest, n);
	*rest += n;
	return (int64_t)n;
}

static int
text_sink(void *payload, const void *buf, size_t len)
{
	sk_buf_append(payload, buf, len);
	return 0;
}

START_TEST(sim_snapshots)
{
	sk_provider_type type = all_types[_i];
	sk_provider *p;
	sk_sandbox sb, from, sb2;
	sk_snapshot snap;
	sk_snapshot_list l;
	sk_error err;
	const char *text = "snapshot me", *rest = text;
	sk_file_entry e = { .path = "/home/user/snap.txt", .type = SK_FILE_REGULAR, .mode = 0644 };
	sk_create_request req = { .template_id = "base", .timeout_ms = 600000 };
	sk_buf got = SK_BUF_INIT(0);

	sim_up(_i);
	p = client(type, sim_url, 5000);
	sk_error_clear(&err);
	create_user(p, "snap", &sb);
	if (type != SK_PROVIDER_E2B) {
		ck_assert(!sk_sandbox_has_snapshots(p));
		ck_assert_int_eq(
		        sk_sandbox_create_snapshot(p, sb.id, NULL, &snap, &err), SK_ENOTSUPPORTED);
		ck_assert_ptr_nonnull(strstr(err.message, "has no persistent snapshots"));
		ck_assert_int_eq(sk_sandbox_list_snapshots(p, sb.id, &l, &err), SK_ENOTSUPPORTED);
		ck_assert_int_eq(sk_sandbox_create_from_snapshot(p, &req, "x:default", &from, &err),
		        SK_ENOTSUPPORTED);
		ck_assert_int_eq(
		        sk_sandbox_delete_snapshot(p, "x:default", &err), SK_ENOTSUPPORTED);
		goto done;
	}
	ck_assert(sk_sandbox_has_snapshots(p));
	e.size = strlen(text);
	ck_assert_msg(sk_sandbox_write_file(p, &sb, &e, text_source, &rest, &err) == 0, "write: %s",
	        err.message);
	ck_assert_msg(sk_sandbox_create_snapshot(p, sb.id, "first", &snap, &err) == 0,
	        "snapshot: %s", err.message);
	ck_assert_str_eq(snap.id, "sim-team/first:default");
	ck_assert_int_eq(snap.n_names, 1);
	ck_assert_str_eq(snap.names[0], "sim-team/first:default");
	ck_assert_str_eq(snap.sandbox_id, sb.id);
	/* 100 more without a name: the list takes two pages */
	for (int i = 0; i < 100; i++) {
		sk_snapshot more;
		ck_assert_int_eq(sk_sandbox_create_snapshot(p, sb.id, NULL, &more, &err), 0);
		ck_assert_int_eq(more.n_names, 0);
		sk_snapshot_dispose(&more);
	}
	ck_assert_msg(sk_sandbox_list_snapshots(p, sb.id, &l, &err) == 0, "list: %s", err.message);
	ck_assert_uint_eq(l.len, 101);
	ck_assert_str_eq(l.items[0].id, snap.id); /* oldest first */
	for (size_t i = 1; i < l.len; i++)
		ck_assert_str_ne(l.items[i].id, l.items[i - 1].id);
	sk_snapshot_list_dispose(&l);
	/* another sandbox's snapshots are not this one's */
	ck_assert_int_eq(sk_sandbox_list_snapshots(p, "nosuchsandbox", &l, &err), 0);
	ck_assert_uint_eq(l.len, 0);
	sk_snapshot_list_dispose(&l);
	/* a sandbox started from the snapshot has the file, also after the first is gone */
	ck_assert_int_eq(sk_sandbox_kill(p, sb.id, &err), 0);
	ck_assert_msg(sk_sandbox_create_from_snapshot(p, &req, snap.id, &from, &err) == 0,
	        "create from: %s", err.message);
	ck_assert_str_ne(from.id, sb.id);
	ck_assert_msg(sk_sandbox_read_file(p, &from, e.path, text_sink, &got, &err) == 0,
	        "read: %s", err.message);
	ck_assert_uint_eq(got.len, strlen(text));
	ck_assert(memcmp(got.data, text, got.len) == 0);
	/* deleted (a named one: its ID holds a '/' and a ':'), then gone; again is no error */
	ck_assert_msg(sk_sandbox_delete_snapshot(p, snap.id, &err) == 0, "delete: %s", err.message);
	ck_assert_int_eq(sk_sandbox_delete_snapshot(p, snap.id, &err), 0);
	ck_assert_int_ne(sk_sandbox_create_from_snapshot(p, &req, snap.id, &sb2, &err), 0);
	ck_assert_msg(sk_sandbox_list_snapshots(p, sb.id, &l, &err) == 0, "list: %s", err.message);
	ck_assert_uint_eq(l.len, 100);
	for (size_t i = 0; i < l.len; i++)
		ck_assert_str_ne(l.items[i].id, snap.id);
	sk_snapshot_list_dispose(&l);
	sk_sandbox_dispose(&from);
	sk_snapshot_dispose(&snap);
done:
	sk_buf_dispose(&got);
	sk_sandbox_dispose(&sb);
	sk_provider_free(p);
	sim_down();
}
END_TEST

START_TEST(sim_probe)
{
	sk_provider_type type = all_types[_i];
	sk_provider *p;
	sk_sandbox a;
	sk_health h = SK_HEALTH_ERROR;
	int st = 0;
	sk_error err;
	char faults[256];

	sim_up(_i);
	p = client(type, sim_url, 5000);
	create_user(p, "carol", &a);
	sk_error_clear(&err);
	ck_assert_msg(sk_sandbox_probe_health(p, &a, &h, &st, &err) == 0, "probe: %s", err.message);
	ck_assert_int_eq(h, SK_HEALTH_OK);
	ck_assert_int_eq(st, 204);
	snprintf(faults, sizeof(faults), "{\"unreachable\": [\"%s\"]}", a.id);
	ck_assert_int_eq(sim_post("/_sim/faults", faults), 200);
	ck_assert_int_eq(sk_sandbox_probe_health(p, &a, &h, &st, &err), 0);
	ck_assert_int_eq(h, SK_HEALTH_UNREACHABLE);
	ck_assert_int_eq(st, 504);
	/* the control plane still says running: exactly the drift we must see */
	{
		sk_sandbox sb;
		ck_assert_int_eq(sk_sandbox_get(p, a.id, &sb, &err), 0);
		ck_assert_int_eq(sb.state, SK_SANDBOX_RUNNING);
		sk_sandbox_dispose(&sb);
	}
	sk_sandbox_dispose(&a);
	sk_provider_free(p);
	sim_down();
}
END_TEST

/* init_env against the simulator: a resume drops the create env (the
 * login-shell defect), POST /init puts it back, GET /envs shows it. */
START_TEST(sim_init_env)
{
	sk_provider_type type = all_types[_i];
	sk_kvlist env = { 0 };
	sk_provider *p;
	sk_sandbox a, sb;
	sk_error err;
	json_t *envs;
	bool resumed;

	sim_up(_i);
	p = client(type, sim_url, 5000);
	create_user(p, "fay", &a); /* env GREETING=hello */
	envs = sim_envs(a.id, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(envs, "GREETING")), "hello");
	json_decref(envs);
	ck_assert_int_eq(sk_sandbox_pause(p, a.id, &err), 0);
	ck_assert_int_eq(sk_sandbox_connect(p, a.id, 60000, &sb, &resumed, &err), 0);
	ck_assert(resumed);
	sk_sandbox_dispose(&sb);
	envs = sim_envs(a.id, NULL);
	ck_assert_int_eq(json_object_size(envs), 0);
	json_decref(envs);
	sk_kvlist_set(&env, "GREETING", "hello");
	sk_kvlist_set(&env, "TEAM", "research");
	sk_error_clear(&err);
	ck_assert_msg(sk_sandbox_init_env(p, &a, &env, &err) == 0, "init_env: %s", err.message);
	ck_assert_int_eq(sim_init_calls(), 1);
	envs = sim_envs(a.id, NULL);
	ck_assert_int_eq(json_object_size(envs), 2);
	ck_assert_str_eq(json_string_value(json_object_get(envs, "GREETING")), "hello");
	ck_assert_str_eq(json_string_value(json_object_get(envs, "TEAM")), "research");
	json_decref(envs);
	/* a killed sandbox: the proxy answers 502 (cube 500), transient, without the values */
	ck_assert_int_eq(sk_sandbox_kill(p, a.id, &err), 0);
	ck_assert_int_eq(sk_sandbox_init_env(p, &a, &env, &err), SK_ETRANSIENT);
	ck_assert_ptr_null(strstr(err.message, "research"));
	sk_kvlist_dispose(&env);
	sk_sandbox_dispose(&a);
	sk_provider_free(p);
	sim_down();
}
END_TEST

/* A secure sandbox (envdAccessToken): init_env sends the token; without it envd says 401. */
START_TEST(sim_init_env_secure)
{
	static const char *const key[] = { "X-API-Key: " KEY, NULL };
	sk_kvlist env = { 0 };
	sk_provider *p;
	sk_sandbox sb;
	sk_error err;
	json_t *created, *envs;
	long status = 0;
	char *token;

	sim_up(0);
	p = client(SK_PROVIDER_E2B, sim_url, 5000);
	created = sim_call(
	        "POST", "/sandboxes", "{\"templateID\":\"base\",\"secure\":true}", key, &status);
	ck_assert_int_eq(status, 201);
	ck_assert_int_eq(sk_sandbox_get(p, json_string_value(json_object_get(created, "sandboxID")),
	                         &sb, &err),
	        0);
	json_decref(created);
	ck_assert_ptr_nonnull(sb.envd_access_token);
	sk_kvlist_set(&env, "FOO", "bar");
	sk_error_clear(&err);
	ck_assert_msg(sk_sandbox_init_env(p, &sb, &env, &err) == 0, "init_env: %s", err.message);
	envs = sim_envs(sb.id, sb.envd_access_token);
	ck_assert_str_eq(json_string_value(json_object_get(envs, "FOO")), "bar");
	json_decref(envs);
	token = sb.envd_access_token;
	sb.envd_access_token = NULL;
	ck_assert_int_eq(sk_sandbox_init_env(p, &sb, &env, &err), SK_EUNAUTHORIZED);
	ck_assert_int_eq(err.http_status, 401);
	ck_assert_str_eq(err.message, "POST /init: HTTP 401");
	sb.envd_access_token = token;
	sk_kvlist_dispose(&env);
	sk_sandbox_dispose(&sb);
	sk_provider_free(p);
	sim_down();
}
END_TEST

START_TEST(sim_daytona_probe_not_supported)
{
	sk_provider *p;
	sk_sandbox a;
	sk_health h;
	sk_error err;

	sim_up(2);
	p = client(SK_PROVIDER_DAYTONA, sim_url, 5000);
	create_user(p, "dave", &a);
	ck_assert_int_eq(sk_sandbox_probe_health(p, &a, &h, NULL, &err), SK_ENOTSUPPORTED);
	sk_sandbox_dispose(&a);
	sk_provider_free(p);
	sim_down();
}
END_TEST

/* POST path (no body) to the daytona simulator's API with the test key; returns the status. */
static long
dt_post(const char *path)
{
	CURL *c = curl_easy_init();
	char url[256];
	long status = 0;
	FILE *devnull = fopen("/dev/null", "w");
	struct curl_slist *h = curl_slist_append(NULL, "Authorization: Bearer " KEY);

	snprintf(url, sizeof(url), "%s%s", sim_url, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, devnull);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
	ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	fclose(devnull);
	return status;
}

/* archived is "paused" to the controller; connect starts it; end_ms follows auto-stop */
START_TEST(sim_daytona_archive_resume)
{
	sk_provider *p;
	sk_sandbox a, sb;
	sk_sandbox_list l;
	sk_error err;
	char path[128];
	bool resumed = false;
	int64_t now;

	sim_up(2);
	p = client(SK_PROVIDER_DAYTONA, sim_url, 5000);
	create_user(p, "frank", &a); /* timeout 600000: autoStopInterval 10 */
	now = sk_now_ms();
	ck_assert_msg(a.end_ms > now + 540000 && a.end_ms <= now + 600000, "end in %lld ms",
	        (long long)(a.end_ms - now));
	ck_assert_int_eq(sk_sandbox_pause(p, a.id, &err), 0);
	ck_assert_int_eq(sk_sandbox_get(p, a.id, &sb, &err), 0);
	ck_assert_msg(sb.end_ms > now - 5000 && sb.end_ms <= sk_now_ms(), "stopped at %lld",
	        (long long)(sb.end_ms - now));
	sk_sandbox_dispose(&sb);
	snprintf(path, sizeof(path), "/api/sandbox/%s/archive", a.id);
	ck_assert_int_eq(dt_post(path), 200);
	ck_assert_int_eq(sk_sandbox_get(p, a.id, &sb, &err), 0);
	ck_assert_int_eq(sb.state, SK_SANDBOX_PAUSED);
	sk_sandbox_dispose(&sb);
	ck_assert_uint_eq(count_user(p, "frank", &l), 1);
	ck_assert_int_eq(l.items[0].state, SK_SANDBOX_PAUSED);
	sk_sandbox_list_dispose(&l);
	/* pausing an archived sandbox is a no-op success */
	ck_assert_int_eq(sk_sandbox_pause(p, a.id, &err), 0);
	sk_error_clear(&err);
	ck_assert_msg(sk_sandbox_connect(p, a.id, 300000, &sb, &resumed, &err) == 0, "connect: %s",
	        err.message);
	ck_assert(resumed);
	ck_assert_str_eq(sb.id, a.id);
	ck_assert_int_eq(sb.state, SK_SANDBOX_RUNNING);
	ck_assert_str_eq(sk_kvlist_get(&sb.metadata, "user_id"), "frank");
	sk_sandbox_dispose(&sb);
	ck_assert_int_eq(sk_sandbox_get(p, a.id, &sb, &err), 0);
	ck_assert_int_eq(sb.state, SK_SANDBOX_RUNNING);
	sk_sandbox_dispose(&sb);
	sk_sandbox_dispose(&a);
	sk_provider_free(p);
	sim_down();
}
END_TEST

START_TEST(sim_injected_errors)
{
	sk_provider_type type = all_types[_i];
	sk_provider *p;
	sk_sandbox a, sb;
	sk_error err;

	sim_up(_i);
	p = client(type, sim_url, 5000);
	create_user(p, "erin", &a);
	ck_assert_int_eq(sim_post("/_sim/faults",
	                         "{\"errors\": {\"get\": {\"status\": 429, \"retry_after_s\": 3, "
	                         "\"count\": 1}}}"),
	        200);
	sk_error_clear(&err);
	ck_assert_int_eq(sk_sandbox_get(p, a.id, &sb, &err), SK_ETRANSIENT);
	ck_assert_int_eq(err.http_status, 429);
	ck_assert_int_eq(err.retry_after_ms, 3000);
	ck_assert_int_eq(sk_sandbox_get(p, a.id, &sb, &err), 0); /* count: 1 */
	sk_sandbox_dispose(&sb);
	ck_assert_int_eq(
	        sim_post("/_sim/faults", "{\"errors\": {\"*\": {\"status\": 503, \"count\": 1}}}"),
	        200);
	ck_assert_int_eq(sk_sandbox_kill(p, a.id, &err), SK_ETRANSIENT);
	ck_assert_int_eq(err.http_status, 503);
	/* an empty list is not proof of absence: the direct get still finds it */
	ck_assert_int_eq(sim_post("/_sim/faults", "{\"list_empty_s\": -1}"), 200);
	ck_assert_uint_eq(count_user(p, "erin", NULL), 0);
	ck_assert_int_eq(sk_sandbox_get(p, a.id, &sb, &err), 0);
	sk_sandbox_dispose(&sb);
	ck_assert_int_eq(sim_post("/_sim/faults", "{\"list_empty_s\": 0}"), 200);
	ck_assert_uint_eq(count_user(p, "erin", NULL), 1);
	/* a slow provider: bounded by the request timeout */
	{
		sk_provider *slow = client(type, sim_url, 500);
		int64_t t0 = sk_monotonic_ms();
		ck_assert_int_eq(
		        sim_post("/_sim/faults",
		                "{\"latency\": {\"*\": {\"fixed_ms\": 3000, \"jitter_ms\": 0}}}"),
		        200);
		sk_error_clear(&err);
		ck_assert_int_eq(sk_sandbox_get(slow, a.id, &sb, &err), SK_ETIMEOUT);
		ck_assert_int_lt(sk_monotonic_ms() - t0, 500 + 1500);
		ck_assert_int_eq(sim_post("/_sim/faults", "{\"latency\": {\"*\": null}}"), 200);
		sk_provider_free(slow);
	}
	ck_assert_int_eq(sk_sandbox_kill(p, a.id, &err), 0);
	sk_sandbox_dispose(&a);
	sk_provider_free(p);
	sim_down();
}
END_TEST

START_TEST(sim_wrong_key_is_unauthorized)
{
	sk_provider *p;
	sk_sandbox sb;
	sk_error err;

	sim_up(_i);
	p = client(all_types[_i], sim_url, 5000);
	setenv(KEY_VAR, "e2b_ffff", 1);
	sk_provider_free(p);
	{
		sk_provider_config c = { .name = "t",
			.type = all_types[_i],
			.api_url = sim_url,
			.api_key_env = KEY_VAR,
			.request_timeout_ms = 5000 };
		ck_assert_int_eq(sk_provider_new(&c, &p, &err), 0);
	}
	sk_error_clear(&err);
	ck_assert_int_eq(sk_sandbox_get(p, "abc123", &sb, &err), SK_EUNAUTHORIZED);
	ck_assert_int_eq(err.http_status, 401);
	ck_assert_ptr_null(strstr(err.message, "e2b_ffff"));
	sk_provider_free(p);
	sim_down();
}
END_TEST

static void
faults_setup(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	signal(SIGPIPE, SIG_IGN);
}

static void
faults_teardown(void)
{
	curl_global_cleanup();
}

Suite *
sk_suite_provider_faults(void)
{
	Suite *s = suite_create("provider_faults");
	TCase *tc = tcase_create("faults");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, faults_setup, faults_teardown);
	tcase_add_loop_test(tc, get_classifies_status, 0,
	        (int)(sizeof(status_cases) / sizeof(status_cases[0])));
	tcase_add_test(tc, retry_after_http_date);
	tcase_add_test(tc, key_is_redacted_from_provider_messages);
	tcase_add_test(tc, success_codes_for_idempotent_calls);
	tcase_add_test(tc, e2b_connect_status_means_resumed);
	tcase_add_test(tc, connection_refused_is_unavailable);
	tcase_add_test(tc, requests_reach_the_observer);
	tcase_add_test(tc, silent_server_times_out);
	tcase_add_test(tc, truncated_transfer_is_an_error);
	tcase_add_test(tc, bad_bodies_are_invalid);
	tcase_add_test(tc, oversized_body_is_refused);
	tcase_add_test(tc, list_pages_that_shift);
	tcase_add_test(tc, list_pages_forever_are_capped);
	tcase_add_test(tc, list_token_cycle_stops);
	tcase_add_test(tc, list_query_encoding);
	tcase_add_test(tc, probe_classifies);
	tcase_add_test(tc, init_env_request_and_redaction);
	tcase_add_test(tc, provider_new_without_key);
	suite_add_tcase(s, tc);
	return s;
}

/* spec.network in each provider's shape: sent at create, reported back where
 * the provider reports it (E2B, Daytona), changed live on E2B only, and what
 * Daytona cannot express refused before any call. */
START_TEST(sim_network_shapes)
{
	sk_provider_type type = all_types[_i];
	sk_kvlist meta = { 0 }, env = { 0 };
	sk_network want = { .internet = SK_NET_DENY }, next = { 0 }, bad = { 0 };
	sk_create_request req = { .template_id = "base",
		.timeout_ms = 600000,
		.auto_pause = true,
		.metadata = &meta,
		.env = &env,
		.network = &want };
	sk_provider *p;
	sk_sandbox sb, got;
	sk_error err;
	int rc;

	sim_up(_i);
	p = client(type, sim_url, 5000);
	sk_strlist_add(&want.allow_out, "10.0.0.0/8");
	sk_kvlist_set(&meta, "managed_by", "spacekeeper");
	sk_error_clear(&err);
	ck_assert_msg(sk_sandbox_create(p, &req, &sb, &err) == 0, "create: %s", err.message);
	ck_assert_int_eq(sk_sandbox_get(p, sb.id, &got, &err), 0);
	/* Cube reports no policy: the controller relies on what it applied */
	ck_assert_int_eq(got.network_known, type != SK_PROVIDER_CUBE);
	if (got.network_known)
		ck_assert_msg(sk_network_satisfies(&want, &got.network), "reported policy differs");
	sk_sandbox_dispose(&got);
	/* live update: E2B only */
	next.internet = SK_NET_DENY;
	sk_strlist_add(&next.allow_out, "192.168.0.0/16");
	rc = sk_sandbox_set_network(p, sb.id, &next, &err);
	ck_assert_int_eq(sk_sandbox_network_live(p), type == SK_PROVIDER_E2B);
	if (type == SK_PROVIDER_E2B) {
		ck_assert_msg(rc == 0, "set network: %s", err.message);
		ck_assert_int_eq(sk_sandbox_get(p, sb.id, &got, &err), 0);
		ck_assert(sk_network_satisfies(&next, &got.network));
		ck_assert(!sk_network_satisfies(&want, &got.network));
		sk_sandbox_dispose(&got);
	} else {
		ck_assert_int_eq(rc, SK_ENOTSUPPORTED);
	}
	sk_sandbox_dispose(&sb);
	/* a denyOut: E2B and Cube take it, Daytona cannot express it */
	sk_strlist_add(&bad.deny_out, "169.254.0.0/16");
	req.network = &bad;
	sk_error_clear(&err);
	rc = sk_sandbox_create(p, &req, &sb, &err);
	if (type == SK_PROVIDER_DAYTONA) {
		ck_assert_int_eq(rc, SK_EINVALID);
		ck_assert_ptr_nonnull(strstr(err.message, "spec.network.denyOut: Daytona cannot"));
	} else {
		ck_assert_msg(rc == 0, "create: %s", err.message);
		sk_sandbox_dispose(&sb);
	}
	sk_network_dispose(&want);
	sk_network_dispose(&next);
	sk_network_dispose(&bad);
	sk_kvlist_dispose(&meta);
	sk_provider_free(p);
	sim_down();
}
END_TEST

Suite *
sk_suite_provider_sim(void)
{
	Suite *s = suite_create("provider_sim");
	TCase *tc = tcase_create("sim");

	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, faults_setup, faults_teardown);
	tcase_add_loop_test(tc, sim_lifecycle, 0, 3);
	tcase_add_loop_test(tc, sim_probe, 0, 2);
	tcase_add_test(tc, sim_daytona_probe_not_supported);
	tcase_add_test(tc, sim_daytona_archive_resume);
	tcase_add_loop_test(tc, sim_init_env, 0, 2);
	tcase_add_test(tc, sim_init_env_secure);
	tcase_add_loop_test(tc, sim_injected_errors, 0, 3);
	tcase_add_loop_test(tc, sim_wrong_key_is_unauthorized, 0, 3);
	tcase_add_loop_test(tc, sim_network_shapes, 0, 3);
	tcase_add_loop_test(tc, sim_volumes, 0, 3);
	tcase_add_loop_test(tc, sim_fork, 0, 3);
	tcase_add_loop_test(tc, sim_snapshots, 0, 3);
	suite_add_tcase(s, tc);
	return s;
}
