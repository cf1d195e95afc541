/*
 * api/quota: the SpaceQuota object (quota.h): its field table, strict
 * validation with positions, the codec, the selector (compiled to the
 * kubectl -l form sk_selector_parse reads, so -l and a quota match alike)
 * and admission.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "doc.h"
#include "errlist.h"
#include "kvlist.h"
#include "meta.h"
#include "quota.h"
#include "selector.h"
#include "strlist.h"

#define EXPRS "spec.selector.matchExpressions"

const sk_quota_field sk_quota_fields[] = {
	{ "", "Object",
	        "A SpaceQuota limits the UserSpaces its selector matches (a tenant): how many may "
	        "exist and how many may run at once." },
	{ "apiVersion", "string", "spacekeeper.dev/v1alpha1." },
	{ "kind", "string", "SpaceQuota." },
	{ "metadata", "Object",
	        "Standard object metadata: name, labels, annotations; the store sets uid and "
	        "creationTimestamp." },
	{ "metadata.name", "string",
	        "The quota's name, a DNS-1123 label; refusals and metrics name the quota by it." },
	{ "metadata.labels", "map[string]string", "Labels of the quota itself." },
	{ "metadata.annotations", "map[string]string", "Annotations of the quota itself." },
	{ "spec", "Object", "The tenant and its limits." },
	{ "spec.selector", "Object",
	        "A Kubernetes label selector over UserSpaces: the tenant. Its requirements are "
	        "ANDed; an empty or absent selector matches every UserSpace." },
	{ "spec.selector.matchLabels", "map[string]string",
	        "Labels a UserSpace must carry with exactly these values." },
	{ EXPRS, "[]Object",
	        "Requirements on a UserSpace's labels, each a key, an operator and values." },
	{ EXPRS ".key", "string", "The label key the requirement is about." },
	{ EXPRS ".operator", "string",
	        "In, NotIn (the label's value is, or is not, one of values; NotIn also matches a "
	        "space without the label), Exists or DoesNotExist (the label is present or not)." },
	{ EXPRS ".values", "[]string",
	        "The values In and NotIn compare with (at least one); empty for Exists and "
	        "DoesNotExist." },
	{ "spec.hard", "Object", "The limits; an absent one is not limited." },
	{ "spec.hard.spaces", "integer",
	        "How many UserSpaces the tenant may have: spacectl apply refuses a new one beyond "
	        "it, naming the quota." },
	{ "spec.hard.running", "integer",
	        "How many of the tenant's spaces may have a running sandbox at once: a wake "
	        "beyond it first pauses the tenant's least recently used space, else waits or "
	        "gets 429 naming the quota." },
	{ "status", "Object", "What the controller counted (read-only)." },
	{ "status.used", "Object", "The tenant's current use of each limited resource." },
	{ "status.used.spaces", "integer", "UserSpaces the selector matches." },
	{ "status.used.running", "integer", "Those whose sandbox runs (or is starting)." },
	{ "status.lastUpdateTime", "string",
	        "When the controller last wrote status.used (RFC 3339)." },
};
const size_t sk_quota_n_fields = sizeof(sk_quota_fields) / sizeof(sk_quota_fields[0]);

static const char *const OPS[] = { "In", "NotIn", "Exists", "DoesNotExist", NULL };

const sk_quota_field *
sk_quota_field_of(const char *path)
{
	for (size_t i = 0; i < sk_quota_n_fields; i++) {
		if (strcmp(sk_quota_fields[i].path, path) == 0)
			return &sk_quota_fields[i];
	}
	return NULL;
}

/* The last segments of the rows directly under path, NULL-terminated. */
static void
children(const char *path, const char **out, size_t max)
{
	size_t n = 0, pl = strlen(path);

	for (size_t i = 0; i < sk_quota_n_fields && n + 1 < max; i++) {
		const char *p = sk_quota_fields[i].path, *rest;
		if (*p == '\0' || (pl > 0 && (strncmp(p, path, pl) != 0 || p[pl] != '.')))
			continue;
		rest = pl > 0 ? p + pl + 1 : p;
		if (strchr(rest, '.') == NULL)
			out[n++] = rest;
	}
	out[n] = NULL;
}

static void
check_known(sk_vctx *v, json_t *obj, const char *path, const char *rows)
{
	const char *known[32];

	children(rows, known, 32);
	sk_check_known(v, obj, path, known);
}

bool
sk_doc_is_spacequota(const sk_doc *d)
{
	json_t *k = json_object_get(sk_doc_root(d), "kind");

	return json_is_string(k) && strcmp(json_string_value(k), SK_KIND_SPACEQUOTA) == 0;
}

/* ---- validation ---- */

static void
check_labels(sk_vctx *v, json_t *m, const char *path)
{
	const char *key;
	json_t *val;

	if (!sk_check_object(v, m, path))
		return;
	json_object_foreach(m, key, val)
	{
		char *p = sk_path_join(path, key);
		const char *s = sk_check_string(v, val, p);
		if (!sk_valid_label_key(key))
			sk_doc_error(v->errs, v->doc, p, "invalid label key \"%s\"", key);
		if (s != NULL && !sk_valid_label_value(s))
			sk_doc_error(v->errs, v->doc, p,
			        "invalid label value: at most 63 characters [A-Za-z0-9_.-], "
			        "starting "
			        "and ending alphanumeric");
		free(p);
	}
}

static void
check_expr(sk_vctx *v, json_t *e, const char *path)
{
	json_t *key, *op, *vals, *item;
	const char *s;
	char *p;
	bool listed;
	size_t i;

	if (!sk_check_object(v, e, path))
		return;
	check_known(v, e, path, EXPRS);
	p = sk_path_join(path, "key");
	if ((key = sk_check_field(v, e, path, "key", true)) != NULL &&
	        (s = sk_check_string(v, key, p)) != NULL && !sk_valid_label_key(s))
		sk_doc_error(v->errs, v->doc, p, "invalid label key \"%s\"", s);
	free(p);
	p = sk_path_join(path, "operator");
	op = sk_check_field(v, e, path, "operator", true);
	if (op != NULL && !sk_check_enum(v, op, p, OPS))
		op = NULL;
	free(p);
	p = sk_path_join(path, "values");
	vals = sk_check_field(v, e, path, "values", false);
	if (vals != NULL && !json_is_array(vals)) {
		sk_doc_error(v->errs, v->doc, p, "must be a list of strings");
		vals = NULL;
	} else if (json_array_size(vals) > SK_QUOTA_MAX_VALUES) {
		sk_doc_error(
		        v->errs, v->doc, p, "must have at most %d entries", SK_QUOTA_MAX_VALUES);
	}
	json_array_foreach(vals, i, item)
	{
		char *ip = sk_path_index(p, i);
		if ((s = sk_check_string(v, item, ip)) != NULL && !sk_valid_label_value(s))
			sk_doc_error(v->errs, v->doc, ip, "invalid label value \"%s\"", s);
		free(ip);
	}
	if (op != NULL) {
		listed = strcmp(json_string_value(op), "In") == 0 ||
		        strcmp(json_string_value(op), "NotIn") == 0;
		if (listed && json_array_size(vals) == 0)
			sk_doc_error(v->errs, v->doc, p, "required: at least one value for %s",
			        json_string_value(op));
		if (!listed && json_array_size(vals) > 0)
			sk_doc_error(
			        v->errs, v->doc, p, "must be empty for %s", json_string_value(op));
	}
	free(p);
}

static void
check_selector(sk_vctx *v, json_t *sel)
{
	json_t *ml, *me, *e;
	size_t i;

	if (!sk_check_object(v, sel, "spec.selector"))
		return;
	check_known(v, sel, "spec.selector", "spec.selector");
	if ((ml = sk_check_field(v, sel, "spec.selector", "matchLabels", false)) != NULL)
		check_labels(v, ml, "spec.selector.matchLabels");
	if ((me = sk_check_field(v, sel, "spec.selector", "matchExpressions", false)) == NULL)
		return;
	if (!json_is_array(me)) {
		sk_doc_error(v->errs, v->doc, EXPRS, "must be a list");
		return;
	}
	if (json_array_size(me) > SK_QUOTA_MAX_EXPRS)
		sk_doc_error(
		        v->errs, v->doc, EXPRS, "must have at most %d entries", SK_QUOTA_MAX_EXPRS);
	json_array_foreach(me, i, e)
	{
		char *p = sk_path_index(EXPRS, i);
		check_expr(v, e, p);
		free(p);
	}
}

static void
check_spec(sk_vctx *v, json_t *spec)
{
	static const char *const limits[] = { SK_QUOTA_SPACES, SK_QUOTA_RUNNING };
	json_t *sel, *hard, *n;

	if (!sk_check_object(v, spec, "spec"))
		return;
	check_known(v, spec, "spec", "spec");
	if ((sel = sk_check_field(v, spec, "spec", "selector", false)) != NULL)
		check_selector(v, sel);
	if ((hard = sk_check_field(v, spec, "spec", "hard", true)) == NULL ||
	        !sk_check_object(v, hard, "spec.hard"))
		return;
	check_known(v, hard, "spec.hard", "spec.hard");
	for (size_t i = 0; i < 2; i++) {
		char *p = sk_path_join("spec.hard", limits[i]);
		if ((n = sk_check_field(v, hard, "spec.hard", limits[i], false)) != NULL)
			sk_check_int(v, n, p, 0, 1000000000, NULL);
		free(p);
	}
}

static int
validate(const sk_doc *d, sk_errlist *errs)
{
	sk_vctx v = { d, errs };
	json_t *root = sk_doc_root(d), *val;
	size_t before = errs->len;
	const char *s;

	if (!json_is_object(root)) {
		sk_doc_error(errs, d, "", "a SpaceQuota must be an object");
		return SK_EINVALID;
	}
	if ((val = sk_check_field(&v, root, "", "apiVersion", true)) != NULL &&
	        (s = sk_check_string(&v, val, "apiVersion")) != NULL &&
	        strcmp(s, SK_API_VERSION) != 0)
		sk_doc_error(
		        errs, d, "apiVersion", "must be \"%s\" (got \"%s\")", SK_API_VERSION, s);
	check_known(&v, root, "", "");
	if ((val = sk_check_field(&v, root, "", "metadata", true)) != NULL)
		sk_check_meta(&v, val);
	if ((val = sk_check_field(&v, root, "", "spec", true)) != NULL)
		check_spec(&v, val);
	return errs->len > before ? SK_EINVALID : SK_OK;
}

int
sk_spacequota_from_doc(const sk_doc *d, sk_spacequota **out, sk_errlist *errs)
{
	sk_error err = { 0 };
	json_t *root = sk_doc_root(d);
	json_t *meta = json_object_get(root, "metadata");
	int rc;

	*out = NULL;
	if ((rc = validate(d, errs)) != SK_OK)
		return rc;
	if (json_object_get(meta, "namespace") != NULL)
		json_object_del(meta, "namespace");
	if ((rc = sk_spacequota_decode(root, out, &err)) != SK_OK)
		sk_doc_error(errs, d, "", "%s", err.message);
	return rc;
}

/* ---- the codec ---- */

static int64_t
limit_of(json_t *hard, const char *key)
{
	int64_t n;

	return sk_json_int(json_object_get(hard, key), &n) ? n : SK_QUOTA_NO_LIMIT;
}

static int
decode_exprs(json_t *me, sk_spacequota *q, sk_error *err)
{
	json_t *e, *item;
	size_t i, j;

	if (me == NULL || json_is_null(me))
		return SK_OK;
	if (!json_is_array(me))
		return sk_error_set(err, SK_EINVALID, EXPRS ": must be a list");
	q->exprs = sk_calloc(json_array_size(me) + 1, sizeof(*q->exprs));
	json_array_foreach(me, i, e)
	{
		sk_label_requirement *r = &q->exprs[q->n_exprs];
		const char *key = json_string_value(json_object_get(e, "key"));
		const char *op = json_string_value(json_object_get(e, "operator"));
		size_t k = 0;
		while (op != NULL && OPS[k] != NULL && strcmp(OPS[k], op) != 0)
			k++;
		if (key == NULL || op == NULL || OPS[k] == NULL)
			return sk_error_set(err, SK_EINVALID,
			        EXPRS "[%zu]: a key and an operator "
			              "(In, NotIn, Exists, DoesNotExist)",
			        i);
		r->key = sk_strdup(key);
		r->op = (sk_label_op)k;
		q->n_exprs++;
		json_array_foreach(json_object_get(e, "values"), j, item)
		{
			if (json_is_string(item))
				sk_strlist_add(&r->values, json_string_value(item));
		}
	}
	return SK_OK;
}

static int
compile(sk_spacequota *q, sk_error *err)
{
	char text[4096];

	sk_spacequota_selector_format(q, text, sizeof(text));
	return sk_selector_parse(text, &q->sel, err);
}

static void
decode_status(json_t *st, sk_spacequota *q)
{
	json_t *used = json_object_get(st, "used");
	const char *t = json_string_value(json_object_get(st, "lastUpdateTime"));

	if (!json_is_object(used))
		return;
	q->has_used = true;
	sk_json_int(json_object_get(used, SK_QUOTA_SPACES), &q->used_spaces);
	sk_json_int(json_object_get(used, SK_QUOTA_RUNNING), &q->used_running);
	if (t != NULL)
		sk_time_parse(t, &q->updated_ms);
}

int
sk_spacequota_decode(json_t *root, sk_spacequota **out, sk_error *err)
{
	json_t *meta = json_object_get(root, "metadata"), *spec = json_object_get(root, "spec");
	json_t *sel = json_object_get(spec, "selector"), *hard = json_object_get(spec, "hard");
	json_t *ml = json_object_get(sel, "matchLabels"), *v;
	sk_spacequota *q;
	const char *k;
	int rc;

	*out = NULL;
	if (!json_is_object(meta) || !json_is_string(json_object_get(meta, "name")))
		return sk_error_set(err, SK_EINVALID, "metadata.name: required");
	q = sk_calloc(1, sizeof(*q));
	rc = sk_meta_decode(meta, &q->meta, err);
	json_object_foreach(ml, k, v)
	{
		if (json_is_string(v))
			sk_kvlist_set(&q->match_labels, k, json_string_value(v));
	}
	q->hard_spaces = limit_of(hard, SK_QUOTA_SPACES);
	q->hard_running = limit_of(hard, SK_QUOTA_RUNNING);
	if (rc == SK_OK)
		rc = decode_exprs(json_object_get(sel, "matchExpressions"), q, err);
	if (rc == SK_OK)
		rc = compile(q, err);
	if (rc != SK_OK) {
		sk_spacequota_free(q);
		return rc;
	}
	decode_status(json_object_get(root, "status"), q);
	*out = q;
	return SK_OK;
}

static json_t *
selector_json(const sk_spacequota *q)
{
	json_t *sel = json_object(), *a;

	if (q->match_labels.len > 0)
		json_object_set_new(sel, "matchLabels", sk_kvlist_to_json(&q->match_labels));
	if (q->n_exprs == 0)
		return sel;
	a = json_array();
	for (size_t i = 0; i < q->n_exprs; i++) {
		const sk_label_requirement *r = &q->exprs[i];
		json_t *e = json_object(), *vals = json_array();
		json_object_set_new(e, "key", json_string(r->key));
		json_object_set_new(e, "operator", json_string(OPS[r->op]));
		for (size_t j = 0; j < r->values.len; j++)
			json_array_append_new(vals, json_string(r->values.items[j]));
		if (r->values.len > 0)
			json_object_set_new(e, "values", vals);
		else
			json_decref(vals);
		json_array_append_new(a, e);
	}
	json_object_set_new(sel, "matchExpressions", a);
	return sel;
}

static json_t *
object_json(const sk_spacequota *q, json_t *meta)
{
	json_t *o = json_object(), *spec = json_object(), *hard = json_object();

	json_object_set_new(o, "apiVersion", json_string(SK_API_VERSION));
	json_object_set_new(o, "kind", json_string(SK_KIND_SPACEQUOTA));
	json_object_set_new(o, "metadata", meta);
	json_object_set_new(spec, "selector", selector_json(q));
	if (q->hard_spaces >= 0)
		json_object_set_new(hard, SK_QUOTA_SPACES, json_integer(q->hard_spaces));
	if (q->hard_running >= 0)
		json_object_set_new(hard, SK_QUOTA_RUNNING, json_integer(q->hard_running));
	json_object_set_new(spec, "hard", hard);
	json_object_set_new(o, "spec", spec);
	return o;
}

json_t *
sk_spacequota_desired_json(const sk_spacequota *q)
{
	sk_object_meta m = { 0 };

	m.name = q->meta.name;
	m.labels = q->meta.labels;
	m.annotations = q->meta.annotations;
	return object_json(q, sk_meta_to_json(&m));
}

json_t *
sk_spacequota_status_to_json(const sk_spacequota *q)
{
	json_t *st = json_object(), *used = json_object();
	char t[64];

	json_object_set_new(used, SK_QUOTA_SPACES, json_integer(q->used_spaces));
	json_object_set_new(used, SK_QUOTA_RUNNING, json_integer(q->used_running));
	json_object_set_new(st, "used", used);
	if (q->updated_ms > 0) {
		sk_time_format(q->updated_ms, t, sizeof(t));
		json_object_set_new(st, "lastUpdateTime", json_string(t));
	}
	return st;
}

json_t *
sk_spacequota_to_json(const sk_spacequota *q)
{
	json_t *o = object_json(q, sk_meta_to_json(&q->meta));

	if (q->has_used)
		json_object_set_new(o, "status", sk_spacequota_status_to_json(q));
	return o;
}

void
sk_spacequota_free(sk_spacequota *q)
{
	if (q == NULL)
		return;
	sk_meta_dispose(&q->meta);
	sk_kvlist_dispose(&q->match_labels);
	for (size_t i = 0; i < q->n_exprs; i++) {
		free(q->exprs[i].key);
		sk_strlist_dispose(&q->exprs[i].values);
	}
	free(q->exprs);
	sk_selector_free(q->sel);
	free(q);
}

void
sk_spacequota_list_dispose(sk_spacequota_list *l)
{
	for (size_t i = 0; i < l->len; i++)
		sk_spacequota_free(l->items[i]);
	free(l->items);
	memset(l, 0, sizeof(*l));
}

/* ---- the selector ---- */

bool
sk_spacequota_matches(const sk_spacequota *q, const sk_kvlist *labels)
{
	return q->sel == NULL || sk_selector_matches(q->sel, labels);
}

void
sk_spacequota_selector_format(const sk_spacequota *q, char *buf, size_t len)
{
	sk_buf b = SK_BUF_INIT(0);

	for (size_t i = 0; i < q->match_labels.len; i++)
		sk_buf_printf(&b, "%s%s=%s", b.len ? "," : "", q->match_labels.items[i].key,
		        q->match_labels.items[i].value);
	for (size_t i = 0; i < q->n_exprs; i++) {
		const sk_label_requirement *r = &q->exprs[i];
		sk_buf_printf(&b, "%s%s%s", b.len ? "," : "",
		        r->op == SK_LABEL_DOES_NOT_EXIST ? "!" : "", r->key);
		if (r->op == SK_LABEL_IN || r->op == SK_LABEL_NOT_IN) {
			sk_buf_printf(&b, " %s (", r->op == SK_LABEL_IN ? "in" : "notin");
			for (size_t j = 0; j < r->values.len; j++)
				sk_buf_printf(&b, "%s%s", j ? "," : "", r->values.items[j]);
			sk_buf_printf(&b, ")");
		}
	}
	snprintf(buf, len, "%s", b.data ? b.data : "");
	sk_buf_dispose(&b);
}

void
sk_spacequota_use_format(bool known, int64_t used, int64_t hard, char *buf, size_t len)
{
	if (!known && hard < 0)
		snprintf(buf, len, "-");
	else if (!known)
		snprintf(buf, len, "-/%lld", (long long)hard);
	else if (hard < 0)
		snprintf(buf, len, "%lld", (long long)used);
	else
		snprintf(buf, len, "%lld/%lld", (long long)used, (long long)hard);
}

/* ---- admission ---- */

int
sk_quota_admit(const sk_spacequota *const *q, size_t n, const int64_t *used,
        const sk_kvlist *labels, char *msg, size_t len)
{
	for (size_t i = 0; i < n; i++) {
		if (q[i]->hard_spaces < 0 || !sk_spacequota_matches(q[i], labels) ||
		        used[i] + 1 <= q[i]->hard_spaces)
			continue;
		snprintf(msg, len,
		        "exceeded quota: %s, requested: spaces=1, used: spaces=%lld, limited: "
		        "spaces=%lld",
		        q[i]->meta.name, (long long)used[i], (long long)q[i]->hard_spaces);
		return (int)i;
	}
	return -1;
}

void
sk_quota_running_message(const sk_spacequota *q, int64_t used, char *msg, size_t len)
{
	snprintf(msg, len,
	        "exceeded quota: %s, requested: running=1, used: running=%lld, limited: "
	        "running=%lld",
	        q->meta.name, (long long)used, (long long)q->hard_running);
}
