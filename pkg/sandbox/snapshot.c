/*
 * sandbox/snapshot: E2B's persistent snapshots. POST
 * /sandboxes/{id}/snapshots {name?} takes one (201 SnapshotInfo {snapshotID,
 * names}); GET /snapshots?sandboxID= lists them in pages (limit, nextToken,
 * the X-Next-Token header). A snapshot outlives its sandbox, and a create
 * whose templateID is its ID starts a sandbox from it. A snapshot is a
 * template: DELETE /templates/{snapshotID} deletes it (204), as the SDK's
 * deleteSnapshot does.
 */
#include <stdlib.h>
#include <string.h>

#include "sandbox_int.h"

void
sk_snapshot_dispose(sk_snapshot *s)
{
	if (s == NULL)
		return;
	free(s->id);
	free(s->sandbox_id);
	for (size_t i = 0; i < s->n_names; i++)
		free(s->names[i]);
	free(s->names);
	memset(s, 0, sizeof(*s));
}

void
sk_snapshot_list_dispose(sk_snapshot_list *l)
{
	for (size_t i = 0; i < l->len; i++)
		sk_snapshot_dispose(&l->items[i]);
	free(l->items);
	memset(l, 0, sizeof(*l));
}

/* SnapshotInfo {snapshotID, names[], createdAt?} into out. */
static int
decode_snapshot(const json_t *j, const char *sandbox_id, sk_snapshot *out, sk_error *err)
{
	const char *id = json_string_value(json_object_get(j, "snapshotID"));
	const char *created = json_string_value(json_object_get(j, "createdAt"));
	json_t *names = json_object_get(j, "names"), *n;
	size_t i;

	memset(out, 0, sizeof(*out));
	if (id == NULL || *id == '\0')
		return sk_error_set(err, SK_EINVALID, "a snapshot without a snapshotID");
	out->id = sk_strdup(id);
	out->sandbox_id = sandbox_id ? sk_strdup(sandbox_id) : NULL;
	if (created != NULL && sk_time_parse(created, &out->created_ms) != SK_OK)
		out->created_ms = 0;
	if (json_is_array(names))
		out->names = sk_calloc(json_array_size(names) + 1, sizeof(*out->names));
	json_array_foreach(names, i, n)
	{
		if (json_is_string(n))
			out->names[out->n_names++] = sk_strdup(json_string_value(n));
	}
	return SK_OK;
}

int
sk_e2b_create_snapshot(
        sk_provider *p, const char *sandbox_id, const char *name, sk_snapshot *out, sk_error *err)
{
	sk_http_request r = { .method = "POST", .auth = true };
	json_t *body = name ? json_pack("{s:s}", "name", name) : json_object(), *resp = NULL;
	char *text = NULL, *path;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!sk_sandbox_id_valid(sandbox_id)) {
		json_decref(body);
		return sk_error_set(err, SK_EINVALID, "invalid sandbox ID \"%s\"", sandbox_id);
	}
	if (sk_json_dump_body(body, &text) != SK_OK)
		return sk_error_set(err, SK_ENOMEM, "encoding the snapshot request");
	path = sk_asprintf("/sandboxes/%s/snapshots", sandbox_id);
	r.path = path;
	r.body = text;
	rc = sk_http_json(&p->http, &r, NULL, &resp, err);
	if (rc == SK_OK && decode_snapshot(resp, sandbox_id, out, err) != SK_OK)
		rc = sk_error_set(err, SK_EINVALID, "POST %s: no snapshotID in the answer", path);
	json_decref(resp);
	free(text);
	free(path);
	return rc;
}

/* One page of GET /snapshots into out; *next the X-Next-Token (NULL: the last). */
static int
list_page(sk_provider *p, const char *path, const char *sandbox_id, sk_snapshot_list *out,
        char **next, sk_error *err)
{
	json_t *arr, *item;
	size_t i;
	int rc = sk_e2b_get_page(p, path, &arr, next, err);

	if (rc != SK_OK)
		return rc;
	out->items =
	        sk_realloc(out->items, (out->len + json_array_size(arr)) * sizeof(*out->items));
	json_array_foreach(arr, i, item)
	{
		if (decode_snapshot(item, sandbox_id, &out->items[out->len], NULL) == SK_OK)
			out->len++;
	}
	json_decref(arr);
	return SK_OK;
}

int
sk_e2b_list_snapshots(sk_provider *p, const char *sandbox_id, sk_snapshot_list *out, sk_error *err)
{
	char *etok = NULL, *token = NULL, *esb = NULL;
	int rc = SK_OK, page;

	memset(out, 0, sizeof(*out));
	if (sandbox_id && !sk_sandbox_id_valid(sandbox_id))
		return sk_error_set(err, SK_EINVALID, "invalid sandbox ID \"%s\"", sandbox_id);
	esb = sandbox_id ? sk_http_escape(&p->http, sandbox_id) : NULL;
	for (page = 0; rc == SK_OK; page++) {
		char *path, *next = NULL;
		if (page >= SK_LIST_MAX_PAGES) {
			rc = sk_error_set(err, SK_ETRANSIENT, "GET /snapshots: more than %d pages",
			        SK_LIST_MAX_PAGES);
			break;
		}
		etok = token ? sk_http_escape(&p->http, token) : NULL;
		path = sk_asprintf("/snapshots?limit=100%s%s%s%s", esb ? "&sandboxID=" : "",
		        esb ? esb : "", etok ? "&nextToken=" : "", etok ? etok : "");
		rc = list_page(p, path, sandbox_id, out, &next, err);
		free(path);
		free(etok);
		/* a token that does not move would loop for ever */
		if (next != NULL && token != NULL && strcmp(next, token) == 0) {
			free(next);
			next = NULL;
		}
		free(token);
		token = next;
		if (token == NULL)
			break;
	}
	free(token);
	free(esb);
	if (rc != SK_OK)
		sk_snapshot_list_dispose(out);
	return rc;
}

int
sk_e2b_delete_snapshot(sk_provider *p, const char *snapshot_id, sk_error *err)
{
	sk_http_request r = { .method = "DELETE", .auth = true };
	char *esc, *path;
	int rc;

	if (snapshot_id == NULL || *snapshot_id == '\0' || strlen(snapshot_id) > 256)
		return sk_error_set(err, SK_EINVALID, "invalid snapshot ID");
	esc = sk_http_escape(&p->http, snapshot_id);
	path = sk_asprintf("/templates/%s", esc);
	r.path = path;
	rc = sk_http_json(&p->http, &r, NULL, NULL, err);
	if (rc == SK_ENOTFOUND) /* deleted before: done */
		rc = SK_OK;
	if (rc == SK_OK)
		sk_error_clear(err);
	free(path);
	free(esc);
	return rc;
}
