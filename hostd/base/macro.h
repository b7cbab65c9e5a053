/* Ownership and small helpers shared by every Stockade binary (daemon, runner, CLI).
 *
 * One owner per heap object or fd: a _cleanup_* variable or a struct field.
 * Ownership leaves a _cleanup_ variable only through TAKE_PTR() / TAKE_FD().
 * Nothing here allocates or logs. */
#pragma once

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _nodiscard_ __attribute__((warn_unused_result))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* Move ownership out of a _cleanup_ variable: returns the value and clears it. */
#define TAKE_PTR(p)                                                                                \
    ({                                                                                             \
        __typeof__(p) _tp_ = (p);                                                                  \
        (p) = NULL;                                                                                \
        _tp_;                                                                                      \
    })
#define TAKE_FD(fd)                                                                                \
    ({                                                                                             \
        int _tf_ = (fd);                                                                           \
        (fd) = -1;                                                                                 \
        _tf_;                                                                                      \
    })

static inline void
freep(void *p)
{
    free(*(void **) p);
}

/* close() that keeps errno, for cleanup paths where the first error must win. */
static inline int
safe_close(int fd)
{
    if (fd >= 0) {
        int saved = errno;
        (void) close(fd);
        errno = saved;
    }
    return -1;
}

static inline void
closep(int *fd)
{
    *fd = safe_close(*fd);
}

static inline void
fclosep(FILE **f)
{
    if (*f) {
        int saved = errno;
        (void) fclose(*f);
        errno = saved;
    }
}

/* Declares name##p(type **) that calls func(*p) when *p is not NULL. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                                                    \
    static inline void func##p(type **p)                                                           \
    {                                                                                              \
        if (*p)                                                                                    \
            func(*p);                                                                              \
    }

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)
