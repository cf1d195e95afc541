/*
 * reconcile: one UserSpace, observe -> plan -> execute -> status (docs/architecture.md, Invariants).
 *
 *   sk_observe   gathers the observed state: the user's managed sandboxes from
 *                the controller's last list, a direct GET of the bound sandbox
 *                when neither the list nor the controller's own last look
 *                (its create, resume, set_timeout or pause answer, a GET, a
 *                healthy probe) tells its state (sk_plan_look), or when the
 *                keeper's data plane did not answer (is it still running?),
 *                a direct lookup by user_id when the object is being deleted or
 *                an unfinished create must be resolved, and the data-plane
 *                probe of the running keeper.
 *   sk_plan      PURE (no I/O, no clock): desired + observed + now -> ordered
 *                actions, the next status, and the requeue delay.
 *   sk_execute   runs the actions through the provider and the store, writes
 *                status with compare-and-swap, records events, classifies failures.
 *   sk_reconcile_object  observe -> plan -> execute of a copy the caller
 *                holds (the informer's), the migration round (sk_migrate_round)
 *                first when one is active: the call a worker makes
 *                (controller/worker.c).
 *   sk_reconcile get by name, then sk_reconcile_object (the integration tests).
 *
 * Crash safety of create (rule 1, "a list is not proof of absence"):
 * before every create the executor writes status {phase: Creating,
 * sandboxID: none, lastReconcileTime: T} (compare-and-swap; when that write
 * fails nothing is created). A round that finds phase Creating with nothing
 * bound knows a create may have happened without its binding (crash, store
 * down): it adopts a sandbox of the user when any is seen, and creates again
 * only when a direct lookup by user_id made at least create_grace_ms after T
 * (longer than any create request can take) finds none. The controller's
 * cached list (possibly older than T, possibly empty) never justifies a
 * second create. A create that the provider rejected outright (429 or another
 * 4xx) clears the mark at once so the next round retries without the wait.
 */
#ifndef SK_RECONCILE_H
#define SK_RECONCILE_H

#include "../api/config.h"
#include "../api/kvlist.h"
#include "../api/network.h"
#include "../api/sandbox_values.h"
#include "../api/schema.h"
#include "../api/status.h"
#include "../api/userspace.h"
#include "../objstore/objstore.h"
#include "../sandbox/sandbox.h"
#include "../store/store.h"
#include "../util/util.h"

/* The reasons this package writes, the workspace marker, the archive, the
 * migration plan and what else only this package and its tests call:
 * reconcile_int.h. */

/* ---- options ---- */

typedef struct sk_plan_options {
	int64_t sandbox_timeout_ms; /* provider TTL set on create/connect/set_timeout (1h) */
	int64_t resume_grace_ms; /* 502/503/504 after a create/resume is transient (20s) */
	int64_t create_grace_ms; /* wait before re-creating after an unfinished create (30s) */
	int64_t resync_ms; /* longest requeue (30s) */
	int64_t short_requeue_ms; /* after create/connect, to probe (2s) */
	int64_t min_requeue_ms; /* shortest requeue (1s) */
	bool probe; /* probe the data plane of the running keeper (true) */
	size_t max_probes; /* unbound: running candidates probed at most (3) */
	bool delete_orphans; /* false */
	int64_t orphan_grace_ms; /* 10m */
	/* How long a healthy probe answers a connect from memory (10s; from a
	 * config: 1.5 resync periods); see
	 * sk_connect_decide. */
	int64_t probe_fresh_ms;
	/* A running sandbox this close to its deadline (or past it) may be
	 * asleep: its data plane is not probed, since traffic would wake it
	 * (autoResume); the control plane is asked instead (2s). */
	int64_t sleep_margin_ms;
	/* The provider moves a sandbox's deadline on data-plane traffic (Cube's
	 * idle window): a deadline other than the one set is not an override. */
	bool deadline_slides;
	/* providers[].capacity.evictAfter: a space connected to within this
	 * long is never evicted (1m). */
	int64_t evict_after_ms;
	/* The workspace marker (plan_workspace.c): written at create, read back
	 * after every resume; a bound sandbox gone is a lost workspace. On from
	 * a config (the providers' data planes have files); off by default. */
	bool markers;
	/* The provider changes a live sandbox's network policy (E2B): a change
	 * of spec.network is applied in place, else by migration or reported. */
	bool network_live;
	/* An archive is configured (the ControllerConfig's archive): asleep
	 * spaces are archived after spec.lifecycle.archiveAfter, or before the
	 * provider's pausedRetention (paused_retention_ms, 0: none) deletes
	 * their paused sandbox (plan_archive.c). */
	bool archive;
	int64_t paused_retention_ms;
	/* The provider keeps persistent snapshots (E2B): an archive with
	 * spec.lifecycle.archive.method Snapshot keeps one instead of copying
	 * files, and needs no archive configured. */
	bool snapshots;
} sk_plan_options;

void sk_plan_options_init(sk_plan_options *o);
/* Defaults, then the provider entry's TTL/orphan settings and the resync period
 * (resync_ms 0 keeps the default). The create grace is the provider's request
 * timeout plus 5 s. */
void sk_plan_options_from_config(
        sk_plan_options *o, const sk_provider_config *pc, int64_t resync_ms);

/* ---- observed state ---- */

/* The controller's view of one user's sandboxes from its last provider list. */
typedef struct sk_list_view {
	const sk_sandbox_list *for_user; /* managed sandboxes tagged user_id; NULL: none */
	bool valid; /* the last list call succeeded (every page) */
	int64_t listed_ms; /* when that list call started; 0 unknown */
} sk_list_view;

typedef enum sk_lookup {
	SK_LOOKUP_NONE, /* not made */
	SK_LOOKUP_FOUND, /* answered, the object exists */
	SK_LOOKUP_NOT_FOUND, /* answered 404 / none matched (confirmed absence) */
	SK_LOOKUP_ERROR, /* failed (transient or not): proves nothing */
} sk_lookup;

typedef struct sk_probe {
	char *sandbox_id;
	bool made; /* false: could not probe (error) */
	sk_health health;
	int http_status;
	int64_t probed_ms;
	int error_code; /* when !made */
} sk_probe;

/* How observe learns the bound keeper's state (sk_plan_look, pure). */
typedef enum sk_look {
	SK_LOOK_NONE, /* nothing bound */
	SK_LOOK_LIST, /* the list saw it after the last provider change and our last look */
	SK_LOOK_KNOWN, /* the controller's own look is fresh and newer: as known, no GET */
	/* known to exist, at or near its deadline, no renewal wanted or a
	 * connect waits: state unknown, not asked (a waiting connect's resume
	 * answers and acts: one call instead of a GET and a resume) */
	SK_LOOK_ASLEEP_MAYBE,
	SK_LOOK_GET, /* doubt: ask the control plane */
} sk_look;

typedef struct sk_observed {
	/* The user's managed sandboxes (list + direct answers), one per id, no GONE. */
	sk_sandbox_list sandboxes;
	bool list_valid;
	int64_t listed_ms;
	/* Direct GET of status.sandboxID (made when the list lacks it). */
	sk_lookup bound;
	sk_error bound_error;
	/* Direct list by user_id (deletion, or phase Creating with nothing bound). */
	sk_lookup user;
	int64_t user_ms; /* when the lookup started */
	sk_error user_error;
	/* Data-plane probes (the keeper, or running candidates when unbound). */
	sk_probe *probes;
	size_t n_probes;
	/* The controller's memory of the user (rule 3, 9): the last connect or
	 * heartbeat (wall ms, 0 none), a connect waiting for the space (wake an
	 * Idle keeper), and a connect that found the keeper's data plane
	 * unreachable (Replace at once, not after health.unhealthyAfter). */
	int64_t activity_ms;
	bool wake;
	bool replace_now;
	/* When the direct GET of the bound sandbox was made (0: not made). */
	int64_t bound_ms;
	/* The keeper's envd process list (lifecycle.busy), made only when
	 * sk_plan_busy_check asks for it: procs_made false when not made or it
	 * failed (procs_error). */
	bool procs_made;
	int procs_running;
	int procs_error;
	/* The deadline spacekeeper last set on deadline_for (the controller's
	 * memory; 0: unknown) and when it set it (wall ms). */
	const char *deadline_for;
	int64_t deadline_ms;
	int64_t deadline_set_ms;
	/* Capacity (providers[].capacity): the controller asks to pause the
	 * running keeper to free a slot at its provider (evict; the planner
	 * still spares a busy or just-connected space), or says no slot is
	 * free for a start now (capacity_wait, why in capacity_message,
	 * borrowed): a create or a wake waits. */
	bool evict;
	const char *evict_quota; /* evict: the SpaceQuota it frees a slot under, NULL: capacity */
	bool capacity_wait;
	const char *capacity_message;
	/* The workspace marker read back from the running keeper, made only when
	 * sk_plan_marker_step says CHECK and its data plane answered. */
	int marker; /* sk_marker_check */
	char marker_detail[256];
	/* How the bound keeper's state was learnt, and when it was last truly
	 * seen (0: not seen; see sk_keeper_known.look_ms). */
	sk_look look;
	int64_t look_ms;
} sk_observed;

void sk_observed_dispose(sk_observed *o);

/* What the controller remembers of a keeper beyond the lists: its envd
 * details from a create, connect or get answer (a list has neither), and
 * the deadline spacekeeper set on it. Borrowed strings. */
typedef struct sk_keeper_known {
	const char *sandbox_id; /* NULL: nothing known */
	const char *envd_access_token; /* secret */
	const char *envd_version;
	int64_t deadline_ms; /* 0: unknown */
	int64_t deadline_set_ms;
	bool detail_seen; /* a create, connect or get answer of sandbox_id was seen */
	/* Read the bound keeper once (GET) when it runs, no answer of it was
	 * seen and there was activity: a list has no envd token (the
	 * controller sets it). */
	bool fetch_detail;
	/* The controller's own last look at the keeper's state (what it did and saw is an observation as good as a GET):
	 * when (wall ms, 0: none), whether it ran then, and its deadline then.
	 * Made by a create, resume, set_timeout or pause answer, a GET, a list
	 * newer than the last provider change, or a healthy probe; never by a
	 * round that only reused it. look_state: RUNNING or PAUSED. */
	int64_t look_ms;
	sk_sandbox_state look_state;
	int64_t look_end_ms;
	/* A connect waits for the keeper (the controller's wake request). */
	bool wake;
	/* A user's report (POST .../unhealthy, a fresh connect) or a connect
	 * that found the keeper unreachable asks for its replacement now
	 * (sk_reconcile_env.replace_now). */
	bool replace_now;
	/* The sandbox this controller last killed as a replacement's old one
	 * (NULL: none) and when: a list made before that still shows it. */
	const char *killed_id;
	int64_t killed_ms;
} sk_keeper_known;

const char *sk_look_name(sk_look l); /* "list", "known", ... */

/* Fills out (caller disposes). Returns 0; provider failures are recorded in
 * out (bound/user/probes), never returned: the planner decides what they mean.
 * list may be NULL (nothing listed). activity_ms: the last activity the
 * caller knows (0: none); a quiet keeper (sk_plan_quiet) is not probed. */
int sk_observe(sk_provider *p, const sk_userspace *us, const sk_list_view *list,
        const sk_plan_options *opts, int64_t activity_ms, sk_observed *out, sk_error *err);

/* ---- a sleep near the provider's retention, no archive (retention.c) ---- */
typedef struct sk_retention {
	int64_t since_ms; /* when the sleep began (estimated) */
	int64_t retention_ms; /* the provider's pausedRetention */
	int64_t left_ms; /* until the provider deletes the sandbox; <= 0 past it */
	const char *provider; /* borrowed from the config */
	bool warn;
} sk_retention;

/* Whether us, asleep (Idle or Paused) at a provider with a pausedRetention
 * and no archive configured, is within a fifth of that retention or a day
 * of it (whichever is longer): out says how long is left. Pure. */
bool sk_retention_check(
        const sk_controller_config *cfg, const sk_userspace *us, int64_t now_ms, sk_retention *out);
/* The warning's text (no secret in it): the space, the sleep, the provider,
 * what is left. */
void sk_retention_format(
        const sk_retention *r, const char *name, int64_t now_ms, char *buf, size_t len);

/* ---- plan ---- */

typedef enum sk_action_type {
	SK_ACTION_CREATE,
	SK_ACTION_CONNECT, /* resume (or extend) */
	SK_ACTION_PAUSE,
	SK_ACTION_KILL,
	SK_ACTION_SET_TIMEOUT, /* re-assert the lifecycle */
	SK_ACTION_BIND, /* write the next status now (binding first) */
	SK_ACTION_REMOVE_FINALIZER,
	SK_ACTION_EVENT,
	SK_ACTION_INIT_ENV, /* re-assert spec.env through envd POST /init */
	SK_ACTION_WRITE_MARKER, /* write the workspace marker through envd */
	SK_ACTION_SET_NETWORK, /* apply spec.network live (E2B) */
	/* Copy the keeper's workspace into the archive (manifest last, verified),
	 * then record it in status (phase Archived, nothing bound): the KILL
	 * that follows may only run after that write. */
	SK_ACTION_ARCHIVE,
	/* Copy status.archive back into the keeper, verified against its manifest */
	SK_ACTION_RESTORE,
	/* Delete every archive of the user (PREFIX/USERID/), before the finalizer */
	SK_ACTION_PURGE_ARCHIVE,
	/* Delete the provider snapshot snapshot_id (an archive by snapshot,
	 * restored or purged); status.archive.snapshotID cleared once done */
	SK_ACTION_DELETE_SNAPSHOT,
	/* Take a persistent snapshot of the keeper (spec.snapshots.schedule);
	 * its ID appended to status.snapshots.snapshotIDs */
	SK_ACTION_SNAPSHOT,
} sk_action_type;

typedef enum sk_kill_reason {
	SK_KILL_NONE,
	SK_KILL_DUPLICATE,
	SK_KILL_REPLACE,
	SK_KILL_DELETE,
	SK_KILL_ORPHAN,
	SK_KILL_ARCHIVED, /* its workspace is in the archive, recorded in status */
} sk_kill_reason;

/* What woke a paused keeper (CONNECT, and a migration's source): the
 * Woken event names it; only a connect is a user's. */
typedef enum sk_wake_cause {
	SK_WAKE_NONE, /* no wake: an always-on keeper resumed */
	SK_WAKE_CONNECT, /* a user's connect */
	SK_WAKE_ARCHIVE, /* deep sleep: its files are read through envd */
	SK_WAKE_MIGRATION, /* a migration copies its files */
	SK_WAKE_SNAPSHOT, /* a provider snapshot of a paused space */
} sk_wake_cause;

/* "a connect", "the archive", "a migration", "a snapshot" ("" for none). */
const char *sk_wake_cause_phrase(sk_wake_cause w);

typedef struct sk_action {
	sk_action_type type;
	/* Target; NULL for CREATE, and for BIND/SET_TIMEOUT/PAUSE meaning "the
	 * sandbox the preceding CREATE made". */
	char *sandbox_id;
	sk_kill_reason why; /* KILL */
	sk_wake_cause wake; /* CONNECT: what asked for it (event Woken names it) */
	int64_t timeout_ms; /* CREATE, CONNECT, SET_TIMEOUT */
	/* CREATE */
	char *template_id;
	int cpu_count;
	int memory_mb;
	bool auto_pause;
	bool auto_resume;
	sk_kvlist metadata;
	sk_kvlist env; /* CREATE, INIT_ENV: values never logged */
	sk_network network; /* CREATE, SET_NETWORK: spec.network */
	/* CREATE: the UserSpace whose bound sandbox the provider forks instead
	 * (spec.source.fork.userSpace, on the space's first create only); NULL: a create. */
	char *fork_from;
	char *snapshot_id; /* DELETE_SNAPSHOT */
	/* EVENT */
	char *event_type; /* "Normal" | "Warning" */
	char *reason;
	char *message;
} sk_action;

typedef struct sk_plan_result {
	sk_action *actions;
	size_t n_actions;
	/* The status to write once the actions succeed (sandboxID of a CREATE
	 * filled in by the executor). */
	sk_userspace_status next;
	int64_t requeue_after_ms;
	/* Non-zero SK_E* when the plan waits on an observation failure (e.g. the
	 * GET of the bound sandbox failed): the caller backs off; wait_message says why. */
	int wait_code;
	char *wait_message;
	/* The plan starts the keeper (create or resume) and nothing in it needs
	 * the binding stored first: the executor observes the started sandbox at
	 * once (probe) and plans again before it writes the status, so the
	 * binding and the health are written together (one write, no requeue).
	 * The second plan never has follow_up set. */
	bool follow_up;
} sk_plan_result;

int sk_plan(const sk_userspace *desired, const sk_observed *observed, int64_t now_ms,
        const sk_plan_options *opts, sk_plan_result *out);
void sk_plan_result_dispose(sk_plan_result *r);

const char *sk_action_type_name(sk_action_type t); /* "create", "kill", ... */
const char *sk_kill_reason_name(sk_kill_reason r); /* "Duplicate", "Replace", ... */
bool sk_action_is_mutating(
        const sk_action *a); /* CREATE CONNECT PAUSE KILL INIT_ENV WRITE_MARKER */
/* One line: "create sandbox (template base, timeout 1h)", "kill i123 (Duplicate)". */
void sk_action_describe(const sk_action *a, sk_buf *out);

/* spacekeeper --once: whether a stored object is in a phase one pass can end on. */
bool sk_plan_settled(const sk_userspace *us);

/* ---- connect: the platform's request, decided from what is known (pure) ---- */

typedef enum sk_connect_verdict {
	SK_CONNECT_READY, /* answer now from memory: keeper running, probed healthy lately */
	SK_CONNECT_WAKE, /* Idle: resume it (one provider call), probe, answer */
	SK_CONNECT_REPLACE, /* keeper unreachable past the grace, remediation Replace: replace now */
	SK_CONNECT_RECONCILE, /* unknown, missing or changing: reconcile now and wait */
	SK_CONNECT_UNAVAILABLE, /* will not become ready by waiting: answer 503 at once */
} sk_connect_verdict;

/* What the controller remembers of a space's keeper from its last reconcile. */
typedef struct sk_keeper_memory {
	const char *sandbox_id; /* the keeper that reconcile saw, NULL none */
	bool running; /* its state then */
	bool healthy; /* its probe then answered 2xx (or probing is off) */
	int64_t seen_ms; /* when (wall ms), 0: never */
	int64_t end_ms; /* its provider deadline then (0 unknown) */
} sk_keeper_memory;

typedef struct sk_connect_decision {
	sk_connect_verdict verdict;
	const char *reason; /* UNAVAILABLE: "Deleting", "ModePaused", "DataPlaneUnreachable",
	                     * "RestoreFailed", ... */
	int64_t retry_after_ms; /* UNAVAILABLE: when asking again may help (0: not soon) */
	int64_t drift_since_ms; /* DataPlaneUnreachable: since when */
	bool renew_due; /* READY: the deadline is within the renewal window (sk_plan_renew_window) */
} sk_connect_decision;

void sk_connect_decide(const sk_userspace *us, const sk_keeper_memory *mem, int64_t now_ms,
        const sk_plan_options *opts, sk_connect_decision *out);
/* The provider deadline the space's sandbox gets on create and resume:
 * lifecycle.idleTimeout, or the provider's sandbox timeout when it is 0
 * (always on). */
int64_t sk_plan_ttl(const sk_userspace *us, const sk_plan_options *opts);

/* ---- usage: status.usage (pure; plan_usage.c) ---- */

/* Counts the time from u->updated_ms to now_ms at phase (the phase the space
 * was in meanwhile) into u; starts counting when u->since_ms is 0. Whole
 * seconds: the rest stays for the next count. */
void sk_usage_advance(sk_usage *u, sk_phase phase, int64_t now_ms);

/* ---- capacity: a provider's cap on running sandboxes (pure; plan_capacity.c) ---- */

typedef enum sk_capacity_verdict {
	SK_CAPACITY_START, /* a slot is free for it: start now */
	SK_CAPACITY_EVICT, /* evict one more awake space, then wait */
	SK_CAPACITY_WAIT, /* the evictions asked will free its slot: wait */
} sk_capacity_verdict;

typedef struct sk_capacity_state {
	int max_running; /* the cap (configured, or the provider's as learned); 0: none */
	int running; /* running at the provider, starts granted but not seen included */
	int evicting; /* evictions asked and not done yet */
	size_t position; /* the space's place in the provider's FIFO queue, 0: first */
} sk_capacity_state;

sk_capacity_verdict sk_capacity_decide(const sk_capacity_state *s);

/* The cap a provider's refusal of a start shows (learned: the one learned
 * so far, 0 none): what ran when it refused, the awake spaces seen now and
 * those seen stopping since the start was let through (an eviction's pause
 * that ended while the refused start was in flight ran then). A lower
 * figure replaces the one learned; nothing running keeps it. */
int sk_capacity_learn(int learned, int awake, int stopped);

/* An awake space at the provider, as the controller knows it. */
typedef struct sk_capacity_candidate {
	const char *name;
	const char *tenant; /* its quota tenant, NULL: none */
	int64_t activity_ms; /* the last connect or heartbeat (wall ms), 0: none */
	/* when it was seen running first (since its last stop): the last use
	 * of a space never used, or woken after its last activity */
	int64_t started_ms;
	bool busy; /* lifecycle.busy: processes run (the Busy condition True) */
	bool always_on; /* lifecycle.idleTimeout 0 */
	bool evicting; /* already asked to pause */
} sk_capacity_candidate;

/* The index of the space to evict at now_ms, -1 when none may be: the one
 * whose last use is oldest (ties: by name), skipping busy, always-on,
 * already evicting and just-connected (within recent_ms; a space started
 * after its last activity, woken for a connect, counts from its start)
 * ones; with tenant given, one of that tenant when there is one. */
int sk_capacity_pick_victim(const sk_capacity_candidate *c, size_t n, const char *tenant,
        int64_t now_ms, int64_t recent_ms);

/* In how many ms a start that found none of c[] evictable asks again: when
 * the first just-connected one may be, else recent_ms (the awake spaces
 * are busy, evicting, or starts granted and not seen yet, which are not
 * candidates); never 0: nothing else asks for it (no slot frees while
 * nothing is evicted), and a connect would wait out its timeout. */
int64_t sk_capacity_retry_ms(
        const sk_capacity_candidate *c, size_t n, int64_t now_ms, int64_t recent_ms);

/* ---- migration (migrate_plan.c; its plan: reconcile_int.h) ---- */

/* The provider entry the binding lives at: status.provider, else spec.provider. */
const char *sk_bound_provider(const sk_userspace *us);

/* ---- orphans (rule 8) ---- */

/* Whether a UserSpace exists for a user id. */
typedef bool (*sk_has_user_fn)(const char *user_id, void *arg);

typedef struct sk_orphan {
	char *sandbox_id;
	char *user_id;
	int64_t first_seen_ms;
	bool kill; /* delete_orphans and older than the grace */
} sk_orphan;

typedef struct sk_orphan_list {
	sk_orphan *items;
	size_t len;
} sk_orphan_list;
void sk_orphan_list_dispose(sk_orphan_list *l);

/* Pure. all: every sandbox the provider listed (only managed_by=spacekeeper
 * ones count). seen: caller-kept map sandbox id -> first-seen ms (decimal),
 * updated here (new orphans added, others dropped); NULL uses started_ms. */
int sk_plan_orphans(const sk_sandbox_list *all, sk_has_user_fn has_user, void *arg, sk_kvlist *seen,
        int64_t now_ms, const sk_plan_options *opts, sk_orphan_list *out);

/* ---- execute ---- */

typedef struct sk_reconcile_env {
	sk_store *store;
	sk_provider *provider;
	/* Optional: the provider for spec.provider (NULL result or fn: provider). */
	sk_provider *(*provider_for)(const char *name, void *arg);
	void *provider_arg;
	sk_plan_options opts;
	sk_log_fn log; /* optional */
	void *log_payload;
	/* Optional clock for tests (NULL: sk_now_ms). */
	int64_t (*now)(void);
	/* The controller's memory of the user, copied into the observation
	 * (sk_observed.activity_ms, wake, replace_now). */
	int64_t activity_ms;
	bool wake;
	bool replace_now;
	/* Optional: filled with what the run saw of the keeper (for the connect
	 * fast path) and the sandbox it replaced, if any. */
	struct sk_reconcile_report *report;
	/* Optional: told of each migration milestone ("started", "completed",
	 * "aborted", "bytes" with the bytes copied) and the target provider. */
	void (*migration_observer)(void *arg, const char *provider, const char *what, int64_t n);
	void *migration_arg;
	/* Copy bounds (0: the engine's defaults) and the least time between two
	 * progress writes of status.migration (0: 1s). */
	size_t copy_chunk_bytes;
	int copy_attempts;
	int64_t progress_every_ms;
	/* What the controller knows of the keeper (sk_observe_known). */
	sk_keeper_known known;
	/* Optional fencing: asked before every mutating provider call and store
	 * write; false stops the run with SK_EUNAVAILABLE (transient) before
	 * the call and without writing the failure (the caller lost the right
	 * to act on this user, e.g. its shard lease). NULL: always may act. */
	bool (*may_act)(void *arg, const char *user_id);
	void *may_act_arg;
	/* Optional capacity gate (providers[].capacity): asked when a round's
	 * plan starts a sandbox (a create, or the resume of a paused keeper),
	 * before anything runs; connect: the start is a waiting connect's
	 * (observed.wake), not the archive's or a create's; false (why in why):
	 * the start waits, the round is planned again with
	 * observed.capacity_wait. NULL: always. */
	bool (*may_start)(void *arg, const sk_userspace *us, bool connect, char *why, size_t len);
	void *may_start_arg;
	/* The controller asks this run to evict the running keeper (observed.evict),
	 * for the SpaceQuota evict_quota names (NULL: its provider's capacity). */
	bool evict;
	const char *evict_quota;
	/* The archive (opts.archive): the S3 client's settings, keys included
	 * (secrets, borrowed), and the key prefix (PREFIX of PREFIX/USERID/
	 * GENERATION). A client is made per ARCHIVE or RESTORE action. */
	const sk_s3_config *archive_s3;
	const char *archive_prefix;
	int archive_keep; /* archive.keepGenerations: kept when pruning after a restore */
	/* Optional (needs report): the keeper this run started (a create, or
	 * the resume of the bound keeper) answered its probe healthy and every
	 * provider call of the run is done; the status write and the run's
	 * events follow, written the same whatever the callee does. next: the
	 * object as it is about to be written (its resourceVersion the one the
	 * write compares against), report: what the run saw of the keeper, as
	 * after the write; both borrowed for the call. A connect waiting for the
	 * start may be answered from them (answer first). Not told
	 * from a migration's steps, a replacement, a restore, or a run that
	 * failed or lost its fence (may_act is asked first). */
	void (*started)(
	        void *arg, const sk_userspace *next, const struct sk_reconcile_report *report);
	void *started_arg;
} sk_reconcile_env;

typedef struct sk_reconcile_report {
	char *keeper_id; /* the bound keeper after the run, NULL none */
	bool running;
	bool healthy;
	int64_t end_ms;
	int64_t seen_ms;
	char *replaced_id; /* a sandbox this run replaced (Replace remediation), NULL none */
	int64_t replaced_ms;
	/* The keeper's envd details as known after the run (a create, connect or
	 * get answer, else env->known) and the deadline spacekeeper set on it
	 * (0: none known, or it sleeps). The token is a secret. */
	char *envd_access_token;
	char *envd_version;
	bool detail_seen;
	int64_t deadline_ms;
	int64_t deadline_set_ms;
	/* Internal: what this run's create/connect/set_timeout set (id, answer). */
	char *set_id;
	int64_t set_deadline_ms;
	int64_t set_at_ms;
	char *set_token;
	char *set_version;
	bool set_seen; /* set_token/set_version are from that answer */
	/* A start of this run (create or resume) was refused by the provider
	 * with 429 and no Retry-After (its concurrency limit), or waited at the
	 * gate. */
	bool start_refused;
	bool start_waited;
	/* The run's look at the keeper (sk_keeper_known.look_ms): 0 when the
	 * run failed or saw nothing new; its deadline then. */
	int64_t look_ms;
	sk_sandbox_state look_state;
	int64_t look_end_ms;
	/* Internal: this run paused paused_id at paused_at_ms. */
	char *paused_id;
	int64_t paused_at_ms;
	/* How the run's first round learnt the bound keeper's state. */
	sk_look look;
} sk_reconcile_report;
void sk_reconcile_report_dispose(sk_reconcile_report *r);

/* get -> observe -> plan -> execute. A missing object is success (nothing to
 * do). *requeue_after_ms (may be NULL) gets the plan's delay (0 when none). */
int sk_reconcile(const sk_reconcile_env *env, const char *name, const sk_list_view *list,
        int64_t *requeue_after_ms, sk_error *err);
/* observe -> plan -> execute of a given copy (e.g. the informer's cache):
 * every status write is compare-and-swap on us's resourceVersion, so a stale
 * copy ends in SK_ECONFLICT, never in an overwrite. *updated (may be NULL)
 * gets the object after the run's writes, NULL when it was removed. In
 * order (execute.c): an active migration's steps, the round, its follow-up. */
int sk_reconcile_object(const sk_reconcile_env *env, const sk_userspace *us,
        const sk_list_view *list, int64_t *requeue_after_ms, sk_userspace **updated, sk_error *err);

#endif
