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
	sk_cli_strv files = { NULL, 0 };
	sk_cli_input in;
	int rc = sk_cli_parse_files_only(argc, argv, &help, &files);

	memset(&in, 0, sizeof(in));
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
