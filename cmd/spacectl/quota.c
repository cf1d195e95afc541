/*
 * spacectl: the SpaceQuota kind (pkg/api/quota.h). apply and create take
 * SpaceQuota documents beside UserSpaces (input.c moves them out of the
 * UserSpace input) and refuse a new UserSpace past a quota's spec.hard.spaces,
 * as Kubernetes' ResourceQuota admission does: nothing is written, and the
 * message names the quota. get, describe, delete and explain hand a
 * spacequotas argument (sq, spacequota, sq/NAME) to this file.
 */
#include <stdlib.h>
#include <string.h>

#include "spacectl.h"
#include "store/quota.h"
#include "store/store.h"

static const sk_cli_help help = {
	"spacequotas",
	"spacectl get spacequotas|sq [NAME ...] [-o table|yaml|json|name] [--no-headers]\n"
	"spacectl describe spacequotas|sq NAME ...\n"
	"spacectl delete spacequotas|sq NAME ...\n"
	"spacectl explain spacequota[.field ...]",
	"SpaceQuota limits the UserSpaces its selector matches: spec.hard.spaces (apply\n"
	"refuses a new UserSpace beyond it, naming the quota) and spec.hard.running\n"
	"(sandboxes running at once). Apply it with spacectl apply -f.\n",
};

static const char *const NAMES[] = { "spacequota", "spacequotas", "sq", "SpaceQuota",
	"spacequotas.spacekeeper.dev", "spacequota.spacekeeper.dev", NULL };

bool
sk_cli_is_quota_resource(const char *s)
{
	for (size_t i = 0; NAMES[i]; i++) {
		if (strcmp(s, NAMES[i]) == 0)
			return true;
	}
	return false;
}

/* "sq/NAME" or "spacequota/NAME". */
static bool
is_quota_slash(const char *s)
{
	const char *slash = strchr(s, '/');
	char type[64];

	if (slash == NULL || (size_t)(slash - s) >= sizeof(type))
		return false;
	snprintf(type, sizeof(type), "%.*s", (int)(slash - s), s);
	return sk_cli_is_quota_resource(type);
}

/* Options of get, describe and delete that take a value (the word after
 * them is not the resource type). */
static bool
takes_value(const char *opt)
{
	static const char *const with[] = { "-o", "-l", "-f", "-L", "--output", "--selector",
		"--filename", "--label-columns", "--sort-by", "--field-selector", "--watch-timeout",
		"--mongodb-uri", "--database", "--timeout", "--context", "--grace-period",
		"--config", NULL };

	for (size_t i = 0; with[i]; i++) {
		if (strcmp(opt, with[i]) == 0)
			return true;
	}
	return false;
}

const char *
sk_cli_resource_word(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			return i + 1 < argc ? argv[i + 1] : NULL;
		if (argv[i][0] != '-')
			return argv[i];
		i += takes_value(argv[i]);
	}
	return NULL;
}

bool
sk_cli_quota_args(int argc, char **argv)
{
	const char *word = sk_cli_resource_word(argc, argv);

	return word != NULL && (sk_cli_is_quota_resource(word) || is_quota_slash(word));
}

/* The names the arguments give (after the type word, or TYPE/NAME each). */
static int
parse_names(char **args, int n, sk_cli_strv *names)
{
	int i = n > 0 && sk_cli_is_quota_resource(args[0]) ? 1 : 0;

	for (; i < n; i++) {
		const char *s = args[i], *slash = strchr(s, '/');
		if (slash != NULL && !is_quota_slash(s))
			return sk_cli_usage_error(&help, "\"%s\": not a spacequota", s);
		sk_cli_strv_push(names, (char *)(slash ? slash + 1 : s));
	}
	return SK_CLI_CONTINUE;
}

/* ---- input: apply, create ---- */

int
sk_cli_input_take_quotas(sk_cli_input *in)
{
	sk_doclist *d = &in->docs;
	size_t kept = 0;
	int rc = SK_EXIT_OK;

	for (size_t i = 0; i < d->len; i++) {
		sk_errlist errs = { NULL, 0 };
		sk_buf buf = SK_BUF_INIT(0);
		sk_spacequota *q = NULL;
		if (!sk_doc_is_spacequota(d->items[i])) {
			d->items[kept++] = d->items[i];
			continue;
		}
		if (sk_spacequota_from_doc(d->items[i], &q, &errs) != SK_OK) {
			sk_errlist_format(&errs, &buf);
			for (char *l = buf.data; l && *l;) {
				char *nl = strchr(l, '\n');
				sk_cli_errorf("%.*s", (int)(nl ? nl - l : (long)strlen(l)), l);
				l = nl ? nl + 1 : NULL;
			}
			rc = SK_EXIT_FAIL;
		}
		in->quota_docs = sk_realloc(in->quota_docs, (in->n_quotas + 1) * sizeof(sk_doc *));
		in->quotas = sk_realloc(in->quotas, (in->n_quotas + 1) * sizeof(sk_spacequota *));
		in->quota_docs[in->n_quotas] = d->items[i];
		in->quotas[in->n_quotas++] = q;
		sk_buf_dispose(&buf);
		sk_errlist_dispose(&errs);
	}
	d->len = kept;
	return rc;
}

void
sk_cli_input_quotas_dispose(sk_cli_input *in)
{
	for (size_t i = 0; i < in->n_quotas; i++) {
		sk_spacequota_free(in->quotas[i]);
		sk_doc_free(in->quota_docs[i]);
	}
	free(in->quotas);
	free(in->quota_docs);
}

/* The quotas after this apply: the stored ones, those of the input in
 * their place or added. Borrowed pointers into stored and in. */
static size_t
quotas_after(const sk_spacequota_list *stored, const sk_cli_input *in, const sk_spacequota **out)
{
	size_t n = 0;

	for (size_t i = 0; i < stored->len; i++) {
		bool replaced = false;
		for (size_t j = 0; j < in->n_quotas && !replaced; j++)
			replaced =
			        strcmp(in->quotas[j]->meta.name, stored->items[i]->meta.name) == 0;
		if (!replaced)
			out[n++] = stored->items[i];
	}
	for (size_t j = 0; j < in->n_quotas; j++)
		out[n++] = in->quotas[j];
	return n;
}

static const sk_userspace *
stored_space(const sk_userspace_list *all, const char *name)
{
	for (size_t i = 0; i < all->len; i++) {
		if (strcmp(all->items[i]->meta.name, name) == 0)
			return all->items[i];
	}
	return NULL;
}

/* Admits the input's spaces in order (used counts them as they come in). */
static bool
admit_all(const sk_spacequota **q, size_t nq, int64_t *used, const sk_userspace_list *all,
        const sk_cli_input *in)
{
	char msg[512];

	for (size_t k = 0; k < in->len; k++) {
		const sk_userspace *want = in->objs[k];
		const sk_userspace *live = stored_space(all, want->meta.name);
		for (size_t i = 0; i < nq; i++) {
			bool was = live != NULL && sk_spacequota_matches(q[i], &live->meta.labels);
			bool is = sk_spacequota_matches(q[i], &want->meta.labels);
			if (was == is) {
				continue;
			} else if (was) {
				used[i]--;
				continue;
			}
			if (sk_quota_admit(&q[i], 1, &used[i], &want->meta.labels, msg,
			            sizeof(msg)) >= 0) {
				sk_cli_errorf("userspaces \"%s\" is forbidden: %s (%s)",
				        want->meta.name, msg,
				        sk_cli_doc_where(in->docs.items[k], "metadata.labels"));
				return false;
			}
			used[i]++;
		}
	}
	return true;
}

int
sk_cli_quota_admit(sk_store *st, const sk_cli_input *in)
{
	sk_spacequota_list stored;
	sk_userspace_list all = { NULL, 0, 0 };
	const sk_spacequota **q;
	int64_t *used;
	size_t nq;
	sk_error err;
	int rc;
	bool ok;

	sk_error_clear(&err);
	if ((rc = sk_store_quota_list(st, &stored, &err)) != SK_OK) {
		sk_cli_errorf("reading spacequotas: %s", err.message);
		return sk_cli_exit_code(rc);
	}
	q = sk_calloc(stored.len + in->n_quotas + 1, sizeof(*q));
	nq = quotas_after(&stored, in, q);
	used = sk_calloc(nq + 1, sizeof(*used));
	if (nq > 0 && (rc = sk_store_list(st, NULL, &all, &err)) != SK_OK) {
		sk_cli_errorf("%s", err.message);
		ok = false;
	} else {
		for (size_t i = 0; i < nq; i++) {
			for (size_t j = 0; j < all.len; j++)
				used[i] += all.items[j]->meta.deletion_ms == 0 &&
				        sk_spacequota_matches(q[i], &all.items[j]->meta.labels);
		}
		ok = admit_all(q, nq, used, &all, in);
	}
	sk_userspace_list_dispose(&all);
	sk_spacequota_list_dispose(&stored);
	free(used);
	free(q);
	return ok ? SK_EXIT_OK : rc != SK_OK ? sk_cli_exit_code(rc) : SK_EXIT_FAIL;
}

int
sk_cli_quota_write(sk_store *st, const sk_cli_input *in, bool dry, const char *suffix)
{
	for (size_t i = 0; i < in->n_quotas; i++) {
		const char *action = NULL;
		sk_error err;
		int rc;
		sk_error_clear(&err);
		if ((rc = sk_store_quota_apply(st, in->quotas[i], dry, &action, &err)) != SK_OK) {
			sk_cli_errorf("spacequota/%s: %s", in->quotas[i]->meta.name, err.message);
			return sk_cli_exit_code(rc);
		}
		printf("spacequota/%s %s%s\n", in->quotas[i]->meta.name, action, suffix);
	}
	return SK_EXIT_OK;
}

/* ---- get, describe, delete ---- */

void
sk_cli_quota_table_print(sk_spacequota *const *items, size_t n, bool no_headers, bool kind_prefix)
{
	static const char *const h[] = { "NAME", "SELECTOR", "SPACES", "RUNNING", "AGE" };
	sk_table *t = sk_table_new(5, h);
	int64_t now = sk_now_ms();

	for (size_t i = 0; i < n; i++) {
		const sk_spacequota *q = items[i];
		char sel[512], sp[48], run[48], age[32];
		sk_spacequota_selector_format(q, sel, sizeof(sel));
		sk_spacequota_use_format(
		        q->has_used, q->used_spaces, q->hard_spaces, sp, sizeof(sp));
		sk_spacequota_use_format(
		        q->has_used, q->used_running, q->hard_running, run, sizeof(run));
		sk_age_format(
		        q->meta.creation_ms > 0 ? now - q->meta.creation_ms : 0, age, sizeof(age));
		char name[300];
		snprintf(
		        name, sizeof(name), "%s%s", kind_prefix ? "spacequota/" : "", q->meta.name);
		const char *row[] = { name, sel[0] ? sel : "<all>", sp, run, age };
		sk_table_add_row(t, row);
	}
	sk_cli_table_write(t, no_headers);
	sk_table_free(t);
}

static int
print_objects(sk_spacequota *const *items, size_t n, bool single, sk_output fmt)
{
	json_t *a = json_array(), *v;
	int rc;

	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, sk_spacequota_to_json(items[i]));
	v = single && n == 1
	        ? json_incref(json_array_get(a, 0))
	        : json_pack("{s:s, s:s, s:O}", "apiVersion", "v1", "kind", "List", "items", a);
	rc = sk_cli_print_value(v, fmt);
	json_decref(v);
	json_decref(a);
	return rc;
}

/* The quotas names asks for (all when none), in that order; prints the
 * missing ones. Returns an exit code. */
static int
select_quotas(sk_store *st, const sk_cli_strv *names, sk_spacequota_list *all, sk_spacequota ***out,
        size_t *n)
{
	sk_error err;
	int rc, exit_code = SK_EXIT_OK;

	sk_error_clear(&err);
	if ((rc = sk_store_quota_list(st, all, &err)) != SK_OK) {
		sk_cli_errorf("%s", err.message);
		return sk_cli_exit_code(rc);
	}
	*out = sk_calloc(all->len + names->len + 1, sizeof(**out));
	*n = 0;
	if (names->len == 0) {
		memcpy(*out, all->items, all->len * sizeof(**out));
		*n = all->len;
		return SK_EXIT_OK;
	}
	for (size_t i = 0; i < names->len; i++) {
		size_t j = 0;
		while (j < all->len && strcmp(all->items[j]->meta.name, names->items[i]) != 0)
			j++;
		if (j < all->len) {
			(*out)[(*n)++] = all->items[j];
		} else {
			sk_cli_errorf("spacequotas \"%s\" not found (NotFound)", names->items[i]);
			exit_code = SK_EXIT_FAIL;
		}
	}
	return exit_code;
}

typedef struct quota_opts {
	const char *output;
	bool no_headers;
	sk_cli_strv names;
} quota_opts;

enum { OPT_NO_HEADERS = SK_OPT_FIRST_CMD };

static int
parse_opts(int argc, char **argv, quota_opts *o)
{
	static const struct option opts[] = { { "output", required_argument, NULL, 'o' },
		{ "no-headers", no_argument, NULL, OPT_NO_HEADERS }, SK_CLI_GLOBAL_OPTIONS, { 0 } };
	int ch, rc;

	while ((ch = sk_cli_getopt(argc, argv, ":o:h", opts)) != -1) {
		if (ch == 'o')
			o->output = optarg;
		else if (ch == OPT_NO_HEADERS)
			o->no_headers = true;
		else if ((rc = sk_cli_opt(&help, ch, argv)) != SK_CLI_CONTINUE)
			return rc;
	}
	return parse_names(argv + optind, argc - optind, &o->names);
}

static int show(sk_store *st, quota_opts *o, bool describe);

static int
run(int argc, char **argv, int (*fn)(sk_store *, quota_opts *))
{
	quota_opts o = { 0 };
	sk_store *st = NULL;
	int rc = parse_opts(argc, argv, &o);

	if (rc == SK_CLI_CONTINUE && (rc = sk_cli_store_open(&st)) == SK_EXIT_OK)
		rc = fn(st, &o);
	sk_store_close(st);
	sk_cli_strv_dispose(&o.names);
	return rc;
}

static int
do_get(sk_store *st, quota_opts *o)
{
	sk_output fmt = SK_OUTPUT_TABLE;

	if (o->output != NULL && strcmp(o->output, "name") != 0 &&
	        sk_cli_output_parse(o->output, &fmt) != 0)
		return sk_cli_usage_error(
		        &help, "-o: want table, wide, yaml, json or name (got \"%s\")", o->output);
	return show(st, o, false);
}

static int
show(sk_store *st, quota_opts *o, bool describe)
{
	sk_spacequota_list all = { NULL, 0 };
	sk_spacequota **items = NULL;
	sk_output fmt = SK_OUTPUT_TABLE;
	size_t n = 0;
	int rc = select_quotas(st, &o->names, &all, &items, &n);

	if (o->output != NULL)
		sk_cli_output_parse(o->output, &fmt);
	if (n == 0 && o->names.len == 0 && !describe)
		fprintf(stderr, "No resources found\n");
	else if (describe)
		for (size_t i = 0; i < n; i++)
			sk_cli_quota_describe_one(items[i], i > 0);
	else if (o->output != NULL && strcmp(o->output, "name") == 0)
		for (size_t i = 0; i < n; i++)
			printf("spacequota/%s\n", items[i]->meta.name);
	else if (fmt == SK_OUTPUT_YAML || fmt == SK_OUTPUT_JSON)
		print_objects(items, n, o->names.len == 1, fmt);
	else if (n > 0)
		sk_cli_quota_table_print(items, n, o->no_headers, false);
	free(items);
	sk_spacequota_list_dispose(&all);
	return rc;
}

void
sk_cli_quota_describe_one(const sk_spacequota *q, bool blank_before)
{
	char sel[512], t[64];

	sk_spacequota_selector_format(q, sel, sizeof(sel));
	sk_time_format(q->meta.creation_ms, t, sizeof(t));
	printf("%sName:         %s\n", blank_before ? "\n" : "", q->meta.name);
	printf("Selector:     %s\n", sel[0] ? sel : "<all UserSpaces>");
	printf("Created:      %s\n", q->meta.creation_ms > 0 ? t : "<unknown>");
	if (q->has_used && q->updated_ms > 0) {
		sk_time_format(q->updated_ms, t, sizeof(t));
		printf("Last Update:  %s\n", t);
	}
	printf("Resource      Used   Hard\n--------      ----   ----\n");
	for (int r = 0; r < 2; r++) {
		int64_t hard = r == 0 ? q->hard_spaces : q->hard_running;
		int64_t used = r == 0 ? q->used_spaces : q->used_running;
		char u[32], h[32];
		snprintf(u, sizeof(u), "%lld", (long long)used);
		snprintf(h, sizeof(h), "%lld", (long long)hard);
		printf("%-13s %-6s %s\n", r == 0 ? SK_QUOTA_SPACES : SK_QUOTA_RUNNING,
		        q->has_used ? u : "-", hard >= 0 ? h : "-");
	}
}

static int
do_describe(sk_store *st, quota_opts *o)
{
	if (o->names.len == 0)
		return sk_cli_usage_error(&help, "name the spacequota: describe sq NAME");
	return show(st, o, true);
}

static int
do_delete(sk_store *st, quota_opts *o)
{
	int exit_code = SK_EXIT_OK;

	if (o->names.len == 0)
		return sk_cli_usage_error(&help, "name the spacequota: delete sq NAME");
	for (size_t i = 0; i < o->names.len; i++) {
		sk_error err;
		int rc;
		sk_error_clear(&err);
		if ((rc = sk_store_quota_delete(st, o->names.items[i], &err)) == SK_OK) {
			printf("spacequota/%s deleted\n", o->names.items[i]);
			continue;
		}
		if (rc == SK_ENOTFOUND)
			sk_cli_errorf("spacequotas \"%s\" not found (NotFound)", o->names.items[i]);
		else
			sk_cli_errorf("spacequota/%s: %s", o->names.items[i], err.message);
		exit_code = sk_cli_exit_code(rc);
	}
	return exit_code;
}

int
sk_cli_quota_get(int argc, char **argv)
{
	return run(argc, argv, do_get);
}

int
sk_cli_quota_describe(int argc, char **argv)
{
	return run(argc, argv, do_describe);
}

int
sk_cli_quota_delete(int argc, char **argv)
{
	return run(argc, argv, do_delete);
}

/* ---- explain ---- */

int
sk_cli_quota_explain(const char *path)
{
	const sk_quota_field *f = sk_quota_field_of(path);
	size_t pl = strlen(path);
	bool header = false;

	if (f == NULL) {
		sk_cli_errorf("field \"%s\" does not exist in SpaceQuota (spacectl explain "
		              "spacequota lists the fields)",
		        path);
		return SK_EXIT_FAIL;
	}
	printf("KIND:     %s\nVERSION:  %s\n\n", SK_KIND_SPACEQUOTA, SK_API_VERSION);
	if (*path) {
		const char *dot = strrchr(path, '.');
		printf("FIELD:    %s <%s>\n\n", dot ? dot + 1 : path, f->type);
	}
	printf("DESCRIPTION:\n     %s\n", f->desc);
	for (size_t i = 0; i < sk_quota_n_fields; i++) {
		const sk_quota_field *c = &sk_quota_fields[i];
		const char *rest = c->path + pl + (pl > 0);
		if (*c->path == '\0' ||
		        (pl > 0 && (strncmp(c->path, path, pl) != 0 || c->path[pl] != '.')) ||
		        strchr(rest, '.') != NULL)
			continue;
		if (!header)
			printf("\nFIELDS:\n");
		header = true;
		printf("   %s\t<%s>\n", rest, c->type);
	}
	return SK_EXIT_OK;
}
