/*
 * store: the public sk_store_* calls. Each checks its arguments once, for
 * every backend, and dispatches through the store's backend table
 * (store_int.h); leases are read, decided (lease.c) and swapped.
 */
#include <stdlib.h>
#include <string.h>

#include "../api/flags.h"
#include "../api/names.h"
#include "store_int.h"

#define SK_MEMORY_URI "memory://"

bool
sk_store_uri_is_memory(const char *uri)
{
	return uri != NULL && strncmp(uri, SK_MEMORY_URI, strlen(SK_MEMORY_URI)) == 0;
}

int
sk_store_connect(sk_store *s, bool indexes, sk_error *err)
{
	if (strcmp(sk_store_backend_name(s), "memory") == 0)
		return 0;
	return sk_store_mongo_connect(s, indexes, err);
}

int
sk_store_open(sk_store **out, const sk_store_options *opts, sk_error *err)
{
	sk_store_options o = SK_STORE_OPTIONS_INIT;

	*out = NULL;
	if (opts != NULL)
		o = *opts;
	if (o.uri == NULL || *o.uri == '\0')
		o.uri = getenv(SK_MONGODB_URI_ENV);
	if (o.uri == NULL || *o.uri == '\0')
		o.uri = SK_DEFAULT_MONGODB_URI;
	if (sk_store_uri_is_memory(o.uri))
		return sk_store_open_memory(out);
	return sk_store_open_mongo(out, &o, err);
}

void
sk_store_close(sk_store *s)
{
	if (s != NULL)
		s->ops->close(s);
}

const char *
sk_store_backend_name(const sk_store *s)
{
	return s->ops->name;
}

int
sk_store_ping(sk_store *s, sk_error *err)
{
	return s->ops->ping(s, err);
}

int
sk_store_drop(sk_store *s, sk_error *err)
{
	return s->ops->drop(s, err);
}

static int
check_name(const char *name, sk_error *err)
{
	if (name == NULL || *name == '\0')
		return sk_error_set(err, SK_EINVALID, "metadata.name: required");
	return 0;
}

static int
check_user_id(const sk_userspace *us, sk_error *err)
{
	if (us->spec.user_id == NULL || !sk_valid_user_id(us->spec.user_id))
		return sk_error_set(
		        err, SK_EINVALID, "spec.userID: must match [A-Za-z0-9._-]{1,128}");
	return 0;
}

int
sk_store_get(sk_store *s, const char *name, sk_userspace **out, sk_error *err)
{
	int rc = check_name(name, err);

	*out = NULL;
	return rc != 0 ? rc : s->ops->get(s, name, out, err);
}

int
sk_store_list(sk_store *s, const sk_selector *selector, sk_userspace_list *out, sk_error *err)
{
	memset(out, 0, sizeof(*out));
	return s->ops->list(s, selector, out, err);
}

int
sk_store_list_since(sk_store *s, int64_t since, sk_userspace_list *out, sk_error *err)
{
	memset(out, 0, sizeof(*out));
	out->resource_version = since;
	return s->ops->list_since(s, since, out, err);
}

int
sk_store_clock_check(sk_store *s, sk_clock_reading *out, sk_error *err)
{
	memset(out, 0, sizeof(*out));
	out->at_mono_ms = sk_monotonic_ms();
	return s->ops->clock_check ? s->ops->clock_check(s, out, err) : 0;
}

int
sk_store_clock_verdict(const sk_clock_reading *r, int64_t max_ms, sk_error *err)
{
	int64_t a = r->skew_ms < 0 ? -r->skew_ms : r->skew_ms;

	if (max_ms <= 0)
		max_ms = SK_STORE_CLOCK_SKEW_MAX_MS;
	if (!r->measured || a <= max_ms)
		return 0;
	return sk_error_set(err, SK_EUNAVAILABLE,
	        "clock skew: this host's clock is %lld.%03lld s %s the database server's "
	        "(limit %lld.%03lld s); not writing until the host's time is fixed (NTP)",
	        (long long)(a / 1000), (long long)(a % 1000),
	        r->skew_ms > 0 ? "ahead of" : "behind", (long long)(max_ms / 1000),
	        (long long)(max_ms % 1000));
}

const char *
sk_store_write_coll_name(sk_store_write_coll c)
{
	static const char *const names[SK_STORE_WRITE_COLLS] = { "userspaces", "claims", "events",
		"other" };

	return (unsigned)c < SK_STORE_WRITE_COLLS ? names[c] : "other";
}

/* out filled by count (NULL: all zero); their sum. */
static uint64_t
command_counts(sk_store *s, void (*count)(sk_store *, uint64_t *), uint64_t *out)
{
	uint64_t sum = 0;

	memset(out, 0, SK_STORE_WRITE_COLLS * sizeof(*out));
	if (count != NULL)
		count(s, out);
	for (int i = 0; i < SK_STORE_WRITE_COLLS; i++)
		sum += out[i];
	return sum;
}

uint64_t
sk_store_write_commands(sk_store *s, uint64_t out[SK_STORE_WRITE_COLLS])
{
	return command_counts(s, s->ops->write_commands, out);
}

uint64_t
sk_store_read_commands(sk_store *s, uint64_t out[SK_STORE_WRITE_COLLS])
{
	return command_counts(s, s->ops->read_commands, out);
}

int64_t
sk_store_rv_floor(sk_store *s, int64_t wall_ms)
{
	return s->ops->rv_floor(s, wall_ms);
}

int
sk_store_scan_packed(sk_store *s, int64_t since, sk_store_packed_fn fn, void *arg, sk_error *err)
{
	return s->ops->scan_packed(s, since, fn, arg, err);
}

void
sk_userspace_list_dispose(sk_userspace_list *l)
{
	if (l == NULL)
		return;
	for (size_t i = 0; i < l->len; i++)
		sk_userspace_free(l->items[i]);
	free(l->items);
	memset(l, 0, sizeof(*l));
}

int
sk_store_create(sk_store *s, const sk_userspace *us, sk_userspace **out, sk_error *err)
{
	*out = NULL;
	if (us->meta.name == NULL || !sk_valid_name(us->meta.name))
		return sk_error_set(err, SK_EINVALID, "metadata.name: invalid userspace name");
	if (check_user_id(us, err) != 0)
		return SK_EINVALID;
	return s->ops->create(s, us, out, err);
}

int
sk_store_update(sk_store *s, const sk_userspace *us, sk_userspace **out, sk_error *err)
{
	*out = NULL;
	if (check_user_id(us, err) != 0 || check_name(us->meta.name, err) != 0)
		return SK_EINVALID;
	return s->ops->update(s, us, out, err);
}

int
sk_store_write_status(sk_store *s, const sk_userspace *base, const sk_userspace_status *status,
        sk_userspace **out, sk_error *err)
{
	int rc = check_name(base->meta.name, err);

	*out = NULL;
	if (rc == 0 && base->meta.resource_version <= 0) /* never read from the store */
		rc = sk_error_set(err, SK_ECONFLICT,
		        "userspace \"%s\": resourceVersion %lld was never stored; read the object "
		        "first",
		        base->meta.name, (long long)base->meta.resource_version);
	return rc != 0 ? rc : s->ops->write_status(s, base, status, out, err);
}

int
sk_store_mark_deleted(sk_store *s, const char *name, sk_error *err)
{
	int rc = check_name(name, err);

	return rc != 0 ? rc : s->ops->mark_deleted(s, name, err);
}

int
sk_store_remove_finalizer(sk_store *s, const char *name, int64_t resource_version,
        const char *finalizer, sk_error *err)
{
	int rc = check_name(name, err);

	return rc != 0 ? rc : s->ops->remove_finalizer(s, name, resource_version, finalizer, err);
}

int
sk_store_remove(sk_store *s, const char *name, sk_error *err)
{
	int rc = check_name(name, err);

	return rc != 0 ? rc : s->ops->remove(s, name, err);
}

int
sk_store_event(sk_store *s, const char *object, const char *uid, const char *type,
        const char *reason, const char *message, sk_error *err)
{
	if (object == NULL || type == NULL || reason == NULL)
		return sk_error_set(
		        err, SK_EINVALID, "event: object, type and reason are required");
	return s->ops->event(s, object, uid ? uid : "", type, reason, message, err);
}

int
sk_store_events(sk_store *s, const char *object, const char *uid, size_t limit, sk_event_list *out,
        sk_error *err)
{
	memset(out, 0, sizeof(*out));
	return s->ops->events(s, object, uid, limit, out, err);
}

void
sk_event_dispose(sk_event *ev)
{
	free(ev->object);
	free(ev->uid);
	free(ev->type);
	free(ev->reason);
	free(ev->message);
	free(ev->source);
	memset(ev, 0, sizeof(*ev));
}

void
sk_event_list_dispose(sk_event_list *l)
{
	if (l == NULL)
		return;
	for (size_t i = 0; i < l->len; i++)
		sk_event_dispose(&l->items[i]);
	free(l->items);
	memset(l, 0, sizeof(*l));
}

/* ---- leases: read, decide (lease.c), compare-and-swap ---- */

static int
lease_args(const char *name, const char *holder, sk_error *err)
{
	if (name == NULL || *name == '\0')
		return sk_error_set(err, SK_EINVALID, "lease: name required");
	if (holder == NULL || *holder == '\0')
		return sk_error_set(err, SK_EINVALID, "lease \"%s\": holder required", name);
	return 0;
}

/* A take-over writes only over the version its caller observed. */
static int
lease_unchanged(const sk_lease *cur, bool found, int64_t seen_version, sk_error *err)
{
	if (seen_version <= 0 || (found && cur->version == seen_version))
		return 0;
	if (!found)
		return 0; /* sk_store_lease_next: not found */
	return sk_error_set(err, SK_ECONFLICT,
	        "lease \"%s\": changed since it was observed (version %lld, now %lld)", cur->name,
	        (long long)seen_version, (long long)cur->version);
}

static int
lease_write(sk_store *s, sk_lease_op op, const char *name, const char *holder, int64_t duration_ms,
        int64_t seen_version, sk_lease *out, sk_error *err)
{
	sk_lease cur, next;
	bool found;
	int rc;

	memset(&cur, 0, sizeof(cur));
	memset(&next, 0, sizeof(next));
	rc = s->ops->lease_get(s, name, &cur, err);
	if (rc != 0 && rc != SK_ENOTFOUND)
		return rc;
	found = rc == 0;
	rc = lease_unchanged(&cur, found, seen_version, err);
	if (rc == 0)
		rc = sk_store_lease_next(found ? &cur : NULL, op, name, holder, duration_ms,
		        sk_now_ms(), &next, err);
	if (rc == 0 && op == SK_LEASE_RELEASE && cur.holder[0] == '\0')
		goto done; /* already released: nothing to write */
	if (rc == 0)
		rc = s->ops->lease_swap(s, found ? &cur : NULL, &next, err);
done:
	if (rc == 0 && out != NULL) {
		*out = next;
		memset(&next, 0, sizeof(next));
	}
	sk_lease_dispose(&next);
	if (found)
		sk_lease_dispose(&cur);
	return rc;
}

int
sk_store_lease_acquire(sk_store *s, const char *name, const char *holder, int64_t duration_ms,
        sk_lease *out, sk_error *err)
{
	int rc = lease_args(name, holder, err);

	if (rc == 0 && duration_ms <= 0)
		rc = sk_error_set(
		        err, SK_EINVALID, "lease \"%s\": duration must be positive", name);
	return rc != 0 ? rc
	               : lease_write(s, SK_LEASE_ACQUIRE, name, holder, duration_ms, 0, out, err);
}

int
sk_store_lease_take_over(sk_store *s, const sk_lease *seen, const char *holder, int64_t duration_ms,
        sk_lease *out, sk_error *err)
{
	int rc = lease_args(seen ? seen->name : NULL, holder, err);

	if (rc == 0 && (duration_ms <= 0 || seen->version <= 0))
		rc = sk_error_set(err, SK_EINVALID,
		        "lease \"%s\": take-over needs a positive duration and the version seen",
		        seen->name);
	return rc != 0 ? rc
	               : lease_write(s, SK_LEASE_TAKE_OVER, seen->name, holder, duration_ms,
	                         seen->version, out, err);
}

int
sk_store_lease_renew(
        sk_store *s, const char *name, const char *holder, sk_lease *out, sk_error *err)
{
	int rc = lease_args(name, holder, err);

	return rc != 0 ? rc : lease_write(s, SK_LEASE_RENEW, name, holder, 0, 0, out, err);
}

int
sk_store_lease_release(sk_store *s, const char *name, const char *holder, sk_error *err)
{
	int rc = lease_args(name, holder, err);

	return rc != 0 ? rc : lease_write(s, SK_LEASE_RELEASE, name, holder, 0, 0, NULL, err);
}

int
sk_store_lease_list(sk_store *s, sk_lease_list *out, sk_error *err)
{
	memset(out, 0, sizeof(*out));
	return s->ops->lease_list(s, out, err);
}
