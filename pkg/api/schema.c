/*
 * api/schema: the UserSpace spec as one table (sk_spec_fields). Every spec
 * field's JSON path, type, member, default, bounds, pattern, enum values and
 * CRD description is written here once; validate.c, codec.c, userspace.c and
 * the store's codec and packed form walk the table. The CRD
 * (crds/spacekeeper.dev_userspaces.yaml) is held to it by
 * test/unit/check_schema.c. Rows of one object (spec.lifecycle.*) are
 * adjacent, in output order.
 */
#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "names.h"
#include "network.h"
#include "quantity.h"
#include "schema.h"
#include "storage.h"
#include "userspace.h"

_Static_assert(sizeof(sk_mode) == sizeof(int) && sizeof(sk_on_timeout) == sizeof(int) &&
                sizeof(sk_deletion_policy) == sizeof(int) &&
                sizeof(sk_remediation) == sizeof(int) &&
                sizeof(sk_update_strategy) == sizeof(int) &&
                sizeof(sk_busy_policy) == sizeof(int) && sizeof(sk_on_loss) == sizeof(int) &&
                sizeof(sk_net_access) == sizeof(int) && sizeof(sk_volume_policy) == sizeof(int) &&
                sizeof(sk_archive_method) == sizeof(int),
        "ENUM fields are read and written as int");

/* ---- rules of the fields that need more than a type and bounds ---- */

static bool
template_ok(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > 128)
		return false;
	for (; *s; s++) {
		if (!isalnum((unsigned char)*s) && strchr("._/:-", *s) == NULL)
			return false;
	}
	return true;
}

static bool
env_name_ok(const char *s)
{
	if (!isalpha((unsigned char)s[0]) && s[0] != '_')
		return false;
	for (; *s; s++) {
		if (!isalnum((unsigned char)*s) && *s != '_')
			return false;
	}
	return true;
}

static bool
metadata_key_ok(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > 64)
		return false;
	for (; *s; s++) {
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-')
			return false;
	}
	return true;
}

/* A volume name as E2B takes it (NewVolume.name), at most 63 characters. */
static bool
volume_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > SK_VOLUME_NAME_MAX)
		return false;
	for (; *s; s++) {
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-')
			return false;
	}
	return true;
}

/* A workspace root: absolute, no "." or ".." segment, no "//", at most 1024 bytes. */
static bool
abs_path_ok(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > 1024 || s[0] != '/')
		return false;
	return strstr(s, "//") == NULL && strstr(s, "/../") == NULL && strstr(s, "/./") == NULL &&
	        !(n >= 3 && strcmp(s + n - 3, "/..") == 0) &&
	        !(n >= 2 && strcmp(s + n - 2, "/.") == 0);
}

/* A cron schedule (sk_cron_parse): 5 fields, or 6 with seconds first. */
static bool
cron_ok(const char *s)
{
	sk_cron c;
	char why[256];

	return strlen(s) <= 128 && sk_cron_parse(s, &c, why, sizeof(why)) == SK_OK;
}

/* A mount path: absolute, no "." or ".." segment, not "/" itself. */
static bool
mount_path_ok(const char *s)
{
	return abs_path_ok(s) && strcmp(s, "/") != 0;
}

static bool
quantity_ok(const char *s)
{
	int64_t n;

	return strlen(s) <= 18 && sk_quantity_parse(s, &n) == SK_OK;
}

void
sk_check_list(sk_vctx *v, const sk_field *f, json_t *a, const char *(*why)(const char *s))
{
	json_t *item;
	size_t i;

	if (!json_is_array(a)) {
		sk_doc_error(v->errs, v->doc, f->path, "must be a list of strings");
		return;
	}
	if (json_array_size(a) < 1 || json_array_size(a) > (size_t)f->max)
		sk_doc_error(
		        v->errs, v->doc, f->path, "must have 1 to %lld entries", (long long)f->max);
	json_array_foreach(a, i, item)
	{
		char *p = sk_path_index(f->path, i);
		const char *s = sk_check_string(v, item, p);
		const char *rule = s != NULL && !f->valid(s) && why ? why(s) : NULL;
		if (s != NULL && f->max_len > 0 && strlen(s) > (size_t)f->max_len)
			sk_doc_error(v->errs, v->doc, p,
			        "must be at most %d bytes (got \"%.140s\")", f->max_len, s);
		else if (rule != NULL)
			sk_doc_error(v->errs, v->doc, p, "%s (got \"%.140s\")", rule, s);
		else if (s != NULL && !f->valid(s))
			sk_doc_error(v->errs, v->doc, p, "must be %s (got \"%.140s\")", f->rule, s);
		free(p);
	}
}

/* A list of at most f->max strings, each passing f->valid. */
static void
check_list(sk_vctx *v, const sk_field *f, json_t *a)
{
	sk_check_list(v, f, a, NULL);
}

static bool
key_safe_quiet(const char *key)
{
	return key[0] != '$' && strchr(key, '.') == NULL;
}

/* Rejects keys that would be unsafe in MongoDB field names. */
static bool
key_safe(sk_vctx *v, const char *key, const char *p)
{
	if (!key_safe_quiet(key)) {
		sk_doc_error(v->errs, v->doc, p, "key must not start with '$' or contain '.'");
		return false;
	}
	return true;
}

/* An object of at most f->max entries; false when not an object. */
static bool
check_map_shape(sk_vctx *v, const sk_field *f, json_t *m)
{
	if (!sk_check_object(v, m, f->path))
		return false;
	if (json_object_size(m) > (size_t)f->max)
		sk_doc_error(v->errs, v->doc, f->path, "must have at most %lld entries",
		        (long long)f->max);
	return true;
}

static void
check_env(sk_vctx *v, const sk_field *f, json_t *m)
{
	const char *key;
	json_t *val;

	if (!check_map_shape(v, f, m))
		return;
	json_object_foreach(m, key, val)
	{
		char *p = sk_path_join(f->path, key);
		if (key_safe(v, key, p) && !env_name_ok(key))
			sk_doc_error(v->errs, v->doc, p,
			        "key must be an environment variable name "
			        "([A-Za-z_][A-Za-z0-9_]*)");
		sk_check_string(v, val, p);
		free(p);
	}
}

static void
check_sandbox_metadata(sk_vctx *v, const sk_field *f, json_t *m)
{
	const char *key;
	json_t *val;

	if (!check_map_shape(v, f, m))
		return;
	json_object_foreach(m, key, val)
	{
		char *p = sk_path_join(f->path, key);
		const char *s;
		if (key_safe(v, key, p) && sk_reserved_metadata_key(key))
			sk_doc_error(v->errs, v->doc, p,
			        "key \"%s\" is reserved (spacekeeper sets it on the sandbox)", key);
		else if (key_safe_quiet(key) && !metadata_key_ok(key))
			sk_doc_error(v->errs, v->doc, p, "key must match [A-Za-z0-9_-]{1,64}");
		s = sk_check_string(v, val, p);
		if (s != NULL && !sk_valid_metadata_value(s))
			sk_doc_error(v->errs, v->doc, p, "value must match [A-Za-z0-9._-]{0,256}");
		free(p);
	}
}

/* ---- the table ---- */

#define HOUR_MS (3600LL * 1000)
#define AT(member) offsetof(sk_userspace_spec, member)
#define DNS_LABEL_PATTERN "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"

static const char *const mode_names[] = { "Running", "Paused", NULL };
static const char *const on_timeout_names[] = { "pause", "kill", NULL };
static const char *const deletion_names[] = { "Delete", "Retain", NULL };
static const char *const remediation_names[] = { "Replace", "Report", NULL };
static const int remediation_values[] = { SK_REMEDIATION_REPLACE, SK_REMEDIATION_REPORT };
static const char *const update_names[] = { "Report", "Migrate", NULL };
static const char *const busy_names[] = { "Processes", "Ignore", NULL };
static const char *const archive_method_names[] = { "ObjectStorage", "Snapshot", NULL };
static const char *const on_loss_names[] = { "Report", "Restore", NULL };
static const char *const net_access_names[] = { "Allow", "Deny", NULL };
static const int net_access_values[] = { SK_NET_ALLOW, SK_NET_DENY };
static const char *const volume_policy_names[] = { "Retain", "Delete", NULL };
static const int volume_policy_values[] = { SK_VOLUME_RETAIN, SK_VOLUME_DELETE };

const sk_field sk_spec_fields[] = {
	{ .path = "spec.userID",
	        .type = SK_FIELD_STRING,
	        .offset = AT(user_id),
	        .required = true,
	        .valid = sk_valid_user_id,
	        .rule = "[A-Za-z0-9._-]{1,128}",
	        .pattern = "^[A-Za-z0-9._-]{1,128}$",
	        .min_len = 1,
	        .max_len = 128,
	        .desc = "The user this space belongs to; unique across UserSpaces." },
	{ .path = "spec.provider",
	        .type = SK_FIELD_STRING,
	        .offset = AT(provider),
	        .def = "default",
	        .valid = sk_valid_name,
	        .rule = "a DNS-1123 label [a-z0-9-]{1,63}",
	        .pattern = DNS_LABEL_PATTERN,
	        .max_len = 63,
	        .desc = "A provider name from the controller configuration." },
	{ .path = "spec.template",
	        .type = SK_FIELD_STRING,
	        .offset = AT(template_id),
	        .def = "base",
	        .valid = template_ok,
	        .rule = "[A-Za-z0-9._/:-]{1,128}",
	        .pattern = "^[A-Za-z0-9._/:-]{1,128}$",
	        .min_len = 1,
	        .max_len = 128,
	        .desc = "The provider template the sandbox is created from. A change of a "
	                "running space is drift (SpecMismatch) until rolled out: updateStrategy "
	                "Migrate, or spacectl rollout restart." },
	{ .path = "spec.mode",
	        .type = SK_FIELD_ENUM,
	        .offset = AT(mode),
	        .def = "Running",
	        .names = mode_names,
	        .desc = "Desired power state." },
	{ .path = "spec.resources.cpuCount",
	        .type = SK_FIELD_INT,
	        .offset = AT(cpu_count),
	        .min = 1,
	        .max = 64,
	        .desc = "vCPUs (E2B sizes a sandbox by its template; a difference is "
	                "SpecMismatch)." },
	{ .path = "spec.resources.memoryMB",
	        .type = SK_FIELD_INT,
	        .offset = AT(memory_mb),
	        .min = 128,
	        .max = 262144,
	        .desc = "Memory in MiB (E2B sizes a sandbox by its template; a difference is "
	                "SpecMismatch)." },
	{ .path = "spec.lifecycle.idleTimeout",
	        .type = SK_FIELD_DURATION,
	        .max_len = SK_DURATION_MAX_LEN,
	        .offset = AT(idle_timeout_ms),
	        .def = "15m",
	        .min = 0, /* 0s: always on */
	        .max = 720 * HOUR_MS,
	        .desc = "Go duration, at most 720h. The provider pauses the sandbox after this "
	                "long "
	                "without activity (a connect or heartbeat); 0 means always on." },
	{ .path = "spec.lifecycle.onTimeout",
	        .type = SK_FIELD_ENUM,
	        .offset = AT(on_timeout),
	        .def = "pause",
	        .names = on_timeout_names,
	        .desc = "What the provider does after idleTimeout without activity: pause "
	                "(memory and files kept; a connect wakes it) or kill." },
	{ .path = "spec.lifecycle.autoResume",
	        .type = SK_FIELD_BOOL,
	        .offset = AT(auto_resume),
	        .def = "true",
	        .desc = "Passed to the provider with onTimeout pause: a paused sandbox resumes "
	                "itself when its data plane is reached directly. The connect API wakes "
	                "an Idle space either way." },
	{ .path = "spec.lifecycle.maxBusy",
	        .type = SK_FIELD_DURATION,
	        .max_len = SK_DURATION_MAX_LEN,
	        .offset = AT(max_busy_ms),
	        .def = "2h",
	        .min = 0,
	        .max = 720 * HOUR_MS,
	        .desc = "Go duration, at most 720h. While a process started through envd runs, "
	                "the deadline is renewed for at most this long after the last activity "
	                "(lifecycle.busy Processes); 0s turns this off." },
	{ .path = "spec.lifecycle.busy",
	        .type = SK_FIELD_ENUM,
	        .offset = AT(busy),
	        .def = "Processes",
	        .names = busy_names,
	        .desc = "Processes: a running envd process keeps the space awake (up to "
	                "maxBusy); Ignore: only connects and heartbeats do." },
	{ .path = "spec.lifecycle.archiveAfter",
	        .type = SK_FIELD_DURATION,
	        .max_len = SK_DURATION_MAX_LEN,
	        .offset = AT(archive_after_ms),
	        .def = "0s",
	        .min = 0, /* 0s: never */
	        .max = 8760 * HOUR_MS,
	        .desc = "Go duration, at most 8760h. A space asleep this long is archived: its "
	                "workspace is copied to the ControllerConfig's archive (verified), then "
	                "its sandbox is deleted (phase Archived; a connect restores it). 0s "
	                "means never (a provider's pausedRetention still archives first)." },
	{ .path = "spec.lifecycle.archive.method",
	        .type = SK_FIELD_ENUM,
	        .offset = AT(archive_method),
	        .def = "ObjectStorage",
	        .names = archive_method_names,
	        .desc = "What an archive keeps. ObjectStorage: the workspace files, copied "
	                "through the data plane into the ControllerConfig's archive. Snapshot: "
	                "a persistent snapshot at the provider (memory and processes too where "
	                "the provider keeps them), no file copied; a connect starts the next "
	                "sandbox from it, and it is deleted once that sandbox answers its "
	                "probe." },
	{ .path = "spec.env",
	        .type = SK_FIELD_MAP,
	        .offset = AT(env),
	        .max = 128,
	        .check = check_env,
	        .desc = "Sandbox environment variables." },
	{ .path = "spec.metadata",
	        .type = SK_FIELD_MAP,
	        .offset = AT(metadata),
	        .max = 64,
	        .check = check_sandbox_metadata,
	        .desc = "Extra sandbox metadata; spacekeeper's own keys are reserved." },
	{ .path = "spec.deletionPolicy",
	        .type = SK_FIELD_ENUM,
	        .offset = AT(deletion_policy),
	        .def = "Delete",
	        .names = deletion_names,
	        .desc = "What deleting the UserSpace does to its sandboxes: Delete kills them, "
	                "then releases the object; Retain leaves them." },
	{ .path = "spec.health.unhealthyAfter",
	        .type = SK_FIELD_DURATION,
	        .max_len = SK_DURATION_MAX_LEN,
	        .offset = AT(unhealthy_after_ms),
	        .def = "60s",
	        .min = 1000,
	        .max = 24 * HOUR_MS,
	        .desc = "Go duration, at least 1s and at most 24h." },
	{ .path = "spec.health.remediation",
	        .type = SK_FIELD_ENUM,
	        .offset = AT(remediation),
	        .def = "Report",
	        .names = remediation_names,
	        .values = remediation_values,
	        .desc = "What the controller does when the data plane stays unreachable for "
	                "unhealthyAfter: Report (drift only) or Replace (a new sandbox, then "
	                "the old one deleted)." },
	{ .path = "spec.health.onLoss",
	        .type = SK_FIELD_ENUM,
	        .offset = AT(on_loss),
	        .def = "Report",
	        .names = on_loss_names,
	        .desc = "What a lost workspace (a resume without the workspace marker, or a "
	                "sandbox gone while asleep) does: Report (condition WorkspaceIntact "
	                "False, drift WorkspaceLost, workspaceLost in the connect answer) or "
	                "Restore (from the newest archive, when there is one)." },
	{ .path = "spec.updateStrategy",
	        .type = SK_FIELD_ENUM,
	        .offset = AT(update_strategy),
	        .def = "Report",
	        .names = update_names,
	        .desc = "What a change of spec.template does: Report (drift only) or Migrate "
	                "(move the space, files included, to a sandbox of the new template)." },
	{ .path = "spec.workspace.paths",
	        .type = SK_FIELD_LIST,
	        .offset = AT(workspace_paths),
	        .def = "/home/user",
	        .max = 16,
	        .max_len = 1024,
	        .valid = abs_path_ok,
	        .rule = "an absolute path without '.' or '..' segments, at most 1024 bytes",
	        .pattern = "^/",
	        .check = check_list,
	        .desc = "The directories a migration copies to the new sandbox." },
	{ .path = "spec.migration.keepSourceFor",
	        .type = SK_FIELD_DURATION,
	        .max_len = SK_DURATION_MAX_LEN,
	        .offset = AT(keep_source_ms),
	        .def = "24h",
	        .min = 0,
	        .max = 720 * HOUR_MS,
	        .desc = "Go duration, at most 720h. How long the old sandbox is kept paused "
	                "after a migration before it is deleted." },
	{ .path = "spec.migration.whenIdleFor",
	        .type = SK_FIELD_DURATION,
	        .max_len = SK_DURATION_MAX_LEN,
	        .offset = AT(when_idle_ms),
	        .def = "1m",
	        .min = 0,
	        .max = 24 * HOUR_MS,
	        .desc = "Go duration, at most 24h. A migration starts once the space saw no "
	                "activity for this long (rollout restart --now does not wait)." },
	{ .path = "spec.migration.maxBytes",
	        .type = SK_FIELD_STRING,
	        .offset = AT(max_bytes),
	        .def = "5Gi",
	        .valid = quantity_ok,
	        .rule = "a byte quantity like 5Gi, 500Mi or 1000000",
	        .pattern = "^[0-9]+(Ki|Mi|Gi|Ti|k|M|G|T)?$",
	        .min_len = 1,
	        .max_len = 18,
	        .desc = "The most a migration copies; a larger workspace aborts it." },
	{ .path = "spec.migration.sourcePolicy",
	        .type = SK_FIELD_ENUM,
	        .offset = AT(source_policy),
	        .def = "Delete",
	        .names = deletion_names,
	        .desc = "After keepSourceFor the old sandbox is deleted (Delete) or left "
	                "paused (Retain)." },
	/* spec.network (network.c); no default written: unset is the provider's
	 * own (Allow), and a space without a policy keeps its output */
	{ .path = "spec.network.internet",
	        .type = SK_FIELD_ENUM,
	        .offset = AT(network.internet),
	        .names = net_access_names,
	        .values = net_access_values,
	        .desc = "Egress to addresses allowOut does not list: Allow (when unset) or "
	                "Deny." },
	{ .path = "spec.network.allowOut",
	        .type = SK_FIELD_LIST,
	        .offset = AT(network.allow_out),
	        .max = 64,
	        .max_len = SK_NET_ALLOW_MAX_LEN,
	        .valid = sk_net_allow_ok,
	        .rule = "an IP address, a CIDR or a host name (*. wildcard allowed)",
	        .pattern = "^[A-Za-z0-9*.:/-]+$",
	        .check = sk_net_check_list,
	        .desc = "Destinations always reachable (over denyOut and internet Deny): IP "
	                "addresses, CIDRs and host names such as *.example.com." },
	{ .path = "spec.network.denyOut",
	        .type = SK_FIELD_LIST,
	        .offset = AT(network.deny_out),
	        .max = 64,
	        .max_len = SK_NET_DENY_MAX_LEN,
	        .valid = sk_net_deny_ok,
	        .rule = "an IP address or a CIDR",
	        .pattern = "^[0-9A-Fa-f.:/]+$",
	        .check = sk_net_check_list,
	        .desc = "Destinations never reachable unless allowOut lists them. IP addresses "
	                "and CIDRs (no host names)." },
	{ .path = "spec.network.publicTraffic",
	        .type = SK_FIELD_ENUM,
	        .offset = AT(network.public_traffic),
	        .names = net_access_names,
	        .values = net_access_values,
	        .desc = "Whether the sandbox's URLs answer without its access token: Allow (when "
	                "unset) or Deny." },
	/* spec.storage.volume (storage.c); no default written: a volume is asked
	 * for when any of these is given, the others then take theirs */
	{ .path = "spec.storage.volume.name",
	        .type = SK_FIELD_STRING,
	        .offset = AT(storage.volume_name),
	        .valid = volume_name_ok,
	        .rule = "[A-Za-z0-9_-]{1,63}",
	        .pattern = "^[A-Za-z0-9_-]{1,63}$",
	        .min_len = 1,
	        .max_len = SK_VOLUME_NAME_MAX,
	        .desc = "The provider volume (E2B team volume) mounted into every sandbox of the "
	                "space; made when missing. Default: sk- and the user ID." },
	{ .path = "spec.storage.volume.mountPath",
	        .type = SK_FIELD_STRING,
	        .offset = AT(storage.mount_path),
	        .valid = mount_path_ok,
	        .rule = "an absolute path below / without '.' or '..' segments, at most 1024 "
	                "bytes",
	        .pattern = "^/.",
	        .min_len = 2,
	        .max_len = 1024,
	        .desc = "Where the volume is mounted; its files outlive every sandbox. Default: "
	                "/home/user." },
	{ .path = "spec.storage.volume.deletionPolicy",
	        .type = SK_FIELD_ENUM,
	        .offset = AT(storage.volume_policy),
	        .names = volume_policy_names,
	        .values = volume_policy_values,
	        .desc = "What deleting the UserSpace does to the volume: Retain (when unset) "
	                "keeps it and its files, Delete deletes it after the sandboxes." },
	{ .path = "spec.source.fork.userSpace",
	        .type = SK_FIELD_STRING,
	        .offset = AT(fork_from),
	        .valid = sk_valid_name,
	        .rule = "a DNS-1123 label [a-z0-9-]{1,63}",
	        .pattern = DNS_LABEL_PATTERN,
	        .max_len = 63,
	        .desc = "The UserSpace whose sandbox this space's first sandbox is forked from "
	                "(its files, through the provider's fork; spacectl fork). Used once: "
	                "later sandboxes are plain creates." },
	{ .path = "spec.snapshots.schedule",
	        .type = SK_FIELD_STRING,
	        .offset = AT(snapshot_schedule),
	        .valid = cron_ok,
	        .rule = "a cron schedule in UTC: minute hour day month weekday (*, N, N-M, lists, "
	                "/STEP), or six fields with seconds first",
	        .pattern = "^ *[0-9*/,-]+( +[0-9*/,-]+){4,5} *$",
	        .max_len = 128,
	        .desc = "When a persistent snapshot of the space is taken through the provider "
	                "(E2B), a cron schedule in UTC: 5 fields (minute hour day month weekday), "
	                "or 6 with seconds first. A sleeping sandbox changed since the last "
	                "snapshot is woken for it and put back to sleep." },
	{ .path = "spec.snapshots.keep",
	        .type = SK_FIELD_INT,
	        .offset = AT(snapshot_keep),
	        .min = 1,
	        .max = 100,
	        .desc = "How many scheduled snapshots are kept (7 when unset); the oldest beyond "
	                "it are deleted through the provider." },
};

const size_t sk_spec_n_fields = sizeof(sk_spec_fields) / sizeof(sk_spec_fields[0]);

const int64_t sk_default_sandbox_timeout_ms = HOUR_MS;

/* test/unit/check_schema.c checks that the rows tile the struct; a member
 * that fits in padding would slip through, so the size is pinned here too:
 * a new member needs a row above, then this size. */
#if UINTPTR_MAX == UINT64_MAX
_Static_assert(sizeof(sk_userspace_spec) == 288, "a new spec member needs a row in sk_spec_fields");
#endif

/* ---- access ---- */

const sk_field *
sk_spec_field(const char *path)
{
	for (size_t i = 0; path != NULL && i < sk_spec_n_fields; i++) {
		if (strcmp(sk_spec_fields[i].path, path) == 0)
			return &sk_spec_fields[i];
	}
	return NULL;
}

const char *
sk_spec_template(const char *template_id)
{
	return template_id != NULL ? template_id : sk_spec_field("spec.template")->def;
}

const char *
sk_field_enum_name(const sk_field *f, int value)
{
	for (int i = 0; f->names[i] != NULL; i++) {
		if ((f->values ? f->values[i] : i) == value)
			return f->names[i];
	}
	return NULL;
}

bool
sk_field_enum_value(const sk_field *f, const char *name, int *out)
{
	for (int i = 0; name != NULL && f->names[i] != NULL; i++) {
		if (strcmp(f->names[i], name) == 0) {
			*out = f->values ? f->values[i] : i;
			return true;
		}
	}
	return false;
}

int64_t
sk_field_get_int(const sk_field *f, const sk_userspace_spec *s)
{
	switch (f->type) {
	case SK_FIELD_ENUM:
	case SK_FIELD_INT: return *SK_FIELD_AT(f, s, const int);
	case SK_FIELD_BOOL: return *SK_FIELD_AT(f, s, const bool);
	case SK_FIELD_DURATION: return *SK_FIELD_AT(f, s, const int64_t);
	default: return 0;
	}
}

void
sk_field_set_int(const sk_field *f, sk_userspace_spec *s, int64_t v)
{
	switch (f->type) {
	case SK_FIELD_ENUM:
	case SK_FIELD_INT: *SK_FIELD_AT(f, s, int) = (int)v; break;
	case SK_FIELD_BOOL: *SK_FIELD_AT(f, s, bool) = v != 0; break;
	case SK_FIELD_DURATION: *SK_FIELD_AT(f, s, int64_t) = v; break;
	default: break;
	}
}

int64_t
sk_field_default_int(const sk_field *f)
{
	int64_t ms = 0;
	int e = 0;

	if (f->def == NULL)
		return 0;
	switch (f->type) {
	case SK_FIELD_ENUM: return sk_field_enum_value(f, f->def, &e) ? e : 0;
	case SK_FIELD_BOOL: return strcmp(f->def, "true") == 0;
	case SK_FIELD_DURATION: return sk_duration_parse(f->def, &ms) == SK_OK ? ms : 0;
	default: return 0;
	}
}

json_t *
sk_json_parent(json_t *obj, const char *path, bool create, const char **leaf)
{
	const char *dot;

	while (json_is_object(obj) && (dot = strchr(path, '.')) != NULL) {
		char key[64];
		json_t *next;

		snprintf(key, sizeof(key), "%.*s", (int)(dot - path), path);
		next = json_object_get(obj, key);
		if (next == NULL && create) {
			next = json_object();
			json_object_set_new(obj, key, next);
		}
		obj = next;
		path = dot + 1;
	}
	*leaf = path;
	return json_is_object(obj) ? obj : NULL;
}
