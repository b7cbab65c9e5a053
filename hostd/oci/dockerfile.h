/* A Dockerfile, parsed: the instructions agents' templates use (images/README.md, "Building
 * from a Dockerfile"). Pure: text in, instructions out; no I/O. Fuzzed (fuzz_dockerfile).
 *
 * Syntax as Docker's default frontend reads it: one instruction a line, the keyword case-
 * insensitive; a line ending in `\` continues on the next (comment lines inside are skipped);
 * `#` lines are comments (parser directives included: only the default escape `\` is
 * understood). RUN, CMD and ENTRYPOINT take the exec form (a JSON array of strings) or the
 * shell form (then ["/bin/sh", "-c", TEXT]); COPY and ADD take `[--chown=U[:G]] SRC... DEST`
 * or the JSON form; ENV takes `K=V...` (quotes and backslashes as a shell reads them) or the
 * old `K V`; ARG takes `NAME[=DEFAULT]`; FROM takes `IMAGE [AS NAME]`, once (one stage).
 * LABEL, EXPOSE, MAINTAINER, STOPSIGNAL, HEALTHCHECK and VOLUME change no file: they are kept
 * as DF_IGNORED (the build says so). Anything else (SHELL, ONBUILD, a second FROM, ADD of a
 * URL, flags other than --chown) is refused with the line number.
 *
 * Variables ($NAME, ${NAME}, ${NAME:-word}, ${NAME:+word}) are NOT expanded here: the build
 * expands them in each instruction's words with the ARG and ENV values in force there
 * (dockerfile_expand). Bounds: DOCKERFILE_MAX_BYTES of text, DOCKERFILE_MAX_INSTRUCTIONS,
 * DOCKERFILE_MAX_ARGS words an instruction, DOCKERFILE_LINE_MAX_BYTES a joined line. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define DOCKERFILE_MAX_BYTES (1024u * 1024u)
#define DOCKERFILE_MAX_INSTRUCTIONS 1000u
#define DOCKERFILE_MAX_ARGS 256u
#define DOCKERFILE_LINE_MAX_BYTES (64u * 1024u)
#define DOCKERFILE_EXPAND_MAX_BYTES (64u * 1024u)

typedef enum DfKind {
    DF_FROM,
    DF_RUN,
    DF_COPY,
    DF_ADD,
    DF_ENV,
    DF_ARG,
    DF_WORKDIR,
    DF_USER,
    DF_ENTRYPOINT,
    DF_CMD,
    DF_IGNORED,
} DfKind;

typedef struct DfInstr {
    DfKind kind;
    unsigned line; /* of the keyword, from 1 */
    char *keyword; /* as written, upper-cased */
    char *text;    /* the rest of the (joined) line, trimmed: progress and cache keys */
    char **args;   /* FROM: image[, name]; RUN/CMD/ENTRYPOINT: argv; COPY/ADD: srcs..., dest;
                    * ENV: "K=V" each (quotes removed, not expanded); ARG: "NAME" or
                    * "NAME=DEFAULT"; WORKDIR, USER: one word */
    size_t n_args;
    char *chown; /* COPY/ADD --chown value, or NULL */
} DfInstr;

typedef struct Dockerfile {
    DfInstr *v;
    size_t n;
} Dockerfile;

const char *dockerfile_kind_name(DfKind k);

/* On success *ret owns everything (dockerfile_clear); on failure it is left empty and the
 * error names the line. The first instruction other than ARG must be FROM. */
int dockerfile_parse(const char *text, size_t len, Dockerfile *ret, Error **errp);
void dockerfile_clear(Dockerfile *d);

/* Looks a variable up: its value, or NULL when unset. */
typedef const char *(*DfLookupFn)(void *ctx, const char *name);

/* Expands $NAME, ${NAME}, ${NAME:-word}, ${NAME:+word} in word; `\$` is a literal `$`.
 * *ret is malloc'd, at most DOCKERFILE_EXPAND_MAX_BYTES (else E_TOO_LARGE). */
int dockerfile_expand(const char *word, DfLookupFn lookup, void *ctx, char **ret, Error **errp);
