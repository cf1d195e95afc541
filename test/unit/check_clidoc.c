/*
 * The reference pages from --help text (pkg/util/clidoc.c): each section of
 * the text lands where a man page and a Markdown page want it, every flag a
 * command accepts must be named by a flag row, and text that breaks the
 * format is refused with the page and the row named.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/clidoc.h"

Suite *sk_suite_clidoc(void);

static const char TEXT[] = "Does a thing to UserSpaces. Some *.yaml files,\n"
                           ".dotted line and a back\\slash.\n"
                           "\n"
                           "Flags:\n"
                           "  -f, --filename PATH   a file (repeatable)\n"
                           "      --dry-run         print what would change,\n"
                           "                        write nothing\n"
                           "\n"
                           "More prose after the flags.\n"
                           "\n"
                           "Exit codes: 0 done; 1 failure;\n"
                           "2 usage.\n"
                           "\n"
                           "Examples:\n"
                           "  spacectl thing -f a.yaml\n"
                           "  spacectl thing --dry-run -f -\n";

static const char COMMON[] = "Global flags:\n"
                             "  --database NAME    database name\n"
                             "  -h, --help         print this help\n";

static const struct option OPTS[] = { { "filename", required_argument, NULL, 'f' },
	{ "dry-run", no_argument, NULL, 1 }, { "database", required_argument, NULL, 2 },
	{ "help", no_argument, NULL, 'h' }, { 0 } };

static const sk_clidoc_env ENV[] = { { "SPACEKEEPER_MONGODB_URI", "the URI" } };
static const char *const SEE[] = { "spacectl" };

static sk_clidoc_page
page(const char *text, const struct option *opts, const char *shortopts)
{
	sk_clidoc_page p = { "spacectl", "thing", "does a thing", "spacectl thing -f path ...",
		text, COMMON, NULL, opts, shortopts, ENV, 1, SEE, 1 };
	return p;
}

/* Renders p; the page, or NULL with the error in msg. Caller frees. */
static char *
render(const sk_clidoc_page *p, sk_clidoc_format fmt, char *msg, size_t n)
{
	sk_buf b = SK_BUF_INIT(0);
	sk_error err;

	sk_error_clear(&err);
	if (sk_clidoc_render(p, fmt, &b, &err) != SK_OK) {
		snprintf(msg, n, "%s", err.message);
		sk_buf_dispose(&b);
		return NULL;
	}
	return sk_buf_detach(&b);
}

/* Whether a comes before b in s (both present). */
static bool
in_order(const char *s, const char *a, const char *b)
{
	const char *pa = strstr(s, a), *pb = strstr(s, b);

	return pa && pb && pa < pb;
}

START_TEST(test_man_sections)
{
	sk_clidoc_page p = page(TEXT, OPTS, "f:h");
	char msg[256] = "";
	char *man = render(&p, SK_CLIDOC_MAN, msg, sizeof(msg));

	ck_assert_msg(man != NULL, "%s", msg);
	ck_assert_ptr_nonnull(strstr(man, ".TH \"SPACECTL\\-THING\" 1 \"" SK_CLIDOC_DATE "\""));
	ck_assert_ptr_nonnull(strstr(man, ".SH NAME\nspacectl\\-thing \\- does a thing\n"));
	ck_assert_ptr_nonnull(
	        strstr(man, ".SH SYNOPSIS\n.nf\nspacectl thing \\-f path ...\n.fi\n"));
	/* a row per flag, its continuation joined; escapes for - . and \ */
	ck_assert_ptr_nonnull(strstr(man, ".TP\n\\fB\\-f, \\-\\-filename PATH\\fR\na file"));
	ck_assert_ptr_nonnull(
	        strstr(man, "\\fB\\-\\-dry\\-run\\fR\nprint what would change, write nothing\n"));
	ck_assert_ptr_nonnull(strstr(man, "\n\\&.dotted line and a back\\eslash."));
	/* the order of a man page, whatever the order of the text */
	ck_assert(in_order(man, ".SH DESCRIPTION", "More prose after the flags."));
	ck_assert(in_order(man, "More prose after the flags.", ".SH \"OPTIONS\""));
	ck_assert(in_order(man, ".SH \"OPTIONS\"", ".SH \"GLOBAL OPTIONS\""));
	ck_assert(
	        in_order(man, ".SH \"GLOBAL OPTIONS\"", ".SH EXIT STATUS\n0 done; 1 failure;\n2"));
	ck_assert(in_order(
	        man, ".SH EXIT STATUS", ".SH ENVIRONMENT\n.TP\n\\fBSPACEKEEPER_MONGODB_URI"));
	ck_assert(in_order(man, ".SH ENVIRONMENT",
	        ".SH \"EXAMPLES\"\n.RS 4\n.nf\nspacectl thing \\-f a.yaml\n"));
	ck_assert(in_order(man, ".SH \"EXAMPLES\"", ".SH SEE ALSO\n.BR spacectl (1)\n"));
	/* no paragraph macro right after a heading (mandoc -Tlint warns) */
	ck_assert_ptr_null(strstr(man, "\n.PP\n.SH"));
	ck_assert_ptr_null(strstr(man, "\"\n.PP\n"));
	free(man);
}
END_TEST

START_TEST(test_markdown_sections)
{
	sk_clidoc_page p = page(TEXT, OPTS, "f:h");
	char msg[256] = "";
	char *md = render(&p, SK_CLIDOC_MARKDOWN, msg, sizeof(msg));

	ck_assert_msg(md != NULL, "%s", msg);
	ck_assert_ptr_nonnull(strstr(md, "# spacectl thing\n\ndoes a thing\n"));
	ck_assert_ptr_nonnull(strstr(md, "## Synopsis\n\n```\nspacectl thing -f path ...\n```"));
	ck_assert_ptr_nonnull(strstr(md, "Some \\*.yaml files"));
	ck_assert_ptr_nonnull(strstr(md, "- `-f, --filename PATH`: a file (repeatable)\n"));
	ck_assert_ptr_nonnull(
	        strstr(md, "- `--dry-run`: print what would change, write nothing\n"));
	ck_assert_ptr_nonnull(
	        strstr(md, "## Global flags\n\n- `--database NAME`: database name\n"));
	ck_assert_ptr_nonnull(strstr(md, "## Exit codes\n\n0 done; 1 failure;\n2 usage.\n"));
	ck_assert_ptr_nonnull(strstr(md, "- `SPACEKEEPER_MONGODB_URI`: the URI\n"));
	ck_assert_ptr_nonnull(strstr(md, "## Examples\n\n```sh\nspacectl thing -f a.yaml\n"));
	ck_assert_ptr_nonnull(strstr(md, "- [spacectl(1)](spacectl.md)"));
	ck_assert(in_order(md, "## Flags", "## Global flags"));
	ck_assert(in_order(md, "## Environment", "## Examples"));
	free(md);
}
END_TEST

/* A flag the command accepts but no flag row names fails the page. */
START_TEST(test_undocumented_flag)
{
	static const struct option more[] = { { "filename", required_argument, NULL, 'f' },
		{ "force", no_argument, NULL, 3 }, { 0 } };
	sk_clidoc_page p = page(TEXT, more, NULL);
	char msg[256] = "";
	char *out = render(&p, SK_CLIDOC_MAN, msg, sizeof(msg));

	ck_assert_ptr_null(out);
	ck_assert_ptr_nonnull(strstr(msg, "spacectl thing: --force is accepted"));
	/* a short flag too: -x */
	p = page(TEXT, OPTS, "f:x");
	out = render(&p, SK_CLIDOC_MARKDOWN, msg, sizeof(msg));
	ck_assert_ptr_null(out);
	ck_assert_ptr_nonnull(strstr(msg, "-x is accepted"));
	/* named in prose only does not count: --dry-run-extra is not --dry-run */
	{
		static const struct option prose_only[] = { { "recover", no_argument, NULL, 4 },
			{ 0 } };
		static const char t[] = "Use --recover after a crash.\n\nFlags:\n"
		                        "  --recover-all  not the same flag\n";
		p = page(t, prose_only, NULL);
		out = render(&p, SK_CLIDOC_MAN, msg, sizeof(msg));
		ck_assert_ptr_null(out);
		ck_assert_ptr_nonnull(strstr(msg, "--recover is accepted"));
	}
}
END_TEST

/* A flag row that names a flag the command refuses fails the page too
 * (spacectl wait listed the global --context and refused it). */
START_TEST(test_row_not_accepted)
{
	static const struct option no_database[] = { { "filename", required_argument, NULL, 'f' },
		{ "dry-run", no_argument, NULL, 1 }, { "help", no_argument, NULL, 'h' }, { 0 } };
	sk_clidoc_page p = page(TEXT, no_database, "f:h");
	char msg[256] = "";
	char *out = render(&p, SK_CLIDOC_MAN, msg, sizeof(msg));

	ck_assert_ptr_null(out);
	ck_assert_ptr_nonnull(strstr(msg, "spacectl thing: its help names --database, which it"));
	/* a short flag the rows name but getopt refuses */
	p = page(TEXT, OPTS, "h");
	out = render(&p, SK_CLIDOC_MAN, msg, sizeof(msg));
	ck_assert_ptr_null(out);
	ck_assert_ptr_nonnull(strstr(msg, "names -f, which it does not accept"));
}
END_TEST

/* Text that breaks the format is refused, naming the page and the row. */
START_TEST(test_bad_rows)
{
	static const char one_space[] = "Flags:\n"
	                                "      --ignore-not-found exit 0 when missing\n";
	static const char not_rows[] = "Commands:\n"
	                               "  apply\n";
	sk_clidoc_page p = page(one_space, NULL, NULL);
	char msg[256] = "";
	char *out = render(&p, SK_CLIDOC_MAN, msg, sizeof(msg));

	ck_assert_ptr_null(out);
	ck_assert_ptr_nonnull(strstr(msg, "spacectl thing: flag row \"--ignore-not-found exit 0"));
	ck_assert_ptr_nonnull(strstr(msg, "needs two spaces"));
	p = page(not_rows, NULL, NULL);
	out = render(&p, SK_CLIDOC_MARKDOWN, msg, sizeof(msg));
	ck_assert_ptr_null(out);
	ck_assert_ptr_nonnull(strstr(msg, "section \"Commands\" is not rows"));
}
END_TEST

/* A titled block that is not rows (a JSON document) stays verbatim. */
START_TEST(test_verbatim)
{
	static const char t[] = "Document:\n"
	                        "  {\"a\": {\"b\": 1},\n"
	                        "   \"c\": 2}\n";
	sk_clidoc_page p = page(t, NULL, NULL);
	char msg[256] = "";
	char *md = render(&p, SK_CLIDOC_MARKDOWN, msg, sizeof(msg));

	ck_assert_msg(md != NULL, "%s", msg);
	ck_assert_ptr_nonnull(
	        strstr(md, "## Document\n\n```\n{\"a\": {\"b\": 1},\n \"c\": 2}\n```"));
	free(md);
}
END_TEST

START_TEST(test_usage_lines)
{
	sk_buf b = SK_BUF_INIT(0);

	sk_clidoc_usage("prog a\nprog b [x]", &b);
	ck_assert_str_eq(b.data, "usage: prog a\n       prog b [x]\n");
	sk_buf_dispose(&b);
}
END_TEST

Suite *
sk_suite_clidoc(void)
{
	Suite *s = suite_create("clidoc");
	TCase *tc = tcase_create("render");

	tcase_add_test(tc, test_man_sections);
	tcase_add_test(tc, test_markdown_sections);
	tcase_add_test(tc, test_undocumented_flag);
	tcase_add_test(tc, test_row_not_accepted);
	tcase_add_test(tc, test_bad_rows);
	tcase_add_test(tc, test_verbatim);
	tcase_add_test(tc, test_usage_lines);
	suite_add_tcase(s, tc);
	return s;
}
