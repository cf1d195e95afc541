/*
 * api/status: the UserSpace status as a table of rows (status.h) and the
 * walks over it: dispose, copy, equality. The JSON form is codec.c's.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "migration.h"
#include "network.h"
#include "status.h"
#include "storage.h"
#include "strlist.h"

static const char *
phase_name(int v)
{
	return sk_phase_name((sk_phase)v);
}

static const char *
archive_state_name(int v)
{
	return sk_archive_state_name((sk_archive_state)v);
}

static bool
usage_present(const void *part)
{
	return ((const sk_usage *)part)->since_ms != 0;
}

static bool
archive_present(const void *part)
{
	const sk_archive_status *a = part;

	return a->state != SK_ARCHIVE_NONE || a->intent_ms != 0 || a->failures != 0;
}

static bool
storage_present(const void *part)
{
	return ((const sk_storage_status *)part)->state != NULL;
}

static const char *
archive_method_name(int v)
{
	return sk_archive_method_name((sk_archive_method)v);
}

static bool
snapshots_present(const void *part)
{
	const sk_snapshots_status *n = part;

	return n->schedule_ms != 0 || n->last_ms != 0 || n->ids.len > 0;
}

static bool
network_present(const void *part)
{
	return ((const sk_network_status *)part)->sandbox_id != NULL;
}

#define ROW(key, kind, type, member)                                                               \
	{                                                                                          \
		key, kind, offsetof(type, member), false, NULL, 0, 0, NULL, NULL, NULL, 0, NULL    \
	}
#define ROW_ALWAYS(key, type, member)                                                              \
	{                                                                                          \
		key, SK_STATUS_INT, offsetof(type, member), true, NULL, 0, 0, NULL, NULL, NULL, 0, \
		        NULL                                                                       \
	}
#define ROW_END                                                                                    \
	{                                                                                          \
		NULL, SK_STATUS_STR, 0, false, NULL, 0, 0, NULL, NULL, NULL, 0, NULL               \
	}

const sk_status_row sk_condition_rows[] = {
	ROW("type", SK_STATUS_STR, sk_condition, type),
	ROW("status", SK_STATUS_STR, sk_condition, status),
	ROW("reason", SK_STATUS_STR, sk_condition, reason),
	ROW("message", SK_STATUS_STR, sk_condition, message),
	ROW("lastTransitionTime", SK_STATUS_TIME, sk_condition, last_transition_ms),
	ROW("observedGeneration", SK_STATUS_INT, sk_condition, observed_generation),
	ROW_END,
};

const sk_status_row sk_drift_rows[] = {
	ROW("type", SK_STATUS_STR, sk_drift, type),
	ROW("sandboxID", SK_STATUS_STR, sk_drift, sandbox_id),
	ROW("since", SK_STATUS_TIME, sk_drift, since_ms),
	ROW("detail", SK_STATUS_STR, sk_drift, detail),
	ROW_END,
};

const sk_status_row sk_usage_rows[] = {
	ROW_ALWAYS("runningSeconds", sk_usage, running_s),
	ROW_ALWAYS("pausedSeconds", sk_usage, paused_s),
	ROW_ALWAYS("wakes", sk_usage, wakes),
	ROW_ALWAYS("creates", sk_usage, creates),
	ROW("since", SK_STATUS_TIME, sk_usage, since_ms),
	ROW("lastUpdateTime", SK_STATUS_TIME, sk_usage, updated_ms),
	ROW_END,
};

const sk_status_row sk_archive_rows[] = {
	ROW_ALWAYS("generation", sk_archive_status, generation),
	ROW_ALWAYS("files", sk_archive_status, files),
	ROW_ALWAYS("bytes", sk_archive_status, bytes),
	{ "state", SK_STATUS_ENUM, offsetof(sk_archive_status, state), false, NULL, 0, 0, NULL,
	        NULL, archive_state_name, SK_ARCHIVE_RESTORED + 1, "must be Archived or Restored" },
	/* the default (ObjectStorage) is not written, and read from its name too */
	{ "method", SK_STATUS_ENUM, offsetof(sk_archive_status, method), false, NULL, 0, 0, NULL,
	        NULL, archive_method_name, SK_ARCHIVE_SNAPSHOT + 1,
	        "must be ObjectStorage or Snapshot" },
	ROW("snapshotID", SK_STATUS_STR, sk_archive_status, snapshot_id),
	ROW("archivingSince", SK_STATUS_TIME, sk_archive_status, intent_ms),
	ROW("bucket", SK_STATUS_STR, sk_archive_status, bucket),
	ROW("key", SK_STATUS_STR, sk_archive_status, key),
	ROW("time", SK_STATUS_TIME, sk_archive_status, time_ms),
	ROW("sandboxID", SK_STATUS_STR, sk_archive_status, sandbox_id),
	ROW("restoreTime", SK_STATUS_TIME, sk_archive_status, restore_ms),
	ROW("failures", SK_STATUS_INT, sk_archive_status, failures),
	ROW("lastFailureTime", SK_STATUS_TIME, sk_archive_status, failed_ms),
	ROW_END,
};

const sk_status_row sk_storage_volume_rows[] = {
	ROW("state", SK_STATUS_STR, sk_storage_status, state),
	ROW("name", SK_STATUS_STR, sk_storage_status, volume_name),
	ROW("volumeID", SK_STATUS_STR, sk_storage_status, volume_id),
	ROW("mountPath", SK_STATUS_STR, sk_storage_status, mount_path),
	ROW_END,
};

const sk_status_row sk_network_status_rows[] = {
	ROW("sandboxID", SK_STATUS_STR, sk_network_status, sandbox_id),
	ROW("applied", SK_STATUS_STR, sk_network_status, applied),
	ROW_END,
};

const sk_status_row sk_snapshots_status_rows[] = {
	ROW("lastScheduleTime", SK_STATUS_TIME, sk_snapshots_status, schedule_ms),
	ROW("lastSnapshotTime", SK_STATUS_TIME, sk_snapshots_status, last_ms),
	ROW("snapshotIDs", SK_STATUS_STRLIST, sk_snapshots_status, ids),
	ROW_END,
};

const sk_status_row sk_status_rows[] = {
	{ "phase", SK_STATUS_ENUM, offsetof(sk_userspace_status, phase), false, NULL, 0, 0, NULL,
	        NULL, phase_name, SK_PHASE_COUNT, "unknown phase" },
	ROW("sandboxID", SK_STATUS_STR, sk_userspace_status, sandbox_id),
	ROW("observedGeneration", SK_STATUS_INT, sk_userspace_status, observed_generation),
	{ "conditions", SK_STATUS_ARRAY, offsetof(sk_userspace_status, conditions), false,
	        sk_condition_rows, sizeof(sk_condition),
	        offsetof(sk_userspace_status, n_conditions), NULL, NULL, NULL, 0, NULL },
	{ "drift", SK_STATUS_ARRAY, offsetof(sk_userspace_status, drift), false, sk_drift_rows,
	        sizeof(sk_drift), offsetof(sk_userspace_status, n_drift), NULL, NULL, NULL, 0,
	        NULL },
	ROW("message", SK_STATUS_STR, sk_userspace_status, message),
	ROW("lastReconcileTime", SK_STATUS_TIME, sk_userspace_status, last_reconcile_ms),
	ROW("lastActivityTime", SK_STATUS_TIME, sk_userspace_status, last_activity_ms),
	ROW("provider", SK_STATUS_STR, sk_userspace_status, provider),
	{ "migration", SK_STATUS_MIGRATION, offsetof(sk_userspace_status, migration), false, NULL,
	        sizeof(sk_migration_status), 0, NULL, NULL, NULL, 0, NULL },
	{ "usage", SK_STATUS_OBJECT, offsetof(sk_userspace_status, usage), false, sk_usage_rows,
	        sizeof(sk_usage), 0, NULL, usage_present, NULL, 0, NULL },
	{ "archive", SK_STATUS_OBJECT, offsetof(sk_userspace_status, archive), false,
	        sk_archive_rows, sizeof(sk_archive_status), 0, NULL, archive_present, NULL, 0,
	        NULL },
	{ "storage", SK_STATUS_OBJECT, offsetof(sk_userspace_status, storage), false,
	        sk_storage_volume_rows, sizeof(sk_storage_status), 0, "volume", storage_present,
	        NULL, 0, NULL },
	{ "snapshots", SK_STATUS_OBJECT, offsetof(sk_userspace_status, snapshots), false,
	        sk_snapshots_status_rows, sizeof(sk_snapshots_status), 0, NULL, snapshots_present,
	        NULL, 0, NULL },
	{ "network", SK_STATUS_OBJECT, offsetof(sk_userspace_status, network), false,
	        sk_network_status_rows, sizeof(sk_network_status), 0, NULL, network_present, NULL,
	        0, NULL },
	ROW_END,
};

static bool
str_eq(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

void
sk_status_rows_dispose(const sk_status_row *rows, void *obj)
{
	for (const sk_status_row *r = rows; r->key != NULL; r++) {
		if (r->kind == SK_STATUS_STR) {
			free(*SK_STATUS_AT(r, obj, char *));
		} else if (r->kind == SK_STATUS_ARRAY) {
			char *items = *SK_STATUS_AT(r, obj, char *);
			size_t n = *(size_t *)(void *)((char *)obj + r->count_offset);
			for (size_t i = 0; i < n; i++)
				sk_status_rows_dispose(r->rows, items + i * r->item_size);
			free(items);
		} else if (r->kind == SK_STATUS_STRLIST) {
			sk_strlist_dispose(SK_STATUS_AT(r, obj, sk_strlist));
		} else if (r->kind == SK_STATUS_OBJECT) {
			sk_status_rows_dispose(r->rows, SK_STATUS_AT(r, obj, void));
		} else if (r->kind == SK_STATUS_MIGRATION) {
			sk_migration_dispose(SK_STATUS_AT(r, obj, sk_migration_status));
		}
	}
}

static void
copy_array(const sk_status_row *r, void *dst, const void *src)
{
	const char *from = *SK_STATUS_AT(r, src, char *const);
	size_t n = *(const size_t *)(const void *)((const char *)src + r->count_offset);
	char *to = n > 0 ? sk_calloc(n, r->item_size) : NULL;

	for (size_t i = 0; i < n; i++)
		sk_status_rows_copy(r->rows, to + i * r->item_size, from + i * r->item_size);
	*SK_STATUS_AT(r, dst, char *) = to;
	*(size_t *)(void *)((char *)dst + r->count_offset) = n;
}

void
sk_status_rows_copy(const sk_status_row *rows, void *dst, const void *src)
{
	for (const sk_status_row *r = rows; r->key != NULL; r++) {
		switch (r->kind) {
		case SK_STATUS_STR:
			*SK_STATUS_AT(r, dst, char *) =
			        sk_strdup(*SK_STATUS_AT(r, src, char *const));
			break;
		case SK_STATUS_INT:
		case SK_STATUS_TIME:
			*SK_STATUS_AT(r, dst, int64_t) = *SK_STATUS_AT(r, src, const int64_t);
			break;
		case SK_STATUS_ENUM:
			*SK_STATUS_AT(r, dst, int) = *SK_STATUS_AT(r, src, const int);
			break;
		case SK_STATUS_ARRAY: copy_array(r, dst, src); break;
		case SK_STATUS_STRLIST:
			sk_strlist_copy(SK_STATUS_AT(r, dst, sk_strlist),
			        SK_STATUS_AT(r, src, const sk_strlist));
			break;
		case SK_STATUS_OBJECT:
			sk_status_rows_copy(r->rows, SK_STATUS_AT(r, dst, void),
			        SK_STATUS_AT(r, src, const void));
			break;
		case SK_STATUS_MIGRATION:
			sk_migration_copy(SK_STATUS_AT(r, dst, sk_migration_status),
			        SK_STATUS_AT(r, src, const sk_migration_status));
			break;
		}
	}
}

static bool
arrays_equal(const sk_status_row *r, const void *a, const void *b)
{
	const char *ia = *SK_STATUS_AT(r, a, char *const), *ib = *SK_STATUS_AT(r, b, char *const);
	size_t n = *(const size_t *)(const void *)((const char *)a + r->count_offset);

	if (n != *(const size_t *)(const void *)((const char *)b + r->count_offset))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!sk_status_rows_equal(r->rows, ia + i * r->item_size, ib + i * r->item_size))
			return false;
	}
	return true;
}

static bool
strlists_equal(const sk_strlist *a, const sk_strlist *b)
{
	if (a->len != b->len)
		return false;
	for (size_t i = 0; i < a->len; i++) {
		if (!str_eq(a->items[i], b->items[i]))
			return false;
	}
	return true;
}

static bool
row_equal(const sk_status_row *r, const void *a, const void *b)
{
	switch (r->kind) {
	case SK_STATUS_STR:
		return str_eq(*SK_STATUS_AT(r, a, char *const), *SK_STATUS_AT(r, b, char *const));
	case SK_STATUS_INT:
	case SK_STATUS_TIME:
		return *SK_STATUS_AT(r, a, const int64_t) == *SK_STATUS_AT(r, b, const int64_t);
	case SK_STATUS_ENUM:
		return *SK_STATUS_AT(r, a, const int) == *SK_STATUS_AT(r, b, const int);
	case SK_STATUS_ARRAY: return arrays_equal(r, a, b);
	case SK_STATUS_STRLIST:
		return strlists_equal(
		        SK_STATUS_AT(r, a, const sk_strlist), SK_STATUS_AT(r, b, const sk_strlist));
	case SK_STATUS_OBJECT:
		return sk_status_rows_equal(
		        r->rows, SK_STATUS_AT(r, a, const void), SK_STATUS_AT(r, b, const void));
	case SK_STATUS_MIGRATION:
		return sk_migration_equal(SK_STATUS_AT(r, a, const sk_migration_status),
		        SK_STATUS_AT(r, b, const sk_migration_status));
	}
	return false;
}

bool
sk_status_rows_equal(const sk_status_row *rows, const void *a, const void *b)
{
	for (const sk_status_row *r = rows; r->key != NULL; r++) {
		if (!row_equal(r, a, b))
			return false;
	}
	return true;
}

void
sk_userspace_status_dispose(sk_userspace_status *st)
{
	if (st == NULL)
		return;
	sk_status_rows_dispose(sk_status_rows, st);
	memset(st, 0, sizeof(*st));
}

void
sk_userspace_status_copy(sk_userspace_status *dst, const sk_userspace_status *src)
{
	memset(dst, 0, sizeof(*dst));
	sk_status_rows_copy(sk_status_rows, dst, src);
}

bool
sk_userspace_status_equal(const sk_userspace_status *a, const sk_userspace_status *b)
{
	return sk_status_rows_equal(sk_status_rows, a, b);
}

void
sk_archive_status_dispose(sk_archive_status *a)
{
	sk_status_rows_dispose(sk_archive_rows, a);
	memset(a, 0, sizeof(*a));
}

void
sk_archive_status_copy(sk_archive_status *dst, const sk_archive_status *src)
{
	memset(dst, 0, sizeof(*dst));
	sk_status_rows_copy(sk_archive_rows, dst, src);
}

bool
sk_archive_status_equal(const sk_archive_status *a, const sk_archive_status *b)
{
	return sk_status_rows_equal(sk_archive_rows, a, b);
}
