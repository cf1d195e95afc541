/* spacectl: reading -f inputs: load (a List is its items), validate every document,
 * reject duplicates. */
#include <stdlib.h>
#include <string.h>

#include "spacectl.h"

const char *
sk_cli_doc_where(const sk_doc *d, const char *field)
{
	static char where[1200];
	const char *file = sk_doc_file(d);
	int line = sk_doc_line(d), col = 1;

	if (file == NULL || strcmp(file, "-") == 0)
		file = "<stdin>";
	if (field)
		sk_doc_position(d, field, &line, &col);
	snprintf(where, sizeof(where), "%s:%d:%d", file, line, col);
	return where;
}

static void
append_docs(sk_doclist *all, sk_doclist *more)
{
	if (more->len > 0) {
		all->items = sk_realloc(all->items, (all->len + more->len) * sizeof(*all->items));
		memcpy(all->items + all->len, more->items, more->len * sizeof(*more->items));
		all->len += more->len;
	}
	more->len = 0; /* the documents moved; dispose frees the array only */
	sk_doclist_dispose(more);
}

static int
load_paths(sk_doclist *all, char **paths, size_t npaths)
{
	int rc = SK_EXIT_OK;

	for (size_t i = 0; i < npaths; i++) {
		sk_doclist docs = { NULL, 0 };
		sk_error err;

		sk_error_clear(&err);
		if (sk_doc_load_tree(paths[i], sk_cli.recursive, &docs, &err) != 0 ||
		        sk_doclist_expand_lists(&docs, &err) != 0) {
			sk_cli_errorf("%s", err.message);
			sk_doclist_dispose(&docs);
			rc = SK_EXIT_FAIL;
			continue;
		}
		if (docs.len == 0) {
			sk_cli_errorf("no objects found in %s",
			        strcmp(paths[i], "-") ? paths[i] : "<stdin>");
			rc = SK_EXIT_FAIL;
		}
		append_docs(all, &docs);
	}
	return rc;
}

/* Each error of errs on its own "spacectl: " line of stderr. */
static void
print_errors(const sk_errlist *errs, sk_buf *buf)
{
	sk_errlist_format(errs, buf);
	fflush(stdout);
	for (char *line = buf->data; line && *line;) {
		char *nl = strchr(line, '\n');
		fprintf(stderr, "spacectl: %.*s\n", (int)(nl ? nl - line : (long)strlen(line)),
		        line);
		line = nl ? nl + 1 : NULL;
	}
}

/* metadata.resourceVersion as Kubernetes clients write it (a string of
 * digits; "" for none) or as a number: the decoder takes the number. */
static void
resource_version_from_string(const sk_doc *d)
{
	json_t *m = json_object_get(sk_doc_root(d), "metadata");
	const char *s = json_string_value(json_object_get(m, "resourceVersion"));
	size_t len = s ? strlen(s) : 0;

	if (s == NULL || strspn(s, "0123456789") != len || len > 18)
		return; /* anything else is left to the validator's message */
	if (len == 0)
		json_object_del(m, "resourceVersion");
	else
		json_object_set_new(m, "resourceVersion", json_integer(strtoll(s, NULL, 10)));
}

/* kustomize and Helm set metadata.namespace on everything; UserSpace is
 * cluster-scoped, so (as the API server does) it is ignored. One warning
 * for the whole input. */
static void
warn_namespaces(const sk_cli_input *in)
{
	size_t n = 0, first = 0;

	for (size_t i = 0; i < in->len; i++) {
		json_t *m = json_object_get(sk_doc_root(in->docs.items[i]), "metadata");
		if (in->objs[i] != NULL && json_is_string(json_object_get(m, "namespace")) &&
		        n++ == 0)
			first = i;
	}
	if (n > 0)
		sk_cli_warnf("metadata.namespace ignored on %zu object(s): UserSpace is "
		             "cluster-scoped (%s)",
		        n, sk_cli_doc_where(in->docs.items[first], "metadata.namespace"));
}

static int
validate_docs(sk_cli_input *in, bool create)
{
	int rc = SK_EXIT_OK;

	in->objs = sk_calloc(in->docs.len, sizeof(*in->objs));
	in->len = in->docs.len;
	for (size_t i = 0; i < in->len; i++) {
		sk_errlist errs = { NULL, 0 };
		sk_buf buf = SK_BUF_INIT(0);

		resource_version_from_string(in->docs.items[i]);
		if (sk_userspace_from_input(in->docs.items[i], create, &in->objs[i], &errs) != 0) {
			print_errors(&errs, &buf);
			if (errs.len == 0)
				sk_cli_errorf("invalid document (%s)",
				        sk_cli_doc_where(in->docs.items[i], NULL));
			sk_userspace_free(in->objs[i]);
			in->objs[i] = NULL;
			rc = SK_EXIT_FAIL;
		}
		sk_buf_dispose(&buf);
		sk_errlist_dispose(&errs);
	}
	return rc;
}

/* Every repeated name or userID, with both positions (linear time). */
static int
check_duplicates(sk_cli_input *in)
{
	sk_errlist errs = { NULL, 0 };
	sk_buf buf = SK_BUF_INIT(0);
	int rc = SK_EXIT_OK;

	if (sk_userspaces_check_unique(
	            in->objs, (const sk_doc *const *)in->docs.items, in->len, &errs) > 0) {
		print_errors(&errs, &buf);
		rc = SK_EXIT_FAIL;
	}
	sk_buf_dispose(&buf);
	sk_errlist_dispose(&errs);
	return rc;
}

static int
input_load(sk_cli_input *in, char **paths, size_t npaths, bool create)
{
	int rc;

	memset(in, 0, sizeof(*in));
	rc = load_paths(&in->docs, paths, npaths);
	if (sk_cli_input_take_quotas(in) != SK_EXIT_OK)
		rc = SK_EXIT_FAIL;
	if (validate_docs(in, create) != SK_EXIT_OK)
		rc = SK_EXIT_FAIL;
	warn_namespaces(in);
	if (rc == SK_EXIT_OK)
		rc = check_duplicates(in);
	return rc;
}

int
sk_cli_input_load(sk_cli_input *in, char **paths, size_t npaths)
{
	return input_load(in, paths, npaths, false);
}

int
sk_cli_input_load_create(sk_cli_input *in, char **paths, size_t npaths)
{
	return input_load(in, paths, npaths, true);
}

void
sk_cli_input_dispose(sk_cli_input *in)
{
	for (size_t i = 0; i < in->len; i++)
		sk_userspace_free(in->objs[i]);
	free(in->objs);
	sk_cli_input_quotas_dispose(in);
	sk_doclist_dispose(&in->docs);
	memset(in, 0, sizeof(*in));
}

void
sk_cli_user_id_taken(const sk_userspace *want, const sk_doc *doc, const char *holder)
{
	sk_cli_errorf("spec.userID: \"%s\" is already used by userspace/%s (%s)",
	        want->spec.user_id, holder, sk_cli_doc_where(doc, "spec.userID"));
}
