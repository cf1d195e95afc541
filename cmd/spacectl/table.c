/*
 * spacectl get's table of UserSpaces (and get -w's rows): one cell function
 * per column, the columns in COLUMNS (add a row to extend), -L's label columns.
 */
#include <stdlib.h>
#include <string.h>

#include "spacectl.h"

typedef void (*cell_fn)(const sk_userspace *us, int64_t now, char *buf, size_t len);

static void
cell_name(const sk_userspace *us, int64_t now, char *buf, size_t len)
{
	snprintf(buf, len, "%s", us->meta.name);
}

static void
cell_user_id(const sk_userspace *us, int64_t now, char *buf, size_t len)
{
	snprintf(buf, len, "%s", us->spec.user_id);
}

static void
cell_mode(const sk_userspace *us, int64_t now, char *buf, size_t len)
{
	snprintf(buf, len, "%s", sk_mode_name(us->spec.mode));
}

static void
cell_phase(const sk_userspace *us, int64_t now, char *buf, size_t len)
{
	const char *p = sk_phase_name(us->status.phase);

	/* Deleting, the phase's own word (status, metrics and the connect API
	 * say it), also before the controller has seen the deletion */
	if (us->meta.deletion_ms != 0)
		p = sk_phase_name(SK_PHASE_DELETING);
	snprintf(buf, len, "%s", p && *p ? p : "-");
}

static void
cell_sandbox(const sk_userspace *us, int64_t now, char *buf, size_t len)
{
	snprintf(buf, len, "%s", us->status.sandbox_id ? us->status.sandbox_id : "-");
}

static void
cell_ready(const sk_userspace *us, int64_t now, char *buf, size_t len)
{
	const sk_condition *c = sk_userspace_condition(us, SK_COND_READY);

	snprintf(buf, len, "%s", c && c->status ? c->status : "-");
}

/* The drift types of status.drift, comma-separated, each once; "-" when none. */
static void
cell_drift(const sk_userspace *us, int64_t now, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < us->status.n_drift && off < len; i++) {
		const char *t = us->status.drift[i].type;
		bool dup = false;
		int n;
		for (size_t k = 0; t && k < i && !dup; k++)
			dup = us->status.drift[k].type && strcmp(us->status.drift[k].type, t) == 0;
		if (t == NULL || *t == '\0' || dup)
			continue;
		n = snprintf(buf + off, len - off, "%s%s", off ? "," : "", t);
		off += n > 0 ? (size_t)n : 0;
	}
	if (off == 0)
		snprintf(buf, len, "-");
}

static void
cell_age(const sk_userspace *us, int64_t now, char *buf, size_t len)
{
	if (us->meta.creation_ms == 0)
		snprintf(buf, len, "-");
	else
		sk_age_format(now - us->meta.creation_ms, buf, len);
}

static void
cell_provider(const sk_userspace *us, int64_t now, char *buf, size_t len)
{
	snprintf(buf, len, "%s", us->spec.provider ? us->spec.provider : "-");
}

static void
cell_template(const sk_userspace *us, int64_t now, char *buf, size_t len)
{
	snprintf(buf, len, "%s", us->spec.template_id ? us->spec.template_id : "-");
}

static void
cell_generation(const sk_userspace *us, int64_t now, char *buf, size_t len)
{
	snprintf(buf, len, "%lld", (long long)us->meta.generation);
}

static void
cell_labels(const sk_userspace *us, int64_t now, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < us->meta.labels.len && off < len; i++) {
		int n = snprintf(buf + off, len - off, "%s%s=%s", i ? "," : "",
		        us->meta.labels.items[i].key, us->meta.labels.items[i].value);
		off += n > 0 ? (size_t)n : 0;
	}
	if (us->meta.labels.len == 0)
		snprintf(buf, len, "<none>");
}

/* A migration's phase and progress ("Copying 120/200 files 41%"); when none, whether
 * the spec differs from the sandbox (SpecMismatch: a template not rolled out). */
static void
cell_migration(const sk_userspace *us, int64_t now, char *buf, size_t len)
{
	const sk_migration_status *m = &us->status.migration;

	bool mismatch = false;

	for (size_t i = 0; i < us->status.n_drift && !mismatch; i++)
		mismatch = us->status.drift[i].type &&
		        strcmp(us->status.drift[i].type, SK_DRIFT_SPEC) == 0;
	if (m->phase == SK_MIG_NONE && mismatch)
		snprintf(buf, len, "not rolled out (describe says how)");
	else if (m->phase == SK_MIG_NONE)
		snprintf(buf, len, "-");
	else if (m->phase == SK_MIG_COPYING && m->bytes_total > 0)
		snprintf(buf, len, "%s %lld/%lld files %lld%%", sk_migration_phase_name(m->phase),
		        (long long)m->files_done, (long long)m->files_total,
		        (long long)(m->bytes_done * 100 / m->bytes_total));
	else
		snprintf(buf, len, "%s", sk_migration_phase_name(m->phase));
}

/* The table columns, in order; wide-only columns appear with -o wide, the
 * labels column also with --show-labels. */
static const struct column {
	const char *header;
	bool wide_only, labels;
	cell_fn cell;
} COLUMNS[] = {
	{ "NAME", false, false, cell_name },
	{ "USERID", false, false, cell_user_id },
	{ "MODE", false, false, cell_mode },
	{ "PHASE", false, false, cell_phase },
	{ "SANDBOX", false, false, cell_sandbox },
	{ "READY", false, false, cell_ready },
	{ "DRIFT", false, false, cell_drift },
	{ "AGE", false, false, cell_age },
	{ "PROVIDER", true, false, cell_provider },
	{ "TEMPLATE", true, false, cell_template },
	{ "GENERATION", true, false, cell_generation },
	{ "MIGRATION", true, false, cell_migration },
	{ "LABELS", true, true, cell_labels },
};
#define NCOLUMNS (sizeof(COLUMNS) / sizeof(COLUMNS[0]))
#define CELL_MAX 1024

/* get -w prints the header once, then a row per change: each column is as
 * wide as the values it usually takes will be (a phase, a sandbox ID, an age),
 * so a later row lines up with the header. A sizing row, rendered and not
 * printed; get's table has it too, so that get and get -w line up alike. */
static const char *
sizing_cell(const char *header)
{
	static const struct {
		const char *header, *widest;
	} widths[] = { { "MODE", "Running" }, { "PHASE", "Migrating" },
		{ "SANDBOX", "xxxxxxxxxxxxxxxxxxxxx" }, { "READY", "Unknown" },
		{ "DRIFT", "SpecMismatch" }, { "AGE", "4m59s" } };

	for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); i++) {
		if (strcmp(widths[i].header, header) == 0)
			return widths[i].widest;
	}
	return "";
}

/* -L's header: the key's last segment in capitals (app.kubernetes.io/name: NAME). */
static void
label_header(const char *key, char *buf, size_t len)
{
	const char *slash = strrchr(key, '/');
	size_t i = 0;

	for (const char *p = slash ? slash + 1 : key; *p && i + 1 < len; p++)
		buf[i++] = (char)(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p);
	buf[i] = '\0';
}

static bool
column_shown(const struct column *c, const sk_cli_table_opts *o)
{
	return !c->wide_only || o->wide || (c->labels && o->show_labels);
}

/* The end of the line that starts at i (after its newline). */
static size_t
line_end(const sk_buf *out, size_t i)
{
	while (i < out->len && out->data[i] != '\n')
		i++;
	return i < out->len ? i + 1 : i;
}

/* The rendered table less its first (header) line when skip_header, less the
 * sizing row (the second line) when sized; last_only: its last line only. */
static void
write_table(const sk_buf *out, bool skip_header, bool last_only, bool sized)
{
	size_t start = 0, header_end = line_end(out, 0);

	if (last_only && out->len > 1) {
		/* the last line: after the newline before the final one */
		start = out->len - 1;
		while (start > 0 && out->data[start - 1] != '\n')
			start--;
		fwrite(out->data + start, 1, out->len - start, stdout);
		return;
	}
	if (!skip_header && out->data)
		fwrite(out->data, 1, header_end, stdout);
	start = sized ? line_end(out, header_end) : header_end;
	fwrite(out->data ? out->data + start : "", 1, out->len - start, stdout);
}

/* The shown columns' indexes into COLUMNS, with -L's columns (index NCOLUMNS + k)
 * before LABELS. Returns how many. */
static size_t
shown_columns(const sk_cli_table_opts *o, size_t *idx)
{
	size_t n = 0, nl = o->label_columns ? o->label_columns->len : 0;

	for (size_t c = 0; c < NCOLUMNS; c++) {
		if (COLUMNS[c].labels) {
			for (size_t k = 0; k < nl; k++)
				idx[n++] = NCOLUMNS + k;
		}
		if (column_shown(&COLUMNS[c], o))
			idx[n++] = c;
	}
	return n;
}

void
sk_cli_userspace_table_print(sk_userspace *const *items, size_t n, const sk_cli_table_opts *o)
{
	size_t nl = o->label_columns ? o->label_columns->len : 0;
	size_t *idx = sk_calloc(NCOLUMNS + nl, sizeof(*idx));
	const char **headers = sk_calloc(NCOLUMNS + nl, sizeof(*headers));
	const char **cells = sk_calloc(NCOLUMNS + nl, sizeof(*cells));
	char(*bufs)[CELL_MAX] = sk_calloc(NCOLUMNS + nl, CELL_MAX);
	size_t ncols = shown_columns(o, idx);
	sk_buf out = SK_BUF_INIT(0);
	int64_t now = sk_now_ms();
	sk_table *t;

	for (size_t k = 0; k < ncols; k++) {
		if (idx[k] < NCOLUMNS) {
			headers[k] = COLUMNS[idx[k]].header;
		} else {
			label_header(o->label_columns->items[idx[k] - NCOLUMNS], bufs[k], CELL_MAX);
			headers[k] = sk_strdup(bufs[k]);
		}
	}
	t = sk_table_new(ncols, headers);
	if (o->sized) {
		for (size_t k = 0; k < ncols; k++)
			cells[k] = sizing_cell(headers[k]);
		sk_table_add_row(t, cells);
	}
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < ncols; k++) {
			const char *v;
			if (idx[k] == 0 && o->kind_prefix) {
				snprintf(bufs[k], CELL_MAX, "userspace/%s", items[i]->meta.name);
			} else if (idx[k] < NCOLUMNS) {
				COLUMNS[idx[k]].cell(items[i], now, bufs[k], CELL_MAX);
			} else {
				v = sk_kvlist_get(&items[i]->meta.labels,
				        o->label_columns->items[idx[k] - NCOLUMNS]);
				snprintf(bufs[k], CELL_MAX, "%s", v ? v : "");
			}
			cells[k] = bufs[k];
		}
		sk_table_add_row(t, cells);
	}
	sk_table_render(t, &out);
	write_table(&out, o->no_headers, o->last_only, o->sized);
	sk_buf_dispose(&out);
	sk_table_free(t);
	for (size_t k = 0; k < ncols; k++) {
		if (idx[k] >= NCOLUMNS)
			free((char *)headers[k]);
	}
	free(bufs);
	free(cells);
	free(headers);
	free(idx);
}
