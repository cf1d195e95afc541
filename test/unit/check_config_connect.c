/* Unit tests of the connect API's settings (pkg/api/config.c): connectListen,
 * connectTokenFile, connectTokens (config_tokens.c), connectInsecure, TLS
 * files, limits, storeUnavailableAfter. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../testutil.h"
#include "api/config.h"
#include "api/errlist.h"
#include "api/flags.h"

Suite *sk_suite_config_connect(void);

#define HEAD "apiVersion: spacekeeper.dev/v1alpha1\nkind: ControllerConfig\n"
#define P0                                                                                         \
	"providers:\n  - name: default\n    type: e2b\n    apiURL: http://127.0.0.1:3000\n"        \
	"    apiKeyEnv: K\n"

static const char *
no_env(const char *name)
{
	return NULL;
}

/* Resolves src (getenv stubbed); returns the config or NULL with errs filled. */
static sk_controller_config *
resolve(sk_config_sources *src, sk_errlist *errs)
{
	sk_controller_config *c = NULL;
	sk_error err = { 0 };

	src->getenv = no_env;
	if (sk_config_resolve(src, &c, errs, &err) != 0)
		return NULL;
	return c;
}

static void
assert_error(const sk_errlist *errs, const char *path, const char *msg)
{
	for (size_t i = 0; i < errs->len; i++)
		if (strcmp(errs->items[i].path, path) == 0 && strstr(errs->items[i].message, msg))
			return;
	ck_abort_msg("no error %s: %s (%zu errors, first %s: %s)", path, msg, errs->len,
	        errs->len ? errs->items[0].path : "-", errs->len ? errs->items[0].message : "-");
}

START_TEST(defaults)
{
	sk_config_sources src = { 0 };
	sk_errlist errs = { 0 };
	sk_controller_config *c = resolve(&src, &errs);

	ck_assert_ptr_nonnull(c);
	ck_assert_str_eq(c->listen, "127.0.0.1:9090");
	ck_assert_str_eq(c->connect_listen, "127.0.0.1:9091"); /* apart from metrics */
	ck_assert_ptr_null(c->connect_token_file);
	ck_assert(!c->connect_insecure);
	ck_assert_int_eq(c->connect_max_waiting, 1024);
	ck_assert_int_eq(c->connect_max_connections, 16384);
	ck_assert_int_eq(c->connect_max_per_ip, 0);
	ck_assert_int_eq(c->store_unavailable_after_ms, 30000);
	sk_config_free(c);
	sk_errlist_dispose(&errs);
}
END_TEST

START_TEST(file_and_flags)
{
	sk_config_sources src = { .connect_max_waiting = "7", .connect_insecure = "true" };
	sk_errlist errs = { 0 };
	sk_controller_config *c;

	src.config_path = sk_test_write_file("connect.yaml",
	        HEAD P0 "controller:\n  connectListen: 0.0.0.0:9443\n"
	                "  connectTokenFile: /run/token\n  connectMaxWaiting: 3\n"
	                "  connectMaxConnectionsPerIP: 50\n  storeUnavailableAfter: 1m\n"
	                "  connectTLSCertFile: /c.pem\n  connectTLSKeyFile: /k.pem\n");
	c = resolve(&src, &errs);
	ck_assert_ptr_nonnull(c);
	ck_assert_str_eq(c->connect_listen, "0.0.0.0:9443");
	ck_assert_str_eq(c->connect_token_file, "/run/token");
	ck_assert_int_eq(c->connect_max_waiting, 7); /* the flag wins */
	ck_assert(c->connect_insecure);
	ck_assert_int_eq(c->connect_max_per_ip, 50);
	ck_assert_int_eq(c->store_unavailable_after_ms, 60000);
	ck_assert_str_eq(c->connect_tls_cert_file, "/c.pem");
	ck_assert_str_eq(c->connect_tls_key_file, "/k.pem");
	sk_config_free(c);
	sk_errlist_dispose(&errs);
}
END_TEST

/* Settings that fail, each with the path and the words of its rule. */
static const struct {
	const char *controller; /* the controller section of a file */
	const char *path;
	const char *msg;
} bad[] = {
	{ "{connectListen: 0.0.0.0:9091}", "controller.connectListen",
	        "not a loopback address: set controller.connectTokenFile" },
	{ "{connectListen: nowhere}", "controller.connectListen", "HOST:PORT" },
	{ "{connectInsecure: 'yes'}", "controller.connectInsecure", "must be true or false" },
	{ "{connectMaxWaiting: 0}", "controller.connectMaxWaiting", "between 1 and 65536" },
	{ "{connectMaxConnections: 2}", "controller.connectMaxConnections", "between 16" },
	{ "{storeUnavailableAfter: 10ms}", "controller.storeUnavailableAfter",
	        "between 1s and 1h" },
	{ "{connectTLSCertFile: /c.pem}", "controller.connectTLSKeyFile", "go together" },
	{ "{connectTLSKeyFile: /k.pem}", "controller.connectTLSCertFile", "go together" },
	{ "{connectTokens: {name: a}}", "controller.connectTokens", "must be a list" },
	{ "{connectTokens: [{name: a, file: /a}]}", "controller.connectTokens[0].selector",
	        "required" },
	{ "{connectTokens: [{name: a, selector: t=a}]}", "controller.connectTokens[0].file",
	        "required" },
	{ "{connectTokens: [{file: /a, selector: t=a}]}", "controller.connectTokens[0].name",
	        "required" },
	{ "{connectTokens: [{name: a, file: '', selector: t=a}]}",
	        "controller.connectTokens[0].file", "must not be empty" },
	{ "{connectTokens: [{name: all, file: /a, selector: t=a}]}",
	        "controller.connectTokens[0].name", "reserved" },
	{ "{connectTokens: [{name: Tenant_A, file: /a, selector: t=a}]}",
	        "controller.connectTokens[0].name", "DNS-1123" },
	{ "{connectTokens: [{name: a, file: /a, selector: 't in (a'}]}",
	        "controller.connectTokens[0].selector", "" },
	{ "{connectTokens: [{name: a, file: /a, selector: t=a, scope: x}]}",
	        "controller.connectTokens[0].scope", "unknown field" },
	{ "{connectTokens: [{name: a, file: /a, selector: t=a}, {name: a, file: /b, selector: "
	  "t=b}]}",
	        "controller.connectTokens[1].name", "duplicate token name" },
	{ "{connectTokens: [7]}", "controller.connectTokens[0]", "must be an object" },
};

START_TEST(bad_settings)
{
	char yaml[512];
	sk_config_sources src = { 0 };
	sk_errlist errs = { 0 };

	snprintf(yaml, sizeof(yaml), HEAD P0 "controller: %s\n", bad[_i].controller);
	src.config_path = sk_test_write_file("bad-connect.yaml", yaml);
	ck_assert_ptr_null(resolve(&src, &errs));
	assert_error(&errs, bad[_i].path, bad[_i].msg);
	sk_errlist_dispose(&errs);
}
END_TEST

/* Off loopback: a token, or insecure said out loud. */
START_TEST(non_loopback_needs_token_or_insecure)
{
	sk_config_sources with_token = { .connect_listen = "10.0.0.1:9091",
		.connect_token_file = "/t" };
	sk_config_sources insecure = { .connect_listen = "0.0.0.0:9091",
		.connect_insecure = "true" };
	sk_config_sources off = { .connect_listen = "" };
	sk_errlist errs = { 0 };
	sk_controller_config *c;

	ck_assert_ptr_nonnull(c = resolve(&with_token, &errs));
	sk_config_free(c);
	ck_assert_ptr_nonnull(c = resolve(&insecure, &errs));
	sk_config_free(c);
	ck_assert_ptr_nonnull(c = resolve(&off, &errs)); /* "" switches it off */
	ck_assert_str_eq(c->connect_listen, "");
	sk_config_free(c);
	ck_assert_uint_eq(errs.len, 0);
	ck_assert(sk_config_listen_is_loopback("127.0.0.1:9091"));
	ck_assert(sk_config_listen_is_loopback("127.1.2.3:1"));
	ck_assert(sk_config_listen_is_loopback("localhost:1"));
	ck_assert(sk_config_listen_is_loopback(":9091"));
	ck_assert(!sk_config_listen_is_loopback("0.0.0.0:9091"));
	ck_assert(!sk_config_listen_is_loopback("10.1.2.3:9091"));
	ck_assert(!sk_config_listen_is_loopback("localhost.example.com:1"));
	sk_errlist_dispose(&errs);
}
END_TEST

/* Tenants' tokens: decoded in order, and enough for a non-loopback listener. */
START_TEST(scoped_tokens)
{
	sk_config_sources src = { 0 };
	sk_errlist errs = { 0 };
	sk_controller_config *c;

	src.config_path = sk_test_write_file("tokens.yaml",
	        HEAD P0 "controller:\n  connectListen: 0.0.0.0:9443\n  connectTokens:\n"
	                "    - {name: tenant-a, file: /run/a, selector: tenant=a}\n"
	                "    - name: tenant-b\n      file: /run/b\n"
	                "      selector: 'tenant in (b, c),!frozen'\n");
	c = resolve(&src, &errs);
	ck_assert_msg(c != NULL, "%s", errs.len ? errs.items[0].message : "-");
	ck_assert_uint_eq(c->n_connect_tokens, 2);
	ck_assert_ptr_null(c->connect_token_file);
	ck_assert_str_eq(c->connect_tokens[0].name, "tenant-a");
	ck_assert_str_eq(c->connect_tokens[0].file, "/run/a");
	ck_assert_str_eq(c->connect_tokens[0].selector, "tenant=a");
	ck_assert_str_eq(c->connect_tokens[1].name, "tenant-b");
	ck_assert_str_eq(c->connect_tokens[1].selector, "tenant in (b, c),!frozen");
	sk_config_free(c);
	/* an error names the file's line and column */
	src.config_path = sk_test_write_file("tokens-bad.yaml",
	        HEAD P0 "controller:\n  connectTokens:\n"
	                "    - {name: a, file: /run/a, selector: 'a in b'}\n");
	ck_assert_ptr_null(resolve(&src, &errs));
	assert_error(&errs, "controller.connectTokens[0].selector", "");
	ck_assert_int_eq(errs.items[0].line, 10);
	ck_assert_int_gt(errs.items[0].col, 1);
	sk_errlist_dispose(&errs);
}
END_TEST

START_TEST(token_file)
{
	sk_controller_config c = { 0 };
	sk_error err = { 0 };
	char msg[1024], *t;

	ck_assert_ptr_null(sk_config_connect_token(&c, &err)); /* none set: no error */
	ck_assert_int_eq(err.code, 0);
	c.connect_token_file = (char *)sk_test_write_file("tok", "abc-123 \r\n\n");
	chmod(c.connect_token_file, 0600);
	t = sk_config_connect_token(&c, &err);
	ck_assert_str_eq(t, "abc-123");
	free(t);
	ck_assert(!sk_config_connect_token_warning(&c, msg, sizeof(msg)));
	chmod(c.connect_token_file, 0644);
	ck_assert(sk_config_connect_token_warning(&c, msg, sizeof(msg)));
	ck_assert_ptr_nonnull(strstr(msg, "mode 0644"));
	c.connect_token_file = (char *)sk_test_write_file("tok-empty", "\n");
	ck_assert_ptr_null(sk_config_connect_token(&c, &err));
	ck_assert_ptr_nonnull(strstr(err.message, "connect token file"));
	ck_assert_ptr_nonnull(strstr(err.message, "is empty"));
	c.connect_token_file = (char *)sk_test_write_file("tok-two", "a\nb\n");
	ck_assert_ptr_null(sk_config_connect_token(&c, &err));
	ck_assert_ptr_nonnull(strstr(err.message, "one line"));
	c.connect_token_file = "/nonexistent/token";
	ck_assert_ptr_null(sk_config_connect_token(&c, &err));
	ck_assert_ptr_nonnull(strstr(err.message, "/nonexistent/token: cannot be read"));
}
END_TEST

Suite *
sk_suite_config_connect(void)
{
	Suite *s = suite_create("config_connect");
	TCase *tc = tcase_create("connect");

	tcase_add_test(tc, defaults);
	tcase_add_test(tc, file_and_flags);
	tcase_add_loop_test(tc, bad_settings, 0, (int)(sizeof(bad) / sizeof(bad[0])));
	tcase_add_test(tc, non_loopback_needs_token_or_insecure);
	tcase_add_test(tc, token_file);
	tcase_add_test(tc, scoped_tokens);
	suite_add_tcase(s, tc);
	return s;
}
