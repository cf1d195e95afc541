/*
 * spacectl annotate / label: set or remove metadata.annotations or
 * metadata.labels of one UserSpace with kubectl's syntax (KEY=VALUE sets,
 * KEY- removes, --overwrite to change an existing value). The write is a
 * compare-and-swap (sk_store_update on the resourceVersion read), retried on
 * a conflict against the fresh object; the result is validated as apply
 * validates it. Works on an object being deleted (removing the
 * spacekeeper.dev/paused annotation lets a held deletion finish).
 */
#include <stdlib.h>
#include <string.h>

#include "api/names.h"
#include "spacectl.h"

static const sk_cli_help annotate_help = {
	"annotate",
	"spacectl annotate [--overwrite] userspace NAME KEY=VALUE ... KEY- ...",
	"Sets (KEY=VALUE) or removes (KEY-) annotations of one UserSpace, as kubectl\n"
	"annotate does. Changing a key that already has another value needs\n"
	"--overwrite. The object may also be named userspace/NAME, or NAME alone.\n"
	"\n"
	"Flags:\n"
	"      --overwrite       allow changing existing values\n"
	"\n"
	"Exit codes: 0 done; 1 not found, invalid key or value, existing value without\n"
	"--overwrite, or a conflict that persisted; 2 usage; 3 database unavailable.\n"
	"\n"
	"Examples:\n"
	"  spacectl annotate userspace alice spacekeeper.dev/paused=true\n"
	"  spacectl annotate userspace alice spacekeeper.dev/paused-\n"
	"  spacectl annotate us/alice note='moved to gpu' --overwrite\n",
};

static const sk_cli_help label_help = {
	"label",
	"spacectl label [--overwrite] userspace NAME KEY=VALUE ... KEY- ...",
	"Sets (KEY=VALUE) or removes (KEY-) labels of one UserSpace, as kubectl label\n"
	"does. Changing a key that already has another value needs --overwrite. The\n"
	"object may also be named userspace/NAME, or NAME alone.\n"
	"\n"
	"Flags:\n"
	"      --overwrite       allow changing existing values\n"
	"\n"
	"Exit codes: 0 done; 1 not found, invalid key or value, existing value without\n"
	"--overwrite, or a conflict that persisted; 2 usage; 3 database unavailable.\n"
	"\n"
	"Examples:\n"
	"  spacectl label userspace alice team=research\n"
	"  spacectl label us alice team=ml --overwrite\n"
	"  spacectl label us alice team-\n",
};

enum { OPT_OVERWRITE = SK_OPT_FIRST_CMD };

#define CAS_ATTEMPTS 5

typedef struct meta_edit {
	bool labels; /* labels, else annotations */
	const sk_cli_help *help;
	const char *name;
	char **changes; /* "k=v" or "k-" */
	size_t n_changes;
	bool overwrite;
} meta_edit;

static sk_kvlist *
target(const meta_edit *e, sk_userspace *us)
{
	return e->labels ? &us->meta.labels : &us->meta.annotations;
}

static bool
kv_remove(sk_kvlist *l, const char *key)
{
	for (size_t i = 0; i < l->len; i++) {
		if (strcmp(l->items[i].key, key) != 0)
			continue;
		free(l->items[i].key);
		free(l->items[i].value);
		memmove(&l->items[i], &l->items[i + 1], (l->len - i - 1) * sizeof(*l->items));
		l->len--;
		return true;
	}
	return false;
}

/* Applies one "k=v" or "k-" to l; returns false (message printed) when refused. */
static bool
apply_change(const meta_edit *e, sk_kvlist *l, const char *change)
{
	const char *eq = strchr(change, '=');
	const char *old;
	char *key;
	bool ok = true;

	if (eq == NULL) { /* "k-": checked by parse_changes */
		key = sk_strdup(change);
		key[strlen(key) - 1] = '\0';
		if (!kv_remove(l, key))
			sk_cli_warnf(
			        "%s \"%s\" not found.", e->labels ? "label" : "annotation", key);
		free(key);
		return true;
	}
	key = sk_strndup(change, (size_t)(eq - change));
	old = sk_kvlist_get(l, key);
	if (old && strcmp(old, eq + 1) != 0 && !e->overwrite) {
		if (e->labels)
			sk_cli_errorf("'%s' already has a value (%s), and --overwrite is false",
			        key, old);
		else
			sk_cli_errorf("--overwrite is false but found the following declared "
			              "annotation(s): '%s' already has a value (%s)",
			        key, old);
		ok = false;
	} else {
		sk_kvlist_set(l, key, eq + 1);
	}
	free(key);
	return ok;
}

/* Validates the edited object as apply would; prints every error. */
static bool
valid_after(const sk_userspace *next)
{
	json_t *root = sk_cli_desired_json(next);
	sk_doc *d = sk_doc_from_json(root, "<command line>");
	sk_errlist errs = { NULL, 0 };
	sk_buf out = SK_BUF_INIT(0);
	bool ok = sk_userspace_validate(d, &errs) == 0;

	if (!ok) {
		sk_errlist_format(&errs, &out);
		fflush(stdout);
		fprintf(stderr, "%s", out.data ? out.data : "");
	}
	sk_buf_dispose(&out);
	sk_errlist_dispose(&errs);
	sk_doc_free(d);
	json_decref(root);
	return ok;
}

static int
store_error(int rc, const sk_error *err, const char *name)
{
	if (rc == SK_ENOTFOUND)
		sk_cli_errorf("userspaces \"%s\" not found (NotFound)", name);
	else
		sk_cli_errorf("%s", err->message);
	return sk_cli_exit_code(rc);
}

/* Refused here, with the reasons printed (not a store error). */
#define REFUSED 1

/* One read-modify-write. *changed: whether anything differed. */
static int
edit_once(sk_store *st, const meta_edit *e, bool *changed, sk_error *err)
{
	sk_userspace *cur = NULL, *next = NULL, *written = NULL;
	int rc;

	if ((rc = sk_store_get(st, e->name, &cur, err)) != 0)
		return rc;
	next = sk_userspace_dup(cur);
	for (size_t i = 0; i < e->n_changes; i++) {
		if (!apply_change(e, target(e, next), e->changes[i]))
			rc = REFUSED;
	}
	if (rc == 0 && !valid_after(next))
		rc = REFUSED;
	*changed = rc == 0 && !sk_kvlist_equal(target(e, cur), target(e, next));
	if (rc == 0 && *changed)
		rc = sk_store_update(st, next, &written, err);
	sk_userspace_free(written);
	sk_userspace_free(next);
	sk_userspace_free(cur);
	return rc;
}

static int
run_edit(const meta_edit *e)
{
	const char *done = e->labels ? "labeled" : "annotated";
	sk_store *st = NULL;
	sk_error err;
	bool changed = false;
	int rc = SK_ECONFLICT;

	if ((rc = sk_cli_store_open(&st)) != SK_EXIT_OK)
		return rc;
	rc = SK_ECONFLICT;
	for (int i = 0; i < CAS_ATTEMPTS && rc == SK_ECONFLICT; i++) {
		sk_error_clear(&err);
		rc = edit_once(st, e, &changed, &err);
	}
	sk_store_close(st);
	if (rc == REFUSED)
		return SK_EXIT_FAIL; /* printed */
	if (rc != 0)
		return store_error(rc, &err, e->name);
	printf("userspace/%s %s%s\n", e->name, changed ? "" : "not ", done);
	return SK_EXIT_OK;
}

static bool
is_removal(const char *s)
{
	size_t n = strlen(s);

	return n > 1 && s[n - 1] == '-' && strchr(s, '=') == NULL;
}

/* Reads "[userspace] NAME" or "userspace/NAME" at args; returns how many were used. */
static int
parse_object(meta_edit *e, char **args, int n)
{
	const char *slash;

	if (n >= 1 && (slash = strchr(args[0], '/')) != NULL) {
		char type[64];
		snprintf(type, sizeof(type), "%.*s", (int)(slash - args[0]), args[0]);
		if (!sk_cli_is_userspace_resource(type))
			return -1;
		e->name = slash + 1;
		return 1;
	}
	if (n >= 2 && sk_cli_is_userspace_resource(args[0])) {
		e->name = args[1];
		return 2;
	}
	if (n >= 1) {
		e->name = args[0];
		return 1;
	}
	return 0;
}

static int
parse_args(meta_edit *e, char **args, int n)
{
	const char *what = e->labels ? "label" : "annotation";
	int used = parse_object(e, args, n);

	if (used < 0)
		return sk_cli_usage_error(e->help,
		        "the server doesn't have a resource type \"%.*s\"",
		        (int)(strchr(args[0], '/') - args[0]), args[0]);
	if (used == 0 || e->name == NULL || *e->name == '\0')
		return sk_cli_usage_error(e->help, "a UserSpace name is required");
	if (!sk_valid_name(e->name))
		return sk_cli_usage_error(e->help, "\"%s\" is not a UserSpace name", e->name);
	e->changes = args + used;
	e->n_changes = (size_t)(n - used);
	if (e->n_changes == 0)
		return sk_cli_usage_error(e->help, "at least one %s update is required", what);
	for (size_t i = 0; i < e->n_changes; i++) {
		const char *c = e->changes[i];
		if (!is_removal(c) && (strchr(c, '=') == NULL || c[0] == '='))
			return sk_cli_usage_error(e->help, "invalid %s format: %s", what, c);
	}
	return SK_CLI_CONTINUE;
}

static int
cmd_edit(int argc, char **argv, bool labels)
{
	static const struct option opts[] = { { "overwrite", no_argument, NULL, OPT_OVERWRITE },
		SK_CLI_GLOBAL_OPTIONS, { 0 } };
	meta_edit e = { labels, labels ? &label_help : &annotate_help, NULL, NULL, 0, false };
	int ch, rc;

	while ((ch = sk_cli_getopt(argc, argv, ":h", opts)) != -1) {
		if (ch == OPT_OVERWRITE)
			e.overwrite = true;
		else if ((rc = sk_cli_opt(e.help, ch, argv)) != SK_CLI_CONTINUE)
			return rc;
	}
	if ((rc = parse_args(&e, argv + optind, argc - optind)) != SK_CLI_CONTINUE)
		return rc;
	return run_edit(&e);
}

int
sk_cmd_annotate(int argc, char **argv)
{
	return cmd_edit(argc, argv, false);
}

int
sk_cmd_label(int argc, char **argv)
{
	return cmd_edit(argc, argv, true);
}
