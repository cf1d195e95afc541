/*
 * spacectl drift: every UserSpace whose status reports drift, one row per
 * drift item. Exit 1 when any (a pipeline gates on it), 0 when none,
 * 2 or more on an error (3: database unavailable), like diff.
 */
#include <stdlib.h>
#include <string.h>

#include "spacectl.h"

static const sk_cli_help help = {
	"drift",
	"spacectl drift [-o table|yaml|json] [-l selector]",
	"Lists the drift the controller reports in status.drift: one row per item,\n"
	"with the UserSpace, its user, the drift type (DataPlaneUnreachable,\n"
	"Duplicate, StateMismatch, SpecMismatch, Missing, Orphan), the sandbox\n"
	"concerned, how long it has lasted and the detail.\n"
	"\n"
	"Flags:\n"
	"  -o, --output FORMAT   table (default), yaml or json:\n"
	"                        {\"items\": [{\"name\", \"userID\", \"drift\": [...]}]}\n"
	"  -l, --selector SEL    only the UserSpaces matching this label selector\n"
	"\n"
	"Exit codes: 0 no drift (\"No drift.\" on stderr); 1 drift found; 2 or more\n"
	"on an error (2 usage, 3 database unavailable).\n"
	"\n"
	"Examples:\n"
	"  spacectl drift\n"
	"  spacectl drift -l team=research -o json\n"
	"  spacectl drift >/dev/null || echo \"drift: look at spacectl drift\"\n",
};

#define DRIFT_ERROR 2

static void
print_table(const sk_userspace_list *l)
{
	static const char *const hdr[] = { "NAME", "USERID", "TYPE", "SANDBOX", "AGE", "DETAIL" };
	sk_table *t = sk_table_new(6, hdr);
	sk_buf out = SK_BUF_INIT(0);
	int64_t now = sk_now_ms();

	for (size_t i = 0; i < l->len; i++) {
		const sk_userspace *us = l->items[i];
		for (size_t k = 0; k < us->status.n_drift; k++) {
			const sk_drift *d = &us->status.drift[k];
			char age[32] = "-";
			const char *row[6];
			if (d->since_ms)
				sk_age_format(now > d->since_ms ? now - d->since_ms : 0, age,
				        sizeof(age));
			row[0] = us->meta.name;
			row[1] = us->spec.user_id;
			row[2] = d->type ? d->type : "-";
			row[3] = d->sandbox_id ? d->sandbox_id : "-";
			row[4] = age;
			row[5] = d->detail && *d->detail ? d->detail : "-";
			sk_table_add_row(t, row);
		}
	}
	sk_table_render(t, &out);
	fwrite(out.data ? out.data : "", 1, out.len, stdout);
	sk_buf_dispose(&out);
	sk_table_free(t);
}

static int
print_json(const sk_userspace_list *l, sk_output fmt)
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
	root = json_pack("{s:o}", "items", items);
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

static int
run(const char *selector_text, sk_output fmt)
{
	sk_userspace_list list = { NULL, 0, 0 };
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
	rc = sk_store_list(st, sel, &list, &err);
	sk_selector_free(sel);
	sk_store_close(st);
	if (rc != 0) {
		sk_cli_errorf("%s", err.message);
		return rc == SK_EUNAVAILABLE || rc == SK_ETIMEOUT ? SK_EXIT_UNAVAILABLE
		                                                  : DRIFT_ERROR;
	}
	keep_drifted(&list);
	if (fmt == SK_OUTPUT_TABLE || fmt == SK_OUTPUT_WIDE) {
		if (list.len == 0) {
			fflush(stdout);
			fprintf(stderr, "No drift.\n");
		} else {
			print_table(&list);
		}
		rc = SK_EXIT_OK;
	} else {
		rc = print_json(&list, fmt) == SK_EXIT_OK ? SK_EXIT_OK : DRIFT_ERROR;
	}
	if (rc == SK_EXIT_OK)
		rc = list.len > 0 ? SK_EXIT_FAIL : SK_EXIT_OK;
	sk_userspace_list_dispose(&list);
	return rc;
}

int
sk_cmd_drift(int argc, char **argv)
{
	static const struct option opts[] = { { "output", required_argument, NULL, 'o' },
		{ "selector", required_argument, NULL, 'l' }, SK_CLI_GLOBAL_OPTIONS, { 0 } };
	const char *selector_text = NULL;
	sk_output fmt = SK_OUTPUT_TABLE;
	int ch, rc;

	while ((ch = sk_cli_getopt(argc, argv, ":o:l:h", opts)) != -1) {
		if (ch == 'o') {
			if (sk_cli_output_parse(optarg, &fmt) != 0 || fmt == SK_OUTPUT_WIDE)
				return sk_cli_usage_error(&help,
				        "-o: unknown output format \"%s\" (table, yaml, json)",
				        optarg);
		} else if (ch == 'l') {
			selector_text = optarg;
		} else if ((rc = sk_cli_opt(&help, ch, argv)) != SK_CLI_CONTINUE) {
			return rc;
		}
	}
	if (optind < argc)
		return sk_cli_usage_error(&help, "unexpected argument \"%s\"", argv[optind]);
	return run(selector_text, fmt);
}
