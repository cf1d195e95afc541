/*
 * store/quota: SpaceQuota objects in the store (quota.c, mongo_quota.c,
 * memory_quota.c), beside the UserSpaces of store.h.
 */
#ifndef SK_STORE_QUOTA_H
#define SK_STORE_QUOTA_H

#include "../api/quota.h"
#include "store.h"

/* ---- SpaceQuota ----
 *
 * SpaceQuota objects beside the UserSpaces. MongoDB:
 * collection "spacequotas", one document per quota {_id: name, object: the
 * JSON text of apiVersion, kind, metadata and spec, status: the JSON text
 * of status}: user keys (label keys with dots) never become BSON field
 * names, and apply (the object) and the controller (status) write
 * different fields, so neither overwrites the other's.
 */

/* Every SpaceQuota, sorted by name. */
int sk_store_quota_list(sk_store *s, sk_spacequota_list *out, sk_error *err);
/* SK_ENOTFOUND when absent. */
int sk_store_quota_get(sk_store *s, const char *name, sk_spacequota **out, sk_error *err);
/* Creates the quota (a new uid, creationTimestamp now) or replaces its
 * labels, annotations and spec (status kept). *action: "created",
 * "configured" or "unchanged". dry: decides the action, writes nothing. */
int sk_store_quota_apply(
        sk_store *s, const sk_spacequota *q, bool dry, const char **action, sk_error *err);
/* Writes q's status (used, lastUpdateTime) only; SK_ENOTFOUND when gone. */
int sk_store_quota_write_status(sk_store *s, const sk_spacequota *q, sk_error *err);
/* SK_ENOTFOUND when absent. */
int sk_store_quota_delete(sk_store *s, const char *name, sk_error *err);

#endif
