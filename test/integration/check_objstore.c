/*
 * The S3 client (pkg/objstore) against a real S3-compatible server:
 * versitygw with its POSIX backend (hack/deps.sh installs it pinned into
 * .deps/bin). Round trips, a streamed multipart upload read back byte for
 * byte, listing, and the bad inputs: a wrong secret, a missing bucket, a
 * server that is down, a source that fails mid-upload (nothing left behind).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../testutil.h"
#include "objstore/objstore.h"

Suite *sk_suite_objstore(void);

#define ACCESS "spacekeeper-test"
#define SECRET "s3cr3t-of-the-test-0123456789"

static pid_t gw_pid;
static int gw_port;
static char gw_url[64];

static void
gw_setup(void)
{
	char root[600];

	gw_port = sk_test_free_port();
	snprintf(root, sizeof(root), "%s/s3-%d", sk_test_tmpdir(), gw_port);
	gw_pid = sk_test_s3_start(root, gw_port, "bucket", ACCESS, SECRET, gw_url, sizeof(gw_url));
}

static void
gw_teardown(void)
{
	if (gw_pid > 0)
		sk_test_stop(gw_pid, true);
	gw_pid = 0;
}

static sk_s3 *
client(const char *bucket, const char *secret)
{
	sk_s3_config cfg = { .endpoint = gw_url,
		.bucket = bucket,
		.access_key = ACCESS,
		.secret_key = secret,
		.part_bytes = 5 << 20 };
	sk_s3 *s = NULL;
	sk_error err;

	ck_assert_int_eq(sk_s3_new(&cfg, &s, &err), 0);
	return s;
}

/* A deterministic stream of n bytes; fails at fail_at when non-zero. */
typedef struct gen {
	uint64_t n, off, fail_at;
} gen;

static unsigned char
byte_at(uint64_t i)
{
	return (unsigned char)((i * 2654435761u) >> 13);
}

static int64_t
gen_read(void *arg, void *buf, size_t len)
{
	gen *g = arg;
	unsigned char *p = buf;
	size_t k;

	if (g->fail_at && g->off >= g->fail_at)
		return SK_EIO;
	for (k = 0; k < len && g->off < g->n; k++)
		p[k] = byte_at(g->off++);
	return (int64_t)k;
}

typedef struct check_sink {
	uint64_t off;
	bool bad;
	sk_buf small; /* the bytes of a small object */
} check_sink;

static int
gen_check(void *arg, const void *buf, size_t len)
{
	check_sink *c = arg;
	const unsigned char *p = buf;

	for (size_t k = 0; k < len; k++)
		c->bad |= p[k] != byte_at(c->off++);
	return 0;
}

static int
keep(void *arg, const void *buf, size_t len)
{
	return sk_buf_append(&((check_sink *)arg)->small, buf, len);
}

static int
count_key(void *arg, const char *key, uint64_t size)
{
	(*(int *)arg)++;
	return 0;
}

START_TEST(test_roundtrip_and_list)
{
	sk_s3 *s = client("bucket", SECRET);
	check_sink c = { 0, false, SK_BUF_INIT(0) };
	uint64_t size = 0;
	sk_error err;
	int n = 0;

	ck_assert_int_eq(sk_s3_check_bucket(s, &err), 0);
	ck_assert_msg(sk_s3_put_bytes(s, "p/u1/1/manifest.json", "{\"files\":[]}", 12, &err) == 0,
	        "%s", err.message);
	ck_assert_int_eq(sk_s3_put_bytes(s, "p/u1/1/files/a b+c", "", 0, &err), 0);
	ck_assert_int_eq(sk_s3_put_bytes(s, "p/u2/1/manifest.json", "x", 1, &err), 0);
	ck_assert_int_eq(sk_s3_head(s, "p/u1/1/manifest.json", &size, &err), 0);
	ck_assert_int_eq(size, 12);
	ck_assert_int_eq(sk_s3_get(s, "p/u1/1/manifest.json", keep, &c, &err), 0);
	ck_assert_int_eq(c.small.len, 12);
	ck_assert_int_eq(memcmp(c.small.data, "{\"files\":[]}", 12), 0);
	ck_assert_int_eq(sk_s3_list(s, "p/u1/", count_key, &n, &err), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(sk_s3_delete(s, "p/u1/1/files/a b+c", &err), 0);
	ck_assert_int_eq(sk_s3_delete(s, "p/u1/1/files/a b+c", &err), 0); /* absent: done */
	n = 0;
	ck_assert_int_eq(sk_s3_list(s, "p/u1/", count_key, &n, &err), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(sk_s3_head(s, "p/none", &size, &err), SK_ENOTFOUND);
	ck_assert_int_eq(sk_s3_get(s, "p/none", keep, &c, &err), SK_ENOTFOUND);
	ck_assert_msg(strstr(err.message, "NoSuchKey") != NULL, "%s", err.message);
	sk_buf_dispose(&c.small);
	sk_s3_free(s);
}
END_TEST

/* 17 MiB through 5 MiB parts (4 of them), streamed both ways. */
START_TEST(test_multipart_streamed)
{
	sk_s3 *s = client("bucket", SECRET);
	gen g = { (17 << 20) + 123, 0, 0 };
	check_sink c = { 0, false, SK_BUF_INIT(0) };
	uint64_t size = 0;
	sk_error err;

	ck_assert_msg(sk_s3_put(s, "big/one", g.n, gen_read, &g, &err) == 0, "%s", err.message);
	ck_assert_int_eq(sk_s3_head(s, "big/one", &size, &err), 0);
	ck_assert_int_eq(size, g.n);
	ck_assert_int_eq(sk_s3_get(s, "big/one", gen_check, &c, &err), 0);
	ck_assert_int_eq(c.off, g.n);
	ck_assert(!c.bad);
	/* one part's worth, not multipart */
	g = (gen){ 1 << 20, 0, 0 };
	ck_assert_int_eq(sk_s3_put(s, "big/small", g.n, gen_read, &g, &err), 0);
	c = (check_sink){ 0, false, SK_BUF_INIT(0) };
	ck_assert_int_eq(sk_s3_get(s, "big/small", gen_check, &c, &err), 0);
	ck_assert_int_eq(c.off, g.n);
	ck_assert(!c.bad);
	/* a source that fails in the second part: an error, no object */
	g = (gen){ 12 << 20, 0, 7 << 20 };
	ck_assert_int_eq(sk_s3_put(s, "big/broken", g.n, gen_read, &g, &err), SK_EIO);
	ck_assert_int_eq(sk_s3_head(s, "big/broken", &size, &err), SK_ENOTFOUND);
	sk_s3_free(s);
}
END_TEST

START_TEST(test_bad_inputs)
{
	sk_s3 *wrong = client("bucket", "not-the-secret");
	sk_s3 *nobucket = client("no-such-bucket", SECRET);
	sk_s3_config cfg = { .endpoint = gw_url, .bucket = "bucket", .access_key = ACCESS };
	sk_s3 *down, *none = NULL;
	sk_error err;
	int port;

	/* a wrong secret: unauthorized, named, the secret nowhere */
	ck_assert_int_eq(sk_s3_check_bucket(wrong, &err), SK_EUNAUTHORIZED);
	ck_assert_msg(strstr(err.message, "access denied") != NULL, "%s", err.message);
	ck_assert_int_eq(sk_s3_put_bytes(wrong, "k", "v", 1, &err), SK_EUNAUTHORIZED);
	ck_assert_msg(strstr(err.message, "SignatureDoesNotMatch") != NULL, "%s", err.message);
	ck_assert(strstr(err.message, "not-the-secret") == NULL);
	ck_assert(strstr(err.message, SECRET) == NULL);
	/* a missing bucket */
	ck_assert_int_eq(sk_s3_check_bucket(nobucket, &err), SK_ENOTFOUND);
	ck_assert_msg(strstr(err.message, "bucket no-such-bucket does not exist") != NULL, "%s",
	        err.message);
	ck_assert_int_eq(sk_s3_put_bytes(nobucket, "k", "v", 1, &err), SK_ENOTFOUND);
	ck_assert_msg(strstr(err.message, "NoSuchBucket") != NULL, "%s", err.message);
	/* no secret: refused before any request */
	ck_assert_int_eq(sk_s3_new(&cfg, &none, &err), SK_EINVALID);
	ck_assert_ptr_null(none);
	/* a server that is down: transient */
	port = sk_test_free_port();
	cfg.secret_key = SECRET;
	cfg.endpoint = NULL;
	{
		char url[64];
		snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
		cfg.endpoint = url;
		ck_assert_int_eq(sk_s3_new(&cfg, &down, &err), 0);
		ck_assert_int_eq(sk_s3_put_bytes(down, "k", "v", 1, &err), SK_EUNAVAILABLE);
		ck_assert_int_eq(sk_error_retry(err.code), SK_RETRY_SAME);
		sk_s3_free(down);
	}
	sk_s3_free(wrong);
	sk_s3_free(nobucket);
}
END_TEST

Suite *
sk_suite_objstore(void)
{
	Suite *s = suite_create("objstore");
	TCase *tc = tcase_create("versitygw");

	tcase_add_checked_fixture(tc, gw_setup, gw_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_roundtrip_and_list);
	tcase_add_test(tc, test_multipart_streamed);
	tcase_add_test(tc, test_bad_inputs);
	suite_add_tcase(s, tc);
	return s;
}
