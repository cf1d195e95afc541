/*
 * sandbox/workspace: the workspace copy engine. Copies what lies under a set
 * of roots from one sandbox to another through the providers' file API and
 * verifies both sides.
 *
 * Copy: list the source, refuse a workspace over max_bytes before touching
 * the target, then walk the entries parents first: directories (made with
 * 0755 so their children can be written; their own mode is set once they are
 * filled), regular files and symlinks. A regular file is streamed: a reader
 * thread downloads it from the source into a ring of chunk_bytes while the
 * upload to the target drains the ring, so neither side waits for the other
 * and no file is ever whole in memory. When source and target are the same
 * client (one curl handle, one thread), the file goes through a spool
 * instead: memory up to chunk_bytes, an unlinked temporary file beyond.
 * Transient errors (5xx, 429, timeouts, connection failures) are retried per
 * step, up to `attempts`, with a short backoff that honours Retry-After.
 * Special files (fifos, sockets, devices) are not copied and are listed in
 * report->skipped.
 *
 * Verify: list both sides again; the same entries with the same types,
 * sizes, modes and link targets, and the same SHA-256 (gnutls) of every
 * regular file as read back from each side.
 */
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox_int.h"

#define DEFAULT_CHUNK (1u << 20)
#define DEFAULT_ATTEMPTS 3
#define DIR_WRITE_MODE 0755
#define BACKOFF_MS 200
#define BACKOFF_MAX_MS 2000
#define SHA256_LEN 32

/* ---- options and the source listing ---- */

typedef struct copy_ctx {
	sk_provider *src, *dst;
	const sk_sandbox *src_sb, *dst_sb;
	size_t chunk;
	int attempts;
	sk_copy_report *report;
	sk_error *err;
} copy_ctx;

static void
ctx_init(copy_ctx *c, sk_provider *src, const sk_sandbox *src_sb, sk_provider *dst,
        const sk_sandbox *dst_sb, const sk_copy_options *opt, sk_copy_report *report, sk_error *err)
{
	c->src = src;
	c->src_sb = src_sb;
	c->dst = dst;
	c->dst_sb = dst_sb;
	c->chunk = opt->chunk_bytes ? opt->chunk_bytes : DEFAULT_CHUNK;
	c->attempts = opt->attempts > 0 ? opt->attempts : DEFAULT_ATTEMPTS;
	c->report = report;
	c->err = err;
	memset(report, 0, sizeof(*report));
}

static bool
transient(int rc)
{
	return rc == SK_ETRANSIENT || rc == SK_EUNAVAILABLE || rc == SK_ETIMEOUT;
}

static void
backoff(const sk_error *err, int attempt)
{
	int64_t ms = (int64_t)BACKOFF_MS * attempt;

	if (err && err->retry_after_ms > ms)
		ms = err->retry_after_ms;
	if (ms > BACKOFF_MAX_MS)
		ms = BACKOFF_MAX_MS;
	usleep((useconds_t)(ms * 1000));
}

static void
entry_copy(sk_file_entry *d, const sk_file_entry *s)
{
	*d = *s;
	d->path = sk_strdup(s->path);
	d->link_target = sk_strdup(s->link_target);
}

/* Lists a root with retries; a root that does not exist lists nothing. */
static int
list_root(sk_provider *p, const sk_sandbox *sb, const char *root, int attempts, sk_file_list *out,
        sk_error *err)
{
	int rc = SK_OK;

	for (int a = 1; a <= attempts; a++) {
		rc = sk_sandbox_list_files(p, sb, root, out, err);
		if (!transient(rc))
			break;
		if (a < attempts)
			backoff(err, a);
	}
	if (rc == SK_ENOTFOUND) {
		sk_error_clear(err);
		memset(out, 0, sizeof(*out));
		rc = SK_OK;
	}
	return rc;
}

/* Every root's entries, in one list sorted parents first. */
static int
list_all(sk_provider *p, const sk_sandbox *sb, const sk_copy_options *opt, int attempts,
        sk_file_list *out, sk_error *err)
{
	int rc = SK_OK;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < opt->npaths && rc == SK_OK; i++) {
		sk_file_list one = { 0 };
		const char *root = opt->paths[i];
		if (root == NULL || root[0] != '/')
			return sk_error_set(err, SK_EINVALID,
			        "workspace paths[%zu]: must be an absolute path", i);
		rc = list_root(p, sb, root, attempts, &one, err);
		for (size_t k = 0; rc == SK_OK && k < one.len; k++)
			sk_file_list_push(out, &one.items[k]);
		sk_file_list_free(&one);
	}
	if (rc != SK_OK)
		sk_file_list_free(out);
	else
		sk_file_list_sort(out);
	return rc;
}

/* Totals and skipped entries; SK_ETERMINAL over max_bytes. */
static int
tally(copy_ctx *c, const sk_file_list *l, uint64_t max_bytes)
{
	sk_copy_report *r = c->report;

	for (size_t i = 0; i < l->len; i++) {
		sk_file_entry skip;
		if (l->items[i].type != SK_FILE_OTHER) {
			r->files_total++;
			r->bytes_total +=
			        l->items[i].type == SK_FILE_REGULAR ? l->items[i].size : 0;
			continue;
		}
		entry_copy(&skip, &l->items[i]);
		sk_file_list_push(&r->skipped, &skip);
	}
	if (max_bytes > 0 && r->bytes_total > max_bytes)
		return sk_error_set(c->err, SK_ETERMINAL,
		        "workspace is %llu bytes in %llu entries, over maxBytes %llu",
		        (unsigned long long)r->bytes_total, (unsigned long long)r->files_total,
		        (unsigned long long)max_bytes);
	return SK_OK;
}

/* ---- the spool: one file's bytes between the read and the write ---- */

typedef struct spool {
	char *mem;
	size_t cap; /* chunk: past it, the bytes go to a temporary file */
	FILE *f;
	uint64_t len, off;
	sk_error *err;
} spool;

static int
spool_spill(spool *s)
{
	if ((s->f = tmpfile()) == NULL)
		return SK_EIO;
	if (s->len > 0 && fwrite(s->mem, 1, (size_t)s->len, s->f) != s->len)
		return SK_EIO;
	return SK_OK;
}

static int
spool_sink(void *payload, const void *buf, size_t n)
{
	spool *s = payload;

	if (s->f == NULL && s->len + n > s->cap && spool_spill(s) != SK_OK)
		return sk_error_set(s->err, SK_EIO, "spool: cannot write a temporary file");
	if (s->f && fwrite(buf, 1, n, s->f) != n)
		return sk_error_set(s->err, SK_EIO, "spool: temporary file write failed");
	if (s->f == NULL)
		memcpy(s->mem + s->len, buf, n);
	s->len += n;
	return 0;
}

static int64_t
spool_source(void *payload, void *buf, size_t n)
{
	spool *s = payload;
	size_t want = s->len - s->off < n ? (size_t)(s->len - s->off) : n;

	if (s->f && want > 0 && fread(buf, 1, want, s->f) != want)
		return SK_EIO;
	if (s->f == NULL)
		memcpy(buf, s->mem + s->off, want);
	s->off += want;
	return (int64_t)want;
}

static void
spool_reset(spool *s, bool keep)
{
	if (!keep) {
		if (s->f)
			fclose(s->f);
		s->f = NULL;
		s->len = 0;
	}
	s->off = 0;
	if (s->f)
		rewind(s->f);
}

/* ---- the pipe: a reader thread fills a bounded ring, the upload drains it ---- */

typedef struct ring_pipe {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char *ring;
	size_t cap, head, len;
	bool done; /* the reader returned read_rc */
	bool closed; /* the upload is over: the reader stops */
	bool aborted; /* the reader had more when it stopped */
	int read_rc;
	uint64_t got; /* bytes the reader delivered */
	/* the reader's request */
	sk_provider *p;
	const sk_sandbox *sb;
	const char *path;
	sk_error err;
} ring_pipe;

static int
pipe_put(void *payload, const void *buf, size_t n)
{
	ring_pipe *rp = payload;
	const char *b = buf;

	pthread_mutex_lock(&rp->mu);
	while (n > 0 && !rp->closed) {
		size_t tail = (rp->head + rp->len) % rp->cap;
		size_t k = rp->cap - rp->len;
		if (k == 0) {
			pthread_cond_wait(&rp->cv, &rp->mu);
			continue;
		}
		if (k > n)
			k = n;
		if (k > rp->cap - tail)
			k = rp->cap - tail;
		memcpy(rp->ring + tail, b, k);
		if (rp->len == 0) /* only an empty ring has a reader waiting */
			pthread_cond_broadcast(&rp->cv);
		rp->len += k;
		rp->got += k;
		b += k;
		n -= k;
	}
	rp->aborted = n > 0; /* closed: the upload ended before the file did */
	pthread_mutex_unlock(&rp->mu);
	return n > 0 ? SK_ECONFLICT : 0;
}

static int64_t
pipe_get(void *payload, void *buf, size_t n)
{
	ring_pipe *rp = payload;
	int64_t k;

	pthread_mutex_lock(&rp->mu);
	while (rp->len == 0 && !rp->done)
		pthread_cond_wait(&rp->cv, &rp->mu);
	if (rp->len == 0) {
		k = rp->read_rc < 0 ? rp->read_rc : 0;
	} else {
		size_t m = n < rp->len ? n : rp->len;
		if (m > rp->cap - rp->head)
			m = rp->cap - rp->head;
		memcpy(buf, rp->ring + rp->head, m);
		if (rp->len == rp->cap) /* only a full ring has a writer waiting */
			pthread_cond_broadcast(&rp->cv);
		rp->head = (rp->head + m) % rp->cap;
		rp->len -= m;
		k = (int64_t)m;
	}
	pthread_mutex_unlock(&rp->mu);
	return k;
}

static void *
pipe_reader(void *arg)
{
	ring_pipe *rp = arg;
	int rc = sk_sandbox_read_file(rp->p, rp->sb, rp->path, pipe_put, rp, &rp->err);

	pthread_mutex_lock(&rp->mu);
	rp->done = true;
	rp->read_rc = rc;
	pthread_cond_broadcast(&rp->cv);
	pthread_mutex_unlock(&rp->mu);
	return NULL;
}

/* Which error stands: the reader's own (the upload then only saw its source
 * stop), a file that is not the size it was listed with, the upload's. */
static int
pipe_outcome(copy_ctx *c, const sk_file_entry *e, ring_pipe *rp, int write_rc)
{
	if (rp->read_rc != SK_OK && !rp->aborted) {
		if (c->err)
			*c->err = rp->err;
		return rp->read_rc;
	}
	if (rp->aborted ? write_rc == SK_OK : rp->got != e->size)
		return sk_error_set(c->err, SK_ECONFLICT,
		        "%s: listed with %llu bytes, %s%llu read: it changed while being copied",
		        e->path, (unsigned long long)e->size, rp->aborted ? "more than " : "",
		        (unsigned long long)rp->got);
	if (write_rc != SK_OK)
		return write_rc;
	c->report->bytes_done += rp->got;
	return SK_OK;
}

/* One attempt: download and upload at once through a ring of chunk bytes. */
static int
pipe_copy(copy_ctx *c, const sk_file_entry *e, char *ring)
{
	ring_pipe rp = {
		.ring = ring, .cap = c->chunk, .p = c->src, .sb = c->src_sb, .path = e->path
	};
	pthread_t t;
	int rc;

	pthread_mutex_init(&rp.mu, NULL);
	pthread_cond_init(&rp.cv, NULL);
	sk_error_clear(&rp.err);
	if (pthread_create(&t, NULL, pipe_reader, &rp) != 0) {
		rc = sk_error_set(c->err, SK_ENOMEM, "%s: cannot start the reader thread", e->path);
		goto done;
	}
	rc = sk_sandbox_write_file(c->dst, c->dst_sb, e, pipe_get, &rp, c->err);
	pthread_mutex_lock(&rp.mu);
	rp.closed = true;
	pthread_cond_broadcast(&rp.cv);
	pthread_mutex_unlock(&rp.mu);
	pthread_join(t, NULL);
	rc = pipe_outcome(c, e, &rp, rc);
done:
	pthread_cond_destroy(&rp.cv);
	pthread_mutex_destroy(&rp.mu);
	return rc;
}

/* One try of a file's transfer; retried while transient (c->attempts in all). */
typedef int (*try_fn)(copy_ctx *c, const sk_file_entry *e, void *arg);

static int
with_retry(copy_ctx *c, const sk_file_entry *e, try_fn fn, void *arg)
{
	int rc = SK_OK;

	for (int a = 1; a <= c->attempts; a++) {
		rc = fn(c, e, arg);
		if (!transient(rc))
			break;
		if (a < c->attempts)
			backoff(c->err, a);
	}
	return rc;
}

static int
pipe_try(copy_ctx *c, const sk_file_entry *e, void *ring)
{
	return pipe_copy(c, e, ring);
}

static int
copy_piped(copy_ctx *c, const sk_file_entry *e, char *ring)
{
	return with_retry(c, e, pipe_try, ring);
}

/* ---- copy ---- */

static int
read_try(copy_ctx *c, const sk_file_entry *e, void *arg)
{
	spool *s = arg;

	spool_reset(s, false);
	return sk_sandbox_read_file(c->src, c->src_sb, e->path, spool_sink, s, c->err);
}

static int
read_into(copy_ctx *c, const sk_file_entry *e, spool *s)
{
	return with_retry(c, e, read_try, s);
}

static int
write_try(copy_ctx *c, const sk_file_entry *e, void *arg)
{
	spool *s = arg;

	if (s)
		spool_reset(s, true);
	return sk_sandbox_write_file(c->dst, c->dst_sb, e, s ? spool_source : NULL, s, c->err);
}

static int
write_with_retry(copy_ctx *c, const sk_file_entry *e, spool *s)
{
	return with_retry(c, e, write_try, s);
}

static int
copy_regular(copy_ctx *c, const sk_file_entry *e, spool *s)
{
	sk_file_entry w = *e;
	int rc;

	if (c->src != c->dst) /* two clients: both at once, one on a thread of its own */
		return copy_piped(c, e, s->mem);
	rc = read_into(c, e, s);

	if (rc != SK_OK)
		return rc;
	w.size = s->len; /* what was read, should the file have changed since the list */
	rc = write_with_retry(c, &w, s);
	if (rc == SK_OK)
		c->report->bytes_done += s->len;
	spool_reset(s, false);
	return rc;
}

static int
copy_entry(copy_ctx *c, const sk_file_entry *e, spool *s)
{
	sk_file_entry d;

	if (e->type == SK_FILE_REGULAR)
		return copy_regular(c, e, s);
	if (e->type == SK_FILE_DIR) {
		d = *e;
		d.mode = DIR_WRITE_MODE;
		return write_with_retry(c, &d, NULL);
	}
	return write_with_retry(c, e, NULL);
}

/* Directory modes last, deepest first (a read-only directory is filled by then). */
static int
set_dir_modes(copy_ctx *c, const sk_file_list *l)
{
	int rc = SK_OK;

	for (size_t i = l->len; i-- > 0 && rc == SK_OK;)
		if (l->items[i].type == SK_FILE_DIR && l->items[i].mode != DIR_WRITE_MODE)
			rc = write_with_retry(c, &l->items[i], NULL);
	return rc;
}

static int
copy_entries(copy_ctx *c, const sk_file_list *l, sk_copy_progress_fn progress, void *payload)
{
	spool s = { .cap = c->chunk, .err = c->err };
	int rc = SK_OK;

	s.mem = sk_malloc(c->chunk);
	for (size_t i = 0; i < l->len && rc == SK_OK; i++) {
		if (l->items[i].type == SK_FILE_OTHER)
			continue;
		rc = copy_entry(c, &l->items[i], &s);
		if (rc != SK_OK)
			break;
		c->report->files_done++;
		if (progress)
			progress(payload, c->report);
	}
	spool_reset(&s, false);
	free(s.mem);
	return rc;
}

int
sk_workspace_copy(sk_provider *src, const sk_sandbox *src_sb, sk_provider *dst,
        const sk_sandbox *dst_sb, const sk_copy_options *opt, sk_copy_progress_fn progress,
        void *payload, sk_copy_report *report, sk_error *err)
{
	copy_ctx c;
	sk_file_list l = { 0 };
	int rc;

	ctx_init(&c, src, src_sb, dst, dst_sb, opt, report, err);
	rc = list_all(src, src_sb, opt, c.attempts, &l, err);
	if (rc == SK_OK)
		rc = tally(&c, &l, opt->max_bytes);
	if (rc == SK_OK)
		rc = copy_entries(&c, &l, progress, payload);
	if (rc == SK_OK)
		rc = set_dir_modes(&c, &l);
	sk_file_list_free(&l);
	return rc;
}

/* ---- verify ---- */

typedef struct hasher {
	gnutls_hash_hd_t h;
} hasher;

static int
hash_sink(void *payload, const void *buf, size_t n)
{
	hasher *hs = payload;

	return gnutls_hash(hs->h, buf, n) == 0 ? 0 : SK_ERROR;
}

/* The SHA-256 of a regular file as read back from a sandbox, in hex. */
typedef struct hash_job {
	sk_provider *p;
	const sk_sandbox *sb;
	const char *path;
	int attempts;
	char hex[2 * SHA256_LEN + 1];
	int rc;
	sk_error err;
} hash_job;

static void *
file_sha256(void *arg)
{
	hash_job *j = arg;
	unsigned char digest[SHA256_LEN];
	hasher hs;

	sk_error_clear(&j->err);
	for (int a = 1; a <= j->attempts; a++) {
		if (gnutls_hash_init(&hs.h, GNUTLS_DIG_SHA256) != 0) {
			j->rc = sk_error_set(&j->err, SK_ERROR, "SHA-256: gnutls_hash_init failed");
			return NULL;
		}
		j->rc = sk_sandbox_read_file(j->p, j->sb, j->path, hash_sink, &hs, &j->err);
		gnutls_hash_deinit(hs.h, digest);
		if (!transient(j->rc))
			break;
		if (a < j->attempts)
			backoff(&j->err, a);
	}
	for (int i = 0; j->rc == SK_OK && i < SHA256_LEN; i++)
		snprintf(j->hex + 2 * i, 3, "%02x", digest[i]);
	return NULL;
}

/* Both sides' hashes; at the same time on two threads when they are two clients. */
static int
content_diff(copy_ctx *c, const sk_file_entry *e, char **why)
{
	hash_job js = { .p = c->src, .sb = c->src_sb, .path = e->path, .attempts = c->attempts };
	hash_job jd = { .p = c->dst, .sb = c->dst_sb, .path = e->path, .attempts = c->attempts };
	pthread_t t;
	bool threaded = c->src != c->dst && pthread_create(&t, NULL, file_sha256, &jd) == 0;

	file_sha256(&js);
	if (threaded)
		pthread_join(t, NULL);
	else if (js.rc == SK_OK)
		file_sha256(&jd);
	if (js.rc != SK_OK || jd.rc != SK_OK) {
		if (c->err)
			*c->err = js.rc != SK_OK ? js.err : jd.err;
		return js.rc != SK_OK ? js.rc : jd.rc;
	}
	if (strcmp(js.hex, jd.hex) != 0)
		*why = sk_asprintf("%s: content differs (sha256 %.12s at the source, %.12s at the "
		                   "target)",
		        e->path, js.hex, jd.hex);
	return SK_OK;
}

static const char *
type_word(sk_file_type t)
{
	static const char *const words[] = { "file", "directory", "symlink", "special file" };

	return words[t];
}

/* Why two entries for the same path differ, or NULL when they agree. */
static char *
entry_diff(const sk_file_entry *a, const sk_file_entry *b)
{
	if (a->type != b->type)
		return sk_asprintf("%s: a %s at the source, a %s at the target", a->path,
		        type_word(a->type), type_word(b->type));
	if (a->type == SK_FILE_REGULAR && a->size != b->size)
		return sk_asprintf("%s: %llu bytes at the source, %llu at the target", a->path,
		        (unsigned long long)a->size, (unsigned long long)b->size);
	if (a->type != SK_FILE_SYMLINK && a->mode != b->mode)
		return sk_asprintf("%s: mode %04o at the source, %04o at the target", a->path,
		        (unsigned)a->mode, (unsigned)b->mode);
	if (a->type == SK_FILE_SYMLINK &&
	        strcmp(a->link_target ? a->link_target : "", b->link_target ? b->link_target : ""))
		return sk_asprintf("%s: links to %s at the source, to %s at the target", a->path,
		        a->link_target, b->link_target);
	return NULL;
}

/* The next entry of l from *i that is not a special file (NULL at the end). */
static const sk_file_entry *
next_copied(const sk_file_list *l, size_t *i)
{
	while (*i < l->len && l->items[*i].type == SK_FILE_OTHER)
		(*i)++;
	return *i < l->len ? &l->items[*i] : NULL;
}

/* Walks both sorted lists together; sets *why at the first difference. */
static int
compare_lists(copy_ctx *c, const sk_file_list *a, const sk_file_list *b, char **why)
{
	size_t i = 0, k = 0;
	const sk_file_entry *x, *y;
	int rc = SK_OK, ord;

	while (rc == SK_OK && *why == NULL) {
		x = next_copied(a, &i);
		y = next_copied(b, &k);
		if (x == NULL && y == NULL)
			break;
		ord = x && y ? sk_file_list_order(x->path, y->path) : (x ? -1 : 1);
		if (ord < 0)
			*why = sk_asprintf("%s: missing at the target", x->path);
		else if (ord > 0)
			*why = sk_asprintf("%s: at the target only", y->path);
		else if ((*why = entry_diff(x, y)) == NULL && x->type == SK_FILE_REGULAR) {
			rc = content_diff(c, x, why);
			c->report->bytes_done += rc == SK_OK ? x->size : 0;
		}
		if (rc == SK_OK && *why == NULL)
			c->report->files_done++;
		i++, k++;
	}
	return rc;
}

int
sk_workspace_verify(sk_provider *src, const sk_sandbox *src_sb, sk_provider *dst,
        const sk_sandbox *dst_sb, const sk_copy_options *opt, sk_copy_report *report, sk_error *err)
{
	copy_ctx c;
	sk_file_list a = { 0 }, b = { 0 };
	char *why = NULL;
	int rc;

	ctx_init(&c, src, src_sb, dst, dst_sb, opt, report, err);
	rc = list_all(src, src_sb, opt, c.attempts, &a, err);
	if (rc == SK_OK)
		rc = list_all(dst, dst_sb, opt, c.attempts, &b, err);
	if (rc == SK_OK)
		rc = tally(&c, &a, 0);
	if (rc == SK_OK)
		rc = compare_lists(&c, &a, &b, &why);
	if (rc == SK_OK && why) {
		report->mismatch = why;
		rc = sk_error_set(err, SK_ECONFLICT, "workspace verify: %s", why);
	} else {
		free(why);
	}
	sk_file_list_free(&a);
	sk_file_list_free(&b);
	return rc;
}

void
sk_copy_report_free(sk_copy_report *r)
{
	if (!r)
		return;
	sk_file_list_free(&r->skipped);
	free(r->mismatch);
	memset(r, 0, sizeof(*r));
}
