/*
 * Integration tests of pkg/reconcile (observe -> plan -> execute) against a
 * real FerretDB and sandboxsim (e2b flavour): convergence, duplicates, the
 * empty list, a crash between create and bind, pause/resume, deletion
 * policies, Replace after unhealthyAfter, and status compare-and-swap.
 */
#include <check.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../testutil.h"
#include "api/names.h"
#include "reconcile/reconcile.h"
#include "reconcile/reconcile_int.h" /* sk_execute, sk_observed_init */
#include "reconcile_fixture.h"

Suite *sk_suite_reconcile(void);

#define KEY_VAR "SK_TEST_RECONCILE_KEY"

typedef sk_rfix fixture;

static int64_t clock_offset;

static int64_t
test_now(void)
{
	return sk_now_ms() + clock_offset;
}

static void
setup(fixture *f)
{
	clock_offset = 0;
	sk_rfix_setup(f, KEY_VAR);
	f->env.now = test_now;
	f->env.opts.resume_grace_ms = 2000;
}

static long
sim_post(fixture *f, const char *path, const char *json)
{
	return sk_test_post_json(f->url, path, json);
}

/* The user's managed sandboxes as the controller would list them. */
static int
list_user(fixture *f, const char *user, sk_sandbox_list *out)
{
	sk_kvlist match = { 0 };
	sk_error err = { 0 };
	int rc;

	memset(out, 0, sizeof(*out));
	sk_kvlist_set(&match, SK_META_USER_ID, user);
	sk_kvlist_set(&match, SK_META_MANAGED_BY, SK_MANAGED_BY_VALUE);
	rc = sk_sandbox_list_all(f->p, &match, out, &err);
	sk_kvlist_dispose(&match);
	return rc;
}

static size_t
count_user(fixture *f, const char *user, sk_sandbox_state state)
{
	sk_sandbox_list l;
	size_t n = 0;

	ck_assert_int_eq(list_user(f, user, &l), 0);
	for (size_t i = 0; i < l.len; i++) {
		if (state == SK_SANDBOX_UNKNOWN || l.items[i].state == state)
			n++;
	}
	sk_sandbox_list_dispose(&l);
	return n;
}

/* One round; empty_list: the controller's list came back empty. */
static int
round_(fixture *f, const char *name, const char *user, bool empty_list, sk_error *err)
{
	sk_sandbox_list l = { 0 };
	sk_list_view v = { 0 };
	int64_t requeue = 0;
	int rc;

	v.listed_ms = test_now();
	v.valid = empty_list || list_user(f, user, &l) == 0;
	v.for_user = &l;
	sk_error_clear(err);
	rc = sk_reconcile(&f->env, name, &v, &requeue, err);
	sk_sandbox_list_dispose(&l);
	return rc;
}

/* Rounds until Ready (at most n); returns the object. */
static sk_userspace *
converge(fixture *f, const char *name, const char *user, int n)
{
	sk_error err;

	for (int i = 0; i < n; i++) {
		sk_userspace *us;
		round_(f, name, user, false, &err);
		us = sk_rfix_get(f, name);
		if (sk_userspace_is_ready(us))
			return us;
		sk_userspace_free(us);
	}
	ck_abort_msg("%s did not become Ready in %d rounds", name, n);
	return NULL;
}

static bool
has_drift(const sk_userspace *us, const char *type)
{
	for (size_t i = 0; i < us->status.n_drift; i++) {
		if (strcmp(us->status.drift[i].type, type) == 0)
			return true;
	}
	return false;
}

static void
precreate(fixture *f, const char *user, sk_sandbox *out)
{
	sk_kvlist meta = { 0 };
	sk_create_request req = { .template_id = "base", .timeout_ms = 600000, .metadata = &meta };
	sk_error err = { 0 };

	sk_kvlist_set(&meta, SK_META_USER_ID, user);
	sk_kvlist_set(&meta, SK_META_MANAGED_BY, SK_MANAGED_BY_VALUE);
	ck_assert_msg(sk_sandbox_create(f->p, &req, out, &err) == 0, "%s", err.message);
	sk_kvlist_dispose(&meta);
}

START_TEST(test_converge)
{
	fixture f;
	sk_userspace *us;
	sk_sandbox_list l;

	setup(&f);
	sk_rfix_apply(&f, "alice", "alice", NULL);
	us = converge(&f, "alice", "alice", 5);
	ck_assert_int_eq(us->status.phase, SK_PHASE_RUNNING);
	ck_assert_ptr_nonnull(us->status.sandbox_id);
	ck_assert_int_eq(us->status.observed_generation, us->meta.generation);
	ck_assert_int_eq(list_user(&f, "alice", &l), 0);
	ck_assert_uint_eq(l.len, 1);
	ck_assert_str_eq(l.items[0].id, us->status.sandbox_id);
	ck_assert_str_eq(sk_kvlist_get(&l.items[0].metadata, "userspace"), "alice");
	ck_assert_str_eq(sk_kvlist_get(&l.items[0].metadata, "userspace_uid"), us->meta.uid);
	ck_assert(sk_rfix_has_event(&f, "alice", "Created"));
	sk_sandbox_list_dispose(&l);
	/* steady state: another round writes nothing (no resourceVersion bump) */
	{
		sk_error err;
		sk_userspace *again;
		ck_assert_int_eq(round_(&f, "alice", "alice", false, &err), 0);
		again = sk_rfix_get(&f, "alice");
		ck_assert_int_eq(again->meta.resource_version, us->meta.resource_version);
		sk_userspace_free(again);
	}
	sk_userspace_free(us);
	sk_rfix_teardown(&f);
}
END_TEST

START_TEST(test_duplicates)
{
	fixture f;
	sk_sandbox a, b, c;
	sk_userspace *us;
	sk_error err;

	setup(&f);
	precreate(&f, "bob", &a);
	precreate(&f, "bob", &b);
	precreate(&f, "bob", &c);
	sk_rfix_apply(&f, "bob", "bob", NULL);
	ck_assert_int_eq(round_(&f, "bob", "bob", false, &err), 0);
	us = sk_rfix_get(&f, "bob");
	ck_assert(has_drift(us, SK_DRIFT_DUPLICATE));
	ck_assert_ptr_nonnull(us->status.sandbox_id);
	ck_assert_uint_eq(count_user(&f, "bob", SK_SANDBOX_UNKNOWN), 1);
	sk_userspace_free(us);
	us = converge(&f, "bob", "bob", 5);
	ck_assert(!has_drift(us, SK_DRIFT_DUPLICATE));
	ck_assert(sk_rfix_has_event(&f, "bob", "DuplicateDeleted"));
	sk_userspace_free(us);
	sk_sandbox_dispose(&a);
	sk_sandbox_dispose(&b);
	sk_sandbox_dispose(&c);
	sk_rfix_teardown(&f);
}
END_TEST

/* The list is empty (and a GET still works): never a second sandbox. */
START_TEST(test_empty_list)
{
	fixture f;
	sk_userspace *us;
	sk_error err;
	char *bound;

	setup(&f);
	sk_rfix_apply(&f, "carol", "carol", NULL);
	us = converge(&f, "carol", "carol", 5);
	bound = strdup(us->status.sandbox_id);
	sk_userspace_free(us);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(round_(&f, "carol", "carol", true, &err), 0);
	us = sk_rfix_get(&f, "carol");
	ck_assert_str_eq(us->status.sandbox_id, bound);
	ck_assert_uint_eq(count_user(&f, "carol", SK_SANDBOX_UNKNOWN), 1);
	sk_userspace_free(us);
	/* the provider lists nothing at all and GETs fail: still no create */
	ck_assert_int_eq(
	        sim_post(&f, "/_sim/faults",
	                "{\"list_empty_s\": -1, \"errors\": {\"get\": {\"status\": 503}}}"),
	        200);
	ck_assert_int_ne(round_(&f, "carol", "carol", true, &err), 0);
	ck_assert(sk_error_is_transient(err.code));
	ck_assert_int_eq(sim_post(&f, "/_sim/faults", "{\"errors\": {\"get\": null}}"), 200);
	ck_assert_int_eq(round_(&f, "carol", "carol", true, &err), 0);
	ck_assert_int_eq(sim_post(&f, "/_sim/faults", "{\"list_empty_s\": 0}"), 200);
	ck_assert_uint_eq(count_user(&f, "carol", SK_SANDBOX_UNKNOWN), 1);
	free(bound);
	sk_rfix_teardown(&f);
}
END_TEST

/* A crash after create and before bind: status says Creating, nothing bound,
 * and the provider's lists come back empty: no second create within the grace. */
START_TEST(test_crash_between_create_and_bind)
{
	fixture f;
	sk_userspace *us, *base, *out = NULL;
	sk_sandbox a;
	sk_error err = { 0 };

	setup(&f);
	sk_rfix_apply(&f, "dave", "dave", NULL);
	us = sk_rfix_get(&f, "dave");
	base = sk_rfix_get(&f, "dave");
	us->status.phase = SK_PHASE_CREATING;
	us->status.last_reconcile_ms = test_now();
	ck_assert_int_eq(sk_store_write_status(f.store, base, &us->status, &out, &err), 0);
	sk_userspace_free(base);
	precreate(&f, "dave", &a); /* the create the dead controller made */
	ck_assert_int_eq(sim_post(&f, "/_sim/faults", "{\"list_empty_s\": -1}"), 200);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(round_(&f, "dave", "dave", true, &err), 0);
	ck_assert_int_eq(sim_post(&f, "/_sim/faults", "{\"list_empty_s\": 0}"), 200);
	ck_assert_uint_eq(count_user(&f, "dave", SK_SANDBOX_UNKNOWN), 1);
	sk_userspace_free(us);
	/* lists work again: the sandbox is adopted, not duplicated */
	us = converge(&f, "dave", "dave", 5);
	ck_assert_str_eq(us->status.sandbox_id, a.id);
	ck_assert_uint_eq(count_user(&f, "dave", SK_SANDBOX_UNKNOWN), 1);
	sk_userspace_free(us);
	sk_userspace_free(out);
	sk_sandbox_dispose(&a);
	sk_rfix_teardown(&f);
}
END_TEST

START_TEST(test_pause_resume)
{
	fixture f;
	sk_userspace *us;

	setup(&f);
	sk_rfix_apply(&f, "erin", "erin", ", lifecycle: {idleTimeout: 0s}"); /* always on */
	sk_userspace_free(converge(&f, "erin", "erin", 5));
	sk_rfix_set_mode(&f, "erin", SK_MODE_PAUSED);
	us = converge(&f, "erin", "erin", 5);
	ck_assert_int_eq(us->status.phase, SK_PHASE_PAUSED);
	ck_assert_int_eq(us->status.observed_generation, 2);
	ck_assert_uint_eq(count_user(&f, "erin", SK_SANDBOX_PAUSED), 1);
	sk_userspace_free(us);
	sk_rfix_set_mode(&f, "erin", SK_MODE_RUNNING);
	us = converge(&f, "erin", "erin", 8);
	ck_assert_int_eq(us->status.phase, SK_PHASE_RUNNING);
	ck_assert_uint_eq(count_user(&f, "erin", SK_SANDBOX_RUNNING), 1);
	ck_assert_uint_eq(count_user(&f, "erin", SK_SANDBOX_UNKNOWN), 1);
	ck_assert(sk_rfix_has_event(&f, "erin", "Resumed"));
	sk_userspace_free(us);
	sk_rfix_teardown(&f);
}
END_TEST

static void
delete_with(const char *policy, size_t want_left)
{
	fixture f;
	sk_userspace *us = NULL;
	sk_error err = { 0 };
	char extra[64];

	setup(&f);
	snprintf(extra, sizeof(extra), ", deletionPolicy: %s", policy);
	sk_rfix_apply(&f, "frank", "frank", extra);
	sk_userspace_free(converge(&f, "frank", "frank", 5));
	ck_assert_int_eq(sk_store_mark_deleted(f.store, "frank", &err), 0);
	ck_assert_int_eq(round_(&f, "frank", "frank", false, &err), 0);
	ck_assert_int_eq(sk_store_get(f.store, "frank", &us, &err), SK_ENOTFOUND);
	ck_assert_uint_eq(count_user(&f, "frank", SK_SANDBOX_UNKNOWN), want_left);
	sk_rfix_teardown(&f);
}

START_TEST(test_delete_policy_delete)
{
	delete_with("Delete", 0);
}
END_TEST

START_TEST(test_delete_policy_retain)
{
	delete_with("Retain", 1);
}
END_TEST

START_TEST(test_replace_after_unhealthy)
{
	fixture f;
	sk_userspace *us;
	sk_error err;
	char faults[256], *old;

	setup(&f);
	sk_rfix_apply(&f, "gina", "gina", ", health: {unhealthyAfter: 60s, remediation: Replace}");
	us = converge(&f, "gina", "gina", 5);
	old = strdup(us->status.sandbox_id);
	sk_userspace_free(us);
	snprintf(faults, sizeof(faults), "{\"unreachable\": [\"%s\"]}", old);
	ck_assert_int_eq(sim_post(&f, "/_sim/faults", faults), 200);
	ck_assert_int_eq(round_(&f, "gina", "gina", false, &err), 0);
	us = sk_rfix_get(&f, "gina");
	ck_assert_int_eq(us->status.phase, SK_PHASE_DEGRADED);
	ck_assert(has_drift(us, SK_DRIFT_DATAPLANE));
	ck_assert_str_eq(us->status.sandbox_id, old);
	sk_userspace_free(us);
	/* before unhealthyAfter: nothing replaced */
	clock_offset = 30000;
	ck_assert_int_eq(round_(&f, "gina", "gina", false, &err), 0);
	us = sk_rfix_get(&f, "gina");
	ck_assert_str_eq(us->status.sandbox_id, old);
	sk_userspace_free(us);
	/* after: a new one bound, the old one gone */
	clock_offset = 61000;
	us = converge(&f, "gina", "gina", 5);
	ck_assert_str_ne(us->status.sandbox_id, old);
	ck_assert(!has_drift(us, SK_DRIFT_DATAPLANE));
	ck_assert_uint_eq(count_user(&f, "gina", SK_SANDBOX_UNKNOWN), 1);
	ck_assert(sk_rfix_has_event(&f, "gina", "Replaced"));
	sk_userspace_free(us);
	free(old);
	sk_rfix_teardown(&f);
}
END_TEST

/* The controller's list still says running, but the sandbox was paused out
 * of band: the unreachable data plane is checked with a GET, and the keeper
 * is resumed instead of being reported (or replaced) as unreachable. */
START_TEST(test_stale_list_paused_out_of_band)
{
	fixture f;
	sk_userspace *us;
	sk_sandbox_list snap;
	sk_list_view v = { 0 };
	sk_error err = { 0 };
	int64_t requeue;
	char path[160];

	setup(&f);
	sk_rfix_apply(&f, "ivy", "ivy",
	        ", lifecycle: {autoResume: false, idleTimeout: 0s}, health: {unhealthyAfter: 1s, "
	        "remediation: Replace}");
	us = converge(&f, "ivy", "ivy", 5);
	ck_assert_int_eq(list_user(&f, "ivy", &snap), 0);
	ck_assert_uint_eq(snap.len, 1);
	ck_assert_int_eq(snap.items[0].state, SK_SANDBOX_RUNNING);
	snprintf(path, sizeof(path), "/_sim/sandboxes/%s/pause", us->status.sandbox_id);
	ck_assert_int_eq(sim_post(&f, path, "{}") / 100, 2);
	clock_offset = 5000;
	v.valid = true;
	v.listed_ms = test_now();
	v.for_user = &snap;
	ck_assert_msg(sk_reconcile(&f.env, "ivy", &v, &requeue, &err) == 0, "%s", err.message);
	ck_assert(sk_rfix_has_event(&f, "ivy", "Resumed"));
	ck_assert(!sk_rfix_has_event(&f, "ivy", "Replaced"));
	ck_assert_uint_eq(count_user(&f, "ivy", SK_SANDBOX_RUNNING), 1);
	sk_userspace_free(us);
	us = sk_rfix_get(&f, "ivy");
	ck_assert(!has_drift(us, SK_DRIFT_DATAPLANE));
	sk_userspace_free(us);
	sk_sandbox_list_dispose(&snap);
	sk_rfix_teardown(&f);
}
END_TEST

/* A status write on a stale resourceVersion whose status changed meanwhile
 * is refused (and the object as stored handed back); one whose spec changed
 * meanwhile is retried and lands. */
START_TEST(test_status_cas)
{
	fixture f;
	sk_userspace *stale, *other = NULL, *now_us;
	sk_observed ob;
	sk_plan_result plan;
	sk_error err = { 0 };

	setup(&f);
	sk_rfix_apply(&f, "hank", "hank", ", mode: Paused");
	stale = sk_rfix_get(&f, "hank");
	sk_observed_init(&ob);
	sk_plan(stale, &ob, test_now(), &f.env.opts, &plan);
	/* a spec edit in between: retried */
	sk_rfix_set_mode(&f, "hank", SK_MODE_PAUSED); /* no change: no write */
	{
		sk_userspace *u = sk_rfix_get(&f, "hank"), *o2 = NULL;
		sk_kvlist_set(&u->meta.labels, "team", "x");
		ck_assert_int_eq(sk_store_update(f.store, u, &o2, &err), 0);
		sk_userspace_free(u);
		sk_userspace_free(o2);
	}
	ck_assert_msg(sk_execute(&f.env, stale, &plan, NULL, &err) == 0, "%s", err.message);
	now_us = sk_rfix_get(&f, "hank");
	ck_assert_int_eq(now_us->status.phase, SK_PHASE_PAUSED);
	ck_assert_str_eq(sk_kvlist_get(&now_us->meta.labels, "team"), "x");
	/* another writer changed the status: not overwritten */
	sk_userspace_free(now_us);
	now_us = sk_rfix_get(&f, "hank");
	{
		sk_userspace_status st = { 0 };

		sk_userspace_status_copy(&st, &now_us->status);
		st.phase = SK_PHASE_ERROR;
		ck_assert_int_eq(sk_store_write_status(f.store, now_us, &st, &other, &err), 0);
		sk_userspace_status_dispose(&st);
	}
	{
		sk_userspace *seen = NULL;

		ck_assert_int_eq(sk_execute(&f.env, stale, &plan, &seen, &err), SK_ECONFLICT);
		/* the caller learns the object as stored, so its retry (from a
		 * cache that missed that write) does not conflict again */
		ck_assert_ptr_nonnull(seen);
		ck_assert_int_eq(seen->status.phase, SK_PHASE_ERROR);
		ck_assert_int_eq(seen->meta.resource_version, other->meta.resource_version);
		sk_userspace_free(seen);
	}
	sk_userspace_free(now_us);
	now_us = sk_rfix_get(&f, "hank");
	ck_assert_int_eq(now_us->status.phase, SK_PHASE_ERROR);
	sk_userspace_free(now_us);
	sk_userspace_free(other);
	sk_userspace_free(stale);
	sk_plan_result_dispose(&plan);
	sk_observed_dispose(&ob);
	sk_rfix_teardown(&f);
}
END_TEST

Suite *
sk_suite_reconcile(void)
{
	Suite *s = suite_create("reconcile");
	TCase *tc = tcase_create("sim");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_converge);
	tcase_add_test(tc, test_duplicates);
	tcase_add_test(tc, test_empty_list);
	tcase_add_test(tc, test_crash_between_create_and_bind);
	tcase_add_test(tc, test_pause_resume);
	tcase_add_test(tc, test_delete_policy_delete);
	tcase_add_test(tc, test_delete_policy_retain);
	tcase_add_test(tc, test_replace_after_unhealthy);
	tcase_add_test(tc, test_status_cas);
	tcase_add_test(tc, test_stale_list_paused_out_of_band);
	suite_add_tcase(s, tc);
	return s;
}
