/*
 * sandboxsim Daytona toolbox, reached through the toolboxProxyUrl the
 * control plane hands out (http://<Host>/toolbox, the SDK appends /{id}):
 *   POST /toolbox/{id}/process/execute {command, cwd?, envs?, timeout?}
 *        -> {exitCode, result}; a tiny command set: echo, cat, printenv,
 *        true, false and the tree's mkdir -p, ln -s, chmod, readlink, mkfifo,
 *        rm -rf (anything else: 127, "command not found").
 *   GET  /toolbox/{id}/files?path=&depth= -> [FileInfo] (depth levels, default 1;
 *        mode is Go's FileMode string: "Lrwxrwxrwx" for a symlink)
 *   GET  /toolbox/{id}/files/info?path=   -> FileInfo (symlinks not followed)
 *   GET  /toolbox/{id}/files/download?path= -> the bytes
 *   POST /toolbox/{id}/files/upload-v2?path= multipart, part "file"
 *   POST /toolbox/{id}/files/folder?path=&mode= and /files/permissions?path=&mode=
 *   POST /toolbox/{id}/files/bulk-download {paths} -> multipart/form-data, one
 *        part per path: name "file" (the bytes) or "error" (JSON), filename = path
 *   POST /toolbox/{id}/files/bulk-upload  multipart: files[i].path, files[i].file
 *        (parsed with libmicrohttpd's post processor)
 * The files are the sandbox's tree (fs.c), shared with the envd file API;
 * they survive stop/start/archive; a stopped sandbox answers 400 like
 * Daytona's proxy. Relative paths resolve under /home/daytona.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define TB_BOUNDARY "sandboxsim-toolbox-7f3a9c1e5d"
#define TB_MAX_FILES 16
#define TB_MAX_OUTPUT (1 << 20)
#define TB_NOT_FOUND                                                                               \
	"{\"message\":\"file not found\",\"statusCode\":404,\"code\":\"FILE_NOT_FOUND\"}"

/* The sandbox's tree (relative paths resolve under /home/daytona). */
static sim_fs *
tree(sim *s, const sim_sandbox *sb)
{
	return sim_sandbox_fs(s, (sim_sandbox *)sb);
}

/* The regular file at path (symlinks followed), or NULL. */
static sim_fnode *
file_at(sim_fs *fs, const char *path)
{
	char *abs = sim_fs_path(fs, path);
	sim_fnode *n = abs ? sim_fs_resolve(fs, abs) : NULL;

	free(abs);
	return n && n->type == SIM_F_FILE ? n : NULL;
}

static void
daemon_error(sim *s, sim_req *r, int status, const char *code, const char *msg)
{
	sim_reply_json(s, r, status,
	        json_pack("{s:i,s:s,s:s,s:s}", "statusCode", status, "message", msg, "code", code,
	                "source", "DAYTONA_DAEMON"));
}

/* ---- process/execute ---- */

/* Splits on blanks; '...' and "..." group. Returns the count (at most max). */
static int
split_words(char *line, char **argv, int max)
{
	int n = 0;
	char *p = line, *w;

	while (*p && n < max) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\0')
			break;
		argv[n++] = w = p;
		while (*p && *p != ' ' && *p != '\t') {
			char q = *p;
			if (q == '\'' || q == '"') {
				char *end = strchr(p + 1, q);
				size_t len = end ? (size_t)(end - p - 1) : strlen(p + 1);
				memmove(w, p + 1, len);
				w += len;
				p += len + 1 + (end != NULL);
			} else {
				*w++ = *p++;
			}
		}
		if (*p)
			p++;
		*w = '\0';
	}
	return n;
}

static int
run_cat(sim_fs *fs, char **argv, int argc, sk_buf *out)
{
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		sim_fnode *f = file_at(fs, argv[i]);
		if (f)
			sk_buf_append(out, f->data, f->len);
		else
			sk_buf_printf(out, "cat: %s: No such file or directory\n", argv[i]), rc = 1;
	}
	return rc;
}

static int
run_printenv(const sim_sandbox *sb, json_t *envs, char **argv, int argc, sk_buf *out)
{
	for (int i = 1; i < argc; i++) {
		json_t *v = json_object_get(envs, argv[i]);
		const char *have =
		        json_is_string(v) ? json_string_value(v) : sim_kv_get(&sb->env, argv[i]);
		if (have == NULL)
			return 1;
		sk_buf_printf(out, "%s\n", have);
	}
	return argc > 1 ? 0 : 1;
}

static int
run(sim *s, const sim_sandbox *sb, const char *command, json_t *envs, sk_buf *out)
{
	char *line = sk_strdup(command), *argv[64];
	int argc = split_words(line, argv, 64), rc = 0;

	if (argc == 0) {
		rc = 0;
	} else if (strcmp(argv[0], "echo") == 0) {
		for (int i = 1; i < argc; i++)
			sk_buf_printf(out, "%s%s", i > 1 ? " " : "", argv[i]);
		sk_buf_append(out, "\n", 1);
	} else if (strcmp(argv[0], "cat") == 0) {
		rc = run_cat(tree(s, sb), argv, argc, out);
	} else if (strcmp(argv[0], "printenv") == 0) {
		rc = run_printenv(sb, envs, argv, argc, out);
	} else if (strcmp(argv[0], "true") == 0 || strcmp(argv[0], "false") == 0) {
		rc = argv[0][0] == 'f';
	} else if ((rc = sim_net_command(sb, argc, argv, out, out)) >= 0) {
		/* curl, wget, nc: as the sandbox's network policy lets them */
	} else if ((rc = sim_fs_command(tree(s, sb), argc, argv, out, out)) < 0) {
		sk_buf_printf(out, "sh: 1: %s: not found\n", argv[0]);
		rc = 127;
	}
	free(line);
	return rc;
}

static void
h_execute(sim *s, sim_req *r, sim_sandbox *sb)
{
	json_t *doc = sim_req_json(s, r, false), *cmd, *result;
	sk_buf out = SK_BUF_INIT(TB_MAX_OUTPUT);
	int rc;

	if (doc == NULL)
		return;
	cmd = json_object_get(doc, "command");
	if (!json_is_string(cmd) || json_string_length(cmd) == 0) {
		sim_reply_error(s, r, 400, "command is required");
	} else {
		rc = run(s, sb, json_string_value(cmd), json_object_get(doc, "envs"), &out);
		result = json_stringn(out.data ? out.data : "", out.len);
		if (result == NULL) /* not UTF-8 (cat of a binary file) */
			result = json_string("(binary output)");
		sim_reply_json(s, r, 200, json_pack("{s:i,s:o}", "exitCode", rc, "result", result));
	}
	sk_buf_dispose(&out);
	json_decref(doc);
}

/* ---- files ---- */

static json_t *
file_info(const sim_fnode *n)
{
	char t[40], perm[11], octal[8];
	const char *slash = strrchr(n->path, '/');
	size_t size = n->type == SIM_F_FILE ? n->len
	        : n->type == SIM_F_LINK     ? strlen(n->target)
	                                    : (size_t)4096;

	sim_time(n->mtime_ms, t, sizeof(t));
	sim_fs_perm_string(n, perm);
	snprintf(octal, sizeof(octal), "%04o", (unsigned)n->mode);
	return json_pack("{s:s,s:s,s:b,s:I,s:s,s:s,s:s,s:s,s:s,s:s}", "name",
	        slash[1] ? slash + 1 : "/", "path", n->path, "isDir", n->type == SIM_F_DIR, "size",
	        (json_int_t)size, "mode", perm, "permissions", octal, "owner", "daytona", "group",
	        "daytona", "modTime", t, "modifiedAt", t);
}

/* The normalized ?path= (home when absent); NULL once replied. */
static char *
arg_path(sim *s, sim_req *r, sim_fs *fs)
{
	char *path = sim_fs_path(fs, sim_req_arg(r, "path"));

	if (path == NULL)
		daemon_error(s, r, 400, "INVALID_PATH", "path must not contain '..'");
	return path;
}

/* GET /files?path=&depth=: the directory's entries, depth levels down (default 1). */
static void
h_list_files(sim *s, sim_req *r, sim_fs *fs)
{
	const char *d = sim_req_arg(r, "depth");
	int depth = d ? atoi(d) : 1;
	char *dir = arg_path(s, r, fs);
	sim_fnode *n = dir ? sim_fs_resolve(fs, dir) : NULL;
	json_t *arr;
	size_t first, count;

	if (dir && (n == NULL || n->type != SIM_F_DIR))
		daemon_error(s, r, 404, "FILE_NOT_FOUND", "directory not found");
	if (n == NULL || n->type != SIM_F_DIR) {
		free(dir);
		return;
	}
	arr = json_array();
	count = sim_fs_subtree(fs, n->path, &first);
	for (size_t i = first; i < first + count; i++)
		if (sim_fs_depth_below(n->path, fs->items[i]->path) <= (depth > 1 ? depth : 1))
			json_array_append_new(arr, file_info(fs->items[i]));
	free(dir);
	sim_reply_json(s, r, 200, arr);
}

/* GET /files/info?path= (symlinks not followed) */
static void
h_info(sim *s, sim_req *r, sim_fs *fs)
{
	char *path = arg_path(s, r, fs);
	sim_fnode *n = path ? sim_fs_get(fs, path) : NULL;

	if (path && n == NULL)
		daemon_error(s, r, 404, "FILE_NOT_FOUND", "file not found");
	else if (n)
		sim_reply_json(s, r, 200, file_info(n));
	free(path);
}

static void
h_download(sim *s, sim_req *r, sim_fs *fs)
{
	sim_fnode *f = file_at(fs, sim_req_arg(r, "path"));
	char *copy;

	if (f == NULL) {
		daemon_error(s, r, 404, "FILE_NOT_FOUND", "file not found");
		return;
	}
	copy = sk_malloc(f->len + 1);
	if (f->len)
		memcpy(copy, f->data, f->len);
	sim_reply_owned(r, 200, "application/octet-stream", copy, f->len);
}

static void
part(sk_buf *b, const char *name, const char *filename, const char *ctype, const char *data,
        size_t len)
{
	sk_buf_printf(b,
	        "--" TB_BOUNDARY "\r\nContent-Disposition: form-data; name=\"%s\"; "
	        "filename=\"%s\"\r\nContent-Type: %s\r\n\r\n",
	        name, filename, ctype);
	sk_buf_append(b, data, len);
	sk_buf_append(b, "\r\n", 2);
}

static void
h_bulk_download(sim *s, sim_req *r, sim_fs *fs)
{
	json_t *doc = sim_req_json(s, r, false), *paths, *p;
	sk_buf b = SK_BUF_INIT(0);
	size_t i, len;

	if (doc == NULL)
		return;
	paths = json_object_get(doc, "paths");
	if (!json_is_array(paths) || json_array_size(paths) == 0) {
		json_decref(doc);
		sim_reply_error(s, r, 400, "paths must be a non-empty array of strings");
		return;
	}
	json_array_foreach(paths, i, p)
	{
		const char *want = json_is_string(p) ? json_string_value(p) : "";
		sim_fnode *f = file_at(fs, want);
		if (f)
			part(&b, "file", want, "application/octet-stream", f->data, f->len);
		else
			part(&b, "error", want, "application/json", TB_NOT_FOUND,
			        strlen(TB_NOT_FOUND));
	}
	sk_buf_printf(&b, "--" TB_BOUNDARY "--\r\n");
	json_decref(doc);
	len = b.len;
	sim_reply_owned(
	        r, 200, "multipart/form-data; boundary=" TB_BOUNDARY, sk_buf_detach(&b), len);
}

/* Stores a part's bytes at want; false when the path cannot hold a file. */
static bool
store(sim_fs *fs, const char *want, sk_buf *data)
{
	char *path = sim_fs_path(fs, want);
	size_t len = data->len;
	int rc = -1;

	if (path)
		rc = sim_fs_put(fs, path, data->data ? sk_buf_detach(data) : sk_strdup(""), len);
	free(path);
	return rc == 0;
}

/* POST /files/upload-v2?path=: multipart, part "file" */
static void
h_upload(sim *s, sim_req *r, sim_fs *fs)
{
	const char *path = sim_req_arg(r, "path");
	sim_upload u;

	if (path == NULL || sim_upload_parse(r, "file", &u) != 0 || u.n != 1)
		sim_reply_error(s, r, 400, "want ?path= and one multipart part \"file\"");
	else if (!store(fs, path, &u.parts[0].data))
		daemon_error(
		        s, r, 400, "INVALID_PATH", "a parent is not a directory, or it is one");
	else
		sim_reply_empty(r, 200);
	sim_upload_dispose(&u);
}
/* multipart upload: files[i].path and files[i].file */
struct upload {
	sk_buf path[TB_MAX_FILES];
	sk_buf data[TB_MAX_FILES];
	bool has_data[TB_MAX_FILES];
	bool bad;
};

static enum MHD_Result
on_part(void *cls, enum MHD_ValueKind kind, const char *key, const char *filename,
        const char *ctype, const char *encoding, const char *data, uint64_t off, size_t size)
{
	struct upload *u = cls;
	char what[8];
	int i, used = 0;

	if (sscanf(key, "files[%d].%7[a-z]%n", &i, what, &used) != 2 || key[used] != '\0' ||
	        i < 0 || i >= TB_MAX_FILES ||
	        (strcmp(what, "path") != 0 && strcmp(what, "file") != 0)) {
		u->bad = true;
		return MHD_NO;
	}
	if (what[0] == 'p') {
		sk_buf_append(&u->path[i], data, size);
	} else {
		u->has_data[i] = true;
		sk_buf_append(&u->data[i], data, size);
	}
	return MHD_YES;
}

static void
upload_dispose(struct upload *u)
{
	for (int i = 0; i < TB_MAX_FILES; i++) {
		sk_buf_dispose(&u->path[i]);
		sk_buf_dispose(&u->data[i]);
	}
}

static void
h_bulk_upload(sim *s, sim_req *r, sim_fs *fs)
{
	struct upload u = { 0 };
	struct MHD_PostProcessor *pp = MHD_create_post_processor(r->conn, 65536, on_part, &u);
	int stored = 0;

	if (pp == NULL) {
		sim_reply_error(s, r, 400, "request body must be multipart/form-data");
		return;
	}
	if (MHD_post_process(pp, r->body ? r->body : "", r->body_len) != MHD_YES || u.bad) {
		MHD_destroy_post_processor(pp);
		upload_dispose(&u);
		sim_reply_error(
		        s, r, 400, "invalid multipart body: want files[i].path and files[i].file");
		return;
	}
	MHD_destroy_post_processor(pp);
	for (int i = 0; i < TB_MAX_FILES; i++) {
		if (u.has_data[i] && u.path[i].len > 0 && store(fs, u.path[i].data, &u.data[i]))
			stored++;
	}
	upload_dispose(&u);
	if (stored == 0)
		sim_reply_error(s, r, 400, "no files in the upload");
	else
		sim_reply_empty(r, 200);
}

/* The octal ?mode= (0 when absent), or -1 when malformed. */
static long
arg_mode(sim_req *r)
{
	const char *m = sim_req_arg(r, "mode");
	char *end;
	long mode;

	if (m == NULL || *m == '\0')
		return 0;
	mode = strtol(m, &end, 8);
	return *end || mode < 0 || mode > 07777 ? -1 : mode;
}

/* POST /files/folder?path=&mode= (parents made; an existing directory is left as
 * it is, like MkdirAll) and /files/permissions?path=&mode= */
static void
h_mode(sim *s, sim_req *r, sim_fs *fs, bool folder)
{
	char *path = arg_path(s, r, fs);
	long mode = arg_mode(r);
	int rc = 0;

	if (path == NULL)
		return;
	if (mode < 0) {
		daemon_error(s, r, 400, "INVALID_MODE", "mode must be octal, like 0755");
		free(path);
		return;
	}
	if (folder) /* MkdirAll: an existing directory keeps its mode */
		rc = sim_fs_mkdir(fs, path, mode ? (uint32_t)mode : 0755, true);
	else if (mode > 0)
		rc = sim_fs_chmod(fs, path, (uint32_t)mode);
	if (rc == -EEXIST)
		rc = 0;
	if (rc == -ENOENT)
		daemon_error(s, r, 404, "FILE_NOT_FOUND", "file not found");
	else if (rc != 0)
		daemon_error(s, r, 400, "INVALID_PATH", "a parent is not a directory");
	else
		sim_reply_empty(r, 200);
	free(path);
}

/* ---- routing ---- */

static void
serve(sim *s, sim_req *r, sim_sandbox *sb, char **seg, int n)
{
	bool get = strcmp(r->method, "GET") == 0, post = strcmp(r->method, "POST") == 0;
	sim_fs *fs = tree(s, sb);

	if (post && n == 2 && strcmp(seg[0], "process") == 0 && strcmp(seg[1], "execute") == 0)
		h_execute(s, r, sb);
	else if (n < 1 || strcmp(seg[0], "files") != 0)
		sim_reply_error(s, r, 404, "Cannot %s %s", r->method, r->url);
	else if (get && n == 1)
		h_list_files(s, r, fs);
	else if (get && n == 2 && strcmp(seg[1], "info") == 0)
		h_info(s, r, fs);
	else if (get && n == 2 && strcmp(seg[1], "download") == 0)
		h_download(s, r, fs);
	else if (post && n == 2 && strcmp(seg[1], "bulk-download") == 0)
		h_bulk_download(s, r, fs);
	else if (post && n == 2 && strcmp(seg[1], "bulk-upload") == 0)
		h_bulk_upload(s, r, fs);
	else if (post && n == 2 && strcmp(seg[1], "upload-v2") == 0)
		h_upload(s, r, fs);
	else if (post && n == 2 && strcmp(seg[1], "folder") == 0)
		h_mode(s, r, fs, true);
	else if (post && n == 2 && strcmp(seg[1], "permissions") == 0)
		h_mode(s, r, fs, false);
	else
		sim_reply_error(s, r, 404, "Cannot %s %s", r->method, r->url);
}

void
sim_daytona_toolbox(sim *s, sim_req *r)
{
	const char *id = r->segs[1];
	char **seg = r->segs + 2;
	int n = r->nseg - 2;
	int64_t now = sk_now_ms();
	sim_sandbox *sb;

	if (n > 0 && strcmp(seg[0], "toolbox") == 0) /* the older /toolbox/{id}/toolbox/... */
		seg++, n--;
	pthread_mutex_lock(&s->lock);
	sb = sim_store_get(s, id, now);
	if (sb == NULL) {
		sim_reply_error(s, r, 404, "Sandbox with ID %s not found", id);
	} else if (sb->state != SIM_RUNNING) {
		sim_reply_error(
		        s, r, 400, "Sandbox %s is not running. Is the Sandbox started?", id);
	} else {
		sim_sandbox_touch(s, sb, now);
		serve(s, r, sb, seg, n);
		sim_mounts_push(s, sb);
	}
	pthread_mutex_unlock(&s->lock);
}
