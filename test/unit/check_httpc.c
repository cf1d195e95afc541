/*
 * Unit tests for pkg/httpc, the shared HTTP client, against a scripted
 * loopback server (libmicrohttpd in this process): retries by status with
 * Retry-After, no retry on a 4xx or a streamed body, the timeout, the
 * classifier, and the redaction of secrets and SigV4 signatures.
 */
#include <check.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../testutil.h"
#include "httpc/httpc.h"

Suite *sk_suite_httpc(void);

#define SECRET "sk-live-7f3a9c0e51d2"
#define MAX_SCRIPT 4

/* One scripted answer; the last one repeats. */
typedef struct answer {
	unsigned int status;
	const char *retry_after; /* NULL: no header */
	const char *body;
	bool hang; /* no answer until released */
} answer;

static struct srv {
	struct MHD_Daemon *d;
	char base[64];
	pthread_mutex_t lock;
	pthread_cond_t released_cv;
	bool released;
	answer script[MAX_SCRIPT];
	int n_script;
	int requests;
	char upload[64];
} S;

static const answer *
next_answer(void)
{
	int i = S.requests < S.n_script ? S.requests : S.n_script - 1;

	S.requests++;
	return &S.script[i];
}

static enum MHD_Result
handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
        const char *version, const char *upload, size_t *upload_size, void **state)
{
	static int started;
	const answer *a;
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (*state == NULL) {
		*state = &started;
		return MHD_YES;
	}
	if (*upload_size) {
		pthread_mutex_lock(&S.lock);
		snprintf(S.upload, sizeof(S.upload), "%.*s", (int)*upload_size, upload);
		pthread_mutex_unlock(&S.lock);
		*upload_size = 0;
		return MHD_YES;
	}
	pthread_mutex_lock(&S.lock);
	a = next_answer();
	while (a->hang && !S.released)
		pthread_cond_wait(&S.released_cv, &S.lock);
	pthread_mutex_unlock(&S.lock);
	r = MHD_create_response_from_buffer(strlen(a->body ? a->body : ""),
	        (void *)(a->body ? a->body : ""), MHD_RESPMEM_PERSISTENT);
	if (a->retry_after)
		MHD_add_response_header(r, "Retry-After", a->retry_after);
	MHD_add_response_header(r, "Content-Type", "application/json");
	ret = MHD_queue_response(c, a->status, r);
	MHD_destroy_response(r);
	return ret;
}

static void
srv_start(void)
{
	int port = sk_test_free_port();

	memset(&S, 0, sizeof(S));
	pthread_mutex_init(&S.lock, NULL);
	pthread_cond_init(&S.released_cv, NULL);
	S.d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION,
	        (uint16_t)port, NULL, NULL, handler, NULL, MHD_OPTION_END);
	ck_assert_ptr_nonnull(S.d);
	snprintf(S.base, sizeof(S.base), "http://127.0.0.1:%d/x", port);
}

static void
srv_release(void)
{
	pthread_mutex_lock(&S.lock);
	S.released = true;
	pthread_cond_broadcast(&S.released_cv);
	pthread_mutex_unlock(&S.lock);
}

static void
srv_stop(void)
{
	srv_release();
	if (S.d)
		MHD_stop_daemon(S.d);
	S.d = NULL;
	pthread_cond_destroy(&S.released_cv);
	pthread_mutex_destroy(&S.lock);
}

static void
script(const answer *answers, int n)
{
	pthread_mutex_lock(&S.lock);
	memcpy(S.script, answers, (size_t)n * sizeof(*answers));
	S.n_script = n;
	S.requests = 0;
	pthread_mutex_unlock(&S.lock);
}

static int
requests(void)
{
	int n;

	pthread_mutex_lock(&S.lock);
	n = S.requests;
	pthread_mutex_unlock(&S.lock);
	return n;
}

/* A client that retries up to attempts times with a short backoff. */
static void
client(sk_httpc *c, int attempts, int64_t timeout_ms)
{
	sk_httpc_config cfg = { .timeout_ms = timeout_ms,
		.attempts = attempts,
		.backoff_ms = 20,
		.backoff_max_ms = 5000 };
	sk_error err = { 0 };

	ck_assert_int_eq(sk_httpc_init(c, &cfg, &err), 0);
	sk_httpc_add_secret(c, SECRET);
}

static int
get(sk_httpc *c, sk_httpc_response *resp, sk_error *err)
{
	sk_httpc_request req = { .method = "GET", .url = S.base, .path = "/x" };

	return sk_httpc_do(c, &req, resp, err);
}

START_TEST(test_retry_503_waits_retry_after)
{
	const answer a[] = { { 503, "1", "{}", false }, { 200, NULL, "{\"ok\":true}", false } };
	sk_httpc c;
	sk_httpc_response resp;
	sk_error err = { 0 };
	int64_t t0 = sk_monotonic_ms();

	script(a, 2);
	client(&c, 3, 5000);
	ck_assert_int_eq(get(&c, &resp, &err), 0);
	ck_assert_int_eq(resp.status, 200);
	ck_assert_str_eq(resp.body.data, "{\"ok\":true}");
	ck_assert_int_eq(resp.attempts, 2);
	ck_assert_int_eq(requests(), 2);
	/* the answer's Retry-After (1 s), not the 20 ms backoff */
	ck_assert_int_ge(sk_monotonic_ms() - t0, 950);
	sk_httpc_response_dispose(&resp);
	sk_httpc_dispose(&c);
}
END_TEST

START_TEST(test_retry_429_until_answered)
{
	const answer a[] = { { 429, NULL, "", false }, { 429, NULL, "", false },
		{ 204, NULL, "", false } };
	sk_httpc c;
	sk_httpc_response resp;
	sk_error err = { 0 };

	script(a, 3);
	client(&c, 5, 5000);
	ck_assert_int_eq(get(&c, &resp, &err), 0);
	ck_assert_int_eq(resp.status, 204);
	ck_assert_int_eq(requests(), 3);
	sk_httpc_response_dispose(&resp);
	sk_httpc_dispose(&c);
}
END_TEST

START_TEST(test_attempts_run_out)
{
	const answer a[] = { { 503, "0", "{\"message\":\"busy\"}", false } };
	sk_httpc c;
	sk_httpc_response resp;
	sk_error err = { 0 };

	script(a, 1);
	client(&c, 2, 5000);
	ck_assert_int_eq(get(&c, &resp, &err), 0);
	ck_assert_int_eq(resp.status, 503);
	ck_assert_int_eq(requests(), 2);
	ck_assert_int_eq(
	        sk_httpc_fail(&c, &resp, &err, "GET /x: HTTP %ld", resp.status), SK_ETRANSIENT);
	ck_assert_int_eq(err.http_status, 503);
	sk_httpc_response_dispose(&resp);
	sk_httpc_dispose(&c);
}
END_TEST

START_TEST(test_no_retry_on_400)
{
	const answer a[] = { { 400, "0", "{\"message\":\"bad\"}", false },
		{ 200, NULL, "", false } };
	sk_httpc c;
	sk_httpc_response resp;
	sk_error err = { 0 };

	script(a, 2);
	client(&c, 3, 5000);
	ck_assert_int_eq(get(&c, &resp, &err), 0);
	ck_assert_int_eq(resp.status, 400);
	ck_assert_int_eq(resp.attempts, 1);
	ck_assert_int_eq(requests(), 1);
	ck_assert_int_eq(sk_httpc_fail(&c, &resp, &err, "bad"), SK_ETERMINAL);
	sk_httpc_response_dispose(&resp);
	sk_httpc_dispose(&c);
}
END_TEST

/* The default (attempts 0): one request; the caller decides. */
START_TEST(test_default_sends_once)
{
	const answer a[] = { { 503, "0", "", false }, { 200, NULL, "", false } };
	sk_httpc c;
	sk_httpc_response resp;
	sk_error err = { 0 };

	script(a, 2);
	client(&c, 0, 5000);
	ck_assert_int_eq(get(&c, &resp, &err), 0);
	ck_assert_int_eq(resp.status, 503);
	ck_assert_int_eq(requests(), 1);
	sk_httpc_response_dispose(&resp);
	sk_httpc_dispose(&c);
}
END_TEST

static int64_t
one_source(void *payload, void *buf, size_t len)
{
	int *left = payload;

	if (*left == 0)
		return 0;
	memcpy(buf, "abc", 3);
	*left = 0;
	return 3;
}

/* A body streamed from a source cannot be sent again: no retry. */
START_TEST(test_streamed_body_not_retried)
{
	const answer a[] = { { 503, "0", "", false }, { 200, NULL, "", false } };
	sk_httpc c;
	sk_httpc_response resp;
	sk_error err = { 0 };
	int left = 1;
	sk_httpc_request req = { .method = "PUT",
		.url = S.base,
		.source = one_source,
		.source_payload = &left,
		.size = 3 };

	script(a, 2);
	client(&c, 3, 5000);
	ck_assert_int_eq(sk_httpc_do(&c, &req, &resp, &err), 0);
	ck_assert_int_eq(resp.status, 503);
	ck_assert_int_eq(requests(), 1);
	pthread_mutex_lock(&S.lock);
	ck_assert_str_eq(S.upload, "abc");
	pthread_mutex_unlock(&S.lock);
	sk_httpc_response_dispose(&resp);
	sk_httpc_dispose(&c);
}
END_TEST

static int
count_sink(void *payload, const void *buf, size_t len)
{
	*(size_t *)payload += len;
	return 0;
}

/* A sink sees a 2xx body only; an error's body stays for the message. */
START_TEST(test_sink_gets_only_2xx)
{
	const answer a[] = { { 500, NULL, "{\"message\":\"boom\"}", false },
		{ 200, NULL, "12345", false } };
	sk_httpc c;
	sk_httpc_response resp;
	sk_error err = { 0 };
	size_t got = 0;
	sk_httpc_request req = {
		.method = "GET", .url = S.base, .sink = count_sink, .sink_payload = &got
	};

	script(a, 2);
	client(&c, 3, 5000);
	ck_assert_int_eq(sk_httpc_do(&c, &req, &resp, &err), 0);
	ck_assert_int_eq(resp.status, 500);
	ck_assert_uint_eq(got, 0);
	ck_assert_str_eq(resp.body.data, "{\"message\":\"boom\"}");
	sk_httpc_response_dispose(&resp);
	ck_assert_int_eq(sk_httpc_do(&c, &req, &resp, &err), 0);
	ck_assert_int_eq(resp.status, 200);
	ck_assert_uint_eq(got, 5);
	sk_httpc_response_dispose(&resp);
	sk_httpc_dispose(&c);
}
END_TEST

START_TEST(test_timeout)
{
	const answer a[] = { { 200, NULL, "", true } };
	sk_httpc c;
	sk_httpc_response resp;
	sk_error err = { 0 };
	int64_t t0 = sk_monotonic_ms(), took;

	script(a, 1);
	client(&c, 1, 300);
	ck_assert_int_eq(get(&c, &resp, &err), SK_ETIMEOUT);
	took = sk_monotonic_ms() - t0;
	ck_assert_msg(took >= 250 && took < 5000, "took %lld ms", (long long)took);
	ck_assert_int_eq(resp.status, 0);
	ck_assert_int_eq(err.http_status, 0);
	ck_assert_msg(strstr(err.message, "GET /x: ") == err.message, "%s", err.message);
	srv_release();
	sk_httpc_response_dispose(&resp);
	sk_httpc_dispose(&c);
}
END_TEST

/* A provider echoing the key, and a SigV4 query in a transport error. */
START_TEST(test_redaction)
{
	const answer a[] = { { 401, NULL, "{\"message\":\"bad key " SECRET "\"}", false } };
	sk_httpc c;
	sk_httpc_response resp;
	sk_error err = { 0 };
	sk_httpc_request signed_req = { .method = "GET",
		.url = "http://127.0.0.1:1/b/k?X-Amz-Credential=AKIAEXAMPLE%2F20261203&"
		       "X-Amz-Signature=deadbeefcafe0123" };

	script(a, 1);
	client(&c, 1, 2000);
	ck_assert_int_eq(get(&c, &resp, &err), 0);
	ck_assert_int_eq(
	        sk_httpc_fail(&c, &resp, &err, "GET /x: HTTP %ld: %s", resp.status, resp.body.data),
	        SK_EUNAUTHORIZED);
	ck_assert_msg(strstr(err.message, SECRET) == NULL, "%s", err.message);
	ck_assert_msg(strstr(err.message, "bad key ****") != NULL, "%s", err.message);
	sk_httpc_response_dispose(&resp);

	ck_assert_int_eq(sk_httpc_do(&c, &signed_req, &resp, &err), SK_EUNAVAILABLE);
	ck_assert_msg(strstr(err.message, "deadbeef") == NULL, "%s", err.message);
	ck_assert_msg(strstr(err.message, "AKIAEXAMPLE") == NULL, "%s", err.message);
	ck_assert_msg(strstr(err.message, "X-Amz-Signature=*") != NULL, "%s", err.message);
	sk_httpc_response_dispose(&resp);
	sk_httpc_dispose(&c);
}
END_TEST

static const struct status_case {
	long status;
	int code;
	bool retryable;
} status_cases[] = {
	{ 200, SK_OK, false }, { 204, SK_OK, false }, { 304, SK_ETERMINAL, false },
	{ 400, SK_ETERMINAL, false }, { 401, SK_EUNAUTHORIZED, false },
	{ 403, SK_EUNAUTHORIZED, false }, { 404, SK_ENOTFOUND, false },
	{ 408, SK_ETRANSIENT, true }, { 409, SK_ECONFLICT, false }, { 422, SK_ETERMINAL, false },
	{ 429, SK_ETRANSIENT, true }, { 500, SK_ETRANSIENT, true }, { 503, SK_ETRANSIENT, true },
	{ 0, SK_ETRANSIENT, true }, /* no answer */
};

START_TEST(test_classifier)
{
	const struct status_case *t = &status_cases[_i];

	if (t->status != 0)
		ck_assert_int_eq(sk_httpc_status_error(t->status), t->code);
	ck_assert_int_eq(sk_httpc_retryable(t->status), t->retryable);
}
END_TEST

START_TEST(test_parse_retry_after)
{
	ck_assert_int_eq(sk_httpc_parse_retry_after("120", 0), 120000);
	ck_assert_int_eq(sk_httpc_parse_retry_after(" 3\r\n", 0), 3000);
	ck_assert_int_eq(sk_httpc_parse_retry_after("soon", 0), 0);
	ck_assert_int_eq(sk_httpc_parse_retry_after("-1", 0), 0);
	/* an HTTP date 90 s after now */
	ck_assert_int_eq(sk_httpc_parse_retry_after(
	                         "Thu, 03 Dec 2026 16:01:30 GMT", (int64_t)1796313600 * 1000),
	        90000);
}
END_TEST

Suite *
sk_suite_httpc(void)
{
	Suite *s = suite_create("httpc");
	TCase *wire = tcase_create("wire");
	TCase *pure = tcase_create("pure");

	tcase_add_checked_fixture(wire, srv_start, srv_stop);
	tcase_set_timeout(wire, 30);
	tcase_add_test(wire, test_retry_503_waits_retry_after);
	tcase_add_test(wire, test_retry_429_until_answered);
	tcase_add_test(wire, test_attempts_run_out);
	tcase_add_test(wire, test_no_retry_on_400);
	tcase_add_test(wire, test_default_sends_once);
	tcase_add_test(wire, test_streamed_body_not_retried);
	tcase_add_test(wire, test_sink_gets_only_2xx);
	tcase_add_test(wire, test_timeout);
	tcase_add_test(wire, test_redaction);
	tcase_add_loop_test(
	        pure, test_classifier, 0, (int)(sizeof(status_cases) / sizeof(status_cases[0])));
	tcase_add_test(pure, test_parse_retry_after);
	suite_add_tcase(s, wire);
	suite_add_tcase(s, pure);
	return s;
}
