/* spacectl validate: check input files offline (no database), exit 0 valid, 1 invalid;
 * -o yaml|json prints the objects as apply would write them (defaults filled). */
#include <string.h>

#include "spacectl.h"

static const sk_cli_help help = {
	"validate",
	"spacectl validate [-o yaml|json] -f path ...",
	"Checks UserSpace and SpaceQuota documents without a database: schema,\n"
	"required fields, patterns, durations, unknown fields, reserved keys, and\n"
	"that names and spec.userID values are unique across the input. Prints every\n"
	"error with its field path and file:line:col, or, when all are valid, the\n"
	"count of each kind (\"a.yaml: 2 valid userspaces, 1 valid spacequota\").\n"
	"Exit 0 valid, 1 invalid, 2 usage error.\n"
	"YAML is read as kubectl reads it: a plain yes, no, on, off, y or n is a\n"
	"boolean, as a value and as a key (`on:` is the key \"true\"; quote it to mean\n"
	"the word). status is dropped whatever it holds and metadata.namespace\n"
	"ignored (UserSpace is cluster-scoped), as the API server does;\n"
	"metadata.generateName without a name gets a generated name (5 random\n"
	"characters), as on create (apply needs metadata.name).\n"
	"\n"
	"Flags:\n"
	"  -f, --filename PATH   file, directory or - (repeatable, required)\n"
	"  -o, --output FORMAT   yaml|json: print the valid objects as apply would\n"
	"                        write them, defaults filled (several: a List)\n"
	"\n"
	"Examples:\n"
	"  spacectl validate -f manifests/examples/\n"
	"  spacectl validate -o yaml -f alice.yaml\n",
};

static int
parse_args(int argc, char **argv, sk_cli_strv *files, sk_output *fmt)
{
	static const struct option opts[] = { { "filename", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' }, SK_CLI_GLOBAL_OPTIONS, { 0 } };
	int ch, rc = SK_CLI_CONTINUE;

	while (rc == SK_CLI_CONTINUE && (ch = sk_cli_getopt(argc, argv, ":f:o:h", opts)) != -1) {
		if (ch == 'f')
			sk_cli_strv_push(files, optarg);
		else if (ch == 'o' &&
		        (sk_cli_output_parse(optarg, fmt) != 0 ||
		                (*fmt != SK_OUTPUT_YAML && *fmt != SK_OUTPUT_JSON)))
			rc = sk_cli_usage_error(
			        &help, "-o: want yaml or json (got \"%s\")", optarg);
		else if (ch != 'o')
			rc = sk_cli_opt(&help, ch, argv);
	}
	if (rc == SK_CLI_CONTINUE && optind < argc)
		rc = sk_cli_usage_error(&help, "unexpected argument \"%s\"", argv[optind]);
	if (rc == SK_CLI_CONTINUE && files->len == 0)
		rc = sk_cli_usage_error(&help, "-f PATH is required");
	return rc;
}

/* One object as itself, several as a List (kubectl's shape). */
static int
print_objects(const sk_cli_input *in, sk_output fmt)
{
	json_t *items = json_array(), *v;
	int rc;

	for (size_t i = 0; i < in->len; i++)
		json_array_append_new(items, sk_cli_desired_json(in->objs[i]));
	if (in->len == 1)
		v = json_incref(json_array_get(items, 0));
	else
		v = json_pack(
		        "{s:s, s:s, s:O}", "apiVersion", "v1", "kind", "List", "items", items);
	rc = sk_cli_print_value(v, fmt);
	json_decref(v);
	json_decref(items);
	return rc;
}

/* "1 valid userspace", "2 valid spacequotas": the count and the kind's plural. */
static void
print_count(bool first, size_t n, const char *kind)
{
	printf("%s%zu valid %s%s", first ? "" : ", ", n, kind, n == 1 ? "" : "s");
}

/* "a.yaml, q.yaml: 2 valid userspaces, 1 valid spacequota": each kind the
 * input holds (userspaces alone when it holds neither). */
static void
print_summary(const sk_cli_strv *files, const sk_cli_input *in)
{
	for (size_t i = 0; i < files->len; i++)
		printf("%s%s", i ? ", " : "",
		        strcmp(files->items[i], "-") ? files->items[i] : "<stdin>");
	printf(": ");
	if (in->len > 0 || in->n_quotas == 0)
		print_count(true, in->len, "userspace");
	if (in->n_quotas > 0)
		print_count(in->len == 0, in->n_quotas, "spacequota");
	printf("\n");
}

int
sk_cmd_validate(int argc, char **argv)
{
	sk_cli_strv files = { NULL, 0 };
	sk_output fmt = SK_OUTPUT_TABLE;
	sk_cli_input in;
	int rc = parse_args(argc, argv, &files, &fmt);

	memset(&in, 0, sizeof(in));
	if (rc == SK_CLI_CONTINUE) {
		rc = sk_cli_input_load_create(&in, files.items, files.len);
		if (rc != SK_EXIT_OK)
			sk_cli_errorf("invalid");
		else if (fmt == SK_OUTPUT_TABLE)
			print_summary(&files, &in);
		else
			rc = print_objects(&in, fmt);
	}
	sk_cli_input_dispose(&in);
	sk_cli_strv_dispose(&files);
	return rc;
}
