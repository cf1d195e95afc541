/*
 * Table tests of the archive in the plan (pkg/reconcile/plan_archive.c):
 * when an asleep space is archived (archiveAfter, a provider's
 * pausedRetention first), the order of the archive's actions (intent,
 * wake, archive, record, only then delete), an archive under way redone
 * after a crash, the archived sandbox deleted when it outlived the record,
 * phase Archived without a connect, the restore once a connect made a new
 * keeper, a sandbox gone while asleep restored instead of lost, and
 * onLoss Restore after a resume that lost the files; an archive whose
 * wake the capacity gate refused waits (Archived False WaitingForCapacity)
 * and asks again with a back-off, its wake told as the archive's.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/kvlist.h"
#include "api/names.h"
#include "api/sandbox_values.h"
#include "api/status.h"
#include "api/userspace.h"
#include "reconcile/archive_int.h"
#include "reconcile/marker_int.h"
#include "reconcile/observe.h"
#include "reconcile/observe_int.h"
#include "reconcile/options.h"
#include "reconcile/outcome_int.h"
#include "reconcile/plan.h"
#include "reconcile/reconcile_int.h"

Suite *sk_suite_plan_archive(void);

#define NOW INT64_C(1800000000000)
#define SEC INT64_C(1000)
#define MIN (60 * SEC)
#define HOUR (60 * MIN)

typedef struct ar_case {
	const char *name;
	bool no_archive; /* no archive configured */
	int64_t archive_after;
	int64_t retention; /* providers[].pausedRetention */
	sk_on_loss on_loss;
	/* previous status */
	sk_phase phase;
	const char *bound; /* status.sandboxID, NULL none */
	const char *prev_dp; /* DataPlaneHealthy "Unknown:Idle" */
	int64_t dp_since; /* its lastTransitionTime, offset from NOW */
	sk_archive_state arch; /* status.archive.state; NONE: no archive */
	bool intent; /* status.archive.archivingSince set */
	int64_t failures; /* status.archive.failures */
	int64_t failed_at; /* status.archive.lastFailureTime, offset from NOW */
	/* observed */
	const char *sb_id; /* the one observed sandbox; NULL none */
	sk_sandbox_state state;
	bool wake;
	int64_t activity; /* a heartbeat at NOW + activity; 0 none */
	int marker; /* sk_marker_check read back */
	bool capacity_wait; /* the capacity gate refused the round's start */
	const char *prev_archived; /* the Archived condition before, "False:..."; NULL none */
	int64_t archived_since; /* its lastTransitionTime, offset from NOW */
	/* expected */
	const char *want_actions; /* non-event actions */
	sk_phase want_phase;
	const char *want_ready; /* "True:Archived"; NULL: not checked */
	sk_archive_state want_arch;
	int want_intent; /* 1 set, 0 cleared, -1 not checked */
	const char *want_event; /* a planned event reason, NULL: not checked */
	int64_t want_requeue; /* 0: not checked */
	bool want_lost; /* WorkspaceIntact False */
	const char *want_ws_reason; /* WorkspaceIntact's reason, NULL: not checked */
	const char *prev_ws; /* WorkspaceIntact before, "True:MarkerWritten" when NULL */
	const char *want_archived; /* Archived "False:WaitingForCapacity"; "-" absent; NULL any */
	sk_wake_cause want_wake; /* the connect action's cause; NONE: not checked */
	/* spec.lifecycle.archive.method Snapshot; an archive (arch) is then
	 * snapshot snap1:default, none when snap_deleted */
	bool snapshot;
	bool snap_deleted;
	bool no_snapshots; /* the provider keeps no snapshots */
	const char
	        *want_template; /* the CREATE's template (and restored_from); NULL: not checked */
	const char
	        *want_snapshot_id; /* next status.archive.snapshotID, "-" none; NULL: not checked */
} ar_case;

/* A space asleep since NOW + since, its sandbox i1 bound, archiveAfter 10m. */
#define ASLEEP(since)                                                                              \
	.archive_after = 10 * MIN, .phase = SK_PHASE_IDLE, .bound = "i1",                          \
	.prev_dp = "Unknown:Idle", .dp_since = (since)
/* Archived as snapshot snap1:default, nothing bound. */
#define SNAPSHOT_ARCHIVED ARCHIVED_STATE, .snapshot = true, .no_archive = true
/* Archived, nothing bound. */
#define ARCHIVED_STATE                                                                             \
	.archive_after = 10 * MIN, .phase = SK_PHASE_ARCHIVED, .prev_dp = "Unknown:Archived",      \
	.arch = SK_ARCHIVE_ARCHIVED

static const ar_case cases[] = {
	{ .name = "asleep less than archiveAfter: kept, requeued for the due time",
	        ASLEEP(-4 * MIN),
	        .sb_id = "i1",
	        .state = SK_SANDBOX_PAUSED,
	        .want_actions = "",
	        .want_phase = SK_PHASE_IDLE,
	        .want_ready = "True:Idle",
	        .want_intent = 0,
	        .want_requeue = 6 * MIN },
	{ .name = "asleep past archiveAfter: intent, wake, archive, record, then delete",
	        ASLEEP(-11 * MIN),
	        .sb_id = "i1",
	        .state = SK_SANDBOX_PAUSED,
	        .want_actions = "bind connect archive bind kill",
	        .want_phase = SK_PHASE_IDLE,
	        .want_intent = 1,
	        .want_event = SK_REASON_ARCHIVING,
	        .want_archived = "-",
	        .want_wake = SK_WAKE_ARCHIVE },
	{ .name = "no archive configured: never archived",
	        .no_archive = true,
	        ASLEEP(-11 * MIN),
	        .sb_id = "i1",
	        .state = SK_SANDBOX_PAUSED,
	        .want_actions = "",
	        .want_phase = SK_PHASE_IDLE,
	        .want_intent = 0 },
	{ .name = "archiveAfter 0: never, without a retention",
	        .phase = SK_PHASE_IDLE,
	        .bound = "i1",
	        .prev_dp = "Unknown:Idle",
	        .dp_since = -1000 * HOUR,
	        .sb_id = "i1",
	        .state = SK_SANDBOX_PAUSED,
	        .want_actions = "",
	        .want_phase = SK_PHASE_IDLE,
	        .want_intent = 0 },
	{ .name = "pausedRetention 720h: archived an hour before it, archiveAfter 0",
	        .retention = 720 * HOUR,
	        .phase = SK_PHASE_IDLE,
	        .bound = "i1",
	        .prev_dp = "Unknown:Idle",
	        .dp_since = -719 * HOUR,
	        .sb_id = "i1",
	        .state = SK_SANDBOX_PAUSED,
	        .want_actions = "bind connect archive bind kill",
	        .want_phase = SK_PHASE_IDLE,
	        .want_intent = 1 },
	{ .name = "pausedRetention before archiveAfter: the retention decides",
	        .archive_after = 168 * HOUR,
	        .retention = 40 * SEC,
	        .phase = SK_PHASE_IDLE,
	        .bound = "i1",
	        .prev_dp = "Unknown:Idle",
	        .dp_since = -30 * SEC,
	        .sb_id = "i1",
	        .state = SK_SANDBOX_PAUSED,
	        .want_actions = "bind connect archive bind kill",
	        .want_phase = SK_PHASE_IDLE,
	        .want_intent = 1 },
	{ .name = "pausedRetention not near yet: requeued for its margin",
	        .retention = 720 * HOUR,
	        .phase = SK_PHASE_IDLE,
	        .bound = "i1",
	        .prev_dp = "Unknown:Idle",
	        .dp_since = -700 * HOUR,
	        .sb_id = "i1",
	        .state = SK_SANDBOX_PAUSED,
	        .want_actions = "",
	        .want_phase = SK_PHASE_IDLE,
	        .want_requeue = 30 * SEC /* the resync comes first */ },
	{ .name = "a connect waits: resumed, not archived",
	        ASLEEP(-11 * MIN),
	        .sb_id = "i1",
	        .state = SK_SANDBOX_PAUSED,
	        .wake = true,
	        .want_actions = "connect",
	        .want_phase = SK_PHASE_RESUMING,
	        .want_intent = 0 },
	{ .name = "an archive under way, woken (crash after the wake): redone, no second wake",
	        ASLEEP(-11 * MIN),
	        .intent = true,
	        .sb_id = "i1",
	        .state = SK_SANDBOX_RUNNING,
	        .want_actions = "bind archive bind kill",
	        .want_phase = SK_PHASE_IDLE,
	        .want_ready = "True:Idle",
	        .want_intent = 1 },
	{ .name = "an archive under way, asleep again: redone at once",
	        ASLEEP(-1 * SEC),
	        .intent = true,
	        .sb_id = "i1",
	        .state = SK_SANDBOX_PAUSED,
	        .want_actions = "bind connect archive bind kill",
	        .want_phase = SK_PHASE_IDLE,
	        .want_intent = 1 },
	{ .name = "an archive under way and a connect: the user first, intent dropped",
	        ASLEEP(-11 * MIN),
	        .intent = true,
	        .sb_id = "i1",
	        .state = SK_SANDBOX_RUNNING,
	        .wake = true,
	        .want_phase = SK_PHASE_RUNNING,
	        .want_intent = 0 },
	{ .name = "an archive under way and a heartbeat since: the user first, intent dropped",
	        ASLEEP(-11 * MIN),
	        .intent = true,
	        .sb_id = "i1",
	        .state = SK_SANDBOX_RUNNING,
	        .activity = -10 * SEC,
	        .want_phase = SK_PHASE_RUNNING,
	        .want_intent = 0 },
	{ .name = "archived, no sandbox, no connect: phase Archived, Ready True, nothing made",
	        ARCHIVED_STATE,
	        .want_actions = "",
	        .want_phase = SK_PHASE_ARCHIVED,
	        .want_ready = "True:Archived",
	        .want_arch = SK_ARCHIVE_ARCHIVED,
	        .want_archived = "True:" SK_REASON_ARCHIVED },
	{ .name = "archived, the archived sandbox still there (crash before the delete): deleted",
	        ARCHIVED_STATE,
	        .sb_id = "i1",
	        .state = SK_SANDBOX_RUNNING,
	        .want_actions = "kill",
	        .want_phase = SK_PHASE_ARCHIVED,
	        .want_ready = "True:Archived",
	        .want_arch = SK_ARCHIVE_ARCHIVED },
	{ .name = "archived, the archived sandbox there and a connect: it is no keeper",
	        ARCHIVED_STATE,
	        .sb_id = "i1",
	        .state = SK_SANDBOX_PAUSED,
	        .wake = true,
	        .want_actions = "kill create bind",
	        .want_phase = SK_PHASE_CREATING,
	        .want_arch = SK_ARCHIVE_ARCHIVED },
	{ .name = "archived and a connect: a sandbox is created",
	        ARCHIVED_STATE,
	        .wake = true,
	        .want_actions = "create bind",
	        .want_phase = SK_PHASE_CREATING,
	        .want_arch = SK_ARCHIVE_ARCHIVED },
	{ .name = "the new keeper answers: restore, env, marker",
	        .archive_after = 10 * MIN,
	        .phase = SK_PHASE_CREATING,
	        .bound = "n1",
	        .prev_dp = "Unknown:Starting",
	        .arch = SK_ARCHIVE_ARCHIVED,
	        .sb_id = "n1",
	        .state = SK_SANDBOX_RUNNING,
	        .want_actions = "restore init-env write-marker",
	        .want_phase = SK_PHASE_RUNNING,
	        .want_ready = "True:Running",
	        .want_arch = SK_ARCHIVE_RESTORED },
	{ .name = "restore pending, the keeper asleep: not archived over it",
	        .archive_after = 10 * MIN,
	        .phase = SK_PHASE_IDLE,
	        .bound = "n1",
	        .prev_dp = "Unknown:Idle",
	        .dp_since = -11 * MIN,
	        .arch = SK_ARCHIVE_ARCHIVED,
	        .sb_id = "n1",
	        .state = SK_SANDBOX_PAUSED,
	        .want_actions = "",
	        .want_phase = SK_PHASE_IDLE,
	        .want_arch = SK_ARCHIVE_ARCHIVED },
	{ .name = "restored space archived again later: generation goes on",
	        .archive_after = 10 * MIN,
	        .phase = SK_PHASE_IDLE,
	        .bound = "n1",
	        .prev_dp = "Unknown:Idle",
	        .dp_since = -11 * MIN,
	        .arch = SK_ARCHIVE_RESTORED,
	        .sb_id = "n1",
	        .state = SK_SANDBOX_PAUSED,
	        .want_actions = "bind connect archive bind kill",
	        .want_phase = SK_PHASE_IDLE,
	        .want_arch = SK_ARCHIVE_RESTORED,
	        .want_intent = 1 },
	{ .name = "the bound sandbox gone while asleep after its archive was restored: Archived, "
	          "the changes since reported lost",
	        .archive_after = 10 * MIN,
	        .phase = SK_PHASE_IDLE,
	        .bound = "n1",
	        .prev_dp = "Unknown:Idle",
	        .arch = SK_ARCHIVE_RESTORED,
	        .want_actions = "",
	        .want_phase = SK_PHASE_ARCHIVED,
	        .want_ready = "True:Archived",
	        .want_arch = SK_ARCHIVE_ARCHIVED,
	        .want_event = SK_DRIFT_WORKSPACE_LOST,
	        .want_lost = true,
	        .want_ws_reason = SK_REASON_RESTORED_OLDER },
	{ .name = "the bound sandbox gone, no archive: reported lost, a new one created",
	        .archive_after = 10 * MIN,
	        .phase = SK_PHASE_IDLE,
	        .bound = "n1",
	        .prev_dp = "Unknown:Idle",
	        .want_actions = "create bind",
	        .want_phase = SK_PHASE_CREATING,
	        .want_lost = true },
	{ .name = "a resume lost the files, onLoss Restore and an archive: restore marked",
	        .archive_after = 10 * MIN,
	        .on_loss = SK_ON_LOSS_RESTORE,
	        .phase = SK_PHASE_RESUMING,
	        .bound = "n1",
	        .prev_dp = "Unknown:Resuming",
	        .arch = SK_ARCHIVE_RESTORED,
	        .sb_id = "n1",
	        .state = SK_SANDBOX_RUNNING,
	        .marker = SK_MARKER_MISSING,
	        .want_actions = "init-env write-marker",
	        .want_phase = SK_PHASE_RUNNING,
	        .want_arch = SK_ARCHIVE_ARCHIVED,
	        .want_lost = true },
	{ .name = "a resume lost the files, onLoss Report: the archive is left alone",
	        .archive_after = 10 * MIN,
	        .phase = SK_PHASE_RESUMING,
	        .bound = "n1",
	        .prev_dp = "Unknown:Resuming",
	        .arch = SK_ARCHIVE_RESTORED,
	        .sb_id = "n1",
	        .state = SK_SANDBOX_RUNNING,
	        .marker = SK_MARKER_MISSING,
	        .want_actions = "init-env write-marker",
	        .want_phase = SK_PHASE_RUNNING,
	        .want_arch = SK_ARCHIVE_RESTORED,
	        .want_lost = true },
	{ .name = "the restore target gone before its files came back: Archived, nothing lost",
	        .archive_after = 10 * MIN,
	        .phase = SK_PHASE_CREATING,
	        .bound = "n1",
	        .prev_dp = "Unknown:Starting",
	        .arch = SK_ARCHIVE_ARCHIVED,
	        .want_actions = "",
	        .want_phase = SK_PHASE_ARCHIVED,
	        .want_ready = "True:Archived",
	        .want_arch = SK_ARCHIVE_ARCHIVED,
	        .want_ws_reason = "MarkerWritten" },
	{ .name = "an older archive, onLoss Restore: still restored, still reported lost",
	        .archive_after = 10 * MIN,
	        .on_loss = SK_ON_LOSS_RESTORE,
	        .phase = SK_PHASE_IDLE,
	        .bound = "n1",
	        .prev_dp = "Unknown:Idle",
	        .arch = SK_ARCHIVE_RESTORED,
	        .want_actions = "",
	        .want_phase = SK_PHASE_ARCHIVED,
	        .want_arch = SK_ARCHIVE_ARCHIVED,
	        .want_lost = true,
	        .want_ws_reason = SK_REASON_RESTORED_OLDER },
	{ .name = "Archived after an older archive's restore: the loss stays until acknowledged",
	        ARCHIVED_STATE,
	        .prev_ws = "False:" SK_REASON_RESTORED_OLDER,
	        .want_actions = "",
	        .want_phase = SK_PHASE_ARCHIVED,
	        .want_arch = SK_ARCHIVE_ARCHIVED,
	        .want_event = SK_DRIFT_WORKSPACE_LOST,
	        .want_lost = true },
	{ .name = "an archive failed 30s ago: not retried, the sandbox not woken, requeued",
	        ASLEEP(-20 * MIN),
	        .intent = true,
	        .failures = 1,
	        .failed_at = -30 * SEC,
	        .sb_id = "i1",
	        .state = SK_SANDBOX_PAUSED,
	        .want_actions = "",
	        .want_phase = SK_PHASE_IDLE,
	        .want_intent = 1,
	        .want_requeue = 30 * SEC },
	{ .name = "an archive failed 61s ago once: the back-off (1m) is over, redone",
	        ASLEEP(-20 * MIN),
	        .intent = true,
	        .failures = 1,
	        .failed_at = -61 * SEC,
	        .sb_id = "i1",
	        .state = SK_SANDBOX_PAUSED,
	        .want_actions = "bind connect archive bind kill",
	        .want_phase = SK_PHASE_IDLE,
	        .want_intent = 1 },
	{ .name = "three failures, the last 3m ago: the back-off doubled to 4m, not retried",
	        ASLEEP(-30 * MIN),
	        .intent = true,
	        .failures = 3,
	        .failed_at = -3 * MIN,
	        .sb_id = "i1",
	        .state = SK_SANDBOX_PAUSED,
	        .want_actions = "",
	        .want_phase = SK_PHASE_IDLE,
	        .want_intent = 1,
	        .want_requeue = MIN },
	{ .name = "ten failures, the last 59m ago: capped at 1h, not retried",
	        ASLEEP(-10 * HOUR),
	        .intent = true,
	        .failures = 10,
	        .failed_at = -59 * MIN,
	        .sb_id = "i1",
	        .state = SK_SANDBOX_PAUSED,
	        .want_actions = "",
	        .want_phase = SK_PHASE_IDLE,
	        .want_intent = 1,
	        .want_requeue = MIN },
	{ .name = "ten failures, the last 61m ago: retried",
	        ASLEEP(-10 * HOUR),
	        .intent = true,
	        .failures = 10,
	        .failed_at = -61 * MIN,
	        .sb_id = "i1",
	        .state = SK_SANDBOX_PAUSED,
	        .want_actions = "bind connect archive bind kill",
	        .want_phase = SK_PHASE_IDLE,
	        .want_intent = 1 },
	{ .name = "woken by an archive that failed: paused again inside the back-off",
	        ASLEEP(-20 * MIN),
	        .intent = true,
	        .failures = 1,
	        .failed_at = -5 * SEC,
	        .sb_id = "i1",
	        .state = SK_SANDBOX_RUNNING,
	        .want_actions = "pause",
	        .want_phase = SK_PHASE_IDLE,
	        .want_ready = "True:Idle",
	        .want_intent = 1,
	        .want_requeue = 55 * SEC },
	{ .name = "failed lately, not yet under way: not started inside the back-off",
	        ASLEEP(-20 * MIN),
	        .failures = 2,
	        .failed_at = -MIN,
	        .sb_id = "i1",
	        .state = SK_SANDBOX_PAUSED,
	        .want_actions = "",
	        .want_phase = SK_PHASE_IDLE,
	        .want_intent = 0,
	        .want_requeue = MIN },
	{ .name = "woken by the user during a back-off: kept awake, the intent dropped",
	        ASLEEP(-20 * MIN),
	        .intent = true,
	        .failures = 1,
	        .failed_at = -5 * SEC,
	        .sb_id = "i1",
	        .state = SK_SANDBOX_RUNNING,
	        .wake = true,
	        .want_phase = SK_PHASE_RUNNING,
	        .want_intent = 0 },
	{ .name = "due and no slot for its wake: nothing woken, WaitingForCapacity, asked in 1s",
	        ASLEEP(-11 * MIN),
	        .sb_id = "i1",
	        .state = SK_SANDBOX_PAUSED,
	        .capacity_wait = true,
	        .want_actions = "",
	        .want_phase = SK_PHASE_IDLE,
	        .want_ready = "True:Idle",
	        .want_intent = 0,
	        .want_requeue = SEC,
	        .want_archived = "False:" SK_REASON_WAITING_FOR_CAPACITY },
	{ .name = "waited 8s for a slot: asked again in 8s",
	        ASLEEP(-11 * MIN),
	        .sb_id = "i1",
	        .state = SK_SANDBOX_PAUSED,
	        .capacity_wait = true,
	        .prev_archived = "False:" SK_REASON_WAITING_FOR_CAPACITY,
	        .archived_since = -8 * SEC,
	        .want_actions = "",
	        .want_phase = SK_PHASE_IDLE,
	        .want_intent = 0,
	        .want_requeue = 8 * SEC,
	        .want_archived = "False:" SK_REASON_WAITING_FOR_CAPACITY },
	{ .name = "a slot at last after a wait: the archive's wake, not a connect's",
	        ASLEEP(-12 * MIN),
	        .sb_id = "i1",
	        .state = SK_SANDBOX_PAUSED,
	        .prev_archived = "False:" SK_REASON_WAITING_FOR_CAPACITY,
	        .archived_since = -MIN,
	        .want_actions = "bind connect archive bind kill",
	        .want_phase = SK_PHASE_IDLE,
	        .want_intent = 1,
	        .want_archived = "False:" SK_REASON_WAITING_FOR_CAPACITY,
	        .want_wake = SK_WAKE_ARCHIVE },
	{ .name = "an archive under way, asleep, no slot: waits, the intent kept",
	        ASLEEP(-1 * SEC),
	        .intent = true,
	        .sb_id = "i1",
	        .state = SK_SANDBOX_PAUSED,
	        .capacity_wait = true,
	        .want_actions = "",
	        .want_phase = SK_PHASE_IDLE,
	        .want_intent = 1,
	        .want_archived = "False:" SK_REASON_WAITING_FOR_CAPACITY },
	{ .name = "not due and no slot (a connect's refused start elsewhere): nothing said",
	        ASLEEP(-4 * MIN),
	        .sb_id = "i1",
	        .state = SK_SANDBOX_PAUSED,
	        .capacity_wait = true,
	        .want_actions = "",
	        .want_phase = SK_PHASE_IDLE,
	        .want_intent = 0,
	        .want_archived = "-" },
	{ .name = "a connect waits for a slot while the archive is due: the connect's wait",
	        ASLEEP(-11 * MIN),
	        .sb_id = "i1",
	        .state = SK_SANDBOX_PAUSED,
	        .wake = true,
	        .capacity_wait = true,
	        .want_actions = "",
	        .want_phase = SK_PHASE_IDLE,
	        .want_intent = 0,
	        .want_archived = "-" },
	{ .name = "a connect after the archive waited: resumed as a connect's, Archived False "
	          "Awake",
	        ASLEEP(-11 * MIN),
	        .sb_id = "i1",
	        .state = SK_SANDBOX_PAUSED,
	        .wake = true,
	        .prev_archived = "False:" SK_REASON_WAITING_FOR_CAPACITY,
	        .archived_since = -20 * SEC,
	        .want_actions = "connect",
	        .want_phase = SK_PHASE_RESUMING,
	        .want_intent = 0,
	        .want_archived = "False:" SK_REASON_AWAKE,
	        .want_wake = SK_WAKE_CONNECT },
	/* archive.method Snapshot (plan_snapshot.c) */
	{ .name = "Snapshot, asleep past archiveAfter, no object storage: intent, wake, snapshot, "
	          "record, then delete",
	        ASLEEP(-11 * MIN),
	        .snapshot = true,
	        .no_archive = true,
	        .sb_id = "i1",
	        .state = SK_SANDBOX_PAUSED,
	        .want_actions = "bind connect archive bind kill",
	        .want_phase = SK_PHASE_IDLE,
	        .want_intent = 1,
	        .want_event = SK_REASON_ARCHIVING,
	        .want_wake = SK_WAKE_ARCHIVE },
	{ .name = "Snapshot at a provider without snapshots: never archived, object storage or not",
	        ASLEEP(-11 * MIN),
	        .snapshot = true,
	        .no_snapshots = true,
	        .sb_id = "i1",
	        .state = SK_SANDBOX_PAUSED,
	        .want_actions = "",
	        .want_phase = SK_PHASE_IDLE,
	        .want_intent = 0 },
	{ .name = "Snapshot due and no slot for its wake: waits as a copy would",
	        ASLEEP(-11 * MIN),
	        .snapshot = true,
	        .sb_id = "i1",
	        .state = SK_SANDBOX_PAUSED,
	        .capacity_wait = true,
	        .want_actions = "",
	        .want_phase = SK_PHASE_IDLE,
	        .want_intent = 0,
	        .want_archived = "False:" SK_REASON_WAITING_FOR_CAPACITY },
	{ .name = "archived as a snapshot, no connect: Archived, nothing made",
	        SNAPSHOT_ARCHIVED,
	        .want_actions = "",
	        .want_phase = SK_PHASE_ARCHIVED,
	        .want_ready = "True:Archived",
	        .want_arch = SK_ARCHIVE_ARCHIVED,
	        .want_snapshot_id = "snap1:default" },
	{ .name = "archived as a snapshot and a connect: the sandbox starts from the snapshot",
	        SNAPSHOT_ARCHIVED,
	        .wake = true,
	        .want_actions = "create bind",
	        .want_phase = SK_PHASE_CREATING,
	        .want_arch = SK_ARCHIVE_ARCHIVED,
	        .want_template = "snap1:default",
	        .want_snapshot_id = "snap1:default" },
	{ .name = "the sandbox started from the snapshot answers: Restored, nothing copied, the "
	          "snapshot kept until that is written",
	        .archive_after = 10 * MIN,
	        .snapshot = true,
	        .no_archive = true,
	        .phase = SK_PHASE_CREATING,
	        .bound = "n1",
	        .prev_dp = "Unknown:Starting",
	        .arch = SK_ARCHIVE_ARCHIVED,
	        .sb_id = "n1",
	        .state = SK_SANDBOX_RUNNING,
	        .want_actions = "init-env write-marker",
	        .want_phase = SK_PHASE_RUNNING,
	        .want_ready = "True:Running",
	        .want_arch = SK_ARCHIVE_RESTORED,
	        .want_event = SK_REASON_RESTORED,
	        .want_requeue = SEC,
	        .want_snapshot_id = "snap1:default" },
	{ .name = "restored from a snapshot, written: the snapshot is deleted",
	        .archive_after = 10 * MIN,
	        .snapshot = true,
	        .no_archive = true,
	        .phase = SK_PHASE_RUNNING,
	        .bound = "n1",
	        .prev_dp = "True:Healthy",
	        .arch = SK_ARCHIVE_RESTORED,
	        .sb_id = "n1",
	        .state = SK_SANDBOX_RUNNING,
	        .want_actions = "delete-snapshot",
	        .want_phase = SK_PHASE_RUNNING,
	        .want_arch = SK_ARCHIVE_RESTORED },
	{ .name = "restored from a snapshot, snapshot deleted: nothing more",
	        .archive_after = 10 * MIN,
	        .snapshot = true,
	        .snap_deleted = true,
	        .phase = SK_PHASE_RUNNING,
	        .bound = "n1",
	        .prev_dp = "True:Healthy",
	        .arch = SK_ARCHIVE_RESTORED,
	        .sb_id = "n1",
	        .state = SK_SANDBOX_RUNNING,
	        .want_actions = "",
	        .want_phase = SK_PHASE_RUNNING,
	        .want_arch = SK_ARCHIVE_RESTORED,
	        .want_snapshot_id = "-" },
	{ .name = "the snapshot's restore target gone before it answered: Archived again",
	        .archive_after = 10 * MIN,
	        .snapshot = true,
	        .no_archive = true,
	        .phase = SK_PHASE_CREATING,
	        .bound = "n1",
	        .prev_dp = "Unknown:Starting",
	        .arch = SK_ARCHIVE_ARCHIVED,
	        .want_actions = "",
	        .want_phase = SK_PHASE_ARCHIVED,
	        .want_ready = "True:Archived",
	        .want_arch = SK_ARCHIVE_ARCHIVED,
	        .want_snapshot_id = "snap1:default" },
	{ .name = "gone after a snapshot restore (the snapshot deleted): lost, a new one created",
	        .archive_after = 10 * MIN,
	        .snapshot = true,
	        .snap_deleted = true,
	        .phase = SK_PHASE_IDLE,
	        .bound = "n1",
	        .prev_dp = "Unknown:Idle",
	        .arch = SK_ARCHIVE_RESTORED,
	        .want_actions = "create bind",
	        .want_phase = SK_PHASE_CREATING,
	        .want_arch = SK_ARCHIVE_RESTORED,
	        .want_lost = true,
	        .want_template = "base" },
};

static void
add_cond(sk_userspace_status *st, const char *type, const char *spec, int64_t since)
{
	char status[32];
	const char *colon = strchr(spec, ':');
	sk_condition *c;

	snprintf(status, sizeof(status), "%.*s", (int)(colon - spec), spec);
	st->conditions = realloc(st->conditions, (st->n_conditions + 1) * sizeof(*c));
	c = &st->conditions[st->n_conditions++];
	memset(c, 0, sizeof(*c));
	c->type = strdup(type);
	c->status = strdup(status);
	c->reason = strdup(colon + 1);
	c->message = strdup("before");
	c->last_transition_ms = since;
}

static sk_userspace *
build_us(const ar_case *tc)
{
	sk_userspace *us = calloc(1, sizeof(*us));
	sk_archive_status *a = &us->status.archive;

	us->meta.name = strdup("alice");
	us->meta.uid = strdup("uid-1");
	us->meta.generation = 1;
	us->spec.user_id = strdup("alice");
	sk_kvlist_set(&us->spec.env, "KEY", "value");
	sk_userspace_apply_defaults(us);
	us->spec.idle_timeout_ms = 15 * MIN;
	us->spec.archive_after_ms = tc->archive_after;
	us->spec.on_loss = tc->on_loss;
	us->status.phase = tc->phase;
	us->status.sandbox_id = tc->bound ? strdup(tc->bound) : NULL;
	add_cond(&us->status, SK_COND_DATAPLANE, tc->prev_dp, NOW + tc->dp_since);
	add_cond(&us->status, SK_COND_WORKSPACE, tc->prev_ws ? tc->prev_ws : "True:MarkerWritten",
	        NOW - HOUR);
	if (tc->prev_archived != NULL)
		add_cond(
		        &us->status, SK_COND_ARCHIVED, tc->prev_archived, NOW + tc->archived_since);
	if (tc->snapshot)
		us->spec.archive_method = SK_ARCHIVE_SNAPSHOT;
	if (tc->arch != SK_ARCHIVE_NONE && tc->snapshot) {
		a->state = tc->arch;
		a->method = SK_ARCHIVE_SNAPSHOT;
		a->snapshot_id = tc->snap_deleted ? NULL : strdup("snap1:default");
		a->generation = 2;
		a->time_ms = NOW - 2 * HOUR;
		a->sandbox_id = strdup("i1");
	} else if (tc->arch != SK_ARCHIVE_NONE) {
		a->state = tc->arch;
		a->bucket = strdup("spaces");
		a->key = strdup("spaces/alice/2");
		a->generation = 2;
		a->time_ms = NOW - 2 * HOUR;
		a->files = 7;
		a->sandbox_id = strdup("i1");
	}
	if (tc->intent)
		a->intent_ms = NOW - MIN;
	a->failures = tc->failures;
	a->failed_ms = tc->failures ? NOW + tc->failed_at : 0;
	return us;
}

static void
build_ob(const ar_case *tc, sk_observed *ob)
{
	sk_sandbox sb;

	sk_observed_init(ob);
	ob->list_valid = true;
	ob->listed_ms = NOW - SEC;
	ob->wake = tc->wake;
	ob->activity_ms = tc->activity ? NOW + tc->activity : 0;
	ob->marker = tc->marker;
	ob->capacity_wait = tc->capacity_wait;
	snprintf(ob->marker_detail, sizeof(ob->marker_detail), "no marker");
	if (tc->bound != NULL && (tc->sb_id == NULL || strcmp(tc->sb_id, tc->bound) != 0))
		ob->bound = SK_LOOKUP_NOT_FOUND;
	ob->user = SK_LOOKUP_NOT_FOUND;
	ob->user_ms = NOW;
	if (tc->sb_id == NULL)
		return;
	memset(&sb, 0, sizeof(sb));
	sb.id = strdup(tc->sb_id);
	sb.template_id = strdup("base");
	sb.state = tc->state;
	sb.started_ms = NOW - HOUR;
	sb.end_ms = tc->state == SK_SANDBOX_RUNNING ? NOW + 14 * MIN : 0;
	sk_kvlist_set(&sb.metadata, SK_META_USER_ID, "alice");
	sk_kvlist_set(&sb.metadata, SK_META_MANAGED_BY, SK_MANAGED_BY_VALUE);
	sk_observed_add(ob, &sb);
	sk_sandbox_dispose(&sb);
	if (tc->state == SK_SANDBOX_RUNNING)
		sk_observed_add_probe(ob, tc->sb_id, true, SK_HEALTH_OK, 200, NOW - SEC, 0);
}

static const sk_condition *
cond_of(const sk_userspace_status *st, const char *type)
{
	for (size_t i = 0; i < st->n_conditions; i++) {
		if (strcmp(st->conditions[i].type, type) == 0)
			return &st->conditions[i];
	}
	return NULL;
}

static void
plan_case(const ar_case *tc, sk_userspace **us, sk_plan_result *r)
{
	sk_plan_options o;
	sk_observed ob;

	sk_plan_options_init(&o);
	o.markers = true;
	o.archive = !tc->no_archive;
	o.snapshots = !tc->no_snapshots;
	o.paused_retention_ms = tc->retention;
	*us = build_us(tc);
	build_ob(tc, &ob);
	ck_assert_int_eq(sk_plan(*us, &ob, NOW, &o, r), 0);
	sk_observed_dispose(&ob);
}

START_TEST(test_archive_table)
{
	const ar_case *tc = &cases[_i];
	sk_userspace *us;
	sk_plan_result r;
	sk_buf acts = SK_BUF_INIT(0);
	const sk_condition *c;
	bool event = false;
	char got[128];

	plan_case(tc, &us, &r);
	for (size_t i = 0; i < r.n_actions; i++) {
		const sk_action *a = &r.actions[i];
		if (a->type == SK_ACTION_EVENT) {
			event |= tc->want_event && strcmp(a->reason, tc->want_event) == 0;
			continue;
		}
		sk_buf_printf(&acts, "%s%s", acts.len ? " " : "", sk_action_type_name(a->type));
		if (a->type == SK_ACTION_CREATE && tc->want_template) {
			const char *from = sk_kvlist_get(&a->metadata, SK_META_SNAPSHOT);
			bool snap = strcmp(tc->want_template, "base") != 0;
			ck_assert_msg(strcmp(a->template_id, tc->want_template) == 0,
			        "%s: template %s, want %s", tc->name, a->template_id,
			        tc->want_template);
			ck_assert_msg((from != NULL) == snap, "%s: restored_from %s", tc->name,
			        from ? from : "-");
		}
		if (a->type == SK_ACTION_DELETE_SNAPSHOT)
			ck_assert_str_eq(a->snapshot_id, "snap1:default");
		if (a->type == SK_ACTION_CONNECT && tc->want_wake != SK_WAKE_NONE)
			ck_assert_msg(a->wake == tc->want_wake, "%s: wake \"%s\", want \"%s\"",
			        tc->name, sk_wake_cause_phrase(a->wake),
			        sk_wake_cause_phrase(tc->want_wake));
	}
	if (tc->want_archived) {
		c = cond_of(&r.next, SK_COND_ARCHIVED);
		snprintf(got, sizeof(got), "%s:%s", c ? c->status : "-", c ? c->reason : "-");
		ck_assert_msg(strcmp(tc->want_archived, "-") == 0
		                ? c == NULL
		                : strcmp(got, tc->want_archived) == 0,
		        "%s: Archived %s, want %s", tc->name, got, tc->want_archived);
	}
	if (tc->want_actions)
		ck_assert_msg(strcmp(acts.data ? acts.data : "", tc->want_actions) == 0,
		        "%s: actions \"%s\", want \"%s\"", tc->name, acts.data ? acts.data : "",
		        tc->want_actions);
	ck_assert_msg(r.next.phase == tc->want_phase, "%s: phase %s, want %s", tc->name,
	        sk_phase_name(r.next.phase), sk_phase_name(tc->want_phase));
	if (tc->want_ready) {
		c = cond_of(&r.next, SK_COND_READY);
		snprintf(got, sizeof(got), "%s:%s", c ? c->status : "-", c ? c->reason : "-");
		ck_assert_msg(strcmp(got, tc->want_ready) == 0, "%s: Ready %s, want %s", tc->name,
		        got, tc->want_ready);
	}
	ck_assert_msg(r.next.archive.state == tc->want_arch, "%s: archive state %s, want %s",
	        tc->name, sk_archive_state_name(r.next.archive.state),
	        sk_archive_state_name(tc->want_arch));
	if (tc->want_intent >= 0)
		ck_assert_msg((r.next.archive.intent_ms != 0) == (tc->want_intent == 1),
		        "%s: intent %lld", tc->name, (long long)r.next.archive.intent_ms);
	if (tc->want_event)
		ck_assert_msg(event, "%s: no event %s", tc->name, tc->want_event);
	if (tc->want_snapshot_id)
		ck_assert_msg(strcmp(r.next.archive.snapshot_id ? r.next.archive.snapshot_id : "-",
		                      tc->want_snapshot_id) == 0,
		        "%s: snapshotID %s, want %s", tc->name,
		        r.next.archive.snapshot_id ? r.next.archive.snapshot_id : "-",
		        tc->want_snapshot_id);
	if (tc->want_requeue)
		ck_assert_msg(r.requeue_after_ms > 0 && r.requeue_after_ms <= tc->want_requeue,
		        "%s: requeue %lld, want at most %lld", tc->name,
		        (long long)r.requeue_after_ms, (long long)tc->want_requeue);
	c = cond_of(&r.next, SK_COND_WORKSPACE);
	ck_assert_msg((c != NULL && strcmp(c->status, "False") == 0) == tc->want_lost,
	        "%s: WorkspaceIntact %s", tc->name, c ? c->status : "-");
	if (tc->want_ws_reason)
		ck_assert_msg(c != NULL && strcmp(c->reason, tc->want_ws_reason) == 0,
		        "%s: WorkspaceIntact reason %s, want %s", tc->name, c ? c->reason : "-",
		        tc->want_ws_reason);
	/* the binding is never dropped by a plan that archives: the record does that */
	for (size_t i = 0; i < r.n_actions; i++) {
		if (r.actions[i].type == SK_ACTION_ARCHIVE)
			ck_assert_str_eq(r.next.sandbox_id, tc->bound);
	}
	sk_buf_dispose(&acts);
	sk_plan_result_dispose(&r);
	sk_userspace_free(us);
}
END_TEST

/* The kill comes only after the archive and its record, in that order. */
START_TEST(test_archive_order)
{
	sk_userspace *us;
	sk_plan_result r;
	int arch = -1, record = -1, kill = -1, intent = -1;

	plan_case(&cases[1], &us, &r);
	for (size_t i = 0; i < r.n_actions; i++) {
		const sk_action *a = &r.actions[i];
		if (a->type == SK_ACTION_BIND && intent < 0)
			intent = (int)i;
		else if (a->type == SK_ACTION_ARCHIVE)
			arch = (int)i;
		else if (a->type == SK_ACTION_BIND)
			record = (int)i;
		else if (a->type == SK_ACTION_KILL) {
			kill = (int)i;
			ck_assert_int_eq(a->why, SK_KILL_ARCHIVED);
			ck_assert_str_eq(a->sandbox_id, "i1");
		}
	}
	ck_assert_int_ge(intent, 0);
	ck_assert_int_gt(arch, intent);
	ck_assert_int_gt(record, arch);
	ck_assert_int_gt(kill, record);
	sk_plan_result_dispose(&r);
	sk_userspace_free(us);
}
END_TEST

/* What the ARCHIVE action records: nothing bound, phase Archived, Ready
 * True, the archived sandbox named for its delete. */
START_TEST(test_archive_record)
{
	sk_userspace_status st;
	const sk_condition *c;

	memset(&st, 0, sizeof(st));
	st.phase = SK_PHASE_IDLE;
	st.sandbox_id = strdup("i1");
	st.archive.intent_ms = NOW - MIN;
	sk_archive_record(&st, "b", "spaces/alice/3", 3, 12, 4096, NOW, 4);
	ck_assert_ptr_null(st.sandbox_id);
	ck_assert_int_eq(st.phase, SK_PHASE_ARCHIVED);
	ck_assert_int_eq(st.archive.state, SK_ARCHIVE_ARCHIVED);
	ck_assert_int_eq(st.archive.intent_ms, 0);
	ck_assert_str_eq(st.archive.sandbox_id, "i1");
	ck_assert_str_eq(st.archive.key, "spaces/alice/3");
	ck_assert_int_eq(st.archive.generation, 3);
	ck_assert_int_eq(st.archive.files, 12);
	ck_assert_int_eq(st.archive.bytes, 4096);
	c = cond_of(&st, SK_COND_READY);
	ck_assert_str_eq(c->status, "True");
	ck_assert_str_eq(c->reason, SK_REASON_ARCHIVED);
	ck_assert_int_eq(c->observed_generation, 4);
	c = cond_of(&st, SK_COND_ARCHIVED);
	ck_assert_str_eq(c->status, "True");
	ck_assert_str_eq(c->reason, SK_REASON_ARCHIVED);
	sk_userspace_status_dispose(&st);
}
END_TEST

/* An archive refused a slot asks again after as long as it waited: 1 s
 * at first, doubling with each wait, 30 s at most (a slot freeing kicks it
 * sooner). */
START_TEST(test_archive_slot_retry)
{
	static const struct {
		int64_t waited, want;
	} rows[] = { { 0, SEC }, { 400, SEC }, { SEC, SEC }, { 8 * SEC, 8 * SEC },
		{ 30 * SEC, 30 * SEC }, { 2 * MIN, 30 * SEC }, { -SEC, SEC } };

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		ck_assert_msg(sk_archive_slot_retry(rows[i].waited) == rows[i].want,
		        "waited %lld: %lld, want %lld", (long long)rows[i].waited,
		        (long long)sk_archive_slot_retry(rows[i].waited), (long long)rows[i].want);
}
END_TEST

/* The Woken event's words for each cause. */
START_TEST(test_wake_cause_phrase)
{
	ck_assert_str_eq(sk_wake_cause_phrase(SK_WAKE_CONNECT), "a connect");
	ck_assert_str_eq(sk_wake_cause_phrase(SK_WAKE_ARCHIVE), "the archive");
	ck_assert_str_eq(sk_wake_cause_phrase(SK_WAKE_MIGRATION), "a migration");
	ck_assert_str_eq(sk_wake_cause_phrase(SK_WAKE_SNAPSHOT), "a snapshot");
	ck_assert_str_eq(sk_wake_cause_phrase(SK_WAKE_NONE), "");
}
END_TEST

START_TEST(test_archive_key_and_due)
{
	char *k = sk_archive_key("spaces/", "alice", 3);
	sk_userspace *us;
	sk_plan_options o;

	ck_assert_str_eq(k, "spaces/alice/3");
	free(k);
	k = sk_archive_key("", "bob", 1);
	ck_assert_str_eq(k, "bob/1");
	free(k);
	ck_assert_int_eq(sk_archive_margin(720 * HOUR), HOUR);
	ck_assert_int_eq(sk_archive_margin(40 * SEC), 10 * SEC);
	sk_plan_options_init(&o);
	us = build_us(&cases[0]);
	ck_assert_int_eq(sk_archive_due(us, NOW, &o), 0); /* no archive configured */
	o.archive = true;
	ck_assert_int_eq(sk_archive_due(us, NOW, &o), NOW + 10 * MIN);
	us->spec.idle_timeout_ms = 0; /* always on: never asleep */
	ck_assert_int_eq(sk_archive_due(us, NOW, &o), 0);
	sk_userspace_free(us);
}
END_TEST

/* A failed restore keeps the files marked as only in the archive, and the
 * space not ready; a failed archive records nothing. */
START_TEST(test_archive_failures)
{
	sk_action a = { .type = SK_ACTION_RESTORE };
	sk_outcome out = { SK_ETRANSIENT, &a, false, 503, "restore: 503", false };
	sk_userspace *us = build_us(&cases[16]);
	sk_userspace_status st;

	sk_userspace_status_copy(&st, &us->status);
	st.archive.state = SK_ARCHIVE_RESTORED;
	st.archive.restore_ms = NOW;
	sk_plan_failure(us, &out, NOW, &st);
	ck_assert_int_eq(st.archive.state, SK_ARCHIVE_ARCHIVED);
	ck_assert_int_eq(st.archive.restore_ms, 0);
	ck_assert_str_eq(cond_of(&st, SK_COND_READY)->status, "False");
	ck_assert_str_eq(cond_of(&st, SK_COND_READY)->reason, SK_REASON_RESTORE_FAILED);
	sk_userspace_status_dispose(&st);
	sk_userspace_free(us);

	a.type = SK_ACTION_ARCHIVE;
	out.code = SK_EUNAUTHORIZED;
	us = build_us(&cases[1]);
	sk_userspace_status_copy(&st, &us->status);
	sk_plan_failure(us, &out, NOW, &st);
	ck_assert_int_eq(st.phase, SK_PHASE_IDLE);
	ck_assert_str_eq(st.sandbox_id, "i1");
	ck_assert_str_eq(cond_of(&st, SK_COND_SYNCED)->reason, SK_REASON_ARCHIVE_FAILED);
	sk_userspace_status_dispose(&st);
	sk_userspace_free(us);
}
END_TEST

/* The back-off of a failing archive: 1m doubling to 1h; a failed ARCHIVE
 * counts one more failure at its time, a success clears them. */
START_TEST(test_archive_backoff)
{
	sk_action a = { .type = SK_ACTION_ARCHIVE };
	sk_outcome out = { SK_EUNAUTHORIZED, &a, false, 403, "archive: 403", false };
	sk_userspace *us = build_us(&cases[1]);
	sk_userspace_status st;

	ck_assert_int_eq(sk_archive_backoff(0), 0);
	ck_assert_int_eq(sk_archive_backoff(1), MIN);
	ck_assert_int_eq(sk_archive_backoff(2), 2 * MIN);
	ck_assert_int_eq(sk_archive_backoff(6), 32 * MIN);
	ck_assert_int_eq(sk_archive_backoff(7), HOUR);
	ck_assert_int_eq(sk_archive_backoff(1000), HOUR);
	us->status.archive.failures = 2;
	sk_userspace_status_copy(&st, &us->status);
	sk_plan_failure(us, &out, NOW, &st);
	ck_assert_int_eq(st.archive.failures, 3);
	ck_assert_int_eq(st.archive.failed_ms, NOW);
	sk_archive_record(&st, "b", "spaces/alice/1", 1, 1, 1, NOW + SEC, 1);
	ck_assert_int_eq(st.archive.failures, 0);
	ck_assert_int_eq(st.archive.failed_ms, 0);
	sk_userspace_status_dispose(&st);
	sk_userspace_free(us);
}
END_TEST

/* The actions of cases[i]'s space being deleted, as "a b c". */
static void
delete_actions(int i, bool archive, sk_deletion_policy policy, char *out, size_t len)
{
	sk_userspace *us = build_us(&cases[i]);
	sk_plan_options o;
	sk_observed ob;
	sk_plan_result r;
	size_t n = 0;

	sk_plan_options_init(&o);
	o.markers = true;
	o.archive = archive;
	o.snapshots = archive;
	us->meta.deletion_ms = NOW - SEC;
	us->meta.finalizers = calloc(1, sizeof(char *));
	us->meta.finalizers[0] = strdup(SK_FINALIZER);
	us->meta.n_finalizers = 1;
	us->spec.deletion_policy = policy;
	build_ob(&cases[i], &ob);
	ck_assert_int_eq(sk_plan(us, &ob, NOW, &o, &r), 0);
	out[0] = '\0';
	for (size_t k = 0; k < r.n_actions; k++) {
		if (r.actions[k].type != SK_ACTION_EVENT)
			n += (size_t)snprintf(out + n, len - n, "%s%s", n ? " " : "",
			        sk_action_type_name(r.actions[k].type));
	}
	sk_observed_dispose(&ob);
	sk_plan_result_dispose(&r);
	sk_userspace_free(us);
}

/* A deleted space's archives go before its finalizer (deletionPolicy
 * Delete); Retain keeps them, as it keeps the sandbox; none without an
 * archive configured or without archives. */
START_TEST(test_archive_purge_on_delete)
{
	char got[256];

	delete_actions(12, true, SK_DELETE_DELETE, got, sizeof(got)); /* Archived */
	ck_assert_str_eq(got, "purge-archive remove-finalizer");
	delete_actions(12, true, SK_DELETE_RETAIN, got, sizeof(got));
	ck_assert_str_eq(got, "remove-finalizer");
	delete_actions(12, false, SK_DELETE_DELETE, got, sizeof(got));
	ck_assert_str_eq(got, "remove-finalizer");
	delete_actions(1, true, SK_DELETE_DELETE, got, sizeof(got)); /* never archived */
	ck_assert_str_eq(got, "kill remove-finalizer");
	delete_actions(26, true, SK_DELETE_DELETE, got, sizeof(got)); /* an archive under way */
	ck_assert_str_eq(got, "kill purge-archive remove-finalizer");
}
END_TEST

/* The row whose name starts with prefix. */
static int
case_named(const char *prefix)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (strncmp(cases[i].name, prefix, strlen(prefix)) == 0)
			return (int)i;
	}
	ck_abort_msg("no case %s", prefix);
	return -1;
}

/* A deleted space archived as a snapshot: the snapshot goes before the
 * finalizer (Delete), stays with Retain; once deleted, nothing to do. */
START_TEST(test_snapshot_purge_on_delete)
{
	char got[256];

	delete_actions(case_named("archived as a snapshot, no connect"), true, SK_DELETE_DELETE,
	        got, sizeof(got));
	/* object storage configured too: what an earlier method left there goes as well */
	ck_assert_str_eq(got, "purge-archive delete-snapshot remove-finalizer");
	delete_actions(case_named("archived as a snapshot, no connect"), true, SK_DELETE_RETAIN,
	        got, sizeof(got));
	ck_assert_str_eq(got, "remove-finalizer");
	delete_actions(case_named("restored from a snapshot, snapshot deleted"), true,
	        SK_DELETE_DELETE, got, sizeof(got));
	ck_assert_str_eq(got, "kill purge-archive remove-finalizer");
}
END_TEST

/* What an ARCHIVE by snapshot records: as a copy's, with method Snapshot
 * and the snapshot's ID instead of a bucket and key; describe says where. */
START_TEST(test_snapshot_record)
{
	sk_userspace_status st;
	const sk_condition *c;
	char out[512];

	memset(&st, 0, sizeof(st));
	st.phase = SK_PHASE_IDLE;
	st.sandbox_id = strdup("i1");
	st.archive.intent_ms = NOW - MIN;
	st.archive.generation = 2;
	sk_archive_record_snapshot(&st, "snap9:default", 3, NOW, 4);
	ck_assert_ptr_null(st.sandbox_id);
	ck_assert_int_eq(st.phase, SK_PHASE_ARCHIVED);
	ck_assert_int_eq(st.archive.state, SK_ARCHIVE_ARCHIVED);
	ck_assert_int_eq(st.archive.method, SK_ARCHIVE_SNAPSHOT);
	ck_assert_str_eq(st.archive.snapshot_id, "snap9:default");
	ck_assert_ptr_null(st.archive.key);
	ck_assert_str_eq(st.archive.sandbox_id, "i1");
	ck_assert_int_eq(st.archive.generation, 3);
	c = cond_of(&st, SK_COND_READY);
	ck_assert_str_eq(c->reason, SK_REASON_ARCHIVED);
	ck_assert_ptr_nonnull(strstr(c->message, "snapshot snap9:default"));
	sk_archive_where(&st, out, sizeof(out));
	ck_assert_msg(
	        strncmp(out, "archive snapshot snap9:default (generation 3", 44) == 0, "%s", out);
	sk_userspace_status_dispose(&st);
}
END_TEST

/* spec.snapshots (plan_snapshot.c): when a scheduled snapshot is due, how
 * a sleeping keeper gets one, and the pruning to keep. NOW is
 * 2027-01-15T08:00:00Z. */
typedef struct snap_case {
	const char *name;
	const char *schedule; /* NULL: none */
	int keep;
	bool asleep; /* the keeper paused (phase Idle), else running and healthy */
	int64_t scheduled; /* status.snapshots.lastScheduleTime, offset from NOW; 0 none */
	int64_t taken; /* lastSnapshotTime, offset; 0 none */
	int64_t used; /* status.lastActivityTime, offset; 0 none */
	int n_ids; /* snapshotIDs s0, s1, ... */
	bool capacity_wait;
	bool no_snapshots;
	const char *want_actions;
	int64_t want_scheduled; /* next lastScheduleTime, offset from NOW; 1: unchanged */
	int64_t want_requeue; /* 0: not checked */
	const char *want_deleted; /* the IDs deleted, "s0 s1"; NULL: none */
} snap_case;

static const snap_case snap_cases[] = {
	{ .name = "no schedule: nothing",
	        .scheduled = -HOUR,
	        .want_actions = "",
	        .want_scheduled = 1 },
	{ .name = "a schedule first seen: it starts now, nothing taken for the past",
	        .schedule = "30 * * * *",
	        .want_actions = "",
	        .want_scheduled = 0,
	        .want_requeue = 30 * MIN },
	{ .name = "running, not due yet: requeued for the time",
	        .schedule = "30 * * * *",
	        .scheduled = -10 * MIN,
	        .want_actions = "",
	        .want_scheduled = 1,
	        .want_requeue = 30 * MIN },
	{ .name = "running, due: a snapshot, the time handled",
	        .schedule = "30 * * * *",
	        .scheduled = -70 * MIN,
	        .want_actions = "snapshot",
	        .want_scheduled = 0,
	        .want_requeue = 30 * MIN },
	{ .name = "running, three times missed: one snapshot",
	        .schedule = "*/15 * * * *",
	        .scheduled = -50 * MIN,
	        .want_actions = "snapshot",
	        .want_scheduled = 0 },
	{ .name = "asleep, used since the last snapshot: woken as a snapshot's, taken, paused",
	        .schedule = "30 * * * *",
	        .asleep = true,
	        .scheduled = -70 * MIN,
	        .taken = -2 * HOUR,
	        .used = -HOUR,
	        .want_actions = "connect snapshot pause",
	        .want_scheduled = 0 },
	{ .name = "asleep, unchanged since the last snapshot: none, the time handled",
	        .schedule = "30 * * * *",
	        .asleep = true,
	        .scheduled = -70 * MIN,
	        .taken = -30 * MIN,
	        .used = -HOUR,
	        .want_actions = "",
	        .want_scheduled = 0 },
	{ .name = "asleep, used, no slot for its wake: nothing woken, still due",
	        .schedule = "30 * * * *",
	        .asleep = true,
	        .scheduled = -70 * MIN,
	        .taken = -2 * HOUR,
	        .used = -HOUR,
	        .capacity_wait = true,
	        .want_actions = "",
	        .want_scheduled = 1,
	        .want_requeue = SEC },
	{ .name = "more than keep: the oldest deleted, newest first kept",
	        .schedule = "30 * * * *",
	        .keep = 2,
	        .scheduled = -10 * MIN,
	        .n_ids = 4,
	        .want_actions = "delete-snapshot delete-snapshot",
	        .want_scheduled = 1,
	        .want_deleted = "s0 s1" },
	{ .name = "due with keep snapshots: the new one taken first, then the oldest deleted",
	        .schedule = "30 * * * *",
	        .keep = 2,
	        .scheduled = -70 * MIN,
	        .n_ids = 2,
	        .want_actions = "snapshot delete-snapshot",
	        .want_scheduled = 0,
	        .want_deleted = "s0" },
	{ .name = "keep unset: seven kept",
	        .schedule = "30 * * * *",
	        .scheduled = -10 * MIN,
	        .n_ids = 8,
	        .want_actions = "delete-snapshot",
	        .want_scheduled = 1,
	        .want_deleted = "s0" },
	{ .name = "a provider without snapshots: nothing",
	        .schedule = "30 * * * *",
	        .scheduled = -70 * MIN,
	        .no_snapshots = true,
	        .want_actions = "",
	        .want_scheduled = 1 },
};

START_TEST(test_snapshot_schedule_table)
{
	const snap_case *tc = &snap_cases[_i];
	ar_case base = { .phase = tc->asleep ? SK_PHASE_IDLE : SK_PHASE_RUNNING,
		.bound = "i1",
		.prev_dp = tc->asleep ? "Unknown:Idle" : "True:Healthy",
		.dp_since = -HOUR,
		.sb_id = "i1",
		.state = tc->asleep ? SK_SANDBOX_PAUSED : SK_SANDBOX_RUNNING,
		.capacity_wait = tc->capacity_wait };
	sk_userspace *us = build_us(&base);
	sk_snapshots_status *st = &us->status.snapshots;
	sk_plan_options o;
	sk_observed ob;
	sk_plan_result r;
	sk_buf acts = SK_BUF_INIT(0), del = SK_BUF_INIT(0);
	int64_t want;

	sk_plan_options_init(&o);
	o.markers = true;
	o.snapshots = !tc->no_snapshots;
	us->spec.snapshot_schedule = tc->schedule ? strdup(tc->schedule) : NULL;
	us->spec.snapshot_keep = tc->keep;
	st->schedule_ms = tc->scheduled ? NOW + tc->scheduled : 0;
	st->last_ms = tc->taken ? NOW + tc->taken : 0;
	us->status.last_activity_ms = tc->used ? NOW + tc->used : 0;
	for (int i = 0; i < tc->n_ids; i++) {
		char id[16];
		snprintf(id, sizeof(id), "s%d", i);
		sk_strlist_add(&st->ids, id);
	}
	build_ob(&base, &ob);
	ck_assert_int_eq(sk_plan(us, &ob, NOW, &o, &r), 0);
	for (size_t i = 0; i < r.n_actions; i++) {
		const sk_action *a = &r.actions[i];
		if (a->type == SK_ACTION_EVENT || a->type == SK_ACTION_SET_TIMEOUT)
			continue;
		sk_buf_printf(&acts, "%s%s", acts.len ? " " : "", sk_action_type_name(a->type));
		if (a->type == SK_ACTION_DELETE_SNAPSHOT)
			sk_buf_printf(&del, "%s%s", del.len ? " " : "", a->snapshot_id);
		if (a->type == SK_ACTION_CONNECT)
			ck_assert_msg(a->wake == SK_WAKE_SNAPSHOT, "%s: wake %s", tc->name,
			        sk_wake_cause_phrase(a->wake));
	}
	ck_assert_msg(strcmp(acts.data ? acts.data : "", tc->want_actions) == 0,
	        "%s: actions \"%s\", want \"%s\"", tc->name, acts.data ? acts.data : "",
	        tc->want_actions);
	ck_assert_msg(
	        strcmp(del.data ? del.data : "", tc->want_deleted ? tc->want_deleted : "") == 0,
	        "%s: deleted \"%s\"", tc->name, del.data ? del.data : "");
	want = tc->want_scheduled == 1 ? st->schedule_ms : NOW + tc->want_scheduled;
	ck_assert_msg(r.next.snapshots.schedule_ms == want, "%s: lastScheduleTime %lld, want %lld",
	        tc->name, (long long)r.next.snapshots.schedule_ms, (long long)want);
	if (tc->want_requeue)
		ck_assert_msg(r.requeue_after_ms > 0 && r.requeue_after_ms <= tc->want_requeue,
		        "%s: requeue %lld, want at most %lld", tc->name,
		        (long long)r.requeue_after_ms, (long long)tc->want_requeue);
	/* the status keeps what it had: the executor adds and removes IDs */
	ck_assert_uint_eq(r.next.snapshots.ids.len, (size_t)tc->n_ids);
	sk_buf_dispose(&acts);
	sk_buf_dispose(&del);
	sk_observed_dispose(&ob);
	sk_plan_result_dispose(&r);
	sk_userspace_free(us);
}
END_TEST

/* Where the files are, as describe and the status page say it. */
START_TEST(test_archive_where)
{
	ar_case tc = cases[12];
	sk_userspace *us = build_us(&tc);
	char out[1024];

	sk_archive_where(&us->status, out, sizeof(out));
	ck_assert_msg(
	        strstr(out, "archive s3://spaces/spaces/alice/2/ (generation 2, 7 files") == out,
	        "%s", out);
	ck_assert(sk_plan_settled(us)); /* spacekeeper --once ends on Archived */
	us->status.sandbox_id = strdup("n1");
	sk_archive_where(&us->status, out, sizeof(out));
	ck_assert_ptr_nonnull(strstr(out, "being restored into sandbox n1"));
	us->status.archive.state = SK_ARCHIVE_RESTORED;
	sk_archive_where(&us->status, out, sizeof(out));
	ck_assert_msg(strncmp(out, "sandbox n1 (newest archive s3://", 32) == 0, "%s", out);
	sk_archive_status_dispose(&us->status.archive);
	sk_archive_where(&us->status, out, sizeof(out));
	ck_assert_str_eq(out, "sandbox n1");
	sk_userspace_free(us);
}
END_TEST

Suite *
sk_suite_plan_archive(void)
{
	Suite *s = suite_create("plan_archive");
	TCase *tc = tcase_create("table");

	tcase_add_loop_test(tc, test_archive_table, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_test(tc, test_archive_order);
	tcase_add_test(tc, test_archive_record);
	tcase_add_test(tc, test_archive_slot_retry);
	tcase_add_test(tc, test_wake_cause_phrase);
	tcase_add_test(tc, test_archive_key_and_due);
	tcase_add_test(tc, test_archive_failures);
	tcase_add_test(tc, test_archive_where);
	tcase_add_test(tc, test_archive_backoff);
	tcase_add_test(tc, test_archive_purge_on_delete);
	tcase_add_test(tc, test_snapshot_purge_on_delete);
	tcase_add_test(tc, test_snapshot_record);
	tcase_add_loop_test(tc, test_snapshot_schedule_table, 0,
	        (int)(sizeof(snap_cases) / sizeof(snap_cases[0])));
	suite_add_tcase(s, tc);
	return s;
}
