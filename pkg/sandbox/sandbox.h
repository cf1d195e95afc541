/*
 * sandbox: clients for E2B-compatible providers (e2b, cube, daytona) behind
 * one const vtable (curl's backend tables, libgit2's odb backends), on the
 * shared HTTP client (pkg/httpc), whose classifier decides failures once:
 *   connection errors, timeouts, 408, 429, 5xx -> SK_ETRANSIENT / SK_EUNAVAILABLE / SK_ETIMEOUT
 *   404 -> SK_ENOTFOUND; 409 -> SK_ECONFLICT; 401/403 -> SK_EUNAUTHORIZED;
 *   other 4xx -> SK_ETERMINAL. err->http_status and err->retry_after_ms are filled.
 * A capability a backend lacks returns SK_ENOTSUPPORTED.
 * A client is used by one thread at a time (it owns a curl handle); make one per worker.
 */
#ifndef SK_SANDBOX_H
#define SK_SANDBOX_H

#include "../api/config.h"
#include "../api/kvlist.h"
#include "../api/network.h"
#include "../api/sandbox_values.h"

/* The sandbox value types (sk_sandbox, sk_sandbox_list, sk_create_request,
 * sk_health) are in api/sandbox_values.h: the planner uses them without the clients. */

typedef struct sk_provider sk_provider;

/* ---- workspace files in a sandbox's data plane ----
 * E2B/Cube: envd filesystem.Filesystem (Connect protocol, JSON codec) and
 * GET/POST /files; Daytona: the toolbox file API. Contents are streamed
 * through callbacks, never held whole in memory. */
typedef enum sk_file_type {
	SK_FILE_REGULAR,
	SK_FILE_DIR,
	SK_FILE_SYMLINK,
	SK_FILE_OTHER /* device, fifo, socket: listed, never copied */
} sk_file_type;

typedef struct sk_file_entry {
	char *path; /* absolute, no trailing slash */
	sk_file_type type;
	uint64_t size; /* bytes (regular files) */
	uint32_t mode; /* permission bits, 07777 mask */
	char *link_target; /* symlinks: the target as stored; else NULL */
} sk_file_entry;

typedef struct sk_file_list {
	sk_file_entry *items;
	size_t len, cap;
} sk_file_list;

void sk_file_list_free(sk_file_list *l);

/* A read's sink: called with each chunk in order; a negative SK_E* stops the read. */
typedef int (*sk_file_sink_fn)(void *payload, const void *buf, size_t len);
/* A write's source: fills buf with up to len bytes; returns the count, 0 at
 * the end, or a negative SK_E* to abort. */
typedef int64_t (*sk_file_source_fn)(void *payload, void *buf, size_t len);

/* ---- persistent snapshots (E2B's SnapshotInfo) ----
 * A snapshot outlives the sandbox it was taken from; a create whose
 * template_id is its ID starts a sandbox from it. */
typedef struct sk_snapshot {
	char *id; /* snapshotID, also the template ID to start from */
	char **names; /* n_names */
	size_t n_names;
	char *sandbox_id; /* the sandbox it was taken from, when known; else NULL */
	int64_t created_ms; /* when the provider says (createdAt); else 0 */
} sk_snapshot;

typedef struct sk_snapshot_list {
	sk_snapshot *items;
	size_t len;
} sk_snapshot_list;

void sk_snapshot_dispose(sk_snapshot *s); /* NULL-safe */
void sk_snapshot_list_dispose(sk_snapshot_list *l);

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
	/* Re-asserts the sandbox-wide env through envd POST /init (merged by key; with
	 * the envd access token when sb has one). Values never appear in err. */
	int (*init_env)(sk_provider *p, const sk_sandbox *sb, const sk_kvlist *env, sk_error *err);
	/* Workspace files (the migration's copy; optional slots: NULL answers
	 * SK_ENOTSUPPORTED through the wrappers below). */
	int (*list_files)(sk_provider *p, const sk_sandbox *sb, const char *root, sk_file_list *out,
	        sk_error *err);
	int (*read_file)(sk_provider *p, const sk_sandbox *sb, const char *path,
	        sk_file_sink_fn sink, void *payload, sk_error *err);
	int (*write_file)(sk_provider *p, const sk_sandbox *sb, const sk_file_entry *entry,
	        sk_file_source_fn source, void *payload, sk_error *err);
	/* Processes started through the data plane that still run (envd's
	 * process.Process/List; optional: NULL answers SK_ENOTSUPPORTED). */
	int (*list_processes)(sk_provider *p, const sk_sandbox *sb, int *running, sk_error *err);
	/* Applies spec.network to a live sandbox (E2B's PUT .../network;
	 * optional: NULL answers SK_ENOTSUPPORTED, the policy then changes by
	 * migration). */
	int (*set_network)(sk_provider *p, const char *id, const sk_network *n, sk_error *err);
	/* A volume by name, made when missing (E2B team volumes; optional: NULL
	 * answers SK_ENOTSUPPORTED, a space then runs without its volume). *id
	 * is the provider's ID, the caller frees it. */
	int (*ensure_volume)(sk_provider *p, const char *name, char **id, sk_error *err);
	/* Deletes the volume of that name; none of that name counts as success. */
	int (*delete_volume)(sk_provider *p, const char *name, sk_error *err);
	/* A new running sandbox with the files of source_id, which keeps
	 * running untouched (E2B's POST /sandboxes/{id}/fork; optional: NULL
	 * answers SK_ENOTSUPPORTED). E2B's fork sets no metadata: the fork is
	 * untagged, so the caller binds it by its ID (see docs/architecture.md,
	 * Crash-safe create). */
	int (*fork)(sk_provider *p, const char *source_id, int64_t timeout_ms, sk_sandbox *out,
	        sk_error *err);
	/* A persistent snapshot of a running or paused sandbox, name NULL: the
	 * provider's own (optional: NULL answers SK_ENOTSUPPORTED). */
	int (*create_snapshot)(sk_provider *p, const char *sandbox_id, const char *name,
	        sk_snapshot *out, sk_error *err);
	/* The snapshots taken of sandbox_id (NULL: every one the key sees), every
	 * page, oldest first (optional with create_snapshot). */
	int (*list_snapshots)(
	        sk_provider *p, const char *sandbox_id, sk_snapshot_list *out, sk_error *err);
	/* Deletes a snapshot (E2B: DELETE /templates/{snapshotID}); one already
	 * gone counts as success (optional with create_snapshot). */
	int (*delete_snapshot)(sk_provider *p, const char *snapshot_id, sk_error *err);
} sk_provider_ops;

extern const sk_provider_ops sk_provider_e2b;
extern const sk_provider_ops sk_provider_cube;
extern const sk_provider_ops sk_provider_daytona;

/* A client for one provider entry of the config. The API key is read from the
 * entry's file or variable (never logged). Every error names the provider
 * ("provider NAME: ..."). */
int sk_provider_new(const sk_provider_config *cfg, sk_provider **out, sk_error *err);
void sk_provider_free(sk_provider *p);
/* A provider over custom ops (a test double): no HTTP client, no config
 * but the name "custom"; state is the backend's, borrowed. */
sk_provider *sk_provider_new_with_ops(const sk_provider_ops *ops, void *state);
void *sk_provider_get_state(const sk_provider *p);
const sk_provider_ops *sk_provider_get_ops(const sk_provider *p);
const sk_provider_config *sk_provider_get_config(const sk_provider *p);

/* Every HTTP request of a client, reported when it ends (client-go's
 * rest_client_requests_total and its latency): the provider entry's name, the
 * endpoint (sk_sandbox_http_endpoint), the HTTP status (0: no answer, a
 * transport error) and the seconds it took. Called on the client's thread. */
typedef void (*sk_provider_observer_fn)(
        void *payload, const char *provider, const char *endpoint, int status, double seconds);
/* fn NULL: none (the default). */
void sk_provider_set_observer(sk_provider *p, sk_provider_observer_fn fn, void *payload);
/* A stop hook: asked before each request and while one runs (curl's progress
 * callback, at least about once a second); true aborts the request at once
 * with SK_EUNAVAILABLE, "... aborted: the client is stopping" (a controller
 * bounds its shutdown with it). Called on the client's thread. fn NULL: none. */
typedef bool (*sk_provider_abort_fn)(void *payload);
void sk_provider_set_abort(sk_provider *p, sk_provider_abort_fn fn, void *payload);
/* A request's endpoint with a bounded set of values: "METHOD /path" without
 * the scheme, host and query, the segment after "sandboxes"/"sandbox"/"toolbox"/"volumes"
 * written ":id" and numeric segments ":n" ("POST /sandboxes/:id/pause",
 * "GET /toolbox/:id/files/download"). */
void sk_sandbox_http_endpoint(const char *method, const char *path_or_url, char *out, size_t len);

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
/* ops->set_network, SK_ENOTSUPPORTED without one. */
int sk_sandbox_set_network(sk_provider *p, const char *id, const sk_network *n, sk_error *err);
/* Whether the provider changes a live sandbox's network policy. */
bool sk_sandbox_network_live(const sk_provider *p);
/* ops->ensure_volume and ->delete_volume, SK_ENOTSUPPORTED without them. */
int sk_sandbox_ensure_volume(sk_provider *p, const char *name, char **id, sk_error *err);
int sk_sandbox_delete_volume(sk_provider *p, const char *name, sk_error *err);
bool sk_sandbox_has_volumes(const sk_provider *p);
/* ops->fork, SK_ENOTSUPPORTED without one. */
int sk_sandbox_fork(
        sk_provider *p, const char *source_id, int64_t timeout_ms, sk_sandbox *out, sk_error *err);
bool sk_sandbox_can_fork(const sk_provider *p);
/* ops->create_snapshot and ->list_snapshots; SK_ENOTSUPPORTED without them,
 * with a message naming the provider type. */
int sk_sandbox_create_snapshot(
        sk_provider *p, const char *sandbox_id, const char *name, sk_snapshot *out, sk_error *err);
int sk_sandbox_list_snapshots(
        sk_provider *p, const char *sandbox_id, sk_snapshot_list *out, sk_error *err);
bool sk_sandbox_has_snapshots(const sk_provider *p);
/* ops->delete_snapshot; SK_ENOTSUPPORTED without one. */
int sk_sandbox_delete_snapshot(sk_provider *p, const char *snapshot_id, sk_error *err);
/* A create that starts from snapshot_id (req's template replaced by it). */
int sk_sandbox_create_from_snapshot(sk_provider *p, const sk_create_request *req,
        const char *snapshot_id, sk_sandbox *out, sk_error *err);
int sk_sandbox_probe_health(
        sk_provider *p, const sk_sandbox *sb, sk_health *health, int *http_status, sk_error *err);
/* The envd base URL of a sandbox (no trailing slash): https://49983-ID.DOMAIN,
 * or the entry's sandboxURL, where the sandbox is named by the headers
 * E2b-Sandbox-Id: ID and E2b-Sandbox-Port: 49983 (SK_ENVD_PORT). domain NULL:
 * the entry's. Caller frees. */
#define SK_ENVD_PORT 49983
#define SK_ENVD_PORT_STRING "49983" /* the same, for headers and JSON */
char *sk_sandbox_envd_url(const sk_provider_config *pc, const char *sandbox_id, const char *domain);
/* envd POST /init with env (re-asserts the sandbox-wide environment after a
 * create or resume). Values are never logged. SK_ENOTSUPPORTED without envd. */
int sk_sandbox_init_env(sk_provider *p, const sk_sandbox *sb, const sk_kvlist *env, sk_error *err);

/* How many processes started through the sandbox's data plane still run
 * (envd process.Process/List, with the envd access token when sb has one).
 * SK_ENOTSUPPORTED without it (Daytona). Data plane, not the provider API. */
int sk_sandbox_list_processes(sk_provider *p, const sk_sandbox *sb, int *running, sk_error *err);

/* Every entry under root (root itself excluded), depth first, parents before
 * their children; symlinks are listed, not followed. SK_ENOTFOUND: no root. */
int sk_sandbox_list_files(
        sk_provider *p, const sk_sandbox *sb, const char *root, sk_file_list *out, sk_error *err);
/* A regular file's bytes, streamed to sink. */
int sk_sandbox_read_file(sk_provider *p, const sk_sandbox *sb, const char *path,
        sk_file_sink_fn sink, void *payload, sk_error *err);
/* Creates entry->path as entry says, parents made as needed: a regular file
 * of entry->size bytes from source (replacing one that exists), a directory,
 * or a symlink to entry->link_target; then sets entry->mode (not for
 * symlinks). source is NULL except for regular files. SK_EINVALID for
 * SK_FILE_OTHER. */
int sk_sandbox_write_file(sk_provider *p, const sk_sandbox *sb, const sk_file_entry *entry,
        sk_file_source_fn source, void *payload, sk_error *err);

/* ---- the workspace copy engine (workspace.c) ---- */
typedef struct sk_copy_options {
	const char *const *paths;
	size_t npaths; /* roots to copy (absolute) */
	uint64_t max_bytes; /* 0: no limit; over it -> SK_ETERMINAL before copying anything */
	size_t chunk_bytes; /* streaming buffer; 0: 1 MiB */
	int attempts; /* per file, transient errors retried; 0: 3 */
} sk_copy_options;

typedef struct sk_copy_report {
	uint64_t files_total, files_done, bytes_total, bytes_done;
	sk_file_list skipped; /* special files, not copied */
	char *mismatch; /* verify: first differing path and why; NULL when equal */
} sk_copy_report;

typedef void (*sk_copy_progress_fn)(void *payload, const sk_copy_report *r);

/* Lists src's paths, checks max_bytes, then copies dirs, files (streamed src->dst,
 * never a whole file in memory), symlinks and modes; progress after each file. */
int sk_workspace_copy(sk_provider *src, const sk_sandbox *src_sb, sk_provider *dst,
        const sk_sandbox *dst_sb, const sk_copy_options *opt, sk_copy_progress_fn progress,
        void *payload, sk_copy_report *report, sk_error *err);
/* Lists both sides: same entries, types, sizes, modes, link targets, and a SHA-256 of
 * every regular file read back from each side. SK_ECONFLICT with report->mismatch set
 * when they differ. */
int sk_workspace_verify(sk_provider *src, const sk_sandbox *src_sb, sk_provider *dst,
        const sk_sandbox *dst_sb, const sk_copy_options *opt, sk_copy_report *report,
        sk_error *err);
void sk_copy_report_free(sk_copy_report *r);

#endif
