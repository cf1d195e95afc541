/*
 * controller_int: the controller's shared state, private to pkg/controller
 * (controller.c: lifecycle and workers; observe.c: provider lists and
 * orphans; http.c: the HTTP endpoint).
 */
#ifndef SK_CONTROLLER_INT_H
#define SK_CONTROLLER_INT_H

#include <pthread.h>
#include <stdatomic.h>

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
/* Stop: in-flight reconciles get GRACE_MS to finish their provider calls;
 * calls still running then are aborted (the state is as after a crash, which
 * the next start repairs). The observer's list is abandoned at once. Well
 * inside the README's promise (SIGTERM exits within 10 s). */
#define SK_CONTROLLER_STOP_GRACE_MS 5000

/* The last list of one provider. */
typedef struct sk_prov_view {
	sk_strmap *by_user; /* user_id -> sk_sandbox_list* */
	bool valid; /* the last list succeeded */
	int64_t listed_ms; /* wall clock when that list started */
	size_t n_sandboxes;
	int64_t looked_mono; /* monotonic ms of this replica's last own list (0: none) */
	sk_kvlist orphan_seen; /* sandbox id -> first-seen ms (sk_plan_orphans) */
} sk_prov_view;

typedef struct sk_worker {
	struct sk_controller *c;
	int index;
	pthread_t thread;
	sk_provider **clients; /* one per provider, in config order */
} sk_worker;

typedef struct sk_ctl_shards sk_ctl_shards; /* shards.c */

struct sk_controller {
	sk_controller_options opts;
	char *identity; /* controller.identity, else spacekeeper-PID */
	sk_ctl_shards *shards;
	atomic_bool observe_now; /* the observer runs a pass at once (shards gained) */
	atomic_bool started; /* first shard round done, workers up (sk_controller_ready) */
	const sk_controller_config *cfg;
	sk_store *store;
	sk_informer *inf;
	sk_workqueue *q;
	sk_metrics *metrics;
	size_t n_prov;
	sk_limiter **limiters; /* per provider */
	sk_provider **obs_clients; /* the observer's clients */

	pthread_mutex_t render_mu; /* scrapes render one at a time */
	pthread_mutex_t obs_mu; /* guards views */
	sk_prov_view *views;

	sk_timeline *tl_reconcile; /* reconcile seconds per minute (the status page) */
	sk_timeline *tl_connect; /* connect seconds per minute */

	pthread_mutex_t drift_mu; /* guards drift */
	sk_strmap *drift; /* name -> int64_t[SK_CTL_DRIFT_TYPES]: since_ms of each drift type
	                     its last reconcile left (0: none); only spaces with drift */

	pthread_mutex_t spaces_mu; /* guards spaces */
	sk_strmap *spaces; /* name -> what is remembered of the space (spaces.c) */

	pthread_mutex_t mu; /* guards everything below */
	pthread_cond_t cond; /* reconcile finished / stop (monotonic clock) */
	atomic_bool stopping; /* also read without mu (workers, HTTP, observer) */
	atomic_llong stop_deadline_ms; /* monotonic; set before stopping (the grace) */
	atomic_ullong abandoned; /* reconciles cut short or not started by the stop */
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
	pthread_t boot_thread; /* start-up: the database, the first list, the workers */
	bool boot_running;
	bool boot_connected; /* start found the database */
	void *httpd; /* struct MHD_Daemon* */
	int http_port;
	struct sk_ctl_guard *guard; /* the connect API's listener (guard.c), NULL: none */
	pthread_t store_probe; /* pings the store for /readyz (http.c) */
	bool store_probe_running;
	_Atomic int64_t store_ok_ms; /* monotonic ms of the last store answer, 0: none */
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

void sk_ctl_log(sk_controller *c, sk_log_level lvl, const char *msg, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
/* Index of a provider by name, -1 when not configured. */
int sk_ctl_provider_index(sk_controller *c, const char *name);
/* The one segment between prefix and suffix of a URL path, e.g.
 * "/spaces/NAME" or "/v1/userspaces/NAME/connect" -> NAME (caller frees), else NULL. */
char *sk_ctl_path_segment(const char *url, const char *prefix, const char *suffix);

/* observe.c */
void sk_ctl_views_init(sk_controller *c);
void sk_ctl_views_dispose(sk_controller *c);
/* One look at every provider (our own list when due or forced, else the
 * shared one when newer: see share.c); when a view was renewed, every key
 * of the held shards is enqueued. Returns how long to wait for the next. */
int64_t sk_ctl_observe_all(sk_controller *c, bool force);
int sk_ctl_observer_start(sk_controller *c, sk_error *err);
void sk_ctl_observer_stop(sk_controller *c);
/* Fills view with a copy of the user's listed sandboxes (caller disposes list). */
void sk_ctl_list_view(
        sk_controller *c, int prov, const char *user_id, sk_sandbox_list *list, sk_list_view *view);

/* observe.c: asks the observer thread for a pass now. */
void sk_ctl_observe_soon(sk_controller *c);
/* observe.c: user_id -> that user's sandboxes (sk_sandbox_list*, GONE left
 * out), moved out of all. */
sk_strmap *sk_ctl_group_by_user(sk_sandbox_list *all);

/* share.c: one provider list for every replica (see share.c). */
typedef struct sk_ctl_shared_list {
	int64_t listed_ms; /* when the shared list started */
	size_t total; /* sandboxes it saw, every shard */
	sk_sandbox_list sandboxes; /* those of the shards this replica holds */
} sk_ctl_shared_list;
void sk_ctl_share_declare(sk_controller *c);
/* This replica lists the providers itself: it holds every shard or shard 0. */
bool sk_ctl_share_lists_self(sk_controller *c);
/* ... and stores its lists for the others: shard 0, not every shard. */
bool sk_ctl_share_publishes(sk_controller *c);
void sk_ctl_share_publish(
        sk_controller *c, int prov, const sk_sandbox_list *all, int64_t listed_ms);
/* 1: out holds the shared list of the held shards (newer than have_ms, or
 * any when force); 0: none newer; -1: none fresh, or it could not be read
 * (the caller lists for itself). */
int sk_ctl_share_read(
        sk_controller *c, int prov, int64_t have_ms, bool force, sk_ctl_shared_list *out);

/* shards.c: replicas share the spaces by shard leases (see shards.c). */
#define SK_CTL_METRIC_SHARDS_HELD "spacekeeper_shards_held"
#define SK_CTL_METRIC_SHARDS_TOTAL "spacekeeper_shards"
#define SK_CTL_METRIC_MASTER_STATUS "spacekeeper_leader_election_master_status"
#define SK_CTL_METRIC_RENEW_FAILURES "spacekeeper_lease_renew_failures_total"
/* The shard of a userID among n (FNV-1a of its bytes, mod n). */
int sk_ctl_shard_of(const char *user_id, int n);
void sk_ctl_shards_init(sk_controller *c);
void sk_ctl_shards_dispose(sk_controller *c);
/* Sets the holder string ("ID@ADDRESS") once HTTP has its port. */
void sk_ctl_shards_prepare(sk_controller *c);
/* One round: list, renew, balance. Returns how many shards it gained. */
int sk_ctl_shards_tick(sk_controller *c);
int sk_ctl_shards_start(sk_controller *c, sk_error *err);
/* Joins the lease thread and releases every lease held (after the workers). */
void sk_ctl_shards_stop(sk_controller *c);
/* --once: every shard counts as held, no lease is taken. */
void sk_ctl_shards_all(sk_controller *c);
/* Fencing: the shard is held and was renewed within the renew deadline. */
bool sk_ctl_shard_valid(sk_controller *c, int shard);
bool sk_ctl_may_act(sk_controller *c, const char *user_id);
bool sk_ctl_may_act_cb(void *arg, const char *user_id); /* arg: the controller */
/* HOST:PORT of the replica holding the user's shard (caller frees); NULL
 * when it is free or ours. */
char *sk_ctl_shard_holder_address(sk_controller *c, const char *user_id);
size_t sk_ctl_shards_held(sk_controller *c);
/* The shards held, ascending, into out (room for cfg->shards); their number. */
size_t sk_ctl_shards_held_list(sk_controller *c, int *out);
/* Every shard is this replica's (one replica, or --once). */
bool sk_ctl_shards_own_all(sk_controller *c);
/* /readyz: how many shards were free at the last round while this replica
 * holds none (0 when it holds some, or under --once). */
size_t sk_ctl_shards_free_unheld(sk_controller *c);
const char *sk_ctl_identity(sk_controller *c);

/* http.c: the main listener (controller.listen), then the connect
 * listener (guard.c) and the store probe; stop undoes all three. */
int sk_ctl_http_start(sk_controller *c, sk_error *err);
void sk_ctl_http_stop(sk_controller *c);
/* HOST:PORT -> an IPv4 socket address. */
struct sockaddr_in;
int sk_ctl_parse_listen(const char *listen, struct sockaddr_in *sa, sk_error *err);
/* Store errors by call site: spacekeeper_store_errors_total{op}. */
#define SK_CTL_METRIC_STORE_ERRORS "spacekeeper_store_errors_total"
void sk_ctl_store_error(sk_controller *c, const char *op);

/* guard.c: the connect API on controller.connectListen: bearer token,
 * optional TLS, limits, connects waiting in their own threads. */
int sk_ctl_guard_start(sk_controller *c, sk_error *err);
/* Waits for the connects in progress (they end on stop), then closes. */
void sk_ctl_guard_stop(sk_controller *c);
int sk_ctl_guard_port(sk_controller *c);
/* "sha256//BASE64" of the connect certificate's public key; NULL without TLS. */
const char *sk_ctl_guard_pin(sk_controller *c);

/* spaces.c: the in-memory state of each space between reconciles. */
typedef struct sk_ctl_keeper {
	sk_keeper_memory mem; /* mem.sandbox_id points into id (NULL when none) */
	char id[128];
	char replaced_id[128]; /* the sandbox the last Replace killed, "" none */
	int64_t replaced_ms;
	/* of mem.sandbox_id, as the provider's answers said: "" unknown. The
	 * token is a secret: wipe the copy after use (explicit_bzero). */
	char envd_token[512];
	char envd_version[64];
	int64_t deadline_ms; /* the deadline spacekeeper set, 0 unknown */
	bool detail_seen; /* a create, connect or get answer of it was seen */
} sk_ctl_keeper;
void sk_ctl_spaces_init(sk_controller *c);
void sk_ctl_spaces_dispose(sk_controller *c);
/* A connect or heartbeat at now_ms (wall clock). */
void sk_ctl_space_touch(sk_controller *c, const char *name, int64_t now_ms);
/* Asks the next reconcile to wake the Idle keeper / replace the unreachable one. */
void sk_ctl_space_request(sk_controller *c, const char *name, bool wake, bool replace_now);
/* Copies the activity, the requests (consumed) and what is known of the
 * keeper (env->known: copies, sk_ctl_space_known_dispose) into env. */
void sk_ctl_space_take(sk_controller *c, const char *name, sk_reconcile_env *env);
void sk_ctl_space_known_dispose(sk_reconcile_env *env);
/* What a reconcile saw (ok: it succeeded). */
void sk_ctl_space_note(sk_controller *c, const char *name, const sk_reconcile_report *r, bool ok);
void sk_ctl_space_forget(sk_controller *c, const char *name);
/* false: nothing remembered (out zeroed). */
bool sk_ctl_space_keeper(sk_controller *c, const char *name, sk_ctl_keeper *out);

/* connect.c: the connect API (see controller.h). */
typedef struct sk_http_reply {
	unsigned int status;
	char *body; /* owned */
	const char *type;
	char retry_after[24]; /* the Retry-After header when not empty */
} sk_http_reply;
#define SK_CTL_METRIC_CONNECTS "spacekeeper_connect_total"
#define SK_CTL_METRIC_CONNECT_DURATION "spacekeeper_connect_duration_seconds"
void sk_ctl_reply_json(sk_http_reply *r, unsigned int status, json_t *obj); /* takes obj */
void sk_ctl_reply_error(sk_http_reply *r, unsigned int status, const char *reason, const char *msg);
/* Where a connect came from: another replica (forwarded, never forwarded
 * again) or a caller (its Authorization header goes along to the holder).
 * NULL: a local caller without headers. */
typedef struct sk_ctl_origin {
	bool forwarded;
	const char *authorization;
} sk_ctl_origin;
#define SK_CTL_FORWARDED_HEADER "X-Spacekeeper-Forwarded-By"
/* fresh (?fresh=1, POST /v1/users/ID/unhealthy): the application saw the
 * data plane fail: no answer from memory; a reconcile probes the keeper
 * now (and, under remediation Replace, replaces an unreachable one at
 * once) and the answer is what it found. */
void sk_ctl_connect(sk_controller *c, const char *name, int64_t timeout_ms, bool fresh,
        const sk_ctl_origin *from, sk_http_reply *r);
void sk_ctl_connect_user(sk_controller *c, const char *user_id, int64_t timeout_ms, bool fresh,
        const sk_ctl_origin *from, sk_http_reply *r);
/* POST /v1/users/ID/activity: a heartbeat, 204. */
void sk_ctl_activity(
        sk_controller *c, const char *user_id, const sk_ctl_origin *from, sk_http_reply *r);

/* forward.c: the public key pin of a PEM certificate (libcurl's
 * "sha256//BASE64"; NULL when it holds none). */
char *sk_ctl_forward_pin(const char *pem, size_t len);
/* forward.c: POSTs path to the replica at addr and copies its answer
 * (HTTPS pinned to our certificate's key when connect TLS is on). */
void sk_ctl_forward(sk_controller *c, const char *addr, const char *path, int64_t timeout_ms,
        const sk_ctl_origin *from, sk_http_reply *r);
/* When another replica holds the user's shard: forwards there (or answers
 * 503 with Retry-After when none does, or when from was itself forwarded)
 * and returns true; false when this replica may act on the user. */
bool sk_ctl_forward_user(sk_controller *c, const char *user_id, const char *path,
        int64_t timeout_ms, const sk_ctl_origin *from, sk_http_reply *r);

/* metrics.c: declares every metric (at new), and the workqueue's
 * queue/work duration observer. */
void sk_ctl_metrics_declare(sk_controller *c);
void sk_ctl_observe_queue(void *payload, bool work, int64_t ms);

/* controller.c: the plan options for a space's provider. */
void sk_ctl_plan_options(sk_controller *c, const sk_userspace *us, sk_plan_options *out);
/* The envd URL a connect answer names (caller frees). */
char *sk_ctl_envd_url(sk_controller *c, const sk_userspace *us);

/* controller.c: provider requests, counted and timed per provider and endpoint. */
#define SK_CTL_METRIC_PROVIDER_REQUESTS "spacekeeper_provider_requests_total"
#define SK_CTL_METRIC_PROVIDER_DURATION "spacekeeper_provider_request_duration_seconds"
/* metrics.c: migrations by target provider and result, and bytes copied. */
#define SK_CTL_METRIC_MIGRATIONS "spacekeeper_migrations_total"
#define SK_CTL_METRIC_MIGRATION_BYTES "spacekeeper_migration_bytes_total"
void sk_ctl_observe_migration(void *payload, const char *provider, const char *what, int64_t n);
/* Reports every request of p to the controller's metrics. */
void sk_ctl_watch_provider(sk_controller *c, sk_provider *p);

/* controller.c: spacekeeper_drift_spaces{type} and
 * spacekeeper_drift_oldest_seconds{type}, from the drift each space's last
 * reconcile left (us: the object as it stands after it; NULL: gone). */
#define SK_CTL_DRIFT_TYPES 6
void sk_ctl_note_drift(sk_controller *c, const char *name, const sk_userspace *us);
/* The drift type of index t < SK_CTL_DRIFT_TYPES ("Missing", ...). */
const char *sk_ctl_drift_type(size_t t);

/* page.c: the status page (GET / and GET /spaces/NAME), HTML. */
void sk_ctl_page_index(sk_controller *c, sk_http_reply *r);
void sk_ctl_page_space(sk_controller *c, const char *name, sk_http_reply *r);

/* controller.c: sets spacekeeper_userspaces{phase,ready} from the informer's
 * cache (every phase x ready series, zeros included; inf NULL: all zero). */
#define SK_CTL_METRIC_USERSPACES "spacekeeper_userspaces"
void sk_ctl_metrics_userspaces(sk_metrics *m, sk_informer *inf);

/* controller.c: waits until a reconcile of name finishes after gen0 or the
 * deadline (monotonic ms) passes; false on timeout or stop. */
bool sk_ctl_wait_reconciled(sk_controller *c, const char *name, uint64_t gen0, int64_t deadline);
uint64_t sk_ctl_gen(sk_controller *c);

/* worker.c: the worker threads (one provider client per provider each). */
int sk_ctl_workers_start(sk_controller *c, sk_error *err);
/* After the threads were joined. */
void sk_ctl_workers_free(sk_controller *c);

#endif
