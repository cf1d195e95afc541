/* api/check: typed field checks with positioned errors, for strict validators. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"

static void
verr(sk_vctx *v, const char *path, const char *msg)
{
	sk_doc_error(v->errs, v->doc, path, "%s", msg);
}

void
sk_check_unknown(sk_vctx *v, const char *path, const char *key, const char *const *known, size_t n)
{
	char *p = sk_path_join(path, key);
	const char *s = sk_suggest(key, known, n);

	if (s != NULL)
		sk_doc_error(v->errs, v->doc, p, "unknown field (did you mean %s?)", s);
	else
		verr(v, p, "unknown field");
	free(p);
}

void
sk_check_known(sk_vctx *v, json_t *obj, const char *path, const char *const *allowed)
{
	const char *key;
	json_t *val;
	size_t n = 0;

	while (allowed[n] != NULL)
		n++;
	json_object_foreach(obj, key, val)
	{
		bool ok = false;
		for (size_t i = 0; i < n && !ok; i++)
			ok = strcmp(allowed[i], key) == 0;
		if (!ok)
			sk_check_unknown(v, path, key, allowed, n);
	}
}

json_t *
sk_check_field(sk_vctx *v, json_t *obj, const char *path, const char *key, bool required)
{
	json_t *val = json_object_get(obj, key);

	if (val == NULL && required && json_is_object(obj)) {
		char *p = sk_path_join(path, key);
		verr(v, p, "required");
		free(p);
	}
	return val;
}

bool
sk_check_object(sk_vctx *v, json_t *val, const char *path)
{
	if (json_is_object(val))
		return true;
	verr(v, path, "must be an object");
	return false;
}

const char *
sk_check_string(sk_vctx *v, json_t *val, const char *path)
{
	if (json_is_string(val))
		return json_string_value(val);
	if (json_is_boolean(val))
		verr(v, path,
		        "must be a string (got a boolean: YAML reads a plain true, yes, no, on, "
		        "off, "
		        "y or n as one, as kubectl does; quote the value)");
	else
		verr(v, path, "must be a string");
	return NULL;
}

bool
sk_check_int(sk_vctx *v, json_t *val, const char *path, int64_t min, int64_t max, int64_t *out)
{
	int64_t n;

	if (!sk_json_int(val, &n)) {
		verr(v, path, "must be an integer");
		return false;
	}
	if (n < min || n > max) {
		sk_doc_error(v->errs, v->doc, path, "must be between %lld and %lld", (long long)min,
		        (long long)max);
		return false;
	}
	if (out != NULL)
		*out = n;
	return true;
}

bool
sk_check_bool(sk_vctx *v, json_t *val, const char *path, bool *out)
{
	if (!json_is_boolean(val)) {
		verr(v, path, "must be a boolean");
		return false;
	}
	if (out != NULL)
		*out = json_is_true(val);
	return true;
}

bool
sk_check_enum(sk_vctx *v, json_t *val, const char *path, const char *const *names)
{
	const char *s = sk_check_string(v, val, path);
	char list[256] = "";

	for (size_t i = 0; s != NULL && names[i] != NULL; i++) {
		if (strcmp(s, names[i]) == 0)
			return true;
	}
	if (s == NULL)
		return false;
	for (size_t i = 0; names[i] != NULL; i++) {
		if (i > 0)
			strncat(list, ", ", sizeof(list) - strlen(list) - 1);
		strncat(list, names[i], sizeof(list) - strlen(list) - 1);
	}
	sk_doc_error(v->errs, v->doc, path, "must be one of: %s", list);
	return false;
}

bool
sk_check_duration(
        sk_vctx *v, json_t *val, const char *path, int64_t min_ms, int64_t max_ms, int64_t *out)
{
	const char *s = json_string_value(val);
	char lo[32], hi[32];
	int64_t ms;

	if (s == NULL || !sk_duration_syntax_ok(s) || sk_duration_parse(s, &ms) != SK_OK) {
		verr(v, path, "must be a duration like 90s, 15m or 1h30m");
		return false;
	}
	if (ms < min_ms || ms > max_ms) {
		sk_duration_format(min_ms, lo, sizeof(lo));
		sk_duration_format(max_ms, hi, sizeof(hi));
		if (min_ms == 0)
			sk_doc_error(v->errs, v->doc, path, "must be at most %s", hi);
		else if (min_ms == 1)
			sk_doc_error(
			        v->errs, v->doc, path, "must be greater than 0 and at most %s", hi);
		else
			sk_doc_error(v->errs, v->doc, path, "must be between %s and %s", lo, hi);
		return false;
	}
	if (out != NULL)
		*out = ms;
	return true;
}
