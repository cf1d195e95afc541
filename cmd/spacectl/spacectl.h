/*
 * spacectl: the command table's entry points and the helpers every command
 * shares (common.c). One file per command, each exporting
 * `int sk_cmd_NAME(int argc, char **argv)` that returns the exit code.
 */
#ifndef SK_SPACECTL_H
#define SK_SPACECTL_H

#include <getopt.h>
#include <stdio.h>

#include "api/config.h"
#include "api/context.h"
#include "api/doc.h"
#include "api/errlist.h"
#include "api/output.h"
#include "api/quota.h"
#include "api/selector.h"
#include "api/userspace.h"
#include "store/store.h"
#include "util/util.h"

/* Exit codes (docs/spacectl.md, "Exit codes"); scripts rely on them. */
#define SK_EXIT_OK 0
#define SK_EXIT_FAIL 1 /* invalid input, conflict, not found; diff: differences */
#define SK_EXIT_USAGE 2 /* bad flags or arguments; diff: any error */
#define SK_EXIT_UNAVAILABLE 3 /* database or provider unavailable */
/* What they mean, for spacectl --help and the pages of commands without their own. */
#define SK_CLI_EXIT_CODES                                                                          \
	"0 success; 1 failure (invalid input, conflict, not found; diff:\n"                        \
	"differences); 2 usage error (diff: any error); 3 database or provider\n"                  \
	"unavailable, or timed out."

/* ---- commands (one line each in main.c's table) ---- */
int sk_cmd_apply(int argc, char **argv);
int sk_cmd_create(int argc, char **argv);
int sk_cmd_replace(int argc, char **argv);
int sk_cmd_get(int argc, char **argv);
/* get all (get_all.c): every kind's table; sk_cmd_get hands it over. */
int sk_cli_get_all(int argc, char **argv);
int sk_cmd_describe(int argc, char **argv);
int sk_cmd_delete(int argc, char **argv);
int sk_cmd_diff(int argc, char **argv);
int sk_cmd_validate(int argc, char **argv);
int sk_cmd_version(int argc, char **argv);
int sk_cmd_sandboxes(int argc, char **argv);
int sk_cmd_snapshot(int argc, char **argv);
/* describe (snapshot.c): whether the space took or restored a snapshot
 * (a SnapshotCreated event, a RestoreSnapshot migration), and its current
 * sandbox's snapshots at its provider as a section (errors inline). */
bool sk_cli_space_uses_snapshots(sk_store *st, const sk_userspace *us);
void sk_cli_print_snapshots(sk_store *st, const sk_userspace *us);
int sk_cmd_plan(int argc, char **argv);
int sk_cmd_drift(int argc, char **argv);
int sk_cmd_top(int argc, char **argv);
int sk_cmd_events(int argc, char **argv);
int sk_cmd_wait(int argc, char **argv);
int sk_cmd_annotate(int argc, char **argv);
int sk_cmd_label(int argc, char **argv);
int sk_cmd_rollout(int argc, char **argv);
int sk_cmd_fork(int argc, char **argv);
int sk_cmd_patch(int argc, char **argv);
int sk_cmd_edit(int argc, char **argv);
int sk_cmd_explain(int argc, char **argv);
int sk_cmd_completion(int argc, char **argv);
int sk_cmd_config(int argc, char **argv);
int sk_cmd_api_resources(int argc, char **argv);

/* The command table (main.c): --help, completion and the reference pages. */
typedef struct sk_cli_command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} sk_cli_command;
const sk_cli_command *sk_cli_commands(size_t *n);

/* ---- global flags (every command accepts them) ---- */
typedef struct sk_cli_globals {
	const char *mongodb_uri; /* NULL: $SPACEKEEPER_MONGODB_URI or the default */
	const char *database; /* NULL: "spacekeeper" */
	int64_t timeout_ms; /* store timeout, default 3 s */
	const char *context; /* --context: NULL uses current-context (config.c) */
	const sk_controller_config *config; /* set by sk_cli_load_config (borrowed) */
	bool recursive; /* a command's -R: -f directories read with their subdirectories */
} sk_cli_globals;
extern sk_cli_globals sk_cli;

/* Long-option values of the global flags (beyond any char). */
enum {
	SK_OPT_MONGODB_URI = 256,
	SK_OPT_DATABASE,
	SK_OPT_TIMEOUT,
	SK_OPT_CONTEXT,
	SK_OPT_FIRST_CMD = 300, /* commands number their own long-only flags from here */
};
/* clang-format off */
#define SK_CLI_GLOBAL_OPTIONS \
	{ "mongodb-uri", required_argument, NULL, SK_OPT_MONGODB_URI }, \
	{ "database", required_argument, NULL, SK_OPT_DATABASE }, \
	{ "timeout", required_argument, NULL, SK_OPT_TIMEOUT }, \
	{ "context", required_argument, NULL, SK_OPT_CONTEXT }, \
	{ "help", no_argument, NULL, 'h' }
/* clang-format on */
#define SK_CLI_GLOBAL_HELP                                                                         \
	"Global flags:\n"                                                                          \
	"  --mongodb-uri URI    MongoDB URI (env SPACEKEEPER_MONGODB_URI,\n"                       \
	"                       default mongodb://127.0.0.1:27017)\n"                              \
	"  --database NAME      database name (default spacekeeper)\n"                             \
	"  --context NAME       use this context of spacectl config (default current-context)\n"   \
	"  --timeout DURATION   give up on an unreachable database after this long (default 3s)\n" \
	"  -h, --help           print this help\n"

/* What --help prints for one command. */
typedef struct sk_cli_help {
	const char *name; /* "apply" */
	const char *usage; /* style(9) line(s) without the "usage: " prefix */
	const char *text; /* description, flags, examples */
} sk_cli_help;

/* Result of sk_cli_opt for flags the command did not handle itself. */
#define SK_CLI_CONTINUE (-1)
/* Handles the global flags, -h, unknown flags and missing arguments after
 * getopt_long returned c. Returns SK_CLI_CONTINUE or an exit code. */
int sk_cli_opt(const sk_cli_help *h, int c, char **argv);
/* getopt_long with the error reporting switched off (sk_cli_opt reports). */
int sk_cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts);
/* Prints "spacectl NAME: MSG", the usage and a hint to stderr; returns SK_EXIT_USAGE. */
int sk_cli_usage_error(const sk_cli_help *h, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
void sk_cli_print_help(const sk_cli_help *h, FILE *f);

/* What a command's --help shows, as data (docs.c): the help it printed and
 * the option table it parsed with. */
typedef struct sk_cli_seen {
	const sk_cli_help *help;
	const struct option *opts;
	const char *shortopts;
} sk_cli_seen;
/* Runs cmd --help with stdout captured; returns what it printed (caller
 * frees) and, when seen is not NULL, fills it. */
char *sk_cli_help_of(const sk_cli_command *cmd, sk_cli_seen *seen);
/* The hidden command __gen-docs markdown|man DIR (docs.c): the reference pages. */
int sk_cli_gen_docs(int argc, char **argv);
/* spacectl's own help (main.c): the usage lines, the flags before the
 * command, and the text (commands, exit codes; caller frees). */
extern const char sk_cli_top_usage[];
extern const struct option sk_cli_top_options[];
char *sk_cli_top_text(void);

/* "spacectl: message" on stderr. */
void sk_cli_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sk_cli_warnf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Exit code for a library error code (unavailable -> 3, otherwise 1). */
int sk_cli_exit_code(int code);

/* Opens the store with the global flags; prints the error and returns its exit code. */
int sk_cli_store_open(sk_store **out);
/* The objects matching -l SELECTOR (NULL: all) into out; a bad selector is a
 * usage error of h. Returns SK_EXIT_OK or the exit code (error printed). */
int sk_cli_list_selected(
        sk_store *st, const sk_cli_help *h, const char *selector_text, sk_userspace_list *out);
/* Loads --config PATH (NULL: the context's controllerConfig, else the defaults),
 * printing every error; returns an SK_EXIT_* code. */
int sk_cli_load_config(const char *path, sk_controller_config **cfg);

/* An object as -o json|yaml prints it: metadata.resourceVersion is a string,
 * as Kubernetes clients require. Caller decrefs. */
json_t *sk_cli_userspace_json(const sk_userspace *us);

/* Output formats (-o). */
typedef enum sk_output {
	SK_OUTPUT_TABLE,
	SK_OUTPUT_WIDE,
	SK_OUTPUT_YAML,
	SK_OUTPUT_JSON,
} sk_output;
int sk_cli_output_parse(const char *s, sk_output *out);
/* Prints a JSON value as JSON (indented) or YAML to stdout. Returns an exit code. */
int sk_cli_print_value(const json_t *v, sk_output fmt);

/* True when s names the UserSpace resource ("userspace", "userspaces", "us", ...). */
bool sk_cli_is_userspace_resource(const char *s);

/* ---- input documents (-f PATH, repeatable) ---- */
typedef struct sk_cli_input {
	sk_doclist docs;
	sk_userspace **objs; /* parallel to docs.items; NULL entries when invalid */
	size_t len;
	/* kind SpaceQuota, moved out of docs (quota.c); NULL entries when invalid */
	sk_doc **quota_docs;
	struct sk_spacequota **quotas;
	size_t n_quotas;
} sk_cli_input;

/* Loads every path, validates every document and checks that names and
 * spec.userID values are unique across the input. Prints every problem and
 * returns SK_EXIT_FAIL (nothing usable), or SK_EXIT_OK. An input without
 * documents is an error ("no objects found in PATH"). */
int sk_cli_input_load(sk_cli_input *in, char **paths, size_t npaths);
/* The same for a create (create, validate): metadata.generateName without
 * metadata.name gets a generated name, as the API server gives it on create
 * (elsewhere it is an error: apply and diff need the name). */
int sk_cli_input_load_create(sk_cli_input *in, char **paths, size_t npaths);
void sk_cli_input_dispose(sk_cli_input *in);
/* ---- apply records (record.c): an interrupted apply is found and rolled back ---- */
/* A new apply's record id (start time, host, pid). Caller frees. */
char *sk_cli_record_new_id(int64_t start_ms);
/* Writes the record of an apply: items, each {name, action: create|configure,
 * before: the stored object (configure), after: the object as written}, in
 * parts; *nparts says how many were written (also on an error). */
int sk_cli_record_write(sk_store *st, const char *apply_id, json_t *items, int64_t start_ms,
        size_t *nparts, sk_error *err);
int sk_cli_record_remove(sk_store *st, const char *apply_id, size_t nparts, sk_error *err);
/* Rolls back every interrupted apply whose process is gone (or every one,
 * force: apply --recover); refuses (exit 1) while one may still be running.
 * Prints what it does. Returns an exit code. */
int sk_cli_records_recover(sk_store *st, bool force);
/* A warning per apply that has not finished (get, diff). */
void sk_cli_records_warn(sk_store *st);
/* The ControllerConfig of get's retention warnings: path (errors printed,
 * SK_EXIT_FAIL), else the context's controllerConfig read quietly (*out NULL
 * when there is none or it does not load). Not the database's settings. */
int sk_cli_retention_config(const char *path, sk_controller_config **out);
/* get's "Warning:" line on stderr per space asleep near its provider's
 * pausedRetention with no archive in cfg (NULL: none); returns how many. */
size_t sk_cli_retention_warn(const sk_controller_config *cfg, sk_userspace *const *items, size_t n);

/* The error apply and diff give when another object holds want's spec.userID. */
void sk_cli_user_id_taken(const sk_userspace *want, const sk_doc *doc, const char *holder);
/* "a.yaml:3" for error messages; static buffer, one at a time. */
const char *sk_cli_doc_where(const sk_doc *d, const char *field);

/* A repeatable string flag (-f). */
typedef struct sk_cli_strv {
	char **items;
	size_t len;
} sk_cli_strv;
void sk_cli_strv_push(sk_cli_strv *v, char *s);
void sk_cli_strv_dispose(sk_cli_strv *v); /* frees the array, not the strings */
/* Parses the flags of a command that takes only -f PATH (repeatable, required) and the
 * global flags; returns SK_CLI_CONTINUE or the exit code (help printed, usage error). */
int sk_cli_parse_files_only(int argc, char **argv, const sk_cli_help *help, sk_cli_strv *files);

/* ---- contexts (config.c) ---- */
/* The context file: $SPACECTL_CONFIG, $XDG_CONFIG_HOME/spacectl/config.yaml
 * or ~/.config/spacectl/config.yaml. Static buffer. */
const char *sk_cli_context_file(void);
/* The context the command line selects (--context, else current-context);
 * out->name NULL when none. Strings borrow from *keep (caller decrefs).
 * Prints errors (invalid file, unknown context) and returns an exit code. */
int sk_cli_current_context(sk_config_context *out, json_t **keep);

/* ---- writing a whole object (patch.c; patch and edit) ---- */
/* Labels, annotations and spec equal (what apply, patch, edit and records compare; common.c). */
bool sk_cli_same_desired(const sk_userspace *a, const sk_userspace *b);
/* Validates d (a whole UserSpace as the user wrote it) as apply does and
 * makes it the next version of cur: the same name (a rename is an error),
 * cur's resourceVersion for the compare-and-swap. SK_EINVALID with errs. */
int sk_cli_next_version(const sk_userspace *cur, sk_doc *d, sk_userspace **out, sk_errlist *errs);

/* ---- object arguments (objects.c) ---- */
/* Reads the objects a command names, in kubectl's two forms: "TYPE NAME ..." or
 * "TYPE/NAME ..." (TYPE: userspace, userspaces, us, ...). type_optional: bare
 * names are accepted too (events, plan). Names are appended to names (borrowed
 * from args). Returns SK_CLI_CONTINUE, or the exit code of a usage error. A
 * mistyped type gets a "did you mean" hint. */
int sk_cli_object_args(
        const sk_cli_help *h, char **args, int n, bool type_optional, sk_cli_strv *names);
/* The candidate closest to word by edit distance, when close enough to be a
 * typo (at most 2 edits, fewer than half its length); NULL otherwise. */
const char *sk_cli_suggest(const char *word, const char *const *candidates, size_t n);
/* The resource type names sk_cli_is_userspace_resource accepts (NULL-terminated). */
extern const char *const sk_cli_userspace_names[];

/* ---- JSONPath templates (jsonpath.c; kubectl's common subset) ---- */
typedef struct sk_jsonpath sk_jsonpath;
/* Parses "{.a.b} text {range .items[*]}{.x}{\"\\n\"}{end}"; msg names what is
 * unsupported and where. */
int sk_cli_jsonpath_parse(const char *tmpl, sk_jsonpath **out, char *msg, size_t msglen);
/* The same tree from a Go template's subset ({{.a.b}}, {{range .items}}...{{end}},
 * {{index .a "key"}}, {{"text"}}); a missing value prints <no value>, as Go's does. */
int sk_cli_gotemplate_parse(const char *tmpl, sk_jsonpath **out, char *msg, size_t msglen);
void sk_cli_jsonpath_free(sk_jsonpath *jp); /* NULL-safe */
/* Appends the template's output for root to out. */
void sk_cli_jsonpath_exec(const sk_jsonpath *jp, json_t *root, sk_buf *out);
/* The values the template's {path} parts select from root, as a new array. */
json_t *sk_cli_jsonpath_select(const sk_jsonpath *jp, json_t *root);

/* ---- get -o custom-columns=HEADER:PATH,... and --field-selector (columns.c) ---- */
typedef struct sk_cli_columns sk_cli_columns;
/* msg names the column or part that is wrong, with its offset. */
int sk_cli_columns_parse(const char *spec, sk_cli_columns **out, char *msg, size_t msglen);
void sk_cli_columns_free(sk_cli_columns *c); /* NULL-safe */
/* The table of objs (as -o json prints them): a cell is its values joined with
 * ",", <none> when there is none. */
void sk_cli_columns_print(const sk_cli_columns *c, json_t *const *objs, size_t n, bool no_headers);
/* Renders t to stdout, less its header line when no_headers (--no-headers). */
void sk_cli_table_write(const sk_table *t, bool no_headers);
typedef struct sk_cli_fieldsel sk_cli_fieldsel;
/* FIELD=VALUE, FIELD==VALUE, FIELD!=VALUE, comma-separated (all must hold);
 * an unknown field is SK_EINVALID ("field label not supported"). */
int sk_cli_fieldsel_parse(const char *text, sk_cli_fieldsel **out, sk_error *err);
void sk_cli_fieldsel_free(sk_cli_fieldsel *s); /* NULL-safe */
/* Whether obj (as -o json prints it) matches; a NULL selector matches all. */
bool sk_cli_fieldsel_matches(const sk_cli_fieldsel *s, json_t *obj);

/* ---- get's outputs (table.c, get_output.c, watch.c) ---- */
/* What get's table shows. */
typedef struct sk_cli_table_opts {
	bool wide, show_labels, no_headers, last_only;
	const sk_cli_strv *label_columns; /* -L keys; NULL: none */
	bool sized; /* columns as wide as their widest usual value (get and get -w alike) */
	bool kind_prefix; /* NAME as userspace/NAME (get all) */
} sk_cli_table_opts;
/* get's table of UserSpaces (table.c). */
void sk_cli_userspace_table_print(sk_userspace *const *items, size_t n, const sk_cli_table_opts *o);
/* What get prints and how (get_output.c): -o, -L, --field-selector, --sort-by. */
typedef struct sk_cli_get_output {
	sk_output fmt;
	bool names_only; /* -o name */
	sk_jsonpath *template; /* -o jsonpath=... or go-template=... */
	sk_cli_columns *columns; /* -o custom-columns=... */
	sk_cli_strv label_columns; /* -L */
	sk_cli_fieldsel *fields; /* --field-selector */
	sk_jsonpath *sort_by; /* --sort-by */
	bool no_headers, show_labels;
	bool kind_prefix; /* table NAME as userspace/NAME (get all) */
	const sk_controller_config *cfg; /* retention warnings (borrowed; NULL none) */
} sk_cli_get_output;
/* The flag parsers: SK_CLI_CONTINUE, or the exit code of a usage error (h's). */
int sk_cli_get_output_parse(sk_cli_get_output *o, const sk_cli_help *h, const char *arg); /* -o */
int sk_cli_get_sort_by_parse(sk_cli_get_output *o, const sk_cli_help *h, const char *arg);
int sk_cli_get_field_selector_parse(sk_cli_get_output *o, const sk_cli_help *h, const char *arg);
void sk_cli_get_label_columns_add(sk_cli_get_output *o, char *arg); /* -L K1,K2 */
/* Prints the objects of all that --field-selector keeps; single: one object
 * (yaml, json, templates) rather than a List. Returns an exit code. */
int sk_cli_get_print(const sk_cli_get_output *o, sk_userspace **all, size_t nall, bool single);
void sk_cli_get_output_dispose(sk_cli_get_output *o);
/* get -w (watch.c): prints the objects (the named ones, or those matching sel),
 * then one row per change until Ctrl-C or timeout_ms (0: none). Returns an exit code. */
int sk_cli_get_watch(sk_store *st, char **names, size_t nnames, const sk_selector *sel,
        const sk_cli_get_output *out, int64_t timeout_ms);

/* The object as the user wrote it: apiVersion, kind, metadata (name, labels,
 * annotations) and the defaulted spec. What apply compares and diff prints. */
json_t *sk_cli_desired_json(const sk_userspace *us);

/* ---- SpaceQuota (quota.c) ---- */
struct sk_spacequota;
/* True when s names the SpaceQuota resource ("spacequotas", "sq", ...). */
bool sk_cli_is_quota_resource(const char *s);
/* True when the first argument after the flags of get, describe or delete
 * names spacequotas (or is sq/NAME): the command is quota.c's. */
bool sk_cli_quota_args(int argc, char **argv);
/* The first argument of get, describe or delete that is not a flag or a
 * flag's value: the resource type (or TYPE/NAME); NULL when none. */
const char *sk_cli_resource_word(int argc, char **argv);
/* get's table of quotas; kind_prefix: NAME as spacequota/NAME (get all). */
void sk_cli_quota_table_print(
        sk_spacequota *const *items, size_t n, bool no_headers, bool kind_prefix);
int sk_cli_quota_get(int argc, char **argv);
int sk_cli_quota_describe(int argc, char **argv);
int sk_cli_quota_delete(int argc, char **argv);
/* explain spacequota[.path]: path "" is the kind. */
int sk_cli_quota_explain(const char *path);
void sk_cli_quota_describe_one(const struct sk_spacequota *q, bool blank_before);
/* Moves the SpaceQuota documents of in->docs to in->quotas, validated
 * (errors printed: SK_EXIT_FAIL). */
int sk_cli_input_take_quotas(sk_cli_input *in);
void sk_cli_input_quotas_dispose(sk_cli_input *in);
/* Admission: refuses (printed, SK_EXIT_FAIL) when a UserSpace of the input
 * would take a quota (stored, or of the input) past spec.hard.spaces. */
int sk_cli_quota_admit(sk_store *st, const sk_cli_input *in);
/* Writes the input's quotas (dry: decides only), one line each. */
int sk_cli_quota_write(sk_store *st, const sk_cli_input *in, bool dry, const char *suffix);

#endif
