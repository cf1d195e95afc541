/*
 * Helpers of the spacectl end-to-end tests (check_spacectl*.c): run the real
 * binary against this test's own database and read the database back.
 */
#ifndef SK_SPACECTL_TESTLIB_H
#define SK_SPACECTL_TESTLIB_H

#include <check.h>
#include <stddef.h>
#include <string.h>

#include "store/store.h"

/* Set by ctl_setup: the test's database, scratch directory and URI environment. */
extern char ctl_db[96];
extern char ctl_dir[1024];
extern char ctl_env_uri[512];

/* Fixtures: a fresh database per test; or no reachable database at all. */
void ctl_setup(void);
void ctl_setup_offline(void);

/* Runs `spacectl ARGS... --database DB` (args NULL-terminated); captures output. */
int ctl(char **out, char **err, ...);
int ctl_stdin(const char *in, char **out, char **err, ...);
void ctl_free(char **out, char **err);

/* Files under ctl_dir; the returned paths are malloc'd. */
char *ctl_write_file(const char *name, const char *data, size_t len);
char *ctl_write_text(const char *name, const char *text);
char *ctl_us_yaml(const char *name, const char *user_id, const char *extra_spec);
char *ctl_write_us(const char *file, const char *name, const char *user_id, const char *extra_spec);

/* The database, read back through pkg/store. */
sk_store *ctl_open_store(void);
sk_userspace *ctl_stored(const char *name); /* NULL when absent */
size_t ctl_count(void);

#define ASSERT_HAS(hay, needle)                                                                    \
	ck_assert_msg(strstr((hay), (needle)) != NULL, "expected \"%s\" in:\n%s", (needle), (hay))
#define ASSERT_HASNT(hay, needle)                                                                  \
	ck_assert_msg(strstr((hay), (needle)) == NULL, "unexpected \"%s\" in:\n%s", (needle), (hay))

#endif
