/*
 * spacectl get: list UserSpaces or show some, as a table (COLUMNS below;
 * add a row to extend), wide table, YAML or JSON.
 */
#include <stdlib.h>
#include <string.h>

#include "spacectl.h"

static const sk_cli_help help = {
	"get",
	"spacectl get userspaces [-o table|wide|yaml|json] [-l selector] [name ...]\n"
	"spacectl get userspaces -w [--watch-timeout d] [-o table|wide|yaml|json] [-l selector]\n"
	"                        [name ...]",
	"Lists UserSpaces (all, those matching -l, or the named ones). The resource\n"
	"may be written userspaces, userspace or us.\n"
	"\n"
	"Flags:\n"
	"  -o, --output FORMAT   table (default), wide, yaml or json; yaml and json print\n"
	"                        one object for one name, else a List with items\n"
	"  -l, --selector SEL    label selector (k=v, k!=v, k, !k, k in (a,b), k notin (a,b))\n"
	"  -w, --watch           after the list, print a new row for each object that\n"
	"                        changes, as it happens (-o json: one object per line),\n"
	"                        until Ctrl-C (exit 0)\n"
	"      --watch-timeout D stop watching after D (e.g. 30s; exit 0)\n"
	"\n"
	"Examples:\n"
	"  spacectl get us\n"
	"  spacectl get userspaces -l team=research -o wide\n"
	"  spacectl get userspace alice -o yaml\n"
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

	if (us->meta.deletion_ms != 0 && us->status.phase != SK_PHASE_DELETING)
		p = "Terminating";
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

/* A migration's phase and progress ("Copying 120/200 files 41%"); "-" when none. */
static void
cell_migration(const sk_userspace *us, int64_t now, char *buf, size_t len)
{
	const sk_migration_status *m = &us->status.migration;

	if (m->phase == SK_MIG_NONE)
		snprintf(buf, len, "-");
	else if (m->phase == SK_MIG_COPYING && m->bytes_total > 0)
		snprintf(buf, len, "%s %lld/%lld files %lld%%", sk_migration_phase_name(m->phase),
		        (long long)m->files_done, (long long)m->files_total,
		        (long long)(m->bytes_done * 100 / m->bytes_total));
	else
		snprintf(buf, len, "%s", sk_migration_phase_name(m->phase));
}

/* The table columns, in order; wide-only columns appear with -o wide. */
static const struct column {
	const char *header;
	bool wide_only;
	cell_fn cell;
} COLUMNS[] = {
	{ "NAME", false, cell_name },
	{ "USERID", false, cell_user_id },
	{ "MODE", false, cell_mode },
	{ "PHASE", false, cell_phase },
	{ "SANDBOX", false, cell_sandbox },
	{ "READY", false, cell_ready },
	{ "DRIFT", false, cell_drift },
	{ "AGE", false, cell_age },
	{ "PROVIDER", true, cell_provider },
	{ "TEMPLATE", true, cell_template },
	{ "GENERATION", true, cell_generation },
	{ "LABELS", true, cell_labels },
	{ "MIGRATION", true, cell_migration },
};
#define NCOLUMNS (sizeof(COLUMNS) / sizeof(COLUMNS[0]))
#define CELL_MAX 1024

void
sk_cli_print_userspace_table(sk_userspace *const *items, size_t n, bool wide, bool last_only)
{
	const char *headers[NCOLUMNS], *cells[NCOLUMNS];
	char bufs[NCOLUMNS][CELL_MAX];
	size_t ncols = 0;
	sk_buf out = SK_BUF_INIT(0);
	int64_t now = sk_now_ms();
	sk_table *t;

	for (size_t c = 0; c < NCOLUMNS; c++) {
		if (!COLUMNS[c].wide_only || wide)
			headers[ncols++] = COLUMNS[c].header;
	}
	t = sk_table_new(ncols, headers);
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;
		for (size_t c = 0; c < NCOLUMNS; c++) {
			if (COLUMNS[c].wide_only && !wide)
				continue;
			COLUMNS[c].cell(items[i], now, bufs[k], CELL_MAX);
			cells[k] = bufs[k];
			k++;
		}
		sk_table_add_row(t, cells);
	}
	sk_table_render(t, &out);
	if (last_only && out.len > 1) {
		/* the last line: after the newline before the final one */
		size_t start = out.len - 1;
		while (start > 0 && out.data[start - 1] != '\n')
			start--;
		fwrite(out.data + start, 1, out.len - start, stdout);
	} else {
		fwrite(out.data ? out.data : "", 1, out.len, stdout);
	}
	sk_buf_dispose(&out);
	sk_table_free(t);
}

static int
print_items(sk_userspace *const *items, size_t n, sk_output fmt, bool single)
{
	json_t *v;
	int rc;

	if (fmt == SK_OUTPUT_TABLE || fmt == SK_OUTPUT_WIDE) {
		if (n == 0) {
			fflush(stdout);
			fprintf(stderr, "No resources found.\n");
			return SK_EXIT_OK;
		}
		sk_cli_print_userspace_table(items, n, fmt == SK_OUTPUT_WIDE, false);
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
	rc = sk_cli_print_value(v, fmt);
	json_decref(v);
	return rc;
}

/* Gets the named objects; NotFound is reported per name and makes the exit 1. */
static int
get_named(sk_store *st, char **names, size_t n, sk_output fmt)
{
	sk_userspace **items = sk_calloc(n, sizeof(*items));
	size_t found = 0;
	int exit_code = SK_EXIT_OK, rc;

	for (size_t i = 0; i < n; i++) {
		sk_error err;
		sk_error_clear(&err);
		rc = sk_store_get(st, names[i], &items[found], &err);
		if (rc == 0) {
			found++;
		} else if (rc == SK_ENOTFOUND) {
			sk_cli_errorf("userspaces \"%s\" not found (NotFound)", names[i]);
			exit_code = SK_EXIT_FAIL;
		} else {
			sk_cli_errorf("%s", err.message);
			exit_code = sk_cli_exit_code(rc);
			break;
		}
	}
	if (found > 0 || (exit_code == SK_EXIT_OK))
		rc = print_items(items, found, fmt, n == 1);
	else
		rc = SK_EXIT_OK;
	for (size_t i = 0; i < found; i++)
		sk_userspace_free(items[i]);
	free(items);
	return exit_code != SK_EXIT_OK ? exit_code : rc;
}

static int
get_list(sk_store *st, const char *selector_text, sk_output fmt)
{
	sk_userspace_list list = { NULL, 0, 0 };
	sk_selector *sel = NULL;
	sk_error err;
	int rc;

	sk_error_clear(&err);
	if (selector_text && sk_selector_parse(selector_text, &sel, &err) != 0)
		return sk_cli_usage_error(&help, "-l: %s", err.message);
	rc = sk_store_list(st, sel, &list, &err);
	sk_selector_free(sel);
	if (rc != 0) {
		sk_cli_errorf("%s", err.message);
		return sk_cli_exit_code(rc);
	}
	rc = print_items(list.items, list.len, fmt, false);
	sk_userspace_list_dispose(&list);
	return rc;
}

static int
get_watch(sk_store *st, char **names, size_t n, const char *selector_text, sk_output fmt,
        int64_t timeout_ms)
{
	sk_selector *sel = NULL;
	sk_error err;
	int rc;

	sk_error_clear(&err);
	if (selector_text && sk_selector_parse(selector_text, &sel, &err) != 0)
		return sk_cli_usage_error(&help, "-l: %s", err.message);
	rc = sk_cli_get_watch(st, names, n, sel, fmt, timeout_ms);
	sk_selector_free(sel);
	return rc;
}

enum { OPT_WATCH_TIMEOUT = SK_OPT_FIRST_CMD };

int
sk_cmd_get(int argc, char **argv)
{
	static const struct option opts[] = { { "output", required_argument, NULL, 'o' },
		{ "selector", required_argument, NULL, 'l' }, { "watch", no_argument, NULL, 'w' },
		{ "watch-timeout", required_argument, NULL, OPT_WATCH_TIMEOUT },
		SK_CLI_GLOBAL_OPTIONS, { 0 } };
	const char *selector_text = NULL;
	sk_output fmt = SK_OUTPUT_TABLE;
	sk_store *st = NULL;
	bool watch = false;
	int64_t watch_ms = 0;
	int ch, rc;

	while ((ch = sk_cli_getopt(argc, argv, ":o:l:hw", opts)) != -1) {
		if (ch == 'o') {
			if (sk_cli_output_parse(optarg, &fmt) != 0)
				return sk_cli_usage_error(&help,
				        "-o: unknown output format \"%s\" "
				        "(table, wide, yaml, json)",
				        optarg);
		} else if (ch == 'l') {
			selector_text = optarg;
		} else if (ch == 'w') {
			watch = true;
		} else if (ch == OPT_WATCH_TIMEOUT) {
			if (sk_duration_parse(optarg, &watch_ms) != 0 || watch_ms <= 0)
				return sk_cli_usage_error(&help,
				        "--watch-timeout: invalid duration \"%s\" (e.g. 30s)",
				        optarg);
			watch = true;
		} else if ((rc = sk_cli_opt(&help, ch, argv)) != SK_CLI_CONTINUE) {
			return rc;
		}
	}
	if (optind >= argc)
		return sk_cli_usage_error(&help, "name the resource type: spacectl get userspaces");
	if (!sk_cli_is_userspace_resource(argv[optind]))
		return sk_cli_usage_error(
		        &help, "unknown resource type \"%s\" (userspaces, us)", argv[optind]);
	optind++;
	if (optind < argc && selector_text)
		return sk_cli_usage_error(&help, "names and -l cannot be used together");
	if ((rc = sk_cli_store_open(&st)) != SK_EXIT_OK)
		return rc;
	if (watch)
		rc = get_watch(
		        st, argv + optind, (size_t)(argc - optind), selector_text, fmt, watch_ms);
	else if (optind < argc)
		rc = get_named(st, argv + optind, (size_t)(argc - optind), fmt);
	else
		rc = get_list(st, selector_text, fmt);
	sk_store_close(st);
	return rc;
}
