/*
 * forward: a connect or heartbeat for a user whose shard another replica
 * holds goes to that replica (the shared HTTP client, httpc; a fresh
 * connection per forward), and its answer is given as is:
 * the holder reconciles, this replica never does. A forwarded request is
 * marked (SK_CTL_FORWARDED_HEADER) and is never forwarded again; the
 * caller's Authorization header goes along.
 *
 * With connect TLS on, the forward is HTTPS and the holder must show the
 * public key of this replica's own certificate (libcurl's public key pin):
 * the replicas share one certificate and key (one Secret), and the key is
 * what proves a peer is one of them; its address (a pod IP) is not in the
 * certificate, so names are not checked.
 */
#include <gnutls/abstract.h>
#include <gnutls/crypto.h>
#include <gnutls/x509.h>
#include <stdlib.h>
#include <string.h>

#include "../httpc/httpc.h"
#include "ground_int.h"
#include "http_int.h"
#include "shards_int.h"

#define FORWARD_BODY_MAX (1 << 20)
#define FORWARD_CONNECT_TIMEOUT_MS 2000

/* The marker, and the caller's Authorization when it gave one. */
static void
forward_headers(sk_controller *c, const sk_ctl_origin *from, char *lines[3])
{
	lines[0] = sk_asprintf("%s: %s", SK_CTL_FORWARDED_HEADER, sk_ctl_identity(c));
	lines[1] = from && from->authorization
	        ? sk_asprintf("Authorization: %s", from->authorization)
	        : NULL;
	lines[2] = NULL;
}

char *
sk_ctl_forward_pin(const char *pem, size_t len)
{
	gnutls_datum_t in = { (unsigned char *)pem, (unsigned int)len }, der = { 0 }, b64 = { 0 };
	gnutls_x509_crt_t crt = NULL;
	gnutls_pubkey_t key = NULL;
	unsigned char sha[32];
	gnutls_datum_t digest = { sha, sizeof(sha) };
	char *pin = NULL;

	if (gnutls_x509_crt_init(&crt) == 0 &&
	        gnutls_x509_crt_import(crt, &in, GNUTLS_X509_FMT_PEM) == 0 &&
	        gnutls_pubkey_init(&key) == 0 && gnutls_pubkey_import_x509(key, crt, 0) == 0 &&
	        gnutls_pubkey_export2(key, GNUTLS_X509_FMT_DER, &der) == 0 &&
	        gnutls_hash_fast(GNUTLS_DIG_SHA256, der.data, der.size, sha) == 0 &&
	        gnutls_base64_encode2(&digest, &b64) == 0)
		pin = sk_asprintf("sha256//%.*s", (int)b64.size, (const char *)b64.data);
	gnutls_free(b64.data);
	gnutls_free(der.data);
	if (key)
		gnutls_pubkey_deinit(key);
	if (crt)
		gnutls_x509_crt_deinit(crt);
	return pin;
}

/* The holder's answer as is, or 502/504 ForwardFailed when none came. */
static void
copy_answer(const char *addr, int rc, sk_httpc_response *a, const sk_error *err, sk_http_reply *r)
{
	if (rc != SK_OK || a->status < 100) {
		char msg[SK_ERROR_MSG_MAX + 300];
		snprintf(msg, sizeof(msg), "the replica holding this user's shard (%s): %s", addr,
		        rc != SK_OK ? err->message : "no answer");
		sk_ctl_reply_error(r, rc == SK_ETIMEOUT ? 504 : 502, "ForwardFailed", msg);
		snprintf(r->retry_after, sizeof(r->retry_after), "1");
		return;
	}
	free(r->body);
	r->status = (unsigned int)a->status;
	r->body = sk_buf_detach(&a->body);
	if (r->body == NULL)
		r->body = sk_strdup("");
	r->type =
	        strstr(a->content_type, "json") ? "application/json" : "text/plain; charset=utf-8";
	r->retry_after[0] = '\0';
	if (a->retry_after_ms > 0)
		snprintf(r->retry_after, sizeof(r->retry_after), "%lld",
		        (long long)((a->retry_after_ms + 999) / 1000));
}

/* The connect API's one GET route, GET /v1/users/ID/sandbox (every other
 * route forwarded is a POST). */
static bool
is_get_route(const char *path)
{
	const char *q = strchr(path, '?');
	size_t len = q ? (size_t)(q - path) : strlen(path);
	static const char suffix[] = "/sandbox";

	return strncmp(path, "/v1/users/", 10) == 0 && len > sizeof(suffix) - 1 &&
	        memcmp(path + len - (sizeof(suffix) - 1), suffix, sizeof(suffix) - 1) == 0;
}

void
sk_ctl_forward(sk_controller *c, const char *addr, const char *path, int64_t timeout_ms,
        const sk_ctl_origin *from, sk_http_reply *r)
{
	const char *pin = sk_ctl_guard_pin(c);
	/* HTTPS to a holder that shows our certificate's key, when TLS is on;
	 * the holder answers within the caller's timeout, a second more for
	 * the way there and back */
	sk_httpc_config cfg = { .timeout_ms = timeout_ms + 1000,
		.connect_timeout_ms = FORWARD_CONNECT_TIMEOUT_MS,
		.pin = pin,
		.max_body = FORWARD_BODY_MAX };
	char *url = sk_asprintf("%s://%s%s", pin ? "https" : "http", addr, path), *lines[3];
	bool get = is_get_route(path);
	sk_httpc_request req = {
		.method = get ? "GET" : "POST", .url = url, .path = path, .body = get ? NULL : ""
	};
	sk_httpc_response a = { 0 };
	sk_httpc h;
	sk_error err = { 0 };
	int rc;

	forward_headers(c, from, lines);
	req.headers = (const char *const *)lines;
	if ((rc = sk_httpc_init(&h, &cfg, &err)) == SK_OK) {
		if (from && from->authorization)
			sk_httpc_add_secret(&h, from->authorization);
		rc = sk_httpc_do(&h, &req, &a, &err);
		sk_httpc_dispose(&h);
	}
	copy_answer(addr, rc, &a, &err, r);
	sk_httpc_response_dispose(&a);
	free(lines[0]);
	sk_wipe_free(lines[1]);
	free(url);
}

bool
sk_ctl_forward_user(sk_controller *c, const char *user_id, const char *path, int64_t timeout_ms,
        const sk_ctl_origin *from, sk_http_reply *r)
{
	char *addr;

	if (sk_ctl_may_act(c, user_id))
		return false;
	if (from && from->forwarded) {
		/* sent here as the holder, which this replica no longer is */
		sk_ctl_reply_error(r, 503, "NotShardHolder",
		        "this replica does not hold the user's shard (it moved); retry");
		snprintf(r->retry_after, sizeof(r->retry_after), "1");
		return true;
	}
	addr = sk_ctl_shard_holder_address(c, user_id);
	if (addr == NULL) {
		sk_ctl_reply_error(r, 503, "ShardUnassigned",
		        "no replica holds the user's shard right now; retry");
		snprintf(r->retry_after, sizeof(r->retry_after), "1");
		return true;
	}
	sk_ctl_forward(c, addr, path, timeout_ms, from, r);
	free(addr);
	return true;
}
