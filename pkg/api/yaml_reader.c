/*
 * api/yaml_reader: YAML (and JSON, which is YAML) into sk_docs (doc.c) with
 * source positions, via libyaml's event API. Bounded: document size, nesting
 * depth and alias expansion (a billion-laughs bomb fails in linear time);
 * binary input is rejected before parsing.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "api_int.h"
#include "doc.h"

typedef struct frame {
	json_t *node; /* object or array */
	char *path;
	char *key; /* pending mapping key, NULL while a key is expected */
	char *anchor;
	size_t anchor_nodes; /* node count when the anchored collection started */
} frame;

typedef struct anchor {
	char *name;
	json_t *node;
	size_t size;
} anchor;

typedef struct parser {
	yaml_parser_t yp;
	const char *file;
	frame stack[SK_MAX_DEPTH + 1];
	int depth;
	anchor *anchors;
	size_t n_anchors;
	size_t nodes, expanded;
	size_t doc_start;
	sk_doc *cur;
	sk_doclist *out;
	sk_error *err;
} parser;

/* Grows the array at powers of two: one realloc per document made reading
 * 100,000 documents quadratic wherever realloc copies (ASan always does).
 * Only for lists that start empty here (sk_doc_parse's own). */
static void
doclist_push(sk_doclist *l, sk_doc *d)
{
	if (l->len == 0 || (l->len >= 8 && (l->len & (l->len - 1)) == 0))
		l->items = sk_realloc(l->items, (l->len < 8 ? 8 : l->len * 2) * sizeof(*l->items));
	l->items[l->len++] = d;
}

/* ---- input checks ---- */

/* Returns the offset of the first NUL or invalid UTF-8 byte, or len. */
static size_t
bad_utf8_offset(const unsigned char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		unsigned char c = s[i];
		size_t n;
		uint32_t cp;
		if (c == 0)
			return i;
		if (c < 0x80) {
			i++;
			continue;
		}
		if ((c & 0xe0) == 0xc0)
			n = 1, cp = c & 0x1f;
		else if ((c & 0xf0) == 0xe0)
			n = 2, cp = c & 0x0f;
		else if ((c & 0xf8) == 0xf0)
			n = 3, cp = c & 0x07;
		else
			return i;
		if (i + n >= len)
			return i;
		for (size_t k = 1; k <= n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return i;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		        cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return i;
		i += n + 1;
	}
	return len;
}

/* ---- the event-driven builder ---- */

static int perr(parser *p, const yaml_mark_t *m, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static int
perr(parser *p, const yaml_mark_t *m, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return sk_error_set(
	        p->err, SK_EINVALID, "%s:%zu:%zu: %s", p->file, m->line + 1, m->column + 1, msg);
}

static void
anchors_clear(parser *p)
{
	for (size_t i = 0; i < p->n_anchors; i++) {
		free(p->anchors[i].name);
		json_decref(p->anchors[i].node);
	}
	free(p->anchors);
	p->anchors = NULL;
	p->n_anchors = 0;
}

static void
anchor_add(parser *p, const char *name, json_t *node, size_t size)
{
	p->anchors = sk_realloc(p->anchors, (p->n_anchors + 1) * sizeof(*p->anchors));
	p->anchors[p->n_anchors].name = sk_strdup(name);
	p->anchors[p->n_anchors].node = json_incref(node);
	p->anchors[p->n_anchors].size = size;
	p->n_anchors++;
}

static const anchor *
anchor_find(parser *p, const char *name)
{
	for (size_t i = p->n_anchors; i > 0; i--) {
		if (strcmp(p->anchors[i - 1].name, name) == 0)
			return &p->anchors[i - 1];
	}
	return NULL;
}

static void
frames_clear(parser *p)
{
	for (; p->depth > 0; p->depth--) {
		frame *f = &p->stack[p->depth - 1];
		json_decref(f->node);
		free(f->path);
		free(f->key);
		free(f->anchor);
	}
}

/* The path of the value about to be added to the top frame; records its
 * position for sequence items and the root. */
static char *
value_path(parser *p, const yaml_mark_t *m)
{
	frame *f;
	char *path;

	if (p->depth == 0) {
		sk_doc_set_position(p->cur, "", (int)m->line + 1, (int)m->column + 1);
		return sk_strdup("");
	}
	f = &p->stack[p->depth - 1];
	if (json_is_object(f->node))
		return sk_path_join(f->path, f->key);
	path = sk_path_index(f->path, json_array_size(f->node));
	sk_doc_set_position(p->cur, path, (int)m->line + 1, (int)m->column + 1);
	return path;
}

/* Adds a finished value (reference stolen) to the top frame or as the root. */
static int
add_value(parser *p, json_t *v, const yaml_mark_t *m)
{
	frame *f;

	if (p->depth == 0) {
		json_decref(p->cur->root);
		p->cur->root = v;
		return SK_OK;
	}
	f = &p->stack[p->depth - 1];
	if (json_is_array(f->node)) {
		json_array_append_new(f->node, v);
		return SK_OK;
	}
	if (f->key == NULL) {
		json_decref(v);
		return perr(p, m, "mapping keys must be scalars");
	}
	json_object_set_new(f->node, f->key, v);
	free(f->key);
	f->key = NULL;
	return SK_OK;
}

static bool
expecting_key(parser *p)
{
	frame *f = p->depth > 0 ? &p->stack[p->depth - 1] : NULL;

	return f != NULL && json_is_object(f->node) && f->key == NULL;
}

/* A plain key is resolved as a value is: kubectl's reader (go-yaml v2, then
 * sigs.k8s.io/yaml) makes `on:` the boolean key true, written "true". */
static const char *
key_text(const yaml_event_t *e)
{
	const char *key = (const char *)e->data.scalar.value;
	json_t *v;
	const char *text = key;

	if (e->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || e->data.scalar.tag != NULL)
		return key;
	v = sk_yaml_plain_scalar(key, e->data.scalar.length);
	if (json_is_boolean(v))
		text = json_is_true(v) ? "true" : "false";
	json_decref(v);
	return text;
}

static int
on_key(parser *p, const yaml_event_t *e)
{
	frame *f = &p->stack[p->depth - 1];
	const char *key = key_text(e);
	char *path;

	if (json_object_get(f->node, key) != NULL)
		return perr(p, &e->start_mark, "duplicate key \"%s\"", key);
	f->key = sk_strdup(key);
	path = sk_path_join(f->path, f->key);
	sk_doc_set_position(
	        p->cur, path, (int)e->start_mark.line + 1, (int)e->start_mark.column + 1);
	free(path);
	return SK_OK;
}

static json_t *
scalar_value(const yaml_event_t *e)
{
	const char *s = (const char *)e->data.scalar.value;
	size_t len = e->data.scalar.length;
	const char *tag = (const char *)e->data.scalar.tag;

	if (tag != NULL && (strcmp(tag, YAML_STR_TAG) == 0 || strcmp(tag, "!") == 0))
		return json_stringn(s, len);
	if (e->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return json_stringn(s, len);
	return sk_yaml_plain_scalar(s, len);
}

static void
count_node(parser *p)
{
	p->nodes++;
}

/* A NUL (an escaped \0 or \u0000: raw NUL bytes never get this far) would
 * cut the string short wherever it is read as C text: "alice\u0000-x"
 * would edit alice. Refused in every key and value, with the path. */
static int
nul_error(parser *p, const yaml_event_t *e)
{
	frame *f = p->depth > 0 ? &p->stack[p->depth - 1] : NULL;
	bool key = expecting_key(p);
	char *path = key ? sk_strdup(f->path) : value_path(p, &e->start_mark);
	int rc = perr(p, &e->start_mark, "%s%s%s must not contain a NUL character (\\u0000)",
	        path[0] ? path : "", path[0] ? ": " : "", key ? "a key" : "a string");

	free(path);
	return rc;
}

static int
on_scalar(parser *p, const yaml_event_t *e)
{
	json_t *v;
	char *path;

	if (memchr(e->data.scalar.value, '\0', e->data.scalar.length) != NULL)
		return nul_error(p, e);
	if (expecting_key(p))
		return on_key(p, e);
	count_node(p);
	path = value_path(p, &e->start_mark);
	free(path);
	v = scalar_value(e);
	if (v == NULL)
		return perr(p, &e->start_mark, "invalid scalar");
	if (e->data.scalar.anchor != NULL)
		anchor_add(p, (const char *)e->data.scalar.anchor, v, 1);
	return add_value(p, v, &e->start_mark);
}

static int
on_alias(parser *p, const yaml_event_t *e)
{
	const anchor *a = anchor_find(p, (const char *)e->data.alias.anchor);
	char *path;

	if (expecting_key(p))
		return perr(p, &e->start_mark, "aliases are not supported as mapping keys");
	if (a == NULL)
		return perr(p, &e->start_mark, "unknown alias \"%s\"", e->data.alias.anchor);
	p->expanded += a->size;
	p->nodes += a->size;
	if (p->expanded > SK_MAX_ALIAS_NODES)
		return perr(p, &e->start_mark, "too many alias expansions (more than %d nodes)",
		        SK_MAX_ALIAS_NODES);
	path = value_path(p, &e->start_mark);
	free(path);
	return add_value(p, json_deep_copy(a->node), &e->start_mark);
}

static int
on_start(parser *p, const yaml_event_t *e, bool mapping)
{
	const yaml_char_t *anchor_name =
	        mapping ? e->data.mapping_start.anchor : e->data.sequence_start.anchor;
	frame *f;

	if (expecting_key(p))
		return perr(p, &e->start_mark, "mapping keys must be scalars");
	if (p->depth >= SK_MAX_DEPTH)
		return perr(p, &e->start_mark, "nesting deeper than %d levels", SK_MAX_DEPTH);
	count_node(p);
	f = &p->stack[p->depth];
	memset(f, 0, sizeof(*f));
	f->path = value_path(p, &e->start_mark);
	f->node = mapping ? json_object() : json_array();
	f->anchor = sk_strdup((const char *)anchor_name);
	f->anchor_nodes = p->nodes;
	p->depth++;
	return SK_OK;
}

static int
on_end(parser *p, const yaml_event_t *e)
{
	frame f = p->stack[p->depth - 1];

	p->depth--;
	if (f.anchor != NULL)
		anchor_add(p, f.anchor, f.node, p->nodes - f.anchor_nodes + 1);
	free(f.anchor);
	free(f.path);
	free(f.key);
	return add_value(p, f.node, &e->start_mark);
}

static int
on_document_end(parser *p)
{
	if (p->cur->root != NULL && !json_is_null(p->cur->root))
		doclist_push(p->out, p->cur);
	else
		sk_doc_free(p->cur);
	p->cur = NULL;
	anchors_clear(p);
	return SK_OK;
}

static int
handle_event(parser *p, const yaml_event_t *e)
{
	if (p->cur != NULL && e->end_mark.index - p->doc_start > SK_MAX_DOCUMENT_BYTES)
		return perr(p, &e->start_mark, "document larger than the %d byte limit",
		        SK_MAX_DOCUMENT_BYTES);
	switch (e->type) {
	case YAML_DOCUMENT_START_EVENT:
		p->cur = sk_doc_new(p->file);
		p->cur->line = (int)e->start_mark.line + 1;
		p->doc_start = e->start_mark.index;
		p->expanded = p->nodes = 0;
		return SK_OK;
	case YAML_DOCUMENT_END_EVENT: return on_document_end(p);
	case YAML_SCALAR_EVENT: return on_scalar(p, e);
	case YAML_ALIAS_EVENT: return on_alias(p, e);
	case YAML_SEQUENCE_START_EVENT: return on_start(p, e, false);
	case YAML_MAPPING_START_EVENT: return on_start(p, e, true);
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT: return on_end(p, e);
	default: return SK_OK;
	}
}

static int
parse_error(parser *p)
{
	yaml_parser_t *y = &p->yp;
	const char *problem = y->problem != NULL ? y->problem : "invalid YAML";

	if (y->context != NULL)
		return perr(p, &y->problem_mark, "%s %s", problem, y->context);
	return perr(p, &y->problem_mark, "%s", problem);
}

static int
run_parser(parser *p)
{
	for (;;) {
		yaml_event_t e;
		int rc;
		if (!yaml_parser_parse(&p->yp, &e))
			return parse_error(p);
		if (e.type == YAML_STREAM_END_EVENT) {
			yaml_event_delete(&e);
			return SK_OK;
		}
		rc = handle_event(p, &e);
		yaml_event_delete(&e);
		if (rc != SK_OK)
			return rc;
	}
}

int
sk_doc_parse(const char *data, size_t len, const char *file, sk_doclist *out, sk_error *err)
{
	parser p;
	sk_doclist docs = { NULL, 0 };
	const char *name = file == NULL ? "<input>" : strcmp(file, "-") == 0 ? "<stdin>" : file;
	size_t bad = bad_utf8_offset((const unsigned char *)data, len);
	int rc;

	if (bad < len)
		return sk_error_set(err, SK_EINVALID,
		        "%s: binary data at byte %zu (input must be UTF-8 text)", name, bad);
	memset(&p, 0, sizeof(p));
	p.file = name;
	p.out = &docs;
	p.err = err;
	if (!yaml_parser_initialize(&p.yp))
		return sk_error_set(err, SK_ENOMEM, "%s: cannot initialize the YAML parser", name);
	yaml_parser_set_input_string(&p.yp, (const unsigned char *)data, len);
	rc = run_parser(&p);
	yaml_parser_delete(&p.yp);
	frames_clear(&p);
	anchors_clear(&p);
	sk_doc_free(p.cur);
	if (rc != SK_OK) {
		sk_doclist_dispose(&docs);
		return rc;
	}
	if (docs.len > 0) {
		out->items = sk_realloc(out->items, (out->len + docs.len) * sizeof(*out->items));
		memcpy(out->items + out->len, docs.items, docs.len * sizeof(*docs.items));
		out->len += docs.len;
	}
	free(docs.items);
	return SK_OK;
}
