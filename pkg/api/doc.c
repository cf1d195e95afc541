/*
 * api/doc: the parsed document (sk_doc: a jansson value with the source
 * position of each path), the list of them, positioned errors, and loading
 * them from files, directories (-R) and kind: List. The YAML reader that
 * builds them is yaml_reader.c.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api_int.h"
#include "doc.h"
#include "errlist.h"

#define SK_MAX_FILE_BYTES (64 * 1024 * 1024)

/* ---- sk_doc ---- */

sk_doc *
sk_doc_new(const char *file)
{
	sk_doc *d = sk_calloc(1, sizeof(*d));

	d->file = sk_strdup(file);
	d->pos = json_object();
	return d;
}

void
sk_doc_free(sk_doc *d)
{
	if (d == NULL)
		return;
	json_decref(d->root);
	json_decref(d->pos);
	free(d->file);
	free(d);
}

sk_doc *
sk_doc_from_json(json_t *root, const char *file)
{
	sk_doc *d = sk_doc_new(file);

	d->root = json_incref(root);
	return d;
}

json_t *
sk_doc_root(const sk_doc *d)
{
	return d->root;
}

const char *
sk_doc_file(const sk_doc *d)
{
	return d->file;
}

int
sk_doc_line(const sk_doc *d)
{
	return d->line;
}

void
sk_doc_set_position(sk_doc *d, const char *path, int line, int col)
{
	json_object_set_new(d->pos, path, json_pack("[ii]", line, col));
}

/* Cuts the last ".key" or "[i]" off path in place; false at the root. */
static bool
path_parent(char *path)
{
	size_t n = strlen(path);

	if (n == 0)
		return false;
	if (path[n - 1] == ']') {
		char *b = strrchr(path, '[');
		if (b != NULL) {
			*b = '\0';
			return true;
		}
	}
	while (n > 0 && path[n - 1] != '.')
		n--;
	path[n > 0 ? n - 1 : 0] = '\0';
	return true;
}

bool
sk_doc_position(const sk_doc *d, const char *path, int *line, int *col)
{
	char *p = sk_strdup(path != NULL ? path : "");
	bool found = false;

	for (;;) {
		json_t *v = json_object_get(d->pos, p);
		if (v != NULL) {
			*line = (int)json_integer_value(json_array_get(v, 0));
			*col = (int)json_integer_value(json_array_get(v, 1));
			found = true;
			break;
		}
		if (!path_parent(p))
			break;
	}
	free(p);
	return found;
}

void
sk_doclist_dispose(sk_doclist *l)
{
	if (l == NULL)
		return;
	for (size_t i = 0; i < l->len; i++)
		sk_doc_free(l->items[i]);
	free(l->items);
	l->items = NULL;
	l->len = 0;
}

char *
sk_path_join(const char *parent, const char *key)
{
	if (parent == NULL || parent[0] == '\0')
		return sk_strdup(key);
	return sk_asprintf("%s.%s", parent, key);
}

char *
sk_path_index(const char *parent, size_t i)
{
	return sk_asprintf("%s[%zu]", parent != NULL ? parent : "", i);
}

void
sk_doc_error(sk_errlist *l, const sk_doc *d, const char *path, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int line = 0, col = 0;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (d != NULL && !sk_doc_position(d, path, &line, &col))
		line = col = 0;
	sk_errlist_add(l, path, d != NULL ? d->file : NULL, line, col, "%s", msg);
}
static int
load_file(const char *path, sk_doclist *out, sk_error *err)
{
	char *data = NULL;
	size_t len = 0;
	int rc = sk_file_read(path, SK_MAX_FILE_BYTES, &data, &len, err);

	if (rc != SK_OK)
		return rc;
	rc = sk_doc_parse(data, len, path, out, err);
	free(data);
	return rc;
}

static bool
manifest_name(const char *n)
{
	size_t len = strlen(n);
	static const char *const exts[] = { ".yaml", ".yml", ".json" };

	if (n[0] == '.')
		return false;
	for (size_t i = 0; i < 3; i++) {
		size_t e = strlen(exts[i]);
		if (len > e && strcmp(n + len - e, exts[i]) == 0)
			return true;
	}
	return false;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A directory's manifests in name order; with recursive, its subdirectories
 * too, in the same order (kubectl -R walks the tree lexically). */
static int
load_dir(const char *path, bool recursive, sk_doclist *out, sk_error *err)
{
	DIR *dir = opendir(path);
	struct dirent *de;
	char **names = NULL;
	size_t n = 0;
	int rc = SK_OK;
	struct stat st;

	if (dir == NULL)
		return sk_error_set(err, SK_EIO, "%s: %s", path, strerror(errno));
	while ((de = readdir(dir)) != NULL) {
		char *full;
		if (de->d_name[0] == '.')
			continue;
		full = sk_asprintf("%s/%s", path, de->d_name);
		if (manifest_name(de->d_name) ||
		        (recursive && stat(full, &st) == 0 && S_ISDIR(st.st_mode))) {
			names = sk_realloc(names, (n + 1) * sizeof(*names));
			names[n++] = full;
		} else {
			free(full);
		}
	}
	closedir(dir);
	qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n && rc == SK_OK; i++) {
		if (recursive && stat(names[i], &st) == 0 && S_ISDIR(st.st_mode))
			rc = load_dir(names[i], true, out, err);
		else
			rc = load_file(names[i], out, err);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

/* ---- kind: List ---- */

static bool
is_list(const sk_doc *d)
{
	const char *kind = json_string_value(json_object_get(d->root, "kind"));

	return json_is_object(d->root) && kind != NULL &&
	        (strcmp(kind, "List") == 0 || strcmp(kind, "UserSpaceList") == 0);
}

static int
list_error(const sk_doc *d, const char *path, const char *msg, sk_error *err)
{
	int line = d->line, col = 1;

	sk_doc_position(d, path, &line, &col);
	return sk_error_set(err, SK_EINVALID, "%s:%d:%d: %s: %s", d->file ? d->file : "<input>",
	        line, col, path, msg);
}

/* Moves each position of list under "items[N]" to item document N, in one
 * pass ("items[3].spec" -> "spec", "items[3]" -> the root). */
static void
list_positions(const sk_doc *list, sk_doc **items, size_t n)
{
	const char *key;
	json_t *v;

	json_object_foreach(list->pos, key, v)
	{
		char *end;
		size_t i;
		if (strncmp(key, "items[", 6) != 0)
			continue;
		i = strtoul(key + 6, &end, 10);
		if (i >= n || end[0] != ']' || (end[1] != '\0' && end[1] != '.' && end[1] != '['))
			continue;
		json_object_set(items[i]->pos, end[1] == '.' ? end + 2 : end + 1, v);
		if (end[1] == '\0')
			items[i]->line = (int)json_integer_value(json_array_get(v, 0));
	}
}

/* The number of items of a List document; -1 with err when malformed. */
static long
list_count(const sk_doc *list, sk_error *err)
{
	json_t *items = json_object_get(list->root, "items"), *item;
	size_t i;

	if (!json_is_array(items)) {
		list_error(list, "items", "a List needs a list of objects here", err);
		return -1;
	}
	json_array_foreach(items, i, item)
	{
		if (!json_is_object(item)) {
			char *path = sk_path_index("items", i);
			list_error(list, path, "must be an object", err);
			free(path);
			return -1;
		}
	}
	return (long)json_array_size(items);
}

/* The item documents of one List document, stored from out[0] on. */
static void
expand_list(const sk_doc *list, sk_doc **out)
{
	json_t *items = json_object_get(list->root, "items");
	size_t n = json_array_size(items);

	for (size_t i = 0; i < n; i++) {
		out[i] = sk_doc_new(list->file);
		out[i]->root = json_incref(json_array_get(items, i));
		out[i]->line = list->line;
	}
	list_positions(list, out, n);
}

int
sk_doclist_expand_lists(sk_doclist *l, sk_error *err)
{
	size_t total = 0, at = 0;
	bool any = false;
	sk_doc **items;

	for (size_t i = 0; i < l->len; i++) {
		long n = is_list(l->items[i]) ? list_count(l->items[i], err) : 1;
		if (n < 0)
			return SK_EINVALID;
		any = any || is_list(l->items[i]);
		total += (size_t)n;
	}
	if (!any)
		return SK_OK;
	items = sk_calloc(total ? total : 1, sizeof(*items));
	for (size_t i = 0; i < l->len; i++) {
		if (is_list(l->items[i])) {
			expand_list(l->items[i], items + at);
			at += json_array_size(json_object_get(l->items[i]->root, "items"));
			sk_doc_free(l->items[i]);
		} else {
			items[at++] = l->items[i];
		}
	}
	free(l->items);
	l->items = items;
	l->len = total;
	return SK_OK;
}

int
sk_doc_load_path(const char *path, sk_doclist *out, sk_error *err)
{
	return sk_doc_load_tree(path, false, out, err);
}

int
sk_doc_load_tree(const char *path, bool recursive, sk_doclist *out, sk_error *err)
{
	struct stat st;

	if (strcmp(path, "-") == 0)
		return load_file(path, out, err);
	if (stat(path, &st) != 0)
		return sk_error_set(err, SK_EIO, "%s: %s", path, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return load_dir(path, recursive, out, err);
	return load_file(path, out, err);
}
