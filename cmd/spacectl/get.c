/*
 * spacectl get: its flags, and the objects it prints (the named ones, those of
 * -f, or the list -l selects). The outputs: table.c (the table), get_output.c
 * (-o, --sort-by, --field-selector), watch.c (-w).
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
	"                        [name ...]\n"
	"spacectl get all [-l selector] [-o table|wide|name] [--no-headers]",
	"Lists UserSpaces (all, those matching -l, or the named ones). The resource\n"
	"may be written userspaces, userspace or us; objects also as us/NAME.\n"
	"get spacequotas (sq) lists the quotas; get all lists every kind, one table\n"
	"each with NAME as KIND/NAME (spacectl get all --help). The table's columns\n"
	"are as wide with -w as without, so the rows -w adds line up with it.\n"
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
	"                         until Ctrl-C (exit 0); the table's columns as without\n"
	"                         -w (-o wide, -L, --show-labels, --no-headers)\n"
	"      --watch-timeout D  stop watching after D (e.g. 30s; exit 0)\n"
	"      --config FILE      the ControllerConfig whose providers' pausedRetention\n"
	"                         the warnings use (default: the context's\n"
	"                         controllerConfig)\n"
	"\n"
	"A space asleep near its provider's pausedRetention with no archive configured\n"
	"(within a fifth of it or a day, whichever is longer) gets a \"Warning:\" line\n"
	"on stderr: the provider will delete its sandbox and files.\n"
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
	"  spacectl get us -w\n"
	"  spacectl get all\n",
};
/* What the flags of one get ask for. */
typedef struct get_opts {
	sk_cli_get_output out; /* -o, -L, --field-selector, --sort-by, ... */
	sk_cli_strv files; /* -f */
	const char *selector_text;
	bool watch;
	int64_t watch_ms;
	sk_cli_strv names;
	const char *config; /* --config */
	sk_controller_config *cfg; /* its providers' pausedRetention (warnings) */
} get_opts;

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
		rc = sk_cli_get_print(&o->out, items, found, o->names.len == 1);
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
	rc = sk_cli_get_print(&o->out, list.items, list.len, false);
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
	rc = sk_cli_get_watch(st, o->names.items, o->names.len, sel, &o->out, o->watch_ms);
	sk_selector_free(sel);
	return rc;
}
enum {
	OPT_WATCH_TIMEOUT = SK_OPT_FIRST_CMD,
	OPT_NO_HEADERS,
	OPT_SHOW_LABELS,
	OPT_SORT_BY,
	OPT_FIELD_SELECTOR,
	OPT_CONFIG,
};

static int
parse_flag(get_opts *o, int ch, char **argv)
{
	switch (ch) {
	case 'o': return sk_cli_get_output_parse(&o->out, &help, optarg);
	case 'l': o->selector_text = optarg; return SK_CLI_CONTINUE;
	case 'w': o->watch = true; return SK_CLI_CONTINUE;
	case 'f': sk_cli_strv_push(&o->files, optarg); return SK_CLI_CONTINUE;
	case 'R': sk_cli.recursive = true; return SK_CLI_CONTINUE;
	case 'L': sk_cli_get_label_columns_add(&o->out, optarg); return SK_CLI_CONTINUE;
	case OPT_FIELD_SELECTOR: return sk_cli_get_field_selector_parse(&o->out, &help, optarg);
	case OPT_NO_HEADERS: o->out.no_headers = true; return SK_CLI_CONTINUE;
	case OPT_SHOW_LABELS: o->out.show_labels = true; return SK_CLI_CONTINUE;
	case OPT_SORT_BY: return sk_cli_get_sort_by_parse(&o->out, &help, optarg);
	case OPT_CONFIG: o->config = optarg; return SK_CLI_CONTINUE;
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
		{ "config", required_argument, NULL, OPT_CONFIG }, SK_CLI_GLOBAL_OPTIONS, { 0 } };
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
	if (o->watch && (o->out.columns || o->out.fields || o->files.len > 0))
		return sk_cli_usage_error(
		        &help, "-w is not used with custom-columns, --field-selector or -f");
	if (o->names.len > 0 && o->selector_text)
		return sk_cli_usage_error(&help, "names and -l cannot be used together");
	if (o->watch && (o->out.names_only || o->out.template || o->out.sort_by))
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
	const char *word;
	int rc;

	if (sk_cli_quota_args(argc, argv))
		return sk_cli_quota_get(argc, argv);
	word = sk_cli_resource_word(argc, argv);
	if (word != NULL && strcmp(word, "all") == 0)
		return sk_cli_get_all(argc, argv);
	memset(&o, 0, sizeof(o));
	memset(&in, 0, sizeof(in));
	o.out.fmt = SK_OUTPUT_TABLE;
	if ((rc = parse_args(&o, argc, argv)) != SK_CLI_CONTINUE)
		goto done;
	if (o.files.len > 0 && (rc = names_from_files(&o, &in)) != SK_EXIT_OK)
		goto done;
	if ((rc = sk_cli_store_open(&st)) != SK_EXIT_OK)
		goto done;
	if ((rc = sk_cli_retention_config(o.config, &o.cfg)) != SK_EXIT_OK) {
		sk_store_close(st);
		goto done;
	}
	o.out.cfg = o.cfg;
	sk_cli_records_warn(st); /* an interrupted apply: what is shown may be half of it */
	if (o.watch)
		rc = get_watch(st, &o);
	else if (o.names.len > 0)
		rc = get_named(st, &o);
	else
		rc = get_list(st, &o);
	sk_store_close(st);
done:
	sk_cli_get_output_dispose(&o.out);
	sk_cli_strv_dispose(&o.names);
	sk_cli_strv_dispose(&o.files);
	sk_cli_input_dispose(&in);
	sk_config_free(o.cfg);
	return rc;
}
