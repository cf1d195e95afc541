/* store/record: apply records (store.h), the part both backends share:
 * arguments, the JSON text of a body and the list; and the JSON bodies of
 * records and shared lists (sk_store_body_text/parse). */
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

char *
sk_store_body_text(const char *what, const json_t *body, sk_error *err)
{
	char *text;

	if (!json_is_object(body)) {
		sk_error_set(err, SK_EINVALID, "%s: body must be an object", what);
		return NULL;
	}
	text = json_dumps(body, JSON_COMPACT);
	if (text == NULL || strlen(text) > SK_STORE_RECORD_MAX_BYTES) {
		free(text);
		sk_error_set(err, SK_EINVALID, "%s: larger than %d bytes", what,
		        SK_STORE_RECORD_MAX_BYTES);
		return NULL;
	}
	return text;
}

json_t *
sk_store_body_parse(const char *what, const char *text, sk_error *err)
{
	json_error_t jerr;
	json_t *v = json_loads(text, 0, &jerr);

	if (json_is_object(v))
		return v;
	json_decref(v);
	sk_error_set(err, SK_EINVALID, "%s: body is not a JSON object", what);
	return NULL;
}

int
sk_apply_record_set(
        sk_apply_record *r, const char *id, int64_t create_ms, const char *body, sk_error *err)
{
	char what[300];
	json_t *v;

	snprintf(what, sizeof(what), "apply record \"%s\"", id);
	if ((v = sk_store_body_parse(what, body, err)) == NULL)
		return err->code;
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
	char what[300], *text = NULL;
	int rc = check_id(id, err);

	if (rc == 0) {
		snprintf(what, sizeof(what), "apply record \"%s\"", id);
		if ((text = sk_store_body_text(what, body, err)) == NULL)
			rc = err->code;
	}
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
