/*
 * api/migration: status.migration, a move of a space to another provider or template.
 */
#ifndef SK_API_MIGRATION_H
#define SK_API_MIGRATION_H

#include <stdbool.h>
#include <stdint.h>

/* status.migration: a move of the space to another
 * provider or template, step by step, so a restarted controller resumes it. */
typedef enum sk_migration_phase {
	SK_MIG_NONE, /* no migration recorded */
	SK_MIG_PENDING, /* triggered; waits for the space to be idle */
	SK_MIG_CREATING, /* the target is being created (mark written first) */
	SK_MIG_COPYING,
	SK_MIG_VERIFYING,
	SK_MIG_SWITCHING, /* verified; the binding moves in one write */
	SK_MIG_RETIRING, /* bound to the target; source paused, deleted after keepSourceFor */
	SK_MIG_DONE,
	SK_MIG_ABORTED,
	SK_MIG_COUNT
} sk_migration_phase;

typedef struct sk_migration_end {
	char *provider;
	char *template_id;
	char *sandbox_id; /* NULL: not known (target not created yet) */
} sk_migration_end;

typedef struct sk_migration_status {
	sk_migration_phase phase;
	sk_migration_end source, target;
	int64_t files_done, files_total, bytes_done, bytes_total;
	int64_t start_ms; /* when it was triggered */
	int64_t step_ms; /* when the current phase began */
	char *trigger; /* "ProviderChanged" | "TemplateChanged" | "RolloutRestart" */
	char *reason; /* Aborted: why; else may be NULL */
} sk_migration_status;

const char *sk_migration_phase_name(sk_migration_phase p); /* "" for NONE */
/* Pending up to Retiring: the space is moving. */
bool sk_migration_active(const sk_migration_status *m);
void sk_migration_dispose(sk_migration_status *m);
void sk_migration_copy(sk_migration_status *dst, const sk_migration_status *src);
bool sk_migration_equal(const sk_migration_status *a, const sk_migration_status *b);

#endif
