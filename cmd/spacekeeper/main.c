/*
 * spacekeeper: the controller daemon. Flags and config -> sk_controller;
 * signals; --once. No logic of its own beyond wiring.
 */
#include <curl/curl.h>
#include <getopt.h>
#include <malloc.h>
#include <mongoc/mongoc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sysexits.h>
#include <unistd.h>

#include "api/config.h"
#include "api/errlist.h"
#include "api/flags.h"
#include "controller/controller.h"
#include "spacekeeper.h"
#include "store/store.h"
#include "util/clidoc.h"
#include "util/version.h"

typedef struct flags {
	sk_config_sources cfg; /* --config and the settings it holds, as typed */
	int64_t poll_ms;
	int64_t once_timeout_ms;
	bool once;
	sk_log_config log;
} flags;

/* The help: --help prints it, `spacekeeper __gen-docs FORMAT DIR` renders it
 * as the reference pages (pkg/util/clidoc.h says the format). */
static const char usage_lines[] =
        "spacekeeper [--config FILE] [--mongodb-uri URI] [--database NAME]\n"
        "            [--workers N] [--resync DURATION] [--listen HOST:PORT]\n"
        "            [--connect-listen HOST:PORT] [--connect-token-file FILE]\n"
        "            [--connect-insecure] [--connect-tls-cert-file FILE\n"
        "            --connect-tls-key-file FILE] [--connect-max-waiting N]\n"
        "            [--connect-max-connections N] [--connect-max-per-ip N]\n"
        "            [--store-unavailable-after DURATION]\n"
        "            [--shards N] [--id ID] [--advertise-address HOST:PORT]\n"
        "            [--lease-duration D] [--renew-deadline D] [--retry-period D]\n"
        "            [--poll DURATION] [--log-format text|json]\n"
        "            [--log-level debug|info|warn|error] [--once [--once-timeout D]]";

static const char help_text[] =
        "The spacekeeper controller: keeps one resident sandbox per UserSpace.\n"
        "\n"
        "Flags:\n"
        "  -c, --config FILE    ControllerConfig YAML (default: built-in defaults)\n"
        "  --mongodb-uri URI    MongoDB URI (env SPACEKEEPER_MONGODB_URI)\n"
        "  --database NAME      database name (default spacekeeper)\n"
        "  --workers N          concurrent reconciles, 1..1024 (default 8)\n"
        "  --resync DURATION    provider list + full resync period (default 30s)\n"
        "  --listen HOST:PORT   /healthz /readyz /metrics and the status page\n"
        "                       (default 127.0.0.1:9090; \"\" disables)\n"
        "  --connect-listen HOST:PORT  the connect API (/v1/...) alone\n"
        "                       (default 127.0.0.1:9091; \"\" disables)\n"
        "  --connect-token-file FILE   bearer token the connect API requires\n"
        "  --connect-insecure   allow a non-loopback connect listener without a token\n"
        "  --connect-tls-cert-file FILE, --connect-tls-key-file FILE\n"
        "                       serve the connect API over HTTPS (PEM)\n"
        "  --connect-max-waiting N      connects in progress at once (default 1024;\n"
        "                       beyond: 429 with Retry-After)\n"
        "  --connect-max-connections N  open connect connections (default 16384)\n"
        "  --connect-max-per-ip N       per client address (default 0: no cap)\n"
        "  --store-unavailable-after D  /readyz 503 once the database has not\n"
        "                       answered for D (default 30s)\n"
        "  --shards N           shards of users that replicas share, 1..4096 (default 64)\n"
        "  --id ID              this replica's identity (default HOSTNAME-PID)\n"
        "  --advertise-address HOST:PORT  where other replicas forward connects\n"
        "                       (default the --connect-listen address)\n"
        "  --lease-duration D   shard lease duration (default 15s)\n"
        "  --renew-deadline D   stop acting when not renewed within D (default 10s)\n"
        "  --retry-period D     lease renew and balance period (default 2s)\n"
        "  --poll DURATION      store poll interval of the informer (default 1s)\n"
        "  --log-format FORMAT  text (key=value) or json, one line per event\n"
        "  --log-level LEVEL    debug, info (default), warn, error\n"
        "  --once               one full pass, then exit (0 when every reconcile "
        "succeeded)\n"
        "  --once-timeout D     give up the --once pass after D (default 5m)\n"
        "  -h, --help           print this help\n"
        "  --version            print the version\n"
        "\n"
        "Each setting comes from its flag, else the environment, else the file,\n"
        "else the default; all are checked by the file's rules.\n"
        "\n"
        "Exit codes: 0 stopped cleanly (SIGTERM or SIGINT), --once: every reconcile\n"
        "succeeded; 1 --once: some reconcile failed; 64 usage; 69 database unavailable\n"
        "(at start or during --once; at a stop, writes still unanswered 4 s after the\n"
        "5 s grace) or the controller could not start; 78 invalid\n"
        "config (the file, $SPACEKEEPER_MONGODB_URI, a provider); 128+N a second\n"
        "signal N forced the exit during the graceful stop.\n";

#define SHORT_OPTS "c:h"

static void
usage(FILE *f)
{
	sk_buf b = SK_BUF_INIT(0);

	sk_clidoc_usage(usage_lines, &b);
	fprintf(f, "%s\n%s", b.data, help_text);
	sk_buf_dispose(&b);
}

static int
parse_duration_flag(const char *name, const char *v, int64_t *out)
{
	if (sk_duration_parse(v, out) != 0 || *out <= 0) {
		fprintf(stderr, "spacekeeper: %s: bad duration \"%s\" (e.g. 30s, 1m)\n", name, v);
		return EX_USAGE;
	}
	return 0;
}

enum {
	OPT_MONGO = 256,
	OPT_DB,
	OPT_WORKERS,
	OPT_RESYNC,
	OPT_LISTEN,
	OPT_POLL,
	OPT_FMT,
	OPT_LEVEL,
	OPT_ONCE,
	OPT_ONCE_TIMEOUT,
	OPT_VERSION,
	OPT_C_LISTEN,
	OPT_C_TOKEN,
	OPT_C_INSECURE,
	OPT_C_CERT,
	OPT_C_KEY,
	OPT_C_WAITING,
	OPT_C_CONNS,
	OPT_C_PER_IP,
	OPT_STORE_UNAV,
	OPT_SHARDS,
	OPT_ID,
	OPT_ADVERTISE,
	OPT_LEASE,
	OPT_RENEW,
	OPT_RETRY,
};

static const struct option long_opts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "mongodb-uri", required_argument, NULL, OPT_MONGO },
	{ "database", required_argument, NULL, OPT_DB },
	{ "workers", required_argument, NULL, OPT_WORKERS },
	{ "resync", required_argument, NULL, OPT_RESYNC },
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "poll", required_argument, NULL, OPT_POLL },
	{ "log-format", required_argument, NULL, OPT_FMT },
	{ "log-level", required_argument, NULL, OPT_LEVEL },
	{ "once", no_argument, NULL, OPT_ONCE },
	{ "once-timeout", required_argument, NULL, OPT_ONCE_TIMEOUT },
	{ "connect-listen", required_argument, NULL, OPT_C_LISTEN },
	{ "connect-token-file", required_argument, NULL, OPT_C_TOKEN },
	{ "connect-insecure", no_argument, NULL, OPT_C_INSECURE },
	{ "connect-tls-cert-file", required_argument, NULL, OPT_C_CERT },
	{ "connect-tls-key-file", required_argument, NULL, OPT_C_KEY },
	{ "connect-max-waiting", required_argument, NULL, OPT_C_WAITING },
	{ "connect-max-connections", required_argument, NULL, OPT_C_CONNS },
	{ "connect-max-per-ip", required_argument, NULL, OPT_C_PER_IP },
	{ "store-unavailable-after", required_argument, NULL, OPT_STORE_UNAV },
	{ "shards", required_argument, NULL, OPT_SHARDS },
	{ "id", required_argument, NULL, OPT_ID },
	{ "advertise-address", required_argument, NULL, OPT_ADVERTISE },
	{ "lease-duration", required_argument, NULL, OPT_LEASE },
	{ "renew-deadline", required_argument, NULL, OPT_RENEW },
	{ "retry-period", required_argument, NULL, OPT_RETRY },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

/* One option; returns 0, -1 for "exit 0 now", or an exit code. */
static int
parse_one(int opt, const char *arg, flags *f)
{
	switch (opt) {
	case 'c': f->cfg.config_path = arg; return 0;
	case OPT_MONGO: f->cfg.mongodb_uri = arg; return 0;
	case OPT_DB: f->cfg.database = arg; return 0;
	case OPT_LISTEN: f->cfg.listen = arg; return 0;
	case OPT_WORKERS: f->cfg.workers = arg; return 0;
	case OPT_RESYNC: f->cfg.resync = arg; return 0;
	case OPT_C_LISTEN: f->cfg.connect_listen = arg; return 0;
	case OPT_C_TOKEN: f->cfg.connect_token_file = arg; return 0;
	case OPT_C_INSECURE: f->cfg.connect_insecure = "true"; return 0;
	case OPT_C_CERT: f->cfg.connect_tls_cert_file = arg; return 0;
	case OPT_C_KEY: f->cfg.connect_tls_key_file = arg; return 0;
	case OPT_C_WAITING: f->cfg.connect_max_waiting = arg; return 0;
	case OPT_C_CONNS: f->cfg.connect_max_connections = arg; return 0;
	case OPT_C_PER_IP: f->cfg.connect_max_per_ip = arg; return 0;
	case OPT_STORE_UNAV: f->cfg.store_unavailable_after = arg; return 0;
	case OPT_ONCE: f->once = true; return 0;
	case OPT_SHARDS: f->cfg.shards = arg; return 0;
	case OPT_ID: f->cfg.identity = arg; return 0;
	case OPT_ADVERTISE: f->cfg.advertise_address = arg; return 0;
	case OPT_LEASE: f->cfg.lease_duration = arg; return 0;
	case OPT_RENEW: f->cfg.renew_deadline = arg; return 0;
	case OPT_RETRY: f->cfg.retry_period = arg; return 0;
	case OPT_POLL: return parse_duration_flag("--poll", arg, &f->poll_ms);
	case OPT_ONCE_TIMEOUT:
		return parse_duration_flag("--once-timeout", arg, &f->once_timeout_ms);
	case OPT_FMT:
		if (strcmp(arg, "text") != 0 && strcmp(arg, "json") != 0) {
			fprintf(stderr, "spacekeeper: --log-format: want text or json\n");
			return EX_USAGE;
		}
		f->log.json = strcmp(arg, "json") == 0;
		return 0;
	case OPT_LEVEL:
		if (sk_log_level_parse(arg, &f->log.level) != 0) {
			fprintf(stderr,
			        "spacekeeper: --log-level: want debug, info, warn or error\n");
			return EX_USAGE;
		}
		return 0;
	case 'h': usage(stdout); return -1;
	case OPT_VERSION: printf("spacekeeper %s\n", SK_VERSION); return -1;
	default: usage(stderr); return EX_USAGE;
	}
}

static int
parse_flags(int argc, char **argv, flags *f)
{
	int opt, rc;

	memset(f, 0, sizeof(*f));
	f->log.level = SK_LOG_INFO;
	f->once_timeout_ms = 300000;
	opterr = 1;
	while ((opt = getopt_long(argc, argv, SHORT_OPTS, long_opts, NULL)) != -1)
		if ((rc = parse_one(opt, optarg, f)) != 0)
			return rc;
	if (optind < argc) {
		fprintf(stderr, "spacekeeper: unexpected argument \"%s\"\n", argv[optind]);
		return EX_USAGE;
	}
	return 0;
}

static void
print_errors(const char *what, sk_errlist *errs)
{
	sk_buf b = SK_BUF_INIT(1 << 20);

	sk_errlist_format(errs, &b);
	fprintf(stderr, "spacekeeper: %s\n%s", what, b.data ? b.data : "");
	sk_buf_dispose(&b);
}

/* Every setting: flags > environment > file (--config) > defaults, all
 * checked by the same rules (pkg/api sk_config_resolve). */
static int
load_config(const flags *f, sk_controller_config **out)
{
	sk_errlist errs = { 0 };
	sk_error err = { 0 };
	int rc = 0;

	if (sk_config_check_flags(&f->cfg, &errs) > 0) {
		print_errors("invalid flags (see --help)", &errs);
		rc = EX_USAGE;
	} else if (sk_config_resolve(&f->cfg, out, &errs, &err) != 0) {
		print_errors(err.message, &errs);
		rc = EX_CONFIG;
	}
	sk_errlist_dispose(&errs);
	return rc;
}

/* A second SIGTERM/SIGINT during the graceful stop forces the exit. */
static void *
second_signal(void *arg)
{
	sigset_t *set = arg;
	int sig;

	sigwait(set, &sig);
	_exit(128 + sig);
	return NULL;
}

/* The stop's bound (controller.h): the grace, then the writes of what it
 * cut short. A stop still running then waits on a database that stopped
 * answering: logged, and the process exits 69 (EX_UNAVAILABLE) rather than
 * past the promise. */
static atomic_bool stop_done;

static void *
stop_watchdog(void *arg)
{
	sk_log_config *log = arg;
	char kv[160];
	int64_t deadline =
	        sk_monotonic_ms() + SK_CONTROLLER_STOP_GRACE_MS + SK_CONTROLLER_STOP_WRITE_MS;

	while (!atomic_load(&stop_done) && sk_monotonic_ms() < deadline)
		usleep(20 * 1000);
	if (atomic_load(&stop_done))
		return NULL;
	snprintf(kv, sizeof(kv),
	        "grace_ms=%d write_ms=%d error=\"still waiting on the database after the "
	        "grace\"",
	        SK_CONTROLLER_STOP_GRACE_MS, SK_CONTROLLER_STOP_WRITE_MS);
	sk_daemon_log(SK_LOG_ERROR, "stop timed out", kv, log);
	_exit(EX_UNAVAILABLE);
	return NULL;
}

/* msg with key="<text, quoted>" at level. */
static void
log_at(sk_log_config *log, sk_log_level level, const char *msg, const char *key, const char *text)
{
	char kv[SK_ERROR_MSG_MAX + 64];
	size_t n = 0;

	n += (size_t)snprintf(kv, sizeof(kv), "%s=\"", key);
	for (const char *p = text; *p && n + 3 < sizeof(kv); p++) {
		if (*p == '"' || *p == '\\')
			kv[n++] = '\\';
		kv[n++] = *p;
	}
	snprintf(kv + n, sizeof(kv) - n, "\"");
	sk_daemon_log(level, msg, kv, log);
}

static void
log_error(sk_log_config *log, const char *msg, const sk_error *err)
{
	log_at(log, SK_LOG_ERROR, msg, "error", err->message);
}

static int
serve(sk_controller *c, sk_log_config *log, sigset_t *set)
{
	sk_error err = { 0 };
	pthread_t th;
	int sig = 0;

	if (sk_controller_start(c, &err) != 0) {
		log_error(log, "start failed", &err);
		return EX_UNAVAILABLE;
	}
	sigwait(set, &sig);
	sk_daemon_log(SK_LOG_INFO, "shutting down",
	        sig == SIGINT ? "signal=SIGINT" : "signal=SIGTERM", log);
	if (pthread_create(&th, NULL, second_signal, set) == 0)
		pthread_detach(th);
	if (pthread_create(&th, NULL, stop_watchdog, log) == 0)
		pthread_detach(th);
	sk_controller_stop(c);
	atomic_store(&stop_done, true);
	return 0;
}

/* An API key file others can read: warned about at start, as ssh does. */
static void
warn_key_files(const sk_controller_config *cfg, sk_log_config *log)
{
	char msg[1200];

	for (size_t i = 0; i < cfg->n_providers; i++)
		if (sk_provider_key_file_warning(&cfg->providers[i], msg, sizeof(msg)))
			log_at(log, SK_LOG_WARN, "API key file readable by others", "warning", msg);
	if (sk_config_connect_token_warning(cfg, msg, sizeof(msg)))
		log_at(log, SK_LOG_WARN, "connect token file readable by others", "warning", msg);
}

/* Every connect connection is a file descriptor: the soft limit (often
 * 1024) is raised to the hard one, as Go's runtime does. */
static void
raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* controller.identity unset: HOSTNAME-PID (unique per process, so a
 * restarted replica never mistakes another's leases for its own). */
static void
default_identity(sk_controller_config *cfg)
{
	char host[64] = "";

	if (cfg->identity && cfg->identity[0])
		return;
	if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0')
		snprintf(host, sizeof(host), "spacekeeper");
	free(cfg->identity);
	cfg->identity = sk_asprintf("%s-%d", host, (int)getpid());
}

static int
run(const flags *f, sk_controller_config *cfg)
{
	sk_controller_options o = SK_CONTROLLER_OPTIONS_INIT;
	sk_log_config log = f->log;
	sk_controller *c = NULL;
	sk_error err = { 0 };
	sigset_t set;
	int rc = 0;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	/* Workers inherit the mask: only main takes the signals (sigwait). */
	if (!f->once)
		pthread_sigmask(SIG_BLOCK, &set, NULL);
	warn_key_files(cfg, &log);
	raise_fd_limit();
	default_identity(cfg);
	o.config = cfg;
	o.log = sk_daemon_log;
	o.log_payload = &log;
	o.log_level = log.level;
	o.serve_http = !f->once;
	if (f->poll_ms)
		o.poll_ms = f->poll_ms;
	if (sk_controller_new(&c, &o, &err) != 0) {
		log_error(&log, "cannot start", &err);
		return err.code == SK_EUNAVAILABLE ? EX_UNAVAILABLE : EX_CONFIG;
	}
	if (f->once) {
		rc = sk_controller_run_once(c, 5000, f->once_timeout_ms, &err);
		if (rc != 0)
			log_error(&log,
			        rc == SK_EUNAVAILABLE ? "database unavailable" : "once failed",
			        &err);
		else
			sk_daemon_log(SK_LOG_INFO, "once done", "", &log);
		rc = rc == 0 ? 0 : rc == SK_EUNAVAILABLE ? EX_UNAVAILABLE : 1;
	} else {
		rc = serve(c, &log, &set);
	}
	sk_controller_free(c);
	return rc;
}

/* spacekeeper __gen-docs markdown|man DIR (hidden; make docs): the page of
 * this --help and this option table. */
static int
gen_docs(int argc, char **argv)
{
	static const sk_clidoc_env env[] = {
		{ "SPACEKEEPER_MONGODB_URI",
		        "The MongoDB URI when --mongodb-uri is not given; it wins over the file." },
		{ "E2B_API_KEY",
		        "The key of the default provider (without --config), and of a configured "
		        "provider whose apiKeyEnv names it (each provider names its own "
		        "variable)." },
		{ "MALLOC_ARENA_MAX",
		        "glibc's malloc arenas; when unset, spacekeeper uses 2 (less memory with "
		        "many workers)." },
	};
	static const char *const see[] = { "spacectl", "sandboxsim" };
	sk_clidoc_page p = { "spacekeeper", NULL,
		"the controller that keeps one resident sandbox per user", usage_lines, help_text,
		NULL, NULL, long_opts, SHORT_OPTS, env, sizeof(env) / sizeof(env[0]), see, 2 };
	sk_clidoc_format fmt;
	sk_error err;

	if (argc != 4 || sk_clidoc_format_parse(argv[2], &fmt) != SK_OK) {
		fprintf(stderr, "usage: spacekeeper __gen-docs markdown|man DIR\n");
		return EX_USAGE;
	}
	sk_error_clear(&err);
	if (sk_clidoc_write(&p, fmt, argv[3], &err) != SK_OK) {
		fprintf(stderr, "spacekeeper: %s\n", err.message);
		return 1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	flags f;
	sk_controller_config *cfg = NULL;
	int rc;

	if (argc > 1 && strcmp(argv[1], "__gen-docs") == 0)
		return gen_docs(argc, argv);
	rc = parse_flags(argc, argv, &f);

	if (rc != 0)
		return rc < 0 ? 0 : rc;
	if ((rc = load_config(&f, &cfg)) != 0)
		return rc;
	/* glibc gives each busy thread its own malloc arena (up to 8 per core):
	 * with dozens of workers their free space adds up (79 MB peak instead of
	 * 66 MB with 10,000 objects). Two arenas are plenty for this workload;
	 * MALLOC_ARENA_MAX in the environment still decides when set. */
	if (getenv("MALLOC_ARENA_MAX") == NULL)
		mallopt(M_ARENA_MAX, 2);
	/* libmongoc keeps counters in shared memory for mongoc-stat, which
	 * nothing here reads; a busy /dev/shm made it warn on stderr. */
	setenv("MONGOC_DISABLE_SHM", "1", 0);
	mongoc_init();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = run(&f, cfg);
	sk_config_free(cfg);
	curl_global_cleanup();
	sk_store_global_cleanup();
	mongoc_cleanup();
	return rc;
}
