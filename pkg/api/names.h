/*
 * api/names: the sandbox metadata keys spacekeeper sets, and the name and
 * value rules shared by the validator and the store.
 */
#ifndef SK_API_NAMES_H
#define SK_API_NAMES_H

#include <stdbool.h>

/* Sandbox metadata keys that spacekeeper sets and users may not. */
#define SK_META_USER_ID "user_id"
#define SK_META_USERSPACE "userspace"
#define SK_META_USERSPACE_UID "userspace_uid"
#define SK_META_MANAGED_BY "managed_by"
#define SK_MANAGED_BY_VALUE "spacekeeper"
/* On a migration's target until the binding switches to it: the start of
 * that migration (ms, decimal); the duplicate rule leaves such a sandbox alone. */
#define SK_META_MIGRATION "migration_target"
/* The digest of spec.network a sandbox was created with (sk_network_digest),
 * set when the spec has one: what Cube, which reports no policy, has. */
#define SK_META_NETWORK "network_policy"
/* The snapshot a sandbox was started from (spacectl snapshot restore): its
 * template is the snapshot's, which is no drift from spec.template. */
#define SK_META_SNAPSHOT "restored_from"

bool sk_valid_name(const char *s); /* DNS-1123 label, 1..63 */
bool sk_valid_user_id(const char *s); /* [A-Za-z0-9._-]{1,128} */
bool sk_valid_metadata_value(const char *s); /* [A-Za-z0-9._-]{0,256} */
bool sk_reserved_metadata_key(const char *s);

#endif
