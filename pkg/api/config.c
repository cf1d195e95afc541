/*
 * api/config: the ControllerConfig (manifests/config/spacekeeper.yaml).
 * Parsed with the api YAML loader and validated like a UserSpace: strict
 * fields, enums, durations, bounds, every error with its field path and
 * file:line:col. API keys are read on demand from the named file or
 * variable; they are never stored in the config and never appear in errors.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api_int.h"

#define CFG_DEFAULT_URL "http://127.0.0.1:3000"
#define CFG_KEY_MAX 4096
#define SK_IDENTITY_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"

typedef struct cfg_ctx {
	const sk_doc *doc;
	sk_errlist *errs;
} cfg_ctx;

/* ---- typed field readers: each reports into errs and returns false when bad ---- */

static json_t *
field(cfg_ctx *c, json_t *obj, const char *parent, const char *key, bool required)
{
	json_t *v = json_object_get(obj, key);

	if (v == NULL && required) {
		char *p = sk_path_join(parent, key);
		sk_doc_error(c->errs, c->doc, p, "required");
		free(p);
	}
	return v;
}

static bool
known_fields(cfg_ctx *c, json_t *obj, const char *path, const char *const *allowed)
{
	const char *k;
	json_t *v;
	bool ok = true;

	json_object_foreach(obj, k, v)
	{
		size_t i;
		for (i = 0; allowed[i] && strcmp(allowed[i], k) != 0; i++)
			;
		if (allowed[i] == NULL) {
			char *p = sk_path_join(path, k);
			sk_doc_error(c->errs, c->doc, p, "unknown field");
			free(p);
			ok = false;
		}
	}
	return ok;
}

static bool
want_object(cfg_ctx *c, json_t *v, const char *path)
{
	if (json_is_object(v))
		return true;
	sk_doc_error(c->errs, c->doc, path, "must be an object");
	return false;
}

static const char *
want_string(cfg_ctx *c, json_t *v, const char *path, bool nonempty)
{
	if (!json_is_string(v)) {
		sk_doc_error(c->errs, c->doc, path, "must be a string");
		return NULL;
	}
	if (nonempty && json_string_length(v) == 0) {
		sk_doc_error(c->errs, c->doc, path, "must not be empty");
		return NULL;
	}
	return json_string_value(v);
}

static bool
want_int(cfg_ctx *c, json_t *v, const char *path, int64_t min, int64_t max, int *out)
{
	int64_t n;

	if (!sk_json_int(v, &n) || json_is_boolean(v)) {
		sk_doc_error(c->errs, c->doc, path, "must be an integer");
		return false;
	}
	if (n < min || n > max) {
		sk_doc_error(c->errs, c->doc, path, "must be between %lld and %lld", (long long)min,
		        (long long)max);
		return false;
	}
	*out = (int)n;
	return true;
}

static bool
want_bool(cfg_ctx *c, json_t *v, const char *path, bool *out)
{
	if (!json_is_boolean(v)) {
		sk_doc_error(c->errs, c->doc, path, "must be true or false");
		return false;
	}
	*out = json_is_true(v);
	return true;
}

static bool
want_duration(cfg_ctx *c, json_t *v, const char *path, int64_t min, int64_t max, int64_t *out)
{
	const char *s = json_string_value(v);
	char lo[32], hi[32];
	int64_t ms;

	if (s == NULL || sk_duration_parse(s, &ms) != SK_OK) {
		sk_doc_error(c->errs, c->doc, path, "must be a duration like 30s, 15m or 1h30m");
		return false;
	}
	if (ms < min || ms > max) {
		sk_duration_format(min, lo, sizeof(lo));
		sk_duration_format(max, hi, sizeof(hi));
		sk_doc_error(c->errs, c->doc, path, "must be between %s and %s", lo, hi);
		return false;
	}
	*out = ms;
	return true;
}

static bool
want_url(cfg_ctx *c, json_t *v, const char *path, char **out)
{
	const char *s = want_string(c, v, path, true);

	if (s == NULL)
		return false;
	if ((strncmp(s, "http://", 7) != 0 && strncmp(s, "https://", 8) != 0) ||
	        strchr(s, ' ') != NULL || s[strlen(s) - 1] == ':' ||
	        strlen(s) == (strncmp(s, "https", 5) == 0 ? 8u : 7u)) {
		sk_doc_error(c->errs, c->doc, path, "must be an http:// or https:// URL");
		return false;
	}
	free(*out);
	*out = sk_strdup(s);
	return true;
}

static bool
valid_env_name(const char *s)
{
	if (s == NULL || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (const char *p = s; *p; p++)
		if (!(isalnum((unsigned char)*p) || *p == '_'))
			return false;
	return strlen(s) <= 255;
}

/* ---- defaults ---- */

static void
provider_defaults(sk_provider_config *p)
{
	memset(p, 0, sizeof(*p));
	p->type = SK_PROVIDER_E2B;
	p->domain = sk_strdup("e2b.app");
	p->max_in_flight = 64;
	p->qps = 200;
	p->burst = 400;
	p->request_timeout_ms = 30000;
	p->sandbox_timeout_ms = 3600000;
	p->orphan_grace_ms = 600000;
}

static sk_controller_config *
config_new(void)
{
	sk_controller_config *c = sk_calloc(1, sizeof(*c));

	c->mongodb_uri = sk_strdup("mongodb://127.0.0.1:27017");
	c->database = sk_strdup("spacekeeper");
	c->workers = 8;
	c->resync_ms = 30000;
	c->listen = sk_strdup("127.0.0.1:9090");
	c->connect_listen = sk_strdup("127.0.0.1:9091");
	c->connect_max_waiting = 1024;
	c->connect_max_connections = 16384;
	c->store_unavailable_after_ms = 30000;
	c->shards = 64;
	c->identity = sk_strdup("");
	c->lease_duration_ms = 15000; /* client-go leaderelection's defaults */
	c->renew_deadline_ms = 10000;
	c->retry_period_ms = 2000;
	c->advertise_address = sk_strdup("");
	return c;
}

sk_controller_config *
sk_config_default(void)
{
	sk_controller_config *c = config_new();

	c->providers = sk_calloc(1, sizeof(*c->providers));
	c->n_providers = 1;
	provider_defaults(&c->providers[0]);
	c->providers[0].name = sk_strdup("default");
	c->providers[0].api_url = sk_strdup(CFG_DEFAULT_URL);
	/* The local sandboxsim serves the data plane too: without this the
	 * envd probe went to https://49983-<id>.e2b.app and every running
	 * sandbox looked DataPlaneUnreachable. */
	c->providers[0].sandbox_url = sk_strdup(CFG_DEFAULT_URL);
	c->providers[0].api_key_env = sk_strdup("E2B_API_KEY");
	return c;
}

static void
provider_dispose(sk_provider_config *p)
{
	free(p->name);
	free(p->api_url);
	free(p->sandbox_url);
	free(p->domain);
	free(p->api_key_env);
	free(p->api_key_file);
}

void
sk_config_free(sk_controller_config *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i < c->n_providers; i++)
		provider_dispose(&c->providers[i]);
	free(c->providers);
	free(c->mongodb_uri);
	free(c->database);
	free(c->listen);
	free(c->connect_listen);
	free(c->connect_token_file);
	free(c->connect_tls_cert_file);
	free(c->connect_tls_key_file);
	free(c->identity);
	free(c->advertise_address);
	free(c);
}

const sk_provider_config *
sk_config_provider(const sk_controller_config *c, const char *name)
{
	for (size_t i = 0; c && i < c->n_providers; i++)
		if (strcmp(c->providers[i].name, name ? name : "default") == 0)
			return &c->providers[i];
	return NULL;
}

/* ---- settings a flag or the environment can also set ----
 * One table and one checker for the file, the flags and the environment:
 * the same bounds and messages wherever a value comes from. */

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

/* The settings of one file section ("mongodb", "controller"). */
static void
decode_section(cfg_ctx *c, json_t *m, const char *section, sk_controller_config *out)
{
	const char *allowed[N_SETTINGS + 1];
	size_t na = 0, len = strlen(section);
	char why[256];

	if (!want_object(c, m, section))
		return;
	for (size_t i = 0; i < N_SETTINGS; i++) {
		const cfg_setting *st = &settings[i];
		json_t *v;
		if (strncmp(st->path, section, len) != 0 || st->path[len] != '.')
			continue;
		allowed[na++] = st->path + len + 1;
		if ((v = json_object_get(m, st->path + len + 1)) != NULL &&
		        !set_value(st, v, out, why, sizeof(why)))
			sk_doc_error(c->errs, c->doc, st->path, "%s", why);
	}
	allowed[na] = NULL;
	known_fields(c, m, section, allowed);
}

static void
decode_provider_key(cfg_ctx *c, json_t *m, const char *path, sk_provider_config *p)
{
	json_t *env = json_object_get(m, "apiKeyEnv"), *file = json_object_get(m, "apiKeyFile");
	char *fp;
	const char *s;

	fp = sk_path_join(path, "apiKeyEnv");
	if (env && (s = want_string(c, env, fp, true))) {
		if (!valid_env_name(s))
			sk_doc_error(c->errs, c->doc, fp,
			        "must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*)");
		p->api_key_env = sk_strdup(s);
	}
	free(fp);
	fp = sk_path_join(path, "apiKeyFile");
	if (file && (s = want_string(c, file, fp, true)))
		p->api_key_file = sk_strdup(s);
	if (env && file)
		sk_doc_error(
		        c->errs, c->doc, fp, "apiKeyEnv and apiKeyFile are mutually exclusive");
	free(fp);
	if (!env && !file && p->type != SK_PROVIDER_CUBE)
		sk_doc_error(c->errs, c->doc, path, "one of apiKeyEnv or apiKeyFile is required");
}

static void
decode_provider_limits(cfg_ctx *c, json_t *m, const char *path, sk_provider_config *p)
{
	json_t *v;
	char *fp;

#define SUB(name) (free(fp), fp = sk_path_join(path, name))
	fp = NULL;
	if ((v = field(c, m, path, "maxInFlight", false)) && SUB("maxInFlight"))
		want_int(c, v, fp, 1, 4096, &p->max_in_flight);
	if ((v = field(c, m, path, "qps", false)) && SUB("qps")) {
		if (!json_is_number(v) || !(json_number_value(v) > 0) ||
		        !isfinite(json_number_value(v)) || json_number_value(v) > 1e6)
			sk_doc_error(c->errs, c->doc, fp, "must be a number > 0 (at most 1000000)");
		else
			p->qps = json_number_value(v);
	}
	if ((v = field(c, m, path, "burst", false)) && SUB("burst"))
		want_int(c, v, fp, 1, 1000000, &p->burst);
	if ((v = field(c, m, path, "requestTimeout", false)) && SUB("requestTimeout"))
		want_duration(c, v, fp, 100, 600000, &p->request_timeout_ms);
	if ((v = field(c, m, path, "sandboxTimeout", false)) && SUB("sandboxTimeout"))
		want_duration(c, v, fp, 1000, 86400000, &p->sandbox_timeout_ms);
	if ((v = field(c, m, path, "insecureSkipTLSVerify", false)) && SUB("insecureSkipTLSVerify"))
		want_bool(c, v, fp, &p->insecure_skip_tls_verify);
	if ((v = field(c, m, path, "deleteOrphans", false)) && SUB("deleteOrphans"))
		want_bool(c, v, fp, &p->delete_orphans);
	if ((v = field(c, m, path, "orphanGracePeriod", false)) && SUB("orphanGracePeriod"))
		want_duration(c, v, fp, 0, 30LL * 86400000, &p->orphan_grace_ms);
#undef SUB
	free(fp);
}

static void
decode_provider(cfg_ctx *c, json_t *m, const char *path, sk_provider_config *p)
{
	static const char *const allowed[] = { "name", "type", "apiURL", "sandboxURL", "domain",
		"apiKeyEnv", "apiKeyFile", "maxInFlight", "qps", "burst", "requestTimeout",
		"sandboxTimeout", "insecureSkipTLSVerify", "deleteOrphans", "orphanGracePeriod",
		NULL };
	static const char *const types[] = { "e2b", "cube", "daytona", NULL };
	json_t *v;
	const char *s;
	char *fp;

	if (!want_object(c, m, path))
		return;
	known_fields(c, m, path, allowed);
	fp = sk_path_join(path, "name");
	if ((v = field(c, m, path, "name", true)) && (s = want_string(c, v, fp, true))) {
		if (!sk_valid_name(s))
			sk_doc_error(c->errs, c->doc, fp,
			        "must be a DNS-1123 label (lowercase letters, digits, '-', 1..63)");
		p->name = sk_strdup(s);
	}
	free(fp);
	fp = sk_path_join(path, "type");
	if ((v = field(c, m, path, "type", true)) && (s = want_string(c, v, fp, true))) {
		size_t i;
		for (i = 0; types[i] && strcmp(types[i], s) != 0; i++)
			;
		if (types[i] == NULL)
			sk_doc_error(c->errs, c->doc, fp, "must be one of: e2b, cube, daytona");
		else
			p->type = (sk_provider_type)i;
	}
	free(fp);
	fp = sk_path_join(path, "apiURL");
	if ((v = field(c, m, path, "apiURL", true)))
		want_url(c, v, fp, &p->api_url);
	free(fp);
	fp = sk_path_join(path, "sandboxURL");
	if ((v = field(c, m, path, "sandboxURL", false)))
		want_url(c, v, fp, &p->sandbox_url);
	free(fp);
	fp = sk_path_join(path, "domain");
	if ((v = field(c, m, path, "domain", false)) && (s = want_string(c, v, fp, true))) {
		if (!sk_valid_dns_subdomain(s))
			sk_doc_error(c->errs, c->doc, fp, "must be a DNS name");
		free(p->domain);
		p->domain = sk_strdup(s);
	}
	free(fp);
	if (json_object_get(m, "domain") == NULL && p->type == SK_PROVIDER_CUBE) {
		free(p->domain); /* CubeSandbox installs serve *.cube.app */
		p->domain = sk_strdup("cube.app");
	}
	decode_provider_key(c, m, path, p);
	decode_provider_limits(c, m, path, p);
}

static void
decode_providers(cfg_ctx *c, json_t *arr, sk_controller_config *out)
{
	size_t i;
	json_t *item;

	if (!json_is_array(arr) || json_array_size(arr) == 0) {
		sk_doc_error(c->errs, c->doc, "providers", "must be a non-empty list");
		return;
	}
	out->providers = sk_calloc(json_array_size(arr), sizeof(*out->providers));
	json_array_foreach(arr, i, item)
	{
		char *path = sk_path_index("providers", i);
		sk_provider_config *p = &out->providers[out->n_providers++];
		provider_defaults(p);
		decode_provider(c, item, path, p);
		for (size_t j = 0; p->name && j < i; j++)
			if (out->providers[j].name &&
			        strcmp(out->providers[j].name, p->name) == 0) {
				char *np = sk_path_join(path, "name");
				sk_doc_error(c->errs, c->doc, np, "duplicate provider name \"%s\"",
				        p->name);
				free(np);
				break;
			}
		free(path);
	}
}

static void
decode_root(cfg_ctx *c, json_t *root, sk_controller_config *out)
{
	static const char *const allowed[] = { "apiVersion", "kind", "mongodb", "providers",
		"controller", NULL };
	json_t *v;
	const char *s;

	if (!want_object(c, root, ""))
		return;
	known_fields(c, root, "", allowed);
	if ((v = field(c, root, "", "apiVersion", true)) &&
	        (s = want_string(c, v, "apiVersion", true)) && strcmp(s, SK_API_VERSION) != 0)
		sk_doc_error(c->errs, c->doc, "apiVersion", "must be %s", SK_API_VERSION);
	if ((v = field(c, root, "", "kind", true)) && (s = want_string(c, v, "kind", true)) &&
	        strcmp(s, SK_KIND_CONFIG) != 0)
		sk_doc_error(c->errs, c->doc, "kind", "must be %s", SK_KIND_CONFIG);
	if ((v = field(c, root, "", "mongodb", false)))
		decode_section(c, v, "mongodb", out);
	if ((v = field(c, root, "", "providers", true)))
		decode_providers(c, v, out);
	if ((v = field(c, root, "", "controller", false)))
		decode_section(c, v, "controller", out);
}

int
sk_config_load(const char *path, sk_controller_config **out, sk_errlist *errs, sk_error *err)
{
	sk_doclist docs = { 0 };
	sk_controller_config *cfg = NULL;
	cfg_ctx c = { .errs = errs };
	size_t before = errs->len;
	int rc;

	*out = NULL;
	rc = sk_doc_load_path(path, &docs, err);
	if (rc != SK_OK)
		return rc;
	if (docs.len != 1) {
		rc = sk_error_set(err, SK_EINVALID,
		        "%s: expected one ControllerConfig document, found %zu", path, docs.len);
		goto done;
	}
	c.doc = docs.items[0];
	cfg = config_new();
	decode_root(&c, sk_doc_root(c.doc), cfg);
	if (errs->len > before) {
		rc = sk_error_set(err, SK_EINVALID, "%s: invalid ControllerConfig (%zu errors)",
		        path, errs->len - before);
		goto done;
	}
	*out = cfg;
	cfg = NULL;
done:
	sk_config_free(cfg);
	sk_doclist_dispose(&docs);
	return rc;
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
	sk_controller_config *scratch = config_new();
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
	        !c->connect_insecure)
		sk_errlist_add(errs, "controller.connectListen", NULL, 0, 0,
		        "%s is not a loopback address: set controller.connectTokenFile "
		        "(--connect-token-file), or controller.connectInsecure "
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

/* ---- keys ---- */

/* A key goes into an HTTP header: no CR, LF or other control bytes. */
static bool
has_control(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return true;
	return false;
}

static char *
key_from_file(const char *path, const char *what, sk_error *err)
{
	char *data = NULL;
	size_t len = 0;
	sk_error ferr = { 0 };

	if (sk_file_read(path, CFG_KEY_MAX, &data, &len, &ferr) != SK_OK) {
		/* ferr names the path only; never the content */
		sk_error_set(err, ferr.code == SK_EINVALID ? SK_EINVALID : SK_EIO, "%s %s: %s",
		        what, path, ferr.code == SK_EINVALID ? "too large" : "cannot be read");
		return NULL;
	}
	while (len > 0 &&
	        (data[len - 1] == '\n' || data[len - 1] == '\r' || data[len - 1] == ' ' ||
	                data[len - 1] == '\t'))
		data[--len] = '\0';
	if (len == 0 || has_control(data, len)) {
		memset(data, 0, len);
		free(data);
		sk_error_set(err, SK_EINVALID, "%s %s: %s", what, path,
		        len == 0 ? "is empty" : "must hold one line without control characters");
		return NULL;
	}
	return data;
}

char *
sk_config_connect_token(const sk_controller_config *c, sk_error *err)
{
	if (c->connect_token_file == NULL)
		return NULL;
	return key_from_file(c->connect_token_file, "connect token file", err);
}

bool
sk_config_connect_token_warning(const sk_controller_config *c, char *msg, size_t len)
{
	struct stat st;
	const char *f = c->connect_token_file;

	if (f == NULL || stat(f, &st) != 0 || (st.st_mode & (S_IRWXG | S_IRWXO)) == 0)
		return false;
	snprintf(msg, len,
	        "connect token file %s is accessible by others (mode %04o); it should be "
	        "readable by its owner only (chmod 600 %s)",
	        f, (unsigned)(st.st_mode & 07777), f);
	return true;
}

bool
sk_provider_key_file_warning(const sk_provider_config *p, char *msg, size_t len)
{
	struct stat st;

	if (p->api_key_file == NULL || stat(p->api_key_file, &st) != 0 ||
	        (st.st_mode & (S_IRWXG | S_IRWXO)) == 0)
		return false;
	snprintf(msg, len,
	        "provider %s: API key file %s is accessible by others (mode %04o); it should be "
	        "readable by its owner only (chmod 600 %s)",
	        p->name ? p->name : "?", p->api_key_file, (unsigned)(st.st_mode & 07777),
	        p->api_key_file);
	return true;
}

char *
sk_provider_api_key(const sk_provider_config *p, sk_error *err)
{
	const char *v;

	if (p->api_key_file)
		return key_from_file(p->api_key_file, "API key file", err);
	if (p->api_key_env == NULL) {
		sk_error_set(err, SK_EINVALID, "provider %s: no apiKeyEnv or apiKeyFile",
		        p->name ? p->name : "?");
		return NULL;
	}
	v = getenv(p->api_key_env);
	if (v == NULL || v[0] == '\0') {
		sk_error_set(err, SK_EINVALID, "provider %s: environment variable %s is not set",
		        p->name ? p->name : "?", p->api_key_env);
		return NULL;
	}
	if (has_control(v, strlen(v))) {
		sk_error_set(err, SK_EINVALID,
		        "provider %s: environment variable %s holds control characters",
		        p->name ? p->name : "?", p->api_key_env);
		return NULL;
	}
	return sk_strdup(v);
}
