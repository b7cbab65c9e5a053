/* cluster_e2b_url() and cluster_e2b_url_is_valid(): what a host publishes for its E2B
 * listeners, and which values read back from the hosts table are used (another host's row:
 * hostile). Table-driven. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <stdbool.h>

#include "cluster_config.h"

static void
test_build(void **state)
{
    (void) state;
    struct {
        const char *advertise;
        unsigned port;
        bool tls;         /* the E2B listeners serve HTTPS */
        const char *want; /* NULL: refused */
    } cases[] = {
        {"http://10.0.0.2:7070", 3000, false, "http://10.0.0.2:3000"},
        {"http://host-b.example:7070/", 49983, false, "http://host-b.example:49983"},
        {"https://host-b.example", 3000, false, "http://host-b.example:3000"},
        {"https://host-b.example", 3000, true, "https://host-b.example:3000"},
        {"http://10.0.0.2:7070", 3000, true, "https://10.0.0.2:3000"},
        {"http://127.0.0.1:7070/prefix/x?y#z", 1, false, "http://127.0.0.1:1"},
        {"http://[fd00::2]:7070", 3000, false, "http://[fd00::2]:3000"},
        {"http://[fd00::2]", 3000, true, "https://[fd00::2]:3000"},
        {"http://10.0.0.2:7070", 0, false, NULL},     /* no listener */
        {"http://10.0.0.2:7070", 65536, false, NULL}, /* not a port */
        {"http://user:pw@10.0.0.2:7070", 3000, false, NULL},
        {"ftp://10.0.0.2", 3000, false, NULL},
        {"http://", 3000, false, NULL},
        {"http://:7070", 3000, false, NULL},
        {"http://[fd00::2", 3000, false, NULL},
        {"http://a_b:7070", 3000, false, NULL},
        {"http://[fd00::2]x:1", 3000, false, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[CLUSTER_URL_MAX_BYTES + 1] = "";
        int r = cluster_e2b_url(cases[i].advertise, cases[i].port, cases[i].tls, buf, sizeof(buf));
        if (!cases[i].want) {
            assert_int_equal(r, -1);
            continue;
        }
        assert_int_equal(r, 0);
        assert_string_equal(buf, cases[i].want);
        assert_true(cluster_e2b_url_is_valid(buf)); /* what is written is read back */
    }
    char small[16];
    assert_int_equal(cluster_e2b_url("http://host-b.example:1", 3000, false, small, sizeof(small)),
                     -1);
}

static void
test_read_back(void **state)
{
    (void) state;
    char long_host[CLUSTER_URL_MAX_BYTES + 16] = "http://";
    memset(long_host + 7, 'a', CLUSTER_URL_MAX_BYTES);
    strcpy(long_host + 7 + CLUSTER_URL_MAX_BYTES - 5, ":3000");
    const char *bad[] = {
        "",
        "http://",
        "http://h",
        "http://h:",
        "http://h:0",
        "http://h:01",
        "http://h:65536",
        "http://h:3000/",
        "http://h:3000/x",
        "http://h:3000?x",
        "http://u@h:3000",
        "https://u@h:3000",
        "https://h:3000/x",
        "httpss://h:3000",
        "https:/h:3000",
        "http://h :3000",
        "http://h:3000\r\nX: y",
        "http://h:+300",
        "http://h:300000",
        "http://[::1:3000",
        "http://h\x7f:1",
        long_host,
    };
    const char *good[] = {"http://h:1",
                          "http://10.0.0.2:3000",
                          "http://[fd00::2]:65535",
                          "http://host-b.example:49983",
                          "https://h:3000",
                          "https://[fd00::2]:443"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_false(cluster_e2b_url_is_valid(bad[i]));
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        assert_true(cluster_e2b_url_is_valid(good[i]));
}

static void
test_plain_http(void **state)
{
    (void) state;
    assert_true(cluster_url_is_plain_http("http://10.0.0.2:7070"));
    assert_false(cluster_url_is_plain_http("https://10.0.0.2:7070"));
    assert_true(cluster_url_is_plain_http("HTTP://x")); /* another host's row, any case */
    assert_false(cluster_url_is_plain_http("HTTPS://x"));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_build),
        cmocka_unit_test(test_read_back),
        cmocka_unit_test(test_plain_http),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
