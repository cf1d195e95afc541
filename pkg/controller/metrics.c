/*
 * controller/metrics: what the controller exports on /metrics, at
 * controller-runtime parity (reconcile, workqueue), plus spacekeeper's own
 * (UserSpaces by phase, drift by type, provider requests, connects).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../reconcile/observe.h"
#include "ground_int.h"
#include "http_int.h"
#include "metrics_int.h"
#include "shards_int.h"
#include "spaces_int.h"
#include "views_int.h"

/* ---- metrics ---- */

static const char *const results[] = { "success", "error", "requeue", "requeue_after" };

/* Cached UserSpaces by status.phase and by whether condition Ready is True. */
#define N_PHASES ((size_t)SK_PHASE_COUNT)
typedef struct userspace_counts {
	size_t n[N_PHASES][2];
} userspace_counts;

static void
count_userspace(const sk_informer_entry *e, void *payload)
{
	userspace_counts *k = payload;
	size_t p = (size_t)e->phase < N_PHASES ? (size_t)e->phase : 0;

	k->n[p][e->ready ? 1 : 0]++;
}

void
sk_ctl_metrics_userspaces(sk_metrics *m, sk_informer *inf)
{
	userspace_counts k = { { { 0 } } };
	char l[96];

	/* One O(N) pass over the cache under its lock, no copies, no decoding. */
	if (inf)
		sk_informer_foreach(inf, count_userspace, &k);
	for (size_t p = 0; p < N_PHASES; p++) {
		const char *phase = sk_phase_name((sk_phase)p);
		for (int r = 0; r < 2; r++) {
			snprintf(l, sizeof(l), "phase=\"%s\",ready=\"%s\"",
			        phase[0] ? phase : "None", r ? "true" : "false");
			sk_metrics_set(m, SK_CTL_METRIC_USERSPACES, l, (double)k.n[p][r]);
		}
	}
}

#define WQ_LABELS "name=\"" SK_CONTROLLER_NAME "\",controller=\"" SK_CONTROLLER_NAME "\""
#define CTL_LABEL "controller=\"" SK_CONTROLLER_NAME "\""

/* controller-runtime's reconcile metrics, with its names and help. */
static void
declare_reconcile(sk_metrics *m, int workers)
{
	char l[128];

	sk_metrics_declare(m, "controller_runtime_reconcile_total", SK_METRIC_COUNTER,
	        "Total number of reconciliations per controller");
	for (size_t i = 0; i < 4; i++) {
		snprintf(l, sizeof(l), CTL_LABEL ",result=\"%s\"", results[i]);
		sk_metrics_add(m, "controller_runtime_reconcile_total", l, 0);
	}
	sk_metrics_declare(m, "controller_runtime_reconcile_errors_total", SK_METRIC_COUNTER,
	        "Total number of reconciliation errors per controller");
	sk_metrics_add(m, "controller_runtime_reconcile_errors_total", CTL_LABEL, 0);
	sk_metrics_declare(m, "controller_runtime_terminal_reconcile_errors_total",
	        SK_METRIC_COUNTER, "Total number of terminal reconciliation errors per controller");
	sk_metrics_add(m, "controller_runtime_terminal_reconcile_errors_total", CTL_LABEL, 0);
	/* C has no recover(): a crash ends the process, so this stays 0; it is
	 * here so controller-runtime's dashboards and alerts find it. */
	sk_metrics_declare(m, "controller_runtime_reconcile_panics_total", SK_METRIC_COUNTER,
	        "Total number of reconciliation panics per controller");
	sk_metrics_add(m, "controller_runtime_reconcile_panics_total", CTL_LABEL, 0);
	sk_metrics_declare_histogram(m, "controller_runtime_reconcile_time_seconds",
	        "Length of time per reconciliation per controller", sk_metrics_buckets_reconcile,
	        sk_metrics_n_buckets_reconcile);
	sk_metrics_observe(m, "controller_runtime_reconcile_time_seconds", CTL_LABEL, NAN);
	sk_metrics_declare(m, "controller_runtime_max_concurrent_reconciles", SK_METRIC_GAUGE,
	        "Maximum number of concurrent reconciles per controller");
	sk_metrics_set(m, "controller_runtime_max_concurrent_reconciles", CTL_LABEL, workers);
	sk_metrics_declare(m, "controller_runtime_active_workers", SK_METRIC_GAUGE,
	        "Number of currently used workers per controller");
	sk_metrics_set(m, "controller_runtime_active_workers", CTL_LABEL, 0);
}

/* client-go's workqueue metrics as controller-runtime registers them. */
static void
declare_workqueue(sk_metrics *m)
{
	sk_metrics_declare(m, "workqueue_depth", SK_METRIC_GAUGE, "Current depth of workqueue");
	sk_metrics_declare(m, "workqueue_adds_total", SK_METRIC_COUNTER,
	        "Total number of adds handled by workqueue");
	sk_metrics_declare(m, "workqueue_retries_total", SK_METRIC_COUNTER,
	        "Total number of retries handled by workqueue");
	sk_metrics_declare_histogram(m, "workqueue_queue_duration_seconds",
	        "How long in seconds an item stays in workqueue before being requested",
	        sk_metrics_buckets_workqueue, sk_metrics_n_buckets_workqueue);
	sk_metrics_observe(m, "workqueue_queue_duration_seconds", WQ_LABELS, NAN);
	sk_metrics_declare_histogram(m, "workqueue_work_duration_seconds",
	        "How long in seconds processing an item from workqueue takes.",
	        sk_metrics_buckets_workqueue, sk_metrics_n_buckets_workqueue);
	sk_metrics_observe(m, "workqueue_work_duration_seconds", WQ_LABELS, NAN);
	sk_metrics_declare(m, "workqueue_unfinished_work_seconds", SK_METRIC_GAUGE,
	        "How many seconds of work has been done that is in progress and hasn't been "
	        "observed by work_duration. Large values indicate stuck threads. One can deduce "
	        "the number of stuck threads by observing the rate at which this increases.");
	sk_metrics_declare(m, "workqueue_longest_running_processor_seconds", SK_METRIC_GAUGE,
	        "How many seconds has the longest running processor for workqueue been "
	        "running.");
	sk_metrics_declare(m, "spacekeeper_workqueue_delayed", SK_METRIC_GAUGE,
	        "Keys of the workqueue waiting for a due time (requeue after, backoff)");
}

static void
declare_provider(sk_controller *c)
{
	sk_metrics *m = c->metrics;
	char l[160], name[96];

	sk_metrics_declare(m, "spacekeeper_provider_list_total", SK_METRIC_COUNTER,
	        "Observer list passes per provider and result");
	sk_metrics_declare(m, "spacekeeper_provider_reconciles_total", SK_METRIC_COUNTER,
	        "Reconciles that used a provider");
	sk_metrics_declare(m, SK_CTL_METRIC_LOOKS, SK_METRIC_COUNTER,
	        "Reconciles by how they learnt the bound sandbox's state: list, known (the "
	        "controller's own last look), asleep-maybe (near its deadline, not asked), get, "
	        "none (nothing bound)");
	for (int i = SK_LOOK_NONE; i <= SK_LOOK_GET; i++) {
		snprintf(l, sizeof(l), "look=\"%s\"", sk_look_name((sk_look)i));
		sk_metrics_add(m, SK_CTL_METRIC_LOOKS, l, 0);
	}
	sk_metrics_declare(m, "spacekeeper_status_writes_total", SK_METRIC_COUNTER,
	        "Reconciles that wrote the UserSpace (its resourceVersion changed)");
	sk_metrics_add(m, "spacekeeper_status_writes_total", NULL, 0);
	sk_metrics_declare(m, "spacekeeper_observed_sandboxes", SK_METRIC_GAUGE,
	        "Managed sandboxes seen by the last list, per provider");
	sk_metrics_declare(m, "spacekeeper_orphan_sandboxes", SK_METRIC_GAUGE,
	        "Managed sandboxes whose user has no UserSpace, per provider");
	sk_metrics_declare(m, SK_CTL_METRIC_PROVIDER_REQUESTS, SK_METRIC_COUNTER,
	        "Provider HTTP requests by provider, endpoint (ids written :id) and status code "
	        "(<error>: no answer)");
	sk_metrics_declare_histogram(m, SK_CTL_METRIC_PROVIDER_DURATION,
	        "Provider HTTP request latency in seconds by provider and endpoint",
	        sk_metrics_buckets_request, sk_metrics_n_buckets_request);
	for (size_t i = 0; i < c->n_prov; i++) {
		sk_metrics_escape(c->cfg->providers[i].name, name, sizeof(name));
		snprintf(l, sizeof(l), "provider=\"%s\"", name);
		sk_metrics_add(m, "spacekeeper_provider_reconciles_total", l, 0);
		sk_metrics_set(m, "spacekeeper_orphan_sandboxes", l, 0);
	}
}

static const char *const drift_types[SK_CTL_DRIFT_TYPES] = { SK_DRIFT_DATAPLANE, SK_DRIFT_DUPLICATE,
	SK_DRIFT_STATE, SK_DRIFT_SPEC, SK_DRIFT_MISSING, SK_DRIFT_ORPHAN };

const char *
sk_ctl_drift_type(size_t t)
{
	return t < SK_CTL_DRIFT_TYPES ? drift_types[t] : "";
}

static void
declare_drift(sk_metrics *m)
{
	char l[64];

	sk_metrics_declare(m, "spacekeeper_drift_spaces", SK_METRIC_GAUGE,
	        "UserSpaces whose status.drift holds a drift of this type (after their last "
	        "reconcile)");
	sk_metrics_declare(m, "spacekeeper_drift_oldest_seconds", SK_METRIC_GAUGE,
	        "Age of the oldest drift of this type (since its status.drift[].since), 0 when "
	        "none");
	for (size_t t = 0; t < SK_CTL_DRIFT_TYPES; t++) {
		snprintf(l, sizeof(l), "type=\"%s\"", drift_types[t]);
		sk_metrics_set(m, "spacekeeper_drift_spaces", l, 0);
		sk_metrics_set(m, "spacekeeper_drift_oldest_seconds", l, 0);
	}
}

void
sk_ctl_note_drift(sk_controller *c, const char *name, const sk_userspace *us)
{
	int64_t since[SK_CTL_DRIFT_TYPES] = { 0 };
	bool any = false;

	for (size_t i = 0; us && i < us->status.n_drift; i++) {
		const sk_drift *d = &us->status.drift[i];
		for (size_t t = 0; d->type && t < SK_CTL_DRIFT_TYPES; t++) {
			if (strcmp(d->type, drift_types[t]) != 0)
				continue;
			if (since[t] == 0 || (d->since_ms > 0 && d->since_ms < since[t]))
				since[t] = d->since_ms > 0 ? d->since_ms : sk_now_ms();
			any = true;
		}
	}
	sk_ctl_space_set_drift(c, name, any ? since : NULL);
}

typedef struct drift_acc {
	size_t n[SK_CTL_DRIFT_TYPES];
	int64_t oldest[SK_CTL_DRIFT_TYPES];
} drift_acc;

static void
add_drift(const char *name, const int64_t *since, void *payload)
{
	drift_acc *a = payload;

	(void)name;
	for (size_t t = 0; t < SK_CTL_DRIFT_TYPES; t++) {
		if (since[t] == 0)
			continue;
		a->n[t]++;
		if (a->oldest[t] == 0 || since[t] < a->oldest[t])
			a->oldest[t] = since[t];
	}
}

static void
render_drift(sk_controller *c)
{
	drift_acc a = { { 0 }, { 0 } };
	int64_t now = sk_now_ms();
	char l[64];

	sk_ctl_spaces_drift(c, add_drift, &a);
	for (size_t t = 0; t < SK_CTL_DRIFT_TYPES; t++) {
		snprintf(l, sizeof(l), "type=\"%s\"", drift_types[t]);
		sk_metrics_set(c->metrics, "spacekeeper_drift_spaces", l, (double)a.n[t]);
		sk_metrics_set(c->metrics, "spacekeeper_drift_oldest_seconds", l,
		        a.oldest[t] > 0 && now > a.oldest[t] ? (double)(now - a.oldest[t]) / 1000.0
		                                             : 0);
	}
}

/* Shard leases (shards.c): held and total, one master-status series per
 * shard (client-go's leader_election_master_status), renew failures. */
static void
declare_shards(sk_controller *c)
{
	sk_metrics *m = c->metrics;

	sk_metrics_declare(m, SK_CTL_METRIC_SHARDS_HELD, SK_METRIC_GAUGE,
	        "Shards whose lease this replica holds");
	sk_metrics_set(m, SK_CTL_METRIC_SHARDS_HELD, NULL, 0);
	sk_metrics_declare(m, SK_CTL_METRIC_SHARDS_TOTAL, SK_METRIC_GAUGE,
	        "Shards the UserSpaces are split into (controller.shards)");
	sk_metrics_set(m, SK_CTL_METRIC_SHARDS_TOTAL, NULL, c->cfg->shards);
	sk_metrics_declare(m, SK_CTL_METRIC_MASTER_STATUS, SK_METRIC_GAUGE,
	        "1 while this replica holds the named shard lease and may act on it");
	sk_metrics_declare(m, SK_CTL_METRIC_RENEW_FAILURES, SK_METRIC_COUNTER,
	        "Shard lease renewals that failed");
	sk_metrics_add(m, SK_CTL_METRIC_RENEW_FAILURES, NULL, 0);
	sk_metrics_declare(m, SK_CTL_METRIC_CLOCK_SKEW, SK_METRIC_GAUGE,
	        "This host's wall clock minus the database server's (hello localTime), at the "
	        "last lease round; beyond 2 s the replica stops acting");
	sk_metrics_set(m, SK_CTL_METRIC_CLOCK_SKEW, NULL, 0);
}

/* Connect paths (connect.c) with the code each answers when it succeeds
 * (none: the 404 of an unknown name or user). */
static const struct {
	const char *path, *code;
} connect_paths[] = { { "fast", "200" }, { "wake", "200" }, { "create", "200" },
	{ "replace", "200" }, { "restore", "200" }, { "reconcile", "200" }, { "forward", "200" },
	{ "unavailable", "503" }, { "capacity", "429" }, { "none", "404" } };

static const char *const migration_results[] = { "started", "completed", "aborted" };

/* The series whose label values are known at start exist at zero before
 * their first event, so dashboards and alert rules find them on a fresh
 * controller (Prometheus' instrumentation practice). */
static void
declare_known_series(sk_controller *c)
{
	sk_metrics *m = c->metrics;
	char l[200], name[96];

	for (size_t i = 0; i < sizeof(connect_paths) / sizeof(connect_paths[0]); i++) {
		snprintf(l, sizeof(l), "path=\"%s\"", connect_paths[i].path);
		sk_metrics_observe(m, SK_CTL_METRIC_CONNECT_DURATION, l, NAN);
		snprintf(l, sizeof(l), "path=\"%s\",code=\"%s\"", connect_paths[i].path,
		        connect_paths[i].code);
		sk_metrics_add(m, SK_CTL_METRIC_CONNECTS, l, 0);
	}
	for (size_t i = 0; i < c->n_prov; i++) {
		sk_metrics_escape(c->cfg->providers[i].name, name, sizeof(name));
		snprintf(l, sizeof(l), "provider=\"%s\",result=\"success\"", name);
		sk_metrics_add(m, "spacekeeper_provider_list_total", l, 0);
		snprintf(l, sizeof(l), "provider=\"%s\",result=\"error\"", name);
		sk_metrics_add(m, "spacekeeper_provider_list_total", l, 0);
		for (size_t r = 0; r < 3; r++) {
			snprintf(l, sizeof(l), "provider=\"%s\",result=\"%s\"", name,
			        migration_results[r]);
			sk_metrics_add(m, SK_CTL_METRIC_MIGRATIONS, l, 0);
		}
		snprintf(l, sizeof(l), "provider=\"%s\"", name);
		sk_metrics_add(m, SK_CTL_METRIC_MIGRATION_BYTES, l, 0);
	}
}

/* The store's own count of the write and read commands it sent. */
static void
render_store_writes(sk_controller *c)
{
	uint64_t w[SK_STORE_WRITE_COLLS] = { 0 }, r[SK_STORE_WRITE_COLLS] = { 0 };
	char l[64];

	if (c->store != NULL) { /* declared before the store is opened */
		sk_store_write_commands(c->store, w);
		sk_store_read_commands(c->store, r);
	}
	for (int i = 0; i < SK_STORE_WRITE_COLLS; i++) {
		snprintf(l, sizeof(l), "collection=\"%s\"",
		        sk_store_write_coll_name((sk_store_write_coll)i));
		sk_metrics_set(c->metrics, SK_CTL_METRIC_STORE_WRITES, l, (double)w[i]);
		sk_metrics_set(c->metrics, SK_CTL_METRIC_STORE_READS, l, (double)r[i]);
	}
}

void
sk_ctl_metrics_declare(sk_controller *c)
{
	sk_metrics *m = c->metrics;

	declare_reconcile(m, c->cfg->workers);
	declare_workqueue(m);
	declare_provider(c);
	sk_metrics_declare(m, "spacekeeper_informer_synced", SK_METRIC_GAUGE,
	        "1 once the informer has listed UserSpaces");
	sk_metrics_declare(m, "spacekeeper_informer_objects", SK_METRIC_GAUGE,
	        "UserSpaces in the informer cache");
	sk_metrics_declare(m, "spacekeeper_informer_errors_total", SK_METRIC_COUNTER,
	        "Failed polls and relists of the store by the informer");
	sk_metrics_declare(m, "spacekeeper_informer_polls_total", SK_METRIC_COUNTER,
	        "Polls of the store by the informer");
	sk_metrics_declare(m, SK_CTL_METRIC_STORE_ERRORS, SK_METRIC_COUNTER,
	        "Failed store calls by call site: ping (the /readyz probe), informer (list and "
	        "poll), reconcile (status writes, events and reads of a reconcile), share (the "
	        "shared provider list)");
	sk_metrics_add(m, SK_CTL_METRIC_STORE_ERRORS, "op=\"ping\"", 0);
	sk_metrics_add(m, SK_CTL_METRIC_STORE_ERRORS, "op=\"reconcile\"", 0);
	sk_metrics_add(m, SK_CTL_METRIC_STORE_ERRORS, "op=\"share\"", 0);
	sk_ctl_share_declare(c);
	sk_metrics_set(m, SK_CTL_METRIC_STORE_ERRORS, "op=\"informer\"", 0);
	sk_metrics_declare(m, SK_CTL_METRIC_STORE_WRITES, SK_METRIC_COUNTER,
	        "Write commands (insert, update, delete, findAndModify) sent to MongoDB by "
	        "the controller, by the collection they name; a command of many documents "
	        "counts once");
	sk_metrics_declare(m, SK_CTL_METRIC_STORE_READS, SK_METRIC_COUNTER,
	        "Read commands (find, getMore, aggregate, count, distinct) sent to MongoDB by the "
	        "controller, by the collection they name");
	render_store_writes(c);
	declare_drift(m);
	sk_metrics_declare(m, SK_CTL_METRIC_MIGRATIONS, SK_METRIC_COUNTER,
	        "Migrations by target provider and result (started, completed, aborted)");
	sk_metrics_declare(m, SK_CTL_METRIC_MIGRATION_BYTES, SK_METRIC_COUNTER,
	        "Workspace bytes copied by migrations, by target provider");
	sk_metrics_declare(m, SK_CTL_METRIC_CONNECTS, SK_METRIC_COUNTER,
	        "Connect calls by path (fast, wake, create, replace, reconcile, unavailable, "
	        "none) and HTTP status code");
	sk_metrics_declare_histogram(m, SK_CTL_METRIC_CONNECT_DURATION,
	        "Connect call latency in seconds by path", sk_metrics_buckets_default,
	        sk_metrics_n_buckets_default);
	sk_metrics_declare(m, SK_CTL_METRIC_USERSPACES, SK_METRIC_GAUGE,
	        "UserSpaces in the informer cache by status.phase (None: no status yet) and "
	        "whether condition Ready is True");
	sk_ctl_metrics_userspaces(m, NULL);
	declare_known_series(c);
	declare_shards(c);
	sk_metrics_collect_process(m, NULL);
}

/* The workqueue's timing (sk_workqueue_options.observe). */
void
sk_ctl_observe_queue(void *payload, bool work, int64_t ms)
{
	sk_metrics *m = payload;

	sk_metrics_observe(m,
	        work ? "workqueue_work_duration_seconds" : "workqueue_queue_duration_seconds",
	        WQ_LABELS, (double)ms / 1000.0);
}

/* Every provider request (sk_provider_set_observer). */
static void
observe_request(
        void *payload, const char *provider, const char *endpoint, int status, double seconds)
{
	sk_controller *c = payload;
	char name[96], ep[256], l[400];

	sk_metrics_escape(provider, name, sizeof(name));
	sk_metrics_escape(endpoint, ep, sizeof(ep));
	snprintf(l, sizeof(l), "provider=\"%s\",endpoint=\"%s\"", name, ep);
	sk_metrics_observe(c->metrics, SK_CTL_METRIC_PROVIDER_DURATION, l, seconds);
	if (status > 0)
		snprintf(l, sizeof(l), "provider=\"%s\",endpoint=\"%s\",code=\"%d\"", name, ep,
		        status);
	else
		snprintf(
		        l, sizeof(l), "provider=\"%s\",endpoint=\"%s\",code=\"<error>\"", name, ep);
	sk_metrics_add(c->metrics, SK_CTL_METRIC_PROVIDER_REQUESTS, l, 1);
}

/* A migration milestone (sk_reconcile_env.migration_observer). */
void
sk_ctl_observe_migration(void *payload, const char *provider, const char *what, int64_t n)
{
	sk_controller *c = payload;
	char name[96], l[160];

	sk_metrics_escape(provider ? provider : "", name, sizeof(name));
	if (strcmp(what, "bytes") == 0) {
		snprintf(l, sizeof(l), "provider=\"%s\"", name);
		sk_metrics_add(c->metrics, SK_CTL_METRIC_MIGRATION_BYTES, l, (double)n);
		return;
	}
	snprintf(l, sizeof(l), "provider=\"%s\",result=\"%s\"", name, what);
	sk_metrics_add(c->metrics, SK_CTL_METRIC_MIGRATIONS, l, 1);
}

void
sk_ctl_watch_provider(sk_controller *c, sk_provider *p)
{
	sk_provider_set_observer(p, observe_request, c);
}

void
sk_controller_render_metrics(sk_controller *c, sk_buf *out)
{
	/* Scrapes in turn: the gauges set here render as one snapshot. */
	sk_workqueue_stats st;
	sk_informer_stats is;
	sk_metrics *m = c->metrics;

	pthread_mutex_lock(&c->http->render_mu);
	sk_workqueue_get_stats(c->q, &st);
	sk_metrics_set(m, "workqueue_depth", WQ_LABELS, (double)st.depth);
	sk_metrics_set(m, "workqueue_adds_total", WQ_LABELS, (double)st.adds_total);
	sk_metrics_set(m, "workqueue_retries_total", WQ_LABELS, (double)st.retries_total);
	sk_metrics_set(m, "workqueue_unfinished_work_seconds", WQ_LABELS,
	        (double)st.unfinished_ms / 1000.0);
	sk_metrics_set(m, "workqueue_longest_running_processor_seconds", WQ_LABELS,
	        (double)st.longest_running_ms / 1000.0);
	sk_metrics_set(m, "spacekeeper_workqueue_delayed", WQ_LABELS, (double)st.delayed);
	sk_metrics_set(
	        m, "spacekeeper_informer_synced", NULL, sk_informer_has_synced(c->inf) ? 1 : 0);
	sk_metrics_set(m, "spacekeeper_informer_objects", NULL, (double)sk_informer_len(c->inf));
	sk_informer_get_stats(c->inf, &is);
	sk_metrics_set(m, "spacekeeper_informer_errors_total", NULL, (double)is.errors);
	sk_metrics_set(m, SK_CTL_METRIC_STORE_ERRORS, "op=\"informer\"", (double)is.errors);
	sk_metrics_set(m, "spacekeeper_informer_polls_total", NULL, (double)is.polls);
	render_drift(c);
	render_store_writes(c);
	sk_ctl_shards_metrics(c);
	sk_ctl_metrics_userspaces(m, c->inf);
	sk_metrics_collect_process(m, NULL);
	sk_metrics_render(m, out);
	pthread_mutex_unlock(&c->http->render_mu);
}
