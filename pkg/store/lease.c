/*
 * store/lease: the rules of named leases, the same on every backend. A
 * backend only reads a lease and swaps it for the next version
 * (compare-and-swap on `version`); what the next version is, and who may
 * write it, is decided here, from the lease as read.
 *
 * No rule compares a time another host wrote with this host's clock:
 * renew_ms and acquire_ms are the writer's wall clock, for
 * people. Whether another's lease expired is judged by the caller on its
 * own monotonic clock from when it observed the lease last change
 * (client-go's observedTime, sk_lease_observer below), and the take-over
 * writes only over the very version it observed.
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
held_by_other(const sk_lease *cur, const char *holder)
{
	return cur->holder[0] != '\0' && strcmp(cur->holder, holder) != 0;
}

static int
lease_conflict(const sk_lease *cur, sk_error *err)
{
	if (cur->holder[0] == '\0')
		return sk_error_set(err, SK_ECONFLICT, "lease \"%s\" was released", cur->name);
	return sk_error_set(
	        err, SK_ECONFLICT, "lease \"%s\" is held by \"%s\"", cur->name, cur->holder);
}

/* acquire: free, released or already ours; a take-over (the caller saw
 * this version unchanged for a full duration) whoever holds it. */
static int
acquire(const sk_lease *cur, bool take_over, const char *holder, int64_t duration_ms,
        int64_t now_ms, sk_lease *next, sk_error *err)
{
	if (cur != NULL && !take_over && held_by_other(cur, holder))
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
	case SK_LEASE_ACQUIRE:
	case SK_LEASE_TAKE_OVER:
		rc = acquire(cur, op == SK_LEASE_TAKE_OVER, holder, duration_ms, now_ms, next, err);
		break;
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

/* ---- what this process saw of the leases, on its monotonic clock ---- */

void
sk_lease_observer_dispose(sk_lease_observer *o)
{
	if (o == NULL)
		return;
	for (size_t i = 0; i < o->len; i++)
		free(o->items[i].name);
	free(o->items);
	memset(o, 0, sizeof(*o));
}

static const sk_lease_seen *
seen_of(const sk_lease_observer *o, const char *name)
{
	for (size_t i = 0; i < o->len; i++)
		if (strcmp(o->items[i].name, name) == 0)
			return &o->items[i];
	return NULL;
}

void
sk_lease_observe(sk_lease_observer *o, const sk_lease_list *ll, int64_t now_ms)
{
	sk_lease_seen *items = sk_calloc(ll->len + 1, sizeof(*items));

	for (size_t i = 0; i < ll->len; i++) {
		const sk_lease *l = &ll->items[i];
		const sk_lease_seen *was = seen_of(o, l->name);
		items[i].name = sk_strdup(l->name);
		items[i].version = l->version;
		items[i].seen_ms = was && was->version == l->version ? was->seen_ms : now_ms;
	}
	sk_lease_observer_dispose(o);
	o->items = items;
	o->len = ll->len;
}

bool
sk_lease_observed_expired(const sk_lease_observer *o, const sk_lease *l, int64_t now_ms)
{
	const sk_lease_seen *s = seen_of(o, l->name);

	if (l->holder[0] == '\0')
		return true;
	return s != NULL && s->version == l->version && now_ms - s->seen_ms >= l->duration_ms;
}

bool
sk_lease_holder_valid(
        int64_t renew_started_ms, int64_t duration_ms, int64_t margin_ms, int64_t now_ms)
{
	return renew_started_ms > 0 && now_ms < renew_started_ms + duration_ms - margin_ms;
}
