/*
 * store/mongo: the MongoDB-wire backend: opening the client pool, pings,
 * indexes, error classification, and its ops table.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mongo_int.h"

/* libmongoc's own process-wide initialisation (mongoc_init must run once
 * per process, before any client): the only process-global state here. */
static pthread_once_t mongoc_once = PTHREAD_ONCE_INIT;
static bool mongoc_ready;

static void
init_mongoc(void)
{
	mongoc_init();
	/* Library code never prints: drop libmongoc's own log lines (errors
	 * reach callers through sk_error). */
	mongoc_log_set_handler(NULL, NULL);
	mongoc_ready = true;
}

void
sk_store_global_cleanup(void)
{
	if (mongoc_ready) {
		mongoc_cleanup();
		mongoc_ready = false;
	}
}

char *
sk_store_redact_uri(const char *uri)
{
	const char *auth = strstr(uri, "://");
	const char *end, *at, *colon;

	if (auth == NULL)
		return sk_strdup(uri);
	auth += 3;
	end = auth + strcspn(auth, "/?");
	at = NULL;
	for (const char *p = auth; p < end; p++) {
		if (*p == '@')
			at = p;
	}
	if (at == NULL)
		return sk_strdup(uri);
	colon = memchr(auth, ':', (size_t)(at - auth));
	if (colon == NULL)
		return sk_strdup(uri);
	return sk_asprintf("%.*s:***%s", (int)(colon - uri), uri, at);
}

/* Duplicate key: code 11000 from MongoDB and from FerretDB's inserts;
 * FerretDB 1.24 reports a unique-index violation on update as an internal
 * error carrying SQLite's message, so that is recognised too. */
bool
sk_store_is_duplicate(const bson_error_t *e)
{
	if (e->domain == MONGOC_ERROR_STREAM || e->domain == MONGOC_ERROR_SERVER_SELECTION)
		return false;
	return e->code == 11000 || e->code == 11001 ||
	        strstr(e->message, "UNIQUE constraint failed") != NULL;
}

/* err as code, its domain the database (callers count database failures
 * by it, never by the message). */
static int
fail_as(const sk_mongo *s, const bson_error_t *e, int code, const char *what, sk_error *err)
{
	if (code == SK_EUNAVAILABLE)
		sk_error_set(err, code, "cannot reach MongoDB at %s: %s", s->uri_shown, e->message);
	else
		sk_error_set(err, code, "%s: %s", what, e->message);
	if (err != NULL)
		err->domain = SK_EDOMAIN_DATABASE;
	return code;
}

static int
classify(const bson_error_t *e)
{
	if (e->domain == MONGOC_ERROR_SERVER_SELECTION || e->domain == MONGOC_ERROR_STREAM)
		return SK_EUNAVAILABLE;
	if (e->domain == MONGOC_ERROR_CLIENT && e->code == MONGOC_ERROR_CLIENT_AUTHENTICATE)
		return SK_EUNAUTHORIZED;
	if (e->domain == MONGOC_ERROR_CLIENT || e->domain == MONGOC_ERROR_BSON)
		return SK_ERROR;
	if (sk_store_is_duplicate(e))
		return SK_ECONFLICT;
	switch (e->code) {
	case 11000:
	case 11001: return SK_ECONFLICT;
	case 13:
	case 18: return SK_EUNAUTHORIZED;
	case 50: return SK_ETIMEOUT;
	case 6: /* HostUnreachable */
	case 7: /* HostNotFound */
	case 89: /* NetworkTimeout */
	case 91: /* ShutdownInProgress */
	case 189: /* PrimarySteppedDown */
	case 262: /* ExceededTimeLimit */
	case 9001: /* SocketException */
	case 10107: /* NotWritablePrimary */
	case 11600: /* InterruptedAtShutdown */
	case 11602: /* InterruptedDueToReplStateChange */
	case 13435: /* NotPrimaryNoSecondaryOk */
	case 13436: /* NotPrimaryOrSecondary */ return SK_EUNAVAILABLE;
	default: return SK_ERROR;
	}
}

int
sk_store_fail(const sk_mongo *s, const bson_error_t *e, const char *what, sk_error *err)
{
	return fail_as(s, e, classify(e), what, err);
}

void
sk_store_conn_open(sk_mongo *s, sk_store_conn *c, const char *collection)
{
	c->client = mongoc_client_pool_pop(s->pool);
	c->coll = collection ? mongoc_client_get_collection(c->client, s->database, collection)
	                     : NULL;
}

void
sk_store_conn_close(sk_mongo *s, sk_store_conn *c)
{
	if (c->coll)
		mongoc_collection_destroy(c->coll);
	if (c->client)
		mongoc_client_pool_push(s->pool, c->client);
	c->coll = NULL;
	c->client = NULL;
}

/* Sets a timeout option unless the URI already carries it. */
static void
default_timeout(mongoc_uri_t *uri, const char *option, int64_t ms)
{
	if (ms > INT32_MAX)
		ms = INT32_MAX;
	if (!mongoc_uri_has_option(uri, option))
		mongoc_uri_set_option_as_int32(uri, option, (int32_t)ms);
}

static int
parse_uri(const char *text, int64_t timeout_ms, mongoc_uri_t **out, sk_error *err)
{
	bson_error_t berr;
	mongoc_uri_t *uri = mongoc_uri_new_with_error(text, &berr);
	char *shown;

	if (uri == NULL) {
		shown = sk_store_redact_uri(text);
		sk_error_set(err, SK_EINVALID, "invalid MongoDB URI %s: %s", shown, berr.message);
		free(shown);
		return SK_EINVALID;
	}
	default_timeout(uri, MONGOC_URI_SERVERSELECTIONTIMEOUTMS, timeout_ms);
	default_timeout(uri, MONGOC_URI_CONNECTTIMEOUTMS, timeout_ms);
	/* Reads of big lists take far longer than a connect (FerretDB's SQLite
	 * backend lists 10,000 objects in several seconds when busy); a dead
	 * server still fails fast because its socket closes, a hung one after
	 * the socket timeout. socketTimeoutMS in the URI overrides it. */
	default_timeout(uri, MONGOC_URI_SOCKETTIMEOUTMS,
	        timeout_ms * 2 > SK_STORE_SOCKET_TIMEOUT_MS ? timeout_ms * 2
	                                                    : SK_STORE_SOCKET_TIMEOUT_MS);
	if (!mongoc_uri_has_option(uri, MONGOC_URI_APPNAME))
		mongoc_uri_set_appname(uri, "spacekeeper");
	*out = uri;
	return 0;
}

static int
run_command(sk_mongo *s, const char *db, const bson_t *cmd, const char *what, sk_error *err)
{
	sk_store_conn c;
	bson_error_t berr;
	bool ok;

	sk_store_conn_open(s, &c, NULL);
	ok = mongoc_client_write_command_with_opts(c.client, db, cmd, NULL, NULL, &berr);
	sk_store_conn_close(s, &c);
	return ok ? 0 : sk_store_fail(s, &berr, what, err);
}

static int
ping(sk_mongo *s, sk_error *err)
{
	sk_store_conn c;
	bson_error_t berr;
	bson_t *cmd = BCON_NEW("ping", BCON_INT32(1));
	bool ok;

	sk_store_conn_open(s, &c, NULL);
	ok = mongoc_client_command_simple(c.client, "admin", cmd, NULL, NULL, &berr);
	sk_store_conn_close(s, &c);
	bson_destroy(cmd);
	if (ok)
		return 0;
	/* Whatever went wrong, a failed ping means the server is not usable. */
	if (classify(&berr) == SK_ERROR)
		return fail_as(s, &berr, SK_EUNAVAILABLE, "ping", err);
	return sk_store_fail(s, &berr, "ping", err);
}

/* One index per createIndexes command: FerretDB 1.24 drops the connection
 * when a multi-index request meets indexes that already exist. */
static int
create_index(sk_mongo *s, const char *coll, const char *field, const char *name, bool unique,
        int32_t ttl_s, sk_error *err)
{
	bson_t *cmd = BCON_NEW("createIndexes", BCON_UTF8(coll));
	bson_t indexes, index, key;
	char *what = sk_asprintf("create index %s on %s", name, coll);
	int rc;

	BSON_APPEND_ARRAY_BEGIN(cmd, "indexes", &indexes);
	BSON_APPEND_DOCUMENT_BEGIN(&indexes, "0", &index);
	BSON_APPEND_DOCUMENT_BEGIN(&index, "key", &key);
	BSON_APPEND_INT32(&key, field, 1);
	bson_append_document_end(&index, &key);
	BSON_APPEND_UTF8(&index, "name", name);
	if (unique)
		BSON_APPEND_BOOL(&index, "unique", true);
	if (ttl_s > 0)
		BSON_APPEND_INT32(&index, "expireAfterSeconds", ttl_s);
	bson_append_document_end(&indexes, &index);
	bson_append_array_end(cmd, &indexes);
	rc = run_command(s, s->database, cmd, what, err);
	bson_destroy(cmd);
	free(what);
	return rc;
}

static int
create_indexes(sk_mongo *s, sk_error *err)
{
	int rc = create_index(s, SK_COLL_USERSPACES, "spec.userID", SK_INDEX_USER_ID, true, 0, err);

	if (rc == 0)
		rc = create_index(s, SK_COLL_USERSPACES, "metadata.resourceVersion",
		        "metadata_resourceVersion", false, 0, err);
	if (rc == 0)
		rc = create_index(s, SK_COLL_EVENTS, "object", "object", false, 0, err);
	/* The TTL index ages events out an hour after their last occurrence.
	 * A server that rejects the option (or accepts it without enforcing it,
	 * as FerretDB may) keeps events instead: fall back to a plain index. */
	if (rc == 0)
		rc = create_index(s, SK_COLL_EVENTS, "lastTimestamp", "lastTimestamp_ttl", false,
		        SK_EVENT_TTL_S, err);
	if (rc != 0 && rc != SK_EUNAVAILABLE)
		rc = create_index(
		        s, SK_COLL_EVENTS, "lastTimestamp", "lastTimestamp", false, 0, err);
	return rc;
}

static int
ensure_indexes(sk_mongo *s, sk_error *err)
{
	int rc = SK_ERROR;

	/* Concurrent first opens can race on creating the collections: retry. */
	for (int attempt = 0; attempt < 3; attempt++) {
		rc = create_indexes(s, err);
		if (rc == 0 || rc == SK_EUNAVAILABLE)
			break;
	}
	return rc;
}

static void mongo_close(sk_store *store);
static void watch_commands(sk_mongo *s);

/* opts->uri is the URI to open (store.c resolved the default). */
int
sk_store_mongo_connect(sk_store *store, bool indexes, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	int rc = ping(s, err);

	if (rc == 0 && indexes)
		rc = ensure_indexes(s, err);
	return rc;
}

int
sk_store_open_mongo(sk_store **out, const sk_store_options *opts, sk_error *err)
{
	const char *text = opts->uri;
	mongoc_uri_t *uri = NULL;
	bson_error_t berr;
	sk_mongo *s;
	int rc;

	*out = NULL;
	pthread_once(&mongoc_once, init_mongoc);
	rc = parse_uri(text, opts->timeout_ms > 0 ? opts->timeout_ms : 3000, &uri, err);
	if (rc != 0)
		return rc;
	s = sk_calloc(1, sizeof(*s));
	s->base.ops = &sk_store_mongo_ops;
	pthread_mutex_init(&s->hlc_mu, NULL);
	sk_mongo_batches_init(s);
	s->uri_shown = sk_store_redact_uri(text);
	s->database = sk_strdup(opts->database ? opts->database : SK_DEFAULT_DATABASE);
	s->timeout_ms = opts->timeout_ms;
	s->max_skew_ms = opts->max_clock_skew_ms;
	s->pool = mongoc_client_pool_new_with_error(uri, &berr);
	mongoc_uri_destroy(uri);
	if (s->pool == NULL) {
		rc = sk_error_set(
		        err, SK_EINVALID, "MongoDB URI %s: %s", s->uri_shown, berr.message);
		goto done;
	}
	mongoc_client_pool_set_error_api(s->pool, MONGOC_ERROR_API_VERSION_2);
	watch_commands(s);
	if (!opts->lazy)
		rc = sk_store_mongo_connect(&s->base, opts->ensure_indexes, err);
done:
	if (rc != 0)
		mongo_close(&s->base);
	else
		*out = &s->base;
	return rc;
}

static bool
named(const char *cmd, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(cmd, names[i]) == 0)
			return true;
	}
	return false;
}

/* Command monitoring: counts each write and read command as it is sent,
 * by the collection it names (the value of its first field; a getMore
 * names it in "collection"). */
static void
command_started(const mongoc_apm_command_started_t *ev)
{
	static const char *const writes[] = { "insert", "update", "delete", "findAndModify" };
	static const char *const reads[] = { "find", "aggregate", "count", "distinct" };
	const char *cmd = mongoc_apm_command_started_get_command_name(ev);
	sk_mongo *s = mongoc_apm_command_started_get_context(ev);
	bool more = strcmp(cmd, "getMore") == 0;
	bool write = named(cmd, writes, sizeof(writes) / sizeof(writes[0]));
	const bson_t *body;
	bson_iter_t it;
	const char *coll = "";
	int k = SK_STORE_WRITES_OTHER;

	if (!write && !more && !named(cmd, reads, sizeof(reads) / sizeof(reads[0])))
		return;
	body = mongoc_apm_command_started_get_command(ev);
	if (bson_iter_init_find(&it, body, more ? "collection" : cmd) && BSON_ITER_HOLDS_UTF8(&it))
		coll = bson_iter_utf8(&it, NULL);
	if (strcmp(coll, SK_COLL_USERSPACES) == 0)
		k = SK_STORE_WRITES_USERSPACES;
	else if (strcmp(coll, SK_COLL_CLAIMS) == 0)
		k = SK_STORE_WRITES_CLAIMS;
	else if (strcmp(coll, SK_COLL_EVENTS) == 0)
		k = SK_STORE_WRITES_EVENTS;
	__atomic_add_fetch(write ? &s->writes[k] : &s->reads[k], 1, __ATOMIC_RELAXED);
}

static void
watch_commands(sk_mongo *s)
{
	mongoc_apm_callbacks_t *cb = mongoc_apm_callbacks_new();

	mongoc_apm_set_command_started_cb(cb, command_started);
	mongoc_client_pool_set_apm_callbacks(s->pool, cb, s);
	mongoc_apm_callbacks_destroy(cb);
}

static void
mongo_write_commands(sk_store *store, uint64_t out[SK_STORE_WRITE_COLLS])
{
	sk_mongo *s = sk_mongo_of(store);

	for (int i = 0; i < SK_STORE_WRITE_COLLS; i++)
		out[i] = __atomic_load_n(&s->writes[i], __ATOMIC_RELAXED);
}

static void
mongo_read_commands(sk_store *store, uint64_t out[SK_STORE_WRITE_COLLS])
{
	sk_mongo *s = sk_mongo_of(store);

	for (int i = 0; i < SK_STORE_WRITE_COLLS; i++)
		out[i] = __atomic_load_n(&s->reads[i], __ATOMIC_RELAXED);
}

static void
mongo_close(sk_store *store)
{
	sk_mongo *s = sk_mongo_of(store);

	if (s->pool)
		mongoc_client_pool_destroy(s->pool);
	pthread_mutex_destroy(&s->hlc_mu);
	sk_mongo_batches_destroy(s);
	free(s->database);
	free(s->uri_shown);
	free(s);
}

static int
mongo_ping(sk_store *store, sk_error *err)
{
	return ping(sk_mongo_of(store), err);
}

static int
mongo_drop(sk_store *store, sk_error *err)
{
	sk_mongo *s = sk_mongo_of(store);
	sk_store_conn c;
	mongoc_database_t *db;
	bson_error_t berr;
	bool ok;

	sk_store_conn_open(s, &c, NULL);
	db = mongoc_client_get_database(c.client, s->database);
	ok = mongoc_database_drop(db, &berr);
	mongoc_database_destroy(db);
	sk_store_conn_close(s, &c);
	return ok ? 0 : sk_store_fail(s, &berr, "drop database", err);
}

int64_t
sk_mongo_reply_count(const bson_t *reply, const char *field)
{
	bson_iter_t it;

	if (bson_iter_init_find(&it, reply, field))
		return bson_iter_as_int64(&it);
	return 0;
}

const sk_store_backend_ops sk_store_mongo_ops = {
	.name = "mongodb",
	.close = mongo_close,
	.ping = mongo_ping,
	.get = sk_mongo_get,
	.list = sk_mongo_list,
	.list_since = sk_mongo_list_since,
	.scan_packed = sk_mongo_scan_packed,
	.create = sk_mongo_create,
	.update = sk_mongo_update,
	.write_status = sk_mongo_write_status,
	.mark_deleted = sk_mongo_mark_deleted,
	.remove_finalizer = sk_mongo_remove_finalizer,
	.remove = sk_mongo_remove,
	.event = sk_mongo_event,
	.events = sk_mongo_events,
	.lease_get = sk_mongo_lease_get,
	.lease_swap = sk_mongo_lease_swap,
	.lease_list = sk_mongo_lease_list,
	.quota_insert = sk_mongo_quota_insert,
	.quota_replace = sk_mongo_quota_replace,
	.quota_status = sk_mongo_quota_status,
	.quota_list = sk_mongo_quota_list,
	.quota_remove = sk_mongo_quota_remove,
	.record_put = sk_mongo_record_put,
	.record_list = sk_mongo_record_list,
	.record_remove = sk_mongo_record_remove,
	.observation_put = sk_mongo_observation_put,
	.observation_get = sk_mongo_observation_get,
	.observation_head_put = sk_mongo_observation_head_put,
	.observation_head_get = sk_mongo_observation_head_get,
	.observation_prune = sk_mongo_observation_prune,
	.rv_floor = sk_store_mongo_rv_floor,
	.clock_check = sk_mongo_clock_check,
	.write_commands = mongo_write_commands,
	.read_commands = mongo_read_commands,
	.drop = mongo_drop,
};
