/*
 * controller/ground: what every part of the controller uses (ground_int.h):
 * logging, a provider's index, the provider clients' abort hooks, the
 * store errors' count and the readiness the lifecycle's flags give. Calls into no part.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ground_int.h"

bool
sk_ctl_log_enabled(const sk_controller *c, sk_log_level lvl)
{
	return c->opts.log != NULL && lvl >= c->opts.log_level;
}

void
sk_ctl_log(sk_controller *c, sk_log_level lvl, const char *msg, const char *fmt, ...)
{
	char kv[2048];
	va_list ap;

	if (!sk_ctl_log_enabled(c, lvl))
		return; /* before formatting: a debug line at info costs a compare */
	va_start(ap, fmt);
	vsnprintf(kv, sizeof(kv), fmt, ap);
	va_end(ap);
	c->opts.log(lvl, msg, kv, c->opts.log_payload);
}

bool
sk_ctl_abort_now(void *controller)
{
	return sk_ctl_stopping(controller);
}

bool
sk_ctl_abort_after_grace(void *controller)
{
	sk_controller *c = controller;

	return sk_ctl_stopping(c) && sk_monotonic_ms() >= atomic_load(&c->stop_deadline_ms);
}

int
sk_ctl_provider_index(sk_controller *c, const char *name)
{
	for (size_t i = 0; i < c->n_prov; i++)
		if (name && strcmp(c->cfg->providers[i].name, name) == 0)
			return (int)i;
	return -1;
}

void
sk_ctl_store_error(sk_controller *c, const char *op)
{
	char l[64];

	snprintf(l, sizeof(l), "op=\"%s\"", op);
	sk_metrics_add(c->metrics, SK_CTL_METRIC_STORE_ERRORS, l, 1);
}

bool
sk_controller_ready(sk_controller *c)
{
	return sk_informer_has_synced(c->inf) && atomic_load(&c->started);
}
