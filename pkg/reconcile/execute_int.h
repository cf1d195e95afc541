/*
 * reconcile/execute_int: the executor's context for one round (sk_xctx) and
 * the helpers execute.c and execute_create.c share: the log line, the
 * events (held back or written), the fence, the status write, and what
 * the report notes of a deadline this run set (private to reconcile).
 */
#ifndef SK_RECONCILE_EXECUTE_INT_H
#define SK_RECONCILE_EXECUTE_INT_H

#include "../api/sandbox_values.h"
#include "../api/status.h"
#include "../api/userspace.h"
#include "../sandbox/sandbox.h"
#include "../util/util.h"
#include "observe.h"
#include "plan.h"
#include "reconcile.h"
#include "round_int.h"

typedef struct sk_xctx {
	const sk_reconcile_env *env;
	sk_provider *p;
	const sk_userspace *planned; /* the object the plan was made from */
	const sk_observed *ob; /* what the plan was made from (NULL: unknown) */
	sk_userspace *cur; /* the stored object as last read or written */
	sk_userspace_status st; /* the status to write */
	char *created; /* sandbox made by this run's CREATE */
	/* this run's CREATE failed before its Creating mark, none stored before */
	bool create_unmarked;
	bool removed; /* finalizer removed: the object may be gone */
	int64_t now;
	sk_round_kind kind;
	const sk_plan_result *plan;
	bool failed; /* an action failed (record_failure) */
	sk_followup *fu; /* when the status may be handed on: the round's answers */
	/* Where the round's events are held back (see sk_followup.held);
	 * NULL: each is written at once. */
	sk_followup *hold;
	/* An action changed what the provider's list shows (create, resume,
	 * pause, kill, deadline): lastReconcileTime moves, so the next rounds
	 * trust a direct GET over a list older than that (observe's list_stale).
	 * A write of conditions or lastActivityTime alone does not move it. */
	bool changed_provider;
	bool fenced; /* may_act said no: nothing more is called or written */
	/* A write found the stored status changed by someone else: the object
	 * as stored then, handed to the caller instead of cur (whose cache may
	 * have missed that write: retrying from it would conflict again). */
	sk_userspace *conflicted;
	/* The last CONNECT's answer (its envd details), for the ARCHIVE after it. */
	sk_sandbox connected;
} sk_xctx;

/* One log line of the run, "userspace=NAME " first (env->log; none without). */
void sk_exec_log(const sk_xctx *x, sk_log_level lvl, const char *msg, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
/* An event of the run: held back (x->hold) or written at once. */
void sk_exec_event(sk_xctx *x, const char *type, const char *reason, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
/* Fencing: SK_EUNAVAILABLE (and x->fenced, logged once) when the caller
 * may no longer act on this user before `what`; 0 when it may. */
int sk_exec_fence(sk_xctx *x, const char *what, sk_error *err);
/* CAS write of st over x->cur (fenced); on a conflict re-reads and retries
 * once when the stored status is still the one this run started from. */
int sk_exec_write_status(sk_xctx *x, const sk_userspace_status *st, sk_error *err);
/* For the report: this run set id's deadline (timeout_ms from now), and
 * the provider's answer (sb, may be NULL) named its envd details. */
void sk_exec_note_deadline(sk_xctx *x, const char *id, int64_t timeout_ms, const sk_sandbox *sb);

/* execute_create.c: the CREATE action (a volume and a fork source first,
 * then the Creating mark, then the provider's create or fork). */
int sk_exec_create(sk_xctx *x, const sk_action *a, sk_error *err);

#endif
