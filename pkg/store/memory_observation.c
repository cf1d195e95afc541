/*
 * store/memory_observation: shared provider lists (store.h) in the
 * in-memory backend: parts in one array, heads in another, behind the
 * store's mutex; every call copies in and out.
 */
#include <stdlib.h>
#include <string.h>

#include "memory_int.h"

void
sk_mem_observations_clear(sk_memstore *m)
{
	for (size_t i = 0; i < m->n_parts; i++) {
		free(m->parts[i].group);
		sk_observation_dispose(&m->parts[i].o);
	}
	free(m->parts);
	m->parts = NULL;
	m->n_parts = 0;
	sk_observation_list_dispose(&m->heads);
}

static sk_mem_part *
part_find(sk_memstore *m, const char *group, const char *part, int64_t listed_ms)
{
	for (size_t i = 0; i < m->n_parts; i++) {
		sk_mem_part *p = &m->parts[i];
		if (p->o.listed_ms == listed_ms && strcmp(p->group, group) == 0 &&
		        strcmp(p->o.id, part) == 0)
			return p;
	}
	return NULL;
}

int
sk_mem_observation_put(sk_store *s, const char *group, const char *part, int64_t listed_ms,
        const char *writer, const char *body, sk_error *err)
{
	sk_memstore *m = sk_mem_of(s);
	sk_mem_part p = { 0 };
	int rc = sk_observation_set(&p.o, part, listed_ms, writer, body, err);

	if (rc != 0)
		return rc;
	sk_mem_lock(m);
	if (part_find(m, group, part, listed_ms) != NULL) {
		rc = sk_observation_exists(group, part, listed_ms, err);
		sk_observation_dispose(&p.o);
	} else {
		p.group = sk_strdup(group);
		m->parts = sk_realloc(m->parts, (m->n_parts + 1) * sizeof(*m->parts));
		m->parts[m->n_parts++] = p;
	}
	sk_mem_unlock(m);
	return rc;
}

static void
observation_copy(sk_observation *dst, const sk_observation *src)
{
	dst->id = sk_strdup(src->id);
	dst->listed_ms = src->listed_ms;
	dst->writer = sk_strdup(src->writer);
	dst->body = json_deep_copy(src->body);
}

int
sk_mem_observation_get(sk_store *s, const char *group, int64_t listed_ms, const char *const *parts,
        size_t n, sk_observation_list *out, sk_error *err)
{
	sk_memstore *m = sk_mem_of(s);

	sk_mem_lock(m);
	out->items = sk_calloc(n + 1, sizeof(*out->items));
	for (size_t i = 0; i < n; i++) {
		const sk_mem_part *p = part_find(m, group, parts[i], listed_ms);
		if (p != NULL)
			observation_copy(&out->items[out->len++], &p->o);
	}
	sk_mem_unlock(m);
	return 0;
}

static sk_observation *
head_find(sk_memstore *m, const char *group)
{
	for (size_t i = 0; i < m->heads.len; i++)
		if (strcmp(m->heads.items[i].id, group) == 0)
			return &m->heads.items[i];
	return NULL;
}

int
sk_mem_observation_head_put(sk_store *s, const char *group, int64_t listed_ms, const char *writer,
        const char *body, sk_error *err)
{
	sk_memstore *m = sk_mem_of(s);
	sk_observation h, *cur;
	int rc = sk_observation_set(&h, group, listed_ms, writer, body, err);

	if (rc != 0)
		return rc;
	sk_mem_lock(m);
	cur = head_find(m, group);
	if (cur != NULL && cur->listed_ms >= listed_ms) {
		rc = sk_observation_stale(group, err);
		sk_observation_dispose(&h);
	} else if (cur != NULL) {
		sk_observation_dispose(cur);
		*cur = h;
	} else {
		m->heads.items =
		        sk_realloc(m->heads.items, (m->heads.len + 1) * sizeof(*m->heads.items));
		m->heads.items[m->heads.len++] = h;
	}
	sk_mem_unlock(m);
	return rc;
}

int
sk_mem_observation_head_get(sk_store *s, const char *group, sk_observation *out, sk_error *err)
{
	sk_memstore *m = sk_mem_of(s);
	const sk_observation *h;
	int rc = 0;

	sk_mem_lock(m);
	if ((h = head_find(m, group)) != NULL)
		observation_copy(out, h);
	else
		rc = sk_error_set(err, SK_ENOTFOUND, "observation head %s not found", group);
	sk_mem_unlock(m);
	return rc;
}

int
sk_mem_observation_prune(sk_store *s, const char *group, int64_t before_ms, sk_error *err)
{
	sk_memstore *m = sk_mem_of(s);
	size_t kept = 0;

	sk_mem_lock(m);
	for (size_t i = 0; i < m->n_parts; i++) {
		sk_mem_part *p = &m->parts[i];
		if (p->o.listed_ms < before_ms && strcmp(p->group, group) == 0) {
			free(p->group);
			sk_observation_dispose(&p->o);
		} else {
			m->parts[kept++] = *p;
		}
	}
	m->n_parts = kept;
	sk_mem_unlock(m);
	return 0;
}
