/*
 * api/config_tokens: controller.connectTokens of the ControllerConfig, one
 * bearer token per tenant:
 *
 *   connectTokens:
 *     - {name: tenant-a, file: /run/secrets/a/token, selector: "tenant=a"}
 *
 * A token reaches only the UserSpaces its selector (kubectl -l syntax)
 * matches; controller.connectTokenFile stays the all-spaces token. Names are
 * DNS-1123 labels, unique, not "all" (connectTokenFile's name in metrics);
 * every error names its field path and file:line:col.
 */
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "config.h"
#include "doc.h"
#include "errlist.h"
#include "names.h"
#include "selector.h"

const char *
sk_check_nonempty(sk_vctx *v, json_t *obj, const char *path, const char *key, bool required)
{
	json_t *val = sk_check_field(v, obj, path, key, required);
	char *fp = sk_path_join(path, key);
	const char *s = val ? sk_check_string(v, val, fp) : NULL;

	if (s != NULL && s[0] == '\0') {
		sk_doc_error(v->errs, v->doc, fp, "must not be empty");
		s = NULL;
	}
	free(fp);
	return s;
}

static void
decode_token(sk_vctx *v, json_t *m, const char *path, sk_connect_token_config *t)
{
	static const char *const allowed[] = { "name", "file", "selector", NULL };
	sk_selector *sel = NULL;
	sk_error err = { 0 };
	const char *s;
	char *fp;

	if (!sk_check_object(v, m, path))
		return;
	sk_check_known(v, m, path, allowed);
	if ((s = sk_check_nonempty(v, m, path, "name", true)) != NULL) {
		fp = sk_path_join(path, "name");
		if (!sk_valid_name(s))
			sk_doc_error(v->errs, v->doc, fp,
			        "must be a DNS-1123 label (lowercase letters, digits, '-', 1..63)");
		else if (strcmp(s, SK_CONNECT_TOKEN_ALL) == 0)
			sk_doc_error(v->errs, v->doc, fp,
			        "\"%s\" is reserved: it names controller.connectTokenFile's token",
			        SK_CONNECT_TOKEN_ALL);
		t->name = sk_strdup(s);
		free(fp);
	}
	if ((s = sk_check_nonempty(v, m, path, "file", true)) != NULL)
		t->file = sk_strdup(s);
	if ((s = sk_check_nonempty(v, m, path, "selector", true)) != NULL) {
		fp = sk_path_join(path, "selector");
		if (sk_selector_parse(s, &sel, &err) != 0)
			sk_doc_error(v->errs, v->doc, fp, "%s", err.message);
		sk_selector_free(sel);
		t->selector = sk_strdup(s);
		free(fp);
	}
}

void
sk_config_decode_connect_tokens(
        const sk_doc *doc, sk_errlist *errs, json_t *arr, sk_controller_config *out)
{
	sk_vctx v = { doc, errs };
	const char *path = "controller.connectTokens";
	json_t *item;
	size_t i;

	if (!json_is_array(arr)) {
		sk_doc_error(errs, doc, path, "must be a list of {name, file, selector}");
		return;
	}
	out->connect_tokens = sk_calloc(json_array_size(arr) + 1, sizeof(*out->connect_tokens));
	json_array_foreach(arr, i, item)
	{
		char *ip = sk_path_index(path, i);
		sk_connect_token_config *t = &out->connect_tokens[out->n_connect_tokens++];
		decode_token(&v, item, ip, t);
		for (size_t j = 0; t->name && j < i; j++)
			if (out->connect_tokens[j].name &&
			        strcmp(out->connect_tokens[j].name, t->name) == 0) {
				char *np = sk_path_join(ip, "name");
				sk_doc_error(errs, doc, np, "duplicate token name \"%s\"", t->name);
				free(np);
				break;
			}
		free(ip);
	}
}

void
sk_config_connect_tokens_free(sk_controller_config *c)
{
	for (size_t i = 0; i < c->n_connect_tokens; i++) {
		free(c->connect_tokens[i].name);
		free(c->connect_tokens[i].file);
		free(c->connect_tokens[i].selector);
	}
	free(c->connect_tokens);
	c->connect_tokens = NULL;
	c->n_connect_tokens = 0;
}
