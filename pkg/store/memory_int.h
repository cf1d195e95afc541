/*
 * store/memory internals: the in-memory backend's state (memory.c) and its
 * shared provider lists (memory_observation.c). One mutex guards it all.
 */
#ifndef SK_MEMORY_INT_H
#define SK_MEMORY_INT_H

#include <pthread.h>

#include "store_int.h"

typedef struct sk_mem_part {
	char *group;
	sk_observation o;
} sk_mem_part;

typedef struct sk_memstore {
	sk_store base; /* first: an sk_store * is an sk_memstore * */
	pthread_mutex_t mu;
	sk_userspace **objs; /* in creation order */
	size_t n_objs;
	sk_event *events;
	size_t n_events;
	sk_lease *leases;
	size_t n_leases;
	sk_apply_record_list records; /* bodies as stored: JSON */
	sk_mem_part *parts; /* shared lists' parts */
	size_t n_parts;
	sk_observation_list heads;
	json_t *quotas; /* name -> {"object": text, "status": text} (memory_quota.c) */
	int64_t last_version; /* the last resourceVersion or lease version given */
} sk_memstore;

static inline sk_memstore *
sk_mem_of(sk_store *s)
{
	return (sk_memstore *)(void *)s;
}

static inline void
sk_mem_lock(sk_memstore *m)
{
	pthread_mutex_lock(&m->mu);
}

static inline void
sk_mem_unlock(sk_memstore *m)
{
	pthread_mutex_unlock(&m->mu);
}

/* memory_observation.c: the shared-list ops, and freeing them at close. */
void sk_mem_observations_clear(sk_memstore *m);
int sk_mem_observation_put(sk_store *s, const char *group, const char *part, int64_t listed_ms,
        const char *writer, const char *body, sk_error *err);
int sk_mem_observation_get(sk_store *s, const char *group, int64_t listed_ms,
        const char *const *parts, size_t n, sk_observation_list *out, sk_error *err);
int sk_mem_observation_head_put(sk_store *s, const char *group, int64_t listed_ms,
        const char *writer, const char *body, sk_error *err);
int sk_mem_observation_head_get(sk_store *s, const char *group, sk_observation *out, sk_error *err);
int sk_mem_observation_prune(sk_store *s, const char *group, int64_t before_ms, sk_error *err);

/* memory_quota.c: the SpaceQuota ops. */
int sk_mem_quota_insert(sk_store *s, const char *name, const char *object, sk_error *err);
int sk_mem_quota_replace(sk_store *s, const char *name, const char *object, sk_error *err);
int sk_mem_quota_status(sk_store *s, const char *name, const char *status, sk_error *err);
int sk_mem_quota_list(sk_store *s, sk_spacequota_list *out, sk_error *err);
int sk_mem_quota_remove(sk_store *s, const char *name, sk_error *err);

#endif
