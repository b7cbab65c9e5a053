/* Signed /files URLs of the envd face (the SDK's sandbox.uploadUrl(), downloadUrl()): the
 * parts a URL's query names, and the check of its signature against a sandbox's token. Pure,
 * so unit tests and tests/fuzz/fuzz_e2b_signed_url.c link them without the envd face.
 *
 * E2B's v1 signature: "v1_" + base64 without padding of
 * sha256("<path>:<read|write>:<username>:<token>" [+ ":<expiration>"]), the expiration in
 * seconds since the epoch. Every query value is the caller's: a signature over its bound, an
 * expiration that is not a whole number, or one in the past makes no URL at all (only the
 * token itself can then open the request).
 *
 * A username with ':' makes no URL either. The signed text joins path, operation and username
 * with ':', and a path may hold ':' (a file name), so with a ':' in the username one text
 * reads two ways: the download URL of "/home/user/data:write:user" for user "user" signs
 * "/home/user/data:write:user:read:user:", which is also the upload of "/home/user/data" for
 * user "user:read:user". Without a ':' in the username the text reads one way only, from
 * its end: username, then "read" or "write", then the path. (No Unix user name holds ':'.) */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define E2B_SIGNATURE_MAX_BYTES 64 /* "v1_" + 43 base64 characters */

/* The signed URL's query values (NULL when absent), whether the request writes (POST), and
 * now. 0 and *ret_prefix ("<path>:<op>:<user>:") and *ret_suffix ("" or ":<expiration>"),
 * malloc'd, when sig is there within E2B_SIGNATURE_MAX_BYTES, exp, if any, is a decimal
 * number of seconds not before now_sec and user holds no ':'; -1 otherwise (nothing
 * allocated). */
int e2b_signed_url_parts(const char *sig, const char *exp, const char *path, const char *user,
                         bool write, int64_t now_sec, char **ret_prefix, char **ret_suffix);

/* Whether signature is the v1 signature of prefix + token + suffix. Constant time in the
 * signature's bytes once its length matches; false for any NULL. */
bool e2b_signature_matches(const char *signature, const char *prefix, const char *suffix,
                           const char *token);
