/* spacectl validate: check input files offline (no database), exit 0 valid, 1 invalid. */
#include <string.h>

#include "spacectl.h"

static const sk_cli_help help = {
	"validate",
	"spacectl validate -f path ...",
	"Checks UserSpace documents without a database: schema, required fields,\n"
	"patterns, durations, unknown fields, reserved keys, and that names and\n"
	"spec.userID values are unique across the input. Prints every error with its\n"
	"field path and file:line:col. Exit 0 valid, 1 invalid, 2 usage error.\n"
	"\n"
	"Flags:\n"
	"  -f, --filename PATH   file, directory or - (repeatable, required)\n"
	"\n"
	"Example:\n"
	"  spacectl validate -f manifests/examples/\n",
};

int
sk_cmd_validate(int argc, char **argv)
{
	static const struct option opts[] = { { "filename", required_argument, NULL, 'f' },
		SK_CLI_GLOBAL_OPTIONS, { 0 } };
	sk_cli_strv files = { NULL, 0 };
	sk_cli_input in;
	int ch, rc = SK_CLI_CONTINUE;

	memset(&in, 0, sizeof(in));
	while (rc == SK_CLI_CONTINUE && (ch = sk_cli_getopt(argc, argv, ":f:h", opts)) != -1) {
		if (ch == 'f')
			sk_cli_strv_push(&files, optarg);
		else
			rc = sk_cli_opt(&help, ch, argv);
	}
	if (rc == SK_CLI_CONTINUE && optind < argc)
		rc = sk_cli_usage_error(&help, "unexpected argument \"%s\"", argv[optind]);
	if (rc == SK_CLI_CONTINUE && files.len == 0)
		rc = sk_cli_usage_error(&help, "-f PATH is required");
	if (rc == SK_CLI_CONTINUE) {
		rc = sk_cli_input_load(&in, files.items, files.len);
		if (rc == SK_EXIT_OK) {
			for (size_t i = 0; i < files.len; i++)
				printf("%s%s", i ? ", " : "",
				        strcmp(files.items[i], "-") ? files.items[i] : "<stdin>");
			printf(": %zu valid userspace(s)\n", in.len);
		} else
			sk_cli_errorf("invalid");
	}
	sk_cli_input_dispose(&in);
	sk_cli_strv_dispose(&files);
	return rc;
}
