/*
 * reconcile/followup: the follow-up of a round that starts the keeper, one
 * state (sk_followup_state, round_int.h) and every transition of it: the
 * first round begins holding its events and noting what it starts, hands
 * its status on, the follow-up round answers a waiting connect first,
 * then the held events are written (before the status).
 */
#include <stdlib.h>
#include <string.h>

#include "../api/status.h"
#include "../api/userspace.h"
#include "observe_int.h"
#include "round_int.h"

void
sk_followup_init(sk_followup *fu)
{
	memset(fu, 0, sizeof(*fu));
	sk_observed_init(&fu->seen);
}

void
sk_followup_dispose(sk_followup *fu)
{
	for (size_t i = 0; i < fu->n_held; i++) {
		free(fu->held[i].type);
		free(fu->held[i].reason);
		free(fu->held[i].message);
	}
	free(fu->held);
	sk_observed_dispose(&fu->seen);
	sk_userspace_status_dispose(&fu->next);
	memset(fu, 0, sizeof(*fu));
}

void
sk_followup_begin(sk_followup *fu, const sk_observed *ob)
{
	if (fu->state != SK_FOLLOWUP_OFF)
		return;
	for (size_t i = 0; i < ob->sandboxes.len; i++)
		sk_observed_add(&fu->seen, &ob->sandboxes.items[i]);
	fu->seen.list_valid = ob->list_valid;
	fu->state = SK_FOLLOWUP_HOLDING;
}

void
sk_followup_hand_on(sk_followup *fu, const sk_userspace_status *next)
{
	if (fu->state != SK_FOLLOWUP_HOLDING && fu->state != SK_FOLLOWUP_HANDED_ON)
		return;
	sk_userspace_status_dispose(&fu->next);
	sk_userspace_status_copy(&fu->next, next);
	fu->state = SK_FOLLOWUP_HANDED_ON;
}

void
sk_followup_start(sk_followup *fu)
{
	if (fu->state == SK_FOLLOWUP_HANDED_ON)
		fu->state = SK_FOLLOWUP_FOLLOWING;
}

void
sk_followup_answered(sk_followup *fu)
{
	if (fu->state == SK_FOLLOWUP_FOLLOWING)
		fu->state = SK_FOLLOWUP_ANSWERED;
}

static bool
holds(const sk_followup *fu)
{
	return fu != NULL &&
	        (fu->state == SK_FOLLOWUP_HOLDING || fu->state == SK_FOLLOWUP_HANDED_ON ||
	                fu->state == SK_FOLLOWUP_FOLLOWING);
}

bool
sk_followup_notes(const sk_followup *fu)
{
	return fu != NULL &&
	        (fu->state == SK_FOLLOWUP_HOLDING || fu->state == SK_FOLLOWUP_HANDED_ON);
}

bool
sk_followup_following(const sk_followup *fu)
{
	return fu != NULL && fu->state == SK_FOLLOWUP_FOLLOWING;
}

bool
sk_followup_pending(const sk_followup *fu)
{
	return fu != NULL && fu->state == SK_FOLLOWUP_HANDED_ON;
}

/* One event of us into the store; a failure is logged, not returned. */
static void
store_event(const sk_reconcile_env *env, const sk_userspace *us, const char *type,
        const char *reason, const char *msg)
{
	sk_buf b = SK_BUF_INIT(4096);
	sk_error e;

	sk_error_clear(&e);
	if (sk_store_event(env->store, us->meta.name, us->meta.uid, type, reason, msg, &e) == 0 ||
	        env->log == NULL)
		return;
	sk_buf_printf(&b, "userspace=%s reason=%s error=\"%s\"", us->meta.name, reason, e.message);
	env->log(SK_LOG_WARN, "event not recorded", b.data, env->log_payload);
	sk_buf_dispose(&b);
}

void
sk_followup_event(const sk_reconcile_env *env, const sk_userspace *us, sk_followup *fu,
        const char *type, const char *reason, const char *message)
{
	sk_held_event *h;

	if (!holds(fu)) {
		store_event(env, us, type, reason, message);
		return;
	}
	fu->held = sk_realloc(fu->held, (fu->n_held + 1) * sizeof(*fu->held));
	h = &fu->held[fu->n_held++];
	h->type = sk_strdup(type);
	h->reason = sk_strdup(reason);
	h->message = sk_strdup(message);
}

void
sk_followup_release(const sk_reconcile_env *env, const sk_userspace *us, sk_followup *fu)
{
	if (fu == NULL || fu->state == SK_FOLLOWUP_OFF || fu->state == SK_FOLLOWUP_DONE)
		return;
	for (size_t i = 0; i < fu->n_held; i++) {
		sk_held_event *h = &fu->held[i];
		store_event(env, us, h->type, h->reason, h->message);
		free(h->type);
		free(h->reason);
		free(h->message);
	}
	free(fu->held);
	fu->held = NULL;
	fu->n_held = 0;
	fu->state = SK_FOLLOWUP_DONE;
}
