/*
 * spacectl rollout: kubectl's habit for moving a space.
 *   rollout restart userspace NAME [--now]  sets spacekeeper.dev/restartedAt
 *       to the current time (compare-and-swap on the resourceVersion read);
 *       the controller then moves the space to a new sandbox of spec.provider
 *       and spec.template, files included (status.migration). --now also sets
 *       spacekeeper.dev/rolloutNow to the same value: no wait for idle.
 *   rollout status userspace NAME [--timeout D]  follows status.migration,
 *       one progress line per change, until the binding switched (exit 0) or
 *       the migration aborted (exit 1); a timeout exits 1, as wait does.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "spacectl.h"

static const sk_cli_help help = {
	"rollout",
	"spacectl rollout restart userspace NAME [--now]\n"
	"spacectl rollout status userspace NAME [--timeout d]",
	"restart: moves the space to a new sandbox of its spec.provider and\n"
	"spec.template, with the files of spec.workspace.paths (a migration, see\n"
	"status.migration). It sets the annotation spacekeeper.dev/restartedAt to\n"
	"the current time; the controller starts once the space was idle for\n"
	"spec.migration.whenIdleFor, or at once with --now.\n"
	"\n"
	"status: prints the migration's progress until the space is bound to the\n"
	"new sandbox (exit 0) or the migration aborted (exit 1, with the reason).\n"
	"\n"
	"Flags:\n"
	"      --now             restart: do not wait for the space to be idle\n"
	"      --timeout D       status: give up after this long (default 10m; exit 1)\n"
	"\n"
	"Exit codes: 0 done; 1 not found, aborted, timeout or a conflict that\n"
	"persisted; 2 usage; 3 database unavailable.\n"
	"\n"
	"Examples:\n"
	"  spacectl rollout restart userspace alice --now\n"
	"  spacectl rollout status userspace alice --timeout 5m\n",
};

enum { OPT_NOW = SK_OPT_FIRST_CMD, OPT_ROLLOUT_TIMEOUT };

#define CAS_ATTEMPTS 5
#define POLL_MS 500
#define DEFAULT_TIMEOUT_MS (10 * 60 * 1000)

typedef struct rollout_args {
	const char *verb;
	const char *name;
	bool now;
	int64_t timeout_ms;
} rollout_args;

/* ---- restart ---- */

static int
restart_once(sk_store *st, const rollout_args *a, const char *stamp, sk_error *err)
{
	sk_userspace *cur = NULL, *written = NULL;
	int rc = sk_store_get(st, a->name, &cur, err);

	if (rc != 0)
		return rc;
	sk_kvlist_set(&cur->meta.annotations, SK_ANNOTATION_RESTARTED_AT, stamp);
	if (a->now)
		sk_kvlist_set(&cur->meta.annotations, SK_ANNOTATION_ROLLOUT_NOW, stamp);
	rc = sk_store_update(st, cur, &written, err);
	sk_userspace_free(written);
	sk_userspace_free(cur);
	return rc;
}

static int
do_restart(sk_store *st, const rollout_args *a)
{
	char stamp[64];
	sk_error err;
	int rc = SK_ECONFLICT;

	sk_time_format(sk_now_ms(), stamp, sizeof(stamp));
	for (int i = 0; i < CAS_ATTEMPTS && rc == SK_ECONFLICT; i++) {
		sk_error_clear(&err);
		rc = restart_once(st, a, stamp, &err);
	}
	if (rc == SK_ENOTFOUND) {
		sk_cli_errorf("userspaces \"%s\" not found (NotFound)", a->name);
		return SK_EXIT_FAIL;
	}
	if (rc != 0) {
		sk_cli_errorf("%s", err.message);
		return sk_cli_exit_code(rc);
	}
	printf("userspace/%s restarted%s\n", a->name, a->now ? " (now)" : "");
	return SK_EXIT_OK;
}

/* ---- status ---- */

static void
sleep_ms(int64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	while (ms > 0 && nanosleep(&ts, &ts) != 0) {
	}
}

/* The restart asked for is newer than the recorded migration's start. */
static bool
restart_pending(const sk_userspace *us)
{
	const char *v = sk_kvlist_get(&us->meta.annotations, SK_ANNOTATION_RESTARTED_AT);
	int64_t at = 0;

	return v != NULL && sk_time_parse(v, &at) == SK_OK && at > us->status.migration.start_ms;
}

/* A space whose spec asks for a move that has not started: keep waiting. */
static bool
move_wanted(const sk_userspace *us)
{
	const char *bound = us->status.provider ? us->status.provider : us->spec.provider;

	return us->status.sandbox_id != NULL &&
	        ((bound && us->spec.provider && strcmp(bound, us->spec.provider) != 0 &&
	                 us->status.migration.phase != SK_MIG_ABORTED) ||
	                restart_pending(us));
}

static void
progress_line(const sk_userspace *us, char *buf, size_t len)
{
	const sk_migration_status *m = &us->status.migration;

	if (m->phase == SK_MIG_NONE || (move_wanted(us) && !sk_migration_active(m))) {
		snprintf(buf, len, "Waiting for userspace \"%s\" migration to start...\n",
		        us->meta.name);
		return;
	}
	snprintf(buf, len,
	        "Waiting for userspace \"%s\" migration: %s, %lld/%lld files, %.1f/%.1f MiB "
	        "(%s/%s -> %s/%s)...\n",
	        us->meta.name, sk_migration_phase_name(m->phase), (long long)m->files_done,
	        (long long)m->files_total, (double)m->bytes_done / 1048576.0,
	        (double)m->bytes_total / 1048576.0, m->source.provider ? m->source.provider : "-",
	        m->source.template_id ? m->source.template_id : "-",
	        m->target.provider ? m->target.provider : "-",
	        m->target.template_id ? m->target.template_id : "-");
}

/* 0 done, 1 aborted, -1 not yet. */
static int
verdict(const sk_userspace *us)
{
	const sk_migration_status *m = &us->status.migration;

	if (move_wanted(us) && !sk_migration_active(m))
		return -1;
	if (m->phase == SK_MIG_ABORTED) {
		printf("userspace \"%s\" migration aborted: %s\n", us->meta.name,
		        m->reason ? m->reason : "unknown reason");
		return SK_EXIT_FAIL;
	}
	if (m->phase == SK_MIG_NONE || m->phase >= SK_MIG_RETIRING) {
		printf("userspace \"%s\" successfully rolled out (sandbox %s at %s)\n",
		        us->meta.name, us->status.sandbox_id ? us->status.sandbox_id : "-",
		        us->status.provider ? us->status.provider : us->spec.provider);
		return SK_EXIT_OK;
	}
	return -1;
}

static int
do_status(sk_store *st, const rollout_args *a)
{
	int64_t deadline = sk_monotonic_ms() + a->timeout_ms;
	char last[512] = "", line[512];
	sk_error err;

	for (;;) {
		sk_userspace *us = NULL;
		int rc = sk_store_get(st, a->name, &us, &err), v;
		if (rc != 0) {
			if (rc == SK_ENOTFOUND)
				sk_cli_errorf("userspaces \"%s\" not found (NotFound)", a->name);
			else
				sk_cli_errorf("%s", err.message);
			return rc == SK_ENOTFOUND ? SK_EXIT_FAIL : sk_cli_exit_code(rc);
		}
		progress_line(us, line, sizeof(line));
		v = verdict(us);
		if (v < 0 && strcmp(line, last) != 0) {
			fputs(line, stdout);
			fflush(stdout);
			snprintf(last, sizeof(last), "%s", line);
		}
		sk_userspace_free(us);
		if (v >= 0)
			return v;
		if (sk_monotonic_ms() >= deadline)
			break;
		sleep_ms(POLL_MS);
	}
	fprintf(stderr, "error: timed out waiting for the rollout of userspaces/%s\n", a->name);
	return SK_EXIT_FAIL;
}

/* ---- arguments ---- */

static int
parse_target(rollout_args *a, int argc, char **argv)
{
	const char *slash;

	if (optind >= argc)
		return sk_cli_usage_error(&help, "name a verb: restart or status");
	a->verb = argv[optind++];
	if (strcmp(a->verb, "restart") != 0 && strcmp(a->verb, "status") != 0)
		return sk_cli_usage_error(&help, "unknown verb \"%s\" (restart, status)", a->verb);
	if (optind >= argc)
		return sk_cli_usage_error(&help, "name the resource: userspace NAME");
	slash = strchr(argv[optind], '/');
	if (slash != NULL) {
		*(char *)slash = '\0';
		a->name = slash + 1;
		if (!sk_cli_is_userspace_resource(argv[optind++]))
			return sk_cli_usage_error(&help, "only userspaces roll out");
	} else if (sk_cli_is_userspace_resource(argv[optind]) && optind + 1 < argc) {
		optind++;
		a->name = argv[optind++];
	} else {
		a->name = argv[optind++];
	}
	if (optind < argc)
		return sk_cli_usage_error(&help, "unexpected argument \"%s\"", argv[optind]);
	if (a->now && strcmp(a->verb, "restart") != 0)
		return sk_cli_usage_error(&help, "--now goes with restart");
	return SK_CLI_CONTINUE;
}

static int
parse_args(rollout_args *a, int argc, char **argv)
{
	static const struct option longopts[] = { { "now", no_argument, NULL, OPT_NOW },
		{ "timeout", required_argument, NULL, OPT_ROLLOUT_TIMEOUT }, SK_CLI_GLOBAL_OPTIONS,
		{ NULL, 0, NULL, 0 } };
	int c, rc;

	a->timeout_ms = DEFAULT_TIMEOUT_MS;
	while ((c = sk_cli_getopt(argc, argv, "h", longopts)) != -1) {
		if (c == OPT_NOW) {
			a->now = true;
		} else if (c == OPT_ROLLOUT_TIMEOUT) {
			if (sk_duration_parse(optarg, &a->timeout_ms) != SK_OK)
				return sk_cli_usage_error(&help,
				        "--timeout: invalid duration \"%s\" (e.g. 60s, 5m)",
				        optarg);
		} else if ((rc = sk_cli_opt(&help, c, argv)) != SK_CLI_CONTINUE) {
			return rc;
		}
	}
	return parse_target(a, argc, argv);
}

int
sk_cmd_rollout(int argc, char **argv)
{
	rollout_args a = { 0 };
	sk_store *st = NULL;
	int rc = parse_args(&a, argc, argv);

	if (rc != SK_CLI_CONTINUE)
		return rc;
	if ((rc = sk_cli_store_open(&st)) != SK_EXIT_OK)
		return rc;
	rc = strcmp(a.verb, "restart") == 0 ? do_restart(st, &a) : do_status(st, &a);
	sk_store_close(st);
	return rc;
}
