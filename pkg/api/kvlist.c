/* api/kvlist: sorted key/value lists. */
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "kvlist.h"

static size_t
kv_find(const sk_kvlist *l, const char *key, bool *found)
{
	size_t lo = 0, hi = l->len;

	*found = false;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(l->items[mid].key, key);
		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const char *
sk_kvlist_get(const sk_kvlist *l, const char *key)
{
	bool found;
	size_t i;

	if (l == NULL || key == NULL)
		return NULL;
	i = kv_find(l, key, &found);
	return found ? l->items[i].value : NULL;
}

void
sk_kvlist_set(sk_kvlist *l, const char *key, const char *value)
{
	bool found;
	size_t i = kv_find(l, key, &found);

	if (found) {
		char *v = sk_strdup(value);
		free(l->items[i].value);
		l->items[i].value = v;
		return;
	}
	l->items = sk_realloc(l->items, (l->len + 1) * sizeof(*l->items));
	memmove(&l->items[i + 1], &l->items[i], (l->len - i) * sizeof(*l->items));
	l->items[i].key = sk_strdup(key);
	l->items[i].value = sk_strdup(value);
	l->len++;
}

void
sk_kvlist_dispose(sk_kvlist *l)
{
	if (l == NULL)
		return;
	for (size_t i = 0; i < l->len; i++) {
		free(l->items[i].key);
		free(l->items[i].value);
	}
	free(l->items);
	l->items = NULL;
	l->len = 0;
}

static bool
str_eq(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

bool
sk_kvlist_equal(const sk_kvlist *a, const sk_kvlist *b)
{
	if (a->len != b->len)
		return false;
	for (size_t i = 0; i < a->len; i++) {
		if (!str_eq(a->items[i].key, b->items[i].key) ||
		        !str_eq(a->items[i].value, b->items[i].value))
			return false;
	}
	return true;
}

json_t *
sk_kvlist_to_json(const sk_kvlist *l)
{
	json_t *o = json_object();

	for (size_t i = 0; l != NULL && i < l->len; i++)
		json_object_set_new(o, l->items[i].key, json_string(l->items[i].value));
	return o;
}
