/*
 * sandbox/daytona: the Daytona sandbox API as @daytonaio/sdk 0.218 speaks it
 * (pkg/sandbox/DAYTONA.md) mapped onto the E2B model: labels are metadata
 * (list filter = a JSON object, cursor paging), start is connect (from
 * stopped or archived: both are "paused" here), stop is pause, delete is
 * kill, the auto-stop interval is the timeout (end_ms: last activity plus
 * the interval while started, the last update while stopped). Daytona has no
 * envd health endpoint: probe_health is not supported.
 */
#include <stdlib.h>
#include <string.h>

#include "sandbox_int.h"

/* GET /sandbox takes limit <= 200. */
#define SK_DAYTONA_PAGE 200

/* Daytona's state strings (sk_sandbox_state_parse). */
static const sk_state_name daytona_states[] = {
	{ "started", SK_SANDBOX_RUNNING },
	{ "stopped", SK_SANDBOX_PAUSED },
	{ "archived", SK_SANDBOX_PAUSED },
	{ "paused", SK_SANDBOX_PAUSED },
	{ "creating", SK_SANDBOX_TRANSITIONAL },
	{ "restoring", SK_SANDBOX_TRANSITIONAL },
	{ "starting", SK_SANDBOX_TRANSITIONAL },
	{ "stopping", SK_SANDBOX_TRANSITIONAL },
	{ "archiving", SK_SANDBOX_TRANSITIONAL },
	{ "pulling_snapshot", SK_SANDBOX_TRANSITIONAL },
	{ "building_snapshot", SK_SANDBOX_TRANSITIONAL },
	{ "pending_build", SK_SANDBOX_TRANSITIONAL },
	{ "destroying", SK_SANDBOX_TRANSITIONAL },
	{ "resizing", SK_SANDBOX_TRANSITIONAL },
	{ "snapshotting", SK_SANDBOX_TRANSITIONAL },
	{ "forking", SK_SANDBOX_TRANSITIONAL },
	{ "pausing", SK_SANDBOX_TRANSITIONAL },
	{ "resuming", SK_SANDBOX_TRANSITIONAL },
	{ "destroyed", SK_SANDBOX_GONE },
	{ "error", SK_SANDBOX_GONE },
	{ "build_failed", SK_SANDBOX_GONE },
	{ NULL, SK_SANDBOX_UNKNOWN },
};

static const char *
jstr(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* Started: when auto-stop would fire (0 when disabled); otherwise: since when it is stopped. */
static void
set_end(const json_t *j, sk_sandbox *out)
{
	const char *at = jstr(j, out->state == SK_SANDBOX_RUNNING ? "lastActivityAt" : "updatedAt");
	json_int_t stop = json_integer_value(json_object_get(j, "autoStopInterval"));
	int64_t ms = 0;

	if (at == NULL || sk_time_parse(at, &ms) != 0)
		return;
	if (out->state != SK_SANDBOX_RUNNING)
		out->end_ms = ms;
	else if (stop > 0)
		out->end_ms = ms + (int64_t)stop * 60000;
}

static int
decode(const json_t *j, sk_sandbox *out, sk_error *err)
{
	const char *id = json_is_object(j) ? jstr(j, "id") : NULL;
	json_t *labels, *v;
	const char *k;

	memset(out, 0, sizeof(*out));
	if (id == NULL || id[0] == '\0')
		return sk_error_set(err, SK_EINVALID, "daytona sandbox without id");
	out->id = sk_strdup(id);
	out->template_id = sk_strdup(jstr(j, "snapshot"));
	out->alias = sk_strdup(jstr(j, "name"));
	out->state = sk_sandbox_state_parse(daytona_states, jstr(j, "state"));
	if (jstr(j, "createdAt"))
		sk_time_parse(jstr(j, "createdAt"), &out->started_ms);
	set_end(j, out);
	out->cpu_count = (int)json_number_value(json_object_get(j, "cpu"));
	out->memory_mb = (int)(json_number_value(json_object_get(j, "memory")) * 1024);
	labels = json_object_get(j, "labels");
	if (json_is_object(labels))
		json_object_foreach(labels, k, v)
		{
			if (json_is_string(v))
				sk_kvlist_set(&out->metadata, k, json_string_value(v));
		}
	sk_daytona_network_decode(j, out);
	return SK_OK;
}

static long
minutes(int64_t ms)
{
	return ms <= 0 ? 0 : (long)((ms + 59999) / 60000);
}

/* One request whose 2xx body (when wanted) is a Daytona sandbox. */
static int
call(sk_provider *p, const char *method, const char *path, const char *body, sk_sandbox *out,
        sk_error *err)
{
	sk_http_request r = { .method = method, .path = path, .body = body, .auth = true };
	json_t *resp = NULL;
	int rc = sk_http_json(&p->http, &r, NULL, out ? &resp : NULL, err);

	if (rc == SK_OK && out)
		rc = decode(resp, out, err);
	json_decref(resp);
	return rc;
}

static int
daytona_create(sk_provider *p, const sk_create_request *req, sk_sandbox *out, sk_error *err)
{
	json_t *body = json_object();
	int64_t t = req->timeout_ms > 0 ? req->timeout_ms : p->cfg.sandbox_timeout_ms;
	char *text = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (req->template_id)
		json_object_set_new(body, "snapshot", json_string(req->template_id));
	json_object_set_new(body, "labels", sk_kvlist_to_json(req->metadata));
	json_object_set_new(body, "env", sk_kvlist_to_json(req->env));
	json_object_set_new(body, "autoStopInterval", json_integer(minutes(t)));
	if (!req->auto_pause) /* E2B kill-on-timeout: delete when stopped */
		json_object_set_new(body, "autoDeleteInterval", json_integer(0));
	if ((rc = sk_daytona_network_create(body, req->network, err)) != SK_OK) {
		json_decref(body);
		return rc;
	}
	if (sk_json_dump_body(body, &text) != SK_OK)
		return sk_error_set(err, SK_ENOMEM, "encoding the create request");
	rc = call(p, "POST", "/sandbox", text, out, err);
	free(text);
	return rc;
}

static int
daytona_get(sk_provider *p, const char *id, sk_sandbox *out, sk_error *err)
{
	char *path;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!sk_sandbox_id_valid(id))
		return sk_error_set(err, SK_EINVALID, "invalid sandbox id");
	path = sk_asprintf("/sandbox/%s", id);
	rc = call(p, "GET", path, NULL, out, err);
	if (rc == SK_OK && out->state == SK_SANDBOX_GONE && out->id) {
		/* destroyed: the E2B model's 404 */
		sk_sandbox_dispose(out);
		rc = sk_error_set(err, SK_ENOTFOUND, "GET %s: sandbox destroyed", path);
	}
	free(path);
	return rc;
}

/* One page of GET /sandbox (cursor paging); *next gets nextCursor (NULL at the end). */
static int
list_page(sk_provider *p, const char *labels, const char *cursor, const sk_kvlist *match,
        sk_sandbox_list *out, size_t *cap, char **next, sk_error *err)
{
	sk_http_request r = { .method = "GET", .auth = true };
	char *ecur = cursor ? sk_http_escape(&p->http, cursor) : NULL;
	json_t *resp = NULL, *items, *item;
	size_t i;
	int rc;

	*next = NULL;
	r.path = sk_asprintf("/sandbox?limit=%d%s%s%s%s", SK_DAYTONA_PAGE, labels ? "&labels=" : "",
	        labels ? labels : "", ecur ? "&cursor=" : "", ecur ? ecur : "");
	rc = sk_http_json(&p->http, &r, NULL, &resp, err);
	items = json_object_get(resp, "items");
	if (rc == SK_OK && !json_is_array(items))
		rc = sk_error_set(err, SK_EINVALID, "GET %s: no items array", r.path);
	if (rc == SK_OK && jstr(resp, "nextCursor") && jstr(resp, "nextCursor")[0])
		*next = sk_strdup(jstr(resp, "nextCursor"));
	if (rc == SK_OK)
		json_array_foreach(items, i, item)
		{
			sk_sandbox sb;
			if (decode(item, &sb, NULL) != SK_OK)
				continue;
			if (sb.state != SK_SANDBOX_GONE &&
			        sk_sandbox_metadata_matches(&sb.metadata, match))
				sk_sandbox_list_push(out, cap, &sb);
			else
				sk_sandbox_dispose(&sb);
		}
	json_decref(resp);
	free(ecur);
	free((char *)r.path);
	return rc;
}

static bool
seen_before(char **seen, size_t n, const char *cursor)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(seen[i], cursor) == 0)
			return true;
	return false;
}

/* Follows nextCursor until it is null, repeats one already used, or passes the page cap. */
static int
list_pages(sk_provider *p, const char *labels, const sk_kvlist *match, sk_sandbox_list *out,
        sk_error *err)
{
	char **seen = NULL, *cursor = NULL;
	size_t nseen = 0, cap = 0;
	int rc = SK_OK;

	for (int page = 0;; page++) {
		char *next = NULL;
		if (page >= SK_LIST_MAX_PAGES) {
			rc = sk_error_set(err, SK_ETRANSIENT, "GET /sandbox: more than %d pages",
			        SK_LIST_MAX_PAGES);
			break;
		}
		rc = list_page(p, labels, cursor, match, out, &cap, &next, err);
		if (cursor) {
			seen = sk_realloc(seen, (nseen + 1) * sizeof(*seen));
			seen[nseen++] = cursor;
		}
		cursor = next;
		if (rc != SK_OK || cursor == NULL || seen_before(seen, nseen, cursor))
			break;
	}
	free(cursor);
	for (size_t i = 0; i < nseen; i++)
		free(seen[i]);
	free(seen);
	return rc;
}

static int
daytona_list(sk_provider *p, const sk_kvlist *match, sk_sandbox_list *out, sk_error *err)
{
	char *json = NULL, *labels = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (match && match->len) {
		sk_json_dump_body(sk_kvlist_to_json(match), &json);
		labels = sk_http_escape(&p->http, json);
	}
	rc = list_pages(p, labels, match, out, err);
	if (rc != SK_OK)
		sk_sandbox_list_dispose(out);
	else
		sk_sandbox_list_dedup(out);
	free(json);
	free(labels);
	return rc;
}

static int
daytona_action(sk_provider *p, const char *id, const char *action, sk_sandbox *out, sk_error *err)
{
	char *path = sk_asprintf("/sandbox/%s/%s", id, action);
	int rc = call(p, "POST", path, NULL, out, err);

	free(path);
	return rc;
}

static int
daytona_connect(sk_provider *p, const char *id, int64_t timeout_ms, sk_sandbox *out, bool *resumed,
        sk_error *err)
{
	sk_sandbox before;
	int rc;

	if (resumed)
		*resumed = false;
	memset(out, 0, sizeof(*out));
	if ((rc = daytona_get(p, id, &before, err)) != SK_OK)
		return rc;
	if (before.state == SK_SANDBOX_RUNNING) {
		*out = before;
		return timeout_ms > 0 ? p->ops->set_timeout(p, id, timeout_ms, err) : SK_OK;
	}
	sk_sandbox_dispose(&before);
	/* stopped or archived: start answers the sandbox (an archived one may still be restoring) */
	rc = daytona_action(p, id, "start", out, err);
	if (rc == SK_OK && resumed)
		*resumed = true;
	return rc;
}

static int
daytona_pause(sk_provider *p, const char *id, sk_error *err)
{
	sk_sandbox cur;
	int rc;

	if ((rc = daytona_get(p, id, &cur, err)) != SK_OK)
		return rc;
	if (cur.state != SK_SANDBOX_PAUSED) {
		char *path = sk_asprintf("/sandbox/%s/stop", id);
		rc = call(p, "POST", path, NULL, NULL, err);
		free(path);
		if (rc == SK_ECONFLICT) /* already stopping/stopped */
			rc = SK_OK;
	}
	sk_sandbox_dispose(&cur);
	if (rc == SK_OK)
		sk_error_clear(err);
	return rc;
}

static int
daytona_kill(sk_provider *p, const char *id, sk_error *err)
{
	char *path;
	int rc;

	if (!sk_sandbox_id_valid(id))
		return sk_error_set(err, SK_EINVALID, "invalid sandbox id");
	path = sk_asprintf("/sandbox/%s", id);
	rc = call(p, "DELETE", path, NULL, NULL, err);
	if (rc == SK_ENOTFOUND)
		rc = SK_OK;
	free(path);
	if (rc == SK_OK)
		sk_error_clear(err);
	return rc;
}

static int
daytona_set_timeout(sk_provider *p, const char *id, int64_t timeout_ms, sk_error *err)
{
	char *path;
	int rc;

	if (!sk_sandbox_id_valid(id))
		return sk_error_set(err, SK_EINVALID, "invalid sandbox id");
	path = sk_asprintf("/sandbox/%s/autostop/%ld", id, minutes(timeout_ms));
	rc = call(p, "POST", path, NULL, NULL, err);
	free(path);
	return rc;
}

static int
daytona_probe(
        sk_provider *p, const sk_sandbox *sb, sk_health *health, int *http_status, sk_error *err)
{
	*health = SK_HEALTH_ERROR;
	if (http_status)
		*http_status = 0;
	return sk_error_set(err, SK_ENOTSUPPORTED, "daytona: no data-plane health endpoint");
}

/* Daytona has no envd: the env is the container's, given at create and kept
 * across stop/start. */
static int
daytona_init_env(sk_provider *p, const sk_sandbox *sb, const sk_kvlist *env, sk_error *err)
{
	return sk_error_set(err, SK_ENOTSUPPORTED, "daytona: no envd /init (env is set at create)");
}

const sk_provider_ops sk_provider_daytona = {
	.name = "daytona",
	.create = daytona_create,
	.get = daytona_get,
	.list = daytona_list,
	.connect = daytona_connect,
	.pause = daytona_pause,
	.kill = daytona_kill,
	.set_timeout = daytona_set_timeout,
	.probe_health = daytona_probe,
	.init_env = daytona_init_env,
	.list_files = sk_daytona_list_files,
	.read_file = sk_daytona_read_file,
	.write_file = sk_daytona_write_file,
};
