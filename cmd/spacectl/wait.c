/*
 * spacectl wait: blocks until UserSpaces meet a condition (kubectl wait, for
 * pipelines): a status condition, deletion, or a JSONPath value. Polls the
 * store; exit 0 when every object met it, 1 on timeout or a missing object.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "api/names.h"
#include "spacectl.h"

static const sk_cli_help help = {
	"wait",
	"spacectl wait userspace name ... --for=condition=TYPE[=STATUS] [--timeout d]\n"
	"spacectl wait userspace -l selector --for=delete [--timeout d]\n"
	"spacectl wait userspace/name --for=jsonpath='{.status.phase}'=Running",
	"Waits until every named UserSpace (or every one matching -l when the wait\n"
	"starts) meets the condition, polling the database every 250ms, and prints\n"
	"userspace/NAME condition met for each as it does.\n"
	"\n"
	"Conditions (--for, required):\n"
	"  condition=Ready          the Ready condition is True (TYPE: Ready, Synced,\n"
	"                           DataPlaneHealthy, Drifted; case-insensitive)\n"
	"  condition=Ready=False    the condition has this status (True, False, Unknown)\n"
	"  delete                   the object is gone (a missing object counts as met)\n"
	"  jsonpath='{.a.b}'=VALUE  the field of the object (as get -o json prints it)\n"
	"                           equals VALUE; without =VALUE: the field is set\n"
	"\n"
	"Flags:\n"
	"  -l, --selector SEL    the objects matching this label selector\n"
	"      --for COND        what to wait for (above)\n"
	"      --timeout D       give up after this long (default 30s; 0: check once).\n"
	"                        Here --timeout is the wait's, as in kubectl; the\n"
	"                        database timeout stays 3s (or the global --timeout\n"
	"                        given before the command: spacectl --timeout 5s wait ...)\n"
	"\n"
	"Exit codes: 0 every object met the condition; 1 timed out (\"error: timed out\n"
	"waiting for the condition on userspaces/NAME\"), an object not found (except\n"
	"for --for=delete) or no object matching -l; 2 usage; 3 database unavailable.\n"
	"\n"
	"Examples:\n"
	"  spacectl apply -f alice.yaml && spacectl wait us alice --for=condition=Ready --timeout "
	"2m\n"
	"  spacectl wait us -l team=research --for=condition=Ready\n"
	"  spacectl delete us bob --wait=false && spacectl wait us bob --for=delete\n",
};

enum { OPT_FOR = SK_OPT_FIRST_CMD, OPT_WAIT_TIMEOUT };

#define POLL_MS 250
#define DEFAULT_TIMEOUT_MS (30 * 1000)

typedef enum { FOR_CONDITION, FOR_DELETE, FOR_JSONPATH } for_kind;

typedef struct wait_for {
	for_kind kind;
	char *what; /* condition type, or the JSONPath without braces (".status.phase") */
	char *value; /* wanted status/value; NULL: condition True / field set */
} wait_for;

typedef struct target {
	char *name;
	bool met;
} target;

typedef struct wait_ctx {
	wait_for cond;
	const char *selector_text;
	int64_t timeout_ms;
	target *targets;
	size_t n;
	int failed; /* the last poll's store error (0: none) */
} wait_ctx;

/* ---- --for ---- */

static int
parse_condition(const char *s, wait_for *f)
{
	const char *eq = strchr(s, '=');

	f->kind = FOR_CONDITION;
	f->what = eq ? sk_strndup(s, (size_t)(eq - s)) : sk_strdup(s);
	f->value = sk_strdup(eq ? eq + 1 : "True");
	return *f->what && *f->value ? 0 : SK_EINVALID;
}

/* jsonpath={.a.b}=v, with or without the braces and quotes. */
static int
parse_jsonpath(const char *s, wait_for *f)
{
	const char *close, *start = s;

	f->kind = FOR_JSONPATH;
	if (*s == '\'' || *s == '"')
		start = ++s;
	if (*s == '{') {
		if ((close = strchr(s, '}')) == NULL)
			return SK_EINVALID;
		f->what = sk_strndup(s + 1, (size_t)(close - s - 1));
		s = close + 1;
	} else {
		size_t n = strcspn(s, "='\"");
		f->what = sk_strndup(s, n);
		s += n;
	}
	if ((*s == '\'' || *s == '"') && start != s)
		s++;
	if (*s == '=')
		f->value = sk_strdup(s + 1);
	else if (*s != '\0')
		return SK_EINVALID;
	if (f->value && f->value[0] && (f->value[0] == '\'' || f->value[0] == '"')) {
		size_t n = strlen(f->value);
		if (n >= 2 && f->value[n - 1] == f->value[0]) {
			memmove(f->value, f->value + 1, n - 2);
			f->value[n - 2] = '\0';
		}
	}
	return f->what[0] == '.' && f->what[1] != '\0' ? 0 : SK_EINVALID;
}

static int
parse_for(const char *s, wait_for *f)
{
	if (strcmp(s, "delete") == 0) {
		f->kind = FOR_DELETE;
		return 0;
	}
	if (strncmp(s, "condition=", 10) == 0)
		return parse_condition(s + 10, f);
	if (strncmp(s, "jsonpath=", 9) == 0)
		return parse_jsonpath(s + 9, f);
	return SK_EINVALID;
}

/* ---- checks ---- */

/* The value at a dotted path (".status.phase", ".status.conditions[0].type"). Borrowed. */
static json_t *
json_at(json_t *v, const char *path)
{
	char *copy = sk_strdup(path), *save = NULL, *tok;

	for (tok = strtok_r(copy, ".", &save); tok && v; tok = strtok_r(NULL, ".", &save)) {
		char *br = strchr(tok, '[');
		if (br)
			*br = '\0';
		if (*tok)
			v = json_object_get(v, tok);
		while (br && v) {
			v = json_array_get(v, strtoul(br + 1, NULL, 10));
			br = strchr(br + 1, '[');
		}
	}
	free(copy);
	return v;
}

static bool
jsonpath_met(const sk_userspace *us, const wait_for *f)
{
	json_t *obj = sk_userspace_to_json(us), *v = json_at(obj, f->what);
	bool met = false;

	if (v != NULL && !json_is_null(v)) {
		if (f->value == NULL) {
			met = true;
		} else if (json_is_string(v)) {
			met = strcmp(json_string_value(v), f->value) == 0;
		} else {
			char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
			met = s && strcmp(s, f->value) == 0;
			free(s);
		}
	}
	json_decref(obj);
	return met;
}

static bool
condition_met(const sk_userspace *us, const wait_for *f)
{
	for (size_t i = 0; i < us->status.n_conditions; i++) {
		const sk_condition *c = &us->status.conditions[i];
		if (c->type && strcasecmp(c->type, f->what) == 0)
			return c->status && strcasecmp(c->status, f->value) == 0;
	}
	return false;
}

/* Whether t meets the condition now. A missing object sets *missing (unless
 * waiting for delete); a store failure sets *failed (the wait polls on). */
static bool
check_one(sk_store *st, wait_ctx *c, target *t, bool *missing, int *failed)
{
	sk_userspace *us = NULL;
	sk_error err;
	bool met = false;
	int rc;

	sk_error_clear(&err);
	rc = sk_store_get(st, t->name, &us, &err);
	if (rc == SK_ENOTFOUND) {
		*missing = c->cond.kind != FOR_DELETE;
		return c->cond.kind == FOR_DELETE;
	}
	if (rc != 0) {
		if (c->failed == 0)
			sk_cli_warnf("%s (retrying)", err.message);
		*failed = rc;
		return false;
	}
	if (c->cond.kind == FOR_CONDITION)
		met = condition_met(us, &c->cond);
	else if (c->cond.kind == FOR_JSONPATH)
		met = jsonpath_met(us, &c->cond);
	sk_userspace_free(us);
	return met;
}

/* One pass over the targets not yet met. Returns how many remain, or -1 when
 * one does not exist (the wait fails). */
static int
poll_once(sk_store *st, wait_ctx *c)
{
	int remaining = 0, failed = 0;

	for (size_t i = 0; i < c->n; i++) {
		target *t = &c->targets[i];
		bool missing = false;
		if (t->met)
			continue;
		if (check_one(st, c, t, &missing, &failed)) {
			t->met = true;
			printf("userspace/%s condition met\n", t->name);
			fflush(stdout);
			continue;
		}
		if (missing) {
			sk_cli_errorf("userspaces \"%s\" not found (NotFound)", t->name);
			return -1;
		}
		remaining++;
	}
	c->failed = failed;
	return remaining;
}

static void
sleep_ms(int64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	while (ms > 0 && nanosleep(&ts, &ts) != 0) {
	}
}

static int
wait_loop(sk_store *st, wait_ctx *c)
{
	int64_t deadline = sk_monotonic_ms() + c->timeout_ms;
	int left;

	for (;;) {
		if ((left = poll_once(st, c)) <= 0)
			return left == 0 ? SK_EXIT_OK : SK_EXIT_FAIL;
		int64_t now = sk_monotonic_ms();
		if (now >= deadline)
			break;
		sleep_ms(deadline - now < POLL_MS ? deadline - now : POLL_MS);
	}
	fflush(stdout);
	for (size_t i = 0; i < c->n; i++) {
		if (!c->targets[i].met)
			fprintf(stderr,
			        "error: timed out waiting for the condition on userspaces/%s\n",
			        c->targets[i].name);
	}
	return c->failed ? sk_cli_exit_code(c->failed) : SK_EXIT_FAIL;
}

/* ---- targets ---- */

static void
add_target(wait_ctx *c, const char *name)
{
	c->targets = sk_realloc(c->targets, (c->n + 1) * sizeof(*c->targets));
	c->targets[c->n].name = sk_strdup(name);
	c->targets[c->n++].met = false;
}

static int
select_targets(sk_store *st, wait_ctx *c)
{
	sk_userspace_list l = { NULL, 0, 0 };
	sk_selector *sel = NULL;
	sk_error err;
	int rc;

	sk_error_clear(&err);
	if (sk_selector_parse(c->selector_text, &sel, &err) != 0)
		return sk_cli_usage_error(&help, "-l: %s", err.message);
	rc = sk_store_list(st, sel, &l, &err);
	sk_selector_free(sel);
	if (rc != 0) {
		sk_cli_errorf("%s", err.message);
		return sk_cli_exit_code(rc);
	}
	for (size_t i = 0; i < l.len; i++)
		add_target(c, l.items[i]->meta.name);
	sk_userspace_list_dispose(&l);
	if (c->n == 0 && c->cond.kind != FOR_DELETE) {
		sk_cli_errorf("no matching resources found");
		return SK_EXIT_FAIL;
	}
	return SK_EXIT_OK;
}

/* "userspace NAME ...", "userspace/NAME ...", or "userspace -l SEL". */
static int
parse_targets(wait_ctx *c, int argc, char **argv)
{
	const char *slash;

	if (optind >= argc)
		return sk_cli_usage_error(&help, "name the resource: spacectl wait userspace NAME");
	for (int i = optind; i < argc; i++) {
		char *a = argv[i];
		if ((slash = strchr(a, '/')) != NULL) {
			char *res = sk_strndup(a, (size_t)(slash - a));
			bool ok = sk_cli_is_userspace_resource(res);
			free(res);
			if (!ok)
				return sk_cli_usage_error(
				        &help, "unknown resource type in \"%s\"", a);
			a = (char *)slash + 1;
		} else if (i == optind) {
			if (!sk_cli_is_userspace_resource(a))
				return sk_cli_usage_error(
				        &help, "unknown resource type \"%s\" (userspaces, us)", a);
			continue;
		}
		if (!sk_valid_name(a))
			return sk_cli_usage_error(&help, "\"%s\" is not a UserSpace name", a);
		add_target(c, a);
	}
	if (c->n > 0 && c->selector_text)
		return sk_cli_usage_error(&help, "names and -l cannot be used together");
	if (c->n == 0 && !c->selector_text)
		return sk_cli_usage_error(&help, "name the UserSpaces to wait for, or use -l");
	return SK_CLI_CONTINUE;
}

static int
parse_timeout(wait_ctx *c, const char *arg)
{
	int64_t ms;

	if (strcmp(arg, "0") == 0) {
		c->timeout_ms = 0;
		return SK_CLI_CONTINUE;
	}
	if (sk_duration_parse(arg, &ms) != 0 || ms < 0)
		return sk_cli_usage_error(
		        &help, "--timeout: invalid duration \"%s\" (e.g. 60s, 5m)", arg);
	c->timeout_ms = ms;
	return SK_CLI_CONTINUE;
}

static int
parse_args(wait_ctx *c, int argc, char **argv)
{
	/* --timeout is the wait's here (kubectl), so the global set is spelt out. */
	static const struct option opts[] = { { "selector", required_argument, NULL, 'l' },
		{ "for", required_argument, NULL, OPT_FOR },
		{ "timeout", required_argument, NULL, OPT_WAIT_TIMEOUT },
		{ "mongodb-uri", required_argument, NULL, SK_OPT_MONGODB_URI },
		{ "database", required_argument, NULL, SK_OPT_DATABASE },
		{ "context", required_argument, NULL, SK_OPT_CONTEXT },
		{ "help", no_argument, NULL, 'h' }, { 0 } };
	const char *for_text = NULL;
	int ch, rc;

	while ((ch = sk_cli_getopt(argc, argv, ":l:h", opts)) != -1) {
		if (ch == 'l') {
			c->selector_text = optarg;
		} else if (ch == OPT_FOR) {
			for_text = optarg;
		} else if (ch == OPT_WAIT_TIMEOUT) {
			if ((rc = parse_timeout(c, optarg)) != SK_CLI_CONTINUE)
				return rc;
		} else if ((rc = sk_cli_opt(&help, ch, argv)) != SK_CLI_CONTINUE) {
			return rc;
		}
	}
	if (for_text == NULL)
		return sk_cli_usage_error(&help, "--for is required (e.g. --for=condition=Ready)");
	if (parse_for(for_text, &c->cond) != 0)
		return sk_cli_usage_error(&help,
		        "--for: \"%s\" is not condition=TYPE[=STATUS], delete or "
		        "jsonpath='{.path}'[=VALUE]",
		        for_text);
	return parse_targets(c, argc, argv);
}

static void
ctx_dispose(wait_ctx *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->targets[i].name);
	free(c->targets);
	free(c->cond.what);
	free(c->cond.value);
}

int
sk_cmd_wait(int argc, char **argv)
{
	wait_ctx c;
	sk_store *st = NULL;
	int rc;

	memset(&c, 0, sizeof(c));
	c.timeout_ms = DEFAULT_TIMEOUT_MS;
	if ((rc = parse_args(&c, argc, argv)) != SK_CLI_CONTINUE)
		goto done;
	if ((rc = sk_cli_store_open(&st)) != SK_EXIT_OK)
		goto done;
	if (c.selector_text && (rc = select_targets(st, &c)) != SK_EXIT_OK)
		goto done;
	rc = wait_loop(st, &c);
done:
	sk_store_close(st);
	ctx_dispose(&c);
	return rc;
}
