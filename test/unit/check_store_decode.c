/*
 * Unit tests for the direct read of a stored document (pkg/store/codec_read.c):
 * what the codec writes it reads itself (no jansson tree), to the very
 * object the general path (BSON -> JSON -> sk_userspace_decode) gives; what
 * it does not take (odd types, values the decoder rejects, a migration) it
 * leaves to the general path, so sk_store_userspace_from_doc answers as
 * the general path does, errors included.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../testutil.h"
#include "store/store_int.h"

Suite *sk_suite_store_decode(void);

/* Objects as spacectl apply and the controller write them: every spec field
 * set or left to its default, status with conditions and drift, text that
 * is not ASCII. */
static const char *const objects[] = {
	"{\"metadata\":{\"name\":\"a\"},\"spec\":{\"userID\":\"a\"}}",
	"{\"metadata\":{\"name\":\"alice\",\"labels\":{\"team\":\"r\",\"app.kubernetes.io/name\":"
	"\"s\"},\"annotations\":{\"spacekeeper.dev/paused\":\"true\",\"x/$n\":\"a=b\"}},"
	"\"spec\":{\"userID\":\"alice.01\",\"provider\":\"cube\",\"template\":\"python\","
	"\"mode\":\"Paused\",\"resources\":{\"cpuCount\":4,\"memoryMB\":2048},"
	"\"lifecycle\":{\"idleTimeout\":\"90s\",\"onTimeout\":\"kill\",\"autoResume\":false},"
	"\"env\":{\"API\":\"fast\",\"EMPTY\":\"\"},\"metadata\":{\"project\":\"p-1\"},"
	"\"deletionPolicy\":\"Retain\",\"health\":{\"unhealthyAfter\":\"2h5s\","
	"\"remediation\":\"Replace\"},\"workspace\":{\"paths\":[\"/home/user\",\"/data\"]}},"
	"\"status\":{\"phase\":\"Degraded\",\"sandboxID\":\"isb-1\",\"observedGeneration\":3,"
	"\"message\":\"\",\"lastReconcileTime\":\"2026-12-01T10:00:02.345Z\","
	"\"lastActivityTime\":\"2026-12-01T09:00:00Z\",\"provider\":\"cube\",\"conditions\":["
	"{\"type\":\"Ready\",\"status\":\"False\",\"reason\":\"Why\",\"message\":\"line \\\"2\\\""
	" \\u00e9\\n\",\"lastTransitionTime\":\"2026-12-01T10:00:01Z\",\"observedGeneration\":7},"
	"{\"type\":\"Synced\",\"status\":\"True\"}],\"drift\":[{\"type\":"
	"\"DataPlaneUnreachable\",\"sandboxID\":\"isb-1\",\"since\":\"2026-12-01T10:00:00Z\","
	"\"detail\":\"504\"},{\"type\":\"Missing\"}]}}",
	"{\"metadata\":{\"name\":\"zero\"},\"spec\":{\"userID\":\"z\",\"lifecycle\":"
	"{\"idleTimeout\":\"0s\"}},\"status\":{\"phase\":\"Idle\"}}",
	/* status.network: the policy applied live (read by the JSON codec) */
	"{\"metadata\":{\"name\":\"net\"},\"spec\":{\"userID\":\"n\"},\"status\":{"
	"\"phase\":\"Running\",\"sandboxID\":\"isb-2\",\"network\":{\"sandboxID\":\"isb-2\","
	"\"applied\":\"internet Deny, allowOut 10.0.0.0/8\"}}}",
};

static sk_userspace *
object(const char *json)
{
	json_error_t jerr;
	json_t *j = json_loads(json, 0, &jerr);
	sk_userspace *us = NULL;
	sk_error err = { 0 };

	ck_assert_msg(j != NULL, "test JSON: %s", jerr.text);
	ck_assert_msg(sk_userspace_decode(j, &us, &err) == 0, "decode: %s", err.message);
	json_decref(j);
	us->meta.uid = sk_strdup("5f0c-uid");
	us->meta.generation = 3;
	us->meta.resource_version = 1099511627776LL + 17;
	us->meta.creation_ms = 1700000000123;
	us->meta.finalizers = sk_calloc(1, sizeof(char *));
	us->meta.finalizers[0] = sk_strdup(SK_FINALIZER);
	us->meta.n_finalizers = 1;
	return us;
}

static void
assert_same(const sk_userspace *a, const sk_userspace *b)
{
	sk_error err = { 0 };
	sk_packed_userspace *pa = sk_store_pack(a, &err), *pb = sk_store_pack(b, &err);

	ck_assert_ptr_nonnull(pa);
	ck_assert_ptr_nonnull(pb);
	/* metadata (but resourceVersion) and spec byte for byte, then status */
	ck_assert(sk_packed_status_only_change(pa, pb));
	ck_assert(sk_userspace_status_equal(&a->status, &b->status));
	ck_assert_int_eq(a->meta.resource_version, b->meta.resource_version);
	ck_assert_uint_eq(sk_packed_size(pa), sk_packed_size(pb));
	sk_packed_free(pa);
	sk_packed_free(pb);
}

/* The codec's documents: read directly, to the object written and to what
 * the general path reads. */
START_TEST(test_codec_documents)
{
	for (size_t i = 0; i < sizeof(objects) / sizeof(objects[0]); i++) {
		sk_userspace *us = object(objects[i]), *direct = NULL, *general = NULL;
		sk_error err = { 0 };
		bson_t *doc = sk_store_doc_from_userspace(us, &err);

		ck_assert_msg(doc != NULL, "encode %zu: %s", i, err.message);
		ck_assert_msg(sk_store_userspace_read(doc, &direct) == 0,
		        "object %zu went to the general path", i);
		ck_assert_int_eq(sk_store_userspace_from_doc_general(doc, &general, &err), 0);
		assert_same(direct, general);
		assert_same(direct, us);
		ck_assert(sk_userspace_spec_equal(&direct->spec, &us->spec));
		ck_assert_str_eq(direct->meta.finalizers[0], SK_FINALIZER);
		ck_assert_int_eq(direct->meta.creation_ms, 1700000000123);
		sk_userspace_free(direct);
		sk_userspace_free(general);
		sk_userspace_free(us);
		bson_destroy(doc);
	}
}
END_TEST

/* Documents the direct read does not take (extended JSON, as a foreign
 * writer could store them): sk_store_userspace_from_doc answers as the
 * general path does, the same object or the same error. */
static const char *const foreign[] = {
	/* a number type the codec never writes */
	"{\"metadata\":{\"name\":\"a\"},\"spec\":{\"userID\":\"a\",\"resources\":{\"cpuCount\":2.0}"
	"}}",
	/* a map as an object, not [{k, v}] */
	"{\"metadata\":{\"name\":\"a\",\"labels\":{\"team\":\"x\"}},\"spec\":{\"userID\":\"a\"}}",
	/* values the decoder rejects */
	"{\"metadata\":{\"name\":\"a\"},\"spec\":{\"userID\":\"a\",\"mode\":\"Asleep\"}}",
	"{\"metadata\":{\"name\":\"a\"},\"spec\":{\"userID\":\"a\",\"lifecycle\":"
	"{\"idleTimeout\":\"soon\"}}}",
	"{\"metadata\":{\"name\":\"a\"},\"spec\":{\"userID\":\"a\"},\"status\":{\"phase\":\"Odd\"}"
	"}",
	"{\"metadata\":{\"name\":\"a\"},\"spec\":{\"userID\":7}}",
	"{\"metadata\":{},\"spec\":{\"userID\":\"a\"}}",
	"{\"metadata\":{\"name\":\"a\"},\"spec\":null}",
	/* a migration (sk_migration_from_json decides it) */
	"{\"metadata\":{\"name\":\"a\"},\"spec\":{\"userID\":\"a\"},\"status\":{\"migration\":"
	"{\"phase\":\"Nope\"}}}",
	/* a key given twice */
	"{\"metadata\":{\"name\":\"a\"},\"spec\":{\"userID\":\"a\",\"userID\":\"b\"}}",
};

START_TEST(test_foreign_documents)
{
	for (size_t i = 0; i < sizeof(foreign) / sizeof(foreign[0]); i++) {
		bson_error_t berr;
		bson_t *doc = bson_new_from_json((const uint8_t *)foreign[i], -1, &berr);
		sk_userspace *direct = NULL, *general = NULL, *both = NULL;
		sk_error e1 = { 0 }, e2 = { 0 };
		int rc1, rc2;

		ck_assert_msg(doc != NULL, "test document %zu: %s", i, berr.message);
		ck_assert_msg(sk_store_userspace_read(doc, &direct) == SK_EINVALID,
		        "document %zu was read directly", i);
		ck_assert_ptr_null(direct);
		rc1 = sk_store_userspace_from_doc(doc, &both, &e1);
		rc2 = sk_store_userspace_from_doc_general(doc, &general, &e2);
		ck_assert_int_eq(rc1, rc2);
		if (rc1 != 0)
			ck_assert_str_eq(e1.message, e2.message);
		else
			assert_same(both, general);
		sk_userspace_free(both);
		sk_userspace_free(general);
		bson_destroy(doc);
	}
}
END_TEST

/* Store-owned metadata is typed BSON: the dates and int64 of the codec. */
START_TEST(test_owned_fields)
{
	const char *json = "{\"metadata\":{\"name\":\"a\",\"uid\":\"u-1\",\"generation\":"
	                   "{\"$numberLong\":\"4\"},\"resourceVersion\":{\"$numberLong\":"
	                   "\"170000000000\"},\"creationTimestamp\":{\"$date\":{\"$numberLong\":"
	                   "\"1700000000123\"}},\"deletionTimestamp\":\"not a date\","
	                   "\"finalizers\":[\"f/1\",3,\"f/2\"]},\"spec\":{\"userID\":\"a\"}}";
	bson_error_t berr;
	bson_t *doc = bson_new_from_json((const uint8_t *)json, -1, &berr);
	sk_userspace *direct = NULL, *general = NULL;
	sk_error err = { 0 };

	ck_assert_ptr_nonnull(doc);
	ck_assert_int_eq(sk_store_userspace_read(doc, &direct), 0);
	ck_assert_int_eq(sk_store_userspace_from_doc_general(doc, &general, &err), 0);
	ck_assert_str_eq(direct->meta.uid, "u-1");
	ck_assert_int_eq(direct->meta.generation, 4);
	ck_assert_int_eq(direct->meta.resource_version, 170000000000LL);
	ck_assert_int_eq(direct->meta.creation_ms, 1700000000123);
	ck_assert_int_eq(direct->meta.deletion_ms, 0); /* not a BSON date: unset */
	ck_assert_uint_eq(direct->meta.n_finalizers, 2);
	ck_assert_str_eq(direct->meta.finalizers[1], "f/2");
	assert_same(direct, general);
	sk_userspace_free(direct);
	sk_userspace_free(general);
	bson_destroy(doc);
}
END_TEST

Suite *
sk_suite_store_decode(void)
{
	Suite *s = suite_create("store_decode");
	TCase *tc = tcase_create("decode");

	tcase_add_test(tc, test_codec_documents);
	tcase_add_test(tc, test_foreign_documents);
	tcase_add_test(tc, test_owned_fields);
	suite_add_tcase(s, tc);
	return s;
}
