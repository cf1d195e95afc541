/*
 * spacectl explain: the fields of UserSpace, kubectl explain style, from
 * the one schema table (pkg/api sk_spec_fields: type, default, bounds,
 * enum values, description). The objects around the spec rows (metadata,
 * spec, spec.lifecycle, ...) are described in the short table below.
 */
#include <stdlib.h>
#include <string.h>

#include "api/schema.h"
#include "spacectl.h"

static const sk_cli_help help = {
	"explain",
	"spacectl explain userspace|spacequota[.field[.field ...]]",
	"Describes a field of UserSpace (or SpaceQuota) and lists the fields under\n"
	"it: type, default, allowed values and bounds, from the same schema table\n"
	"the validator and the CRD use. Works offline.\n"
	"\n"
	"Exit codes: 0 done; 1 no such field; 2 usage.\n"
	"\n"
	"Examples:\n"
	"  spacectl explain userspace\n"
	"  spacectl explain userspace.spec\n"
	"  spacectl explain us.spec.lifecycle.idleTimeout\n"
	"  spacectl explain spacequota.spec.hard\n",
};

/* The objects that hold the schema rows; path "" is the resource itself. */
static const struct object_doc {
	const char *path;
	const char *desc;
} OBJECTS[] = {
	{ "", "A UserSpace declares one resident sandbox for one user." },
	{ "apiVersion", "spacekeeper.dev/v1alpha1." },
	{ "kind", "UserSpace." },
	{ "metadata",
	        "Standard object metadata: name, labels, annotations; the store sets uid, "
	        "generation, resourceVersion, creationTimestamp, deletionTimestamp and "
	        "finalizers." },
	{ "metadata.name",
	        "The object's name, a DNS-1123 label (1-63 characters); the key of "
	        "everything." },
	{ "metadata.labels", "Labels, selected with -l." },
	{ "metadata.annotations",
	        "Annotations; spacekeeper.dev/paused=true holds every "
	        "provider change for this object (report only)." },
	{ "spec", "The desired state of the user's sandbox." },
	{ "spec.resources", "The sandbox size." },
	{ "spec.lifecycle", "When the sandbox sleeps and wakes." },
	{ "spec.lifecycle.archive",
	        "How a space asleep for archiveAfter is archived: its files into object "
	        "storage, or a provider snapshot." },
	{ "spec.health", "What counts as unhealthy, and what the controller does about it." },
	{ "spec.workspace", "The user's files: what a migration copies to the new sandbox." },
	{ "spec.network",
	        "The sandbox's network policy: which destinations it may reach, and whether "
	        "its URLs need its access token. Unset: the provider's own (open)." },
	{ "spec.storage",
	        "Where the user's files live beyond any one sandbox: a provider volume "
	        "mounted into every sandbox of the space." },
	{ "spec.storage.volume",
	        "A provider volume for the user (E2B team volumes), created if missing and "
	        "mounted at mountPath into every sandbox the controller creates; what lies "
	        "outside it (installed packages, memory) does not survive a replacement." },
	{ "spec.source",
	        "Where the space's first sandbox comes from, when not from spec.template alone "
	        "(spacectl fork). Read on the first create only." },
	{ "spec.source.fork",
	        "The first sandbox is the provider's fork of another space's sandbox (its "
	        "files as they are then; E2B only); that space is left as it is." },
	{ "spec.snapshots",
	        "Persistent snapshots of the space taken through its provider on a schedule, "
	        "the oldest beyond keep deleted (E2B)." },
	{ "spec.migration",
	        "How a migration (updateStrategy Migrate, spacectl rollout restart) runs: when "
	        "it starts, how much it copies, what happens to the old sandbox." },
	{ "status",
	        "The observed state, written by the controller (read-only): phase, "
	        "sandboxID, conditions, drift, archive (the newest archive of the "
	        "workspace). See spacectl describe." },
};
#define NOBJECTS (sizeof(OBJECTS) / sizeof(OBJECTS[0]))

static const char *
object_desc(const char *path)
{
	for (size_t i = 0; i < NOBJECTS; i++) {
		if (strcmp(OBJECTS[i].path, path) == 0)
			return OBJECTS[i].desc;
	}
	return NULL;
}

static const char *
type_name(const sk_field *f)
{
	switch (f->type) {
	case SK_FIELD_INT: return "integer";
	case SK_FIELD_BOOL: return "boolean";
	case SK_FIELD_MAP: return "map[string]string";
	default: return "string";
	}
}

/* The last segment of path. */
static const char *
leaf(const char *path)
{
	const char *dot = strrchr(path, '.');

	return dot ? dot + 1 : path;
}

/* A field row's description: its own text, then what the table says. */
static void
field_text(const sk_field *f, sk_buf *b)
{
	if (f->desc)
		sk_buf_printf(b, "%s ", f->desc);
	if (f->type == SK_FIELD_ENUM) {
		sk_buf_printf(b, "One of:");
		for (size_t i = 0; f->names[i]; i++)
			sk_buf_printf(b, "%s %s", i ? "," : "", f->names[i]);
		sk_buf_printf(b, ". ");
	}
	if (f->type == SK_FIELD_STRING && f->rule)
		sk_buf_printf(b, "Must match %s. ", f->rule);
	if (f->type == SK_FIELD_INT)
		sk_buf_printf(b, "From %lld to %lld. ", (long long)f->min, (long long)f->max);
	if (f->type == SK_FIELD_DURATION && !f->desc)
		sk_buf_printf(b, "Go duration (e.g. 30s, 15m). ");
	if (f->type == SK_FIELD_MAP)
		sk_buf_printf(b, "At most %lld entries. ", (long long)f->max);
	if (f->required)
		sk_buf_printf(b, "Required. ");
	if (f->def)
		sk_buf_printf(b, "Default: %s.", f->def);
	while (b->len > 0 && b->data[b->len - 1] == ' ')
		b->data[--b->len] = '\0';
}

/* Prints text wrapped at 72 columns, each line indented. */
static void
print_wrapped(const char *text, int indent)
{
	int col = 0;

	while (*text) {
		size_t n = strcspn(text, " ");
		if (col > 0 && col + 1 + (int)n > 72) {
			printf("\n");
			col = 0;
		}
		if (col == 0)
			col = printf("%*s%.*s", indent, "", (int)n, text);
		else
			col += printf(" %.*s", (int)n, text);
		text += n;
		text += strspn(text, " ");
	}
	printf("\n");
}

/* The children of path (one segment below), each once, in table order. */
static size_t
children(const char *path, const char **names, size_t max)
{
	static const char *const top[] = { "apiVersion", "kind", "metadata", "spec", "status" };
	static const char *const meta[] = { "metadata.name", "metadata.labels",
		"metadata.annotations" };
	size_t n = 0, plen = strlen(path);

	if (*path == '\0') {
		memcpy(names, top, sizeof(top));
		return sizeof(top) / sizeof(top[0]);
	}
	if (strcmp(path, "metadata") == 0) {
		memcpy(names, meta, sizeof(meta));
		return sizeof(meta) / sizeof(meta[0]);
	}
	for (size_t i = 0; i < sk_spec_n_fields && n < max; i++) {
		const char *p = sk_spec_fields[i].path, *dot;
		if (strncmp(p, path, plen) != 0 || p[plen] != '.')
			continue;
		dot = strchr(p + plen + 1, '.');
		if (n > 0 && strncmp(names[n - 1], p, dot ? (size_t)(dot - p) : strlen(p)) == 0)
			continue; /* rows of one object are adjacent */
		names[n++] = dot ? sk_strndup(p, (size_t)(dot - p)) : p;
	}
	return n;
}

static bool
is_row(const char *path)
{
	return sk_spec_field(path) != NULL;
}

static void
print_child(const char *path)
{
	const sk_field *f = sk_spec_field(path);
	sk_buf b = SK_BUF_INIT(0);
	const char *d;

	if (f) {
		printf("   %s\t<%s>%s\n", leaf(path), type_name(f),
		        f->required ? " -required-" : "");
		field_text(f, &b);
		d = b.data;
	} else {
		bool str = strcmp(path, "apiVersion") == 0 || strcmp(path, "kind") == 0 ||
		        strcmp(path, "metadata.name") == 0;
		bool map = strncmp(path, "metadata.", 9) == 0 && !str;
		printf("   %s\t<%s>\n", leaf(path),
		        str           ? "string"
		                : map ? "map[string]string"
		                      : "Object");
		d = object_desc(path);
	}
	if (d && *d)
		print_wrapped(d, 5);
	printf("\n");
	sk_buf_dispose(&b);
}

static int
explain(const char *path)
{
	const char *names[64];
	const sk_field *f = sk_spec_field(path);
	size_t n = children(path, names, 64);
	sk_buf b = SK_BUF_INIT(0);
	const char *d;

	if (f == NULL && n == 0 && object_desc(path) == NULL) {
		sk_cli_errorf(
		        "field \"%s\" does not exist in UserSpace (spacectl explain userspace "
		        "lists the fields)",
		        path);
		return SK_EXIT_FAIL;
	}
	printf("KIND:     %s\nVERSION:  %s\n\n", SK_KIND_USERSPACE, SK_API_VERSION);
	if (*path)
		printf("FIELD:    %s <%s>\n\n", leaf(path),
		        f                                              ? type_name(f)
		                : n > 0 || strcmp(path, "status") == 0 ? "Object"
		                                                       : "string");
	if (f)
		field_text(f, &b);
	printf("DESCRIPTION:\n");
	d = f ? b.data : object_desc(path);
	print_wrapped(d ? d : "", 5);
	if (n > 0)
		printf("\nFIELDS:\n");
	for (size_t i = 0; i < n; i++) {
		print_child(names[i]);
		if (*path && strcmp(path, "metadata") != 0 && !is_row(names[i]))
			free((char *)names[i]);
	}
	sk_buf_dispose(&b);
	return SK_EXIT_OK;
}

static int
unknown_type(const char *type)
{
	size_t n = 0;
	const char *s;

	while (sk_cli_userspace_names[n])
		n++;
	if ((s = sk_cli_suggest(type, sk_cli_userspace_names, n)) != NULL)
		return sk_cli_usage_error(
		        &help, "unknown resource type \"%s\"; did you mean \"%s\"?", type, s);
	return sk_cli_usage_error(&help, "unknown resource type \"%s\" (userspace, us)", type);
}

int
sk_cmd_explain(int argc, char **argv)
{
	static const struct option opts[] = { SK_CLI_GLOBAL_OPTIONS, { 0 } };
	const char *arg, *dot;
	char *type;
	int ch, rc;

	while ((ch = sk_cli_getopt(argc, argv, ":h", opts)) != -1) {
		if ((rc = sk_cli_opt(&help, ch, argv)) != SK_CLI_CONTINUE)
			return rc;
	}
	if (argc - optind != 1)
		return sk_cli_usage_error(
		        &help, "name one resource or field: explain userspace.spec");
	arg = argv[optind];
	dot = strchr(arg, '.');
	type = dot ? sk_strndup(arg, (size_t)(dot - arg)) : sk_strdup(arg);
	if (sk_cli_is_quota_resource(type)) {
		free(type);
		return sk_cli_quota_explain(dot ? dot + 1 : "");
	}
	rc = sk_cli_is_userspace_resource(type) ? SK_CLI_CONTINUE : unknown_type(type);
	free(type);
	if (rc != SK_CLI_CONTINUE)
		return rc;
	return explain(dot ? dot + 1 : "");
}
