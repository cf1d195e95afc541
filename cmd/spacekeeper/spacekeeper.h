/* spacekeeper: declarations shared by the daemon's main.c and log.c. */
#ifndef SK_SPACEKEEPER_H
#define SK_SPACEKEEPER_H

#include "util/util.h"

typedef struct sk_log_config {
	sk_log_level level;
	bool json;
} sk_log_config;

int sk_log_level_parse(const char *s, sk_log_level *out);
/* An sk_log_fn; payload is an sk_log_config. */
void sk_daemon_log(sk_log_level level, const char *msg, const char *kv, void *payload);

#endif
