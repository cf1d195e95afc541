/*
 * reconcile/plan_delete: the plan of a UserSpace being deleted (part of the pure planner: no I/O, no clock). Phase Deleting; with the
 * finalizer, deletionPolicy Delete kills every sandbox of the user and purges
 * its archives before the finalizer goes, Retain keeps both; the annotation
 * that holds provider mutations holds the deletion too. A failed lookup of
 * the user's sandboxes keeps the finalizer (a list is not proof of absence).
 * Table-tested in test/unit/check_plan.c.
 */
#include "../api/sandbox_values.h"
#include "../api/status.h"
#include "../api/userspace.h"
#include "observe.h"
#include "plan.h"
#include "plan_int.h"
#include "reconcile_int.h"

void
sk_plan_delete(sk_pctx *c)
{
	const sk_userspace *us = c->us;
	const char *bound = c->prev->sandbox_id;
	bool retain = us->spec.deletion_policy == SK_DELETE_RETAIN;

	c->r->next.phase = SK_PHASE_DELETING;
	sk_plan_cond(c, SK_C_READY, "False", SK_REASON_DELETING,
	        "being deleted (deletionPolicy %s)", retain ? "Retain" : "Delete");
	sk_plan_cond(c, SK_C_DATAPLANE, "Unknown", SK_REASON_DELETING, "being deleted");
	if (!sk_userspace_has_finalizer(us, SK_FINALIZER))
		return;
	if (c->hold) {
		/* The annotation holds provider mutations, so the deletion waits: say so. */
		const sk_condition *synced = sk_plan_prev_cond(c, SK_COND_SYNCED);
		sk_plan_cond(c, SK_C_SYNCED, "False", SK_REASON_DELETION_HELD,
		        "deletion waits: %s is true (remove it to finish the deletion)",
		        SK_ANNOTATION_PAUSED);
		if (synced == NULL || !sk_str_eq(synced->reason, SK_REASON_DELETION_HELD))
			sk_plan_event(c, "Warning", SK_REASON_DELETION_HELD,
			        "deletion waits: %s is true (remove it to finish the deletion)",
			        SK_ANNOTATION_PAUSED);
		return;
	}
	if (!retain) {
		for (size_t i = 0; i < c->ob->sandboxes.len; i++) {
			if (c->ob->sandboxes.items[i].state != SK_SANDBOX_GONE)
				sk_plan_push(c, SK_ACTION_KILL, c->ob->sandboxes.items[i].id)->why =
				        SK_KILL_DELETE;
		}
		if (bound != NULL && sk_plan_find(c->ob, bound) == NULL &&
		        c->ob->bound != SK_LOOKUP_NOT_FOUND)
			sk_plan_push(c, SK_ACTION_KILL, bound)->why = SK_KILL_DELETE;
		if (c->ob->user != SK_LOOKUP_FOUND && c->ob->user != SK_LOOKUP_NOT_FOUND) {
			sk_plan_wait(c,
			        c->ob->user_error.code ? c->ob->user_error.code : SK_ETRANSIENT,
			        "keeping the finalizer: the lookup of the user's sandboxes failed: "
			        "%s",
			        c->ob->user_error.message[0] ? c->ob->user_error.message
			                                     : "not made");
			sk_plan_requeue(c, c->o->short_requeue_ms);
			return;
		}
		sk_plan_archive_purge(c);
	}
	sk_plan_push(c, SK_ACTION_REMOVE_FINALIZER, NULL);
}
