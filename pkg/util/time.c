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
	/* kubectl's HumanDuration (apimachinery util/duration): whole seconds only */
	int64_t s = ms < 0 ? 0 : ms / 1000, m = s / 60, h = s / 3600, d = h / 24;

	if (s < 120)
		snprintf(buf, len, "%llds", (long long)s);
	else if (m < 10 && s % 60 != 0)
		snprintf(buf, len, "%lldm%llds", (long long)m, (long long)(s % 60));
	else if (m < 180)
		snprintf(buf, len, "%lldm", (long long)m);
	else if (h < 8 && m % 60 != 0)
		snprintf(buf, len, "%lldh%lldm", (long long)h, (long long)(m % 60));
	else if (h < 48)
		snprintf(buf, len, "%lldh", (long long)h);
	else if (h < 24 * 8 && h % 24 != 0)
		snprintf(buf, len, "%lldd%lldh", (long long)d, (long long)(h % 24));
	else if (d < 365 * 2)
		snprintf(buf, len, "%lldd", (long long)d);
	else if (d < 365 * 8 && d % 365 != 0)
		snprintf(buf, len, "%lldy%lldd", (long long)(d / 365), (long long)(d % 365));
	else
		snprintf(buf, len, "%lldy", (long long)(d / 365));
}
