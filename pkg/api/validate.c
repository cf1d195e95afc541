/*
 * api/validate: strict validation of a UserSpace document. Collects every
 * error with its field path and file:line:col. These rules are the same as
 * the openAPIV3Schema in crds/spacekeeper.dev_userspaces.yaml; those of spec
 * are the rows of sk_spec_fields (schema.c), walked here.
 */
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "doc.h"
#include "errlist.h"
#include "meta.h"
#include "names.h"
#include "schema.h"
#include "userspace.h"

#define MAX_ANNOTATIONS_BYTES (256 * 1024)

static const char *const top_fields[] = { "apiVersion", "kind", "metadata", "spec", "status",
	NULL };
/* namespace: UserSpace is cluster-scoped, so the API server clears it (and
 * kustomize sets it on everything); accepted and ignored here too. */
static const char *const meta_fields[] = { "name", "generateName", "namespace", "labels",
	"annotations", "uid", "generation", "resourceVersion", "creationTimestamp",
	"deletionTimestamp", "finalizers", NULL };

/* Finalizer names are qualified names, as the API server checks them. */
static void
check_finalizers(sk_vctx *v, json_t *list, const char *path)
{
	json_t *item;
	size_t i;

	if (!json_is_array(list)) {
		sk_doc_error(v->errs, v->doc, path, "must be a list of strings");
		return;
	}
	json_array_foreach(list, i, item)
	{
		char *p = sk_path_index(path, i);
		const char *s = sk_check_string(v, item, p);
		if (s != NULL && !sk_valid_label_key(s))
			sk_doc_error(v->errs, v->doc, p,
			        "must be a qualified name: an optional DNS subdomain prefix and "
			        "'/', "
			        "then 1-63 characters [A-Za-z0-9_.-] starting and ending "
			        "alphanumeric "
			        "(got \"%.140s\")",
			        s);
		free(p);
	}
}

/* The API server's name generator (names.SimpleNameGenerator): the prefix cut
 * to 58 characters, then 5 random characters of utilrand's alphabet. */
#define GENERATED_PREFIX_MAX 58
#define GENERATED_SUFFIX 5
#define GENERATED_NAME_MAX (GENERATED_PREFIX_MAX + GENERATED_SUFFIX)

static void
generate_name(const char *prefix, char out[GENERATED_NAME_MAX + 1])
{
	static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
	unsigned char r[GENERATED_SUFFIX];
	size_t n = strlen(prefix);

	if (n > GENERATED_PREFIX_MAX)
		n = GENERATED_PREFIX_MAX;
	sk_random_bytes(r, sizeof(r));
	memcpy(out, prefix, n);
	for (size_t i = 0; i < GENERATED_SUFFIX; i++)
		out[n + i] = alphabet[r[i] % (sizeof(alphabet) - 1)];
	out[n + GENERATED_SUFFIX] = '\0';
}

/* Whether every name generated from prefix is a DNS-1123 label. */
static bool
generate_name_valid(const char *prefix)
{
	char name[GENERATED_NAME_MAX + 1];

	generate_name(prefix, name);
	return sk_valid_name(name);
}

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

void
sk_check_meta(sk_vctx *v, json_t *m)
{
	const char *path = "metadata";
	char *p;
	json_t *val;
	int64_t n;

	if (!sk_check_object(v, m, path))
		return;
	sk_check_known(v, m, path, meta_fields);
	if ((val = child(v, m, path, "generateName", false, &p)) != NULL) {
		const char *s = sk_check_string(v, val, p);
		if (s != NULL && !generate_name_valid(s))
			sk_doc_error(v->errs, v->doc, p,
			        "must be a DNS-1123 label prefix: [a-z0-9-], starting "
			        "alphanumeric (got \"%.140s\")",
			        s);
	}
	free(p);
	if ((val = child(v, m, path, "name", val == NULL, &p)) != NULL) {
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
	if ((val = child(v, m, path, "namespace", false, &p)) != NULL && !json_is_null(val))
		sk_check_string(v, val, p);
	free(p);
	if ((val = child(v, m, path, "finalizers", false, &p)) != NULL && !json_is_null(val))
		check_finalizers(v, val, p);
	free(p);
}

/* Whether key is a field of the object at path (spec or one of its groups). */
static bool
spec_key_known(const char *path, const char *key)
{
	size_t pl = strlen(path), kl = strlen(key);

	for (size_t i = 0; i < sk_spec_n_fields; i++) {
		const char *fp = sk_spec_fields[i].path;
		if (strncmp(fp, path, pl) == 0 && fp[pl] == '.' &&
		        strncmp(fp + pl + 1, key, kl) == 0 &&
		        (fp[pl + 1 + kl] == '\0' || fp[pl + 1 + kl] == '.'))
			return true;
	}
	return false;
}

/* The keys of the object at path (spec or a group): the next segment of each
 * row under it, once each. Returns how many (at most max). */
static size_t
spec_keys(const char *path, char keys[][64], const char **ptrs, size_t max)
{
	size_t pl = strlen(path), n = 0;

	for (size_t i = 0; i < sk_spec_n_fields && n < max; i++) {
		const char *fp = sk_spec_fields[i].path, *k = fp + pl + 1;
		bool seen = false;
		if (strncmp(fp, path, pl) != 0 || fp[pl] != '.')
			continue;
		snprintf(keys[n], 64, "%.*s", (int)strcspn(k, "."), k);
		for (size_t j = 0; j < n && !seen; j++)
			seen = strcmp(keys[j], keys[n]) == 0;
		if (!seen) {
			ptrs[n] = keys[n];
			n++;
		}
	}
	return n;
}

/* An object of spec fields: false when it is not one; reports unknown fields. */
static bool
check_spec_object(sk_vctx *v, json_t *m, const char *path)
{
	const char *key;
	json_t *val;

	if (!sk_check_object(v, m, path))
		return false;
	json_object_foreach(m, key, val)
	{
		if (!spec_key_known(path, key)) {
			char keys[64][64];
			const char *ptrs[64];
			size_t n = spec_keys(path, keys, ptrs, 64);
			sk_check_unknown(v, path, key, ptrs, n);
		}
	}
	return true;
}

/* A duration that may be 0 is 0 or at least 1s: "1ns" would read as 0 ms
 * (for idleTimeout: silently always on). The CRD has the same rule, and the
 * same maxLength. */
static void
check_spec_duration(sk_vctx *v, const sk_field *f, json_t *val)
{
	int64_t ms;
	const char *s = json_string_value(val);

	if (s != NULL && strlen(s) > (size_t)f->max_len) {
		sk_doc_error(v->errs, v->doc, f->path,
		        "must be at most %d characters (got \"%.140s\")", f->max_len, s);
		return;
	}
	if (!sk_check_duration(v, val, f->path, f->min, f->max, &ms) || f->min != 0)
		return;
	if (ms < 1000 && strpbrk(s, "123456789") != NULL)
		sk_doc_error(v->errs, v->doc, f->path, "must be 0%s or at least 1s (got \"%s\")",
		        strcmp(f->path, "spec.lifecycle.idleTimeout") == 0 ? " (always on)" : "",
		        s);
}

static void
check_spec_field(sk_vctx *v, const sk_field *f, json_t *val)
{
	const char *s;

	switch (f->type) {
	case SK_FIELD_STRING:
		s = sk_check_string(v, val, f->path);
		if (s != NULL && !f->valid(s))
			sk_doc_error(v->errs, v->doc, f->path, "must match %s (got \"%.140s\")",
			        f->rule, s);
		break;
	case SK_FIELD_ENUM: sk_check_enum(v, val, f->path, f->names); break;
	case SK_FIELD_INT: sk_check_int(v, val, f->path, f->min, f->max, NULL); break;
	case SK_FIELD_BOOL: sk_check_bool(v, val, f->path, NULL); break;
	case SK_FIELD_DURATION: check_spec_duration(v, f, val); break;
	case SK_FIELD_MAP:
	case SK_FIELD_LIST: f->check(v, f, val); break;
	}
}

/* The object a row's field is a key of: spec itself, or its group
 * (spec.lifecycle, spec.storage.volume), each level checked at the group's
 * first row. NULL when absent or not an object. */
static json_t *
field_parent(sk_vctx *v, json_t *spec, const sk_field *f, const sk_field *prev, json_t *prev_obj)
{
	const char *dot = strrchr(f->path, '.');
	size_t n = (size_t)(dot - f->path);
	char group[64];
	json_t *obj = spec;

	if (n == strlen("spec"))
		return spec;
	if (prev != NULL && strncmp(prev->path, f->path, n + 1) == 0 &&
	        strchr(prev->path + n + 1, '.') == NULL)
		return prev_obj;
	snprintf(group, sizeof(group), "%.*s", (int)n, f->path);
	for (size_t end = strlen("spec");;) {
		size_t start = end + 1;
		char c;
		end = start + strcspn(group + start, ".");
		c = group[end];
		group[end] = '\0'; /* group: the path down to this level */
		obj = json_object_get(obj, group + start);
		/* null is unset, as the API server prunes it before defaulting */
		if (obj == NULL || json_is_null(obj) || !check_spec_object(v, obj, group))
			return NULL;
		if (c == '\0')
			return obj;
		group[end] = c;
	}
}

/* spec.storage.volume asks for a volume by any of its fields; an empty one
 * would ask for none, silently (the CRD has minProperties 1 too). */
static void
check_storage_volume(sk_vctx *v, json_t *spec)
{
	json_t *vol = json_object_get(json_object_get(spec, "storage"), "volume");

	if (json_is_object(vol) && json_object_size(vol) == 0)
		sk_doc_error(v->errs, v->doc, "spec.storage.volume",
		        "give name, mountPath or deletionPolicy (deletionPolicy: Retain takes "
		        "every default)");
}

static void
check_spec(sk_vctx *v, json_t *m)
{
	const sk_field *prev = NULL;
	json_t *obj = NULL;

	if (!check_spec_object(v, m, "spec"))
		return;
	for (size_t i = 0; i < sk_spec_n_fields; i++) {
		const sk_field *f = &sk_spec_fields[i];
		const char *leaf = strrchr(f->path, '.') + 1;
		json_t *val;

		obj = field_parent(v, m, f, prev, obj);
		prev = f;
		if (obj == NULL)
			continue;
		val = json_object_get(obj, leaf);
		if (val != NULL && !json_is_null(val))
			check_spec_field(v, f, val);
		else if (f->required)
			sk_doc_error(v->errs, v->doc, f->path, "required");
	}
	check_storage_volume(v, m);
}

/* Status is written by the controller: accepted and ignored, shape checked loosely
 * (sk_userspace_from_input drops it first, as the API server does). */
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
		sk_check_meta(&v, val);
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

/* metadata.generateName without metadata.name: the name the API server
 * generates on create, at generateName's position; on update an error. */
static void
resolve_generate_name(sk_doc *d, bool create, sk_errlist *errs)
{
	json_t *meta = json_object_get(d->root, "metadata");
	const char *prefix = json_string_value(json_object_get(meta, "generateName"));
	char name[GENERATED_NAME_MAX + 1];
	int line = 0, col = 0;

	if (prefix == NULL || json_object_get(meta, "name") != NULL || !generate_name_valid(prefix))
		return;
	if (!create) {
		sk_doc_error(errs, d, "metadata.generateName",
		        "names an object only on create (spacectl create -f); this command "
		        "needs metadata.name (kubectl: resource name may not be empty)");
		return;
	}
	generate_name(prefix, name);
	json_object_set_new(meta, "name", json_string(name));
	if (sk_doc_position(d, "metadata.generateName", &line, &col))
		sk_doc_set_position(d, "metadata.name", line, col);
}

int
sk_userspace_from_input(sk_doc *d, bool create, sk_userspace **out, sk_errlist *errs)
{
	size_t before = errs->len;

	*out = NULL;
	if (json_is_object(d->root)) {
		json_object_del(d->root, "status");
		resolve_generate_name(d, create, errs);
	}
	if (errs->len > before)
		return SK_EINVALID;
	return sk_userspace_from_doc(d, out, errs);
}
