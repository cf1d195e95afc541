/*
 * api/flags (settings.c): the settings a command line can give, and the one
 * resolver of every setting for both binaries.
 */
#ifndef SK_API_FLAGS_H
#define SK_API_FLAGS_H

#include <stddef.h>

#include "../util/util.h"
#include "config.h"
#include "context.h"
#include "errlist.h"

/* The settings a command line can give (NULL: not given), as typed. */
#define SK_CONFIG_MONGODB_URI_ENV "SPACEKEEPER_MONGODB_URI"
typedef struct sk_config_sources {
	const char *config_path; /* --config: a ControllerConfig file */
	const sk_config_context *context; /* spacectl's current context; NULL none */
	const char *mongodb_uri; /* --mongodb-uri (else $SPACEKEEPER_MONGODB_URI) */
	const char *database; /* --database */
	const char *workers; /* --workers */
	const char *resync; /* --resync */
	const char *listen; /* --listen ("" switches HTTP off) */
	const char *connect_listen; /* --connect-listen ("" switches the connect API off) */
	const char *connect_token_file; /* --connect-token-file */
	const char *connect_insecure; /* --connect-insecure ("true") */
	const char *connect_tls_cert_file; /* --connect-tls-cert-file */
	const char *connect_tls_key_file; /* --connect-tls-key-file */
	const char *connect_max_waiting; /* --connect-max-waiting */
	const char *connect_max_connections; /* --connect-max-connections */
	const char *connect_max_per_ip; /* --connect-max-per-ip */
	const char *store_unavailable_after; /* --store-unavailable-after */
	const char *shards; /* --shards */
	const char *identity; /* --id */
	const char *lease_duration; /* --lease-duration */
	const char *renew_deadline; /* --renew-deadline */
	const char *retry_period; /* --retry-period */
	const char *advertise_address; /* --advertise-address */
	const char *(*getenv)(const char *name); /* NULL: getenv(3); tests pass their own */
} sk_config_sources;

/* The one place that decides every setting, for both binaries: flags, then
 * the environment, then the context (spacectl), then the file at config_path
 * (or the built-in defaults), then the defaults; every value checked by the file's rules and bounds.
 * Errors name the flag ("--workers"), the variable or the file path and line. */
int sk_config_resolve(
        const sk_config_sources *src, sk_controller_config **out, sk_errlist *errs, sk_error *err);
/* Checks the flags of src alone (a usage error before any file is read);
 * returns how many errors were added to errs. */
size_t sk_config_check_flags(const sk_config_sources *src, sk_errlist *errs);

#endif
