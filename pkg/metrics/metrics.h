/*
 * metrics: a small thread-safe registry of counters, gauges and histograms
 * with labels, rendered in the Prometheus text exposition format (version
 * 0.0.4). Names follow controller-runtime's and client-go's so existing
 * dashboards work (controller_runtime_reconcile_total{controller,result},
 * workqueue_depth{name,controller}, ...); the process collector gives the
 * process_* family of the Go and Python clients, read from /proc/self.
 */
#ifndef SK_METRICS_H
#define SK_METRICS_H

#include "../util/util.h"

typedef struct sk_metrics sk_metrics;

typedef enum sk_metric_type {
	SK_METRIC_COUNTER,
	SK_METRIC_GAUGE,
	SK_METRIC_HISTOGRAM
} sk_metric_type;

/* Bucket upper bounds (the +Inf bucket is implicit). */
/* controller-runtime's controller_runtime_reconcile_time_seconds. */
extern const double sk_metrics_buckets_reconcile[];
extern const size_t sk_metrics_n_buckets_reconcile;
/* client-go's workqueue durations: 1e-8 s, x10, 12 buckets. */
extern const double sk_metrics_buckets_workqueue[];
extern const size_t sk_metrics_n_buckets_workqueue;
/* client-go's rest_client_request_duration_seconds. */
extern const double sk_metrics_buckets_request[];
extern const size_t sk_metrics_n_buckets_request;
/* Prometheus clients' default buckets (.005 s to 10 s). */
extern const double sk_metrics_buckets_default[];
extern const size_t sk_metrics_n_buckets_default;

sk_metrics *sk_metrics_new(void);
void sk_metrics_free(sk_metrics *m); /* NULL-safe */

/* Declares a counter or gauge family (HELP and TYPE lines); declaring again is a no-op. */
void sk_metrics_declare(sk_metrics *m, const char *name, sk_metric_type type, const char *help);
/* Declares a histogram family with n ascending upper bounds (copied). */
void sk_metrics_declare_histogram(
        sk_metrics *m, const char *name, const char *help, const double *buckets, size_t n);
/* labels: the inside of the braces, e.g. `controller="userspace",result="success"`,
 * or NULL. The series is created at 0 when new. */
void sk_metrics_add(sk_metrics *m, const char *name, const char *labels, double delta);
void sk_metrics_set(sk_metrics *m, const char *name, const char *labels, double value);
double sk_metrics_value(sk_metrics *m, const char *name, const char *labels);
/* Records one observation in a declared histogram (ignored for other families).
 * Also creates the series at 0 observations when value is NaN. */
void sk_metrics_observe(sk_metrics *m, const char *name, const char *labels, double value);
/* Observations of a histogram series so far, their sum in *sum (may be NULL). */
uint64_t sk_metrics_histogram_count(
        sk_metrics *m, const char *name, const char *labels, double *sum);
/* Appends every family, sorted by name, to out. */
int sk_metrics_render(sk_metrics *m, sk_buf *out);

/* A label value escaped for the exposition (\\, \" and \n), truncated to fit len. */
void sk_metrics_escape(const char *value, char *out, size_t len);
/* A monotonic clock in seconds, for durations finer than a millisecond. */
double sk_metrics_now(void);

/* Declares and sets the process_* gauges and counter from /proc/self:
 * process_cpu_seconds_total, process_resident_memory_bytes,
 * process_virtual_memory_bytes, process_start_time_seconds,
 * process_open_fds, process_max_fds. SK_EIO (and err) when /proc is not
 * readable; the families are declared either way. */
int sk_metrics_collect_process(sk_metrics *m, sk_error *err);

/* A timeline: observations per wall-clock minute over the last hour (the
 * status page's charts). Thread-safe. */
#define SK_TIMELINE_MINUTES 60
typedef struct sk_timeline sk_timeline;
typedef struct sk_timeline_point {
	int64_t minute_ms; /* the minute's start, wall clock */
	uint64_t count;
	double mean, max; /* 0 when count is 0 */
} sk_timeline_point;
sk_timeline *sk_timeline_new(void);
void sk_timeline_free(sk_timeline *t); /* NULL-safe */
void sk_timeline_observe(sk_timeline *t, int64_t now_ms, double value);
/* The SK_TIMELINE_MINUTES minutes ending with now_ms's, oldest first. */
void sk_timeline_read(sk_timeline *t, int64_t now_ms, sk_timeline_point out[SK_TIMELINE_MINUTES]);

#endif
