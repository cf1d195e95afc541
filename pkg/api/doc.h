/*
 * api/doc: parsed YAML/JSON documents with source positions.
 */
#ifndef SK_API_DOC_H
#define SK_API_DOC_H

#include <jansson.h>

#include "../util/util.h"

typedef struct sk_doc sk_doc; /* opaque */

typedef struct sk_doclist {
	sk_doc **items;
	size_t len;
} sk_doclist;

/* Parses YAML (a JSON text is YAML too) holding zero or more documents.
 * file names the source in positions ("-" prints as "<stdin>").
 * Bounded: at most SK_MAX_DOCUMENT_BYTES per document, nesting depth 64,
 * aliases expanded at most 10000 nodes in total; binary input rejected.
 * On a parse failure returns SK_EINVALID with "file:line:col: problem" in err. */
int sk_doc_parse(const char *data, size_t len, const char *file, sk_doclist *out, sk_error *err);
/* Replaces each List document (kind List or UserSpaceList, as `get -o
 * yaml|json` prints several objects) by one document per item, keeping the
 * items' file positions. SK_EINVALID (err names file:line:col) when a List
 * has no list of objects in items; l is unchanged then. */
int sk_doclist_expand_lists(sk_doclist *l, sk_error *err);
/* Reads a path: a file, a directory (*.yaml, *.yml, *.json, sorted, not recursive) or "-". */
int sk_doc_load_path(const char *path, sk_doclist *out, sk_error *err);
/* The same; recursive: a directory's subdirectories too (kubectl -R), depth first, in
 * name order; hidden entries skipped. */
int sk_doc_load_tree(const char *path, bool recursive, sk_doclist *out, sk_error *err);
void sk_doclist_dispose(sk_doclist *l);
/* Borrowed. */
json_t *sk_doc_root(const sk_doc *d);
const char *sk_doc_file(const sk_doc *d);
int sk_doc_line(const sk_doc *d); /* line where the document starts */
/* Position of a dotted field path ("spec.lifecycle.idleTimeout"); falls back to
 * the nearest parent. Returns false when unknown. */
bool sk_doc_position(const sk_doc *d, const char *path, int *line, int *col);
/* A document with no position info (from MongoDB or JSON built in code). Takes a reference. */
sk_doc *sk_doc_from_json(json_t *root, const char *file);
void sk_doc_free(sk_doc *d);

#endif
