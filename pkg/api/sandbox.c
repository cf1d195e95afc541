/*
 * api/sandbox: the sandbox value types a provider reports (pkg/sandbox fills
 * them): state names, copy and dispose. Pure: the planner links this without
 * the provider clients.
 */
#include <stdlib.h>
#include <string.h>

#include "kvlist.h"
#include "network.h"
#include "sandbox_values.h"

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
	free(sb->envd_version);
	sk_network_dispose(&sb->network);
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
	dst->envd_version = sk_strdup(src->envd_version);
	memset(&dst->network, 0, sizeof(dst->network));
	sk_network_copy(&dst->network, &src->network);
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

/* ---- JSON: the form a shared provider list is stored in ---- */

static sk_sandbox_state
state_of_name(const char *name)
{
	static const sk_sandbox_state all[] = { SK_SANDBOX_RUNNING, SK_SANDBOX_PAUSED,
		SK_SANDBOX_TRANSITIONAL, SK_SANDBOX_GONE };

	for (size_t i = 0; name && i < sizeof(all) / sizeof(all[0]); i++)
		if (strcmp(name, sk_sandbox_state_name(all[i])) == 0)
			return all[i];
	return SK_SANDBOX_UNKNOWN;
}

static void
set_text(json_t *o, const char *key, const char *v)
{
	if (v != NULL)
		json_object_set_new(o, key, json_string(v));
}

json_t *
sk_sandbox_to_json(const sk_sandbox *sb)
{
	json_t *o = json_object(), *md = json_object();

	set_text(o, "id", sb->id);
	set_text(o, "templateID", sb->template_id);
	set_text(o, "alias", sb->alias);
	set_text(o, "state", sk_sandbox_state_name(sb->state));
	json_object_set_new(o, "startedMs", json_integer(sb->started_ms));
	json_object_set_new(o, "endMs", json_integer(sb->end_ms));
	json_object_set_new(o, "cpuCount", json_integer(sb->cpu_count));
	json_object_set_new(o, "memoryMB", json_integer(sb->memory_mb));
	for (size_t i = 0; i < sb->metadata.len; i++)
		json_object_set_new(
		        md, sb->metadata.items[i].key, json_string(sb->metadata.items[i].value));
	json_object_set_new(o, "metadata", md);
	set_text(o, "domain", sb->domain);
	set_text(o, "envdVersion", sb->envd_version);
	return o;
}

static char *
get_text(const json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));

	return v ? sk_strdup(v) : NULL;
}

int
sk_sandbox_from_json(const json_t *j, sk_sandbox *out, sk_error *err)
{
	const json_t *md = json_object_get(j, "metadata");
	const char *key;
	json_t *v;

	memset(out, 0, sizeof(*out));
	if (!json_is_object(j) || !json_is_string(json_object_get(j, "id")))
		return sk_error_set(err, SK_EINVALID, "sandbox: want an object with an id");
	out->id = get_text(j, "id");
	out->template_id = get_text(j, "templateID");
	out->alias = get_text(j, "alias");
	out->state = state_of_name(json_string_value(json_object_get(j, "state")));
	out->started_ms = json_integer_value(json_object_get(j, "startedMs"));
	out->end_ms = json_integer_value(json_object_get(j, "endMs"));
	out->cpu_count = (int)json_integer_value(json_object_get(j, "cpuCount"));
	out->memory_mb = (int)json_integer_value(json_object_get(j, "memoryMB"));
	json_object_foreach((json_t *)md, key, v) if (json_is_string(v))
	        sk_kvlist_set(&out->metadata, key, json_string_value(v));
	out->domain = get_text(j, "domain");
	out->envd_version = get_text(j, "envdVersion");
	return 0;
}
