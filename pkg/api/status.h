/*
 * api/status: a UserSpace's status: phase, conditions, drift, migration,
 * usage, archive and storage.
 */
#ifndef SK_API_STATUS_H
#define SK_API_STATUS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "migration.h"
#include "network.h"
#include "storage.h"
#include "strlist.h"

/* spec.lifecycle.archive.method: what deep sleep keeps. ObjectStorage: the
 * files, copied through the data plane into the ControllerConfig's archive;
 * Snapshot: a persistent snapshot at the provider (its memory and processes
 * too where the provider keeps them), taken without copying a file. */
typedef enum sk_archive_method { SK_ARCHIVE_OBJECT_STORAGE, SK_ARCHIVE_SNAPSHOT } sk_archive_method;

typedef enum sk_phase {
	SK_PHASE_NONE, /* no status yet */
	SK_PHASE_PENDING,
	SK_PHASE_CREATING,
	SK_PHASE_RUNNING,
	SK_PHASE_RESUMING,
	SK_PHASE_PAUSED,
	SK_PHASE_DEGRADED,
	SK_PHASE_DELETING,
	SK_PHASE_ERROR,
	SK_PHASE_IDLE, /* asleep after lifecycle.idleTimeout; a connect wakes it */
	SK_PHASE_MIGRATING, /* moving to another provider or template (status.migration) */
	SK_PHASE_ARCHIVED, /* no sandbox: the workspace is in the archive; a connect restores it */
	SK_PHASE_COUNT
} sk_phase;

#define SK_COND_READY "Ready"
#define SK_COND_SYNCED "Synced"
#define SK_COND_DATAPLANE "DataPlaneHealthy"
#define SK_COND_DRIFTED "Drifted"
#define SK_COND_MIGRATED "Migrated" /* present once a migration was recorded */
#define SK_COND_BUSY "Busy" /* present once running processes kept the space awake */
/* present once the workspace marker was written: False when a resume found
 * it missing or another space's, or the bound sandbox vanished (files lost) */
#define SK_COND_WORKSPACE "WorkspaceIntact"
/* present once spec.network was applied: "sandbox ID: POLICY" */
#define SK_COND_NETWORK "NetworkPolicy"
/* present once an archive was due: True when the workspace is archived,
 * False WaitingForCapacity while its wake waits for a slot, False Awake
 * once the space is in use again */
#define SK_COND_ARCHIVED "Archived"

typedef struct sk_condition {
	char *type;
	char *status; /* "True" | "False" | "Unknown" */
	char *reason; /* CamelCase */
	char *message;
	int64_t last_transition_ms;
	int64_t observed_generation;
} sk_condition;

#define SK_DRIFT_DATAPLANE "DataPlaneUnreachable"
#define SK_DRIFT_DUPLICATE "Duplicate"
#define SK_DRIFT_STATE "StateMismatch"
#define SK_DRIFT_SPEC "SpecMismatch"
#define SK_DRIFT_MISSING "Missing"
#define SK_DRIFT_ORPHAN "Orphan"
#define SK_DRIFT_WORKSPACE_LOST "WorkspaceLost"
/* Clears WorkspaceIntact False: the time (RFC 3339) the loss was seen to; a
 * value at or after the condition's lastTransitionTime sets it True again. */
#define SK_ANNOTATION_LOSS_ACK "spacekeeper.dev/workspaceLossAcknowledged"

typedef struct sk_drift {
	char *type;
	char *sandbox_id; /* may be NULL */
	int64_t since_ms;
	char *detail;
} sk_drift;

/* status.usage: what the space used, from the phases its reconciles saw
 * (pkg/reconcile/plan_usage.c). Seconds are counted up to updated_ms;
 * since_ms 0: not counted yet. */
typedef struct sk_usage {
	int64_t running_s; /* runningSeconds: a sandbox ran (Creating..Running) */
	int64_t paused_s; /* pausedSeconds: it slept (Idle, Paused) */
	int64_t wakes; /* resumes */
	int64_t creates;
	int64_t since_ms; /* since */
	int64_t updated_ms; /* lastUpdateTime */
} sk_usage;

/* status.archive: the space's newest archive. state ARCHIVED:
 * the files are there and in no sandbox (phase Archived, or a restore
 * under way); RESTORED: copied back into a sandbox at restore_ms. */
typedef enum sk_archive_state {
	SK_ARCHIVE_NONE,
	SK_ARCHIVE_ARCHIVED,
	SK_ARCHIVE_RESTORED,
} sk_archive_state;

typedef struct sk_archive_status {
	sk_archive_state state; /* state: "Archived" | "Restored" */
	char *bucket; /* bucket */
	char *key; /* key: PREFIX/USERID/GENERATION, the objects' prefix */
	int64_t generation; /* generation: 1, 2, ... */
	int64_t time_ms; /* time: when its manifest was verified */
	int64_t files; /* files */
	int64_t bytes; /* bytes */
	char *sandbox_id; /* sandboxID: the sandbox archived (deleted once recorded) */
	sk_archive_method method; /* method: "ObjectStorage" | "Snapshot" */
	/* snapshotID: method Snapshot, the provider's snapshot the next sandbox
	 * starts from; cleared once deleted after a restore (bucket and key: NULL) */
	char *snapshot_id;
	int64_t restore_ms; /* restoreTime: the last restore from it, 0 none */
	/* archivingSince: a new archive of the bound sandbox is under way (the
	 * intent, written before it is woken for the copy); 0 none */
	int64_t intent_ms;
	/* failures: archive attempts failed in a row (0 after a success);
	 * lastFailureTime: the last one. The next attempt waits a back-off
	 * (sk_archive_backoff) from it. */
	int64_t failures;
	int64_t failed_ms;
} sk_archive_status;

void sk_archive_status_dispose(sk_archive_status *a);
void sk_archive_status_copy(sk_archive_status *dst, const sk_archive_status *src);
const char *sk_archive_state_name(sk_archive_state s); /* "" for NONE */
const char *sk_archive_method_name(sk_archive_method m); /* "ObjectStorage", "Snapshot" */

/* status.snapshots: the snapshots spec.snapshots.schedule took. */
typedef struct sk_snapshots_status {
	int64_t schedule_ms; /* lastScheduleTime: the last scheduled time handled */
	int64_t last_ms; /* lastSnapshotTime: the last one taken */
	sk_strlist ids; /* snapshotIDs: the ones kept, oldest first */
} sk_snapshots_status;
void sk_snapshots_status_dispose(sk_snapshots_status *s);
void sk_snapshots_status_copy(sk_snapshots_status *dst, const sk_snapshots_status *src);
bool sk_snapshots_status_equal(const sk_snapshots_status *a, const sk_snapshots_status *b);

typedef struct sk_userspace_status {
	sk_phase phase;
	char *sandbox_id; /* the binding; NULL when unbound */
	int64_t observed_generation;
	sk_condition *conditions;
	size_t n_conditions;
	sk_drift *drift;
	size_t n_drift;
	char *message; /* optional human summary */
	int64_t last_reconcile_ms;
	int64_t last_activity_ms; /* the last connect or heartbeat, persisted coarsely; 0 none */
	char *provider; /* the provider entry of the binding; NULL: spec.provider */
	sk_migration_status migration;
	sk_usage usage;
	sk_archive_status archive;
	sk_storage_status storage;
	sk_network_status network;
	sk_snapshots_status snapshots;
} sk_userspace_status;

/* Where a space's files are, one line (spacectl describe, the status page):
 * its sandbox, or the archive's location and time, and the newest archive. */
void sk_archive_where(const sk_userspace_status *st, char *out, size_t len);

void sk_userspace_status_dispose(sk_userspace_status *st);
void sk_userspace_status_copy(sk_userspace_status *dst, const sk_userspace_status *src);
bool sk_userspace_status_equal(const sk_userspace_status *a, const sk_userspace_status *b);
json_t *sk_userspace_status_to_json(const sk_userspace_status *st);

const char *sk_phase_name(sk_phase p); /* "" for SK_PHASE_NONE */
int sk_phase_parse(const char *s, sk_phase *out);

/* ---- the status as a table (status.c) ----
 * One row per member of the status and of each of its parts (a condition,
 * a drift entry, usage, the archive, the storage volume), in the order the
 * JSON form writes them. JSON encode and decode (codec.c), equality, copy
 * and dispose, the store's direct BSON reader (store/codec_read.c) and its
 * packed cache (store/packed.c) walk the rows; test/unit/check_status_table.c
 * checks that every member has a row, fills every row and runs the status
 * through every codec. A new status field is a member and a row. */
typedef enum sk_status_kind {
	SK_STATUS_STR, /* char *; NULL: omitted */
	SK_STATUS_INT, /* int64_t; 0: omitted unless always */
	SK_STATUS_TIME, /* int64_t ms, written RFC 3339; 0: omitted */
	SK_STATUS_ENUM, /* an int-sized C enum written by name; 0 (none): omitted */
	SK_STATUS_ARRAY, /* items (pointer at offset, size_t count at count_offset) of rows */
	SK_STATUS_STRLIST, /* sk_strlist, written as an array of strings; empty: omitted */
	SK_STATUS_OBJECT, /* a struct of rows at offset, written when present() */
	SK_STATUS_MIGRATION, /* sk_migration_status: its own codec (migration.c) */
} sk_status_kind;

typedef struct sk_status_row {
	const char *key; /* the JSON key; NULL ends a table */
	sk_status_kind kind;
	size_t offset;
	bool always; /* INT: written when 0 too */
	const struct sk_status_row *rows; /* ARRAY, OBJECT: the members */
	size_t item_size; /* ARRAY: the size of an item; OBJECT: of the struct */
	size_t count_offset; /* ARRAY: of the count */
	const char *inner; /* OBJECT: held one key deeper ("storage": {"volume": ...}) */
	bool (*present)(const void *part); /* OBJECT: whether it is written */
	const char *(*name)(int value); /* ENUM: the name of a value ("" none) */
	int n_values; /* ENUM: values 0 .. n_values - 1 */
	const char *bad; /* ENUM: the error for a name that is none of them */
} sk_status_row;

/* The rows of sk_userspace_status, and those of its parts. */
extern const sk_status_row sk_status_rows[];
extern const sk_status_row sk_condition_rows[];
extern const sk_status_row sk_drift_rows[];
extern const sk_status_row sk_usage_rows[];
extern const sk_status_row sk_archive_rows[];
extern const sk_status_row sk_storage_volume_rows[];
extern const sk_status_row sk_network_status_rows[];
extern const sk_status_row sk_snapshots_status_rows[];
/* The member a row describes in the struct at obj, as a T *. */
#define SK_STATUS_AT(row, obj, T) ((T *)(void *)((char *)(obj) + (row)->offset))
/* Walks of one table over a struct it describes (an ARRAY row's items, an
 * OBJECT row's struct, a MIGRATION row's status each by their own rows). */
void sk_status_rows_dispose(const sk_status_row *rows, void *obj);
void sk_status_rows_copy(const sk_status_row *rows, void *dst, const void *src);
bool sk_status_rows_equal(const sk_status_row *rows, const void *a, const void *b);

#endif
