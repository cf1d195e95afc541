/*
 * objstore: an S3-compatible object store client on libcurl (a
 * space's archive). Requests are signed with AWS Signature V4 by libcurl
 * itself (CURLOPT_AWS_SIGV4, no other crypto library); libcurl does not add
 * x-amz-content-sha256, which S3 servers require, so every request carries
 * it: the SHA-256 of a body held in memory, UNSIGNED-PAYLOAD for a streamed
 * one. Uploads are streamed from a source callback, never held whole in
 * memory; a size above the part size goes up as a multipart upload (aborted
 * when a part fails). Path-style addressing: ENDPOINT/BUCKET/KEY.
 *
 * The requests go through the shared HTTP client (httpc), whose classifier
 * is the provider clients' too: no answer, 408, 429 and 5xx ->
 * SK_ETRANSIENT/SK_EUNAVAILABLE/SK_ETIMEOUT; 403 -> SK_EUNAUTHORIZED (a
 * wrong key or signature); 404 -> SK_ENOTFOUND (NoSuchBucket names the
 * bucket); 409 -> SK_ECONFLICT (OperationAborted: try again); other 4xx ->
 * SK_ETERMINAL. The message carries the S3 error code and its message,
 * never a key nor a signature (httpc redacts them). A client is used by
 * one thread at a time.
 */
#ifndef SK_OBJSTORE_H
#define SK_OBJSTORE_H

#include "../util/util.h"

typedef struct sk_s3_config {
	const char *endpoint; /* http(s)://host:port, no trailing slash needed */
	const char *bucket;
	const char *region; /* NULL: us-east-1 */
	const char *access_key; /* secret */
	const char *secret_key; /* secret */
	int64_t request_timeout_ms; /* per request without a body to stream; 0: 30s */
	size_t part_bytes; /* multipart part size; 0: 8 MiB (S3's least is 5 MiB) */
} sk_s3_config;

typedef struct sk_s3 sk_s3;

/* An upload's source: fills buf with up to len bytes; returns the count, 0
 * at the end, or a negative SK_E* to abort. */
typedef int64_t (*sk_s3_source_fn)(void *payload, void *buf, size_t len);
/* A download's sink: each chunk in order; a negative SK_E* stops it. */
typedef int (*sk_s3_sink_fn)(void *payload, const void *buf, size_t len);

int sk_s3_new(const sk_s3_config *cfg, sk_s3 **out, sk_error *err);
void sk_s3_free(sk_s3 *s);

/* PUT of size bytes from source under key (multipart above the part size). */
int sk_s3_put(sk_s3 *s, const char *key, uint64_t size, sk_s3_source_fn source, void *payload,
        sk_error *err);
/* PUT of a small body held in memory (its SHA-256 signed). */
int sk_s3_put_bytes(sk_s3 *s, const char *key, const void *data, size_t len, sk_error *err);
/* GET of key, streamed to sink. */
int sk_s3_get(sk_s3 *s, const char *key, sk_s3_sink_fn sink, void *payload, sk_error *err);
/* HEAD of key: its size. SK_ENOTFOUND when absent. */
int sk_s3_head(sk_s3 *s, const char *key, uint64_t *size, sk_error *err);
/* DELETE of key; an absent key is success. */
int sk_s3_delete(sk_s3 *s, const char *key, sk_error *err);
/* Every key under prefix (ListObjectsV2, every page), in the server's order.
 * fn is called per key; a negative return stops the listing with it. */
int sk_s3_list(sk_s3 *s, const char *prefix, int (*fn)(void *arg, const char *key, uint64_t size),
        void *arg, sk_error *err);
/* HEAD of the bucket: SK_ENOTFOUND when it does not exist, SK_EUNAUTHORIZED
 * for a wrong key. */
int sk_s3_check_bucket(sk_s3 *s, sk_error *err);

#endif
