/*
 * archivebench: the archive engine of `make bench`'s "archive" scenario
 * (test/bench/archive.sh). The engine the controller runs
 * (sk_archive_workspace, sk_archive_restore in pkg/reconcile/archive.c),
 * between a sandboxsim and a real S3 server (versitygw), measured in this
 * process: its wall time, CPU time (getrusage) and peak RSS (VmHWM).
 *
 *   1. N spaces, each a workspace of SIZE_MB (one file made in place by the
 *      simulator, plus a few small files and a symlink), archived by W
 *      workers at once; the sources then deleted (archive-then-delete).
 *   2. Each restored into a new sandbox (copy back, verified against the
 *      manifest hash for hash).
 *   3. One space of BIG_MB: archived, restored (timed), then moved to a
 *      second simulator with the migration engine (sk_workspace_copy and
 *      sk_workspace_verify between two providers, as a spec.provider change
 *      does): the restore against the provider-to-provider move.
 *
 *   archivebench --sim URL --sim2 URL --s3 URL --access A --secret S
 *                [--bucket spaces] [-n 200] [--size-mb 10] [-w 8] [--big-mb 1024]
 *
 * A provider client and an S3 client per worker thread (each owns a curl
 * handle). Prints "archivebench: ..." lines; exits 1 on any failed archive,
 * restore or verify.
 */
#include <curl/curl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "objstore/objstore.h"
#include "reconcile/archive_int.h"
#include "sandbox/sandbox.h"

#define KEY "e2b_0000000000000000000000000000000000000000"
#define WS "/home/user/ws"
#define MB (1024.0 * 1024.0)

static struct {
	const char *sim, *sim2, *s3, *access, *secret, *bucket;
	int n, workers;
	long size_mb, big_mb;
} o = { .bucket = "spaces", .n = 200, .workers = 8, .size_mb = 10, .big_mb = 1024 };

static const char *const roots[] = { WS };
static const sk_copy_options copts = { .paths = roots, .npaths = 1 };

typedef struct space {
	sk_sandbox sb;
	char prefix[64];
} space;

static space *spaces;
static int next_index;
static bool failed;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static sk_provider *
provider(const char *url)
{
	sk_provider_config c = { 0 };
	sk_provider *p = NULL;
	sk_error err;

	setenv("SK_ARCHIVEBENCH_KEY", KEY, 1);
	c.name = "bench";
	c.type = SK_PROVIDER_E2B;
	c.api_url = (char *)url;
	c.sandbox_url = (char *)url;
	c.domain = "e2b.app";
	c.api_key_env = "SK_ARCHIVEBENCH_KEY";
	c.max_in_flight = 64;
	c.qps = 100000;
	c.burst = 100000;
	c.request_timeout_ms = 120000;
	c.sandbox_timeout_ms = 3600000;
	if (sk_provider_new(&c, &p, &err) != 0) {
		fprintf(stderr, "archivebench: provider %s: %s\n", url, err.message);
		exit(1);
	}
	return p;
}

static sk_s3 *
s3_client(void)
{
	sk_s3_config c = { .endpoint = o.s3,
		.bucket = o.bucket,
		.access_key = o.access,
		.secret_key = o.secret,
		.request_timeout_ms = 120000 };
	sk_s3 *s = NULL;
	sk_error err;

	if (sk_s3_new(&c, &s, &err) != 0) {
		fprintf(stderr, "archivebench: s3: %s\n", err.message);
		exit(1);
	}
	return s;
}

static void
fail(const char *what, const char *id, const sk_error *err)
{
	pthread_mutex_lock(&lock);
	if (!failed)
		fprintf(stderr, "archivebench: %s %s: %s\n", what, id, err->message);
	failed = true;
	pthread_mutex_unlock(&lock);
}

/* A file of bytes made in place by the simulator (POST /_sim/sandboxes/ID/files). */
static bool
sim_fill(const char *sim, const char *id, const char *path, long bytes, int seed)
{
	char url[256], body[256];
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	CURL *c = curl_easy_init();
	long st = 0;

	snprintf(url, sizeof(url), "%s/_sim/sandboxes/%s/files", sim, id);
	snprintf(body, sizeof(body), "{\"path\":\"%s\",\"bytes\":%ld,\"seed\":%d}", path, bytes,
	        seed);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
	curl_easy_cleanup(c);
	curl_slist_free_all(h);
	return st == 204;
}

static bool
new_sandbox(sk_provider *p, const char *user, sk_sandbox *out)
{
	sk_create_request req = {
		.template_id = "base", .timeout_ms = 3600000, .auto_pause = true
	};
	sk_kvlist meta = { 0 };
	sk_error err;
	int rc;

	sk_kvlist_set(&meta, "user_id", user);
	req.metadata = &meta;
	rc = sk_sandbox_create(p, &req, out, &err);
	sk_kvlist_dispose(&meta);
	if (rc != 0)
		fail("create", user, &err);
	return rc == 0;
}

/* A workspace: one file of mb MiB, four small files, a symlink. */
static bool
seed(sk_provider *p, const char *sim, const sk_sandbox *sb, long mb, int i)
{
	sk_file_entry link = { .path = WS "/latest",
		.type = SK_FILE_SYMLINK,
		.mode = 0777,
		.link_target = "data.bin" };
	char path[64];
	sk_error err;

	if (!sim_fill(sim, sb->id, WS "/data.bin", mb << 20, i + 1))
		return false;
	for (int k = 0; k < 4; k++) {
		snprintf(path, sizeof(path), WS "/notes/n%d.txt", k);
		if (!sim_fill(sim, sb->id, path, 2000, i * 8 + k))
			return false;
	}
	if (sk_sandbox_write_file(p, sb, &link, NULL, NULL, &err) != 0) {
		fail("symlink", sb->id, &err);
		return false;
	}
	return true;
}

static void
kill_quiet(sk_provider *p, const char *id)
{
	sk_error err;

	if (id != NULL)
		sk_sandbox_kill(p, id, &err);
}

typedef struct phase {
	int kind; /* 0 seed, 1 archive, 2 restore */
	uint64_t bytes;
} phase;

static void *
worker(void *arg)
{
	phase *ph = arg;
	sk_provider *p = provider(o.sim); /* a client per thread */
	sk_s3 *s3 = s3_client();
	sk_copy_report rep = { 0 };
	char user[32];
	sk_error err;
	int i;

	for (;;) {
		pthread_mutex_lock(&lock);
		i = failed ? o.n : next_index++;
		pthread_mutex_unlock(&lock);
		if (i >= o.n)
			break;
		space *s = &spaces[i];
		snprintf(user, sizeof(user), "u%04d", i);
		if (ph->kind == 0) {
			snprintf(s->prefix, sizeof(s->prefix), "%s/1", user);
			if (new_sandbox(p, user, &s->sb))
				seed(p, o.sim, &s->sb, o.size_mb, i);
			continue;
		}
		sk_archive *a = sk_archive_new(s3, s->prefix);
		int rc;
		if (ph->kind == 1) {
			rc = sk_archive_workspace(
			        p, &s->sb, &copts, a, user, sk_now_ms(), &rep, &err);
			if (rc == 0)
				rc = sk_sandbox_kill(p, s->sb.id, &err);
		} else {
			sk_sandbox_dispose(&s->sb);
			rc = new_sandbox(p, user, &s->sb) ? 0 : SK_ERROR;
			if (rc == 0)
				rc = sk_archive_restore(a, p, &s->sb, &copts, &rep, &err);
		}
		if (rc != 0)
			fail(ph->kind == 1 ? "archive" : "restore", user, &err);
		pthread_mutex_lock(&lock);
		ph->bytes += ((uint64_t)o.size_mb << 20) + 4 * 2000;
		pthread_mutex_unlock(&lock);
		sk_copy_report_free(&rep);
		sk_archive_free(a);
	}
	sk_s3_free(s3);
	sk_provider_free(p);
	return NULL;
}

static double
cpu_s(void)
{
	struct rusage u;

	getrusage(RUSAGE_SELF, &u);
	return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 +
	        (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec / 1e6;
}

static long
peak_rss_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "VmHWM:", 6) == 0)
			kb = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

/* Runs one phase over every space with the workers; prints its figures. */
static void
run_phase(int kind, const char *name)
{
	pthread_t *t = sk_calloc((size_t)o.workers, sizeof(*t));
	phase ph = { kind, 0 };
	double w0 = (double)sk_monotonic_ms() / 1000, c0 = cpu_s(), wall, cpu, gb;

	next_index = 0;
	for (int i = 0; i < o.workers; i++)
		pthread_create(&t[i], NULL, worker, &ph);
	for (int i = 0; i < o.workers; i++)
		pthread_join(t[i], NULL);
	free(t);
	if (failed)
		exit(1);
	wall = (double)sk_monotonic_ms() / 1000 - w0;
	cpu = cpu_s() - c0;
	gb = (double)ph.bytes / (MB * 1024);
	if (kind == 0) {
		printf("archivebench: seed %d spaces x %ld MB in %.1fs\n", o.n, o.size_mb, wall);
		return;
	}
	printf("archivebench: %s %d spaces, %.0f MB in %.1fs: %.1f MB/s, %.1f spaces/s\n", name,
	        o.n, (double)ph.bytes / MB, wall, (double)ph.bytes / MB / wall, o.n / wall);
	printf("archivebench: %s engine CPU %.1fs = %.0f%% of wall, %.1fs per GB\n", name, cpu,
	        100 * cpu / wall, gb > 0 ? cpu / gb : 0);
	fflush(stdout);
}

/* One space of big_mb: archive, restore, then the migration engine's move
 * of the same files to the second simulator. */
static void
big_space(sk_provider *p, sk_provider *p2)
{
	sk_s3 *s3 = s3_client();
	sk_archive *a = sk_archive_new(s3, "big/1");
	sk_copy_report rep = { 0 };
	sk_sandbox src, back, dst;
	sk_error err;
	double t0, archive_s, restore_s, move_s;

	if (!new_sandbox(p, "big", &src) ||
	        !sim_fill(o.sim, src.id, WS "/big.bin", o.big_mb << 20, 77))
		exit(1);
	t0 = (double)sk_monotonic_ms() / 1000;
	if (sk_archive_workspace(p, &src, &copts, a, "big", sk_now_ms(), &rep, &err) != 0)
		fail("archive", "big", &err);
	archive_s = (double)sk_monotonic_ms() / 1000 - t0;
	sk_copy_report_free(&rep);
	if (failed || sk_sandbox_kill(p, src.id, &err) != 0 || !new_sandbox(p, "big", &back))
		exit(1);
	t0 = (double)sk_monotonic_ms() / 1000;
	if (sk_archive_restore(a, p, &back, &copts, &rep, &err) != 0)
		fail("restore", "big", &err);
	restore_s = (double)sk_monotonic_ms() / 1000 - t0;
	sk_copy_report_free(&rep);
	if (failed || !new_sandbox(p2, "big", &dst))
		exit(1);
	t0 = (double)sk_monotonic_ms() / 1000;
	if (sk_workspace_copy(p, &back, p2, &dst, &copts, NULL, NULL, &rep, &err) != 0 ||
	        (sk_copy_report_free(&rep),
	                sk_workspace_verify(p, &back, p2, &dst, &copts, &rep, &err) != 0))
		fail("move", "big", &err);
	move_s = (double)sk_monotonic_ms() / 1000 - t0;
	sk_copy_report_free(&rep);
	if (failed)
		exit(1);
	printf("archivebench: one %ld MB space: archive %.1fs, restore %.1fs (%.1f MB/s), "
	       "provider-to-provider move %.1fs (%.1f MB/s): restore/move %.2f\n",
	        o.big_mb, archive_s, restore_s, (double)o.big_mb / restore_s, move_s,
	        (double)o.big_mb / move_s, restore_s / move_s);
	kill_quiet(p, back.id);
	kill_quiet(p2, dst.id);
	sk_sandbox_dispose(&src);
	sk_sandbox_dispose(&back);
	sk_sandbox_dispose(&dst);
	sk_archive_free(a);
	sk_s3_free(s3);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = { { "sim", required_argument, NULL, 'S' },
		{ "sim2", required_argument, NULL, 'T' }, { "s3", required_argument, NULL, 'E' },
		{ "access", required_argument, NULL, 'A' },
		{ "secret", required_argument, NULL, 'K' },
		{ "bucket", required_argument, NULL, 'B' },
		{ "size-mb", required_argument, NULL, 'm' },
		{ "big-mb", required_argument, NULL, 'g' }, { 0 } };
	sk_provider *p, *p2;
	int ch;

	while ((ch = getopt_long(argc, argv, "n:w:", opts, NULL)) != -1) {
		switch (ch) {
		case 'S': o.sim = optarg; break;
		case 'T': o.sim2 = optarg; break;
		case 'E': o.s3 = optarg; break;
		case 'A': o.access = optarg; break;
		case 'K': o.secret = optarg; break;
		case 'B': o.bucket = optarg; break;
		case 'n': o.n = atoi(optarg); break;
		case 'w': o.workers = atoi(optarg); break;
		case 'm': o.size_mb = atol(optarg); break;
		case 'g': o.big_mb = atol(optarg); break;
		default: fprintf(stderr, "usage: see test/bench/archivebench.c\n"); return 2;
		}
	}
	if (!o.sim || !o.sim2 || !o.s3 || !o.access || !o.secret || o.n < 1 || o.workers < 1) {
		fprintf(stderr, "archivebench: want --sim, --sim2, --s3, --access, --secret\n");
		return 2;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	p = provider(o.sim);
	p2 = provider(o.sim2);
	spaces = sk_calloc((size_t)o.n, sizeof(*spaces));
	printf("archivebench: %d spaces x %ld MB, %d workers\n", o.n, o.size_mb, o.workers);
	run_phase(0, "seed");
	run_phase(1, "archive");
	run_phase(2, "restore");
	printf("archivebench: peak RSS after %d spaces %.1f MB (target < 64)\n", o.n,
	        peak_rss_kb() / 1024.0);
	for (int i = 0; i < o.n; i++) {
		kill_quiet(p, spaces[i].sb.id);
		sk_sandbox_dispose(&spaces[i].sb);
	}
	free(spaces);
	if (o.big_mb > 0)
		big_space(p, p2);
	printf("archivebench: peak RSS %.1f MB (target < 64)\n", peak_rss_kb() / 1024.0);
	sk_provider_free(p);
	sk_provider_free(p2);
	curl_global_cleanup();
	return 0;
}
