/*
 * tokens: the connect API's bearer tokens. controller.connectTokenFile is
 * the all-spaces token (named "all" in metrics); each controller.connectTokens
 * entry is a tenant's token that reaches only the UserSpaces its label
 * selector matches (connect.c answers 404 for any other, as for a space that
 * does not exist).
 *
 * Only SHA-256 digests are kept; a presented token is hashed and compared
 * with every configured digest, every byte, whatever matched (constant
 * time). Each file is stat'ed at most once per TOKENS_RECHECK_MS, on a
 * request, and read again when it changed (inode, size, mtime, ctime: a
 * Kubernetes Secret's symlink swap included), so a rotation takes effect
 * within about a second, without a restart; a file that cannot be read then
 * keeps the previous token and is logged (path only, never content).
 * Requests are counted per token name; the token itself is never logged.
 */
#include <gnutls/crypto.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "ground_int.h"
#include "http_int.h"

#define TOKENS_RECHECK_MS 1000
#define METRIC_TOKEN_REQUESTS "spacekeeper_connect_token_requests_total"
#define METRIC_OUT_OF_SCOPE "spacekeeper_connect_out_of_scope_total"

typedef struct token_slot {
	const char *name; /* the config's, or SK_CONNECT_TOKEN_ALL */
	const char *file;
	sk_selector *scope; /* NULL: every space */
	unsigned char sha[32];
	struct stat st; /* of the file when last read */
} token_slot;

struct sk_ctl_tokens {
	pthread_mutex_t mu; /* sha, st, checked_ms */
	token_slot *slots;
	size_t n;
	int64_t checked_ms; /* monotonic */
};

static void
digest(const char *s, size_t n, unsigned char out[32])
{
	gnutls_hash_fast(GNUTLS_DIG_SHA256, s, n, out);
}

static bool
same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
	        a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	        a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	        a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* Reads slot's file into its digest; err names the path only. */
static int
slot_read(token_slot *s, sk_error *err)
{
	struct stat st;
	char *token;

	if (stat(s->file, &st) != 0)
		memset(&st, 0, sizeof(st));
	if ((token = sk_config_token_read(s->file, "connect token file", err)) == NULL)
		return err->code ? err->code : SK_EINVALID;
	digest(token, strlen(token), s->sha);
	explicit_bzero(token, strlen(token));
	free(token);
	s->st = st;
	return 0;
}

static void
slot_add(sk_ctl_tokens *t, const char *name, const char *file)
{
	token_slot *s = &t->slots[t->n++];

	s->name = name;
	s->file = file;
}

static void
declare_metrics(sk_controller *c, const sk_ctl_tokens *t)
{
	char l[128];

	sk_metrics_declare(c->metrics, METRIC_TOKEN_REQUESTS, SK_METRIC_COUNTER,
	        "Connect API requests authenticated, by token name (\"all\": "
	        "connectTokenFile; else a controller.connectTokens name)");
	sk_metrics_declare(c->metrics, METRIC_OUT_OF_SCOPE, SK_METRIC_COUNTER,
	        "Connect API requests answered 404 because the token's selector does not "
	        "match the space, by token name");
	for (size_t i = 0; i < t->n; i++) {
		snprintf(l, sizeof(l), "token=\"%s\"", t->slots[i].name);
		sk_metrics_add(c->metrics, METRIC_TOKEN_REQUESTS, l, 0);
		sk_metrics_add(c->metrics, METRIC_OUT_OF_SCOPE, l, 0);
	}
}

int
sk_ctl_tokens_new(sk_controller *c, sk_ctl_tokens **out, sk_error *err)
{
	const sk_controller_config *cfg = c->cfg;
	sk_ctl_tokens *t;
	int rc = 0;

	*out = NULL;
	if (cfg->connect_token_file == NULL && cfg->n_connect_tokens == 0)
		return 0;
	t = sk_calloc(1, sizeof(*t));
	pthread_mutex_init(&t->mu, NULL);
	t->slots = sk_calloc(cfg->n_connect_tokens + 1, sizeof(*t->slots));
	if (cfg->connect_token_file != NULL)
		slot_add(t, SK_CONNECT_TOKEN_ALL, cfg->connect_token_file);
	for (size_t i = 0; i < cfg->n_connect_tokens; i++) {
		const sk_connect_token_config *ct = &cfg->connect_tokens[i];
		slot_add(t, ct->name, ct->file);
		if ((rc = sk_selector_parse(ct->selector, &t->slots[t->n - 1].scope, err)) != 0) {
			sk_error_prefix(err, "controller.connectTokens %s: selector", ct->name);
			break;
		}
	}
	for (size_t i = 0; rc == 0 && i < t->n; i++) {
		if ((rc = slot_read(&t->slots[i], err)) != 0)
			sk_error_prefix(err, "controller.connect token %s", t->slots[i].name);
	}
	if (rc != 0) {
		sk_ctl_tokens_free(t);
		return rc;
	}
	t->checked_ms = sk_monotonic_ms();
	declare_metrics(c, t);
	*out = t;
	return 0;
}

void
sk_ctl_tokens_free(sk_ctl_tokens *t)
{
	if (t == NULL)
		return;
	for (size_t i = 0; i < t->n; i++) {
		sk_selector_free(t->slots[i].scope);
		explicit_bzero(t->slots[i].sha, sizeof(t->slots[i].sha));
	}
	free(t->slots);
	pthread_mutex_destroy(&t->mu);
	free(t);
}

/* With t->mu held: every file that changed since it was read is read again. */
static void
recheck(sk_controller *c, sk_ctl_tokens *t)
{
	int64_t now = sk_monotonic_ms();

	if (now - t->checked_ms < TOKENS_RECHECK_MS)
		return;
	t->checked_ms = now;
	for (size_t i = 0; i < t->n; i++) {
		token_slot *s = &t->slots[i];
		token_slot next = *s;
		sk_error err = { 0 };
		struct stat st;
		if (stat(s->file, &st) != 0)
			memset(&st, 0, sizeof(st)); /* gone: logged once, until it changes */
		if (same_file(&st, &s->st))
			continue;
		if (slot_read(&next, &err) != 0) {
			sk_ctl_log(c, SK_LOG_WARN, "connect token not reloaded",
			        "token=%s error=\"%s\" hint=\"the previous token stays valid\"",
			        s->name, err.message);
			s->st = st; /* logged once per change, not per request */
			continue;
		}
		*s = next;
		explicit_bzero(next.sha, sizeof(next.sha));
		sk_ctl_log(c, SK_LOG_INFO, "connect token reloaded", "token=%s file=%s", s->name,
		        s->file);
	}
}

bool
sk_ctl_tokens_check(
        sk_controller *c, sk_ctl_tokens *t, const char *authorization, sk_ctl_origin *from)
{
	unsigned char d[32];
	char l[128];
	long found = -1;

	if (authorization == NULL || strncasecmp(authorization, "Bearer ", 7) != 0)
		return false;
	authorization += 7;
	while (*authorization == ' ')
		authorization++;
	digest(authorization, strlen(authorization), d);
	pthread_mutex_lock(&t->mu);
	recheck(c, t);
	for (size_t i = 0; i < t->n; i++) {
		unsigned int diff = 0;
		for (size_t k = 0; k < sizeof(d); k++)
			diff |= (unsigned int)(d[k] ^ t->slots[i].sha[k]);
		found = diff == 0 && found < 0 ? (long)i : found;
	}
	pthread_mutex_unlock(&t->mu);
	explicit_bzero(d, sizeof(d));
	if (found < 0)
		return false;
	from->token = t->slots[found].name;
	from->scope = t->slots[found].scope;
	snprintf(l, sizeof(l), "token=\"%s\"", from->token);
	sk_metrics_add(c->metrics, METRIC_TOKEN_REQUESTS, l, 1);
	return true;
}

bool
sk_ctl_in_scope(sk_controller *c, const sk_ctl_origin *from, const sk_userspace *us)
{
	char l[128];

	if (from == NULL || from->scope == NULL ||
	        sk_selector_matches(from->scope, &us->meta.labels))
		return true;
	snprintf(l, sizeof(l), "token=\"%s\"", from->token);
	sk_metrics_add(c->metrics, METRIC_OUT_OF_SCOPE, l, 1);
	return false;
}
