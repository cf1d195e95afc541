/*
 * Integration tests of the follow-up round of sk_reconcile_object (real
 * FerretDB and sandboxsim, e2b flavour): after a round that creates or
 * resumes the keeper, the data plane is probed at once and the binding is
 * written with the probe's result, one status write after the Creating
 * mark instead of two and no short requeue in between. Status writes are
 * counted by the store's write claims ({_id: "NAME/V"} per version written
 * over, pkg/store/mongo_cas.c), provider calls by sandboxsim's /_sim/stats.
 */
#include <check.h>
#include <curl/curl.h>
#include <jansson.h>
#include <mongoc/mongoc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../testutil.h"
#include "api/names.h"
#include "reconcile/reconcile.h"
#include "reconcile_fixture.h"

Suite *sk_suite_reconcile_followup(void);

#define KEY_VAR "SK_TEST_FOLLOWUP_KEY"

typedef sk_rfix fixture;

/* What one sk_reconcile_object call did. */
typedef struct outcome {
	int rc;
	sk_error err;
	int64_t requeue;
	sk_userspace *updated;
	int64_t rv_before; /* resourceVersion of the copy handed in */
} outcome;

/* ---- fixture (after check_reconcile.c) ---- */

static void
setup(fixture *f)
{
	sk_rfix_setup(f, KEY_VAR);
	f->env.opts.resume_grace_ms = 20000;
	/* The test reads these; they must tell a short requeue from a steady one. */
	ck_assert_int_eq(f->env.opts.short_requeue_ms, 2000);
	ck_assert_int_eq(f->env.opts.resync_ms, 30000);
	ck_assert(f->env.opts.probe);
}

static size_t
collect(char *data, size_t size, size_t n, void *arg)
{
	sk_buf_append(arg, data, size * n);
	return size * n;
}

/* A /_sim admin request; the body (when wanted) as JSON. */
static long
sim_req(fixture *f, const char *method, const char *path, const char *json, json_t **out)
{
	CURL *c = curl_easy_init();
	sk_buf b = SK_BUF_INIT(1 << 20);
	char url[256];
	long status = 0;
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");

	snprintf(url, sizeof(url), "%s%s", f->url, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (json != NULL)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, json);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
	ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (out != NULL) {
		json_error_t jerr;
		*out = json_loadb(b.data ? b.data : "", b.len, 0, &jerr);
		ck_assert_msg(*out != NULL, "%s %s: not JSON: %s", method, path, jerr.text);
	}
	sk_buf_dispose(&b);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return status;
}

static void
sim_faults(fixture *f, const char *json)
{
	ck_assert_int_eq(sim_req(f, "POST", "/_sim/faults", json, NULL), 200);
}

/* The simulator counts a call just after sending its answer: waits until
 * the count stops moving (two reads 20 ms apart agree). */
static void
sim_settle(fixture *f)
{
	json_int_t last = -1;

	for (int i = 0; i < 50; i++) {
		json_t *st = NULL;
		json_int_t total;
		ck_assert_int_eq(sim_req(f, "GET", "/_sim/stats", NULL, &st), 200);
		total = json_integer_value(json_object_get(st, "total"));
		json_decref(st);
		if (total == last)
			return;
		last = total;
		usleep(20000);
	}
	ck_abort_msg("sandboxsim stats never settled");
}

static void
sim_stats_reset(fixture *f)
{
	ck_assert_int_eq(sim_req(f, "POST", "/_sim/stats/reset", NULL, NULL) / 100, 2);
}

/* Calls of one endpoint since the last reset, answered with `status` (0: any). */
static long
sim_calls(fixture *f, const char *ep, int status)
{
	json_t *st = NULL, *by;
	const char *code;
	json_t *v;
	long n = 0;

	ck_assert_int_eq(sim_req(f, "GET", "/_sim/stats", NULL, &st), 200);
	by = json_object_get(json_object_get(st, "requests"), ep);
	json_object_foreach(by, code, v)
	{
		if (status == 0 || atoi(code) == status)
			n += (long)json_integer_value(v);
	}
	json_decref(st);
	return n;
}

/* API calls since the last reset (the data plane and /_sim not counted). */
static long
sim_api_calls(fixture *f)
{
	static const char *const eps[] = { "create", "get", "list", "list_v1", "kill", "pause",
		"connect", "resume", "timeout", "refreshes" };
	long n = 0;

	for (size_t i = 0; i < sizeof(eps) / sizeof(eps[0]); i++)
		n += sim_calls(f, eps[i], 0);
	return n;
}

/* The user's managed sandboxes as the controller would list them. */
static void
list_user(fixture *f, const char *user, sk_sandbox_list *out)
{
	sk_kvlist match = { 0 };
	sk_error err = { 0 };

	memset(out, 0, sizeof(*out));
	sk_kvlist_set(&match, SK_META_USER_ID, user);
	sk_kvlist_set(&match, SK_META_MANAGED_BY, SK_MANAGED_BY_VALUE);
	ck_assert_msg(sk_sandbox_list_all(f->p, &match, out, &err) == 0, "%s", err.message);
	sk_kvlist_dispose(&match);
}

static const sk_condition *
cond(const sk_userspace *us, const char *type)
{
	for (size_t i = 0; i < us->status.n_conditions; i++) {
		if (strcmp(us->status.conditions[i].type, type) == 0)
			return &us->status.conditions[i];
	}
	ck_abort_msg("no condition %s", type);
	return NULL;
}

static void
assert_cond(const sk_userspace *us, const char *type, const char *status, const char *reason)
{
	const sk_condition *c = cond(us, type);

	ck_assert_msg(strcmp(c->status, status) == 0, "%s: status %s, want %s (%s: %s)", type,
	        c->status, status, c->reason, c->message);
	if (reason != NULL)
		ck_assert_msg(strcmp(c->reason, reason) == 0, "%s: reason %s, want %s (%s)", type,
		        c->reason, reason, c->message);
}

/* ---- status writes: the store's claims ---- */

/* The versions of `name` written over (claims "NAME/V"), ascending; returns
 * how many are >= since. */
static size_t
claims_since(fixture *f, const char *name, int64_t since, int64_t *vers, size_t max)
{
	mongoc_client_t *client = mongoc_client_new(sk_test_mongodb_uri());
	mongoc_collection_t *coll = mongoc_client_get_collection(client, f->db, "claims");
	bson_t all = BSON_INITIALIZER;
	mongoc_cursor_t *cur = mongoc_collection_find_with_opts(coll, &all, NULL, NULL);
	size_t plen = strlen(name), n = 0;
	const bson_t *doc;
	bson_error_t berr;
	bson_iter_t it;

	while (mongoc_cursor_next(cur, &doc)) {
		const char *id;
		int64_t v;
		if (!bson_iter_init_find(&it, doc, "_id") || !BSON_ITER_HOLDS_UTF8(&it))
			continue;
		id = bson_iter_utf8(&it, NULL);
		if (strncmp(id, name, plen) != 0 || id[plen] != '/')
			continue;
		v = strtoll(id + plen + 1, NULL, 10);
		if (v < since)
			continue;
		ck_assert_uint_lt(n, max);
		vers[n++] = v;
	}
	ck_assert_msg(!mongoc_cursor_error(cur, &berr), "claims: %s", berr.message);
	for (size_t i = 1; i < n; i++) { /* insertion sort: a handful */
		for (size_t j = i; j > 0 && vers[j - 1] > vers[j]; j--) {
			int64_t t = vers[j];
			vers[j] = vers[j - 1];
			vers[j - 1] = t;
		}
	}
	mongoc_cursor_destroy(cur);
	bson_destroy(&all);
	mongoc_collection_destroy(coll);
	mongoc_client_destroy(client);
	return n;
}

/* Asserts that the call made exactly `want` status writes, one after the
 * other from the copy it was given: the claims since o->rv_before are
 * rv_before and then want-1 versions below the stored one. */
static void
assert_writes(fixture *f, const char *name, const outcome *o, size_t want)
{
	int64_t vers[16];
	size_t n = claims_since(f, name, o->rv_before, vers, 16);
	sk_userspace *now = sk_rfix_get(f, name);

	ck_assert_msg(n == want, "%s: %zu status writes, want %zu", name, n, want);
	if (want > 0) {
		ck_assert_int_eq(vers[0], o->rv_before);
		ck_assert_int_lt(vers[want - 1], now->meta.resource_version);
	} else {
		ck_assert_int_eq(now->meta.resource_version, o->rv_before);
	}
	sk_userspace_free(now);
}

/* ---- one call ---- */

/* One sk_reconcile_object on a fresh copy of the stored object, with the
 * user's sandboxes as just listed; the simulator's stats start from zero. */
static void
once(fixture *f, const char *name, const char *user, outcome *o)
{
	sk_sandbox_list l;
	sk_list_view v = { 0 };
	sk_userspace *us;

	memset(o, 0, sizeof(*o));
	list_user(f, user, &l);
	v.valid = true;
	v.for_user = &l;
	v.listed_ms = sk_now_ms();
	us = sk_rfix_get(f, name);
	o->rv_before = us->meta.resource_version;
	sim_settle(f);
	sim_stats_reset(f);
	o->rc = sk_reconcile_object(&f->env, us, &v, &o->requeue, &o->updated, &o->err);
	sim_settle(f);
	sk_sandbox_list_dispose(&l);
	sk_userspace_free(us);
}

static void
outcome_dispose(outcome *o)
{
	sk_userspace_free(o->updated);
}

/* The one sandbox of the user at the provider (asserted: exactly one). */
static char *
only_sandbox(fixture *f, const char *user, sk_sandbox_state want)
{
	sk_sandbox_list l;
	char *id;

	list_user(f, user, &l);
	ck_assert_uint_eq(l.len, 1);
	ck_assert_int_eq(l.items[0].state, want);
	id = strdup(l.items[0].id);
	sk_sandbox_list_dispose(&l);
	return id;
}

/* Calls until Ready (at most n). */
static void
converge(fixture *f, const char *name, const char *user, int n)
{
	for (int i = 0; i < n; i++) {
		outcome o;
		bool ready;
		once(f, name, user, &o);
		ready = o.rc == 0 && o.updated != NULL && sk_userspace_is_ready(o.updated);
		outcome_dispose(&o);
		if (ready)
			return;
	}
	ck_abort_msg("%s did not become Ready in %d calls", name, n);
}

/* Converges name (user = name) to Running, then to Paused: a paused keeper. */
static void
paused_keeper(fixture *f, const char *name)
{
	converge(f, name, name, 3);
	sk_rfix_set_mode(f, name, SK_MODE_PAUSED);
	converge(f, name, name, 3);
}

/* A managed sandbox of the user made behind the controller's back. */
static void
precreate(fixture *f, const char *user, sk_sandbox *out)
{
	sk_kvlist meta = { 0 };
	sk_create_request req = { .template_id = "base", .timeout_ms = 600000, .metadata = &meta };
	sk_error err = { 0 };

	sk_kvlist_set(&meta, SK_META_USER_ID, user);
	sk_kvlist_set(&meta, SK_META_MANAGED_BY, SK_MANAGED_BY_VALUE);
	ck_assert_msg(sk_sandbox_create(f->p, &req, out, &err) == 0, "%s", err.message);
	sk_kvlist_dispose(&meta);
}

/* ---- tests ---- */

/* 1. A new UserSpace: one call creates, probes and stores Running + Ready
 * with the binding; the Creating mark and the final status are the only two
 * writes, the follow-up uses the create's answer (no GET), and the requeue
 * is the steady one. */
START_TEST(test_create_one_call)
{
	fixture f;
	outcome o;
	sk_userspace *us;
	char *id;

	setup(&f);
	sk_rfix_apply(&f, "alice", "alice", NULL);
	once(&f, "alice", "alice", &o);
	ck_assert_msg(o.rc == 0, "reconcile: %s", o.err.message);
	/* provider calls first (listing below is counted too) */
	ck_assert_int_eq(sim_calls(&f, "create", 201), 1);
	ck_assert_int_eq(sim_calls(&f, "create", 0), 1);
	ck_assert_int_eq(sim_calls(&f, "get", 0), 0);
	ck_assert_int_eq(sim_calls(&f, "list", 0), 0);
	ck_assert_int_eq(sim_calls(&f, "health", 0), 1);
	ck_assert_int_eq(sim_api_calls(&f), 1);
	id = only_sandbox(&f, "alice", SK_SANDBOX_RUNNING);
	us = sk_rfix_get(&f, "alice");
	ck_assert_int_eq(us->status.phase, SK_PHASE_RUNNING);
	ck_assert_ptr_nonnull(us->status.sandbox_id);
	ck_assert_str_eq(us->status.sandbox_id, id);
	assert_cond(us, SK_COND_READY, "True", "Running");
	assert_cond(us, SK_COND_DATAPLANE, "True", "Healthy");
	assert_cond(us, SK_COND_SYNCED, "True", NULL);
	ck_assert_int_eq(us->status.observed_generation, us->meta.generation);
	ck_assert_int_gt(us->status.last_reconcile_ms, 0);
	/* *updated is what was stored */
	ck_assert_ptr_nonnull(o.updated);
	ck_assert_int_eq(o.updated->meta.resource_version, us->meta.resource_version);
	ck_assert_str_eq(o.updated->status.sandbox_id, id);
	assert_writes(&f, "alice", &o, 2);
	ck_assert_int_eq(o.requeue, f.env.opts.resync_ms);
	ck_assert(sk_rfix_has_event(&f, "alice", "Created"));
	outcome_dispose(&o);
	/* steady state: the next call writes nothing and creates nothing */
	once(&f, "alice", "alice", &o);
	ck_assert_msg(o.rc == 0, "%s", o.err.message);
	assert_writes(&f, "alice", &o, 0);
	ck_assert_int_eq(sim_calls(&f, "create", 0), 0);
	ck_assert_int_eq(sim_calls(&f, "health", 0), 1);
	ck_assert_int_eq(o.requeue, f.env.opts.resync_ms);
	outcome_dispose(&o);
	sk_userspace_free(us);
	free(id);
	sk_rfix_teardown(&f);
}
END_TEST

typedef struct bg_call {
	fixture *f;
	const char *name;
	outcome o;
} bg_call;

static void *
bg_once(void *arg)
{
	bg_call *b = arg;

	once(b->f, b->name, b->name, &b->o);
	return NULL;
}

/* Starts once() on another thread with the create held up 1.5 s at the
 * simulator, and waits until the store shows the Creating mark. */
static void
start_held_create(fixture *f, bg_call *b, pthread_t *t, const char *name)
{
	sk_userspace *us = NULL;
	bool marked = false;

	sim_faults(f, "{\"latency\": {\"create\": {\"fixed_ms\": 1500}}}");
	memset(b, 0, sizeof(*b));
	b->f = f;
	b->name = name;
	ck_assert_int_eq(pthread_create(t, NULL, bg_once, b), 0);
	for (int i = 0; i < 100 && !marked; i++) {
		usleep(10000);
		us = sk_rfix_get(f, name);
		marked = us->status.phase == SK_PHASE_CREATING;
		if (marked)
			ck_assert_ptr_null(us->status.sandbox_id);
		sk_userspace_free(us);
	}
	ck_assert_msg(marked, "the Creating mark was never seen while the create was held up");
}

/* 1b. The Creating mark is stored before the create is sent: with the
 * create held up at the simulator, the store already says Creating, nothing
 * bound, while the simulator has no sandbox yet. */
START_TEST(test_mark_before_create)
{
	fixture f;
	bg_call b;
	pthread_t t;
	sk_userspace *us = NULL;
	json_t *sbs = NULL;

	setup(&f);
	sk_rfix_apply(&f, "bert", "bert", NULL);
	start_held_create(&f, &b, &t, "bert");
	ck_assert_int_eq(sim_req(&f, "GET", "/_sim/sandboxes", NULL, &sbs), 200);
	ck_assert_uint_eq(json_array_size(sbs), 0); /* the create is still held up */
	json_decref(sbs);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_msg(b.o.rc == 0, "%s", b.o.err.message);
	us = sk_rfix_get(&f, "bert");
	ck_assert_int_eq(us->status.phase, SK_PHASE_RUNNING);
	ck_assert_ptr_nonnull(us->status.sandbox_id);
	assert_writes(&f, "bert", &b.o, 2);
	sk_userspace_free(us);
	outcome_dispose(&b.o);
	sk_rfix_teardown(&f);
}
END_TEST

/* 1d. New users created at the same time: their status writes
 * and events are coalesced into shared commands, so the store's write
 * commands per new user stay at 3 or fewer (5 when each space writes alone:
 * the mark's claim and replace, the final claim and replace, the event),
 * while each space still gets its own two compare-and-swap writes (the
 * Creating mark, then the binding), its own sandbox and its Created event. */
#define COALESCE_USERS 32

typedef struct coalesce_call {
	fixture *f;
	char name[32];
	sk_userspace *us;
	sk_list_view view;
	sk_sandbox_list listed;
	pthread_barrier_t *start;
	outcome o;
} coalesce_call;

static void *
coalesce_once(void *arg)
{
	coalesce_call *b = arg;
	sk_reconcile_env env = b->f->env; /* one per worker, as the controller has */

	env.provider = sk_rfix_provider(b->f);
	pthread_barrier_wait(b->start);
	b->o.rc =
	        sk_reconcile_object(&env, b->us, &b->view, &b->o.requeue, &b->o.updated, &b->o.err);
	sk_provider_free(env.provider);
	return NULL;
}

START_TEST(test_coalesced_creates)
{
	fixture f;
	coalesce_call *calls = calloc(COALESCE_USERS, sizeof(*calls));
	pthread_t t[COALESCE_USERS];
	pthread_barrier_t start;
	uint64_t before[SK_STORE_WRITE_COLLS], after[SK_STORE_WRITE_COLLS];
	uint64_t w0, w1;
	double per_user;

	setup(&f);
	for (int i = 0; i < COALESCE_USERS; i++) {
		coalesce_call *b = &calls[i];
		snprintf(b->name, sizeof(b->name), "co%02d", i);
		sk_rfix_apply(&f, b->name, b->name, NULL);
	}
	for (int i = 0; i < COALESCE_USERS; i++) {
		coalesce_call *b = &calls[i];
		b->f = &f;
		b->start = &start;
		list_user(&f, b->name, &b->listed);
		b->view.valid = true;
		b->view.for_user = &b->listed;
		b->view.listed_ms = sk_now_ms();
		b->us = sk_rfix_get(&f, b->name);
		b->o.rv_before = b->us->meta.resource_version;
	}
	ck_assert_int_eq(pthread_barrier_init(&start, NULL, COALESCE_USERS), 0);
	w0 = sk_store_write_commands(f.store, before);
	for (int i = 0; i < COALESCE_USERS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, coalesce_once, &calls[i]), 0);
	for (int i = 0; i < COALESCE_USERS; i++)
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
	w1 = sk_store_write_commands(f.store, after);
	per_user = (double)(w1 - w0) / COALESCE_USERS;
	fprintf(stderr,
	        "coalesced creates: %d users, %llu write commands (%.2f per user; "
	        "userspaces %llu, claims %llu, events %llu, other %llu)\n",
	        COALESCE_USERS, (unsigned long long)(w1 - w0), per_user,
	        (unsigned long long)(after[0] - before[0]),
	        (unsigned long long)(after[1] - before[1]),
	        (unsigned long long)(after[2] - before[2]),
	        (unsigned long long)(after[3] - before[3]));
	for (int i = 0; i < COALESCE_USERS; i++) {
		coalesce_call *b = &calls[i];
		sk_userspace *us;
		char *id;

		ck_assert_msg(b->o.rc == 0, "%s: %s", b->name, b->o.err.message);
		id = only_sandbox(&f, b->name, SK_SANDBOX_RUNNING);
		us = sk_rfix_get(&f, b->name);
		ck_assert_int_eq(us->status.phase, SK_PHASE_RUNNING);
		ck_assert_ptr_nonnull(us->status.sandbox_id);
		ck_assert_str_eq(us->status.sandbox_id, id);
		assert_cond(us, SK_COND_READY, "True", "Running");
		ck_assert_ptr_nonnull(b->o.updated);
		ck_assert_int_eq(b->o.updated->meta.resource_version, us->meta.resource_version);
		assert_writes(&f, b->name, &b->o, 2);
		ck_assert_msg(
		        sk_rfix_has_event(&f, b->name, "Created"), "%s: no Created event", b->name);
		sk_userspace_free(us);
		free(id);
	}
	ck_assert_msg(
	        per_user <= 3.0, "%.2f write commands per new user, want at most 3", per_user);
	for (int i = 0; i < COALESCE_USERS; i++) {
		outcome_dispose(&calls[i].o);
		sk_sandbox_list_dispose(&calls[i].listed);
		sk_userspace_free(calls[i].us);
	}
	pthread_barrier_destroy(&start);
	free(calls);
	sk_rfix_teardown(&f);
}
END_TEST

/* 1c. Someone edits the object (a label) while the create runs: the final
 * status write meets a newer resourceVersion whose status is still the
 * Creating mark, so it is retried (execute.c: "retries once only when nobody
 * else changed the status meanwhile") and the binding lands with the label
 * kept (the follow-up checks the stored status, not its own unwritten one,
 * to tell an edit from a concurrent status write). */
START_TEST(test_edit_during_create)
{
	fixture f;
	bg_call b;
	pthread_t t;
	sk_userspace *us, *out = NULL;
	sk_error err = { 0 };

	setup(&f);
	sk_rfix_apply(&f, "cleo", "cleo", NULL);
	start_held_create(&f, &b, &t, "cleo");
	us = sk_rfix_get(&f, "cleo");
	sk_kvlist_set(&us->meta.labels, "team", "x");
	ck_assert_msg(sk_store_update(f.store, us, &out, &err) == 0, "%s", err.message);
	sk_userspace_free(us);
	sk_userspace_free(out);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_msg(b.o.rc == 0, "reconcile: %d %s", b.o.rc, b.o.err.message);
	us = sk_rfix_get(&f, "cleo");
	ck_assert_ptr_nonnull(us->status.sandbox_id);
	ck_assert_int_eq(us->status.phase, SK_PHASE_RUNNING);
	ck_assert_str_eq(sk_kvlist_get(&us->meta.labels, "team"), "x");
	sk_userspace_free(us);
	outcome_dispose(&b.o);
	sk_rfix_teardown(&f);
}
END_TEST

/* 2. A paused (Idle) keeper and a connect waiting: one call resumes it and
 * stores Running + Ready in one write (no Resuming status in between). */
START_TEST(test_resume_one_call)
{
	fixture f;
	outcome o;
	sk_userspace *us;
	char *id;

	setup(&f);
	sk_rfix_apply(&f, "carol", "carol", NULL);
	paused_keeper(&f, "carol");
	id = only_sandbox(&f, "carol", SK_SANDBOX_PAUSED);
	us = sk_rfix_get(&f, "carol");
	ck_assert_int_eq(us->status.phase, SK_PHASE_PAUSED);
	ck_assert_str_eq(us->status.sandbox_id, id);
	sk_userspace_free(us);
	sk_rfix_set_mode(&f, "carol", SK_MODE_RUNNING);
	f.env.wake = true;
	once(&f, "carol", "carol", &o);
	ck_assert_msg(o.rc == 0, "reconcile: %s", o.err.message);
	ck_assert_int_eq(sim_calls(&f, "connect", 0), 1);
	ck_assert_int_eq(sim_calls(&f, "create", 0), 0);
	ck_assert_int_eq(sim_calls(&f, "get", 0), 0);
	ck_assert_int_eq(sim_calls(&f, "list", 0), 0);
	ck_assert_int_eq(sim_calls(&f, "health", 0), 1);
	free(id);
	id = only_sandbox(&f, "carol", SK_SANDBOX_RUNNING);
	us = sk_rfix_get(&f, "carol");
	ck_assert_int_eq(us->status.phase, SK_PHASE_RUNNING);
	ck_assert_str_eq(us->status.sandbox_id, id);
	assert_cond(us, SK_COND_READY, "True", "Running");
	assert_cond(us, SK_COND_DATAPLANE, "True", "Healthy");
	ck_assert_int_eq(us->status.observed_generation, 3);
	assert_writes(&f, "carol", &o, 1);
	ck_assert_int_eq(o.requeue, f.env.opts.resync_ms);
	ck_assert(sk_rfix_has_event(&f, "carol", "Woken"));
	sk_userspace_free(us);
	outcome_dispose(&o);
	free(id);
	sk_rfix_teardown(&f);
}
END_TEST

/* 2b. A resume is one provider call: the connect sets the deadline (the
 * idle timeout); no set_timeout after it, and none in the follow-up (which
 * must see the new end time, not the paused sandbox's old one). */
START_TEST(test_resume_lifecycle_once)
{
	fixture f;
	outcome o;

	setup(&f);
	sk_rfix_apply(&f, "cody", "cody", NULL);
	paused_keeper(&f, "cody");
	sk_rfix_set_mode(&f, "cody", SK_MODE_RUNNING);
	f.env.wake = true;
	once(&f, "cody", "cody", &o);
	ck_assert_msg(o.rc == 0, "reconcile: %s", o.err.message);
	ck_assert_int_eq(sim_calls(&f, "connect", 0), 1);
	ck_assert_int_eq(sim_calls(&f, "timeout", 0), 0);
	outcome_dispose(&o);
	sk_rfix_teardown(&f);
}
END_TEST

/* ---- answer first: env->started before the writes ---- */

/* What env->started was told, and what the store held at that moment. */
typedef struct told {
	fixture *f;
	const char *event; /* the event the run records (Woken, Created) */
	bool meddle; /* when told, write the stored status: the run's write conflicts */
	int calls;
	sk_userspace *next;
	char *keeper;
	bool healthy, running, detail_seen;
	sk_phase stored_phase; /* the stored object's phase when told */
	int64_t stored_rv;
	bool event_then; /* the event was stored when told */
	sk_reconcile_report report; /* env->started needs a report */
} told;

static void
on_started(void *arg, const sk_userspace *next, const sk_reconcile_report *r)
{
	told *t = arg;
	sk_userspace *now = sk_rfix_get(t->f, next->meta.name);

	t->calls++;
	sk_userspace_free(t->next);
	t->next = sk_userspace_dup(next);
	free(t->keeper);
	t->keeper = r->keeper_id ? strdup(r->keeper_id) : NULL;
	t->healthy = r->healthy;
	t->running = r->running;
	t->detail_seen = r->detail_seen;
	t->stored_phase = now->status.phase;
	t->stored_rv = now->meta.resource_version;
	t->event_then = sk_rfix_has_event(t->f, next->meta.name, t->event);
	if (t->meddle) {
		sk_userspace_status st;
		sk_userspace *out = NULL;
		sk_error err = { 0 };
		sk_userspace_status_copy(&st, &now->status);
		st.last_activity_ms += 1000;
		ck_assert_msg(sk_store_write_status(t->f->store, now, &st, &out, &err) == 0, "%s",
		        err.message);
		sk_userspace_status_dispose(&st);
		sk_userspace_free(out);
	}
	sk_userspace_free(now);
}

static void
told_init(told *t, fixture *f, const char *event)
{
	memset(t, 0, sizeof(*t));
	t->f = f;
	t->event = event;
	f->env.started = on_started;
	f->env.started_arg = t;
	f->env.report = &t->report;
}

static void
told_dispose(told *t)
{
	sk_userspace_free(t->next);
	free(t->keeper);
	sk_reconcile_report_dispose(&t->report);
}

/* The stored status is the one told, but for lastReconcileTime. */
static void
assert_stored_as_told(fixture *f, const told *t)
{
	sk_userspace *us = sk_rfix_get(f, t->next->meta.name);
	sk_userspace_status st;
	bool same;

	sk_userspace_status_copy(&st, &t->next->status);
	st.last_reconcile_ms = us->status.last_reconcile_ms;
	same = sk_userspace_status_equal(&st, &us->status);
	sk_userspace_status_dispose(&st);
	ck_assert_msg(same, "%s: the status written is not the one told", us->meta.name);
	ck_assert_int_gt(us->meta.resource_version, t->stored_rv);
	sk_userspace_free(us);
}

/* A wake is told before its status write and its Woken event: the object
 * told is the one then written (Running, Ready, the keeper bound), the
 * keeper as the run saw it (running, probed healthy, its envd details). */
START_TEST(test_resume_answer_first)
{
	fixture f;
	outcome o;
	told t;
	char *id;

	setup(&f);
	sk_rfix_apply(&f, "abe", "abe", NULL);
	paused_keeper(&f, "abe");
	id = only_sandbox(&f, "abe", SK_SANDBOX_PAUSED);
	sk_rfix_set_mode(&f, "abe", SK_MODE_RUNNING);
	told_init(&t, &f, "Woken");
	f.env.wake = true;
	once(&f, "abe", "abe", &o);
	ck_assert_msg(o.rc == 0, "reconcile: %s", o.err.message);
	ck_assert_int_eq(t.calls, 1);
	ck_assert_int_eq(t.next->status.phase, SK_PHASE_RUNNING);
	ck_assert_str_eq(t.next->status.sandbox_id, id);
	assert_cond(t.next, SK_COND_READY, "True", "Running");
	ck_assert_str_eq(t.keeper, id);
	ck_assert(t.healthy && t.running && t.detail_seen);
	/* told before the writes: the store still had the paused space */
	ck_assert_int_eq(t.stored_phase, SK_PHASE_PAUSED);
	ck_assert_int_eq(t.next->meta.resource_version, t.stored_rv);
	ck_assert_msg(!t.event_then, "the Woken event was written before the answer");
	/* then written as told, the event too, one status write as before */
	assert_stored_as_told(&f, &t);
	ck_assert(sk_rfix_has_event(&f, "abe", "Woken"));
	assert_writes(&f, "abe", &o, 1);
	told_dispose(&t);
	outcome_dispose(&o);
	free(id);
	sk_rfix_teardown(&f);
}
END_TEST

/* A create is told after the Creating mark (crash safety) and the
 * create's probe, before the binding is written and the Created event. */
START_TEST(test_create_answer_first)
{
	fixture f;
	outcome o;
	told t;
	char *id;

	setup(&f);
	sk_rfix_apply(&f, "bea", "bea", NULL);
	told_init(&t, &f, "Created");
	once(&f, "bea", "bea", &o);
	ck_assert_msg(o.rc == 0, "reconcile: %s", o.err.message);
	id = only_sandbox(&f, "bea", SK_SANDBOX_RUNNING);
	ck_assert_int_eq(t.calls, 1);
	ck_assert_str_eq(t.next->status.sandbox_id, id);
	ck_assert_int_eq(t.next->status.phase, SK_PHASE_RUNNING);
	ck_assert_int_eq(t.stored_phase, SK_PHASE_CREATING);
	ck_assert_msg(!t.event_then, "the Created event was written before the answer");
	assert_stored_as_told(&f, &t);
	ck_assert(sk_rfix_has_event(&f, "bea", "Created"));
	assert_writes(&f, "bea", &o, 2); /* the mark, then the binding */
	told_dispose(&t);
	outcome_dispose(&o);
	free(id);
	sk_rfix_teardown(&f);
}
END_TEST

static bool
may_act_once(void *arg, const char *user_id)
{
	int *n = arg;

	(void)user_id;
	return (*n)++ == 0;
}

/* The shard's lease lost after the resume: nothing told, nothing written
 * (the resume itself ran under the fence). */
START_TEST(test_answer_first_fenced)
{
	fixture f;
	outcome o;
	told t;
	sk_userspace *us;
	int n = 0;

	setup(&f);
	sk_rfix_apply(&f, "cid", "cid", NULL);
	paused_keeper(&f, "cid");
	sk_rfix_set_mode(&f, "cid", SK_MODE_RUNNING);
	told_init(&t, &f, "Woken");
	f.env.wake = true;
	f.env.may_act = may_act_once;
	f.env.may_act_arg = &n;
	once(&f, "cid", "cid", &o);
	ck_assert_int_eq(o.rc, SK_EUNAVAILABLE);
	ck_assert_int_eq(sim_calls(&f, "connect", 0), 1); /* it acted, then lost the fence */
	ck_assert_int_eq(t.calls, 0);
	us = sk_rfix_get(&f, "cid");
	ck_assert_int_eq(us->status.phase, SK_PHASE_PAUSED);
	assert_writes(&f, "cid", &o, 0);
	sk_userspace_free(us);
	told_dispose(&t);
	outcome_dispose(&o);
	sk_rfix_teardown(&f);
}
END_TEST

/* The status write conflicts after the answer (someone wrote the status
 * meanwhile): the answer stood (the keeper runs), the run fails with the
 * conflict and retries, and the held Woken event is still recorded. */
START_TEST(test_answer_first_then_conflict)
{
	fixture f;
	outcome o;
	told t;
	char *id;

	setup(&f);
	sk_rfix_apply(&f, "dee", "dee", NULL);
	paused_keeper(&f, "dee");
	sk_rfix_set_mode(&f, "dee", SK_MODE_RUNNING);
	told_init(&t, &f, "Woken");
	t.meddle = true;
	f.env.wake = true;
	once(&f, "dee", "dee", &o);
	ck_assert_int_eq(o.rc, SK_ECONFLICT);
	ck_assert_int_eq(t.calls, 1);
	id = only_sandbox(&f, "dee", SK_SANDBOX_RUNNING);
	ck_assert_str_eq(t.next->status.sandbox_id, id);
	ck_assert(sk_rfix_has_event(&f, "dee", "Woken"));
	told_dispose(&t);
	outcome_dispose(&o);
	free(id);
	sk_rfix_teardown(&f);
}
END_TEST

/* 2c. The data plane answers 504 for a while after the resume: one write,
 * phase Resuming within the grace, not Ready, short requeue; no answer
 * first (the keeper is not healthy yet). */
START_TEST(test_resume_dataplane_504)
{
	fixture f;
	outcome o;
	sk_userspace *us;
	told t;

	setup(&f);
	sk_rfix_apply(&f, "dora", "dora", NULL);
	paused_keeper(&f, "dora");
	sk_rfix_set_mode(&f, "dora", SK_MODE_RUNNING);
	f.env.wake = true;
	told_init(&t, &f, "Woken");
	sim_faults(&f, "{\"resume_504_s\": 30}");
	once(&f, "dora", "dora", &o);
	ck_assert_msg(o.rc == 0, "reconcile: %s", o.err.message);
	ck_assert_int_eq(t.calls, 0);
	told_dispose(&t);
	ck_assert_int_eq(sim_calls(&f, "connect", 0), 1);
	ck_assert_int_eq(sim_calls(&f, "health", 504), 1);
	us = sk_rfix_get(&f, "dora");
	ck_assert_int_eq(us->status.phase, SK_PHASE_RESUMING);
	assert_cond(us, SK_COND_READY, "False", "Resuming");
	assert_cond(us, SK_COND_DATAPLANE, "Unknown", "Resuming");
	ck_assert_ptr_nonnull(strstr(cond(us, SK_COND_READY)->message, "504"));
	assert_writes(&f, "dora", &o, 1);
	ck_assert_int_eq(o.requeue, f.env.opts.short_requeue_ms);
	sk_userspace_free(us);
	outcome_dispose(&o);
	sk_rfix_teardown(&f);
}
END_TEST

/* 3. The data plane answers 502 right after the create: the follow-up still
 * stores the binding, the status is not Ready, and the requeue is short;
 * once the data plane answers, the next call makes it Ready without a
 * second create. */
START_TEST(test_create_dataplane_502)
{
	fixture f;
	outcome o;
	sk_userspace *us;
	char *id;

	setup(&f);
	sk_rfix_apply(&f, "dave", "dave", NULL);
	sim_faults(&f, "{\"errors\": {\"health\": {\"status\": 502}}}");
	once(&f, "dave", "dave", &o);
	ck_assert_msg(o.rc == 0, "reconcile: %s", o.err.message);
	ck_assert_int_eq(sim_calls(&f, "create", 0), 1);
	ck_assert_int_eq(sim_calls(&f, "health", 502), 1);
	ck_assert_int_eq(sim_calls(&f, "health", 0), 1);
	id = only_sandbox(&f, "dave", SK_SANDBOX_RUNNING);
	us = sk_rfix_get(&f, "dave");
	ck_assert_ptr_nonnull(us->status.sandbox_id);
	ck_assert_str_eq(us->status.sandbox_id, id);
	ck_assert_int_ne(us->status.phase, SK_PHASE_RUNNING);
	ck_assert_int_eq(us->status.phase, SK_PHASE_CREATING); /* within the grace */
	assert_cond(us, SK_COND_READY, "False", "Starting");
	assert_cond(us, SK_COND_DATAPLANE, "Unknown", "Starting");
	ck_assert(!sk_userspace_is_ready(us));
	assert_writes(&f, "dave", &o, 2);
	ck_assert_int_eq(o.requeue, f.env.opts.short_requeue_ms);
	sk_userspace_free(us);
	outcome_dispose(&o);
	/* the data plane answers now */
	sim_faults(&f, "{\"errors\": {\"health\": null}}");
	once(&f, "dave", "dave", &o);
	ck_assert_msg(o.rc == 0, "reconcile: %s", o.err.message);
	us = sk_rfix_get(&f, "dave");
	ck_assert_int_eq(us->status.phase, SK_PHASE_RUNNING);
	ck_assert_str_eq(us->status.sandbox_id, id);
	assert_cond(us, SK_COND_READY, "True", "Running");
	ck_assert_int_eq(sim_calls(&f, "create", 0), 0);
	assert_writes(&f, "dave", &o, 1);
	ck_assert_int_eq(o.requeue, f.env.opts.resync_ms);
	sk_userspace_free(us);
	outcome_dispose(&o);
	free(id);
	sk_rfix_teardown(&f);
}
END_TEST

/* 4. The create fails with a 500 (it may have happened): no follow-up
 * round, the failure is written with the Creating mark kept, nothing bound. */
START_TEST(test_create_fails_500)
{
	fixture f;
	outcome o;
	sk_userspace *us;
	sk_sandbox_list l;

	setup(&f);
	sk_rfix_apply(&f, "erin", "erin", NULL);
	sim_faults(&f, "{\"errors\": {\"create\": {\"status\": 500, \"count\": 1}}}");
	once(&f, "erin", "erin", &o);
	ck_assert_int_ne(o.rc, 0);
	ck_assert(sk_error_is_transient(o.rc));
	ck_assert_ptr_nonnull(strstr(o.err.message, "create"));
	us = sk_rfix_get(&f, "erin");
	ck_assert_ptr_null(us->status.sandbox_id);
	ck_assert_int_eq(us->status.phase, SK_PHASE_CREATING);
	assert_cond(us, SK_COND_SYNCED, "False", "CreateFailed");
	assert_cond(us, SK_COND_READY, "False", "CreateFailed");
	ck_assert_ptr_nonnull(us->status.message);
	ck_assert_ptr_nonnull(strstr(us->status.message, "500"));
	ck_assert(sk_rfix_has_event(&f, "erin", "CreateFailed"));
	ck_assert(!sk_rfix_has_event(&f, "erin", "Created"));
	/* the mark and the failure; a follow-up would have looked the user up */
	assert_writes(&f, "erin", &o, 2);
	ck_assert_int_eq(sim_calls(&f, "create", 500), 1);
	ck_assert_int_eq(sim_api_calls(&f), 1);
	ck_assert_int_eq(sim_calls(&f, "health", 0), 0);
	list_user(&f, "erin", &l);
	ck_assert_uint_eq(l.len, 0);
	sk_sandbox_list_dispose(&l);
	sk_userspace_free(us);
	outcome_dispose(&o);
	sk_rfix_teardown(&f);
}
END_TEST

/* 4b. The create is rejected with a 429 (nothing made): no follow-up, the
 * mark is cleared (phase Pending), nothing bound. */
START_TEST(test_create_rejected_429)
{
	fixture f;
	outcome o;
	sk_userspace *us;
	sk_sandbox_list l;

	setup(&f);
	sk_rfix_apply(&f, "fred", "fred", NULL);
	sim_faults(&f, "{\"errors\": {\"create\": {\"status\": 429, \"count\": 1}}}");
	once(&f, "fred", "fred", &o);
	ck_assert_int_ne(o.rc, 0);
	ck_assert(sk_error_is_transient(o.rc));
	us = sk_rfix_get(&f, "fred");
	ck_assert_ptr_null(us->status.sandbox_id);
	ck_assert_int_eq(us->status.phase, SK_PHASE_PENDING);
	assert_cond(us, SK_COND_SYNCED, "False", "CreateFailed");
	assert_cond(us, SK_COND_READY, "False", "CreateFailed");
	ck_assert_ptr_nonnull(strstr(us->status.message, "429"));
	assert_writes(&f, "fred", &o, 2);
	ck_assert_int_eq(sim_calls(&f, "create", 429), 1);
	ck_assert_int_eq(sim_api_calls(&f), 1);
	ck_assert_int_eq(sim_calls(&f, "health", 0), 0);
	list_user(&f, "fred", &l);
	ck_assert_uint_eq(l.len, 0);
	sk_sandbox_list_dispose(&l);
	sk_userspace_free(us);
	outcome_dispose(&o);
	/* the next call creates at once (no create grace after a rejection) */
	once(&f, "fred", "fred", &o);
	ck_assert_msg(o.rc == 0, "%s", o.err.message);
	us = sk_rfix_get(&f, "fred");
	ck_assert_int_eq(us->status.phase, SK_PHASE_RUNNING);
	assert_cond(us, SK_COND_READY, "True", "Running");
	ck_assert_int_eq(sim_calls(&f, "create", 0), 1);
	assert_writes(&f, "fred", &o, 2);
	sk_userspace_free(us);
	outcome_dispose(&o);
	sk_rfix_teardown(&f);
}
END_TEST

/* 5. Mode Paused and no sandbox: nothing created, nothing probed, one write. */
START_TEST(test_paused_no_sandbox)
{
	fixture f;
	outcome o;
	sk_userspace *us;
	sk_sandbox_list l;

	setup(&f);
	sk_rfix_apply(&f, "gina", "gina", ", mode: Paused");
	once(&f, "gina", "gina", &o);
	ck_assert_msg(o.rc == 0, "reconcile: %s", o.err.message);
	us = sk_rfix_get(&f, "gina");
	ck_assert_int_eq(us->status.phase, SK_PHASE_PAUSED);
	ck_assert_ptr_null(us->status.sandbox_id);
	assert_cond(us, SK_COND_READY, "True", "Paused");
	assert_writes(&f, "gina", &o, 1);
	ck_assert_int_eq(sim_api_calls(&f), 0);
	ck_assert_int_eq(sim_calls(&f, "health", 0), 0);
	ck_assert_int_eq(o.requeue, f.env.opts.resync_ms);
	list_user(&f, "gina", &l);
	ck_assert_uint_eq(l.len, 0);
	sk_sandbox_list_dispose(&l);
	sk_userspace_free(us);
	outcome_dispose(&o);
	sk_rfix_teardown(&f);
}
END_TEST

/* 6. Mode Running and a running unbound sandbox of the user: adopted (bind
 * only, no create or resume), so no follow-up: one probe, one write. */
START_TEST(test_adopt_no_followup)
{
	fixture f;
	outcome o;
	sk_userspace *us;
	sk_sandbox sb;

	setup(&f);
	precreate(&f, "hank", &sb);
	sk_rfix_apply(&f, "hank", "hank", NULL);
	once(&f, "hank", "hank", &o);
	ck_assert_msg(o.rc == 0, "reconcile: %s", o.err.message);
	us = sk_rfix_get(&f, "hank");
	ck_assert_str_eq(us->status.sandbox_id, sb.id);
	ck_assert_int_eq(us->status.phase, SK_PHASE_RUNNING);
	assert_cond(us, SK_COND_READY, "True", "Running");
	assert_writes(&f, "hank", &o, 1);
	ck_assert_int_eq(sim_calls(&f, "create", 0), 0);
	ck_assert_int_eq(sim_calls(&f, "connect", 0), 0);
	ck_assert_int_eq(sim_calls(&f, "health", 0), 1);
	sk_userspace_free(us);
	sk_sandbox_dispose(&sb);
	outcome_dispose(&o);
	sk_rfix_teardown(&f);
}
END_TEST

/* 7. A resume that also deletes a duplicate needs its binding stored
 * first: no follow-up, the Resuming status is written, the requeue is short. */
START_TEST(test_resume_with_duplicate_no_followup)
{
	fixture f;
	outcome o;
	sk_userspace *us;
	sk_sandbox dup;
	sk_sandbox_list l;
	char *id;

	setup(&f);
	sk_rfix_apply(&f, "ivy", "ivy", NULL);
	paused_keeper(&f, "ivy");
	id = only_sandbox(&f, "ivy", SK_SANDBOX_PAUSED);
	precreate(&f, "ivy", &dup);
	sk_rfix_set_mode(&f, "ivy", SK_MODE_RUNNING);
	f.env.wake = true;
	once(&f, "ivy", "ivy", &o);
	ck_assert_msg(o.rc == 0, "reconcile: %s", o.err.message);
	us = sk_rfix_get(&f, "ivy");
	ck_assert_str_eq(us->status.sandbox_id, id);
	ck_assert_int_eq(us->status.phase, SK_PHASE_RESUMING);
	assert_cond(us, SK_COND_READY, "False", "Resuming");
	assert_writes(&f, "ivy", &o, 1);
	ck_assert_int_eq(sim_calls(&f, "connect", 0), 1);
	ck_assert_int_eq(sim_calls(&f, "kill", 0), 1);
	ck_assert_int_eq(sim_calls(&f, "health", 0), 0);
	ck_assert_int_eq(o.requeue, f.env.opts.short_requeue_ms);
	list_user(&f, "ivy", &l);
	ck_assert_uint_eq(l.len, 1);
	ck_assert_str_eq(l.items[0].id, id);
	sk_sandbox_list_dispose(&l);
	sk_userspace_free(us);
	sk_sandbox_dispose(&dup);
	outcome_dispose(&o);
	free(id);
	sk_rfix_teardown(&f);
}
END_TEST

Suite *
sk_suite_reconcile_followup(void)
{
	Suite *s = suite_create("reconcile_followup");
	TCase *tc = tcase_create("sim");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_create_one_call);
	tcase_add_test(tc, test_mark_before_create);
	tcase_add_test(tc, test_coalesced_creates);
	tcase_add_test(tc, test_resume_one_call);
	tcase_add_test(tc, test_resume_dataplane_504);
	tcase_add_test(tc, test_create_dataplane_502);
	tcase_add_test(tc, test_create_fails_500);
	tcase_add_test(tc, test_create_rejected_429);
	tcase_add_test(tc, test_paused_no_sandbox);
	tcase_add_test(tc, test_adopt_no_followup);
	tcase_add_test(tc, test_resume_with_duplicate_no_followup);
	tcase_add_test(tc, test_resume_lifecycle_once);
	tcase_add_test(tc, test_edit_during_create);
	tcase_add_test(tc, test_resume_answer_first);
	tcase_add_test(tc, test_create_answer_first);
	tcase_add_test(tc, test_answer_first_fenced);
	tcase_add_test(tc, test_answer_first_then_conflict);
	suite_add_tcase(s, tc);
	return s;
}
