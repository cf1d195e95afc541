/* util/error: the error struct and the code table. */
#include <stdio.h>
#include <string.h>

#include "util.h"

int
sk_error_set(sk_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL)
		return code;
	err->code = code;
	err->domain = SK_EDOMAIN_NONE;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	return code;
}

void
sk_error_prefix(sk_error *err, const char *fmt, ...)
{
	char prefix[SK_ERROR_MSG_MAX];
	char old[SK_ERROR_MSG_MAX];
	va_list ap;

	if (err == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, err->message, sizeof(old));
	{
		size_t n = strnlen(prefix, sizeof(prefix) - 3);
		memcpy(err->message, prefix, n);
		memcpy(err->message + n, ": ", 2);
		n += 2;
		strncpy(err->message + n, old, sizeof(err->message) - n - 1);
		err->message[sizeof(err->message) - 1] = '\0';
	}
}

void
sk_error_clear(sk_error *err)
{
	if (err != NULL)
		memset(err, 0, sizeof(*err));
}

const char *
sk_strerror(int code)
{
	switch (code) {
	case SK_OK: return "ok";
	case SK_ENOMEM: return "out of memory or size limit";
	case SK_EINVALID: return "invalid";
	case SK_ENOTFOUND: return "not found";
	case SK_EEXISTS: return "already exists";
	case SK_ECONFLICT: return "conflict";
	case SK_EUNAVAILABLE: return "unavailable";
	case SK_ETIMEOUT: return "timed out";
	case SK_ETRANSIENT: return "transient failure";
	case SK_ETERMINAL: return "terminal failure";
	case SK_ENOTSUPPORTED: return "not supported";
	case SK_EIO: return "i/o error";
	case SK_EUNAUTHORIZED: return "unauthorized";
	default: return "error";
	}
}

sk_retry
sk_error_retry(int code)
{
	switch (code) {
	case SK_EUNAVAILABLE:
	case SK_ETIMEOUT:
	case SK_ETRANSIENT: return SK_RETRY_SAME;
	case SK_ECONFLICT:
	case SK_ENOTFOUND: return SK_RETRY_REREAD;
	default: return SK_RETRY_NEVER;
	}
}

bool
sk_error_is_transient(int code)
{
	return sk_error_retry(code) != SK_RETRY_NEVER;
}
