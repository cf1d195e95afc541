/*
 * sandboxsim Daytona flavour: the API of @daytonaio/sdk 0.218 (see
 * pkg/sandbox/DAYTONA.md), also under /api: POST /sandbox, GET /sandbox
 * (cursor paging: limit <= 200, cursor -> {items, nextCursor}; labels=<json>,
 * states=, id= and name= prefixes), GET|DELETE /sandbox/{idOrName}, POST
 * /sandbox/{id}/start|stop|archive, PUT /sandbox/{id}/labels, POST
 * /sandbox/{id}/autostop|autoarchive|autodelete/{min}, GET
 * /sandbox/{id}/ports/{port}/preview-url and /toolbox-proxy-url. Every answer
 * that carries a sandbox carries the whole object (kvm, toolboxProxyUrl).
 * States started/stopped/archived/destroyed; errors {statusCode, message,
 * error}. The toolbox (/toolbox/{id}/...) is in daytona_toolbox.c.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim.h"

#define DT_ORG "00000000-0000-4000-8000-000000000001"
#define DT_LIST_DEFAULT 100
#define DT_LIST_MAX 200

char *
sim_daytona_toolbox_url(sim_req *r)
{
	const char *host = sim_req_header(r, "Host");

	return sk_asprintf("http://%s/toolbox", host ? host : "127.0.0.1");
}

/* The Sandbox object; a list item (full = false) leaves out env and kvm. */
static json_t *
dt_json(sim *s, sim_req *r, const sim_sandbox *sb, bool full)
{
	char created[40], updated[40], active[40], *proxy = sim_daytona_toolbox_url(r);
	const char *state = sim_state_name(s, sb->state);
	json_t *o;

	sim_time(sb->created_ms, created, sizeof(created));
	sim_time(sb->updated_ms, updated, sizeof(updated));
	sim_time(sb->activity_ms, active, sizeof(active));
	o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:o,s:b,s:s,s:i,s:i,s:i,s:i,s:s,s:s,s:s,"
	              "s:i,s:i,s:i,s:i,s:s,s:s,s:s,s:s,s:s}",
	        "id", sb->id, "organizationId", DT_ORG, "name", sb->name ? sb->name : sb->id,
	        "snapshot", sb->template_id, "user", sb->os_user ? sb->os_user : "daytona",
	        "labels", sim_kv_to_json(&sb->meta), "public", sb->public_, "target", "us", "cpu",
	        sb->cpu, "gpu", 0, "memory", sb->memory_mb, "disk", sb->disk_mb, "state", state,
	        "desiredState", state, "backupState", "None", "autoStopInterval", sb->auto_stop_min,
	        "autoPauseInterval", 0, "autoArchiveInterval", sb->auto_archive_min,
	        "autoDeleteInterval", sb->auto_delete_min, "createdAt", created, "updatedAt",
	        updated, "lastActivityAt", active, "runnerDomain", s->domain, "toolboxProxyUrl",
	        proxy);
	sim_net_daytona_detail(sb, o);
	if (full) {
		json_object_set_new(o, "env", sim_kv_to_json(&sb->env));
		json_object_set_new(o, "kvm", json_boolean(sb->kvm));
	}
	free(proxy);
	return o;
}

static bool
bad(sim *s, sim_req *r, const char *field, const char *what)
{
	sim_reply_error(s, r, 400, "%s %s", field, what);
	return false;
}

static bool
opt_int(sim *s, sim_req *r, json_t *doc, const char *field, int *out)
{
	json_t *v = json_object_get(doc, field);

	if (v == NULL || json_is_null(v))
		return true;
	if (!json_is_integer(v))
		return bad(s, r, field, "must be an integer number");
	*out = (int)json_integer_value(v);
	return true;
}

static bool
opt_bool(sim *s, sim_req *r, json_t *doc, const char *field, bool *out)
{
	json_t *v = json_object_get(doc, field);

	if (v == NULL || json_is_null(v))
		return true;
	if (!json_is_boolean(v))
		return bad(s, r, field, "must be a boolean value");
	*out = json_is_true(v);
	return true;
}

static bool
opt_str(sim *s, sim_req *r, json_t *doc, const char *field, const char **out)
{
	json_t *v = json_object_get(doc, field);

	if (v == NULL || json_is_null(v))
		return true;
	if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > 60)
		return bad(s, r, field, "must be a non-empty string");
	*out = json_string_value(v);
	return true;
}

static sim_sandbox *
by_name(sim *s, const char *name, int64_t now)
{
	for (sim_sandbox *sb = s->store.head; sb; sb = sb->next)
		if (sb->name && strcmp(sb->name, name) == 0)
			return sim_store_get(s, sb->id, now);
	return NULL;
}

static sim_sandbox *
find(sim *s, sim_req *r, const char *key, int64_t now)
{
	sim_sandbox *sb = sim_store_get(s, key, now);

	if (sb == NULL)
		sb = by_name(s, key, now);
	if (sb == NULL)
		sim_reply_error(s, r, 404, "Sandbox with ID or name %s not found", key);
	return sb;
}

/* Replies with the destroyed sandbox, then removes it (its files go with it). */
static void
destroy(sim *s, sim_req *r, sim_sandbox *sb)
{
	sb->state = SIM_KILLED;
	sb->updated_ms = sk_now_ms();
	sim_reply_json(s, r, 200, dt_json(s, r, sb, true));
	sim_store_remove(&s->store, sb);
}

struct dt_create {
	const char *snapshot, *name, *user;
	int cpu, memory, disk, stop, archive, del;
	bool public_, kvm;
	sim_kv labels, env;
};

static bool
parse_create(sim *s, sim_req *r, json_t *doc, struct dt_create *c)
{
	char why[200];

	if (!opt_str(s, r, doc, "snapshot", &c->snapshot) ||
	        !opt_str(s, r, doc, "name", &c->name) || !opt_str(s, r, doc, "user", &c->user) ||
	        !opt_int(s, r, doc, "cpu", &c->cpu) || !opt_int(s, r, doc, "memory", &c->memory) ||
	        !opt_int(s, r, doc, "disk", &c->disk) ||
	        !opt_int(s, r, doc, "autoStopInterval", &c->stop) ||
	        !opt_int(s, r, doc, "autoArchiveInterval", &c->archive) ||
	        !opt_int(s, r, doc, "autoDeleteInterval", &c->del) ||
	        !opt_bool(s, r, doc, "public", &c->public_) || !opt_bool(s, r, doc, "kvm", &c->kvm))
		return false;
	if (c->stop < 0 || c->archive < 0 || c->cpu < 1 || c->memory < 1 || c->disk < 1)
		return bad(s, r, "interval or resource", "must not be less than its minimum");
	if (sim_kv_from_json(json_object_get(doc, "labels"), &c->labels, why, sizeof(why)) != 0)
		return bad(s, r, "labels", why);
	if (sim_kv_from_json(json_object_get(doc, "env"), &c->env, why, sizeof(why)) != 0) {
		sim_kv_free(&c->labels);
		return bad(s, r, "env", why);
	}
	return true;
}

static void
fill(sim_sandbox *sb, struct dt_create *c)
{
	snprintf(sb->template_id, sizeof(sb->template_id), "%s", c->snapshot);
	sb->name = sk_strdup(c->name ? c->name : sb->id);
	sb->os_user = sk_strdup(c->user ? c->user : "daytona");
	sb->public_ = c->public_;
	sb->kvm = c->kvm;
	sb->cpu = c->cpu;
	sb->memory_mb = c->memory;
	sb->disk_mb = c->disk;
	sb->auto_stop_min = c->stop;
	sb->auto_archive_min = c->archive;
	sb->auto_delete_min = c->del;
	sb->env = c->env;
}

static void
h_create(sim *s, sim_req *r, const char *unused)
{
	struct dt_create c = { .snapshot = "daytona-small",
		.cpu = 1,
		.memory = 1,
		.disk = 3,
		.stop = 15,
		.archive = 10080,
		.del = -1 };
	json_t *doc = sim_req_json(s, r, false);
	int64_t now = sk_now_ms();
	sim_sandbox *sb, policy = { 0 };
	const char *why;

	if (doc == NULL || !parse_create(s, r, doc, &c)) {
		json_decref(doc);
		return;
	}
	policy.public_ = c.public_;
	if (sim_net_daytona_create(&policy, doc, &why) != 0) {
		bad(s, r, "network", why);
		sim_kv_free(&c.labels);
		sim_kv_free(&c.env);
		json_decref(doc);
		return;
	}
	pthread_mutex_lock(&s->lock);
	if (c.name && by_name(s, c.name, now)) {
		sim_reply_error(s, r, 409, "Sandbox with name %s already exists", c.name);
		sim_kv_free(&c.labels);
		sim_kv_free(&c.env);
		json_decref(policy.net);
	} else if (!sim_caps_admit(s, r, now)) {
		sim_kv_free(&c.labels);
		sim_kv_free(&c.env);
		json_decref(policy.net);
	} else {
		sb = sim_store_new(s, now);
		fill(sb, &c);
		sb->net = policy.net;
		policy.net = NULL;
		sim_caps_note_running(s);
		sim_store_set_meta(&s->store, sb, &c.labels);
		sim_reply_json(s, r, 200, dt_json(s, r, sb, true));
	}
	pthread_mutex_unlock(&s->lock);
	json_decref(doc);
}

static void
h_get(sim *s, sim_req *r, const char *key)
{
	sim_sandbox *sb;

	pthread_mutex_lock(&s->lock);
	if ((sb = find(s, r, key, sk_now_ms())) != NULL)
		sim_reply_json(s, r, 200, dt_json(s, r, sb, true));
	pthread_mutex_unlock(&s->lock);
}

static void
h_delete(sim *s, sim_req *r, const char *key)
{
	sim_sandbox *sb;

	pthread_mutex_lock(&s->lock);
	if ((sb = find(s, r, key, sk_now_ms())) != NULL)
		destroy(s, r, sb);
	pthread_mutex_unlock(&s->lock);
}

/* start (from stopped or archived), stop, archive (from stopped). */
static void
transition(sim *s, sim_req *r, const char *key)
{
	const char *action = r->segs[2];
	int64_t now = sk_now_ms();
	sim_sandbox *sb;

	pthread_mutex_lock(&s->lock);
	if ((sb = find(s, r, key, now)) == NULL) {
		/* replied */
	} else if (strcmp(action, "start") == 0 && sb->state != SIM_RUNNING &&
	        !sim_caps_admit(s, r, now)) {
		/* refused: answered */
	} else if (strcmp(action, "start") == 0) {
		if (sb->state != SIM_RUNNING)
			sim_sandbox_resume(s, sb, now, 0);
		sb->activity_ms = now;
		sim_reply_json(s, r, 200, dt_json(s, r, sb, true));
	} else if (strcmp(action, "stop") == 0 && sb->state != SIM_RUNNING) {
		sim_reply_error(s, r, 400, "Sandbox is not started");
	} else if (strcmp(action, "stop") == 0 && sb->auto_delete_min == 0) {
		destroy(s, r, sb); /* ephemeral: deleted on stop */
	} else if (strcmp(action, "stop") == 0) {
		sim_sandbox_pause(sb, now);
		sim_reply_json(s, r, 200, dt_json(s, r, sb, true));
	} else if (sb->state != SIM_PAUSED) {
		sim_reply_error(s, r, 400, "Sandbox is not stopped");
	} else {
		sb->state = SIM_ARCHIVED;
		sb->updated_ms = now;
		sim_reply_json(s, r, 200, dt_json(s, r, sb, true));
	}
	pthread_mutex_unlock(&s->lock);
}

static void
h_labels(sim *s, sim_req *r, const char *key)
{
	json_t *doc = sim_req_json(s, r, false);
	char why[200];
	sim_kv kv;
	sim_sandbox *sb;

	if (doc == NULL)
		return;
	if (sim_kv_from_json(json_object_get(doc, "labels"), &kv, why, sizeof(why)) != 0) {
		json_decref(doc);
		bad(s, r, "labels", why);
		return;
	}
	json_decref(doc);
	pthread_mutex_lock(&s->lock);
	if ((sb = find(s, r, key, sk_now_ms())) != NULL) {
		sim_store_set_meta(&s->store, sb, &kv);
		sb->updated_ms = sk_now_ms();
		sim_reply_json(s, r, 200, json_pack("{s:o}", "labels", sim_kv_to_json(&sb->meta)));
	}
	pthread_mutex_unlock(&s->lock);
	sim_kv_free(&kv);
}

/* POST /sandbox/{id}/autostop|autoarchive|autodelete/{minutes} */
static void
h_interval(sim *s, sim_req *r, const char *key)
{
	const char *which = r->segs[2];
	bool del = strcmp(which, "autodelete") == 0;
	char *end;
	long min = strtol(r->segs[3], &end, 10);
	int64_t now = sk_now_ms();
	sim_sandbox *sb;

	if (*end != '\0' || r->segs[3][0] == '\0' || (min < 0 && !del)) {
		bad(s, r, "interval",
		        del ? "must be an integer" : "must be a non-negative integer");
		return;
	}
	pthread_mutex_lock(&s->lock);
	if ((sb = find(s, r, key, now)) != NULL) {
		if (strcmp(which, "autostop") == 0)
			sb->auto_stop_min = (int)min;
		else if (del)
			sb->auto_delete_min = (int)min;
		else
			sb->auto_archive_min = (int)min;
		sim_sandbox_touch(s, sb, now);
		sb->updated_ms = now;
		sim_reply_json(s, r, 200, dt_json(s, r, sb, true));
	}
	pthread_mutex_unlock(&s->lock);
}

/* GET /sandbox/{id}/ports/{port}/preview-url and GET /sandbox/{id}/toolbox-proxy-url */
static void
h_urls(sim *s, sim_req *r, const char *key)
{
	char *end, *url;
	long port = r->nseg == 5 ? strtol(r->segs[3], &end, 10) : 0;
	sim_sandbox *sb;

	if (r->nseg == 5 && (*end != '\0' || port < 1 || port > 65535)) {
		bad(s, r, "port", "must be a port number");
		return;
	}
	pthread_mutex_lock(&s->lock);
	if ((sb = find(s, r, key, sk_now_ms())) != NULL && r->nseg == 5) {
		url = sk_asprintf("http://%ld-%s.%s", port, sb->id, s->domain);
		sim_reply_json(s, r, 200,
		        json_pack("{s:s,s:s,s:s}", "sandboxId", sb->id, "url", url, "token",
		                sb->token));
		free(url);
	} else if (sb) {
		url = sim_daytona_toolbox_url(r);
		sim_reply_json(s, r, 200, json_pack("{s:s}", "url", url));
		free(url);
	}
	pthread_mutex_unlock(&s->lock);
}

/* ---- list: GET /sandbox, newest first, cursor = the last item's sequence ---- */

/* Index among started/stopped/archived/destroyed; 4 for another valid state, -1 invalid. */
static int
state_of(const char *name)
{
	static const char *const names[] = { "started", "stopped", "archived", "destroyed",
		"creating", "restoring", "destroying", "starting", "stopping", "error",
		"build_failed", "pending_build", "building_snapshot", "unknown", "pulling_snapshot",
		"archiving", "resizing", "snapshotting", "forking", "pausing", "paused", "resuming",
		NULL };

	for (int i = 0; names[i]; i++)
		if (strcmp(names[i], name) == 0)
			return i < 4 ? i : 4;
	return -1;
}

struct dt_query {
	sim_kv labels;
	bool states[4];
	bool any_state;
	const char *id_prefix, *name_prefix;
	long limit;
	uint64_t before; /* cursor: only seq < before; 0: from the newest */
};

static int
parse_labels(sim *s, sim_req *r, struct dt_query *q)
{
	const char *arg = sim_req_arg(r, "labels");
	json_t *doc;
	char why[200];
	int rc;

	if (arg == NULL || *arg == '\0')
		return 0;
	doc = json_loads(arg, 0, NULL);
	rc = json_is_object(doc) ? sim_kv_from_json(doc, &q->labels, why, sizeof(why)) : -1;
	json_decref(doc);
	if (rc != 0)
		sim_reply_error(s, r, 400, "Invalid labels: must be a JSON object of strings");
	return rc;
}

static int
parse_states(sim *s, sim_req *r, struct dt_query *q)
{
	char *all = sim_req_arg_all(r, "states"), *save = NULL, *tok;
	int rc = 0;

	q->any_state = all == NULL;
	for (tok = all ? strtok_r(all, ",", &save) : NULL; tok; tok = strtok_r(NULL, ",", &save)) {
		int st = state_of(tok);
		if (st < 0)
			rc = -1;
		else if (st < 4)
			q->states[st] = true;
	}
	free(all);
	if (rc != 0)
		sim_reply_error(s, r, 400, "each value in states must be a valid sandbox state");
	return rc;
}

static int
parse_number(const char *text, long lo, long hi, long *out)
{
	char *end;
	long v;

	if (text == NULL)
		return 0;
	v = strtol(text, &end, 10);
	if (*text == '\0' || *end != '\0' || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int
parse_dt_query(sim *s, sim_req *r, struct dt_query *q)
{
	const char *cursor = sim_req_arg(r, "cursor");
	long before = 0;

	q->limit = DT_LIST_DEFAULT;
	q->id_prefix = sim_req_arg(r, "id");
	q->name_prefix = sim_req_arg(r, "name");
	if (parse_number(sim_req_arg(r, "limit"), 1, DT_LIST_MAX, &q->limit) != 0) {
		sim_reply_error(s, r, 400, "limit must be a number from 1 to %d", DT_LIST_MAX);
		return -1;
	}
	if (cursor && *cursor && parse_number(cursor, 1, LONG_MAX, &before) != 0) {
		sim_reply_error(s, r, 400, "Invalid cursor");
		return -1;
	}
	q->before = (uint64_t)before;
	if (parse_states(s, r, q) != 0)
		return -1;
	return parse_labels(s, r, q);
}

static bool
prefix_ci(const char *have, const char *prefix)
{
	return prefix == NULL || strncasecmp(have, prefix, strlen(prefix)) == 0;
}

static bool
dt_matches(sim *s, const struct dt_query *q, sim_sandbox *sb, int64_t now)
{
	if (sim_sandbox_tick(s, sb, now) || (q->before && sb->seq >= q->before))
		return false;
	if (!q->any_state && !q->states[sb->state])
		return false;
	if (!prefix_ci(sb->id, q->id_prefix) ||
	        !prefix_ci(sb->name ? sb->name : "", q->name_prefix))
		return false;
	return q->labels.n == 0 || sim_meta_match(sb, &q->labels);
}

/* Keeps the n highest sequences, highest first; returns the new count. */
static int
keep_newest(sim_sandbox **page, int n, int cap, sim_sandbox *sb)
{
	int i;

	if (n == cap && page[n - 1]->seq > sb->seq)
		return n;
	if (n < cap)
		n++;
	for (i = n - 1; i > 0 && page[i - 1]->seq < sb->seq; i--)
		page[i] = page[i - 1];
	page[i] = sb;
	return n;
}

/* The page plus one (to know whether there is a next one). */
static int
select_dt_page(sim *s, const struct dt_query *q, sim_sandbox **page, int cap)
{
	const char *user = sim_kv_get(&q->labels, "user_id");
	int64_t now = sk_now_ms();
	int n = 0;

	if (user) {
		const sim_vec *v = sim_store_by_user(&s->store, user);
		for (size_t i = 0; v && i < v->len; i++)
			if (dt_matches(s, q, v->items[i], now))
				n = keep_newest(page, n, cap, v->items[i]);
		return n;
	}
	for (sim_sandbox *sb = s->store.tail; sb && n < cap; sb = sb->prev)
		if (dt_matches(s, q, sb, now))
			page[n++] = sb;
	return n;
}

static const char *
cursor_of(const sim_sandbox *sb, char *buf, size_t len)
{
	snprintf(buf, len, "%llu", (unsigned long long)sb->seq);
	return buf;
}

static void
h_list(sim *s, sim_req *r, const char *unused)
{
	struct dt_query q = { 0 };
	sim_sandbox **page;
	json_t *items, *next = json_null();
	char buf[32];
	int n;

	if (parse_dt_query(s, r, &q) != 0) {
		sim_kv_free(&q.labels);
		return;
	}
	page = sk_calloc((size_t)q.limit + 1, sizeof(*page));
	items = json_array();
	pthread_mutex_lock(&s->lock);
	n = sim_faults_list_empty(s, sk_now_ms()) ? 0
	                                          : select_dt_page(s, &q, page, (int)q.limit + 1);
	for (int i = 0; i < n && i < q.limit; i++)
		json_array_append_new(items, dt_json(s, r, page[i], false));
	if (n > q.limit)
		next = json_string(cursor_of(page[q.limit - 1], buf, sizeof(buf)));
	pthread_mutex_unlock(&s->lock);
	sim_kv_free(&q.labels);
	free(page);
	sim_reply_json(s, r, 200, json_pack("{s:o,s:o}", "items", items, "nextCursor", next));
}

/* ---- routing ---- */

typedef void (*dt_fn)(sim *s, sim_req *r, const char *key);

static void
go(sim *s, sim_req *r, int ep, dt_fn fn, const char *key)
{
	r->ep = ep;
	if (sim_precheck(s, r, true))
		fn(s, r, key);
}

static bool
is(const char *seg, const char *name)
{
	return strcmp(seg, name) == 0;
}

static int
action_ep(const char *action)
{
	if (is(action, "start"))
		return SIM_EP_START;
	return is(action, "stop") ? SIM_EP_STOP : SIM_EP_ARCHIVE;
}

/* /sandbox/{id}/<action>[/...]; false when nothing matched. */
static bool
route_action(sim *s, sim_req *r, bool get, bool post)
{
	char **seg = r->segs;
	int n = r->nseg;

	if (n == 3 && post && (is(seg[2], "start") || is(seg[2], "stop") || is(seg[2], "archive")))
		go(s, r, action_ep(seg[2]), transition, seg[1]);
	else if (n == 3 && is(r->method, "PUT") && is(seg[2], "labels"))
		go(s, r, SIM_EP_LABELS, h_labels, seg[1]);
	else if (n == 4 && post &&
	        (is(seg[2], "autostop") || is(seg[2], "autoarchive") || is(seg[2], "autodelete")))
		go(s, r, SIM_EP_AUTOSTOP, h_interval, seg[1]);
	else if (get &&
	        ((n == 5 && is(seg[2], "ports") && is(seg[4], "preview-url")) ||
	                (n == 3 && is(seg[2], "toolbox-proxy-url"))))
		go(s, r, SIM_EP_GET, h_urls, seg[1]);
	else
		return false;
	return true;
}

void
sim_daytona_route(sim *s, sim_req *r)
{
	const char *m = r->method;
	bool get = is(m, "GET"), post = is(m, "POST");
	char **seg = r->segs;
	int n = r->nseg;

	if (n > 0 && is(seg[0], "api")) {
		memmove(r->segs, r->segs + 1, (size_t)(n - 1) * sizeof(char *));
		n = --r->nseg;
	}
	if (n >= 2 && is(seg[0], "toolbox")) {
		r->ep = strstr(r->url, "/files") ? SIM_EP_FILES : SIM_EP_ENVD;
		if (sim_precheck(s, r, true))
			sim_daytona_toolbox(s, r);
	} else if (n == 0 || !is(seg[0], "sandbox")) {
		r->ep = SIM_EP_UNKNOWN;
		sim_reply_error(s, r, 404, "Cannot %s %s", m, r->url);
	} else if (n == 1 && post) {
		go(s, r, SIM_EP_CREATE, h_create, NULL);
	} else if (n == 1 && get) {
		go(s, r, SIM_EP_LIST, h_list, NULL);
	} else if (n == 2 && get) {
		go(s, r, SIM_EP_GET, h_get, seg[1]);
	} else if (n == 2 && is(m, "DELETE")) {
		go(s, r, SIM_EP_KILL, h_delete, seg[1]);
	} else if (!route_action(s, r, get, post)) {
		r->ep = SIM_EP_UNKNOWN;
		sim_reply_error(s, r, 404, "Cannot %s %s", m, r->url);
	}
}
