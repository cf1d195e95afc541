/*
 * controller: lifecycle (new/start/stop/free) and the --once pass. The
 * workers and what a reconcile's result does are in worker.c, what it
 * exports in metrics.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "controller_int.h"

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

/* The archive's keys, read like apiKeyFile (never logged). */
static int
open_archive(sk_controller *c, sk_error *err)
{
	const sk_archive_config *a = c->cfg->archive;
	int rc;

	if (a == NULL)
		return 0;
	rc = sk_config_archive_keys(a, &c->archive_access, &c->archive_secret, err);
	if (rc != 0)
		return rc;
	c->archive_s3.endpoint = a->endpoint;
	c->archive_s3.bucket = a->bucket;
	c->archive_s3.region = a->region;
	c->archive_s3.access_key = c->archive_access;
	c->archive_s3.secret_key = c->archive_secret;
	return 0;
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
	c->views->clients = sk_calloc(c->n_prov + 1, sizeof(*c->views->clients));
	for (size_t i = 0; i < c->n_prov; i++) {
		const sk_provider_config *pc = &c->cfg->providers[i];
		sk_limiter_options lo = SK_LIMITER_OPTIONS_INIT;
		lo.qps = pc->qps;
		lo.burst = pc->burst;
		lo.max_in_flight = pc->max_in_flight;
		c->limiters[i] = sk_limiter_new(&lo);
		if ((rc = sk_provider_new(pc, &c->views->clients[i], err)) != 0)
			return rc; /* err names the provider */
		sk_ctl_watch_provider(c, c->views->clients[i]);
		sk_provider_set_abort(c->views->clients[i], sk_ctl_abort_now, c);
	}
	return open_archive(c, err);
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
	atomic_init(&c->started, false);
	sk_ctl_shards_init(c);
	c->n_prov = c->cfg->n_providers;
	c->n_workers = c->cfg->workers > 0 ? c->cfg->workers : 1;
	pthread_mutex_init(&c->mu, NULL);
	sk_cond_init_monotonic(&c->wake);
	c->http = sk_calloc(1, sizeof(*c->http));
	pthread_mutex_init(&c->http->render_mu, NULL);
	c->http->tl_reconcile = sk_timeline_new();
	c->http->tl_connect = sk_timeline_new();
	atomic_init(&c->stopping, false);
	atomic_init(&c->stop_deadline_ms, 0);
	atomic_init(&c->abandoned, 0);
	c->metrics = sk_metrics_new();
	qo.observe = sk_ctl_observe_queue;
	qo.observe_payload = c->metrics;
	c->q = sk_workqueue_new(&qo);
	sk_ctl_views_init(c);
	sk_ctl_spaces_init(c);
	sk_ctl_metrics_declare(c);
	c->capacity = sk_ctl_capacity_new(c);
	c->quotas = sk_ctl_quotas_new(c);
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
	for (size_t i = 0; c->views->clients && i < c->n_prov; i++)
		sk_provider_free(c->views->clients[i]);
	free(c->limiters);
	free(c->views->clients);
	sk_ctl_views_dispose(c);
	sk_ctl_spaces_dispose(c);
	sk_ctl_capacity_free(c->capacity);
	sk_ctl_quotas_free(c->quotas);
	sk_store_close(c->store);
	sk_workqueue_free(c->q);
	sk_metrics_free(c->metrics);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->wake);
	pthread_mutex_destroy(&c->http->render_mu);
	sk_timeline_free(c->http->tl_reconcile);
	sk_timeline_free(c->http->tl_connect);
	free(c->http);
	sk_ctl_shards_dispose(c);
	sk_wipe_free(c->archive_access);
	sk_wipe_free(c->archive_secret);
	free(c->identity);
	free(c);
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

/* The informer's first list, for as long as it makes progress: the list
 * of 10,000 objects or more from a loaded FerretDB takes longer than
 * timeout_ms, and giving up on it (a retry after a back-off) only delayed
 * the start; a list that read nothing new for timeout_ms fails it. A stop
 * ends the wait at once. */
static bool
wait_synced(sk_controller *c, int64_t timeout_ms)
{
	size_t read = 0;

	for (;;) {
		int64_t deadline = sk_monotonic_ms() + timeout_ms;
		size_t now;

		while (!c->stopping && sk_monotonic_ms() < deadline)
			if (sk_informer_wait_synced(c->inf, 200))
				return true;
		now = sk_informer_len(c->inf);
		if (c->stopping || now <= read)
			return false;
		read = now;
	}
}

/* Everything after the database answered: who holds the shards (so that
 * connects for them are forwarded while this replica starts), informer,
 * first observation, workers, observer. */
static int
start_parts(sk_controller *c, sk_error *err)
{
	int rc;

	sk_ctl_shards_prepare(c);
	if (!sk_ctl_shards_own_all(c))
		sk_ctl_shards_look(c);
	if ((rc = sk_informer_start(c->inf, err)) != 0)
		return rc;
	if (!wait_synced(c, SK_CONTROLLER_SYNC_MS))
		return sk_error_set(err, SK_EUNAVAILABLE,
		        "informer: the first list of UserSpaces read nothing new for %ds",
		        SK_CONTROLLER_SYNC_MS / 1000);
	sk_ctl_shards_tick(c); /* the shards to start with */
	sk_ctl_observe_all(c, true);
	sk_ctl_quotas_refresh(c); /* the quotas before the first start */
	pthread_mutex_lock(&c->mu);
	c->running = !c->stopping;
	pthread_mutex_unlock(&c->mu);
	if (c->stopping)
		return 0;
	if ((rc = sk_ctl_workers_start(c, err)) != 0)
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
	        c->n_workers, c->n_prov, sk_informer_len(c->inf), c->http->port,
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
	pthread_cond_broadcast(&c->wake);
	pthread_mutex_unlock(&c->mu);
	sk_ctl_spaces_wake(c); /* connects waiting on a reconcile */
	/* No new work from here: workers stop taking keys at once, and the
	 * informer stops after its current read (joined below). */
	sk_workqueue_shutdown(c->q);
	if (c->inf)
		sk_informer_cancel(c->inf);
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
	sk_ctl_workers_free(c);
	sk_ctl_shards_stop(c); /* in-flight reconciles are done: hand the shards over */
	if (started)
		sk_ctl_log(c, SK_LOG_INFO, "controller stopped", "reconciles=%llu abandoned=%llu",
		        (unsigned long long)sk_ctl_reconciles(c),
		        (unsigned long long)atomic_load(&c->abandoned));
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
	sk_ctl_observe_all(c, true);
	sk_ctl_quotas_refresh(c); /* the quotas before the first start */
	pthread_mutex_lock(&c->mu);
	c->running = true;
	c->once = true;
	pthread_mutex_unlock(&c->mu);
	if ((rc = sk_ctl_workers_start(c, err)) != 0)
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
	n_failed = sk_ctl_spaces_failed(c);
	if (n_failed > 0)
		rc = sk_error_set(
		        err, SK_ERROR, "once: %zu UserSpace(s) failed to reconcile", n_failed);
done:
	sk_controller_stop(c);
	return rc;
}
