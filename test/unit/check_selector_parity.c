/*
 * Label selectors as Kubernetes parses them (k8s.io/apimachinery labels.Parse,
 * what kubectl -l sends): "k>N" and "k<N" take one base-10 int64 and match a
 * label whose value is an integer beyond it; anything else after > or < is an
 * error, as it is there. Part of the parity table (test/conformance/parity.mjs
 * holds the documents' rows).
 */
#include <check.h>
#include <string.h>

#include "api/kvlist.h"
#include "api/selector.h"

Suite *sk_suite_selector_parity(void);

static const struct {
	const char *selector;
	const char *tier; /* the label's value; NULL: no tier label */
	int want; /* 1 match, 0 no match, -1 parse error */
} rows[] = {
	/* clang-format off */
	{ "tier>3", "5", 1 },
	{ "tier>3", "3", 0 },
	{ "tier>3", "-7", 0 },
	{ "tier<3", "2", 1 },
	{ "tier<3", "10", 0 },
	{ "tier>3", "x", 0 }, /* not an integer: no match */
	{ "tier>3", NULL, 0 }, /* absent: no match */
	{ "tier > 3, tier < 9", "5", 1 },
	{ "tier>3,team=a", "5", 1 },
	{ "tier>x", "5", -1 },
	{ "tier>", "5", -1 },
	{ "tier>1.5", "5", -1 },
	{ "tier<99999999999999999999", "5", -1 }, /* beyond int64 */
	{ "tier>-1", "5", -1 }, /* "-1" is not a label value */
	/* clang-format on */
};

START_TEST(test_selector_row)
{
	sk_selector *s = NULL;
	sk_error err;
	sk_kvlist labels = { NULL, 0 };
	int got;

	sk_error_clear(&err);
	sk_kvlist_set(&labels, "team", "a");
	if (rows[_i].tier != NULL)
		sk_kvlist_set(&labels, "tier", rows[_i].tier);
	if (sk_selector_parse(rows[_i].selector, &s, &err) != SK_OK)
		got = -1;
	else
		got = sk_selector_matches(s, &labels) ? 1 : 0;
	ck_assert_msg(got == rows[_i].want, "\"%s\" on tier=%s: got %d, want %d (%s)",
	        rows[_i].selector, rows[_i].tier ? rows[_i].tier : "(none)", got, rows[_i].want,
	        err.message);
	if (got == -1)
		ck_assert_msg(strstr(err.message, "selector:") != NULL, "%s", err.message);
	sk_selector_free(s);
	sk_kvlist_dispose(&labels);
}
END_TEST

Suite *
sk_suite_selector_parity(void)
{
	Suite *s = suite_create("selector_parity");
	TCase *tc = tcase_create("rows");

	tcase_add_loop_test(tc, test_selector_row, 0, (int)(sizeof(rows) / sizeof(rows[0])));
	suite_add_tcase(s, tc);
	return s;
}
