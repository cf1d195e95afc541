/* Helpers of the spacectl end-to-end tests: run the binary, write inputs, read the store. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../testutil.h"
#include "spacectl_testlib.h"

char ctl_db[96];
char ctl_dir[1024];
char ctl_env_uri[512];

void
ctl_setup(void)
{
	snprintf(ctl_db, sizeof(ctl_db), "%s", sk_test_unique_db());
	snprintf(ctl_env_uri, sizeof(ctl_env_uri), "SPACEKEEPER_MONGODB_URI=%s",
	        sk_test_mongodb_uri());
	snprintf(ctl_dir, sizeof(ctl_dir), "%s/%s", sk_test_tmpdir(), ctl_db);
	mkdir(ctl_dir, 0755);
}

void
ctl_setup_offline(void)
{
	snprintf(ctl_db, sizeof(ctl_db), "offline_%d", (int)getpid());
	snprintf(ctl_env_uri, sizeof(ctl_env_uri), "SPACEKEEPER_MONGODB_URI=mongodb://127.0.0.1:1");
	snprintf(ctl_dir, sizeof(ctl_dir), "%s/%s", sk_test_tmpdir(), ctl_db);
	mkdir(ctl_dir, 0755);
}

/* Runs `spacectl ARGS... --database DB` (NULL-terminated args); stdin may be NULL. */
static int
ctl_runv(const char *stdin_data, char **out, char **err, va_list ap)
{
	const char *argv[64];
	const char *env[] = { ctl_env_uri, NULL };
	size_t n = 0;
	const char *a;

	argv[n++] = "spacectl";
	while ((a = va_arg(ap, const char *)) != NULL && n < 60)
		argv[n++] = a;
	argv[n++] = "--database";
	argv[n++] = ctl_db;
	argv[n] = NULL;
	return sk_test_run(argv, env, stdin_data, out, err, 60);
}

int
ctl(char **out, char **err, ...)
{
	va_list ap;
	int rc;

	va_start(ap, err);
	rc = ctl_runv(NULL, out, err, ap);
	va_end(ap);
	return rc;
}

int
ctl_stdin(const char *in, char **out, char **err, ...)
{
	va_list ap;
	int rc;

	va_start(ap, err);
	rc = ctl_runv(in, out, err, ap);
	va_end(ap);
	return rc;
}

void
ctl_free(char **out, char **err)
{
	free(*out);
	free(*err);
	*out = *err = NULL;
}

/* Writes DIR/name (binary-safe) and returns a malloc'd path. */
char *
ctl_write_file(const char *name, const char *data, size_t len)
{
	char *path = sk_asprintf("%s/%s", ctl_dir, name);
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(data, 1, len, f), len);
	fclose(f);
	return path;
}

char *
ctl_write_text(const char *name, const char *text)
{
	return ctl_write_file(name, text, strlen(text));
}

char *
ctl_us_yaml(const char *name, const char *user_id, const char *extra)
{
	return sk_asprintf("apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\nmetadata:\n"
	                   "  name: %s\nspec:\n  userID: %s\n%s",
	        name, user_id, extra ? extra : "");
}

/* Writes one UserSpace document to DIR/file. */
char *
ctl_write_us(const char *file, const char *name, const char *user_id, const char *extra)
{
	char *yaml = ctl_us_yaml(name, user_id, extra);
	char *path = ctl_write_text(file, yaml);

	free(yaml);
	return path;
}

sk_store *
ctl_open_store(void)
{
	sk_store_options opts = SK_STORE_OPTIONS_INIT;
	sk_store *st = NULL;
	sk_error err;

	opts.uri = sk_test_mongodb_uri();
	opts.database = ctl_db;
	ck_assert_msg(sk_store_open(&st, &opts, &err) == 0, "store open: %s", err.message);
	return st;
}

/* The stored object, or NULL when absent. */
sk_userspace *
ctl_stored(const char *name)
{
	sk_store *st = ctl_open_store();
	sk_userspace *us = NULL;
	sk_error err;
	int rc = sk_store_get(st, name, &us, &err);

	ck_assert_msg(rc == 0 || rc == SK_ENOTFOUND, "get %s: %s", name, err.message);
	sk_store_close(st);
	return us;
}

size_t
ctl_count(void)
{
	sk_store *st = ctl_open_store();
	sk_userspace_list l = { NULL, 0, 0 };
	sk_error err;
	size_t n;

	ck_assert_msg(sk_store_list(st, NULL, &l, &err) == 0, "list: %s", err.message);
	n = l.len;
	sk_userspace_list_dispose(&l);
	sk_store_close(st);
	return n;
}
