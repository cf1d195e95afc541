/*
 * api/network: spec.network, a space's network policy.
 */
#ifndef SK_API_NETWORK_H
#define SK_API_NETWORK_H

#include <stdbool.h>
#include <stddef.h>

#include "strlist.h"

/* spec.network (network.c): each space's network policy, sent to the
 * provider in its own shape at create, applied live where it can be.
 * internet and publicTraffic: UNSET is the provider's default, Allow. */
typedef enum sk_net_access { SK_NET_UNSET, SK_NET_ALLOW, SK_NET_DENY } sk_net_access;
typedef struct sk_network {
	sk_strlist allow_out; /* IPs, CIDRs, host names ("*.example.com") */
	sk_strlist deny_out; /* IPs and CIDRs */
	sk_net_access internet; /* spec.network.internet */
	sk_net_access public_traffic; /* spec.network.publicTraffic */
} sk_network;
/* Whether any field is set (else: the provider's default, open egress). */
bool sk_network_is_set(const sk_network *n);
/* Whether what a provider reports (seen) is the policy want; publicTraffic
 * is compared only when both say it (unset: the provider's own default,
 * which differs: E2B's URLs are public, Daytona's previews private). */
bool sk_network_satisfies(const sk_network *want, const sk_network *seen);
void sk_network_copy(sk_network *dst, const sk_network *src);
void sk_network_dispose(sk_network *n);
/* 16 hex digits of the policy (FNV-1a of its one-line form). */
void sk_network_digest(const sk_network *n, char out[17]);
/* One line: "internet Deny, allowOut 10.0.0.0/8, publicTraffic Allow". */
void sk_network_format(const sk_network *n, char *buf, size_t len);

#endif
