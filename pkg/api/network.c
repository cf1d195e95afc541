/*
 * api/network: spec.network, a space's network policy.
 *
 *   network:
 *     internet: Deny            # Allow (default) | Deny: egress to anything not allowed
 *     allowOut: [10.0.0.0/8, "*.pypi.org"]   # IPs, CIDRs, host names ("*." wildcard)
 *     denyOut: [169.254.0.0/16] # IPs and CIDRs only (as E2B validates them)
 *     publicTraffic: Deny       # Allow (default) | Deny: the sandbox's URLs need its token
 *
 * allowOut wins over denyOut and over internet: Deny (E2B's rule). The rows
 * are in schema.c; here: the rules of the list entries (the validator's
 * check of both lists, with each bad entry's position), equality, the JSON
 * form of status and describe, a one-line form for drift.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "network.h"
#include "schema.h"
#include "strlist.h"

#define NET_HOST_MAX 253

static bool
ip_ok(const char *s, int *bits)
{
	unsigned char buf[16];

	if (inet_pton(AF_INET, s, buf) == 1) {
		*bits = 32;
		return true;
	}
	if (inet_pton(AF_INET6, s, buf) == 1) {
		*bits = 128;
		return true;
	}
	return false;
}

bool
sk_net_is_ip_or_cidr(const char *s)
{
	const char *slash = strchr(s, '/');
	char addr[64];
	int bits = 0;
	long prefix;
	char *end;

	if (slash == NULL)
		return strlen(s) < sizeof(addr) && ip_ok(s, &bits);
	if ((size_t)(slash - s) >= sizeof(addr) || slash[1] == '\0' ||
	        !isdigit((unsigned char)slash[1]))
		return false;
	memcpy(addr, s, (size_t)(slash - s));
	addr[slash - s] = '\0';
	if (!ip_ok(addr, &bits))
		return false;
	prefix = strtol(slash + 1, &end, 10);
	return *end == '\0' && prefix >= 0 && prefix <= bits && strlen(slash + 1) <= 3;
}

static bool
label_ok(const char *b, size_t n)
{
	if (n < 1 || n > 63 || b[0] == '-' || b[n - 1] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)b[i]) && b[i] != '-')
			return false;
	return true;
}

bool
sk_net_is_host(const char *s)
{
	const char *p = strncmp(s, "*.", 2) == 0 ? s + 2 : s, *last = p;
	bool digits = true;

	if (strlen(p) < 1 || strlen(p) > NET_HOST_MAX)
		return false;
	for (const char *dot; (dot = strchr(p, '.')) != NULL; p = dot + 1) {
		if (!label_ok(p, (size_t)(dot - p)))
			return false;
		last = dot + 1;
	}
	if (!label_ok(p, strlen(p)))
		return false;
	for (const char *c = last; *c; c++) /* "10.0.0.256" is no host name */
		digits = digits && isdigit((unsigned char)*c);
	return !digits;
}

/* A denyOut entry that is a host name gets its own message. */
static const char *
deny_why(const char *s)
{
	return sk_net_is_host(s) ? "a host name is allowed in allowOut only; denyOut takes IP "
	                           "addresses and CIDRs"
	                         : NULL;
}

/* .check of spec.network.allowOut and denyOut: 1 to f->max entries, each
 * an IP or CIDR (allowOut: or a host name), errors at the entry. */
void
sk_net_check_list(sk_vctx *v, const sk_field *f, json_t *a)
{
	sk_check_list(v, f, a, strcmp(f->path, "spec.network.denyOut") == 0 ? deny_why : NULL);
}

bool
sk_net_allow_ok(const char *s)
{
	return sk_net_is_ip_or_cidr(s) || sk_net_is_host(s);
}

bool
sk_net_deny_ok(const char *s)
{
	return sk_net_is_ip_or_cidr(s);
}

/* ---- the policy ---- */

bool
sk_network_is_set(const sk_network *n)
{
	return n->internet != SK_NET_UNSET || n->public_traffic != SK_NET_UNSET ||
	        n->allow_out.len > 0 || n->deny_out.len > 0;
}

static sk_net_access
effective(sk_net_access a)
{
	return a == SK_NET_DENY ? SK_NET_DENY : SK_NET_ALLOW;
}

bool
sk_network_equal(const sk_network *a, const sk_network *b)
{
	return effective(a->internet) == effective(b->internet) &&
	        effective(a->public_traffic) == effective(b->public_traffic) &&
	        sk_strlist_equal(&a->allow_out, &b->allow_out) &&
	        sk_strlist_equal(&a->deny_out, &b->deny_out);
}

bool
sk_network_satisfies(const sk_network *want, const sk_network *seen)
{
	return effective(want->internet) == effective(seen->internet) &&
	        (seen->public_traffic == SK_NET_UNSET || want->public_traffic == SK_NET_UNSET ||
	                want->public_traffic == seen->public_traffic) &&
	        sk_strlist_equal(&want->allow_out, &seen->allow_out) &&
	        sk_strlist_equal(&want->deny_out, &seen->deny_out);
}

void
sk_network_copy(sk_network *dst, const sk_network *src)
{
	dst->internet = src->internet;
	dst->public_traffic = src->public_traffic;
	sk_strlist_copy(&dst->allow_out, &src->allow_out);
	sk_strlist_copy(&dst->deny_out, &src->deny_out);
}

void
sk_network_dispose(sk_network *n)
{
	sk_strlist_dispose(&n->allow_out);
	sk_strlist_dispose(&n->deny_out);
	n->internet = n->public_traffic = SK_NET_UNSET;
}

static const char *
access_name(sk_net_access a)
{
	return effective(a) == SK_NET_DENY ? "Deny" : "Allow";
}

static json_t *
list_json(const sk_strlist *l)
{
	json_t *a = json_array();

	for (size_t i = 0; i < l->len; i++)
		json_array_append_new(a, json_string(l->items[i]));
	return a;
}

json_t *
sk_network_to_json(const sk_network *n)
{
	json_t *o = json_pack("{s:s, s:s}", "internet", access_name(n->internet), "publicTraffic",
	        access_name(n->public_traffic));

	if (n->allow_out.len > 0)
		json_object_set_new(o, "allowOut", list_json(&n->allow_out));
	if (n->deny_out.len > 0)
		json_object_set_new(o, "denyOut", list_json(&n->deny_out));
	return o;
}

static bool
access_from(const json_t *v, sk_net_access *out)
{
	const char *s = json_string_value(v);

	if (v == NULL || json_is_null(v))
		return true;
	if (s == NULL || (strcmp(s, "Allow") != 0 && strcmp(s, "Deny") != 0))
		return false;
	*out = strcmp(s, "Deny") == 0 ? SK_NET_DENY : SK_NET_ALLOW;
	return true;
}

static bool
list_from(const json_t *v, sk_strlist *out)
{
	json_t *item;
	size_t i;

	if (v == NULL || json_is_null(v))
		return true;
	if (!json_is_array(v))
		return false;
	json_array_foreach((json_t *)v, i, item)
	{
		if (!json_is_string(item))
			return false;
		sk_strlist_add(out, json_string_value(item));
	}
	return true;
}

bool
sk_network_from_json(const json_t *j, sk_network *out)
{
	memset(out, 0, sizeof(*out));
	return json_is_object(j) && access_from(json_object_get(j, "internet"), &out->internet) &&
	        access_from(json_object_get(j, "publicTraffic"), &out->public_traffic) &&
	        list_from(json_object_get(j, "allowOut"), &out->allow_out) &&
	        list_from(json_object_get(j, "denyOut"), &out->deny_out);
}

static void
list_format(sk_buf *b, const char *name, const sk_strlist *l)
{
	if (l->len == 0)
		return;
	sk_buf_printf(b, ", %s ", name);
	for (size_t i = 0; i < l->len; i++)
		sk_buf_printf(b, "%s%s", i ? "," : "", l->items[i]);
}

void
sk_network_digest(const sk_network *n, char out[17])
{
	char line[8192];
	uint64_t h = 14695981039346656037ULL;

	sk_network_format(n, line, sizeof(line));
	for (const unsigned char *p = (const unsigned char *)line; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	snprintf(out, 17, "%016llx", (unsigned long long)h);
}

void
sk_network_format(const sk_network *n, char *buf, size_t len)
{
	sk_buf b = SK_BUF_INIT(4096);

	sk_buf_printf(&b, "internet %s", access_name(n->internet));
	list_format(&b, "allowOut", &n->allow_out);
	list_format(&b, "denyOut", &n->deny_out);
	sk_buf_printf(&b, ", publicTraffic %s", access_name(n->public_traffic));
	snprintf(buf, len, "%s", b.data ? b.data : "");
	sk_buf_dispose(&b);
}
