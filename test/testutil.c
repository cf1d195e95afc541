/* Test helpers: processes, ports, a shared FerretDB, temp files. */
#include <check.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "api/flags.h"
#include "store/store.h"
#include "testutil.h"
#include "util/util.h"

/* SQLite pragmas for FerretDB (it already sets WAL): a commit in WAL mode
 * with synchronous NORMAL skips the per-commit fsync; halves an insert. Keep
 * in sync with hack/ferretdb.sh. */
#define SK_TEST_SQLITE_PRAGMAS "_pragma=synchronous(normal)"

static char tmpdir[512];
static char mongo_uri[256];
static pid_t ferretdb_pid;
static pid_t owner_pid;

static void
ensure_tmpdir(void)
{
	if (tmpdir[0])
		return;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/sk-test-XXXXXX");
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		abort();
	}
	owner_pid = getpid();
}

const char *
sk_test_tmpdir(void)
{
	ensure_tmpdir();
	return tmpdir;
}

const char *
sk_test_write_file(const char *name, const char *content)
{
	static char path[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", sk_test_tmpdir(), name);
	f = fopen(path, "w");
	if (f == NULL) {
		perror(path);
		abort();
	}
	fputs(content, f);
	fclose(f);
	return path;
}

int
sk_test_free_port(void)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	int port;

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	        getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
		perror("bind");
		abort();
	}
	port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

bool
sk_test_wait_port(int port, int timeout_ms)
{
	for (int waited = 0; waited < timeout_ms; waited += 50) {
		struct sockaddr_in sa;
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		int ok;

		memset(&sa, 0, sizeof(sa));
		sa.sin_family = AF_INET;
		sa.sin_port = htons((uint16_t)port);
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		close(fd);
		if (ok)
			return true;
		usleep(50 * 1000);
	}
	return false;
}

const char *
sk_test_bin(const char *name)
{
	static char path[1024];
	const char *dir = getenv("SK_BIN_DIR");

	snprintf(path, sizeof(path), "%s/%s", dir ? dir : "bin", name);
	return path;
}

const char *
sk_test_path(const char *rel)
{
	static char path[1024];
	const char *root = getenv("SK_ROOT");

	snprintf(path, sizeof(path), "%s/%s", root ? root : ".", rel);
	return path;
}

static void
exec_child(const char *const *argv, const char *const *env)
{
	char resolved[1024];
	const char *prog = argv[0];

	for (size_t i = 0; env && env[i]; i++)
		putenv((char *)env[i]);
	if (strchr(prog, '/') == NULL && strcmp(prog, "node") != 0 && strcmp(prog, "sh") != 0) {
		snprintf(resolved, sizeof(resolved), "%s", sk_test_bin(prog));
		prog = resolved;
	}
	execvp(prog, (char *const *)argv);
	fprintf(stderr, "exec %s: %s\n", prog, strerror(errno));
	_exit(127);
}

pid_t
sk_test_spawn(const char *const *argv, const char *const *env, const char *log_path)
{
	pid_t parent = getpid();
	pid_t pid = fork();

	if (pid == 0) {
		/* A test that fails (its process exits at the assert, before its
		 * teardown) or times out (SIGKILL) takes what it started with it: no
		 * sandboxsim --preload 900 left running. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
			_exit(127);
		int fd = open(
		        log_path ? log_path : "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0644);
		int devnull = open("/dev/null", O_RDONLY);
		dup2(devnull, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		setpgid(0, 0);
		exec_child(argv, env);
	}
	return pid;
}

static int
wait_status(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return -1;
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

int
sk_test_stop(pid_t pid, bool hard)
{
	if (pid <= 0)
		return -1;
	kill(pid, hard ? SIGKILL : SIGTERM);
	return wait_status(pid);
}

int
sk_test_wait(pid_t pid, int timeout_s)
{
	int64_t deadline = sk_monotonic_ms() + (int64_t)(timeout_s > 0 ? timeout_s : 60) * 1000;

	for (;;) {
		int st;
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (r < 0 && errno != EINTR)
			return -1;
		if (sk_monotonic_ms() > deadline)
			return sk_test_stop(pid, true);
		usleep(10 * 1000);
	}
}

static char *
slurp_fd(int fd)
{
	size_t cap = 4096, len = 0;
	char *s = malloc(cap);
	ssize_t n;

	lseek(fd, 0, SEEK_SET);
	while ((n = read(fd, s + len, cap - len - 1)) > 0) {
		len += (size_t)n;
		if (cap - len < 2) {
			cap *= 2;
			s = realloc(s, cap);
		}
	}
	s[len] = '\0';
	return s;
}

static int
tmpfile_fd(void)
{
	char path[600];
	int fd;

	snprintf(path, sizeof(path), "%s/io-XXXXXX", sk_test_tmpdir());
	fd = mkstemp(path);
	unlink(path);
	return fd;
}

int
sk_test_run(const char *const *argv, const char *const *env, const char *stdin_data, char **out,
        char **err, int timeout_s)
{
	int in_fd = tmpfile_fd(), out_fd = tmpfile_fd(), err_fd = tmpfile_fd();
	int64_t deadline;
	pid_t pid;
	int status = -1;

	if (stdin_data) {
		if (write(in_fd, stdin_data, strlen(stdin_data)) < 0)
			abort();
		lseek(in_fd, 0, SEEK_SET);
	}
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* as sk_test_spawn */
		dup2(in_fd, 0);
		dup2(out_fd, 1);
		dup2(err_fd, 2);
		exec_child(argv, env);
	}
	deadline = sk_monotonic_ms() + (int64_t)(timeout_s > 0 ? timeout_s : 60) * 1000;
	for (;;) {
		int st;
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid) {
			status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			break;
		}
		if (sk_monotonic_ms() > deadline) {
			kill(pid, SIGKILL);
			status = wait_status(pid);
			break;
		}
		usleep(5000);
	}
	if (out)
		*out = slurp_fd(out_fd);
	if (err)
		*err = slurp_fd(err_fd);
	close(in_fd);
	close(out_fd);
	close(err_fd);
	return status;
}

pid_t
sk_test_ferretdb_start_at(const char *dir, int port)
{
	char addr[64], sqlite[1100], state[1100], log[1100], bin[1024], uri[64];
	const char *argv[] = { bin, "--handler=sqlite", addr, sqlite, state, "--debug-addr=-",
		"--telemetry=disable", "--log-level=error", NULL };
	sk_store_options opts = SK_STORE_OPTIONS_INIT;
	sk_store *st = NULL;
	sk_error err;
	pid_t pid;

	mkdir(dir, 0755);
	snprintf(bin, sizeof(bin), "%s", sk_test_path(".deps/bin/ferretdb"));
	snprintf(addr, sizeof(addr), "--listen-addr=127.0.0.1:%d", port);
	snprintf(sqlite, sizeof(sqlite), "--sqlite-url=file:%s/?" SK_TEST_SQLITE_PRAGMAS, dir);
	snprintf(state, sizeof(state), "--state-dir=%s", dir);
	snprintf(log, sizeof(log), "%s/ferretdb.log", dir);
	pid = sk_test_spawn(argv, NULL, log);
	snprintf(uri, sizeof(uri), "mongodb://127.0.0.1:%d", port);
	opts.uri = uri;
	opts.ensure_indexes = false;
	opts.timeout_ms = 1000;
	for (int i = 0; i < 200; i++) {
		if (sk_store_open(&st, &opts, &err) == 0) {
			sk_store_close(st);
			return pid;
		}
		usleep(50 * 1000);
	}
	fprintf(stderr, "FerretDB did not answer ping at %s (log: %s)\n", uri, log);
	sk_test_stop(pid, true);
	return -1;
}

/* A FerretDB in a new directory on a free port; retries when another process
 * took the port between sk_test_free_port() and FerretDB's bind. */
static pid_t
ferretdb_start_fresh(const char *dir, char *uri, size_t len)
{
	for (int attempt = 0; attempt < 5; attempt++) {
		int port = sk_test_free_port();
		pid_t pid = sk_test_ferretdb_start_at(dir, port);

		if (pid > 0) {
			snprintf(uri, len, "mongodb://127.0.0.1:%d", port);
			return pid;
		}
	}
	abort();
}

static void
start_ferretdb(void)
{
	char dir[600];

	snprintf(dir, sizeof(dir), "%s/ferretdb", sk_test_tmpdir());
	ferretdb_pid = ferretdb_start_fresh(dir, mongo_uri, sizeof(mongo_uri));
}

const char *
sk_test_mongodb_uri(void)
{
	const char *external = getenv("SK_TEST_MONGODB_URI");

	if (external && *external)
		return external;
	if (mongo_uri[0] == '\0' && getpid() != owner_pid) {
		/* A forked test would start a server nobody stops. */
		fprintf(stderr,
		        "this test needs MongoDB: run it with SK_TEST_NEEDS_MONGO=1 "
		        "(make test sets it) or SK_TEST_MONGODB_URI\n");
		abort();
	}
	if (mongo_uri[0] == '\0')
		start_ferretdb();
	return mongo_uri;
}

const char *
sk_test_unique_db(void)
{
	static char name[64];
	static int counter;

	snprintf(name, sizeof(name), "t_%d_%d_%ld", (int)getpid(), ++counter,
	        (long)time(NULL) % 100000);
	return name;
}

pid_t
sk_test_sim_start(const char *const *extra_args, char *base_url, size_t len)
{
	char listen[64], log[600];
	const char *argv[32];
	size_t n = 0;
	int port = sk_test_free_port();
	pid_t pid;

	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	snprintf(log, sizeof(log), "%s/sandboxsim-%d.log", sk_test_tmpdir(), port);
	argv[n++] = "sandboxsim";
	argv[n++] = "--listen";
	argv[n++] = listen;
	for (size_t i = 0; extra_args && extra_args[i] && n < 30; i++)
		argv[n++] = extra_args[i];
	argv[n] = NULL;
	pid = sk_test_spawn(argv, NULL, log);
	if (!sk_test_wait_port(port, 10000)) {
		fprintf(stderr, "sandboxsim did not listen on %s (log: %s)\n", listen, log);
		abort();
	}
	snprintf(base_url, len, "http://127.0.0.1:%d", port);
	return pid;
}

/* Starts versitygw over dir: as is (limit_mb 0), or inside a new user and
 * mount namespace (unshare -rm, no root needed) on a tmpfs of limit_mb. */
static pid_t
s3_spawn(const char *dir, int port, const char *bucket, const char *access_key, const char *secret,
        int limit_mb, char *url, size_t len)
{
	static const char inner[] = "mount -t tmpfs -o size=\"$1\" tmpfs \"$2\" && "
	                            "mkdir -p \"$2/$3\" && shift 3 && exec \"$@\"";
	char bin[1024], listen[64], log[1100], path[1100], size[32];
	const char *gw[] = { bin, "--access", access_key, "--secret", secret, "--port", listen,
		"posix", dir, NULL };
	const char *boxed[] = { "/usr/bin/unshare", "-rm", "sh", "-c", inner, "sh", size, dir,
		bucket ? bucket : ".", bin, "--access", access_key, "--secret", secret, "--port",
		listen, "posix", dir, NULL };
	pid_t pid;

	snprintf(bin, sizeof(bin), "%s", sk_test_path(".deps/bin/versitygw"));
	if (access(bin, X_OK) != 0) {
		fprintf(stderr, "%s missing: run hack/deps.sh\n", bin);
		abort();
	}
	if (port == 0)
		port = sk_test_free_port();
	mkdir(dir, 0700);
	if (bucket != NULL && limit_mb == 0) {
		snprintf(path, sizeof(path), "%s/%s", dir, bucket);
		mkdir(path, 0700); /* the POSIX backend: a bucket is a directory */
	}
	snprintf(size, sizeof(size), "%dm", limit_mb);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	snprintf(log, sizeof(log), "%s/versitygw-%d.log", sk_test_tmpdir(), port);
	pid = sk_test_spawn(limit_mb > 0 ? boxed : gw, NULL, log);
	if (!sk_test_wait_port(port, 20000)) {
		fprintf(stderr, "versitygw did not listen on %s (log: %s)\n", listen, log);
		abort();
	}
	snprintf(url, len, "http://127.0.0.1:%d", port);
	return pid;
}

pid_t
sk_test_s3_start(const char *dir, int port, const char *bucket, const char *access_key,
        const char *secret, char *url, size_t len)
{
	return s3_spawn(dir, port, bucket, access_key, secret, 0, url, len);
}

pid_t
sk_test_s3_start_small(const char *dir, const char *bucket, const char *access_key,
        const char *secret, int limit_mb, char *url, size_t len)
{
	char probe[1200];

	mkdir(dir, 0700);
	snprintf(probe, sizeof(probe),
	        "/usr/bin/unshare -rm sh -c 'mount -t tmpfs -o size=1m tmpfs \"%s\"' "
	        ">/dev/null 2>&1",
	        dir);
	if (access("/usr/bin/unshare", X_OK) != 0 || system(probe) != 0)
		return -1;
	return s3_spawn(dir, 0, bucket, access_key, secret, limit_mb, url, len);
}

void
sk_test_global_setup(void)
{
	ensure_tmpdir();
	/* Tests that need MongoDB start it lazily in the parent, before forking,
	 * when SK_TEST_NEEDS_MONGO is set by the runner's environment. */
	if (getenv("SK_TEST_NEEDS_MONGO")) {
		setenv("SK_TEST_MONGODB_URI", sk_test_mongodb_uri(), 1);
	}
}

void
sk_test_global_teardown(int failed)
{
	char cmd[700];
	const char *keep_env = getenv("SK_TEST_KEEP_TMP");
	/* set and not "" or "0": keep, as the README says */
	bool keep = (keep_env && *keep_env && strcmp(keep_env, "0") != 0) || failed > 0;

	if (getpid() != owner_pid)
		return;
	if (ferretdb_pid > 0)
		sk_test_stop(ferretdb_pid, false);
	sk_store_global_cleanup();
	/* a failed run keeps the logs its messages point to */
	if (tmpdir[0] && keep)
		fprintf(stderr, "%s: kept %s (logs and data)\n",
		        failed > 0 ? "tests failed" : "SK_TEST_KEEP_TMP", tmpdir);
	if (tmpdir[0] && !keep) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", tmpdir);
	}
}

pid_t
sk_test_ferretdb_start(char *uri, size_t len)
{
	static int instance;
	char dir[600];

	snprintf(
	        dir, sizeof(dir), "%s/ferretdb-%d-%d", sk_test_tmpdir(), (int)getpid(), ++instance);
	return ferretdb_start_fresh(dir, uri, len);
}

/* ---- HTTP ---- */

static size_t
collect(char *p, size_t size, size_t n, void *arg)
{
	sk_buf_append(arg, p, size * n);
	return size * n;
}

static struct curl_slist *
req_headers(const sk_test_req *r)
{
	struct curl_slist *hdr = NULL;
	char line[512];

	if (r->token) {
		snprintf(line, sizeof(line), "Authorization: Bearer %s", r->token);
		hdr = curl_slist_append(hdr, line);
	}
	if (r->api_key) {
		snprintf(line, sizeof(line), "X-API-Key: %s", r->api_key);
		hdr = curl_slist_append(hdr, "Content-Type: application/json");
		hdr = curl_slist_append(hdr, line);
	}
	for (size_t i = 0; r->extra && r->extra[i]; i++)
		hdr = curl_slist_append(hdr, r->extra[i]);
	return hdr;
}

long
sk_test_http_do(const char *url, sk_test_req *r)
{
	CURL *h = curl_easy_init();
	struct curl_slist *hdr = req_headers(r);
	sk_buf b = SK_BUF_INIT(64 << 20), hb = SK_BUF_INIT(1 << 20);
	const char *method = r->method ? r->method : "GET";
	long status = 0;

	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, r->timeout_s > 0 ? r->timeout_s : 120L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, collect);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &hb);
	if (r->body)
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, r->body);
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	if (r->cacert)
		curl_easy_setopt(h, CURLOPT_CAINFO, r->cacert);
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	sk_buf_append(&b, "", 0);
	sk_buf_append(&hb, "", 0);
	r->out = sk_buf_detach(&b);
	r->headers = sk_buf_detach(&hb);
	return status;
}

long
sk_test_http(const char *method, const char *url, const char *body, char **out)
{
	sk_test_req r = { .method = method, .body = body, .api_key = SK_TEST_SIM_KEY };
	long status = sk_test_http_do(url, &r);

	if (out)
		*out = r.out;
	else
		free(r.out);
	free(r.headers);
	return status;
}

json_t *
sk_test_http_json(const char *method, const char *url, const char *body, long *status)
{
	char *text = NULL;
	long st = sk_test_http(method, url, body, &text);
	json_t *v = json_loads(text ? text : "", 0, NULL);

	free(text);
	if (status)
		*status = st;
	return v;
}

void
sk_test_sim_post(const char *base_url, const char *path, const char *body)
{
	char url[512];
	long st;

	snprintf(url, sizeof(url), "%s%s", base_url, path);
	st = sk_test_http("POST", url, body, NULL);
	ck_assert_msg(st >= 200 && st < 300, "POST %s: %ld", path, st);
}

long
sk_test_post_json(const char *base_url, const char *path, const char *json)
{
	static const char *const json_type[] = { "Content-Type: application/json", NULL };
	sk_test_req r = { .method = "POST", .body = json, .extra = json_type, .timeout_s = 5 };
	char url[512];
	long status;

	snprintf(url, sizeof(url), "%s%s", base_url, path);
	status = sk_test_http_do(url, &r);
	free(r.out);
	free(r.headers);
	return status != 0 ? status : -1;
}

int
sk_test_spacectl(const char *uri, const char *db, const char *const *args, char **out)
{
	const char *argv[24];
	char *err = NULL, *o = NULL;
	size_t n = 0;
	int rc;

	argv[n++] = "spacectl";
	argv[n++] = "--mongodb-uri";
	argv[n++] = uri;
	argv[n++] = "--database";
	argv[n++] = db;
	for (size_t i = 0; args[i] && n < 23; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	/* A generous bound: it matters only when spacectl hangs on a loaded machine. */
	rc = sk_test_run(argv, NULL, NULL, &o, &err, 300);
	if (rc > 1) /* 1 is an answer for some commands (drift, diff) */
		fprintf(stderr, "spacectl %s: exit %d: %s\n", args[0], rc, err ? err : "");
	free(err);
	if (out)
		*out = o;
	else
		free(o);
	return rc;
}

/* ---- an e2e world ---- */

void
sk_test_world_setup(sk_test_world *w, const char *const *sim_args)
{
	memset(w, 0, sizeof(*w));
	curl_global_init(CURL_GLOBAL_DEFAULT);
	snprintf(w->db, sizeof(w->db), "%s", sk_test_unique_db());
	snprintf(w->mongo_uri, sizeof(w->mongo_uri), "%s", sk_test_mongodb_uri());
	w->sim_pid = sk_test_sim_start(sim_args, w->sim_url, sizeof(w->sim_url));
}

void
sk_test_world_teardown(sk_test_world *w)
{
	if (w->keeper_pid > 0)
		ck_assert_int_eq(sk_test_stop(w->keeper_pid, false), 0); /* clean, no ASan report */
	w->keeper_pid = 0;
	if (w->sim_pid > 0)
		sk_test_stop(w->sim_pid, true);
	w->sim_pid = 0;
	curl_global_cleanup();
}

void
sk_test_keeper_start(sk_test_world *w, const sk_test_keeper_opts *o)
{
	char cfg[600], url[128];
	const char *env[] = { "E2B_API_KEY=" SK_TEST_SIM_KEY, NULL };
	const char *argv[] = { "spacekeeper", "--config", cfg, "--mongodb-uri", w->mongo_uri,
		"--database", w->db, "--poll", "200ms", NULL, NULL, NULL };
	sk_buf y = SK_BUF_INIT(1 << 20);
	int64_t deadline;

	if (o->log_level) {
		argv[9] = "--log-level";
		argv[10] = o->log_level;
	}
	w->main_port = sk_test_free_port();
	w->connect_port = sk_test_free_port();
	sk_buf_printf(&y,
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: ControllerConfig\n"
	        "providers:\n  - name: default\n    type: %s\n    apiURL: %s\n"
	        "    sandboxURL: %s\n    apiKeyEnv: E2B_API_KEY\n%s"
	        "controller:\n%s  listen: 127.0.0.1:%d\n  connectListen: 127.0.0.1:%d\n",
	        o->provider_type ? o->provider_type : "e2b", w->sim_url, w->sim_url,
	        o->provider ? o->provider : "", o->controller ? o->controller : "", w->main_port,
	        w->connect_port);
	snprintf(cfg, sizeof(cfg), "%s", sk_test_write_file("config.yaml", y.data));
	sk_buf_dispose(&y);
	snprintf(w->log, sizeof(w->log), "%s/keeper-%s.log", sk_test_tmpdir(), w->db);
	w->keeper_pid = sk_test_spawn(argv, env, w->log);
	ck_assert_msg(
	        sk_test_wait_port(w->main_port, 20000) && sk_test_wait_port(w->connect_port, 20000),
	        "spacekeeper did not listen (%s)", w->log);
	if (o->no_wait_ready)
		return;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/readyz", w->main_port);
	deadline = sk_monotonic_ms() + 60000;
	while (sk_test_http("GET", url, NULL, NULL) != 200) {
		ck_assert_msg(sk_monotonic_ms() < deadline, "not ready (%s)", w->log);
		sk_sleep_ms(50);
	}
}

char *
sk_test_slurp(const char *path)
{
	char *data = NULL;
	size_t len = 0;
	sk_error err = { 0 };

	if (sk_file_read(path, 64 << 20, &data, &len, &err) != 0)
		return sk_strdup("");
	return data;
}
