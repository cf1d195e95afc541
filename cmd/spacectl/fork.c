/*
 * spacectl fork: a new UserSpace whose first sandbox is forked from another
 * space's sandbox (its files, through the provider's fork), for trying
 * something risky without touching the source.
 *   fork userspace/SRC --name NEW [--user-id ID]
 * The new object copies the source's spec but for spec.userID (--user-id,
 * default NEW) and spec.source.fork.userSpace: SRC, which the controller
 * reads at the first create only. The source is read, never written. A
 * source with a volume is refused: the provider's fork mounts the source's
 * volumes, and the fork would write into the user's own files.
 */
#include <stdlib.h>
#include <string.h>

#include "api/names.h"
#include "spacectl.h"

static const sk_cli_help help = {
	"fork",
	"spacectl fork userspace/NAME --name NEW [--user-id ID]",
	"Creates the UserSpace NEW with the spec of NAME, its own user ID, and\n"
	"spec.source.fork.userSpace: NAME. The controller makes NEW's first sandbox\n"
	"with the provider's fork of NAME's sandbox (its files as they are now);\n"
	"NAME, its sandbox and its status are left as they are. A provider without\n"
	"fork (cube, daytona) creates nothing: NEW reports condition Forked=False,\n"
	"reason ForkUnsupported. Labels and annotations are not copied.\n"
	"\n"
	"Flags:\n"
	"      --name NEW        the new UserSpace (a DNS-1123 label; required)\n"
	"      --user-id ID      its spec.userID (default: NEW)\n"
	"\n"
	"Exit codes: 0 created; 1 source not found, name or user ID taken;\n"
	"2 usage; 3 database unavailable.\n"
	"\n"
	"Examples:\n"
	"  spacectl fork userspace/alice --name alice-try\n"
	"  spacectl fork alice --name alice-try --user-id alice.try\n",
};

enum { OPT_NAME = SK_OPT_FIRST_CMD, OPT_USER_ID };

typedef struct fork_args {
	const char *source;
	const char *name;
	const char *user_id;
} fork_args;

/* The new object: the source's spec, the new name, user ID and source. */
static sk_userspace *
forked_object(const sk_userspace *src, const fork_args *a)
{
	sk_userspace *us = sk_userspace_dup(src);

	sk_userspace_status_dispose(&us->status);
	free(us->meta.name);
	free(us->meta.uid);
	sk_kvlist_dispose(&us->meta.labels);
	sk_kvlist_dispose(&us->meta.annotations);
	for (size_t i = 0; i < us->meta.n_finalizers; i++)
		free(us->meta.finalizers[i]);
	free(us->meta.finalizers);
	memset(&us->meta, 0, sizeof(us->meta));
	us->meta.name = sk_strdup(a->name);
	free(us->spec.user_id);
	us->spec.user_id = sk_strdup(a->user_id);
	free(us->spec.fork_from);
	us->spec.fork_from = sk_strdup(a->source);
	return us;
}

static int
do_fork(sk_store *st, const fork_args *a)
{
	sk_userspace *src = NULL, *want, *written = NULL;
	sk_error err;
	int rc = sk_store_get(st, a->source, &src, &err);

	if (rc == SK_ENOTFOUND) {
		sk_cli_errorf("userspaces \"%s\" not found (NotFound)", a->source);
		return SK_EXIT_FAIL;
	}
	if (rc != 0) {
		sk_cli_errorf("%s", err.message);
		return sk_cli_exit_code(rc);
	}
	if (sk_storage_wanted(&src->spec)) {
		/* the provider's fork mounts the source's volumes: the fork would
		 * write into the user's own files */
		sk_cli_errorf("userspace/%s keeps its files on a volume (spec.storage.volume): "
		              "a fork would mount that same volume and change the user's files; "
		              "spaces with a volume are not forked",
		        a->source);
		sk_userspace_free(src);
		return SK_EXIT_FAIL;
	}
	want = forked_object(src, a);
	sk_userspace_free(src);
	rc = sk_store_create(st, want, &written, &err);
	sk_userspace_free(want);
	sk_userspace_free(written);
	if (rc == SK_EEXISTS) {
		sk_cli_errorf("userspaces \"%s\" already exists (AlreadyExists)", a->name);
		return SK_EXIT_FAIL;
	}
	if (rc == SK_ECONFLICT) {
		sk_cli_errorf("%s (give another with --user-id)", err.message);
		return SK_EXIT_FAIL;
	}
	if (rc != 0) {
		sk_cli_errorf("%s", err.message);
		return sk_cli_exit_code(rc);
	}
	printf("userspace/%s forked from userspace/%s\n", a->name, a->source);
	return SK_EXIT_OK;
}

static int
parse_source(fork_args *a, int argc, char **argv)
{
	char *arg, *slash;

	if (optind >= argc)
		return sk_cli_usage_error(&help, "name the source: userspace/NAME");
	arg = argv[optind++];
	if ((slash = strchr(arg, '/')) != NULL) {
		*slash = '\0';
		if (!sk_cli_is_userspace_resource(arg))
			return sk_cli_usage_error(&help, "only userspaces fork");
		arg = slash + 1;
	} else if (sk_cli_is_userspace_resource(arg) && optind < argc) {
		arg = argv[optind++];
	}
	a->source = arg;
	if (optind < argc)
		return sk_cli_usage_error(&help, "unexpected argument \"%s\"", argv[optind]);
	if (a->name == NULL)
		return sk_cli_usage_error(&help, "--name is required");
	if (!sk_valid_name(a->name))
		return sk_cli_usage_error(&help,
		        "--name: must be a DNS-1123 label [a-z0-9-]{1,63} (got \"%s\")", a->name);
	if (a->user_id == NULL)
		a->user_id = a->name;
	if (!sk_valid_user_id(a->user_id))
		return sk_cli_usage_error(&help,
		        "--user-id: must match [A-Za-z0-9._-]{1,128} (got \"%s\")", a->user_id);
	if (strcmp(a->source, a->name) == 0)
		return sk_cli_usage_error(&help, "--name: a space cannot be forked onto itself");
	return SK_CLI_CONTINUE;
}

static int
parse_args(fork_args *a, int argc, char **argv)
{
	static const struct option longopts[] = { { "name", required_argument, NULL, OPT_NAME },
		{ "user-id", required_argument, NULL, OPT_USER_ID }, SK_CLI_GLOBAL_OPTIONS,
		{ NULL, 0, NULL, 0 } };
	int c, rc;

	while ((c = sk_cli_getopt(argc, argv, "h", longopts)) != -1) {
		if (c == OPT_NAME)
			a->name = optarg;
		else if (c == OPT_USER_ID)
			a->user_id = optarg;
		else if ((rc = sk_cli_opt(&help, c, argv)) != SK_CLI_CONTINUE)
			return rc;
	}
	return parse_source(a, argc, argv);
}

int
sk_cmd_fork(int argc, char **argv)
{
	fork_args a = { 0 };
	sk_store *st = NULL;
	int rc = parse_args(&a, argc, argv);

	if (rc != SK_CLI_CONTINUE)
		return rc;
	if ((rc = sk_cli_store_open(&st)) != SK_EXIT_OK)
		return rc;
	rc = do_fork(st, &a);
	sk_store_close(st);
	return rc;
}
