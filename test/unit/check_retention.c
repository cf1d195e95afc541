/*
 * Table tests of the retention warning (pkg/reconcile/retention.c): a space
 * asleep at a provider with a pausedRetention and no archive is warned about
 * within a fifth of the retention or a day of it, whichever is longer; not
 * when awake, not with an archive, not without a retention; the sleep's
 * start from the DataPlaneHealthy condition or the last activity plus the
 * idle timeout, the earlier.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/retention.h"

Suite *sk_suite_retention(void);

#define NOW INT64_C(1800000000000)
#define HOUR (3600 * INT64_C(1000))

typedef struct ret_case {
	const char *name;
	sk_phase phase;
	const char *provider; /* spec.provider; NULL default */
	bool archive;
	const char *dp_status; /* DataPlaneHealthy; NULL none */
	int64_t dp_hours_ago;
	int64_t activity_hours_ago; /* 0 none */
	int64_t idle_hours;
	bool want;
	int64_t want_left_hours;
	const char *want_text; /* a substring of the warning */
} ret_case;

static const ret_case cases[] = {
	{ "awake: no warning", SK_PHASE_RUNNING, NULL, false, "True", 700, 0, 1, false, 0, NULL },
	{ "asleep 10 days of 30: not yet", SK_PHASE_IDLE, NULL, false, "Unknown", 240, 0, 1, false,
	        480, NULL },
	{ "asleep 24 days of 30: within a fifth", SK_PHASE_IDLE, NULL, false, "Unknown", 577, 0, 1,
	        true, 143, "in 143h" },
	{ "asleep 25 days with an archive: none", SK_PHASE_IDLE, NULL, true, "Unknown", 600, 0, 1,
	        false, 0, NULL },
	{ "paused by spec, 29 days: warned", SK_PHASE_PAUSED, NULL, false, "Unknown", 700, 0, 1,
	        true, 20, "provider default deletes a sandbox paused 720h" },
	{ "past the retention", SK_PHASE_IDLE, NULL, false, "Unknown", 730, 0, 1, true, -10,
	        "may be gone" },
	{ "a provider without a retention", SK_PHASE_IDLE, "other", false, "Unknown", 5000, 0, 1,
	        false, 0, NULL },
	{ "short retention: a day's margin", SK_PHASE_IDLE, "short", false, "Unknown", 25, 0, 1,
	        true, 23, "provider short" },
	{ "short retention, 2 days left: not yet", SK_PHASE_IDLE, "short", false, "Unknown", 0, 0,
	        0, false, 48, NULL },
	{ "the last activity plus idleTimeout is earlier", SK_PHASE_IDLE, NULL, false, "Unknown",
	        10, 590, 10, true, 140, "slept 580h" },
	{ "no known start: no warning", SK_PHASE_IDLE, NULL, false, NULL, 0, 0, 1, false, 0, NULL },
};

static sk_controller_config *
config(bool archive)
{
	sk_controller_config *c = sk_calloc(1, sizeof(*c));

	c->n_providers = 3;
	c->providers = sk_calloc(3, sizeof(*c->providers));
	c->providers[0].name = "default";
	c->providers[0].paused_retention_ms = 720 * HOUR;
	c->providers[1].name = "other";
	c->providers[2].name = "short";
	c->providers[2].paused_retention_ms = 48 * HOUR;
	if (archive)
		c->archive = sk_calloc(1, sizeof(*c->archive));
	return c;
}

START_TEST(test_retention_table)
{
	const ret_case *tc = &cases[_i];
	sk_controller_config *cfg = config(tc->archive);
	sk_userspace us = { 0 };
	sk_condition dp = { .type = SK_COND_DATAPLANE };
	sk_retention r;
	char text[512];
	bool got;

	us.spec.provider = (char *)tc->provider;
	us.spec.idle_timeout_ms = tc->idle_hours * HOUR;
	us.status.phase = tc->phase;
	if (tc->dp_status != NULL) {
		dp.status = (char *)tc->dp_status;
		dp.last_transition_ms = NOW - tc->dp_hours_ago * HOUR;
		us.status.conditions = &dp;
		us.status.n_conditions = 1;
	}
	if (tc->activity_hours_ago > 0)
		us.status.last_activity_ms = NOW - tc->activity_hours_ago * HOUR;
	got = sk_retention_check(cfg, &us, NOW, &r);
	ck_assert_msg(got == tc->want, "%s: warn %d, want %d", tc->name, got, tc->want);
	if (tc->want_left_hours != 0)
		ck_assert_msg(r.left_ms == tc->want_left_hours * HOUR, "%s: left %lld ms", tc->name,
		        (long long)r.left_ms);
	if (tc->want_text != NULL) {
		sk_retention_format(&r, "alice", NOW, text, sizeof(text));
		ck_assert_msg(strstr(text, tc->want_text) != NULL && strstr(text, "alice") != NULL,
		        "%s: \"%s\" lacks \"%s\"", tc->name, text, tc->want_text);
	}
	free(cfg->archive);
	free(cfg->providers);
	free(cfg);
}
END_TEST

Suite *
sk_suite_retention(void)
{
	Suite *s = suite_create("retention");
	TCase *tc = tcase_create("table");

	tcase_add_loop_test(tc, test_retention_table, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	suite_add_tcase(s, tc);
	return s;
}
