/*
 * api/config_archive: the archive section of the ControllerConfig, the
 * object storage that keeps spaces' workspaces:
 *
 *   archive:
 *     endpoint: https://s3.eu-west-1.amazonaws.com   # any S3-compatible server
 *     bucket: spaces
 *     region: eu-west-1                              # default us-east-1
 *     prefix: spacekeeper                            # default "spaces"
 *     accessKeyFile: /run/secrets/s3/access
 *     secretKeyFile: /run/secrets/s3/secret
 *     keepGenerations: 1                             # older complete archives kept, default 1
 *
 * Keys are read from their files like a provider's apiKeyFile, never logged.
 * Every error names its field path and file:line:col.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "config.h"
#include "doc.h"
#include "errlist.h"

/* S3's bucket names: 3..63 of lowercase letters, digits, '.', '-', starting
 * and ending with a letter or digit. */
static bool
bucket_ok(const char *s)
{
	size_t n = strlen(s);

	if (n < 3 || n > 63 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
		return false;
	for (; *s; s++) {
		if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s) && *s != '.' &&
		        *s != '-')
			return false;
	}
	return true;
}

/* Key prefixes: [A-Za-z0-9._-] segments joined by '/', no empty segment. */
static bool
prefix_ok(const char *s)
{
	bool seg = false;

	for (; *s; s++) {
		if (*s == '/') {
			if (!seg)
				return false;
			seg = false;
		} else if (isalnum((unsigned char)*s) || strchr("._-", *s) != NULL) {
			seg = true;
		} else {
			return false;
		}
	}
	return seg;
}

static void
arc_check(sk_vctx *v, bool ok, const char *key, const char *msg)
{
	char *fp = sk_path_join("archive", key);

	if (!ok)
		sk_doc_error(v->errs, v->doc, fp, "%s", msg);
	free(fp);
}

void
sk_config_decode_archive(const sk_doc *doc, sk_errlist *errs, json_t *m, sk_controller_config *out)
{
	static const char *const allowed[] = { "endpoint", "bucket", "region", "prefix",
		"accessKeyFile", "secretKeyFile", "keepGenerations", NULL };
	sk_vctx v = { doc, errs };
	sk_archive_config *a;
	const char *s;
	json_t *f;
	int64_t n;

	if (!sk_check_object(&v, m, "archive"))
		return;
	sk_check_known(&v, m, "archive", allowed);
	a = out->archive = sk_calloc(1, sizeof(*out->archive));
	if ((s = sk_check_nonempty(&v, m, "archive", "endpoint", true)) != NULL) {
		arc_check(&v, strncmp(s, "http://", 7) == 0 || strncmp(s, "https://", 8) == 0,
		        "endpoint", "must be an http:// or https:// URL");
		a->endpoint = sk_strdup(s);
	}
	if ((s = sk_check_nonempty(&v, m, "archive", "bucket", true)) != NULL) {
		arc_check(&v, bucket_ok(s), "bucket",
		        "must be an S3 bucket name (3..63 of a-z, 0-9, '.', '-')");
		a->bucket = sk_strdup(s);
	}
	s = sk_check_nonempty(&v, m, "archive", "region", false);
	a->region = sk_strdup(s ? s : "us-east-1");
	if ((s = sk_check_nonempty(&v, m, "archive", "prefix", false)) != NULL)
		arc_check(&v, prefix_ok(s), "prefix",
		        "must be segments of [A-Za-z0-9._-] joined by '/' (no leading or trailing "
		        "'/')");
	a->prefix = sk_strdup(s ? s : "spaces");
	if ((s = sk_check_nonempty(&v, m, "archive", "accessKeyFile", true)) != NULL)
		a->access_key_file = sk_strdup(s);
	if ((s = sk_check_nonempty(&v, m, "archive", "secretKeyFile", true)) != NULL)
		a->secret_key_file = sk_strdup(s);
	a->keep_generations = 1;
	if ((f = sk_check_field(&v, m, "archive", "keepGenerations", false)) != NULL &&
	        sk_check_int(&v, f, "archive.keepGenerations", 0, 1000, &n))
		a->keep_generations = (int)n;
}

void
sk_config_archive_free(sk_controller_config *c)
{
	sk_archive_config *a = c->archive;

	if (a == NULL)
		return;
	free(a->endpoint);
	free(a->bucket);
	free(a->region);
	free(a->prefix);
	free(a->access_key_file);
	free(a->secret_key_file);
	free(a);
	c->archive = NULL;
}

int
sk_config_archive_keys(const sk_archive_config *a, char **access, char **secret, sk_error *err)
{
	*access = sk_config_token_read(a->access_key_file, "archive access key file", err);
	if (*access == NULL)
		return err->code ? err->code : SK_EINVALID;
	*secret = sk_config_token_read(a->secret_key_file, "archive secret key file", err);
	if (*secret == NULL) {
		free(*access);
		*access = NULL;
		return err->code ? err->code : SK_EINVALID;
	}
	return 0;
}
