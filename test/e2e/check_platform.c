/*
 * End-to-end tests of the platform's side of the connect API:
 * the answer carries what an SDK needs to attach with no provider call
 * (envdVersion, envdAccessToken, provider, deadline) and the token appears
 * nowhere else; a command started through envd keeps the space awake
 * (lifecycle.busy) and, with busy Ignore, is paused mid-command; a data
 * plane reported dead (POST .../unhealthy, ?fresh=1) is probed at once and
 * replaced (Replace) or answered 503 (Report); a deadline set at the
 * provider by someone else is put back with one DeadlineOverridden event.
 * Real binaries: FerretDB, sandboxsim, spacekeeper, spacectl.
 */
#include <check.h>
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../testutil.h"
#include "util/util.h"

Suite *sk_suite_platform(void);

#define RESYNC_S 3
#define ASSERT_HAS(hay, needle)                                                                    \
	ck_assert_msg(strstr((hay), (needle)) != NULL, "expected \"%s\" in:\n%s", (needle), (hay))

static sk_test_world w; /* the simulator, the database, spacekeeper */
static pid_t own_db; /* a test's own FerretDB (it stops it), 0: none */

/* ---- HTTP ---- */

/* A connect API call (path on the connect listener). A ready answer is
 * checked byte for byte against what jansson writes for it (compact, one
 * newline): the controller writes it by hand, not with jansson. */
static json_t *
connect_call(const char *method, const char *path, long *status)
{
	char url[300], *text = NULL, *again;
	json_t *v;
	long st;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", w.connect_port, path);
	st = sk_test_http(method, url, strcmp(method, "POST") == 0 ? "" : NULL, &text);
	v = json_loads(text ? text : "", 0, NULL);
	if (st == 200 && json_object_get(v, "ready") != NULL) {
		again = json_dumps(v, JSON_COMPACT);
		ck_assert_ptr_nonnull(again);
		ck_assert_msg(strlen(text) == strlen(again) + 1 &&
		                strncmp(text, again, strlen(again)) == 0 &&
		                text[strlen(again)] == '\n',
		        "connect %s: the answer is not jansson's compact form", path);
		free(again);
	}
	free(text);
	if (status)
		*status = st;
	return v;
}

/* GET /v1/users/USER/sandbox: 200 and its answer. */
static json_t *
connect_ok(const char *user)
{
	char path[200];
	json_t *v;
	long st;

	snprintf(path, sizeof(path), "/v1/users/%s/sandbox?timeout=60s", user);
	v = connect_call("GET", path, &st);
	ck_assert_msg(st == 200, "connect %s: %ld", user, st);
	return v;
}

static const char *
jstr(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static void
sim_post(const char *path, const char *body)
{
	sk_test_sim_post(w.sim_url, path, body);
}

/* The simulator's record of one sandbox (GET /sandboxes/ID, with the key). */
static json_t *
sim_get(const char *id)
{
	char url[300];

	snprintf(url, sizeof(url), "%s/sandboxes/%s", w.sim_url, id);
	return sk_test_http_json("GET", url, NULL, NULL);
}

static bool
eventually(bool (*check)(void *), void *arg, int timeout_s)
{
	for (int i = 0; i < timeout_s * 4; i++) {
		if (check(arg))
			return true;
		usleep(250000);
	}
	return check(arg);
}

/* ---- spacectl ---- */

static int
spacectl(const char *const *args, char **out)
{
	return sk_test_spacectl(w.mongo_uri, w.db, args, out);
}

static void
apply_yaml(const char *yaml)
{
	char p[600];
	const char *args[] = { "apply", "-f", p, NULL };

	snprintf(p, sizeof(p), "%s", sk_test_write_file("spaces.yaml", yaml));
	ck_assert_int_eq(spacectl(args, NULL), 0);
}

/* The object as spacectl prints it in JSON. */
static json_t *
get_us(const char *name)
{
	const char *args[] = { "get", "userspace", name, "-o", "json", NULL };
	char *out = NULL;
	json_t *v;

	ck_assert_int_eq(spacectl(args, &out), 0);
	v = json_loads(out ? out : "", 0, NULL);
	free(out);
	ck_assert_ptr_nonnull(v);
	return v;
}

static char *
phase_of(const char *name)
{
	json_t *v = get_us(name);
	char *p = sk_strdup(jstr(json_object_get(v, "status"), "phase"));

	json_decref(v);
	return p;
}

static bool
phase_is(const char *name, const char *want)
{
	char *p = phase_of(name);
	bool ok = p && strcmp(p, want) == 0;

	free(p);
	return ok;
}

/* The status of condition type (NULL: none), copied. */
static char *
condition_of(const char *name, const char *type)
{
	json_t *v = get_us(name), *c;
	char *out = NULL;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(v, "status"), "conditions"), i, c)
	{
		if (strcmp(jstr(c, "type"), type) == 0)
			out = sk_strdup(jstr(c, "status"));
	}
	json_decref(v);
	return out;
}

typedef struct phase_want {
	const char *name, *phase;
} phase_want;

static bool
phase_check(void *arg)
{
	phase_want *p = arg;

	return phase_is(p->name, p->phase);
}

/* Waits (on the store, 4 looks a second) until name's phase is phase. */
static bool
eventually_phase(const char *name, const char *phase, int timeout_s)
{
	phase_want p = { name, phase };

	return eventually(phase_check, &p, timeout_s);
}

/* How many times events of reason were recorded for name (aggregated count). */
static int
event_count(const char *name, const char *reason)
{
	const char *args[] = { "events", name, "-o", "json", NULL };
	char *out = NULL;
	json_t *v, *e;
	size_t i;
	int n = 0;

	ck_assert_int_eq(spacectl(args, &out), 0);
	v = json_loads(out ? out : "", 0, NULL);
	free(out);
	json_array_foreach(json_object_get(v, "items"), i, e)
	{
		if (strcmp(jstr(e, "reason"), reason) == 0)
			n += json_is_integer(json_object_get(e, "count"))
			        ? (int)json_integer_value(json_object_get(e, "count"))
			        : 1;
	}
	json_decref(v);
	return n;
}

/* ---- the world ---- */

/* spacekeeper on the world; more: more YAML lines of controller (or ""). */
static void
keeper_start_with(const char *more)
{
	char controller[512];
	sk_test_keeper_opts o = { .provider = "    requestTimeout: 5s\n",
		.controller = controller,
		.log_level = "debug" };

	snprintf(controller, sizeof(controller), "  workers: 4\n  resyncPeriod: %ds\n%s", RESYNC_S,
	        more);
	sk_test_keeper_start(&w, &o);
}

static void
keeper_start(void)
{
	keeper_start_with("");
}

static void
setup(void)
{
	sk_test_world_setup(&w, NULL);
	own_db = 0;
}

static void
teardown(void)
{
	if (own_db > 0)
		kill(own_db, SIGCONT); /* a test that failed while it was stopped */
	sk_test_world_teardown(&w);
	if (own_db > 0)
		sk_test_stop(own_db, true);
	own_db = 0;
}

/* ---- a command through envd, as an SDK runs it ---- */

typedef struct command {
	char url[300]; /* envd base URL */
	char headers[3][300]; /* routing and token headers ("" none) */
	const char *script;
	pthread_t thread;
	int64_t started_ms, ended_ms; /* monotonic */
	bool got_start, got_end, exited, stream_error;
	long status;
	sk_buf answer;
} command;

/* Fills c's target from a connect answer (envdURL, envdHeaders, envdAccessToken). */
static void
command_target(command *c, json_t *answer, const char *script)
{
	json_t *hdrs = json_object_get(answer, "envdHeaders"), *v;
	const char *k;
	int n = 0;

	memset(c, 0, sizeof(*c));
	snprintf(c->url, sizeof(c->url), "%s/process.Process/Start", jstr(answer, "envdURL"));
	json_object_foreach(hdrs, k, v)
	{
		if (n < 2)
			snprintf(c->headers[n++], sizeof(c->headers[0]), "%s: %s", k,
			        json_string_value(v));
	}
	if (jstr(answer, "envdAccessToken"))
		snprintf(c->headers[n], sizeof(c->headers[0]), "X-Access-Token: %s",
		        jstr(answer, "envdAccessToken"));
	c->script = script;
	c->answer = (sk_buf)SK_BUF_INIT(1 << 20);
}

/* Walks the frames received so far: start, end, end-of-stream error. */
static void
scan_frames(command *c)
{
	size_t off = 0;

	while (off + 5 <= c->answer.len) {
		const unsigned char *h = (const unsigned char *)c->answer.data + off;
		size_t n = (size_t)h[1] << 24 | (size_t)h[2] << 16 | (size_t)h[3] << 8 | h[4];
		json_t *m, *ev, *end;
		if (off + 5 + n > c->answer.len)
			break;
		m = json_loadb(c->answer.data + off + 5, n, 0, NULL);
		ev = json_object_get(m, "event");
		if (json_object_get(ev, "start"))
			c->got_start = true;
		if ((end = json_object_get(ev, "end")) != NULL) {
			c->got_end = true;
			c->exited = json_is_true(json_object_get(end, "exited")) &&
			        json_integer_value(json_object_get(end, "exitCode")) == 0;
		}
		if ((h[0] & 0x02) && json_object_get(m, "error"))
			c->stream_error = true;
		json_decref(m);
		off += 5 + n;
	}
}

static size_t
command_collect(char *p, size_t size, size_t n, void *arg)
{
	command *c = arg;

	sk_buf_append(&c->answer, p, size * n);
	scan_frames(c);
	return size * n;
}

static void *
command_main(void *arg)
{
	command *c = arg;
	CURL *h = curl_easy_init();
	struct curl_slist *hdr = NULL;
	json_t *msg = json_pack("{s:{s:s,s:[s,s,s],s:{}}}", "process", "cmd", "/bin/bash", "args",
	        "-l", "-c", c->script, "envs");
	char *text = json_dumps(msg, JSON_COMPACT);
	size_t n = strlen(text);
	sk_buf body = SK_BUF_INIT(0);
	unsigned char env[5] = { 0, (unsigned char)(n >> 24), (unsigned char)(n >> 16),
		(unsigned char)(n >> 8), (unsigned char)n };

	sk_buf_append(&body, env, 5);
	sk_buf_append(&body, text, n);
	hdr = curl_slist_append(hdr, "Content-Type: application/connect+json");
	for (int i = 0; i < 3; i++)
		if (c->headers[i][0])
			hdr = curl_slist_append(hdr, c->headers[i]);
	curl_easy_setopt(h, CURLOPT_URL, c->url);
	curl_easy_setopt(h, CURLOPT_POST, 1L);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.data);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)body.len);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 120L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, command_collect);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
	c->started_ms = sk_monotonic_ms();
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &c->status);
	c->ended_ms = sk_monotonic_ms();
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	sk_buf_dispose(&body);
	free(text);
	json_decref(msg);
	return NULL;
}

static void
command_start(command *c)
{
	ck_assert_int_eq(pthread_create(&c->thread, NULL, command_main, c), 0);
	for (int i = 0; i < 100 && !c->got_start; i++)
		usleep(50 * 1000);
	ck_assert_msg(c->got_start, "the command did not start (%s)", c->url);
}

static void
command_join(command *c)
{
	pthread_join(c->thread, NULL);
	sk_buf_dispose(&c->answer);
}

/* ---- the answer and the token ---- */

/* Creates a secure sandbox at the simulator for user (tagged as ours, so
 * the controller adopts it); *token gets its envd access token. */
static char *
sim_secure_sandbox(const char *user, int timeout_s, char **token)
{
	char url[300], body[512];
	json_t *v;
	char *id;
	long st;

	snprintf(url, sizeof(url), "%s/sandboxes", w.sim_url);
	snprintf(body, sizeof(body),
	        "{\"templateID\":\"base\",\"timeout\":%d,\"secure\":true,\"autoPause\":true,"
	        "\"metadata\":{\"user_id\":\"%s\",\"userspace\":\"%s\",\"managed_by\":"
	        "\"spacekeeper\"}}",
	        timeout_s, user, user);
	v = sk_test_http_json("POST", url, body, &st);
	ck_assert_msg(st == 201 || st == 200, "sim create: %ld", st);
	id = sk_strdup(jstr(v, "sandboxID"));
	*token = sk_strdup(jstr(v, "envdAccessToken"));
	ck_assert_ptr_nonnull(*token);
	ck_assert_int_ge(strlen(*token), 16);
	json_decref(v);
	return id;
}

static bool
answer_has_token(void *arg)
{
	json_t *v = connect_ok("sec");
	bool ok = jstr(v, "envdAccessToken") && strcmp(jstr(v, "envdAccessToken"), arg) == 0;

	json_decref(v);
	return ok;
}

/* Everything but a connect answer that could show the token. */
static void
assert_token_nowhere(const char *token)
{
	const char *get[] = { "get", "userspaces", "-o", "yaml", NULL };
	const char *describe[] = { "describe", "userspace", "sec", NULL };
	const char *events[] = { "events", "-o", "json", NULL };
	const char *const *cmds[] = { get, describe, events };
	const char *pages[] = { "/metrics", "/", "/spaces/sec", "/healthz", "/readyz" };
	char url[200], *out = NULL;

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		ck_assert_int_eq(spacectl(cmds[i], &out), 0);
		ck_assert_msg(strlen(out) > 0, "spacectl %s printed nothing", cmds[i][0]);
		ck_assert_msg(strstr(out, token) == NULL, "token in spacectl %s", cmds[i][0]);
		free(out);
	}
	for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
		snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", w.main_port, pages[i]);
		ck_assert_int_eq(sk_test_http("GET", url, NULL, &out), 200);
		ck_assert_msg(strstr(out, token) == NULL, "token on %s", pages[i]);
		free(out);
	}
	out = sk_test_slurp(w.log);
	ck_assert_msg(strlen(out) > 1000, "the debug log is nearly empty");
	ck_assert_msg(strstr(out, token) == NULL, "token in the controller's log");
	free(out);
}

START_TEST(test_answer_fields_and_token)
{
	char *token, *id;
	json_t *v, *sb;
	command c;

	id = sim_secure_sandbox("sec", 600, &token);
	apply_yaml("apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	           "metadata:\n  name: sec\nspec:\n  userID: sec\n"
	           "  lifecycle:\n    idleTimeout: 10m\n"
	           "---\napiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	           "metadata:\n  name: always\nspec:\n  userID: always\n"
	           "  lifecycle:\n    idleTimeout: 0s\n");
	keeper_start();
	/* The adopted secure sandbox: its token (a list does not carry it) is
	 * read once and handed over in the answer. */
	ck_assert_msg(eventually(answer_has_token, token, 30), "no token in the answer");
	v = connect_ok("sec");
	ck_assert_str_eq(jstr(v, "sandboxID"), id);
	ck_assert_str_eq(jstr(v, "provider"), "default");
	ck_assert_str_eq(jstr(v, "envdVersion"), "0.6.13");
	ck_assert_str_eq(jstr(v, "path"), "fast");
	ck_assert(json_is_true(json_object_get(v, "ready")));
	ck_assert_str_eq(jstr(json_object_get(v, "envdHeaders"), "E2b-Sandbox-Id"), id);
	/* deadline: the provider timeout spacekeeper set, RFC 3339 UTC, as
	 * the provider has it */
	ck_assert_ptr_nonnull(jstr(v, "deadline"));
	ck_assert_int_eq(jstr(v, "deadline")[strlen(jstr(v, "deadline")) - 1], 'Z');
	sb = sim_get(id);
	ck_assert_msg(strncmp(jstr(sb, "endAt"), jstr(v, "deadline"), 16) == 0,
	        "deadline %s, provider endAt %s", jstr(v, "deadline"), jstr(sb, "endAt"));
	json_decref(sb);
	/* the fast path: no control-plane call per attach, the token included */
	sim_post("/_sim/stats/reset", "{}");
	for (int i = 0; i < 20; i++) {
		json_t *f = connect_ok("sec");
		ck_assert_str_eq(jstr(f, "path"), "fast");
		ck_assert_str_eq(jstr(f, "envdAccessToken"), token);
		json_decref(f);
	}
	{
		char url[300];
		json_t *stats, *reqs;
		snprintf(url, sizeof(url), "%s/_sim/stats", w.sim_url);
		stats = sk_test_http_json("GET", url, NULL, NULL);
		reqs = json_object_get(stats, "requests");
		ck_assert_ptr_nonnull(stats);
		for (const char *const *ep = (const char *const[]){ "create", "get", "connect",
		             "resume", "timeout", "refreshes", NULL };
		        *ep; ep++)
			ck_assert_msg(json_object_get(reqs, *ep) == NULL,
			        "%s calls during 20 fast connects", *ep);
		json_decref(stats);
	}
	/* what the answer holds is enough to run a command (token included) */
	command_target(&c, v, "echo attached");
	command_start(&c);
	command_join(&c);
	ck_assert_int_eq(c.status, 200);
	ck_assert(c.got_end && c.exited && !c.stream_error);
	json_decref(v);
	/* always on: no deadline */
	v = connect_ok("always");
	ck_assert_ptr_null(json_object_get(v, "deadline"));
	ck_assert_ptr_nonnull(jstr(v, "envdVersion"));
	ck_assert_ptr_null(json_object_get(v, "envdAccessToken")); /* not a secure sandbox */
	json_decref(v);
	assert_token_nowhere(token);
	free(token);
	free(id);
}
END_TEST

/* ---- never sleep mid-command ---- */

START_TEST(test_busy_keeps_awake)
{
	command busy, ignored;
	json_t *a, *b, *sb;
	int64_t t0, ended, idle_at = 0;
	char *st, *token, *id;

	/* busy's keeper is a secure sandbox (adopted): envd's process list
	 * needs its token, which no provider list carries */
	id = sim_secure_sandbox("busy", 10, &token);
	apply_yaml("apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	           "metadata:\n  name: busy\nspec:\n  userID: busy\n"
	           "  lifecycle:\n    idleTimeout: 10s\n"
	           "---\napiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	           "metadata:\n  name: lazy\nspec:\n  userID: lazy\n"
	           "  lifecycle:\n    idleTimeout: 10s\n    busy: Ignore\n");
	keeper_start();
	a = connect_ok("busy");
	b = connect_ok("lazy");
	ck_assert_str_eq(jstr(a, "sandboxID"), id);
	ck_assert_str_eq(jstr(a, "envdAccessToken"), token);
	/* a 40 s command each, started through envd; no connect or heartbeat after */
	command_target(&busy, a, "sleep 40");
	command_target(&ignored, b, "sleep 40");
	command_start(&busy);
	command_start(&ignored);
	t0 = sk_monotonic_ms();
	/* busy: Ignore sleeps at its idle timeout, mid-command */
	while (!phase_is("lazy", "Idle")) {
		ck_assert_msg(
		        sk_monotonic_ms() - t0 < 25000, "lazy not Idle 25 s into its command");
		sk_sleep_ms(250);
	}
	ck_assert_msg(sk_monotonic_ms() - t0 < 25000, "lazy slept too late");
	/* busy: Processes is still running at 30 s, its command too */
	while (sk_monotonic_ms() - t0 < 30000) {
		ck_assert_msg(!busy.got_end, "the command ended early");
		sk_sleep_ms(500);
	}
	ck_assert_msg(phase_is("busy", "Running"), "busy is not Running at 30 s");
	sb = sim_get(jstr(a, "sandboxID"));
	ck_assert_str_eq(jstr(sb, "state"), "running");
	json_decref(sb);
	ck_assert(!busy.got_end);
	st = condition_of("busy", "Busy");
	ck_assert_msg(st && strcmp(st, "True") == 0, "Busy condition %s", st ? st : "none");
	free(st);
	ck_assert_int_eq(event_count("busy", "KeptAwake"), 1);
	ck_assert_int_eq(event_count("lazy", "KeptAwake"), 0);
	/* the paused sandbox ended the other command: it never completed */
	command_join(&ignored);
	ck_assert_msg(!ignored.exited, "the Ignore space's command completed");
	ck_assert_msg(ignored.ended_ms - ignored.started_ms < 30000, "it ran %lld ms",
	        (long long)(ignored.ended_ms - ignored.started_ms));
	/* the command completes; then the space sleeps within idleTimeout + one resync */
	command_join(&busy);
	ended = sk_monotonic_ms();
	ck_assert_int_eq(busy.status, 200);
	ck_assert_msg(busy.got_end && busy.exited && !busy.stream_error, "command failed");
	ck_assert_int_ge(busy.ended_ms - busy.started_ms, 39000);
	while (idle_at == 0) {
		if (phase_is("busy", "Idle"))
			idle_at = sk_monotonic_ms();
		else
			ck_assert_msg(sk_monotonic_ms() - ended < 30000, "busy never slept");
		sk_sleep_ms(250);
	}
	fprintf(stderr, "platform: Idle %lld ms after the command ended (idleTimeout 10 s)\n",
	        (long long)(idle_at - ended));
	ck_assert_msg(idle_at - ended <= (10 + RESYNC_S + 3) * 1000, "Idle %lld ms after the end",
	        (long long)(idle_at - ended));
	json_decref(a);
	json_decref(b);
	free(token);
	free(id);
}
END_TEST

/* ---- unhealthy / fresh ---- */

START_TEST(test_unhealthy)
{
	json_t *a, *b, *v, *again;
	char *rpl_id, *rep_id, body[256];
	int64_t t0;
	long st;

	apply_yaml("apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	           "metadata:\n  name: rpl\nspec:\n  userID: rpl\n"
	           "  health:\n    unhealthyAfter: 10m\n    remediation: Replace\n"
	           "---\napiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	           "metadata:\n  name: rep\nspec:\n  userID: rep\n"
	           "  health:\n    unhealthyAfter: 10m\n    remediation: Report\n");
	keeper_start();
	a = connect_ok("rpl");
	b = connect_ok("rep");
	rpl_id = sk_strdup(jstr(a, "sandboxID"));
	rep_id = sk_strdup(jstr(b, "sandboxID"));
	json_decref(a);
	json_decref(b);
	/* a fresh connect of a healthy space: the same sandbox, probed now */
	v = connect_call("GET", "/v1/users/rep/sandbox?fresh=1&timeout=30s", &st);
	ck_assert_int_eq(st, 200);
	ck_assert_str_eq(jstr(v, "sandboxID"), rep_id);
	ck_assert_str_eq(jstr(v, "path"), "reconcile");
	json_decref(v);
	v = connect_call("GET", "/v1/users/rep/sandbox?fresh=maybe", &st);
	ck_assert_int_eq(st, 400);
	json_decref(v);
	/* both data planes answer 504 from now on */
	snprintf(body, sizeof(body), "{\"unreachable\": [\"%s\", \"%s\"]}", rpl_id, rep_id);
	sim_post("/_sim/faults", body);
	/* the controller still trusts its last look: the fast path hands out the dead one */
	v = connect_ok("rpl");
	ck_assert_str_eq(jstr(v, "sandboxID"), rpl_id);
	ck_assert_str_eq(jstr(v, "path"), "fast");
	json_decref(v);
	/* Replace: the report gets the replacement */
	t0 = sk_monotonic_ms();
	v = connect_call("POST", "/v1/users/rpl/unhealthy?timeout=60s", &st);
	ck_assert_msg(st == 200, "unhealthy rpl: %ld", st);
	ck_assert_str_ne(jstr(v, "sandboxID"), rpl_id);
	ck_assert_str_eq(jstr(v, "path"), "replace");
	ck_assert_str_eq(jstr(v, "previousSandboxID"), rpl_id);
	fprintf(stderr, "platform: unhealthy -> replacement in %lld ms\n",
	        (long long)(sk_monotonic_ms() - t0));
	/* a plain connect after the change answers from memory again, never the
	 * dead sandbox it handed out before (the fast path's answer is not stale) */
	again = connect_ok("rpl");
	ck_assert_str_eq(jstr(again, "sandboxID"), jstr(v, "sandboxID"));
	ck_assert_str_eq(jstr(again, "previousSandboxID"), rpl_id);
	ck_assert_str_eq(jstr(again, "path"), "fast");
	json_decref(again);
	json_decref(v);
	/* Report: 503 DataPlaneUnreachable at once, by the report and by ?fresh=1 */
	t0 = sk_monotonic_ms();
	v = connect_call("POST", "/v1/users/rep/unhealthy?timeout=60s", &st);
	ck_assert_int_eq(st, 503);
	ck_assert_str_eq(jstr(v, "reason"), "DataPlaneUnreachable");
	ck_assert_msg(sk_monotonic_ms() - t0 < 15000, "503 after %lld ms",
	        (long long)(sk_monotonic_ms() - t0));
	json_decref(v);
	v = connect_call("GET", "/v1/users/rep/sandbox?fresh=1&timeout=60s", &st);
	ck_assert_int_eq(st, 503);
	ck_assert_str_eq(jstr(v, "reason"), "DataPlaneUnreachable");
	json_decref(v);
	v = connect_call("POST", "/v1/userspaces/rep/connect?fresh=1&timeout=60s", &st);
	ck_assert_int_eq(st, 503);
	ck_assert_str_eq(jstr(v, "reason"), "DataPlaneUnreachable");
	json_decref(v);
	v = connect_call("GET", "/v1/users/nobody/unhealthy", &st);
	ck_assert_int_eq(st, 405);
	json_decref(v);
	v = connect_call("POST", "/v1/users/nobody/unhealthy", &st);
	ck_assert_int_eq(st, 404);
	json_decref(v);
	free(rpl_id);
	free(rep_id);
}
END_TEST

/* ---- answer first ---- */

/* The controller's cache (spacekeeper_userspaces, counted from it) holds
 * the one space as Idle: a connect now decides to wake it. */
static bool
cached_idle(void *arg)
{
	char url[200], *out = NULL;
	bool ok;

	(void)arg;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", w.main_port);
	ok = sk_test_http("GET", url, NULL, &out) == 200 &&
	        strstr(out, "spacekeeper_userspaces{phase=\"Idle\",ready=\"true\"} 1\n") != NULL;
	free(out);
	return ok;
}

/* A connect that wakes an Idle space is answered once the keeper is
 * resumed and probed, from what the reconcile saw, not after its status
 * write and Woken event: with the database stopped (SIGSTOP) right before
 * the connect, the answer still comes (within the connect's 8 s, which a
 * connect waiting for the write runs out of: 504), the same answer as
 * after the write, and so does the next connect (fast, from the object
 * about to be written); once the database answers again, the status and
 * the event are written as before. The shard's lease outlasts the stop
 * (leaseDuration 60s), so the run may act throughout. */
START_TEST(test_wake_answered_before_writes)
{
	const char *pause[] = { "patch", "us", "nap", "-p", "{\"spec\":{\"mode\":\"Paused\"}}",
		NULL };
	const char *run[] = { "patch", "us", "nap", "-p", "{\"spec\":{\"mode\":\"Running\"}}",
		NULL };
	json_t *v, *again;
	char *id, *log;
	int64_t t0, took;
	long st, st2 = 0;

	own_db = sk_test_ferretdb_start(w.mongo_uri, sizeof(w.mongo_uri));
	apply_yaml("apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	           "metadata:\n  name: nap\nspec:\n  userID: nap\n"
	           "  lifecycle:\n    idleTimeout: 10m\n");
	keeper_start_with("  leaseDuration: 60s\n  renewDeadline: 40s\n  retryPeriod: 2s\n");
	v = connect_ok("nap");
	id = sk_strdup(jstr(v, "sandboxID"));
	json_decref(v);
	/* asleep: paused, then Running again with nothing asking to wake it */
	ck_assert_int_eq(spacectl(pause, NULL), 0);
	ck_assert_msg(eventually_phase("nap", "Paused", 60), "not Paused");
	ck_assert_int_eq(spacectl(run, NULL), 0);
	ck_assert_msg(eventually(cached_idle, NULL, 60), "not Idle in the controller's cache");
	ck_assert_int_eq(kill(own_db, SIGSTOP), 0);
	t0 = sk_monotonic_ms();
	v = connect_call("GET", "/v1/users/nap/sandbox?timeout=8s", &st);
	took = sk_monotonic_ms() - t0;
	/* the next connect, the writes still pending: from that object too */
	again = st == 200 ? connect_call("GET", "/v1/users/nap/sandbox?timeout=8s", &st2) : NULL;
	ck_assert_int_eq(kill(own_db, SIGCONT), 0);
	ck_assert_msg(st == 200, "the wake with the database stopped: %ld after %lld ms", st,
	        (long long)took);
	ck_assert_msg(st2 == 200, "the connect after the wake, the database stopped: %ld", st2);
	ck_assert_str_eq(jstr(again, "path"), "fast");
	ck_assert_str_eq(jstr(again, "sandboxID"), id);
	json_decref(again);
	fprintf(stderr, "platform: wake answered in %lld ms with the database stopped\n",
	        (long long)took);
	ck_assert_str_eq(jstr(v, "path"), "wake");
	ck_assert_str_eq(jstr(v, "sandboxID"), id);
	ck_assert_str_eq(jstr(v, "state"), "Running");
	/* written after all, as before: Running, and one Woken event */
	ck_assert_msg(eventually_phase("nap", "Running", 60), "the status was not written");
	ck_assert_int_eq(event_count("nap", "Woken"), 1);
	log = sk_test_slurp(w.log);
	ASSERT_HAS(log, "msg=\"answered first\" userspace=nap path=wake");
	free(log);
	/* the answer after the write is the same one (the fast path now) */
	again = connect_ok("nap");
	ck_assert_str_eq(jstr(again, "path"), "fast");
	json_object_set_new(again, "path", json_string("wake"));
	ck_assert_msg(
	        json_equal(again, v), "the early answer differs from the one after the write");
	json_decref(again);
	json_decref(v);
	free(id);
}
END_TEST

/* ---- a deadline set by someone else ---- */

typedef struct deadline_check {
	const char *id;
	int64_t max_left_ms;
} deadline_check;

/* The provider's endAt of the sandbox is within max_left_ms from now. */
static bool
deadline_within(void *arg)
{
	deadline_check *d = arg;
	json_t *sb = sim_get(d->id);
	int64_t end = 0;
	bool ok;

	sk_time_parse(jstr(sb, "endAt") ? jstr(sb, "endAt") : "", &end);
	ok = end > 0 && end - sk_now_ms() <= d->max_left_ms;
	json_decref(sb);
	return ok;
}

START_TEST(test_deadline_overridden)
{
	json_t *v;
	char *id, path[300];
	deadline_check d;

	apply_yaml("apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	           "metadata:\n  name: ovr\nspec:\n  userID: ovr\n"
	           "  lifecycle:\n    idleTimeout: 2m\n");
	keeper_start();
	v = connect_ok("ovr");
	id = sk_strdup(jstr(v, "sandboxID"));
	json_decref(v);
	d = (deadline_check){ id, 2 * 60 * 1000 + 5000 };
	ck_assert(deadline_within(&d));
	/* an application still calling the SDK's set_timeout(300) at the provider */
	snprintf(path, sizeof(path), "/sandboxes/%s/timeout", id);
	sim_post(path, "{\"timeout\": 300}");
	ck_assert(!deadline_within(&d));
	/* put back (within 2 min, not 5) with one event */
	ck_assert_msg(eventually(deadline_within, &d, 30), "the deadline was not re-asserted");
	sk_sleep_ms(3 * RESYNC_S * 1000);
	ck_assert(deadline_within(&d));
	ck_assert_int_eq(event_count("ovr", "DeadlineOverridden"), 1);
	/* the SDK's connect does the same (5 min): noticed again, one more event */
	snprintf(path, sizeof(path), "/sandboxes/%s/connect", id);
	sim_post(path, "{\"timeout\": 300}");
	ck_assert(!deadline_within(&d));
	ck_assert_msg(eventually(deadline_within, &d, 30), "not re-asserted after a connect");
	sk_sleep_ms(3 * RESYNC_S * 1000);
	ck_assert_int_eq(event_count("ovr", "DeadlineOverridden"), 2);
	free(id);
}
END_TEST

Suite *
sk_suite_platform(void)
{
	Suite *s = suite_create("platform");
	TCase *tc = tcase_create("platform");

	tcase_set_timeout(tc, 240);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_answer_fields_and_token);
	tcase_add_test(tc, test_unhealthy);
	tcase_add_test(tc, test_deadline_overridden);
	tcase_add_test(tc, test_busy_keeps_awake);
	suite_add_tcase(s, tc);
	tc = tcase_create("answer_first"); /* a database of its own, stopped a while */
	tcase_set_timeout(tc, 240);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_wake_answered_before_writes);
	suite_add_tcase(s, tc);
	return s;
}
