/*
 * api/strlist: a list of strings in order (strlist.h).
 */
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "strlist.h"

void
sk_strlist_add(sk_strlist *l, const char *s)
{
	l->items = sk_realloc(l->items, (l->len + 1) * sizeof(char *));
	l->items[l->len++] = sk_strdup(s);
}

void
sk_strlist_dispose(sk_strlist *l)
{
	for (size_t i = 0; l != NULL && i < l->len; i++)
		free(l->items[i]);
	if (l != NULL) {
		free(l->items);
		l->items = NULL;
		l->len = 0;
	}
}

bool
sk_strlist_equal(const sk_strlist *a, const sk_strlist *b)
{
	if (a->len != b->len)
		return false;
	for (size_t i = 0; i < a->len; i++) {
		if (strcmp(a->items[i], b->items[i]) != 0)
			return false;
	}
	return true;
}

void
sk_strlist_copy(sk_strlist *dst, const sk_strlist *src)
{
	dst->items = NULL;
	dst->len = 0;
	for (size_t i = 0; i < src->len; i++)
		sk_strlist_add(dst, src->items[i]);
}

bool
sk_strlist_remove(sk_strlist *l, const char *s)
{
	for (size_t i = 0; s != NULL && i < l->len; i++) {
		if (strcmp(l->items[i], s) == 0) {
			free(l->items[i]);
			memmove(&l->items[i], &l->items[i + 1], (l->len - i - 1) * sizeof(char *));
			l->len--;
			return true;
		}
	}
	return false;
}
