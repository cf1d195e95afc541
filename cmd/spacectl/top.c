/*
 * spacectl top userspaces: what each space (or each value of a label) used
 * and cost, from status.usage: running and paused hours up to now (the
 * time since lastUpdateTime counted at the current phase, as the planner
 * will count it: sk_usage_advance), wakes, creates, and the cost at the
 * provider entry's price (providers[].price of the ControllerConfig),
 * sorted by cost, then running hours, most first.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/plan.h"
#include "spacectl.h"

static const sk_cli_help help = {
	"top",
	"spacectl top [userspaces] [-l selector] [--by LABEL] [-o table|json] [--config file]",
	"Shows what each UserSpace used and cost, from status.usage: the hours its\n"
	"sandbox ran and slept since usage was first counted (up to now: the time\n"
	"since the controller last wrote it counts at the space's current phase),\n"
	"its wakes and creates, and the cost at its provider's price\n"
	"(providers[].price.runningPerHour and pausedPerHour of the ControllerConfig;\n"
	"\"-\" when the provider has none, and a note on stderr says which provider\n"
	"lacks a price and where to set it). Sorted by cost, then running hours, most\n"
	"first. --by LABEL adds the spaces up per value of that label (\"<none>\" for\n"
	"spaces without it): what a team costs. The resource may be left out:\n"
	"userspaces is the only one top measures (kubectl top needs node or pod).\n"
	"\n"
	"Flags:\n"
	"  -l, --selector SEL    only the UserSpaces matching this label selector\n"
	"  --by LABEL            one row per value of this label\n"
	"  -o, --output FORMAT   table (default) or json: {\"items\": [{\"name\",\n"
	"                        \"runningHours\", \"pausedHours\", \"wakes\", \"creates\",\n"
	"                        \"cost\"}]} (cost null without a price)\n"
	"  --config FILE         the ControllerConfig with the prices (default: the\n"
	"                        context's controllerConfig)\n"
	"\n"
	"Exit codes: 0 ok; 1 failure; 2 usage; 3 database unavailable.\n"
	"\n"
	"Examples:\n"
	"  spacectl top\n"
	"  spacectl top userspaces --config manifests/config/demo.yaml\n"
	"  spacectl top userspaces --by team\n"
	"  spacectl top userspaces -l team=research -o json\n",
};

enum { OPT_BY = SK_OPT_FIRST_CMD, OPT_CONFIG };

typedef struct top_row {
	char *key; /* the space's name, or the label's value */
	double running_h, paused_h;
	int64_t wakes, creates;
	double cost;
	bool priced; /* some of it has a price */
} top_row;

typedef struct top_rows {
	top_row *items;
	size_t len;
	const char *unpriced; /* a provider of the spaces without a price (borrowed) */
} top_rows;

static top_row *
row_for(top_rows *t, const char *key)
{
	for (size_t i = 0; i < t->len; i++) {
		if (strcmp(t->items[i].key, key) == 0)
			return &t->items[i];
	}
	t->items = sk_realloc(t->items, (t->len + 1) * sizeof(*t->items));
	memset(&t->items[t->len], 0, sizeof(t->items[0]));
	t->items[t->len].key = sk_strdup(key);
	return &t->items[t->len++];
}

static void
add_space(top_rows *t, const sk_userspace *us, const char *by, const sk_controller_config *cfg,
        int64_t now)
{
	const sk_provider_config *pc = cfg ? sk_config_provider(cfg, sk_bound_provider(us)) : NULL;
	const char *key = us->meta.name;
	sk_usage u = us->status.usage;
	top_row *r;

	if (by != NULL) {
		key = sk_kvlist_get(&us->meta.labels, by);
		key = key ? key : "<none>";
	}
	if (u.since_ms != 0)
		sk_usage_advance(&u, us->status.phase, now);
	r = row_for(t, key);
	r->running_h += (double)u.running_s / 3600.0;
	r->paused_h += (double)u.paused_s / 3600.0;
	r->wakes += u.wakes;
	r->creates += u.creates;
	if (pc != NULL && pc->has_price) {
		r->priced = true;
		r->cost += (double)u.running_s / 3600.0 * pc->price_running_per_hour +
		        (double)u.paused_s / 3600.0 * pc->price_paused_per_hour;
	} else if (t->unpriced == NULL) {
		t->unpriced = sk_bound_provider(us);
	}
}

static bool
config_has_prices(const sk_controller_config *cfg)
{
	for (size_t i = 0; cfg != NULL && i < cfg->n_providers; i++) {
		if (cfg->providers[i].has_price)
			return true;
	}
	return false;
}

/* Why COST is "-" (after the table, on stderr, as kubectl's warnings): no
 * prices at all (no ControllerConfig with prices was found), or none for a
 * provider the spaces use. */
static void
explain_unpriced(const top_rows *t, const sk_controller_config *cfg)
{
	if (t->unpriced == NULL)
		return;
	fflush(stdout);
	if (!config_has_prices(cfg))
		fprintf(stderr,
		        "COST \"-\": no prices: pass --config FILE (or set the context's "
		        "controllerConfig) with providers[].price.runningPerHour and "
		        "pausedPerHour\n");
	else
		fprintf(stderr,
		        "COST \"-\": provider \"%s\" has no price in the ControllerConfig "
		        "(providers[].price.runningPerHour and pausedPerHour)\n",
		        t->unpriced);
}

static int
row_cmp(const void *a, const void *b)
{
	const top_row *x = a, *y = b;

	if (x->cost != y->cost)
		return x->cost < y->cost ? 1 : -1;
	if (x->running_h != y->running_h)
		return x->running_h < y->running_h ? 1 : -1;
	return strcmp(x->key, y->key);
}

static int
print_rows(const top_rows *t, const char *by, sk_output fmt)
{
	char head[64];
	json_t *items;
	int rc;

	snprintf(head, sizeof(head), "%s", by ? by : "name");
	for (char *p = head; *p; p++)
		*p = (char)toupper((unsigned char)*p);
	if (fmt == SK_OUTPUT_TABLE) {
		printf("%-24s %13s %12s %7s %7s %10s\n", head, "RUNNING(h)", "PAUSED(h)", "WAKES",
		        "CREATES", "COST");
		for (size_t i = 0; i < t->len; i++) {
			const top_row *r = &t->items[i];
			char cost[32] = "-";
			if (r->priced)
				snprintf(cost, sizeof(cost), "%.2f", r->cost);
			printf("%-24s %13.2f %12.2f %7lld %7lld %10s\n", r->key, r->running_h,
			        r->paused_h, (long long)r->wakes, (long long)r->creates, cost);
		}
		return SK_EXIT_OK;
	}
	items = json_array();
	for (size_t i = 0; i < t->len; i++) {
		const top_row *r = &t->items[i];
		json_array_append_new(items,
		        json_pack("{s:s, s:f, s:f, s:I, s:I, s:o}", "name", r->key, "runningHours",
		                r->running_h, "pausedHours", r->paused_h, "wakes",
		                (json_int_t)r->wakes, "creates", (json_int_t)r->creates, "cost",
		                r->priced ? json_real(r->cost) : json_null()));
	}
	items = json_pack("{s:o}", "items", items);
	rc = sk_cli_print_value(items, fmt);
	json_decref(items);
	return rc;
}

static int
run(const char *selector_text, const char *by, const sk_controller_config *cfg, sk_output fmt)
{
	sk_userspace_list list = { NULL, 0, 0 };
	top_rows t = { 0 };
	int64_t now = sk_now_ms();
	sk_store *st = NULL;
	int rc;

	if ((rc = sk_cli_store_open(&st)) != SK_EXIT_OK)
		return rc;
	rc = sk_cli_list_selected(st, &help, selector_text, &list);
	sk_store_close(st);
	if (rc != SK_EXIT_OK)
		return rc;
	for (size_t i = 0; i < list.len; i++)
		add_space(&t, list.items[i], by, cfg, now);
	qsort(t.items, t.len, sizeof(*t.items), row_cmp);
	rc = print_rows(&t, by, fmt);
	if (rc == SK_EXIT_OK && fmt == SK_OUTPUT_TABLE)
		explain_unpriced(&t, cfg);
	for (size_t i = 0; i < t.len; i++)
		free(t.items[i].key);
	free(t.items);
	sk_userspace_list_dispose(&list);
	return rc;
}

/* The resource word, optional: top knows one. */
static bool
is_userspaces(const char *s)
{
	return strcmp(s, "userspaces") == 0 || strcmp(s, "userspace") == 0 || strcmp(s, "us") == 0;
}

int
sk_cmd_top(int argc, char **argv)
{
	static const struct option opts[] = { { "output", required_argument, NULL, 'o' },
		{ "selector", required_argument, NULL, 'l' },
		{ "by", required_argument, NULL, OPT_BY },
		{ "config", required_argument, NULL, OPT_CONFIG }, SK_CLI_GLOBAL_OPTIONS, { 0 } };
	const char *selector_text = NULL, *by = NULL, *config = NULL;
	sk_controller_config *cfg = NULL;
	sk_output fmt = SK_OUTPUT_TABLE;
	int ch, rc;

	while ((ch = sk_cli_getopt(argc, argv, ":o:l:h", opts)) != -1) {
		if (ch == 'o') {
			if (sk_cli_output_parse(optarg, &fmt) != 0 ||
			        (fmt != SK_OUTPUT_TABLE && fmt != SK_OUTPUT_JSON))
				return sk_cli_usage_error(&help,
				        "-o: unknown output format \"%s\" (table, json)", optarg);
		} else if (ch == 'l') {
			selector_text = optarg;
		} else if (ch == OPT_BY) {
			by = optarg;
		} else if (ch == OPT_CONFIG) {
			config = optarg;
		} else if ((rc = sk_cli_opt(&help, ch, argv)) != SK_CLI_CONTINUE) {
			return rc;
		}
	}
	if (optind < argc && !is_userspaces(argv[optind]))
		return sk_cli_usage_error(&help,
		        "unknown resource \"%s\": top measures userspaces (spacectl top, or "
		        "spacectl top userspaces)",
		        argv[optind]);
	if (optind + 1 < argc)
		return sk_cli_usage_error(&help, "unexpected argument \"%s\"", argv[optind + 1]);
	if ((rc = sk_cli_load_config(config, &cfg)) != SK_EXIT_OK)
		return rc;
	rc = run(selector_text, by, cfg, fmt);
	sk_config_free(cfg);
	return rc;
}
