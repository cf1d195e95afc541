/* Unit tests for the endpoint label of provider requests (pkg/sandbox/http.c). */
#include <check.h>

#include "sandbox/sandbox.h"

Suite *sk_suite_sandbox_endpoint(void);

static const struct endpoint_case {
	const char *method, *path, *want;
} endpoint_cases[] = {
	{ "POST", "/sandboxes", "POST /sandboxes" },
	{ "GET", "/sandboxes/i7x2k9", "GET /sandboxes/:id" },
	{ "POST", "/sandboxes/i7x2k9/pause", "POST /sandboxes/:id/pause" },
	{ "GET", "/v2/sandboxes?metadata=a%3Db&limit=100", "GET /v2/sandboxes" },
	{ "POST", "/sandbox/0c1d-22/autostop/15", "POST /sandbox/:id/autostop/:n" },
	{ "GET", "/sandbox?limit=100&labels=x", "GET /sandbox" },
	{ "GET", "https://49983-i7x2k9.e2b.app/health", "GET /health" },
	{ "DELETE", "/volumes/vol8k2j4h", "DELETE /volumes/:id" },
	{ "GET", "https://49983-i7x2k9.e2b.app/files?path=%2Fhome", "GET /files" },
	{ "GET", "http://h/toolbox/0c1d-22/files/download?path=a",
	        "GET /toolbox/:id/files/download" },
	{ "GET", "http://127.0.0.1:4000", "GET /" },
	{ "DELETE", NULL, "DELETE /" },
};

START_TEST(test_endpoint)
{
	const struct endpoint_case *c = &endpoint_cases[_i];
	char out[128];

	sk_sandbox_http_endpoint(c->method, c->path, out, sizeof(out));
	ck_assert_str_eq(out, c->want);
}
END_TEST

Suite *
sk_suite_sandbox_endpoint(void)
{
	Suite *s = suite_create("sandbox_endpoint");
	TCase *t = tcase_create("endpoint");

	tcase_add_loop_test(
	        t, test_endpoint, 0, (int)(sizeof(endpoint_cases) / sizeof(endpoint_cases[0])));
	suite_add_tcase(s, t);
	return s;
}
