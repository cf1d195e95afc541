/*
 * controller/quota: the SpaceQuotas (quota_int.h says what). Reading and
 * counting run on the observer thread; the set they make replaces the
 * current one under qs->mu (a leaf), and a reader holds a counted
 * reference instead of the lock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../store/quota.h"
#include "../store/store.h"
#include "ground_int.h"
#include "quota_int.h"
#include "views_int.h"

struct sk_ctl_quotas {
	pthread_mutex_t mu;
	sk_ctl_quota_set *cur;
	char **published; /* the quota names with metrics series (to zero when deleted) */
	size_t n_published;
};

static sk_ctl_quota_set *
set_new(void)
{
	sk_ctl_quota_set *s = sk_calloc(1, sizeof(*s));

	s->refs = 1;
	return s;
}

static void
set_free(sk_ctl_quota_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		sk_spacequota_free(s->items[i]);
	free(s->items);
	free(s);
}

sk_ctl_quotas *
sk_ctl_quotas_new(sk_controller *c)
{
	sk_ctl_quotas *qs = sk_calloc(1, sizeof(*qs));

	pthread_mutex_init(&qs->mu, NULL);
	qs->cur = set_new();
	sk_metrics_declare(c->metrics, SK_CTL_METRIC_QUOTA_USED, SK_METRIC_GAUGE,
	        "What a SpaceQuota's tenant uses, by quota and resource (spaces, running)");
	sk_metrics_declare(c->metrics, SK_CTL_METRIC_QUOTA_HARD, SK_METRIC_GAUGE,
	        "A SpaceQuota's limit (spec.hard), by quota and resource; absent: not limited");
	return qs;
}

void
sk_ctl_quotas_free(sk_ctl_quotas *qs)
{
	if (qs == NULL)
		return;
	set_free(qs->cur);
	sk_strv_free(qs->published, qs->n_published);
	pthread_mutex_destroy(&qs->mu);
	free(qs);
}

sk_ctl_quota_set *
sk_ctl_quotas_get(sk_controller *c)
{
	sk_ctl_quotas *qs = c->quotas;
	sk_ctl_quota_set *s;

	pthread_mutex_lock(&qs->mu);
	s = qs->cur;
	s->refs++;
	pthread_mutex_unlock(&qs->mu);
	return s;
}

void
sk_ctl_quotas_put(sk_controller *c, sk_ctl_quota_set *s)
{
	sk_ctl_quotas *qs = c->quotas;
	bool last;

	pthread_mutex_lock(&qs->mu);
	last = --s->refs == 0;
	pthread_mutex_unlock(&qs->mu);
	if (last)
		set_free(s);
}

/* ---- counting ---- */

typedef struct name_list {
	char **names;
	size_t len;
} name_list;

static void
collect_name(const sk_informer_entry *e, void *payload)
{
	name_list *l = payload;

	l->names = sk_realloc(l->names, (l->len + 1) * sizeof(*l->names));
	l->names[l->len++] = sk_strdup(e->name);
}

static bool
phase_running(sk_phase p)
{
	return p == SK_PHASE_CREATING || p == SK_PHASE_RESUMING || p == SK_PHASE_RUNNING ||
	        p == SK_PHASE_DEGRADED;
}

/* used_spaces and used_running of every quota of s, from the cache. */
static void
count_use(sk_controller *c, sk_ctl_quota_set *s)
{
	name_list l = { NULL, 0 };

	for (size_t i = 0; i < s->n; i++)
		s->items[i]->used_spaces = s->items[i]->used_running = 0;
	sk_informer_foreach(c->inf, collect_name, &l);
	for (size_t j = 0; j < l.len; j++) {
		sk_userspace *us = NULL;
		if (sk_informer_get(c->inf, l.names[j], &us) != 0)
			continue;
		for (size_t i = 0; i < s->n && us->meta.deletion_ms == 0; i++) {
			if (!sk_spacequota_matches(s->items[i], &us->meta.labels))
				continue;
			s->items[i]->used_spaces++;
			s->items[i]->used_running += phase_running(us->status.phase);
		}
		sk_userspace_free(us);
	}
	sk_informer_names_free(l.names, l.len);
}

static void
publish_one(sk_controller *c, const sk_spacequota *q, bool gone)
{
	static const char *const res[] = { SK_QUOTA_SPACES, SK_QUOTA_RUNNING };
	char name[128], l[256];

	sk_metrics_escape(q->meta.name, name, sizeof(name));
	for (int r = 0; r < 2; r++) {
		int64_t used = r == 0 ? q->used_spaces : q->used_running;
		int64_t hard = r == 0 ? q->hard_spaces : q->hard_running;
		snprintf(l, sizeof(l), "quota=\"%s\",resource=\"%s\"", name, res[r]);
		sk_metrics_set(c->metrics, SK_CTL_METRIC_QUOTA_USED, l, gone ? 0 : (double)used);
		if (hard >= 0 || gone)
			sk_metrics_set(
			        c->metrics, SK_CTL_METRIC_QUOTA_HARD, l, gone ? 0 : (double)hard);
	}
}

/* The metrics of s; a quota no longer there has its series zeroed. */
static void
publish(sk_controller *c, const sk_ctl_quota_set *s)
{
	sk_ctl_quotas *qs = c->quotas;

	for (size_t k = 0; k < qs->n_published; k++) {
		bool still = false;
		for (size_t i = 0; i < s->n && !still; i++)
			still = strcmp(s->items[i]->meta.name, qs->published[k]) == 0;
		if (!still) {
			sk_spacequota gone = { 0 };
			gone.meta.name = qs->published[k];
			publish_one(c, &gone, true);
		}
	}
	sk_strv_free(qs->published, qs->n_published);
	qs->published = sk_calloc(s->n + 1, sizeof(char *));
	qs->n_published = s->n;
	for (size_t i = 0; i < s->n; i++) {
		qs->published[i] = sk_strdup(s->items[i]->meta.name);
		publish_one(c, s->items[i], false);
	}
}

/* Writes status.used of the quotas whose use changed since the store's copy. */
static void
write_status(sk_controller *c, sk_ctl_quota_set *s, const int64_t *was_spaces,
        const int64_t *was_running, const bool *had)
{
	for (size_t i = 0; i < s->n; i++) {
		sk_spacequota *q = s->items[i];
		sk_error err;
		if (had[i] && was_spaces[i] == q->used_spaces && was_running[i] == q->used_running)
			continue;
		sk_error_clear(&err);
		q->has_used = true;
		q->updated_ms = sk_now_ms();
		if (sk_store_quota_write_status(c->store, q, &err) != 0 &&
		        err.code != SK_ENOTFOUND) {
			sk_ctl_store_error(c, "quota_status");
			sk_ctl_log(c, SK_LOG_WARN, "quota status not written",
			        "spacequota=%s err=%s", q->meta.name, err.message);
		}
	}
}

void
sk_ctl_quotas_refresh(sk_controller *c)
{
	sk_ctl_quotas *qs = c->quotas;
	sk_spacequota_list l;
	sk_ctl_quota_set *s, *old;
	int64_t *was_spaces, *was_running;
	bool *had;
	sk_error err;

	sk_error_clear(&err);
	if (sk_store_quota_list(c->store, &l, &err) != 0) {
		sk_ctl_store_error(c, "quota_list");
		return; /* the last set stays */
	}
	s = set_new();
	s->items = l.items;
	s->n = l.len;
	was_spaces = sk_calloc(s->n + 1, sizeof(int64_t));
	was_running = sk_calloc(s->n + 1, sizeof(int64_t));
	had = sk_calloc(s->n + 1, sizeof(bool));
	for (size_t i = 0; i < s->n; i++) {
		was_spaces[i] = s->items[i]->used_spaces;
		was_running[i] = s->items[i]->used_running;
		had[i] = s->items[i]->has_used;
	}
	count_use(c, s);
	if (sk_ctl_share_lists_self(c)) /* one writer of status among the replicas */
		write_status(c, s, was_spaces, was_running, had);
	publish(c, s);
	pthread_mutex_lock(&qs->mu);
	old = qs->cur;
	qs->cur = s;
	pthread_mutex_unlock(&qs->mu);
	sk_ctl_quotas_put(c, old);
	free(was_spaces);
	free(was_running);
	free(had);
}
