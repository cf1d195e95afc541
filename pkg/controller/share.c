/*
 * share: one provider list for every replica. The holder of
 * shard 0 lists each provider (observe.c) and, while other replicas hold
 * shards, stores what it saw as a shared list (store.h): one part per shard
 * of users ("shard-NN": that shard's sandboxes) under the time the list
 * started, then the provider's head, which names that list (shards,
 * sandboxes, how long listing and storing took), then it prunes the lists
 * older than the one before. The other replicas read the head every poll
 * and, when it names a newer list, the parts of the shards they hold:
 * they do not list the provider. Every write is under the same fence as
 * any other act (shard 0 held and renewed within the renew deadline), and
 * a head is only replaced by a newer list's, so a holder that wakes from a
 * stop cannot put an old list back. When no head is fresh (its list is
 * older than two resync periods plus the time it took: the holder died and
 * its lease has not expired, or it cannot write), a replica lists for
 * itself, as one replica does.
 */
#include <stdlib.h>
#include <string.h>

#include "../api/names.h"
#include "controller_int.h"

#define SHARE_METRIC "spacekeeper_shared_list_total"
#define PART_NAME_MAX 24

static void
part_name(int shard, char *buf, size_t len)
{
	snprintf(buf, len, "shard-%02d", shard);
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

/* A store write of the shared list failed: counted and logged. */
static void
write_failed(sk_controller *c, const char *prov, const char *what, const sk_error *err)
{
	sk_ctl_store_error(c, "share");
	sk_ctl_log(c, SK_LOG_WARN, "shared list not written", "provider=%s part=%s error=\"%s\"",
	        prov, what, err->message);
	count(c, prov, "publish", "error");
}

/* The fence before each write: false (counted) when shard 0 is no longer ours. */
static bool
fenced(sk_controller *c, const char *prov)
{
	if (sk_ctl_shard_valid(c, 0))
		return false;
	count(c, prov, "publish", "fenced");
	return true;
}

/* Writes one shard's part; false when the fence stops it or the store fails. */
static bool
put_part(sk_controller *c, const char *prov, int shard, json_t *body, int64_t listed_ms,
        size_t *bytes)
{
	sk_error err = { 0 };
	char part[PART_NAME_MAX];
	int rc;

	if (fenced(c, prov))
		return false;
	part_name(shard, part, sizeof(part));
	*bytes += json_dumpb(body, NULL, 0, JSON_COMPACT);
	rc = sk_store_observation_put(c->store, prov, part, listed_ms, c->identity, body, &err);
	if (rc != 0 && rc != SK_EEXISTS) { /* exists: this very list, written before */
		write_failed(c, prov, part, &err);
		return false;
	}
	return true;
}

/* The list the provider's head names now (0: none, or unreadable). */
static int64_t
current_list(sk_controller *c, const char *prov)
{
	sk_observation h;
	sk_error err = { 0 };
	int64_t t = 0;

	if (sk_store_observation_head_get(c->store, prov, &h, &err) == 0)
		t = h.listed_ms;
	sk_observation_dispose(&h);
	return t;
}

/* Names the list in the head, then prunes the lists before `prev`. */
static bool
put_head(sk_controller *c, const char *prov, const sk_sandbox_list *all, int64_t listed_ms,
        int64_t prev)
{
	json_t *head = json_pack("{s:i,s:I,s:I}", "shards", c->cfg->shards, "sandboxes",
	        (json_int_t)all->len, "durationMs", (json_int_t)(sk_now_ms() - listed_ms));
	sk_error err = { 0 };
	int rc = fenced(c, prov)
	        ? SK_EUNAVAILABLE
	        : sk_store_observation_head_put(c->store, prov, listed_ms, c->identity, head, &err);

	json_decref(head);
	if (rc == SK_ECONFLICT) /* a newer list is current: ours is not wanted */
		return false;
	if (rc != 0) {
		if (rc != SK_EUNAVAILABLE)
			write_failed(c, prov, "head", &err);
		return false;
	}
	if (prev > 0 && !fenced(c, prov) &&
	        sk_store_observation_prune(c->store, prov, prev, &err) != 0)
		write_failed(c, prov, "prune", &err);
	return true;
}

void
sk_ctl_share_publish(sk_controller *c, int prov, const sk_sandbox_list *all, int64_t listed_ms)
{
	const char *name = c->cfg->providers[prov].name;
	int n = c->cfg->shards;
	json_t **parts = arrays_by_shard(all, n);
	int64_t t0 = sk_monotonic_ms(), prev = current_list(c, name);
	size_t bytes = 0;
	bool ok = true;

	for (int s = 0; s < n; s++) {
		json_t *body = json_pack("{s:o}", "sandboxes", parts[s]);
		ok = ok && put_part(c, name, s, body, listed_ms, &bytes);
		json_decref(body);
	}
	free(parts);
	if (!ok || !put_head(c, name, all, listed_ms, prev))
		return;
	count(c, name, "publish", "success");
	sk_ctl_log(c, SK_LOG_DEBUG, "shared list published",
	        "provider=%s sandboxes=%zu parts=%d bytes=%zu took_ms=%lld", name, all->len, n,
	        bytes, (long long)(sk_monotonic_ms() - t0));
}

/* ---- read ---- */

/* The head names a fresh list made for our shard count. */
static bool
fresh_head(sk_controller *c, const sk_observation *head, int64_t now)
{
	int64_t took = json_integer_value(json_object_get(head->body, "durationMs"));
	int shards = (int)json_integer_value(json_object_get(head->body, "shards"));
	int64_t period = c->cfg->resync_ms > 0 ? c->cfg->resync_ms : 30000;

	return shards == c->cfg->shards && head->listed_ms >= now - 2 * period - took;
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

/* The parts of the held shards in the list started at listed_ms. */
static int
read_parts(
        sk_controller *c, const char *prov, int64_t listed_ms, sk_sandbox_list *out, sk_error *err)
{
	int *held = sk_calloc((size_t)c->cfg->shards + 1, sizeof(*held));
	size_t n = sk_ctl_shards_held_list(c, held);
	char(*names)[PART_NAME_MAX] = sk_calloc(n + 1, sizeof(*names));
	const char **ptrs = sk_calloc(n + 1, sizeof(*ptrs));
	sk_observation_list parts = { 0 };
	int rc;

	for (size_t i = 0; i < n; i++) {
		part_name(held[i], names[i], sizeof(names[i]));
		ptrs[i] = names[i];
	}
	rc = sk_store_observation_get(c->store, prov, listed_ms, ptrs, n, &parts, err);
	if (rc == 0 && parts.len != n)
		rc = sk_error_set(err, SK_ENOTFOUND, "%zu of %zu parts missing", n - parts.len, n);
	for (size_t i = 0; rc == 0 && i < parts.len; i++)
		if (!decode_part(&parts.items[i], out))
			rc = sk_error_set(err, SK_EINVALID, "part %s is bad", parts.items[i].id);
	sk_observation_list_dispose(&parts);
	free(ptrs);
	free(names);
	free(held);
	return rc;
}

int
sk_ctl_share_read(sk_controller *c, int prov, int64_t have_ms, bool force, sk_ctl_shared_list *out)
{
	const char *name = c->cfg->providers[prov].name;
	sk_observation head;
	sk_error err = { 0 };
	int64_t t0 = sk_monotonic_ms();
	int rc;

	memset(out, 0, sizeof(*out));
	rc = sk_store_observation_head_get(c->store, name, &head, &err);
	if (rc != 0 && rc != SK_ENOTFOUND)
		sk_ctl_store_error(c, "share");
	if (rc != 0 || !fresh_head(c, &head, sk_now_ms())) {
		sk_observation_dispose(&head);
		count(c, name, "read", rc != 0 && rc != SK_ENOTFOUND ? "error" : "none");
		return -1;
	}
	out->listed_ms = head.listed_ms;
	out->total = (size_t)json_integer_value(json_object_get(head.body, "sandboxes"));
	sk_observation_dispose(&head);
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
