/*
 * reconcile_int: the planner's working context and the helpers that build
 * actions, conditions and drift for the next status (private to reconcile).
 */
#ifndef SK_RECONCILE_INT_H
#define SK_RECONCILE_INT_H

#include "reconcile.h"

/* ---- the reasons this package writes into conditions and events ---- */

/* Ready / phase */
#define SK_REASON_RUNNING "Running"
#define SK_REASON_RESUMING "Resuming" /* warm-up after a resume */
#define SK_REASON_IDLE "Idle" /* asleep after lifecycle.idleTimeout; a connect wakes it */
#define SK_REASON_PAUSED "Paused" /* mode Paused, as desired */
#define SK_REASON_MODE_PAUSED "ModePaused" /* a connect to a space whose mode is Paused */
#define SK_REASON_CREATING "Creating"
#define SK_REASON_REPLACING "Replacing"
#define SK_REASON_DELETING "Deleting"
#define SK_REASON_TRANSITIONING "Transitioning"
#define SK_REASON_SANDBOX_MISSING "SandboxMissing"
#define SK_REASON_STARTING "Starting" /* warm-up after a create */
/* DataPlaneHealthy */
#define SK_REASON_HEALTHY "Healthy"
#define SK_REASON_NOT_PROBED "NotProbed"
#define SK_REASON_NO_SANDBOX "NoSandbox"
#define SK_REASON_DATAPLANE_ERROR "DataPlaneError"
/* Synced */
#define SK_REASON_RECONCILED "Reconciled"
#define SK_REASON_PAUSED_ANNOTATION "ReconcilePaused"
#define SK_REASON_AWAITING_CREATE "AwaitingCreate"
#define SK_REASON_OBSERVE_FAILED "ObserveFailed"
#define SK_REASON_DELETION_HELD "DeletionHeld" /* deletion waits for the paused annotation */
/* Drifted */
#define SK_REASON_NO_DRIFT "NoDrift"
/* Events (besides the drift types and the failure reasons below) */
#define SK_REASON_ENV_ASSERTED "EnvAsserted"
#define SK_REASON_CREATED "Created"
#define SK_REASON_FORKED "Forked" /* the first sandbox, forked from spec.source.fork */
#define SK_REASON_FORK_UNSUPPORTED "ForkUnsupported"
#define SK_REASON_RESUMED "Resumed"
#define SK_REASON_WOKEN "Woken" /* resumed for a cause: a connect, the archive, ... */
#define SK_REASON_PAUSED_EVENT "Paused"
#define SK_REASON_DUPLICATE_DELETED "DuplicateDeleted"
#define SK_REASON_REPLACED "Replaced"
#define SK_REASON_ORPHAN_DELETED "OrphanDeleted"
#define SK_REASON_SANDBOX_DELETED "SandboxDeleted"
#define SK_REASON_FINALIZER_REMOVED "FinalizerRemoved"
/* spec.storage.volume: mounted into a new sandbox (first time or another
 * volume), the provider has no volumes, deleted with the space */
#define SK_REASON_VOLUME_MOUNTED "VolumeMounted"
#define SK_REASON_VOLUME_UNSUPPORTED "VolumeUnsupported"
#define SK_REASON_VOLUME_DELETED "VolumeDeleted"
/* Capacity (providers[].capacity): an awake space paused to free a slot
 * (event), and a create waiting for one (Ready False). */
#define SK_REASON_EVICTED "Evicted"
#define SK_REASON_WAITING_FOR_CAPACITY "WaitingForCapacity" /* also the archive's wake */
#define SK_REASON_AWAKE "Awake" /* Archived False: in use again, nothing archived */
/* lifecycle.busy: the Busy condition (present once a space was kept awake
 * as busy) and its events */
#define SK_REASON_PROCESSES_RUNNING "ProcessesRunning"
#define SK_REASON_KEPT_AWAKE "KeptAwake" /* event: deadline renewed for running processes */
#define SK_REASON_NO_PROCESSES "NoProcesses"
#define SK_REASON_MAX_BUSY "MaxBusyReached"
/* Warning event: the provider's deadline is not the one spacekeeper set */
#define SK_REASON_DEADLINE_OVERRIDDEN "DeadlineOverridden"
/* Failures of an action (Synced=False, a Warning event): sk_failure_reason. */
#define SK_REASON_MARKER_WRITE_FAILED "MarkerWriteFailed"
#define SK_REASON_ARCHIVE_FAILED "ArchiveFailed"
#define SK_REASON_RESTORE_FAILED "RestoreFailed"
#define SK_REASON_ARCHIVE_PURGE_FAILED "ArchivePurgeFailed"
#define SK_REASON_CREATE_FAILED "CreateFailed"
#define SK_REASON_RESUME_FAILED "ResumeFailed"
#define SK_REASON_PAUSE_FAILED "PauseFailed"
#define SK_REASON_DELETE_FAILED "DeleteFailed"
#define SK_REASON_SET_TIMEOUT_FAILED "SetTimeoutFailed"
#define SK_REASON_INIT_ENV_FAILED "InitEnvFailed"
#define SK_REASON_NETWORK_FAILED "NetworkUpdateFailed"
#define SK_REASON_NETWORK_UPDATED "NetworkUpdated"
#define SK_REASON_NETWORK_APPLIED "Applied"
#define SK_REASON_STATUS_WRITE_FAILED "StatusWriteFailed"
#define SK_REASON_FINALIZER_FAILED "FinalizerRemovalFailed"
#define SK_REASON_EVENT_FAILED "EventFailed"
#define SK_REASON_NO_PROVIDER "NoProvider"
#define SK_REASON_ARCHIVE_PURGED "ArchivePurged"
/* The archive (status.archive; phase Archived, Ready True) */
#define SK_REASON_ARCHIVED "Archived"
#define SK_REASON_ARCHIVING "Archiving" /* event: the archive of an asleep space starts */
#define SK_REASON_RESTORED "Restored"
#define SK_REASON_RESTORING "Restoring"
#define SK_REASON_ARCHIVED_SANDBOX_DELETED "ArchivedSandboxDeleted"
#define SK_REASON_ARCHIVE_PRUNED "ArchivePruned" /* older generations pruned after a restore */
#define SK_REASON_SNAPSHOT_DELETED "SnapshotDeleted" /* event: a snapshot archive's, restored */
#define SK_REASON_SNAPSHOT_DELETE_FAILED "SnapshotDeleteFailed"
#define SK_REASON_SNAPSHOT_TAKEN "SnapshotTaken" /* event: spec.snapshots.schedule's */
#define SK_REASON_SNAPSHOT_FAILED "SnapshotFailed"
/* WorkspaceIntact (the workspace marker; drift WorkspaceLost) */
#define SK_REASON_RESTORED_OLDER "RestoredFromOlderArchive"
#define SK_REASON_MARKER_WRITTEN "MarkerWritten"
#define SK_REASON_MARKER_FOUND "MarkerFound"
#define SK_REASON_MARKER_UNREADABLE "MarkerUnreadable"
#define SK_REASON_WORKSPACE_LOST "WorkspaceLost"
#define SK_REASON_LOSS_ACKNOWLEDGED "LossAcknowledged"
/* Migration (status.migration; condition Migrated and events) */
#define SK_REASON_MIGRATION_PENDING "MigrationPending"
#define SK_REASON_MIGRATING "Migrating"
#define SK_REASON_MIGRATION_TARGET_CREATED "MigrationTargetCreated"
#define SK_REASON_MIGRATION_COPIED "MigrationCopied"
#define SK_REASON_MIGRATION_VERIFIED "MigrationVerified"
#define SK_REASON_MIGRATION_SWITCHED "MigrationSwitched"
#define SK_REASON_MIGRATION_SOURCE_PAUSED "MigrationSourcePaused"
#define SK_REASON_MIGRATION_DONE "MigrationDone"
#define SK_REASON_MIGRATION_ABORTED "MigrationAborted"
/* What started a migration (status.migration.trigger) */
#define SK_TRIGGER_PROVIDER "ProviderChanged"
#define SK_TRIGGER_TEMPLATE "TemplateChanged"
#define SK_TRIGGER_NETWORK "NetworkChanged"
#define SK_TRIGGER_ROLLOUT "RolloutRestart"
#define SK_TRIGGER_RESTORE "RestoreSnapshot" /* a rollout with restoreFrom */

/* ---- declared here for this package and its tests (no other package
 * uses them; the rest of each section: reconcile.h) ---- */

/* ---- observed state ---- */

void sk_observed_init(sk_observed *o);
/* Adds a copy of sb (replacing one with the same id). */
void sk_observed_add(sk_observed *o, const sk_sandbox *sb);
void sk_observed_add_probe(sk_observed *o, const char *id, bool made, sk_health h, int http_status,
        int64_t when_ms, int error_code);

/* Decides sk_look for us's bound keeper: listed is its entry in the list
 * (NULL: not listed), known what the controller knows (may be NULL). The
 * controller's own look wins over an older list (a renewal moves no
 * lastReconcileTime when nothing else changed: the list's deadline is the
 * old one). Doubt asks: a look older than probe_fresh_ms or than the last
 * provider change (status.lastReconcileTime), of another sandbox, that
 * found it neither running nor paused, or a list newer than the look that
 * lacks it; a keeper near its deadline whose renewal is wanted without a
 * waiting connect. */
sk_look sk_plan_look(const sk_userspace *us, const sk_sandbox *listed, const sk_list_view *list,
        const sk_keeper_known *known, int64_t activity_ms, int64_t now_ms,
        const sk_plan_options *opts);
/* A list entry of the sandbox this controller killed (known->killed_id)
 * after that list was made: stale, left out of the observation (planned
 * on, it would be killed again as a duplicate, and answer 404). */
bool sk_plan_listed_killed(
        const sk_sandbox *listed, const sk_list_view *list, const sk_keeper_known *known);
/* Whether a running keeper whose probe failed is confirmed by a GET (it
 * may have been paused or killed since the list, then it is resumed or
 * re-created, not replaced): yes, except when a user's report asks for
 * its replacement now under remediation Replace and nothing holds the
 * space. Then the report is evidence enough, and the kill that follows
 * answers the same question (a 404: it was gone). */
bool sk_plan_confirm_unreachable(const sk_userspace *us, const sk_keeper_known *known);
/* How long before a sleeping space's deadline it is renewed when there was
 * activity since: a quarter of the idle timeout, at least sleep_margin_ms
 * + 1 s, at most a minute (and at most half the timeout). */
int64_t sk_plan_renew_window(int64_t ttl_ms, const sk_plan_options *opts);

/* The sandbox metadata value for a string: characters outside [A-Za-z0-9._-]
 * become '-', at most 256 bytes. Caller frees. */
char *sk_reconcile_meta_value(const char *s);
/* The create request of a sandbox for us, from its spec: the one builder of
 * the planner's CREATE and of a migration's target. Adds the metadata of
 * sk_reconcile_sandbox_metadata to meta (the caller's); req borrows meta and
 * the strings and env of us. */
void sk_reconcile_create_request(const sk_userspace *us, const sk_plan_options *opts,
        sk_kvlist *meta, sk_create_request *req);

/* ---- the workspace marker (plan_workspace.c, marker.c) ----
 * A small file in the first workspace path, written through envd at create
 * and whenever a loss was found, read back after every resume: missing or
 * another space's means the provider resumed the sandbox without its files
 * (WorkspaceIntact False, drift WorkspaceLost, workspaceLost in the connect
 * answer) instead of a silent loss. */
typedef enum sk_marker_check {
	SK_MARKER_UNCHECKED, /* not read (not due, or the backend has no files) */
	SK_MARKER_FOUND, /* this space's marker */
	SK_MARKER_MISSING, /* no marker file */
	SK_MARKER_FOREIGN, /* another space's, or not a marker */
	SK_MARKER_UNREADABLE, /* the read failed: proves nothing */
} sk_marker_check;

typedef enum sk_marker_step {
	SK_MARKER_STEP_NONE,
	SK_MARKER_STEP_WRITE, /* after a create, or none written yet */
	SK_MARKER_STEP_CHECK, /* after a resume (or an unreadable one): read it back */
} sk_marker_step;

/* What the marker round of us's running, healthy keeper does (pure). */
sk_marker_step sk_plan_marker_step(const sk_userspace *us, const sk_plan_options *opts);

/* ---- the archive: a workspace in object storage (archive.c) ----
 * PREFIX/files/<path> per regular file, PREFIX/manifest.json written last
 * (path, type, mode, size, SHA-256, symlink target). Moved by the copy
 * engine (sk_workspace_copy, sk_workspace_verify): the archive is a
 * provider with files only. No manifest: incomplete, never restored from. */
typedef struct sk_archive sk_archive;

/* An archive under prefix (e.g. PREFIX/USERID/GENERATION) in s3 (borrowed). */
sk_archive *sk_archive_new(sk_s3 *s3, const char *prefix);
void sk_archive_free(sk_archive *a);
size_t sk_archive_entries(const sk_archive *a);
/* Reads the manifest: SK_ENOTFOUND when there is none (incomplete). */
int sk_archive_load(sk_archive *a, sk_error *err);
/* sb's workspace into a: copy, the manifest last, reloaded as stored, then
 * verified against the sandbox hash for hash. 0 only when all of it held. */
int sk_archive_workspace(sk_provider *p, const sk_sandbox *sb, const sk_copy_options *opt,
        sk_archive *a, const char *space, int64_t now_ms, sk_copy_report *rep, sk_error *err);
/* a's workspace into sb: load, copy, verify (every object also against the
 * manifest's SHA-256). */
int sk_archive_restore(sk_archive *a, sk_provider *p, const sk_sandbox *sb,
        const sk_copy_options *opt, sk_copy_report *rep, sk_error *err);

/* ---- the archive in the plan (plan_archive.c, pure) ---- */

/* When the Idle space us (asleep since since_ms) is due to be archived:
 * since + archiveAfter, or before its provider's pausedRetention deletes
 * the paused sandbox (since + retention - sk_archive_margin), whichever
 * comes first; 0 when never (no archive configured, or neither set). */
int64_t sk_archive_due(const sk_userspace *us, int64_t since_ms, const sk_plan_options *opts);
/* How long before pausedRetention a space is archived: a quarter of it, at
 * most an hour. */
int64_t sk_archive_margin(int64_t retention_ms);
/* How long the next archive attempt waits after `failures` failed in a
 * row: 1m, doubling, at most 1h; 0 without failures. */
int64_t sk_archive_backoff(int64_t failures);
/* When a failed restore of the Archived space us may be tried again (its
 * back-off's end); 0 when none failed. */
int64_t sk_restore_retry_at(const sk_userspace *us);
/* When an archive whose wake the capacity gate refused asks again, having
 * waited waited_ms for a slot: as long again (1 s at least, 30 s at most),
 * besides the kick of a slot freeing. */
int64_t sk_archive_slot_retry(int64_t waited_ms);
/* The status an ARCHIVE action records once the archive is verified: a
 * copy of st with status.archive (generation, key, counts, the archived
 * sandbox), phase Archived, nothing bound, Ready True (Archived). */
void sk_archive_record(sk_userspace_status *st, const char *bucket, const char *key,
        int64_t generation, int64_t files, int64_t bytes, int64_t now_ms, int64_t observed_gen);
/* The key prefix of an archive generation: PREFIX/USERID/GENERATION. */
char *sk_archive_key(const char *prefix, const char *user_id, int64_t generation);

/* ---- the retention of a user's archives (archive_prune.c) ---- */
typedef struct sk_archive_prune_report {
	size_t generations; /* found under BASE/ */
	size_t complete; /* of them with a manifest */
	size_t deleted; /* generations deleted */
	uint64_t objects_deleted;
	char anchor[128]; /* the newest complete generation, "" when none */
} sk_archive_prune_report;

/* Orders generation names: numerically when both are digits only (2 < 10),
 * else as strings. */
int sk_archive_generation_cmp(const char *a, const char *b);
/*
 * Prunes the archives of one user. base is PREFIX/USERID (a trailing '/'
 * is ignored); each generation is an archive at BASE/GEN/ (sk_archive_new's
 * prefix), complete when BASE/GEN/manifest.json exists.
 *
 * Kept: the newest complete generation (the anchor); the keep complete
 * generations just older than it (archive.keepGenerations, default 1);
 * restored, the generation last restored successfully (NULL: none), when
 * it is complete; every generation newer than the anchor (an archive in
 * progress, incomplete). Deleted: every other generation older than the
 * anchor, incomplete ones included. With no complete generation nothing is
 * deleted, so a prune never deletes the only complete archive, nor the
 * complete predecessor of a newer incomplete one.
 *
 * Each generation goes manifest first, then its objects: a prune cut short
 * (error, crash) leaves it incomplete, never restored from, and the next
 * prune finishes it. Idempotent; safe to call after every successful
 * archive or restore (not during an archive of the same user into a
 * generation older than the anchor: generations only grow). Returns 0, or
 * the S3 error (SK_EUNAUTHORIZED, SK_ENOTFOUND for a missing bucket, a
 * transient one) with rep counting what was deleted before it.
 */
int sk_archive_prune(sk_s3 *s3, const char *base, const char *restored, int keep,
        sk_archive_prune_report *rep, sk_error *err);

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

/* A space that may sleep (idleTimeout > 0) whose keeper was probed healthy
 * (DataPlaneHealthy True) and that saw no activity (activity_ms,
 * status.lastActivityTime, or the keeper turning healthy after a create or
 * resume) within the last idleTimeout: its keeper's data plane is not
 * probed. A probe is traffic: on a provider whose idle window slides with
 * data-plane requests (Cube) it would keep the sandbox awake forever. It is
 * probed again when its user comes back (a connect is activity). */
bool sk_plan_quiet(const sk_userspace *us, int64_t activity_ms, int64_t now_ms);

/* lifecycle.busy: whether to ask the running keeper k's envd for its
 * processes now. Only for a space that may sleep with busy Processes, when
 * k's deadline is within its second half (a renewal may be due), not so
 * close that it may be asleep (data-plane traffic could wake it), with no
 * activity that renews it anyway, and within maxBusy of the last activity.
 * activity_ms: the caller's memory (status.lastActivityTime counts too). */
bool sk_plan_busy_check(const sk_userspace *us, const sk_sandbox *k, int64_t activity_ms,
        int64_t now_ms, const sk_plan_options *opts);

/* ---- migration: a move to another provider or template (pure; migrate_plan.c) ----
 *
 * Started by the regular plan (status.migration Pending) when the binding's
 * provider (status.provider) is not spec.provider, when spec.template differs
 * from the keeper's and spec.updateStrategy is Migrate, or when the
 * spacekeeper.dev/restartedAt annotation is newer than the last migration's
 * start. Then, one step per round, each recorded before it runs so a
 * restarted controller resumes it: create the target (the Creating mark
 * first; a target found by its marker is adopted) -> copy -> verify ->
 * switch the binding (one compare-and-swap write) -> retire the source
 * (paused, deleted after keepSourceFor unless sourcePolicy Retain). Any
 * failure before the switch aborts: the reason is written first, then the
 * target is killed, then phase Aborted; the binding never moves. */

typedef enum sk_migration_step {
	SK_MSTEP_NONE, /* nothing to do now */
	SK_MSTEP_CREATE_TARGET,
	SK_MSTEP_COPY,
	SK_MSTEP_VERIFY,
	SK_MSTEP_SWITCH,
	SK_MSTEP_PAUSE_SOURCE,
	SK_MSTEP_RETIRE_SOURCE, /* kill it (sourcePolicy Delete) or keep it, then Done */
	SK_MSTEP_ABORT, /* kill the target (when there is one), then Aborted */
} sk_migration_step;

/* What a migration round saw at the two providers. */
typedef struct sk_migration_observed {
	sk_lookup source; /* GET of source.sandboxID at source.provider */
	sk_sandbox source_sb;
	sk_lookup target; /* GET of target.sandboxID, or a list for the marker */
	sk_sandbox target_sb;
	int64_t target_lookup_ms; /* when the target lookup started */
	sk_error error; /* of a failed lookup */
	bool providers_known; /* both provider entries exist */
	int64_t activity_ms; /* the controller's memory of the user's last activity */
} sk_migration_observed;

void sk_migration_observed_init(sk_migration_observed *o);
void sk_migration_observed_dispose(sk_migration_observed *o);

typedef struct sk_migration_plan {
	sk_migration_step step;
	/* status.migration to write before the step runs (the mark) */
	sk_migration_status next;
	bool normal; /* run the regular round too (Pending and waiting, Retiring) */
	int64_t requeue_after_ms;
	char *abort_reason; /* ABORT: why */
} sk_migration_plan;

/* The trigger of a new migration for a space whose keeper has the given
 * template (and alias; may be NULL), or NULL when none. An Aborted attempt
 * at the same provider and template is not retried until a newer rollout. */
const char *sk_migration_trigger(
        const sk_userspace *us, const char *keeper_template, const char *keeper_alias);
/* The rollout said --now: rolloutNow equals restartedAt. */
bool sk_migration_now(const sk_userspace *us);
/* The restoreFrom annotation's snapshot ID, NULL when none (or empty). */
const char *sk_migration_restore_from(const sk_userspace *us);
/* A restore from a snapshot (trigger RestoreSnapshot): the target is created
 * from target.template (the snapshot's ID) at the bound provider, probed
 * healthy instead of copied and verified, then bound; the source retires. */
bool sk_migration_is_restore(const sk_migration_status *m);
/* sb was started from a snapshot (metadata restored_from): its template is
 * the snapshot's, not a drift from spec.template. */
bool sk_sandbox_restored(const sk_sandbox *sb);
/* The next step of us's active migration. */
void sk_plan_migration(const sk_userspace *us, const sk_migration_observed *ob, int64_t now_ms,
        const sk_plan_options *opts, sk_migration_plan *out);
void sk_migration_plan_dispose(sk_migration_plan *p);
const char *sk_migration_step_name(sk_migration_step s); /* "create-target", ... */

/* ---- execute ---- */

/* Runs plan for us (as read from the store: its resourceVersion is the CAS
 * token). *updated (may be NULL) gets the object as last written (NULL when
 * it was removed). Returns 0, or the failure's code (transient: back off). */
int sk_execute(const sk_reconcile_env *env, const sk_userspace *us, const sk_plan_result *plan,
        sk_userspace **updated, sk_error *err);

enum { SK_C_READY, SK_C_SYNCED, SK_C_DATAPLANE, SK_C_DRIFTED, SK_C_COUNT };

typedef struct sk_cond_decision {
	const char *status; /* NULL: not decided (Unknown) */
	const char *reason;
	char *message; /* owned */
} sk_cond_decision;

typedef struct sk_pctx {
	const sk_userspace *us;
	const sk_userspace_status *prev;
	const sk_observed *ob;
	const sk_plan_options *o;
	int64_t now;
	sk_plan_result *r;
	bool hold; /* spacekeeper.dev/paused: report only */
	int64_t requeue; /* 0: resync */
	sk_cond_decision cond[SK_C_COUNT];
	/* The Busy condition (lifecycle.busy): status NULL keeps the previous
	 * one as it is (or none). */
	sk_cond_decision busy;
	/* WorkspaceIntact, the same way (plan_workspace.c) */
	sk_cond_decision workspace;
	/* The Archived condition, the same way (plan_archive.c) */
	sk_cond_decision archived;
	/* The NetworkPolicy condition (plan_network.c): NULL status keeps the
	 * previous one. */
	sk_cond_decision network;
} sk_pctx;

sk_action *sk_plan_push(sk_pctx *c, sk_action_type type, const char *sandbox_id);
void sk_plan_event(sk_pctx *c, const char *type, const char *reason, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
void sk_plan_cond(sk_pctx *c, int which, const char *status, const char *reason, const char *fmt,
        ...) __attribute__((format(printf, 5, 6)));
/* Adds drift (since kept from the previous status for the same type+sandbox);
 * returns its since. An event is planned when the drift is new. */
int64_t sk_plan_drift(sk_pctx *c, const char *type, const char *sandbox_id, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
/* The previous status's drift of that type and sandbox, or NULL. */
const sk_drift *sk_plan_prev_drift(const sk_pctx *c, const char *type, const char *sandbox_id);
const sk_condition *sk_plan_prev_cond(const sk_pctx *c, const char *type);
void sk_plan_requeue(sk_pctx *c, int64_t ms);
void sk_plan_wait(sk_pctx *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A condition outside the fixed set (Busy, NetworkPolicy): as decided
 * this round (d->status set), else the previous one kept; d's message is
 * taken. */
void sk_plan_finish_kept(sk_pctx *c, const char *type, sk_cond_decision *d);
/* Builds next.conditions from the decisions (transition times kept when the
 * status did not change) and sets the requeue delay. */
void sk_plan_finish(sk_pctx *c);
void sk_plan_set_binding(sk_pctx *c, const char *id);

bool sk_str_eq(const char *a, const char *b);
/* A renewal that would move the deadline by less than this is not made. */
#define SK_RENEW_SLACK_MS 1000
/* plan_deadline.c: a running keeper's deadline beyond activity. */
/* Busy (processes run, within maxBusy): true with the renewal's *timeout. */
bool sk_plan_busy(sk_pctx *c, const sk_sandbox *k, int64_t *timeout);
/* A deadline someone else set: one event, true with the *timeout putting ours back. */
bool sk_plan_overridden(sk_pctx *c, const sk_sandbox *k, int64_t *timeout);
/* The previous status's Busy condition is True. */
bool sk_plan_was_busy(const sk_pctx *c);
/* Decides the Busy condition of the next status. */
void sk_plan_busy_cond(sk_pctx *c, const char *status, const char *reason, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
/* plan_capacity.c: the running keeper k paused to free a slot (observed.evict),
 * unless busy or just connected: true when planned. */
bool sk_plan_evict(sk_pctx *c, const sk_sandbox *k);
/* plan_usage.c: status.usage of the next status. */
void sk_plan_usage(sk_pctx *c);
/* plan_capacity.c: a create waits for a slot (observed.capacity_wait). */
void sk_plan_capacity_wait(sk_pctx *c);
/* plan_workspace.c: the marker round of the running, healthy keeper k
 * (write it, or judge what observe read back), the loss of a bound sandbox
 * that is gone, and, every round, the WorkspaceLost drift while the
 * workspace is known lost (until acknowledged). */
void sk_plan_workspace(sk_pctx *c, const sk_sandbox *k);
void sk_plan_workspace_gone(sk_pctx *c, const char *gone_id);
/* k gets the archive's files this round: the marker is written after them. */
void sk_plan_workspace_restored(sk_pctx *c, const sk_sandbox *k);
/* gone_id vanished and its workspace comes back from an archive older than
 * the last activity: the changes since are lost (reported like a loss). */
void sk_plan_workspace_stale(sk_pctx *c, const char *gone_id, const char *detail);
void sk_plan_workspace_finish(sk_pctx *c);
/* plan_archive.c: the archive in the plan (see there). */
bool sk_plan_archive_pending(const sk_pctx *c);
bool sk_plan_archived_sandbox(const sk_pctx *c, const char *id);
void sk_plan_archive_cleanup(sk_pctx *c);
/* The Idle keeper k: archived when due (or an archive under way is redone). */
void sk_plan_archive_idle(sk_pctx *c, const sk_sandbox *k);
/* The running keeper k woken by an archive that did not finish: true when
 * the archive is redone (false: the user came back, the intent dropped). */
bool sk_plan_archive_running(sk_pctx *c, const sk_sandbox *k);
/* No sandbox, the files in the archive, no connect waiting: phase Archived. */
void sk_plan_archived(sk_pctx *c);
/* Awake again with the files in the sandbox: a present Archived condition
 * turns False (Awake). */
void sk_plan_archive_awake(sk_pctx *c);
/* The bound sandbox gone_id is gone and an archive exists: the files are
 * restored from it at the next connect (true), not reported lost. */
bool sk_plan_archive_gone(sk_pctx *c, const char *gone_id);
/* The space is deleted (deletionPolicy Delete): PURGE_ARCHIVE when it has
 * archives, DELETE_SNAPSHOT when a snapshot archive is pending. */
void sk_plan_archive_purge(sk_pctx *c);
/* plan_snapshot.c: an archive kept as a provider snapshot (see there). */
/* Whether an archive by method m can be made: object storage configured
 * (opts.archive) or the provider keeps snapshots (opts.snapshots). */
bool sk_archive_method_ready(sk_archive_method m, const sk_plan_options *opts);
/* What an ARCHIVE by snapshot records: sk_archive_record's status, method
 * Snapshot, the snapshot's ID, no bucket or key. */
void sk_archive_record_snapshot(sk_userspace_status *st, const char *snapshot_id,
        int64_t generation, int64_t now_ms, int64_t observed_gen);
/* The snapshot a pending archive's next sandbox starts from, or NULL. */
const char *sk_plan_archive_snapshot(const sk_userspace_status *st);
/* The keeper k started from the pending snapshot answers its probe:
 * Restored (nothing to copy); the snapshot is deleted in a later round. */
void sk_plan_snapshot_restored(sk_pctx *c, const sk_sandbox *k);
/* A restored snapshot archive whose snapshot is still there: DELETE_SNAPSHOT. */
void sk_plan_snapshot_cleanup(sk_pctx *c);
/* The space is deleted: its pending snapshot goes (DELETE_SNAPSHOT). */
void sk_plan_snapshot_purge(sk_pctx *c);
/* spec.snapshots on the keeper k: a snapshot when the schedule is due (a
 * sleeping keeper changed since the last one is woken for it and paused
 * again), the oldest beyond keep deleted. */
void sk_plan_snapshots(sk_pctx *c, const sk_sandbox *k);
/* The observed sandbox with that ID, not gone; NULL when none. */
const sk_sandbox *sk_plan_find(const sk_observed *ob, const char *id);
/* plan_delete.c: the plan of a UserSpace with a deletionTimestamp. */
void sk_plan_delete(sk_pctx *c);
/* RESTORE into the running, healthy keeper k (status.archive Restored once done). */
void sk_plan_restore(sk_pctx *c, const sk_sandbox *k);
/* The pending restore failed before: Ready and Synced False (RestoreFailed). */
void sk_plan_restore_failed(sk_pctx *c);
/* The same while inside the failed restore's back-off: true, not retried
 * before its end (requeued then). */
bool sk_plan_restore_held(sk_pctx *c);
/* execute_archive.c: the ARCHIVE action (the archive recorded into st
 * when verified) and the RESTORE action. */
int sk_execute_archive(const sk_reconcile_env *env, sk_provider *p, const sk_sandbox *sb,
        const sk_userspace *us, int64_t now_ms, sk_userspace_status *st, sk_copy_report *rep,
        sk_error *err);
int sk_execute_purge(const sk_reconcile_env *env, const sk_userspace *us,
        sk_archive_prune_report *rep, sk_error *err);
/* execute_snapshot.c: the ARCHIVE action by snapshot (recorded into st once
 * the provider answered with the snapshot's ID). */
int sk_execute_snapshot_archive(sk_provider *p, const char *sandbox_id, const sk_userspace *us,
        int64_t now_ms, sk_userspace_status *st, sk_error *err);
int sk_execute_restore(const sk_reconcile_env *env, sk_provider *p, const sk_sandbox *sb,
        const sk_userspace *us, sk_copy_report *rep, char *prune_note, size_t note_len,
        sk_error *err);

/* CAS write of st over *cur (sk_store_write_status); on success *cur is
 * replaced by the stored object. */
int sk_reconcile_write_status(
        sk_store *store, sk_userspace **cur, const sk_userspace_status *st, sk_error *err);

/* plan_network.c: spec.network against the keeper's policy. The trigger
 * of a migration (updateStrategy Migrate, a provider without live update),
 * else NULL; sk_plan_network applies it live (SET_NETWORK) or writes the
 * difference into b (SpecMismatch, report only) and decides the
 * NetworkPolicy condition (c->network). */
const char *sk_plan_network_trigger(sk_pctx *c, const sk_sandbox *k);
void sk_plan_network(sk_pctx *c, const sk_sandbox *k, sk_buf *b);

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

/* ---- observe (reconcile.h: sk_observe, sk_observed) ---- */

const sk_probe *sk_observed_probe(const sk_observed *o, const char *id);

/* sk_observe with what the caller knows of the keeper (may be NULL): its
 * token reaches the keeper's envd calls, a running keeper whose envd
 * version is not known is read once (GET), and the deadline goes into out. */
int sk_observe_known(sk_provider *p, const sk_userspace *us, const sk_list_view *list,
        const sk_plan_options *opts, int64_t activity_ms, const sk_keeper_known *known,
        sk_observed *out, sk_error *err);

/* The metadata every created sandbox carries (spec.metadata + the managed keys). */
void sk_reconcile_sandbox_metadata(const sk_userspace *us, sk_kvlist *out);

/* ---- the workspace marker: its file and I/O (marker.c) ---- */
#define SK_MARKER_FILE ".spacekeeper/workspace.json"

/* The marker's absolute path in us's sandboxes (caller frees). */
char *sk_marker_path(const sk_userspace *us);
/* Writes us's marker (space, uid, generation, sandbox, time) into sb. */
int sk_marker_write(sk_provider *p, const sk_sandbox *sb, const sk_userspace *us, int64_t now_ms,
        sk_error *err);
/* Reads sb's marker back and compares it with us; detail says what differs. */
sk_marker_check sk_marker_read(
        sk_provider *p, const sk_sandbox *sb, const sk_userspace *us, char *detail, size_t len);

/* ---- the archive: its engine view, manifest and purge (archive.c, archive_prune.c) ---- */

/* The engine's view of an archive: a provider and the sandbox to name it by. */
sk_provider *sk_archive_provider(sk_archive *a);
const sk_sandbox *sk_archive_sandbox(sk_archive *a);

/* Writes the manifest of what was copied into the archive. */
int sk_archive_commit(sk_archive *a, const char *space, int64_t now_ms, sk_error *err);

/* Every generation under BASE/ deleted, each manifest first (a UserSpace
 * deleted with deletionPolicy Delete: its archives go with it). Idempotent;
 * a purge cut short is finished by the next one. */
int sk_archive_purge(sk_s3 *s3, const char *base, sk_archive_prune_report *rep, sk_error *err);
/* PREFIX/USERID: the base of a user's archive generations. */
char *sk_archive_base(const char *prefix, const char *user_id);

/* plan_usage.c: the usage count (status.usage) is written at most this
 * often when nothing else changes. */
#define SK_USAGE_FOLD_MS (10 * 60 * 1000)

/* migrate.c: the migration round of us (status.migration active): observe
 * the source and target at their providers, plan the step, write its mark,
 * run it. *normal: the regular round should run after it (on *updated, the
 * object as last written, owned by the caller). Returns 0 or the failure's
 * code. */
int sk_migrate_round(const sk_reconcile_env *env, const sk_userspace *us, bool *normal,
        int64_t *requeue_after_ms, sk_userspace **updated, sk_error *err);

#endif
