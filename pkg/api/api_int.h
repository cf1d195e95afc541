/*
 * api internals shared by the api module's files (and config.c): the sk_doc
 * layout with its position table, path helpers, positioned errors, typed
 * field checks for strict validation, and Kubernetes name rules.
 */
#ifndef SK_API_INT_H
#define SK_API_INT_H

#include "config.h"
#include "doc.h"
#include "errlist.h"
#include "meta.h"
#include "migration.h"
#include "network.h"
#include "schema.h"
#include "status.h"
#include "strlist.h"

#define SK_MAX_DEPTH 64
#define SK_MAX_ALIAS_NODES 10000

struct sk_doc {
	json_t *root;
	char *file; /* display name ("<stdin>" for "-"); NULL when none */
	int line; /* 1-based line where the document starts; 0 unknown */
	json_t *pos; /* path -> [line, col] */
};

/* An empty document of file (doc.c; the reader fills it). */
sk_doc *sk_doc_new(const char *file);
/* Records the position of a dotted path ("" is the document root). */
void sk_doc_set_position(sk_doc *d, const char *path, int line, int col);

/* "a" + "b" -> "a.b", "" + "b" -> "b"; "a" + index 2 -> "a[2]". Caller frees. */
char *sk_path_join(const char *parent, const char *key);
char *sk_path_index(const char *parent, size_t i);

/* Adds an error for path with the doc's file and the position of path
 * (or its nearest known parent). d may be NULL. */
void sk_doc_error(sk_errlist *l, const sk_doc *d, const char *path, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

/* ---- typed field checks (strict validation helpers) ----
 * Each reports errors into errs with the field path and position and
 * returns whether the field was present and well-typed. */
typedef struct sk_vctx {
	const sk_doc *doc;
	sk_errlist *errs;
} sk_vctx;

/* Reports "unknown field" for every key of obj not in allowed (NULL-terminated). */
void sk_check_known(sk_vctx *v, json_t *obj, const char *path, const char *const *allowed);
/* "unknown field" at path.key, with "did you mean X?" when one of known is close. */
void sk_check_unknown(
        sk_vctx *v, const char *path, const char *key, const char *const *known, size_t n);
/* Looks up key in obj; when absent and required reports "required". Returns the value. */
json_t *sk_check_field(sk_vctx *v, json_t *obj, const char *path, const char *key, bool required);
bool sk_check_object(sk_vctx *v, json_t *val, const char *path);
const char *sk_check_string(sk_vctx *v, json_t *val, const char *path);
bool sk_check_int(
        sk_vctx *v, json_t *val, const char *path, int64_t min, int64_t max, int64_t *out);
bool sk_check_bool(sk_vctx *v, json_t *val, const char *path, bool *out);
/* One of the NULL-terminated names; reports "must be one of: A, B". */
bool sk_check_enum(sk_vctx *v, json_t *val, const char *path, const char *const *names);
/* Duration string matching ^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$ within [min,max] ms. */
bool sk_check_duration(
        sk_vctx *v, json_t *val, const char *path, int64_t min_ms, int64_t max_ms, int64_t *out);

/* The CRD's duration pattern. */
bool sk_duration_syntax_ok(const char *s);
/* The longest duration a UserSpace spec takes, the CRD's maxLength
 * ("8760h" is 5; "1h0m0.500000000s" 16). */
#define SK_DURATION_MAX_LEN 32
/* Integer value of a JSON integer or an integral real. */
bool sk_json_int(json_t *v, int64_t *out);
/* o[key] = v, when v is not NULL (codec.c). */
void sk_json_set_str(json_t *o, const char *key, const char *v);
/* o[key] = ms as RFC 3339, when ms is not 0 (codec.c). */
void sk_json_set_time(json_t *o, const char *key, int64_t ms);

/* Kubernetes label rules. */
bool sk_valid_dns_subdomain(const char *s);
bool sk_valid_label_key(const char *s);
bool sk_valid_label_value(const char *s);

/* Plain-scalar typing shared by the reader and the emitter: returns the
 * JSON value a plain YAML scalar means (string when nothing else fits). */
json_t *sk_yaml_plain_scalar(const char *s, size_t len);

/* config.c: a config with every setting at its default and no provider. */
sk_controller_config *sk_config_blank(void);

/* settings.c: the table of settings that flags, the environment and a
 * context can set too; config.c decodes the file's sections through it. */
size_t sk_config_setting_count(void);
const char *sk_config_setting_path(size_t i);
/* Checks v against setting i and stores it in out; false with why filled. */
bool sk_config_setting_set(size_t i, json_t *v, sk_controller_config *out, char *why, size_t n);

/* A non-empty string at obj[key] (path.key in errors), or NULL: an error
 * when it is not a string, empty, or missing and required. */
const char *sk_check_nonempty(
        sk_vctx *v, json_t *obj, const char *path, const char *key, bool required);
/* config_tokens.c: controller.connectTokens into out (errors into errs). */
void sk_config_decode_connect_tokens(
        const sk_doc *doc, sk_errlist *errs, json_t *arr, sk_controller_config *out);
void sk_config_connect_tokens_free(sk_controller_config *c);
/* config_archive.c: the archive section into out (errors into errs). */
void sk_config_decode_archive(
        const sk_doc *doc, sk_errlist *errs, json_t *m, sk_controller_config *out);
void sk_config_archive_free(sk_controller_config *c);

/* schema.c: a LIST row's value: a list of 1 to f->max strings, each at
 * most f->max_len bytes and passing f->valid, else "must be RULE"; why (may
 * be NULL) may give a bad entry a message of its own. */
void sk_check_list(sk_vctx *v, const sk_field *f, json_t *a, const char *(*why)(const char *s));
/* network.c: the rules of spec.network's lists (schema rows). The longest
 * entries they take, the CRD's items maxLength: a host name (253) after
 * "*.", and an IPv6 address (45: eight groups with the last two written as
 * IPv4) with "/128". */
#define SK_NET_ALLOW_MAX_LEN 255
#define SK_NET_DENY_MAX_LEN 49
void sk_net_check_list(sk_vctx *v, const sk_field *f, json_t *a);
bool sk_net_allow_ok(const char *s);
bool sk_net_deny_ok(const char *s);

/* Object metadata shared by the kinds (UserSpace, SpaceQuota): strict
 * checks (validate.c), the JSON form and back (codec.c), release (userspace.c). */
void sk_check_meta(sk_vctx *v, json_t *m);
json_t *sk_meta_to_json(const sk_object_meta *m);
int sk_meta_decode(json_t *m, sk_object_meta *out, sk_error *err);
void sk_meta_dispose(sk_object_meta *m);

/* ---- names and bounds used inside the api package only (the public headers have the rest) ---- */
#define SK_API_GROUP "spacekeeper.dev"
#define SK_KIND_CONFIG "ControllerConfig"
#define SK_MAX_DOCUMENT_BYTES (1024 * 1024)

/* ---- the value types' helpers used inside the api package only ---- */

bool sk_strlist_equal(const sk_strlist *a, const sk_strlist *b);

/* spec.network: equal as policies: UNSET is Allow. */
bool sk_network_equal(const sk_network *a, const sk_network *b);

/* {"internet", "publicTraffic", "allowOut", "denyOut"} (defaults written). */
json_t *sk_network_to_json(const sk_network *n);
/* Its fields from such an object (absent: unset); false when malformed. */
bool sk_network_from_json(const json_t *j, sk_network *out);

/* An entry of allowOut or denyOut: an IPv4/IPv6 address or CIDR. */
bool sk_net_is_ip_or_cidr(const char *s);
/* A host name as allowOut takes it: DNS labels, "*." in front allowed. */
bool sk_net_is_host(const char *s);

int sk_migration_phase_parse(const char *s, sk_migration_phase *out);

json_t *sk_migration_to_json(const sk_migration_status *m); /* NULL when NONE */
/* Decodes status.migration; SK_EINVALID naming the field when malformed. */
int sk_migration_from_json(json_t *o, sk_migration_status *out, sk_error *err);

bool sk_archive_status_equal(const sk_archive_status *a, const sk_archive_status *b);

/* schema.c, ENUM: the name of a C value (NULL when none); schema.h:
 * sk_field_enum_value, the value of a name. */
const char *sk_field_enum_name(const sk_field *f, int value);

/* config.c and settings.c: the bounds of workers and shards. */
#define SK_CONFIG_WORKERS_MIN 1
#define SK_CONFIG_WORKERS_MAX 1024
#define SK_CONFIG_SHARDS_MAX 4096

#endif
