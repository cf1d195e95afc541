/*
 * forward: a connect or heartbeat for a user whose shard another replica
 * holds goes to that replica (libcurl), and its answer is given as is:
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
#include <curl/curl.h>
#include <gnutls/abstract.h>
#include <gnutls/crypto.h>
#include <gnutls/x509.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ground_int.h"
#include "http_int.h"
#include "shards_int.h"

#define FORWARD_BODY_MAX (1 << 20)

typedef struct fwd_answer {
	sk_buf body;
	bool json;
	char retry_after[24];
} fwd_answer;

static size_t
on_body(char *p, size_t size, size_t n, void *arg)
{
	fwd_answer *a = arg;

	return sk_buf_append(&a->body, p, size * n) == 0 ? size * n : 0;
}

/* Content-Type (JSON or not) and Retry-After of the holder's answer. */
static size_t
on_header(char *p, size_t size, size_t n, void *arg)
{
	fwd_answer *a = arg;
	size_t len = size * n;

	if (len > 13 && strncasecmp(p, "Content-Type:", 13) == 0)
		a->json = memmem(p, len, "json", 4) != NULL;
	if (len > 12 && strncasecmp(p, "Retry-After:", 12) == 0) {
		size_t k = 0;
		for (size_t i = 12; i < len && k + 1 < sizeof(a->retry_after); i++)
			if (p[i] >= '0' && p[i] <= '9')
				a->retry_after[k++] = p[i];
		a->retry_after[k] = '\0';
	}
	return len;
}

static struct curl_slist *
forward_headers(sk_controller *c, const sk_ctl_origin *from)
{
	struct curl_slist *h = NULL;
	char *line = sk_asprintf("%s: %s", SK_CTL_FORWARDED_HEADER, sk_ctl_identity(c));

	h = curl_slist_append(h, line);
	free(line);
	if (from && from->authorization) {
		line = sk_asprintf("Authorization: %s", from->authorization);
		h = curl_slist_append(h, line);
		free(line);
	}
	return curl_slist_append(h, "Content-Length: 0");
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

/* HTTPS to a holder that shows our certificate's key, when TLS is on. */
static const char *
set_transport(sk_controller *c, CURL *h)
{
	const char *pin = sk_ctl_guard_pin(c);

	if (pin == NULL)
		return "http";
	curl_easy_setopt(h, CURLOPT_PINNEDPUBLICKEY, pin);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L); /* the pin is the check */
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	return "https";
}

void
sk_ctl_forward(sk_controller *c, const char *addr, const char *path, int64_t timeout_ms,
        const sk_ctl_origin *from, sk_http_reply *r)
{
	fwd_answer a = { SK_BUF_INIT(FORWARD_BODY_MAX), false, "" };
	struct curl_slist *hdr = forward_headers(c, from);
	CURL *h = curl_easy_init();
	CURLcode cc = CURLE_FAILED_INIT;
	char *url = NULL;
	long status = 0;

	if (h) {
		url = sk_asprintf("%s://%s%s", set_transport(c, h), addr, path);
		curl_easy_setopt(h, CURLOPT_URL, url);
		curl_easy_setopt(h, CURLOPT_POST, 1L);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, 0L);
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
		curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
		/* the holder answers within the caller's timeout; a second more
		 * for the way there and back */
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(timeout_ms + 1000));
		curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, &a);
		curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
		curl_easy_setopt(h, CURLOPT_HEADERDATA, &a);
		cc = curl_easy_perform(h);
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	}
	if (cc != CURLE_OK || status < 100) {
		char msg[300];
		snprintf(msg, sizeof(msg), "the replica holding this user's shard (%s): %s", addr,
		        curl_easy_strerror(cc));
		sk_ctl_reply_error(
		        r, cc == CURLE_OPERATION_TIMEDOUT ? 504 : 502, "ForwardFailed", msg);
		snprintf(r->retry_after, sizeof(r->retry_after), "1");
	} else {
		sk_buf_append(&a.body, "", 0);
		free(r->body);
		r->status = (unsigned int)status;
		r->body = sk_buf_detach(&a.body);
		r->type = a.json ? "application/json" : "text/plain; charset=utf-8";
		snprintf(r->retry_after, sizeof(r->retry_after), "%s", a.retry_after);
	}
	sk_buf_dispose(&a.body);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
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
