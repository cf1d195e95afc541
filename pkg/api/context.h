/*
 * api/context: a spacectl context.
 */
#ifndef SK_API_CONTEXT_H
#define SK_API_CONTEXT_H

/* A spacectl context (a named database in spacectl's config file, as a
 * kubeconfig context names a cluster): a layer between the ControllerConfig
 * file and the environment. NULL members are not set. */
typedef struct sk_config_context {
	const char *name;
	const char *source; /* the file it came from, for errors */
	const char *mongodb_uri;
	const char *database;
	/* a ControllerConfig file: spacectl's providers when --config is not
	 * given (sandboxes, plan, drift --orphans); not a layer of the resolve */
	const char *controller_config;
} sk_config_context;

#endif
