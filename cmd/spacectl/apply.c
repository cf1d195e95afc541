/*
 * spacectl apply: create or update UserSpaces from files. Every document is
 * validated before anything is written; a write that fails part-way rolls
 * back what this apply already wrote, so a failed apply changes nothing.
 * An apply record (record.c) written before the first write lets the next
 * apply roll back one that was interrupted (killed, or its database gone).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spacectl.h"

static const sk_cli_help apply_help = {
	"apply",
	"spacectl apply [--dry-run[=client|server]] [-R] [-o name|yaml|json]\n"
	"               [--prune -l selector] [--recover] [--server-side] -f path ...\n"
	"spacectl apply --recover",
	"Creates or updates UserSpaces from YAML or JSON files. PATH is a file, a\n"
	"directory (*.yaml, *.yml, *.json; with -R its subdirectories too) or - for\n"
	"stdin; -f repeats.\n"
	"Every document is validated before any is written; names and spec.userID\n"
	"values must be unique. Prints userspace/NAME created|configured|unchanged.\n"
	"Re-applying the same input changes nothing (generation and resourceVersion\n"
	"stay). If a write fails part-way, the objects already written are rolled\n"
	"back, so a failed apply changes nothing. An apply that could not finish\n"
	"(killed, or the database went away) leaves an apply record: the next apply\n"
	"rolls it back first and says so when its process is gone; while it may\n"
	"still be running (or ran on another host) apply refuses, and --recover\n"
	"rolls it back. get and diff warn about it.\n"
	"\n"
	"Flags:\n"
	"  -f, --filename PATH   file, directory or - (repeatable, required)\n"
	"  -R, --recursive       read the directories of -f with their subdirectories\n"
	"      --dry-run[=MODE]  print what would change, write nothing; client (the\n"
	"                        default) and server both read the stored objects\n"
	"                        (there is no API server to ask), none applies\n"
	"  -o, --output FORMAT   name: userspace/NAME only; yaml|json: the objects\n"
	"                        as written (a List when several)\n"
	"      --prune           mark for deletion the objects matching -l that the\n"
	"                        input no longer has (GitOps); needs -l. Pruning\n"
	"                        runs after the writes and is not rolled back\n"
	"  -l, --selector SEL    label selector for --prune (k=v, k!=v, k in (a,b), ...)\n"
	"      --recover         roll back any unfinished apply (its process must be\n"
	"                        gone), then apply -f if given\n"
	"      --server-side     accepted: there is no API server and no field\n"
	"                        managers; apply writes labels, annotations and spec\n"
	"                        whole with compare-and-swap, as a server-side apply by\n"
	"                        one manager would (a note says so on stderr)\n"
	"      --field-manager NAME  accepted and ignored (no field managers)\n"
	"      --force-conflicts     accepted and ignored (one writer wins: the file)\n"
	"\n"
	"Examples:\n"
	"  spacectl apply -f manifests/examples/\n"
	"  cat alice.yaml | spacectl apply -f -\n"
	"  spacectl apply -R -f gitops/ --dry-run=server\n"
	"  spacectl apply --prune -l team=research -f research/\n",
};

static const sk_cli_help create_help = {
	"create",
	"spacectl create [--dry-run[=client|server]] [-R] [-o name|yaml|json] -f path ...",
	"Creates the UserSpaces of the files; an object that already exists is an\n"
	"error (AlreadyExists) and nothing is written. metadata.generateName without\n"
	"metadata.name names the object as the API server does: the prefix and 5\n"
	"random characters. All-or-nothing as apply is. Prints userspace/NAME created.\n"
	"\n"
	"Flags:\n"
	"  -f, --filename PATH   file, directory or - (repeatable, required)\n"
	"  -R, --recursive       read the directories of -f with their subdirectories\n"
	"      --dry-run[=MODE]  print what would be created, write nothing\n"
	"  -o, --output FORMAT   name, yaml or json\n"
	"\n"
	"Examples:\n"
	"  spacectl create -f alice.yaml\n"
	"  printf 'apiVersion: spacekeeper.dev/v1alpha1\\nkind: UserSpace\\n"
	"metadata: {generateName: trial-}\\nspec: {userID: t1}\\n' | spacectl create -f -\n",
};

static const sk_cli_help replace_help = {
	"replace",
	"spacectl replace [--dry-run[=client|server]] [-R] [-o name|yaml|json] -f path ...",
	"Replaces existing UserSpaces by the objects of the files (labels,\n"
	"annotations and spec as written; what the file leaves out is defaulted, not\n"
	"kept). An object that does not exist is an error (NotFound) and nothing is\n"
	"written. A metadata.resourceVersion in the file must be the stored one\n"
	"(Conflict otherwise), as kubectl replace of a `get -o yaml` output checks.\n"
	"Prints userspace/NAME replaced.\n"
	"\n"
	"Flags:\n"
	"  -f, --filename PATH   file, directory or - (repeatable, required)\n"
	"  -R, --recursive       read the directories of -f with their subdirectories\n"
	"      --dry-run[=MODE]  print what would be replaced, write nothing\n"
	"  -o, --output FORMAT   name, yaml or json\n"
	"\n"
	"Examples:\n"
	"  spacectl get us alice -o yaml > alice.yaml; $EDITOR alice.yaml\n"
	"  spacectl replace -f alice.yaml\n",
};

enum {
	OPT_DRY_RUN = SK_OPT_FIRST_CMD,
	OPT_PRUNE,
	OPT_RECOVER,
	OPT_SERVER_SIDE,
	OPT_FIELD_MANAGER,
	OPT_FORCE_CONFLICTS,
};

/* apply, create and replace: one machinery (validate all, write all or roll back). */
typedef enum { VERB_APPLY, VERB_CREATE, VERB_REPLACE } apply_verb;
typedef enum { DRY_NONE, DRY_CLIENT, DRY_SERVER } dry_mode;
typedef enum { ACT_CREATE, ACT_CONFIGURE, ACT_UNCHANGED } act_kind;
static const char *const act_names[] = { "created", "configured", "unchanged" };
static const char *const dry_suffix[] = { "", " (dry run)", " (server dry run)" };

typedef struct apply_item {
	const sk_userspace *want; /* from the input (borrowed) */
	const sk_doc *doc;
	sk_userspace *live; /* stored before this apply, NULL when new */
	act_kind kind;
	sk_userspace *written; /* what the store returned, NULL until written */
	bool uncertain; /* the write failed in a way that may have committed */
} apply_item;

typedef struct apply_ctx {
	apply_verb verb;
	const sk_cli_help *help;
	sk_cli_strv files;
	const char *selector_text;
	sk_selector *selector;
	bool dry_run, prune, recover, server_side;
	dry_mode dry;
	const char *output; /* -o: NULL, "name", "yaml" or "json" */
	sk_cli_input in;
	sk_store *store;
	apply_item *items;
	size_t nitems;
	char **prune_names;
	size_t nprune;
	int64_t start_ms;
	json_t *input_names; /* the names of the input, as a set */
	char *record_id; /* this apply's record, NULL when none was written */
	size_t record_parts;
} apply_ctx;

/* --dry-run[=none|client|server]; kubectl's message for anything else. */
static int
parse_dry_run(apply_ctx *c, const char *arg)
{
	if (arg == NULL || strcmp(arg, "client") == 0)
		c->dry = DRY_CLIENT;
	else if (strcmp(arg, "server") == 0)
		c->dry = DRY_SERVER;
	else if (strcmp(arg, "none") == 0)
		c->dry = DRY_NONE;
	else
		return sk_cli_usage_error(c->help,
		        "Invalid dry-run value (%s). Must be \"none\", \"server\", or \"client\".",
		        arg);
	c->dry_run = c->dry != DRY_NONE;
	return SK_CLI_CONTINUE;
}

static int
parse_output(apply_ctx *c, const char *arg)
{
	const char *s = *arg == '=' ? arg + 1 : arg;

	if (strcmp(s, "name") != 0 && strcmp(s, "yaml") != 0 && strcmp(s, "json") != 0)
		return sk_cli_usage_error(
		        c->help, "-o: unknown output format \"%s\" (name, yaml, json)", s);
	c->output = s;
	return SK_CLI_CONTINUE;
}

static int
parse_flag(apply_ctx *c, int ch, char **argv)
{
	switch (ch) {
	case 'f': sk_cli_strv_push(&c->files, optarg); return SK_CLI_CONTINUE;
	case 'l': c->selector_text = optarg; return SK_CLI_CONTINUE;
	case 'R': sk_cli.recursive = true; return SK_CLI_CONTINUE;
	case 'o': return parse_output(c, optarg);
	case OPT_DRY_RUN: return parse_dry_run(c, optarg);
	case OPT_PRUNE: c->prune = true; return SK_CLI_CONTINUE;
	case OPT_RECOVER: c->recover = true; return SK_CLI_CONTINUE;
	case OPT_SERVER_SIDE: c->server_side = true; return SK_CLI_CONTINUE;
	case OPT_FIELD_MANAGER:
	case OPT_FORCE_CONFLICTS: return SK_CLI_CONTINUE;
	default: return sk_cli_opt(c->help, ch, argv);
	}
}

static int
check_args(apply_ctx *c, int argc, char **argv)
{
	if (optind < argc && c->dry_run &&
	        (strcmp(argv[optind], "client") == 0 || strcmp(argv[optind], "server") == 0))
		return sk_cli_usage_error(c->help,
		        "unexpected argument \"%s\": the mode goes with =, --dry-run=%s",
		        argv[optind], argv[optind]);
	if (optind < argc)
		return sk_cli_usage_error(c->help, "unexpected argument \"%s\"", argv[optind]);
	if (c->files.len == 0 && !c->recover)
		return sk_cli_usage_error(c->help, "-f PATH is required");
	if (c->recover && c->dry_run)
		return sk_cli_usage_error(c->help, "--recover writes: not with --dry-run");
	if (c->prune && c->selector_text == NULL)
		return sk_cli_usage_error(c->help, "--prune needs a label selector (-l)");
	if (!c->prune && c->selector_text != NULL)
		return sk_cli_usage_error(c->help, "-l is only used with --prune");
	if (c->server_side)
		sk_cli_warnf("--server-side: spacectl has no API server and no field managers; "
		             "apply writes labels, annotations and spec whole with "
		             "compare-and-swap, as a server-side apply by one manager does");
	return SK_CLI_CONTINUE;
}

static int
parse_args(apply_ctx *c, int argc, char **argv)
{
	static const struct option apply_opts[] = { { "filename", required_argument, NULL, 'f' },
		{ "recursive", no_argument, NULL, 'R' }, { "output", required_argument, NULL, 'o' },
		{ "dry-run", optional_argument, NULL, OPT_DRY_RUN },
		{ "prune", no_argument, NULL, OPT_PRUNE },
		{ "recover", no_argument, NULL, OPT_RECOVER },
		{ "server-side", no_argument, NULL, OPT_SERVER_SIDE },
		{ "field-manager", required_argument, NULL, OPT_FIELD_MANAGER },
		{ "force-conflicts", no_argument, NULL, OPT_FORCE_CONFLICTS },
		{ "selector", required_argument, NULL, 'l' }, SK_CLI_GLOBAL_OPTIONS, { 0 } };
	static const struct option write_opts[] = { { "filename", required_argument, NULL, 'f' },
		{ "recursive", no_argument, NULL, 'R' }, { "output", required_argument, NULL, 'o' },
		{ "dry-run", optional_argument, NULL, OPT_DRY_RUN }, SK_CLI_GLOBAL_OPTIONS, { 0 } };
	bool apply = c->verb == VERB_APPLY;
	int ch, rc;

	while ((ch = sk_cli_getopt(argc, argv, apply ? ":f:l:o:Rh" : ":f:o:Rh",
	                apply ? apply_opts : write_opts)) != -1) {
		if ((rc = parse_flag(c, ch, argv)) != SK_CLI_CONTINUE)
			return rc;
	}
	return check_args(c, argc, argv);
}

static bool
str_eq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

#define same_desired sk_cli_same_desired

/* The stored objects by name and by userID (hash lookups: comparing every
 * input with every stored object was quadratic). Values are indexes. */
typedef struct live_index {
	const sk_userspace_list *all;
	json_t *by_name, *by_user;
} live_index;

static void
live_index_init(live_index *ix, const sk_userspace_list *all)
{
	ix->all = all;
	ix->by_name = json_object();
	ix->by_user = json_object();
	for (size_t i = 0; i < all->len; i++) {
		json_object_set_new(
		        ix->by_name, all->items[i]->meta.name, json_integer((json_int_t)i));
		if (all->items[i]->spec.user_id)
			json_object_set_new(ix->by_user, all->items[i]->spec.user_id,
			        json_integer((json_int_t)i));
	}
}

static void
live_index_dispose(live_index *ix)
{
	json_decref(ix->by_name);
	json_decref(ix->by_user);
}

static const sk_userspace *
live_lookup(const live_index *ix, json_t *map, const char *key)
{
	json_t *v = key ? json_object_get(map, key) : NULL;

	return v ? ix->all->items[json_integer_value(v)] : NULL;
}

static bool
input_has(const apply_ctx *c, const char *name)
{
	return json_object_get(c->input_names, name) != NULL;
}

/* create needs a new name, replace an existing object at the file's
 * resourceVersion when it gives one; kubectl's reasons. */
static bool
preflight_verb(apply_verb verb, const apply_item *it, const sk_userspace *live)
{
	const char *name = it->want->meta.name;
	int64_t rv = it->want->meta.resource_version;

	if (verb == VERB_CREATE && live != NULL) {
		sk_cli_errorf("userspaces \"%s\" already exists (AlreadyExists; %s): use spacectl "
		              "apply or replace",
		        name, sk_cli_doc_where(it->doc, "metadata.name"));
		return false;
	}
	if (verb == VERB_REPLACE && live == NULL) {
		sk_cli_errorf("userspaces \"%s\" not found (NotFound; %s): replace changes an "
		              "existing object, use spacectl create or apply",
		        name, sk_cli_doc_where(it->doc, "metadata.name"));
		return false;
	}
	if (verb == VERB_REPLACE && rv != 0 && rv != live->meta.resource_version) {
		sk_cli_errorf("Operation cannot be fulfilled on userspaces \"%s\": the object has "
		              "been modified (resourceVersion %lld, stored %lld; Conflict; %s); "
		              "please apply your changes to the latest version and try again",
		        name, (long long)rv, (long long)live->meta.resource_version,
		        sk_cli_doc_where(it->doc, "metadata.resourceVersion"));
		return false;
	}
	return true;
}

/* Checks one input against the stored objects; returns false on a conflict. */
static bool
preflight_item(apply_verb verb, apply_item *it, const live_index *ix)
{
	const sk_userspace *live = live_lookup(ix, ix->by_name, it->want->meta.name);
	const sk_userspace *o = live_lookup(ix, ix->by_user, it->want->spec.user_id);
	bool ok = preflight_verb(verb, it, live);

	if (o && strcmp(o->meta.name, it->want->meta.name) != 0) {
		sk_cli_user_id_taken(it->want, it->doc, o->meta.name);
		ok = false;
	}
	if (live && live->meta.deletion_ms != 0) {
		sk_cli_errorf("userspace/%s is being deleted; apply it again when the deletion has "
		              "finished (%s)",
		        it->want->meta.name, sk_cli_doc_where(it->doc, "metadata.name"));
		ok = false;
	}
	it->live = live ? sk_userspace_dup(live) : NULL;
	if (it->live == NULL)
		it->kind = ACT_CREATE;
	else if (same_desired(it->live, it->want))
		it->kind = ACT_UNCHANGED;
	else
		it->kind = ACT_CONFIGURE;
	return ok;
}

static int
plan_prune(apply_ctx *c)
{
	sk_userspace_list sel = { NULL, 0, 0 };
	sk_error err;
	int rc;

	sk_error_clear(&err);
	if ((rc = sk_store_list(c->store, c->selector, &sel, &err)) != 0) {
		sk_cli_errorf("listing objects to prune: %s", err.message);
		return sk_cli_exit_code(rc);
	}
	c->prune_names = sk_calloc(sel.len, sizeof(char *));
	for (size_t i = 0; i < sel.len; i++) {
		const sk_userspace *o = sel.items[i];
		if (o->meta.deletion_ms == 0 && !input_has(c, o->meta.name))
			c->prune_names[c->nprune++] = sk_strdup(o->meta.name);
	}
	sk_userspace_list_dispose(&sel);
	return SK_EXIT_OK;
}

static int
preflight(apply_ctx *c)
{
	sk_userspace_list all = { NULL, 0, 0 };
	live_index ix;
	sk_error err;
	bool ok = true;
	int rc;

	sk_error_clear(&err);
	if ((rc = sk_store_list(c->store, NULL, &all, &err)) != 0) {
		sk_cli_errorf("%s", err.message);
		return sk_cli_exit_code(rc);
	}
	live_index_init(&ix, &all);
	c->nitems = c->in.len;
	c->items = sk_calloc(c->nitems, sizeof(*c->items));
	c->input_names = json_object();
	for (size_t i = 0; i < c->nitems; i++) {
		c->items[i].want = c->in.objs[i];
		c->items[i].doc = c->in.docs.items[i];
		json_object_set_new(c->input_names, c->in.objs[i]->meta.name, json_true());
		if (!preflight_item(c->verb, &c->items[i], &ix))
			ok = false;
	}
	live_index_dispose(&ix);
	sk_userspace_list_dispose(&all);
	if (!ok)
		return SK_EXIT_FAIL;
	return c->prune ? plan_prune(c) : SK_EXIT_OK;
}

static int
write_item(apply_ctx *c, apply_item *it, sk_error *err)
{
	sk_userspace *next;
	int rc;

	if (it->kind == ACT_UNCHANGED)
		return 0;
	if (it->kind == ACT_CREATE)
		return sk_store_create(c->store, it->want, &it->written, err);
	next = sk_userspace_dup(it->want);
	next->meta.resource_version = it->live->meta.resource_version;
	rc = sk_store_update(c->store, next, &it->written, err);
	sk_userspace_free(next);
	return rc;
}

/* One undo step; 0 when done (or nothing to undo), else an error code. */
static int
undo_item(apply_ctx *c, apply_item *it, sk_error *err)
{
	sk_userspace *cur = NULL, *old, *restored = NULL;
	int rc = sk_store_get(c->store, it->want->meta.name, &cur, err);

	if (rc == SK_ENOTFOUND)
		return it->kind == ACT_CREATE ? 0 : rc;
	if (rc != 0)
		return rc;
	if (it->kind == ACT_CREATE) {
		/* Remove only what this apply created (not a concurrent writer's object). */
		bool ours = it->written ? str_eq(cur->meta.uid, it->written->meta.uid)
		                        : cur->meta.creation_ms >= c->start_ms - 1000 &&
		                same_desired(cur, it->want);
		rc = ours ? sk_store_remove(c->store, it->want->meta.name, err) : 0;
	} else if (it->written || same_desired(cur, it->want)) {
		old = sk_userspace_dup(it->live);
		old->meta.resource_version = cur->meta.resource_version;
		if (it->written && cur->meta.resource_version != it->written->meta.resource_version)
			rc = sk_error_set(err, SK_ECONFLICT, "changed by another writer since");
		else
			rc = sk_store_update(c->store, old, &restored, err);
		sk_userspace_free(restored);
		sk_userspace_free(old);
	}
	sk_userspace_free(cur);
	return rc;
}

/* Names the objects the rollback had no time left for (the first few). */
static void
report_skipped(apply_ctx *c, size_t first_skipped, size_t n)
{
	sk_buf names = SK_BUF_INIT(0);
	size_t shown = 0;

	for (size_t k = first_skipped + 1; k-- > 0 && shown < 10;) {
		apply_item *it = &c->items[k];
		if (it->kind == ACT_UNCHANGED || (it->written == NULL && !it->uncertain))
			continue;
		sk_buf_printf(&names, "%suserspace/%s", shown++ ? ", " : "", it->want->meta.name);
	}
	if (n > shown)
		sk_buf_printf(&names, " and %zu more", n - shown);
	sk_cli_errorf("rollback: out of time (database unavailable); not restored: %s",
	        names.data ? names.data : "");
	sk_buf_dispose(&names);
}

/* Undoes every write, retrying while the database is unavailable. One
 * deadline bounds the whole rollback: once it has passed, the remaining
 * objects are reported, not tried (each try would wait a full --timeout). */
static bool
rollback(apply_ctx *c, size_t upto)
{
	int64_t deadline = sk_monotonic_ms() + 4 * sk_cli.timeout_ms + 2000;
	size_t skipped = 0, first_skipped = 0;
	bool all_ok = true;

	for (size_t k = upto + 1; k-- > 0;) {
		apply_item *it = &c->items[k];
		sk_error err;
		int rc;

		if (it->kind == ACT_UNCHANGED || (it->written == NULL && !it->uncertain))
			continue;
		if (sk_monotonic_ms() >= deadline) {
			if (skipped++ == 0)
				first_skipped = k;
			continue;
		}
		do {
			sk_error_clear(&err);
			rc = undo_item(c, it, &err);
			if (rc != 0 && sk_error_retry(rc) == SK_RETRY_SAME &&
			        sk_monotonic_ms() < deadline)
				usleep(200 * 1000);
		} while (rc != 0 && sk_error_retry(rc) == SK_RETRY_SAME &&
		        sk_monotonic_ms() < deadline);
		if (rc != 0) {
			sk_cli_errorf("rollback: userspace/%s could not be restored: %s",
			        it->want->meta.name, err.message);
			all_ok = false;
		}
	}
	if (skipped > 0) {
		report_skipped(c, first_skipped, skipped);
		all_ok = false;
	}
	return all_ok;
}

/* What this apply will change, for its record. */
static json_t *
record_items(const apply_ctx *c)
{
	json_t *items = json_array();

	for (size_t i = 0; i < c->nitems; i++) {
		const apply_item *it = &c->items[i];
		json_t *e;
		if (it->kind == ACT_UNCHANGED)
			continue;
		e = json_pack("{s:s, s:s, s:o}", "name", it->want->meta.name, "action",
		        it->kind == ACT_CREATE ? "create" : "configure", "after",
		        sk_cli_desired_json(it->want));
		if (it->live != NULL)
			json_object_set_new(e, "before", sk_userspace_to_json(it->live));
		json_array_append_new(items, e);
	}
	return items;
}

/* The record goes first: nothing is written without it. */
static int
record_begin(apply_ctx *c)
{
	json_t *items = record_items(c);
	sk_error err;
	int rc = 0;

	sk_error_clear(&err);
	if (json_array_size(items) > 0) {
		c->record_id = sk_cli_record_new_id(c->start_ms);
		rc = sk_cli_record_write(
		        c->store, c->record_id, items, c->start_ms, &c->record_parts, &err);
	}
	json_decref(items);
	if (rc == 0)
		return SK_EXIT_OK;
	sk_cli_errorf("writing the apply record: %s", err.message);
	sk_cli_record_remove(c->store, c->record_id, c->record_parts, &err);
	sk_cli_errorf("no changes made");
	return sk_cli_exit_code(rc);
}

/* The apply is done (or fully rolled back): its record goes. */
static void
record_end(apply_ctx *c)
{
	sk_error err;

	sk_error_clear(&err);
	if (c->record_id == NULL ||
	        sk_cli_record_remove(c->store, c->record_id, c->record_parts, &err) == 0)
		return;
	sk_cli_warnf("the apply record could not be removed (%s): the next apply will take this "
	             "apply as interrupted and roll it back",
	        err.message);
}

static int
execute(apply_ctx *c)
{
	int rc = record_begin(c);

	if (rc != SK_EXIT_OK)
		return rc;
	for (size_t i = 0; i < c->nitems; i++) {
		apply_item *it = &c->items[i];
		sk_error err;

		sk_error_clear(&err);
		if ((rc = write_item(c, it, &err)) == 0)
			continue;
		it->uncertain = rc != SK_EEXISTS && rc != SK_ECONFLICT && rc != SK_EINVALID;
		sk_cli_errorf("userspace/%s: %s", it->want->meta.name, err.message);
		if (rollback(c, i)) {
			sk_cli_errorf("apply failed; rolled back: no changes made");
			record_end(c);
		} else {
			sk_cli_errorf("apply failed; rollback incomplete (see above); the apply "
			              "record stays: the next spacectl apply rolls back the rest");
		}
		return sk_cli_exit_code(rc);
	}
	record_end(c);
	return SK_EXIT_OK;
}

static int
prune(apply_ctx *c)
{
	int exit_code = SK_EXIT_OK;

	for (size_t i = 0; i < c->nprune; i++) {
		sk_error err;
		int rc = 0;

		sk_error_clear(&err);
		if (!c->dry_run)
			rc = sk_store_mark_deleted(c->store, c->prune_names[i], &err);
		if (rc == 0 || rc == SK_ENOTFOUND) {
			printf("userspace/%s pruned%s\n", c->prune_names[i], dry_suffix[c->dry]);
			continue;
		}
		sk_cli_errorf("prune userspace/%s: %s", c->prune_names[i], err.message);
		exit_code = sk_cli_exit_code(rc);
	}
	return exit_code;
}

/* What one item's line says: replace says replaced whatever changed, as kubectl does. */
static const char *
item_action(const apply_ctx *c, const apply_item *it)
{
	return c->verb == VERB_REPLACE ? "replaced" : act_names[it->kind];
}

/* -o yaml|json: the objects as written (as they would be, dry run). */
static int
print_objects(const apply_ctx *c)
{
	json_t *items = json_array(), *v;
	int rc;

	for (size_t i = 0; i < c->nitems; i++) {
		const apply_item *it = &c->items[i];
		json_array_append_new(items,
		        it->written                         ? sk_cli_userspace_json(it->written)
		                : it->kind == ACT_UNCHANGED ? sk_cli_userspace_json(it->live)
		                                            : sk_cli_desired_json(it->want));
	}
	if (c->nitems == 1)
		v = json_incref(json_array_get(items, 0));
	else
		v = json_pack(
		        "{s:s, s:s, s:O}", "apiVersion", "v1", "kind", "List", "items", items);
	rc = sk_cli_print_value(
	        v, strcmp(c->output, "json") == 0 ? SK_OUTPUT_JSON : SK_OUTPUT_YAML);
	json_decref(v);
	json_decref(items);
	return rc;
}

static int
print_result(const apply_ctx *c)
{
	if (c->output != NULL && strcmp(c->output, "name") != 0)
		return print_objects(c);
	for (size_t i = 0; i < c->nitems; i++) {
		const apply_item *it = &c->items[i];
		if (c->output != NULL)
			printf("userspace/%s\n", it->want->meta.name);
		else
			printf("userspace/%s %s%s\n", it->want->meta.name, item_action(c, it),
			        dry_suffix[c->dry]);
	}
	return SK_EXIT_OK;
}

static int
load_input(apply_ctx *c)
{
	if (c->verb == VERB_CREATE)
		return sk_cli_input_load_create(&c->in, c->files.items, c->files.len);
	return sk_cli_input_load(&c->in, c->files.items, c->files.len);
}

static int
apply_run(apply_ctx *c)
{
	int rc;

	if (c->files.len > 0 && (rc = load_input(c)) != SK_EXIT_OK) {
		sk_cli_errorf("no changes made: the input has errors");
		return rc;
	}
	if (c->selector_text) {
		sk_error err;
		sk_error_clear(&err);
		if (sk_selector_parse(c->selector_text, &c->selector, &err) != 0)
			return sk_cli_usage_error(c->help, "-l: %s", err.message);
	}
	if ((rc = sk_cli_store_open(&c->store)) != SK_EXIT_OK)
		return rc;
	if (c->dry_run)
		sk_cli_records_warn(c->store);
	else if ((rc = sk_cli_records_recover(c->store, c->recover)) != SK_EXIT_OK) {
		sk_cli_errorf("no changes made");
		return rc;
	}
	if (c->files.len == 0)
		return SK_EXIT_OK; /* --recover alone */
	c->start_ms = sk_now_ms();
	if ((rc = preflight(c)) != SK_EXIT_OK ||
	        (rc = sk_cli_quota_admit(c->store, &c->in)) != SK_EXIT_OK) {
		sk_cli_errorf("no changes made");
		return rc;
	}
	if ((rc = sk_cli_quota_write(c->store, &c->in, c->dry_run, dry_suffix[c->dry])) !=
	        SK_EXIT_OK)
		return rc;
	if (!c->dry_run && (rc = execute(c)) != SK_EXIT_OK)
		return rc;
	if ((rc = print_result(c)) != SK_EXIT_OK)
		return rc;
	return prune(c);
}

static int
run_verb(apply_verb verb, const sk_cli_help *help, int argc, char **argv)
{
	apply_ctx c;
	int rc;

	memset(&c, 0, sizeof(c));
	c.verb = verb;
	c.help = help;
	if ((rc = parse_args(&c, argc, argv)) == SK_CLI_CONTINUE)
		rc = apply_run(&c);
	for (size_t i = 0; i < c.nitems; i++) {
		sk_userspace_free(c.items[i].live);
		sk_userspace_free(c.items[i].written);
	}
	free(c.items);
	for (size_t i = 0; i < c.nprune; i++)
		free(c.prune_names[i]);
	free(c.prune_names);
	json_decref(c.input_names);
	free(c.record_id);
	sk_selector_free(c.selector);
	sk_store_close(c.store);
	sk_cli_input_dispose(&c.in);
	sk_cli_strv_dispose(&c.files);
	return rc;
}

int
sk_cmd_apply(int argc, char **argv)
{
	return run_verb(VERB_APPLY, &apply_help, argc, argv);
}

int
sk_cmd_create(int argc, char **argv)
{
	return run_verb(VERB_CREATE, &create_help, argc, argv);
}

int
sk_cmd_replace(int argc, char **argv)
{
	return run_verb(VERB_REPLACE, &replace_help, argc, argv);
}
