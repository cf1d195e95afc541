/*
 * reconcile/execute: runs a plan's actions through the provider and the
 * store, in order, stopping at the first failure. Status is written with
 * compare-and-swap on the resourceVersion read; a conflict re-reads and
 * retries once only when nobody else changed the status meanwhile (a spec
 * edit), so a concurrent status writer is never silently overwritten.
 * Where it stopped (sk_outcome) is mapped onto the status by the planner's
 * sk_plan_failure; transient or terminal is sk_error_retry's call (util).
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "../api/network.h"
#include "../api/sandbox_values.h"
#include "../api/status.h"
#include "../api/storage.h"
#include "../api/userspace.h"
#include "archive_int.h"
#include "execute_int.h"
#include "marker_int.h"
#include "observe.h"
#include "outcome_int.h"
#include "plan.h"
#include "reconcile.h"
#include "reconcile_int.h"
#include "round_int.h"

/* When a round's status is written: the one place that decides (see
 * sk_status_write in round_int.h). */
sk_status_write
sk_when_written(sk_round_kind kind, const sk_plan_result *plan, bool failed)
{
	if (kind == SK_ROUND_FOLLOW_UP)
		return SK_WRITE_ALWAYS;
	if (kind == SK_ROUND_FIRST && plan->follow_up && !failed)
		return SK_HAND_ON;
	return SK_WRITE_IF_CHANGED;
}

void
sk_exec_log(const sk_xctx *x, sk_log_level lvl, const char *msg, const char *fmt, ...)
{
	sk_buf b = SK_BUF_INIT(4096);
	va_list ap;

	if (x->r->env->log == NULL)
		return;
	sk_buf_printf(&b, "userspace=%s ", x->cur->meta.name);
	va_start(ap, fmt);
	sk_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	x->r->env->log(lvl, msg, b.data, x->r->env->log_payload);
	sk_buf_dispose(&b);
}

void
sk_exec_event(sk_xctx *x, const char *type, const char *reason, const char *fmt, ...)
{
	sk_buf b = SK_BUF_INIT(4096);
	va_list ap;

	va_start(ap, fmt);
	sk_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	sk_followup_event(x->r->env, x->cur, x->fu, type, reason, b.data ? b.data : "");
	sk_buf_dispose(&b);
}

/* Equal apart from lastReconcileTime. */
static bool
status_same(const sk_userspace_status *a, const sk_userspace_status *b)
{
	sk_userspace_status t = *a;

	t.last_reconcile_ms = b->last_reconcile_ms;
	return sk_userspace_status_equal(&t, b);
}

/* Fencing: SK_EUNAVAILABLE (and x->did.fenced, logged once) when the caller
 * may no longer act on this user before `what`; 0 when it may. */
int
sk_exec_fence(sk_xctx *x, const char *what, sk_error *err)
{
	if (!x->did.fenced &&
	        (x->r->env->may_act == NULL ||
	                x->r->env->may_act(x->r->env->may_act_arg, x->cur->spec.user_id)))
		return 0;
	if (!x->did.fenced)
		sk_exec_log(x, SK_LOG_WARN, "fenced",
		        "before=\"%s\" why=\"no valid lease on its shard\"", what);
	x->did.fenced = true;
	return sk_error_set(err, SK_EUNAVAILABLE,
	        "fenced: no valid lease on the shard of user %s; not acting",
	        x->cur->spec.user_id ? x->cur->spec.user_id : "");
}

/* CAS write of st over *cur; on success *cur is replaced by the stored object. */
int
sk_reconcile_write_status(
        sk_store *store, sk_userspace **cur, const sk_userspace_status *st, sk_error *err)
{
	sk_userspace *out = NULL;
	int rc = sk_store_write_status(store, *cur, st, &out, err);

	if (rc == 0 && out != NULL) {
		sk_userspace_free(*cur);
		*cur = out;
	} else {
		sk_userspace_free(out);
	}
	return rc;
}

static int
write_once(sk_xctx *x, const sk_userspace_status *st, sk_error *err)
{
	int rc = sk_exec_fence(x, "status write", err);

	if (rc != 0)
		return rc;
	return sk_reconcile_write_status(x->r->env->store, &x->cur, st, err);
}

/* CAS write; on a conflict re-reads and retries once when the stored status
 * is still the one this run started from (someone edited spec or metadata). */
int
sk_exec_write_status(sk_xctx *x, const sk_userspace_status *st, sk_error *err)
{
	sk_userspace *fresh = NULL;
	int rc = write_once(x, st, err);

	if (rc != SK_ECONFLICT)
		return rc;
	rc = sk_store_get(x->r->env->store, x->cur->meta.name, &fresh, err);
	if (rc != 0)
		return rc;
	if (!sk_str_eq(fresh->meta.uid, x->cur->meta.uid) ||
	        !sk_userspace_status_equal(&fresh->status, &x->cur->status)) {
		sk_userspace_free(x->did.conflicted);
		x->did.conflicted = fresh;
		return sk_error_set(err, SK_ECONFLICT,
		        "status of %s changed concurrently; not overwriting", fresh->meta.name);
	}
	sk_userspace_free(x->cur); /* the edited spec and metadata go on as stored */
	x->cur = fresh;
	return write_once(x, st, err);
}

/* The round's status, written or handed on as sk_when_written says. */
static int
write_if_changed(sk_xctx *x, sk_error *err)
{
	sk_status_write w = sk_when_written(x->r->kind, x->r->plan, x->did.failed);

	if (x->did.removed || (w != SK_WRITE_ALWAYS && status_same(&x->st, &x->cur->status)))
		return 0;
	if (x->did.changed_provider &&
	        (x->st.phase != SK_PHASE_CREATING || x->st.sandbox_id != NULL))
		x->st.last_reconcile_ms = x->now;
	if (w == SK_HAND_ON) {
		sk_followup_hand_on(x->fu, &x->st);
		return 0;
	}
	return sk_exec_write_status(x, &x->st, err);
}

static const char *
id_of(const sk_xctx *x, const sk_action *a)
{
	return a->sandbox_id ? a->sandbox_id : x->did.created;
}

/* "action=kill sandbox=ID why=Duplicate": why only for a kill, the one
 * action with a reason (no empty field at the end of the others' lines). */
static void
log_action(const sk_xctx *x, const sk_action *a)
{
	const char *id = id_of(x, a), *why = sk_kill_reason_name(a->why);

	if (why[0] != '\0')
		sk_exec_log(x, SK_LOG_INFO, "action", "action=%s sandbox=%s why=%s",
		        sk_action_type_name(a->type), id ? id : "-", why);
	else
		sk_exec_log(x, SK_LOG_INFO, "action", "action=%s sandbox=%s",
		        sk_action_type_name(a->type), id ? id : "-");
}

/* For the report: this run set id's deadline (timeout_ms from now), and
 * the provider's answer (sb, may be NULL) named its envd details. */
void
sk_exec_note_deadline(sk_xctx *x, const char *id, int64_t timeout_ms, const sk_sandbox *sb)
{
	sk_reconcile_report *r = x->r->env->report;
	int64_t now = sk_now_ms();

	if (r == NULL || id == NULL)
		return;
	if (!sk_str_eq(r->set_id, id)) {
		free(r->set_id);
		r->set_id = sk_strdup(id);
		sk_wipe_free(r->set_token);
		free(r->set_version);
		r->set_token = r->set_version = NULL;
		r->set_seen = false;
	}
	r->set_deadline_ms = timeout_ms > 0 ? now + timeout_ms : 0;
	r->set_at_ms = now;
	if (sb != NULL) {
		sk_wipe_free(r->set_token);
		free(r->set_version);
		r->set_token = sk_strdup(sb->envd_access_token);
		r->set_version = sk_strdup(sb->envd_version);
		r->set_seen = true;
	}
}

static const char *
kill_event(sk_kill_reason why)
{
	switch (why) {
	case SK_KILL_DUPLICATE: return SK_REASON_DUPLICATE_DELETED;
	case SK_KILL_REPLACE: return SK_REASON_REPLACED;
	case SK_KILL_ORPHAN: return SK_REASON_ORPHAN_DELETED;
	case SK_KILL_ARCHIVED: return SK_REASON_ARCHIVED_SANDBOX_DELETED;
	default: return SK_REASON_SANDBOX_DELETED;
	}
}

/* A sandbox this run killed is gone, whatever the last list said: the
 * follow-up round does not plan to kill it a second time (a 404). */
static void
note_killed(sk_xctx *x, const char *id)
{
	sk_sandbox_list *l = &x->fu->seen.sandboxes;

	for (size_t i = 0; i < l->len; i++) {
		if (sk_str_eq(l->items[i].id, id))
			l->items[i].state = SK_SANDBOX_GONE;
	}
}

static int
do_kill(sk_xctx *x, const sk_action *a, sk_error *err)
{
	int rc = sk_sandbox_kill(x->p, a->sandbox_id, err);

	if (rc == SK_ENOTFOUND)
		rc = 0;
	if (rc == 0 && sk_followup_notes(x->fu))
		note_killed(x, a->sandbox_id);
	if (rc == 0)
		sk_exec_event(x, "Normal", kill_event(a->why), "killed sandbox %s (%s)",
		        a->sandbox_id, sk_kill_reason_name(a->why));
	if (rc == 0 && a->why == SK_KILL_REPLACE && x->r->env->report != NULL) {
		free(x->r->env->report->replaced_id);
		x->r->env->report->replaced_id = sk_strdup(a->sandbox_id);
		x->r->env->report->replaced_ms = x->now;
	}
	return rc;
}

/* A sandbox connected or given a timeout runs now, until now + timeout,
 * whatever the last list said. */
static void
note_running(sk_xctx *x, const char *id, int64_t timeout_ms)
{
	sk_sandbox_list *l = &x->fu->seen.sandboxes;

	for (size_t i = 0; i < l->len; i++) {
		if (sk_str_eq(l->items[i].id, id)) {
			l->items[i].state = SK_SANDBOX_RUNNING;
			if (timeout_ms > 0)
				l->items[i].end_ms = sk_now_ms() + timeout_ms;
		}
	}
}

static int
do_connect(sk_xctx *x, const sk_action *a, sk_error *err)
{
	sk_sandbox sb;
	bool resumed = false;
	int rc;

	memset(&sb, 0, sizeof(sb));
	rc = sk_sandbox_connect(x->p, id_of(x, a), a->timeout_ms, &sb, &resumed, err);
	if (rc == 0)
		sk_exec_note_deadline(x, id_of(x, a), a->timeout_ms, &sb);
	if (rc == 0 && sk_followup_notes(x->fu))
		note_running(x, id_of(x, a), a->timeout_ms);
	if (rc == 0 && sb.id != NULL) {
		sk_sandbox_dispose(&x->did.connected);
		sk_sandbox_copy(&x->did.connected, &sb);
	}
	sk_sandbox_dispose(&sb);
	if (rc == 0 && a->wake != SK_WAKE_NONE)
		sk_exec_event(x, "Normal", SK_REASON_WOKEN, "%s woke sandbox %s%s",
		        sk_wake_cause_phrase(a->wake), id_of(x, a),
		        resumed ? "" : " (it was already running)");
	else if (rc == 0 && resumed)
		sk_exec_event(x, "Normal", SK_REASON_RESUMED, "resumed sandbox %s", id_of(x, a));
	return rc;
}

static int
do_pause(sk_xctx *x, const sk_action *a, sk_error *err)
{
	int rc = sk_sandbox_pause(x->p, id_of(x, a), err);

	if (rc == SK_ECONFLICT)
		rc = 0; /* 409: already paused */
	if (rc == 0 && x->r->env->report != NULL) {
		free(x->r->env->report->paused_id);
		x->r->env->report->paused_id = sk_strdup(id_of(x, a));
		x->r->env->report->paused_at_ms = sk_now_ms();
	}
	if (rc == 0)
		sk_exec_event(
		        x, "Normal", SK_REASON_PAUSED_EVENT, "paused sandbox %s", id_of(x, a));
	return rc;
}

static int
do_bind(sk_xctx *x, const sk_action *a, sk_error *err)
{
	const char *id = id_of(x, a);

	if (id != NULL && !sk_str_eq(id, x->st.sandbox_id)) {
		free(x->st.sandbox_id);
		x->st.sandbox_id = sk_strdup(id);
	}
	return write_if_changed(x, err);
}

/* spec.storage.volume deletionPolicy Delete: the volume goes before the
 * finalizer (after the sandboxes: the plan kills them first). */
static int
delete_volume(sk_xctx *x, sk_error *err)
{
	const sk_userspace_spec *s = &x->cur->spec;
	char name[SK_VOLUME_NAME_MAX + 1];
	int rc;

	if (!sk_storage_wanted(s) || !sk_storage_deletes(s) || x->p == NULL ||
	        !sk_sandbox_has_volumes(x->p))
		return 0;
	sk_storage_volume_name(s, name);
	if ((rc = sk_sandbox_delete_volume(x->p, name, err)) == 0)
		sk_exec_event(x, "Normal", SK_REASON_VOLUME_DELETED,
		        "deleted volume %s (deletionPolicy Delete)", name);
	return rc;
}

static int
do_unfinalize(sk_xctx *x, sk_error *err)
{
	sk_userspace *fresh = NULL;
	const char *name = x->cur->meta.name;
	int rc = delete_volume(x, err);

	if (rc != 0)
		return rc;
	rc = sk_store_remove_finalizer(
	        x->r->env->store, name, x->cur->meta.resource_version, SK_FINALIZER, err);

	if (rc == SK_ECONFLICT && sk_store_get(x->r->env->store, name, &fresh, err) == 0) {
		if (fresh->meta.deletion_ms != 0 && sk_str_eq(fresh->meta.uid, x->cur->meta.uid))
			rc = sk_store_remove_finalizer(x->r->env->store, name,
			        fresh->meta.resource_version, SK_FINALIZER, err);
		sk_userspace_free(fresh);
	}
	if (rc == SK_ENOTFOUND)
		rc = 0;
	if (rc == 0) {
		x->did.removed = true;
		sk_exec_event(x, "Normal", SK_REASON_FINALIZER_REMOVED,
		        "cleanup done (deletionPolicy %s)",
		        x->cur->spec.deletion_policy == SK_DELETE_RETAIN ? "Retain" : "Delete");
	}
	return rc;
}

static int
do_set_timeout(sk_xctx *x, const sk_action *a, sk_error *err)
{
	int rc = sk_sandbox_set_timeout(x->p, id_of(x, a), a->timeout_ms, err);

	if (rc == 0)
		sk_exec_note_deadline(x, id_of(x, a), a->timeout_ms, NULL);
	if (rc == 0 && sk_followup_notes(x->fu))
		note_running(x, id_of(x, a), a->timeout_ms);
	return rc;
}

/* The sandbox id as this run knows it (a CONNECT's answer, else the
 * observation), else bare with only the id. */
static const sk_sandbox *
sandbox_of(const sk_xctx *x, const char *id, sk_sandbox *bare)
{
	if (x->did.connected.id != NULL && sk_str_eq(x->did.connected.id, id))
		return &x->did.connected;
	for (size_t i = 0; x->r->ob != NULL && i < x->r->ob->sandboxes.len; i++) {
		if (sk_str_eq(x->r->ob->sandboxes.items[i].id, id))
			return &x->r->ob->sandboxes.items[i];
	}
	memset(bare, 0, sizeof(*bare));
	bare->id = (char *)id;
	return bare;
}

/* envd /init with spec.env. The values never reach a log, an event or an
 * error message: only the variable count does. A backend without it
 * (SK_ENOTSUPPORTED) has nothing to re-assert. */
static int
do_init_env(sk_xctx *x, const sk_action *a, sk_error *err)
{
	const char *id = id_of(x, a);
	sk_sandbox bare;
	int rc = sk_sandbox_init_env(x->p, sandbox_of(x, id, &bare), &a->env, err);

	if (rc == SK_ENOTSUPPORTED) {
		sk_error_clear(err);
		return 0;
	}
	if (rc == 0)
		sk_exec_event(x, "Normal", SK_REASON_ENV_ASSERTED,
		        "re-asserted %zu environment variables of sandbox %s", a->env.len, id);
	return rc;
}

/* The workspace marker (plan_workspace.c). A backend without files has
 * none to write: nothing to check later either. */
static int
do_write_marker(sk_xctx *x, const sk_action *a, sk_error *err)
{
	const char *id = id_of(x, a);
	sk_sandbox bare;
	int rc = sk_marker_write(x->p, sandbox_of(x, id, &bare), x->cur, x->now, err);

	if (rc == SK_ENOTSUPPORTED) {
		sk_error_clear(err);
		return 0;
	}
	return rc;
}

/* spec.network on a live sandbox (E2B's PUT .../network). */
static int
do_set_network(sk_xctx *x, const sk_action *a, sk_error *err)
{
	char net[1024];
	int rc = sk_sandbox_set_network(x->p, id_of(x, a), &a->network, err);

	if (rc == 0) {
		sk_network_format(&a->network, net, sizeof(net));
		sk_exec_event(x, "Normal", SK_REASON_NETWORK_UPDATED,
		        "applied the network policy to sandbox %s: %s", id_of(x, a), net);
	}
	return rc;
}

/* spec.lifecycle.archive.method Snapshot: a provider snapshot, recorded in
 * x->st once the provider answered with its ID. */
static int
do_archive_snapshot(sk_xctx *x, const sk_action *a, sk_error *err)
{
	const char *id = id_of(x, a);
	int rc = sk_execute_snapshot_archive(x->p, id, x->cur, sk_now_ms(), &x->st, err);

	if (rc == 0)
		sk_exec_event(x, "Normal", SK_REASON_ARCHIVED,
		        "archived sandbox %s as snapshot %s (no file copied through the data "
		        "plane)",
		        id, x->st.archive.snapshot_id);
	return rc;
}

/* A snapshot archive's snapshot, restored from or with the space deleted. */
static int
do_delete_snapshot(sk_xctx *x, const sk_action *a, sk_error *err)
{
	int rc = sk_sandbox_delete_snapshot(x->p, a->snapshot_id, err);

	if (rc != 0)
		return rc;
	if (sk_str_eq(x->st.archive.snapshot_id, a->snapshot_id)) {
		free(x->st.archive.snapshot_id);
		x->st.archive.snapshot_id = NULL;
	}
	if (sk_strlist_remove(&x->st.snapshots.ids, a->snapshot_id)) {
		sk_exec_event(x, "Normal", SK_REASON_SNAPSHOT_DELETED,
		        "deleted snapshot %s (beyond spec.snapshots.keep)", a->snapshot_id);
		return 0;
	}
	sk_exec_event(x, "Normal", SK_REASON_SNAPSHOT_DELETED, "deleted snapshot %s (%s)",
	        a->snapshot_id,
	        x->cur->meta.deletion_ms != 0 ? "the space is deleted"
	                                      : "its sandbox was restored from it");
	return 0;
}

/* spec.snapshots.schedule: a snapshot of the keeper, its ID kept in x->st. */
static int
do_snapshot(sk_xctx *x, const sk_action *a, sk_error *err)
{
	const char *id = id_of(x, a);
	sk_snapshot snap;
	int rc = sk_sandbox_create_snapshot(x->p, id, NULL, &snap, err);

	if (rc == 0) {
		sk_strlist_add(&x->st.snapshots.ids, snap.id);
		x->st.snapshots.last_ms = sk_now_ms();
		sk_exec_event(x, "Normal", SK_REASON_SNAPSHOT_TAKEN,
		        "took snapshot %s of sandbox %s (spec.snapshots.schedule)", snap.id, id);
	}
	sk_snapshot_dispose(&snap);
	return rc;
}

/* The workspace into the archive; recorded in x->st only once verified. */
static int
do_archive(sk_xctx *x, const sk_action *a, sk_error *err)
{
	const char *id = id_of(x, a);
	sk_copy_report rep = { 0 };
	sk_sandbox bare;
	int rc;

	if (x->cur->spec.archive_method == SK_ARCHIVE_SNAPSHOT)
		return do_archive_snapshot(x, a, err);
	rc = sk_execute_archive(
	        x->r->env, x->p, sandbox_of(x, id, &bare), x->cur, sk_now_ms(), &x->st, &rep, err);

	if (rc == 0)
		sk_exec_event(x, "Normal", SK_REASON_ARCHIVED,
		        "archived the workspace of sandbox %s: %llu files, %llu bytes at "
		        "s3://%s/%s/ (verified)",
		        id, (unsigned long long)rep.files_total,
		        (unsigned long long)rep.bytes_total,
		        x->st.archive.bucket ? x->st.archive.bucket : "",
		        x->st.archive.key ? x->st.archive.key : "");
	sk_copy_report_free(&rep);
	return rc;
}

static int
do_purge(sk_xctx *x, sk_error *err)
{
	sk_archive_prune_report rep;
	int rc = sk_execute_purge(x->r->env, x->cur, &rep, err);

	if (rc == 0 && rep.deleted > 0)
		sk_exec_event(x, "Normal", SK_REASON_ARCHIVE_PURGED,
		        "deleted %zu archive generations (%llu objects) of the deleted space",
		        rep.deleted, (unsigned long long)rep.objects_deleted);
	return rc;
}

static int
do_restore(sk_xctx *x, const sk_action *a, sk_error *err)
{
	const char *id = id_of(x, a);
	sk_copy_report rep = { 0 };
	sk_sandbox bare;
	sk_restore_prune pruned = { 0 };
	int rc = sk_execute_restore(
	        x->r->env, x->p, sandbox_of(x, id, &bare), x->cur, &rep, &pruned, err);

	if (rc == 0)
		sk_exec_event(x, "Normal", SK_REASON_RESTORED,
		        "restored %llu files, %llu bytes into sandbox %s from s3://%s/%s/ "
		        "(verified against its manifest)",
		        (unsigned long long)rep.files_total, (unsigned long long)rep.bytes_total,
		        id, x->cur->status.archive.bucket ? x->cur->status.archive.bucket : "",
		        x->cur->status.archive.key ? x->cur->status.archive.key : "");
	if (rc == 0 && pruned.message[0] != '\0')
		sk_exec_event(x, pruned.failed ? "Warning" : "Normal", SK_REASON_ARCHIVE_PRUNED,
		        "%s", pruned.message);
	sk_copy_report_free(&rep);
	return rc;
}

static int
run_action(sk_xctx *x, const sk_action *a, sk_error *err)
{
	switch (a->type) {
	case SK_ACTION_CREATE: return sk_exec_create(x, a, err);
	case SK_ACTION_CONNECT: return do_connect(x, a, err);
	case SK_ACTION_PAUSE: return do_pause(x, a, err);
	case SK_ACTION_KILL: return do_kill(x, a, err);
	case SK_ACTION_SET_TIMEOUT: return do_set_timeout(x, a, err);
	case SK_ACTION_BIND: return do_bind(x, a, err);
	case SK_ACTION_REMOVE_FINALIZER: return do_unfinalize(x, err);
	case SK_ACTION_EVENT:
		sk_exec_event(x, a->event_type, a->reason, "%s", a->message);
		return 0;
	case SK_ACTION_INIT_ENV: return do_init_env(x, a, err);
	case SK_ACTION_WRITE_MARKER: return do_write_marker(x, a, err);
	case SK_ACTION_SET_NETWORK: return do_set_network(x, a, err);
	case SK_ACTION_ARCHIVE: return do_archive(x, a, err);
	case SK_ACTION_RESTORE: return do_restore(x, a, err);
	case SK_ACTION_PURGE_ARCHIVE: return do_purge(x, err);
	case SK_ACTION_DELETE_SNAPSHOT: return do_delete_snapshot(x, a, err);
	case SK_ACTION_SNAPSHOT: return do_snapshot(x, a, err);
	}
	return sk_error_set(err, SK_EINVALID, "unknown action %d", (int)a->type);
}

/* The planner maps where the run stopped onto the status; it is written now. */
static void
record_failure(sk_xctx *x, const sk_action *a, int rc, sk_error *err)
{
	sk_outcome o = { rc, a, x->did.created != NULL, err->http_status, NULL,
		x->did.create_unmarked };
	bool transient = sk_error_is_transient(rc);
	const char *reason = sk_failure_reason(a->type);
	sk_error e2;

	x->did.failed = true; /* written now (sk_when_written) */
	sk_followup_release(x->r->env, x->cur, x->fu); /* the events before it first */
	sk_error_prefix(err, "%s", sk_action_type_name(a->type));
	o.message = err->message;
	sk_exec_log(x, transient ? SK_LOG_WARN : SK_LOG_ERROR, "action failed",
	        "action=%s reason=%s transient=%s error=\"%s\"", sk_action_type_name(a->type),
	        reason, transient ? "true" : "false", err->message);
	sk_error_clear(&e2);
	if (x->did.removed || sk_exec_fence(x, "failure record", &e2) != 0)
		return; /* a fenced run writes nothing, not even an event */
	sk_plan_failure(x->r->planned, &o, x->now, &x->st);
	sk_exec_event(x, "Warning", reason, "%s", err->message);
	if (x->st.phase == SK_PHASE_CREATING && x->st.sandbox_id == NULL)
		sk_exec_write_status(x, &x->st, &e2); /* keeps the mark's time */
	else
		write_if_changed(x, &e2);
}

/* The plan restores or archives the workspace (the restore path keeps
 * its answer after the write). */
static bool
moves_files(const sk_plan_result *plan)
{
	for (size_t i = 0; i < plan->n_actions; i++) {
		if (plan->actions[i].type == SK_ACTION_RESTORE ||
		        plan->actions[i].type == SK_ACTION_ARCHIVE)
			return true;
	}
	return false;
}

/* env->started, when the follow-up found the started keeper healthy and
 * everything but the writes is done (reconcile.h): true when told. A fence
 * lost stops the run here as it would at the write. */
static bool
tell_started(sk_xctx *x)
{
	const sk_reconcile_env *env = x->r->env;
	sk_userspace *next;
	bool told = false;
	sk_error e;

	if (env->started == NULL || env->report == NULL || x->r->ob == NULL || x->did.failed ||
	        x->did.removed || x->st.phase != SK_PHASE_RUNNING || moves_files(x->r->plan))
		return false;
	sk_error_clear(&e);
	if (sk_exec_fence(x, "early answer", &e) != 0)
		return false;
	next = sk_userspace_dup(x->cur);
	sk_userspace_status_dispose(&next->status);
	sk_userspace_status_copy(&next->status, &x->st);
	sk_report_keeper(env, x->r->ob, next, x->now, true);
	if (env->report->healthy) {
		env->started(env->started_arg, next, env->report);
		told = true;
	}
	sk_userspace_free(next);
	return told;
}

/* The round's writes once its actions ran (rc: the first failure's code,
 * recorded). The follow-up of a handed-on round answers first, then writes
 * the events both rounds held, then the status; any other round writes its
 * status, or hands it on. */
static int
finish(sk_xctx *x, int rc, sk_error *err)
{
	bool follow_up = sk_followup_following(x->fu);

	if (rc == 0 && follow_up && tell_started(x))
		sk_followup_answered(x->fu);
	if (follow_up)
		sk_followup_release(x->r->env, x->cur, x->fu);
	if (rc == 0 && !x->did.fenced)
		rc = write_if_changed(x, err);
	if (!sk_followup_pending(x->fu))
		sk_followup_release(x->r->env, x->cur, x->fu); /* not handed on after all */
	return x->did.fenced ? SK_EUNAVAILABLE : rc;
}

/* Runs the plan's actions in order, up to the first failure (recorded). */
static int
run_plan(sk_xctx *x, sk_error *err)
{
	const sk_plan_result *plan = x->r->plan;
	int rc = 0;

	for (size_t i = 0; i < plan->n_actions && rc == 0; i++) {
		const sk_action *a = &plan->actions[i];
		if (sk_action_is_mutating(a) && x->p == NULL) {
			rc = sk_error_set(
			        err, SK_EINVALID, "no provider %s", x->r->stored->spec.provider);
			record_failure(x, a, rc, err);
			break;
		}
		if (a->type != SK_ACTION_EVENT &&
		        (rc = sk_exec_fence(x, sk_action_type_name(a->type), err)) != 0)
			break;
		rc = run_action(x, a, err);
		if (rc == 0 && a->type != SK_ACTION_INIT_ENV && a->type != SK_ACTION_WRITE_MARKER &&
		        a->type != SK_ACTION_ARCHIVE && a->type != SK_ACTION_RESTORE &&
		        a->type != SK_ACTION_DELETE_SNAPSHOT && a->type != SK_ACTION_SNAPSHOT &&
		        (sk_action_is_mutating(a) || a->type == SK_ACTION_SET_TIMEOUT))
			x->did.changed_provider = true;
		if (rc != 0)
			record_failure(x, a, rc, err);
		else if (a->type != SK_ACTION_EVENT)
			log_action(x, a);
	}
	return rc;
}

/* See round_int.h. */
int
sk_execute_round(const sk_round *r, sk_followup *fu, sk_round_result *out, sk_error *err)
{
	sk_xctx x;
	sk_error local;
	int rc;

	if (err == NULL)
		err = &local;
	sk_error_clear(err);
	out->updated = NULL;
	memset(&x, 0, sizeof(x));
	x.r = r;
	x.p = r->provider;
	x.fu = fu;
	x.cur = sk_userspace_dup(r->stored);
	x.now = r->env->now ? r->env->now() : sk_now_ms();
	sk_userspace_status_copy(&x.st, &r->plan->next);
	rc = finish(&x, run_plan(&x, err), err);
	if (rc == SK_ECONFLICT && x.did.conflicted != NULL) {
		out->updated = x.did.conflicted;
		x.did.conflicted = NULL;
	} else if (!x.did.removed) {
		out->updated = x.cur;
		x.cur = NULL;
	}
	sk_userspace_free(x.did.conflicted);
	sk_userspace_free(x.cur);
	sk_userspace_status_dispose(&x.st);
	sk_sandbox_dispose(&x.did.connected);
	free(x.did.created);
	return rc;
}

int
sk_execute(const sk_reconcile_env *env, const sk_userspace *us, const sk_plan_result *plan,
        sk_userspace **updated, sk_error *err)
{
	sk_round r = { .env = env,
		.provider = sk_round_provider(env, us),
		.kind = SK_ROUND_ONLY,
		.planned = us,
		.stored = us,
		.plan = plan };
	sk_round_result out = { 0 };
	int rc = sk_execute_round(&r, NULL, &out, err);

	if (updated != NULL)
		*updated = out.updated;
	else
		sk_userspace_free(out.updated);
	return rc;
}
