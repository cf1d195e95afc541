/*
 * store/mongo_clock: this host's wall clock against the database server's.
 * What is left of the wall clock in the store's timing argument
 * (mongo_cas.c: resourceVersion ticks, claims stamped by one process and
 * judged abandoned by another; the informer's floor) holds only while the
 * processes' clocks agree within a few seconds. Each process therefore
 * compares its clock with the server's (hello's localTime, which FerretDB
 * 1.24 answers too), and a store refuses every versioned write while the
 * last reading, at most SK_STORE_CLOCK_RECHECK_MS old, is beyond the limit:
 * measured and enforced at the one place every write takes a version.
 */
#include <stdlib.h>

#include "mongo_int.h"

/* hello's localTime: the server's wall clock (ms), asked on the caller's
 * client (NULL: one of its own). A writer that holds a client must pass it:
 * popping a second one while every client of the pool is held by a writer
 * doing the same waits forever (64 workers rechecking the clock at once did). */
static int
server_time(sk_mongo *s, mongoc_client_t *client, int64_t *out, sk_error *err)
{
	sk_store_conn c = { 0 };
	bson_error_t berr;
	bson_t *cmd = BCON_NEW("hello", BCON_INT32(1));
	bson_t reply;
	bson_iter_t it;
	bool ok;
	int rc = 0;

	if (client == NULL) {
		sk_store_conn_open(s, &c, NULL);
		client = c.client;
	}
	ok = mongoc_client_command_simple(client, "admin", cmd, NULL, &reply, &berr);
	sk_store_conn_close(s, &c);
	if (!ok)
		rc = sk_store_fail(s, &berr, "read the server's clock", err);
	else if (bson_iter_init_find(&it, &reply, "localTime") && BSON_ITER_HOLDS_DATE_TIME(&it))
		*out = bson_iter_date_time(&it);
	else
		rc = sk_error_set(err, SK_ENOTSUPPORTED,
		        "read the server's clock: hello answered no localTime");
	bson_destroy(&reply);
	bson_destroy(cmd);
	return rc;
}

static int
clock_check(sk_mongo *s, mongoc_client_t *client, sk_clock_reading *out, sk_error *err)
{
	int64_t m1 = sk_monotonic_ms(), w1 = sk_now_ms(), server = 0, w2, m2;
	int rc = server_time(s, client, &server, err);

	w2 = sk_now_ms();
	m2 = sk_monotonic_ms();
	if (rc != 0)
		return rc;
	out->measured = true;
	out->rtt_ms = m2 - m1;
	/* The server read its clock somewhere in the round trip: its middle
	 * is the best guess, off by at most half the round trip. */
	out->skew_ms = w1 + (w2 - w1) / 2 - server;
	out->at_mono_ms = m2;
	pthread_mutex_lock(&s->hlc_mu);
	s->clock = *out;
	pthread_mutex_unlock(&s->hlc_mu);
	return 0;
}

int
sk_mongo_clock_check(sk_store *store, sk_clock_reading *out, sk_error *err)
{
	return clock_check(sk_mongo_of(store), NULL, out, err);
}

int
sk_mongo_clock_guard(sk_mongo *s, mongoc_client_t *client, sk_error *err)
{
	sk_clock_reading r;

	if (s->max_skew_ms < 0)
		return 0;
	pthread_mutex_lock(&s->hlc_mu);
	r = s->clock;
	pthread_mutex_unlock(&s->hlc_mu);
	if (!r.measured || sk_monotonic_ms() - r.at_mono_ms >= SK_STORE_CLOCK_RECHECK_MS) {
		int rc = clock_check(s, client, &r, err);
		if (rc != 0)
			return rc;
	}
	return sk_store_clock_verdict(&r, s->max_skew_ms, err);
}
