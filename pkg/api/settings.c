/*
 * api/settings: the ControllerConfig settings that a flag, the environment
 * or a spacectl context can set as well as the file, in one table with one
 * checker (the same bounds and messages wherever a value comes from), and
 * sk_config_resolve, which layers them: flags > environment > context >
 * file > defaults. config.c decodes the file's sections through the table.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "config.h"
#include "context.h"
#include "errlist.h"
#include "flags.h"

#define SK_IDENTITY_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"

typedef enum cfg_kind {
	CFG_URI,
	CFG_DATABASE,
	CFG_INT,
	CFG_DURATION,
	CFG_LISTEN,
	CFG_PATH,
	CFG_BOOL,
	CFG_IDENTITY
} cfg_kind;

typedef struct cfg_setting {
	const char *path; /* in the file: "controller.workers" */
	const char *flag; /* "--workers" */
	const char *env; /* environment variable, or NULL */
	cfg_kind kind;
	int64_t min, max; /* CFG_INT, CFG_DURATION (ms) */
	size_t field; /* offset in sk_controller_config */
	size_t source; /* offset of the flag's text in sk_config_sources */
} cfg_setting;

#define CFG_FIELD(m) offsetof(sk_controller_config, m)
#define CFG_SOURCE(m) offsetof(sk_config_sources, m)

static const cfg_setting settings[] = {
	{ "mongodb.uri", "--mongodb-uri", SK_CONFIG_MONGODB_URI_ENV, CFG_URI, 0, 0,
	        CFG_FIELD(mongodb_uri), CFG_SOURCE(mongodb_uri) },
	{ "mongodb.database", "--database", NULL, CFG_DATABASE, 0, 0, CFG_FIELD(database),
	        CFG_SOURCE(database) },
	{ "controller.workers", "--workers", NULL, CFG_INT, SK_CONFIG_WORKERS_MIN,
	        SK_CONFIG_WORKERS_MAX, CFG_FIELD(workers), CFG_SOURCE(workers) },
	{ "controller.resyncPeriod", "--resync", NULL, CFG_DURATION, 1000, 86400000,
	        CFG_FIELD(resync_ms), CFG_SOURCE(resync) },
	{ "controller.listen", "--listen", NULL, CFG_LISTEN, 0, 0, CFG_FIELD(listen),
	        CFG_SOURCE(listen) },
	{ "controller.connectListen", "--connect-listen", NULL, CFG_LISTEN, 0, 0,
	        CFG_FIELD(connect_listen), CFG_SOURCE(connect_listen) },
	{ "controller.connectTokenFile", "--connect-token-file", NULL, CFG_PATH, 0, 0,
	        CFG_FIELD(connect_token_file), CFG_SOURCE(connect_token_file) },
	{ "controller.connectInsecure", "--connect-insecure", NULL, CFG_BOOL, 0, 0,
	        CFG_FIELD(connect_insecure), CFG_SOURCE(connect_insecure) },
	{ "controller.connectTLSCertFile", "--connect-tls-cert-file", NULL, CFG_PATH, 0, 0,
	        CFG_FIELD(connect_tls_cert_file), CFG_SOURCE(connect_tls_cert_file) },
	{ "controller.connectTLSKeyFile", "--connect-tls-key-file", NULL, CFG_PATH, 0, 0,
	        CFG_FIELD(connect_tls_key_file), CFG_SOURCE(connect_tls_key_file) },
	{ "controller.connectMaxWaiting", "--connect-max-waiting", NULL, CFG_INT, 1, 65536,
	        CFG_FIELD(connect_max_waiting), CFG_SOURCE(connect_max_waiting) },
	{ "controller.connectMaxConnections", "--connect-max-connections", NULL, CFG_INT, 16,
	        1000000, CFG_FIELD(connect_max_connections), CFG_SOURCE(connect_max_connections) },
	{ "controller.connectMaxConnectionsPerIP", "--connect-max-per-ip", NULL, CFG_INT, 0,
	        1000000, CFG_FIELD(connect_max_per_ip), CFG_SOURCE(connect_max_per_ip) },
	{ "controller.storeUnavailableAfter", "--store-unavailable-after", NULL, CFG_DURATION, 1000,
	        3600000, CFG_FIELD(store_unavailable_after_ms),
	        CFG_SOURCE(store_unavailable_after) },
	{ "controller.shards", "--shards", NULL, CFG_INT, 1, SK_CONFIG_SHARDS_MAX,
	        CFG_FIELD(shards), CFG_SOURCE(shards) },
	{ "controller.identity", "--id", NULL, CFG_IDENTITY, 0, 0, CFG_FIELD(identity),
	        CFG_SOURCE(identity) },
	{ "controller.leaseDuration", "--lease-duration", NULL, CFG_DURATION, 500, 3600000,
	        CFG_FIELD(lease_duration_ms), CFG_SOURCE(lease_duration) },
	{ "controller.renewDeadline", "--renew-deadline", NULL, CFG_DURATION, 300, 3600000,
	        CFG_FIELD(renew_deadline_ms), CFG_SOURCE(renew_deadline) },
	{ "controller.retryPeriod", "--retry-period", NULL, CFG_DURATION, 100, 3600000,
	        CFG_FIELD(retry_period_ms), CFG_SOURCE(retry_period) },
	{ "controller.advertiseAddress", "--advertise-address", NULL, CFG_LISTEN, 0, 0,
	        CFG_FIELD(advertise_address), CFG_SOURCE(advertise_address) },
};
#define N_SETTINGS (sizeof(settings) / sizeof(settings[0]))

static bool
valid_listen(const char *s)
{
	const char *colon = strrchr(s, ':');

	if (s[0] == '\0')
		return true; /* "" switches HTTP off */
	if (colon == NULL || colon == s || colon[1] == '\0' ||
	        strspn(colon + 1, "0123456789") != strlen(colon + 1) || strlen(colon + 1) > 5)
		return false;
	return strtol(colon + 1, NULL, 10) <= 65535;
}

/* A string setting: the rule it breaks, or NULL when valid. */
static const char *
string_rule(cfg_kind kind, const char *s)
{
	switch (kind) {
	case CFG_URI:
		if (strncmp(s, "mongodb://", 10) != 0 && strncmp(s, "mongodb+srv://", 14) != 0)
			return "must start with mongodb:// or mongodb+srv://";
		return NULL;
	case CFG_DATABASE:
		if (s[0] == '\0' || strpbrk(s, "/\\. \"$") != NULL || strlen(s) > 63)
			return "must be a MongoDB database name (no /\\. \"$, 1 to 63 bytes)";
		return NULL;
	case CFG_LISTEN:
		return valid_listen(s) ? NULL
		                       : "must be HOST:PORT (port 0..65535), or \"\" for none";
	case CFG_PATH:
		for (const char *p = s; *p; p++)
			if ((unsigned char)*p < 0x20)
				return "must be a file path without control characters";
		return NULL;
	case CFG_IDENTITY:
		if (strlen(s) > 63 || strspn(s, SK_IDENTITY_CHARS) != strlen(s))
			return "must be 0 to 63 of [A-Za-z0-9._-] (\"\": HOSTNAME-PID)";
		return NULL;
	default: return NULL;
	}
}

static bool
set_number(const cfg_setting *st, json_t *v, sk_controller_config *out, char *why, size_t n)
{
	char lo[32], hi[32];
	int64_t x;

	if (st->kind == CFG_INT) {
		if (!sk_json_int(v, &x) || json_is_boolean(v)) {
			snprintf(why, n, "must be an integer");
			return false;
		}
		snprintf(lo, sizeof(lo), "%lld", (long long)st->min);
		snprintf(hi, sizeof(hi), "%lld", (long long)st->max);
	} else {
		const char *s = json_string_value(v);
		if (s == NULL || sk_duration_parse(s, &x) != SK_OK) {
			snprintf(why, n, "must be a duration like 30s, 15m or 1h30m");
			return false;
		}
		sk_duration_format(st->min, lo, sizeof(lo));
		sk_duration_format(st->max, hi, sizeof(hi));
	}
	if (x < st->min || x > st->max) {
		snprintf(why, n, "must be between %s and %s", lo, hi);
		return false;
	}
	if (st->kind == CFG_INT)
		*(int *)((char *)out + st->field) = (int)x;
	else
		*(int64_t *)((char *)out + st->field) = x;
	return true;
}

/* Checks v against the setting's rule and stores it in out; false with the
 * reason in why (never the value: a URI may hold a password). */
static bool
set_value(const cfg_setting *st, json_t *v, sk_controller_config *out, char *why, size_t n)
{
	const char *s, *rule;
	char **field;

	if (st->kind == CFG_INT || st->kind == CFG_DURATION)
		return set_number(st, v, out, why, n);
	if (st->kind == CFG_BOOL) {
		if (!json_is_boolean(v)) {
			snprintf(why, n, "must be true or false");
			return false;
		}
		*(bool *)((char *)out + st->field) = json_is_true(v);
		return true;
	}
	if ((s = json_string_value(v)) == NULL) {
		snprintf(why, n, "must be a string");
		return false;
	}
	if ((rule = string_rule(st->kind, s)) != NULL) {
		snprintf(why, n, "%s", rule);
		return false;
	}
	field = (char **)((char *)out + st->field);
	free(*field);
	/* an empty path means "none" */
	*field = st->kind == CFG_PATH && s[0] == '\0' ? NULL : sk_strdup(s);
	return true;
}

/* The JSON a flag or variable means: an integer setting reads its text as
 * a number when it is one; everything else is a string. */
static json_t *
text_value(const cfg_setting *st, const char *text)
{
	char *end;
	long long n;

	if (st->kind == CFG_BOOL && (strcmp(text, "true") == 0 || strcmp(text, "false") == 0))
		return json_boolean(text[0] == 't');
	if (st->kind == CFG_INT && text[0] != '\0') {
		errno = 0;
		n = strtoll(text, &end, 10);
		if (*end == '\0' && errno == 0)
			return json_integer(n);
	}
	return json_string(text);
}

size_t
sk_config_setting_count(void)
{
	return N_SETTINGS;
}

const char *
sk_config_setting_path(size_t i)
{
	return settings[i].path;
}

bool
sk_config_setting_set(size_t i, json_t *v, sk_controller_config *out, char *why, size_t n)
{
	return set_value(&settings[i], v, out, why, n);
}

/* ---- flags > environment > file > defaults ---- */

static const char *
source_text(const sk_config_sources *src, const cfg_setting *st)
{
	return *(const char *const *)((const char *)src + st->source);
}

static const char *
process_env(const char *name)
{
	return getenv(name);
}

/* Applies the flags (env false) or the variables (env true) of src to cfg;
 * a variable counts only when its flag is absent. */
static void
apply_layer(const sk_config_sources *src, bool env, sk_controller_config *cfg, sk_errlist *errs)
{
	const char *(*get)(const char *) = src->getenv ? src->getenv : process_env;
	char why[256];

	for (size_t i = 0; i < N_SETTINGS; i++) {
		const cfg_setting *st = &settings[i];
		const char *text = source_text(src, st);
		json_t *v;
		if (env) {
			if (st->env == NULL || text != NULL)
				continue;
			text = get(st->env);
			if (text == NULL || text[0] == '\0')
				continue;
		}
		if (text == NULL)
			continue;
		v = text_value(st, text);
		if (!set_value(st, v, cfg, why, sizeof(why)))
			sk_errlist_add(errs, env ? st->env : st->flag, NULL, 0, 0, "%s", why);
		json_decref(v);
	}
}

/* The context's text for a setting; NULL when it sets none. */
static const char *
context_text(const sk_config_context *c, const cfg_setting *st)
{
	if (strcmp(st->path, "mongodb.uri") == 0)
		return c->mongodb_uri;
	if (strcmp(st->path, "mongodb.database") == 0)
		return c->database;
	return NULL;
}

/* Applies spacectl's context to cfg (below the environment and the flags);
 * errors name the context and its file. */
static void
apply_context(const sk_config_sources *src, sk_controller_config *cfg, sk_errlist *errs)
{
	const sk_config_context *c = src->context;
	char why[256], where[192];

	for (size_t i = 0; c && i < N_SETTINGS; i++) {
		const char *text = context_text(c, &settings[i]);
		json_t *v;
		if (text == NULL || text[0] == '\0')
			continue;
		v = text_value(&settings[i], text);
		if (!set_value(&settings[i], v, cfg, why, sizeof(why))) {
			snprintf(where, sizeof(where), "context \"%s\" %s", c->name ? c->name : "",
			        strcmp(settings[i].path, "mongodb.uri") == 0 ? "mongodbURI"
			                                                     : "database");
			sk_errlist_add(errs, where, c->source, 0, 0, "%s", why);
		}
		json_decref(v);
	}
}

/* client-go's rule: retryPeriod < renewDeadline < leaseDuration, so a
 * holder that cannot renew stops acting before its lease runs out. */
static void
check_lease_timings(const sk_controller_config *cfg, sk_errlist *errs)
{
	if (cfg->renew_deadline_ms >= cfg->lease_duration_ms)
		sk_errlist_add(errs, "controller.renewDeadline", NULL, 0, 0,
		        "must be shorter than controller.leaseDuration");
	if (cfg->retry_period_ms >= cfg->renew_deadline_ms)
		sk_errlist_add(errs, "controller.retryPeriod", NULL, 0, 0,
		        "must be shorter than controller.renewDeadline");
}

size_t
sk_config_check_flags(const sk_config_sources *src, sk_errlist *errs)
{
	sk_controller_config *scratch = sk_config_blank();
	size_t before = errs->len;

	apply_layer(src, false, scratch, errs);
	sk_config_free(scratch);
	return errs->len - before;
}

bool
sk_config_listen_is_loopback(const char *listen)
{
	const char *colon = strrchr(listen, ':');
	size_t n = colon ? (size_t)(colon - listen) : strlen(listen);

	return n == 0 || (n == 9 && strncmp(listen, "localhost", 9) == 0) ||
	        strncmp(listen, "127.", 4) == 0;
}

/* The rules that join several connect settings (after every layer). */
static void
check_connect(const sk_controller_config *c, sk_errlist *errs)
{
	const char *l = c->connect_listen;

	if ((c->connect_tls_cert_file == NULL) != (c->connect_tls_key_file == NULL))
		sk_errlist_add(errs,
		        c->connect_tls_cert_file ? "controller.connectTLSKeyFile"
		                                 : "controller.connectTLSCertFile",
		        NULL, 0, 0, "connectTLSCertFile and connectTLSKeyFile go together");
	if (l && l[0] && !sk_config_listen_is_loopback(l) && c->connect_token_file == NULL &&
	        c->n_connect_tokens == 0 && !c->connect_insecure)
		sk_errlist_add(errs, "controller.connectListen", NULL, 0, 0,
		        "%s is not a loopback address: set controller.connectTokenFile "
		        "(--connect-token-file) or controller.connectTokens, or "
		        "controller.connectInsecure "
		        "(--connect-insecure) to serve the connect API without authentication",
		        l);
}

int
sk_config_resolve(
        const sk_config_sources *src, sk_controller_config **out, sk_errlist *errs, sk_error *err)
{
	sk_controller_config *cfg = NULL;
	size_t before = errs->len;
	int rc;

	*out = NULL;
	if (src->config_path) {
		if ((rc = sk_config_load(src->config_path, &cfg, errs, err)) != SK_OK)
			return rc;
	} else {
		cfg = sk_config_default();
	}
	apply_context(src, cfg, errs);
	apply_layer(src, true, cfg, errs);
	apply_layer(src, false, cfg, errs);
	if (errs->len == before)
		check_connect(cfg, errs);
	check_lease_timings(cfg, errs);
	if (errs->len > before) {
		sk_config_free(cfg);
		return sk_error_set(err, SK_EINVALID, "invalid settings (%zu error%s)",
		        errs->len - before, errs->len - before == 1 ? "" : "s");
	}
	*out = cfg;
	return SK_OK;
}
