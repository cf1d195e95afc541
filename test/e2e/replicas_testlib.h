/*
 * Helpers of the replica end-to-end tests (check_replicas*.c): spacekeeper
 * replicas on loopback against this test's database and one sandboxsim,
 * with short lease timings; their /metrics and shard split; HTTP to them.
 */
#ifndef SK_REPLICAS_TESTLIB_H
#define SK_REPLICAS_TESTLIB_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define RL_MAX_REPLICAS 8
#define RL_LEASE_S 4 /* leaseDuration; renewDeadline 3s, retryPeriod 500ms */
#define RL_RESYNC_S 2
#define RL_DUMMY_KEY "e2b_0000000000000000000000000000000000000000"

typedef struct rl_replica {
	pid_t pid;
	int port; /* metrics and health */
	int connect_port; /* the connect API */
	char cfg[600];
	char log[700];
} rl_replica;

/* What the replicas of one test share; filled by rl_setup. */
typedef struct rl_world {
	const char *tag; /* the first word of each printed line */
	int shards;
	char db[64];
	char mongo_uri[128];
	char sim_url[128];
	pid_t sim_pid;
	rl_replica reps[RL_MAX_REPLICAS];
} rl_world;

extern rl_world rl;

/* Checked fixture: a database and a sandboxsim (sim_args NULL-terminated or
 * NULL); rl_teardown stops what is left. rl_kill_leftovers is the unchecked
 * teardown: it kills what a failed (forked) test left running. */
void rl_setup(const char *tag, int shards, const char *const *sim_args);
void rl_teardown(void);
void rl_kill_leftovers(void);
void rl_track_pid(pid_t pid);

/* Starts replica i ("replica-I") and waits until its metrics port listens.
 * extra: more `controller:` lines (each indented two spaces), or NULL. */
void rl_start(int i, const char *extra);
/* rl_start with more NAME=VALUE environment (NULL-terminated, up to 14). */
void rl_start_env(int i, const char *extra, const char *const *more_env);

/* HTTP with the simulator's API key; the status, 0 when nothing answered.
 * rl_http_auth adds `Authorization: Bearer TOKEN` (token not NULL) and
 * trusts the CA file cacert for https (not NULL). *out: the body. */
long rl_http(const char *method, const char *url, char **out);
long rl_http_auth(
        const char *method, const char *url, const char *token, const char *cacert, char **out);
/* With one more header (may be NULL) and a request body (may be NULL). */
long rl_http_send(const char *method, const char *url, const char *token, const char *header,
        const char *body, char **out);

/* A sample of a replica's /metrics (-1 when absent or no answer); the sum of
 * every sample of a family (0 when none); the shards it holds. */
double rl_metric(const rl_replica *r, const char *series);
double rl_metric_sum(const rl_replica *r, const char *family);
int rl_held(const rl_replica *r);

/* Waits until the live replicas (mask) hold every shard between them, each
 * at least min, within timeout_s from t0 (monotonic ms); prints the split
 * ("TAG: shard split WHEN: replica-0=N ...") and the time it took. */
bool rl_split_settled(unsigned mask, int min, int64_t t0, int timeout_s, const char *when);

/* The shard of a userID as the controller computes it (FNV-1a mod shards);
 * the replica of mask whose master status shows it holds it, -1 if none. */
unsigned rl_shard_of(const char *user);
int rl_holder_of(unsigned mask, const char *user);

/* UserSpaces NAME with userID NAME through spacectl apply: PREFIX000 on, or
 * a list of names. */
void rl_apply_users(const char *prefix, int from, int to);
void rl_apply_names(const char *const *names, size_t n);
/* rl_apply_users with mode Paused: spaces asleep that need no sandbox. */
void rl_apply_asleep(const char *prefix, int from, int to);

/* The objects as spacectl lists them: name -> status.sandboxID of the Ready
 * ones. */
json_t *rl_ready_bindings(void);

/* The simulator's sandboxes (GET /_sim/sandboxes, a JSON array). */
json_t *rl_sim_sandboxes(void);
/* Users PREFIX000..: how many have exactly one live (running or paused)
 * sandbox, and (bound not NULL: name -> sandboxID) that one is the Ready
 * object's binding; the extra live sandboxes in *dups. */
int rl_count_one_each_bound(const char *prefix, int n, json_t *bound, int *dups);
int rl_count_one_each(const char *prefix, int n, int *dups);
/* Waits up to timeout_s until every object PREFIX000.. of n is Ready and
 * bound to its user's only live sandbox. */
bool rl_converged(const char *prefix, int n, int timeout_s);
/* Sets the simulator's faults (a JSON document), or clears them (NULL). */
void rl_sim_faults(const char *body);
/* A space of a shard replica r holds is marked Creating (the mark is
 * written just before the provider's create call). */
bool rl_creating_on(const rl_replica *r);
off_t rl_file_size(const char *path);
/* The replica's log from offset off on (caller frees). */
char *rl_log_since(const rl_replica *r, off_t off);
/* After SIGCONT, until the replica logs "shards acquired": the only
 * actions it logs are the provider calls in flight at SIGSTOP, each
 * followed by a fenced stop of the same space (counts into the outs). */
void rl_assert_no_stale_action(const rl_replica *r, off_t off, int *in_flight, int *fenced);

/* A TCP proxy to the test's database (a thread of the test process): a
 * replica started while rl.mongo_uri is rl_proxy_uri() reaches the
 * database through it. rl_proxy_cut(true) cuts it as a partition does:
 * nothing more is accepted or forwarded, the connections stay open and
 * every call waits; rl_proxy_cut(false) heals it. */
void rl_proxy_start(void);
const char *rl_proxy_uri(void);
void rl_proxy_cut(bool cut);

#endif
