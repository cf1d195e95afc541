/*
 * store/memory_quota: the in-memory backend's SpaceQuotas, a JSON object
 * name -> {"object": text, "status": text} under the store's mutex.
 */
#include <stdlib.h>
#include <string.h>

#include "memory_int.h"

static json_t *
entry(sk_memstore *m, const char *name)
{
	return m->quotas != NULL ? json_object_get(m->quotas, name) : NULL;
}

int
sk_mem_quota_insert(sk_store *s, const char *name, const char *object, sk_error *err)
{
	sk_memstore *m = sk_mem_of(s);
	int rc = SK_OK;

	sk_mem_lock(m);
	if (m->quotas == NULL)
		m->quotas = json_object();
	if (entry(m, name) != NULL)
		rc = sk_error_set(err, SK_EEXISTS, "spacequotas \"%s\" already exists", name);
	else
		json_object_set_new(m->quotas, name, json_pack("{ss}", "object", object));
	sk_mem_unlock(m);
	return rc;
}

/* Sets field of name's entry; SK_ENOTFOUND when there is none. */
static int
set_field(sk_store *s, const char *name, const char *field, const char *text, sk_error *err)
{
	sk_memstore *m = sk_mem_of(s);
	json_t *e;
	int rc = SK_OK;

	sk_mem_lock(m);
	if ((e = entry(m, name)) == NULL)
		rc = sk_store_quota_not_found(name, err);
	else
		json_object_set_new(e, field, json_string(text));
	sk_mem_unlock(m);
	return rc;
}

int
sk_mem_quota_replace(sk_store *s, const char *name, const char *object, sk_error *err)
{
	return set_field(s, name, "object", object, err);
}

int
sk_mem_quota_status(sk_store *s, const char *name, const char *status, sk_error *err)
{
	return set_field(s, name, "status", status, err);
}

int
sk_mem_quota_list(sk_store *s, sk_spacequota_list *out, sk_error *err)
{
	sk_memstore *m = sk_mem_of(s);
	const char *name;
	json_t *e;
	int rc = SK_OK;

	sk_mem_lock(m);
	if (m->quotas != NULL) {
		json_object_foreach(m->quotas, name, e)
		{
			if (rc == SK_OK)
				rc = sk_store_quota_add(out,
				        json_string_value(json_object_get(e, "object")),
				        json_string_value(json_object_get(e, "status")), err);
		}
	}
	sk_mem_unlock(m);
	return rc;
}

int
sk_mem_quota_remove(sk_store *s, const char *name, sk_error *err)
{
	sk_memstore *m = sk_mem_of(s);
	int rc = SK_OK;

	sk_mem_lock(m);
	if (entry(m, name) == NULL)
		rc = sk_store_quota_not_found(name, err);
	else
		json_object_del(m->quotas, name);
	sk_mem_unlock(m);
	return rc;
}
