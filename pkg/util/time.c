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

/* The proleptic Gregorian date of a day count since 1970-01-01 (days >= 0):
 * counted in 400-year eras from 0000-03-01, so that the leap day ends
 * each year (the civil-from-days method). */
static void
civil_from_days(int64_t days, int *y, int *m, int *d)
{
	int64_t z = days + 719468; /* days since 0000-03-01 */
	int64_t era = z / 146097;
	int64_t doe = z - era * 146097; /* [0, 146096] */
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* [0, 399] */
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100); /* [0, 365], from March */
	int64_t mp = (5 * doy + 2) / 153; /* [0, 11], March first */

	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = (int)(yoe + era * 400 + (*m <= 2));
}

/* n as width digits at p (n < 10^width). */
static void
put_digits(char *p, int n, int width)
{
	for (int i = width - 1; i >= 0; i--) {
		p[i] = (char)('0' + n % 10);
		n /= 10;
	}
}

/* Years 1970 to 9999 are written by hand: gmtime_r takes glibc's time zone
 * lock and snprintf parses its format, on every connect's deadline (issue
 * 22); other times, or a short buffer, as before. */
#define TIME_HAND_MAX_MS 253402300800000LL /* 10000-01-01T00:00:00Z */
#define TIME_TEXT_LEN 24 /* 2026-11-29T15:04:05.123Z */

void
sk_time_format(int64_t ms, char *buf, size_t len)
{
	time_t secs = (time_t)(ms / 1000);
	int64_t sod = (ms / 1000) % 86400;
	struct tm tm;
	int y, mo, d;

	if (ms >= 0 && ms < TIME_HAND_MAX_MS && len > TIME_TEXT_LEN) {
		civil_from_days(ms / 86400000, &y, &mo, &d);
		memcpy(buf, "0000-00-00T00:00:00.000Z", TIME_TEXT_LEN + 1);
		put_digits(buf, y, 4);
		put_digits(buf + 5, mo, 2);
		put_digits(buf + 8, d, 2);
		put_digits(buf + 11, (int)(sod / 3600), 2);
		put_digits(buf + 14, (int)(sod / 60 % 60), 2);
		put_digits(buf + 17, (int)(sod % 60), 2);
		put_digits(buf + 20, (int)(ms % 1000), 3);
		return;
	}
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
