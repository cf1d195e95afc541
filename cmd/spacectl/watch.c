/*
 * spacectl get -w: prints the UserSpaces, then one new row per changed object
 * as it happens (kubectl get --watch), polling the store by resourceVersion
 * every 500ms until Ctrl-C or --watch-timeout. With -o json one compact JSON
 * object per line; with -o yaml one document per change.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "spacectl.h"

#define WATCH_POLL_MS 500
/* Versions looked back at on each poll: concurrent writers can commit out of
 * order; objects already printed at that version are skipped. */
#define WATCH_LOOKBACK 100

static volatile sig_atomic_t watch_stop;

typedef struct watch_ctx {
	sk_store *st;
	char **names;
	size_t nnames;
	const sk_selector *sel;
	sk_output fmt;
	const sk_cli_get_output *out; /* the table's columns: -L, --show-labels, --no-headers */
	sk_userspace_list shown; /* the first table's rows, for its column widths */
	sk_kvlist seen; /* name -> last printed resourceVersion (decimal) */
	int64_t since;
	int failed; /* the last poll's error, reported once */
} watch_ctx;

static void
on_signal(int sig)
{
	(void)sig;
	watch_stop = 1;
}

static bool
wanted(const watch_ctx *w, const sk_userspace *us)
{
	if (w->sel && !sk_selector_matches(w->sel, &us->meta.labels))
		return false;
	for (size_t i = 0; i < w->nnames; i++) {
		if (strcmp(w->names[i], us->meta.name) == 0)
			return true;
	}
	return w->nnames == 0;
}

/* True (and remembered) when us is newer than what was printed for its name. */
static bool
fresh(watch_ctx *w, const sk_userspace *us)
{
	const char *prev = sk_kvlist_get(&w->seen, us->meta.name);
	char v[32];

	if (prev && strtoll(prev, NULL, 10) >= us->meta.resource_version)
		return false;
	snprintf(v, sizeof(v), "%lld", (long long)us->meta.resource_version);
	sk_kvlist_set(&w->seen, us->meta.name, v);
	return true;
}

static void
print_object(const watch_ctx *w, const sk_userspace *us)
{
	json_t *v = sk_cli_userspace_json(us);
	char *s;

	if (w->fmt == SK_OUTPUT_JSON) {
		s = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
		printf("%s\n", s ? s : "{}");
		free(s);
	} else {
		printf("---\n");
		sk_cli_print_value(v, SK_OUTPUT_YAML);
	}
	json_decref(v);
}

/* The table of rows (n of them), as get prints it; last_only: its last row. */
static void
print_table(const watch_ctx *w, sk_userspace *const *rows, size_t n, bool last_only)
{
	sk_cli_table_opts t = { w->fmt == SK_OUTPUT_WIDE, w->out->show_labels, w->out->no_headers,
		last_only, &w->out->label_columns, true, false };

	sk_cli_userspace_table_print(rows, n, &t);
}

/* One row, aligned with the first table. */
static void
print_change(const watch_ctx *w, sk_userspace *us)
{
	sk_userspace **rows;

	if (w->fmt == SK_OUTPUT_TABLE || w->fmt == SK_OUTPUT_WIDE) {
		rows = sk_calloc(w->shown.len + 1, sizeof(*rows));
		memcpy(rows, w->shown.items, w->shown.len * sizeof(*rows));
		rows[w->shown.len] = us;
		print_table(w, rows, w->shown.len + 1, true);
		free(rows);
	} else {
		print_object(w, us);
	}
	fflush(stdout);
}

static int
print_initial(watch_ctx *w)
{
	sk_userspace_list all = { NULL, 0, 0 };
	sk_error err;
	int rc;

	sk_error_clear(&err);
	if ((rc = sk_store_list(w->st, w->sel, &all, &err)) != 0) {
		sk_cli_errorf("%s", err.message);
		return sk_cli_exit_code(rc);
	}
	w->since = all.resource_version;
	w->shown.items = sk_calloc(all.len + 1, sizeof(*w->shown.items));
	for (size_t i = 0; i < all.len; i++) {
		if (wanted(w, all.items[i])) {
			fresh(w, all.items[i]);
			w->shown.items[w->shown.len++] = all.items[i];
		} else {
			sk_userspace_free(all.items[i]);
		}
	}
	free(all.items);
	if (w->fmt == SK_OUTPUT_TABLE || w->fmt == SK_OUTPUT_WIDE) {
		if (w->shown.len > 0)
			print_table(w, w->shown.items, w->shown.len, false);
	} else {
		for (size_t i = 0; i < w->shown.len; i++)
			print_object(w, w->shown.items[i]);
	}
	fflush(stdout);
	return SK_EXIT_OK;
}

static int
cmp_version(const void *a, const void *b)
{
	const sk_userspace *x = *(sk_userspace *const *)a, *y = *(sk_userspace *const *)b;

	return x->meta.resource_version < y->meta.resource_version    ? -1
	        : x->meta.resource_version > y->meta.resource_version ? 1
	                                                              : 0;
}

static void
poll_changes(watch_ctx *w)
{
	sk_userspace_list l = { NULL, 0, 0 };
	int64_t from = w->since > WATCH_LOOKBACK ? w->since - WATCH_LOOKBACK : 0;
	sk_error err;
	int rc;

	sk_error_clear(&err);
	rc = sk_store_list_since(w->st, from, &l, &err);
	if (rc != 0) {
		if (w->failed == 0)
			sk_cli_warnf("%s (retrying)", err.message);
		w->failed = rc;
		return;
	}
	w->failed = 0;
	if (l.len > 1)
		qsort(l.items, l.len, sizeof(*l.items), cmp_version);
	for (size_t i = 0; i < l.len; i++) {
		sk_userspace *us = l.items[i];
		if (us->meta.resource_version > w->since)
			w->since = us->meta.resource_version;
		if (wanted(w, us) && fresh(w, us))
			print_change(w, us);
	}
	sk_userspace_list_dispose(&l);
}

static void
sleep_ms(int64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	/* A signal ends the sleep early (no restart): Ctrl-C stops at once. */
	nanosleep(&ts, NULL);
}

int
sk_cli_get_watch(sk_store *st, char **names, size_t nnames, const sk_selector *sel,
        const sk_cli_get_output *out, int64_t timeout_ms)
{
	struct sigaction sa, old_int, old_term;
	int64_t deadline = sk_monotonic_ms() + timeout_ms;
	watch_ctx w;
	int rc;

	memset(&w, 0, sizeof(w));
	w.st = st;
	w.names = names;
	w.nnames = nnames;
	w.sel = sel;
	w.fmt = out->fmt;
	w.out = out;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	watch_stop = 0;
	rc = print_initial(&w);
	while (rc == SK_EXIT_OK && !watch_stop) {
		int64_t left = timeout_ms > 0 ? deadline - sk_monotonic_ms() : WATCH_POLL_MS;
		if (left <= 0)
			break;
		sleep_ms(left < WATCH_POLL_MS ? left : WATCH_POLL_MS);
		if (!watch_stop)
			poll_changes(&w);
	}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sk_userspace_list_dispose(&w.shown);
	sk_kvlist_dispose(&w.seen);
	return rc;
}
