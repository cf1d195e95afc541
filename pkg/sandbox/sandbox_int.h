/*
 * sandbox_int: declarations shared by the sandbox backends (private).
 * The provider's side of the HTTP client (http.c, on pkg/httpc), the
 * provider object, and the E2B functions that the cube backend reuses.
 */
#ifndef SK_SANDBOX_INT_H
#define SK_SANDBOX_INT_H

#include "../httpc/httpc.h"
#include "sandbox.h"

#define SK_HTTP_MAX_BODY SK_HTTPC_MAX_BODY
#define SK_LIST_MAX_PAGES 2000
/* The data-plane probe gives up sooner than API calls (a hung envd is the symptom). */
#define SK_PROBE_TIMEOUT_MAX_MS 5000

/* A provider's HTTP client: the shared one (httpc, one easy handle kept
 * across requests) with the provider's base URL, its key header and its
 * request metrics. */
typedef struct sk_http {
	sk_httpc c;
	char *base_url; /* no trailing slash */
	char *auth_header; /* "X-API-Key: ..." or "Authorization: Bearer ..."; never logged */
	int64_t timeout_ms;
	sk_provider_observer_fn observe; /* NULL: none */
	void *observe_payload;
	const char *observe_name; /* the provider entry's name */
} sk_http;

typedef struct sk_http_response {
	long status;
	sk_buf body;
	char *next_token; /* X-Next-Token header, NULL when absent */
	int64_t retry_after_ms;
} sk_http_response;

/* A request: path is appended to base_url unless url is given (absolute). */
typedef struct sk_http_request {
	const char *method; /* GET POST DELETE PUT */
	const char *path; /* "/sandboxes/abc" (with query) */
	const char *url; /* absolute URL overriding base_url + path */
	const char *const *headers; /* extra "K: V" lines, NULL-terminated, may be NULL */
	const char *body; /* JSON body or NULL */
	bool auth; /* send the API key header */
	int64_t timeout_ms; /* 0: the client's request timeout */
} sk_http_request;

/* The auth header is auth_prefix + key ("X-API-Key: " + key); no header when key is NULL. */
int sk_http_init(sk_http *h, const char *base_url, const char *auth_prefix, const char *key,
        int64_t timeout_ms, bool insecure, sk_error *err);
void sk_http_dispose(sk_http *h);
void sk_http_response_dispose(sk_http_response *r);

/* Performs the request. Returns 0 when an HTTP answer arrived (any status; see
 * resp->status) or a classified transport error (SK_EUNAVAILABLE, SK_ETIMEOUT,
 * SK_ENOMEM for an oversized body). */
int sk_http_do(sk_http *h, const sk_http_request *req, sk_http_response *resp, sk_error *err);
/* A status as an error (httpc's classifier): 2xx -> 0, else the SK_E*
 * code with err->http_status, err->retry_after_ms and a message naming the
 * method, the path and the provider's `message`, the key redacted. */
int sk_http_classify(
        sk_http *h, const sk_http_request *req, const sk_http_response *resp, sk_error *err);
/* sk_http_do + sk_http_classify; on success *json (when non-NULL) holds the
 * parsed body (NULL for an empty body). A 2xx body that is not JSON: SK_EINVALID. */
int sk_http_json(
        sk_http *h, const sk_http_request *req, long *status, json_t **json, sk_error *err);
/* A streamed request (workspace files): a 2xx response body goes to sink
 * chunk by chunk (another status's body is kept in resp->body, capped, for
 * sk_http_classify); with source, the request body is size bytes read from
 * it (Content-Length, no Content-Type unless req->headers gives one), or,
 * with mime_name, the one part of a multipart/form-data body. No
 * total timeout: a transfer fails when no byte moves for the request
 * timeout. A callback's negative SK_E* is returned with a message naming
 * the request. */
typedef struct sk_http_stream {
	sk_file_sink_fn sink;
	void *sink_payload;
	sk_file_source_fn source;
	void *source_payload;
	uint64_t size;
	const char *mime_name, *mime_filename; /* multipart: the part's name and filename */
} sk_http_stream;
int sk_http_stream_do(sk_http *h, const sk_http_request *req, sk_http_stream *st,
        sk_http_response *resp, sk_error *err);
/* URL-escapes s (caller frees with free()). */
char *sk_http_escape(sk_http *h, const char *s);

struct sk_provider {
	const sk_provider_ops *ops;
	sk_provider_config cfg; /* deep copy */
	sk_http http;
	void *state; /* sk_provider_new_with_ops: the custom backend's */
	char *toolbox_url; /* daytona: the toolbox proxy URL, asked once */
};

/* Shared decoding. A backend's state strings: a table ended by a NULL name;
 * a string not in it (or NULL) is SK_SANDBOX_UNKNOWN. */
typedef struct sk_state_name {
	const char *name;
	sk_sandbox_state state;
} sk_state_name;
extern const sk_state_name sk_e2b_states[]; /* E2B and CubeSandbox */
sk_sandbox_state sk_sandbox_state_parse(const sk_state_name *names, const char *s);
int sk_e2b_decode(const json_t *j, sk_sandbox *out, sk_sandbox_state dflt, sk_error *err);
/* GET path, answered with a JSON array: *arr (decref it) and *next, the
 * X-Next-Token (NULL on the last page; free it). */
int sk_e2b_get_page(sk_provider *p, const char *path, json_t **arr, char **next, sk_error *err);
bool sk_sandbox_metadata_matches(const sk_kvlist *meta, const sk_kvlist *match);
/* Sorts by id and drops repeated ids (lists whose pages shift between calls). */
void sk_sandbox_list_dedup(sk_sandbox_list *l);
void sk_sandbox_list_push(sk_sandbox_list *l, size_t *cap, sk_sandbox *sb);
int sk_json_dump_body(json_t *j, char **out);

/* The E2B functions, reused by cube. */
int sk_e2b_create(sk_provider *p, const sk_create_request *req, sk_sandbox *out, sk_error *err);
int sk_e2b_create_seconds(sk_provider *p, const sk_create_request *req, long timeout_s,
        sk_sandbox *out, sk_error *err);
int sk_e2b_fork(
        sk_provider *p, const char *source_id, int64_t timeout_ms, sk_sandbox *out, sk_error *err);
int sk_e2b_get(sk_provider *p, const char *id, sk_sandbox *out, sk_error *err);
int sk_e2b_list(sk_provider *p, const sk_kvlist *match, sk_sandbox_list *out, sk_error *err);
/* Pages through GET /v2/sandboxes with the given query (without nextToken/limit),
 * keeping the entries that match (client-side). */
int sk_e2b_list_query(sk_provider *p, const char *query, const sk_kvlist *match,
        sk_sandbox_list *out, sk_error *err);
int sk_e2b_connect(sk_provider *p, const char *id, int64_t timeout_ms, sk_sandbox *out,
        bool *resumed, sk_error *err);
int sk_e2b_connect_seconds(sk_provider *p, const char *id, long timeout_s, sk_sandbox *out,
        long *status, sk_error *err);
int sk_e2b_pause(sk_provider *p, const char *id, sk_error *err);
int sk_e2b_kill(sk_provider *p, const char *id, sk_error *err);
int sk_e2b_set_timeout(sk_provider *p, const char *id, int64_t timeout_ms, sk_error *err);
int sk_e2b_set_timeout_seconds(sk_provider *p, const char *id, long timeout_s, sk_error *err);
int sk_e2b_probe_health(
        sk_provider *p, const sk_sandbox *sb, sk_health *health, int *http_status, sk_error *err);
int sk_e2b_init_env(sk_provider *p, const sk_sandbox *sb, const sk_kvlist *env, sk_error *err);
/* Where envd of a sandbox answers: the URL of `path` and the routing and
 * access-token headers (never logged: the token is wiped by sk_envd_dispose). */
typedef struct sk_envd_target {
	char *url;
	char hid[200], hport[64], htok[600];
	const char *headers[8]; /* NULL-terminated; four free slots for the caller */
} sk_envd_target;
void sk_envd_init(sk_provider *p, const sk_sandbox *sb, const char *path, sk_envd_target *t);
void sk_envd_dispose(sk_envd_target *t);
/* Adds a header line (borrowed) to one of the free slots. */
void sk_envd_add_header(sk_envd_target *t, const char *line);
/* Sends r (url and headers from t) streaming st; the classified outcome. */
int sk_envd_stream(sk_provider *p, sk_http_request *r, const sk_envd_target *t, sk_http_stream *st,
        sk_error *err);
/* envd answers sooner than API calls or it is in trouble (a hung envd is the symptom). */
int64_t sk_envd_timeout(const sk_provider *p);
/* Workspace files through envd (files_envd.c), shared by e2b and cube. */
int sk_envd_list_files(
        sk_provider *p, const sk_sandbox *sb, const char *root, sk_file_list *out, sk_error *err);
int sk_envd_read_file(sk_provider *p, const sk_sandbox *sb, const char *path, sk_file_sink_fn sink,
        void *payload, sk_error *err);
int sk_envd_write_file(sk_provider *p, const sk_sandbox *sb, const sk_file_entry *e,
        sk_file_source_fn source, void *payload, sk_error *err);
/* envd process.Process/List (Connect unary, JSON codec): the processes
 * envd runs (envd_process.c). */
int sk_envd_list_processes(sk_provider *p, const sk_sandbox *sb, int *running, sk_error *err);
/* Runs `CMD 'ARG1' 'ARG2'` (arguments shell-quoted) through envd
 * process.Process/Start as `bash -l -c`; a non-zero exit is SK_ETERMINAL
 * with the command's stderr in the message (envd_process.c). */
int sk_envd_run(sk_provider *p, const sk_sandbox *sb, const char *cmd, const char *arg1,
        const char *arg2, sk_error *err);
/* `cmd 'a1' 'a2'` with POSIX single quotes; caller frees. */
char *sk_shell_command(const char *cmd, const char *arg1, const char *arg2);
/* Daytona workspace files through the toolbox (files_daytona.c). */
int sk_daytona_list_files(
        sk_provider *p, const sk_sandbox *sb, const char *root, sk_file_list *out, sk_error *err);
int sk_daytona_read_file(sk_provider *p, const sk_sandbox *sb, const char *path,
        sk_file_sink_fn sink, void *payload, sk_error *err);
int sk_daytona_write_file(sk_provider *p, const sk_sandbox *sb, const sk_file_entry *e,
        sk_file_source_fn source, void *payload, sk_error *err);
/* File lists: append (takes e's strings) and the depth-first order of
 * sk_sandbox_list_files (a path's parents first, '/' sorting before any byte). */
void sk_file_list_push(sk_file_list *l, sk_file_entry *e);
void sk_file_list_sort(sk_file_list *l);
/* That order on two paths: strcmp with '/' below every other byte ("a/b" < "a.b"). */
int sk_file_list_order(const char *a, const char *b);
/* ms -> whole seconds, rounded up, at least 1. */
long sk_e2b_seconds(int64_t ms);
bool sk_sandbox_id_valid(const char *id);

/* network.c: spec.network in E2B's and Daytona's shapes. */
void sk_e2b_network_create(json_t *body, const sk_network *n);
void sk_e2b_network_decode(const json_t *j, sk_sandbox *out);
int sk_e2b_set_network(sk_provider *p, const char *id, const sk_network *n, sk_error *err);
/* volume.c: E2B's team volumes (GET/POST /volumes, DELETE /volumes/{id}). */
int sk_e2b_ensure_volume(sk_provider *p, const char *name, char **id, sk_error *err);
int sk_e2b_delete_volume(sk_provider *p, const char *name, sk_error *err);
/* snapshot.c: E2B's persistent snapshots. */
int sk_e2b_create_snapshot(
        sk_provider *p, const char *sandbox_id, const char *name, sk_snapshot *out, sk_error *err);
int sk_e2b_list_snapshots(
        sk_provider *p, const char *sandbox_id, sk_snapshot_list *out, sk_error *err);
int sk_e2b_delete_snapshot(sk_provider *p, const char *snapshot_id, sk_error *err);
int sk_daytona_network_create(json_t *body, const sk_network *n, sk_error *err);
void sk_daytona_network_decode(const json_t *j, sk_sandbox *out);

#endif
