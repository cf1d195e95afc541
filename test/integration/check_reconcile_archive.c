/*
 * The archive wired into the reconcile, against sandboxsim and a
 * real S3 server (versitygw): an asleep space past archiveAfter is archived
 * (manifest in the bucket, status.archive recorded, phase Archived, the
 * sandbox deleted only then) and a connect restores it into a new sandbox
 * with every file identical; the S3 server down leaves the sandbox bound
 * and the archive redone once it is back, after a back-off inside which
 * the sandbox is put back to sleep and never woken; a wrong secret key or a missing
 * bucket fails it with a clear error in status and events, nothing deleted;
 * a run stopped before every step
 * (the executor's fence, as a crash would) never leaves the sandbox deleted
 * without a verified archive recorded, nor two sandboxes; a deleted space's
 * archives go with it (retried while the S3 server is down).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../testutil.h"
#include "api/names.h"
#include "reconcile/reconcile_int.h" /* the archive's reasons (SK_REASON_ARCHIVED, ...) */
#include "reconcile_fixture.h"

Suite *sk_suite_reconcile_archive(void);

#define KEY_VAR "SK_TEST_RARCHIVE_KEY"
#define ACCESS "rarchive-test"
#define SECRET "rarchive-secret-0123456789"
#define WS "/home/user/ws"
#define SPEC ", lifecycle: {idleTimeout: 10m, archiveAfter: 1h}, workspace: {paths: [/home/user]}"

typedef struct afix {
	sk_rfix f;
	pid_t gw;
	int gw_port;
	char gw_url[64], gw_dir[600];
	sk_s3_config s3cfg;
	sk_s3 *s3;
	int fence_after; /* calls of may_act allowed, -1: all */
	int fence_calls;
	char *id; /* alice's sandbox (asleep_with_files) */
	sk_sandbox ref; /* a sandbox seeded as alice's */
} afix;

static int64_t clock_offset;

static int64_t
test_now(void)
{
	return sk_now_ms() + clock_offset;
}

static bool
may_act(void *arg, const char *user_id)
{
	afix *a = arg;

	if (a->fence_after < 0)
		return true;
	return a->fence_calls++ < a->fence_after;
}

/* The S3 server (again, at the same port and directory). */
static void
gw_start(afix *a)
{
	a->gw = sk_test_s3_start(
	        a->gw_dir, a->gw_port, "spaces", ACCESS, SECRET, a->gw_url, sizeof(a->gw_url));
}

static void
gw_stop(afix *a)
{
	sk_test_stop(a->gw, true);
	a->gw = 0;
}

static void
setup(afix *a)
{
	sk_error err;

	memset(a, 0, sizeof(*a));
	clock_offset = 0;
	sk_rfix_setup(&a->f, KEY_VAR);
	a->f.env.now = test_now;
	a->f.env.opts.resume_grace_ms = 2000;
	a->gw_port = sk_test_free_port();
	snprintf(a->gw_dir, sizeof(a->gw_dir), "%s/rarchive-s3-%d", sk_test_tmpdir(), a->gw_port);
	gw_start(a);
	a->s3cfg.endpoint = a->gw_url;
	a->s3cfg.bucket = "spaces";
	a->s3cfg.access_key = ACCESS;
	a->s3cfg.secret_key = SECRET;
	a->s3cfg.request_timeout_ms = 5000;
	ck_assert_int_eq(sk_s3_new(&a->s3cfg, &a->s3, &err), 0);
	a->f.env.opts.archive = true;
	a->f.env.archive_s3 = &a->s3cfg;
	a->f.env.archive_prefix = "spaces";
	a->fence_after = -1;
	a->f.env.may_act = may_act;
	a->f.env.may_act_arg = a;
}

static void
teardown(afix *a)
{
	sk_s3_free(a->s3);
	if (a->gw > 0)
		sk_test_stop(a->gw, true);
	sk_sandbox_dispose(&a->ref);
	free(a->id);
	sk_rfix_teardown(&a->f);
}

static int
list_user(afix *a, sk_sandbox_list *out)
{
	sk_kvlist match = { 0 };
	sk_error err = { 0 };
	int rc;

	memset(out, 0, sizeof(*out));
	sk_kvlist_set(&match, SK_META_USER_ID, "alice");
	sk_kvlist_set(&match, SK_META_MANAGED_BY, SK_MANAGED_BY_VALUE);
	rc = sk_sandbox_list_all(a->f.p, &match, out, &err);
	sk_kvlist_dispose(&match);
	return rc;
}

static size_t
count_user(afix *a)
{
	sk_sandbox_list l;
	size_t n = 0;

	ck_assert_int_eq(list_user(a, &l), 0);
	n = l.len;
	sk_sandbox_list_dispose(&l);
	return n;
}

static int
round_(afix *a, sk_error *err)
{
	sk_sandbox_list l = { 0 };
	sk_list_view v = { 0 };
	int64_t requeue = 0;
	int rc;

	v.listed_ms = test_now();
	v.valid = list_user(a, &l) == 0;
	v.for_user = &l;
	sk_error_clear(err);
	rc = sk_reconcile(&a->f.env, "alice", &v, &requeue, err);
	sk_sandbox_list_dispose(&l);
	return rc;
}

/* Rounds (at most n) until pred holds; returns the object. */
static sk_userspace *
until(afix *a, bool (*pred)(const sk_userspace *), int n, const char *what)
{
	sk_error err;

	for (int i = 0; i < n; i++) {
		sk_userspace *us;
		round_(a, &err);
		us = sk_rfix_get(&a->f, "alice");
		if (pred(us))
			return us;
		sk_userspace_free(us);
	}
	ck_abort_msg("alice: not %s in %d rounds (last error: %s)", what, n, err.message);
	return NULL;
}

static bool
running_marked(const sk_userspace *us)
{
	const sk_condition *w = sk_userspace_condition(us, SK_COND_WORKSPACE);

	return us->status.phase == SK_PHASE_RUNNING && sk_userspace_is_ready(us) && w != NULL &&
	        strcmp(w->status, "True") == 0;
}

static bool
idle(const sk_userspace *us)
{
	return us->status.phase == SK_PHASE_IDLE;
}

static bool
archived(const sk_userspace *us)
{
	return us->status.phase == SK_PHASE_ARCHIVED;
}

static bool
restored(const sk_userspace *us)
{
	return us->status.phase == SK_PHASE_RUNNING && sk_userspace_is_ready(us) &&
	        us->status.archive.state == SK_ARCHIVE_RESTORED;
}

static void
fill(afix *a, const char *id, const char *path, long bytes, int seed)
{
	char body[300], url[160];

	snprintf(body, sizeof(body), "{\"path\":\"%s\",\"bytes\":%ld,\"seed\":%d}", path, bytes,
	        seed);
	snprintf(url, sizeof(url), "/_sim/sandboxes/%s/files", id);
	ck_assert_int_eq(sk_test_post_json(a->f.url, url, body), 204);
}

static void
put(afix *a, const sk_sandbox *sb, const char *path, sk_file_type type, uint32_t mode,
        const char *target)
{
	sk_file_entry e = {
		.path = (char *)path, .type = type, .mode = mode, .link_target = (char *)target
	};
	sk_error err;

	ck_assert_msg(sk_sandbox_write_file(a->f.p, sb, &e, NULL, NULL, &err) == 0, "%s: %s", path,
	        err.message);
}

/* The workspace under WS: a 6 MiB file (two parts), an empty file, a
 * private directory, a mode, a symlink. */
static void
seed(afix *a, const char *id)
{
	sk_sandbox sb = { .id = (char *)id };

	fill(a, id, WS "/data/big.bin", (6 << 20) + 3, 3);
	fill(a, id, WS "/data/empty", 0, 1);
	fill(a, id, WS "/secret/key", 64, 9);
	put(a, &sb, WS "/secret", SK_FILE_DIR, 0700, NULL);
	put(a, &sb, WS "/latest", SK_FILE_SYMLINK, 0777, "data/big.bin");
}

static const char *const roots[] = { WS };
static const sk_copy_options ws_opts = { .paths = roots, .npaths = 1 };

/* The fixture, and in it a Running space with the seeded files, then
 * asleep (paused, one round sees it Idle) and past archiveAfter on the
 * planner's clock: a->id its sandbox, a->ref a sandbox seeded the same way. */
static void
setup_asleep(afix *a)
{
	sk_create_request req = { .template_id = "base", .timeout_ms = 600000 };
	sk_userspace *us;
	sk_error err;

	setup(a);
	sk_rfix_apply(&a->f, "alice", "alice", SPEC);
	us = until(a, running_marked, 8, "Running with its marker");
	a->id = sk_strdup(us->status.sandbox_id);
	sk_userspace_free(us);
	seed(a, a->id);
	ck_assert_msg(sk_sandbox_create(a->f.p, &req, &a->ref, &err) == 0, "%s", err.message);
	seed(a, a->ref.id);
	ck_assert_msg(sk_sandbox_pause(a->f.p, a->id, &err) == 0, "pause: %s", err.message);
	a->f.env.activity_ms = 0; /* nobody uses it */
	us = until(a, idle, 4, "Idle");
	sk_userspace_free(us);
	clock_offset += 2 * 3600 * 1000; /* asleep for two hours */
}

static void
assert_manifest(afix *a, const sk_userspace *us)
{
	char key[256];
	uint64_t size = 0;
	sk_error err;

	snprintf(key, sizeof(key), "%s/manifest.json", us->status.archive.key);
	ck_assert_msg(sk_s3_head(a->s3, key, &size, &err) == 0, "%s: %s", key, err.message);
	ck_assert_int_gt(size, 0);
}

/* The sandbox's state at the provider (GONE when not found). */
static sk_sandbox_state
sandbox_state(afix *a, const char *id)
{
	sk_sandbox sb = { 0 };
	sk_error err;
	int rc = sk_sandbox_get(a->f.p, id, &sb, &err);
	sk_sandbox_state st = rc == 0 ? sb.state : SK_SANDBOX_GONE;

	sk_sandbox_dispose(&sb);
	ck_assert_msg(rc == 0 || rc == SK_ENOTFOUND, "get %s: %s", id, err.message);
	return st;
}

static bool
sandbox_exists(afix *a, const char *id)
{
	sk_sandbox sb = { 0 };
	sk_error err;
	int rc = sk_sandbox_get(a->f.p, id, &sb, &err);

	sk_sandbox_dispose(&sb);
	ck_assert_msg(rc == 0 || rc == SK_ENOTFOUND, "get %s: %s", id, err.message);
	return rc == 0;
}

/* The archive's wake is told as the archive's, not a connect's. */
static void
assert_woken_by_archive(afix *a)
{
	sk_event_list l = { 0 };
	sk_error err = { 0 };
	bool found = false;

	ck_assert_int_eq(sk_store_events(a->f.store, "alice", NULL, 0, &l, &err), 0);
	for (size_t i = 0; i < l.len; i++) {
		if (strcmp(l.items[i].reason, SK_REASON_WOKEN) != 0)
			continue;
		found = true;
		ck_assert_msg(strncmp(l.items[i].message, "the archive woke sandbox ", 25) == 0,
		        "Woken: %s", l.items[i].message);
	}
	ck_assert_msg(found, "no Woken event for the archive's wake");
	sk_event_list_dispose(&l);
}

START_TEST(test_archive_then_restore)
{
	afix a;
	sk_copy_report rep = { 0 };
	sk_userspace *us;
	sk_error err;

	setup_asleep(&a);
	us = until(&a, archived, 4, "Archived");
	ck_assert_ptr_null(us->status.sandbox_id);
	ck_assert_int_eq(us->status.archive.state, SK_ARCHIVE_ARCHIVED);
	ck_assert_str_eq(us->status.archive.key, "spaces/alice/1");
	ck_assert_str_eq(us->status.archive.sandbox_id, a.id);
	ck_assert_int_eq(us->status.archive.generation, 1);
	ck_assert_int_ge(us->status.archive.files, 3);
	ck_assert_int_ge(us->status.archive.bytes, (6 << 20) + 3);
	ck_assert_int_eq(us->status.archive.intent_ms, 0);
	ck_assert(sk_userspace_is_ready(us));
	assert_manifest(&a, us);
	ck_assert(!sandbox_exists(&a, a.id));
	ck_assert(sk_rfix_has_event(&a.f, "alice", SK_REASON_ARCHIVED));
	assert_woken_by_archive(&a);
	ck_assert_str_eq(sk_userspace_condition(us, SK_COND_ARCHIVED)->status, "True");
	sk_userspace_free(us);
	/* nobody connects: nothing is created */
	us = until(&a, archived, 1, "still Archived");
	ck_assert_uint_eq(count_user(&a), 0); /* the reference has no user: not counted */
	sk_userspace_free(us);
	/* a connect: a new sandbox, the files back, verified */
	a.f.env.wake = true;
	a.f.env.activity_ms = test_now();
	us = until(&a, restored, 8, "restored");
	ck_assert_ptr_nonnull(us->status.sandbox_id);
	ck_assert_str_ne(us->status.sandbox_id, a.id);
	ck_assert_int_gt(us->status.archive.restore_ms, 0);
	ck_assert(sk_rfix_has_event(&a.f, "alice", SK_REASON_RESTORED));
	ck_assert(
	        sk_rfix_has_event(&a.f, "alice", SK_REASON_ENV_ASSERTED) || us->spec.env.len == 0);
	{
		sk_sandbox now_sb = { .id = us->status.sandbox_id };
		ck_assert_msg(sk_workspace_verify(
		                      a.f.p, &a.ref, a.f.p, &now_sb, &ws_opts, &rep, &err) == 0,
		        "the restored tree differs: %s", rep.mismatch ? rep.mismatch : err.message);
	}
	sk_copy_report_free(&rep);
	ck_assert_uint_eq(count_user(&a), 1); /* the keeper alone */
	sk_userspace_free(us);
	teardown(&a);
}
END_TEST

START_TEST(test_archive_s3_down)
{
	afix a;
	sk_userspace *us;
	sk_error err;
	const sk_condition *synced;

	setup_asleep(&a);
	gw_stop(&a);
	ck_assert_int_ne(round_(&a, &err), 0);
	us = sk_rfix_get(&a.f, "alice");
	ck_assert_int_eq(us->status.phase, SK_PHASE_IDLE);
	ck_assert_str_eq(us->status.sandbox_id, a.id);
	ck_assert_int_ne(us->status.archive.intent_ms, 0); /* the archive is under way */
	ck_assert_int_eq(us->status.archive.state, SK_ARCHIVE_NONE);
	synced = sk_userspace_condition(us, SK_COND_SYNCED);
	ck_assert_str_eq(synced->reason, SK_REASON_ARCHIVE_FAILED);
	ck_assert(sandbox_exists(&a, a.id));
	ck_assert(strstr(synced->message, SECRET) == NULL);
	ck_assert_int_eq(us->status.archive.failures, 1);
	ck_assert_int_ne(us->status.archive.failed_ms, 0);
	sk_userspace_free(us);
	/* inside the back-off: the sandbox woken for the archive goes back to
	 * sleep and no round retries (or wakes it) */
	for (int i = 0; i < 3; i++) {
		round_(&a, &err);
		us = sk_rfix_get(&a.f, "alice");
		ck_assert_int_eq(us->status.archive.failures, 1);
		ck_assert_int_eq(us->status.phase, SK_PHASE_IDLE);
		/* Synced still says why (not True/Reconciled after the failed round) */
		synced = sk_userspace_condition(us, SK_COND_SYNCED);
		ck_assert_str_eq(synced->status, "False");
		ck_assert_str_eq(synced->reason, SK_REASON_ARCHIVE_FAILED);
		sk_userspace_free(us);
		ck_assert_int_eq(sandbox_state(&a, a.id), SK_SANDBOX_PAUSED);
	}
	/* back: after the back-off (1m) the archive is redone and completes */
	gw_start(&a);
	clock_offset += 61 * 1000;
	us = until(&a, archived, 6, "Archived after the S3 server came back");
	assert_manifest(&a, us);
	synced = sk_userspace_condition(us, SK_COND_SYNCED);
	ck_assert_str_eq(synced->status, "True");
	ck_assert(!sandbox_exists(&a, a.id));
	sk_userspace_free(us);
	teardown(&a);
}
END_TEST

/* A wrong secret key and a missing bucket: the archive fails with a clear
 * error in status and events (never the key), nothing is deleted, and it
 * completes once the configuration is right. */
START_TEST(test_archive_bad_config)
{
	static const struct {
		const char *secret, *bucket, *says;
	} bad[] = { { "not-the-secret-key", "spaces", "403" },
		{ SECRET, "no-such-bucket", "no-such-bucket" } };
	afix a;
	sk_userspace *us;
	sk_error err;

	setup_asleep(&a);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const sk_condition *synced;
		clock_offset += 3600 * 1000; /* past any back-off */
		a.s3cfg.secret_key = bad[i].secret;
		a.s3cfg.bucket = bad[i].bucket;
		ck_assert_int_ne(round_(&a, &err), 0);
		us = sk_rfix_get(&a.f, "alice");
		synced = sk_userspace_condition(us, SK_COND_SYNCED);
		ck_assert_str_eq(synced->reason, SK_REASON_ARCHIVE_FAILED);
		ck_assert_msg(strstr(synced->message, bad[i].says) != NULL, "%s", synced->message);
		ck_assert(strstr(synced->message, bad[i].secret) == NULL ||
		        strcmp(bad[i].secret, SECRET) == 0);
		ck_assert(strstr(synced->message, SECRET) == NULL);
		ck_assert_str_eq(us->status.sandbox_id, a.id);
		ck_assert_int_eq(us->status.archive.state, SK_ARCHIVE_NONE);
		ck_assert_int_eq(us->status.archive.failures, (int64_t)i + 1);
		ck_assert(sandbox_exists(&a, a.id));
		sk_userspace_free(us);
	}
	ck_assert(sk_rfix_has_event(&a.f, "alice", SK_REASON_ARCHIVE_FAILED));
	a.s3cfg.secret_key = SECRET;
	a.s3cfg.bucket = "spaces";
	clock_offset += 3600 * 1000;
	us = until(&a, archived, 6, "Archived once the configuration is right");
	ck_assert_int_eq(us->status.archive.failures, 0);
	assert_manifest(&a, us);
	ck_assert(!sandbox_exists(&a, a.id));
	sk_userspace_free(us);
	teardown(&a);
}
END_TEST

/* A run stopped after n allowed steps (every provider call and store write
 * asks first), for each n, then rounds to the end: at no stop is the
 * sandbox gone while the stored status lacks the verified archive, and
 * there is never more than one sandbox of the user. */
START_TEST(test_archive_crash_at_every_step)
{
	afix a;
	sk_userspace *us;
	sk_error err;
	int n;

	setup_asleep(&a);
	for (n = 0; n < 12; n++) {
		a.fence_after = n;
		a.fence_calls = 0;
		round_(&a, &err);
		a.fence_after = -1;
		us = sk_rfix_get(&a.f, "alice");
		if (!sandbox_exists(&a, a.id)) {
			ck_assert_msg(us->status.archive.state == SK_ARCHIVE_ARCHIVED,
			        "stopped after %d steps: the sandbox is gone, no archive recorded",
			        n);
			assert_manifest(&a, us);
		}
		ck_assert_uint_le(count_user(&a), 1);
		sk_userspace_free(us);
		if (!sandbox_exists(&a, a.id))
			break;
	}
	/* stopped before the intent, the wake, the copy, the record and the delete */
	ck_assert_int_ge(n, 4);
	us = until(&a, archived, 6, "Archived");
	ck_assert(!sandbox_exists(&a, a.id));
	assert_manifest(&a, us);
	ck_assert_uint_eq(count_user(&a), 0);
	sk_userspace_free(us);
	teardown(&a);
}
END_TEST

static int
count_key(void *arg, const char *key, uint64_t size)
{
	(*(int *)arg)++;
	return 0;
}

/* The objects under spaces/alice/. */
static int
user_objects(afix *a)
{
	sk_error err;
	int n = 0;

	ck_assert_msg(sk_s3_list(a->s3, "spaces/alice/", count_key, &n, &err) == 0, "list: %s",
	        err.message);
	return n;
}

/* A deleted space (deletionPolicy Delete) takes its archives with it,
 * before its finalizer goes; with the S3 server down the purge fails, the
 * object stays (Synced False, ArchivePurgeFailed) and the next round
 * finishes it. */
START_TEST(test_archive_purged_on_delete)
{
	afix a;
	sk_userspace *us;
	sk_error err;
	const sk_condition *synced;

	setup_asleep(&a);
	us = until(&a, archived, 4, "Archived");
	sk_userspace_free(us);
	ck_assert_int_gt(user_objects(&a), 3);
	gw_stop(&a);
	ck_assert_int_eq(sk_store_mark_deleted(a.f.store, "alice", &err), 0);
	ck_assert_int_ne(round_(&a, &err), 0);
	us = sk_rfix_get(&a.f, "alice");
	ck_assert_ptr_nonnull(us);
	synced = sk_userspace_condition(us, SK_COND_SYNCED);
	ck_assert_str_eq(synced->reason, SK_REASON_ARCHIVE_PURGE_FAILED);
	ck_assert(sk_userspace_has_finalizer(us, SK_FINALIZER));
	sk_userspace_free(us);
	gw_start(&a);
	ck_assert_int_gt(user_objects(&a), 3); /* nothing went while it was down */
	ck_assert_int_eq(round_(&a, &err), 0);
	ck_assert_int_eq(sk_store_get(a.f.store, "alice", &us, &err), SK_ENOTFOUND);
	ck_assert_int_eq(user_objects(&a), 0);
	teardown(&a);
}
END_TEST

/* The object of FILE (under WS) in NAME's archive: its bytes into *out. */
static int
keep_bytes(void *arg, const void *buf, size_t len)
{
	sk_buf_append((sk_buf *)arg, buf, len);
	return 0;
}

static char *
object_key(const sk_userspace *us, const char *file)
{
	return sk_asprintf("%s/files%s%s", us->status.archive.key, WS, file);
}

static bool
restore_failed(const sk_userspace *us)
{
	return us->status.archive.failures > 0;
}

static const char *
reason_of(const sk_userspace *us, const char *type)
{
	const sk_condition *c = sk_userspace_condition(us, type);

	return c != NULL && c->reason != NULL ? c->reason : "";
}

/* An object of the archive corrupted (its checksum fails the manifest's):
 * the restore fails with the reason in Ready and Synced (RestoreFailed)
 * and counts in status.archive.failures; inside its back-off no round
 * retries it, and a connect is answered at once with RestoreFailed (the
 * planner's decision on the stored object); after it, with the object
 * whole again, the restore completes and clears the count. */
START_TEST(test_restore_fails_and_backs_off)
{
	afix a;
	sk_buf good = SK_BUF_INIT(0);
	sk_connect_decision d;
	sk_keeper_memory mem = { 0 };
	sk_copy_report rep = { 0 };
	sk_userspace *us;
	sk_error err;
	char *key;

	setup_asleep(&a);
	us = until(&a, archived, 4, "Archived");
	key = object_key(us, "/secret/key");
	sk_userspace_free(us);
	ck_assert_msg(sk_s3_get(a.s3, key, keep_bytes, &good, &err) == 0, "%s", err.message);
	ck_assert_int_eq(sk_s3_put_bytes(a.s3, key, "corrupted", 9, &err), 0);
	a.f.env.wake = true;
	a.f.env.activity_ms = test_now();
	us = until(&a, restore_failed, 8, "a failed restore");
	ck_assert_int_eq(us->status.archive.failures, 1);
	ck_assert_int_eq(us->status.archive.state, SK_ARCHIVE_ARCHIVED);
	ck_assert_str_eq(reason_of(us, SK_COND_READY), SK_REASON_RESTORE_FAILED);
	ck_assert_str_eq(reason_of(us, SK_COND_SYNCED), SK_REASON_RESTORE_FAILED);
	ck_assert(!sk_userspace_is_ready(us));
	sk_connect_decide(us, &mem, test_now(), &a.f.env.opts, &d);
	ck_assert_int_eq(d.verdict, SK_CONNECT_UNAVAILABLE);
	ck_assert_str_eq(d.reason, SK_REASON_RESTORE_FAILED);
	ck_assert_int_gt(d.retry_after_ms, 0);
	ck_assert_int_le(d.retry_after_ms, 60 * 1000);
	sk_userspace_free(us);
	/* inside the back-off: not retried, still not ready */
	for (int i = 0; i < 4; i++) {
		round_(&a, &err);
		us = sk_rfix_get(&a.f, "alice");
		ck_assert_int_eq(us->status.archive.failures, 1);
		ck_assert_str_eq(reason_of(us, SK_COND_READY), SK_REASON_RESTORE_FAILED);
		ck_assert_str_eq(reason_of(us, SK_COND_SYNCED), SK_REASON_RESTORE_FAILED);
		sk_userspace_free(us);
	}
	/* the object whole again, past the back-off (1m): restored */
	ck_assert_int_eq(sk_s3_put_bytes(a.s3, key, good.data, good.len, &err), 0);
	clock_offset += 61 * 1000;
	a.f.env.activity_ms = test_now();
	us = until(&a, restored, 8, "restored after the back-off");
	ck_assert_int_eq(us->status.archive.failures, 0);
	ck_assert_str_eq(reason_of(us, SK_COND_SYNCED), SK_REASON_RECONCILED);
	{
		sk_sandbox now_sb = { .id = us->status.sandbox_id };
		ck_assert_msg(sk_workspace_verify(
		                      a.f.p, &a.ref, a.f.p, &now_sb, &ws_opts, &rep, &err) == 0,
		        "the restored tree differs: %s", rep.mismatch ? rep.mismatch : err.message);
	}
	sk_copy_report_free(&rep);
	sk_userspace_free(us);
	sk_buf_dispose(&good);
	free(key);
	teardown(&a);
}
END_TEST

/* The ID of alice's sandbox at the provider (caller frees), NULL when none. */
static char *
user_sandbox(afix *a)
{
	sk_sandbox_list l;
	char *id = NULL;

	ck_assert_int_eq(list_user(a, &l), 0);
	if (l.len > 0)
		id = sk_strdup(l.items[0].id);
	sk_sandbox_list_dispose(&l);
	return id;
}

static bool
workspace_false(const sk_userspace *us)
{
	const sk_condition *w = sk_userspace_condition(us, SK_COND_WORKSPACE);

	return w != NULL && strcmp(w->status, "False") == 0;
}

/* The sandbox made for a connect right after the space became Archived
 * falls asleep before the restore ran (found at every step of the first
 * connect's run) and is resumed: its empty workspace is no loss
 * (WorkspaceIntact never False, no WorkspaceLost drift); the restore brings
 * the files back and writes the marker. */
START_TEST(test_restore_target_asleep_first)
{
	afix a;
	sk_copy_report rep = { 0 };
	sk_userspace *us;
	sk_error err;
	char *target = NULL;

	setup_asleep(&a);
	us = until(&a, archived, 4, "Archived");
	sk_userspace_free(us);
	a.f.env.wake = true;
	a.f.env.activity_ms = test_now();
	/* the connect's run, stopped after ever more steps (as a crash or a
	 * slow round would leave it), until its sandbox exists with the files
	 * not restored yet */
	for (int n = 0; n < 16 && target == NULL; n++) {
		a.fence_after = n;
		a.fence_calls = 0;
		round_(&a, &err);
		a.fence_after = -1;
		us = sk_rfix_get(&a.f, "alice");
		ck_assert_int_ne(us->status.archive.state, SK_ARCHIVE_RESTORED);
		target = user_sandbox(&a);
		sk_userspace_free(us);
	}
	ck_assert_msg(target != NULL, "no sandbox made before the restore");
	/* it falls asleep before the restore */
	ck_assert_msg(sk_sandbox_pause(a.f.p, target, &err) == 0, "pause: %s", err.message);
	for (int i = 0; i < 8; i++) {
		round_(&a, &err);
		us = sk_rfix_get(&a.f, "alice");
		ck_assert_msg(!workspace_false(us), "round %d: judged lost: %s", i,
		        sk_userspace_condition(us, SK_COND_WORKSPACE)->message);
		if (restored(us))
			break;
		sk_userspace_free(us);
		us = NULL;
	}
	ck_assert_msg(us != NULL, "never restored");
	ck_assert_str_eq(us->status.sandbox_id, target);
	ck_assert_str_eq(reason_of(us, SK_COND_WORKSPACE), SK_REASON_MARKER_WRITTEN);
	for (size_t i = 0; i < us->status.n_drift; i++)
		ck_assert_str_ne(us->status.drift[i].type, SK_DRIFT_WORKSPACE_LOST);
	{
		sk_sandbox now_sb = { .id = target };
		ck_assert_msg(sk_workspace_verify(
		                      a.f.p, &a.ref, a.f.p, &now_sb, &ws_opts, &rep, &err) == 0,
		        "the restored tree differs: %s", rep.mismatch ? rep.mismatch : err.message);
	}
	sk_copy_report_free(&rep);
	sk_userspace_free(us);
	/* its next resume finds the marker the restore wrote */
	ck_assert_msg(sk_sandbox_pause(a.f.p, target, &err) == 0, "pause: %s", err.message);
	for (int i = 0; i < 6; i++) {
		round_(&a, &err);
		us = sk_rfix_get(&a.f, "alice");
		ck_assert(!workspace_false(us));
		sk_userspace_free(us);
	}
	free(target);
	teardown(&a);
}
END_TEST

Suite *
sk_suite_reconcile_archive(void)
{
	Suite *s = suite_create("reconcile_archive");
	TCase *tc = tcase_create("archive");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_archive_then_restore);
	tcase_add_test(tc, test_archive_s3_down);
	tcase_add_test(tc, test_archive_bad_config);
	tcase_add_test(tc, test_archive_crash_at_every_step);
	tcase_add_test(tc, test_archive_purged_on_delete);
	tcase_add_test(tc, test_restore_fails_and_backs_off);
	tcase_add_test(tc, test_restore_target_asleep_first);
	suite_add_tcase(s, tc);
	return s;
}
