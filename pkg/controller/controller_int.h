/*
 * controller_int: the controller's shared state, private to pkg/controller
 * (controller.c: lifecycle and workers; observe.c: provider lists and
 * orphans; http.c: the HTTP endpoint).
 */
#ifndef SK_CONTROLLER_INT_H
#define SK_CONTROLLER_INT_H

#include <pthread.h>

#include "../informer/informer.h"
#include "../metrics/metrics.h"
#include "../reconcile/reconcile.h"
#include "../sandbox/sandbox.h"
#include "../store/store.h"
#include "../workqueue/workqueue.h"
#include "controller.h"

#define SK_CONTROLLER_NAME "userspace"
/* MongoDB connections of the controller when the URI does not say (maxPoolSize). */
#define SK_CONTROLLER_STORE_POOL 4
/* Start-up: the first list of UserSpaces must come within SYNC_MS; a
 * database that is not there yet is retried every RETRY_MIN_MS, doubling
 * up to RETRY_MAX_MS. */
#define SK_CONTROLLER_SYNC_MS 30000
#define SK_CONTROLLER_RETRY_MIN_MS 1000
#define SK_CONTROLLER_RETRY_MAX_MS 30000

/* The last list of one provider. */
typedef struct sk_prov_view {
	sk_strmap *by_user; /* user_id -> sk_sandbox_list* */
	bool valid; /* the last list succeeded */
	int64_t listed_ms; /* wall clock when that list started */
	size_t n_sandboxes;
	sk_kvlist orphan_seen; /* sandbox id -> first-seen ms (sk_plan_orphans) */
} sk_prov_view;

typedef struct sk_worker {
	struct sk_controller *c;
	int index;
	pthread_t thread;
	sk_provider **clients; /* one per provider, in config order */
} sk_worker;

struct sk_controller {
	sk_controller_options opts;
	const sk_controller_config *cfg;
	sk_store *store;
	sk_informer *inf;
	sk_workqueue *q;
	sk_metrics *metrics;
	size_t n_prov;
	sk_limiter **limiters; /* per provider */
	sk_provider **obs_clients; /* the observer's clients */

	pthread_mutex_t obs_mu; /* guards views */
	sk_prov_view *views;

	pthread_mutex_t mu; /* guards everything below */
	pthread_cond_t cond; /* reconcile finished / stop */
	volatile bool stopping;
	bool running;
	bool once; /* --once: steady keys are not requeued */
	uint64_t gen; /* reconciles finished */
	sk_strmap *done_gen; /* name -> uint64_t* gen of its last reconcile */
	sk_strmap *failed; /* names whose last reconcile failed */
	sk_strmap *written_rv; /* name -> int64_t* resourceVersion after our last writes */

	sk_worker *workers;
	int n_workers;
	pthread_t obs_thread;
	bool obs_running;
	pthread_t boot_thread; /* waits for the database when start found none */
	bool boot_running;
	void *httpd; /* struct MHD_Daemon* */
	int http_port;
};

void sk_ctl_log(sk_controller *c, sk_log_level lvl, const char *msg, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
/* Index of a provider by name, -1 when not configured. */
int sk_ctl_provider_index(sk_controller *c, const char *name);

/* observe.c */
void sk_ctl_views_init(sk_controller *c);
void sk_ctl_views_dispose(sk_controller *c);
/* One pass over every provider: list, group, orphans; then enqueue every key. */
void sk_ctl_observe_all(sk_controller *c);
int sk_ctl_observer_start(sk_controller *c, sk_error *err);
void sk_ctl_observer_stop(sk_controller *c);
/* Fills view with a copy of the user's listed sandboxes (caller disposes list). */
void sk_ctl_list_view(
        sk_controller *c, int prov, const char *user_id, sk_sandbox_list *list, sk_list_view *view);

/* http.c */
int sk_ctl_http_start(sk_controller *c, sk_error *err);
void sk_ctl_http_stop(sk_controller *c);

/* controller.c: sets spacekeeper_userspaces{phase,ready} from the informer's
 * cache (every phase x ready series, zeros included; inf NULL: all zero). */
#define SK_CTL_METRIC_USERSPACES "spacekeeper_userspaces"
void sk_ctl_metrics_userspaces(sk_metrics *m, sk_informer *inf);

/* controller.c: waits until a reconcile of name finishes after gen0 or the
 * deadline (monotonic ms) passes; false on timeout or stop. */
bool sk_ctl_wait_reconciled(sk_controller *c, const char *name, uint64_t gen0, int64_t deadline);
uint64_t sk_ctl_gen(sk_controller *c);

#endif
