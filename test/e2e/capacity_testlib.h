/*
 * The world of the capacity and quota e2e suites (check_capacity.c,
 * check_quota.c): FerretDB's database, sandboxsim, spacekeeper with one
 * e2b provider whose capacity the test gives, N spaces u01..uNN labelled
 * team red (odd) or blue (even), a sampler of the simulator's running
 * count every 100 ms, and users that connect, write and read a file.
 */
#ifndef SK_TEST_CAPACITY_TESTLIB_H
#define SK_TEST_CAPACITY_TESTLIB_H

#include <jansson.h>
#include <stdatomic.h>
#include <sys/types.h>

#define API_KEY "e2b_0000000000000000000000000000000000000000"

extern char capw_db[64];
extern char capw_mongo_uri[128];
extern char capw_sim_url[128];
extern char capw_keeper_log[700];
extern pid_t capw_sim_pid, capw_keeper_pid;
extern int capw_main_port, capw_connect_port;
extern const char *capw_provider_type; /* the provider's type (default e2b) */
/* Top-level YAML of the controller's config after the provider (an
 * archive: section); NULL: none. */
extern const char *capw_extra_config;
extern atomic_bool capw_sampling;
extern atomic_int capw_max_sampled; /* the highest running count sampled */

/* The status (0: no answer); *out (may be NULL) the body, caller frees.
 * hdrs: extra headers, NULL-terminated (may be NULL). */
long capw_http(
        const char *method, const char *url, const char *body, const char *const *hdrs, char **out);
json_t *capw_http_json(const char *method, const char *url, long *status);
/* A figure of the simulator's /_sim/stats: "max_running", or one level
 * down, "refused.concurrency". */
json_int_t capw_sim_stat(const char *key);
int capw_spacectl(const char *const *args, char **out);
/* name -> phase of every space (spacectl get -o json). */
json_t *capw_phases(void);
int capw_count_phase(json_t *ph, const char *want);
/* spacekeeper with providers[0].capacity {capacity} and resyncPeriod 3s. */
void capw_keeper_start(const char *capacity);
/* The world with n spaces (pre_yaml, when given, applied with them first). */
void capw_world_start_n(const char *const *sim_args, const char *capacity, int n);
void capw_world_start_with(
        const char *const *sim_args, const char *capacity, int n, const char *pre_yaml);
void capw_world_stop(void);

typedef struct capw_attach {
	char url[300];
	char hdr[3][300];
	const char *hdrs[4];
} capw_attach;
/* Connects user (200 expected) and fills a's envd target. */
void capw_connect_user(const char *user, capw_attach *a);
void capw_write_file(const capw_attach *a, const char *user);
void capw_check_file(const capw_attach *a, const char *user);

#endif
