/* See log.h. A single fprintf per record keeps lines whole across threads (stdio locks). */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static const char *log_ident = "stockade";
static LogLevel log_min_level = LOG_LEVEL_INFO;

void
log_setup(const char *ident, LogLevel min_level)
{
    log_ident = ident;
    log_min_level = min_level;
}

int
log_level_from_string(const char *s, LogLevel *ret_level)
{
    static const char *const names[] = {"debug", "info", "warn", "error"};
    for (size_t i = 0; i < ELEMENTSOF(names); i++)
        if (strcmp(s, names[i]) == 0) {
            *ret_level = (LogLevel) i;
            return 0;
        }
    return -1;
}

void
log_emit(LogLevel level, const char *fmt, ...)
{
    static const char *const names[] = {"debug", "info", "warn", "error"};
    char msg[2048], stamp[32];
    struct timespec ts;
    struct tm tm;
    va_list ap;

    if (level < log_min_level)
        return;
    int saved = errno;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
    fprintf(stderr, "%s.%03ldZ %s[%ld] %s: %s\n", stamp, ts.tv_nsec / 1000000L, log_ident,
            (long) getpid(), names[level], msg);
    errno = saved;
}

char *
log_escape(char *out, size_t cap, const void *data, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = data;
    size_t o = 0;

    for (size_t i = 0; i < len; i++) {
        unsigned char c = p[i];
        bool plain = c >= 0x20 && c < 0x7f && c != '\\' && c != '"';
        size_t need = plain ? 1 : 4;
        if (o + need + 4 > cap) { /* keep room for "..." and NUL */
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        if (plain) {
            out[o++] = (char) c;
        } else {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = '\0';
    return out;
}
