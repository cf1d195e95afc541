/* Unit tests for pkg/util: durations, RFC 3339 times, the capped buffer, the limiter, strmap, waits. */
#include <check.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

static const struct {
	const char *text;
	int64_t ms;
	const char *canonical;
} good_durations[] = {
	{ "90s", 90000, "1m30s" },
	{ "15m", 900000, "15m" },
	{ "1h30m", 5400000, "1h30m" },
	{ "1.5h", 5400000, "1h30m" },
	{ "250ms", 250, "250ms" },
	{ "0s", 0, "0s" },
	{ "2h0m5s", 7205000, "2h5s" },
	{ "720h", 2592000000LL, "720h" },
	{ "1500us", 1, "1ms" },
	{ "60s", 60000, "1m" },
};

START_TEST(test_duration_parse_good)
{
	int64_t ms = -1;
	char buf[64];

	ck_assert_int_eq(sk_duration_parse(good_durations[_i].text, &ms), SK_OK);
	ck_assert_int_eq(ms, good_durations[_i].ms);
	sk_duration_format(ms, buf, sizeof(buf));
	ck_assert_str_eq(buf, good_durations[_i].canonical);
	/* the canonical form parses back to the same value */
	ck_assert_int_eq(sk_duration_parse(buf, &ms), SK_OK);
	ck_assert_int_eq(ms, good_durations[_i].ms);
}
END_TEST

static const char *const bad_durations[] = { "", "15", "m", "-5s", "1x", "1h-", "h1", "1.h5",
	"99999999999999999999h", "1 h", "5S" };

/* What is written (sk_duration_format) reads back the same, to the ms. */
START_TEST(test_duration_round_trip)
{
	char buf[64];
	int64_t back;

	/* every value below 10 s, then a stride prime to 1000 up to 200 s (each
	 * digit of every field still varies): a fifth of the work of every value,
	 * which took seconds under ASan on a loaded machine */
	for (int64_t ms = 0; ms < 200000; ms += ms < 10000 ? 1 : 7) {
		sk_duration_format(ms, buf, sizeof(buf));
		ck_assert_int_eq(sk_duration_parse(buf, &back), SK_OK);
		ck_assert_msg(back == ms, "%lld ms -> \"%s\" -> %lld ms", (long long)ms, buf,
		        (long long)back);
	}
	ck_assert_int_eq(sk_duration_parse("1500us", &back), SK_OK);
	ck_assert_int_eq(back, 1);
}
END_TEST

START_TEST(test_duration_parse_bad)
{
	int64_t ms = 12345;

	ck_assert_int_eq(sk_duration_parse(bad_durations[_i], &ms), SK_EINVALID);
}
END_TEST

/* kubectl's HumanDuration, whole seconds: never milliseconds. */
START_TEST(test_age_format)
{
	static const struct {
		int64_t ms;
		const char *want;
	} cases[] = {
		{ -5, "0s" },
		{ 999, "0s" },
		{ 5000, "5s" },
		{ 119999, "119s" },
		{ 120000, "2m" },
		{ 291728, "4m51s" },
		{ 600000, "10m" },
		{ 179 * 60000LL, "179m" },
		{ 3 * 3600000LL + 5 * 60000, "3h5m" },
		{ 8 * 3600000LL + 5 * 60000, "8h" },
		{ 47 * 3600000LL, "47h" },
		{ 4 * 86400000LL + 3 * 3600000LL, "4d3h" },
		{ 10 * 86400000LL, "10d" },
		{ 800 * 86400000LL, "2y70d" },
	};
	char buf[32];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sk_age_format(cases[i].ms, buf, sizeof(buf));
		ck_assert_msg(strcmp(buf, cases[i].want) == 0, "%lld ms: got %s, want %s",
		        (long long)cases[i].ms, buf, cases[i].want);
	}
}
END_TEST

START_TEST(test_time_round_trip)
{
	char buf[64];
	int64_t ms = 0;
	const int64_t when = 1795878245123LL; /* 2026-11-28T... */

	sk_time_format(when, buf, sizeof(buf));
	ck_assert_int_eq((int)strlen(buf), 24);
	ck_assert_int_eq(buf[strlen(buf) - 1], 'Z');
	ck_assert_int_eq(sk_time_parse(buf, &ms), SK_OK);
	ck_assert_int_eq(ms, when);
	ck_assert_int_eq(sk_time_parse("2026-11-29T15:04:05Z", &ms), SK_OK);
	sk_time_format(ms, buf, sizeof(buf));
	ck_assert_str_eq(buf, "2026-11-29T15:04:05.000Z");
	ck_assert_int_eq(sk_time_parse("2026-11-29T17:04:05.5+02:00", &ms), SK_OK);
	sk_time_format(ms, buf, sizeof(buf));
	ck_assert_str_eq(buf, "2026-11-29T15:04:05.500Z");
	ck_assert_int_ne(sk_time_parse("yesterday", &ms), SK_OK);
	ck_assert_int_ne(sk_time_parse("", &ms), SK_OK);
}
END_TEST

/* The hand-written form against gmtime_r + snprintf (the old code) for
 * every day from 1970 to 2099 and every 97th to 9999 (one time of day each,
 * in turn), the edges at every time of day, and the fallbacks (before
 * 1970, from year 10000, a short buffer). Light enough for a loaded
 * machine under ASan. */
static void
time_format_libc(int64_t ms, char *buf, size_t len)
{
	time_t secs = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&secs, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
	        tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

START_TEST(test_time_format_by_hand)
{
	const int64_t day = 86400000, end = 253402300800000LL;
	const int64_t tod[] = { 0, 1, 999, 3599999, 43200123, day - 1 };
	const int64_t edges[] = { 0, 951782400000LL /* 2000-02-29 */,
		4107542400000LL /* 2100-03-01 */, end - 1, end, end + 86399999, -1, -1000,
		-86400001 };
	const size_t n_tod = sizeof(tod) / sizeof(tod[0]);
	char got[64], want[64];
	size_t k = 0;

	for (int64_t t = 0; t < end; t += t < 4102444800000LL /* 2100 */ ? day : 97 * day) {
		int64_t ms = t + tod[k++ % n_tod];
		sk_time_format(ms, got, sizeof(got));
		time_format_libc(ms, want, sizeof(want));
		if (strcmp(got, want) != 0)
			ck_abort_msg("%lld: %s, want %s", (long long)ms, got, want);
	}
	for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		for (size_t j = 0; j < n_tod; j++) {
			int64_t ms = edges[i] < 0 ? edges[i] - tod[j] : edges[i] + tod[j];
			sk_time_format(ms, got, sizeof(got));
			time_format_libc(ms, want, sizeof(want));
			ck_assert_str_eq(got, want);
		}
	}
	sk_time_format(end - 1, got, sizeof(got));
	ck_assert_str_eq(got, "9999-12-31T23:59:59.999Z");
	sk_time_format(951825845678LL, got, 25);
	ck_assert_str_eq(got, "2000-02-29T12:04:05.678Z");
	sk_time_format(951825845678LL, got, 11); /* truncated as snprintf truncates */
	ck_assert_str_eq(got, "2000-02-29");
}
END_TEST

START_TEST(test_buf_cap)
{
	sk_buf b = SK_BUF_INIT(16);
	char *s;

	ck_assert_int_eq(sk_buf_append(&b, "0123456789", 10), SK_OK);
	ck_assert_int_eq(sk_buf_append(&b, "0123456789", 10), SK_ENOMEM);
	/* the failed append left the buffer intact */
	ck_assert_uint_eq(b.len, 10);
	ck_assert_str_eq(b.data, "0123456789");
	ck_assert_int_eq(sk_buf_printf(&b, "%s", "abc"), SK_OK);
	ck_assert_str_eq(b.data, "0123456789abc");
	s = sk_buf_detach(&b);
	ck_assert_str_eq(s, "0123456789abc");
	ck_assert_uint_eq(b.len, 0);
	free(s);
	sk_buf_dispose(&b);
}
END_TEST

/* sk_buf_json_string writes what json_dumps writes for the same string:
 * every ASCII byte, UTF-8 of 2-4 bytes; invalid UTF-8 is refused as
 * json_string refuses it (a wrong escaper fails the byte comparison). */
START_TEST(test_buf_json_string_as_jansson)
{
	static const char *const cases[] = { "", "plain", "a\"b\\c/d", "tab\there\nnl\r\b\f",
		"\x01\x1f\x7f", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "\xe2\x80\xa8" };
	static const char *const bad[] = { "\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
		"a\xff"
		"b" };
	char all[128];
	size_t i;

	for (i = 1; i < sizeof(all); i++)
		all[i - 1] = (char)i;
	all[sizeof(all) - 1] = '\0';
	for (i = 0; i <= sizeof(cases) / sizeof(cases[0]); i++) {
		const char *in = i < sizeof(cases) / sizeof(cases[0]) ? cases[i] : all;
		json_t *j = json_string(in);
		char *want = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
		sk_buf b = SK_BUF_INIT(4096);

		ck_assert_ptr_nonnull(want);
		ck_assert_int_eq(sk_buf_json_string(&b, in), SK_OK);
		ck_assert_str_eq(b.data, want);
		free(want);
		json_decref(j);
		sk_buf_dispose(&b);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sk_buf b = SK_BUF_INIT(4096);

		ck_assert_ptr_null(json_string(bad[i]));
		ck_assert_int_eq(sk_buf_append(&b, "x", 1), SK_OK);
		ck_assert_int_eq(sk_buf_json_string(&b, bad[i]), SK_EINVALID);
		ck_assert_str_eq(b.data, "x");
		sk_buf_dispose(&b);
	}
}
END_TEST

/* ---- limiter (moved from check_workqueue.c with pkg/util/ratelimit.c) ---- */

static int64_t fake_now;

static int64_t
fake_clock(void *payload)
{
	(void)payload;
	return fake_now;
}

START_TEST(test_token_bucket_rate)
{
	sk_limiter_options o = SK_LIMITER_OPTIONS_INIT;
	sk_limiter *l;
	int taken = 0;

	fake_now = 0;
	o.qps = 10;
	o.burst = 5;
	o.clock = fake_clock;
	l = sk_limiter_new(&o);
	for (int i = 0; i < 5; i++)
		ck_assert(sk_limiter_try_take(l));
	ck_assert(!sk_limiter_try_take(l));
	fake_now += 100;
	ck_assert(sk_limiter_try_take(l));
	ck_assert(!sk_limiter_try_take(l));
	/* Over 10 simulated seconds at 10 qps: about 100 tokens, never more. */
	for (int t = 0; t < 10000; t += 10) {
		fake_now += 10;
		while (sk_limiter_try_take(l))
			taken++;
	}
	ck_assert_int_ge(taken, 99);
	ck_assert_int_le(taken, 101);
	/* The bucket never holds more than burst. */
	fake_now += 60000;
	taken = 0;
	while (sk_limiter_try_take(l))
		taken++;
	ck_assert_int_eq(taken, 5);
	ck_assert_int_eq(sk_limiter_reserve(l), 100);
	ck_assert_int_eq(sk_limiter_reserve(l), 200);
	sk_limiter_free(l);
}
END_TEST

START_TEST(test_limiter_in_flight)
{
	sk_limiter_options o = SK_LIMITER_OPTIONS_INIT;
	sk_limiter *l;
	atomic_bool cancel = false;

	o.qps = 0; /* unlimited rate: only the in-flight cap applies */
	o.max_in_flight = 2;
	l = sk_limiter_new(&o);
	ck_assert_int_eq(sk_limiter_acquire(l, 100, NULL), 0);
	ck_assert_int_eq(sk_limiter_acquire(l, 100, NULL), 0);
	ck_assert_int_eq(sk_limiter_in_flight(l), 2);
	ck_assert_int_eq(sk_limiter_acquire(l, 100, NULL), SK_ETIMEOUT);
	atomic_store(&cancel, true);
	ck_assert_int_eq(sk_limiter_acquire(l, -1, &cancel), SK_ERROR);
	sk_limiter_release(l);
	ck_assert_int_eq(sk_limiter_acquire(l, 100, NULL), 0);
	sk_limiter_release(l);
	sk_limiter_release(l);
	ck_assert_int_eq(sk_limiter_in_flight(l), 0);
	sk_limiter_free(l);
}
END_TEST

START_TEST(test_limiter_acquire_waits_for_token)
{
	sk_limiter_options o = SK_LIMITER_OPTIONS_INIT;
	sk_limiter *l;
	int64_t t0, dt;

	o.qps = 20; /* one token per 50 ms */
	o.burst = 1;
	l = sk_limiter_new(&o);
	t0 = sk_monotonic_ms();
	for (int i = 0; i < 5; i++) {
		ck_assert_int_eq(sk_limiter_acquire(l, -1, NULL), 0);
		sk_limiter_release(l);
	}
	dt = sk_monotonic_ms() - t0;
	ck_assert_int_ge(dt, 190);
	ck_assert_int_lt(dt, 1500);
	sk_limiter_free(l);
}
END_TEST

/* ---- strmap ---- */

START_TEST(test_strmap)
{
	sk_strmap *m = sk_strmap_new(free);
	char key[32], **keys;
	size_t n;

	for (int i = 0; i < 2000; i++) {
		snprintf(key, sizeof(key), "key-%04d", i);
		sk_strmap_put(m, key, sk_strdup(key));
	}
	ck_assert_uint_eq(sk_strmap_len(m), 2000);
	ck_assert_str_eq(sk_strmap_get(m, "key-1234"), "key-1234");
	sk_strmap_put(m, "key-1234", sk_strdup("replaced"));
	ck_assert_str_eq(sk_strmap_get(m, "key-1234"), "replaced");
	ck_assert_uint_eq(sk_strmap_len(m), 2000);
	ck_assert(sk_strmap_remove(m, "key-0000"));
	ck_assert(!sk_strmap_remove(m, "key-0000"));
	ck_assert(!sk_strmap_has(m, "key-0000"));
	ck_assert_ptr_null(sk_strmap_get(m, "nope"));
	keys = sk_strmap_keys(m, &n);
	ck_assert_uint_eq(n, 1999);
	ck_assert_str_eq(keys[0], "key-0001");
	ck_assert_str_eq(keys[n - 1], "key-1999");
	sk_strv_free(keys, n);
	sk_strmap_free(m);
}
END_TEST

/* ---- waits on the monotonic clock, the cancel flag ---- */

typedef struct waker {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	atomic_bool flag;
	bool signalled;
	int64_t after_ms;
} waker;

static void
waker_init(waker *w, int64_t after_ms)
{
	pthread_mutex_init(&w->mu, NULL);
	sk_cond_init_monotonic(&w->cond);
	atomic_init(&w->flag, false);
	w->signalled = false;
	w->after_ms = after_ms;
}

static void
waker_dispose(waker *w)
{
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cond);
}

/* Sleeps after_ms, then raises the flag and signals the condition. */
static void *
waker_main(void *arg)
{
	waker *w = arg;

	sk_sleep_ms(w->after_ms);
	atomic_store(&w->flag, true);
	pthread_mutex_lock(&w->mu);
	w->signalled = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* A wait of 150 ms lasts 150 ms: a condition on the wrong clock for its
 * deadline (wall clock vs monotonic) would return at once or hang. */
START_TEST(test_cond_wait_times_out)
{
	waker w;
	int64_t t0, dt;
	bool woke;

	waker_init(&w, 0);
	pthread_mutex_lock(&w.mu);
	t0 = sk_monotonic_ms();
	do
		woke = sk_cond_wait_ms(&w.cond, &w.mu, 150 - (sk_monotonic_ms() - t0));
	while (woke && sk_monotonic_ms() - t0 < 150); /* spurious wakeups */
	dt = sk_monotonic_ms() - t0;
	pthread_mutex_unlock(&w.mu);
	ck_assert(!woke);
	ck_assert_int_ge(dt, 149);
	ck_assert_int_lt(dt, 1500);
	waker_dispose(&w);
}
END_TEST

START_TEST(test_cond_wait_wakes_on_signal)
{
	waker w;
	pthread_t th;
	int64_t t0, dt;

	waker_init(&w, 100);
	t0 = sk_monotonic_ms();
	pthread_create(&th, NULL, waker_main, &w);
	pthread_mutex_lock(&w.mu);
	while (!w.signalled)
		ck_assert(sk_cond_wait_ms(&w.cond, &w.mu, 10000) || w.signalled);
	pthread_mutex_unlock(&w.mu);
	dt = sk_monotonic_ms() - t0;
	pthread_join(th, NULL);
	ck_assert_int_ge(dt, 99);
	ck_assert_int_lt(dt, 5000);
	waker_dispose(&w);
}
END_TEST

START_TEST(test_sleep_ms)
{
	int64_t t0 = sk_monotonic_ms();

	sk_sleep_ms(60);
	ck_assert_int_ge(sk_monotonic_ms() - t0, 59);
	t0 = sk_monotonic_ms();
	sk_sleep_ms(0);
	sk_sleep_ms(-5);
	ck_assert_int_lt(sk_monotonic_ms() - t0, 50);
}
END_TEST

/* Another thread raises the cancel flag while acquire waits for a slot. */
START_TEST(test_limiter_cancel_from_thread)
{
	sk_limiter_options o = SK_LIMITER_OPTIONS_INIT;
	sk_limiter *l;
	waker w;
	pthread_t th;
	int64_t t0, dt;

	o.qps = 0;
	o.max_in_flight = 1;
	l = sk_limiter_new(&o);
	ck_assert_int_eq(sk_limiter_acquire(l, -1, NULL), 0);
	waker_init(&w, 100);
	t0 = sk_monotonic_ms();
	pthread_create(&th, NULL, waker_main, &w);
	ck_assert_int_eq(sk_limiter_acquire(l, -1, &w.flag), SK_ERROR);
	dt = sk_monotonic_ms() - t0;
	pthread_join(th, NULL);
	ck_assert_int_ge(dt, 99);
	ck_assert_int_lt(dt, 2000);
	ck_assert_int_eq(sk_limiter_in_flight(l), 1);
	sk_limiter_release(l);
	sk_limiter_free(l);
	waker_dispose(&w);
}
END_TEST

/* ---- random identifiers ---- */

START_TEST(test_random_ids)
{
	sk_strmap *seen = sk_strmap_new(NULL);
	char id[37];

	for (int i = 0; i < 1000; i++) {
		sk_uuid4(id);
		ck_assert_uint_eq(strlen(id), 36);
		ck_assert(id[8] == '-' && id[13] == '-' && id[18] == '-' && id[23] == '-');
		ck_assert_int_eq(id[14], '4');
		ck_assert_ptr_nonnull(strchr("89ab", id[19]));
		ck_assert(!sk_strmap_has(seen, id));
		sk_strmap_put(seen, id, NULL);
	}
	sk_strmap_free(seen);
}
END_TEST

/* The one failure classification (sk_error_retry), every code: util's
 * sk_error_is_transient and the reconcile's used to differ on a conflict and
 * on not-found; both are transient (level-triggered, a lost
 * compare-and-swap reads again, a 404 under an action is re-observed), but
 * only by reading again, never by repeating the same call. */
static const struct {
	int code;
	sk_retry retry;
} retry_table[] = {
	{ SK_EUNAVAILABLE, SK_RETRY_SAME }, { SK_ETIMEOUT, SK_RETRY_SAME },
	{ SK_ETRANSIENT, SK_RETRY_SAME }, { SK_ECONFLICT, SK_RETRY_REREAD },
	{ SK_ENOTFOUND, SK_RETRY_REREAD }, { SK_OK, SK_RETRY_NEVER }, { SK_ERROR, SK_RETRY_NEVER },
	{ SK_ENOMEM, SK_RETRY_NEVER }, { SK_EINVALID, SK_RETRY_NEVER },
	{ SK_EEXISTS, SK_RETRY_NEVER }, { SK_ETERMINAL, SK_RETRY_NEVER },
	{ SK_ENOTSUPPORTED, SK_RETRY_NEVER }, { SK_EIO, SK_RETRY_NEVER },
	{ SK_EUNAUTHORIZED, SK_RETRY_NEVER },
	{ -99, SK_RETRY_NEVER }, /* a code not listed is terminal */
};

START_TEST(test_error_retry_table)
{
	int code = retry_table[_i].code;

	ck_assert_msg(sk_error_retry(code) == retry_table[_i].retry, "%s (%d): retry %d, want %d",
	        sk_strerror(code), code, (int)sk_error_retry(code), (int)retry_table[_i].retry);
	ck_assert_msg(sk_error_is_transient(code) == (retry_table[_i].retry != SK_RETRY_NEVER),
	        "%s (%d): transient %d", sk_strerror(code), code, sk_error_is_transient(code));
}
END_TEST

/* The domain says where a failure came from; a new error starts without one. */
START_TEST(test_error_domain)
{
	sk_error err = { 0 };

	ck_assert_int_eq(err.domain, SK_EDOMAIN_NONE);
	err.domain = SK_EDOMAIN_DATABASE;
	sk_error_prefix(&err, "status write");
	ck_assert_int_eq(err.domain, SK_EDOMAIN_DATABASE); /* a prefix keeps it */
	ck_assert_int_eq(sk_error_set(&err, SK_EUNAVAILABLE, "provider down"), SK_EUNAVAILABLE);
	ck_assert_int_eq(err.domain, SK_EDOMAIN_NONE); /* a new error does not inherit it */
}
END_TEST

/* sk_cron_parse and sk_cron_next (UTC): the next time strictly after. */
static const struct {
	const char *sched, *after, *want;
} cron_next_rows[] = {
	{ "*/15 * * * *", "2026-12-03T10:07:30Z", "2026-12-03T10:15:00Z" },
	{ "0 3 * * *", "2026-12-03T03:00:00Z", "2026-12-04T03:00:00Z" },
	{ "30 2 1 * *", "2026-12-03T00:00:00Z", "2027-01-01T02:30:00Z" },
	{ "0 0 * * 0", "2026-12-03T12:00:00Z", "2026-12-06T00:00:00Z" }, /* Thursday to Sunday */
	{ "0 0 * * 7", "2026-12-03T12:00:00Z", "2026-12-06T00:00:00Z" }, /* 7 is Sunday too */
	{ "0 0 13 * 5", "2026-12-03T12:00:00Z", "2026-12-04T00:00:00Z" }, /* the 13th or a Friday */
	{ "0 12 * 2 *", "2026-12-03T00:00:00Z", "2027-02-01T12:00:00Z" },
	{ "0 0 29 2 *", "2026-03-01T00:00:00Z", "2028-02-29T00:00:00Z" },
	{ "*/3 * * * * *", "2026-12-03T10:00:01.500Z", "2026-12-03T10:00:03Z" },
	{ "5-10/5 * * * *", "2026-12-03T10:06:00Z", "2026-12-03T10:10:00Z" },
	{ "7/20 * * * *", "2026-12-03T10:28:00Z", "2026-12-03T10:47:00Z" },
	{ "1,31 0 * * *", "2026-12-03T00:02:00Z", "2026-12-03T00:31:00Z" },
	{ "59 23 31 12 *", "2026-12-31T23:59:00Z", "2027-12-31T23:59:00Z" },
	{ "0 */6 * * 1-5", "2026-12-04T19:00:00Z", "2026-12-07T00:00:00Z" }, /* Friday to Monday */
	{ " 0  0 1 1 * ", "2026-12-03T00:00:00Z", "2027-01-01T00:00:00Z" },
};

START_TEST(test_cron_next)
{
	sk_cron c;
	char why[256], got[64];
	int64_t after, want, next;

	ck_assert_msg(sk_cron_parse(cron_next_rows[_i].sched, &c, why, sizeof(why)) == SK_OK,
	        "%s: %s", cron_next_rows[_i].sched, why);
	ck_assert_int_eq(sk_time_parse(cron_next_rows[_i].after, &after), SK_OK);
	ck_assert_int_eq(sk_time_parse(cron_next_rows[_i].want, &want), SK_OK);
	next = sk_cron_next(&c, after);
	sk_time_format(next, got, sizeof(got));
	ck_assert_msg(next == want, "%s after %s: %s, want %s", cron_next_rows[_i].sched,
	        cron_next_rows[_i].after, got, cron_next_rows[_i].want);
}
END_TEST

static const struct {
	const char *sched, *why;
} cron_bad_rows[] = {
	{ "", "an empty schedule" },
	{ "* * * *", "4 fields: want 5" },
	{ "* * * * * * *", "more than 6 fields" },
	{ "60 * * * *", "minute \"60\"" },
	{ "* 24 * * *", "hour \"24\"" },
	{ "* * 0 * *", "day of month \"0\"" },
	{ "* * * 13 *", "month \"13\"" },
	{ "* * * * 8", "day of week \"8\"" },
	{ "*/0 * * * *", "minute \"*/0\"" },
	{ "1-2-3 * * * *", "minute \"1-2-3\"" },
	{ "5-1 * * * *", "minute \"5-1\"" },
	{ "1, * * * *", "minute \"1,\"" },
	{ "MON * * * *", "minute \"MON\"" },
	{ "60 * * * * *", "second \"60\"" },
	{ "0 0 30 2 *", "never fires" },
};

START_TEST(test_cron_bad)
{
	sk_cron c;
	char why[256] = "";

	ck_assert_int_eq(sk_cron_parse(cron_bad_rows[_i].sched, &c, why, sizeof(why)), SK_EINVALID);
	ck_assert_msg(strstr(why, cron_bad_rows[_i].why) != NULL, "\"%s\": \"%s\", want \"%s\"",
	        cron_bad_rows[_i].sched, why, cron_bad_rows[_i].why);
}
END_TEST

Suite *sk_suite_util(void);

Suite *
sk_suite_util(void)
{
	Suite *s = suite_create("util");
	TCase *tc = tcase_create("core");
	TCase *lim = tcase_create("limiter");
	TCase *map = tcase_create("strmap");
	TCase *wait = tcase_create("wait");

	tcase_set_timeout(tc, 30); /* round trips under ASan on a loaded 2-core machine */

	tcase_add_loop_test(tc, test_duration_parse_good, 0,
	        sizeof(good_durations) / sizeof(good_durations[0]));
	tcase_add_loop_test(
	        tc, test_duration_parse_bad, 0, sizeof(bad_durations) / sizeof(bad_durations[0]));
	tcase_add_test(tc, test_duration_round_trip);
	tcase_add_test(tc, test_time_round_trip);
	tcase_add_test(tc, test_time_format_by_hand);
	tcase_add_test(tc, test_age_format);
	tcase_add_test(tc, test_buf_cap);
	tcase_add_test(tc, test_buf_json_string_as_jansson);
	tcase_add_loop_test(
	        tc, test_error_retry_table, 0, sizeof(retry_table) / sizeof(retry_table[0]));
	tcase_add_test(tc, test_error_domain);
	tcase_add_loop_test(
	        tc, test_cron_next, 0, sizeof(cron_next_rows) / sizeof(cron_next_rows[0]));
	tcase_add_loop_test(tc, test_cron_bad, 0, sizeof(cron_bad_rows) / sizeof(cron_bad_rows[0]));
	suite_add_tcase(s, tc);
	tcase_add_test(lim, test_token_bucket_rate);
	tcase_add_test(lim, test_limiter_in_flight);
	tcase_add_test(lim, test_limiter_acquire_waits_for_token);
	suite_add_tcase(s, lim);
	tcase_add_test(lim, test_limiter_cancel_from_thread);
	tcase_add_test(map, test_strmap);
	tcase_add_test(map, test_random_ids);
	tcase_add_test(wait, test_cond_wait_times_out);
	tcase_add_test(wait, test_cond_wait_wakes_on_signal);
	tcase_add_test(wait, test_sleep_ms);
	suite_add_tcase(s, wait);
	suite_add_tcase(s, map);
	return s;
}
