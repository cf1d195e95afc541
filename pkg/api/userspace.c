/* api/userspace: the UserSpace struct: lifetime, equality, enums, defaults. */
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "kvlist.h"
#include "meta.h"
#include "migration.h"
#include "schema.h"
#include "status.h"
#include "storage.h"
#include "strlist.h"
#include "userspace.h"

static const char *const phase_names[] = { "", "Pending", "Creating", "Running", "Resuming",
	"Paused", "Degraded", "Deleting", "Error", "Idle", "Migrating", "Archived" };

const char *
sk_phase_name(sk_phase p)
{
	if ((size_t)p >= sizeof(phase_names) / sizeof(phase_names[0]))
		return "";
	return phase_names[p];
}

int
sk_phase_parse(const char *s, sk_phase *out)
{
	for (size_t i = 0; s != NULL && i < sizeof(phase_names) / sizeof(phase_names[0]); i++) {
		if (strcmp(s, phase_names[i]) == 0) {
			*out = (sk_phase)i;
			return SK_OK;
		}
	}
	return SK_EINVALID;
}

const char *
sk_mode_name(sk_mode m)
{
	const sk_field *f = sk_spec_field("spec.mode");
	const char *name = sk_field_enum_name(f, (int)m);

	return name != NULL ? name : f->def;
}

void
sk_meta_dispose(sk_object_meta *m)
{
	free(m->name);
	sk_kvlist_dispose(&m->labels);
	sk_kvlist_dispose(&m->annotations);
	free(m->uid);
	for (size_t i = 0; i < m->n_finalizers; i++)
		free(m->finalizers[i]);
	free(m->finalizers);
}

static void
spec_dispose(sk_userspace_spec *s)
{
	for (size_t i = 0; i < sk_spec_n_fields; i++) {
		const sk_field *f = &sk_spec_fields[i];
		if (f->type == SK_FIELD_STRING)
			free(*SK_FIELD_AT(f, s, char *));
		else if (f->type == SK_FIELD_MAP)
			sk_kvlist_dispose(SK_FIELD_AT(f, s, sk_kvlist));
		else if (f->type == SK_FIELD_LIST)
			sk_strlist_dispose(SK_FIELD_AT(f, s, sk_strlist));
	}
}

void
sk_userspace_free(sk_userspace *us)
{
	if (us == NULL)
		return;
	sk_meta_dispose(&us->meta);
	spec_dispose(&us->spec);
	sk_userspace_status_dispose(&us->status);
	free(us);
}

static void
kvlist_copy(sk_kvlist *dst, const sk_kvlist *src)
{
	dst->items = NULL;
	dst->len = 0;
	for (size_t i = 0; i < src->len; i++)
		sk_kvlist_set(dst, src->items[i].key, src->items[i].value);
}

/* dst = src, strings and maps copied. */
static void
spec_copy(sk_userspace_spec *dst, const sk_userspace_spec *src)
{
	*dst = *src;
	for (size_t i = 0; i < sk_spec_n_fields; i++) {
		const sk_field *f = &sk_spec_fields[i];
		if (f->type == SK_FIELD_STRING)
			*SK_FIELD_AT(f, dst, char *) = sk_strdup(*SK_FIELD_AT(f, src, char *const));
		else if (f->type == SK_FIELD_MAP)
			kvlist_copy(SK_FIELD_AT(f, dst, sk_kvlist),
			        SK_FIELD_AT(f, src, const sk_kvlist));
		else if (f->type == SK_FIELD_LIST)
			sk_strlist_copy(SK_FIELD_AT(f, dst, sk_strlist),
			        SK_FIELD_AT(f, src, const sk_strlist));
	}
}

sk_userspace *
sk_userspace_dup(const sk_userspace *us)
{
	sk_userspace *c;

	if (us == NULL)
		return NULL;
	c = sk_calloc(1, sizeof(*c));
	c->meta = us->meta;
	c->meta.name = sk_strdup(us->meta.name);
	c->meta.uid = sk_strdup(us->meta.uid);
	kvlist_copy(&c->meta.labels, &us->meta.labels);
	kvlist_copy(&c->meta.annotations, &us->meta.annotations);
	c->meta.finalizers =
	        us->meta.n_finalizers ? sk_calloc(us->meta.n_finalizers, sizeof(char *)) : NULL;
	for (size_t i = 0; i < us->meta.n_finalizers; i++)
		c->meta.finalizers[i] = sk_strdup(us->meta.finalizers[i]);
	spec_copy(&c->spec, &us->spec);
	sk_userspace_status_copy(&c->status, &us->status);
	return c;
}

static bool
str_eq(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

static bool
field_equal(const sk_field *f, const sk_userspace_spec *a, const sk_userspace_spec *b)
{
	switch (f->type) {
	case SK_FIELD_STRING:
		return str_eq(*SK_FIELD_AT(f, a, char *const), *SK_FIELD_AT(f, b, char *const));
	case SK_FIELD_MAP:
		return sk_kvlist_equal(
		        SK_FIELD_AT(f, a, const sk_kvlist), SK_FIELD_AT(f, b, const sk_kvlist));
	case SK_FIELD_LIST:
		return sk_strlist_equal(
		        SK_FIELD_AT(f, a, const sk_strlist), SK_FIELD_AT(f, b, const sk_strlist));
	default: return sk_field_get_int(f, a) == sk_field_get_int(f, b);
	}
}

bool
sk_userspace_spec_equal(const sk_userspace_spec *a, const sk_userspace_spec *b)
{
	for (size_t i = 0; i < sk_spec_n_fields; i++) {
		if (!field_equal(&sk_spec_fields[i], a, b))
			return false;
	}
	return true;
}

const sk_condition *
sk_userspace_condition(const sk_userspace *us, const char *type)
{
	for (size_t i = 0; i < us->status.n_conditions; i++) {
		if (str_eq(us->status.conditions[i].type, type))
			return &us->status.conditions[i];
	}
	return NULL;
}

bool
sk_userspace_is_ready(const sk_userspace *us)
{
	const sk_condition *c = sk_userspace_condition(us, SK_COND_READY);

	return c != NULL && str_eq(c->status, "True");
}

bool
sk_userspace_has_finalizer(const sk_userspace *us, const char *f)
{
	for (size_t i = 0; i < us->meta.n_finalizers; i++) {
		if (str_eq(us->meta.finalizers[i], f))
			return true;
	}
	return false;
}

/* Fills what is unset and has a default: STRING (NULL) and DURATION (0)
 * fields. ENUM and BOOL fields have no unset value; the decoder sets them. */
void
sk_userspace_apply_defaults(sk_userspace *us)
{
	sk_userspace_spec *s = &us->spec;

	for (size_t i = 0; i < sk_spec_n_fields; i++) {
		const sk_field *f = &sk_spec_fields[i];
		if (f->def == NULL)
			continue;
		if (f->type == SK_FIELD_STRING && *SK_FIELD_AT(f, s, char *) == NULL)
			*SK_FIELD_AT(f, s, char *) = sk_strdup(f->def);
		else if (f->type == SK_FIELD_DURATION && f->min > 0 && sk_field_get_int(f, s) == 0)
			sk_field_set_int(f, s, sk_field_default_int(f));
		else if (f->type == SK_FIELD_LIST && SK_FIELD_AT(f, s, sk_strlist)->len == 0)
			sk_strlist_add(SK_FIELD_AT(f, s, sk_strlist), f->def);
	}
}

/* ---- status.archive ---- */

static const char *const archive_state_names[] = { "", "Archived", "Restored" };
static const char *const archive_method_names[] = { "ObjectStorage", "Snapshot" };

const char *
sk_archive_method_name(sk_archive_method m)
{
	return (size_t)m < sizeof(archive_method_names) / sizeof(archive_method_names[0])
	        ? archive_method_names[m]
	        : "";
}

const char *
sk_archive_state_name(sk_archive_state s)
{
	return (size_t)s < sizeof(archive_state_names) / sizeof(archive_state_names[0])
	        ? archive_state_names[s]
	        : "";
}

void
sk_archive_where(const sk_userspace_status *st, char *out, size_t len)
{
	const sk_archive_status *a = &st->archive;
	char when[40] = "", loc[512] = "";

	if (a->method == SK_ARCHIVE_SNAPSHOT && a->snapshot_id != NULL) {
		sk_time_format(a->time_ms, when, sizeof(when));
		snprintf(loc, sizeof(loc), "snapshot %s (generation %lld, %s)", a->snapshot_id,
		        (long long)a->generation, when);
	} else if (a->key != NULL) {
		sk_time_format(a->time_ms, when, sizeof(when));
		snprintf(loc, sizeof(loc),
		        "s3://%s/%s/ (generation %lld, %lld files, %lld bytes, %s)",
		        a->bucket ? a->bucket : "", a->key, (long long)a->generation,
		        (long long)a->files, (long long)a->bytes, when);
	}
	if (a->state == SK_ARCHIVE_ARCHIVED && st->sandbox_id == NULL)
		snprintf(out, len, "archive %s", loc);
	else if (a->state == SK_ARCHIVE_ARCHIVED)
		snprintf(out, len, "archive %s, being restored into sandbox %s", loc,
		        st->sandbox_id);
	else if (st->sandbox_id != NULL && loc[0] != '\0')
		snprintf(out, len, "sandbox %s (newest archive %s)", st->sandbox_id, loc);
	else if (st->sandbox_id != NULL)
		snprintf(out, len, "sandbox %s", st->sandbox_id);
	else
		snprintf(out, len, "none (no sandbox, no archive)");
}

void
sk_snapshots_status_dispose(sk_snapshots_status *s)
{
	sk_strlist_dispose(&s->ids);
	memset(s, 0, sizeof(*s));
}

void
sk_snapshots_status_copy(sk_snapshots_status *dst, const sk_snapshots_status *src)
{
	*dst = *src;
	memset(&dst->ids, 0, sizeof(dst->ids));
	sk_strlist_copy(&dst->ids, &src->ids);
}

bool
sk_snapshots_status_equal(const sk_snapshots_status *a, const sk_snapshots_status *b)
{
	return a->schedule_ms == b->schedule_ms && a->last_ms == b->last_ms &&
	        sk_strlist_equal(&a->ids, &b->ids);
}
