/*
 * The archive (pkg/reconcile/archive.c) between a sandboxsim sandbox and a
 * real S3 server (versitygw): a workspace with a symlink, modes, an empty
 * file and a multipart-sized file archived, the manifest written last and
 * verified, restored into a new sandbox with every file identical; a
 * server killed mid-archive leaves no manifest (incomplete, never restored
 * from); an object changed after the archive fails the restore's check
 * against the manifest. Pruning (archive_prune.c): the right generations
 * kept, never the only complete one, a prune cut short finished by the next.
 * Bad input: a 50 MB file, a full disk at the S3 server (a tmpfs in a
 * namespace of its own), a wrong secret key, a missing bucket.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../testutil.h"
#include "reconcile/archive_int.h"

Suite *sk_suite_archive(void);

#define KEY "e2b_0000000000000000000000000000000000000000"
#define KEY_VAR "SK_TEST_ARCHIVE_KEY"
#define ACCESS "archive-test"
#define SECRET "archive-secret-0123456789"
#define WS "/home/user/ws"

static pid_t sim_pid, gw_pid;
static char sim_url[128], gw_url[64], gw_dir[600];
static int gw_port;
static sk_provider *prov;
static sk_s3 *s3;

static sk_provider *
sim_client(const char *url)
{
	sk_provider_config c = { 0 };
	sk_provider *p = NULL;
	sk_error err;

	setenv(KEY_VAR, KEY, 1);
	c.name = "archive";
	c.type = SK_PROVIDER_E2B;
	c.api_url = (char *)url;
	c.sandbox_url = (char *)url;
	c.domain = "e2b.app";
	c.api_key_env = KEY_VAR;
	c.max_in_flight = 16;
	c.qps = 500;
	c.burst = 1000;
	c.request_timeout_ms = 20000;
	c.sandbox_timeout_ms = 3600000;
	ck_assert_msg(sk_provider_new(&c, &p, &err) == 0, "sk_provider_new: %s", err.message);
	return p;
}

static void
setup(void)
{
	const char *args[] = { "--api-key", KEY, NULL };
	sk_s3_config cfg = { .access_key = ACCESS,
		.secret_key = SECRET,
		.bucket = "spaces",
		.part_bytes = 5 << 20 };
	sk_error err;

	sim_pid = sk_test_sim_start(args, sim_url, sizeof(sim_url));
	prov = sim_client(sim_url);
	gw_port = sk_test_free_port();
	snprintf(gw_dir, sizeof(gw_dir), "%s/archive-s3-%d", sk_test_tmpdir(), gw_port);
	gw_pid =
	        sk_test_s3_start(gw_dir, gw_port, "spaces", ACCESS, SECRET, gw_url, sizeof(gw_url));
	cfg.endpoint = gw_url;
	ck_assert_int_eq(sk_s3_new(&cfg, &s3, &err), 0);
}

static void
teardown(void)
{
	sk_s3_free(s3);
	sk_provider_free(prov);
	if (gw_pid > 0)
		sk_test_stop(gw_pid, true);
	if (sim_pid > 0)
		sk_test_stop(sim_pid, true);
}

static void
new_sandbox(sk_sandbox *out)
{
	sk_create_request req = { .template_id = "base", .timeout_ms = 600000, .auto_pause = true };
	sk_kvlist meta = { 0 };
	sk_error err;

	sk_kvlist_set(&meta, "user_id", "alice");
	req.metadata = &meta;
	ck_assert_msg(sk_sandbox_create(prov, &req, out, &err) == 0, "create: %s", err.message);
	sk_kvlist_dispose(&meta);
}

static void
fill(const sk_sandbox *sb, const char *path, long bytes, int seed)
{
	char body[300], url[160];

	snprintf(body, sizeof(body), "{\"path\":\"%s\",\"bytes\":%ld,\"seed\":%d}", path, bytes,
	        seed);
	snprintf(url, sizeof(url), "/_sim/sandboxes/%s/files", sb->id);
	ck_assert_int_eq(sk_test_post_json(sim_url, url, body), 204);
}

static void
put(const sk_sandbox *sb, const char *path, sk_file_type type, uint32_t mode, const char *target)
{
	sk_file_entry e = {
		.path = (char *)path, .type = type, .mode = mode, .link_target = (char *)target
	};
	sk_error err;

	ck_assert_msg(sk_sandbox_write_file(prov, sb, &e, NULL, NULL, &err) == 0, "%s: %s", path,
	        err.message);
}

/* A workspace: 12 MiB (three parts), an empty file, a private directory, a
 * mode, a symlink. */
static void
seed(const sk_sandbox *sb)
{
	fill(sb, WS "/data/big.bin", (12 << 20) + 7, 3);
	fill(sb, WS "/data/empty", 0, 1);
	fill(sb, WS "/notes.txt", 1000, 5);
	fill(sb, WS "/secret/key", 64, 9);
	put(sb, WS "/secret", SK_FILE_DIR, 0700, NULL);
	put(sb, WS "/latest", SK_FILE_SYMLINK, 0777, "data/big.bin");
}

static const char *const roots[] = { WS };
static const sk_copy_options opts = { .paths = roots, .npaths = 1 };

/* arc restored into a new sandbox (*into): every file identical to from's. */
static void
restore_identical(sk_archive *arc, const sk_sandbox *from, sk_sandbox *into)
{
	sk_copy_report rep = { 0 };
	sk_error err;

	new_sandbox(into);
	ck_assert_msg(sk_archive_restore(arc, prov, into, &opts, &rep, &err) == 0, "restore: %s",
	        err.message);
	sk_copy_report_free(&rep);
	ck_assert_msg(sk_workspace_verify(prov, from, prov, into, &opts, &rep, &err) == 0,
	        "the restored tree differs: %s", rep.mismatch ? rep.mismatch : err.message);
	sk_copy_report_free(&rep);
}

START_TEST(test_archive_and_restore)
{
	sk_sandbox a, b;
	sk_archive *arc = sk_archive_new(s3, "spaces/alice/3/");
	sk_archive *back = sk_archive_new(s3, "spaces/alice/3");
	sk_copy_report rep = { 0 };
	uint64_t size = 0;
	sk_error err;

	new_sandbox(&a);
	seed(&a);
	ck_assert_msg(
	        sk_archive_workspace(prov, &a, &opts, arc, "alice", sk_now_ms(), &rep, &err) == 0,
	        "archive: %s (%s)", err.message, rep.mismatch ? rep.mismatch : "");
	ck_assert_ptr_null(rep.mismatch);
	sk_copy_report_free(&rep);
	ck_assert_int_eq(sk_s3_head(s3, "spaces/alice/3/manifest.json", &size, &err), 0);
	ck_assert_int_gt(size, 0);
	ck_assert_int_eq(sk_s3_head(s3, "spaces/alice/3/files" WS "/data/big.bin", &size, &err), 0);
	ck_assert_int_eq(size, (12 << 20) + 7);
	/* into a new sandbox: the same tree, hash for hash */
	restore_identical(back, &a, &b);
	ck_assert_int_ge(sk_archive_entries(back), 7);
	/* an object changed behind the manifest's back: the restore refuses it */
	ck_assert_int_eq(
	        sk_s3_put_bytes(s3, "spaces/alice/3/files" WS "/notes.txt", "x", 1, &err), 0);
	ck_assert_int_ne(sk_archive_restore(back, prov, &b, &opts, &rep, &err), 0);
	ck_assert_msg(strstr(err.message, "differs from its manifest") != NULL ||
	                (rep.mismatch && strstr(rep.mismatch, "notes.txt")),
	        "%s", err.message);
	sk_copy_report_free(&rep);
	sk_archive_free(arc);
	sk_archive_free(back);
	sk_sandbox_dispose(&a);
	sk_sandbox_dispose(&b);
}
END_TEST

/* The S3 server dies mid-archive: an error, and no manifest once it is back
 * (the archive is incomplete: nothing may rely on it); a retry completes it. */
START_TEST(test_server_killed_mid_archive)
{
	sk_sandbox a;
	sk_archive *arc = sk_archive_new(s3, "spaces/bob/1");
	sk_copy_report rep = { 0 };
	sk_error err;
	int rc;

	new_sandbox(&a);
	seed(&a);
	/* the first object goes up, then the server is gone for the rest */
	ck_assert_int_eq(
	        sk_s3_put_bytes(s3, "spaces/bob/1/files" WS "/notes.txt", "old", 3, &err), 0);
	sk_test_stop(gw_pid, true);
	gw_pid = 0;
	rc = sk_archive_workspace(prov, &a, &opts, arc, "bob", sk_now_ms(), &rep, &err);
	ck_assert_int_ne(rc, 0);
	ck_assert_int_eq(sk_error_retry(rc), SK_RETRY_SAME);
	sk_copy_report_free(&rep);
	gw_pid = sk_test_s3_start(gw_dir, gw_port, NULL, ACCESS, SECRET, gw_url, sizeof(gw_url));
	ck_assert_int_eq(sk_archive_load(arc, &err), SK_ENOTFOUND);
	ck_assert_msg(strstr(err.message, "incomplete") != NULL, "%s", err.message);
	/* retried: complete */
	ck_assert_msg(
	        sk_archive_workspace(prov, &a, &opts, arc, "bob", sk_now_ms(), &rep, &err) == 0,
	        "retry: %s", err.message);
	sk_copy_report_free(&rep);
	ck_assert_int_eq(sk_archive_load(arc, &err), 0);
	sk_archive_free(arc);
	sk_sandbox_dispose(&a);
}
END_TEST

/* ---- pruning (archive_prune.c) ---- */

static sk_s3 *
s3_client(const char *url, const char *bucket, const char *secret)
{
	sk_s3_config cfg = { .endpoint = url,
		.bucket = bucket,
		.access_key = ACCESS,
		.secret_key = secret,
		.part_bytes = 5 << 20 };
	sk_s3 *c = NULL;
	sk_error err;

	ck_assert_int_eq(sk_s3_new(&cfg, &c, &err), 0);
	return c;
}

/* A generation made by hand: nfiles objects, and a manifest when complete. */
static void
make_gen(const char *user, const char *gen, bool complete, int nfiles)
{
	char key[256];
	sk_error err;

	for (int i = 0; i < nfiles; i++) {
		snprintf(key, sizeof(key), "spaces/%s/%s/files" WS "/f%d", user, gen, i);
		ck_assert_int_eq(sk_s3_put_bytes(s3, key, "data", 4, &err), 0);
	}
	if (complete) {
		snprintf(key, sizeof(key), "spaces/%s/%s/manifest.json", user, gen);
		ck_assert_int_eq(sk_s3_put_bytes(s3, key, "{\"entries\":[]}", 14, &err), 0);
	}
}

typedef struct gen_seen {
	char names[512];
	int objects;
} gen_seen;

static int
seen_key(void *arg, const char *key, uint64_t size)
{
	gen_seen *g = arg;
	const char *gen = strchr(strchr(key, '/') + 1, '/') + 1;
	const char *end = strchr(gen, '/');
	char one[64];

	snprintf(one, sizeof(one), "%.*s%s,", (int)(end - gen), gen,
	        strcmp(end, "/manifest.json") == 0 ? "+" : "");
	if (strstr(g->names, one) == NULL)
		strncat(g->names, one, sizeof(g->names) - strlen(g->names) - 1);
	g->objects++;
	return 0;
}

/* What is left of user's archives: "GEN[+]," per generation in the server's
 * order, '+' for a manifest. */
static gen_seen
left_of(const char *user)
{
	gen_seen g = { "", 0 };
	char prefix[128];
	sk_error err;

	snprintf(prefix, sizeof(prefix), "spaces/%s/", user);
	ck_assert_int_eq(sk_s3_list(s3, prefix, seen_key, &g, &err), 0);
	return g;
}

static void
assert_left(const char *user, const char *const *want, const char *const *gone)
{
	gen_seen g = left_of(user);
	char one[64];

	for (; *want; want++) {
		snprintf(one, sizeof(one), "%s,", *want);
		ck_assert_msg(strstr(g.names, one) != NULL, "%s: %s was deleted (left: %s)", user,
		        *want, g.names);
	}
	for (; *gone; gone++) {
		snprintf(one, sizeof(one), "%s,", *gone);
		ck_assert_msg(strstr(g.names, one) == NULL, "%s: %s was kept (left: %s)", user,
		        *gone, g.names);
		snprintf(one, sizeof(one), "%s+,", *gone);
		ck_assert_msg(strstr(g.names, one) == NULL, "%s: %s was kept (left: %s)", user,
		        *gone, g.names);
	}
}

#define NAMES(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define NONE ((const char *const[]){ NULL })

START_TEST(test_prune_keeps_the_right_generations)
{
	sk_archive_prune_report rep;
	sk_error err;

	/* 1 and 3 complete, 2 incomplete, 5 complete (the anchor), 10 newer and
	 * incomplete (in progress: untouched; 10 > 5 as numbers) */
	make_gen("carol", "1", true, 3);
	make_gen("carol", "2", false, 2);
	make_gen("carol", "3", true, 1);
	make_gen("carol", "5", true, 2);
	make_gen("carol", "10", false, 1);
	make_gen("carolyn", "1", true, 1); /* another user, the same leading letters */
	ck_assert_msg(sk_archive_prune(s3, "spaces/carol", NULL, 1, &rep, &err) == 0, "prune: %s",
	        err.message);
	ck_assert_str_eq(rep.anchor, "5");
	ck_assert_int_eq(rep.generations, 5);
	ck_assert_int_eq(rep.complete, 3);
	ck_assert_int_eq(rep.deleted, 2);
	ck_assert_int_eq(rep.objects_deleted, 3 + 1 + 2);
	assert_left("carol", NAMES("3+", "5+", "10"), NAMES("1", "2"));
	assert_left("carolyn", NAMES("1+"), NONE);
	/* again: nothing more to do */
	ck_assert_int_eq(sk_archive_prune(s3, "spaces/carol/", NULL, 1, &rep, &err), 0);
	ck_assert_int_eq(rep.deleted, 0);
	ck_assert_int_eq(rep.objects_deleted, 0);
	/* keepGenerations 0: only the newest complete one and what is newer */
	ck_assert_int_eq(sk_archive_prune(s3, "spaces/carol", NULL, 0, &rep, &err), 0);
	ck_assert_int_eq(rep.deleted, 1);
	assert_left("carol", NAMES("5+", "10"), NAMES("3"));
	/* the last restored one is kept past keepGenerations */
	make_gen("erin", "1", true, 1);
	make_gen("erin", "2", true, 1);
	make_gen("erin", "3", true, 1);
	make_gen("erin", "4", true, 1);
	ck_assert_int_eq(sk_archive_prune(s3, "spaces/erin", "1", 1, &rep, &err), 0);
	assert_left("erin", NAMES("1+", "3+", "4+"), NAMES("2"));
	/* no generation at all: nothing to do */
	ck_assert_int_eq(sk_archive_prune(s3, "spaces/nobody", NULL, 1, &rep, &err), 0);
	ck_assert_int_eq(rep.generations, 0);
}
END_TEST

/* The only complete generation is never deleted: not when it is the only
 * one, not when a newer one is incomplete (an archive cut short), not when
 * only incomplete ones exist. */
START_TEST(test_prune_never_deletes_the_only_complete_one)
{
	sk_archive_prune_report rep;
	sk_sandbox a, b;
	sk_archive *arc = sk_archive_new(s3, "spaces/dave/7");
	sk_copy_report crep = { 0 };
	sk_error err;

	/* only incomplete generations: none is known good, none goes */
	make_gen("dave", "1", false, 2);
	make_gen("dave", "2", false, 2);
	ck_assert_int_eq(sk_archive_prune(s3, "spaces/dave", NULL, 0, &rep, &err), 0);
	ck_assert_int_eq(rep.deleted, 0);
	ck_assert_str_eq(rep.anchor, "");
	assert_left("dave", NAMES("1", "2"), NONE);
	/* a real archive at 7, then an archive cut short at 8 */
	new_sandbox(&a);
	fill(&a, WS "/notes.txt", 3000, 5);
	put(&a, WS "/latest", SK_FILE_SYMLINK, 0777, "notes.txt");
	ck_assert_msg(
	        sk_archive_workspace(prov, &a, &opts, arc, "dave", sk_now_ms(), &crep, &err) == 0,
	        "archive: %s", err.message);
	sk_copy_report_free(&crep);
	make_gen("dave", "8", false, 1);
	ck_assert_int_eq(sk_archive_prune(s3, "spaces/dave", NULL, 0, &rep, &err), 0);
	ck_assert_str_eq(rep.anchor, "7");
	ck_assert_int_eq(rep.deleted, 2);
	assert_left("dave", NAMES("7+", "8"), NAMES("1", "2"));
	/* what is kept still restores, hash for hash */
	restore_identical(arc, &a, &b);
	sk_archive_free(arc);
	sk_sandbox_dispose(&a);
	sk_sandbox_dispose(&b);
}
END_TEST

/* A prune cut short by the server going away: an error naming it, and what
 * was half-deleted is incomplete (its manifest went first), finished by the
 * next prune; the anchor is never touched. */
START_TEST(test_prune_interrupted)
{
	sk_archive_prune_report rep;
	sk_s3 *wrong = s3_client(gw_url, "spaces", "wrong-secret");
	sk_error err;

	make_gen("gina", "1", true, 2);
	make_gen("gina", "2", true, 1);
	ck_assert_int_eq(
	        sk_archive_prune(wrong, "spaces/gina", NULL, 0, &rep, &err), SK_EUNAUTHORIZED);
	ck_assert_msg(strstr(err.message, "archive prune spaces/gina/") != NULL, "%s", err.message);
	ck_assert(strstr(err.message, "wrong-secret") == NULL);
	sk_s3_free(wrong);
	assert_left("gina", NAMES("1+", "2+"), NONE);
	/* a manifest deleted, the objects not yet (a prune that died there) */
	ck_assert_int_eq(sk_s3_delete(s3, "spaces/gina/1/manifest.json", &err), 0);
	ck_assert_int_eq(sk_archive_prune(s3, "spaces/gina", NULL, 1, &rep, &err), 0);
	ck_assert_int_eq(rep.deleted, 1);
	ck_assert_int_eq(rep.objects_deleted, 2);
	assert_left("gina", NAMES("2+"), NAMES("1"));
	ck_assert_int_eq(sk_archive_generation_cmp("9", "10"), -1);
	ck_assert_int_eq(sk_archive_generation_cmp("010", "10"), 0);
	ck_assert_int_gt(sk_archive_generation_cmp("b", "a"), 0);
}
END_TEST

/* ---- bad input at the engine's level ---- */

/* Nothing under prefix: no object, no manifest. */
static void
assert_nothing_under(const char *prefix)
{
	gen_seen g = { "", 0 };
	sk_error err;

	ck_assert_int_eq(sk_s3_list(s3, prefix, seen_key, &g, &err), 0);
	ck_assert_msg(g.objects == 0, "%d object(s) left under %s: %s", g.objects, prefix, g.names);
}

/* A 50 MB file made in place by the simulator: archived (multipart), then
 * restored hash for hash. The same archive to an S3 server whose disk is
 * full (versitygw on a 20 MB tmpfs) fails naming the cause, leaves no
 * manifest (incomplete: never restored from, never a prune's anchor) and
 * no half-uploaded object. */
START_TEST(test_50mb_file_and_a_full_disk)
{
	sk_sandbox a, b;
	sk_archive *arc;
	sk_archive_prune_report prep;
	sk_copy_report rep = { 0 };
	char dir[700], url[64];
	uint64_t size = 0;
	sk_s3 *full;
	sk_error err;
	pid_t small;
	int rc;

	new_sandbox(&a);
	fill(&a, WS "/big50.bin", 50L << 20, 21);
	fill(&a, WS "/notes.txt", 1000, 5);
	snprintf(dir, sizeof(dir), "%s/archive-full-%d", sk_test_tmpdir(), gw_port);
	small = sk_test_s3_start_small(dir, "spaces", ACCESS, SECRET, 20, url, sizeof(url));
	if (small < 0) {
		fprintf(stderr,
		        "archive: no user namespace for a small tmpfs here: the full-disk "
		        "case is not run\n");
	} else {
		full = s3_client(url, "spaces", SECRET);
		arc = sk_archive_new(full, "spaces/hana/1");
		rc = sk_archive_workspace(prov, &a, &opts, arc, "hana", sk_now_ms(), &rep, &err);
		sk_copy_report_free(&rep);
		ck_assert_int_ne(rc, 0);
		ck_assert_msg(strstr(err.message, "InsufficientStorage") != NULL &&
		                strstr(err.message, "archive to spaces/hana/1") != NULL,
		        "%s", err.message);
		ck_assert_int_eq(sk_error_retry(rc), SK_RETRY_SAME); /* space may come back */
		ck_assert_int_eq(sk_archive_load(arc, &err), SK_ENOTFOUND);
		ck_assert_msg(strstr(err.message, "incomplete") != NULL, "%s", err.message);
		ck_assert_int_eq(
		        sk_s3_head(full, "spaces/hana/1/files" WS "/big50.bin", &size, &err),
		        SK_ENOTFOUND); /* the multipart upload was aborted */
		ck_assert_int_eq(sk_archive_prune(full, "spaces/hana", NULL, 0, &prep, &err), 0);
		ck_assert_int_eq(prep.deleted, 0);
		ck_assert_str_eq(prep.anchor, "");
		sk_archive_free(arc);
		sk_s3_free(full);
		sk_test_stop(small, true);
	}
	/* with room: archived and restored, identical */
	arc = sk_archive_new(s3, "spaces/hana/2");
	ck_assert_msg(
	        sk_archive_workspace(prov, &a, &opts, arc, "hana", sk_now_ms(), &rep, &err) == 0,
	        "archive: %s", err.message);
	sk_copy_report_free(&rep);
	ck_assert_int_eq(sk_s3_head(s3, "spaces/hana/2/files" WS "/big50.bin", &size, &err), 0);
	ck_assert_int_eq(size, 50L << 20);
	restore_identical(arc, &a, &b);
	sk_archive_free(arc);
	sk_sandbox_dispose(&a);
	sk_sandbox_dispose(&b);
}
END_TEST

/* A wrong secret key and a missing bucket: the archive and the restore
 * fail naming the cause (never the key), nothing is written, and the
 * sandbox restored into is left as it was. */
START_TEST(test_wrong_key_and_missing_bucket)
{
	sk_s3 *wrong = s3_client(gw_url, "spaces", "not-the-archive-secret");
	sk_s3 *nobucket = s3_client(gw_url, "no-such-bucket", SECRET);
	sk_archive *arc = sk_archive_new(wrong, "spaces/ivan/1");
	sk_archive *nb = sk_archive_new(nobucket, "spaces/ivan/1");
	sk_copy_report rep = { 0 };
	sk_file_list files = { 0 };
	sk_sandbox a;
	sk_error err;
	int rc;

	new_sandbox(&a);
	fill(&a, WS "/notes.txt", 1000, 5);
	rc = sk_archive_workspace(prov, &a, &opts, arc, "ivan", sk_now_ms(), &rep, &err);
	sk_copy_report_free(&rep);
	ck_assert_int_eq(rc, SK_EUNAUTHORIZED);
	ck_assert_msg(strstr(err.message, "archive to spaces/ivan/1") != NULL &&
	                strstr(err.message, "SignatureDoesNotMatch") != NULL,
	        "%s", err.message);
	ck_assert(strstr(err.message, "not-the-archive-secret") == NULL);
	ck_assert_int_eq(sk_error_retry(rc), SK_RETRY_NEVER);
	assert_nothing_under("spaces/ivan/");
	rc = sk_archive_workspace(prov, &a, &opts, nb, "ivan", sk_now_ms(), &rep, &err);
	sk_copy_report_free(&rep);
	ck_assert_int_eq(rc, SK_ENOTFOUND);
	ck_assert_msg(strstr(err.message, "NoSuchBucket") != NULL, "%s", err.message);
	/* restores: refused before anything is written into the sandbox */
	ck_assert_int_eq(sk_archive_restore(arc, prov, &a, &opts, &rep, &err), SK_EUNAUTHORIZED);
	sk_copy_report_free(&rep);
	ck_assert_msg(strstr(err.message, "restore from spaces/ivan/1") != NULL, "%s", err.message);
	ck_assert_int_eq(sk_archive_restore(nb, prov, &a, &opts, &rep, &err), SK_ENOTFOUND);
	sk_copy_report_free(&rep);
	ck_assert_msg(strstr(err.message, "bucket no-such-bucket does not exist") != NULL &&
	                strstr(err.message, "incomplete") == NULL,
	        "%s", err.message);
	ck_assert_int_eq(sk_sandbox_list_files(prov, &a, WS, &files, &err), 0);
	ck_assert_int_eq(files.len, 1);
	sk_file_list_free(&files);
	sk_archive_free(arc);
	sk_archive_free(nb);
	sk_s3_free(wrong);
	sk_s3_free(nobucket);
	sk_sandbox_dispose(&a);
}
END_TEST

Suite *
sk_suite_archive(void)
{
	Suite *s = suite_create("archive");
	TCase *tc = tcase_create("versitygw");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_archive_and_restore);
	tcase_add_test(tc, test_server_killed_mid_archive);
	tcase_add_test(tc, test_prune_keeps_the_right_generations);
	tcase_add_test(tc, test_prune_never_deletes_the_only_complete_one);
	tcase_add_test(tc, test_prune_interrupted);
	tcase_add_test(tc, test_50mb_file_and_a_full_disk);
	tcase_add_test(tc, test_wrong_key_and_missing_bucket);
	suite_add_tcase(s, tc);
	return s;
}
