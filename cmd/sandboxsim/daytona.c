/*
 * sandboxsim Daytona flavour: the NestJS-style API of reference §5 (also
 * under /api): POST /sandbox, GET /sandbox?labels=<json>, GET
 * /sandbox/paginated, GET|DELETE /sandbox/{idOrName}, POST
 * /sandbox/{id}/start|stop|archive, PUT /sandbox/{id}/labels, POST
 * /sandbox/{id}/autostop/{min}. States started/stopped/archived/destroyed;
 * auto-stop after autoStopInterval idle minutes; errors
 * {statusCode, message, error}.
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define DT_ORG "00000000-0000-4000-8000-000000000001"

static json_t *
dt_json(sim *s, const sim_sandbox *sb)
{
	char created[40], updated[40];

	sim_time(sb->created_ms, created, sizeof(created));
	sim_time(sb->updated_ms, updated, sizeof(updated));
	return json_pack("{s:s,s:s,s:s,s:s,s:s,s:o,s:o,s:b,s:b,s:s,s:i,s:i,s:i,s:i,s:s,s:s,"
	                 "s:s,s:i,s:i,s:i,s:s,s:s,s:s}",
	        "id", sb->id, "organizationId", DT_ORG, "name", sb->name ? sb->name : sb->id,
	        "snapshot", sb->template_id, "user", sb->os_user ? sb->os_user : "daytona", "env",
	        sim_kv_to_json(&sb->env), "labels", sim_kv_to_json(&sb->meta), "public",
	        sb->public_, "networkBlockAll", 0, "target", "us", "cpu", sb->cpu, "gpu", 0,
	        "memory", sb->memory_mb, "disk", sb->disk_mb, "state", sim_state_name(s, sb->state),
	        "desiredState", sim_state_name(s, sb->state), "backupState", "None",
	        "autoStopInterval", sb->auto_stop_min, "autoArchiveInterval", sb->auto_archive_min,
	        "autoDeleteInterval", sb->auto_delete_min, "createdAt", created, "updatedAt",
	        updated, "runnerDomain", s->domain);
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

struct dt_create {
	const char *snapshot, *name, *user;
	int cpu, memory, disk, stop, archive, del;
	bool public_;
	sim_kv labels, env;
};

static bool
parse_create(sim *s, sim_req *r, json_t *doc, struct dt_create *c)
{
	char why[200];
	json_t *pub = json_object_get(doc, "public");

	if (!opt_str(s, r, doc, "snapshot", &c->snapshot) ||
	        !opt_str(s, r, doc, "name", &c->name) || !opt_str(s, r, doc, "user", &c->user) ||
	        !opt_int(s, r, doc, "cpu", &c->cpu) || !opt_int(s, r, doc, "memory", &c->memory) ||
	        !opt_int(s, r, doc, "disk", &c->disk) ||
	        !opt_int(s, r, doc, "autoStopInterval", &c->stop) ||
	        !opt_int(s, r, doc, "autoArchiveInterval", &c->archive) ||
	        !opt_int(s, r, doc, "autoDeleteInterval", &c->del))
		return false;
	if (pub && !json_is_boolean(pub))
		return bad(s, r, "public", "must be a boolean value");
	c->public_ = json_is_true(pub);
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
	sim_sandbox *sb;

	if (doc == NULL || !parse_create(s, r, doc, &c)) {
		json_decref(doc);
		return;
	}
	pthread_mutex_lock(&s->lock);
	if (c.name && by_name(s, c.name, now)) {
		sim_reply_error(s, r, 409, "Sandbox with name %s already exists", c.name);
		sim_kv_free(&c.labels);
		sim_kv_free(&c.env);
	} else {
		sb = sim_store_new(s, now);
		snprintf(sb->template_id, sizeof(sb->template_id), "%s", c.snapshot);
		sb->name = sk_strdup(c.name ? c.name : sb->id);
		sb->os_user = sk_strdup(c.user ? c.user : "daytona");
		sb->public_ = c.public_;
		sb->cpu = c.cpu;
		sb->memory_mb = c.memory;
		sb->disk_mb = c.disk;
		sb->auto_stop_min = c.stop;
		sb->auto_archive_min = c.archive;
		sb->auto_delete_min = c.del;
		sb->env = c.env;
		sim_store_set_meta(&s->store, sb, &c.labels);
		sim_reply_json(s, r, 200, dt_json(s, sb));
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
		sim_reply_json(s, r, 200, dt_json(s, sb));
	pthread_mutex_unlock(&s->lock);
}

static void
h_delete(sim *s, sim_req *r, const char *key)
{
	sim_sandbox *sb;

	pthread_mutex_lock(&s->lock);
	if ((sb = find(s, r, key, sk_now_ms())) != NULL) {
		sim_store_remove(&s->store, sb);
		sim_reply_empty(r, 200);
	}
	pthread_mutex_unlock(&s->lock);
}

static void
transition(sim *s, sim_req *r, const char *key)
{
	const char *action = r->segs[2];
	int64_t now = sk_now_ms();
	sim_sandbox *sb;

	pthread_mutex_lock(&s->lock);
	if ((sb = find(s, r, key, now)) == NULL) {
		/* replied */
	} else if (strcmp(action, "start") == 0) {
		if (sb->state != SIM_RUNNING)
			sim_sandbox_resume(s, sb, now, 0);
		sb->activity_ms = now;
		sim_reply_json(s, r, 200, dt_json(s, sb));
	} else if (strcmp(action, "stop") == 0 && sb->state != SIM_RUNNING) {
		sim_reply_error(s, r, 400, "Sandbox is not started");
	} else if (strcmp(action, "stop") == 0 && sb->auto_delete_min == 0) {
		sim_store_remove(&s->store, sb);
		sim_reply_empty(r, 200);
	} else if (strcmp(action, "stop") == 0) {
		sim_sandbox_pause(sb, now);
		sim_reply_json(s, r, 200, dt_json(s, sb));
	} else if (sb->state != SIM_PAUSED) {
		sim_reply_error(s, r, 400, "Sandbox is not stopped");
	} else {
		sb->state = SIM_ARCHIVED;
		sb->updated_ms = now;
		sim_reply_json(s, r, 200, dt_json(s, sb));
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
		sim_reply_json(s, r, 200, json_pack("{s:o}", "labels", sim_kv_to_json(&sb->meta)));
	}
	pthread_mutex_unlock(&s->lock);
	sim_kv_free(&kv);
}

static void
h_autostop(sim *s, sim_req *r, const char *key)
{
	char *end;
	long min = strtol(r->segs[3], &end, 10);
	int64_t now = sk_now_ms();
	sim_sandbox *sb;

	if (*end != '\0' || min < 0) {
		bad(s, r, "interval", "must be a non-negative integer");
		return;
	}
	pthread_mutex_lock(&s->lock);
	if ((sb = find(s, r, key, now)) != NULL) {
		sb->auto_stop_min = (int)min;
		sb->activity_ms = now;
		sim_reply_empty(r, 200);
	}
	pthread_mutex_unlock(&s->lock);
}

/* ---- lists ---- */

static int
state_of(const char *name)
{
	static const char *const names[] = { "started", "stopped", "archived", "destroyed" };

	for (int i = 0; i < 4; i++)
		if (strcmp(names[i], name) == 0)
			return i;
	return -1;
}

struct dt_query {
	sim_kv labels;
	bool states[4];
	bool any_state;
	long page, limit;
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
parse_dt_query(sim *s, sim_req *r, struct dt_query *q, bool paginated)
{
	char *all = sim_req_arg_all(r, paginated ? "states" : "state"), *save = NULL, *tok;
	const char *page = sim_req_arg(r, "page"), *limit = sim_req_arg(r, "limit");
	int rc = 0;

	q->any_state = all == NULL;
	for (tok = all ? strtok_r(all, ",", &save) : NULL; tok; tok = strtok_r(NULL, ",", &save)) {
		int st = state_of(tok);
		if (st < 0)
			rc = -1;
		else
			q->states[st] = true;
	}
	free(all);
	q->page = page ? strtol(page, NULL, 10) : 1;
	q->limit = limit ? strtol(limit, NULL, 10) : 100;
	if (rc != 0 || q->page < 1 || q->limit < 1 || q->limit > 100) {
		sim_reply_error(s, r, 400, "invalid states, page or limit");
		return -1;
	}
	return parse_labels(s, r, q);
}

static void
h_list(sim *s, sim_req *r, const char *unused)
{
	bool paginated = r->nseg == 2;
	struct dt_query q = { 0 };
	json_t *items = json_array();
	int64_t now = sk_now_ms();
	long total = 0, first;

	if (parse_dt_query(s, r, &q, paginated) != 0) {
		json_decref(items);
		return;
	}
	first = (q.page - 1) * q.limit;
	pthread_mutex_lock(&s->lock);
	for (sim_sandbox *sb = s->store.tail; sb; sb = sb->prev) {
		if (sim_sandbox_tick(s, sb, now) || (!q.any_state && !q.states[sb->state]) ||
		        (q.labels.n > 0 && !sim_meta_match(sb, &q.labels)))
			continue;
		if (!paginated || (total >= first && total < first + q.limit))
			json_array_append_new(items, dt_json(s, sb));
		total++;
	}
	pthread_mutex_unlock(&s->lock);
	sim_kv_free(&q.labels);
	if (sim_faults_list_empty(s, now)) {
		json_array_clear(items);
		total = 0;
	}
	if (!paginated) {
		sim_reply_json(s, r, 200, items);
		return;
	}
	sim_reply_json(s, r, 200,
	        json_pack("{s:o,s:I,s:I,s:I}", "items", items, "total", (json_int_t)total, "page",
	                (json_int_t)q.page, "totalPages",
	                (json_int_t)((total + q.limit - 1) / q.limit)));
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

void
sim_daytona_route(sim *s, sim_req *r)
{
	const char *m = r->method;
	bool get = strcmp(m, "GET") == 0, post = strcmp(m, "POST") == 0;
	char **seg = r->segs;
	int n = r->nseg;

	if (n > 0 && strcmp(seg[0], "api") == 0) {
		memmove(r->segs, r->segs + 1, (size_t)(n - 1) * sizeof(char *));
		n = --r->nseg;
	}
	if (n == 0 || strcmp(seg[0], "sandbox") != 0) {
		r->ep = SIM_EP_UNKNOWN;
		sim_reply_error(s, r, 404, "Cannot %s %s", m, r->url);
	} else if (n == 1 && post) {
		go(s, r, SIM_EP_CREATE, h_create, NULL);
	} else if ((n == 1 && get) || (n == 2 && get && strcmp(seg[1], "paginated") == 0)) {
		go(s, r, SIM_EP_LIST, h_list, NULL);
	} else if (n == 2 && get) {
		go(s, r, SIM_EP_GET, h_get, seg[1]);
	} else if (n == 2 && strcmp(m, "DELETE") == 0) {
		go(s, r, SIM_EP_KILL, h_delete, seg[1]);
	} else if (n == 3 && post && strcmp(seg[2], "start") == 0) {
		go(s, r, SIM_EP_START, transition, seg[1]);
	} else if (n == 3 && post && strcmp(seg[2], "stop") == 0) {
		go(s, r, SIM_EP_STOP, transition, seg[1]);
	} else if (n == 3 && post && strcmp(seg[2], "archive") == 0) {
		go(s, r, SIM_EP_ARCHIVE, transition, seg[1]);
	} else if (n == 3 && strcmp(m, "PUT") == 0 && strcmp(seg[2], "labels") == 0) {
		go(s, r, SIM_EP_LABELS, h_labels, seg[1]);
	} else if (n == 4 && post && strcmp(seg[2], "autostop") == 0) {
		go(s, r, SIM_EP_AUTOSTOP, h_autostop, seg[1]);
	} else {
		r->ep = SIM_EP_UNKNOWN;
		sim_reply_error(s, r, 404, "Cannot %s %s", m, r->url);
	}
}
