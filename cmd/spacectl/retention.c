/*
 * spacectl: the retention warning of get: a space asleep near
 * its provider's pausedRetention with no archive configured (the provider
 * will delete the sandbox and the user's files) gets a "Warning:" line on
 * stderr, as kubectl prints an API server's warnings; the table or document
 * on stdout is unchanged. The ControllerConfig it reads is get's --config,
 * else the context's controllerConfig, read quietly (get works without it);
 * neither changes which database get reads.
 */
#include <stdio.h>

#include "reconcile/retention.h"
#include "spacectl.h"

int
sk_cli_retention_config(const char *path, sk_controller_config **out)
{
	sk_errlist errs = { 0 };
	sk_buf msg = SK_BUF_INIT(0);
	sk_config_context ctx;
	json_t *keep = NULL;
	sk_error err;
	int rc = SK_EXIT_OK;

	*out = NULL;
	sk_error_clear(&err);
	if (path == NULL && sk_cli_current_context(&ctx, &keep) == SK_EXIT_OK &&
	        ctx.controller_config != NULL)
		sk_config_load(ctx.controller_config, out, &errs, &err); /* quiet: a hint only */
	else if (path != NULL && sk_config_load(path, out, &errs, &err) != SK_OK) {
		sk_errlist_format(&errs, &msg);
		sk_cli_errorf("%s", err.message);
		if (msg.len)
			fprintf(stderr, "%s", msg.data);
		rc = SK_EXIT_FAIL;
	}
	json_decref(keep);
	sk_buf_dispose(&msg);
	sk_errlist_dispose(&errs);
	return rc;
}

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
