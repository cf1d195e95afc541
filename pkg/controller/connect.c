/*
 * connect: the platform's "give me this user's sandbox, ready" request and
 * its heartbeat. The planner decides (sk_connect_decide); this file only
 * carries the decision out:
 *   READY        answered from memory: no provider call, no database write;
 *   WAKE         the Idle keeper is resumed by a reconcile (one provider call);
 *   REPLACE      the unreachable keeper is replaced by a reconcile now;
 *   RECONCILE    unknown, missing or changing: reconcile now and wait;
 *   UNAVAILABLE  answered 503 at once, never after the caller's timeout.
 * Every connect is activity; renewing the deadline and persisting
 * lastActivityTime happen off the request path, in a queued reconcile.
 * A fresh connect (the application saw the data plane fail) never answers
 * from memory: it waits for a reconcile that probed the keeper after it
 * arrived (under remediation Replace, an unreachable keeper is replaced at
 * once).
 * The answer carries what an SDK needs to attach with no provider call:
 * envdURL (+ envdHeaders), envdVersion, envdAccessToken (a secret: only
 * ever in this answer, on the guarded listener), provider, deadline, and
 * workspaceLost: true while the space's files are known lost.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../reconcile/connect.h"
#include "../reconcile/options.h"
#include "../reconcile/plan.h"
#include "capacity_int.h"
#include "ground_int.h"
#include "http_int.h"
#include "shards_int.h"
#include "spaces_int.h"
#include "worker_int.h"

/* How long a heartbeat waits for a controller that is still starting. */
#define ACTIVITY_START_WAIT_MS 5000

/* How a connect was answered: its metrics label path, and the answer's
 * path field (docs/connect-api.md). */
typedef enum connect_path {
	PATH_NONE, /* not answered for the space: still starting, unknown, store down */
	PATH_FORWARD, /* another replica's answer */
	PATH_FAST, /* from memory */
	PATH_UNAVAILABLE,
	PATH_CAPACITY, /* the start's queue is full */
	PATH_RECONCILE,
	PATH_WAKE,
	PATH_CREATE,
	PATH_REPLACE,
	PATH_RESTORE,
} connect_path;

static const char *
path_name(connect_path p)
{
	switch (p) {
	case PATH_NONE: return "none";
	case PATH_FORWARD: return "forward";
	case PATH_FAST: return "fast";
	case PATH_UNAVAILABLE: return "unavailable";
	case PATH_CAPACITY: return "capacity";
	case PATH_RECONCILE: return "reconcile";
	case PATH_WAKE: return "wake";
	case PATH_CREATE: return "create";
	case PATH_REPLACE: return "replace";
	case PATH_RESTORE: return "restore";
	}
	return "none";
}

void
sk_ctl_reply_json(sk_http_reply *r, unsigned int status, json_t *obj)
{
	char *s = json_dumps(obj, JSON_COMPACT);

	free(r->body);
	r->status = status;
	r->body = sk_asprintf("%s\n", s ? s : "{}");
	r->type = "application/json";
	free(s);
	json_decref(obj);
}

void
sk_ctl_reply_error(sk_http_reply *r, unsigned int status, const char *reason, const char *msg)
{
	sk_ctl_reply_json(r, status, json_pack("{s:s, s:s}", "reason", reason, "message", msg));
}

/* Counts the call under its labels (path, then path and code) and times
 * it from t0 (sk_metrics_now). */
static void
count_labelled(sk_controller *c, const char *path_labels, const char *code_labels, double t0)
{
	double dt = sk_metrics_now() - t0;

	sk_metrics_observe(c->metrics, SK_CTL_METRIC_CONNECT_DURATION, path_labels, dt);
	sk_timeline_observe(c->http->tl_connect, sk_now_ms(), dt);
	sk_metrics_add(c->metrics, SK_CTL_METRIC_CONNECTS, code_labels, 1);
}

/* Counts the call by path and code and times it from t0. */
static void
count_connect(sk_controller *c, connect_path path, unsigned int status, double t0)
{
	char lp[64], lc[96];

	snprintf(lp, sizeof(lp), "path=\"%s\"", path_name(path));
	snprintf(lc, sizeof(lc), "path=\"%s\",code=\"%u\"", path_name(path), status);
	count_labelled(c, lp, lc, t0);
}

/* The object from the informer's cache (current with our own writes), else
 * the store. */
static int
load(sk_controller *c, const char *name, sk_userspace **us, sk_error *err)
{
	if (sk_informer_get(c->inf, name, us) == 0)
		return 0;
	return sk_store_get(c->store, name, us, err);
}

/* load, for a caller whose token reaches only some spaces: a space outside
 * its scope is SK_ENOTFOUND with the store's own message, after the same
 * store read a missing space costs (no existence oracle, by answer or by
 * time). */
static int
load_in_scope(sk_controller *c, const char *name, const sk_ctl_origin *from, sk_userspace **us,
        sk_error *err)
{
	int rc = sk_informer_get(c->inf, name, us);

	if (rc == 0 &&
	        (from == NULL || from->scope == NULL ||
	                sk_selector_matches(from->scope, &(*us)->meta.labels)))
		return 0;
	sk_userspace_free(*us);
	*us = NULL;
	if ((rc = sk_store_get(c->store, name, us, err)) != 0)
		return rc;
	if (sk_ctl_in_scope(c, from, *us)) /* counted once when not */
		return 0;
	sk_userspace_free(*us);
	*us = NULL;
	return sk_store_not_found(name, err);
}

/* The UserSpace of a userID the caller's token reaches (its name), else
 * NULL: a space outside the scope is as one that does not exist. */
static char *
name_in_scope(sk_controller *c, const char *user_id, const sk_ctl_origin *from)
{
	char *name = sk_informer_name_for_user(c->inf, user_id);
	sk_userspace *us = NULL;
	bool ok;

	if (name == NULL || from == NULL || from->scope == NULL)
		return name;
	ok = sk_informer_get(c->inf, name, &us) == 0 && sk_ctl_in_scope(c, from, us);
	sk_userspace_free(us);
	if (!ok) {
		free(name);
		name = NULL;
	}
	return name;
}

/* WorkspaceIntact False: the files were lost (a resume without them, or a
 * sandbox gone), until the loss is acknowledged. */
static bool
workspace_lost(const sk_userspace *us)
{
	const sk_condition *w = sk_userspace_condition(us, SK_COND_WORKSPACE);

	return w != NULL && w->status != NULL && strcmp(w->status, "False") == 0;
}

/* A string literal's bytes, true when appended. */
#define PUT_LIT(b, lit) (sk_buf_append((b), (lit), sizeof(lit) - 1) == SK_OK)

/* `,"key":` then value as a JSON string; a NULL or non-UTF-8 value spoils
 * the answer (*ok false), as json_pack fails on one. */
static void
put_string(sk_buf *b, bool *ok, const char *key, const char *value)
{
	*ok = *ok && value != NULL && (b->len <= 1 || sk_buf_append(b, ",", 1) == SK_OK) &&
	        sk_buf_json_string(b, key) == SK_OK && sk_buf_append(b, ":", 1) == SK_OK &&
	        sk_buf_json_string(b, value) == SK_OK;
}

/* The READY answer, written straight into the reply's body: per request
 * no JSON tree and no second copy (the fast path's cost). Keys, order and
 * escaping are json_dumps(JSON_COMPACT)'s, so the bytes are those of the
 * OpenAPI document's example and of the jansson-built answers. */
static void
reply_ready(sk_controller *c, sk_http_reply *r, const sk_userspace *us, const sk_ctl_keeper *k,
        connect_path path)
{
	char *url = sk_ctl_envd_url(c, us);
	/* the binding's provider: spec.provider may name a migration's target */
	int prov = sk_ctl_provider_index(c, sk_bound_provider(us));
	int64_t deadline = k->deadline_ms > 0 ? k->deadline_ms : k->mem.end_ms;
	bool same = k->mem.sandbox_id != NULL && us->status.sandbox_id != NULL &&
	        strcmp(k->mem.sandbox_id, us->status.sandbox_id) == 0;
	sk_buf b = SK_BUF_INIT(1 << 20);
	char when[64];
	bool ok = PUT_LIT(&b, "{");

	put_string(&b, &ok, "name", us->meta.name);
	put_string(&b, &ok, "userID", us->spec.user_id);
	put_string(&b, &ok, "sandboxID", us->status.sandbox_id);
	put_string(&b, &ok, "state", sk_phase_name(us->status.phase));
	ok = ok && PUT_LIT(&b, ",\"ready\":true");
	put_string(&b, &ok, "envdURL", url);
	put_string(&b, &ok, "path", path_name(path));
	if (prov >= 0)
		put_string(&b, &ok, "provider", c->cfg->providers[prov].name);
	/* envdVersion, envdAccessToken and deadline of the bound keeper, when
	 * the controller's memory is of that sandbox */
	if (same && k->envd_version[0])
		put_string(&b, &ok, "envdVersion", k->envd_version);
	if (same && k->envd_token[0])
		put_string(&b, &ok, "envdAccessToken", k->envd_token);
	if (same && us->spec.idle_timeout_ms > 0 && deadline > 0) {
		sk_time_format(deadline, when, sizeof(when));
		put_string(&b, &ok, "deadline", when);
	}
	if (prov >= 0 && c->cfg->providers[prov].sandbox_url != NULL) {
		/* one address for every sandbox: the headers name this one */
		ok = ok && PUT_LIT(&b, ",\"envdHeaders\":{\"E2b-Sandbox-Id\":") &&
		        sk_buf_json_string(
		                &b, us->status.sandbox_id ? us->status.sandbox_id : "") == SK_OK &&
		        PUT_LIT(&b, ",\"E2b-Sandbox-Port\":\"" SK_ENVD_PORT_STRING "\"}");
	}
	if (k->replaced_id[0] && k->replaced_ms > 0) {
		/* The platform can tell its agent that files were not carried over. */
		sk_time_format(k->replaced_ms, when, sizeof(when));
		put_string(&b, &ok, "previousSandboxID", k->replaced_id);
		put_string(&b, &ok, "replacedAt", when);
	}
	if (workspace_lost(us))
		ok = ok && PUT_LIT(&b, ",\"workspaceLost\":true");
	ok = ok && PUT_LIT(&b, "}\n");
	free(r->body);
	r->status = 200;
	r->type = "application/json";
	if (ok) {
		r->body = sk_buf_detach(&b); /* the token lives on only in r->body */
	} else {
		r->body = sk_strdup("{}\n");
		if (b.data)
			explicit_bzero(b.data, b.len);
		sk_buf_dispose(&b);
	}
	free(url);
}

static void
reply_unavailable(
        sk_http_reply *r, const sk_userspace *us, const sk_connect_decision *d, int64_t now)
{
	const sk_condition *ready = sk_userspace_condition(us, SK_COND_READY);
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s?}", "reason", d->reason, "name",
	        us->meta.name, "state", sk_phase_name(us->status.phase), "readyReason",
	        ready && ready->reason ? ready->reason : "", "message",
	        ready ? ready->message : NULL);

	if (d->drift_since_ms > 0)
		json_object_set_new(
		        o, "driftAgeSeconds", json_integer((now - d->drift_since_ms) / 1000));
	if (d->retry_after_ms > 0)
		snprintf(r->retry_after, sizeof(r->retry_after), "%lld",
		        (long long)((d->retry_after_ms + 999) / 1000));
	sk_ctl_reply_json(r, 503, o);
}

static void
reply_timeout(sk_http_reply *r, const sk_userspace *us)
{
	const sk_condition *ready = sk_userspace_condition(us, SK_COND_READY);

	sk_ctl_reply_json(r, 504,
	        json_pack("{s:s, s:s, s:s, s:s, s:s?}", "reason", "Timeout", "name", us->meta.name,
	                "state", sk_phase_name(us->status.phase), "readyReason",
	                ready && ready->reason ? ready->reason : "", "message",
	                ready ? ready->message : NULL));
}

static connect_path
slow_path(sk_connect_verdict v, const sk_userspace *us)
{
	switch (v) {
	case SK_CONNECT_WAKE: return PATH_WAKE;
	case SK_CONNECT_REPLACE: return PATH_REPLACE;
	default:
		if (us->status.phase == SK_PHASE_ARCHIVED)
			return PATH_RESTORE;
		return us->status.sandbox_id == NULL ? PATH_CREATE : PATH_RECONCILE;
	}
}

/* Off the request path: a reconcile renews the deadline (below D/2 left)
 * or persists lastActivityTime (at most once per D/4). */
static void
queue_housekeeping(sk_controller *c, const sk_userspace *us, const sk_connect_decision *d,
        const sk_plan_options *o, int64_t now)
{
	int64_t step = sk_plan_ttl(us, o) / 4;

	if (d->renew_due || now - us->status.last_activity_ms >= step)
		sk_workqueue_add(c->q, us->meta.name);
}

/* A fresh connect's answer: "replace" when its reconcile replaced the
 * keeper, else the path it was given. */
static connect_path
fresh_path(const sk_ctl_keeper *k, int64_t since_ms, connect_path path)
{
	return since_ms > 0 && k->replaced_id[0] && k->replaced_ms >= since_ms ? PATH_REPLACE
	                                                                       : path;
}

/* Answer first: a reconcile told that the keeper it started (woken,
 * created, or a replacement) is healthy, before its writes; started is the
 * object it is about to write. Its answer is this connect's when the object
 * as cached now (*us) is the one that reconcile read: the same uid and
 * generation, not being deleted, and no write since (a later
 * resourceVersion: the paused annotation, a deletion, a spec edit), the
 * decision on it is READY, and the keeper was seen at or after since_ms (a
 * fresh connect's arrival; 0: any). Then *us is started (taken), else
 * started is freed and the connect waits for the reconcile to finish. */
static bool
answer_first(sk_controller *c, sk_userspace **us, sk_userspace *started, const sk_plan_options *o,
        int64_t since_ms, sk_ctl_keeper *k, sk_connect_decision *d)
{
	const sk_userspace *now = *us;
	bool same = now->meta.uid != NULL && started->meta.uid != NULL &&
	        strcmp(now->meta.uid, started->meta.uid) == 0 &&
	        now->meta.generation == started->meta.generation && now->meta.deletion_ms == 0 &&
	        now->meta.resource_version <= started->meta.resource_version;

	if (same) {
		sk_ctl_space_keeper(c, now->meta.name, k);
		sk_connect_decide(started, &k->mem, sk_now_ms(), o, d);
		same = d->verdict == SK_CONNECT_READY && k->detail_seen &&
		        k->mem.seen_ms >= since_ms;
		if (!same)
			explicit_bzero(k->envd_token, sizeof(k->envd_token));
	}
	if (!same) {
		sk_userspace_free(started);
		return false;
	}
	sk_userspace_free(*us);
	*us = started;
	return true;
}

/* A connect that comes while the reconcile that started the keeper (and
 * answered first) still writes: from memory too, on the object it is
 * about to write (answer_first's checks), not a second wait for it. On
 * false, *d and *k are as they were. */
static bool
started_answer(sk_controller *c, sk_userspace **us, const sk_plan_options *o, sk_ctl_keeper *k,
        sk_connect_decision *d)
{
	sk_userspace *s = sk_ctl_started(c, (*us)->meta.name);
	sk_connect_decision before = *d;

	if (s == NULL)
		return false;
	if (answer_first(c, us, s, o, 0, k, d))
		return true;
	*d = before;
	sk_ctl_space_keeper(c, (*us)->meta.name, k);
	return false;
}

/* Waits for reconciles of name until the decision is READY or UNAVAILABLE,
 * or the deadline. Takes *us (the latest copy is left in it). since_ms > 0
 * (fresh): only a reconcile that saw the keeper at or after it counts. A
 * wake, a create or a fresh connect's replacement is answered as soon as
 * its reconcile found the started keeper healthy (answer_first), not after
 * its writes. */
static void
wait_ready(sk_controller *c, sk_userspace **us, connect_path path, int64_t deadline,
        int64_t since_ms, sk_http_reply *r)
{
	const char *name = (*us)->meta.name;
	char *key = sk_strdup(name);
	uint64_t gen0 = sk_ctl_gen(c), at = 0;
	bool first = since_ms > 0 || path == PATH_WAKE || path == PATH_CREATE;
	sk_userspace *started = NULL;
	sk_connect_decision d;
	sk_error err = { 0 };
	sk_ctl_keeper k;
	sk_plan_options o;
	int detail_tries = 0;

	sk_ctl_plan_options(c, *us, &o);
	sk_workqueue_add_priority(c->q, key);
	for (;;) {
		bool ran = sk_ctl_wait_reconciled(
		        c, key, gen0, deadline, first ? &started : NULL, &at);
		if (sk_ctl_stopping(c)) {
			sk_userspace_free(started);
			sk_ctl_reply_error(r, 503, "ShuttingDown", "the controller is stopping");
			break;
		}
		if (ran) {
			sk_userspace_free(*us);
			*us = NULL;
			if (load(c, key, us, &err) != 0) {
				sk_userspace_free(started);
				sk_ctl_reply_error(r, 404, "NotFound", "the UserSpace is gone");
				break;
			}
			if (started != NULL) {
				if (answer_first(c, us, started, &o, since_ms, &k, &d)) {
					connect_path p = fresh_path(&k, since_ms, path);
					sk_ctl_log(c, SK_LOG_DEBUG, "answered first",
					        "userspace=%s path=%s", key, path_name(p));
					reply_ready(c, r, *us, &k, p);
					explicit_bzero(k.envd_token, sizeof(k.envd_token));
					break;
				}
				started = NULL;
				gen0 = at; /* not this answer: wait for the reconcile's end */
				continue;
			}
			sk_ctl_space_keeper(c, key, &k);
			sk_connect_decide(*us, &k.mem, sk_now_ms(), &o, &d);
			if (k.mem.seen_ms < since_ms ||
			        (d.verdict == SK_CONNECT_READY && !k.detail_seen &&
			                detail_tries++ < 2)) {
				/* a reconcile that started before the report, or before this
				 * connect's activity (so it did not read the keeper's envd
				 * token): not its answer */
				d.verdict = SK_CONNECT_RECONCILE;
				sk_workqueue_add_priority(c->q, key);
			}
			if (d.verdict == SK_CONNECT_READY) {
				reply_ready(c, r, *us, &k, fresh_path(&k, since_ms, path));
				explicit_bzero(k.envd_token, sizeof(k.envd_token));
				break;
			}
			explicit_bzero(k.envd_token, sizeof(k.envd_token));
			if (d.verdict == SK_CONNECT_UNAVAILABLE) {
				reply_unavailable(r, *us, &d, sk_now_ms());
				break;
			}
			gen0 = sk_ctl_gen(c);
			if ((d.verdict == SK_CONNECT_WAKE || d.verdict == SK_CONNECT_REPLACE) &&
			        !sk_ctl_capacity_queued(c, key)) {
				/* found asleep or unreachable meanwhile: ask again (a start
				 * waiting for a slot is queued when one frees) */
				sk_ctl_space_request(c, key, true, d.verdict == SK_CONNECT_REPLACE);
				sk_workqueue_add_priority(c->q, key);
			}
		}
		if (sk_monotonic_ms() >= deadline) {
			reply_timeout(r, *us);
			break;
		}
	}
	free(key);
}

/* A connect that may be forwarded while this replica starts: the user, the
 * holder's route for it, and whether it was forwarded. */
typedef struct start_forward {
	const char *user_id; /* NULL: not known, never forwarded */
	char *path;
	int64_t timeout_ms;
	const sk_ctl_origin *from;
	bool done;
} start_forward;

/* A connect that arrives while the controller is still starting (informer
 * sync, first shard round) waits for it within its own timeout: before,
 * the user's space is not known yet and its shard not taken, and an
 * answer then (404, or 503 for a free shard) would be wrong. Unless
 * another replica holds the user's shard (fw not NULL): then it is
 * forwarded there at once (fw->done), and the holder answers from its
 * cache, however long this replica's first list of many objects takes.
 * false: *r is the answer (the holder's, or 503 with Retry-After). */
static bool
started_within(sk_controller *c, int64_t deadline, start_forward *fw, sk_http_reply *r)
{
	while (!atomic_load(&c->started)) {
		char *addr = NULL;
		if (sk_ctl_stopping(c)) {
			sk_ctl_reply_error(r, 503, "ShuttingDown", "the controller is stopping");
			return false;
		}
		if (fw && fw->user_id && !(fw->from && fw->from->forwarded) &&
		        (addr = sk_ctl_shard_holder_address(c, fw->user_id)) != NULL) {
			sk_ctl_forward(c, addr, fw->path, fw->timeout_ms, fw->from, r);
			free(addr);
			fw->done = true;
			return false;
		}
		if (sk_monotonic_ms() >= deadline) {
			snprintf(r->retry_after, sizeof(r->retry_after), "1");
			sk_ctl_reply_error(
			        r, 503, "Starting", "the controller has not finished starting");
			return false;
		}
		sk_sleep_ms(20);
	}
	return true;
}

/* Another replica holds the user's shard: its answer (true), else false. */
static bool
forwarded(sk_controller *c, const sk_userspace *us, int64_t timeout_ms, bool fresh,
        const sk_ctl_origin *from, sk_http_reply *r)
{
	char *path = sk_asprintf("/v1/userspaces/%s/connect?timeout=%lldms%s", us->meta.name,
	        (long long)timeout_ms, fresh ? "&fresh=1" : "");
	bool done = sk_ctl_forward_user(c, us->spec.user_id, path, timeout_ms, from, r);

	free(path);
	return done;
}

/* The connect will start its space: wake the Idle keeper, or create one. */
static bool
starts_space(const sk_connect_decision *d, const sk_userspace *us)
{
	return d->verdict == SK_CONNECT_WAKE ||
	        (d->verdict == SK_CONNECT_RECONCILE && us->status.sandbox_id == NULL);
}

/* A fresh connect reconciles whatever memory says, unless the answer
 * cannot change by probing (deleting, mode Paused, the paused annotation). */
static bool
fresh_reconciles(const sk_connect_decision *d)
{
	return d->verdict == SK_CONNECT_READY ||
	        (d->verdict == SK_CONNECT_UNAVAILABLE &&
	                strcmp(d->reason, SK_DRIFT_DATAPLANE) == 0);
}

/* started_within for a connect by name: the user of a space not cached yet
 * is read from the store (one read by name) to forward it while starting. */
static bool
start_or_forward(sk_controller *c, const char *name, int64_t timeout_ms, bool fresh,
        const sk_ctl_origin *from, int64_t deadline, bool *forwarded, sk_http_reply *r)
{
	start_forward fw = { NULL, NULL, timeout_ms, from, false };
	sk_userspace *us = NULL;
	sk_error err = { 0 };
	bool started;

	if (!atomic_load(&c->started) && load_in_scope(c, name, from, &us, &err) == 0) {
		fw.user_id = us->spec.user_id;
		fw.path = sk_asprintf("/v1/userspaces/%s/connect?timeout=%lldms%s", name,
		        (long long)timeout_ms, fresh ? "&fresh=1" : "");
	}
	started = started_within(c, deadline, &fw, r);
	*forwarded = fw.done;
	free(fw.path);
	sk_userspace_free(us);
	return started;
}

void
sk_ctl_connect(sk_controller *c, const char *name, int64_t timeout_ms, bool fresh,
        const sk_ctl_origin *from, sk_http_reply *r)
{
	int64_t deadline = sk_monotonic_ms() + timeout_ms;
	int64_t now = sk_now_ms();
	double t0 = sk_metrics_now();
	sk_userspace *us = NULL;
	sk_error err = { 0 };
	sk_connect_decision d;
	sk_plan_options o;
	sk_ctl_keeper k;
	connect_path path = PATH_FAST;
	bool fwd = false;
	int rc;

	if (!start_or_forward(c, name, timeout_ms, fresh, from, deadline, &fwd, r)) {
		count_connect(c, fwd ? PATH_FORWARD : PATH_NONE, r->status, t0);
		return;
	}
	if ((rc = load_in_scope(c, name, from, &us, &err)) != 0) {
		sk_ctl_reply_error(r, rc == SK_ENOTFOUND ? 404 : 503,
		        rc == SK_ENOTFOUND ? "NotFound" : "StoreUnavailable", err.message);
		count_connect(c, PATH_NONE, r->status, t0);
		return;
	}
	if (forwarded(c, us, timeout_ms, fresh, from, r)) {
		count_connect(c, PATH_FORWARD, r->status, t0);
		sk_userspace_free(us);
		return;
	}
	sk_ctl_space_touch(c, name, now);
	sk_ctl_plan_options(c, us, &o);
	sk_ctl_space_keeper(c, name, &k);
	sk_connect_decide(us, &k.mem, now, &o, &d);
	if (!fresh && d.verdict != SK_CONNECT_READY)
		started_answer(c, &us, &o, &k, &d);
	if (fresh && fresh_reconciles(&d))
		d.verdict = SK_CONNECT_REPLACE; /* probe now; replace at once if unreachable */
	else if (d.verdict == SK_CONNECT_READY && !k.detail_seen)
		d.verdict = SK_CONNECT_RECONCILE; /* its envd token is not known yet: read it */
	switch (d.verdict) {
	case SK_CONNECT_READY:
		reply_ready(c, r, us, &k, path);
		queue_housekeeping(c, us, &d, &o, now);
		break;
	case SK_CONNECT_UNAVAILABLE:
		path = PATH_UNAVAILABLE;
		reply_unavailable(r, us, &d, now);
		break;
	default:
		path = fresh ? PATH_RECONCILE : slow_path(d.verdict, us);
		/* A start (a wake or a create) takes its place in the provider's
		 * queue: beyond capacity.maxQueued waiting, 429 at once. */
		if (starts_space(&d, us) && !sk_ctl_capacity_enter(c, us, deadline, r)) {
			path = PATH_CAPACITY;
			break;
		}
		/* A connect always wants the keeper awake: if the reconcile finds it
		 * asleep (the list had not seen the pause yet), it wakes it. */
		sk_ctl_space_request(c, name, true, d.verdict == SK_CONNECT_REPLACE);
		wait_ready(c, &us, path, deadline, fresh ? now : 0, r);
		sk_ctl_capacity_leave(c, name);
		break;
	}
	explicit_bzero(k.envd_token, sizeof(k.envd_token));
	count_connect(c, path, r->status, t0);
	sk_userspace_free(us);
}

bool
sk_ctl_connect_fast(sk_controller *c, const char *arg, bool by_user, const sk_ctl_origin *from,
        sk_http_reply *r)
{
	double t0 = sk_metrics_now();
	int64_t now = sk_now_ms();
	/* the cached object itself, read in place: no copy per connect */
	sk_informer_ref ref = SK_INFORMER_REF_INIT;
	const sk_userspace *us;
	sk_connect_decision d;
	sk_plan_options o;
	sk_ctl_keeper k;
	bool done = false;

	if (!atomic_load(&c->started) ||
	        (by_user ? sk_informer_borrow_user(c->inf, arg, &ref)
	                 : sk_informer_borrow(c->inf, arg, &ref)) != 0)
		return false;
	us = ref.us;
	/* A space outside the caller's token scope: the thread's path answers
	 * (404, as for a missing space, after the same store read; counted there). */
	if ((from == NULL || from->scope == NULL ||
	            sk_selector_matches(from->scope, &us->meta.labels)) &&
	        sk_ctl_may_act(c, us->spec.user_id)) {
		sk_ctl_plan_options(c, us, &o);
		sk_ctl_space_keeper(c, us->meta.name, &k);
		sk_connect_decide(us, &k.mem, now, &o, &d);
		if (d.verdict == SK_CONNECT_READY && k.detail_seen) {
			sk_ctl_space_touch(c, us->meta.name, now);
			reply_ready(c, r, us, &k, PATH_FAST);
			queue_housekeeping(c, us, &d, &o, now);
			/* a ready answer is 200: constant labels, nothing formatted */
			count_labelled(c, "path=\"fast\"", "path=\"fast\",code=\"200\"", t0);
			done = true;
		}
		explicit_bzero(k.envd_token, sizeof(k.envd_token));
	}
	sk_informer_release(&ref);
	return done;
}

void
sk_ctl_connect_user(sk_controller *c, const char *user_id, int64_t timeout_ms, bool fresh,
        const sk_ctl_origin *from, sk_http_reply *r)
{
	double t0 = sk_metrics_now();
	start_forward fw = { user_id, NULL, timeout_ms, from, false };
	char *name;
	bool started;

	fw.path = sk_asprintf("/v1/users/%s/%s?timeout=%lldms", user_id,
	        fresh ? "unhealthy" : "sandbox", (long long)timeout_ms);
	started = started_within(c, sk_monotonic_ms() + timeout_ms, &fw, r);
	free(fw.path);
	if (!started) {
		count_connect(c, fw.done ? PATH_FORWARD : PATH_NONE, r->status, t0);
		return;
	}
	if ((name = name_in_scope(c, user_id, from)) == NULL) {
		sk_ctl_reply_error(r, 404, "NotFound", "no UserSpace has this userID");
		count_connect(c, PATH_NONE, 404, t0);
		return;
	}
	sk_ctl_connect(c, name, timeout_ms, fresh, from, r);
	free(name);
}

void
sk_ctl_activity(sk_controller *c, const char *user_id, const sk_ctl_origin *from, sk_http_reply *r)
{
	char *name = NULL;
	int64_t now = sk_now_ms();
	sk_userspace *us = NULL;
	sk_connect_decision d;
	sk_plan_options o;
	sk_ctl_keeper k;
	char *path;
	bool fwd;

	if (!started_within(c, sk_monotonic_ms() + ACTIVITY_START_WAIT_MS, NULL, r))
		return;
	name = name_in_scope(c, user_id, from);
	if (name == NULL || sk_informer_get(c->inf, name, &us) != 0) {
		sk_ctl_reply_error(r, 404, "NotFound", "no UserSpace has this userID");
		free(name);
		return;
	}
	path = sk_asprintf("/v1/users/%s/activity", user_id);
	fwd = sk_ctl_forward_user(c, user_id, path, 5000, from, r);
	free(path);
	if (fwd) {
		sk_userspace_free(us);
		free(name);
		return;
	}
	/* A heartbeat keeps an awake space awake; it does not wake an Idle one. */
	sk_ctl_space_touch(c, name, now);
	sk_ctl_plan_options(c, us, &o);
	sk_ctl_space_keeper(c, name, &k);
	sk_connect_decide(us, &k.mem, now, &o, &d);
	explicit_bzero(k.envd_token, sizeof(k.envd_token));
	if (d.verdict == SK_CONNECT_READY)
		queue_housekeeping(c, us, &d, &o, now);
	free(r->body);
	r->status = 204;
	r->body = sk_strdup("");
	r->type = "text/plain; charset=utf-8";
	sk_userspace_free(us);
	free(name);
}
