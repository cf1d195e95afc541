/*
 * End-to-end: replicas share the spaces by shard leases. Three spacekeeper processes on loopback against one FerretDB and
 * one sandboxsim, short lease timings (shards 24, lease 4s, renew deadline
 * 3s, retry 500ms): 300 spaces converge to one sandbox each; a SIGKILLed
 * replica's shards are taken over; a replica SIGSTOPped for longer than the
 * lease calls nothing with its stale lease after SIGCONT; a fourth takes a
 * share; a connect through a replica that does not hold the user's shard
 * answers what the holder answers.
 */
#include <check.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../testutil.h"
#include "replicas_testlib.h"
#include "util/util.h"

Suite *sk_suite_replicas(void);

#define N_REPLICAS 4
#define SHARDS 24
#define LEASE_S RL_LEASE_S
#define RESYNC_S RL_RESYNC_S
#define LEASE_CLAIM_S 10 /* pkg/store/mongo_cas.c SK_LEASE_CLAIM_EXPIRY_MS */

static void
setup(void)
{
	const char *args[] = { "--latency", "2ms", NULL };

	rl_setup("replicas", SHARDS, args);
}

/* ---- one provider list ---- */

#define LIST_OK "spacekeeper_provider_list_total{provider=\"default\",result=\"success\"}"
#define SHARED_READ                                                                                \
	"spacekeeper_shared_list_total{provider=\"default\",op=\"read\",result=\"success\"}"

/* A counter of a replica, 0 when the series is not there yet. */
static double
counter(const rl_replica *r, const char *series)
{
	double v = rl_metric(r, series);

	return v < 0 ? 0 : v;
}

/* GET /v2/sandboxes requests (every page) the simulator answered since its
 * stats were reset. */
static int
sim_list_requests(void)
{
	char url[256], *text = NULL;
	json_t *v;
	int n = 0;
	const char *code;
	json_t *count;

	snprintf(url, sizeof(url), "%s/_sim/stats", rl.sim_url);
	rl_http("GET", url, &text);
	v = json_loads(text ? text : "", 0, NULL);
	free(text);
	json_object_foreach(json_object_get(json_object_get(v, "requests"), "list"), code, count)
	        n += (int)json_integer_value(count);
	json_decref(v);
	return n;
}

/* Over WINDOW_S, the live replicas of mask list the provider once per
 * resync between them: the holder of shard 0 lists, the others read its
 * shared list and list nothing. */
#define WINDOW_S (5 * RESYNC_S)
static void
assert_one_lister(unsigned mask)
{
	double lists0[N_REPLICAS], reads0[N_REPLICAS];
	int listers = 0, sim_lists, lists = 0;
	char url[256], *text = NULL;

	for (int i = 0; i < N_REPLICAS; i++)
		if (mask & (1u << i)) {
			lists0[i] = counter(&rl.reps[i], LIST_OK);
			reads0[i] = counter(&rl.reps[i], SHARED_READ);
		}
	snprintf(url, sizeof(url), "%s/_sim/stats/reset", rl.sim_url);
	rl_http("POST", url, &text);
	free(text);
	sleep(WINDOW_S);
	sim_lists = sim_list_requests();
	printf("replicas: provider lists in %ds (resync %ds):", WINDOW_S, RESYNC_S);
	for (int i = 0; i < N_REPLICAS; i++) {
		int dl, dr;
		if (!(mask & (1u << i)))
			continue;
		dl = (int)(counter(&rl.reps[i], LIST_OK) - lists0[i]);
		dr = (int)(counter(&rl.reps[i], SHARED_READ) - reads0[i]);
		printf(" replica-%d listed %d, read %d shared;", i, dl, dr);
		listers += dl > 0;
		lists += dl;
		if (dl == 0) /* a reader: it picked up every shared list, about */
			ck_assert_int_ge(dr, WINDOW_S / RESYNC_S - 2);
	}
	printf(" simulator answered %d list requests\n", sim_lists);
	ck_assert_int_eq(listers, 1);
	ck_assert_int_le(lists, WINDOW_S / RESYNC_S + 1);
	/* every list is a page or two of 360 sandboxes: no other replica listed */
	ck_assert_int_le(sim_lists, lists * 4);
}

/* ---- connect ---- */

static json_t *
connect_via(const rl_replica *r, const char *user, long *status)
{
	char url[256], *text = NULL;
	json_t *v;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/users/%s/sandbox?timeout=20s",
	        r->connect_port, user);
	*status = rl_http("GET", url, &text);
	v = json_loads(text ? text : "", 0, NULL);
	free(text);
	return v;
}

static void
assert_same_connect(unsigned mask, const char *user)
{
	int holder = rl_holder_of(mask, user), other = -1;
	long s1, s2;
	json_t *a, *b;
	const char *fields[] = { "name", "userID", "sandboxID", "state", "envdURL" };

	ck_assert_msg(holder >= 0, "no replica holds the shard of %s", user);
	for (int i = 0; i < N_REPLICAS && other < 0; i++)
		if ((mask & (1u << i)) && i != holder)
			other = i;
	a = connect_via(&rl.reps[holder], user, &s1);
	b = connect_via(&rl.reps[other], user, &s2);
	ck_assert_int_eq(s1, 200);
	ck_assert_int_eq(s2, s1);
	for (size_t k = 0; k < sizeof(fields) / sizeof(fields[0]); k++)
		ck_assert_msg(
		        json_equal(json_object_get(a, fields[k]), json_object_get(b, fields[k])),
		        "%s differs between holder and non-holder", fields[k]);
	ck_assert(json_is_true(json_object_get(b, "ready")));
	ck_assert_double_ge(rl_metric(&rl.reps[other],
	                            "spacekeeper_connect_total{path=\"forward\",code=\"200\"}"),
	        1);
	printf("replicas: connect %s via holder replica-%d and replica-%d: %s %s\n", user, holder,
	        other, json_string_value(json_object_get(b, "sandboxID")),
	        json_string_value(json_object_get(b, "state")));
	json_decref(a);
	json_decref(b);
}

/* ---- the scenario ---- */

START_TEST(test_replicas_share_take_over_and_fence)
{
	int dups = 0, fenced = 0, in_flight = 0;
	bool busy = false;
	int64_t t0;
	off_t off;

	for (int i = 0; i < 3; i++)
		rl_start(i, NULL);
	ck_assert_msg(rl_split_settled(0x7, SHARDS / 3 - 1, sk_monotonic_ms(), 30, "at start"),
	        "no even split");
	rl_apply_users("r", 0, 300);
	/* Mid-convergence: kill replica 2 without warning. */
	for (int t = 0; t < 600 && rl_count_one_each("r", 300, &dups) < 100; t++)
		usleep(100000);
	t0 = sk_monotonic_ms();
	sk_test_stop(rl.reps[2].pid, true);
	rl.reps[2].pid = 0;
	/* Within the lease (or, when it died in the middle of a renew, the 10 s
	 * a lease write's claim guards its version) plus a resync. */
	ck_assert_msg(rl_split_settled(0x3, 1, t0, LEASE_CLAIM_S + RESYNC_S + 2,
	                      "after SIGKILL of replica-2"),
	        "replica-2's shards not taken over within lease + resync");
	ck_assert_msg(rl_converged("r", 300, 120), "300 spaces did not converge");
	rl_count_one_each("r", 300, &dups);
	ck_assert_int_eq(dups, 0);

	/* SIGSTOP replica 1 while its workers wait for slow creates, for longer
	 * than the lease. */
	rl_sim_faults("{\"latency\": {\"create\": {\"fixed_ms\": 1500}}}");
	rl_apply_users("r", 300, 360);
	for (int t = 0; t < 300 && !busy; t++)
		busy = rl_creating_on(&rl.reps[1]); /* one of its workers waits in a create */
	ck_assert_msg(busy, "replica-1 never started a create");
	usleep(200000);
	t0 = sk_monotonic_ms();
	ck_assert_int_eq(kill(rl.reps[1].pid, SIGSTOP), 0);
	sleep(LEASE_S + 2);
	rl_sim_faults(NULL);
	/* Within the lease, or the claim's 10 s when it stopped in the middle
	 * of a renew (as for SIGKILL above), plus a resync. */
	ck_assert_msg(rl_split_settled(0x1, SHARDS, t0, LEASE_CLAIM_S + RESYNC_S + 2,
	                      "while replica-1 is stopped"),
	        "replica-0 did not take the stopped replica's shards");
	off = rl_file_size(rl.reps[1].log);
	ck_assert_int_eq(kill(rl.reps[1].pid, SIGCONT), 0);
	ck_assert_msg(rl_split_settled(0x3, SHARDS / 2 - 1, sk_monotonic_ms(), 20,
	                      "after SIGCONT of replica-1"),
	        "replica-1 did not take its share back");
	ck_assert_msg(rl_converged("r", 360, 120), "360 spaces did not converge");
	rl_assert_no_stale_action(&rl.reps[1], off, &in_flight, &fenced);
	printf("replicas: replica-1 after SIGCONT: %d calls in flight at SIGSTOP returned, "
	       "%d fenced stops, no call on a stale lease\n",
	        in_flight, fenced);
	ck_assert_int_ge(fenced, 1); /* the scenario did reach the fence */

	/* A fourth joins and takes a share (counted from when it listens: its
	 * start-up under ASan on a loaded machine is not the protocol's time). */
	rl_start(3, NULL);
	t0 = sk_monotonic_ms();
	ck_assert_msg(rl_split_settled(0xb, SHARDS / 3 - 1, t0, 20, "after replica-3 joined"),
	        "replica-3 took no share");
	ck_assert_msg(rl_converged("r", 360, 60), "not one each after replica-3 joined");
	rl_count_one_each("r", 360, &dups);
	ck_assert_int_eq(dups, 0);

	/* One list for the three live replicas. */
	assert_one_lister(0xb);

	/* A connect through a non-holder answers the same as the holder. */
	assert_same_connect(0xb, "r007");
	assert_same_connect(0xb, "r123");
	for (int i = 0; i < N_REPLICAS; i++)
		if (rl.reps[i].pid > 0) {
			ck_assert_int_eq(sk_test_stop(rl.reps[i].pid, false), 0);
			rl.reps[i].pid = 0;
		}
}
END_TEST

/* The shards a replica's metrics and status page say it holds:
 * spacekeeper_shards_held, the spacekeeper_leader_election_master_status
 * samples that are 1, and the page's "Shards held: N of M" (-1 each when it did not
 * answer). */
typedef struct claimed {
	int held, masters, page;
} claimed;

static claimed
claims_of(const rl_replica *r)
{
	claimed k = { rl_held(r), -1, -1 };
	char url[128], *text = NULL, *p;

	k.masters = (int)rl_metric_sum(r, "spacekeeper_leader_election_master_status");
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", r->port);
	if (rl_http("GET", url, &text) == 200 && (p = strstr(text, "Shards held: ")) != NULL) {
		p += strlen("Shards held: ");
		if (strncmp(p, "<span class=\"bad\">", 18) == 0)
			p += 18;
		k.page = atoi(p);
	}
	free(text);
	return k;
}

/* Replica 1 reaches the database through a TCP proxy that is cut (every
 * call waits, as behind a partition) for longer than the lease: from its
 * own renew deadline on it reports no shard held (metrics and page) while
 * replica 0 takes them all, never two owners on the dashboards; healed, it
 * takes its share again. */
START_TEST(test_replica_cut_from_the_database)
{
	char direct[sizeof(rl.mongo_uri)];
	claimed k = { -1, -1, -1 };
	int64_t t0, waited = -1;

	rl_start(0, NULL);
	rl_proxy_start();
	snprintf(direct, sizeof(direct), "%s", rl.mongo_uri);
	snprintf(rl.mongo_uri, sizeof(rl.mongo_uri), "%s", rl_proxy_uri());
	rl_start(1, NULL);
	snprintf(rl.mongo_uri, sizeof(rl.mongo_uri), "%s", direct);
	ck_assert_msg(rl_split_settled(0x3, SHARDS / 2 - 1, sk_monotonic_ms(), 60, "at start"),
	        "no even split");
	k = claims_of(&rl.reps[1]);
	ck_assert_int_gt(k.held, 0);
	ck_assert_int_eq(k.masters, k.held);
	ck_assert_int_eq(k.page, k.held);

	rl_proxy_cut(true);
	t0 = sk_monotonic_ms();
	/* the renew deadline (3 s) from its last renew, a scrape apart */
	while (sk_monotonic_ms() - t0 < 3000 + 10000) {
		k = claims_of(&rl.reps[1]);
		if (k.held == 0 && k.masters == 0 && k.page == 0) {
			waited = sk_monotonic_ms() - t0;
			break;
		}
		usleep(100000);
	}
	printf("replicas-cut: replica-1 cut from the database claims %d shards (metric), %d "
	       "master statuses, %d on its page, %lld ms after the cut\n",
	        k.held, k.masters, k.page,
	        (long long)(waited >= 0 ? waited : sk_monotonic_ms() - t0));
	ck_assert_msg(waited >= 0, "replica-1 still claims its shards while cut");
	ck_assert_msg(rl_split_settled(0x1, SHARDS, t0, LEASE_CLAIM_S + 10, "with replica-1 cut"),
	        "replica-0 did not take every shard");
	for (int i = 0; i < 5; i++) { /* and it does not come back to claiming them */
		k = claims_of(&rl.reps[1]);
		ck_assert_int_eq(k.held, 0);
		ck_assert_int_eq(k.masters, 0);
		usleep(200000);
	}

	rl_proxy_cut(false);
	ck_assert_msg(rl_split_settled(0x3, 1, sk_monotonic_ms(), 60, "healed"),
	        "replica-1 took no share after the cut healed");
}
END_TEST

Suite *
sk_suite_replicas(void)
{
	Suite *s = suite_create("replicas");
	TCase *tc = tcase_create("replicas");
	TCase *cut = tcase_create("cut");

	tcase_add_checked_fixture(tc, setup, rl_teardown);
	tcase_add_unchecked_fixture(tc, NULL, rl_kill_leftovers);
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_replicas_share_take_over_and_fence);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(cut, setup, rl_teardown);
	tcase_add_unchecked_fixture(cut, NULL, rl_kill_leftovers);
	tcase_set_timeout(cut, 300);
	tcase_add_test(cut, test_replica_cut_from_the_database);
	suite_add_tcase(s, cut);
	return s;
}
