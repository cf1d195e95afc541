/*
 * reconcile/archive_int: the archive, a workspace in object storage: its
 * engine (archive.c), its place in the plan (plan_archive.c, pure) and its
 * retention (archive_prune.c) (private to reconcile).
 */
#ifndef SK_RECONCILE_ARCHIVE_INT_H
#define SK_RECONCILE_ARCHIVE_INT_H

#include "../api/sandbox_values.h"
#include "../api/status.h"
#include "../api/userspace.h"
#include "../objstore/objstore.h"
#include "../sandbox/sandbox.h"
#include "../util/util.h"
#include "options.h"

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

/* What an ARCHIVE by snapshot records: sk_archive_record's status, method
 * Snapshot, the snapshot's ID, no bucket or key. */
void sk_archive_record_snapshot(sk_userspace_status *st, const char *snapshot_id,
        int64_t generation, int64_t now_ms, int64_t observed_gen);

#endif
