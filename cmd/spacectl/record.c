/*
 * spacectl: apply records, so that an interrupted apply is never left half
 * done without a word. apply writes a record (in parts of RECORD_PART
 * objects) before its first object write: per object the action, the object
 * as it was (to restore it) and as the apply writes it (to recognise its
 * write). It removes the record after its last write or a complete rollback.
 *
 * A record found later is an apply that did not finish: killed, or its
 * database went away mid-apply. The rule (like a stale lock file): when
 * its process is gone (same host, pid not running; or it started over an
 * hour ago), the next apply rolls it back at once and says so; when it may still be running (its pid is
 * alive, or it ran on another host), apply refuses until `apply --recover`
 * says it is not. get and diff warn. Rolling back rather than finishing
 * keeps the rule "a failed apply changes nothing": the interrupted apply
 * ends all-or-nothing (nothing), and applying the input again finishes it.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spacectl.h"

#define RECORD_PART 200 /* objects per record: far below the record size limit */
/* An apply started this long ago is taken as gone wherever it ran (a
 * GitOps job's pod is gone with its host name): no apply takes an hour. */
#define RECORD_ABANDONED_MS (3600 * 1000LL)

static void
host_name(char *buf, size_t len)
{
	if (gethostname(buf, len) != 0)
		snprintf(buf, len, "unknown");
	buf[len - 1] = '\0';
}

char *
sk_cli_record_new_id(int64_t start_ms)
{
	char host[256];

	host_name(host, sizeof(host));
	return sk_asprintf("%lld-%s-%ld", (long long)start_ms, host, (long)getpid());
}

int
sk_cli_record_write(sk_store *st, const char *apply_id, json_t *items, int64_t start_ms,
        size_t *nparts, sk_error *err)
{
	size_t n = json_array_size(items), parts = (n + RECORD_PART - 1) / RECORD_PART;
	char host[256];
	int rc = 0;

	host_name(host, sizeof(host));
	*nparts = 0;
	for (size_t p = 0; rc == 0 && p < parts; p++) {
		json_t *slice = json_array(), *body;
		char *id = sk_asprintf("%s#%05zu", apply_id, p);
		for (size_t i = p * RECORD_PART; i < n && i < (p + 1) * RECORD_PART; i++)
			json_array_append(slice, json_array_get(items, i));
		body = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:o}", "apply", apply_id,
		        "host", host, "pid", (json_int_t)getpid(), "start", (json_int_t)start_ms,
		        "objects", (json_int_t)n, "part", (json_int_t)p, "parts", (json_int_t)parts,
		        "items", slice);
		rc = sk_store_record_put(st, id, body, err);
		if (rc == 0)
			(*nparts)++;
		json_decref(body);
		free(id);
	}
	return rc;
}

int
sk_cli_record_remove(sk_store *st, const char *apply_id, size_t nparts, sk_error *err)
{
	int rc = 0;

	for (size_t p = 0; p < nparts; p++) {
		char *id = sk_asprintf("%s#%05zu", apply_id, p);
		int r = sk_store_record_remove(st, id, err);
		if (r != 0 && r != SK_ENOTFOUND && rc == 0)
			rc = r;
		free(id);
	}
	return rc;
}

/* ---- finding and rolling back interrupted applies ---- */

/* The records of one apply: [first, first + n) of a list sorted by id. */
typedef struct group {
	const sk_apply_record *first;
	size_t n;
} group;

static const char *
body_str(const sk_apply_record *r, const char *key)
{
	const char *s = json_string_value(json_object_get(r->body, key));

	return s ? s : "";
}

static int64_t
body_int(const sk_apply_record *r, const char *key)
{
	return json_integer_value(json_object_get(r->body, key));
}

/* The group starting at list->items[at]. */
static group
group_at(const sk_apply_record_list *l, size_t at)
{
	group g = { &l->items[at], 1 };

	while (at + g.n < l->len &&
	        strcmp(body_str(&l->items[at + g.n], "apply"), body_str(g.first, "apply")) == 0)
		g.n++;
	return g;
}

/* Whether the apply's process is known to be gone: same host and no such
 * pid, or started over an hour ago. */
static bool
holder_gone(const group *g)
{
	char host[256];
	pid_t pid = (pid_t)body_int(g->first, "pid");

	if (sk_now_ms() - body_int(g->first, "start") > RECORD_ABANDONED_MS)
		return true;
	host_name(host, sizeof(host));
	if (strcmp(host, body_str(g->first, "host")) != 0 || pid <= 0)
		return false;
	return kill(pid, 0) != 0 && errno == ESRCH;
}

static void
describe(const group *g, char *buf, size_t len)
{
	char when[64];

	sk_time_format(body_int(g->first, "start"), when, sizeof(when));
	snprintf(buf, len, "started %s by %s pid %lld, %lld objects", when,
	        body_str(g->first, "host"), (long long)body_int(g->first, "pid"),
	        (long long)body_int(g->first, "objects"));
}

typedef struct undo_count {
	size_t undone, untouched, left;
} undo_count;

static int
decode(json_t *v, sk_userspace **out)
{
	sk_error err;

	*out = NULL;
	return json_is_object(v) ? sk_userspace_decode(v, out, &err) : SK_EINVALID;
}

/* The object as the apply found it written back over the current one. */
static int
restore(sk_store *st, const sk_userspace *before, const sk_userspace *cur, sk_error *err)
{
	sk_userspace *old = sk_userspace_dup(before), *written = NULL;
	int rc;

	old->meta.resource_version = cur->meta.resource_version;
	rc = sk_store_update(st, old, &written, err);
	sk_userspace_free(written);
	sk_userspace_free(old);
	return rc;
}

/* Undoes one object of a record: only the apply's own write, recognised by
 * its contents; anything else written since is left, and said so. */
static int
undo_one(sk_store *st, json_t *item, int64_t start_ms, undo_count *n, sk_error *err)
{
	const char *name = json_string_value(json_object_get(item, "name"));
	bool create = json_is_string(json_object_get(item, "action")) &&
	        strcmp(json_string_value(json_object_get(item, "action")), "create") == 0;
	sk_userspace *cur = NULL, *before = NULL, *after = NULL;
	int rc;

	if (name == NULL || decode(json_object_get(item, "after"), &after) != 0 ||
	        (!create && decode(json_object_get(item, "before"), &before) != 0)) {
		sk_cli_warnf("apply record: an unreadable entry skipped");
		n->left++;
		rc = 0;
		goto done;
	}
	rc = sk_store_get(st, name, &cur, err);
	if (rc == SK_ENOTFOUND) {
		rc = 0;
		if (create)
			n->untouched++;
		else {
			sk_cli_warnf(
			        "userspace/%s: deleted since the interrupted apply; left", name);
			n->left++;
		}
		goto done;
	}
	if (rc != 0)
		goto done;
	if (before != NULL && sk_cli_same_desired(cur, before)) {
		n->untouched++;
	} else if (sk_cli_same_desired(cur, after) &&
	        (!create || cur->meta.creation_ms >= start_ms - 1000)) {
		rc = create ? sk_store_remove(st, name, err) : restore(st, before, cur, err);
		if (rc == 0 || (create && rc == SK_ENOTFOUND))
			n->undone++, rc = 0;
	} else {
		sk_cli_warnf("userspace/%s: changed by another writer since the interrupted apply; "
		             "left as it is",
		        name);
		n->left++;
	}
done:
	sk_userspace_free(cur);
	sk_userspace_free(before);
	sk_userspace_free(after);
	return rc;
}

/* Rolls one interrupted apply back, then removes its records. */
static int
roll_back(sk_store *st, const group *g)
{
	undo_count n = { 0, 0, 0 };
	sk_error err;
	int rc = 0;

	sk_error_clear(&err);
	for (size_t p = 0; rc == 0 && p < g->n; p++) {
		json_t *items = json_object_get(g->first[p].body, "items"), *item;
		size_t i;
		json_array_foreach(items, i, item)
		{
			if ((rc = undo_one(st, item, body_int(&g->first[p], "start"), &n, &err)) !=
			        0)
				break;
		}
	}
	for (size_t p = 0; rc == 0 && p < g->n; p++) {
		rc = sk_store_record_remove(st, g->first[p].id, &err);
		rc = rc == SK_ENOTFOUND ? 0 : rc;
	}
	if (rc != 0) {
		sk_cli_errorf("rolling back the interrupted apply: %s; its record stays, run "
		              "`spacectl apply --recover` again",
		        err.message);
		return sk_cli_exit_code(rc);
	}
	fflush(stdout);
	fprintf(stderr,
	        "spacectl: interrupted apply rolled back: %zu object(s) restored or removed, %zu "
	        "not "
	        "written by it, %zu left as changed since\n",
	        n.undone, n.untouched, n.left);
	return SK_EXIT_OK;
}

static int
list_records(sk_store *st, sk_apply_record_list *l)
{
	sk_error err;
	int rc;

	sk_error_clear(&err);
	if ((rc = sk_store_record_list(st, l, &err)) != 0) {
		sk_cli_errorf("reading apply records: %s", err.message);
		return sk_cli_exit_code(rc);
	}
	return SK_EXIT_OK;
}

int
sk_cli_records_recover(sk_store *st, bool force)
{
	sk_apply_record_list l = { NULL, 0 };
	int rc = list_records(st, &l), r;
	char what[512];

	for (size_t at = 0; rc == SK_EXIT_OK && at < l.len;) {
		group g = group_at(&l, at);
		at += g.n;
		describe(&g, what, sizeof(what));
		if (!force && !holder_gone(&g)) {
			sk_cli_errorf(
			        "an apply (%s) has not finished: it is still running, or was "
			        "interrupted on another host. Once it is not running, `spacectl "
			        "apply --recover` rolls it back",
			        what);
			rc = SK_EXIT_FAIL;
			break;
		}
		fflush(stdout);
		fprintf(stderr, "spacectl: found an interrupted apply (%s): rolling it back\n",
		        what);
		if ((r = roll_back(st, &g)) != SK_EXIT_OK)
			rc = r;
	}
	sk_apply_record_list_dispose(&l);
	return rc;
}

void
sk_cli_records_warn(sk_store *st)
{
	sk_apply_record_list l = { NULL, 0 };
	sk_error err;
	char what[512];

	sk_error_clear(&err);
	if (sk_store_record_list(st, &l, &err) != 0)
		return; /* the command's own read reports the database */
	for (size_t at = 0; at < l.len;) {
		group g = group_at(&l, at);
		at += g.n;
		describe(&g, what, sizeof(what));
		sk_cli_warnf("an apply (%s) has not finished; objects may be half-written. If it "
		             "is not running, `spacectl apply --recover` rolls it back",
		        what);
	}
	sk_apply_record_list_dispose(&l);
}
