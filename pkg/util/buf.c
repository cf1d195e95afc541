/* util/buf: bounded growable buffers, allocation helpers, file reading. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "util.h"

void *
sk_malloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL)
		abort();
	return p;
}

void *
sk_calloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (p == NULL)
		abort();
	return p;
}

void *
sk_realloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (q == NULL)
		abort();
	return q;
}

char *
sk_strdup(const char *s)
{
	return s ? sk_strndup(s, strlen(s)) : NULL;
}

char *
sk_strndup(const char *s, size_t n)
{
	char *d = sk_malloc(n + 1);

	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

void
sk_wipe_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s)); /* a memset before free may be dropped */
		free(s);
	}
}

char *
sk_asprintf(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		abort();
	va_end(ap);
	return s;
}

static int
buf_grow(sk_buf *b, size_t extra)
{
	size_t need = b->len + extra + 1;
	size_t cap;

	if (b->max && need > b->max + 1)
		return SK_ENOMEM;
	if (need <= b->cap)
		return SK_OK;
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap *= 2;
	b->data = sk_realloc(b->data, cap);
	b->cap = cap;
	return SK_OK;
}

int
sk_buf_append(sk_buf *b, const void *data, size_t len)
{
	if (buf_grow(b, len) != SK_OK)
		return SK_ENOMEM;
	memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return SK_OK;
}

int
sk_buf_vprintf(sk_buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	int n;

	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0 || buf_grow(b, (size_t)n) != SK_OK)
		return SK_ENOMEM;
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return SK_OK;
}

int
sk_buf_printf(sk_buf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = sk_buf_vprintf(b, fmt, ap);
	va_end(ap);
	return rc;
}

void
sk_buf_reset(sk_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

void
sk_buf_dispose(sk_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

char *
sk_buf_detach(sk_buf *b)
{
	char *d = b->data ? b->data : sk_strdup("");

	b->data = NULL;
	b->len = b->cap = 0;
	return d;
}

int
sk_file_read(const char *path, size_t max, char **out, size_t *len_out, sk_error *err)
{
	sk_buf b = SK_BUF_INIT(max);
	char chunk[65536];
	int fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
	int rc = SK_OK;

	if (fd < 0)
		return sk_error_set(err, SK_EIO, "%s: %s", path, strerror(errno));
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = sk_error_set(err, SK_EIO, "%s: %s", path, strerror(errno));
			break;
		}
		if (n == 0)
			break;
		if (sk_buf_append(&b, chunk, (size_t)n) != SK_OK) {
			rc = sk_error_set(err, SK_EINVALID, "%s: larger than the %zu byte limit",
			        strcmp(path, "-") == 0 ? "<stdin>" : path, max);
			break;
		}
	}
	if (fd != STDIN_FILENO)
		close(fd);
	if (rc != SK_OK) {
		sk_buf_dispose(&b);
		return rc;
	}
	*len_out = b.len;
	*out = sk_buf_detach(&b);
	return SK_OK;
}

/* getrandom(2): thread-safe with no descriptor or lock held by the process.
 * rand() only when the kernel has no getrandom (before Linux 3.17). */
void
sk_random_bytes(unsigned char *out, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = getrandom(out + got, n - got, 0);
		if (r > 0)
			got += (size_t)r;
		else if (r < 0 && errno != EINTR)
			break;
	}
	for (; got < n; got++)
		out[got] = (unsigned char)rand();
}

void
sk_uuid4(char out[37])
{
	unsigned char r[16];

	sk_random_bytes(r, sizeof(r));
	r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
	r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
	        r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12],
	        r[13], r[14], r[15]);
}

/* The length of the valid UTF-8 sequence at s (1-4), else 0: no overlong
 * form, no surrogate, nothing past U+10FFFF (jansson's utf8_check_full). */
static size_t
utf8_len(const unsigned char *s)
{
	size_t n, i;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xC2 && s[0] <= 0xDF)
		n = 2, cp = s[0] & 0x1F;
	else if (s[0] >= 0xE0 && s[0] <= 0xEF)
		n = 3, cp = s[0] & 0x0F;
	else if (s[0] >= 0xF0 && s[0] <= 0xF4)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
	        (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return n;
}

int
sk_buf_json_string(sk_buf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t start = b->len, n;
	char esc[8];

	for (n = 0; p[n]; n += utf8_len(p + n))
		if (utf8_len(p + n) == 0)
			return SK_EINVALID;
	if (sk_buf_append(b, "\"", 1) != SK_OK)
		return SK_ENOMEM;
	while (*p) {
		const unsigned char *run = p;

		while (*p >= 0x20 && *p != '"' && *p != '\\')
			p++;
		if (p > run && sk_buf_append(b, run, (size_t)(p - run)) != SK_OK)
			goto nomem;
		if (*p == '\0')
			break;
		switch (*p) {
		case '"': strcpy(esc, "\\\""); break;
		case '\\': strcpy(esc, "\\\\"); break;
		case '\b': strcpy(esc, "\\b"); break;
		case '\f': strcpy(esc, "\\f"); break;
		case '\n': strcpy(esc, "\\n"); break;
		case '\r': strcpy(esc, "\\r"); break;
		case '\t': strcpy(esc, "\\t"); break;
		default: snprintf(esc, sizeof(esc), "\\u%04X", *p); break;
		}
		if (sk_buf_append(b, esc, strlen(esc)) != SK_OK)
			goto nomem;
		p++;
	}
	if (sk_buf_append(b, "\"", 1) == SK_OK)
		return SK_OK;
nomem:
	b->len = start;
	if (b->data)
		b->data[start] = '\0';
	return SK_ENOMEM;
}
