/*
 * api/meta: the API version and the object metadata every kind has.
 */
#ifndef SK_API_META_H
#define SK_API_META_H

#include <stddef.h>
#include <stdint.h>

#include "kvlist.h"

#define SK_API_VERSION "spacekeeper.dev/v1alpha1"

typedef struct sk_object_meta {
	char *name; /* DNS-1123 label */
	sk_kvlist labels;
	sk_kvlist annotations;
	/* set by the store only */
	char *uid;
	int64_t generation;
	int64_t resource_version;
	int64_t creation_ms; /* 0 when unset */
	int64_t deletion_ms; /* 0 when not being deleted */
	char **finalizers;
	size_t n_finalizers;
	/* When this copy was read from (or written to) the store, on this
	 * process's monotonic clock (sk_monotonic_ms); 0 unknown. Not stored. */
	int64_t read_ms;
} sk_object_meta;

#endif
