/*
 * sandbox/e2b: the E2B control-plane client (E2B's published API) and the
 * envd calls (§2): the health probe and POST /init. The cube backend reuses these functions through
 * sandbox_int.h and overrides what CubeSandbox does differently.
 */
#include <stdlib.h>
#include <string.h>

#include "../api/schema.h"
#include "sandbox_int.h"

long
sk_e2b_seconds(int64_t ms)
{
	int64_t s = (ms + 999) / 1000;

	if (s < 1)
		s = 1;
	if (s > 0x7fffffff)
		s = 0x7fffffff;
	return (long)s;
}

static const char *
jstr(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

static int64_t
jtime(const json_t *o, const char *key)
{
	const char *s = jstr(o, key);
	int64_t ms = 0;

	if (s == NULL || sk_time_parse(s, &ms) != SK_OK)
		return 0;
	return ms;
}

static void
decode_metadata(const json_t *obj, sk_kvlist *out)
{
	const char *k;
	json_t *v;

	if (!json_is_object(obj))
		return;
	json_object_foreach((json_t *)obj, k, v)
	{
		if (json_is_string(v))
			sk_kvlist_set(out, k, json_string_value(v));
	}
}

int
sk_e2b_decode(const json_t *j, sk_sandbox *out, sk_sandbox_state dflt, sk_error *err)
{
	const char *id = json_is_object(j) ? jstr(j, "sandboxID") : NULL;
	const char *state;

	memset(out, 0, sizeof(*out));
	if (id == NULL || id[0] == '\0')
		return sk_error_set(err, SK_EINVALID, "sandbox object without sandboxID");
	out->id = sk_strdup(id);
	out->template_id = sk_strdup(jstr(j, "templateID"));
	out->alias = sk_strdup(jstr(j, "alias"));
	state = jstr(j, "state");
	out->state = state ? sk_sandbox_state_parse(sk_e2b_states, state) : dflt;
	out->started_ms = jtime(j, "startedAt");
	out->end_ms = jtime(j, "endAt");
	out->cpu_count = (int)json_integer_value(json_object_get(j, "cpuCount"));
	out->memory_mb = (int)json_integer_value(json_object_get(j, "memoryMB"));
	decode_metadata(json_object_get(j, "metadata"), &out->metadata);
	out->domain = sk_strdup(jstr(j, "domain"));
	out->envd_access_token = sk_strdup(jstr(j, "envdAccessToken"));
	out->envd_version = sk_strdup(jstr(j, "envdVersion"));
	sk_e2b_network_decode(j, out);
	return SK_OK;
}

static int
check_id(const char *id, sk_error *err)
{
	if (!sk_sandbox_id_valid(id))
		return sk_error_set(err, SK_EINVALID, "invalid sandbox id");
	return SK_OK;
}

int
sk_e2b_create_seconds(sk_provider *p, const sk_create_request *req, long timeout_s, sk_sandbox *out,
        sk_error *err)
{
	json_t *body = json_object(), *resp = NULL;
	sk_http_request r = { .method = "POST", .path = "/sandboxes", .auth = true };
	char *text = NULL;
	int rc;

	json_object_set_new(body, "templateID", json_string(sk_spec_template(req->template_id)));
	json_object_set_new(body, "timeout", json_integer(timeout_s));
	json_object_set_new(body, "autoPause", json_boolean(req->auto_pause));
	json_object_set_new(body, "autoResume",
	        json_pack("{s:b}", "enabled", req->auto_resume && req->auto_pause));
	json_object_set_new(body, "metadata", sk_kvlist_to_json(req->metadata));
	json_object_set_new(body, "envVars", sk_kvlist_to_json(req->env));
	sk_e2b_network_create(body, req->network);
	if (req->volume_name != NULL && req->volume_mount != NULL)
		json_object_set_new(body, "volumeMounts",
		        json_pack("[{s:s,s:s}]", "name", req->volume_name, "path",
		                req->volume_mount));
	if (sk_json_dump_body(body, &text) != SK_OK)
		return sk_error_set(err, SK_ENOMEM, "encoding the create request");
	r.body = text;
	rc = sk_http_json(&p->http, &r, NULL, &resp, err);
	if (rc == SK_OK)
		rc = sk_e2b_decode(resp, out, SK_SANDBOX_RUNNING, err);
	if (rc == SK_OK) {
		int64_t now = sk_now_ms();
		if (out->metadata.len == 0 && req->metadata)
			for (size_t i = 0; i < req->metadata->len; i++)
				sk_kvlist_set(&out->metadata, req->metadata->items[i].key,
				        req->metadata->items[i].value);
		if (out->started_ms == 0)
			out->started_ms = now;
		if (out->end_ms == 0 && timeout_s > 0)
			out->end_ms = now + (int64_t)timeout_s * 1000;
		if (out->cpu_count == 0)
			out->cpu_count = req->cpu_count;
		if (out->memory_mb == 0)
			out->memory_mb = req->memory_mb;
	}
	json_decref(resp);
	free(text);
	return rc;
}

int
sk_e2b_create(sk_provider *p, const sk_create_request *req, sk_sandbox *out, sk_error *err)
{
	int64_t t = req->timeout_ms > 0 ? req->timeout_ms : p->cfg.sandbox_timeout_ms;

	return sk_e2b_create_seconds(
	        p, req, sk_e2b_seconds(t > 0 ? t : sk_default_sandbox_timeout_ms), out, err);
}

int
sk_e2b_get(sk_provider *p, const char *id, sk_sandbox *out, sk_error *err)
{
	sk_http_request r = { .method = "GET", .auth = true };
	json_t *resp = NULL;
	char *path;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = check_id(id, err)) != SK_OK)
		return rc;
	path = sk_asprintf("/sandboxes/%s", id);
	r.path = path;
	rc = sk_http_json(&p->http, &r, NULL, &resp, err);
	if (rc == SK_OK)
		rc = sk_e2b_decode(resp, out, SK_SANDBOX_UNKNOWN, err);
	json_decref(resp);
	free(path);
	return rc;
}

/* "k1=v1&k2=v2" with each part escaped, then the whole escaped again (§1.5). */
static char *
metadata_query(sk_http *h, const sk_kvlist *match)
{
	sk_buf b = SK_BUF_INIT(0);
	char *outer;

	for (size_t i = 0; match && i < match->len; i++) {
		char *k = sk_http_escape(h, match->items[i].key);
		char *v = sk_http_escape(h, match->items[i].value);
		sk_buf_printf(&b, "%s%s=%s", i ? "&" : "", k, v);
		free(k);
		free(v);
	}
	outer = sk_http_escape(h, b.data ? b.data : "");
	sk_buf_dispose(&b);
	return outer;
}

static bool
token_seen(char **seen, size_t n, const char *tok)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(seen[i], tok) == 0)
			return true;
	return false;
}

/* GET path, answered with a JSON array: *arr (the caller decrefs it) and
 * *next, the X-Next-Token (NULL on the last page; the caller frees it). */
int
sk_e2b_get_page(sk_provider *p, const char *path, json_t **arr, char **next, sk_error *err)
{
	sk_http_request r = { .method = "GET", .path = path, .auth = true };
	sk_http_response resp = { 0 };
	json_error_t jerr;
	int rc;

	*arr = NULL;
	*next = NULL;
	if ((rc = sk_http_do(&p->http, &r, &resp, err)) != SK_OK)
		return rc;
	if ((rc = sk_http_classify(&p->http, &r, &resp, err)) != SK_OK)
		goto done;
	*arr = json_loadb(resp.body.data ? resp.body.data : "", resp.body.len, 0, &jerr);
	if (!json_is_array(*arr)) {
		rc = sk_error_set(err, SK_EINVALID, "GET %s: HTTP %ld: expected a JSON array: %s",
		        path, resp.status, *arr ? "got another type" : jerr.text);
		json_decref(*arr);
		*arr = NULL;
		goto done;
	}
	*next = resp.next_token;
	resp.next_token = NULL;
done:
	sk_http_response_dispose(&resp);
	return rc;
}

/* One page: appends matching entries; *next gets the X-Next-Token (or NULL). */
static int
list_page(sk_provider *p, const char *path, const sk_kvlist *match, sk_sandbox_list *out,
        size_t *cap, char **next, sk_error *err)
{
	json_t *arr, *item;
	size_t i;
	int rc = sk_e2b_get_page(p, path, &arr, next, err);

	if (rc != SK_OK)
		return rc;
	json_array_foreach(arr, i, item)
	{
		sk_sandbox sb;
		if (sk_e2b_decode(item, &sb, SK_SANDBOX_UNKNOWN, NULL) != SK_OK)
			continue;
		if (sk_sandbox_metadata_matches(&sb.metadata, match))
			sk_sandbox_list_push(out, cap, &sb);
		else
			sk_sandbox_dispose(&sb);
	}
	json_decref(arr);
	return SK_OK;
}

int
sk_e2b_list_query(sk_provider *p, const char *query, const sk_kvlist *match, sk_sandbox_list *out,
        sk_error *err)
{
	char **seen = NULL;
	char *token = NULL;
	size_t nseen = 0, cap = out->len;
	int rc = SK_OK;

	for (int page = 0;; page++) {
		char *etok = token ? sk_http_escape(&p->http, token) : NULL;
		char *path = sk_asprintf("/v2/sandboxes?%s%slimit=100%s%s", query,
		        query[0] ? "&" : "", etok ? "&nextToken=" : "", etok ? etok : "");
		char *next = NULL;

		if (page >= SK_LIST_MAX_PAGES)
			rc = sk_error_set(err, SK_ETRANSIENT,
			        "GET /v2/sandboxes: more than %d pages", SK_LIST_MAX_PAGES);
		else
			rc = list_page(p, path, match, out, &cap, &next, err);
		free(etok);
		free(path);
		if (token) {
			seen = sk_realloc(seen, (nseen + 1) * sizeof(*seen));
			seen[nseen++] = token;
		}
		token = next;
		if (rc != SK_OK || token == NULL || token_seen(seen, nseen, token))
			break;
	}
	free(token);
	for (size_t i = 0; i < nseen; i++)
		free(seen[i]);
	free(seen);
	return rc;
}

int
sk_e2b_list(sk_provider *p, const sk_kvlist *match, sk_sandbox_list *out, sk_error *err)
{
	char *meta = match && match->len ? metadata_query(&p->http, match) : NULL;
	char *query = meta ? sk_asprintf("metadata=%s&state=running,paused", meta)
	                   : sk_strdup("state=running,paused");
	int rc;

	memset(out, 0, sizeof(*out));
	rc = sk_e2b_list_query(p, query, match, out, err);
	if (rc != SK_OK)
		sk_sandbox_list_dispose(out);
	else
		sk_sandbox_list_dedup(out);
	free(meta);
	free(query);
	return rc;
}

char *
sk_sandbox_envd_url(const sk_provider_config *pc, const char *sandbox_id, const char *domain)
{
	if (pc->sandbox_url != NULL) {
		size_t len = strlen(pc->sandbox_url);
		while (len > 0 && pc->sandbox_url[len - 1] == '/')
			len--;
		return sk_asprintf("%.*s", (int)len, pc->sandbox_url);
	}
	if (domain == NULL)
		domain = pc->domain ? pc->domain : "e2b.app";
	return sk_asprintf("https://%d-%s.%s", SK_ENVD_PORT, sandbox_id, domain);
}

/* POST with a {"timeout": s} body (connect, timeout). */
static int
post_timeout(sk_provider *p, const char *id, const char *verb, long timeout_s, long *status,
        json_t **resp, sk_error *err)
{
	sk_http_request r = { .method = "POST", .auth = true };
	char *path, *body = NULL;
	int rc;

	if ((rc = check_id(id, err)) != SK_OK)
		return rc;
	path = sk_asprintf("/sandboxes/%s/%s", id, verb);
	sk_json_dump_body(json_pack("{s:i}", "timeout", (json_int_t)timeout_s), &body);
	r.path = path;
	r.body = body;
	rc = sk_http_json(&p->http, &r, status, resp, err);
	free(path);
	free(body);
	return rc;
}

int
sk_e2b_connect_seconds(sk_provider *p, const char *id, long timeout_s, sk_sandbox *out,
        long *status, sk_error *err)
{
	json_t *resp = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = post_timeout(p, id, "connect", timeout_s, status, &resp, err);
	if (rc == SK_OK)
		rc = sk_e2b_decode(resp, out, SK_SANDBOX_RUNNING, err);
	json_decref(resp);
	return rc;
}

int
sk_e2b_connect(sk_provider *p, const char *id, int64_t timeout_ms, sk_sandbox *out, bool *resumed,
        sk_error *err)
{
	long status = 0;
	int64_t t = timeout_ms > 0 ? timeout_ms : p->cfg.sandbox_timeout_ms;
	int rc = sk_e2b_connect_seconds(p, id, sk_e2b_seconds(t), out, &status, err);

	if (resumed)
		*resumed = rc == SK_OK && status == 201;
	return rc;
}

/* A bodiless-answer call on /sandboxes/{id}...; `done_code` (already paused,
 * already gone) counts as success. */
static int
call_idempotent(sk_provider *p, const char *method, const char *path_fmt, const char *id,
        const char *body, int done_code, sk_error *err)
{
	sk_http_request r = { .method = method, .auth = true, .body = body };
	char *path;
	int rc;

	if ((rc = check_id(id, err)) != SK_OK)
		return rc;
	path = sk_asprintf(path_fmt, id);
	r.path = path;
	rc = sk_http_json(&p->http, &r, NULL, NULL, err);
	if (rc == done_code)
		rc = SK_OK;
	free(path);
	if (rc == SK_OK)
		sk_error_clear(err);
	return rc;
}

int
sk_e2b_pause(sk_provider *p, const char *id, sk_error *err)
{
	return call_idempotent(
	        p, "POST", "/sandboxes/%s/pause", id, "{\"memory\":true}", SK_ECONFLICT, err);
}

int
sk_e2b_kill(sk_provider *p, const char *id, sk_error *err)
{
	return call_idempotent(p, "DELETE", "/sandboxes/%s", id, NULL, SK_ENOTFOUND, err);
}

int
sk_e2b_set_timeout_seconds(sk_provider *p, const char *id, long timeout_s, sk_error *err)
{
	return post_timeout(p, id, "timeout", timeout_s, NULL, NULL, err);
}

int
sk_e2b_set_timeout(sk_provider *p, const char *id, int64_t timeout_ms, sk_error *err)
{
	return sk_e2b_set_timeout_seconds(p, id, sk_e2b_seconds(timeout_ms), err);
}

static sk_health
health_of(long status)
{
	if (status >= 200 && status < 300)
		return SK_HEALTH_OK;
	if (status == 502 || status == 503 || status == 504)
		return SK_HEALTH_UNREACHABLE;
	return SK_HEALTH_ERROR;
}

void
sk_envd_init(sk_provider *p, const sk_sandbox *sb, const char *path, sk_envd_target *t)
{
	const char *domain = sb->domain ? sb->domain : (p->cfg.domain ? p->cfg.domain : "e2b.app");
	size_t n = 0;

	char *base = sk_sandbox_envd_url(&p->cfg, sb->id, domain);

	memset(t, 0, sizeof(*t));
	t->url = sk_asprintf("%s%s", base, path);
	free(base);
	if (p->cfg.sandbox_url) {
		snprintf(t->hid, sizeof(t->hid), "E2b-Sandbox-Id: %s", sb->id);
		snprintf(t->hport, sizeof(t->hport), "E2b-Sandbox-Port: %d", SK_ENVD_PORT);
		t->headers[n++] = t->hid;
		t->headers[n++] = t->hport;
	}
	if (sb->envd_access_token) {
		snprintf(t->htok, sizeof(t->htok), "X-Access-Token: %s", sb->envd_access_token);
		t->headers[n++] = t->htok;
	}
}

void
sk_envd_add_header(sk_envd_target *t, const char *line)
{
	size_t i = 0;

	while (t->headers[i])
		i++;
	if (i + 1 < sizeof(t->headers) / sizeof(t->headers[0]))
		t->headers[i] = line;
}

void
sk_envd_dispose(sk_envd_target *t)
{
	memset(t->htok, 0, sizeof(t->htok));
	free(t->url);
	t->url = NULL;
}

int
sk_envd_stream(sk_provider *p, sk_http_request *r, const sk_envd_target *t, sk_http_stream *st,
        sk_error *err)
{
	sk_http_response resp;
	int rc;

	r->url = t->url;
	r->headers = t->headers;
	rc = sk_http_stream_do(&p->http, r, st, &resp, err);
	if (rc == SK_OK) {
		rc = sk_http_classify(&p->http, r, &resp, err);
		sk_http_response_dispose(&resp);
	}
	return rc;
}

int64_t
sk_envd_timeout(const sk_provider *p)
{
	return p->http.timeout_ms < SK_PROBE_TIMEOUT_MAX_MS ? p->http.timeout_ms
	                                                    : SK_PROBE_TIMEOUT_MAX_MS;
}

int
sk_e2b_probe_health(
        sk_provider *p, const sk_sandbox *sb, sk_health *health, int *http_status, sk_error *err)
{
	sk_http_request r = { .method = "GET", .path = "/health" };
	sk_http_response resp;
	sk_envd_target t;
	int rc;

	*health = SK_HEALTH_ERROR;
	if (http_status)
		*http_status = 0;
	if ((rc = check_id(sb->id, err)) != SK_OK)
		return rc;
	sk_envd_init(p, sb, "/health", &t);
	r.url = t.url;
	r.headers = t.headers;
	r.timeout_ms = sk_envd_timeout(p);
	rc = sk_http_do(&p->http, &r, &resp, err);
	if (rc == SK_ETIMEOUT || rc == SK_EUNAVAILABLE) {
		*health = SK_HEALTH_UNREACHABLE;
		rc = SK_OK;
	} else if (rc == SK_OK) {
		*health = health_of(resp.status);
		if (http_status)
			*http_status = (int)resp.status;
		sk_http_response_dispose(&resp);
	}
	sk_envd_dispose(&t);
	return rc;
}

/* {"envVars": {...}, "accessToken": ...}: envd replaces its token with the
 * body's, so a secure sandbox gets its own token back (never cleared). */
static char *
init_body(const sk_sandbox *sb, const sk_kvlist *env)
{
	json_t *body = json_pack("{s:o}", "envVars", sk_kvlist_to_json(env));
	char *text = NULL;

	if (sb->envd_access_token)
		json_object_set_new(body, "accessToken", json_string(sb->envd_access_token));
	sk_json_dump_body(body, &text);
	return text;
}

/* envd POST /init. The env values and the token never reach a message: an
 * error says only "POST /init: HTTP 502" (the provider's own message is
 * dropped too, in case it echoes the body). */
int
sk_e2b_init_env(sk_provider *p, const sk_sandbox *sb, const sk_kvlist *env, sk_error *err)
{
	sk_http_request r = { .method = "POST", .path = "/init" };
	sk_http_response resp;
	sk_envd_target t;
	int rc;

	if ((rc = check_id(sb->id, err)) != SK_OK)
		return rc;
	if ((r.body = init_body(sb, env)) == NULL)
		return sk_error_set(err, SK_ENOMEM, "POST /init: encoding the body");
	sk_envd_init(p, sb, "/init", &t);
	r.url = t.url;
	r.headers = t.headers;
	r.timeout_ms = sk_envd_timeout(p);
	rc = sk_http_do(&p->http, &r, &resp, err);
	if (rc == SK_OK) {
		rc = sk_http_classify(&p->http, &r, &resp, err);
		if (rc != SK_OK)
			sk_error_set(err, rc, "POST /init: HTTP %ld", resp.status);
		sk_http_response_dispose(&resp);
	}
	sk_wipe_free((char *)r.body);
	sk_envd_dispose(&t);
	return rc;
}

const sk_provider_ops sk_provider_e2b = {
	.name = "e2b",
	.create = sk_e2b_create,
	.get = sk_e2b_get,
	.list = sk_e2b_list,
	.connect = sk_e2b_connect,
	.pause = sk_e2b_pause,
	.kill = sk_e2b_kill,
	.set_timeout = sk_e2b_set_timeout,
	.probe_health = sk_e2b_probe_health,
	.init_env = sk_e2b_init_env,
	.list_files = sk_envd_list_files,
	.read_file = sk_envd_read_file,
	.write_file = sk_envd_write_file,
	.list_processes = sk_envd_list_processes,
	.set_network = sk_e2b_set_network,
	.ensure_volume = sk_e2b_ensure_volume,
	.fork = sk_e2b_fork,
	.delete_volume = sk_e2b_delete_volume,
	.create_snapshot = sk_e2b_create_snapshot,
	.list_snapshots = sk_e2b_list_snapshots,
	.delete_snapshot = sk_e2b_delete_snapshot,
};
