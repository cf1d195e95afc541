/*
 * End-to-end tests of isolation between tenants.
 * The status listener (no authentication: it serves the kubelet and
 * Prometheus) shows no secret on any page or answer: env values (names and
 * count only), envd access tokens, connect tokens, the provider key.
 * Scoped connect tokens (controller.connectTokens): a tenant's token reaches
 * its spaces, and any other answers 404 as a missing space does (same body,
 * same time class); 401 without a token or with a wrong one; a rotated file
 * takes effect within seconds; through a forward between replicas (and on
 * a request that claims to be forwarded) the scope holds.
 * Real binaries: FerretDB, sandboxsim, spacekeeper, spacectl.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../testutil.h"
#include "replicas_testlib.h"
#include "util/util.h"

Suite *sk_suite_isolation(void);

#define SHARDS 4
#define TOKEN_ALL "all-spaces-token-7Hq2mV"
#define TOKEN_A "tenant-a-token-Jx81Qe"
#define TOKEN_A2 "tenant-a-rotated-Pq33Zt"
#define TOKEN_B "tenant-b-token-Lm52Rw"
#define FORWARDED_HEADER "X-Spacekeeper-Forwarded-By: replica-x"
#define ENV_PROXY "http://proxy-user:Pr0xyPassw0rd@10.9.8.7:3128"
#define ENV_SECRET "db-secret-value-5f3c9a"
#define ASSERT_HAS(hay, needle)                                                                    \
	ck_assert_msg(strstr((hay), (needle)) != NULL, "expected \"%s\" in:\n%s", (needle), (hay))

/* ---- helpers ---- */

static void
setup(void)
{
	rl_setup("isolation", SHARDS, NULL);
}

static void
apply_yaml(const char *yaml)
{
	char p[600], *out = NULL, *err = NULL;
	const char *argv[] = { "spacectl", "--mongodb-uri", rl.mongo_uri, "--database", rl.db,
		"apply", "-f", p, NULL };
	int rc;

	snprintf(p, sizeof(p), "%s", sk_test_write_file("isolation.yaml", yaml));
	rc = sk_test_run(argv, NULL, NULL, &out, &err, 120);
	ck_assert_msg(rc == 0, "apply: %d %s", rc, err);
	free(out);
	free(err);
}

/* A file in the temp dir holding one token line, mode 0600; its path. */
static const char *
token_file(const char *name, const char *token)
{
	static char path[8][600];
	static int next;
	char line[256];
	char *p = path[next++ % 8];

	snprintf(line, sizeof(line), "%s\n", token);
	snprintf(p, sizeof(path[0]), "%s", sk_test_write_file(name, line));
	chmod(p, 0600);
	return p;
}

/* A call to a replica's connect API (path with its query), with an
 * optional token and one more header; *out the body. */
static long
api(int replica, const char *method, const char *path, const char *token, const char *header,
        char **out)
{
	char url[300];

	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", rl.reps[replica].connect_port, path);
	return rl_http_send(method, url, token, header, NULL, out);
}

/* A call to the simulator's API with a JSON body; its answer. */
static json_t *
sim_call(const char *method, const char *path, const char *body, long *status)
{
	char url[300], *out = NULL;
	json_t *v;

	snprintf(url, sizeof(url), "%s%s", rl.sim_url, path);
	*status = rl_http_send(method, url, NULL, "Content-Type: application/json", body, &out);
	v = json_loads(out, 0, NULL);
	free(out);
	return v;
}

/* ---- the status listener shows no secret ---- */

/* A secure sandbox of user at the simulator, tagged as ours (the controller
 * adopts it); *token gets its envd access token. */
static char *
secure_sandbox(const char *user, char **token)
{
	char body[512];
	long st;
	json_t *v;
	char *id;

	snprintf(body, sizeof(body),
	        "{\"templateID\":\"base\",\"timeout\":600,\"secure\":true,\"autoPause\":true,"
	        "\"metadata\":{\"user_id\":\"%s\",\"userspace\":\"%s\",\"managed_by\":"
	        "\"spacekeeper\"}}",
	        user, user);
	v = sim_call("POST", "/sandboxes", body, &st);
	ck_assert_msg(st == 201 || st == 200, "sim create: %ld", st);
	id = sk_strdup(json_string_value(json_object_get(v, "sandboxID")));
	*token = sk_strdup(json_string_value(json_object_get(v, "envdAccessToken")));
	ck_assert_ptr_nonnull(*token);
	ck_assert_int_ge(strlen(*token), 16);
	json_decref(v);
	return id;
}

/* The connect answer carries the envd token: the controller knows it. */
static bool
answer_has(const char *user, const char *token, const char *envd_token)
{
	char path[200], *out = NULL;
	bool ok = false;

	snprintf(path, sizeof(path), "/v1/users/%s/sandbox?timeout=20s", user);
	for (int i = 0; i < 60 && !ok; i++) {
		ok = api(0, "GET", path, token, NULL, &out) == 200 &&
		        strstr(out, envd_token) != NULL;
		free(out);
		if (!ok)
			usleep(500 * 1000);
	}
	return ok;
}

START_TEST(test_status_listener_secrets)
{
	const char *pages[] = { "/", "/metrics", "/healthz", "/readyz", "/spaces/sec",
		"/spaces/nobody", "/spaces/", "/v1/users/sec/sandbox", "/v1/userspaces/sec/connect",
		"/nothing", "/spaces/sec/x" };
	const long want[] = { 200, 200, 200, 200, 200, 404, 404, 404, 404, 404, 404 };
	char extra[800], url[300], *envd_token = NULL, *id, *out = NULL;

	id = secure_sandbox("sec", &envd_token);
	apply_yaml("apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	           "metadata:\n  name: sec\nspec:\n  userID: sec\n"
	           "  lifecycle:\n    idleTimeout: 10m\n"
	           "  env:\n    HTTP_PROXY: \"" ENV_PROXY "\"\n    DB_PASSWORD: " ENV_SECRET "\n");
	snprintf(extra, sizeof(extra), "  connectTokenFile: %s\n",
	        token_file("token-all", TOKEN_ALL));
	rl_start(0, extra);
	ck_assert_msg(answer_has("sec", TOKEN_ALL, envd_token),
	        "the connect answer never carried the adopted sandbox's envd token");
	for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
		const char *secrets[] = { ENV_PROXY, "Pr0xyPassw0rd", ENV_SECRET, envd_token,
			TOKEN_ALL, RL_DUMMY_KEY };
		snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", rl.reps[0].port, pages[i]);
		ck_assert_msg(
		        rl_http("GET", url, &out) == want[i], "%s: not %ld", pages[i], want[i]);
		for (size_t k = 0; k < sizeof(secrets) / sizeof(secrets[0]); k++)
			ck_assert_msg(
			        strstr(out, secrets[k]) == NULL, "secret %zu on %s", k, pages[i]);
		if (strcmp(pages[i], "/spaces/sec") == 0) {
			/* the names stay, and the page is the space's */
			ASSERT_HAS(out, "HTTP_PROXY");
			ASSERT_HAS(out, "DB_PASSWORD");
			ASSERT_HAS(out, "(hidden)");
			ASSERT_HAS(out, id);
		}
		free(out);
	}
	out = NULL;
	{
		char *log = NULL;
		size_t len = 0;
		sk_error err = { 0 };
		ck_assert_int_eq(sk_file_read(rl.reps[0].log, 64 << 20, &log, &len, &err), 0);
		ck_assert_msg(strstr(log, ENV_SECRET) == NULL && strstr(log, TOKEN_ALL) == NULL &&
		                strstr(log, envd_token) == NULL &&
		                strstr(log, RL_DUMMY_KEY) == NULL,
		        "a secret in the controller's log");
		free(log);
	}
	ck_assert_int_eq(sk_test_stop(rl.reps[0].pid, false), 0);
	rl.reps[0].pid = 0;
	free(envd_token);
	free(id);
}
END_TEST

/* ---- scoped connect tokens ---- */

/* n UserSpaces PREFIX0.. labelled tenant: TENANT. */
static void
apply_tenant(const char *prefix, const char *tenant, int n)
{
	sk_buf b = SK_BUF_INIT(1 << 20);

	for (int i = 0; i < n; i++)
		sk_buf_printf(&b,
		        "---\napiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
		        "metadata:\n  name: %s%d\n  labels: {tenant: %s}\nspec:\n  userID: %s%d\n",
		        prefix, i, tenant, prefix, i);
	apply_yaml(b.data);
	sk_buf_dispose(&b);
}

/* The controller: lines of the tokens: all, tenant-a and tenant-b. */
static void
token_lines(char *buf, size_t len)
{
	snprintf(buf, len,
	        "  connectTokenFile: %s\n  connectTokens:\n"
	        "    - {name: tenant-a, file: %s, selector: tenant=a}\n"
	        "    - {name: tenant-b, file: %s, selector: tenant=b}\n",
	        token_file("token-all", TOKEN_ALL), token_file("token-a", TOKEN_A),
	        token_file("token-b", TOKEN_B));
}

static long
status_of(int replica, const char *method, const char *path, const char *token)
{
	char *out = NULL;
	long st = api(replica, method, path, token, NULL, &out);

	free(out);
	return st;
}

static bool
eventually_200(int replica, const char *path, const char *token, int timeout_s)
{
	for (int i = 0; i < timeout_s * 4; i++) {
		if (status_of(replica, "GET", path, token) == 200)
			return true;
		usleep(250 * 1000);
	}
	return false;
}

/* The answer to a space outside the token's scope is the answer to a
 * missing one, byte for byte, the name aside. */
static void
assert_as_missing(int replica, const char *method, const char *fmt, const char *outside,
        const char *token, const char *header)
{
	char path[300], *got = NULL, *missing = NULL;
	const char *at;
	sk_buf want = SK_BUF_INIT(1 << 20);

	snprintf(path, sizeof(path), fmt, outside);
	ck_assert_int_eq(api(replica, method, path, token, header, &got), 404);
	snprintf(path, sizeof(path), fmt, "nobody");
	ck_assert_int_eq(api(replica, method, path, token, header, &missing), 404);
	/* the missing answer with "nobody" written as the outside name */
	for (const char *p = missing; (at = strstr(p, "nobody")) || *p; p = at + 6) {
		if (at == NULL) {
			sk_buf_printf(&want, "%s", p);
			break;
		}
		sk_buf_append(&want, p, (size_t)(at - p));
		sk_buf_printf(&want, "%s", outside);
	}
	sk_buf_append(&want, "", 0);
	ck_assert_msg(strcmp(got, want.data) == 0, "%s %s: %s, a missing space: %s", method, fmt,
	        got, missing);
	free(got);
	free(missing);
	sk_buf_dispose(&want);
}

static int
cmp_ms(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median time of n calls of path (ms). */
static double
median_ms(int replica, const char *method, const char *path, const char *token)
{
	double t[21];

	for (size_t i = 0; i < 21; i++) {
		int64_t t0 = sk_monotonic_ms();
		ck_assert_int_eq(status_of(replica, method, path, token), 404);
		t[i] = (double)(sk_monotonic_ms() - t0);
	}
	qsort(t, 21, sizeof(t[0]), cmp_ms);
	return t[10];
}

static void
write_atomically(const char *path, const char *line)
{
	char tmp[1100];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.new", path);
	ck_assert_ptr_nonnull(f = fopen(tmp, "w"));
	fprintf(f, "%s\n", line);
	fclose(f);
	chmod(tmp, 0600);
	ck_assert_int_eq(rename(tmp, path), 0);
}

START_TEST(test_scoped_tokens)
{
	char extra[1500], *log = NULL, series[128], file_a[700];
	const char *bad[] = { NULL, "wrong-token", TOKEN_A "x", "tenant-a" };
	const char *path_a = "/v1/users/a0/sandbox?timeout=30s";
	double outside_ms, missing_ms;
	int64_t t0;
	size_t len = 0;
	sk_error err = { 0 };

	apply_tenant("a", "a", 2);
	apply_tenant("b", "b", 1);
	token_lines(extra, sizeof(extra));
	rl_start(0, extra);
	ck_assert_msg(eventually_200(0, path_a, TOKEN_A, 60), "tenant a's token: no a0");
	ck_assert_int_eq(status_of(0, "GET", "/v1/users/b0/sandbox?timeout=30s", TOKEN_B), 200);
	ck_assert_int_eq(status_of(0, "GET", "/v1/users/b0/sandbox?timeout=30s", TOKEN_ALL), 200);
	ck_assert_int_eq(status_of(0, "POST", "/v1/userspaces/a1/connect", TOKEN_A), 200);
	ck_assert_int_eq(status_of(0, "POST", "/v1/users/a0/activity", TOKEN_A), 204);
	/* tenant a's token and b's space: a missing space, on every route */
	assert_as_missing(0, "GET", "/v1/users/%s/sandbox?timeout=30s", "b0", TOKEN_A, NULL);
	assert_as_missing(0, "POST", "/v1/userspaces/%s/connect", "b0", TOKEN_A, NULL);
	assert_as_missing(0, "POST", "/v1/users/%s/unhealthy", "b0", TOKEN_A, NULL);
	assert_as_missing(0, "POST", "/v1/users/%s/activity", "b0", TOKEN_A, NULL);
	assert_as_missing(0, "GET", "/v1/users/%s/sandbox", "a0", TOKEN_B, NULL);
	/* and in the same time class: no wait, no probe (medians of 21) */
	outside_ms = median_ms(0, "POST", "/v1/userspaces/b0/connect", TOKEN_A);
	missing_ms = median_ms(0, "POST", "/v1/userspaces/nobody/connect", TOKEN_A);
	printf("isolation: 404 median %.0f ms outside the scope, %.0f ms missing\n", outside_ms,
	        missing_ms);
	ck_assert_msg(outside_ms < 3 * missing_ms + 50 && missing_ms < 3 * outside_ms + 50,
	        "outside %.0f ms, missing %.0f ms", outside_ms, missing_ms);
	/* no token, a wrong one, a prefix, the token's name: 401 */
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_int_eq(status_of(0, "GET", path_a, bad[i]), 401);
	/* counted per token name */
	snprintf(series, sizeof(series),
	        "spacekeeper_connect_token_requests_total{token=\"tenant-a\"}");
	ck_assert_double_ge(rl_metric(&rl.reps[0], series), 40);
	ck_assert_double_ge(rl_metric(&rl.reps[0],
	                            "spacekeeper_connect_out_of_scope_total{token=\"tenant-a\"}"),
	        25);
	ck_assert_double_eq(
	        rl_metric(&rl.reps[0], "spacekeeper_connect_out_of_scope_total{token=\"all\"}"), 0);
	/* rotation: the new token within seconds, the old one refused */
	t0 = sk_monotonic_ms();
	snprintf(file_a, sizeof(file_a), "%s/token-a", sk_test_tmpdir());
	write_atomically(file_a, TOKEN_A2);
	ck_assert_msg(eventually_200(0, path_a, TOKEN_A2, 10), "the rotated token never worked");
	printf("isolation: rotated token accepted after %lld ms\n",
	        (long long)(sk_monotonic_ms() - t0));
	ck_assert_int_eq(status_of(0, "GET", path_a, TOKEN_A), 401);
	ck_assert_int_eq(status_of(0, "GET", path_a, TOKEN_B), 404);
	ck_assert_int_eq(sk_test_stop(rl.reps[0].pid, false), 0);
	rl.reps[0].pid = 0;
	ck_assert_int_eq(sk_file_read(rl.reps[0].log, 64 << 20, &log, &len, &err), 0);
	ck_assert_msg(strstr(log, TOKEN_A) == NULL && strstr(log, TOKEN_A2) == NULL &&
	                strstr(log, TOKEN_B) == NULL && strstr(log, TOKEN_ALL) == NULL,
	        "a token in the log");
	ASSERT_HAS(log, "connect token reloaded");
	free(log);
}
END_TEST

/* A user of tenant (PREFIX0..PREFIX15) whose shard replica `holder` holds. */
static const char *
user_held_by(const char *prefix, int holder, char *buf, size_t len)
{
	for (int i = 0; i < 16; i++) {
		snprintf(buf, len, "%s%d", prefix, i);
		if (rl_holder_of(0x3, buf) == holder)
			return buf;
	}
	return NULL;
}

START_TEST(test_scoped_tokens_forwarded)
{
	char extra[1500], a[16], b[16], path[200], *out = NULL;
	const char *fwd = "spacekeeper_connect_total{path=\"forward\",code=\"200\"}";
	int64_t t0;

	apply_tenant("a", "a", 16);
	apply_tenant("b", "b", 16);
	token_lines(extra, sizeof(extra));
	t0 = sk_monotonic_ms();
	rl_start(0, extra);
	rl_start(1, extra);
	ck_assert(rl_split_settled(0x3, 1, t0, 60, "at start"));
	ck_assert_ptr_nonnull(user_held_by("a", 1, a, sizeof(a)));
	ck_assert_ptr_nonnull(user_held_by("b", 1, b, sizeof(b)));
	/* through replica 0, which forwards to the holder: the scope holds */
	snprintf(path, sizeof(path), "/v1/users/%s/sandbox?timeout=30s", a);
	ck_assert_msg(eventually_200(0, path, TOKEN_A, 60), "no %s through replica-0", a);
	ck_assert_double_ge(rl_metric(&rl.reps[0], fwd), 1);
	assert_as_missing(0, "GET", "/v1/users/%s/sandbox?timeout=30s", b, TOKEN_A, NULL);
	assert_as_missing(0, "POST", "/v1/userspaces/%s/connect", b, TOKEN_A, NULL);
	/* a request that says it was forwarded gets no wider scope at the holder */
	assert_as_missing(1, "POST", "/v1/userspaces/%s/connect", b, TOKEN_A, FORWARDED_HEADER);
	snprintf(path, sizeof(path), "/v1/userspaces/%s/connect", a);
	ck_assert_int_eq(api(1, "POST", path, TOKEN_A, FORWARDED_HEADER, &out), 200);
	free(out);
	ck_assert_int_eq(api(1, "POST", path, NULL, FORWARDED_HEADER, &out), 401);
	free(out);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(sk_test_stop(rl.reps[i].pid, false), 0);
		rl.reps[i].pid = 0;
	}
}
END_TEST

Suite *
sk_suite_isolation(void)
{
	Suite *s = suite_create("isolation");
	TCase *tc = tcase_create("status_page");

	tcase_set_timeout(tc, 180);
	tcase_add_unchecked_fixture(tc, NULL, rl_kill_leftovers);
	tcase_add_checked_fixture(tc, setup, rl_teardown);
	tcase_add_test(tc, test_status_listener_secrets);
	suite_add_tcase(s, tc);
	tc = tcase_create("tokens");
	tcase_set_timeout(tc, 240);
	tcase_add_unchecked_fixture(tc, NULL, rl_kill_leftovers);
	tcase_add_checked_fixture(tc, setup, rl_teardown);
	tcase_add_test(tc, test_scoped_tokens);
	tcase_add_test(tc, test_scoped_tokens_forwarded);
	suite_add_tcase(s, tc);
	return s;
}
