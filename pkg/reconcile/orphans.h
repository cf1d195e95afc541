/*
 * reconcile/orphans: managed sandboxes whose user has no UserSpace (rule 8
 * of docs/architecture.md's Invariants; pure, orphans.c).
 */
#ifndef SK_RECONCILE_ORPHANS_H
#define SK_RECONCILE_ORPHANS_H

#include "../api/kvlist.h"
#include "../api/sandbox_values.h"
#include "../sandbox/sandbox.h"
#include "options.h"

/* Whether a UserSpace exists for a user id. */
typedef bool (*sk_has_user_fn)(const char *user_id, void *arg);

typedef struct sk_orphan {
	char *sandbox_id;
	char *user_id;
	int64_t first_seen_ms;
	bool kill; /* delete_orphans and older than the grace */
} sk_orphan;

typedef struct sk_orphan_list {
	sk_orphan *items;
	size_t len;
} sk_orphan_list;
void sk_orphan_list_dispose(sk_orphan_list *l);

/* Pure. all: every sandbox the provider listed (only managed_by=spacekeeper
 * ones count). seen: caller-kept map sandbox id -> first-seen ms (decimal),
 * updated here (new orphans added, others dropped); NULL uses started_ms. */
int sk_plan_orphans(const sk_sandbox_list *all, sk_has_user_fn has_user, void *arg, sk_kvlist *seen,
        int64_t now_ms, const sk_plan_options *opts, sk_orphan_list *out);

#endif
