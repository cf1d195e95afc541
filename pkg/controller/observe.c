/*
 * observe: the observed state. Every resync period each provider's managed
 * sandboxes (managed_by=spacekeeper, every page, running and paused) are
 * listed once, grouped by user_id for the workers, checked for orphans
 * (sk_plan_orphans: reported, killed only with deleteOrphans after the
 * grace), and every UserSpace key is enqueued (level-triggered resync). A
 * stop abandons a list in progress (the clients abort at once) and enqueues
 * nothing. With replicas, only the holder of shard 0 lists and the others
 * read its shared list (share.c).
 */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../api/names.h"
#include "controller_int.h"

/* The longest wait between two reads of the shared list. */
#define SHARED_POLL_MAX_MS 5000

static void
list_free_cb(void *p)
{
	sk_sandbox_list_dispose(p);
	free(p);
}

void
sk_ctl_views_init(sk_controller *c)
{
	sk_ctl_views *v = &c->views;

	pthread_mutex_init(&v->mu, NULL);
	atomic_init(&v->asked, false);
	v->prov = sk_calloc(c->n_prov + 1, sizeof(*v->prov));
	for (size_t i = 0; i < c->n_prov; i++)
		v->prov[i].by_user = sk_strmap_new(list_free_cb);
}

void
sk_ctl_views_dispose(sk_controller *c)
{
	sk_ctl_views *v = &c->views;

	for (size_t i = 0; v->prov && i < c->n_prov; i++) {
		sk_strmap_free(v->prov[i].by_user);
		sk_kvlist_dispose(&v->prov[i].orphan_seen);
	}
	free(v->prov);
	v->prov = NULL;
	pthread_mutex_destroy(&v->mu);
}

/* Keeps only the metadata the workers read from a view (managed_by,
 * user_id): with 10,000 sandboxes the rest is megabytes held for nothing. */
static void
prune_metadata(sk_sandbox *sb)
{
	sk_kvlist kept = { 0 };
	const char *managed = sk_kvlist_get(&sb->metadata, SK_META_MANAGED_BY);
	const char *user = sk_kvlist_get(&sb->metadata, SK_META_USER_ID);

	if (managed != NULL)
		sk_kvlist_set(&kept, SK_META_MANAGED_BY, managed);
	if (user != NULL)
		sk_kvlist_set(&kept, SK_META_USER_ID, user);
	sk_kvlist_dispose(&sb->metadata);
	sb->metadata = kept;
}

/* Moves *sb (its owned strings) to the end of l and leaves *sb empty. */
static void
list_move_in(sk_sandbox_list *l, sk_sandbox *sb)
{
	prune_metadata(sb);
	l->items = sk_realloc(l->items, (l->len + 1) * sizeof(*l->items));
	l->items[l->len++] = *sb;
	memset(sb, 0, sizeof(*sb));
}

/* No copies: with 10,000 sandboxes a copy is ~10 MB more at peak. */
sk_strmap *
sk_ctl_group_by_user(sk_sandbox_list *all)
{
	sk_strmap *m = sk_strmap_new(list_free_cb);

	for (size_t i = 0; i < all->len; i++) {
		sk_sandbox *sb = &all->items[i];
		const char *uid = sk_kvlist_get(&sb->metadata, SK_META_USER_ID);
		sk_sandbox_list *l;
		if (!uid || sb->state == SK_SANDBOX_GONE)
			continue;
		l = sk_strmap_get(m, uid);
		if (!l) {
			l = sk_calloc(1, sizeof(*l));
			sk_strmap_put(m, uid, l);
		}
		list_move_in(l, sb);
	}
	return m;
}

static bool
has_user(const char *user_id, void *arg)
{
	return sk_informer_has_user(arg, user_id);
}

static void
orphan_event(sk_controller *c, const char *reason, const sk_orphan *o, const char *prov)
{
	char msg[512];

	snprintf(msg, sizeof(msg), "sandbox %s (provider %s, user_id %s) has no UserSpace",
	        o->sandbox_id, prov, o->user_id ? o->user_id : "");
	sk_store_event(c->store, SK_STORE_ORPHANS, NULL, "Warning", reason, msg, NULL);
}

static void
kill_orphan(sk_controller *c, int i, const sk_orphan *o)
{
	const char *prov = c->cfg->providers[i].name;
	sk_error err = { 0 };
	int rc = sk_sandbox_kill(c->views.clients[i], o->sandbox_id, &err);

	if (rc == 0) {
		sk_ctl_log(c, SK_LOG_INFO, "orphan deleted", "provider=%s sandbox=%s user_id=%s",
		        prov, o->sandbox_id, o->user_id ? o->user_id : "");
		orphan_event(c, "OrphanDeleted", o, prov);
	} else {
		sk_ctl_log(c, SK_LOG_WARN, "orphan delete failed",
		        "provider=%s sandbox=%s error=\"%s\"", prov, o->sandbox_id, err.message);
	}
}

static void
handle_orphans(sk_controller *c, int i, const sk_sandbox_list *all, int64_t now)
{
	const sk_provider_config *pc = &c->cfg->providers[i];
	sk_orphan_list ol = { 0 };
	sk_plan_options o;
	char l[160];

	sk_plan_options_from_config(&o, pc, c->cfg->resync_ms);
	/* Orphans are the holder of shard 0's, so replicas do not each report
	 * (or kill) them. */
	if (!sk_ctl_shard_valid(c, 0))
		return;
	if (sk_plan_orphans(all, has_user, c->inf, &c->views.prov[i].orphan_seen, now, &o, &ol) !=
	        0)
		return;
	for (size_t k = 0; k < ol.len; k++) {
		const sk_orphan * or = &ol.items[k];
		if (or->first_seen_ms == now) {
			sk_ctl_log(c, SK_LOG_WARN, "orphan sandbox",
			        "provider=%s sandbox=%s user_id=%s delete=%s", pc->name,
			        or->sandbox_id, or->user_id ? or->user_id : "",
			        pc->delete_orphans ? "after-grace" : "never");
			orphan_event(c, "Orphan", or, pc->name);
		}
		if (or->kill)
			kill_orphan(c, i, or);
	}
	snprintf(l, sizeof(l), "provider=\"%s\"", pc->name);
	sk_metrics_set(c->metrics, "spacekeeper_orphan_sandboxes", l, (double)ol.len);
	sk_orphan_list_dispose(&ol);
}

/* Replaces provider i's view; fresh NULL: the look failed, the old view
 * stays but is marked invalid. */
static void
install_view(sk_controller *c, int i, sk_strmap *fresh, int64_t listed_ms, size_t n)
{
	sk_strmap *old = NULL;

	pthread_mutex_lock(&c->views.mu);
	if (fresh != NULL) {
		old = c->views.prov[i].by_user;
		c->views.prov[i].by_user = fresh;
		c->views.prov[i].listed_ms = listed_ms;
		c->views.prov[i].n_sandboxes = n;
	}
	c->views.prov[i].valid = fresh != NULL;
	pthread_mutex_unlock(&c->views.mu);
	sk_strmap_free(old);
}

static void
set_observed(sk_controller *c, const char *prov, size_t n)
{
	char l[160];

	snprintf(l, sizeof(l), "provider=\"%s\"", prov);
	sk_metrics_set(c->metrics, "spacekeeper_observed_sandboxes", l, (double)n);
}

/* This replica's own list of provider i (and, as the holder of shard 0, its
 * orphans and the shared list). */
static void
list_provider(sk_controller *c, int i)
{
	const char *prov = c->cfg->providers[i].name;
	sk_kvlist match = { 0 };
	sk_sandbox_list all = { 0 };
	sk_error err = { 0 };
	sk_strmap *fresh = NULL;
	int64_t t = sk_now_ms();
	char l[160];
	int rc;

	sk_kvlist_set(&match, SK_META_MANAGED_BY, SK_MANAGED_BY_VALUE);
	rc = sk_sandbox_list_all(c->views.clients[i], &match, &all, &err);
	snprintf(
	        l, sizeof(l), "provider=\"%s\",result=\"%s\"", prov, rc == 0 ? "success" : "error");
	sk_metrics_add(c->metrics, "spacekeeper_provider_list_total", l, 1);
	if (rc == 0) {
		set_observed(c, prov, all.len);
		handle_orphans(c, i, &all, t);
		if (sk_ctl_share_publishes(c))
			sk_ctl_share_publish(c, i, &all, t);
		sk_ctl_log(c, SK_LOG_DEBUG, "provider listed", "provider=%s sandboxes=%zu", prov,
		        all.len);
		fresh = sk_ctl_group_by_user(&all); /* empties the items of all */
	}
	install_view(c, i, fresh, t, all.len);
	c->views.prov[i].looked_mono = sk_monotonic_ms();
	if (rc != 0 && sk_ctl_stopping(c))
		sk_ctl_log(c, SK_LOG_INFO, "provider list abandoned", "provider=%s error=\"%s\"",
		        prov, err.message);
	else if (rc != 0)
		sk_ctl_log(c, SK_LOG_WARN, "provider list failed", "provider=%s error=\"%s\"", prov,
		        err.message);
	sk_sandbox_list_dispose(&all);
	sk_kvlist_dispose(&match);
}

/* The list another replica shared (share.c): 1 when the view was replaced,
 * 0 when nothing newer was there, -1 when none fresh could be read. */
static int
read_shared(sk_controller *c, int i, bool force)
{
	sk_ctl_shared_list sl;
	int64_t have;
	int rc;

	pthread_mutex_lock(&c->views.mu);
	have = c->views.prov[i].valid ? c->views.prov[i].listed_ms : 0;
	pthread_mutex_unlock(&c->views.mu);
	rc = sk_ctl_share_read(c, i, have, force, &sl);
	if (rc == 1) {
		set_observed(c, c->cfg->providers[i].name, sl.total);
		install_view(c, i, sk_ctl_group_by_user(&sl.sandboxes), sl.listed_ms, sl.total);
		sk_sandbox_list_dispose(&sl.sandboxes);
	}
	return rc;
}

static int64_t
resync_period(sk_controller *c)
{
	return c->cfg->resync_ms > 0 ? c->cfg->resync_ms : 30000;
}

/* How long until this replica's own list of provider i is due (<= 0: now). */
static int64_t
list_due_in(sk_controller *c, int i)
{
	int64_t last = c->views.prov[i].looked_mono;

	return last == 0 ? 0 : last + resync_period(c) - sk_monotonic_ms();
}

/* One look at provider i: the shared list, else (or as the lister) our own
 * when due. true when its view was renewed. */
static bool
look_at(sk_controller *c, int i, bool force)
{
	if (!sk_ctl_share_lists_self(c)) {
		int rc = read_shared(c, i, force);
		if (rc >= 0)
			return rc == 1;
	}
	if (!force && list_due_in(c, i) > 0)
		return false;
	list_provider(c, i);
	return true;
}

/* How long the observer sleeps: until our own next list is due, or (while
 * another replica lists) a quarter period, at most SHARED_POLL_MAX_MS, to
 * pick its shared list up soon after it is written. */
static int64_t
next_look_in(sk_controller *c)
{
	int64_t wait = resync_period(c);

	if (!sk_ctl_share_lists_self(c)) /* a missing shared list is noticed there too */
		return wait / 4 > SHARED_POLL_MAX_MS ? SHARED_POLL_MAX_MS : wait / 4;
	for (size_t i = 0; i < c->n_prov; i++) {
		int64_t due = list_due_in(c, (int)i);
		if (due < wait)
			wait = due;
	}
	return wait < 0 ? 0 : wait;
}

typedef struct owned_names {
	sk_controller *c;
	char **names;
	size_t len;
} owned_names;

static void
collect_owned(const sk_informer_entry *e, void *payload)
{
	owned_names *o = payload;

	if (e->user_id && !sk_ctl_may_act(o->c, e->user_id))
		return;
	o->names = sk_realloc(o->names, (o->len + 1) * sizeof(*o->names));
	o->names[o->len++] = sk_strdup(e->name);
}

int64_t
sk_ctl_observe_all(sk_controller *c, bool force)
{
	owned_names o = { c, NULL, 0 };
	bool renewed = false;

	for (size_t i = 0; i < c->n_prov && !sk_ctl_stopping(c); i++)
		renewed = look_at(c, (int)i, force) || renewed;
	if (sk_ctl_stopping(c)) /* no new work: the list was abandoned */
		return 0;
	if (renewed) {
		/* The keys of the shards this replica holds. Keys whose own
		 * requeue falls within the next period are left to it. */
		sk_informer_foreach(c->inf, collect_owned, &o);
		for (size_t i = 0; i < o.len; i++)
			sk_workqueue_add_resync(c->q, o.names[i], c->cfg->resync_ms);
		sk_informer_names_free(o.names, o.len);
		/* A pass replaces every list and many cached objects: free
		 * pages inside the heap go back to the system instead of
		 * staying resident. */
		malloc_trim(0);
	}
	return next_look_in(c);
}

void
sk_ctl_list_view(
        sk_controller *c, int prov, const char *user_id, sk_sandbox_list *list, sk_list_view *view)
{
	const sk_prov_view *v = &c->views.prov[prov];
	const sk_sandbox_list *src;

	memset(view, 0, sizeof(*view));
	pthread_mutex_lock(&c->views.mu);
	view->valid = v->valid;
	view->listed_ms = v->listed_ms;
	src = user_id ? sk_strmap_get(v->by_user, user_id) : NULL;
	if (src && src->len > 0) {
		list->items = sk_calloc(src->len, sizeof(*list->items));
		for (size_t i = 0; i < src->len; i++)
			sk_sandbox_copy(&list->items[i], &src->items[i]);
		list->len = src->len;
		view->for_user = list;
	}
	pthread_mutex_unlock(&c->views.mu);
}

/* ---- the resync thread ---- */

/* Sleeps ms unless stopped or asked for a pass (*asked); false once stopping. */
static bool
observer_sleep(sk_controller *c, int64_t ms, bool *asked)
{
	int64_t deadline = sk_monotonic_ms() + ms;
	bool go;

	pthread_mutex_lock(&c->mu);
	while (!sk_ctl_stopping(c) && !atomic_load(&c->views.asked) && sk_monotonic_ms() < deadline)
		sk_cond_wait_ms(&c->wake, &c->mu, 200);
	*asked = atomic_exchange(&c->views.asked, false);
	go = !sk_ctl_stopping(c);
	pthread_mutex_unlock(&c->mu);
	return go;
}

void
sk_ctl_observe_soon(sk_controller *c)
{
	pthread_mutex_lock(&c->mu);
	atomic_store(&c->views.asked, true);
	pthread_cond_broadcast(&c->wake);
	pthread_mutex_unlock(&c->mu);
}

static void *
observer_main(void *arg)
{
	sk_controller *c = arg;
	int64_t wait = next_look_in(c);
	bool asked;

	while (observer_sleep(c, wait, &asked)) {
		wait = sk_ctl_observe_all(c, asked);
		/* the SpaceQuotas' use, more often than the lists */
		sk_ctl_quotas_refresh(c);
		if (wait > SK_CTL_QUOTA_REFRESH_MS)
			wait = SK_CTL_QUOTA_REFRESH_MS;
	}
	return NULL;
}

int
sk_ctl_observer_start(sk_controller *c, sk_error *err)
{
	if (pthread_create(&c->views.thread, NULL, observer_main, c) != 0)
		return sk_error_set(err, SK_ERROR, "controller: cannot start the observer");
	c->views.running = true;
	return 0;
}

void
sk_ctl_observer_stop(sk_controller *c)
{
	if (!c->views.running)
		return;
	pthread_join(c->views.thread, NULL);
	c->views.running = false;
}
