/*
 * httpc: the one HTTP client layer on libcurl. The provider clients
 * (sandbox/http.c), the object store (objstore/s3.c) and the controller's
 * forwarding (controller/forward.c) all send their requests here.
 *
 * A client owns one libcurl easy handle, reset per request and kept across
 * requests (keep-alive); it is used by one thread at a time.
 *
 * Timeouts. A request whose bodies are in memory has a total timeout (the
 * request's, else the client's); a streamed one (a source or a sink) has
 * none and fails when no byte moves for that long. The connect timeout is
 * the least of the client's connect timeout and the request's timeout.
 *
 * Classification, the one place an HTTP status becomes an error
 * (sk_httpc_status_error): 2xx 0; 404 SK_ENOTFOUND; 409 SK_ECONFLICT; 401
 * and 403 SK_EUNAUTHORIZED; 408, 429 and 5xx SK_ETRANSIENT; any other
 * SK_ETERMINAL. No answer: SK_ETIMEOUT for a timeout, SK_EUNAVAILABLE
 * otherwise; a body past the cap SK_ENOMEM.
 *
 * Retries by status. A client with attempts > 1 sends a request again when
 * its answer is retryable (sk_httpc_retryable: no answer, 408, 429, 5xx)
 * and its body can be sent again (not streamed), after the longer of
 * attempt * backoff and the answer's Retry-After, at most backoff_max. With
 * attempts 0 or 1 (the default) the caller decides what a failure means.
 *
 * Redaction. The secrets a client is given (API keys, tokens, S3 keys) and
 * the value of any Signature= or Credential= (SigV4) never reach a message
 * this layer writes (sk_httpc_fail, transport errors); sk_httpc_redact does
 * the same for a caller's own text.
 */
#ifndef SK_HTTPC_H
#define SK_HTTPC_H

#include <curl/curl.h>

#include "../util/util.h"

#define SK_HTTPC_MAX_BODY (8u * 1024 * 1024)
#define SK_HTTPC_MAX_SECRETS 4

/* A body's source: up to len bytes into buf; the count, 0 at the end, or a
 * negative SK_E* that stops the transfer (and is returned). */
typedef int64_t (*sk_httpc_source_fn)(void *payload, void *buf, size_t len);
/* A 2xx body's sink, chunk by chunk; a negative SK_E* stops the transfer. */
typedef int (*sk_httpc_sink_fn)(void *payload, const void *buf, size_t len);
/* True when the client is stopping: nothing more is sent. */
typedef bool (*sk_httpc_abort_fn)(void *payload);

typedef struct sk_httpc_request sk_httpc_request;
/* Called after every attempt that went on the wire: its status (0: no
 * answer) and its duration. */
typedef void (*sk_httpc_observe_fn)(
        void *payload, const sk_httpc_request *req, long status, double seconds);

typedef struct sk_httpc_config {
	int64_t timeout_ms; /* per request; 0: 30 s */
	int64_t connect_timeout_ms; /* 0: 10 s */
	bool insecure; /* TLS without checking the peer's certificate */
	const char *pin; /* TLS public key pin ("sha256//..."): the pin is the check */
	size_t max_body; /* cap on a body kept in memory; 0: SK_HTTPC_MAX_BODY */
	const char *aws_sigv4; /* "aws:amz:REGION:s3": SigV4-signed with username/password */
	const char *username, *password; /* secrets, redacted */
	int attempts; /* tries of a retryable request; 0 or 1: one */
	int64_t backoff_ms; /* 0: 200 ms */
	int64_t backoff_max_ms; /* 0: 10 s */
} sk_httpc_config;

typedef struct sk_httpc {
	CURL *curl;
	sk_httpc_config cfg; /* strings owned */
	char *secrets[SK_HTTPC_MAX_SECRETS];
	sk_httpc_abort_fn abort;
	void *abort_payload;
	sk_httpc_observe_fn observe;
	void *observe_payload;
} sk_httpc;

struct sk_httpc_request {
	const char *method; /* GET HEAD POST PUT DELETE */
	const char *url; /* absolute */
	const char *path; /* the URL's path for messages; NULL: url */
	const char *name; /* names the request in messages; NULL: "METHOD path" */
	const char *const *headers; /* "K: V" lines, NULL-terminated; may be NULL */
	const void *body; /* in memory; NULL: no body */
	size_t body_len;
	int64_t timeout_ms; /* 0: the client's */
	/* streamed: a request body of size bytes from source (PUT: an upload,
	 * other methods: the body of that method; with mime_name the one part
	 * of a multipart/form-data body), a 2xx answer to sink */
	sk_httpc_source_fn source;
	void *source_payload;
	uint64_t size;
	const char *mime_name, *mime_filename;
	sk_httpc_sink_fn sink;
	void *sink_payload;
	size_t read_block; /* receive and send buffer when streamed; 0: libcurl's */
	const char *capture; /* one more response header to keep (resp->captured) */
	const void *caller; /* passed back to the observer */
};

typedef struct sk_httpc_response {
	long status; /* 0: no answer */
	sk_buf body; /* a body not given to a sink (a streamed error's is capped at 64 KiB) */
	int64_t retry_after_ms; /* Retry-After, 0 when absent */
	char content_type[96];
	char etag[128];
	uint64_t content_length;
	char *captured; /* the value of req->capture, NULL when absent or empty */
	int attempts; /* how many times it was sent */
} sk_httpc_response;

int sk_httpc_init(sk_httpc *c, const sk_httpc_config *cfg, sk_error *err);
void sk_httpc_dispose(sk_httpc *c);
/* A secret to redact from every message (copied; at most SK_HTTPC_MAX_SECRETS). */
void sk_httpc_add_secret(sk_httpc *c, const char *secret);
void sk_httpc_set_abort(sk_httpc *c, sk_httpc_abort_fn fn, void *payload);
void sk_httpc_set_observer(sk_httpc *c, sk_httpc_observe_fn fn, void *payload);

/* Sends req (again while retryable, see above). 0 when an answer arrived,
 * whatever its status (resp->status); else the transport failure, resp
 * empty. A source's or sink's negative SK_E* is returned as is. Dispose
 * resp either way. */
int sk_httpc_do(sk_httpc *c, const sk_httpc_request *req, sk_httpc_response *resp, sk_error *err);
void sk_httpc_response_dispose(sk_httpc_response *r);

/* The classifier (see above). */
int sk_httpc_status_error(long status);
/* True for a failure that the same request may not meet again: no answer
 * (status 0), 408, 429, 5xx. */
bool sk_httpc_retryable(long status);
/* A non-2xx answer as an error: the classifier's code, err->http_status,
 * err->retry_after_ms, the message from fmt, redacted. Returns the code. */
int sk_httpc_fail(const sk_httpc *c, const sk_httpc_response *resp, sk_error *err, const char *fmt,
        ...) __attribute__((format(printf, 4, 5)));
/* Masks the client's secrets and SigV4 signatures and credentials in msg. */
void sk_httpc_redact(const sk_httpc *c, char *msg);
/* Milliseconds from a Retry-After value (delta seconds or an HTTP date); 0 if unparsable. */
int64_t sk_httpc_parse_retry_after(const char *value, int64_t now_ms);
/* URL-escapes s (caller frees). */
char *sk_httpc_escape(sk_httpc *c, const char *s);

#endif
