/*
 * End-to-end tests of isolation between tenants (issue 25).
 * The status listener (no authentication: it serves the kubelet and
 * Prometheus) shows no secret on any page or answer: env values (names and
 * count only), envd access tokens, connect tokens, the provider key.
 * Real binaries: FerretDB, sandboxsim, spacekeeper, spacectl.
 */
#include <check.h>
#include <curl/curl.h>
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

static long
connect_get(int replica, const char *path, const char *token, char **out)
{
	char url[300];

	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", rl.reps[replica].connect_port, path);
	return rl_http_auth("GET", url, token, NULL, out);
}

static size_t
collect(char *p, size_t size, size_t n, void *arg)
{
	sk_buf_append(arg, p, size * n);
	return size * n;
}

/* A call to the simulator's API with a JSON body (may be NULL); its answer. */
static json_t *
sim_call(const char *method, const char *path, const char *body, long *status)
{
	CURL *h = curl_easy_init();
	struct curl_slist *hdr = NULL;
	sk_buf b = SK_BUF_INIT(16 << 20);
	char url[300];
	json_t *v;

	*status = 0;
	snprintf(url, sizeof(url), "%s%s", rl.sim_url, path);
	hdr = curl_slist_append(hdr, "X-API-Key: " RL_DUMMY_KEY);
	hdr = curl_slist_append(hdr, "Content-Type: application/json");
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	if (body)
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	sk_buf_append(&b, "", 0);
	v = json_loads(b.data ? b.data : "", 0, NULL);
	sk_buf_dispose(&b);
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
		ok = connect_get(0, path, token, &out) == 200 && strstr(out, envd_token) != NULL;
		free(out);
		if (!ok)
			usleep(500 * 1000);
	}
	return ok;
}

START_TEST(test_status_listener_secrets)
{
	const char *pages[] = { "/", "/metrics", "/healthz", "/readyz", "/spaces/sec",
		"/spaces/nobody", "/spaces/", "/v1/users/sec/sandbox",
		"/v1/userspaces/sec/connect", "/nothing", "/spaces/sec/x" };
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
		ck_assert_msg(rl_http("GET", url, &out) == want[i], "%s: not %ld", pages[i],
		        want[i]);
		for (size_t k = 0; k < sizeof(secrets) / sizeof(secrets[0]); k++)
			ck_assert_msg(strstr(out, secrets[k]) == NULL, "secret %zu on %s", k,
			        pages[i]);
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
	return s;
}
