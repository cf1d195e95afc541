/*
 * util: errors, durations, timestamps, bounded buffers, string lists, the
 * string hash map and the token-bucket limiter.
 * The bottom of the dependency graph: includes only libc (with pthread) and
 * jansson.
 */
#ifndef SK_UTIL_H
#define SK_UTIL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
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
/* Where a failure came from, when a caller must tell (never parse the message). */
typedef enum sk_error_domain {
	SK_EDOMAIN_NONE = 0,
	SK_EDOMAIN_DATABASE, /* the store's database answered with it, or could not be reached */
} sk_error_domain;

typedef struct sk_error {
	int code;
	sk_error_domain domain; /* reset by sk_error_set; the callee sets it after */
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
/* The one classification of a failure (transient or terminal): every layer
 * (executor, controller, migration, CLI) asks here.
 *   SK_RETRY_SAME    the same call may succeed later: unavailable, timed
 *                    out, 408/429/5xx (SK_ETRANSIENT);
 *   SK_RETRY_REREAD  the call as made cannot succeed, but reading again and
 *                    planning again can: a lost compare-and-swap (a
 *                    conflict), a sandbox or object that vanished under an
 *                    action (level-triggered: the next observation decides);
 *   SK_RETRY_NEVER   terminal: bad input, other 4xx, unauthorized, not
 *                    supported, and every code not listed above. */
typedef enum sk_retry {
	SK_RETRY_NEVER = 0,
	SK_RETRY_SAME,
	SK_RETRY_REREAD,
} sk_retry;
sk_retry sk_error_retry(int code);
/* Transient: worth retrying with backoff (SK_RETRY_SAME or SK_RETRY_REREAD). */
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
/* Human age as kubectl prints it (HumanDuration): 5s, 119s, 4m51s, 25m, 3h5m, 4d, whole
 * seconds only. */
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
/* Appends s as a JSON string, quoted and escaped byte for byte as jansson's
 * json_dumps writes it (no ASCII or slash escaping): a hand-built answer
 * reads as a jansson-built one. SK_EINVALID (nothing appended) when s is not
 * valid UTF-8, which json_string refuses too. */
int sk_buf_json_string(sk_buf *b, const char *s);

/* Reads a whole file (or stdin for "-") up to max bytes. */
int sk_file_read(const char *path, size_t max, char **out, size_t *len_out, sk_error *err);

/* Allocation helpers that abort on OOM (a controller restarts, like redis). */
void *sk_malloc(size_t n);
void *sk_calloc(size_t n, size_t size);
void *sk_realloc(void *p, size_t n);
char *sk_strdup(const char *s); /* NULL-safe: NULL -> NULL */
char *sk_strndup(const char *s, size_t n);
char *sk_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Zeroes a secret string (a key, a token, a body with env values), then frees
 * it. NULL-safe. */
void sk_wipe_free(char *s);

/* The candidate closest to word by edit distance, when close enough to be a
 * typo (at most 2 edits, fewer than half its length); NULL otherwise. Borrowed. */
const char *sk_suggest(const char *word, const char *const *candidates, size_t n);
/* n random bytes (getrandom, thread-safe). */
void sk_random_bytes(unsigned char *out, size_t n);
/* A random version-4 UUID (thread-safe, from /dev/urandom). */
void sk_uuid4(char out[37]);

/* Loggers are injected: library code never prints. */
typedef enum sk_log_level {
	SK_LOG_DEBUG,
	SK_LOG_INFO,
	SK_LOG_WARN,
	SK_LOG_ERROR,
} sk_log_level;
typedef void (*sk_log_fn)(sk_log_level level, const char *msg, const char *kv, void *payload);

/* A monotonic clock in milliseconds. NULL in options means sk_monotonic_ms. */
typedef int64_t (*sk_clock_fn)(void *payload);

/* ---- waits on the monotonic clock (sync.c) ---- */

/* A condition variable whose timed waits use CLOCK_MONOTONIC. */
void sk_cond_init_monotonic(pthread_cond_t *cond);
/* Waits on cond (mu held, cond made by sk_cond_init_monotonic) for at most
 * wait_ms (< 0: 0). Returns false on timeout; wakeups may be spurious, so
 * callers loop on their condition. */
bool sk_cond_wait_ms(pthread_cond_t *cond, pthread_mutex_t *mu, int64_t wait_ms);
/* Sleeps ms (<= 0: not at all) by the monotonic clock, resuming after signals. */
void sk_sleep_ms(int64_t ms);

/* ---- string map (strmap.c) ----
 * Keys copied, values owned through an optional free function.
 * Not thread-safe: callers lock. */

typedef struct sk_strmap sk_strmap;
typedef void (*sk_strmap_free_fn)(void *value);
typedef void (*sk_strmap_visit_fn)(const char *key, void *value, void *payload);

/* free_value may be NULL (values are not owned). */
sk_strmap *sk_strmap_new(sk_strmap_free_fn free_value);
void sk_strmap_free(sk_strmap *m); /* NULL-safe; frees every value */
/* Borrowed value or NULL. */
void *sk_strmap_get(const sk_strmap *m, const char *key);
bool sk_strmap_has(const sk_strmap *m, const char *key);
/* Inserts or replaces (the old value is freed). Takes ownership of value. */
void sk_strmap_put(sk_strmap *m, const char *key, void *value);
/* Removes and frees the value; returns whether the key was present. */
bool sk_strmap_remove(sk_strmap *m, const char *key);
/* Removes without freeing and returns the value (NULL when absent). */
void *sk_strmap_take(sk_strmap *m, const char *key);
size_t sk_strmap_len(const sk_strmap *m);
/* Visits every entry; the callback must not modify the map. */
void sk_strmap_foreach(const sk_strmap *m, sk_strmap_visit_fn fn, void *payload);
/* Every key, sorted (caller frees with sk_strv_free). */
char **sk_strmap_keys(const sk_strmap *m, size_t *n_out);
void sk_strv_free(char **v, size_t n);

/* ---- token bucket + in-flight limiter (ratelimit.c) ----
 * The workqueue's global bucket, and one limiter per provider in the
 * controller (maxInFlight, qps, burst from sk_provider_config). Thread-safe. */

typedef struct sk_limiter sk_limiter;

typedef struct sk_limiter_options {
	double qps; /* tokens per second; <= 0 means unlimited */
	int burst; /* bucket size; < 1 is taken as 1 */
	int max_in_flight; /* concurrent holders; <= 0 means unlimited */
	sk_clock_fn clock; /* NULL: sk_monotonic_ms */
	void *clock_payload;
} sk_limiter_options;
#define SK_LIMITER_OPTIONS_INIT                                                                    \
	{                                                                                          \
		10, 100, 0, NULL, NULL                                                             \
	}

sk_limiter *sk_limiter_new(const sk_limiter_options *opts);
void sk_limiter_free(sk_limiter *l); /* NULL-safe */
/* Takes one token now, possibly on credit: returns how many milliseconds the
 * caller should wait before acting (0 when a token was available). */
int64_t sk_limiter_reserve(sk_limiter *l);
/* Takes a token only when one is available now. */
bool sk_limiter_try_take(sk_limiter *l);
/* Blocks until an in-flight slot is free and a token is due (sleeping with
 * the monotonic clock), or until cancel_flag (may be NULL; set by another
 * thread) becomes true (checked every 50 ms) or timeout_ms passes (< 0: no
 * timeout). Returns 0, SK_ETIMEOUT, or SK_ERROR when cancelled. On success
 * the caller must sk_limiter_release. */
int sk_limiter_acquire(sk_limiter *l, int64_t timeout_ms, const atomic_bool *cancel_flag);
void sk_limiter_release(sk_limiter *l);
int sk_limiter_in_flight(sk_limiter *l);

/* ---- cron schedules, UTC (cron.c) ---- */
/* A parsed schedule: one bit per value of each field. */
typedef struct sk_cron {
	uint64_t second, minute, hour, mday, month, wday;
	bool mday_star, wday_star; /* the day field was "*" (for the either-day rule) */
} sk_cron;
/* "m h dom mon dow", or six fields with seconds first; *, N, N-M, lists,
 * /STEP. SK_EINVALID with why (a phrase naming the field) when it is not
 * one, or never fires. */
int sk_cron_parse(const char *text, sk_cron *out, char *why, size_t len);
/* The first time after after_ms (ms since the epoch, UTC) the schedule
 * fires, whole seconds; 0 when none within five years. */
int64_t sk_cron_next(const sk_cron *c, int64_t after_ms);

#endif
