/*
 * spacectl patch: change one UserSpace with a JSON merge patch (RFC 7386,
 * kubectl patch --type merge). The patch is applied to the object as the
 * user wrote it (sk_cli_desired_json), the result is validated as apply
 * validates a file, and written with compare-and-swap on the resourceVersion
 * read; a conflict re-reads and re-applies the patch.
 */
#include <stdlib.h>
#include <string.h>

#include "spacectl.h"

static const sk_cli_help help = {
	"patch",
	"spacectl patch userspace NAME --type merge -p PATCH [--dry-run]\n"
	"spacectl patch userspace/NAME --type merge -p PATCH [--dry-run]",
	"Changes one UserSpace with a JSON merge patch (RFC 7386): objects merge key\n"
	"by key, a null removes a key, anything else replaces. PATCH is JSON or YAML.\n"
	"The result is validated as apply validates a file and written with\n"
	"compare-and-swap (a concurrent change is re-read and the patch re-applied).\n"
	"metadata.name cannot change. Prints userspace/NAME patched, or\n"
	"patched (no change).\n"
	"\n"
	"Flags:\n"
	"      --type merge      the patch type (only merge)\n"
	"  -p, --patch PATCH     the patch\n"
	"      --dry-run         print the patched object (YAML), write nothing\n"
	"\n"
	"Exit codes: 0 done; 1 not found, invalid result or a conflict that persisted;\n"
	"2 usage (bad patch syntax); 3 database unavailable.\n"
	"\n"
	"Examples:\n"
	"  spacectl patch us alice --type merge -p '{\"spec\":{\"mode\":\"Paused\"}}'\n"
	"  spacectl patch us/alice -p '{\"metadata\":{\"labels\":{\"team\":null}}}'\n",
};

enum { OPT_TYPE = SK_OPT_FIRST_CMD, OPT_DRY_RUN };

#define CAS_ATTEMPTS 5

int
sk_cli_next_version(const sk_userspace *cur, sk_doc *d, sk_userspace **out, sk_errlist *errs)
{
	sk_userspace *next = NULL;
	int line = 0, col = 0;

	*out = NULL;
	if (sk_userspace_from_input(d, false, &next, errs) != 0)
		return SK_EINVALID;
	if (strcmp(next->meta.name, cur->meta.name) != 0) {
		sk_doc_position(d, "metadata.name", &line, &col);
		sk_errlist_add(errs, "metadata.name", sk_doc_file(d), line, col,
		        "cannot be changed (was \"%s\")", cur->meta.name);
		sk_userspace_free(next);
		return SK_EINVALID;
	}
	next->meta.resource_version = cur->meta.resource_version;
	*out = next;
	return 0;
}

/* RFC 7386: the result of merging patch into target (a new reference). */
static json_t *
merge_patch(json_t *target, json_t *patch)
{
	json_t *result, *v;
	const char *k;

	if (!json_is_object(patch))
		return json_deep_copy(patch);
	result = json_is_object(target) ? json_deep_copy(target) : json_object();
	json_object_foreach(patch, k, v)
	{
		if (json_is_null(v))
			json_object_del(result, k);
		else
			json_object_set_new(result, k, merge_patch(json_object_get(result, k), v));
	}
	return result;
}

typedef struct patch_ctx {
	const char *name;
	const char *type;
	const char *text; /* -p */
	json_t *patch;
	bool dry_run;
	sk_store *store;
} patch_ctx;

static void
print_errs(const sk_errlist *errs)
{
	sk_buf out = SK_BUF_INIT(0);

	sk_errlist_format(errs, &out);
	fflush(stdout);
	fprintf(stderr, "%s", out.data ? out.data : "");
	sk_buf_dispose(&out);
}

/* Refused here, with the reasons printed (not a store error). */
#define REFUSED 1

/* One read-patch-write. *changed: whether the result differs. */
static int
patch_once(patch_ctx *c, bool *changed, sk_error *err)
{
	sk_userspace *cur = NULL, *next = NULL, *written = NULL;
	json_t *base = NULL, *merged = NULL;
	sk_errlist errs = { NULL, 0 };
	sk_doc *d = NULL;
	int rc;

	if ((rc = sk_store_get(c->store, c->name, &cur, err)) != 0)
		goto done;
	base = sk_cli_desired_json(cur);
	merged = merge_patch(base, c->patch);
	d = sk_doc_from_json(merged, "<patch>");
	if (sk_cli_next_version(cur, d, &next, &errs) != 0) {
		sk_cli_errorf("userspace/%s: the patched object is not valid:", c->name);
		print_errs(&errs);
		rc = REFUSED;
		goto done;
	}
	*changed = !sk_cli_same_desired(cur, next);
	if (c->dry_run)
		rc = sk_cli_print_value(merged, SK_OUTPUT_YAML) == SK_EXIT_OK ? 0 : REFUSED;
	else if (*changed)
		rc = sk_store_update(c->store, next, &written, err);
done:
	sk_errlist_dispose(&errs);
	sk_doc_free(d);
	json_decref(merged);
	json_decref(base);
	sk_userspace_free(written);
	sk_userspace_free(next);
	sk_userspace_free(cur);
	return rc;
}

static int
run(patch_ctx *c)
{
	bool changed = false;
	sk_error err;
	int rc;

	if ((rc = sk_cli_store_open(&c->store)) != SK_EXIT_OK)
		return rc;
	rc = SK_ECONFLICT;
	for (int i = 0; i < CAS_ATTEMPTS && rc == SK_ECONFLICT; i++) {
		sk_error_clear(&err);
		rc = patch_once(c, &changed, &err);
	}
	if (rc == REFUSED)
		return SK_EXIT_FAIL;
	if (rc == SK_ENOTFOUND) {
		sk_cli_errorf("userspaces \"%s\" not found (NotFound)", c->name);
		return SK_EXIT_FAIL;
	}
	if (rc != 0) {
		sk_cli_errorf("userspace/%s: %s", c->name, err.message);
		return sk_cli_exit_code(rc);
	}
	if (!c->dry_run)
		printf("userspace/%s patched%s\n", c->name, changed ? "" : " (no change)");
	return SK_EXIT_OK;
}

/* -p as JSON or YAML: exactly one document, an object. */
static int
parse_patch(patch_ctx *c)
{
	sk_doclist docs = { NULL, 0 };
	sk_error err;
	int rc = SK_CLI_CONTINUE;

	sk_error_clear(&err);
	if (sk_doc_parse(c->text, strlen(c->text), "<patch>", &docs, &err) != 0)
		rc = sk_cli_usage_error(&help, "-p: %s", err.message);
	else if (docs.len != 1 || !json_is_object(sk_doc_root(docs.items[0])))
		rc = sk_cli_usage_error(&help, "-p: the patch must be one JSON or YAML object");
	else
		c->patch = json_incref(sk_doc_root(docs.items[0]));
	sk_doclist_dispose(&docs);
	return rc;
}

static int
parse_args(patch_ctx *c, int argc, char **argv)
{
	static const struct option opts[] = { { "type", required_argument, NULL, OPT_TYPE },
		{ "patch", required_argument, NULL, 'p' },
		{ "dry-run", no_argument, NULL, OPT_DRY_RUN }, SK_CLI_GLOBAL_OPTIONS, { 0 } };
	sk_cli_strv names = { NULL, 0 };
	int ch, rc;

	while ((ch = sk_cli_getopt(argc, argv, ":p:h", opts)) != -1) {
		if (ch == OPT_TYPE)
			c->type = optarg;
		else if (ch == 'p')
			c->text = optarg;
		else if (ch == OPT_DRY_RUN)
			c->dry_run = true;
		else if ((rc = sk_cli_opt(&help, ch, argv)) != SK_CLI_CONTINUE)
			return rc;
	}
	if (c->type && strcmp(c->type, "merge") != 0)
		return sk_cli_usage_error(&help,
		        "--type: \"%s\" is not supported (merge; UserSpace has no strategic "
		        "or json patch here)",
		        c->type);
	if (c->text == NULL)
		return sk_cli_usage_error(&help, "-p PATCH is required");
	rc = sk_cli_object_args(&help, argv + optind, argc - optind, false, &names);
	if (rc == SK_CLI_CONTINUE && names.len != 1)
		rc = sk_cli_usage_error(&help, "name one UserSpace to patch");
	c->name = rc == SK_CLI_CONTINUE ? names.items[0] : NULL;
	sk_cli_strv_dispose(&names);
	return rc == SK_CLI_CONTINUE ? parse_patch(c) : rc;
}

int
sk_cmd_patch(int argc, char **argv)
{
	patch_ctx c;
	int rc;

	memset(&c, 0, sizeof(c));
	if ((rc = parse_args(&c, argc, argv)) == SK_CLI_CONTINUE)
		rc = run(&c);
	sk_store_close(c.store);
	json_decref(c.patch);
	return rc;
}
