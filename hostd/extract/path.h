/* Pure checks of one archive member name before anything touches the host filesystem.
 * A name is normalised (empty and "." components dropped, trailing '/' removed) and refused
 * when absolute, when it has a ".." component, when a component exceeds EXTRACT_NAME_MAX_BYTES
 * (the host's NAME_MAX), or when it is over the caller's depth or length caps. No I/O. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define EXTRACT_NAME_MAX_BYTES 255u

typedef enum PathVerdict {
    PATH_OK,
    PATH_ROOT,           /* nothing left after normalising ("./"): the destination itself */
    PATH_ABSOLUTE,       /* starts with '/' */
    PATH_DOTDOT,         /* has a ".." component */
    PATH_COMPONENT_LONG, /* a component over EXTRACT_NAME_MAX_BYTES */
    PATH_TOO_LONG,       /* normalised path over max_name_bytes */
    PATH_TOO_DEEP,       /* more than max_depth components */
} PathVerdict;

/* Normalises in[0..len) into out (room for len + 1 bytes; NUL-terminated) and judges it.
 * in must hold no NUL (the tar parser flags such names). *ret_len / *ret_depth are set
 * for PATH_OK only. */
PathVerdict extract_path_normalize(const char *in, size_t len, uint32_t max_name_bytes,
                                   uint32_t max_depth, char *out, size_t *ret_len,
                                   uint32_t *ret_depth);

/* True for verdicts that mean "a cap was hit" rather than "a hostile name". */
static inline int
extract_path_verdict_is_cap(PathVerdict v)
{
    return v == PATH_COMPONENT_LONG || v == PATH_TOO_LONG || v == PATH_TOO_DEEP;
}
