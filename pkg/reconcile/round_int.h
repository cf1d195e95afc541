/*
 * reconcile/round_int: one reconcile's rounds, the executor that runs a
 * round's plan, and the archive's actions it calls (private to reconcile).
 */
#ifndef SK_RECONCILE_ROUND_INT_H
#define SK_RECONCILE_ROUND_INT_H

#include "../api/sandbox_values.h"
#include "../api/status.h"
#include "../api/userspace.h"
#include "../sandbox/sandbox.h"
#include "../store/store.h"
#include "../util/util.h"
#include "archive_int.h"
#include "observe.h"
#include "plan.h"
#include "reconcile.h"

/* Runs plan for us (as read from the store: its resourceVersion is the CAS
 * token). *updated (may be NULL) gets the object as last written (NULL when
 * it was removed). Returns 0, or the failure's code (transient: back off). */
int sk_execute(const sk_reconcile_env *env, const sk_userspace *us, const sk_plan_result *plan,
        sk_userspace **updated, sk_error *err);

/* execute_archive.c: the ARCHIVE action (the archive recorded into st
 * when verified) and the RESTORE action. */
int sk_execute_archive(const sk_reconcile_env *env, sk_provider *p, const sk_sandbox *sb,
        const sk_userspace *us, int64_t now_ms, sk_userspace_status *st, sk_copy_report *rep,
        sk_error *err);
int sk_execute_purge(const sk_reconcile_env *env, const sk_userspace *us,
        sk_archive_prune_report *rep, sk_error *err);
int sk_execute_restore(const sk_reconcile_env *env, sk_provider *p, const sk_sandbox *sb,
        const sk_userspace *us, sk_copy_report *rep, char *prune_note, size_t note_len,
        sk_error *err);

/* CAS write of st over *cur (sk_store_write_status); on success *cur is
 * replaced by the stored object. */
int sk_reconcile_write_status(
        sk_store *store, sk_userspace **cur, const sk_userspace_status *st, sk_error *err);

/*
 * One reconcile of an object (sk_reconcile_object) is a sequence:
 *   1. the migration steps: while a migration is active, its steps run one
 *      after another as long as each moves it on (migration_steps);
 *   2. the round: observe, plan, execute (SK_ROUND_FIRST; sk_execute alone
 *      runs SK_ROUND_ONLY);
 *   3. the follow-up: when the round started the keeper, a second round
 *      probes it at once and writes the status (SK_ROUND_FOLLOW_UP).
 * When a round's status is written is decided in one place, sk_when_written.
 */
typedef enum sk_round_kind {
	SK_ROUND_ONLY, /* sk_execute: one round, nothing handed on */
	SK_ROUND_FIRST, /* the regular round: may hand its status to the follow-up */
	SK_ROUND_FOLLOW_UP, /* plans from the handed-on status, writes it */
} sk_round_kind;

typedef enum sk_status_write {
	SK_WRITE_IF_CHANGED, /* now, when it differs from the stored status */
	SK_WRITE_ALWAYS, /* now, even unchanged: the handed-on status was never stored */
	SK_HAND_ON, /* not now: the follow-up writes it with what its probe finds */
} sk_status_write;

/* When a round's status is written: the one place that decides. The round
 * that started the keeper (its plan asks for a follow-up) hands the status
 * on, unless an action failed: a failure is written now, and no follow-up
 * runs. The follow-up writes what it was handed, changed or not. */
sk_status_write sk_when_written(sk_round_kind kind, const sk_plan_result *plan, bool failed);

/* An event a round holds back (sk_followup.held). */
typedef struct sk_held_event {
	char *type;
	char *reason;
	char *message;
} sk_held_event;

/* What a round that starts the keeper hands to its follow-up round. */
typedef struct sk_followup {
	sk_observed seen; /* the round's sandboxes, updated with what it started */
	sk_userspace_status next; /* the status it left unwritten */
	bool armed; /* it left one: the follow-up must run and write */
	/* The events of both rounds, held back until the follow-up told
	 * env->started (no store write between the start and that answer):
	 * then written, in order, before the status. */
	sk_held_event *held;
	size_t n_held;
} sk_followup;

/* execute.c: runs plan's actions over us (planned: what it was made from).
 * SK_ROUND_FIRST with fu (the status may be handed on): the status goes to
 * fu->next instead of the store (*updated stays the stored object), the
 * sandboxes the plan started are noted in fu->seen and its events held in
 * fu->held (written at once when the status is not handed on after all).
 * SK_ROUND_FOLLOW_UP with fu (the first round's): tells env->started when
 * the start is healthy, then writes the held events, then the status. */
int sk_execute_round(const sk_reconcile_env *env, const sk_userspace *us,
        const sk_userspace *planned, const sk_observed *ob, const sk_plan_result *plan,
        sk_round_kind kind, sk_followup *fu, sk_userspace **updated, sk_error *err);
/* execute.c: writes the events fu still holds (of us), and forgets them. */
void sk_release_events(const sk_reconcile_env *env, const sk_userspace *us, sk_followup *fu);
/* round.c: what the run saw of the keeper, after is the object as (about
 * to be) written (sandboxID), ok: the run succeeded; into env->report. */
void sk_report_keeper(const sk_reconcile_env *env, const sk_observed *ob, const sk_userspace *after,
        int64_t now, bool ok);

#endif
