/*
 * spacectl config: named contexts, like kubeconfig. A context names a
 * database (mongodbURI, database) and, optionally, the ControllerConfig
 * whose providers sandboxes, plan and drift --orphans use without --config
 * (controllerConfig: make demo writes one); the file says which is current.
 * The file is $SPACECTL_CONFIG, else $XDG_CONFIG_HOME/spacectl/config.yaml,
 * else ~/.config/spacectl/config.yaml:
 *
 *   apiVersion: spacekeeper.dev/v1alpha1
 *   kind: SpacectlConfig
 *   current-context: prod
 *   contexts:
 *   - name: prod
 *     context: {mongodbURI: "mongodb://db.prod:27017", database: spacekeeper}
 *   - name: demo
 *     context: {mongodbURI: "mongodb://127.0.0.1:40123", controllerConfig: /tmp/x/config.yaml}
 *
 * The selected context (--context NAME, else current-context) is a layer of
 * pkg/api sk_config_resolve: flags > environment > context > defaults.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/flags.h"
#include "api/names.h"
#include "spacectl.h"

static const sk_cli_help help = {
	"config",
	"spacectl config get-contexts\n"
	"spacectl config current-context\n"
	"spacectl config use-context NAME\n"
	"spacectl config set-context NAME [--mongodb-uri uri] [--database name]\n"
	"                            [--controller-config file] [--current]\n"
	"spacectl config delete-context NAME\n"
	"spacectl config view [--raw]",
	"Manages named contexts, as kubectl config does with kubeconfig: each context\n"
	"names a MongoDB URI and a database (and, optionally, a ControllerConfig whose\n"
	"providers sandboxes, plan and drift --orphans use without --config), and\n"
	"current-context says which one commands use. The file is $SPACECTL_CONFIG, else\n"
	"$XDG_CONFIG_HOME/spacectl/config.yaml, else ~/.config/spacectl/config.yaml;\n"
	"set-context creates it (mode 0600). Every command takes --context NAME to use\n"
	"another context once. Precedence: flags, then $SPACEKEEPER_MONGODB_URI, then\n"
	"the context, then the defaults.\n"
	"\n"
	"Subcommands:\n"
	"  get-contexts         list the contexts (* marks the current one)\n"
	"  current-context      print the current context's name\n"
	"  use-context NAME     make NAME the current context\n"
	"  set-context NAME     create or change NAME: --mongodb-uri, --database and\n"
	"                       --controller-config set its fields, --current also\n"
	"                       makes it current\n"
	"  delete-context NAME  remove NAME\n"
	"  view                 print the file; passwords in URIs are hidden unless --raw\n"
	"\n"
	"Flags:\n"
	"      --controller-config FILE\n"
	"                       set-context: the ControllerConfig whose providers\n"
	"                       sandboxes, plan and drift use\n"
	"      --current        set-context: also make the context the current one\n"
	"      --raw            view: show the passwords in URIs\n"
	"\n"
	"Exit codes: 0 done; 1 no such context, invalid file or value; 2 usage.\n"
	"\n"
	"Examples:\n"
	"  spacectl config set-context prod --mongodb-uri mongodb://db.prod:27017 --current\n"
	"  spacectl config set-context dev --mongodb-uri mongodb://127.0.0.1:27017 "
	"--database dev\n"
	"  spacectl config use-context dev\n"
	"  spacectl --context prod get us\n",
};

#define CONFIG_API_VERSION SK_API_VERSION
#define CONFIG_KIND "SpacectlConfig"
#define CONFIG_MAX_BYTES (1 << 20)

const char *
sk_cli_context_file(void)
{
	static char path[4096];
	const char *env = getenv("SPACECTL_CONFIG"), *xdg = getenv("XDG_CONFIG_HOME");
	const char *home = getenv("HOME");

	if (env && *env)
		snprintf(path, sizeof(path), "%s", env);
	else if (xdg && *xdg)
		snprintf(path, sizeof(path), "%s/spacectl/config.yaml", xdg);
	else
		snprintf(path, sizeof(path), "%s/.config/spacectl/config.yaml",
		        home && *home ? home : ".");
	return path;
}

/* ---- reading and checking the file ---- */

static void
ctx_error(sk_errlist *errs, const sk_doc *d, const char *path, const char *msg)
{
	int line = 0, col = 0;

	sk_doc_position(d, path, &line, &col);
	sk_errlist_add(errs, path, sk_doc_file(d), line, col, "%s", msg);
}

static bool
allowed_key(const char *k, const char *const *keys)
{
	for (size_t i = 0; keys[i]; i++) {
		if (strcmp(k, keys[i]) == 0)
			return true;
	}
	return false;
}

/* Every key of obj (at path) must be a string-valued allowed key. */
static void
check_strings(
        const sk_doc *d, json_t *obj, const char *path, const char *const *keys, sk_errlist *errs)
{
	const char *k;
	json_t *v;
	char sub[256];

	json_object_foreach(obj, k, v)
	{
		snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "", k);
		if (!allowed_key(k, keys))
			ctx_error(errs, d, sub, "unknown field");
		else if (!json_is_string(v) && !(json_is_array(v) && strcmp(k, "contexts") == 0) &&
		        !(json_is_object(v) && strcmp(k, "context") == 0))
			ctx_error(errs, d, sub, "must be a string");
	}
}

static void
check_context(const sk_doc *d, json_t *c, size_t i, json_t *seen, sk_errlist *errs)
{
	static const char *const keys[] = { "name", "context", NULL };
	static const char *const fields[] = { "mongodbURI", "database", "controllerConfig", NULL };
	const char *name = json_string_value(json_object_get(c, "name"));
	json_t *body = json_object_get(c, "context");
	char path[128];

	snprintf(path, sizeof(path), "contexts[%zu]", i);
	if (!json_is_object(c)) {
		ctx_error(errs, d, path, "must be an object {name, context}");
		return;
	}
	check_strings(d, c, path, keys, errs);
	snprintf(path, sizeof(path), "contexts[%zu].name", i);
	if (name == NULL || *name == '\0')
		ctx_error(errs, d, path, "required");
	else if (json_object_get(seen, name))
		ctx_error(errs, d, path, "a context of this name appears twice");
	else
		json_object_set_new(seen, name, json_true());
	snprintf(path, sizeof(path), "contexts[%zu].context", i);
	if (body && !json_is_object(body))
		ctx_error(errs, d, path,
		        "must be an object {mongodbURI, database, controllerConfig}");
	else if (body)
		check_strings(d, body, path, fields, errs);
}

static void
check_file(const sk_doc *d, sk_errlist *errs)
{
	static const char *const keys[] = { "apiVersion", "kind", "current-context", "contexts",
		NULL };
	json_t *root = sk_doc_root(d), *list, *c, *seen = json_object();
	const char *s;
	size_t i;

	if (!json_is_object(root)) {
		ctx_error(errs, d, "", "the file must hold one object");
		json_decref(seen);
		return;
	}
	check_strings(d, root, "", keys, errs);
	if ((s = json_string_value(json_object_get(root, "apiVersion"))) &&
	        strcmp(s, CONFIG_API_VERSION) != 0)
		ctx_error(errs, d, "apiVersion", "must be " CONFIG_API_VERSION);
	if ((s = json_string_value(json_object_get(root, "kind"))) && strcmp(s, CONFIG_KIND) != 0)
		ctx_error(errs, d, "kind", "must be " CONFIG_KIND);
	list = json_object_get(root, "contexts");
	json_array_foreach(list, i, c) check_context(d, c, i, seen, errs);
	json_decref(seen);
}

/* The file's document (an empty object when there is no file). Prints errors. */
static int
ctx_load(const char *path, json_t **out)
{
	sk_doclist docs = { NULL, 0 };
	sk_errlist errs = { NULL, 0 };
	sk_buf msg = SK_BUF_INIT(0);
	sk_error err;
	char *data = NULL;
	size_t len = 0;
	int rc = SK_EXIT_FAIL;

	*out = NULL;
	sk_error_clear(&err);
	if (access(path, F_OK) != 0 && errno == ENOENT) {
		*out = json_object();
		return SK_EXIT_OK;
	}
	if (sk_file_read(path, CONFIG_MAX_BYTES, &data, &len, &err) != SK_OK ||
	        sk_doc_parse(data, len, path, &docs, &err) != SK_OK) {
		sk_cli_errorf("context file %s: %s", path, err.message);
		goto done;
	}
	if (docs.len == 0) {
		*out = json_object();
		rc = SK_EXIT_OK;
		goto done;
	}
	check_file(docs.items[0], &errs);
	if (docs.len > 1)
		ctx_error(&errs, docs.items[1], "", "the file must hold one document");
	if (errs.len > 0) {
		sk_errlist_format(&errs, &msg);
		sk_cli_errorf("context file %s is not valid:", path);
		fprintf(stderr, "%s", msg.data ? msg.data : "");
		goto done;
	}
	*out = json_incref(sk_doc_root(docs.items[0]));
	rc = SK_EXIT_OK;
done:
	free(data);
	sk_buf_dispose(&msg);
	sk_errlist_dispose(&errs);
	sk_doclist_dispose(&docs);
	return rc;
}

static json_t *
ctx_find(json_t *root, const char *name)
{
	json_t *c;
	size_t i;

	json_array_foreach(json_object_get(root, "contexts"), i, c)
	{
		const char *n = json_string_value(json_object_get(c, "name"));
		if (n && strcmp(n, name) == 0)
			return c;
	}
	return NULL;
}

static const char *
ctx_field(json_t *c, const char *field)
{
	return json_string_value(json_object_get(json_object_get(c, "context"), field));
}

int
sk_cli_current_context(sk_config_context *out, json_t **keep)
{
	const char *path = sk_cli_context_file(), *name;
	json_t *c;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = ctx_load(path, keep)) != SK_EXIT_OK)
		return rc;
	name = sk_cli.context ? sk_cli.context
	                      : json_string_value(json_object_get(*keep, "current-context"));
	if (name == NULL || *name == '\0')
		return SK_EXIT_OK;
	if ((c = ctx_find(*keep, name)) == NULL) {
		sk_cli_errorf(
		        "context \"%s\" is not in %s (spacectl config get-contexts)", name, path);
		return SK_EXIT_FAIL;
	}
	out->name = name;
	out->source = path;
	out->mongodb_uri = ctx_field(c, "mongodbURI");
	out->database = ctx_field(c, "database");
	out->controller_config = ctx_field(c, "controllerConfig");
	return SK_EXIT_OK;
}

/* ---- writing ---- */

static int
mkdir_parents(const char *path)
{
	char *dir = sk_strdup(path), *p;
	int rc = 0;

	for (p = dir + 1; (p = strchr(p, '/')) != NULL && rc == 0; p++) {
		*p = '\0';
		if (mkdir(dir, 0700) != 0 && errno != EEXIST)
			rc = -1;
		*p = '/';
	}
	free(dir);
	return rc;
}

/* Writes root to the file (a new file, renamed over the old one), mode 0600. */
static int
ctx_save(json_t *root)
{
	const char *path = sk_cli_context_file();
	char *tmp = sk_asprintf("%s.tmp.%d", path, (int)getpid());
	sk_buf yaml = SK_BUF_INIT(0);
	sk_error err;
	FILE *f = NULL;
	int rc, fd = -1;
	json_t *doc =
	        json_pack("{s:s, s:s}", "apiVersion", CONFIG_API_VERSION, "kind", CONFIG_KIND);

	json_object_update_missing(doc, root); /* apiVersion and kind first */
	sk_error_clear(&err);
	rc = sk_json_to_yaml(doc, &yaml, &err);
	json_decref(doc);
	if (rc != 0) {
		rc = SK_EXIT_FAIL;
		sk_cli_errorf("cannot encode YAML: %s", err.message);
		goto done;
	}
	rc = SK_EXIT_FAIL;
	/* 0600 from the start: a URI may hold a password */
	if (mkdir_parents(path) != 0 || (fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600)) < 0 ||
	        (f = fdopen(fd, "w")) == NULL) {
		sk_cli_errorf("%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		goto done;
	}
	fwrite(yaml.data, 1, yaml.len, f);
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		sk_cli_errorf("%s: %s", path, strerror(errno));
		unlink(tmp);
		goto done;
	}
	rc = SK_EXIT_OK;
done:
	sk_buf_dispose(&yaml);
	free(tmp);
	return rc;
}

/* ---- subcommands ---- */

/* "mongodb://user:secret@host" -> "mongodb://user:REDACTED@host". Caller frees. */
static char *
redact_uri(const char *uri)
{
	const char *auth = strstr(uri, "://"), *at, *colon, *slash;

	if (auth == NULL)
		return sk_strdup(uri);
	auth += 3;
	at = strchr(auth, '@');
	colon = strchr(auth, ':');
	slash = strchr(auth, '/');
	if (at == NULL || colon == NULL || colon > at || (slash && slash < at))
		return sk_strdup(uri);
	return sk_asprintf("%.*sREDACTED%s", (int)(colon + 1 - uri), uri, at);
}

static int
get_contexts(json_t *root)
{
	const char *cur = json_string_value(json_object_get(root, "current-context"));
	const char *headers[] = { "CURRENT", "NAME", "MONGODB-URI", "DATABASE" };
	sk_table *t = sk_table_new(4, headers);
	sk_buf out = SK_BUF_INIT(0);
	json_t *c;
	size_t i;

	json_array_foreach(json_object_get(root, "contexts"), i, c)
	{
		const char *name = json_string_value(json_object_get(c, "name"));
		const char *uri = ctx_field(c, "mongodbURI"), *db = ctx_field(c, "database");
		char *shown = redact_uri(uri ? uri : "-");
		const char *cells[] = { cur && strcmp(cur, name) == 0 ? "*" : "", name, shown,
			db ? db : "-" };
		sk_table_add_row(t, cells);
		free(shown);
	}
	if (json_array_size(json_object_get(root, "contexts")) == 0) {
		fprintf(stderr, "No contexts in %s (spacectl config set-context NAME ...).\n",
		        sk_cli_context_file());
	} else {
		sk_table_render(t, &out);
		fwrite(out.data, 1, out.len, stdout);
	}
	sk_buf_dispose(&out);
	sk_table_free(t);
	return SK_EXIT_OK;
}

static int
current_context(json_t *root)
{
	const char *cur = json_string_value(json_object_get(root, "current-context"));

	if (cur == NULL || *cur == '\0') {
		sk_cli_errorf("current-context is not set in %s", sk_cli_context_file());
		return SK_EXIT_FAIL;
	}
	printf("%s\n", cur);
	return SK_EXIT_OK;
}

static int
use_context(json_t *root, const char *name)
{
	if (ctx_find(root, name) == NULL) {
		sk_cli_errorf("no context exists with the name \"%s\" in %s", name,
		        sk_cli_context_file());
		return SK_EXIT_FAIL;
	}
	json_object_set_new(root, "current-context", json_string(name));
	if (ctx_save(root) != SK_EXIT_OK)
		return SK_EXIT_FAIL;
	printf("Switched to context \"%s\".\n", name);
	return SK_EXIT_OK;
}

/* --mongodb-uri and --database checked as every command checks them. */
static int
check_values(void)
{
	sk_config_sources src = { .mongodb_uri = sk_cli.mongodb_uri, .database = sk_cli.database };
	sk_errlist errs = { NULL, 0 };
	sk_buf msg = SK_BUF_INIT(0);
	int rc = SK_EXIT_OK;

	if (sk_config_check_flags(&src, &errs) > 0) {
		sk_errlist_format(&errs, &msg);
		fflush(stdout);
		fprintf(stderr, "%s", msg.data ? msg.data : "");
		rc = SK_EXIT_FAIL;
	}
	sk_buf_dispose(&msg);
	sk_errlist_dispose(&errs);
	return rc;
}

static int
set_context(json_t *root, const char *name, bool make_current, const char *controller_config)
{
	json_t *c = ctx_find(root, name), *body;
	bool created = c == NULL;

	if (check_values() != SK_EXIT_OK)
		return SK_EXIT_FAIL;
	if (!sk_valid_name(name)) {
		sk_cli_errorf("\"%s\" is not a context name (a DNS-1123 label)", name);
		return SK_EXIT_FAIL;
	}
	if (created) {
		if (json_object_get(root, "contexts") == NULL)
			json_object_set_new(root, "contexts", json_array());
		c = json_pack("{s:s, s:{}}", "name", name, "context");
		json_array_append_new(json_object_get(root, "contexts"), c);
	}
	if ((body = json_object_get(c, "context")) == NULL)
		json_object_set_new(c, "context", body = json_object());
	if (sk_cli.mongodb_uri)
		json_object_set_new(body, "mongodbURI", json_string(sk_cli.mongodb_uri));
	if (sk_cli.database)
		json_object_set_new(body, "database", json_string(sk_cli.database));
	if (controller_config)
		json_object_set_new(body, "controllerConfig", json_string(controller_config));
	if (make_current)
		json_object_set_new(root, "current-context", json_string(name));
	if (ctx_save(root) != SK_EXIT_OK)
		return SK_EXIT_FAIL;
	printf("Context \"%s\" %s.\n", name, created ? "created" : "modified");
	if (make_current)
		printf("Switched to context \"%s\".\n", name);
	return SK_EXIT_OK;
}

static int
delete_context(json_t *root, const char *name)
{
	json_t *list = json_object_get(root, "contexts"), *c;
	const char *cur = json_string_value(json_object_get(root, "current-context"));
	size_t i;

	json_array_foreach(list, i, c)
	{
		const char *n = json_string_value(json_object_get(c, "name"));
		if (n == NULL || strcmp(n, name) != 0)
			continue;
		if (cur && strcmp(cur, name) == 0) {
			sk_cli_warnf("this removed your current context (spacectl config "
			             "use-context NAME)");
			json_object_del(root, "current-context");
		}
		json_array_remove(list, i);
		if (ctx_save(root) != SK_EXIT_OK)
			return SK_EXIT_FAIL;
		printf("Deleted context \"%s\".\n", name);
		return SK_EXIT_OK;
	}
	sk_cli_errorf("no context exists with the name \"%s\" in %s", name, sk_cli_context_file());
	return SK_EXIT_FAIL;
}

static int
view(json_t *root, bool raw)
{
	json_t *copy = json_deep_copy(root), *c;
	size_t i;
	int rc;

	json_array_foreach(json_object_get(copy, "contexts"), i, c)
	{
		const char *uri = ctx_field(c, "mongodbURI");
		char *shown;
		if (uri == NULL || raw)
			continue;
		shown = redact_uri(uri);
		json_object_set_new(
		        json_object_get(c, "context"), "mongodbURI", json_string(shown));
		free(shown);
	}
	rc = sk_cli_print_value(copy, SK_OUTPUT_YAML);
	json_decref(copy);
	return rc;
}

enum { OPT_CURRENT = SK_OPT_FIRST_CMD, OPT_RAW, OPT_CONTROLLER_CONFIG };

/* The subcommand's flags. */
typedef struct config_flags {
	bool current, raw;
	const char *controller_config; /* --controller-config */
} config_flags;

/* The subcommand's words after the flags: SUB [NAME]. */
static int
run(const char *sub, char **args, int n, const config_flags *f)
{
	bool named = strcmp(sub, "use-context") == 0 || strcmp(sub, "set-context") == 0 ||
	        strcmp(sub, "delete-context") == 0;
	json_t *root = NULL;
	int rc;

	if (n != (named ? 1 : 0))
		return sk_cli_usage_error(&help,
		        named ? "config %s takes one context name" : "config %s takes no arguments",
		        sub);
	if ((rc = ctx_load(sk_cli_context_file(), &root)) != SK_EXIT_OK)
		return rc;
	if (strcmp(sub, "get-contexts") == 0)
		rc = get_contexts(root);
	else if (strcmp(sub, "current-context") == 0)
		rc = current_context(root);
	else if (strcmp(sub, "use-context") == 0)
		rc = use_context(root, args[0]);
	else if (strcmp(sub, "set-context") == 0)
		rc = set_context(root, args[0], f->current, f->controller_config);
	else if (strcmp(sub, "delete-context") == 0)
		rc = delete_context(root, args[0]);
	else
		rc = view(root, f->raw);
	json_decref(root);
	return rc;
}

int
sk_cmd_config(int argc, char **argv)
{
	static const char *const subs[] = { "get-contexts", "current-context", "use-context",
		"set-context", "delete-context", "view" };
	static const struct option opts[] = { { "current", no_argument, NULL, OPT_CURRENT },
		{ "raw", no_argument, NULL, OPT_RAW },
		{ "controller-config", required_argument, NULL, OPT_CONTROLLER_CONFIG },
		SK_CLI_GLOBAL_OPTIONS, { 0 } };
	const size_t nsubs = sizeof(subs) / sizeof(subs[0]);
	config_flags f = { false, false, NULL };
	bool known = false;
	const char *sub, *s;
	int ch, rc;

	while ((ch = sk_cli_getopt(argc, argv, ":h", opts)) != -1) {
		if (ch == OPT_CURRENT)
			f.current = true;
		else if (ch == OPT_RAW)
			f.raw = true;
		else if (ch == OPT_CONTROLLER_CONFIG)
			f.controller_config = optarg;
		else if ((rc = sk_cli_opt(&help, ch, argv)) != SK_CLI_CONTINUE)
			return rc;
	}
	if (optind >= argc)
		return sk_cli_usage_error(
		        &help, "name a subcommand (get-contexts, use-context, ...)");
	sub = argv[optind++];
	for (size_t i = 0; i < nsubs; i++)
		known = known || strcmp(sub, subs[i]) == 0;
	if (!known) {
		s = sk_cli_suggest(sub, subs, nsubs);
		return sk_cli_usage_error(&help, "unknown subcommand \"%s\"%s%s%s", sub,
		        s ? "; did you mean \"" : "", s ? s : "", s ? "\"?" : "");
	}
	if (f.controller_config && strcmp(sub, "set-context") != 0)
		return sk_cli_usage_error(&help, "--controller-config is a flag of set-context");
	return run(sub, argv + optind, argc - optind, &f);
}
