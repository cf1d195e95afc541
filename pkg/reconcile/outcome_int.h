/*
 * reconcile/outcome_int: what an executed plan leaves in the status
 * (pure; outcome.c) (private to reconcile).
 */
#ifndef SK_RECONCILE_OUTCOME_INT_H
#define SK_RECONCILE_OUTCOME_INT_H

#include "../api/status.h"
#include "../api/userspace.h"
#include "../util/util.h"
#include "plan.h"

/* ---- outcomes: what an executed plan leaves in the status (pure) ---- */

/* Where the executor stopped. */
typedef struct sk_outcome {
	int code; /* 0: every action succeeded */
	const sk_action *failed; /* the failed action (NULL when code is 0 or no action failed) */
	bool created; /* a CREATE of the plan made a sandbox before the failure */
	int http_status; /* of the failure, when it was an HTTP answer */
	const char *message; /* of the failure */
	/* The failed CREATE stopped before its Creating mark (a volume or a
	 * fork source it could not get) and no earlier mark was stored:
	 * nothing can exist, no mark to keep. */
	bool unmarked;
} sk_outcome;

/* The reason a failed action is recorded under ("CreateFailed", ...). */
const char *sk_failure_reason(sk_action_type t);
/* Maps a failed action onto the status to write: Synced=False with the
 * failure reason, the phase (Error for terminal, the Creating mark kept when
 * a create may have happened), Ready for a failed create, and the warm-up
 * kept when re-asserting the environment failed (so it is retried). */
void sk_plan_failure(
        const sk_userspace *us, const sk_outcome *o, int64_t now_ms, sk_userspace_status *st);
/* The source to fork on this create (spec.source.fork.userSpace on the
 * space's first create), a copy; NULL: a plain create. */
char *sk_plan_fork_source(const sk_userspace *us);
/* Sets one condition of st (lastTransitionTime moves only when the status changes). */
void sk_status_set_condition(sk_userspace_status *st, const char *type, const char *status,
        const char *reason, const char *message, int64_t now_ms, int64_t generation);

#endif
