/*
 * sandboxsim envd process service: POST /process.Process/Start over the
 * Connect protocol with the JSON codec (E2B's published API). The
 * request is one enveloped message (flag byte, 4-byte big-endian length,
 * JSON); the answer is a stream of enveloped events, start{pid}, data
 * {stdout|stderr: base64}, end{exitCode, exited, status}, then the
 * end-of-stream frame (flag 0x02) carrying {} or {"error": {code, message}}.
 *
 * The command is what the SDK sends for commands.run(cmd): /bin/bash
 * ["-l", "-c", cmd]. `sleep N` runs for N seconds (procs.c, with List and
 * SendSignal). Only `echo WORDS`, `env`, `printenv [VAR...]` and the
 * file commands of the sandbox's tree (fs.c: mkdir -p, ln -s, chmod OCTAL,
 * readlink, mkfifo, rm -rf; how a client sets symlinks and modes on E2B) and
 * the connections of curl, wget and nc (netpolicy.c: the sandbox's network
 * policy decides) are evaluated, with '...' and "..." quoting and $VAR / ${VAR} expansion, in
 * envd's precedence: defaults (PATH, HOME, USER, LOGNAME) -> sandbox-wide
 * env -> the request's per-command envs. Anything else exits 127 with bash's
 * "command not found" on stderr.
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define FLAG_END 0x02
#define FLAG_COMPRESSED 0x01

/* ---- framing ---- */

void
sim_connect_frame(sk_buf *b, unsigned char flag, json_t *msg)
{
	char *text = json_dumps(msg, JSON_COMPACT);
	size_t n = strlen(text);
	unsigned char hdr[5] = { flag, (unsigned char)(n >> 24), (unsigned char)(n >> 16),
		(unsigned char)(n >> 8), (unsigned char)n };

	sk_buf_append(b, hdr, sizeof(hdr));
	sk_buf_append(b, text, n);
	free(text);
	json_decref(msg);
}

static void
frame(sk_buf *b, unsigned char flag, json_t *msg)
{
	sim_connect_frame(b, flag, msg);
}

static void
reply_stream(sim_req *r, sk_buf *b)
{
	size_t len = b->len;

	sim_reply_owned(r, 200, "application/connect+json", sk_buf_detach(b), len);
}

/* A stream that ends at once with a Connect error (HTTP 200, as streams do). */
static void
connect_error(sim_req *r, const char *code, const char *message)
{
	sk_buf b = SK_BUF_INIT(0);

	frame(&b, FLAG_END, json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", message));
	reply_stream(r, &b);
}

/* The one request message; NULL (and *why) when it is not a valid envelope. */
static json_t *
unframe(const sim_req *r, const char **why)
{
	const unsigned char *p = (const unsigned char *)r->body;
	size_t n;

	if (r->body_len < 5) {
		*why = "request is not an enveloped message";
		return NULL;
	}
	if (p[0] & FLAG_COMPRESSED) {
		*why = "compressed messages are not supported";
		return NULL;
	}
	n = (size_t)p[1] << 24 | (size_t)p[2] << 16 | (size_t)p[3] << 8 | p[4];
	if (n > r->body_len - 5) {
		*why = "message length exceeds the body";
		return NULL;
	}
	*why = "message is not a JSON object";
	return json_loadb(r->body + 5, n, 0, NULL);
}

static char *
base64(const char *in, size_t n)
{
	static const char tbl[] =
	        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *out = sk_malloc(4 * ((n + 2) / 3) + 1), *o = out;

	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)(unsigned char)in[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)(unsigned char)in[i + 1] << 8;
		if (i + 2 < n)
			v |= (unsigned char)in[i + 2];
		*o++ = tbl[(v >> 18) & 63];
		*o++ = tbl[(v >> 12) & 63];
		*o++ = i + 1 < n ? tbl[(v >> 6) & 63] : '=';
		*o++ = i + 2 < n ? tbl[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

static void
data_event(sk_buf *b, const char *stream, const sk_buf *out)
{
	char *enc;

	if (out->len == 0)
		return;
	enc = base64(out->data, out->len);
	frame(b, 0, json_pack("{s:{s:{s:s}}}", "event", "data", stream, enc));
	free(enc);
}

/* ---- the command ---- */

typedef struct words {
	char **v;
	int n;
} words;

static void
words_push(words *w, sk_buf *cur)
{
	w->v = sk_realloc(w->v, (size_t)(w->n + 1) * sizeof(*w->v));
	w->v[w->n++] = cur->data ? sk_buf_detach(cur) : sk_strdup("");
}

static void
words_free(words *w)
{
	for (int i = 0; i < w->n; i++)
		free(w->v[i]);
	free(w->v);
}

static bool
name_char(char c, bool first)
{
	return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	        (!first && c >= '0' && c <= '9');
}

/* Expands $NAME or ${NAME} at *pp into cur; advances *pp. */
static void
expand(const char **pp, const json_t *env, sk_buf *cur)
{
	const char *p = *pp + 1, *start;
	bool braced = *p == '{';
	const char *val;
	char name[256];

	start = p += braced;
	while (name_char(*p, p == start))
		p++;
	if (p == start || (braced && *p != '}') || (size_t)(p - start) >= sizeof(name)) {
		sk_buf_append(cur, "$", 1); /* not an expansion: a literal dollar */
		*pp += 1;
		return;
	}
	memcpy(name, start, (size_t)(p - start));
	name[p - start] = '\0';
	val = json_string_value(json_object_get(env, name));
	if (val)
		sk_buf_append(cur, val, strlen(val));
	*pp = p + braced;
}

/* Splits a script into expanded words. -1 on an unterminated quote or a shell
 * operator this simulator does not evaluate. */
static int
split(const char *p, const json_t *env, words *out)
{
	sk_buf cur = SK_BUF_INIT(0);
	bool in_word = false, quoted = false;
	char q = 0; /* the open quote */

	for (; *p; p++) {
		if (q != 0 && *p == q) {
			q = 0;
		} else if (q == '\'') {
			sk_buf_append(&cur, p, 1);
		} else if (q == 0 && (*p == '\'' || *p == '"')) {
			q = *p;
			in_word = quoted = true;
		} else if (*p == '$') {
			expand(&p, env, &cur);
			p--;
			in_word = true;
		} else if (q == 0 && strchr(" \t\n", *p)) {
			if (in_word && (cur.len > 0 || quoted))
				words_push(out, &cur);
			in_word = quoted = false;
		} else if (q == 0 && strchr(";&|<>()`\\*?", *p)) {
			sk_buf_dispose(&cur);
			return -1;
		} else {
			sk_buf_append(&cur, p, 1);
			in_word = true;
		}
	}
	if (in_word && (cur.len > 0 || quoted))
		words_push(out, &cur);
	sk_buf_dispose(&cur);
	return q ? -1 : 0;
}

static void
print_env(const json_t *env, sk_buf *out)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)env, k, v)
	{
		sk_buf_printf(out, "%s=%s\n", k, json_string_value(v));
	}
}

static int
run_echo(const words *w, sk_buf *out)
{
	int i = 1;
	bool newline = w->n < 2 || strcmp(w->v[1], "-n") != 0;

	if (!newline)
		i = 2;
	for (int first = i; i < w->n; i++)
		sk_buf_printf(out, "%s%s", i > first ? " " : "", w->v[i]);
	if (newline)
		sk_buf_append(out, "\n", 1);
	return 0;
}

/* GNU printenv: the values found; exit 1 when any is missing. */
static int
run_printenv(const words *w, const json_t *env, sk_buf *out)
{
	int rc = 0;

	if (w->n == 1) {
		print_env(env, out);
		return 0;
	}
	for (int i = 1; i < w->n; i++) {
		const char *v = json_string_value(json_object_get(env, w->v[i]));
		if (v)
			sk_buf_printf(out, "%s\n", v);
		else
			rc = 1;
	}
	return rc;
}

static int
unsupported(sk_buf *err)
{
	sk_buf_printf(err,
	        "bash: line 1: sandboxsim evaluates only echo, env, printenv, true, false "
	        "and mkdir, ln, chmod, readlink, mkfifo, rm\n");
	return 127;
}

/* A command on sandbox id (under s->lock): a connection its network
 * policy decides (curl, wget, nc), else a file command of its tree; -1
 * when w is neither. */
static int
sandbox_command(sim *s, const char *id, const words *w, sk_buf *out, sk_buf *err)
{
	sim_sandbox *sb;
	int rc = -1;

	pthread_mutex_lock(&s->lock);
	sb = sim_store_get(s, id, sk_now_ms());
	if (sb && (rc = sim_net_command(sb, w->n, w->v, out, err)) < 0)
		rc = sim_fs_command(sim_sandbox_fs(s, sb), w->n, w->v, out, err);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* Evaluates the script; returns the exit code. */
static int
evaluate(sim *s, const char *id, const char *script, const json_t *env, sk_buf *out, sk_buf *err)
{
	words w = { 0 };
	int rc;

	if (split(script, env, &w) != 0)
		rc = unsupported(err);
	else if (w.n == 0)
		rc = 0;
	else if (strcmp(w.v[0], "true") == 0 || strcmp(w.v[0], ":") == 0)
		rc = 0; /* the application benchmark's bare command */
	else if (strcmp(w.v[0], "false") == 0)
		rc = 1;
	else if (strcmp(w.v[0], "echo") == 0)
		rc = run_echo(&w, out);
	else if (strcmp(w.v[0], "printenv") == 0)
		rc = run_printenv(&w, env, out);
	else if (strcmp(w.v[0], "env") == 0)
		rc = w.n == 1 ? run_printenv(&w, env, out) : unsupported(err);
	else if ((rc = sandbox_command(s, id, &w, out, err)) < 0) {
		sk_buf_printf(err, "bash: line 1: %s: command not found\n", w.v[0]);
		rc = 127;
	}
	words_free(&w);
	return rc;
}

/* ---- the request ---- */

static const char *const defaults[][2] = {
	{ "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" },
	{ "HOME", "/home/user" },
	{ "USER", "user" },
	{ "LOGNAME", "user" },
};

/* defaults -> sandbox-wide -> per-command envs (later wins). */
static json_t *
process_env(const json_t *wide, json_t *cmd_envs)
{
	json_t *env = json_object();

	for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
		json_object_set_new(env, defaults[i][0], json_string(defaults[i][1]));
	json_object_update(env, (json_t *)wide);
	if (json_is_object(cmd_envs))
		json_object_update(env, cmd_envs);
	return env;
}

/* The script of `bash -l -c SCRIPT`, or the command line of anything else
 * (which then exits 127 unless it is one of the evaluated commands). */
static const char *
script_of(json_t *proc, char **owned)
{
	const char *cmd = json_string_value(json_object_get(proc, "cmd"));
	json_t *args = json_object_get(proc, "args"), *a;
	sk_buf line = SK_BUF_INIT(0);
	size_t i;

	json_array_foreach(args, i, a)
	{
		if (strcmp(json_string_value(a) ? json_string_value(a) : "", "-c") == 0 &&
		        json_is_string(json_array_get(args, i + 1)))
			return json_string_value(json_array_get(args, i + 1));
	}
	sk_buf_printf(&line, "%s", cmd ? cmd : "");
	json_array_foreach(args, i, a)
	{
		sk_buf_printf(&line, " %s", json_string_value(a) ? json_string_value(a) : "");
	}
	*owned = sk_buf_detach(&line);
	return *owned;
}

static bool
env_values_are_strings(json_t *envs)
{
	const char *k;
	json_t *v;

	if (envs == NULL || json_is_null(envs))
		return true;
	if (!json_is_object(envs))
		return false;
	json_object_foreach(envs, k, v)
	{
		if (!json_is_string(v))
			return false;
	}
	return true;
}

static void
run(sim *s, const char *id, sim_req *r, json_t *proc, const json_t *wide, int pid)
{
	sk_buf b = SK_BUF_INIT(0), out = SK_BUF_INIT(1 << 20), err = SK_BUF_INIT(1 << 20);
	json_t *env = process_env(wide, json_object_get(proc, "envs")), *end;
	char *owned = NULL, status[32];
	const char *script = script_of(proc, &owned);
	double secs;
	int rc;

	if (sim_proc_long(script, &secs)) {
		sim_proc_stream(s, r, id, pid, proc, secs);
		json_decref(env);
		free(owned);
		return;
	}
	rc = evaluate(s, id, script, env, &out, &err);

	frame(&b, 0, json_pack("{s:{s:{s:i}}}", "event", "start", "pid", pid));
	data_event(&b, "stdout", &out);
	data_event(&b, "stderr", &err);
	snprintf(status, sizeof(status), "exit status %d", rc);
	end = json_pack("{s:b,s:s}", "exited", 1, "status", status);
	if (rc != 0) { /* proto3 JSON omits the zero exit code */
		json_object_set_new(end, "exitCode", json_integer(rc));
		json_object_set_new(end, "error", json_string(status));
	}
	frame(&b, 0, json_pack("{s:{s:o}}", "event", "end", end));
	frame(&b, FLAG_END, json_object());
	reply_stream(r, &b);
	sk_buf_dispose(&out);
	sk_buf_dispose(&err);
	json_decref(env);
	free(owned);
}

void
sim_process_start(sim *s, sim_req *r, const json_t *env, int pid, const char *id)
{
	const char *ctype = sim_req_header(r, "Content-Type"), *why = NULL;
	json_t *msg, *proc;

	if (strcmp(r->segs[1], "List") == 0 || strcmp(r->segs[1], "SendSignal") == 0) {
		/* unary: a Connect error is an HTTP status with {code, message} */
		if (env == NULL)
			sim_reply_json(s, r, 401,
			        json_pack("{s:s,s:s}", "code", "unauthenticated", "message",
			                "invalid access token"));
		else if (strcmp(r->segs[1], "List") == 0)
			sim_proc_list(s, r, id);
		else
			sim_proc_signal(s, r, id);
		return;
	}
	if (strcmp(r->segs[1], "Start") != 0) {
		connect_error(r, "unimplemented", "process.Process method not simulated");
		return;
	}
	if (ctype == NULL || strncmp(ctype, "application/connect+json", 24) != 0) {
		sim_reply_text(r, 415, "text/plain",
		        "Start is a server stream: "
		        "Content-Type application/connect+json\n");
		return;
	}
	if (env == NULL) {
		connect_error(r, "unauthenticated", "invalid access token");
		return;
	}
	msg = unframe(r, &why);
	proc = json_object_get(msg, "process");
	if (!json_is_object(proc))
		connect_error(r, "invalid_argument", msg ? "process: required" : why);
	else if (!env_values_are_strings(json_object_get(proc, "envs")))
		connect_error(r, "invalid_argument", "process.envs: values must be strings");
	else
		run(s, id, r, proc, env, pid);
	json_decref(msg);
}
