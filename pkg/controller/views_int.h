/*
 * views_int: views of the provider, private to pkg/controller. Each
 * provider's last list of managed sandboxes, grouped by user_id for the
 * workers (observe.c), made by this replica's own list or read from the
 * list another replica shared (share.c). Lock views.mu guards what the
 * workers read (by_user, valid, listed_ms, n_sandboxes); the rest is the
 * observer thread's alone (and the start-up's, before it runs). The
 * observer sleeps on the lifecycle's wake (controller_int.h).
 */
#ifndef SK_CONTROLLER_VIEWS_INT_H
#define SK_CONTROLLER_VIEWS_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "../api/kvlist.h"
#include "../api/sandbox_values.h"
#include "../api/schema.h"
#include "../reconcile/reconcile.h"
#include "../sandbox/sandbox.h"
#include "../util/util.h"
#include "controller.h"

/* The last list of one provider. */
typedef struct sk_prov_view {
	/* Under views.mu. */
	sk_strmap *by_user; /* user_id -> sk_sandbox_list* */
	bool valid; /* the last list succeeded */
	int64_t listed_ms; /* wall clock when that list started */
	size_t n_sandboxes;
	/* The observer's alone. */
	int64_t looked_mono; /* monotonic ms of this replica's last own list (0: none) */
	sk_kvlist orphan_seen; /* sandbox id -> first-seen ms (sk_plan_orphans) */
} sk_prov_view;

typedef struct sk_ctl_views {
	pthread_mutex_t mu; /* guards the shared fields of prov[] (above) */
	sk_prov_view *prov; /* per provider, in config order */
	sk_provider **clients; /* the observer's provider clients */
	atomic_bool asked; /* a pass at once (shards gained); set under the lifecycle mu */
	pthread_t thread;
	bool running;
} sk_ctl_views;

/* observe.c */
void sk_ctl_views_init(sk_controller *c);
void sk_ctl_views_dispose(sk_controller *c);
/* One look at every provider (our own list when due or forced, else the
 * shared one when newer: see share.c); when a view was renewed, every key
 * of the held shards is enqueued. Returns how long to wait for the next. */
int64_t sk_ctl_observe_all(sk_controller *c, bool force);
int sk_ctl_observer_start(sk_controller *c, sk_error *err);
void sk_ctl_observer_stop(sk_controller *c);
/* Fills view with a copy of the user's listed sandboxes (caller disposes list). */
void sk_ctl_list_view(
        sk_controller *c, int prov, const char *user_id, sk_sandbox_list *list, sk_list_view *view);
/* Asks the observer thread for a pass now. */
void sk_ctl_observe_soon(sk_controller *c);
/* user_id -> that user's sandboxes (sk_sandbox_list*, GONE left out),
 * moved out of all. */
sk_strmap *sk_ctl_group_by_user(sk_sandbox_list *all);

/* share.c: one provider list for every replica (see share.c). */
typedef struct sk_ctl_shared_list {
	int64_t listed_ms; /* when the shared list started */
	size_t total; /* sandboxes it saw, every shard */
	sk_sandbox_list sandboxes; /* those of the shards this replica holds */
} sk_ctl_shared_list;
void sk_ctl_share_declare(sk_controller *c);
/* This replica lists the providers itself: it holds every shard or shard 0. */
bool sk_ctl_share_lists_self(sk_controller *c);
/* ... and stores its lists for the others: shard 0, not every shard. */
bool sk_ctl_share_publishes(sk_controller *c);
void sk_ctl_share_publish(
        sk_controller *c, int prov, const sk_sandbox_list *all, int64_t listed_ms);
/* 1: out holds the shared list of the held shards (newer than have_ms, or
 * any when force); 0: none newer; -1: none fresh, or it could not be read
 * (the caller lists for itself). */
int sk_ctl_share_read(
        sk_controller *c, int prov, int64_t have_ms, bool force, sk_ctl_shared_list *out);

#endif
