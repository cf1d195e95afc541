/*
 * reconcile/migrate_plan: the pure half of a migration (see reconcile.h):
 * what starts one, and from status.migration plus what a round saw at the
 * two providers, the one step to take next. No I/O, no clock; table-tested
 * in test/unit/check_migrate.c.
 *
 * Every phase can be re-entered after a crash:
 *   Pending    waits for idle (whenIdleFor) unless the rollout said --now.
 *   Creating   adopts a target carrying this migration's marker; creates
 *              again only when a lookup made create_grace_ms after the mark
 *              finds none (a list is not proof of absence, rule 1).
 *   Copying    copies again (writes replace what is there).
 *   Verifying  verifies again.
 *   Switching  writes the binding (one compare-and-swap).
 *   Retiring   pauses the source, deletes it after keepSourceFor (Delete).
 * A reason recorded with an active phase before Retiring means "aborting":
 * the abort is finished (target killed, phase Aborted) whatever else holds.
 */
#include <stdlib.h>
#include <string.h>

#include "../api/names.h"
#include "reconcile_int.h"

static const char *const step_names[] = { "none", "create-target", "copy", "verify", "switch",
	"pause-source", "retire-source", "abort" };

const char *
sk_migration_step_name(sk_migration_step s)
{
	return (size_t)s < sizeof(step_names) / sizeof(step_names[0]) ? step_names[s] : "?";
}

void
sk_migration_observed_init(sk_migration_observed *o)
{
	memset(o, 0, sizeof(*o));
	sk_error_clear(&o->error);
	o->providers_known = true;
}

void
sk_migration_observed_dispose(sk_migration_observed *o)
{
	sk_sandbox_dispose(&o->source_sb);
	sk_sandbox_dispose(&o->target_sb);
}

void
sk_migration_plan_dispose(sk_migration_plan *p)
{
	sk_migration_dispose(&p->next);
	free(p->abort_reason);
	memset(p, 0, sizeof(*p));
}

const char *
sk_bound_provider(const sk_userspace *us)
{
	if (us->status.provider != NULL)
		return us->status.provider;
	return us->spec.provider ? us->spec.provider : "default";
}

static int64_t
restarted_ms(const sk_userspace *us)
{
	const char *v = sk_kvlist_get(&us->meta.annotations, SK_ANNOTATION_RESTARTED_AT);
	int64_t ms = 0;

	if (v == NULL || sk_time_parse(v, &ms) != SK_OK)
		return 0;
	return ms;
}

const char *
sk_migration_restore_from(const sk_userspace *us)
{
	const char *v = sk_kvlist_get(&us->meta.annotations, SK_ANNOTATION_RESTORE_FROM);

	return v != NULL && *v != '\0' ? v : NULL;
}

bool
sk_migration_is_restore(const sk_migration_status *m)
{
	return sk_str_eq(m->trigger, SK_TRIGGER_RESTORE);
}

bool
sk_sandbox_restored(const sk_sandbox *sb)
{
	return sk_kvlist_get(&sb->metadata, SK_META_SNAPSHOT) != NULL;
}

bool
sk_migration_now(const sk_userspace *us)
{
	const char *at = sk_kvlist_get(&us->meta.annotations, SK_ANNOTATION_RESTARTED_AT);

	return at != NULL &&
	        sk_str_eq(at, sk_kvlist_get(&us->meta.annotations, SK_ANNOTATION_ROLLOUT_NOW));
}

const char *
sk_migration_trigger(const sk_userspace *us, const char *keeper_template, const char *keeper_alias)
{
	const sk_userspace_spec *s = &us->spec;
	const sk_migration_status *m = &us->status.migration;
	const char *why = NULL;

	if (us->status.sandbox_id == NULL || us->meta.deletion_ms != 0 || sk_migration_active(m))
		return NULL;
	if (!sk_str_eq(sk_bound_provider(us), s->provider))
		why = SK_TRIGGER_PROVIDER;
	else if (s->update_strategy == SK_UPDATE_MIGRATE && keeper_template != NULL &&
	        !sk_str_eq(s->template_id, keeper_template) &&
	        !sk_str_eq(s->template_id, keeper_alias))
		why = SK_TRIGGER_TEMPLATE;
	if (restarted_ms(us) > m->start_ms)
		return sk_migration_restore_from(us) ? SK_TRIGGER_RESTORE : SK_TRIGGER_ROLLOUT;
	if (why != NULL && m->phase == SK_MIG_ABORTED &&
	        sk_str_eq(m->target.provider, s->provider) &&
	        sk_str_eq(m->target.template_id, s->template_id))
		return NULL; /* that attempt failed: a rollout or another spec retries */
	return why;
}

/* ---- the steps ---- */

typedef struct mctx {
	const sk_userspace *us;
	const sk_migration_status *m;
	const sk_migration_observed *ob;
	const sk_plan_options *o;
	int64_t now;
	sk_migration_plan *r;
} mctx;

static void
step(mctx *c, sk_migration_step s, sk_migration_phase phase)
{
	c->r->step = s;
	if (c->r->next.phase != phase)
		c->r->next.step_ms = c->now;
	c->r->next.phase = phase;
	c->r->requeue_after_ms = c->o->min_requeue_ms;
}

static void
wait_for(mctx *c, int64_t ms)
{
	c->r->step = SK_MSTEP_NONE;
	c->r->requeue_after_ms = ms > c->o->min_requeue_ms ? ms : c->o->min_requeue_ms;
}

static void
abort_with(mctx *c, const char *fmt, const char *arg)
{
	char buf[512];

	snprintf(buf, sizeof(buf), fmt, arg ? arg : "");
	c->r->step = SK_MSTEP_ABORT;
	c->r->abort_reason = sk_strdup(c->m->reason ? c->m->reason : buf);
	free(c->r->next.reason);
	c->r->next.reason = sk_strdup(c->r->abort_reason);
	c->r->requeue_after_ms = c->o->min_requeue_ms;
}

static int64_t
last_activity(const mctx *c)
{
	int64_t a = c->us->status.last_activity_ms;

	return c->ob->activity_ms > a ? c->ob->activity_ms : a;
}

static void
plan_pending(mctx *c)
{
	int64_t quiet_at = last_activity(c) + c->us->spec.when_idle_ms;

	c->r->normal = true;
	if (c->ob->source == SK_LOOKUP_NOT_FOUND) {
		c->r->normal = false;
		abort_with(c, "the source sandbox %s is gone", c->m->source.sandbox_id);
		return;
	}
	if (c->now < quiet_at && !sk_migration_now(c->us)) {
		wait_for(c, quiet_at - c->now);
		return;
	}
	c->r->normal = false;
	step(c, SK_MSTEP_CREATE_TARGET, SK_MIG_CREATING);
}

static void
plan_creating(mctx *c)
{
	int64_t ready_at = c->m->step_ms + c->o->create_grace_ms;

	if (c->ob->target == SK_LOOKUP_FOUND) {
		free(c->r->next.target.sandbox_id);
		c->r->next.target.sandbox_id = sk_strdup(c->ob->target_sb.id);
		/* a restore's files came with the snapshot: the target is probed */
		if (sk_migration_is_restore(c->m))
			step(c, SK_MSTEP_VERIFY, SK_MIG_VERIFYING);
		else
			step(c, SK_MSTEP_COPY, SK_MIG_COPYING);
	} else if (c->m->target.sandbox_id != NULL && c->ob->target == SK_LOOKUP_NOT_FOUND) {
		abort_with(c, "the target sandbox %s vanished", c->m->target.sandbox_id);
	} else if (c->ob->target == SK_LOOKUP_NOT_FOUND && c->ob->target_lookup_ms >= ready_at) {
		step(c, SK_MSTEP_CREATE_TARGET, SK_MIG_CREATING);
		c->r->next.step_ms = c->now; /* a new mark */
	} else if (c->ob->target == SK_LOOKUP_ERROR) {
		wait_for(c, c->o->short_requeue_ms);
	} else {
		wait_for(c, ready_at - c->now);
	}
}

/* Copying, Verifying and Switching need both sandboxes. */
static bool
both_present(mctx *c)
{
	if (c->ob->source == SK_LOOKUP_NOT_FOUND) {
		abort_with(c, "the source sandbox %s is gone", c->m->source.sandbox_id);
		return false;
	}
	if (c->ob->target == SK_LOOKUP_NOT_FOUND) {
		abort_with(c, "the target sandbox %s vanished", c->m->target.sandbox_id);
		return false;
	}
	if (c->ob->source != SK_LOOKUP_FOUND || c->ob->target != SK_LOOKUP_FOUND) {
		wait_for(c, c->o->short_requeue_ms);
		return false;
	}
	return true;
}

static void
plan_retiring(mctx *c)
{
	/* a restore leaves one sandbox: the old one goes once the new one is bound */
	int64_t keep = sk_migration_is_restore(c->m) ? 0 : c->us->spec.keep_source_ms;
	int64_t due = c->m->step_ms + keep;

	c->r->normal = true;
	if (c->now >= due || c->ob->source == SK_LOOKUP_NOT_FOUND) {
		step(c, SK_MSTEP_RETIRE_SOURCE, SK_MIG_RETIRING);
		return;
	}
	if (c->ob->source == SK_LOOKUP_FOUND && c->ob->source_sb.state == SK_SANDBOX_RUNNING) {
		step(c, SK_MSTEP_PAUSE_SOURCE, SK_MIG_RETIRING);
		c->r->requeue_after_ms = due - c->now;
		return;
	}
	wait_for(c, c->ob->source == SK_LOOKUP_ERROR ? c->o->short_requeue_ms : due - c->now);
}

void
sk_plan_migration(const sk_userspace *us, const sk_migration_observed *ob, int64_t now_ms,
        const sk_plan_options *opts, sk_migration_plan *out)
{
	mctx c = { us, &us->status.migration, ob, opts, now_ms, out };
	sk_migration_phase ph = c.m->phase;

	memset(out, 0, sizeof(*out));
	sk_migration_copy(&out->next, c.m);
	if (!sk_migration_active(c.m)) {
		out->normal = true;
		return;
	}
	if (!ob->providers_known && ph < SK_MIG_RETIRING)
		abort_with(&c, "%s", "a provider of the migration is not in the configuration");
	else if (c.m->reason != NULL && ph < SK_MIG_RETIRING)
		abort_with(&c, "%s", c.m->reason);
	else if (ph == SK_MIG_PENDING)
		plan_pending(&c);
	else if (ph == SK_MIG_CREATING)
		plan_creating(&c);
	else if (ph == SK_MIG_RETIRING)
		plan_retiring(&c);
	else if (both_present(&c))
		step(&c,
		        ph == SK_MIG_COPYING             ? SK_MSTEP_COPY
		                : ph == SK_MIG_VERIFYING ? SK_MSTEP_VERIFY
		                                         : SK_MSTEP_SWITCH,
		        ph);
}
