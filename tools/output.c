/* See output.h. */
#include "output.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "macro.h"
#include "timeutil.h"

const char *
color_code(Color c)
{
    static const char *const codes[] = {
        [COLOR_NONE] = "",        [COLOR_GREEN] = "\033[32m", [COLOR_YELLOW] = "\033[33m",
        [COLOR_RED] = "\033[31m", [COLOR_DIM] = "\033[2m",    [COLOR_BOLD] = "\033[1m",
    };
    return (unsigned) c < ELEMENTSOF(codes) ? codes[c] : "";
}

/* ------------------------------------------------------------------ escaping */

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if invalid. No overlongs,
 * no surrogates, nothing over U+10FFFF. *ret_cp gets the code point. */
static size_t
utf8_seq(const unsigned char *s, size_t n, uint32_t *ret_cp)
{
    static const uint32_t min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
    size_t len;
    uint32_t cp;

    if (s[0] < 0x80) {
        *ret_cp = s[0];
        return 1;
    }
    if ((s[0] & 0xE0) == 0xC0)
        len = 2, cp = s[0] & 0x1F;
    else if ((s[0] & 0xF0) == 0xE0)
        len = 3, cp = s[0] & 0x0F;
    else if ((s[0] & 0xF8) == 0xF0)
        len = 4, cp = s[0] & 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min_cp[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    *ret_cp = cp;
    return len;
}

static bool
cp_is_control(uint32_t cp)
{
    return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0);
}

char *
term_escape(const char *s, size_t len, size_t max_chars)
{
    const unsigned char *p = (const unsigned char *) (s ? s : "");
    char *out = malloc(MIN(len, max_chars * 4) + 4), *o = out;
    size_t chars = 0;

    if (!out)
        return NULL;
    if (!s)
        len = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t n = utf8_seq(p + i, len - i, &cp);
        if (chars == max_chars) { /* room was kept for "..." */
            memcpy(o, "...", 3);
            o += 3;
            break;
        }
        if (n == 0 || cp_is_control(cp)) {
            *o++ = '?';
            i += n ? n : 1;
        } else {
            memcpy(o, p + i, n);
            o += n;
            i += n;
        }
        chars++;
    }
    *o = '\0';
    return out;
}

size_t
text_width(const char *s)
{
    size_t w = 0;
    for (const unsigned char *p = (const unsigned char *) s; *p; p++)
        w += (*p & 0xC0) != 0x80;
    return w;
}

/* ------------------------------------------------------------------ tables */

struct Table {
    size_t ncols, nrows, cap;
    char *headers[TABLE_MAX_COLS];
    bool right[TABLE_MAX_COLS];
    char **cells;  /* nrows * ncols */
    Color *colors; /* nrows * ncols */
};

Table *
table_new(size_t ncols, const char *const *headers)
{
    if (ncols == 0 || ncols > TABLE_MAX_COLS)
        return NULL;
    Table *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->ncols = ncols;
    for (size_t i = 0; i < ncols; i++) {
        size_t n = strlen(headers[i]);
        t->right[i] = n > 0 && headers[i][n - 1] == '>';
        if (!(t->headers[i] = strndup(headers[i], t->right[i] ? n - 1 : n))) {
            table_free(t);
            return NULL;
        }
    }
    return t;
}

void
table_free(Table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->ncols; i++)
        free(t->headers[i]);
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t->colors);
    free(t);
}

static int
table_grow(Table *t)
{
    size_t cap = t->cap ? t->cap * 2 : 16;
    char **cells = realloc(t->cells, cap * t->ncols * sizeof(*cells));
    if (!cells)
        return -1;
    t->cells = cells;
    Color *colors = realloc(t->colors, cap * t->ncols * sizeof(*colors));
    if (!colors)
        return -1;
    t->colors = colors;
    t->cap = cap;
    return 0;
}

int
table_add(Table *t, const char *const *cells)
{
    if (t->nrows == TABLE_MAX_ROWS || (t->nrows == t->cap && table_grow(t) < 0))
        return -1;
    char **row = t->cells + t->nrows * t->ncols;
    for (size_t i = 0; i < t->ncols; i++) {
        const char *c = cells[i] ? cells[i] : "";
        t->colors[t->nrows * t->ncols + i] = COLOR_NONE;
        if (!(row[i] = term_escape(c, strlen(c), TABLE_CELL_MAX_CHARS))) {
            while (i-- > 0)
                free(row[i]);
            return -1;
        }
    }
    t->nrows++;
    return 0;
}

void
table_color(Table *t, size_t col, Color c)
{
    if (t->nrows > 0 && col < t->ncols)
        t->colors[(t->nrows - 1) * t->ncols + col] = c;
}

size_t
table_rows(const Table *t)
{
    return t->nrows;
}

static void
table_cell(FILE *f, const char *text, size_t width, bool right, bool last, Color c)
{
    size_t pad = width - MIN(width, text_width(text));
    if (right)
        fprintf(f, "%*s", (int) pad, "");
    fprintf(f, "%s%s%s", color_code(c), text, c ? COLOR_RESET : "");
    if (!right && !last)
        fprintf(f, "%*s", (int) pad, "");
    if (!last)
        fputs("  ", f);
}

int
table_render(const Table *t, FILE *f, bool color)
{
    size_t width[TABLE_MAX_COLS];
    for (size_t c = 0; c < t->ncols; c++) {
        width[c] = text_width(t->headers[c]);
        for (size_t r = 0; r < t->nrows; r++)
            width[c] = MAX(width[c], text_width(t->cells[r * t->ncols + c]));
    }
    for (size_t c = 0; c < t->ncols; c++)
        table_cell(f, t->headers[c], width[c], t->right[c], c + 1 == t->ncols,
                   color ? COLOR_BOLD : COLOR_NONE);
    fputc('\n', f);
    for (size_t r = 0; r < t->nrows; r++) {
        for (size_t c = 0; c < t->ncols; c++)
            table_cell(f, t->cells[r * t->ncols + c], width[c], t->right[c], c + 1 == t->ncols,
                       color ? t->colors[r * t->ncols + c] : COLOR_NONE);
        fputc('\n', f);
    }
    return ferror(f) ? -1 : 0;
}

/* ------------------------------------------------------------------ formatting */

void
format_bytes(uint64_t bytes, char *out, size_t cap)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    if (bytes < 1024) {
        snprintf(out, cap, "%llu B", (unsigned long long) bytes);
        return;
    }
    double v = (double) bytes / 1024.0;
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < ELEMENTSOF(units)) {
        v /= 1024.0;
        u++;
    }
    snprintf(out, cap, "%.1f %s", v, units[u]);
}

void
format_duration_ms(int64_t ms, char *out, size_t cap)
{
    if (ms < 0)
        snprintf(out, cap, "?");
    else if (ms < 1000)
        snprintf(out, cap, "%lld ms", (long long) ms);
    else if (ms < 60000)
        snprintf(out, cap, "%.1f s", (double) ms / 1000.0);
    else if (ms < 3600000)
        snprintf(out, cap, "%lld min %02lld s", (long long) (ms / 60000),
                 (long long) (ms / 1000 % 60));
    else
        snprintf(out, cap, "%lld h %02lld min", (long long) (ms / 3600000),
                 (long long) (ms / 60000 % 60));
}

static int
digits(const char *s, int n, int *ret)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *ret = v;
    return 0;
}

int
parse_rfc3339_ms(const char *s, int64_t *ret_ms)
{
    struct tm tm = {0};
    int y, mo, d, h, mi, sec, ms = 0;

    if (!s || strlen(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
        s[16] != ':' || digits(s, 4, &y) < 0 || digits(s + 5, 2, &mo) < 0 ||
        digits(s + 8, 2, &d) < 0 || digits(s + 11, 2, &h) < 0 || digits(s + 14, 2, &mi) < 0 ||
        digits(s + 17, 2, &sec) < 0)
        return -1;
    const char *rest = s + 19;
    if (rest[0] == '.') {
        if (digits(rest + 1, 3, &ms) < 0)
            return -1;
        rest += 4;
    }
    if (strcmp(rest, "Z") != 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 ||
        sec > 60)
        return -1;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    *ret_ms = (int64_t) timegm(&tm) * 1000 + ms;
    return 0;
}

void
format_time_short(const char *rfc3339, char *out, size_t cap)
{
    int64_t ms;
    struct tm tm;
    if (parse_rfc3339_ms(rfc3339, &ms) < 0) {
        snprintf(out, cap, "-");
        return;
    }
    time_t t = (time_t) (ms / 1000);
    gmtime_r(&t, &tm);
    strftime(out, cap, "%Y-%m-%d %H:%M:%S", &tm);
}

/* ------------------------------------------------------------------ progress */

void
progress_update(Progress *p, uint64_t done, uint64_t total)
{
    char a[16], b[16], bar[PROGRESS_BAR_CHARS + 1];
    uint64_t now = now_usec();

    if (!p->enabled || (p->drawn && now - p->last_usec < PROGRESS_INTERVAL_USEC))
        return;
    p->last_usec = now;
    p->drawn = true;
    format_bytes(done, a, sizeof(a));
    if (total == 0 || done > total) {
        fprintf(stderr, "\r\033[K%s %s", p->label, a);
        return;
    }
    size_t fill = (size_t) (done * PROGRESS_BAR_CHARS / total);
    memset(bar, '#', fill);
    memset(bar + fill, '.', PROGRESS_BAR_CHARS - fill);
    bar[PROGRESS_BAR_CHARS] = '\0';
    format_bytes(total, b, sizeof(b));
    fprintf(stderr, "\r\033[K%s [%s] %3d%% %s / %s", p->label, bar, (int) (done * 100 / total), a,
            b);
}

void
progress_end(Progress *p)
{
    if (p->enabled && p->drawn)
        fputs("\r\033[K", stderr);
    p->drawn = false;
}
