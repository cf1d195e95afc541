/*
 * util/cron: cron schedules in UTC (spec.snapshots.schedule). Written here
 * because none of the project's libraries (libyaml, jansson, libbson,
 * libcurl, libmicrohttpd) parses cron and no packaged C library does; it
 * is small and table-tested in test/unit/check_util.c.
 *
 * Five fields, "minute hour day-of-month month day-of-week", or six with a
 * leading seconds field. Each field is a comma-separated list of "*", "N"
 * or "N-M", each optionally followed by "/STEP"; day-of-week 0-7 (0 and 7
 * are Sunday). Names (JAN, MON) and the nonstandard "L", "W", "#", "?" are
 * not taken. As in Vixie cron, when both day fields are restricted a day
 * matching either runs; otherwise both must match.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

typedef struct cron_field {
	const char *name;
	int lo, hi;
} cron_field;

static const cron_field fields[] = {
	{ "second", 0, 59 },
	{ "minute", 0, 59 },
	{ "hour", 0, 23 },
	{ "day of month", 1, 31 },
	{ "month", 1, 12 },
	{ "day of week", 0, 7 },
};

/* A number in [lo, hi] at *p, advanced past it; false when none. */
static bool
number(const char **p, int lo, int hi, int *out)
{
	long v = 0;
	const char *s = *p;

	if (*s < '0' || *s > '9')
		return false;
	while (*s >= '0' && *s <= '9' && v <= hi)
		v = v * 10 + (*s++ - '0');
	if (v < lo || v > hi)
		return false;
	*p = s;
	*out = (int)v;
	return true;
}

/* One item of a field ("*", "N", "N-M", each with an optional "/STEP")
 * into *bits; false when it is not one. */
static bool
item(const char *s, const char *end, const cron_field *f, uint64_t *bits, bool *star)
{
	int a = f->lo, b = f->hi, step = 1;
	bool single = false;

	if (*s == '*') {
		s++;
		*star = true;
	} else {
		if (!number(&s, f->lo, f->hi, &a))
			return false;
		b = a;
		single = true;
		if (*s == '-') {
			s++;
			if (!number(&s, a, f->hi, &b))
				return false;
			single = false;
		}
	}
	if (*s == '/') {
		s++;
		if (!number(&s, 1, f->hi, &step))
			return false;
		*star = false; /* "*" with a step restricts */
		if (single)
			b = f->hi; /* "N/STEP": from N to the end */
	}
	if (s != end)
		return false;
	for (int v = a; v <= b; v += step)
		*bits |= UINT64_C(1) << v;
	return true;
}

static bool
field(const char *s, const char *end, const cron_field *f, uint64_t *bits, bool *star)
{
	*bits = 0;
	*star = false;
	while (s < end) {
		const char *comma = memchr(s, ',', (size_t)(end - s));
		const char *stop = comma ? comma : end;
		if (stop == s || !item(s, stop, f, bits, star))
			return false;
		s = comma ? comma + 1 : end;
		if (comma && s == end)
			return false;
	}
	return *bits != 0;
}

int
sk_cron_parse(const char *text, sk_cron *out, char *why, size_t len)
{
	const char *start[6], *stop[6], *s = text;
	int n = 0, first;
	uint64_t bits[6];
	bool star[6];

	memset(out, 0, sizeof(*out));
	if (text == NULL || *text == '\0') {
		snprintf(why, len, "an empty schedule");
		return SK_EINVALID;
	}
	while (*s) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s == '\0')
			break;
		if (n == 6) {
			snprintf(why, len, "more than 6 fields");
			return SK_EINVALID;
		}
		start[n] = s;
		while (*s && *s != ' ' && *s != '\t')
			s++;
		stop[n++] = s;
	}
	if (n != 5 && n != 6) {
		snprintf(why, len,
		        "%d fields: want 5 (minute hour day month weekday) or 6 (seconds first)",
		        n);
		return SK_EINVALID;
	}
	first = 6 - n; /* five fields: no seconds */
	for (int i = 0; i < n; i++) {
		const cron_field *f = &fields[first + i];
		if (!field(start[i], stop[i], f, &bits[first + i], &star[first + i])) {
			snprintf(why, len,
			        "%s \"%.*s\": want *, N, N-M or a list of them, each with an "
			        "optional /STEP, N in %d-%d",
			        f->name, (int)(stop[i] - start[i]), start[i], f->lo, f->hi);
			return SK_EINVALID;
		}
	}
	out->second = n == 6 ? bits[0] : UINT64_C(1);
	out->minute = bits[1];
	out->hour = bits[2];
	out->mday = bits[3];
	out->month = bits[4];
	out->wday = bits[5] | ((bits[5] >> 7) & 1); /* 7 is Sunday too */
	out->mday_star = star[3];
	out->wday_star = star[5];
	if (sk_cron_next(out, 0) == 0) {
		snprintf(why, len, "the schedule never fires (no such day)");
		return SK_EINVALID;
	}
	return SK_OK;
}

static bool
has(uint64_t bits, int v)
{
	return (bits >> v) & 1;
}

static bool
day_matches(const sk_cron *c, const struct tm *tm)
{
	bool m = has(c->mday, tm->tm_mday), w = has(c->wday, tm->tm_wday);

	if (!c->mday_star && !c->wday_star)
		return m || w;
	return m && w;
}

int64_t
sk_cron_next(const sk_cron *c, int64_t after_ms)
{
	time_t t = (time_t)(after_ms >= 0 ? after_ms / 1000 : (after_ms - 999) / 1000) + 1;
	struct tm tm;

	/* each step moves to the next candidate of the coarsest field that
	 * does not match: bounded by the days of five years and the seconds,
	 * minutes and hours of a day */
	for (int i = 0; i < 5 * 366 + 24 * 60 + 60 * 24 + 60; i++) {
		gmtime_r(&t, &tm);
		if (!has(c->month, tm.tm_mon + 1)) {
			tm.tm_mon++;
			tm.tm_mday = 1;
			tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
		} else if (!day_matches(c, &tm)) {
			tm.tm_mday++;
			tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
		} else if (!has(c->hour, tm.tm_hour)) {
			tm.tm_hour++;
			tm.tm_min = tm.tm_sec = 0;
		} else if (!has(c->minute, tm.tm_min)) {
			tm.tm_min++;
			tm.tm_sec = 0;
		} else if (!has(c->second, tm.tm_sec)) {
			tm.tm_sec++;
		} else {
			return (int64_t)t * 1000;
		}
		t = timegm(&tm); /* normalizes the field that overflowed */
	}
	return 0;
}
