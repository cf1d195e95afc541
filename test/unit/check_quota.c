/*
 * SpaceQuota (pkg/api/quota.c): validation with field paths, the selector
 * (matchLabels and matchExpressions as Kubernetes reads them), admission
 * of spec.hard.spaces (table), the codec, and the one field table against
 * the CRD: every field described there and here, nothing more or less.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../testutil.h"
#include "api/doc.h"
#include "api/errlist.h"
#include "api/kvlist.h"
#include "api/quota.h"

Suite *sk_suite_quota(void);

static const char *GOOD = "apiVersion: spacekeeper.dev/v1alpha1\n"
                          "kind: SpaceQuota\n"
                          "metadata: {name: team-a}\n"
                          "spec:\n"
                          "  selector:\n"
                          "    matchLabels: {team: a}\n"
                          "    matchExpressions:\n"
                          "      - {key: tier, operator: NotIn, values: [free]}\n"
                          "      - {key: gpu, operator: DoesNotExist}\n"
                          "  hard: {spaces: 3, running: 2}\n";

static sk_spacequota *
parse(const char *text, sk_errlist *errs)
{
	sk_doclist docs = { NULL, 0 };
	sk_error err = { 0 };
	sk_spacequota *q = NULL;

	ck_assert_int_eq(sk_doc_parse(text, strlen(text), "q.yaml", &docs, &err), SK_OK);
	ck_assert_uint_eq(docs.len, 1);
	ck_assert(sk_doc_is_spacequota(docs.items[0]));
	sk_spacequota_from_doc(docs.items[0], &q, errs);
	sk_doclist_dispose(&docs);
	return q;
}

START_TEST(valid_quota_decodes)
{
	sk_errlist errs = { NULL, 0 };
	sk_spacequota *q = parse(GOOD, &errs);
	char sel[256];

	ck_assert_msg(q != NULL, "%s", errs.len ? errs.items[0].message : "");
	ck_assert_str_eq(q->meta.name, "team-a");
	ck_assert_int_eq(q->hard_spaces, 3);
	ck_assert_int_eq(q->hard_running, 2);
	ck_assert(!q->has_used);
	sk_spacequota_selector_format(q, sel, sizeof(sel));
	ck_assert_str_eq(sel, "team=a,tier notin (free),!gpu");
	sk_spacequota_free(q);
	sk_errlist_dispose(&errs);
}
END_TEST

static const struct {
	const char *spec; /* the spec: block */
	const char *path; /* the field the error names */
} bad[] = {
	{ "  selector: {matchLabels: {team: a}}\n", "spec.hard" },
	{ "  hard: {spaces: -1}\n", "spec.hard.spaces" },
	{ "  hard: {spaces: 1, pods: 2}\n", "spec.hard.pods" },
	{ "  hard: {running: x}\n", "spec.hard.running" },
	{ "  hard: {}\n  selector: {matchLabels: {team: 'a b'}}\n",
	        "spec.selector.matchLabels.team" },
	{ "  hard: {}\n  selector: {matchExpressions: [{key: t, operator: Is, values: [a]}]}\n",
	        "spec.selector.matchExpressions[0].operator" },
	{ "  hard: {}\n  selector: {matchExpressions: [{key: t, operator: In}]}\n",
	        "spec.selector.matchExpressions[0].values" },
	{ "  hard: {}\n  selector: {matchExpressions: [{key: t, operator: Exists, values: [a]}]}\n",
	        "spec.selector.matchExpressions[0].values" },
	{ "  hard: {}\n  selector: {matchExpressions: [{operator: Exists}]}\n",
	        "spec.selector.matchExpressions[0].key" },
	{ "  hard: {}\n  selector: {matchLabel: {team: a}}\n", "spec.selector.matchLabel" },
};

START_TEST(invalid_quota_names_field)
{
	sk_errlist errs = { NULL, 0 };
	char text[1024];
	sk_spacequota *q;
	bool named = false;

	snprintf(text, sizeof(text),
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: SpaceQuota\nmetadata: {name: q}\n"
	        "spec:\n%s",
	        bad[_i].spec);
	q = parse(text, &errs);
	ck_assert_msg(q == NULL, "row %d accepted", _i);
	for (size_t i = 0; i < errs.len; i++)
		named = named || strcmp(errs.items[i].path, bad[_i].path) == 0;
	ck_assert_msg(named, "row %d: no error names %s (first: %s: %s)", _i, bad[_i].path,
	        errs.len ? errs.items[0].path : "-", errs.len ? errs.items[0].message : "-");
	ck_assert_int_gt(errs.items[0].line, 0);
	sk_errlist_dispose(&errs);
}
END_TEST

/* Kubernetes' LabelSelector semantics: NotIn and DoesNotExist match a
 * space without the label; an empty selector matches everything. */
static const struct {
	const char *labels; /* "k=v,k=v" */
	bool want;
} match_rows[] = {
	{ "team=a", true },
	{ "team=a,tier=paid", true },
	{ "team=a,tier=free", false },
	{ "team=a,gpu=yes", false },
	{ "team=b", false },
	{ "", false },
};

static void
labels_of(const char *text, sk_kvlist *out)
{
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", text);
	for (char *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		*eq = '\0';
		sk_kvlist_set(out, kv, eq + 1);
	}
}

START_TEST(selector_matches_as_kubernetes)
{
	sk_errlist errs = { NULL, 0 };
	sk_spacequota *q = parse(GOOD, &errs);
	sk_kvlist l = { NULL, 0 };

	labels_of(match_rows[_i].labels, &l);
	ck_assert_msg(sk_spacequota_matches(q, &l) == match_rows[_i].want, "labels \"%s\"",
	        match_rows[_i].labels);
	sk_kvlist_dispose(&l);
	sk_spacequota_free(q);
	sk_errlist_dispose(&errs);
}
END_TEST

START_TEST(empty_selector_matches_all)
{
	sk_errlist errs = { NULL, 0 };
	sk_spacequota *q = parse("apiVersion: spacekeeper.dev/v1alpha1\nkind: SpaceQuota\n"
	                         "metadata: {name: all}\nspec: {hard: {spaces: 1}}\n",
	        &errs);
	sk_kvlist l = { NULL, 0 };

	ck_assert(q != NULL);
	ck_assert(sk_spacequota_matches(q, &l));
	ck_assert_int_eq(q->hard_running, SK_QUOTA_NO_LIMIT);
	sk_spacequota_free(q);
	sk_errlist_dispose(&errs);
}
END_TEST

/* ---- admission (spec.hard.spaces) ---- */

static sk_spacequota *
quota(const char *name, const char *team, int64_t spaces)
{
	char text[512];
	sk_errlist errs = { NULL, 0 };
	sk_spacequota *q;

	snprintf(text, sizeof(text),
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: SpaceQuota\nmetadata: {name: %s}\n"
	        "spec: {selector: {matchLabels: {team: %s}}, hard: {spaces: %lld}}\n",
	        name, team, (long long)spaces);
	q = parse(text, &errs);
	ck_assert(q != NULL);
	sk_errlist_dispose(&errs);
	return q;
}

static const struct {
	const char *labels;
	int64_t used_a, used_b; /* what quotas a (team=a, 3) and b (team=b, 0) count */
	int want; /* the quota refusing, -1 none */
	const char *msg;
} admit_rows[] = {
	{ "team=a", 2, 0, -1, "" },
	{ "team=a", 3, 0, 0,
	        "exceeded quota: a, requested: spaces=1, used: spaces=3, limited: spaces=3" },
	{ "team=a", 5, 0, 0,
	        "exceeded quota: a, requested: spaces=1, used: spaces=5, limited: spaces=3" },
	{ "team=b", 3, 0, 1,
	        "exceeded quota: b, requested: spaces=1, used: spaces=0, limited: spaces=0" },
	{ "team=c", 3, 0, -1, "" },
	{ "", 9, 9, -1, "" },
};

START_TEST(admission_table)
{
	sk_spacequota *a = quota("a", "a", 3), *b = quota("b", "b", 0);
	const sk_spacequota *q[] = { a, b };
	int64_t used[] = { admit_rows[_i].used_a, admit_rows[_i].used_b };
	sk_kvlist l = { NULL, 0 };
	char msg[256] = "";
	int got;

	labels_of(admit_rows[_i].labels, &l);
	got = sk_quota_admit(q, 2, used, &l, msg, sizeof(msg));
	ck_assert_int_eq(got, admit_rows[_i].want);
	if (got >= 0)
		ck_assert_str_eq(msg, admit_rows[_i].msg);
	sk_kvlist_dispose(&l);
	sk_spacequota_free(a);
	sk_spacequota_free(b);
}
END_TEST

START_TEST(running_message_names_quota)
{
	sk_spacequota *a = quota("team-a", "a", 3);
	char msg[256];

	a->hard_running = 2;
	sk_quota_running_message(a, 2, msg, sizeof(msg));
	ck_assert_str_eq(msg,
	        "exceeded quota: team-a, requested: running=1, used: running=2, "
	        "limited: running=2");
	sk_spacequota_free(a);
}
END_TEST

START_TEST(codec_round_trip)
{
	sk_errlist errs = { NULL, 0 };
	sk_spacequota *q = parse(GOOD, &errs), *back = NULL;
	sk_error err = { 0 };
	json_t *j, *want, *got;

	q->has_used = true;
	q->used_spaces = 2;
	q->used_running = 1;
	q->updated_ms = 1700000000000;
	j = sk_spacequota_to_json(q);
	ck_assert_int_eq(sk_spacequota_decode(j, &back, &err), SK_OK);
	ck_assert(back->has_used);
	ck_assert_int_eq(back->used_spaces, 2);
	ck_assert_int_eq(back->used_running, 1);
	ck_assert_int_eq(back->updated_ms, 1700000000000);
	want = sk_spacequota_desired_json(q);
	got = sk_spacequota_desired_json(back);
	ck_assert(json_equal(want, got));
	json_decref(want);
	json_decref(got);
	json_decref(j);
	sk_spacequota_free(q);
	sk_spacequota_free(back);
	sk_errlist_dispose(&errs);
}
END_TEST

/* ---- the field table and the CRD ---- */

START_TEST(every_field_described)
{
	for (size_t i = 0; i < sk_quota_n_fields; i++) {
		const sk_quota_field *f = &sk_quota_fields[i];
		ck_assert_msg(
		        f->desc != NULL && strlen(f->desc) > 10, "%s: no description", f->path);
		ck_assert_msg(f->type != NULL && *f->type, "%s: no type", f->path);
		ck_assert_ptr_eq(sk_quota_field_of(f->path), f);
	}
}
END_TEST

/* The CRD node of a table path (matchExpressions' fields under items). */
static json_t *
crd_node(json_t *schema, const char *path)
{
	json_t *node = schema;
	char buf[128], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *seg = strtok_r(buf, ".", &save); seg && node; seg = strtok_r(NULL, ".", &save)) {
		if (json_object_get(node, "items") != NULL)
			node = json_object_get(node, "items");
		node = json_object_get(json_object_get(node, "properties"), seg);
	}
	return node;
}

/* Counts the properties under node (recursively), and checks each is a row. */
static size_t
crd_rows(json_t *node, const char *path)
{
	json_t *props, *v;
	const char *k;
	size_t n = 0;

	if (json_object_get(node, "items") != NULL)
		node = json_object_get(node, "items");
	props = json_object_get(node, "properties");
	json_object_foreach(props, k, v)
	{
		char p[128];
		snprintf(p, sizeof(p), "%s%s%s", path, *path ? "." : "", k);
		if (strcmp(p, "metadata") != 0 && strncmp(p, "metadata.", 9) != 0)
			ck_assert_msg(sk_quota_field_of(p) != NULL, "CRD field %s: no row", p);
		n += 1 + crd_rows(v, p);
	}
	return n;
}

START_TEST(crd_matches_table)
{
	sk_doclist docs = { NULL, 0 };
	sk_error err = { 0 };
	json_t *v, *schema;
	size_t rows = 0;

	ck_assert_msg(sk_doc_load_path(sk_test_path("crds/spacekeeper.dev_spacequotas.yaml"), &docs,
	                      &err) == SK_OK,
	        "%s", err.message);
	v = json_array_get(
	        json_object_get(json_object_get(sk_doc_root(docs.items[0]), "spec"), "versions"),
	        0);
	schema = json_object_get(json_object_get(v, "schema"), "openAPIV3Schema");
	ck_assert_ptr_nonnull(schema);
	for (size_t i = 0; i < sk_quota_n_fields; i++) {
		const sk_quota_field *f = &sk_quota_fields[i];
		json_t *n = *f->path ? crd_node(schema, f->path) : schema;
		const char *d;
		/* ObjectMeta: the API server refuses a metadata schema with more
		 * than name and generateName (test/crdcheck shows it) */
		if (strncmp(f->path, "metadata", 8) == 0 && strcmp(f->path, "metadata.name") != 0) {
			ck_assert_msg(n == NULL || strcmp(f->path, "metadata") == 0,
			        "%s: ObjectMeta in the CRD", f->path);
			continue;
		}
		ck_assert_msg(n != NULL, "%s: not in the CRD", f->path);
		d = json_string_value(json_object_get(n, "description"));
		ck_assert_msg(d != NULL && *d, "%s: no description in the CRD", f->path);
		rows += *f->path && strncmp(f->path, "metadata", 8) != 0;
	}
	/* every CRD property outside metadata is a row, and each row is there */
	ck_assert_uint_eq(crd_rows(schema, "") -
	                crd_rows(json_object_get(json_object_get(schema, "properties"), "metadata"),
	                        "metadata") -
	                1,
	        rows);
	/* the bounds of the lists the CEL rule reads, as the validator's */
	ck_assert_int_eq(json_integer_value(json_object_get(
	                         crd_node(schema, "spec.selector.matchExpressions"), "maxItems")),
	        SK_QUOTA_MAX_EXPRS);
	ck_assert_int_eq(
	        json_integer_value(json_object_get(
	                crd_node(schema, "spec.selector.matchExpressions.values"), "maxItems")),
	        SK_QUOTA_MAX_VALUES);
	sk_doclist_dispose(&docs);
}
END_TEST

/* A selector of n requirements (tier-I In [a]), the last with m values. */
static char *
selector_of(int n, int m)
{
	size_t cap = 4096 + (size_t)n * 64 + (size_t)m * 16;
	char *text = malloc(cap);

	ck_assert_ptr_nonnull(text);
	snprintf(text, cap,
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: SpaceQuota\nmetadata: {name: q}\n"
	        "spec:\n  hard: {spaces: 1}\n  selector:\n    matchExpressions:\n");
	for (int i = 0; i < n; i++) {
		snprintf(text + strlen(text), cap - strlen(text),
		        "      - {key: tier-%d, operator: In, values: [a", i);
		for (int j = 1; i == n - 1 && j < m; j++)
			snprintf(text + strlen(text), cap - strlen(text), ", v%d", j);
		snprintf(text + strlen(text), cap - strlen(text), "]}\n");
	}
	return text;
}

/* The first error's path, "" when the quota is valid. */
static char *
first_error(const char *text)
{
	sk_errlist errs = { NULL, 0 };
	sk_spacequota *q = parse(text, &errs);
	char *path = sk_strdup(errs.len ? errs.items[0].path : "");

	ck_assert((q == NULL) == (errs.len > 0));
	sk_spacequota_free(q);
	sk_errlist_dispose(&errs);
	return path;
}

START_TEST(selector_bounds)
{
	static const struct {
		int exprs, values;
		const char *path; /* "" valid */
	} rows[] = {
		{ SK_QUOTA_MAX_EXPRS, SK_QUOTA_MAX_VALUES, "" },
		{ SK_QUOTA_MAX_EXPRS + 1, 1, "spec.selector.matchExpressions" },
		{ 1, SK_QUOTA_MAX_VALUES + 1, "spec.selector.matchExpressions[0].values" },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char *text = selector_of(rows[i].exprs, rows[i].values);
		char *path = first_error(text);
		ck_assert_msg(strcmp(path, rows[i].path) == 0,
		        "%d requirements, %d values: got \"%s\"", rows[i].exprs, rows[i].values,
		        path);
		free(path);
		free(text);
	}
}
END_TEST

Suite *
sk_suite_quota(void)
{
	Suite *s = suite_create("quota");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, valid_quota_decodes);
	tcase_add_loop_test(tc, invalid_quota_names_field, 0, (int)(sizeof(bad) / sizeof(bad[0])));
	tcase_add_loop_test(tc, selector_matches_as_kubernetes, 0,
	        (int)(sizeof(match_rows) / sizeof(match_rows[0])));
	tcase_add_test(tc, empty_selector_matches_all);
	tcase_add_loop_test(
	        tc, admission_table, 0, (int)(sizeof(admit_rows) / sizeof(admit_rows[0])));
	tcase_add_test(tc, running_message_names_quota);
	tcase_add_test(tc, codec_round_trip);
	tcase_add_test(tc, every_field_described);
	tcase_add_test(tc, crd_matches_table);
	tcase_add_test(tc, selector_bounds);
	suite_add_tcase(s, tc);
	return s;
}
