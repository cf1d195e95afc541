/*
 * spacectl: the objects a command names ("userspace alice", "us/alice") and
 * "did you mean" for mistyped words (sk_suggest).
 */
#include <stdlib.h>
#include <string.h>

#include "spacectl.h"

const char *const sk_cli_userspace_names[] = { "userspace", "userspaces", "us", "UserSpace",
	"userspaces.spacekeeper.dev", "userspace.spacekeeper.dev", NULL };

const char *
sk_cli_suggest(const char *word, const char *const *candidates, size_t n)
{
	return sk_suggest(word, candidates, n);
}

static int
unknown_type(const sk_cli_help *h, const char *type)
{
	size_t n = 0;
	const char *s;

	while (sk_cli_userspace_names[n])
		n++;
	s = sk_cli_suggest(type, sk_cli_userspace_names, n);
	if (s)
		return sk_cli_usage_error(h,
		        "unknown resource type \"%s\" (userspaces, us); did you mean \"%s\"?", type,
		        s);
	return sk_cli_usage_error(h, "unknown resource type \"%s\" (userspaces, us)", type);
}

/* "TYPE/NAME": checks TYPE, returns NAME (NULL: usage error printed into *rc). */
static const char *
slash_name(const sk_cli_help *h, const char *arg, int *rc)
{
	const char *slash = strchr(arg, '/');
	char *type = sk_strndup(arg, (size_t)(slash - arg));
	bool ok = sk_cli_is_userspace_resource(type);

	*rc = ok ? SK_CLI_CONTINUE : unknown_type(h, type);
	free(type);
	if (ok && slash[1] == '\0')
		*rc = sk_cli_usage_error(h, "\"%s\": the name after \"/\" is missing", arg);
	return *rc == SK_CLI_CONTINUE ? slash + 1 : NULL;
}

int
sk_cli_object_args(const sk_cli_help *h, char **args, int n, bool type_optional, sk_cli_strv *names)
{
	bool typed = false, slashed = n > 0 && strchr(args[0], '/') != NULL;
	int i = 0, rc = SK_CLI_CONTINUE;

	if (n > 0 && !slashed) {
		typed = sk_cli_is_userspace_resource(args[0]);
		if (!typed && !type_optional)
			return unknown_type(h, args[0]);
		i = typed ? 1 : 0;
	}
	for (; i < n && rc == SK_CLI_CONTINUE; i++) {
		const char *name = args[i];
		if (strchr(name, '/') != NULL) {
			if (typed)
				return sk_cli_usage_error(h,
				        "\"%s\": there is no need to name the resource type "
				        "separately when using the TYPE/NAME form",
				        name);
			name = slash_name(h, name, &rc);
		} else if (slashed) {
			return sk_cli_usage_error(h,
			        "\"%s\": use the TYPE/NAME form for every object, or TYPE "
			        "NAME ...",
			        name);
		}
		if (name)
			sk_cli_strv_push(names, (char *)name);
	}
	return rc;
}
