/* api/output: jansson values as block YAML (libyaml emitter) and kubectl-style tables. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "api_int.h"
#include "output.h"

static int
write_handler(void *data, unsigned char *buffer, size_t size)
{
	return sk_buf_append(data, buffer, size) == SK_OK;
}

static int
emit_scalar(yaml_emitter_t *em, const char *s, bool quote)
{
	yaml_event_t e;

	yaml_scalar_event_initialize(&e, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), !quote, 1,
	        quote ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_ANY_SCALAR_STYLE);
	return yaml_emitter_emit(em, &e) ? SK_OK : SK_ERROR;
}

/* YAML 1.1 timestamps: 2026-11-29, 2026-11-29T15:04:05Z. */
static bool
date_looking(const char *s)
{
	for (int i = 0; i < 4; i++) {
		if (!isdigit((unsigned char)s[i]))
			return false;
	}
	return s[4] == '-' && isdigit((unsigned char)s[5]);
}

/* Looks like a number or date to some YAML reader: 0x1f, 0o17, .inf, 1_000, 1:30 (YAML 1.1). */
static bool
numeric_looking(const char *s)
{
	bool digit = false;

	if (date_looking(s))
		return true;
	if (*s == '-' || *s == '+')
		s++;
	if (strcasecmp(s, ".inf") == 0 || strcasecmp(s, ".nan") == 0)
		return true;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'o' || s[1] == 'b') && s[2] != '\0')
		return true;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s) && strchr("_:.eE+-", *s) == NULL)
			return false;
		digit = digit || isdigit((unsigned char)*s);
	}
	return digit;
}

/* Strings a plain scalar would turn into something else must be quoted,
 * also for YAML 1.1 readers (yes/no/on/off). */
static bool
needs_quotes(const char *s)
{
	json_t *v = sk_yaml_plain_scalar(s, strlen(s));
	bool retyped = !json_is_string(v) || numeric_looking(s);
	static const char *const yaml11[] = { "yes", "no", "on", "off", "y", "n", "Yes", "No", "On",
		"Off", "YES", "NO", "ON", "OFF", "Y", "N", NULL };

	json_decref(v);
	for (size_t i = 0; !retyped && yaml11[i] != NULL; i++)
		retyped = strcmp(s, yaml11[i]) == 0;
	return retyped;
}

static int emit_value(yaml_emitter_t *em, const json_t *v, int depth);

static int
emit_object(yaml_emitter_t *em, const json_t *v, int depth)
{
	yaml_event_t e;
	const char *k;
	json_t *child;

	yaml_mapping_start_event_initialize(&e, NULL, NULL, 1,
	        json_object_size(v) == 0 ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE);
	if (!yaml_emitter_emit(em, &e))
		return SK_ERROR;
	json_object_foreach((json_t *)v, k, child)
	{
		if (emit_scalar(em, k, needs_quotes(k)) != SK_OK ||
		        emit_value(em, child, depth + 1) != SK_OK)
			return SK_ERROR;
	}
	yaml_mapping_end_event_initialize(&e);
	return yaml_emitter_emit(em, &e) ? SK_OK : SK_ERROR;
}

static int
emit_array(yaml_emitter_t *em, const json_t *v, int depth)
{
	yaml_event_t e;

	yaml_sequence_start_event_initialize(&e, NULL, NULL, 1,
	        json_array_size(v) == 0 ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE);
	if (!yaml_emitter_emit(em, &e))
		return SK_ERROR;
	for (size_t i = 0; i < json_array_size(v); i++) {
		if (emit_value(em, json_array_get(v, i), depth + 1) != SK_OK)
			return SK_ERROR;
	}
	yaml_sequence_end_event_initialize(&e);
	return yaml_emitter_emit(em, &e) ? SK_OK : SK_ERROR;
}

static int
emit_value(yaml_emitter_t *em, const json_t *v, int depth)
{
	char buf[64];

	if (depth > 1000)
		return SK_ERROR;
	switch (json_typeof(v)) {
	case JSON_OBJECT: return emit_object(em, v, depth);
	case JSON_ARRAY: return emit_array(em, v, depth);
	case JSON_STRING:
		return emit_scalar(em, json_string_value(v), needs_quotes(json_string_value(v)));
	case JSON_INTEGER:
		snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return emit_scalar(em, buf, false);
	case JSON_REAL:
		snprintf(buf, sizeof(buf), "%.17g", json_real_value(v));
		if (strpbrk(buf, ".eE") == NULL)
			strcat(buf, ".0");
		return emit_scalar(em, buf, false);
	case JSON_TRUE: return emit_scalar(em, "true", false);
	case JSON_FALSE: return emit_scalar(em, "false", false);
	default: return emit_scalar(em, "null", false);
	}
}

static int
emit_document(yaml_emitter_t *em, const json_t *v)
{
	yaml_event_t e;

	yaml_stream_start_event_initialize(&e, YAML_UTF8_ENCODING);
	if (!yaml_emitter_emit(em, &e))
		return SK_ERROR;
	yaml_document_start_event_initialize(&e, NULL, NULL, NULL, 1);
	if (!yaml_emitter_emit(em, &e) || emit_value(em, v, 0) != SK_OK)
		return SK_ERROR;
	yaml_document_end_event_initialize(&e, 1);
	if (!yaml_emitter_emit(em, &e))
		return SK_ERROR;
	yaml_stream_end_event_initialize(&e);
	return yaml_emitter_emit(em, &e) && yaml_emitter_flush(em) ? SK_OK : SK_ERROR;
}

int
sk_json_to_yaml(const json_t *v, sk_buf *out, sk_error *err)
{
	yaml_emitter_t em;
	int rc;

	if (!yaml_emitter_initialize(&em))
		return sk_error_set(err, SK_ENOMEM, "cannot initialize the YAML emitter");
	yaml_emitter_set_output(&em, write_handler, out);
	yaml_emitter_set_unicode(&em, 1);
	yaml_emitter_set_width(&em, -1);
	rc = emit_document(&em, v);
	if (rc != SK_OK)
		rc = sk_error_set(err, SK_ERROR, "YAML output failed: %s",
		        em.problem != NULL ? em.problem : "output too large");
	yaml_emitter_delete(&em);
	return rc;
}

/* ---- tables ---- */

struct sk_table {
	size_t ncols;
	char **cells; /* (nrows + 1) * ncols, row 0 the headers */
	size_t nrows;
};

sk_table *
sk_table_new(size_t ncols, const char *const *headers)
{
	sk_table *t = sk_calloc(1, sizeof(*t));

	t->ncols = ncols;
	t->cells = sk_calloc(ncols, sizeof(char *));
	for (size_t i = 0; i < ncols; i++) {
		t->cells[i] = sk_strdup(headers[i] != NULL ? headers[i] : "");
		for (char *p = t->cells[i]; *p; p++)
			*p = (char)toupper((unsigned char)*p);
	}
	return t;
}

void
sk_table_add_row(sk_table *t, const char *const *cells)
{
	size_t base = (t->nrows + 1) * t->ncols;

	t->cells = sk_realloc(t->cells, (base + t->ncols) * sizeof(char *));
	for (size_t i = 0; i < t->ncols; i++)
		t->cells[base + i] = sk_strdup(cells[i] != NULL ? cells[i] : "");
	t->nrows++;
}

/* Display width: UTF-8 code points. */
static size_t
text_width(const char *s)
{
	size_t w = 0;

	for (; *s; s++) {
		if (((unsigned char)*s & 0xc0) != 0x80)
			w++;
	}
	return w;
}

void
sk_table_render(const sk_table *t, sk_buf *out)
{
	size_t *w = sk_calloc(t->ncols ? t->ncols : 1, sizeof(size_t));

	for (size_t r = 0; r <= t->nrows; r++) {
		for (size_t c = 0; c < t->ncols; c++) {
			size_t n = text_width(t->cells[r * t->ncols + c]);
			if (n > w[c])
				w[c] = n;
		}
	}
	for (size_t r = 0; r <= t->nrows; r++) {
		size_t start = out->len;
		for (size_t c = 0; c < t->ncols; c++) {
			const char *cell = t->cells[r * t->ncols + c];
			sk_buf_printf(out, "%s", cell);
			if (c + 1 < t->ncols)
				sk_buf_printf(out, "%*s", (int)(w[c] - text_width(cell) + 3), "");
		}
		while (out->len > start && out->data[out->len - 1] == ' ')
			out->data[--out->len] = '\0';
		sk_buf_printf(out, "\n");
	}
	free(w);
}

void
sk_table_free(sk_table *t)
{
	if (t == NULL)
		return;
	for (size_t i = 0; i < (t->nrows + 1) * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t);
}
