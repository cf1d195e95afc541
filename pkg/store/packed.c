/*
 * store/packed: a UserSpace in one allocation, for caches of many objects.
 *
 * A decoded object is a tree of ~30 small allocations (~1.4 KB with malloc's
 * overhead); its BSON document is as large (every field carries its key
 * name). The packed form is a compact binary image instead: fields in a
 * fixed order, integers as varints, strings length-prefixed and
 * NUL-terminated (so name and userID are readable in place), behind a
 * header with what caches read without decoding. Metadata (but
 * resourceVersion) and spec come first, so "only status changed" is one
 * memcmp.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../api/schema.h"
#include "../api/status.h"
#include "store_int.h"

struct sk_packed_userspace {
	int64_t read_ms; /* as in sk_object_meta */
	int64_t resource_version;
	uint32_t len; /* bytes in data */
	uint32_t fixed_len; /* data[0, fixed_len): metadata (w_meta), spec */
	uint32_t name_off; /* offsets of NUL-terminated strings in data */
	uint32_t user_off; /* 0: no spec.userID */
	uint8_t phase; /* sk_phase */
	bool ready; /* sk_userspace_is_ready */
	uint8_t data[];
};

/* The spec is written and read by its table (sk_spec_fields), the status
 * by its rows (sk_status_rows; test/unit/check_status_table.c holds every
 * member to a row); a new member of metadata changes this size: encode it
 * below (writer and reader) and set it in test/unit/check_store_pack.c's
 * full_object. */
#if UINTPTR_MAX == UINT64_MAX
_Static_assert(sizeof(sk_object_meta) == 104, "sk_object_meta changed: update packed.c");
#endif

#define SK_PACKED_MAX (16 * 1024 * 1024)

/* ---- writer ---- */

typedef struct writer {
	sk_buf b;
	int rc;
} writer;

static void
w_uvar(writer *w, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;

	do {
		tmp[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			tmp[n] |= 0x80;
		n++;
	} while (v);
	w->rc |= sk_buf_append(&w->b, tmp, n);
}

/* Signed values zigzag-encoded, so small negatives stay short. */
static void
w_int(writer *w, int64_t v)
{
	w_uvar(w, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

/* 0 for NULL, else length + 1, the bytes and a NUL; returns the offset of
 * the bytes (0 for NULL). */
static uint32_t
w_str(writer *w, const char *s)
{
	size_t n, off;

	if (s == NULL) {
		w_uvar(w, 0);
		return 0;
	}
	n = strlen(s);
	w_uvar(w, n + 1);
	off = w->b.len;
	w->rc |= sk_buf_append(&w->b, s, n + 1);
	return (uint32_t)off;
}

static void
w_kvlist(writer *w, const sk_kvlist *l)
{
	w_uvar(w, l->len);
	for (size_t i = 0; i < l->len; i++) {
		w_str(w, l->items[i].key);
		w_str(w, l->items[i].value);
	}
}

static void
w_strlist(writer *w, const sk_strlist *l)
{
	w_uvar(w, l->len);
	for (size_t i = 0; i < l->len; i++)
		w_str(w, l->items[i]);
}

static void
w_migration(writer *w, const sk_migration_status *m)
{
	const sk_migration_end *ends[2] = { &m->source, &m->target };

	w_int(w, m->phase);
	if (m->phase == SK_MIG_NONE)
		return;
	for (int i = 0; i < 2; i++) {
		w_str(w, ends[i]->provider);
		w_str(w, ends[i]->template_id);
		w_str(w, ends[i]->sandbox_id);
	}
	w_int(w, m->files_done);
	w_int(w, m->files_total);
	w_int(w, m->bytes_done);
	w_int(w, m->bytes_total);
	w_int(w, m->start_ms);
	w_int(w, m->step_ms);
	w_str(w, m->trigger);
	w_str(w, m->reason);
}

/* The metadata a status-only change keeps: all of it but resourceVersion
 * (in the header, like read_ms). */
static uint32_t
w_meta(writer *w, const sk_object_meta *m)
{
	uint32_t name_off = w_str(w, m->name);

	w_kvlist(w, &m->labels);
	w_kvlist(w, &m->annotations);
	w_str(w, m->uid);
	w_int(w, m->generation);
	w_int(w, m->creation_ms);
	w_int(w, m->deletion_ms);
	w_uvar(w, m->n_finalizers);
	for (size_t i = 0; i < m->n_finalizers; i++)
		w_str(w, m->finalizers[i]);
	return name_off;
}

/* The spec, field by field in table order: strings and maps as above,
 * everything else a varint. Returns the offset of spec.userID. */
static uint32_t
w_spec(writer *w, const sk_userspace_spec *s)
{
	uint32_t user_off = 0;

	for (size_t i = 0; i < sk_spec_n_fields; i++) {
		const sk_field *f = &sk_spec_fields[i];
		uint32_t off;

		switch (f->type) {
		case SK_FIELD_STRING:
			off = w_str(w, *SK_FIELD_AT(f, s, char *const));
			if (f->offset == offsetof(sk_userspace_spec, user_id))
				user_off = off;
			break;
		case SK_FIELD_MAP: w_kvlist(w, SK_FIELD_AT(f, s, const sk_kvlist)); break;
		case SK_FIELD_LIST: w_strlist(w, SK_FIELD_AT(f, s, const sk_strlist)); break;
		default: w_int(w, sk_field_get_int(f, s)); break;
		}
	}
	return user_off;
}

/* The status by its rows (api/status.c), each written whatever its value. */
static void
w_rows(writer *w, const sk_status_row *rows, const void *obj)
{
	for (const sk_status_row *r = rows; r->key != NULL; r++) {
		const char *items;
		size_t n;

		switch (r->kind) {
		case SK_STATUS_STR: w_str(w, *SK_STATUS_AT(r, obj, char *const)); break;
		case SK_STATUS_INT:
		case SK_STATUS_TIME: w_int(w, *SK_STATUS_AT(r, obj, const int64_t)); break;
		case SK_STATUS_ENUM: w_int(w, *SK_STATUS_AT(r, obj, const int)); break;
		case SK_STATUS_ARRAY:
			items = *SK_STATUS_AT(r, obj, char *const);
			n = *(const size_t *)(const void *)((const char *)obj + r->count_offset);
			w_uvar(w, n);
			for (size_t i = 0; i < n; i++)
				w_rows(w, r->rows, items + i * r->item_size);
			break;
		case SK_STATUS_STRLIST: w_strlist(w, SK_STATUS_AT(r, obj, const sk_strlist)); break;
		case SK_STATUS_OBJECT: w_rows(w, r->rows, SK_STATUS_AT(r, obj, const void)); break;
		case SK_STATUS_MIGRATION:
			w_migration(w, SK_STATUS_AT(r, obj, const sk_migration_status));
			break;
		}
	}
}

static void
w_status(writer *w, const sk_userspace_status *st)
{
	w_rows(w, sk_status_rows, st);
}

sk_packed_userspace *
sk_store_pack(const sk_userspace *us, sk_error *err)
{
	writer w = { SK_BUF_INIT(SK_PACKED_MAX), 0 };
	sk_packed_userspace h = { 0 }, *p = NULL;

	if (us->meta.name == NULL) {
		sk_error_set(err, SK_EINVALID, "pack userspace: metadata.name: required");
		return NULL;
	}
	h.name_off = w_meta(&w, &us->meta);
	h.user_off = w_spec(&w, &us->spec);
	h.fixed_len = (uint32_t)w.b.len;
	w_status(&w, &us->status);
	if (w.rc != 0) {
		sk_error_set(err, SK_ENOMEM, "pack userspace %s: too large", us->meta.name);
		goto done;
	}
	h.read_ms = us->meta.read_ms;
	h.resource_version = us->meta.resource_version;
	h.len = (uint32_t)w.b.len;
	h.phase = (uint8_t)us->status.phase;
	h.ready = sk_userspace_is_ready(us);
	p = sk_malloc(offsetof(sk_packed_userspace, data) + h.len);
	memcpy(p, &h, offsetof(sk_packed_userspace, data));
	memcpy(p->data, w.b.data, h.len);
done:
	sk_buf_dispose(&w.b);
	return p;
}

sk_packed_userspace *
sk_store_pack_doc(const bson_t *doc, int64_t read_ms, sk_error *err)
{
	sk_userspace *us = NULL;
	sk_packed_userspace *p;

	if (sk_store_userspace_from_doc(doc, &us, err) != 0)
		return NULL;
	us->meta.read_ms = read_ms;
	p = sk_store_pack(us, err);
	sk_userspace_free(us);
	return p;
}

/* ---- reader ---- */

typedef struct reader {
	const uint8_t *p, *end;
	bool bad; /* ran past the end or read a malformed value */
} reader;

static uint64_t
r_uvar(reader *r)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		if (r->p >= r->end)
			break;
		v |= (uint64_t)(*r->p & 0x7f) << shift;
		if ((*r->p++ & 0x80) == 0)
			return v;
	}
	r->bad = true;
	return 0;
}

static int64_t
r_int(reader *r)
{
	uint64_t v = r_uvar(r);

	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static char *
r_str(reader *r)
{
	uint64_t n = r_uvar(r);
	char *s;

	if (n == 0 || r->bad)
		return NULL;
	if (n > (uint64_t)(r->end - r->p) || r->p[n - 1] != '\0') {
		r->bad = true;
		return NULL;
	}
	s = sk_strndup((const char *)r->p, n - 1);
	r->p += n;
	return s;
}

/* A count of items of at least min_bytes each that fit in what is left. */
static size_t
r_count(reader *r, size_t min_bytes)
{
	uint64_t n = r_uvar(r);

	if (n > (uint64_t)(r->end - r->p) / min_bytes) {
		r->bad = true;
		return 0;
	}
	return (size_t)n;
}

static void
r_kvlist(reader *r, sk_kvlist *l)
{
	size_t n = r_count(r, 2);

	l->items = n ? sk_calloc(n, sizeof(*l->items)) : NULL;
	for (l->len = 0; l->len < n; l->len++) {
		l->items[l->len].key = r_str(r);
		l->items[l->len].value = r_str(r);
	}
}

static void
r_strlist(reader *r, sk_strlist *l)
{
	size_t n = r_count(r, 1);

	l->items = n ? sk_calloc(n, sizeof(char *)) : NULL;
	for (l->len = 0; l->len < n; l->len++)
		l->items[l->len] = r_str(r);
}

static void
r_migration(reader *r, sk_migration_status *m)
{
	sk_migration_end *ends[2] = { &m->source, &m->target };
	int64_t phase = r_int(r);

	if (phase < 0 || phase >= SK_MIG_COUNT) {
		r->bad = true;
		return;
	}
	m->phase = (sk_migration_phase)phase;
	if (m->phase == SK_MIG_NONE)
		return;
	for (int i = 0; i < 2; i++) {
		ends[i]->provider = r_str(r);
		ends[i]->template_id = r_str(r);
		ends[i]->sandbox_id = r_str(r);
	}
	m->files_done = r_int(r);
	m->files_total = r_int(r);
	m->bytes_done = r_int(r);
	m->bytes_total = r_int(r);
	m->start_ms = r_int(r);
	m->step_ms = r_int(r);
	m->trigger = r_str(r);
	m->reason = r_str(r);
}

static void
r_meta(reader *r, sk_object_meta *m)
{
	m->name = r_str(r);
	r_kvlist(r, &m->labels);
	r_kvlist(r, &m->annotations);
	m->uid = r_str(r);
	m->generation = r_int(r);
	m->creation_ms = r_int(r);
	m->deletion_ms = r_int(r);
	m->n_finalizers = r_count(r, 1);
	m->finalizers = m->n_finalizers ? sk_calloc(m->n_finalizers, sizeof(char *)) : NULL;
	for (size_t i = 0; i < m->n_finalizers; i++)
		m->finalizers[i] = r_str(r);
}

static void
r_spec(reader *r, sk_userspace_spec *s)
{
	for (size_t i = 0; i < sk_spec_n_fields; i++) {
		const sk_field *f = &sk_spec_fields[i];

		switch (f->type) {
		case SK_FIELD_STRING: *SK_FIELD_AT(f, s, char *) = r_str(r); break;
		case SK_FIELD_MAP: r_kvlist(r, SK_FIELD_AT(f, s, sk_kvlist)); break;
		case SK_FIELD_LIST: r_strlist(r, SK_FIELD_AT(f, s, sk_strlist)); break;
		default: sk_field_set_int(f, s, r_int(r)); break;
		}
	}
}

static void r_rows(reader *r, const sk_status_row *rows, void *obj);

/* An ARRAY row's items: each at least one byte per row. */
static void
r_items(reader *r, const sk_status_row *row, void *obj)
{
	size_t per = 0, n;
	char *items;

	for (const sk_status_row *m = row->rows; m->key != NULL; m++)
		per++;
	n = r_count(r, per);
	items = n ? sk_calloc(n, row->item_size) : NULL;
	*SK_STATUS_AT(row, obj, char *) = items;
	*(size_t *)(void *)((char *)obj + row->count_offset) = n;
	for (size_t i = 0; i < n; i++)
		r_rows(r, row->rows, items + i * row->item_size);
}

static void
r_rows(reader *r, const sk_status_row *rows, void *obj)
{
	for (const sk_status_row *row = rows; row->key != NULL && !r->bad; row++) {
		int64_t v;

		switch (row->kind) {
		case SK_STATUS_STR: *SK_STATUS_AT(row, obj, char *) = r_str(r); break;
		case SK_STATUS_INT:
		case SK_STATUS_TIME: *SK_STATUS_AT(row, obj, int64_t) = r_int(r); break;
		case SK_STATUS_ENUM:
			v = r_int(r);
			if (v < 0 || v >= row->n_values)
				r->bad = true;
			else
				*SK_STATUS_AT(row, obj, int) = (int)v;
			break;
		case SK_STATUS_ARRAY: r_items(r, row, obj); break;
		case SK_STATUS_STRLIST: r_strlist(r, SK_STATUS_AT(row, obj, sk_strlist)); break;
		case SK_STATUS_OBJECT: r_rows(r, row->rows, SK_STATUS_AT(row, obj, void)); break;
		case SK_STATUS_MIGRATION:
			r_migration(r, SK_STATUS_AT(row, obj, sk_migration_status));
			break;
		}
	}
}

static void
r_status(reader *r, sk_userspace_status *st)
{
	r_rows(r, sk_status_rows, st);
}

int
sk_store_unpack(const sk_packed_userspace *p, sk_userspace **out, sk_error *err)
{
	reader r = { p->data, p->data + p->len, false };
	sk_userspace *us = sk_calloc(1, sizeof(*us));

	*out = NULL;
	r_meta(&r, &us->meta);
	r_spec(&r, &us->spec);
	r_status(&r, &us->status);
	if (r.bad || r.p != r.end || us->meta.name == NULL) {
		sk_userspace_free(us);
		return sk_error_set(err, SK_EINVALID, "packed userspace: corrupt");
	}
	us->meta.resource_version = p->resource_version;
	us->meta.read_ms = p->read_ms;
	*out = us;
	return 0;
}

/* ---- the header ---- */

void
sk_packed_free(sk_packed_userspace *p)
{
	free(p);
}

bool
sk_packed_status_only_change(const sk_packed_userspace *a, const sk_packed_userspace *b)
{
	return a->fixed_len == b->fixed_len && memcmp(a->data, b->data, a->fixed_len) == 0;
}

const char *
sk_packed_name(const sk_packed_userspace *p)
{
	return (const char *)p->data + p->name_off;
}

const char *
sk_packed_user_id(const sk_packed_userspace *p)
{
	return p->user_off ? (const char *)p->data + p->user_off : NULL;
}

int64_t
sk_packed_resource_version(const sk_packed_userspace *p)
{
	return p->resource_version;
}

int64_t
sk_packed_read_ms(const sk_packed_userspace *p)
{
	return p->read_ms;
}

sk_phase
sk_packed_phase(const sk_packed_userspace *p)
{
	return (sk_phase)p->phase;
}

bool
sk_packed_ready(const sk_packed_userspace *p)
{
	return p->ready;
}

size_t
sk_packed_size(const sk_packed_userspace *p)
{
	return offsetof(sk_packed_userspace, data) + p->len;
}
