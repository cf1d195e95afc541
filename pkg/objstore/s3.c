/*
 * objstore/s3: the S3 client (see objstore.h). One curl handle per client,
 * reset per request. Queries are written already in SigV4's canonical form
 * (sorted by name, every value percent-encoded, "uploads=" with its '='),
 * so the query libcurl signs is the one the server canonicalizes.
 */
#include <curl/curl.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdlib.h>
#include <string.h>

#include "objstore.h"

#define DEFAULT_PART_BYTES ((size_t)8 << 20)
#define MIN_PART_BYTES ((size_t)5 << 20)
#define XML_MAX_BYTES ((size_t)4 << 20)

struct sk_s3 {
	CURL *h;
	char *endpoint, *bucket, *sigv4, *userpwd;
	int64_t timeout_ms;
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
	int64_t source_error; /* the source's failure, when it failed */
	/* answer: a 2xx body goes to sink when set, else into body */
	sk_s3_sink_fn sink;
	void *sink_payload;
	int sink_error;
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

	*out = NULL;
	if (cfg->endpoint == NULL || cfg->bucket == NULL || cfg->access_key == NULL ||
	        cfg->secret_key == NULL || cfg->endpoint[0] == '\0' || cfg->bucket[0] == '\0')
		return sk_error_set(err, SK_EINVALID,
		        "object store: endpoint, bucket and both keys are required");
	if (strchr(cfg->access_key, ':') != NULL)
		return sk_error_set(err, SK_EINVALID, "object store: the access key holds a ':'");
	s = sk_calloc(1, sizeof(*s));
	s->h = curl_easy_init();
	if (s->h == NULL) {
		free(s);
		return sk_error_set(err, SK_ENOMEM, "object store: curl_easy_init failed");
	}
	s->endpoint = dup_trim_slash(cfg->endpoint);
	s->bucket = sk_strdup(cfg->bucket);
	s->sigv4 = sk_asprintf(
	        "aws:amz:%s:s3", cfg->region && *cfg->region ? cfg->region : "us-east-1");
	s->userpwd = sk_asprintf("%s:%s", cfg->access_key, cfg->secret_key);
	s->timeout_ms = cfg->request_timeout_ms > 0 ? cfg->request_timeout_ms : 30000;
	s->part_bytes = cfg->part_bytes >= MIN_PART_BYTES ? cfg->part_bytes : DEFAULT_PART_BYTES;
	*out = s;
	return 0;
}

void
sk_s3_free(sk_s3 *s)
{
	if (s == NULL)
		return;
	curl_easy_cleanup(s->h);
	free(s->endpoint);
	free(s->bucket);
	free(s->sigv4);
	if (s->userpwd != NULL)
		memset(s->userpwd, 0, strlen(s->userpwd)); /* a secret */
	free(s->userpwd);
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

static size_t
on_write(char *data, size_t size, size_t n, void *arg)
{
	s3_req *r = arg;
	size_t len = size * n;

	if (r->sink != NULL && r->status == 0) {
		int rc = r->sink(r->sink_payload, data, len);
		if (rc < 0) {
			r->sink_error = rc;
			return 0;
		}
		return len;
	}
	if (sk_buf_append(&r->body, data, len) != 0)
		return 0;
	return len;
}

static size_t
on_read(char *buf, size_t size, size_t n, void *arg)
{
	s3_req *r = arg;
	int64_t got = r->source(r->payload, buf, size * n);

	if (got < 0) {
		r->source_error = got;
		return CURL_READFUNC_ABORT;
	}
	return (size_t)got;
}

/* Response headers: the status line (a sink is fed only a 2xx body), ETag
 * and Content-Length. */
static size_t
on_header(char *data, size_t size, size_t n, void *arg)
{
	s3_req *r = arg;
	size_t len = size * n;
	int code;

	if (len > 9 && strncmp(data, "HTTP/", 5) == 0 && sscanf(data, "HTTP/%*s %d", &code) == 1)
		r->status = code >= 200 && code < 300 ? 0 : code; /* 0: 2xx so far */
	if (len > 5 && strncasecmp(data, "ETag:", 5) == 0) {
		const char *v = data + 5;
		size_t k;
		while (*v == ' ')
			v++;
		k = strcspn(v, "\r\n");
		snprintf(r->etag, sizeof(r->etag), "%.*s", (int)k, v);
	}
	if (len > 15 && strncasecmp(data, "Content-Length:", 15) == 0)
		r->content_length = strtoull(data + 15, NULL, 10);
	return len;
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

static int
classify(s3_req *r, const char *what, sk_error *err)
{
	const char *doc = r->body.data ? r->body.data : "";
	char *code = xml_take(doc, NULL, "Code"), *msg = xml_take(doc, NULL, "Message");
	int rc;

	if (r->status == 403 || r->status == 401)
		rc = SK_EUNAUTHORIZED;
	else if (r->status == 404)
		rc = SK_ENOTFOUND;
	else if (r->status == 408 || r->status == 429 || r->status >= 500)
		rc = SK_ETRANSIENT;
	else
		rc = SK_ETERMINAL;
	sk_error_set(err, rc, "%s: %ld %s%s%s", what, r->status,
	        code ? code : (r->status == 404 ? "NotFound" : "error"), msg ? ": " : "",
	        msg ? msg : "");
	err->http_status = (int)r->status;
	free(code);
	free(msg);
	return rc;
}

/* Runs r; 0 on a 2xx, else the classified failure naming what. */
static int
perform(sk_s3 *s, s3_req *r, const char *what, sk_error *err)
{
	sk_buf url = SK_BUF_INIT(0);
	struct curl_slist *hdr = NULL;
	char sha[128];
	CURLcode cc;
	CURL *h = s->h;

	r->body = (sk_buf)SK_BUF_INIT(XML_MAX_BYTES);
	sk_buf_printf(&url, "%s/", s->endpoint);
	encode(&url, s->bucket, false);
	if (r->key != NULL) {
		sk_buf_append(&url, "/", 1);
		encode(&url, r->key, true);
	}
	if (r->query != NULL)
		sk_buf_printf(&url, "?%s", r->query);
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, url.data);
	curl_easy_setopt(h, CURLOPT_AWS_SIGV4, s->sigv4);
	curl_easy_setopt(h, CURLOPT_USERPWD, s->userpwd);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, r->method);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
	if (strcmp(r->method, "HEAD") == 0)
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	if (r->source != NULL) {
		/* streamed: the payload is not hashed; a stalled transfer ends it */
		snprintf(sha, sizeof(sha), "x-amz-content-sha256: UNSIGNED-PAYLOAD");
		curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(h, CURLOPT_READDATA, r);
		curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)r->size);
		curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
		curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, (long)(s->timeout_ms / 1000));
		hdr = curl_slist_append(hdr, "Expect:");
	} else {
		char hexsum[65];
		sha256_hex(r->data ? r->data : "", r->data ? r->len : 0, hexsum);
		snprintf(sha, sizeof(sha), "x-amz-content-sha256: %s", hexsum);
		if (r->data != NULL) {
			curl_easy_setopt(h, CURLOPT_POSTFIELDS, r->data);
			curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->len);
		}
		if (r->sink != NULL) { /* a download: bounded by progress, not a total */
			curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
			curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, (long)(s->timeout_ms / 1000));
		} else {
			curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)s->timeout_ms);
		}
	}
	hdr = curl_slist_append(hdr, sha);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	cc = curl_easy_perform(h);
	curl_slist_free_all(hdr);
	sk_buf_dispose(&url);
	if (cc == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
	if (r->source_error < 0)
		return sk_error_set(err, (int)r->source_error, "%s: the source failed", what);
	if (r->sink_error < 0)
		return sk_error_set(err, r->sink_error, "%s: the sink failed", what);
	if (cc != CURLE_OK)
		return sk_error_set(err,
		        cc == CURLE_OPERATION_TIMEDOUT ? SK_ETIMEOUT : SK_EUNAVAILABLE, "%s: %s",
		        what, curl_easy_strerror(cc));
	if (r->status < 200 || r->status >= 300)
		return classify(r, what, err);
	return 0;
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
			rc = classify(&(s3_req){ .status = 500, .body = c.body }, what, err);
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
