/*
 * reconcile/archive: a space's workspace in an S3-compatible bucket,
 * moved by the existing copy engine (sandbox/workspace.c): the archive is
 * the engine's other side, a provider whose only capability is files.
 *
 *   PREFIX/files/<absolute path>   one object per regular file (streamed,
 *                                  multipart when large)
 *   PREFIX/manifest.json           written last: every entry's path, type,
 *                                  mode, size, SHA-256 (files) and target
 *                                  (symlinks)
 *
 * An archive without its manifest is incomplete: never restored from, and
 * nothing that depends on it (deleting the sandbox) may happen. Archiving
 * is copy, manifest, reload the manifest as stored, then the engine's
 * verify (the sandbox's files against the objects read back, hash for
 * hash). Restoring is load, copy into the sandbox, verify; every object
 * read is also checked against the manifest's SHA-256.
 */
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdlib.h>
#include <string.h>

#include "../api/kvlist.h"
#include "../api/sandbox_values.h"
#include "archive_int.h"

#define MANIFEST_MAX_BYTES ((size_t)64 << 20)

typedef struct arc_entry {
	sk_file_entry e;
	char sha256[65]; /* regular files; "" unknown */
} arc_entry;

struct sk_archive {
	sk_s3 *s3; /* borrowed */
	char *prefix;
	arc_entry *items;
	size_t len, cap;
	sk_provider *provider;
	sk_sandbox self; /* the archive as the engine's sandbox argument */
};

static const char *const type_names[] = { "file", "dir", "symlink", "other" };

static arc_entry *
find_entry(sk_archive *a, const char *path)
{
	for (size_t i = 0; i < a->len; i++) {
		if (strcmp(a->items[i].e.path, path) == 0)
			return &a->items[i];
	}
	return NULL;
}

static void
entry_dispose(arc_entry *x)
{
	free(x->e.path);
	free(x->e.link_target);
	memset(x, 0, sizeof(*x));
}

/* The entry for path (made when new, reset when it exists). */
static arc_entry *
put_entry(sk_archive *a, const sk_file_entry *e)
{
	arc_entry *x = find_entry(a, e->path);

	if (x == NULL) {
		if (a->len == a->cap) {
			a->cap = a->cap ? 2 * a->cap : 64;
			a->items = sk_realloc(a->items, a->cap * sizeof(*a->items));
		}
		x = &a->items[a->len++];
	} else {
		entry_dispose(x);
	}
	memset(x, 0, sizeof(*x));
	x->e.path = sk_strdup(e->path);
	x->e.type = e->type;
	x->e.size = e->size;
	x->e.mode = e->mode;
	x->e.link_target = sk_strdup(e->link_target);
	return x;
}

static char *
object_key(const sk_archive *a, const char *path)
{
	return sk_asprintf("%s/files%s%s", a->prefix, path[0] == '/' ? "" : "/", path);
}

static void
hex_of(const unsigned char d[32], char out[65])
{
	for (int i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* ---- the provider: files only ---- */

static int
unsupported(void)
{
	return SK_ENOTSUPPORTED;
}

static int
no_create(sk_provider *p, const sk_create_request *r, sk_sandbox *o, sk_error *e)
{
	return sk_error_set(e, unsupported(), "an archive has no sandboxes");
}
static int
no_get(sk_provider *p, const char *id, sk_sandbox *o, sk_error *e)
{
	return sk_error_set(e, unsupported(), "an archive has no sandboxes");
}
static int
no_list(sk_provider *p, const sk_kvlist *m, sk_sandbox_list *o, sk_error *e)
{
	return sk_error_set(e, unsupported(), "an archive has no sandboxes");
}
static int
no_connect(sk_provider *p, const char *id, int64_t t, sk_sandbox *o, bool *r, sk_error *e)
{
	return sk_error_set(e, unsupported(), "an archive has no sandboxes");
}
static int
no_id(sk_provider *p, const char *id, sk_error *e)
{
	return sk_error_set(e, unsupported(), "an archive has no sandboxes");
}
static int
no_timeout(sk_provider *p, const char *id, int64_t t, sk_error *e)
{
	return sk_error_set(e, unsupported(), "an archive has no sandboxes");
}
static int
no_probe(sk_provider *p, const sk_sandbox *sb, sk_health *h, int *st, sk_error *e)
{
	return sk_error_set(e, unsupported(), "an archive has no data plane");
}
static int
no_env(sk_provider *p, const sk_sandbox *sb, const sk_kvlist *env, sk_error *e)
{
	return sk_error_set(e, unsupported(), "an archive has no data plane");
}

static bool
under(const char *path, const char *root)
{
	size_t n = strlen(root);

	while (n > 1 && root[n - 1] == '/')
		n--;
	return strncmp(path, root, n) == 0 && path[n] == '/' && path[n + 1] != '\0';
}

static int
arc_list(sk_provider *p, const sk_sandbox *sb, const char *root, sk_file_list *out, sk_error *err)
{
	sk_archive *a = sk_provider_get_state(p);
	bool any = false;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < a->len; i++) {
		const sk_file_entry *e = &a->items[i].e;
		if (strcmp(e->path, root) == 0)
			any = true;
		if (!under(e->path, root))
			continue;
		if (out->len == out->cap) {
			out->cap = out->cap ? 2 * out->cap : 64;
			out->items = sk_realloc(out->items, out->cap * sizeof(*out->items));
		}
		out->items[out->len] = *e;
		out->items[out->len].path = sk_strdup(e->path);
		out->items[out->len].link_target = sk_strdup(e->link_target);
		out->len++;
		any = true;
	}
	if (!any)
		return sk_error_set(err, SK_ENOTFOUND, "archive %s: no %s", a->prefix, root);
	return 0;
}

/* A read checked against the manifest's SHA-256 when it ends. */
typedef struct arc_read {
	sk_file_sink_fn sink;
	void *payload;
	gnutls_hash_hd_t h;
} arc_read;

static int
arc_read_sink(void *arg, const void *buf, size_t len)
{
	arc_read *r = arg;

	if (gnutls_hash(r->h, buf, len) != 0)
		return SK_ERROR;
	return r->sink(r->payload, buf, len);
}

static int
arc_read_file(sk_provider *p, const sk_sandbox *sb, const char *path, sk_file_sink_fn sink,
        void *payload, sk_error *err)
{
	sk_archive *a = sk_provider_get_state(p);
	arc_entry *x = find_entry(a, path);
	arc_read r = { sink, payload, NULL };
	unsigned char d[32];
	char hex[65], *key;
	int rc;

	if (x == NULL || x->e.type != SK_FILE_REGULAR)
		return sk_error_set(err, SK_ENOTFOUND, "archive %s: no file %s", a->prefix, path);
	if (gnutls_hash_init(&r.h, GNUTLS_DIG_SHA256) != 0)
		return sk_error_set(err, SK_ERROR, "SHA-256: gnutls_hash_init failed");
	key = object_key(a, path);
	rc = sk_s3_get(a->s3, key, arc_read_sink, &r, err);
	gnutls_hash_deinit(r.h, d);
	free(key);
	hex_of(d, hex);
	if (rc == 0 && x->sha256[0] && strcmp(hex, x->sha256) != 0)
		rc = sk_error_set(err, SK_ECONFLICT,
		        "archive %s: %s differs from its manifest (sha256 %.12s, manifest %.12s)",
		        a->prefix, path, hex, x->sha256);
	return rc;
}

/* An upload hashed on the way (the manifest's SHA-256). */
typedef struct arc_write {
	sk_file_source_fn source;
	void *payload;
	gnutls_hash_hd_t h;
} arc_write;

static int64_t
arc_write_source(void *arg, void *buf, size_t len)
{
	arc_write *w = arg;
	int64_t n = w->source(w->payload, buf, len);

	if (n > 0 && gnutls_hash(w->h, buf, (size_t)n) != 0)
		return SK_ERROR;
	return n;
}

static int
arc_write_file(sk_provider *p, const sk_sandbox *sb, const sk_file_entry *e,
        sk_file_source_fn source, void *payload, sk_error *err)
{
	sk_archive *a = sk_provider_get_state(p);
	arc_write w = { source, payload, NULL };
	unsigned char d[32];
	char *key;
	arc_entry *x;
	int rc;

	if (e->type == SK_FILE_OTHER)
		return sk_error_set(
		        err, SK_EINVALID, "%s: a special file is not archived", e->path);
	if (e->type != SK_FILE_REGULAR) {
		put_entry(a, e);
		return 0;
	}
	if (gnutls_hash_init(&w.h, GNUTLS_DIG_SHA256) != 0)
		return sk_error_set(err, SK_ERROR, "SHA-256: gnutls_hash_init failed");
	key = object_key(a, e->path);
	rc = sk_s3_put(a->s3, key, e->size, arc_write_source, &w, err);
	gnutls_hash_deinit(w.h, d);
	free(key);
	if (rc != 0)
		return rc;
	x = put_entry(a, e);
	hex_of(d, x->sha256);
	return 0;
}

static const sk_provider_ops archive_ops = {
	.name = "archive",
	.create = no_create,
	.get = no_get,
	.list = no_list,
	.connect = no_connect,
	.pause = no_id,
	.kill = no_id,
	.set_timeout = no_timeout,
	.probe_health = no_probe,
	.init_env = no_env,
	.list_files = arc_list,
	.read_file = arc_read_file,
	.write_file = arc_write_file,
	.list_processes = NULL,
};

/* ---- the archive ---- */

sk_archive *
sk_archive_new(sk_s3 *s3, const char *prefix)
{
	sk_archive *a = sk_calloc(1, sizeof(*a));
	size_t n = strlen(prefix);

	while (n > 0 && prefix[n - 1] == '/')
		n--;
	a->s3 = s3;
	a->prefix = sk_strndup(prefix, n);
	a->provider = sk_provider_new_with_ops(&archive_ops, a);
	a->self.id = a->prefix;
	return a;
}

static void
clear_entries(sk_archive *a)
{
	for (size_t i = 0; i < a->len; i++)
		entry_dispose(&a->items[i]);
	a->len = 0;
}

void
sk_archive_free(sk_archive *a)
{
	if (a == NULL)
		return;
	clear_entries(a);
	free(a->items);
	sk_provider_free(a->provider);
	free(a->prefix);
	free(a);
}

size_t
sk_archive_entries(const sk_archive *a)
{
	return a->len;
}

int
sk_archive_commit(sk_archive *a, const char *space, int64_t now_ms, sk_error *err)
{
	json_t *doc = json_object(), *arr = json_array();
	char when[64], *text, *key;
	int rc;

	sk_time_format(now_ms, when, sizeof(when));
	for (size_t i = 0; i < a->len; i++) {
		const arc_entry *x = &a->items[i];
		json_t *o = json_pack("{s:s, s:s, s:i, s:I}", "path", x->e.path, "type",
		        type_names[x->e.type], "mode", (int)x->e.mode, "size",
		        (json_int_t)x->e.size);
		if (x->e.type == SK_FILE_REGULAR)
			json_object_set_new(o, "sha256", json_string(x->sha256));
		if (x->e.link_target != NULL)
			json_object_set_new(o, "target", json_string(x->e.link_target));
		json_array_append_new(arr, o);
	}
	json_object_set_new(doc, "version", json_integer(1));
	json_object_set_new(doc, "space", json_string(space ? space : ""));
	json_object_set_new(doc, "createdAt", json_string(when));
	json_object_set_new(doc, "entries", arr);
	text = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	key = sk_asprintf("%s/manifest.json", a->prefix);
	rc = sk_s3_put_bytes(a->s3, key, text, strlen(text), err);
	free(key);
	free(text);
	return rc;
}

static int
manifest_sink(void *arg, const void *buf, size_t len)
{
	return sk_buf_append(arg, buf, len) == 0 ? 0 : SK_ENOMEM;
}

static int
parse_type(const char *s)
{
	for (int t = 0; t < 3; t++) {
		if (s != NULL && strcmp(s, type_names[t]) == 0)
			return t;
	}
	return -1;
}

int
sk_archive_load(sk_archive *a, sk_error *err)
{
	sk_buf b = SK_BUF_INIT(MANIFEST_MAX_BYTES);
	char *key = sk_asprintf("%s/manifest.json", a->prefix);
	json_t *doc = NULL, *v;
	size_t i;
	int rc;

	clear_entries(a);
	rc = sk_s3_get(a->s3, key, manifest_sink, &b, err);
	/* a missing bucket is not an incomplete archive: its own error */
	if (rc == SK_ENOTFOUND && sk_s3_check_bucket(a->s3, err) == 0)
		sk_error_set(err, rc, "archive %s: no manifest (incomplete)", a->prefix);
	if (rc == 0 &&
	        ((doc = json_loadb(b.data ? b.data : "", b.len, 0, NULL)) == NULL ||
	                !json_is_array(json_object_get(doc, "entries"))))
		rc = sk_error_set(
		        err, SK_EINVALID, "archive %s: the manifest is not valid", a->prefix);
	json_array_foreach(rc == 0 ? json_object_get(doc, "entries") : NULL, i, v)
	{
		sk_file_entry e = { 0 };
		const char *sha = json_string_value(json_object_get(v, "sha256"));
		int t = parse_type(json_string_value(json_object_get(v, "type")));
		arc_entry *x;
		e.path = (char *)json_string_value(json_object_get(v, "path"));
		if (e.path == NULL || e.path[0] != '/' || t < 0) {
			rc = sk_error_set(err, SK_EINVALID,
			        "archive %s: manifest entry %zu is not valid", a->prefix, i);
			break;
		}
		e.type = (sk_file_type)t;
		e.mode = (uint32_t)json_integer_value(json_object_get(v, "mode")) & 07777;
		e.size = (uint64_t)json_integer_value(json_object_get(v, "size"));
		e.link_target = (char *)json_string_value(json_object_get(v, "target"));
		x = put_entry(a, &e);
		snprintf(x->sha256, sizeof(x->sha256), "%s", sha ? sha : "");
	}
	json_decref(doc);
	sk_buf_dispose(&b);
	free(key);
	return rc;
}

sk_provider *
sk_archive_provider(sk_archive *a)
{
	return a->provider;
}

const sk_sandbox *
sk_archive_sandbox(sk_archive *a)
{
	return &a->self;
}

int
sk_archive_workspace(sk_provider *p, const sk_sandbox *sb, const sk_copy_options *opt,
        sk_archive *a, const char *space, int64_t now_ms, sk_copy_report *rep, sk_error *err)
{
	int rc;

	clear_entries(a);
	rc = sk_workspace_copy(p, sb, a->provider, &a->self, opt, NULL, NULL, rep, err);
	if (rc == 0)
		rc = sk_archive_commit(a, space, now_ms, err);
	if (rc == 0)
		rc = sk_archive_load(a, err); /* verify what is stored, not what was meant */
	if (rc == 0) {
		sk_copy_report_free(rep);
		rc = sk_workspace_verify(p, sb, a->provider, &a->self, opt, rep, err);
	}
	if (rc != 0)
		sk_error_prefix(err, "archive to %s", a->prefix);
	return rc;
}

int
sk_archive_restore(sk_archive *a, sk_provider *p, const sk_sandbox *sb, const sk_copy_options *opt,
        sk_copy_report *rep, sk_error *err)
{
	int rc = sk_archive_load(a, err);

	if (rc == 0)
		rc = sk_workspace_copy(a->provider, &a->self, p, sb, opt, NULL, NULL, rep, err);
	if (rc == 0) {
		sk_copy_report_free(rep);
		rc = sk_workspace_verify(a->provider, &a->self, p, sb, opt, rep, err);
	}
	if (rc != 0)
		sk_error_prefix(err, "restore from %s", a->prefix);
	return rc;
}
