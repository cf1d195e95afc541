/*
 * sandbox: clients for E2B-compatible providers (e2b, cube, daytona) behind
 * one const vtable (curl's backend tables, libgit2's odb backends), and the
 * HTTP layer on libcurl that classifies failures once:
 *   connection errors, timeouts, 408, 429, 5xx -> SK_ETRANSIENT / SK_EUNAVAILABLE / SK_ETIMEOUT
 *   404 -> SK_ENOTFOUND; 409 -> SK_ECONFLICT; 401/403 -> SK_EUNAUTHORIZED;
 *   other 4xx -> SK_ETERMINAL. err->http_status and err->retry_after_ms are filled.
 * A capability a backend lacks returns SK_ENOTSUPPORTED.
 * A client is used by one thread at a time (it owns a curl handle); make one per worker.
 */
#ifndef SK_SANDBOX_H
#define SK_SANDBOX_H

#include "../api/api.h"

typedef enum sk_sandbox_state {
	SK_SANDBOX_UNKNOWN,
	SK_SANDBOX_RUNNING,
	SK_SANDBOX_PAUSED,
	SK_SANDBOX_TRANSITIONAL, /* starting, stopping, pausing (daytona) */
	SK_SANDBOX_GONE, /* killed / deleted / error states that will not come back */
} sk_sandbox_state;

const char *sk_sandbox_state_name(sk_sandbox_state s);

typedef struct sk_sandbox {
	char *id;
	char *template_id;
	char *alias;
	sk_sandbox_state state;
	int64_t started_ms;
	int64_t end_ms; /* running: TTL expiry; paused: time of pause */
	int cpu_count;
	int memory_mb;
	sk_kvlist metadata;
	char *domain; /* may be NULL */
	char *envd_access_token; /* may be NULL; never logged */
} sk_sandbox;

void sk_sandbox_dispose(sk_sandbox *sb);
void sk_sandbox_free(sk_sandbox *sb);
void sk_sandbox_copy(sk_sandbox *dst, const sk_sandbox *src);

typedef struct sk_sandbox_list {
	sk_sandbox *items;
	size_t len;
} sk_sandbox_list;
void sk_sandbox_list_dispose(sk_sandbox_list *l);

typedef struct sk_create_request {
	const char *template_id;
	int64_t timeout_ms; /* provider TTL */
	bool auto_pause; /* on timeout pause instead of kill */
	bool auto_resume;
	int cpu_count; /* 0: provider default */
	int memory_mb;
	const sk_kvlist *metadata;
	const sk_kvlist *env;
} sk_create_request;

/* How the data plane answered GET /health. */
typedef enum sk_health {
	SK_HEALTH_OK, /* 2xx */
	SK_HEALTH_UNREACHABLE, /* 502/503/504, timeout, connection refused */
	SK_HEALTH_ERROR, /* anything else */
} sk_health;

typedef struct sk_provider sk_provider;

/* The backend table. Every slot is required (use a function that returns
 * SK_ENOTSUPPORTED for a missing capability). */
typedef struct sk_provider_ops {
	const char *name; /* "e2b", "cube", "daytona" */
	int (*create)(sk_provider *p, const sk_create_request *req, sk_sandbox *out, sk_error *err);
	int (*get)(sk_provider *p, const char *id, sk_sandbox *out, sk_error *err);
	/* Every sandbox whose metadata holds all pairs of `match` (NULL: all),
	 * running and paused, every page. */
	int (*list)(sk_provider *p, const sk_kvlist *match, sk_sandbox_list *out, sk_error *err);
	/* Resumes a paused sandbox or extends a running one; *resumed tells which. */
	int (*connect)(sk_provider *p, const char *id, int64_t timeout_ms, sk_sandbox *out,
	        bool *resumed, sk_error *err);
	/* 409 already paused counts as success. */
	int (*pause)(sk_provider *p, const char *id, sk_error *err);
	/* 404 counts as success. */
	int (*kill)(sk_provider *p, const char *id, sk_error *err);
	int (*set_timeout)(sk_provider *p, const char *id, int64_t timeout_ms, sk_error *err);
	/* Data-plane probe; returns 0 and fills *health, or an error when the probe could not be made. */
	int (*probe_health)(sk_provider *p, const sk_sandbox *sb, sk_health *health,
	        int *http_status, sk_error *err);
} sk_provider_ops;

extern const sk_provider_ops sk_provider_e2b;
extern const sk_provider_ops sk_provider_cube;
extern const sk_provider_ops sk_provider_daytona;

/* A client for one provider entry of the config. The API key is read from the
 * entry's file or variable (never logged). */
int sk_provider_new(const sk_provider_config *cfg, sk_provider **out, sk_error *err);
void sk_provider_free(sk_provider *p);
/* A provider over custom ops (a test double): no HTTP client, no config
 * but the name "custom"; state is the backend's, borrowed. */
sk_provider *sk_provider_new_with_ops(const sk_provider_ops *ops, void *state);
void *sk_provider_get_state(const sk_provider *p);
const sk_provider_ops *sk_provider_get_ops(const sk_provider *p);
const sk_provider_config *sk_provider_get_config(const sk_provider *p);

/* Convenience wrappers that dispatch through the ops table. */
int sk_sandbox_create(sk_provider *p, const sk_create_request *req, sk_sandbox *out, sk_error *err);
int sk_sandbox_get(sk_provider *p, const char *id, sk_sandbox *out, sk_error *err);
int sk_sandbox_list_all(
        sk_provider *p, const sk_kvlist *match, sk_sandbox_list *out, sk_error *err);
int sk_sandbox_connect(sk_provider *p, const char *id, int64_t timeout_ms, sk_sandbox *out,
        bool *resumed, sk_error *err);
int sk_sandbox_pause(sk_provider *p, const char *id, sk_error *err);
int sk_sandbox_kill(sk_provider *p, const char *id, sk_error *err);
int sk_sandbox_set_timeout(sk_provider *p, const char *id, int64_t timeout_ms, sk_error *err);
int sk_sandbox_probe_health(
        sk_provider *p, const sk_sandbox *sb, sk_health *health, int *http_status, sk_error *err);

#endif
