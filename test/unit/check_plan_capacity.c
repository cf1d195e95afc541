/*
 * Table tests of a provider's capacity decisions (pkg/reconcile/
 * plan_capacity.c): a start's verdict from the cap, the running count, the
 * evictions asked and its place in the FIFO queue; and which awake space is
 * evicted (oldest activity; busy, always-on, just-connected and already
 * evicting ones skipped; the quota tenant first); and the whole gate a
 * start passes (sk_capacity_gate_decide: quotas, cap, start rate, whom to
 * evict, its place in the queue, when it asks again). The evicted space's own
 * plan is in check_plan.c ("capacity: ...").
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "api/status.h"
#include "reconcile/capacity.h"
#include "reconcile/plan.h"

Suite *sk_suite_plan_capacity(void);

#define NOW INT64_C(1800000000000)
#define SEC INT64_C(1000)
#define MIN (60 * SEC)

static const struct decide_case {
	const char *name;
	sk_capacity_state st;
	sk_capacity_verdict want;
} decide_cases[] = {
	{ "no cap: start", { 0, 500, 0, 7 }, SK_CAPACITY_START },
	{ "a slot free, first in the queue: start", { 5, 4, 0, 0 }, SK_CAPACITY_START },
	{ "two slots free, second in the queue: start", { 5, 3, 0, 1 }, SK_CAPACITY_START },
	{ "one slot free, second in the queue: the first has it, evict", { 5, 4, 0, 1 },
	        SK_CAPACITY_EVICT },
	{ "full, first: evict", { 5, 5, 0, 0 }, SK_CAPACITY_EVICT },
	{ "full, first, an eviction asked already: wait", { 5, 5, 1, 0 }, SK_CAPACITY_WAIT },
	{ "full, third, two evictions asked: one more", { 5, 5, 2, 2 }, SK_CAPACITY_EVICT },
	{ "full, third, three evictions asked: wait its turn", { 5, 5, 3, 2 }, SK_CAPACITY_WAIT },
	{ "over the cap (learned lower): evict", { 3, 5, 0, 0 }, SK_CAPACITY_EVICT },
	{ "not queued yet (position = queue length 4), full: evict", { 5, 5, 4, 4 },
	        SK_CAPACITY_EVICT },
};

START_TEST(test_decide)
{
	const struct decide_case *tc = &decide_cases[_i];

	ck_assert_msg(sk_capacity_decide(&tc->st) == tc->want, "%s: got %d", tc->name,
	        sk_capacity_decide(&tc->st));
}
END_TEST

/* The cap a provider's 429 shows: what ran when it refused. A refusal
 * noted after the pause of the eviction it waited for (2 awake, 1 stopped
 * since the start was let through) keeps 3: counted at 2, nothing ran past
 * it to raise it again, and every start meanwhile evicted one more. */
START_TEST(test_learn)
{
	ck_assert_int_eq(sk_capacity_learn(0, 3, 0), 3); /* the first */
	ck_assert_int_eq(sk_capacity_learn(3, 2, 1), 3); /* an eviction ended in flight */
	ck_assert_int_eq(sk_capacity_learn(0, 2, 1), 3);
	ck_assert_int_eq(sk_capacity_learn(3, 2, 0), 2); /* the provider runs fewer now */
	ck_assert_int_eq(sk_capacity_learn(3, 4, 0), 3); /* not raised by a refusal */
	ck_assert_int_eq(sk_capacity_learn(3, 0, 0), 3); /* none of ours: someone else's */
	ck_assert_int_eq(sk_capacity_learn(0, 0, 0), 0);
}
END_TEST

/* A FIFO queue of three at a full provider: each waiter's verdict as the
 * evictions come; the first evicts first, nobody overtakes. */
START_TEST(test_queue_order)
{
	sk_capacity_state st = { 2, 2, 0, 0 };
	int evicted_by[3] = { -1, -1, -1 }, round = 0;

	/* each round every waiter asks in queue order; an EVICT asks one more */
	for (; round < 3; round++) {
		for (size_t pos = 0; pos < 3; pos++) {
			st.position = pos;
			if (sk_capacity_decide(&st) == SK_CAPACITY_EVICT) {
				st.evicting++;
				if (evicted_by[pos] < 0)
					evicted_by[pos] = round;
			}
		}
	}
	ck_assert_int_eq(st.evicting, 3); /* one eviction per waiter, not more */
	ck_assert_int_eq(evicted_by[0], 0);
	ck_assert_int_eq(evicted_by[1], 0);
	ck_assert_int_eq(evicted_by[2], 0);
	/* two evictions done (running 0 of 2, one still asked): the first two start */
	st.running = 0;
	st.evicting = 1;
	st.position = 0;
	ck_assert(sk_capacity_decide(&st) == SK_CAPACITY_START);
	st.position = 1;
	ck_assert(sk_capacity_decide(&st) == SK_CAPACITY_START);
	st.position = 2;
	ck_assert(sk_capacity_decide(&st) == SK_CAPACITY_WAIT);
}
END_TEST

#define CAND(n, t, act, busy, on, ev)                                                              \
	{                                                                                          \
		n, t, (act) ? NOW + (act) : 0, NOW - 20 * MIN, busy, on, ev, 0, NULL               \
	}

static const struct pick_case {
	const char *name;
	sk_capacity_candidate c[5];
	size_t n;
	const char *tenant;
	const char *want; /* NULL: none */
} pick_cases[] = {
	{ "oldest activity",
	        { CAND("a", NULL, -5 * MIN, 0, 0, 0), CAND("b", NULL, -9 * MIN, 0, 0, 0),
	                CAND("c", NULL, -7 * MIN, 0, 0, 0) },
	        3, NULL, "b" },
	{ "never used: its start counts",
	        { CAND("a", NULL, -5 * MIN, 0, 0, 0), CAND("b", NULL, 0, 0, 0, 0) }, 2, NULL, "b" },
	{ "busy skipped",
	        { CAND("a", NULL, -5 * MIN, 0, 0, 0), CAND("b", NULL, -9 * MIN, 1, 0, 0) }, 2, NULL,
	        "a" },
	{ "just connected skipped",
	        { CAND("a", NULL, -30 * SEC, 0, 0, 0), CAND("b", NULL, -2 * MIN, 0, 0, 0) }, 2,
	        NULL, "b" },
	/* a connect that waited in the queue past evictAfter: its wake is the
	 * connect (evicting it paused the space before its user's heartbeat) */
	{ "woken for an old connect: just connected",
	        { { "a", NULL, NOW - 2 * MIN, NOW - 10 * SEC, 0, 0, 0, 0, NULL },
	                CAND("b", NULL, -90 * SEC, 0, 0, 0) },
	        2, NULL, "b" },
	{ "woken for an old connect, alone: none",
	        { { "a", NULL, NOW - 2 * MIN, NOW - 10 * SEC, 0, 0, 0, 0, NULL } }, 1, NULL, NULL },
	{ "woken long ago for a connect: its wake is old too",
	        { { "a", NULL, NOW - 5 * MIN, NOW - 2 * MIN, 0, 0, 0, 0, NULL },
	                CAND("b", NULL, -90 * SEC, 0, 0, 0) },
	        2, NULL, "a" },
	{ "always-on skipped",
	        { CAND("a", NULL, -9 * MIN, 0, 1, 0), CAND("b", NULL, -2 * MIN, 0, 0, 0) }, 2, NULL,
	        "b" },
	{ "already evicting skipped",
	        { CAND("a", NULL, -9 * MIN, 0, 0, 1), CAND("b", NULL, -2 * MIN, 0, 0, 0) }, 2, NULL,
	        "b" },
	{ "nothing evictable",
	        { CAND("a", NULL, -10 * SEC, 0, 0, 0), CAND("b", NULL, -9 * MIN, 1, 0, 0) }, 2,
	        NULL, NULL },
	{ "quota tenant first, though younger",
	        { CAND("a", "red", -9 * MIN, 0, 0, 0), CAND("b", "blue", -3 * MIN, 0, 0, 0),
	                CAND("c", "blue", -2 * MIN, 0, 0, 0) },
	        3, "blue", "b" },
	{ "quota tenant has none evictable: any other",
	        { CAND("a", "red", -9 * MIN, 0, 0, 0), CAND("b", "blue", -3 * MIN, 1, 0, 0) }, 2,
	        "blue", "a" },
	/* an archive's wake waits like any start: the users of the cap are
	 * no victims within evictAfter, and an archive is no connect */
	{ "an archive waits, both awake spaces in use: none",
	        { CAND("u03", NULL, -5 * SEC, 0, 0, 0), CAND("u04", NULL, -2 * SEC, 0, 0, 0) }, 2,
	        NULL, NULL },
	{ "an archive waits, one awake space idle past evictAfter: that one",
	        { CAND("u03", NULL, -5 * SEC, 0, 0, 0), CAND("u04", NULL, -70 * SEC, 0, 0, 0) }, 2,
	        NULL, "u04" },
	{ "ties by name",
	        { CAND("b", NULL, -5 * MIN, 0, 0, 0), CAND("a", NULL, -5 * MIN, 0, 0, 0) }, 2, NULL,
	        "a" },
};

START_TEST(test_pick_victim)
{
	const struct pick_case *tc = &pick_cases[_i];
	int i = sk_capacity_pick_victim(tc->c, tc->n, tc->tenant, NOW, MIN);

	if (tc->want == NULL)
		ck_assert_msg(i == -1, "%s: got %d", tc->name, i);
	else
		ck_assert_msg(i >= 0 && strcmp(tc->c[i].name, tc->want) == 0, "%s: got %s",
		        tc->name, i >= 0 ? tc->c[i].name : "none");
}
END_TEST

/* A start with none to evict asks again when the first just-connected
 * space may be evicted, else after recent (a burst's starts granted and not
 * seen yet are no candidates): never 0, which asked no more and left the
 * connect to its timeout (the capacity bench's 504s). */
START_TEST(test_retry_ms)
{
	sk_capacity_candidate c[] = { CAND("a", NULL, -20 * SEC, 0, 0, 0),
		CAND("b", NULL, -50 * SEC, 0, 0, 0), CAND("c", NULL, -55 * SEC, 1, 0, 0),
		CAND("d", NULL, -58 * SEC, 0, 0, 1) };

	ck_assert_int_eq(sk_capacity_retry_ms(c, 4, NOW, MIN), 10 * SEC);
	ck_assert_int_eq(sk_capacity_retry_ms(c + 2, 2, NOW, MIN), MIN); /* busy, evicting */
	ck_assert_int_eq(sk_capacity_retry_ms(NULL, 0, NOW, 5 * SEC), 5 * SEC); /* all granted */
	/* woken 10 s ago for a connect made 2 min ago: due a minute after the wake */
	sk_capacity_candidate w = { "w", NULL, NOW - 2 * MIN, NOW - 10 * SEC, 0, 0, 0, 0, NULL };
	ck_assert_int_eq(sk_capacity_retry_ms(&w, 1, NOW, MIN), 50 * SEC);
	ck_assert_int_gt(sk_capacity_retry_ms(NULL, 0, NOW, 0), 0);
}
END_TEST

/* status.usage: the time since the last count goes to the phase the space
 * was in; whole seconds, the rest kept; counting starts at the first. */
START_TEST(test_usage_advance)
{
	sk_usage u = { 0 };

	sk_usage_advance(&u, SK_PHASE_PENDING, NOW);
	ck_assert_int_eq(u.since_ms, NOW);
	ck_assert_int_eq(u.updated_ms, NOW);
	sk_usage_advance(&u, SK_PHASE_RUNNING, NOW + 90 * SEC + 400);
	ck_assert_int_eq(u.running_s, 90);
	ck_assert_int_eq(u.updated_ms, NOW + 90 * SEC); /* the 400 ms count next time */
	sk_usage_advance(&u, SK_PHASE_IDLE, NOW + 100 * SEC + 400);
	ck_assert_int_eq(u.paused_s, 10);
	sk_usage_advance(&u, SK_PHASE_PAUSED, NOW + 100 * SEC + 900);
	ck_assert_int_eq(u.paused_s, 10); /* under a second: nothing yet */
	sk_usage_advance(&u, SK_PHASE_PENDING, NOW + 200 * SEC);
	ck_assert_int_eq(u.running_s, 90); /* no sandbox: neither */
	ck_assert_int_eq(u.paused_s, 10);
	ck_assert_int_eq(u.since_ms, NOW);
}
END_TEST

/* ---- the gate: one start, decided (sk_capacity_gate_decide) ---- */

/* The SpaceQuotas of the gate's table: blue (team=blue, hard.running 2),
 * blue-any (team=blue, no running limit: a tenant only) and red (team=red,
 * hard.running 0). */
static sk_spacequota *
gate_quota(const char *name, const char *team, const char *hard)
{
	char text[512];
	sk_doclist docs = { NULL, 0 };
	sk_errlist errs = { NULL, 0 };
	sk_error err = { 0 };
	sk_spacequota *q = NULL;

	snprintf(text, sizeof(text),
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: SpaceQuota\nmetadata: {name: %s}\n"
	        "spec:\n  selector:\n    matchLabels: {team: %s}\n  hard: {%s}\n",
	        name, team, hard);
	ck_assert_int_eq(sk_doc_parse(text, strlen(text), "q.yaml", &docs, &err), SK_OK);
	sk_spacequota_from_doc(docs.items[0], &q, &errs);
	ck_assert_msg(q != NULL && errs.len == 0, "quota %s: %s", name,
	        errs.len ? errs.items[0].message : "");
	sk_doclist_dispose(&docs);
	sk_errlist_dispose(&errs);
	return q;
}

enum { Q_NONE, Q_BLUE_ANY, Q_BLUE, Q_RED };
#define RESYNC (30 * SEC)

/* The awake spaces every row picks from (a prefix of n_cands of them): at
 * the provider ("here") or another, in tenant blue or none. */
static const struct gate_cand {
	const char *name;
	bool here;
	const char *team;
	int64_t act; /* before NOW */
} gate_cands[] = {
	{ "a3-blue-just-connected", true, "blue", 30 * SEC },
	{ "a1-blue", true, "blue", 9 * MIN },
	{ "a2-oldest-here", true, NULL, 20 * MIN },
	{ "b1-blue-elsewhere", false, "blue", 15 * MIN },
	{ "b2-oldest-elsewhere", false, NULL, 40 * MIN },
};
#define N_CANDS (sizeof(gate_cands) / sizeof(gate_cands[0]))

static const struct gate_case {
	const char *name;
	/* in */
	bool connect;
	int max, running, evicting;
	bool queued;
	size_t position; /* queued; else the queue's length */
	bool queued_wake, no_token;
	int quota; /* Q_*: the one quota the space is in */
	int q_running, q_evicting;
	size_t n_cands;
	/* want */
	sk_capacity_gate_kind kind;
	bool refuse, evict;
	const char *victim; /* NULL: none */
	int64_t queue_ms;
	bool queue_wake, wake_again;
	int64_t retry_ms;
} gate_cases[] = {
	{ "no cap, no quota: start", .n_cands = N_CANDS, .kind = SK_GATE_START },
	{ "a slot free: start", .max = 5, .running = 4, .n_cands = N_CANDS, .kind = SK_GATE_START },
	{ "full, a create not queued: the oldest at the provider, its place held resync + 5s",
	        .max = 3, .running = 3, .n_cands = N_CANDS, .kind = SK_GATE_CAPACITY, .evict = true,
	        .victim = "a2-oldest-here", .queue_ms = RESYNC + SK_CAPACITY_CREATE_WAIT_EXTRA_MS },
	{ "full, a connect's in tenant blue-any: blue's oldest first, though younger",
	        .connect = true, .max = 3, .running = 3, .quota = Q_BLUE_ANY, .n_cands = N_CANDS,
	        .kind = SK_GATE_CAPACITY, .evict = true, .victim = "a1-blue",
	        .queue_ms = RESYNC + SK_CAPACITY_CREATE_WAIT_EXTRA_MS, .queue_wake = true },
	{ "full, an eviction asked for it already: wait", .max = 3, .running = 3, .evicting = 1,
	        .queued = true, .n_cands = N_CANDS, .kind = SK_GATE_CAPACITY },
	{ "full, second in the queue, one eviction asked: one more", .max = 3, .running = 3,
	        .evicting = 1, .queued = true, .position = 1, .n_cands = N_CANDS,
	        .kind = SK_GATE_CAPACITY, .evict = true, .victim = "a2-oldest-here" },
	{ "full, a queued connect, none evictable: asks again when one may be, woken again",
	        .connect = true, .max = 3, .running = 3, .queued = true, .queued_wake = true,
	        .n_cands = 1, .kind = SK_GATE_CAPACITY, .evict = true, .wake_again = true,
	        .retry_ms = 30 * SEC + 10 },
	{ "full, a create, none evictable: asks again, no wake", .max = 3, .running = 3,
	        .n_cands = 1, .kind = SK_GATE_CAPACITY, .evict = true,
	        .queue_ms = RESYNC + SK_CAPACITY_CREATE_WAIT_EXTRA_MS, .retry_ms = 30 * SEC + 10 },
	{ "a slot free, no start token: waits for the next, a queued connect woken again",
	        .connect = true, .max = 5, .running = 1, .queued = true, .queued_wake = true,
	        .no_token = true, .n_cands = N_CANDS, .kind = SK_GATE_RATE,
	        .queue_ms = 500 + RESYNC, .wake_again = true, .retry_ms = 500 },
	{ "no cap, no start token, a create: waits for the next, no wake", .no_token = true,
	        .n_cands = N_CANDS, .kind = SK_GATE_RATE, .queue_ms = 500 + RESYNC,
	        .retry_ms = 500 },
	{ "quota blue at 2 of 2: its tenant's oldest, at any provider", .connect = true, .max = 5,
	        .quota = Q_BLUE, .q_running = 2, .n_cands = N_CANDS, .kind = SK_GATE_QUOTA,
	        .evict = true, .victim = "b1-blue-elsewhere", .queue_ms = RESYNC,
	        .queue_wake = true, .wake_again = true, .retry_ms = SK_CAPACITY_QUOTA_RETRY_MS },
	{ "quota blue at 2 of 2, an eviction asked: waits, asks again", .quota = Q_BLUE,
	        .q_running = 2, .q_evicting = 1, .n_cands = N_CANDS, .kind = SK_GATE_QUOTA,
	        .queue_ms = RESYNC, .retry_ms = SK_CAPACITY_QUOTA_RETRY_MS },
	{ "quota blue at 2 of 2, none in the tenant evictable: no victim", .quota = Q_BLUE,
	        .q_running = 2, .n_cands = 1, .kind = SK_GATE_QUOTA, .evict = true,
	        .queue_ms = RESYNC, .retry_ms = SK_CAPACITY_QUOTA_RETRY_MS },
	{ "quota red, hard.running 0: refused, nothing evicted", .connect = true, .quota = Q_RED,
	        .n_cands = N_CANDS, .kind = SK_GATE_QUOTA, .refuse = true, .queue_ms = RESYNC,
	        .queue_wake = true, .wake_again = true, .retry_ms = SK_CAPACITY_QUOTA_RETRY_MS },
	{ "quota blue with room: the provider decides", .max = 5, .running = 2, .quota = Q_BLUE,
	        .q_running = 1, .n_cands = N_CANDS, .kind = SK_GATE_START },
	{ "quota first: blue full though the provider has room", .max = 5, .running = 0,
	        .quota = Q_BLUE, .q_running = 2, .q_evicting = 2, .n_cands = N_CANDS,
	        .kind = SK_GATE_QUOTA, .queue_ms = RESYNC, .retry_ms = SK_CAPACITY_QUOTA_RETRY_MS },
};

START_TEST(test_gate)
{
	const struct gate_case *tc = &gate_cases[_i];
	sk_spacequota *q[4] = { NULL, gate_quota("blue-any", "blue", "spaces: 9"),
		gate_quota("blue", "blue", "running: 2"), gate_quota("red", "red", "running: 0") };
	sk_kvlist labels[N_CANDS];
	sk_capacity_candidate cands[N_CANDS];
	sk_capacity_quota_use use = { q[tc->quota], tc->q_running, tc->q_evicting };
	sk_capacity_gate_in in = { 0 };
	sk_capacity_gate d;

	memset(labels, 0, sizeof(labels));
	memset(cands, 0, sizeof(cands));
	for (size_t i = 0; i < N_CANDS; i++) {
		if (gate_cands[i].team)
			sk_kvlist_set(&labels[i], "team", gate_cands[i].team);
		cands[i].name = gate_cands[i].name;
		cands[i].activity_ms = NOW - gate_cands[i].act;
		cands[i].started_ms = NOW - 60 * MIN;
		cands[i].here = gate_cands[i].here;
		cands[i].labels = &labels[i];
	}
	in.connect = tc->connect;
	in.max_running = tc->max;
	in.running = tc->running;
	in.evicting = tc->evicting;
	in.queued = tc->queued;
	in.position = tc->position;
	in.queued_wake = tc->queued_wake;
	in.token = !tc->no_token;
	in.token_wait_ms = 500;
	in.quotas = &use;
	in.n_quotas = tc->quota != Q_NONE;
	in.candidates = cands;
	in.n_candidates = tc->n_cands;
	in.now_ms = NOW;
	in.evict_after_ms = in.quota_evict_after_ms = MIN;
	in.resync_ms = RESYNC;
	sk_capacity_gate_decide(&in, &d);
	ck_assert_msg(d.kind == tc->kind, "%s: kind %d", tc->name, (int)d.kind);
	ck_assert_msg(d.refuse == tc->refuse && d.evict == tc->evict, "%s: refuse %d evict %d",
	        tc->name, d.refuse, d.evict);
	if (tc->victim == NULL)
		ck_assert_msg(d.victim == -1, "%s: victim %s", tc->name,
		        d.victim >= 0 ? cands[d.victim].name : "");
	else
		ck_assert_msg(d.victim >= 0 && strcmp(cands[d.victim].name, tc->victim) == 0,
		        "%s: victim %s", tc->name, d.victim >= 0 ? cands[d.victim].name : "none");
	ck_assert_msg(d.queue_ms == tc->queue_ms && d.queue_wake == tc->queue_wake,
	        "%s: queue %lld wake %d", tc->name, (long long)d.queue_ms, d.queue_wake);
	ck_assert_msg(d.wake_again == tc->wake_again && d.retry_ms == tc->retry_ms,
	        "%s: wake again %d, retry %lld", tc->name, d.wake_again, (long long)d.retry_ms);
	if (tc->kind == SK_GATE_QUOTA)
		ck_assert_uint_eq(d.quota, 0);
	for (size_t i = 0; i < N_CANDS; i++)
		sk_kvlist_dispose(&labels[i]);
	for (size_t i = 1; i < 4; i++)
		sk_spacequota_free(q[i]);
}
END_TEST

Suite *
sk_suite_plan_capacity(void)
{
	Suite *s = suite_create("plan_capacity");
	TCase *tc = tcase_create("capacity");

	tcase_add_loop_test(
	        tc, test_decide, 0, (int)(sizeof(decide_cases) / sizeof(decide_cases[0])));
	tcase_add_test(tc, test_queue_order);
	tcase_add_test(tc, test_learn);
	tcase_add_test(tc, test_usage_advance);
	tcase_add_test(tc, test_retry_ms);
	tcase_add_loop_test(
	        tc, test_pick_victim, 0, (int)(sizeof(pick_cases) / sizeof(pick_cases[0])));
	tcase_add_loop_test(tc, test_gate, 0, (int)(sizeof(gate_cases) / sizeof(gate_cases[0])));
	suite_add_tcase(s, tc);
	return s;
}
