/*
 * spacectl edit: opens one UserSpace as YAML in $KUBE_EDITOR, $EDITOR or vi
 * and writes the result with compare-and-swap on the resourceVersion read,
 * as kubectl edit does. An invalid result re-opens the editor with the
 * errors as comments at the top; an unchanged one cancels the edit.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/flags.h"
#include "spacectl.h"

static const sk_cli_help help = {
	"edit",
	"spacectl edit userspace NAME\n"
	"spacectl edit userspace/NAME",
	"Opens the UserSpace as YAML in an editor ($KUBE_EDITOR, else $EDITOR, else\n"
	"vi; the value may carry arguments, e.g. \"code --wait\"). When the editor\n"
	"exits, the file is validated as apply validates a file and written with\n"
	"compare-and-swap: if the object changed meanwhile, nothing is written and\n"
	"the edited copy is kept. Lines starting with # are ignored. An invalid file\n"
	"is re-opened with the errors as comments at the top; saving it unchanged\n"
	"then gives up. Status and metadata set by the store are ignored, and\n"
	"metadata.name cannot change.\n"
	"\n"
	"Prints userspace/NAME edited; \"Edit cancelled, no changes made.\" when the\n"
	"object is the same; \"Edit cancelled, saved file was empty.\" for an empty file.\n"
	"\n"
	"Exit codes: 0 edited or cancelled; 1 not found, editor failed, invalid file\n"
	"saved unchanged, or a conflict; 2 usage; 3 database unavailable.\n"
	"\n"
	"Examples:\n"
	"  spacectl edit userspace alice\n"
	"  KUBE_EDITOR=nano spacectl edit us/alice\n",
};

#define EDIT_HEADER                                                                                \
	"# Please edit the object below. Lines beginning with a '#' will be ignored,\n"            \
	"# and an empty file will abort the edit. If an error occurs while saving this file\n"     \
	"# will be reopened with the relevant failures.\n"                                         \
	"#\n"

typedef struct edit_ctx {
	const char *name;
	sk_store *store;
	sk_userspace *cur;
	char path[1024];
	sk_buf header; /* the comment block at the top */
	char *body; /* what the editor is given below the header */
	char *rejected; /* the body of the last invalid save; NULL none */
	bool keep; /* the file holds changes that were not written */
} edit_ctx;

/* s without the lines that start with '#'. */
static char *
strip_comments(const char *s)
{
	sk_buf b = SK_BUF_INIT(0);

	while (*s) {
		const char *nl = strchr(s, '\n');
		size_t n = nl ? (size_t)(nl - s) + 1 : strlen(s);
		if (*s != '#')
			sk_buf_append(&b, s, n);
		s += n;
	}
	sk_buf_append(&b, "", 1);
	return sk_buf_detach(&b);
}

static bool
blank(const char *s)
{
	return s[strspn(s, " \t\r\n")] == '\0';
}

static int
write_file(edit_ctx *c)
{
	FILE *f = fopen(c->path, "w");
	bool ok;

	if (f == NULL) {
		sk_cli_errorf("%s: %s", c->path, strerror(errno));
		return SK_EXIT_FAIL;
	}
	fwrite(c->header.data, 1, c->header.len, f);
	fputs(c->body, f);
	ok = ferror(f) == 0;
	if (fclose(f) != 0 || !ok) {
		sk_cli_errorf("%s: cannot write", c->path);
		return SK_EXIT_FAIL;
	}
	return SK_EXIT_OK;
}

static char *
read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	sk_buf b = SK_BUF_INIT(0);
	char chunk[4096];
	size_t n;

	if (f == NULL) {
		sk_cli_errorf("%s: %s", path, strerror(errno));
		return NULL;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		sk_buf_append(&b, chunk, n);
	fclose(f);
	sk_buf_append(&b, "", 1);
	return sk_buf_detach(&b);
}

/* Runs the editor on the file through sh (the variable may hold arguments). */
static int
run_editor(const edit_ctx *c)
{
	const char *ed = getenv("KUBE_EDITOR");
	char *cmd;
	int st;

	if (ed == NULL || *ed == '\0')
		ed = getenv("EDITOR");
	if (ed == NULL || *ed == '\0')
		ed = "vi";
	/* the path reaches sh as a quoted variable: any TMPDIR is safe */
	setenv("SPACECTL_EDIT_FILE", c->path, 1);
	cmd = sk_asprintf("%s \"$SPACECTL_EDIT_FILE\"", ed);
	fflush(stdout);
	st = system(cmd);
	free(cmd);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		sk_cli_errorf("the editor \"%s\" failed (status %d); nothing was changed", ed,
		        WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		return SK_EXIT_FAIL;
	}
	return SK_EXIT_OK;
}

/* The header that re-opens the file with the errors of the last save. */
static void
set_error_header(edit_ctx *c, const sk_errlist *errs, const char *parse_error)
{
	sk_buf list = SK_BUF_INIT(0);
	const char *p;

	sk_buf_reset(&c->header);
	sk_buf_printf(&c->header, "%s# userspaces \"%s\" was not valid:\n", EDIT_HEADER, c->name);
	if (parse_error)
		sk_buf_printf(&c->header, "# * %s\n", parse_error);
	if (errs)
		sk_errlist_format(errs, &list);
	for (p = list.data; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		sk_buf_printf(&c->header, "# * %.*s\n", (int)n, p);
		p += nl ? n + 1 : n;
	}
	sk_buf_printf(&c->header, "#\n");
	sk_buf_dispose(&list);
}

/* Parses and validates the saved text; *next on success, else the header
 * is set to the errors. */
static int
check_saved(edit_ctx *c, const char *text, sk_userspace **next)
{
	sk_doclist docs = { NULL, 0 };
	sk_errlist errs = { NULL, 0 };
	sk_error err;
	int rc = SK_EINVALID;

	sk_error_clear(&err);
	if (sk_doc_parse(text, strlen(text), c->path, &docs, &err) != 0)
		set_error_header(c, NULL, err.message);
	else if (docs.len != 1)
		set_error_header(c, NULL, "the file must hold exactly one object");
	else if (sk_cli_next_version(c->cur, docs.items[0], next, &errs) != 0)
		set_error_header(c, &errs, NULL);
	else
		rc = 0;
	sk_errlist_dispose(&errs);
	sk_doclist_dispose(&docs);
	return rc;
}

static int
write_next(edit_ctx *c, const sk_userspace *next)
{
	sk_userspace *written = NULL;
	sk_error err;
	int rc;

	sk_error_clear(&err);
	rc = sk_store_update(c->store, next, &written, &err);
	sk_userspace_free(written);
	if (rc == 0) {
		printf("userspace/%s edited\n", c->name);
		return SK_EXIT_OK;
	}
	if (rc == SK_ECONFLICT)
		sk_cli_errorf("userspace/%s: the object has been modified since the edit began; "
		              "nothing was written; your changes are in %s",
		        c->name, c->path);
	else
		sk_cli_errorf(
		        "userspace/%s: %s; your changes are in %s", c->name, err.message, c->path);
	return sk_cli_exit_code(rc == SK_ECONFLICT ? SK_ECONFLICT : rc);
}

/* One round: editor, then cancel, write, or re-open (*again). */
static int
edit_round(edit_ctx *c, bool *again)
{
	char *text = NULL, *body = NULL;
	sk_userspace *next = NULL;
	int rc;

	*again = false;
	if ((rc = write_file(c)) != SK_EXIT_OK || (rc = run_editor(c)) != SK_EXIT_OK)
		return rc;
	if ((text = read_file(c->path)) == NULL)
		return SK_EXIT_FAIL;
	body = strip_comments(text);
	if (blank(body)) {
		printf("Edit cancelled, saved file was empty.\n");
	} else if (c->rejected && strcmp(body, c->rejected) == 0) {
		sk_cli_errorf("Edit cancelled, no valid changes were saved; your changes are in %s",
		        c->path);
		c->keep = true;
		rc = SK_EXIT_FAIL;
	} else if (check_saved(c, text, &next) != 0) {
		free(c->rejected);
		c->rejected = sk_strdup(body);
		free(c->body);
		c->body = sk_strdup(body);
		*again = true;
	} else if (sk_cli_same_desired(c->cur, next)) {
		printf("Edit cancelled, no changes made.\n");
	} else {
		rc = write_next(c, next);
		c->keep = rc != SK_EXIT_OK;
	}
	sk_userspace_free(next);
	free(body);
	free(text);
	return rc;
}

static int
start(edit_ctx *c)
{
	json_t *v;
	sk_buf yaml = SK_BUF_INIT(0);
	sk_error err;
	const char *tmp = getenv("TMPDIR");
	int rc, fd;

	sk_error_clear(&err);
	if ((rc = sk_store_get(c->store, c->name, &c->cur, &err)) != 0) {
		if (rc == SK_ENOTFOUND)
			sk_cli_errorf("userspaces \"%s\" not found (NotFound)", c->name);
		else
			sk_cli_errorf("%s", err.message);
		return sk_cli_exit_code(rc);
	}
	v = sk_cli_userspace_json(c->cur);
	rc = sk_json_to_yaml(v, &yaml, &err);
	json_decref(v);
	if (rc != 0) {
		sk_cli_errorf("cannot encode YAML: %s", err.message);
		return SK_EXIT_FAIL;
	}
	c->body = sk_buf_detach(&yaml);
	sk_buf_printf(&c->header, "%s", EDIT_HEADER);
	snprintf(c->path, sizeof(c->path), "%s/spacectl-edit-XXXXXX.yaml",
	        tmp && *tmp ? tmp : "/tmp");
	if ((fd = mkstemps(c->path, 5)) < 0) {
		sk_cli_errorf("%s: %s", c->path, strerror(errno));
		return SK_EXIT_FAIL;
	}
	close(fd);
	return SK_EXIT_OK;
}

static int
run(edit_ctx *c)
{
	bool again = true;
	int rc;

	if ((rc = sk_cli_store_open(&c->store)) != SK_EXIT_OK || (rc = start(c)) != SK_EXIT_OK)
		return rc;
	while (again && rc == SK_EXIT_OK)
		rc = edit_round(c, &again);
	if (!c->keep)
		unlink(c->path); /* kept only when it holds unwritten changes */
	return rc;
}

int
sk_cmd_edit(int argc, char **argv)
{
	static const struct option opts[] = { SK_CLI_GLOBAL_OPTIONS, { 0 } };
	sk_cli_strv names = { NULL, 0 };
	edit_ctx c;
	int ch, rc;

	memset(&c, 0, sizeof(c));
	c.header = (sk_buf)SK_BUF_INIT(0);
	while ((ch = sk_cli_getopt(argc, argv, ":h", opts)) != -1) {
		if ((rc = sk_cli_opt(&help, ch, argv)) != SK_CLI_CONTINUE)
			return rc;
	}
	rc = sk_cli_object_args(&help, argv + optind, argc - optind, false, &names);
	if (rc == SK_CLI_CONTINUE && names.len != 1)
		rc = sk_cli_usage_error(&help, "name one UserSpace to edit");
	if (rc == SK_CLI_CONTINUE) {
		c.name = names.items[0];
		rc = run(&c);
	}
	sk_cli_strv_dispose(&names);
	sk_store_close(c.store);
	sk_userspace_free(c.cur);
	sk_buf_dispose(&c.header);
	free(c.body);
	free(c.rejected);
	return rc;
}
