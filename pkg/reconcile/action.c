/*
 * reconcile/action: plan options, the observed-state container, actions and
 * their one-line descriptions (spacectl plan), and the sandbox metadata that
 * every created sandbox carries.
 */
#include <stdlib.h>
#include <string.h>

#include "../api/config.h"
#include "../api/kvlist.h"
#include "../api/names.h"
#include "../api/network.h"
#include "../api/sandbox_values.h"
#include "../api/schema.h"
#include "../api/status.h"
#include "../api/userspace.h"
#include "observe.h"
#include "observe_int.h"
#include "options.h"
#include "plan.h"

void
sk_plan_options_init(sk_plan_options *o)
{
	memset(o, 0, sizeof(*o));
	o->sandbox_timeout_ms = sk_default_sandbox_timeout_ms;
	o->resume_grace_ms = 20 * 1000;
	o->create_grace_ms = 35 * 1000;
	o->resync_ms = 30 * 1000;
	o->short_requeue_ms = 2 * 1000;
	o->min_requeue_ms = 1000;
	o->probe = true;
	o->max_probes = 3;
	o->delete_orphans = false;
	o->orphan_grace_ms = 10 * 60 * 1000;
	o->probe_fresh_ms = 10 * 1000;
	o->sleep_margin_ms = 2 * 1000;
	o->evict_after_ms = 60 * 1000;
}

void
sk_plan_options_from_config(sk_plan_options *o, const sk_provider_config *pc, int64_t resync_ms)
{
	sk_plan_options_init(o);
	if (resync_ms > 0)
		o->resync_ms = resync_ms;
	/* The fast path trusts a healthy probe for about one resync: the keepers
	 * of active spaces are probed every resync. */
	o->probe_fresh_ms = o->resync_ms + o->resync_ms / 2;
	if (pc == NULL)
		return;
	if (pc->sandbox_timeout_ms > 0)
		o->sandbox_timeout_ms = pc->sandbox_timeout_ms;
	if (pc->request_timeout_ms > 0)
		o->create_grace_ms = pc->request_timeout_ms + 5000;
	o->deadline_slides = pc->type != SK_PROVIDER_E2B;
	o->network_live = pc->type == SK_PROVIDER_E2B;
	o->delete_orphans = pc->delete_orphans;
	if (pc->orphan_grace_ms > 0)
		o->orphan_grace_ms = pc->orphan_grace_ms;
	o->evict_after_ms = pc->evict_after_ms;
	o->markers = true;
	o->paused_retention_ms = pc->paused_retention_ms;
	o->snapshots = pc->type == SK_PROVIDER_E2B;
}

/* ---- observed ---- */

void
sk_observed_init(sk_observed *o)
{
	memset(o, 0, sizeof(*o));
}

void
sk_observed_dispose(sk_observed *o)
{
	if (o == NULL)
		return;
	sk_sandbox_list_dispose(&o->sandboxes);
	for (size_t i = 0; i < o->n_probes; i++)
		free(o->probes[i].sandbox_id);
	free(o->probes);
	memset(o, 0, sizeof(*o));
}

void
sk_observed_add(sk_observed *o, const sk_sandbox *sb)
{
	sk_sandbox_list *l = &o->sandboxes;

	for (size_t i = 0; i < l->len; i++) {
		if (strcmp(l->items[i].id, sb->id) == 0) {
			sk_sandbox_dispose(&l->items[i]);
			sk_sandbox_copy(&l->items[i], sb);
			return;
		}
	}
	l->items = sk_realloc(l->items, (l->len + 1) * sizeof(*l->items));
	memset(&l->items[l->len], 0, sizeof(*l->items));
	sk_sandbox_copy(&l->items[l->len], sb);
	l->len++;
}

void
sk_observed_add_probe(sk_observed *o, const char *id, bool made, sk_health h, int http_status,
        int64_t when_ms, int error_code)
{
	sk_probe *p;

	o->probes = sk_realloc(o->probes, (o->n_probes + 1) * sizeof(*o->probes));
	p = &o->probes[o->n_probes++];
	p->sandbox_id = sk_strdup(id);
	p->made = made;
	p->health = h;
	p->http_status = http_status;
	p->probed_ms = when_ms;
	p->error_code = error_code;
}

const sk_probe *
sk_observed_probe(const sk_observed *o, const char *id)
{
	for (size_t i = o->n_probes; i-- > 0;) {
		if (id != NULL && strcmp(o->probes[i].sandbox_id, id) == 0)
			return &o->probes[i];
	}
	return NULL;
}

/* ---- metadata ---- */

char *
sk_reconcile_meta_value(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	char *v;

	if (n > 256)
		n = 256;
	v = sk_strndup(s ? s : "", n);
	for (size_t i = 0; i < n; i++) {
		char c = v[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		        (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
		if (!ok)
			v[i] = '-';
	}
	return v;
}

static void
meta_set(sk_kvlist *out, const char *key, const char *value)
{
	char *v = sk_reconcile_meta_value(value);

	sk_kvlist_set(out, key, v);
	free(v);
}

void
sk_reconcile_sandbox_metadata(const sk_userspace *us, sk_kvlist *out)
{
	for (size_t i = 0; i < us->spec.metadata.len; i++)
		meta_set(out, us->spec.metadata.items[i].key, us->spec.metadata.items[i].value);
	meta_set(out, SK_META_USER_ID, us->spec.user_id);
	meta_set(out, SK_META_USERSPACE, us->meta.name);
	meta_set(out, SK_META_USERSPACE_UID, us->meta.uid);
	sk_kvlist_set(out, SK_META_MANAGED_BY, SK_MANAGED_BY_VALUE);
}

void
sk_reconcile_create_request(const sk_userspace *us, const sk_plan_options *opts, sk_kvlist *meta,
        sk_create_request *req)
{
	const sk_userspace_spec *s = &us->spec;

	sk_reconcile_sandbox_metadata(us, meta);
	if (sk_network_is_set(&s->network)) {
		char digest[17];
		sk_network_digest(&s->network, digest);
		sk_kvlist_set(meta, SK_META_NETWORK, digest);
	}
	memset(req, 0, sizeof(*req));
	req->template_id = sk_spec_template(s->template_id);
	req->timeout_ms = sk_plan_ttl(us, opts);
	req->auto_pause = s->on_timeout == SK_ON_TIMEOUT_PAUSE;
	req->auto_resume = s->auto_resume;
	req->cpu_count = s->cpu_count;
	req->memory_mb = s->memory_mb;
	req->metadata = meta;
	req->env = &s->env;
	req->network = &s->network;
}

/* ---- actions ---- */

static void
action_dispose(sk_action *a)
{
	free(a->sandbox_id);
	free(a->template_id);
	free(a->fork_from);
	free(a->snapshot_id);
	sk_kvlist_dispose(&a->metadata);
	sk_kvlist_dispose(&a->env);
	sk_network_dispose(&a->network);
	free(a->event_type);
	free(a->reason);
	free(a->message);
}

void
sk_plan_result_dispose(sk_plan_result *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->n_actions; i++)
		action_dispose(&r->actions[i]);
	free(r->actions);
	sk_userspace_status_dispose(&r->next);
	free(r->wait_message);
	memset(r, 0, sizeof(*r));
}

const char *
sk_wake_cause_phrase(sk_wake_cause w)
{
	switch (w) {
	case SK_WAKE_NONE: return "";
	case SK_WAKE_CONNECT: return "a connect";
	case SK_WAKE_ARCHIVE: return "the archive";
	case SK_WAKE_MIGRATION: return "a migration";
	case SK_WAKE_SNAPSHOT: return "a snapshot";
	}
	return "";
}

const char *
sk_action_type_name(sk_action_type t)
{
	switch (t) {
	case SK_ACTION_CREATE: return "create";
	case SK_ACTION_CONNECT: return "connect";
	case SK_ACTION_PAUSE: return "pause";
	case SK_ACTION_KILL: return "kill";
	case SK_ACTION_SET_TIMEOUT: return "set-timeout";
	case SK_ACTION_BIND: return "bind";
	case SK_ACTION_REMOVE_FINALIZER: return "remove-finalizer";
	case SK_ACTION_EVENT: return "event";
	case SK_ACTION_INIT_ENV: return "init-env";
	case SK_ACTION_WRITE_MARKER: return "write-marker";
	case SK_ACTION_SET_NETWORK: return "set-network";
	case SK_ACTION_ARCHIVE: return "archive";
	case SK_ACTION_RESTORE: return "restore";
	case SK_ACTION_PURGE_ARCHIVE: return "purge-archive";
	case SK_ACTION_DELETE_SNAPSHOT: return "delete-snapshot";
	case SK_ACTION_SNAPSHOT: return "snapshot";
	}
	return "?";
}

const char *
sk_kill_reason_name(sk_kill_reason r)
{
	switch (r) {
	case SK_KILL_NONE: return "";
	case SK_KILL_DUPLICATE: return "Duplicate";
	case SK_KILL_REPLACE: return "Replace";
	case SK_KILL_DELETE: return "Delete";
	case SK_KILL_ORPHAN: return "Orphan";
	case SK_KILL_ARCHIVED: return "Archived";
	}
	return "?";
}

bool
sk_action_is_mutating(const sk_action *a)
{
	return a->type == SK_ACTION_CREATE || a->type == SK_ACTION_CONNECT ||
	        a->type == SK_ACTION_PAUSE || a->type == SK_ACTION_KILL ||
	        a->type == SK_ACTION_INIT_ENV || a->type == SK_ACTION_WRITE_MARKER ||
	        a->type == SK_ACTION_SET_NETWORK || a->type == SK_ACTION_ARCHIVE ||
	        a->type == SK_ACTION_RESTORE || a->type == SK_ACTION_DELETE_SNAPSHOT ||
	        a->type == SK_ACTION_SNAPSHOT;
}

static const char *
target(const sk_action *a)
{
	return a->sandbox_id ? a->sandbox_id : "the new sandbox";
}

static void
describe_create(const sk_action *a, sk_buf *out)
{
	char d[32];

	sk_duration_format(a->timeout_ms, d, sizeof(d));
	if (a->fork_from != NULL)
		sk_buf_printf(out, "fork the sandbox of userspace %s (timeout %s", a->fork_from, d);
	else
		sk_buf_printf(out, "create sandbox (template %s, timeout %s", a->template_id, d);
	if (a->cpu_count > 0)
		sk_buf_printf(out, ", cpu %d", a->cpu_count);
	if (a->memory_mb > 0)
		sk_buf_printf(out, ", memory %dMB", a->memory_mb);
	sk_buf_printf(out, ", on timeout %s)", a->auto_pause ? "pause" : "kill");
}

void
sk_action_describe(const sk_action *a, sk_buf *out)
{
	char d[32];

	sk_duration_format(a->timeout_ms, d, sizeof(d));
	switch (a->type) {
	case SK_ACTION_CREATE: describe_create(a, out); break;
	case SK_ACTION_CONNECT: sk_buf_printf(out, "resume %s (timeout %s)", target(a), d); break;
	case SK_ACTION_PAUSE: sk_buf_printf(out, "pause %s", target(a)); break;
	case SK_ACTION_KILL:
		sk_buf_printf(out, "kill %s (%s)", target(a), sk_kill_reason_name(a->why));
		break;
	case SK_ACTION_SET_TIMEOUT:
		sk_buf_printf(out, "set timeout of %s to %s", target(a), d);
		break;
	case SK_ACTION_BIND: sk_buf_printf(out, "bind %s in status", target(a)); break;
	case SK_ACTION_REMOVE_FINALIZER:
		sk_buf_printf(out, "remove finalizer %s", SK_FINALIZER);
		break;
	case SK_ACTION_EVENT:
		sk_buf_printf(out, "event %s %s: %s", a->event_type, a->reason,
		        a->message ? a->message : "");
		break;
	case SK_ACTION_INIT_ENV: /* names only: values never leave the plan */
		sk_buf_printf(out, "re-assert env of %s (%zu variables)", target(a), a->env.len);
		break;
	case SK_ACTION_WRITE_MARKER:
		sk_buf_printf(out, "write the workspace marker in %s", target(a));
		break;
	case SK_ACTION_ARCHIVE:
		sk_buf_printf(
		        out, "archive the workspace of %s (manifest last, verified)", target(a));
		break;
	case SK_ACTION_RESTORE:
		sk_buf_printf(out, "restore the workspace into %s from the archive", target(a));
		break;
	case SK_ACTION_PURGE_ARCHIVE:
		sk_buf_printf(out, "delete every archive of the user (deletionPolicy Delete)");
		break;
	case SK_ACTION_DELETE_SNAPSHOT:
		sk_buf_printf(out, "delete snapshot %s", a->snapshot_id ? a->snapshot_id : "-");
		break;
	case SK_ACTION_SNAPSHOT:
		sk_buf_printf(out, "take a snapshot of %s (spec.snapshots.schedule)", target(a));
		break;
	case SK_ACTION_SET_NETWORK: {
		char net[1024];
		sk_network_format(&a->network, net, sizeof(net));
		sk_buf_printf(out, "set network of %s: %s", target(a), net);
		break;
	}
	}
}
