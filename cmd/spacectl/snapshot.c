/*
 * spacectl snapshot: persistent snapshots of a space's sandbox, taken and
 * listed through its provider (E2B's POST /sandboxes/{id}/snapshots and GET
 * /snapshots?sandboxID=). Reads the UserSpace for its bound sandbox and
 * provider, records a SnapshotCreated event, and never writes the object.
 *   snapshot create USERSPACE [--name N]
 *   snapshot list USERSPACE [-o table|yaml|json]
 *   snapshot restore USERSPACE SNAPSHOT  sets spacekeeper.dev/restoreFrom with
 *       restartedAt and rolloutNow (one compare-and-swap): the controller
 *       starts a migration whose target is created from the snapshot,
 *       probed healthy, bound, and only then the old sandbox is deleted.
 */
#include <stdlib.h>
#include <string.h>

#include "reconcile/plan.h"
#include "sandbox/sandbox.h"
#include "spacectl.h"

static const sk_cli_help help = {
	"snapshot",
	"spacectl snapshot create USERSPACE [--name N] [--config file]\n"
	"spacectl snapshot list USERSPACE [--config file] [-o table|yaml|json]\n"
	"spacectl snapshot restore USERSPACE SNAPSHOT [--config file]",
	"create: takes a persistent snapshot of the space's current sandbox (running\n"
	"or paused) through its provider, and records a SnapshotCreated event. A\n"
	"snapshot outlives the sandbox it was taken from; a new sandbox can start\n"
	"from it (its ID is a template ID). Files under a mounted volume are not part\n"
	"of it (the volume is not the sandbox's).\n"
	"\n"
	"list: the provider's snapshots of the space's current sandbox and, after a\n"
	"restore or a restart at the same provider, of the sandbox before it (the\n"
	"migration's source), oldest first (every page). CREATED is the provider's creation time "
	"when it reports one\n"
	"(E2B's SnapshotInfo has none: \"-\").\n"
	"\n"
	"restore: the space's next sandbox starts from SNAPSHOT (an ID or a name that\n"
	"list shows). It sets the annotations spacekeeper.dev/restoreFrom,\n"
	"restartedAt and rolloutNow; the controller then creates a sandbox from the\n"
	"snapshot, probes it, binds the space to it, and only then deletes the old\n"
	"sandbox (left as it is with spec.migration.sourcePolicy Retain). Follow it with\n"
	"spacectl rollout status userspace NAME. Files written since the snapshot\n"
	"are not kept.\n"
	"\n"
	"USERSPACE is NAME, userspace/NAME or userspace NAME. The provider is the one\n"
	"the space is bound to (status.provider, else spec.provider). Providers\n"
	"without persistent snapshots (cube, daytona) answer an error that says so.\n"
	"\n"
	"Flags:\n"
	"      --name N          create: the snapshot's name ([A-Za-z0-9_-], the\n"
	"                        provider's own ID when not given)\n"
	"      --config FILE     a ControllerConfig (default: the context's\n"
	"                        controllerConfig, else one e2b provider \"default\"\n"
	"                        at http://127.0.0.1:3000, key from $E2B_API_KEY)\n"
	"  -o, --output FORMAT   table (default), yaml, json\n"
	"\n"
	"Exit codes: 0 ok; 1 not found, no sandbox, or the provider has no\n"
	"snapshots; 2 usage; 3 database or provider unavailable.\n"
	"\n"
	"Examples:\n"
	"  spacectl snapshot create userspace/alice --name before-upgrade\n"
	"  spacectl snapshot list alice -o json\n"
	"  spacectl snapshot restore alice sim-team/before-upgrade:default\n",
};

enum { OPT_CONFIG = SK_OPT_FIRST_CMD, OPT_NAME };

#define SNAPSHOT_NAME_MAX 63

typedef struct snapshot_args {
	const char *verb; /* create, list */
	const char *space;
	const char *name;
	const char *config;
	const char *snapshot; /* restore */
	sk_output fmt;
} snapshot_args;

/* The space's bound sandbox and a client of its provider. */
typedef struct space_target {
	sk_userspace *us;
	sk_controller_config *cfg;
	sk_provider *provider;
	const char *provider_name;
} space_target;

static void
target_dispose(space_target *t)
{
	sk_provider_free(t->provider);
	sk_config_free(t->cfg);
	sk_userspace_free(t->us);
}

static bool
snapshot_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > SNAPSHOT_NAME_MAX)
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == n;
}

static int
open_target(sk_store *st, const snapshot_args *a, space_target *t)
{
	const sk_provider_config *pc;
	sk_error err;
	int rc;

	sk_error_clear(&err);
	if ((rc = sk_store_get(st, a->space, &t->us, &err)) != SK_OK) {
		if (rc == SK_ENOTFOUND)
			sk_cli_errorf("userspaces \"%s\" not found (NotFound)", a->space);
		else
			sk_cli_errorf("%s", err.message);
		return sk_cli_exit_code(rc);
	}
	if (t->us->status.sandbox_id == NULL) {
		sk_cli_errorf(
		        "userspace/%s has no sandbox yet (status.sandboxID is empty)", a->space);
		return SK_EXIT_FAIL;
	}
	if ((rc = sk_cli_load_config(a->config, &t->cfg)) != SK_EXIT_OK)
		return rc;
	t->provider_name = sk_bound_provider(t->us);
	if ((pc = sk_config_provider(t->cfg, t->provider_name)) == NULL) {
		sk_cli_errorf("userspace/%s is bound to provider \"%s\", which %s does not have",
		        a->space, t->provider_name ? t->provider_name : "(default)",
		        a->config ? a->config : "the default config");
		return SK_EXIT_FAIL;
	}
	t->provider_name = pc->name;
	if ((rc = sk_provider_new(pc, &t->provider, &err)) != SK_OK) {
		sk_cli_errorf("%s", err.message);
		return sk_cli_exit_code(rc);
	}
	if (!sk_sandbox_has_snapshots(t->provider)) {
		sk_cli_errorf("provider %s (type %s) has no persistent snapshots", pc->name,
		        sk_provider_get_ops(t->provider)->name);
		return SK_EXIT_FAIL;
	}
	return SK_EXIT_OK;
}

/* The snapshots of the space's sandbox and, after a move at the same
 * provider (a restore, a restart), of the one before it: oldest first per
 * sandbox, the earlier sandbox's first. */
static int
space_snapshots(const space_target *t, sk_snapshot_list *out, sk_error *err)
{
	const sk_migration_status *m = &t->us->status.migration;
	const char *prev = m->source.sandbox_id;
	sk_snapshot_list before = { 0 };
	int rc;

	memset(out, 0, sizeof(*out));
	if (prev != NULL && strcmp(prev, t->us->status.sandbox_id) != 0 &&
	        m->source.provider != NULL && m->target.provider != NULL &&
	        strcmp(m->source.provider, m->target.provider) == 0) {
		rc = sk_sandbox_list_snapshots(t->provider, prev, &before, err);
		if (rc != SK_OK)
			return rc;
	}
	rc = sk_sandbox_list_snapshots(t->provider, t->us->status.sandbox_id, out, err);
	if (rc == SK_OK && before.len > 0) {
		before.items =
		        sk_realloc(before.items, (before.len + out->len) * sizeof(*before.items));
		memcpy(before.items + before.len, out->items, out->len * sizeof(*out->items));
		before.len += out->len;
		free(out->items);
		*out = before;
		before = (sk_snapshot_list){ 0 };
	}
	sk_snapshot_list_dispose(&before);
	return rc;
}

static int
provider_failed(const space_target *t, int rc, const sk_error *err)
{
	sk_cli_errorf("provider %s: %s", t->provider_name, err->message);
	return rc == SK_ETRANSIENT ? SK_EXIT_UNAVAILABLE : sk_cli_exit_code(rc);
}

static void
names_text(const sk_snapshot *s, sk_buf *b)
{
	for (size_t i = 0; i < s->n_names; i++)
		sk_buf_printf(b, "%s%s", i ? "," : "", s->names[i]);
	if (s->n_names == 0)
		sk_buf_printf(b, "-");
}

static json_t *
snapshot_json(const sk_snapshot *s)
{
	json_t *o = json_object(), *names = json_array();
	char ts[40];

	json_object_set_new(o, "snapshotID", json_string(s->id));
	for (size_t i = 0; i < s->n_names; i++)
		json_array_append_new(names, json_string(s->names[i]));
	json_object_set_new(o, "names", names);
	if (s->sandbox_id)
		json_object_set_new(o, "sandboxID", json_string(s->sandbox_id));
	if (s->created_ms) {
		sk_time_format(s->created_ms, ts, sizeof(ts));
		json_object_set_new(o, "createdAt", json_string(ts));
	}
	return o;
}

static int
do_create(sk_store *st, const snapshot_args *a)
{
	space_target t = { 0 };
	sk_snapshot snap = { 0 };
	sk_buf names = SK_BUF_INIT(0), msg = SK_BUF_INIT(0);
	sk_error err;
	int rc = open_target(st, a, &t);

	sk_error_clear(&err);
	if (rc != SK_EXIT_OK)
		goto done;
	if ((rc = sk_sandbox_create_snapshot(
	             t.provider, t.us->status.sandbox_id, a->name, &snap, &err)) != SK_OK) {
		rc = provider_failed(&t, rc, &err);
		goto done;
	}
	names_text(&snap, &names);
	sk_buf_printf(&msg, "snapshot %s (names: %s) of sandbox %s taken by spacectl", snap.id,
	        names.data, t.us->status.sandbox_id);
	if (sk_store_event(st, t.us->meta.name, t.us->meta.uid, "Normal", "SnapshotCreated",
	            msg.data, &err) != SK_OK)
		sk_cli_warnf("the snapshot was taken; recording its event failed: %s", err.message);
	if (a->fmt == SK_OUTPUT_JSON || a->fmt == SK_OUTPUT_YAML) {
		json_t *o = snapshot_json(&snap);
		rc = sk_cli_print_value(o, a->fmt);
		json_decref(o);
	} else {
		printf("snapshot/%s created (userspace/%s, sandbox %s)\n", snap.id, a->space,
		        t.us->status.sandbox_id);
		rc = SK_EXIT_OK;
	}
done:
	sk_buf_dispose(&names);
	sk_buf_dispose(&msg);
	sk_snapshot_dispose(&snap);
	target_dispose(&t);
	return rc;
}

static void
print_table(const sk_snapshot_list *l)
{
	static const char *const hdr[] = { "ID", "NAMES", "CREATED" };
	sk_table *tbl = sk_table_new(3, hdr);
	sk_buf out = SK_BUF_INIT(0);
	int64_t now = sk_now_ms();

	for (size_t i = 0; i < l->len; i++) {
		sk_buf names = SK_BUF_INIT(0);
		char created[40] = "-";
		const char *cells[3];
		names_text(&l->items[i], &names);
		if (l->items[i].created_ms) {
			char age[32];
			int64_t ago = now - l->items[i].created_ms;
			sk_age_format(ago > 0 ? ago : 0, age, sizeof(age));
			snprintf(created, sizeof(created), "%s ago", age);
		}
		cells[0] = l->items[i].id;
		cells[1] = names.data;
		cells[2] = created;
		sk_table_add_row(tbl, cells);
		sk_buf_dispose(&names);
	}
	sk_table_render(tbl, &out);
	fwrite(out.data ? out.data : "", 1, out.len, stdout);
	sk_buf_dispose(&out);
	sk_table_free(tbl);
}

static json_t *
snapshot_list_json(const sk_snapshot_list *l)
{
	json_t *items = json_array();

	for (size_t i = 0; i < l->len; i++)
		json_array_append_new(items, snapshot_json(&l->items[i]));
	return json_pack("{s:s, s:o}", "kind", "SnapshotList", "items", items);
}

static int
do_list(sk_store *st, const snapshot_args *a)
{
	space_target t = { 0 };
	sk_snapshot_list l = { 0 };
	sk_error err;
	int rc = open_target(st, a, &t);

	sk_error_clear(&err);
	if (rc != SK_EXIT_OK)
		goto done;
	if ((rc = space_snapshots(&t, &l, &err)) != SK_OK) {
		rc = provider_failed(&t, rc, &err);
		goto done;
	}
	if (a->fmt == SK_OUTPUT_JSON || a->fmt == SK_OUTPUT_YAML) {
		json_t *o = snapshot_list_json(&l);
		rc = sk_cli_print_value(o, a->fmt);
		json_decref(o);
	} else if (l.len == 0) {
		fprintf(stderr, "No snapshots found.\n");
		rc = SK_EXIT_OK;
	} else {
		print_table(&l);
		rc = SK_EXIT_OK;
	}
done:
	sk_snapshot_list_dispose(&l);
	target_dispose(&t);
	return rc;
}

/* ---- describe ---- */

static bool
same(const char *a, const char *b)
{
	return a != NULL && b != NULL && strcmp(a, b) == 0;
}

bool
sk_cli_space_uses_snapshots(sk_store *st, const sk_userspace *us)
{
	sk_event_list evs = { NULL, 0 };
	sk_error err;
	bool used = same(us->status.migration.trigger, "RestoreSnapshot");

	sk_error_clear(&err);
	if (!used &&
	        sk_store_events(st, us->meta.name, us->meta.uid ? us->meta.uid : "", 0, &evs,
	                &err) == SK_OK) {
		for (size_t i = 0; i < evs.len && !used; i++)
			used = same(evs.items[i].reason, "SnapshotCreated");
	}
	sk_event_list_dispose(&evs);
	return used;
}

void
sk_cli_print_snapshots(sk_store *st, const sk_userspace *us)
{
	snapshot_args a = { .space = us->meta.name };
	space_target t = { 0 };
	sk_snapshot_list l = { 0 };
	sk_error err;
	int rc = open_target(st, &a, &t);

	sk_error_clear(&err);
	if (rc == SK_EXIT_OK)
		rc = space_snapshots(&t, &l, &err);
	if (rc != SK_OK) {
		printf("Snapshots:          <unavailable%s%s>\n", err.message[0] ? ": " : "",
		        err.message);
	} else if (l.len == 0) {
		printf("Snapshots:          <none>\n");
	} else {
		printf("Snapshots:          (at provider %s)\n", t.provider_name);
		for (size_t i = 0; i < l.len; i++) {
			sk_buf names = SK_BUF_INIT(0);
			names_text(&l.items[i], &names);
			printf("  %s  %s  (of sandbox %s)\n", l.items[i].id, names.data,
			        l.items[i].sandbox_id ? l.items[i].sandbox_id : "-");
			sk_buf_dispose(&names);
		}
	}
	sk_snapshot_list_dispose(&l);
	target_dispose(&t);
}

/* Whether the provider knows ref, as a snapshot ID or one of its names. */
static bool
snapshot_known(const sk_snapshot_list *l, const char *ref)
{
	for (size_t i = 0; i < l->len; i++) {
		if (strcmp(l->items[i].id, ref) == 0)
			return true;
		for (size_t k = 0; k < l->items[i].n_names; k++)
			if (strcmp(l->items[i].names[k], ref) == 0)
				return true;
	}
	return false;
}

#define CAS_ATTEMPTS 5

static int
restore_once(sk_store *st, const snapshot_args *a, const char *stamp, sk_error *err)
{
	sk_userspace *cur = NULL, *written = NULL;
	int rc = sk_store_get(st, a->space, &cur, err);

	if (rc != 0)
		return rc;
	sk_kvlist_set(&cur->meta.annotations, SK_ANNOTATION_RESTORE_FROM, a->snapshot);
	sk_kvlist_set(&cur->meta.annotations, SK_ANNOTATION_RESTARTED_AT, stamp);
	sk_kvlist_set(&cur->meta.annotations, SK_ANNOTATION_ROLLOUT_NOW, stamp);
	rc = sk_store_update(st, cur, &written, err);
	sk_userspace_free(written);
	sk_userspace_free(cur);
	return rc;
}

static int
do_restore(sk_store *st, const snapshot_args *a)
{
	space_target t = { 0 };
	sk_snapshot_list l = { 0 };
	char stamp[64];
	sk_error err;
	int rc = open_target(st, a, &t);

	sk_error_clear(&err);
	if (rc != SK_EXIT_OK)
		goto done;
	if ((rc = sk_sandbox_list_snapshots(t.provider, NULL, &l, &err)) != SK_OK) {
		rc = provider_failed(&t, rc, &err);
		goto done;
	}
	if (!snapshot_known(&l, a->snapshot)) {
		sk_cli_errorf("provider %s has no snapshot \"%s\" (spacectl snapshot list %s)",
		        t.provider_name, a->snapshot, a->space);
		rc = SK_EXIT_FAIL;
		goto done;
	}
	if (sk_migration_active(&t.us->status.migration))
		sk_cli_warnf("userspace/%s is moving (status.migration %s): the restore starts "
		             "when that ends",
		        a->space, sk_migration_phase_name(t.us->status.migration.phase));
	sk_time_format(sk_now_ms(), stamp, sizeof(stamp));
	rc = SK_ECONFLICT;
	for (int i = 0; i < CAS_ATTEMPTS && rc == SK_ECONFLICT; i++) {
		sk_error_clear(&err);
		rc = restore_once(st, a, stamp, &err);
	}
	if (rc != SK_OK) {
		sk_cli_errorf("%s", err.message);
		rc = rc == SK_ENOTFOUND ? SK_EXIT_FAIL : sk_cli_exit_code(rc);
		goto done;
	}
	printf("userspace/%s restoring from snapshot %s (was sandbox %s)\n", a->space, a->snapshot,
	        t.us->status.sandbox_id);
	rc = SK_EXIT_OK;
done:
	sk_snapshot_list_dispose(&l);
	target_dispose(&t);
	return rc;
}

/* VERB USERSPACE [SNAPSHOT], the space in any of kubectl's forms. */
static int
parse_target(snapshot_args *a, int argc, char **argv)
{
	sk_cli_strv names = { NULL, 0 };
	int rc;

	if (optind >= argc)
		return sk_cli_usage_error(
		        &help, "expected: snapshot create|list|restore USERSPACE");
	a->verb = argv[optind++];
	if (strcmp(a->verb, "create") != 0 && strcmp(a->verb, "list") != 0 &&
	        strcmp(a->verb, "restore") != 0)
		return sk_cli_usage_error(
		        &help, "unknown verb \"%s\" (create, list, restore)", a->verb);
	if (strcmp(a->verb, "restore") == 0) {
		if (argc - optind < 2)
			return sk_cli_usage_error(
			        &help, "expected: snapshot restore USERSPACE SNAPSHOT");
		a->snapshot = argv[--argc];
		if (*a->snapshot == '\0')
			return sk_cli_usage_error(&help, "SNAPSHOT is empty");
	}
	if (optind >= argc)
		return sk_cli_usage_error(&help, "expected: snapshot %s USERSPACE", a->verb);
	rc = sk_cli_object_args(&help, argv + optind, argc - optind, true, &names);
	if (rc == SK_CLI_CONTINUE && names.len != 1)
		rc = sk_cli_usage_error(&help, "name one UserSpace");
	if (rc == SK_CLI_CONTINUE)
		a->space = names.items[0];
	sk_cli_strv_dispose(&names);
	if (rc == SK_CLI_CONTINUE && a->name && strcmp(a->verb, "create") != 0)
		rc = sk_cli_usage_error(&help, "--name goes with create");
	return rc;
}

static int
parse_args(snapshot_args *a, int argc, char **argv)
{
	static const struct option opts[] = { { "output", required_argument, NULL, 'o' },
		{ "config", required_argument, NULL, OPT_CONFIG },
		{ "name", required_argument, NULL, OPT_NAME }, SK_CLI_GLOBAL_OPTIONS, { 0 } };
	int ch, rc;

	a->fmt = SK_OUTPUT_TABLE;
	while ((ch = sk_cli_getopt(argc, argv, ":o:h", opts)) != -1) {
		if (ch == 'o') {
			if (sk_cli_output_parse(optarg, &a->fmt) != 0 || a->fmt == SK_OUTPUT_WIDE)
				return sk_cli_usage_error(&help,
				        "-o: unknown output format \"%s\" (table, yaml, json)",
				        optarg);
		} else if (ch == OPT_CONFIG) {
			a->config = optarg;
		} else if (ch == OPT_NAME) {
			a->name = optarg;
			if (!snapshot_name_valid(a->name))
				return sk_cli_usage_error(&help,
				        "--name: \"%s\" is not a snapshot name "
				        "([A-Za-z0-9_-]{1,%d})",
				        a->name, SNAPSHOT_NAME_MAX);
		} else if ((rc = sk_cli_opt(&help, ch, argv)) != SK_CLI_CONTINUE) {
			return rc;
		}
	}
	return parse_target(a, argc, argv);
}

int
sk_cmd_snapshot(int argc, char **argv)
{
	snapshot_args a = { 0 };
	sk_store *st = NULL;
	int rc = parse_args(&a, argc, argv);

	if (rc != SK_CLI_CONTINUE)
		return rc;
	if ((rc = sk_cli_store_open(&st)) != SK_EXIT_OK)
		return rc;
	if (strcmp(a.verb, "create") == 0)
		rc = do_create(st, &a);
	else if (strcmp(a.verb, "restore") == 0)
		rc = do_restore(st, &a);
	else
		rc = do_list(st, &a);
	sk_store_close(st);
	return rc;
}
