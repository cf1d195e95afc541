/*
 * reconcile/execute_archive: the ARCHIVE and RESTORE actions,
 * the executor's side of plan_archive.c. Each makes its own S3 client (a
 * client serves one thread at a time) from env->archive_s3.
 *
 * ARCHIVE: sb's workspace (spec.workspace.paths) into generation N+1 of
 * the space's archive with the engine (copy, manifest last, reloaded,
 * verified hash for hash); only when all of it held is the archive
 * recorded in the status to write (sk_archive_record). A failure records
 * nothing: the sandbox stays bound, the intent stays, the archive is
 * redone.
 * RESTORE: status.archive's generation into sb, every object checked
 * against the manifest, then the tree verified.
 * PURGE_ARCHIVE: every generation under PREFIX/USERID/ deleted (the
 * UserSpace is deleted); a failure keeps the finalizer and is retried.
 */
#include <stdlib.h>
#include <string.h>

#include "../api/sandbox_values.h"
#include "../api/status.h"
#include "../api/userspace.h"
#include "archive_int.h"
#include "reconcile.h"
#include "round_int.h"

static int
open_archive(
        const sk_reconcile_env *env, const char *key, sk_s3 **s3, sk_archive **arc, sk_error *err)
{
	int rc;

	*s3 = NULL;
	*arc = NULL;
	if (env->archive_s3 == NULL || key == NULL)
		return sk_error_set(err, SK_ETERMINAL, "no archive is configured");
	rc = sk_s3_new(env->archive_s3, s3, err);
	if (rc != 0)
		return rc;
	*arc = sk_archive_new(*s3, key);
	return 0;
}

static void
copy_options(const sk_reconcile_env *env, const sk_userspace *us, sk_copy_options *o)
{
	memset(o, 0, sizeof(*o));
	o->paths = (const char *const *)us->spec.workspace_paths.items;
	o->npaths = us->spec.workspace_paths.len;
	o->chunk_bytes = env->copy_chunk_bytes;
	o->attempts = env->copy_attempts;
}

int
sk_execute_archive(const sk_reconcile_env *env, sk_provider *p, const sk_sandbox *sb,
        const sk_userspace *us, int64_t now_ms, sk_userspace_status *st, sk_copy_report *rep,
        sk_error *err)
{
	int64_t gen = us->status.archive.generation + 1;
	char *key = sk_archive_key(env->archive_prefix, us->spec.user_id, gen);
	sk_copy_options o;
	sk_archive *arc;
	sk_s3 *s3;
	int rc = open_archive(env, key, &s3, &arc, err);

	if (rc == 0) {
		copy_options(env, us, &o);
		rc = sk_archive_workspace(p, sb, &o, arc, us->meta.name, now_ms, rep, err);
		if (rc == SK_ECONFLICT && rep->mismatch != NULL)
			sk_error_set(err, rc, "verify: %s", rep->mismatch);
	}
	if (rc == 0)
		sk_archive_record(st, env->archive_s3->bucket, key, gen, (int64_t)rep->files_total,
		        (int64_t)rep->bytes_total, now_ms, us->meta.generation);
	sk_archive_free(arc);
	sk_s3_free(s3);
	free(key);
	return rc;
}

/* After a successful restore, the user's archives older than the one
 * restored (beyond archive.keepGenerations) go; a failed prune changes
 * nothing and only says why in note. */
static void
prune(const sk_reconcile_env *env, sk_s3 *s3, const sk_userspace *us, char *note, size_t len)
{
	const sk_archive_status *a = &us->status.archive;
	const char *slash = a->key ? strrchr(a->key, '/') : NULL;
	sk_archive_prune_report rep;
	sk_error e;
	char *base;

	note[0] = '\0';
	if (slash == NULL)
		return;
	base = sk_strndup(a->key, (size_t)(slash - a->key));
	memset(&rep, 0, sizeof(rep));
	sk_error_clear(&e);
	if (sk_archive_prune(s3, base, slash + 1, env->archive_keep, &rep, &e) != 0)
		snprintf(note, len, "pruning the older archives failed: %s", e.message);
	else if (rep.deleted > 0)
		snprintf(note, len, "pruned %zu older archive generations", rep.deleted);
	free(base);
}

int
sk_execute_purge(const sk_reconcile_env *env, const sk_userspace *us, sk_archive_prune_report *rep,
        sk_error *err)
{
	char *base = sk_archive_base(env->archive_prefix, us->spec.user_id);
	sk_s3 *s3 = NULL;
	int rc;

	memset(rep, 0, sizeof(*rep));
	if (env->archive_s3 == NULL)
		rc = sk_error_set(err, SK_ETERMINAL, "no archive is configured");
	else if ((rc = sk_s3_new(env->archive_s3, &s3, err)) == 0)
		rc = sk_archive_purge(s3, base, rep, err);
	sk_s3_free(s3);
	free(base);
	return rc;
}

int
sk_execute_restore(const sk_reconcile_env *env, sk_provider *p, const sk_sandbox *sb,
        const sk_userspace *us, sk_copy_report *rep, char *prune_note, size_t note_len,
        sk_error *err)
{
	sk_copy_options o;
	sk_archive *arc;
	sk_s3 *s3;
	int rc = open_archive(env, us->status.archive.key, &s3, &arc, err);

	if (rc == 0) {
		copy_options(env, us, &o);
		rc = sk_archive_restore(arc, p, sb, &o, rep, err);
		if (rc == SK_ECONFLICT && rep->mismatch != NULL)
			sk_error_set(err, SK_ETERMINAL, "verify: %s", rep->mismatch);
	}
	if (rc == 0)
		prune(env, s3, us, prune_note, note_len);
	sk_archive_free(arc);
	sk_s3_free(s3);
	return rc;
}
