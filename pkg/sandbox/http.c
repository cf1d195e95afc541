/*
 * sandbox/http: the HTTP layer of the provider clients, on one libcurl easy
 * handle per client (keep-alive), with connect and request timeouts, a cap on
 * the response size, Retry-After, and the one function that classifies
 * failures (sk_http_classify / transport_error).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "sandbox_int.h"

#define CONNECT_TIMEOUT_MAX_MS 10000

int
sk_http_init(sk_http *h, const char *base_url, const char *auth_prefix, const char *key,
        int64_t timeout_ms, bool insecure, sk_error *err)
{
	size_t n = base_url ? strlen(base_url) : 0;

	memset(h, 0, sizeof(*h));
	while (n > 0 && base_url[n - 1] == '/')
		n--;
	h->curl = curl_easy_init();
	if (h->curl == NULL)
		return sk_error_set(err, SK_ENOMEM, "curl_easy_init failed");
	h->base_url = sk_strndup(base_url ? base_url : "", n);
	if (auth_prefix && key) {
		h->auth_header = sk_asprintf("%s%s", auth_prefix, key);
		h->secret = h->auth_header + strlen(auth_prefix);
	}
	h->timeout_ms = timeout_ms > 0 ? timeout_ms : 30000;
	h->connect_timeout_ms =
	        h->timeout_ms < CONNECT_TIMEOUT_MAX_MS ? h->timeout_ms : CONNECT_TIMEOUT_MAX_MS;
	h->insecure = insecure;
	h->max_body = SK_HTTP_MAX_BODY;
	return SK_OK;
}

void
sk_http_dispose(sk_http *h)
{
	if (h->curl)
		curl_easy_cleanup(h->curl);
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
	char *e = curl_easy_escape(h->curl, s, 0);
	char *d = sk_strdup(e ? e : "");

	curl_free(e);
	return d;
}

int64_t
sk_http_parse_retry_after(const char *value, int64_t now_ms)
{
	char *end;
	long long secs;
	time_t t;

	while (*value == ' ' || *value == '\t')
		value++;
	if (isdigit((unsigned char)*value)) {
		secs = strtoll(value, &end, 10);
		while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
			end++;
		if (*end != '\0' || secs < 0 || secs > 86400LL * 365)
			return 0;
		return (int64_t)secs * 1000;
	}
	t = curl_getdate(value, NULL);
	if (t == (time_t)-1)
		return 0;
	return (int64_t)t * 1000 > now_ms ? (int64_t)t * 1000 - now_ms : 0;
}

static size_t
on_body(char *data, size_t size, size_t nmemb, void *payload)
{
	sk_http_response *r = payload;

	if (sk_buf_append(&r->body, data, size * nmemb) != SK_OK)
		return 0; /* aborts the transfer: CURLE_WRITE_ERROR */
	return size * nmemb;
}

static char *
header_value(const char *line, size_t len, const char *name)
{
	size_t n = strlen(name);
	size_t start, end;

	if (len <= n || strncasecmp(line, name, n) != 0 || line[n] != ':')
		return NULL;
	start = n + 1;
	end = len;
	while (start < end && (line[start] == ' ' || line[start] == '\t'))
		start++;
	while (end > start && isspace((unsigned char)line[end - 1]))
		end--;
	return sk_strndup(line + start, end - start);
}

static size_t
on_header(char *data, size_t size, size_t nmemb, void *payload)
{
	sk_http_response *r = payload;
	size_t len = size * nmemb;
	char *v;

	if ((v = header_value(data, len, "X-Next-Token")) != NULL) {
		free(r->next_token);
		r->next_token = v[0] ? v : NULL;
		if (!v[0])
			free(v);
	} else if ((v = header_value(data, len, "Retry-After")) != NULL) {
		r->retry_after_ms = sk_http_parse_retry_after(v, sk_now_ms());
		free(v);
	}
	return len;
}

static const char *
req_path(const sk_http_request *req)
{
	return req->path ? req->path : (req->url ? req->url : "/");
}

/* Transport failures: connect errors are SK_EUNAVAILABLE, timeouts SK_ETIMEOUT,
 * an oversized body SK_ENOMEM, anything else on the wire SK_EUNAVAILABLE. */
static int
transport_error(const sk_http_request *req, CURLcode cc, bool oversized, size_t max, sk_error *err)
{
	int code = SK_EUNAVAILABLE;

	if (err) {
		err->http_status = 0;
		err->retry_after_ms = 0;
	}
	if (oversized)
		return sk_error_set(err, SK_ENOMEM, "%s %s: response body larger than %zu bytes",
		        req->method, req_path(req), max);
	if (cc == CURLE_OPERATION_TIMEDOUT)
		code = SK_ETIMEOUT;
	return sk_error_set(
	        err, code, "%s %s: %s", req->method, req_path(req), curl_easy_strerror(cc));
}

/* curl's progress callback: non-zero aborts the transfer (CURLE_ABORTED_BY_CALLBACK). */
static int
on_progress(
        void *payload, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
	sk_http *h = payload;

	return h->abort(h->abort_payload) ? 1 : 0;
}

static int
aborted_error(const sk_http_request *req, sk_error *err)
{
	if (err) {
		err->http_status = 0;
		err->retry_after_ms = 0;
	}
	return sk_error_set(err, SK_EUNAVAILABLE, "%s %s: aborted: the client is stopping",
	        req->method, req_path(req));
}

static struct curl_slist *
build_headers(sk_http *h, const sk_http_request *req)
{
	struct curl_slist *list = NULL;

	list = curl_slist_append(list, "Accept: application/json");
	if (req->body)
		list = curl_slist_append(list, "Content-Type: application/json");
	list = curl_slist_append(list, "Expect:");
	if (req->auth && h->auth_header)
		list = curl_slist_append(list, h->auth_header);
	for (size_t i = 0; req->headers && req->headers[i]; i++)
		list = curl_slist_append(list, req->headers[i]);
	return list;
}

static void
setup_handle(sk_http *h, const sk_http_request *req, const char *url, sk_http_response *resp)
{
	CURL *c = h->curl;
	int64_t timeout = req->timeout_ms > 0 ? req->timeout_ms : h->timeout_ms;

	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
	        (long)(h->connect_timeout_ms < timeout ? h->connect_timeout_ms : timeout));
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, h->insecure ? 0L : 1L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, h->insecure ? 0L : 2L);
	curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)h->max_body);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, resp);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, resp);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "spacekeeper/0.1");
	if (h->abort) {
		curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(c, CURLOPT_XFERINFODATA, h);
		curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	}
	if (strcmp(req->method, "GET") == 0) {
		curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
	} else {
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
		if (req->body || strcmp(req->method, "DELETE") != 0) {
			curl_easy_setopt(c, CURLOPT_POSTFIELDS, req->body ? req->body : "");
			curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE,
			        (long)(req->body ? strlen(req->body) : 0));
		}
	}
}

void
sk_provider_set_abort(sk_provider *p, sk_provider_abort_fn fn, void *payload)
{
	p->http.abort = fn;
	p->http.abort_payload = payload;
}

void
sk_provider_set_observer(sk_provider *p, sk_provider_observer_fn fn, void *payload)
{
	p->http.observe = fn;
	p->http.observe_payload = payload;
	p->http.observe_name = p->cfg.name;
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

static double
seconds_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
observe_request(sk_http *h, const sk_http_request *req, long status, double t0)
{
	char endpoint[160];

	if (!h->observe)
		return;
	sk_sandbox_http_endpoint(
	        req->method, req->url ? req->url : req->path, endpoint, sizeof(endpoint));
	h->observe(h->observe_payload, h->observe_name ? h->observe_name : "", endpoint,
	        (int)status, seconds_now() - t0);
}

int
sk_http_do(sk_http *h, const sk_http_request *req, sk_http_response *resp, sk_error *err)
{
	double t0 = seconds_now();
	struct curl_slist *headers = build_headers(h, req);
	char *url = req->url ? sk_strdup(req->url) : sk_asprintf("%s%s", h->base_url, req->path);
	CURLcode cc;
	bool ran;
	int rc = SK_OK;

	memset(resp, 0, sizeof(*resp));
	resp->body.max = h->max_body;
	setup_handle(h, req, url, resp);
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, headers);
	/* A stopping client sends nothing (and counts no request). */
	ran = !(h->abort && h->abort(h->abort_payload));
	cc = ran ? curl_easy_perform(h->curl) : CURLE_ABORTED_BY_CALLBACK;
	if (cc == CURLE_ABORTED_BY_CALLBACK) {
		rc = aborted_error(req, err);
		sk_http_response_dispose(resp);
	} else if (cc == CURLE_OK) {
		curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &resp->status);
	} else {
		/* on_body only refuses data past the cap */
		bool oversized = cc == CURLE_FILESIZE_EXCEEDED || cc == CURLE_WRITE_ERROR;
		rc = transport_error(req, cc, oversized, h->max_body, err);
		sk_http_response_dispose(resp);
	}
	if (ran)
		observe_request(h, req, rc == SK_OK ? resp->status : 0, t0);
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(headers);
	free(url);
	return rc;
}

static int
status_code(long status)
{
	if (status == 404)
		return SK_ENOTFOUND;
	if (status == 409)
		return SK_ECONFLICT;
	if (status == 401 || status == 403)
		return SK_EUNAUTHORIZED;
	if (status == 408 || status == 429 || status >= 500)
		return SK_ETRANSIENT;
	if (status >= 400)
		return SK_ETERMINAL;
	return SK_ETERMINAL; /* 1xx/3xx: not followed, not expected */
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
	char pmsg[512];
	int code;

	if (resp->status >= 200 && resp->status < 300)
		return SK_OK;
	code = status_code(resp->status);
	provider_message(resp, pmsg, sizeof(pmsg));
	sk_error_set(err, code, "%s %s: HTTP %ld%s%s", req->method, req_path(req), resp->status,
	        pmsg[0] ? ": " : "", pmsg);
	if (err) {
		err->http_status = (int)resp->status;
		err->retry_after_ms = resp->retry_after_ms;
		sk_blank_secret(err->message, h->secret); /* even if a provider echoes the key */
	}
	return code;
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

/* ---- streamed bodies (workspace files) ---- */

#define SK_HTTP_STREAM_BUF (256 * 1024)

/* A 2xx body goes to the sink; any other is kept (capped) for the message. */
static size_t
on_stream_body(char *data, size_t size, size_t nmemb, void *payload)
{
	sk_http_stream *st = payload;
	size_t n = size * nmemb;
	long status = 0;

	curl_easy_getinfo(st->curl, CURLINFO_RESPONSE_CODE, &status);
	if (status < 200 || status >= 300) {
		sk_buf_append(&st->resp->body, data, n); /* past the cap: message cut */
		return n;
	}
	if (st->sink && (st->cb_rc = st->sink(st->sink_payload, data, n)) < 0)
		return 0; /* CURLE_WRITE_ERROR */
	st->cb_rc = 0;
	return n;
}

static size_t
on_stream_read(char *buf, size_t size, size_t nmemb, void *payload)
{
	sk_http_stream *st = payload;
	int64_t n = st->source(st->source_payload, buf, size * nmemb);

	if (n < 0) {
		st->cb_rc = (int)n;
		return CURL_READFUNC_ABORT;
	}
	return (size_t)n;
}

/* No cap on the whole transfer: a stall (no byte for the request timeout) ends it. */
static void
setup_stream(sk_http *h, const sk_http_request *req, sk_http_stream *st)
{
	CURL *c = h->curl;
	int64_t timeout = req->timeout_ms > 0 ? req->timeout_ms : h->timeout_ms;

	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 0L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)((timeout + 999) / 1000));
	curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)0);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_stream_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, st);
	/* Large blocks: fewer recv/send calls, callbacks, ring wake-ups and
	 * hash updates per byte (the defaults are 16 KiB down, 64 KiB up);
	 * curl_easy_reset puts them back for the small API calls. */
	curl_easy_setopt(c, CURLOPT_BUFFERSIZE, (long)SK_HTTP_STREAM_BUF);
	curl_easy_setopt(c, CURLOPT_UPLOAD_BUFFERSIZE, (long)SK_HTTP_STREAM_BUF);
	if (st->source && st->mime_name) {
		curl_mimepart *part;
		st->mime = curl_mime_init(c);
		part = curl_mime_addpart(st->mime);
		curl_mime_name(part, st->mime_name);
		curl_mime_filename(part, st->mime_filename);
		curl_mime_type(part, "application/octet-stream");
		curl_mime_data_cb(part, (curl_off_t)st->size, on_stream_read, NULL, NULL, st);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, NULL);
		curl_easy_setopt(c, CURLOPT_MIMEPOST, st->mime);
	} else if (st->source) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, NULL);
		curl_easy_setopt(c, CURLOPT_POST, 1L);
		curl_easy_setopt(c, CURLOPT_READFUNCTION, on_stream_read);
		curl_easy_setopt(c, CURLOPT_READDATA, st);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)st->size);
	}
}

int
sk_http_stream_do(sk_http *h, const sk_http_request *req, sk_http_stream *st,
        sk_http_response *resp, sk_error *err)
{
	double t0 = seconds_now();
	struct curl_slist *headers = build_headers(h, req);
	char *url = req->url ? sk_strdup(req->url) : sk_asprintf("%s%s", h->base_url, req->path);
	CURLcode cc;
	int rc = SK_OK;

	memset(resp, 0, sizeof(*resp));
	resp->body.max = 64 * 1024;
	st->curl = h->curl;
	st->resp = resp;
	st->cb_rc = 0;
	setup_handle(h, req, url, resp);
	setup_stream(h, req, st);
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, headers);
	cc = curl_easy_perform(h->curl);
	if (cc == CURLE_OK) {
		curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &resp->status);
	} else if (st->cb_rc < 0) {
		rc = sk_error_set(err, st->cb_rc, "%s %s: the transfer was stopped by its %s",
		        req->method, req_path(req), st->source ? "source" : "sink");
		sk_http_response_dispose(resp);
	} else {
		rc = transport_error(req, cc, false, 0, err);
		sk_http_response_dispose(resp);
	}
	observe_request(h, req, rc == SK_OK ? resp->status : 0, t0);
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(h->curl, CURLOPT_MIMEPOST, NULL);
	curl_mime_free(st->mime);
	st->mime = NULL;
	curl_slist_free_all(headers);
	free(url);
	return rc;
}
