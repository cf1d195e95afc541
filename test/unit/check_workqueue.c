/* Unit tests for pkg/workqueue: the queue, delays, backoff and the global bucket. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "workqueue/workqueue.h"

Suite *sk_suite_workqueue(void);

static int64_t fake_now;

static int64_t
fake_clock(void *payload)
{
	(void)payload;
	return fake_now;
}

static sk_workqueue *
fake_queue(void)
{
	sk_workqueue_options o = SK_WORKQUEUE_OPTIONS_INIT;

	fake_now = 1000;
	o.clock = fake_clock;
	o.qps = 1e9; /* the global bucket never limits unless a test says so */
	o.burst = 1000000;
	return sk_workqueue_new(&o);
}

static void
expect_key(sk_workqueue *q, const char *want)
{
	char *k = NULL;

	ck_assert_int_eq(sk_workqueue_get(q, 0, &k), 0);
	ck_assert_str_eq(k, want);
	sk_workqueue_done(q, k);
	free(k);
}

static void
expect_empty(sk_workqueue *q)
{
	char *k = NULL;

	ck_assert_int_eq(sk_workqueue_get(q, 0, &k), SK_ETIMEOUT);
	ck_assert_ptr_null(k);
}

START_TEST(test_dedup)
{
	sk_workqueue *q = fake_queue();
	sk_workqueue_stats st;

	sk_workqueue_add(q, "a");
	sk_workqueue_add(q, "a");
	sk_workqueue_add(q, "b");
	sk_workqueue_add(q, "a");
	sk_workqueue_get_stats(q, &st);
	ck_assert_uint_eq(st.depth, 2);
	ck_assert_uint_eq(st.adds_total, 2);
	expect_key(q, "a");
	expect_key(q, "b");
	expect_empty(q);
	sk_workqueue_free(q);
}
END_TEST

START_TEST(test_readd_while_processing)
{
	sk_workqueue *q = fake_queue();
	char *k = NULL;

	sk_workqueue_add(q, "a");
	ck_assert_int_eq(sk_workqueue_get(q, 0, &k), 0);
	sk_workqueue_add(q, "a");
	sk_workqueue_add(q, "a");
	/* Held by a worker: not handed out again until done. */
	expect_empty(q);
	sk_workqueue_done(q, k);
	free(k);
	expect_key(q, "a");
	expect_empty(q);
	sk_workqueue_free(q);
}
END_TEST

START_TEST(test_priority)
{
	sk_workqueue *q = fake_queue();

	sk_workqueue_add(q, "a");
	sk_workqueue_add(q, "b");
	sk_workqueue_add(q, "c");
	sk_workqueue_add_priority(q, "c");
	sk_workqueue_add_priority(q, "d");
	expect_key(q, "d");
	expect_key(q, "c");
	expect_key(q, "a");
	expect_key(q, "b");
	expect_empty(q);
	sk_workqueue_free(q);
}
END_TEST

/* A priority add while a worker holds the key (a connect arrives during a
 * background reconcile of its space): when done, the key goes ahead of
 * everything queued meanwhile (a resync burst), not behind it. */
START_TEST(test_priority_while_processing)
{
	sk_workqueue *q = fake_queue();
	char *k = NULL;

	sk_workqueue_add(q, "u");
	ck_assert_int_eq(sk_workqueue_get(q, 0, &k), 0);
	ck_assert_str_eq(k, "u");
	sk_workqueue_add(q, "r1"); /* the resync burst */
	sk_workqueue_add(q, "r2");
	sk_workqueue_add_priority(q, "u");
	sk_workqueue_done(q, k);
	free(k);
	expect_key(q, "u");
	expect_key(q, "r1");
	expect_key(q, "r2");
	/* a plain add while held goes to the back, as before */
	sk_workqueue_add(q, "u");
	ck_assert_int_eq(sk_workqueue_get(q, 0, &k), 0);
	sk_workqueue_add(q, "r3");
	sk_workqueue_add(q, "u");
	sk_workqueue_done(q, k);
	free(k);
	expect_key(q, "r3");
	expect_key(q, "u");
	expect_empty(q);
	sk_workqueue_free(q);
}
END_TEST

/* ---- concurrency: one key is never processed twice at once ---- */

typedef struct conc_state {
	sk_workqueue *q;
	atomic_int busy[4];
	atomic_int violations;
	atomic_int processed;
} conc_state;

static void *
conc_worker(void *p)
{
	conc_state *s = p;
	char *k;

	while (sk_workqueue_get(s->q, -1, &k) == 0) {
		int i = k[0] - 'a';
		if (atomic_fetch_add(&s->busy[i], 1) != 0)
			atomic_fetch_add(&s->violations, 1);
		usleep(200);
		atomic_fetch_sub(&s->busy[i], 1);
		atomic_fetch_add(&s->processed, 1);
		sk_workqueue_done(s->q, k);
		free(k);
	}
	return NULL;
}

START_TEST(test_no_concurrent_processing)
{
	conc_state s;
	pthread_t th[6];
	const char *keys[] = { "a", "b", "c", "d" };

	memset(&s, 0, sizeof(s));
	s.q = sk_workqueue_new(NULL);
	for (int i = 0; i < 6; i++)
		pthread_create(&th[i], NULL, conc_worker, &s);
	for (int i = 0; i < 4000; i++) {
		sk_workqueue_add(s.q, keys[i % 4]);
		if (i % 50 == 0)
			usleep(500);
	}
	usleep(100000);
	sk_workqueue_shutdown(s.q);
	for (int i = 0; i < 6; i++)
		pthread_join(th[i], NULL);
	ck_assert_int_eq(atomic_load(&s.violations), 0);
	ck_assert_int_ge(atomic_load(&s.processed), 4);
	/* Deduplication: far fewer runs than adds. */
	ck_assert_int_lt(atomic_load(&s.processed), 4000);
	sk_workqueue_free(s.q);
}
END_TEST

/* ---- delays ---- */

START_TEST(test_delayed_order)
{
	sk_workqueue *q = fake_queue();

	sk_workqueue_add_after(q, "c", 30);
	sk_workqueue_add_after(q, "a", 10);
	sk_workqueue_add_after(q, "b", 20);
	sk_workqueue_add_after(q, "b", 25); /* the earlier pending due time wins */
	ck_assert_int_eq(sk_workqueue_next_due_ms(q), 10);
	expect_empty(q);
	fake_now += 15;
	expect_key(q, "a");
	expect_empty(q);
	fake_now += 10;
	expect_key(q, "b");
	expect_empty(q);
	fake_now += 100;
	expect_key(q, "c");
	expect_empty(q);
	ck_assert_int_eq(sk_workqueue_next_due_ms(q), -1);
	sk_workqueue_free(q);
}
END_TEST

START_TEST(test_delayed_earlier_replaces_later)
{
	sk_workqueue *q = fake_queue();
	sk_workqueue_stats st;

	sk_workqueue_add_after(q, "a", 1000);
	sk_workqueue_add_after(q, "a", 10);
	fake_now += 10;
	expect_key(q, "a");
	fake_now += 2000;
	/* The superseded heap item must not run the key a second time. */
	expect_empty(q);
	sk_workqueue_get_stats(q, &st);
	ck_assert_uint_eq(st.delayed, 0);
	sk_workqueue_free(q);
}
END_TEST

START_TEST(test_delayed_real_clock_wakes_waiter)
{
	sk_workqueue *q = sk_workqueue_new(NULL);
	char *k = NULL;
	int64_t t0 = sk_monotonic_ms(), dt;

	sk_workqueue_add_after(q, "x", 80);
	ck_assert_int_eq(sk_workqueue_get(q, 2000, &k), 0);
	dt = sk_monotonic_ms() - t0;
	ck_assert_str_eq(k, "x");
	ck_assert_int_ge(dt, 75);
	ck_assert_int_lt(dt, 1000);
	sk_workqueue_done(q, k);
	free(k);
	sk_workqueue_free(q);
}
END_TEST

START_TEST(test_add_resync)
{
	sk_workqueue *q = fake_queue();
	char *k = NULL;

	/* A requeue due within the period: the resync add is skipped. */
	sk_workqueue_add_after(q, "soon", 500);
	ck_assert(!sk_workqueue_add_resync(q, "soon", 1000));
	/* Due later than the period (a long backoff): the resync kicks it now. */
	sk_workqueue_add_after(q, "late", 5000);
	ck_assert(sk_workqueue_add_resync(q, "late", 1000));
	/* Unknown keys are added; queued or held keys are not added twice. */
	ck_assert(sk_workqueue_add_resync(q, "new", 1000));
	ck_assert(!sk_workqueue_add_resync(q, "new", 1000));
	expect_key(q, "late");
	ck_assert_int_eq(sk_workqueue_get(q, 0, &k), 0);
	ck_assert_str_eq(k, "new");
	ck_assert(!sk_workqueue_add_resync(q, "new", 1000));
	sk_workqueue_done(q, k);
	free(k);
	expect_empty(q);
	fake_now += 500;
	expect_key(q, "soon");
	sk_workqueue_free(q);
}
END_TEST

/* ---- backoff ---- */

START_TEST(test_backoff_growth_and_forget)
{
	sk_workqueue *q = fake_queue();
	int64_t want = 5;

	for (int i = 0; i < 10; i++) {
		ck_assert_int_eq(sk_workqueue_add_rate_limited(q, "k"), want);
		want *= 2;
	}
	ck_assert_int_eq(sk_workqueue_num_requeues(q, "k"), 10);
	for (int i = 0; i < 60; i++)
		sk_workqueue_add_rate_limited(q, "k");
	ck_assert_int_eq(sk_workqueue_backoff_peek(q, "k"), 1000000);
	ck_assert_int_eq(sk_workqueue_add_rate_limited(q, "k"), 1000000);
	sk_workqueue_forget(q, "k");
	ck_assert_int_eq(sk_workqueue_num_requeues(q, "k"), 0);
	ck_assert_int_eq(sk_workqueue_backoff_peek(q, "k"), 5);
	/* Another key's backoff is independent. */
	ck_assert_int_eq(sk_workqueue_add_rate_limited(q, "other"), 5);
	sk_workqueue_free(q);
}
END_TEST

START_TEST(test_rate_limited_uses_global_bucket)
{
	sk_workqueue_options o = SK_WORKQUEUE_OPTIONS_INIT;
	sk_workqueue *q;
	char key[16];

	fake_now = 0;
	o.clock = fake_clock;
	o.qps = 10;
	o.burst = 3;
	q = sk_workqueue_new(&o);
	for (int i = 0; i < 3; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		ck_assert_int_eq(sk_workqueue_add_rate_limited(q, key), 5);
	}
	/* Bucket empty: the 4th and 5th new keys wait 100 and 200 ms. */
	ck_assert_int_eq(sk_workqueue_add_rate_limited(q, "k3"), 100);
	ck_assert_int_eq(sk_workqueue_add_rate_limited(q, "k4"), 200);
	sk_workqueue_free(q);
}
END_TEST

/* ---- shutdown ---- */

static void *
blocking_get(void *p)
{
	sk_workqueue *q = p;
	char *k = NULL;
	intptr_t rc = sk_workqueue_get(q, -1, &k);

	free(k);
	return (void *)rc;
}

START_TEST(test_shutdown_wakes_waiters)
{
	sk_workqueue *q = sk_workqueue_new(NULL);
	pthread_t th[3];
	void *rc;
	int64_t t0;

	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, blocking_get, q);
	usleep(50000);
	t0 = sk_monotonic_ms();
	sk_workqueue_shutdown(q);
	for (int i = 0; i < 3; i++) {
		pthread_join(th[i], &rc);
		ck_assert_int_eq((int)(intptr_t)rc, SK_ERROR);
	}
	ck_assert_int_lt(sk_monotonic_ms() - t0, 500);
	ck_assert(sk_workqueue_shutting_down(q));
	/* Adds after shutdown are ignored. */
	sk_workqueue_add(q, "late");
	{
		sk_workqueue_stats st;
		sk_workqueue_get_stats(q, &st);
		ck_assert_uint_eq(st.depth, 0);
	}
	sk_workqueue_free(q);
}
END_TEST

START_TEST(test_done_after_shutdown)
{
	sk_workqueue *q = fake_queue();
	char *k = NULL;
	sk_workqueue_stats st;

	sk_workqueue_add(q, "a");
	ck_assert_int_eq(sk_workqueue_get(q, 0, &k), 0);
	sk_workqueue_shutdown(q);
	sk_workqueue_done(q, k);
	free(k);
	sk_workqueue_get_stats(q, &st);
	ck_assert_uint_eq(st.processing, 0);
	ck_assert_int_eq(sk_workqueue_get(q, 0, &k), SK_ERROR);
	sk_workqueue_free(q);
}
END_TEST

/* The timing client-go's workqueue metrics need: queue and work durations
 * through the observer, unfinished and longest-running work in the stats. */
typedef struct timings {
	int64_t queued[8], worked[8];
	int n_queued, n_worked;
} timings;

static void
record_timing(void *payload, bool work, int64_t ms)
{
	timings *t = payload;

	if (work)
		t->worked[t->n_worked++] = ms;
	else
		t->queued[t->n_queued++] = ms;
}

START_TEST(test_timing)
{
	sk_workqueue_options o = SK_WORKQUEUE_OPTIONS_INIT;
	timings t = { { 0 }, { 0 }, 0, 0 };
	sk_workqueue_stats st;
	sk_workqueue *q;
	char *a = NULL, *b = NULL;

	fake_now = 1000;
	o.clock = fake_clock;
	o.observe = record_timing;
	o.observe_payload = &t;
	q = sk_workqueue_new(&o);
	sk_workqueue_add(q, "a");
	fake_now += 30;
	sk_workqueue_add(q, "b");
	sk_workqueue_add_priority(q, "b"); /* a move to the front keeps b's time */
	fake_now += 20;
	ck_assert_int_eq(sk_workqueue_get(q, 0, &b), 0);
	ck_assert_str_eq(b, "b");
	ck_assert_int_eq(sk_workqueue_get(q, 0, &a), 0);
	ck_assert_int_eq(t.n_queued, 2);
	ck_assert_int_eq(t.queued[0], 20); /* b */
	ck_assert_int_eq(t.queued[1], 50); /* a */
	fake_now += 100;
	sk_workqueue_add(q, "a"); /* dirty while held: queued again at done */
	sk_workqueue_get_stats(q, &st);
	ck_assert_int_eq(st.unfinished_ms, 200);
	ck_assert_int_eq(st.longest_running_ms, 100);
	sk_workqueue_done(q, "b");
	ck_assert_int_eq(t.n_worked, 1);
	ck_assert_int_eq(t.worked[0], 100);
	fake_now += 5;
	sk_workqueue_done(q, "a");
	ck_assert_int_eq(t.worked[1], 105);
	sk_workqueue_get_stats(q, &st);
	ck_assert_int_eq(st.unfinished_ms, 0);
	ck_assert_int_eq(st.longest_running_ms, 0);
	fake_now += 7;
	free(a);
	ck_assert_int_eq(sk_workqueue_get(q, 0, &a), 0);
	ck_assert_int_eq(t.queued[2], 7); /* from the done that re-queued it */
	sk_workqueue_done(q, "a");
	free(a);
	free(b);
	sk_workqueue_free(q);
}
END_TEST

Suite *
sk_suite_workqueue(void)
{
	Suite *s = suite_create("workqueue");
	TCase *q = tcase_create("queue");
	TCase *d = tcase_create("delay");
	TCase *r = tcase_create("ratelimit");

	tcase_set_timeout(q, 30);
	tcase_add_test(q, test_dedup);
	tcase_add_test(q, test_readd_while_processing);
	tcase_add_test(q, test_priority);
	tcase_add_test(q, test_priority_while_processing);
	tcase_add_test(q, test_no_concurrent_processing);
	tcase_add_test(q, test_shutdown_wakes_waiters);
	tcase_add_test(q, test_done_after_shutdown);
	tcase_add_test(q, test_timing);
	tcase_add_test(d, test_delayed_order);
	tcase_add_test(d, test_delayed_earlier_replaces_later);
	tcase_add_test(d, test_delayed_real_clock_wakes_waiter);
	tcase_add_test(d, test_add_resync);
	tcase_add_test(r, test_backoff_growth_and_forget);
	tcase_add_test(r, test_rate_limited_uses_global_bucket);
	suite_add_tcase(s, q);
	suite_add_tcase(s, d);
	suite_add_tcase(s, r);
	return s;
}
