/*
 * api/output: YAML and text tables for printing.
 */
#ifndef SK_API_OUTPUT_H
#define SK_API_OUTPUT_H

#include <jansson.h>

#include "../util/util.h"

/* Block-style YAML (libyaml emitter), keys in insertion order. */
int sk_json_to_yaml(const json_t *v, sk_buf *out, sk_error *err);

/* A text table with aligned columns, kubectl-style upper-case headers. */
typedef struct sk_table sk_table;
sk_table *sk_table_new(size_t ncols, const char *const *headers);
void sk_table_add_row(sk_table *t, const char *const *cells);
void sk_table_render(const sk_table *t, sk_buf *out);
void sk_table_free(sk_table *t);

#endif
