/*
 * timeline: observations counted and summed per wall-clock minute in a ring
 * of SK_TIMELINE_MINUTES slots; a slot is reused (cleared) when its minute
 * comes round again, so reading needs no timer.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

typedef struct tl_slot {
	int64_t minute; /* ms / 60000 of the slot's minute; -1 never used */
	uint64_t count;
	double sum, max;
} tl_slot;

struct sk_timeline {
	pthread_mutex_t mu;
	tl_slot slot[SK_TIMELINE_MINUTES];
};

sk_timeline *
sk_timeline_new(void)
{
	sk_timeline *t = sk_calloc(1, sizeof(*t));

	pthread_mutex_init(&t->mu, NULL);
	for (size_t i = 0; i < SK_TIMELINE_MINUTES; i++)
		t->slot[i].minute = -1;
	return t;
}

void
sk_timeline_free(sk_timeline *t)
{
	if (!t)
		return;
	pthread_mutex_destroy(&t->mu);
	free(t);
}

void
sk_timeline_observe(sk_timeline *t, int64_t now_ms, double value)
{
	int64_t minute = now_ms / 60000;
	tl_slot *s;

	if (minute < 0)
		return;
	pthread_mutex_lock(&t->mu);
	s = &t->slot[minute % SK_TIMELINE_MINUTES];
	if (s->minute != minute)
		*s = (tl_slot){ minute, 0, 0, 0 };
	s->count++;
	s->sum += value;
	if (value > s->max)
		s->max = value;
	pthread_mutex_unlock(&t->mu);
}

void
sk_timeline_read(sk_timeline *t, int64_t now_ms, sk_timeline_point out[SK_TIMELINE_MINUTES])
{
	int64_t last = now_ms / 60000;

	pthread_mutex_lock(&t->mu);
	for (size_t i = 0; i < SK_TIMELINE_MINUTES; i++) {
		int64_t minute = last - (int64_t)(SK_TIMELINE_MINUTES - 1 - i);
		const tl_slot *s = &t->slot[((minute % SK_TIMELINE_MINUTES) + SK_TIMELINE_MINUTES) %
		        SK_TIMELINE_MINUTES];
		bool live = minute >= 0 && s->minute == minute;
		out[i].minute_ms = minute * 60000;
		out[i].count = live ? s->count : 0;
		out[i].mean = live && s->count ? s->sum / (double)s->count : 0;
		out[i].max = live ? s->max : 0;
	}
	pthread_mutex_unlock(&t->mu);
}
