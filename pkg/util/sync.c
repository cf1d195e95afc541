/*
 * util/sync: timed waits on the monotonic clock. A condition variable made
 * by sk_cond_init_monotonic times its waits with CLOCK_MONOTONIC, so a step
 * of the wall clock (NTP, an operator) neither cuts a wait short nor
 * stretches it; every pthread_cond_timedwait in pkg/ goes through here.
 * sk_sleep_ms sleeps on the same clock.
 */
#include <errno.h>
#include <time.h>

#include "util.h"

void
sk_cond_init_monotonic(pthread_cond_t *cond)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(cond, &ca);
	pthread_condattr_destroy(&ca);
}

bool
sk_cond_wait_ms(pthread_cond_t *cond, pthread_mutex_t *mu, int64_t wait_ms)
{
	struct timespec ts;

	if (wait_ms < 0)
		wait_ms = 0;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += (time_t)(wait_ms / 1000);
	ts.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return pthread_cond_timedwait(cond, mu, &ts) == 0;
}

void
sk_sleep_ms(int64_t ms)
{
	struct timespec ts;

	if (ms <= 0)
		return;
	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
}
