/*
 * store/object: the rules of stored objects that every backend applies:
 * what create stores, what an update or a status write changes (and when
 * it changes nothing), finalizers, and the errors that name the object.
 */
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

int
sk_store_conflict(const char *name, int64_t expected, int64_t found, sk_error *err)
{
	return sk_error_set(err, SK_ECONFLICT,
	        "userspace \"%s\": the object has been modified; please apply your changes to "
	        "the latest version (expected resourceVersion %lld, found %lld)",
	        name, (long long)expected, (long long)found);
}

int
sk_store_not_found(const char *name, sk_error *err)
{
	return sk_error_set(err, SK_ENOTFOUND, "userspace \"%s\" not found", name);
}

int
sk_store_user_id_taken(const char *user_id, const char *holder, sk_error *err)
{
	if (holder != NULL)
		return sk_error_set(err, SK_ECONFLICT,
		        "spec.userID \"%s\" is already used by userspace \"%s\"", user_id, holder);
	return sk_error_set(err, SK_ECONFLICT,
	        "spec.userID \"%s\" is already used by another userspace", user_id);
}

static void
set_finalizers(sk_object_meta *m, const char *const *list, size_t n)
{
	for (size_t i = 0; i < m->n_finalizers; i++)
		free(m->finalizers[i]);
	free(m->finalizers);
	m->finalizers = n ? sk_calloc(n, sizeof(char *)) : NULL;
	for (size_t i = 0; i < n; i++)
		m->finalizers[i] = sk_strdup(list[i]);
	m->n_finalizers = n;
}

sk_userspace *
sk_store_new_object(const sk_userspace *us)
{
	static const char *const fin[] = { SK_FINALIZER };
	sk_userspace *obj = sk_userspace_dup(us);
	char uid[37];

	sk_userspace_status_dispose(&obj->status);
	memset(&obj->status, 0, sizeof(obj->status));
	sk_userspace_apply_defaults(obj);
	sk_uuid4(uid);
	free(obj->meta.uid);
	obj->meta.uid = sk_strdup(uid);
	obj->meta.generation = 1;
	obj->meta.creation_ms = sk_now_ms();
	obj->meta.deletion_ms = 0;
	set_finalizers(&obj->meta, fin, 1);
	return obj;
}

/* Moves labels, annotations and spec of `from` into `to` (from keeps the old ones). */
static void
swap_user_fields(sk_userspace *to, sk_userspace *from)
{
	sk_kvlist kv;
	sk_userspace_spec spec;

	kv = to->meta.labels;
	to->meta.labels = from->meta.labels;
	from->meta.labels = kv;
	kv = to->meta.annotations;
	to->meta.annotations = from->meta.annotations;
	from->meta.annotations = kv;
	spec = to->spec;
	to->spec = from->spec;
	from->spec = spec;
}

sk_userspace *
sk_store_updated_object(const sk_userspace *cur, const sk_userspace *us)
{
	bool spec_changed = !sk_userspace_spec_equal(&cur->spec, &us->spec);
	sk_userspace *next, *tmp;

	if (!spec_changed && sk_kvlist_equal(&cur->meta.labels, &us->meta.labels) &&
	        sk_kvlist_equal(&cur->meta.annotations, &us->meta.annotations))
		return NULL;
	next = sk_userspace_dup(cur);
	tmp = sk_userspace_dup(us);
	swap_user_fields(next, tmp);
	sk_userspace_free(tmp);
	if (spec_changed)
		next->meta.generation++;
	return next;
}

sk_userspace *
sk_store_with_status(const sk_userspace *cur, const sk_userspace_status *status)
{
	sk_userspace *next;

	if (sk_userspace_status_equal(&cur->status, status))
		return NULL;
	next = sk_userspace_dup(cur);
	sk_userspace_status_dispose(&next->status);
	memset(&next->status, 0, sizeof(next->status));
	sk_userspace_status_copy(&next->status, status);
	return next;
}

void
sk_store_drop_finalizer(sk_object_meta *m, const char *finalizer)
{
	size_t keep = 0;

	for (size_t i = 0; i < m->n_finalizers; i++) {
		if (strcmp(m->finalizers[i], finalizer) == 0)
			free(m->finalizers[i]);
		else
			m->finalizers[keep++] = m->finalizers[i];
	}
	m->n_finalizers = keep;
}
