/*
 * spacectl get: list UserSpaces or show some, as a table (COLUMNS below;
 * add a row to extend), wide table, YAML or JSON.
 */
#include <stdlib.h>
#include <string.h>

#include "spacectl.h"

static const sk_cli_help help = {
	"get",
	"spacectl get userspaces [-o format] [--no-headers] [--show-labels] [-L label]\n"
	"                        [--sort-by path] [-l selector] [--field-selector sel]\n"
	"                        [name ...]\n"
	"spacectl get userspace/name ... [-o format]\n"
	"spacectl get -f path ... [-R] [-o format]\n"
	"spacectl get userspaces -w [--watch-timeout d] [-o table|wide|yaml|json] [-l selector]\n"
	"                        [name ...]",
	"Lists UserSpaces (all, those matching -l, or the named ones). The resource\n"
	"may be written userspaces, userspace or us; objects also as us/NAME.\n"
	"\n"
	"Flags:\n"
	"  -o, --output FORMAT    table (default), wide, yaml, json, name,\n"
	"                         jsonpath=TEMPLATE, go-template=TEMPLATE or\n"
	"                         custom-columns=HEADER:PATH,... (also -o=FORMAT); yaml and\n"
	"                         json print one object for one name, else a List\n"
	"  -f, --filename PATH    the objects named in these files (repeatable)\n"
	"  -R, --recursive        -f directories with their subdirectories\n"
	"      --no-headers       tables without the header line\n"
	"      --show-labels      add the LABELS column to the table\n"
	"  -L, --label-columns KEY  a column with the value of label KEY (repeatable,\n"
	"                         or K1,K2; the header: KEY's last segment in capitals)\n"
	"      --field-selector SEL  FIELD=VALUE, FIELD==VALUE or FIELD!=VALUE,\n"
	"                         comma-separated; fields: metadata.name, spec.userID,\n"
	"                         spec.mode, spec.provider, spec.template, status.phase,\n"
	"                         status.sandboxID\n"
	"      --sort-by PATH     sort by a JSONPath value ({.spec.userID} or .spec.userID);\n"
	"                         numbers by value, text by bytes, missing values first\n"
	"  -l, --selector SEL     label selector (k=v, k!=v, k, !k, k in (a,b), k notin (a,b))\n"
	"  -w, --watch            after the list, print a new row for each object that\n"
	"                         changes, as it happens (-o json: one object per line),\n"
	"                         until Ctrl-C (exit 0)\n"
	"      --watch-timeout D  stop watching after D (e.g. 30s; exit 0)\n"
	"\n"
	"JSONPath templates (kubectl's common subset): text, {.a.b}, {.items[*].x},\n"
	"{.items[0]}, {['key.with.dots']}, {range .items[*]}...{end}, {\"\\n\"}.\n"
	"Filters, slices, unions and recursive descent are refused.\n"
	"Go templates, the same subset: text, {{.a.b}}, {{range .items}}...{{end}},\n"
	"{{index .a \"key\"}}, {{\"\\n\"}}; a missing value prints <no value>, maps and\n"
	"lists print as JSON. if, with, pipes, variables, functions but index and trim\n"
	"markers are refused with their offset.\n"
	"\n"
	"Examples:\n"
	"  spacectl get us\n"
	"  spacectl get userspaces -l team=research -o wide\n"
	"  spacectl get userspace alice -o yaml\n"
	"  spacectl get us -o name\n"
	"  spacectl get us -o jsonpath='{range .items[*]}{.metadata.name}{\"\\t\"}"
	"{.status.phase}{\"\\n\"}{end}'\n"
	"  spacectl get us --sort-by=.spec.userID --no-headers\n"
	"  spacectl get us -o custom-columns=NAME:.metadata.name,USER:.spec.userID\n"
	"  spacectl get us -o go-template='{{range .items}}{{.metadata.name}}{{\"\\n\"}}{{end}}'\n"
	"  spacectl get us -L team --field-selector status.phase=Running\n"
	"  spacectl get us -w\n",
};

typedef void (*cell_fn)(const sk_userspace *us, int64_t now, char *buf, size_t len);

static void
cell_name(const sk_userspace *us, int64_t now, char *buf, size_t len)
{
	snprintf(buf, len, "%s", us->meta.name);
}

static void
cell_user_id(const sk_userspace *us, int64_t now, char *buf, size_t len)
{
	snprintf(buf, len, "%s", us->spec.user_id);
}

static void
cell_mode(const sk_userspace *us, int64_t now, char *buf, size_t len)
{
	snprintf(buf, len, "%s", sk_mode_name(us->spec.mode));
}

static void
cell_phase(const sk_userspace *us, int64_t now, char *buf, size_t len)
{
	const char *p = sk_phase_name(us->status.phase);

	/* Deleting, the phase's own word (status, metrics and the connect API
	 * say it), also before the controller has seen the deletion */
	if (us->meta.deletion_ms != 0)
		p = sk_phase_name(SK_PHASE_DELETING);
	snprintf(buf, len, "%s", p && *p ? p : "-");
}

static void
cell_sandbox(const sk_userspace *us, int64_t now, char *buf, size_t len)
{
	snprintf(buf, len, "%s", us->status.sandbox_id ? us->status.sandbox_id : "-");
}

static void
cell_ready(const sk_userspace *us, int64_t now, char *buf, size_t len)
{
	const sk_condition *c = sk_userspace_condition(us, SK_COND_READY);

	snprintf(buf, len, "%s", c && c->status ? c->status : "-");
}

/* The drift types of status.drift, comma-separated, each once; "-" when none. */
static void
cell_drift(const sk_userspace *us, int64_t now, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < us->status.n_drift && off < len; i++) {
		const char *t = us->status.drift[i].type;
		bool dup = false;
		int n;
		for (size_t k = 0; t && k < i && !dup; k++)
			dup = us->status.drift[k].type && strcmp(us->status.drift[k].type, t) == 0;
		if (t == NULL || *t == '\0' || dup)
			continue;
		n = snprintf(buf + off, len - off, "%s%s", off ? "," : "", t);
		off += n > 0 ? (size_t)n : 0;
	}
	if (off == 0)
		snprintf(buf, len, "-");
}

static void
cell_age(const sk_userspace *us, int64_t now, char *buf, size_t len)
{
	if (us->meta.creation_ms == 0)
		snprintf(buf, len, "-");
	else
		sk_age_format(now - us->meta.creation_ms, buf, len);
}

static void
cell_provider(const sk_userspace *us, int64_t now, char *buf, size_t len)
{
	snprintf(buf, len, "%s", us->spec.provider ? us->spec.provider : "-");
}

static void
cell_template(const sk_userspace *us, int64_t now, char *buf, size_t len)
{
	snprintf(buf, len, "%s", us->spec.template_id ? us->spec.template_id : "-");
}

static void
cell_generation(const sk_userspace *us, int64_t now, char *buf, size_t len)
{
	snprintf(buf, len, "%lld", (long long)us->meta.generation);
}

static void
cell_labels(const sk_userspace *us, int64_t now, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < us->meta.labels.len && off < len; i++) {
		int n = snprintf(buf + off, len - off, "%s%s=%s", i ? "," : "",
		        us->meta.labels.items[i].key, us->meta.labels.items[i].value);
		off += n > 0 ? (size_t)n : 0;
	}
	if (us->meta.labels.len == 0)
		snprintf(buf, len, "<none>");
}

/* A migration's phase and progress ("Copying 120/200 files 41%"); when none, whether
 * the spec differs from the sandbox (SpecMismatch: a template not rolled out). */
static void
cell_migration(const sk_userspace *us, int64_t now, char *buf, size_t len)
{
	const sk_migration_status *m = &us->status.migration;

	bool mismatch = false;

	for (size_t i = 0; i < us->status.n_drift && !mismatch; i++)
		mismatch = us->status.drift[i].type &&
		        strcmp(us->status.drift[i].type, SK_DRIFT_SPEC) == 0;
	if (m->phase == SK_MIG_NONE && mismatch)
		snprintf(buf, len, "not rolled out (describe says how)");
	else if (m->phase == SK_MIG_NONE)
		snprintf(buf, len, "-");
	else if (m->phase == SK_MIG_COPYING && m->bytes_total > 0)
		snprintf(buf, len, "%s %lld/%lld files %lld%%", sk_migration_phase_name(m->phase),
		        (long long)m->files_done, (long long)m->files_total,
		        (long long)(m->bytes_done * 100 / m->bytes_total));
	else
		snprintf(buf, len, "%s", sk_migration_phase_name(m->phase));
}

/* The table columns, in order; wide-only columns appear with -o wide, the
 * labels column also with --show-labels. */
static const struct column {
	const char *header;
	bool wide_only, labels;
	cell_fn cell;
} COLUMNS[] = {
	{ "NAME", false, false, cell_name },
	{ "USERID", false, false, cell_user_id },
	{ "MODE", false, false, cell_mode },
	{ "PHASE", false, false, cell_phase },
	{ "SANDBOX", false, false, cell_sandbox },
	{ "READY", false, false, cell_ready },
	{ "DRIFT", false, false, cell_drift },
	{ "AGE", false, false, cell_age },
	{ "PROVIDER", true, false, cell_provider },
	{ "TEMPLATE", true, false, cell_template },
	{ "GENERATION", true, false, cell_generation },
	{ "MIGRATION", true, false, cell_migration },
	{ "LABELS", true, true, cell_labels },
};
#define NCOLUMNS (sizeof(COLUMNS) / sizeof(COLUMNS[0]))
#define CELL_MAX 1024

typedef struct table_opts {
	bool wide, show_labels, no_headers, last_only;
	const sk_cli_strv *label_columns; /* -L keys; NULL: none */
	bool sized; /* get -w: columns as wide as their widest usual value */
} table_opts;

/* get -w prints the header once, then a row per change: each column is as
 * wide as the values it usually takes will be (a phase, a sandbox ID, an age),
 * so a later row lines up with the header. A sizing row, rendered and not printed. */
static const char *
sizing_cell(const char *header)
{
	static const struct {
		const char *header, *widest;
	} widths[] = { { "MODE", "Running" }, { "PHASE", "Migrating" },
		{ "SANDBOX", "xxxxxxxxxxxxxxxxxxxxx" }, { "READY", "Unknown" },
		{ "AGE", "4m59s" } };

	for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); i++) {
		if (strcmp(widths[i].header, header) == 0)
			return widths[i].widest;
	}
	return "";
}

/* -L's header: the key's last segment in capitals (app.kubernetes.io/name: NAME). */
static void
label_header(const char *key, char *buf, size_t len)
{
	const char *slash = strrchr(key, '/');
	size_t i = 0;

	for (const char *p = slash ? slash + 1 : key; *p && i + 1 < len; p++)
		buf[i++] = (char)(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p);
	buf[i] = '\0';
}

static bool
column_shown(const struct column *c, const table_opts *o)
{
	return !c->wide_only || o->wide || (c->labels && o->show_labels);
}

/* The end of the line that starts at i (after its newline). */
static size_t
line_end(const sk_buf *out, size_t i)
{
	while (i < out->len && out->data[i] != '\n')
		i++;
	return i < out->len ? i + 1 : i;
}

/* The rendered table less its first (header) line when skip_header, less the
 * sizing row (the second line) when sized; last_only: its last line only. */
static void
write_table(const sk_buf *out, bool skip_header, bool last_only, bool sized)
{
	size_t start = 0, header_end = line_end(out, 0);

	if (last_only && out->len > 1) {
		/* the last line: after the newline before the final one */
		start = out->len - 1;
		while (start > 0 && out->data[start - 1] != '\n')
			start--;
		fwrite(out->data + start, 1, out->len - start, stdout);
		return;
	}
	if (!skip_header && out->data)
		fwrite(out->data, 1, header_end, stdout);
	start = sized ? line_end(out, header_end) : header_end;
	fwrite(out->data ? out->data + start : "", 1, out->len - start, stdout);
}

/* The shown columns' indexes into COLUMNS, with -L's columns (index NCOLUMNS + k)
 * before LABELS. Returns how many. */
static size_t
shown_columns(const table_opts *o, size_t *idx)
{
	size_t n = 0, nl = o->label_columns ? o->label_columns->len : 0;

	for (size_t c = 0; c < NCOLUMNS; c++) {
		if (COLUMNS[c].labels) {
			for (size_t k = 0; k < nl; k++)
				idx[n++] = NCOLUMNS + k;
		}
		if (column_shown(&COLUMNS[c], o))
			idx[n++] = c;
	}
	return n;
}

static void
print_table(sk_userspace *const *items, size_t n, const table_opts *o)
{
	size_t nl = o->label_columns ? o->label_columns->len : 0;
	size_t *idx = sk_calloc(NCOLUMNS + nl, sizeof(*idx));
	const char **headers = sk_calloc(NCOLUMNS + nl, sizeof(*headers));
	const char **cells = sk_calloc(NCOLUMNS + nl, sizeof(*cells));
	char(*bufs)[CELL_MAX] = sk_calloc(NCOLUMNS + nl, CELL_MAX);
	size_t ncols = shown_columns(o, idx);
	sk_buf out = SK_BUF_INIT(0);
	int64_t now = sk_now_ms();
	sk_table *t;

	for (size_t k = 0; k < ncols; k++) {
		if (idx[k] < NCOLUMNS) {
			headers[k] = COLUMNS[idx[k]].header;
		} else {
			label_header(o->label_columns->items[idx[k] - NCOLUMNS], bufs[k], CELL_MAX);
			headers[k] = sk_strdup(bufs[k]);
		}
	}
	t = sk_table_new(ncols, headers);
	if (o->sized) {
		for (size_t k = 0; k < ncols; k++)
			cells[k] = sizing_cell(headers[k]);
		sk_table_add_row(t, cells);
	}
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < ncols; k++) {
			const char *v;
			if (idx[k] < NCOLUMNS) {
				COLUMNS[idx[k]].cell(items[i], now, bufs[k], CELL_MAX);
			} else {
				v = sk_kvlist_get(&items[i]->meta.labels,
				        o->label_columns->items[idx[k] - NCOLUMNS]);
				snprintf(bufs[k], CELL_MAX, "%s", v ? v : "");
			}
			cells[k] = bufs[k];
		}
		sk_table_add_row(t, cells);
	}
	sk_table_render(t, &out);
	write_table(&out, o->no_headers, o->last_only, o->sized);
	sk_buf_dispose(&out);
	sk_table_free(t);
	for (size_t k = 0; k < ncols; k++) {
		if (idx[k] >= NCOLUMNS)
			free((char *)headers[k]);
	}
	free(bufs);
	free(cells);
	free(headers);
	free(idx);
}

void
sk_cli_print_userspace_table(sk_userspace *const *items, size_t n, bool wide, bool last_only)
{
	table_opts o = { wide, false, false, last_only, NULL, true };

	print_table(items, n, &o);
}

/* What the flags of one get ask for. */
typedef struct get_opts {
	sk_output fmt;
	bool names_only; /* -o name */
	sk_jsonpath *template; /* -o jsonpath=... or go-template=... */
	sk_cli_columns *columns; /* -o custom-columns=... */
	sk_cli_strv label_columns; /* -L */
	sk_cli_fieldsel *fields; /* --field-selector */
	sk_cli_strv files; /* -f */
	sk_jsonpath *sort_by; /* --sort-by */
	bool no_headers, show_labels;
	const char *selector_text;
	bool watch;
	int64_t watch_ms;
	sk_cli_strv names;
} get_opts;

/* The value --sort-by selects from one object; NULL when none. */
static json_t *
sort_key(const get_opts *o, const sk_userspace *us)
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
sort_items(const get_opts *o, sk_userspace **items, size_t n)
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
print_template(const get_opts *o, json_t *v)
{
	sk_buf out = SK_BUF_INIT(0);

	sk_cli_jsonpath_exec(o->template, v, &out);
	fwrite(out.data ? out.data : "", 1, out.len, stdout);
	sk_buf_dispose(&out);
	return SK_EXIT_OK;
}

static int
print_columns(const get_opts *o, sk_userspace **items, size_t n)
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
select_fields(const get_opts *o, sk_userspace **items, size_t *n)
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

static int print_selected(const get_opts *o, sk_userspace **items, size_t n, bool single);

static int
print_items(const get_opts *o, sk_userspace **all, size_t nall, bool single)
{
	size_t n = nall;
	sk_userspace **items = select_fields(o, all, &n);
	int rc = print_selected(o, items, n, single);

	free(items);
	return rc;
}

static int
print_selected(const get_opts *o, sk_userspace **items, size_t n, bool single)
{
	table_opts t = { o->fmt == SK_OUTPUT_WIDE, o->show_labels, o->no_headers, false,
		&o->label_columns, false };
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
		print_table(items, n, &t);
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

/* Gets the named objects; NotFound is reported per name and makes the exit 1. */
static int
get_named(sk_store *st, const get_opts *o)
{
	sk_userspace **items = sk_calloc(o->names.len, sizeof(*items));
	size_t found = 0;
	int exit_code = SK_EXIT_OK, rc;

	for (size_t i = 0; i < o->names.len; i++) {
		sk_error err;
		sk_error_clear(&err);
		rc = sk_store_get(st, o->names.items[i], &items[found], &err);
		if (rc == 0) {
			found++;
		} else if (rc == SK_ENOTFOUND) {
			sk_cli_errorf("userspaces \"%s\" not found (NotFound)", o->names.items[i]);
			exit_code = SK_EXIT_FAIL;
		} else {
			sk_cli_errorf("%s", err.message);
			exit_code = sk_cli_exit_code(rc);
			break;
		}
	}
	if (found > 0 || (exit_code == SK_EXIT_OK))
		rc = print_items(o, items, found, o->names.len == 1);
	else
		rc = SK_EXIT_OK;
	for (size_t i = 0; i < found; i++)
		sk_userspace_free(items[i]);
	free(items);
	return exit_code != SK_EXIT_OK ? exit_code : rc;
}

static int
get_list(sk_store *st, const get_opts *o)
{
	sk_userspace_list list = { NULL, 0, 0 };
	int rc = sk_cli_list_selected(st, &help, o->selector_text, &list);

	if (rc != SK_EXIT_OK)
		return rc;
	rc = print_items(o, list.items, list.len, false);
	sk_userspace_list_dispose(&list);
	return rc;
}

static int
get_watch(sk_store *st, const get_opts *o)
{
	sk_selector *sel = NULL;
	sk_error err;
	int rc;

	sk_error_clear(&err);
	if (o->selector_text && sk_selector_parse(o->selector_text, &sel, &err) != 0)
		return sk_cli_usage_error(&help, "-l: %s", err.message);
	rc = sk_cli_get_watch(st, o->names.items, o->names.len, sel, o->fmt, o->watch_ms);
	sk_selector_free(sel);
	return rc;
}

/* A JSONPath flag's template; "{.a}" or ".a" (kubectl accepts both for --sort-by). */
static int
parse_template(const char *flag, const char *text, bool wrap, sk_jsonpath **out)
{
	sk_buf t = SK_BUF_INIT(0);
	char msg[512];
	int rc;

	sk_buf_printf(&t, wrap && strchr(text, '{') == NULL ? "{%s}" : "%s", text);
	rc = sk_cli_jsonpath_parse(t.data, out, msg, sizeof(msg));
	sk_buf_dispose(&t);
	if (rc != 0)
		return sk_cli_usage_error(&help, "%s: %s", flag, msg);
	return SK_CLI_CONTINUE;
}

static int
parse_go_or_columns(get_opts *o, const char *s)
{
	char msg[512];
	bool go = s[0] == 'g';
	int rc = go ? sk_cli_gotemplate_parse(s + 12, &o->template, msg, sizeof(msg))
	            : sk_cli_columns_parse(s + 15, &o->columns, msg, sizeof(msg));

	if (rc != 0)
		return sk_cli_usage_error(
		        &help, "%s: %s", go ? "-o go-template" : "-o custom-columns", msg);
	return SK_CLI_CONTINUE;
}

/* -o FORMAT: table, wide, yaml, json, name or jsonpath=TEMPLATE ("=" form too). */
static int
parse_output(get_opts *o, const char *arg)
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
		return parse_template("-o jsonpath", s + 9, false, &o->template);
	if (strncmp(s, "go-template=", 12) == 0 || strncmp(s, "custom-columns=", 15) == 0)
		return parse_go_or_columns(o, s);
	if (sk_cli_output_parse(s, &o->fmt) != 0)
		return sk_cli_usage_error(&help,
		        "-o: unknown output format \"%s\" (table, wide, yaml, json, name, "
		        "jsonpath=TEMPLATE, go-template=TEMPLATE, custom-columns=SPEC)",
		        s);
	return SK_CLI_CONTINUE;
}

enum {
	OPT_WATCH_TIMEOUT = SK_OPT_FIRST_CMD,
	OPT_NO_HEADERS,
	OPT_SHOW_LABELS,
	OPT_SORT_BY,
	OPT_FIELD_SELECTOR,
};

/* -L K1,K2 (repeatable). */
static void
add_label_columns(get_opts *o, char *arg)
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

static int
parse_field_selector(get_opts *o, const char *arg)
{
	sk_error err;

	sk_error_clear(&err);
	sk_cli_fieldsel_free(o->fields);
	o->fields = NULL;
	if (sk_cli_fieldsel_parse(arg, &o->fields, &err) != 0)
		return sk_cli_usage_error(&help, "--field-selector: %s", err.message);
	return SK_CLI_CONTINUE;
}

static int
parse_flag(get_opts *o, int ch, char **argv)
{
	switch (ch) {
	case 'o': return parse_output(o, optarg);
	case 'l': o->selector_text = optarg; return SK_CLI_CONTINUE;
	case 'w': o->watch = true; return SK_CLI_CONTINUE;
	case 'f': sk_cli_strv_push(&o->files, optarg); return SK_CLI_CONTINUE;
	case 'R': sk_cli.recursive = true; return SK_CLI_CONTINUE;
	case 'L': add_label_columns(o, optarg); return SK_CLI_CONTINUE;
	case OPT_FIELD_SELECTOR: return parse_field_selector(o, optarg);
	case OPT_NO_HEADERS: o->no_headers = true; return SK_CLI_CONTINUE;
	case OPT_SHOW_LABELS: o->show_labels = true; return SK_CLI_CONTINUE;
	case OPT_SORT_BY:
		sk_cli_jsonpath_free(o->sort_by);
		o->sort_by = NULL;
		return parse_template("--sort-by", optarg, true, &o->sort_by);
	case OPT_WATCH_TIMEOUT:
		if (sk_duration_parse(optarg, &o->watch_ms) != 0 || o->watch_ms <= 0)
			return sk_cli_usage_error(&help,
			        "--watch-timeout: invalid duration \"%s\" (e.g. 30s)", optarg);
		o->watch = true;
		return SK_CLI_CONTINUE;
	default: return sk_cli_opt(&help, ch, argv);
	}
}

static int
parse_args(get_opts *o, int argc, char **argv)
{
	static const struct option opts[] = { { "output", required_argument, NULL, 'o' },
		{ "selector", required_argument, NULL, 'l' }, { "watch", no_argument, NULL, 'w' },
		{ "watch-timeout", required_argument, NULL, OPT_WATCH_TIMEOUT },
		{ "no-headers", no_argument, NULL, OPT_NO_HEADERS },
		{ "show-labels", no_argument, NULL, OPT_SHOW_LABELS },
		{ "sort-by", required_argument, NULL, OPT_SORT_BY },
		{ "filename", required_argument, NULL, 'f' },
		{ "recursive", no_argument, NULL, 'R' },
		{ "label-columns", required_argument, NULL, 'L' },
		{ "field-selector", required_argument, NULL, OPT_FIELD_SELECTOR },
		SK_CLI_GLOBAL_OPTIONS, { 0 } };
	int ch, rc;

	while ((ch = sk_cli_getopt(argc, argv, ":o:l:f:L:hwR", opts)) != -1) {
		if ((rc = parse_flag(o, ch, argv)) != SK_CLI_CONTINUE)
			return rc;
	}
	if (o->files.len > 0 && optind < argc)
		return sk_cli_usage_error(&help, "-f and object names cannot be used together");
	if (optind >= argc && o->files.len == 0)
		return sk_cli_usage_error(&help, "name the resource type: spacectl get userspaces");
	rc = sk_cli_object_args(&help, argv + optind, argc - optind, false, &o->names);
	if (rc != SK_CLI_CONTINUE)
		return rc;
	if (o->watch && (o->columns || o->fields || o->files.len > 0))
		return sk_cli_usage_error(
		        &help, "-w is not used with custom-columns, --field-selector or -f");
	if (o->names.len > 0 && o->selector_text)
		return sk_cli_usage_error(&help, "names and -l cannot be used together");
	if (o->watch && (o->names_only || o->template || o->sort_by))
		return sk_cli_usage_error(&help,
		        "-w prints tables, yaml or json; not -o name, jsonpath or --sort-by");
	return SK_CLI_CONTINUE;
}

/* get -f: the objects the files name (read and validated as apply reads them). */
static int
names_from_files(get_opts *o, sk_cli_input *in)
{
	int rc = sk_cli_input_load(in, o->files.items, o->files.len);

	if (rc != SK_EXIT_OK)
		return rc;
	for (size_t i = 0; i < in->len; i++)
		sk_cli_strv_push(&o->names, in->objs[i]->meta.name);
	return SK_EXIT_OK;
}

int
sk_cmd_get(int argc, char **argv)
{
	get_opts o;
	sk_store *st = NULL;
	sk_cli_input in;
	int rc;

	if (sk_cli_quota_args(argc, argv))
		return sk_cli_quota_get(argc, argv);
	memset(&o, 0, sizeof(o));
	memset(&in, 0, sizeof(in));
	o.fmt = SK_OUTPUT_TABLE;
	if ((rc = parse_args(&o, argc, argv)) != SK_CLI_CONTINUE)
		goto done;
	if (o.files.len > 0 && (rc = names_from_files(&o, &in)) != SK_EXIT_OK)
		goto done;
	if ((rc = sk_cli_store_open(&st)) != SK_EXIT_OK)
		goto done;
	sk_cli_records_warn(st); /* an interrupted apply: what is shown may be half of it */
	if (o.watch)
		rc = get_watch(st, &o);
	else if (o.names.len > 0)
		rc = get_named(st, &o);
	else
		rc = get_list(st, &o);
	sk_store_close(st);
done:
	sk_cli_jsonpath_free(o.template);
	sk_cli_jsonpath_free(o.sort_by);
	sk_cli_columns_free(o.columns);
	sk_cli_fieldsel_free(o.fields);
	sk_cli_strv_dispose(&o.names);
	sk_cli_strv_dispose(&o.files);
	sk_cli_strv_dispose(&o.label_columns);
	sk_cli_input_dispose(&in);
	return rc;
}
