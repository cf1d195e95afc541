/* spacectl version: the client version (and the API version it speaks). */
#include <stdlib.h>
#include <string.h>

#include "spacectl.h"
#include "util/version.h"

static const sk_cli_help help = {
	"version",
	"spacectl version [--client] [-o json|yaml]",
	"Prints the spacectl version and the UserSpace API version it speaks.\n"
	"There is no server version to ask (spacectl reads MongoDB itself), so\n"
	"--client, kubectl's habit, prints the same.\n"
	"\n"
	"Flags:\n"
	"      --client          the client's version only (the same output)\n"
	"  -o, --output FORMAT   json or yaml: print as an object\n",
};

int
sk_cmd_version(int argc, char **argv)
{
	enum { OPT_CLIENT = SK_OPT_FIRST_CMD };
	static const struct option opts[] = { { "output", required_argument, NULL, 'o' },
		{ "client", optional_argument, NULL, OPT_CLIENT }, SK_CLI_GLOBAL_OPTIONS, { 0 } };
	sk_output fmt = SK_OUTPUT_TABLE;
	int ch, rc;

	while ((ch = sk_cli_getopt(argc, argv, ":o:h", opts)) != -1) {
		if (ch == OPT_CLIENT) {
			if (optarg && strcmp(optarg, "true") != 0 && strcmp(optarg, "false") != 0)
				return sk_cli_usage_error(&help, "--client: want true or false");
		} else if (ch == 'o') {
			if (sk_cli_output_parse(optarg, &fmt) != 0 || fmt == SK_OUTPUT_WIDE)
				return sk_cli_usage_error(&help, "-o: use json or yaml");
		} else if ((rc = sk_cli_opt(&help, ch, argv)) != SK_CLI_CONTINUE) {
			return rc;
		}
	}
	if (optind < argc)
		return sk_cli_usage_error(&help, "unexpected argument \"%s\"", argv[optind]);
	if (fmt == SK_OUTPUT_TABLE) {
		printf("spacectl version %s (API %s)\n", SK_VERSION, SK_API_VERSION);
		return SK_EXIT_OK;
	}
	{
		json_t *v = json_pack(
		        "{s:s, s:s}", "version", SK_VERSION, "apiVersion", SK_API_VERSION);
		rc = sk_cli_print_value(v, fmt);
		json_decref(v);
	}
	return rc;
}
