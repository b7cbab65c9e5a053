/* The host credential's keys (issue 25, finding 9). host_token_file holds one secret, or two
 * during a rotation; no secret is ever used as it is. Each is the input key of HKDF-SHA-256
 * (RFC 5869, GnuTLS: the process's one crypto and TLS library), and every use gets its own
 * key by its label:
 *   hop   CLUSTER_KEY_LABEL_HOP: what X-Stockade-Host-Auth carries (in hex) on a hop, and
 *         what the owner compares it with;
 *   envd  CLUSTER_KEY_LABEL_ENVD: the HMAC-SHA-256 key of E2B envd access tokens.
 * So a hop that crosses a network (insecure_hops) shows neither the secret nor the envd key,
 * and a leaked envd token says nothing about the hop's.
 *
 * The file: the current secret on its first line, optionally a second secret on the next
 * line; each one word of printable ASCII, CLUSTER_TOKEN_MIN..MAX_BYTES long; one final
 * newline allowed, nothing else. A host sends the first secret's keys and accepts either's
 * (hostd/cluster/README.md, "Rotating the host credential"). Pure apart from GnuTLS: linked
 * alone by its unit test. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cluster_config.h"
#include "error.h"

#define CLUSTER_SECRETS_MAX 2 /* the current secret and one more during a rotation */
#define CLUSTER_KEY_BYTES 32  /* HKDF-SHA-256 output per use */
#define CLUSTER_HOP_AUTH_HEX_BYTES (2 * CLUSTER_KEY_BYTES)
/* The file: two secrets, each with its newline. */
#define CLUSTER_TOKEN_FILE_MAX_BYTES (CLUSTER_SECRETS_MAX * (CLUSTER_TOKEN_MAX_BYTES + 1))
/* HKDF's info per use. Changing one changes every derived value: hosts of a cluster must
 * agree, so a new label is a new version, never an edit. */
#define CLUSTER_KEY_LABEL_HOP "stockade hop auth v1"
#define CLUSTER_KEY_LABEL_ENVD "stockade e2b envd v1"

typedef struct ClusterKeys {
    size_t n; /* secrets read: 1 or 2; index 0 is the current one (sent) */
    uint8_t hop[CLUSTER_SECRETS_MAX][CLUSTER_KEY_BYTES];
    uint8_t envd[CLUSTER_SECRETS_MAX][CLUSTER_KEY_BYTES];
} ClusterKeys;

/* HKDF-SHA-256 (RFC 5869): extract with salt (salt_len 0: HashLen zero bytes), then expand
 * to out_len bytes (at most 255 * 32) with info. E_INTERNAL if GnuTLS refuses. */
int cluster_hkdf_sha256(const void *salt, size_t salt_len, const void *ikm, size_t ikm_len,
                        const void *info, size_t info_len, uint8_t *out, size_t out_len,
                        Error **errp);

/* Parses host_token_file's text (len bytes, no NUL needed) and derives each secret's keys
 * into *ret (untouched on failure). E_INVALID saying what is wrong (never the secret). The
 * caller wipes text. */
int cluster_keys_parse(const char *text, size_t len, ClusterKeys *ret, Error **errp);

/* 64 lower-case hex digits and a NUL: the hop key as X-Stockade-Host-Auth carries it. */
void cluster_hop_auth_hex(const uint8_t key[CLUSTER_KEY_BYTES],
                          char ret[CLUSTER_HOP_AUTH_HEX_BYTES + 1]);

/* Whether presented is the hex of one of k's hop keys; the time taken depends only on the
 * number of keys, not on where presented differs (GnuTLS's gnutls_memcmp()). */
bool cluster_keys_hop_matches(const ClusterKeys *k, const char *presented);

/* Zeroes k (keys are secrets too). */
void cluster_keys_wipe(ClusterKeys *k);
