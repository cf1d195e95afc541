/* store/observation: shared provider lists (store.h), the part both
 * backends share: arguments, the JSON text of a body and the list. */
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

void
sk_observation_list_dispose(sk_observation_list *l)
{
	if (l == NULL)
		return;
	for (size_t i = 0; i < l->len; i++) {
		free(l->items[i].id);
		free(l->items[i].writer);
		json_decref(l->items[i].body);
	}
	free(l->items);
	memset(l, 0, sizeof(*l));
}

int
sk_observation_set(sk_observation *o, const char *id, int64_t listed_ms, const char *writer,
        const char *body, sk_error *err)
{
	json_error_t jerr;
	json_t *v = json_loads(body, 0, &jerr);

	if (!json_is_object(v)) {
		json_decref(v);
		return sk_error_set(
		        err, SK_EINVALID, "observation \"%s\": body is not a JSON object", id);
	}
	o->id = sk_strdup(id);
	o->listed_ms = listed_ms;
	o->writer = sk_strdup(writer ? writer : "");
	o->body = v;
	return 0;
}

int
sk_observation_stale(const char *id, sk_error *err)
{
	return sk_error_set(err, SK_ECONFLICT,
	        "observation \"%s\": a part from a newer or the same list is stored", id);
}

static int
check_id(const char *id, sk_error *err)
{
	if (id == NULL || *id == '\0' || strlen(id) > 256)
		return sk_error_set(err, SK_EINVALID, "observation: id must be 1-256 characters");
	return 0;
}

int
sk_store_observation_put(sk_store *s, const char *id, int64_t listed_ms, const char *writer,
        const json_t *body, sk_error *err)
{
	char *text = NULL;
	int rc = check_id(id, err);

	if (rc == 0 && !json_is_object(body))
		rc = sk_error_set(
		        err, SK_EINVALID, "observation \"%s\": body must be an object", id);
	if (rc == 0)
		text = json_dumps(body, JSON_COMPACT);
	if (rc == 0 && (text == NULL || strlen(text) > SK_STORE_RECORD_MAX_BYTES))
		rc = sk_error_set(err, SK_EINVALID, "observation \"%s\": larger than %d bytes", id,
		        SK_STORE_RECORD_MAX_BYTES);
	if (rc == 0)
		rc = s->ops->observation_put(s, id, listed_ms, writer ? writer : "", text, err);
	free(text);
	return rc;
}

int
sk_store_observation_get(
        sk_store *s, const char *const *ids, size_t n, sk_observation_list *out, sk_error *err)
{
	int rc = 0;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = check_id(ids[i], err);
	return rc != 0 || n == 0 ? rc : s->ops->observation_get(s, ids, n, out, err);
}
