/*
 * sandbox/provider: the provider object (ops table chosen by the config's
 * type, the HTTP client, the API key read once and kept only inside the auth
 * header), the dispatching wrappers, and the list helpers the backends share.
 * The sandbox value types themselves are in pkg/api (sandbox.c).
 */
#include <stdlib.h>
#include <string.h>

#include "sandbox_int.h"

/* E2B and CubeSandbox state strings (Cube adds transients). */
const sk_state_name sk_e2b_states[] = {
	{ "running", SK_SANDBOX_RUNNING },
	{ "paused", SK_SANDBOX_PAUSED },
	{ "pausing", SK_SANDBOX_TRANSITIONAL },
	{ "resuming", SK_SANDBOX_TRANSITIONAL },
	{ "starting", SK_SANDBOX_TRANSITIONAL },
	{ "stopping", SK_SANDBOX_TRANSITIONAL },
	{ "creating", SK_SANDBOX_TRANSITIONAL },
	{ "snapshotting", SK_SANDBOX_TRANSITIONAL },
	{ "terminated", SK_SANDBOX_GONE },
	{ "killed", SK_SANDBOX_GONE },
	{ "killing", SK_SANDBOX_GONE },
	{ "deleted", SK_SANDBOX_GONE },
	{ NULL, SK_SANDBOX_UNKNOWN },
};

sk_sandbox_state
sk_sandbox_state_parse(const sk_state_name *names, const char *s)
{
	for (size_t i = 0; s != NULL && names[i].name != NULL; i++) {
		if (strcmp(s, names[i].name) == 0)
			return names[i].state;
	}
	return SK_SANDBOX_UNKNOWN;
}

/* Moves *sb into the list (sb is zeroed). */
void
sk_sandbox_list_push(sk_sandbox_list *l, size_t *cap, sk_sandbox *sb)
{
	if (l->len == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		l->items = sk_realloc(l->items, *cap * sizeof(*l->items));
	}
	l->items[l->len++] = *sb;
	memset(sb, 0, sizeof(*sb));
}

static int
cmp_id(const void *a, const void *b)
{
	const sk_sandbox *x = a, *y = b;

	return strcmp(x->id ? x->id : "", y->id ? y->id : "");
}

void
sk_sandbox_list_dedup(sk_sandbox_list *l)
{
	size_t w = 0;

	if (l->len < 2)
		return;
	qsort(l->items, l->len, sizeof(*l->items), cmp_id);
	for (size_t r = 0; r < l->len; r++) {
		if (w > 0 && cmp_id(&l->items[w - 1], &l->items[r]) == 0) {
			sk_sandbox_dispose(&l->items[r]);
			continue;
		}
		if (w != r)
			l->items[w] = l->items[r];
		w++;
	}
	l->len = w;
}

bool
sk_sandbox_metadata_matches(const sk_kvlist *meta, const sk_kvlist *match)
{
	for (size_t i = 0; match && i < match->len; i++) {
		const char *v = sk_kvlist_get(meta, match->items[i].key);
		if (v == NULL || strcmp(v, match->items[i].value) != 0)
			return false;
	}
	return true;
}

bool
sk_sandbox_id_valid(const char *id)
{
	if (id == NULL || id[0] == '\0' || strlen(id) > 128)
		return false;
	for (const char *p = id; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		            (*p >= '0' && *p <= '9') || *p == '-' || *p == '_'))
			return false;
	return true;
}

int
sk_json_dump_body(json_t *j, char **out)
{
	*out = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return *out ? SK_OK : SK_ENOMEM;
}

static void
config_copy(sk_provider_config *d, const sk_provider_config *s)
{
	*d = *s;
	d->name = sk_strdup(s->name);
	d->api_url = sk_strdup(s->api_url);
	d->sandbox_url = sk_strdup(s->sandbox_url);
	d->domain = sk_strdup(s->domain);
	d->api_key_env = sk_strdup(s->api_key_env);
	d->api_key_file = sk_strdup(s->api_key_file);
}

static void
config_dispose(sk_provider_config *c)
{
	free(c->name);
	free(c->api_url);
	free(c->sandbox_url);
	free(c->domain);
	free(c->api_key_env);
	free(c->api_key_file);
}

static const sk_provider_ops *
ops_for(sk_provider_type t)
{
	switch (t) {
	case SK_PROVIDER_E2B: return &sk_provider_e2b;
	case SK_PROVIDER_CUBE: return &sk_provider_cube;
	case SK_PROVIDER_DAYTONA: return &sk_provider_daytona;
	}
	return NULL;
}

int
sk_provider_new(const sk_provider_config *cfg, sk_provider **out, sk_error *err)
{
	sk_provider *p;
	char *key = NULL;
	int rc;

	*out = NULL;
	if (ops_for(cfg->type) == NULL)
		return sk_error_set(err, SK_EINVALID, "provider %s: unknown type", cfg->name);
	if (cfg->api_url == NULL || cfg->api_url[0] == '\0')
		return sk_error_set(err, SK_EINVALID, "provider %s: no apiURL", cfg->name);
	if (cfg->api_key_env || cfg->api_key_file) {
		key = sk_provider_api_key(cfg, err);
		if (key == NULL)
			return err ? err->code : SK_EINVALID;
	}
	p = sk_calloc(1, sizeof(*p));
	p->ops = ops_for(cfg->type);
	config_copy(&p->cfg, cfg);
	rc = sk_http_init(&p->http, cfg->api_url,
	        cfg->type == SK_PROVIDER_DAYTONA ? "Authorization: Bearer " : "X-API-Key: ", key,
	        cfg->request_timeout_ms, cfg->insecure_skip_tls_verify, err);
	sk_wipe_free(key);
	if (rc != SK_OK) {
		sk_error_prefix(err, "provider %s", cfg->name);
		sk_provider_free(p);
		return rc;
	}
	*out = p;
	return SK_OK;
}

void
sk_provider_free(sk_provider *p)
{
	if (p == NULL)
		return;
	sk_http_dispose(&p->http);
	config_dispose(&p->cfg);
	free(p->toolbox_url);
	free(p);
}

sk_provider *
sk_provider_new_with_ops(const sk_provider_ops *ops, void *state)
{
	sk_provider *p = sk_calloc(1, sizeof(*p));

	p->ops = ops;
	p->state = state;
	p->cfg.name = sk_strdup("custom");
	return p;
}

void *
sk_provider_get_state(const sk_provider *p)
{
	return p->state;
}

const sk_provider_ops *
sk_provider_get_ops(const sk_provider *p)
{
	return p->ops;
}

const sk_provider_config *
sk_provider_get_config(const sk_provider *p)
{
	return &p->cfg;
}

int
sk_sandbox_create(sk_provider *p, const sk_create_request *req, sk_sandbox *out, sk_error *err)
{
	return p->ops->create(p, req, out, err);
}

int
sk_sandbox_get(sk_provider *p, const char *id, sk_sandbox *out, sk_error *err)
{
	return p->ops->get(p, id, out, err);
}

int
sk_sandbox_list_all(sk_provider *p, const sk_kvlist *match, sk_sandbox_list *out, sk_error *err)
{
	return p->ops->list(p, match, out, err);
}

int
sk_sandbox_connect(sk_provider *p, const char *id, int64_t timeout_ms, sk_sandbox *out,
        bool *resumed, sk_error *err)
{
	return p->ops->connect(p, id, timeout_ms, out, resumed, err);
}

int
sk_sandbox_pause(sk_provider *p, const char *id, sk_error *err)
{
	return p->ops->pause(p, id, err);
}

int
sk_sandbox_kill(sk_provider *p, const char *id, sk_error *err)
{
	return p->ops->kill(p, id, err);
}

int
sk_sandbox_set_timeout(sk_provider *p, const char *id, int64_t timeout_ms, sk_error *err)
{
	return p->ops->set_timeout(p, id, timeout_ms, err);
}

int
sk_sandbox_set_network(sk_provider *p, const char *id, const sk_network *n, sk_error *err)
{
	if (p->ops->set_network == NULL)
		return sk_error_set(err, SK_ENOTSUPPORTED,
		        "provider type %s does not change a live sandbox's network", p->ops->name);
	return p->ops->set_network(p, id, n, err);
}

bool
sk_sandbox_network_live(const sk_provider *p)
{
	return p->ops->set_network != NULL;
}

int
sk_sandbox_ensure_volume(sk_provider *p, const char *name, char **id, sk_error *err)
{
	*id = NULL;
	if (p->ops->ensure_volume == NULL)
		return sk_error_set(
		        err, SK_ENOTSUPPORTED, "provider type %s has no volumes", p->ops->name);
	return p->ops->ensure_volume(p, name, id, err);
}

int
sk_sandbox_delete_volume(sk_provider *p, const char *name, sk_error *err)
{
	if (p->ops->delete_volume == NULL)
		return sk_error_set(
		        err, SK_ENOTSUPPORTED, "provider type %s has no volumes", p->ops->name);
	return p->ops->delete_volume(p, name, err);
}

bool
sk_sandbox_has_volumes(const sk_provider *p)
{
	return p->ops->ensure_volume != NULL;
}

int
sk_sandbox_fork(
        sk_provider *p, const char *source_id, int64_t timeout_ms, sk_sandbox *out, sk_error *err)
{
	memset(out, 0, sizeof(*out));
	if (p->ops->fork == NULL)
		return sk_error_set(
		        err, SK_ENOTSUPPORTED, "provider type %s has no fork", p->ops->name);
	return p->ops->fork(p, source_id, timeout_ms, out, err);
}

bool
sk_sandbox_can_fork(const sk_provider *p)
{
	return p->ops->fork != NULL;
}

int
sk_sandbox_probe_health(
        sk_provider *p, const sk_sandbox *sb, sk_health *health, int *http_status, sk_error *err)
{
	return p->ops->probe_health(p, sb, health, http_status, err);
}

int
sk_sandbox_init_env(sk_provider *p, const sk_sandbox *sb, const sk_kvlist *env, sk_error *err)
{
	return p->ops->init_env(p, sb, env, err);
}

void
sk_file_list_free(sk_file_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->len; i++) {
		free(l->items[i].path);
		free(l->items[i].link_target);
	}
	free(l->items);
	memset(l, 0, sizeof(*l));
}

void
sk_file_list_push(sk_file_list *l, sk_file_entry *e)
{
	if (l->len == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->items = sk_realloc(l->items, l->cap * sizeof(*l->items));
	}
	l->items[l->len++] = *e;
	memset(e, 0, sizeof(*e));
}

int
sk_file_list_order(const char *a, const char *b)
{
	const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;

	while (*x && *x == *y)
		x++, y++;
	if (*x == *y)
		return 0;
	if (*x == '/' || *y == '/')
		return *x == '/' ? (*y ? -1 : 1) : (*x ? 1 : -1);
	return *x < *y ? -1 : 1;
}

static int
entry_cmp(const void *a, const void *b)
{
	return sk_file_list_order(
	        ((const sk_file_entry *)a)->path, ((const sk_file_entry *)b)->path);
}

void
sk_file_list_sort(sk_file_list *l)
{
	if (l->len > 1)
		qsort(l->items, l->len, sizeof(*l->items), entry_cmp);
}

static int
files_unsupported(sk_provider *p, const char *what, sk_error *err)
{
	return sk_error_set(
	        err, SK_ENOTSUPPORTED, "provider %s: %s is not supported", p->ops->name, what);
}

int
sk_sandbox_list_processes(sk_provider *p, const sk_sandbox *sb, int *running, sk_error *err)
{
	*running = 0;
	if (!p->ops->list_processes)
		return sk_error_set(err, SK_ENOTSUPPORTED, "%s: no process list in the data plane",
		        p->ops->name);
	return p->ops->list_processes(p, sb, running, err);
}

int
sk_sandbox_list_files(
        sk_provider *p, const sk_sandbox *sb, const char *root, sk_file_list *out, sk_error *err)
{
	if (!p->ops->list_files)
		return files_unsupported(p, "listing files", err);
	return p->ops->list_files(p, sb, root, out, err);
}

int
sk_sandbox_read_file(sk_provider *p, const sk_sandbox *sb, const char *path, sk_file_sink_fn sink,
        void *payload, sk_error *err)
{
	if (!p->ops->read_file)
		return files_unsupported(p, "reading files", err);
	return p->ops->read_file(p, sb, path, sink, payload, err);
}

int
sk_sandbox_write_file(sk_provider *p, const sk_sandbox *sb, const sk_file_entry *entry,
        sk_file_source_fn source, void *payload, sk_error *err)
{
	if (!p->ops->write_file)
		return files_unsupported(p, "writing files", err);
	return p->ops->write_file(p, sb, entry, source, payload, err);
}

int
sk_sandbox_create_snapshot(
        sk_provider *p, const char *sandbox_id, const char *name, sk_snapshot *out, sk_error *err)
{
	memset(out, 0, sizeof(*out));
	if (p->ops->create_snapshot == NULL)
		return sk_error_set(err, SK_ENOTSUPPORTED,
		        "provider type %s has no persistent snapshots", p->ops->name);
	return p->ops->create_snapshot(p, sandbox_id, name, out, err);
}

int
sk_sandbox_list_snapshots(
        sk_provider *p, const char *sandbox_id, sk_snapshot_list *out, sk_error *err)
{
	memset(out, 0, sizeof(*out));
	if (p->ops->list_snapshots == NULL)
		return sk_error_set(err, SK_ENOTSUPPORTED,
		        "provider type %s has no persistent snapshots", p->ops->name);
	return p->ops->list_snapshots(p, sandbox_id, out, err);
}

int
sk_sandbox_delete_snapshot(sk_provider *p, const char *snapshot_id, sk_error *err)
{
	if (p->ops->delete_snapshot == NULL)
		return sk_error_set(err, SK_ENOTSUPPORTED,
		        "provider type %s has no persistent snapshots to delete", p->ops->name);
	return p->ops->delete_snapshot(p, snapshot_id, err);
}

bool
sk_sandbox_has_snapshots(const sk_provider *p)
{
	return p->ops->create_snapshot != NULL && p->ops->list_snapshots != NULL;
}

int
sk_sandbox_create_from_snapshot(sk_provider *p, const sk_create_request *req,
        const char *snapshot_id, sk_sandbox *out, sk_error *err)
{
	sk_create_request from = *req;

	if (!sk_sandbox_has_snapshots(p))
		return sk_error_set(err, SK_ENOTSUPPORTED,
		        "provider type %s has no persistent snapshots to start from", p->ops->name);
	from.template_id = snapshot_id;
	return sk_sandbox_create(p, &from, out, err);
}
