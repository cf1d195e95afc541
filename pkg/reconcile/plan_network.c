/*
 * reconcile/plan_network: spec.network converged, not just sent at create.
 *
 * The keeper's policy, in this order of trust: what the provider reports
 * in its detail (E2B, Daytona: sk_sandbox.network_known); what spacekeeper
 * last applied to that very sandbox (the NetworkPolicy condition, "sandbox
 * ID: POLICY", written with a live update); the digest of the spec it was
 * created with (sandbox metadata network_policy, which every provider
 * lists, Cube included); none of these: the provider's default (open).
 * When it differs from spec.network: applied live where the provider can
 * (E2B: SET_NETWORK, same sandbox), else moved by the migration (same
 * files, a new sandbox created with the policy) under updateStrategy
 * Migrate, else reported as SpecMismatch. Pure: no I/O, no clock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../api/names.h"
#include "reconcile_int.h"

#define NET_LINE 2048

/* What the keeper has, as one line in have (when it can be said); true
 * when it is not spec.network. */
static bool
differs(const sk_pctx *c, const sk_sandbox *k, char *have, size_t len)
{
	const sk_network *want = &c->us->spec.network;
	const sk_condition *rec = sk_plan_prev_cond(c, SK_COND_NETWORK);
	const char *digest = sk_kvlist_get(&k->metadata, SK_META_NETWORK);
	char line[NET_LINE], mine[17], prefix[160];
	sk_network none = { 0 };

	sk_network_format(want, line, sizeof(line));
	snprintf(prefix, sizeof(prefix), "sandbox %s: ", k->id);
	if (k->network_known) {
		sk_network_format(&k->network, have, len);
		return !sk_network_satisfies(want, &k->network);
	}
	if (rec != NULL && rec->message != NULL &&
	        strncmp(rec->message, prefix, strlen(prefix)) == 0) {
		snprintf(have, len, "%s", rec->message + strlen(prefix));
		return strcmp(have, line) != 0;
	}
	sk_network_digest(want, mine);
	if (digest != NULL) {
		snprintf(have, len, "the policy of digest %s", digest);
		return !sk_network_is_set(want) || strcmp(digest, mine) != 0;
	}
	sk_network_format(&none, have, len);
	return sk_network_is_set(want);
}

static void
record(sk_pctx *c, const sk_sandbox *k, const char *reason)
{
	char line[NET_LINE];

	sk_network_format(&c->us->spec.network, line, sizeof(line));
	free(c->network.message);
	c->network.status = "True";
	c->network.reason = reason;
	c->network.message = sk_asprintf("sandbox %s: %s", k->id, line);
}

const char *
sk_plan_network_trigger(sk_pctx *c, const sk_sandbox *k)
{
	const sk_migration_status *m = &c->us->status.migration;
	char have[NET_LINE];

	if (c->o->network_live || c->us->spec.update_strategy != SK_UPDATE_MIGRATE ||
	        c->us->status.sandbox_id == NULL || c->us->meta.deletion_ms != 0 ||
	        sk_migration_active(m) || !differs(c, k, have, sizeof(have)))
		return NULL;
	if (m->phase == SK_MIG_ABORTED && sk_str_eq(m->trigger, SK_TRIGGER_NETWORK))
		return NULL; /* that attempt failed: a rollout or another spec retries */
	return SK_TRIGGER_NETWORK;
}

void
sk_plan_network(sk_pctx *c, const sk_sandbox *k, sk_buf *b)
{
	char have[NET_LINE], want[NET_LINE];

	if (!differs(c, k, have, sizeof(have))) {
		if (sk_network_is_set(&c->us->spec.network))
			record(c, k, SK_REASON_NETWORK_APPLIED);
		return;
	}
	if (sk_migration_active(&c->r->next.migration))
		return; /* the migration's new sandbox is created with it */
	if (c->o->network_live && !c->hold && k->state == SK_SANDBOX_RUNNING &&
	        c->us->spec.mode == SK_MODE_RUNNING) {
		sk_action *a = sk_plan_push(c, SK_ACTION_SET_NETWORK, k->id);
		sk_network_copy(&a->network, &c->us->spec.network);
		record(c, k, SK_REASON_NETWORK_APPLIED);
		return;
	}
	sk_network_format(&c->us->spec.network, want, sizeof(want));
	sk_buf_printf(b, "%snetwork %s, spec wants %s%s", b->len ? "; " : "", have, want,
	        c->o->network_live ? " (applied when the sandbox runs)" : "");
}
