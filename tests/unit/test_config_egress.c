/* Unit tests of the [egress] section of stockaded's config (hostd/config.c): lists that may
 * repeat, limits with their ranges, and entries no operator may allow. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"

static DaemonConfig cfg;

static int
parse(const char *text, Error **e)
{
    config_defaults(&cfg, "/usr/share/stockade/images");
    return config_parse(&cfg, text, strlen(text), e);
}

static void
test_egress_section(void **state)
{
    (void) state;
    Error *e = NULL;
    const EgressConfig *eg = &cfg.sessions.egress;

    assert_int_equal(parse("", &e), 0);
    assert_true(egress_policy_is_empty(&eg->allowed)); /* egress is off by default */
    assert_int_equal(eg->limits.max_streams, 32);
    const char *text = "[egress]\nallow_hosts = pypi.org, *.PythonHosted.org:8443\n"
                       "allow_hosts = localhost:*\nallow_cidrs = 10.213.0.0/30:8080, fd12::/64\n"
                       "max_streams = 8\nmax_streams_total = 300\nmax_bytes_in_mib = 5\n"
                       "max_bytes_out_mib = 1\nconnect_timeout_s = 3\nmax_denied_events = 0\n";
    assert_int_equal(parse(text, &e), 0);
    assert_int_equal(config_finish(&cfg, &e), 0);
    assert_int_equal(eg->allowed.n_patterns, 3);
    assert_string_equal(eg->allowed.patterns[1].name, "*.pythonhosted.org");
    assert_int_equal(eg->allowed.patterns[0].ports, EGRESS_PORTS_WEB); /* 80 and 443 */
    assert_int_equal(eg->allowed.patterns[1].ports, 8443);
    assert_int_equal(eg->allowed.patterns[2].ports, EGRESS_PORTS_ANY);
    assert_int_equal(eg->allowed.n_cidrs, 2);
    assert_int_equal(eg->allowed.cidrs[0].ports, 8080);
    assert_int_equal(eg->limits.max_streams, 8);
    assert_int_equal(eg->limits.max_streams_total, 300);
    assert_int_equal(eg->limits.max_bytes_in, 5ull << 20);
    assert_int_equal(eg->limits.max_bytes_out, 1ull << 20);
    assert_int_equal(eg->limits.connect_timeout_usec, 3000000);
    assert_int_equal(eg->limits.max_denied_events, 0);
}

static void
test_egress_rejects(void **state)
{
    (void) state;
    static const struct {
        const char *text, *needle;
    } cases[] = {
        {"[egress]\nallow_cidrs = 127.0.0.0/8\n", "line 2: allow_cidrs"},
        {"[egress]\nallow_cidrs = 0.0.0.0/0\n", "covers"},
        {"[egress]\nallow_cidrs = 169.254.169.254/32\n", "covers"},
        {"[egress]\nallow_cidrs = pypi.org\n", "not a CIDR"},
        {"[egress]\nallow_hosts = 10.0.0.0/8\n", "allow_cidrs"},
        {"[egress]\nallow_hosts = a b\n", "not a host pattern"},
        {"[egress]\nallow_hosts = a,,b\n", "empty"},
        {"[egress]\nallow_hosts = pypi.org:0\n", "1..65535"},
        {"[egress]\nallow_hosts = 10.0.0.1:80\n", "allow_cidrs"},
        {"[egress]\nallow_cidrs = 10.213.0.0/30:99999\n", "1..65535"},
        {"[egress]\nmax_streams = 129\n", "max_streams must be"},
        {"[egress]\nmax_streams = 0\n", "max_streams must be"},
        {"[egress]\nconnect_timeout_s = 0\n", "connect_timeout_s must be"},
        {"[egress]\nproxy_port = 1\n", "unknown key"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        Error *e = NULL;
        if (parse(cases[i].text, &e) == 0)
            fail_msg("accepted: %s", cases[i].text);
        if (!strstr(e->message, cases[i].needle))
            fail_msg("'%s': message '%s' lacks '%s'", cases[i].text, e->message, cases[i].needle);
        error_free(e);
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_egress_section),
        cmocka_unit_test(test_egress_rejects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
