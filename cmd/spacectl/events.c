/*
 * spacectl events: the Kubernetes-style events the controller records
 * (aggregated by object, type and reason), oldest first like kubectl.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/names.h"
#include "spacectl.h"

static const sk_cli_help help = {
	"events",
	"spacectl events [-o table|yaml|json] [--limit n] [[userspace] name | --orphans]\n"
	"spacectl events [-o table|yaml|json] [--limit n] userspace/name",
	"Lists the events of every UserSpace, or of one, oldest first (by the last\n"
	"time seen). Repeated events are aggregated: COUNT says how often, FIRST SEEN\n"
	"and LAST SEEN how long ago the first and the latest happened.\n"
	"\n"
	"Events belong to one object by its UID, as in Kubernetes: for a NAME that\n"
	"exists, only the current object's events are shown, never those of an\n"
	"earlier object deleted and re-created under the same name; for a NAME that\n"
	"no longer exists, the events every object of that name left behind.\n"
	"--orphans shows the controller's orphan events (sandboxes without a\n"
	"UserSpace: Orphan, OrphanDeleted), listed as object \"(orphans)\".\n"
	"\n"
	"Flags:\n"
	"  -o, --output FORMAT   table (default), yaml or json ({\"kind\": \"EventList\",\n"
	"                        \"items\": [...]})\n"
	"      --limit N         only the N most recent events (default: all)\n"
	"      --orphans         only the orphan events\n"
	"\n"
	"Examples:\n"
	"  spacectl events\n"
	"  spacectl events alice --limit 10\n"
	"  spacectl events --orphans\n"
	"  spacectl events -o json\n",
};

enum { OPT_LIMIT = SK_OPT_FIRST_CMD, OPT_ORPHANS };

static void
object_cell(const sk_event *e, char *buf, size_t len)
{
	if (e->object && strcmp(e->object, SK_STORE_ORPHANS) == 0)
		snprintf(buf, len, "(orphans)");
	else
		snprintf(buf, len, "userspace/%s", e->object ? e->object : "");
}

static void
age_cell(int64_t now, int64_t ms, char *buf, size_t len)
{
	if (ms == 0)
		snprintf(buf, len, "-");
	else
		sk_age_format(now > ms ? now - ms : 0, buf, len);
}

static void
print_table(const sk_event_list *l)
{
	static const char *const hdr[] = { "TYPE", "REASON", "OBJECT", "COUNT", "FIRST SEEN",
		"LAST SEEN", "MESSAGE" };
	sk_table *t = sk_table_new(7, hdr);
	sk_buf out = SK_BUF_INIT(0);
	int64_t now = sk_now_ms();

	for (size_t i = 0; i < l->len; i++) {
		const sk_event *e = &l->items[i];
		char obj[160], count[16], first[32], last[32];
		const char *row[7];
		object_cell(e, obj, sizeof(obj));
		snprintf(count, sizeof(count), "%d", e->count);
		age_cell(now, e->first_ms, first, sizeof(first));
		age_cell(now, e->last_ms, last, sizeof(last));
		row[0] = e->type ? e->type : "-";
		row[1] = e->reason ? e->reason : "-";
		row[2] = obj;
		row[3] = count;
		row[4] = first;
		row[5] = last;
		row[6] = e->message ? e->message : "";
		sk_table_add_row(t, row);
	}
	sk_table_render(t, &out);
	fwrite(out.data ? out.data : "", 1, out.len, stdout);
	sk_buf_dispose(&out);
	sk_table_free(t);
}

static void
set_time(json_t *o, const char *key, int64_t ms)
{
	char ts[48];

	if (ms == 0)
		return;
	sk_time_format(ms, ts, sizeof(ts));
	json_object_set_new(o, key, json_string(ts));
}

static json_t *
event_json(const sk_event *e)
{
	json_t *o = json_object();

	json_object_set_new(o, "object", json_string(e->object));
	if (e->uid && *e->uid)
		json_object_set_new(o, "uid", json_string(e->uid));
	json_object_set_new(o, "type", json_string(e->type));
	json_object_set_new(o, "reason", json_string(e->reason));
	json_object_set_new(o, "message", json_string(e->message ? e->message : ""));
	json_object_set_new(o, "count", json_integer(e->count));
	set_time(o, "firstTimestamp", e->first_ms);
	set_time(o, "lastTimestamp", e->last_ms);
	if (e->source)
		json_object_set_new(o, "source", json_string(e->source));
	return o;
}

static int
print_events(const sk_event_list *l, sk_output fmt)
{
	json_t *items, *root;
	int rc;

	if (fmt == SK_OUTPUT_TABLE) {
		if (l->len == 0) {
			fflush(stdout);
			fprintf(stderr, "No events found.\n");
		} else {
			print_table(l);
		}
		return SK_EXIT_OK;
	}
	items = json_array();
	for (size_t i = 0; i < l->len; i++)
		json_array_append_new(items, event_json(&l->items[i]));
	root = json_pack("{s:s, s:o}", "kind", "EventList", "items", items);
	rc = sk_cli_print_value(root, fmt);
	json_decref(root);
	return rc;
}

/* The uid of the object named name (malloc'd), NULL when there is none. */
static int
current_uid(sk_store *st, const char *name, char **uid, sk_error *err)
{
	sk_userspace *us = NULL;
	int rc = sk_store_get(st, name, &us, err);

	*uid = NULL;
	if (rc == SK_ENOTFOUND) {
		sk_error_clear(err);
		return 0;
	}
	if (rc == 0)
		*uid = sk_strdup(us->meta.uid ? us->meta.uid : "");
	sk_userspace_free(us);
	return rc;
}

static int
run(const char *name, size_t limit, sk_output fmt)
{
	sk_event_list evs = { NULL, 0 };
	sk_store *st = NULL;
	sk_error err;
	char *uid = NULL;
	int rc;

	if ((rc = sk_cli_store_open(&st)) != SK_EXIT_OK)
		return rc;
	sk_error_clear(&err);
	rc = name && strcmp(name, SK_STORE_ORPHANS) != 0 ? current_uid(st, name, &uid, &err) : 0;
	if (rc == 0)
		rc = sk_store_events(st, name, uid, limit, &evs, &err);
	free(uid);
	sk_store_close(st);
	if (rc != 0) {
		sk_cli_errorf("%s", err.message);
		return sk_cli_exit_code(rc);
	}
	rc = print_events(&evs, fmt);
	sk_event_list_dispose(&evs);
	return rc;
}

static int
parse_limit(const char *s, size_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < 0)
		return sk_cli_usage_error(&help, "--limit: \"%s\" is not a count", s);
	*out = (size_t)v;
	return SK_CLI_CONTINUE;
}

int
sk_cmd_events(int argc, char **argv)
{
	static const struct option opts[] = { { "output", required_argument, NULL, 'o' },
		{ "limit", required_argument, NULL, OPT_LIMIT },
		{ "orphans", no_argument, NULL, OPT_ORPHANS }, SK_CLI_GLOBAL_OPTIONS, { 0 } };
	sk_output fmt = SK_OUTPUT_TABLE;
	sk_cli_strv names = { NULL, 0 };
	const char *name = NULL;
	bool orphans = false;
	size_t limit = 0;
	int ch, rc;

	while ((ch = sk_cli_getopt(argc, argv, ":o:h", opts)) != -1) {
		if (ch == 'o') {
			if (sk_cli_output_parse(optarg, &fmt) != 0 || fmt == SK_OUTPUT_WIDE)
				return sk_cli_usage_error(&help,
				        "-o: unknown output format \"%s\" (table, yaml, json)",
				        optarg);
		} else if (ch == OPT_LIMIT) {
			if ((rc = parse_limit(optarg, &limit)) != SK_CLI_CONTINUE)
				return rc;
		} else if (ch == OPT_ORPHANS) {
			orphans = true;
		} else if ((rc = sk_cli_opt(&help, ch, argv)) != SK_CLI_CONTINUE) {
			return rc;
		}
	}
	/* "events alice", "events userspace alice" and "events us/alice" alike;
	 * "events userspace" alone: every object. */
	rc = sk_cli_object_args(&help, argv + optind, argc - optind, true, &names);
	if (rc == SK_CLI_CONTINUE && names.len > 1)
		rc = sk_cli_usage_error(&help, "unexpected argument \"%s\"", names.items[1]);
	name = names.len > 0 ? names.items[0] : NULL;
	sk_cli_strv_dispose(&names);
	if (rc != SK_CLI_CONTINUE)
		return rc;
	if (name && orphans)
		return sk_cli_usage_error(&help, "--orphans takes no name");
	if (name && !sk_valid_name(name))
		return sk_cli_usage_error(
		        &help, "\"%s\" is not a UserSpace name (orphan events: --orphans)", name);
	return run(orphans ? SK_STORE_ORPHANS : name, limit, fmt);
}
