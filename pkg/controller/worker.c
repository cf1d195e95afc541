/*
 * controller/worker: the worker threads that pop keys and call
 * sk_reconcile_object on the informer's copy (or the store's, when the
 * cache has not seen our last write), with the fencing hook and one
 * provider client per provider each; and what a result does: requeue
 * after, backoff, forget, the counts the connect API and --once wait on
 * (spaces->done_mu, spaces_int.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../reconcile/observe.h"
#include "../reconcile/options.h"
#include "../reconcile/plan.h"
#include "../reconcile/reconcile.h"
#include "capacity_int.h"
#include "ground_int.h"
#include "http_int.h"
#include "metrics_int.h"
#include "shards_int.h"
#include "spaces_int.h"
#include "views_int.h"
#include "worker_int.h"

/* ---- reconcile results ---- */

uint64_t
sk_ctl_gen(sk_controller *c)
{
	uint64_t g;

	pthread_mutex_lock(&c->spaces->done_mu);
	g = c->spaces->gen;
	pthread_mutex_unlock(&c->spaces->done_mu);
	return g;
}

uint64_t
sk_ctl_reconciles(sk_controller *c)
{
	uint64_t n;

	pthread_mutex_lock(&c->spaces->done_mu);
	n = c->spaces->n_done;
	pthread_mutex_unlock(&c->spaces->done_mu);
	return n;
}

void
sk_ctl_done_free(void *v)
{
	sk_ctl_done *d = v;

	if (d != NULL)
		sk_userspace_free(d->started);
	free(d);
}

/* The space's record of reconciles (under done_mu), made when missing. */
static sk_ctl_done *
done_of(sk_controller *c, const char *name)
{
	sk_ctl_done *d = sk_strmap_get(c->spaces->finished, name);

	if (d == NULL) {
		d = sk_calloc(1, sizeof(*d));
		sk_strmap_put(c->spaces->finished, name, d);
	}
	return d;
}

size_t
sk_ctl_spaces_failed(sk_controller *c)
{
	size_t n;

	pthread_mutex_lock(&c->spaces->done_mu);
	n = c->spaces->n_failed;
	pthread_mutex_unlock(&c->spaces->done_mu);
	return n;
}

static void
mark_reconciled(sk_controller *c, const char *name, bool failed)
{
	sk_ctl_done *d;

	pthread_mutex_lock(&c->spaces->done_mu);
	d = done_of(c, name);
	d->gen = ++c->spaces->gen;
	c->spaces->n_done++;
	sk_userspace_free(d->started); /* the object as written is in the cache now */
	d->started = NULL;
	if (failed != d->failed)
		c->spaces->n_failed = failed ? c->spaces->n_failed + 1 : c->spaces->n_failed - 1;
	d->failed = failed;
	pthread_cond_broadcast(&c->spaces->done);
	pthread_mutex_unlock(&c->spaces->done_mu);
}

/* env->started (reconcile.h): the keeper memory as the run will leave it,
 * and the object about to be written for a connect waiting on the start. */
static void
started_told(void *arg, const sk_userspace *next, const sk_reconcile_report *report)
{
	sk_controller *c = arg;
	sk_ctl_done *d;

	sk_ctl_space_note(c, next->meta.name, report, true);
	pthread_mutex_lock(&c->spaces->done_mu);
	d = done_of(c, next->meta.name);
	sk_userspace_free(d->started);
	d->started = sk_userspace_dup(next);
	d->started_gen = ++c->spaces->gen;
	pthread_cond_broadcast(&c->spaces->done);
	pthread_mutex_unlock(&c->spaces->done_mu);
}

sk_userspace *
sk_ctl_started(sk_controller *c, const char *name)
{
	sk_userspace *us = NULL;
	const sk_ctl_done *d;

	pthread_mutex_lock(&c->spaces->done_mu);
	d = sk_strmap_get(c->spaces->finished, name);
	if (d != NULL && d->started != NULL)
		us = sk_userspace_dup(d->started);
	pthread_mutex_unlock(&c->spaces->done_mu);
	return us;
}

bool
sk_ctl_wait_reconciled(sk_controller *c, const char *name, uint64_t gen0, int64_t deadline,
        sk_userspace **started, uint64_t *at)
{
	bool ok = false;

	if (started != NULL)
		*started = NULL;
	pthread_mutex_lock(&c->spaces->done_mu);
	for (;;) {
		const sk_ctl_done *d = sk_strmap_get(c->spaces->finished, name);
		int64_t left = deadline - sk_monotonic_ms();
		if (d && d->gen > gen0) {
			ok = true;
			break;
		}
		if (d && started != NULL && d->started != NULL && d->started_gen > gen0) {
			*started = sk_userspace_dup(d->started);
			*at = d->started_gen;
			ok = true;
			break;
		}
		if (sk_ctl_stopping(c) || left <= 0)
			break;
		sk_cond_wait_ms(&c->spaces->done, &c->spaces->done_mu, left < 100 ? left : 100);
	}
	pthread_mutex_unlock(&c->spaces->done_mu);
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
	sk_timeline_observe(c->http->tl_reconcile, sk_now_ms(), (double)dt / 1000.0);
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
	if (rc == SK_EUNAVAILABLE && err->domain == SK_EDOMAIN_DATABASE)
		sk_ctl_store_error(c, "reconcile"); /* a status write, event or read failed */
	if (sk_error_is_transient(rc)) {
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
	out->archive = c->archive_s3.bucket != NULL;
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

static void
note_written(sk_controller *c, const char *name, const sk_userspace *updated)
{
	/* Removed (finalizer gone): never trust a cached copy of it again. */
	sk_ctl_space_set_written_rv(c, name, updated ? updated->meta.resource_version : INT64_MAX);
}

/* The object of a key: the informer's copy when it has seen our last
 * writes (every status write is compare-and-swap, so a copy stale from
 * someone else's write ends in a conflict, never an overwrite), else the
 * store's (a full collection scan on FerretDB's SQLite backend). */
static int
key_object(sk_controller *c, const char *key, sk_userspace **us, sk_error *err)
{
	int rc = sk_informer_get(c->inf, key, us);

	if (rc == 0 && (*us)->meta.resource_version >= sk_ctl_space_written_rv(c, key))
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
	sk_ctl_fence fence = { 0 };
	sk_ctl_gate gate = { w->c, NULL, 0, 0 };
	sk_reconcile_report report = { 0 };
	sk_sandbox_list listed = { 0 };
	sk_list_view view = { 0 };
	sk_error err = { 0 };
	sk_userspace *us = NULL, *updated = NULL;
	int prov = -1, rc;
	int64_t requeue = 0, t0;
	char l[160];

	rc = key_object(c, key, &us, &err);
	if (rc == 0 && !sk_ctl_fence_take(c, us->spec.user_id, &fence)) {
		/* Another replica's shard (or ours no longer): theirs to reconcile. */
		sk_workqueue_forget(c->q, key);
		goto done;
	}
	if (rc == SK_ENOTFOUND) {
		/* Gone from the store: nothing to reconcile (orphans are the observer's). */
		sk_workqueue_forget(c->q, key);
		sk_ctl_space_forget(c, key);
		sk_ctl_capacity_forget(c, key);
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
			handle_result(c, key, sk_error_is_transient(rc) ? rc : SK_EUNAVAILABLE, 0,
			        &err, 0);
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
	env.may_act = sk_ctl_fence_holds; /* the shard, still under the generation taken */
	env.may_act_arg = &fence;
	env.may_start = sk_ctl_capacity_may_start;
	env.may_start_arg = &gate; /* what it asks of others waits for the round's end */
	env.started = started_told;
	env.started_arg = c;
	if (c->archive_s3.bucket != NULL) {
		env.archive_s3 = &c->archive_s3;
		env.archive_prefix = c->cfg->archive->prefix;
		env.archive_keep = c->cfg->archive->keep_generations;
	}
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
	sk_ctl_capacity_carry_out(&gate); /* the evictions its gate decided, and its retry */
	sk_limiter_release(c->limiters[prov]);
	snprintf(l, sizeof(l), "look=\"%s\"", sk_look_name(report.look));
	sk_metrics_add(c->metrics, SK_CTL_METRIC_LOOKS, l, 1);
	sk_ctl_space_note(c, key, &report, rc == 0);
	sk_ctl_capacity_note(c, key, updated ? updated : us, &report);
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
	sk_ctl_space_known_dispose(&env);
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

void
sk_ctl_workers_free(sk_controller *c)
{
	for (int i = 0; c->workers && i < c->n_workers; i++) {
		for (size_t p = 0; c->workers[i].clients && p < c->n_prov; p++)
			sk_provider_free(c->workers[i].clients[p]);
		free(c->workers[i].clients);
	}
	free(c->workers);
	c->workers = NULL;
}

int
sk_ctl_workers_start(sk_controller *c, sk_error *err)
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
			sk_ctl_workers_free(c);
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
