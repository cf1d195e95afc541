/*
 * api/sandbox: the sandbox value types a provider reports (pkg/sandbox fills
 * them): state names, copy and dispose. Pure: the planner links this without
 * the provider clients.
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"

const char *
sk_sandbox_state_name(sk_sandbox_state s)
{
	switch (s) {
	case SK_SANDBOX_RUNNING: return "running";
	case SK_SANDBOX_PAUSED: return "paused";
	case SK_SANDBOX_TRANSITIONAL: return "transitional";
	case SK_SANDBOX_GONE: return "gone";
	case SK_SANDBOX_UNKNOWN: break;
	}
	return "unknown";
}

void
sk_sandbox_dispose(sk_sandbox *sb)
{
	if (sb == NULL)
		return;
	free(sb->id);
	free(sb->template_id);
	free(sb->alias);
	sk_kvlist_dispose(&sb->metadata);
	free(sb->domain);
	free(sb->envd_access_token);
	memset(sb, 0, sizeof(*sb));
}

void
sk_sandbox_free(sk_sandbox *sb)
{
	if (sb == NULL)
		return;
	sk_sandbox_dispose(sb);
	free(sb);
}

void
sk_sandbox_copy(sk_sandbox *dst, const sk_sandbox *src)
{
	*dst = *src;
	dst->id = sk_strdup(src->id);
	dst->template_id = sk_strdup(src->template_id);
	dst->alias = sk_strdup(src->alias);
	dst->domain = sk_strdup(src->domain);
	dst->envd_access_token = sk_strdup(src->envd_access_token);
	memset(&dst->metadata, 0, sizeof(dst->metadata));
	for (size_t i = 0; i < src->metadata.len; i++)
		sk_kvlist_set(
		        &dst->metadata, src->metadata.items[i].key, src->metadata.items[i].value);
}

void
sk_sandbox_list_dispose(sk_sandbox_list *l)
{
	if (l == NULL)
		return;
	for (size_t i = 0; i < l->len; i++)
		sk_sandbox_dispose(&l->items[i]);
	free(l->items);
	l->items = NULL;
	l->len = 0;
}
