/*
 * metrics_int: what /metrics exports (metrics.c), private to
 * pkg/controller: every metric's declaration, the workqueue's and the
 * provider clients' observers, migrations, the UserSpaces by phase.
 */
#ifndef SK_CONTROLLER_METRICS_INT_H
#define SK_CONTROLLER_METRICS_INT_H

#include "../informer/informer.h"
#include "../metrics/metrics.h"
#include "../sandbox/sandbox.h"
#include "ground_int.h"

/* Declares every metric (at new), and the workqueue's queue/work duration
 * observer. */
void sk_ctl_metrics_declare(sk_controller *c);
void sk_ctl_observe_queue(void *payload, bool work, int64_t ms);
/* Provider requests, counted and timed per provider and endpoint. */
#define SK_CTL_METRIC_PROVIDER_REQUESTS "spacekeeper_provider_requests_total"
#define SK_CTL_METRIC_PROVIDER_DURATION "spacekeeper_provider_request_duration_seconds"
/* Reports every request of p to the controller's metrics. */
void sk_ctl_watch_provider(sk_controller *c, sk_provider *p);
/* Migrations by target provider and result, and bytes copied. */
#define SK_CTL_METRIC_MIGRATIONS "spacekeeper_migrations_total"
#define SK_CTL_METRIC_MIGRATION_BYTES "spacekeeper_migration_bytes_total"
void sk_ctl_observe_migration(void *payload, const char *provider, const char *what, int64_t n);
/* Sets spacekeeper_userspaces{phase,ready} from the informer's cache
 * (every phase x ready series, zeros included; inf NULL: all zero). */
#define SK_CTL_METRIC_USERSPACES "spacekeeper_userspaces"
void sk_ctl_metrics_userspaces(sk_metrics *m, sk_informer *inf);
/* The store's commands (metrics.c reads them from the store at a scrape). */
#define SK_CTL_METRIC_STORE_WRITES "spacekeeper_store_write_commands_total"
#define SK_CTL_METRIC_STORE_READS "spacekeeper_store_read_commands_total"

#endif
