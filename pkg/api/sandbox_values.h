/*
 * api/sandbox_values (sandbox.c): what a provider reports about a sandbox and
 * is asked for. The provider clients that fill them are in pkg/sandbox.
 */
#ifndef SK_API_SANDBOX_VALUES_H
#define SK_API_SANDBOX_VALUES_H

#include <jansson.h>

#include "../util/util.h"
#include "kvlist.h"
#include "network.h"

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
	char *envd_version; /* envd's version the provider reports ("0.2.0"), may be NULL */
	/* The network policy the provider reports in its detail (E2B, Daytona;
	 * not in lists, not Cube): network_known says it did. */
	sk_network network;
	bool network_known;
} sk_sandbox;

void sk_sandbox_dispose(sk_sandbox *sb);
void sk_sandbox_free(sk_sandbox *sb);
void sk_sandbox_copy(sk_sandbox *dst, const sk_sandbox *src);
/* The sandbox as a JSON object and back (a shared provider list is stored
 * so). The envd access token is left out: it is a secret. */
json_t *sk_sandbox_to_json(const sk_sandbox *sb);
int sk_sandbox_from_json(const json_t *j, sk_sandbox *out, sk_error *err);

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
	const sk_network *network; /* spec.network; NULL or unset: the provider's default */
	/* spec.storage.volume: the volume mounted at volume_mount (both NULL: none);
	 * the executor makes it first (sk_sandbox_ensure_volume) */
	const char *volume_name;
	const char *volume_mount;
} sk_create_request;

/* How the data plane answered GET /health. */
typedef enum sk_health {
	SK_HEALTH_OK, /* 2xx */
	SK_HEALTH_UNREACHABLE, /* 502/503/504, timeout, connection refused */
	SK_HEALTH_ERROR, /* anything else */
} sk_health;

#endif
