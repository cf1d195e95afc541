/*
 * api: the UserSpace v1alpha1 object (README.md, Concepts) and the ControllerConfig.
 *
 * Input path: bytes --libyaml--> sk_doc (jansson value + source positions)
 *             --sk_userspace_validate--> errors with field path and file:line:col
 *             --sk_userspace_decode--> struct sk_userspace (defaults applied).
 * JSON text and documents read back from MongoDB take the same decoder.
 * Output: sk_userspace_to_json (the full object, the shape stored in MongoDB
 * and printed by -o json/yaml), sk_json_to_yaml, and table rows.
 */
#ifndef SK_API_H
#define SK_API_H

#include <jansson.h>

#include "../util/util.h"

#define SK_API_VERSION "spacekeeper.dev/v1alpha1"
#define SK_KIND_USERSPACE "UserSpace"
#define SK_FINALIZER "spacekeeper.dev/cleanup"
#define SK_ANNOTATION_PAUSED "spacekeeper.dev/paused"
/* spacectl rollout restart: the time of the request (RFC 3339); a newer one
 * than the last migration's start moves the space (see status.migration).
 * With --now the same value is written to rolloutNow: no wait for idle. */
#define SK_ANNOTATION_RESTARTED_AT "spacekeeper.dev/restartedAt"
#define SK_ANNOTATION_ROLLOUT_NOW "spacekeeper.dev/rolloutNow"
/* spacectl snapshot restore: the snapshot the space's next sandbox starts
 * from, written with restartedAt and rolloutNow; the migration that request
 * starts records it as status.migration.target.template (acted on once). */
#define SK_ANNOTATION_RESTORE_FROM "spacekeeper.dev/restoreFrom"

/* Sandbox metadata keys that spacekeeper sets and users may not. */
#define SK_META_USER_ID "user_id"
#define SK_META_USERSPACE "userspace"
#define SK_META_USERSPACE_UID "userspace_uid"
#define SK_META_MANAGED_BY "managed_by"
#define SK_MANAGED_BY_VALUE "spacekeeper"
/* On a migration's target until the binding switches to it: the start of
 * that migration (ms, decimal); the duplicate rule leaves such a sandbox alone. */
#define SK_META_MIGRATION "migration_target"
/* The digest of spec.network a sandbox was created with (sk_network_digest),
 * set when the spec has one: what Cube, which reports no policy, has. */
#define SK_META_NETWORK "network_policy"
/* The snapshot a sandbox was started from (spacectl snapshot restore): its
 * template is the snapshot's, which is no drift from spec.template. */
#define SK_META_SNAPSHOT "restored_from"

/* ---- key/value maps (labels, annotations, env, metadata) ---- */

typedef struct sk_kv {
	char *key;
	char *value;
} sk_kv;

typedef struct sk_kvlist {
	sk_kv *items; /* sorted by key */
	size_t len;
} sk_kvlist;

const char *sk_kvlist_get(const sk_kvlist *l, const char *key);
void sk_kvlist_set(sk_kvlist *l, const char *key, const char *value);
void sk_kvlist_dispose(sk_kvlist *l);
bool sk_kvlist_equal(const sk_kvlist *a, const sk_kvlist *b);
/* A JSON object of the pairs (NULL list: empty object). New reference. */
json_t *sk_kvlist_to_json(const sk_kvlist *l);

/* ---- the object ---- */

typedef enum sk_mode { SK_MODE_RUNNING, SK_MODE_PAUSED } sk_mode;
typedef enum sk_on_timeout { SK_ON_TIMEOUT_PAUSE, SK_ON_TIMEOUT_KILL } sk_on_timeout;
typedef enum sk_deletion_policy { SK_DELETE_DELETE, SK_DELETE_RETAIN } sk_deletion_policy;
typedef enum sk_remediation { SK_REMEDIATION_REPORT, SK_REMEDIATION_REPLACE } sk_remediation;
/* spec.health.onLoss: what a lost workspace (WorkspaceIntact False) does. */
typedef enum sk_on_loss { SK_ON_LOSS_REPORT, SK_ON_LOSS_RESTORE } sk_on_loss;
/* spec.updateStrategy: what a template change does. */
typedef enum sk_update_strategy { SK_UPDATE_REPORT, SK_UPDATE_MIGRATE } sk_update_strategy;
/* spec.lifecycle.busy: whether processes running in envd keep the space awake. */
typedef enum sk_busy_policy { SK_BUSY_PROCESSES, SK_BUSY_IGNORE } sk_busy_policy;
/* spec.lifecycle.archive.method: what deep sleep keeps. ObjectStorage: the
 * files, copied through the data plane into the ControllerConfig's archive;
 * Snapshot: a persistent snapshot at the provider (its memory and processes
 * too where the provider keeps them), taken without copying a file. */
typedef enum sk_archive_method { SK_ARCHIVE_OBJECT_STORAGE, SK_ARCHIVE_SNAPSHOT } sk_archive_method;

/* A list of strings in order (spec.workspace.paths). */
typedef struct sk_strlist {
	char **items;
	size_t len;
} sk_strlist;
void sk_strlist_add(sk_strlist *l, const char *s);
/* Removes the first item equal to s: true when one was there. */
bool sk_strlist_remove(sk_strlist *l, const char *s);
void sk_strlist_dispose(sk_strlist *l);
void sk_strlist_copy(sk_strlist *dst, const sk_strlist *src);

/* spec.network (network.c): each space's network policy, sent to the
 * provider in its own shape at create, applied live where it can be.
 * internet and publicTraffic: UNSET is the provider's default, Allow. */
typedef enum sk_net_access { SK_NET_UNSET, SK_NET_ALLOW, SK_NET_DENY } sk_net_access;
typedef struct sk_network {
	sk_strlist allow_out; /* IPs, CIDRs, host names ("*.example.com") */
	sk_strlist deny_out; /* IPs and CIDRs */
	sk_net_access internet; /* spec.network.internet */
	sk_net_access public_traffic; /* spec.network.publicTraffic */
} sk_network;
/* Whether any field is set (else: the provider's default, open egress). */
bool sk_network_is_set(const sk_network *n);

/* spec.storage.volume (storage.c): a provider volume per user, mounted into
 * every sandbox of the space. UNSET deletionPolicy is Retain. */
typedef enum sk_volume_policy {
	SK_VOLUME_UNSET,
	SK_VOLUME_RETAIN,
	SK_VOLUME_DELETE
} sk_volume_policy;
typedef struct sk_storage {
	char *volume_name; /* spec.storage.volume.name; NULL: derived from spec.userID */
	char *mount_path; /* spec.storage.volume.mountPath; NULL: SK_STORAGE_DEFAULT_MOUNT */
	sk_volume_policy volume_policy; /* spec.storage.volume.deletionPolicy */
} sk_storage;
#define SK_STORAGE_DEFAULT_MOUNT "/home/user"
#define SK_VOLUME_NAME_MAX 63
/* Whether what a provider reports (seen) is the policy want; publicTraffic
 * is compared only when both say it (unset: the provider's own default,
 * which differs: E2B's URLs are public, Daytona's previews private). */
bool sk_network_satisfies(const sk_network *want, const sk_network *seen);
void sk_network_copy(sk_network *dst, const sk_network *src);
void sk_network_dispose(sk_network *n);
/* 16 hex digits of the policy (FNV-1a of its one-line form). */
void sk_network_digest(const sk_network *n, char out[17]);
/* One line: "internet Deny, allowOut 10.0.0.0/8, publicTraffic Allow". */
void sk_network_format(const sk_network *n, char *buf, size_t len);

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

typedef struct sk_object_meta {
	char *name; /* DNS-1123 label */
	sk_kvlist labels;
	sk_kvlist annotations;
	/* set by the store only */
	char *uid;
	int64_t generation;
	int64_t resource_version;
	int64_t creation_ms; /* 0 when unset */
	int64_t deletion_ms; /* 0 when not being deleted */
	char **finalizers;
	size_t n_finalizers;
	/* When this copy was read from (or written to) the store, on this
	 * process's monotonic clock (sk_monotonic_ms); 0 unknown. Not stored. */
	int64_t read_ms;
} sk_object_meta;

typedef struct sk_userspace_spec {
	/* One row of sk_spec_fields per member (paths, defaults and bounds are there). */
	char *user_id; /* spec.userID */
	char *provider; /* spec.provider */
	char *template_id; /* spec.template */
	sk_mode mode; /* spec.mode */
	int cpu_count; /* spec.resources.cpuCount; 0 = provider default */
	int memory_mb; /* spec.resources.memoryMB; 0 = provider default */
	int64_t idle_timeout_ms; /* spec.lifecycle.idleTimeout */
	sk_on_timeout on_timeout; /* spec.lifecycle.onTimeout */
	bool auto_resume; /* spec.lifecycle.autoResume */
	int64_t max_busy_ms; /* spec.lifecycle.maxBusy */
	sk_busy_policy busy; /* spec.lifecycle.busy */
	int64_t archive_after_ms; /* spec.lifecycle.archiveAfter; 0: never */
	sk_archive_method archive_method; /* spec.lifecycle.archive.method */
	sk_kvlist env; /* spec.env */
	sk_kvlist metadata; /* spec.metadata */
	sk_deletion_policy deletion_policy; /* spec.deletionPolicy */
	int64_t unhealthy_after_ms; /* spec.health.unhealthyAfter */
	sk_remediation remediation; /* spec.health.remediation */
	sk_on_loss on_loss; /* spec.health.onLoss */
	sk_update_strategy update_strategy; /* spec.updateStrategy */
	sk_strlist workspace_paths; /* spec.workspace.paths */
	int64_t keep_source_ms; /* spec.migration.keepSourceFor */
	int64_t when_idle_ms; /* spec.migration.whenIdleFor */
	char *max_bytes; /* spec.migration.maxBytes: a quantity ("5Gi") */
	sk_deletion_policy source_policy; /* spec.migration.sourcePolicy */
	sk_network network; /* spec.network.* */
	sk_storage storage; /* spec.storage.volume.* */
	/* spec.source.fork.userSpace: the UserSpace whose sandbox the space's
	 * first sandbox is forked from (spacectl fork); NULL: a plain create.
	 * Read once: after the first sandbox exists (condition Forked) never again. */
	char *fork_from;
	/* spec.snapshots: persistent snapshots on a cron schedule (UTC), pruned
	 * to keep (0: SK_SNAPSHOTS_KEEP_DEFAULT); schedule NULL: none */
	char *snapshot_schedule;
	int snapshot_keep;
} sk_userspace_spec;
#define SK_SNAPSHOTS_KEEP_DEFAULT 7

/* Whether spec.storage asks for a volume: any of its fields given. */
bool sk_storage_wanted(const sk_userspace_spec *s);
/* The volume's name: spec.storage.volume.name, else "sk-" and the user ID
 * (a user ID longer than 40 characters or holding a '.' is cut to 40, '.'
 * written '_', and 16 hex digits of its hash appended, so names stay
 * distinct and within [A-Za-z0-9_-]{1,63}). */
void sk_storage_volume_name(const sk_userspace_spec *s, char out[SK_VOLUME_NAME_MAX + 1]);
/* spec.storage.volume.mountPath, else SK_STORAGE_DEFAULT_MOUNT. */
const char *sk_storage_mount_path(const sk_userspace_spec *s);
bool sk_storage_deletes(const sk_userspace_spec *s); /* deletionPolicy Delete */

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

/* status.migration: a move of the space to another
 * provider or template, step by step, so a restarted controller resumes it. */
typedef enum sk_migration_phase {
	SK_MIG_NONE, /* no migration recorded */
	SK_MIG_PENDING, /* triggered; waits for the space to be idle */
	SK_MIG_CREATING, /* the target is being created (mark written first) */
	SK_MIG_COPYING,
	SK_MIG_VERIFYING,
	SK_MIG_SWITCHING, /* verified; the binding moves in one write */
	SK_MIG_RETIRING, /* bound to the target; source paused, deleted after keepSourceFor */
	SK_MIG_DONE,
	SK_MIG_ABORTED,
	SK_MIG_COUNT
} sk_migration_phase;

typedef struct sk_migration_end {
	char *provider;
	char *template_id;
	char *sandbox_id; /* NULL: not known (target not created yet) */
} sk_migration_end;

typedef struct sk_migration_status {
	sk_migration_phase phase;
	sk_migration_end source, target;
	int64_t files_done, files_total, bytes_done, bytes_total;
	int64_t start_ms; /* when it was triggered */
	int64_t step_ms; /* when the current phase began */
	char *trigger; /* "ProviderChanged" | "TemplateChanged" | "RolloutRestart" */
	char *reason; /* Aborted: why; else may be NULL */
} sk_migration_status;

const char *sk_migration_phase_name(sk_migration_phase p); /* "" for NONE */
/* Pending up to Retiring: the space is moving. */
bool sk_migration_active(const sk_migration_status *m);
void sk_migration_dispose(sk_migration_status *m);
void sk_migration_copy(sk_migration_status *dst, const sk_migration_status *src);
bool sk_migration_equal(const sk_migration_status *a, const sk_migration_status *b);
/* A byte quantity: "5Gi", "500Mi", "10M", "1000". SK_EINVALID when not one. */
int sk_quantity_parse(const char *s, int64_t *out);

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

/* status.storage.volume: the volume the space's sandboxes are created with
 * (spec.storage.volume). */
typedef struct sk_storage_status {
	char *state; /* state: "Mounted" | "Unsupported" (the provider has none); NULL: none */
	char *volume_name; /* name */
	char *volume_id; /* volumeID: the provider's (Mounted) */
	char *mount_path; /* mountPath */
} sk_storage_status;
#define SK_STORAGE_MOUNTED "Mounted"
#define SK_STORAGE_UNSUPPORTED "Unsupported"
void sk_storage_status_dispose(sk_storage_status *s);
void sk_storage_status_copy(sk_storage_status *dst, const sk_storage_status *src);
bool sk_storage_status_equal(const sk_storage_status *a, const sk_storage_status *b);

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
	sk_snapshots_status snapshots;
} sk_userspace_status;

/* Where a space's files are, one line (spacectl describe, the status page):
 * its sandbox, or the archive's location and time, and the newest archive. */
void sk_archive_where(const sk_userspace_status *st, char *out, size_t len);

typedef struct sk_userspace {
	sk_object_meta meta;
	sk_userspace_spec spec;
	sk_userspace_status status;
} sk_userspace;

void sk_userspace_free(sk_userspace *us); /* NULL-safe */
sk_userspace *sk_userspace_dup(const sk_userspace *us);
void sk_userspace_status_dispose(sk_userspace_status *st);
void sk_userspace_status_copy(sk_userspace_status *dst, const sk_userspace_status *src);
bool sk_userspace_spec_equal(const sk_userspace_spec *a, const sk_userspace_spec *b);
bool sk_userspace_status_equal(const sk_userspace_status *a, const sk_userspace_status *b);
const sk_condition *sk_userspace_condition(const sk_userspace *us, const char *type);
bool sk_userspace_is_ready(const sk_userspace *us);
bool sk_userspace_has_finalizer(const sk_userspace *us, const char *f);

const char *sk_phase_name(sk_phase p); /* "" for SK_PHASE_NONE */
int sk_phase_parse(const char *s, sk_phase *out);
const char *sk_mode_name(sk_mode m);

/* ---- sandbox values (sandbox.c): what a provider reports and is asked for ----
 * The provider clients that fill them are in pkg/sandbox. */

typedef enum sk_sandbox_state {
	SK_SANDBOX_UNKNOWN,
	SK_SANDBOX_RUNNING,
	SK_SANDBOX_PAUSED,
	SK_SANDBOX_TRANSITIONAL, /* starting, stopping, pausing (daytona) */
	SK_SANDBOX_GONE, /* killed / deleted / error states that will not come back */
} sk_sandbox_state;

const char *sk_sandbox_state_name(sk_sandbox_state s);

typedef struct sk_sandbox {
	char *id;
	char *template_id;
	char *alias;
	sk_sandbox_state state;
	int64_t started_ms;
	int64_t end_ms; /* running: TTL expiry; paused: time of pause */
	int cpu_count;
	int memory_mb;
	sk_kvlist metadata;
	char *domain; /* may be NULL */
	char *envd_access_token; /* may be NULL; never logged */
	char *envd_version; /* envd's version the provider reports ("0.2.0"), may be NULL */
	/* The network policy the provider reports in its detail (E2B, Daytona;
	 * not in lists, not Cube): network_known says it did. */
	sk_network network;
	bool network_known;
} sk_sandbox;

void sk_sandbox_dispose(sk_sandbox *sb);
void sk_sandbox_free(sk_sandbox *sb);
void sk_sandbox_copy(sk_sandbox *dst, const sk_sandbox *src);
/* The sandbox as a JSON object and back (a shared provider list is stored
 * so). The envd access token is left out: it is a secret. */
json_t *sk_sandbox_to_json(const sk_sandbox *sb);
int sk_sandbox_from_json(const json_t *j, sk_sandbox *out, sk_error *err);

typedef struct sk_sandbox_list {
	sk_sandbox *items;
	size_t len;
} sk_sandbox_list;
void sk_sandbox_list_dispose(sk_sandbox_list *l);

typedef struct sk_create_request {
	const char *template_id;
	int64_t timeout_ms; /* provider TTL */
	bool auto_pause; /* on timeout pause instead of kill */
	bool auto_resume;
	int cpu_count; /* 0: provider default */
	int memory_mb;
	const sk_kvlist *metadata;
	const sk_kvlist *env;
	const sk_network *network; /* spec.network; NULL or unset: the provider's default */
	/* spec.storage.volume: the volume mounted at volume_mount (both NULL: none);
	 * the executor makes it first (sk_sandbox_ensure_volume) */
	const char *volume_name;
	const char *volume_mount;
} sk_create_request;

/* How the data plane answered GET /health. */
typedef enum sk_health {
	SK_HEALTH_OK, /* 2xx */
	SK_HEALTH_UNREACHABLE, /* 502/503/504, timeout, connection refused */
	SK_HEALTH_ERROR, /* anything else */
} sk_health;
/* ---- the spec schema (pkg/api/schema.c) ----
 * One row per UserSpace spec field drives validation, JSON decoding and
 * encoding, defaults, equality, copying, the stored document's user maps and
 * the packed cache form; test/unit/check_schema.c holds the CRD to it. A new
 * spec field is a member of sk_userspace_spec, a row, and its tests. */

typedef enum sk_field_type {
	SK_FIELD_STRING, /* char *; NULL unset */
	SK_FIELD_ENUM, /* a C enum, int-sized */
	SK_FIELD_INT, /* int; 0 unset (omitted on output) */
	SK_FIELD_BOOL, /* bool */
	SK_FIELD_DURATION, /* int64_t milliseconds; 0 unset (the default applies) */
	SK_FIELD_MAP, /* sk_kvlist of strings; omitted on output when empty */
	SK_FIELD_LIST, /* sk_strlist; empty: [def] */
} sk_field_type;

struct sk_vctx;
struct sk_field;
typedef void (*sk_field_check_fn)(struct sk_vctx *v, const struct sk_field *f, json_t *val);

typedef struct sk_field {
	const char *path; /* JSON path: "spec.lifecycle.idleTimeout" */
	sk_field_type type;
	size_t offset; /* of the member in sk_userspace_spec */
	bool required;
	const char *def; /* the default as the CRD writes it ("base", "15m", "true"); NULL none */
	int64_t min, max; /* INT: value; DURATION: ms; MAP, LIST: max is the entry limit */
	const char *const *names; /* ENUM: the values in CRD order, NULL-terminated */
	const int *values; /* ENUM: the C value of each name; NULL: its index */
	bool (*valid)(const char *s); /* STRING, LIST items: the rule */
	const char *rule; /* STRING: "must match <rule>" */
	const char *pattern; /* STRING: the CRD pattern */
	/* STRING: the CRD minLength and maxLength; LIST: each entry's maxLength;
	 * DURATION: its maxLength (the API server estimates a CEL rule's cost from
	 * these bounds); 0 none */
	int min_len, max_len;
	sk_field_check_fn check; /* MAP: key and value rules */
	const char *desc; /* the CRD description; NULL none */
} sk_field;

extern const sk_field sk_spec_fields[];
extern const size_t sk_spec_n_fields;

/* The row of a JSON path ("spec.mode"); NULL when none. */
const sk_field *sk_spec_field(const char *path);
/* A template, or spec.template's default in the table when NULL ("base"). */
const char *sk_spec_template(const char *template_id);
/* The provider TTL set on create and connect when a provider's sandboxTimeout
 * is unset (1 h); the one default outside sk_spec_fields, kept beside it. */
extern const int64_t sk_default_sandbox_timeout_ms;
/* ENUM: the C value of a name (false when none). */
bool sk_field_enum_value(const sk_field *f, const char *name, int *out);
/* ENUM, INT, BOOL, DURATION: the member as an integer, and set. */
int64_t sk_field_get_int(const sk_field *f, const sk_userspace_spec *s);
void sk_field_set_int(const sk_field *f, sk_userspace_spec *s, int64_t v);
/* The member of spec s that f describes, as a T * (char *, sk_kvlist, ...). */
#define SK_FIELD_AT(f, s, T) ((T *)(void *)((char *)(s) + (f)->offset))
/* ENUM, BOOL, DURATION: the default as a C value (0 when none). */
int64_t sk_field_default_int(const sk_field *f);
/* The object holding path's last segment under obj (path relative to obj,
 * "lifecycle.idleTimeout"), created when create; *leaf is that segment.
 * NULL when absent or not an object. */
json_t *sk_json_parent(json_t *obj, const char *path, bool create, const char **leaf);

/* ---- validation errors ---- */

typedef struct sk_field_error {
	char *path; /* "spec.userID", "metadata.labels.team" */
	char *message; /* "required", "must match [A-Za-z0-9._-]{1,128}" */
	char *file; /* may be NULL */
	int line, col; /* 1-based; 0 when unknown */
} sk_field_error;

typedef struct sk_errlist {
	sk_field_error *items;
	size_t len;
} sk_errlist;

void sk_errlist_add(sk_errlist *l, const char *path, const char *file, int line, int col,
        const char *fmt, ...) __attribute__((format(printf, 6, 7)));
void sk_errlist_dispose(sk_errlist *l);
/* "spec.userID: required (a.yaml:7:3)" one per line into buf */
void sk_errlist_format(const sk_errlist *l, sk_buf *out);

/* ---- documents: parsed YAML/JSON with source positions ---- */

typedef struct sk_doc sk_doc; /* opaque */

typedef struct sk_doclist {
	sk_doc **items;
	size_t len;
} sk_doclist;

/* Parses YAML (a JSON text is YAML too) holding zero or more documents.
 * file names the source in positions ("-" prints as "<stdin>").
 * Bounded: at most SK_MAX_DOCUMENT_BYTES per document, nesting depth 64,
 * aliases expanded at most 10000 nodes in total; binary input rejected.
 * On a parse failure returns SK_EINVALID with "file:line:col: problem" in err. */
int sk_doc_parse(const char *data, size_t len, const char *file, sk_doclist *out, sk_error *err);
/* Replaces each List document (kind List or UserSpaceList, as `get -o
 * yaml|json` prints several objects) by one document per item, keeping the
 * items' file positions. SK_EINVALID (err names file:line:col) when a List
 * has no list of objects in items; l is unchanged then. */
int sk_doclist_expand_lists(sk_doclist *l, sk_error *err);
/* Reads a path: a file, a directory (*.yaml, *.yml, *.json, sorted, not recursive) or "-". */
int sk_doc_load_path(const char *path, sk_doclist *out, sk_error *err);
/* The same; recursive: a directory's subdirectories too (kubectl -R), depth first, in
 * name order; hidden entries skipped. */
int sk_doc_load_tree(const char *path, bool recursive, sk_doclist *out, sk_error *err);
void sk_doclist_dispose(sk_doclist *l);
/* Borrowed. */
json_t *sk_doc_root(const sk_doc *d);
const char *sk_doc_file(const sk_doc *d);
int sk_doc_line(const sk_doc *d); /* line where the document starts */
/* Position of a dotted field path ("spec.lifecycle.idleTimeout"); falls back to
 * the nearest parent. Returns false when unknown. */
bool sk_doc_position(const sk_doc *d, const char *path, int *line, int *col);
/* A document with no position info (from MongoDB or JSON built in code). Takes a reference. */
sk_doc *sk_doc_from_json(json_t *root, const char *file);
void sk_doc_free(sk_doc *d);

/* ---- UserSpace codec ---- */

/* Checks apiVersion, kind, required fields, patterns, enums, bounds, reserved
 * and unsafe keys, and unknown fields (strict). Collects every error.
 * Returns 0 when valid, SK_EINVALID otherwise. Status and store-owned metadata
 * are accepted and ignored (kubectl apply of a `get -o yaml` output works). */
int sk_userspace_validate(const sk_doc *d, sk_errlist *errs);
/* Decodes a validated document (or a MongoDB read-back) and applies defaults.
 * Includes metadata set by the store and status when present. */
int sk_userspace_decode(json_t *root, sk_userspace **out, sk_error *err);
/* validate + decode (metadata.namespace ignored: cluster-scoped; null
 * means unset, as the API server prunes it). */
int sk_userspace_from_doc(const sk_doc *d, sk_userspace **out, sk_errlist *errs);
/* A document given to create (create true) or update, read as the API server
 * reads it: status dropped (the status subresource), then
 * metadata.generateName without metadata.name gets a generated name (create)
 * or is an error (update), then sk_userspace_from_doc. Changes d's root. */
int sk_userspace_from_input(sk_doc *d, bool create, sk_userspace **out, sk_errlist *errs);
/* Reports each object (objs[i] NULL: skipped) whose metadata.name or
 * spec.userID repeats an earlier one, naming both positions (docs[i] is the
 * document of objs[i]). Linear time. Returns the number of errors added. */
size_t sk_userspaces_check_unique(
        sk_userspace *const *objs, const sk_doc *const *docs, size_t n, sk_errlist *errs);
/* The full object: apiVersion, kind, metadata, spec (defaults explicit), status
 * (omitted when empty). New reference. */
json_t *sk_userspace_to_json(const sk_userspace *us);
json_t *sk_userspace_spec_to_json(const sk_userspace_spec *spec);
json_t *sk_userspace_status_to_json(const sk_userspace_status *st);
void sk_userspace_apply_defaults(sk_userspace *us);

/* ---- output ---- */

/* Block-style YAML (libyaml emitter), keys in insertion order. */
int sk_json_to_yaml(const json_t *v, sk_buf *out, sk_error *err);

/* A text table with aligned columns, kubectl-style upper-case headers. */
typedef struct sk_table sk_table;
sk_table *sk_table_new(size_t ncols, const char *const *headers);
void sk_table_add_row(sk_table *t, const char *const *cells);
void sk_table_render(const sk_table *t, sk_buf *out);
void sk_table_free(sk_table *t);

/* ---- label selectors (kubectl -l) ---- */

/* Supports "k=v", "k==v", "k!=v", "k", "!k", "k in (a,b)", "k notin (a,b)",
 * "k>N", "k<N" (N an integer; the label's value must be one), comma-joined. */
typedef struct sk_selector sk_selector;
int sk_selector_parse(const char *text, sk_selector **out, sk_error *err);
bool sk_selector_matches(const sk_selector *s, const sk_kvlist *labels);
void sk_selector_free(sk_selector *s);

/* ---- name and value rules, shared by validator and store ---- */

bool sk_valid_name(const char *s); /* DNS-1123 label, 1..63 */
bool sk_valid_user_id(const char *s); /* [A-Za-z0-9._-]{1,128} */
bool sk_valid_metadata_value(const char *s); /* [A-Za-z0-9._-]{0,256} */
bool sk_reserved_metadata_key(const char *s);

/* ---- ControllerConfig (manifests/config/) ---- */

typedef enum sk_provider_type {
	SK_PROVIDER_E2B,
	SK_PROVIDER_CUBE,
	SK_PROVIDER_DAYTONA,
} sk_provider_type;

typedef struct sk_provider_config {
	char *name;
	sk_provider_type type;
	char *api_url;
	char *sandbox_url; /* NULL: https://{port}-{sandboxID}.{domain} */
	char *domain; /* default "e2b.app" */
	char *api_key_env; /* name of the variable, never the key */
	char *api_key_file; /* path, never the key */
	int max_in_flight; /* default 64 */
	double qps; /* default 200 */
	int burst; /* default 400 */
	int64_t request_timeout_ms; /* default 30s */
	int64_t sandbox_timeout_ms; /* provider TTL set on create/connect, default 1h */
	bool insecure_skip_tls_verify;
	bool delete_orphans; /* default false */
	int64_t orphan_grace_ms; /* default 10m */
	/* capacity: what the provider's plan allows (0: unlimited). Connects
	 * waiting for a slot beyond max_queued get 429 (default 1000). */
	int max_running; /* capacity.maxRunning */
	double creates_per_second; /* capacity.createsPerSecond: creates and resumes */
	int max_queued; /* capacity.maxQueued */
	int64_t evict_after_ms; /* capacity.evictAfter: a space connected to within it stays (1m) */
	int64_t learned_for_ms; /* capacity.learnedFor: how long a cap the provider's 429 showed stands (5m) */
	/* price (optional): per sandbox-hour running and paused */
	bool has_price;
	double price_running_per_hour;
	double price_paused_per_hour;
	/* How long the provider keeps a paused sandbox before it deletes it
	 * (E2B: 720h); 0 (default): not known, kept forever. */
	int64_t paused_retention_ms;
} sk_provider_config;

/* One entry of controller.connectTokens: a tenant's bearer token (read from
 * file, reloaded when it changes) that reaches only the UserSpaces its
 * label selector matches. */
typedef struct sk_connect_token_config {
	char *name; /* DNS-1123 label, unique; the metrics' token label */
	char *file; /* path, never the token */
	char *selector; /* a label selector (kubectl -l syntax), not empty */
} sk_connect_token_config;

/* archive: the object storage of spaces' workspaces (config_archive.c). */
typedef struct sk_archive_config {
	char *endpoint; /* http(s) URL of an S3-compatible server */
	char *bucket;
	char *region; /* default us-east-1 */
	char *prefix; /* key prefix, default "spaces": PREFIX/USERID/GENERATION/ */
	char *access_key_file; /* paths, never the keys */
	char *secret_key_file;
	/* complete generations kept besides the newest when a user's archives
	 * are pruned (sk_archive_prune), default 1, 0..1000 */
	int keep_generations;
} sk_archive_config;

typedef struct sk_controller_config {
	char *mongodb_uri; /* default mongodb://127.0.0.1:27017 */
	char *database; /* default spacekeeper */
	sk_provider_config *providers;
	size_t n_providers;
	int workers; /* default 8 */
	int64_t resync_ms; /* default 30s */
	char *listen; /* default 127.0.0.1:9090: /healthz /readyz /metrics, status page */
	/* The connect API's own listener (docs/operations.md, "Securing the connect API"). */
	char *connect_listen; /* default 127.0.0.1:9091; "" switches the connect API off */
	char *connect_token_file; /* path of the bearer token, never the token */
	sk_connect_token_config *connect_tokens; /* scoped tokens (config_tokens.c) */
	size_t n_connect_tokens;
	bool connect_insecure; /* allow no token on a non-loopback connectListen */
	char *connect_tls_cert_file; /* PEM; with connect_tls_key_file: HTTPS */
	char *connect_tls_key_file;
	int connect_max_waiting; /* connects in progress at once, default 1024; beyond: 429 */
	int connect_max_connections; /* open connections, default 16384 */
	int connect_max_per_ip; /* open connections per client address, 0 (default): no cap */
	int64_t store_unavailable_after_ms; /* /readyz 503 after this long unreachable, 30s */
	/* Replicas (controller.shards ...): spaces are split into `shards`
	 * shards by a hash of spec.userID; each replica holds leases on some. */
	int shards; /* default 64 */
	char *identity; /* "" (default): HOSTNAME-PID, decided by the binary */
	int64_t lease_duration_ms; /* default 15s */
	int64_t renew_deadline_ms; /* default 10s */
	int64_t retry_period_ms; /* default 2s */
	char *advertise_address; /* HOST:PORT others forward connects to; "": listen */
	sk_archive_config *archive; /* NULL: no archive configured */
} sk_controller_config;

/* Parses and validates a config file (errors with path and file:line:col). */
int sk_config_load(const char *path, sk_controller_config **out, sk_errlist *errs, sk_error *err);
/* Defaults only: one e2b provider "default" at http://127.0.0.1:3000. */
sk_controller_config *sk_config_default(void);

/* The settings a command line can give (NULL: not given), as typed. */
#define SK_CONFIG_MONGODB_URI_ENV "SPACEKEEPER_MONGODB_URI"
/* A spacectl context (a named database in spacectl's config file, as a
 * kubeconfig context names a cluster): a layer between the ControllerConfig
 * file and the environment. NULL members are not set. */
typedef struct sk_config_context {
	const char *name;
	const char *source; /* the file it came from, for errors */
	const char *mongodb_uri;
	const char *database;
	/* a ControllerConfig file: spacectl's providers when --config is not
	 * given (sandboxes, plan, drift --orphans); not a layer of the resolve */
	const char *controller_config;
} sk_config_context;

typedef struct sk_config_sources {
	const char *config_path; /* --config: a ControllerConfig file */
	const sk_config_context *context; /* spacectl's current context; NULL none */
	const char *mongodb_uri; /* --mongodb-uri (else $SPACEKEEPER_MONGODB_URI) */
	const char *database; /* --database */
	const char *workers; /* --workers */
	const char *resync; /* --resync */
	const char *listen; /* --listen ("" switches HTTP off) */
	const char *connect_listen; /* --connect-listen ("" switches the connect API off) */
	const char *connect_token_file; /* --connect-token-file */
	const char *connect_insecure; /* --connect-insecure ("true") */
	const char *connect_tls_cert_file; /* --connect-tls-cert-file */
	const char *connect_tls_key_file; /* --connect-tls-key-file */
	const char *connect_max_waiting; /* --connect-max-waiting */
	const char *connect_max_connections; /* --connect-max-connections */
	const char *connect_max_per_ip; /* --connect-max-per-ip */
	const char *store_unavailable_after; /* --store-unavailable-after */
	const char *shards; /* --shards */
	const char *identity; /* --id */
	const char *lease_duration; /* --lease-duration */
	const char *renew_deadline; /* --renew-deadline */
	const char *retry_period; /* --retry-period */
	const char *advertise_address; /* --advertise-address */
	const char *(*getenv)(const char *name); /* NULL: getenv(3); tests pass their own */
} sk_config_sources;

/* The one place that decides every setting, for both binaries: flags, then
 * the environment, then the context (spacectl), then the file at config_path
 * (or the built-in defaults), then the defaults; every value checked by the file's rules and bounds.
 * Errors name the flag ("--workers"), the variable or the file path and line. */
int sk_config_resolve(
        const sk_config_sources *src, sk_controller_config **out, sk_errlist *errs, sk_error *err);
/* Checks the flags of src alone (a usage error before any file is read);
 * returns how many errors were added to errs. */
size_t sk_config_check_flags(const sk_config_sources *src, sk_errlist *errs);
void sk_config_free(sk_controller_config *c);
const sk_provider_config *sk_config_provider(const sk_controller_config *c, const char *name);
/* Reads the key from the named file or variable. Caller frees. NULL + err
 * (naming the provider) when missing or unreadable. */
char *sk_provider_api_key(const sk_provider_config *p, sk_error *err);
/* True, with a message in msg, when the provider's apiKeyFile can be read or
 * written by group or others (as ssh warns about keys); the key is still
 * used. False when fine, when there is no file or it cannot be stat'ed. */
bool sk_provider_key_file_warning(const sk_provider_config *p, char *msg, size_t len);
/* The connect API's bearer token from connectTokenFile (trailing newline and
 * blanks stripped; one line, no control bytes). Caller frees. NULL + err when
 * the file cannot be read or is empty; NULL without error when none is set. */
char *sk_config_connect_token(const sk_controller_config *c, sk_error *err);
/* As sk_provider_key_file_warning, for connectTokenFile. */
bool sk_config_connect_token_warning(const sk_controller_config *c, char *msg, size_t len);
/* A token file's one line (as sk_config_connect_token); what names the file
 * in errors ("connect token file"). Caller frees. */
char *sk_config_token_read(const char *path, const char *what, sk_error *err);
/* The archive's keys from their files (caller frees both; never logged). */
int sk_config_archive_keys(const sk_archive_config *a, char **access, char **secret, sk_error *err);
/* The name controller.connectTokenFile's token has in metrics. */
#define SK_CONNECT_TOKEN_ALL "all"
/* Whether a HOST:PORT listens on loopback only (127.0.0.0/8, localhost, ""). */
bool sk_config_listen_is_loopback(const char *listen);

/* ---- SpaceQuota ----
 *
 * The SpaceQuota v1alpha1 object, a tenant's limits
 * over the UserSpaces its label selector matches, as Kubernetes'
 * ResourceQuota limits a namespace:
 *
 *   apiVersion: spacekeeper.dev/v1alpha1
 *   kind: SpaceQuota
 *   metadata: {name: team-a}
 *   spec:
 *     selector: {matchLabels: {team: a}, matchExpressions: [{key: tier, operator: In, values: [x]}]}
 *     hard: {spaces: 10, running: 3}
 *   status: {used: {spaces: 4, running: 2}, lastUpdateTime: ...}   # the controller's
 *
 * One table (sk_quota_fields) names every field with its type and
 * description: the validator's known fields, spacectl explain and the CRD
 * parity test read it. `spaces` is enforced at spacectl apply
 * (sk_quota_admit), `running` by the controller's capacity gate.
 */

#define SK_KIND_SPACEQUOTA "SpaceQuota"
#define SK_QUOTA_NO_LIMIT (-1)
/* The resources a SpaceQuota limits (metrics' resource label, messages). */
#define SK_QUOTA_SPACES "spaces"
#define SK_QUOTA_RUNNING "running"
/* The most requirements a selector has, and values one requirement lists:
 * the CRD's maxItems, which bound its CEL rule's cost. */
#define SK_QUOTA_MAX_EXPRS 32
#define SK_QUOTA_MAX_VALUES 256

/* One entry of spec.selector.matchExpressions. */
typedef enum sk_label_op {
	SK_LABEL_IN,
	SK_LABEL_NOT_IN,
	SK_LABEL_EXISTS,
	SK_LABEL_DOES_NOT_EXIST
} sk_label_op;
typedef struct sk_label_requirement {
	char *key;
	sk_label_op op;
	sk_strlist values; /* In, NotIn: at least one; else none */
} sk_label_requirement;

typedef struct sk_spacequota {
	sk_object_meta meta; /* name, labels, annotations; uid and creation by the store */
	sk_kvlist match_labels; /* spec.selector.matchLabels */
	sk_label_requirement *exprs; /* spec.selector.matchExpressions */
	size_t n_exprs;
	int64_t hard_spaces; /* spec.hard.spaces; SK_QUOTA_NO_LIMIT: unset */
	int64_t hard_running; /* spec.hard.running; SK_QUOTA_NO_LIMIT: unset */
	bool has_used; /* status.used was written */
	int64_t used_spaces; /* status.used.spaces */
	int64_t used_running; /* status.used.running */
	int64_t updated_ms; /* status.lastUpdateTime */
	sk_selector *sel; /* the selector compiled (an empty one matches every space) */
} sk_spacequota;

typedef struct sk_spacequota_list {
	sk_spacequota **items; /* sorted by name */
	size_t len;
} sk_spacequota_list;

/* Every field of the kind, in document order ("" is the kind itself). */
typedef struct sk_quota_field {
	const char
	        *path; /* "spec.hard.running"; matchExpressions' items: "...matchExpressions.key" */
	const char *
	        type; /* "string", "integer", "object", "map[string]string", "[]Object", "[]string" */
	const char *desc;
} sk_quota_field;
extern const sk_quota_field sk_quota_fields[];
extern const size_t sk_quota_n_fields;
/* The row of a path; NULL when none. */
const sk_quota_field *sk_quota_field_of(const char *path);

/* Whether a document's kind is SpaceQuota. */
bool sk_doc_is_spacequota(const sk_doc *d);
/* Validates (every error, with field path and file:line:col; status and
 * store-owned metadata accepted) and decodes a document. */
int sk_spacequota_from_doc(const sk_doc *d, sk_spacequota **out, sk_errlist *errs);
/* Decodes a stored object (status included); SK_EINVALID naming the field. */
int sk_spacequota_decode(json_t *root, sk_spacequota **out, sk_error *err);
/* The full object (status when has_used). New reference. */
json_t *sk_spacequota_to_json(const sk_spacequota *q);
/* The object without status and store-owned metadata: what apply compares. */
json_t *sk_spacequota_desired_json(const sk_spacequota *q);
json_t *sk_spacequota_status_to_json(const sk_spacequota *q);
void sk_spacequota_free(sk_spacequota *q); /* NULL-safe */
void sk_spacequota_list_dispose(sk_spacequota_list *l);
/* Whether a space with these labels is in the quota's tenant. */
bool sk_spacequota_matches(const sk_spacequota *q, const sk_kvlist *labels);
/* The selector in kubectl -l form ("team=a,tier in (x)"; "" for every space). */
void sk_spacequota_selector_format(const sk_spacequota *q, char *buf, size_t len);
/* "3/10" or "3" when there is no limit ("-" for an unknown use). */
void sk_spacequota_use_format(bool known, int64_t used, int64_t hard, char *buf, size_t len);

/* Admission of a new space (labels) against the quotas q[0..n): used[i] is
 * how many spaces quota i counts already. The index of the first quota it
 * would take past spec.hard.spaces, with Kubernetes' message in msg
 * ("exceeded quota: team-a, requested: spaces=1, used: spaces=3, limited:
 * spaces=3"); -1 when every quota admits it. Pure. */
int sk_quota_admit(const sk_spacequota *const *q, size_t n, const int64_t *used,
        const sk_kvlist *labels, char *msg, size_t len);
/* The message of a start refused by spec.hard.running. */
void sk_quota_running_message(const sk_spacequota *q, int64_t used, char *msg, size_t len);

#endif
