/*
 * sandboxsim E2B team volumes, persistent snapshots and fork, as E2B's
 * published API document (spec/openapi.yml of its infra repository) lists
 * them:
 *
 *   GET /volumes, POST /volumes {name}      Volume list, 201 VolumeAndToken
 *   GET|DELETE /volumes/{volumeID}          VolumeAndToken, 204; 404
 *   NewSandbox.volumeMounts [{name, path}]  mounts a volume at create
 *   POST /sandboxes/{id}/snapshots {name}   201 SnapshotInfo {snapshotID, names}
 *   GET /snapshots?sandboxID=&name=         SnapshotInfo pages (X-Next-Token)
 *   DELETE /templates/{snapshotID}          204 (what the SDK's deleteSnapshot calls)
 *   POST /sandboxes/{id}/fork {count, timeout}  201, one SandboxForkResult per fork
 *
 * A volume keeps its files in a tree of its own. A sandbox sees them under
 * its mount path: its tree takes the volume's files before each file
 * operation (sim_sandbox_fs) and gives them back after one that changed it,
 * so a later sandbox mounting the volume, or one running beside it at its
 * next file request, sees what this one wrote, also after it is killed.
 * Of two sandboxes writing the same volume between two file requests, the
 * later request wins.
 *
 * A snapshot copies the sandbox's tree without its mounts (a volume is not
 * part of the sandbox) and outlives the sandbox; a create whose templateID
 * names it starts from a copy. A fork is a snapshot started count times,
 * with the source's mounts. Processes survive neither (envd's do not survive
 * a pause either, see procs.c). Everything here is under s->lock.
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define TEAM_SLUG "sim-team"
#define VOLUME_NAME_MAX 63
#define SNAPSHOT_NAME_MAX 40 /* "sim-team/NAME:default" fits a templateID (60) */
#define PAGE_MAX 100
#define FORK_MAX 20 /* "an integer between 1 and 20" (the SDKs) */
#define FORK_DEFAULT_TIMEOUT_S 15
#define MAX_TIMEOUT_S 86400

static void
random_id(sim *s, const char *prefix, char *out, size_t len)
{
	static const char alnum[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	size_t p = (size_t)snprintf(out, len, "%s", prefix);

	for (; p < len - 1 && p < strlen(prefix) + 20; p++)
		out[p] = alnum[sim_rand(&s->store.rng) % 36];
	out[p] = '\0';
}

/* ^[a-zA-Z0-9_-]+$, as NewVolume.name, at most max characters; snapshot
 * names follow it too. */
static bool
valid_name(const char *name, size_t max)
{
	if (*name == '\0' || strlen(name) > max)
		return false;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		            (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
			return false;
	return true;
}

/* ---- volumes ---- */

static sim_volume *
volume_by_id(sim *s, const char *id)
{
	for (sim_volume *v = s->volumes; v; v = v->next)
		if (strcmp(v->id, id) == 0)
			return v;
	return NULL;
}

static sim_volume *
volume_by_name(sim *s, const char *name)
{
	for (sim_volume *v = s->volumes; v; v = v->next)
		if (strcmp(v->name, name) == 0)
			return v;
	return NULL;
}

static json_t *
json_volume(const sim_volume *v, bool token)
{
	json_t *o = json_pack("{s:s,s:s}", "volumeID", v->id, "name", v->name);

	if (token)
		json_object_set_new(o, "token", json_string(v->token));
	return o;
}

static void
volume_list(sim *s, sim_req *r)
{
	json_t *arr = json_array();

	for (sim_volume *v = s->volumes; v; v = v->next)
		json_array_append_new(arr, json_volume(v, false));
	sim_reply_json(s, r, 200, arr);
}

static void
volume_create(sim *s, sim_req *r)
{
	json_t *doc = sim_req_json(s, r, false), *name;
	sim_volume *v;

	if (doc == NULL)
		return;
	name = json_object_get(doc, "name");
	if (!json_is_string(name) || !valid_name(json_string_value(name), VOLUME_NAME_MAX)) {
		sim_reply_error(s, r, 400,
		        "validation error: name must match ^[a-zA-Z0-9_-]+$ (at most %d "
		        "characters)",
		        VOLUME_NAME_MAX);
	} else if (volume_by_name(s, json_string_value(name)) != NULL) {
		sim_reply_error(
		        s, r, 400, "volume with name '%s' already exists", json_string_value(name));
	} else {
		v = sk_calloc(1, sizeof(*v));
		random_id(s, "vol", v->id, sizeof(v->id));
		snprintf(v->name, sizeof(v->name), "%s", json_string_value(name));
		for (int i = 0; i < 32; i++)
			v->token[i] = "0123456789abcdef"[sim_rand(&s->store.rng) % 16];
		v->fs = sim_fs_new("/");
		v->next = s->volumes;
		s->volumes = v;
		sim_reply_json(s, r, 201, json_volume(v, true));
	}
	json_decref(doc);
}

static void
volume_free(sim_volume *v)
{
	sim_fs_free(v->fs);
	free(v);
}

static void
volume_one(sim *s, sim_req *r, const char *id)
{
	sim_volume **p = &s->volumes, *v;

	while (*p && strcmp((*p)->id, id) != 0)
		p = &(*p)->next;
	if ((v = *p) == NULL) {
		sim_reply_error(s, r, 404, "volume '%s' not found", id);
	} else if (strcmp(r->method, "GET") == 0) {
		sim_reply_json(s, r, 200, json_volume(v, true));
	} else {
		*p = v->next;
		volume_free(v);
		sim_reply_empty(r, 204);
	}
}

/* ---- mounts ---- */

static const char *
mount_field(json_t *m, const char *key)
{
	json_t *v = json_object_get(m, key);

	return json_is_string(v) && json_string_length(v) > 0 ? json_string_value(v) : NULL;
}

static bool
mount_path_taken(const sim_sandbox *sb, const char *path)
{
	for (int i = 0; i < sb->nmounts; i++)
		if (strcmp(sb->mounts[i].path, path) == 0)
			return true;
	return false;
}

static void
add_mount(sim_sandbox *sb, const sim_volume *v, const char *path)
{
	sim_mount *m;

	sb->mounts = sk_realloc(sb->mounts, (size_t)(sb->nmounts + 1) * sizeof(*sb->mounts));
	m = &sb->mounts[sb->nmounts++];
	memset(m, 0, sizeof(*m));
	snprintf(m->volume_id, sizeof(m->volume_id), "%s", v->id);
	snprintf(m->name, sizeof(m->name), "%s", v->name);
	m->path = sk_strdup(path);
	m->volume_gen = UINT64_MAX; /* never synced: the first use takes the volume's files */
}

int
sim_mounts_parse(sim *s, sim_req *r, sim_sandbox *sb, json_t *mounts)
{
	static sim_fs root = { .home = "/" };
	size_t i;
	json_t *m;

	if (mounts == NULL || json_is_null(mounts))
		return 0;
	if (!json_is_array(mounts)) {
		sim_reply_error(s, r, 400, "validation error: volumeMounts must be an array");
		return -1;
	}
	json_array_foreach(mounts, i, m)
	{
		const char *name = mount_field(m, "name"), *path = mount_field(m, "path");
		sim_volume *v = name ? volume_by_name(s, name) : NULL;
		char *norm = path && path[0] == '/' ? sim_fs_path(&root, path) : NULL;
		const char *why = NULL;

		if (name == NULL || path == NULL)
			why = "volumeMounts[%zu]: name and path are required";
		else if (norm == NULL || strcmp(norm, "/") == 0)
			why = "volumeMounts[%zu]: path must be an absolute path below /";
		else if (v == NULL)
			why = "volumeMounts[%zu]: no volume with this name";
		else if (mount_path_taken(sb, norm))
			why = "volumeMounts[%zu]: path is mounted twice";
		if (why != NULL) {
			free(norm);
			sim_reply_error(s, r, 400, why, i);
			return -1;
		}
		add_mount(sb, v, norm);
		free(norm);
	}
	return 0;
}

json_t *
sim_mounts_json(const sim_sandbox *sb)
{
	json_t *arr = json_array();

	for (int i = 0; i < sb->nmounts; i++)
		json_array_append_new(arr,
		        json_pack("{s:s,s:s}", "name", sb->mounts[i].name, "path",
		                sb->mounts[i].path));
	return arr;
}

static void
mounts_synced(sim_sandbox *sb)
{
	for (int i = 0; i < sb->nmounts; i++)
		sb->mounts[i].tree_gen = sb->fs->gen;
}

void
sim_mounts_pull(sim *s, sim_sandbox *sb)
{
	bool changed = false;

	for (int i = 0; i < sb->nmounts; i++) {
		sim_mount *m = &sb->mounts[i];
		sim_volume *v = volume_by_id(s, m->volume_id);
		if (v == NULL || v->fs->gen == m->volume_gen)
			continue;
		sim_fs_graft(sb->fs, m->path, v->fs, "/");
		m->volume_gen = v->fs->gen;
		changed = true;
	}
	if (changed)
		mounts_synced(sb);
}

void
sim_mounts_push(sim *s, sim_sandbox *sb)
{
	bool changed = false;

	if (sb->fs == NULL)
		return;
	for (int i = 0; i < sb->nmounts; i++) {
		sim_mount *m = &sb->mounts[i];
		sim_volume *v = volume_by_id(s, m->volume_id);
		if (v == NULL || m->tree_gen == sb->fs->gen)
			continue;
		sim_fs_graft(v->fs, "/", sb->fs, m->path);
		m->volume_gen = v->fs->gen;
		changed = true;
	}
	if (changed)
		mounts_synced(sb);
}

void
sim_mounts_invalidate(sim_sandbox *sb)
{
	for (int i = 0; i < sb->nmounts; i++)
		sb->mounts[i].volume_gen = UINT64_MAX;
}

void
sim_mounts_free(sim_sandbox *sb)
{
	for (int i = 0; i < sb->nmounts; i++)
		free(sb->mounts[i].path);
	free(sb->mounts);
	sb->mounts = NULL;
	sb->nmounts = 0;
}

/* ---- snapshots ---- */

static json_t *
json_snapshot(const sim_snapshot *sn)
{
	json_t *names = json_array();
	char id[128];

	if (sn->name) {
		snprintf(id, sizeof(id), "%s/%s:default", TEAM_SLUG, sn->name);
		json_array_append_new(names, json_string(id));
	} else {
		snprintf(id, sizeof(id), "%s:default", sn->template_id);
	}
	return json_pack("{s:s,s:o}", "snapshotID", id, "names", names);
}

/* A snapshot's template ID, "ID:default", its name or "team/name[:default]". */
static bool
snapshot_named(const sim_snapshot *sn, const char *ref)
{
	size_t len = strlen(ref), slug = strlen(TEAM_SLUG);
	char key[128];

	if (len >= sizeof(key))
		return false;
	memcpy(key, ref, len + 1);
	if (len > 8 && strcmp(key + len - 8, ":default") == 0)
		key[len - 8] = '\0';
	if (strcmp(key, sn->template_id) == 0)
		return true;
	if (sn->name == NULL)
		return false;
	if (strncmp(key, TEAM_SLUG "/", slug + 1) == 0)
		return strcmp(key + slug + 1, sn->name) == 0;
	return strcmp(key, sn->name) == 0;
}

bool
sim_snapshot_ref(const char *template_id)
{
	size_t len = strlen(template_id);

	return strncmp(template_id, TEAM_SLUG "/", strlen(TEAM_SLUG) + 1) == 0 ||
	        (len > 8 && strcmp(template_id + len - 8, ":default") == 0);
}

sim_snapshot *
sim_snapshot_find(sim *s, const char *template_id)
{
	for (sim_snapshot *sn = s->snapshots; sn; sn = sn->next)
		if (snapshot_named(sn, template_id))
			return sn;
	return NULL;
}

/* sb's tree without what its volumes hold. */
static sim_fs *
tree_without_mounts(sim *s, sim_sandbox *sb)
{
	sim_fs *copy = sim_fs_clone(sim_sandbox_fs(s, sb));

	for (int i = 0; i < sb->nmounts; i++)
		sim_fs_remove(copy, sb->mounts[i].path);
	return copy;
}

static sim_snapshot *
snapshot_take(sim *s, sim_sandbox *sb, const char *name)
{
	sim_snapshot *sn = s->snapshots, **tail = &s->snapshots;

	while (sn && !(name && sn->name && strcmp(sn->name, name) == 0))
		sn = sn->next;
	if (sn == NULL) { /* a name already taken gets a new build of the same template */
		sn = sk_calloc(1, sizeof(*sn));
		random_id(s, "", sn->template_id, sizeof(sn->template_id));
		sn->name = name ? sk_strdup(name) : NULL;
		while (*tail)
			tail = &(*tail)->next;
		*tail = sn;
	}
	sim_fs_free(sn->fs);
	sn->fs = tree_without_mounts(s, sb);
	sn->seq = ++s->snapshot_seq;
	snprintf(sn->sandbox_id, sizeof(sn->sandbox_id), "%s", sb->id);
	snprintf(sn->base_template, sizeof(sn->base_template), "%s", sb->template_id);
	sn->cpu = sb->cpu;
	sn->memory_mb = sb->memory_mb;
	return sn;
}

void
sim_snapshot_create(sim *s, sim_req *r, const char *id)
{
	json_t *doc = sim_req_json(s, r, false), *name, *memory;
	sim_sandbox *sb;

	if (doc == NULL)
		return;
	name = json_object_get(doc, "name");
	memory = json_object_get(doc, "memory"); /* false: files only; here always so */
	if (memory && !json_is_null(memory) && !json_is_boolean(memory)) {
		sim_reply_error(s, r, 400, "validation error: memory must be a boolean");
		json_decref(doc);
		return;
	}
	if (name && !json_is_null(name) &&
	        (!json_is_string(name) ||
	                !valid_name(json_string_value(name), SNAPSHOT_NAME_MAX))) {
		sim_reply_error(s, r, 400,
		        "validation error: name must match ^[a-zA-Z0-9_-]+$ (at most %d "
		        "characters)",
		        SNAPSHOT_NAME_MAX);
		json_decref(doc);
		return;
	}
	pthread_mutex_lock(&s->lock);
	if ((sb = sim_store_get(s, id, sk_now_ms())) == NULL)
		sim_reply_error(s, r, 404,
		        "Sandbox \"%s\" doesn't exist or you don't have access to it", id);
	else
		sim_reply_json(s, r, 201,
		        json_snapshot(snapshot_take(
		                s, sb, json_is_string(name) ? json_string_value(name) : NULL)));
	pthread_mutex_unlock(&s->lock);
	json_decref(doc);
}

/* limit (1..100, default 100); -1 with 400 replied when bad. */
static int
page_limit(sim *s, sim_req *r)
{
	const char *arg = sim_req_arg(r, "limit");
	char *end;
	long v;

	if (arg == NULL)
		return PAGE_MAX;
	v = strtol(arg, &end, 10);
	if (*arg == '\0' || *end != '\0' || v < 1 || v > PAGE_MAX) {
		sim_reply_error(s, r, 400, "limit must be between 1 and %d", PAGE_MAX);
		return -1;
	}
	return (int)v;
}

static void
snapshot_list(sim *s, sim_req *r)
{
	const char *sandbox = sim_req_arg(r, "sandboxID"), *name = sim_req_arg(r, "name");
	const char *token = sim_req_arg(r, "nextToken");
	int limit = page_limit(s, r), n = 0;
	uint64_t from = 0;
	json_t *arr;
	char *end = NULL;

	if (limit < 0)
		return;
	if (token && (from = strtoull(token, &end, 10), *token == '\0' || *end != '\0')) {
		sim_reply_error(s, r, 400, "invalid next token");
		return;
	}
	arr = json_array();
	for (sim_snapshot *sn = s->snapshots; sn; sn = sn->next) {
		if (sn->seq < from || (sandbox && strcmp(sandbox, sn->sandbox_id) != 0) ||
		        (name && !snapshot_named(sn, name)))
			continue;
		if (n == limit) {
			char next[24];
			snprintf(next, sizeof(next), "%llu", (unsigned long long)sn->seq);
			sim_reply_header(r, "X-Next-Token", next);
			break;
		}
		json_array_append_new(arr, json_snapshot(sn));
		n++;
	}
	sim_reply_json(s, r, 200, arr);
}

static void
snapshot_free(sim_snapshot *sn)
{
	sim_fs_free(sn->fs);
	free(sn->name);
	free(sn);
}

/* DELETE /templates/{id}: the SDK's deleteSnapshot; only snapshots are templates here. */
static void
snapshot_delete(sim *s, sim_req *r, const char *ref)
{
	sim_snapshot **p = &s->snapshots, *sn;

	while (*p && !snapshot_named(*p, ref))
		p = &(*p)->next;
	if ((sn = *p) == NULL) {
		sim_reply_error(s, r, 404, "template '%s' not found", ref);
		return;
	}
	*p = sn->next;
	snapshot_free(sn);
	sim_reply_empty(r, 204);
}

/* The segments from seg[0] on, joined by '/' again (a snapshot ID holds one). */
static char *
joined(char **seg, int n)
{
	sk_buf b = SK_BUF_INIT(256);

	for (int i = 0; i < n; i++) {
		if (i > 0)
			sk_buf_append(&b, "/", 1);
		sk_buf_append(&b, seg[i], strlen(seg[i]));
	}
	return sk_buf_detach(&b);
}

/* ---- fork ---- */

static bool
fork_args(sim *s, sim_req *r, int64_t *count, int64_t *timeout)
{
	json_t *doc = sim_req_json(s, r, true), *c, *t;
	bool ok = false;

	if (doc == NULL)
		return false;
	c = json_object_get(doc, "count");
	t = json_object_get(doc, "timeout");
	if (c && !json_is_null(c) && !json_is_integer(c))
		sim_reply_error(s, r, 400, "validation error: count must be an integer");
	else if (t && !json_is_null(t) && !json_is_integer(t))
		sim_reply_error(s, r, 400, "validation error: timeout must be an integer");
	else if (json_is_integer(c) &&
	        (json_integer_value(c) < 1 || json_integer_value(c) > FORK_MAX))
		sim_reply_error(s, r, 400, "count must be between 1 and %d", FORK_MAX);
	else if (json_is_integer(t) &&
	        (json_integer_value(t) < 1 || json_integer_value(t) > MAX_TIMEOUT_S))
		sim_reply_error(s, r, 400, "timeout must be between 1 and %d", MAX_TIMEOUT_S);
	else
		ok = true;
	*count = json_is_integer(c) ? json_integer_value(c) : 1;
	*timeout = json_is_integer(t) ? json_integer_value(t) : FORK_DEFAULT_TIMEOUT_S;
	json_decref(doc);
	return ok;
}

static void
kv_copy(sim_kv *dst, const sim_kv *src)
{
	dst->n = src->n;
	dst->len = src->len;
	dst->data = src->data ? sk_malloc(src->len) : NULL;
	if (src->data)
		memcpy(dst->data, src->data, src->len);
}

/* One fork of src from its tree copy: a new running sandbox, or the
 * {code, message} a cap refused it with. */
static json_t *
fork_one(sim *s, sim_sandbox *src, sim_fs *tree, int32_t timeout_s, int64_t now)
{
	sim_req scratch = { 0 };
	sim_sandbox *sb;
	json_t *err;

	if (!sim_caps_admit(s, &scratch, now)) {
		err = json_loadb(scratch.resp, scratch.resp_len, 0, NULL);
		free(scratch.resp);
		return json_pack("{s:o}", "error", err ? err : json_object());
	}
	sb = sim_store_new(s, now);
	snprintf(sb->template_id, sizeof(sb->template_id), "%s", src->template_id);
	sb->cpu = src->cpu;
	sb->memory_mb = src->memory_mb;
	sb->disk_mb = src->disk_mb;
	sb->secure = src->secure;
	kv_copy(&sb->env, &src->env);
	kv_copy(&sb->init_env, &src->init_env);
	sb->fs = sim_fs_clone(tree);
	for (int i = 0; i < src->nmounts; i++) {
		sim_volume *v = volume_by_id(s, src->mounts[i].volume_id);
		if (v)
			add_mount(sb, v, src->mounts[i].path);
	}
	sb->timeout_s = timeout_s;
	sim_sandbox_resume(s, sb, now, timeout_s);
	sb->resumed_ms = 0;
	return json_pack("{s:o}", "sandbox", sim_json_sandbox(s, sb));
}

void
sim_fork(sim *s, sim_req *r, const char *id)
{
	int64_t count, timeout, now = sk_now_ms();
	sim_sandbox *src;
	sim_fs *tree;
	json_t *out;

	if (!fork_args(s, r, &count, &timeout))
		return;
	pthread_mutex_lock(&s->lock);
	if ((src = sim_store_get(s, id, now)) == NULL) {
		sim_reply_error(s, r, 404,
		        "Sandbox \"%s\" doesn't exist or you don't have access to it", id);
	} else if (src->state != SIM_RUNNING) {
		sim_reply_error(s, r, 409, "Sandbox \"%s\" is not running", id);
	} else {
		tree = tree_without_mounts(s, src);
		out = json_array();
		for (int64_t i = 0; i < count; i++)
			json_array_append_new(out, fork_one(s, src, tree, (int32_t)timeout, now));
		sim_fs_free(tree);
		sim_reply_json(s, r, 201, out);
	}
	pthread_mutex_unlock(&s->lock);
}

/* ---- routes ---- */

static bool
routed(sim *s, sim_req *r, int ep)
{
	r->ep = ep;
	return sim_precheck(s, r, true);
}

bool
sim_volumes_route(sim *s, sim_req *r, char **seg, int n)
{
	bool get = strcmp(r->method, "GET") == 0, post = strcmp(r->method, "POST") == 0;
	bool del = strcmp(r->method, "DELETE") == 0;

	if (n == 1 && strcmp(seg[0], "volumes") == 0 && (get || post)) {
		if (routed(s, r, SIM_EP_VOLUMES)) {
			pthread_mutex_lock(&s->lock);
			if (get)
				volume_list(s, r);
			else
				volume_create(s, r);
			pthread_mutex_unlock(&s->lock);
		}
		return true;
	}
	if (n == 2 && strcmp(seg[0], "volumes") == 0 && (get || del)) {
		if (routed(s, r, SIM_EP_VOLUMES)) {
			pthread_mutex_lock(&s->lock);
			volume_one(s, r, seg[1]);
			pthread_mutex_unlock(&s->lock);
		}
		return true;
	}
	if (n == 1 && strcmp(seg[0], "snapshots") == 0 && get) {
		if (routed(s, r, SIM_EP_SNAPSHOTS)) {
			pthread_mutex_lock(&s->lock);
			snapshot_list(s, r);
			pthread_mutex_unlock(&s->lock);
		}
		return true;
	}
	if (n >= 2 && strcmp(seg[0], "templates") == 0 && del) {
		if (routed(s, r, SIM_EP_SNAPSHOTS)) {
			char *ref = joined(seg + 1, n - 1);
			pthread_mutex_lock(&s->lock);
			snapshot_delete(s, r, ref);
			pthread_mutex_unlock(&s->lock);
			free(ref);
		}
		return true;
	}
	return false;
}

void
sim_volumes_clear(sim *s)
{
	while (s->volumes) {
		sim_volume *v = s->volumes;
		s->volumes = v->next;
		volume_free(v);
	}
	while (s->snapshots) {
		sim_snapshot *sn = s->snapshots;
		s->snapshots = sn->next;
		snapshot_free(sn);
	}
}
