/*
 * api/quantity: byte quantities (quantity.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../util/util.h"
#include "quantity.h"

int
sk_quantity_parse(const char *s, int64_t *out)
{
	static const struct {
		const char *suffix;
		int64_t mult;
	} units[] = { { "", 1 }, { "k", 1000LL }, { "M", 1000000LL }, { "G", 1000000000LL },
		{ "T", 1000000000000LL }, { "Ki", 1LL << 10 }, { "Mi", 1LL << 20 },
		{ "Gi", 1LL << 30 }, { "Ti", 1LL << 40 } };
	char *end = NULL;
	long long n;

	if (s == NULL || s[0] < '0' || s[0] > '9')
		return SK_EINVALID;
	errno = 0;
	n = strtoll(s, &end, 10);
	if (errno != 0)
		return SK_EINVALID;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].suffix) == 0) {
			if (n > INT64_MAX / units[i].mult)
				return SK_EINVALID;
			*out = n * units[i].mult;
			return SK_OK;
		}
	}
	return SK_EINVALID;
}
