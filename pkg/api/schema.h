/*
 * api/schema (schema.c): the UserSpace spec as a table.
 * One row per UserSpace spec field drives validation, JSON decoding and
 * encoding, defaults, equality, copying, the stored document's user maps and
 * the packed cache form; test/unit/check_schema.c holds the CRD to it. A new
 * spec field is a member of sk_userspace_spec, a row, and its tests.
 */
#ifndef SK_API_SCHEMA_H
#define SK_API_SCHEMA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "userspace.h"

typedef enum sk_field_type {
	SK_FIELD_STRING, /* char *; NULL unset */
	SK_FIELD_ENUM, /* a C enum, int-sized */
	SK_FIELD_INT, /* int; 0 unset (omitted on output) */
	SK_FIELD_BOOL, /* bool */
	SK_FIELD_DURATION, /* int64_t milliseconds; 0 unset (the default applies) */
	SK_FIELD_MAP, /* sk_kvlist of strings; omitted on output when empty */
	SK_FIELD_LIST, /* sk_strlist; empty: [def] */
} sk_field_type;

struct sk_vctx;
struct sk_field;
typedef void (*sk_field_check_fn)(struct sk_vctx *v, const struct sk_field *f, json_t *val);

typedef struct sk_field {
	const char *path; /* JSON path: "spec.lifecycle.idleTimeout" */
	sk_field_type type;
	size_t offset; /* of the member in sk_userspace_spec */
	bool required;
	const char *def; /* the default as the CRD writes it ("base", "15m", "true"); NULL none */
	int64_t min, max; /* INT: value; DURATION: ms; MAP, LIST: max is the entry limit */
	const char *const *names; /* ENUM: the values in CRD order, NULL-terminated */
	const int *values; /* ENUM: the C value of each name; NULL: its index */
	bool (*valid)(const char *s); /* STRING, LIST items: the rule */
	const char *rule; /* STRING: "must match <rule>" */
	const char *pattern; /* STRING: the CRD pattern */
	/* STRING: the CRD minLength and maxLength; LIST: each entry's maxLength;
	 * DURATION: its maxLength (the API server estimates a CEL rule's cost from
	 * these bounds); 0 none */
	int min_len, max_len;
	sk_field_check_fn check; /* MAP: key and value rules */
	const char *desc; /* the CRD description; NULL none */
} sk_field;

extern const sk_field sk_spec_fields[];
extern const size_t sk_spec_n_fields;

/* The row of a JSON path ("spec.mode"); NULL when none. */
const sk_field *sk_spec_field(const char *path);
/* A template, or spec.template's default in the table when NULL ("base"). */
const char *sk_spec_template(const char *template_id);
/* The provider TTL set on create and connect when a provider's sandboxTimeout
 * is unset (1 h); the one default outside sk_spec_fields, kept beside it. */
extern const int64_t sk_default_sandbox_timeout_ms;
/* ENUM: the C value of a name (false when none). */
bool sk_field_enum_value(const sk_field *f, const char *name, int *out);
/* ENUM, INT, BOOL, DURATION: the member as an integer, and set. */
int64_t sk_field_get_int(const sk_field *f, const sk_userspace_spec *s);
void sk_field_set_int(const sk_field *f, sk_userspace_spec *s, int64_t v);
/* The member of spec s that f describes, as a T * (char *, sk_kvlist, ...). */
#define SK_FIELD_AT(f, s, T) ((T *)(void *)((char *)(s) + (f)->offset))
/* ENUM, BOOL, DURATION: the default as a C value (0 when none). */
int64_t sk_field_default_int(const sk_field *f);
/* The object holding path's last segment under obj (path relative to obj,
 * "lifecycle.idleTimeout"), created when create; *leaf is that segment.
 * NULL when absent or not an object. */
json_t *sk_json_parent(json_t *obj, const char *path, bool create, const char **leaf);

#endif
