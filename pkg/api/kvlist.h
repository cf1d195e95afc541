/*
 * api/kvlist: key/value maps (labels, annotations, env, metadata), sorted by key.
 */
#ifndef SK_API_KVLIST_H
#define SK_API_KVLIST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct sk_kv {
	char *key;
	char *value;
} sk_kv;

typedef struct sk_kvlist {
	sk_kv *items; /* sorted by key */
	size_t len;
} sk_kvlist;

const char *sk_kvlist_get(const sk_kvlist *l, const char *key);
void sk_kvlist_set(sk_kvlist *l, const char *key, const char *value);
void sk_kvlist_dispose(sk_kvlist *l);
bool sk_kvlist_equal(const sk_kvlist *a, const sk_kvlist *b);
/* A JSON object of the pairs (NULL list: empty object). New reference. */
json_t *sk_kvlist_to_json(const sk_kvlist *l);

#endif
