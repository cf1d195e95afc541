/*
 * spacectl get's outputs but the table (table.c) and the watch (watch.c):
 * -o name, yaml, json, jsonpath=, go-template= and custom-columns=, with
 * --sort-by, --field-selector and -L applied to what is printed.
 */
#include <stdlib.h>
#include <string.h>

#include "spacectl.h"

/* The value --sort-by selects from one object; NULL when none. */
static json_t *
sort_key(const sk_cli_get_output *o, const sk_userspace *us)
{
	json_t *v = sk_cli_userspace_json(us), *vals = sk_cli_jsonpath_select(o->sort_by, v);
	json_t *key = json_incref(json_array_get(vals, 0));

	json_decref(vals);
	json_decref(v);
	return key;
}

typedef struct sort_item {
	sk_userspace *us;
	json_t *key;
	size_t pos;
} sort_item;

/* Missing values first, numbers by value, the rest by their text; ties keep the order. */
static int
cmp_sort_item(const void *pa, const void *pb)
{
	const sort_item *a = pa, *b = pb;
	int c = 0;

	if (a->key == NULL || b->key == NULL)
		c = (a->key != NULL) - (b->key != NULL);
	else if (json_is_number(a->key) && json_is_number(b->key))
		c = (json_number_value(a->key) > json_number_value(b->key)) -
		        (json_number_value(a->key) < json_number_value(b->key));
	else if (json_is_string(a->key) && json_is_string(b->key))
		c = strcmp(json_string_value(a->key), json_string_value(b->key));
	return c != 0 ? c : (a->pos > b->pos) - (a->pos < b->pos);
}

static void
sort_items(const sk_cli_get_output *o, sk_userspace **items, size_t n)
{
	sort_item *s = sk_calloc(n ? n : 1, sizeof(*s));

	for (size_t i = 0; i < n; i++) {
		s[i].us = items[i];
		s[i].key = sort_key(o, items[i]);
		s[i].pos = i;
	}
	qsort(s, n, sizeof(*s), cmp_sort_item);
	for (size_t i = 0; i < n; i++) {
		items[i] = s[i].us;
		json_decref(s[i].key);
	}
	free(s);
}

static int
print_template(const sk_cli_get_output *o, json_t *v)
{
	sk_buf out = SK_BUF_INIT(0);

	sk_cli_jsonpath_exec(o->template, v, &out);
	fwrite(out.data ? out.data : "", 1, out.len, stdout);
	sk_buf_dispose(&out);
	return SK_EXIT_OK;
}

static int
print_columns(const sk_cli_get_output *o, sk_userspace **items, size_t n)
{
	json_t **objs = sk_calloc(n ? n : 1, sizeof(*objs));

	for (size_t i = 0; i < n; i++)
		objs[i] = sk_cli_userspace_json(items[i]);
	sk_cli_columns_print(o->columns, objs, n, o->no_headers);
	for (size_t i = 0; i < n; i++)
		json_decref(objs[i]);
	free(objs);
	return SK_EXIT_OK;
}

/* The objects --field-selector keeps (borrowed; caller frees the array). */
static sk_userspace **
select_fields(const sk_cli_get_output *o, sk_userspace **items, size_t *n)
{
	sk_userspace **kept = sk_calloc(*n ? *n : 1, sizeof(*kept));
	size_t k = 0;

	for (size_t i = 0; i < *n; i++) {
		json_t *v = o->fields ? sk_cli_userspace_json(items[i]) : NULL;
		if (o->fields == NULL || sk_cli_fieldsel_matches(o->fields, v))
			kept[k++] = items[i];
		json_decref(v);
	}
	*n = k;
	return kept;
}

static int print_selected(const sk_cli_get_output *o, sk_userspace **items, size_t n, bool single);

int
sk_cli_get_print(const sk_cli_get_output *o, sk_userspace **all, size_t nall, bool single)
{
	size_t n = nall;
	sk_userspace **items = select_fields(o, all, &n);
	int rc;

	sk_cli_retention_warn(o->cfg, items, n);
	rc = print_selected(o, items, n, single);

	free(items);
	return rc;
}

static int
print_selected(const sk_cli_get_output *o, sk_userspace **items, size_t n, bool single)
{
	sk_cli_table_opts t = { o->fmt == SK_OUTPUT_WIDE, o->show_labels, o->no_headers, false,
		&o->label_columns, true, o->kind_prefix };
	json_t *v;
	int rc;

	if (o->sort_by)
		sort_items(o, items, n);
	if (o->columns)
		return print_columns(o, items, n);
	if (o->names_only) {
		for (size_t i = 0; i < n; i++)
			printf("userspace/%s\n", items[i]->meta.name);
		return SK_EXIT_OK;
	}
	if (!o->template && (o->fmt == SK_OUTPUT_TABLE || o->fmt == SK_OUTPUT_WIDE)) {
		if (n == 0) {
			fflush(stdout);
			fprintf(stderr, "No resources found.\n");
			return SK_EXIT_OK;
		}
		sk_cli_userspace_table_print(items, n, &t);
		return SK_EXIT_OK;
	}
	if (single && n == 1) {
		v = sk_cli_userspace_json(items[0]);
	} else {
		json_t *arr = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(arr, sk_cli_userspace_json(items[i]));
		v = json_pack("{s:s, s:s, s:o}", "apiVersion", "v1", "kind", "List", "items", arr);
	}
	rc = o->template ? print_template(o, v) : sk_cli_print_value(v, o->fmt);
	json_decref(v);
	return rc;
}

/* A JSONPath flag's template; "{.a}" or ".a" (kubectl accepts both for --sort-by). */
static int
parse_template(
        const sk_cli_help *h, const char *flag, const char *text, bool wrap, sk_jsonpath **out)
{
	sk_buf t = SK_BUF_INIT(0);
	char msg[512];
	int rc;

	sk_buf_printf(&t, wrap && strchr(text, '{') == NULL ? "{%s}" : "%s", text);
	rc = sk_cli_jsonpath_parse(t.data, out, msg, sizeof(msg));
	sk_buf_dispose(&t);
	if (rc != 0)
		return sk_cli_usage_error(h, "%s: %s", flag, msg);
	return SK_CLI_CONTINUE;
}

static int
parse_go_or_columns(sk_cli_get_output *o, const sk_cli_help *h, const char *s)
{
	char msg[512];
	bool go = s[0] == 'g';
	int rc = go ? sk_cli_gotemplate_parse(s + 12, &o->template, msg, sizeof(msg))
	            : sk_cli_columns_parse(s + 15, &o->columns, msg, sizeof(msg));

	if (rc != 0)
		return sk_cli_usage_error(
		        h, "%s: %s", go ? "-o go-template" : "-o custom-columns", msg);
	return SK_CLI_CONTINUE;
}

/* -o FORMAT: table, wide, yaml, json, name or jsonpath=TEMPLATE ("=" form too). */
int
sk_cli_get_output_parse(sk_cli_get_output *o, const sk_cli_help *h, const char *arg)
{
	const char *s = *arg == '=' ? arg + 1 : arg;

	/* the last -o wins */
	o->names_only = false;
	sk_cli_jsonpath_free(o->template);
	o->template = NULL;
	sk_cli_columns_free(o->columns);
	o->columns = NULL;
	if (strcmp(s, "name") == 0) {
		o->names_only = true;
		return SK_CLI_CONTINUE;
	}
	if (strncmp(s, "jsonpath=", 9) == 0)
		return parse_template(h, "-o jsonpath", s + 9, false, &o->template);
	if (strncmp(s, "go-template=", 12) == 0 || strncmp(s, "custom-columns=", 15) == 0)
		return parse_go_or_columns(o, h, s);
	if (sk_cli_output_parse(s, &o->fmt) != 0)
		return sk_cli_usage_error(h,
		        "-o: unknown output format \"%s\" (table, wide, yaml, json, name, "
		        "jsonpath=TEMPLATE, go-template=TEMPLATE, custom-columns=SPEC)",
		        s);
	return SK_CLI_CONTINUE;
}

/* -L K1,K2 (repeatable). */
void
sk_cli_get_label_columns_add(sk_cli_get_output *o, char *arg)
{
	for (char *p = arg; p != NULL && *p;) {
		char *comma = strchr(p, ',');
		if (comma)
			*comma = '\0';
		if (*p)
			sk_cli_strv_push(&o->label_columns, p);
		p = comma ? comma + 1 : NULL;
	}
}

int
sk_cli_get_field_selector_parse(sk_cli_get_output *o, const sk_cli_help *h, const char *arg)
{
	sk_error err;

	sk_error_clear(&err);
	sk_cli_fieldsel_free(o->fields);
	o->fields = NULL;
	if (sk_cli_fieldsel_parse(arg, &o->fields, &err) != 0)
		return sk_cli_usage_error(h, "--field-selector: %s", err.message);
	return SK_CLI_CONTINUE;
}

int
sk_cli_get_sort_by_parse(sk_cli_get_output *o, const sk_cli_help *h, const char *arg)
{
	sk_cli_jsonpath_free(o->sort_by);
	o->sort_by = NULL;
	return parse_template(h, "--sort-by", arg, true, &o->sort_by);
}

void
sk_cli_get_output_dispose(sk_cli_get_output *o)
{
	sk_cli_jsonpath_free(o->template);
	sk_cli_jsonpath_free(o->sort_by);
	sk_cli_columns_free(o->columns);
	sk_cli_fieldsel_free(o->fields);
	sk_cli_strv_dispose(&o->label_columns);
}
