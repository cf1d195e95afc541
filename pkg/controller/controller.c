/*
 * controller: lifecycle (new/start/stop/free), the worker threads that pop
 * keys and call sk_reconcile, result handling (requeue after, backoff,
 * forget), and the --once pass. What it exports is in metrics.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "controller_int.h"

void
sk_ctl_log(sk_controller *c, sk_log_level lvl, const char *msg, const char *fmt, ...)
{
	char kv[2048];
	va_list ap;

	if (!c->opts.log)
		return;
	va_start(ap, fmt);
	vsnprintf(kv, sizeof(kv), fmt, ap);
	va_end(ap);
	c->opts.log(lvl, msg, kv, c->opts.log_payload);
}

bool
sk_ctl_abort_now(void *controller)
{
	return sk_ctl_stopping(controller);
}

bool
sk_ctl_abort_after_grace(void *controller)
{
	sk_controller *c = controller;

	return sk_ctl_stopping(c) && sk_monotonic_ms() >= atomic_load(&c->stop_deadline_ms);
}

int
sk_ctl_provider_index(sk_controller *c, const char *name)
{
	for (size_t i = 0; i < c->n_prov; i++)
		if (name && strcmp(c->cfg->providers[i].name, name) == 0)
			return (int)i;
	return -1;
}

/* ---- new / free ---- */

static void
on_informer_change(const char *name, void *payload)
{
	sk_controller *c = payload;
	sk_userspace *us = NULL;
	bool ours = true;

	/* Only the keys of the shards this replica holds (a deleted object's
	 * key goes on: the worker forgets it). */
	if (sk_informer_get(c->inf, name, &us) == 0)
		ours = sk_ctl_may_act(c, us->spec.user_id);
	sk_userspace_free(us);
	if (ours)
		sk_workqueue_add(c->q, name);
}

/* The store URI with a small connection pool unless the URI sets one:
 * FerretDB's SQLite backend has one writer, and 64 workers each holding a
 * connection make every write slower (measured 3x at N=200); workers wait
 * for a pooled client instead. NULL keeps the store's default URI. */
static char *
store_uri(const char *uri)
{
	const char *q;

	if (!uri || strcasestr(uri, "maxpoolsize"))
		return sk_strdup(uri);
	q = strchr(uri, '?');
	if (q)
		return sk_asprintf(
		        "%s%smaxPoolSize=%d", uri, q[1] ? "&" : "", SK_CONTROLLER_STORE_POOL);
	if (strchr(strstr(uri, "://") ? strstr(uri, "://") + 3 : uri, '/'))
		return sk_asprintf("%s?maxPoolSize=%d", uri, SK_CONTROLLER_STORE_POOL);
	return sk_asprintf("%s/?maxPoolSize=%d", uri, SK_CONTROLLER_STORE_POOL);
}

static int
open_parts(sk_controller *c, sk_error *err)
{
	sk_store_options so = SK_STORE_OPTIONS_INIT;
	sk_informer_options io = SK_INFORMER_OPTIONS_INIT;
	char *uri = store_uri(c->cfg->mongodb_uri);
	int rc;

	so.uri = uri;
	so.database = c->cfg->database;
	so.lazy = true; /* start waits for the database, run_once checks it */
	rc = sk_store_open(&c->store, &so, err);
	free(uri);
	if (rc != 0)
		return rc;
	io.store = c->store;
	io.poll_ms = c->opts.poll_ms;
	io.relist_ms = c->opts.relist_ms;
	io.on_change = on_informer_change;
	io.skip_status_only = true;
	io.payload = c;
	io.log = c->opts.log;
	io.log_payload = c->opts.log_payload;
	if ((rc = sk_informer_new(&c->inf, &io, err)) != 0)
		return rc;
	c->limiters = sk_calloc(c->n_prov + 1, sizeof(*c->limiters));
	c->obs_clients = sk_calloc(c->n_prov + 1, sizeof(*c->obs_clients));
	for (size_t i = 0; i < c->n_prov; i++) {
		const sk_provider_config *pc = &c->cfg->providers[i];
		sk_limiter_options lo = SK_LIMITER_OPTIONS_INIT;
		lo.qps = pc->qps;
		lo.burst = pc->burst;
		lo.max_in_flight = pc->max_in_flight;
		c->limiters[i] = sk_limiter_new(&lo);
		if ((rc = sk_provider_new(pc, &c->obs_clients[i], err)) != 0) {
			char named[128];
			snprintf(named, sizeof(named), "provider %s:", pc->name);
			if (strncmp(err->message, named, strlen(named)) != 0)
				sk_error_prefix(err, "provider %s", pc->name);
			return rc;
		}
		sk_ctl_watch_provider(c, c->obs_clients[i]);
		sk_provider_set_abort(c->obs_clients[i], sk_ctl_abort_now, c);
	}
	return 0;
}

int
sk_controller_new(sk_controller **out, const sk_controller_options *opts, sk_error *err)
{
	sk_controller_options def = SK_CONTROLLER_OPTIONS_INIT;
	sk_workqueue_options qo = SK_WORKQUEUE_OPTIONS_INIT;
	sk_controller *c;
	int rc;

	*out = NULL;
	if (!opts || !opts->config)
		return sk_error_set(err, SK_EINVALID, "controller: a config is required");
	if (opts->config->n_providers == 0)
		return sk_error_set(err, SK_EINVALID, "controller: no provider configured");
	c = sk_calloc(1, sizeof(*c));
	c->opts = *opts;
	if (c->opts.poll_ms <= 0)
		c->opts.poll_ms = def.poll_ms;
	if (c->opts.relist_ms <= 0)
		c->opts.relist_ms = def.relist_ms;
	c->cfg = opts->config;
	c->identity = c->cfg->identity && c->cfg->identity[0]
	        ? sk_strdup(c->cfg->identity)
	        : sk_asprintf("spacekeeper-%d", (int)getpid());
	atomic_init(&c->observe_now, false);
	atomic_init(&c->started, false);
	sk_ctl_shards_init(c);
	c->n_prov = c->cfg->n_providers;
	c->n_workers = c->cfg->workers > 0 ? c->cfg->workers : 1;
	pthread_mutex_init(&c->mu, NULL);
	pthread_mutex_init(&c->obs_mu, NULL);
	pthread_mutex_init(&c->render_mu, NULL);
	pthread_mutex_init(&c->drift_mu, NULL);
	c->drift = sk_strmap_new(free);
	c->tl_reconcile = sk_timeline_new();
	c->tl_connect = sk_timeline_new();
	sk_cond_init_monotonic(&c->cond);
	atomic_init(&c->stopping, false);
	atomic_init(&c->stop_deadline_ms, 0);
	atomic_init(&c->abandoned, 0);
	c->metrics = sk_metrics_new();
	qo.observe = sk_ctl_observe_queue;
	qo.observe_payload = c->metrics;
	c->q = sk_workqueue_new(&qo);
	c->done_gen = sk_strmap_new(free);
	c->failed = sk_strmap_new(NULL);
	c->written_rv = sk_strmap_new(free);
	sk_ctl_views_init(c);
	sk_ctl_spaces_init(c);
	sk_ctl_metrics_declare(c);
	rc = open_parts(c, err);
	if (rc != 0) {
		sk_controller_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

void
sk_controller_free(sk_controller *c)
{
	if (!c)
		return;
	sk_controller_stop(c);
	sk_informer_free(c->inf);
	for (size_t i = 0; c->limiters && i < c->n_prov; i++)
		sk_limiter_free(c->limiters[i]);
	for (size_t i = 0; c->obs_clients && i < c->n_prov; i++)
		sk_provider_free(c->obs_clients[i]);
	free(c->limiters);
	free(c->obs_clients);
	sk_ctl_views_dispose(c);
	sk_ctl_spaces_dispose(c);
	sk_store_close(c->store);
	sk_workqueue_free(c->q);
	sk_metrics_free(c->metrics);
	sk_strmap_free(c->done_gen);
	sk_strmap_free(c->failed);
	sk_strmap_free(c->written_rv);
	pthread_mutex_destroy(&c->mu);
	pthread_mutex_destroy(&c->obs_mu);
	pthread_mutex_destroy(&c->render_mu);
	pthread_mutex_destroy(&c->drift_mu);
	sk_strmap_free(c->drift);
	sk_timeline_free(c->tl_reconcile);
	sk_timeline_free(c->tl_connect);
	sk_ctl_shards_dispose(c);
	free(c->identity);
	pthread_cond_destroy(&c->cond);
	free(c);
}

/* ---- reconcile results ---- */

uint64_t
sk_ctl_gen(sk_controller *c)
{
	uint64_t g;

	pthread_mutex_lock(&c->mu);
	g = c->gen;
	pthread_mutex_unlock(&c->mu);
	return g;
}

static void
mark_reconciled(sk_controller *c, const char *name, bool failed)
{
	uint64_t *g = sk_malloc(sizeof(*g));

	pthread_mutex_lock(&c->mu);
	*g = ++c->gen;
	sk_strmap_put(c->done_gen, name, g);
	if (failed)
		sk_strmap_put(c->failed, name, NULL);
	else
		sk_strmap_remove(c->failed, name);
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->mu);
}

bool
sk_ctl_wait_reconciled(sk_controller *c, const char *name, uint64_t gen0, int64_t deadline)
{
	bool ok = false;

	pthread_mutex_lock(&c->mu);
	for (;;) {
		uint64_t *g = sk_strmap_get(c->done_gen, name);
		int64_t left = deadline - sk_monotonic_ms();
		if (g && *g > gen0) {
			ok = true;
			break;
		}
		if (sk_ctl_stopping(c) || left <= 0)
			break;
		sk_cond_wait_ms(&c->cond, &c->mu, left < 100 ? left : 100);
	}
	pthread_mutex_unlock(&c->mu);
	return ok;
}

static void
count_result(sk_controller *c, const char *result)
{
	char l[128];

	snprintf(l, sizeof(l), "controller=\"%s\",result=\"%s\"", SK_CONTROLLER_NAME, result);
	sk_metrics_add(c->metrics, "controller_runtime_reconcile_total", l, 1);
}

/* --once: whether the stored object is in a phase one pass can end on (the
 * planner's call). */
static bool
once_settled(sk_controller *c, const char *key)
{
	sk_userspace *us = NULL;
	sk_error err = { 0 };
	int rc = sk_store_get(c->store, key, &us, &err);
	bool done = rc == SK_ENOTFOUND || (rc == 0 && sk_plan_settled(us));

	sk_userspace_free(us);
	return done;
}

/* controller-runtime's dispatch: error -> rate-limited requeue (or the
 * server's Retry-After when longer); terminal -> forget; requeue_after ->
 * forget + add_after; success -> forget. */
static void
handle_result(
        sk_controller *c, const char *key, int rc, int64_t requeue, const sk_error *err, int64_t dt)
{
	const char *l = "controller=\"" SK_CONTROLLER_NAME "\"";

	sk_metrics_observe(
	        c->metrics, "controller_runtime_reconcile_time_seconds", l, (double)dt / 1000.0);
	sk_timeline_observe(c->tl_reconcile, sk_now_ms(), (double)dt / 1000.0);
	if (rc == 0) {
		sk_workqueue_forget(c->q, key);
		/* --once: a key the planner only revisits at resync, in a steady
		 * phase, is done. */
		if (c->once && requeue >= c->cfg->resync_ms && once_settled(c, key))
			requeue = 0;
		if (requeue > 0)
			sk_workqueue_add_after(c->q, key, requeue);
		count_result(c, requeue > 0 ? "requeue_after" : "success");
		sk_ctl_log(c, SK_LOG_DEBUG, "reconciled",
		        "userspace=%s duration_ms=%lld requeue_ms=%lld", key, (long long)dt,
		        (long long)requeue);
		mark_reconciled(c, key, false);
		return;
	}
	count_result(c, "error");
	sk_metrics_add(c->metrics, "controller_runtime_reconcile_errors_total", l, 1);
	if (rc == SK_EUNAVAILABLE && strstr(err->message, "MongoDB") != NULL)
		sk_ctl_store_error(c, "reconcile"); /* a status write, event or read failed */
	if (sk_reconcile_is_transient(rc)) {
		int64_t d = sk_workqueue_add_rate_limited(c->q, key);
		if (err->retry_after_ms > d)
			sk_workqueue_add_after(c->q, key, err->retry_after_ms);
		sk_ctl_log(c, rc == SK_ECONFLICT ? SK_LOG_DEBUG : SK_LOG_WARN, "reconcile failed",
		        "userspace=%s error=\"%s\" code=%s retry_ms=%lld duration_ms=%lld", key,
		        err->message, sk_strerror(rc),
		        (long long)(err->retry_after_ms > d ? err->retry_after_ms : d),
		        (long long)dt);
	} else {
		sk_metrics_add(
		        c->metrics, "controller_runtime_terminal_reconcile_errors_total", l, 1);
		sk_workqueue_forget(c->q, key);
		sk_ctl_log(c, SK_LOG_ERROR, "reconcile failed",
		        "userspace=%s error=\"%s\" code=%s terminal=true duration_ms=%lld", key,
		        err->message, sk_strerror(rc), (long long)dt);
	}
	mark_reconciled(c, key, true);
}

/* ---- workers ---- */

void
sk_ctl_plan_options(sk_controller *c, const sk_userspace *us, sk_plan_options *out)
{
	int i = sk_ctl_provider_index(c, us->spec.provider);

	sk_plan_options_from_config(out, i >= 0 ? &c->cfg->providers[i] : NULL, c->cfg->resync_ms);
}

char *
sk_ctl_envd_url(sk_controller *c, const sk_userspace *us)
{
	int i = sk_ctl_provider_index(c, sk_bound_provider(us));

	if (i < 0 || us->status.sandbox_id == NULL)
		return sk_strdup("");
	return sk_sandbox_envd_url(&c->cfg->providers[i], us->status.sandbox_id, NULL);
}

static sk_provider *
provider_for(const char *name, void *arg)
{
	sk_worker *w = arg;
	int i = sk_ctl_provider_index(w->c, name);

	return i < 0 ? NULL : w->clients[i];
}

/* The resourceVersion our last writes to name left (0: none known). */
static int64_t
written_rv(sk_controller *c, const char *name)
{
	int64_t *v, rv;

	pthread_mutex_lock(&c->mu);
	v = sk_strmap_get(c->written_rv, name);
	rv = v ? *v : 0;
	pthread_mutex_unlock(&c->mu);
	return rv;
}

static void
note_written(sk_controller *c, const char *name, const sk_userspace *updated)
{
	int64_t *v;

	/* Removed (finalizer gone): never trust a cached copy of it again. */
	v = sk_malloc(sizeof(*v));
	*v = updated ? updated->meta.resource_version : INT64_MAX;
	pthread_mutex_lock(&c->mu);
	sk_strmap_put(c->written_rv, name, v);
	pthread_mutex_unlock(&c->mu);
}

/* The object of a key: the informer's copy when it has seen our last
 * writes (every status write is compare-and-swap, so a copy stale from
 * someone else's write ends in a conflict, never an overwrite), else the
 * store's (a full collection scan on FerretDB's SQLite backend). */
static int
key_object(sk_controller *c, const char *key, sk_userspace **us, sk_error *err)
{
	int rc = sk_informer_get(c->inf, key, us);

	if (rc == 0 && (*us)->meta.resource_version >= written_rv(c, key))
		return 0;
	sk_userspace_free(*us);
	*us = NULL;
	return sk_store_get(c->store, key, us, err);
}

/* A reconcile the stop cut short (a provider call aborted after the grace,
 * or any failure while stopping): logged, not retried. */
static void
abandon(sk_controller *c, const char *key, const sk_error *err, int64_t dt)
{
	atomic_fetch_add(&c->abandoned, 1);
	sk_ctl_log(c, SK_LOG_WARN, "reconcile abandoned",
	        "userspace=%s error=\"%s\" code=%s duration_ms=%lld", key, err->message,
	        sk_strerror(err->code), (long long)dt);
	mark_reconciled(c, key, true);
}

static void
worker_process(sk_worker *w, const char *key)
{
	sk_controller *c = w->c;
	sk_reconcile_env env = { 0 };
	sk_reconcile_report report = { 0 };
	sk_sandbox_list listed = { 0 };
	sk_list_view view = { 0 };
	sk_error err = { 0 };
	sk_userspace *us = NULL, *updated = NULL;
	int prov = -1, rc;
	int64_t requeue = 0, t0;
	char l[160];

	rc = key_object(c, key, &us, &err);
	if (rc == 0 && !sk_ctl_may_act(c, us->spec.user_id)) {
		/* Another replica's shard (or ours no longer): theirs to reconcile. */
		sk_workqueue_forget(c->q, key);
		goto done;
	}
	if (rc == SK_ENOTFOUND) {
		/* Gone from the store: nothing to reconcile (orphans are the observer's). */
		sk_workqueue_forget(c->q, key);
		sk_ctl_space_forget(c, key);
		sk_ctl_note_drift(c, key, NULL);
		mark_reconciled(c, key, false);
		goto done;
	}
	if (rc == 0 && (prov = sk_ctl_provider_index(c, sk_bound_provider(us))) < 0)
		prov = sk_ctl_provider_index(c, us->spec.provider);
	if (rc == 0 && prov < 0) {
		sk_error_set(&err, SK_ETERMINAL, "spec.provider names no configured provider");
		handle_result(c, key, SK_ETERMINAL, 0, &err, 0);
		goto done;
	}
	if (rc == 0)
		rc = sk_limiter_acquire(c->limiters[prov], -1, &c->stopping);
	if (rc != 0) {
		if (!sk_ctl_stopping(c))
			handle_result(c, key, sk_reconcile_is_transient(rc) ? rc : SK_EUNAVAILABLE,
			        0, &err, 0);
		goto done;
	}
	sk_ctl_list_view(c, prov, us->spec.user_id, &listed, &view);
	env.store = c->store;
	env.provider = w->clients[prov];
	env.provider_for = provider_for;
	env.provider_arg = w;
	sk_ctl_plan_options(c, us, &env.opts);
	env.log = c->opts.log;
	env.log_payload = c->opts.log_payload;
	env.report = &report;
	env.migration_observer = sk_ctl_observe_migration;
	env.migration_arg = c;
	env.may_act = sk_ctl_may_act_cb;
	env.may_act_arg = c;
	sk_ctl_space_take(c, key, &env);
	t0 = sk_monotonic_ms();
	if (sk_ctl_stopping(c)) { /* taken, not started: no new work after a stop */
		sk_limiter_release(c->limiters[prov]);
		atomic_fetch_add(&c->abandoned, 1);
		goto done;
	}
	snprintf(l, sizeof(l), "provider=\"%s\"", c->cfg->providers[prov].name);
	sk_metrics_add(c->metrics, "spacekeeper_provider_reconciles_total", l, 1);
	rc = sk_reconcile_object(&env, us, &view, &requeue, &updated, &err);
	sk_limiter_release(c->limiters[prov]);
	sk_ctl_space_note(c, key, &report, rc == 0);
	sk_ctl_note_drift(c, key, updated ? updated : us);
	note_written(c, key, updated);
	if (updated != NULL && updated->meta.resource_version != us->meta.resource_version)
		sk_metrics_add(c->metrics, "spacekeeper_status_writes_total", NULL, 1);
	if (updated != NULL)
		sk_informer_observe(c->inf, updated); /* as written: no need to poll it back */
	if (rc != 0 && sk_ctl_stopping(c))
		abandon(c, key, &err, sk_monotonic_ms() - t0);
	else
		handle_result(c, key, rc, requeue, &err, sk_monotonic_ms() - t0);
done:
	sk_sandbox_list_dispose(&listed);
	sk_userspace_free(us);
	sk_userspace_free(updated);
	sk_reconcile_report_dispose(&report);
}

static void *
worker_main(void *arg)
{
	sk_worker *w = arg;
	sk_controller *c = w->c;
	const char *l = "controller=\"" SK_CONTROLLER_NAME "\"";
	char *key;

	while (sk_workqueue_get(c->q, -1, &key) == 0) {
		sk_metrics_add(c->metrics, "controller_runtime_active_workers", l, 1);
		worker_process(w, key);
		sk_metrics_add(c->metrics, "controller_runtime_active_workers", l, -1);
		sk_workqueue_done(c->q, key);
		free(key);
	}
	return NULL;
}

static void
workers_free(sk_controller *c)
{
	for (int i = 0; c->workers && i < c->n_workers; i++) {
		for (size_t p = 0; c->workers[i].clients && p < c->n_prov; p++)
			sk_provider_free(c->workers[i].clients[p]);
		free(c->workers[i].clients);
	}
	free(c->workers);
	c->workers = NULL;
}

static int
workers_start(sk_controller *c, sk_error *err)
{
	int rc = 0;

	c->workers = sk_calloc((size_t)c->n_workers, sizeof(*c->workers));
	for (int i = 0; i < c->n_workers; i++) {
		sk_worker *w = &c->workers[i];
		w->c = c;
		w->index = i;
		w->clients = sk_calloc(c->n_prov, sizeof(*w->clients));
		for (size_t p = 0; p < c->n_prov && rc == 0; p++)
			if ((rc = sk_provider_new(&c->cfg->providers[p], &w->clients[p], err)) ==
			        0) {
				sk_ctl_watch_provider(c, w->clients[p]);
				sk_provider_set_abort(w->clients[p], sk_ctl_abort_after_grace, c);
			}
		if (rc != 0) {
			workers_free(c);
			return rc;
		}
	}
	for (int i = 0; i < c->n_workers; i++) {
		if (pthread_create(&c->workers[i].thread, NULL, worker_main, &c->workers[i]) != 0) {
			/* The threads already running are joined by stop. */
			c->n_workers = i;
			return sk_error_set(err, SK_ERROR, "controller: cannot start worker %d", i);
		}
	}
	return 0;
}

/* ---- start / stop ---- */

/* Sleeps up to ms in short steps; false once the controller is stopping. */
static bool
nap_unless_stopping(sk_controller *c, int64_t ms)
{
	int64_t deadline = sk_monotonic_ms() + ms;

	while (!c->stopping && sk_monotonic_ms() < deadline) {
		struct timespec ts = { 0, 50 * 1000000L };
		nanosleep(&ts, NULL);
	}
	return !c->stopping;
}

/* The informer's first list, up to timeout_ms; a stop ends the wait at once. */
static bool
wait_synced(sk_controller *c, int64_t timeout_ms)
{
	int64_t deadline = sk_monotonic_ms() + timeout_ms;

	while (!c->stopping && sk_monotonic_ms() < deadline)
		if (sk_informer_wait_synced(c->inf, 200))
			return true;
	return false;
}

/* Everything after the database answered: informer, first observation,
 * workers, observer. */
static int
start_parts(sk_controller *c, sk_error *err)
{
	int rc;

	if ((rc = sk_informer_start(c->inf, err)) != 0)
		return rc;
	if (!wait_synced(c, SK_CONTROLLER_SYNC_MS))
		return sk_error_set(err, SK_EUNAVAILABLE,
		        "informer: no list of UserSpaces within %ds", SK_CONTROLLER_SYNC_MS / 1000);
	sk_ctl_shards_prepare(c);
	sk_ctl_shards_tick(c); /* the shards to start with */
	sk_ctl_observe_all(c);
	pthread_mutex_lock(&c->mu);
	c->running = !c->stopping;
	pthread_mutex_unlock(&c->mu);
	if (c->stopping)
		return 0;
	if ((rc = workers_start(c, err)) != 0)
		return rc;
	if ((rc = sk_ctl_shards_start(c, err)) != 0)
		return rc;
	return sk_ctl_observer_start(c, err);
}

static void
log_started(sk_controller *c)
{
	sk_ctl_log(c, SK_LOG_INFO, "controller started",
	        "workers=%d providers=%zu userspaces=%zu http_port=%d connect_port=%d id=%s "
	        "shards_held=%zu/%d",
	        c->n_workers, c->n_prov, sk_informer_len(c->inf), c->http_port,
	        sk_ctl_guard_port(c), c->identity, sk_ctl_shards_held(c), c->cfg->shards);
}

static int
http_start(sk_controller *c, sk_error *err)
{
	if (c->opts.serve_http)
		return sk_ctl_http_start(c, err);
	return 0;
}

static void
log_unavailable(sk_controller *c, const sk_error *err, int64_t retry_ms)
{
	char retry[32];

	sk_duration_format(retry_ms, retry, sizeof(retry));
	sk_ctl_log(c, SK_LOG_ERROR, "database unavailable", "error=\"%s\" retry_in=%s",
	        err->message, retry);
}

/* Start-up, off the caller's thread so that a stop (SIGTERM) is never held
 * up by it (the first list of a slow provider takes a while): start_parts,
 * and while the database does not answer, retries with a doubling backoff
 * (SK_CONTROLLER_RETRY_MIN_MS to _MAX_MS) until it does or stop. */
static void *
boot_main(void *arg)
{
	sk_controller *c = arg;
	int64_t backoff = SK_CONTROLLER_RETRY_MIN_MS;
	int64_t nap = c->boot_connected ? 0 : backoff;
	bool connected = c->boot_connected;
	sk_error err = { 0 };

	while (nap_unless_stopping(c, nap)) {
		int rc = connected ? 0 : sk_store_connect(c->store, true, &err);
		if (rc == 0)
			rc = start_parts(c, &err);
		if (rc == 0) {
			if (!c->stopping)
				log_started(c);
			atomic_store(&c->started, true); /* ready once it said so */
			break;
		}
		connected = false;
		if (nap > 0)
			backoff = backoff * 2 > SK_CONTROLLER_RETRY_MAX_MS
			        ? SK_CONTROLLER_RETRY_MAX_MS
			        : backoff * 2;
		nap = backoff;
		if (c->stopping)
			break;
		if (rc == SK_EUNAVAILABLE) {
			log_unavailable(c, &err, nap);
			continue;
		}
		sk_ctl_log(c, SK_LOG_ERROR, "start failed", "error=\"%s\"", err.message);
		break;
	}
	return NULL;
}

int
sk_controller_start(sk_controller *c, sk_error *err)
{
	int rc = sk_store_connect(c->store, true, err);

	if (rc != 0 && rc != SK_EUNAVAILABLE)
		return rc;
	c->boot_connected = rc == 0;
	/* Health at once; the rest on the start-up thread. */
	if ((rc = http_start(c, err)) != 0)
		return rc;
	if (!c->boot_connected)
		log_unavailable(c, err, SK_CONTROLLER_RETRY_MIN_MS);
	if (pthread_create(&c->boot_thread, NULL, boot_main, c) != 0)
		return sk_error_set(err, SK_ERROR, "controller: cannot start the start-up thread");
	c->boot_running = true;
	sk_error_clear(err);
	return 0;
}

/* What the stop leaves undone: the keys queued and not started (the next
 * start lists and reconciles everything again) and the reconciles in flight. */
static void
log_stopping(sk_controller *c)
{
	sk_workqueue_stats st;

	sk_workqueue_get_stats(c->q, &st);
	sk_ctl_log(c, SK_LOG_INFO, "stopping",
	        "queued_abandoned=%zu delayed_abandoned=%zu in_flight=%zu grace_ms=%d", st.depth,
	        st.delayed, st.processing, SK_CONTROLLER_STOP_GRACE_MS);
}

void
sk_controller_stop(sk_controller *c)
{
	bool was, first, started;

	pthread_mutex_lock(&c->mu);
	was = c->running;
	c->running = false;
	first = !atomic_load(&c->stopping);
	if (first)
		atomic_store(&c->stop_deadline_ms, sk_monotonic_ms() + SK_CONTROLLER_STOP_GRACE_MS);
	atomic_store(&c->stopping, true);
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->mu);
	/* No new work from here: workers stop taking keys at once. */
	sk_workqueue_shutdown(c->q);
	started = first && (was || c->boot_running);
	if (started)
		log_stopping(c);
	sk_ctl_http_stop(c);
	if (c->boot_running) {
		pthread_join(c->boot_thread, NULL);
		c->boot_running = false;
		c->running = false;
	}
	sk_ctl_observer_stop(c);
	if (c->inf) /* NULL when new failed before making it (a bad URI) */
		sk_informer_stop(c->inf);
	for (int i = 0; c->workers && i < c->n_workers; i++)
		pthread_join(c->workers[i].thread, NULL);
	workers_free(c);
	sk_ctl_shards_stop(c); /* in-flight reconciles are done: hand the shards over */
	if (started)
		sk_ctl_log(c, SK_LOG_INFO, "controller stopped", "reconciles=%llu abandoned=%llu",
		        (unsigned long long)c->gen, (unsigned long long)atomic_load(&c->abandoned));
}

/* ---- --once ---- */

static bool
queue_settled(sk_controller *c, int64_t settle_ms)
{
	sk_workqueue_stats st;
	int64_t due;

	sk_workqueue_get_stats(c->q, &st);
	if (st.depth > 0 || st.processing > 0)
		return false;
	due = sk_workqueue_next_due_ms(c->q);
	return due < 0 || due > settle_ms;
}

int
sk_controller_run_once(sk_controller *c, int64_t settle_ms, int64_t timeout_ms, sk_error *err)
{
	int64_t deadline = sk_monotonic_ms() + timeout_ms;
	size_t n_failed;
	int rc;

	if ((rc = sk_store_connect(c->store, true, err)) != 0 ||
	        (rc = sk_informer_relist(c->inf, err)) != 0)
		return rc;
	sk_ctl_shards_all(c); /* one pass over everything, no leases */
	sk_ctl_observe_all(c);
	pthread_mutex_lock(&c->mu);
	c->running = true;
	c->once = true;
	pthread_mutex_unlock(&c->mu);
	if ((rc = workers_start(c, err)) != 0)
		goto done;
	/* Two consecutive settled checks, so a key between done and re-add is seen. */
	for (int settled = 0; settled < 2;) {
		if (sk_monotonic_ms() >= deadline) {
			rc = sk_error_set(err, SK_ETIMEOUT, "once: not settled within %lldms",
			        (long long)timeout_ms);
			goto done;
		}
		sk_sleep_ms(100);
		settled = queue_settled(c, settle_ms) ? settled + 1 : 0;
	}
	pthread_mutex_lock(&c->mu);
	n_failed = sk_strmap_len(c->failed);
	pthread_mutex_unlock(&c->mu);
	if (n_failed > 0)
		rc = sk_error_set(
		        err, SK_ERROR, "once: %zu UserSpace(s) failed to reconcile", n_failed);
done:
	sk_controller_stop(c);
	return rc;
}

bool
sk_controller_ready(sk_controller *c)
{
	return sk_informer_has_synced(c->inf) && atomic_load(&c->started);
}

int
sk_controller_http_port(sk_controller *c)
{
	return c->http_port;
}

int
sk_controller_connect_port(sk_controller *c)
{
	return sk_ctl_guard_port(c);
}
