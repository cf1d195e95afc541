/*
 * sandbox/files_envd: workspace files of E2B and Cube sandboxes through envd
 * (E2B's published API), the way the official SDK reaches them:
 *   list   POST /filesystem.Filesystem/ListDir {path, depth} (Connect unary, JSON)
 *   read   GET  /files?path=P, the body streamed to the sink
 *   write  POST /files?path=P, application/octet-stream streamed from the
 *          source (envd >= 0.5.7); directories POST /filesystem.Filesystem/MakeDir;
 *          symlinks and modes through process.Process/Start (`ln -sfn`, `chmod`),
 *          as a client does on E2B, where the file API has neither; a mode
 *          is changed only when Stat shows another one.
 * Every request carries the routing headers and X-Access-Token (sk_envd_init).
 */
#include <gnutls/gnutls.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox_int.h"

#define LIST_DEPTH 4096 /* "all the way down" */
#define DEFAULT_DIR_MODE 0755
#define PROCESS_MAX_OUTPUT (64 * 1024)

/* ---- Connect unary (filesystem.Filesystem) ---- */

static int
rpc(sk_provider *p, const sk_sandbox *sb, const char *method, json_t *body, json_t **out,
        sk_error *err)
{
	char *path = sk_asprintf("/filesystem.Filesystem/%s", method), *text = NULL;
	sk_http_request r = { .method = "POST", .path = path };
	sk_envd_target t;
	int rc;

	sk_json_dump_body(body, &text);
	sk_envd_init(p, sb, path, &t);
	sk_envd_add_header(&t, "Connect-Protocol-Version: 1");
	r.url = t.url;
	r.headers = t.headers;
	r.body = text;
	rc = sk_http_json(&p->http, &r, NULL, out, err);
	sk_envd_dispose(&t);
	free(text);
	free(path);
	return rc;
}

/* ---- EntryInfo ---- */

static sk_file_type
entry_type(const json_t *t)
{
	const char *s = json_string_value(t);

	if (json_is_integer(t))
		return json_integer_value(t) == 1    ? SK_FILE_REGULAR
		        : json_integer_value(t) == 2 ? SK_FILE_DIR
		        : json_integer_value(t) == 3 ? SK_FILE_SYMLINK
		                                     : SK_FILE_OTHER;
	if (s && strcmp(s, "FILE_TYPE_FILE") == 0)
		return SK_FILE_REGULAR;
	if (s && strcmp(s, "FILE_TYPE_DIRECTORY") == 0)
		return SK_FILE_DIR;
	if (s && strcmp(s, "FILE_TYPE_SYMLINK") == 0)
		return SK_FILE_SYMLINK;
	return SK_FILE_OTHER; /* FILE_TYPE_UNSPECIFIED (omitted): special files */
}

/* proto3 JSON writes int64 as a string; accept a number too. */
static uint64_t
entry_size(const json_t *v)
{
	if (json_is_integer(v))
		return (uint64_t)json_integer_value(v);
	return json_is_string(v) ? strtoull(json_string_value(v), NULL, 10) : 0;
}

static int
decode_entry(const json_t *e, sk_file_entry *out, sk_error *err)
{
	const char *path = json_string_value(json_object_get(e, "path"));
	const char *target = json_string_value(json_object_get(e, "symlinkTarget"));

	memset(out, 0, sizeof(*out));
	if (path == NULL || path[0] != '/')
		return sk_error_set(err, SK_EINVALID, "ListDir: an entry without an absolute path");
	out->path = sk_strdup(path);
	out->type = entry_type(json_object_get(e, "type"));
	out->size = out->type == SK_FILE_REGULAR ? entry_size(json_object_get(e, "size")) : 0;
	out->mode = (uint32_t)json_integer_value(json_object_get(e, "mode")) & 07777;
	out->link_target = out->type == SK_FILE_SYMLINK ? sk_strdup(target ? target : "") : NULL;
	return SK_OK;
}

int
sk_envd_list_files(
        sk_provider *p, const sk_sandbox *sb, const char *root, sk_file_list *out, sk_error *err)
{
	json_t *resp = NULL, *entries, *e;
	size_t i;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = rpc(p, sb, "ListDir", json_pack("{s:s,s:i}", "path", root, "depth", LIST_DEPTH), &resp,
	        err);
	entries = json_object_get(resp, "entries");
	if (rc == SK_OK && resp && !json_is_array(entries) && json_object_size(resp) > 0)
		rc = sk_error_set(err, SK_EINVALID, "ListDir %s: no entries array", root);
	json_array_foreach(entries, i, e)
	{
		sk_file_entry fe;
		if (rc != SK_OK || (rc = decode_entry(e, &fe, err)) != SK_OK)
			break;
		sk_file_list_push(out, &fe);
	}
	json_decref(resp);
	if (rc != SK_OK)
		sk_file_list_free(out);
	else
		sk_file_list_sort(out);
	return rc;
}

/* ---- GET /files ---- */

/* METHOD /files?path=PATH streaming st; header: an extra header line or NULL. */
static int
files_stream(sk_provider *p, const sk_sandbox *sb, const char *method, const char *path,
        const char *header, sk_http_stream *st, sk_error *err)
{
	char *q = sk_http_escape(&p->http, path), *url_path = sk_asprintf("/files?path=%s", q);
	sk_http_request r = { .method = method, .path = "/files" };
	sk_envd_target t;
	int rc;

	sk_envd_init(p, sb, url_path, &t);
	if (header != NULL)
		sk_envd_add_header(&t, header);
	rc = sk_envd_stream(p, &r, &t, st, err);
	sk_envd_dispose(&t);
	free(url_path);
	free(q);
	return rc;
}

int
sk_envd_read_file(sk_provider *p, const sk_sandbox *sb, const char *path, sk_file_sink_fn sink,
        void *payload, sk_error *err)
{
	sk_http_stream st = { .sink = sink, .sink_payload = payload };

	return files_stream(p, sb, "GET", path, NULL, &st, err);
}

/* ---- writes ---- */

static int
upload(sk_provider *p, const sk_sandbox *sb, const sk_file_entry *e, sk_file_source_fn source,
        void *payload, sk_error *err)
{
	sk_http_stream st = { .source = source, .source_payload = payload, .size = e->size };

	return files_stream(
	        p, sb, "POST", e->path, "Content-Type: application/octet-stream", &st, err);
}

/* MakeDir; *existed when it was there already (already_exists). */
static int
make_dir(sk_provider *p, const sk_sandbox *sb, const char *path, bool *existed, sk_error *err)
{
	int rc = rpc(p, sb, "MakeDir", json_pack("{s:s}", "path", path), NULL, err);

	*existed = rc == SK_ECONFLICT;
	if (rc == SK_ECONFLICT) {
		sk_error_clear(err);
		rc = SK_OK;
	}
	return rc;
}

static int
make_parent(sk_provider *p, const sk_sandbox *sb, const char *path, sk_error *err)
{
	char *parent = sk_strndup(path, (size_t)(strrchr(path, '/') - path));
	bool existed;
	int rc = parent[0] ? make_dir(p, sb, parent, &existed, err) : SK_OK;

	free(parent);
	return rc;
}

/* The permission bits envd reports for path (Stat, symlinks not followed). */
static int
stat_mode(sk_provider *p, const sk_sandbox *sb, const char *path, uint32_t *mode, sk_error *err)
{
	json_t *resp = NULL;
	int rc = rpc(p, sb, "Stat", json_pack("{s:s}", "path", path), &resp, err);

	*mode = (uint32_t)json_integer_value(
	                json_object_get(json_object_get(resp, "entry"), "mode")) &
	        07777;
	json_decref(resp);
	return rc;
}

/* chmod (a process: envd's file API has none) unless path has the mode already:
 * known when a new directory got the default, else asked with Stat (a cheap
 * unary call; an overwritten file keeps its old mode, as with O_TRUNC). */
static int
ensure_mode(sk_provider *p, const sk_sandbox *sb, const sk_file_entry *e, bool is_new_dir,
        sk_error *err)
{
	uint32_t want = e->mode & 07777, have = is_new_dir ? DEFAULT_DIR_MODE : 0;
	char mode[8];
	int rc = is_new_dir ? SK_OK : stat_mode(p, sb, e->path, &have, err);

	if (rc != SK_OK || have == want)
		return rc;
	snprintf(mode, sizeof(mode), "%04o", (unsigned)want);
	return sk_envd_run(p, sb, "chmod", mode, e->path, err);
}

int
sk_envd_write_file(sk_provider *p, const sk_sandbox *sb, const sk_file_entry *e,
        sk_file_source_fn source, void *payload, sk_error *err)
{
	bool existed = false;
	int rc;

	if (e->path == NULL || e->path[0] != '/')
		return sk_error_set(err, SK_EINVALID, "write_file: path must be absolute");
	switch (e->type) {
	case SK_FILE_REGULAR:
		rc = upload(p, sb, e, source, payload, err);
		return rc == SK_OK ? ensure_mode(p, sb, e, false, err) : rc;
	case SK_FILE_DIR:
		rc = make_dir(p, sb, e->path, &existed, err);
		return rc == SK_OK ? ensure_mode(p, sb, e, !existed, err) : rc;
	case SK_FILE_SYMLINK: /* ln makes no parents */
		if ((rc = make_parent(p, sb, e->path, err)) != SK_OK)
			return rc;
		return sk_envd_run(
		        p, sb, "ln -sfn", e->link_target ? e->link_target : "", e->path, err);
	default: break;
	}
	return sk_error_set(err, SK_EINVALID, "%s: special files are not written", e->path);
}
