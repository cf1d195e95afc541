/*
 * sandbox/volume: E2B's team volumes, by name. GET /volumes lists
 * [{volumeID, name}]; POST /volumes {name} makes one (201); DELETE
 * /volumes/{volumeID} deletes one (204; 404 is done). A create that lost a
 * race with another (400: the name is taken) looks again.
 */
#include <stdlib.h>
#include <string.h>

#include "../api/schema.h"
#include "sandbox_int.h"

/* The ID of the volume called name in GET /volumes: SK_OK with *id set, or
 * SK_ENOTFOUND. */
static int
find_volume(sk_provider *p, const char *name, char **id, sk_error *err)
{
	sk_http_request r = { .method = "GET", .path = "/volumes", .auth = true };
	json_t *resp = NULL, *v;
	size_t i;
	int rc = sk_http_json(&p->http, &r, NULL, &resp, err);

	*id = NULL;
	if (rc != SK_OK)
		return rc;
	if (!json_is_array(resp)) {
		json_decref(resp);
		return sk_error_set(err, SK_EINVALID, "GET /volumes: not a list");
	}
	json_array_foreach(resp, i, v)
	{
		const char *n = json_string_value(json_object_get(v, "name"));
		const char *vid = json_string_value(json_object_get(v, "volumeID"));
		if (n != NULL && vid != NULL && strcmp(n, name) == 0) {
			*id = sk_strdup(vid);
			break;
		}
	}
	json_decref(resp);
	return *id != NULL ? SK_OK : SK_ENOTFOUND;
}

static int
create_volume(sk_provider *p, const char *name, char **id, sk_error *err)
{
	sk_http_request r = { .method = "POST", .path = "/volumes", .auth = true };
	json_t *body = json_pack("{s:s}", "name", name), *resp = NULL;
	char *text = NULL;
	const char *vid;
	int rc;

	if (sk_json_dump_body(body, &text) != SK_OK)
		return sk_error_set(err, SK_ENOMEM, "encoding the volume request");
	r.body = text;
	rc = sk_http_json(&p->http, &r, NULL, &resp, err);
	free(text);
	if (rc == SK_OK) {
		vid = json_string_value(json_object_get(resp, "volumeID"));
		if (vid == NULL)
			rc = sk_error_set(err, SK_EINVALID, "POST /volumes: no volumeID");
		else
			*id = sk_strdup(vid);
	}
	json_decref(resp);
	return rc;
}

int
sk_e2b_ensure_volume(sk_provider *p, const char *name, char **id, sk_error *err)
{
	int rc = find_volume(p, name, id, err);

	if (rc != SK_ENOTFOUND)
		return rc;
	sk_error_clear(err);
	rc = create_volume(p, name, id, err);
	if (rc == SK_ETERMINAL && err->http_status == 400) {
		sk_error again; /* the create's error stays the answer unless it is there now */
		sk_error_clear(&again);
		if (find_volume(p, name, id, &again) == SK_OK)
			rc = SK_OK; /* made by someone else meanwhile */
	}
	if (rc == SK_OK)
		sk_error_clear(err);
	return rc;
}

int
sk_e2b_delete_volume(sk_provider *p, const char *name, sk_error *err)
{
	sk_http_request r = { .method = "DELETE", .auth = true };
	char *id = NULL, *path;
	int rc = find_volume(p, name, &id, err);

	if (rc == SK_ENOTFOUND) {
		sk_error_clear(err);
		return SK_OK;
	}
	if (rc != SK_OK)
		return rc;
	path = sk_asprintf("/volumes/%s", id);
	r.path = path;
	rc = sk_http_json(&p->http, &r, NULL, NULL, err);
	if (rc == SK_ENOTFOUND)
		rc = SK_OK;
	if (rc == SK_OK)
		sk_error_clear(err);
	free(path);
	free(id);
	return rc;
}

/* POST /sandboxes/{id}/fork {count: 1, timeout}: the one SandboxForkResult
 * is {sandbox} or {error: {code, message}}. E2B's fork takes no metadata:
 * the fork comes untagged (see sk_provider_ops.fork). */
int
sk_e2b_fork(
        sk_provider *p, const char *source_id, int64_t timeout_ms, sk_sandbox *out, sk_error *err)
{
	sk_http_request r = { .method = "POST", .auth = true };
	int64_t t = timeout_ms > 0 ? timeout_ms : sk_default_sandbox_timeout_ms;
	json_t *body, *resp = NULL, *entry, *failed;
	char *text = NULL, *path;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!sk_sandbox_id_valid(source_id))
		return sk_error_set(err, SK_EINVALID, "invalid sandbox id");
	body = json_pack("{s:i,s:I}", "count", 1, "timeout", (json_int_t)((t + 999) / 1000));
	if (sk_json_dump_body(body, &text) != SK_OK)
		return sk_error_set(err, SK_ENOMEM, "encoding the fork request");
	path = sk_asprintf("/sandboxes/%s/fork", source_id);
	r.path = path;
	r.body = text;
	rc = sk_http_json(&p->http, &r, NULL, &resp, err);
	entry = json_array_get(resp, 0);
	failed = json_object_get(entry, "error");
	if (rc == SK_OK && failed != NULL)
		rc = sk_error_set(err,
		        json_integer_value(json_object_get(failed, "code")) == 429 ? SK_ETRANSIENT
		                                                                   : SK_ETERMINAL,
		        "fork of sandbox %s refused: %s", source_id,
		        json_string_value(json_object_get(failed, "message")) ?: "no message");
	else if (rc == SK_OK)
		rc = sk_e2b_decode(json_object_get(entry, "sandbox"), out, SK_SANDBOX_RUNNING, err);
	if (rc == SK_OK && out->started_ms == 0)
		out->started_ms = sk_now_ms();
	json_decref(resp);
	free(path);
	free(text);
	return rc;
}
