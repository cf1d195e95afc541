/*
 * api/storage: spec.storage.volume's effective values (the name derived from
 * the user ID, the mount path and deletion policy defaults) for the planner,
 * the executor and the status.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "storage.h"
#include "userspace.h"

#define NAME_PREFIX "sk-"
#define NAME_KEEP 40 /* characters of the user ID kept before the hash */

bool
sk_storage_wanted(const sk_userspace_spec *s)
{
	return s->storage.volume_name != NULL || s->storage.mount_path != NULL ||
	        s->storage.volume_policy != SK_VOLUME_UNSET;
}

static uint64_t
fnv1a(const char *s)
{
	uint64_t h = 14695981039346656037ULL;

	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	return h;
}

void
sk_storage_volume_name(const sk_userspace_spec *s, char out[SK_VOLUME_NAME_MAX + 1])
{
	const char *id = s->user_id ? s->user_id : "";
	size_t n = strlen(id), keep = n < NAME_KEEP ? n : NAME_KEEP, len;

	if (s->storage.volume_name != NULL) {
		snprintf(out, SK_VOLUME_NAME_MAX + 1, "%s", s->storage.volume_name);
		return;
	}
	len = (size_t)snprintf(out, SK_VOLUME_NAME_MAX + 1, "%s%.*s", NAME_PREFIX, (int)keep, id);
	for (char *p = out + strlen(NAME_PREFIX); *p; p++)
		if (*p == '.')
			*p = '_';
	if (n > keep || strchr(id, '.') != NULL)
		snprintf(out + len, SK_VOLUME_NAME_MAX + 1 - len, "-%016llx",
		        (unsigned long long)fnv1a(id));
}

const char *
sk_storage_mount_path(const sk_userspace_spec *s)
{
	return s->storage.mount_path ? s->storage.mount_path : SK_STORAGE_DEFAULT_MOUNT;
}

bool
sk_storage_deletes(const sk_userspace_spec *s)
{
	return s->storage.volume_policy == SK_VOLUME_DELETE;
}

/* ---- status.storage ---- */

void
sk_storage_status_dispose(sk_storage_status *s)
{
	free(s->state);
	free(s->volume_name);
	free(s->volume_id);
	free(s->mount_path);
	memset(s, 0, sizeof(*s));
}

void
sk_storage_status_copy(sk_storage_status *dst, const sk_storage_status *src)
{
	dst->state = sk_strdup(src->state);
	dst->volume_name = sk_strdup(src->volume_name);
	dst->volume_id = sk_strdup(src->volume_id);
	dst->mount_path = sk_strdup(src->mount_path);
}

static bool
same(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

bool
sk_storage_status_equal(const sk_storage_status *a, const sk_storage_status *b)
{
	return same(a->state, b->state) && same(a->volume_name, b->volume_name) &&
	        same(a->volume_id, b->volume_id) && same(a->mount_path, b->mount_path);
}
