/*
 * log: the daemon's structured logger, one line per event on stderr,
 *   text: ts=2026-11-29T15:04:05.123Z level=info msg="reconciled" userspace=alice ...
 *   json: {"ts":"...","level":"info","msg":"reconciled","userspace":"alice",...}
 * The library hands over key=value text (values with spaces quoted); the
 * JSON form splits it into fields.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spacekeeper.h"

static const char *const level_names[] = { "debug", "info", "warn", "error" };

int
sk_log_level_parse(const char *s, sk_log_level *out)
{
	for (int i = 0; i < 4; i++) {
		if (strcmp(s, level_names[i]) == 0) {
			*out = (sk_log_level)i;
			return 0;
		}
	}
	if (strcmp(s, "warning") == 0) {
		*out = SK_LOG_WARN;
		return 0;
	}
	return SK_EINVALID;
}

/* Reads one key=value pair at *p (value optionally "quoted" with \" escapes);
 * returns false at the end. key and value are malloc'd. */
static bool
next_pair(const char **p, char **key, char **value)
{
	const char *s = *p, *k, *eq;
	sk_buf v = SK_BUF_INIT(1 << 20);

	while (*s == ' ')
		s++;
	if (!*s)
		return false;
	k = s;
	while (*s && *s != '=' && *s != ' ')
		s++;
	eq = s;
	*key = sk_strndup(k, (size_t)(eq - k));
	if (*s == '=' && s[1] == '"') {
		for (s += 2; *s && *s != '"'; s++) {
			if (*s == '\\' && s[1])
				s++;
			sk_buf_append(&v, s, 1);
		}
		if (*s == '"')
			s++;
	} else if (*s == '=') {
		const char *b = ++s;
		while (*s && *s != ' ')
			s++;
		sk_buf_append(&v, b, (size_t)(s - b));
	}
	sk_buf_append(&v, "", 0);
	*value = sk_buf_detach(&v);
	*p = s;
	return true;
}

static void
write_json(FILE *f, const char *ts, sk_log_level level, const char *msg, const char *kv)
{
	json_t *o = json_pack("{s:s, s:s, s:s}", "ts", ts, "level", level_names[level], "msg", msg);
	const char *p = kv ? kv : "";
	char *key, *value, *line;

	while (next_pair(&p, &key, &value)) {
		if (key[0])
			json_object_set_new(o, key, json_string(value));
		free(key);
		free(value);
	}
	line = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	fprintf(f, "%s\n", line ? line : "{}");
	free(line);
	json_decref(o);
}

void
sk_daemon_log(sk_log_level level, const char *msg, const char *kv, void *payload)
{
	sk_log_config *cfg = payload;
	char ts[40];

	if (level < cfg->level)
		return;
	sk_time_format(sk_now_ms(), ts, sizeof(ts));
	flockfile(stderr);
	if (cfg->json)
		write_json(stderr, ts, level, msg, kv);
	else
		fprintf(stderr, "ts=%s level=%s msg=\"%s\"%s%s\n", ts, level_names[level], msg,
		        kv && kv[0] ? " " : "", kv ? kv : "");
	fflush(stderr);
	funlockfile(stderr);
}
