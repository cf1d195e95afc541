/*
 * Unit tests of the lease rule: another's lease expires only
 * after a full duration of the observer's own monotonic time without a
 * change (client-go's observedTime), whatever the renew time its writer
 * stamped; the holder's right runs from the start of its last renew on its
 * own monotonic clock. The clocks are injected: each process has its own
 * monotonic origin and its own wall-clock error.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"

Suite *sk_suite_lease(void);

#define D 4000 /* leaseDuration */
#define MARGIN 1000 /* leaseDuration - renewDeadline */

static sk_lease
lease(const char *holder, int64_t version, int64_t renew_ms)
{
	sk_lease l = { 0 };

	l.name = (char *)"shard-00";
	l.holder = (char *)holder;
	l.version = version;
	l.renew_ms = renew_ms;
	l.acquire_ms = renew_ms;
	l.duration_ms = D;
	return l;
}

static void
observe_one(sk_lease_observer *o, sk_lease *l, int64_t mono)
{
	sk_lease_list ll = { l, 1 };

	sk_lease_observe(o, &ll, mono);
}

/* The renew time in the record means nothing to the observer: a writer 90 s
 * ahead or behind is judged by when its record last changed. */
START_TEST(test_expiry_from_observed_change)
{
	const int64_t skews[] = { -90000, -20000, 0, 20000, 90000 };

	for (size_t k = 0; k < sizeof(skews) / sizeof(skews[0]); k++) {
		sk_lease_observer o = { 0 };
		int64_t mono = 777000; /* the observer's own origin */
		int64_t wall = 1700000000000; /* the observer's wall clock */
		sk_lease l = lease("b@h:1", 10, wall + skews[k]);

		observe_one(&o, &l, mono);
		ck_assert_msg(!sk_lease_observed_expired(&o, &l, mono + D - 1),
		        "skew %lld: expired before a full duration of our time",
		        (long long)skews[k]);
		ck_assert_msg(sk_lease_observed_expired(&o, &l, mono + D),
		        "skew %lld: not expired after a full duration unchanged",
		        (long long)skews[k]);
		/* a renew (new version) restarts our clock, whatever it stamps */
		l = lease("b@h:1", 11, wall + skews[k] - 500000);
		observe_one(&o, &l, mono + D + 100);
		ck_assert(!sk_lease_observed_expired(&o, &l, mono + 2 * D));
		ck_assert(sk_lease_observed_expired(&o, &l, mono + 2 * D + 100));
		sk_lease_observer_dispose(&o);
	}
}
END_TEST

START_TEST(test_first_sight_released_and_forgotten)
{
	sk_lease_observer o = { 0 };
	sk_lease l = lease("b@h:1", 5, 0), other = lease("c@h:2", 9, 0), free_l = lease("", 6, 0);
	sk_lease_list none = { NULL, 0 };

	/* never seen: not expired, even with a renew time far in the past */
	ck_assert(!sk_lease_observed_expired(&o, &l, 1000000));
	observe_one(&o, &l, 1000);
	/* listed again unchanged: the clock keeps running from the first sight */
	observe_one(&o, &l, 3000);
	ck_assert(sk_lease_observed_expired(&o, &l, 1000 + D));
	/* a take-over by another holder is a new version: a new clock */
	observe_one(&o, &other, 1000 + D);
	ck_assert(!sk_lease_observed_expired(&o, &other, 1000 + 2 * D - 1));
	/* released: free at once */
	observe_one(&o, &free_l, 1000 + D + 1);
	ck_assert(sk_lease_observed_expired(&o, &free_l, 1000 + D + 1));
	/* no longer listed: forgotten, so seen anew */
	sk_lease_observe(&o, &none, 20000);
	ck_assert_uint_eq(o.len, 0);
	ck_assert(!sk_lease_observed_expired(&o, &other, 90000));
	sk_lease_observer_dispose(&o);
}
END_TEST

START_TEST(test_holder_right)
{
	ck_assert(!sk_lease_holder_valid(0, D, MARGIN, 10)); /* never renewed */
	ck_assert(sk_lease_holder_valid(5000, D, MARGIN, 5000));
	ck_assert(sk_lease_holder_valid(5000, D, MARGIN, 5000 + D - MARGIN - 1));
	ck_assert(!sk_lease_holder_valid(5000, D, MARGIN, 5000 + D - MARGIN));
}
END_TEST

/* ---- two processes on one timeline ----
 * Real time t (ms). The holder renews every 500 ms until it freezes at
 * t_stop (SIGSTOP: its monotonic clock runs on, it just does nothing); a
 * renew starts at t, lands at t + write latency, and its right counts from
 * t. The observer lists every 500 ms (its own phase); a list reads the
 * record at its read time and comes back later; the observer sees a version
 * when the list came back. The observer takes over when its rule says
 * expired, and the take succeeds only if the record is still at the version
 * it saw (the store's compare-and-swap). Invariant: no successful take while
 * the holder still believes its right valid. */
typedef struct world {
	int64_t version; /* the record's */
	int64_t landed; /* when the last renew landed */
	int64_t right_from; /* holder: start of its last successful renew (its mono) */
} world;

/* Returns whether a take-over happened while the holder was still valid;
 * *took: when the take happened (-1 never). `wall_rule` judges with the old
 * rule instead: the record's renew time (the holder's wall clock) plus the
 * duration against the observer's wall clock. */
static bool
run_timeline(int64_t holder_mono0, int64_t observer_mono0, int64_t holder_skew,
        int64_t observer_skew, int64_t t_stop, int phase, bool wall_rule, int64_t *took)
{
	sk_lease_observer o = { 0 };
	world w = { 1, 0, 0 };
	int64_t pending_start = -1, pending_land = -1, list_read = -1, list_back = -1;
	int64_t renew_ms = 0, seen_version = 0;
	sk_lease seen = lease("a", 1, 0);
	bool violated = false;

	*took = -1;
	for (int64_t t = 0; t < 60000 && *took < 0; t += 10) {
		int64_t hm = holder_mono0 + t, om = observer_mono0 + t;
		/* the holder: a renew every 500 ms while running */
		if (t < t_stop && t % 500 == 0 && pending_start < 0) {
			pending_start = t;
			pending_land = t + 50 + (t / 10 * 7919) % 400; /* 50..450 ms in flight */
		}
		if (pending_start >= 0 && t >= pending_land) {
			w.version++;
			renew_ms = pending_start + holder_skew; /* stamped with its wall clock */
			w.right_from = holder_mono0 + pending_start;
			pending_start = -1;
		}
		/* the observer: a list every 500 ms at its phase, 0..300 ms back */
		if ((t + phase) % 500 == 0 && list_read < 0) {
			list_read = t;
			list_back = t + (t / 10 * 104729) % 300;
			seen = lease("a", w.version, renew_ms);
		}
		if (list_read >= 0 && t >= list_back) {
			observe_one(&o, &seen, om);
			seen_version = seen.version;
			list_read = -1;
		}
		if (seen_version > 0) {
			bool expired = wall_rule ? seen.renew_ms + D <= t + observer_skew
			                         : sk_lease_observed_expired(&o, &seen, om);
			if (expired && w.version == seen_version) {
				*took = t;
				violated = sk_lease_holder_valid(w.right_from, D, MARGIN, hm);
			}
		}
	}
	sk_lease_observer_dispose(&o);
	return violated;
}

START_TEST(test_no_take_while_holder_valid)
{
	const int64_t skews[] = { -90000, -20000, -3000, 0, 3000, 20000, 90000 };
	const int64_t stops[] = { 1000, 2730, 5010, 7777 };
	int64_t took;

	for (size_t a = 0; a < sizeof(skews) / sizeof(skews[0]); a++)
		for (size_t b = 0; b < sizeof(stops) / sizeof(stops[0]); b++)
			for (int phase = 0; phase < 500; phase += 70) {
				bool bad = run_timeline(
				        31337, 5, skews[a], 0, stops[b], phase, false, &took);
				ck_assert_msg(!bad,
				        "holder skew %lld, frozen at %lld, phase %d: taken at %lld "
				        "while the holder's right was valid",
				        (long long)skews[a], (long long)stops[b], phase,
				        (long long)took);
				ck_assert_msg(took > stops[b], "taken before the holder froze");
			}
}
END_TEST

/* The old rule (the holder's renew time against the observer's wall clock)
 * fails this very timeline once the clocks disagree: the test can fail. */
START_TEST(test_wall_rule_fails_under_skew)
{
	int64_t took;

	ck_assert(!run_timeline(31337, 5, 0, 0, 5010, 70, true, &took));
	ck_assert(run_timeline(31337, 5, -20000, 0, 5010, 70, true, &took));
	ck_assert(run_timeline(31337, 5, 0, 90000, 5010, 70, true, &took));
}
END_TEST

/* The write guard's verdict names the skew, its direction and the limit. */
START_TEST(test_clock_verdict)
{
	sk_clock_reading r = { true, 90250, 3, 0 };
	sk_error err = { 0 };

	ck_assert_int_eq(sk_store_clock_verdict(&r, 0, &err), SK_EUNAVAILABLE);
	ck_assert_msg(strstr(err.message, "90.250 s ahead of the database server's") &&
	                strstr(err.message, "limit 2.000 s"),
	        "%s", err.message);
	r.skew_ms = -90000;
	ck_assert_int_eq(sk_store_clock_verdict(&r, 0, &err), SK_EUNAVAILABLE);
	ck_assert_msg(strstr(err.message, "90.000 s behind"), "%s", err.message);
	r.skew_ms = SK_STORE_CLOCK_SKEW_MAX_MS;
	ck_assert_int_eq(sk_store_clock_verdict(&r, 0, &err), 0);
	r.skew_ms = -SK_STORE_CLOCK_SKEW_MAX_MS - 1;
	ck_assert_int_eq(sk_store_clock_verdict(&r, 0, &err), SK_EUNAVAILABLE);
	ck_assert_int_eq(sk_store_clock_verdict(&r, 5000, &err), 0);
	r.measured = false; /* no server clock (memory backend): nothing to judge */
	r.skew_ms = 90000;
	ck_assert_int_eq(sk_store_clock_verdict(&r, 0, &err), 0);
}
END_TEST

Suite *
sk_suite_lease(void)
{
	Suite *s = suite_create("lease");
	TCase *tc = tcase_create("rule");

	tcase_add_test(tc, test_expiry_from_observed_change);
	tcase_add_test(tc, test_first_sight_released_and_forgotten);
	tcase_add_test(tc, test_holder_right);
	tcase_add_test(tc, test_no_take_while_holder_valid);
	tcase_add_test(tc, test_wall_rule_fails_under_skew);
	tcase_add_test(tc, test_clock_verdict);
	suite_add_tcase(s, tc);
	return s;
}
