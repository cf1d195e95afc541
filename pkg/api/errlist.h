/*
 * api/errlist: validation errors, each with its field path and position.
 */
#ifndef SK_API_ERRLIST_H
#define SK_API_ERRLIST_H

#include "../util/util.h"

typedef struct sk_field_error {
	char *path; /* "spec.userID", "metadata.labels.team" */
	char *message; /* "required", "must match [A-Za-z0-9._-]{1,128}" */
	char *file; /* may be NULL */
	int line, col; /* 1-based; 0 when unknown */
} sk_field_error;

typedef struct sk_errlist {
	sk_field_error *items;
	size_t len;
} sk_errlist;

void sk_errlist_add(sk_errlist *l, const char *path, const char *file, int line, int col,
        const char *fmt, ...) __attribute__((format(printf, 6, 7)));
void sk_errlist_dispose(sk_errlist *l);
/* "spec.userID: required (a.yaml:7:3)" one per line into buf */
void sk_errlist_format(const sk_errlist *l, sk_buf *out);

#endif
