/* Helpers of the replica end-to-end tests: start replicas, read their metrics and split. */
#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../testutil.h"
#include "replicas_testlib.h"
#include "util/util.h"

rl_world rl;

/* ---- HTTP ---- */

static size_t
collect(char *p, size_t size, size_t n, void *arg)
{
	sk_buf_append(arg, p, size * n);
	return size * n;
}

static long
http_core(const char *method, const char *url, const char *token, const char *cacert,
        const char *header, const char *body, char **out)
{
	CURL *h = curl_easy_init();
	struct curl_slist *hdr = NULL;
	sk_buf b = SK_BUF_INIT(64 << 20);
	char auth[256];
	long status = 0;

	hdr = curl_slist_append(hdr, "X-API-Key: " RL_DUMMY_KEY);
	if (token) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
		hdr = curl_slist_append(hdr, auth);
	}
	if (header)
		hdr = curl_slist_append(hdr, header);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	if (cacert)
		curl_easy_setopt(h, CURLOPT_CAINFO, cacert);
	if (body || strcmp(method, "POST") == 0)
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	sk_buf_append(&b, "", 0);
	*out = sk_buf_detach(&b);
	sk_buf_dispose(&b);
	return status;
}

long
rl_http_auth(const char *method, const char *url, const char *token, const char *cacert, char **out)
{
	return http_core(method, url, token, cacert, NULL, NULL, out);
}

long
rl_http_send(const char *method, const char *url, const char *token, const char *header,
        const char *body, char **out)
{
	return http_core(method, url, token, NULL, header, body, out);
}

long
rl_http(const char *method, const char *url, char **out)
{
	return rl_http_auth(method, url, NULL, NULL, out);
}

/* ---- metrics ---- */

double
rl_metric(const rl_replica *r, const char *series)
{
	char url[128], *text = NULL, *p;
	double v = -1;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", r->port);
	if (rl_http("GET", url, &text) == 200) {
		size_t len = strlen(series);
		for (p = text; (p = strstr(p, series)) != NULL; p += len)
			if ((p == text || p[-1] == '\n') && p[len] == ' ') {
				v = strtod(p + len + 1, NULL);
				break;
			}
	}
	free(text);
	return v;
}

double
rl_metric_sum(const rl_replica *r, const char *family)
{
	char url[128], *text = NULL, *p;
	size_t len = strlen(family);
	double sum = 0;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", r->port);
	if (rl_http("GET", url, &text) == 200)
		for (p = text; (p = strstr(p, family)) != NULL; p += len) {
			char *sp;
			if ((p != text && p[-1] != '\n') || (p[len] != '{' && p[len] != ' '))
				continue;
			if ((sp = strchr(p + len, ' ')) != NULL && sp < strchrnul(p, '\n'))
				sum += strtod(sp + 1, NULL);
		}
	free(text);
	return sum;
}

int
rl_held(const rl_replica *r)
{
	return (int)rl_metric(r, "spacekeeper_shards_held");
}

/* ---- processes ---- */

/* A failed assertion ends the forked test without its teardown: every
 * child is recorded, and the suite's unchecked teardown (in the runner)
 * kills what is left. */
void
rl_track_pid(pid_t pid)
{
	char path[600];
	FILE *f;

	snprintf(path, sizeof(path), "%s/replica-pids", sk_test_tmpdir());
	if ((f = fopen(path, "a")) != NULL) {
		fprintf(f, "%d\n", (int)pid);
		fclose(f);
	}
}

void
rl_kill_leftovers(void)
{
	char path[600], cmd[64], exe[256];
	FILE *f;
	int pid;

	snprintf(path, sizeof(path), "%s/replica-pids", sk_test_tmpdir());
	if ((f = fopen(path, "r")) == NULL)
		return;
	while (fscanf(f, "%d", &pid) == 1) {
		ssize_t n;
		snprintf(cmd, sizeof(cmd), "/proc/%d/exe", pid);
		n = readlink(cmd, exe, sizeof(exe) - 1);
		exe[n > 0 ? n : 0] = '\0';
		if (pid > 0 && (strstr(exe, "spacekeeper") || strstr(exe, "sandboxsim"))) {
			kill(pid, SIGCONT);
			kill(pid, SIGKILL);
		}
	}
	fclose(f);
	unlink(path);
}

static void
write_config(rl_replica *r, int i, const char *extra)
{
	char yaml[4096], name[32];

	r->port = sk_test_free_port();
	r->connect_port = sk_test_free_port();
	snprintf(yaml, sizeof(yaml),
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: ControllerConfig\n"
	        "providers:\n  - name: default\n    type: e2b\n    apiURL: %s\n"
	        "    sandboxURL: %s\n    apiKeyEnv: E2B_API_KEY\n    requestTimeout: 5s\n"
	        "    sandboxTimeout: 1h\n"
	        "controller:\n  workers: 8\n  resyncPeriod: %ds\n  listen: 127.0.0.1:%d\n"
	        "  connectListen: 127.0.0.1:%d\n"
	        "  identity: replica-%d\n  shards: %d\n  leaseDuration: %ds\n"
	        "  renewDeadline: 3s\n  retryPeriod: 500ms\n%s",
	        rl.sim_url, rl.sim_url, RL_RESYNC_S, r->port, r->connect_port, i, rl.shards,
	        RL_LEASE_S, extra ? extra : "");
	snprintf(name, sizeof(name), "replica-%d.yaml", i);
	snprintf(r->cfg, sizeof(r->cfg), "%s", sk_test_write_file(name, yaml));
}

void
rl_start(int i, const char *extra)
{
	rl_start_env(i, extra, NULL);
}

void
rl_start_env(int i, const char *extra, const char *const *more_env)
{
	const char *env[16] = { "E2B_API_KEY=" RL_DUMMY_KEY, NULL };
	rl_replica *r = &rl.reps[i];
	const char *argv[] = { "spacekeeper", "--config", r->cfg, "--mongodb-uri", rl.mongo_uri,
		"--database", rl.db, "--poll", "200ms", NULL };

	ck_assert_int_lt(i, RL_MAX_REPLICAS);
	for (size_t k = 0; more_env && more_env[k] && k + 2 < 16; k++)
		env[k + 1] = more_env[k];
	write_config(r, i, extra);
	snprintf(r->log, sizeof(r->log), "%s/replica-%s-%d.log", sk_test_tmpdir(), rl.db, i);
	r->pid = sk_test_spawn(argv, env, r->log);
	rl_track_pid(r->pid);
	ck_assert_msg(
	        sk_test_wait_port(r->port, 20000), "replica %d did not listen (%s)", i, r->log);
}

void
rl_setup(const char *tag, int shards, const char *const *sim_args)
{
	setvbuf(stdout, NULL, _IONBF, 0); /* the split is printed even when a check fails */
	curl_global_init(CURL_GLOBAL_DEFAULT);
	memset(&rl, 0, sizeof(rl));
	rl.tag = tag;
	rl.shards = shards;
	snprintf(rl.db, sizeof(rl.db), "%s", sk_test_unique_db());
	snprintf(rl.mongo_uri, sizeof(rl.mongo_uri), "%s", sk_test_mongodb_uri());
	rl.sim_pid = sk_test_sim_start(sim_args, rl.sim_url, sizeof(rl.sim_url));
	rl_track_pid(rl.sim_pid);
}

void
rl_teardown(void)
{
	for (int i = 0; i < RL_MAX_REPLICAS; i++)
		if (rl.reps[i].pid > 0) {
			kill(rl.reps[i].pid, SIGCONT);
			sk_test_stop(rl.reps[i].pid, true);
			rl.reps[i].pid = 0;
		}
	if (rl.sim_pid > 0)
		sk_test_stop(rl.sim_pid, true);
	rl.sim_pid = 0;
	curl_global_cleanup();
}

/* ---- the split ---- */

static void
print_split(unsigned mask, const int *h)
{
	for (int i = 0; i < RL_MAX_REPLICAS; i++)
		if (mask & (1u << i))
			printf(" replica-%d=%d", i, h[i]);
}

bool
rl_split_settled(unsigned mask, int min, int64_t t0, int timeout_s, const char *when)
{
	for (;;) {
		int sum = 0, lo = rl.shards, h[RL_MAX_REPLICAS] = { 0 };
		int64_t dt = sk_monotonic_ms() - t0;
		for (int i = 0; i < RL_MAX_REPLICAS; i++) {
			if (!(mask & (1u << i)))
				continue;
			h[i] = rl_held(&rl.reps[i]);
			sum += h[i];
			lo = h[i] < lo ? h[i] : lo;
		}
		if (sum == rl.shards && lo >= min) {
			printf("%s: shard split %s:", rl.tag, when);
			print_split(mask, h);
			printf(" (of %d, after %.1fs)\n", rl.shards, (double)dt / 1000.0);
			return true;
		}
		if (dt > timeout_s * 1000) {
			printf("%s: no split %s after %.1fs:", rl.tag, when, (double)dt / 1000.0);
			print_split(mask, h);
			printf("\n");
			return false;
		}
		usleep(250000);
	}
}

unsigned
rl_shard_of(const char *user)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *p = (const unsigned char *)user; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h % (unsigned)rl.shards;
}

int
rl_holder_of(unsigned mask, const char *user)
{
	char series[96];

	snprintf(series, sizeof(series),
	        "spacekeeper_leader_election_master_status{name=\"shard-%02u\"}",
	        rl_shard_of(user));
	for (int i = 0; i < RL_MAX_REPLICAS; i++)
		if ((mask & (1u << i)) && rl_metric(&rl.reps[i], series) == 1)
			return i;
	return -1;
}

/* ---- UserSpaces ---- */

static void
apply_yaml(const char *yaml)
{
	char p[600];
	const char *argv[] = { "spacectl", "--mongodb-uri", rl.mongo_uri, "--database", rl.db,
		"apply", "-f", p, NULL };

	snprintf(p, sizeof(p), "%s", sk_test_write_file("users.yaml", yaml));
	ck_assert_int_eq(sk_test_run(argv, NULL, NULL, NULL, NULL, 120), 0);
}

static void
add_user(sk_buf *b, const char *name)
{
	sk_buf_printf(b,
	        "---\napiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	        "metadata:\n  name: %s\nspec:\n  userID: %s\n",
	        name, name);
}

void
rl_apply_asleep(const char *prefix, int from, int to)
{
	sk_buf b = SK_BUF_INIT(64 << 20);
	char name[64];

	for (int i = from; i < to; i++) {
		snprintf(name, sizeof(name), "%s%03d", prefix, i);
		add_user(&b, name);
		sk_buf_printf(&b, "  mode: Paused\n");
	}
	apply_yaml(b.data);
	sk_buf_dispose(&b);
}

void
rl_apply_users(const char *prefix, int from, int to)
{
	sk_buf b = SK_BUF_INIT(16 << 20);
	char name[64];

	for (int i = from; i < to; i++) {
		snprintf(name, sizeof(name), "%s%03d", prefix, i);
		add_user(&b, name);
	}
	apply_yaml(b.data);
	sk_buf_dispose(&b);
}

void
rl_apply_names(const char *const *names, size_t n)
{
	sk_buf b = SK_BUF_INIT(16 << 20);

	for (size_t i = 0; i < n; i++)
		add_user(&b, names[i]);
	apply_yaml(b.data);
	sk_buf_dispose(&b);
}

json_t *
rl_ready_bindings(void)
{
	const char *argv[] = { "spacectl", "--mongodb-uri", rl.mongo_uri, "--database", rl.db,
		"get", "userspaces", "-o", "json", NULL };
	char *out = NULL;
	json_t *v, *items, *it, *m = json_object(), *c;
	size_t i, k;

	ck_assert_int_eq(sk_test_run(argv, NULL, NULL, &out, NULL, 120), 0);
	v = json_loads(out ? out : "", 0, NULL);
	free(out);
	items = json_object_get(v, "items");
	json_array_foreach(items, i, it)
	{
		json_t *st = json_object_get(it, "status");
		json_array_foreach(json_object_get(st, "conditions"), k, c)
		{
			if (strcmp(json_string_value(json_object_get(c, "type")), "Ready") == 0 &&
			        strcmp(json_string_value(json_object_get(c, "status")), "True") ==
			                0 &&
			        json_is_string(json_object_get(st, "sandboxID")))
				json_object_set(m,
				        json_string_value(json_object_get(
				                json_object_get(it, "metadata"), "name")),
				        json_object_get(st, "sandboxID"));
		}
	}
	json_decref(v);
	return m;
}

/* ---- the simulator, logs and fencing (check_replicas.c, check_clock.c) ---- */

json_t *
rl_sim_sandboxes(void)
{
	char url[256], *text = NULL;
	json_t *v;

	snprintf(url, sizeof(url), "%s/_sim/sandboxes", rl.sim_url);
	rl_http("GET", url, &text);
	v = json_loads(text ? text : "", 0, NULL);
	free(text);
	ck_assert_msg(json_is_array(v), "GET /_sim/sandboxes");
	return v;
}

/* Users "r000".."r<n-1>": how many have exactly one live (running or
 * paused) sandbox, and (when bound is given) that one is the Ready object's
 * binding; the extra live sandboxes in *dups. */
int
rl_count_one_each_bound(const char *prefix, int n, json_t *bound, int *dups)
{
	json_t *all = rl_sim_sandboxes(), *sb;
	int *per = calloc((size_t)n, sizeof(int)), *ok = calloc((size_t)n, sizeof(int)), ones = 0;
	size_t i;
	char name[64];

	json_array_foreach(all, i, sb)
	{
		const char *st = json_string_value(json_object_get(sb, "state"));
		const char *u = json_string_value(
		        json_object_get(json_object_get(sb, "metadata"), "user_id"));
		const char *id = json_string_value(json_object_get(sb, "sandboxID"));
		if (!u || !st || strncmp(u, prefix, strlen(prefix)) != 0 ||
		        (strcmp(st, "running") != 0 && strcmp(st, "paused") != 0))
			continue;
		int k = atoi(u + strlen(prefix));
		if (k < 0 || k >= n)
			continue;
		per[k]++;
		snprintf(name, sizeof(name), "%s%03d", prefix, k);
		ok[k] = !bound ||
		        (id && json_is_string(json_object_get(bound, name)) &&
		                strcmp(json_string_value(json_object_get(bound, name)), id) == 0);
	}
	*dups = 0;
	for (int k = 0; k < n; k++) {
		ones += per[k] == 1 && ok[k];
		*dups += per[k] > 1 ? per[k] - 1 : 0;
	}
	free(per);
	free(ok);
	json_decref(all);
	return ones;
}

bool
rl_converged(const char *prefix, int n, int timeout_s)
{
	int dups = 0;

	for (int64_t t0 = sk_monotonic_ms(); sk_monotonic_ms() - t0 < timeout_s * 1000;) {
		json_t *bound = rl_ready_bindings();
		bool ok = rl_count_one_each_bound(prefix, n, bound, &dups) == n && dups == 0;
		json_decref(bound);
		if (ok)
			return true;
		usleep(500000);
	}
	return false;
}

int
rl_count_one_each(const char *prefix, int n, int *dups)
{
	return rl_count_one_each_bound(prefix, n, NULL, dups);
}

/* Sets the simulator's faults (a JSON document), or clears them (NULL). */
void
rl_sim_faults(const char *body)
{
	char url[256], *out = NULL;
	long st;

	snprintf(url, sizeof(url), "%s/_sim/faults", rl.sim_url);
	st = body ? sk_test_post_json(rl.sim_url, "/_sim/faults", body)
	          : rl_http("DELETE", url, &out);
	free(out);
	ck_assert_msg(st >= 200 && st < 300, "%s /_sim/faults: %ld", body ? "POST" : "DELETE", st);
}

/* Whether a space of a shard replica r holds is marked Creating (the mark
 * is written just before the provider's create call). */
bool
rl_creating_on(const rl_replica *r)
{
	const char *argv[] = { "spacectl", "--mongodb-uri", rl.mongo_uri, "--database", rl.db,
		"get", "userspaces", "-o", "json", NULL };
	char *out = NULL, series[96];
	json_t *v, *it;
	bool *mine = calloc((size_t)rl.shards, sizeof(bool)), found = false;
	size_t i;

	for (unsigned k = 0; k < (unsigned)rl.shards; k++) {
		snprintf(series, sizeof(series),
		        "spacekeeper_leader_election_master_status{name=\"shard-%02u\"}", k);
		mine[k] = rl_metric(r, series) == 1;
	}
	ck_assert_int_eq(sk_test_run(argv, NULL, NULL, &out, NULL, 120), 0);
	v = json_loads(out ? out : "", 0, NULL);
	free(out);
	json_array_foreach(json_object_get(v, "items"), i, it)
	{
		const char *user =
		        json_string_value(json_object_get(json_object_get(it, "spec"), "userID"));
		const char *phase =
		        json_string_value(json_object_get(json_object_get(it, "status"), "phase"));
		if (user && phase && strcmp(phase, "Creating") == 0 && mine[rl_shard_of(user)])
			found = true;
	}
	json_decref(v);
	free(mine);
	return found;
}

off_t
rl_file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : 0;
}

char *
rl_log_since(const rl_replica *r, off_t off)
{
	FILE *f = fopen(r->log, "r");
	off_t end = rl_file_size(r->log);
	char *buf = calloc(1, (size_t)(end - off) + 1);

	if (f && end > off) {
		fseeko(f, off, SEEK_SET);
		size_t got = fread(buf, 1, (size_t)(end - off), f);
		buf[got] = '\0';
	}
	if (f)
		fclose(f);
	return buf;
}

/* The value of key=VALUE in one log line (into out). */
static void
log_value(const char *line, const char *key, char *out, size_t len)
{
	const char *p = strstr(line, key);
	size_t n = 0;

	out[0] = '\0';
	if (!p)
		return;
	for (p += strlen(key); *p && *p != ' ' && *p != '\n' && n + 1 < len; p++)
		out[n++] = *p;
	out[n] = '\0';
}

/* After SIGCONT, until the replica holds a lease again: the only actions it
 * logs ("action" or "action failed", logged when a call returns) are the
 * provider calls that were in flight at SIGSTOP (at most one per worker),
 * and each is followed by a fenced stop of the same space: no call starts
 * and nothing is written on the stale lease. */
void
rl_assert_no_stale_action(const rl_replica *r, off_t off, int *in_flight, int *fenced)
{
	char *text = rl_log_since(r, off), *end = strstr(text, "msg=\"shards acquired\"");
	char name[128], want[160];

	*in_flight = *fenced = 0;
	if (end)
		*end = '\0';
	for (char *p = text; (p = strstr(p, "msg=\"fenced\"")) != NULL; p++)
		(*fenced)++;
	for (char *p = text; (p = strstr(p, "msg=\"action")) != NULL; p++) {
		char *eol = strchr(p, '\n');
		ck_assert_ptr_nonnull(eol);
		*eol = '\0';
		if (strstr(p, "error=\"") && strstr(p, "fenced")) {
			*eol = '\n'; /* refused by the fence itself: no call made */
			continue;
		}
		log_value(p, "userspace=", name, sizeof(name));
		snprintf(want, sizeof(want), "msg=\"fenced\" userspace=%s ", name);
		ck_assert_msg(strstr(eol + 1, want),
		        "replica acted after SIGCONT without a lease and was not fenced: %s", p);
		(*in_flight)++;
		*eol = '\n';
	}
	ck_assert_int_le(*in_flight, 8); /* workers: 8 */
	free(text);
}

/* ---- a TCP proxy to the database that can be cut ---- */

static struct {
	int listen_fd, up_port;
	char uri[160];
	atomic_bool cut;
} px = { .listen_fd = -1 };

typedef struct px_pipe {
	int from, to;
} px_pipe;

/* One direction of a connection; while cut nothing is read, so the
 * caller's requests wait as behind a partition. */
static void *
px_pump(void *arg)
{
	px_pipe p = *(px_pipe *)arg;
	char buf[16384];

	free(arg);
	for (;;) {
		struct pollfd pf = { .fd = p.from, .events = POLLIN };
		ssize_t n;
		if (atomic_load(&px.cut) || poll(&pf, 1, 100) <= 0) {
			if (atomic_load(&px.cut))
				sk_sleep_ms(50);
			continue;
		}
		if ((n = read(p.from, buf, sizeof(buf))) <= 0)
			break;
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(p.to, buf + off, (size_t)(n - off));
			if (w <= 0)
				goto out;
			off += w;
		}
	}
out:
	shutdown(p.to, SHUT_WR);
	return NULL;
}

static void
px_spawn(int from, int to)
{
	px_pipe *p = sk_malloc(sizeof(*p));
	pthread_t t;

	p->from = from;
	p->to = to;
	ck_assert_int_eq(pthread_create(&t, NULL, px_pump, p), 0);
	pthread_detach(t);
}

static int
px_dial(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)px.up_port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Accepts while not cut; each connection gets its upstream and two pumps. */
static void *
px_accept(void *arg)
{
	for (;;) {
		struct pollfd pf = { .fd = px.listen_fd, .events = POLLIN };
		int c, up;
		if (atomic_load(&px.cut) || poll(&pf, 1, 100) <= 0) {
			if (atomic_load(&px.cut))
				sk_sleep_ms(50);
			continue;
		}
		if ((c = accept(px.listen_fd, NULL, NULL)) < 0)
			continue;
		if ((up = px_dial()) < 0) {
			close(c);
			continue;
		}
		px_spawn(c, up);
		px_spawn(up, c);
	}
	return NULL;
}

void
rl_proxy_start(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	const char *colon = strrchr(rl.mongo_uri, ':');
	const char *rest;
	pthread_t t;
	int one = 1;

	ck_assert_ptr_nonnull(colon);
	px.up_port = atoi(colon + 1);
	for (rest = colon + 1; *rest >= '0' && *rest <= '9'; rest++)
		;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	px.listen_fd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(px.listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	ck_assert_int_eq(bind(px.listen_fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(px.listen_fd, 64), 0);
	ck_assert_int_eq(getsockname(px.listen_fd, (struct sockaddr *)&a, &len), 0);
	snprintf(px.uri, sizeof(px.uri), "%.*s:%d%s", (int)(colon - rl.mongo_uri), rl.mongo_uri,
	        ntohs(a.sin_port), rest);
	atomic_store(&px.cut, false);
	ck_assert_int_eq(pthread_create(&t, NULL, px_accept, NULL), 0);
	pthread_detach(t);
}

const char *
rl_proxy_uri(void)
{
	return px.uri;
}

void
rl_proxy_cut(bool cut)
{
	atomic_store(&px.cut, cut);
}
