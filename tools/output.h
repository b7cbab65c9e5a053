/* Output helpers: terminal-safe text, human tables, sizes and durations, colour and a progress
 * bar. Tables and formatting are pure (they write to a FILE* or a buffer) and unit-tested.
 * Colour and progress are used only on a terminal and only without NO_COLOR (cli.c decides);
 * nothing from the daemon reaches a terminal without term_escape(). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TABLE_CELL_MAX_CHARS 72 /* a longer cell is cut with "..." */
#define TABLE_MAX_COLS 12
#define TABLE_MAX_ROWS 100000
#define PROGRESS_INTERVAL_USEC (100ull * 1000) /* at most 10 redraws a second */
#define PROGRESS_BAR_CHARS 24

typedef enum Color {
    COLOR_NONE = 0,
    COLOR_GREEN,
    COLOR_YELLOW,
    COLOR_RED,
    COLOR_DIM,
    COLOR_BOLD,
} Color;

/* ANSI sequence for c ("" for COLOR_NONE); COLOR_RESET ends it. */
const char *color_code(Color c);
#define COLOR_RESET "\033[0m"

/* A printable copy of untrusted text: control characters (C0, DEL, C1) and invalid UTF-8
 * become '?', and text over max_chars characters is cut and ends with "...". malloc'd; NULL
 * on OOM. */
char *term_escape(const char *s, size_t len, size_t max_chars);
/* Display width of UTF-8 text (one column per code point; escaped text only). */
size_t text_width(const char *s);

typedef struct Table Table;

/* headers: ncols strings (copied). A header ending in '>' right-aligns its column (the '>'
 * is not shown). NULL on OOM or a bad ncols. */
Table *table_new(size_t ncols, const char *const *headers);
void table_free(Table *t);
/* Adds a row of ncols cells (NULL = ""), escaped and cut to TABLE_CELL_MAX_CHARS. */
int table_add(Table *t, const char *const *cells);
/* Colours one cell of the last row. */
void table_color(Table *t, size_t col, Color c);
size_t table_rows(const Table *t);
/* Columns padded to their widest cell, two spaces apart; the last is not padded. */
int table_render(const Table *t, FILE *f, bool color);

/* "0 B", "999 B", "1.5 KiB", "12.0 MiB", "3.2 GiB". out must hold 16 bytes. */
void format_bytes(uint64_t bytes, char *out, size_t cap);
/* "350 ms", "4.2 s", "2 min 05 s", "1 h 03 min". out must hold 24 bytes. */
void format_duration_ms(int64_t ms, char *out, size_t cap);
/* "2026-11-29T23:13:30.101Z" (or without fraction) -> ms since the epoch; -1 if malformed. */
int parse_rfc3339_ms(const char *s, int64_t *ret_ms);

/* An RFC 3339 stamp as "2026-11-29 23:13:30" (UTC); "-" when absent or malformed. */
void format_time_short(const char *rfc3339, char *out, size_t cap);

/* A one-line progress bar on a terminal's stderr; does nothing when disabled. */
typedef struct Progress {
    bool enabled, drawn;
    const char *label;
    uint64_t last_usec;
} Progress;

void progress_update(Progress *p, uint64_t done, uint64_t total);
/* Erases the line if anything was drawn. */
void progress_end(Progress *p);
