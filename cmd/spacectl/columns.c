/*
 * spacectl get: kubectl's -o custom-columns=HEADER:PATH,... and
 * --field-selector (metadata.name, spec.userID, spec.mode, status.phase, ...),
 * both over an object as -o json prints it.
 */
#include <stdlib.h>
#include <string.h>

#include "spacectl.h"

/* ---- custom columns ---- */

typedef struct column {
	char *header;
	sk_jsonpath *path;
} column;

struct sk_cli_columns {
	column *cols;
	size_t len;
};

void
sk_cli_columns_free(sk_cli_columns *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i < c->len; i++) {
		free(c->cols[i].header);
		sk_cli_jsonpath_free(c->cols[i].path);
	}
	free(c->cols);
	free(c);
}

/* One HEADER:PATH (PATH as .a.b or {.a.b}); spec points into the whole text. */
static int
parse_column(
        sk_cli_columns *c, const char *all, const char *spec, size_t len, char *msg, size_t msglen)
{
	const char *colon = memchr(spec, ':', len);
	char *path, jmsg[400];
	column *col;
	int rc;

	if (colon == NULL || colon == spec || colon + 1 == spec + len) {
		snprintf(msg, msglen,
		        "expected HEADER:PATH at offset %d of \"%s\" (e.g. NAME:.metadata.name)",
		        (int)(spec - all), all);
		return SK_EINVALID;
	}
	path = colon[1] == '{' ? sk_strndup(colon + 1, (size_t)(spec + len - colon - 1))
	                       : sk_asprintf("{%.*s}", (int)(spec + len - colon - 1), colon + 1);
	c->cols = sk_realloc(c->cols, (c->len + 1) * sizeof(*c->cols));
	col = &c->cols[c->len++];
	col->header = sk_strndup(spec, (size_t)(colon - spec));
	rc = sk_cli_jsonpath_parse(path, &col->path, jmsg, sizeof(jmsg));
	if (rc != 0)
		snprintf(msg, msglen, "column %s (offset %d): %s", col->header, (int)(spec - all),
		        jmsg);
	free(path);
	return rc;
}

int
sk_cli_columns_parse(const char *spec, sk_cli_columns **out, char *msg, size_t msglen)
{
	sk_cli_columns *c = sk_calloc(1, sizeof(*c));
	const char *p = spec;

	*out = NULL;
	while (*p) {
		size_t n = strcspn(p, ",");
		if (parse_column(c, spec, p, n, msg, msglen) != 0) {
			sk_cli_columns_free(c);
			return SK_EINVALID;
		}
		p += n + (p[n] == ',');
	}
	if (c->len == 0) {
		snprintf(msg, msglen, "custom-columns needs at least one HEADER:PATH");
		sk_cli_columns_free(c);
		return SK_EINVALID;
	}
	*out = c;
	return 0;
}

/* A cell: the values joined with ","; <none> when there is none (kubectl's words). */
static char *
cell_text(const sk_jsonpath *path, json_t *obj)
{
	json_t *vals = sk_cli_jsonpath_select(path, obj), *v;
	sk_buf b = SK_BUF_INIT(0);
	size_t i;

	json_array_foreach(vals, i, v)
	{
		char *s = json_is_string(v) ? NULL : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		sk_buf_printf(&b, "%s%s", i ? "," : "", s ? s : json_string_value(v));
		free(s);
	}
	if (json_array_size(vals) == 0)
		sk_buf_printf(&b, "<none>");
	json_decref(vals);
	return sk_buf_detach(&b);
}

void
sk_cli_columns_print(const sk_cli_columns *c, json_t *const *objs, size_t n, bool no_headers)
{
	const char **headers = sk_calloc(c->len, sizeof(*headers));
	char **cells = sk_calloc(c->len, sizeof(*cells));
	sk_table *t;

	for (size_t k = 0; k < c->len; k++)
		headers[k] = c->cols[k].header;
	t = sk_table_new(c->len, headers);
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < c->len; k++)
			cells[k] = cell_text(c->cols[k].path, objs[i]);
		sk_table_add_row(t, (const char *const *)cells);
		for (size_t k = 0; k < c->len; k++)
			free(cells[k]);
	}
	sk_cli_table_write(t, no_headers);
	sk_table_free(t);
	free(cells);
	free(headers);
}

void
sk_cli_table_write(const sk_table *t, bool no_headers)
{
	sk_buf out = SK_BUF_INIT(0);
	size_t skip = 0;

	sk_table_render(t, &out);
	if (no_headers && out.len > 0)
		skip = strcspn(out.data, "\n") + 1;
	if (out.len > skip)
		fwrite(out.data + skip, 1, out.len - skip, stdout);
	sk_buf_dispose(&out);
}

/* ---- field selectors ---- */

/* The fields a selector may name (the API server's field labels for this kind). */
static const char *const field_labels[] = { "metadata.name", "spec.userID", "spec.mode",
	"spec.provider", "spec.template", "status.phase", "status.sandboxID", NULL };

typedef struct field_req {
	char *field, *value;
	bool negate;
} field_req;

struct sk_cli_fieldsel {
	field_req *reqs;
	size_t len;
};

void
sk_cli_fieldsel_free(sk_cli_fieldsel *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->len; i++) {
		free(s->reqs[i].field);
		free(s->reqs[i].value);
	}
	free(s->reqs);
	free(s);
}

static bool
field_label_known(const char *f)
{
	for (size_t i = 0; field_labels[i]; i++) {
		if (strcmp(field_labels[i], f) == 0)
			return true;
	}
	return false;
}

/* One FIELD=VALUE, FIELD==VALUE or FIELD!=VALUE. */
static int
parse_req(sk_cli_fieldsel *s, const char *p, size_t n, sk_error *err)
{
	const char *op = NULL;
	size_t oplen = 0, flen;
	field_req *r;

	for (size_t i = 0; i < n && op == NULL; i++) {
		if (p[i] == '!' && i + 1 < n && p[i + 1] == '=')
			op = p + i, oplen = 2;
		else if (p[i] == '=')
			op = p + i, oplen = i + 1 < n && p[i + 1] == '=' ? 2 : 1;
	}
	if (op == NULL || op == p)
		return sk_error_set(err, SK_EINVALID,
		        "invalid selector: '%.*s'; can't understand '%.*s' (want FIELD=VALUE, "
		        "FIELD==VALUE or FIELD!=VALUE)",
		        (int)n, p, (int)n, p);
	flen = (size_t)(op - p);
	s->reqs = sk_realloc(s->reqs, (s->len + 1) * sizeof(*s->reqs));
	r = &s->reqs[s->len++];
	r->field = sk_strndup(p, flen);
	r->value = sk_strndup(op + oplen, n - flen - oplen);
	r->negate = *op == '!';
	if (!field_label_known(r->field)) {
		sk_buf known = SK_BUF_INIT(0);
		for (size_t i = 0; field_labels[i]; i++)
			sk_buf_printf(&known, "%s%s", i ? ", " : "", field_labels[i]);
		sk_error_set(err, SK_EINVALID, "field label not supported: %s (supported: %s)",
		        r->field, known.data);
		sk_buf_dispose(&known);
		return SK_EINVALID;
	}
	return 0;
}

int
sk_cli_fieldsel_parse(const char *text, sk_cli_fieldsel **out, sk_error *err)
{
	sk_cli_fieldsel *s = sk_calloc(1, sizeof(*s));
	const char *p = text;

	*out = NULL;
	while (*p) {
		size_t n = strcspn(p, ",");
		if (parse_req(s, p, n, err) != 0) {
			sk_cli_fieldsel_free(s);
			return SK_EINVALID;
		}
		p += n + (p[n] == ',');
	}
	*out = s;
	return 0;
}

/* The field's value as text ("" when unset), from the object as -o json prints it. */
static const char *
field_value(json_t *obj, const char *field)
{
	const char *dot = strchr(field, '.');
	char top[32];
	json_t *v;

	snprintf(top, sizeof(top), "%.*s", (int)(dot - field), field);
	v = json_object_get(json_object_get(obj, top), dot + 1);
	return json_is_string(v) ? json_string_value(v) : "";
}

bool
sk_cli_fieldsel_matches(const sk_cli_fieldsel *s, json_t *obj)
{
	for (size_t i = 0; s != NULL && i < s->len; i++) {
		bool eq = strcmp(field_value(obj, s->reqs[i].field), s->reqs[i].value) == 0;
		if (eq == s->reqs[i].negate)
			return false;
	}
	return true;
}
