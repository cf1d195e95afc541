/*
 * controller_int: the orchestrator's header, private to pkg/controller and
 * included by controller.c alone (make verify-deps checks it): controller.c
 * makes, starts, stops and frees every part, so it reaches them all.
 * Every other file includes ground_int.h (struct sk_controller and what
 * every part uses) and the headers of the parts it calls, nothing more;
 * no part calls controller.c.
 *
 * The floors, bottom up:
 *   ground_int.h  ground.c: struct sk_controller, logging, a provider's
 *                 index, the stop flag and abort hooks, store errors.
 *   the parts, each with its own header and its own lock for what changes
 *   after start:
 *   spaces_int.h  spaces and activity: one record per space (keeper,
 *                 activity, requests, drift, our last write; lock
 *                 spaces->mu) and each space's last reconcile, which
 *                 connects wait on (lock spaces->done_mu); spaces.c.
 *   views_int.h   views of the provider: each provider's last list grouped
 *                 by user (own or shared between replicas), the observer
 *                 thread; observe.c, share.c; lock views->mu.
 *   quota_int.h   the SpaceQuotas: status.used, metrics, the set the
 *                 capacity gate holds spec.hard.running with; quota.c.
 *   shards_int.h  shards and forwarding: shard leases, fencing, the holder
 *                 of a user's shard; shards.c, forward.c; lock shards->mu.
 *   http_int.h    HTTP and guard: the two listeners, the store probe, the
 *                 connect API, the status page; http.c, guard.c, tokens.c,
 *                 connect.c, page.c (lock http->render_mu for scrapes; the
 *                 guard's own mu).
 *   capacity_int.h  each provider's capacity and the SpaceQuotas'
 *                 spec.hard.running at its gate: capacity.c,
 *                 capacity_quota.c (the decision itself is the planner's
 *                 pure sk_capacity_gate); lock capacity->mu.
 *   metrics_int.h what /metrics exports; metrics.c.
 *   worker_int.h  the worker threads: a key -> its object -> fencing ->
 *                 sk_reconcile_object, and what a result does; worker.c.
 *   controller_int.h  this header: controller.c, the lifecycle (new, free,
 *                 start with its start-up thread, stop, --once).
 *
 * Locks: every lock is a leaf (nothing else is locked while it is held),
 * except http->render_mu, held over a whole scrape (it takes spaces->mu, the
 * informer's and the metrics' locks inside).
 */
#ifndef SK_CONTROLLER_INT_H
#define SK_CONTROLLER_INT_H

#include "capacity_int.h"
#include "ground_int.h"
#include "http_int.h"
#include "metrics_int.h"
#include "quota_int.h"
#include "shards_int.h"
#include "spaces_int.h"
#include "views_int.h"
#include "worker_int.h"

/* MongoDB connections of the controller when the URI does not say (maxPoolSize). */
#define SK_CONTROLLER_STORE_POOL 4
/* Start-up: the first list of UserSpaces must read something new every
 * SYNC_MS; a database that is not there yet is retried every RETRY_MIN_MS,
 * doubling up to RETRY_MAX_MS. */
#define SK_CONTROLLER_SYNC_MS 30000
#define SK_CONTROLLER_RETRY_MIN_MS 1000
#define SK_CONTROLLER_RETRY_MAX_MS 30000

#endif
