/*
 * End-to-end tests of the guarded connect API: its own listener, bearer token, TLS, the cap on waiting
 * connects, liveness under half-open connections and 10,000 concurrent
 * connects, /readyz while the store is down and while no shard is held
 * but one is free (a lease claim that never expires blocks it). Real
 * binaries: FerretDB, sandboxsim, spacekeeper, spacectl.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <mongoc/mongoc.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../testutil.h"
#include "util/util.h"

Suite *sk_suite_guard(void);

#define DUMMY_KEY "E2B_API_KEY=e2b_0000000000000000000000000000000000000000"
#define TOKEN "s3cret-connect-token"
#define ASSERT_HAS(hay, needle)                                                                    \
	ck_assert_msg(strstr((hay), (needle)) != NULL, "expected \"%s\" in:\n%s", (needle), (hay))

static sk_test_world w; /* the simulator, the database, spacekeeper */

/* ---- HTTP ---- */

static long
get_status(int port, const char *path)
{
	char url[256];
	sk_test_req r = { 0 };
	long st;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
	st = sk_test_http_do(url, &r);
	free(r.out);
	free(r.headers);
	return st;
}

/* A connect with the token: the status (body dropped). */
static long
connect_status(const char *path)
{
	char url[256];
	sk_test_req r = { .token = TOKEN };
	long st;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", w.connect_port, path);
	st = sk_test_http_do(url, &r);
	free(r.out);
	free(r.headers);
	return st;
}

/* A connect with the token and one more header of n bytes in all. */
static long
header_status(const char *url, size_t n)
{
	char *pad = sk_calloc(1, n + 1);
	const char *extra[] = { pad, NULL };
	sk_test_req r = { .token = TOKEN, .extra = extra };
	long st;

	memcpy(pad, "X-Pad: ", 7);
	memset(pad + 7, 'p', n - 7);
	st = sk_test_http_do(url, &r);
	free(r.out);
	free(r.headers);
	free(pad);
	return st;
}

static bool
eventually_status(int port, const char *path, long want, int timeout_s)
{
	for (int i = 0; i < timeout_s * 10; i++) {
		if (get_status(port, path) == want)
			return true;
		usleep(100 * 1000);
	}
	return false;
}

/* ---- the world ---- */

static void
apply_spaces(int n)
{
	sk_buf b = SK_BUF_INIT(1 << 20);
	char path[600];
	const char *argv[] = { "spacectl", "--mongodb-uri", w.mongo_uri, "--database", w.db,
		"apply", "-f", path, NULL };
	char *out = NULL, *err = NULL;
	int rc;

	for (int i = 0; i < n; i++)
		sk_buf_printf(&b,
		        "---\napiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
		        "metadata:\n  name: u%d\nspec:\n  userID: u%d\n",
		        i, i);
	snprintf(path, sizeof(path), "%s", sk_test_write_file("spaces.yaml", b.data));
	rc = sk_test_run(argv, NULL, NULL, &out, &err, 60);
	ck_assert_msg(rc == 0, "apply: %d %s", rc, err);
	free(out);
	free(err);
	sk_buf_dispose(&b);
}

static const char *
token_file(mode_t mode)
{
	static char path[600];

	snprintf(path, sizeof(path), "%s", sk_test_write_file("token", TOKEN "\n"));
	chmod(path, mode);
	return path;
}

/* spacekeeper with extra controller settings (YAML lines, indented two),
 * listening; keeper_start also waits until it is ready. */
static void
keeper_launch(const char *controller_extra)
{
	char controller[1024];
	sk_test_keeper_opts o = { .controller = controller, .no_wait_ready = true };

	snprintf(controller, sizeof(controller), "  resyncPeriod: 2s\n%s", controller_extra);
	sk_test_keeper_start(&w, &o);
}

static void
keeper_start(const char *controller_extra)
{
	char controller[1024];
	sk_test_keeper_opts o = { .controller = controller };

	snprintf(controller, sizeof(controller), "  resyncPeriod: 2s\n%s", controller_extra);
	sk_test_keeper_start(&w, &o);
}

static void
setup(void)
{
	sk_test_world_setup(&w, NULL);
}

static void
teardown(void)
{
	sk_test_world_teardown(&w);
}

/* ---- token and ports ---- */

START_TEST(test_token_and_separate_listener)
{
	char url[256], extra[800], *metrics;
	sk_test_req r = { 0 };

	snprintf(extra, sizeof(extra), "  connectTokenFile: %s\n", token_file(0600));
	apply_spaces(1);
	keeper_start(extra);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/users/u0/sandbox?timeout=30s",
	        w.connect_port);
	/* no token, a wrong one: 401 with the challenge, nothing reconciled;
	 * the message tells the two apart */
	ck_assert_int_eq(sk_test_http_do(url, &r), 401);
	ASSERT_HAS(r.headers, "WWW-Authenticate: Bearer");
	ASSERT_HAS(r.out, "\"Unauthorized\"");
	ASSERT_HAS(r.out, "\"message\":\"no token:");
	free(r.out);
	free(r.headers);
	r = (sk_test_req){ .token = TOKEN "x" };
	ck_assert_int_eq(sk_test_http_do(url, &r), 401);
	ASSERT_HAS(r.out, "\"message\":\"token not accepted:");
	free(r.out);
	free(r.headers);
	r = (sk_test_req){ .token = "s3cret" }; /* a prefix of the token */
	ck_assert_int_eq(sk_test_http_do(url, &r), 401);
	ASSERT_HAS(r.out, "\"message\":\"token not accepted:");
	free(r.out);
	free(r.headers);
	r = (sk_test_req){ .token = TOKEN };
	ck_assert_int_eq(sk_test_http_do(url, &r), 200);
	ASSERT_HAS(r.out, "\"ready\":true");
	free(r.out);
	free(r.headers);
	/* the metrics and health listener serves no connect route */
	ck_assert_int_eq(get_status(w.main_port, "/v1/users/u0/sandbox"), 404);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/userspaces/u0/connect", w.main_port);
	r = (sk_test_req){ .method = "POST", .token = TOKEN, .body = "" };
	ck_assert_int_eq(sk_test_http_do(url, &r), 404);
	ASSERT_HAS(r.out, "connectListen");
	ASSERT_HAS(r.out, "\"UnknownEndpoint\"");
	free(r.out);
	free(r.headers);
	/* and the connect listener serves no health or metrics: an unknown
	 * endpoint, told apart from an unknown user (NotFound) */
	ck_assert_int_eq(connect_status("/metrics"), 404);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/v1/users/u0/sandbox", w.connect_port);
	r = (sk_test_req){ .token = TOKEN };
	ck_assert_int_eq(sk_test_http_do(url, &r), 404);
	ASSERT_HAS(r.out, "\"reason\":\"UnknownEndpoint\"");
	free(r.out);
	free(r.headers);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/users/nobody/sandbox", w.connect_port);
	r = (sk_test_req){ .token = TOKEN };
	ck_assert_int_eq(sk_test_http_do(url, &r), 404);
	ASSERT_HAS(r.out, "\"reason\":\"NotFound\"");
	free(r.out);
	free(r.headers);
	/* a body is refused before it is read */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/users/u0/activity", w.connect_port);
	r = (sk_test_req){ .method = "POST", .token = TOKEN, .body = NULL };
	{
		char *big = sk_calloc(1, 100001);
		memset(big, 'a', 100000);
		r.body = big;
		ck_assert_int_eq(sk_test_http_do(url, &r), 413);
		free(big);
	}
	free(r.out);
	free(r.headers);
	/* request headers: within the documented 8 KiB (a long token, cookies
	 * of a proxy) answered, far beyond it 431 */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/users/u0/sandbox", w.connect_port);
	ck_assert_int_eq(header_status(url, 6000), 200);
	ck_assert_int_eq(header_status(url, 9000), 431);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", w.main_port);
	r = (sk_test_req){ 0 };
	ck_assert_int_eq(sk_test_http_do(url, &r), 200);
	metrics = r.out;
	ASSERT_HAS(metrics, "spacekeeper_connect_rejected_total{reason=\"unauthorized\"} 3\n");
	ASSERT_HAS(metrics, "spacekeeper_connect_rejected_total{reason=\"body\"} 1\n");
	ASSERT_HAS(metrics, "spacekeeper_store_errors_total{op=\"ping\"} 0\n");
	free(metrics);
	free(r.headers);
}
END_TEST

/* No token on a non-loopback address is a config error unless insecure is
 * explicit; a token file others can read is warned about. */
START_TEST(test_token_rules)
{
	char *out = NULL, *err = NULL, *log;
	const char *open_argv[] = { "spacekeeper", "--connect-listen", "0.0.0.0:0", NULL };
	const char *warn_argv[] = { "spacekeeper", "--listen", "", "--connect-listen",
		"127.0.0.1:0", "--connect-token-file", token_file(0644), "--mongodb-uri",
		w.mongo_uri, "--database", w.db, NULL };
	const char *env[] = { DUMMY_KEY, NULL };
	pid_t pid;

	ck_assert_int_eq(sk_test_run(open_argv, env, NULL, &out, &err, 10), 78);
	ASSERT_HAS(err, "controller.connectListen: 0.0.0.0:0 is not a loopback address");
	ASSERT_HAS(err, "--connect-insecure");
	free(out);
	free(err);
	snprintf(w.log, sizeof(w.log), "%s/keeper-warn.log", sk_test_tmpdir());
	pid = sk_test_spawn(warn_argv, env, w.log);
	for (int i = 0; i < 100; i++) {
		log = sk_test_slurp(w.log);
		bool started = strstr(log, "controller started") != NULL;
		free(log);
		if (started)
			break;
		usleep(100 * 1000);
	}
	ck_assert_int_eq(sk_test_stop(pid, false), 0);
	log = sk_test_slurp(w.log);
	ASSERT_HAS(log, "connect token file readable by others");
	ASSERT_HAS(log, "chmod 600");
	free(log);
}
END_TEST

/* ---- TLS ---- */

START_TEST(test_tls)
{
	char cert[600], key[600], extra[2048], url[256];
	const char *dir = sk_test_tmpdir();
	char *out = NULL, *err = NULL;
	const char *openssl[] = { "/usr/bin/env", "openssl", "req", "-x509", "-newkey", "ec",
		"-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert,
		"-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
		NULL };
	sk_test_req r = { .token = TOKEN, .cacert = cert };

	snprintf(cert, sizeof(cert), "%s/tls.crt", dir);
	snprintf(key, sizeof(key), "%s/tls.key", dir);
	ck_assert_msg(sk_test_run(openssl, NULL, NULL, &out, &err, 30) == 0, "openssl: %s", err);
	free(out);
	free(err);
	snprintf(extra, sizeof(extra),
	        "  connectTokenFile: %s\n  connectTLSCertFile: %s\n  connectTLSKeyFile: %s\n",
	        token_file(0600), cert, key);
	apply_spaces(1);
	keeper_start(extra);
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/v1/users/u0/sandbox?timeout=30s",
	        w.connect_port);
	ck_assert_int_eq(sk_test_http_do(url, &r), 200);
	ASSERT_HAS(r.out, "\"sandboxID\"");
	free(r.out);
	free(r.headers);
	r = (sk_test_req){ .cacert = cert }; /* TLS does not replace the token */
	ck_assert_int_eq(sk_test_http_do(url, &r), 401);
	free(r.out);
	free(r.headers);
	r = (sk_test_req){ .token = TOKEN }; /* an unknown CA: no answer */
	ck_assert_int_eq(sk_test_http_do(url, &r), 0);
	free(r.out);
	free(r.headers);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/users/u0/sandbox", w.connect_port);
	r = (sk_test_req){ .token = TOKEN }; /* plain HTTP to the TLS port: no answer */
	ck_assert_int_eq(sk_test_http_do(url, &r), 0);
	free(r.out);
	free(r.headers);
}
END_TEST

/* ---- many sockets at once ---- */

typedef struct sock {
	int fd;
	size_t sent;
	char head[16]; /* the first bytes of the answer */
	size_t got;
	bool done;
} sock;

/* Opens n non-blocking connections to port (more than the soft limit of
 * descriptors needs the limit raised first). */
static sock *
open_many(int port, size_t n)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	sock *s = sk_calloc(n, sizeof(*s));

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	for (size_t i = 0; i < n; i++) {
		s[i].fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		ck_assert_int_ge(s[i].fd, 0);
		if (connect(s[i].fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
			ck_assert_int_eq(errno, EINPROGRESS);
	}
	return s;
}

static void
close_many(sock *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i].fd >= 0)
			close(s[i].fd);
	free(s);
}

/* One poll round: sends what is left of msg (up to len) on each socket,
 * reads the first bytes of each answer; a socket is done at EOF. */
static size_t
pump(sock *s, size_t n, const char *msg, size_t len, int wait_ms)
{
	struct pollfd *p = sk_calloc(n, sizeof(*p));
	size_t done = 0;

	for (size_t i = 0; i < n; i++) {
		p[i].fd = s[i].done ? -1 : s[i].fd;
		p[i].events = (short)(POLLIN | (s[i].sent < len ? POLLOUT : 0));
	}
	poll(p, (nfds_t)n, wait_ms);
	for (size_t i = 0; i < n; i++) {
		char buf[4096];
		ssize_t k;
		if (!s[i].done && (p[i].revents & POLLOUT) && s[i].sent < len &&
		        (k = send(s[i].fd, msg + s[i].sent, len - s[i].sent, MSG_NOSIGNAL)) > 0)
			s[i].sent += (size_t)k;
		if (!s[i].done && (p[i].revents & (POLLIN | POLLHUP | POLLERR))) {
			while ((k = recv(s[i].fd, buf, sizeof(buf), 0)) > 0) {
				size_t room = sizeof(s[i].head) - 1 - s[i].got;
				memcpy(s[i].head + s[i].got, buf,
				        (size_t)k < room ? (size_t)k : room);
				s[i].got += (size_t)k < room ? (size_t)k : room;
			}
			if (k == 0 || (k < 0 && errno != EAGAIN))
				s[i].done = true;
		}
		done += s[i].done;
	}
	free(p);
	return done;
}

static void
lower_fds(rlim_t soft)
{
	struct rlimit rl;

	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_max > soft) {
		rl.rlim_cur = soft;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* The descriptors this test may open: the hard limit. */
static size_t
raise_fds(void)
{
	struct rlimit rl;

	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	return rl.rlim_cur == RLIM_INFINITY ? 1000000 : (size_t)rl.rlim_cur;
}

static int64_t health_max_ms; /* the slowest /healthz of test_starvation */

/* /healthz answered 200 within ms. */
static void
assert_health_quick(int64_t ms)
{
	int64_t t0 = sk_monotonic_ms();
	long st = get_status(w.main_port, "/healthz");
	int64_t dt = sk_monotonic_ms() - t0;

	if (dt > health_max_ms)
		health_max_ms = dt;
	ck_assert_msg(st == 200 && dt < ms, "/healthz: %ld after %lld ms", st, (long long)dt);
}

/* 1,200 half-open connections, then 10,000 concurrent
 * connects. Health answers at once throughout; every connect gets an HTTP
 * answer (200, or 429/503 beyond the caps), none is closed without one. */
START_TEST(test_starvation)
{
	static const char partial[] = "GET /v1/users/u0/sandbox HTTP/1.1\r\nHost: x\r\n";
	static const char full[] = "GET /v1/users/u0/sandbox HTTP/1.1\r\nHost: x\r\n"
	                           "Authorization: Bearer " TOKEN "\r\nConnection: close\r\n\r\n";
	char extra[800];
	size_t fds, n_half = 1200, n_conn = 10000, answered = 0, ok = 0;
	size_t counts[3] = { 0, 0, 0 }; /* 200, 429, 503 */
	sock *half, *conn;
	int64_t deadline;

	snprintf(extra, sizeof(extra), "  connectTokenFile: %s\n", token_file(0600));
	apply_spaces(1);
	/* spacekeeper starts with the usual soft limit of 1,024 descriptors and
	 * must raise its own (cmd/spacekeeper), then this process raises its own */
	lower_fds(1024);
	keeper_start(extra);
	fds = raise_fds();
	if (fds < n_half + n_conn + 512) { /* a smaller machine: the same shape, scaled */
		n_conn = fds > n_half + 1024 ? fds - n_half - 512 : 256;
		fprintf(stderr, "starvation: %zu descriptors, %zu connects\n", fds, n_conn);
	}
	ck_assert_int_eq(connect_status("/v1/users/u0/sandbox?timeout=30s"), 200);

	half = open_many(w.connect_port, n_half);
	for (int i = 0; i < 20; i++)
		pump(half, n_half, partial, sizeof(partial) - 1, 50);
	assert_health_quick(1000);
	ck_assert_int_eq(get_status(w.main_port, "/readyz"), 200);
	ck_assert_int_eq(connect_status("/v1/users/u0/sandbox"), 200);

	conn = open_many(w.connect_port, n_conn);
	deadline = sk_monotonic_ms() + 180000;
	for (int round = 0; sk_monotonic_ms() < deadline; round++) {
		if (pump(conn, n_conn, full, sizeof(full) - 1, 100) == n_conn)
			break;
		if (round % 10 == 1) /* while connects are in flight */
			assert_health_quick(2000);
	}
	for (size_t i = 0; i < n_conn; i++) {
		if (conn[i].got < 12)
			continue;
		answered++;
		if (strncmp(conn[i].head, "HTTP/1.1 200", 12) == 0)
			counts[0]++;
		else if (strncmp(conn[i].head, "HTTP/1.1 429", 12) == 0)
			counts[1]++;
		else if (strncmp(conn[i].head, "HTTP/1.1 503", 12) == 0)
			counts[2]++;
	}
	ok = counts[0] + counts[1] + counts[2];
	fprintf(stderr,
	        "starvation: %zu connects: %zu answered (200: %zu, 429: %zu, 503: %zu); "
	        "slowest /healthz %lld ms\n",
	        n_conn, answered, counts[0], counts[1], counts[2], (long long)health_max_ms);
	ck_assert_uint_eq(answered, n_conn);
	ck_assert_uint_eq(ok, n_conn);
	ck_assert_uint_gt(counts[0], 0);
	close_many(conn, n_conn);
	close_many(half, n_half);
	assert_health_quick(1000);
}
END_TEST

/* ---- the cap on waiting connects ---- */

/* Six connects that must each wait for a create (3 s per provider call):
 * two wait, four get 429 with Retry-After at once. */
START_TEST(test_waiting_cap)
{
	const char *lat[] = { "--latency", "3s", NULL };
	/* by name: the store answers before the informer has seen the objects */
	static const char fmt[] = "POST /v1/userspaces/u%d/connect?timeout=30s HTTP/1.1\r\n"
	                          "Host: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
	char msgs[6][160], extra[800];
	size_t n = 6, n429 = 0, n200 = 0;
	sock *s;
	int64_t t0, deadline;

	sk_test_stop(w.sim_pid, true);
	w.sim_pid = sk_test_sim_start(lat, w.sim_url, sizeof(w.sim_url));
	snprintf(extra, sizeof(extra), "  connectMaxWaiting: 2\n");
	keeper_start(extra);
	apply_spaces(6);
	s = open_many(w.connect_port, n);
	t0 = sk_monotonic_ms();
	deadline = t0 + 60000;
	for (size_t i = 0; i < n; i++)
		snprintf(msgs[i], sizeof(msgs[i]), fmt, (int)i);
	while (sk_monotonic_ms() < deadline) {
		size_t done = 0;
		for (size_t i = 0; i < n; i++)
			done += pump(&s[i], 1, msgs[i], strlen(msgs[i]), 10);
		if (done == n)
			break;
	}
	for (size_t i = 0; i < n; i++) {
		n429 += strncmp(s[i].head, "HTTP/1.1 429", 12) == 0;
		n200 += strncmp(s[i].head, "HTTP/1.1 200", 12) == 0;
	}
	close_many(s, n);
	ck_assert_msg(n429 == 4 && n200 == 2, "429: %zu, 200: %zu", n429, n200);
	/* once they are done, connects are accepted again */
	ck_assert_int_eq(connect_status("/v1/users/u5/sandbox?timeout=30s"), 200);
}
END_TEST

/* ---- /readyz while the store is down ---- */

START_TEST(test_store_outage)
{
	char dir[700], uri_buf[128], *body = NULL;
	int port = sk_test_free_port();
	pid_t fdb;
	sk_test_req r = { 0 };
	char url[128];
	int64_t t0;

	snprintf(dir, sizeof(dir), "%s/outage-ferretdb", sk_test_tmpdir());
	fdb = sk_test_ferretdb_start_at(dir, port);
	snprintf(uri_buf, sizeof(uri_buf), "mongodb://127.0.0.1:%d", port);
	snprintf(w.mongo_uri, sizeof(w.mongo_uri), "%s", uri_buf);
	keeper_start("  storeUnavailableAfter: 3s\n");
	t0 = sk_monotonic_ms();
	sk_test_stop(fdb, false);
	ck_assert_msg(eventually_status(w.main_port, "/readyz", 503, 15), "/readyz stayed 200");
	/* not before the window: 3 s of silence, found by a probe every 750 ms */
	ck_assert_int_ge(sk_monotonic_ms() - t0, 2000);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/readyz", w.main_port);
	sk_test_http_do(url, &r);
	ASSERT_HAS(r.out, "store unreachable");
	free(r.out);
	free(r.headers);
	ck_assert_int_eq(get_status(w.main_port, "/healthz"), 200); /* alive all along */
	sleep(4); /* a ping fails (server selection gives up after 3 s) and is counted */
	ck_assert_int_eq(get_status(w.main_port, "/readyz"), 503);
	fdb = sk_test_ferretdb_start_at(dir, port);
	ck_assert_msg(eventually_status(w.main_port, "/readyz", 200, 60), "not ready again");
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", w.main_port);
	r = (sk_test_req){ 0 };
	ck_assert_int_eq(sk_test_http_do(url, &r), 200);
	body = r.out;
	ck_assert_msg(strstr(body, "spacekeeper_store_errors_total{op=\"ping\"} 0\n") == NULL,
	        "no ping error counted");
	ASSERT_HAS(body, "spacekeeper_store_errors_total{op=\"informer\"}");
	free(body);
	free(r.headers);
	ck_assert_int_eq(sk_test_stop(w.keeper_pid, false), 0);
	w.keeper_pid = 0;
	sk_test_stop(fdb, false);
}
END_TEST

/* ---- /readyz while no shard is held and some are free ---- */

/* The /readyz body (status in *status). Caller frees. */
static char *
readyz_body(long *status)
{
	char url[128];
	sk_test_req r = { 0 };

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/readyz", w.main_port);
	*status = sk_test_http_do(url, &r);
	free(r.headers);
	return r.out ? r.out : sk_strdup("");
}

static mongoc_collection_t *
collection(mongoc_client_t *client, const char *name)
{
	return mongoc_client_get_collection(client, w.db, name);
}

/* shard-00 released (holder ""), at version 1, and a claim on that version
 * that never expires (taken a day from now): every lease write over it
 * conflicts, so the replica sees the shard free and cannot take it. */
static void
plant_unwritable_shard(mongoc_client_t *client)
{
	mongoc_collection_t *leases = collection(client, "leases"), *claims;
	bson_t *lease = BCON_NEW("_id", BCON_UTF8("shard-00"), "holder", BCON_UTF8(""),
	        "acquireTime", BCON_DATE_TIME(0), "renewTime", BCON_DATE_TIME(0), "durationMs",
	        BCON_INT64(4000), "version", BCON_INT64(1));
	bson_t *claim = BCON_NEW("_id", BCON_UTF8("lease/shard-00/1"), "at",
	        BCON_DATE_TIME(sk_now_ms() + 24 * 3600 * 1000));
	bson_error_t berr;

	claims = collection(client, "claims");
	ck_assert_msg(
	        mongoc_collection_insert_one(leases, lease, NULL, NULL, &berr), "%s", berr.message);
	ck_assert_msg(
	        mongoc_collection_insert_one(claims, claim, NULL, NULL, &berr), "%s", berr.message);
	bson_destroy(lease);
	bson_destroy(claim);
	mongoc_collection_destroy(leases);
	mongoc_collection_destroy(claims);
}

/* A started replica that holds no shard while one is free is not ready
 * (503 with the count), and is once it could take it. */
START_TEST(test_not_ready_while_shards_free)
{
	mongoc_client_t *client = mongoc_client_new(w.mongo_uri);
	mongoc_collection_t *claims;
	bson_t *filter;
	bson_error_t berr;
	char *body = NULL;
	long st = 0;
	bool seen = false;

	plant_unwritable_shard(client);
	keeper_launch("  shards: 1\n  leaseDuration: 4s\n  renewDeadline: 3s\n"
	              "  retryPeriod: 300ms\n");
	for (int i = 0; i < 300 && !seen; i++) {
		free(body);
		body = readyz_body(&st);
		seen = st == 503 && strstr(body, "no shard held while 1 are free") != NULL;
		if (!seen)
			usleep(100 * 1000);
	}
	ck_assert_msg(seen, "/readyz: %ld %s (%s)", st, body, w.log);
	/* still so after several lease rounds: the claim does not expire */
	sleep(2);
	free(body);
	body = readyz_body(&st);
	ck_assert_msg(st == 503 && strstr(body, "no shard held while 1 are free") != NULL,
	        "/readyz: %ld %s", st, body);
	free(body);
	claims = collection(client, "claims");
	filter = BCON_NEW("_id", BCON_UTF8("lease/shard-00/1"));
	ck_assert_msg(mongoc_collection_delete_one(claims, filter, NULL, NULL, &berr), "%s",
	        berr.message);
	bson_destroy(filter);
	mongoc_collection_destroy(claims);
	mongoc_client_destroy(client);
	ck_assert_msg(eventually_status(w.main_port, "/readyz", 200, 30),
	        "not ready once free (%s)", w.log);
	ck_assert_int_eq(sk_test_stop(w.keeper_pid, false), 0);
	w.keeper_pid = 0;
}
END_TEST

Suite *
sk_suite_guard(void)
{
	Suite *s = suite_create("guard");
	TCase *tc = tcase_create("guard");
	TCase *load = tcase_create("load");

	tcase_set_timeout(tc, 180);
	tcase_set_timeout(load, 400);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_checked_fixture(load, setup, teardown);
	tcase_add_test(tc, test_token_and_separate_listener);
	tcase_add_test(tc, test_token_rules);
	tcase_add_test(tc, test_tls);
	tcase_add_test(tc, test_waiting_cap);
	tcase_add_test(tc, test_store_outage);
	tcase_add_test(tc, test_not_ready_while_shards_free);
	tcase_add_test(load, test_starvation);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, load);
	return s;
}
