/* api/codec: UserSpace <-> jansson (the stored and printed shape), defaults applied on
 * decode. The spec is encoded and decoded row by row from sk_spec_fields (schema.c). */
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

/* ---- encode ---- */

void
sk_json_set_str(json_t *o, const char *key, const char *v)
{
	if (v != NULL)
		json_object_set_new(o, key, json_string(v));
}

void
sk_json_set_time(json_t *o, const char *key, int64_t ms)
{
	char buf[64];

	if (ms == 0)
		return;
	sk_time_format(ms, buf, sizeof(buf));
	json_object_set_new(o, key, json_string(buf));
}

json_t *
sk_meta_to_json(const sk_object_meta *m)
{
	json_t *o = json_object();

	sk_json_set_str(o, "name", m->name);
	if (m->labels.len > 0)
		json_object_set_new(o, "labels", sk_kvlist_to_json(&m->labels));
	if (m->annotations.len > 0)
		json_object_set_new(o, "annotations", sk_kvlist_to_json(&m->annotations));
	sk_json_set_str(o, "uid", m->uid);
	if (m->generation != 0)
		json_object_set_new(o, "generation", json_integer(m->generation));
	if (m->resource_version != 0)
		json_object_set_new(o, "resourceVersion", json_integer(m->resource_version));
	sk_json_set_time(o, "creationTimestamp", m->creation_ms);
	sk_json_set_time(o, "deletionTimestamp", m->deletion_ms);
	if (m->n_finalizers > 0) {
		json_t *a = json_array();
		for (size_t i = 0; i < m->n_finalizers; i++)
			json_array_append_new(a, json_string(m->finalizers[i]));
		json_object_set_new(o, "finalizers", a);
	}
	return o;
}

static json_t *
duration_json(int64_t ms)
{
	char buf[64];

	sk_duration_format(ms, buf, sizeof(buf));
	return json_string(buf);
}

/* A LIST field: its strings, or [default] when empty (NULL without one). */
static json_t *
strlist_json(const sk_field *f, const sk_strlist *l)
{
	json_t *a = json_array();

	for (size_t i = 0; i < l->len; i++)
		json_array_append_new(a, json_string(l->items[i]));
	if (l->len == 0 && f->def != NULL)
		json_array_append_new(a, json_string(f->def));
	if (l->len == 0 && f->def == NULL) { /* unset, left out */
		json_decref(a);
		return NULL;
	}
	return a;
}

/* The JSON value of one field (new reference); NULL leaves it out: unset
 * INT and MAP fields. Unset STRING and DURATION fields are their default. */
static json_t *
field_to_json(const sk_field *f, const sk_userspace_spec *s)
{
	const char *str;
	int64_t n = sk_field_get_int(f, s);

	switch (f->type) {
	case SK_FIELD_STRING:
		str = *SK_FIELD_AT(f, s, char *const);
		str = str != NULL ? str : f->def;
		return str != NULL ? json_string(str) : NULL;
	case SK_FIELD_ENUM:
		str = sk_field_enum_name(f, (int)n);
		return json_string(str != NULL ? str : f->def);
	case SK_FIELD_INT: return n != 0 ? json_integer(n) : NULL;
	case SK_FIELD_BOOL: return json_boolean(n);
	case SK_FIELD_DURATION: /* 0 is a value where the row allows it (min 0) */
		return duration_json(n != 0 || f->min == 0 ? n : sk_field_default_int(f));
	case SK_FIELD_MAP:
		if (SK_FIELD_AT(f, s, const sk_kvlist)->len == 0)
			return NULL;
		return sk_kvlist_to_json(SK_FIELD_AT(f, s, const sk_kvlist));
	case SK_FIELD_LIST: return strlist_json(f, SK_FIELD_AT(f, s, const sk_strlist));
	}
	return NULL;
}

json_t *
sk_userspace_spec_to_json(const sk_userspace_spec *s)
{
	json_t *o = json_object();

	for (size_t i = 0; i < sk_spec_n_fields; i++) {
		const sk_field *f = &sk_spec_fields[i];
		json_t *v = field_to_json(f, s), *parent;
		const char *leaf;

		if (v == NULL)
			continue;
		parent = sk_json_parent(o, f->path + strlen("spec."), true, &leaf);
		json_object_set_new(parent, leaf, v);
	}
	return o;
}

static json_t *
condition_to_json(const sk_condition *c)
{
	json_t *o = json_object();

	sk_json_set_str(o, "type", c->type);
	sk_json_set_str(o, "status", c->status);
	sk_json_set_str(o, "reason", c->reason);
	sk_json_set_str(o, "message", c->message);
	sk_json_set_time(o, "lastTransitionTime", c->last_transition_ms);
	if (c->observed_generation != 0)
		json_object_set_new(o, "observedGeneration", json_integer(c->observed_generation));
	return o;
}

static json_t *
drift_to_json(const sk_drift *d)
{
	json_t *o = json_object();

	sk_json_set_str(o, "type", d->type);
	sk_json_set_str(o, "sandboxID", d->sandbox_id);
	sk_json_set_time(o, "since", d->since_ms);
	sk_json_set_str(o, "detail", d->detail);
	return o;
}

json_t *
sk_userspace_status_to_json(const sk_userspace_status *st)
{
	json_t *o = json_object();

	if (st->phase != SK_PHASE_NONE)
		json_object_set_new(o, "phase", json_string(sk_phase_name(st->phase)));
	sk_json_set_str(o, "sandboxID", st->sandbox_id);
	if (st->observed_generation != 0)
		json_object_set_new(o, "observedGeneration", json_integer(st->observed_generation));
	if (st->n_conditions > 0) {
		json_t *a = json_array();
		for (size_t i = 0; i < st->n_conditions; i++)
			json_array_append_new(a, condition_to_json(&st->conditions[i]));
		json_object_set_new(o, "conditions", a);
	}
	if (st->n_drift > 0) {
		json_t *a = json_array();
		for (size_t i = 0; i < st->n_drift; i++)
			json_array_append_new(a, drift_to_json(&st->drift[i]));
		json_object_set_new(o, "drift", a);
	}
	sk_json_set_str(o, "message", st->message);
	sk_json_set_time(o, "lastReconcileTime", st->last_reconcile_ms);
	sk_json_set_time(o, "lastActivityTime", st->last_activity_ms);
	sk_json_set_str(o, "provider", st->provider);
	if (st->migration.phase != SK_MIG_NONE)
		json_object_set_new(o, "migration", sk_migration_to_json(&st->migration));
	if (st->usage.since_ms != 0) {
		json_t *u = json_pack("{s:I, s:I, s:I, s:I}", "runningSeconds",
		        (json_int_t)st->usage.running_s, "pausedSeconds",
		        (json_int_t)st->usage.paused_s, "wakes", (json_int_t)st->usage.wakes,
		        "creates", (json_int_t)st->usage.creates);
		sk_json_set_time(u, "since", st->usage.since_ms);
		sk_json_set_time(u, "lastUpdateTime", st->usage.updated_ms);
		json_object_set_new(o, "usage", u);
	}
	if (st->archive.state != SK_ARCHIVE_NONE || st->archive.intent_ms != 0 ||
	        st->archive.failures != 0) {
		const sk_archive_status *a = &st->archive;
		json_t *x = json_pack("{s:I, s:I, s:I}", "generation", (json_int_t)a->generation,
		        "files", (json_int_t)a->files, "bytes", (json_int_t)a->bytes);
		if (a->state != SK_ARCHIVE_NONE) {
			json_object_set_new(
			        x, "state", json_string(sk_archive_state_name(a->state)));
			json_object_set_new(
			        x, "method", json_string(sk_archive_method_name(a->method)));
		}
		sk_json_set_str(x, "snapshotID", a->snapshot_id);
		sk_json_set_time(x, "archivingSince", a->intent_ms);
		sk_json_set_str(x, "bucket", a->bucket);
		sk_json_set_str(x, "key", a->key);
		sk_json_set_time(x, "time", a->time_ms);
		sk_json_set_str(x, "sandboxID", a->sandbox_id);
		sk_json_set_time(x, "restoreTime", a->restore_ms);
		if (a->failures != 0)
			json_object_set_new(x, "failures", json_integer((json_int_t)a->failures));
		sk_json_set_time(x, "lastFailureTime", a->failed_ms);
		json_object_set_new(o, "archive", x);
	}
	if (st->snapshots.schedule_ms != 0 || st->snapshots.ids.len > 0) {
		const sk_snapshots_status *n = &st->snapshots;
		json_t *x = json_object(), *ids = json_array();
		sk_json_set_time(x, "lastScheduleTime", n->schedule_ms);
		sk_json_set_time(x, "lastSnapshotTime", n->last_ms);
		for (size_t i = 0; i < n->ids.len; i++)
			json_array_append_new(ids, json_string(n->ids.items[i]));
		json_object_set_new(x, "snapshotIDs", ids);
		json_object_set_new(o, "snapshots", x);
	}
	if (st->storage.state != NULL) {
		const sk_storage_status *v = &st->storage;
		json_t *x = json_object();
		sk_json_set_str(x, "state", v->state);
		sk_json_set_str(x, "name", v->volume_name);
		sk_json_set_str(x, "volumeID", v->volume_id);
		sk_json_set_str(x, "mountPath", v->mount_path);
		json_object_set_new(o, "storage", json_pack("{s:o}", "volume", x));
	}
	return o;
}

json_t *
sk_userspace_to_json(const sk_userspace *us)
{
	json_t *o = json_object();
	json_t *st = sk_userspace_status_to_json(&us->status);

	json_object_set_new(o, "apiVersion", json_string(SK_API_VERSION));
	json_object_set_new(o, "kind", json_string(SK_KIND_USERSPACE));
	json_object_set_new(o, "metadata", sk_meta_to_json(&us->meta));
	json_object_set_new(o, "spec", sk_userspace_spec_to_json(&us->spec));
	if (json_object_size(st) > 0)
		json_object_set(o, "status", st);
	json_decref(st);
	return o;
}

/* ---- decode (lenient about unknown fields; strictness is the validator's job) ---- */

typedef struct dctx {
	sk_error *err;
	int rc;
} dctx;

static void
dfail(dctx *c, const char *path, const char *what)
{
	if (c->rc == SK_OK)
		c->rc = sk_error_set(c->err, SK_EINVALID, "%s: %s", path, what);
}

static char *
get_str(dctx *c, json_t *o, const char *key, const char *path)
{
	json_t *v = json_object_get(o, key);

	if (v == NULL || json_is_null(v))
		return NULL;
	if (!json_is_string(v)) {
		dfail(c, path, "must be a string");
		return NULL;
	}
	return sk_strdup(json_string_value(v));
}

/* A number as jansson or MongoDB extended JSON ({"$numberLong": "5"}), or a decimal string. */
static bool
number_value(json_t *v, int64_t *out)
{
	const char *s;
	char *end;

	if (json_is_object(v)) {
		v = json_object_get(v, "$numberLong") ? json_object_get(v, "$numberLong")
		                                      : json_object_get(v, "$numberInt");
	}
	if (!json_is_string(v))
		return sk_json_int(v, out);
	s = json_string_value(v);
	*out = strtoll(s, &end, 10);
	return *end == '\0' && end != s;
}

static int64_t
get_int(dctx *c, json_t *o, const char *key, const char *path)
{
	json_t *v = json_object_get(o, key);
	int64_t n = 0;

	if (v == NULL || json_is_null(v))
		return 0;
	if (!number_value(v, &n))
		dfail(c, path, "must be an integer");
	return n;
}

/* RFC 3339 string, integer ms, or a MongoDB extended-JSON {"$date": ...}. */
static int64_t
get_time(dctx *c, json_t *o, const char *key, const char *path)
{
	json_t *v = json_object_get(o, key);
	int64_t ms = 0;

	if (json_is_object(v))
		v = json_object_get(v, "$date");
	if (v == NULL || json_is_null(v))
		return 0;
	if (json_is_string(v)) {
		if (sk_time_parse(json_string_value(v), &ms) != SK_OK)
			dfail(c, path, "must be an RFC 3339 time");
		return ms;
	}
	if (!number_value(v, &ms))
		dfail(c, path, "must be an RFC 3339 time");
	return ms;
}

static int64_t
get_duration(dctx *c, json_t *o, const char *key, const char *path, int64_t def)
{
	json_t *v = json_object_get(o, key);
	int64_t ms = def;

	if (v == NULL || json_is_null(v))
		return def;
	if (json_is_string(v)) {
		if (sk_duration_parse(json_string_value(v), &ms) != SK_OK)
			dfail(c, path, "must be a duration");
		return ms;
	}
	if (!sk_json_int(v, &ms))
		dfail(c, path, "must be a duration");
	return ms;
}

static bool
get_bool(dctx *c, json_t *o, const char *key, const char *path, bool def)
{
	json_t *v = json_object_get(o, key);

	if (v == NULL || json_is_null(v))
		return def;
	if (!json_is_boolean(v)) {
		dfail(c, path, "must be a boolean");
		return def;
	}
	return json_is_true(v);
}

/* The C value of an ENUM field; def when absent. */
static int
get_enum(dctx *c, json_t *o, const char *key, const sk_field *f, int def)
{
	json_t *v = json_object_get(o, key);
	int e;

	if (v == NULL || json_is_null(v))
		return def;
	if (sk_field_enum_value(f, json_string_value(v), &e))
		return e;
	dfail(c, f->path, "unknown value");
	return def;
}

static void
get_kvlist(dctx *c, json_t *o, const char *key, const char *path, sk_kvlist *out)
{
	json_t *m = json_object_get(o, key);
	const char *k;
	json_t *v;

	if (m == NULL || json_is_null(m))
		return;
	if (!json_is_object(m)) {
		dfail(c, path, "must be an object");
		return;
	}
	json_object_foreach(m, k, v)
	{
		if (!json_is_string(v)) {
			dfail(c, path, "values must be strings");
			continue;
		}
		sk_kvlist_set(out, k, json_string_value(v));
	}
}

static void
decode_meta(dctx *c, json_t *m, sk_object_meta *out)
{
	json_t *fin = json_object_get(m, "finalizers");

	out->name = get_str(c, m, "name", "metadata.name");
	get_kvlist(c, m, "labels", "metadata.labels", &out->labels);
	get_kvlist(c, m, "annotations", "metadata.annotations", &out->annotations);
	out->uid = get_str(c, m, "uid", "metadata.uid");
	out->generation = get_int(c, m, "generation", "metadata.generation");
	out->resource_version = get_int(c, m, "resourceVersion", "metadata.resourceVersion");
	out->creation_ms = get_time(c, m, "creationTimestamp", "metadata.creationTimestamp");
	out->deletion_ms = get_time(c, m, "deletionTimestamp", "metadata.deletionTimestamp");
	if (fin != NULL && !json_is_null(fin) && !json_is_array(fin))
		dfail(c, "metadata.finalizers", "must be a list");
	if (json_is_array(fin) && json_array_size(fin) > 0) {
		out->finalizers = sk_calloc(json_array_size(fin), sizeof(char *));
		for (size_t i = 0; i < json_array_size(fin); i++) {
			json_t *f = json_array_get(fin, i);
			if (json_is_string(f))
				out->finalizers[out->n_finalizers++] =
				        sk_strdup(json_string_value(f));
		}
	}
}

int
sk_meta_decode(json_t *m, sk_object_meta *out, sk_error *err)
{
	dctx c = { err, SK_OK };

	decode_meta(&c, m, out);
	return c.rc;
}

static void
get_strlist(dctx *c, json_t *o, const char *key, const char *path, sk_strlist *out)
{
	json_t *a = json_object_get(o, key), *item;
	size_t i;

	if (a == NULL || json_is_null(a))
		return;
	if (!json_is_array(a)) {
		dfail(c, path, "must be a list of strings");
		return;
	}
	json_array_foreach(a, i, item)
	{
		if (json_is_string(item))
			sk_strlist_add(out, json_string_value(item));
		else
			dfail(c, path, "must be a list of strings");
	}
}

static void
decode_field(dctx *c, json_t *spec, const sk_field *f, sk_userspace_spec *out)
{
	const char *leaf;
	json_t *o = sk_json_parent(spec, f->path + strlen("spec."), false, &leaf);
	int64_t def = sk_field_default_int(f);

	switch (f->type) {
	case SK_FIELD_STRING: *SK_FIELD_AT(f, out, char *) = get_str(c, o, leaf, f->path); break;
	case SK_FIELD_ENUM: sk_field_set_int(f, out, get_enum(c, o, leaf, f, (int)def)); break;
	case SK_FIELD_INT: sk_field_set_int(f, out, get_int(c, o, leaf, f->path)); break;
	case SK_FIELD_BOOL: sk_field_set_int(f, out, get_bool(c, o, leaf, f->path, def)); break;
	case SK_FIELD_DURATION:
		sk_field_set_int(f, out, get_duration(c, o, leaf, f->path, def));
		break;
	case SK_FIELD_MAP: get_kvlist(c, o, leaf, f->path, SK_FIELD_AT(f, out, sk_kvlist)); break;
	case SK_FIELD_LIST:
		get_strlist(c, o, leaf, f->path, SK_FIELD_AT(f, out, sk_strlist));
		break;
	}
}

static void
decode_spec(dctx *c, json_t *s, sk_userspace_spec *out)
{
	for (size_t i = 0; i < sk_spec_n_fields; i++)
		decode_field(c, s, &sk_spec_fields[i], out);
}

static void
decode_condition(dctx *c, json_t *o, sk_condition *out)
{
	out->type = get_str(c, o, "type", "status.conditions.type");
	out->status = get_str(c, o, "status", "status.conditions.status");
	out->reason = get_str(c, o, "reason", "status.conditions.reason");
	out->message = get_str(c, o, "message", "status.conditions.message");
	out->last_transition_ms =
	        get_time(c, o, "lastTransitionTime", "status.conditions.lastTransitionTime");
	out->observed_generation =
	        get_int(c, o, "observedGeneration", "status.conditions.observedGeneration");
}

static void
decode_drift(dctx *c, json_t *o, sk_drift *out)
{
	out->type = get_str(c, o, "type", "status.drift.type");
	out->sandbox_id = get_str(c, o, "sandboxID", "status.drift.sandboxID");
	out->since_ms = get_time(c, o, "since", "status.drift.since");
	out->detail = get_str(c, o, "detail", "status.drift.detail");
}

static void
decode_usage(dctx *c, json_t *u, sk_usage *out)
{
	if (!json_is_object(u))
		return;
	out->running_s = get_int(c, u, "runningSeconds", "status.usage.runningSeconds");
	out->paused_s = get_int(c, u, "pausedSeconds", "status.usage.pausedSeconds");
	out->wakes = get_int(c, u, "wakes", "status.usage.wakes");
	out->creates = get_int(c, u, "creates", "status.usage.creates");
	out->since_ms = get_time(c, u, "since", "status.usage.since");
	out->updated_ms = get_time(c, u, "lastUpdateTime", "status.usage.lastUpdateTime");
}

static void
decode_archive(dctx *c, json_t *a, sk_archive_status *out)
{
	char *state;

	if (!json_is_object(a))
		return;
	state = get_str(c, a, "state", "status.archive.state");
	if (state != NULL && strcmp(state, "Archived") == 0)
		out->state = SK_ARCHIVE_ARCHIVED;
	else if (state != NULL && strcmp(state, "Restored") == 0)
		out->state = SK_ARCHIVE_RESTORED;
	else if (state != NULL && state[0] != '\0')
		dfail(c, "status.archive.state", "must be Archived or Restored");
	free(state);
	state = get_str(c, a, "method", "status.archive.method");
	if (state != NULL && strcmp(state, "Snapshot") == 0)
		out->method = SK_ARCHIVE_SNAPSHOT;
	else if (state != NULL && state[0] != '\0' && strcmp(state, "ObjectStorage") != 0)
		dfail(c, "status.archive.method", "must be ObjectStorage or Snapshot");
	free(state);
	out->snapshot_id = get_str(c, a, "snapshotID", "status.archive.snapshotID");
	out->bucket = get_str(c, a, "bucket", "status.archive.bucket");
	out->key = get_str(c, a, "key", "status.archive.key");
	out->generation = get_int(c, a, "generation", "status.archive.generation");
	out->time_ms = get_time(c, a, "time", "status.archive.time");
	out->files = get_int(c, a, "files", "status.archive.files");
	out->bytes = get_int(c, a, "bytes", "status.archive.bytes");
	out->sandbox_id = get_str(c, a, "sandboxID", "status.archive.sandboxID");
	out->restore_ms = get_time(c, a, "restoreTime", "status.archive.restoreTime");
	out->intent_ms = get_time(c, a, "archivingSince", "status.archive.archivingSince");
	out->failures = get_int(c, a, "failures", "status.archive.failures");
	out->failed_ms = get_time(c, a, "lastFailureTime", "status.archive.lastFailureTime");
}

static void
decode_snapshots(dctx *c, json_t *v, sk_snapshots_status *out)
{
	json_t *ids, *id;
	size_t i;

	if (!json_is_object(v))
		return;
	out->schedule_ms = get_time(c, v, "lastScheduleTime", "status.snapshots.lastScheduleTime");
	out->last_ms = get_time(c, v, "lastSnapshotTime", "status.snapshots.lastSnapshotTime");
	ids = json_object_get(v, "snapshotIDs");
	if (ids != NULL && !json_is_array(ids))
		dfail(c, "status.snapshots.snapshotIDs", "must be a list of strings");
	json_array_foreach(json_is_array(ids) ? ids : NULL, i, id)
	{
		if (json_is_string(id))
			sk_strlist_add(&out->ids, json_string_value(id));
		else
			dfail(c, "status.snapshots.snapshotIDs", "must be a list of strings");
	}
}

static void
decode_storage(dctx *c, json_t *v, sk_storage_status *out)
{
	if (!json_is_object(v))
		return;
	out->state = get_str(c, v, "state", "status.storage.volume.state");
	out->volume_name = get_str(c, v, "name", "status.storage.volume.name");
	out->volume_id = get_str(c, v, "volumeID", "status.storage.volume.volumeID");
	out->mount_path = get_str(c, v, "mountPath", "status.storage.volume.mountPath");
}

static void
decode_status(dctx *c, json_t *s, sk_userspace_status *out)
{
	json_t *conds = json_object_get(s, "conditions");
	json_t *drift = json_object_get(s, "drift");
	char *phase = get_str(c, s, "phase", "status.phase");

	if (phase != NULL && phase[0] != '\0' && sk_phase_parse(phase, &out->phase) != SK_OK)
		dfail(c, "status.phase", "unknown phase");
	free(phase);
	out->sandbox_id = get_str(c, s, "sandboxID", "status.sandboxID");
	out->observed_generation = get_int(c, s, "observedGeneration", "status.observedGeneration");
	out->message = get_str(c, s, "message", "status.message");
	out->last_reconcile_ms = get_time(c, s, "lastReconcileTime", "status.lastReconcileTime");
	out->last_activity_ms = get_time(c, s, "lastActivityTime", "status.lastActivityTime");
	out->provider = get_str(c, s, "provider", "status.provider");
	decode_usage(c, json_object_get(s, "usage"), &out->usage);
	decode_archive(c, json_object_get(s, "archive"), &out->archive);
	decode_storage(c, json_object_get(json_object_get(s, "storage"), "volume"), &out->storage);
	decode_snapshots(c, json_object_get(s, "snapshots"), &out->snapshots);
	if (c->rc == SK_OK)
		c->rc = sk_migration_from_json(
		        json_object_get(s, "migration"), &out->migration, c->err);
	if (json_is_array(conds) && json_array_size(conds) > 0) {
		out->conditions = sk_calloc(json_array_size(conds), sizeof(sk_condition));
		for (size_t i = 0; i < json_array_size(conds); i++) {
			json_t *o = json_array_get(conds, i);
			if (json_is_object(o))
				decode_condition(c, o, &out->conditions[out->n_conditions++]);
		}
	}
	if (json_is_array(drift) && json_array_size(drift) > 0) {
		out->drift = sk_calloc(json_array_size(drift), sizeof(sk_drift));
		for (size_t i = 0; i < json_array_size(drift); i++) {
			json_t *o = json_array_get(drift, i);
			if (json_is_object(o))
				decode_drift(c, o, &out->drift[out->n_drift++]);
		}
	}
}

int
sk_userspace_decode(json_t *root, sk_userspace **out, sk_error *err)
{
	dctx c = { err, SK_OK };
	sk_userspace *us;
	json_t *meta = json_object_get(root, "metadata");
	json_t *spec = json_object_get(root, "spec");
	json_t *status = json_object_get(root, "status");

	*out = NULL;
	if (!json_is_object(root))
		return sk_error_set(err, SK_EINVALID, "a UserSpace must be an object");
	if (!json_is_object(meta) || !json_is_string(json_object_get(meta, "name")))
		return sk_error_set(err, SK_EINVALID, "metadata.name: required");
	if (spec != NULL && !json_is_object(spec))
		return sk_error_set(err, SK_EINVALID, "spec: must be an object");
	us = sk_calloc(1, sizeof(*us));
	decode_meta(&c, meta, &us->meta);
	decode_spec(&c, spec, &us->spec);
	if (json_is_object(status))
		decode_status(&c, status, &us->status);
	sk_userspace_apply_defaults(us);
	if (c.rc != SK_OK) {
		sk_userspace_free(us);
		return c.rc;
	}
	*out = us;
	return SK_OK;
}
