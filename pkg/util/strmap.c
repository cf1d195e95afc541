/*
 * strmap: a string-keyed hash map with separate chaining (FNV-1a), used for
 * the workqueue's key sets and the controller's caches. Not thread-safe.
 */
#include <stdlib.h>
#include <string.h>

#include "util.h"

typedef struct sk_strmap_node {
	struct sk_strmap_node *next;
	uint64_t hash;
	char *key;
	void *value;
} sk_strmap_node;

struct sk_strmap {
	sk_strmap_node **buckets;
	size_t n_buckets;
	size_t len;
	sk_strmap_free_fn free_value;
};

static uint64_t
strmap_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return h;
}

sk_strmap *
sk_strmap_new(sk_strmap_free_fn free_value)
{
	sk_strmap *m = sk_calloc(1, sizeof(*m));

	m->n_buckets = 64;
	m->buckets = sk_calloc(m->n_buckets, sizeof(*m->buckets));
	m->free_value = free_value;
	return m;
}

void
sk_strmap_free(sk_strmap *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n_buckets; i++) {
		sk_strmap_node *n = m->buckets[i];
		while (n) {
			sk_strmap_node *next = n->next;
			if (m->free_value)
				m->free_value(n->value);
			free(n->key);
			free(n);
			n = next;
		}
	}
	free(m->buckets);
	free(m);
}

static sk_strmap_node **
strmap_slot(const sk_strmap *m, const char *key, uint64_t h)
{
	sk_strmap_node **p = &m->buckets[h % m->n_buckets];

	while (*p && ((*p)->hash != h || strcmp((*p)->key, key) != 0))
		p = &(*p)->next;
	return p;
}

static void
strmap_grow(sk_strmap *m)
{
	size_t nb = m->n_buckets * 2;
	sk_strmap_node **b = sk_calloc(nb, sizeof(*b));

	for (size_t i = 0; i < m->n_buckets; i++) {
		sk_strmap_node *n = m->buckets[i];
		while (n) {
			sk_strmap_node *next = n->next;
			n->next = b[n->hash % nb];
			b[n->hash % nb] = n;
			n = next;
		}
	}
	free(m->buckets);
	m->buckets = b;
	m->n_buckets = nb;
}

void *
sk_strmap_get(const sk_strmap *m, const char *key)
{
	sk_strmap_node **p = strmap_slot(m, key, strmap_hash(key));

	return *p ? (*p)->value : NULL;
}

bool
sk_strmap_has(const sk_strmap *m, const char *key)
{
	return *strmap_slot(m, key, strmap_hash(key)) != NULL;
}

void
sk_strmap_put(sk_strmap *m, const char *key, void *value)
{
	uint64_t h = strmap_hash(key);
	sk_strmap_node **p = strmap_slot(m, key, h);
	sk_strmap_node *n;

	if (*p) {
		if (m->free_value && (*p)->value != value)
			m->free_value((*p)->value);
		(*p)->value = value;
		return;
	}
	n = sk_calloc(1, sizeof(*n));
	n->hash = h;
	n->key = sk_strdup(key);
	n->value = value;
	*p = n;
	m->len++;
	if (m->len > m->n_buckets)
		strmap_grow(m);
}

void *
sk_strmap_take(sk_strmap *m, const char *key)
{
	sk_strmap_node **p = strmap_slot(m, key, strmap_hash(key));
	sk_strmap_node *n = *p;
	void *v;

	if (!n)
		return NULL;
	*p = n->next;
	v = n->value;
	free(n->key);
	free(n);
	m->len--;
	return v;
}

bool
sk_strmap_remove(sk_strmap *m, const char *key)
{
	sk_strmap_node **p = strmap_slot(m, key, strmap_hash(key));
	void *v;

	if (!*p)
		return false;
	v = sk_strmap_take(m, key);
	if (m->free_value)
		m->free_value(v);
	return true;
}

size_t
sk_strmap_len(const sk_strmap *m)
{
	return m->len;
}

void
sk_strmap_foreach(const sk_strmap *m, sk_strmap_visit_fn fn, void *payload)
{
	for (size_t i = 0; i < m->n_buckets; i++)
		for (sk_strmap_node *n = m->buckets[i]; n; n = n->next)
			fn(n->key, n->value, payload);
}

static int
strv_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char **
sk_strmap_keys(const sk_strmap *m, size_t *n_out)
{
	char **v = sk_calloc(m->len + 1, sizeof(*v));
	size_t k = 0;

	for (size_t i = 0; i < m->n_buckets; i++)
		for (sk_strmap_node *n = m->buckets[i]; n; n = n->next)
			v[k++] = sk_strdup(n->key);
	qsort(v, k, sizeof(*v), strv_cmp);
	*n_out = k;
	return v;
}

void
sk_strv_free(char **v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}
