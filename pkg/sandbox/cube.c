/*
 * sandbox/cube: TencentCloud CubeSandbox (E2B's published API). The E2B
 * functions with overrides for what Cube does differently:
 *  - connect always answers 200, so `resumed` comes from the state before;
 *  - the list state filter takes one value and the metadata filter is applied
 *    after the first page, so running and paused are listed separately,
 *    without a server-side metadata filter, and matched here;
 *  - timeouts are sliding idle windows where -1 means never (a zero or
 *    negative timeout is sent as -1 instead of being rounded up).
 * 503 with Retry-After on delete/pause is classified by the HTTP layer.
 */
#include <string.h>

#include "sandbox_int.h"

static long
cube_seconds(int64_t ms)
{
	return ms <= 0 ? -1 : sk_e2b_seconds(ms);
}

static int
cube_create(sk_provider *p, const sk_create_request *req, sk_sandbox *out, sk_error *err)
{
	int64_t t = req->timeout_ms ? req->timeout_ms : p->cfg.sandbox_timeout_ms;

	return sk_e2b_create_seconds(p, req, cube_seconds(t), out, err);
}

static int
cube_list(sk_provider *p, const sk_kvlist *match, sk_sandbox_list *out, sk_error *err)
{
	int rc;

	memset(out, 0, sizeof(*out));
	rc = sk_e2b_list_query(p, "state=running", match, out, err);
	if (rc == SK_OK)
		rc = sk_e2b_list_query(p, "state=paused", match, out, err);
	if (rc != SK_OK)
		sk_sandbox_list_dispose(out);
	else
		sk_sandbox_list_dedup(out);
	return rc;
}

static int
cube_connect(sk_provider *p, const char *id, int64_t timeout_ms, sk_sandbox *out, bool *resumed,
        sk_error *err)
{
	sk_sandbox before;
	long status = 0;
	int64_t t = timeout_ms ? timeout_ms : p->cfg.sandbox_timeout_ms;
	int rc;

	if (resumed)
		*resumed = false;
	memset(out, 0, sizeof(*out));
	rc = sk_e2b_get(p, id, &before, err);
	if (rc != SK_OK)
		return rc;
	rc = sk_e2b_connect_seconds(p, id, cube_seconds(t), out, &status, err);
	if (rc == SK_OK && resumed)
		*resumed = before.state != SK_SANDBOX_RUNNING || status == 201;
	if (rc == SK_OK && out->metadata.len == 0)
		for (size_t i = 0; i < before.metadata.len; i++)
			sk_kvlist_set(&out->metadata, before.metadata.items[i].key,
			        before.metadata.items[i].value);
	sk_sandbox_dispose(&before);
	return rc;
}

static int
cube_set_timeout(sk_provider *p, const char *id, int64_t timeout_ms, sk_error *err)
{
	return sk_e2b_set_timeout_seconds(p, id, cube_seconds(timeout_ms), err);
}

const sk_provider_ops sk_provider_cube = {
	.name = "cube",
	.create = cube_create,
	.get = sk_e2b_get,
	.list = cube_list,
	.connect = cube_connect,
	.pause = sk_e2b_pause,
	.kill = sk_e2b_kill,
	.set_timeout = cube_set_timeout,
	.probe_health = sk_e2b_probe_health,
	.init_env = sk_e2b_init_env,
	.list_files = sk_envd_list_files,
	.read_file = sk_envd_read_file,
	.write_file = sk_envd_write_file,
	.list_processes = sk_envd_list_processes,
};
