/*
 * controller_int: private to pkg/controller. The controller's state is split
 * by concern; each part has its own header, and its own lock for what
 * changes after start:
 *
 *   spaces_int.h  spaces and activity: one record per space (keeper,
 *                 activity, requests, drift, our last write; lock
 *                 spaces.mu) and each space's last reconcile, which
 *                 connects wait on (lock spaces.done_mu); sk_ctl_spaces.
 *   views_int.h   views of the provider: each provider's last list grouped
 *                 by user (own or shared between replicas), the observer
 *                 thread; sk_ctl_views, lock views.mu.
 *   shards_int.h  shards and forwarding: shard leases, fencing, the holder
 *                 of a user's shard; sk_ctl_shards, lock shards->mu.
 *   http_int.h    HTTP and guard: the two listeners, the store probe, the
 *                 connect API, the status page; sk_ctl_http (lock
 *                 http.render_mu for scrapes; the guard's own mu).
 *
 * This header: struct sk_controller (the parts, what sk_controller_new sets
 * once, the lifecycle) and what every file uses.
 *
 * The files:
 *   controller.c  lifecycle: new, free, start (the start-up thread), stop,
 *                 --once, ready; logging; provider lookup.
 *   worker.c      the worker threads: a key -> its object -> fencing ->
 *                 sk_reconcile_object, and what a result does (requeue,
 *                 backoff, forget, the reconciles-finished count).
 *   spaces.c      each space's memory between reconciles.
 *   metrics.c     every metric's declaration, drift gauges, /metrics.
 *   observe.c     the observer thread: provider lists into the views,
 *                 orphans, the resync that enqueues every key.
 *   share.c       one provider list for every replica (publish and read).
 *   shards.c      the shard leases and fencing (the lease thread).
 *   forward.c     a connect for another replica's shard goes there.
 *   http.c        the main listener (health, readiness, metrics, the page)
 *                 and the store probe.
 *   guard.c       the connect listener: token, TLS, limits, connect threads.
 *   tokens.c      the connect API's bearer tokens, their scopes and reloads.
 *   connect.c     the connect API and the heartbeat.
 *   page.c        the status page (HTML).
 *   capacity.c    each provider's capacity: running count, evictions, the
 *                 FIFO queue of starts (capacity_int.h).
 *   capacity_quota.c  the SpaceQuotas' spec.hard.running at the capacity
 *                 gate (evict within the tenant, wait, or 429).
 *   quota.c       the SpaceQuotas: status.used, metrics, the set the
 *                 capacity gate holds spec.hard.running with (quota_int.h).
 *
 * Locks: every lock is a leaf (nothing else is locked while it is held),
 * except http.render_mu, held over a whole scrape (it takes spaces.mu, the
 * informer's and the metrics' locks inside).
 */
#ifndef SK_CONTROLLER_INT_H
#define SK_CONTROLLER_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "../informer/informer.h"
#include "../metrics/metrics.h"
#include "../reconcile/options.h"
#include "../sandbox/sandbox.h"
#include "../store/store.h"
#include "../workqueue/workqueue.h"
#include "capacity_int.h"
#include "controller.h"
#include "http_int.h"
#include "quota_int.h"
#include "shards_int.h"
#include "spaces_int.h"
#include "views_int.h"

#define SK_CONTROLLER_NAME "userspace"
/* MongoDB connections of the controller when the URI does not say (maxPoolSize). */
#define SK_CONTROLLER_STORE_POOL 4
/* Start-up: the first list of UserSpaces must come within SYNC_MS; a
 * database that is not there yet is retried every RETRY_MIN_MS, doubling
 * up to RETRY_MAX_MS. */
#define SK_CONTROLLER_SYNC_MS 30000
#define SK_CONTROLLER_RETRY_MIN_MS 1000
#define SK_CONTROLLER_RETRY_MAX_MS 30000
/* worker.c: one worker thread and its provider clients (its own). */
typedef struct sk_worker {
	struct sk_controller *c;
	int index;
	pthread_t thread;
	sk_provider **clients; /* one per provider, in config order */
} sk_worker;

struct sk_controller {
	/* Set by sk_controller_new, read-only after (each handle locks itself). */
	sk_controller_options opts;
	const sk_controller_config *cfg;
	char *identity; /* controller.identity, else spacekeeper-PID */
	/* The archive (cfg->archive): the S3 settings with its keys (secrets,
	 * read once at start, wiped at free); archive_s3.bucket NULL: none. */
	sk_s3_config archive_s3;
	char *archive_access, *archive_secret;
	size_t n_prov;
	sk_store *store;
	sk_informer *inf;
	sk_workqueue *q;
	sk_metrics *metrics;
	sk_limiter **limiters; /* per provider, taken by a worker around a reconcile */

	/* The parts. */
	sk_ctl_spaces spaces; /* spaces_int.h */
	sk_ctl_views views; /* views_int.h */
	sk_ctl_shards *shards; /* shards_int.h */
	sk_ctl_http http; /* http_int.h */
	sk_ctl_capacity *capacity; /* capacity_int.h */
	sk_ctl_quotas *quotas; /* quota_int.h */

	/* Lifecycle (controller.c). */
	pthread_mutex_t mu; /* guards running and once */
	pthread_cond_t wake; /* with mu: the stop, or a pass asked of the observer;
	                        the lease thread and the observer sleep on it
	                        (monotonic clock) */
	atomic_bool stopping; /* set once by stop, read by every thread */
	atomic_llong stop_deadline_ms; /* monotonic; set before stopping (the grace) */
	atomic_ullong abandoned; /* reconciles cut short or not started by the stop */
	atomic_bool started; /* first shard round done, workers up (sk_controller_ready) */
	bool running;
	bool once; /* --once: steady keys are not requeued */
	/* Owned by the thread that starts and stops (and the start-up thread). */
	sk_worker *workers;
	int n_workers;
	pthread_t boot_thread; /* start-up: the database, the first list, the workers */
	bool boot_running;
	bool boot_connected; /* start found the database */
};

/* The stop flag: set once by sk_controller_stop, read by every thread. */
static inline bool
sk_ctl_stopping(sk_controller *c)
{
	return atomic_load(&c->stopping);
}

/* The abort hooks of the provider clients (sk_provider_set_abort): the
 * observer's stop at once, the workers' after the stop's grace. */
bool sk_ctl_abort_now(void *controller);
bool sk_ctl_abort_after_grace(void *controller);

/* Logs msg and fmt's key=value text at lvl; below the controller's
 * log_level nothing is formatted. */
void sk_ctl_log(sk_controller *c, sk_log_level lvl, const char *msg, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
/* Whether a line at lvl would be written: for a caller that builds its
 * text before sk_ctl_log. */
bool sk_ctl_log_enabled(const sk_controller *c, sk_log_level lvl);
/* Index of a provider by name, -1 when not configured. */
int sk_ctl_provider_index(sk_controller *c, const char *name);

/* worker.c: the plan options for a space's provider. */
void sk_ctl_plan_options(sk_controller *c, const sk_userspace *us, sk_plan_options *out);
/* worker.c: the envd URL a connect answer names (caller frees). */
char *sk_ctl_envd_url(sk_controller *c, const sk_userspace *us);
/* worker.c: the worker threads (one provider client per provider each). */
int sk_ctl_workers_start(sk_controller *c, sk_error *err);
/* After the threads were joined. */
void sk_ctl_workers_free(sk_controller *c);

/* metrics.c: declares every metric (at new), and the workqueue's
 * queue/work duration observer. */
void sk_ctl_metrics_declare(sk_controller *c);
void sk_ctl_observe_queue(void *payload, bool work, int64_t ms);
/* metrics.c: provider requests, counted and timed per provider and endpoint. */
#define SK_CTL_METRIC_PROVIDER_REQUESTS "spacekeeper_provider_requests_total"
#define SK_CTL_METRIC_PROVIDER_DURATION "spacekeeper_provider_request_duration_seconds"
/* Reports every request of p to the controller's metrics. */
void sk_ctl_watch_provider(sk_controller *c, sk_provider *p);
/* metrics.c: migrations by target provider and result, and bytes copied. */
#define SK_CTL_METRIC_MIGRATIONS "spacekeeper_migrations_total"
#define SK_CTL_METRIC_MIGRATION_BYTES "spacekeeper_migration_bytes_total"
void sk_ctl_observe_migration(void *payload, const char *provider, const char *what, int64_t n);
/* metrics.c: sets spacekeeper_userspaces{phase,ready} from the informer's
 * cache (every phase x ready series, zeros included; inf NULL: all zero). */
#define SK_CTL_METRIC_USERSPACES "spacekeeper_userspaces"
void sk_ctl_metrics_userspaces(sk_metrics *m, sk_informer *inf);
/* http.c: store errors by call site: spacekeeper_store_errors_total{op}. */
#define SK_CTL_METRIC_STORE_ERRORS "spacekeeper_store_errors_total"
#define SK_CTL_METRIC_STORE_WRITES "spacekeeper_store_write_commands_total"
#define SK_CTL_METRIC_STORE_READS "spacekeeper_store_read_commands_total"
void sk_ctl_store_error(sk_controller *c, const char *op);

#endif
