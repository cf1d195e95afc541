/*
 * api/migration: status.migration (a move of a space to another provider or
 * template) and its JSON form.
 */
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "migration.h"

/* ---- status.migration ---- */

static const char *const mig_phase_names[] = { "", "Pending", "Creating", "Copying", "Verifying",
	"Switching", "Retiring", "Done", "Aborted" };

_Static_assert(sizeof(mig_phase_names) / sizeof(mig_phase_names[0]) == SK_MIG_COUNT,
        "a name per migration phase");

const char *
sk_migration_phase_name(sk_migration_phase p)
{
	return (size_t)p < SK_MIG_COUNT ? mig_phase_names[p] : "";
}

int
sk_migration_phase_parse(const char *s, sk_migration_phase *out)
{
	for (size_t i = 1; s != NULL && i < SK_MIG_COUNT; i++) {
		if (strcmp(s, mig_phase_names[i]) == 0) {
			*out = (sk_migration_phase)i;
			return SK_OK;
		}
	}
	return SK_EINVALID;
}

bool
sk_migration_active(const sk_migration_status *m)
{
	return m->phase >= SK_MIG_PENDING && m->phase <= SK_MIG_RETIRING;
}

static bool
str_eq(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static void
end_dispose(sk_migration_end *e)
{
	free(e->provider);
	free(e->template_id);
	free(e->sandbox_id);
}

void
sk_migration_dispose(sk_migration_status *m)
{
	if (m == NULL)
		return;
	end_dispose(&m->source);
	end_dispose(&m->target);
	free(m->trigger);
	free(m->reason);
	memset(m, 0, sizeof(*m));
}

static void
end_copy(sk_migration_end *dst, const sk_migration_end *src)
{
	dst->provider = sk_strdup(src->provider);
	dst->template_id = sk_strdup(src->template_id);
	dst->sandbox_id = sk_strdup(src->sandbox_id);
}

void
sk_migration_copy(sk_migration_status *dst, const sk_migration_status *src)
{
	*dst = *src;
	end_copy(&dst->source, &src->source);
	end_copy(&dst->target, &src->target);
	dst->trigger = sk_strdup(src->trigger);
	dst->reason = sk_strdup(src->reason);
}

static bool
end_equal(const sk_migration_end *a, const sk_migration_end *b)
{
	return str_eq(a->provider, b->provider) && str_eq(a->template_id, b->template_id) &&
	        str_eq(a->sandbox_id, b->sandbox_id);
}

bool
sk_migration_equal(const sk_migration_status *a, const sk_migration_status *b)
{
	return a->phase == b->phase && end_equal(&a->source, &b->source) &&
	        end_equal(&a->target, &b->target) && a->files_done == b->files_done &&
	        a->files_total == b->files_total && a->bytes_done == b->bytes_done &&
	        a->bytes_total == b->bytes_total && a->start_ms == b->start_ms &&
	        a->step_ms == b->step_ms && str_eq(a->trigger, b->trigger) &&
	        str_eq(a->reason, b->reason);
}

static json_t *
end_to_json(const sk_migration_end *e)
{
	json_t *o = json_object();

	sk_json_set_str(o, "provider", e->provider);
	sk_json_set_str(o, "template", e->template_id);
	sk_json_set_str(o, "sandboxID", e->sandbox_id);
	return o;
}

json_t *
sk_migration_to_json(const sk_migration_status *m)
{
	json_t *o;

	if (m->phase == SK_MIG_NONE)
		return NULL;
	o = json_object();
	json_object_set_new(o, "phase", json_string(sk_migration_phase_name(m->phase)));
	json_object_set_new(o, "source", end_to_json(&m->source));
	json_object_set_new(o, "target", end_to_json(&m->target));
	json_object_set_new(o, "filesDone", json_integer(m->files_done));
	json_object_set_new(o, "filesTotal", json_integer(m->files_total));
	json_object_set_new(o, "bytesDone", json_integer(m->bytes_done));
	json_object_set_new(o, "bytesTotal", json_integer(m->bytes_total));
	sk_json_set_time(o, "startTime", m->start_ms);
	sk_json_set_time(o, "stepTime", m->step_ms);
	sk_json_set_str(o, "trigger", m->trigger);
	sk_json_set_str(o, "reason", m->reason);
	return o;
}

/* ---- decoding ---- */

typedef struct mctx {
	sk_error *err;
	int rc;
} mctx;

static char *
get_str(mctx *c, json_t *o, const char *key, const char *path)
{
	json_t *v = json_object_get(o, key);

	if (v == NULL || json_is_null(v))
		return NULL;
	if (!json_is_string(v)) {
		if (c->rc == 0)
			c->rc = sk_error_set(c->err, SK_EINVALID, "%s: must be a string", path);
		return NULL;
	}
	return sk_strdup(json_string_value(v));
}

static int64_t
get_int(mctx *c, json_t *o, const char *key, const char *path)
{
	json_t *v = json_object_get(o, key);
	int64_t n = 0;

	if (v != NULL && !sk_json_int(v, &n) && c->rc == 0)
		c->rc = sk_error_set(c->err, SK_EINVALID, "%s: must be an integer", path);
	return n;
}

static int64_t
get_time(mctx *c, json_t *o, const char *key, const char *path)
{
	json_t *v = json_object_get(o, key);
	int64_t ms = 0;

	if (v == NULL || json_is_null(v))
		return 0;
	if ((!json_is_string(v) || sk_time_parse(json_string_value(v), &ms) != SK_OK) && c->rc == 0)
		c->rc = sk_error_set(c->err, SK_EINVALID, "%s: must be an RFC 3339 time", path);
	return ms;
}

static void
get_end(mctx *c, json_t *o, const char *key, sk_migration_end *out)
{
	char path[64];
	json_t *e = json_object_get(o, key);

	if (e == NULL)
		return;
	snprintf(path, sizeof(path), "status.migration.%s", key);
	if (!json_is_object(e)) {
		if (c->rc == 0)
			c->rc = sk_error_set(c->err, SK_EINVALID, "%s: must be an object", path);
		return;
	}
	out->provider = get_str(c, e, "provider", path);
	out->template_id = get_str(c, e, "template", path);
	out->sandbox_id = get_str(c, e, "sandboxID", path);
}

int
sk_migration_from_json(json_t *o, sk_migration_status *out, sk_error *err)
{
	mctx c = { err, 0 };
	char *phase;

	memset(out, 0, sizeof(*out));
	if (o == NULL || json_is_null(o))
		return 0;
	if (!json_is_object(o))
		return sk_error_set(err, SK_EINVALID, "status.migration: must be an object");
	phase = get_str(&c, o, "phase", "status.migration.phase");
	if (c.rc == 0 && sk_migration_phase_parse(phase, &out->phase) != SK_OK)
		c.rc = sk_error_set(err, SK_EINVALID,
		        "status.migration.phase: unknown phase \"%s\"", phase ? phase : "");
	free(phase);
	get_end(&c, o, "source", &out->source);
	get_end(&c, o, "target", &out->target);
	out->files_done = get_int(&c, o, "filesDone", "status.migration.filesDone");
	out->files_total = get_int(&c, o, "filesTotal", "status.migration.filesTotal");
	out->bytes_done = get_int(&c, o, "bytesDone", "status.migration.bytesDone");
	out->bytes_total = get_int(&c, o, "bytesTotal", "status.migration.bytesTotal");
	out->start_ms = get_time(&c, o, "startTime", "status.migration.startTime");
	out->step_ms = get_time(&c, o, "stepTime", "status.migration.stepTime");
	out->trigger = get_str(&c, o, "trigger", "status.migration.trigger");
	out->reason = get_str(&c, o, "reason", "status.migration.reason");
	if (c.rc != 0)
		sk_migration_dispose(out);
	return c.rc;
}
