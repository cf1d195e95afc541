/*
 * controller: the spacekeeper daemon's core (docs/architecture.md).
 *
 *   informer (store poll) --keys--> workqueue --> N workers --> sk_reconcile
 *   observer: every resync period lists each provider's managed sandboxes
 *             (managed_by=spacekeeper, all pages), groups them by user_id for
 *             the workers, reports orphans (kills them only with
 *             deleteOrphans), and enqueues every UserSpace.
 *   HTTP (libmicrohttpd): /healthz, /readyz, /metrics and the status page on
 *             controller.listen (http.c); the platform's connect API
 *             (connect.c) on controller.connectListen alone, behind a bearer
 *             token, TLS and limits (guard.c):
 *               POST /v1/userspaces/{name}/connect[?timeout=30s]
 *               GET  /v1/users/{userID}/sandbox[?timeout=30s]
 *               POST /v1/users/{userID}/activity    (heartbeat, 204)
 *             answered from memory when the keeper was probed healthy lately,
 *             else after a reconcile (wake, create, replace) once it is ready:
 *             200 {"name","userID","sandboxID","state","ready","envdURL",
 *             "path"}; 404 unknown; 503 {"reason"} at once when it cannot
 *             become ready by waiting (Paused mode, deleting, a known
 *             unreachable keeper with remediation Report); 504 on timeout;
 *             400 for a bad timeout. sk_connect_decide makes the decision.
 * Each worker owns one provider client per configured provider (clients are
 * single-thread). Library code never prints: logs go to the injected sk_log_fn.
 */
#ifndef SK_CONTROLLER_H
#define SK_CONTROLLER_H

#include "../api/config.h"
#include "../util/util.h"

typedef struct sk_controller sk_controller;

typedef struct sk_controller_options {
	const sk_controller_config *config; /* borrowed; must outlive the controller */
	sk_log_fn log; /* may be NULL */
	void *log_payload;
	int64_t poll_ms; /* informer poll, default 1000 */
	int64_t relist_ms; /* informer relist, default 1 min */
	bool serve_http; /* serve config->listen (start only) */
	/* The lowest level log writes: a line below it is neither formatted nor
	 * handed over (debug lines on hot paths cost nothing at info). Default
	 * SK_LOG_DEBUG: every line reaches log, which may filter again. */
	sk_log_level log_level;
} sk_controller_options;
#define SK_CONTROLLER_OPTIONS_INIT                                                                 \
	{                                                                                          \
		NULL, NULL, NULL, 1000, 60000, true, SK_LOG_DEBUG                                  \
	}

/* Prepares the store (without contacting it) and one provider client per
 * provider for the observer (plus one per worker per provider at start).
 * Fails on a bad provider entry (e.g. a missing API key) or a bad URI. */
int sk_controller_new(sk_controller **out, const sk_controller_options *opts, sk_error *err);
/* NULL-safe; stops first when running. */
void sk_controller_free(sk_controller *c);

/* Starts HTTP (when asked) and returns; a start-up thread then, once the
 * database answers, starts the informer, waits for its first list (up to
 * 30 s), makes one observer pass, and starts the workers and the observer
 * thread (logged as "controller started"), so that a stop is never held up
 * by a slow start. A database that does not answer is not an error: start
 * logs "database unavailable" and the thread retries with backoff (1 s
 * doubling to 30 s); /healthz answers 200 and /readyz 503 meanwhile (and for
 * good, logged as "start failed", when a later step fails for another
 * reason). An error only for what fails at once: the listener, a database
 * that refuses (not one that is away). */
int sk_controller_start(sk_controller *c, sk_error *err);
/* Stop: in-flight reconciles get GRACE_MS to finish their provider calls;
 * calls still running then are aborted (the state is as after a crash, which
 * the next start repairs). The observer's list is abandoned at once. What
 * the grace cut short is then written (a failed create's status and event)
 * within WRITE_MS: spacekeeper exits when a stop runs past both (a database
 * that stopped answering mid-write), inside docs/operations.md's promise
 * (SIGTERM exits within 10 s). */
#define SK_CONTROLLER_STOP_GRACE_MS 5000
#define SK_CONTROLLER_STOP_WRITE_MS 4000

/* Graceful stop, bounded: no new work from the call on (the queue is shut,
 * keys taken but not started are dropped, a provider list in progress is
 * abandoned), in-flight reconciles get SK_CONTROLLER_STOP_GRACE_MS (5 s)
 * before their provider calls are aborted, threads joined; what was left is
 * logged ("stopping", "reconcile abandoned", "provider list abandoned"). */
void sk_controller_stop(sk_controller *c);

/* One full pass (spacekeeper --once): list, observe, reconcile every key
 * until the queue is drained and nothing delayed is due within settle_ms,
 * then stop. Returns 0, SK_EUNAVAILABLE at once when the database does not
 * answer, SK_ETIMEOUT after timeout_ms, or SK_ERROR when the last reconcile
 * of some key failed (err names how many). */
int sk_controller_run_once(sk_controller *c, int64_t settle_ms, int64_t timeout_ms, sk_error *err);

/* Started: the informer synced, the first shard round done, the workers
 * running, and the store answering lately (what /readyz answers). */
bool sk_controller_ready(sk_controller *c);
/* Prometheus text of every metric. */
void sk_controller_render_metrics(sk_controller *c, sk_buf *out);

#endif
