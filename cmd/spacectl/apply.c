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

static const sk_cli_help help = {
	"apply",
	"spacectl apply [--dry-run] [--prune -l selector] [--recover] -f path ...\n"
	"spacectl apply --recover",
	"Creates or updates UserSpaces from YAML or JSON files. PATH is a file, a\n"
	"directory (*.yaml, *.yml, *.json, not recursive) or - for stdin; -f repeats.\n"
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
	"      --dry-run         print what would change, write nothing\n"
	"      --prune           mark for deletion the objects matching -l that the\n"
	"                        input no longer has (GitOps); needs -l. Pruning\n"
	"                        runs after the writes and is not rolled back\n"
	"  -l, --selector SEL    label selector for --prune (k=v, k!=v, k in (a,b), ...)\n"
	"      --recover         roll back any unfinished apply (its process must be\n"
	"                        gone), then apply -f if given\n"
	"\n"
	"Examples:\n"
	"  spacectl apply -f manifests/examples/\n"
	"  cat alice.yaml | spacectl apply -f -\n"
	"  spacectl apply --prune -l team=research -f research/\n",
};

enum { OPT_DRY_RUN = SK_OPT_FIRST_CMD, OPT_PRUNE, OPT_RECOVER };

typedef enum { ACT_CREATE, ACT_CONFIGURE, ACT_UNCHANGED } act_kind;
static const char *const act_names[] = { "created", "configured", "unchanged" };

typedef struct apply_item {
	const sk_userspace *want; /* from the input (borrowed) */
	const sk_doc *doc;
	sk_userspace *live; /* stored before this apply, NULL when new */
	act_kind kind;
	sk_userspace *written; /* what the store returned, NULL until written */
	bool uncertain; /* the write failed in a way that may have committed */
} apply_item;

typedef struct apply_ctx {
	sk_cli_strv files;
	const char *selector_text;
	sk_selector *selector;
	bool dry_run, prune, recover;
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

static int
parse_args(apply_ctx *c, int argc, char **argv)
{
	static const struct option opts[] = { { "filename", required_argument, NULL, 'f' },
		{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
		{ "prune", no_argument, NULL, OPT_PRUNE },
		{ "recover", no_argument, NULL, OPT_RECOVER },
		{ "selector", required_argument, NULL, 'l' }, SK_CLI_GLOBAL_OPTIONS, { 0 } };
	int ch, rc;

	while ((ch = sk_cli_getopt(argc, argv, ":f:l:h", opts)) != -1) {
		switch (ch) {
		case 'f': sk_cli_strv_push(&c->files, optarg); break;
		case 'l': c->selector_text = optarg; break;
		case OPT_DRY_RUN: c->dry_run = true; break;
		case OPT_PRUNE: c->prune = true; break;
		case OPT_RECOVER: c->recover = true; break;
		default:
			if ((rc = sk_cli_opt(&help, ch, argv)) != SK_CLI_CONTINUE)
				return rc;
		}
	}
	if (optind < argc)
		return sk_cli_usage_error(&help, "unexpected argument \"%s\"", argv[optind]);
	if (c->files.len == 0 && !c->recover)
		return sk_cli_usage_error(&help, "-f PATH is required");
	if (c->recover && c->dry_run)
		return sk_cli_usage_error(&help, "--recover writes: not with --dry-run");
	if (c->prune && c->selector_text == NULL)
		return sk_cli_usage_error(&help, "--prune needs a label selector (-l)");
	if (!c->prune && c->selector_text != NULL)
		return sk_cli_usage_error(&help, "-l is only used with --prune");
	return SK_CLI_CONTINUE;
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

/* Checks one input against the stored objects; returns false on a conflict. */
static bool
preflight_item(apply_item *it, const live_index *ix)
{
	const sk_userspace *live = live_lookup(ix, ix->by_name, it->want->meta.name);
	const sk_userspace *o = live_lookup(ix, ix->by_user, it->want->spec.user_id);
	bool ok = true;

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
	else
		it->kind = same_desired(it->live, it->want) ? ACT_UNCHANGED : ACT_CONFIGURE;
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
		if (!preflight_item(&c->items[i], &ix))
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
			printf("userspace/%s pruned%s\n", c->prune_names[i],
			        c->dry_run ? " (dry run)" : "");
			continue;
		}
		sk_cli_errorf("prune userspace/%s: %s", c->prune_names[i], err.message);
		exit_code = sk_cli_exit_code(rc);
	}
	return exit_code;
}

static int
apply_run(apply_ctx *c)
{
	int rc;

	if (c->files.len > 0 &&
	        (rc = sk_cli_input_load(&c->in, c->files.items, c->files.len)) != SK_EXIT_OK) {
		sk_cli_errorf("no changes made: the input has errors");
		return rc;
	}
	if (c->selector_text) {
		sk_error err;
		sk_error_clear(&err);
		if (sk_selector_parse(c->selector_text, &c->selector, &err) != 0)
			return sk_cli_usage_error(&help, "-l: %s", err.message);
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
	if ((rc = preflight(c)) != SK_EXIT_OK) {
		sk_cli_errorf("no changes made");
		return rc;
	}
	if (!c->dry_run && (rc = execute(c)) != SK_EXIT_OK)
		return rc;
	for (size_t i = 0; i < c->nitems; i++)
		printf("userspace/%s %s%s\n", c->items[i].want->meta.name,
		        act_names[c->items[i].kind], c->dry_run ? " (dry run)" : "");
	return prune(c);
}

int
sk_cmd_apply(int argc, char **argv)
{
	apply_ctx c;
	int rc;

	memset(&c, 0, sizeof(c));
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
