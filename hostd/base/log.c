/* See log.h. A single write per record keeps lines whole across threads (stdio locks, and the
 * line is formatted whole first). */
#include "log.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const level_names[] = {"debug", "info", "warn", "error"};
static const int level_priorities[] = {7, 6, 4, 3}; /* syslog's: debug, info, warning, err */

static const char *log_ident = "stockade";
static LogLevel log_min_level = LOG_LEVEL_INFO;
static LogStyle log_style = LOG_STYLE_TEXT;

void
log_setup(const char *ident, LogLevel min_level)
{
    log_ident = ident;
    log_min_level = min_level;
    log_set_format(LOG_FORMAT_TEXT);
}

bool
log_stderr_is_journal(void)
{
    const char *v = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    struct stat st;
    int end = 0;

    if (!v || sscanf(v, "%llu:%llu%n", &dev, &ino, &end) != 2 || v[end] != '\0')
        return false;
    return fstat(STDERR_FILENO, &st) == 0 && (unsigned long long) st.st_dev == dev &&
           (unsigned long long) st.st_ino == ino;
}

void
log_set_format(LogFormat format)
{
    if (format == LOG_FORMAT_JSON)
        log_style = LOG_STYLE_JSON;
    else
        log_style = log_stderr_is_journal() ? LOG_STYLE_JOURNAL : LOG_STYLE_TEXT;
}

static int
name_lookup(const char *s, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return (int) i;
    return -1;
}

int
log_level_from_string(const char *s, LogLevel *ret_level)
{
    int i = name_lookup(s, level_names, ELEMENTSOF(level_names));
    if (i < 0)
        return -1;
    *ret_level = (LogLevel) i;
    return 0;
}

int
log_format_from_string(const char *s, LogFormat *ret_format)
{
    static const char *const names[] = {"text", "json"};
    int i = name_lookup(s, names, ELEMENTSOF(names));
    if (i < 0)
        return -1;
    *ret_format = (LogFormat) i;
    return 0;
}

/* ------------------------------------------------------------------ the JSON form */

/* A line being built within a bound; room is kept for the closing bytes. */
typedef struct {
    char *out;
    size_t cap, len;
} LineBuf;

#define LINE_TAIL_BYTES 8 /* "...", "\"}\n" and the NUL */

static bool
line_put(LineBuf *b, const char *s, size_t n)
{
    if (b->len + n + LINE_TAIL_BYTES > b->cap)
        return false;
    memcpy(b->out + b->len, s, n);
    b->len += n;
    return true;
}

/* The length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong forms, no
 * surrogates, nothing past U+10FFFF), 0 when the bytes there are not one. */
static size_t
utf8_seq_len(const unsigned char *p, size_t left)
{
    size_t n = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : 2;
    uint32_t min = n == 4 ? 0x10000 : n == 3 ? 0x800 : 0x80;
    uint32_t cp = p[0] & (0x7f >> n);

    if (p[0] < 0xc2 || p[0] > 0xf4 || left < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

/* s as the inside of a JSON string; false when it was cut (the bound). */
static bool
json_put_string(LineBuf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *) s;
    size_t left = strlen(s);

    while (left > 0) {
        char esc[8];
        size_t n = 1, used = 1;
        const char *piece = esc;
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\', esc[1] = (char) *p, n = 2;
        } else if (*p < 0x20 || *p == 0x7f) {
            memcpy(esc, "\\u00", 4), esc[4] = hex[*p >> 4], esc[5] = hex[*p & 15], n = 6;
        } else if (*p < 0x80) {
            esc[0] = (char) *p;
        } else if ((used = utf8_seq_len(p, left)) > 0) {
            piece = (const char *) p, n = used;
        } else { /* not UTF-8: the text \xNN (its backslash escaped for JSON) */
            memcpy(esc, "\\\\x", 3), esc[3] = hex[*p >> 4], esc[4] = hex[*p & 15], n = 5;
            used = 1;
        }
        if (!line_put(b, piece, n))
            return false;
        p += used;
        left -= used;
    }
    return true;
}

static size_t
format_json(char *out, size_t cap, LogLevel level, const char *stamp, const char *ident, long pid,
            const char *msg)
{
    LineBuf b = {.out = out, .cap = cap};
    char head[96];
    int n = snprintf(head, sizeof(head), "{\"time\":\"%s\",\"level\":\"%s\",\"ident\":\"", stamp,
                     level_names[level]);
    bool whole = line_put(&b, head, (size_t) n) && json_put_string(&b, ident);
    n = snprintf(head, sizeof(head), "\",\"pid\":%ld,\"message\":\"", pid);
    whole = whole && line_put(&b, head, (size_t) n) && json_put_string(&b, msg);
    if (!whole) /* the tail's room was kept: the line stays one JSON object */
        memcpy(out + b.len, "...", 3), b.len += 3;
    memcpy(out + b.len, "\"}\n", 4);
    return b.len + 3;
}

/* ------------------------------------------------------------------ lines */

size_t
log_format_line(char *out, size_t cap, LogStyle style, LogLevel level, const struct timespec *ts,
                const char *ident, long pid, const char *msg)
{
    char stamp[48], day[32];
    struct tm tm;
    int n;

    gmtime_r(&ts->tv_sec, &tm);
    strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(stamp, sizeof(stamp), "%s.%03ldZ", day, ts->tv_nsec / 1000000L);
    if (style == LOG_STYLE_JSON)
        return format_json(out, cap, level, stamp, ident, pid, msg);
    if (style == LOG_STYLE_JOURNAL)
        n = snprintf(out, cap, "<%d>%s: %s\n", level_priorities[level], level_names[level], msg);
    else
        n = snprintf(out, cap, "%s %s[%ld] %s: %s\n", stamp, ident, pid, level_names[level], msg);
    if (n >= 0 && (size_t) n < cap)
        return (size_t) n;
    memcpy(out + cap - 5, "...\n", 5); /* cut: still one line */
    return cap - 1;
}

void
log_emit(LogLevel level, const char *fmt, ...)
{
    char msg[2048], line[LOG_LINE_MAX_BYTES + 1];
    struct timespec ts;
    va_list ap;

    if (level < log_min_level)
        return;
    int saved = errno;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    clock_gettime(CLOCK_REALTIME, &ts);
    size_t len =
        log_format_line(line, sizeof(line), log_style, level, &ts, log_ident, (long) getpid(), msg);
    fwrite(line, 1, len, stderr);
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
