/*
 * reconcile_int: the reasons this package writes into conditions and
 * events, and sk_str_eq (private to reconcile).
 */
#ifndef SK_RECONCILE_INT_H
#define SK_RECONCILE_INT_H

#include <stdbool.h>

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

/* Both NULL, or both the same string. */
bool sk_str_eq(const char *a, const char *b);

#endif
