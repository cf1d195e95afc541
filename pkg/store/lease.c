/*
 * store/lease: the rules of named leases, the same on every backend. A
 * backend only reads a lease and swaps it for the next version
 * (compare-and-swap on `version`); what the next version is, and who may
 * write it, is decided here, from the lease as read.
 */
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

void
sk_lease_dispose(sk_lease *l)
{
	if (l == NULL)
		return;
	free(l->name);
	free(l->holder);
	memset(l, 0, sizeof(*l));
}

void
sk_lease_list_dispose(sk_lease_list *l)
{
	if (l == NULL)
		return;
	for (size_t i = 0; i < l->len; i++)
		sk_lease_dispose(&l->items[i]);
	free(l->items);
	memset(l, 0, sizeof(*l));
}

void
sk_lease_copy(sk_lease *dst, const sk_lease *src)
{
	*dst = *src;
	dst->name = sk_strdup(src->name);
	dst->holder = sk_strdup(src->holder ? src->holder : "");
}

static bool
held_by_other(const sk_lease *cur, const char *holder, int64_t now_ms)
{
	return cur->holder[0] != '\0' && strcmp(cur->holder, holder) != 0 &&
	        cur->renew_ms + cur->duration_ms > now_ms;
}

static int
lease_conflict(const sk_lease *cur, sk_error *err)
{
	if (cur->holder[0] == '\0')
		return sk_error_set(err, SK_ECONFLICT, "lease \"%s\" was released", cur->name);
	return sk_error_set(
	        err, SK_ECONFLICT, "lease \"%s\" is held by \"%s\"", cur->name, cur->holder);
}

/* acquire: free, released, expired or already ours. */
static int
acquire(const sk_lease *cur, const char *holder, int64_t duration_ms, int64_t now_ms,
        sk_lease *next, sk_error *err)
{
	if (cur != NULL && held_by_other(cur, holder, now_ms))
		return lease_conflict(cur, err);
	if (cur == NULL || strcmp(cur->holder, holder) != 0)
		next->acquire_ms = now_ms;
	free(next->holder);
	next->holder = sk_strdup(holder);
	next->renew_ms = now_ms;
	next->duration_ms = duration_ms;
	return 0;
}

int
sk_store_lease_next(const sk_lease *cur, sk_lease_op op, const char *name, const char *holder,
        int64_t duration_ms, int64_t now_ms, sk_lease *next, sk_error *err)
{
	int rc = 0;

	memset(next, 0, sizeof(*next));
	if (cur == NULL && op != SK_LEASE_ACQUIRE)
		return sk_error_set(err, SK_ENOTFOUND, "lease \"%s\" not found", name);
	if (cur != NULL)
		sk_lease_copy(next, cur);
	else
		next->name = sk_strdup(name);
	switch (op) {
	case SK_LEASE_ACQUIRE: rc = acquire(cur, holder, duration_ms, now_ms, next, err); break;
	case SK_LEASE_RENEW:
		if (strcmp(cur->holder, holder) != 0)
			rc = lease_conflict(cur, err);
		next->renew_ms = now_ms;
		break;
	case SK_LEASE_RELEASE:
		if (cur->holder[0] != '\0' && strcmp(cur->holder, holder) != 0)
			rc = lease_conflict(cur, err);
		free(next->holder);
		next->holder = sk_strdup("");
		break;
	}
	if (rc != 0)
		sk_lease_dispose(next);
	return rc;
}
