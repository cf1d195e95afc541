/*
 * reconcile/marker_int: the workspace marker, its step in the plan
 * (plan_workspace.c) and its file (marker.c) (private to reconcile).
 */
#ifndef SK_RECONCILE_MARKER_INT_H
#define SK_RECONCILE_MARKER_INT_H

#include "../api/sandbox_values.h"
#include "../api/userspace.h"
#include "../sandbox/sandbox.h"
#include "../util/util.h"
#include "options.h"

/* ---- the workspace marker (plan_workspace.c, marker.c) ----
 * A small file in the first workspace path, written through envd at create
 * and whenever a loss was found, read back after every resume: missing or
 * another space's means the provider resumed the sandbox without its files
 * (WorkspaceIntact False, drift WorkspaceLost, workspaceLost in the connect
 * answer) instead of a silent loss. */
typedef enum sk_marker_check {
	SK_MARKER_UNCHECKED, /* not read (not due, or the backend has no files) */
	SK_MARKER_FOUND, /* this space's marker */
	SK_MARKER_MISSING, /* no marker file */
	SK_MARKER_FOREIGN, /* another space's, or not a marker */
	SK_MARKER_UNREADABLE, /* the read failed: proves nothing */
} sk_marker_check;

typedef enum sk_marker_step {
	SK_MARKER_STEP_NONE,
	SK_MARKER_STEP_WRITE, /* after a create, or none written yet */
	SK_MARKER_STEP_CHECK, /* after a resume (or an unreadable one): read it back */
} sk_marker_step;

/* What the marker round of us's running, healthy keeper does (pure). */
sk_marker_step sk_plan_marker_step(const sk_userspace *us, const sk_plan_options *opts);

/* ---- the workspace marker: its file and I/O (marker.c) ---- */
#define SK_MARKER_FILE ".spacekeeper/workspace.json"

/* The marker's absolute path in us's sandboxes (caller frees). */
char *sk_marker_path(const sk_userspace *us);
/* Writes us's marker (space, uid, generation, sandbox, time) into sb. */
int sk_marker_write(sk_provider *p, const sk_sandbox *sb, const sk_userspace *us, int64_t now_ms,
        sk_error *err);
/* Reads sb's marker back and compares it with us; detail says what differs. */
sk_marker_check sk_marker_read(
        sk_provider *p, const sk_sandbox *sb, const sk_userspace *us, char *detail, size_t len);

#endif
