/* Unit tests of guest/imagecfg.c: the runner's reader of an imported image's exec defaults
 * (Env, WorkingDir, User), as `stockade image import|build` writes them; a file that breaks
 * a rule is refused as a whole, with its line. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "imagecfg.h"

static int
parse(const char *text, ImageCfg *c, size_t *line)
{
    *line = 0;
    return imagecfg_parse(text, strlen(text), c, line);
}

static void
test_full(void **state)
{
    (void) state;
    ImageCfg c;
    size_t line;
    assert_int_equal(parse("# header\n\nenv A=1\nenv PATH=/srv/bin:/bin\nenv E=50%25%0Anext\n"
                           "env A=2\ncwd /srv/app\nuser 4321:4322\nentrypoint /bin/sh\ncmd -c\n",
                           &c, &line),
                     0);
    assert_int_equal(c.env.n, 3);
    assert_string_equal(env_list_get(&c.env, "A"), "2"); /* a later line replaces */
    assert_string_equal(env_list_get(&c.env, "PATH"), "/srv/bin:/bin");
    assert_string_equal(env_list_get(&c.env, "E"), "50%\nnext");
    assert_string_equal(c.cwd, "/srv/app");
    assert_true(c.has_user);
    assert_int_equal(c.uid, 4321);
    assert_int_equal(c.gid, 4322);
    imagecfg_clear(&c);
}

static void
test_empty(void **state)
{
    (void) state;
    ImageCfg c;
    size_t line;
    assert_int_equal(parse("", &c, &line), 0);
    assert_int_equal(c.env.n, 0);
    assert_string_equal(c.cwd, "");
    assert_false(c.has_user);
    imagecfg_clear(&c);
}

static void
test_refused(void **state)
{
    (void) state;
    static const struct {
        const char *text;
        size_t line;
    } cases[] = {
        {"env A=1\nuser 0:0\n", 2},  /* root is never an exec user */
        {"user 1000:0\n", 1},        /* nor group root */
        {"user 1000\n", 1},          /* uid:gid */
        {"user 1:1\nuser 2:2\n", 2}, /* once */
        {"cwd relative\n", 1},       /* absolute */
        {"cwd /a\ncwd /b\n", 2},     /* once */
        {"env 1A=x\n", 1},           /* a name */
        {"env NOEQUALS\n", 1},       /* NAME=VALUE */
        {"env A=%0\n", 1},           /* a cut escape */
        {"env A=%00\n", 1},          /* NUL */
        {"env A=%zz\n", 1},          /* not hex */
        {"shell /bin/bash\n", 1},    /* an unknown key */
        {"env\n", 1},                /* no value */
        {"cwd /%2Fa%00\n", 1},       /* NUL in a path */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ImageCfg c = {.has_user = true};
        size_t line;
        errno = 0;
        assert_int_equal(parse(cases[i].text, &c, &line), -1);
        assert_int_equal(errno, EINVAL);
        assert_int_equal(line, cases[i].line);
        assert_int_equal(c.env.n, 0);
    }
}

static void
test_bounds(void **state)
{
    (void) state;
    ImageCfg c;
    size_t line, len = 0, cap = (ENV_MAX_COUNT + 2) * 16;
    char *text = malloc(cap);
    assert_non_null(text);
    for (unsigned i = 0; i <= ENV_MAX_COUNT; i++) /* one variable too many */
        len += (size_t) snprintf(text + len, cap - len, "env V%u=x\n", i);
    assert_int_equal(imagecfg_parse(text, len, &c, &line), -1);
    assert_int_equal(line, ENV_MAX_COUNT + 1);
    assert_int_equal(imagecfg_parse(text, IMAGECFG_MAX_BYTES + 1, &c, &line), -1);
    free(text);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
