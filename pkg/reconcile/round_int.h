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
/* execute_snapshot.c: the ARCHIVE action by snapshot (recorded into st once
 * the provider answered with the snapshot's ID). */
int sk_execute_snapshot_archive(sk_provider *p, const char *sandbox_id, const sk_userspace *us,
        int64_t now_ms, sk_userspace_status *st, sk_error *err);
int sk_execute_purge(const sk_reconcile_env *env, const sk_userspace *us,
        sk_archive_prune_report *rep, sk_error *err);
/* What pruning the older archives after a restore did: nothing (message
 * ""), deleted generations, or failed (a Warning; the restore stands). */
typedef struct sk_restore_prune {
	bool failed;
	size_t deleted;
	char message[SK_ERROR_MSG_MAX + 64]; /* the event's text, "" when there is nothing to say */
} sk_restore_prune;
int sk_execute_restore(const sk_reconcile_env *env, sk_provider *p, const sk_sandbox *sb,
        const sk_userspace *us, sk_copy_report *rep, sk_restore_prune *pruned, sk_error *err);

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

/* What one round is given (round.c fills it, the executor reads it). */
typedef struct sk_round {
	const sk_reconcile_env *env;
	sk_provider *provider; /* the bound provider's client (sk_round_provider) */
	sk_round_kind kind;
	const sk_userspace *planned; /* what is observed and planned for */
	/* what the status is written over: the object as stored; planned,
	 * except in the follow-up, whose status was handed on, never stored */
	const sk_userspace *stored;
	const sk_list_view *list; /* the list observe starts from (NULL: none) */
	/* once planned, what the executor runs: the observation (NULL: not
	 * known, sk_execute) and the plan made from it */
	const sk_observed *ob;
	const sk_plan_result *plan;
} sk_round;

/* What one round leaves. */
typedef struct sk_round_result {
	int64_t requeue_ms; /* the plan's delay (0: none) */
	/* the object as last written (owned), NULL when it was removed; after
	 * a conflict with another writer, the object as stored then */
	sk_userspace *updated;
} sk_round_result;

/* The provider client of us's binding (status.provider, else
 * spec.provider), else env->provider. */
sk_provider *sk_round_provider(const sk_reconcile_env *env, const sk_userspace *us);

/*
 * The follow-up of a round that starts the keeper, one state (followup.c
 * holds every transition):
 *
 *   OFF       -> HOLDING    sk_followup_begin: the first round's plan hands
 *                           its status on; its events are held from now,
 *                           the sandboxes it starts, resumes or kills noted
 *                           in seen
 *   HOLDING   -> HANDED_ON  sk_followup_hand_on: its status left unwritten
 *                           (next; a later hand-on of the same round, after
 *                           a BIND, replaces it): the follow-up must run
 *   HANDED_ON -> FOLLOWING  sk_followup_start: the follow-up round runs,
 *                           observes, plans from next; its events held too
 *   FOLLOWING -> ANSWERED   sk_followup_answered: it found the started
 *                           keeper healthy and told env->started (a waiting
 *                           connect is answered first); the held events and
 *                           the status are written next
 *   any       -> DONE       sk_followup_release: the held events written,
 *                           in order (before the status; at once on a
 *                           failure, or when nothing was handed on)
 *
 * Events are held in HOLDING, HANDED_ON and FOLLOWING (no store write
 * between a start and the answer first), written at once otherwise.
 */
typedef enum sk_followup_state {
	SK_FOLLOWUP_OFF, /* no follow-up: events and status written at once */
	SK_FOLLOWUP_HOLDING,
	SK_FOLLOWUP_HANDED_ON,
	SK_FOLLOWUP_FOLLOWING,
	SK_FOLLOWUP_ANSWERED,
	SK_FOLLOWUP_DONE,
} sk_followup_state;

/* An event a round holds back (sk_followup.held). */
typedef struct sk_held_event {
	char *type;
	char *reason;
	char *message;
} sk_held_event;

/* What a round that starts the keeper hands to its follow-up round. */
typedef struct sk_followup {
	sk_followup_state state;
	sk_observed seen; /* the round's sandboxes, updated with what it started */
	sk_userspace_status next; /* HANDED_ON: the status it left unwritten */
	sk_held_event *held; /* the events of both rounds, held back */
	size_t n_held;
} sk_followup;

void sk_followup_init(sk_followup *fu);
void sk_followup_dispose(sk_followup *fu);
/* OFF -> HOLDING, seen starting from ob's sandboxes. */
void sk_followup_begin(sk_followup *fu, const sk_observed *ob);
/* HOLDING (or HANDED_ON) -> HANDED_ON with the status to write (copied). */
void sk_followup_hand_on(sk_followup *fu, const sk_userspace_status *next);
/* HANDED_ON -> FOLLOWING. */
void sk_followup_start(sk_followup *fu);
/* FOLLOWING -> ANSWERED. */
void sk_followup_answered(sk_followup *fu);
/* Writes the events fu holds (of us) and forgets them: -> DONE (OFF stays
 * OFF). fu may be NULL. */
void sk_followup_release(const sk_reconcile_env *env, const sk_userspace *us, sk_followup *fu);
/* An event of us: held while fu (may be NULL) holds, else written now. */
void sk_followup_event(const sk_reconcile_env *env, const sk_userspace *us, sk_followup *fu,
        const char *type, const char *reason, const char *message);
/* The first round notes the sandboxes it starts, resumes and kills
 * (HOLDING, HANDED_ON). */
bool sk_followup_notes(const sk_followup *fu);
/* The first round handed its status on: the follow-up round must run. */
bool sk_followup_pending(const sk_followup *fu);
/* The follow-up round runs (FOLLOWING): it answers first, then writes. */
bool sk_followup_following(const sk_followup *fu);

/* execute.c: runs r's plan over r->stored (r->planned: what it was made
 * from) and leaves the object as last written in out->updated. With fu
 * HOLDING (SK_ROUND_FIRST), the status is handed on (sk_followup_hand_on)
 * instead of written, and the sandboxes the plan started are noted in
 * fu->seen; with fu FOLLOWING (SK_ROUND_FOLLOW_UP), env->started is told
 * when the start is healthy, then the held events and the status are
 * written. fu may be NULL (nothing held). */
int sk_execute_round(const sk_round *r, sk_followup *fu, sk_round_result *out, sk_error *err);
/* round.c: what the run saw of the keeper, after is the object as (about
 * to be) written (sandboxID), ok: the run succeeded; into env->report. */
void sk_report_keeper(const sk_reconcile_env *env, const sk_observed *ob, const sk_userspace *after,
        int64_t now, bool ok);

#endif
