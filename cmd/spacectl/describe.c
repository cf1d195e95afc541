/* spacectl describe: one UserSpace in detail (kubectl describe): metadata, spec, status, events. */
#include <stdlib.h>
#include <string.h>

#include "spacectl.h"

static const sk_cli_help help = {
	"describe",
	"spacectl describe userspace name ...\n"
	"spacectl describe userspace/name ...\n"
	"spacectl describe userspaces [-l selector]",
	"Shows a UserSpace in detail: metadata, the spec with every default filled in,\n"
	"the status, its conditions and drift, and the recent events. With no name,\n"
	"every UserSpace (or those matching -l), as kubectl describe does. The values\n"
	"of spec.env are secrets: describe shows their names and sizes only, as kubectl\n"
	"describe shows a Secret, unless --show-secrets is given.\n"
	"\n"
	"Flags:\n"
	"  -l, --selector SEL   describe the UserSpaces whose labels match SEL\n"
	"      --show-secrets   print the values of spec.env in clear\n"
	"\n"
	"Examples:\n"
	"  spacectl describe userspace alice\n"
	"  spacectl describe us -l team=research\n"
	"  spacectl describe us alice --show-secrets\n",
};

#define EVENTS_MAX 20

enum { OPT_SHOW_SECRETS = SK_OPT_FIRST_CMD };

static void
print_kvlist(const char *title, const sk_kvlist *l)
{
	printf("%-20s", title);
	if (l->len == 0)
		printf("<none>\n");
	for (size_t i = 0; i < l->len; i++)
		printf("%s%s=%s\n", i ? "                    " : "", l->items[i].key,
		        l->items[i].value);
}

static void
print_time(const char *title, int64_t ms, int64_t now)
{
	char ts[64], age[32];

	sk_time_format(ms, ts, sizeof(ts));
	sk_age_format(now - ms, age, sizeof(age));
	printf("%-20s%s (%s ago)\n", title, ts, age);
}

/* "userID" -> "User ID"-ish: split camelCase into words, capitalise the first. */
static void
title_case(const char *key, char *out, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; key[i] && o + 2 < len; i++) {
		char ch = key[i];
		if (i > 0 && ch >= 'A' && ch <= 'Z' && !(key[i - 1] >= 'A' && key[i - 1] <= 'Z'))
			out[o++] = ' ';
		out[o++] = (char)(i == 0 && ch >= 'a' && ch <= 'z' ? ch - 'a' + 'A' : ch);
	}
	out[o] = '\0';
}

/* Prints a JSON object as indented "Key:  value" lines. Maps of user data
 * (env, metadata) keep their keys as written. */
static void
print_json_fields(const json_t *obj, int indent, bool raw_keys)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)obj, key, v)
	{
		char title[128], label[160];
		int width;
		bool raw_child = strcmp(key, "env") == 0 || strcmp(key, "metadata") == 0;

		if (raw_keys)
			snprintf(title, sizeof(title), "%s", key);
		else
			title_case(key, title, sizeof(title));
		snprintf(label, sizeof(label), "%s:", title);
		width = 20 - indent > (int)strlen(label) ? 20 - indent : (int)strlen(label) + 1;
		if (json_is_object(v)) {
			printf("%*s%s%s\n", indent, "", label,
			        json_object_size(v) ? "" : "  <none>");
			print_json_fields(v, indent + 2, raw_child);
		} else if (json_is_string(v)) {
			printf("%*s%-*s%s\n", indent, "", width, label, json_string_value(v));
		} else {
			char *s = json_dumps(v, JSON_ENCODE_ANY);
			printf("%*s%-*s%s\n", indent, "", width, label, s ? s : "");
			free(s);
		}
	}
}

static void
print_meta(const sk_userspace *us, int64_t now)
{
	printf("%-20s%s\n", "Name:", us->meta.name);
	print_kvlist("Labels:", &us->meta.labels);
	print_kvlist("Annotations:", &us->meta.annotations);
	printf("%-20s%s\n", "UID:", us->meta.uid ? us->meta.uid : "<none>");
	printf("%-20s%lld\n", "Generation:", (long long)us->meta.generation);
	printf("%-20s%lld\n", "Resource Version:", (long long)us->meta.resource_version);
	if (us->meta.creation_ms)
		print_time("Created:", us->meta.creation_ms, now);
	if (us->meta.deletion_ms)
		print_time("Deletion:", us->meta.deletion_ms, now);
	printf("%-20s", "Finalizers:");
	if (us->meta.n_finalizers == 0)
		printf("<none>");
	for (size_t i = 0; i < us->meta.n_finalizers; i++)
		printf("%s%s", i ? ", " : "", us->meta.finalizers[i]);
	printf("\n");
}

static void
print_rows(const char *title, sk_table *t)
{
	sk_buf out = SK_BUF_INIT(0);

	sk_table_render(t, &out);
	printf("%s\n", title);
	for (char *line = out.data; line && *line;) {
		char *nl = strchr(line, '\n');
		printf("  %.*s\n", (int)(nl ? nl - line : (long)strlen(line)), line);
		line = nl ? nl + 1 : NULL;
	}
	sk_buf_dispose(&out);
}

static void
print_conditions(const sk_userspace *us, int64_t now)
{
	static const char *const h[] = { "TYPE", "STATUS", "REASON", "MESSAGE", "LAST TRANSITION" };
	sk_table *t;

	if (us->status.n_conditions == 0) {
		printf("Conditions:         <none>\n");
		return;
	}
	t = sk_table_new(5, h);
	for (size_t i = 0; i < us->status.n_conditions; i++) {
		const sk_condition *c = &us->status.conditions[i];
		char age[32];
		const char *row[5];
		sk_age_format(now - c->last_transition_ms, age, sizeof(age));
		row[0] = c->type ? c->type : "";
		row[1] = c->status ? c->status : "";
		row[2] = c->reason ? c->reason : "";
		row[3] = c->message ? c->message : "";
		row[4] = c->last_transition_ms ? age : "-";
		sk_table_add_row(t, row);
	}
	print_rows("Conditions:", t);
	sk_table_free(t);
}

static void
print_drift(const sk_userspace *us, int64_t now)
{
	static const char *const h[] = { "TYPE", "SANDBOX", "SINCE", "DETAIL" };
	sk_table *t;

	if (us->status.n_drift == 0) {
		printf("Drift:              <none>\n");
		return;
	}
	t = sk_table_new(4, h);
	for (size_t i = 0; i < us->status.n_drift; i++) {
		const sk_drift *d = &us->status.drift[i];
		char age[32];
		const char *row[4];
		sk_age_format(now - d->since_ms, age, sizeof(age));
		row[0] = d->type ? d->type : "";
		row[1] = d->sandbox_id ? d->sandbox_id : "-";
		row[2] = d->since_ms ? age : "-";
		row[3] = d->detail ? d->detail : "";
		sk_table_add_row(t, row);
	}
	print_rows("Drift:", t);
	sk_table_free(t);
}

static void
print_migration(const sk_userspace *us, int64_t now)
{
	const sk_migration_status *m = &us->status.migration;
	char age[32];

	if (us->status.provider)
		printf("  %-18s%s\n", "Provider:", us->status.provider);
	if (m->phase == SK_MIG_NONE)
		return;
	printf("  Migration:\n");
	printf("    %-16s%s\n", "Phase:", sk_migration_phase_name(m->phase));
	printf("    %-16s%s\n", "Trigger:", m->trigger ? m->trigger : "-");
	printf("    %-16s%s/%s %s\n", "Source:", m->source.provider ? m->source.provider : "-",
	        m->source.template_id ? m->source.template_id : "-",
	        m->source.sandbox_id ? m->source.sandbox_id : "-");
	printf("    %-16s%s/%s %s\n", "Target:", m->target.provider ? m->target.provider : "-",
	        m->target.template_id ? m->target.template_id : "-",
	        m->target.sandbox_id ? m->target.sandbox_id : "-");
	printf("    %-16s%lld/%lld files, %lld/%lld bytes\n", "Progress:", (long long)m->files_done,
	        (long long)m->files_total, (long long)m->bytes_done, (long long)m->bytes_total);
	if (m->start_ms) {
		sk_age_format(now - m->start_ms, age, sizeof(age));
		printf("    %-16s%s ago\n", "Started:", age);
	}
	if (m->reason)
		printf("    %-16s%s\n", "Reason:", m->reason);
}

static void
print_status(const sk_userspace *us, int64_t now)
{
	const char *phase = sk_phase_name(us->status.phase);

	printf("Status:\n");
	printf("  %-18s%s\n", "Phase:", phase && *phase ? phase : "<none>");
	printf("  %-18s%s\n", "Sandbox:", us->status.sandbox_id ? us->status.sandbox_id : "<none>");
	{
		char where[1024];
		sk_archive_where(&us->status, where, sizeof(where));
		printf("  %-18s%s\n", "Files:", where);
	}
	if (us->status.archive.intent_ms) {
		char age[32];
		sk_age_format(now - us->status.archive.intent_ms, age, sizeof(age));
		printf("  %-18sstarted %s ago\n", "Archiving:", age);
	}
	printf("  %-18s%lld\n", "Observed Gen:", (long long)us->status.observed_generation);
	if (us->status.message)
		printf("  %-18s%s\n", "Message:", us->status.message);
	/* status.lastReconcileTime is stamped only by a reconcile that changed
	 * something at the provider: a resync that finds nothing to do writes no
	 * status (one write per object per resync would be the store's whole
	 * load). So it is the last change, however often the controller looks. */
	if (us->status.last_reconcile_ms) {
		char age[32];
		sk_age_format(now - us->status.last_reconcile_ms, age, sizeof(age));
		printf("  %-18s%s ago (the controller's last change; a resync that finds nothing "
		       "to do writes nothing)\n",
		        "Last Change:", age);
	}
	print_migration(us, now);
	print_conditions(us, now);
	print_drift(us, now);
}

static int
print_events(sk_store *st, const sk_userspace *us, int64_t now)
{
	static const char *const h[] = { "TYPE", "REASON", "AGE", "COUNT", "MESSAGE" };
	sk_event_list evs = { NULL, 0 };
	sk_error err;
	sk_table *t;
	int rc;

	sk_error_clear(&err);
	if ((rc = sk_store_events(st, us->meta.name, us->meta.uid ? us->meta.uid : "", EVENTS_MAX,
	             &evs, &err)) != 0) {
		sk_cli_errorf("events: %s", err.message);
		return sk_cli_exit_code(rc);
	}
	if (evs.len == 0) {
		printf("Events:             <none>\n");
		sk_event_list_dispose(&evs);
		return SK_EXIT_OK;
	}
	t = sk_table_new(5, h);
	for (size_t i = 0; i < evs.len; i++) {
		const sk_event *e = &evs.items[i];
		char age[128], last[32], first[32], count[16];
		const char *row[5];
		sk_age_format(now - e->last_ms, last, sizeof(last));
		sk_age_format(now - e->first_ms, first, sizeof(first));
		if (e->count > 1)
			snprintf(age, sizeof(age), "%s (x%d over %s)", last, e->count, first);
		else
			snprintf(age, sizeof(age), "%s", last);
		snprintf(count, sizeof(count), "%d", e->count);
		row[0] = e->type ? e->type : "";
		row[1] = e->reason ? e->reason : "";
		row[2] = age;
		row[3] = count;
		row[4] = e->message ? e->message : "";
		sk_table_add_row(t, row);
	}
	print_rows("Events:", t);
	sk_table_free(t);
	sk_event_list_dispose(&evs);
	return SK_EXIT_OK;
}

/* Every spec.env value replaced by its size, as kubectl describe shows a
 * Secret's data: the names stay, the values (secrets) are not printed. */
static void
hide_env_values(json_t *spec)
{
	json_t *env = json_object_get(spec, "env");

	for (void *it = json_object_iter(env); it != NULL; it = json_object_iter_next(env, it)) {
		char hidden[64];
		snprintf(hidden, sizeof(hidden), "(hidden, %zu bytes)",
		        json_string_length(json_object_iter_value(it)));
		json_object_iter_set_new(env, it, json_string(hidden));
	}
}

static int
describe_one(sk_store *st, const char *name, bool show_secrets)
{
	sk_userspace *us = NULL;
	sk_error err;
	json_t *spec;
	int64_t now = sk_now_ms();
	int rc;

	sk_error_clear(&err);
	if ((rc = sk_store_get(st, name, &us, &err)) != 0) {
		if (rc == SK_ENOTFOUND)
			sk_cli_errorf("userspaces \"%s\" not found (NotFound)", name);
		else
			sk_cli_errorf("%s", err.message);
		return sk_cli_exit_code(rc);
	}
	print_meta(us, now);
	printf("Spec:\n");
	spec = sk_userspace_spec_to_json(&us->spec);
	if (!show_secrets)
		hide_env_values(spec);
	print_json_fields(spec, 2, false);
	json_decref(spec);
	print_status(us, now);
	if (sk_cli_space_uses_snapshots(st, us))
		sk_cli_print_snapshots(st, us);
	rc = print_events(st, us, now);
	sk_userspace_free(us);
	return rc;
}

/* No name: every object (matching -l), by name; "No resources found." when none. */
static int
names_of_all(sk_store *st, const char *selector_text, sk_cli_strv *names, sk_userspace_list *l)
{
	int rc = sk_cli_list_selected(st, &help, selector_text, l);

	if (rc != SK_EXIT_OK)
		return rc;
	for (size_t i = 0; i < l->len; i++)
		sk_cli_strv_push(names, l->items[i]->meta.name);
	if (l->len == 0)
		fprintf(stderr, "No resources found.\n");
	return SK_EXIT_OK;
}

int
sk_cmd_describe(int argc, char **argv)
{
	static const struct option opts[] = { { "selector", required_argument, NULL, 'l' },
		{ "show-secrets", no_argument, NULL, OPT_SHOW_SECRETS }, SK_CLI_GLOBAL_OPTIONS,
		{ 0 } };
	sk_cli_strv names = { NULL, 0 };
	sk_userspace_list all = { NULL, 0, 0 };
	const char *selector_text = NULL;
	sk_store *st = NULL;
	bool show_secrets = false;
	int ch, rc, exit_code = SK_EXIT_OK;

	if (sk_cli_quota_args(argc, argv))
		return sk_cli_quota_describe(argc, argv);
	while ((ch = sk_cli_getopt(argc, argv, ":l:h", opts)) != -1) {
		if (ch == 'l')
			selector_text = optarg;
		else if (ch == OPT_SHOW_SECRETS)
			show_secrets = true;
		else if ((rc = sk_cli_opt(&help, ch, argv)) != SK_CLI_CONTINUE)
			return rc;
	}
	if (optind >= argc)
		return sk_cli_usage_error(&help, "expected: describe userspace NAME");
	rc = sk_cli_object_args(&help, argv + optind, argc - optind, false, &names);
	if (rc == SK_CLI_CONTINUE && names.len > 0 && selector_text != NULL)
		rc = sk_cli_usage_error(&help, "names and -l cannot be used together");
	if (rc == SK_CLI_CONTINUE)
		rc = sk_cli_store_open(&st);
	if (rc == SK_EXIT_OK && names.len == 0)
		rc = names_of_all(st, selector_text, &names, &all);
	if (rc != SK_EXIT_OK) {
		sk_store_close(st);
		sk_cli_strv_dispose(&names);
		sk_userspace_list_dispose(&all);
		return rc;
	}
	for (size_t i = 0; i < names.len; i++) {
		if (i > 0)
			printf("\n\n");
		rc = describe_one(st, names.items[i], show_secrets);
		if (rc != SK_EXIT_OK && exit_code != SK_EXIT_UNAVAILABLE)
			exit_code = rc;
		if (rc == SK_EXIT_UNAVAILABLE)
			break;
	}
	sk_store_close(st);
	sk_cli_strv_dispose(&names);
	sk_userspace_list_dispose(&all);
	return exit_code;
}
