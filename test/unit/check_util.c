/* Unit tests for pkg/util: durations, RFC 3339 times, the capped buffer. */
#include <check.h>
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

	for (int64_t ms = 0; ms < 200000; ms++) {
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

Suite *sk_suite_util(void);

Suite *
sk_suite_util(void)
{
	Suite *s = suite_create("util");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, test_duration_parse_good, 0,
	        sizeof(good_durations) / sizeof(good_durations[0]));
	tcase_add_loop_test(
	        tc, test_duration_parse_bad, 0, sizeof(bad_durations) / sizeof(bad_durations[0]));
	tcase_add_test(tc, test_duration_round_trip);
	tcase_add_test(tc, test_time_round_trip);
	tcase_add_test(tc, test_buf_cap);
	suite_add_tcase(s, tc);
	return s;
}
