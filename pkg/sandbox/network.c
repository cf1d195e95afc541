/*
 * sandbox/network: spec.network in each provider's own shape.
 *
 * E2B and CubeSandbox (create body, E2B's published API):
 *   "allow_internet_access": false when internet is Deny,
 *   "network": {"allowOut": [...], "denyOut": [...], "allowPublicTraffic": bool},
 *   and "secure": true with allowPublicTraffic false (E2B requires it).
 * E2B's detail reports the policy back (allowInternetAccess, network); the
 * live update is PUT /sandboxes/{id}/network with the network object, where
 * internet Deny is the E2B equivalent "0.0.0.0/0" in denyOut. Cube reports
 * no network and has no update: the controller migrates there.
 * Daytona (create body): networkBlockAll for internet Deny without
 * allowOut, networkAllowList ("a,b", IPv4 CIDRs) for internet Deny with it,
 * public for publicTraffic. What it cannot express (denyOut, allowOut
 * without internet Deny, host names or IPv6 in allowOut) is an error naming
 * the field, before any call.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox_int.h"

#define NET_ALL_V4 "0.0.0.0/0"

static json_t *
strings(const sk_strlist *l, const char *extra)
{
	json_t *a = json_array();

	for (size_t i = 0; i < l->len; i++)
		json_array_append_new(a, json_string(l->items[i]));
	if (extra)
		json_array_append_new(a, json_string(extra));
	return a;
}

/* The network object of E2B's create and update. deny_all: internet Deny
 * written as denyOut 0.0.0.0/0 (the update has no allow_internet_access). */
static json_t *
e2b_network(const sk_network *n, bool deny_all)
{
	return json_pack("{s:o, s:o, s:b}", "allowOut", strings(&n->allow_out, NULL), "denyOut",
	        strings(&n->deny_out, deny_all && n->internet == SK_NET_DENY ? NET_ALL_V4 : NULL),
	        "allowPublicTraffic", n->public_traffic != SK_NET_DENY);
}

void
sk_e2b_network_create(json_t *body, const sk_network *n)
{
	if (n == NULL || !sk_network_is_set(n))
		return;
	json_object_set_new(
	        body, "allow_internet_access", json_boolean(n->internet != SK_NET_DENY));
	json_object_set_new(body, "network", e2b_network(n, false));
	if (n->public_traffic == SK_NET_DENY)
		json_object_set_new(body, "secure", json_true());
}

static void
list_into(const json_t *a, sk_strlist *out, const char *skip)
{
	json_t *v;
	size_t i;

	json_array_foreach((json_t *)a, i, v)
	{
		if (json_is_string(v) && (skip == NULL || strcmp(json_string_value(v), skip) != 0))
			sk_strlist_add(out, json_string_value(v));
	}
}

void
sk_e2b_network_decode(const json_t *j, sk_sandbox *out)
{
	const json_t *net = json_object_get(j, "network"),
	             *internet = json_object_get(j, "allowInternetAccess"), *v, *deny;
	bool deny_all = false;
	size_t i;

	if (!json_is_object(net) && !json_is_boolean(internet))
		return;
	out->network_known = true;
	deny = json_object_get(net, "denyOut");
	json_array_foreach((json_t *)deny, i, v)
	{
		deny_all = deny_all ||
		        (json_is_string(v) && strcmp(json_string_value(v), NET_ALL_V4) == 0);
	}
	out->network.internet = json_is_false(internet) || deny_all ? SK_NET_DENY : SK_NET_ALLOW;
	list_into(json_object_get(net, "allowOut"), &out->network.allow_out, NULL);
	list_into(deny, &out->network.deny_out, NET_ALL_V4);
	v = json_object_get(net, "allowPublicTraffic");
	if (json_is_boolean(v)) /* else not reported: left unset */
		out->network.public_traffic = json_is_false(v) ? SK_NET_DENY : SK_NET_ALLOW;
}

int
sk_e2b_set_network(sk_provider *p, const char *id, const sk_network *n, sk_error *err)
{
	sk_http_request r = { .method = "PUT", .auth = true };
	json_t *body = e2b_network(n, true);
	char *text = NULL, *path;
	int rc;

	if (!sk_sandbox_id_valid(id)) {
		json_decref(body);
		return sk_error_set(err, SK_EINVALID, "invalid sandbox id");
	}
	if (sk_json_dump_body(body, &text) != SK_OK)
		return sk_error_set(err, SK_ENOMEM, "encoding the network update");
	path = sk_asprintf("/sandboxes/%s/network", id);
	r.path = path;
	r.body = text;
	rc = sk_http_json(&p->http, &r, NULL, NULL, err);
	free(text);
	free(path);
	return rc;
}

/* ---- Daytona ---- */

static bool
ipv4_cidr(const char *s, sk_buf *out)
{
	const char *slash = strchr(s, '/');
	char addr[32];
	unsigned char b[4];
	size_t n = slash ? (size_t)(slash - s) : strlen(s);

	if (n >= sizeof(addr))
		return false;
	memcpy(addr, s, n);
	addr[n] = '\0';
	if (inet_pton(AF_INET, addr, b) != 1)
		return false;
	sk_buf_printf(out, "%s%s%s", out->len ? "," : "", s, slash ? "" : "/32");
	return true;
}

int
sk_daytona_network_create(json_t *body, const sk_network *n, sk_error *err)
{
	sk_buf allow = SK_BUF_INIT(1 << 16);

	if (n == NULL || !sk_network_is_set(n))
		return SK_OK;
	if (n->deny_out.len > 0)
		return sk_error_set(err, SK_EINVALID,
		        "spec.network.denyOut: Daytona cannot express it (it has networkBlockAll "
		        "and "
		        "networkAllowList only): use internet Deny with allowOut");
	if (n->internet != SK_NET_DENY && n->allow_out.len > 0)
		return sk_error_set(err, SK_EINVALID,
		        "spec.network.allowOut: Daytona applies an allow list only with internet "
		        "Deny (networkAllowList blocks everything else)");
	for (size_t i = 0; n->internet == SK_NET_DENY && i < n->allow_out.len; i++) {
		if (!ipv4_cidr(n->allow_out.items[i], &allow)) {
			sk_buf_dispose(&allow);
			return sk_error_set(err, SK_EINVALID,
			        "spec.network.allowOut[%zu]: Daytona's networkAllowList takes IPv4 "
			        "addresses and CIDRs only (got \"%.140s\")",
			        i, n->allow_out.items[i]);
		}
	}
	if (n->internet == SK_NET_DENY && allow.len == 0)
		json_object_set_new(body, "networkBlockAll", json_true());
	else if (n->internet == SK_NET_DENY)
		json_object_set_new(body, "networkAllowList", json_stringn(allow.data, allow.len));
	if (n->public_traffic != SK_NET_UNSET)
		json_object_set_new(
		        body, "public", json_boolean(n->public_traffic == SK_NET_ALLOW));
	sk_buf_dispose(&allow);
	return SK_OK;
}

void
sk_daytona_network_decode(const json_t *j, sk_sandbox *out)
{
	const json_t *all = json_object_get(j, "networkBlockAll"),
	             *list = json_object_get(j, "networkAllowList"),
	             *pub = json_object_get(j, "public");
	const char *s = json_string_value(list);

	if (!json_is_boolean(all) && s == NULL)
		return;
	out->network_known = true;
	out->network.internet = json_is_true(all) || (s && s[0]) ? SK_NET_DENY : SK_NET_ALLOW;
	if (json_is_boolean(pub)) /* else not reported: left unset */
		out->network.public_traffic = json_is_true(pub) ? SK_NET_ALLOW : SK_NET_DENY;
	while (s && *s) {
		const char *comma = strchr(s, ',');
		size_t len = comma ? (size_t)(comma - s) : strlen(s);
		char *item = sk_strndup(s, len);
		size_t n = strlen(item);
		if (n > 3 && strcmp(item + n - 3, "/32") == 0)
			item[n - 3] = '\0'; /* sent so for a bare address */
		sk_strlist_add(&out->network.allow_out, item);
		free(item);
		s = comma ? comma + 1 : s + len;
	}
}
