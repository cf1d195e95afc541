/*
 * store/quota: SpaceQuotas (store.h), the rules both backends share:
 * apply decides created, configured or unchanged and keeps the store-owned
 * metadata (uid, creationTimestamp); the backends store the object's and
 * the status's JSON text.
 */
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

int
sk_store_quota_not_found(const char *name, sk_error *err)
{
	return sk_error_set(err, SK_ENOTFOUND, "spacequotas \"%s\" not found", name);
}

static int
by_name(const void *a, const void *b)
{
	const sk_spacequota *x = *(sk_spacequota *const *)a, *y = *(sk_spacequota *const *)b;

	return strcmp(x->meta.name, y->meta.name);
}

int
sk_store_quota_add(sk_spacequota_list *out, const char *object, const char *status, sk_error *err)
{
	json_t *root = sk_store_body_parse("spacequota", object, err), *st = NULL;
	sk_spacequota *q = NULL;
	int rc;

	if (root == NULL)
		return SK_EINVALID;
	if (status != NULL &&
	        (st = sk_store_body_parse("spacequota status", status, err)) == NULL) {
		json_decref(root);
		return SK_EINVALID;
	}
	if (st != NULL)
		json_object_set_new(root, "status", st);
	rc = sk_spacequota_decode(root, &q, err);
	json_decref(root);
	if (rc != SK_OK)
		return rc;
	out->items = sk_realloc(out->items, (out->len + 1) * sizeof(*out->items));
	out->items[out->len++] = q;
	return SK_OK;
}

int
sk_store_quota_list(sk_store *s, sk_spacequota_list *out, sk_error *err)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = s->ops->quota_list(s, out, err)) != SK_OK) {
		sk_spacequota_list_dispose(out);
		return rc;
	}
	if (out->len > 1)
		qsort(out->items, out->len, sizeof(*out->items), by_name);
	return SK_OK;
}

int
sk_store_quota_get(sk_store *s, const char *name, sk_spacequota **out, sk_error *err)
{
	sk_spacequota_list l;
	int rc;

	*out = NULL;
	if ((rc = sk_store_quota_list(s, &l, err)) != SK_OK)
		return rc;
	for (size_t i = 0; i < l.len && *out == NULL; i++) {
		if (strcmp(l.items[i]->meta.name, name) == 0) {
			*out = l.items[i];
			l.items[i] = NULL;
		}
	}
	for (size_t i = 0; i < l.len; i++)
		sk_spacequota_free(l.items[i]);
	free(l.items);
	return *out != NULL ? SK_OK : sk_store_quota_not_found(name, err);
}

/* The object to store: q's desired fields, cur's (or new) uid and creation. */
static char *
object_text(const sk_spacequota *q, const sk_spacequota *cur, sk_error *err)
{
	json_t *o = sk_spacequota_desired_json(q), *meta = json_object_get(o, "metadata");
	char uid[37], t[64];
	char *text;

	if (cur != NULL && cur->meta.uid != NULL)
		snprintf(uid, sizeof(uid), "%s", cur->meta.uid);
	else
		sk_uuid4(uid);
	sk_time_format(
	        cur != NULL && cur->meta.creation_ms > 0 ? cur->meta.creation_ms : sk_now_ms(), t,
	        sizeof(t));
	json_object_set_new(meta, "uid", json_string(uid));
	json_object_set_new(meta, "creationTimestamp", json_string(t));
	text = sk_store_body_text("spacequota", o, err);
	json_decref(o);
	return text;
}

int
sk_store_quota_apply(
        sk_store *s, const sk_spacequota *q, bool dry, const char **action, sk_error *err)
{
	sk_spacequota *cur = NULL;
	json_t *want, *have;
	char *text;
	int rc = sk_store_quota_get(s, q->meta.name, &cur, err);

	if (rc != SK_OK && rc != SK_ENOTFOUND)
		return rc;
	*action = cur == NULL ? "created" : "configured";
	if (cur != NULL) {
		want = sk_spacequota_desired_json(q);
		have = sk_spacequota_desired_json(cur);
		if (json_equal(want, have))
			*action = "unchanged";
		json_decref(want);
		json_decref(have);
	}
	if (dry || strcmp(*action, "unchanged") == 0) {
		sk_spacequota_free(cur);
		return SK_OK;
	}
	sk_error_clear(err);
	if ((text = object_text(q, cur, err)) == NULL)
		rc = SK_EINVALID;
	else if (cur == NULL)
		rc = s->ops->quota_insert(s, q->meta.name, text, err);
	else
		rc = s->ops->quota_replace(s, q->meta.name, text, err);
	free(text);
	sk_spacequota_free(cur);
	return rc;
}

int
sk_store_quota_write_status(sk_store *s, const sk_spacequota *q, sk_error *err)
{
	json_t *st = sk_spacequota_status_to_json(q);
	char *text = sk_store_body_text("spacequota status", st, err);
	int rc = text != NULL ? s->ops->quota_status(s, q->meta.name, text, err) : SK_EINVALID;

	json_decref(st);
	free(text);
	return rc;
}

int
sk_store_quota_delete(sk_store *s, const char *name, sk_error *err)
{
	return s->ops->quota_remove(s, name, err);
}
