/*
 * spacectl get all: every kind spacectl has (userspaces, then spacequotas),
 * as kubectl get all prints them: one table per kind with NAME as KIND/NAME,
 * a blank line between the tables, a kind without objects left out.
 */
#include <stdlib.h>
#include <string.h>

#include "spacectl.h"
#include "store/quota.h"

static const sk_cli_help help = {
	"get all",
	"spacectl get all [-l selector] [-o table|wide|name] [--no-headers]",
	"Lists every kind spacectl has: the UserSpaces, then the SpaceQuotas, each\n"
	"in its own table with NAME written KIND/NAME (userspace/alice,\n"
	"spacequota/team-a), as kubectl get all does. A kind without objects is\n"
	"left out; none at all prints \"No resources found.\" on stderr (exit 0).\n"
	"\n"
	"Flags:\n"
	"  -l, --selector SEL    only the objects whose labels match, of every kind\n"
	"  -o, --output FORMAT   table (default), wide or name (yaml and json: get\n"
	"                        each kind, spacectl get userspaces -o yaml)\n"
	"      --no-headers      tables without the header line\n"
	"\n"
	"Examples:\n"
	"  spacectl get all\n"
	"  spacectl get all -l team=research -o name\n",
};

enum { OPT_NO_HEADERS = SK_OPT_FIRST_CMD };

typedef struct all_opts {
	sk_output fmt;
	bool names_only, no_headers;
	const char *selector_text;
} all_opts;

static int
parse_output(all_opts *o, const char *arg)
{
	if (strcmp(arg, "name") == 0) {
		o->names_only = true;
		return SK_CLI_CONTINUE;
	}
	if (sk_cli_output_parse(arg, &o->fmt) != 0 ||
	        (o->fmt != SK_OUTPUT_TABLE && o->fmt != SK_OUTPUT_WIDE))
		return sk_cli_usage_error(&help,
		        "-o %s: get all prints table, wide or name (for yaml or json, get each "
		        "kind: spacectl get userspaces -o %s)",
		        arg, arg);
	return SK_CLI_CONTINUE;
}

static int
parse_args(all_opts *o, int argc, char **argv)
{
	static const struct option opts[] = { { "output", required_argument, NULL, 'o' },
		{ "selector", required_argument, NULL, 'l' },
		{ "no-headers", no_argument, NULL, OPT_NO_HEADERS }, SK_CLI_GLOBAL_OPTIONS, { 0 } };
	int ch, rc = SK_CLI_CONTINUE;

	while (rc == SK_CLI_CONTINUE && (ch = sk_cli_getopt(argc, argv, ":o:l:h", opts)) != -1) {
		if (ch == 'o')
			rc = parse_output(o, optarg);
		else if (ch == 'l')
			o->selector_text = optarg;
		else if (ch == OPT_NO_HEADERS)
			o->no_headers = true;
		else
			rc = sk_cli_opt(&help, ch, argv);
	}
	if (rc == SK_CLI_CONTINUE && optind < argc && strcmp(argv[optind], "all") == 0)
		optind++;
	if (rc == SK_CLI_CONTINUE && optind < argc)
		rc = sk_cli_usage_error(&help,
		        "unexpected argument \"%s\" (get all takes no names; get "
		        "userspace/NAME for one)",
		        argv[optind]);
	return rc;
}

/* The quotas whose labels sel matches (all when sel is NULL), moved out of all. */
static size_t
select_quotas(sk_spacequota_list *all, const sk_selector *sel, sk_spacequota **out)
{
	size_t n = 0;

	for (size_t i = 0; i < all->len; i++) {
		if (sel == NULL || sk_selector_matches(sel, &all->items[i]->meta.labels))
			out[n++] = all->items[i];
	}
	return n;
}

static void
print_all(const all_opts *o, sk_userspace_list *spaces, sk_spacequota **quotas, size_t nq)
{
	sk_cli_table_opts t = { o->fmt == SK_OUTPUT_WIDE, false, o->no_headers, false, NULL, true,
		true };

	if (o->names_only) {
		for (size_t i = 0; i < spaces->len; i++)
			printf("userspace/%s\n", spaces->items[i]->meta.name);
		for (size_t i = 0; i < nq; i++)
			printf("spacequota/%s\n", quotas[i]->meta.name);
		return;
	}
	if (spaces->len > 0)
		sk_cli_userspace_table_print(spaces->items, spaces->len, &t);
	if (spaces->len > 0 && nq > 0)
		printf("\n");
	if (nq > 0)
		sk_cli_quota_table_print(quotas, nq, o->no_headers, true);
}

static int
list_and_print(sk_store *st, const all_opts *o, const sk_selector *sel)
{
	sk_userspace_list spaces = { NULL, 0, 0 };
	sk_spacequota_list all = { NULL, 0 };
	sk_spacequota **quotas;
	size_t nq;
	sk_error err;
	int rc;

	sk_error_clear(&err);
	if ((rc = sk_store_list(st, sel, &spaces, &err)) != 0 ||
	        (rc = sk_store_quota_list(st, &all, &err)) != 0) {
		sk_cli_errorf("%s", err.message);
		sk_userspace_list_dispose(&spaces);
		return sk_cli_exit_code(rc);
	}
	quotas = sk_calloc(all.len + 1, sizeof(*quotas));
	nq = select_quotas(&all, sel, quotas);
	if (spaces.len == 0 && nq == 0) {
		fflush(stdout);
		fprintf(stderr, "No resources found.\n");
	} else {
		print_all(o, &spaces, quotas, nq);
	}
	free(quotas);
	sk_spacequota_list_dispose(&all);
	sk_userspace_list_dispose(&spaces);
	return SK_EXIT_OK;
}

int
sk_cli_get_all(int argc, char **argv)
{
	all_opts o = { SK_OUTPUT_TABLE, false, false, NULL };
	sk_selector *sel = NULL;
	sk_store *st = NULL;
	sk_error err;
	int rc;

	sk_error_clear(&err);
	if ((rc = parse_args(&o, argc, argv)) != SK_CLI_CONTINUE)
		return rc;
	if (o.selector_text && sk_selector_parse(o.selector_text, &sel, &err) != 0)
		return sk_cli_usage_error(&help, "-l: %s", err.message);
	if ((rc = sk_cli_store_open(&st)) == SK_EXIT_OK) {
		rc = list_and_print(st, &o, sel);
		sk_store_close(st);
	}
	sk_selector_free(sel);
	return rc;
}
