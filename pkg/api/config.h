/*
 * api/config: the ControllerConfig (manifests/config/): the file, its defaults,
 * and the keys and tokens it names.
 */
#ifndef SK_API_CONFIG_H
#define SK_API_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/util.h"
#include "errlist.h"

typedef enum sk_provider_type {
	SK_PROVIDER_E2B,
	SK_PROVIDER_CUBE,
	SK_PROVIDER_DAYTONA,
} sk_provider_type;

typedef struct sk_provider_config {
	char *name;
	sk_provider_type type;
	char *api_url;
	char *sandbox_url; /* NULL: https://{port}-{sandboxID}.{domain} */
	char *domain; /* default "e2b.app" */
	char *api_key_env; /* name of the variable, never the key */
	char *api_key_file; /* path, never the key */
	int max_in_flight; /* default 64 */
	double qps; /* default 200 */
	int burst; /* default 400 */
	int64_t request_timeout_ms; /* default 30s */
	int64_t sandbox_timeout_ms; /* provider TTL set on create/connect, default 1h */
	bool insecure_skip_tls_verify;
	bool delete_orphans; /* default false */
	int64_t orphan_grace_ms; /* default 10m */
	/* capacity: what the provider's plan allows (0: unlimited). Connects
	 * waiting for a slot beyond max_queued get 429 (default 1000). */
	int max_running; /* capacity.maxRunning */
	double creates_per_second; /* capacity.createsPerSecond: creates and resumes */
	int max_queued; /* capacity.maxQueued */
	int64_t evict_after_ms; /* capacity.evictAfter: a space connected to within it stays (1m) */
	int64_t learned_for_ms; /* capacity.learnedFor: how long a cap the provider's 429 showed stands (5m) */
	/* price (optional): per sandbox-hour running and paused */
	bool has_price;
	double price_running_per_hour;
	double price_paused_per_hour;
	/* How long the provider keeps a paused sandbox before it deletes it
	 * (E2B: 720h); 0 (default): not known, kept forever. */
	int64_t paused_retention_ms;
} sk_provider_config;

/* One entry of controller.connectTokens: a tenant's bearer token (read from
 * file, reloaded when it changes) that reaches only the UserSpaces its
 * label selector matches. */
typedef struct sk_connect_token_config {
	char *name; /* DNS-1123 label, unique; the metrics' token label */
	char *file; /* path, never the token */
	char *selector; /* a label selector (kubectl -l syntax), not empty */
} sk_connect_token_config;

/* archive: the object storage of spaces' workspaces (config_archive.c). */
typedef struct sk_archive_config {
	char *endpoint; /* http(s) URL of an S3-compatible server */
	char *bucket;
	char *region; /* default us-east-1 */
	char *prefix; /* key prefix, default "spaces": PREFIX/USERID/GENERATION/ */
	char *access_key_file; /* paths, never the keys */
	char *secret_key_file;
	/* complete generations kept besides the newest when a user's archives
	 * are pruned (sk_archive_prune), default 1, 0..1000 */
	int keep_generations;
} sk_archive_config;

typedef struct sk_controller_config {
	char *mongodb_uri; /* default mongodb://127.0.0.1:27017 */
	char *database; /* default spacekeeper */
	sk_provider_config *providers;
	size_t n_providers;
	int workers; /* default 8 */
	int64_t resync_ms; /* default 30s */
	char *listen; /* default 127.0.0.1:9090: /healthz /readyz /metrics, status page */
	/* The connect API's own listener (docs/operations.md, "Securing the connect API"). */
	char *connect_listen; /* default 127.0.0.1:9091; "" switches the connect API off */
	char *connect_token_file; /* path of the bearer token, never the token */
	sk_connect_token_config *connect_tokens; /* scoped tokens (config_tokens.c) */
	size_t n_connect_tokens;
	bool connect_insecure; /* allow no token on a non-loopback connectListen */
	char *connect_tls_cert_file; /* PEM; with connect_tls_key_file: HTTPS */
	char *connect_tls_key_file;
	int connect_max_waiting; /* connects in progress at once, default 1024; beyond: 429 */
	int connect_max_connections; /* open connections, default 16384 */
	int connect_max_per_ip; /* open connections per client address, 0 (default): no cap */
	int64_t store_unavailable_after_ms; /* /readyz 503 after this long unreachable, 30s */
	/* Replicas (controller.shards ...): spaces are split into `shards`
	 * shards by a hash of spec.userID; each replica holds leases on some. */
	int shards; /* default 64 */
	char *identity; /* "" (default): HOSTNAME-PID, decided by the binary */
	int64_t lease_duration_ms; /* default 15s */
	int64_t renew_deadline_ms; /* default 10s */
	int64_t retry_period_ms; /* default 2s */
	char *advertise_address; /* HOST:PORT others forward connects to; "": listen */
	sk_archive_config *archive; /* NULL: no archive configured */
} sk_controller_config;

/* Parses and validates a config file (errors with path and file:line:col). */
int sk_config_load(const char *path, sk_controller_config **out, sk_errlist *errs, sk_error *err);
/* Defaults only: one e2b provider "default" at http://127.0.0.1:3000. */
sk_controller_config *sk_config_default(void);

void sk_config_free(sk_controller_config *c);
const sk_provider_config *sk_config_provider(const sk_controller_config *c, const char *name);
/* Reads the key from the named file or variable. Caller frees. NULL + err
 * (naming the provider) when missing or unreadable. */
char *sk_provider_api_key(const sk_provider_config *p, sk_error *err);
/* True, with a message in msg, when the provider's apiKeyFile can be read or
 * written by group or others (as ssh warns about keys); the key is still
 * used. False when fine, when there is no file or it cannot be stat'ed. */
bool sk_provider_key_file_warning(const sk_provider_config *p, char *msg, size_t len);
/* The connect API's bearer token from connectTokenFile (trailing newline and
 * blanks stripped; one line, no control bytes). Caller frees. NULL + err when
 * the file cannot be read or is empty; NULL without error when none is set. */
char *sk_config_connect_token(const sk_controller_config *c, sk_error *err);
/* As sk_provider_key_file_warning, for connectTokenFile. */
bool sk_config_connect_token_warning(const sk_controller_config *c, char *msg, size_t len);
/* A token file's one line (as sk_config_connect_token); what names the file
 * in errors ("connect token file"). Caller frees. */
char *sk_config_token_read(const char *path, const char *what, sk_error *err);
/* The archive's keys from their files (caller frees both; never logged). */
int sk_config_archive_keys(const sk_archive_config *a, char **access, char **secret, sk_error *err);
/* The name controller.connectTokenFile's token has in metrics. */
#define SK_CONNECT_TOKEN_ALL "all"
/* Whether a HOST:PORT listens on loopback only (127.0.0.0/8, localhost, ""). */
bool sk_config_listen_is_loopback(const char *listen);

#endif
