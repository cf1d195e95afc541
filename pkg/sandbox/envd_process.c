/*
 * sandbox/envd_process: one short command through envd's
 * process.Process/Start (Connect server stream, JSON codec; reference
 * envd's process API): the request is one enveloped message (flag byte, 4-byte
 * big-endian length, JSON), the answer a run of enveloped events (start,
 * data {stdout|stderr: base64}, end {exitCode}) closed by an end-of-stream
 * frame (flag 0x02) that may carry {"error": {code, message}}. The workspace
 * copy sets symlinks and modes this way, as clients do on E2B. And
 * process.Process/List (unary: a JSON body each way), which the controller
 * asks before an idle deadline lapses (lifecycle.busy).
 */
#include <gnutls/gnutls.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox_int.h"

#define FLAG_END 0x02
#define MAX_ANSWER (256 * 1024)
#define MAX_STDERR 300

char *
sk_shell_command(const char *cmd, const char *arg1, const char *arg2)
{
	const char *args[] = { arg1, arg2 };
	sk_buf b = SK_BUF_INIT(0);

	sk_buf_printf(&b, "%s", cmd);
	for (size_t i = 0; i < 2; i++) {
		if (args[i] == NULL)
			continue;
		sk_buf_append(&b, " '", 2);
		for (const char *p = args[i]; *p; p++)
			if (*p == '\'')
				sk_buf_append(&b, "'\\''", 4);
			else
				sk_buf_append(&b, p, 1);
		sk_buf_append(&b, "'", 1);
	}
	return sk_buf_detach(&b);
}

/* The request body: one enveloped message. */
static void
envelope(sk_buf *b, const char *script)
{
	json_t *msg = json_pack("{s:{s:s,s:[s,s,s],s:{}}}", "process", "cmd", "/bin/bash", "args",
	        "-l", "-c", script, "envs");
	char *text = json_dumps(msg, JSON_COMPACT);
	size_t n = strlen(text);
	unsigned char hdr[5] = { 0, (unsigned char)(n >> 24), (unsigned char)(n >> 16),
		(unsigned char)(n >> 8), (unsigned char)n };

	sk_buf_append(b, hdr, sizeof(hdr));
	sk_buf_append(b, text, n);
	free(text);
	json_decref(msg);
}

typedef struct reader {
	const sk_buf *b;
	size_t off;
} reader;

static int64_t
read_buf(void *payload, void *buf, size_t len)
{
	reader *r = payload;
	size_t n = r->b->len - r->off < len ? r->b->len - r->off : len;

	memcpy(buf, r->b->data + r->off, n);
	r->off += n;
	return (int64_t)n;
}

static int
collect(void *payload, const void *buf, size_t len)
{
	return sk_buf_append(payload, buf, len) == SK_OK ? 0 : SK_ENOMEM;
}

/* Appends the base64 text, decoded, to out (at most MAX_STDERR bytes in all). */
static void
append_b64(sk_buf *out, const char *b64)
{
	gnutls_datum_t in = { (unsigned char *)b64, (unsigned)strlen(b64) }, dec = { NULL, 0 };

	if (gnutls_base64_decode2(&in, &dec) == 0 && out->len < MAX_STDERR)
		sk_buf_append(out, dec.data,
		        dec.size < MAX_STDERR - out->len ? dec.size : MAX_STDERR - out->len);
	gnutls_free(dec.data);
}

/* Walks the answer's frames: *exit_code from the end event, stderr text,
 * and the end-of-stream error's message, if any. -1 when malformed. */
static int
parse_answer(const sk_buf *a, int *exit_code, sk_buf *stderr_text, bool *stream_error)
{
	size_t off = 0;

	*exit_code = -1;
	*stream_error = false;
	while (off + 5 <= a->len) {
		const unsigned char *h = (const unsigned char *)a->data + off;
		size_t n = (size_t)h[1] << 24 | (size_t)h[2] << 16 | (size_t)h[3] << 8 | h[4];
		json_t *m, *ev, *v;
		if (n > a->len - off - 5)
			return -1;
		m = json_loadb(a->data + off + 5, n, 0, NULL);
		ev = json_object_get(m, "event");
		if ((v = json_object_get(json_object_get(ev, "data"), "stderr")) != NULL)
			append_b64(stderr_text, json_string_value(v) ? json_string_value(v) : "");
		if ((v = json_object_get(ev, "end")) != NULL)
			*exit_code = (int)json_integer_value(json_object_get(v, "exitCode"));
		if ((h[0] & FLAG_END) && (v = json_object_get(m, "error")) != NULL) {
			*stream_error = true;
			sk_buf_printf(stderr_text, "%s",
			        json_string_value(json_object_get(v, "message"))
			                ? json_string_value(json_object_get(v, "message"))
			                : "stream error");
		}
		json_decref(m);
		off += 5 + n;
	}
	return 0;
}

static int
run_result(const sk_buf *answer, const char *cmd, const char *path, sk_error *err)
{
	sk_buf text = SK_BUF_INIT(0);
	bool stream_error;
	int code, rc = SK_OK;

	if (parse_answer(answer, &code, &text, &stream_error) != 0)
		rc = sk_error_set(
		        err, SK_EINVALID, "%s %s: process.Process/Start: bad frame", cmd, path);
	else if (stream_error || code != 0)
		rc = sk_error_set(err, SK_ETERMINAL, "%s %s: exit %d: %s", cmd, path, code,
		        text.data ? text.data : "");
	sk_buf_dispose(&text);
	return rc;
}

int
sk_envd_run(sk_provider *p, const sk_sandbox *sb, const char *cmd, const char *arg1,
        const char *arg2, sk_error *err)
{
	char *script = sk_shell_command(cmd, arg1, arg2);
	sk_buf req = SK_BUF_INIT(0), answer = SK_BUF_INIT(MAX_ANSWER);
	reader rd = { &req, 0 };
	sk_http_request r = { .method = "POST", .path = "/process.Process/Start" };
	sk_http_stream st = { .sink = collect, .sink_payload = &answer, .source = read_buf };
	sk_envd_target t;
	int rc;

	envelope(&req, script);
	st.source_payload = &rd;
	st.size = req.len;
	sk_envd_init(p, sb, r.path, &t);
	sk_envd_add_header(&t, "Content-Type: application/connect+json");
	sk_envd_add_header(&t, "Authorization: Basic dXNlcjo="); /* user "user" */
	rc = sk_envd_stream(p, &r, &t, &st, err);
	if (rc == SK_OK)
		rc = run_result(&answer, cmd, arg2 ? arg2 : arg1, err);
	sk_envd_dispose(&t);
	sk_buf_dispose(&answer);
	sk_buf_dispose(&req);
	free(script);
	return rc;
}

/* {"processes": [...]}: how many. */
static int
count_processes(const sk_http_response *resp, int *running, sk_error *err)
{
	json_t *doc = json_loadb(resp->body.data ? resp->body.data : "", resp->body.len, 0, NULL);
	json_t *list = json_object_get(doc, "processes");
	int rc = SK_OK;

	if (!json_is_object(doc) || (list != NULL && !json_is_array(list)))
		rc = sk_error_set(err, SK_EINVALID, "process.Process/List: not a process list");
	else
		*running = (int)json_array_size(list);
	json_decref(doc);
	return rc;
}

int
sk_envd_list_processes(sk_provider *p, const sk_sandbox *sb, int *running, sk_error *err)
{
	sk_http_request r = { .method = "POST", .path = "/process.Process/List", .body = "{}" };
	sk_http_response resp;
	sk_envd_target t;
	int rc;

	*running = 0;
	if (!sk_sandbox_id_valid(sb->id))
		return sk_error_set(err, SK_EINVALID, "invalid sandbox id");
	sk_envd_init(p, sb, r.path, &t);
	sk_envd_add_header(&t, "Content-Type: application/json");
	sk_envd_add_header(&t, "Connect-Protocol-Version: 1");
	sk_envd_add_header(&t, "Authorization: Basic dXNlcjo="); /* user "user" */
	r.url = t.url;
	r.headers = t.headers;
	r.timeout_ms = sk_envd_timeout(p);
	rc = sk_http_do(&p->http, &r, &resp, err);
	if (rc == SK_OK) {
		rc = sk_http_classify(&p->http, &r, &resp, err);
		if (rc == SK_OK)
			rc = count_processes(&resp, running, err);
		sk_http_response_dispose(&resp);
	}
	sk_envd_dispose(&t);
	return rc;
}
