/* spacectl delete: mark UserSpaces for deletion (the controller cleans up), or --force remove. */
#include <stdlib.h>
#include <string.h>

#include "spacectl.h"

static const sk_cli_help help = {
	"delete",
	"spacectl delete [--force] [--ignore-not-found] userspace name ...\n"
	"spacectl delete [--force] [--ignore-not-found] userspace/name ...\n"
	"spacectl delete [--force] userspace -l selector | --all\n"
	"spacectl delete [--force] [--ignore-not-found] [-R] -f path ...\n"
	"spacectl delete ... [--dry-run[=client|server]] [--wait[=true|false]] [--timeout d]",
	"Marks UserSpaces for deletion and prints userspace/NAME deleted. The object\n"
	"stays (with a deletionTimestamp) until the controller has cleaned up its\n"
	"sandboxes (deletionPolicy Delete) and removed its finalizer; then it is gone.\n"
	"As kubectl delete does, it then waits until every object it marked is gone,\n"
	"saying on stderr what it waits for (and every 15s, for how long, and whether\n"
	"no controller is running); exit 0 means gone.\n"
	"\n"
	"Flags:\n"
	"  -f, --filename PATH     delete the objects named in these files (repeatable)\n"
	"  -l, --selector SEL      delete every UserSpace whose labels match SEL\n"
	"      --all               delete every UserSpace\n"
	"      --ignore-not-found  exit 0 when an object does not exist\n"
	"  -R, --recursive         -f directories with their subdirectories\n"
	"      --force             remove the object at once; its sandboxes are NOT\n"
	"                          cleaned up (they become orphans)\n"
	"      --dry-run[=MODE]    say what would be deleted (the objects must exist),\n"
	"                          delete nothing; client (default) or server: the same\n"
	"                          here, there is no API server; none deletes\n"
	"      --wait[=BOOL]       true (the default): after marking, wait until each\n"
	"                          object is gone (the controller has cleaned up; Ctrl-C\n"
	"                          stops waiting, the deletion goes on); false: return\n"
	"                          once marked\n"
	"      --timeout D         give up waiting after D (exit 1; default 0: no limit,\n"
	"                          as kubectl). Here --timeout is the wait's; the\n"
	"                          database timeout is the global --timeout given before\n"
	"                          the command (spacectl --timeout 5s delete ...)\n"
	"\n"
	"With -l or --all, no match is not an error: \"No resources found.\" (exit 0).\n"
	"\n"
	"Exit codes: 0 done (deleted and, when waiting, gone); 1 not found, a failed\n"
	"delete or the wait timed out (the objects still there are named); 2 usage;\n"
	"3 database unavailable.\n"
	"\n"
	"Examples:\n"
	"  spacectl delete userspace alice\n"
	"  spacectl delete us alice --wait=false\n"
	"  spacectl delete us -l team=research --timeout 2m\n"
	"  spacectl delete us --all\n"
	"  spacectl delete -f manifests/examples/alice.yaml\n",
};

enum {
	OPT_FORCE = SK_OPT_FIRST_CMD,
	OPT_IGNORE_NOT_FOUND,
	OPT_ALL,
	OPT_DRY_RUN,
	OPT_WAIT,
	OPT_WAIT_TIMEOUT
};

#define WAIT_POLL_MS 250
#define WAIT_PROGRESS_MS (15 * 1000)

typedef struct delete_opts {
	sk_cli_strv files;
	sk_cli_strv names; /* from the command line */
	const char *selector_text; /* -l */
	bool all, force, ignore_not_found, wait;
	int64_t timeout_ms; /* --timeout: the wait's; 0 no limit */
	const char *dry_run; /* NULL, " (dry run)" or " (server dry run)" */
} delete_opts;

/* Whether some controller holds a shard lease: none means nothing will
 * remove the finalizers the wait is waiting for (a hint, not a verdict: a
 * controller that died holding one still counts). */
static bool
controller_running(sk_store *st)
{
	sk_lease_list l = { NULL, 0 };
	sk_error err;
	bool held = false;

	sk_error_clear(&err);
	if (sk_store_lease_list(st, &l, &err) != 0)
		return true; /* unknown: no warning */
	for (size_t i = 0; i < l.len && !held; i++)
		held = l.items[i].holder != NULL && l.items[i].holder[0] != '\0';
	sk_lease_list_dispose(&l);
	return held;
}

/* Drops the names of the objects that are gone; returns an exit code
 * (SK_EXIT_OK while reads succeed). */
static int
drop_gone(sk_store *st, sk_cli_strv *pending)
{
	size_t kept = 0;
	int rc = SK_EXIT_OK;

	for (size_t i = 0; i < pending->len; i++) {
		sk_userspace *us = NULL;
		sk_error err;
		int got;

		sk_error_clear(&err);
		got = rc == SK_EXIT_OK ? sk_store_get(st, pending->items[i], &us, &err) : 0;
		sk_userspace_free(us);
		if (got == SK_ENOTFOUND)
			continue;
		if (got != 0) {
			sk_cli_errorf(
			        "waiting for userspace/%s: %s", pending->items[i], err.message);
			rc = sk_cli_exit_code(got);
		}
		pending->items[kept++] = pending->items[i];
	}
	pending->len = kept;
	return rc;
}

static void
print_pending(const char *prefix, const sk_cli_strv *pending, const char *suffix)
{
	fflush(stdout);
	fprintf(stderr, "%s", prefix);
	for (size_t i = 0; i < pending->len; i++)
		fprintf(stderr, "%suserspace/%s", i ? ", " : "", pending->items[i]);
	fprintf(stderr, "%s\n", suffix);
}

/* The wait (kubectl delete's): polls until every marked object is gone (its
 * finalizer released), saying what it waits for and, every WAIT_PROGRESS_MS,
 * for how long. Exit 0 all gone; 1 timed out; 3 the database failed. */
static int
wait_gone(sk_store *st, const delete_opts *o, sk_cli_strv *pending)
{
	int64_t start = sk_monotonic_ms(), next_note = start + WAIT_PROGRESS_MS;
	int rc = drop_gone(st, pending);

	if (rc != SK_EXIT_OK || pending->len == 0)
		return rc;
	print_pending("waiting for ", pending,
	        " to be gone (the controller cleans up the sandboxes; Ctrl-C stops waiting, "
	        "the deletion goes on)");
	if (!controller_running(st))
		sk_cli_warnf("no controller holds a shard lease: nothing removes the finalizers "
		             "until spacekeeper runs (--wait=false does not wait)");
	while ((rc = drop_gone(st, pending)) == SK_EXIT_OK && pending->len > 0) {
		int64_t now = sk_monotonic_ms();
		char took[32];
		if (o->timeout_ms > 0 && now - start >= o->timeout_ms) {
			print_pending("error: timed out waiting for ", pending, " to be gone");
			return SK_EXIT_FAIL;
		}
		if (now >= next_note) {
			char prefix[64];
			sk_duration_format((now - start) / 1000 * 1000, took, sizeof(took));
			snprintf(prefix, sizeof(prefix), "still waiting after %s for ", took);
			print_pending(prefix, pending,
			        controller_running(st) ? ""
			                               : " (no controller holds a shard lease)");
			next_note = now + WAIT_PROGRESS_MS;
		}
		sk_sleep_ms(WAIT_POLL_MS);
	}
	return rc;
}

/* Marks (or removes, or with --dry-run reads) one object; a marked one
 * joins pending, the objects the wait is for. */
static int
delete_one(sk_store *st, const delete_opts *o, char *name, sk_cli_strv *pending)
{
	sk_userspace *us = NULL;
	sk_error err;
	int rc;

	sk_error_clear(&err);
	if (o->dry_run) {
		rc = sk_store_get(st, name, &us, &err);
		sk_userspace_free(us);
	} else if (o->force) {
		rc = sk_store_remove(st, name, &err);
	} else {
		rc = sk_store_mark_deleted(st, name, &err);
	}
	if (rc == 0) {
		printf("userspace/%s deleted%s\n", name,
		        o->dry_run         ? o->dry_run
		                : o->force ? " (forced)"
		                           : "");
		if (!o->dry_run && !o->force)
			sk_cli_strv_push(pending, name);
		return SK_EXIT_OK;
	}
	if (rc == SK_ENOTFOUND) {
		if (o->ignore_not_found)
			return SK_EXIT_OK;
		sk_cli_errorf("userspaces \"%s\" not found (NotFound)", name);
		return SK_EXIT_FAIL;
	}
	sk_cli_errorf("userspace/%s: %s", name, err.message);
	return sk_cli_exit_code(rc);
}

/* The names in the -f files: metadata.name of every document, valid or not. */
static int
names_from_files(const delete_opts *o, sk_cli_strv *names, sk_doclist *docs)
{
	for (size_t i = 0; i < o->files.len; i++) {
		sk_doclist more = { NULL, 0 };
		sk_error err;

		sk_error_clear(&err);
		if (sk_doc_load_tree(o->files.items[i], sk_cli.recursive, &more, &err) != 0) {
			sk_cli_errorf("%s", err.message);
			sk_doclist_dispose(&more);
			return SK_EXIT_FAIL;
		}
		for (size_t k = 0; k < more.len; k++) {
			json_t *name = json_object_get(
			        json_object_get(sk_doc_root(more.items[k]), "metadata"), "name");
			if (!json_is_string(name)) {
				sk_cli_errorf("metadata.name: required (%s)",
				        sk_cli_doc_where(more.items[k], NULL));
				sk_doclist_dispose(&more);
				return SK_EXIT_FAIL;
			}
			sk_cli_strv_push(names, (char *)json_string_value(name));
		}
		if (more.len > 0) {
			docs->items =
			        sk_realloc(docs->items, (docs->len + more.len) * sizeof(sk_doc *));
			memcpy(docs->items + docs->len, more.items, more.len * sizeof(sk_doc *));
			docs->len += more.len;
		}
		more.len = 0;
		sk_doclist_dispose(&more);
	}
	if (names->len == 0) {
		sk_cli_errorf("no objects found in the input");
		return SK_EXIT_FAIL;
	}
	return SK_EXIT_OK;
}

/* The objects after the flags: names, or a type alone with -l / --all. */
static int
parse_targets(delete_opts *o, char **args, int n)
{
	bool bulk = o->all || o->selector_text;
	int rc;

	if (o->files.len > 0)
		return n > 0 ? sk_cli_usage_error(&help, "use either -f or names, not both")
		             : SK_CLI_CONTINUE;
	if (o->all && o->selector_text)
		return sk_cli_usage_error(&help, "use either --all or -l, not both");
	if (n == 0)
		return sk_cli_usage_error(&help, "expected: delete userspace NAME, or -f PATH");
	rc = sk_cli_object_args(&help, args, n, false, &o->names);
	if (rc != SK_CLI_CONTINUE)
		return rc;
	if (bulk && o->names.len > 0)
		return sk_cli_usage_error(
		        &help, "names cannot be used with %s", o->all ? "--all" : "-l");
	if (!bulk && o->names.len == 0)
		return sk_cli_usage_error(
		        &help, "name the UserSpace(s) to delete, or use -l SELECTOR or --all");
	return SK_CLI_CONTINUE;
}

static int
parse_dry_run(delete_opts *o, const char *arg)
{
	if (arg == NULL || strcmp(arg, "client") == 0)
		o->dry_run = " (dry run)";
	else if (strcmp(arg, "server") == 0)
		o->dry_run = " (server dry run)";
	else if (strcmp(arg, "none") == 0)
		o->dry_run = NULL;
	else
		return sk_cli_usage_error(&help,
		        "Invalid dry-run value (%s). Must be \"none\", \"server\", or \"client\".",
		        arg);
	return SK_CLI_CONTINUE;
}

static int
parse_wait(delete_opts *o, const char *arg)
{
	if (arg == NULL || strcmp(arg, "true") == 0)
		o->wait = true;
	else if (strcmp(arg, "false") == 0)
		o->wait = false;
	else
		return sk_cli_usage_error(&help,
		        "invalid argument \"%s\" for \"--wait\" flag: want true or false", arg);
	return SK_CLI_CONTINUE;
}

static int
parse_wait_timeout(delete_opts *o, const char *arg)
{
	if (strcmp(arg, "0") == 0) {
		o->timeout_ms = 0;
		return SK_CLI_CONTINUE;
	}
	if (sk_duration_parse(arg, &o->timeout_ms) != 0 || o->timeout_ms < 0)
		return sk_cli_usage_error(
		        &help, "--timeout: invalid duration \"%s\" (e.g. 60s, 5m)", arg);
	return SK_CLI_CONTINUE;
}

/* --timeout is the wait's here (kubectl's), so the global flags are spelt out. */
static int
parse_args(delete_opts *o, int argc, char **argv)
{
	static const struct option opts[] = { { "filename", required_argument, NULL, 'f' },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "ignore-not-found", no_argument, NULL, OPT_IGNORE_NOT_FOUND },
		{ "selector", required_argument, NULL, 'l' }, { "all", no_argument, NULL, OPT_ALL },
		{ "recursive", no_argument, NULL, 'R' },
		{ "dry-run", optional_argument, NULL, OPT_DRY_RUN },
		{ "wait", optional_argument, NULL, OPT_WAIT },
		{ "timeout", required_argument, NULL, OPT_WAIT_TIMEOUT },
		{ "mongodb-uri", required_argument, NULL, SK_OPT_MONGODB_URI },
		{ "database", required_argument, NULL, SK_OPT_DATABASE },
		{ "context", required_argument, NULL, SK_OPT_CONTEXT },
		{ "help", no_argument, NULL, 'h' }, { 0 } };
	int ch, rc;

	while ((ch = sk_cli_getopt(argc, argv, ":f:l:Rh", opts)) != -1) {
		switch (ch) {
		case 'f': sk_cli_strv_push(&o->files, optarg); break;
		case 'R': sk_cli.recursive = true; break;
		case OPT_DRY_RUN:
			if ((rc = parse_dry_run(o, optarg)) != SK_CLI_CONTINUE)
				return rc;
			break;
		case OPT_WAIT:
			if ((rc = parse_wait(o, optarg)) != SK_CLI_CONTINUE)
				return rc;
			break;
		case OPT_WAIT_TIMEOUT:
			if ((rc = parse_wait_timeout(o, optarg)) != SK_CLI_CONTINUE)
				return rc;
			break;
		case 'l': o->selector_text = optarg; break;
		case OPT_ALL: o->all = true; break;
		case OPT_FORCE: o->force = true; break;
		case OPT_IGNORE_NOT_FOUND: o->ignore_not_found = true; break;
		default:
			if ((rc = sk_cli_opt(&help, ch, argv)) != SK_CLI_CONTINUE)
				return rc;
		}
	}
	return parse_targets(o, argv + optind, argc - optind);
}

static int
delete_names(sk_store *st, const delete_opts *o, char **names, size_t n)
{
	sk_cli_strv pending = { NULL, 0 };
	int rc, exit_code = SK_EXIT_OK;

	if (o->force && !o->dry_run)
		sk_cli_warnf(
		        "--force removes the objects at once; their sandboxes are not cleaned up");
	for (size_t i = 0; i < n; i++) {
		rc = delete_one(st, o, names[i], &pending);
		if (rc != SK_EXIT_OK)
			exit_code = rc;
		if (rc == SK_EXIT_UNAVAILABLE)
			break;
	}
	if (o->wait && exit_code != SK_EXIT_UNAVAILABLE && pending.len > 0 &&
	        (rc = wait_gone(st, o, &pending)) != SK_EXIT_OK)
		exit_code = rc;
	sk_cli_strv_dispose(&pending);
	return exit_code;
}

/* -l SEL or --all: the matching objects as listed now; one gone meanwhile is fine. */
static int
delete_matching(sk_store *st, delete_opts *o)
{
	sk_userspace_list list = { NULL, 0, 0 };
	sk_cli_strv names = { NULL, 0 };
	int rc = sk_cli_list_selected(st, &help, o->selector_text, &list);

	if (rc != SK_EXIT_OK)
		return rc;
	for (size_t i = 0; i < list.len; i++)
		sk_cli_strv_push(&names, list.items[i]->meta.name);
	o->ignore_not_found = true;
	if (names.len == 0) {
		fflush(stdout);
		fprintf(stderr, "No resources found.\n");
	}
	rc = names.len ? delete_names(st, o, names.items, names.len) : SK_EXIT_OK;
	sk_cli_strv_dispose(&names);
	sk_userspace_list_dispose(&list);
	return rc;
}

static int
run(delete_opts *o, char **names, size_t n)
{
	sk_store *st = NULL;
	int rc;

	if ((rc = sk_cli_store_open(&st)) != SK_EXIT_OK)
		return rc;
	if (o->all || o->selector_text)
		rc = delete_matching(st, o);
	else
		rc = delete_names(st, o, names, n);
	sk_store_close(st);
	return rc;
}

int
sk_cmd_delete(int argc, char **argv)
{
	delete_opts o;
	sk_cli_strv names = { NULL, 0 };
	sk_doclist docs = { NULL, 0 };
	int rc;

	if (sk_cli_quota_args(argc, argv))
		return sk_cli_quota_delete(argc, argv);
	memset(&o, 0, sizeof(o));
	o.wait = true;
	if ((rc = parse_args(&o, argc, argv)) != SK_CLI_CONTINUE)
		goto done;
	if (o.files.len > 0) {
		if ((rc = names_from_files(&o, &names, &docs)) == SK_EXIT_OK)
			rc = run(&o, names.items, names.len);
	} else {
		rc = run(&o, o.names.items, o.names.len);
	}
done:
	sk_cli_strv_dispose(&names);
	sk_cli_strv_dispose(&o.names);
	sk_cli_strv_dispose(&o.files);
	sk_doclist_dispose(&docs);
	return rc;
}
