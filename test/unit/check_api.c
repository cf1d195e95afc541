/* Unit tests for pkg/api: YAML reading with positions and bounds, validation,
 * the codec round trips, YAML output, selectors and tables. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../testutil.h"
#include "api/doc.h"
#include "api/errlist.h"
#include "api/kvlist.h"
#include "api/meta.h"
#include "api/names.h"
#include "api/output.h"
#include "api/selector.h"
#include "api/status.h"
#include "api/storage.h"
#include "api/userspace.h"

static sk_doclist
parse_ok(const char *text, const char *file)
{
	sk_doclist l = { NULL, 0 };
	sk_error err = { 0 };

	ck_assert_msg(sk_doc_parse(text, strlen(text), file, &l, &err) == SK_OK, "parse: %s",
	        err.message);
	return l;
}

/* Validates the single document of text; returns the formatted errors (caller frees). */
static char *
validate_text(const char *text, const char *file)
{
	sk_doclist l = parse_ok(text, file);
	sk_errlist errs = { NULL, 0 };
	sk_buf b = SK_BUF_INIT(1 << 20);

	ck_assert_uint_eq(l.len, 1);
	sk_userspace_validate(l.items[0], &errs);
	sk_errlist_format(&errs, &b);
	sk_errlist_dispose(&errs);
	sk_doclist_dispose(&l);
	if (b.data == NULL)
		return strdup("");
	return sk_buf_detach(&b);
}

#define assert_contains(hay, needle)                                                               \
	ck_assert_msg(strstr((hay), (needle)) != NULL, "expected \"%s\" in:\n%s", (needle), (hay))

static const char full_doc[] = "apiVersion: spacekeeper.dev/v1alpha1\n"
                               "kind: UserSpace\n"
                               "metadata:\n"
                               "  name: bob\n"
                               "  labels:\n"
                               "    team: research\n"
                               "  annotations:\n"
                               "    spacekeeper.dev/paused: \"true\"\n"
                               "  uid: 1b4e28ba-2fa1-11d2-883f-0016d3cca427\n"
                               "  generation: 3\n"
                               "  resourceVersion: 17\n"
                               "  creationTimestamp: \"2026-11-29T15:04:05.123Z\"\n"
                               "  finalizers: [spacekeeper.dev/cleanup]\n"
                               "spec:\n"
                               "  userID: bob.smith\n"
                               "  provider: cube\n"
                               "  template: \"python:3.12\"\n"
                               "  mode: Paused\n"
                               "  resources: {cpuCount: 4, memoryMB: 4096}\n"
                               "  lifecycle:\n"
                               "    idleTimeout: 90s\n"
                               "    onTimeout: kill\n"
                               "    autoResume: false\n"
                               "  env:\n"
                               "    EDITOR: vim\n"
                               "    EMPTY: \"\"\n"
                               "    NUM: \"123\"\n"
                               "  metadata:\n"
                               "    project: genomics\n"
                               "  deletionPolicy: Retain\n"
                               "  health: {unhealthyAfter: 2m, remediation: Replace}\n"
                               "status:\n"
                               "  phase: Running\n"
                               "  sandboxID: i7x2k\n"
                               "  observedGeneration: 3\n"
                               "  conditions:\n"
                               "  - type: Ready\n"
                               "    status: \"True\"\n"
                               "    reason: SandboxRunning\n"
                               "    message: ok\n"
                               "    lastTransitionTime: \"2026-11-29T15:05:00.000Z\"\n"
                               "    observedGeneration: 3\n"
                               "  drift:\n"
                               "  - type: Duplicate\n"
                               "    sandboxID: i9\n"
                               "    since: \"2026-11-29T15:06:00.000Z\"\n"
                               "    detail: two sandboxes\n"
                               "  message: all good\n";

static sk_userspace *
decode_one(const char *text)
{
	sk_doclist l = parse_ok(text, "full.yaml");
	sk_errlist errs = { NULL, 0 };
	sk_buf b = SK_BUF_INIT(1 << 20);
	sk_userspace *us = NULL;

	ck_assert_uint_eq(l.len, 1);
	if (sk_userspace_from_doc(l.items[0], &us, &errs) != SK_OK) {
		sk_errlist_format(&errs, &b);
		ck_abort_msg("invalid: %s", b.data);
	}
	sk_errlist_dispose(&errs);
	sk_doclist_dispose(&l);
	return us;
}

static void
assert_userspace_equal(const sk_userspace *a, const sk_userspace *b)
{
	ck_assert_str_eq(a->meta.name, b->meta.name);
	ck_assert(sk_kvlist_equal(&a->meta.labels, &b->meta.labels));
	ck_assert(sk_kvlist_equal(&a->meta.annotations, &b->meta.annotations));
	ck_assert_str_eq(a->meta.uid, b->meta.uid);
	ck_assert_int_eq(a->meta.generation, b->meta.generation);
	ck_assert_int_eq(a->meta.resource_version, b->meta.resource_version);
	ck_assert_int_eq(a->meta.creation_ms, b->meta.creation_ms);
	ck_assert_int_eq(a->meta.deletion_ms, b->meta.deletion_ms);
	ck_assert_uint_eq(a->meta.n_finalizers, b->meta.n_finalizers);
	ck_assert(sk_userspace_spec_equal(&a->spec, &b->spec));
	ck_assert(sk_userspace_status_equal(&a->status, &b->status));
}

START_TEST(test_decode_fields)
{
	sk_userspace *us = decode_one(full_doc);
	const sk_condition *ready;

	ck_assert_str_eq(us->meta.name, "bob");
	ck_assert_str_eq(sk_kvlist_get(&us->meta.labels, "team"), "research");
	ck_assert_str_eq(sk_kvlist_get(&us->meta.annotations, SK_ANNOTATION_PAUSED), "true");
	ck_assert_int_eq(us->meta.generation, 3);
	ck_assert_int_eq(us->meta.resource_version, 17);
	ck_assert_int_eq(us->meta.creation_ms, 1795964645123LL);
	ck_assert(sk_userspace_has_finalizer(us, SK_FINALIZER));
	ck_assert_str_eq(us->spec.user_id, "bob.smith");
	ck_assert_str_eq(us->spec.provider, "cube");
	ck_assert_str_eq(us->spec.template_id, "python:3.12");
	ck_assert_int_eq(us->spec.mode, SK_MODE_PAUSED);
	ck_assert_int_eq(us->spec.cpu_count, 4);
	ck_assert_int_eq(us->spec.memory_mb, 4096);
	ck_assert_int_eq(us->spec.idle_timeout_ms, 90000);
	ck_assert_int_eq(us->spec.on_timeout, SK_ON_TIMEOUT_KILL);
	ck_assert(!us->spec.auto_resume);
	ck_assert_str_eq(sk_kvlist_get(&us->spec.env, "NUM"), "123");
	ck_assert_str_eq(sk_kvlist_get(&us->spec.env, "EMPTY"), "");
	ck_assert_int_eq(us->spec.deletion_policy, SK_DELETE_RETAIN);
	ck_assert_int_eq(us->spec.unhealthy_after_ms, 120000);
	ck_assert_int_eq(us->spec.remediation, SK_REMEDIATION_REPLACE);
	ck_assert_int_eq(us->status.phase, SK_PHASE_RUNNING);
	ck_assert_str_eq(us->status.sandbox_id, "i7x2k");
	ready = sk_userspace_condition(us, SK_COND_READY);
	ck_assert_ptr_nonnull(ready);
	ck_assert_str_eq(ready->reason, "SandboxRunning");
	ck_assert(sk_userspace_is_ready(us));
	ck_assert_uint_eq(us->status.n_drift, 1);
	ck_assert_str_eq(us->status.drift[0].detail, "two sandboxes");
	sk_userspace_free(us);
}
END_TEST

START_TEST(test_defaults)
{
	sk_userspace *us = decode_one("apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	                              "metadata: {name: alice}\nspec: {userID: alice}\n");
	json_t *j;

	ck_assert_str_eq(us->spec.provider, "default");
	ck_assert_str_eq(us->spec.template_id, "base");
	ck_assert_int_eq(us->spec.mode, SK_MODE_RUNNING);
	ck_assert_int_eq(us->spec.idle_timeout_ms, 15 * 60 * 1000);
	ck_assert_int_eq(us->spec.on_timeout, SK_ON_TIMEOUT_PAUSE);
	ck_assert(us->spec.auto_resume);
	ck_assert_int_eq(us->spec.deletion_policy, SK_DELETE_DELETE);
	ck_assert_int_eq(us->spec.unhealthy_after_ms, 60000);
	ck_assert_int_eq(us->spec.remediation, SK_REMEDIATION_REPORT);
	ck_assert_int_eq(us->status.phase, SK_PHASE_NONE);
	j = sk_userspace_to_json(us);
	/* defaults are explicit in the output, status is omitted */
	ck_assert_str_eq(
	        json_string_value(json_object_get(json_object_get(j, "spec"), "template")), "base");
	ck_assert_str_eq(
	        json_string_value(json_object_get(
	                json_object_get(json_object_get(j, "spec"), "lifecycle"), "idleTimeout")),
	        "15m");
	ck_assert_str_eq(
	        json_string_value(json_object_get(
	                json_object_get(json_object_get(j, "spec"), "health"), "unhealthyAfter")),
	        "1m");
	ck_assert_ptr_null(json_object_get(j, "status"));
	json_decref(j);
	sk_userspace_free(us);
}
END_TEST

START_TEST(test_round_trip_json)
{
	sk_userspace *a = decode_one(full_doc);
	sk_userspace *b = NULL, *c;
	json_t *ja = sk_userspace_to_json(a), *jb;
	sk_error err;

	ck_assert_int_eq(sk_userspace_decode(ja, &b, &err), SK_OK);
	assert_userspace_equal(a, b);
	jb = sk_userspace_to_json(b);
	ck_assert(json_equal(ja, jb));
	c = sk_userspace_dup(a);
	assert_userspace_equal(a, c);
	json_decref(ja);
	json_decref(jb);
	sk_userspace_free(a);
	sk_userspace_free(b);
	sk_userspace_free(c);
}
END_TEST

START_TEST(test_round_trip_yaml)
{
	sk_userspace *a = decode_one(full_doc), *b;
	json_t *ja = sk_userspace_to_json(a);
	sk_buf y = SK_BUF_INIT(1 << 20);
	sk_error err;
	sk_doclist l;

	ck_assert_int_eq(sk_json_to_yaml(ja, &y, &err), SK_OK);
	/* block style, insertion order */
	ck_assert_msg(
	        strncmp(y.data, "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n", 53) == 0,
	        "%s", y.data);
	assert_contains(y.data, "\n    NUM: \"123\"\n");
	assert_contains(y.data, "\n    EMPTY: \"\"\n");
	assert_contains(y.data, "status: \"True\"");
	l = parse_ok(y.data, "out.yaml");
	ck_assert_uint_eq(l.len, 1);
	ck_assert(json_equal(ja, sk_doc_root(l.items[0])));
	b = decode_one(y.data);
	assert_userspace_equal(a, b);
	sk_doclist_dispose(&l);
	sk_buf_dispose(&y);
	json_decref(ja);
	sk_userspace_free(a);
	sk_userspace_free(b);
}
END_TEST

START_TEST(test_yaml_quoting)
{
	json_t *v = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:f, s:b, s:n, "
	                      "s:[], s:{}, s:s}",
	        "t", "true", "num", "123", "e", "", "nl", "null", "f", "1.5", "y", "yes", "colon",
	        "a: b", "dash", "- x", "multi", "line1\nline2", "int", 42, "real", 2.5, "bool", 1,
	        "null", "emptya", "emptyo", "tilde", "~");
	json_object_set_new(v, "hex", json_string("0x1f"));
	json_object_set_new(v, "inf", json_string(".inf"));
	json_object_set_new(v, "sexa", json_string("1:30"));
	json_object_set_new(v, "dur", json_string("1h30m"));
	json_object_set_new(v, "when", json_string("2026-11-29T15:04:05.123Z"));
	sk_buf y = SK_BUF_INIT(1 << 20);
	sk_error err;
	sk_doclist l;

	ck_assert_int_eq(sk_json_to_yaml(v, &y, &err), SK_OK);
	assert_contains(y.data, "t: \"true\"\n");
	assert_contains(y.data, "num: \"123\"\n");
	assert_contains(y.data, "\"y\": \"yes\"\n");
	assert_contains(y.data, "int: 42\n");
	assert_contains(y.data, "hex: \"0x1f\"\n");
	assert_contains(y.data, "inf: \".inf\"\n");
	assert_contains(y.data, "sexa: \"1:30\"\n");
	assert_contains(y.data, "dur: 1h30m\n");
	assert_contains(y.data, "when: \"2026-11-29T15:04:05.123Z\"\n");
	assert_contains(y.data, "emptya: []\n");
	l = parse_ok(y.data, "q.yaml");
	ck_assert_msg(json_equal(v, sk_doc_root(l.items[0])), "%s", y.data);
	sk_doclist_dispose(&l);
	sk_buf_dispose(&y);
	json_decref(v);
}
END_TEST

START_TEST(test_decode_mongo_shapes)
{
	json_t *j = json_pack("{s:s, s:s, s:{s:s, s:f, s:f, s:{s:I}}, s:{s:s, s:{s:f, s:f}}, "
	                      "s:{s:s, s:f}}",
	        "apiVersion", SK_API_VERSION, "kind", "UserSpace", "metadata", "name", "x",
	        "generation", 2.0, "resourceVersion", 5.0, "creationTimestamp", "$date",
	        (json_int_t)1795964645123LL, "spec", "userID", "x", "resources", "cpuCount", 2.0,
	        "memoryMB", 512.0, "status", "phase", "Creating", "observedGeneration", 2.0);
	sk_userspace *us = NULL;
	sk_error err;

	json_object_set_new(j, "_id", json_string("abc"));
	json_object_set_new(json_object_get(j, "status"), "lastReconcileTime",
	        json_pack("{s:{s:s}}", "$date", "$numberLong", "1795964645000"));
	json_object_set_new(json_object_get(j, "metadata"), "uid", json_string("u-1"));
	json_object_set_new(json_object_get(j, "status"), "sandboxID", json_string("i1"));
	json_object_set_new(json_object_get(j, "metadata"), "resourceVersion",
	        json_pack("{s:s}", "$numberLong", "7"));
	ck_assert_int_eq(sk_userspace_decode(j, &us, &err), SK_OK);
	ck_assert_int_eq(us->meta.generation, 2);
	ck_assert_int_eq(us->meta.resource_version, 7);
	ck_assert_int_eq(us->status.last_reconcile_ms, 1795964645000LL);
	ck_assert_int_eq(us->meta.creation_ms, 1795964645123LL);
	ck_assert_int_eq(us->spec.cpu_count, 2);
	ck_assert_int_eq(us->spec.memory_mb, 512);
	ck_assert_int_eq(us->status.phase, SK_PHASE_CREATING);
	ck_assert_int_eq(us->status.observed_generation, 2);
	sk_userspace_free(us);
	json_decref(j);
}
END_TEST

START_TEST(test_positions)
{
	sk_doclist l = parse_ok(full_doc, "p.yaml");
	int line = 0, col = 0;

	ck_assert(sk_doc_position(l.items[0], "spec.lifecycle.idleTimeout", &line, &col));
	ck_assert_int_eq(line, 21);
	ck_assert_int_eq(col, 5);
	ck_assert(sk_doc_position(
	        l.items[0], "metadata.annotations.spacekeeper.dev/paused", &line, &col));
	ck_assert_int_eq(line, 8);
	ck_assert_int_eq(col, 5);
	ck_assert(sk_doc_position(l.items[0], "status.conditions[0].reason", &line, &col));
	ck_assert_int_eq(line, 39);
	/* unknown leaf falls back to the nearest parent */
	ck_assert(sk_doc_position(l.items[0], "spec.lifecycle.nothing", &line, &col));
	ck_assert_int_eq(line, 20);
	ck_assert_int_eq(col, 3);
	ck_assert_str_eq(sk_doc_file(l.items[0]), "p.yaml");
	ck_assert_int_eq(sk_doc_line(l.items[0]), 1);
	sk_doclist_dispose(&l);
}
END_TEST

START_TEST(test_scalar_types)
{
	sk_doclist l = parse_ok("a: true\nb: 12\nc: -3\nd: 1.5\ne: ~\nf: null\ng: \"true\"\n"
	                        "h: '12'\ni: 1.2.3\nj: !!str 7\nk: 0x10\nl: 1e3\n",
	        "s.yaml");
	json_t *r = sk_doc_root(l.items[0]);

	ck_assert(json_is_true(json_object_get(r, "a")));
	ck_assert_int_eq(json_integer_value(json_object_get(r, "b")), 12);
	ck_assert_int_eq(json_integer_value(json_object_get(r, "c")), -3);
	ck_assert(json_is_real(json_object_get(r, "d")));
	ck_assert(json_is_null(json_object_get(r, "e")));
	ck_assert(json_is_null(json_object_get(r, "f")));
	ck_assert_str_eq(json_string_value(json_object_get(r, "g")), "true");
	ck_assert_str_eq(json_string_value(json_object_get(r, "h")), "12");
	ck_assert_str_eq(json_string_value(json_object_get(r, "i")), "1.2.3");
	ck_assert_str_eq(json_string_value(json_object_get(r, "j")), "7");
	ck_assert_str_eq(json_string_value(json_object_get(r, "k")), "0x10");
	ck_assert(json_is_real(json_object_get(r, "l")));
	sk_doclist_dispose(&l);
}
END_TEST

START_TEST(test_json_input)
{
	sk_doclist l = parse_ok("{\"apiVersion\": \"spacekeeper.dev/v1alpha1\", \"kind\": "
	                        "\"UserSpace\",\n \"metadata\": {\"name\": \"j\"}, \"spec\": "
	                        "{\"userID\": \"j\", \"resources\": {\"cpuCount\": 2}}}",
	        "j.json");
	sk_errlist errs = { NULL, 0 };

	ck_assert_uint_eq(l.len, 1);
	ck_assert_int_eq(sk_userspace_validate(l.items[0], &errs), SK_OK);
	ck_assert_uint_eq(errs.len, 0);
	sk_doclist_dispose(&l);
}
END_TEST

START_TEST(test_multi_doc_empty)
{
	sk_doclist l = parse_ok("---\n# nothing\n---\na: 1\n---\n---\nb: 2\n...\n---\n", "m.yaml");

	ck_assert_uint_eq(l.len, 2);
	ck_assert_int_eq(sk_doc_line(l.items[0]), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(sk_doc_root(l.items[1]), "b")), 2);
	sk_doclist_dispose(&l);
	l = parse_ok("", "empty.yaml");
	ck_assert_uint_eq(l.len, 0);
	l = parse_ok("# only a comment\n\n# another\n", "c.yaml");
	ck_assert_uint_eq(l.len, 0);
}
END_TEST

static int
parse_fail(const char *data, size_t len, const char *file, char *msg, size_t msglen)
{
	sk_doclist l = { NULL, 0 };
	sk_error err = { 0 };
	int rc = sk_doc_parse(data, len, file, &l, &err);

	ck_assert_uint_eq(l.len, 0);
	snprintf(msg, msglen, "%s", err.message);
	return rc;
}

START_TEST(test_malformed_yaml)
{
	const char *text = "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\nmetadata:\n"
	                   "  name: a\n  - b\n";
	char msg[1024];

	ck_assert_int_eq(parse_fail(text, strlen(text), "bad.yaml", msg, sizeof(msg)), SK_EINVALID);
	ck_assert_msg(strncmp(msg, "bad.yaml:5:3: ", 14) == 0, "%s", msg);
	ck_assert_int_eq(parse_fail("a: [1, 2\n", 9, "-", msg, sizeof(msg)), SK_EINVALID);
	ck_assert_msg(strncmp(msg, "<stdin>:", 8) == 0, "%s", msg);
	ck_assert_int_eq(parse_fail("a: 1\na: 2\n", 10, "d.yaml", msg, sizeof(msg)), SK_EINVALID);
	assert_contains(msg, "d.yaml:2:1: duplicate key \"a\"");
	ck_assert_int_eq(parse_fail("a: *nope\n", 9, "u.yaml", msg, sizeof(msg)), SK_EINVALID);
	assert_contains(msg, "unknown alias");
}
END_TEST

START_TEST(test_binary_rejected)
{
	static const char bin[] = "apiVersion: x\n\x00\x01\x02\xff";
	static const char latin1[] = "name: caf\xe9\n";
	char msg[1024];

	ck_assert_int_eq(parse_fail(bin, sizeof(bin) - 1, "b.bin", msg, sizeof(msg)), SK_EINVALID);
	assert_contains(msg, "b.bin: binary data at byte 14");
	ck_assert_int_eq(
	        parse_fail(latin1, strlen(latin1), "l.yaml", msg, sizeof(msg)), SK_EINVALID);
	assert_contains(msg, "UTF-8");
}
END_TEST

START_TEST(test_alias_bomb)
{
	const char *bomb =
	        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
	        "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
	        "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
	        "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
	        "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
	        "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
	        "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
	        "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
	        "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n";
	char msg[1024];
	clock_t t0 = clock();
	sk_doclist l;

	ck_assert_int_eq(
	        parse_fail(bomb, strlen(bomb), "bomb.yaml", msg, sizeof(msg)), SK_EINVALID);
	assert_contains(msg, "too many alias expansions");
	ck_assert_msg(strncmp(msg, "bomb.yaml:", 10) == 0, "%s", msg);
	ck_assert((clock() - t0) / CLOCKS_PER_SEC < 2);
	/* ordinary aliases still work */
	l = parse_ok("x: &x {k: v}\nw: *x\n", "alias.yaml");
	ck_assert(json_equal(json_object_get(sk_doc_root(l.items[0]), "x"),
	        json_object_get(sk_doc_root(l.items[0]), "w")));
	sk_doclist_dispose(&l);
}
END_TEST

START_TEST(test_deep_nesting)
{
	sk_buf b = SK_BUF_INIT(1 << 20);
	char msg[1024];
	sk_doclist l;

	for (int i = 0; i < 200; i++)
		sk_buf_append(&b, "[", 1);
	for (int i = 0; i < 200; i++)
		sk_buf_append(&b, "]", 1);
	ck_assert_int_eq(parse_fail(b.data, b.len, "deep.yaml", msg, sizeof(msg)), SK_EINVALID);
	assert_contains(msg, "deep.yaml:1:65: nesting deeper than 64 levels");
	sk_buf_reset(&b);
	for (int i = 0; i < 60; i++)
		sk_buf_append(&b, "[", 1);
	for (int i = 0; i < 60; i++)
		sk_buf_append(&b, "]", 1);
	l = parse_ok(b.data, "ok.yaml");
	ck_assert_uint_eq(l.len, 1);
	sk_doclist_dispose(&l);
	sk_buf_dispose(&b);
}
END_TEST

START_TEST(test_document_too_large)
{
	size_t n = 1100 * 1024;
	char *big = malloc(n + 64);
	char msg[1024];
	size_t off = (size_t)sprintf(big, "a: \"");

	memset(big + off, 'x', n);
	strcpy(big + off + n, "\"\n");
	ck_assert_int_eq(parse_fail(big, strlen(big), "big.yaml", msg, sizeof(msg)), SK_EINVALID);
	assert_contains(msg, "larger than the 1048576 byte limit");
	free(big);
}
END_TEST

START_TEST(test_many_small_documents)
{
	/* the limit is per document: a 1.5 MiB stream of small documents is fine */
	sk_buf b = SK_BUF_INIT(4 << 20);
	sk_doclist l;
	size_t n = 0;

	while (b.len < 1536 * 1024)
		sk_buf_printf(&b, "---\nname: doc-%zu\npad: \"%0200d\"\n", n++, 0);
	l = parse_ok(b.data, "many.yaml");
	ck_assert_uint_eq(l.len, n);
	sk_doclist_dispose(&l);
	sk_buf_dispose(&b);
}
END_TEST

START_TEST(test_errors_collected)
{
	char *out = validate_text("apiVersion: v1\n"
	                          "kind: Pod\n"
	                          "metadata:\n"
	                          "  name: Bad_Name\n"
	                          "spec:\n"
	                          "  userID: \"a b\"\n"
	                          "  lifecycle:\n"
	                          "    idleTimeout: 15\n"
	                          "  extra: 1\n"
	                          "  env:\n"
	                          "    $HOME: x\n"
	                          "  metadata:\n"
	                          "    user_id: x\n"
	                          "    userspace: x\n"
	                          "    userspace_uid: x\n"
	                          "    managed_by: x\n"
	                          "    a.b: c\n",
	        "a.yaml");

	assert_contains(out,
	        "apiVersion: must be \"spacekeeper.dev/v1alpha1\" (got \"v1\") (a.yaml:1:1)\n");
	assert_contains(out, "kind: must be \"UserSpace\" (got \"Pod\") (a.yaml:2:1)\n");
	assert_contains(out, "metadata.name: must be a DNS-1123 label");
	assert_contains(
	        out, "spec.userID: must match [A-Za-z0-9._-]{1,128} (got \"a b\") (a.yaml:6:3)\n");
	assert_contains(out,
	        "spec.lifecycle.idleTimeout: must be a duration like 90s, 15m or 1h30m "
	        "(a.yaml:8:5)\n");
	assert_contains(out, "spec.extra: unknown field (a.yaml:9:3)\n");
	assert_contains(
	        out, "spec.env.$HOME: key must not start with '$' or contain '.' (a.yaml:11:5)\n");
	assert_contains(out, "spec.metadata.user_id: key \"user_id\" is reserved");
	assert_contains(out, "spec.metadata.userspace: key \"userspace\" is reserved");
	assert_contains(out, "spec.metadata.userspace_uid: key \"userspace_uid\" is reserved");
	assert_contains(out,
	        "spec.metadata.managed_by: key \"managed_by\" is reserved (spacekeeper sets it on "
	        "the sandbox) (a.yaml:16:5)\n");
	assert_contains(out,
	        "spec.metadata.a.b: key must not start with '$' or contain '.' (a.yaml:17:5)\n");
	free(out);
}
END_TEST

/* spec.storage.volume: nested unknown keys and an empty volume are errors
 * at their path and line; the derived name, mount path and policy. */
START_TEST(test_storage_volume)
{
	static const char head[] = "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	                           "metadata:\n  name: a\nspec:\n  userID: a\n";
	sk_userspace_spec s = { .user_id = "alice" };
	char name[SK_VOLUME_NAME_MAX + 1], *doc, *out;

	doc = sk_asprintf("%s  storage:\n    volume:\n      nmae: x\n    extra: 1\n", head);
	out = validate_text(doc, "s.yaml");
	assert_contains(out, "spec.storage.volume.nmae: unknown field");
	assert_contains(out, "(s.yaml:9:7)");
	assert_contains(out, "spec.storage.extra: unknown field (s.yaml:10:5)");
	free(out);
	free(doc);
	doc = sk_asprintf("%s  storage:\n    volume: {}\n", head);
	out = validate_text(doc, "s.yaml");
	assert_contains(out, "spec.storage.volume: give name, mountPath or deletionPolicy");
	free(out);
	free(doc);
	ck_assert(!sk_storage_wanted(&s));
	s.storage.volume_policy = SK_VOLUME_RETAIN;
	ck_assert(sk_storage_wanted(&s) && !sk_storage_deletes(&s));
	sk_storage_volume_name(&s, name);
	ck_assert_str_eq(name, "sk-alice");
	ck_assert_str_eq(sk_storage_mount_path(&s), "/home/user");
	s.user_id = "alice.smith";
	sk_storage_volume_name(&s, name);
	ck_assert_int_eq(strncmp(name, "sk-alice_smith-", 15), 0);
	ck_assert_int_eq(strlen(name), 15 + 16);
	s.user_id = "alice_smith"; /* no '.': no hash, so the two stay distinct */
	sk_storage_volume_name(&s, name);
	ck_assert_str_eq(name, "sk-alice_smith");
	s.user_id = "u123456789012345678901234567890123456789012345678901234567890123456789";
	sk_storage_volume_name(&s, name);
	ck_assert_int_eq(strlen(name), 3 + 40 + 1 + 16);
	s.storage.volume_name = "mine";
	s.storage.mount_path = "/data";
	s.storage.volume_policy = SK_VOLUME_DELETE;
	sk_storage_volume_name(&s, name);
	ck_assert_str_eq(name, "mine");
	ck_assert_str_eq(sk_storage_mount_path(&s), "/data");
	ck_assert(sk_storage_deletes(&s));
}
END_TEST

START_TEST(test_missing_userid_position)
{
	char *out = validate_text("apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	                          "metadata:\n  name: a\nspec:\n  mode: Running\n",
	        "m.yaml");

	ck_assert_str_eq(out, "spec.userID: required (m.yaml:5:1)\n");
	free(out);
}
END_TEST

START_TEST(test_no_file_format)
{
	json_t *j = json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:i}}", "apiVersion", SK_API_VERSION,
	        "kind", "UserSpace", "metadata", "name", "x", "spec", "userID", "x", "bogus", 1);
	sk_doc *d = sk_doc_from_json(j, NULL);
	sk_errlist errs = { NULL, 0 };
	sk_buf b = SK_BUF_INIT(4096);

	ck_assert_int_eq(sk_userspace_validate(d, &errs), SK_EINVALID);
	sk_errlist_format(&errs, &b);
	ck_assert_str_eq(b.data, "spec.bogus: unknown field\n");
	sk_buf_dispose(&b);
	sk_errlist_dispose(&errs);
	sk_doc_free(d);
	json_decref(j);
}
END_TEST

START_TEST(test_get_output_reapplies)
{
	/* what `spacectl get -o yaml` prints validates again (status and store fields ignored) */
	sk_userspace *us = decode_one(full_doc);
	json_t *j = sk_userspace_to_json(us);
	sk_doc *d = sk_doc_from_json(j, "get.yaml");
	sk_errlist errs = { NULL, 0 };

	ck_assert_int_eq(sk_userspace_validate(d, &errs), SK_OK);
	sk_doc_free(d);
	json_decref(j);
	sk_userspace_free(us);
}
END_TEST

START_TEST(test_load_stdin)
{
	static const char text[] = "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	                           "metadata:\n  name: s\nspec:\n  userID: s\n  bogus: 1\n";
	int fds[2];
	sk_doclist l = { NULL, 0 };
	sk_errlist errs = { NULL, 0 };
	sk_buf b = SK_BUF_INIT(4096);
	sk_error err;

	ck_assert_int_eq(pipe(fds), 0);
	ck_assert_int_eq(write(fds[1], text, sizeof(text) - 1), (ssize_t)(sizeof(text) - 1));
	close(fds[1]);
	ck_assert_int_eq(dup2(fds[0], STDIN_FILENO), STDIN_FILENO);
	close(fds[0]);
	ck_assert_int_eq(sk_doc_load_path("-", &l, &err), SK_OK);
	ck_assert_uint_eq(l.len, 1);
	ck_assert_str_eq(sk_doc_file(l.items[0]), "<stdin>");
	ck_assert_int_eq(sk_userspace_validate(l.items[0], &errs), SK_EINVALID);
	sk_errlist_format(&errs, &b);
	ck_assert_str_eq(b.data, "spec.bogus: unknown field (<stdin>:7:3)\n");
	sk_buf_dispose(&b);
	sk_errlist_dispose(&errs);
	sk_doclist_dispose(&l);
}
END_TEST

START_TEST(test_load_dir)
{
	char dir[4096];
	sk_doclist l = { NULL, 0 };
	sk_error err;
	char sub[4200];

	snprintf(dir, sizeof(dir), "%s/d", sk_test_tmpdir());
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	ck_assert_int_eq(mkdir(sub, 0700), 0);
	sk_test_write_file("d/b.yml", "num: 2\n");
	sk_test_write_file("d/a.yaml", "num: 1\n---\nnum: 1.5\n");
	sk_test_write_file("d/c.json", "{\"num\": 3}");
	sk_test_write_file("d/README.md", "num: [not yaml\n");
	sk_test_write_file("d/sub/z.yaml", "num: 9\n");
	ck_assert_int_eq(sk_doc_load_path(dir, &l, &err), SK_OK);
	ck_assert_uint_eq(l.len, 4);
	ck_assert_int_eq(json_integer_value(json_object_get(sk_doc_root(l.items[0]), "num")), 1);
	ck_assert(json_is_real(json_object_get(sk_doc_root(l.items[1]), "num")));
	ck_assert_int_eq(json_integer_value(json_object_get(sk_doc_root(l.items[2]), "num")), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(sk_doc_root(l.items[3]), "num")), 3);
	ck_assert_int_eq(sk_doc_line(l.items[1]), 2);
	sk_doclist_dispose(&l);
}
END_TEST

START_TEST(test_status_copy)
{
	sk_userspace *us = decode_one(full_doc);
	sk_userspace_status st;

	sk_userspace_status_copy(&st, &us->status);
	ck_assert(sk_userspace_status_equal(&st, &us->status));
	ck_assert_ptr_ne(st.conditions, us->status.conditions);
	free(st.conditions[0].reason);
	st.conditions[0].reason = strdup("Other");
	ck_assert(!sk_userspace_status_equal(&st, &us->status));
	sk_userspace_status_dispose(&st);
	us->spec.cpu_count = 8;
	{
		sk_userspace *c = sk_userspace_dup(us);
		ck_assert_int_eq(c->spec.cpu_count, 8);
		c->spec.mode = SK_MODE_RUNNING;
		ck_assert(!sk_userspace_spec_equal(&c->spec, &us->spec));
		sk_userspace_free(c);
	}
	sk_userspace_free(us);
	sk_userspace_free(NULL);
}
END_TEST

START_TEST(test_decode_errors)
{
	sk_userspace *us = NULL;
	sk_error err;
	json_t *j = json_pack("{s:{s:s}, s:{s:s, s:s}}", "metadata", "name", "x", "spec", "userID",
	        "x", "mode", "Sleeping");

	ck_assert_int_eq(sk_userspace_decode(j, &us, &err), SK_EINVALID);
	ck_assert_ptr_null(us);
	assert_contains(err.message, "spec.mode");
	json_decref(j);
	j = json_pack("{s:{s:i}}", "metadata", "name", 3);
	ck_assert_int_eq(sk_userspace_decode(j, &us, &err), SK_EINVALID);
	json_decref(j);
	j = json_string("x");
	ck_assert_int_eq(sk_userspace_decode(j, &us, &err), SK_EINVALID);
	json_decref(j);
}
END_TEST

START_TEST(test_wrong_types)
{
	char *out = validate_text("apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	                          "metadata:\n  name: a\n  labels: [x]\n"
	                          "spec:\n  userID: 12\n  resources: 4\n  lifecycle:\n"
	                          "    autoResume: \"yes\"\n  env: {A: [1]}\n",
	        "t.yaml");

	assert_contains(out, "metadata.labels: must be an object (t.yaml:5:3)\n");
	assert_contains(out, "spec.userID: must be a string (t.yaml:7:3)\n");
	assert_contains(out, "spec.resources: must be an object (t.yaml:8:3)\n");
	assert_contains(out, "spec.lifecycle.autoResume: must be a boolean (t.yaml:10:5)\n");
	assert_contains(out, "spec.env.A: must be a string");
	free(out);
	out = validate_text("- a\n- b\n", "list.yaml");
	ck_assert_str_eq(out, "a UserSpace document must be a mapping (list.yaml:1:1)\n");
	free(out);
	out = validate_text("apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
	                    "metadata:\n  name: a\n  labels: {\"bad key!\": v, ok: \"-bad\"}\n"
	                    "spec: {userID: a}\n",
	        "l.yaml");
	assert_contains(out, "metadata.labels.bad key!: invalid key");
	assert_contains(out, "metadata.labels.ok: invalid label value");
	free(out);
}
END_TEST

/* First line "# expect: TEXT". */
static char *
expect_line(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	char *nl;

	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
	fclose(f);
	ck_assert_msg(strncmp(line, "# expect: ", 10) == 0, "%s: no # expect line", path);
	if ((nl = strchr(line, '\n')) != NULL)
		*nl = '\0';
	return strdup(line + 10);
}

static size_t
list_dir(const char *dir, char ***out)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	ck_assert_msg(d != NULL, "cannot open %s", dir);
	*out = NULL;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		*out = realloc(*out, (n + 1) * sizeof(char *));
		(*out)[n++] = sk_asprintf("%s/%s", dir, de->d_name);
	}
	closedir(d);
	return n;
}

START_TEST(test_bad_files)
{
	char **files;
	char dir[4096];
	size_t n;

	snprintf(dir, sizeof(dir), "%s", sk_test_path("test/data/bad"));
	n = list_dir(dir, &files);
	ck_assert_uint_ge(n, 14);
	for (size_t i = 0; i < n; i++) {
		char *want = expect_line(files[i]);
		sk_doclist l = { NULL, 0 };
		sk_errlist errs = { NULL, 0 };
		sk_error err;
		sk_buf b = SK_BUF_INIT(1 << 20);
		ck_assert_int_eq(sk_doc_load_path(files[i], &l, &err), SK_OK);
		ck_assert_uint_eq(l.len, 1);
		ck_assert_int_eq(sk_userspace_validate(l.items[0], &errs), SK_EINVALID);
		sk_errlist_format(&errs, &b);
		ck_assert_msg(strstr(b.data, want) != NULL, "%s: want \"%s\", got:\n%s", files[i],
		        want, b.data);
		/* every error names the file and a position */
		ck_assert_msg(strstr(b.data, files[i]) != NULL, "%s", b.data);
		sk_buf_dispose(&b);
		sk_errlist_dispose(&errs);
		sk_doclist_dispose(&l);
		free(want);
		free(files[i]);
	}
	free(files);
}
END_TEST

START_TEST(test_examples_valid)
{
	sk_doclist l = { NULL, 0 };
	sk_error err;
	const char *names[] = { "alice", "bob", "carol", "dave", "erin", "frank" };

	ck_assert_int_eq(sk_doc_load_path(sk_test_path("manifests/examples"), &l, &err), SK_OK);
	ck_assert_uint_eq(l.len, 6);
	for (size_t i = 0; i < l.len; i++) {
		sk_errlist errs = { NULL, 0 };
		sk_userspace *us = NULL;
		sk_buf b = SK_BUF_INIT(1 << 20);
		if (sk_userspace_from_doc(l.items[i], &us, &errs) != SK_OK) {
			sk_errlist_format(&errs, &b);
			ck_abort_msg("%s", b.data);
		}
		/* sorted by file name, documents in file order */
		ck_assert_str_eq(us->meta.name, names[i]);
		sk_userspace_free(us);
	}
	sk_doclist_dispose(&l);
	ck_assert_int_ne(sk_doc_load_path("/nonexistent/x.yaml", &l, &err), SK_OK);
}
END_TEST

static bool
sel_match(const char *sel, const char *const *kv)
{
	sk_selector *s = NULL;
	sk_error err;
	sk_kvlist labels = { NULL, 0 };
	bool m;

	ck_assert_msg(sk_selector_parse(sel, &s, &err) == SK_OK, "%s: %s", sel, err.message);
	for (; kv[0] != NULL; kv += 2)
		sk_kvlist_set(&labels, kv[0], kv[1]);
	m = sk_selector_matches(s, &labels);
	sk_kvlist_dispose(&labels);
	sk_selector_free(s);
	return m;
}

START_TEST(test_selectors)
{
	const char *const research[] = { "team", "research", "tier", "gold", NULL };
	const char *const none[] = { NULL };
	const char *bad[] = { "=x", "a in b", "a in (x", "a,,b", "a b", "Team/x=y z", "a=b," };
	sk_selector *s;
	sk_error err;

	ck_assert(sel_match("", research));
	ck_assert(sel_match("team=research", research));
	ck_assert(sel_match("team==research", research));
	ck_assert(!sel_match("team=design", research));
	ck_assert(sel_match("team!=design", research));
	ck_assert(sel_match("team!=design", none));
	ck_assert(sel_match("tier", research));
	ck_assert(!sel_match("!tier", research));
	ck_assert(sel_match("!tier", none));
	ck_assert(sel_match("team in (design, research)", research));
	ck_assert(!sel_match("team notin (design,research)", research));
	ck_assert(sel_match("team notin (design)", none));
	ck_assert(sel_match("team=research,tier in (gold,silver)", research));
	ck_assert(!sel_match("team=research,tier in (silver)", research));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(sk_selector_parse(bad[i], &s, &err) == SK_EINVALID, "%s", bad[i]);
		ck_assert_ptr_null(s);
	}
}
END_TEST

START_TEST(test_table)
{
	const char *headers[] = { "name", "userid", "phase" };
	const char *r1[] = { "alice", "alice", "Running" };
	const char *r2[] = { "bob-longer", "b", "" };
	sk_table *t = sk_table_new(3, headers);
	sk_buf b = SK_BUF_INIT(4096);

	sk_table_add_row(t, r1);
	sk_table_add_row(t, r2);
	sk_table_render(t, &b);
	ck_assert_str_eq(b.data,
	        "NAME         USERID   PHASE\n"
	        "alice        alice    Running\n"
	        "bob-longer   b\n");
	sk_buf_dispose(&b);
	sk_table_free(t);
}
END_TEST

START_TEST(test_kvlist)
{
	sk_kvlist a = { NULL, 0 }, b = { NULL, 0 };

	sk_kvlist_set(&a, "zeta", "1");
	sk_kvlist_set(&a, "alpha", "2");
	sk_kvlist_set(&a, "mid", "3");
	sk_kvlist_set(&a, "alpha", "4");
	ck_assert_uint_eq(a.len, 3);
	ck_assert_str_eq(a.items[0].key, "alpha");
	ck_assert_str_eq(a.items[0].value, "4");
	ck_assert_str_eq(a.items[2].key, "zeta");
	ck_assert_ptr_null(sk_kvlist_get(&a, "nope"));
	sk_kvlist_set(&b, "mid", "3");
	sk_kvlist_set(&b, "alpha", "4");
	ck_assert(!sk_kvlist_equal(&a, &b));
	sk_kvlist_set(&b, "zeta", "1");
	ck_assert(sk_kvlist_equal(&a, &b));
	sk_kvlist_dispose(&a);
	sk_kvlist_dispose(&b);
}
END_TEST

START_TEST(test_name_rules)
{
	char long_id[130];

	ck_assert(sk_valid_name("alice-1"));
	ck_assert(!sk_valid_name("-alice"));
	ck_assert(!sk_valid_name("Alice"));
	ck_assert(!sk_valid_name(""));
	ck_assert(sk_valid_user_id("bob.smith_1-x"));
	ck_assert(!sk_valid_user_id("bob smith"));
	memset(long_id, 'a', 129);
	long_id[129] = '\0';
	ck_assert(!sk_valid_user_id(long_id));
	long_id[128] = '\0';
	ck_assert(sk_valid_user_id(long_id));
	ck_assert(sk_valid_metadata_value(""));
	ck_assert(!sk_valid_metadata_value("a%20b"));
	ck_assert(sk_reserved_metadata_key("userspace_uid"));
	ck_assert(!sk_reserved_metadata_key("user"));
	ck_assert_str_eq(sk_phase_name(SK_PHASE_DEGRADED), "Degraded");
	ck_assert_str_eq(sk_phase_name(SK_PHASE_NONE), "");
}
END_TEST

Suite *sk_suite_api(void);

Suite *
sk_suite_api(void)
{
	Suite *s = suite_create("api");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_decode_fields);
	tcase_add_test(tc, test_storage_volume);
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_round_trip_json);
	tcase_add_test(tc, test_round_trip_yaml);
	tcase_add_test(tc, test_yaml_quoting);
	tcase_add_test(tc, test_decode_mongo_shapes);
	tcase_add_test(tc, test_positions);
	tcase_add_test(tc, test_scalar_types);
	tcase_add_test(tc, test_json_input);
	tcase_add_test(tc, test_multi_doc_empty);
	tcase_add_test(tc, test_malformed_yaml);
	tcase_add_test(tc, test_binary_rejected);
	tcase_add_test(tc, test_alias_bomb);
	tcase_add_test(tc, test_deep_nesting);
	tcase_add_test(tc, test_document_too_large);
	tcase_add_test(tc, test_many_small_documents);
	tcase_add_test(tc, test_errors_collected);
	tcase_add_test(tc, test_missing_userid_position);
	tcase_add_test(tc, test_no_file_format);
	tcase_add_test(tc, test_get_output_reapplies);
	tcase_add_test(tc, test_load_stdin);
	tcase_add_test(tc, test_load_dir);
	tcase_add_test(tc, test_status_copy);
	tcase_add_test(tc, test_decode_errors);
	tcase_add_test(tc, test_wrong_types);
	tcase_add_test(tc, test_bad_files);
	tcase_add_test(tc, test_examples_valid);
	tcase_add_test(tc, test_selectors);
	tcase_add_test(tc, test_table);
	tcase_add_test(tc, test_kvlist);
	tcase_add_test(tc, test_name_rules);
	suite_add_tcase(s, tc);
	return s;
}
