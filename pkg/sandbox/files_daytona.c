/*
 * sandbox/files_daytona: workspace files of Daytona sandboxes through the
 * toolbox (<toolboxProxyUrl>/<id>, the same bearer key; DAYTONA.md), as
 * @daytona/toolbox-api-client calls it:
 *   list   GET  /files?path=ROOT&depth=N  -> [FileInfo]: the type from `mode`
 *          (Go's FileMode string: 'd', 'L' symlink, '-' file, else special),
 *          the mode from `permissions` ("0644"), a symlink's target from
 *          `readlink` through POST /process/execute
 *   read   GET  /files/download?path=P, streamed to the sink
 *   write  POST /files/upload-v2?path=P, multipart part "file" streamed from
 *          the source; POST /files/folder?path=&mode=; POST
 *          /files/permissions?path=&mode=; symlinks by `ln -sfn` (execute)
 * The toolbox proxy URL is asked once per client (GET /sandbox/{id}/toolbox-proxy-url).
 */
#include <stdlib.h>
#include <string.h>

#include "sandbox_int.h"

#define LIST_DEPTH 4096

static int
toolbox_url(sk_provider *p, const char *id, sk_error *err)
{
	char *path;
	sk_http_request r = { .method = "GET", .auth = true };
	json_t *resp = NULL;
	const char *url;
	int rc;

	if (p->toolbox_url)
		return SK_OK;
	path = sk_asprintf("/sandbox/%s/toolbox-proxy-url", id);
	r.path = path;
	rc = sk_http_json(&p->http, &r, NULL, &resp, err);
	url = json_string_value(json_object_get(resp, "url"));
	if (rc == SK_OK && (url == NULL || *url == '\0'))
		rc = sk_error_set(err, SK_EINVALID, "GET %s: no url in the answer", path);
	if (rc == SK_OK)
		p->toolbox_url = sk_strndup(url, strlen(url) - (url[strlen(url) - 1] == '/'));
	json_decref(resp);
	free(path);
	return rc;
}

/* <toolbox>/<id><what>?path=<escaped path><extra>; caller frees. */
static char *
toolbox_path(
        sk_provider *p, const sk_sandbox *sb, const char *what, const char *path, const char *extra)
{
	char *q = sk_http_escape(&p->http, path);
	char *url = sk_asprintf("%s/%s%s?path=%s%s", p->toolbox_url, sb->id, what, q, extra);

	free(q);
	return url;
}

/* A toolbox call whose 2xx answer is JSON (or empty): *out when asked. */
static int
call(sk_provider *p, const char *method, const char *what, char *url, const char *body,
        json_t **out, sk_error *err)
{
	sk_http_request r = {
		.method = method, .path = what, .url = url, .body = body, .auth = true
	};
	int rc = sk_http_json(&p->http, &r, NULL, out, err);

	free(url);
	return rc;
}

/* POST /process/execute {command}; a non-zero exit is SK_ETERMINAL. *out: the output. */
static int
execute(sk_provider *p, const sk_sandbox *sb, const char *cmd, const char *a1, const char *a2,
        char **out, sk_error *err)
{
	char *command = sk_shell_command(cmd, a1, a2), *body = NULL;
	char *url = sk_asprintf("%s/%s/process/execute", p->toolbox_url, sb->id);
	json_t *resp = NULL;
	int rc;

	sk_json_dump_body(json_pack("{s:s}", "command", command), &body);
	rc = call(p, "POST", "/process/execute", url, body, &resp, err);
	if (rc == SK_OK && json_integer_value(json_object_get(resp, "exitCode")) != 0)
		rc = sk_error_set(err, SK_ETERMINAL, "%s %s: exit %d: %.200s", cmd, a2 ? a2 : a1,
		        (int)json_integer_value(json_object_get(resp, "exitCode")),
		        json_string_value(json_object_get(resp, "result")));
	if (rc == SK_OK && out)
		*out = sk_strdup(json_string_value(json_object_get(resp, "result")));
	json_decref(resp);
	free(body);
	free(command);
	return rc;
}

/* ---- list ---- */

static sk_file_type
info_type(const json_t *fi)
{
	const char *mode = json_string_value(json_object_get(fi, "mode"));

	if (mode == NULL || mode[0] == '\0')
		return json_is_true(json_object_get(fi, "isDir")) ? SK_FILE_DIR : SK_FILE_REGULAR;
	return mode[0] == 'd'    ? SK_FILE_DIR
	        : mode[0] == 'L' ? SK_FILE_SYMLINK
	        : mode[0] == '-' ? SK_FILE_REGULAR
	                         : SK_FILE_OTHER;
}

static int
decode_info(
        sk_provider *p, const sk_sandbox *sb, const json_t *fi, sk_file_entry *out, sk_error *err)
{
	const char *path = json_string_value(json_object_get(fi, "path"));
	const char *perm = json_string_value(json_object_get(fi, "permissions"));
	char *target = NULL;
	int rc = SK_OK;

	memset(out, 0, sizeof(*out));
	if (path == NULL || path[0] != '/')
		return sk_error_set(
		        err, SK_EINVALID, "toolbox list: an entry without an absolute path");
	out->type = info_type(fi);
	out->mode = perm ? (uint32_t)strtoul(perm, NULL, 8) & 07777 : 0;
	if (out->type == SK_FILE_REGULAR)
		out->size = (uint64_t)json_integer_value(json_object_get(fi, "size"));
	if (out->type == SK_FILE_SYMLINK &&
	        (rc = execute(p, sb, "readlink", path, NULL, &target, err)) == SK_OK) {
		size_t n = strlen(target);
		while (n > 0 && target[n - 1] == '\n')
			target[--n] = '\0';
		out->link_target = target;
	}
	out->path = sk_strdup(path);
	return rc;
}

int
sk_daytona_list_files(
        sk_provider *p, const sk_sandbox *sb, const char *root, sk_file_list *out, sk_error *err)
{
	char extra[32];
	json_t *arr = NULL, *fi;
	size_t i;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = toolbox_url(p, sb->id, err)) != SK_OK)
		return rc;
	snprintf(extra, sizeof(extra), "&depth=%d", LIST_DEPTH);
	rc = call(p, "GET", "/files", toolbox_path(p, sb, "/files", root, extra), NULL, &arr, err);
	if (rc == SK_OK && !json_is_array(arr))
		rc = sk_error_set(err, SK_EINVALID, "toolbox list %s: not an array", root);
	json_array_foreach(arr, i, fi)
	{
		sk_file_entry e;
		if (rc != SK_OK)
			break;
		rc = decode_info(p, sb, fi, &e, err);
		sk_file_list_push(out, &e);
	}
	json_decref(arr);
	if (rc != SK_OK)
		sk_file_list_free(out);
	else
		sk_file_list_sort(out);
	return rc;
}

/* ---- read ---- */

/* A streamed toolbox request. */
static int
stream(sk_provider *p, const char *method, const char *what, char *url, sk_http_stream *st,
        sk_error *err)
{
	sk_http_request r = { .method = method, .path = what, .url = url, .auth = true };
	sk_http_response resp;
	int rc = sk_http_stream_do(&p->http, &r, st, &resp, err);

	if (rc == SK_OK) {
		rc = sk_http_classify(&p->http, &r, &resp, err);
		sk_http_response_dispose(&resp);
	}
	free(url);
	return rc;
}

int
sk_daytona_read_file(sk_provider *p, const sk_sandbox *sb, const char *path, sk_file_sink_fn sink,
        void *payload, sk_error *err)
{
	sk_http_stream st = { .sink = sink, .sink_payload = payload };
	int rc = toolbox_url(p, sb->id, err);

	if (rc != SK_OK)
		return rc;
	return stream(p, "GET", "/files/download", toolbox_path(p, sb, "/files/download", path, ""),
	        &st, err);
}

/* ---- write ---- */

static int
set_mode(sk_provider *p, const sk_sandbox *sb, const char *what, const char *path, uint32_t mode,
        sk_error *err)
{
	char extra[32];

	snprintf(extra, sizeof(extra), "&mode=%04o", (unsigned)(mode & 07777));
	return call(p, "POST", what, toolbox_path(p, sb, what, path, extra), NULL, NULL, err);
}

/* ln makes no parents: POST /files/folder (MkdirAll: an existing one is left as it is). */
static int
make_parent(sk_provider *p, const sk_sandbox *sb, const char *path, sk_error *err)
{
	char *parent = sk_strndup(path, (size_t)(strrchr(path, '/') - path));
	int rc = parent[0] ? set_mode(p, sb, "/files/folder", parent, 0755, err) : SK_OK;

	free(parent);
	return rc;
}

static int
upload(sk_provider *p, const sk_sandbox *sb, const sk_file_entry *e, sk_file_source_fn source,
        void *payload, sk_error *err)
{
	const char *slash = strrchr(e->path, '/');
	sk_http_stream st = { .source = source,
		.source_payload = payload,
		.size = e->size,
		.mime_name = "file",
		.mime_filename = slash + 1 };
	int rc = stream(p, "POST", "/files/upload-v2",
	        toolbox_path(p, sb, "/files/upload-v2", e->path, ""), &st, err);

	if (rc == SK_OK) /* an overwritten file keeps its old mode */
		rc = set_mode(p, sb, "/files/permissions", e->path, e->mode, err);
	return rc;
}

int
sk_daytona_write_file(sk_provider *p, const sk_sandbox *sb, const sk_file_entry *e,
        sk_file_source_fn source, void *payload, sk_error *err)
{
	int rc;

	if (e->path == NULL || e->path[0] != '/')
		return sk_error_set(err, SK_EINVALID, "write_file: path must be absolute");
	if (e->type == SK_FILE_OTHER)
		return sk_error_set(err, SK_EINVALID, "%s: special files are not written", e->path);
	if ((rc = toolbox_url(p, sb->id, err)) != SK_OK)
		return rc;
	if (e->type == SK_FILE_REGULAR)
		return upload(p, sb, e, source, payload, err);
	if (e->type == SK_FILE_DIR &&
	        (rc = set_mode(p, sb, "/files/folder", e->path, e->mode, err)) ==
	                SK_OK) /* an existing one keeps its mode */
		rc = set_mode(p, sb, "/files/permissions", e->path, e->mode, err);
	if (e->type == SK_FILE_DIR)
		return rc;
	if ((rc = make_parent(p, sb, e->path, err)) != SK_OK)
		return rc;
	return execute(p, sb, "ln -sfn", e->link_target ? e->link_target : "", e->path, NULL, err);
}
