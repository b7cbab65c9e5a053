/* Logging for the edges (main, loop callbacks, API handlers). Modules return errors instead.
 * One line per record on stderr: "<UTC time> <ident>[<pid>] <level>: <message>".
 * Untrusted bytes must pass through log_escape() before they reach a format string. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"

typedef enum { LOG_LEVEL_DEBUG, LOG_LEVEL_INFO, LOG_LEVEL_WARN, LOG_LEVEL_ERROR } LogLevel;

void log_setup(const char *ident, LogLevel min_level);
/* Parses "debug|info|warn|error"; returns -1 if unknown. */
int log_level_from_string(const char *s, LogLevel *ret_level);
void log_emit(LogLevel level, const char *fmt, ...) _printf_(2, 3);

#define log_debug(...) log_emit(LOG_LEVEL_DEBUG, __VA_ARGS__)
#define log_info(...) log_emit(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_warn(...) log_emit(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_error(...) log_emit(LOG_LEVEL_ERROR, __VA_ARGS__)

/* Writes a printable, NUL-terminated rendering of data[0..len) into out[0..cap): printable
 * ASCII except '\\' and '"' as is, everything else as \xNN; truncates with "..." when the
 * rendering does not fit. Returns out. cap must be >= 4. */
char *log_escape(char *out, size_t cap, const void *data, size_t len);
