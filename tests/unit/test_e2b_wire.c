/* Unit tests of the E2B face's pure mappings (hostd/e2b/e2b_wire.c, e2b_config.c): sandbox
 * ids and routing, paths, the command line, list filters and pages, times, [e2b] keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base64.h"
#include "config.h"
#include "e2b_config.h"
#include "e2b_wire.h"
#include "macro.h"

#define ID "abcdefghijklmnopqrstuvwxyz"

static void
test_ids(void **state)
{
    (void) state;
    char id[E2B_SANDBOX_ID_BYTES], ses[E2B_SESSION_ID_BYTES];
    assert_true(e2b_sandbox_id_is_valid(ID));
    assert_true(e2b_sandbox_id_is_valid("234567abcdefghijklmnopqrst"));
    assert_false(e2b_sandbox_id_is_valid("abcdefghijklmnopqrstuvwxy"));   /* 25 */
    assert_false(e2b_sandbox_id_is_valid("abcdefghijklmnopqrstuvwxyz2")); /* 27 */
    assert_false(e2b_sandbox_id_is_valid("abcdefghijklmnopqrstuvwxy1"));  /* not base32 */
    assert_false(e2b_sandbox_id_is_valid("Abcdefghijklmnopqrstuvwxyz"));
    assert_false(e2b_sandbox_id_is_valid("abcdefghijklm-opqrstuvwxyz"));
    assert_int_equal(e2b_sandbox_id_from_session("ses_" ID, id), 0);
    assert_string_equal(id, ID);
    assert_int_equal(e2b_sandbox_id_from_session("tsk_" ID, id), -1);
    assert_int_equal(e2b_sandbox_id_from_session("ses_" ID "x", id), -1);
    e2b_session_id_from_sandbox(ID, ses);
    assert_string_equal(ses, "ses_" ID);
}

static void
test_host_route(void **state)
{
    (void) state;
    char id[E2B_SANDBOX_ID_BYTES];
    unsigned port;
    assert_int_equal(e2b_host_route("49983-" ID ".stockade.local", "stockade.local", &port, id), 0);
    assert_int_equal(port, 49983);
    assert_string_equal(id, ID);
    assert_int_equal(e2b_host_route("8080-ABCDEFGHIJKLMNOPQRSTUVWXYZ.Stockade.Local:49983",
                                    "stockade.local", &port, id), 0);
    assert_int_equal(port, 8080);
    assert_string_equal(id, ID); /* hosts are case-insensitive */
    static const char *const bad[] = {
        "49983-" ID ".other.local",     "49983-" ID "stockade.local", "49983" ID ".stockade.local",
        "-" ID ".stockade.local",       "123456-" ID ".stockade.local",
        "0-" ID ".stockade.local",      "70000-" ID ".stockade.local",
        "49983-" ID "x.stockade.local", "49983-" ID ".stockade.local:",
        "49983-" ID ".stockade.local:8x", "[::1]:49983", "stockade.local", "",
        "49983-" ID ".x.stockade.local",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(e2b_host_route(bad[i], "stockade.local", &port, id), -1);
}

static void
test_paths(void **state)
{
    (void) state;
    static const struct {
        const char *in, *rel, *base;
    } ok[] = {
        {"/home/user/a.txt", "a.txt", E2B_HOME_ALIAS},
        {"/home/user", "", E2B_HOME_ALIAS},
        {"/workspace/x//y/./z", "x/y/z", E2B_WORKSPACE},
        {"/workspace/", "", E2B_WORKSPACE},
        {"rel/file", "rel/file", E2B_WORKSPACE},
        {"./a/", "a", E2B_WORKSPACE},
        {"~/notes.md", "notes.md", E2B_HOME_ALIAS},
        {"~", "", E2B_HOME_ALIAS},
        {"", "", E2B_WORKSPACE},
        {"~user", "~user", E2B_WORKSPACE}, /* not the home: a relative name */
    };
    static const char *const bad[] = {"/etc/passwd", "/home/user2/x", "/workspacex", "a/../b",
                                      "/home/user/..", "/", "/tmp"};
    E2bPath p;
    const char *why;
    char out[PATH_MAX_BYTES + 64];

    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        assert_int_equal(e2b_path_map(ok[i].in, true, &p, &why), 0);
        assert_string_equal(p.rel, ok[i].rel);
        assert_string_equal(p.base, ok[i].base);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(e2b_path_map(bad[i], true, &p, &why), -1);
    assert_int_equal(e2b_path_map("/home/user", false, &p, &why), -1); /* the home itself */
    assert_int_equal(e2b_path_map("/home/user/d/f", false, &p, &why), 0);
    assert_int_equal(e2b_path_show(&p, NULL, out, sizeof(out)), 0);
    assert_string_equal(out, "/home/user/d/f");
    assert_int_equal(e2b_path_show(&p, "child", out, sizeof(out)), 0);
    assert_string_equal(out, "/home/user/d/f/child");
    assert_int_equal(e2b_path_show(&p, NULL, out, 5), -1);
    /* limits: a component over 255 bytes, more than 64 levels */
    char longname[300];
    memset(longname, 'n', 256);
    longname[256] = '\0';
    assert_int_equal(e2b_path_map(longname, true, &p, &why), -1);
    char deep[200] = "";
    for (int i = 0; i < 65; i++)
        strcat(deep, "d/");
    assert_int_equal(e2b_path_map(deep, true, &p, &why), -1);
}

static void
test_cwd(void **state)
{
    (void) state;
    char out[PATH_MAX_BYTES + 16];
    const char *why;
    assert_int_equal(e2b_cwd_map(NULL, out, sizeof(out), &why), 0);
    assert_string_equal(out, "");
    assert_int_equal(e2b_cwd_map("/home/user", out, sizeof(out), &why), 0);
    assert_string_equal(out, "/workspace");
    assert_int_equal(e2b_cwd_map("/home/user/proj", out, sizeof(out), &why), 0);
    assert_string_equal(out, "/workspace/proj");
    assert_int_equal(e2b_cwd_map("sub", out, sizeof(out), &why), 0);
    assert_string_equal(out, "/workspace/sub");
    assert_int_equal(e2b_cwd_map("/tmp", out, sizeof(out), &why), -1);
    /* a process's cwd is E2B's home itself (the guest mounts the workspace there too) */
    assert_int_equal(e2b_process_cwd_map(NULL, out, sizeof(out), &why), 0);
    assert_string_equal(out, "/home/user");
    assert_int_equal(e2b_process_cwd_map("", out, sizeof(out), &why), 0);
    assert_string_equal(out, "/home/user");
    assert_int_equal(e2b_process_cwd_map("/workspace/proj", out, sizeof(out), &why), 0);
    assert_string_equal(out, "/home/user/proj");
    assert_int_equal(e2b_process_cwd_map("sub/./x", out, sizeof(out), &why), 0);
    assert_string_equal(out, "/home/user/sub/x");
    assert_int_equal(e2b_process_cwd_map("/home/user/../etc", out, sizeof(out), &why), -1);
}

/* Issue 28: root only for exactly "root", by Basic auth on RPCs or username on /files. */
static void
test_user_is_root(void **state)
{
    (void) state;
    char big[E2B_BASIC_AUTH_MAX_BYTES + 16];
    assert_true(e2b_user_is_root("Basic cm9vdDo=", NULL));      /* root: */
    assert_true(e2b_user_is_root("basic cm9vdDpwdw==", NULL));  /* root:pw */
    assert_false(e2b_user_is_root("Basic dXNlcjo=", NULL));     /* user: */
    assert_false(e2b_user_is_root("Basic cm9vdA==", NULL));     /* root (no colon) */
    assert_false(e2b_user_is_root("Basic cm9vdHM6", NULL));     /* roots: */
    assert_false(e2b_user_is_root("Basic cm9vdDo", NULL));      /* unpadded: malformed */
    assert_false(e2b_user_is_root("Bearer cm9vdDo=", NULL));
    assert_false(e2b_user_is_root("Basic ", NULL));
    assert_false(e2b_user_is_root(NULL, NULL));
    assert_true(e2b_user_is_root(NULL, "root"));
    assert_false(e2b_user_is_root("Basic cm9vdDo=", "user")); /* /files: the query names it */
    assert_false(e2b_user_is_root(NULL, "Root"));
    /* "root:" and a password: root at any length up to the bound, refused past it */
    uint8_t cred[E2B_BASIC_AUTH_MAX_BYTES];
    memset(cred, 'p', sizeof(cred));
    memcpy(cred, "root:", 5);
    size_t fits = (E2B_BASIC_AUTH_MAX_BYTES - 6) / 4 * 3; /* "Basic " + its base64 <= bound */
    _cleanup_free_ char *b1 = base64_encode(cred, fits), *b2 = base64_encode(cred, fits + 3);
    snprintf(big, sizeof(big), "Basic %s", b1);
    assert_true(strlen(big) <= E2B_BASIC_AUTH_MAX_BYTES && e2b_user_is_root(big, NULL));
    snprintf(big, sizeof(big), "Basic %s", b2);
    assert_true(strlen(big) > E2B_BASIC_AUTH_MAX_BYTES && !e2b_user_is_root(big, NULL));
}

static void
test_command(void **state)
{
    (void) state;
    char **argv;
    size_t argc;
    Error *e = NULL;
    json_t *args = json_pack("[s,s,s]", "-l", "-c", "echo hi");

    assert_int_equal(e2b_command_argv("/bin/bash", args, &argv, &argc, &e), 0);
    assert_int_equal(argc, 4);
    assert_string_equal(argv[0], E2B_SHELL); /* the images have busybox sh, not bash */
    assert_string_equal(argv[1], "-l");
    assert_string_equal(argv[3], "echo hi");
    assert_null(argv[4]);
    e2b_argv_free(argv, argc);
    assert_int_equal(e2b_command_argv("bash", NULL, &argv, &argc, &e), 0);
    assert_string_equal(argv[0], E2B_SHELL);
    e2b_argv_free(argv, argc);
    assert_int_equal(e2b_command_argv("/usr/bin/python3", args, &argv, &argc, &e), 0);
    assert_string_equal(argv[0], "/usr/bin/python3"); /* anything else runs as given */
    e2b_argv_free(argv, argc);
    assert_int_equal(e2b_command_argv("", args, &argv, &argc, &e), -1);
    error_free(e);
    e = NULL;
    json_t *badargs = json_pack("[s,i]", "-c", 3);
    assert_int_equal(e2b_command_argv("/bin/bash", badargs, &argv, &argc, &e), -1);
    assert_non_null(strstr(e->message, "args[1]"));
    error_free(e);
    json_decref(badargs);
    json_decref(args);
}

static void
test_metadata_query(void **state)
{
    (void) state;
    json_t *m = NULL, *have = json_pack("{s:s,s:s}", "suite", "e2b it", "k", "v=1&2");
    /* the SDK: encodeURIComponent each, then URLSearchParams; http_query decoded once */
    assert_int_equal(e2b_metadata_query("suite=e2b%2520it&k=v%253D1%25262", &m), 0);
    assert_string_equal(json_string_value(json_object_get(m, "suite")), "e2b it");
    assert_string_equal(json_string_value(json_object_get(m, "k")), "v=1&2");
    assert_true(e2b_metadata_matches(have, m));
    json_decref(m);
    assert_int_equal(e2b_metadata_query("suite=other", &m), 0);
    assert_false(e2b_metadata_matches(have, m));
    json_decref(m);
    assert_int_equal(e2b_metadata_query("", &m), 0);
    assert_true(e2b_metadata_matches(have, m)); /* no filter */
    json_decref(m);
    assert_int_equal(e2b_metadata_query("novalue", &m), -1);
    assert_int_equal(e2b_metadata_query("=v", &m), -1);
    assert_int_equal(e2b_metadata_query("k=%zz", &m), -1);
    assert_int_equal(e2b_metadata_query("k=%00", &m), -1);
    assert_int_equal(e2b_metadata_query("k=%ff", &m), -1); /* not UTF-8 */
    char many[E2B_METADATA_MAX * 8 + 16] = "";
    for (int i = 0; i <= E2B_METADATA_MAX; i++)
        sprintf(many + strlen(many), "k%d=v&", i);
    assert_int_equal(e2b_metadata_query(many, &m), -1);
    json_decref(have);
}

static void
test_pages_and_times(void **state)
{
    (void) state;
    char tok[E2B_PAGE_TOKEN_BYTES], id[E2B_SANDBOX_ID_BYTES], t[E2B_TIME_BYTES];
    int64_t started, usec;

    e2b_page_token(1795994018759123, ID, tok);
    assert_string_equal(tok, "1795994018759123." ID);
    assert_int_equal(e2b_page_token_parse(tok, &started, id), 0);
    assert_int_equal(started, 1795994018759123);
    assert_string_equal(id, ID);
    assert_int_equal(e2b_page_token_parse("12." ID "x", &started, id), -1);
    assert_int_equal(e2b_page_token_parse(".abc", &started, id), -1);
    assert_int_equal(e2b_page_token_parse("1234567890123456789." ID, &started, id), -1);

    e2b_time_format(1795994018759123, t);
    assert_string_equal(t, "2026-11-29T23:13:38.759Z");
    assert_int_equal(e2b_time_parse(t, &usec), 0);
    assert_int_equal(usec, 1795994018759000);
    assert_int_equal(e2b_time_parse("2026-11-29T23:13:38Z", &usec), 0);
    assert_int_equal(usec, 1795994018000000);
    assert_int_equal(e2b_time_parse("2026-11-29T23:13:38.5+00:00", &usec), 0);
    assert_int_equal(usec, 1795994018500000);
    assert_int_equal(e2b_time_parse("2026-11-29 23:13:38Z", &usec), -1);
    assert_int_equal(e2b_time_parse("2026-13-29T23:13:38Z", &usec), -1);
    assert_int_equal(e2b_time_parse("2026-11-29T23:13:38+01:00", &usec), -1);
}

static void
test_config_keys(void **state)
{
    (void) state;
    E2bConfig c;
    Error *e = NULL;

    e2b_config_defaults(&c);
    assert_false(c.enabled);
    assert_int_equal(c.api_port, 3000);
    assert_int_equal(c.envd_port, 49983);
    assert_string_equal(e2b_config_template_pool(&c, "base"), "python");
    assert_null(e2b_config_template_pool(&c, "python"));
    assert_int_equal(e2b_config_set(&c, "template_map", "base = minimal, code-interpreter-v1=python",
                                    &e), 0);
    assert_int_equal(c.n_templates, 2);
    assert_string_equal(e2b_config_template_pool(&c, "base"), "minimal");
    assert_string_equal(e2b_config_template_pool(&c, "code-interpreter-v1"), "python");
    static const char *const bad[][2] = {
        {"template_map", "base"},          {"template_map", "base=Py"},
        {"template_map", "a=p,a=q"},       {"template_map", "=python"},
        {"api_port", "65536"},             {"envd_port", "-1"},
        {"address", "localhost"},          {"domain", "a..b"},
        {"domain", "-a.b"},                {"enabled", "maybe"},
        {"lifetime_s", "0"},               {"lifetime_s", "86401"},
        {"create_wait_s", "601"},          {"nope", "1"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(e2b_config_set(&c, bad[i][0], bad[i][1], &e), -1);
        assert_non_null(e);
        error_free(e);
        e = NULL;
    }
    assert_int_equal(c.n_templates, 2); /* a refused map changes nothing */
}

static void
test_config_section(void **state)
{
    (void) state;
    static DaemonConfig cfg;
    Error *e = NULL;
    const char *text = "[e2b]\nenabled = true\naddress = ::1\napi_port = 0\nenvd_port = 4998\n"
                       "domain = sandboxes.example.org\nlifetime_s = 600\ncreate_wait_s = 90\n";
    config_defaults(&cfg, "/usr/share/stockade/images");
    assert_int_equal(config_parse(&cfg, text, strlen(text), &e), 0);
    assert_true(cfg.e2b.enabled);
    assert_string_equal(cfg.e2b.address, "::1");
    assert_int_equal(cfg.e2b.api_port, 0);
    assert_int_equal(cfg.e2b.envd_port, 4998);
    assert_string_equal(cfg.e2b.domain, "sandboxes.example.org");
    assert_int_equal(cfg.e2b.lifetime_usec, 600000000);
    assert_int_equal(cfg.e2b.create_wait_usec, 90000000);
    const char *bad = "[e2b]\nenabled = true\nport = 1\n";
    config_defaults(&cfg, "/usr/share/stockade/images");
    assert_int_equal(config_parse(&cfg, bad, strlen(bad), &e), -1);
    assert_non_null(strstr(e->message, "line 3: unknown key 'port' in [e2b]"));
    error_free(e);
}

/* code-interpreter-v1 maps to the data pool when the daemon has one, unless the operator
 * wrote a template_map (then only that map counts). */
static void
test_config_code_template(void **state)
{
    (void) state;
    static DaemonConfig cfg;
    Error *e = NULL;
    const char *with_map = "[e2b]\ntemplate_map = base=minimal\n";

    config_defaults(&cfg, "/usr/share/stockade/images");
    assert_null(e2b_config_template_pool(&cfg.e2b, E2B_CODE_TEMPLATE));
    config_add_data_pool(&cfg);
    assert_string_equal(e2b_config_template_pool(&cfg.e2b, E2B_CODE_TEMPLATE), "data");
    assert_string_equal(e2b_config_template_pool(&cfg.e2b, "base"), "python");
    e2b_config_default_template(&cfg.e2b, E2B_CODE_TEMPLATE, "python"); /* mapped already */
    assert_string_equal(e2b_config_template_pool(&cfg.e2b, E2B_CODE_TEMPLATE), "data");
    assert_int_equal(cfg.e2b.n_templates, 2);

    config_defaults(&cfg, "/usr/share/stockade/images");
    assert_int_equal(config_parse(&cfg, with_map, strlen(with_map), &e), 0);
    config_add_data_pool(&cfg);
    assert_null(e2b_config_template_pool(&cfg.e2b, E2B_CODE_TEMPLATE));
    assert_string_equal(e2b_config_template_pool(&cfg.e2b, "base"), "minimal");
}

/* Cluster mode: which requests for another host's sandbox go on (the URL is the owner's
 * host-to-host listener, from the index; the published faces only say whether it runs one). */
static void
test_forward_target(void **state)
{
    (void) state;
    struct {
        const char *owner_tenant;
        bool here, ended, has_face;
        const char *tenant;
        bool want;
    } cases[] = {
        {"t1", false, false, true, "t1", true},  /* the control plane, same tenant */
        {"t1", false, false, true, "t2", false}, /* another tenant's: unknown */
        {"t1", false, false, true, NULL, true},  /* envd: its token was checked first */
        {"t1", true, false, true, "t1", false},  /* this host: never a second hop */
        {"t1", true, false, true, NULL, false},
        {"t1", false, true, true, "t1", false}, /* ended: unknown */
        {"t1", false, true, true, NULL, false},
        {"t1", false, false, false, "t1", false}, /* the owner runs no such face */
        {"t1", false, false, false, NULL, false},
        {"", false, false, true, "t1", false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_int_equal(e2b_forward_target(cases[i].owner_tenant, cases[i].here, cases[i].ended,
                                            cases[i].has_face, cases[i].tenant),
                         cases[i].want);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ids),
        cmocka_unit_test(test_host_route),
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_cwd),
        cmocka_unit_test(test_user_is_root),
        cmocka_unit_test(test_command),
        cmocka_unit_test(test_metadata_query),
        cmocka_unit_test(test_pages_and_times),
        cmocka_unit_test(test_config_keys),
        cmocka_unit_test(test_config_section),
        cmocka_unit_test(test_config_code_template),
        cmocka_unit_test(test_forward_target),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
