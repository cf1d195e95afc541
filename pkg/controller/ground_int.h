/*
 * ground_int: the controller's ground floor, private to pkg/controller and
 * included by every file of it: struct sk_controller (what sk_controller_new
 * sets once, the parts as pointers, the lifecycle flags) and the helpers
 * every part uses (ground.c): logging, a provider's index, the stop flag,
 * the provider clients' abort hooks and the store errors' count. It includes no part's header: a file
 * includes the headers of the parts it uses (controller_int.h lists them),
 * and nothing here calls into a part.
 */
#ifndef SK_CONTROLLER_GROUND_INT_H
#define SK_CONTROLLER_GROUND_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "../api/config.h"
#include "../informer/informer.h"
#include "../metrics/metrics.h"
#include "../reconcile/reconcile.h"
#include "../sandbox/sandbox.h"
#include "../store/store.h"
#include "../util/util.h"
#include "../workqueue/workqueue.h"
#include "controller.h"

#define SK_CONTROLLER_NAME "userspace"

/* The parts, each defined in its own header (controller_int.h lists them). */
typedef struct sk_ctl_spaces sk_ctl_spaces; /* spaces_int.h */
typedef struct sk_ctl_views sk_ctl_views; /* views_int.h */
typedef struct sk_ctl_shards sk_ctl_shards; /* shards_int.h */
typedef struct sk_ctl_http sk_ctl_http; /* http_int.h */
typedef struct sk_ctl_capacity sk_ctl_capacity; /* capacity_int.h */
typedef struct sk_ctl_quotas sk_ctl_quotas; /* quota_int.h */
typedef struct sk_worker sk_worker; /* worker_int.h */

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

	/* The parts, made at new, each with its own lock. */
	sk_ctl_spaces *spaces; /* spaces_int.h */
	sk_ctl_views *views; /* views_int.h */
	sk_ctl_shards *shards; /* shards_int.h */
	sk_ctl_http *http; /* http_int.h */
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
/* Counts a store error by call site: spacekeeper_store_errors_total{op}. */
#define SK_CTL_METRIC_STORE_ERRORS "spacekeeper_store_errors_total"
void sk_ctl_store_error(sk_controller *c, const char *op);

#endif
