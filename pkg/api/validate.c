/*
 * api/validate: strict validation of a UserSpace document. Collects every
 * error with its field path and file:line:col. These rules are the same as
 * the openAPIV3Schema in crds/spacekeeper.dev_userspaces.yaml.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"

#define MAX_ANNOTATIONS_BYTES (256 * 1024)
#define HOUR_MS (3600LL * 1000)
#define MAX_ENV_ENTRIES 128
#define MAX_METADATA_ENTRIES 64

static const char *const top_fields[] = { "apiVersion", "kind", "metadata", "spec", "status",
	NULL };
static const char *const meta_fields[] = { "name", "labels", "annotations", "uid", "generation",
	"resourceVersion", "creationTimestamp", "deletionTimestamp", "finalizers", NULL };
static const char *const spec_fields[] = { "userID", "provider", "template", "mode", "resources",
	"lifecycle", "env", "metadata", "deletionPolicy", "health", NULL };
static const char *const resources_fields[] = { "cpuCount", "memoryMB", NULL };
static const char *const lifecycle_fields[] = { "idleTimeout", "onTimeout", "autoResume", NULL };
static const char *const health_fields[] = { "unhealthyAfter", "remediation", NULL };
static const char *const modes[] = { "Running", "Paused", NULL };
static const char *const on_timeouts[] = { "pause", "kill", NULL };
static const char *const deletion_policies[] = { "Delete", "Retain", NULL };
static const char *const remediations[] = { "Replace", "Report", NULL };

/* Runs fn on the child path of obj.key when present; returns the value. */
static json_t *
child(sk_vctx *v, json_t *obj, const char *path, const char *key, bool required, char **cpath)
{
	json_t *val = sk_check_field(v, obj, path, key, required);

	*cpath = sk_path_join(path, key);
	return val;
}

static void
check_exact(sk_vctx *v, json_t *root, const char *key, const char *want)
{
	char *p;
	json_t *val = child(v, root, "", key, true, &p);
	const char *s = val != NULL ? sk_check_string(v, val, p) : NULL;

	if (s != NULL && strcmp(s, want) != 0)
		sk_doc_error(v->errs, v->doc, p, "must be \"%s\" (got \"%s\")", want, s);
	free(p);
}

static bool
env_name_ok(const char *s)
{
	if (!isalpha((unsigned char)s[0]) && s[0] != '_')
		return false;
	for (; *s; s++) {
		if (!isalnum((unsigned char)*s) && *s != '_')
			return false;
	}
	return true;
}

static bool
metadata_key_ok(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > 64)
		return false;
	for (; *s; s++) {
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-')
			return false;
	}
	return true;
}

/* A label-like map: every key a label key, every value a string. Returns total bytes. */
static size_t
check_label_map(sk_vctx *v, json_t *m, const char *path, bool label_values)
{
	const char *key;
	json_t *val;
	size_t total = 0;

	if (!sk_check_object(v, m, path))
		return 0;
	json_object_foreach(m, key, val)
	{
		char *p = sk_path_join(path, key);
		const char *s;
		if (!sk_valid_label_key(key))
			sk_doc_error(v->errs, v->doc, p,
			        "invalid key: must be an optional DNS subdomain prefix and '/', "
			        "then "
			        "1-63 characters [A-Za-z0-9_.-] starting and ending alphanumeric");
		s = sk_check_string(v, val, p);
		if (s != NULL && label_values && !sk_valid_label_value(s))
			sk_doc_error(v->errs, v->doc, p,
			        "invalid label value: at most 63 characters [A-Za-z0-9_.-], "
			        "starting "
			        "and ending alphanumeric");
		total += strlen(key) + (s != NULL ? strlen(s) : 0);
		free(p);
	}
	return total;
}

static void
check_meta(sk_vctx *v, json_t *m)
{
	const char *path = "metadata";
	char *p;
	json_t *val;
	int64_t n;

	if (!sk_check_object(v, m, path))
		return;
	sk_check_known(v, m, path, meta_fields);
	if ((val = child(v, m, path, "name", true, &p)) != NULL) {
		const char *s = sk_check_string(v, val, p);
		if (s != NULL && !sk_valid_name(s))
			sk_doc_error(v->errs, v->doc, p,
			        "must be a DNS-1123 label: at most 63 characters [a-z0-9-], "
			        "starting and "
			        "ending alphanumeric (got \"%s\")",
			        s);
	}
	free(p);
	if ((val = child(v, m, path, "labels", false, &p)) != NULL)
		check_label_map(v, val, p, true);
	free(p);
	if ((val = child(v, m, path, "annotations", false, &p)) != NULL &&
	        check_label_map(v, val, p, false) > MAX_ANNOTATIONS_BYTES)
		sk_doc_error(v->errs, v->doc, p, "total size must be at most %d bytes",
		        MAX_ANNOTATIONS_BYTES);
	free(p);
	/* store-owned fields: accepted, checked loosely */
	if ((val = child(v, m, path, "uid", false, &p)) != NULL)
		sk_check_string(v, val, p);
	free(p);
	if ((val = child(v, m, path, "generation", false, &p)) != NULL)
		sk_check_int(v, val, p, 0, INT64_MAX, NULL);
	free(p);
	if ((val = child(v, m, path, "resourceVersion", false, &p)) != NULL &&
	        !json_is_string(val) && !sk_json_int(val, &n))
		sk_doc_error(v->errs, v->doc, p, "must be an integer");
	free(p);
	if ((val = child(v, m, path, "creationTimestamp", false, &p)) != NULL && !json_is_null(val))
		sk_check_string(v, val, p);
	free(p);
	if ((val = child(v, m, path, "deletionTimestamp", false, &p)) != NULL && !json_is_null(val))
		sk_check_string(v, val, p);
	free(p);
	if ((val = child(v, m, path, "finalizers", false, &p)) != NULL && !json_is_array(val))
		sk_doc_error(v->errs, v->doc, p, "must be a list of strings");
	free(p);
}

static bool
key_safe_quiet(const char *key)
{
	return key[0] != '$' && strchr(key, '.') == NULL;
}

/* Rejects keys that would be unsafe in MongoDB field names. */
static bool
key_safe(sk_vctx *v, const char *key, const char *p)
{
	if (!key_safe_quiet(key)) {
		sk_doc_error(v->errs, v->doc, p, "key must not start with '$' or contain '.'");
		return false;
	}
	return true;
}

static void
check_env(sk_vctx *v, json_t *m, const char *path)
{
	const char *key;
	json_t *val;

	if (!sk_check_object(v, m, path))
		return;
	if (json_object_size(m) > MAX_ENV_ENTRIES)
		sk_doc_error(
		        v->errs, v->doc, path, "must have at most %d entries", MAX_ENV_ENTRIES);
	json_object_foreach(m, key, val)
	{
		char *p = sk_path_join(path, key);
		if (key_safe(v, key, p) && !env_name_ok(key))
			sk_doc_error(v->errs, v->doc, p,
			        "key must be an environment variable name "
			        "([A-Za-z_][A-Za-z0-9_]*)");
		sk_check_string(v, val, p);
		free(p);
	}
}

static void
check_sandbox_metadata(sk_vctx *v, json_t *m, const char *path)
{
	const char *key;
	json_t *val;

	if (!sk_check_object(v, m, path))
		return;
	if (json_object_size(m) > MAX_METADATA_ENTRIES)
		sk_doc_error(v->errs, v->doc, path, "must have at most %d entries",
		        MAX_METADATA_ENTRIES);
	json_object_foreach(m, key, val)
	{
		char *p = sk_path_join(path, key);
		const char *s;
		if (key_safe(v, key, p) && sk_reserved_metadata_key(key))
			sk_doc_error(v->errs, v->doc, p,
			        "key \"%s\" is reserved (spacekeeper sets it on the sandbox)", key);
		else if (key_safe_quiet(key) && !metadata_key_ok(key))
			sk_doc_error(v->errs, v->doc, p, "key must match [A-Za-z0-9_-]{1,64}");
		s = sk_check_string(v, val, p);
		if (s != NULL && !sk_valid_metadata_value(s))
			sk_doc_error(v->errs, v->doc, p, "value must match [A-Za-z0-9._-]{0,256}");
		free(p);
	}
}

static void
check_resources(sk_vctx *v, json_t *m, const char *path)
{
	char *p;
	json_t *val;

	if (!sk_check_object(v, m, path))
		return;
	sk_check_known(v, m, path, resources_fields);
	if ((val = child(v, m, path, "cpuCount", false, &p)) != NULL)
		sk_check_int(v, val, p, 1, 64, NULL);
	free(p);
	if ((val = child(v, m, path, "memoryMB", false, &p)) != NULL)
		sk_check_int(v, val, p, 128, 262144, NULL);
	free(p);
}

static void
check_lifecycle(sk_vctx *v, json_t *m, const char *path)
{
	char *p;
	json_t *val;

	if (!sk_check_object(v, m, path))
		return;
	sk_check_known(v, m, path, lifecycle_fields);
	if ((val = child(v, m, path, "idleTimeout", false, &p)) != NULL)
		sk_check_duration(v, val, p, 0, 720 * HOUR_MS, NULL); /* 0: always on */
	free(p);
	if ((val = child(v, m, path, "onTimeout", false, &p)) != NULL)
		sk_check_enum(v, val, p, on_timeouts);
	free(p);
	if ((val = child(v, m, path, "autoResume", false, &p)) != NULL)
		sk_check_bool(v, val, p, NULL);
	free(p);
}

static void
check_health(sk_vctx *v, json_t *m, const char *path)
{
	char *p;
	json_t *val;

	if (!sk_check_object(v, m, path))
		return;
	sk_check_known(v, m, path, health_fields);
	if ((val = child(v, m, path, "unhealthyAfter", false, &p)) != NULL)
		sk_check_duration(v, val, p, 1000, 24 * HOUR_MS, NULL);
	free(p);
	if ((val = child(v, m, path, "remediation", false, &p)) != NULL)
		sk_check_enum(v, val, p, remediations);
	free(p);
}

static void
check_pattern_field(sk_vctx *v, json_t *m, const char *path, const char *key, bool required,
        bool (*ok)(const char *), const char *rule)
{
	char *p;
	json_t *val = child(v, m, path, key, required, &p);
	const char *s = val != NULL ? sk_check_string(v, val, p) : NULL;

	if (s != NULL && !ok(s))
		sk_doc_error(v->errs, v->doc, p, "must match %s (got \"%.140s\")", rule, s);
	free(p);
}

static bool
template_ok(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > 128)
		return false;
	for (; *s; s++) {
		if (!isalnum((unsigned char)*s) && strchr("._/:-", *s) == NULL)
			return false;
	}
	return true;
}

static void
check_spec(sk_vctx *v, json_t *m)
{
	const char *path = "spec";
	char *p;
	json_t *val;

	if (!sk_check_object(v, m, path))
		return;
	sk_check_known(v, m, path, spec_fields);
	check_pattern_field(v, m, path, "userID", true, sk_valid_user_id, "[A-Za-z0-9._-]{1,128}");
	check_pattern_field(
	        v, m, path, "provider", false, sk_valid_name, "a DNS-1123 label [a-z0-9-]{1,63}");
	check_pattern_field(v, m, path, "template", false, template_ok, "[A-Za-z0-9._/:-]{1,128}");
	if ((val = child(v, m, path, "mode", false, &p)) != NULL)
		sk_check_enum(v, val, p, modes);
	free(p);
	if ((val = child(v, m, path, "resources", false, &p)) != NULL)
		check_resources(v, val, p);
	free(p);
	if ((val = child(v, m, path, "lifecycle", false, &p)) != NULL)
		check_lifecycle(v, val, p);
	free(p);
	if ((val = child(v, m, path, "env", false, &p)) != NULL)
		check_env(v, val, p);
	free(p);
	if ((val = child(v, m, path, "metadata", false, &p)) != NULL)
		check_sandbox_metadata(v, val, p);
	free(p);
	if ((val = child(v, m, path, "deletionPolicy", false, &p)) != NULL)
		sk_check_enum(v, val, p, deletion_policies);
	free(p);
	if ((val = child(v, m, path, "health", false, &p)) != NULL)
		check_health(v, val, p);
	free(p);
}

/* Status is written by the controller: accepted and ignored, shape checked loosely. */
static void
check_status(sk_vctx *v, json_t *m)
{
	json_t *phase;

	if (json_is_null(m) || !sk_check_object(v, m, "status"))
		return;
	phase = json_object_get(m, "phase");
	if (phase != NULL)
		sk_check_string(v, phase, "status.phase");
}

int
sk_userspace_validate(const sk_doc *d, sk_errlist *errs)
{
	sk_vctx v = { d, errs };
	json_t *root = d->root;
	size_t before = errs->len;
	json_t *val;

	if (!json_is_object(root)) {
		sk_doc_error(errs, d, "", "a UserSpace document must be a mapping");
		return SK_EINVALID;
	}
	check_exact(&v, root, "apiVersion", SK_API_VERSION);
	check_exact(&v, root, "kind", SK_KIND_USERSPACE);
	sk_check_known(&v, root, "", top_fields);
	if ((val = sk_check_field(&v, root, "", "metadata", true)) != NULL)
		check_meta(&v, val);
	if ((val = sk_check_field(&v, root, "", "spec", true)) != NULL)
		check_spec(&v, val);
	if ((val = json_object_get(root, "status")) != NULL)
		check_status(&v, val);
	return errs->len > before ? SK_EINVALID : SK_OK;
}

int
sk_userspace_from_doc(const sk_doc *d, sk_userspace **out, sk_errlist *errs)
{
	sk_error err;
	int rc;

	*out = NULL;
	rc = sk_userspace_validate(d, errs);
	if (rc != SK_OK)
		return rc;
	rc = sk_userspace_decode(d->root, out, &err);
	if (rc != SK_OK)
		sk_doc_error(errs, d, "", "%s", err.message);
	return rc;
}
