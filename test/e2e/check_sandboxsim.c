/*
 * End-to-end tests of sandboxsim over HTTP (libcurl): E2B shapes, status codes
 * and error bodies, pagination, metadata filters, the state machine and its
 * timeouts, the envd data plane, fault injection, stats, and the cube and
 * daytona flavours' distinguishing behaviour.
 */
#include <check.h>
#include <curl/curl.h>
#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../testutil.h"
#include "util/util.h"

Suite *sk_suite_sandboxsim(void);

#define KEY "X-API-Key: e2b_0000000000000000000000000000000000000000"

typedef struct resp {
	long status;
	char *body;
	json_t *json;
	char next_token[512];
	char retry_after[32];
	char total_running[32];
	double seconds;
} resp;

static pid_t sim_pid;
static char base[128];
static resp *arena[512];
static int narena;

static void
start_sim(const char *const *args)
{
	sim_pid = sk_test_sim_start(args, base, sizeof(base));
}

static void
setup(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void
teardown(void)
{
	if (sim_pid > 0)
		sk_test_stop(sim_pid, false);
	sim_pid = 0;
	for (int i = 0; i < narena; i++) {
		free(arena[i]->body);
		json_decref(arena[i]->json);
		free(arena[i]);
	}
	narena = 0;
	curl_global_cleanup();
}

static size_t
on_body(char *data, size_t size, size_t n, void *userp)
{
	sk_buf *b = userp;

	sk_buf_append(b, data, size * n);
	return size * n;
}

static size_t
discard(char *data, size_t size, size_t n, void *userp)
{
	return size * n;
}

static void
copy_header(const char *line, size_t len, const char *name, char *out, size_t outlen)
{
	size_t nl = strlen(name), v;

	if (len <= nl || strncasecmp(line, name, nl) != 0)
		return;
	for (v = nl; v < len && (line[v] == ' ' || line[v] == '\t'); v++)
		;
	snprintf(out, outlen, "%.*s", (int)(len - v), line + v);
	out[strcspn(out, "\r\n")] = '\0';
}

static size_t
on_header(char *data, size_t size, size_t n, void *userp)
{
	resp *r = userp;

	copy_header(data, size * n, "X-Next-Token:", r->next_token, sizeof(r->next_token));
	copy_header(data, size * n, "Retry-After:", r->retry_after, sizeof(r->retry_after));
	copy_header(data, size * n, "X-Total-Running:", r->total_running, sizeof(r->total_running));
	return size * n;
}

/* One request; headers NULL-terminated (NULL: the default API key). */
static resp *
req_h(const char *method, const char *path, const char *body, const char *const *hdrs)
{
	static const char *const def[] = { KEY, NULL };
	resp *r = sk_calloc(1, sizeof(*r));
	sk_buf b = SK_BUF_INIT(64 << 20);
	struct curl_slist *h = NULL;
	char url[2048];
	CURL *c = curl_easy_init();

	snprintf(url, sizeof(url), "%s%s", base, path);
	for (const char *const *p = hdrs ? hdrs : def; *p; p++)
		h = curl_slist_append(h, *p);
	h = curl_slist_append(h, "Content-Type: application/json");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	if (body)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
	ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	curl_easy_getinfo(c, CURLINFO_TOTAL_TIME, &r->seconds);
	curl_easy_cleanup(c);
	curl_slist_free_all(h);
	r->body = b.data ? sk_buf_detach(&b) : sk_strdup("");
	r->json = json_loads(r->body, JSON_DECODE_ANY, NULL);
	ck_assert_int_lt(narena, 512);
	arena[narena++] = r;
	return r;
}

static resp *
req(const char *method, const char *path, const char *body)
{
	return req_h(method, path, body, NULL);
}

static const char *
jstr(const resp *r, const char *key)
{
	const char *v = json_string_value(json_object_get(r->json, key));

	ck_assert_msg(v != NULL, "missing string %s in %s", key, r->body);
	return v;
}

static int64_t
jtime(json_t *obj, const char *key)
{
	int64_t ms = 0;

	ck_assert_int_eq(sk_time_parse(json_string_value(json_object_get(obj, key)), &ms), 0);
	return ms;
}

static void
assert_error(const resp *r, long status)
{
	ck_assert_int_eq(r->status, status);
	ck_assert_int_eq(json_integer_value(json_object_get(r->json, "code")), status);
	ck_assert(json_string_length(json_object_get(r->json, "message")) > 0);
}

/* Creates a sandbox and returns its id (static buffer per call slot). */
static const char *
create(const char *body)
{
	static char ids[32][64];
	static int slot;
	resp *r = req("POST", "/sandboxes", body);
	char *id = ids[slot++ % 32];

	ck_assert_msg(r->status == 201, "create: %ld %s", r->status, r->body);
	snprintf(id, 64, "%s", jstr(r, "sandboxID"));
	return id;
}

static resp *
reqf(const char *method, const char *body, const char *fmt, const char *id)
{
	char path[512];

	snprintf(path, sizeof(path), fmt, id);
	return req(method, path, body);
}

/* ---- E2B control plane ---- */

START_TEST(test_create_and_get_shapes)
{
	static const char *const keys[] = { "templateID", "sandboxID", "clientID", "startedAt",
		"endAt", "cpuCount", "memoryMB", "diskSizeMB", "state", "envdVersion", "metadata",
		"lifecycle", NULL };
	const char *id;
	resp *r;

	start_sim(NULL);
	r = req("POST", "/sandboxes",
	        "{\"templateID\":\"base\",\"timeout\":60,\"metadata\":{\"user_id\":\"alice\"},"
	        "\"envVars\":{\"A\":\"1\"},\"autoPause\":true,\"autoResume\":{\"enabled\":true}}");
	ck_assert_int_eq(r->status, 201);
	id = jstr(r, "sandboxID");
	ck_assert_int_eq(strlen(id), 21);
	ck_assert(id[0] == 'i' && strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789") == 21);
	ck_assert_str_eq(jstr(r, "clientID"), "6532622b");
	ck_assert_str_eq(jstr(r, "templateID"), "base");
	ck_assert_str_eq(jstr(r, "envdVersion"), "0.6.13");
	r = reqf("GET", NULL, "/sandboxes/%s", id);
	ck_assert_int_eq(r->status, 200);
	for (int i = 0; keys[i]; i++)
		ck_assert_msg(json_object_get(r->json, keys[i]), "detail lacks %s", keys[i]);
	ck_assert_str_eq(jstr(r, "state"), "running");
	ck_assert_int_eq(jtime(r->json, "endAt") - jtime(r->json, "startedAt"), 60000);
	ck_assert_str_eq(
	        json_string_value(json_object_get(json_object_get(r->json, "metadata"), "user_id")),
	        "alice");
	ck_assert_str_eq(json_string_value(json_object_get(
	                         json_object_get(r->json, "lifecycle"), "onTimeout")),
	        "pause");
	ck_assert(
	        json_is_true(json_object_get(json_object_get(r->json, "lifecycle"), "autoResume")));
	/* server default timeout: 15 s */
	r = reqf("GET", NULL, "/sandboxes/%s", create("{\"templateID\":\"base\"}"));
	ck_assert_int_eq(jtime(r->json, "endAt") - jtime(r->json, "startedAt"), 15000);
	/* the v2 create path of current SDKs */
	ck_assert_int_eq(req("POST", "/v2/sandboxes", "{\"templateID\":\"base\"}")->status, 201);
	assert_error(req("GET", "/sandboxes/inotthere000000000000", NULL), 404);
	ck_assert_ptr_nonnull(strstr(req("GET", "/sandboxes/inotthere000000000000", NULL)->body,
	        "doesn't exist or you don't have access to it"));
}
END_TEST

START_TEST(test_bad_requests)
{
	const char *id;
	resp *r;

	start_sim(NULL);
	r = req("POST", "/sandboxes", "{\"templateID\": ");
	assert_error(r, 400);
	assert_error(req("POST", "/sandboxes", "[1,2]"), 400);
	assert_error(req("POST", "/sandboxes", "{\"timeout\":30}"), 400);
	assert_error(
	        req("POST", "/sandboxes", "{\"templateID\":\"base\",\"timeout\":\"30\"}"), 400);
	r = req("POST", "/sandboxes", "{\"templateID\":\"base\",\"timeout\":0}");
	assert_error(r, 400);
	ck_assert_ptr_nonnull(strstr(jstr(r, "message"), "validation error"));
	assert_error(
	        req("POST", "/sandboxes", "{\"templateID\":\"base\",\"metadata\":{\"a\":1}}"), 400);
	assert_error(
	        req("POST", "/sandboxes", "{\"templateID\":\"base\",\"autoPause\":\"yes\"}"), 400);
	assert_error(
	        req("POST", "/sandboxes", "{\"templateID\":\"base\",\"autoPauseMemory\":false}"),
	        400);
	id = create("{\"templateID\":\"base\"}");
	assert_error(reqf("POST", "{}", "/sandboxes/%s/connect", id), 400);
	assert_error(reqf("POST", "{\"timeout\":-5}", "/sandboxes/%s/connect", id), 400);
	assert_error(reqf("POST", "{\"timeout\":\"x\"}", "/sandboxes/%s/timeout", id), 400);
	assert_error(req("GET", "/sandboxes/NOT_VALID!", NULL), 400);
	assert_error(req("GET", "/v2/sandboxes?limit=0", NULL), 400);
	assert_error(req("GET", "/v2/sandboxes?state=sleeping", NULL), 400);
	assert_error(req("GET", "/v2/sandboxes?nextToken=garbage", NULL), 400);
	assert_error(req("GET", "/v2/sandboxes?metadata=novalue", NULL), 400);
}
END_TEST

START_TEST(test_api_key)
{
	static const char *const nokey[] = { NULL };
	static const char *const badfmt[] = { "X-API-Key: sk_live_123", NULL };
	static const char *const wrong[] = { "X-API-Key: e2b_1234", NULL };
	static const char *const right[] = { "x-api-key: e2b_5ec2e7", NULL };
	static const char *const args[] = { "--api-key", "e2b_5ec2e7", NULL };

	start_sim(NULL);
	assert_error(req_h("POST", "/sandboxes", "{\"templateID\":\"base\"}", nokey), 401);
	assert_error(req_h("GET", "/v2/sandboxes", NULL, badfmt), 401);
	ck_assert_int_eq(req_h("GET", "/v2/sandboxes", NULL, wrong)->status, 200);
	ck_assert_int_eq(req_h("GET", "/_sim/stats", NULL, nokey)->status, 200);
	ck_assert_int_eq(req_h("GET", "/health", NULL, nokey)->status, 200);
	teardown();
	setup();
	start_sim(args);
	assert_error(req_h("GET", "/v2/sandboxes", NULL, wrong), 401);
	ck_assert_ptr_nonnull(
	        strstr(req_h("GET", "/v2/sandboxes", NULL, wrong)->body, "Invalid API key"));
	ck_assert_int_eq(req_h("GET", "/v2/sandboxes", NULL, right)->status, 200);
}
END_TEST

static int
collect_page(resp *r, char ids[][64], int n)
{
	size_t i;
	json_t *v;

	ck_assert_int_eq(r->status, 200);
	json_array_foreach(r->json, i, v)
	        snprintf(ids[n++], 64, "%s", json_string_value(json_object_get(v, "sandboxID")));
	return n;
}

START_TEST(test_pagination_and_metadata)
{
	char want[7][64], got[16][64], path[1024];
	int n = 0;
	resp *r;

	start_sim(NULL);
	create("{\"templateID\":\"base\",\"metadata\":{\"user_id\":\"other\"}}");
	for (int i = 0; i < 7; i++) {
		snprintf(want[i], 64, "%s",
		        create("{\"templateID\":\"base\",\"metadata\":{\"user_id\":\"pag\","
		               "\"odd\":\"x y\"}}"));
		usleep(2000);
	}
	r = req("GET", "/v2/sandboxes?metadata=user_id%3Dpag&limit=3", NULL);
	ck_assert_int_eq(json_array_size(r->json), 3);
	ck_assert(r->next_token[0] != '\0');
	ck_assert_str_eq(r->total_running, "7");
	n = collect_page(r, got, n);
	/* newest first */
	ck_assert_str_eq(got[0], want[6]);
	for (int page = 0; page < 2; page++) {
		snprintf(path, sizeof(path),
		        "/v2/sandboxes?metadata=user_id%%3Dpag&limit=3&nextToken=%s",
		        r->next_token);
		r = req("GET", path, NULL);
		n = collect_page(r, got, n);
	}
	ck_assert_int_eq(n, 7);
	ck_assert_str_eq(r->next_token, "");
	for (int i = 0; i < 7; i++) {
		int hits = 0;
		for (int j = 0; j < 7; j++)
			hits += strcmp(want[i], got[j]) == 0;
		ck_assert_int_eq(hits, 1);
	}
	/* The SDK's double encoding of "odd=x y" and AND of pairs. */
	r = req("GET", "/v2/sandboxes?metadata=odd%3Dx%252520y%26user_id%3Dpag", NULL);
	ck_assert_int_eq(json_array_size(r->json), 7);
	r = req("GET", "/v2/sandboxes?metadata=odd%3Dx%252520y%26user_id%3Dother", NULL);
	ck_assert_int_eq(json_array_size(r->json), 0);
	r = req("GET", "/v2/sandboxes", NULL);
	ck_assert_int_eq(json_array_size(r->json), 8);
	/* ascending order */
	r = req("GET", "/v2/sandboxes?metadata=user_id%3Dpag&order=asc&limit=1", NULL);
	ck_assert_str_eq(
	        json_string_value(json_object_get(json_array_get(r->json, 0), "sandboxID")),
	        want[0]);
}
END_TEST

START_TEST(test_pause_connect_resume)
{
	const char *id;
	resp *r;
	int64_t before;

	start_sim(NULL);
	id = create("{\"templateID\":\"base\",\"timeout\":60,\"metadata\":{\"user_id\":\"p\"}}");
	before = sk_now_ms();
	ck_assert_int_eq(reqf("POST", "{\"memory\":true}", "/sandboxes/%s/pause", id)->status, 204);
	assert_error(reqf("POST", NULL, "/sandboxes/%s/pause", id), 409);
	r = reqf("GET", NULL, "/sandboxes/%s", id);
	ck_assert_str_eq(jstr(r, "state"), "paused");
	ck_assert(llabs(jtime(r->json, "endAt") - before) < 2000);
	/* lists: v2 shows both states, v1 only running; state filters */
	ck_assert_int_eq(json_array_size(req("GET", "/sandboxes", NULL)->json), 0);
	ck_assert_int_eq(json_array_size(req("GET", "/v2/sandboxes?state=paused", NULL)->json), 1);
	ck_assert_int_eq(json_array_size(req("GET", "/v2/sandboxes?state=running", NULL)->json), 0);
	ck_assert_int_eq(
	        json_array_size(req("GET", "/v2/sandboxes?state=running&state=paused", NULL)->json),
	        1);
	/* timeout and refreshes on a paused sandbox: 404 */
	assert_error(reqf("POST", "{\"timeout\":30}", "/sandboxes/%s/timeout", id), 404);
	assert_error(reqf("POST", NULL, "/sandboxes/%s/refreshes", id), 404);
	r = reqf("POST", "{\"timeout\":30}", "/sandboxes/%s/connect", id);
	ck_assert_int_eq(r->status, 201);
	ck_assert_str_eq(jstr(r, "sandboxID"), id);
	r = reqf("GET", NULL, "/sandboxes/%s", id);
	ck_assert_str_eq(jstr(r, "state"), "running");
	ck_assert_int_eq(jtime(r->json, "endAt") - jtime(r->json, "startedAt"), 30000);
	/* connect on running: 200 and extend-only */
	ck_assert_int_eq(reqf("POST", "{\"timeout\":5}", "/sandboxes/%s/connect", id)->status, 200);
	r = reqf("GET", NULL, "/sandboxes/%s", id);
	ck_assert_int_eq(jtime(r->json, "endAt") - jtime(r->json, "startedAt"), 30000);
	ck_assert_int_eq(
	        reqf("POST", "{\"timeout\":5}", "/v2/sandboxes/%s/connect", id)->status, 200);
	/* deprecated resume: 409 while running, 201 from paused */
	assert_error(reqf("POST", "{}", "/sandboxes/%s/resume", id), 409);
	ck_assert_int_eq(reqf("POST", NULL, "/sandboxes/%s/pause", id)->status, 204);
	ck_assert_int_eq(reqf("POST", "{\"timeout\":20}", "/sandboxes/%s/resume", id)->status, 201);
	/* timeout overwrites (can shorten), refreshes extend */
	ck_assert_int_eq(reqf("POST", "{\"timeout\":3}", "/sandboxes/%s/timeout", id)->status, 204);
	r = reqf("GET", NULL, "/sandboxes/%s", id);
	ck_assert(jtime(r->json, "endAt") - sk_now_ms() <= 3000);
	ck_assert_int_eq(
	        reqf("POST", "{\"duration\":100}", "/sandboxes/%s/refreshes", id)->status, 204);
	r = reqf("GET", NULL, "/sandboxes/%s", id);
	ck_assert(jtime(r->json, "endAt") - sk_now_ms() > 90000);
	/* kill twice, kill of a paused one */
	ck_assert_int_eq(reqf("DELETE", NULL, "/sandboxes/%s", id)->status, 204);
	assert_error(reqf("DELETE", NULL, "/sandboxes/%s", id), 404);
	assert_error(reqf("POST", NULL, "/sandboxes/%s/pause", id), 404);
	id = create("{\"templateID\":\"base\"}");
	ck_assert_int_eq(reqf("POST", NULL, "/sandboxes/%s/pause", id)->status, 204);
	ck_assert_int_eq(reqf("DELETE", NULL, "/sandboxes/%s", id)->status, 204);
	assert_error(reqf("GET", NULL, "/sandboxes/%s", id), 404);
}
END_TEST

START_TEST(test_timeout_expiry)
{
	const char *killed, *paused;
	resp *r;

	start_sim(NULL);
	killed = create("{\"templateID\":\"base\",\"timeout\":1}");
	paused = create("{\"templateID\":\"base\",\"timeout\":1,\"autoPause\":true}");
	r = reqf("GET", NULL, "/sandboxes/%s", paused);
	ck_assert_str_eq(jstr(r, "state"), "running");
	usleep(1600 * 1000);
	assert_error(reqf("GET", NULL, "/sandboxes/%s", killed), 404);
	r = reqf("GET", NULL, "/sandboxes/%s", paused);
	ck_assert_str_eq(jstr(r, "state"), "paused");
	ck_assert_int_eq(jtime(r->json, "endAt") - jtime(r->json, "startedAt"), 1000);
	/* the sweeper also removed it from lists */
	ck_assert_int_eq(json_array_size(req("GET", "/v2/sandboxes", NULL)->json), 1);
	/* auto-pause persists across resume */
	ck_assert_int_eq(
	        reqf("POST", "{\"timeout\":1}", "/sandboxes/%s/connect", paused)->status, 201);
	usleep(1600 * 1000);
	ck_assert_str_eq(jstr(reqf("GET", NULL, "/sandboxes/%s", paused), "state"), "paused");
}
END_TEST

/* ---- data plane ---- */

static long
health(const char *id, const char *port)
{
	char h1[128], h2[64];
	const char *hdrs[] = { h1, h2, NULL };

	snprintf(h1, sizeof(h1), "E2b-Sandbox-Id: %s", id);
	snprintf(h2, sizeof(h2), "E2b-Sandbox-Port: %s", port);
	return req_h("GET", "/health", NULL, hdrs)->status;
}

static long
health_host(const char *id)
{
	char h[160];
	const char *hdrs[] = { h, NULL };

	snprintf(h, sizeof(h), "Host: 49983-%s.sim.local", id);
	return req_h("GET", "/health", NULL, hdrs)->status;
}

START_TEST(test_data_plane)
{
	const char *id;
	resp *r;
	char h[160];
	const char *hdrs[] = { h, NULL };

	start_sim(NULL);
	id = create("{\"templateID\":\"base\",\"envVars\":{\"FOO\":\"bar\"}}");
	ck_assert_int_eq(health(id, "49983"), 204);
	ck_assert_int_eq(health_host(id), 204);
	ck_assert_int_eq(health(id, "8080"), 502);
	snprintf(h, sizeof(h), "E2b-Sandbox-Id: %s", id);
	r = req_h("GET", "/envs", NULL, hdrs);
	ck_assert_str_eq(json_string_value(json_object_get(r->json, "FOO")), "bar");
	r = req_h(
	        "GET", "/health", NULL, (const char *const[]){ "E2b-Sandbox-Id: iunknown", NULL });
	ck_assert_int_eq(r->status, 502);
	ck_assert_int_eq(json_integer_value(json_object_get(r->json, "code")), 502);
	ck_assert_str_eq(jstr(r, "sandboxId"), "iunknown");
	ck_assert_int_eq(health_host("iunknown"), 502);
	ck_assert_int_eq(reqf("POST", NULL, "/sandboxes/%s/pause", id)->status, 204);
	ck_assert_int_eq(health(id, "49983"), 502);
	/* the API's own health check */
	r = req("GET", "/health", NULL);
	ck_assert_int_eq(r->status, 200);
	/* autoResume: traffic resumes a paused sandbox */
	id = create(
	        "{\"templateID\":\"base\",\"autoPause\":true,\"autoResume\":{\"enabled\":true}}");
	ck_assert_int_eq(reqf("POST", NULL, "/sandboxes/%s/pause", id)->status, 204);
	ck_assert_int_eq(health_host(id), 204);
	ck_assert_str_eq(jstr(reqf("GET", NULL, "/sandboxes/%s", id), "state"), "running");
}
END_TEST

/* ---- envd: /init, /envs and process.Process/Start ---- */

static resp *
envd(const char *method, const char *path, const char *body, const char *id, const char *token)
{
	char hid[128], htok[128];
	const char *hdrs[] = { hid, "E2b-Sandbox-Port: 49983", token ? htok : NULL, NULL };

	snprintf(hid, sizeof(hid), "E2b-Sandbox-Id: %s", id);
	snprintf(htok, sizeof(htok), "X-Access-Token: %s", token ? token : "");
	return req_h(method, path, body, hdrs);
}

static const char *
env_of(const char *id, const char *key)
{
	resp *r = envd("GET", "/envs", NULL, id, NULL);

	ck_assert_int_eq(r->status, 200);
	return json_string_value(json_object_get(r->json, key));
}

static int
b64val(char c)
{
	const char *tbl = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *p = c ? strchr(tbl, c) : NULL;

	return p ? (int)(p - tbl) : -1;
}

static void
b64decode(const char *in, sk_buf *out)
{
	uint32_t acc = 0;
	int bits = 0;

	for (; *in && *in != '='; in++) {
		ck_assert_int_ge(b64val(*in), 0);
		acc = acc << 6 | (uint32_t)b64val(*in);
		if ((bits += 6) >= 8) {
			char ch = (char)(acc >> (bits -= 8));
			sk_buf_append(out, &ch, 1);
		}
	}
}

typedef struct cmd_result {
	int exit_code;
	int nframes;
	char out[512], err[512];
	char stream_error[64]; /* code of an end-of-stream error */
} cmd_result;

/* Reads the Connect frames of a Start answer: start, data..., end, then end-of-stream. */
static void
parse_frames(const unsigned char *p, size_t len, cmd_result *res)
{
	sk_buf out = SK_BUF_INIT(0), err = SK_BUF_INIT(0);

	for (size_t i = 0; i + 5 <= len; res->nframes++) {
		size_t n = (size_t)p[i + 1] << 24 | (size_t)p[i + 2] << 16 | (size_t)p[i + 3] << 8 |
		        p[i + 4];
		json_t *m = json_loadb((const char *)p + i + 5, n, 0, NULL), *ev;
		ck_assert_msg(m != NULL && i + 5 + n <= len, "bad frame at %zu", i);
		ev = json_object_get(m, "event");
		if (p[i] == 0x02) {
			ck_assert_int_eq(i + 5 + n, len); /* the last frame */
			snprintf(res->stream_error, sizeof(res->stream_error), "%s",
			        json_string_value(
			                json_object_get(json_object_get(m, "error"), "code"))
			                ?: "");
		} else if (res->nframes == 0) {
			ck_assert_int_gt(json_integer_value(json_object_get(
			                         json_object_get(ev, "start"), "pid")),
			        0);
		} else if (json_object_get(ev, "data")) {
			json_t *d = json_object_get(ev, "data");
			if (json_object_get(d, "stdout"))
				b64decode(json_string_value(json_object_get(d, "stdout")), &out);
			if (json_object_get(d, "stderr"))
				b64decode(json_string_value(json_object_get(d, "stderr")), &err);
		} else {
			json_t *end = json_object_get(ev, "end");
			ck_assert(json_is_true(json_object_get(end, "exited")));
			res->exit_code = (int)json_integer_value(json_object_get(end, "exitCode"));
		}
		json_decref(m);
		i += 5 + n;
	}
	snprintf(res->out, sizeof(res->out), "%.*s", (int)out.len, out.data ? out.data : "");
	snprintf(res->err, sizeof(res->err), "%.*s", (int)err.len, err.data ? err.data : "");
	sk_buf_dispose(&out);
	sk_buf_dispose(&err);
}

/* POST /process.Process/Start as the SDK's commands.run(cmd, {envs}) sends it. */
static void
run_cmd(const char *id, const char *token, const char *cmd, const char *envs, cmd_result *res)
{
	char *msg = sk_asprintf("{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\",%s],"
	                        "\"envs\":%s,\"cwd\":\"/home/user\"},\"stdin\":false}",
	        cmd, envs ? envs : "{}");
	size_t n = strlen(msg);
	unsigned char *body = sk_malloc(n + 5);
	char url[256], hid[128], htok[128];
	struct curl_slist *h = NULL;
	sk_buf b = SK_BUF_INIT(1 << 20);
	CURL *c = curl_easy_init();
	long status = 0;

	body[0] = 0;
	body[1] = (unsigned char)(n >> 24), body[2] = (unsigned char)(n >> 16);
	body[3] = (unsigned char)(n >> 8), body[4] = (unsigned char)n;
	memcpy(body + 5, msg, n);
	snprintf(url, sizeof(url), "%s/process.Process/Start", base);
	snprintf(hid, sizeof(hid), "E2b-Sandbox-Id: %s", id);
	snprintf(htok, sizeof(htok), "X-Access-Token: %s", token ? token : "");
	h = curl_slist_append(h, hid);
	h = curl_slist_append(h, "E2b-Sandbox-Port: 49983");
	h = curl_slist_append(h, "Content-Type: application/connect+json");
	h = curl_slist_append(h, "Connect-Protocol-Version: 1");
	if (token)
		h = curl_slist_append(h, htok);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)(n + 5));
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	ck_assert_int_eq(status, 200);
	memset(res, 0, sizeof(*res));
	parse_frames((const unsigned char *)b.data, b.len, res);
	sk_buf_dispose(&b);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	free(body);
	free(msg);
}

START_TEST(test_envd_process)
{
	const char *id;
	cmd_result res;

	start_sim(NULL);
	id = create("{\"templateID\":\"base\",\"timeout\":60,\"envVars\":{\"FOO\":\"bar\","
	            "\"PATH\":\"/opt/bin\"}}");
	run_cmd(id, NULL, "\"echo $FOO\"", NULL, &res);
	ck_assert_int_eq(res.exit_code, 0);
	ck_assert_str_eq(res.out, "bar\n");
	ck_assert_str_eq(res.err, "");
	ck_assert_int_eq(res.nframes, 4); /* start, data, end, end-of-stream */
	ck_assert_str_eq(res.stream_error, "");
	/* quoting, ${VAR}, an unset variable; precedence: per-command > sandbox > defaults */
	run_cmd(id, NULL, "\"echo \\\"[${FOO}]\\\" '$FOO' $NOPE x\"", NULL, &res);
	ck_assert_str_eq(res.out, "[bar] $FOO x\n");
	run_cmd(id, NULL, "\"printenv FOO PATH HOME\"", "{\"FOO\":\"cmd\"}", &res);
	ck_assert_int_eq(res.exit_code, 0);
	ck_assert_str_eq(res.out, "cmd\n/opt/bin\n/home/user\n");
	run_cmd(id, NULL, "\"env\"", NULL, &res);
	ck_assert_ptr_nonnull(strstr(res.out, "USER=user\n"));
	ck_assert_ptr_nonnull(strstr(res.out, "FOO=bar\n"));
	run_cmd(id, NULL, "\"printenv NOPE\"", NULL, &res);
	ck_assert_int_eq(res.exit_code, 1);
	ck_assert_str_eq(res.out, "");
	run_cmd(id, NULL, "\"ls -la /\"", NULL, &res);
	ck_assert_int_eq(res.exit_code, 127);
	ck_assert_str_eq(res.err, "bash: line 1: ls: command not found\n");
	run_cmd(id, NULL, "\"echo a; echo b\"", NULL, &res);
	ck_assert_int_eq(res.exit_code, 127);
	ck_assert_str_eq(res.out, "");
	/* not a server-stream request */
	{
		char hid[128];
		const char *hdrs[] = { hid, KEY, NULL };
		snprintf(hid, sizeof(hid), "E2b-Sandbox-Id: %s", id);
		ck_assert_int_eq(req_h("POST", "/process.Process/Start", "{}", hdrs)->status, 415);
	}
	/* a paused sandbox: the proxy's 502 */
	ck_assert_int_eq(reqf("POST", NULL, "/sandboxes/%s/pause", id)->status, 204);
	ck_assert_int_eq(envd("GET", "/envs", NULL, id, NULL)->status, 502);
	{ /* the stats count Start calls by status */
		json_t *st = json_object_get(
		        json_object_get(req("GET", "/_sim/stats", NULL)->json, "requests"),
		        "process");
		ck_assert_int_eq(json_integer_value(json_object_get(st, "200")), 7);
		ck_assert_int_eq(json_integer_value(json_object_get(st, "415")), 1);
	}
}
END_TEST

START_TEST(test_envd_init_survives_resume)
{
	const char *id, *secure, *token;
	cmd_result res;
	resp *r;

	start_sim(NULL);
	id = create("{\"templateID\":\"base\",\"timeout\":60,\"envVars\":{\"FOO\":\"bar\","
	            "\"KEEP\":\"create\"}}");
	/* /init merges by key; values are strings */
	ck_assert_int_eq(
	        envd("POST", "/init", "{\"envVars\":{\"NEW\":\"1\"}}", id, NULL)->status, 204);
	ck_assert_str_eq(env_of(id, "FOO"), "bar");
	ck_assert_str_eq(env_of(id, "NEW"), "1");
	ck_assert_int_eq(envd("POST", "/init", "{\"envVars\":{\"N\":1}}", id, NULL)->status, 400);
	ck_assert_int_eq(envd("POST", "/init", "[1]", id, NULL)->status, 400);
	/* pause/resume: bash -l -c no longer sees the create-time env, /init's survives */
	ck_assert_int_eq(reqf("POST", NULL, "/sandboxes/%s/pause", id)->status, 204);
	ck_assert_int_eq(
	        reqf("POST", "{\"timeout\":60}", "/sandboxes/%s/connect", id)->status, 201);
	ck_assert_ptr_null(env_of(id, "FOO"));
	ck_assert_str_eq(env_of(id, "NEW"), "1");
	run_cmd(id, NULL, "\"echo $FOO\"", NULL, &res);
	ck_assert_str_eq(res.out, "\n");
	/* the controller's fix: re-assert spec.env */
	ck_assert_int_eq(
	        envd("POST", "/init", "{\"envVars\":{\"FOO\":\"bar\"}}", id, NULL)->status, 204);
	run_cmd(id, NULL, "\"echo $FOO $NEW $KEEP\"", NULL, &res);
	ck_assert_str_eq(res.out, "bar 1\n");
	/* the old resume route loses it too */
	ck_assert_int_eq(reqf("POST", NULL, "/sandboxes/%s/pause", id)->status, 204);
	ck_assert_int_eq(reqf("POST", "{\"timeout\":60}", "/sandboxes/%s/resume", id)->status, 201);
	ck_assert_str_eq(env_of(id, "FOO"), "bar");
	ck_assert_ptr_null(env_of(id, "KEEP"));
	r = req("GET", "/_sim/stats", NULL);
	ck_assert_int_eq(
	        json_integer_value(json_object_get(
	                json_object_get(json_object_get(r->json, "requests"), "init"), "204")),
	        2);
	{ /* the admin view: what /init set, and that the create env was lost */
		json_t *first = json_array_get(req("GET", "/_sim/sandboxes", NULL)->json, 0);
		ck_assert_str_eq(json_string_value(json_object_get(first, "sandboxID")), id);
		ck_assert(json_is_true(json_object_get(first, "createEnvLost")));
		ck_assert_int_eq(json_object_size(json_object_get(first, "initEnvVars")), 2);
	}
	/* a secure sandbox wants its envd access token (header, or /init's accessToken) */
	r = req("POST", "/sandboxes", "{\"templateID\":\"base\",\"secure\":true}");
	ck_assert_int_eq(r->status, 201);
	secure = jstr(r, "sandboxID");
	token = jstr(r, "envdAccessToken");
	ck_assert_int_eq(envd("POST", "/init", "{\"envVars\":{}}", secure, NULL)->status, 401);
	ck_assert_int_eq(envd("POST", "/init", "{\"envVars\":{}}", secure, "wrong")->status, 401);
	ck_assert_int_eq(envd("GET", "/envs", NULL, secure, NULL)->status, 401);
	ck_assert_int_eq(
	        envd("POST", "/init", "{\"envVars\":{\"A\":\"b\"}}", secure, token)->status, 204);
	ck_assert_int_eq(envd("GET", "/envs", NULL, secure, token)->status, 200);
	{
		char *body = sk_asprintf("{\"envVars\":{},\"accessToken\":\"%s\"}", token);
		ck_assert_int_eq(envd("POST", "/init", body, secure, NULL)->status, 204);
		free(body);
	}
	ck_assert_int_eq(envd("GET", "/health", NULL, secure, NULL)->status, 204);
	run_cmd(secure, NULL, "\"echo $A\"", NULL, &res);
	ck_assert_str_eq(res.stream_error, "unauthenticated");
	ck_assert_int_eq(res.nframes, 1);
	run_cmd(secure, token, "\"echo $A\"", NULL, &res);
	ck_assert_str_eq(res.out, "b\n");
}
END_TEST

/* ---- sleep on idle, per flavour ---- */

static const char *
state_of(const char *id)
{
	return jstr(reqf("GET", NULL, "/sandboxes/%s", id), "state");
}

/* E2B: an absolute deadline; envd traffic does not move it, connect extends it. */
START_TEST(test_sleep_e2b_absolute_deadline)
{
	const char *busy, *extended, *killed;

	start_sim(NULL);
	busy = create("{\"templateID\":\"base\",\"timeout\":2,\"autoPause\":true}");
	extended = create("{\"templateID\":\"base\",\"timeout\":2,\"autoPause\":true}");
	killed = create("{\"templateID\":\"base\",\"timeout\":2}");
	for (int i = 0; i < 3; i++) {
		usleep(500 * 1000);
		ck_assert_int_eq(health(busy, "49983"), 204);
		ck_assert_int_eq(envd("GET", "/envs", NULL, busy, NULL)->status, 200);
	}
	ck_assert_int_eq(
	        reqf("POST", "{\"timeout\":3}", "/sandboxes/%s/connect", extended)->status, 200);
	usleep(900 * 1000); /* 2.4 s after create */
	ck_assert_str_eq(state_of(busy), "paused");
	ck_assert_int_eq(health(busy, "49983"), 502);
	assert_error(reqf("GET", NULL, "/sandboxes/%s", killed), 404);
	ck_assert_str_eq(state_of(extended), "running");
	usleep(2200 * 1000);
	ck_assert_str_eq(state_of(extended), "paused");
}
END_TEST

/* Cube: a sliding idle window; data-plane traffic and connect slide it, reads do not. */
START_TEST(test_sleep_cube_sliding_window)
{
	static const char *const args[] = { "--flavor", "cube", NULL };
	const char *active, *watched;
	int64_t t0;

	start_sim(args);
	active = create("{\"templateID\":\"base\",\"timeout\":2,\"autoPause\":true}");
	watched = create("{\"templateID\":\"base\",\"timeout\":2,\"autoPause\":true}");
	t0 = sk_now_ms();
	for (int i = 0; i < 5; i++) { /* 3 s of activity outlive a 2 s window */
		usleep(600 * 1000);
		ck_assert_int_eq(health_host(active), 204);
		ck_assert_int_eq(reqf("GET", NULL, "/sandboxes/%s", watched)->status, 200);
	}
	ck_assert_int_ge(sk_now_ms() - t0, 3000);
	ck_assert_str_eq(state_of(active), "running");
	ck_assert_str_eq(state_of(watched), "paused"); /* observed every 0.6 s, still idle */
	ck_assert_int_eq(
	        reqf("POST", "{\"timeout\":2}", "/sandboxes/%s/connect", watched)->status, 200);
	usleep(1200 * 1000);
	ck_assert_int_eq(
	        reqf("POST", "{\"timeout\":2}", "/sandboxes/%s/connect", watched)->status, 200);
	usleep(1200 * 1000);
	ck_assert_str_eq(state_of(watched), "running"); /* connect slid it */
	ck_assert_str_eq(state_of(active), "paused"); /* 2.4 s without traffic */
}
END_TEST

/* Daytona: stopped after autoStopInterval minutes without activity (a minute is 1 s here). */
START_TEST(test_sleep_daytona_auto_stop)
{
	static const char *const args[] = { "--flavor", "daytona", "--daytona-minute", "1s", NULL };
	static const char *const bearer[] = { "Authorization: Bearer dtn_test", NULL };
	char stop2[64], never[64], path[128];
	resp *r;

	start_sim(args);
	r = req_h("POST", "/sandbox", "{\"autoStopInterval\":2}", bearer);
	ck_assert_int_eq(r->status, 200);
	snprintf(stop2, sizeof(stop2), "%s", jstr(r, "id"));
	r = req_h("POST", "/sandbox", "{\"autoStopInterval\":0}", bearer);
	snprintf(never, sizeof(never), "%s", jstr(r, "id"));
	usleep(1200 * 1000);
	snprintf(path, sizeof(path), "/sandbox/%s", stop2);
	ck_assert_str_eq(jstr(req_h("GET", path, NULL, bearer), "state"), "started");
	usleep(1200 * 1000);
	ck_assert_str_eq(jstr(req_h("GET", path, NULL, bearer), "state"), "stopped");
	snprintf(path, sizeof(path), "/sandbox/%s", never);
	ck_assert_str_eq(jstr(req_h("GET", path, NULL, bearer), "state"), "started");
	/* started again, it stops again after another idle interval */
	snprintf(path, sizeof(path), "/sandbox/%s/start", stop2);
	ck_assert_str_eq(jstr(req_h("POST", path, NULL, bearer), "state"), "started");
	usleep(2400 * 1000);
	snprintf(path, sizeof(path), "/sandbox/%s", stop2);
	ck_assert_str_eq(jstr(req_h("GET", path, NULL, bearer), "state"), "stopped");
}
END_TEST

/* ---- faults ---- */

/* A file made through the admin API; its size read back through envd. */
static void
fill(const char *id, const char *path, long bytes, int seed)
{
	char body[256], url[128];

	snprintf(body, sizeof(body), "{\"path\":\"%s\",\"bytes\":%ld,\"seed\":%d}", path, bytes,
	        seed);
	snprintf(url, sizeof(url), "/_sim/sandboxes/%s/files", id);
	ck_assert_int_eq(req("POST", url, body)->status, 204);
}

static long
file_size(const char *id, const char *path)
{
	char url[256];
	resp *r;

	snprintf(url, sizeof(url), "/files?path=%s", path);
	r = envd("GET", url, NULL, id, NULL);
	return r->status == 200 ? (long)strlen(r->body) : -r->status;
}

static void
pause_resume(const char *id)
{
	ck_assert_int_eq(reqf("POST", NULL, "/sandboxes/%s/pause", id)->status, 204);
	ck_assert_int_eq(
	        reqf("POST", "{\"timeout\":60}", "/sandboxes/%s/connect", id)->status, 201);
}

/* resume_lose_files: partial drops every other regular file, once (count 1);
 * empty drops the whole tree; neither touches a running sandbox's files. */
START_TEST(test_fault_resume_lose_files)
{
	const char *id;
	resp *r;

	start_sim(NULL);
	id = create("{\"templateID\":\"base\"}");
	fill(id, "d/a.txt", 0, 1); /* sorted: d/a.txt d/b.txt d/c.txt */
	fill(id, "d/b.txt", 0, 2);
	fill(id, "d/c.txt", 0, 3);
	fill(id, "big.bin", 3 << 20, 7);
	r = envd("GET", "/files?path=big.bin", NULL, id, NULL);
	ck_assert_int_eq(r->status, 200);
	ck_assert_int_eq(file_size(id, "d/a.txt"), 0);
	ck_assert_int_eq(
	        req("POST", "/_sim/faults", "{\"resume_lose_files\":{\"mode\":\"sometimes\"}}")
	                ->status,
	        400);
	ck_assert_int_eq(req("POST", "/_sim/faults",
	                         "{\"resume_lose_files\":{\"mode\":\"partial\",\"count\":1}}")
	                         ->status,
	        200);
	ck_assert_int_eq(reqf("POST", "{\"timeout\":60}", "/sandboxes/%s/connect", id)->status,
	        200); /* running: nothing lost */
	ck_assert_int_eq(file_size(id, "d/b.txt"), 0);
	pause_resume(id);
	/* big.bin d/a.txt d/b.txt d/c.txt: the second and fourth go */
	ck_assert_int_eq(envd("GET", "/files?path=big.bin", NULL, id, NULL)->status, 200);
	ck_assert_int_eq(file_size(id, "d/a.txt"), -404);
	ck_assert_int_eq(file_size(id, "d/b.txt"), 0);
	ck_assert_int_eq(file_size(id, "d/c.txt"), -404);
	ck_assert_ptr_null(json_object_get(
	        req("GET", "/_sim/faults", NULL)->json, "resume_lose_files")); /* used up */
	pause_resume(id);
	ck_assert_int_eq(file_size(id, "d/b.txt"), 0);
	ck_assert_int_eq(
	        req("POST", "/_sim/faults", "{\"resume_lose_files\":{\"mode\":\"empty\"}}")->status,
	        200);
	pause_resume(id);
	ck_assert_int_eq(file_size(id, "d/b.txt"), -404);
	ck_assert_int_eq(envd("GET", "/files?path=big.bin", NULL, id, NULL)->status, 404);
	/* the home directory itself stays: a new file can be written */
	fill(id, "again.txt", 0, 1);
	ck_assert_int_eq(file_size(id, "again.txt"), 0);
}
END_TEST

/* --paused-retention: a paused sandbox is deleted after it, a running one
 * never; a resume restarts the count. */
START_TEST(test_paused_retention)
{
	static const char *const args[] = { "--paused-retention", "3s", NULL };
	const char *paused, *resumed, *running;
	int64_t t0;

	start_sim(args);
	paused = create("{\"templateID\":\"base\",\"timeout\":60}");
	resumed = create("{\"templateID\":\"base\",\"timeout\":60}");
	running = create("{\"templateID\":\"base\",\"timeout\":60}");
	ck_assert_int_eq(reqf("POST", NULL, "/sandboxes/%s/pause", paused)->status, 204);
	ck_assert_int_eq(reqf("POST", NULL, "/sandboxes/%s/pause", resumed)->status, 204);
	t0 = sk_now_ms();
	usleep(1500 * 1000);
	ck_assert_str_eq(state_of(paused), "paused");
	ck_assert_int_eq(
	        reqf("POST", "{\"timeout\":60}", "/sandboxes/%s/connect", resumed)->status, 201);
	ck_assert_int_eq(reqf("POST", NULL, "/sandboxes/%s/pause", resumed)->status, 204);
	while (reqf("GET", NULL, "/sandboxes/%s", paused)->status == 200) {
		ck_assert_int_lt(sk_now_ms() - t0, 10000);
		usleep(100 * 1000); /* the responses are kept until teardown */
	}
	ck_assert_int_ge(sk_now_ms() - t0, 3000);
	/* the sweeper removed it from lists as well */
	ck_assert_int_eq(json_array_size(req("GET", "/v2/sandboxes?state=paused", NULL)->json), 1);
	ck_assert_str_eq(state_of(resumed), "paused"); /* paused 1.5 s later */
	ck_assert_str_eq(state_of(running), "running");
	assert_error(reqf("POST", "{\"timeout\":60}", "/sandboxes/%s/connect", paused), 404);
}
END_TEST

START_TEST(test_fault_504_after_resume)
{
	const char *id, *other;
	char body[200];

	start_sim(NULL);
	id = create("{\"templateID\":\"base\"}");
	other = create("{\"templateID\":\"base\"}");
	ck_assert_int_eq(req("POST", "/_sim/faults", "{\"resume_504_s\":2}")->status, 200);
	ck_assert_int_eq(health(id, "49983"), 204); /* never resumed */
	ck_assert_int_eq(reqf("POST", NULL, "/sandboxes/%s/pause", id)->status, 204);
	ck_assert_int_eq(
	        reqf("POST", "{\"timeout\":60}", "/sandboxes/%s/connect", id)->status, 201);
	ck_assert_int_eq(health(id, "49983"), 504);
	ck_assert_int_eq(health_host(id), 504);
	usleep(2300 * 1000);
	ck_assert_int_eq(health(id, "49983"), 204);
	/* chosen sandboxes indefinitely, until cleared */
	snprintf(body, sizeof(body), "{\"unreachable\":[\"%s\"]}", other);
	ck_assert_int_eq(req("POST", "/_sim/faults", body)->status, 200);
	ck_assert_int_eq(health(other, "49983"), 504);
	ck_assert_int_eq(health(id, "49983"), 204);
	ck_assert_int_eq(json_array_size(json_object_get(
	                         req("GET", "/_sim/faults", NULL)->json, "unreachable")),
	        1);
	ck_assert_int_eq(req("DELETE", "/_sim/faults", NULL)->status, 204);
	ck_assert_int_eq(health(other, "49983"), 204);
}
END_TEST

START_TEST(test_fault_list_empty_and_errors)
{
	const char *id;
	resp *r;

	start_sim(NULL);
	id = create("{\"templateID\":\"base\",\"metadata\":{\"user_id\":\"u\"}}");
	ck_assert_int_eq(req("POST", "/_sim/faults", "{\"list_empty_s\":-1}")->status, 200);
	ck_assert_int_eq(json_array_size(req("GET", "/v2/sandboxes", NULL)->json), 0);
	ck_assert_int_eq(json_array_size(req("GET", "/sandboxes", NULL)->json), 0);
	ck_assert_int_eq(reqf("GET", NULL, "/sandboxes/%s", id)->status, 200);
	ck_assert_int_eq(req("POST", "/_sim/faults", "{\"list_empty_s\":0}")->status, 200);
	ck_assert_int_eq(json_array_size(req("GET", "/v2/sandboxes", NULL)->json), 1);
	ck_assert_int_eq(req("POST", "/_sim/faults", "{\"list_empty_s\":1}")->status, 200);
	ck_assert_int_eq(json_array_size(req("GET", "/v2/sandboxes", NULL)->json), 0);
	usleep(1200 * 1000);
	ck_assert_int_eq(json_array_size(req("GET", "/v2/sandboxes", NULL)->json), 1);
	/* error rate with status, Retry-After and a count */
	ck_assert_int_eq(req("POST", "/_sim/faults",
	                         "{\"errors\":{\"create\":{\"status\":429,\"rate\":1,"
	                         "\"retry_after_s\":3,\"count\":2},\"*\":{\"status\":503}}}")
	                         ->status,
	        200);
	for (int i = 0; i < 2; i++) {
		r = req("POST", "/sandboxes", "{\"templateID\":\"base\"}");
		assert_error(r, 429);
		ck_assert_str_eq(r->retry_after, "3");
	}
	ck_assert_int_eq(req("POST", "/sandboxes", "{\"templateID\":\"base\"}")->status, 201);
	r = reqf("GET", NULL, "/sandboxes/%s", id);
	assert_error(r, 503);
	ck_assert_str_eq(r->retry_after, "");
	ck_assert_int_eq(health(id, "49983"), 204); /* "*" is the control plane only */
	ck_assert_int_eq(req("POST", "/_sim/faults", "{\"errors\":{\"*\":null}}")->status, 200);
	ck_assert_int_eq(reqf("GET", NULL, "/sandboxes/%s", id)->status, 200);
	/* bad fault documents */
	assert_error(req("POST", "/_sim/faults", "{\"errors\":{\"nope\":{\"status\":500}}}"), 400);
	assert_error(req("POST", "/_sim/faults", "{\"bogus\":1}"), 400);
	assert_error(req("POST", "/_sim/faults", "{\"errors\":{\"get\":{\"status\":200}}}"), 400);
}
END_TEST

START_TEST(test_fault_latency_and_file)
{
	const char *path = sk_test_write_file(
	        "faults.json", "{\"latency\":{\"get\":{\"fixed_ms\":300,\"jitter_ms\":0}}}");
	const char *args[] = { "--faults", path, "--latency", "300ms", "--seed", "3", NULL };
	const char *id;
	resp *r;

	start_sim(args);
	id = create("{\"templateID\":\"base\"}");
	r = reqf("GET", NULL, "/sandboxes/%s", id);
	ck_assert_int_eq(r->status, 200);
	ck_assert_msg(r->seconds >= 0.59, "get took %.3f s", r->seconds);
	r = req("GET", "/v2/sandboxes", NULL);
	ck_assert_msg(r->seconds >= 0.29 && r->seconds < 0.55, "list took %.3f s", r->seconds);
	r = req("GET", "/_sim/stats", NULL);
	ck_assert_msg(r->seconds < 0.25, "admin took %.3f s", r->seconds);
	r = req("GET", "/_sim/faults", NULL);
	ck_assert_int_eq(
	        json_integer_value(json_object_get(
	                json_object_get(json_object_get(r->json, "latency"), "get"), "fixed_ms")),
	        300);
}
END_TEST

START_TEST(test_fault_bodies)
{
	const char *id;
	resp *r;

	start_sim(NULL);
	id = create("{\"templateID\":\"base\"}");
	ck_assert_int_eq(req("POST", "/_sim/faults",
	                         "{\"bodies\":{\"get\":{\"mode\":\"truncate\",\"count\":1},"
	                         "\"list\":{\"mode\":\"garbage\"},\"create\":{\"mode\":"
	                         "\"oversize\",\"size_mb\":2,\"count\":1}}}")
	                         ->status,
	        200);
	r = reqf("GET", NULL, "/sandboxes/%s", id);
	ck_assert_int_eq(r->status, 200);
	ck_assert_ptr_null(r->json);
	ck_assert_int_gt(strlen(r->body), 20);
	ck_assert_ptr_nonnull(reqf("GET", NULL, "/sandboxes/%s", id)->json);
	r = req("GET", "/v2/sandboxes", NULL);
	ck_assert_int_eq(r->status, 200);
	ck_assert_ptr_null(r->json);
	ck_assert_int_eq(strncmp(r->body, "<html>", 6), 0);
	r = req("POST", "/sandboxes", "{\"templateID\":\"base\"}");
	ck_assert_int_eq(r->status, 201);
	ck_assert_uint_eq(strlen(r->body), 2u << 20);
	ck_assert_ptr_nonnull(r->json);
	ck_assert_int_eq(req("POST", "/sandboxes", "{\"templateID\":\"base\"}")->status, 201);
	assert_error(req("POST", "/_sim/faults", "{\"bodies\":{\"get\":{\"mode\":\"odd\"}}}"), 400);
}
END_TEST

START_TEST(test_stats_oob_reset)
{
	const char *a, *b;
	json_t *reqs;
	resp *r;

	start_sim(NULL);
	a = create("{\"templateID\":\"base\"}");
	b = create("{\"templateID\":\"base\"}");
	ck_assert_int_eq(req("POST", "/_sim/stats/reset", NULL)->status, 204);
	create("{\"templateID\":\"base\"}");
	create("{\"templateID\":\"base\"}");
	req("GET", "/sandboxes/inotthere", NULL);
	req("GET", "/v2/sandboxes", NULL);
	r = req("GET", "/_sim/stats", NULL);
	reqs = json_object_get(r->json, "requests");
	ck_assert_int_eq(
	        json_integer_value(json_object_get(json_object_get(reqs, "create"), "201")), 2);
	ck_assert_int_eq(
	        json_integer_value(json_object_get(json_object_get(reqs, "get"), "404")), 1);
	ck_assert_int_eq(
	        json_integer_value(json_object_get(json_object_get(reqs, "list"), "200")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(r->json, "total")), 4);
	/* out-of-band kill and pause */
	ck_assert_int_eq(reqf("POST", NULL, "/_sim/sandboxes/%s/kill", a)->status, 204);
	assert_error(reqf("GET", NULL, "/sandboxes/%s", a), 404);
	ck_assert_int_eq(reqf("POST", NULL, "/_sim/sandboxes/%s/pause", b)->status, 204);
	ck_assert_str_eq(jstr(reqf("GET", NULL, "/sandboxes/%s", b), "state"), "paused");
	r = req("GET", "/_sim/sandboxes", NULL);
	ck_assert_int_eq(json_array_size(r->json), 3);
	ck_assert_int_eq(req("POST", "/_sim/reset", NULL)->status, 204);
	ck_assert_int_eq(json_array_size(req("GET", "/_sim/sandboxes", NULL)->json), 0);
	ck_assert_int_eq(
	        json_integer_value(json_object_get(req("GET", "/_sim/stats", NULL)->json, "total")),
	        0);
}
END_TEST

/* ---- flavours ---- */

START_TEST(test_cube_flavor)
{
	static const char *const args[] = { "--flavor", "cube", NULL };
	static const char *const nokey[] = { NULL };
	const char *id, *never;
	resp *r;

	start_sim(args);
	r = req_h("POST", "/sandboxes", "{\"templateID\":\"base\",\"timeout\":60}", nokey);
	ck_assert_int_eq(r->status, 201); /* no auth by default */
	id = jstr(r, "sandboxID");
	ck_assert_int_eq(strlen(id), 32);
	ck_assert_ptr_null(json_object_get(r->json, "envdAccessToken"));
	ck_assert_str_eq(jstr(r, "domain"), "cube.app");
	ck_assert_int_eq(reqf("POST", NULL, "/sandboxes/%s/pause", id)->status, 204);
	assert_error(reqf("POST", NULL, "/sandboxes/%s/pause", id), 409);
	/* connect always 200, even when it resumed */
	ck_assert_int_eq(
	        reqf("POST", "{\"timeout\":60}", "/sandboxes/%s/connect", id)->status, 200);
	ck_assert_str_eq(jstr(reqf("GET", NULL, "/sandboxes/%s", id), "state"), "running");
	assert_error(reqf("POST", "{\"timeout\":0}", "/sandboxes/%s/connect", id), 400);
	/* -1 = never: no endAt */
	never = create("{\"templateID\":\"base\",\"timeout\":-1}");
	r = reqf("GET", NULL, "/sandboxes/%s", never);
	ck_assert_ptr_null(json_object_get(r->json, "endAt"));
	ck_assert_ptr_null(json_object_get(r->json, "lifecycle"));
	/* list: first page, then filter; one state value; no cursor */
	for (int i = 0; i < 3; i++)
		create("{\"templateID\":\"base\",\"timeout\":60}");
	create("{\"templateID\":\"base\",\"timeout\":60,\"metadata\":{\"user_id\":\"late\"}}");
	r = req("GET", "/v2/sandboxes?metadata=user_id%3Dlate&limit=3", NULL);
	ck_assert_int_eq(json_array_size(r->json), 0);
	ck_assert_str_eq(r->next_token, "");
	r = req("GET", "/v2/sandboxes?metadata=user_id%3Dlate", NULL);
	ck_assert_int_eq(json_array_size(r->json), 1);
	ck_assert_int_eq(reqf("POST", NULL, "/sandboxes/%s/pause", never)->status, 204);
	ck_assert_int_eq(json_array_size(req("GET", "/v2/sandboxes?state=paused", NULL)->json), 1);
	ck_assert_int_eq(
	        json_array_size(req("GET", "/v2/sandboxes?state=running,paused", NULL)->json), 6);
	/* data plane: unknown sandbox is a 500 from CubeProxy */
	ck_assert_int_eq(health_host("0123456789abcdef0123456789abcdef"), 500);
	ck_assert_int_eq(health_host(id), 204);
}
END_TEST

START_TEST(test_cube_idle_window_and_overload)
{
	static const char *const args[] = { "--flavor", "cube", "--latency", "300ms", NULL };
	const char *id;

	start_sim(args);
	id = create("{\"templateID\":\"base\",\"timeout\":2}");
	/* activity slides the window: 3 x 1 s of traffic outlives a 2 s window */
	for (int i = 0; i < 3; i++) {
		usleep(700 * 1000);
		ck_assert_int_eq(health_host(id), 204);
	}
	ck_assert_int_eq(reqf("GET", NULL, "/sandboxes/%s", id)->status, 200);
	ck_assert_int_eq(req("POST", "/_sim/faults",
	                         "{\"overload\":{\"max_inflight\":1,"
	                         "\"retry_after_s\":2}}")
	                         ->status,
	        200);
	/* two concurrent calls: one of them gets 503 + Retry-After */
	{
		CURLM *m = curl_multi_init();
		CURL *e[2];
		struct curl_slist *h = curl_slist_append(NULL, KEY);
		char url[256];
		int running = 1, got503 = 0;
		long st;
		snprintf(url, sizeof(url), "%s/v2/sandboxes", base);
		for (int i = 0; i < 2; i++) {
			e[i] = curl_easy_init();
			curl_easy_setopt(e[i], CURLOPT_URL, url);
			curl_easy_setopt(e[i], CURLOPT_HTTPHEADER, h);
			curl_easy_setopt(e[i], CURLOPT_WRITEFUNCTION, discard);
			curl_multi_add_handle(m, e[i]);
		}
		while (running) {
			curl_multi_perform(m, &running);
			curl_multi_poll(m, NULL, 0, 100, NULL);
		}
		for (int i = 0; i < 2; i++) {
			curl_easy_getinfo(e[i], CURLINFO_RESPONSE_CODE, &st);
			got503 += st == 503;
			curl_multi_remove_handle(m, e[i]);
			curl_easy_cleanup(e[i]);
		}
		curl_multi_cleanup(m);
		curl_slist_free_all(h);
		ck_assert_int_eq(got503, 1);
	}
}
END_TEST

static resp *
dreq(const char *method, const char *path, const char *body)
{
	static const char *const bearer[] = { "Authorization: Bearer dtn_test", NULL };

	return req_h(method, path, body, bearer);
}

START_TEST(test_daytona_flavor)
{
	static const char *const args[] = { "--flavor", "daytona", NULL };
	char path[256], id[64];
	resp *r;

	start_sim(args);
	r = req("GET", "/sandbox", NULL);
	ck_assert_int_eq(r->status, 401);
	ck_assert_int_eq(json_integer_value(json_object_get(r->json, "statusCode")), 401);
	r = dreq("POST", "/api/sandbox",
	        "{\"snapshot\":\"base\",\"labels\":{\"user_id\":\"alice\"},\"autoStopInterval\":"
	        "0}");
	ck_assert_int_eq(r->status, 200);
	snprintf(id, sizeof(id), "%s", jstr(r, "id"));
	ck_assert_int_eq(strlen(id), 36);
	ck_assert_str_eq(jstr(r, "state"), "started");
	dreq("POST", "/sandbox", "{\"labels\":{\"user_id\":\"bob\"}}");
	r = dreq("GET", "/sandbox?labels=%7B%22user_id%22%3A%22alice%22%7D", NULL);
	ck_assert_int_eq(json_array_size(json_object_get(r->json, "items")), 1);
	ck_assert_str_eq(json_string_value(json_object_get(
	                         json_array_get(json_object_get(r->json, "items"), 0), "id")),
	        id);
	ck_assert(json_is_null(json_object_get(r->json, "nextCursor")));
	ck_assert_int_eq(dreq("GET", "/sandbox?labels=user_id%3Dalice", NULL)->status, 400);
	snprintf(path, sizeof(path), "/sandbox/%s/stop", id);
	r = dreq("POST", path, NULL);
	ck_assert_int_eq(r->status, 200);
	ck_assert_str_eq(jstr(r, "state"), "stopped");
	ck_assert_int_eq(dreq("POST", path, NULL)->status, 400);
	r = dreq("GET", "/sandbox?states=stopped&limit=10", NULL);
	ck_assert_int_eq(json_array_size(json_object_get(r->json, "items")), 1);
	ck_assert_int_eq(dreq("GET", "/sandbox/paginated", NULL)->status, 404);
	snprintf(path, sizeof(path), "/sandbox/%s/start", id);
	ck_assert_str_eq(jstr(dreq("POST", path, NULL), "state"), "started");
	snprintf(path, sizeof(path), "/sandbox/%s", id);
	r = dreq("DELETE", path, NULL);
	ck_assert_int_eq(r->status, 200);
	ck_assert_str_eq(jstr(r, "state"), "destroyed");
	r = dreq("GET", path, NULL);
	ck_assert_int_eq(r->status, 404);
	ck_assert_str_eq(jstr(r, "error"), "Not Found");
}
END_TEST

/* A Daytona id from a create; the sandbox is labelled group=<group>. */
static const char *
dcreate(const char *group)
{
	static char ids[32][64];
	static int slot;
	char body[128];
	char *id = ids[slot++ % 32];
	resp *r;

	snprintf(body, sizeof(body), "{\"labels\":{\"group\":\"%s\"}}", group);
	r = dreq("POST", "/api/sandbox", body);
	ck_assert_msg(r->status == 200, "create: %ld %s", r->status, r->body);
	snprintf(id, 64, "%s", jstr(r, "id"));
	return id;
}

START_TEST(test_daytona_cursor_paging)
{
	static const char *const args[] = { "--flavor", "daytona", NULL };
	const char *want[5];
	char path[256];
	const char *cursor = NULL;
	int seen = 0, pages = 0;
	resp *r;

	start_sim(args);
	for (int i = 0; i < 5; i++)
		want[i] = dcreate("g1");
	dcreate("g2");
	/* newest first, 2 per page, cursor until null */
	do {
		json_t *items, *it;
		size_t i;
		snprintf(path, sizeof(path),
		        "/sandbox?limit=2&labels=%%7B%%22group%%22%%3A%%22g1%%22%%7D%s%s",
		        cursor ? "&cursor=" : "", cursor ? cursor : "");
		r = dreq("GET", path, NULL);
		ck_assert_int_eq(r->status, 200);
		items = json_object_get(r->json, "items");
		ck_assert_int_le(json_array_size(items), 2);
		json_array_foreach(items, i, it)
		{
			ck_assert_str_eq(
			        json_string_value(json_object_get(it, "id")), want[4 - seen]);
			ck_assert(json_is_string(json_object_get(it, "toolboxProxyUrl")));
			seen++;
		}
		cursor = json_string_value(json_object_get(r->json, "nextCursor"));
		pages++;
	} while (cursor && pages < 10);
	ck_assert_int_eq(seen, 5);
	ck_assert_int_eq(pages, 3);
	/* limit up to 200; states filter; bad values */
	r = dreq("GET", "/sandbox?limit=200", NULL);
	ck_assert_int_eq(r->status, 200);
	ck_assert_int_eq(json_array_size(json_object_get(r->json, "items")), 6);
	ck_assert_int_eq(dreq("GET", "/sandbox?limit=201", NULL)->status, 400);
	ck_assert_int_eq(dreq("GET", "/sandbox?limit=0", NULL)->status, 400);
	ck_assert_int_eq(dreq("GET", "/sandbox?cursor=nope", NULL)->status, 400);
	ck_assert_int_eq(dreq("GET", "/sandbox?states=running", NULL)->status, 400);
	snprintf(path, sizeof(path), "/sandbox/%s/stop", want[1]);
	ck_assert_int_eq(dreq("POST", path, NULL)->status, 200);
	r = dreq("GET", "/sandbox?states=stopped&states=archived", NULL);
	ck_assert_int_eq(json_array_size(json_object_get(r->json, "items")), 1);
	r = dreq("GET", "/sandbox?states=started", NULL);
	ck_assert_int_eq(json_array_size(json_object_get(r->json, "items")), 5);
	/* a list item leaves out env and kvm; a get has them */
	ck_assert_ptr_null(
	        json_object_get(json_array_get(json_object_get(r->json, "items"), 0), "env"));
	snprintf(path, sizeof(path), "/sandbox/%s", want[0]);
	r = dreq("GET", path, NULL);
	ck_assert(json_is_object(json_object_get(r->json, "env")));
	ck_assert(json_is_false(json_object_get(r->json, "kvm")));
}
END_TEST

START_TEST(test_daytona_lifecycle_answers)
{
	static const char *const args[] = { "--flavor", "daytona", NULL };
	char path[256], url[256];
	const char *id;
	resp *r;

	start_sim(args);
	id = dcreate("g");
	/* autostop, autoarchive, autodelete answer the sandbox */
	snprintf(path, sizeof(path), "/api/sandbox/%s/autostop/7", id);
	r = dreq("POST", path, NULL);
	ck_assert_int_eq(r->status, 200);
	ck_assert_int_eq(json_integer_value(json_object_get(r->json, "autoStopInterval")), 7);
	snprintf(path, sizeof(path), "/api/sandbox/%s/autoarchive/60", id);
	ck_assert_int_eq(json_integer_value(json_object_get(
	                         dreq("POST", path, NULL)->json, "autoArchiveInterval")),
	        60);
	snprintf(path, sizeof(path), "/api/sandbox/%s/autodelete/-1", id);
	ck_assert_int_eq(dreq("POST", path, NULL)->status, 200);
	snprintf(path, sizeof(path), "/api/sandbox/%s/autostop/-1", id);
	ck_assert_int_eq(dreq("POST", path, NULL)->status, 400);
	/* archive only from stopped; start from archived */
	snprintf(path, sizeof(path), "/api/sandbox/%s/archive", id);
	ck_assert_int_eq(dreq("POST", path, NULL)->status, 400);
	snprintf(path, sizeof(path), "/api/sandbox/%s/stop", id);
	ck_assert_str_eq(jstr(dreq("POST", path, NULL), "state"), "stopped");
	snprintf(path, sizeof(path), "/api/sandbox/%s/archive", id);
	r = dreq("POST", path, NULL);
	ck_assert_str_eq(jstr(r, "state"), "archived");
	ck_assert(json_is_string(json_object_get(r->json, "toolboxProxyUrl")));
	snprintf(path, sizeof(path), "/api/sandbox/%s/start", id);
	ck_assert_str_eq(jstr(dreq("POST", path, NULL), "state"), "started");
	/* preview URL and toolbox proxy URL */
	snprintf(path, sizeof(path), "/api/sandbox/%s/ports/3000/preview-url", id);
	r = dreq("GET", path, NULL);
	snprintf(url, sizeof(url), "http://3000-%s.sim.local", id);
	ck_assert_str_eq(jstr(r, "url"), url);
	ck_assert_str_eq(jstr(r, "sandboxId"), id);
	ck_assert_int_eq(strlen(jstr(r, "token")), 32);
	snprintf(path, sizeof(path), "/api/sandbox/%s/toolbox-proxy-url", id);
	snprintf(url, sizeof(url), "%s/toolbox", base);
	ck_assert_str_eq(jstr(dreq("GET", path, NULL), "url"), url);
	/* an ephemeral sandbox (autoDeleteInterval 0) is gone after stop */
	r = dreq("POST", "/sandbox", "{\"autoDeleteInterval\":0}");
	snprintf(path, sizeof(path), "/sandbox/%s/stop", jstr(r, "id"));
	ck_assert_str_eq(jstr(dreq("POST", path, NULL), "state"), "destroyed");
	path[strlen(path) - strlen("/stop")] = '\0';
	ck_assert_int_eq(dreq("GET", path, NULL)->status, 404);
}
END_TEST

/* POST a multipart upload of one file to the toolbox. */
static long
dupload(const char *id, const char *remote, const char *data)
{
	CURL *c = curl_easy_init();
	curl_mime *mime = curl_mime_init(c);
	curl_mimepart *part = curl_mime_addpart(mime);
	struct curl_slist *h = curl_slist_append(NULL, "Authorization: Bearer dtn_test");
	char url[512];
	long status = 0;

	snprintf(url, sizeof(url), "%s/toolbox/%s/files/bulk-upload", base, id);
	curl_mime_name(part, "files[0].path");
	curl_mime_data(part, remote, CURL_ZERO_TERMINATED);
	part = curl_mime_addpart(mime);
	curl_mime_name(part, "files[0].file");
	curl_mime_filename(part, remote);
	curl_mime_data(part, data, CURL_ZERO_TERMINATED);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_MIMEPOST, mime);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
	ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	curl_mime_free(mime);
	curl_slist_free_all(h);
	return status;
}

START_TEST(test_daytona_toolbox)
{
	static const char *const args[] = { "--flavor", "daytona", NULL };
	char path[256];
	const char *id;
	resp *r;

	start_sim(args);
	id = dcreate("g");
	snprintf(path, sizeof(path), "/toolbox/%s/process/execute", id);
	r = dreq("POST", path, "{\"command\":\"echo 'hello  world' again\"}");
	ck_assert_int_eq(r->status, 200);
	ck_assert_int_eq(json_integer_value(json_object_get(r->json, "exitCode")), 0);
	ck_assert_str_eq(jstr(r, "result"), "hello  world again\n");
	r = dreq("POST", path, "{\"command\":\"frobnicate\"}");
	ck_assert_int_eq(json_integer_value(json_object_get(r->json, "exitCode")), 127);
	ck_assert_int_eq(req("POST", path, "{\"command\":\"echo hi\"}")->status, 401);
	/* upload, list, download, bulk-download (multipart) */
	ck_assert_int_eq(dupload(id, "data/a.txt", "alpha\n"), 200);
	snprintf(path, sizeof(path), "/toolbox/%s/files/bulk-upload", id);
	ck_assert_int_eq(dreq("POST", path, "{}")->status, 400); /* not multipart */
	snprintf(path, sizeof(path), "/toolbox/%s/files?path=/home/daytona/data", id);
	r = dreq("GET", path, NULL);
	ck_assert_int_eq(json_array_size(r->json), 1);
	ck_assert_str_eq(
	        json_string_value(json_object_get(json_array_get(r->json, 0), "name")), "a.txt");
	ck_assert_int_eq(
	        json_integer_value(json_object_get(json_array_get(r->json, 0), "size")), 6);
	snprintf(path, sizeof(path), "/toolbox/%s/files?path=/home/daytona", id);
	r = dreq("GET", path, NULL);
	ck_assert(json_is_true(json_object_get(json_array_get(r->json, 0), "isDir")));
	snprintf(path, sizeof(path), "/toolbox/%s/files/download?path=data/a.txt", id);
	r = dreq("GET", path, NULL);
	ck_assert_int_eq(r->status, 200);
	ck_assert_str_eq(r->body, "alpha\n");
	snprintf(path, sizeof(path), "/toolbox/%s/files/download?path=data/none", id);
	r = dreq("GET", path, NULL);
	ck_assert_int_eq(r->status, 404);
	ck_assert_str_eq(jstr(r, "code"), "FILE_NOT_FOUND");
	snprintf(path, sizeof(path), "/toolbox/%s/files/bulk-download", id);
	r = dreq("POST", path, "{\"paths\":[\"/home/daytona/data/a.txt\",\"nope\"]}");
	ck_assert_int_eq(r->status, 200);
	ck_assert_ptr_nonnull(
	        strstr(r->body, "name=\"file\"; filename=\"/home/daytona/data/a.txt\""));
	ck_assert_ptr_nonnull(strstr(r->body, "\r\n\r\nalpha\n\r\n"));
	ck_assert_ptr_nonnull(strstr(r->body, "name=\"error\"; filename=\"nope\""));
	/* cat sees the upload; a stopped sandbox's toolbox answers 400 */
	snprintf(path, sizeof(path), "/toolbox/%s/process/execute", id);
	ck_assert_str_eq(
	        jstr(dreq("POST", path, "{\"command\":\"cat data/a.txt\"}"), "result"), "alpha\n");
	snprintf(path, sizeof(path), "/sandbox/%s/stop", id);
	dreq("POST", path, NULL);
	snprintf(path, sizeof(path), "/toolbox/%s/process/execute", id);
	ck_assert_int_eq(dreq("POST", path, "{\"command\":\"echo hi\"}")->status, 400);
	ck_assert_int_eq(
	        dreq("POST", "/toolbox/00000000-0000-4000-8000-000000000000/process/execute",
	                "{\"command\":\"echo hi\"}")
	                ->status,
	        404);
}
END_TEST

/* ---- caps: a plan's concurrency limit and start rate, refused as E2B does ---- */

static json_int_t
stat_int(const char *a, const char *b)
{
	json_t *o = req("GET", "/_sim/stats", NULL)->json;

	o = json_object_get(o, a);
	return json_integer_value(b ? json_object_get(o, b) : o);
}

START_TEST(test_caps_concurrency)
{
	static const char *const args[] = { "--max-running", "2", NULL };
	const char *a, *b;
	resp *r;

	start_sim(args);
	a = create("{\"templateID\":\"base\"}");
	b = create("{\"templateID\":\"base\"}");
	r = req("POST", "/sandboxes", "{\"templateID\":\"base\"}");
	assert_error(r, 429);
	ck_assert_msg(strstr(jstr(r, "message"),
	                      "you have reached the maximum number of concurrent E2B sandboxes "
	                      "(2)") != NULL,
	        "%s", r->body);
	/* a paused sandbox frees its slot; its resume needs one again */
	ck_assert_int_eq(reqf("POST", NULL, "/sandboxes/%s/pause", a)->status, 204);
	create("{\"templateID\":\"base\"}");
	assert_error(reqf("POST", "{\"timeout\":60}", "/sandboxes/%s/connect", a), 429);
	assert_error(reqf("POST", "{\"timeout\":60}", "/sandboxes/%s/resume", a), 429);
	/* a running one's connect only extends it: no slot needed */
	ck_assert_int_eq(reqf("POST", "{\"timeout\":60}", "/sandboxes/%s/connect", b)->status, 200);
	ck_assert_int_eq(stat_int("max_running", NULL), 2);
	ck_assert_int_eq(stat_int("refused", "concurrency"), 3);
	ck_assert_int_eq(reqf("DELETE", NULL, "/sandboxes/%s", b)->status, 204);
	ck_assert_int_eq(reqf("POST", "{\"timeout\":60}", "/sandboxes/%s/connect", a)->status, 201);
	/* the fault API lifts and sets it at run time */
	r = req("POST", "/_sim/faults", "{\"caps\":{\"max_running\":0}}");
	ck_assert_int_eq(json_integer_value(
	                         json_object_get(json_object_get(r->json, "caps"), "max_running")),
	        0);
	create("{\"templateID\":\"base\"}");
	ck_assert_int_eq(stat_int("running", NULL), 3);
	ck_assert_int_eq(stat_int("max_running", NULL), 3);
	req("POST", "/_sim/faults", "{\"caps\":{\"max_running\":3}}");
	assert_error(req("POST", "/sandboxes", "{\"templateID\":\"base\"}"), 429);
	assert_error(req("POST", "/_sim/faults", "{\"caps\":{\"max_running\":-1}}"), 400);
}
END_TEST

START_TEST(test_caps_create_rate)
{
	resp *r;

	start_sim(NULL);
	/* one start per 5 s, a burst of 1: the second create at once is refused */
	req("POST", "/_sim/faults", "{\"caps\":{\"creates_per_second\":0.2}}");
	create("{\"templateID\":\"base\"}");
	r = req("POST", "/sandboxes", "{\"templateID\":\"base\"}");
	assert_error(r, 429);
	ck_assert_str_eq(jstr(r, "message"), "Rate limit exceeded");
	ck_assert_msg(atoi(r->retry_after) >= 1 && atoi(r->retry_after) <= 5, "Retry-After %s",
	        r->retry_after);
	ck_assert_int_eq(stat_int("refused", "rate"), 1);
	ck_assert_int_eq(stat_int("running", NULL), 1);
	req("POST", "/_sim/faults", "{\"caps\":null}");
	create("{\"templateID\":\"base\"}");
}
END_TEST

/* ---- network policy ---- */

/* The exit code of a command in sandbox id (E2B and Cube: envd). */
static int
exit_of(const char *id, const char *cmd_json, cmd_result *res)
{
	run_cmd(id, NULL, cmd_json, NULL, res);
	return res->exit_code;
}

static const char *
item(const json_t *a, size_t i)
{
	return json_string_value(json_array_get(a, i));
}

START_TEST(test_network_e2b)
{
	const char *id, *open;
	cmd_result res;
	resp *r;
	json_t *net;

	start_sim(NULL);
	id = create("{\"templateID\":\"base\",\"allow_internet_access\":false,\"network\":{"
	            "\"allowOut\":[\"10.0.0.0/8\",\"*.pypi.org\"],\"denyOut\":[\"10.9.0.0/16\"]}}");
	r = reqf("GET", NULL, "/sandboxes/%s", id);
	ck_assert(json_is_false(json_object_get(r->json, "allowInternetAccess")));
	net = json_object_get(r->json, "network");
	ck_assert_int_eq(json_array_size(json_object_get(net, "allowOut")), 2);
	ck_assert_str_eq(item(json_object_get(net, "allowOut"), 0), "10.0.0.0/8");
	ck_assert_str_eq(item(json_object_get(net, "allowOut"), 1), "*.pypi.org");
	ck_assert_str_eq(item(json_object_get(net, "denyOut"), 0), "10.9.0.0/16");
	ck_assert(json_is_true(json_object_get(net, "allowPublicTraffic")));
	/* the emulated processes honour it: allowOut wins over denyOut */
	ck_assert_int_eq(exit_of(id, "\"curl -s http://10.1.2.3/\"", &res), 0);
	ck_assert_int_eq(exit_of(id, "\"curl -s http://10.9.1.1/\"", &res), 0);
	ck_assert_int_eq(exit_of(id, "\"curl -s https://93.184.216.34/\"", &res), 7);
	ck_assert_ptr_nonnull(strstr(res.err, "Failed to connect to 93.184.216.34 port 443"));
	ck_assert_int_eq(exit_of(id, "\"nc -z files.pypi.org 443\"", &res), 0);
	ck_assert_int_eq(exit_of(id, "\"nc -z pypi.org.evil.com 443\"", &res), 1);
	ck_assert_int_eq(exit_of(id, "\"wget -q http://example.com/\"", &res), 7);
	/* changed live: the same sandbox, the new policy */
	r = reqf("PUT", "{\"allowOut\":[\"192.168.0.0/16\"],\"denyOut\":[\"0.0.0.0/0\"]}",
	        "/sandboxes/%s/network", id);
	ck_assert_int_eq(r->status, 204);
	r = reqf("GET", NULL, "/sandboxes/%s", id);
	ck_assert(json_is_false(json_object_get(r->json, "allowInternetAccess")));
	net = json_object_get(r->json, "network");
	ck_assert_str_eq(item(json_object_get(net, "allowOut"), 0), "192.168.0.0/16");
	ck_assert_int_eq(json_array_size(json_object_get(net, "denyOut")), 0);
	ck_assert_int_eq(exit_of(id, "\"curl -s http://10.1.2.3/\"", &res), 7);
	ck_assert_int_eq(exit_of(id, "\"curl -s http://192.168.7.7/\"", &res), 0);
	/* a denyOut of everything but a CIDR; allowing everything again */
	ck_assert_int_eq(
	        reqf("PUT", "{\"denyOut\":[\"8.8.8.0/24\"]}", "/sandboxes/%s/network", id)->status,
	        204);
	ck_assert_int_eq(exit_of(id, "\"curl -s http://8.8.8.8/\"", &res), 7);
	ck_assert_int_eq(exit_of(id, "\"curl -s http://1.1.1.1/\"", &res), 0);
	/* as E2B validates: no host names in denyOut, private URLs need secure */
	ck_assert_int_eq(
	        reqf("PUT", "{\"denyOut\":[\"evil.com\"]}", "/sandboxes/%s/network", id)->status,
	        400);
	ck_assert_int_eq(
	        req("POST", "/sandboxes",
	                "{\"templateID\":\"base\",\"network\":{\"allowPublicTraffic\":false}}")
	                ->status,
	        400);
	id = create("{\"templateID\":\"base\",\"secure\":true,\"network\":{\"allowPublicTraffic\":"
	            "false}}");
	r = reqf("GET", NULL, "/sandboxes/%s", id);
	ck_assert(json_is_false(
	        json_object_get(json_object_get(r->json, "network"), "allowPublicTraffic")));
	/* no policy: open egress, reported as such */
	open = create("{\"templateID\":\"base\"}");
	r = reqf("GET", NULL, "/sandboxes/%s", open);
	ck_assert(json_is_true(json_object_get(r->json, "allowInternetAccess")));
	ck_assert_ptr_null(json_object_get(r->json, "network"));
	ck_assert_int_eq(exit_of(open, "\"curl -s http://93.184.216.34/\"", &res), 0);
}
END_TEST

START_TEST(test_network_cube)
{
	static const char *const args[] = { "--flavor", "cube", NULL };
	const char *id;
	cmd_result res;
	resp *r;

	start_sim(args);
	id = create("{\"templateID\":\"base\",\"allow_internet_access\":false,\"network\":{"
	            "\"allowOut\":[\"10.0.0.0/8\"]}}");
	r = reqf("GET", NULL, "/sandboxes/%s", id);
	/* Cube takes the policy and enforces it, and reports none of it */
	ck_assert_ptr_null(json_object_get(r->json, "network"));
	ck_assert_ptr_null(json_object_get(r->json, "allowInternetAccess"));
	ck_assert_int_eq(exit_of(id, "\"curl -s http://10.0.0.1/\"", &res), 0);
	ck_assert_int_eq(exit_of(id, "\"curl -s http://8.8.8.8/\"", &res), 7);
	ck_assert_int_eq(
	        reqf("PUT", "{\"allowOut\":[]}", "/sandboxes/%s/network", id)->status, 404);
}
END_TEST

START_TEST(test_network_daytona)
{
	static const char *const args[] = { "--flavor", "daytona", NULL };
	char path[256], id[64];
	resp *r;

	start_sim(args);
	r = dreq("POST", "/api/sandbox", "{\"networkAllowList\":\"10.0.0.0/8,192.168.1.0/24\"}");
	ck_assert_int_eq(r->status, 200);
	ck_assert(json_is_false(json_object_get(r->json, "networkBlockAll")));
	ck_assert_str_eq(jstr(r, "networkAllowList"), "10.0.0.0/8,192.168.1.0/24");
	snprintf(id, sizeof(id), "%s", jstr(r, "id"));
	snprintf(path, sizeof(path), "/toolbox/%s/process/execute", id);
	r = dreq("POST", path, "{\"command\":\"curl -s http://10.4.4.4/\"}");
	ck_assert_int_eq(json_integer_value(json_object_get(r->json, "exitCode")), 0);
	r = dreq("POST", path, "{\"command\":\"curl -s http://8.8.8.8/\"}");
	ck_assert_int_eq(json_integer_value(json_object_get(r->json, "exitCode")), 7);
	ck_assert_ptr_nonnull(strstr(jstr(r, "result"), "Failed to connect to 8.8.8.8"));
	r = dreq("POST", "/api/sandbox", "{\"networkBlockAll\":true}");
	ck_assert(json_is_true(json_object_get(r->json, "networkBlockAll")));
	snprintf(path, sizeof(path), "/toolbox/%s/process/execute", jstr(r, "id"));
	r = dreq("POST", path, "{\"command\":\"nc -z 10.0.0.1 22\"}");
	ck_assert_int_eq(json_integer_value(json_object_get(r->json, "exitCode")), 1);
	ck_assert_int_eq(
	        dreq("POST", "/api/sandbox", "{\"networkAllowList\":\"example.com\"}")->status,
	        400);
	r = dreq("POST", "/api/sandbox", "{}");
	ck_assert(json_is_false(json_object_get(r->json, "networkBlockAll")));
	ck_assert(json_is_null(json_object_get(r->json, "networkAllowList")));
}
END_TEST

Suite *
sk_suite_sandboxsim(void)
{
	Suite *s = suite_create("sandboxsim");
	TCase *e2b = tcase_create("e2b"), *faults = tcase_create("faults");
	TCase *flavors = tcase_create("flavors");

	tcase_add_checked_fixture(e2b, setup, teardown);
	tcase_add_checked_fixture(faults, setup, teardown);
	tcase_add_checked_fixture(flavors, setup, teardown);
	tcase_set_timeout(e2b, 60);
	tcase_set_timeout(faults, 60);
	tcase_set_timeout(flavors, 60);
	tcase_add_test(e2b, test_create_and_get_shapes);
	tcase_add_test(e2b, test_bad_requests);
	tcase_add_test(e2b, test_api_key);
	tcase_add_test(e2b, test_pagination_and_metadata);
	tcase_add_test(e2b, test_pause_connect_resume);
	tcase_add_test(e2b, test_timeout_expiry);
	tcase_add_test(e2b, test_data_plane);
	tcase_add_test(e2b, test_envd_process);
	tcase_add_test(e2b, test_envd_init_survives_resume);
	tcase_add_test(flavors, test_sleep_e2b_absolute_deadline);
	tcase_add_test(flavors, test_sleep_cube_sliding_window);
	tcase_add_test(flavors, test_sleep_daytona_auto_stop);
	tcase_add_test(faults, test_fault_504_after_resume);
	tcase_add_test(faults, test_fault_list_empty_and_errors);
	tcase_add_test(faults, test_fault_latency_and_file);
	tcase_add_test(faults, test_fault_bodies);
	tcase_add_test(faults, test_stats_oob_reset);
	tcase_add_test(faults, test_caps_concurrency);
	tcase_add_test(faults, test_caps_create_rate);
	tcase_add_test(faults, test_fault_resume_lose_files);
	tcase_add_test(flavors, test_paused_retention);
	tcase_add_test(flavors, test_cube_flavor);
	tcase_add_test(flavors, test_cube_idle_window_and_overload);
	tcase_add_test(flavors, test_daytona_flavor);
	tcase_add_test(flavors, test_daytona_cursor_paging);
	tcase_add_test(flavors, test_daytona_lifecycle_answers);
	tcase_add_test(flavors, test_daytona_toolbox);
	tcase_add_test(flavors, test_network_e2b);
	tcase_add_test(flavors, test_network_cube);
	tcase_add_test(flavors, test_network_daytona);
	suite_add_tcase(s, e2b);
	suite_add_tcase(s, faults);
	suite_add_tcase(s, flavors);
	return s;
}
