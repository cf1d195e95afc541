/*
 * Test helpers shared by the unit, integration and e2e runners.
 * Integration and e2e tests get one FerretDB per test binary, started by
 * sk_test_global_setup() when SK_TEST_NEEDS_MONGO is set by the suite
 * (or always, lazily, through sk_test_mongodb_uri()); each test uses its own
 * database name so tests never see each other's objects.
 */
#ifndef SK_TESTUTIL_H
#define SK_TESTUTIL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

void sk_test_global_setup(void);
/* Stops what the run started; removes the temporary directory unless a test
 * failed (failed > 0) or SK_TEST_KEEP_TMP is set, and then prints where it is. */
void sk_test_global_teardown(int failed);

/* A free TCP port on 127.0.0.1. */
int sk_test_free_port(void);

/* The URI of this binary's FerretDB (started on first use). */
const char *sk_test_mongodb_uri(void);
/* A database name unique to this process and call: "t_<pid>_<n>". Static buffer. */
const char *sk_test_unique_db(void);

/* Path of a product binary (spacectl, spacekeeper, sandboxsim) in $SK_BIN_DIR. Static. */
const char *sk_test_bin(const char *name);
/* Path under the repository root ($SK_ROOT). Static buffer, one at a time. */
const char *sk_test_path(const char *rel);

/* Runs argv (argv[0] a product name or a path) with optional stdin data and
 * extra environment ("K=V" strings, NULL-terminated, may be NULL); captures
 * stdout and stderr (caller frees). Returns the exit code, or 128+signal.
 * Kills the child after timeout_s seconds. */
int sk_test_run(const char *const *argv, const char *const *env, const char *stdin_data, char **out,
        char **err, int timeout_s);

/* Starts a process in the background with stdout/stderr to log_path; returns the pid. */
pid_t sk_test_spawn(const char *const *argv, const char *const *env, const char *log_path);
/* SIGTERM (or SIGKILL when hard), then waits; returns the exit status as sk_test_run does. */
int sk_test_stop(pid_t pid, bool hard);

/* Waits for a process started by sk_test_spawn to exit, up to timeout_s seconds
 * (then SIGKILL); returns the exit status as sk_test_run does. */
int sk_test_wait(pid_t pid, int timeout_s);

/* A private FerretDB (SQLite backend) on 127.0.0.1:port with its data in dir
 * (created when missing); waits until it answers ping and returns the pid.
 * Restarting it on the same port and dir keeps the data (unlike sk_test_ferretdb_start).
 * Stop it with sk_test_stop. */
pid_t sk_test_ferretdb_start_at(const char *dir, int port);

/* Waits until a TCP port on 127.0.0.1 accepts, up to timeout_ms. */
bool sk_test_wait_port(int port, int timeout_ms);

/* A private FerretDB (for tests that stop it): returns its pid (stop it with
 * sk_test_stop) and fills uri once it listens. */
pid_t sk_test_ferretdb_start(char *uri, size_t len);

/* A fresh temporary directory (removed by sk_test_global_teardown). Static buffer. */
const char *sk_test_tmpdir(void);
/* Writes a file under the temp dir and returns its path (static buffer). */
const char *sk_test_write_file(const char *name, const char *content);

/* A sandboxsim on a free port: returns the pid and fills base_url ("http://127.0.0.1:P").
 * extra_args NULL-terminated or NULL. */
pid_t sk_test_sim_start(const char *const *extra_args, char *base_url, size_t len);
/* Runs `spacectl --mongodb-uri URI --database DB ARGS...` (args NULL-terminated,
 * at most 18) within 300 s; *out (may be NULL) gets stdout (caller frees); an exit
 * above 1 prints its stderr.
 * Returns the exit code. */
int sk_test_spacectl(const char *uri, const char *db, const char *const *args, char **out);
/* A versitygw S3 server (POSIX backend, .deps/bin/versitygw) on 127.0.0.1:port
 * (0: a free one) with its data under dir (made when missing, with the
 * bucket directory `bucket` in it when given) and the root credentials
 * access:secret; waits until it listens, fills url and returns the pid.
 * Restarting it on the same port and dir keeps the objects. */
pid_t sk_test_s3_start(const char *dir, int port, const char *bucket, const char *access_key,
        const char *secret, char *url, size_t len);
/* The same on a size-limited disk: a tmpfs of limit_mb mounted over dir
 * in a user and mount namespace of its own (unshare -rm, no root needed),
 * the bucket made in it. -1 when this machine allows no such namespace. */
pid_t sk_test_s3_start_small(const char *dir, const char *bucket, const char *access_key,
        const char *secret, int limit_mb, char *url, size_t len);
/* POSTs a JSON document to base_url + path (a simulator's admin API, within
 * 5 s); returns the HTTP status, -1 when no answer came. */
long sk_test_post_json(const char *base_url, const char *path, const char *json);

/* ---- HTTP: the e2e suites' one client (libcurl) ---- */
#define SK_TEST_SIM_KEY "e2b_0000000000000000000000000000000000000000"
typedef struct sk_test_req {
	const char *method; /* NULL: GET; "HEAD" asks for no body */
	const char *body; /* NULL: none */
	const char *token; /* Authorization: Bearer TOKEN; NULL: none */
	const char *api_key; /* X-API-Key, with a JSON Content-Type; NULL: neither */
	const char *const
	        *extra; /* more request headers, "Name: value", NULL-terminated; may be NULL */
	const char *cacert; /* https: the CA file; NULL: the system's */
	long timeout_s; /* 0: 120 */
	char *out; /* the answer's body ("" when none; caller frees) */
	char *headers; /* the answer's headers (caller frees) */
} sk_test_req;
/* The status, 0 when nothing answered. */
long sk_test_http_do(const char *url, sk_test_req *r);
/* method url [body] with the simulator's key (SK_TEST_SIM_KEY): the status (0:
 * no answer); *out (may be NULL) the body, caller frees. */
long sk_test_http(const char *method, const char *url, const char *body, char **out);
/* The same, the body parsed (NULL when not JSON); *status may be NULL. */
json_t *sk_test_http_json(const char *method, const char *url, const char *body, long *status);
/* POST base_url + path with the simulator's key, asserting a 2xx. */
void sk_test_sim_post(const char *base_url, const char *path, const char *body);

/* ---- an e2e world: a simulator, a database of its own, a spacekeeper ---- */
typedef struct sk_test_world {
	char db[64];
	char mongo_uri[256];
	char sim_url[128];
	char log[700]; /* the controller's log */
	pid_t sim_pid, keeper_pid;
	int main_port, connect_port;
} sk_test_world;
/* curl, a fresh database name on the binary's FerretDB, a simulator
 * (sim_args NULL-terminated, may be NULL); no controller yet. */
void sk_test_world_setup(sk_test_world *w, const char *const *sim_args);
/* Stops the controller (when it runs) cleanly, asserting exit 0 (no ASan
 * report), and kills the simulator. */
void sk_test_world_teardown(sk_test_world *w);
typedef struct sk_test_keeper_opts {
	const char *provider_type; /* NULL: e2b */
	const char *provider; /* more YAML lines of the provider (indented four); NULL: none */
	const char *controller; /* YAML lines of controller: besides the listeners (indented two) */
	const char *log_level; /* --log-level; NULL: spacekeeper's default */
	bool no_wait_ready; /* wait for the listeners only, not for /readyz 200 */
} sk_test_keeper_opts;
/* spacekeeper --poll 200ms on the world: the simulator as provider "default"
 * (its key in E2B_API_KEY), listeners on free ports, log in w->log; waits
 * until both listen (20 s) and, unless o->no_wait_ready, /readyz answers 200
 * (60 s). */
void sk_test_keeper_start(sk_test_world *w, const sk_test_keeper_opts *o);
/* The whole file (up to 64 MB), "" when unreadable; caller frees. */
char *sk_test_slurp(const char *path);

#endif
