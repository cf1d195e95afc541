/*
 * reconcile/marker: the workspace marker's I/O (see marker_int.h). A JSON
 * document in the first workspace path,
 *   {"space": NAME, "uid": UID, "userID": ID, "generation": N,
 *    "sandboxID": ID, "time": RFC3339}
 * written through the sandbox's data plane (envd files) and read back after
 * a resume. It is this space's when space and uid match: a migration copies
 * it with the workspace, so the sandbox ID it names may be an older one.
 */
#include <stdlib.h>
#include <string.h>

#include "../api/sandbox_values.h"
#include "../api/strlist.h"
#include "../api/userspace.h"
#include "marker_int.h"
#include "reconcile_int.h"

#define MARKER_MAX_BYTES 4096

char *
sk_marker_path(const sk_userspace *us)
{
	const sk_strlist *paths = &us->spec.workspace_paths;
	const char *root = paths->len > 0 ? paths->items[0] : "/home/user";
	size_t n = strlen(root);

	return sk_asprintf("%s%s%s", root, n > 0 && root[n - 1] == '/' ? "" : "/", SK_MARKER_FILE);
}

typedef struct marker_src {
	const char *data;
	size_t len, off;
} marker_src;

static int64_t
marker_source(void *payload, void *buf, size_t len)
{
	marker_src *s = payload;
	size_t n = s->len - s->off < len ? s->len - s->off : len;

	memcpy(buf, s->data + s->off, n);
	s->off += n;
	return (int64_t)n;
}

int
sk_marker_write(
        sk_provider *p, const sk_sandbox *sb, const sk_userspace *us, int64_t now_ms, sk_error *err)
{
	char when[64];
	json_t *doc;
	char *text;
	sk_file_entry e;
	marker_src src;
	int rc;

	sk_time_format(now_ms, when, sizeof(when));
	doc = json_pack("{s:s, s:s?, s:s?, s:I, s:s, s:s}", "space", us->meta.name, "uid",
	        us->meta.uid, "userID", us->spec.user_id, "generation",
	        (json_int_t)us->meta.generation, "sandboxID", sb->id, "time", when);
	text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(doc);
	memset(&e, 0, sizeof(e));
	e.path = sk_marker_path(us);
	e.type = SK_FILE_REGULAR;
	e.size = strlen(text);
	e.mode = 0644;
	src = (marker_src){ text, strlen(text), 0 };
	rc = sk_sandbox_write_file(p, sb, &e, marker_source, &src, err);
	if (rc != 0 && rc != SK_ENOTSUPPORTED)
		sk_error_prefix(err, "workspace marker %s", e.path);
	free(e.path);
	free(text);
	return rc;
}

typedef struct marker_dst {
	sk_buf b;
	bool over; /* more than MARKER_MAX_BYTES: no marker of ours */
} marker_dst;

static int
marker_sink(void *payload, const void *buf, size_t len)
{
	marker_dst *d = payload;

	if (d->b.len + len > MARKER_MAX_BYTES) {
		d->over = true;
		return SK_ETERMINAL;
	}
	sk_buf_append(&d->b, buf, len);
	return 0;
}

sk_marker_check
sk_marker_read(
        sk_provider *p, const sk_sandbox *sb, const sk_userspace *us, char *detail, size_t len)
{
	char *path = sk_marker_path(us);
	marker_dst d = { SK_BUF_INIT(MARKER_MAX_BYTES), false };
	sk_marker_check out;
	json_t *doc = NULL;
	const char *space, *uid;
	sk_error e;
	int rc;

	sk_error_clear(&e);
	detail[0] = '\0';
	rc = sk_sandbox_read_file(p, sb, path, marker_sink, &d, &e);
	if (rc == SK_ENOTSUPPORTED) {
		out = SK_MARKER_UNCHECKED;
	} else if (rc == SK_ENOTFOUND) {
		snprintf(detail, len, "no workspace marker %s", path);
		out = SK_MARKER_MISSING;
	} else if (d.over) {
		snprintf(detail, len, "%s is not a workspace marker (over %d bytes)", path,
		        MARKER_MAX_BYTES);
		out = SK_MARKER_FOREIGN;
	} else if (rc != 0) {
		snprintf(detail, len, "reading %s: %s", path, e.message);
		out = SK_MARKER_UNREADABLE;
	} else {
		doc = json_loadb(d.b.data ? d.b.data : "", d.b.len, 0, NULL);
		space = json_string_value(json_object_get(doc, "space"));
		uid = json_string_value(json_object_get(doc, "uid"));
		out = SK_MARKER_FOUND;
		if (space == NULL) {
			snprintf(detail, len, "%s is not a workspace marker", path);
			out = SK_MARKER_FOREIGN;
		} else if (!sk_str_eq(space, us->meta.name) ||
		        (us->meta.uid != NULL && !sk_str_eq(uid, us->meta.uid))) {
			snprintf(detail, len, "%s is the marker of space %s (uid %s)", path, space,
			        uid ? uid : "none");
			out = SK_MARKER_FOREIGN;
		}
	}
	json_decref(doc);
	sk_buf_dispose(&d.b);
	free(path);
	return out;
}
