/*
 * Unit tests for the controller's logger (sk_ctl_log, pkg/controller): a
 * line below the controller's log_level is neither formatted nor handed
 * to the log function (the capacity queue's debug lines sit on hot paths),
 * a line at or above it arrives formatted.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../testutil.h"
#include "controller/ground_int.h"

Suite *sk_suite_ctl_log(void);

typedef struct seen {
	int n;
	sk_log_level level;
	char msg[64];
	char kv[256];
} seen;

static void
record(sk_log_level level, const char *msg, const char *kv, void *payload)
{
	seen *s = payload;

	s->n++;
	s->level = level;
	snprintf(s->msg, sizeof(s->msg), "%s", msg);
	snprintf(s->kv, sizeof(s->kv), "%s", kv);
}

/* A controller with only its log options set: all sk_ctl_log reads. */
static sk_controller *
logger(sk_log_level min, seen *s)
{
	sk_controller *c = sk_calloc(1, sizeof(*c));

	c->opts.log = record;
	c->opts.log_payload = s;
	c->opts.log_level = min;
	return c;
}

START_TEST(test_below_level_not_delivered)
{
	seen s = { 0 };
	sk_controller *c = logger(SK_LOG_INFO, &s);

	ck_assert(!sk_ctl_log_enabled(c, SK_LOG_DEBUG));
	ck_assert(sk_ctl_log_enabled(c, SK_LOG_INFO));
	ck_assert(sk_ctl_log_enabled(c, SK_LOG_ERROR));
	sk_ctl_log(c, SK_LOG_DEBUG, "capacity decide", "userspace=%s position=%d", "alice", 3);
	ck_assert_int_eq(s.n, 0);
	sk_ctl_log(c, SK_LOG_INFO, "controller started", "userspace=%s position=%d", "bob", 4);
	ck_assert_int_eq(s.n, 1);
	ck_assert_int_eq(s.level, SK_LOG_INFO);
	ck_assert_str_eq(s.msg, "controller started");
	ck_assert_str_eq(s.kv, "userspace=bob position=4");
	sk_ctl_log(c, SK_LOG_WARN, "reconcile failed", "error=\"%s\"", "boom");
	ck_assert_int_eq(s.n, 2);
	ck_assert_str_eq(s.kv, "error=\"boom\"");
	free(c);
}
END_TEST

START_TEST(test_default_delivers_debug)
{
	sk_controller_options def = SK_CONTROLLER_OPTIONS_INIT;
	seen s = { 0 };
	sk_controller *c = logger(def.log_level, &s);

	sk_ctl_log(c, SK_LOG_DEBUG, "capacity kick", "userspace=%s wake=%d", "carol", 1);
	ck_assert_int_eq(s.n, 1);
	ck_assert_str_eq(s.kv, "userspace=carol wake=1");
	/* no log function: nothing is enabled */
	c->opts.log = NULL;
	ck_assert(!sk_ctl_log_enabled(c, SK_LOG_ERROR));
	sk_ctl_log(c, SK_LOG_ERROR, "x", "y=%d", 1);
	ck_assert_int_eq(s.n, 1);
	free(c);
}
END_TEST

Suite *
sk_suite_ctl_log(void)
{
	Suite *s = suite_create("ctl_log");
	TCase *tc = tcase_create("level");

	tcase_add_test(tc, test_below_level_not_delivered);
	tcase_add_test(tc, test_default_delivers_debug);
	suite_add_tcase(s, tc);
	return s;
}
