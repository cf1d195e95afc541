/*
 * httpc: the shared HTTP client (see httpc.h): handle setup, timeouts,
 * response headers, the status classifier, retries and redaction.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "httpc.h"

#define DEFAULT_TIMEOUT_MS 30000
#define DEFAULT_CONNECT_TIMEOUT_MS 10000
#define DEFAULT_BACKOFF_MS 200
#define DEFAULT_BACKOFF_MAX_MS 10000
#define STREAM_ERROR_BODY_MAX (64 * 1024)
#define USER_AGENT "spacekeeper/0.1"

static char *
dup_or_null(const char *s)
{
	return s ? sk_strdup(s) : NULL;
}

int
sk_httpc_init(sk_httpc *c, const sk_httpc_config *cfg, sk_error *err)
{
	memset(c, 0, sizeof(*c));
	c->curl = curl_easy_init();
	if (c->curl == NULL)
		return sk_error_set(err, SK_ENOMEM, "curl_easy_init failed");
	c->cfg = *cfg;
	if (c->cfg.timeout_ms <= 0)
		c->cfg.timeout_ms = DEFAULT_TIMEOUT_MS;
	if (c->cfg.connect_timeout_ms <= 0)
		c->cfg.connect_timeout_ms = DEFAULT_CONNECT_TIMEOUT_MS;
	if (c->cfg.max_body == 0)
		c->cfg.max_body = SK_HTTPC_MAX_BODY;
	if (c->cfg.attempts < 1)
		c->cfg.attempts = 1;
	if (c->cfg.backoff_ms <= 0)
		c->cfg.backoff_ms = DEFAULT_BACKOFF_MS;
	if (c->cfg.backoff_max_ms <= 0)
		c->cfg.backoff_max_ms = DEFAULT_BACKOFF_MAX_MS;
	c->cfg.pin = dup_or_null(cfg->pin);
	c->cfg.aws_sigv4 = dup_or_null(cfg->aws_sigv4);
	c->cfg.username = dup_or_null(cfg->username);
	c->cfg.password = dup_or_null(cfg->password);
	sk_httpc_add_secret(c, cfg->username);
	sk_httpc_add_secret(c, cfg->password);
	return SK_OK;
}

void
sk_httpc_dispose(sk_httpc *c)
{
	if (c->curl)
		curl_easy_cleanup(c->curl);
	free((char *)c->cfg.pin);
	free((char *)c->cfg.aws_sigv4);
	sk_wipe_free((char *)c->cfg.username);
	sk_wipe_free((char *)c->cfg.password);
	for (int i = 0; i < SK_HTTPC_MAX_SECRETS; i++)
		sk_wipe_free(c->secrets[i]);
	memset(c, 0, sizeof(*c));
}

void
sk_httpc_add_secret(sk_httpc *c, const char *secret)
{
	for (int i = 0; secret && secret[0] && i < SK_HTTPC_MAX_SECRETS; i++) {
		if (c->secrets[i] == NULL) {
			c->secrets[i] = sk_strdup(secret);
			return;
		}
	}
}

void
sk_httpc_set_abort(sk_httpc *c, sk_httpc_abort_fn fn, void *payload)
{
	c->abort = fn;
	c->abort_payload = payload;
}

void
sk_httpc_set_observer(sk_httpc *c, sk_httpc_observe_fn fn, void *payload)
{
	c->observe = fn;
	c->observe_payload = payload;
}

void
sk_httpc_response_dispose(sk_httpc_response *r)
{
	sk_buf_dispose(&r->body);
	free(r->captured);
	memset(r, 0, sizeof(*r));
}

char *
sk_httpc_escape(sk_httpc *c, const char *s)
{
	char *e = curl_easy_escape(c->curl, s, 0);
	char *d = sk_strdup(e ? e : "");

	curl_free(e);
	return d;
}

/* ---- classification and redaction ---- */

int
sk_httpc_status_error(long status)
{
	if (status >= 200 && status < 300)
		return SK_OK;
	if (status == 404)
		return SK_ENOTFOUND;
	if (status == 409)
		return SK_ECONFLICT;
	if (status == 401 || status == 403)
		return SK_EUNAUTHORIZED;
	if (sk_httpc_retryable(status))
		return SK_ETRANSIENT;
	return SK_ETERMINAL; /* other 4xx; 1xx/3xx: not followed, not expected */
}

bool
sk_httpc_retryable(long status)
{
	return status == 0 || status == 408 || status == 429 || status >= 500;
}

static void
mask_secret(char *msg, const char *secret)
{
	size_t n = secret ? strlen(secret) : 0;
	char *p;

	if (n < 4)
		return;
	while ((p = strstr(msg, secret)) != NULL)
		memset(p, '*', n);
}

/* The value after NAME= (SigV4's Authorization header and query) masked. */
static void
mask_value_after(char *msg, const char *name)
{
	size_t n = strlen(name);

	for (char *p = strcasestr(msg, name); p; p = strcasestr(p, name)) {
		p += n;
		while (*p && !strchr("&,; \t\r\n\"'<>", *p))
			*p++ = '*';
	}
}

void
sk_httpc_redact(const sk_httpc *c, char *msg)
{
	for (int i = 0; c && i < SK_HTTPC_MAX_SECRETS; i++)
		mask_secret(msg, c->secrets[i]);
	mask_value_after(msg, "Signature=");
	mask_value_after(msg, "Credential=");
}

int
sk_httpc_fail(const sk_httpc *c, const sk_httpc_response *resp, sk_error *err, const char *fmt, ...)
{
	int code = sk_httpc_status_error(resp->status);
	va_list ap;

	if (err == NULL)
		return code;
	err->code = code;
	err->domain = SK_EDOMAIN_NONE;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	err->http_status = (int)resp->status;
	err->retry_after_ms = resp->retry_after_ms;
	sk_httpc_redact(c, err->message);
	return code;
}

int64_t
sk_httpc_parse_retry_after(const char *value, int64_t now_ms)
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

/* ---- one transfer ---- */

/* What the callbacks of one transfer share. */
typedef struct transfer {
	sk_httpc *c;
	const sk_httpc_request *req;
	sk_httpc_response *resp;
	int cb_rc; /* a source's or sink's failure */
	curl_mime *mime;
} transfer;

static bool
streamed(const sk_httpc_request *req)
{
	return req->source != NULL || req->sink != NULL;
}

static size_t
on_body(char *data, size_t size, size_t nmemb, void *payload)
{
	transfer *t = payload;
	size_t n = size * nmemb;
	long status = 0;

	if (t->req->sink) {
		curl_easy_getinfo(t->c->curl, CURLINFO_RESPONSE_CODE, &status);
		if (status >= 200 && status < 300) {
			if ((t->cb_rc = t->req->sink(t->req->sink_payload, data, n)) < 0)
				return 0; /* CURLE_WRITE_ERROR */
			t->cb_rc = 0;
			return n;
		}
		sk_buf_append(&t->resp->body, data, n); /* an error's text, cut at the cap */
		return n;
	}
	if (sk_buf_append(&t->resp->body, data, n) != SK_OK)
		return 0; /* past the cap: CURLE_WRITE_ERROR */
	return n;
}

static size_t
on_read(char *buf, size_t size, size_t nmemb, void *payload)
{
	transfer *t = payload;
	int64_t n = t->req->source(t->req->source_payload, buf, size * nmemb);

	if (n < 0) {
		t->cb_rc = (int)n;
		return CURL_READFUNC_ABORT;
	}
	return (size_t)n;
}

/* The value of header NAME in line, trimmed; NULL when line is another header. */
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
	transfer *t = payload;
	sk_httpc_response *r = t->resp;
	size_t len = size * nmemb;
	char *v;

	if (t->req->capture && (v = header_value(data, len, t->req->capture)) != NULL) {
		free(r->captured);
		r->captured = v[0] ? v : NULL;
		if (!v[0])
			free(v);
	} else if ((v = header_value(data, len, "Retry-After")) != NULL) {
		r->retry_after_ms = sk_httpc_parse_retry_after(v, sk_now_ms());
		free(v);
	} else if ((v = header_value(data, len, "Content-Type")) != NULL) {
		snprintf(r->content_type, sizeof(r->content_type), "%s", v);
		free(v);
	} else if ((v = header_value(data, len, "ETag")) != NULL) {
		snprintf(r->etag, sizeof(r->etag), "%s", v);
		free(v);
	} else if ((v = header_value(data, len, "Content-Length")) != NULL) {
		r->content_length = strtoull(v, NULL, 10);
		free(v);
	}
	return len;
}

/* curl's progress callback: non-zero aborts the transfer (CURLE_ABORTED_BY_CALLBACK). */
static int
on_progress(
        void *payload, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
	sk_httpc *c = payload;

	return c->abort(c->abort_payload) ? 1 : 0;
}

/* "METHOD path", or the caller's name for the request. */
static void
req_name(const sk_httpc_request *req, char *out, size_t len)
{
	if (req->name)
		snprintf(out, len, "%s", req->name);
	else
		snprintf(out, len, "%s %s", req->method,
		        req->path ? req->path : (req->url ? req->url : "/"));
}

static void
set_timeouts(sk_httpc *c, const sk_httpc_request *req)
{
	int64_t timeout = req->timeout_ms > 0 ? req->timeout_ms : c->cfg.timeout_ms;
	int64_t connect = c->cfg.connect_timeout_ms < timeout ? c->cfg.connect_timeout_ms : timeout;

	curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)connect);
	if (streamed(req)) {
		/* no cap on the whole transfer: a stall (no byte for the timeout) ends it */
		curl_easy_setopt(c->curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
		curl_easy_setopt(c->curl, CURLOPT_LOW_SPEED_TIME, (long)((timeout + 999) / 1000));
	} else {
		curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, (long)timeout);
		if (strcmp(req->method, "HEAD") != 0) /* a HEAD's Content-Length is no body */
			curl_easy_setopt(
			        c->curl, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)c->cfg.max_body);
	}
}

static void
set_tls_and_auth(sk_httpc *c)
{
	CURL *h = c->curl;

	if (c->cfg.pin) {
		curl_easy_setopt(h, CURLOPT_PINNEDPUBLICKEY, c->cfg.pin);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L); /* the pin is the check */
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	} else {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, c->cfg.insecure ? 0L : 1L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, c->cfg.insecure ? 0L : 2L);
	}
	if (c->cfg.aws_sigv4) {
		curl_easy_setopt(h, CURLOPT_AWS_SIGV4, c->cfg.aws_sigv4);
		curl_easy_setopt(h, CURLOPT_USERNAME, c->cfg.username ? c->cfg.username : "");
		curl_easy_setopt(h, CURLOPT_PASSWORD, c->cfg.password ? c->cfg.password : "");
	}
}

/* The request body: in memory, streamed from a source, or none. */
static void
set_body(transfer *t)
{
	CURL *h = t->c->curl;
	const sk_httpc_request *req = t->req;

	if (strcmp(req->method, "GET") == 0) {
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
		return;
	}
	if (strcmp(req->method, "HEAD") == 0)
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	else
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req->method);
	if (req->source && req->mime_name) {
		curl_mimepart *part;
		t->mime = curl_mime_init(h);
		part = curl_mime_addpart(t->mime);
		curl_mime_name(part, req->mime_name);
		curl_mime_filename(part, req->mime_filename);
		curl_mime_type(part, "application/octet-stream");
		curl_mime_data_cb(part, (curl_off_t)req->size, on_read, NULL, NULL, t);
		curl_easy_setopt(h, CURLOPT_MIMEPOST, t->mime);
	} else if (req->source && strcmp(req->method, "PUT") == 0) {
		curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(h, CURLOPT_READDATA, t);
		curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)req->size);
	} else if (req->source) {
		curl_easy_setopt(h, CURLOPT_POST, 1L);
		curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(h, CURLOPT_READDATA, t);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->size);
	} else if (req->body) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, req->body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
	}
}

static void
setup(transfer *t, struct curl_slist *headers)
{
	sk_httpc *c = t->c;
	CURL *h = c->curl;

	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, t->req->url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_USERAGENT, USER_AGENT);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, t);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, t);
	if (streamed(t->req) && t->req->read_block > 0) {
		curl_easy_setopt(h, CURLOPT_BUFFERSIZE, (long)t->req->read_block);
		curl_easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE, (long)t->req->read_block);
	}
	if (c->abort) {
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(h, CURLOPT_XFERINFODATA, c);
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	}
	set_timeouts(c, t->req);
	set_tls_and_auth(c);
	set_body(t);
}

/* No answer: SK_ETIMEOUT for a timeout, SK_ENOMEM for a body past the cap,
 * SK_EUNAVAILABLE for anything else on the wire. */
static int
transport_error(transfer *t, CURLcode cc, sk_error *err)
{
	const sk_httpc_request *req = t->req;
	int code = cc == CURLE_OPERATION_TIMEDOUT ? SK_ETIMEOUT : SK_EUNAVAILABLE;
	char name[600];

	req_name(req, name, sizeof(name));
	if (t->cb_rc < 0)
		code = sk_error_set(err, t->cb_rc, "%s: the transfer was stopped by its %s", name,
		        req->source ? "source" : "sink");
	else if (cc == CURLE_ABORTED_BY_CALLBACK)
		code = sk_error_set(
		        err, SK_EUNAVAILABLE, "%s: aborted: the client is stopping", name);
	else if (!req->sink && (cc == CURLE_FILESIZE_EXCEEDED || cc == CURLE_WRITE_ERROR))
		code = sk_error_set(err, SK_ENOMEM, "%s: response body larger than %zu bytes", name,
		        t->c->cfg.max_body);
	else
		sk_error_set(err, code, "%s: %s", name, curl_easy_strerror(cc));
	if (err) {
		err->http_status = 0;
		err->retry_after_ms = 0;
		sk_httpc_redact(t->c, err->message);
	}
	return code;
}

static double
seconds_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool
stopping(const sk_httpc *c)
{
	return c->abort && c->abort(c->abort_payload);
}

/* One attempt. A stopping client sends nothing (and observes no request). */
static int
attempt(sk_httpc *c, const sk_httpc_request *req, sk_httpc_response *resp, sk_error *err)
{
	transfer t = { .c = c, .req = req, .resp = resp };
	struct curl_slist *headers = NULL;
	double t0 = seconds_now();
	CURLcode cc;
	int rc = SK_OK;

	memset(resp, 0, sizeof(*resp));
	resp->body.max = req->sink ? STREAM_ERROR_BODY_MAX : c->cfg.max_body;
	if (stopping(c))
		return transport_error(&t, CURLE_ABORTED_BY_CALLBACK, err);
	for (size_t i = 0; req->headers && req->headers[i]; i++)
		headers = curl_slist_append(headers, req->headers[i]);
	setup(&t, headers);
	cc = curl_easy_perform(c->curl);
	if (cc == CURLE_OK)
		curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &resp->status);
	else
		rc = transport_error(&t, cc, err);
	if (c->observe)
		c->observe(c->observe_payload, req, rc == SK_OK ? resp->status : 0,
		        seconds_now() - t0);
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(c->curl, CURLOPT_MIMEPOST, NULL);
	curl_mime_free(t.mime);
	curl_slist_free_all(headers);
	if (rc != SK_OK)
		sk_httpc_response_dispose(resp);
	return rc;
}

/* The wait before attempt n + 1, or -1 when the answer is final. */
static int64_t
retry_wait_ms(const sk_httpc *c, const sk_httpc_request *req, int n, int rc,
        const sk_httpc_response *resp, const sk_error *err)
{
	int64_t ms = c->cfg.backoff_ms * n, after;

	if (n >= c->cfg.attempts || req->source || req->sink || stopping(c))
		return -1;
	if (rc != SK_OK && rc != SK_ETIMEOUT && rc != SK_EUNAVAILABLE)
		return -1; /* a body past the cap is no better next time */
	if (rc == SK_OK && !sk_httpc_retryable(resp->status))
		return -1;
	after = rc == SK_OK ? resp->retry_after_ms : (err ? err->retry_after_ms : 0);
	if (after > ms)
		ms = after;
	return ms < c->cfg.backoff_max_ms ? ms : c->cfg.backoff_max_ms;
}

int
sk_httpc_do(sk_httpc *c, const sk_httpc_request *req, sk_httpc_response *resp, sk_error *err)
{
	int64_t wait;
	int rc;

	for (int n = 1;; n++) {
		rc = attempt(c, req, resp, err);
		resp->attempts = n;
		wait = retry_wait_ms(c, req, n, rc, resp, err);
		if (wait < 0)
			return rc;
		sk_httpc_response_dispose(resp);
		usleep((useconds_t)(wait * 1000));
	}
}
