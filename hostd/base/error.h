/* Errors that cross a module boundary.
 *
 * Fallible functions return 0 / -1 (or pointer / NULL) and take `Error **errp` last.
 * On failure they fill *errp (if errp and *errp is still NULL: the first error wins) and
 * return -1. On success *errp is untouched. The category is what the API maps to an HTTP
 * status and what the CLI maps to an exit code; the message is for humans and is already
 * escaped when it quotes untrusted bytes. Only the edge (handler, loop callback, main) logs. */
#pragma once

#include "macro.h"

typedef enum {
    E_INTERNAL = 0, /* a bug or an unexpected host failure: 500 */
    E_INVALID,      /* the caller's input is malformed or out of bounds: 400 */
    E_UNAUTHORIZED, /* no or bad credentials: 401 */
    E_FORBIDDEN,    /* credentials fine, operation not allowed: 403 */
    E_NOT_FOUND,    /* no such object (or not yours): 404 */
    E_CONFLICT,     /* object in the wrong state: 409 */
    E_TOO_LARGE,    /* a size cap was hit: 413 */
    E_QUOTA,        /* a tenant limit was hit: 429 */
    E_UNAVAILABLE,  /* temporarily cannot serve (pool empty, shutting down): 503 */
    E_TIMEOUT,      /* a deadline passed: 504 */
    E_GUEST,        /* the guest broke the protocol or died: 502 */
    E_IO,           /* host I/O failed (disk full, EIO): 500 */
    _E_CATEGORY_MAX,
} ErrorCategory;

#define ERROR_MESSAGE_MAX 512

typedef struct Error {
    ErrorCategory category;
    int errno_value; /* 0 when not from a syscall */
    char message[ERROR_MESSAGE_MAX];
} Error;

/* Fills *errp if it is free, then returns -1 so callers can `return error_set(...)`.
 * errno_value (if nonzero) is appended as ": strerror". Keeps errno intact. */
int error_set(Error **errp, ErrorCategory category, int errno_value, const char *fmt, ...)
    _printf_(4, 5);

/* Adds context in front of an existing error's message ("open pool: " + old). */
int error_prefix(Error **errp, const char *fmt, ...) _printf_(2, 3);

void error_free(Error *e);
DEFINE_TRIVIAL_CLEANUP_FUNC(Error, error_free)
#define _cleanup_error_ _cleanup_(error_freep)

/* Stable snake_case name of the category, as used in API error bodies. */
const char *error_category_name(ErrorCategory c);
