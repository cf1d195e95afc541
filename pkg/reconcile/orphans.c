/*
 * reconcile/orphans: rule 8, pure. Managed sandboxes whose user has no
 * UserSpace are orphans: reported always, marked for deletion only when the
 * provider entry says delete_orphans and the orphan was first seen (or, with
 * no memory, started) longer than the grace ago.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../api/names.h"
#include "reconcile_int.h"

void
sk_orphan_list_dispose(sk_orphan_list *l)
{
	if (l == NULL)
		return;
	for (size_t i = 0; i < l->len; i++) {
		free(l->items[i].sandbox_id);
		free(l->items[i].user_id);
	}
	free(l->items);
	memset(l, 0, sizeof(*l));
}

static bool
orphan_of(const sk_sandbox *sb, sk_has_user_fn has_user, void *arg)
{
	const char *managed = sk_kvlist_get(&sb->metadata, SK_META_MANAGED_BY);
	const char *user = sk_kvlist_get(&sb->metadata, SK_META_USER_ID);

	if (!sk_str_eq(managed, SK_MANAGED_BY_VALUE) || sb->state == SK_SANDBOX_GONE)
		return false;
	return user == NULL || !has_user(user, arg);
}

static int64_t
first_seen(const sk_sandbox *sb, const sk_kvlist *seen, sk_kvlist *next, int64_t now_ms)
{
	const char *v = seen ? sk_kvlist_get(seen, sb->id) : NULL;
	int64_t t = seen ? now_ms : sb->started_ms;
	char buf[32];

	if (v != NULL)
		t = strtoll(v, NULL, 10);
	if (next != NULL) {
		snprintf(buf, sizeof(buf), "%" PRId64, t);
		sk_kvlist_set(next, sb->id, buf);
	}
	return t;
}

int
sk_plan_orphans(const sk_sandbox_list *all, sk_has_user_fn has_user, void *arg, sk_kvlist *seen,
        int64_t now_ms, const sk_plan_options *opts, sk_orphan_list *out)
{
	sk_kvlist next = { 0 };

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; all != NULL && i < all->len; i++) {
		const sk_sandbox *sb = &all->items[i];
		sk_orphan *o;
		if (!orphan_of(sb, has_user, arg))
			continue;
		out->items = sk_realloc(out->items, (out->len + 1) * sizeof(*out->items));
		o = &out->items[out->len++];
		o->sandbox_id = sk_strdup(sb->id);
		o->user_id = sk_strdup(sk_kvlist_get(&sb->metadata, SK_META_USER_ID));
		o->first_seen_ms = first_seen(sb, seen, seen ? &next : NULL, now_ms);
		o->kill = opts->delete_orphans && o->first_seen_ms > 0 &&
		        now_ms - o->first_seen_ms >= opts->orphan_grace_ms;
	}
	if (seen != NULL) {
		sk_kvlist_dispose(seen);
		*seen = next;
	}
	return 0;
}
