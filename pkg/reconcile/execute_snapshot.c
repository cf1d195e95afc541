/*
 * reconcile/execute_snapshot: the ARCHIVE action by snapshot, the
 * executor's side of plan_snapshot.c. The provider takes a persistent
 * snapshot of the sandbox (unnamed: a name the provider already holds
 * would get a new build of that snapshot, not a new one); only its answer,
 * the snapshot's ID, is recorded in the status to write
 * (sk_archive_record_snapshot). A failure records nothing: the sandbox
 * stays bound, the intent stays, the archive is redone after a back-off.
 */
#include <stdlib.h>
#include <string.h>

#include "../api/sandbox_values.h"
#include "../api/status.h"
#include "../api/userspace.h"
#include "archive_int.h"
#include "reconcile.h"
#include "reconcile_int.h"
#include "round_int.h"

int
sk_execute_snapshot_archive(sk_provider *p, const char *sandbox_id, const sk_userspace *us,
        int64_t now_ms, sk_userspace_status *st, sk_error *err)
{
	sk_snapshot snap;
	int rc = sk_sandbox_create_snapshot(p, sandbox_id, NULL, &snap, err);

	if (rc == 0)
		sk_archive_record_snapshot(st, snap.id, us->status.archive.generation + 1, now_ms,
		        us->meta.generation);
	sk_snapshot_dispose(&snap);
	if (rc != 0)
		sk_error_prefix(err, "snapshot of sandbox %s", sandbox_id);
	return rc;
}
