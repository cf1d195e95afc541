/*
 * store/memory: the in-memory backend (sk_store_open_memory, "memory://"),
 * for tests that need a store and no server. One mutex guards everything;
 * every call copies in and out, so callers never share an object with the
 * store. The rules are the MongoDB backend's (object.c, lease.c): a
 * resourceVersion bump on every write (a counter), generation on spec
 * changes, spec.userID unique, finalizers, events aggregated by object, type
 * and reason, leases swapped by version. Shared provider lists are in
 * memory_observation.c.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "memory_int.h"

/* The object named `name`, or NULL. */
static sk_userspace **
find(sk_memstore *m, const char *name)
{
	for (size_t i = 0; i < m->n_objs; i++) {
		if (strcmp(m->objs[i]->meta.name, name) == 0)
			return &m->objs[i];
	}
	return NULL;
}

/* The name of another object with this spec.userID, or NULL. */
static const char *
user_id_holder(sk_memstore *m, const char *user_id, const char *except)
{
	for (size_t i = 0; i < m->n_objs; i++) {
		const sk_userspace *o = m->objs[i];
		if (o->spec.user_id != NULL && strcmp(o->spec.user_id, user_id) == 0 &&
		        strcmp(o->meta.name, except) != 0)
			return o->meta.name;
	}
	return NULL;
}

static sk_userspace *
copy_out(const sk_userspace *us)
{
	sk_userspace *c = sk_userspace_dup(us);

	c->meta.read_ms = sk_monotonic_ms();
	return c;
}

/* Stores next (owned) in *slot with the next resourceVersion; *out a copy. */
static void
put(sk_memstore *m, sk_userspace **slot, sk_userspace *next, sk_userspace **out)
{
	next->meta.resource_version = ++m->last_version;
	sk_userspace_free(*slot);
	*slot = next;
	if (out != NULL)
		*out = copy_out(next);
}

static void
unlink_obj(sk_memstore *m, sk_userspace **slot)
{
	size_t i = (size_t)(slot - m->objs);

	sk_userspace_free(*slot);
	memmove(&m->objs[i], &m->objs[i + 1], (m->n_objs - i - 1) * sizeof(*m->objs));
	m->n_objs--;
}

/* The object at version `expected`: 0, SK_ENOTFOUND or SK_ECONFLICT. */
static int
at_version(sk_memstore *m, const char *name, int64_t expected, sk_userspace ***slot, sk_error *err)
{
	*slot = find(m, name);
	if (*slot == NULL)
		return sk_store_not_found(name, err);
	if ((**slot)->meta.resource_version != expected)
		return sk_store_conflict(name, expected, (**slot)->meta.resource_version, err);
	return 0;
}

static int
mem_get(sk_store *s, const char *name, sk_userspace **out, sk_error *err)
{
	sk_memstore *m = sk_mem_of(s);
	sk_userspace **slot;
	int rc = 0;

	sk_mem_lock(m);
	slot = find(m, name);
	if (slot != NULL)
		*out = copy_out(*slot);
	else
		rc = sk_store_not_found(name, err);
	sk_mem_unlock(m);
	return rc;
}

static int
by_name(const void *a, const void *b)
{
	const sk_userspace *x = *(const sk_userspace *const *)a;
	const sk_userspace *y = *(const sk_userspace *const *)b;

	return strcmp(x->meta.name, y->meta.name);
}

static int
by_version(const void *a, const void *b)
{
	const sk_userspace *x = *(const sk_userspace *const *)a;
	const sk_userspace *y = *(const sk_userspace *const *)b;

	return (x->meta.resource_version > y->meta.resource_version) -
	        (x->meta.resource_version < y->meta.resource_version);
}

/* Copies of the objects above version `since` whose labels sel (NULL: all)
 * matches, sorted by cmp; resource_version the highest seen. */
static void
collect(sk_memstore *m, int64_t since, const sk_selector *sel,
        int (*cmp)(const void *, const void *), sk_userspace_list *out)
{
	sk_mem_lock(m);
	out->items = sk_calloc(m->n_objs + 1, sizeof(*out->items));
	for (size_t i = 0; i < m->n_objs; i++) {
		const sk_userspace *o = m->objs[i];
		if (o->meta.resource_version <= since)
			continue;
		if (o->meta.resource_version > out->resource_version)
			out->resource_version = o->meta.resource_version;
		if (sel == NULL || sk_selector_matches(sel, &o->meta.labels))
			out->items[out->len++] = copy_out(o);
	}
	sk_mem_unlock(m);
	qsort(out->items, out->len, sizeof(*out->items), cmp);
}

static int
mem_list(sk_store *s, const sk_selector *sel, sk_userspace_list *out, sk_error *err)
{
	collect(sk_mem_of(s), INT64_MIN, sel, by_name, out);
	return 0;
}

static int
mem_list_since(sk_store *s, int64_t since, sk_userspace_list *out, sk_error *err)
{
	collect(sk_mem_of(s), since, NULL, by_version, out);
	return 0;
}

static int
mem_scan_packed(sk_store *s, int64_t since, sk_store_packed_fn fn, void *arg, sk_error *err)
{
	sk_userspace_list l = { 0 };
	int rc = 0;

	collect(sk_mem_of(s), since < 0 ? INT64_MIN : since, NULL, since < 0 ? by_name : by_version,
	        &l);
	for (size_t i = 0; i < l.len && rc == 0; i++) {
		sk_packed_userspace *p = sk_store_pack(l.items[i], err);
		if (p == NULL)
			rc = SK_EINVALID;
		else
			fn(p, arg);
	}
	sk_userspace_list_dispose(&l);
	return rc;
}

static int
mem_create(sk_store *s, const sk_userspace *us, sk_userspace **out, sk_error *err)
{
	sk_memstore *m = sk_mem_of(s);
	const char *holder;
	int rc = 0;

	sk_mem_lock(m);
	holder = user_id_holder(m, us->spec.user_id, us->meta.name);
	if (find(m, us->meta.name) != NULL)
		rc = sk_error_set(
		        err, SK_EEXISTS, "userspace \"%s\" already exists", us->meta.name);
	else if (holder != NULL)
		rc = sk_store_user_id_taken(us->spec.user_id, holder, err);
	if (rc == 0) {
		m->objs = sk_realloc(m->objs, (m->n_objs + 1) * sizeof(*m->objs));
		m->objs[m->n_objs] = NULL;
		put(m, &m->objs[m->n_objs++], sk_store_new_object(us), out);
	}
	sk_mem_unlock(m);
	return rc;
}

static int
mem_update(sk_store *s, const sk_userspace *us, sk_userspace **out, sk_error *err)
{
	sk_memstore *m = sk_mem_of(s);
	sk_userspace **slot, *next = NULL;
	const char *holder;
	int rc;

	sk_mem_lock(m);
	rc = at_version(m, us->meta.name, us->meta.resource_version, &slot, err);
	if (rc == 0)
		next = sk_store_updated_object(*slot, us);
	holder = next ? user_id_holder(m, next->spec.user_id, next->meta.name) : NULL;
	if (rc == 0 && next == NULL) {
		*out = copy_out(*slot); /* nothing changed: nothing written */
	} else if (holder != NULL) {
		rc = sk_store_user_id_taken(next->spec.user_id, holder, err);
	} else if (rc == 0) {
		put(m, slot, next, out);
		next = NULL;
	}
	sk_mem_unlock(m);
	sk_userspace_free(next);
	return rc;
}

static int
mem_write_status(sk_store *s, const sk_userspace *base, const sk_userspace_status *status,
        sk_userspace **out, sk_error *err)
{
	sk_memstore *m = sk_mem_of(s);
	sk_userspace **slot, *next;
	int rc;

	sk_mem_lock(m);
	rc = at_version(m, base->meta.name, base->meta.resource_version, &slot, err);
	if (rc == 0) {
		next = sk_store_with_status(*slot, status);
		if (next == NULL)
			*out = copy_out(*slot);
		else
			put(m, slot, next, out);
	}
	sk_mem_unlock(m);
	return rc;
}

static int
mem_mark_deleted(sk_store *s, const char *name, sk_error *err)
{
	sk_memstore *m = sk_mem_of(s);
	sk_userspace **slot, *next;
	int rc = 0;

	sk_mem_lock(m);
	slot = find(m, name);
	if (slot == NULL) {
		rc = sk_store_not_found(name, err);
	} else if ((*slot)->meta.n_finalizers == 0) {
		unlink_obj(m, slot);
	} else if ((*slot)->meta.deletion_ms == 0) {
		next = sk_userspace_dup(*slot);
		next->meta.deletion_ms = sk_now_ms();
		put(m, slot, next, NULL);
	}
	sk_mem_unlock(m);
	return rc;
}

static int
mem_remove_finalizer(sk_store *s, const char *name, int64_t resource_version, const char *finalizer,
        sk_error *err)
{
	sk_memstore *m = sk_mem_of(s);
	sk_userspace **slot, *next;
	int rc;

	sk_mem_lock(m);
	rc = at_version(m, name, resource_version, &slot, err);
	if (rc == 0 && sk_userspace_has_finalizer(*slot, finalizer)) {
		next = sk_userspace_dup(*slot);
		sk_store_drop_finalizer(&next->meta, finalizer);
		if (next->meta.n_finalizers == 0 && next->meta.deletion_ms != 0) {
			sk_userspace_free(next);
			unlink_obj(m, slot);
		} else {
			put(m, slot, next, NULL);
		}
	}
	sk_mem_unlock(m);
	return rc;
}

static int
mem_remove(sk_store *s, const char *name, sk_error *err)
{
	sk_memstore *m = sk_mem_of(s);
	sk_userspace **slot;
	int rc = 0;

	sk_mem_lock(m);
	slot = find(m, name);
	if (slot != NULL)
		unlink_obj(m, slot);
	else
		rc = sk_store_not_found(name, err);
	sk_mem_unlock(m);
	return rc;
}

/* ---- events ---- */

static void
event_copy(sk_event *dst, const sk_event *src)
{
	*dst = *src;
	dst->object = sk_strdup(src->object);
	dst->uid = sk_strdup(src->uid);
	dst->type = sk_strdup(src->type);
	dst->reason = sk_strdup(src->reason);
	dst->message = sk_strdup(src->message);
	dst->source = sk_strdup(src->source);
}

static sk_event *
find_event(
        sk_memstore *m, const char *object, const char *uid, const char *type, const char *reason)
{
	for (size_t i = 0; i < m->n_events; i++) {
		sk_event *ev = &m->events[i];
		if (strcmp(ev->object, object) == 0 && strcmp(ev->uid, uid) == 0 &&
		        strcmp(ev->type, type) == 0 && strcmp(ev->reason, reason) == 0)
			return ev;
	}
	return NULL;
}

static int
mem_event(sk_store *s, const char *object, const char *uid, const char *type, const char *reason,
        const char *message, sk_error *err)
{
	sk_memstore *m = sk_mem_of(s);
	int64_t now = sk_now_ms();
	sk_event *ev;

	sk_mem_lock(m);
	ev = find_event(m, object, uid, type, reason);
	if (ev == NULL) {
		m->events = sk_realloc(m->events, (m->n_events + 1) * sizeof(*m->events));
		ev = &m->events[m->n_events++];
		memset(ev, 0, sizeof(*ev));
		ev->object = sk_strdup(object);
		ev->uid = sk_strdup(uid);
		ev->type = sk_strdup(type);
		ev->reason = sk_strdup(reason);
		ev->source = sk_strdup(SK_STORE_EVENT_SOURCE);
		ev->first_ms = now;
	}
	ev->count++;
	ev->last_ms = now;
	free(ev->message);
	ev->message = sk_strdup(message ? message : "");
	sk_mem_unlock(m);
	return 0;
}

/* Newest first; equal times by "object/uid/type/reason" (the MongoDB backend's order). */
static int
newest_first(const void *a, const void *b)
{
	const sk_event *x = a, *y = b;
	int c;

	if (x->last_ms != y->last_ms)
		return x->last_ms > y->last_ms ? -1 : 1;
	if ((c = strcmp(x->object, y->object)) != 0)
		return c;
	if ((c = strcmp(x->uid, y->uid)) != 0)
		return c;
	if ((c = strcmp(x->type, y->type)) != 0)
		return c;
	return strcmp(x->reason, y->reason);
}

static int
mem_events(sk_store *s, const char *object, const char *uid, size_t limit, sk_event_list *out,
        sk_error *err)
{
	sk_memstore *m = sk_mem_of(s);
	size_t keep;

	sk_mem_lock(m);
	out->items = sk_calloc(m->n_events + 1, sizeof(*out->items));
	for (size_t i = 0; i < m->n_events; i++) {
		const sk_event *ev = &m->events[i];
		if ((object == NULL || strcmp(ev->object, object) == 0) &&
		        (uid == NULL || strcmp(ev->uid, uid) == 0))
			event_copy(&out->items[out->len++], &m->events[i]);
	}
	sk_mem_unlock(m);
	qsort(out->items, out->len, sizeof(*out->items), newest_first);
	keep = limit > 0 && limit < out->len ? limit : out->len;
	for (size_t i = keep; i < out->len; i++)
		sk_event_dispose(&out->items[i]);
	out->len = keep;
	for (size_t i = 0; i < keep / 2; i++) { /* oldest first to the caller */
		sk_event t = out->items[i];
		out->items[i] = out->items[keep - 1 - i];
		out->items[keep - 1 - i] = t;
	}
	return 0;
}

/* ---- leases ---- */

static sk_lease *
find_lease(sk_memstore *m, const char *name)
{
	for (size_t i = 0; i < m->n_leases; i++) {
		if (strcmp(m->leases[i].name, name) == 0)
			return &m->leases[i];
	}
	return NULL;
}

static int
mem_lease_get(sk_store *s, const char *name, sk_lease *out, sk_error *err)
{
	sk_memstore *m = sk_mem_of(s);
	sk_lease *l;
	int rc = 0;

	sk_mem_lock(m);
	l = find_lease(m, name);
	if (l != NULL)
		sk_lease_copy(out, l);
	else
		rc = sk_error_set(err, SK_ENOTFOUND, "lease \"%s\" not found", name);
	sk_mem_unlock(m);
	return rc;
}

static int
mem_lease_swap(sk_store *s, const sk_lease *cur, sk_lease *next, sk_error *err)
{
	sk_memstore *m = sk_mem_of(s);
	sk_lease *l;
	int rc = 0;

	sk_mem_lock(m);
	l = find_lease(m, next->name);
	if (l != NULL && (cur == NULL || l->version != cur->version))
		rc = sk_error_set(err, SK_ECONFLICT,
		        "lease \"%s\": changed by another holder meanwhile", next->name);
	else if (l == NULL && cur != NULL)
		rc = sk_error_set(err, SK_ENOTFOUND, "lease \"%s\" not found", next->name);
	if (rc == 0 && l == NULL) {
		m->leases = sk_realloc(m->leases, (m->n_leases + 1) * sizeof(*m->leases));
		l = &m->leases[m->n_leases++];
		memset(l, 0, sizeof(*l));
	}
	if (rc == 0) {
		next->version = ++m->last_version;
		sk_lease_dispose(l);
		sk_lease_copy(l, next);
	}
	sk_mem_unlock(m);
	return rc;
}

static int
lease_by_name(const void *a, const void *b)
{
	return strcmp(((const sk_lease *)a)->name, ((const sk_lease *)b)->name);
}

static int
mem_lease_list(sk_store *s, sk_lease_list *out, sk_error *err)
{
	sk_memstore *m = sk_mem_of(s);

	sk_mem_lock(m);
	out->items = sk_calloc(m->n_leases + 1, sizeof(*out->items));
	for (size_t i = 0; i < m->n_leases; i++)
		sk_lease_copy(&out->items[out->len++], &m->leases[i]);
	sk_mem_unlock(m);
	qsort(out->items, out->len, sizeof(*out->items), lease_by_name);
	return 0;
}

/* ---- apply records ---- */

static int
record_index(sk_memstore *m, const char *id)
{
	for (size_t i = 0; i < m->records.len; i++) {
		if (strcmp(m->records.items[i].id, id) == 0)
			return (int)i;
	}
	return -1;
}

static int
mem_record_put(sk_store *s, const char *id, int64_t create_ms, const char *body, sk_error *err)
{
	sk_memstore *m = sk_mem_of(s);
	sk_apply_record r;
	int rc = sk_apply_record_set(&r, id, create_ms, body, err);

	if (rc != 0)
		return rc;
	sk_mem_lock(m);
	if (record_index(m, id) >= 0) {
		rc = sk_error_set(err, SK_EEXISTS, "apply record \"%s\" already exists", id);
		free(r.id);
		json_decref(r.body);
	} else {
		m->records.items = sk_realloc(
		        m->records.items, (m->records.len + 1) * sizeof(*m->records.items));
		m->records.items[m->records.len++] = r;
	}
	sk_mem_unlock(m);
	return rc;
}

static int
record_by_id(const void *a, const void *b)
{
	return strcmp(((const sk_apply_record *)a)->id, ((const sk_apply_record *)b)->id);
}

static int
mem_record_list(sk_store *s, sk_apply_record_list *out, sk_error *err)
{
	sk_memstore *m = sk_mem_of(s);

	sk_mem_lock(m);
	out->items = sk_calloc(m->records.len + 1, sizeof(*out->items));
	for (size_t i = 0; i < m->records.len; i++) {
		const sk_apply_record *r = &m->records.items[i];
		out->items[i].id = sk_strdup(r->id);
		out->items[i].create_ms = r->create_ms;
		out->items[i].body = json_deep_copy(r->body);
	}
	out->len = m->records.len;
	sk_mem_unlock(m);
	qsort(out->items, out->len, sizeof(*out->items), record_by_id);
	return 0;
}

static int
mem_record_remove(sk_store *s, const char *id, sk_error *err)
{
	sk_memstore *m = sk_mem_of(s);
	int i, rc = 0;

	sk_mem_lock(m);
	if ((i = record_index(m, id)) < 0) {
		rc = sk_error_set(err, SK_ENOTFOUND, "apply record \"%s\" not found", id);
	} else {
		free(m->records.items[i].id);
		json_decref(m->records.items[i].body);
		m->records.items[i] = m->records.items[--m->records.len];
	}
	sk_mem_unlock(m);
	return rc;
}

/* ---- the store ---- */

static void
clear(sk_memstore *m)
{
	sk_event_list events = { m->events, m->n_events };
	sk_lease_list leases = { m->leases, m->n_leases };
	sk_userspace_list objs = { m->objs, m->n_objs, 0 };

	sk_event_list_dispose(&events);
	sk_lease_list_dispose(&leases);
	sk_userspace_list_dispose(&objs);
	sk_apply_record_list_dispose(&m->records);
	sk_mem_observations_clear(m);
	json_decref(m->quotas);
	m->quotas = NULL;
	m->events = NULL;
	m->leases = NULL;
	m->objs = NULL;
	m->n_events = m->n_leases = m->n_objs = 0;
}

static int
mem_drop(sk_store *s, sk_error *err)
{
	sk_memstore *m = sk_mem_of(s);

	sk_mem_lock(m);
	clear(m);
	sk_mem_unlock(m);
	return 0;
}

static int64_t
mem_rv_floor(sk_store *s, int64_t wall_ms)
{
	return INT64_MAX; /* a counter: the look-back alone is exact in one process */
}

static int
mem_ping(sk_store *s, sk_error *err)
{
	return 0;
}

static void
mem_close(sk_store *s)
{
	sk_memstore *m = sk_mem_of(s);

	clear(m);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

const sk_store_backend_ops sk_store_memory_ops = {
	.name = "memory",
	.close = mem_close,
	.ping = mem_ping,
	.get = mem_get,
	.list = mem_list,
	.list_since = mem_list_since,
	.scan_packed = mem_scan_packed,
	.create = mem_create,
	.update = mem_update,
	.write_status = mem_write_status,
	.mark_deleted = mem_mark_deleted,
	.remove_finalizer = mem_remove_finalizer,
	.remove = mem_remove,
	.event = mem_event,
	.events = mem_events,
	.lease_get = mem_lease_get,
	.lease_swap = mem_lease_swap,
	.lease_list = mem_lease_list,
	.quota_insert = sk_mem_quota_insert,
	.quota_replace = sk_mem_quota_replace,
	.quota_status = sk_mem_quota_status,
	.quota_list = sk_mem_quota_list,
	.quota_remove = sk_mem_quota_remove,
	.record_put = mem_record_put,
	.record_list = mem_record_list,
	.record_remove = mem_record_remove,
	.observation_put = sk_mem_observation_put,
	.observation_get = sk_mem_observation_get,
	.observation_head_put = sk_mem_observation_head_put,
	.observation_head_get = sk_mem_observation_head_get,
	.observation_prune = sk_mem_observation_prune,
	.rv_floor = mem_rv_floor,
	.drop = mem_drop,
};

int
sk_store_open_memory(sk_store **out)
{
	sk_memstore *m = sk_calloc(1, sizeof(*m));

	m->base.ops = &sk_store_memory_ops;
	pthread_mutex_init(&m->mu, NULL);
	*out = &m->base;
	return 0;
}
