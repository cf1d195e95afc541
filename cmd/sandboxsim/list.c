/*
 * sandboxsim list endpoints: GET /v2/sandboxes (metadata, state, order,
 * startedAfter, template, limit, nextToken; X-Next-Token cursor; merged
 * running+paused sorted by startedAt then ID), GET /sandboxes (v1, running
 * only), and CubeSandbox's variant that reads one page before filtering.
 * A filter on user_id uses the store's index instead of a full scan.
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define LIST_MAX 100

struct list_query {
	sim_kv meta;
	bool want_running, want_paused;
	bool asc;
	int64_t started_after; /* -1: none */
	const char *template_id;
	int limit;
	bool has_cursor;
	int64_t cur_ms;
	char cur_id[64];
};

/* ---- metadata filter ---- */

static void
kv_add(sk_buf *b, int *n, const char *k, const char *v)
{
	sk_buf_append(b, k, strlen(k) + 1);
	sk_buf_append(b, v, strlen(v) + 1);
	(*n)++;
}

int
sim_parse_meta_filter(sim *s, const char *arg, sim_kv *out)
{
	sk_buf b = SK_BUF_INIT(1 << 20);
	char *copy = sk_strdup(arg), *save = NULL, *pair;
	bool cube = s->flavor == SIM_CUBE;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	/* E2B unescapes the whole string, then each key and value; Cube does neither. */
	if (!cube && sim_unescape(copy, true) != 0)
		goto done;
	for (pair = strtok_r(copy, "&", &save); pair; pair = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(pair, '=');
		if (eq == NULL || strchr(eq + 1, '=') != NULL)
			goto done;
		*eq = '\0';
		if (!cube && (sim_unescape(pair, true) != 0 || sim_unescape(eq + 1, true) != 0))
			goto done;
		kv_add(&b, &out->n, pair, eq + 1);
	}
	out->len = b.len;
	out->data = sk_buf_detach(&b);
	rc = 0;
done:
	if (rc != 0)
		sk_buf_dispose(&b);
	free(copy);
	return rc;
}

bool
sim_meta_match(const sim_sandbox *sb, const sim_kv *filter)
{
	const char *p = filter->data;

	for (int i = 0; i < filter->n; i++) {
		const char *v = p + strlen(p) + 1, *have = sim_kv_get(&sb->meta, p);
		if (have == NULL || strcmp(have, v) != 0)
			return false;
		p = v + strlen(v) + 1;
	}
	return true;
}

/* ---- cursor: base64url("<RFC3339 startedAt>__<sandboxID>[__asc]") ---- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static void
b64url_encode(const char *in, char *out)
{
	size_t n = strlen(in), o = 0;

	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)(unsigned char)in[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)(unsigned char)in[i + 1] << 8;
		if (i + 2 < n)
			v |= (unsigned char)in[i + 2];
		out[o++] = b64[(v >> 18) & 63];
		out[o++] = b64[(v >> 12) & 63];
		if (i + 1 < n)
			out[o++] = b64[(v >> 6) & 63];
		if (i + 2 < n)
			out[o++] = b64[v & 63];
	}
	out[o] = '\0';
}

static int
b64url_decode(const char *in, char *out, size_t outlen)
{
	uint32_t acc = 0;
	int bits = 0;
	size_t o = 0;

	for (; *in && *in != '='; in++) {
		const char *p = strchr(b64, *in);
		if (p == NULL || *in == '\0')
			return -1;
		acc = (acc << 6) | (uint32_t)(p - b64);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o + 1 >= outlen)
				return -1;
			out[o++] = (char)((acc >> bits) & 0xff);
		}
	}
	out[o] = '\0';
	return 0;
}

static int
parse_cursor(const char *token, struct list_query *q)
{
	char raw[200], *sep, *id, *tail;

	if (b64url_decode(token, raw, sizeof(raw)) != 0 || (sep = strstr(raw, "__")) == NULL)
		return -1;
	*sep = '\0';
	id = sep + 2;
	tail = strstr(id, "__");
	if (tail) {
		*tail = '\0';
		if (strcmp(tail + 2, "asc") != 0)
			return -1;
	}
	if ((tail != NULL) != q->asc || sk_time_parse(raw, &q->cur_ms) != 0 || !sim_valid_id(id) ||
	        strlen(id) >= sizeof(q->cur_id))
		return -1;
	snprintf(q->cur_id, sizeof(q->cur_id), "%s", id);
	q->has_cursor = true;
	return 0;
}

static void
make_cursor(const sim_sandbox *sb, bool asc, char *out)
{
	char raw[160], ts[40];

	sim_time(sb->started_ms, ts, sizeof(ts));
	snprintf(raw, sizeof(raw), "%s__%s%s", ts, sb->id, asc ? "__asc" : "");
	b64url_encode(raw, out);
}

/* ---- query parsing ---- */

static int
parse_states(sim *s, sim_req *r, struct list_query *q)
{
	char *all = sim_req_arg_all(r, "state"), *save = NULL, *tok;
	int rc = 0;

	q->want_running = q->want_paused = all == NULL;
	for (tok = all ? strtok_r(all, ",", &save) : NULL; tok; tok = strtok_r(NULL, ",", &save)) {
		if (strcmp(tok, "running") == 0)
			q->want_running = true;
		else if (strcmp(tok, "paused") == 0)
			q->want_paused = true;
		else
			rc = -1;
	}
	if (all && !q->want_running && !q->want_paused)
		q->want_running = q->want_paused = true;
	free(all);
	if (rc != 0)
		sim_reply_error(s, r, 400,
		        "validation error: parameter \"state\" in query has an error: value is not "
		        "one of the allowed values [\"running\",\"paused\"]");
	return rc;
}

static int
parse_limit(sim *s, sim_req *r, struct list_query *q)
{
	const char *l = sim_req_arg(r, "limit");
	char *end;
	long v;

	q->limit = LIST_MAX;
	if (l == NULL)
		return 0;
	v = strtol(l, &end, 10);
	if (*l == '\0' || *end != '\0' || v < 1) {
		sim_reply_error(s, r, 400,
		        "validation error: parameter \"limit\" in query has an error: number must "
		        "be at least 1");
		return -1;
	}
	q->limit = v > LIST_MAX ? LIST_MAX : (int)v;
	return 0;
}

static int
parse_query(sim *s, sim_req *r, struct list_query *q)
{
	const char *meta = sim_req_arg(r, "metadata"), *order = sim_req_arg(r, "order");
	const char *after = sim_req_arg(r, "startedAfter"), *tok = sim_req_arg(r, "nextToken");

	q->started_after = -1;
	q->template_id = sim_req_arg(r, "template");
	if (q->template_id && *q->template_id == '\0')
		q->template_id = NULL;
	if (parse_states(s, r, q) != 0 || parse_limit(s, r, q) != 0)
		return -1;
	if (order && strcmp(order, "asc") != 0 && strcmp(order, "desc") != 0) {
		sim_reply_error(s, r, 400, "validation error: order must be asc or desc");
		return -1;
	}
	q->asc = order && strcmp(order, "asc") == 0;
	if (after && *after && sk_time_parse(after, &q->started_after) != 0) {
		sim_reply_error(s, r, 400, "validation error: startedAfter must be a date-time");
		return -1;
	}
	if (tok && *tok && parse_cursor(tok, q) != 0) {
		sim_reply_error(s, r, 400, "Invalid next token");
		return -1;
	}
	if (meta && *meta && sim_parse_meta_filter(s, meta, &q->meta) != 0) {
		sim_reply_error(
		        s, r, 400, "Error parsing metadata: invalid key value pair in query");
		return -1;
	}
	return 0;
}

/* ---- selection ---- */

/* <0 when a comes before b in the listing order. */
static int
order_cmp(bool asc, int64_t a_ms, const char *a_id, int64_t b_ms, const char *b_id)
{
	int c = a_ms < b_ms ? -1 : a_ms > b_ms ? 1 : strcmp(a_id, b_id);

	return asc ? c : -c;
}

struct topk {
	sim_sandbox **items;
	int n, k;
	bool asc;
};

static void
topk_add(struct topk *t, sim_sandbox *sb)
{
	int i;

	if (t->n == t->k &&
	        order_cmp(t->asc, sb->started_ms, sb->id, t->items[t->n - 1]->started_ms,
	                t->items[t->n - 1]->id) > 0)
		return;
	if (t->n < t->k)
		t->n++;
	for (i = t->n - 1; i > 0; i--) {
		sim_sandbox *p = t->items[i - 1];
		if (order_cmp(t->asc, p->started_ms, p->id, sb->started_ms, sb->id) < 0)
			break;
		t->items[i] = p;
	}
	t->items[i] = sb;
}

static bool
matches(sim *s, const struct list_query *q, sim_sandbox *sb, int64_t now)
{
	if (sim_sandbox_tick(s, sb, now))
		return false;
	if (sb->state == SIM_RUNNING ? !q->want_running : !q->want_paused)
		return false;
	if (q->started_after >= 0 && sb->started_ms < q->started_after)
		return false;
	if (q->template_id && strcmp(q->template_id, sb->template_id) != 0)
		return false;
	return q->meta.n == 0 || sim_meta_match(sb, &q->meta);
}

static void
consider(sim *s, const struct list_query *q, struct topk *t, sim_sandbox *sb, int64_t now,
        long *running)
{
	if (!matches(s, q, sb, now))
		return;
	if (sb->state == SIM_RUNNING)
		(*running)++;
	if (q->has_cursor && order_cmp(q->asc, q->cur_ms, q->cur_id, sb->started_ms, sb->id) >= 0)
		return;
	topk_add(t, sb);
}

static void
select_page(sim *s, const struct list_query *q, struct topk *t, long *running)
{
	const char *user = sim_kv_get(&q->meta, "user_id");
	int64_t now = sk_now_ms();

	if (user) {
		const sim_vec *v = sim_store_by_user(&s->store, user);
		for (size_t i = 0; v && i < v->len; i++)
			consider(s, q, t, v->items[i], now, running);
		return;
	}
	for (sim_sandbox *sb = s->store.head; sb; sb = sb->next)
		consider(s, q, t, sb, now, running);
}

void
sim_e2b_list(sim *s, sim_req *r)
{
	struct list_query q = { 0 };
	struct topk t = { 0 };
	long running = 0;
	json_t *arr;
	char buf[400];

	if (s->flavor == SIM_CUBE) {
		sim_e2b_list_v1(s, r);
		return;
	}
	if (parse_query(s, r, &q) != 0)
		goto done;
	if (sim_faults_list_empty(s, sk_now_ms())) {
		sim_reply_json(s, r, 200, json_array());
		goto done;
	}
	t.k = q.limit + 1;
	t.asc = q.asc;
	t.items = sk_calloc((size_t)t.k, sizeof(*t.items));
	arr = json_array();
	pthread_mutex_lock(&s->lock);
	select_page(s, &q, &t, &running);
	for (int i = 0; i < t.n && i < q.limit; i++)
		json_array_append_new(arr, sim_json_listed(s, t.items[i]));
	if (t.n > q.limit) {
		make_cursor(t.items[q.limit - 1], q.asc, buf);
		sim_reply_header(r, "X-Next-Token", buf);
	}
	pthread_mutex_unlock(&s->lock);
	if (q.want_running) {
		snprintf(buf, sizeof(buf), "%ld", running);
		sim_reply_header(r, "X-Total-Running", buf);
	}
	sim_reply_json(s, r, 200, arr);
done:
	free(t.items);
	sim_kv_free(&q.meta);
}

/* Cube: one page in creation order, then filters; one state value. */
static int
cube_query(sim *s, sim_req *r, struct list_query *q, bool v1)
{
	const char *state = sim_req_arg(r, "state"), *meta = sim_req_arg(r, "metadata");

	if (parse_limit(s, r, q) != 0)
		return -1;
	if (sim_req_arg(r, "limit") == NULL)
		q->limit = v1 ? 200 : 100;
	q->want_running = true;
	q->want_paused = !v1;
	if (!v1 && state && strcmp(state, "running") == 0)
		q->want_paused = false;
	else if (!v1 && state && strcmp(state, "paused") == 0)
		q->want_running = false;
	if (meta && *meta && sim_parse_meta_filter(s, meta, &q->meta) != 0) {
		sim_reply_error(s, r, 400, "invalid metadata query");
		return -1;
	}
	return 0;
}

static void
cube_list(sim *s, sim_req *r, bool v1)
{
	struct list_query q = { 0 };
	int64_t now = sk_now_ms();
	int seen = 0;
	json_t *arr;

	q.started_after = -1;
	if (cube_query(s, r, &q, v1) != 0)
		return;
	arr = json_array();
	pthread_mutex_lock(&s->lock);
	for (sim_sandbox *sb = s->store.head; sb && seen < q.limit; sb = sb->next) {
		if (sb->state == SIM_KILLED || sim_sandbox_tick(s, sb, now))
			continue;
		seen++;
		if (matches(s, &q, sb, now))
			json_array_append_new(arr, sim_json_listed(s, sb));
	}
	pthread_mutex_unlock(&s->lock);
	sim_kv_free(&q.meta);
	if (sim_faults_list_empty(s, now))
		json_array_clear(arr);
	sim_reply_json(s, r, 200, arr);
}

void
sim_e2b_list_v1(sim *s, sim_req *r)
{
	const char *meta = sim_req_arg(r, "metadata");
	struct list_query q = { 0 };
	int64_t now = sk_now_ms();
	json_t *arr;

	if (s->flavor == SIM_CUBE) {
		cube_list(s, r, r->ep == SIM_EP_LIST_V1);
		return;
	}
	q.want_running = true;
	q.started_after = -1;
	if (meta && *meta && sim_parse_meta_filter(s, meta, &q.meta) != 0) {
		sim_reply_error(
		        s, r, 400, "Error parsing metadata: invalid key value pair in query");
		return;
	}
	arr = json_array();
	if (!sim_faults_list_empty(s, now)) {
		pthread_mutex_lock(&s->lock);
		for (sim_sandbox *sb = s->store.head; sb; sb = sb->next)
			if (matches(s, &q, sb, now))
				json_array_append_new(arr, sim_json_listed(s, sb));
		pthread_mutex_unlock(&s->lock);
	}
	sim_kv_free(&q.meta);
	sim_reply_json(s, r, 200, arr);
}
