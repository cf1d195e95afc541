/* api/errlist: the field error list. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "../util/util.h"
#include "errlist.h"

void
sk_errlist_add(
        sk_errlist *l, const char *path, const char *file, int line, int col, const char *fmt, ...)
{
	sk_field_error *e;
	va_list ap;
	char msg[1024];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	l->items = sk_realloc(l->items, (l->len + 1) * sizeof(*l->items));
	e = &l->items[l->len++];
	e->path = sk_strdup(path != NULL ? path : "");
	e->message = sk_strdup(msg);
	e->file = sk_strdup(file);
	e->line = line;
	e->col = col;
}

void
sk_errlist_dispose(sk_errlist *l)
{
	if (l == NULL)
		return;
	for (size_t i = 0; i < l->len; i++) {
		free(l->items[i].path);
		free(l->items[i].message);
		free(l->items[i].file);
	}
	free(l->items);
	l->items = NULL;
	l->len = 0;
}

void
sk_errlist_format(const sk_errlist *l, sk_buf *out)
{
	for (size_t i = 0; i < l->len; i++) {
		const sk_field_error *e = &l->items[i];
		if (e->path[0] != '\0')
			sk_buf_printf(out, "%s: ", e->path);
		sk_buf_printf(out, "%s", e->message);
		if (e->file != NULL && e->line > 0)
			sk_buf_printf(out, " (%s:%d:%d)", e->file, e->line, e->col);
		else if (e->file != NULL)
			sk_buf_printf(out, " (%s)", e->file);
		sk_buf_printf(out, "\n");
	}
}
