/* Unit tests of the planner's spec.network (pkg/reconcile/plan_network.c):
 * applied live on E2B, migrated under Migrate elsewhere, reported under
 * Report; the keeper's policy from the provider's detail, the
 * NetworkPolicy condition or the create-time digest. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/kvlist.h"
#include "api/migration.h"
#include "api/names.h"
#include "api/network.h"
#include "api/sandbox_values.h"
#include "api/status.h"
#include "api/strlist.h"
#include "api/userspace.h"
#include "reconcile/reconcile.h"
#include "reconcile/reconcile_int.h" /* sk_observed_add, sk_reconcile_create_request */

Suite *sk_suite_plan_network(void);

#define NOW 1700000000000LL
#define POLICY "internet Deny, allowOut 10.0.0.0/8, publicTraffic Allow"

typedef struct net_case {
	const char *what;
	bool live; /* E2B */
	sk_update_strategy strategy;
	bool spec_set; /* spec.network: internet Deny, allowOut 10.0.0.0/8 */
	const char *reported; /* the keeper's detail: NULL none, "same", "open" */
	const char *cond; /* a NetworkPolicy condition's message */
	bool digest; /* metadata network_policy of the spec */
	bool hold;
	bool paused; /* the keeper */
	/* what the plan does */
	const char *want_action; /* "set-network", or NULL: none */
	bool want_drift; /* SpecMismatch naming the network */
	bool want_migration;
	const char *want_cond; /* the NetworkPolicy message, NULL: none */
} net_case;

static const net_case cases[] = {
	{ "e2b: a new policy is applied live", true, SK_UPDATE_REPORT, true, NULL, NULL, false,
	        false, false, "set-network", false, false, "sandbox sb1: " POLICY },
	{ "e2b: applied (the condition names the keeper)", true, SK_UPDATE_REPORT, true, NULL,
	        "sandbox sb1: " POLICY, false, false, false, NULL, false, false,
	        "sandbox sb1: " POLICY },
	{ "e2b: the condition names another sandbox", true, SK_UPDATE_REPORT, true, NULL,
	        "sandbox old: " POLICY, false, false, false, "set-network", false, false,
	        "sandbox sb1: " POLICY },
	{ "e2b: the provider reports it", true, SK_UPDATE_REPORT, true, "same", NULL, false, false,
	        false, NULL, false, false, "sandbox sb1: " POLICY },
	{ "e2b: reported open, applied again", true, SK_UPDATE_REPORT, true, "open",
	        "sandbox sb1: " POLICY, false, false, false, "set-network", false, false,
	        "sandbox sb1: " POLICY },
	{ "e2b: paused annotation: reported", true, SK_UPDATE_REPORT, true, NULL, NULL, false, true,
	        false, NULL, true, false, NULL },
	{ "e2b: a paused keeper: reported until it runs", true, SK_UPDATE_REPORT, true, NULL, NULL,
	        false, false, true, NULL, true, false, NULL },
	{ "cube, Report: reported", false, SK_UPDATE_REPORT, true, NULL, NULL, false, false, false,
	        NULL, true, false, NULL },
	{ "cube, Migrate: a migration", false, SK_UPDATE_MIGRATE, true, NULL, NULL, false, false,
	        false, NULL, false, true, NULL },
	{ "cube: created with it (digest)", false, SK_UPDATE_MIGRATE, true, NULL, NULL, true, false,
	        false, NULL, false, false, "sandbox sb1: " POLICY },
	{ "cube: policy removed from a sandbox created with one", false, SK_UPDATE_REPORT, false,
	        NULL, NULL, true, false, false, NULL, true, false, NULL },
	{ "no policy anywhere: nothing", true, SK_UPDATE_REPORT, false, NULL, NULL, false, false,
	        false, NULL, false, false, NULL },
	{ "no policy, reported open: nothing", true, SK_UPDATE_REPORT, false, "open", NULL, false,
	        false, false, NULL, false, false, NULL },
};

static void
set_policy(sk_network *n)
{
	n->internet = SK_NET_DENY;
	sk_strlist_add(&n->allow_out, "10.0.0.0/8");
}

static sk_userspace *
space(const net_case *tc)
{
	sk_userspace *us = calloc(1, sizeof(*us));

	us->meta.name = strdup("alice");
	us->meta.uid = strdup("uid-1");
	us->meta.generation = 1;
	us->meta.finalizers = calloc(1, sizeof(char *));
	us->meta.finalizers[0] = strdup(SK_FINALIZER);
	us->meta.n_finalizers = 1;
	if (tc->hold)
		sk_kvlist_set(&us->meta.annotations, SK_ANNOTATION_PAUSED, "true");
	us->spec.user_id = strdup("alice");
	us->spec.update_strategy = tc->strategy;
	if (tc->spec_set)
		set_policy(&us->spec.network);
	sk_userspace_apply_defaults(us);
	us->status.phase = tc->paused ? SK_PHASE_IDLE : SK_PHASE_RUNNING;
	us->status.sandbox_id = strdup("sb1");
	us->status.provider = strdup("default");
	if (tc->cond) {
		us->status.conditions = calloc(1, sizeof(sk_condition));
		us->status.conditions[0] = (sk_condition){ strdup(SK_COND_NETWORK), strdup("True"),
			strdup("Applied"), strdup(tc->cond), NOW - 60000, 1 };
		us->status.n_conditions = 1;
	}
	return us;
}

static void
observe(const net_case *tc, const sk_userspace *us, sk_observed *ob)
{
	sk_sandbox sb;
	char digest[17];

	sk_observed_init(ob);
	ob->list_valid = true;
	ob->listed_ms = NOW - 1000;
	memset(&sb, 0, sizeof(sb));
	sb.id = strdup("sb1");
	sb.template_id = strdup("base");
	sb.state = tc->paused ? SK_SANDBOX_PAUSED : SK_SANDBOX_RUNNING;
	sb.started_ms = NOW - 60000;
	sb.end_ms = NOW + 600000;
	sk_kvlist_set(&sb.metadata, SK_META_USER_ID, "alice");
	sk_kvlist_set(&sb.metadata, SK_META_MANAGED_BY, SK_MANAGED_BY_VALUE);
	if (tc->digest) {
		sk_network n = { 0 };
		set_policy(&n);
		sk_network_digest(&n, digest);
		sk_kvlist_set(&sb.metadata, SK_META_NETWORK, digest);
		sk_network_dispose(&n);
	}
	if (tc->reported != NULL) {
		sb.network_known = true;
		if (strcmp(tc->reported, "same") == 0)
			sk_network_copy(&sb.network, &us->spec.network);
	}
	sk_observed_add(ob, &sb);
	sk_observed_add_probe(ob, "sb1", true, SK_HEALTH_OK, 200, NOW, 0);
	sk_sandbox_dispose(&sb);
	ob->bound = SK_LOOKUP_FOUND;
	ob->user_ms = NOW;
}

static const sk_condition *
cond(const sk_userspace_status *st, const char *type)
{
	for (size_t i = 0; i < st->n_conditions; i++)
		if (strcmp(st->conditions[i].type, type) == 0)
			return &st->conditions[i];
	return NULL;
}

START_TEST(test_plan_network)
{
	const net_case *tc = &cases[_i];
	sk_userspace *us = space(tc);
	sk_plan_options o;
	sk_plan_result r;
	sk_observed ob;
	const sk_action *set = NULL;
	const sk_condition *k;
	bool drift = false;

	sk_plan_options_init(&o);
	o.network_live = tc->live;
	observe(tc, us, &ob);
	ck_assert_int_eq(sk_plan(us, &ob, NOW, &o, &r), 0);
	for (size_t i = 0; i < r.n_actions; i++)
		if (r.actions[i].type == SK_ACTION_SET_NETWORK)
			set = &r.actions[i];
	for (size_t i = 0; i < r.next.n_drift; i++)
		drift = drift ||
		        (strcmp(r.next.drift[i].type, SK_DRIFT_SPEC) == 0 &&
		                strstr(r.next.drift[i].detail, "network") != NULL);
	ck_assert_msg((set != NULL) == (tc->want_action != NULL), "%s: set-network %d", tc->what,
	        set != NULL);
	if (set) {
		char line[512];
		ck_assert_str_eq(set->sandbox_id, "sb1");
		sk_network_format(&set->network, line, sizeof(line));
		ck_assert_str_eq(line, POLICY);
	}
	ck_assert_msg(drift == tc->want_drift, "%s: drift %d", tc->what, drift);
	ck_assert_msg((r.next.migration.phase == SK_MIG_PENDING) == tc->want_migration,
	        "%s: migration %d", tc->what, r.next.migration.phase);
	if (tc->want_migration)
		ck_assert_str_eq(r.next.migration.trigger, SK_TRIGGER_NETWORK);
	k = cond(&r.next, SK_COND_NETWORK);
	if (tc->want_cond) {
		ck_assert_msg(k != NULL, "%s: no NetworkPolicy condition", tc->what);
		ck_assert_str_eq(k->message, tc->want_cond);
	} else if (tc->cond == NULL) {
		ck_assert_msg(k == NULL, "%s: a NetworkPolicy condition", tc->what);
	}
	sk_plan_result_dispose(&r);
	sk_observed_dispose(&ob);
	sk_userspace_free(us);
}
END_TEST

/* A create carries the policy and its digest in the sandbox's metadata. */
START_TEST(test_create_carries_policy)
{
	net_case tc = { .spec_set = true };
	sk_userspace *us = space(&tc);
	sk_plan_options o;
	sk_plan_result r;
	sk_observed ob;
	char digest[17], line[512];
	const sk_action *create = NULL;

	free(us->status.sandbox_id);
	us->status.sandbox_id = NULL;
	us->status.phase = SK_PHASE_NONE;
	sk_plan_options_init(&o);
	sk_observed_init(&ob);
	ob.list_valid = true;
	ob.listed_ms = NOW - 1000;
	ob.user_ms = NOW;
	ck_assert_int_eq(sk_plan(us, &ob, NOW, &o, &r), 0);
	for (size_t i = 0; i < r.n_actions; i++)
		if (r.actions[i].type == SK_ACTION_CREATE)
			create = &r.actions[i];
	ck_assert_ptr_nonnull(create);
	sk_network_format(&create->network, line, sizeof(line));
	ck_assert_str_eq(line, POLICY);
	sk_network_digest(&us->spec.network, digest);
	ck_assert_str_eq(sk_kvlist_get(&create->metadata, SK_META_NETWORK), digest);
	sk_plan_result_dispose(&r);
	sk_observed_dispose(&ob);
	sk_userspace_free(us);
}
END_TEST

/* A space without spec.network creates as before: no digest. */
START_TEST(test_create_without_policy)
{
	net_case tc = { 0 };
	sk_userspace *us = space(&tc);
	sk_create_request req;
	sk_kvlist meta = { 0 };
	sk_plan_options o;

	sk_plan_options_init(&o);
	sk_reconcile_create_request(us, &o, &meta, &req);
	ck_assert_ptr_null(sk_kvlist_get(&meta, SK_META_NETWORK));
	ck_assert(!sk_network_is_set(req.network));
	sk_kvlist_dispose(&meta);
	sk_userspace_free(us);
}
END_TEST

Suite *
sk_suite_plan_network(void)
{
	Suite *s = suite_create("plan_network");
	TCase *tc = tcase_create("network");

	tcase_add_loop_test(tc, test_plan_network, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_test(tc, test_create_carries_policy);
	tcase_add_test(tc, test_create_without_policy);
	suite_add_tcase(s, tc);
	return s;
}
