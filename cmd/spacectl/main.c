/*
 * spacectl: the command-line client for UserSpace objects (README.md).
 * One table of commands; each lives in its own file (apply.c, get.c, ...).
 * To add a command: write NAME.c with `int sk_cmd_NAME(int argc, char **argv)`,
 * declare it in spacectl.h, add one line to the table below.
 */
#include <curl/curl.h>
#include <mongoc/mongoc.h>
#include <stdlib.h>
#include <string.h>

#include "spacectl.h"
#include "util/version.h"

static const sk_cli_command commands[] = {
	{ "apply", sk_cmd_apply, "create or update UserSpaces from files (-f file|dir|-)" },
	{ "create", sk_cmd_create, "create UserSpaces from files; existing ones are an error" },
	{ "replace", sk_cmd_replace, "replace existing UserSpaces by the objects of files" },
	{ "get", sk_cmd_get, "list UserSpaces or show one (-o table|wide|yaml|json)" },
	{ "describe", sk_cmd_describe, "show one UserSpace in detail, with conditions and events" },
	{ "delete", sk_cmd_delete, "mark UserSpaces for deletion (--force removes at once)" },
	{ "annotate", sk_cmd_annotate,
	        "set or remove annotations of a UserSpace (KEY=VALUE, KEY-)" },
	{ "label", sk_cmd_label, "set or remove labels of a UserSpace (KEY=VALUE, KEY-)" },
	{ "patch", sk_cmd_patch, "change a UserSpace with a JSON merge patch (--type merge -p)" },
	{ "fork", sk_cmd_fork, "create a UserSpace whose first sandbox is a fork of another's" },
	{ "edit", sk_cmd_edit, "edit a UserSpace in $EDITOR and apply it (compare-and-swap)" },
	{ "explain", sk_cmd_explain, "describe the fields of UserSpace (explain userspace.spec)" },
	{ "completion", sk_cmd_completion, "print a shell completion script (bash, zsh)" },
	{ "config", sk_cmd_config, "named contexts (database URIs), like kubectl config" },
	{ "diff", sk_cmd_diff, "show what apply would change (exit 1 when it would)" },
	{ "validate", sk_cmd_validate, "check files offline, without a database" },
	{ "sandboxes", sk_cmd_sandboxes, "list the sandboxes that exist at the providers" },
	{ "snapshot", sk_cmd_snapshot, "persistent snapshots of a space (create, list, restore)" },
	{ "plan", sk_cmd_plan, "show what the controller would do now (changes nothing)" },
	{ "drift", sk_cmd_drift, "list the drift the controller reports (exit 1 when any)" },
	{ "events", sk_cmd_events, "list the events of every UserSpace or of one" },
	{ "top", sk_cmd_top, "show what spaces used and cost (top userspaces --by LABEL)" },
	{ "wait", sk_cmd_wait, "wait until UserSpaces meet a condition (--for=condition=Ready)" },
	{ "rollout", sk_cmd_rollout,
	        "move a space to a new sandbox (restart) and follow it (status)" },
	{ "api-resources", sk_cmd_api_resources, "list the resource types (userspaces, us)" },
	{ "version", sk_cmd_version, "print the version" },
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

const sk_cli_command *
sk_cli_commands(size_t *n)
{
	*n = NCOMMANDS;
	return commands;
}

const char sk_cli_top_usage[] =
        "spacectl [--mongodb-uri uri] [--database name] [--timeout duration]\n"
        "         [--context name]\n"
        "         command [flags] [args]\n"
        "spacectl help [command]";

/* The flags before the command name (global flags and --version). */
const struct option sk_cli_top_options[] = { SK_CLI_GLOBAL_OPTIONS,
	{ "version", no_argument, NULL, 'V' }, { 0 } };

char *
sk_cli_top_text(void)
{
	sk_buf b = SK_BUF_INIT(0);
	int w = 0;

	sk_buf_printf(&b,
	        "spacectl manages UserSpace objects (one resident sandbox per user) in "
	        "MongoDB.\n\nCommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		w = (int)strlen(commands[i].name) > w ? (int)strlen(commands[i].name) : w;
	for (size_t i = 0; i < NCOMMANDS; i++)
		sk_buf_printf(&b, "  %-*s  %s\n", w, commands[i].name, commands[i].summary);
	sk_buf_printf(&b,
	        "\nFlags:\n"
	        "      --version      print the version (as spacectl version does)\n"
	        "\nExit codes: %s\n"
	        "\nRun 'spacectl COMMAND --help' for the flags of a command.\n",
	        SK_CLI_EXIT_CODES);
	return sk_buf_detach(&b);
}

static void
print_usage(FILE *f)
{
	const sk_cli_help top = { "", sk_cli_top_usage, NULL };

	sk_cli_print_help(&top, f);
}

static void
print_help(void)
{
	char *text = sk_cli_top_text();
	const sk_cli_help top = { "", sk_cli_top_usage, text };

	sk_cli_print_help(&top, stdout);
	free(text);
}

static const sk_cli_command *
find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++) {
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	}
	return NULL;
}

static int
unknown_command(const char *name)
{
	const char *names[NCOMMANDS], *s;

	for (size_t i = 0; i < NCOMMANDS; i++)
		names[i] = commands[i].name;
	fprintf(stderr, "spacectl: unknown command \"%s\"\n", name);
	if ((s = sk_cli_suggest(name, names, NCOMMANDS)) != NULL)
		fprintf(stderr, "\nDid you mean this?\n\t%s\n\n", s);
	print_usage(stderr);
	fprintf(stderr, "Run 'spacectl --help' for the list of commands.\n");
	return SK_EXIT_USAGE;
}

/* Global flags before the command name: spacectl --database x get us.
 * "+" stops getopt at the command name, which keeps its own flags. */
static int
parse_leading_globals(int argc, char **argv, int *i)
{
	static const sk_cli_help top = { "", "spacectl [global flags] command [flags] [args]",
		NULL };
	int ch, rc;

	while ((ch = sk_cli_getopt(argc, argv, "+:h", sk_cli_top_options)) != -1) {
		if (ch == 'h') {
			print_help();
			return SK_EXIT_OK;
		}
		if (ch == 'V')
			return -2;
		if (ch == '?' || ch == ':') {
			fprintf(stderr, "spacectl: %s global flag %s\n",
			        ch == '?' ? "unknown" : "incomplete", argv[optind - 1]);
			print_usage(stderr);
			fprintf(stderr, "Run 'spacectl --help' for the list of commands.\n");
			return SK_EXIT_USAGE;
		}
		if ((rc = sk_cli_opt(&top, ch, argv)) != SK_CLI_CONTINUE)
			return rc;
	}
	*i = optind;
	return SK_CLI_CONTINUE;
}

static int
run(int argc, char **argv)
{
	const sk_cli_command *cmd;
	int i, rc;

	rc = parse_leading_globals(argc, argv, &i);
	if (rc == -2) {
		char *v[] = { "version", NULL };
		optind = 0;
		return sk_cmd_version(1, v);
	}
	if (rc != SK_CLI_CONTINUE)
		return rc;
	if (i >= argc) {
		print_usage(stderr);
		fprintf(stderr, "Run 'spacectl --help' for the list of commands.\n");
		return SK_EXIT_USAGE;
	}
	if (strcmp(argv[i], "__gen-docs") == 0) /* hidden: make docs */
		return sk_cli_gen_docs(argc - i, argv + i);
	if (strcmp(argv[i], "help") == 0) {
		char *hv[] = { argv[i + 1], "--help", NULL };
		if (i + 1 >= argc) {
			print_help();
			return SK_EXIT_OK;
		}
		if ((cmd = find_command(argv[i + 1])) == NULL)
			return unknown_command(argv[i + 1]);
		optind = 0;
		return cmd->fn(2, hv);
	}
	if ((cmd = find_command(argv[i])) == NULL)
		return unknown_command(argv[i]);
	optind = 0;
	return cmd->fn(argc - i, argv + i);
}

int
main(int argc, char **argv)
{
	int rc;

	/* libmongoc keeps counters in shared memory for mongoc-stat, which
	 * nothing here reads; a busy /dev/shm made it warn on stderr. */
	setenv("MONGOC_DISABLE_SHM", "1", 0);
	mongoc_init();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = run(argc, argv);
	fflush(stdout);
	curl_global_cleanup();
	mongoc_cleanup();
	return rc;
}
