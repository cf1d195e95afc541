/*
 * reconcile/plan: the pure planner. desired + observed + now -> ordered
 * actions, the next status and the requeue delay (sk_plan); the actions'
 * names; status.usage (plan_usage.c).
 */
#ifndef SK_RECONCILE_PLAN_H
#define SK_RECONCILE_PLAN_H

#include "../api/kvlist.h"
#include "../api/network.h"
#include "../api/status.h"
#include "../api/userspace.h"
#include "../util/util.h"
#include "observe.h"
#include "options.h"

typedef enum sk_action_type {
	SK_ACTION_CREATE,
	SK_ACTION_CONNECT, /* resume (or extend) */
	SK_ACTION_PAUSE,
	SK_ACTION_KILL,
	SK_ACTION_SET_TIMEOUT, /* re-assert the lifecycle */
	SK_ACTION_BIND, /* write the next status now (binding first) */
	SK_ACTION_REMOVE_FINALIZER,
	SK_ACTION_EVENT,
	SK_ACTION_INIT_ENV, /* re-assert spec.env through envd POST /init */
	SK_ACTION_WRITE_MARKER, /* write the workspace marker through envd */
	SK_ACTION_SET_NETWORK, /* apply spec.network live (E2B) */
	/* Copy the keeper's workspace into the archive (manifest last, verified),
	 * then record it in status (phase Archived, nothing bound): the KILL
	 * that follows may only run after that write. */
	SK_ACTION_ARCHIVE,
	/* Copy status.archive back into the keeper, verified against its manifest */
	SK_ACTION_RESTORE,
	/* Delete every archive of the user (PREFIX/USERID/), before the finalizer */
	SK_ACTION_PURGE_ARCHIVE,
	/* Delete the provider snapshot snapshot_id (an archive by snapshot,
	 * restored or purged); status.archive.snapshotID cleared once done */
	SK_ACTION_DELETE_SNAPSHOT,
	/* Take a persistent snapshot of the keeper (spec.snapshots.schedule);
	 * its ID appended to status.snapshots.snapshotIDs */
	SK_ACTION_SNAPSHOT,
} sk_action_type;

typedef enum sk_kill_reason {
	SK_KILL_NONE,
	SK_KILL_DUPLICATE,
	SK_KILL_REPLACE,
	SK_KILL_DELETE,
	SK_KILL_ORPHAN,
	SK_KILL_ARCHIVED, /* its workspace is in the archive, recorded in status */
} sk_kill_reason;

/* What woke a paused keeper (CONNECT, and a migration's source): the
 * Woken event names it; only a connect is a user's. */
typedef enum sk_wake_cause {
	SK_WAKE_NONE, /* no wake: an always-on keeper resumed */
	SK_WAKE_CONNECT, /* a user's connect */
	SK_WAKE_ARCHIVE, /* deep sleep: its files are read through envd */
	SK_WAKE_MIGRATION, /* a migration copies its files */
	SK_WAKE_SNAPSHOT, /* a provider snapshot of a paused space */
} sk_wake_cause;

/* "a connect", "the archive", "a migration", "a snapshot" ("" for none). */
const char *sk_wake_cause_phrase(sk_wake_cause w);

typedef struct sk_action {
	sk_action_type type;
	/* Target; NULL for CREATE, and for BIND/SET_TIMEOUT/PAUSE meaning "the
	 * sandbox the preceding CREATE made". */
	char *sandbox_id;
	sk_kill_reason why; /* KILL */
	sk_wake_cause wake; /* CONNECT: what asked for it (event Woken names it) */
	int64_t timeout_ms; /* CREATE, CONNECT, SET_TIMEOUT */
	/* CREATE */
	char *template_id;
	int cpu_count;
	int memory_mb;
	bool auto_pause;
	bool auto_resume;
	sk_kvlist metadata;
	sk_kvlist env; /* CREATE, INIT_ENV: values never logged */
	sk_network network; /* CREATE, SET_NETWORK: spec.network */
	/* CREATE: the UserSpace whose bound sandbox the provider forks instead
	 * (spec.source.fork.userSpace, on the space's first create only); NULL: a create. */
	char *fork_from;
	char *snapshot_id; /* DELETE_SNAPSHOT */
	/* EVENT */
	char *event_type; /* "Normal" | "Warning" */
	char *reason;
	char *message;
} sk_action;

typedef struct sk_plan_result {
	sk_action *actions;
	size_t n_actions;
	/* The status to write once the actions succeed (sandboxID of a CREATE
	 * filled in by the executor). */
	sk_userspace_status next;
	int64_t requeue_after_ms;
	/* Non-zero SK_E* when the plan waits on an observation failure (e.g. the
	 * GET of the bound sandbox failed): the caller backs off; wait_message says why. */
	int wait_code;
	char *wait_message;
	/* The plan starts the keeper (create or resume) and nothing in it needs
	 * the binding stored first: the executor observes the started sandbox at
	 * once (probe) and plans again before it writes the status, so the
	 * binding and the health are written together (one write, no requeue).
	 * The second plan never has follow_up set. */
	bool follow_up;
} sk_plan_result;

int sk_plan(const sk_userspace *desired, const sk_observed *observed, int64_t now_ms,
        const sk_plan_options *opts, sk_plan_result *out);
void sk_plan_result_dispose(sk_plan_result *r);

const char *sk_action_type_name(sk_action_type t); /* "create", "kill", ... */
const char *sk_kill_reason_name(sk_kill_reason r); /* "Duplicate", "Replace", ... */
bool sk_action_is_mutating(
        const sk_action *a); /* CREATE CONNECT PAUSE KILL INIT_ENV WRITE_MARKER */
/* One line: "create sandbox (template base, timeout 1h)", "kill i123 (Duplicate)". */
void sk_action_describe(const sk_action *a, sk_buf *out);

/* spacekeeper --once: whether a stored object is in a phase one pass can end on. */
bool sk_plan_settled(const sk_userspace *us);

/* The provider deadline the space's sandbox gets on create and resume:
 * lifecycle.idleTimeout, or the provider's sandbox timeout when it is 0
 * (always on). */
int64_t sk_plan_ttl(const sk_userspace *us, const sk_plan_options *opts);

/* ---- usage: status.usage (pure; plan_usage.c) ---- */

/* Counts the time from u->updated_ms to now_ms at phase (the phase the space
 * was in meanwhile) into u; starts counting when u->since_ms is 0. Whole
 * seconds: the rest stays for the next count. */
void sk_usage_advance(sk_usage *u, sk_phase phase, int64_t now_ms);

/* ---- migration (migrate_plan.c; its plan: migrate_int.h) ---- */

/* The provider entry the binding lives at: status.provider, else spec.provider. */
const char *sk_bound_provider(const sk_userspace *us);

#endif
