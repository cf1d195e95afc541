/* api/selector: kubectl label selectors ("k=v,k!=v,k,!k,k in (a,b),k notin (a,b)",
 * and "k>N", "k<N" with N an integer, as k8s.io/apimachinery's parser has them). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "kvlist.h"
#include "selector.h"

typedef enum op { OP_EQ, OP_NEQ, OP_EXISTS, OP_NOT_EXISTS, OP_IN, OP_NOT_IN, OP_GT, OP_LT } op;

typedef struct requirement {
	char *key;
	op op;
	char **values;
	size_t n_values;
} requirement;

struct sk_selector {
	requirement *reqs;
	size_t n;
};

void
sk_selector_free(sk_selector *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->n; i++) {
		free(s->reqs[i].key);
		for (size_t j = 0; j < s->reqs[i].n_values; j++)
			free(s->reqs[i].values[j]);
		free(s->reqs[i].values);
	}
	free(s->reqs);
	free(s);
}

/* Trimmed copy of [b, e). */
static char *
trim_dup(const char *b, const char *e)
{
	while (b < e && isspace((unsigned char)*b))
		b++;
	while (e > b && isspace((unsigned char)e[-1]))
		e--;
	return sk_strndup(b, (size_t)(e - b));
}

static void
add_value(requirement *r, char *v)
{
	r->values = sk_realloc(r->values, (r->n_values + 1) * sizeof(char *));
	r->values[r->n_values++] = v;
}

static bool
trailing_text(const char *p)
{
	while (isspace((unsigned char)*p))
		p++;
	return *p != '\0';
}

static int
parse_set(requirement *r, const char *text, sk_error *err)
{
	const char *p = text;
	const char *close = strchr(p, ')');

	while (isspace((unsigned char)*p))
		p++;
	if (*p != '(' || close == NULL || trailing_text(close + 1))
		return sk_error_set(
		        err, SK_EINVALID, "selector: expected (values) in \"%s\"", text);
	p++;
	for (;;) {
		const char *comma = strchr(p, ',');
		const char *end = comma != NULL && comma < close ? comma : close;
		char *v = trim_dup(p, end);
		if (!sk_valid_label_value(v)) {
			sk_error_set(err, SK_EINVALID, "selector: invalid value \"%s\"", v);
			free(v);
			return SK_EINVALID;
		}
		add_value(r, v);
		if (end == close)
			break;
		p = end + 1;
	}
	return SK_OK;
}

/* One requirement from a term (no top-level commas). */
static int
parse_term(requirement *r, const char *term, sk_error *err)
{
	const char *end = term + strlen(term);
	const char *p;
	char *word;

	while (isspace((unsigned char)*term))
		term++;
	if (*term == '!') {
		r->op = OP_NOT_EXISTS;
		r->key = trim_dup(term + 1, end);
		return SK_OK;
	}
	if ((p = strpbrk(term, "<>")) != NULL) {
		r->op = *p == '>' ? OP_GT : OP_LT;
		r->key = trim_dup(term, p);
		add_value(r, trim_dup(p + 1, end));
		return SK_OK;
	}
	if ((p = strstr(term, "!=")) != NULL || (p = strstr(term, "==")) != NULL) {
		r->op = p[0] == '!' ? OP_NEQ : OP_EQ;
		r->key = trim_dup(term, p);
		word = trim_dup(p + 2, end);
		add_value(r, word);
		return SK_OK;
	}
	if ((p = strchr(term, '=')) != NULL) {
		r->op = OP_EQ;
		r->key = trim_dup(term, p);
		add_value(r, trim_dup(p + 1, end));
		return SK_OK;
	}
	for (p = term; *p && !isspace((unsigned char)*p) && *p != '('; p++)
		;
	r->key = trim_dup(term, p);
	while (isspace((unsigned char)*p))
		p++;
	if (*p == '\0') {
		r->op = OP_EXISTS;
		return SK_OK;
	}
	if (strncmp(p, "notin", 5) == 0) {
		r->op = OP_NOT_IN;
		return parse_set(r, p + 5, err);
	}
	if (strncmp(p, "in", 2) == 0) {
		r->op = OP_IN;
		return parse_set(r, p + 2, err);
	}
	return sk_error_set(err, SK_EINVALID, "selector: cannot parse \"%s\"", term);
}

/* A base-10 int64, as Go's strconv.ParseInt(s, 10, 64). */
static bool
parse_int64(const char *s, long long *out)
{
	char *end;

	if (s == NULL || *s == '\0' || isspace((unsigned char)*s))
		return false;
	errno = 0;
	*out = strtoll(s, &end, 10);
	return errno == 0 && *end == '\0';
}

static int
check_requirement(const requirement *r, sk_error *err)
{
	long long n;

	if (!sk_valid_label_key(r->key))
		return sk_error_set(err, SK_EINVALID, "selector: invalid label key \"%s\"", r->key);
	if ((r->op == OP_GT || r->op == OP_LT) && !parse_int64(r->values[0], &n))
		return sk_error_set(err, SK_EINVALID,
		        "selector: for '>' and '<' the value must be an integer (got \"%s\")",
		        r->values[0]);
	for (size_t i = 0; i < r->n_values; i++) {
		if (!sk_valid_label_value(r->values[i]))
			return sk_error_set(
			        err, SK_EINVALID, "selector: invalid value \"%s\"", r->values[i]);
	}
	return SK_OK;
}

int
sk_selector_parse(const char *text, sk_selector **out, sk_error *err)
{
	sk_selector *s = sk_calloc(1, sizeof(*s));
	const char *p = text != NULL ? text : "";
	int rc = SK_OK;

	*out = NULL;
	while (rc == SK_OK && *p) {
		const char *e = p;
		int paren = 0;
		char *term;
		while (*e && (paren > 0 || *e != ',')) {
			paren += *e == '(' ? 1 : *e == ')' ? -1 : 0;
			e++;
		}
		term = trim_dup(p, e);
		if (term[0] == '\0' && (*e == ',' || p != text)) {
			rc = sk_error_set(
			        err, SK_EINVALID, "selector: empty requirement in \"%s\"", text);
		} else if (term[0] != '\0') {
			requirement *r;
			s->reqs = sk_realloc(s->reqs, (s->n + 1) * sizeof(*s->reqs));
			r = memset(&s->reqs[s->n++], 0, sizeof(*r));
			rc = parse_term(r, term, err);
			if (rc == SK_OK)
				rc = check_requirement(r, err);
		}
		free(term);
		p = *e ? e + 1 : e;
		if (rc == SK_OK && *e == ',' && *p == '\0')
			rc = sk_error_set(
			        err, SK_EINVALID, "selector: trailing comma in \"%s\"", text);
	}
	if (rc != SK_OK) {
		sk_selector_free(s);
		return rc;
	}
	*out = s;
	return SK_OK;
}

static bool
in_values(const requirement *r, const char *v)
{
	for (size_t i = 0; v != NULL && i < r->n_values; i++) {
		if (strcmp(r->values[i], v) == 0)
			return true;
	}
	return false;
}

/* k>N, k<N: the label is present and an integer beyond N. */
static bool
compare_int(const requirement *r, const char *v)
{
	long long have, want;

	if (!parse_int64(v, &have) || !parse_int64(r->values[0], &want))
		return false;
	return r->op == OP_GT ? have > want : have < want;
}

bool
sk_selector_matches(const sk_selector *s, const sk_kvlist *labels)
{
	for (size_t i = 0; s != NULL && i < s->n; i++) {
		const requirement *r = &s->reqs[i];
		const char *v = sk_kvlist_get(labels, r->key);
		bool ok;
		switch (r->op) {
		case OP_EQ:
		case OP_IN: ok = in_values(r, v); break;
		case OP_NEQ:
		case OP_NOT_IN: ok = !in_values(r, v); break;
		case OP_EXISTS: ok = v != NULL; break;
		case OP_GT:
		case OP_LT: ok = compare_int(r, v); break;
		default: ok = v == NULL; break;
		}
		if (!ok)
			return false;
	}
	return true;
}
