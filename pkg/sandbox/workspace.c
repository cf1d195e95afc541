/*
 * sandbox/workspace: the workspace copy engine. Copies the files under a set
 * of roots from one sandbox to another through the providers' file API,
 * streamed chunk by chunk, and verifies both sides by listing and SHA-256.
 */
#include <stdlib.h>
#include <string.h>

#include "sandbox.h"

int
sk_workspace_copy(sk_provider *src, const sk_sandbox *src_sb, sk_provider *dst,
        const sk_sandbox *dst_sb, const sk_copy_options *opt, sk_copy_progress_fn progress,
        void *payload, sk_copy_report *report, sk_error *err)
{
	return sk_error_set(err, SK_ENOTSUPPORTED, "workspace copy: not implemented yet");
}

int
sk_workspace_verify(sk_provider *src, const sk_sandbox *src_sb, sk_provider *dst,
        const sk_sandbox *dst_sb, const sk_copy_options *opt, sk_copy_report *report, sk_error *err)
{
	return sk_error_set(err, SK_ENOTSUPPORTED, "workspace verify: not implemented yet");
}

void
sk_copy_report_free(sk_copy_report *r)
{
	if (!r)
		return;
	sk_file_list_free(&r->skipped);
	free(r->mismatch);
	memset(r, 0, sizeof(*r));
}
