/*
 * spacectl diff: what apply would change, as unified diffs (diffutils
 * `diff -u`) between the stored object and the input with defaults applied.
 * Exit 0: no differences; 1: differences; 2 or more: an error.
 */
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spacectl.h"

extern char **environ;

static const sk_cli_help help = {
	"diff",
	"spacectl diff -f path ...",
	"Prints a unified diff per object between the stored object (live) and the\n"
	"input after defaults (merged): metadata name, labels, annotations and spec.\n"
	"New objects diff against nothing. An object being deleted, or whose\n"
	"spec.userID another object holds (apply refuses both), is said so on stderr\n"
	"with apply's message and counts as a difference. Exit 0 when apply would\n"
	"change nothing, 1 when it would or would refuse, 2 or more on an error\n"
	"(3: database unavailable).\n"
	"\n"
	"Flags:\n"
	"  -f, --filename PATH   file, directory or - (repeatable, required)\n"
	"\n"
	"Example:\n"
	"  spacectl diff -f manifests/examples/ && echo up to date\n",
};

#define DIFF_ERROR 2

static int
write_yaml(const char *path, const json_t *v)
{
	sk_buf buf = SK_BUF_INIT(0);
	sk_error err;
	FILE *f = fopen(path, "w");
	int rc = 0;

	sk_error_clear(&err);
	if (f == NULL)
		return SK_EIO;
	if (v && sk_json_to_yaml(v, &buf, &err) != 0)
		rc = SK_EINVALID;
	if (rc == 0 && buf.len > 0 && fwrite(buf.data, 1, buf.len, f) != buf.len)
		rc = SK_EIO;
	if (fclose(f) != 0)
		rc = SK_EIO;
	sk_buf_dispose(&buf);
	return rc;
}

/* Runs diff -u; returns its exit status (0 same, 1 different, 2 trouble). */
static int
run_diff(const char *name, const char *live_path, const char *merged_path)
{
	char *live_label = sk_asprintf("live/%s", name);
	char *merged_label = sk_asprintf("merged/%s", name);
	char *argv[] = { "diff", "-u", "--label", live_label, "--label", merged_label,
		(char *)live_path, (char *)merged_path, NULL };
	pid_t pid;
	int status = 0, rc;

	fflush(stdout);
	rc = posix_spawnp(&pid, "diff", NULL, NULL, argv, environ);
	free(live_label);
	free(merged_label);
	if (rc != 0) {
		sk_cli_errorf("cannot run diff (diffutils): %s", strerror(rc));
		return DIFF_ERROR;
	}
	while (waitpid(pid, &status, 0) < 0) {
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) > 1) {
		sk_cli_errorf("diff failed for userspace/%s", name);
		return DIFF_ERROR;
	}
	return WEXITSTATUS(status);
}

/* apply refuses an object being deleted (apply.c, preflight_item): so does diff. */
static int
check_deleting(const sk_userspace *live, const sk_doc *doc)
{
	if (live == NULL || live->meta.deletion_ms == 0)
		return 0;
	sk_cli_errorf("userspace/%s is being deleted; apply would refuse it until the deletion "
	              "has finished (%s)",
	        live->meta.name, sk_cli_doc_where(doc, "metadata.name"));
	return SK_EXIT_FAIL;
}

/* apply refuses a spec.userID that another object holds: so does diff,
 * with apply's message. users maps each stored userID to its object's name. */
static int
check_user_id(json_t *users, const sk_userspace *want, const sk_doc *doc)
{
	const char *holder = json_string_value(json_object_get(users, want->spec.user_id));

	if (holder == NULL || strcmp(holder, want->meta.name) == 0)
		return 0;
	sk_cli_user_id_taken(want, doc, holder);
	return SK_EXIT_FAIL;
}

/* Every stored userID and the name that holds it; NULL (printed) on an error. */
static json_t *
stored_user_ids(sk_store *st, int *rc)
{
	sk_userspace_list all = { NULL, 0, 0 };
	sk_error err;
	json_t *users;

	sk_error_clear(&err);
	if ((*rc = sk_store_list(st, NULL, &all, &err)) != 0) {
		sk_cli_errorf("%s", err.message);
		*rc = *rc == SK_EUNAVAILABLE || *rc == SK_ETIMEOUT ? SK_EXIT_UNAVAILABLE
		                                                   : DIFF_ERROR;
		return NULL;
	}
	users = json_object();
	for (size_t i = 0; i < all.len; i++) {
		if (all.items[i]->spec.user_id != NULL)
			json_object_set_new(users, all.items[i]->spec.user_id,
			        json_string(all.items[i]->meta.name));
	}
	sk_userspace_list_dispose(&all);
	return users;
}

static int
diff_one(sk_store *st, const sk_userspace *want, const sk_doc *doc, const char *dir)
{
	char live_path[600], merged_path[600];
	sk_userspace *live = NULL;
	json_t *live_json = NULL, *merged_json = sk_cli_desired_json(want);
	sk_error err;
	int rc;

	sk_error_clear(&err);
	rc = sk_store_get(st, want->meta.name, &live, &err);
	if (rc != 0 && rc != SK_ENOTFOUND) {
		sk_cli_errorf("%s", err.message);
		json_decref(merged_json);
		return rc == SK_EUNAVAILABLE || rc == SK_ETIMEOUT ? SK_EXIT_UNAVAILABLE
		                                                  : DIFF_ERROR;
	}
	if (live)
		live_json = sk_cli_desired_json(live);
	snprintf(live_path, sizeof(live_path), "%s/live", dir);
	snprintf(merged_path, sizeof(merged_path), "%s/merged", dir);
	if (write_yaml(live_path, live_json) != 0 || write_yaml(merged_path, merged_json) != 0) {
		sk_cli_errorf("cannot write temporary files in %s", dir);
		rc = DIFF_ERROR;
	} else {
		rc = run_diff(want->meta.name, live_path, merged_path);
		if (rc < DIFF_ERROR && check_deleting(live, doc) != 0)
			rc = SK_EXIT_FAIL;
	}
	unlink(live_path);
	unlink(merged_path);
	json_decref(live_json);
	json_decref(merged_json);
	sk_userspace_free(live);
	return rc;
}

static int
diff_all(const sk_cli_input *in)
{
	char dir[] = "/tmp/spacectl-diff-XXXXXX";
	sk_store *st = NULL;
	json_t *users;
	int rc, exit_code = 0;

	if ((rc = sk_cli_store_open(&st)) != SK_EXIT_OK)
		return rc == SK_EXIT_UNAVAILABLE ? rc : DIFF_ERROR;
	sk_cli_records_warn(st);
	if (mkdtemp(dir) == NULL) {
		sk_cli_errorf("cannot create a temporary directory");
		sk_store_close(st);
		return DIFF_ERROR;
	}
	users = stored_user_ids(st, &exit_code);
	for (size_t i = 0; users != NULL && i < in->len; i++) {
		rc = diff_one(st, in->objs[i], in->docs.items[i], dir);
		if (rc < DIFF_ERROR && check_user_id(users, in->objs[i], in->docs.items[i]) != 0)
			rc = SK_EXIT_FAIL;
		if (rc > exit_code)
			exit_code = rc;
		if (rc >= DIFF_ERROR)
			break;
	}
	json_decref(users);
	rmdir(dir);
	sk_store_close(st);
	return exit_code;
}

int
sk_cmd_diff(int argc, char **argv)
{
	sk_cli_strv files = { NULL, 0 };
	sk_cli_input in;
	int rc = sk_cli_parse_files_only(argc, argv, &help, &files);

	memset(&in, 0, sizeof(in));
	if (rc == SK_CLI_CONTINUE) {
		if (sk_cli_input_load(&in, files.items, files.len) != SK_EXIT_OK)
			rc = DIFF_ERROR;
		else
			rc = diff_all(&in);
	}
	sk_cli_input_dispose(&in);
	sk_cli_strv_dispose(&files);
	return rc;
}
