/* Shared checks: see check.h. */
#include "check.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ascii.h"

int
check_fail(char *err, size_t errcap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errcap, fmt, ap);
    va_end(ap);
    return -1;
}

bool
check_known(const ProtobufCMessage *m)
{
    return m && m->n_unknown_fields == 0;
}

bool
check_len(const char *s, size_t max, bool allow_empty)
{
    if (!s)
        return false;
    size_t n = strnlen(s, max + 1);
    return n <= max && (allow_empty || n > 0);
}

bool
check_charset(const char *s, const char *extra)
{
    return ascii_charset_ok(s, extra);
}

bool
check_printable(const char *s)
{
    for (; *s; s++)
        if ((unsigned char) *s < 0x20 || (unsigned char) *s > 0x7e)
            return false;
    return true;
}

static bool
check_env_name(const char *s)
{
    if (!check_len(s, ENV_NAME_MAX_BYTES, false) || (s[0] >= '0' && s[0] <= '9'))
        return false;
    return check_charset(s, "_");
}

bool
check_env(Stockade__Runner__EnvVar *const *env, size_t n, size_t *ret_bytes)
{
    size_t bytes = 0;
    if (n > ENV_MAX_COUNT)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!check_known(&env[i]->base) || !check_env_name(env[i]->name) ||
            !check_len(env[i]->value, ENV_VALUE_MAX_BYTES, true))
            return false;
        bytes += strlen(env[i]->name) + strlen(env[i]->value) + 2;
    }
    *ret_bytes = bytes;
    return true;
}
