/* Unit tests of guest/env.c: the exec environment (defaults, then session, then exec, later
 * names replacing earlier ones) and the execvp-style PATH candidates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "env.h"
#include "guest_limits.h"

static Stockade__Runner__EnvVar
var(const char *name, const char *value)
{
    Stockade__Runner__EnvVar v = STOCKADE__RUNNER__ENV_VAR__INIT;
    v.name = (char *) name;
    v.value = (char *) value;
    return v;
}

static void
test_defaults(void **state)
{
    (void) state;
    EnvList env = {0};

    assert_int_equal(env_build_exec("/workspace", NULL, NULL, 0, &env), 0);
    assert_int_equal(env.n, 4);
    assert_null(env.items[env.n]);
    assert_string_equal(env_list_get(&env, "PATH"), EXEC_DEFAULT_PATH);
    assert_string_equal(env_list_get(&env, "HOME"), "/workspace");
    assert_string_equal(env_list_get(&env, "LANG"), "C.UTF-8");
    assert_string_equal(env_list_get(&env, "TERM"), "dumb");
    assert_null(env_list_get(&env, "PAT")); /* a prefix is not a name */
    env_list_clear(&env);
}

static void
test_order_and_override(void **state)
{
    (void) state;
    EnvList session = {0}, env = {0};
    Stockade__Runner__EnvVar s1 = var("LANG", "de_DE.UTF-8"), s2 = var("A", "session");
    Stockade__Runner__EnvVar *svars[] = {&s1, &s2};
    Stockade__Runner__EnvVar e1 = var("A", "exec"), e2 = var("EMPTY", ""), e3 = var("B", "x=y");
    Stockade__Runner__EnvVar *evars[] = {&e1, &e2, &e3};

    assert_int_equal(env_list_add_vars(&session, svars, 2), 0);
    assert_int_equal(env_build_exec("/ws", &session, evars, 3, &env), 0);
    assert_int_equal(env.n, 7); /* 4 defaults + A + EMPTY + B; LANG replaced in place */
    assert_string_equal(env.items[2], "LANG=de_DE.UTF-8");
    assert_string_equal(env_list_get(&env, "A"), "exec");
    assert_string_equal(env_list_get(&env, "EMPTY"), "");
    assert_string_equal(env_list_get(&env, "B"), "x=y");
    env_list_clear(&env);
    env_list_clear(&session);
}

static void
test_many_vars(void **state)
{
    (void) state;
    EnvList l = {0};
    char name[16];

    for (int i = 0; i < ENV_MAX_COUNT * 2; i++) {
        snprintf(name, sizeof(name), "V%d", i % ENV_MAX_COUNT);
        assert_int_equal(env_list_set(&l, name, "v"), 0);
    }
    assert_int_equal(l.n, ENV_MAX_COUNT);
    assert_null(l.items[l.n]);
    env_list_clear(&l);
}

static void
test_path_search(void **state)
{
    (void) state;
    static const struct {
        const char *path, *argv0;
        const char *want[4];
    } cases[] = {
        {"/a:/b/c", "prog", {"/a/prog", "/b/c/prog", NULL}},
        {"/a::/b", "prog", {"/a/prog", "./prog", "/b/prog", NULL}},
        {"/a:", "prog", {"/a/prog", "./prog", NULL}},
        {"/a", "./rel/prog", {"./rel/prog", NULL}},
        {"/a", "/abs/prog", {"/abs/prog", NULL}},
        {NULL, "sh", {"/usr/local/sbin/sh", "/usr/local/bin/sh", "/usr/sbin/sh", NULL}},
    };
    char out[64];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t cursor = 0;
        for (size_t k = 0; cases[i].want[k]; k++) {
            assert_true(env_path_next(cases[i].path, cases[i].argv0, &cursor, out, sizeof(out)));
            assert_string_equal(out, cases[i].want[k]);
        }
        if (cases[i].path) /* the default PATH has more entries than listed */
            assert_false(env_path_next(cases[i].path, cases[i].argv0, &cursor, out, sizeof(out)));
    }
}

static void
test_path_search_skips_overlong(void **state)
{
    (void) state;
    char out[12];
    size_t cursor = 0;

    assert_true(env_path_next("/very/long/directory:/b", "prog", &cursor, out, sizeof(out)));
    assert_string_equal(out, "/b/prog");
    assert_false(env_path_next("/very/long/directory:/b", "prog", &cursor, out, sizeof(out)));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_order_and_override),
        cmocka_unit_test(test_many_vars),
        cmocka_unit_test(test_path_search),
        cmocka_unit_test(test_path_search_skips_overlong),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
