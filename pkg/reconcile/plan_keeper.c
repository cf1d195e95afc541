/*
 * reconcile/plan_keeper: which sandbox is the user's keeper (pure): the
 * bound one while it is listed or its lookup failed, else the best of the
 * user's (newest healthy running, newest running, newest paused), else a
 * create, which after an unfinished create waits for a lookup past the grace.
 */
#include <string.h>

#include "../api/sandbox_values.h"
#include "../api/status.h"
#include "../api/userspace.h"
#include "observe.h"
#include "observe_int.h"
#include "options.h"
#include "plan.h"
#include "plan_int.h"
#include "reconcile_int.h"

const sk_sandbox *
sk_plan_find(const sk_observed *ob, const char *id)
{
	for (size_t i = 0; id != NULL && i < ob->sandboxes.len; i++) {
		if (ob->sandboxes.items[i].state != SK_SANDBOX_GONE &&
		        sk_str_eq(ob->sandboxes.items[i].id, id))
			return &ob->sandboxes.items[i];
	}
	return NULL;
}

static bool
listed_gone(const sk_observed *ob, const char *id)
{
	for (size_t i = 0; i < ob->sandboxes.len; i++) {
		if (ob->sandboxes.items[i].state == SK_SANDBOX_GONE &&
		        sk_str_eq(ob->sandboxes.items[i].id, id))
			return true;
	}
	return false;
}

static int
rank(const sk_pctx *c, const sk_sandbox *sb)
{
	const sk_probe *p;

	if (sb->state == SK_SANDBOX_PAUSED)
		return 1;
	if (sb->state != SK_SANDBOX_RUNNING)
		return 0;
	p = sk_observed_probe(c->ob, sb->id);
	if (p == NULL || !p->made)
		return 3;
	return p->health == SK_HEALTH_OK ? 4 : 2;
}

/* Newest healthy running, else newest running, else newest paused. */
static const sk_sandbox *
choose_best(const sk_pctx *c)
{
	const sk_sandbox *best = NULL;
	int best_rank = -1;

	for (size_t i = 0; i < c->ob->sandboxes.len; i++) {
		const sk_sandbox *sb = &c->ob->sandboxes.items[i];
		int r = rank(c, sb);
		if (sb->state == SK_SANDBOX_GONE || sk_plan_archived_sandbox(c, sb->id))
			continue;
		if (best == NULL || r > best_rank ||
		        (r == best_rank &&
		                (sb->started_ms > best->started_ms ||
		                        (sb->started_ms == best->started_ms &&
		                                strcmp(sb->id, best->id) > 0)))) {
			best = sb;
			best_rank = r;
		}
	}
	return best;
}

static int
creating_gate(sk_pctx *c)
{
	int64_t ready_at = c->prev->last_reconcile_ms + c->o->create_grace_ms;

	if (c->ob->user == SK_LOOKUP_NOT_FOUND && c->ob->user_ms >= ready_at)
		return SK_KEEPER_CREATE;
	if (c->ob->user == SK_LOOKUP_ERROR) {
		sk_plan_wait(c, c->ob->user_error.code ? c->ob->user_error.code : SK_ETRANSIENT,
		        "lookup of the user's sandboxes failed: %s", c->ob->user_error.message);
		sk_plan_requeue(c, c->o->short_requeue_ms);
		return SK_KEEPER_WAIT_CREATING;
	}
	sk_plan_wait(c, 0,
	        "an earlier create may have succeeded without its binding; creating again only "
	        "when a lookup after the grace finds no sandbox of the user");
	sk_plan_requeue(c, ready_at - c->now);
	return SK_KEEPER_WAIT_CREATING;
}

int
sk_plan_pick_keeper(sk_pctx *c, const sk_sandbox **out)
{
	const char *bound = c->prev->sandbox_id;
	const sk_error *e = &c->ob->bound_error;

	*out = NULL;
	if (bound != NULL) {
		*out = sk_plan_find(c->ob, bound);
		if (*out != NULL)
			return SK_KEEPER_FOUND;
		if (c->ob->bound != SK_LOOKUP_NOT_FOUND && !listed_gone(c->ob, bound)) {
			sk_plan_wait(c, e->code ? e->code : SK_ETRANSIENT,
			        "bound sandbox %s not listed and its get failed: %s", bound,
			        e->message[0] ? e->message : "not made");
			sk_plan_requeue(c, c->o->short_requeue_ms);
			return SK_KEEPER_WAIT;
		}
	}
	*out = choose_best(c);
	if (*out != NULL)
		return SK_KEEPER_FOUND;
	if (bound == NULL && c->prev->phase == SK_PHASE_CREATING)
		return creating_gate(c);
	return SK_KEEPER_CREATE;
}
