/*
 * shards: replicas share the spaces by leases in the store.
 *
 * Spaces fall into c->cfg->shards shards by a stable hash of spec.userID
 * (sk_ctl_shard_of). Each replica holds a lease "shard-NN" on some of them
 * and a lease "member-ID" that says it is alive; every retry period it
 * lists the leases, renews its own, counts the live members, releases what
 * it holds beyond its share (ceil(shards / live members)) and takes free,
 * released or expired shards up to it. The holder string of every lease is
 * "ID@ADDRESS" (ADDRESS: where its connect API answers), so a replica
 * forwards a connect to the holder of the user's shard.
 *
 * No clock is compared across hosts (client-go's rule). Another
 * replica's lease (shard or member) is judged expired only when this
 * replica has seen its record unchanged for a full leaseDuration of its
 * own monotonic time (sk_lease_observer), and the take-over writes only
 * over the version it saw. The holder's own right runs on its monotonic
 * clock too: from the start of its last successful renew, for
 * leaseDuration minus a margin (leaseDuration - renewDeadline). A taker
 * first saw that renew's version after it was written, so its full
 * duration ends after the holder's right, whatever the wall clocks say.
 *
 * Fencing: a replica may act on a user only while it holds the user's
 * shard with a valid right (so a process stopped for longer than that
 * finds its right gone when it resumes), and only under the generation it
 * held the shard at when the reconcile started: a shard lost and taken
 * back in between is a new generation, and the old reconcile's
 * observation (made while another replica may have acted) may not be
 * acted on (sk_ctl_fence).
 *
 * The clock check: every round first reads the database server's clock
 * (sk_store_clock_check). Beyond SK_STORE_CLOCK_SKEW_MAX_MS the store's
 * remaining timing argument (claims, resourceVersion ticks) does not hold:
 * the replica stops acting (no shard valid, none renewed or taken, its
 * member record left to expire, /readyz 503) until the skew is back within.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ground_int.h"
#include "http_int.h"
#include "shards_int.h"
#include "views_int.h"

#define MEMBER_PREFIX "member-"
#define SHARD_PREFIX "shard-"

int
sk_ctl_shard_of(const char *user_id, int n)
{
	uint32_t h = 2166136261u; /* FNV-1a: stable across builds and hosts */

	for (const unsigned char *p = (const unsigned char *)(user_id ? user_id : ""); *p; p++)
		h = (h ^ *p) * 16777619u;
	return n > 0 ? (int)(h % (uint32_t)n) : 0;
}

static void
shard_name(int i, char *buf, size_t len)
{
	snprintf(buf, len, SHARD_PREFIX "%02d", i);
}

/* "host:port" others reach this replica's connect API at: the advertised
 * address, else the connect listener's (the host name for 0.0.0.0; the bound
 * port, as HTTP listens before the first shard round). */
static char *
own_address(sk_controller *c)
{
	const char *adv = c->cfg->advertise_address, *l = c->cfg->connect_listen;
	char host[256] = "";
	const char *colon;
	int port;

	if (adv && adv[0])
		return sk_strdup(adv);
	if (!l || !l[0])
		return sk_strdup("");
	colon = strrchr(l, ':');
	port = sk_ctl_guard_port(c) ? sk_ctl_guard_port(c) : atoi(colon ? colon + 1 : "0");
	if (port == 0)
		return sk_strdup("");
	snprintf(host, sizeof(host), "%.*s", (int)(colon ? colon - l : 0), l);
	if (host[0] == '\0' || strcmp(host, "0.0.0.0") == 0)
		if (gethostname(host, sizeof(host) - 1) != 0)
			snprintf(host, sizeof(host), "127.0.0.1");
	return sk_asprintf("%s:%d", host, port);
}

void
sk_ctl_shards_init(sk_controller *c)
{
	sk_ctl_shards *sh = sk_calloc(1, sizeof(*sh));

	pthread_mutex_init(&sh->mu, NULL);
	sh->n = c->cfg->shards > 0 ? c->cfg->shards : 1;
	sh->s = sk_calloc((size_t)sh->n, sizeof(*sh->s));
	for (int i = 0; i < sh->n; i++)
		sh->s[i].holder = sk_strdup("");
	c->shards = sh;
}

void
sk_ctl_shards_dispose(sk_controller *c)
{
	sk_ctl_shards *sh = c->shards;

	if (!sh)
		return;
	for (int i = 0; i < sh->n; i++)
		free(sh->s[i].holder);
	free(sh->s);
	free(sh->holder);
	sk_lease_observer_dispose(&sh->seen);
	pthread_mutex_destroy(&sh->mu);
	free(sh);
	c->shards = NULL;
}

const char *
sk_ctl_identity(sk_controller *c)
{
	return c->identity;
}

/* Held, renewed within the renew deadline, clock in range (mu held). */
static bool
valid_locked(sk_controller *c, const sk_ctl_shard *st, int64_t mono)
{
	int64_t d = c->cfg->lease_duration_ms;

	return st->held && !c->shards->halted &&
	        sk_lease_holder_valid(st->renewed, d, d - c->cfg->renew_deadline_ms, mono);
}

bool
sk_ctl_shard_valid(sk_controller *c, int shard)
{
	sk_ctl_shards *sh = c->shards;
	bool ok;

	pthread_mutex_lock(&sh->mu);
	ok = sh->all ||
	        (shard >= 0 && shard < sh->n && valid_locked(c, &sh->s[shard], sk_monotonic_ms()));
	pthread_mutex_unlock(&sh->mu);
	return ok;
}

bool
sk_ctl_may_act(sk_controller *c, const char *user_id)
{
	return sk_ctl_shard_valid(c, sk_ctl_shard_of(user_id, c->shards->n));
}

bool
sk_ctl_may_act_cb(void *arg, const char *user_id)
{
	return sk_ctl_may_act(arg, user_id);
}

/* The generation of a valid shard (gen ours, or any under --once), else 0. */
static int64_t
fence_gen(sk_controller *c, const char *user_id)
{
	sk_ctl_shards *sh = c->shards;
	int i = sk_ctl_shard_of(user_id, sh->n);
	int64_t gen = 0;

	pthread_mutex_lock(&sh->mu);
	if (sh->all)
		gen = 1;
	else if (valid_locked(c, &sh->s[i], sk_monotonic_ms()))
		gen = sh->s[i].gen;
	pthread_mutex_unlock(&sh->mu);
	return gen;
}

bool
sk_ctl_fence_take(sk_controller *c, const char *user_id, sk_ctl_fence *out)
{
	out->c = c;
	out->gen = fence_gen(c, user_id);
	return out->gen != 0;
}

bool
sk_ctl_fence_holds(void *arg, const char *user_id)
{
	const sk_ctl_fence *f = arg;

	return f->gen != 0 && fence_gen(f->c, user_id) == f->gen;
}

void
sk_ctl_shards_all(sk_controller *c)
{
	pthread_mutex_lock(&c->shards->mu);
	c->shards->all = true;
	pthread_mutex_unlock(&c->shards->mu);
}

char *
sk_ctl_shard_holder_address(sk_controller *c, const char *user_id)
{
	sk_ctl_shards *sh = c->shards;
	int i = sk_ctl_shard_of(user_id, sh->n);
	const char *at;
	char *addr = NULL;

	pthread_mutex_lock(&sh->mu);
	at = strrchr(sh->s[i].holder, '@');
	if (at && at[1] && strcmp(sh->s[i].holder, sh->holder ? sh->holder : "") != 0)
		addr = sk_strdup(at + 1);
	pthread_mutex_unlock(&sh->mu);
	return addr;
}

/* ---- one round ---- */

/* Held, and changed within its duration as this replica saw it. */
static bool
live(sk_controller *c, const sk_lease *l, int64_t mono)
{
	return l->holder[0] != '\0' && !sk_lease_observed_expired(&c->shards->seen, l, mono);
}

/* Live members in the list (this replica counts even before its record). */
static size_t
count_members(sk_controller *c, const sk_lease_list *ll, const char *self, int64_t now)
{
	size_t n = 0;
	bool seen = false;

	for (size_t i = 0; i < ll->len; i++) {
		const sk_lease *l = &ll->items[i];
		if (strncmp(l->name, MEMBER_PREFIX, strlen(MEMBER_PREFIX)) != 0 || !live(c, l, now))
			continue;
		n++;
		seen = seen || strcmp(l->holder, self) == 0;
	}
	return seen ? n : n + 1;
}

static const sk_lease *
find_lease(const sk_lease_list *ll, const char *name)
{
	for (size_t i = 0; i < ll->len; i++)
		if (strcmp(ll->items[i].name, name) == 0)
			return &ll->items[i];
	return NULL;
}

static void
note_holders(sk_controller *c, const sk_lease_list *ll, int64_t now)
{
	sk_ctl_shards *sh = c->shards;
	char name[32];

	pthread_mutex_lock(&sh->mu);
	for (int i = 0; i < sh->n; i++) {
		const sk_lease *l;
		shard_name(i, name, sizeof(name));
		l = find_lease(ll, name);
		free(sh->s[i].holder);
		sh->s[i].holder = sk_strdup(l && live(c, l, now) ? l->holder : "");
	}
	pthread_mutex_unlock(&sh->mu);
}

static void
set_held(sk_controller *c, int i, bool held, int64_t renewed)
{
	sk_ctl_shards *sh = c->shards;

	pthread_mutex_lock(&sh->mu);
	if (held && !sh->s[i].held)
		sh->s[i].gen = ++sh->gens; /* a new holding: reconciles of an older one stop */
	sh->s[i].held = held;
	if (held) {
		sh->s[i].renewed = renewed;
		free(sh->s[i].holder);
		sh->s[i].holder = sk_strdup(sh->holder);
	}
	pthread_mutex_unlock(&sh->mu);
}

static bool
is_held(sk_controller *c, int i)
{
	bool h;

	pthread_mutex_lock(&c->shards->mu);
	h = c->shards->s[i].held;
	pthread_mutex_unlock(&c->shards->mu);
	return h;
}

static int64_t
renewed_at(sk_controller *c, int i)
{
	int64_t r;

	pthread_mutex_lock(&c->shards->mu);
	r = c->shards->s[i].renewed;
	pthread_mutex_unlock(&c->shards->mu);
	return r;
}

/* Renews a held shard; drops it when another took it, or when no renew
 * succeeded within the renew deadline. */
static void
renew_shard(sk_controller *c, int i, int64_t t0)
{
	char name[32];
	sk_error err = { 0 };
	int rc;

	shard_name(i, name, sizeof(name));
	rc = sk_store_lease_acquire(
	        c->store, name, c->shards->holder, c->cfg->lease_duration_ms, NULL, &err);
	if (rc == 0) {
		set_held(c, i, true, t0);
		return;
	}
	sk_metrics_add(c->metrics, SK_CTL_METRIC_RENEW_FAILURES, NULL, 1);
	if (rc == SK_ECONFLICT || t0 >= renewed_at(c, i) + c->cfg->renew_deadline_ms) {
		set_held(c, i, false, 0);
		sk_ctl_log(
		        c, SK_LOG_WARN, "shard lost", "shard=%s error=\"%s\"", name, err.message);
	}
}

/* Stops acting on the shard, then gives its lease up; the store's code. */
static int
release_shard(sk_controller *c, int i)
{
	char name[32];
	sk_error err = { 0 };
	int rc;

	shard_name(i, name, sizeof(name));
	set_held(c, i, false, 0); /* stop acting first, then let it go */
	rc = sk_store_lease_release(c->store, name, c->shards->holder, &err);
	if (rc != 0)
		sk_ctl_log(c, SK_LOG_DEBUG, "shard release failed", "shard=%s error=\"%s\"", name,
		        err.message);
	else
		sk_ctl_log(c, SK_LOG_DEBUG, "shard released", "shard=%s", name);
	return rc;
}

/* Takes the lease of a shard the list shows free, released or expired (a
 * take-over over the version seen); the caller marks it held (after the
 * round's log line, so the line precedes any action on the shard). */
static bool
take_shard(sk_controller *c, const sk_lease_list *ll, int i, int64_t now)
{
	char name[32];
	const sk_lease *l;
	sk_error err = { 0 };
	bool other;
	int rc;

	shard_name(i, name, sizeof(name));
	l = find_lease(ll, name);
	other = l && l->holder[0] != '\0' && strcmp(l->holder, c->shards->holder) != 0;
	if (other && live(c, l, now))
		return false;
	rc = other ? sk_store_lease_take_over(
	                     c->store, l, c->shards->holder, c->cfg->lease_duration_ms, NULL, &err)
	           : sk_store_lease_acquire(c->store, name, c->shards->holder,
	                     c->cfg->lease_duration_ms, NULL, &err);
	if (rc != 0) {
		sk_ctl_log(c, SK_LOG_INFO, "shard not taken", "shard=%s error=\"%s\"", name,
		        err.message);
		return false;
	}
	sk_ctl_log(c, SK_LOG_DEBUG, "shard acquired", "shard=%s previous=%s", name,
	        l && l->holder[0] ? l->holder : "-");
	return true;
}

static int
held_count(sk_controller *c)
{
	int n = 0;

	for (int i = 0; i < c->shards->n; i++)
		n += is_held(c, i) ? 1 : 0;
	return n;
}

/* Writes the member record: ours, or taken over from a previous run of
 * this identity (another address) once we saw it unchanged for its
 * duration. */
static int
renew_member(sk_controller *c, const sk_lease_list *ll, int64_t t0, sk_error *err)
{
	char *member = sk_asprintf(MEMBER_PREFIX "%s", c->identity);
	const sk_lease *l = find_lease(ll, member);
	int64_t d = c->cfg->lease_duration_ms;
	int rc = sk_store_lease_acquire(c->store, member, c->shards->holder, d, NULL, err);

	if (rc == SK_ECONFLICT && l && sk_lease_observed_expired(&c->shards->seen, l, t0))
		rc = sk_store_lease_take_over(c->store, l, c->shards->holder, d, NULL, err);
	free(member);
	return rc;
}

/* Renews the member record, then every held shard; false when the store
 * did not answer the list. */
static bool
renew_all(sk_controller *c, sk_lease_list *ll, int64_t t0)
{
	sk_error err = { 0 }, merr = { 0 };
	int rc = sk_store_lease_list(c->store, ll, &err);

	if (rc == 0 && renew_member(c, ll, t0, &merr) != 0)
		sk_ctl_log(
		        c, SK_LOG_WARN, "member record not written", "error=\"%s\"", merr.message);
	/* Each shard every renewDeadline/2 (client-go renews every retry
	 * period): a lease write is five operations on FerretDB, and this
	 * still leaves two or more tries before the deadline. Not when the
	 * list failed (each renew would wait out the store's timeout, and a
	 * stop waits for this round; the rights lapse on their own), nor
	 * once the controller stops. */
	for (int i = 0; rc == 0 && i < c->shards->n && !sk_ctl_stopping(c); i++)
		if (is_held(c, i) && t0 - renewed_at(c, i) >= c->cfg->renew_deadline_ms / 2)
			renew_shard(c, i, t0);
	if (rc != 0)
		sk_ctl_log(c, SK_LOG_WARN, "leases not read", "error=\"%s\"", err.message);
	pthread_mutex_lock(&c->shards->mu);
	c->shards->store_down = rc == SK_EUNAVAILABLE || rc == SK_ETIMEOUT;
	pthread_mutex_unlock(&c->shards->mu);
	return rc == 0;
}

/* One info line for the shards a round (or the stop) took or gave up; the
 * per-shard lines are at debug level. */
static void
log_shards(sk_controller *c, const char *msg, int n, int held)
{
	if (n > 0)
		sk_ctl_log(c, SK_LOG_INFO, msg,
		        "count=%d held=%d total=%d summary=\"holds %d of %d shards\"", n, held,
		        c->shards->n, held, c->shards->n);
}

/* The shards this replica may act on now: held, renewed within the renew
 * deadline, the clock in range. The held flag alone stays set while a
 * renew waits on a database that does not answer. */
static int
valid_count(sk_controller *c)
{
	int n = 0;

	for (int i = 0; i < c->shards->n; i++)
		n += sk_ctl_shard_valid(c, i) ? 1 : 0;
	return n;
}

/* spacekeeper_shards_held and leader_election_master_status from the
 * renew deadline, as fencing judges (sk_ctl_shard_valid): a replica cut
 * from the database stops counting a shard once its own right to it ended,
 * not when a store call that hangs returns. */
static void
shard_metrics(sk_controller *c)
{
	char l[64], name[32];

	sk_metrics_set(c->metrics, SK_CTL_METRIC_SHARDS_HELD, NULL, valid_count(c));
	sk_metrics_set(c->metrics, SK_CTL_METRIC_SHARDS_TOTAL, NULL, c->shards->n);
	for (int i = 0; i < c->shards->n; i++) {
		shard_name(i, name, sizeof(name));
		snprintf(l, sizeof(l), "name=\"%s\"", name);
		sk_metrics_set(c->metrics, SK_CTL_METRIC_MASTER_STATUS, l,
		        sk_ctl_shard_valid(c, i) ? 1 : 0);
	}
}

/* The clock check of a round: true while this replica may act. A reading
 * that failed keeps the last verdict (*down: the store did not answer). */
static bool
clock_round(sk_controller *c, bool *down)
{
	sk_ctl_shards *sh = c->shards;
	sk_clock_reading r;
	sk_error err = { 0 };
	bool was, halt;
	int rc;

	pthread_mutex_lock(&sh->mu);
	was = sh->halted;
	pthread_mutex_unlock(&sh->mu);
	rc = sk_store_clock_check(c->store, &r, &err);
	*down = rc == SK_EUNAVAILABLE || rc == SK_ETIMEOUT;
	if (rc != 0 || !r.measured)
		return !was;
	sk_metrics_set(c->metrics, SK_CTL_METRIC_CLOCK_SKEW, NULL, (double)r.skew_ms / 1000.0);
	halt = sk_store_clock_verdict(&r, 0, &err) != 0;
	pthread_mutex_lock(&sh->mu);
	sh->halted = halt;
	sh->skew_ms = r.skew_ms;
	pthread_mutex_unlock(&sh->mu);
	if (halt && !was)
		sk_ctl_log(c, SK_LOG_ERROR, "clock skew: not acting",
		        "skew_ms=%lld rtt_ms=%lld limit_ms=%d error=\"%s\"", (long long)r.skew_ms,
		        (long long)r.rtt_ms, SK_STORE_CLOCK_SKEW_MAX_MS, err.message);
	else if (!halt && was)
		sk_ctl_log(c, SK_LOG_INFO, "clock skew within the limit again: acting",
		        "skew_ms=%lld limit_ms=%d", (long long)r.skew_ms,
		        SK_STORE_CLOCK_SKEW_MAX_MS);
	else if (!halt && llabs(r.skew_ms) > SK_STORE_CLOCK_SKEW_WARN_MS &&
	        !sh->skew_warned) /* once per process: the metric and alert say the rest */
		sk_ctl_log(c, SK_LOG_WARN, "clock skew", "skew_ms=%lld warn_ms=%d limit_ms=%d",
		        (long long)r.skew_ms, SK_STORE_CLOCK_SKEW_WARN_MS,
		        SK_STORE_CLOCK_SKEW_MAX_MS);
	sh->skew_warned = sh->skew_warned || llabs(r.skew_ms) > SK_STORE_CLOCK_SKEW_WARN_MS;
	return !halt;
}

/* Halted by the clock check: nothing is written (the store would refuse
 * it anyway); the shards stop being ours at once, the others take them
 * once our records stop changing. */
static void
halted_round(sk_controller *c)
{
	int dropped = 0;

	for (int i = 0; i < c->shards->n; i++)
		if (is_held(c, i)) {
			set_held(c, i, false, 0);
			dropped++;
		}
	log_shards(c, "shards dropped (clock skew)", dropped, 0);
	shard_metrics(c);
}

int
sk_ctl_shards_tick(sk_controller *c)
{
	sk_ctl_shards *sh = c->shards;
	sk_lease_list ll = { 0 };
	int64_t t0 = sk_monotonic_ms(), t1;
	int held, target, gained = 0, released = 0, *taken;
	size_t members;

	bool down = false;

	if (!clock_round(c, &down)) {
		halted_round(c);
		return 0;
	}
	if (down) { /* nothing will answer this round either */
		pthread_mutex_lock(&sh->mu);
		sh->store_down = true;
		pthread_mutex_unlock(&sh->mu);
		shard_metrics(c);
		return 0;
	}
	if (!renew_all(c, &ll, t0)) {
		shard_metrics(c);
		return 0;
	}
	/* A version first listed is "seen" after the list came back: never
	 * before its writer began the renew it writes (its right starts then). */
	t1 = sk_monotonic_ms();
	sk_lease_observe(&sh->seen, &ll, t1);
	note_holders(c, &ll, t1);
	members = count_members(c, &ll, sh->holder, t1);
	target = (int)((sh->n + (int)members - 1) / (int)members);
	held = held_count(c);
	for (int i = sh->n - 1; i >= 0 && held > target; i--)
		if (is_held(c, i)) {
			release_shard(c, i);
			held--;
			released++;
		}
	/* Start at a point of our own, so joining replicas try different shards. */
	taken = sk_calloc((size_t)sh->n, sizeof(*taken));
	for (int k = 0, o = sk_ctl_shard_of(sh->holder, sh->n);
	        k < sh->n && held < target && !sk_ctl_stopping(c); k++) {
		int i = (o + k) % sh->n;
		if (!is_held(c, i) && take_shard(c, &ll, i, t1)) {
			taken[gained++] = i;
			held++;
		}
	}
	log_shards(c, "shards released", released, held);
	log_shards(c, "shards acquired", gained, held);
	for (int k = 0; k < gained; k++)
		set_held(c, taken[k], true, t0);
	free(taken);
	pthread_mutex_lock(&sh->mu);
	sh->live = members;
	pthread_mutex_unlock(&sh->mu);
	shard_metrics(c);
	sk_lease_list_dispose(&ll);
	return gained;
}

/* ---- the lease thread ---- */

static void *
shards_main(void *arg)
{
	sk_controller *c = arg;

	while (!sk_ctl_stopping(c)) {
		int64_t next = sk_monotonic_ms() + c->cfg->retry_period_ms;
		if (sk_ctl_shards_tick(c) > 0)
			sk_ctl_observe_soon(c); /* a fresh list, then the new keys */
		pthread_mutex_lock(&c->mu);
		while (!sk_ctl_stopping(c) && sk_monotonic_ms() < next)
			sk_cond_wait_ms(&c->wake, &c->mu, next - sk_monotonic_ms());
		pthread_mutex_unlock(&c->mu);
	}
	return NULL;
}

void
sk_ctl_shards_prepare(sk_controller *c)
{
	char *addr = own_address(c);

	free(c->shards->holder);
	c->shards->holder =
	        addr[0] ? sk_asprintf("%s@%s", c->identity, addr) : sk_strdup(c->identity);
	free(addr);
}

void
sk_ctl_shards_look(sk_controller *c)
{
	sk_lease_list ll = { 0 };
	sk_error err = { 0 };
	int64_t t;

	if (sk_store_lease_list(c->store, &ll, &err) != 0) {
		sk_ctl_log(c, SK_LOG_WARN, "leases not read", "error=\"%s\"", err.message);
		return;
	}
	t = sk_monotonic_ms();
	sk_lease_observe(&c->shards->seen, &ll, t);
	note_holders(c, &ll, t);
	sk_lease_list_dispose(&ll);
}

int
sk_ctl_shards_start(sk_controller *c, sk_error *err)
{
	if (pthread_create(&c->shards->thread, NULL, shards_main, c) != 0)
		return sk_error_set(err, SK_ERROR, "controller: cannot start the lease thread");
	c->shards->running = true;
	return 0;
}

/* Joins the thread, then gives every held shard and the member record up,
 * so the others take them at once instead of after expiry. Not when the
 * database stopped answering (each release would wait out the store's
 * timeout: 22 shards took a minute) or the releases took SK_CTL_RELEASE_MS:
 * then the rest are only dropped, and the others take them once they see
 * them unchanged for leaseDuration. */
void
sk_ctl_shards_stop(sk_controller *c)
{
	sk_ctl_shards *sh = c->shards;
	char *member;
	sk_error err = { 0 };
	int released = 0, dropped = 0;
	int64_t deadline;
	bool give_up = false;

	if (!sh || !sh->running)
		return;
	pthread_join(sh->thread, NULL);
	sh->running = false;
	deadline = sk_monotonic_ms() + SK_CTL_RELEASE_MS;
	give_up = sh->store_down; /* the last round could not read the leases */
	for (int i = 0; i < sh->n; i++) {
		if (!is_held(c, i))
			continue;
		if (give_up) {
			set_held(c, i, false, 0);
			dropped++;
			continue;
		}
		int rc = release_shard(c, i);
		released += rc == 0;
		dropped += rc != 0;
		give_up =
		        rc == SK_EUNAVAILABLE || rc == SK_ETIMEOUT || sk_monotonic_ms() >= deadline;
	}
	log_shards(c, "shards released", released, 0);
	if (dropped > 0)
		sk_ctl_log(c, SK_LOG_WARN, "shards not released",
		        "count=%d why=\"the database did not answer in time; the others take them "
		        "after leaseDuration\"",
		        dropped);
	if (give_up)
		return;
	member = sk_asprintf(MEMBER_PREFIX "%s", c->identity);
	sk_store_lease_release(c->store, member, sh->holder, &err);
	free(member);
}

bool
sk_ctl_shards_halted(sk_controller *c, int64_t *skew_ms)
{
	bool h;

	pthread_mutex_lock(&c->shards->mu);
	h = c->shards->halted;
	*skew_ms = c->shards->skew_ms;
	pthread_mutex_unlock(&c->shards->mu);
	return h;
}

size_t
sk_ctl_shards_held(sk_controller *c)
{
	return (size_t)held_count(c);
}

size_t
sk_ctl_shards_valid(sk_controller *c)
{
	return (size_t)valid_count(c);
}

void
sk_ctl_shards_metrics(sk_controller *c)
{
	shard_metrics(c);
}

size_t
sk_ctl_shards_free_unheld(sk_controller *c)
{
	sk_ctl_shards *sh = c->shards;
	size_t n_free = 0;

	if (!sh || sh->all || held_count(c) > 0)
		return 0;
	pthread_mutex_lock(&sh->mu);
	for (int i = 0; i < sh->n; i++)
		if (!sh->s[i].held && (!sh->s[i].holder || sh->s[i].holder[0] == '\0'))
			n_free++;
	pthread_mutex_unlock(&sh->mu);
	return n_free;
}

size_t
sk_ctl_shards_held_list(sk_controller *c, int *out)
{
	sk_ctl_shards *sh = c->shards;
	size_t n = 0;

	pthread_mutex_lock(&sh->mu);
	for (int i = 0; i < sh->n; i++)
		if (sh->all || sh->s[i].held)
			out[n++] = i;
	pthread_mutex_unlock(&sh->mu);
	return n;
}

bool
sk_ctl_shards_own_all(sk_controller *c)
{
	return c->shards->all || held_count(c) == c->shards->n;
}
