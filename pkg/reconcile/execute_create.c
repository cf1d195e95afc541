/*
 * reconcile/execute_create: the CREATE action. spec.storage.volume is made
 * ready and spec.source.fork's source found first (either may refuse the
 * create before anything is marked), then the Creating mark is written,
 * then the provider creates (or forks) the sandbox, which is bound in the
 * round's status and noted for the follow-up round.
 */
#include <stdlib.h>
#include <string.h>

#include "../api/kvlist.h"
#include "../api/sandbox_values.h"
#include "../api/status.h"
#include "../api/storage.h"
#include "../api/userspace.h"
#include "execute_int.h"
#include "observe_int.h"
#include "plan.h"
#include "reconcile_int.h"

/* The sandbox a create answered with, as a list would show it. */
static void
note_created(sk_xctx *x, const sk_action *a, const sk_sandbox *made)
{
	sk_sandbox sb;

	sk_sandbox_copy(&sb, made);
	sb.state = SK_SANDBOX_RUNNING;
	if (sb.started_ms == 0)
		sb.started_ms = sk_now_ms();
	if (sb.template_id == NULL)
		sb.template_id = sk_strdup(a->template_id);
	if (sb.cpu_count == 0)
		sb.cpu_count = a->cpu_count;
	if (sb.memory_mb == 0)
		sb.memory_mb = a->memory_mb;
	for (size_t i = 0; i < a->metadata.len; i++) {
		if (sk_kvlist_get(&sb.metadata, a->metadata.items[i].key) == NULL)
			sk_kvlist_set(
			        &sb.metadata, a->metadata.items[i].key, a->metadata.items[i].value);
	}
	sk_observed_add(&x->fu->seen, &sb);
	sk_sandbox_dispose(&sb);
}

/* spec.storage.volume before a create: the volume made when missing, its
 * mount put in req (name and path in the caller's buffers: the Creating
 * mark's write replaces x->cur), status.storage set; a provider without
 * volumes creates without one and says so (status.storage state
 * Unsupported, an event). No volume asked for: status.storage cleared. */
typedef struct volume_mount {
	char name[SK_VOLUME_NAME_MAX + 1];
	char *path;
} volume_mount;

static int
prepare_volume(sk_xctx *x, sk_create_request *req, volume_mount *vm, sk_error *err)
{
	const sk_userspace_spec *s = &x->cur->spec;
	sk_storage_status *st = &x->st.storage, next = { 0 };
	const char *name;
	char *id = NULL;
	int rc;

	if (!sk_storage_wanted(s)) {
		sk_storage_status_dispose(st);
		return 0;
	}
	sk_storage_volume_name(s, vm->name);
	name = vm->name;
	if (sk_sandbox_has_volumes(x->p)) {
		if ((rc = sk_sandbox_ensure_volume(x->p, name, &id, err)) != 0)
			return rc;
		vm->path = sk_strdup(sk_storage_mount_path(s));
		req->volume_name = name;
		req->volume_mount = vm->path;
	}
	next.state = sk_strdup(id ? SK_STORAGE_MOUNTED : SK_STORAGE_UNSUPPORTED);
	next.volume_name = sk_strdup(name);
	next.volume_id = id;
	next.mount_path = sk_strdup(sk_storage_mount_path(s));
	if (!sk_storage_status_equal(st, &next) && id != NULL)
		sk_exec_event(x, "Normal", SK_REASON_VOLUME_MOUNTED, "volume %s (%s) mounted at %s",
		        name, id, next.mount_path);
	else if (!sk_storage_status_equal(st, &next))
		sk_exec_event(x, "Warning", SK_REASON_VOLUME_UNSUPPORTED,
		        "provider type %s has no volumes: the space runs without volume %s",
		        sk_provider_get_ops(x->p)->name, name);
	sk_storage_status_dispose(st);
	*st = next;
	return 0;
}

/* spec.source.fork before the Creating mark: the source's bound sandbox at
 * the same provider entry, or an error and no create (a provider without
 * fork creates nothing rather than an empty sandbox; a source with a volume
 * is not forked: the provider's fork mounts the source's volumes). *src_id: the caller
 * frees it. */
static int
fork_source(sk_xctx *x, const sk_action *a, char **src_id, sk_error *err)
{
	const char *mine =
	        x->cur->status.provider ? x->cur->status.provider : x->cur->spec.provider;
	const char *theirs;
	sk_userspace *src = NULL;
	int rc;

	*src_id = NULL;
	if (!sk_sandbox_can_fork(x->p)) {
		sk_exec_event(x, "Warning", SK_REASON_FORK_UNSUPPORTED,
		        "provider type %s has no fork: no sandbox is created from userspace %s",
		        sk_provider_get_ops(x->p)->name, a->fork_from);
		return sk_error_set(err, SK_ENOTSUPPORTED,
		        "spec.source.fork.userSpace: provider type %s has no fork; nothing created "
		        "(ForkUnsupported)",
		        sk_provider_get_ops(x->p)->name);
	}
	if ((rc = sk_store_get(x->env->store, a->fork_from, &src, err)) == SK_ENOTFOUND)
		return sk_error_set(err, SK_ETERMINAL,
		        "spec.source.fork.userSpace: userspace %s not found", a->fork_from);
	if (rc != 0)
		return rc;
	theirs = src->status.provider ? src->status.provider : src->spec.provider;
	if (src->status.sandbox_id == NULL)
		rc = sk_error_set(err, SK_EUNAVAILABLE,
		        "spec.source.fork.userSpace: userspace %s has no sandbox to fork yet",
		        a->fork_from);
	else if (sk_storage_wanted(&src->spec))
		rc = sk_error_set(err, SK_ETERMINAL,
		        "spec.source.fork.userSpace: userspace %s keeps its files on a volume "
		        "(spec.storage.volume); a fork would mount that volume and change its "
		        "files: not forked",
		        a->fork_from);
	else if (!sk_str_eq(mine, theirs))
		rc = sk_error_set(err, SK_ETERMINAL,
		        "spec.source.fork.userSpace: userspace %s runs at provider %s, this space "
		        "at %s; a fork stays at its provider",
		        a->fork_from, theirs ? theirs : "-", mine ? mine : "-");
	else
		*src_id = sk_strdup(src->status.sandbox_id);
	sk_userspace_free(src);
	return rc;
}

int
sk_exec_create(sk_xctx *x, const sk_action *a, sk_error *err)
{
	sk_userspace_status mark;
	sk_create_request req;
	volume_mount vm = { .path = NULL };
	sk_sandbox sb;
	char *src_id = NULL;
	int rc;

	memset(&req, 0, sizeof(req));
	/* an earlier round's mark stays: its create may exist */
	x->create_unmarked = x->cur->status.phase != SK_PHASE_CREATING;
	if (a->fork_from != NULL && (rc = fork_source(x, a, &src_id, err)) != 0)
		return rc;
	if ((rc = prepare_volume(x, &req, &vm, err)) != 0) {
		free(src_id);
		return rc;
	}

	/* The Creating mark first: without it, no create (see reconcile.h). */
	sk_userspace_status_copy(&mark, &x->cur->status);
	mark.phase = SK_PHASE_CREATING;
	free(mark.sandbox_id);
	mark.sandbox_id = NULL;
	mark.last_reconcile_ms = x->now;
	sk_storage_status_dispose(&mark.storage); /* with the mark: a follow-up round keeps it */
	sk_storage_status_copy(&mark.storage, &x->st.storage);
	rc = sk_exec_write_status(x, &mark, err);
	sk_userspace_status_dispose(&mark);
	if (rc != 0) {
		free(vm.path);
		free(src_id);
		return rc;
	}
	x->create_unmarked = false;
	x->st.last_reconcile_ms = x->now;
	req.template_id = a->template_id;
	req.timeout_ms = a->timeout_ms;
	req.auto_pause = a->auto_pause;
	req.auto_resume = a->auto_resume;
	req.cpu_count = a->cpu_count;
	req.memory_mb = a->memory_mb;
	req.metadata = &a->metadata;
	req.env = &a->env;
	req.network = &a->network;
	memset(&sb, 0, sizeof(sb));
	/* A fork comes without the space's metadata (E2B's fork takes none):
	 * the binding by ID, written with the status below, is what makes it
	 * the space's; one lost to a crash before that write is never taken
	 * for the user's (no user_id) and ends at its provider timeout. */
	if (src_id != NULL)
		rc = sk_sandbox_fork(x->p, src_id, a->timeout_ms, &sb, err);
	else
		rc = sk_sandbox_create(x->p, &req, &sb, err);
	if (rc == 0 && x->fu != NULL)
		note_created(x, a, &sb);
	if (rc == 0) {
		sk_exec_note_deadline(x, sb.id, a->timeout_ms, &sb);
		if (sb.end_ms > 0 && x->env->report != NULL)
			x->env->report->set_deadline_ms = sb.end_ms;
		free(x->created);
		x->created = sk_strdup(sb.id);
		free(x->st.sandbox_id);
		x->st.sandbox_id = sk_strdup(sb.id);
		if (src_id != NULL)
			sk_exec_event(x, "Normal", SK_REASON_FORKED,
			        "created sandbox %s, a fork of sandbox %s of userspace %s", sb.id,
			        src_id, a->fork_from);
		else
			sk_exec_event(x, "Normal", SK_REASON_CREATED,
			        "created sandbox %s (template %s)", sb.id, a->template_id);
	}
	sk_sandbox_dispose(&sb);
	free(vm.path);
	free(src_id);
	return rc;
}
