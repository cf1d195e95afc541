/* store/record: apply records (store.h), the part both backends share:
 * arguments, the JSON text of a body and the list. */
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

void
sk_apply_record_list_dispose(sk_apply_record_list *l)
{
	if (l == NULL)
		return;
	for (size_t i = 0; i < l->len; i++) {
		free(l->items[i].id);
		json_decref(l->items[i].body);
	}
	free(l->items);
	memset(l, 0, sizeof(*l));
}

int
sk_apply_record_set(
        sk_apply_record *r, const char *id, int64_t create_ms, const char *body, sk_error *err)
{
	json_error_t jerr;
	json_t *v = json_loads(body, 0, &jerr);

	if (!json_is_object(v)) {
		json_decref(v);
		return sk_error_set(
		        err, SK_EINVALID, "apply record \"%s\": body is not a JSON object", id);
	}
	r->id = sk_strdup(id);
	r->create_ms = create_ms;
	r->body = v;
	return 0;
}

static int
check_id(const char *id, sk_error *err)
{
	if (id == NULL || *id == '\0' || strlen(id) > 256)
		return sk_error_set(err, SK_EINVALID, "apply record: id must be 1-256 characters");
	return 0;
}

int
sk_store_record_put(sk_store *s, const char *id, const json_t *body, sk_error *err)
{
	char *text = NULL;
	int rc = check_id(id, err);

	if (rc == 0 && !json_is_object(body))
		rc = sk_error_set(
		        err, SK_EINVALID, "apply record \"%s\": body must be an object", id);
	if (rc == 0)
		text = json_dumps(body, JSON_COMPACT);
	if (rc == 0 && (text == NULL || strlen(text) > SK_STORE_RECORD_MAX_BYTES))
		rc = sk_error_set(err, SK_EINVALID, "apply record \"%s\": larger than %d bytes", id,
		        SK_STORE_RECORD_MAX_BYTES);
	if (rc == 0)
		rc = s->ops->record_put(s, id, sk_now_ms(), text, err);
	free(text);
	return rc;
}

int
sk_store_record_list(sk_store *s, sk_apply_record_list *out, sk_error *err)
{
	memset(out, 0, sizeof(*out));
	return s->ops->record_list(s, out, err);
}

int
sk_store_record_remove(sk_store *s, const char *id, sk_error *err)
{
	int rc = check_id(id, err);

	return rc != 0 ? rc : s->ops->record_remove(s, id, err);
}
