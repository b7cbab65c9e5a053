/* Fuzz target: hostd/oci/dockerfile.c, the Dockerfile parser and the expansion of variables in
 * every word it yields (with a fixed table: A=a, EMPTY=""). Invariants on success: at most
 * DOCKERFILE_MAX_INSTRUCTIONS instructions, exactly one FROM and only ARG before it, each
 * with at most DOCKERFILE_MAX_ARGS words, COPY/ADD with a source and a destination, RUN/CMD/
 * ENTRYPOINT with a command; an expansion is at most DOCKERFILE_EXPAND_MAX_BYTES. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dockerfile.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *
lookup(void *ctx, const char *name)
{
    (void) ctx;
    if (strcmp(name, "A") == 0)
        return "a";
    return strcmp(name, "EMPTY") == 0 ? "" : NULL;
}

static void
expand_all(const DfInstr *in)
{
    for (size_t i = 0; i < in->n_args; i++) {
        char *out = NULL;
        Error *err = NULL;
        if (dockerfile_expand(in->args[i], lookup, NULL, &out, &err) == 0)
            CHECK(strlen(out) <= DOCKERFILE_EXPAND_MAX_BYTES);
        else
            CHECK(err && err->message[0]);
        free(out);
        error_free(err);
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Dockerfile d;
    Error *err = NULL;
    size_t froms = 0;

    if (dockerfile_parse((const char *) data, size, &d, &err) < 0) {
        CHECK(err && err->message[0]);
        error_free(err);
        return 0;
    }
    CHECK(d.n <= DOCKERFILE_MAX_INSTRUCTIONS);
    for (size_t i = 0; i < d.n; i++) {
        const DfInstr *in = &d.v[i];
        CHECK(in->n_args <= DOCKERFILE_MAX_ARGS && in->line >= 1);
        CHECK(froms > 0 || in->kind == DF_ARG || in->kind == DF_FROM);
        froms += in->kind == DF_FROM;
        if (in->kind == DF_COPY || in->kind == DF_ADD)
            CHECK(in->n_args >= 2);
        if (in->kind == DF_RUN || in->kind == DF_FROM || in->kind == DF_WORKDIR ||
            in->kind == DF_USER || in->kind == DF_ARG)
            CHECK(in->n_args >= 1);
        expand_all(in);
    }
    CHECK(froms == 1);
    dockerfile_clear(&d);
    return 0;
}
