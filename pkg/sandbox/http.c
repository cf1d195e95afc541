/*
 * sandbox/http: the provider clients' side of the shared HTTP client
 * (httpc): the base URL, the key header (redacted from every message), the
 * JSON headers, the provider's `message` in an error, and the request
 * metrics by endpoint. Handles, timeouts, the body cap, Retry-After and the
 * status classifier are httpc's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox_int.h"

#define CONNECT_TIMEOUT_MAX_MS 10000
#define STREAM_BLOCK (256 * 1024)

int
sk_http_init(sk_http *h, const char *base_url, const char *auth_prefix, const char *key,
        int64_t timeout_ms, bool insecure, sk_error *err)
{
	size_t n = base_url ? strlen(base_url) : 0;
	sk_httpc_config cfg = { .timeout_ms = timeout_ms > 0 ? timeout_ms : 30000,
		.connect_timeout_ms = CONNECT_TIMEOUT_MAX_MS,
		.insecure = insecure,
		.max_body = SK_HTTP_MAX_BODY };
	int rc;

	memset(h, 0, sizeof(*h));
	while (n > 0 && base_url[n - 1] == '/')
		n--;
	if ((rc = sk_httpc_init(&h->c, &cfg, err)) != SK_OK)
		return rc;
	h->base_url = sk_strndup(base_url ? base_url : "", n);
	if (auth_prefix && key) {
		h->auth_header = sk_asprintf("%s%s", auth_prefix, key);
		sk_httpc_add_secret(&h->c, key);
	}
	h->timeout_ms = h->c.cfg.timeout_ms;
	return SK_OK;
}

void
sk_http_dispose(sk_http *h)
{
	sk_httpc_dispose(&h->c);
	free(h->base_url);
	sk_wipe_free(h->auth_header);
	memset(h, 0, sizeof(*h));
}

void
sk_http_response_dispose(sk_http_response *r)
{
	sk_buf_dispose(&r->body);
	free(r->next_token);
	memset(r, 0, sizeof(*r));
}

char *
sk_http_escape(sk_http *h, const char *s)
{
	return sk_httpc_escape(&h->c, s);
}

static const char *
req_path(const sk_http_request *req)
{
	return req->path ? req->path : (req->url ? req->url : "/");
}

void
sk_provider_set_abort(sk_provider *p, sk_provider_abort_fn fn, void *payload)
{
	sk_httpc_set_abort(&p->http.c, fn, payload);
}

/* Appends seg (n bytes) to out as written or as its placeholder. */
static void
endpoint_segment(sk_buf *out, const char *seg, size_t n, bool after_sandbox)
{
	size_t digits = strspn(seg, "0123456789");

	if (after_sandbox)
		sk_buf_printf(out, "/:id");
	else if (n > 0 && digits >= n)
		sk_buf_printf(out, "/:n");
	else
		sk_buf_printf(out, "/%.*s", (int)n, seg);
}

void
sk_sandbox_http_endpoint(const char *method, const char *path_or_url, char *out, size_t len)
{
	const char *p = path_or_url ? path_or_url : "/", *s = strstr(p, "://");
	sk_buf b = SK_BUF_INIT(0);
	bool after_sandbox = false;

	if (s) /* an absolute URL: skip the scheme and the host */
		p = s + 3 + strcspn(s + 3, "/?");
	sk_buf_printf(&b, "%s ", method ? method : "GET");
	while (*p == '/') {
		size_t n = strcspn(p + 1, "/?");
		endpoint_segment(&b, p + 1, n, after_sandbox);
		after_sandbox = (n == 9 && strncmp(p + 1, "sandboxes", 9) == 0) ||
		        (n == 7 && strncmp(p + 1, "sandbox", 7) == 0) ||
		        (n == 7 && strncmp(p + 1, "toolbox", 7) == 0) ||
		        (n == 7 && strncmp(p + 1, "volumes", 7) == 0);
		p += 1 + n;
	}
	if (b.len == strlen(method ? method : "GET") + 1)
		sk_buf_printf(&b, "/");
	snprintf(out, len, "%s", b.data ? b.data : "");
	sk_buf_dispose(&b);
}

/* httpc's observer: one sample per request by provider and endpoint. */
static void
observe_request(void *payload, const sk_httpc_request *hr, long status, double seconds)
{
	sk_http *h = payload;
	const sk_http_request *req = hr->caller;
	char endpoint[160];

	if (!h->observe)
		return;
	sk_sandbox_http_endpoint(
	        req->method, req->url ? req->url : req->path, endpoint, sizeof(endpoint));
	h->observe(h->observe_payload, h->observe_name ? h->observe_name : "", endpoint,
	        (int)status, seconds);
}

void
sk_provider_set_observer(sk_provider *p, sk_provider_observer_fn fn, void *payload)
{
	p->http.observe = fn;
	p->http.observe_payload = payload;
	p->http.observe_name = p->cfg.name;
	sk_httpc_set_observer(&p->http.c, fn ? observe_request : NULL, &p->http);
}

/* The headers every provider request carries, then the request's own. */
static const char **
build_headers(sk_http *h, const sk_http_request *req)
{
	size_t n = 0, k = 0;
	const char **list;

	while (req->headers && req->headers[n])
		n++;
	list = sk_calloc(n + 5, sizeof(*list));
	list[k++] = "Accept: application/json";
	if (req->body)
		list[k++] = "Content-Type: application/json";
	list[k++] = "Expect:";
	if (req->auth && h->auth_header)
		list[k++] = h->auth_header;
	for (size_t i = 0; i < n; i++)
		list[k++] = req->headers[i];
	return list;
}

/* The shared request for req; *url and *headers are the caller's to free. */
static sk_httpc_request
shared_request(sk_http *h, const sk_http_request *req, char **url, const char ***headers)
{
	*url = req->url ? sk_strdup(req->url) : sk_asprintf("%s%s", h->base_url, req->path);
	*headers = build_headers(h, req);
	/* a DELETE without a body sends none; other methods an empty one */
	return (sk_httpc_request){ .method = req->method,
		.url = *url,
		.path = req_path(req),
		.headers = *headers,
		.body = req->body ? req->body : (strcmp(req->method, "DELETE") != 0 ? "" : NULL),
		.body_len = req->body ? strlen(req->body) : 0,
		.timeout_ms = req->timeout_ms,
		.capture = "X-Next-Token",
		.caller = req };
}

static void
take_response(sk_httpc_response *from, sk_http_response *to)
{
	to->status = from->status;
	to->body = from->body;
	to->next_token = from->captured;
	to->retry_after_ms = from->retry_after_ms;
	from->body = (sk_buf)SK_BUF_INIT(0);
	from->captured = NULL;
	sk_httpc_response_dispose(from);
}

int
sk_http_do(sk_http *h, const sk_http_request *req, sk_http_response *resp, sk_error *err)
{
	const char **headers;
	char *url;
	sk_httpc_request hr = shared_request(h, req, &url, &headers);
	sk_httpc_response r;
	int rc = sk_httpc_do(&h->c, &hr, &r, err);

	memset(resp, 0, sizeof(*resp));
	take_response(&r, resp);
	free(headers);
	free(url);
	return rc;
}

int
sk_http_stream_do(sk_http *h, const sk_http_request *req, sk_http_stream *st,
        sk_http_response *resp, sk_error *err)
{
	const char **headers;
	char *url;
	sk_httpc_request hr = shared_request(h, req, &url, &headers);
	sk_httpc_response r;
	int rc;

	if (st->source) {
		hr.body = NULL;
		hr.body_len = 0;
	}
	hr.source = st->source;
	hr.source_payload = st->source_payload;
	hr.size = st->size;
	hr.mime_name = st->mime_name;
	hr.mime_filename = st->mime_filename;
	hr.sink = st->sink;
	hr.sink_payload = st->sink_payload;
	/* Large blocks: fewer recv/send calls, callbacks, ring wake-ups and
	 * hash updates per byte (libcurl's defaults are 16 KiB down, 64 KiB
	 * up); the small API calls keep the defaults. */
	hr.read_block = STREAM_BLOCK;
	rc = sk_httpc_do(&h->c, &hr, &r, err);
	memset(resp, 0, sizeof(*resp));
	take_response(&r, resp);
	free(headers);
	free(url);
	return rc;
}

/* The provider's `message` (E2B {code,message}; Daytona/NestJS message may be an array). */
static void
provider_message(const sk_http_response *resp, char *out, size_t len)
{
	json_t *j, *m;

	out[0] = '\0';
	if (resp->body.len == 0)
		return;
	j = json_loadb(resp->body.data, resp->body.len, 0, NULL);
	m = json_is_object(j) ? json_object_get(j, "message") : NULL;
	if (json_is_array(m))
		m = json_array_get(m, 0);
	if (json_is_string(m))
		snprintf(out, len, "%s", json_string_value(m));
	json_decref(j);
	for (char *p = out; *p; p++)
		if ((unsigned char)*p < 0x20)
			*p = ' ';
}

int
sk_http_classify(
        sk_http *h, const sk_http_request *req, const sk_http_response *resp, sk_error *err)
{
	sk_httpc_response r = { .status = resp->status, .retry_after_ms = resp->retry_after_ms };
	char pmsg[512];

	if (resp->status >= 200 && resp->status < 300)
		return SK_OK;
	provider_message(resp, pmsg, sizeof(pmsg));
	return sk_httpc_fail(&h->c, &r, err, "%s %s: HTTP %ld%s%s", req->method, req_path(req),
	        resp->status, pmsg[0] ? ": " : "", pmsg);
}

int
sk_http_json(sk_http *h, const sk_http_request *req, long *status, json_t **json, sk_error *err)
{
	sk_http_response resp;
	json_error_t jerr;
	int rc;

	if (json)
		*json = NULL;
	rc = sk_http_do(h, req, &resp, err);
	if (rc != SK_OK)
		return rc;
	if (status)
		*status = resp.status;
	rc = sk_http_classify(h, req, &resp, err);
	if (rc == SK_OK && json && resp.body.len > 0) {
		*json = json_loadb(resp.body.data, resp.body.len, 0, &jerr);
		if (*json == NULL)
			rc = sk_error_set(err, SK_EINVALID, "%s %s: HTTP %ld: body is not JSON: %s",
			        req->method, req_path(req), resp.status, jerr.text);
		if (err && rc != SK_OK)
			err->http_status = (int)resp.status;
	}
	sk_http_response_dispose(&resp);
	return rc;
}
