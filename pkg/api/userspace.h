/*
 * api/userspace: the UserSpace v1alpha1 object (README.md, Concepts).
 *
 * Input path: bytes --libyaml--> sk_doc (jansson value + source positions)
 *             --sk_userspace_validate--> errors with field path and file:line:col
 *             --sk_userspace_decode--> struct sk_userspace (defaults applied).
 * JSON text and documents read back from MongoDB take the same decoder.
 * Output: sk_userspace_to_json (the full object, the shape stored in MongoDB
 * and printed by -o json/yaml), sk_json_to_yaml, and table rows.
 */
#ifndef SK_API_USERSPACE_H
#define SK_API_USERSPACE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "doc.h"
#include "errlist.h"
#include "kvlist.h"
#include "meta.h"
#include "network.h"
#include "status.h"
#include "storage.h"
#include "strlist.h"

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

typedef struct sk_userspace {
	sk_object_meta meta;
	sk_userspace_spec spec;
	sk_userspace_status status;
} sk_userspace;

void sk_userspace_free(sk_userspace *us); /* NULL-safe */
sk_userspace *sk_userspace_dup(const sk_userspace *us);
bool sk_userspace_spec_equal(const sk_userspace_spec *a, const sk_userspace_spec *b);
const sk_condition *sk_userspace_condition(const sk_userspace *us, const char *type);
bool sk_userspace_is_ready(const sk_userspace *us);
bool sk_userspace_has_finalizer(const sk_userspace *us, const char *f);

const char *sk_mode_name(sk_mode m);

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
void sk_userspace_apply_defaults(sk_userspace *us);

#endif
