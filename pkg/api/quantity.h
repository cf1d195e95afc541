/*
 * api/quantity: byte quantities as Kubernetes writes them (spec.migration.maxBytes).
 */
#ifndef SK_API_QUANTITY_H
#define SK_API_QUANTITY_H

#include <stdint.h>

/* A byte quantity: "5Gi", "500Mi", "10M", "1000". SK_EINVALID when not one. */
int sk_quantity_parse(const char *s, int64_t *out);

#endif
