/* Dockerfile parsing and variable expansion: see dockerfile.h. */
#include "dockerfile.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "jsonscan.h"
#include "log.h"

#define DF_JSON_MAX_DEPTH 4u
#define DF_ESC_BYTES 64u

typedef struct Keyword {
    const char *name;
    DfKind kind;
} Keyword;

static const Keyword keywords[] = {
    {"FROM", DF_FROM},
    {"RUN", DF_RUN},
    {"COPY", DF_COPY},
    {"ADD", DF_ADD},
    {"ENV", DF_ENV},
    {"ARG", DF_ARG},
    {"WORKDIR", DF_WORKDIR},
    {"USER", DF_USER},
    {"ENTRYPOINT", DF_ENTRYPOINT},
    {"CMD", DF_CMD},
    {"LABEL", DF_IGNORED},
    {"EXPOSE", DF_IGNORED},
    {"MAINTAINER", DF_IGNORED},
    {"STOPSIGNAL", DF_IGNORED},
    {"HEALTHCHECK", DF_IGNORED},
    {"VOLUME", DF_IGNORED},
};

const char *
dockerfile_kind_name(DfKind k)
{
    for (size_t i = 0; i < ELEMENTSOF(keywords); i++)
        if (keywords[i].kind == k)
            return keywords[i].name;
    return "?";
}

static void
instr_clear(DfInstr *in)
{
    for (size_t i = 0; i < in->n_args; i++)
        free(in->args[i]);
    free(in->args);
    free(in->keyword);
    free(in->text);
    free(in->chown);
    *in = (DfInstr){0};
}

void
dockerfile_clear(Dockerfile *d)
{
    for (size_t i = 0; i < d->n; i++)
        instr_clear(&d->v[i]);
    free(d->v);
    *d = (Dockerfile){0};
}

static int
instr_add_arg(DfInstr *in, const char *s, size_t len)
{
    if (in->n_args >= DOCKERFILE_MAX_ARGS)
        return -1;
    char **v = realloc(in->args, (in->n_args + 1) * sizeof(*v));
    if (!v)
        return -1;
    in->args = v;
    if (!(v[in->n_args] = strndup(s, len)))
        return -1;
    in->n_args++;
    return 0;
}

/* Shell-like words: whitespace separates, quotes group, a backslash escapes. `$` stays for
 * dockerfile_expand, written `\$` where it must stay literal (single quotes, `\$`). */
static int
split_words(const char *s, DfInstr *in)
{
    char *w = malloc(strlen(s) * 2 + 1);
    int r = 0;
    if (!w)
        return -1;
    while (r == 0 && *s) {
        while (*s && isspace((unsigned char) *s))
            s++;
        if (!*s)
            break;
        size_t n = 0;
        char q = 0;
        for (; *s && (q || !isspace((unsigned char) *s)); s++) {
            if (!q && (*s == '"' || *s == '\'')) {
                q = *s;
            } else if (q && *s == q) {
                q = 0;
            } else if (q == '\'' && *s == '$') {
                w[n++] = '\\', w[n++] = '$';
            } else if (q != '\'' && *s == '\\' && s[1]) {
                s++;
                if (*s == '$')
                    w[n++] = '\\';
                w[n++] = *s;
            } else {
                w[n++] = *s;
            }
        }
        if (q)
            r = -1; /* an unterminated quote */
        else
            r = instr_add_arg(in, w, n);
    }
    free(w);
    return r;
}

/* The exec form: a JSON array of strings. 1 if it was one, 0 if not (shell form), -1. */
static int
parse_json_form(const char *s, DfInstr *in)
{
    if (s[0] != '[' || !jsonscan_depth_within(s, strlen(s), DF_JSON_MAX_DEPTH))
        return 0;
    json_t *a = json_loads(s, JSON_REJECT_DUPLICATES, NULL);
    int r = 1;
    if (!json_is_array(a)) {
        json_decref(a);
        return 0;
    }
    for (size_t i = 0; r == 1 && i < json_array_size(a); i++) {
        json_t *v = json_array_get(a, i);
        if (!json_is_string(v) || json_string_length(v) != strlen(json_string_value(v)))
            r = 0;
    }
    for (size_t i = 0; r == 1 && i < json_array_size(a); i++) {
        json_t *v = json_array_get(a, i);
        if (instr_add_arg(in, json_string_value(v), json_string_length(v)) < 0)
            r = -1;
    }
    json_decref(a);
    return r;
}

static int
parse_command(const char *text, DfInstr *in)
{
    int r = parse_json_form(text, in);
    if (r != 0)
        return r < 0 ? -1 : 0;
    if (!text[0])
        return -1;
    return instr_add_arg(in, "/bin/sh", 7) < 0 || instr_add_arg(in, "-c", 2) < 0 ||
                   instr_add_arg(in, text, strlen(text)) < 0
               ? -1
               : 0;
}

/* --chown=X before the words of COPY/ADD; any other flag is refused. */
static int
parse_copy(char *text, DfInstr *in, const char **why)
{
    while (strncmp(text, "--", 2) == 0) {
        size_t n = strcspn(text, " \t");
        if (strncmp(text, "--chown=", 8) != 0 || in->chown) {
            *why = "only --chown=USER[:GROUP] is supported";
            return -1;
        }
        if (!(in->chown = strndup(text + 8, n - 8)))
            return -1;
        text += n;
        text += strspn(text, " \t");
    }
    int r = parse_json_form(text, in);
    if (r == 0)
        r = split_words(text, in) < 0 ? -1 : 1;
    if (r < 0 || in->n_args < 2) {
        *why = "needs SOURCE... DEST";
        return -1;
    }
    for (size_t i = 0; in->kind == DF_ADD && i + 1 < in->n_args; i++)
        if (strstr(in->args[i], "://")) {
            *why = "of a URL is not supported: the build reaches no network";
            return -1;
        }
    return 0;
}

static int
parse_env(char *text, DfInstr *in, const char **why)
{
    size_t first = strcspn(text, " \t");
    if (!memchr(text, '=', first)) { /* the old form: ENV NAME value */
        const char *v = text + first + strspn(text + first, " \t");
        if (!*v || !first) {
            *why = "needs NAME=VALUE";
            return -1;
        }
        char *kv;
        if (asprintf(&kv, "%.*s=%s", (int) first, text, v) < 0)
            return -1;
        int r = instr_add_arg(in, kv, strlen(kv));
        free(kv);
        return r;
    }
    if (split_words(text, in) < 0 || in->n_args == 0) {
        *why = "needs NAME=VALUE";
        return -1;
    }
    for (size_t i = 0; i < in->n_args; i++) {
        const char *eq = strchr(in->args[i], '=');
        if (!eq || eq == in->args[i]) {
            *why = "each word must be NAME=VALUE";
            return -1;
        }
    }
    return 0;
}

static int
parse_args(DfInstr *in, char *text, const char **why)
{
    switch (in->kind) {
    case DF_RUN:
    case DF_CMD:
    case DF_ENTRYPOINT:
        *why = "needs a command";
        return parse_command(text, in);
    case DF_COPY:
    case DF_ADD:
        return parse_copy(text, in, why);
    case DF_ENV:
        return parse_env(text, in, why);
    case DF_IGNORED:
        return 0;
    default:
        break;
    }
    if (split_words(text, in) < 0)
        return -1;
    size_t want = in->kind == DF_FROM ? 1 : 1;
    bool as = in->kind == DF_FROM && in->n_args == 3 && strcasecmp(in->args[1], "AS") == 0;
    if (in->n_args != want && !as) {
        *why = in->kind == DF_FROM ? "needs IMAGE [AS NAME]" : "needs one word";
        return -1;
    }
    if (in->kind == DF_ARG && in->args[0][0] == '=') {
        *why = "needs NAME[=DEFAULT]";
        return -1;
    }
    return 0;
}

static const Keyword *
find_keyword(const char *w, size_t n)
{
    for (size_t i = 0; i < ELEMENTSOF(keywords); i++)
        if (strlen(keywords[i].name) == n && strncasecmp(keywords[i].name, w, n) == 0)
            return &keywords[i];
    return NULL;
}

/* One joined logical line. 0, or -1 with errp. */
static int
parse_line(Dockerfile *d, char *line, unsigned lineno, Error **errp)
{
    char esc[DF_ESC_BYTES];
    size_t n = strcspn(line, " \t");
    const Keyword *k = find_keyword(line, n);
    const char *why = "malformed";
    DfInstr in = {.line = lineno};

    if (!k)
        return error_set(errp, E_INVALID, 0, "Dockerfile line %u: %s is not supported", lineno,
                         log_escape(esc, sizeof(esc), line, n));
    char *text = line + n + strspn(line + n, " \t");
    size_t tl = strlen(text);
    while (tl > 0 && isspace((unsigned char) text[tl - 1]))
        text[--tl] = '\0';
    if (d->n >= DOCKERFILE_MAX_INSTRUCTIONS)
        return error_set(errp, E_TOO_LARGE, 0, "Dockerfile: more than %u instructions",
                         DOCKERFILE_MAX_INSTRUCTIONS);
    in.kind = k->kind;
    if (!(in.keyword = strdup(k->name)) || !(in.text = strdup(text)) ||
        parse_args(&in, text, &why) < 0) {
        instr_clear(&in);
        return error_set(errp, E_INVALID, 0, "Dockerfile line %u: %s %s", lineno, k->name, why);
    }
    DfInstr *v = realloc(d->v, (d->n + 1) * sizeof(*v));
    if (!v) {
        instr_clear(&in);
        return error_set(errp, E_INTERNAL, ENOMEM, "Dockerfile");
    }
    d->v = v;
    d->v[d->n++] = in;
    return 0;
}

/* The lines, continuations joined, comments and blank lines dropped. */
static int
parse_text(Dockerfile *d, const char *text, size_t len, Error **errp)
{
    _cleanup_free_ char *joined = malloc(DOCKERFILE_LINE_MAX_BYTES + 1);
    size_t jl = 0, pos = 0;
    unsigned lineno = 0, start = 0;

    if (!joined)
        return error_set(errp, E_INTERNAL, ENOMEM, "Dockerfile");
    while (pos < len) {
        const char *l = text + pos, *nl = memchr(l, '\n', len - pos);
        size_t n = nl ? (size_t) (nl - l) : len - pos;
        pos += n + (nl ? 1 : 0);
        lineno++;
        while (n > 0 && (l[n - 1] == '\r' || l[n - 1] == ' ' || l[n - 1] == '\t'))
            n--;
        size_t lead = 0;
        while (lead < n && (l[lead] == ' ' || l[lead] == '\t'))
            lead++;
        if (lead == n || l[lead] == '#')
            continue; /* blank or comment (inside a continuation too) */
        bool more = l[n - 1] == '\\';
        size_t take = n - lead - (more ? 1 : 0);
        if (memchr(l, '\0', n) || jl + take + 1 > DOCKERFILE_LINE_MAX_BYTES)
            return error_set(errp, E_INVALID, 0, "Dockerfile line %u: NUL, or a line over %u bytes",
                             lineno, DOCKERFILE_LINE_MAX_BYTES);
        if (jl == 0)
            start = lineno;
        else
            joined[jl++] = ' ';
        memcpy(joined + jl, l + lead, take);
        jl += take;
        joined[jl] = '\0';
        if (more && pos < len)
            continue;
        if (parse_line(d, joined, start, errp) < 0)
            return -1;
        jl = 0;
    }
    return 0;
}

static int
check_stages(const Dockerfile *d, Error **errp)
{
    size_t froms = 0, first = d->n;
    for (size_t i = 0; i < d->n; i++)
        if (d->v[i].kind == DF_FROM && froms++ == 0)
            first = i;
    for (size_t i = 0; i < first; i++)
        if (d->v[i].kind != DF_ARG)
            return error_set(errp, E_INVALID, 0,
                             "Dockerfile line %u: only ARG may come before FROM", d->v[i].line);
    if (froms != 1)
        return error_set(errp, E_INVALID, 0,
                         froms ? "Dockerfile: one FROM only (multi-stage builds are not supported)"
                               : "Dockerfile: no FROM");
    return 0;
}

int
dockerfile_parse(const char *text, size_t len, Dockerfile *ret, Error **errp)
{
    Dockerfile d = {0};

    if (len > DOCKERFILE_MAX_BYTES)
        return error_set(errp, E_TOO_LARGE, 0, "Dockerfile: over %u bytes", DOCKERFILE_MAX_BYTES);
    if (parse_text(&d, text, len, errp) < 0 || check_stages(&d, errp) < 0) {
        dockerfile_clear(&d);
        return -1;
    }
    *ret = d;
    return 0;
}

/* ------------------------------------------------------------ expansion */

typedef struct Out {
    char *buf;
    size_t len;
    bool over;
} Out;

static void
out_add(Out *o, const char *s, size_t n)
{
    if (o->over || o->len + n > DOCKERFILE_EXPAND_MAX_BYTES) {
        o->over = true;
        return;
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
}

static bool
name_char(char c, bool first)
{
    return c == '_' || isalpha((unsigned char) c) || (!first && isdigit((unsigned char) c));
}

/* ${...} at s (after "${"): the modifiers :- and :+. Returns the length consumed or 0. */
static size_t
expand_braced(const char *s, DfLookupFn lookup, void *ctx, Out *o)
{
    const char *end = strchr(s, '}');
    size_t n = 0;
    char name[256];
    if (!end)
        return 0;
    while (s + n < end && name_char(s[n], n == 0))
        n++;
    if (n == 0 || n >= sizeof(name))
        return 0;
    memcpy(name, s, n);
    name[n] = '\0';
    const char *v = lookup(ctx, name);
    if (s + n == end) {
        if (v)
            out_add(o, v, strlen(v));
    } else if (s[n] == ':' && (s[n + 1] == '-' || s[n + 1] == '+')) {
        const char *word = s + n + 2;
        bool use_word = s[n + 1] == '-' ? !v || !*v : v && *v;
        if (use_word)
            out_add(o, word, (size_t) (end - word));
        else if (v)
            out_add(o, v, strlen(v));
    } else {
        return 0;
    }
    return (size_t) (end - s) + 1;
}

int
dockerfile_expand(const char *word, DfLookupFn lookup, void *ctx, char **ret, Error **errp)
{
    Out o = {.buf = malloc(DOCKERFILE_EXPAND_MAX_BYTES + 1)};
    char esc[DF_ESC_BYTES];

    if (!o.buf)
        return error_set(errp, E_INTERNAL, ENOMEM, "expand");
    for (const char *s = word; *s && !o.over;) {
        if (s[0] == '\\' && s[1] == '$') {
            out_add(&o, "$", 1);
            s += 2;
        } else if (s[0] == '$' && s[1] == '{') {
            size_t used = expand_braced(s + 2, lookup, ctx, &o);
            if (!used) {
                free(o.buf);
                return error_set(errp, E_INVALID, 0, "bad variable in %s",
                                 log_escape(esc, sizeof(esc), word, strlen(word)));
            }
            s += 2 + used;
        } else if (s[0] == '$' && name_char(s[1], true)) {
            char name[256];
            size_t n = 0;
            while (name_char(s[1 + n], n == 0) && n + 1 < sizeof(name))
                n++;
            memcpy(name, s + 1, n);
            name[n] = '\0';
            const char *v = lookup(ctx, name);
            if (v)
                out_add(&o, v, strlen(v));
            s += 1 + n;
        } else {
            out_add(&o, s, 1);
            s++;
        }
    }
    if (o.over) {
        free(o.buf);
        return error_set(errp, E_TOO_LARGE, 0, "a word expands past %u bytes",
                         DOCKERFILE_EXPAND_MAX_BYTES);
    }
    o.buf[o.len] = '\0';
    *ret = o.buf;
    return 0;
}
