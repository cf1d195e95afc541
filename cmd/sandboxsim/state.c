/*
 * sandboxsim state: the in-memory sandbox store (hash map by id, creation-order
 * list, user_id index), packed metadata blocks, and the lifecycle clock
 * (timeout expiry, auto-pause, Cube idle windows, Daytona auto-stop).
 * Every function here runs with s->lock held.
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

struct sim_map_entry {
	sim_map_entry *next;
	char *key;
	void *value;
};

static uint64_t
hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

uint64_t
sim_rand(uint64_t *state)
{
	uint64_t x = *state ? *state : 0x9e3779b97f4a7c15ULL;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 2685821657736338717ULL;
}

void
sim_time(int64_t ms, char *buf, size_t len)
{
	sk_time_format(ms, buf, len);
}

/* ---- generic string map (user index) ---- */

static void **
map_slot(sim_map *m, const char *key, bool create)
{
	sim_map_entry *e;
	size_t b;

	if (m->nbuckets == 0) {
		if (!create)
			return NULL;
		m->nbuckets = 1024;
		m->buckets = sk_calloc(m->nbuckets, sizeof(*m->buckets));
	}
	b = hash_str(key) & (m->nbuckets - 1);
	for (e = m->buckets[b]; e; e = e->next)
		if (strcmp(e->key, key) == 0)
			return &e->value;
	if (!create)
		return NULL;
	e = sk_calloc(1, sizeof(*e));
	e->key = sk_strdup(key);
	e->next = m->buckets[b];
	m->buckets[b] = e;
	m->count++;
	return &e->value;
}

static void
map_grow(sim_map *m)
{
	size_t n = m->nbuckets * 2;
	sim_map_entry **nb;

	if (m->count < m->nbuckets)
		return;
	nb = sk_calloc(n, sizeof(*nb));
	for (size_t i = 0; i < m->nbuckets; i++) {
		sim_map_entry *e = m->buckets[i], *next;
		for (; e; e = next) {
			size_t b = hash_str(e->key) & (n - 1);
			next = e->next;
			e->next = nb[b];
			nb[b] = e;
		}
	}
	free(m->buckets);
	m->buckets = nb;
	m->nbuckets = n;
}

static void
map_free(sim_map *m)
{
	for (size_t i = 0; i < m->nbuckets; i++) {
		sim_map_entry *e = m->buckets[i], *next;
		for (; e; e = next) {
			sim_vec *v = e->value;
			next = e->next;
			if (v)
				free(v->items);
			free(v);
			free(e->key);
			free(e);
		}
	}
	free(m->buckets);
	memset(m, 0, sizeof(*m));
}

/* ---- packed key/value blocks ---- */

int
sim_kv_from_json(json_t *obj, sim_kv *out, char *why, size_t whylen)
{
	sk_buf b = SK_BUF_INIT(1 << 20);
	const char *k;
	json_t *v;

	memset(out, 0, sizeof(*out));
	if (obj == NULL || json_is_null(obj))
		return 0;
	if (!json_is_object(obj)) {
		snprintf(why, whylen, "must be an object of strings");
		return -1;
	}
	json_object_foreach(obj, k, v)
	{
		if (!json_is_string(v)) {
			snprintf(why, whylen, "value of \"%s\" must be a string", k);
			sk_buf_dispose(&b);
			return -1;
		}
		sk_buf_append(&b, k, strlen(k) + 1);
		sk_buf_append(&b, json_string_value(v), json_string_length(v) + 1);
		out->n++;
	}
	out->len = b.len;
	out->data = sk_buf_detach(&b);
	return 0;
}

const char *
sim_kv_get(const sim_kv *kv, const char *key)
{
	const char *p = kv->data;

	for (int i = 0; i < kv->n; i++) {
		const char *v = p + strlen(p) + 1;
		if (strcmp(p, key) == 0)
			return v;
		p = v + strlen(v) + 1;
	}
	return NULL;
}

json_t *
sim_kv_to_json(const sim_kv *kv)
{
	json_t *o = json_object();
	const char *p = kv->data;

	for (int i = 0; i < kv->n; i++) {
		const char *v = p + strlen(p) + 1;
		json_object_set_new(o, p, json_string(v));
		p = v + strlen(v) + 1;
	}
	return o;
}

void
sim_kv_free(sim_kv *kv)
{
	free(kv->data);
	memset(kv, 0, sizeof(*kv));
}

/* ---- store ---- */

void
sim_store_init(sim_store *st, uint64_t seed)
{
	memset(st, 0, sizeof(*st));
	st->nbuckets = 1 << 12;
	st->buckets = sk_calloc(st->nbuckets, sizeof(*st->buckets));
	st->rng = seed ? seed : 0x243f6a8885a308d3ULL;
}

static void
sandbox_free(sim_sandbox *sb)
{
	sim_kv_free(&sb->meta);
	sim_kv_free(&sb->env);
	sim_kv_free(&sb->init_env);
	free(sb->name);
	free(sb->os_user);
	sim_fs_free(sb->fs);
	json_decref(sb->net);
	free(sb);
}

sim_fs *
sim_sandbox_fs(sim *s, sim_sandbox *sb)
{
	if (sb->fs == NULL)
		sb->fs = sim_fs_new(s->flavor == SIM_DAYTONA ? "/home/daytona" : "/home/user");
	return sb->fs;
}

void
sim_store_clear(sim_store *st)
{
	sim_sandbox *sb = st->head, *next;
	uint64_t rng = st->rng;

	for (; sb; sb = next) {
		next = sb->next;
		sandbox_free(sb);
	}
	free(st->buckets);
	map_free(&st->by_user);
	sim_store_init(st, rng);
}

static sim_sandbox **
bucket_of(sim_store *st, const char *id)
{
	return &st->buckets[hash_str(id) & (st->nbuckets - 1)];
}

static sim_sandbox *
lookup(sim_store *st, const char *id)
{
	sim_sandbox *sb = *bucket_of(st, id);

	while (sb && strcmp(sb->id, id) != 0)
		sb = sb->hnext;
	return sb;
}

static void
store_grow(sim_store *st)
{
	size_t n = st->nbuckets * 2;
	sim_sandbox **old = st->buckets;
	size_t oldn = st->nbuckets;

	if (st->count < st->nbuckets)
		return;
	st->buckets = sk_calloc(n, sizeof(*st->buckets));
	st->nbuckets = n;
	for (size_t i = 0; i < oldn; i++) {
		sim_sandbox *sb = old[i], *next;
		for (; sb; sb = next) {
			sim_sandbox **b = bucket_of(st, sb->id);
			next = sb->hnext;
			sb->hnext = *b;
			*b = sb;
		}
	}
	free(old);
}

static void
new_id(sim *s, char *out)
{
	static const char alnum[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	static const char hex[] = "0123456789abcdef";
	sim_store *st = &s->store;

	do {
		if (s->flavor == SIM_CUBE) {
			for (int i = 0; i < 32; i++)
				out[i] = hex[sim_rand(&st->rng) % 16];
			out[32] = '\0';
		} else if (s->flavor == SIM_DAYTONA) {
			uint64_t a = sim_rand(&st->rng), b = sim_rand(&st->rng);
			snprintf(out, 37, "%08x-%04x-4%03x-%04x-%012llx", (unsigned)(a >> 32),
			        (unsigned)(a >> 16) & 0xffff, (unsigned)a & 0xfff,
			        0x8000 | ((unsigned)(b >> 48) & 0x3fff),
			        (unsigned long long)(b & 0xffffffffffffULL));
		} else {
			out[0] = 'i';
			for (int i = 1; i <= 20; i++)
				out[i] = alnum[sim_rand(&st->rng) % 36];
			out[21] = '\0';
		}
	} while (lookup(st, out) != NULL);
}

sim_sandbox *
sim_store_new(sim *s, int64_t now)
{
	sim_store *st = &s->store;
	sim_sandbox *sb = sk_calloc(1, sizeof(*sb));
	sim_sandbox **b;

	new_id(s, sb->id);
	for (int i = 0; i < 32; i++)
		sb->token[i] = "0123456789abcdef"[sim_rand(&st->rng) % 16];
	sb->seq = ++st->seq;
	sb->created_ms = sb->started_ms = sb->activity_ms = sb->updated_ms = now;
	sb->cpu = 2;
	sb->memory_mb = 512;
	sb->disk_mb = 1024;
	sb->auto_pause_memory = true;
	store_grow(st);
	b = bucket_of(st, sb->id);
	sb->hnext = *b;
	*b = sb;
	sb->prev = st->tail;
	if (st->tail)
		st->tail->next = sb;
	else
		st->head = sb;
	st->tail = sb;
	st->count++;
	return sb;
}

static void
index_del(sim_store *st, sim_sandbox *sb)
{
	void **slot;
	sim_vec *v;

	if (sb->user_id == NULL)
		return;
	slot = map_slot(&st->by_user, sb->user_id, false);
	if (slot == NULL || (v = *slot) == NULL)
		return;
	for (size_t i = 0; i < v->len; i++) {
		if (v->items[i] == sb) {
			memmove(&v->items[i], &v->items[i + 1], (v->len - i - 1) * sizeof(sb));
			v->len--;
			break;
		}
	}
	sb->user_id = NULL;
}

static void
index_add(sim_store *st, sim_sandbox *sb)
{
	void **slot;
	sim_vec *v;

	sb->user_id = sim_kv_get(&sb->meta, "user_id");
	if (sb->user_id == NULL)
		return;
	slot = map_slot(&st->by_user, sb->user_id, true);
	if (*slot == NULL)
		*slot = sk_calloc(1, sizeof(sim_vec));
	v = *slot;
	if (v->len == v->cap) {
		v->cap = v->cap ? v->cap * 2 : 2;
		v->items = sk_realloc(v->items, v->cap * sizeof(sb));
	}
	v->items[v->len++] = sb;
	map_grow(&st->by_user);
}

void
sim_store_set_meta(sim_store *st, sim_sandbox *sb, sim_kv *kv)
{
	index_del(st, sb);
	sim_kv_free(&sb->meta);
	sb->meta = *kv;
	memset(kv, 0, sizeof(*kv));
	index_add(st, sb);
}

const sim_vec *
sim_store_by_user(sim_store *st, const char *user)
{
	void **slot = map_slot(&st->by_user, user, false);

	return slot ? *slot : NULL;
}

void
sim_store_remove(sim_store *st, sim_sandbox *sb)
{
	sim_sandbox **pp = bucket_of(st, sb->id);

	while (*pp && *pp != sb)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = sb->hnext;
	if (sb->prev)
		sb->prev->next = sb->next;
	else
		st->head = sb->next;
	if (sb->next)
		sb->next->prev = sb->prev;
	else
		st->tail = sb->prev;
	index_del(st, sb);
	st->count--;
	sandbox_free(sb);
}

/* ---- lifecycle ---- */

void
sim_sandbox_account(sim_sandbox *sb, int64_t now)
{
	int64_t from = sb->acct_ms ? sb->acct_ms : sb->created_ms;

	if (now <= from)
		return;
	if (sb->state == SIM_RUNNING)
		sb->run_ms += now - from;
	else if (sb->state == SIM_PAUSED || sb->state == SIM_ARCHIVED)
		sb->pause_ms += now - from;
	sb->acct_ms = now;
}

void
sim_sandbox_pause(sim_sandbox *sb, int64_t now)
{
	sim_sandbox_account(sb, now);
	sb->state = SIM_PAUSED;
	sb->end_ms = now;
	sb->updated_ms = now;
	sb->paused_ms = now;
}

void
sim_sandbox_resume(sim *s, sim_sandbox *sb, int64_t now, int32_t timeout_s)
{
	/* E2B/Cube: a resume drops the create-time env from envd (dataplane.c);
	 * a Daytona container keeps its env across stop/start. */
	if (sb->state != SIM_RUNNING && s->flavor != SIM_DAYTONA)
		sb->boot_env_lost = true;
	if (sb->state != SIM_RUNNING && sb->fs != NULL)
		sim_fs_lose(sb->fs, sim_faults_resume_loss(s));
	sim_sandbox_account(sb, now);
	sb->state = SIM_RUNNING;
	sb->started_ms = sb->resumed_ms = sb->activity_ms = sb->updated_ms = now;
	sim_caps_note_running(s);
	if (s->flavor == SIM_CUBE && timeout_s < 0) {
		sb->never = true;
		return;
	}
	sb->never = false;
	sb->end_ms = now + (int64_t)timeout_s * 1000;
}

/*
 * Sleep on idle, per flavour (E2B's published API):
 *  - e2b: an absolute deadline end_ms set by create, connect (extend only),
 *    resume and set_timeout (overwrite) and refreshes (extend only); envd
 *    traffic does NOT move it.
 *  - cube: a sliding idle window of timeout_s: every connect, refreshes and
 *    data-plane request (sim_sandbox_touch) restarts it; set_timeout replaces
 *    it; -1 never. Reads (get, list) are observation, not activity.
 *  - daytona: stopped after auto_stop_min minutes (s->minute_ms each) without
 *    activity (start, autostop, data-plane traffic); 0 never.
 * At the deadline autoPause pauses (daytona: stops), otherwise the sandbox
 * is killed. With --paused-retention a sandbox paused (stopped) that long is
 * deleted, as E2B deletes paused sandboxes after 30 days. Every lookup and list applies this first, and the sweeper
 * (server.c) every 200 ms, so a reader never sees a sandbox past its deadline.
 */
bool
sim_sandbox_tick(sim *s, sim_sandbox *sb, int64_t now)
{
	if (sb->state == SIM_KILLED)
		return true;
	if (sb->state == SIM_PAUSED && s->paused_retention_ms > 0 &&
	        now - sb->paused_ms >= s->paused_retention_ms) {
		sb->state = SIM_KILLED;
		return true;
	}
	if (sb->state != SIM_RUNNING)
		return false;
	if (s->flavor == SIM_DAYTONA) {
		int64_t idle = (int64_t)sb->auto_stop_min * s->minute_ms;
		if (sb->auto_stop_min <= 0 || now - sb->activity_ms < idle)
			return false;
		if (sb->auto_delete_min == 0) { /* delete on stop */
			sb->state = SIM_KILLED;
			return true;
		}
		sim_sandbox_pause(sb, sb->activity_ms + idle);
		return false;
	}
	if (sb->never || now < sb->end_ms)
		return false;
	if (sb->auto_pause) {
		sim_sandbox_pause(sb, sb->end_ms);
		return false;
	}
	sb->state = SIM_KILLED;
	return true;
}

/* Activity: Cube slides its idle window, Daytona restarts its auto-stop clock. */
void
sim_sandbox_touch(sim *s, sim_sandbox *sb, int64_t now)
{
	if (sb->state != SIM_RUNNING)
		return;
	sb->activity_ms = now;
	if (s->flavor == SIM_CUBE && !sb->never && sb->timeout_s > 0)
		sb->end_ms = now + (int64_t)sb->timeout_s * 1000;
}

sim_sandbox *
sim_store_get(sim *s, const char *id, int64_t now)
{
	sim_sandbox *sb = lookup(&s->store, id);

	if (sb && sim_sandbox_tick(s, sb, now)) {
		sim_store_remove(&s->store, sb);
		return NULL;
	}
	return sb;
}

void
sim_store_sweep(sim *s, int64_t now)
{
	sim_sandbox *sb = s->store.head, *next;

	for (; sb; sb = next) {
		next = sb->next;
		if (sim_sandbox_tick(s, sb, now))
			sim_store_remove(&s->store, sb);
	}
}

const char *
sim_state_name(sim *s, int state)
{
	if (s->flavor == SIM_DAYTONA) {
		switch (state) {
		case SIM_RUNNING: return "started";
		case SIM_PAUSED: return "stopped";
		case SIM_ARCHIVED: return "archived";
		default: return "destroyed";
		}
	}
	switch (state) {
	case SIM_RUNNING: return "running";
	case SIM_PAUSED: return "paused";
	default: return "killed";
	}
}

/* Creates n running sandboxes with user metadata (benchmarks). */
int
sim_preload(sim *s, int n)
{
	int64_t now = sk_now_ms();
	char meta[128];
	int len;

	for (int i = 0; i < n; i++) {
		sim_sandbox *sb = sim_store_new(s, now);
		sim_kv kv;
		snprintf(sb->template_id, sizeof(sb->template_id), "base");
		len = snprintf(
		        meta, sizeof(meta), "user_id%cu%d%cmanaged_by%cspacekeeper", 0, i, 0, 0);
		kv.data = sk_malloc((size_t)len + 1);
		memcpy(kv.data, meta, (size_t)len + 1);
		kv.len = (size_t)len + 1;
		kv.n = 2;
		sim_store_set_meta(&s->store, sb, &kv);
		sb->timeout_s = 86400;
		sb->never = s->flavor != SIM_E2B;
		sb->end_ms = now + 86400000LL;
		sb->auto_pause = true;
	}
	return 0;
}
