/*
 * sandboxsim: each sandbox's network policy, as the providers take it and
 * report it, and honoured by the emulated processes.
 *
 * Stored per sandbox (sb->net, NULL: open egress) as
 *   {"allowInternetAccess": bool, "allowOut": [...], "denyOut": [...],
 *    "allowPublicTraffic": bool}
 * from E2B's create (allow_internet_access, network{allowOut, denyOut,
 * allowPublicTraffic}; a host name in denyOut is a 400, allowPublicTraffic
 * false without secure a 400), E2B's PUT /sandboxes/{id}/network (the
 * network object; "0.0.0.0/0" in denyOut is internet access off) and
 * Daytona's create (networkBlockAll, networkAllowList "a,b"). E2B's detail
 * returns allowInternetAccess and network, Daytona's networkBlockAll and
 * networkAllowList; Cube takes the create fields and reports none.
 *
 * A command that opens a connection (`curl URL`, `wget URL`, `nc [-z] HOST
 * PORT`) succeeds when the policy lets the destination through and fails
 * as a blocked connection does otherwise (curl exit 7, nc exit 1): allowOut
 * (an address in a CIDR, a host name or *. wildcard) wins, then denyOut,
 * then internet access. Nothing is really sent.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim.h"

#define NET_ALL_V4 "0.0.0.0/0"

/* ---- matching ---- */

typedef struct addr {
	int family;
	unsigned char b[16];
} addr;

static bool
parse_addr(const char *s, addr *a)
{
	a->family = AF_INET;
	if (inet_pton(AF_INET, s, a->b) == 1)
		return true;
	a->family = AF_INET6;
	return inet_pton(AF_INET6, s, a->b) == 1;
}

/* An address or CIDR (family and prefix bits); false when neither. */
static bool
parse_cidr(const char *s, addr *a, int *bits)
{
	const char *slash = strchr(s, '/');
	char host[64];
	size_t n = slash ? (size_t)(slash - s) : strlen(s);

	if (n >= sizeof(host))
		return false;
	memcpy(host, s, n);
	host[n] = '\0';
	if (!parse_addr(host, a))
		return false;
	*bits = a->family == AF_INET ? 32 : 128;
	if (slash) {
		char *end;
		long p = strtol(slash + 1, &end, 10);
		if (*end != '\0' || slash[1] == '\0' || p < 0 || p > *bits)
			return false;
		*bits = (int)p;
	}
	return true;
}

static bool
in_cidr(const addr *ip, const char *cidr)
{
	addr net;
	int bits;

	if (!parse_cidr(cidr, &net, &bits) || net.family != ip->family)
		return false;
	for (int i = 0; i < bits; i++) {
		int byte = i / 8, bit = 7 - i % 8;
		if (((ip->b[byte] >> bit) & 1) != ((net.b[byte] >> bit) & 1))
			return false;
	}
	return true;
}

/* A host name against a rule: equal, or "*.example.com" for its subdomains. */
static bool
host_matches(const char *host, const char *rule)
{
	size_t h = strlen(host), r;

	if (strncmp(rule, "*.", 2) != 0)
		return strcasecmp(host, rule) == 0;
	rule += 1; /* ".example.com" */
	r = strlen(rule);
	return h > r && strcasecmp(host + h - r, rule) == 0;
}

static bool
listed(const json_t *list, const char *dest, const addr *ip)
{
	json_t *v;
	size_t i;

	json_array_foreach((json_t *)list, i, v)
	{
		const char *rule = json_string_value(v);
		if (rule && (ip ? in_cidr(ip, rule) : host_matches(dest, rule)))
			return true;
	}
	return false;
}

bool
sim_net_allows(const sim_sandbox *sb, const char *dest)
{
	addr ip;
	bool is_ip = parse_addr(dest, &ip);
	const addr *a = is_ip ? &ip : NULL;

	if (sb->net == NULL)
		return true;
	if (listed(json_object_get(sb->net, "allowOut"), dest, a))
		return true;
	if (listed(json_object_get(sb->net, "denyOut"), dest, a))
		return false;
	return json_is_true(json_object_get(sb->net, "allowInternetAccess"));
}

/* ---- what the APIs take and report ---- */

static json_t *
strings_of(const json_t *a, const char *skip, const char **bad, bool ip_only)
{
	json_t *out = json_array(), *v;
	size_t i;

	json_array_foreach((json_t *)a, i, v)
	{
		const char *s = json_string_value(v);
		addr x;
		int bits;
		if (s == NULL || (ip_only && !parse_cidr(s, &x, &bits))) {
			*bad = s ? s : "(not a string)";
			continue;
		}
		if (skip == NULL || strcmp(s, skip) != 0)
			json_array_append_new(out, json_string(s));
	}
	return out;
}

static bool
has(const json_t *a, const char *s)
{
	json_t *v;
	size_t i;

	json_array_foreach((json_t *)a, i, v)
	{
		if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
			return true;
	}
	return false;
}

/* The stored form of E2B's network object; NULL + *why when invalid. */
static json_t *
from_e2b(const json_t *net, bool internet, bool secure, const char **why)
{
	const json_t *pub = json_object_get(net, "allowPublicTraffic");
	const char *bad = NULL;
	json_t *o;

	*why = NULL;
	if (net != NULL && !json_is_object(net)) {
		*why = "network must be an object";
		return NULL;
	}
	if (pub != NULL && !json_is_boolean(pub)) {
		*why = "network.allowPublicTraffic must be a boolean";
		return NULL;
	}
	if (json_is_false(pub) && !secure) {
		*why = "network.allowPublicTraffic false requires secure";
		return NULL;
	}
	o = json_pack("{s:b, s:o, s:o, s:b}", "allowInternetAccess",
	        internet && !has(json_object_get(net, "denyOut"), NET_ALL_V4), "allowOut",
	        strings_of(json_object_get(net, "allowOut"), NULL, &bad, false), "denyOut",
	        strings_of(json_object_get(net, "denyOut"), NET_ALL_V4, &bad, true),
	        "allowPublicTraffic", !json_is_false(pub));
	if (bad != NULL) {
		*why = "network.denyOut takes IP addresses and CIDRs only";
		json_decref(o);
		return NULL;
	}
	return o;
}

int
sim_net_e2b_create(sim_sandbox *sb, const json_t *body, bool secure, const char **why)
{
	const json_t *net = json_object_get(body, "network"),
	             *internet = json_object_get(body, "allow_internet_access");
	json_t *o;

	*why = NULL;
	if (net == NULL && internet == NULL)
		return 0;
	if (internet != NULL && !json_is_boolean(internet)) {
		*why = "allow_internet_access must be a boolean";
		return -1;
	}
	if ((o = from_e2b(net, !json_is_false(internet), secure, why)) == NULL)
		return -1;
	json_decref(sb->net);
	sb->net = o;
	return 0;
}

int
sim_net_e2b_update(sim_sandbox *sb, const json_t *body, const char **why)
{
	json_t *o = from_e2b(body, true, sb->secure, why);

	if (o == NULL)
		return -1;
	json_decref(sb->net);
	sb->net = o;
	return 0;
}

void
sim_net_e2b_detail(const sim_sandbox *sb, json_t *o)
{
	const json_t *n = sb->net;

	json_object_set_new(o, "allowInternetAccess",
	        json_boolean(n == NULL || json_is_true(json_object_get(n, "allowInternetAccess"))));
	if (n == NULL)
		return;
	json_object_set_new(o, "network",
	        json_pack("{s:O, s:O, s:O}", "allowOut", json_object_get(n, "allowOut"), "denyOut",
	                json_object_get(n, "denyOut"), "allowPublicTraffic",
	                json_object_get(n, "allowPublicTraffic")));
}

int
sim_net_daytona_create(sim_sandbox *sb, const json_t *body, const char **why)
{
	const json_t *all = json_object_get(body, "networkBlockAll"),
	             *list = json_object_get(body, "networkAllowList");
	const char *s = json_string_value(list);
	json_t *allow;

	*why = NULL;
	if ((all != NULL && !json_is_boolean(all)) || (list != NULL && s == NULL)) {
		*why = "networkBlockAll must be a boolean, networkAllowList a string";
		return -1;
	}
	if (!json_is_true(all) && (s == NULL || *s == '\0'))
		return 0;
	allow = json_array();
	while (s && *s) {
		const char *comma = strchr(s, ',');
		size_t len = comma ? (size_t)(comma - s) : strlen(s);
		char *item = sk_strndup(s, len);
		addr a;
		int bits;
		if (!parse_cidr(item, &a, &bits) || a.family != AF_INET ||
		        strchr(item, '/') == NULL) {
			free(item);
			json_decref(allow);
			*why = "networkAllowList: comma-separated IPv4 CIDRs";
			return -1;
		}
		json_array_append_new(allow, json_string(item));
		free(item);
		s = comma ? comma + 1 : s + len;
	}
	json_decref(sb->net);
	sb->net = json_pack("{s:b, s:o, s:[], s:b}", "allowInternetAccess", 0, "allowOut", allow,
	        "denyOut", "allowPublicTraffic", sb->public_);
	return 0;
}

void
sim_net_daytona_detail(const sim_sandbox *sb, json_t *o)
{
	const json_t *allow = json_object_get(sb->net, "allowOut"), *v;
	sk_buf b = SK_BUF_INIT(1 << 16);
	size_t i;

	json_array_foreach((json_t *)allow, i, v)
	{
		sk_buf_printf(&b, "%s%s", i ? "," : "", json_string_value(v));
	}
	json_object_set_new(o, "networkBlockAll", json_boolean(sb->net != NULL && b.len == 0));
	json_object_set_new(
	        o, "networkAllowList", b.len ? json_stringn(b.data, b.len) : json_null());
	sk_buf_dispose(&b);
}

/* ---- the emulated processes ---- */

/* The host of a URL ("http://[::1]:8080/x" -> "::1"); NULL when none. */
static char *
url_host(const char *url)
{
	const char *p = strstr(url, "://"), *end;

	p = p ? p + 3 : url;
	if (*p == '[') {
		end = strchr(p, ']');
		return end ? sk_strndup(p + 1, (size_t)(end - p - 1)) : NULL;
	}
	for (end = p; *end && *end != ':' && *end != '/'; end++)
		;
	return end > p ? sk_strndup(p, (size_t)(end - p)) : NULL;
}

int
sim_net_command(const sim_sandbox *sb, int argc, char **argv, sk_buf *out, sk_buf *err)
{
	const char *dest = NULL, *port = "80";
	char *host = NULL;
	bool nc = argc > 0 && strcmp(argv[0], "nc") == 0;
	int rc;

	if (argc < 2 || (!nc && strcmp(argv[0], "curl") != 0 && strcmp(argv[0], "wget") != 0))
		return -1;
	for (int i = 1; i < argc; i++) {
		if (argv[i][0] == '-') {
			if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "-w") == 0 ||
			        strcmp(argv[i], "-m") == 0 || strcmp(argv[i], "-O") == 0)
				i++; /* an option with a value */
			continue;
		}
		if (dest == NULL)
			dest = argv[i];
		else if (nc)
			port = argv[i];
	}
	if (dest == NULL)
		return -1;
	host = nc ? sk_strdup(dest) : url_host(dest);
	if (host == NULL) {
		sk_buf_printf(err, "%s: bad destination %s\n", argv[0], dest);
		return 2;
	}
	if (!nc && strncmp(dest, "https://", 8) == 0)
		port = "443";
	if (sim_net_allows(sb, host)) {
		if (!nc)
			sk_buf_printf(out,
			        "sandboxsim: %s allowed by the sandbox's network policy\n", host);
		rc = 0;
	} else if (nc) {
		sk_buf_printf(err, "nc: connect to %s port %s (tcp) failed: Connection refused\n",
		        host, port);
		rc = 1;
	} else {
		sk_buf_printf(err,
		        "curl: (7) Failed to connect to %s port %s after 0 ms: Couldn't connect to "
		        "server\n",
		        host, port);
		rc = 7;
	}
	free(host);
	return rc;
}
