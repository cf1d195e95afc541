/*
 * spacectl: the retention warning of get (issue 24): a space asleep near
 * its provider's pausedRetention with no archive configured (the provider
 * will delete the sandbox and the user's files) gets a "Warning:" line on
 * stderr, as kubectl prints an API server's warnings; the table or document
 * on stdout is unchanged.
 */
#include <stdio.h>

#include "reconcile/reconcile.h"
#include "spacectl.h"

size_t
sk_cli_retention_warn(const sk_controller_config *cfg, sk_userspace *const *items, size_t n)
{
	int64_t now = sk_now_ms();
	size_t warned = 0;
	char text[512];

	for (size_t i = 0; cfg != NULL && i < n; i++) {
		sk_retention r;
		if (!sk_retention_check(cfg, items[i], now, &r))
			continue;
		sk_retention_format(&r, items[i]->meta.name, now, text, sizeof(text));
		if (warned++ == 0)
			fflush(stdout);
		fprintf(stderr, "Warning: %s\n", text);
	}
	return warned;
}
