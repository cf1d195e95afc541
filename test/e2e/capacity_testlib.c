/*
 * The world of the capacity and quota e2e suites (check_capacity.c,
 * check_quota.c): FerretDB's database, sandboxsim, spacekeeper with one
 * e2b provider whose capacity the test gives, N spaces u01..uNN labelled
 * team red (odd) or blue (even), a sampler of the simulator's running
 * count every 100 ms, and users that connect, write and read a file.
 */
#include <check.h>
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../testutil.h"
#include "capacity_testlib.h"
#include "util/util.h"

char capw_db[64];
char capw_mongo_uri[128];
char capw_sim_url[128];
char capw_keeper_log[700];
pid_t capw_sim_pid, capw_keeper_pid;
int capw_main_port, capw_connect_port;
const char *capw_provider_type = "e2b";
const char *capw_extra_config;

/* The status (0: no answer); *out (may be NULL) the body, caller frees.
 * hdrs: more headers after the simulator's key, NULL-terminated (may be NULL). */
long
capw_http(
        const char *method, const char *url, const char *body, const char *const *hdrs, char **out)
{
	const char *all[8] = { "X-API-Key: " API_KEY };
	sk_test_req r = { .method = method, .body = body, .extra = all };
	size_t n = 1;
	long st;

	for (size_t i = 0; hdrs && hdrs[i] && n + 1 < sizeof(all) / sizeof(all[0]); i++)
		all[n++] = hdrs[i];
	st = sk_test_http_do(url, &r);
	if (out)
		*out = r.out;
	else
		free(r.out);
	free(r.headers);
	return st;
}

json_t *
capw_http_json(const char *method, const char *url, long *status)
{
	return sk_test_http_json(method, url, NULL, status);
}

json_int_t
capw_sim_stat(const char *key)
{
	char url[200];
	json_t *v;
	json_int_t n;

	char outer[64] = "";
	const char *dot = strchr(key, '.');
	json_t *at;

	if (dot != NULL) {
		snprintf(outer, sizeof(outer), "%.*s", (int)(dot - key), key);
		key = dot + 1;
	}
	snprintf(url, sizeof(url), "%s/_sim/stats", capw_sim_url);
	v = capw_http_json("GET", url, NULL);
	at = outer[0] ? json_object_get(v, outer) : v;
	n = json_integer_value(json_object_get(at, key));
	json_decref(v);
	return n;
}

/* ---- the sampler: the simulator's running count every 100 ms ---- */

atomic_bool capw_sampling;
atomic_int capw_max_sampled;
pthread_t capw_sampler;

static void *
capw_sample(void *arg)
{
	while (atomic_load(&capw_sampling)) {
		int n = (int)capw_sim_stat("running");
		if (n > atomic_load(&capw_max_sampled))
			atomic_store(&capw_max_sampled, n);
		usleep(100000);
	}
	return NULL;
}

/* ---- spacectl ---- */

int
capw_spacectl(const char *const *args, char **out)
{
	return sk_test_spacectl(capw_mongo_uri, capw_db, args, out);
}

/* name -> phase of every space (spacectl get -o json). */
json_t *
capw_phases(void)
{
	const char *args[] = { "get", "userspaces", "-o", "json", NULL };
	json_t *v, *item, *out = json_object();
	char *text = NULL;
	size_t i;

	ck_assert_int_eq(capw_spacectl(args, &text), 0);
	v = json_loads(text ? text : "", 0, NULL);
	free(text);
	json_array_foreach(json_object_get(v, "items"), i, item)
	{
		json_t *st = json_object_get(item, "status");
		json_object_set(out,
		        json_string_value(
		                json_object_get(json_object_get(item, "metadata"), "name")),
		        json_object_get(st, "phase") ? json_object_get(st, "phase") : json_null());
	}
	json_decref(v);
	return out;
}

int
capw_count_phase(json_t *ph, const char *want)
{
	const char *k;
	json_t *v;
	int n = 0;

	json_object_foreach(ph, k, v) n +=
	        json_is_string(v) && strcmp(json_string_value(v), want) == 0;
	return n;
}

/* ---- the world ---- */

void
capw_keeper_start(const char *capacity)
{
	char provider[2048];
	sk_test_world w = { 0 };
	sk_test_keeper_opts o = { .provider_type = capw_provider_type,
		.provider = provider,
		.controller = "  workers: 4\n  resyncPeriod: 3s\n",
		.log_level = "debug" };

	snprintf(provider, sizeof(provider),
	        "    requestTimeout: 5s\n    capacity: {%s}\n"
	        "    price: {runningPerHour: 3600, pausedPerHour: 360}\n%s",
	        capacity, capw_extra_config ? capw_extra_config : "");
	snprintf(w.db, sizeof(w.db), "%s", capw_db);
	snprintf(w.mongo_uri, sizeof(w.mongo_uri), "%s", capw_mongo_uri);
	snprintf(w.sim_url, sizeof(w.sim_url), "%s", capw_sim_url);
	sk_test_keeper_start(&w, &o);
	capw_main_port = w.main_port;
	capw_connect_port = w.connect_port;
	capw_keeper_pid = w.keeper_pid;
	snprintf(capw_keeper_log, sizeof(capw_keeper_log), "%s", w.log);
}

void
capw_world_start_n(const char *const *sim_args, const char *capacity, int n)
{
	capw_world_start_with(sim_args, capacity, n, NULL);
}

void
capw_world_start_with(
        const char *const *sim_args, const char *capacity, int n, const char *pre_yaml)
{
	sk_buf y = SK_BUF_INIT(1 << 20);
	const char *args[] = { "apply", "-f", NULL, NULL };
	char path[600];

	curl_global_init(CURL_GLOBAL_DEFAULT);
	snprintf(capw_db, sizeof(capw_db), "%s", sk_test_unique_db());
	snprintf(capw_mongo_uri, sizeof(capw_mongo_uri), "%s", sk_test_mongodb_uri());
	capw_sim_pid = sk_test_sim_start(sim_args, capw_sim_url, sizeof(capw_sim_url));
	atomic_store(&capw_max_sampled, 0);
	atomic_store(&capw_sampling, true);
	ck_assert_int_eq(pthread_create(&capw_sampler, NULL, capw_sample, NULL), 0);
	if (pre_yaml != NULL)
		sk_buf_printf(&y, "%s", pre_yaml);
	for (int i = 1; i <= n; i++)
		sk_buf_printf(&y,
		        "---\napiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
		        "metadata: {name: u%02d, labels: {team: %s}}\nspec:\n  userID: u%02d\n"
		        "  template: base\n  mode: Running\n  lifecycle: {idleTimeout: 10m}\n",
		        i, i % 2 ? "red" : "blue", i);
	snprintf(path, sizeof(path), "%s", sk_test_write_file("spaces.yaml", y.data));
	sk_buf_dispose(&y);
	args[2] = path;
	ck_assert_int_eq(capw_spacectl(args, NULL), 0);
	capw_keeper_start(capacity);
}

void
capw_world_stop(void)
{
	atomic_store(&capw_sampling, false);
	pthread_join(capw_sampler, NULL);
	if (capw_keeper_pid > 0)
		ck_assert_int_eq(
		        sk_test_stop(capw_keeper_pid, false), 0); /* clean, no ASan report */
	capw_keeper_pid = 0;
	sk_test_stop(capw_sim_pid, true);
	curl_global_cleanup();
}

/* ---- a user ---- */

/* Connects user (200 expected) and fills a's envd target. */
void
capw_connect_user(const char *user, capw_attach *a)
{
	char url[300], *text = NULL;
	json_t *v, *h, *val;
	const char *k;
	long st;
	int n = 0;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/users/%s/sandbox?timeout=60s",
	        capw_connect_port, user);
	st = capw_http("GET", url, NULL, NULL, &text);
	ck_assert_msg(st == 200, "connect %s: %ld %s (%s)", user, st, text, capw_keeper_log);
	v = json_loads(text, 0, NULL);
	free(text);
	memset(a, 0, sizeof(*a));
	snprintf(a->url, sizeof(a->url), "%s", json_string_value(json_object_get(v, "envdURL")));
	h = json_object_get(v, "envdHeaders");
	json_object_foreach(h, k, val)
	{
		if (n < 2)
			snprintf(a->hdr[n++], sizeof(a->hdr[0]), "%s: %s", k,
			        json_string_value(val));
	}
	if (json_object_get(v, "envdAccessToken"))
		snprintf(a->hdr[n++], sizeof(a->hdr[0]), "X-Access-Token: %s",
		        json_string_value(json_object_get(v, "envdAccessToken")));
	for (int i = 0; i < n; i++)
		a->hdrs[i] = a->hdr[i];
	json_decref(v);
}

void
capw_write_file(const capw_attach *a, const char *user)
{
	const char *hdrs[5] = { a->hdrs[0], a->hdrs[1], a->hdrs[2], NULL, NULL };
	char url[400], body[64];
	long st;
	int n = 0;

	while (n < 3 && hdrs[n])
		n++;
	hdrs[n] = "Content-Type: application/octet-stream";
	snprintf(url, sizeof(url), "%s/files?path=/home/user/owner.txt", a->url);
	snprintf(body, sizeof(body), "files of %s", user);
	st = capw_http("POST", url, body, hdrs, NULL);
	ck_assert_msg(st == 200 || st == 204, "write %s: %ld", user, st);
}

void
capw_check_file(const capw_attach *a, const char *user)
{
	char url[400], want[64], *text = NULL;
	long st;

	snprintf(url, sizeof(url), "%s/files?path=/home/user/owner.txt", a->url);
	snprintf(want, sizeof(want), "files of %s", user);
	st = capw_http("GET", url, NULL, a->hdrs, &text);
	ck_assert_msg(st == 200 && strcmp(text, want) == 0, "read %s: %ld %s", user, st, text);
	free(text);
}
