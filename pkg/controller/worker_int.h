/*
 * worker_int: the worker threads (worker.c), private to pkg/controller: a
 * key -> its object -> fencing -> sk_reconcile_object, and what a result
 * does. Included by controller.c (start, free) and connect.c (the plan
 * options and envd URL a connect answer is made with).
 */
#ifndef SK_CONTROLLER_WORKER_INT_H
#define SK_CONTROLLER_WORKER_INT_H

#include <pthread.h>

#include "../reconcile/reconcile.h"
#include "../sandbox/sandbox.h"
#include "ground_int.h"

/* One worker thread and its provider clients (its own). */
struct sk_worker {
	sk_controller *c;
	int index;
	pthread_t thread;
	sk_provider **clients; /* one per provider, in config order */
};

/* The plan options for a space's provider. */
void sk_ctl_plan_options(sk_controller *c, const sk_userspace *us, sk_plan_options *out);
/* The envd URL a connect answer names (caller frees). */
char *sk_ctl_envd_url(sk_controller *c, const sk_userspace *us);
/* The worker threads (one provider client per provider each). */
int sk_ctl_workers_start(sk_controller *c, sk_error *err);
/* After the threads were joined. */
void sk_ctl_workers_free(sk_controller *c);

#endif
