/*
 * api/quota: the SpaceQuota v1alpha1 object.
 */
#ifndef SK_API_QUOTA_H
#define SK_API_QUOTA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "doc.h"
#include "errlist.h"
#include "kvlist.h"
#include "meta.h"
#include "selector.h"
#include "strlist.h"

/* ---- SpaceQuota ----
 *
 * The SpaceQuota v1alpha1 object, a tenant's limits
 * over the UserSpaces its label selector matches, as Kubernetes'
 * ResourceQuota limits a namespace:
 *
 *   apiVersion: spacekeeper.dev/v1alpha1
 *   kind: SpaceQuota
 *   metadata: {name: team-a}
 *   spec:
 *     selector: {matchLabels: {team: a}, matchExpressions: [{key: tier, operator: In, values: [x]}]}
 *     hard: {spaces: 10, running: 3}
 *   status: {used: {spaces: 4, running: 2}, lastUpdateTime: ...}   # the controller's
 *
 * One table (sk_quota_fields) names every field with its type and
 * description: the validator's known fields, spacectl explain and the CRD
 * parity test read it. `spaces` is enforced at spacectl apply
 * (sk_quota_admit), `running` by the controller's capacity gate.
 */

#define SK_KIND_SPACEQUOTA "SpaceQuota"
#define SK_QUOTA_NO_LIMIT (-1)
/* The resources a SpaceQuota limits (metrics' resource label, messages). */
#define SK_QUOTA_SPACES "spaces"
#define SK_QUOTA_RUNNING "running"
/* The most requirements a selector has, and values one requirement lists:
 * the CRD's maxItems, which bound its CEL rule's cost. */
#define SK_QUOTA_MAX_EXPRS 32
#define SK_QUOTA_MAX_VALUES 256

/* One entry of spec.selector.matchExpressions. */
typedef enum sk_label_op {
	SK_LABEL_IN,
	SK_LABEL_NOT_IN,
	SK_LABEL_EXISTS,
	SK_LABEL_DOES_NOT_EXIST
} sk_label_op;
typedef struct sk_label_requirement {
	char *key;
	sk_label_op op;
	sk_strlist values; /* In, NotIn: at least one; else none */
} sk_label_requirement;

typedef struct sk_spacequota {
	sk_object_meta meta; /* name, labels, annotations; uid and creation by the store */
	sk_kvlist match_labels; /* spec.selector.matchLabels */
	sk_label_requirement *exprs; /* spec.selector.matchExpressions */
	size_t n_exprs;
	int64_t hard_spaces; /* spec.hard.spaces; SK_QUOTA_NO_LIMIT: unset */
	int64_t hard_running; /* spec.hard.running; SK_QUOTA_NO_LIMIT: unset */
	bool has_used; /* status.used was written */
	int64_t used_spaces; /* status.used.spaces */
	int64_t used_running; /* status.used.running */
	int64_t updated_ms; /* status.lastUpdateTime */
	sk_selector *sel; /* the selector compiled (an empty one matches every space) */
} sk_spacequota;

typedef struct sk_spacequota_list {
	sk_spacequota **items; /* sorted by name */
	size_t len;
} sk_spacequota_list;

/* Every field of the kind, in document order ("" is the kind itself). */
typedef struct sk_quota_field {
	const char
	        *path; /* "spec.hard.running"; matchExpressions' items: "...matchExpressions.key" */
	const char *
	        type; /* "string", "integer", "object", "map[string]string", "[]Object", "[]string" */
	const char *desc;
} sk_quota_field;
extern const sk_quota_field sk_quota_fields[];
extern const size_t sk_quota_n_fields;
/* The row of a path; NULL when none. */
const sk_quota_field *sk_quota_field_of(const char *path);

/* Whether a document's kind is SpaceQuota. */
bool sk_doc_is_spacequota(const sk_doc *d);
/* Validates (every error, with field path and file:line:col; status and
 * store-owned metadata accepted) and decodes a document. */
int sk_spacequota_from_doc(const sk_doc *d, sk_spacequota **out, sk_errlist *errs);
/* Decodes a stored object (status included); SK_EINVALID naming the field. */
int sk_spacequota_decode(json_t *root, sk_spacequota **out, sk_error *err);
/* The full object (status when has_used). New reference. */
json_t *sk_spacequota_to_json(const sk_spacequota *q);
/* The object without status and store-owned metadata: what apply compares. */
json_t *sk_spacequota_desired_json(const sk_spacequota *q);
json_t *sk_spacequota_status_to_json(const sk_spacequota *q);
void sk_spacequota_free(sk_spacequota *q); /* NULL-safe */
void sk_spacequota_list_dispose(sk_spacequota_list *l);
/* Whether a space with these labels is in the quota's tenant. */
bool sk_spacequota_matches(const sk_spacequota *q, const sk_kvlist *labels);
/* The selector in kubectl -l form ("team=a,tier in (x)"; "" for every space). */
void sk_spacequota_selector_format(const sk_spacequota *q, char *buf, size_t len);
/* "3/10" or "3" when there is no limit ("-" for an unknown use). */
void sk_spacequota_use_format(bool known, int64_t used, int64_t hard, char *buf, size_t len);

/* Admission of a new space (labels) against the quotas q[0..n): used[i] is
 * how many spaces quota i counts already. The index of the first quota it
 * would take past spec.hard.spaces, with Kubernetes' message in msg
 * ("exceeded quota: team-a, requested: spaces=1, used: spaces=3, limited:
 * spaces=3"); -1 when every quota admits it. Pure. */
int sk_quota_admit(const sk_spacequota *const *q, size_t n, const int64_t *used,
        const sk_kvlist *labels, char *msg, size_t len);
/* The message of a start refused by spec.hard.running. */
void sk_quota_running_message(const sk_spacequota *q, int64_t used, char *msg, size_t len);

#endif
