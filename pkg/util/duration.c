/* util/duration: Go/Kubernetes duration syntax ("1h30m", "90s", "250ms"). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

/* Unit length and its size in nanoseconds; longest units first for "ms" vs "m". */
static const struct {
	const char *name;
	double ns;
} units[] = {
	{ "ns", 1.0 },
	{ "us", 1e3 },
	{ "µs", 1e3 },
	{ "ms", 1e6 },
	{ "s", 1e9 },
	{ "m", 60e9 },
	{ "h", 3600e9 },
};

static int
match_unit(const char *p, double *ns_out, size_t *len_out)
{
	size_t best = 0;

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		size_t n = strlen(units[i].name);
		if (n > best && strncmp(p, units[i].name, n) == 0) {
			best = n;
			*ns_out = units[i].ns;
		}
	}
	*len_out = best;
	return best > 0 ? 0 : -1;
}

int
sk_duration_parse(const char *text, int64_t *ms_out)
{
	const char *p = text;
	double total_ns = 0;

	if (text == NULL || *text == '\0')
		return SK_EINVALID;
	if (strcmp(text, "0") == 0) {
		*ms_out = 0;
		return SK_OK;
	}
	while (*p) {
		double value = 0, scale = 1, unit_ns;
		size_t ulen;
		bool digits = false;

		while (isdigit((unsigned char)*p)) {
			value = value * 10 + (*p++ - '0');
			digits = true;
		}
		if (*p == '.') {
			p++;
			while (isdigit((unsigned char)*p)) {
				scale /= 10;
				value += (*p++ - '0') * scale;
				digits = true;
			}
		}
		if (!digits || match_unit(p, &unit_ns, &ulen) != 0)
			return SK_EINVALID;
		p += ulen;
		total_ns += value * unit_ns;
		if (total_ns > 9.2e18)
			return SK_EINVALID;
	}
	/* Whole nanoseconds first: "1.001s" sums to 1000999999.99... ns in
	 * binary floating point, which truncated would read back as 1000 ms. */
	*ms_out = llround(total_ns) / 1000000;
	return SK_OK;
}

void
sk_duration_format(int64_t ms, char *buf, size_t len)
{
	int64_t h = ms / 3600000, m = ms / 60000 % 60, s = ms / 1000 % 60, r = ms % 1000;
	size_t off = 0;

	if (ms <= 0) {
		snprintf(buf, len, "0s");
		return;
	}
	if (ms < 1000) {
		snprintf(buf, len, "%lldms", (long long)ms);
		return;
	}
	buf[0] = '\0';
	if (h > 0)
		off += (size_t)snprintf(buf + off, len - off, "%lldh", (long long)h);
	if (m > 0 && off < len)
		off += (size_t)snprintf(buf + off, len - off, "%lldm", (long long)m);
	if ((s > 0 || r > 0) && off < len) {
		if (r > 0)
			snprintf(buf + off, len - off, "%lld.%03llds", (long long)s, (long long)r);
		else
			snprintf(buf + off, len - off, "%llds", (long long)s);
	}
}
