/* Error objects: see error.h. Allocation failure while reporting an error aborts, since
 * the process cannot make progress without memory anyway. */
#include "error.h"

#include <stdarg.h>
#include <string.h>

static Error *
error_alloc(void)
{
    Error *e = calloc(1, sizeof(*e));
    if (!e)
        abort();
    return e;
}

int
error_set(Error **errp, ErrorCategory category, int errno_value, const char *fmt, ...)
{
    int saved = errno;

    if (errp && !*errp) {
        Error *e = error_alloc();
        va_list ap;

        e->category = category;
        e->errno_value = errno_value;
        va_start(ap, fmt);
        int n = vsnprintf(e->message, sizeof(e->message), fmt, ap);
        va_end(ap);
        if (errno_value != 0 && n >= 0 && (size_t) n < sizeof(e->message))
            snprintf(e->message + n, sizeof(e->message) - (size_t) n, ": %s",
                     strerror(errno_value));
        *errp = e;
    }
    errno = saved;
    return -1;
}

int
error_prefix(Error **errp, const char *fmt, ...)
{
    if (errp && *errp) {
        char prefix[ERROR_MESSAGE_MAX];
        char old[ERROR_MESSAGE_MAX];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(prefix, sizeof(prefix), fmt, ap);
        va_end(ap);
        memcpy(old, (*errp)->message, sizeof(old));
        if (snprintf((*errp)->message, sizeof((*errp)->message), "%s: %s", prefix, old) < 0)
            (*errp)->message[0] = '\0';
    }
    return -1;
}

void
error_free(Error *e)
{
    free(e);
}

const char *
error_category_name(ErrorCategory c)
{
    static const char *const names[_E_CATEGORY_MAX] = {
        [E_INTERNAL] = "internal",       [E_INVALID] = "invalid_argument",
        [E_UNAUTHORIZED] = "unauthorized", [E_FORBIDDEN] = "forbidden",
        [E_NOT_FOUND] = "not_found",     [E_CONFLICT] = "conflict",
        [E_TOO_LARGE] = "too_large",     [E_QUOTA] = "quota_exceeded",
        [E_UNAVAILABLE] = "unavailable", [E_TIMEOUT] = "timeout",
        [E_GUEST] = "guest_error",       [E_IO] = "io_error",
    };
    if ((unsigned) c >= _E_CATEGORY_MAX)
        return "internal";
    return names[c];
}
