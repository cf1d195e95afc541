/*
 * sandboxsim: an E2B-compatible sandbox API and envd health endpoint on
 * loopback, with CubeSandbox and Daytona flavours and fault injection.
 * The test double for every provider test and the demo's default provider.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim.h"
#include "util/clidoc.h"

/* The help: --help prints it, `sandboxsim __gen-docs FORMAT DIR` renders it
 * as the reference pages (pkg/util/clidoc.h says the format). */
static const char usage_lines[] =
        "sandboxsim --listen HOST:PORT [--flavor e2b|cube|daytona] [--api-key KEY]\n"
        "           [--latency DUR] [--seed N] [--faults FILE.json] [--domain NAME] "
        "[--preload N]\n"
        "           [--daytona-minute DUR] [--paused-retention DUR] [--max-running N]\n"
        "           [--creates-per-second R]";

static const char help_text[] =
        "An E2B-compatible sandbox API (and envd GET /health) on one listener.\n"
        "\n"
        "Flags:\n"
        "  --listen HOST:PORT   address to serve on (PORT 0 picks one)\n"
        "  --flavor NAME        e2b (default) | cube | daytona\n"
        "  --api-key KEY        require this key (X-API-Key; Cube also Bearer; Daytona\n"
        "                       Bearer). Without it E2B accepts any key matching\n"
        "                       ^e2b_[0-9a-f]+$, Cube needs none, Daytona any Bearer.\n"
        "  --latency DUR        added to every control-plane call (e.g. 20ms)\n"
        "  --seed N             seed of IDs, jitter and error rates (default: time)\n"
        "  --faults FILE.json   initial fault document (see below)\n"
        "  --domain NAME        sandbox domain returned to clients (default sim.local,\n"
        "                       cube: cube.app)\n"
        "  --preload N          create N running sandboxes (metadata user_id=u<i>,\n"
        "                       managed_by=spacekeeper) at start, for benchmarks\n"
        "  --daytona-minute DUR  length of a Daytona auto-stop minute (default 60s;\n"
        "                       tests use e.g. 1s)\n"
        "  --paused-retention DUR  a sandbox paused (stopped) this long is deleted, as\n"
        "                       E2B deletes paused sandboxes after 30 days (default:\n"
        "                       never)\n"
        "  --max-running N      a plan's concurrency limit: a create or resume with N\n"
        "                       sandboxes running gets E2B's 429 (0: none, default)\n"
        "  --creates-per-second R  a plan's start rate (creates and resumes, burst\n"
        "                       max(1, R)): beyond it 429 Rate limit exceeded with\n"
        "                       Retry-After (0: none, default)\n"
        "  -h, --help           this text\n"
        "\n"
        "The data plane (envd), routed by E2b-Sandbox-Id/E2b-Sandbox-Port headers or\n"
        "Host {port}-{id}.{domain}: GET /health (204 running, 502 otherwise), POST /init\n"
        "(merges envVars into the sandbox-wide env), GET /envs, and\n"
        "POST /process.Process/Start (Connect, JSON codec) evaluating echo, env and\n"
        "printenv; anything else exits 127. A resume drops the create-time envVars:\n"
        "only what /init set survives (the login-shell env defect).\n"
        "\n"
        "E2B's team volumes (GET|POST /volumes, GET|DELETE /volumes/{id}, NewSandbox\n"
        "volumeMounts), persistent snapshots (POST /sandboxes/{id}/snapshots, GET\n"
        "/snapshots, a create whose templateID names one), fork (POST\n"
        "/sandboxes/{id}/fork) and metrics (GET /sandboxes/metrics,\n"
        "/sandboxes/{id}/metrics) answer with the shapes and status codes of E2B's\n"
        "API document; the API's GET /health answers 204.\n"
        "\n"
        "The admin API (no key): GET|POST|DELETE /_sim/faults, GET /_sim/sandboxes,\n"
        "POST /_sim/sandboxes/{id}/kill|pause, POST /_sim/sandboxes/{id}/files\n"
        "({\"path\", \"bytes\", \"seed\"}: a file of pseudo-random bytes), POST /_sim/reset,\n"
        "GET /_sim/stats, POST /_sim/stats/reset.\n"
        "\n"
        "The fault document (POST merges per key; null removes an entry):\n"
        "\n"
        "  {\"latency\": {\"<endpoint>|*\": {\"fixed_ms\": 100, \"jitter_ms\": 50}},\n"
        "   \"errors\": {\"<endpoint>|*\": {\"rate\": 0.5, \"status\": 429,\n"
        "                                \"retry_after_s\": 2, \"count\": 3}},\n"
        "   \"resume_504_s\": 5, \"unreachable\": [\"<id>\"], \"list_empty_s\": 10,\n"
        "   \"overload\": {\"max_inflight\": 8, \"retry_after_s\": 2},\n"
        "   \"resume_lose_files\": {\"mode\": \"empty|partial\", \"count\": 1},\n"
        "   \"bodies\": {\"<endpoint>|*\": {\"mode\": \"truncate|garbage|oversize\",\n"
        "                                \"size_mb\": 16, \"count\": 1}},\n"
        "   \"caps\": {\"max_running\": 5, \"creates_per_second\": 1}}\n"
        "\n"
        "Its endpoints: create get list list_v1 kill pause connect resume timeout\n"
        "refreshes start stop archive labels autostop volumes snapshots fork metrics\n"
        "api_health health envd init process files filesystem network; \"*\" = every\n"
        "control-plane endpoint. list_empty_s -1 = until cleared.\n"
        "\n"
        "Exit codes: 0 stopped by SIGTERM or SIGINT (or --help); 1 could not serve\n"
        "(the listener); 2 usage, or an invalid --faults document.\n";

#define SHORT_OPTS "h"

static const struct option longopts[] = { { "listen", 1, NULL, 'l' }, { "flavor", 1, NULL, 'f' },
	{ "api-key", 1, NULL, 'k' }, { "latency", 1, NULL, 'L' }, { "seed", 1, NULL, 's' },
	{ "faults", 1, NULL, 'F' }, { "domain", 1, NULL, 'd' }, { "preload", 1, NULL, 'p' },
	{ "daytona-minute", 1, NULL, 'm' }, { "paused-retention", 1, NULL, 'P' },
	{ "max-running", 1, NULL, 'M' }, { "creates-per-second", 1, NULL, 'R' },
	{ "help", 0, NULL, 'h' }, { NULL, 0, NULL, 0 } };

/* Prints the usage lines, and with full the whole help. */
static void
usage(FILE *f, bool full)
{
	sk_buf b = SK_BUF_INIT(0);

	sk_clidoc_usage(usage_lines, &b);
	fprintf(f, "%s%s%s", b.data, full ? "\n" : "", full ? help_text : "");
	sk_buf_dispose(&b);
}

struct opts {
	char host[64];
	int port;
	const char *faults;
	int preload;
	json_t *caps; /* --max-running, --creates-per-second */
};

static int
parse_listen(const char *arg, struct opts *o)
{
	const char *colon = strrchr(arg, ':');
	char *end;
	long port;

	if (colon == NULL || colon == arg || (size_t)(colon - arg) >= sizeof(o->host))
		return -1;
	port = strtol(colon + 1, &end, 10);
	if (*end != '\0' || port < 0 || port > 65535)
		return -1;
	memcpy(o->host, arg, (size_t)(colon - arg));
	o->host[colon - arg] = '\0';
	if (strcmp(o->host, "localhost") == 0)
		snprintf(o->host, sizeof(o->host), "127.0.0.1");
	o->port = (int)port;
	return 0;
}

static int
parse_flavor(const char *arg)
{
	if (strcmp(arg, "e2b") == 0)
		return SIM_E2B;
	if (strcmp(arg, "cube") == 0)
		return SIM_CUBE;
	if (strcmp(arg, "daytona") == 0)
		return SIM_DAYTONA;
	return -1;
}

static int
bad(const char *what, const char *arg)
{
	fprintf(stderr, "sandboxsim: invalid %s: %s\n", what, arg);
	usage(stderr, false);
	return 2;
}

/* --max-running N, --creates-per-second R: the caps fault entry. */
static int
cap_flag(struct opts *o, bool running, const char *arg)
{
	char *end;
	double v = strtod(arg, &end);

	if (*end != '\0' || end == arg || v < 0 || (running && v != (double)(int)v))
		return -1;
	if (o->caps == NULL)
		o->caps = json_object();
	if (running)
		json_object_set_new(o->caps, "max_running", json_integer((json_int_t)v));
	else
		json_object_set_new(o->caps, "creates_per_second", json_real(v));
	return 0;
}

static int
parse_args(int argc, char **argv, sim *s, struct opts *o)
{
	int c;

	while ((c = getopt_long(argc, argv, SHORT_OPTS, longopts, NULL)) != -1) {
		switch (c) {
		case 'l':
			if (parse_listen(optarg, o) != 0)
				return bad("--listen", optarg);
			break;
		case 'f':
			if ((s->flavor = parse_flavor(optarg)) < 0)
				return bad("--flavor", optarg);
			break;
		case 'k': s->api_key = sk_strdup(optarg); break;
		case 'L':
			if (sk_duration_parse(optarg, &s->latency_ms) != 0)
				return bad("--latency", optarg);
			break;
		case 's': s->seed = strtoull(optarg, NULL, 10); break;
		case 'F': o->faults = optarg; break;
		case 'd': s->domain = sk_strdup(optarg); break;
		case 'p': o->preload = atoi(optarg); break;
		case 'm':
			if (sk_duration_parse(optarg, &s->minute_ms) != 0 || s->minute_ms <= 0)
				return bad("--daytona-minute", optarg);
			break;
		case 'M':
		case 'R':
			if (cap_flag(o, c == 'M', optarg) != 0)
				return bad(c == 'M' ? "--max-running" : "--creates-per-second",
				        optarg);
			break;
		case 'P':
			if (sk_duration_parse(optarg, &s->paused_retention_ms) != 0 ||
			        s->paused_retention_ms < 0)
				return bad("--paused-retention", optarg);
			break;
		case 'h': usage(stdout, true); return 1;
		default: usage(stderr, false); return 2;
		}
	}
	if (optind < argc)
		return bad("argument", argv[optind]);
	if (o->host[0] == '\0') {
		fprintf(stderr, "sandboxsim: --listen is required\n");
		usage(stderr, false);
		return 2;
	}
	return 0;
}

static int
load_faults(sim *s, const char *path)
{
	char why[300];
	json_error_t jerr;
	json_t *doc = json_load_file(path, 0, &jerr);
	int rc;

	if (doc == NULL) {
		fprintf(stderr, "sandboxsim: %s:%d: %s\n", path, jerr.line, jerr.text);
		return -1;
	}
	rc = sim_faults_apply_json(&s->faults, doc, why, sizeof(why));
	json_decref(doc);
	if (rc != 0)
		fprintf(stderr, "sandboxsim: %s: %s\n", path, why);
	return rc;
}

/* sandboxsim __gen-docs markdown|man DIR (hidden; make docs). */
static int
gen_docs(int argc, char **argv)
{
	static const char *const see[] = { "spacekeeper", "spacectl" };
	sk_clidoc_page p = { "sandboxsim", NULL,
		"an E2B-compatible sandbox provider on loopback, with fault injection", usage_lines,
		help_text, NULL, NULL, longopts, SHORT_OPTS, NULL, 0, see, 2 };
	sk_clidoc_format fmt;
	sk_error err;

	if (argc != 4 || sk_clidoc_format_parse(argv[2], &fmt) != SK_OK) {
		fprintf(stderr, "usage: sandboxsim __gen-docs markdown|man DIR\n");
		return 2;
	}
	sk_error_clear(&err);
	if (sk_clidoc_write(&p, fmt, argv[3], &err) != SK_OK) {
		fprintf(stderr, "sandboxsim: %s\n", err.message);
		return 1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	static sim s;
	struct opts o = { .port = 0 };
	char why[300];
	sigset_t set;
	int rc;

	if (argc > 1 && strcmp(argv[1], "__gen-docs") == 0)
		return gen_docs(argc, argv);
	s.flavor = SIM_E2B;
	s.minute_ms = 60000;
	s.seed = (uint64_t)time(NULL) * 2654435761u;
	if ((rc = parse_args(argc, argv, &s, &o)) != 0)
		goto done;
	if (s.domain == NULL)
		s.domain = sk_strdup(s.flavor == SIM_CUBE ? "cube.app" : "sim.local");
	pthread_mutex_init(&s.lock, NULL);
	pthread_mutex_init(&s.stats.lock, NULL);
	sim_store_init(&s.store, s.seed);
	sim_faults_init(&s.faults, s.seed);
	if (o.faults && load_faults(&s, o.faults) != 0) {
		rc = 2;
		goto cleanup;
	}
	if (o.caps && sim_caps_parse(&s.faults.caps, o.caps, why, sizeof(why)) != 0) {
		fprintf(stderr, "sandboxsim: %s\n", why);
		rc = 2;
		goto cleanup;
	}
	if (o.preload > 0)
		sim_preload(&s, o.preload);
	/* Every thread inherits the blocked mask; sim_serve waits with sigwait. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	rc = sim_serve(&s, o.host, o.port) == 0 ? 0 : 1;
cleanup:
	sim_proc_free_all(&s);
	sim_store_clear(&s.store);
	sim_volumes_clear(&s);
	free(s.store.buckets);
	sim_faults_destroy(&s.faults);
	pthread_mutex_destroy(&s.stats.lock);
	pthread_mutex_destroy(&s.lock);
done:
	json_decref(o.caps);
	free(s.api_key);
	free(s.domain);
	return rc == 1 && o.host[0] == '\0' ? 0 : rc;
}
