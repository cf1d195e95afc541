/*
 * api/strlist: a list of strings in order (spec.workspace.paths, spec.network's
 * lists, a quota's selector values).
 */
#ifndef SK_API_STRLIST_H
#define SK_API_STRLIST_H

#include <stddef.h>

typedef struct sk_strlist {
	char **items;
	size_t len;
} sk_strlist;
void sk_strlist_add(sk_strlist *l, const char *s);
/* Removes the first item equal to s: true when one was there. */
bool sk_strlist_remove(sk_strlist *l, const char *s);
void sk_strlist_dispose(sk_strlist *l);
void sk_strlist_copy(sk_strlist *dst, const sk_strlist *src);

#endif
