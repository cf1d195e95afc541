/* spacectl: helpers shared by every command: flags, errors, store, output, input files. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/flags.h"
#include "spacectl.h"
#include "util/clidoc.h"

sk_cli_globals sk_cli = { NULL, NULL, 3000, NULL, NULL, false };

/* Set while sk_cli_help_of runs a command's --help: what it showed. */
static sk_cli_seen *seen_now;

void
sk_cli_errorf(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("spacectl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void
sk_cli_warnf(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("spacectl: warning: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int
sk_cli_exit_code(int code)
{
	if (code == SK_EUNAVAILABLE || code == SK_ETIMEOUT)
		return SK_EXIT_UNAVAILABLE;
	return code == 0 ? SK_EXIT_OK : SK_EXIT_FAIL;
}

void
sk_cli_print_help(const sk_cli_help *h, FILE *f)
{
	sk_buf b = SK_BUF_INIT(0);

	/* Several usage lines line up under the first, as in style(9). */
	sk_clidoc_usage(h->usage, &b);
	fputs(b.data, f);
	sk_buf_dispose(&b);
	if (f == stdout && h->text)
		fprintf(f, "\n%s\n%s", h->text, SK_CLI_GLOBAL_HELP);
	if (f == stdout && seen_now)
		seen_now->help = h;
}

int
sk_cli_usage_error(const sk_cli_help *h, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "spacectl%s%s: ", *h->name ? " " : "", h->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	sk_cli_print_help(h, stderr);
	fprintf(stderr, "Run 'spacectl%s%s --help' for more information.\n", *h->name ? " " : "",
	        h->name);
	return SK_EXIT_USAGE;
}

int
sk_cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts)
{
	opterr = 0;
	if (seen_now && seen_now->opts == NULL) {
		seen_now->opts = longopts;
		seen_now->shortopts = shortopts;
	}
	return getopt_long(argc, argv, shortopts, longopts, NULL);
}

char *
sk_cli_help_of(const sk_cli_command *cmd, sk_cli_seen *seen)
{
	char *argv[] = { (char *)cmd->name, "--help", NULL };
	FILE *tmp = tmpfile();
	sk_buf b = SK_BUF_INIT(0);
	char chunk[4096];
	int saved;
	size_t n;

	if (seen)
		memset(seen, 0, sizeof(*seen));
	if (tmp == NULL)
		return sk_strdup("");
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	dup2(fileno(tmp), STDOUT_FILENO);
	optind = 0;
	seen_now = seen;
	cmd->fn(2, argv);
	seen_now = NULL;
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	rewind(tmp);
	while ((n = fread(chunk, 1, sizeof(chunk), tmp)) > 0)
		sk_buf_append(&b, chunk, n);
	fclose(tmp);
	sk_buf_append(&b, "", 1);
	return sk_buf_detach(&b);
}

static int
parse_timeout(const sk_cli_help *h, const char *arg)
{
	int64_t ms;

	if (sk_duration_parse(arg, &ms) != 0 || ms <= 0)
		return sk_cli_usage_error(
		        h, "--timeout: invalid duration \"%s\" (e.g. 5s, 500ms)", arg);
	sk_cli.timeout_ms = ms;
	return SK_CLI_CONTINUE;
}

int
sk_cli_opt(const sk_cli_help *h, int c, char **argv)
{
	switch (c) {
	case SK_OPT_MONGODB_URI: sk_cli.mongodb_uri = optarg; return SK_CLI_CONTINUE;
	case SK_OPT_DATABASE: sk_cli.database = optarg; return SK_CLI_CONTINUE;
	case SK_OPT_CONTEXT: sk_cli.context = optarg; return SK_CLI_CONTINUE;
	case SK_OPT_TIMEOUT: return parse_timeout(h, optarg);
	case 'h': sk_cli_print_help(h, stdout); return SK_EXIT_OK;
	case ':': return sk_cli_usage_error(h, "flag %s needs an argument", argv[optind - 1]);
	case '?':
		if (optopt && optopt < 256)
			return sk_cli_usage_error(h, "unknown flag -%c", optopt);
		return sk_cli_usage_error(h, "unknown flag %s", argv[optind - 1]);
	default: return sk_cli_usage_error(h, "unexpected flag");
	}
}

json_t *
sk_cli_userspace_json(const sk_userspace *us)
{
	json_t *v = sk_userspace_to_json(us), *m = json_object_get(v, "metadata");
	json_t *rv = json_object_get(m, "resourceVersion");

	if (json_is_integer(rv)) {
		char s[32];
		snprintf(s, sizeof(s), "%lld", (long long)json_integer_value(rv));
		json_object_set_new(m, "resourceVersion", json_string(s));
	}
	return v;
}

/* The ControllerConfig (path NULL: the context's controllerConfig when
 * with_context_config, else the defaults) under the global flags, the
 * environment and the context (pkg/api sk_config_resolve); prints errors. */
static int
resolve_config(const char *path, bool with_context_config, sk_controller_config **cfg)
{
	sk_config_sources src = {
		.config_path = path, .mongodb_uri = sk_cli.mongodb_uri, .database = sk_cli.database
	};
	sk_errlist errs = { 0 };
	sk_buf msg = SK_BUF_INIT(0);
	sk_config_context ctx;
	json_t *ctx_file = NULL;
	sk_error err;
	int rc;

	sk_error_clear(&err);
	if ((rc = sk_cli_current_context(&ctx, &ctx_file)) != SK_EXIT_OK) {
		json_decref(ctx_file);
		return rc;
	}
	src.context = ctx.name ? &ctx : NULL;
	if (path == NULL && with_context_config && ctx.controller_config)
		src.config_path = ctx.controller_config;
	rc = sk_config_resolve(&src, cfg, &errs, &err);
	json_decref(ctx_file);
	if (rc != SK_OK) {
		sk_errlist_format(&errs, &msg);
		sk_cli_errorf("%s", err.message);
		if (msg.len)
			fprintf(stderr, "%s", msg.data);
	}
	sk_buf_dispose(&msg);
	sk_errlist_dispose(&errs);
	return rc == SK_OK ? SK_EXIT_OK : SK_EXIT_FAIL;
}

int
sk_cli_store_open(sk_store **out)
{
	sk_store_options opts = SK_STORE_OPTIONS_INIT;
	sk_controller_config *cfg = NULL;
	sk_error err;
	int rc;

	/* The URI and database of the config the command loaded (plan), else
	 * of the flags, the environment and the defaults. */
	if (sk_cli.config == NULL && (rc = resolve_config(NULL, false, &cfg)) != SK_EXIT_OK)
		return rc;
	sk_error_clear(&err);
	opts.uri = sk_cli.config ? sk_cli.config->mongodb_uri : cfg->mongodb_uri;
	opts.database = sk_cli.config ? sk_cli.config->database : cfg->database;
	opts.timeout_ms = sk_cli.timeout_ms;
	rc = sk_store_open(out, &opts, &err);
	sk_config_free(cfg);
	if (rc != 0) {
		sk_cli_errorf("%s", err.message);
		return sk_cli_exit_code(rc == SK_EINVALID ? SK_EINVALID : SK_EUNAVAILABLE);
	}
	return SK_EXIT_OK;
}

int
sk_cli_output_parse(const char *s, sk_output *out)
{
	static const struct {
		const char *name;
		sk_output fmt;
	} formats[] = {
		{ "table", SK_OUTPUT_TABLE },
		{ "wide", SK_OUTPUT_WIDE },
		{ "yaml", SK_OUTPUT_YAML },
		{ "json", SK_OUTPUT_JSON },
	};

	if (*s == '=') /* -o=wide: getopt leaves the "=" */
		s++;
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		if (strcmp(s, formats[i].name) == 0) {
			*out = formats[i].fmt;
			return 0;
		}
	}
	return SK_EINVALID;
}

int
sk_cli_print_value(const json_t *v, sk_output fmt)
{
	sk_buf buf = SK_BUF_INIT(0);
	sk_error err;
	char *s;

	if (fmt == SK_OUTPUT_JSON) {
		s = json_dumps(v, JSON_INDENT(4) | JSON_PRESERVE_ORDER);
		if (s == NULL) {
			sk_cli_errorf("cannot encode JSON");
			return SK_EXIT_FAIL;
		}
		printf("%s\n", s);
		free(s);
		return SK_EXIT_OK;
	}
	sk_error_clear(&err);
	if (sk_json_to_yaml(v, &buf, &err) != 0) {
		sk_cli_errorf("cannot encode YAML: %s", err.message);
		sk_buf_dispose(&buf);
		return SK_EXIT_FAIL;
	}
	fwrite(buf.data ? buf.data : "", 1, buf.len, stdout);
	sk_buf_dispose(&buf);
	return SK_EXIT_OK;
}

bool
sk_cli_is_userspace_resource(const char *s)
{
	for (size_t i = 0; sk_cli_userspace_names[i]; i++) {
		if (strcmp(s, sk_cli_userspace_names[i]) == 0)
			return true;
	}
	return false;
}

void
sk_cli_strv_push(sk_cli_strv *v, char *s)
{
	v->items = sk_realloc(v->items, (v->len + 1) * sizeof(*v->items));
	v->items[v->len++] = s;
}

void
sk_cli_strv_dispose(sk_cli_strv *v)
{
	free(v->items);
	v->items = NULL;
	v->len = 0;
}

json_t *
sk_cli_desired_json(const sk_userspace *us)
{
	json_t *root = json_object(), *meta = json_object();

	json_object_set_new(root, "apiVersion", json_string(SK_API_VERSION));
	json_object_set_new(root, "kind", json_string(SK_KIND_USERSPACE));
	json_object_set_new(meta, "name", json_string(us->meta.name));
	if (us->meta.labels.len > 0) {
		json_t *o = json_object();
		for (size_t i = 0; i < us->meta.labels.len; i++)
			json_object_set_new(o, us->meta.labels.items[i].key,
			        json_string(us->meta.labels.items[i].value));
		json_object_set_new(meta, "labels", o);
	}
	if (us->meta.annotations.len > 0) {
		json_t *o = json_object();
		for (size_t i = 0; i < us->meta.annotations.len; i++)
			json_object_set_new(o, us->meta.annotations.items[i].key,
			        json_string(us->meta.annotations.items[i].value));
		json_object_set_new(meta, "annotations", o);
	}
	json_object_set_new(root, "metadata", meta);
	json_object_set_new(root, "spec", sk_userspace_spec_to_json(&us->spec));
	return root;
}

/* The ControllerConfig at path, or when path is NULL the current context's
 * controllerConfig, or the defaults, under the global flags, the environment
 * and the context; prints errors. Later store opens use its MongoDB settings. */
int
sk_cli_load_config(const char *path, sk_controller_config **cfg)
{
	int rc = resolve_config(path, true, cfg);

	if (rc == SK_EXIT_OK)
		sk_cli.config = *cfg;
	return rc;
}

int
sk_cli_parse_files_only(int argc, char **argv, const sk_cli_help *help, sk_cli_strv *files)
{
	static const struct option opts[] = { { "filename", required_argument, NULL, 'f' },
		SK_CLI_GLOBAL_OPTIONS, { 0 } };
	int ch, rc = SK_CLI_CONTINUE;

	while (rc == SK_CLI_CONTINUE && (ch = sk_cli_getopt(argc, argv, ":f:h", opts)) != -1) {
		if (ch == 'f')
			sk_cli_strv_push(files, optarg);
		else
			rc = sk_cli_opt(help, ch, argv);
	}
	if (rc == SK_CLI_CONTINUE && optind < argc)
		rc = sk_cli_usage_error(help, "unexpected argument \"%s\"", argv[optind]);
	if (rc == SK_CLI_CONTINUE && files->len == 0)
		rc = sk_cli_usage_error(help, "-f PATH is required");
	return rc;
}

/* Labels, annotations and spec equal: what apply, patch, edit and a record compare. */
bool
sk_cli_same_desired(const sk_userspace *a, const sk_userspace *b)
{
	return sk_kvlist_equal(&a->meta.labels, &b->meta.labels) &&
	        sk_kvlist_equal(&a->meta.annotations, &b->meta.annotations) &&
	        sk_userspace_spec_equal(&a->spec, &b->spec);
}

int
sk_cli_list_selected(
        sk_store *st, const sk_cli_help *h, const char *selector_text, sk_userspace_list *out)
{
	sk_selector *sel = NULL;
	sk_error err;
	int rc;

	sk_error_clear(&err);
	if (selector_text && sk_selector_parse(selector_text, &sel, &err) != 0)
		return sk_cli_usage_error(h, "-l: %s", err.message);
	rc = sk_store_list(st, sel, out, &err);
	sk_selector_free(sel);
	if (rc != 0) {
		sk_cli_errorf("%s", err.message);
		return sk_cli_exit_code(rc);
	}
	return SK_EXIT_OK;
}
