/*
 * reconcile/migrate: the migration round (see reconcile.h and
 * migrate_plan.c): observes the source and the target at their own
 * providers, asks sk_plan_migration for the step, writes its mark into
 * status.migration (compare-and-swap), runs it through the providers and
 * the copy engine, and writes where it got to. Progress of a copy is
 * written at most once per progress_every_ms.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../api/names.h"
#include "../api/quantity.h"
#include "reconcile_int.h"

typedef struct mx {
	const sk_reconcile_env *env;
	sk_userspace *cur; /* the stored object as last read or written */
	sk_provider *src, *dst;
	const sk_migration_observed *ob;
	int64_t now;
	int64_t last_progress_ms; /* monotonic */
	int progress_rc; /* the first failed progress write */
} mx;

static sk_provider *
provider_named(const sk_reconcile_env *env, const char *name)
{
	sk_provider *p = NULL;

	if (env->provider_for != NULL)
		p = env->provider_for(name, env->provider_arg);
	if (p == NULL && env->provider_for == NULL)
		p = env->provider;
	return p;
}

static void mevent(mx *x, const char *type, const char *reason, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

static void
vmevent(mx *x, const char *type, const char *reason, const char *fmt, va_list ap)
{
	char msg[1024];
	sk_error e;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	sk_error_clear(&e);
	sk_store_event(x->env->store, x->cur->meta.name, x->cur->meta.uid, type, reason, msg, &e);
	if (x->env->log != NULL)
		x->env->log(SK_LOG_INFO, "migration", msg, x->env->log_payload);
}

static void
mevent(mx *x, const char *type, const char *reason, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmevent(x, type, reason, fmt, ap);
	va_end(ap);
}

static void
observe_metric(mx *x, const char *what, int64_t n)
{
	const sk_migration_status *m = &x->cur->status.migration;

	if (x->env->migration_observer != NULL)
		x->env->migration_observer(x->env->migration_arg, m->target.provider, what, n);
}

/* Writes st over the stored object (compare-and-swap). */
static int
mwrite(mx *x, const sk_userspace_status *st, sk_error *err)
{
	return sk_reconcile_write_status(x->env->store, &x->cur, st, err);
}

/* The stored status with status.migration replaced by m (and phase, when not NONE). */
static int
write_migration(mx *x, const sk_migration_status *m, sk_phase phase, sk_error *err)
{
	sk_userspace_status st;
	int rc;

	if (sk_migration_equal(m, &x->cur->status.migration) &&
	        (phase == SK_PHASE_NONE || phase == x->cur->status.phase))
		return 0;
	sk_userspace_status_copy(&st, &x->cur->status);
	sk_migration_dispose(&st.migration);
	sk_migration_copy(&st.migration, m);
	if (phase != SK_PHASE_NONE)
		st.phase = phase;
	rc = mwrite(x, &st, err);
	sk_userspace_status_dispose(&st);
	return rc;
}

/* A step done: m (disposed here) moves to next at x->now, the event is
 * recorded, then the status is written (phase Migrating). */
static int advance(mx *x, sk_migration_status *m, sk_migration_phase next, sk_error *err,
        const char *reason, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static int
advance(mx *x, sk_migration_status *m, sk_migration_phase next, sk_error *err, const char *reason,
        const char *fmt, ...)
{
	va_list ap;
	int rc;

	m->phase = next;
	m->step_ms = x->now;
	va_start(ap, fmt);
	vmevent(x, "Normal", reason, fmt, ap);
	va_end(ap);
	rc = write_migration(x, m, SK_PHASE_MIGRATING, err);
	sk_migration_dispose(m);
	return rc;
}

/* ---- observe ---- */

static void
get_one(sk_provider *p, const char *id, sk_lookup *out, sk_sandbox *sb, sk_error *err)
{
	int rc = sk_sandbox_get(p, id, sb, err);

	if (rc == 0 && sb->state != SK_SANDBOX_GONE)
		*out = SK_LOOKUP_FOUND;
	else if (rc == 0 || rc == SK_ENOTFOUND)
		*out = SK_LOOKUP_NOT_FOUND;
	else
		*out = SK_LOOKUP_ERROR;
	if (*out != SK_LOOKUP_ERROR)
		sk_error_clear(err);
}

/* The newest sandbox of the user at the target provider that carries this
 * migration's marker (a create whose answer was lost). */
static void
find_marked(mx *x, sk_migration_observed *ob)
{
	const sk_migration_status *m = &x->cur->status.migration;
	sk_kvlist match = { 0 };
	sk_sandbox_list l = { 0 };
	char *uid = sk_reconcile_meta_value(x->cur->spec.user_id), mark[32];
	const sk_sandbox *best = NULL;

	snprintf(mark, sizeof(mark), "%lld", (long long)m->start_ms);
	sk_kvlist_set(&match, SK_META_USER_ID, uid);
	sk_kvlist_set(&match, SK_META_MANAGED_BY, SK_MANAGED_BY_VALUE);
	ob->target_lookup_ms = sk_now_ms();
	if (sk_sandbox_list_all(x->dst, &match, &l, &ob->error) != 0) {
		ob->target = SK_LOOKUP_ERROR;
		goto done;
	}
	for (size_t i = 0; i < l.len; i++) {
		const sk_sandbox *sb = &l.items[i];
		if (sb->state != SK_SANDBOX_GONE &&
		        sk_str_eq(sk_kvlist_get(&sb->metadata, SK_META_MIGRATION), mark) &&
		        (best == NULL || sb->started_ms > best->started_ms))
			best = sb;
	}
	ob->target = best ? SK_LOOKUP_FOUND : SK_LOOKUP_NOT_FOUND;
	if (best != NULL)
		sk_sandbox_copy(&ob->target_sb, best);
done:
	sk_sandbox_list_dispose(&l);
	sk_kvlist_dispose(&match);
	free(uid);
}

static void
observe(mx *x, sk_migration_observed *ob)
{
	const sk_migration_status *m = &x->cur->status.migration;

	ob->activity_ms = x->env->activity_ms;
	ob->providers_known = x->src != NULL && x->dst != NULL;
	if (!ob->providers_known)
		return;
	if (m->source.sandbox_id != NULL && m->phase != SK_MIG_CREATING)
		get_one(x->src, m->source.sandbox_id, &ob->source, &ob->source_sb, &ob->error);
	if (m->phase < SK_MIG_CREATING || m->phase > SK_MIG_SWITCHING)
		return;
	if (m->target.sandbox_id != NULL) {
		ob->target_lookup_ms = sk_now_ms();
		get_one(x->dst, m->target.sandbox_id, &ob->target, &ob->target_sb, &ob->error);
	} else if (m->phase == SK_MIG_CREATING) {
		find_marked(x, ob);
	}
}

/* ---- steps ---- */

static int
create_target(mx *x, sk_error *err)
{
	const sk_userspace *us = x->cur;
	sk_migration_status m;
	sk_create_request req;
	sk_kvlist meta = { 0 };
	sk_sandbox sb;
	char mark[32], volume[SK_VOLUME_NAME_MAX + 1];
	bool restore = sk_migration_is_restore(&us->status.migration);
	int rc;

	memset(&sb, 0, sizeof(sb));
	snprintf(mark, sizeof(mark), "%lld", (long long)us->status.migration.start_ms);
	sk_reconcile_create_request(us, &x->env->opts, &meta, &req);
	sk_kvlist_set(&meta, SK_META_MIGRATION, mark);
	if (restore)
		sk_kvlist_set(&meta, SK_META_SNAPSHOT, us->status.migration.target.template_id);
	/* the target mounts the space's volume too (made there when missing) */
	if (sk_storage_wanted(&us->spec) && sk_sandbox_has_volumes(x->dst)) {
		char *id = NULL;
		sk_storage_volume_name(&us->spec, volume);
		if ((rc = sk_sandbox_ensure_volume(x->dst, volume, &id, err)) != 0) {
			sk_kvlist_dispose(&meta);
			return rc;
		}
		free(id);
		req.volume_name = volume;
		req.volume_mount = sk_storage_mount_path(&us->spec);
	}
	if (restore)
		rc = sk_sandbox_create_from_snapshot(
		        x->dst, &req, us->status.migration.target.template_id, &sb, err);
	else
		rc = sk_sandbox_create(x->dst, &req, &sb, err);
	if (rc == 0) {
		sk_migration_copy(&m, &us->status.migration);
		free(m.target.sandbox_id);
		m.target.sandbox_id = sk_strdup(sb.id);
		rc = advance(x, &m, restore ? SK_MIG_VERIFYING : SK_MIG_COPYING, err,
		        SK_REASON_MIGRATION_TARGET_CREATED,
		        "migration: created target sandbox %s at provider %s (%s %s)", sb.id,
		        m.target.provider, restore ? "snapshot" : "template",
		        restore ? m.target.template_id : req.template_id);
	}
	sk_sandbox_dispose(&sb);
	sk_kvlist_dispose(&meta);
	return rc;
}

/* The source must run for its data plane to answer (a paused or Idle keeper). */
static int
wake_source(mx *x, sk_error *err)
{
	sk_sandbox sb;
	bool resumed = false;
	int rc;

	if (x->ob->source_sb.state != SK_SANDBOX_PAUSED)
		return 0;
	memset(&sb, 0, sizeof(sb));
	rc = sk_sandbox_connect(x->src, x->ob->source_sb.id, sk_plan_ttl(x->cur, &x->env->opts),
	        &sb, &resumed, err);
	sk_sandbox_dispose(&sb);
	if (rc == 0 && resumed)
		mevent(x, "Normal", SK_REASON_WOKEN, "%s woke sandbox %s",
		        sk_wake_cause_phrase(SK_WAKE_MIGRATION), x->ob->source_sb.id);
	return rc;
}

/* Wakes the source and fills the options of a copy or verify; rep is zeroed;
 * paths is a copy of spec.workspace.paths (a progress write replaces x->cur
 * during the copy), caller disposes. */
static int
copy_begin(mx *x, sk_copy_options *o, sk_copy_report *rep, sk_strlist *paths, sk_error *err)
{
	const sk_userspace_spec *s;
	int64_t max = 0;
	int rc;

	memset(rep, 0, sizeof(*rep));
	rc = wake_source(x, err);
	if (rc != 0)
		return rc;
	s = &x->cur->spec;
	memset(o, 0, sizeof(*o));
	sk_strlist_copy(paths, &s->workspace_paths);
	o->paths = (const char *const *)paths->items;
	o->npaths = paths->len;
	if (s->max_bytes != NULL)
		sk_quantity_parse(s->max_bytes, &max);
	o->max_bytes = (uint64_t)max;
	o->chunk_bytes = x->env->copy_chunk_bytes;
	o->attempts = x->env->copy_attempts;
	return 0;
}

static void
counts_from(sk_migration_status *m, const sk_copy_report *r)
{
	m->files_done = (int64_t)r->files_done;
	m->files_total = (int64_t)r->files_total;
	m->bytes_done = (int64_t)r->bytes_done;
	m->bytes_total = (int64_t)r->bytes_total;
}

/* After each file: status.migration's counts, at most once per progress_every_ms. */
static void
progress(void *payload, const sk_copy_report *r)
{
	mx *x = payload;
	int64_t every = x->env->progress_every_ms > 0 ? x->env->progress_every_ms : 1000;
	int64_t t = sk_monotonic_ms();
	sk_migration_status m;
	sk_error e;

	if (t - x->last_progress_ms < every || x->progress_rc != 0)
		return;
	x->last_progress_ms = t;
	sk_migration_copy(&m, &x->cur->status.migration);
	counts_from(&m, r);
	sk_error_clear(&e);
	x->progress_rc = write_migration(x, &m, SK_PHASE_NONE, &e);
	sk_migration_dispose(&m);
}

static int
copy_step(mx *x, sk_error *err)
{
	sk_copy_options o;
	sk_copy_report rep;
	sk_migration_status m;
	sk_strlist paths = { 0 };
	int rc = copy_begin(x, &o, &rep, &paths, err);

	if (rc != 0)
		return rc;
	x->last_progress_ms = sk_monotonic_ms();
	rc = sk_workspace_copy(
	        x->src, &x->ob->source_sb, x->dst, &x->ob->target_sb, &o, progress, x, &rep, err);
	if (rc == 0 && x->progress_rc != 0)
		rc = sk_error_set(err, x->progress_rc, "writing the copy's progress failed");
	if (rc == 0) {
		sk_migration_copy(&m, &x->cur->status.migration);
		counts_from(&m, &rep);
		observe_metric(x, "bytes", (int64_t)rep.bytes_done);
		rc = advance(x, &m, SK_MIG_VERIFYING, err, SK_REASON_MIGRATION_COPIED,
		        "migration: copied %llu files, %llu bytes to %s (%zu special files "
		        "skipped)",
		        (unsigned long long)rep.files_done, (unsigned long long)rep.bytes_done,
		        m.target.sandbox_id, rep.skipped.len);
	}
	sk_copy_report_free(&rep);
	sk_strlist_dispose(&paths);
	return rc;
}

/* A restore's target answers its data-plane probe before it is bound (and
 * so before the source retires); a target that does not, aborts. */
static int
probe_target(mx *x, sk_error *err)
{
	sk_health h = SK_HEALTH_ERROR;
	int status = 0, rc;
	sk_migration_status m;

	rc = sk_sandbox_probe_health(x->dst, &x->ob->target_sb, &h, &status, err);
	if (rc != 0)
		return rc;
	if (h != SK_HEALTH_OK)
		return sk_error_set(err, h == SK_HEALTH_UNREACHABLE ? SK_ETRANSIENT : SK_ETERMINAL,
		        "the restored sandbox %s answered its probe with HTTP %d",
		        x->ob->target_sb.id, status);
	sk_migration_copy(&m, &x->cur->status.migration);
	return advance(x, &m, SK_MIG_SWITCHING, err, SK_REASON_MIGRATION_VERIFIED,
	        "restore: sandbox %s from snapshot %s answered its probe", m.target.sandbox_id,
	        m.target.template_id);
}

static int
verify_step(mx *x, sk_error *err)
{
	sk_copy_options o;
	sk_copy_report rep;
	sk_migration_status m;
	sk_strlist paths = { 0 };
	int rc;

	if (sk_migration_is_restore(&x->cur->status.migration))
		return probe_target(x, err);
	if ((rc = copy_begin(x, &o, &rep, &paths, err)) != 0)
		return rc;
	rc = sk_workspace_verify(
	        x->src, &x->ob->source_sb, x->dst, &x->ob->target_sb, &o, &rep, err);
	if (rc == SK_ECONFLICT && rep.mismatch != NULL)
		rc = sk_error_set(err, SK_ETERMINAL, "verify: %s", rep.mismatch);
	if (rc == 0) {
		sk_migration_copy(&m, &x->cur->status.migration);
		rc = advance(x, &m, SK_MIG_SWITCHING, err, SK_REASON_MIGRATION_VERIFIED,
		        "migration: %llu files, %llu bytes identical at %s (SHA-256)",
		        (unsigned long long)rep.files_total, (unsigned long long)rep.bytes_total,
		        m.target.sandbox_id);
	}
	sk_copy_report_free(&rep);
	sk_strlist_dispose(&paths);
	return rc;
}

/* One write moves the binding: never two sandboxes bound. */
static int
switch_step(mx *x, sk_error *err)
{
	sk_userspace_status st;
	sk_migration_status *m;
	int rc;

	sk_userspace_status_copy(&st, &x->cur->status);
	m = &st.migration;
	free(st.sandbox_id);
	st.sandbox_id = sk_strdup(m->target.sandbox_id);
	free(st.provider);
	st.provider = sk_strdup(m->target.provider);
	st.phase = SK_PHASE_RUNNING;
	m->phase = SK_MIG_RETIRING;
	m->step_ms = x->now;
	rc = mwrite(x, &st, err);
	if (rc == 0)
		mevent(x, "Normal", SK_REASON_MIGRATION_SWITCHED,
		        "migration: bound to %s at provider %s (was %s at %s)",
		        m->target.sandbox_id, m->target.provider, m->source.sandbox_id,
		        m->source.provider);
	sk_userspace_status_dispose(&st);
	return rc;
}

static int
pause_source(mx *x, sk_error *err)
{
	const char *id = x->cur->status.migration.source.sandbox_id;
	int rc = sk_sandbox_pause(x->src, id, err);

	if (rc == SK_ECONFLICT || rc == SK_ENOTFOUND)
		rc = 0;
	if (rc == 0)
		mevent(x, "Normal", SK_REASON_MIGRATION_SOURCE_PAUSED,
		        "migration: source sandbox %s paused, kept for %lld s", id,
		        (long long)(x->cur->spec.keep_source_ms / 1000));
	return rc;
}

static int
retire_source(mx *x, sk_error *err)
{
	sk_migration_status m;
	bool retain = x->cur->spec.source_policy == SK_DELETE_RETAIN;
	/* a copy: the write below replaces x->cur */
	char *id = sk_strdup(x->cur->status.migration.source.sandbox_id);
	int rc = 0;

	if (!retain && x->src != NULL && id != NULL) {
		rc = sk_sandbox_kill(x->src, id, err);
		if (rc == SK_ENOTFOUND)
			rc = 0;
	}
	if (rc != 0) {
		free(id);
		return rc;
	}
	sk_migration_copy(&m, &x->cur->status.migration);
	m.phase = SK_MIG_DONE;
	m.step_ms = x->now;
	rc = write_migration(x, &m, SK_PHASE_NONE, err);
	if (rc == 0) {
		mevent(x, "Normal", SK_REASON_MIGRATION_DONE,
		        "migration done: source sandbox %s %s", id ? id : "-",
		        retain ? "kept paused (sourcePolicy Retain)" : "deleted");
		observe_metric(x, "completed", 0);
	}
	sk_migration_dispose(&m);
	free(id);
	return rc;
}

/* The reason first (so a crash finishes the abort), then the target, then Aborted. */
static int
abort_step(mx *x, const sk_migration_plan *plan, sk_error *err)
{
	sk_migration_status m;
	const char *target;
	int rc = write_migration(x, &plan->next, SK_PHASE_NONE, err);

	if (rc != 0)
		return rc;
	target = x->cur->status.migration.target.sandbox_id;
	if (target != NULL && x->dst != NULL) {
		rc = sk_sandbox_kill(x->dst, target, err);
		if (rc == SK_ENOTFOUND)
			rc = 0;
		if (rc != 0)
			return rc;
	}
	sk_migration_copy(&m, &x->cur->status.migration);
	m.phase = SK_MIG_ABORTED;
	m.step_ms = x->now;
	rc = write_migration(x, &m, SK_PHASE_PENDING, err);
	if (rc == 0) {
		mevent(x, "Warning", SK_REASON_MIGRATION_ABORTED,
		        "migration aborted, still bound to %s: %s", x->cur->status.sandbox_id,
		        plan->abort_reason);
		observe_metric(x, "aborted", 0);
	}
	sk_migration_dispose(&m);
	return rc;
}

static int
run_step(mx *x, const sk_migration_plan *plan, sk_error *err)
{
	switch (plan->step) {
	case SK_MSTEP_NONE: return 0;
	case SK_MSTEP_CREATE_TARGET: return create_target(x, err);
	case SK_MSTEP_COPY: return copy_step(x, err);
	case SK_MSTEP_VERIFY: return verify_step(x, err);
	case SK_MSTEP_SWITCH: return switch_step(x, err);
	case SK_MSTEP_PAUSE_SOURCE: return pause_source(x, err);
	case SK_MSTEP_RETIRE_SOURCE: return retire_source(x, err);
	case SK_MSTEP_ABORT: return abort_step(x, plan, err);
	}
	return 0;
}

/* A failed copy, verify or create ends the migration, unless the failure
 * is a lost compare-and-swap (the next round re-plans). */
static bool
aborts(const sk_migration_plan *plan, int rc)
{
	switch (plan->step) {
	case SK_MSTEP_CREATE_TARGET: return !sk_error_is_transient(rc);
	case SK_MSTEP_COPY:
	case SK_MSTEP_VERIFY: return rc != SK_ECONFLICT;
	default: return false;
	}
}

static int
record_abort(mx *x, const sk_migration_plan *plan, const sk_error *why, sk_error *err)
{
	sk_migration_plan ab;
	char reason[600];

	snprintf(reason, sizeof(reason), "%s failed: %.500s", sk_migration_step_name(plan->step),
	        why->message);
	memset(&ab, 0, sizeof(ab));
	ab.step = SK_MSTEP_ABORT;
	sk_migration_copy(&ab.next, &x->cur->status.migration);
	free(ab.next.reason);
	ab.next.reason = sk_strdup(reason);
	ab.abort_reason = sk_strdup(reason);
	sk_error_clear(err);
	int rc = abort_step(x, &ab, err);
	sk_migration_plan_dispose(&ab);
	return rc;
}

/* The mark of the step: what the planner wants written before it runs. */
static int
write_mark(mx *x, const sk_migration_plan *plan, sk_error *err)
{
	switch (plan->step) {
	case SK_MSTEP_CREATE_TARGET:
		observe_metric(x, "started", 0);
		/* fall through */
	case SK_MSTEP_COPY:
	case SK_MSTEP_VERIFY:
	case SK_MSTEP_SWITCH: return write_migration(x, &plan->next, SK_PHASE_MIGRATING, err);
	default: return 0;
	}
}

int
sk_migrate_round(const sk_reconcile_env *env, const sk_userspace *us, bool *normal,
        int64_t *requeue_after_ms, sk_userspace **updated, sk_error *err)
{
	const sk_migration_status *m = &us->status.migration;
	sk_migration_observed ob;
	sk_migration_plan plan;
	mx x;
	int rc;

	memset(&x, 0, sizeof(x));
	x.env = env;
	x.cur = sk_userspace_dup(us);
	x.now = env->now ? env->now() : sk_now_ms();
	x.src = provider_named(env, m->source.provider);
	x.dst = provider_named(env, m->target.provider);
	x.ob = &ob;
	sk_migration_observed_init(&ob);
	observe(&x, &ob);
	sk_plan_migration(x.cur, &ob, x.now, &env->opts, &plan);
	*normal = plan.normal;
	*requeue_after_ms = plan.requeue_after_ms;
	rc = write_mark(&x, &plan, err);
	if (rc == 0)
		rc = run_step(&x, &plan, err);
	if (rc != 0 && aborts(&plan, rc)) {
		sk_error why = *err;
		rc = record_abort(&x, &plan, &why, err);
		*normal = true;
	}
	if (rc == 0 && plan.step == SK_MSTEP_ABORT)
		*normal = true;
	*updated = x.cur;
	sk_migration_plan_dispose(&plan);
	sk_migration_observed_dispose(&ob);
	return rc;
}
