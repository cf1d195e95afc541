/*
 * util: errors, durations, timestamps, bounded buffers, string lists.
 * The bottom of the dependency graph: includes only libc and jansson.
 */
#ifndef SK_UTIL_H
#define SK_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Error codes: 0 is success, every failure is negative. Stable numbers. */
enum {
	SK_OK = 0,
	SK_ERROR = -1, /* generic failure */
	SK_ENOMEM = -2, /* allocation failed or a size cap was hit */
	SK_EINVALID = -3, /* bad input (validation, parse) */
	SK_ENOTFOUND = -4, /* object or sandbox does not exist (404) */
	SK_EEXISTS = -5, /* create of something that exists */
	SK_ECONFLICT = -6, /* compare-and-swap lost, or a state conflict (409) */
	SK_EUNAVAILABLE = -7, /* server down or unreachable (transient) */
	SK_ETIMEOUT = -8, /* timed out (transient) */
	SK_ETRANSIENT = -9, /* retry later: 408, 429, 5xx */
	SK_ETERMINAL = -10, /* will not succeed on retry: other 4xx */
	SK_ENOTSUPPORTED = -11, /* the backend lacks this capability */
	SK_EIO = -12, /* file or stream I/O */
	SK_EUNAUTHORIZED = -13, /* 401/403 */
};

#define SK_ERROR_MSG_MAX 1024

/* Details of a failure, filled by the callee, owned by the caller. */
typedef struct sk_error {
	int code;
	int http_status; /* 0 when not an HTTP failure */
	int64_t retry_after_ms; /* from Retry-After, 0 when absent */
	char message[SK_ERROR_MSG_MAX];
} sk_error;

/* Sets code and message; returns code so callers can `return sk_error_set(...)`.
 * err may be NULL. */
int sk_error_set(sk_error *err, int code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
/* Prefixes the existing message with "prefix: ". */
void sk_error_prefix(sk_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sk_error_clear(sk_error *err);
const char *sk_strerror(int code);
/* True for failures worth retrying with backoff. */
bool sk_error_is_transient(int code);

/* Durations in Go/Kubernetes syntax: "90s", "15m", "1h30m", "250ms", "0s".
 * Units: ns us ms s m h; decimals allowed ("1.5h"); no sign. */
int sk_duration_parse(const char *text, int64_t *ms_out);
/* Canonical form: "1h30m", "90s" -> "1m30s", "250ms", "0s". */
void sk_duration_format(int64_t ms, char *buf, size_t len);

/* Wall clock in milliseconds since the epoch, and a monotonic clock. */
int64_t sk_now_ms(void);
int64_t sk_monotonic_ms(void);
/* RFC 3339 UTC with millisecond precision: 2026-11-29T15:04:05.123Z */
void sk_time_format(int64_t ms, char *buf, size_t len);
/* Accepts RFC 3339 with any fraction and Z or +hh:mm. */
int sk_time_parse(const char *text, int64_t *ms_out);
/* Human age like kubectl: 5s, 3m, 2h, 4d. */
void sk_age_format(int64_t ms, char *buf, size_t len);

/* A growable byte buffer with a hard cap (curl's dynbuf): appends past the
 * cap fail with SK_ENOMEM and leave the buffer intact. Always NUL-terminated. */
typedef struct sk_buf {
	char *data;
	size_t len;
	size_t cap;
	size_t max;
} sk_buf;
#define SK_BUF_INIT(maxbytes)                                                                      \
	{                                                                                          \
		NULL, 0, 0, (maxbytes)                                                             \
	}
int sk_buf_append(sk_buf *b, const void *data, size_t len);
int sk_buf_printf(sk_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int sk_buf_vprintf(sk_buf *b, const char *fmt, va_list ap);
void sk_buf_reset(sk_buf *b);
void sk_buf_dispose(sk_buf *b);
/* Hands the data to the caller (free() it); the buffer is empty afterwards. */
char *sk_buf_detach(sk_buf *b);

/* Reads a whole file (or stdin for "-") up to max bytes. */
int sk_file_read(const char *path, size_t max, char **out, size_t *len_out, sk_error *err);

/* Allocation helpers that abort on OOM (a controller restarts, like redis). */
void *sk_malloc(size_t n);
void *sk_calloc(size_t n, size_t size);
void *sk_realloc(void *p, size_t n);
char *sk_strdup(const char *s); /* NULL-safe: NULL -> NULL */
char *sk_strndup(const char *s, size_t n);
char *sk_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Random hex / lowercase alnum identifiers (thread-safe, from /dev/urandom). */
void sk_random_alnum(char *buf, size_t n); /* n chars + NUL written */
void sk_uuid4(char out[37]);

/* Loggers are injected: library code never prints. */
typedef enum sk_log_level {
	SK_LOG_DEBUG,
	SK_LOG_INFO,
	SK_LOG_WARN,
	SK_LOG_ERROR,
} sk_log_level;
typedef void (*sk_log_fn)(sk_log_level level, const char *msg, const char *kv, void *payload);

#endif
