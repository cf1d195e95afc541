/*
 * sandboxsim envd files: the sandbox's tree (fs.c) over envd's file API
 * (E2B's published API; the JS SDK's sandbox.files):
 *   GET  /files?path=P             the bytes (symlinks followed); 404, 400 for a directory
 *   POST /files?path=P             multipart/form-data, part "file" (filename = the
 *                                  path when ?path is absent), or application/octet-stream
 *                                  with ?path; parents made; -> [{name, type, path}]
 *   POST /filesystem.Filesystem/ListDir {path, depth}  -> {entries: [EntryInfo]}
 *   POST /filesystem.Filesystem/Stat    {path}         -> {entry: EntryInfo}
 *   POST /filesystem.Filesystem/MakeDir {path}         -> {entry}; 409 already_exists
 * The Filesystem service is Connect unary with the JSON codec: errors are an
 * HTTP status with {code, message}. EntryInfo: name, type (FILE_TYPE_FILE,
 * _DIRECTORY, _SYMLINK; omitted for special files), path, size (int64 as a
 * string), mode (permission bits), permissions, owner, group, modifiedTime,
 * symlinkTarget. Relative paths resolve under /home/user. s->lock is held.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define UPLOAD_MAX_PARTS 64

/* ---- EntryInfo ---- */

static const char *
type_name(int type)
{
	switch (type) {
	case SIM_F_FILE: return "FILE_TYPE_FILE";
	case SIM_F_DIR: return "FILE_TYPE_DIRECTORY";
	case SIM_F_LINK: return "FILE_TYPE_SYMLINK";
	default: return NULL; /* FILE_TYPE_UNSPECIFIED: proto3 JSON omits it */
	}
}

static json_t *
entry_info(const sim_fnode *n)
{
	char perm[11], t[40], size[24];
	const char *slash = strrchr(n->path, '/'), *type = type_name(n->type);
	json_t *e;

	sim_fs_perm_string(n, perm);
	sim_time(n->mtime_ms, t, sizeof(t));
	snprintf(size, sizeof(size), "%zu", n->type == SIM_F_FILE ? n->len : (size_t)4096);
	e = json_pack("{s:s,s:s,s:s,s:I,s:s,s:s,s:s,s:s}", "name", slash[1] ? slash + 1 : "/",
	        "path", n->path, "size", size, "mode", (json_int_t)n->mode, "permissions", perm,
	        "owner", "user", "group", "user", "modifiedTime", t);
	if (type)
		json_object_set_new(e, "type", json_string(type));
	if (n->target)
		json_object_set_new(e, "symlinkTarget", json_string(n->target));
	return e;
}

/* ---- Connect unary ---- */

static void
rpc_error(sim *s, sim_req *r, int status, const char *code, const char *msg)
{
	sim_reply_json(s, r, status, json_pack("{s:s,s:s}", "code", code, "message", msg));
}

/* The request's "path", normalized; NULL once replied. */
static char *
rpc_path(sim *s, sim_req *r, sim_fs *fs, json_t *doc)
{
	const char *p = json_string_value(json_object_get(doc, "path"));
	char *path = p ? sim_fs_path(fs, p) : NULL;

	if (path == NULL)
		rpc_error(s, r, 400, "invalid_argument", "path: required");
	return path;
}

static void
list_dir(sim *s, sim_req *r, sim_fs *fs, const char *path, json_t *doc)
{
	json_int_t depth = json_integer_value(json_object_get(doc, "depth"));
	sim_fnode *dir = sim_fs_resolve(fs, path);
	json_t *entries;
	size_t first, n;

	if (dir == NULL)
		return rpc_error(s, r, 404, "not_found", "directory not found");
	if (dir->type != SIM_F_DIR)
		return rpc_error(s, r, 400, "invalid_argument", "path is not a directory");
	entries = json_array();
	n = sim_fs_subtree(fs, dir->path, &first);
	for (size_t i = first; i < first + n; i++)
		if (sim_fs_depth_below(dir->path, fs->items[i]->path) <= (depth > 1 ? depth : 1))
			json_array_append_new(entries, entry_info(fs->items[i]));
	sim_reply_json(s, r, 200, json_pack("{s:o}", "entries", entries));
}

static void
make_dir(sim *s, sim_req *r, sim_fs *fs, const char *path)
{
	int rc = sim_fs_mkdir(fs, path, 0755, true);

	if (rc == -EEXIST)
		rpc_error(s, r, 409, "already_exists", "directory already exists");
	else if (rc != 0)
		rpc_error(s, r, 400, "invalid_argument", "a parent is not a directory");
	else
		sim_reply_json(
		        s, r, 200, json_pack("{s:o}", "entry", entry_info(sim_fs_get(fs, path))));
}

static void
filesystem_rpc(sim *s, sim_req *r, sim_fs *fs)
{
	const char *ctype = sim_req_header(r, "Content-Type"), *m = r->segs[1];
	json_t *doc;
	char *path;
	sim_fnode *n;

	if (ctype == NULL || strncmp(ctype, "application/json", 16) != 0)
		return sim_reply_text(r, 415, "text/plain", "want Content-Type application/json\n");
	if ((doc = json_loadb(r->body ? r->body : "{}", r->body_len ? r->body_len : 2, 0, NULL)) ==
	        NULL)
		return rpc_error(s, r, 400, "invalid_argument", "body is not JSON");
	if ((path = rpc_path(s, r, fs, doc)) != NULL) {
		if (strcmp(m, "ListDir") == 0)
			list_dir(s, r, fs, path, doc);
		else if (strcmp(m, "MakeDir") == 0)
			make_dir(s, r, fs, path);
		else if (strcmp(m, "Stat") != 0)
			rpc_error(s, r, 501, "unimplemented", "method not simulated");
		else if ((n = sim_fs_get(fs, path)) == NULL)
			rpc_error(s, r, 404, "not_found", "file or directory not found");
		else
			sim_reply_json(s, r, 200, json_pack("{s:o}", "entry", entry_info(n)));
	}
	free(path);
	json_decref(doc);
}

/* ---- GET /files ---- */

static void
envd_error(sim *s, sim_req *r, int status, const char *msg)
{
	sim_reply_json(s, r, status, json_pack("{s:i,s:s}", "code", status, "message", msg));
}

static void
download(sim *s, sim_req *r, sim_fs *fs)
{
	char *path = sim_fs_path(fs, sim_req_arg(r, "path"));
	sim_fnode *n = path ? sim_fs_resolve(fs, path) : NULL;
	char *copy;

	if (path == NULL)
		envd_error(s, r, 400, "path: required");
	else if (n == NULL)
		envd_error(s, r, 404, "path not found");
	else if (n->type != SIM_F_FILE)
		envd_error(s, r, 400, "path is not a regular file");
	else {
		copy = sk_malloc(n->len + 1);
		if (n->len)
			memcpy(copy, n->data, n->len);
		sim_reply_owned(r, 200, "application/octet-stream", copy, n->len);
	}
	free(path);
}

/* ---- POST /files ---- */

static enum MHD_Result
on_part(void *cls, enum MHD_ValueKind kind, const char *key, const char *filename,
        const char *ctype, const char *encoding, const char *data, uint64_t off, size_t size)
{
	sim_upload *u = cls;
	sim_upload_part *p;

	if (strcmp(key, u->field) != 0)
		return MHD_YES;
	if (off == 0) {
		if (u->n == UPLOAD_MAX_PARTS)
			return MHD_NO;
		u->parts = sk_realloc(u->parts, (u->n + 1) * sizeof(*u->parts));
		p = &u->parts[u->n++];
		p->filename = sk_strdup(filename);
		p->data = (sk_buf)SK_BUF_INIT(0);
	}
	if (u->n == 0)
		return MHD_NO;
	p = &u->parts[u->n - 1];
	return size == 0 || sk_buf_append(&p->data, data, size) == SK_OK ? MHD_YES : MHD_NO;
}

int
sim_upload_parse(sim_req *r, const char *field, sim_upload *u)
{
	struct MHD_PostProcessor *pp;
	enum MHD_Result ok;

	memset(u, 0, sizeof(*u));
	u->field = field;
	if ((pp = MHD_create_post_processor(r->conn, 65536, on_part, u)) == NULL)
		return -1;
	ok = MHD_post_process(pp, r->body ? r->body : "", r->body_len);
	MHD_destroy_post_processor(pp);
	return ok == MHD_YES ? 0 : -1;
}

void
sim_upload_dispose(sim_upload *u)
{
	for (size_t i = 0; i < u->n; i++) {
		free(u->parts[i].filename);
		sk_buf_dispose(&u->parts[i].data);
	}
	free(u->parts);
	memset(u, 0, sizeof(*u));
}

/* Stores data at want (normalized) and adds its {name, type, path} to out. */
static int
store(sim_fs *fs, const char *want, char *data, size_t len, json_t *out)
{
	char *path = sim_fs_path(fs, want);
	int rc = path ? sim_fs_put(fs, path, data, len) : -EINVAL;

	if (path == NULL)
		free(data);
	if (rc == 0)
		json_array_append_new(out,
		        json_pack("{s:s,s:s,s:s}", "name", strrchr(path, '/') + 1, "type", "file",
		                "path", path));
	free(path);
	return rc;
}

static char *
take_body(sim_req *r)
{
	char *data = r->body ? r->body : sk_strdup("");

	r->body = NULL;
	r->body_len = 0;
	return data;
}

static void
upload(sim *s, sim_req *r, sim_fs *fs)
{
	const char *ctype = sim_req_header(r, "Content-Type"), *path = sim_req_arg(r, "path");
	json_t *out = json_array();
	sim_upload u;
	int rc = 0;

	if (ctype && strncmp(ctype, "application/octet-stream", 24) == 0) {
		size_t len = r->body_len;
		rc = path ? store(fs, path, take_body(r), len, out) : -EINVAL;
	} else if (sim_upload_parse(r, "file", &u) != 0 || u.n == 0) {
		rc = -EINVAL;
		sim_upload_dispose(&u);
	} else {
		for (size_t i = 0; i < u.n && rc == 0; i++) {
			const char *want = path && u.n == 1 ? path : u.parts[i].filename;
			size_t len = u.parts[i].data.len;
			char *data = u.parts[i].data.data ? sk_buf_detach(&u.parts[i].data)
			                                  : sk_strdup("");
			rc = want ? store(fs, want, data, len, out) : (free(data), -EINVAL);
		}
		sim_upload_dispose(&u);
	}
	if (rc == 0)
		sim_reply_json(s, r, 200, out);
	else {
		json_decref(out);
		envd_error(s, r, 400,
		        rc == -EINVAL
		                ? "want a multipart part \"file\" or an octet-stream with ?path"
		                : "a parent of the path is not a directory, or it is one");
	}
}

void
sim_envd_files(sim *s, sim_req *r, sim_sandbox *sb)
{
	sim_fs *fs = sim_sandbox_fs(s, sb);

	if (r->ep == SIM_EP_FILESYSTEM && strcmp(r->method, "POST") == 0)
		filesystem_rpc(s, r, fs);
	else if (r->ep == SIM_EP_FILES && strcmp(r->method, "GET") == 0)
		download(s, r, fs);
	else if (r->ep == SIM_EP_FILES && strcmp(r->method, "POST") == 0)
		upload(s, r, fs);
	else
		sim_reply_text(r, 405, "text/plain", "method not allowed\n");
}
