/*
 * objstore/s3: the S3 client (see objstore.h), on the shared HTTP client
 * (httpc: one curl handle per client, reset per request; SigV4 signing,
 * timeouts, the status classifier and the keys' redaction are there). Queries are written already in SigV4's canonical form
 * (sorted by name, every value percent-encoded, "uploads=" with its '='),
 * so the query libcurl signs is the one the server canonicalizes.
 */
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../httpc/httpc.h"
#include "objstore.h"

#define DEFAULT_PART_BYTES ((size_t)8 << 20)
#define MIN_PART_BYTES ((size_t)5 << 20)
#define XML_MAX_BYTES ((size_t)4 << 20)

struct sk_s3 {
	sk_httpc h;
	char *endpoint, *bucket;
	size_t part_bytes;
};

/* One request: what to send and where the answer goes. */
typedef struct s3_req {
	const char *method;
	const char *key; /* NULL: the bucket */
	const char *query; /* canonical, without '?'; NULL none */
	/* body: bytes in memory, or size bytes from source; neither: none */
	const void *data;
	size_t len;
	sk_s3_source_fn source;
	void *payload;
	uint64_t size;
	/* answer: a 2xx body goes to sink when set, else into body */
	sk_s3_sink_fn sink;
	void *sink_payload;
	sk_buf body;
	char etag[128];
	uint64_t content_length;
	long status;
} s3_req;

static char *
dup_trim_slash(const char *s)
{
	size_t n = strlen(s);

	while (n > 0 && s[n - 1] == '/')
		n--;
	return sk_strndup(s, n);
}

int
sk_s3_new(const sk_s3_config *cfg, sk_s3 **out, sk_error *err)
{
	sk_s3 *s;
	char *sigv4;
	int rc;

	*out = NULL;
	if (cfg->endpoint == NULL || cfg->bucket == NULL || cfg->access_key == NULL ||
	        cfg->secret_key == NULL || cfg->endpoint[0] == '\0' || cfg->bucket[0] == '\0')
		return sk_error_set(err, SK_EINVALID,
		        "object store: endpoint, bucket and both keys are required");
	if (strchr(cfg->access_key, ':') != NULL)
		return sk_error_set(err, SK_EINVALID, "object store: the access key holds a ':'");
	s = sk_calloc(1, sizeof(*s));
	sigv4 = sk_asprintf(
	        "aws:amz:%s:s3", cfg->region && *cfg->region ? cfg->region : "us-east-1");
	rc = sk_httpc_init(&s->h,
	        &(sk_httpc_config){ .timeout_ms = cfg->request_timeout_ms,
	                .max_body = XML_MAX_BYTES,
	                .aws_sigv4 = sigv4,
	                .username = cfg->access_key,
	                .password = cfg->secret_key },
	        err);
	free(sigv4);
	if (rc != 0) {
		free(s);
		return rc;
	}
	s->endpoint = dup_trim_slash(cfg->endpoint);
	s->bucket = sk_strdup(cfg->bucket);
	s->part_bytes = cfg->part_bytes >= MIN_PART_BYTES ? cfg->part_bytes : DEFAULT_PART_BYTES;
	*out = s;
	return 0;
}

void
sk_s3_free(sk_s3 *s)
{
	if (s == NULL)
		return;
	sk_httpc_dispose(&s->h);
	free(s->endpoint);
	free(s->bucket);
	free(s);
}

/* Percent-encoding of RFC 3986's unreserved set; '/' kept when keep_slash. */
static void
encode(sk_buf *b, const char *s, bool keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		        c == '-' || c == '_' || c == '.' || c == '~' || (c == '/' && keep_slash)) {
			sk_buf_append(b, s, 1);
		} else {
			char e[3] = { '%', hex[c >> 4], hex[c & 15] };
			sk_buf_append(b, e, 3);
		}
	}
}

/* The hex SHA-256 of a body held in memory (signed as x-amz-content-sha256). */
static void
sha256_hex(const void *data, size_t len, char out[65])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char d[32];

	if (gnutls_hash_fast(GNUTLS_DIG_SHA256, data, len, d) != 0) {
		out[0] = '\0'; /* the server refuses the request */
		return;
	}
	for (int i = 0; i < 32; i++) {
		out[2 * i] = hex[d[i] >> 4];
		out[2 * i + 1] = hex[d[i] & 15];
	}
	out[64] = '\0';
}

/* The text between <tag> and </tag> from *from on (XML entities decoded);
 * NULL when absent. *from moves past it. Caller frees. */
static char *
xml_take(const char *doc, const char **from, const char *tag)
{
	char open[64], close[64];
	const char *a, *z;
	sk_buf b = SK_BUF_INIT(0);

	snprintf(open, sizeof(open), "<%s>", tag);
	snprintf(close, sizeof(close), "</%s>", tag);
	a = strstr(from && *from ? *from : doc, open);
	if (a == NULL)
		return NULL;
	a += strlen(open);
	if ((z = strstr(a, close)) == NULL)
		return NULL;
	for (const char *p = a; p < z; p++) {
		static const char *const ent[][2] = { { "&amp;", "&" }, { "&lt;", "<" },
			{ "&gt;", ">" }, { "&quot;", "\"" }, { "&apos;", "'" } };
		size_t e;
		for (e = 0; e < 5 && strncmp(p, ent[e][0], strlen(ent[e][0])) != 0; e++)
			;
		if (e < 5) {
			sk_buf_append(&b, ent[e][1], 1);
			p += strlen(ent[e][0]) - 1;
		} else {
			sk_buf_append(&b, p, 1);
		}
	}
	if (from)
		*from = z + strlen(close);
	sk_buf_append(&b, "", 0);
	return sk_buf_detach(&b);
}

/* A failed answer: httpc's classifier, the S3 error code and message. */
static int
classify(const sk_s3 *s, s3_req *r, const char *what, sk_error *err)
{
	const char *doc = r->body.data ? r->body.data : "";
	char *code = xml_take(doc, NULL, "Code"), *msg = xml_take(doc, NULL, "Message");
	sk_httpc_response answer = { .status = r->status };
	int rc;

	rc = sk_httpc_fail(&s->h, &answer, err, "%s: %ld %s%s%s", what, r->status,
	        code ? code : (r->status == 404 ? "NotFound" : "error"), msg ? ": " : "",
	        msg ? msg : "");
	free(code);
	free(msg);
	return rc;
}

/* Runs r; 0 on a 2xx, else the classified failure naming what. */
static int
perform(sk_s3 *s, s3_req *r, const char *what, sk_error *err)
{
	sk_buf url = SK_BUF_INIT(0);
	char sha[128], hexsum[65];
	const char *headers[3] = { sha, NULL, NULL };
	sk_httpc_request req = { .method = r->method,
		.name = what,
		.headers = headers,
		.source = r->source,
		.source_payload = r->payload,
		.size = r->size,
		.sink = r->sink,
		.sink_payload = r->sink_payload };
	sk_httpc_response resp;
	int rc;

	sk_buf_printf(&url, "%s/", s->endpoint);
	encode(&url, s->bucket, false);
	if (r->key != NULL) {
		sk_buf_append(&url, "/", 1);
		encode(&url, r->key, true);
	}
	if (r->query != NULL)
		sk_buf_printf(&url, "?%s", r->query);
	req.url = url.data;
	if (r->source != NULL) {
		/* streamed: the payload is not hashed; a stalled transfer ends it */
		snprintf(sha, sizeof(sha), "x-amz-content-sha256: UNSIGNED-PAYLOAD");
		headers[1] = "Expect:";
	} else {
		sha256_hex(r->data ? r->data : "", r->data ? r->len : 0, hexsum);
		snprintf(sha, sizeof(sha), "x-amz-content-sha256: %s", hexsum);
		req.body = r->data;
		req.body_len = r->len;
	}
	rc = sk_httpc_do(&s->h, &req, &resp, err);
	sk_buf_dispose(&url);
	r->status = resp.status;
	r->body = resp.body;
	resp.body = (sk_buf)SK_BUF_INIT(0);
	snprintf(r->etag, sizeof(r->etag), "%s", resp.etag);
	r->content_length = resp.content_length;
	sk_httpc_response_dispose(&resp);
	if (rc == 0 && (r->status < 200 || r->status >= 300))
		rc = classify(s, r, what, err);
	return rc;
}

static void
req_dispose(s3_req *r)
{
	sk_buf_dispose(&r->body);
}

int
sk_s3_check_bucket(sk_s3 *s, sk_error *err)
{
	s3_req r = { .method = "HEAD" };
	char what[320];
	int rc;

	snprintf(what, sizeof(what), "bucket %s at %s", s->bucket, s->endpoint);
	rc = perform(s, &r, what, err);
	if (rc == SK_ENOTFOUND)
		sk_error_set(err, rc, "bucket %s does not exist at %s", s->bucket, s->endpoint);
	else if (rc == SK_EUNAUTHORIZED)
		sk_error_set(err, rc,
		        "bucket %s at %s: access denied (%d): check the access and secret keys",
		        s->bucket, s->endpoint, (int)r.status);
	req_dispose(&r);
	return rc;
}

int
sk_s3_put_bytes(sk_s3 *s, const char *key, const void *data, size_t len, sk_error *err)
{
	s3_req r = { .method = "PUT", .key = key, .data = data ? data : "", .len = len };
	char what[600];
	int rc;

	snprintf(what, sizeof(what), "PUT %s/%s", s->bucket, key);
	rc = perform(s, &r, what, err);
	req_dispose(&r);
	return rc;
}

static int
put_one(sk_s3 *s, const char *key, const char *query, uint64_t size, sk_s3_source_fn source,
        void *payload, char *etag, size_t etag_len, sk_error *err)
{
	s3_req r = { .method = "PUT",
		.key = key,
		.query = query,
		.source = source,
		.payload = payload,
		.size = size };
	char what[600];
	int rc;

	snprintf(what, sizeof(what), "PUT %s/%s", s->bucket, key);
	rc = perform(s, &r, what, err);
	if (rc == 0 && etag != NULL)
		snprintf(etag, etag_len, "%s", r.etag);
	req_dispose(&r);
	return rc;
}

/* One part's source: at most left bytes of the caller's source. */
typedef struct part_src {
	sk_s3_source_fn source;
	void *payload;
	uint64_t left;
} part_src;

static int64_t
part_read(void *arg, void *buf, size_t len)
{
	part_src *p = arg;
	int64_t got;

	if (p->left == 0)
		return 0;
	if (len > p->left)
		len = (size_t)p->left;
	got = p->source(p->payload, buf, len);
	if (got == 0)
		return SK_EIO; /* the source ended before its size */
	if (got > 0)
		p->left -= (uint64_t)got;
	return got;
}

static int
multipart(sk_s3 *s, const char *key, uint64_t size, sk_s3_source_fn source, void *payload,
        sk_error *err)
{
	s3_req r = { .method = "POST", .key = key, .query = "uploads=" };
	sk_buf done = SK_BUF_INIT(0), q = SK_BUF_INIT(0);
	char what[600], etag[128];
	char *upload = NULL;
	int rc, part = 0;
	uint64_t off = 0;

	snprintf(what, sizeof(what), "multipart upload of %s/%s", s->bucket, key);
	rc = perform(s, &r, what, err);
	if (rc == 0 &&
	        (upload = xml_take(r.body.data ? r.body.data : "", NULL, "UploadId")) == NULL)
		rc = sk_error_set(err, SK_ETRANSIENT, "%s: no UploadId in the answer", what);
	req_dispose(&r);
	if (rc != 0)
		return rc;
	sk_buf_printf(&done, "<CompleteMultipartUpload>");
	while (rc == 0 && off < size) {
		uint64_t n = size - off < s->part_bytes ? size - off : s->part_bytes;
		part_src ps = { source, payload, n };
		sk_buf_reset(&q);
		sk_buf_printf(&q, "partNumber=%d&uploadId=", ++part);
		encode(&q, upload, false);
		rc = put_one(s, key, q.data, n, part_read, &ps, etag, sizeof(etag), err);
		sk_buf_printf(&done, "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>",
		        part, etag);
		off += n;
	}
	sk_buf_printf(&done, "</CompleteMultipartUpload>");
	sk_buf_reset(&q);
	sk_buf_printf(&q, "uploadId=");
	encode(&q, upload, false);
	if (rc == 0) {
		s3_req c = { .method = "POST",
			.key = key,
			.query = q.data,
			.data = done.data,
			.len = done.len };
		rc = perform(s, &c, what, err);
		/* a 200 may still carry an <Error> (S3 answers before it finishes) */
		if (rc == 0 && c.body.data && strstr(c.body.data, "<Error>") != NULL)
			rc = classify(s, &(s3_req){ .status = 500, .body = c.body }, what, err);
		req_dispose(&c);
	}
	if (rc != 0) {
		s3_req a = { .method = "DELETE", .key = key, .query = q.data };
		sk_error ignored;
		perform(s, &a, what, &ignored); /* the parts are dropped, best effort */
		req_dispose(&a);
	}
	sk_buf_dispose(&done);
	sk_buf_dispose(&q);
	free(upload);
	return rc;
}

int
sk_s3_put(sk_s3 *s, const char *key, uint64_t size, sk_s3_source_fn source, void *payload,
        sk_error *err)
{
	part_src whole = { source, payload, size };

	if (size > s->part_bytes)
		return multipart(s, key, size, source, payload, err);
	if (size == 0)
		return sk_s3_put_bytes(s, key, "", 0, err);
	return put_one(s, key, NULL, size, part_read, &whole, NULL, 0, err);
}

int
sk_s3_get(sk_s3 *s, const char *key, sk_s3_sink_fn sink, void *payload, sk_error *err)
{
	s3_req r = { .method = "GET", .key = key, .sink = sink, .sink_payload = payload };
	char what[600];
	int rc;

	snprintf(what, sizeof(what), "GET %s/%s", s->bucket, key);
	rc = perform(s, &r, what, err);
	req_dispose(&r);
	return rc;
}

int
sk_s3_head(sk_s3 *s, const char *key, uint64_t *size, sk_error *err)
{
	s3_req r = { .method = "HEAD", .key = key };
	char what[600];
	int rc;

	snprintf(what, sizeof(what), "HEAD %s/%s", s->bucket, key);
	rc = perform(s, &r, what, err);
	if (rc == 0 && size != NULL)
		*size = r.content_length;
	req_dispose(&r);
	return rc;
}

int
sk_s3_delete(sk_s3 *s, const char *key, sk_error *err)
{
	s3_req r = { .method = "DELETE", .key = key };
	char what[600];
	int rc;

	snprintf(what, sizeof(what), "DELETE %s/%s", s->bucket, key);
	rc = perform(s, &r, what, err);
	req_dispose(&r);
	if (rc == SK_ENOTFOUND) {
		sk_error_clear(err);
		rc = 0;
	}
	return rc;
}

int
sk_s3_list(sk_s3 *s, const char *prefix, int (*fn)(void *arg, const char *key, uint64_t size),
        void *arg, sk_error *err)
{
	char *token = NULL;
	char what[600];
	int rc = 0;

	snprintf(what, sizeof(what), "list %s/%s", s->bucket, prefix);
	do {
		sk_buf q = SK_BUF_INIT(0);
		s3_req r = { .method = "GET" };
		const char *at;
		char *c, *k, *more;
		if (token != NULL) {
			sk_buf_printf(&q, "continuation-token=");
			encode(&q, token, false);
			sk_buf_printf(&q, "&");
		}
		sk_buf_printf(&q, "list-type=2&prefix=");
		encode(&q, prefix, false);
		r.query = q.data;
		rc = perform(s, &r, what, err);
		free(token);
		token = NULL;
		at = r.body.data ? r.body.data : "";
		while (rc == 0 && (c = xml_take(r.body.data ? r.body.data : "", &at, "Contents"))) {
			char *sz = xml_take(c, NULL, "Size");
			k = xml_take(c, NULL, "Key");
			if (k != NULL)
				rc = fn(arg, k, sz ? strtoull(sz, NULL, 10) : 0);
			if (rc < 0)
				sk_error_set(err, rc, "%s: stopped at %s", what, k ? k : "?");
			free(sz);
			free(k);
			free(c);
		}
		more = rc == 0 ? xml_take(r.body.data ? r.body.data : "", NULL, "IsTruncated")
		               : NULL;
		if (more != NULL && strcmp(more, "true") == 0)
			token = xml_take(r.body.data, NULL, "NextContinuationToken");
		free(more);
		req_dispose(&r);
		sk_buf_dispose(&q);
	} while (rc == 0 && token != NULL);
	free(token);
	return rc;
}
