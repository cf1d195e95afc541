/*
 * spacectl sandboxes: the sandboxes that really exist at the providers of a
 * ControllerConfig (managed ones by default), as a table, YAML or JSON.
 * Talks to the providers only, never to MongoDB.
 */
#include <stdlib.h>
#include <string.h>

#include "api/names.h"
#include "sandbox/sandbox.h"
#include "spacectl.h"

static const sk_cli_help help = {
	"sandboxes",
	"spacectl sandboxes [--config file] [--provider name] [--user id] [--all]\n"
	"                   [-o table|wide|yaml|json]",
	"Lists the sandboxes that exist at the sandbox providers (running and paused,\n"
	"every page), read from the providers themselves, not from MongoDB. By default\n"
	"only the sandboxes spacekeeper manages (metadata managed_by=spacekeeper).\n"
	"\n"
	"Flags:\n"
	"  --config FILE         a ControllerConfig (default: the context's\n"
	"                        controllerConfig, else one e2b provider \"default\"\n"
	"                        at http://127.0.0.1:3000 for API and data plane, key\n"
	"                        from $E2B_API_KEY)\n"
	"  --provider NAME       only this provider of the config (default: all)\n"
	"  --user ID             only the sandboxes of this user (metadata user_id)\n"
	"  --all                 include sandboxes spacekeeper does not manage\n"
	"  -o, --output FORMAT   table (default), wide (adds PROVIDER, CPU, MEMORY), yaml, json\n"
	"\n"
	"Exit codes: 0 ok; 1 failure; 2 usage; 3 a provider is unavailable.\n"
	"\n"
	"Examples:\n"
	"  spacectl sandboxes\n"
	"  spacectl sandboxes --config manifests/config/demo.yaml --user alice -o json\n",
};

enum { OPT_CONFIG = SK_OPT_FIRST_CMD, OPT_PROVIDER, OPT_USER, OPT_ALL };

typedef struct row {
	const char *provider;
	sk_sandbox sb;
} row;

typedef struct rows {
	row *items;
	size_t len;
} rows;

static int
cmp_row(const void *a, const void *b)
{
	const row *x = a, *y = b;
	const char *ux = sk_kvlist_get(&x->sb.metadata, SK_META_USER_ID);
	const char *uy = sk_kvlist_get(&y->sb.metadata, SK_META_USER_ID);
	int c = strcmp(ux ? ux : "", uy ? uy : "");

	if (c == 0)
		c = strcmp(x->provider, y->provider);
	return c ? c : strcmp(x->sb.id, y->sb.id);
}

static void
fmt_ends(const sk_sandbox *sb, int64_t now, char *buf, size_t len)
{
	char age[32];

	if (sb->state != SK_SANDBOX_RUNNING || sb->end_ms == 0) {
		snprintf(buf, len, "-");
		return;
	}
	sk_age_format(sb->end_ms > now ? sb->end_ms - now : now - sb->end_ms, age, sizeof(age));
	snprintf(buf, len, sb->end_ms > now ? "in %s" : "%s ago", age);
}

static const char *
meta_or_dash(const sk_sandbox *sb, const char *key)
{
	const char *v = sk_kvlist_get(&sb->metadata, key);

	return v && *v ? v : "-";
}

static void
print_table(const rows *r, bool wide)
{
	static const char *const hdr[] = { "ID", "USER", "USERSPACE", "STATE", "TEMPLATE",
		"STARTED", "ENDS", "PROVIDER", "CPU", "MEMORY" };
	sk_table *t = sk_table_new(wide ? 10 : 7, hdr);
	sk_buf out = SK_BUF_INIT(0);
	int64_t now = sk_now_ms();

	for (size_t i = 0; i < r->len; i++) {
		const sk_sandbox *sb = &r->items[i].sb;
		char started[32] = "-", ends[48], cpu[16], mem[24];
		const char *cells[10];
		if (sb->started_ms)
			sk_age_format(now > sb->started_ms ? now - sb->started_ms : 0, started,
			        sizeof(started));
		fmt_ends(sb, now, ends, sizeof(ends));
		snprintf(cpu, sizeof(cpu), "%d", sb->cpu_count);
		snprintf(mem, sizeof(mem), "%dMi", sb->memory_mb);
		cells[0] = sb->id;
		cells[1] = meta_or_dash(sb, SK_META_USER_ID);
		cells[2] = meta_or_dash(sb, SK_META_USERSPACE);
		cells[3] = sk_sandbox_state_name(sb->state);
		cells[4] = sb->template_id ? sb->template_id : "-";
		cells[5] = started;
		cells[6] = ends;
		cells[7] = r->items[i].provider;
		cells[8] = cpu;
		cells[9] = mem;
		sk_table_add_row(t, cells);
	}
	sk_table_render(t, &out);
	fwrite(out.data ? out.data : "", 1, out.len, stdout);
	sk_buf_dispose(&out);
	sk_table_free(t);
}

static json_t *
row_json(const row *r)
{
	const sk_sandbox *sb = &r->sb;
	json_t *o = json_object(), *meta = json_object();
	char ts[40];

	json_object_set_new(o, "provider", json_string(r->provider));
	json_object_set_new(o, "sandboxID", json_string(sb->id));
	json_object_set_new(
	        o, "userID", json_string(sk_kvlist_get(&sb->metadata, SK_META_USER_ID)));
	json_object_set_new(
	        o, "userspace", json_string(sk_kvlist_get(&sb->metadata, SK_META_USERSPACE)));
	json_object_set_new(o, "state", json_string(sk_sandbox_state_name(sb->state)));
	json_object_set_new(o, "template", json_string(sb->template_id));
	if (sb->started_ms) {
		sk_time_format(sb->started_ms, ts, sizeof(ts));
		json_object_set_new(o, "startedAt", json_string(ts));
	}
	if (sb->end_ms) {
		sk_time_format(sb->end_ms, ts, sizeof(ts));
		json_object_set_new(o, "endAt", json_string(ts));
	}
	json_object_set_new(o, "cpuCount", json_integer(sb->cpu_count));
	json_object_set_new(o, "memoryMB", json_integer(sb->memory_mb));
	for (size_t i = 0; i < sb->metadata.len; i++)
		json_object_set_new(
		        meta, sb->metadata.items[i].key, json_string(sb->metadata.items[i].value));
	json_object_set_new(o, "metadata", meta);
	return o;
}

static int
print_rows(const rows *r, sk_output fmt)
{
	json_t *list, *items;
	int rc;

	if (fmt == SK_OUTPUT_TABLE || fmt == SK_OUTPUT_WIDE) {
		if (r->len == 0) {
			fprintf(stderr, "No sandboxes found.\n");
			return SK_EXIT_OK;
		}
		print_table(r, fmt == SK_OUTPUT_WIDE);
		return SK_EXIT_OK;
	}
	list = json_object();
	items = json_array();
	for (size_t i = 0; i < r->len; i++)
		json_array_append_new(items, row_json(&r->items[i]));
	json_object_set_new(list, "kind", json_string("SandboxList"));
	json_object_set_new(list, "items", items);
	rc = sk_cli_print_value(list, fmt);
	json_decref(list);
	return rc;
}

/* Lists one provider into r; prints the error and returns an exit code. */
static int
list_provider(const sk_provider_config *pc, const sk_kvlist *match, rows *r)
{
	sk_provider *p = NULL;
	sk_sandbox_list l = { 0 };
	sk_error err;
	char warning[1200];
	int rc;

	sk_error_clear(&err);
	if (sk_provider_key_file_warning(pc, warning, sizeof(warning)))
		sk_cli_warnf("%s", warning); /* as ssh does; the key is still used */
	if ((rc = sk_provider_new(pc, &p, &err)) != SK_OK) {
		sk_cli_errorf("%s", err.message);
		return sk_cli_exit_code(rc);
	}
	rc = sk_sandbox_list_all(p, match, &l, &err);
	sk_provider_free(p);
	if (rc != SK_OK) {
		sk_cli_errorf("provider %s: %s", pc->name, err.message);
		return rc == SK_ETRANSIENT ? SK_EXIT_UNAVAILABLE : sk_cli_exit_code(rc);
	}
	r->items = sk_realloc(r->items, (r->len + l.len) * sizeof(*r->items));
	for (size_t i = 0; i < l.len; i++) {
		r->items[r->len].provider = pc->name;
		r->items[r->len++].sb = l.items[i];
	}
	free(l.items);
	return SK_EXIT_OK;
}

static int
run(const char *config, const char *provider, const char *user, bool all, sk_output fmt)
{
	sk_controller_config *cfg = NULL;
	sk_kvlist match = { 0 };
	rows r = { 0 };
	int rc, worst = SK_EXIT_OK;

	if ((rc = sk_cli_load_config(config, &cfg)) != SK_EXIT_OK)
		return rc;
	if (provider && sk_config_provider(cfg, provider) == NULL) {
		sk_cli_errorf("no provider \"%s\" in %s", provider,
		        config ? config : "the default config");
		sk_config_free(cfg);
		return SK_EXIT_FAIL;
	}
	if (!all)
		sk_kvlist_set(&match, SK_META_MANAGED_BY, SK_MANAGED_BY_VALUE);
	if (user)
		sk_kvlist_set(&match, SK_META_USER_ID, user);
	for (size_t i = 0; i < cfg->n_providers; i++) {
		if (provider && strcmp(provider, cfg->providers[i].name) != 0)
			continue;
		rc = list_provider(&cfg->providers[i], &match, &r);
		if (rc > worst)
			worst = rc;
	}
	if (r.len > 1)
		qsort(r.items, r.len, sizeof(*r.items), cmp_row);
	if (worst == SK_EXIT_OK)
		worst = print_rows(&r, fmt);
	for (size_t i = 0; i < r.len; i++)
		sk_sandbox_dispose(&r.items[i].sb);
	free(r.items);
	sk_kvlist_dispose(&match);
	sk_config_free(cfg);
	return worst;
}

int
sk_cmd_sandboxes(int argc, char **argv)
{
	static const struct option opts[] = { { "output", required_argument, NULL, 'o' },
		{ "config", required_argument, NULL, OPT_CONFIG },
		{ "provider", required_argument, NULL, OPT_PROVIDER },
		{ "user", required_argument, NULL, OPT_USER },
		{ "all", no_argument, NULL, OPT_ALL }, SK_CLI_GLOBAL_OPTIONS, { 0 } };
	const char *config = NULL, *provider = NULL, *user = NULL;
	sk_output fmt = SK_OUTPUT_TABLE;
	bool all = false;
	int ch, rc;

	while ((ch = sk_cli_getopt(argc, argv, ":o:h", opts)) != -1) {
		if (ch == 'o') {
			if (sk_cli_output_parse(optarg, &fmt) != 0)
				return sk_cli_usage_error(&help,
				        "-o: unknown output format \"%s\" (table, wide, yaml, "
				        "json)",
				        optarg);
		} else if (ch == OPT_CONFIG) {
			config = optarg;
		} else if (ch == OPT_PROVIDER) {
			provider = optarg;
		} else if (ch == OPT_USER) {
			user = optarg;
			if (!sk_valid_user_id(user))
				return sk_cli_usage_error(&help,
				        "--user: \"%s\" is not a user ID ([A-Za-z0-9._-]{1,128})",
				        user);
		} else if (ch == OPT_ALL) {
			all = true;
		} else if ((rc = sk_cli_opt(&help, ch, argv)) != SK_CLI_CONTINUE) {
			return rc;
		}
	}
	if (optind < argc)
		return sk_cli_usage_error(&help, "unexpected argument \"%s\"", argv[optind]);
	return run(config, provider, user, all, fmt);
}
