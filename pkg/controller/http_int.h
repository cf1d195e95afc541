/*
 * http_int: HTTP and guard, private to pkg/controller. The main listener
 * (http.c: health, readiness, /metrics, the status page of page.c) and the
 * store probe behind /readyz; the connect listener (guard.c: token, TLS,
 * limits, one thread per waiting connect) and the connect API it serves
 * (connect.c). Listeners and the probe are started and stopped by the
 * controller's lifecycle; http.render_mu makes scrapes render one at a
 * time; the guard counts its waiting connects under its own mu (guard.c).
 */
#ifndef SK_CONTROLLER_HTTP_INT_H
#define SK_CONTROLLER_HTTP_INT_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>

#include "../api/selector.h"
#include "../api/userspace.h"
#include "../metrics/metrics.h"
#include "../util/util.h"
#include "controller.h"

struct sk_ctl_guard; /* guard.c */

typedef struct sk_ctl_http {
	void *daemon; /* struct MHD_Daemon* of controller.listen, NULL: none */
	int port; /* its bound port */
	struct sk_ctl_guard *guard; /* the connect API's listener (guard.c), NULL: none */
	pthread_t probe; /* pings the store for /readyz */
	bool probe_running;
	_Atomic int64_t store_ok_ms; /* monotonic ms of the last store answer, 0: none */
	pthread_mutex_t render_mu; /* scrapes render one at a time (metrics.c) */
	/* What the status page draws (each timeline locks itself). */
	sk_timeline *tl_reconcile; /* reconcile seconds per minute (worker.c) */
	sk_timeline *tl_connect; /* connect seconds per minute (connect.c) */
} sk_ctl_http;

/* An answer of either listener. */
typedef struct sk_http_reply {
	unsigned int status;
	char *body; /* owned */
	const char *type;
	char retry_after[24]; /* the Retry-After header when not empty */
} sk_http_reply;

/* Where a connect came from: another replica (forwarded, never forwarded
 * again) or a caller (its Authorization header goes along to the holder).
 * NULL: a local caller without headers. */
typedef struct sk_ctl_origin {
	bool forwarded;
	const char *authorization;
	/* The caller's token (tokens.c): its name, and the spaces it reaches
	 * (NULL: every space). Both live as long as the guard. */
	const char *token;
	const sk_selector *scope;
} sk_ctl_origin;
#define SK_CTL_FORWARDED_HEADER "X-Spacekeeper-Forwarded-By"

/* http.c: the main listener (controller.listen), then the connect
 * listener (guard.c) and the store probe; stop undoes all three. */
int sk_ctl_http_start(sk_controller *c, sk_error *err);
void sk_ctl_http_stop(sk_controller *c);
/* HOST:PORT -> an IPv4 socket address. */
struct sockaddr_in;
int sk_ctl_parse_listen(const char *listen, struct sockaddr_in *sa, sk_error *err);
/* The one segment between prefix and suffix of a URL path, e.g.
 * "/spaces/NAME" or "/v1/userspaces/NAME/connect" -> NAME (caller frees), else NULL. */
char *sk_ctl_path_segment(const char *url, const char *prefix, const char *suffix);

/* guard.c: the connect API on controller.connectListen: bearer token,
 * optional TLS, limits, connects waiting in their own threads. */
int sk_ctl_guard_start(sk_controller *c, sk_error *err);
/* Waits for the connects in progress (they end on stop), then closes. */
void sk_ctl_guard_stop(sk_controller *c);
int sk_ctl_guard_port(sk_controller *c);
/* "sha256//BASE64" of the connect certificate's public key; NULL without TLS. */
const char *sk_ctl_guard_pin(sk_controller *c);

/* connect.c: the connect API (see controller.h). */
#define SK_CTL_METRIC_CONNECTS "spacekeeper_connect_total"
/* Reconciles by how they learnt the bound sandbox's state (sk_look). */
#define SK_CTL_METRIC_LOOKS "spacekeeper_observe_looks_total"
#define SK_CTL_METRIC_CONNECT_DURATION "spacekeeper_connect_duration_seconds"
void sk_ctl_reply_json(sk_http_reply *r, unsigned int status, json_t *obj); /* takes obj */
void sk_ctl_reply_error(sk_http_reply *r, unsigned int status, const char *reason, const char *msg);
/* fresh (?fresh=1, POST /v1/users/ID/unhealthy): the application saw the
 * data plane fail: no answer from memory; a reconcile probes the keeper
 * now (and, under remediation Replace, replaces an unreachable one at
 * once) and the answer is what it found. */
void sk_ctl_connect(sk_controller *c, const char *name, int64_t timeout_ms, bool fresh,
        const sk_ctl_origin *from, sk_http_reply *r);
void sk_ctl_connect_user(sk_controller *c, const char *user_id, int64_t timeout_ms, bool fresh,
        const sk_ctl_origin *from, sk_http_reply *r);
/* The fast path without a thread of its own (the listener's): true with the
 * answer in r when the space is within the caller's token scope, this
 * replica holds the user's shard and the keeper is known ready
 * (sk_connect_decide: READY, its envd details known); false, r untouched,
 * otherwise (starting, out of scope, forward, fresh, any slow path): then
 * sk_ctl_connect or sk_ctl_connect_user, in a thread, decide.
 * by_user: arg is a userID, else a UserSpace name. */
bool sk_ctl_connect_fast(sk_controller *c, const char *arg, bool by_user, const sk_ctl_origin *from,
        sk_http_reply *r);
/* POST /v1/users/ID/activity: a heartbeat, 204. */
void sk_ctl_activity(
        sk_controller *c, const char *user_id, const sk_ctl_origin *from, sk_http_reply *r);

/* tokens.c: the connect API's bearer tokens (connectTokenFile and
 * connectTokens), reloaded when their files change. *out NULL when none is
 * configured. */
typedef struct sk_ctl_tokens sk_ctl_tokens;
int sk_ctl_tokens_new(sk_controller *c, sk_ctl_tokens **out, sk_error *err);
void sk_ctl_tokens_free(sk_ctl_tokens *t);
/* An Authorization header value against every token in constant time: true
 * with from->token and from->scope set when one matches. */
bool sk_ctl_tokens_check(
        sk_controller *c, sk_ctl_tokens *t, const char *authorization, sk_ctl_origin *from);
/* Whether the caller's token reaches us (counted per token when not). */
bool sk_ctl_in_scope(sk_controller *c, const sk_ctl_origin *from, const sk_userspace *us);

/* page.c: the status page (GET / and GET /spaces/NAME), HTML. */
void sk_ctl_page_index(sk_controller *c, sk_http_reply *r);
void sk_ctl_page_space(sk_controller *c, const char *name, sk_http_reply *r);

#endif
