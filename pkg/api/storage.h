/*
 * api/storage: spec.storage.volume and status.storage.volume.
 */
#ifndef SK_API_STORAGE_H
#define SK_API_STORAGE_H

#include <stdbool.h>

/* spec.storage.volume (storage.c): a provider volume per user, mounted into
 * every sandbox of the space. UNSET deletionPolicy is Retain. */
typedef enum sk_volume_policy {
	SK_VOLUME_UNSET,
	SK_VOLUME_RETAIN,
	SK_VOLUME_DELETE
} sk_volume_policy;
typedef struct sk_storage {
	char *volume_name; /* spec.storage.volume.name; NULL: derived from spec.userID */
	char *mount_path; /* spec.storage.volume.mountPath; NULL: SK_STORAGE_DEFAULT_MOUNT */
	sk_volume_policy volume_policy; /* spec.storage.volume.deletionPolicy */
} sk_storage;
#define SK_STORAGE_DEFAULT_MOUNT "/home/user"
#define SK_VOLUME_NAME_MAX 63

struct sk_userspace_spec;
/* Whether spec.storage asks for a volume: any of its fields given. */
bool sk_storage_wanted(const struct sk_userspace_spec *s);
/* The volume's name: spec.storage.volume.name, else "sk-" and the user ID
 * (a user ID longer than 40 characters or holding a '.' is cut to 40, '.'
 * written '_', and 16 hex digits of its hash appended, so names stay
 * distinct and within [A-Za-z0-9_-]{1,63}). */
void sk_storage_volume_name(const struct sk_userspace_spec *s, char out[SK_VOLUME_NAME_MAX + 1]);
/* spec.storage.volume.mountPath, else SK_STORAGE_DEFAULT_MOUNT. */
const char *sk_storage_mount_path(const struct sk_userspace_spec *s);
bool sk_storage_deletes(const struct sk_userspace_spec *s); /* deletionPolicy Delete */

/* status.storage.volume: the volume the space's sandboxes are created with
 * (spec.storage.volume). */
typedef struct sk_storage_status {
	char *state; /* state: "Mounted" | "Unsupported" (the provider has none); NULL: none */
	char *volume_name; /* name */
	char *volume_id; /* volumeID: the provider's (Mounted) */
	char *mount_path; /* mountPath */
} sk_storage_status;
#define SK_STORAGE_MOUNTED "Mounted"
#define SK_STORAGE_UNSUPPORTED "Unsupported"
void sk_storage_status_dispose(sk_storage_status *s);
void sk_storage_status_copy(sk_storage_status *dst, const sk_storage_status *src);
bool sk_storage_status_equal(const sk_storage_status *a, const sk_storage_status *b);

#endif
