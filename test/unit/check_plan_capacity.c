/*
 * Table tests of a provider's capacity decisions (pkg/reconcile/
 * plan_capacity.c): a start's verdict from the cap, the running count, the
 * evictions asked and its place in the FIFO queue; and which awake space is
 * evicted (oldest activity; busy, always-on, just-connected and already
 * evicting ones skipped; the quota tenant first). The evicted space's own
 * plan is in check_plan.c ("capacity: ...").
 */
#include <check.h>
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
		n, t, (act) ? NOW + (act) : 0, NOW - 20 * MIN, busy, on, ev                        \
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
	        { { "a", NULL, NOW - 2 * MIN, NOW - 10 * SEC, 0, 0, 0 },
	                CAND("b", NULL, -90 * SEC, 0, 0, 0) },
	        2, NULL, "b" },
	{ "woken for an old connect, alone: none",
	        { { "a", NULL, NOW - 2 * MIN, NOW - 10 * SEC, 0, 0, 0 } }, 1, NULL, NULL },
	{ "woken long ago for a connect: its wake is old too",
	        { { "a", NULL, NOW - 5 * MIN, NOW - 2 * MIN, 0, 0, 0 },
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
	sk_capacity_candidate w = { "w", NULL, NOW - 2 * MIN, NOW - 10 * SEC, 0, 0, 0 };
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
	suite_add_tcase(s, tc);
	return s;
}
