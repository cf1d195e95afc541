/*
 * page: the status page on the metrics listener, server-rendered HTML and
 * CSS (no script, no external asset: it works air-gapped). `/`: spaces by
 * phase, the drift list with ages, the spaces a page at a time by name
 * (`/?after=NAME&limit=K`, K <= 1000); `/spaces/NAME`: one space's
 * spec, status, conditions, drift, recent events and what the provider's
 * last list saw. Every value from an object is HTML-escaped. The listener
 * has no authentication: spec.env shows its names and count only, as logs
 * and events do (values are secrets).
 */
#include <stdlib.h>
#include <string.h>

#include "../reconcile/observe.h"
#include "../reconcile/retention.h"
#include "capacity_int.h"
#include "ground_int.h"
#include "http_int.h"
#include "shards_int.h"
#include "spaces_int.h"
#include "views_int.h"

#define PAGE_MAX_SPACES 1000 /* rows of the index's space table, at most (?limit=) */
#define PAGE_EVENTS 20

static const char page_css[] =
        "body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}"
        "header{background:#1d2330;color:#fff;padding:12px 24px}header a{color:#9cc3ff}"
        "h1{font-size:20px;margin:0}h2{font-size:16px;margin:24px 0 8px}"
        "main{padding:0 24px 24px}table{border-collapse:collapse;background:#fff}"
        "th,td{border:1px solid #d8dce3;padding:4px 10px;text-align:left;vertical-align:top}"
        "th{background:#eef0f4}td.n{text-align:right}.bad{color:#b3261e}.ok{color:#1b7f3b}"
        "pre{background:#fff;border:1px solid #d8dce3;padding:8px;overflow:auto}"
        "svg rect{fill:#4a78c2}svg.chart{background:#fff;border:1px solid #d8dce3}"
        "svg line{stroke:#8a93a6}svg text{font-size:11px;fill:#5a6272}";

/* Appends s with &, <, >, " and ' escaped. */
static void
html(sk_buf *b, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&': sk_buf_printf(b, "&amp;"); break;
		case '<': sk_buf_printf(b, "&lt;"); break;
		case '>': sk_buf_printf(b, "&gt;"); break;
		case '"': sk_buf_printf(b, "&quot;"); break;
		case '\'': sk_buf_printf(b, "&#39;"); break;
		default: sk_buf_append(b, s, 1);
		}
	}
}

/* A name percent-encoded for a URL. */
static void
url_name(sk_buf *b, const char *name)
{
	for (const unsigned char *p = (const unsigned char *)name; p && *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '.')
			sk_buf_append(b, p, 1);
		else
			sk_buf_printf(b, "%%%02X", *p);
	}
}

/* A link to a space's page (the name percent-encoded in the href). */
static void
space_link(sk_buf *b, const char *name)
{
	sk_buf_printf(b, "<a href=\"/spaces/");
	url_name(b, name);
	sk_buf_printf(b, "\">");
	html(b, name);
	sk_buf_printf(b, "</a>");
}

static void
page_start(sk_buf *b, const char *title)
{
	sk_buf_printf(b,
	        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
	        "<link rel=\"icon\" href=\"data:,\"><title>");
	html(b, title);
	sk_buf_printf(b, "</title><style>%s</style></head><body><header><h1>", page_css);
	html(b, title);
	sk_buf_printf(b,
	        "</h1><a href=\"/\">spaces</a> · <a href=\"/metrics\">metrics</a>"
	        "</header><main>");
}

static void
page_end(sk_buf *b, sk_http_reply *r, unsigned int status)
{
	sk_buf_printf(b, "</main></body></html>\n");
	r->status = status;
	r->body = sk_buf_detach(b);
	r->type = "text/html; charset=utf-8";
}

static void
age(sk_buf *b, int64_t since_ms, int64_t now_ms)
{
	char d[32];

	sk_age_format(since_ms > 0 && now_ms > since_ms ? now_ms - since_ms : 0, d, sizeof(d));
	html(b, d);
}

/* An SVG bar chart of a timeline's mean per minute over the last hour, the
 * tallest bar at the top; each bar's tooltip gives its minute, count, mean
 * and max. */
static void
timeline_chart(sk_buf *b, const char *title, sk_timeline *tl)
{
	sk_timeline_point p[SK_TIMELINE_MINUTES];
	double top = 0;
	uint64_t n = 0;
	char when[64];

	sk_timeline_read(tl, sk_now_ms(), p);
	for (size_t i = 0; i < SK_TIMELINE_MINUTES; i++) {
		top = p[i].mean > top ? p[i].mean : top;
		n += p[i].count;
	}
	sk_buf_printf(b, "<h2>%s, last hour</h2>", title);
	sk_buf_printf(b,
	        "<svg class=\"chart\" width=\"640\" height=\"150\" role=\"img\" "
	        "aria-label=\"%s per minute\"><text x=\"0\" y=\"12\">tallest: mean %.4g s "
	        "(%llu in the hour)</text>",
	        title, top, (unsigned long long)n);
	for (size_t i = 0; i < SK_TIMELINE_MINUTES; i++) {
		double h = top > 0 ? 110.0 * p[i].mean / top : 0;
		sk_time_format(p[i].minute_ms, when, sizeof(when));
		sk_buf_printf(b,
		        "<rect x=\"%zu\" y=\"%.1f\" width=\"8\" height=\"%.1f\">"
		        "<title>%s: %llu, mean %.4g s, max %.4g s</title></rect>",
		        20 + i * 10, 130.0 - h, h, when, (unsigned long long)p[i].count, p[i].mean,
		        p[i].max);
	}
	sk_buf_printf(b,
	        "<line x1=\"20\" y1=\"130.5\" x2=\"620\" y2=\"130.5\"/>"
	        "<text x=\"20\" y=\"146\">-60 min</text>"
	        "<text x=\"590\" y=\"146\">now</text></svg>");
}

/* ---- the index ---- */

typedef struct page_row {
	char *name, *user_id;
	sk_phase phase;
	bool ready;
} page_row;

/* The index reads the informer's cache once: every entry is counted by
 * phase, and only the rows of the page asked for (the first `limit` names
 * after `after`) are kept, in a max-heap by name, so a render costs
 * O(N log limit) and holds `limit` rows whatever N is (it copied and sorted
 * every name). The sleeping spaces' names are kept only when the retention
 * table reads them. */
typedef struct page_rows {
	page_row *items; /* a max-heap by name while collecting, then sorted */
	size_t len, limit, total, after_total;
	size_t by_phase[SK_PHASE_COUNT][2];
	const char *after; /* NULL: from the first name */
	bool want_sleeping;
	char **sleeping;
	size_t n_sleeping;
} page_rows;

static int
row_cmp(const void *a, const void *b)
{
	return strcmp(((const page_row *)a)->name, ((const page_row *)b)->name);
}

static void
row_swap(page_row *a, page_row *b)
{
	page_row t = *a;

	*a = *b;
	*b = t;
}

static void
heap_up(page_row *h, size_t i)
{
	while (i > 0 && row_cmp(&h[(i - 1) / 2], &h[i]) < 0) {
		row_swap(&h[(i - 1) / 2], &h[i]);
		i = (i - 1) / 2;
	}
}

static void
heap_down(page_row *h, size_t len)
{
	for (size_t i = 0;;) {
		size_t l = 2 * i + 1, r = l + 1, top = i;
		if (l < len && row_cmp(&h[l], &h[top]) > 0)
			top = l;
		if (r < len && row_cmp(&h[r], &h[top]) > 0)
			top = r;
		if (top == i)
			return;
		row_swap(&h[i], &h[top]);
		i = top;
	}
}

static page_row
row_of(const sk_informer_entry *e)
{
	return (page_row){ sk_strdup(e->name), e->user_id ? sk_strdup(e->user_id) : NULL, e->phase,
		e->ready };
}

static void
collect_row(const sk_informer_entry *e, void *payload)
{
	page_rows *rows = payload;
	size_t p = (size_t)e->phase < SK_PHASE_COUNT ? (size_t)e->phase : 0;

	rows->total++;
	rows->by_phase[p][e->ready ? 1 : 0]++;
	if (rows->want_sleeping && (e->phase == SK_PHASE_IDLE || e->phase == SK_PHASE_PAUSED)) {
		rows->sleeping = sk_realloc(
		        rows->sleeping, (rows->n_sleeping + 1) * sizeof(*rows->sleeping));
		rows->sleeping[rows->n_sleeping++] = sk_strdup(e->name);
	}
	if (rows->after != NULL && strcmp(e->name, rows->after) <= 0)
		return;
	rows->after_total++;
	if (rows->len < rows->limit) {
		rows->items[rows->len] = row_of(e);
		heap_up(rows->items, rows->len++);
	} else if (strcmp(e->name, rows->items[0].name) < 0) {
		free(rows->items[0].name);
		free(rows->items[0].user_id);
		rows->items[0] = row_of(e);
		heap_down(rows->items, rows->len);
	}
}

static void
phases_table(sk_buf *b, const page_rows *rows)
{
	sk_buf_printf(b,
	        "<h2>Spaces by phase</h2><table><tr><th>phase</th><th>spaces</th>"
	        "<th>Ready</th><th></th></tr>");
	for (size_t p = 0; p < SK_PHASE_COUNT; p++) {
		size_t n = rows->by_phase[p][0] + rows->by_phase[p][1];
		const char *name = sk_phase_name((sk_phase)p);
		if (n == 0)
			continue;
		sk_buf_printf(b,
		        "<tr><td>%s</td><td class=\"n\">%zu</td><td class=\"n\">%zu</td>"
		        "<td><svg width=\"200\" height=\"12\" role=\"img\"><rect "
		        "width=\"%.0f\" height=\"12\"/></svg></td></tr>",
		        name[0] ? name : "None", n, rows->by_phase[p][1],
		        200.0 * (double)n / (double)(rows->total ? rows->total : 1));
	}
	sk_buf_printf(b, "</table>");
}

/* Each provider's capacity: running against the cap, the wait queue, evictions. */
static void
capacity_table(sk_controller *c, sk_buf *b)
{
	sk_ctl_capacity_view v;

	sk_buf_printf(b,
	        "<h2>Capacity</h2><table><tr><th>provider</th><th>running</th><th>cap</th>"
	        "<th>waiting</th><th>evictions</th></tr>");
	for (size_t i = 0; i < c->n_prov; i++) {
		sk_ctl_capacity_view_of(c, i, &v);
		sk_buf_printf(b, "<tr><td>%s</td><td class=\"n\">%d</td><td class=\"n\">",
		        c->cfg->providers[i].name, v.running);
		if (v.max > 0)
			sk_buf_printf(b, "%d%s", v.max, v.max != v.configured ? " (429)" : "");
		else
			sk_buf_printf(b, "none");
		sk_buf_printf(b, "</td><td class=\"n\">%zu</td><td class=\"n\">%llu</td></tr>",
		        v.queued, (unsigned long long)v.evictions);
	}
	sk_buf_printf(b, "</table>");
}

typedef struct drift_rows {
	sk_buf *b;
	int64_t now;
	char **names;
	int64_t (*since)[SK_CTL_DRIFT_TYPES];
	size_t len;
} drift_rows;

static void
collect_drift(const char *name, const int64_t *since, void *payload)
{
	drift_rows *d = payload;

	d->names = sk_realloc(d->names, (d->len + 1) * sizeof(*d->names));
	d->since = sk_realloc(d->since, (d->len + 1) * sizeof(*d->since));
	d->names[d->len] = sk_strdup(name);
	memcpy(d->since[d->len], since, sizeof(*d->since));
	d->len++;
}

static void
drift_table(sk_controller *c, sk_buf *b)
{
	drift_rows d = { b, sk_now_ms(), NULL, NULL, 0 };

	sk_ctl_spaces_drift(c, collect_drift, &d);
	sk_buf_printf(b, "<h2>Drift</h2>");
	if (d.len == 0)
		sk_buf_printf(b, "<p class=\"ok\">No drift.</p>");
	else
		sk_buf_printf(b, "<table><tr><th>space</th><th>type</th><th>age</th></tr>");
	for (size_t i = 0; i < d.len; i++) {
		for (size_t t = 0; t < SK_CTL_DRIFT_TYPES; t++) {
			if (d.since[i][t] == 0)
				continue;
			sk_buf_printf(b, "<tr><td>");
			space_link(b, d.names[i]);
			sk_buf_printf(b, "</td><td class=\"bad\">");
			html(b, sk_ctl_drift_type(t));
			sk_buf_printf(b, "</td><td>");
			age(b, d.since[i][t], d.now);
			sk_buf_printf(b, "</td></tr>");
		}
		free(d.names[i]);
	}
	if (d.len > 0)
		sk_buf_printf(b, "</table>");
	free(d.names);
	free(d.since);
}

/* Whether the retention table is shown: a provider with a pausedRetention
 * and no archive to keep the files. */
static bool
retention_known(sk_controller *c)
{
	bool known = false;

	for (size_t i = 0; i < c->cfg->n_providers; i++)
		known |= c->cfg->providers[i].paused_retention_ms > 0;
	return known && c->cfg->archive == NULL;
}

/* Spaces asleep near their provider's pausedRetention with no archive to
 * keep their files (sk_retention_check): only the sleeping ones are read. */
static void
retention_table(sk_controller *c, sk_buf *b, const page_rows *rows)
{
	int64_t now = sk_now_ms();
	bool any = false;
	char text[512];

	if (!rows->want_sleeping)
		return;
	sk_buf_printf(b, "<h2>Retention</h2>");
	for (size_t i = 0; i < rows->n_sleeping; i++) {
		sk_userspace *us = NULL;
		sk_retention ret;
		if (sk_informer_get(c->inf, rows->sleeping[i], &us) != 0)
			continue;
		if (sk_retention_check(c->cfg, us, now, &ret)) {
			if (!any)
				sk_buf_printf(b,
				        "<table><tr><th>space</th><th>provider</th>"
				        "<th>asleep</th><th>warning</th></tr>");
			any = true;
			sk_retention_format(&ret, us->meta.name, now, text, sizeof(text));
			sk_buf_printf(b, "<tr><td>");
			space_link(b, us->meta.name);
			sk_buf_printf(b, "</td><td>");
			html(b, ret.provider);
			sk_buf_printf(b, "</td><td>");
			age(b, ret.since_ms, now);
			sk_buf_printf(b, "</td><td class=\"bad\">");
			html(b, text);
			sk_buf_printf(b, "</td></tr>");
		}
		sk_userspace_free(us);
	}
	if (any)
		sk_buf_printf(b, "</table>");
	else
		sk_buf_printf(b,
		        "<p class=\"ok\">No sleeping space near its provider's "
		        "pausedRetention.</p>");
}

/* A link to the index page of the spaces after name (percent-encoded). */
static void
after_link(sk_buf *b, const char *name, size_t limit)
{
	sk_buf_printf(b, "<a id=\"next\" href=\"/?limit=%zu&amp;after=", limit);
	url_name(b, name);
	sk_buf_printf(b, "\">");
}

/* The page's rows by name, and a link to the next page when there is one. */
static void
spaces_table(sk_buf *b, page_rows *rows)
{
	size_t first = rows->total - rows->after_total + 1;

	if (rows->len > 0) /* no spaces: items is NULL, which qsort may not get */
		qsort(rows->items, rows->len, sizeof(*rows->items), row_cmp);
	sk_buf_printf(b,
	        "<h2>Spaces</h2><table><tr><th>name</th><th>userID</th><th>phase</th>"
	        "<th>Ready</th></tr>");
	for (size_t i = 0; i < rows->len; i++) {
		const page_row *r = &rows->items[i];
		sk_buf_printf(b, "<tr><td>");
		space_link(b, r->name);
		sk_buf_printf(b, "</td><td>");
		html(b, r->user_id);
		sk_buf_printf(b, "</td><td>");
		html(b, sk_phase_name(r->phase));
		sk_buf_printf(b, "</td><td class=\"%s\">%s</td></tr>", r->ready ? "ok" : "bad",
		        r->ready ? "True" : "False");
	}
	sk_buf_printf(b, "</table><p id=\"page\">");
	if (rows->len > 0)
		sk_buf_printf(b, "Spaces %zu to %zu of %zu by name.", first, first + rows->len - 1,
		        rows->total);
	else
		sk_buf_printf(b, "No spaces after this name.");
	if (rows->after_total > rows->len) {
		sk_buf_printf(b, " ");
		after_link(b, rows->items[rows->len - 1].name, rows->limit);
		sk_buf_printf(b, "The next %zu</a>.", rows->limit);
	}
	if (rows->after != NULL)
		sk_buf_printf(b, " <a href=\"/\">The first page</a>.");
	sk_buf_printf(b, "</p>");
}

/* The shards this replica acts on, by its own renew deadline (a replica
 * cut from the database stops counting them when its right ends). */
static void
shards_line(sk_controller *c, sk_buf *b)
{
	size_t valid = sk_ctl_shards_valid(c);

	sk_buf_printf(b, "<p id=\"shards\">Shards held: %s%zu of %d%s.</p>",
	        valid == 0 ? "<span class=\"bad\">" : "", valid, c->shards->n,
	        valid == 0 ? "</span>" : "");
}

/* The page size asked for: limit within 1..PAGE_MAX_SPACES, else the largest. */
static size_t
page_limit(const char *limit)
{
	char *end;
	long v = limit ? strtol(limit, &end, 10) : 0;

	if (limit == NULL || *end != '\0' || v < 1 || v > PAGE_MAX_SPACES)
		return PAGE_MAX_SPACES;
	return (size_t)v;
}

void
sk_ctl_page_index(sk_controller *c, const char *after, const char *limit, sk_http_reply *r)
{
	sk_buf b = SK_BUF_INIT(0);
	page_rows rows = { 0 };

	rows.after = after != NULL && after[0] != '\0' ? after : NULL;
	rows.limit = page_limit(limit);
	rows.items = sk_calloc(rows.limit, sizeof(*rows.items));
	rows.want_sleeping = retention_known(c);
	sk_informer_foreach(c->inf, collect_row, &rows);
	page_start(&b, "spacekeeper");
	sk_buf_printf(&b, "<p>%zu UserSpaces; informer %s.</p>", rows.total,
	        sk_informer_has_synced(c->inf) ? "synced"
	                                       : "<span class=\"bad\">not synced</span>");
	shards_line(c, &b);
	phases_table(&b, &rows);
	capacity_table(c, &b);
	drift_table(c, &b);
	retention_table(c, &b, &rows);
	timeline_chart(&b, "Reconcile time", c->http->tl_reconcile);
	timeline_chart(&b, "Connect latency", c->http->tl_connect);
	spaces_table(&b, &rows);
	for (size_t i = 0; i < rows.len; i++) {
		free(rows.items[i].name);
		free(rows.items[i].user_id);
	}
	free(rows.items);
	sk_informer_names_free(rows.sleeping, rows.n_sleeping);
	page_end(&b, r, 200);
}

/* ---- one space ---- */

/* The spec as JSON with every env value replaced: the names and their
 * count stay, the values (secrets) never reach the page. */
static json_t *
spec_masked(const sk_userspace_spec *spec)
{
	json_t *o = sk_userspace_spec_to_json(spec), *env = json_object_get(o, "env");

	for (void *it = json_object_iter(env); it != NULL; it = json_object_iter_next(env, it))
		json_object_iter_set_new(env, it, json_string("(hidden)"));
	return o;
}

static void
json_block(sk_buf *b, const char *title, json_t *j)
{
	char *s = j ? json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;

	sk_buf_printf(b, "<h2>%s</h2><pre>", title);
	html(b, s ? s : "{}");
	sk_buf_printf(b, "</pre>");
	free(s);
	json_decref(j);
}

static void
conditions_table(sk_buf *b, const sk_userspace_status *st, int64_t now)
{
	sk_buf_printf(b,
	        "<h2>Conditions</h2><table><tr><th>type</th><th>status</th>"
	        "<th>reason</th><th>message</th><th>since</th></tr>");
	for (size_t i = 0; i < st->n_conditions; i++) {
		const sk_condition *k = &st->conditions[i];
		sk_buf_printf(b, "<tr><td>");
		html(b, k->type);
		sk_buf_printf(b, "</td><td>");
		html(b, k->status);
		sk_buf_printf(b, "</td><td>");
		html(b, k->reason);
		sk_buf_printf(b, "</td><td>");
		html(b, k->message);
		sk_buf_printf(b, "</td><td>");
		age(b, k->last_transition_ms, now);
		sk_buf_printf(b, "</td></tr>");
	}
	sk_buf_printf(b, "</table><h2>Drift</h2>");
	if (st->n_drift == 0)
		sk_buf_printf(b, "<p class=\"ok\">No drift.</p>");
	for (size_t i = 0; i < st->n_drift; i++) {
		sk_buf_printf(b, "<p class=\"bad\">");
		html(b, st->drift[i].type);
		sk_buf_printf(b, " for ");
		age(b, st->drift[i].since_ms, now);
		sk_buf_printf(b, ": ");
		html(b, st->drift[i].detail);
		sk_buf_printf(b, "</p>");
	}
}

static void
events_table(sk_controller *c, sk_buf *b, const sk_userspace *us, int64_t now)
{
	sk_event_list ev = { 0 };
	sk_error err = { 0 };

	sk_buf_printf(b, "<h2>Recent events</h2>");
	if (sk_store_events(c->store, us->meta.name, us->meta.uid ? us->meta.uid : "", PAGE_EVENTS,
	            &ev, &err) != 0) {
		sk_buf_printf(b, "<p class=\"bad\">events: ");
		html(b, err.message);
		sk_buf_printf(b, "</p>");
		return;
	}
	sk_buf_printf(b,
	        "<table><tr><th>last</th><th>type</th><th>reason</th><th>count</th>"
	        "<th>message</th></tr>");
	for (size_t i = ev.len; i-- > 0;) {
		const sk_event *e = &ev.items[i];
		sk_buf_printf(b, "<tr><td>");
		age(b, e->last_ms, now);
		sk_buf_printf(b, " ago</td><td>");
		html(b, e->type);
		sk_buf_printf(b, "</td><td>");
		html(b, e->reason);
		sk_buf_printf(b, "</td><td class=\"n\">%d</td><td>", e->count);
		html(b, e->message);
		sk_buf_printf(b, "</td></tr>");
	}
	sk_buf_printf(b, "</table>");
	sk_event_list_dispose(&ev);
}

static void
provider_table(sk_controller *c, sk_buf *b, const sk_userspace *us)
{
	int prov = sk_ctl_provider_index(c, us->spec.provider);
	sk_sandbox_list listed = { 0 };
	sk_list_view view = { 0 };

	sk_buf_printf(b, "<h2>At the provider</h2>");
	if (prov < 0 || us->spec.user_id == NULL) {
		sk_buf_printf(
		        b, "<p class=\"bad\">spec.provider names no configured provider.</p>");
		return;
	}
	if (!sk_ctl_share_lists_self(c) && !sk_ctl_may_act(c, us->spec.user_id)) {
		char *holder = sk_ctl_shard_holder_address(c, us->spec.user_id);
		sk_buf_printf(b, "<p>Another replica (");
		html(b, holder ? holder : "none yet");
		sk_buf_printf(b,
		        ") holds this space's shard: its sandboxes are in that "
		        "replica's share of the list, not in this one's.</p>");
		free(holder);
		return;
	}
	sk_ctl_list_view(c, prov, us->spec.user_id, &listed, &view);
	sk_buf_printf(b, "<p>The last list of ");
	html(b, c->cfg->providers[prov].name);
	sk_buf_printf(b, " (");
	age(b, view.listed_ms, sk_now_ms());
	sk_buf_printf(b,
	        " ago) %s.</p><table><tr><th>sandbox</th><th>state</th><th>template</th></tr>",
	        view.valid ? "succeeded" : "<span class=\"bad\">is not valid</span>");
	for (size_t i = 0; i < listed.len; i++) {
		sk_buf_printf(b, "<tr><td>");
		html(b, listed.items[i].id);
		sk_buf_printf(b, "</td><td>");
		html(b, sk_sandbox_state_name(listed.items[i].state));
		sk_buf_printf(b, "</td><td>");
		html(b, listed.items[i].template_id);
		sk_buf_printf(b, "</td></tr>");
	}
	if (listed.len == 0)
		sk_buf_printf(b, "<tr><td colspan=\"3\">none</td></tr>");
	sk_buf_printf(b, "</table>");
	sk_sandbox_list_dispose(&listed);
}

void
sk_ctl_page_space(sk_controller *c, const char *name, sk_http_reply *r)
{
	sk_buf b = SK_BUF_INIT(0);
	sk_userspace *us = NULL;
	sk_error err = { 0 };
	int64_t now = sk_now_ms();
	int rc = sk_informer_get(c->inf, name, &us);
	sk_retention ret;
	char text[1024];

	if (rc != 0)
		rc = sk_store_get(c->store, name, &us, &err);
	page_start(&b, name);
	if (rc != 0) {
		sk_buf_printf(&b, "<p class=\"bad\">");
		html(&b, rc == SK_ENOTFOUND ? "No such UserSpace." : err.message);
		sk_buf_printf(&b, "</p>");
		page_end(&b, r, rc == SK_ENOTFOUND ? 404 : 503);
		return;
	}
	sk_buf_printf(&b, "<p>phase <b>");
	html(&b, sk_phase_name(us->status.phase));
	sk_buf_printf(&b, "</b>, sandbox <b>");
	html(&b, us->status.sandbox_id ? us->status.sandbox_id : "none");
	sk_buf_printf(&b, "</b></p><p>files: ");
	sk_archive_where(&us->status, text, sizeof(text));
	html(&b, text);
	sk_buf_printf(&b, "</p>");
	if (sk_retention_check(c->cfg, us, now, &ret)) {
		sk_retention_format(&ret, us->meta.name, now, text, sizeof(text));
		sk_buf_printf(&b, "<p class=\"bad\">Warning: ");
		html(&b, text);
		sk_buf_printf(&b, "</p>");
	}
	json_block(&b, "Labels", sk_kvlist_to_json(&us->meta.labels));
	json_block(&b, "Annotations", sk_kvlist_to_json(&us->meta.annotations));
	json_block(&b, "Spec", spec_masked(&us->spec));
	conditions_table(&b, &us->status, now);
	provider_table(c, &b, us);
	events_table(c, &b, us, now);
	json_block(&b, "Status", sk_userspace_status_to_json(&us->status));
	sk_userspace_free(us);
	page_end(&b, r, 200);
}
