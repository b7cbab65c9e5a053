/* Logging for the edges (main, loop callbacks, API handlers). Modules return errors instead.
 * One line per record on stderr, in one of three forms (log_setup):
 *   text:    "<UTC time> <ident>[<pid>] <level>: <message>"
 *   journal: "<N><level>: <message>" when stderr is the journal ($JOURNAL_STREAM names
 *            stderr's device and inode): <N> is the syslog priority journald reads (3 error,
 *            4 warn, 6 info, 7 debug); journald stamps the time, the unit and the pid itself
 *   json:    {"time":"...","level":"...","ident":"...","pid":N,"message":"..."} ([daemon]
 *            log_format = json): every byte of the message escaped (control bytes as \u00NN,
 *            bytes that are not UTF-8 as the text \xNN), the line cut at LOG_LINE_MAX_BYTES.
 * Untrusted bytes must still pass through log_escape() before they reach a format string. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "macro.h"

/* The longest line written, newline included; a longer record is cut (text ends "..."). */
#define LOG_LINE_MAX_BYTES 4096

typedef enum { LOG_LEVEL_DEBUG, LOG_LEVEL_INFO, LOG_LEVEL_WARN, LOG_LEVEL_ERROR } LogLevel;
typedef enum { LOG_FORMAT_TEXT, LOG_FORMAT_JSON } LogFormat;
typedef enum { LOG_STYLE_TEXT, LOG_STYLE_JOURNAL, LOG_STYLE_JSON } LogStyle;

void log_setup(const char *ident, LogLevel min_level);
/* The form of later lines: json as asked; text becomes journal when stderr is the journal. */
void log_set_format(LogFormat format);
/* Parses "debug|info|warn|error"; returns -1 if unknown. */
int log_level_from_string(const char *s, LogLevel *ret_level);
/* Parses "text|json"; returns -1 if unknown. */
int log_format_from_string(const char *s, LogFormat *ret_format);
/* True when $JOURNAL_STREAM ("<dev>:<ino>") names the file stderr (fd 2) is. */
bool log_stderr_is_journal(void);
void log_emit(LogLevel level, const char *fmt, ...) _printf_(2, 3);

/* One record as a line in out[0..cap) (cap >= 64), newline and NUL included; returns its
 * length without the NUL. Pure: log_emit's formatting, for tests. */
size_t log_format_line(char *out, size_t cap, LogStyle style, LogLevel level,
                       const struct timespec *ts, const char *ident, long pid, const char *msg);

#define log_debug(...) log_emit(LOG_LEVEL_DEBUG, __VA_ARGS__)
#define log_info(...) log_emit(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_warn(...) log_emit(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_error(...) log_emit(LOG_LEVEL_ERROR, __VA_ARGS__)

/* Writes a printable, NUL-terminated rendering of data[0..len) into out[0..cap): printable
 * ASCII except '\\' and '"' as is, everything else as \xNN; truncates with "..." when the
 * rendering does not fit. Returns out. cap must be >= 4. */
char *log_escape(char *out, size_t cap, const void *data, size_t len);
