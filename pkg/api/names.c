/* api/names: name and value rules (DNS-1123, labels, userID, metadata) and
 * the plain-scalar typing of YAML shared by the reader and the emitter. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "names.h"

static bool
is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool
dns_label_n(const char *s, size_t n)
{
	if (n == 0 || n > 63 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!is_lower_alnum(s[i]) && s[i] != '-')
			return false;
	}
	return true;
}

bool
sk_valid_name(const char *s)
{
	return s != NULL && dns_label_n(s, strlen(s));
}

static bool
is_id_char(char c)
{
	return isalnum((unsigned char)c) || c == '.' || c == '_' || c == '-';
}

/* [A-Za-z0-9._-]{min,max}: user IDs and sandbox metadata values (CubeSandbox
 * does not URL-decode, so nothing that would need encoding). */
static bool
id_chars(const char *s, size_t min, size_t max)
{
	size_t n;

	if (s == NULL)
		return false;
	n = strlen(s);
	if (n < min || n > max)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!is_id_char(s[i]))
			return false;
	}
	return true;
}

bool
sk_valid_user_id(const char *s)
{
	return id_chars(s, 1, 128);
}

bool
sk_valid_metadata_value(const char *s)
{
	return id_chars(s, 0, 256);
}

bool
sk_reserved_metadata_key(const char *s)
{
	static const char *const reserved[] = { SK_META_USER_ID, SK_META_USERSPACE,
		SK_META_USERSPACE_UID, SK_META_MANAGED_BY, SK_META_NETWORK, SK_META_SNAPSHOT };

	for (size_t i = 0; s != NULL && i < sizeof(reserved) / sizeof(reserved[0]); i++) {
		if (strcmp(s, reserved[i]) == 0)
			return true;
	}
	return false;
}

bool
sk_valid_dns_subdomain(const char *s)
{
	size_t n = strlen(s);
	const char *p = s;

	if (n == 0 || n > 253)
		return false;
	while (*p) {
		const char *dot = strchr(p, '.');
		size_t len = dot != NULL ? (size_t)(dot - p) : strlen(p);
		if (!dns_label_n(p, len))
			return false;
		p += len;
		if (*p == '.')
			p++;
		if (dot != NULL && *p == '\0')
			return false;
	}
	return true;
}

/* [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, at most 63, n may be 0 when allowed. */
static bool
label_name_n(const char *s, size_t n)
{
	if (n > 63)
		return false;
	if (n == 0)
		return true;
	if (!isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!is_id_char(s[i]))
			return false;
	}
	return true;
}

bool
sk_valid_label_key(const char *s)
{
	const char *slash = strchr(s, '/');
	const char *name = s;

	if (slash != NULL) {
		char prefix[256];
		size_t plen = (size_t)(slash - s);
		if (plen == 0 || plen > 253)
			return false;
		memcpy(prefix, s, plen);
		prefix[plen] = '\0';
		if (!sk_valid_dns_subdomain(prefix))
			return false;
		name = slash + 1;
	}
	return name[0] != '\0' && label_name_n(name, strlen(name));
}

bool
sk_valid_label_value(const char *s)
{
	return s != NULL && label_name_n(s, strlen(s));
}

bool
sk_duration_syntax_ok(const char *s)
{
	static const char *const units[] = { "ns", "us", "\xc2\xb5s", "ms", "s", "m", "h" };
	const char *p = s;

	if (s == NULL || *s == '\0')
		return false;
	while (*p) {
		size_t best = 0;
		if (!isdigit((unsigned char)*p))
			return false;
		while (isdigit((unsigned char)*p))
			p++;
		if (*p == '.') {
			p++;
			if (!isdigit((unsigned char)*p))
				return false;
			while (isdigit((unsigned char)*p))
				p++;
		}
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
			size_t n = strlen(units[i]);
			if (n > best && strncmp(p, units[i], n) == 0)
				best = n;
		}
		if (best == 0)
			return false;
		p += best;
	}
	return true;
}

bool
sk_json_int(json_t *v, int64_t *out)
{
	if (json_is_integer(v)) {
		*out = (int64_t)json_integer_value(v);
		return true;
	}
	if (json_is_real(v)) {
		double d = json_real_value(v);
		if (d != floor(d) || d < -9.2e18 || d > 9.2e18)
			return false;
		*out = (int64_t)d;
		return true;
	}
	return false;
}

static bool
word_in(const char *s, size_t len, const char *const *words)
{
	for (size_t i = 0; words[i] != NULL; i++) {
		if (strlen(words[i]) == len && memcmp(s, words[i], len) == 0)
			return true;
	}
	return false;
}

static bool
all_digits(const char *s, const char *end)
{
	if (s >= end)
		return false;
	for (; s < end; s++) {
		if (!isdigit((unsigned char)*s))
			return false;
	}
	return true;
}

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
static bool
is_float(const char *s, const char *end)
{
	const char *p = s;
	bool digits = false;

	if (p < end && (*p == '-' || *p == '+'))
		p++;
	while (p < end && isdigit((unsigned char)*p)) {
		p++;
		digits = true;
	}
	if (p < end && *p == '.') {
		p++;
		while (p < end && isdigit((unsigned char)*p)) {
			p++;
			digits = true;
		}
	}
	if (!digits)
		return false;
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '-' || *p == '+'))
			p++;
		return all_digits(p, end);
	}
	return p == end;
}

json_t *
sk_yaml_plain_scalar(const char *s, size_t len)
{
	static const char *const nulls[] = { "", "~", "null", "Null", "NULL", NULL };
	/* YAML 1.1 booleans as kubectl's reader (go-yaml v2) resolves them:
	 * `userID: no` is the boolean false there, which the API server
	 * rejects for a string; quote it ("no") to mean the word. */
	static const char *const trues[] = { "true", "True", "TRUE", "yes", "Yes", "YES", "on",
		"On", "ON", "y", "Y", NULL };
	static const char *const falses[] = { "false", "False", "FALSE", "no", "No", "NO", "off",
		"Off", "OFF", "n", "N", NULL };
	const char *end = s + len;
	const char *digits = s;

	if (word_in(s, len, nulls))
		return json_null();
	if (word_in(s, len, trues))
		return json_true();
	if (word_in(s, len, falses))
		return json_false();
	if (len > 0 && (*s == '-' || *s == '+'))
		digits++;
	if (all_digits(digits, end) && len < 32) {
		char tmp[32];
		long long v;
		memcpy(tmp, s, len);
		tmp[len] = '\0';
		errno = 0;
		v = strtoll(tmp, NULL, 10);
		if (errno == 0)
			return json_integer(v);
		return json_real(strtod(tmp, NULL));
	}
	if (is_float(s, end) && len < 64) {
		char tmp[64];
		memcpy(tmp, s, len);
		tmp[len] = '\0';
		if (isfinite(strtod(tmp, NULL)))
			return json_real(strtod(tmp, NULL));
	}
	return json_stringn(s, len);
}
