/*
 * ratelimit: a token bucket (qps, burst) combined with an in-flight cap.
 * The workqueue uses the bucket for its global rate-limited adds; the
 * controller uses one limiter per provider around reconciles that call it.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "util.h"

struct sk_limiter {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	double qps;
	double burst;
	double tokens;
	int64_t last_ms;
	int max_in_flight;
	int in_flight;
	sk_clock_fn clock;
	void *clock_payload;
};

static int64_t
limiter_now(const sk_limiter *l)
{
	return l->clock ? l->clock(l->clock_payload) : sk_monotonic_ms();
}

sk_limiter *
sk_limiter_new(const sk_limiter_options *opts)
{
	sk_limiter_options def = SK_LIMITER_OPTIONS_INIT;
	sk_limiter *l = sk_calloc(1, sizeof(*l));

	if (!opts)
		opts = &def;
	pthread_mutex_init(&l->mu, NULL);
	sk_cond_init_monotonic(&l->cond);
	l->qps = opts->qps;
	l->burst = opts->burst < 1 ? 1 : opts->burst;
	l->tokens = l->burst;
	l->max_in_flight = opts->max_in_flight;
	l->clock = opts->clock;
	l->clock_payload = opts->clock_payload;
	l->last_ms = limiter_now(l);
	return l;
}

void
sk_limiter_free(sk_limiter *l)
{
	if (!l)
		return;
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->cond);
	free(l);
}

/* Adds the tokens earned since the last call. Called with the lock held. */
static void
limiter_refill(sk_limiter *l)
{
	int64_t now = limiter_now(l);

	if (now > l->last_ms) {
		l->tokens += (double)(now - l->last_ms) * l->qps / 1000.0;
		if (l->tokens > l->burst)
			l->tokens = l->burst;
		l->last_ms = now;
	}
}

int64_t
sk_limiter_reserve(sk_limiter *l)
{
	int64_t wait = 0;

	if (l->qps <= 0)
		return 0;
	pthread_mutex_lock(&l->mu);
	limiter_refill(l);
	l->tokens -= 1.0;
	if (l->tokens < 0)
		wait = (int64_t)ceil(-l->tokens * 1000.0 / l->qps);
	pthread_mutex_unlock(&l->mu);
	return wait;
}

bool
sk_limiter_try_take(sk_limiter *l)
{
	bool ok = true;

	if (l->qps <= 0)
		return true;
	pthread_mutex_lock(&l->mu);
	limiter_refill(l);
	if (l->tokens >= 1.0)
		l->tokens -= 1.0;
	else
		ok = false;
	pthread_mutex_unlock(&l->mu);
	return ok;
}

static bool
cancelled(const atomic_bool *cancel)
{
	return cancel != NULL && atomic_load(cancel);
}

/* Waits for a free in-flight slot, in 50 ms slices so cancel is noticed. */
static int
limiter_take_slot(sk_limiter *l, int64_t deadline, const atomic_bool *cancel)
{
	int rc = 0;

	pthread_mutex_lock(&l->mu);
	while (l->max_in_flight > 0 && l->in_flight >= l->max_in_flight) {
		if (cancelled(cancel)) {
			rc = SK_ERROR;
			break;
		}
		if (deadline >= 0 && sk_monotonic_ms() >= deadline) {
			rc = SK_ETIMEOUT;
			break;
		}
		sk_cond_wait_ms(&l->cond, &l->mu, 50);
	}
	if (rc == 0)
		l->in_flight++;
	pthread_mutex_unlock(&l->mu);
	return rc;
}

int
sk_limiter_acquire(sk_limiter *l, int64_t timeout_ms, const atomic_bool *cancel_flag)
{
	int64_t deadline = timeout_ms < 0 ? -1 : sk_monotonic_ms() + timeout_ms;
	int64_t wait;
	int rc = limiter_take_slot(l, deadline, cancel_flag);

	if (rc != 0)
		return rc;
	wait = sk_limiter_reserve(l);
	while (wait > 0) {
		int64_t slice = wait < 50 ? wait : 50;
		if (cancelled(cancel_flag)) {
			sk_limiter_release(l);
			return SK_ERROR;
		}
		sk_sleep_ms(slice);
		wait -= slice;
	}
	return 0;
}

void
sk_limiter_release(sk_limiter *l)
{
	pthread_mutex_lock(&l->mu);
	if (l->in_flight > 0)
		l->in_flight--;
	pthread_cond_signal(&l->cond);
	pthread_mutex_unlock(&l->mu);
}

int
sk_limiter_in_flight(sk_limiter *l)
{
	int n;

	pthread_mutex_lock(&l->mu);
	n = l->in_flight;
	pthread_mutex_unlock(&l->mu);
	return n;
}
