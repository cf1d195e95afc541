/*
 * spacectl drift: every UserSpace whose status reports drift, one row per
 * drift item, and (with --config or --orphans) the orphans: managed
 * sandboxes at the providers whose user has no UserSpace, read from the
 * providers themselves. Exit 1 when any (a pipeline gates on it), 0 when
 * none, 2 or more on an error (3: database or provider unavailable), like diff.
 */
#include <stdlib.h>
#include <string.h>

#include "api/names.h"
#include "reconcile/reconcile.h"
#include "sandbox/sandbox.h"
#include "spacectl.h"

static const sk_cli_help help = {
	"drift",
	"spacectl drift [-o table|yaml|json] [-l selector] [--config file | --orphans]",
	"Lists the drift the controller reports in status.drift: one row per item,\n"
	"with the UserSpace, its user, the drift type (DataPlaneUnreachable,\n"
	"Duplicate, StateMismatch, SpecMismatch, Missing, Orphan), the sandbox\n"
	"concerned, how long it has lasted and the detail.\n"
	"\n"
	"With --config (or --orphans) it also lists the orphans: the managed sandboxes\n"
	"at the providers whose user has no UserSpace (left by delete --force, for\n"
	"example), one Orphan row each with the provider and the sandbox ID. A label\n"
	"selector matches no orphan (an orphan has no labels), so -l skips them.\n"
	"\n"
	"Flags:\n"
	"  -o, --output FORMAT   table (default), yaml or json:\n"
	"                        {\"items\": [{\"name\", \"userID\", \"drift\": [...]}],\n"
	"                         \"orphans\": [{\"provider\", \"sandboxID\", \"userID\"}]}\n"
	"  -l, --selector SEL    only the UserSpaces matching this label selector\n"
	"  --config FILE         a ControllerConfig: list orphans at its providers\n"
	"  --orphans             list orphans at the providers sandboxes uses without\n"
	"                        --config (the context's controllerConfig, else the\n"
	"                        default provider)\n"
	"\n"
	"Exit codes: 0 no drift (\"No drift.\" on stderr); 1 drift found; 2 or more\n"
	"on an error (2 usage, 3 database or provider unavailable).\n"
	"\n"
	"Examples:\n"
	"  spacectl drift\n"
	"  spacectl drift --config manifests/config/demo.yaml\n"
	"  spacectl drift -l team=research -o json\n"
	"  spacectl drift >/dev/null || echo \"drift: look at spacectl drift\"\n",
};

#define DRIFT_ERROR 2

static bool
same(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

enum { OPT_CONFIG = SK_OPT_FIRST_CMD, OPT_ORPHANS };

/* A managed sandbox at a provider whose user has no UserSpace. */
typedef struct orphan_row {
	const char *provider; /* borrowed from the config */
	char *sandbox_id;
	char *user_id;
	int64_t started_ms;
} orphan_row;

typedef struct orphan_rows {
	orphan_row *items;
	size_t len;
} orphan_rows;

static void
orphan_rows_dispose(orphan_rows *o)
{
	for (size_t i = 0; i < o->len; i++) {
		free(o->items[i].sandbox_id);
		free(o->items[i].user_id);
	}
	free(o->items);
	o->items = NULL;
	o->len = 0;
}

static void
age_cell(int64_t now, int64_t since, char *buf, size_t len)
{
	snprintf(buf, len, "-");
	if (since)
		sk_age_format(now > since ? now - since : 0, buf, len);
}

static void
add_orphan_rows(sk_table *t, const orphan_rows *o, int64_t now)
{
	for (size_t i = 0; i < o->len; i++) {
		const orphan_row *r = &o->items[i];
		char age[32], detail[200];
		const char *row[6];
		age_cell(now, r->started_ms, age, sizeof(age));
		snprintf(detail, sizeof(detail), "provider %s: no UserSpace for this user",
		        r->provider);
		row[0] = "-";
		row[1] = r->user_id && *r->user_id ? r->user_id : "-";
		row[2] = "Orphan";
		row[3] = r->sandbox_id;
		row[4] = age;
		row[5] = detail;
		sk_table_add_row(t, row);
	}
}

static void
print_table(const sk_userspace_list *l, const orphan_rows *o)
{
	static const char *const hdr[] = { "NAME", "USERID", "TYPE", "SANDBOX", "AGE", "DETAIL" };
	sk_table *t = sk_table_new(6, hdr);
	sk_buf out = SK_BUF_INIT(0);
	int64_t now = sk_now_ms();

	for (size_t i = 0; i < l->len; i++) {
		const sk_userspace *us = l->items[i];
		for (size_t k = 0; k < us->status.n_drift; k++) {
			const sk_drift *d = &us->status.drift[k];
			char age[32];
			const char *row[6];
			age_cell(now, d->since_ms, age, sizeof(age));
			row[0] = us->meta.name;
			row[1] = us->spec.user_id;
			row[2] = d->type ? d->type : "-";
			row[3] = d->sandbox_id ? d->sandbox_id : "-";
			row[4] = age;
			row[5] = d->detail && *d->detail ? d->detail : "-";
			sk_table_add_row(t, row);
		}
	}
	add_orphan_rows(t, o, now);
	sk_table_render(t, &out);
	fwrite(out.data ? out.data : "", 1, out.len, stdout);
	sk_buf_dispose(&out);
	sk_table_free(t);
}

static json_t *
orphans_json(const orphan_rows *o)
{
	json_t *a = json_array();

	for (size_t i = 0; i < o->len; i++)
		json_array_append_new(a,
		        json_pack("{s:s, s:s, s:s}", "provider", o->items[i].provider, "sandboxID",
		                o->items[i].sandbox_id, "userID",
		                o->items[i].user_id ? o->items[i].user_id : ""));
	return a;
}

static int
print_json(const sk_userspace_list *l, const orphan_rows *o, sk_output fmt)
{
	json_t *items = json_array(), *root;
	int rc;

	for (size_t i = 0; i < l->len; i++) {
		const sk_userspace *us = l->items[i];
		json_t *st = sk_userspace_status_to_json(&us->status);
		json_t *drift = json_object_get(st, "drift");
		json_array_append_new(items,
		        json_pack("{s:s, s:s, s:o}", "name", us->meta.name, "userID",
		                us->spec.user_id, "drift",
		                drift ? json_incref(drift) : json_array()));
		json_decref(st);
	}
	root = json_pack("{s:o, s:o}", "items", items, "orphans", orphans_json(o));
	rc = sk_cli_print_value(root, fmt);
	json_decref(root);
	return rc;
}

/* Keeps the objects with drift (moves the others out and frees them). */
static void
keep_drifted(sk_userspace_list *l)
{
	size_t n = 0;

	for (size_t i = 0; i < l->len; i++) {
		if (l->items[i]->status.n_drift > 0)
			l->items[n++] = l->items[i];
		else
			sk_userspace_free(l->items[i]);
	}
	l->len = n;
}

/* Every UserSpace counts, those being deleted too (they still own their sandbox). */
static bool
has_user(const char *user_id, void *arg)
{
	const sk_userspace_list *l = arg;

	for (size_t i = 0; i < l->len; i++)
		if (same(l->items[i]->spec.user_id, user_id))
			return true;
	return false;
}

static void
add_orphans(
        orphan_rows *o, const char *provider, const sk_sandbox_list *all, const sk_orphan_list *ol)
{
	o->items = sk_realloc(o->items, (o->len + ol->len) * sizeof(*o->items));
	for (size_t i = 0; i < ol->len; i++) {
		orphan_row *r = &o->items[o->len++];
		r->provider = provider;
		r->sandbox_id = sk_strdup(ol->items[i].sandbox_id);
		r->user_id = ol->items[i].user_id ? sk_strdup(ol->items[i].user_id) : NULL;
		r->started_ms = 0;
		for (size_t k = 0; k < all->len; k++)
			if (same(all->items[k].id, r->sandbox_id))
				r->started_ms = all->items[k].started_ms;
	}
}

/* The orphans at one provider; prints the error and returns an exit code. */
static int
provider_orphans(const sk_provider_config *pc, const sk_userspace_list *l, orphan_rows *o)
{
	sk_plan_options opts = { 0 };
	sk_kvlist match = { 0 };
	sk_sandbox_list all = { 0 };
	sk_orphan_list ol = { 0 };
	sk_provider *p = NULL;
	sk_error err;
	int rc;

	sk_error_clear(&err);
	if ((rc = sk_provider_new(pc, &p, &err)) != SK_OK) {
		sk_cli_errorf("%s", err.message); /* it names the provider */
		return rc == SK_ETRANSIENT ? SK_EXIT_UNAVAILABLE : DRIFT_ERROR;
	}
	sk_kvlist_set(&match, SK_META_MANAGED_BY, SK_MANAGED_BY_VALUE);
	rc = sk_sandbox_list_all(p, &match, &all, &err);
	sk_provider_free(p);
	sk_kvlist_dispose(&match);
	if (rc != SK_OK) {
		sk_cli_errorf("provider %s: %s", pc->name, err.message);
		return rc == SK_ETRANSIENT || rc == SK_EUNAVAILABLE || rc == SK_ETIMEOUT
		        ? SK_EXIT_UNAVAILABLE
		        : DRIFT_ERROR;
	}
	sk_plan_orphans(&all, has_user, (void *)l, NULL, sk_now_ms(), &opts, &ol);
	add_orphans(o, pc->name, &all, &ol);
	sk_orphan_list_dispose(&ol);
	sk_sandbox_list_dispose(&all);
	return SK_EXIT_OK;
}

static int
find_orphans(const sk_controller_config *cfg, const sk_userspace_list *l, orphan_rows *o)
{
	int worst = SK_EXIT_OK;

	for (size_t i = 0; cfg && i < cfg->n_providers; i++) {
		int rc = provider_orphans(&cfg->providers[i], l, o);
		if (rc > worst)
			worst = rc;
	}
	return worst;
}

static int
list_objects(const char *selector_text, sk_userspace_list *list)
{
	sk_selector *sel = NULL;
	sk_store *st = NULL;
	sk_error err;
	int rc;

	sk_error_clear(&err);
	if (selector_text && sk_selector_parse(selector_text, &sel, &err) != 0)
		return sk_cli_usage_error(&help, "-l: %s", err.message);
	if ((rc = sk_cli_store_open(&st)) != SK_EXIT_OK) {
		sk_selector_free(sel);
		return rc == SK_EXIT_FAIL ? DRIFT_ERROR : rc;
	}
	rc = sk_store_list(st, sel, list, &err);
	sk_selector_free(sel);
	sk_store_close(st);
	if (rc != 0) {
		sk_cli_errorf("%s", err.message);
		return rc == SK_EUNAVAILABLE || rc == SK_ETIMEOUT ? SK_EXIT_UNAVAILABLE
		                                                  : DRIFT_ERROR;
	}
	return SK_EXIT_OK;
}

static int
print_drift(const sk_userspace_list *list, const orphan_rows *o, sk_output fmt)
{
	size_t n = list->len + o->len;

	if (fmt != SK_OUTPUT_TABLE && fmt != SK_OUTPUT_WIDE)
		return print_json(list, o, fmt) != SK_EXIT_OK ? DRIFT_ERROR
		        : n > 0                               ? SK_EXIT_FAIL
		                                              : SK_EXIT_OK;
	if (n == 0) {
		fflush(stdout);
		fprintf(stderr, "No drift.\n");
		return SK_EXIT_OK;
	}
	print_table(list, o);
	return SK_EXIT_FAIL;
}

/* cfg NULL: no orphan check. */
static int
run(const char *selector_text, const sk_controller_config *cfg, sk_output fmt)
{
	sk_userspace_list list = { NULL, 0, 0 };
	orphan_rows o = { 0 };
	int rc;

	if ((rc = list_objects(selector_text, &list)) != SK_EXIT_OK)
		return rc;
	if (cfg && !selector_text)
		rc = find_orphans(cfg, &list, &o);
	keep_drifted(&list);
	if (rc == SK_EXIT_OK)
		rc = print_drift(&list, &o, fmt);
	orphan_rows_dispose(&o);
	sk_userspace_list_dispose(&list);
	return rc;
}

int
sk_cmd_drift(int argc, char **argv)
{
	static const struct option opts[] = { { "output", required_argument, NULL, 'o' },
		{ "selector", required_argument, NULL, 'l' },
		{ "config", required_argument, NULL, OPT_CONFIG },
		{ "orphans", no_argument, NULL, OPT_ORPHANS }, SK_CLI_GLOBAL_OPTIONS, { 0 } };
	const char *selector_text = NULL, *config = NULL;
	sk_controller_config *cfg = NULL;
	sk_output fmt = SK_OUTPUT_TABLE;
	bool orphans = false;
	int ch, rc;

	while ((ch = sk_cli_getopt(argc, argv, ":o:l:h", opts)) != -1) {
		if (ch == 'o') {
			if (sk_cli_output_parse(optarg, &fmt) != 0 || fmt == SK_OUTPUT_WIDE)
				return sk_cli_usage_error(&help,
				        "-o: unknown output format \"%s\" (table, yaml, json)",
				        optarg);
		} else if (ch == 'l') {
			selector_text = optarg;
		} else if (ch == OPT_CONFIG) {
			config = optarg;
			orphans = true;
		} else if (ch == OPT_ORPHANS) {
			orphans = true;
		} else if ((rc = sk_cli_opt(&help, ch, argv)) != SK_CLI_CONTINUE) {
			return rc;
		}
	}
	if (optind < argc)
		return sk_cli_usage_error(&help, "unexpected argument \"%s\"", argv[optind]);
	if (orphans && (rc = sk_cli_load_config(config, &cfg)) != SK_EXIT_OK)
		return rc == SK_EXIT_FAIL ? DRIFT_ERROR : rc;
	rc = run(selector_text, cfg, fmt);
	sk_config_free(cfg);
	return rc;
}
