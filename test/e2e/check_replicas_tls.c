/*
 * End-to-end: a connect forwarded between replicas over TLS.
 * With connect TLS on, a replica forwards over HTTPS pinned to the public
 * key of its own certificate. Two replicas sharing one self-signed
 * certificate and key (8 shards, short leases) answer a connect through the
 * non-holder as the holder does; a connect without the token is refused
 * before anything is forwarded (401); a third replica with another key is
 * refused by the pin both ways (502 ForwardFailed, and the holder never sees
 * the request). Real binaries: FerretDB, sandboxsim, spacekeeper, spacectl.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../testutil.h"
#include "replicas_testlib.h"
#include "util/util.h"

Suite *sk_suite_replicas_tls(void);

#define SHARDS 8
#define TOKEN "s3cret-forward-token"
#define FORWARD_OK "spacekeeper_connect_total{path=\"forward\",code=\"200\"}"
#define FORWARD_502 "spacekeeper_connect_total{path=\"forward\",code=\"502\"}"
#define CONNECTS "spacekeeper_connect_total"
#define UNAUTHORIZED "spacekeeper_connect_rejected_total{reason=\"unauthorized\"}"

typedef struct tls_files {
	char cert[600];
	char key[600];
} tls_files;

static tls_files shared, other; /* the first two replicas' pair; the third's */
static char users[SHARDS][16]; /* users[k]: a user of shard k */

/* A self-signed EC certificate for 127.0.0.1 and its key, NAME.crt and
 * NAME.key in the temp dir. */
static void
self_signed(const char *name, tls_files *t)
{
	char *out = NULL, *err = NULL;
	const char *argv[] = { "/usr/bin/env", "openssl", "req", "-x509", "-newkey", "ec",
		"-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", t->key, "-out",
		t->cert, "-days", "1", "-subj", "/CN=127.0.0.1", "-addext",
		"subjectAltName=IP:127.0.0.1", NULL };

	snprintf(t->cert, sizeof(t->cert), "%s/%s.crt", sk_test_tmpdir(), name);
	snprintf(t->key, sizeof(t->key), "%s/%s.key", sk_test_tmpdir(), name);
	ck_assert_msg(sk_test_run(argv, NULL, NULL, &out, &err, 30) == 0, "openssl: %s", err);
	free(out);
	free(err);
}

/* The `controller:` lines of a replica: the token and TLS with t. */
static void
tls_lines(const tls_files *t, char *buf, size_t len)
{
	char token[600];

	snprintf(token, sizeof(token), "%s", sk_test_write_file("token", TOKEN "\n"));
	ck_assert_int_eq(chmod(token, 0600), 0);
	snprintf(buf, len,
	        "  connectTokenFile: %s\n  connectTLSCertFile: %s\n  connectTLSKeyFile: %s\n",
	        token, t->cert, t->key);
}

static void
start_with(int i, const tls_files *t)
{
	char extra[2048];

	tls_lines(t, extra, sizeof(extra));
	rl_start(i, extra);
}

static void
setup(void)
{
	const char *args[] = { "--latency", "2ms", NULL };

	rl_setup("replicas_tls", SHARDS, args);
	self_signed("shared", &shared);
	self_signed("other", &other);
}

/* One user per shard ("t000" on, the first name of each shard), applied. */
static void
apply_one_per_shard(void)
{
	const char *names[SHARDS];
	int found = 0;
	char name[16];

	memset(users, 0, sizeof(users));
	for (int i = 0; found < SHARDS && i < 1000; i++) {
		snprintf(name, sizeof(name), "t%03d", i);
		unsigned k = rl_shard_of(name);
		if (users[k][0] == '\0') {
			snprintf(users[k], sizeof(users[k]), "%s", name);
			found++;
		}
	}
	ck_assert_int_eq(found, SHARDS);
	for (int k = 0; k < SHARDS; k++)
		names[k] = users[k];
	rl_apply_names(names, SHARDS);
}

/* Waits until every space is Ready; the name -> sandboxID map. */
static json_t *
all_ready(int timeout_s)
{
	int64_t t0 = sk_monotonic_ms();
	json_t *b = NULL;

	for (int t = 0; t <= timeout_s; t++) {
		json_decref(b);
		b = rl_ready_bindings();
		if (json_object_size(b) == SHARDS)
			break;
		sleep(1);
	}
	ck_assert_msg(json_object_size(b) == SHARDS, "%zu of %d spaces Ready after %ds",
	        json_object_size(b), SHARDS, timeout_s);
	printf("replicas_tls: %d spaces (one per shard) Ready after %.1fs\n", SHARDS,
	        (double)(sk_monotonic_ms() - t0) / 1000.0);
	return b;
}

/* GET /v1/users/USER/sandbox over https through replica i, trusting ca. */
static json_t *
connect_via(int i, const char *user, const char *token, const char *ca, long *status)
{
	char url[256], *text = NULL;
	json_t *v;

	snprintf(url, sizeof(url), "https://127.0.0.1:%d/v1/users/%s/sandbox?timeout=20s",
	        rl.reps[i].connect_port, user);
	*status = rl_http_auth("GET", url, token, ca, &text);
	v = json_loads(text ? text : "", 0, NULL);
	free(text);
	return v;
}

/* A user of mask's replica want holds (NULL when it holds no shard with one). */
static const char *
user_held_by(unsigned mask, int want)
{
	for (int k = 0; k < SHARDS; k++)
		if (rl_holder_of(mask, users[k]) == want)
			return users[k];
	return NULL;
}

static const char *
str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

/* Through the holder and through the other (sharing its certificate): both
 * 200 with the space's sandbox; the other forwarded it, over https (the
 * holder's connect listener answers nothing else). */
static void
assert_same_connect(int holder, int via, json_t *bound)
{
	const char *user = user_held_by(0x3, holder);
	double fwd0 = rl_metric_sum(&rl.reps[via], FORWARD_OK);
	long s1, s2;
	json_t *a, *b;

	ck_assert_msg(user != NULL, "replica-%d holds no shard with a user", holder);
	a = connect_via(holder, user, TOKEN, shared.cert, &s1);
	b = connect_via(via, user, TOKEN, shared.cert, &s2);
	ck_assert_int_eq(s1, 200);
	ck_assert_int_eq(s2, 200);
	ck_assert_str_eq(str(b, "sandboxID"), str(a, "sandboxID"));
	ck_assert_str_eq(str(b, "sandboxID"), json_string_value(json_object_get(bound, user)));
	ck_assert(json_is_true(json_object_get(b, "ready")));
	ck_assert_double_eq(rl_metric_sum(&rl.reps[via], FORWARD_OK), fwd0 + 1);
	printf("replicas_tls: connect %s via holder replica-%d and replica-%d over https: %s %s\n",
	        user, holder, via, str(b, "sandboxID"), str(b, "state"));
	json_decref(a);
	json_decref(b);
}

/* Without the token through a non-holder: 401, and nothing is forwarded. */
static void
assert_no_token(int holder, int via)
{
	const char *user = user_held_by(0x3, holder);
	double seen = rl_metric_sum(&rl.reps[holder], CONNECTS);
	double mine = rl_metric_sum(&rl.reps[via], CONNECTS);
	double refused = rl_metric_sum(&rl.reps[via], UNAUTHORIZED);
	long st;
	json_t *v = connect_via(via, user, NULL, shared.cert, &st);

	ck_assert_int_eq(st, 401);
	ck_assert_str_eq(str(v, "reason"), "Unauthorized");
	ck_assert_double_eq(rl_metric_sum(&rl.reps[via], UNAUTHORIZED), refused + 1);
	ck_assert_double_eq(rl_metric_sum(&rl.reps[via], CONNECTS), mine);
	ck_assert_double_eq(rl_metric_sum(&rl.reps[holder], CONNECTS), seen);
	printf("replicas_tls: connect %s via replica-%d without the token: %ld %s, "
	       "nothing forwarded to holder replica-%d\n",
	        user, via, st, str(v, "reason"), holder);
	json_decref(v);
}

/* A connect through via (whose certificate is ca) for a user whose shard
 * holder holds, with another key: the pin refuses the holder, which never
 * sees the request. A 503 (a replica's view of the holders a round behind
 * the leases) is asked again. */
static void
assert_pin_refused(int holder, int via, const char *ca)
{
	unsigned mask = (1u << holder) | (1u << via);
	const char *user = user_held_by(mask, holder), *msg;
	double seen = rl_metric_sum(&rl.reps[holder], CONNECTS);
	double failed = rl_metric_sum(&rl.reps[via], FORWARD_502);
	long st = 0;
	json_t *v = NULL;

	ck_assert_msg(user != NULL, "replica-%d holds no shard with a user", holder);
	for (int t = 0; t < 10; t++) {
		json_decref(v);
		v = connect_via(via, user, TOKEN, ca, &st);
		if (st != 503)
			break;
		sleep(1);
	}
	ck_assert_msg(st == 502, "connect %s via replica-%d (another key): %ld %s %s", user, via,
	        st, str(v, "reason"), str(v, "message"));
	ck_assert_str_eq(str(v, "reason"), "ForwardFailed");
	msg = strstr(str(v, "message"), "): ");
	ck_assert_msg(
	        msg && strstr(msg, "pinned public key"), "not the pin: %s", str(v, "message"));
	ck_assert_double_eq(rl_metric_sum(&rl.reps[via], FORWARD_502), failed + 1);
	ck_assert_double_eq(rl_metric_sum(&rl.reps[holder], CONNECTS), seen);
	printf("replicas_tls: connect %s via replica-%d, holder replica-%d has another key: %ld %s "
	       "(%s), the holder saw no request\n",
	        user, via, holder, st, str(v, "reason"), msg + 3);
	json_decref(v);
}

START_TEST(test_forward_over_tls)
{
	json_t *bound;
	int64_t t0;

	start_with(0, &shared);
	start_with(1, &shared);
	ck_assert_msg(rl_split_settled(0x3, SHARDS / 2 - 1, sk_monotonic_ms(), 30, "at start"),
	        "no even split");
	apply_one_per_shard();
	bound = all_ready(120);

	/* One certificate and key for both: forwarded both ways. */
	assert_same_connect(0, 1, bound);
	assert_same_connect(1, 0, bound);
	assert_no_token(0, 1);
	json_decref(bound);

	/* A third with another key takes a share; its forwards and the
	 * forwards to it are refused. */
	t0 = sk_monotonic_ms();
	start_with(2, &other);
	ck_assert_msg(rl_split_settled(0x7, SHARDS / 3 - 1, t0, 30, "after replica-2 joined"),
	        "replica-2 took no share");
	assert_pin_refused(0, 2, other.cert);
	assert_pin_refused(2, 1, shared.cert);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(sk_test_stop(rl.reps[i].pid, false), 0);
		rl.reps[i].pid = 0;
	}
}
END_TEST

Suite *
sk_suite_replicas_tls(void)
{
	Suite *s = suite_create("replicas_tls");
	TCase *tc = tcase_create("replicas_tls");

	tcase_add_checked_fixture(tc, setup, rl_teardown);
	tcase_add_unchecked_fixture(tc, NULL, rl_kill_leftovers);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_forward_over_tls);
	suite_add_tcase(s, tc);
	return s;
}
