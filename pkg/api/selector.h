/*
 * api/selector: label selectors (kubectl -l).
 */
#ifndef SK_API_SELECTOR_H
#define SK_API_SELECTOR_H

#include <stdbool.h>

#include "../util/util.h"
#include "kvlist.h"

/* Supports "k=v", "k==v", "k!=v", "k", "!k", "k in (a,b)", "k notin (a,b)",
 * "k>N", "k<N" (N an integer; the label's value must be one), comma-joined. */
typedef struct sk_selector sk_selector;
int sk_selector_parse(const char *text, sk_selector **out, sk_error *err);
bool sk_selector_matches(const sk_selector *s, const sk_kvlist *labels);
void sk_selector_free(sk_selector *s);

#endif
