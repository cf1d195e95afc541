/* mongoping URI [TIMEOUT_MS]: exit 0 when the MongoDB server answers ping. */
#include <stdio.h>
#include <stdlib.h>

#include "store/store.h"

int
main(int argc, char **argv)
{
	sk_store_options opts = SK_STORE_OPTIONS_INIT;
	sk_store *st = NULL;
	sk_error err;

	if (argc < 2) {
		fprintf(stderr, "usage: mongoping URI [TIMEOUT_MS]\n");
		return 2;
	}
	opts.uri = argv[1];
	opts.timeout_ms = argc > 2 ? atoll(argv[2]) : 1000;
	opts.ensure_indexes = false;
	if (sk_store_open(&st, &opts, &err) != 0) {
		fprintf(stderr, "mongoping: %s\n", err.message);
		sk_store_global_cleanup();
		return 1;
	}
	sk_store_close(st);
	sk_store_global_cleanup();
	return 0;
}
