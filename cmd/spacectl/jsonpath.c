/*
 * spacectl: the subset of kubectl's JSONPath templates that users type
 * (get -o jsonpath=..., --sort-by): text, {.a.b}, {.items[*].metadata.name},
 * {['key.with.dots']}, {.items[0]}, {range .items[*]}...{end} and {"\n"},
 * walked over the jansson document. Anything else (filters, slices, unions,
 * recursive descent) is refused with its position. The same tree reads Go
 * templates' common subset (get -o go-template=...): {{.a.b}},
 * {{range .items}}...{{end}}, {{index .a "key"}} and {{"text"}}.
 */
#include <stdlib.h>
#include <string.h>

#include "spacectl.h"

typedef enum { STEP_KEY, STEP_INDEX, STEP_ALL } step_kind;

typedef struct jp_step {
	step_kind kind;
	char *key; /* STEP_KEY */
	long index; /* STEP_INDEX; negative counts from the end */
} jp_step;

typedef enum { NODE_TEXT, NODE_PATH, NODE_RANGE } node_kind;

typedef struct jp_node {
	node_kind kind;
	char *text; /* NODE_TEXT: the literal text */
	jp_step *steps; /* NODE_PATH, NODE_RANGE */
	size_t nsteps;
	struct sk_jsonpath *body; /* NODE_RANGE: the template up to {end} */
} jp_node;

struct sk_jsonpath {
	jp_node *nodes;
	size_t len;
	bool go; /* a Go template: a missing value prints <no value> */
};

typedef struct jp_parser {
	const char *src; /* the whole template, for offsets */
	const char *p;
	char *msg;
	size_t msglen;
	bool go; /* {{ }} delimiters, Go's actions */
} jp_parser;

/* The delimiters of the template's actions. */
static const char *
jp_open(const jp_parser *ps)
{
	return ps->go ? "{{" : "{";
}

static const char *
jp_close(const jp_parser *ps)
{
	return ps->go ? "}}" : "}";
}

static int
jp_fail(jp_parser *ps, const char *at, const char *what)
{
	snprintf(ps->msg, ps->msglen, "%s at offset %d of \"%s\"", what, (int)(at - ps->src),
	        ps->src);
	return SK_EINVALID;
}

static jp_node *
jp_push(sk_jsonpath *jp, node_kind kind)
{
	jp->nodes = sk_realloc(jp->nodes, (jp->len + 1) * sizeof(*jp->nodes));
	memset(&jp->nodes[jp->len], 0, sizeof(*jp->nodes));
	jp->nodes[jp->len].kind = kind;
	return &jp->nodes[jp->len++];
}

static void
jp_push_step(jp_node *n, step_kind kind, char *key, long index)
{
	n->steps = sk_realloc(n->steps, (n->nsteps + 1) * sizeof(*n->steps));
	n->steps[n->nsteps].kind = kind;
	n->steps[n->nsteps].key = key;
	n->steps[n->nsteps].index = index;
	n->nsteps++;
}

static const char *
skip_space(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* A quoted string at ps->p ('...' or "..."), with \n \t \r \\ \" \' escapes. */
static int
parse_quoted(jp_parser *ps, char **out)
{
	char q = *ps->p;
	const char *start = ps->p;
	sk_buf b = SK_BUF_INIT(0);

	for (ps->p++; *ps->p && *ps->p != q; ps->p++) {
		char c = *ps->p;
		if (c == '\\' && ps->p[1]) {
			c = *++ps->p;
			c = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
		}
		sk_buf_append(&b, &c, 1);
	}
	if (*ps->p != q) {
		sk_buf_dispose(&b);
		return jp_fail(ps, start, "unterminated string");
	}
	ps->p++;
	sk_buf_append(&b, "", 1);
	*out = sk_buf_detach(&b);
	return 0;
}

/* A field name after '.': letters, digits, '_', '-', '/', and "\." for a dot. */
static int
parse_name(jp_parser *ps, jp_node *n)
{
	sk_buf b = SK_BUF_INIT(0);
	const char *start = ps->p;

	while (*ps->p) {
		char c = *ps->p;
		if (c == '\\' && ps->p[1] == '.') {
			c = '.';
			ps->p++;
		} else if (!(c == '_' || c == '-' || c == '/' || (c >= '0' && c <= '9') ||
		                   (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) {
			break;
		}
		sk_buf_append(&b, &c, 1);
		ps->p++;
	}
	if (ps->p == start) {
		sk_buf_dispose(&b);
		if (*ps->p == '.')
			return jp_fail(ps, start - 1, "unsupported recursive descent \"..\"");
		if (*ps->p == '*') {
			ps->p++;
			jp_push_step(n, STEP_ALL, NULL, 0);
			return 0;
		}
		return jp_fail(ps, start, "expected a field name after \".\"");
	}
	sk_buf_append(&b, "", 1);
	jp_push_step(n, STEP_KEY, sk_buf_detach(&b), 0);
	return 0;
}

/* [N], [*] or ['key']; filters, slices and unions are refused. */
static int
parse_bracket(jp_parser *ps, jp_node *n)
{
	const char *start = ps->p;
	char *key = NULL, *end;
	long idx;

	ps->p = skip_space(ps->p + 1);
	if (*ps->p == '\'' || *ps->p == '"') {
		if (parse_quoted(ps, &key) != 0)
			return SK_EINVALID;
		jp_push_step(n, STEP_KEY, key, 0);
	} else if (*ps->p == '*') {
		ps->p++;
		jp_push_step(n, STEP_ALL, NULL, 0);
	} else {
		idx = strtol(ps->p, &end, 10);
		if (end == ps->p)
			return jp_fail(
			        ps, start, "unsupported subscript (supported: [N], [*], ['key'])");
		ps->p = end;
		jp_push_step(n, STEP_INDEX, NULL, idx);
	}
	ps->p = skip_space(ps->p);
	if (*ps->p != ']')
		return jp_fail(ps, start,
		        "unsupported subscript (supported: [N], [*], ['key']; no filters, "
		        "slices or unions)");
	ps->p++;
	return 0;
}

/* The path inside {...} up to '}': [$|@] then .name, [..] steps. */
static int
parse_path(jp_parser *ps, jp_node *n)
{
	if (*ps->p == '$' || *ps->p == '@')
		ps->p++;
	for (;;) {
		ps->p = skip_space(ps->p);
		if (*ps->p == '}' || *ps->p == '\0')
			return 0;
		if (*ps->p == '.') {
			ps->p++;
			if (*ps->p == '}' && n->nsteps == 0)
				return 0; /* {.}: the current value */
			if (parse_name(ps, n) != 0)
				return SK_EINVALID;
		} else if (*ps->p == '[' && !ps->go) {
			if (parse_bracket(ps, n) != 0)
				return SK_EINVALID;
		} else if (ps->go && (*ps->p == '"' || (*ps->p >= '0' && *ps->p <= '9'))) {
			return 0; /* index's arguments */
		} else {
			return jp_fail(ps, ps->p,
			        ps->go ? "unsupported go-template syntax (no pipes, variables or "
			                 "functions but index)"
			               : "unsupported jsonpath syntax");
		}
	}
}

static int parse_seq(jp_parser *ps, sk_jsonpath *jp, bool in_range);

static bool
word_at(const char *p, const char *w)
{
	size_t n = strlen(w);

	return strncmp(p, w, n) == 0 && (p[n] == ' ' || p[n] == '}' || p[n] == '\0');
}

/* {{index .a "key" 0}}: the path, then a key or index step per argument. */
static int
parse_index(jp_parser *ps, jp_node *n)
{
	char *key, *end;

	ps->p = skip_space(ps->p + 5);
	if (*ps->p != '.')
		return jp_fail(ps, ps->p, "index wants a .path first");
	if (parse_path(ps, n) != 0)
		return SK_EINVALID;
	for (ps->p = skip_space(ps->p); *ps->p != '}' && *ps->p; ps->p = skip_space(ps->p)) {
		if (*ps->p == '"') {
			if (parse_quoted(ps, &key) != 0)
				return SK_EINVALID;
			jp_push_step(n, STEP_KEY, key, 0);
			continue;
		}
		jp_push_step(n, STEP_INDEX, NULL, strtol(ps->p, &end, 10));
		if (end == ps->p)
			return jp_fail(ps, ps->p, "index wants \"key\" or a number");
		ps->p = end;
	}
	return 0;
}

/* A Go action that is none of ours: named, with its offset. */
static int
go_unsupported(jp_parser *ps)
{
	char what[160];
	size_t n = strcspn(ps->p, " }");

	snprintf(what, sizeof(what),
	        "unsupported action \"%.*s\" (supported: .path, range, end, index, \"text\")",
	        (int)(n < 40 ? n : 40), ps->p);
	return jp_fail(ps, ps->p, what);
}

/* One {...} at ps->p (after the '{'). *ended: it was {end}. */
static int
parse_action(jp_parser *ps, sk_jsonpath *jp, bool in_range, bool *ended)
{
	const char *open = ps->p - strlen(jp_open(ps));
	jp_node *n;

	ps->p = skip_space(ps->p);
	if (ps->go && (*ps->p == '-' || *ps->p == '/'))
		return jp_fail(ps, ps->p, "unsupported trim marker or comment");
	if (word_at(ps->p, "end")) {
		if (!in_range)
			return jp_fail(ps, open,
			        ps->go ? "{{end}} without {{range}}" : "{end} without {range}");
		ps->p = skip_space(ps->p + 3);
		*ended = true;
	} else if (*ps->p == '"' || *ps->p == '\'') {
		n = jp_push(jp, NODE_TEXT);
		if (parse_quoted(ps, &n->text) != 0)
			return SK_EINVALID;
	} else if (word_at(ps->p, "range")) {
		n = jp_push(jp, NODE_RANGE);
		ps->p = skip_space(ps->p + 5);
		if (parse_path(ps, n) != 0)
			return SK_EINVALID;
	} else if (ps->go && word_at(ps->p, "index")) {
		if (parse_index(ps, jp_push(jp, NODE_PATH)) != 0)
			return SK_EINVALID;
	} else if (ps->go && *ps->p != '.') {
		return go_unsupported(ps);
	} else {
		n = jp_push(jp, NODE_PATH);
		if (parse_path(ps, n) != 0)
			return SK_EINVALID;
	}
	ps->p = skip_space(ps->p);
	if (strncmp(ps->p, jp_close(ps), strlen(jp_close(ps))) != 0)
		return jp_fail(ps, open, ps->go ? "unclosed \"{{\"" : "unclosed \"{\"");
	ps->p += strlen(jp_close(ps));
	if (!*ended && jp->nodes[jp->len - 1].kind == NODE_RANGE) {
		n = &jp->nodes[jp->len - 1];
		n->body = sk_calloc(1, sizeof(*n->body));
		return parse_seq(ps, n->body, true);
	}
	return 0;
}

static int
parse_seq(jp_parser *ps, sk_jsonpath *jp, bool in_range)
{
	const char *start = ps->p;
	bool ended = false;

	const char *open = jp_open(ps);
	size_t olen = strlen(open);

	jp->go = ps->go;
	while (*ps->p && !ended) {
		const char *t = ps->p;
		if (strncmp(t, open, olen) != 0) {
			ps->p++;
			while (*ps->p && strncmp(ps->p, open, olen) != 0)
				ps->p++;
			jp_push(jp, NODE_TEXT)->text = sk_strndup(t, (size_t)(ps->p - t));
			continue;
		}
		ps->p += olen;
		if (parse_action(ps, jp, in_range, &ended) != 0)
			return SK_EINVALID;
	}
	if (in_range && !ended)
		return jp_fail(
		        ps, start, ps->go ? "{{range}} without {{end}}" : "{range} without {end}");
	return 0;
}

void
sk_cli_jsonpath_free(sk_jsonpath *jp)
{
	if (jp == NULL)
		return;
	for (size_t i = 0; i < jp->len; i++) {
		for (size_t k = 0; k < jp->nodes[i].nsteps; k++)
			free(jp->nodes[i].steps[k].key);
		free(jp->nodes[i].steps);
		free(jp->nodes[i].text);
		sk_cli_jsonpath_free(jp->nodes[i].body);
	}
	free(jp->nodes);
	free(jp);
}

static int
template_parse(const char *tmpl, bool go, sk_jsonpath **out, char *msg, size_t msglen)
{
	jp_parser ps = { tmpl, tmpl, msg, msglen, go };
	sk_jsonpath *jp = sk_calloc(1, sizeof(*jp));

	*out = NULL;
	if (parse_seq(&ps, jp, false) != 0) {
		sk_cli_jsonpath_free(jp);
		return SK_EINVALID;
	}
	*out = jp;
	return 0;
}

int
sk_cli_jsonpath_parse(const char *tmpl, sk_jsonpath **out, char *msg, size_t msglen)
{
	return template_parse(tmpl, false, out, msg, msglen);
}

int
sk_cli_gotemplate_parse(const char *tmpl, sk_jsonpath **out, char *msg, size_t msglen)
{
	return template_parse(tmpl, true, out, msg, msglen);
}

/* The values the steps select from v, appended to out. */
static void
select_values(json_t *v, const jp_step *steps, size_t n, json_t *out)
{
	json_t *child;
	size_t i;
	const char *k;

	if (v == NULL)
		return;
	if (n == 0) {
		json_array_append(out, v);
		return;
	}
	switch (steps[0].kind) {
	case STEP_KEY:
		select_values(json_object_get(v, steps[0].key), steps + 1, n - 1, out);
		break;
	case STEP_INDEX: {
		long idx = steps[0].index, len = (long)json_array_size(v);
		if (idx < 0)
			idx += len;
		if (idx >= 0 && idx < len)
			select_values(json_array_get(v, (size_t)idx), steps + 1, n - 1, out);
		break;
	}
	case STEP_ALL:
		if (json_is_array(v)) {
			json_array_foreach(v, i, child) select_values(child, steps + 1, n - 1, out);
		} else if (json_is_object(v)) {
			json_object_foreach(v, k, child)
			        select_values(child, steps + 1, n - 1, out);
		}
		break;
	}
}

json_t *
sk_cli_jsonpath_select(const sk_jsonpath *jp, json_t *root)
{
	json_t *out = json_array();

	for (size_t i = 0; i < jp->len; i++) {
		if (jp->nodes[i].kind == NODE_PATH)
			select_values(root, jp->nodes[i].steps, jp->nodes[i].nsteps, out);
	}
	return out;
}

/* A value as kubectl prints it: strings bare, the rest as compact JSON. */
static void
print_value(sk_buf *b, const json_t *v)
{
	char *s;

	if (json_is_string(v)) {
		sk_buf_append(b, json_string_value(v), json_string_length(v));
		return;
	}
	s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
	if (s)
		sk_buf_append(b, s, strlen(s));
	free(s);
}

static void exec_seq(const sk_jsonpath *jp, json_t *cur, sk_buf *b);

static void
exec_node(const jp_node *n, json_t *cur, sk_buf *b, bool go)
{
	json_t *vals = json_array(), *v;
	size_t i;

	if (n->kind == NODE_TEXT) {
		sk_buf_append(b, n->text, strlen(n->text));
		json_decref(vals);
		return;
	}
	select_values(cur, n->steps, n->nsteps, vals);
	/* {range .items} walks the array itself, as {range .items[*]} does */
	if (n->kind == NODE_RANGE && json_array_size(vals) == 1 &&
	        json_is_array(json_array_get(vals, 0))) {
		v = json_incref(json_array_get(vals, 0));
		json_decref(vals);
		vals = v;
	}
	if (go && n->kind == NODE_PATH && json_array_size(vals) == 0)
		sk_buf_printf(b, "<no value>");
	json_array_foreach(vals, i, v)
	{
		if (n->kind == NODE_RANGE) {
			exec_seq(n->body, v, b);
		} else {
			if (i > 0)
				sk_buf_append(b, " ", 1);
			print_value(b, v);
		}
	}
	json_decref(vals);
}

static void
exec_seq(const sk_jsonpath *jp, json_t *cur, sk_buf *b)
{
	for (size_t i = 0; i < jp->len; i++)
		exec_node(&jp->nodes[i], cur, b, jp->go);
}

void
sk_cli_jsonpath_exec(const sk_jsonpath *jp, json_t *root, sk_buf *out)
{
	exec_seq(jp, root, out);
}
