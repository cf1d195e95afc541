/* spacectl api-resources: the kinds spacectl serves, as kubectl api-resources lists them. */
#include <string.h>

#include "spacectl.h"

static const sk_cli_help help = {
	"api-resources",
	"spacectl api-resources [-o wide|name] [--no-headers]",
	"Lists the resource types spacectl reads and writes: name, short names,\n"
	"API version, whether namespaced, kind (-o wide: the verbs too).\n"
	"\n"
	"Flags:\n"
	"  -o, --output FORMAT   wide (add VERBS) or name (NAME.GROUP)\n"
	"      --no-headers      no header line\n"
	"\n"
	"Example:\n"
	"  spacectl api-resources\n",
};

/* One row per kind; a new kind adds its row. */
static const struct api_resource {
	const char *name, *shortnames, *group, *kind, *verbs;
} resources[] = {
	{ "userspaces", "us", "spacekeeper.dev", SK_KIND_USERSPACE,
	        "create,delete,get,list,patch,replace,update,watch" },
	{ "spacequotas", "sq", "spacekeeper.dev", "SpaceQuota", "create,delete,get,list,update" },
};
#define NRESOURCES (sizeof(resources) / sizeof(resources[0]))

static void
print_table(bool wide, bool no_headers)
{
	static const char *const h[] = { "NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND",
		"VERBS" };
	sk_table *t = sk_table_new(wide ? 6 : 5, h);

	for (size_t i = 0; i < NRESOURCES; i++) {
		const char *row[] = { resources[i].name, resources[i].shortnames, SK_API_VERSION,
			"false", resources[i].kind, resources[i].verbs };
		sk_table_add_row(t, row);
	}
	sk_cli_table_write(t, no_headers);
	sk_table_free(t);
}

int
sk_cmd_api_resources(int argc, char **argv)
{
	enum { OPT_NO_HEADERS = SK_OPT_FIRST_CMD };
	static const struct option opts[] = { { "output", required_argument, NULL, 'o' },
		{ "no-headers", no_argument, NULL, OPT_NO_HEADERS }, SK_CLI_GLOBAL_OPTIONS, { 0 } };
	const char *fmt = NULL;
	bool no_headers = false;
	int ch, rc;

	while ((ch = sk_cli_getopt(argc, argv, ":o:h", opts)) != -1) {
		if (ch == 'o')
			fmt = *optarg == '=' ? optarg + 1 : optarg;
		else if (ch == OPT_NO_HEADERS)
			no_headers = true;
		else if ((rc = sk_cli_opt(&help, ch, argv)) != SK_CLI_CONTINUE)
			return rc;
	}
	if (optind < argc)
		return sk_cli_usage_error(&help, "unexpected argument \"%s\"", argv[optind]);
	if (fmt != NULL && strcmp(fmt, "wide") != 0 && strcmp(fmt, "name") != 0)
		return sk_cli_usage_error(&help, "-o: want wide or name (got \"%s\")", fmt);
	if (fmt != NULL && strcmp(fmt, "name") == 0) {
		for (size_t i = 0; i < NRESOURCES; i++)
			printf("%s.%s\n", resources[i].name, resources[i].group);
		return SK_EXIT_OK;
	}
	print_table(fmt != NULL, no_headers);
	return SK_EXIT_OK;
}
