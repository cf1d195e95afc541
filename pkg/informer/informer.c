/*
 * informer: list + poll-by-resourceVersion + periodic relist of UserSpaces
 * into a mutex-guarded cache, with change callbacks. Reconnects after store
 * failures with the reflector's backoff (800 ms doubling to 30 s).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/util.h"
#include "informer.h"

struct sk_informer {
	sk_informer_options opts;
	pthread_mutex_t mu;
	pthread_cond_t cond; /* stop requests and sync waiters */
	sk_strmap *objects; /* name -> entry* (owned) */
	sk_strmap *users; /* spec.userID -> entry* (of objects: one lookup by user) */
	int64_t last_rv;
	int64_t read_wall_ms; /* wall clock at the start of the last good read, 0: none */
	bool synced;
	bool running;
	bool stop;
	pthread_t thread;
	sk_informer_stats stats;
};

/* One decoded version of a cached object, shared by the cache and its
 * borrowers (sk_informer_borrow); the last reference frees it. */
typedef struct shared {
	atomic_int refs;
	sk_userspace *us;
} shared;

/* A cached object: its packed form, and its decoded form once borrowed. */
typedef struct entry {
	sk_packed_userspace *p; /* owned */
	shared *decoded; /* NULL until the first borrow of this version */
	bool used; /* borrowed since the last full relist */
} entry;

static void
shared_put(shared *s)
{
	if (s != NULL && atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1) {
		sk_userspace_free(s->us);
		free(s);
	}
}

/* Drops the cache's reference to the decoded form (a borrower keeps its own). */
static void
entry_forget_decoded(entry *e)
{
	shared_put(e->decoded);
	e->decoded = NULL;
}

static void
entry_free(void *v)
{
	entry *e = v;

	if (e == NULL)
		return;
	entry_forget_decoded(e);
	sk_packed_free(e->p);
	free(e);
}

/* Names whose callbacks are due once the lock is released. */
typedef struct changes {
	char **names;
	size_t len, cap;
} changes;

static void
changes_add(changes *c, const char *name)
{
	if (c->len == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 16;
		c->names = sk_realloc(c->names, c->cap * sizeof(*c->names));
	}
	c->names[c->len++] = sk_strdup(name);
}

static void
changes_fire(sk_informer *inf, changes *c)
{
	for (size_t i = 0; i < c->len; i++) {
		if (inf->opts.on_change)
			inf->opts.on_change(c->names[i], inf->opts.payload);
		free(c->names[i]);
	}
	free(c->names);
	c->names = NULL;
	c->len = c->cap = 0;
}

static void
informer_log(sk_informer *inf, sk_log_level lvl, const char *msg, const char *kv)
{
	if (inf->opts.log)
		inf->opts.log(lvl, msg, kv, inf->opts.log_payload);
}

int
sk_informer_new(sk_informer **out, const sk_informer_options *opts, sk_error *err)
{
	sk_informer_options def = SK_INFORMER_OPTIONS_INIT;
	sk_informer *inf;

	*out = NULL;
	if (!opts || !opts->store)
		return sk_error_set(err, SK_EINVALID, "informer: a store is required");
	inf = sk_calloc(1, sizeof(*inf));
	inf->opts = *opts;
	if (inf->opts.poll_ms <= 0)
		inf->opts.poll_ms = def.poll_ms;
	if (inf->opts.relist_ms <= 0)
		inf->opts.relist_ms = def.relist_ms;
	if (inf->opts.lookback < 0)
		inf->opts.lookback = def.lookback;
	pthread_mutex_init(&inf->mu, NULL);
	sk_cond_init_monotonic(&inf->cond);
	inf->objects = sk_strmap_new(entry_free);
	inf->users = sk_strmap_new(NULL);
	*out = inf;
	return 0;
}

void
sk_informer_free(sk_informer *inf)
{
	if (!inf)
		return;
	sk_informer_stop(inf);
	sk_strmap_free(inf->objects);
	sk_strmap_free(inf->users);
	pthread_mutex_destroy(&inf->mu);
	pthread_cond_destroy(&inf->cond);
	free(inf);
}

/* ---- cache updates (lock held) ---- */

/* Drops user_id -> e when e holds it; old is e's packed form before a
 * change (its userID is the one indexed). */
static void
user_unlink(sk_informer *inf, const entry *e, const sk_packed_userspace *old)
{
	const char *user = old ? sk_packed_user_id(old) : NULL;

	if (user && sk_strmap_get(inf->users, user) == e)
		sk_strmap_remove(inf->users, user);
}

/* The one comparison is the packed form's (one memcmp); this packs both. */
bool
sk_informer_status_only_change(const sk_userspace *a, const sk_userspace *b)
{
	sk_error err;
	sk_packed_userspace *pa = sk_store_pack(a, &err);
	sk_packed_userspace *pb = pa ? sk_store_pack(b, &err) : NULL;
	bool r = pa && pb && sk_packed_status_only_change(pa, pb);

	sk_packed_free(pa);
	sk_packed_free(pb);
	return r;
}

/* The packed form of a cached name, NULL when none. */
static sk_packed_userspace *
cached_packed(sk_informer *inf, const char *name)
{
	entry *e = sk_strmap_get(inf->objects, name);

	return e ? e->p : NULL;
}

/* Keeps p (owned: cached, or freed when not newer than the cached copy);
 * returns whether a change callback is due (it changed, and not only in
 * status when so configured). A borrowed older version lives on with its
 * borrowers: the cache only drops its own reference. */
static bool
cache_upsert(sk_informer *inf, sk_packed_userspace *p)
{
	const char *name = sk_packed_name(p), *user = sk_packed_user_id(p);
	entry *e = sk_strmap_get(inf->objects, name);
	sk_packed_userspace *old = e ? e->p : NULL;
	int64_t rv = sk_packed_resource_version(p);
	bool notify;

	if (rv > inf->last_rv)
		inf->last_rv = rv;
	if (old && sk_packed_resource_version(old) >= rv) {
		sk_packed_free(p);
		return false;
	}
	notify = !old || !inf->opts.skip_status_only || !sk_packed_status_only_change(old, p);
	if (!notify)
		inf->stats.skipped++;
	if (e == NULL) {
		e = sk_calloc(1, sizeof(*e));
		sk_strmap_put(inf->objects, name, e);
	}
	user_unlink(inf, e, old);
	entry_forget_decoded(e);
	e->p = p;
	sk_packed_free(old);
	if (user)
		sk_strmap_put(inf->users, user, e);
	return notify;
}

static void
cache_delete(sk_informer *inf, const char *name)
{
	entry *e = sk_strmap_take(inf->objects, name);

	user_unlink(inf, e, e ? e->p : NULL);
	entry_free(e);
}

/* After a full relist: the decoded form of an object nobody borrowed since
 * the previous one is dropped, so that decoded copies are kept only for
 * the spaces in use (connects), not for every cached object. */
static void
sweep_one(const char *key, void *value, void *payload)
{
	entry *e = value;

	(void)key;
	(void)payload;
	if (!e->used)
		entry_forget_decoded(e);
	e->used = false;
}

/* Removes cached names absent from a full list. */
static void
drop_missing(sk_informer *inf, const sk_strmap *present, changes *c)
{
	size_t n;
	char **names = sk_strmap_keys(inf->objects, &n);

	for (size_t i = 0; i < n; i++) {
		if (!sk_strmap_has(present, names[i])) {
			cache_delete(inf, names[i]);
			changes_add(c, names[i]);
		}
	}
	sk_strv_free(names, n);
}

/* ---- list and poll ---- */

/* One list or poll: objects go into the cache packed as they arrive, so
 * a list of 10,000 never sits decoded in memory. */
typedef struct scan_ctx {
	sk_informer *inf;
	changes c;
	sk_strmap *present; /* relist: the names listed; poll: NULL */
} scan_ctx;

static void
scan_one(sk_packed_userspace *p, void *arg)
{
	scan_ctx *x = arg;

	pthread_mutex_lock(&x->inf->mu);
	if (x->present)
		sk_strmap_put(x->present, sk_packed_name(p), NULL);
	if (cache_upsert(x->inf, p)) /* true: p is cached, still valid under mu */
		changes_add(&x->c, sk_packed_name(p));
	pthread_mutex_unlock(&x->inf->mu);
}

/* Counts a scan and fires its callbacks: on an error too, for the objects
 * taken before it (a later list would not see them as changes). */
static void
scan_finish(sk_informer *inf, scan_ctx *x, int rc, int64_t started_wall_ms)
{
	pthread_mutex_lock(&inf->mu);
	if (rc == 0)
		inf->read_wall_ms = started_wall_ms;
	if (rc != 0)
		inf->stats.errors++;
	else if (x->present) {
		drop_missing(inf, x->present, &x->c);
		sk_strmap_foreach(inf->objects, sweep_one, NULL);
		inf->stats.relists++;
	} else
		inf->stats.polls++;
	inf->stats.changes += x->c.len;
	pthread_mutex_unlock(&inf->mu);
	changes_fire(inf, &x->c);
}

int
sk_informer_relist(sk_informer *inf, sk_error *err)
{
	scan_ctx x = { inf, { 0 }, sk_strmap_new(NULL) };
	int64_t started = sk_now_ms();
	int rc = sk_store_scan_packed(inf->opts.store, -1, scan_one, &x, err);

	/* Handlers see the listed objects before anyone is told the cache has
	 * synced (client-go's HasSynced contract). */
	scan_finish(inf, &x, rc, started);
	sk_strmap_free(x.present);
	if (rc != 0)
		return rc;
	pthread_mutex_lock(&inf->mu);
	inf->synced = true;
	pthread_cond_broadcast(&inf->cond);
	pthread_mutex_unlock(&inf->mu);
	return 0;
}

void
sk_informer_observe(sk_informer *inf, const sk_userspace *us)
{
	changes c = { 0 };
	sk_error err;
	sk_packed_userspace *p = sk_store_pack(us, &err);

	if (p == NULL) { /* not storable, so not stored: nothing to cache */
		char kv[SK_ERROR_MSG_MAX + 16];
		snprintf(kv, sizeof(kv), "error=\"%s\"", err.message);
		informer_log(inf, SK_LOG_WARN, "informer: cannot pack a written copy", kv);
		return;
	}
	pthread_mutex_lock(&inf->mu);
	if (cache_upsert(inf, p))
		changes_add(&c, us->meta.name);
	pthread_mutex_unlock(&inf->mu);
	changes_fire(inf, &c);
}

int
sk_informer_poll(sk_informer *inf, sk_error *err)
{
	scan_ctx x = { inf, { 0 }, NULL };
	int64_t since, read_wall, started = sk_now_ms();
	int rc;

	pthread_mutex_lock(&inf->mu);
	since = inf->last_rv - inf->opts.lookback;
	read_wall = inf->read_wall_ms;
	pthread_mutex_unlock(&inf->mu);
	/* Every write that can have landed since the last read: another
	 * process's versions may trail ours by more than the look-back. */
	if (read_wall > 0) {
		int64_t floor = sk_store_rv_floor(inf->opts.store, read_wall - SK_INFORMER_LATE_MS);
		if (floor < since)
			since = floor;
	}
	rc = sk_store_scan_packed(inf->opts.store, since < 0 ? 0 : since, scan_one, &x, err);
	scan_finish(inf, &x, rc, started);
	return rc;
}

/* ---- the thread ---- */

/* Sleeps up to ms unless stopped; returns false once stop was asked. */
static bool
informer_sleep(sk_informer *inf, int64_t ms)
{
	bool go;

	pthread_mutex_lock(&inf->mu);
	if (!inf->stop)
		sk_cond_wait_ms(&inf->cond, &inf->mu, ms);
	go = !inf->stop;
	pthread_mutex_unlock(&inf->mu);
	return go;
}

/* The pause before the next poll: poll_ms, or longer when reading took long,
 * so that reading stays under 1/SK_INFORMER_DUTY_DIVISOR of the time. On a
 * real MongoDB a poll reads the resourceVersion index and takes milliseconds;
 * FerretDB's SQLite backend reads (and decodes) the whole collection for it,
 * about 0.25 ms per object, so 10,000 objects polled every second would keep
 * it busy for nothing: the informer stretches its period instead. */
int64_t
sk_informer_poll_pause(int64_t poll_ms, int64_t read_ms)
{
	int64_t pause = read_ms * (SK_INFORMER_DUTY_DIVISOR - 1);

	if (pause > SK_INFORMER_MAX_PAUSE_MS)
		pause = SK_INFORMER_MAX_PAUSE_MS;
	return pause > poll_ms ? pause : poll_ms;
}

static void *
informer_main(void *arg)
{
	sk_informer *inf = arg;
	int64_t next_relist = 0, backoff = 0, pause = 0;

	/* Named so that its CPU can be read apart (make bench). */
	pthread_setname_np(pthread_self(), "sk-informer");
	do {
		sk_error err = { 0 };
		int64_t now = sk_monotonic_ms();
		bool relist = !sk_informer_has_synced(inf) || now >= next_relist;
		int rc = relist ? sk_informer_relist(inf, &err) : sk_informer_poll(inf, &err);

		pause = sk_informer_poll_pause(inf->opts.poll_ms, sk_monotonic_ms() - now);

		if (rc != 0) {
			char kv[SK_ERROR_MSG_MAX + 64];
			backoff = backoff ? backoff * 2 : 800;
			if (backoff > 30000)
				backoff = 30000;
			snprintf(kv, sizeof(kv), "error=\"%s\" retry_ms=%lld", err.message,
			        (long long)backoff);
			informer_log(inf, SK_LOG_WARN, "informer: store read failed", kv);
			continue;
		}
		backoff = 0;
		if (relist)
			next_relist = now + inf->opts.relist_ms;
	} while (informer_sleep(inf, backoff ? backoff : pause));
	return NULL;
}

int
sk_informer_start(sk_informer *inf, sk_error *err)
{
	pthread_mutex_lock(&inf->mu);
	if (inf->running) {
		pthread_mutex_unlock(&inf->mu);
		return 0;
	}
	inf->stop = false;
	if (pthread_create(&inf->thread, NULL, informer_main, inf) != 0) {
		pthread_mutex_unlock(&inf->mu);
		return sk_error_set(err, SK_ERROR, "informer: cannot start thread");
	}
	inf->running = true;
	pthread_mutex_unlock(&inf->mu);
	return 0;
}

void
sk_informer_cancel(sk_informer *inf)
{
	pthread_mutex_lock(&inf->mu);
	inf->stop = true;
	pthread_cond_broadcast(&inf->cond);
	pthread_mutex_unlock(&inf->mu);
}

void
sk_informer_stop(sk_informer *inf)
{
	bool join;

	sk_informer_cancel(inf);
	pthread_mutex_lock(&inf->mu);
	join = inf->running;
	inf->running = false;
	pthread_mutex_unlock(&inf->mu);
	if (join)
		pthread_join(inf->thread, NULL);
}

/* ---- readers ---- */

bool
sk_informer_has_synced(sk_informer *inf)
{
	bool s;

	pthread_mutex_lock(&inf->mu);
	s = inf->synced;
	pthread_mutex_unlock(&inf->mu);
	return s;
}

bool
sk_informer_wait_synced(sk_informer *inf, int64_t timeout_ms)
{
	int64_t deadline = sk_monotonic_ms() + timeout_ms;
	bool s;

	pthread_mutex_lock(&inf->mu);
	while (!inf->synced && sk_monotonic_ms() < deadline)
		sk_cond_wait_ms(&inf->cond, &inf->mu, 50);
	s = inf->synced;
	pthread_mutex_unlock(&inf->mu);
	return s;
}

int
sk_informer_get(sk_informer *inf, const char *name, sk_userspace **out)
{
	sk_packed_userspace *p;
	sk_error err;
	int rc = SK_ENOTFOUND;

	*out = NULL;
	pthread_mutex_lock(&inf->mu);
	p = cached_packed(inf, name);
	if (p != NULL)
		rc = sk_store_unpack(p, out, &err); /* well under a microsecond */
	pthread_mutex_unlock(&inf->mu);
	return rc;
}

/* A reference to e's decoded form, decoding it at its first borrow. Lock held. */
static int
borrow_locked(entry *e, sk_informer_ref *out)
{
	sk_error err;
	shared *s = e->decoded;
	int rc;

	if (s == NULL) {
		s = sk_calloc(1, sizeof(*s));
		if ((rc = sk_store_unpack(e->p, &s->us, &err)) != 0) {
			free(s);
			return rc;
		}
		atomic_init(&s->refs, 1); /* the cache's */
		e->decoded = s;
	}
	atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
	e->used = true;
	out->us = s->us;
	out->held = s;
	return 0;
}

/* A reference to the entry that index (objects or users) maps key to. */
static int
borrow_from(sk_informer *inf, const sk_strmap *index, const char *key, sk_informer_ref *out)
{
	entry *e;
	int rc = SK_ENOTFOUND;

	out->us = NULL;
	out->held = NULL;
	pthread_mutex_lock(&inf->mu);
	if ((e = sk_strmap_get(index, key)) != NULL)
		rc = borrow_locked(e, out);
	pthread_mutex_unlock(&inf->mu);
	return rc;
}

int
sk_informer_borrow(sk_informer *inf, const char *name, sk_informer_ref *out)
{
	return borrow_from(inf, inf->objects, name, out);
}

int
sk_informer_borrow_user(sk_informer *inf, const char *user_id, sk_informer_ref *out)
{
	return borrow_from(inf, inf->users, user_id, out);
}

void
sk_informer_release(sk_informer_ref *ref)
{
	if (ref == NULL)
		return;
	shared_put(ref->held);
	ref->us = NULL;
	ref->held = NULL;
}

char *
sk_informer_name_for_user(sk_informer *inf, const char *user_id)
{
	const entry *e;
	char *name;

	pthread_mutex_lock(&inf->mu);
	e = sk_strmap_get(inf->users, user_id);
	name = e ? sk_strdup(sk_packed_name(e->p)) : NULL;
	pthread_mutex_unlock(&inf->mu);
	return name;
}

void
sk_informer_names_free(char **names, size_t n)
{
	sk_strv_free(names, n);
}

bool
sk_informer_has_user(sk_informer *inf, const char *user_id)
{
	bool has;

	pthread_mutex_lock(&inf->mu);
	has = sk_strmap_has(inf->users, user_id);
	pthread_mutex_unlock(&inf->mu);
	return has;
}

size_t
sk_informer_len(sk_informer *inf)
{
	size_t n;

	pthread_mutex_lock(&inf->mu);
	n = sk_strmap_len(inf->objects);
	pthread_mutex_unlock(&inf->mu);
	return n;
}

typedef struct visit_ctx {
	sk_informer_visit_fn fn;
	void *payload;
} visit_ctx;

static void
visit_one(const char *key, void *value, void *payload)
{
	const sk_packed_userspace *p = ((const entry *)value)->p;
	visit_ctx *v = payload;
	sk_informer_entry e = { key, sk_packed_user_id(p), sk_packed_resource_version(p),
		sk_packed_phase(p), sk_packed_ready(p) };

	v->fn(&e, v->payload);
}

void
sk_informer_foreach(sk_informer *inf, sk_informer_visit_fn fn, void *payload)
{
	visit_ctx v = { fn, payload };

	pthread_mutex_lock(&inf->mu);
	sk_strmap_foreach(inf->objects, visit_one, &v);
	pthread_mutex_unlock(&inf->mu);
}

int64_t
sk_informer_last_rv(sk_informer *inf)
{
	int64_t rv;

	pthread_mutex_lock(&inf->mu);
	rv = inf->last_rv;
	pthread_mutex_unlock(&inf->mu);
	return rv;
}

void
sk_informer_get_stats(sk_informer *inf, sk_informer_stats *out)
{
	pthread_mutex_lock(&inf->mu);
	*out = inf->stats;
	pthread_mutex_unlock(&inf->mu);
}
