/*
 * spacectl plan: what the controller would do now, computed by the same
 * observe + plan (pkg/reconcile) against the real providers, changing
 * nothing: no provider mutation, no store write (terraform plan habit).
 */
#include <stdlib.h>
#include <string.h>

#include "api/names.h"
#include "reconcile/reconcile.h"
#include "sandbox/sandbox.h"
#include "spacectl.h"

static const sk_cli_help help = {
	"plan",
	"spacectl plan [--config file] [-o table|yaml|json] [--exit-code] [[userspace] name ...]\n"
	"spacectl plan [--config file] [-o table|yaml|json] [--exit-code] userspace/name ...\n"
	"spacectl plan [--config file] [-o table|yaml|json] [--exit-code] -f path ...",
	"Prints what the controller would do now for each UserSpace: the ordered\n"
	"actions, the next phase, the drift and when it would look again. It runs the\n"
	"controller's own observe and plan steps against the real providers (reads\n"
	"only: list, get, data-plane probe) and changes nothing: no sandbox is\n"
	"created, resumed, paused or killed, and nothing is written to the database.\n"
	"The table ends with the summary, on stdout: \"Plan: N of M userspace(s) to\n"
	"change.\"\n"
	"\n"
	"The desired state is the stored object (NAME), every stored object (no\n"
	"argument), or the objects in files (-f) as apply would store them (merged\n"
	"onto the stored object when it exists).\n"
	"\n"
	"Flags:\n"
	"  -f, --filename PATH   file, directory or - (repeatable)\n"
	"      --config FILE     a ControllerConfig for the providers (default: the\n"
	"                        context's controllerConfig, else one e2b provider\n"
	"                        \"default\" at http://127.0.0.1:3000 for API and data\n"
	"                        plane, key from $E2B_API_KEY)\n"
	"  -o, --output FORMAT   table (default), yaml or json\n"
	"      --exit-code       exit 1 when any mutating action (create, resume, pause,\n"
	"                        kill) is planned, 0 when none, 2 or more on an error\n"
	"\n"
	"Exit codes: 0 success, whatever the plan (without --exit-code); 1 failure;\n"
	"2 usage; 3 database or provider unavailable.\n"
	"\n"
	"Examples:\n"
	"  spacectl plan --config manifests/config/demo.yaml\n"
	"  spacectl plan alice -o json\n"
	"  spacectl plan -f manifests/examples/ --exit-code || echo \"changes pending\"\n",
};

enum { OPT_CONFIG = SK_OPT_FIRST_CMD, OPT_EXIT_CODE };

typedef struct plan_args {
	sk_cli_strv files;
	const char *config;
	sk_output fmt;
	bool exit_code;
	char **names;
	size_t nnames;
	sk_cli_strv targets; /* the names, parsed */
} plan_args;

/* One provider of the config, opened and listed on first use. */
typedef struct prov_state {
	sk_provider *p;
	sk_sandbox_list all; /* managed sandboxes, every page */
	int64_t listed_ms;
	bool tried;
	int exit_code; /* != 0: unusable (error already printed) */
} prov_state;

typedef struct plan_ctx {
	plan_args a;
	sk_controller_config *cfg;
	prov_state *provs; /* parallel to cfg->providers */
	sk_store *store;
	json_t *items; /* -o json/yaml */
	size_t n_changing, n_total;
	int worst; /* worst exit code of the failures */
} plan_ctx;

/* ---- config and providers ---- */

static void
fail(plan_ctx *c, int exit_code)
{
	if (exit_code > c->worst)
		c->worst = exit_code;
}

static prov_state *
provider(plan_ctx *c, const char *name)
{
	sk_kvlist match = { 0 };
	prov_state *ps;
	sk_error err;
	size_t i;
	int rc;

	for (i = 0; i < c->cfg->n_providers; i++) {
		if (strcmp(c->cfg->providers[i].name, name ? name : "") == 0)
			break;
	}
	if (i == c->cfg->n_providers)
		return NULL;
	ps = &c->provs[i];
	if (ps->tried)
		return ps;
	ps->tried = true;
	sk_error_clear(&err);
	if ((rc = sk_provider_new(&c->cfg->providers[i], &ps->p, &err)) != SK_OK) {
		sk_cli_errorf("%s", err.message);
		ps->exit_code = sk_cli_exit_code(rc);
		return ps;
	}
	/* The controller's view: one list of the managed sandboxes (all pages). */
	sk_kvlist_set(&match, SK_META_MANAGED_BY, SK_MANAGED_BY_VALUE);
	ps->listed_ms = sk_now_ms();
	rc = sk_sandbox_list_all(ps->p, &match, &ps->all, &err);
	sk_kvlist_dispose(&match);
	if (rc != SK_OK) {
		sk_cli_errorf("provider %s: %s", name, err.message);
		ps->exit_code = rc == SK_ETRANSIENT ? SK_EXIT_UNAVAILABLE : sk_cli_exit_code(rc);
	}
	return ps;
}

/* The user's sandboxes from the provider's list, as the controller groups them. */
static void
user_view(const prov_state *ps, const char *user_id, sk_sandbox_list *mine, sk_list_view *view)
{
	memset(view, 0, sizeof(*view));
	view->valid = true;
	view->listed_ms = ps->listed_ms;
	for (size_t i = 0; i < ps->all.len; i++) {
		const sk_sandbox *sb = &ps->all.items[i];
		const char *uid = sk_kvlist_get(&sb->metadata, SK_META_USER_ID);
		if (uid == NULL || strcmp(uid, user_id) != 0 || sb->state == SK_SANDBOX_GONE)
			continue;
		mine->items = sk_realloc(mine->items, (mine->len + 1) * sizeof(*mine->items));
		sk_sandbox_copy(&mine->items[mine->len++], sb);
	}
	view->for_user = mine->len ? mine : NULL;
}

/* ---- output ---- */

static json_t *
action_json(const sk_action *a)
{
	sk_buf d = SK_BUF_INIT(0);
	json_t *o = json_object();

	sk_action_describe(a, &d);
	json_object_set_new(o, "type", json_string(sk_action_type_name(a->type)));
	if (a->sandbox_id)
		json_object_set_new(o, "sandboxID", json_string(a->sandbox_id));
	if (a->type == SK_ACTION_KILL)
		json_object_set_new(o, "reason", json_string(sk_kill_reason_name(a->why)));
	json_object_set_new(o, "mutating", json_boolean(sk_action_is_mutating(a)));
	json_object_set_new(o, "description", json_string(d.data ? d.data : ""));
	sk_buf_dispose(&d);
	return o;
}

static bool
changes(const sk_plan_result *r)
{
	for (size_t i = 0; i < r->n_actions; i++) {
		if (sk_action_is_mutating(&r->actions[i]))
			return true;
	}
	return false;
}

/* A SpecMismatch the controller only reports: the spec differs from the sandbox. */
static bool
spec_pending(const sk_plan_result *r)
{
	for (size_t i = 0; i < r->next.n_drift; i++) {
		if (r->next.drift[i].type && strcmp(r->next.drift[i].type, SK_DRIFT_SPEC) == 0)
			return true;
	}
	return false;
}

static json_t *
result_json(const sk_userspace *us, const sk_plan_result *r)
{
	json_t *o = json_object(), *acts = json_array(), *st;
	json_t *drift;
	char d[32];

	for (size_t i = 0; i < r->n_actions; i++)
		json_array_append_new(acts, action_json(&r->actions[i]));
	json_object_set_new(o, "name", json_string(us->meta.name));
	json_object_set_new(o, "userID", json_string(us->spec.user_id));
	json_object_set_new(o, "provider", json_string(us->spec.provider));
	json_object_set_new(o, "phase", json_string(sk_phase_name(us->status.phase)));
	json_object_set_new(o, "nextPhase", json_string(sk_phase_name(r->next.phase)));
	json_object_set_new(o, "changes", json_boolean(changes(r)));
	json_object_set_new(o, "actions", acts);
	st = sk_userspace_status_to_json(&r->next);
	drift = json_object_get(st, "drift");
	json_object_set_new(o, "drift", drift ? json_incref(drift) : json_array());
	json_decref(st);
	sk_duration_format(r->requeue_after_ms, d, sizeof(d));
	json_object_set_new(o, "requeueAfter", json_string(d));
	if (r->wait_message)
		json_object_set_new(o, "waiting", json_string(r->wait_message));
	return o;
}

static const char *
phase_or_dash(sk_phase p)
{
	const char *s = sk_phase_name(p);

	return s && *s ? s : "-";
}

/* A migration the plan starts or one under way: its steps, the current one marked. */
static void
print_migration(const sk_userspace *us, const sk_migration_status *m)
{
	static const struct {
		sk_migration_phase phase;
		const char *what;
	} steps[] = { { SK_MIG_PENDING, "wait until idle for spec.migration.whenIdleFor" },
		{ SK_MIG_CREATING, "create the target sandbox" },
		{ SK_MIG_COPYING, "copy spec.workspace.paths" },
		{ SK_MIG_VERIFYING, "verify (file count, bytes, SHA-256 per file)" },
		{ SK_MIG_SWITCHING, "switch the binding to the target" },
		{ SK_MIG_RETIRING, "pause the source; delete it after keepSourceFor" } };
	char keep[32];

	if (!sk_migration_active(m))
		return;
	sk_duration_format(us->spec.keep_source_ms, keep, sizeof(keep));
	printf("    migration (%s): %s/%s %s -> %s/%s, keep source %s (%s)\n",
	        m->trigger ? m->trigger : "-", m->source.provider, m->source.template_id,
	        m->source.sandbox_id ? m->source.sandbox_id : "-", m->target.provider,
	        m->target.template_id, keep,
	        us->spec.source_policy == SK_DELETE_RETAIN ? "then kept" : "then deleted");
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		printf("      %s %s\n", steps[i].phase == m->phase ? "->" : "  ", steps[i].what);
}

static void
print_result(const sk_userspace *us, const sk_plan_result *r)
{
	char d[32];

	printf("userspace/%s (userID %s, provider %s)%s%s\n", us->meta.name, us->spec.user_id,
	        us->spec.provider, changes(r) ? "" : ": no changes",
	        !changes(r) && spec_pending(r) ? " (the spec is not rolled out: see drift)" : "");
	for (size_t i = 0; i < r->n_actions; i++) {
		sk_buf line = SK_BUF_INIT(0);
		sk_action_describe(&r->actions[i], &line);
		printf("  %c %zu. %s\n", sk_action_is_mutating(&r->actions[i]) ? '~' : ' ', i + 1,
		        line.data ? line.data : "");
		sk_buf_dispose(&line);
	}
	printf("    phase: %s -> %s\n", phase_or_dash(us->status.phase),
	        phase_or_dash(r->next.phase));
	for (size_t i = 0; i < r->next.n_drift; i++) {
		const sk_drift *dr = &r->next.drift[i];
		printf("    drift: %s %s%s%s\n", dr->type, dr->sandbox_id ? dr->sandbox_id : "-",
		        dr->detail ? " " : "", dr->detail ? dr->detail : "");
	}
	print_migration(us, &r->next.migration);
	if (r->wait_message)
		printf("    waiting: %s\n", r->wait_message);
	sk_age_format(r->requeue_after_ms, d, sizeof(d)); /* 4m51s, not 4m51.728s */
	printf("    requeue after: %s\n", d);
}

/* ---- planning ---- */

static void
plan_one(plan_ctx *c, const sk_userspace *us)
{
	sk_sandbox_list mine = { 0 };
	sk_list_view view;
	sk_plan_options opts;
	sk_observed ob;
	sk_plan_result r;
	sk_error err;
	/* observed where the binding lives: spec.provider may name a migration's target */
	prov_state *ps = provider(c, sk_bound_provider(us));

	if (ps == NULL) {
		sk_cli_errorf("userspace/%s: spec.provider \"%s\" names no provider of %s",
		        us->meta.name, us->spec.provider,
		        c->a.config ? c->a.config : "the default config");
		fail(c, SK_EXIT_FAIL);
		return;
	}
	if (ps->exit_code != SK_EXIT_OK) {
		fail(c, ps->exit_code);
		return;
	}
	sk_plan_options_from_config(&opts, sk_provider_get_config(ps->p), c->cfg->resync_ms);
	user_view(ps, us->spec.user_id, &mine, &view);
	sk_error_clear(&err);
	sk_observe(ps->p, us, &view, &opts, 0, &ob, &err);
	memset(&r, 0, sizeof(r));
	sk_plan(us, &ob, sk_now_ms(), &opts, &r);
	c->n_total++;
	c->n_changing += changes(&r) ? 1 : 0;
	if (c->a.fmt == SK_OUTPUT_TABLE) {
		if (c->n_total > 1)
			printf("\n");
		print_result(us, &r);
	} else {
		json_array_append_new(c->items, result_json(us, &r));
	}
	sk_plan_result_dispose(&r);
	sk_observed_dispose(&ob);
	sk_sandbox_list_dispose(&mine);
}

/* Moves labels, annotations and spec of a copy of want into m (what apply writes). */
static void
take_desired(sk_userspace *m, const sk_userspace *want)
{
	sk_userspace *w = sk_userspace_dup(want);
	sk_userspace_spec spec = m->spec;
	sk_kvlist labels = m->meta.labels, annotations = m->meta.annotations;

	m->spec = w->spec;
	m->meta.labels = w->meta.labels;
	m->meta.annotations = w->meta.annotations;
	w->spec = spec;
	w->meta.labels = labels;
	w->meta.annotations = annotations;
	sk_userspace_free(w);
}

/* The object apply would store: the input merged onto the stored one (its
 * status, binding and metadata kept; generation bumped on a spec change), or
 * a new object as the store creates it. */
static sk_userspace *
merged(const sk_userspace *want, const sk_userspace *live)
{
	sk_userspace *m;

	if (live == NULL) {
		m = sk_userspace_dup(want);
		m->meta.generation = 1;
		m->meta.creation_ms = sk_now_ms();
		m->meta.finalizers = sk_calloc(1, sizeof(char *));
		m->meta.finalizers[0] = sk_strdup(SK_FINALIZER);
		m->meta.n_finalizers = 1;
		return m;
	}
	m = sk_userspace_dup(live);
	if (!sk_userspace_spec_equal(&live->spec, &want->spec))
		m->meta.generation++;
	take_desired(m, want);
	return m;
}

static int
get_stored(plan_ctx *c, const char *name, sk_userspace **out, bool missing_ok)
{
	sk_error err;
	int rc;

	sk_error_clear(&err);
	*out = NULL;
	rc = sk_store_get(c->store, name, out, &err);
	if (rc == 0 || (rc == SK_ENOTFOUND && missing_ok))
		return SK_EXIT_OK;
	if (rc == SK_ENOTFOUND)
		sk_cli_errorf("userspaces \"%s\" not found (NotFound)", name);
	else
		sk_cli_errorf("%s", err.message);
	return sk_cli_exit_code(rc);
}

static int
plan_files(plan_ctx *c)
{
	sk_cli_input in;
	int rc;

	memset(&in, 0, sizeof(in));
	if ((rc = sk_cli_input_load(&in, c->a.files.items, c->a.files.len)) != SK_EXIT_OK)
		goto done;
	for (size_t i = 0; i < in.len && rc == SK_EXIT_OK; i++) {
		sk_userspace *live = NULL, *m;
		if ((rc = get_stored(c, in.objs[i]->meta.name, &live, true)) != SK_EXIT_OK)
			break;
		m = merged(in.objs[i], live);
		plan_one(c, m);
		sk_userspace_free(m);
		sk_userspace_free(live);
	}
done:
	sk_cli_input_dispose(&in);
	return rc;
}

static int
plan_names(plan_ctx *c)
{
	int rc, worst = SK_EXIT_OK;

	for (size_t i = 0; i < c->a.nnames; i++) {
		sk_userspace *us = NULL;
		rc = get_stored(c, c->a.names[i], &us, false);
		if (rc == SK_EXIT_UNAVAILABLE)
			return rc;
		if (rc != SK_EXIT_OK) {
			worst = rc;
			continue;
		}
		plan_one(c, us);
		sk_userspace_free(us);
	}
	return worst;
}

static int
plan_all(plan_ctx *c)
{
	sk_userspace_list l = { NULL, 0, 0 };
	sk_error err;
	int rc;

	sk_error_clear(&err);
	if ((rc = sk_store_list(c->store, NULL, &l, &err)) != 0) {
		sk_cli_errorf("%s", err.message);
		return sk_cli_exit_code(rc);
	}
	for (size_t i = 0; i < l.len; i++)
		plan_one(c, l.items[i]);
	sk_userspace_list_dispose(&l);
	return SK_EXIT_OK;
}

static int
finish(plan_ctx *c, int rc)
{
	if (rc == SK_EXIT_OK && c->a.fmt != SK_OUTPUT_TABLE) {
		json_t *root = json_pack("{s:O}", "items", c->items);
		rc = sk_cli_print_value(root, c->a.fmt);
		json_decref(root);
	} else if (rc == SK_EXIT_OK) {
		fflush(stdout);
		if (c->n_total == 0 && c->worst == SK_EXIT_OK)
			fprintf(stderr, "No resources found.\n");
		else if (c->n_total > 0) /* the result, as terraform plan's: stdout */
			printf("Plan: %zu of %zu userspace(s) to change.\n", c->n_changing,
			        c->n_total);
	}
	if (rc == SK_EXIT_OK)
		rc = c->worst;
	if (c->a.exit_code) {
		if (rc == SK_EXIT_FAIL)
			return SK_EXIT_USAGE; /* errors are >= 2 with --exit-code, as in diff */
		if (rc == SK_EXIT_OK)
			return c->n_changing > 0 ? SK_EXIT_FAIL : SK_EXIT_OK;
	}
	return rc;
}

static int
run(plan_ctx *c)
{
	int rc;

	if ((rc = sk_cli_load_config(c->a.config, &c->cfg)) != SK_EXIT_OK)
		return c->a.exit_code ? SK_EXIT_USAGE : rc;
	c->provs = sk_calloc(c->cfg->n_providers + 1, sizeof(*c->provs));
	c->items = json_array();
	if ((rc = sk_cli_store_open(&c->store)) != SK_EXIT_OK)
		return finish(c, rc);
	if (c->a.files.len > 0)
		rc = plan_files(c);
	else if (c->a.nnames > 0)
		rc = plan_names(c);
	else
		rc = plan_all(c);
	return finish(c, rc);
}

static int
parse_args(plan_args *a, int argc, char **argv)
{
	static const struct option opts[] = { { "filename", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "config", required_argument, NULL, OPT_CONFIG },
		{ "exit-code", no_argument, NULL, OPT_EXIT_CODE }, SK_CLI_GLOBAL_OPTIONS, { 0 } };
	int ch, rc;

	while ((ch = sk_cli_getopt(argc, argv, ":f:o:h", opts)) != -1) {
		if (ch == 'f') {
			sk_cli_strv_push(&a->files, optarg);
		} else if (ch == 'o') {
			if (sk_cli_output_parse(optarg, &a->fmt) != 0 || a->fmt == SK_OUTPUT_WIDE)
				return sk_cli_usage_error(&help,
				        "-o: unknown output format \"%s\" (table, yaml, json)",
				        optarg);
		} else if (ch == OPT_CONFIG) {
			a->config = optarg;
		} else if (ch == OPT_EXIT_CODE) {
			a->exit_code = true;
		} else if ((rc = sk_cli_opt(&help, ch, argv)) != SK_CLI_CONTINUE) {
			return rc;
		}
	}
	/* "plan alice", "plan userspace alice" and "plan us/alice" alike;
	 * "plan userspace" alone: every object. */
	rc = sk_cli_object_args(&help, argv + optind, argc - optind, true, &a->targets);
	if (rc != SK_CLI_CONTINUE)
		return rc;
	a->names = a->targets.items;
	a->nnames = a->targets.len;
	if (a->nnames > 0 && a->files.len > 0)
		return sk_cli_usage_error(&help, "names and -f cannot be used together");
	for (size_t i = 0; i < a->nnames; i++) {
		if (!sk_valid_name(a->names[i]))
			return sk_cli_usage_error(
			        &help, "\"%s\" is not a UserSpace name", a->names[i]);
	}
	return SK_CLI_CONTINUE;
}

int
sk_cmd_plan(int argc, char **argv)
{
	plan_ctx c;
	int rc;

	memset(&c, 0, sizeof(c));
	c.a.fmt = SK_OUTPUT_TABLE;
	rc = parse_args(&c.a, argc, argv);
	if (rc == SK_CLI_CONTINUE)
		rc = run(&c);
	for (size_t i = 0; c.cfg && i < c.cfg->n_providers; i++) {
		sk_provider_free(c.provs[i].p);
		sk_sandbox_list_dispose(&c.provs[i].all);
	}
	free(c.provs);
	json_decref(c.items);
	sk_store_close(c.store);
	sk_config_free(c.cfg);
	sk_cli_strv_dispose(&c.a.files);
	sk_cli_strv_dispose(&c.a.targets);
	return rc;
}
