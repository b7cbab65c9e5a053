/* Unit tests of hostd/egress/policy.c: host patterns (exact, *.suffix, *), CIDRs and the ones
 * no operator may allow, the ports of both, a session's list within the operator's set, and
 * the decision for one destination address (CIDR exemption before the special-purpose
 * refusal). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "policy.h"

static void
test_pattern_matches(void **state)
{
    (void) state;
    static const struct {
        const char *pattern, *name;
        bool match;
    } cases[] = {
        {"pypi.org", "pypi.org", true},
        {"pypi.org", "evil-pypi.org", false},
        {"pypi.org", "pypi.org.evil", false},
        {"pypi.org", "x.pypi.org", false},
        {"*.pythonhosted.org", "files.pythonhosted.org", true},
        {"*.pythonhosted.org", "a.b.pythonhosted.org", true},
        {"*.pythonhosted.org", "pythonhosted.org", false},
        {"*.pythonhosted.org", "xpythonhosted.org", false},
        {"*.pythonhosted.org", "pythonhosted.org.evil", false},
        {"*", "anything.example", true},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (egress_pattern_matches(cases[i].pattern, cases[i].name) != cases[i].match)
            fail_msg("%s vs %s: want %d", cases[i].pattern, cases[i].name, cases[i].match);
}

static void
test_add_entries(void **state)
{
    (void) state;
    static const struct {
        const char *entry;
        bool ok;
    } cases[] = {
        {"PyPI.org", true},
        {"*.Example.COM", true},
        {"*", true},
        {"10.213.0.0/30", true},
        {"10.213.0.2", true},
        {"fd12:3456::/64", true},
        {"2001:db8::1", true},
        {"0.0.0.0/0", false},
        {"127.0.0.0/8", false},
        {"127.0.0.1", false},
        {"64.0.0.0/2", false},
        {"169.254.0.0/16", false},
        {"169.254.169.254", false},
        {"::1", false},
        {"::/0", false},
        {"ff02::/16", false},
        {"fd00:ec2::254", false},
        {"::ffff:10.0.0.0/104", false},
        {"224.0.0.1", false},
        {"10.213.0.1/30", false},
        {"10.213.0.0/33", false},
        {"10.213.0.0/", false},
        {"10.213.0.0/x", false},
        {"0x7f.1", false},
        {"*.", false},
        {"a..b", false},
        {"*.*.example", false},
        {"ex ample.com", false},
        {"", false},
        {"10.1.1.1/32", true},
        {"169.254.1.0/24", true},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        EgressPolicy p = {0};
        _cleanup_error_ Error *err = NULL;
        int r = egress_policy_add(&p, cases[i].entry, &err);
        if ((r == 0) != cases[i].ok)
            fail_msg("'%s': r=%d (%s)", cases[i].entry, r, err ? err->message : "");
    }
    EgressPolicy p = {0};
    assert_int_equal(egress_policy_add(&p, "PyPI.org", NULL), 0);
    assert_string_equal(p.patterns[0].name, "pypi.org");
}

static void
test_lists(void **state)
{
    (void) state;
    EgressPolicy p = {0};
    _cleanup_error_ Error *err = NULL;

    assert_int_equal(
        egress_policy_add_list(&p, " pypi.org, *.pythonhosted.org ,localhost", false, NULL), 0);
    assert_int_equal(p.n_patterns, 3);
    assert_int_equal(egress_policy_add_list(&p, "10.213.0.0/30,fd12::/64", true, NULL), 0);
    assert_int_equal(p.n_cidrs, 2);
    assert_int_equal(egress_policy_add_list(&p, "10.0.0.0/8", false, &err), -1); /* a CIDR */
    assert_int_equal(egress_policy_add_list(&p, "pypi.org", true, NULL), -1);    /* not one */
    assert_int_equal(egress_policy_add_list(&p, "a,,b", false, NULL), -1);
    memset(&p, 0, sizeof(p));
    for (int i = 0; i < EGRESS_PATTERNS_MAX; i++)
        assert_int_equal(egress_policy_add(&p, "x.example", NULL), 0);
    assert_int_equal(egress_policy_add(&p, "x.example", NULL), -1); /* full */
}

typedef struct SubsetCase {
    const char *entry;
    bool ok;
} SubsetCase;

/* Each entry alone as a session's list, within op or not. */
static void
check_subsets(const EgressPolicy *op, const SubsetCase *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        EgressPolicy sub = {0};
        _cleanup_error_ Error *err = NULL;
        assert_int_equal(egress_policy_add(&sub, cases[i].entry, NULL), 0);
        int r = egress_policy_check_subset(op, &sub, &err);
        if ((r == 0) != cases[i].ok)
            fail_msg("'%s': r=%d (%s)", cases[i].entry, r, err ? err->message : "");
    }
}

static void
test_subset(void **state)
{
    (void) state;
    EgressPolicy op = {0};
    assert_int_equal(
        egress_policy_add_list(&op, "pypi.org,*.pythonhosted.org,localhost", false, NULL), 0);
    assert_int_equal(egress_policy_add_list(&op, "10.213.0.0/24,fd12::/64", true, NULL), 0);
    static const SubsetCase cases[] = {
        {"pypi.org", true},
        {"PYPI.ORG", true},
        {"files.pythonhosted.org", true},
        {"*.pythonhosted.org", true},
        {"*.a.pythonhosted.org", true},
        {"pythonhosted.org", false},
        {"*", false},
        {"*.org", false},
        {"evil.org", false},
        {"10.213.0.0/30", true},
        {"10.213.0.7", true},
        {"10.213.0.0/24", true},
        {"10.213.0.0/23", false},
        {"10.214.0.0/30", false},
        {"fd12::1", true},
        {"fd12::/63", false},
        {"8.8.8.8", false},
    };
    check_subsets(&op, cases, sizeof(cases) / sizeof(cases[0]));
    EgressPolicy any = {0}, sub = {0};
    assert_int_equal(egress_policy_add(&any, "*", NULL), 0);
    assert_int_equal(egress_policy_add(&sub, "*", NULL), 0);
    assert_int_equal(egress_policy_check_subset(&any, &sub, NULL), 0);
}

static void
test_addr_decisions(void **state)
{
    (void) state;
    EgressPolicy p = {0};
    assert_int_equal(egress_policy_add_list(&p, "10.213.0.0/30,fd12::/64", true, NULL), 0);
    static const struct {
        const char *addr;
        bool ok;
    } cases[] = {
        {"10.213.0.2", true},        {"::ffff:10.213.0.2", true}, {"10.213.0.4", false},
        {"127.0.0.1", false},        {"169.254.169.254", false},  {"8.8.8.8", true},
        {"fd12::5", true},           {"fd13::5", false},          {"2606:4700::1111", true},
        {"::ffff:127.0.0.1", false}, {"64:ff9b::a00:1", false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        EgressAddr a;
        char why[256] = "";
        assert_int_equal(egress_addr_parse_strict(cases[i].addr, &a), 0);
        if (egress_policy_addr_ok(&p, &a, 443, why, sizeof(why)) != cases[i].ok)
            fail_msg("%s: want %d (%s)", cases[i].addr, cases[i].ok, why);
        if (!cases[i].ok && !why[0])
            fail_msg("%s: refused without a reason", cases[i].addr);
    }
    assert_true(egress_policy_matches_name(&p, "x", 443) == false);
}

/* Ports: none named allows 80 and 443 only, ":N" that port, ":*" any; CIDRs alike, and a
 * CIDR's exemption of a private address holds only on its ports. */
static void
test_ports(void **state)
{
    (void) state;
    static const struct {
        const char *entry;
        bool ok;
        uint32_t ports;
    } parse[] = {
        {"pypi.org", true, EGRESS_PORTS_WEB},
        {"pypi.org:443", true, 443},
        {"*.example.invalid:8443", true, 8443},
        {"*:22", true, 22},
        {"x.example:*", true, EGRESS_PORTS_ANY},
        {"10.213.0.0/30:8080", true, 8080},
        {"10.213.0.2:8080", true, 8080},
        {"10.213.0.2:*", true, EGRESS_PORTS_ANY},
        {"fd12::/64:3141", true, 3141},
        {"fd12::1", true, EGRESS_PORTS_WEB},
        {"fd12::1/128:80", true, 80},
        {"pypi.org:0", false, 0},
        {"pypi.org:65536", false, 0},
        {"pypi.org:", false, 0},
        {"pypi.org:+443", false, 0},
        {"pypi.org:0443x", false, 0},
        {"pypi.org:443:443", false, 0},
        {"10.213.0.0/30:", false, 0},
        {"10.213.0.0/30:http", false, 0},
        {"fd12::zz:80", false, 0},
        {"127.0.0.1:8080", false, 0},
    };
    for (size_t i = 0; i < sizeof(parse) / sizeof(parse[0]); i++) {
        EgressPolicy p = {0};
        _cleanup_error_ Error *err = NULL;
        int r = egress_policy_add(&p, parse[i].entry, &err);
        if ((r == 0) != parse[i].ok)
            fail_msg("'%s': r=%d (%s)", parse[i].entry, r, err ? err->message : "");
        uint32_t got = p.n_patterns ? p.patterns[0].ports : p.n_cidrs ? p.cidrs[0].ports : 0;
        if (r == 0 && got != parse[i].ports)
            fail_msg("'%s': ports %u, want %u", parse[i].entry, got, parse[i].ports);
    }
    EgressPolicy p = {0};
    assert_int_equal(
        egress_policy_add_list(&p, "pypi.org, *.example.invalid:8443, git.example:*", false, NULL),
        0);
    assert_int_equal(egress_policy_add_list(&p, "10.213.0.0/30:8080", true, NULL), 0);
    static const struct {
        const char *name; /* NULL: the address 10.213.0.2 */
        uint16_t port;
        bool ok;
    } match[] = {
        {"pypi.org", 80, true},
        {"pypi.org", 443, true},
        {"pypi.org", 22, false},
        {"pypi.org", 8443, false},
        {"a.example.invalid", 8443, true},
        {"a.example.invalid", 443, false},
        {"git.example", 22, true},
        {"git.example", 65535, true},
        {NULL, 8080, true},
        {NULL, 80, false},
        {NULL, 443, false},
    };
    for (size_t i = 0; i < sizeof(match) / sizeof(match[0]); i++) {
        EgressAddr a;
        char why[256];
        assert_int_equal(egress_addr_parse_strict("10.213.0.2", &a), 0);
        bool got = match[i].name
                       ? egress_policy_matches_name(&p, match[i].name, match[i].port)
                       : egress_policy_holds_addr(&p, &a, match[i].port) &&
                             egress_policy_addr_ok(&p, &a, match[i].port, why, sizeof(why));
        if (got != match[i].ok)
            fail_msg("%s:%u: want %d", match[i].name ? match[i].name : "10.213.0.2", match[i].port,
                     match[i].ok);
    }
}

/* A session's ports lie within the operator's. */
static void
test_ports_subset(void **state)
{
    (void) state;
    EgressPolicy op = {0};
    assert_int_equal(
        egress_policy_add_list(&op, "pypi.org, *.example.invalid:8443, git.example:*", false, NULL),
        0);
    assert_int_equal(egress_policy_add_list(&op, "10.213.0.0/24:8080, fd12::/64", true, NULL), 0);
    static const SubsetCase cases[] = {
        {"pypi.org", true},           {"pypi.org:443", true},
        {"pypi.org:80", true},        {"pypi.org:8443", false},
        {"pypi.org:*", false},        {"a.example.invalid:8443", true},
        {"a.example.invalid", false}, {"git.example:22", true},
        {"git.example", true},        {"git.example:*", true},
        {"10.213.0.0/30:8080", true}, {"10.213.0.0/30", false},
        {"10.213.0.2:*", false},      {"fd12::1", true},
        {"fd12::/64:443", true},      {"fd12::/64:22", false},
    };
    check_subsets(&op, cases, sizeof(cases) / sizeof(cases[0]));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pattern_matches), cmocka_unit_test(test_add_entries),
        cmocka_unit_test(test_lists),           cmocka_unit_test(test_subset),
        cmocka_unit_test(test_addr_decisions),  cmocka_unit_test(test_ports),
        cmocka_unit_test(test_ports_subset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
