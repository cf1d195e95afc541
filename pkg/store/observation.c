/* store/observation: shared provider lists (store.h), the part both
 * backends share: arguments, the JSON text of a body and the lists. */
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

void
sk_observation_dispose(sk_observation *o)
{
	if (o == NULL)
		return;
	free(o->id);
	free(o->writer);
	json_decref(o->body);
	memset(o, 0, sizeof(*o));
}

void
sk_observation_list_dispose(sk_observation_list *l)
{
	if (l == NULL)
		return;
	for (size_t i = 0; i < l->len; i++)
		sk_observation_dispose(&l->items[i]);
	free(l->items);
	memset(l, 0, sizeof(*l));
}

int
sk_observation_set(sk_observation *o, const char *id, int64_t listed_ms, const char *writer,
        const char *body, sk_error *err)
{
	char what[200];
	json_t *v;

	snprintf(what, sizeof(what), "observation %s", id);
	if ((v = sk_store_body_parse(what, body, err)) == NULL)
		return err->code;
	o->id = sk_strdup(id);
	o->listed_ms = listed_ms;
	o->writer = sk_strdup(writer ? writer : "");
	o->body = v;
	return 0;
}

int
sk_observation_exists(const char *group, const char *part, int64_t listed_ms, sk_error *err)
{
	return sk_error_set(err, SK_EEXISTS, "observation %s/%s of the list at %lld is stored",
	        group, part, (long long)listed_ms);
}

int
sk_observation_stale(const char *group, sk_error *err)
{
	return sk_error_set(err, SK_ECONFLICT,
	        "observation head %s: a list started as late or later is current", group);
}

/* Group and part names: 1-128 characters without '/' (the MongoDB backend
 * joins them with it into one _id). */
static int
check_name(const char *what, const char *name, sk_error *err)
{
	if (name == NULL || *name == '\0' || strlen(name) > 128 || strchr(name, '/') != NULL)
		return sk_error_set(err, SK_EINVALID,
		        "observation: %s must be 1-128 characters without '/'", what);
	return 0;
}

static char *
body_text(const char *name, const json_t *body, sk_error *err)
{
	char what[200];

	snprintf(what, sizeof(what), "observation %s", name);
	return sk_store_body_text(what, body, err);
}

int
sk_store_observation_put(sk_store *s, const char *group, const char *part, int64_t listed_ms,
        const char *writer, const json_t *body, sk_error *err)
{
	char *text = NULL;
	int rc = check_name("group", group, err);

	if (rc == 0)
		rc = check_name("part", part, err);
	if (rc == 0 && (text = body_text(part, body, err)) == NULL)
		rc = err->code;
	if (rc == 0)
		rc = s->ops->observation_put(
		        s, group, part, listed_ms, writer ? writer : "", text, err);
	free(text);
	return rc;
}

int
sk_store_observation_get(sk_store *s, const char *group, int64_t listed_ms,
        const char *const *parts, size_t n, sk_observation_list *out, sk_error *err)
{
	int rc = check_name("group", group, err);

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = check_name("part", parts[i], err);
	if (rc != 0 || n == 0)
		return rc;
	return s->ops->observation_get(s, group, listed_ms, parts, n, out, err);
}

int
sk_store_observation_head_put(sk_store *s, const char *group, int64_t listed_ms, const char *writer,
        const json_t *body, sk_error *err)
{
	char *text = NULL;
	int rc = check_name("group", group, err);

	if (rc == 0 && (text = body_text(group, body, err)) == NULL)
		rc = err->code;
	if (rc == 0)
		rc = s->ops->observation_head_put(
		        s, group, listed_ms, writer ? writer : "", text, err);
	free(text);
	return rc;
}

int
sk_store_observation_head_get(sk_store *s, const char *group, sk_observation *out, sk_error *err)
{
	int rc = check_name("group", group, err);

	memset(out, 0, sizeof(*out));
	return rc != 0 ? rc : s->ops->observation_head_get(s, group, out, err);
}

int
sk_store_observation_prune(sk_store *s, const char *group, int64_t before_ms, sk_error *err)
{
	int rc = check_name("group", group, err);

	return rc != 0 ? rc : s->ops->observation_prune(s, group, before_ms, err);
}
