/*
 * util/clidoc: --help text as data (clidoc.h says the format), rendered as a
 * Markdown or a man page. Parsing splits the text into parts (prose, a
 * section of rows, a verbatim block, the exit status); both renderers walk
 * the parts in the order a man page wants them, so the two formats hold the
 * same words.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/clidoc.h"
#include "util/version.h"

typedef enum part_kind { PART_PROSE, PART_ROWS, PART_VERBATIM, PART_EXIT } part_kind;

typedef struct row {
	char *term;
	sk_buf desc;
} row;

typedef struct part {
	part_kind kind;
	char *title; /* NULL: untitled */
	sk_buf body; /* prose, verbatim (indent removed) or exit status lines */
	row *rows;
	size_t nrows;
} part;

typedef struct doc {
	part *parts;
	size_t n;
} doc;

/* ---- parsing ---- */

static size_t
indent_of(const char *line)
{
	return strspn(line, " ");
}

static bool
title_is(const part *pt, const char *title)
{
	return pt->title && strcmp(pt->title, title) == 0;
}

static bool
must_be_rows(const char *title)
{
	static const char *const names[] = { "Flags", "Global flags", "Subcommands", "Commands" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(title, names[i]) == 0)
			return true;
	}
	return false;
}

static part *
add_part(doc *d, part_kind kind, const char *title, size_t tlen)
{
	part *pt;

	d->parts = sk_realloc(d->parts, (d->n + 1) * sizeof(*d->parts));
	pt = &d->parts[d->n++];
	memset(pt, 0, sizeof(*pt));
	pt->kind = kind;
	pt->title = title ? sk_strndup(title, tlen) : NULL;
	pt->body = (sk_buf)SK_BUF_INIT(0);
	return pt;
}

static void
doc_dispose(doc *d)
{
	for (size_t i = 0; i < d->n; i++) {
		part *pt = &d->parts[i];
		for (size_t k = 0; k < pt->nrows; k++) {
			free(pt->rows[k].term);
			sk_buf_dispose(&pt->rows[k].desc);
		}
		free(pt->rows);
		free(pt->title);
		sk_buf_dispose(&pt->body);
	}
	free(d->parts);
}

static void
append_line(sk_buf *b, const char *line, size_t len)
{
	if (b->len > 0)
		sk_buf_append(b, "\n", 1);
	sk_buf_append(b, line, len);
}

/* Whether the line starts a row: "  TERM..." or "      --flag...". */
static bool
row_start(const char *line)
{
	size_t ind = indent_of(line);

	if (ind == 2)
		return line[2] != '\0';
	return ind > 2 && ind <= 6 && line[ind] == '-';
}

/* A flag row's term is flags and their arguments: two words in a row that
 * are not flags mean the description was not set off by two spaces. */
static bool
flag_term_ok(const char *term)
{
	bool prev_arg = false;

	while (*term) {
		size_t n = strcspn(term, " ");
		bool arg = term[0] != '-';
		if (arg && prev_arg)
			return false;
		prev_arg = arg;
		term += n;
		term += strspn(term, " ");
	}
	return true;
}

/* Splits a row line into its term and the start of its description. */
static row
split_row(const char *line)
{
	const char *t = line + indent_of(line), *gap = strstr(t, "  ");
	row r = { NULL, SK_BUF_INIT(0) };
	const char *d;

	r.term = gap ? sk_strndup(t, (size_t)(gap - t)) : sk_strdup(t);
	if (gap) {
		d = gap + strspn(gap, " ");
		sk_buf_append(&r.desc, d, strlen(d));
	}
	return r;
}

/* Reads body lines as rows into pt; false when they are not rows. */
static bool
read_rows(part *pt, char **lines, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *l = lines[i];
		size_t ind = indent_of(l);
		if (row_start(l)) {
			row r = split_row(l);
			if (r.desc.len == 0 && r.term[0] != '-') {
				free(r.term);
				return false;
			}
			pt->rows = sk_realloc(pt->rows, (pt->nrows + 1) * sizeof(*pt->rows));
			pt->rows[pt->nrows++] = r;
		} else if (ind > 2 && pt->nrows > 0) {
			sk_buf *d = &pt->rows[pt->nrows - 1].desc;
			if (d->len > 0)
				sk_buf_append(d, " ", 1);
			sk_buf_append(d, l + ind, strlen(l + ind));
		} else {
			return false;
		}
	}
	return pt->nrows > 0;
}

static void
drop_rows(part *pt)
{
	for (size_t k = 0; k < pt->nrows; k++) {
		free(pt->rows[k].term);
		sk_buf_dispose(&pt->rows[k].desc);
	}
	free(pt->rows);
	pt->rows = NULL;
	pt->nrows = 0;
}

static void
read_verbatim(part *pt, char **lines, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *l = lines[i];
		size_t cut = indent_of(l) < 2 ? indent_of(l) : 2;
		append_line(&pt->body, l + cut, strlen(l + cut));
	}
}

static int
read_section(doc *d, const char *who, char **lines, size_t n, sk_error *err)
{
	const char *title = lines[0];
	part *pt = add_part(d, PART_ROWS, title, strlen(title) - 1);

	if (strncmp(pt->title, "Example", 7) != 0 && read_rows(pt, lines + 1, n - 1)) {
		for (size_t i = 0; i < pt->nrows; i++) {
			if (pt->rows[i].term[0] == '-' && !flag_term_ok(pt->rows[i].term))
				return sk_error_set(err, SK_EINVALID,
				        "%s: flag row \"%s\" needs two spaces before its "
				        "description",
				        who, pt->rows[i].term);
		}
		return SK_OK;
	}
	drop_rows(pt);
	if (must_be_rows(pt->title))
		return sk_error_set(err, SK_EINVALID,
		        "%s: section \"%s\" is not rows of \"  TERM  DESCRIPTION\"", who,
		        pt->title);
	pt->kind = PART_VERBATIM;
	read_verbatim(pt, lines + 1, n - 1);
	return SK_OK;
}

/* A paragraph without a title: prose, then the exit status from a line that
 * starts "Exit codes:"; all lines indented: verbatim. */
static void
read_plain(doc *d, char **lines, size_t n)
{
	size_t k = 0, min_ind = 99;
	part *pt;

	for (size_t i = 0; i < n; i++)
		min_ind = indent_of(lines[i]) < min_ind ? indent_of(lines[i]) : min_ind;
	if (min_ind >= 2) {
		read_verbatim(add_part(d, PART_VERBATIM, NULL, 0), lines, n);
		return;
	}
	while (k < n && strncmp(lines[k], "Exit codes:", 11) != 0)
		k++;
	if (k > 0) {
		pt = add_part(d, PART_PROSE, NULL, 0);
		for (size_t i = 0; i < k; i++)
			append_line(&pt->body, lines[i], strlen(lines[i]));
	}
	if (k == n)
		return;
	pt = add_part(d, PART_EXIT, NULL, 0);
	append_line(&pt->body, lines[k] + 11 + strspn(lines[k] + 11, " "),
	        strlen(lines[k] + 11 + strspn(lines[k] + 11, " ")));
	for (size_t i = k + 1; i < n; i++)
		append_line(&pt->body, lines[i], strlen(lines[i]));
}

static bool
is_title(char **lines, size_t n)
{
	size_t len = strlen(lines[0]);

	return n > 1 && len > 1 && lines[0][0] != ' ' && lines[0][len - 1] == ':' &&
	        strncmp(lines[0], "Exit codes:", 11) != 0;
}

/* Parses text into d, paragraph by paragraph (blank lines between). */
static int
parse_text(doc *d, const char *who, const char *text, sk_error *err)
{
	char *copy = sk_strdup(text ? text : ""), **lines = NULL, *p = copy;
	size_t n = 0, a = 0;
	int rc = SK_OK;

	while (*p) {
		char *nl = strchr(p, '\n');
		lines = sk_realloc(lines, (n + 1) * sizeof(*lines));
		lines[n++] = p;
		if (nl == NULL)
			break;
		*nl = '\0';
		p = nl + 1;
	}
	while (rc == SK_OK && a < n) {
		size_t b = a;
		while (b < n && lines[b][0] != '\0')
			b++;
		if (b > a && is_title(lines + a, b - a))
			rc = read_section(d, who, lines + a, b - a, err);
		else if (b > a)
			read_plain(d, lines + a, b - a);
		a = b + 1;
	}
	free(lines);
	free(copy);
	return rc;
}

/* ---- the flags a command accepts must be named by a flag row ---- */

/* Whether flag ("--all", "-f") is a word of term. */
static bool
term_names(const char *term, const char *flag)
{
	size_t n = strlen(flag);

	for (const char *q = term; (q = strstr(q, flag)) != NULL; q += n) {
		bool start = q == term || q[-1] == ' ';
		bool end = q[n] == '\0' || q[n] == ' ' || q[n] == ',' || q[n] == '=' || q[n] == '[';
		if (start && end)
			return true;
	}
	return false;
}

static bool
documented(const doc *docs, size_t ndocs, const char *flag)
{
	for (size_t k = 0; k < ndocs; k++) {
		for (size_t i = 0; i < docs[k].n; i++) {
			const part *pt = &docs[k].parts[i];
			for (size_t r = 0; pt->kind == PART_ROWS && r < pt->nrows; r++) {
				if (pt->rows[r].term[0] == '-' &&
				        term_names(pt->rows[r].term, flag))
					return true;
			}
		}
	}
	return false;
}

/* Whether the flag word w ("--all", "-f", "--for=COND", "-o,") is one the
 * command accepts. */
static bool
accepted(const sk_clidoc_page *p, const char *w, size_t n)
{
	size_t len = strcspn(w, ",=["); /* --dry-run[=MODE]: an optional argument */

	len = len < n ? len : n;
	if (len == 2 && w[1] != '-')
		return p->shortopts && strchr(p->shortopts, w[1]) != NULL && w[1] != ':';
	for (size_t i = 0; len > 2 && p->opts[i].name; i++) {
		if (strlen(p->opts[i].name) == len - 2 &&
		        strncmp(p->opts[i].name, w + 2, len - 2) == 0)
			return true;
	}
	return false;
}

/* Every flag a flag row names is accepted (a help that lists a flag the
 * command refuses is as wrong as one that hides a flag). */
static int
check_rows_accepted(const sk_clidoc_page *p, const char *who, const doc *d, sk_error *err)
{
	for (size_t i = 0; i < d->n; i++) {
		const part *pt = &d->parts[i];
		for (size_t r = 0; pt->kind == PART_ROWS && r < pt->nrows; r++) {
			const char *w = pt->rows[r].term;
			while (w[0] == '-' && *w) {
				size_t n = strcspn(w, " ");
				if (w[0] == '-' && !accepted(p, w, n))
					return sk_error_set(err, SK_EINVALID,
					        "%s: its help names %.*s, which it does not accept",
					        who, (int)strcspn(w, " ,=["), w);
				w += n;
				w += strspn(w, " ");
				while (*w && *w != '-') { /* the argument */
					w += strcspn(w, " ");
					w += strspn(w, " ");
				}
			}
		}
	}
	return SK_OK;
}

static int
check_flags(const sk_clidoc_page *p, const char *who, const doc *docs, sk_error *err)
{
	char flag[80];

	for (size_t i = 0; p->opts && p->opts[i].name; i++) {
		snprintf(flag, sizeof(flag), "--%s", p->opts[i].name);
		if (!documented(docs, 2, flag))
			return sk_error_set(err, SK_EINVALID,
			        "%s: %s is accepted but no flag row of its help names it", who,
			        flag);
	}
	for (const char *s = p->shortopts ? p->shortopts : ""; *s; s++) {
		if (*s == ':' || *s == '+' || *s == '-')
			continue;
		snprintf(flag, sizeof(flag), "-%c", *s);
		if (!documented(docs, 2, flag))
			return sk_error_set(err, SK_EINVALID,
			        "%s: %s is accepted but no flag row of its help names it", who,
			        flag);
	}
	if (p->opts == NULL)
		return SK_OK;
	if (check_rows_accepted(p, who, &docs[0], err) != SK_OK)
		return err->code;
	return check_rows_accepted(p, who, &docs[1], err);
}

/* ---- man(7) ---- */

/* Appends s escaped for roff text: backslashes, minus signs, and a . or '
 * that starts a line (a request otherwise). */
static void
man_text(sk_buf *o, const char *s, size_t len)
{
	bool bol = true;

	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (bol && (c == '.' || c == '\''))
			sk_buf_append(o, "\\&", 2);
		if (c == '\\')
			sk_buf_append(o, "\\e", 2);
		else if (c == '-')
			sk_buf_append(o, "\\-", 2);
		else
			sk_buf_append(o, &c, 1);
		bol = c == '\n';
	}
}

static void
man_str(sk_buf *o, const char *s)
{
	man_text(o, s, strlen(s));
}

static void
man_heading(sk_buf *o, const char *title)
{
	const char *t = title;

	if (strcmp(title, "Flags") == 0)
		t = "OPTIONS";
	else if (strcmp(title, "Global flags") == 0)
		t = "GLOBAL OPTIONS";
	else if (strncmp(title, "Example", 7) == 0)
		t = "EXAMPLES";
	sk_buf_printf(o, ".SH \"");
	for (; *t; t++) {
		char c = (char)toupper((unsigned char)*t);
		if (c == '"')
			continue;
		man_text(o, &c, 1);
	}
	sk_buf_printf(o, "\"\n");
}

/* Renders one part; fresh: nothing written since the last .SH. */
static void
man_part(sk_buf *o, const part *pt, bool *fresh)
{
	if (pt->title) {
		man_heading(o, pt->title);
		*fresh = true;
	}
	if (pt->kind == PART_ROWS) {
		for (size_t i = 0; i < pt->nrows; i++) {
			sk_buf_printf(o, ".TP\n\\fB");
			man_str(o, pt->rows[i].term);
			sk_buf_printf(o, "\\fR\n");
			man_text(o, pt->rows[i].desc.data ? pt->rows[i].desc.data : "",
			        pt->rows[i].desc.len);
			sk_buf_printf(o, "\n");
		}
	} else {
		if (!*fresh)
			sk_buf_printf(o, ".PP\n");
		if (pt->kind == PART_VERBATIM)
			sk_buf_printf(o, ".RS 4\n.nf\n");
		man_text(o, pt->body.data ? pt->body.data : "", pt->body.len);
		sk_buf_printf(o, "\n%s", pt->kind == PART_VERBATIM ? ".fi\n.RE\n" : "");
	}
	*fresh = false;
}

/* ---- Markdown ---- */

/* Appends s escaped for Markdown prose: what could start HTML, a code span
 * or emphasis (an underscore only at a word's edge, as in _this_). */
static void
md_text(sk_buf *o, const char *s, size_t len)
{
	bool bol = true;

	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		bool word_before = i > 0 && isalnum((unsigned char)s[i - 1]);
		bool word_after = i + 1 < len && isalnum((unsigned char)s[i + 1]);
		if (bol && (c == '#' || c == '+' || c == '-') && i + 1 < len &&
		        (s[i + 1] == ' ' || c == '#'))
			sk_buf_append(o, "\\", 1);
		else if (c == '\\' || c == '`' || c == '*' || c == '<' || c == '>')
			sk_buf_append(o, "\\", 1);
		else if (c == '_' && !(word_before && word_after))
			sk_buf_append(o, "\\", 1);
		sk_buf_append(o, &c, 1);
		bol = c == '\n';
	}
}

static void
md_part(sk_buf *o, const sk_clidoc_page *p, const part *pt)
{
	bool commands = p->cmd == NULL && title_is(pt, "Commands");

	if (pt->title)
		sk_buf_printf(o, "## %s\n\n",
		        strncmp(pt->title, "Example", 7) == 0 ? "Examples" : pt->title);
	if (pt->kind == PART_ROWS) {
		for (size_t i = 0; i < pt->nrows; i++) {
			if (commands)
				sk_buf_printf(o, "- [`%s`](%s-%s.md): ", pt->rows[i].term, p->prog,
				        pt->rows[i].term);
			else
				sk_buf_printf(o, "- `%s`: ", pt->rows[i].term);
			md_text(o, pt->rows[i].desc.data ? pt->rows[i].desc.data : "",
			        pt->rows[i].desc.len);
			sk_buf_printf(o, "\n");
		}
		sk_buf_printf(o, "\n");
	} else if (pt->kind == PART_VERBATIM) {
		bool sh = pt->title && strncmp(pt->title, "Example", 7) == 0;
		sk_buf_printf(o, "```%s\n%s\n```\n\n", sh ? "sh" : "",
		        pt->body.data ? pt->body.data : "");
	} else {
		md_text(o, pt->body.data ? pt->body.data : "", pt->body.len);
		sk_buf_printf(o, "\n\n");
	}
}

/* ---- both ---- */

/* Which parts go where: a man page's order, the same for Markdown. */
typedef enum slot {
	SLOT_DESCRIPTION,
	SLOT_OPTIONS,
	SLOT_GLOBAL,
	SLOT_EXIT,
	SLOT_EXAMPLES,
} slot;

static slot
slot_of(const part *pt, bool common)
{
	if (pt->kind == PART_EXIT)
		return SLOT_EXIT;
	if (pt->title && strncmp(pt->title, "Example", 7) == 0)
		return SLOT_EXAMPLES;
	if (common)
		return SLOT_GLOBAL;
	if (title_is(pt, "Flags"))
		return SLOT_OPTIONS;
	return SLOT_DESCRIPTION;
}

typedef struct render {
	const sk_clidoc_page *p;
	sk_clidoc_format fmt;
	sk_buf *o;
	bool fresh; /* man: nothing written since the last .SH */
} render;

static void
heading(render *r, const char *md, const char *man)
{
	if (r->fmt == SK_CLIDOC_MARKDOWN)
		sk_buf_printf(r->o, "## %s\n\n", md);
	else
		sk_buf_printf(r->o, ".SH %s\n", man);
	r->fresh = true;
}

static void
emit_part(render *r, const part *pt)
{
	if (r->fmt == SK_CLIDOC_MARKDOWN)
		md_part(r->o, r->p, pt);
	else
		man_part(r->o, pt, &r->fresh);
}

static void
emit_slot(render *r, const doc *docs, slot s)
{
	bool any = false;

	for (size_t k = 0; k < 2; k++) {
		for (size_t i = 0; i < docs[k].n; i++) {
			const part *pt = &docs[k].parts[i];
			if (slot_of(pt, k == 1) != s)
				continue;
			if (s == SLOT_EXIT && !any)
				heading(r, "Exit codes", "EXIT STATUS");
			if (s == SLOT_DESCRIPTION && !any && pt->title == NULL)
				heading(r, "Description", "DESCRIPTION");
			any = true;
			emit_part(r, pt);
		}
	}
	if (s == SLOT_EXIT && !any && r->p->exit_codes) {
		part pt = { PART_PROSE, NULL, SK_BUF_INIT(0), NULL, 0 };
		heading(r, "Exit codes", "EXIT STATUS");
		sk_buf_append(&pt.body, r->p->exit_codes, strlen(r->p->exit_codes));
		emit_part(r, &pt);
		sk_buf_dispose(&pt.body);
	}
}

static void
emit_env(render *r)
{
	const sk_clidoc_page *p = r->p;

	if (p->nenv == 0)
		return;
	heading(r, "Environment", "ENVIRONMENT");
	for (size_t i = 0; i < p->nenv; i++) {
		if (r->fmt == SK_CLIDOC_MARKDOWN) {
			sk_buf_printf(r->o, "- `%s`: ", p->env[i].name);
			md_text(r->o, p->env[i].text, strlen(p->env[i].text));
			sk_buf_printf(r->o, "\n");
		} else {
			sk_buf_printf(r->o, ".TP\n\\fB");
			man_str(r->o, p->env[i].name);
			sk_buf_printf(r->o, "\\fR\n");
			man_str(r->o, p->env[i].text);
			sk_buf_printf(r->o, "\n");
		}
	}
	if (r->fmt == SK_CLIDOC_MARKDOWN)
		sk_buf_printf(r->o, "\n");
}

static void
emit_see_also(render *r)
{
	const sk_clidoc_page *p = r->p;

	if (p->nsee == 0)
		return;
	heading(r, "See also", "SEE ALSO");
	for (size_t i = 0; i < p->nsee; i++) {
		const char *sep = i + 1 < p->nsee ? "," : "";
		if (r->fmt == SK_CLIDOC_MARKDOWN) {
			sk_buf_printf(r->o, "- [%s(1)](%s.md)\n", p->see_also[i], p->see_also[i]);
		} else {
			sk_buf_printf(r->o, ".BR ");
			man_str(r->o, p->see_also[i]);
			sk_buf_printf(r->o, " (1)%s\n", sep);
		}
	}
	if (r->fmt == SK_CLIDOC_MARKDOWN)
		sk_buf_printf(r->o, "\n");
}

static void
emit_head(render *r)
{
	const sk_clidoc_page *p = r->p;
	char name[128];

	sk_clidoc_page_name(p, name, sizeof(name));

	if (r->fmt == SK_CLIDOC_MARKDOWN) {
		sk_buf_printf(r->o,
		        "<!-- Generated by `%s __gen-docs markdown` from its --help; do not edit: "
		        "run `make docs`. -->\n\n# %s%s%s\n\n",
		        p->prog, p->prog, p->cmd ? " " : "", p->cmd ? p->cmd : "");
		md_text(r->o, p->summary, strlen(p->summary));
		sk_buf_printf(r->o, "\n\n## Synopsis\n\n```\n%s\n```\n\n", p->usage);
		return;
	}
	sk_buf_printf(r->o,
	        ".\\\" Generated by %s __gen-docs man from its --help; do not edit: run make "
	        "docs.\n.TH \"",
	        p->prog);
	for (const char *s = name; *s; s++) {
		char c = (char)toupper((unsigned char)*s);
		man_text(r->o, &c, 1);
	}
	sk_buf_printf(r->o, "\" 1 \"%s\" \"spacekeeper %s\" \"spacekeeper manual\"\n.SH NAME\n",
	        SK_CLIDOC_DATE, SK_VERSION);
	man_str(r->o, name);
	sk_buf_printf(r->o, " \\- ");
	man_str(r->o, p->summary);
	sk_buf_printf(r->o, "\n.SH SYNOPSIS\n.nf\n");
	man_str(r->o, p->usage);
	sk_buf_printf(r->o, "\n.fi\n");
	r->fresh = true;
}

int
sk_clidoc_render(const sk_clidoc_page *p, sk_clidoc_format fmt, sk_buf *out, sk_error *err)
{
	doc docs[2] = { { NULL, 0 }, { NULL, 0 } }; /* the page's text, the common text */
	render r = { p, fmt, out, false };
	char who[128];
	int rc;

	snprintf(who, sizeof(who), "%s%s%s", p->prog, p->cmd ? " " : "", p->cmd ? p->cmd : "");
	rc = parse_text(&docs[0], who, p->text, err);
	if (rc == SK_OK)
		rc = parse_text(&docs[1], who, p->common, err);
	if (rc == SK_OK)
		rc = check_flags(p, who, docs, err);
	if (rc == SK_OK) {
		emit_head(&r);
		emit_slot(&r, docs, SLOT_DESCRIPTION);
		emit_slot(&r, docs, SLOT_OPTIONS);
		emit_slot(&r, docs, SLOT_GLOBAL);
		emit_slot(&r, docs, SLOT_EXIT);
		emit_env(&r);
		emit_slot(&r, docs, SLOT_EXAMPLES);
		emit_see_also(&r);
	}
	doc_dispose(&docs[0]);
	doc_dispose(&docs[1]);
	return rc;
}

void
sk_clidoc_page_name(const sk_clidoc_page *p, char *out, size_t n)
{
	snprintf(out, n, "%s%s%s", p->prog, p->cmd ? "-" : "", p->cmd ? p->cmd : "");
}

int
sk_clidoc_write_file(const char *dir, const char *file, const sk_buf *text, sk_error *err)
{
	char path[4096];
	size_t len = text->len;
	FILE *f;
	bool ok;

	while (len > 0 && text->data[len - 1] == '\n')
		len--;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if ((f = fopen(path, "w")) == NULL)
		return sk_error_set(err, SK_EIO, "%s: %s", path, strerror(errno));
	ok = fwrite(text->data ? text->data : "", 1, len, f) == len && fputc('\n', f) != EOF;
	if (fclose(f) != 0 || !ok)
		return sk_error_set(err, SK_EIO, "%s: %s", path, strerror(errno));
	return SK_OK;
}

int
sk_clidoc_write(const sk_clidoc_page *p, sk_clidoc_format fmt, const char *dir, sk_error *err)
{
	sk_buf b = SK_BUF_INIT(0);
	char name[128], file[160];
	int rc;

	sk_clidoc_page_name(p, name, sizeof(name));
	snprintf(file, sizeof(file), "%s.%s", name, fmt == SK_CLIDOC_MAN ? "1" : "md");
	rc = sk_clidoc_render(p, fmt, &b, err);
	if (rc == SK_OK)
		rc = sk_clidoc_write_file(dir, file, &b, err);
	sk_buf_dispose(&b);
	return rc;
}

int
sk_clidoc_format_parse(const char *s, sk_clidoc_format *out)
{
	if (strcmp(s, "markdown") == 0)
		*out = SK_CLIDOC_MARKDOWN;
	else if (strcmp(s, "man") == 0)
		*out = SK_CLIDOC_MAN;
	else
		return SK_EINVALID;
	return SK_OK;
}

void
sk_clidoc_usage(const char *usage, sk_buf *out)
{
	const char *p = usage, *nl;

	for (bool first = true; *p; first = false) {
		nl = strchr(p, '\n');
		if (nl == NULL)
			nl = p + strlen(p);
		sk_buf_printf(out, "%s%.*s\n", first ? "usage: " : "       ", (int)(nl - p), p);
		p = *nl ? nl + 1 : nl;
	}
}
