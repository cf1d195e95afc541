/*
 * metrics: a small thread-safe registry of counters and gauges with labels,
 * rendered in the Prometheus text exposition format (version 0.0.4).
 * Names follow controller-runtime's so existing dashboards work
 * (controller_runtime_reconcile_total{controller,result}, workqueue_depth, ...).
 */
#ifndef SK_METRICS_H
#define SK_METRICS_H

#include "../util/util.h"

typedef struct sk_metrics sk_metrics;

typedef enum sk_metric_type { SK_METRIC_COUNTER, SK_METRIC_GAUGE } sk_metric_type;

sk_metrics *sk_metrics_new(void);
void sk_metrics_free(sk_metrics *m); /* NULL-safe */

/* Declares a family (HELP and TYPE lines); declaring again is a no-op. */
void sk_metrics_declare(sk_metrics *m, const char *name, sk_metric_type type, const char *help);
/* labels: the inside of the braces, e.g. `controller="userspace",result="success"`,
 * or NULL. The series is created at 0 when new. */
void sk_metrics_add(sk_metrics *m, const char *name, const char *labels, double delta);
void sk_metrics_set(sk_metrics *m, const char *name, const char *labels, double value);
double sk_metrics_value(sk_metrics *m, const char *name, const char *labels);
/* Appends every family, sorted by name, to out. */
int sk_metrics_render(sk_metrics *m, sk_buf *out);

#endif
