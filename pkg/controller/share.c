/*
 * share: one provider list for every replica (issue 11). The holder of
 * shard 0 lists each provider (observe.c) and, while other replicas hold
 * shards, stores what it saw as shared lists: one part per shard of users
 * ("PROVIDER:shard-NN": that shard's sandboxes), then the pass
 * ("PROVIDER:pass": shards, sandboxes, how long the list took). The other
 * replicas read the parts of the shards they hold instead of listing the
 * provider. A part is written under the same fence as every other act
 * (shard 0 held and renewed within the renew deadline), and the store keeps
 * only the newest, so a holder that wakes from a stop cannot put an old
 * list back. When no pass is fresh (younger than two resync periods plus
 * the time its list took: the holder died and its lease has not expired,
 * or it cannot write), a replica lists for itself, as one replica does.
 */
#include <stdlib.h>
#include <string.h>

#include "controller_int.h"

#define PASS_PART "pass"
#define SHARE_METRIC "spacekeeper_shared_list_total"

static void
part_id(const char *prov, int shard, char *buf, size_t len)
{
	if (shard < 0)
		snprintf(buf, len, "%s:" PASS_PART, prov);
	else
		snprintf(buf, len, "%s:shard-%02d", prov, shard);
}

static void
count(sk_controller *c, const char *prov, const char *op, const char *result)
{
	char l[200];

	snprintf(l, sizeof(l), "provider=\"%s\",op=\"%s\",result=\"%s\"", prov, op, result);
	sk_metrics_add(c->metrics, SHARE_METRIC, l, 1);
}

void
sk_ctl_share_declare(sk_controller *c)
{
	sk_metrics_declare(c->metrics, SHARE_METRIC, SK_METRIC_COUNTER,
	        "Shared provider lists by provider, op (publish: the holder of shard 0 "
	        "stored its list; read: another replica read it) and result (none: no fresh "
	        "list was shared, the replica listed for itself; fenced: shard 0 was lost "
	        "while publishing)");
}

bool
sk_ctl_share_publishes(sk_controller *c)
{
	return !sk_ctl_shards_own_all(c) && sk_ctl_shard_valid(c, 0);
}

bool
sk_ctl_share_lists_self(sk_controller *c)
{
	return sk_ctl_shards_own_all(c) || sk_ctl_shard_valid(c, 0);
}

/* ---- publish ---- */

/* The sandboxes of each shard as JSON arrays (GONE and untagged left out:
 * the workers never see them either). */
static json_t **
arrays_by_shard(const sk_sandbox_list *all, int n)
{
	json_t **parts = sk_calloc((size_t)n, sizeof(*parts));

	for (int s = 0; s < n; s++)
		parts[s] = json_array();
	for (size_t i = 0; i < all->len; i++) {
		const sk_sandbox *sb = &all->items[i];
		const char *uid = sk_kvlist_get(&sb->metadata, SK_META_USER_ID);
		if (uid == NULL || sb->state == SK_SANDBOX_GONE)
			continue;
		json_array_append_new(parts[sk_ctl_shard_of(uid, n)], sk_sandbox_to_json(sb));
	}
	return parts;
}

/* Writes one part; false when the fence stops it or the store fails. */
static bool
put_part(sk_controller *c, const char *prov, int shard, json_t *body, int64_t listed_ms,
        size_t *bytes)
{
	sk_error err = { 0 };
	char id[160];
	int rc;

	if (!sk_ctl_shard_valid(c, 0)) {
		count(c, prov, "publish", "fenced");
		return false;
	}
	part_id(prov, shard, id, sizeof(id));
	*bytes += json_dumpb(body, NULL, 0, JSON_COMPACT);
	rc = sk_store_observation_put(c->store, id, listed_ms, c->identity, body, &err);
	if (rc == SK_ECONFLICT) /* a newer list is there: ours is not wanted */
		return false;
	if (rc != 0) {
		sk_ctl_store_error(c, "share");
		sk_ctl_log(c, SK_LOG_WARN, "shared list not written",
		        "provider=%s part=%s error=\"%s\"", prov, id, err.message);
		count(c, prov, "publish", "error");
		return false;
	}
	return true;
}

void
sk_ctl_share_publish(
        sk_controller *c, int prov, const sk_sandbox_list *all, int64_t listed_ms, int64_t took_ms)
{
	const char *name = c->cfg->providers[prov].name;
	int n = c->cfg->shards;
	json_t **parts = arrays_by_shard(all, n);
	int64_t t0 = sk_monotonic_ms();
	size_t bytes = 0;
	json_t *pass;
	bool ok = true;

	for (int s = 0; s < n; s++) {
		json_t *body = json_pack("{s:o}", "sandboxes", parts[s]);
		ok = ok && put_part(c, name, s, body, listed_ms, &bytes);
		json_decref(body);
	}
	free(parts);
	if (!ok)
		return;
	pass = json_pack("{s:i,s:I,s:I}", "shards", n, "sandboxes", (json_int_t)all->len,
	        "durationMs", (json_int_t)took_ms);
	if (put_part(c, name, -1, pass, listed_ms, &bytes)) {
		count(c, name, "publish", "success");
		sk_ctl_log(c, SK_LOG_DEBUG, "shared list published",
		        "provider=%s sandboxes=%zu parts=%d bytes=%zu took_ms=%lld", name, all->len,
		        n + 1, bytes, (long long)(sk_monotonic_ms() - t0));
	}
	json_decref(pass);
}

/* ---- read ---- */

/* The pass is fresh and was made for our shard count. */
static bool
fresh_pass(sk_controller *c, const sk_observation *pass, int64_t now)
{
	int64_t took = json_integer_value(json_object_get(pass->body, "durationMs"));
	int shards = (int)json_integer_value(json_object_get(pass->body, "shards"));
	int64_t period = c->cfg->resync_ms > 0 ? c->cfg->resync_ms : 30000;

	return shards == c->cfg->shards && pass->listed_ms >= now - 2 * period - took;
}

/* Appends the sandboxes of one part to out; false when the part is bad. */
static bool
decode_part(const sk_observation *part, sk_sandbox_list *out)
{
	json_t *arr = json_object_get(part->body, "sandboxes");
	size_t i;
	json_t *v;

	if (!json_is_array(arr))
		return false;
	out->items =
	        sk_realloc(out->items, (out->len + json_array_size(arr) + 1) * sizeof(*out->items));
	json_array_foreach(arr, i, v)
	{
		sk_error err = { 0 };
		if (sk_sandbox_from_json(v, &out->items[out->len], &err) != 0)
			return false;
		out->len++;
	}
	return true;
}

/* The parts of the held shards, all from the pass's list or a newer one. */
static int
read_parts(sk_controller *c, const char *prov, int64_t pass_ms, sk_sandbox_list *out, sk_error *err)
{
	int *held = sk_calloc((size_t)c->cfg->shards + 1, sizeof(*held));
	size_t n = sk_ctl_shards_held_list(c, held);
	char **ids = sk_calloc(n + 1, sizeof(*ids));
	sk_observation_list parts = { 0 };
	int rc;

	for (size_t i = 0; i < n; i++) {
		ids[i] = sk_calloc(1, 160);
		part_id(prov, held[i], ids[i], 160);
	}
	rc = sk_store_observation_get(c->store, (const char *const *)ids, n, &parts, err);
	if (rc == 0 && parts.len != n)
		rc = sk_error_set(err, SK_ENOTFOUND, "%zu of %zu parts missing", n - parts.len, n);
	for (size_t i = 0; rc == 0 && i < parts.len; i++)
		if (parts.items[i].listed_ms < pass_ms || !decode_part(&parts.items[i], out))
			rc = sk_error_set(err, SK_EINVALID, "part %s is older than its pass or bad",
			        parts.items[i].id);
	sk_observation_list_dispose(&parts);
	for (size_t i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
	free(held);
	return rc;
}

int
sk_ctl_share_read(sk_controller *c, int prov, int64_t have_ms, bool force, sk_ctl_shared_list *out)
{
	const char *name = c->cfg->providers[prov].name;
	char id[160];
	const char *ids[1] = { id };
	sk_observation_list pass = { 0 };
	sk_error err = { 0 };
	int64_t t0 = sk_monotonic_ms();
	int rc;

	memset(out, 0, sizeof(*out));
	part_id(name, -1, id, sizeof(id));
	rc = sk_store_observation_get(c->store, ids, 1, &pass, &err);
	if (rc != 0)
		sk_ctl_store_error(c, "share");
	if (rc != 0 || pass.len == 0 || !fresh_pass(c, &pass.items[0], sk_now_ms())) {
		sk_observation_list_dispose(&pass);
		count(c, name, "read", rc != 0 ? "error" : "none");
		return -1;
	}
	out->listed_ms = pass.items[0].listed_ms;
	out->total = (size_t)json_integer_value(json_object_get(pass.items[0].body, "sandboxes"));
	sk_observation_list_dispose(&pass);
	if (!force && out->listed_ms <= have_ms)
		return 0; /* nothing newer than what we have */
	if ((rc = read_parts(c, name, out->listed_ms, &out->sandboxes, &err)) != 0) {
		sk_ctl_log(c, SK_LOG_INFO, "shared list not used", "provider=%s error=\"%s\"", name,
		        err.message);
		sk_sandbox_list_dispose(&out->sandboxes);
		count(c, name, "read", "error");
		return -1;
	}
	count(c, name, "read", "success");
	sk_ctl_log(c, SK_LOG_DEBUG, "shared list read",
	        "provider=%s sandboxes=%zu of=%zu took_ms=%lld", name, out->sandboxes.len,
	        out->total, (long long)(sk_monotonic_ms() - t0));
	return 1;
}
