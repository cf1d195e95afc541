/*
 * Unit tests for the spec table (pkg/api/schema.c), row by row: each field
 * validated (its bounds and bad values rejected with messages naming its
 * path), decoded, encoded, defaulted, compared, copied and round-tripped
 * through JSON, BSON and the packed form; the table covers every member of
 * sk_userspace_spec; and the CRD says what the table says, with no spec field
 * the table lacks. Adding a spec field means a row in schema.c and a case in
 * `cases` below (test_every_row_has_a_case fails until it has one).
 */
#include <check.h>
#include <regex.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "../testutil.h"
#include "api/doc.h"
#include "api/errlist.h"
#include "api/kvlist.h"
#include "api/meta.h"
#include "api/names.h"
#include "api/schema.h"
#include "api/strlist.h"
#include "api/userspace.h"
#include "informer/informer.h"
#include "store/store_int.h"

Suite *sk_suite_schema(void);

/* Per row: a valid value that is not the default, and bad values with the
 * error each gets ("path: message"). Values are JSON texts. */
typedef struct row_case {
	const char *path;
	const char *good;
	const char *bad[3];
	const char *want[3];
} row_case;

static const row_case cases[] = {
	{ "spec.userID", "\"bob.2_x-y\"", { "\"a b\"", "\"\"", "7" },
	        { "spec.userID: must match [A-Za-z0-9._-]{1,128} (got \"a b\")",
	                "spec.userID: must match [A-Za-z0-9._-]{1,128} (got \"\")",
	                "spec.userID: must be a string" } },
	{ "spec.provider", "\"cube-2\"", { "\"Cube\"", "\"-a\"" },
	        { "spec.provider: must match a DNS-1123 label [a-z0-9-]{1,63} (got \"Cube\")",
	                "spec.provider: must match a DNS-1123 label [a-z0-9-]{1,63} (got "
	                "\"-a\")" } },
	{ "spec.template", "\"python:3.12/x\"", { "\"a b\"", "\"\"" },
	        { "spec.template: must match [A-Za-z0-9._/:-]{1,128} (got \"a b\")",
	                "spec.template: must match [A-Za-z0-9._/:-]{1,128} (got \"\")" } },
	{ "spec.mode", "\"Paused\"", { "\"paused\"", "true" },
	        { "spec.mode: must be one of: Running, Paused",
	                "spec.mode: must be a string (got a boolean: YAML reads a plain true, yes, "
	                "no, on, off, y or n as one, as kubectl does; quote the value)" } },
	{ "spec.resources.cpuCount", "4", { "0", "65", "\"2\"" },
	        { "spec.resources.cpuCount: must be between 1 and 64",
	                "spec.resources.cpuCount: must be between 1 and 64",
	                "spec.resources.cpuCount: must be an integer" } },
	{ "spec.resources.memoryMB", "2048", { "127", "262145" },
	        { "spec.resources.memoryMB: must be between 128 and 262144",
	                "spec.resources.memoryMB: must be between 128 and 262144" } },
	{ "spec.lifecycle.idleTimeout", "\"2h30m\"", { "\"-1s\"", "\"721h\"", "\"15 minutes\"" },
	        { "spec.lifecycle.idleTimeout: must be a duration like 90s, 15m or 1h30m",
	                "spec.lifecycle.idleTimeout: must be at most 720h",
	                "spec.lifecycle.idleTimeout: must be a duration like 90s, 15m or 1h30m" } },
	{ "spec.lifecycle.onTimeout", "\"kill\"", { "\"Kill\"" },
	        { "spec.lifecycle.onTimeout: must be one of: pause, kill" } },
	{ "spec.lifecycle.autoResume", "false", { "\"false\"" },
	        { "spec.lifecycle.autoResume: must be a boolean" } },
	{ "spec.lifecycle.maxBusy", "\"30m\"", { "\"721h\"", "\"1ms\"", "\"long\"" },
	        { "spec.lifecycle.maxBusy: must be at most 720h",
	                "spec.lifecycle.maxBusy: must be 0 or at least 1s (got \"1ms\")",
	                "spec.lifecycle.maxBusy: must be a duration like 90s, 15m or 1h30m" } },
	{ "spec.lifecycle.archiveAfter", "\"168h\"", { "\"8761h\"", "\"1ms\"", "\"week\"" },
	        { "spec.lifecycle.archiveAfter: must be at most 8760h",
	                "spec.lifecycle.archiveAfter: must be 0 or at least 1s (got \"1ms\")",
	                "spec.lifecycle.archiveAfter: must be a duration like 90s, 15m or "
	                "1h30m" } },
	{ "spec.lifecycle.archive.method", "\"Snapshot\"", { "\"snapshot\"", "1" },
	        { "spec.lifecycle.archive.method: must be one of: ObjectStorage, Snapshot",
	                "spec.lifecycle.archive.method: must be a string" } },
	{ "spec.lifecycle.busy", "\"Ignore\"", { "\"ignore\"", "true" },
	        { "spec.lifecycle.busy: must be one of: Processes, Ignore",
	                "spec.lifecycle.busy: must be a string (got a boolean: YAML reads a plain "
	                "true, yes, no, on, off, y or n as one, as kubectl does; quote the "
	                "value)" } },
	{ "spec.env", "{\"API_MODE\": \"fast\", \"EMPTY\": \"\"}",
	        { "{\"1X\": \"v\"}", "{\"A\": 1}", "[]" },
	        { "spec.env.1X: key must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*)",
	                "spec.env.A: must be a string", "spec.env: must be an object" } },
	{ "spec.metadata", "{\"project\": \"p-1\"}",
	        { "{\"user_id\": \"x\"}", "{\"k\": \"a b\"}", "{\"$k\": \"v\"}" },
	        { "spec.metadata.user_id: key \"user_id\" is reserved (spacekeeper sets it on the "
	          "sandbox)",
	                "spec.metadata.k: value must match [A-Za-z0-9._-]{0,256}",
	                "spec.metadata.$k: key must not start with '$' or contain '.'" } },
	{ "spec.deletionPolicy", "\"Retain\"", { "\"Keep\"" },
	        { "spec.deletionPolicy: must be one of: Delete, Retain" } },
	{ "spec.health.unhealthyAfter", "\"45s\"", { "\"999ms\"", "\"24h0m1s\"" },
	        { "spec.health.unhealthyAfter: must be between 1s and 24h",
	                "spec.health.unhealthyAfter: must be between 1s and 24h" } },
	{ "spec.health.remediation", "\"Replace\"", { "\"replace\"" },
	        { "spec.health.remediation: must be one of: Replace, Report" } },
	{ "spec.health.onLoss", "\"Restore\"", { "\"restore\"" },
	        { "spec.health.onLoss: must be one of: Report, Restore" } },
	{ "spec.updateStrategy", "\"Migrate\"", { "\"migrate\"" },
	        { "spec.updateStrategy: must be one of: Report, Migrate" } },
	{ "spec.workspace.paths", "[\"/home/user\", \"/data\"]",
	        { "[\"home\"]", "\"/home/user\"", "[\"/a/../b\"]" },
	        { "spec.workspace.paths[0]: must be an absolute path without '.' or '..' "
	          "segments, at most 1024 bytes (got \"home\")",
	                "spec.workspace.paths: must be a list of strings",
	                "spec.workspace.paths[0]: must be an absolute path without '.' or '..' "
	                "segments, at most 1024 bytes (got \"/a/../b\")" } },
	{ "spec.migration.keepSourceFor", "\"10s\"", { "\"721h\"", "\"a day\"" },
	        { "spec.migration.keepSourceFor: must be at most 720h",
	                "spec.migration.keepSourceFor: must be a duration like 90s, 15m or "
	                "1h30m" } },
	{ "spec.migration.whenIdleFor", "\"0s\"", { "\"25h\"" },
	        { "spec.migration.whenIdleFor: must be at most 24h" } },
	{ "spec.migration.maxBytes", "\"750Mi\"", { "\"5GB\"", "\"\"", "5" },
	        { "spec.migration.maxBytes: must match a byte quantity like 5Gi, 500Mi or 1000000 "
	          "(got \"5GB\")",
	                "spec.migration.maxBytes: must match a byte quantity like 5Gi, 500Mi or "
	                "1000000 (got \"\")",
	                "spec.migration.maxBytes: must be a string" } },
	{ "spec.migration.sourcePolicy", "\"Retain\"", { "\"Keep\"" },
	        { "spec.migration.sourcePolicy: must be one of: Delete, Retain" } },
	{ "spec.network.internet", "\"Deny\"", { "\"deny\"", "false" },
	        { "spec.network.internet: must be one of: Allow, Deny",
	                "spec.network.internet: must be a string (got a boolean: YAML reads a "
	                "plain true, yes, no, on, off, y or n as one, as kubectl does; quote the "
	                "value)" } },
	{ "spec.network.allowOut",
	        "[\"10.0.0.0/8\", \"*.pypi.org\", \"2001:db8::/32\", \"1.2.3.4\"]",
	        { "[\"10.0.0.0/33\"]", "[\"10.0.0.1\", \"*.-bad.com\"]", "[]" },
	        { "spec.network.allowOut[0]: must be an IP address, a CIDR or a host name (*. "
	          "wildcard allowed) (got \"10.0.0.0/33\")",
	                "spec.network.allowOut[1]: must be an IP address, a CIDR or a host name "
	                "(*. wildcard allowed) (got \"*.-bad.com\")",
	                "spec.network.allowOut: must have 1 to 64 entries" } },
	{ "spec.network.denyOut", "[\"169.254.0.0/16\", \"fd00::1\"]",
	        { "[\"10.0.0.0/8\", \"evil.example.com\"]", "[\"300.1.1.1\"]", "\"10.0.0.0/8\"" },
	        { "spec.network.denyOut[1]: a host name is allowed in allowOut only; denyOut "
	          "takes IP addresses and CIDRs (got \"evil.example.com\")",
	                "spec.network.denyOut[0]: must be an IP address or a CIDR (got "
	                "\"300.1.1.1\")",
	                "spec.network.denyOut: must be a list of strings" } },
	{ "spec.network.publicTraffic", "\"Deny\"", { "\"Private\"" },
	        { "spec.network.publicTraffic: must be one of: Allow, Deny" } },
	{ "spec.storage.volume.name", "\"alice_home-2\"", { "\"alice.home\"", "\"\"", "3" },
	        { "spec.storage.volume.name: must match [A-Za-z0-9_-]{1,63} (got \"alice.home\")",
	                "spec.storage.volume.name: must match [A-Za-z0-9_-]{1,63} (got \"\")",
	                "spec.storage.volume.name: must be a string" } },
	{ "spec.storage.volume.mountPath", "\"/workspace\"", { "\"/\"", "\"data\"", "\"/a/../b\"" },
	        { "spec.storage.volume.mountPath: must match an absolute path below / without '.' "
	          "or '..' segments, at most 1024 bytes (got \"/\")",
	                "spec.storage.volume.mountPath: must match an absolute path below / "
	                "without "
	                "'.' or '..' segments, at most 1024 bytes (got \"data\")",
	                "spec.storage.volume.mountPath: must match an absolute path below / "
	                "without "
	                "'.' or '..' segments, at most 1024 bytes (got \"/a/../b\")" } },
	{ "spec.storage.volume.deletionPolicy", "\"Delete\"", { "\"delete\"" },
	        { "spec.storage.volume.deletionPolicy: must be one of: Retain, Delete" } },
	{ "spec.source.fork.userSpace", "\"alice\"", { "\"Alice\"", "\"\"", "{}" },
	        { "spec.source.fork.userSpace: must match a DNS-1123 label [a-z0-9-]{1,63} (got "
	          "\"Alice\")",
	                "spec.source.fork.userSpace: must match a DNS-1123 label [a-z0-9-]{1,63} "
	                "(got \"\")",
	                "spec.source.fork.userSpace: must be a string" } },
	{ "spec.snapshots.schedule", "\"0 3 * * *\"", { "\"0 3 * *\"", "\"61 * * * *\"", "5" },
	        { "spec.snapshots.schedule: must match a cron schedule in UTC: minute hour day "
	          "month "
	          "weekday (*, N, N-M, lists, /STEP), or six fields with seconds first (got \"0 3 "
	          "* "
	          "*\")",
	                "spec.snapshots.schedule: must match a cron schedule in UTC: minute hour "
	                "day "
	                "month weekday (*, N, N-M, lists, /STEP), or six fields with seconds first "
	                "(got \"61 * * * *\")",
	                "spec.snapshots.schedule: must be a string" } },
	{ "spec.snapshots.keep", "3", { "0", "101" },
	        { "spec.snapshots.keep: must be between 1 and 100",
	                "spec.snapshots.keep: must be between 1 and 100" } },
};

#define N_CASES (sizeof(cases) / sizeof(cases[0]))

static const row_case *
case_of(const sk_field *f)
{
	for (size_t i = 0; i < N_CASES; i++) {
		if (strcmp(cases[i].path, f->path) == 0)
			return &cases[i];
	}
	ck_abort_msg("%s: no test case", f->path);
	return NULL;
}

static json_t *
json_text(const char *text)
{
	json_error_t jerr;
	json_t *v = json_loads(text, JSON_DECODE_ANY, &jerr);

	ck_assert_msg(v != NULL, "%s: %s", text, jerr.text);
	return v;
}

/* A minimal valid document with value (stolen; NULL: none) at path. */
static json_t *
doc_with(const char *path, json_t *value)
{
	json_t *root = json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion", SK_API_VERSION,
	        "kind", SK_KIND_USERSPACE, "metadata", "name", "t", "spec", "userID", "u1");
	json_t *parent;
	const char *leaf;

	if (value != NULL) {
		parent = sk_json_parent(root, path, true, &leaf);
		json_object_set_new(parent, leaf, value);
	}
	return root;
}

/* The errors of validating root (taken), "path: message" one per line. */
static char *
errors_of(json_t *root)
{
	sk_doc *d = sk_doc_from_json(root, NULL);
	sk_errlist errs = { NULL, 0 };
	sk_buf b = SK_BUF_INIT(1 << 20);

	json_decref(root);
	sk_userspace_validate(d, &errs);
	for (size_t i = 0; i < errs.len; i++)
		sk_buf_printf(
		        &b, "%s%s: %s", i ? "\n" : "", errs.items[i].path, errs.items[i].message);
	sk_errlist_dispose(&errs);
	sk_doc_free(d);
	return b.data ? sk_buf_detach(&b) : strdup("");
}

static sk_userspace *
decode(json_t *root)
{
	sk_userspace *us = NULL;
	sk_error err = { 0 };

	ck_assert_msg(sk_userspace_decode(root, &us, &err) == SK_OK, "decode: %s", err.message);
	json_decref(root);
	return us;
}

/* The encoded value of f in us (new reference; NULL when left out). */
static json_t *
encoded(const sk_userspace *us, const sk_field *f)
{
	json_t *spec = sk_userspace_spec_to_json(&us->spec), *parent, *v;
	const char *leaf;

	parent = sk_json_parent(spec, f->path + strlen("spec."), false, &leaf);
	v = json_object_get(parent, leaf);
	json_incref(v);
	json_decref(spec);
	return v;
}

static void
assert_encoded(const sk_userspace *us, const sk_field *f, const char *want, const char *how)
{
	json_t *got = encoded(us, f), *exp = json_text(want);
	char *g = got ? json_dumps(got, JSON_ENCODE_ANY) : NULL;

	ck_assert_msg(json_equal(got, exp), "%s (%s): got %s, want %s", f->path, how,
	        g ? g : "nothing", want);
	free(g);
	json_decref(got);
	json_decref(exp);
}

static sk_userspace *
decode_good(const sk_field *f)
{
	return decode(doc_with(f->path, json_text(case_of(f)->good)));
}

START_TEST(test_every_row_has_a_case)
{
	ck_assert_uint_eq(N_CASES, sk_spec_n_fields);
	for (size_t i = 0; i < sk_spec_n_fields; i++)
		ck_assert_ptr_nonnull(case_of(&sk_spec_fields[i]));
	for (size_t i = 0; i < N_CASES; i++)
		ck_assert_msg(sk_spec_field(cases[i].path) != NULL, "%s: no row", cases[i].path);
	/* spec.KEY, spec.GROUP.KEY or spec.GROUP.SUB.KEY: the depths the validator walks. */
	for (size_t i = 0; i < sk_spec_n_fields; i++) {
		const char *p = sk_spec_fields[i].path, *rest = p + strlen("spec.");
		int dots = 0;
		for (const char *c = rest; *c; c++)
			dots += *c == '.';
		ck_assert_msg(strncmp(p, "spec.", 5) == 0 && dots <= 2, "%s: too deep", p);
	}
}
END_TEST

/* Valid, decoded into its member (not the default), encoded back as written. */
START_TEST(test_row_decode_encode)
{
	const sk_field *f = &sk_spec_fields[_i];
	char *errs = errors_of(doc_with(f->path, json_text(case_of(f)->good)));
	sk_userspace *us = decode_good(f), *dflt = decode(doc_with(f->path, NULL));

	ck_assert_msg(errs[0] == '\0', "%s: %s", f->path, errs);
	assert_encoded(us, f, case_of(f)->good, "encode");
	ck_assert_msg(
	        !sk_userspace_spec_equal(&us->spec, &dflt->spec), "%s: equal to default", f->path);
	free(errs);
	sk_userspace_free(dflt);
	sk_userspace_free(us);
}
END_TEST

START_TEST(test_row_rejects)
{
	const sk_field *f = &sk_spec_fields[_i];
	const row_case *c = case_of(f);

	for (size_t i = 0; i < 3 && c->bad[i] != NULL; i++) {
		char *errs = errors_of(doc_with(f->path, json_text(c->bad[i])));
		ck_assert_msg(strcmp(errs, c->want[i]) == 0, "%s = %s: got \"%s\", want \"%s\"",
		        f->path, c->bad[i], errs, c->want[i]);
		free(errs);
	}
}
END_TEST

static void
assert_valid(const sk_field *f, json_t *v, bool want)
{
	char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	char *errs = errors_of(doc_with(f->path, v));

	if (want)
		ck_assert_msg(errs[0] == '\0', "%s = %.60s: %s", f->path, text, errs);
	else
		ck_assert_msg(
		        strncmp(errs, f->path, strlen(f->path)) == 0 && strchr(errs, '\n') == NULL,
		        "%s = %.60s: got \"%s\"", f->path, text, errs);
	free(errs);
	free(text);
}

static json_t *
duration_text(int64_t ms)
{
	char buf[64];

	sk_duration_format(ms, buf, sizeof(buf));
	return json_string(buf);
}

/* n copies of c (the first character of a row's good value); a path ('/')
 * is "/" and n - 1 copies of 'a'. */
static json_t *
n_chars(int n, char c)
{
	char *s = sk_calloc((size_t)n + 1, 1);
	json_t *v;

	memset(s, c == '/' ? 'a' : c, (size_t)n);
	if (c == '/' && n > 0)
		s[0] = '/';
	v = json_string(s);
	free(s);
	return v;
}

static json_t *
n_entries(int64_t n)
{
	json_t *m = json_object();

	for (int64_t i = 0; i < n; i++) {
		char k[32];
		snprintf(k, sizeof(k), "K%lld", (long long)i);
		json_object_set_new(m, k, json_string("v"));
	}
	return m;
}

/* n valid entries of a LIST row (paths; CIDRs for spec.network's lists). */
static json_t *
n_paths(const sk_field *f, int64_t n)
{
	json_t *a = json_array();
	bool net = strncmp(f->path, "spec.network.", 13) == 0;

	for (int64_t i = 0; i < n; i++) {
		char p[32];
		snprintf(p, sizeof(p), net ? "10.%lld.0.0/16" : "/w/%lld", (long long)i);
		json_array_append_new(a, json_string(p));
	}
	return a;
}

/* The longest entry a LIST row takes (max_len bytes), valid; one more
 * character makes it too long. */
static char *
longest_entry(const sk_field *f)
{
	char *s = calloc(1, (size_t)f->max_len + 2);

	ck_assert_ptr_nonnull(s);
	if (strcmp(f->path, "spec.network.denyOut") == 0) {
		strcpy(s, "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255/128");
	} else if (strcmp(f->path, "spec.network.allowOut") == 0) {
		/* "*." and a host name of 253: labels of 63, 63, 63 and 61 */
		memset(s, 'a', 255);
		s[0] = '*';
		s[1] = s[65] = s[129] = s[193] = '.';
	} else {
		s[0] = '/';
		memset(s + 1, 'w', (size_t)f->max_len - 1);
	}
	ck_assert_int_eq((int)strlen(s), f->max_len);
	return s;
}

static json_t *
one_entry(const char *s)
{
	json_t *a = json_array();

	json_array_append_new(a, json_string(s));
	return a;
}

/* The table's bounds are the validator's: each limit accepted, one past it rejected. */
START_TEST(test_row_bounds)
{
	const sk_field *f = &sk_spec_fields[_i];
	char *entry;

	switch (f->type) {
	case SK_FIELD_INT:
		assert_valid(f, json_integer(f->min), true);
		assert_valid(f, json_integer(f->max), true);
		assert_valid(f, json_integer(f->min - 1), false);
		assert_valid(f, json_integer(f->max + 1), false);
		break;
	case SK_FIELD_DURATION:
		assert_valid(f, duration_text(f->min), true);
		assert_valid(f, duration_text(f->max), true);
		if (f->min > 0) /* below 0 cannot be written: test_row_rejects has "-1s" */
			assert_valid(f, duration_text(f->min - 1), false);
		assert_valid(f, duration_text(f->max + 1), false);
		/* 1s in max_len characters, then in one more */
		assert_valid(f, json_sprintf("%0*ds", f->max_len - 1, 1), true);
		assert_valid(f, json_sprintf("%0*ds", f->max_len, 1), false);
		break;
	case SK_FIELD_STRING:
		if (strcmp(f->path, "spec.snapshots.schedule") == 0) {
			/* a schedule is no run of one character: one padded with spaces */
			assert_valid(f, json_sprintf("%-*s", f->max_len, "0 3 * * *"), true);
			assert_valid(f, json_sprintf("%-*s", f->max_len + 1, "0 3 * * *"), false);
			break;
		}
		assert_valid(f, n_chars(f->max_len, case_of(f)->good[1]), true);
		assert_valid(f, n_chars(f->max_len + 1, case_of(f)->good[1]), false);
		break;
	case SK_FIELD_MAP:
		assert_valid(f, n_entries(f->max), true);
		assert_valid(f, n_entries(f->max + 1), false);
		break;
	case SK_FIELD_LIST:
		assert_valid(f, n_paths(f, f->max), true);
		assert_valid(f, n_paths(f, f->max + 1), false);
		assert_valid(f, n_paths(f, 0), false);
		entry = longest_entry(f);
		assert_valid(f, one_entry(entry), true);
		entry[f->max_len] = '1';
		assert_valid(f, one_entry(entry), false);
		free(entry);
		break;
	default: break;
	}
}
END_TEST

/* Absent: the default in the struct and in the output; no default: left out. */
START_TEST(test_row_default)
{
	const sk_field *f = &sk_spec_fields[_i];
	sk_userspace *us = decode(doc_with(f->path, NULL));
	json_t *got = encoded(us, f);
	int64_t ms = 0;

	if (f->required) {
		ck_assert_ptr_nonnull(got);
	} else if (f->def == NULL) {
		ck_assert_msg(got == NULL, "%s: written without a value", f->path);
		ck_assert_int_eq(sk_field_get_int(f, &us->spec), 0);
	} else if (f->type == SK_FIELD_STRING) {
		ck_assert_str_eq(*SK_FIELD_AT(f, &us->spec, char *), f->def);
		ck_assert_str_eq(json_string_value(got), f->def);
	} else if (f->type == SK_FIELD_DURATION) {
		ck_assert_int_eq(sk_duration_parse(f->def, &ms), SK_OK);
		ck_assert_int_eq(sk_field_get_int(f, &us->spec), ms);
		ck_assert_int_eq(sk_duration_parse(json_string_value(got), &ms), SK_OK);
		ck_assert_int_eq(sk_field_get_int(f, &us->spec), ms);
	} else if (f->type == SK_FIELD_LIST) {
		const sk_strlist *l = SK_FIELD_AT(f, &us->spec, sk_strlist);
		ck_assert_uint_eq(l->len, 1);
		ck_assert_str_eq(l->items[0], f->def);
		ck_assert_str_eq(json_string_value(json_array_get(got, 0)), f->def);
		ck_assert_uint_eq(json_array_size(got), 1);
	} else if (f->type == SK_FIELD_BOOL) {
		ck_assert_int_eq(sk_field_get_int(f, &us->spec), strcmp(f->def, "true") == 0);
		ck_assert_int_eq(json_is_true(got), strcmp(f->def, "true") == 0);
	} else {
		ck_assert_str_eq(json_string_value(got), f->def);
		ck_assert_int_eq(sk_field_get_int(f, &us->spec), sk_field_default_int(f));
	}
	json_decref(got);
	sk_userspace_free(us);
}
END_TEST

/* JSON, BSON and packed round trips keep the value; the copy is equal. */
START_TEST(test_row_round_trips)
{
	const sk_field *f = &sk_spec_fields[_i];
	const char *good = case_of(f)->good;
	sk_userspace *us = decode_good(f), *back = NULL, *dup = sk_userspace_dup(us);
	sk_error err = { 0 };
	bson_t *doc;
	sk_packed_userspace *p;

	ck_assert(sk_userspace_spec_equal(&us->spec, &dup->spec));
	assert_encoded(dup, f, good, "dup");
	back = decode(sk_userspace_to_json(us));
	assert_encoded(back, f, good, "JSON");
	ck_assert(sk_userspace_spec_equal(&us->spec, &back->spec));
	sk_userspace_free(back);
	doc = sk_store_doc_from_userspace(us, &err);
	ck_assert_msg(doc != NULL, "%s", err.message);
	ck_assert_int_eq(sk_store_userspace_from_doc(doc, &back, &err), 0);
	assert_encoded(back, f, good, "BSON");
	ck_assert(sk_userspace_spec_equal(&us->spec, &back->spec));
	sk_userspace_free(back);
	bson_destroy(doc);
	p = sk_store_pack(us, &err);
	ck_assert_int_eq(sk_store_unpack(p, &back, &err), 0);
	assert_encoded(back, f, good, "packed");
	ck_assert(sk_userspace_spec_equal(&us->spec, &back->spec));
	sk_packed_free(p);
	sk_userspace_free(back);
	sk_userspace_free(dup);
	sk_userspace_free(us);
}
END_TEST

/* A change of the field is more than a status change, in the packed compare. */
START_TEST(test_row_not_status_only)
{
	const sk_field *f = &sk_spec_fields[_i];
	sk_userspace *us = decode_good(f), *dflt = decode(doc_with(f->path, NULL));
	sk_error err = { 0 };
	sk_packed_userspace *a = sk_store_pack(us, &err), *b = sk_store_pack(dflt, &err);

	ck_assert(a != NULL && b != NULL);
	ck_assert_msg(!sk_packed_status_only_change(a, b), "%s", f->path);
	ck_assert(!sk_informer_status_only_change(us, dflt));
	sk_packed_free(a);
	sk_packed_free(b);
	sk_userspace_free(dflt);
	sk_userspace_free(us);
}
END_TEST

static size_t
type_size(sk_field_type t, size_t *align)
{
	switch (t) {
	case SK_FIELD_STRING: *align = alignof(char *); return sizeof(char *);
	case SK_FIELD_ENUM:
	case SK_FIELD_INT: *align = alignof(int); return sizeof(int);
	case SK_FIELD_BOOL: *align = alignof(bool); return sizeof(bool);
	case SK_FIELD_DURATION: *align = alignof(int64_t); return sizeof(int64_t);
	case SK_FIELD_MAP: *align = alignof(sk_kvlist); return sizeof(sk_kvlist);
	case SK_FIELD_LIST: *align = alignof(sk_strlist); return sizeof(sk_strlist);
	}
	return 0;
}

static size_t
align_up(size_t n, size_t a)
{
	return (n + a - 1) / a * a;
}

/* The rows tile sk_userspace_spec with nothing but padding between them: a
 * member without a row (or a row with the wrong type) breaks the tiling. */
START_TEST(test_table_covers_struct)
{
	size_t end = 0, align = 1;

	for (size_t off = 0; off < sizeof(sk_userspace_spec);) {
		const sk_field *next = NULL;
		for (size_t i = 0; i < sk_spec_n_fields; i++) {
			if (sk_spec_fields[i].offset >= off &&
			        (next == NULL || sk_spec_fields[i].offset < next->offset))
				next = &sk_spec_fields[i];
		}
		if (next == NULL)
			break;
		size_t size = type_size(next->type, &align);
		ck_assert_msg(next->offset == align_up(end, align), "%s at %zu: a gap after %zu",
		        next->path, next->offset, end);
		end = next->offset + size;
		off = end;
	}
	ck_assert_uint_eq(align_up(end, alignof(sk_userspace_spec)), sizeof(sk_userspace_spec));
}
END_TEST

/* The object of a row: "spec", "spec.lifecycle". */
static bool
same_object(const sk_field *a, const sk_field *b)
{
	size_t n = (size_t)(strrchr(a->path, '.') - a->path);

	return (size_t)(strrchr(b->path, '.') - b->path) == n && strncmp(a->path, b->path, n) == 0;
}

/* Rows of one group (spec.lifecycle.*) are adjacent: the validator checks
 * each group object once, at its first row. */
START_TEST(test_groups_adjacent)
{
	for (size_t i = 0; i < sk_spec_n_fields; i++) {
		for (size_t k = i + 2; k < sk_spec_n_fields; k++) {
			const sk_field *a = &sk_spec_fields[i], *b = &sk_spec_fields[k];
			if (!same_object(a, b) || strchr(a->path + strlen("spec."), '.') == NULL)
				continue;
			for (size_t j = i + 1; j < k; j++)
				ck_assert_msg(same_object(a, &sk_spec_fields[j]),
				        "%s: apart from %s", b->path, a->path);
		}
	}
}
END_TEST

/* Each string rule agrees with the CRD's pattern and length limits. */
START_TEST(test_string_rules_match_patterns)
{
	static const char *const probes[] = { "a", "A", "z9", "a-b", "-a", "a-", "a.b", "a_b",
		"a/b:c", "a b", "", "\xc3\xbc", "ab$",
		"abcdefghijabcdefghijabcdefghijabcdefghij"
		"abcdefghijabcdefghijabc" };

	for (size_t i = 0; i < sk_spec_n_fields; i++) {
		const sk_field *f = &sk_spec_fields[i];
		regex_t re;

		if (f->type != SK_FIELD_STRING)
			continue;
		ck_assert_int_eq(regcomp(&re, f->pattern, REG_EXTENDED | REG_NOSUB), 0);
		for (size_t j = 0; j < sizeof(probes) / sizeof(probes[0]); j++) {
			int n = (int)strlen(probes[j]);
			bool crd = regexec(&re, probes[j], 0, NULL, 0) == 0 && n >= f->min_len &&
			        (f->max_len == 0 || n <= f->max_len);
			ck_assert_msg(crd == f->valid(probes[j]), "%s: \"%s\": CRD %d, C %d",
			        f->path, probes[j], crd, !crd);
		}
		regfree(&re);
	}
}
END_TEST

/* ---- the CRD ---- */

static json_t *crd_root;
static sk_doclist crd_docs;

static void
crd_load(void)
{
	sk_error err = { 0 };

	ck_assert_msg(sk_doc_load_path(sk_test_path("crds/spacekeeper.dev_userspaces.yaml"),
	                      &crd_docs, &err) == SK_OK,
	        "%s", err.message);
	crd_root = sk_doc_root(crd_docs.items[0]);
}

static void
crd_unload(void)
{
	sk_doclist_dispose(&crd_docs);
}

/* The openAPIV3Schema node of spec. */
static json_t *
crd_spec(void)
{
	json_t *v =
	        json_array_get(json_object_get(json_object_get(crd_root, "spec"), "versions"), 0);

	v = json_object_get(json_object_get(v, "schema"), "openAPIV3Schema");
	return json_object_get(json_object_get(v, "properties"), "spec");
}

/* The schema of a field path under spec, and the object schema holding it. */
static json_t *
crd_node(const char *path, json_t **parent)
{
	json_t *node = crd_spec();
	const char *p = path + strlen("spec.");

	*parent = node;
	while (node != NULL && *p) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);
		char key[64];

		snprintf(key, sizeof(key), "%.*s", (int)n, p);
		*parent = node;
		node = json_object_get(json_object_get(node, "properties"), key);
		p += dot ? n + 1 : n;
	}
	return node;
}

static const char *
crd_type(sk_field_type t)
{
	switch (t) {
	case SK_FIELD_INT: return "integer";
	case SK_FIELD_BOOL: return "boolean";
	case SK_FIELD_MAP: return "object";
	case SK_FIELD_LIST: return "array";
	default: return "string";
	}
}

static bool
str_eq(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static int64_t
crd_int(json_t *node, const char *key)
{
	return json_integer_value(json_object_get(node, key));
}

static bool
in_required(json_t *parent, const char *leaf)
{
	json_t *v;
	size_t i;

	json_array_foreach(json_object_get(parent, "required"), i, v)
	{
		if (str_eq(json_string_value(v), leaf))
			return true;
	}
	return false;
}

static void
crd_check_default(const sk_field *f, json_t *node)
{
	json_t *d = json_object_get(node, "default");
	int64_t a = 0, b = 0;

	if (f->def == NULL) {
		ck_assert_msg(d == NULL, "%s: CRD has a default, the table none", f->path);
	} else if (f->type == SK_FIELD_BOOL) {
		ck_assert_msg(
		        json_is_boolean(d) && json_is_true(d) == (strcmp(f->def, "true") == 0),
		        "%s: default", f->path);
	} else if (f->type == SK_FIELD_LIST) {
		ck_assert_msg(json_array_size(d) == 1 &&
		                str_eq(json_string_value(json_array_get(d, 0)), f->def),
		        "%s: default", f->path);
	} else if (f->type == SK_FIELD_DURATION) {
		ck_assert_msg(json_is_string(d) &&
		                sk_duration_parse(json_string_value(d), &a) == 0 &&
		                sk_duration_parse(f->def, &b) == 0 && a == b,
		        "%s: default", f->path);
	} else {
		ck_assert_msg(str_eq(json_string_value(d), f->def), "%s: default %s, table %s",
		        f->path, json_string_value(d), f->def);
	}
}

static void
crd_check_enum(const sk_field *f, json_t *node)
{
	json_t *e = json_object_get(node, "enum");
	size_t n = 0;

	while (f->names[n] != NULL)
		n++;
	ck_assert_msg(json_array_size(e) == n, "%s: enum size", f->path);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(str_eq(json_string_value(json_array_get(e, i)), f->names[i]),
		        "%s: enum[%zu]", f->path, i);
}

/* The CEL rule and message the validator's duration bounds amount to. */
static void
crd_check_duration(const sk_field *f, json_t *node)
{
	json_t *rule = json_array_get(json_object_get(node, "x-kubernetes-validations"), 0);
	char lo[32], hi[32], want[256], msg[128];

	sk_duration_format(f->min, lo, sizeof(lo));
	sk_duration_format(f->max, hi, sizeof(hi));
	if (f->min == 0) {
		snprintf(want, sizeof(want),
		        "duration(self) >= duration('0s') && duration(self) <= duration('%s')", hi);
		snprintf(msg, sizeof(msg), "must be at most %s", hi);
	} else if (f->min == 1) {
		snprintf(want, sizeof(want),
		        "duration(self) > duration('0s') && duration(self) <= duration('%s')", hi);
		snprintf(msg, sizeof(msg), "must be greater than 0 and at most %s", hi);
	} else {
		snprintf(want, sizeof(want),
		        "duration(self) >= duration('%s') && duration(self) <= duration('%s')", lo,
		        hi);
		snprintf(msg, sizeof(msg), "must be between %s and %s", lo, hi);
	}
	ck_assert_msg(str_eq(json_string_value(json_object_get(rule, "rule")), want),
	        "%s: rule, want %s", f->path, want);
	ck_assert_msg(str_eq(json_string_value(json_object_get(rule, "message")), msg),
	        "%s: message, want %s", f->path, msg);
	ck_assert_msg(json_object_get(node, "pattern") != NULL, "%s: pattern", f->path);
	ck_assert_msg(crd_int(node, "maxLength") == f->max_len, "%s: maxLength", f->path);
	/* 0 means something (always on): "1ns" must not read as it */
	rule = json_array_get(json_object_get(node, "x-kubernetes-validations"), 1);
	ck_assert_msg(f->min != 0 ||
	                str_eq(json_string_value(json_object_get(rule, "rule")),
	                        "duration(self) == duration('0s') || duration(self) >= "
	                        "duration('1s')"),
	        "%s: the 0-or-at-least-1s rule", f->path);
}

static void
crd_check_bounds(const sk_field *f, json_t *node)
{
	switch (f->type) {
	case SK_FIELD_STRING:
		ck_assert_msg(
		        str_eq(json_string_value(json_object_get(node, "pattern")), f->pattern),
		        "%s: pattern", f->path);
		ck_assert_msg(crd_int(node, "minLength") == f->min_len, "%s: minLength", f->path);
		ck_assert_msg(crd_int(node, "maxLength") == f->max_len, "%s: maxLength", f->path);
		break;
	case SK_FIELD_ENUM: crd_check_enum(f, node); break;
	case SK_FIELD_INT:
		ck_assert_msg(crd_int(node, "minimum") == f->min, "%s: minimum", f->path);
		ck_assert_msg(crd_int(node, "maximum") == f->max, "%s: maximum", f->path);
		break;
	case SK_FIELD_DURATION: crd_check_duration(f, node); break;
	case SK_FIELD_MAP:
		ck_assert_msg(
		        crd_int(node, "maxProperties") == f->max, "%s: maxProperties", f->path);
		ck_assert_msg(
		        str_eq(json_string_value(json_object_get(
		                       json_object_get(node, "additionalProperties"), "type")),
		                "string"),
		        "%s: values must be strings", f->path);
		break;
	case SK_FIELD_LIST:
		ck_assert_msg(crd_int(node, "maxItems") == f->max, "%s: maxItems", f->path);
		ck_assert_msg(crd_int(node, "minItems") == 1, "%s: minItems", f->path);
		ck_assert_msg(str_eq(json_string_value(json_object_get(
		                             json_object_get(node, "items"), "pattern")),
		                      f->pattern),
		        "%s: items pattern", f->path);
		ck_assert_msg(crd_int(json_object_get(node, "items"), "maxLength") == f->max_len,
		        "%s: items maxLength", f->path);
		break;
	case SK_FIELD_BOOL: break;
	}
}

START_TEST(test_crd_row)
{
	const sk_field *f = &sk_spec_fields[_i];
	json_t *parent, *node;

	crd_load();
	node = crd_node(f->path, &parent);
	ck_assert_msg(node != NULL, "%s: not in the CRD", f->path);
	ck_assert_msg(str_eq(json_string_value(json_object_get(node, "type")), crd_type(f->type)),
	        "%s: type", f->path);
	ck_assert_msg(str_eq(json_string_value(json_object_get(node, "description")), f->desc),
	        "%s: description", f->path);
	ck_assert_msg(in_required(parent, strrchr(f->path, '.') + 1) == f->required, "%s: required",
	        f->path);
	crd_check_default(f, node);
	crd_check_bounds(f, node);
	crd_unload();
}
END_TEST

/* Every leaf of the CRD's spec (a property without properties) is a row. */
static void
crd_walk(json_t *node, const char *path, size_t *n)
{
	json_t *props = json_object_get(node, "properties"), *child;
	const char *key;

	if (props == NULL) {
		ck_assert_msg(
		        sk_spec_field(path) != NULL, "%s: in the CRD, not in the table", path);
		(*n)++;
		return;
	}
	json_object_foreach(props, key, child)
	{
		char sub[128];
		snprintf(sub, sizeof(sub), "%s.%s", path, key);
		crd_walk(child, sub, n);
	}
}

START_TEST(test_crd_has_only_table_fields)
{
	size_t n = 0;

	crd_load();
	crd_walk(crd_spec(), "spec", &n);
	ck_assert_uint_eq(n, sk_spec_n_fields);
	crd_unload();
}
END_TEST

/* The CEL rule on spec.metadata reserves the keys the C validator reserves
 * (sk_reserved_metadata_key), no fewer and no more. */
START_TEST(test_crd_reserved_metadata_keys)
{
	static const char *const keys[] = { SK_META_USER_ID, SK_META_USERSPACE,
		SK_META_USERSPACE_UID, SK_META_MANAGED_BY, SK_META_NETWORK, SK_META_SNAPSHOT,
		SK_META_MIGRATION };
	json_t *node, *parent, *rules, *r;
	const char *rule = NULL, *p;
	size_t i, listed = 0;

	crd_load();
	node = crd_node("spec.metadata", &parent);
	ck_assert_ptr_nonnull(node);
	rules = json_object_get(node, "x-kubernetes-validations");
	json_array_foreach(rules, i, r)
	{
		const char *text = json_string_value(json_object_get(r, "rule"));
		if (text != NULL && strstr(text, " in [") != NULL)
			rule = text;
	}
	ck_assert_msg(rule != NULL, "spec.metadata: no CEL rule with the reserved keys");
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		char quoted[64];
		snprintf(quoted, sizeof(quoted), "'%s'", keys[i]);
		ck_assert_msg((strstr(rule, quoted) != NULL) == sk_reserved_metadata_key(keys[i]),
		        "%s: reserved in C %d, in the CRD's rule %d", keys[i],
		        sk_reserved_metadata_key(keys[i]), strstr(rule, quoted) != NULL);
	}
	for (p = strchr(rule, '\''); p != NULL; p = strchr(p + 1, '\'')) {
		const char *end = strchr(p + 1, '\'');
		char key[64];
		ck_assert_ptr_nonnull(end);
		snprintf(key, sizeof(key), "%.*s", (int)(end - p - 1), p + 1);
		ck_assert_msg(sk_reserved_metadata_key(key),
		        "%s: in the CRD's rule, not reserved in C", key);
		listed++;
		p = end;
	}
	ck_assert_uint_ge(listed, 6);
	crd_unload();
}
END_TEST

Suite *
sk_suite_schema(void)
{
	Suite *s = suite_create("schema");
	TCase *tc = tcase_create("rows");
	int n = (int)sk_spec_n_fields;

	tcase_add_test(tc, test_every_row_has_a_case);
	tcase_add_loop_test(tc, test_row_decode_encode, 0, n);
	tcase_add_loop_test(tc, test_row_rejects, 0, n);
	tcase_add_loop_test(tc, test_row_bounds, 0, n);
	tcase_add_loop_test(tc, test_row_default, 0, n);
	tcase_add_loop_test(tc, test_row_round_trips, 0, n);
	tcase_add_loop_test(tc, test_row_not_status_only, 0, n);
	tcase_add_test(tc, test_table_covers_struct);
	tcase_add_test(tc, test_groups_adjacent);
	tcase_add_test(tc, test_string_rules_match_patterns);
	tcase_add_loop_test(tc, test_crd_row, 0, n);
	tcase_add_test(tc, test_crd_has_only_table_fields);
	tcase_add_test(tc, test_crd_reserved_metadata_keys);
	suite_add_tcase(s, tc);
	return s;
}
