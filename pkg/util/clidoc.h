/*
 * util/clidoc: a command's --help text, read as data, rendered as a Markdown
 * page or a man page (roff, man(7) macros). The three binaries keep one
 * source for each command: the usage and help text that --help prints and
 * the option table that getopt parses with; `PROG __gen-docs FORMAT DIR`
 * renders them through this module, so the pages cannot say other than
 * --help (make docs writes them, hack/check-docs.sh checks they are current).
 *
 * The help text is paragraphs separated by blank lines:
 *   - "Title:" alone on a line, then lines indented by two spaces: a section.
 *     Its rows are "  TERM  DESCRIPTION" (two spaces at least between the
 *     two), continued on lines indented further; a flag row may also start
 *     with "      --long" (no short form). "Flags", "Global flags",
 *     "Subcommands" and "Commands" sections must be rows; a section titled
 *     "Example..." or whose lines are not rows is shown verbatim.
 *   - A line starting "Exit codes:" begins the exit status (to the end of
 *     its paragraph).
 *   - Anything else is prose.
 */
#ifndef SK_UTIL_CLIDOC_H
#define SK_UTIL_CLIDOC_H

#include <getopt.h>
#include <stddef.h>

#include "util/util.h"

/* An environment variable a page documents. */
typedef struct sk_clidoc_env {
	const char *name; /* "SPACEKEEPER_MONGODB_URI" */
	const char *text; /* what it does, one paragraph */
} sk_clidoc_env;

/* One page: a program (cmd NULL) or one of its commands. Every string is
 * borrowed for the call. */
typedef struct sk_clidoc_page {
	const char *prog; /* "spacectl" */
	const char *cmd; /* "apply", or NULL for the program's own page */
	const char *summary; /* one line: the NAME section and the index */
	const char *usage; /* synopsis lines, "\n" between, without "usage: " */
	const char *text; /* the help body, in the format above */
	const char *common; /* help text every command shares (global flags), or NULL */
	const char *exit_codes; /* exit status when text has none, or NULL */
	const struct option *opts; /* the long flags accepted ({0}-terminated), or NULL */
	const char *shortopts; /* getopt's short flags, or NULL */
	const sk_clidoc_env *env; /* nenv variables */
	size_t nenv;
	const char *const *see_also; /* nsee page names ("spacectl-get") */
	size_t nsee;
} sk_clidoc_page;

typedef enum sk_clidoc_format {
	SK_CLIDOC_MARKDOWN,
	SK_CLIDOC_MAN,
} sk_clidoc_format;

/* Parses p's text and appends the page to out. SK_EINVALID (err names the
 * page and the problem) when the text breaks the format above, when a flag
 * p->opts or p->shortopts accepts is named by no flag row, or (p->opts set)
 * when a flag row names a flag they do not accept. */
int sk_clidoc_render(const sk_clidoc_page *p, sk_clidoc_format fmt, sk_buf *out, sk_error *err);

/* The page's name into out: "spacectl" or "spacectl-apply". */
void sk_clidoc_page_name(const sk_clidoc_page *p, char *out, size_t n);

/* Renders p into DIR/NAME.md or DIR/NAME.1. SK_EINVALID as render, SK_EIO. */
int sk_clidoc_write(const sk_clidoc_page *p, sk_clidoc_format fmt, const char *dir, sk_error *err);
/* Writes text to DIR/FILE, ending with exactly one newline. SK_EIO. */
int sk_clidoc_write_file(const char *dir, const char *file, const sk_buf *text, sk_error *err);
/* "markdown" or "man". SK_EINVALID otherwise. */
int sk_clidoc_format_parse(const char *s, sk_clidoc_format *out);
/* Appends the usage lines as --help starts: "usage: " before the first,
 * blanks of the same width before the others. */
void sk_clidoc_usage(const char *usage, sk_buf *out);

/* The man pages' date and source (.TH): the release they document. */
#define SK_CLIDOC_DATE "2026-12-01"

#endif
