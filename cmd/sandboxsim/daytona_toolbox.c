/*
 * sandboxsim Daytona toolbox, reached through the toolboxProxyUrl the
 * control plane hands out (http://<Host>/toolbox, the SDK appends /{id}):
 *   POST /toolbox/{id}/process/execute {command, cwd?, envs?, timeout?}
 *        -> {exitCode, result}; a tiny command set: echo, cat, printenv,
 *        true, false (anything else: 127, "command not found").
 *   GET  /toolbox/{id}/files?path=      -> [FileInfo] (the directory's entries)
 *   GET  /toolbox/{id}/files/download?path= -> the bytes
 *   POST /toolbox/{id}/files/bulk-download {paths} -> multipart/form-data, one
 *        part per path: name "file" (the bytes) or "error" (JSON), filename = path
 *   POST /toolbox/{id}/files/bulk-upload  multipart: files[i].path, files[i].file
 *        (parsed with libmicrohttpd's post processor)
 * The files live in memory per sandbox and survive stop/start/archive; a
 * stopped sandbox answers 400 like Daytona's proxy. Relative paths resolve
 * under /home/daytona.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define TB_HOME "/home/daytona"
#define TB_BOUNDARY "sandboxsim-toolbox-7f3a9c1e5d"
#define TB_MAX_FILES 16
#define TB_MAX_OUTPUT (1 << 20)
#define TB_NOT_FOUND                                                                               \
	"{\"message\":\"file not found\",\"statusCode\":404,\"code\":\"FILE_NOT_FOUND\"}"

typedef struct sim_dt_file {
	struct sim_dt_file *next;
	char sbid[40];
	char *path;
	char *data;
	size_t len;
	int64_t mtime_ms;
} sim_dt_file;

static char *
abs_path(const char *path)
{
	if (path == NULL || *path == '\0')
		return sk_strdup(TB_HOME);
	if (path[0] == '/')
		return sk_strdup(path);
	return sk_asprintf("%s/%s", TB_HOME, path);
}

static sim_dt_file *
file_find(sim *s, const char *id, const char *path)
{
	for (sim_dt_file *f = s->dt_files; f; f = f->next)
		if (strcmp(f->sbid, id) == 0 && strcmp(f->path, path) == 0)
			return f;
	return NULL;
}

/* Stores (or replaces) a file; takes data. */
static void
file_put(sim *s, const char *id, const char *path, char *data, size_t len)
{
	sim_dt_file *f = file_find(s, id, path);

	if (f == NULL) {
		f = sk_calloc(1, sizeof(*f));
		snprintf(f->sbid, sizeof(f->sbid), "%s", id);
		f->path = sk_strdup(path);
		f->next = s->dt_files;
		s->dt_files = f;
	}
	free(f->data);
	f->data = data;
	f->len = len;
	f->mtime_ms = sk_now_ms();
}

void
sim_daytona_files_drop(sim *s, const char *id)
{
	sim_dt_file **pp = &s->dt_files;

	while (*pp) {
		sim_dt_file *f = *pp;
		if (strcmp(f->sbid, id) != 0) {
			pp = &f->next;
			continue;
		}
		*pp = f->next;
		free(f->path);
		free(f->data);
		free(f);
	}
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
run_cat(sim *s, const char *id, char **argv, int argc, sk_buf *out)
{
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		char *path = abs_path(argv[i]);
		sim_dt_file *f = file_find(s, id, path);
		if (f)
			sk_buf_append(out, f->data, f->len);
		else
			sk_buf_printf(out, "cat: %s: No such file or directory\n", argv[i]), rc = 1;
		free(path);
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
		rc = run_cat(s, sb->id, argv, argc, out);
	} else if (strcmp(argv[0], "printenv") == 0) {
		rc = run_printenv(sb, envs, argv, argc, out);
	} else if (strcmp(argv[0], "true") == 0 || strcmp(argv[0], "false") == 0) {
		rc = argv[0][0] == 'f';
	} else {
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
file_info(const char *name, const char *path, bool dir, size_t size, int64_t mtime)
{
	char t[40];

	sim_time(mtime, t, sizeof(t));
	return json_pack("{s:s,s:s,s:b,s:I,s:s,s:s,s:s,s:s,s:s,s:s}", "name", name, "path", path,
	        "isDir", dir, "size", (json_int_t)size, "mode", dir ? "drwxr-xr-x" : "-rw-r--r--",
	        "permissions", dir ? "0755" : "0644", "owner", "daytona", "group", "daytona",
	        "modTime", t, "modifiedAt", t);
}

/* The directory's entries: its files and (once each) the subdirectories on the way to deeper ones. */
static void
h_list_files(sim *s, sim_req *r, const char *id)
{
	char *dir = abs_path(sim_req_arg(r, "path"));
	size_t dl = strlen(dir);
	json_t *arr = json_array(), *seen = json_object();

	for (sim_dt_file *f = s->dt_files; f; f = f->next) {
		const char *rest = f->path + dl, *slash;
		char *name;
		if (strcmp(f->sbid, id) != 0 || strncmp(f->path, dir, dl) != 0 || *rest != '/')
			continue;
		rest++;
		slash = strchr(rest, '/');
		name = slash ? sk_asprintf("%.*s", (int)(slash - rest), rest) : sk_strdup(rest);
		if (json_object_get(seen, name) == NULL) {
			char *full = sk_asprintf("%s/%s", dir, name);
			json_object_set_new(seen, name, json_true());
			json_array_append_new(arr,
			        file_info(name, full, slash != NULL, slash ? 4096 : f->len,
			                f->mtime_ms));
			free(full);
		}
		free(name);
	}
	json_decref(seen);
	free(dir);
	sim_reply_json(s, r, 200, arr);
}

static void
h_download(sim *s, sim_req *r, const char *id)
{
	char *path = abs_path(sim_req_arg(r, "path"));
	sim_dt_file *f = file_find(s, id, path);

	if (f == NULL) {
		daemon_error(s, r, 404, "FILE_NOT_FOUND", "file not found");
	} else {
		char *copy = sk_malloc(f->len + 1);
		memcpy(copy, f->data, f->len);
		sim_reply_owned(r, 200, "application/octet-stream", copy, f->len);
	}
	free(path);
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
h_bulk_download(sim *s, sim_req *r, const char *id)
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
		char *path = abs_path(want);
		sim_dt_file *f = file_find(s, id, path);
		if (f)
			part(&b, "file", want, "application/octet-stream", f->data, f->len);
		else
			part(&b, "error", want, "application/json", TB_NOT_FOUND,
			        strlen(TB_NOT_FOUND));
		free(path);
	}
	sk_buf_printf(&b, "--" TB_BOUNDARY "--\r\n");
	json_decref(doc);
	len = b.len;
	sim_reply_owned(
	        r, 200, "multipart/form-data; boundary=" TB_BOUNDARY, sk_buf_detach(&b), len);
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
h_bulk_upload(sim *s, sim_req *r, const char *id)
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
		char *path;
		size_t len = u.data[i].len;
		if (!u.has_data[i] || u.path[i].len == 0)
			continue;
		path = abs_path(u.path[i].data);
		file_put(s, id, path, u.data[i].data ? sk_buf_detach(&u.data[i]) : sk_strdup(""),
		        len);
		free(path);
		stored++;
	}
	upload_dispose(&u);
	if (stored == 0)
		sim_reply_error(s, r, 400, "no files in the upload");
	else
		sim_reply_empty(r, 200);
}

/* ---- routing ---- */

static void
serve(sim *s, sim_req *r, sim_sandbox *sb, char **seg, int n)
{
	bool get = strcmp(r->method, "GET") == 0, post = strcmp(r->method, "POST") == 0;

	if (post && n == 2 && strcmp(seg[0], "process") == 0 && strcmp(seg[1], "execute") == 0)
		h_execute(s, r, sb);
	else if (n < 1 || strcmp(seg[0], "files") != 0)
		sim_reply_error(s, r, 404, "Cannot %s %s", r->method, r->url);
	else if (get && n == 1)
		h_list_files(s, r, sb->id);
	else if (get && n == 2 && strcmp(seg[1], "download") == 0)
		h_download(s, r, sb->id);
	else if (post && n == 2 && strcmp(seg[1], "bulk-download") == 0)
		h_bulk_download(s, r, sb->id);
	else if (post && n == 2 && strcmp(seg[1], "bulk-upload") == 0)
		h_bulk_upload(s, r, sb->id);
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
	}
	pthread_mutex_unlock(&s->lock);
}
