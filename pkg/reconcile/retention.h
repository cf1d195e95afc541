/*
 * reconcile/retention: a sleep near the provider's pausedRetention when no
 * archive is configured (retention.c, pure).
 */
#ifndef SK_RECONCILE_RETENTION_H
#define SK_RECONCILE_RETENTION_H

#include "../api/config.h"
#include "../api/userspace.h"
#include "../util/util.h"

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

#endif
