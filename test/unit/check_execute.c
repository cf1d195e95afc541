/*
 * Unit tests of the executor (sk_execute, sk_reconcile_object in
 * pkg/reconcile/execute.c) with in-memory fakes and no server: the store is
 * the in-memory backend (the same contract as MongoDB, see
 * test/integration/check_store_contract.c) and the provider is a small ops
 * table here that records every call and answers as told.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/options.h"
#include "reconcile/plan.h"
#include "reconcile/reconcile.h"
#include "reconcile/round_int.h"

Suite *sk_suite_execute(void);

/* ---- the fake provider ---- */

typedef struct fake {
	sk_store *store; /* to see what is stored when the provider is called */
	sk_buf calls; /* "create;kill sb-old;..." */
	int n_creates;
	sk_phase phase_at_create; /* the stored phase when create was called */
	int create_rc, create_http, kill_rc;
	sk_sandbox_list made; /* what create made (get and list answer from it) */
	char mounted[256]; /* the last create's "VOLUME at PATH", "" none */
} fake;

static fake *
fake_of(sk_provider *p)
{
	return sk_provider_get_state(p);
}

static void
record(fake *f, const char *what, const char *id)
{
	sk_buf_printf(&f->calls, "%s%s%s;", what, id ? " " : "", id ? id : "");
}

static int
fake_create(sk_provider *p, const sk_create_request *req, sk_sandbox *out, sk_error *err)
{
	fake *f = fake_of(p);
	sk_userspace *now = NULL;
	sk_sandbox sb;

	record(f, "create", NULL);
	snprintf(f->mounted, sizeof(f->mounted), "%s%s%s", req->volume_name ? req->volume_name : "",
	        req->volume_name ? " at " : "", req->volume_mount ? req->volume_mount : "");
	if (sk_store_get(f->store, "alice", &now, err) == 0)
		f->phase_at_create = now->status.phase;
	sk_userspace_free(now);
	if (f->create_rc != 0) {
		sk_error_set(err, f->create_rc, "create refused");
		err->http_status = f->create_http;
		return f->create_rc;
	}
	memset(&sb, 0, sizeof(sb));
	sb.id = sk_asprintf("sb-%d", ++f->n_creates);
	sb.template_id = sk_strdup(req->template_id);
	sb.state = SK_SANDBOX_RUNNING;
	sb.started_ms = sk_now_ms();
	sb.end_ms = sb.started_ms + req->timeout_ms;
	for (size_t i = 0; req->metadata && i < req->metadata->len; i++)
		sk_kvlist_set(
		        &sb.metadata, req->metadata->items[i].key, req->metadata->items[i].value);
	sk_sandbox_copy(out, &sb);
	f->made.items = sk_realloc(f->made.items, (f->made.len + 1) * sizeof(sb));
	f->made.items[f->made.len++] = sb;
	return 0;
}

static const sk_sandbox *
find_made(fake *f, const char *id)
{
	for (size_t i = 0; i < f->made.len; i++) {
		if (strcmp(f->made.items[i].id, id) == 0)
			return &f->made.items[i];
	}
	return NULL;
}

static int
fake_get(sk_provider *p, const char *id, sk_sandbox *out, sk_error *err)
{
	const sk_sandbox *sb = find_made(fake_of(p), id);

	record(fake_of(p), "get", id);
	if (sb == NULL)
		return sk_error_set(err, SK_ENOTFOUND, "sandbox %s not found", id);
	sk_sandbox_copy(out, sb);
	return 0;
}

static int
fake_list(sk_provider *p, const sk_kvlist *match, sk_sandbox_list *out, sk_error *err)
{
	fake *f = fake_of(p);
	const char *user = match ? sk_kvlist_get(match, "user_id") : NULL;

	record(f, "list", NULL);
	out->items = sk_calloc(f->made.len + 1, sizeof(*out->items));
	for (size_t i = 0; i < f->made.len; i++) {
		const char *u = sk_kvlist_get(&f->made.items[i].metadata, "user_id");
		if (user == NULL || (u != NULL && strcmp(u, user) == 0))
			sk_sandbox_copy(&out->items[out->len++], &f->made.items[i]);
	}
	return 0;
}

static int
fake_connect(sk_provider *p, const char *id, int64_t timeout_ms, sk_sandbox *out, bool *resumed,
        sk_error *err)
{
	record(fake_of(p), "connect", id);
	*resumed = false;
	return fake_get(p, id, out, err);
}

static int
fake_pause(sk_provider *p, const char *id, sk_error *err)
{
	record(fake_of(p), "pause", id);
	return 0;
}

static int
fake_kill(sk_provider *p, const char *id, sk_error *err)
{
	fake *f = fake_of(p);

	record(f, "kill", id);
	if (f->kill_rc != 0)
		return sk_error_set(err, f->kill_rc, "kill %s: refused", id);
	return 0;
}

static int
fake_set_timeout(sk_provider *p, const char *id, int64_t timeout_ms, sk_error *err)
{
	record(fake_of(p), "set-timeout", id);
	return 0;
}

static int
fake_probe(sk_provider *p, const sk_sandbox *sb, sk_health *health, int *http_status, sk_error *err)
{
	record(fake_of(p), "probe", sb->id);
	*health = SK_HEALTH_OK;
	*http_status = 200;
	return 0;
}

static int
fake_ensure_volume(sk_provider *p, const char *name, char **id, sk_error *err)
{
	record(fake_of(p), "ensure-volume", name);
	*id = sk_strdup("vol-1");
	return 0;
}

static int
fake_delete_volume(sk_provider *p, const char *name, sk_error *err)
{
	record(fake_of(p), "delete-volume", name);
	return 0;
}

static const sk_provider_ops fake_ops = {
	.name = "fake",
	.create = fake_create,
	.get = fake_get,
	.list = fake_list,
	.connect = fake_connect,
	.pause = fake_pause,
	.kill = fake_kill,
	.set_timeout = fake_set_timeout,
	.probe_health = fake_probe,
};

/* ---- fixture ---- */

typedef struct fixture {
	fake f;
	sk_store *store;
	sk_provider *p;
	sk_reconcile_env env;
} fixture;

static void
setup(fixture *x)
{
	memset(x, 0, sizeof(*x));
	ck_assert_int_eq(sk_store_open_memory(&x->store), 0);
	x->f.store = x->store;
	x->f.calls = (sk_buf)SK_BUF_INIT(4096);
	x->p = sk_provider_new_with_ops(&fake_ops, &x->f);
	x->env.store = x->store;
	x->env.provider = x->p;
	sk_plan_options_init(&x->env.opts);
}

static void
teardown(fixture *x)
{
	sk_provider_free(x->p);
	sk_sandbox_list_dispose(&x->f.made);
	sk_buf_dispose(&x->f.calls);
	sk_store_close(x->store);
}

/* The fake with volumes (E2B's team volumes). */
static const sk_provider_ops fake_volume_ops = {
	.name = "fake-volumes",
	.create = fake_create,
	.get = fake_get,
	.list = fake_list,
	.connect = fake_connect,
	.pause = fake_pause,
	.kill = fake_kill,
	.set_timeout = fake_set_timeout,
	.probe_health = fake_probe,
	.ensure_volume = fake_ensure_volume,
	.delete_volume = fake_delete_volume,
};

/* E2B's fork: a running sandbox "fork-N", untagged (no metadata). */
static int
fake_fork(sk_provider *p, const char *source_id, int64_t timeout_ms, sk_sandbox *out, sk_error *err)
{
	fake *f = fake_of(p);
	sk_userspace *now = NULL;
	sk_sandbox sb;

	record(f, "fork", source_id);
	if (sk_store_get(f->store, "alice", &now, err) == 0)
		f->phase_at_create = now->status.phase;
	sk_userspace_free(now);
	memset(&sb, 0, sizeof(sb));
	sb.id = sk_asprintf("fork-%d", ++f->n_creates);
	sb.state = SK_SANDBOX_RUNNING;
	sb.started_ms = sk_now_ms();
	sb.end_ms = sb.started_ms + timeout_ms;
	sk_sandbox_copy(out, &sb);
	f->made.items = sk_realloc(f->made.items, (f->made.len + 1) * sizeof(sb));
	f->made.items[f->made.len++] = sb;
	return 0;
}

static const sk_provider_ops fake_fork_ops = {
	.name = "fake-fork",
	.create = fake_create,
	.get = fake_get,
	.list = fake_list,
	.connect = fake_connect,
	.pause = fake_pause,
	.kill = fake_kill,
	.set_timeout = fake_set_timeout,
	.probe_health = fake_probe,
	.fork = fake_fork,
};

static const char *
calls(fixture *x)
{
	return x->f.calls.data ? x->f.calls.data : "";
}

/* alice as stored (mode Running, template base). */
static sk_userspace *
create_alice(fixture *x)
{
	sk_userspace in, *out = NULL;
	sk_error err = { 0 };

	memset(&in, 0, sizeof(in));
	in.meta.name = "alice";
	in.spec.user_id = "alice";
	in.spec.template_id = "base";
	in.spec.mode = SK_MODE_RUNNING;
	ck_assert_msg(sk_store_create(x->store, &in, &out, &err) == 0, "%s", err.message);
	return out;
}

static sk_userspace *
stored(fixture *x)
{
	sk_userspace *us = NULL;
	sk_error err = { 0 };

	ck_assert_msg(sk_store_get(x->store, "alice", &us, &err) == 0, "%s", err.message);
	return us;
}

/* Another writer sets the stored phase. */
static void
other_writer_sets(fixture *x, sk_phase phase)
{
	sk_userspace *cur = stored(x), *out = NULL;
	sk_userspace_status st;
	sk_error err = { 0 };

	memset(&st, 0, sizeof(st));
	sk_userspace_status_copy(&st, &cur->status);
	st.phase = phase;
	ck_assert_msg(
	        sk_store_write_status(x->store, cur, &st, &out, &err) == 0, "%s", err.message);
	sk_userspace_status_dispose(&st);
	sk_userspace_free(cur);
	sk_userspace_free(out);
}

static sk_action *
add_action(sk_plan_result *plan, sk_action_type type, const char *sandbox_id)
{
	sk_action *a;

	plan->actions = sk_realloc(plan->actions, (plan->n_actions + 1) * sizeof(*a));
	a = &plan->actions[plan->n_actions++];
	memset(a, 0, sizeof(*a));
	a->type = type;
	a->sandbox_id = sandbox_id ? sk_strdup(sandbox_id) : NULL;
	if (type == SK_ACTION_CREATE) {
		a->template_id = sk_strdup("base");
		a->timeout_ms = 3600 * 1000;
		sk_kvlist_set(&a->metadata, "user_id", "alice");
	}
	return a;
}

/* create, then bind it, next phase Running. */
static void
create_plan(sk_plan_result *plan)
{
	memset(plan, 0, sizeof(*plan));
	add_action(plan, SK_ACTION_CREATE, NULL);
	add_action(plan, SK_ACTION_BIND, NULL);
	plan->next.phase = SK_PHASE_RUNNING;
}

static bool
has_event(fixture *x, const char *reason)
{
	sk_event_list l;
	sk_error err = { 0 };
	bool found = false;

	ck_assert_int_eq(sk_store_events(x->store, "alice", NULL, 0, &l, &err), 0);
	for (size_t i = 0; i < l.len; i++)
		found = found || strcmp(l.items[i].reason, reason) == 0;
	sk_event_list_dispose(&l);
	return found;
}

/* ---- tests ---- */

/* spec.storage.volume: with volumes, the volume is made before the mark and
 * mounted in the create, status.storage says so and survives the round;
 * without, the create goes on without one and status.storage says
 * Unsupported (a Warning event). */
START_TEST(test_create_mounts_the_volume)
{
	fixture x;
	sk_plan_result plan;
	sk_userspace *us, *updated = NULL, *now;
	sk_error err = { 0 };

	for (int with = 0; with < 2; with++) {
		setup(&x);
		if (with) {
			sk_provider_free(x.p);
			x.p = sk_provider_new_with_ops(&fake_volume_ops, &x.f);
			x.env.provider = x.p;
		}
		us = create_alice(&x);
		us->spec.storage.volume_policy = SK_VOLUME_RETAIN;
		create_plan(&plan);
		ck_assert_msg(
		        sk_execute(&x.env, us, &plan, &updated, &err) == 0, "%s", err.message);
		now = stored(&x);
		if (with) {
			ck_assert_str_eq(calls(&x), "ensure-volume sk-alice;create;");
			ck_assert_str_eq(x.f.mounted, "sk-alice at /home/user");
			ck_assert_int_eq(x.f.phase_at_create, SK_PHASE_CREATING);
			ck_assert_str_eq(now->status.storage.state, SK_STORAGE_MOUNTED);
			ck_assert_str_eq(now->status.storage.volume_id, "vol-1");
			ck_assert(has_event(&x, "VolumeMounted"));
		} else {
			ck_assert_str_eq(calls(&x), "create;");
			ck_assert_str_eq(x.f.mounted, "");
			ck_assert_str_eq(now->status.storage.state, SK_STORAGE_UNSUPPORTED);
			ck_assert_ptr_null(now->status.storage.volume_id);
			ck_assert(has_event(&x, "VolumeUnsupported"));
		}
		ck_assert_str_eq(now->status.storage.volume_name, "sk-alice");
		ck_assert_str_eq(now->status.storage.mount_path, "/home/user");
		ck_assert_str_eq(now->status.sandbox_id, "sb-1");
		sk_userspace_free(now);
		sk_userspace_free(updated);
		updated = NULL;
		sk_userspace_free(us);
		sk_plan_result_dispose(&plan);
		teardown(&x);
	}
}
END_TEST

/* bob as stored, bound to sb-src. */
static void
create_source(fixture *x, const char *name, bool volume)
{
	sk_userspace in, *out = NULL, *written = NULL;
	sk_userspace_status st;
	sk_error err = { 0 };

	memset(&in, 0, sizeof(in));
	in.meta.name = (char *)name;
	in.spec.user_id = (char *)name;
	in.spec.mode = SK_MODE_RUNNING;
	if (volume)
		in.spec.storage.mount_path = "/home/user";
	ck_assert_msg(sk_store_create(x->store, &in, &out, &err) == 0, "%s", err.message);
	memset(&st, 0, sizeof(st));
	st.phase = SK_PHASE_RUNNING;
	st.sandbox_id = "sb-src";
	ck_assert_msg(
	        sk_store_write_status(x->store, out, &st, &written, &err) == 0, "%s", err.message);
	sk_userspace_free(out);
	sk_userspace_free(written);
}

/* spec.source.fork: the create is the provider's fork of the source's bound
 * sandbox, after the Creating mark, and binds the untagged fork by ID; a
 * provider without fork, a source not there, or a source with a volume (the
 * fork would mount it) creates nothing and writes no mark. */
START_TEST(test_create_forks_the_source)
{
	static const sk_provider_ops *const ops[] = { &fake_fork_ops, &fake_ops, &fake_fork_ops,
		&fake_fork_ops };
	static const char *const sources[] = { "bob", "bob", "nobody", "vera" };
	fixture x;
	sk_plan_result plan;
	sk_userspace *us, *updated = NULL, *now;
	sk_error err = { 0 };
	int rc;

	for (int i = 0; i < 4; i++) {
		setup(&x);
		sk_provider_free(x.p);
		x.p = sk_provider_new_with_ops(ops[i], &x.f);
		x.env.provider = x.p;
		create_source(&x, "bob", false);
		create_source(&x, "vera", true);
		us = create_alice(&x);
		create_plan(&plan);
		plan.actions[0].fork_from = sk_strdup(sources[i]);
		rc = sk_execute(&x.env, us, &plan, &updated, &err);
		now = stored(&x);
		if (i == 0) {
			ck_assert_msg(rc == 0, "%s", err.message);
			ck_assert_str_eq(calls(&x), "fork sb-src;");
			ck_assert_int_eq(x.f.phase_at_create, SK_PHASE_CREATING);
			ck_assert_str_eq(now->status.sandbox_id, "fork-1");
			ck_assert(has_event(&x, "Forked"));
		} else {
			ck_assert_int_eq(rc, i == 1 ? SK_ENOTSUPPORTED : SK_ETERMINAL);
			ck_assert_msg(strstr(err.message, "spec.source.fork.userSpace") != NULL,
			        "%s", err.message);
			ck_assert_str_eq(calls(&x), "");
			ck_assert_ptr_null(now->status.sandbox_id);
			ck_assert_int_ne(now->status.phase, SK_PHASE_CREATING);
			ck_assert(i != 1 || has_event(&x, "ForkUnsupported"));
			ck_assert(i != 3 ||
			        strstr(err.message, "keeps its files on a volume") != NULL);
		}
		sk_userspace_free(now);
		sk_userspace_free(updated);
		updated = NULL;
		sk_userspace_free(us);
		sk_plan_result_dispose(&plan);
		teardown(&x);
	}
}
END_TEST

START_TEST(test_create_marks_first)
{
	fixture x;
	sk_plan_result plan;
	sk_userspace *us, *updated = NULL, *now;
	sk_error err = { 0 };

	setup(&x);
	us = create_alice(&x);
	create_plan(&plan);
	ck_assert_msg(sk_execute(&x.env, us, &plan, &updated, &err) == 0, "%s", err.message);
	ck_assert_str_eq(calls(&x), "create;");
	ck_assert_int_eq(x.f.phase_at_create, SK_PHASE_CREATING); /* the mark came first */
	now = stored(&x);
	ck_assert_int_eq(now->status.phase, SK_PHASE_RUNNING);
	ck_assert_str_eq(now->status.sandbox_id, "sb-1");
	ck_assert_int_eq(updated->meta.resource_version, now->meta.resource_version);
	ck_assert(has_event(&x, "Created"));
	sk_userspace_free(now);
	sk_userspace_free(updated);
	sk_userspace_free(us);
	sk_plan_result_dispose(&plan);
	teardown(&x);
}
END_TEST

/* The mark cannot be written (another writer changed the status since the
 * copy was read): nothing is created, and that writer's status stays. */
START_TEST(test_failed_mark_no_create)
{
	fixture x;
	sk_plan_result plan;
	sk_userspace *us, *now;
	sk_error err = { 0 };

	setup(&x);
	us = create_alice(&x);
	other_writer_sets(&x, SK_PHASE_PAUSED);
	create_plan(&plan);
	ck_assert_int_eq(sk_execute(&x.env, us, &plan, NULL, &err), SK_ECONFLICT);
	ck_assert_int_eq(x.f.n_creates, 0);
	ck_assert_ptr_null(strstr(calls(&x), "create"));
	now = stored(&x);
	ck_assert_int_eq(now->status.phase, SK_PHASE_PAUSED);
	ck_assert_ptr_null(now->status.sandbox_id);
	sk_userspace_free(now);
	sk_userspace_free(us);
	sk_plan_result_dispose(&plan);
	teardown(&x);
}
END_TEST

/* A create the provider refuses (400): phase Error, Synced False, a warning. */
START_TEST(test_create_refused)
{
	fixture x;
	sk_plan_result plan;
	sk_userspace *us, *now;
	const sk_condition *synced = NULL;
	sk_error err = { 0 };

	setup(&x);
	us = create_alice(&x);
	x.f.create_rc = SK_ETERMINAL;
	x.f.create_http = 400;
	create_plan(&plan);
	ck_assert_int_eq(sk_execute(&x.env, us, &plan, NULL, &err), SK_ETERMINAL);
	now = stored(&x);
	ck_assert_int_eq(now->status.phase, SK_PHASE_ERROR);
	ck_assert_ptr_null(now->status.sandbox_id);
	for (size_t i = 0; i < now->status.n_conditions; i++) {
		if (strcmp(now->status.conditions[i].type, SK_COND_SYNCED) == 0)
			synced = &now->status.conditions[i];
	}
	ck_assert_ptr_nonnull(synced);
	ck_assert_str_eq(synced->status, "False");
	ck_assert_str_eq(synced->reason, "CreateFailed");
	ck_assert(has_event(&x, "CreateFailed"));
	sk_userspace_free(now);
	sk_userspace_free(us);
	sk_plan_result_dispose(&plan);
	teardown(&x);
}
END_TEST

/* Killing a sandbox that is already gone (404) is done, not a failure. */
START_TEST(test_kill_not_found_is_done)
{
	fixture x;
	sk_plan_result plan;
	sk_userspace *us, *now;
	sk_action *kill;
	sk_error err = { 0 };

	setup(&x);
	us = create_alice(&x);
	x.f.kill_rc = SK_ENOTFOUND;
	memset(&plan, 0, sizeof(plan));
	kill = add_action(&plan, SK_ACTION_KILL, "sb-old");
	kill->why = SK_KILL_DUPLICATE;
	plan.next.phase = SK_PHASE_RUNNING;
	ck_assert_msg(sk_execute(&x.env, us, &plan, NULL, &err) == 0, "%s", err.message);
	ck_assert_str_eq(calls(&x), "kill sb-old;");
	ck_assert(has_event(&x, "DuplicateDeleted"));
	now = stored(&x);
	ck_assert_int_eq(now->status.phase, SK_PHASE_RUNNING);
	sk_userspace_free(now);
	sk_plan_result_dispose(&plan);
	/* any other kill failure stops the plan and is reported */
	x.f.kill_rc = SK_EUNAVAILABLE;
	memset(&plan, 0, sizeof(plan));
	add_action(&plan, SK_ACTION_KILL, "sb-old");
	add_action(&plan, SK_ACTION_PAUSE, "sb-keep");
	plan.next.phase = SK_PHASE_RUNNING;
	sk_userspace_free(us);
	us = stored(&x);
	ck_assert_int_eq(sk_execute(&x.env, us, &plan, NULL, &err), SK_EUNAVAILABLE);
	ck_assert_ptr_null(strstr(calls(&x), "pause"));
	ck_assert(has_event(&x, "DeleteFailed"));
	sk_userspace_free(us);
	sk_plan_result_dispose(&plan);
	teardown(&x);
}
END_TEST

/* A status write that meets a conflict: written after a re-read when only
 * the spec changed meanwhile; not written when the status changed. */
START_TEST(test_status_conflict)
{
	fixture x;
	sk_plan_result plan;
	sk_userspace *us, *edit, *out = NULL, *now;
	sk_error err = { 0 };

	setup(&x);
	us = create_alice(&x);
	edit = stored(&x);
	free(edit->spec.template_id);
	edit->spec.template_id = sk_strdup("gpu");
	ck_assert_int_eq(sk_store_update(x.store, edit, &out, &err), 0);
	memset(&plan, 0, sizeof(plan));
	plan.next.phase = SK_PHASE_PAUSED;
	ck_assert_msg(sk_execute(&x.env, us, &plan, NULL, &err) == 0, "%s", err.message);
	now = stored(&x);
	ck_assert_int_eq(now->status.phase, SK_PHASE_PAUSED);
	ck_assert_str_eq(now->spec.template_id, "gpu"); /* the edit kept */
	sk_userspace_free(now);
	/* now another writer changes the status: us (stale) does not overwrite it */
	sk_userspace_free(us);
	us = stored(&x);
	other_writer_sets(&x, SK_PHASE_DEGRADED);
	plan.next.phase = SK_PHASE_RUNNING;
	ck_assert_int_eq(sk_execute(&x.env, us, &plan, NULL, &err), SK_ECONFLICT);
	now = stored(&x);
	ck_assert_int_eq(now->status.phase, SK_PHASE_DEGRADED);
	sk_userspace_free(now);
	sk_userspace_free(out);
	sk_userspace_free(edit);
	sk_userspace_free(us);
	sk_plan_result_dispose(&plan);
	teardown(&x);
}
END_TEST

/* Deletion: the finalizer goes and the object with it. */
START_TEST(test_remove_finalizer)
{
	fixture x;
	sk_plan_result plan;
	sk_userspace *us, *updated = NULL, *gone = NULL;
	sk_error err = { 0 };

	setup(&x);
	sk_userspace_free(create_alice(&x));
	ck_assert_int_eq(sk_store_mark_deleted(x.store, "alice", &err), 0);
	us = stored(&x);
	memset(&plan, 0, sizeof(plan));
	add_action(&plan, SK_ACTION_REMOVE_FINALIZER, NULL);
	plan.next.phase = SK_PHASE_DELETING;
	ck_assert_msg(sk_execute(&x.env, us, &plan, &updated, &err) == 0, "%s", err.message);
	ck_assert_ptr_null(updated);
	ck_assert_int_eq(sk_store_get(x.store, "alice", &gone, &err), SK_ENOTFOUND);
	sk_userspace_free(us);
	sk_plan_result_dispose(&plan);
	teardown(&x);
}
END_TEST

/* spec.storage.volume deletionPolicy Delete: the volume goes before the
 * finalizer; Retain (and no volumes at the provider) leaves it. */
START_TEST(test_remove_finalizer_deletes_the_volume)
{
	fixture x;
	sk_plan_result plan;
	sk_userspace *us, *updated = NULL;
	sk_error err = { 0 };

	for (int policy = SK_VOLUME_RETAIN; policy <= SK_VOLUME_DELETE; policy++) {
		setup(&x);
		sk_provider_free(x.p);
		x.p = sk_provider_new_with_ops(&fake_volume_ops, &x.f);
		x.env.provider = x.p;
		sk_userspace_free(create_alice(&x));
		ck_assert_int_eq(sk_store_mark_deleted(x.store, "alice", &err), 0);
		us = stored(&x);
		us->spec.storage.volume_policy = (sk_volume_policy)policy;
		memset(&plan, 0, sizeof(plan));
		add_action(&plan, SK_ACTION_REMOVE_FINALIZER, NULL);
		plan.next.phase = SK_PHASE_DELETING;
		ck_assert_msg(
		        sk_execute(&x.env, us, &plan, &updated, &err) == 0, "%s", err.message);
		ck_assert_str_eq(
		        calls(&x), policy == SK_VOLUME_DELETE ? "delete-volume sk-alice;" : "");
		ck_assert(has_event(&x, "VolumeDeleted") == (policy == SK_VOLUME_DELETE));
		sk_userspace_free(us);
		sk_plan_result_dispose(&plan);
		teardown(&x);
	}
}
END_TEST

/* observe -> plan -> execute twice on a new object: one sandbox, bound. */
START_TEST(test_reconcile_object_creates_once)
{
	fixture x;
	sk_userspace *us, *updated = NULL, *now;
	int64_t requeue = 0;
	sk_error err = { 0 };

	setup(&x);
	us = create_alice(&x);
	ck_assert_msg(sk_reconcile_object(&x.env, us, NULL, &requeue, &updated, &err) == 0, "%s",
	        err.message);
	ck_assert_int_eq(x.f.n_creates, 1);
	ck_assert_int_eq(x.f.phase_at_create, SK_PHASE_CREATING);
	now = stored(&x);
	ck_assert_str_eq(now->status.sandbox_id, "sb-1");
	ck_assert_int_gt(requeue, 0);
	sk_userspace_free(us);
	us = now;
	sk_userspace_free(updated);
	updated = NULL;
	ck_assert_msg(sk_reconcile_object(&x.env, us, NULL, &requeue, &updated, &err) == 0, "%s",
	        err.message);
	ck_assert_int_eq(x.f.n_creates, 1); /* the binding is honoured: no second create */
	now = stored(&x);
	ck_assert_str_eq(now->status.sandbox_id, "sb-1");
	sk_userspace_free(now);
	sk_userspace_free(updated);
	sk_userspace_free(us);
	teardown(&x);
}
END_TEST

/* ---- fencing (sk_reconcile_env.may_act) ---- */

/* Says yes *arg times (a lease that is lost after that), then no. */
static bool
allow_n(void *arg, const char *user_id)
{
	int *left = arg;

	ck_assert_str_eq(user_id, "alice");
	return (*left)-- > 0;
}

/* No right to act from the start: no provider call, no status write, no
 * event, and a transient outcome (the key is retried, by the new holder). */
START_TEST(test_fenced_does_nothing)
{
	fixture x;
	sk_plan_result plan;
	sk_userspace *us, *now;
	sk_error err = { 0 };
	int left = 0;

	setup(&x);
	us = create_alice(&x);
	x.env.may_act = allow_n;
	x.env.may_act_arg = &left;
	create_plan(&plan);
	ck_assert_int_eq(sk_execute(&x.env, us, &plan, NULL, &err), SK_EUNAVAILABLE);
	ck_assert(sk_error_is_transient(SK_EUNAVAILABLE));
	ck_assert_ptr_nonnull(strstr(err.message, "fenced"));
	ck_assert_str_eq(calls(&x), "");
	now = stored(&x);
	ck_assert_int_eq(now->meta.resource_version, us->meta.resource_version);
	ck_assert(!has_event(&x, "CreateFailed"));
	sk_userspace_free(now);
	sk_userspace_free(us);
	sk_plan_result_dispose(&plan);
	teardown(&x);
}
END_TEST

/* The lease is lost between the check before CREATE and the Creating mark
 * written before the provider call: nothing is created or written. */
START_TEST(test_fenced_mid_run)
{
	fixture x;
	sk_plan_result plan;
	sk_userspace *us, *now;
	sk_error err = { 0 };
	int left = 1;

	setup(&x);
	us = create_alice(&x);
	x.env.may_act = allow_n;
	x.env.may_act_arg = &left;
	create_plan(&plan);
	ck_assert_int_eq(sk_execute(&x.env, us, &plan, NULL, &err), SK_EUNAVAILABLE);
	ck_assert_int_eq(x.f.n_creates, 0);
	now = stored(&x);
	ck_assert_int_eq(now->meta.resource_version, us->meta.resource_version);
	ck_assert_ptr_null(now->status.sandbox_id);
	sk_userspace_free(now);
	sk_userspace_free(us);
	sk_plan_result_dispose(&plan);
	teardown(&x);
}
END_TEST

/* A valid lease all along: the hook changes nothing. */
START_TEST(test_may_act_allows)
{
	fixture x;
	sk_plan_result plan;
	sk_userspace *us;
	sk_error err = { 0 };
	int left = 100;

	setup(&x);
	us = create_alice(&x);
	x.env.may_act = allow_n;
	x.env.may_act_arg = &left;
	create_plan(&plan);
	ck_assert_msg(sk_execute(&x.env, us, &plan, NULL, &err) == 0, "%s", err.message);
	ck_assert_str_eq(calls(&x), "create;");
	ck_assert_int_lt(left, 100); /* it was asked */
	sk_userspace_free(us);
	sk_plan_result_dispose(&plan);
	teardown(&x);
}
END_TEST

Suite *
sk_suite_execute(void)
{
	Suite *s = suite_create("execute");
	TCase *tc = tcase_create("execute");

	tcase_add_test(tc, test_create_marks_first);
	tcase_add_test(tc, test_create_mounts_the_volume);
	tcase_add_test(tc, test_create_forks_the_source);
	tcase_add_test(tc, test_remove_finalizer_deletes_the_volume);
	tcase_add_test(tc, test_failed_mark_no_create);
	tcase_add_test(tc, test_create_refused);
	tcase_add_test(tc, test_kill_not_found_is_done);
	tcase_add_test(tc, test_status_conflict);
	tcase_add_test(tc, test_remove_finalizer);
	tcase_add_test(tc, test_reconcile_object_creates_once);
	tcase_add_test(tc, test_fenced_does_nothing);
	tcase_add_test(tc, test_fenced_mid_run);
	tcase_add_test(tc, test_may_act_allows);
	suite_add_tcase(s, tc);
	return s;
}
