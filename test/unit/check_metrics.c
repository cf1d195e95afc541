/* Unit tests for pkg/metrics: counters and gauges, histograms, the process collector. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "metrics/metrics.h"

Suite *sk_suite_metrics(void);

static char *
render(sk_metrics *m)
{
	sk_buf b = { 0 };

	ck_assert_int_eq(sk_metrics_render(m, &b), 0);
	return b.data ? b.data : sk_strdup("");
}

/* The value of the exposition line that starts with `series ` (-1 when none). */
static double
line_value(const char *text, const char *series)
{
	size_t n = strlen(series);

	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, series, n) == 0 && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	return -1;
}

START_TEST(test_counter_and_gauge)
{
	sk_metrics *m = sk_metrics_new();
	char *out;

	sk_metrics_declare(m, "b_total", SK_METRIC_COUNTER, "Bs");
	sk_metrics_declare(m, "a_gauge_value", SK_METRIC_GAUGE, "As");
	sk_metrics_add(m, "b_total", "x=\"1\"", 2);
	sk_metrics_add(m, "b_total", "x=\"1\"", 3);
	sk_metrics_set(m, "a_gauge_value", NULL, 7);
	ck_assert_double_eq(sk_metrics_value(m, "b_total", "x=\"1\""), 5);
	out = render(m);
	/* families sorted by name, HELP and TYPE before the series */
	ck_assert_ptr_nonnull(strstr(out,
	        "# HELP a_gauge_value As\n# TYPE a_gauge_value gauge\n"
	        "a_gauge_value 7\n# HELP b_total Bs\n"
	        "# TYPE b_total counter\nb_total{x=\"1\"} 5\n"));
	free(out);
	sk_metrics_free(m);
}
END_TEST

/* Many series (the index that finds them): each its own value,
 * long label sets included, a name that is another's prefix kept apart. */
START_TEST(test_many_series)
{
	sk_metrics *m = sk_metrics_new();
	char l[700];

	sk_metrics_declare(m, "c_total", SK_METRIC_COUNTER, "Cs");
	sk_metrics_declare(m, "c_total_x", SK_METRIC_COUNTER, "Cxs");
	for (int r = 0; r < 2; r++) {
		for (int i = 0; i < 2000; i++) {
			snprintf(l, sizeof(l), "i=\"%d\"", i);
			sk_metrics_add(m, "c_total", l, i);
		}
	}
	memset(l, 'v', sizeof(l) - 1);
	l[sizeof(l) - 1] = '\0';
	memcpy(l, "k=\"", 3);
	l[sizeof(l) - 2] = '"';
	sk_metrics_add(m, "c_total", l, 1);
	sk_metrics_add(m, "c_total", l, 1);
	sk_metrics_add(m, "c_total_x", "i=\"7\"", 1);
	ck_assert_double_eq(sk_metrics_value(m, "c_total", "i=\"7\""), 14);
	ck_assert_double_eq(sk_metrics_value(m, "c_total", "i=\"1999\""), 3998);
	ck_assert_double_eq(sk_metrics_value(m, "c_total", l), 2);
	ck_assert_double_eq(sk_metrics_value(m, "c_total_x", "i=\"7\""), 1);
	/* rendering sorts the families: a histogram declared after still counts */
	sk_metrics_declare_histogram(m, "b_seconds", "Bs", (const double[]){ 1 }, 1);
	free(render(m));
	sk_metrics_observe(m, "b_seconds", NULL, 0.5);
	free(render(m));
	sk_metrics_observe(m, "c_total", "i=\"7\"", 0.5); /* not a histogram: ignored */
	sk_metrics_observe(m, "b_seconds", NULL, 2);
	ck_assert_double_eq(sk_metrics_value(m, "b_seconds", NULL), 2.5);
	ck_assert_double_eq(sk_metrics_value(m, "c_total", "i=\"7\""), 14);
	sk_metrics_free(m);
}
END_TEST

START_TEST(test_histogram_cumulative)
{
	const double b[] = { 0.1, 1, 10 };
	sk_metrics *m = sk_metrics_new();
	const char *l = "path=\"fast\"";
	double sum = 0;
	char *out;

	sk_metrics_declare_histogram(m, "lat_seconds", "Latency", b, 3);
	sk_metrics_observe(m, "lat_seconds", l, 0.05);
	sk_metrics_observe(m, "lat_seconds", l, 0.1); /* le is inclusive */
	sk_metrics_observe(m, "lat_seconds", l, 5);
	sk_metrics_observe(m, "lat_seconds", l, 100); /* only in +Inf */
	sk_metrics_observe(m, "lat_seconds", "path=\"slow\"", NAN); /* series at zero */
	ck_assert_uint_eq(sk_metrics_histogram_count(m, "lat_seconds", l, &sum), 4);
	ck_assert_double_eq_tol(sum, 105.15, 1e-9);
	out = render(m);
	ck_assert_ptr_nonnull(strstr(out, "# TYPE lat_seconds histogram\n"));
	ck_assert_double_eq(line_value(out, "lat_seconds_bucket{path=\"fast\",le=\"0.1\"}"), 2);
	ck_assert_double_eq(line_value(out, "lat_seconds_bucket{path=\"fast\",le=\"1\"}"), 2);
	ck_assert_double_eq(line_value(out, "lat_seconds_bucket{path=\"fast\",le=\"10\"}"), 3);
	ck_assert_double_eq(line_value(out, "lat_seconds_bucket{path=\"fast\",le=\"+Inf\"}"), 4);
	ck_assert_double_eq(line_value(out, "lat_seconds_count{path=\"fast\"}"), 4);
	ck_assert_double_eq_tol(line_value(out, "lat_seconds_sum{path=\"fast\"}"), 105.15, 1e-9);
	ck_assert_double_eq(line_value(out, "lat_seconds_bucket{path=\"slow\",le=\"+Inf\"}"), 0);
	ck_assert_double_eq(line_value(out, "lat_seconds_count{path=\"slow\"}"), 0);
	free(out);
	sk_metrics_free(m);
}
END_TEST

START_TEST(test_histogram_no_labels_and_buckets)
{
	sk_metrics *m = sk_metrics_new();
	char *out;

	sk_metrics_declare_histogram(
	        m, "w_seconds", "W", sk_metrics_buckets_workqueue, sk_metrics_n_buckets_workqueue);
	sk_metrics_observe(m, "w_seconds", NULL, 0.002);
	/* observing a counter is ignored, not a crash */
	sk_metrics_declare(m, "c_total", SK_METRIC_COUNTER, "C");
	sk_metrics_observe(m, "c_total", NULL, 1);
	out = render(m);
	ck_assert_double_eq(line_value(out, "w_seconds_bucket{le=\"1e-08\"}"), 0);
	ck_assert_double_eq(line_value(out, "w_seconds_bucket{le=\"0.001\"}"), 0);
	ck_assert_double_eq(line_value(out, "w_seconds_bucket{le=\"0.01\"}"), 1);
	ck_assert_double_eq(line_value(out, "w_seconds_bucket{le=\"1000\"}"), 1);
	ck_assert_double_eq(line_value(out, "w_seconds_count"), 1);
	ck_assert_ptr_null(strstr(out, "c_total_bucket"));
	ck_assert_uint_eq(sk_metrics_n_buckets_workqueue, 12);
	ck_assert_uint_eq(sk_metrics_n_buckets_reconcile, 40);
	free(out);
	sk_metrics_free(m);
}
END_TEST

START_TEST(test_process_collector)
{
	sk_metrics *m = sk_metrics_new();
	sk_error err = { 0 };
	double fds, now = (double)time(NULL), start;
	int fd;

	ck_assert_int_eq(sk_metrics_collect_process(m, &err), 0);
	start = sk_metrics_value(m, "process_start_time_seconds", NULL);
	ck_assert_msg(start > now - 3600 && start <= now + 1, "start %f now %f", start, now);
	ck_assert_double_gt(sk_metrics_value(m, "process_resident_memory_bytes", NULL), 1 << 20);
	ck_assert_double_gt(sk_metrics_value(m, "process_virtual_memory_bytes", NULL),
	        sk_metrics_value(m, "process_resident_memory_bytes", NULL));
	ck_assert_double_ge(sk_metrics_value(m, "process_cpu_seconds_total", NULL), 0);
	ck_assert_double_gt(sk_metrics_value(m, "process_max_fds", NULL), 0);
	fds = sk_metrics_value(m, "process_open_fds", NULL);
	ck_assert_double_ge(fds, 3);
	fd = open("/dev/null", O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(sk_metrics_collect_process(m, &err), 0);
	ck_assert_double_eq(sk_metrics_value(m, "process_open_fds", NULL), fds + 1);
	close(fd);
	sk_metrics_free(m);
}
END_TEST

START_TEST(test_escape)
{
	char out[16];

	sk_metrics_escape("a\"b\\c\nd", out, sizeof(out));
	ck_assert_str_eq(out, "a\\\"b\\\\c\\nd");
	sk_metrics_escape("abcdefghijklmnopqrstuvwxyz", out, 8); /* truncated, terminated */
	ck_assert_str_eq(out, "abcdefg");
	sk_metrics_escape("ab\"", out, 4); /* never half an escape */
	ck_assert_str_eq(out, "ab");
}
END_TEST

START_TEST(test_timeline)
{
	sk_timeline *t = sk_timeline_new();
	sk_timeline_point p[SK_TIMELINE_MINUTES];
	int64_t m0 = 1700000000000 / 60000 * 60000; /* a minute's start */

	sk_timeline_observe(t, m0 + 1000, 1);
	sk_timeline_observe(t, m0 + 59999, 3);
	sk_timeline_observe(t, m0 + 60000, 10); /* the next minute */
	sk_timeline_read(t, m0 + 60000, p);
	ck_assert_int_eq(p[SK_TIMELINE_MINUTES - 1].minute_ms, m0 + 60000);
	ck_assert_uint_eq(p[SK_TIMELINE_MINUTES - 1].count, 1);
	ck_assert_double_eq(p[SK_TIMELINE_MINUTES - 1].mean, 10);
	ck_assert_uint_eq(p[SK_TIMELINE_MINUTES - 2].count, 2);
	ck_assert_double_eq(p[SK_TIMELINE_MINUTES - 2].mean, 2);
	ck_assert_double_eq(p[SK_TIMELINE_MINUTES - 2].max, 3);
	ck_assert_uint_eq(p[0].count, 0);
	/* an hour on, m0's slot is reused: the old minute is gone */
	sk_timeline_observe(t, m0 + 3600000, 5);
	sk_timeline_read(t, m0 + 3600000, p);
	ck_assert_uint_eq(p[SK_TIMELINE_MINUTES - 1].count, 1);
	ck_assert_double_eq(p[SK_TIMELINE_MINUTES - 1].mean, 5);
	ck_assert_uint_eq(p[0].count, 1); /* m0 + 1 min, 59 minutes ago */
	for (size_t i = 1; i < SK_TIMELINE_MINUTES - 1; i++)
		ck_assert_uint_eq(p[i].count, 0);
	sk_timeline_read(t, m0 + 2 * 3600000, p); /* nothing within the hour */
	for (size_t i = 0; i < SK_TIMELINE_MINUTES; i++)
		ck_assert_uint_eq(p[i].count, 0);
	sk_timeline_free(t);
}
END_TEST

Suite *
sk_suite_metrics(void)
{
	Suite *s = suite_create("metrics");
	TCase *t = tcase_create("metrics");

	tcase_add_test(t, test_counter_and_gauge);
	tcase_add_test(t, test_many_series);
	tcase_add_test(t, test_histogram_cumulative);
	tcase_add_test(t, test_histogram_no_labels_and_buckets);
	tcase_add_test(t, test_process_collector);
	tcase_add_test(t, test_escape);
	tcase_add_test(t, test_timeline);
	suite_add_tcase(s, t);
	return s;
}
