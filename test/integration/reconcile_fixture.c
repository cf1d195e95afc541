/*
 * The reconcile tests' fixture (reconcile_fixture.h).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../testutil.h"
#include "reconcile/options.h"
#include "reconcile_fixture.h"

/* The provider config of the fixture's simulator. */
static void
rfix_config(sk_rfix *f, sk_provider_config *c)
{
	memset(c, 0, sizeof(*c));
	c->name = "default";
	c->type = SK_PROVIDER_E2B;
	c->api_url = f->url;
	c->sandbox_url = f->url;
	c->domain = "sim.local";
	c->api_key_env = (char *)f->key_var;
	c->max_in_flight = 8;
	c->qps = 1000;
	c->burst = 1000;
	c->request_timeout_ms = 5000;
	c->sandbox_timeout_ms = 3600000;
	c->orphan_grace_ms = 600000;
}

void
sk_rfix_setup(sk_rfix *f, const char *key_var)
{
	const char *args[] = { "--flavor", "e2b", "--api-key", SK_RFIX_KEY, "--seed", "11", NULL };
	sk_store_options so = SK_STORE_OPTIONS_INIT;
	sk_provider_config c;
	sk_error err = { 0 };

	memset(f, 0, sizeof(*f));
	f->key_var = key_var;
	f->sim = sk_test_sim_start(args, f->url, sizeof(f->url));
	so.uri = sk_test_mongodb_uri();
	snprintf(f->db, sizeof(f->db), "%s", sk_test_unique_db());
	so.database = f->db;
	ck_assert_msg(sk_store_open(&f->store, &so, &err) == 0, "store: %s", err.message);
	setenv(key_var, SK_RFIX_KEY, 1);
	rfix_config(f, &c);
	ck_assert_msg(sk_provider_new(&c, &f->p, &err) == 0, "provider: %s", err.message);
	f->env.store = f->store;
	f->env.provider = f->p;
	sk_plan_options_from_config(&f->env.opts, &c, 30000);
	/* An active user: the keeper is probed every round (a quiet space's is
	 * not, see sk_plan_quiet; the planner's table tests cover that). */
	f->env.activity_ms = sk_now_ms();
}

sk_provider *
sk_rfix_provider(sk_rfix *f)
{
	sk_provider_config c;
	sk_provider *p = NULL;
	sk_error err = { 0 };

	rfix_config(f, &c);
	ck_assert_msg(sk_provider_new(&c, &p, &err) == 0, "provider: %s", err.message);
	return p;
}

void
sk_rfix_teardown(sk_rfix *f)
{
	sk_error err;

	sk_store_drop(f->store, &err);
	sk_store_close(f->store);
	sk_provider_free(f->p);
	sk_test_stop(f->sim, false);
}

void
sk_rfix_apply(sk_rfix *f, const char *name, const char *user, const char *extra_spec)
{
	char yaml[1024];
	sk_doclist dl = { 0 };
	sk_errlist errs = { 0 };
	sk_userspace *us = NULL, *out = NULL;
	sk_error err = { 0 };

	snprintf(yaml, sizeof(yaml),
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\nmetadata: {name: %s}\n"
	        "spec: {userID: %s%s}\n",
	        name, user, extra_spec ? extra_spec : "");
	ck_assert_int_eq(sk_doc_parse(yaml, strlen(yaml), "t.yaml", &dl, &err), 0);
	ck_assert_int_eq(sk_userspace_from_doc(dl.items[0], &us, &errs), 0);
	ck_assert_msg(sk_store_create(f->store, us, &out, &err) == 0, "create: %s", err.message);
	sk_userspace_free(us);
	sk_userspace_free(out);
	sk_doclist_dispose(&dl);
	sk_errlist_dispose(&errs);
}

sk_userspace *
sk_rfix_get(sk_rfix *f, const char *name)
{
	sk_userspace *us = NULL;
	sk_error err = { 0 };

	ck_assert_msg(sk_store_get(f->store, name, &us, &err) == 0, "get: %s", err.message);
	return us;
}

void
sk_rfix_set_mode(sk_rfix *f, const char *name, sk_mode mode)
{
	sk_userspace *us = sk_rfix_get(f, name), *out = NULL;
	sk_error err = { 0 };

	us->spec.mode = mode;
	ck_assert_msg(sk_store_update(f->store, us, &out, &err) == 0, "%s", err.message);
	sk_userspace_free(us);
	sk_userspace_free(out);
}

bool
sk_rfix_has_event(sk_rfix *f, const char *name, const char *reason)
{
	sk_event_list l = { 0 };
	sk_error err = { 0 };
	bool found = false;

	ck_assert_int_eq(sk_store_events(f->store, name, NULL, 0, &l, &err), 0);
	for (size_t i = 0; i < l.len; i++)
		found = found || strcmp(l.items[i].reason, reason) == 0;
	sk_event_list_dispose(&l);
	return found;
}
