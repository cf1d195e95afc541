/*
 * connectload: the connect load of `make bench`'s "day of use" scenario
 * (test/bench/dayofuse.sh). Calls spacekeeper's connect API
 * (GET /v1/users/USERID/sandbox) from C concurrent keep-alive callers
 * (libcurl multi) and records each answer's latency by its "path" (fast,
 * wake, create, replace, reconcile, ...). Users are PREFIX + a zero-padded
 * number (b00000 ...). At most one connect per user is in flight.
 *
 *   --mode day    --active F of the users are in a session at any moment;
 *                 a session lasts --session LO-HI seconds, its connects come
 *                 every --interval LO-HI seconds; when one ends another user
 *                 (chosen at random) starts one. Prints the time a perfect
 *                 sleeper would run: the union, per user, of [session start,
 *                 last answer + --idle-timeout], within the run.
 *   --mode fast   every user connects again as soon as it is answered.
 *   --rate R      (any mode) starts at most R connects a second in all.
 *   --log-slow MS prints each connect slower than MS ms on stderr.
 *   --mode warm   every user connects (every 200 ms) until it is answered
 *                 by the fast path; exits 1 if some never were.
 *
 * With --sim URL, a thread samples the simulator's running sandboxes
 * (/_sim/stats "running") every 250 ms and prints their integral over the
 * run: running-sandbox-seconds.
 *
 *   connectload --url http://127.0.0.1:PORT --users N [--prefix b] [--digits 5]
 *               [--mode day|fast|warm] [-c 64] [--duration S] [--active 0.1]
 *               [--session 10-30] [--interval 0.5-3] [--idle-timeout S]
 *               [--rate R] [--sim URL] [--seed N]
 */
#include <curl/curl.h>
#include <getopt.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "util/util.h"

#define MAX_CONC 512
#define NS 1000000000LL
#define N_PATHS 8

enum mode { MODE_DAY, MODE_FAST, MODE_WARM };

struct opts {
	const char *url, *prefix, *sim;
	int mode, conc, digits;
	long users;
	double duration, active, sess_lo, sess_hi, iv_lo, iv_hi, idle_timeout, rate, log_slow;
	uint64_t seed;
};

struct user {
	char id[64];
	bool active, busy, done;
	int64_t due, end; /* ns: next connect, end of the session */
	int64_t start, last; /* ns: session start, last answer */
	int64_t covered; /* ns: end of the reference time counted so far */
};

struct slot {
	CURL *easy;
	char url[512];
	sk_buf body;
	long user;
	int64_t t0;
};

/* Latencies (ms) by the answer's "path"; slot 0 collects answers without one. */
struct paths {
	char name[N_PATHS][24];
	double *ms[N_PATHS];
	size_t n[N_PATHS], cap[N_PATHS];
	int count;
};

struct run {
	struct opts *o;
	struct user *u;
	struct paths p;
	int64_t t0, deadline;
	long n_active, sessions, started, connects, errors;
	long status[600];
	int64_t reference; /* ns */
	uint64_t rng;
};

struct sampler {
	const char *url;
	pthread_t thread;
	pthread_mutex_t mu;
	bool stop;
	double integral; /* sandbox-seconds */
	long samples, failures;
	int64_t t0, t1;
};

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

static double
uniform(uint64_t *s, double lo, double hi)
{
	uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ULL;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return lo + (hi - lo) * (double)((x * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

static int64_t
secs_ns(double s)
{
	return (int64_t)(s * (double)NS);
}

/* ---- latencies ---- */

static int
path_index(struct paths *p, const char *name)
{
	for (int i = 0; i < p->count; i++) {
		if (strcmp(p->name[i], name) == 0)
			return i;
	}
	if (p->count == N_PATHS)
		return 0;
	snprintf(p->name[p->count], sizeof(p->name[0]), "%s", name);
	return p->count++;
}

static void
path_add(struct paths *p, const char *name, double ms)
{
	int i = path_index(p, name);

	if (p->n[i] == p->cap[i]) {
		p->cap[i] = p->cap[i] ? p->cap[i] * 2 : 1024;
		p->ms[i] = sk_realloc(p->ms[i], p->cap[i] * sizeof(double));
	}
	p->ms[i][p->n[i]++] = ms;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank. */
static double
quantile(const double *v, size_t n, double q)
{
	size_t k = (size_t)(q * (double)n + 0.999999);

	return v[k == 0 ? 0 : (k > n ? n - 1 : k - 1)];
}

static void
paths_print(struct paths *p)
{
	for (int i = 0; i < p->count; i++) {
		if (p->n[i] == 0)
			continue;
		qsort(p->ms[i], p->n[i], sizeof(double), cmp_double);
		printf("path=%s n=%zu p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f max_ms=%.3f\n",
		        p->name[i], p->n[i], quantile(p->ms[i], p->n[i], 0.50),
		        quantile(p->ms[i], p->n[i], 0.90), quantile(p->ms[i], p->n[i], 0.99),
		        p->ms[i][p->n[i] - 1]);
	}
}

/* ---- the simulator's running sandboxes ---- */

static size_t
collect(char *data, size_t size, size_t n, void *userp)
{
	return sk_buf_append(userp, data, size * n) == 0 ? size * n : 0;
}

/* The "running" count of /_sim/stats, or -1. */
static long
sample_running(CURL *easy, sk_buf *b)
{
	json_t *doc;
	long v = -1, st = 0;

	sk_buf_reset(b);
	if (curl_easy_perform(easy) != CURLE_OK)
		return -1;
	curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &st);
	doc = st == 200 ? json_loadb(b->data, b->len, 0, NULL) : NULL;
	if (json_is_integer(json_object_get(doc, "running")))
		v = (long)json_integer_value(json_object_get(doc, "running"));
	json_decref(doc);
	return v;
}

static bool
sampler_stopping(struct sampler *s)
{
	bool stop;

	pthread_mutex_lock(&s->mu);
	stop = s->stop;
	pthread_mutex_unlock(&s->mu);
	return stop;
}

/* Seconds of [from, to] within the run [t0, t1]. */
static double
clipped(const struct sampler *s, int64_t from, int64_t to)
{
	if (from < s->t0)
		from = s->t0;
	if (to > s->t1)
		to = s->t1;
	return to > from ? (double)(to - from) / (double)NS : 0.0;
}

/* Left Riemann sum of the running count over [t0, t1], 250 ms steps. */
static void *
sampler_main(void *arg)
{
	struct sampler *s = arg;
	sk_buf b = SK_BUF_INIT(1 << 20);
	CURL *easy = curl_easy_init();
	char url[512];
	long prev = -1;
	int64_t tprev = s->t0;

	snprintf(url, sizeof(url), "%s/_sim/stats", s->url);
	curl_easy_setopt(easy, CURLOPT_URL, url);
	curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(easy, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(easy, CURLOPT_TIMEOUT, 5L);
	while (!sampler_stopping(s)) {
		struct timespec ts = { 0, 250 * 1000000L };
		int64_t t = now_ns();
		long v = sample_running(easy, &b);
		if (prev >= 0)
			s->integral += (double)prev * clipped(s, tprev, t);
		if (v >= 0) {
			prev = v;
			s->samples++;
		} else {
			s->failures++;
		}
		tprev = t;
		nanosleep(&ts, NULL);
	}
	if (prev >= 0)
		s->integral += (double)prev * clipped(s, tprev, s->t1);
	curl_easy_cleanup(easy);
	sk_buf_dispose(&b);
	return NULL;
}

/* ---- users and sessions ---- */

static void
users_init(struct run *r)
{
	struct opts *o = r->o;

	r->u = sk_calloc((size_t)o->users, sizeof(*r->u));
	for (long i = 0; i < o->users; i++) {
		snprintf(r->u[i].id, sizeof(r->u[i].id), "%s%0*ld", o->prefix, o->digits, i);
		r->u[i].active = o->mode != MODE_DAY;
	}
}

static void
session_start(struct run *r, long i, int64_t now)
{
	struct user *u = &r->u[i];

	u->active = true;
	u->start = now;
	u->last = 0;
	u->due = now;
	u->end = now + secs_ns(uniform(&r->rng, r->o->sess_lo, r->o->sess_hi));
	r->n_active++;
	r->sessions++;
}

/* What a perfect sleeper runs for this session: [start, last + idle
 * timeout] within the run, less what an earlier session of the user counted. */
static void
session_end(struct run *r, long i)
{
	struct user *u = &r->u[i];
	int64_t from = u->start > u->covered ? u->start : u->covered;
	int64_t to = (u->last ? u->last : u->start) + secs_ns(r->o->idle_timeout);

	if (to > r->deadline)
		to = r->deadline;
	if (to > from)
		r->reference += to - from;
	if (to > u->covered)
		u->covered = to;
	u->active = false;
	r->n_active--;
}

/* A random user not in a session (bounded tries, then a scan). */
static long
pick_inactive(struct run *r)
{
	long n = r->o->users;

	for (int t = 0; t < 64; t++) {
		long i = (long)uniform(&r->rng, 0, (double)n);
		if (i < n && !r->u[i].active)
			return i;
	}
	for (long i = 0; i < n; i++) {
		if (!r->u[i].active)
			return i;
	}
	return -1;
}

/* Day mode: ends the sessions that are over (once their connect is
 * answered) and keeps the active share. */
static void
sessions_tick(struct run *r, int64_t now)
{
	long target = (long)(r->o->active * (double)r->o->users + 0.5);

	for (long i = 0; i < r->o->users; i++) {
		if (r->u[i].active && !r->u[i].busy && now >= r->u[i].end)
			session_end(r, i);
	}
	while (r->n_active < target && now < r->deadline) {
		long i = pick_inactive(r);
		if (i < 0)
			break;
		session_start(r, i, now);
	}
}

/* ---- connects ---- */

/* --rate: whether one more connect may start by now. */
static bool
paced(const struct run *r, int64_t now)
{
	return r->o->rate <= 0 ||
	        (double)r->started < r->o->rate * (double)(now - r->t0) / (double)NS + 1.0;
}

static void
slot_start(struct run *r, CURLM *m, struct slot *s, long i, int64_t now)
{
	struct user *u = &r->u[i];

	u->busy = true;
	r->started++;
	s->user = i;
	s->t0 = now;
	sk_buf_reset(&s->body);
	snprintf(s->url, sizeof(s->url), "%s/v1/users/%s/sandbox?timeout=30s", r->o->url, u->id);
	curl_easy_setopt(s->easy, CURLOPT_URL, s->url);
	curl_multi_add_handle(m, s->easy);
}

/* The answer's "path", or "error" (no JSON path: 404, 503, 504 answers). */
static void
answer_path(const sk_buf *body, char *out, size_t len)
{
	json_t *doc = json_loadb(body->data ? body->data : "", body->len, 0, NULL);
	const char *p = json_string_value(json_object_get(doc, "path"));

	snprintf(out, len, "%s", p ? p : "error");
	json_decref(doc);
}

static void
next_due(struct run *r, struct user *u, const char *path, int64_t now)
{
	switch (r->o->mode) {
	case MODE_DAY: u->due = now + secs_ns(uniform(&r->rng, r->o->iv_lo, r->o->iv_hi)); break;
	case MODE_WARM:
		u->done = strcmp(path, "fast") == 0;
		u->due = now + 200 * 1000000LL;
		break;
	default: u->due = now; break;
	}
}

static void
slot_done(struct run *r, struct slot *s, CURLcode cc, int64_t now)
{
	struct user *u = &r->u[s->user];
	char path[24];
	long st = 0;

	curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &st);
	r->connects++;
	if (cc != CURLE_OK || st <= 0 || st >= 600) {
		r->errors++;
		snprintf(path, sizeof(path), "error");
	} else {
		r->status[st]++;
		answer_path(&s->body, path, sizeof(path));
	}
	path_add(&r->p, path, (double)(now - s->t0) / 1e6);
	if (r->o->log_slow > 0 && (double)(now - s->t0) / 1e6 >= r->o->log_slow)
		fprintf(stderr, "slow: +%.3fs user=%s path=%s status=%ld ms=%.1f\n",
		        (double)(s->t0 - r->t0) / (double)NS, u->id, path, st,
		        (double)(now - s->t0) / 1e6);
	u->busy = false;
	u->last = now;
	next_due(r, u, path, now);
}

/* The next user due at `now`, round robin from *cursor; -1 if none. */
static long
next_user(struct run *r, long *cursor, int64_t now)
{
	long n = r->o->users;

	for (long k = 0; k < n; k++) {
		long i = (*cursor + k) % n;
		struct user *u = &r->u[i];
		if (u->active && !u->busy && !u->done && u->due <= now) {
			*cursor = (i + 1) % n;
			return i;
		}
	}
	return -1;
}

static bool
all_done(const struct run *r)
{
	for (long i = 0; i < r->o->users; i++) {
		if (!r->u[i].done)
			return false;
	}
	return true;
}

static void
reap(struct run *r, CURLM *m, struct slot ***free_top)
{
	CURLMsg *msg;
	int left;

	while ((msg = curl_multi_info_read(m, &left)) != NULL) {
		struct slot *s;
		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
		curl_multi_remove_handle(m, s->easy);
		slot_done(r, s, msg->data.result, now_ns());
		*(*free_top)++ = s;
	}
}

static void
run_loop(struct run *r, CURLM *m, struct slot *slots)
{
	struct slot **free_stack = sk_calloc((size_t)r->o->conc, sizeof(*free_stack));
	struct slot **top = free_stack;
	long cursor = 0;
	int running = 0;

	for (int i = 0; i < r->o->conc; i++)
		*top++ = &slots[i];
	for (;;) {
		int64_t now = now_ns();
		bool issuing = now < r->deadline && !(r->o->mode == MODE_WARM && all_done(r));
		if (r->o->mode == MODE_DAY)
			sessions_tick(r, now);
		while (issuing && top > free_stack && paced(r, now)) {
			long i = next_user(r, &cursor, now);
			if (i < 0)
				break;
			slot_start(r, m, *--top, i, now);
		}
		if (!issuing && top - free_stack == r->o->conc)
			break;
		curl_multi_perform(m, &running);
		reap(r, m, &top);
		curl_multi_poll(m, NULL, 0, 2, NULL);
	}
	free(free_stack);
}

/* ---- options ---- */

static int
range(const char *s, double *lo, double *hi)
{
	char *end;

	*lo = strtod(s, &end);
	if (*end != '-')
		return -1;
	*hi = strtod(end + 1, &end);
	return *end == '\0' && *lo > 0 && *hi >= *lo ? 0 : -1;
}

static int
parse_mode(const char *s)
{
	if (strcmp(s, "day") == 0)
		return MODE_DAY;
	if (strcmp(s, "fast") == 0)
		return MODE_FAST;
	return strcmp(s, "warm") == 0 ? MODE_WARM : -1;
}

static int
parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = { { "url", 1, NULL, 'u' }, { "users", 1, NULL, 'n' },
		{ "prefix", 1, NULL, 'p' }, { "digits", 1, NULL, 'D' }, { "mode", 1, NULL, 'm' },
		{ "duration", 1, NULL, 'd' }, { "active", 1, NULL, 'a' },
		{ "session", 1, NULL, 's' }, { "interval", 1, NULL, 'i' },
		{ "idle-timeout", 1, NULL, 't' }, { "sim", 1, NULL, 'S' }, { "seed", 1, NULL, 'r' },
		{ "rate", 1, NULL, 'R' }, { "log-slow", 1, NULL, 'L' }, { NULL, 0, NULL, 0 } };
	int c, bad = 0;

	while ((c = getopt_long(argc, argv, "c:", lo, NULL)) != -1) {
		switch (c) {
		case 'u': o->url = optarg; break;
		case 'n': o->users = atol(optarg); break;
		case 'p': o->prefix = optarg; break;
		case 'D': o->digits = atoi(optarg); break;
		case 'm': bad |= (o->mode = parse_mode(optarg)) < 0; break;
		case 'd': o->duration = atof(optarg); break;
		case 'a': o->active = atof(optarg); break;
		case 's': bad |= range(optarg, &o->sess_lo, &o->sess_hi); break;
		case 'i': bad |= range(optarg, &o->iv_lo, &o->iv_hi); break;
		case 't': o->idle_timeout = atof(optarg); break;
		case 'S': o->sim = optarg; break;
		case 'r': o->seed = strtoull(optarg, NULL, 10); break;
		case 'R': o->rate = atof(optarg); break;
		case 'L': o->log_slow = atof(optarg); break;
		case 'c': o->conc = atoi(optarg); break;
		default: return -1;
		}
	}
	if (bad || optind != argc || o->url == NULL || o->users < 1 || o->conc < 1 ||
	        o->conc > MAX_CONC || o->duration <= 0 || o->active <= 0 || o->active > 1 ||
	        o->digits < 1 || o->digits > 12)
		return -1;
	return 0;
}

/* ---- main ---- */

static void
slots_init(struct slot *slots, int n)
{
	for (int i = 0; i < n; i++) {
		struct slot *s = &slots[i];
		s->body = (sk_buf)SK_BUF_INIT(1 << 20);
		s->easy = curl_easy_init();
		curl_easy_setopt(s->easy, CURLOPT_PRIVATE, s);
		curl_easy_setopt(s->easy, CURLOPT_WRITEFUNCTION, collect);
		curl_easy_setopt(s->easy, CURLOPT_WRITEDATA, &s->body);
		curl_easy_setopt(s->easy, CURLOPT_TIMEOUT, 35L);
		curl_easy_setopt(s->easy, CURLOPT_TCP_NODELAY, 1L);
	}
}

static void
report(struct run *r, struct sampler *smp, double secs)
{
	struct rusage ru;
	double cpu = 0;

	/* its own CPU (user + system): what bounds a saturated run when the
	 * controller's core is not busy */
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
		        (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	printf("connects=%ld seconds=%.2f rps=%.1f errors=%ld cpu_s=%.3f status:", r->connects,
	        secs, secs > 0 ? (double)r->connects / secs : 0.0, r->errors, cpu);
	for (int st = 0; st < 600; st++)
		if (r->status[st])
			printf(" %d=%ld", st, r->status[st]);
	printf("\n");
	paths_print(&r->p);
	if (r->o->mode == MODE_DAY)
		printf("sessions=%ld reference_s=%.1f\n", r->sessions,
		        (double)r->reference / (double)NS);
	if (smp->url)
		printf("running_s=%.1f samples=%ld sample_failures=%ld\n", smp->integral,
		        smp->samples, smp->failures);
}

static void
finish_sessions(struct run *r)
{
	for (long i = 0; r->o->mode == MODE_DAY && i < r->o->users; i++) {
		if (r->u[i].active)
			session_end(r, i);
	}
}

int
main(int argc, char **argv)
{
	struct opts o = { .prefix = "b",
		.digits = 5,
		.conc = 64,
		.duration = 60,
		.active = 0.1,
		.sess_lo = 10,
		.sess_hi = 30,
		.iv_lo = 0.5,
		.iv_hi = 3,
		.idle_timeout = 10,
		.seed = 1 };
	struct run r = { 0 };
	struct sampler smp = { 0 };
	struct slot *slots;
	CURLM *m;
	int rc = 0;

	if (parse(argc, argv, &o) != 0) {
		fprintf(stderr,
		        "usage: connectload --url BASE --users N [--prefix P] [--digits D] "
		        "[--mode day|fast|warm] [-c N] [--duration S] [--active F] "
		        "[--session LO-HI] [--interval LO-HI] [--idle-timeout S] [--rate R] "
		        "[--log-slow MS] "
		        "[--sim URL] [--seed N]\n");
		return 2;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	r.o = &o;
	r.rng = o.seed;
	users_init(&r);
	m = curl_multi_init();
	curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, (long)o.conc);
	slots = sk_calloc((size_t)o.conc, sizeof(*slots));
	slots_init(slots, o.conc);
	r.t0 = now_ns();
	r.deadline = r.t0 + secs_ns(o.duration);
	smp.url = o.sim;
	smp.t0 = r.t0;
	smp.t1 = r.deadline;
	pthread_mutex_init(&smp.mu, NULL);
	if (smp.url && pthread_create(&smp.thread, NULL, sampler_main, &smp) != 0)
		smp.url = NULL;
	run_loop(&r, m, slots);
	if (smp.url) {
		pthread_mutex_lock(&smp.mu);
		smp.stop = true;
		pthread_mutex_unlock(&smp.mu);
		pthread_join(smp.thread, NULL);
	}
	finish_sessions(&r);
	report(&r, &smp, (double)(now_ns() - r.t0) / (double)NS);
	if (o.mode == MODE_WARM && !all_done(&r))
		rc = 1;
	for (int i = 0; i < o.conc; i++) {
		curl_easy_cleanup(slots[i].easy);
		sk_buf_dispose(&slots[i].body);
	}
	for (int i = 0; i < r.p.count; i++)
		free(r.p.ms[i]);
	free(slots);
	free(r.u);
	pthread_mutex_destroy(&smp.mu);
	curl_multi_cleanup(m);
	curl_global_cleanup();
	return rc;
}
