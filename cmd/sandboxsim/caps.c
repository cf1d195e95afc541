/*
 * sandboxsim caps: what a provider plan allows, enforced the way E2B does.
 * A concurrency limit (sandboxes running at once) refuses a create, or a
 * resume of a paused sandbox, with 429 and E2B's message ("you have reached
 * the maximum number of concurrent E2B sandboxes (N)..."); a start rate
 * (creates and resumes per second, a token bucket of burst max(1, rate))
 * refuses with 429 "Rate limit exceeded" and Retry-After, RateLimit-Limit,
 * RateLimit-Remaining and RateLimit-Reset. Set by --max-running and
 * --creates-per-second, and at run time by the fault document's
 * "caps": {"max_running": N, "creates_per_second": R} (null or 0 removes).
 * /_sim/stats reports the running count, the most seen running at once
 * since the last stats reset (max_running) and the refusals.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define CONCURRENCY_MESSAGE                                                                        \
	"you have reached the maximum number of concurrent E2B sandboxes (%d). If you need "       \
	"more, please contact us at 'https://e2b.dev/docs/getting-help'"

int
sim_caps_parse(sim_caps *c, json_t *v, char *why, size_t len)
{
	json_t *m = json_object_get(v, "max_running"),
	       *r = json_object_get(v, "creates_per_second");

	if (json_is_null(v)) {
		c->max_running = 0;
		c->creates_per_second = 0;
		return 0;
	}
	if (!json_is_object(v) || (m && !json_is_integer(m)) || (r && !json_is_number(r))) {
		snprintf(why, len, "caps: want {max_running, creates_per_second}");
		return -1;
	}
	if ((m && (json_integer_value(m) < 0 || json_integer_value(m) > 1000000)) ||
	        (r && (json_number_value(r) < 0 || json_number_value(r) > 100000))) {
		snprintf(why, len, "caps: max_running 0..1000000, creates_per_second 0..100000");
		return -1;
	}
	if (m)
		c->max_running = (int)json_integer_value(m);
	if (r) {
		c->creates_per_second = json_number_value(r);
		c->tokens = c->creates_per_second > 1 ? c->creates_per_second : 1;
		c->refill_ms = 0;
	}
	return 0;
}

json_t *
sim_caps_json(const sim_caps *c)
{
	return json_pack("{s:i,s:f}", "max_running", c->max_running, "creates_per_second",
	        c->creates_per_second);
}

/* Sandboxes running now; s->lock held. */
static int
running_now(sim *s)
{
	int n = 0;

	for (sim_sandbox *sb = s->store.head; sb; sb = sb->next)
		n += sb->state == SIM_RUNNING;
	return n;
}

void
sim_caps_note_running(sim *s)
{
	int n = running_now(s);

	pthread_mutex_lock(&s->stats.lock);
	if (n > s->stats.max_running)
		s->stats.max_running = n;
	pthread_mutex_unlock(&s->stats.lock);
}

static void
count_refusal(sim *s, bool rate)
{
	pthread_mutex_lock(&s->stats.lock);
	if (rate)
		s->stats.refused_rate++;
	else
		s->stats.refused_concurrency++;
	pthread_mutex_unlock(&s->stats.lock);
}

/* Takes a token from the bucket; false (wait_ms filled) when empty. f->lock held. */
static bool
take_token(sim_caps *c, int64_t now, int64_t *wait_ms, double *burst)
{
	*burst = c->creates_per_second > 1 ? c->creates_per_second : 1;
	if (c->refill_ms > 0)
		c->tokens += (double)(now - c->refill_ms) * c->creates_per_second / 1000.0;
	if (c->tokens > *burst)
		c->tokens = *burst;
	c->refill_ms = now;
	if (c->tokens >= 1) {
		c->tokens -= 1;
		return true;
	}
	*wait_ms = (int64_t)ceil((1 - c->tokens) * 1000.0 / c->creates_per_second);
	return false;
}

static void
reply_rate(sim *s, sim_req *r, const sim_caps *c, int64_t wait_ms, double burst)
{
	char v[32];
	long long after = (wait_ms + 999) / 1000;

	snprintf(v, sizeof(v), "%lld", after > 0 ? after : 1);
	sim_reply_header(r, "Retry-After", v);
	snprintf(v, sizeof(v), "%d", (int)ceil(burst));
	sim_reply_header(r, "RateLimit-Limit", v);
	snprintf(v, sizeof(v), "%d", (int)c->tokens);
	sim_reply_header(r, "RateLimit-Remaining", v);
	snprintf(
	        v, sizeof(v), "%lld", (long long)ceil((burst - c->tokens) / c->creates_per_second));
	sim_reply_header(r, "RateLimit-Reset", v);
	sim_reply_error(s, r, 429, "Rate limit exceeded");
}

bool
sim_caps_admit(sim *s, sim_req *r, int64_t now)
{
	sim_faults *f = &s->faults;
	int max, running;
	bool ok = true, rate = false;
	int64_t wait_ms = 0;
	double burst = 1;
	sim_caps c;

	pthread_mutex_lock(&f->lock);
	max = f->caps.max_running;
	pthread_mutex_unlock(&f->lock);
	if (max > 0) {
		sim_store_sweep(s, now);
		running = running_now(s);
		if (running >= max) {
			count_refusal(s, false);
			sim_reply_error(s, r, 429, CONCURRENCY_MESSAGE, max);
			return false;
		}
	}
	pthread_mutex_lock(&f->lock);
	if (f->caps.creates_per_second > 0) {
		ok = take_token(&f->caps, now, &wait_ms, &burst);
		rate = !ok;
	}
	c = f->caps;
	pthread_mutex_unlock(&f->lock);
	if (rate) {
		count_refusal(s, true);
		reply_rate(s, r, &c, wait_ms, burst);
	}
	return ok;
}
