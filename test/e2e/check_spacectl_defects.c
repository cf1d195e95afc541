/*
 * End-to-end tests of three defects: orphans are drift (spacectl
 * drift --config lists the sandbox delete --force left behind), events are
 * keyed by the object's UID (a re-created object does not inherit its
 * predecessor's), annotate and label, and diff agreeing with apply on an
 * object being deleted.
 */
#include <check.h>
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../testutil.h"
#include "spacectl_testlib.h"

Suite *sk_suite_spacectl_defects(void);

#define SIM_KEY "e2b_0000000000000000000000000000000000000000"

static size_t
discard(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return size * n;
}

/* Creates a sandbox at the simulator as the controller would (managed, with a user). */
static void
sim_create_managed(const char *sim_url, const char *user_id)
{
	CURL *h = curl_easy_init();
	struct curl_slist *hdr = NULL;
	char url[256], body[512];
	long status = 0;

	snprintf(url, sizeof(url), "%s/sandboxes", sim_url);
	snprintf(body, sizeof(body),
	        "{\"templateID\": \"base\", \"timeout\": 300, \"metadata\": "
	        "{\"managed_by\": \"spacekeeper\", \"user_id\": \"%s\", \"userspace\": \"%s\"}}",
	        user_id, user_id);
	hdr = curl_slist_append(hdr, "Content-Type: application/json");
	hdr = curl_slist_append(hdr, "X-API-Key: " SIM_KEY);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	ck_assert_msg(status >= 200 && status < 300, "POST /sandboxes: %ld", status);
}

/* A ControllerConfig with one e2b provider "sim" at sim_url; the path is malloc'd. */
static char *
sim_config(const char *sim_url)
{
	char *key = ctl_write_text("sim.key", SIM_KEY "\n"), *cfg;
	char yaml[1400];

	ck_assert_int_eq(chmod(key, 0600), 0);
	snprintf(yaml, sizeof(yaml),
	        "apiVersion: spacekeeper.dev/v1alpha1\nkind: ControllerConfig\n"
	        "providers:\n  - name: sim\n    type: e2b\n    apiURL: %s\n"
	        "    sandboxURL: %s\n    apiKeyFile: %s\n",
	        sim_url, sim_url, key);
	cfg = ctl_write_text("sim.yaml", yaml);
	free(key);
	return cfg;
}

static void
apply_us(const char *name, const char *user_id)
{
	char *out, *err, *p = ctl_write_us("us.yaml", name, user_id, "");

	ck_assert_msg(ctl(&out, &err, "apply", "-f", p, NULL) == 0, "%s", err);
	ctl_free(&out, &err);
	free(p);
}

/* ------------------------------------------------------------ item 4 */

START_TEST(force_delete_leaves_an_orphan_drift_lists)
{
	char sim_url[128], *cfg, *out, *err;
	pid_t sim = sk_test_sim_start(NULL, sim_url, sizeof(sim_url));
	json_t *v, *o;

	cfg = sim_config(sim_url);
	apply_us("ghost", "ghost");
	sim_create_managed(sim_url, "ghost");
	/* the sandbox has its UserSpace: no drift */
	ck_assert_int_eq(ctl(&out, &err, "drift", "--config", cfg, NULL), 0);
	ASSERT_HAS(err, "No drift.");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "delete", "us", "ghost", "--force", NULL), 0);
	ctl_free(&out, &err);
	/* without the providers, the database alone cannot see it */
	ck_assert_int_eq(ctl(&out, &err, "drift", NULL), 0);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "drift", "--config", cfg, NULL), 1);
	ASSERT_HAS(out, "Orphan");
	ASSERT_HAS(out, "ghost");
	ASSERT_HAS(out, "provider sim");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "drift", "--config", cfg, "-o", "json", NULL), 1);
	v = json_loads(out, 0, NULL);
	ck_assert_ptr_nonnull(v);
	ck_assert_int_eq(json_array_size(json_object_get(v, "orphans")), 1);
	o = json_array_get(json_object_get(v, "orphans"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(o, "provider")), "sim");
	ck_assert_str_eq(json_string_value(json_object_get(o, "userID")), "ghost");
	ck_assert_int_gt(strlen(json_string_value(json_object_get(o, "sandboxID"))), 0);
	json_decref(v);
	ctl_free(&out, &err);
	/* a label selector matches no orphan */
	ck_assert_int_eq(ctl(&out, &err, "drift", "--config", cfg, "-l", "a=b", NULL), 0);
	ctl_free(&out, &err);
	free(cfg);
	sk_test_stop(sim, true);
}
END_TEST

START_TEST(drift_orphans_provider_down_is_unavailable)
{
	char url[64], *cfg, *out, *err;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d", sk_test_free_port());
	cfg = sim_config(url);
	ck_assert_int_eq(ctl(&out, &err, "drift", "--config", cfg, "--timeout", "2s", NULL), 3);
	ASSERT_HAS(err, "provider sim");
	ctl_free(&out, &err);
	free(cfg);
}
END_TEST

START_TEST(orphan_events_are_shown_with_orphans_flag)
{
	sk_store *st = ctl_open_store();
	sk_error e = { 0 };
	char *out, *err;

	/* what the controller records for an orphan (pkg/controller/observe.c) */
	ck_assert_int_eq(sk_store_event(st, SK_STORE_ORPHANS, NULL, "Warning", "Orphan",
	                         "sandbox i9 (provider sim, user_id ghost) has no UserSpace", &e),
	        0);
	sk_store_close(st);
	ck_assert_int_eq(ctl(&out, &err, "events", "--orphans", NULL), 0);
	ASSERT_HAS(out, "(orphans)");
	ASSERT_HAS(out, "sandbox i9 (provider sim, user_id ghost)");
	ASSERT_HASNT(out, "userspace/_orphans");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "events", NULL), 0);
	ASSERT_HAS(out, "(orphans)");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "events", "_orphans", NULL), 2);
	ASSERT_HAS(err, "--orphans");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "events", "--orphans", "alice", NULL), 2);
	ctl_free(&out, &err);
}
END_TEST

/* ------------------------------------------------------------ item 5 */

/* Records an event on the stored object as the controller does (by its uid). */
static void
record_event(const char *name, const char *reason, const char *message)
{
	sk_store *st = ctl_open_store();
	sk_userspace *us = ctl_stored(name);
	sk_error e = { 0 };

	ck_assert_ptr_nonnull(us);
	ck_assert_ptr_nonnull(us->meta.uid);
	ck_assert_int_eq(sk_store_event(st, name, us->meta.uid, "Normal", reason, message, &e), 0);
	sk_userspace_free(us);
	sk_store_close(st);
}

START_TEST(recreated_object_does_not_inherit_events)
{
	char *out, *err;

	apply_us("again", "again");
	record_event("again", "Created", "created sandbox iold1");
	ck_assert_int_eq(ctl(&out, &err, "events", "again", NULL), 0);
	ASSERT_HAS(out, "iold1");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "delete", "us", "again", "--force", NULL), 0);
	ctl_free(&out, &err);
	/* gone: its history is still there under its name */
	ck_assert_int_eq(ctl(&out, &err, "events", "again", NULL), 0);
	ASSERT_HAS(out, "iold1");
	ctl_free(&out, &err);
	apply_us("again", "again");
	ck_assert_int_eq(ctl(&out, &err, "events", "again", NULL), 0);
	ASSERT_HASNT(out, "iold1");
	ASSERT_HAS(err, "No events found.");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "describe", "us", "again", NULL), 0);
	ASSERT_HASNT(out, "iold1");
	ASSERT_HAS(out, "Events:             <none>");
	ctl_free(&out, &err);
	record_event("again", "Created", "created sandbox inew2");
	ck_assert_int_eq(ctl(&out, &err, "events", "again", NULL), 0);
	ASSERT_HAS(out, "inew2");
	ASSERT_HASNT(out, "iold1");
	ASSERT_HAS(out, "Created   userspace/again   1 "); /* not counted with the old one */
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "describe", "us", "again", NULL), 0);
	ASSERT_HAS(out, "inew2");
	ASSERT_HASNT(out, "iold1");
	ctl_free(&out, &err);
}
END_TEST

/* ------------------------------------------------------------ item 3 */

static const char *
annotation(const sk_userspace *us, const char *key)
{
	return sk_kvlist_get(&us->meta.annotations, key);
}

START_TEST(annotate_sets_overwrites_and_removes)
{
	char *out, *err;
	sk_userspace *us;
	int64_t rv;

	apply_us("ann", "ann");
	us = ctl_stored("ann");
	rv = us->meta.resource_version;
	sk_userspace_free(us);
	ck_assert_int_eq(ctl(&out, &err, "annotate", "userspace", "ann",
	                         "spacekeeper.dev/paused=true", "note=a b", NULL),
	        0);
	ck_assert_str_eq(out, "userspace/ann annotated\n");
	ctl_free(&out, &err);
	us = ctl_stored("ann");
	ck_assert_str_eq(annotation(us, "spacekeeper.dev/paused"), "true");
	ck_assert_str_eq(annotation(us, "note"), "a b");
	ck_assert_int_gt(us->meta.resource_version, rv);
	ck_assert_int_eq(us->meta.generation, 1); /* metadata only: the spec is the same */
	sk_userspace_free(us);
	/* the same value again: nothing to write */
	ck_assert_int_eq(ctl(&out, &err, "annotate", "us/ann", "note=a b", NULL), 0);
	ck_assert_str_eq(out, "userspace/ann not annotated\n");
	ctl_free(&out, &err);
	/* another value needs --overwrite, as in kubectl */
	ck_assert_int_eq(ctl(&out, &err, "annotate", "us", "ann", "note=c", NULL), 1);
	ASSERT_HAS(err,
	        "--overwrite is false but found the following declared annotation(s): "
	        "'note' already has a value (a b)");
	ctl_free(&out, &err);
	us = ctl_stored("ann");
	ck_assert_str_eq(annotation(us, "note"), "a b");
	sk_userspace_free(us);
	ck_assert_int_eq(ctl(&out, &err, "annotate", "ann", "note=c", "--overwrite", NULL), 0);
	ctl_free(&out, &err);
	ck_assert_int_eq(
	        ctl(&out, &err, "annotate", "us", "ann", "spacekeeper.dev/paused-", NULL), 0);
	ASSERT_HAS(out, "userspace/ann annotated");
	ctl_free(&out, &err);
	us = ctl_stored("ann");
	ck_assert_ptr_null(annotation(us, "spacekeeper.dev/paused"));
	ck_assert_str_eq(annotation(us, "note"), "c");
	sk_userspace_free(us);
	/* removing what is not there: a warning, not an error */
	ck_assert_int_eq(ctl(&out, &err, "annotate", "us", "ann", "gone-", NULL), 0);
	ASSERT_HAS(err, "annotation \"gone\" not found.");
	ASSERT_HAS(out, "userspace/ann not annotated");
	ctl_free(&out, &err);
}
END_TEST

START_TEST(annotate_and_label_errors)
{
	char *out, *err;

	apply_us("lab", "lab");
	ck_assert_int_eq(ctl(&out, &err, "annotate", "us", "lab", "novalue", NULL), 2);
	ASSERT_HAS(err, "invalid annotation format: novalue");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "label", "us", "lab", NULL), 2);
	ASSERT_HAS(err, "at least one label update is required");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "label", "pods/lab", "a=b", NULL), 2);
	ASSERT_HAS(err, "doesn't have a resource type \"pods\"");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "label", "us", "nobody", "a=b", NULL), 1);
	ASSERT_HAS(err, "userspaces \"nobody\" not found (NotFound)");
	ctl_free(&out, &err);
	/* keys and values checked as apply checks them */
	ck_assert_int_eq(ctl(&out, &err, "label", "us", "lab", "team=a b", NULL), 1);
	ASSERT_HAS(err, "metadata.labels.team");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "annotate", "us", "lab", "bad key=1", NULL), 1);
	ASSERT_HAS(err, "metadata.annotations.bad key");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "label", "us", "lab", "team=research", NULL), 0);
	ck_assert_str_eq(out, "userspace/lab labeled\n");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "label", "us", "lab", "team=ml", NULL), 1);
	ASSERT_HAS(err, "'team' already has a value (research), and --overwrite is false");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "get", "us", "-l", "team=research", NULL), 0);
	ASSERT_HAS(out, "lab");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "label", "--overwrite", "us/lab", "team=ml", NULL), 0);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "label", "us", "lab", "team-", NULL), 0);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "get", "us", "-l", "team", NULL), 0);
	ASSERT_HASNT(out, "lab");
	ctl_free(&out, &err);
}
END_TEST

#define US_PAUSED                                                                                  \
	"apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"                                  \
	"metadata:\n  name: held\n  annotations: {spacekeeper.dev/paused: 'true'}\n"               \
	"spec: {userID: held}\n"

/* A deletion held by the paused annotation: diff agrees with apply, annotate releases it. */
START_TEST(deleting_object_diff_agrees_with_apply_and_annotate_releases)
{
	char *out, *err, *p = ctl_write_text("held.yaml", US_PAUSED);
	sk_userspace *us;

	ck_assert_int_eq(ctl(&out, &err, "apply", "-f", p, NULL), 0);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "diff", "-f", p, NULL), 0);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "delete", "us", "held", "--wait=false", NULL), 0);
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "apply", "-f", p, NULL), 1);
	ASSERT_HAS(err, "being deleted");
	ctl_free(&out, &err);
	ck_assert_int_eq(ctl(&out, &err, "diff", "-f", p, NULL), 1);
	ASSERT_HAS(err, "userspace/held is being deleted; apply would refuse it");
	ASSERT_HAS(err, "held.yaml");
	ctl_free(&out, &err);
	/* the way out: remove the annotation from the object being deleted */
	ck_assert_int_eq(
	        ctl(&out, &err, "annotate", "us", "held", "spacekeeper.dev/paused-", NULL), 0);
	ASSERT_HAS(out, "userspace/held annotated");
	ctl_free(&out, &err);
	us = ctl_stored("held");
	ck_assert_ptr_nonnull(us);
	ck_assert_ptr_null(annotation(us, "spacekeeper.dev/paused"));
	ck_assert_int_ne(us->meta.deletion_ms, 0); /* still being deleted */
	sk_userspace_free(us);
	free(p);
}
END_TEST

Suite *
sk_suite_spacectl_defects(void)
{
	Suite *s = suite_create("spacectl_defects");
	TCase *tc = tcase_create("defects");

	tcase_add_checked_fixture(tc, ctl_setup, NULL);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, force_delete_leaves_an_orphan_drift_lists);
	tcase_add_test(tc, drift_orphans_provider_down_is_unavailable);
	tcase_add_test(tc, orphan_events_are_shown_with_orphans_flag);
	tcase_add_test(tc, recreated_object_does_not_inherit_events);
	tcase_add_test(tc, annotate_sets_overwrites_and_removes);
	tcase_add_test(tc, annotate_and_label_errors);
	tcase_add_test(tc, deleting_object_diff_agrees_with_apply_and_annotate_releases);
	suite_add_tcase(s, tc);
	return s;
}
