/* Unit tests of hostd/oci's pure parts: the Dockerfile parser (continuations, comments inside
 * them, exec and shell forms, ENV's two forms and quotes, COPY flags, what is refused and on
 * which line), variable expansion, and the tar reader's owner and link-target fields (ustar
 * header, pax uid/gid/linkpath, GNU 'K') that layers use. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dockerfile.h"
#include "tar.h"

static Dockerfile
parse_ok(const char *text)
{
    Dockerfile d;
    Error *err = NULL;
    int r = dockerfile_parse(text, strlen(text), &d, &err);
    if (r < 0)
        fail_msg("%s", err->message);
    return d;
}

static void
assert_refused(const char *text, const char *why)
{
    Dockerfile d;
    Error *err = NULL;
    assert_int_equal(dockerfile_parse(text, strlen(text), &d, &err), -1);
    if (!strstr(err->message, why))
        fail_msg("'%s' does not say '%s'", err->message, why);
    error_free(err);
}

static void
test_forms(void **state)
{
    (void) state;
    Dockerfile d = parse_ok("# syntax=docker/dockerfile:1\n"
                            "ARG BASE=minimal\n"
                            "from ${BASE} AS base\n"
                            "RUN apt-get update && \\\n"
                            "    # a comment inside a continuation\n"
                            "    apt-get install -y jq\n"
                            "CMD [\"sh\", \"-c\", \"echo hi\"]\n"
                            "ENTRYPOINT [not json\n"
                            "ENV A=1 B=\"two words\" C='$HOME'\n"
                            "ENV OLD value with spaces\n"
                            "COPY --chown=app:app a b /dest/\n"
                            "EXPOSE 8080\n");
    assert_int_equal(d.n, 9);
    assert_int_equal(d.v[1].kind, DF_FROM);
    assert_int_equal(d.v[1].line, 3);
    assert_string_equal(d.v[1].args[0], "${BASE}");
    assert_int_equal(d.v[2].kind, DF_RUN);
    assert_int_equal(d.v[2].n_args, 3);
    assert_string_equal(d.v[2].args[2], "apt-get update &&  apt-get install -y jq");
    assert_int_equal(d.v[3].n_args, 3); /* exec form */
    assert_string_equal(d.v[3].args[2], "echo hi");
    assert_string_equal(d.v[4].args[0], "/bin/sh"); /* not JSON: the shell form */
    assert_string_equal(d.v[4].args[2], "[not json");
    assert_int_equal(d.v[5].n_args, 3);
    assert_string_equal(d.v[5].args[1], "B=two words");
    assert_string_equal(d.v[5].args[2], "C=\\$HOME"); /* single quotes: no expansion later */
    assert_string_equal(d.v[6].args[0], "OLD=value with spaces");
    assert_string_equal(d.v[7].chown, "app:app");
    assert_int_equal(d.v[7].n_args, 3);
    assert_int_equal(d.v[8].kind, DF_IGNORED);
    dockerfile_clear(&d);
}

static void
test_refused(void **state)
{
    (void) state;
    assert_refused("RUN x\n", "only ARG may come before FROM");
    assert_refused("ARG A\n", "no FROM");
    assert_refused("FROM a\nFROM b\n", "one FROM only");
    assert_refused("FROM a\nSHELL [\"/bin/bash\"]\n", "line 2: SHELL is not supported");
    assert_refused("FROM a\nADD http://x/y /z\n", "line 2: ADD of a URL");
    assert_refused("FROM a\nCOPY --from=build a b\n", "only --chown");
    assert_refused("FROM a\nCOPY onlyone\n", "SOURCE... DEST");
    assert_refused("FROM a\nENV\n", "line 2: ENV");
    assert_refused("FROM a\nENV A=\"open\n", "line 2: ENV");
    assert_refused("FROM a b c d\n", "IMAGE [AS NAME]");
}

static const char *
lookup(void *ctx, const char *name)
{
    (void) ctx;
    return strcmp(name, "A") == 0 ? "a" : strcmp(name, "E") == 0 ? "" : NULL;
}

static void
test_expand(void **state)
{
    (void) state;
    static const char *const cases[][2] = {
        {"$A/${A}", "a/a"},  {"${U:-dflt}", "dflt"}, {"${E:-dflt}", "dflt"},
        {"${A:-dflt}", "a"}, {"${A:+set}", "set"},   {"${U:+set}", ""},
        {"\\$A", "$A"},      {"$U-x", "-x"},         {"cost $5", "cost $5"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *out = NULL;
        Error *err = NULL;
        assert_int_equal(dockerfile_expand(cases[i][0], lookup, NULL, &out, &err), 0);
        assert_string_equal(out, cases[i][1]);
        free(out);
    }
    char *out = NULL;
    Error *err = NULL;
    assert_int_equal(dockerfile_expand("${A", lookup, NULL, &out, &err), -1);
    error_free(err);
}

/* ------------------------------------------------------------ tar owner and link */

typedef struct Mem {
    const uint8_t *p;
    size_t len, pos;
} Mem;

static int
mem_read(void *ctx, void *buf, size_t len, size_t *ret_got)
{
    Mem *m = ctx;
    size_t n = len < m->len - m->pos ? len : m->len - m->pos;
    memcpy(buf, m->p + m->pos, n);
    m->pos += n;
    *ret_got = n;
    return 0;
}

static void
header(uint8_t *b, const char *name, char type, const char *link, unsigned uid, unsigned size)
{
    unsigned sum = 0;
    memset(b, 0, 512);
    snprintf((char *) b, 100, "%s", name);
    snprintf((char *) b + 100, 8, "%07o", 0644u);
    snprintf((char *) b + 108, 8, "%07o", uid);
    snprintf((char *) b + 116, 8, "%07o", uid + 1);
    snprintf((char *) b + 124, 12, "%011o", size);
    snprintf((char *) b + 136, 12, "%011o", 0u);
    b[156] = (uint8_t) type;
    snprintf((char *) b + 157, 100, "%s", link);
    memcpy(b + 257,
           "ustar\0"
           "00",
           8);
    memset(b + 148, ' ', 8);
    for (int i = 0; i < 512; i++)
        sum += b[i];
    snprintf((char *) b + 148, 8, "%06o", sum);
}

static void
test_tar_owner_link(void **state)
{
    (void) state;
    static uint8_t t[512 * 9];
    const char *pax = "18 uid=4294967296\n20 linkpath=/a/long\n";
    static TarReader r;
    static TarEntry e;
    header(t, "ln", '2', "usr/bin", 1000, 0);
    header(t + 512, "pax", 'x', "", 0, (unsigned) strlen(pax));
    memcpy(t + 1024, pax, strlen(pax));
    header(t + 1536, "big", '1', "ignored", 5, 0);
    header(t + 2048, "././@LongLink", 'K', "", 0, 9);
    memcpy(t + 2560, "k/target", 9);
    header(t + 3072, "hl", '1', "short", 7, 0);
    Mem m = {t, sizeof(t), 0};
    tar_reader_init(&r, mem_read, &m);
    assert_int_equal(tar_reader_next(&r, &e), TAR_ENTRY);
    assert_string_equal(e.link, "usr/bin");
    assert_int_equal(e.uid, 1000);
    assert_int_equal(e.gid, 1001);
    assert_false(e.owner_bad);
    assert_int_equal(tar_reader_next(&r, &e), TAR_ENTRY);
    assert_string_equal(e.path, "big");
    assert_string_equal(e.link, "/a/long"); /* pax linkpath wins over the header */
    assert_true(e.owner_bad);               /* a pax uid over 32 bits */
    assert_int_equal(tar_reader_next(&r, &e), TAR_ENTRY);
    assert_string_equal(e.path, "hl");
    assert_string_equal(e.link, "k/target"); /* GNU 'K', its trailing NUL dropped */
    assert_int_equal(e.uid, 7);
    assert_int_equal(tar_reader_next(&r, &e), TAR_END);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forms),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_expand),
        cmocka_unit_test(test_tar_owner_link),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
