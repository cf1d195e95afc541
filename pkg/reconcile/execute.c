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

#include "reconcile_int.h"

/* When a round's status is written: the one place that decides (see
 * sk_status_write in reconcile_int.h). */
sk_status_write
sk_when_written(sk_round_kind kind, const sk_plan_result *plan, bool failed)
{
	if (kind == SK_ROUND_FOLLOW_UP)
		return SK_WRITE_ALWAYS;
	if (kind == SK_ROUND_FIRST && plan->follow_up && !failed)
		return SK_HAND_ON;
	return SK_WRITE_IF_CHANGED;
}

typedef struct sk_xctx {
	const sk_reconcile_env *env;
	sk_provider *p;
	const sk_userspace *planned; /* the object the plan was made from */
	const sk_observed *ob; /* what the plan was made from (NULL: unknown) */
	sk_userspace *cur; /* the stored object as last read or written */
	sk_userspace_status st; /* the status to write */
	char *created; /* sandbox made by this run's CREATE */
	/* this run's CREATE failed before its Creating mark, none stored before */
	bool create_unmarked;
	bool removed; /* finalizer removed: the object may be gone */
	int64_t now;
	sk_round_kind kind;
	const sk_plan_result *plan;
	bool failed; /* an action failed (record_failure) */
	sk_followup *fu; /* when the status may be handed on: the round's answers */
	/* Where the round's events are held back (see sk_followup.held);
	 * NULL: each is written at once. */
	sk_followup *hold;
	/* An action changed what the provider's list shows (create, resume,
	 * pause, kill, deadline): lastReconcileTime moves, so the next rounds
	 * trust a direct GET over a list older than that (observe's list_stale).
	 * A write of conditions or lastActivityTime alone does not move it. */
	bool changed_provider;
	bool fenced; /* may_act said no: nothing more is called or written */
	/* A write found the stored status changed by someone else: the object
	 * as stored then, handed to the caller instead of cur (whose cache may
	 * have missed that write: retrying from it would conflict again). */
	sk_userspace *conflicted;
	/* The last CONNECT's answer (its envd details), for the ARCHIVE after it. */
	sk_sandbox connected;
} sk_xctx;

static void xlog(const sk_xctx *x, sk_log_level lvl, const char *msg, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

static void
xlog(const sk_xctx *x, sk_log_level lvl, const char *msg, const char *fmt, ...)
{
	sk_buf b = SK_BUF_INIT(4096);
	va_list ap;

	if (x->env->log == NULL)
		return;
	sk_buf_printf(&b, "userspace=%s ", x->cur->meta.name);
	va_start(ap, fmt);
	sk_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	x->env->log(lvl, msg, b.data, x->env->log_payload);
	sk_buf_dispose(&b);
}

/* One event of us into the store; a failure is logged, not returned. */
static void
store_event(const sk_reconcile_env *env, const sk_userspace *us, const char *type,
        const char *reason, const char *msg)
{
	sk_buf b = SK_BUF_INIT(4096);
	sk_error e;

	sk_error_clear(&e);
	if (sk_store_event(env->store, us->meta.name, us->meta.uid, type, reason, msg, &e) == 0 ||
	        env->log == NULL)
		return;
	sk_buf_printf(&b, "userspace=%s reason=%s error=\"%s\"", us->meta.name, reason, e.message);
	env->log(SK_LOG_WARN, "event not recorded", b.data, env->log_payload);
	sk_buf_dispose(&b);
}

void
sk_release_events(const sk_reconcile_env *env, const sk_userspace *us, sk_followup *fu)
{
	for (size_t i = 0; fu != NULL && i < fu->n_held; i++) {
		sk_held_event *h = &fu->held[i];
		store_event(env, us, h->type, h->reason, h->message);
		free(h->type);
		free(h->reason);
		free(h->message);
	}
	if (fu != NULL) {
		free(fu->held);
		fu->held = NULL;
		fu->n_held = 0;
	}
}

/* The events held so far written now; the rest of the round's at once. */
static void
release(sk_xctx *x)
{
	sk_release_events(x->env, x->cur, x->hold);
	x->hold = NULL;
}

static void event(sk_xctx *x, const char *type, const char *reason, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

static void
event(sk_xctx *x, const char *type, const char *reason, const char *fmt, ...)
{
	sk_buf b = SK_BUF_INIT(4096);
	va_list ap;

	va_start(ap, fmt);
	sk_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	if (x->hold != NULL) {
		sk_followup *f = x->hold;
		f->held = sk_realloc(f->held, (f->n_held + 1) * sizeof(*f->held));
		f->held[f->n_held].type = sk_strdup(type);
		f->held[f->n_held].reason = sk_strdup(reason);
		f->held[f->n_held].message = sk_strdup(b.data ? b.data : "");
		f->n_held++;
	} else {
		store_event(x->env, x->cur, type, reason, b.data ? b.data : "");
	}
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

/* Fencing: SK_EUNAVAILABLE (and x->fenced, logged once) when the caller
 * may no longer act on this user before `what`; 0 when it may. */
static int
fence(sk_xctx *x, const char *what, sk_error *err)
{
	if (!x->fenced &&
	        (x->env->may_act == NULL ||
	                x->env->may_act(x->env->may_act_arg, x->cur->spec.user_id)))
		return 0;
	if (!x->fenced)
		xlog(x, SK_LOG_WARN, "fenced", "before=\"%s\" why=\"no valid lease on its shard\"",
		        what);
	x->fenced = true;
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
	int rc = fence(x, "status write", err);

	if (rc != 0)
		return rc;
	return sk_reconcile_write_status(x->env->store, &x->cur, st, err);
}

/* CAS write; on a conflict re-reads and retries once when the stored status
 * is still the one this run started from (someone edited spec or metadata). */
static int
write_status(sk_xctx *x, const sk_userspace_status *st, sk_error *err)
{
	sk_userspace *fresh = NULL;
	int rc = write_once(x, st, err);

	if (rc != SK_ECONFLICT)
		return rc;
	rc = sk_store_get(x->env->store, x->cur->meta.name, &fresh, err);
	if (rc != 0)
		return rc;
	if (!sk_str_eq(fresh->meta.uid, x->cur->meta.uid) ||
	        !sk_userspace_status_equal(&fresh->status, &x->cur->status)) {
		sk_userspace_free(x->conflicted);
		x->conflicted = fresh;
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
	sk_status_write w = sk_when_written(x->kind, x->plan, x->failed);

	if (x->removed || (w != SK_WRITE_ALWAYS && status_same(&x->st, &x->cur->status)))
		return 0;
	if (x->changed_provider && (x->st.phase != SK_PHASE_CREATING || x->st.sandbox_id != NULL))
		x->st.last_reconcile_ms = x->now;
	if (w == SK_HAND_ON) {
		sk_userspace_status_dispose(&x->fu->next);
		sk_userspace_status_copy(&x->fu->next, &x->st);
		x->fu->armed = true;
		return 0;
	}
	return write_status(x, &x->st, err);
}

static const char *
id_of(const sk_xctx *x, const sk_action *a)
{
	return a->sandbox_id ? a->sandbox_id : x->created;
}

/* "action=kill sandbox=ID why=Duplicate": why only for a kill, the one
 * action with a reason (no empty field at the end of the others' lines). */
static void
log_action(const sk_xctx *x, const sk_action *a)
{
	const char *id = id_of(x, a), *why = sk_kill_reason_name(a->why);

	if (why[0] != '\0')
		xlog(x, SK_LOG_INFO, "action", "action=%s sandbox=%s why=%s",
		        sk_action_type_name(a->type), id ? id : "-", why);
	else
		xlog(x, SK_LOG_INFO, "action", "action=%s sandbox=%s", sk_action_type_name(a->type),
		        id ? id : "-");
}

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

/* For the report: this run set id's deadline (timeout_ms from now), and
 * the provider's answer (sb, may be NULL) named its envd details. */
static void
note_deadline(sk_xctx *x, const char *id, int64_t timeout_ms, const sk_sandbox *sb)
{
	sk_reconcile_report *r = x->env->report;
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
		event(x, "Normal", SK_REASON_VOLUME_MOUNTED, "volume %s (%s) mounted at %s", name,
		        id, next.mount_path);
	else if (!sk_storage_status_equal(st, &next))
		event(x, "Warning", SK_REASON_VOLUME_UNSUPPORTED,
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
		event(x, "Warning", SK_REASON_FORK_UNSUPPORTED,
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

static int
do_create(sk_xctx *x, const sk_action *a, sk_error *err)
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
	rc = write_status(x, &mark, err);
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
		note_deadline(x, sb.id, a->timeout_ms, &sb);
		if (sb.end_ms > 0 && x->env->report != NULL)
			x->env->report->set_deadline_ms = sb.end_ms;
		free(x->created);
		x->created = sk_strdup(sb.id);
		free(x->st.sandbox_id);
		x->st.sandbox_id = sk_strdup(sb.id);
		if (src_id != NULL)
			event(x, "Normal", SK_REASON_FORKED,
			        "created sandbox %s, a fork of sandbox %s of userspace %s", sb.id,
			        src_id, a->fork_from);
		else
			event(x, "Normal", SK_REASON_CREATED, "created sandbox %s (template %s)",
			        sb.id, a->template_id);
	}
	sk_sandbox_dispose(&sb);
	free(vm.path);
	free(src_id);
	return rc;
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
	if (rc == 0 && x->fu != NULL)
		note_killed(x, a->sandbox_id);
	if (rc == 0)
		event(x, "Normal", kill_event(a->why), "killed sandbox %s (%s)", a->sandbox_id,
		        sk_kill_reason_name(a->why));
	if (rc == 0 && a->why == SK_KILL_REPLACE && x->env->report != NULL) {
		free(x->env->report->replaced_id);
		x->env->report->replaced_id = sk_strdup(a->sandbox_id);
		x->env->report->replaced_ms = x->now;
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
		note_deadline(x, id_of(x, a), a->timeout_ms, &sb);
	if (rc == 0 && x->fu != NULL)
		note_running(x, id_of(x, a), a->timeout_ms);
	if (rc == 0 && sb.id != NULL) {
		sk_sandbox_dispose(&x->connected);
		sk_sandbox_copy(&x->connected, &sb);
	}
	sk_sandbox_dispose(&sb);
	if (rc == 0 && a->wake != SK_WAKE_NONE)
		event(x, "Normal", SK_REASON_WOKEN, "%s woke sandbox %s%s",
		        sk_wake_cause_phrase(a->wake), id_of(x, a),
		        resumed ? "" : " (it was already running)");
	else if (rc == 0 && resumed)
		event(x, "Normal", SK_REASON_RESUMED, "resumed sandbox %s", id_of(x, a));
	return rc;
}

static int
do_pause(sk_xctx *x, const sk_action *a, sk_error *err)
{
	int rc = sk_sandbox_pause(x->p, id_of(x, a), err);

	if (rc == SK_ECONFLICT)
		rc = 0; /* 409: already paused */
	if (rc == 0 && x->env->report != NULL) {
		free(x->env->report->paused_id);
		x->env->report->paused_id = sk_strdup(id_of(x, a));
		x->env->report->paused_at_ms = sk_now_ms();
	}
	if (rc == 0)
		event(x, "Normal", SK_REASON_PAUSED_EVENT, "paused sandbox %s", id_of(x, a));
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
		event(x, "Normal", SK_REASON_VOLUME_DELETED,
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
	        x->env->store, name, x->cur->meta.resource_version, SK_FINALIZER, err);

	if (rc == SK_ECONFLICT && sk_store_get(x->env->store, name, &fresh, err) == 0) {
		if (fresh->meta.deletion_ms != 0 && sk_str_eq(fresh->meta.uid, x->cur->meta.uid))
			rc = sk_store_remove_finalizer(x->env->store, name,
			        fresh->meta.resource_version, SK_FINALIZER, err);
		sk_userspace_free(fresh);
	}
	if (rc == SK_ENOTFOUND)
		rc = 0;
	if (rc == 0) {
		x->removed = true;
		event(x, "Normal", SK_REASON_FINALIZER_REMOVED, "cleanup done (deletionPolicy %s)",
		        x->cur->spec.deletion_policy == SK_DELETE_RETAIN ? "Retain" : "Delete");
	}
	return rc;
}

static int
do_set_timeout(sk_xctx *x, const sk_action *a, sk_error *err)
{
	int rc = sk_sandbox_set_timeout(x->p, id_of(x, a), a->timeout_ms, err);

	if (rc == 0)
		note_deadline(x, id_of(x, a), a->timeout_ms, NULL);
	if (rc == 0 && x->fu != NULL)
		note_running(x, id_of(x, a), a->timeout_ms);
	return rc;
}

/* The sandbox id as this run knows it (a CONNECT's answer, else the
 * observation), else bare with only the id. */
static const sk_sandbox *
sandbox_of(const sk_xctx *x, const char *id, sk_sandbox *bare)
{
	if (x->connected.id != NULL && sk_str_eq(x->connected.id, id))
		return &x->connected;
	for (size_t i = 0; x->ob != NULL && i < x->ob->sandboxes.len; i++) {
		if (sk_str_eq(x->ob->sandboxes.items[i].id, id))
			return &x->ob->sandboxes.items[i];
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
		event(x, "Normal", SK_REASON_ENV_ASSERTED,
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
		event(x, "Normal", SK_REASON_NETWORK_UPDATED,
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
		event(x, "Normal", SK_REASON_ARCHIVED,
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
		event(x, "Normal", SK_REASON_SNAPSHOT_DELETED,
		        "deleted snapshot %s (beyond spec.snapshots.keep)", a->snapshot_id);
		return 0;
	}
	event(x, "Normal", SK_REASON_SNAPSHOT_DELETED, "deleted snapshot %s (%s)", a->snapshot_id,
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
		event(x, "Normal", SK_REASON_SNAPSHOT_TAKEN,
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
	        x->env, x->p, sandbox_of(x, id, &bare), x->cur, sk_now_ms(), &x->st, &rep, err);

	if (rc == 0)
		event(x, "Normal", SK_REASON_ARCHIVED,
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
	int rc = sk_execute_purge(x->env, x->cur, &rep, err);

	if (rc == 0 && rep.deleted > 0)
		event(x, "Normal", SK_REASON_ARCHIVE_PURGED,
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
	char note[512] = "";
	int rc = sk_execute_restore(
	        x->env, x->p, sandbox_of(x, id, &bare), x->cur, &rep, note, sizeof(note), err);

	if (rc == 0)
		event(x, "Normal", SK_REASON_RESTORED,
		        "restored %llu files, %llu bytes into sandbox %s from s3://%s/%s/ "
		        "(verified against its manifest)",
		        (unsigned long long)rep.files_total, (unsigned long long)rep.bytes_total,
		        id, x->cur->status.archive.bucket ? x->cur->status.archive.bucket : "",
		        x->cur->status.archive.key ? x->cur->status.archive.key : "");
	if (rc == 0 && note[0] != '\0')
		event(x, strncmp(note, "pruned", 6) == 0 ? "Normal" : "Warning",
		        SK_REASON_ARCHIVE_PRUNED, "%s", note);
	sk_copy_report_free(&rep);
	return rc;
}

static int
run_action(sk_xctx *x, const sk_action *a, sk_error *err)
{
	switch (a->type) {
	case SK_ACTION_CREATE: return do_create(x, a, err);
	case SK_ACTION_CONNECT: return do_connect(x, a, err);
	case SK_ACTION_PAUSE: return do_pause(x, a, err);
	case SK_ACTION_KILL: return do_kill(x, a, err);
	case SK_ACTION_SET_TIMEOUT: return do_set_timeout(x, a, err);
	case SK_ACTION_BIND: return do_bind(x, a, err);
	case SK_ACTION_REMOVE_FINALIZER: return do_unfinalize(x, err);
	case SK_ACTION_EVENT: event(x, a->event_type, a->reason, "%s", a->message); return 0;
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
	sk_outcome o = { rc, a, x->created != NULL, err->http_status, NULL, x->create_unmarked };
	bool transient = sk_error_is_transient(rc);
	const char *reason = sk_failure_reason(a->type);
	sk_error e2;

	x->failed = true; /* written now (sk_when_written) */
	release(x); /* the events before it first */
	sk_error_prefix(err, "%s", sk_action_type_name(a->type));
	o.message = err->message;
	xlog(x, transient ? SK_LOG_WARN : SK_LOG_ERROR, "action failed",
	        "action=%s reason=%s transient=%s error=\"%s\"", sk_action_type_name(a->type),
	        reason, transient ? "true" : "false", err->message);
	sk_error_clear(&e2);
	if (x->removed || fence(x, "failure record", &e2) != 0)
		return; /* a fenced run writes nothing, not even an event */
	sk_plan_failure(x->planned, &o, x->now, &x->st);
	event(x, "Warning", reason, "%s", err->message);
	if (x->st.phase == SK_PHASE_CREATING && x->st.sandbox_id == NULL)
		write_status(x, &x->st, &e2); /* keeps the mark's time */
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
 * everything but the writes is done (reconcile.h); a fence lost stops the
 * run here as it would at the write. */
static void
tell_started(sk_xctx *x)
{
	const sk_reconcile_env *env = x->env;
	sk_userspace *next;
	sk_error e;

	if (env->started == NULL || env->report == NULL || x->ob == NULL || x->failed ||
	        x->removed || x->st.phase != SK_PHASE_RUNNING || moves_files(x->plan))
		return;
	sk_error_clear(&e);
	if (fence(x, "early answer", &e) != 0)
		return;
	next = sk_userspace_dup(x->cur);
	sk_userspace_status_dispose(&next->status);
	sk_userspace_status_copy(&next->status, &x->st);
	sk_report_keeper(env, x->ob, next, x->now, true);
	if (env->report->healthy)
		env->started(env->started_arg, next, env->report);
	sk_userspace_free(next);
}

/* See reconcile_int.h. */
int
sk_execute_round(const sk_reconcile_env *env, const sk_userspace *us, const sk_userspace *planned,
        const sk_observed *ob, const sk_plan_result *plan, sk_round_kind kind, sk_followup *fu,
        sk_userspace **updated, sk_error *err)
{
	sk_xctx x;
	sk_error local;
	int rc = 0;

	if (err == NULL)
		err = &local;
	sk_error_clear(err);
	memset(&x, 0, sizeof(x));
	x.fu = kind == SK_ROUND_FOLLOW_UP ? NULL : fu;
	x.hold = fu;
	x.kind = kind;
	x.plan = plan;
	x.env = env;
	x.planned = planned;
	x.ob = ob;
	x.p = env->provider;
	if (env->provider_for != NULL) {
		sk_provider *p = env->provider_for(sk_bound_provider(us), env->provider_arg);
		if (p != NULL)
			x.p = p;
	}
	x.cur = sk_userspace_dup(us);
	x.now = env->now ? env->now() : sk_now_ms();
	sk_userspace_status_copy(&x.st, &plan->next);
	for (size_t i = 0; i < plan->n_actions && rc == 0; i++) {
		const sk_action *a = &plan->actions[i];
		if (sk_action_is_mutating(a) && x.p == NULL) {
			rc = sk_error_set(err, SK_EINVALID, "no provider %s", us->spec.provider);
			record_failure(&x, a, rc, err);
			break;
		}
		if (a->type != SK_ACTION_EVENT &&
		        (rc = fence(&x, sk_action_type_name(a->type), err)) != 0)
			break;
		rc = run_action(&x, a, err);
		if (rc == 0 && a->type != SK_ACTION_INIT_ENV && a->type != SK_ACTION_WRITE_MARKER &&
		        a->type != SK_ACTION_ARCHIVE && a->type != SK_ACTION_RESTORE &&
		        a->type != SK_ACTION_DELETE_SNAPSHOT && a->type != SK_ACTION_SNAPSHOT &&
		        (sk_action_is_mutating(a) || a->type == SK_ACTION_SET_TIMEOUT))
			x.changed_provider = true;
		if (rc != 0)
			record_failure(&x, a, rc, err);
		else if (a->type != SK_ACTION_EVENT)
			log_action(&x, a);
	}
	if (rc == 0 && kind == SK_ROUND_FOLLOW_UP)
		tell_started(&x); /* answer first: before the event and status writes */
	if (kind == SK_ROUND_FOLLOW_UP)
		release(&x);
	if (rc == 0 && !x.fenced)
		rc = write_if_changed(&x, err);
	if (x.fu == NULL || !x.fu->armed)
		release(&x); /* not handed on after all */
	if (x.fenced)
		rc = SK_EUNAVAILABLE;
	if (updated != NULL && rc == SK_ECONFLICT && x.conflicted != NULL) {
		*updated = x.conflicted;
		x.conflicted = NULL;
	} else if (updated != NULL) {
		*updated = x.removed ? NULL : x.cur;
		if (!x.removed)
			x.cur = NULL;
	}
	sk_userspace_free(x.conflicted);
	sk_userspace_free(x.cur);
	sk_userspace_status_dispose(&x.st);
	sk_sandbox_dispose(&x.connected);
	free(x.created);
	return rc;
}

int
sk_execute(const sk_reconcile_env *env, const sk_userspace *us, const sk_plan_result *plan,
        sk_userspace **updated, sk_error *err)
{
	return sk_execute_round(env, us, us, NULL, plan, SK_ROUND_ONLY, NULL, updated, err);
}
