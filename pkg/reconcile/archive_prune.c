/*
 * reconcile/archive_prune: the retention of a user's archives.
 * Every archive of a user is a generation under BASE/GEN/ (BASE is
 * PREFIX/USERID); a generation is complete when its manifest.json exists
 * (archive.c writes it last). The prune keeps the newest complete
 * generation (the anchor), the keep complete ones just older than it and
 * the one last restored; it deletes every other generation older than the
 * anchor, complete or not. Nothing newer than the anchor is touched (an
 * archive in progress), and with no complete generation nothing at all.
 * A generation goes manifest first: a prune cut short leaves an incomplete
 * generation (never restored from), which the next prune deletes.
 */
#include <stdlib.h>
#include <string.h>

#include "archive_int.h"

typedef struct prune_gen {
	char *name;
	bool complete;
	char **keys;
	size_t n, cap;
} prune_gen;

typedef struct prune_set {
	const char *base; /* "BASE/" */
	size_t base_len;
	prune_gen *gens;
	size_t n, cap;
} prune_set;

static bool
all_digits(const char *s)
{
	if (*s == '\0')
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
	}
	return true;
}

int
sk_archive_generation_cmp(const char *a, const char *b)
{
	size_t la, lb;

	if (!all_digits(a) || !all_digits(b))
		return strcmp(a, b);
	while (a[0] == '0' && a[1] != '\0')
		a++;
	while (b[0] == '0' && b[1] != '\0')
		b++;
	la = strlen(a);
	lb = strlen(b);
	if (la != lb)
		return la < lb ? -1 : 1;
	return strcmp(a, b);
}

static prune_gen *
gen_of(prune_set *s, const char *name, size_t len)
{
	prune_gen *g;

	for (size_t i = 0; i < s->n; i++) {
		if (strlen(s->gens[i].name) == len && strncmp(s->gens[i].name, name, len) == 0)
			return &s->gens[i];
	}
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 16;
		s->gens = sk_realloc(s->gens, s->cap * sizeof(*s->gens));
	}
	g = &s->gens[s->n++];
	memset(g, 0, sizeof(*g));
	g->name = sk_strndup(name, len);
	return g;
}

static int
collect(void *arg, const char *key, uint64_t size)
{
	prune_set *s = arg;
	const char *rest = key + s->base_len, *slash;
	prune_gen *g;

	if (strncmp(key, s->base, s->base_len) != 0 || (slash = strchr(rest, '/')) == NULL ||
	        slash == rest)
		return 0; /* not a generation's object: left alone */
	g = gen_of(s, rest, (size_t)(slash - rest));
	if (strcmp(slash + 1, "manifest.json") == 0)
		g->complete = true;
	if (g->n == g->cap) {
		g->cap = g->cap ? 2 * g->cap : 16;
		g->keys = sk_realloc(g->keys, g->cap * sizeof(*g->keys));
	}
	g->keys[g->n++] = sk_strdup(key);
	return 0;
}

static int
by_generation(const void *a, const void *b)
{
	return sk_archive_generation_cmp(
	        ((const prune_gen *)a)->name, ((const prune_gen *)b)->name);
}

static void
set_dispose(prune_set *s)
{
	for (size_t i = 0; i < s->n; i++) {
		for (size_t k = 0; k < s->gens[i].n; k++)
			free(s->gens[i].keys[k]);
		free(s->gens[i].keys);
		free(s->gens[i].name);
	}
	free(s->gens);
}

/* The generation's manifest first, then its other objects. */
static int
delete_generation(sk_s3 *s3, const prune_gen *g, sk_archive_prune_report *rep, sk_error *err)
{
	int rc = 0;

	for (int pass = 0; pass < 2 && rc == 0; pass++) {
		for (size_t k = 0; k < g->n && rc == 0; k++) {
			bool manifest = strcmp(strrchr(g->keys[k], '/') + 1, "manifest.json") == 0;
			if (manifest != (pass == 0))
				continue;
			rc = sk_s3_delete(s3, g->keys[k], err);
			if (rc == 0)
				rep->objects_deleted++;
		}
	}
	if (rc != 0)
		sk_error_prefix(err, "prune generation %s", g->name);
	return rc;
}

/* The generations under BASE/ into s, oldest first; *dir ("BASE/", s's
 * base) is the caller's to free. */
static int
list_generations(
        sk_s3 *s3, const char *base, const char *what, prune_set *s, char **dir, sk_error *err)
{
	size_t n = strlen(base);
	int rc;

	*dir = NULL;
	while (n > 0 && base[n - 1] == '/')
		n--;
	if (n == 0)
		return sk_error_set(err, SK_EINVALID, "archive %s: an empty prefix", what);
	*dir = sk_asprintf("%.*s/", (int)n, base);
	s->base = *dir;
	s->base_len = n + 1;
	rc = sk_s3_list(s3, *dir, collect, s, err);
	if (rc != 0)
		sk_error_prefix(err, "archive %s %s", what, *dir);
	if (rc == 0 && s->n > 0)
		qsort(s->gens, s->n, sizeof(*s->gens), by_generation);
	return rc;
}

int
sk_archive_purge(sk_s3 *s3, const char *base, sk_archive_prune_report *rep, sk_error *err)
{
	prune_set s = { 0 };
	char *dir;
	int rc;

	memset(rep, 0, sizeof(*rep));
	rc = list_generations(s3, base, "purge", &s, &dir, err);
	rep->generations = s.n;
	for (size_t i = 0; rc == 0 && i < s.n; i++) {
		rc = delete_generation(s3, &s.gens[i], rep, err);
		if (rc == 0)
			rep->deleted++;
	}
	set_dispose(&s);
	free(dir);
	return rc;
}

int
sk_archive_prune(sk_s3 *s3, const char *base, const char *restored, int keep,
        sk_archive_prune_report *rep, sk_error *err)
{
	char *dir;
	prune_set s = { 0 };
	ssize_t anchor = -1;
	int rc, older = 0;

	memset(rep, 0, sizeof(*rep));
	rc = list_generations(s3, base, "prune", &s, &dir, err);
	for (size_t i = 0; rc == 0 && i < s.n; i++) {
		if (s.gens[i].complete) {
			anchor = (ssize_t)i;
			rep->complete++;
		}
	}
	rep->generations = s.n;
	if (anchor >= 0)
		snprintf(rep->anchor, sizeof(rep->anchor), "%s", s.gens[anchor].name);
	for (ssize_t i = anchor - 1; rc == 0 && i >= 0; i--) {
		const prune_gen *g = &s.gens[i];
		if (g->complete &&
		        (older < keep || (restored != NULL && strcmp(g->name, restored) == 0))) {
			older++;
			continue;
		}
		rc = delete_generation(s3, g, rep, err);
		if (rc == 0)
			rep->deleted++;
	}
	set_dispose(&s);
	free(dir);
	return rc;
}
