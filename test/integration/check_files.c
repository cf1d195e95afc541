/*
 * Integration tests for workspace files: the e2b, cube and daytona clients'
 * list/read/write against sandboxsim's file tree (loopback), and the copy
 * engine (sk_workspace_copy/verify) between two simulators: 200 files in
 * nested directories, a 50 MB file, a symlink, an empty file and a fifo;
 * a changed byte or mode is caught by verify; injected 504s on the target's
 * file API are retried, and when they persist the copy fails transient.
 */
#include <check.h>
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../testutil.h"
#include "sandbox/sandbox.h"
#include "sandbox/sandbox_int.h" /* sk_envd_run: a fifo in the source */

Suite *sk_suite_files(void);

#define KEY "e2b_0000000000000000000000000000000000000000"
#define KEY_VAR "SK_TEST_FILES_KEY"
#define WS "/home/user/ws"
#define BIG_BYTES (50u * 1024 * 1024)
#define NFILES 200

static const char *const flavors[] = { "e2b", "cube", "daytona" };
static const sk_provider_type types[] = { SK_PROVIDER_E2B, SK_PROVIDER_CUBE, SK_PROVIDER_DAYTONA };

typedef struct sim {
	pid_t pid;
	char url[128];
	sk_provider *p;
	sk_sandbox sb;
} sim;

static sk_provider *
client(sk_provider_type t, const char *url)
{
	sk_provider_config c = { 0 };
	sk_provider *p = NULL;
	sk_error err;

	setenv(KEY_VAR, KEY, 1);
	c.name = "files";
	c.type = t;
	c.api_url = (char *)url;
	c.sandbox_url = (char *)url;
	c.domain = "e2b.app";
	c.api_key_env = KEY_VAR;
	c.max_in_flight = 64;
	c.qps = 500;
	c.burst = 1000;
	c.request_timeout_ms = 20000;
	c.sandbox_timeout_ms = 3600000;
	sk_error_clear(&err);
	ck_assert_msg(sk_provider_new(&c, &p, &err) == 0, "sk_provider_new: %s", err.message);
	return p;
}

/* A simulator of a flavour with one running sandbox. */
static void
sim_up(sim *s, int flavor)
{
	const char *args[] = { "--flavor", flavors[flavor], "--api-key", KEY, "--seed", "7", NULL };
	sk_create_request req = { .template_id = "base", .timeout_ms = 600000, .auto_pause = true };
	sk_kvlist meta = { 0 };
	sk_error err;

	memset(s, 0, sizeof(*s));
	s->pid = sk_test_sim_start(args, s->url, sizeof(s->url));
	ck_assert_int_gt(s->pid, 0);
	s->p = client(types[flavor], s->url);
	sk_kvlist_set(&meta, "user_id", "alice");
	req.metadata = &meta;
	sk_error_clear(&err);
	ck_assert_msg(sk_sandbox_create(s->p, &req, &s->sb, &err) == 0, "create: %s", err.message);
	sk_kvlist_dispose(&meta);
}

static void
sim_down(sim *s)
{
	sk_sandbox_dispose(&s->sb);
	sk_provider_free(s->p);
	if (s->pid > 0)
		sk_test_stop(s->pid, false);
	s->pid = 0;
}

static size_t
collect(char *data, size_t size, size_t n, void *userp)
{
	return sk_buf_append(userp, data, size * n) == 0 ? size * n : 0;
}

/* POST a JSON document to a simulator's admin API; returns the status. */
static long
admin_post(const sim *s, const char *path, const char *json)
{
	return sk_test_post_json(s->url, path, json);
}

/* A secure sandbox (envd wants X-Access-Token), created with a raw POST. */
static void
create_secure(sim *s, sk_sandbox *out)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	sk_buf body = SK_BUF_INIT(1 << 16);
	char url[256];
	json_t *j;
	sk_error err;

	h = curl_slist_append(h, "X-API-Key: " KEY);
	snprintf(url, sizeof(url), "%s/sandboxes", s->url);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, "{\"templateID\":\"base\",\"secure\":true}");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
	ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);
	j = json_loadb(body.data, body.len, 0, NULL);
	ck_assert_int_eq(
	        sk_sandbox_get(s->p, json_string_value(json_object_get(j, "sandboxID")), out, &err),
	        0);
	ck_assert_ptr_nonnull(out->envd_access_token);
	json_decref(j);
	sk_buf_dispose(&body);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
}

/* ---- sources and sinks ---- */

/* Bytes from memory, or `gen` pseudo-random bytes from a seed (never held whole). */
typedef struct src {
	const char *data;
	uint64_t len, off;
	uint32_t seed;
} src;

static unsigned char
gen_byte(uint32_t seed, uint64_t i)
{
	uint64_t x = (i / 8 + 1) * 0x9E3779B97F4A7C15ULL ^ seed;

	x ^= x >> 29;
	x *= 0xBF58476D1CE4E5B9ULL;
	x ^= x >> 32;
	return (unsigned char)(x >> (8 * (i % 8)));
}

static int64_t
src_read(void *payload, void *buf, size_t n)
{
	src *s = payload;
	size_t k = s->len - s->off < n ? (size_t)(s->len - s->off) : n;

	for (size_t i = 0; i < k; i++)
		((unsigned char *)buf)[i] = s->data ? (unsigned char)s->data[s->off + i]
		                                    : gen_byte(s->seed, s->off + i);
	s->off += k;
	return (int64_t)k;
}

static int
buf_sink(void *payload, const void *data, size_t n)
{
	return sk_buf_append(payload, data, n) == 0 ? 0 : SK_ENOMEM;
}

static void
put(sim *s, const char *path, sk_file_type type, uint32_t mode, const char *content,
        const char *target)
{
	sk_file_entry e = {
		.path = (char *)path, .type = type, .mode = mode, .link_target = (char *)target
	};
	src in = { .data = content, .len = content ? strlen(content) : 0 };
	sk_error err;

	e.size = in.len;
	sk_error_clear(&err);
	ck_assert_msg(sk_sandbox_write_file(s->p, &s->sb, &e,
	                      type == SK_FILE_REGULAR ? src_read : NULL, &in, &err) == 0,
	        "write %s: %s", path, err.message);
}

static char *
get(sim *s, const char *path)
{
	sk_buf b = SK_BUF_INIT(0);
	sk_error err;

	sk_error_clear(&err);
	ck_assert_msg(sk_sandbox_read_file(s->p, &s->sb, path, buf_sink, &b, &err) == 0,
	        "read %s: %s", path, err.message);
	return b.data ? sk_buf_detach(&b) : sk_strdup("");
}

static const sk_file_entry *
find(const sk_file_list *l, const char *path)
{
	for (size_t i = 0; i < l->len; i++)
		if (strcmp(l->items[i].path, path) == 0)
			return &l->items[i];
	return NULL;
}

/* ---- the clients, each flavour ---- */

static void
check_listing(sim *s)
{
	sk_file_list l;
	const sk_file_entry *e;
	sk_error err;

	ck_assert_msg(
	        sk_sandbox_list_files(s->p, &s->sb, WS, &l, &err) == 0, "list: %s", err.message);
	ck_assert_uint_eq(l.len, 6);
	/* depth first, parents before children */
	ck_assert_str_eq(l.items[0].path, WS "/a.txt");
	ck_assert_str_eq(l.items[1].path, WS "/d");
	ck_assert_str_eq(l.items[2].path, WS "/d/e");
	ck_assert_str_eq(l.items[3].path, WS "/d/e/deep.txt");
	ck_assert_ptr_nonnull(e = find(&l, WS "/a.txt"));
	ck_assert_int_eq(e->type, SK_FILE_REGULAR);
	ck_assert_uint_eq(e->size, 5);
	ck_assert_uint_eq(e->mode, 0600);
	ck_assert_ptr_nonnull(e = find(&l, WS "/d/e"));
	ck_assert_int_eq(e->type, SK_FILE_DIR);
	ck_assert_uint_eq(e->mode, 0700);
	ck_assert_ptr_nonnull(e = find(&l, WS "/empty"));
	ck_assert_int_eq(e->type, SK_FILE_REGULAR);
	ck_assert_uint_eq(e->size, 0);
	ck_assert_ptr_nonnull(e = find(&l, WS "/link"));
	ck_assert_int_eq(e->type, SK_FILE_SYMLINK);
	ck_assert_str_eq(e->link_target, "a.txt");
	sk_file_list_free(&l);
}

START_TEST(client_round_trip)
{
	sim s;
	sk_file_list l;
	sk_buf b = SK_BUF_INIT(0);
	bool resumed;
	sk_sandbox again;
	char *text;
	sk_error err;

	sim_up(&s, _i);
	put(&s, WS "/d/e", SK_FILE_DIR, 0700, NULL, NULL);
	put(&s, WS "/a.txt", SK_FILE_REGULAR, 0600, "hello", NULL);
	put(&s, WS "/d/e/deep.txt", SK_FILE_REGULAR, 0644, "deep\n", NULL);
	put(&s, WS "/empty", SK_FILE_REGULAR, 0644, "", NULL);
	put(&s, WS "/link", SK_FILE_SYMLINK, 0777, NULL, "a.txt");
	check_listing(&s);
	ck_assert_str_eq(text = get(&s, WS "/a.txt"), "hello");
	free(text);
	ck_assert_str_eq(text = get(&s, WS "/link"), "hello"); /* reads follow symlinks */
	free(text);
	ck_assert_str_eq(text = get(&s, WS "/empty"), "");
	free(text);
	/* a rewrite replaces the bytes and keeps the parents */
	put(&s, WS "/a.txt", SK_FILE_REGULAR, 0600, "world", NULL);
	ck_assert_str_eq(text = get(&s, WS "/a.txt"), "world");
	free(text);
	/* a symlink's parents are made too; a relative target resolves from its directory */
	put(&s, "/home/user/other/x/y/ln", SK_FILE_SYMLINK, 0777, NULL, "../../../ws/a.txt");
	ck_assert_str_eq(text = get(&s, "/home/user/other/x/y/ln"), "world");
	free(text);
	/* errors */
	ck_assert_int_eq(
	        sk_sandbox_read_file(s.p, &s.sb, WS "/nope", buf_sink, &b, &err), SK_ENOTFOUND);
	ck_assert_int_eq(sk_sandbox_list_files(s.p, &s.sb, "/nowhere", &l, &err), SK_ENOTFOUND);
	ck_assert_int_eq(sk_sandbox_write_file(s.p, &s.sb,
	                         &(sk_file_entry){ .path = WS "/fifo", .type = SK_FILE_OTHER },
	                         NULL, NULL, &err),
	        SK_EINVALID);
	/* the tree survives pause and resume */
	ck_assert_int_eq(sk_sandbox_pause(s.p, s.sb.id, &err), 0);
	ck_assert_msg(sk_sandbox_connect(s.p, s.sb.id, 600000, &again, &resumed, &err) == 0,
	        "connect: %s", err.message);
	sk_sandbox_dispose(&again);
	check_listing(&s);
	/* and dies with the sandbox */
	ck_assert_int_eq(sk_sandbox_kill(s.p, s.sb.id, &err), 0);
	ck_assert_int_ne(sk_sandbox_list_files(s.p, &s.sb, WS, &l, &err), 0);
	sk_buf_dispose(&b);
	sim_down(&s);
}
END_TEST

/* envd of a secure sandbox: every file call carries X-Access-Token; without it, 401. */
START_TEST(secure_sandbox_needs_the_token)
{
	sim s;
	sk_sandbox sec;
	sk_file_list l;
	sk_buf b = SK_BUF_INIT(0);
	char *token;
	sk_error err;

	sim_up(&s, 0); /* e2b: Cube and Daytona hand out no envd token */
	create_secure(&s, &sec);
	sk_sandbox_dispose(&s.sb);
	s.sb = sec;
	put(&s, WS "/t.txt", SK_FILE_REGULAR, 0600, "secret", NULL);
	put(&s, WS "/t.lnk", SK_FILE_SYMLINK, 0777, NULL, "t.txt");
	ck_assert_int_eq(sk_sandbox_list_files(s.p, &s.sb, WS, &l, &err), 0);
	ck_assert_uint_eq(l.len, 2);
	ck_assert_uint_eq(find(&l, WS "/t.txt")->mode, 0600);
	sk_file_list_free(&l);
	token = s.sb.envd_access_token;
	s.sb.envd_access_token = NULL;
	ck_assert_int_eq(sk_sandbox_list_files(s.p, &s.sb, WS, &l, &err), SK_EUNAUTHORIZED);
	ck_assert_int_eq(sk_sandbox_read_file(s.p, &s.sb, WS "/t.txt", buf_sink, &b, &err),
	        SK_EUNAUTHORIZED);
	ck_assert_int_eq(err.http_status, 401);
	ck_assert_uint_eq(b.len, 0);
	s.sb.envd_access_token = token;
	sk_buf_dispose(&b);
	sim_down(&s);
}
END_TEST

/* ---- the copy engine ---- */

static void
fill_source(sim *s)
{
	char path[128], body[64];
	sk_file_entry big = {
		.path = WS "/big/blob.bin", .type = SK_FILE_REGULAR, .mode = 0640, .size = BIG_BYTES
	};
	src gen = { .len = BIG_BYTES, .seed = 42 };
	sk_error err;

	for (int i = 0; i < NFILES; i++) {
		snprintf(path, sizeof(path), WS "/d%d/s%d/f%03d.txt", i % 5, i % 3, i);
		snprintf(body, sizeof(body), "file %d\n", i);
		put(s, path, SK_FILE_REGULAR, i % 7 == 0 ? 0755 : 0644, body, NULL);
	}
	put(s, WS "/secret", SK_FILE_DIR, 0500, NULL, NULL);
	put(s, WS "/empty", SK_FILE_REGULAR, 0644, "", NULL);
	put(s, WS "/latest", SK_FILE_SYMLINK, 0777, NULL, "d1/s1/f001.txt");
	ck_assert_msg(sk_sandbox_write_file(s->p, &s->sb, &big, src_read, &gen, &err) == 0,
	        "write the 50 MB file: %s", err.message);
	ck_assert_msg(sk_envd_run(s->p, &s->sb, "mkfifo", WS "/pipe", NULL, &err) == 0,
	        "mkfifo: %s", err.message);
}

static int progress_calls;

static void
on_progress(void *payload, const sk_copy_report *r)
{
	ck_assert_uint_le(r->files_done, r->files_total);
	ck_assert_uint_le(r->bytes_done, r->bytes_total);
	progress_calls++;
}

static const char *const roots[] = { WS };
static const sk_copy_options opts = { .paths = roots, .npaths = 1 };

/* dirs: ws/d0..d4 (5) + their s0..s2 (15) + big + secret = 22; files 200 + empty + blob;
 * one symlink; the fifo skipped. */
#define ENTRIES (22 + NFILES + 2 + 1)

static void
copy_and_verify(sim *a, sim *b)
{
	sk_copy_report r;
	sk_file_list l;
	char *text;
	sk_error err;

	progress_calls = 0;
	sk_error_clear(&err);
	ck_assert_msg(sk_workspace_copy(
	                      a->p, &a->sb, b->p, &b->sb, &opts, on_progress, NULL, &r, &err) == 0,
	        "copy: %s", err.message);
	ck_assert_uint_eq(r.files_total, ENTRIES);
	ck_assert_uint_eq(r.files_done, ENTRIES);
	ck_assert_uint_eq(r.bytes_done, r.bytes_total);
	ck_assert_uint_gt(r.bytes_total, BIG_BYTES);
	ck_assert_int_eq(progress_calls, ENTRIES);
	ck_assert_uint_eq(r.skipped.len, 1);
	ck_assert_str_eq(r.skipped.items[0].path, WS "/pipe");
	sk_copy_report_free(&r);
	/* the target has it all, the fifo excepted */
	ck_assert_str_eq(text = get(b, WS "/d1/s1/f001.txt"), "file 1\n");
	free(text);
	ck_assert_int_eq(sk_sandbox_list_files(b->p, &b->sb, WS, &l, &err), 0);
	ck_assert_ptr_null(find(&l, WS "/pipe"));
	ck_assert_uint_eq(find(&l, WS "/secret")->mode, 0500);
	ck_assert_str_eq(find(&l, WS "/latest")->link_target, "d1/s1/f001.txt");
	sk_file_list_free(&l);
	ck_assert_msg(sk_workspace_verify(a->p, &a->sb, b->p, &b->sb, &opts, &r, &err) == 0,
	        "verify: %s", err.message);
	ck_assert_ptr_null(r.mismatch);
	ck_assert_uint_eq(r.files_done, ENTRIES);
	sk_copy_report_free(&r);
}

static void
expect_mismatch(sim *a, sim *b, const char *want)
{
	sk_copy_report r;
	sk_error err;

	ck_assert_int_eq(
	        sk_workspace_verify(a->p, &a->sb, b->p, &b->sb, &opts, &r, &err), SK_ECONFLICT);
	ck_assert_ptr_nonnull(r.mismatch);
	ck_assert_msg(strstr(r.mismatch, want) != NULL, "mismatch %s, want %s", r.mismatch, want);
	ck_assert_ptr_nonnull(strstr(err.message, r.mismatch));
	sk_copy_report_free(&r);
}

/* e2b -> cube, e2b -> daytona */
START_TEST(copy_then_verify)
{
	sim a, b;
	int target = _i == 0 ? 1 : 2;

	sim_up(&a, 0);
	sim_up(&b, target);
	fill_source(&a);
	copy_and_verify(&a, &b);
	/* one changed byte, same size */
	put(&b, WS "/d2/s2/f002.txt", SK_FILE_REGULAR, 0644, "file 3\n", NULL);
	expect_mismatch(&a, &b, WS "/d2/s2/f002.txt: content differs");
	put(&b, WS "/d2/s2/f002.txt", SK_FILE_REGULAR, 0644, "file 2\n", NULL);
	/* a mode */
	put(&b, WS "/empty", SK_FILE_REGULAR, 0600, "", NULL);
	expect_mismatch(&a, &b, WS "/empty: mode 0644 at the source, 0600 at the target");
	put(&b, WS "/empty", SK_FILE_REGULAR, 0644, "", NULL);
	/* an extra file */
	put(&b, WS "/zz", SK_FILE_REGULAR, 0644, "x", NULL);
	expect_mismatch(&a, &b, WS "/zz: at the target only");
	sim_down(&a);
	sim_down(&b);
}
END_TEST

START_TEST(copy_over_max_bytes_touches_nothing)
{
	sim a, b;
	sk_copy_options small = opts;
	sk_copy_report r;
	sk_file_list l;
	sk_error err;

	sim_up(&a, 0);
	sim_up(&b, 1);
	put(&a, WS "/one", SK_FILE_REGULAR, 0644, "0123456789", NULL);
	put(&a, WS "/two", SK_FILE_REGULAR, 0644, "0123456789", NULL);
	small.max_bytes = 15;
	ck_assert_int_eq(sk_workspace_copy(a.p, &a.sb, b.p, &b.sb, &small, NULL, NULL, &r, &err),
	        SK_ETERMINAL);
	ck_assert_ptr_nonnull(strstr(err.message, "20 bytes"));
	ck_assert_uint_eq(r.files_done, 0);
	ck_assert_int_eq(sk_sandbox_list_files(b.p, &b.sb, WS, &l, &err), SK_ENOTFOUND);
	sk_copy_report_free(&r);
	sim_down(&a);
	sim_down(&b);
}
END_TEST

/* Two 504s on the target's /files: retried; then 504 for good: the copy fails transient. */
START_TEST(copy_retries_504)
{
	sim a, b;
	sk_copy_report r;
	char *text;
	sk_error err;

	sim_up(&a, 0);
	sim_up(&b, _i == 0 ? 1 : 2);
	for (int i = 0; i < 5; i++) {
		char path[64];
		snprintf(path, sizeof(path), WS "/f%d", i);
		put(&a, path, SK_FILE_REGULAR, 0644, "payload", NULL);
	}
	ck_assert_int_eq(admin_post(&b, "/_sim/faults",
	                         "{\"errors\": {\"files\": {\"status\": 504, \"count\": 2}}}"),
	        200);
	ck_assert_msg(sk_workspace_copy(a.p, &a.sb, b.p, &b.sb, &opts, NULL, NULL, &r, &err) == 0,
	        "copy: %s", err.message);
	ck_assert_uint_eq(r.files_done, 5);
	sk_copy_report_free(&r);
	ck_assert_str_eq(text = get(&b, WS "/f4"), "payload");
	free(text);
	ck_assert_int_eq(sk_workspace_verify(a.p, &a.sb, b.p, &b.sb, &opts, &r, &err), 0);
	sk_copy_report_free(&r);
	ck_assert_int_eq(
	        admin_post(&b, "/_sim/faults", "{\"errors\": {\"files\": {\"status\": 504}}}"),
	        200);
	put(&a, WS "/f9", SK_FILE_REGULAR, 0644, "new", NULL);
	ck_assert_int_eq(sk_workspace_copy(a.p, &a.sb, b.p, &b.sb, &opts, NULL, NULL, &r, &err),
	        SK_ETRANSIENT);
	ck_assert_int_eq(err.http_status, 504);
	ck_assert_uint_lt(r.files_done, r.files_total);
	sk_copy_report_free(&r);
	sim_down(&a);
	sim_down(&b);
}
END_TEST

/* One client for both sides (a template change at the same provider): the
 * spool path, memory then a temporary file past chunk_bytes. */
START_TEST(copy_within_one_client)
{
	sim a;
	sk_sandbox second;
	sk_create_request req = {
		.template_id = "other", .timeout_ms = 600000, .auto_pause = true
	};
	sk_copy_options small = opts;
	sk_file_entry big = {
		.path = WS "/three.bin", .type = SK_FILE_REGULAR, .mode = 0644, .size = 3u << 20
	};
	src gen = { .len = 3u << 20, .seed = 7 };
	sk_copy_report r;
	sim b;
	sk_error err;

	sim_up(&a, 0);
	ck_assert_int_eq(sk_sandbox_create(a.p, &req, &second, &err), 0);
	ck_assert_int_eq(sk_sandbox_write_file(a.p, &a.sb, &big, src_read, &gen, &err), 0);
	put(&a, WS "/small", SK_FILE_REGULAR, 0600, "tiny", NULL);
	small.chunk_bytes = 64 * 1024;
	ck_assert_msg(
	        sk_workspace_copy(a.p, &a.sb, a.p, &second, &small, NULL, NULL, &r, &err) == 0,
	        "copy: %s", err.message);
	ck_assert_uint_eq(r.bytes_done, (3u << 20) + 4);
	sk_copy_report_free(&r);
	ck_assert_msg(sk_workspace_verify(a.p, &a.sb, a.p, &second, &small, &r, &err) == 0,
	        "verify: %s", err.message);
	sk_copy_report_free(&r);
	b = a; /* the same simulator, the second sandbox */
	b.sb = second;
	put(&b, WS "/three.bin", SK_FILE_REGULAR, 0644, "short", NULL);
	expect_mismatch(&a, &b, WS "/three.bin: 3145728 bytes at the source, 5 at the target");
	sk_sandbox_dispose(&second);
	sim_down(&a);
}
END_TEST

Suite *
sk_suite_files(void)
{
	Suite *s = suite_create("files");
	TCase *tc = tcase_create("clients");
	TCase *cp = tcase_create("copy");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, client_round_trip, 0, 3);
	tcase_add_test(tc, secure_sandbox_needs_the_token);
	suite_add_tcase(s, tc);
	tcase_set_timeout(cp, 240);
	tcase_add_loop_test(cp, copy_then_verify, 0, 2);
	tcase_add_test(cp, copy_over_max_bytes_touches_nothing);
	tcase_add_test(cp, copy_within_one_client);
	tcase_add_loop_test(cp, copy_retries_504, 0, 2);
	suite_add_tcase(s, cp);
	return s;
}
