/*
 * The fixture of the reconcile integration tests (check_reconcile.c,
 * check_reconcile_followup.c): a sandboxsim in the e2b flavour, a fresh
 * database on the test FerretDB, an e2b provider and a reconcile env.
 */
#ifndef SK_TEST_RECONCILE_FIXTURE_H
#define SK_TEST_RECONCILE_FIXTURE_H

#include <stdbool.h>
#include <sys/types.h>

#include "reconcile/reconcile.h"

#define SK_RFIX_KEY "e2b_0000000000000000000000000000000000000000" /* a dummy key */

typedef struct sk_rfix {
	pid_t sim;
	char url[128];
	char db[64];
	const char *key_var; /* the provider's key is read from it */
	sk_store *store;
	sk_provider *p;
	sk_reconcile_env env;
} sk_rfix;

/* Starts everything; the provider reads its key from key_var. env.opts are
 * the provider's defaults with a 30 s resync; tests adjust them after. */
void sk_rfix_setup(sk_rfix *f, const char *key_var);
void sk_rfix_teardown(sk_rfix *f);
/* Another client of the fixture's provider (one per thread: a client is
 * not thread-safe; the controller takes one per worker). */
sk_provider *sk_rfix_provider(sk_rfix *f);
/* Creates UserSpace name for user; extra_spec is appended inside spec's {...}. */
void sk_rfix_apply(sk_rfix *f, const char *name, const char *user, const char *extra_spec);
sk_userspace *sk_rfix_get(sk_rfix *f, const char *name);
void sk_rfix_set_mode(sk_rfix *f, const char *name, sk_mode mode);
bool sk_rfix_has_event(sk_rfix *f, const char *name, const char *reason);

#endif
