/*
 * api/config: the ControllerConfig (manifests/config/spacekeeper.yaml).
 * Parsed with the api YAML loader and validated like a UserSpace: strict
 * fields, enums, durations, bounds, every error with its field path and
 * file:line:col (the settings shared with flags and the environment are in
 * settings.c). API keys are read on demand from the named file or
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
#include "config.h"
#include "doc.h"
#include "errlist.h"
#include "flags.h"
#include "meta.h"
#include "names.h"
#include "schema.h"

#define CFG_DEFAULT_URL "http://127.0.0.1:3000"
#define CFG_KEY_MAX 4096

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
	p->sandbox_timeout_ms = sk_default_sandbox_timeout_ms;
	p->orphan_grace_ms = 600000;
	p->max_queued = 1000;
	p->evict_after_ms = 60000;
	p->learned_for_ms = 5 * 60000;
}

sk_controller_config *
sk_config_blank(void)
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
	sk_controller_config *c = sk_config_blank();

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
	sk_config_connect_tokens_free(c);
	sk_config_archive_free(c);
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

/* The settings of one file section ("mongodb", "controller"), through the
 * settings table (settings.c). */
static void
decode_section(cfg_ctx *c, json_t *m, const char *section, sk_controller_config *out)
{
	size_t n = sk_config_setting_count(), na = 0, len = strlen(section);
	const char **allowed = sk_calloc(n + 2, sizeof(*allowed));
	char why[256];

	if (!want_object(c, m, section))
		goto done;
	for (size_t i = 0; i < n; i++) {
		const char *path = sk_config_setting_path(i);
		json_t *v;
		if (strncmp(path, section, len) != 0 || path[len] != '.')
			continue;
		allowed[na++] = path + len + 1;
		if ((v = json_object_get(m, path + len + 1)) != NULL &&
		        !sk_config_setting_set(i, v, out, why, sizeof(why)))
			sk_doc_error(c->errs, c->doc, path, "%s", why);
	}
	if (strcmp(section, "controller") == 0) /* a list: decoded apart */
		allowed[na++] = "connectTokens";
	allowed[na] = NULL;
	known_fields(c, m, section, allowed);
done:
	free(allowed);
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
	if ((v = field(c, m, path, "pausedRetention", false)) && SUB("pausedRetention"))
		want_duration(c, v, fp, 0, 365LL * 86400000, &p->paused_retention_ms);
#undef SUB
	free(fp);
}

/* A number in [0, max] (a rate or a price); false when bad. */
static bool
want_number(cfg_ctx *c, json_t *v, const char *path, double max, double *out)
{
	if (!json_is_number(v) || !(json_number_value(v) >= 0) || json_number_value(v) > max) {
		sk_doc_error(c->errs, c->doc, path, "must be a number between 0 and %g", max);
		return false;
	}
	*out = json_number_value(v);
	return true;
}

/* capacity: {maxRunning, createsPerSecond, maxQueued, evictAfter, learnedFor} and price:
 * {runningPerHour, pausedPerHour}: what the provider's plan allows and costs. */
static void
decode_provider_plan(cfg_ctx *c, json_t *m, const char *path, sk_provider_config *p)
{
	static const char *const cap_fields[] = { "maxRunning", "createsPerSecond", "maxQueued",
		"evictAfter", "learnedFor", NULL };
	static const char *const price_fields[] = { "runningPerHour", "pausedPerHour", NULL };
	json_t *cap = json_object_get(m, "capacity"), *price = json_object_get(m, "price"), *v;
	char *sub = sk_path_join(path, "capacity"), *fp = NULL;

#define SUB(name) (free(fp), fp = sk_path_join(sub, name))
	if (cap && want_object(c, cap, sub) && known_fields(c, cap, sub, cap_fields)) {
		if ((v = json_object_get(cap, "maxRunning")) && SUB("maxRunning"))
			want_int(c, v, fp, 0, 1000000, &p->max_running);
		if ((v = json_object_get(cap, "createsPerSecond")) && SUB("createsPerSecond"))
			want_number(c, v, fp, 1e6, &p->creates_per_second);
		if ((v = json_object_get(cap, "maxQueued")) && SUB("maxQueued"))
			want_int(c, v, fp, 0, 1000000, &p->max_queued);
		if ((v = json_object_get(cap, "evictAfter")) && SUB("evictAfter"))
			want_duration(c, v, fp, 0, 86400000, &p->evict_after_ms);
		if ((v = json_object_get(cap, "learnedFor")) && SUB("learnedFor"))
			want_duration(c, v, fp, 1000, 86400000, &p->learned_for_ms);
	}
	free(sub);
	sub = sk_path_join(path, "price");
	if (price && want_object(c, price, sub) && known_fields(c, price, sub, price_fields)) {
		p->has_price = true;
		if ((v = json_object_get(price, "runningPerHour")) && SUB("runningPerHour"))
			want_number(c, v, fp, 1e9, &p->price_running_per_hour);
		if ((v = json_object_get(price, "pausedPerHour")) && SUB("pausedPerHour"))
			want_number(c, v, fp, 1e9, &p->price_paused_per_hour);
	}
#undef SUB
	free(fp);
	free(sub);
}

static void
decode_provider(cfg_ctx *c, json_t *m, const char *path, sk_provider_config *p)
{
	static const char *const allowed[] = { "name", "type", "apiURL", "sandboxURL", "domain",
		"apiKeyEnv", "apiKeyFile", "maxInFlight", "qps", "burst", "requestTimeout",
		"sandboxTimeout", "insecureSkipTLSVerify", "deleteOrphans", "orphanGracePeriod",
		"pausedRetention", "capacity", "price", NULL };
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
	decode_provider_plan(c, m, path, p);
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
		"controller", "archive", NULL };
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
	if ((v = field(c, root, "", "controller", false))) {
		decode_section(c, v, "controller", out);
		if (json_is_object(v) && (v = json_object_get(v, "connectTokens")) != NULL)
			sk_config_decode_connect_tokens(c->doc, c->errs, v, out);
	}
	if ((v = field(c, root, "", "archive", false)))
		sk_config_decode_archive(c->doc, c->errs, v, out);
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
	cfg = sk_config_blank();
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

char *
sk_config_token_read(const char *path, const char *what, sk_error *err)
{
	return key_from_file(path, what, err);
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
	char *key;

	if (p->api_key_file) {
		key = key_from_file(p->api_key_file, "API key file", err);
		if (key == NULL)
			sk_error_prefix(err, "provider %s", p->name ? p->name : "?");
		return key;
	}
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
