/* util/time: clocks, RFC 3339 timestamps, kubectl-style ages. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

int64_t
sk_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
sk_monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
sk_time_format(int64_t ms, char *buf, size_t len)
{
	time_t secs = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&secs, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
	        tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

int
sk_time_parse(const char *text, int64_t *ms_out)
{
	struct tm tm;
	const char *p;
	int64_t frac_ms = 0, offset_s = 0;

	memset(&tm, 0, sizeof(tm));
	if (text == NULL)
		return SK_EINVALID;
	p = strptime(text, "%Y-%m-%dT%H:%M:%S", &tm);
	if (p == NULL)
		return SK_EINVALID;
	if (*p == '.') {
		int digits = 0;
		p++;
		while (isdigit((unsigned char)*p)) {
			if (digits < 3)
				frac_ms = frac_ms * 10 + (*p - '0');
			digits++;
			p++;
		}
		if (digits == 0)
			return SK_EINVALID;
		for (; digits < 3; digits++)
			frac_ms *= 10;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if ((*p == '+' || *p == '-') && isdigit((unsigned char)p[1])) {
		int hh, mm;
		if (sscanf(p + 1, "%2d:%2d", &hh, &mm) != 2)
			return SK_EINVALID;
		offset_s = (hh * 3600 + mm * 60) * (*p == '-' ? -1 : 1);
		p += 6;
	} else {
		return SK_EINVALID;
	}
	if (*p != '\0')
		return SK_EINVALID;
	*ms_out = ((int64_t)timegm(&tm) - offset_s) * 1000 + frac_ms;
	return SK_OK;
}

void
sk_age_format(int64_t ms, char *buf, size_t len)
{
	int64_t s = ms / 1000;

	if (s < 0)
		s = 0;
	if (s < 120)
		snprintf(buf, len, "%llds", (long long)s);
	else if (s < 3600 * 2)
		snprintf(buf, len, "%lldm", (long long)(s / 60));
	else if (s < 86400 * 2)
		snprintf(buf, len, "%lldh", (long long)(s / 3600));
	else
		snprintf(buf, len, "%lldd", (long long)(s / 86400));
}
