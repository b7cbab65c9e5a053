/* Unit tests of stockaded's config parser (hostd/config.c). */
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
test_defaults_and_file(void **state)
{
    (void) state;
    Error *e = NULL;
    const char *text = "# comment\n[daemon]\nstate_dir = /srv/stk\naccel=tcg\n"
                       "workspace_mib = 256\nrefill_holdoff_ms = 0\n\n[limits]\ncpu_quota_percent = 50\n"
                       "[timeouts]\nboot_s = 30\n[pool py]\nimage = python\nwarm = 3\n"
                       "slots = 5\nmemory_mib = 384\ncode_kernel = true\n";
    assert_int_equal(parse(text, &e), 0);
    assert_int_equal(config_finish(&cfg, &e), 0);
    assert_string_equal(cfg.state_dir, "/srv/stk");
    assert_int_equal(cfg.pool.accel, ACCEL_MODE_TCG);
    assert_int_equal(cfg.pool.workspace_mib, 256);
    assert_int_equal(cfg.pool.cpu_quota_percent, 50);
    assert_int_equal(cfg.pool.refill_holdoff_ms, 0); /* 0 is allowed: refill at once */
    assert_int_equal(cfg.pool.boot_timeout_usec, 30000000);
    assert_int_equal(cfg.pool.n_shapes, 1); /* a [pool] replaces the embedded pools */
    assert_string_equal(cfg.shapes[0].name, "py");
    assert_string_equal(cfg.shapes[0].image_dir, "/usr/share/stockade/images/python");
    assert_int_equal(cfg.shapes[0].warm, 3);
    assert_int_equal(cfg.shapes[0].memory_mib, 384);
    assert_true(cfg.shapes[0].code_kernel);
    assert_int_equal(cfg.pool.guest_memory, POOL_GUEST_MEMORY_DEFAULT);
    assert_string_equal(cfg.pool.template_dir, "");
    assert_int_equal(parse("[pool py]\n", &e), 0);
    assert_false(cfg.shapes[0].code_kernel); /* off unless asked for */
}

static void
test_guest_memory(void **state)
{
    (void) state;
    Error *e = NULL;
    assert_int_equal(parse("[daemon]\nguest_memory = copy\n", &e), 0);
    assert_int_equal(cfg.pool.guest_memory, POOL_MEMORY_COPY);
    assert_int_equal(parse("[daemon]\nguest_memory = template\ntemplate_dir = /srv/t\n", &e), 0);
    assert_int_equal(config_finish(&cfg, &e), 0);
    assert_int_equal(cfg.pool.guest_memory, POOL_MEMORY_TEMPLATE);
    assert_string_equal(cfg.pool.template_dir, "/srv/t");
    /* QEMU would read what follows a ',' as more options of the memory backend */
    assert_int_equal(parse("[daemon]\ntemplate_dir = /srv/t,share=on\n", &e), 0);
    assert_int_equal(config_finish(&cfg, &e), -1);
    assert_non_null(strstr(e->message, "template_dir"));
    error_free(e);
}

static void
test_rejects(void **state)
{
    (void) state;
    static const struct {
        const char *text;
        const char *needle;
    } cases[] = {
        {"[daemon]\nstate_dri = /x\n", "line 2: unknown key"},
        {"state_dir = /x\n", "line 1: key outside a section"},
        {"[daemon]\naccel = fast\n", "accel must be"},
        {"[daemon]\nguest_memory = shared\n", "guest_memory must be template or copy"},
        {"[daemon]\nworkspace_mib = 1\n", "workspace_mib must be a number"},
        {"[daemon]\nworkspace_mib = 12x\n", "workspace_mib must be a number"},
        {"[daemon]\nworkspace_mib = -5\n", "workspace_mib must be a number"},
        {"[daemon]\nrefill_holdoff_ms = 10001\n", "refill_holdoff_ms must be a number"},
        {"[nope]\n", "unknown section"},
        {"[daemon\n", "malformed section"},
        {"[pool A]\n", "pool name"},
        {"[pool a]\n[pool a]\n", "defined twice"},
        {"[pool a]\nimage = ../etc\n", "image must be a simple name"},
        {"[pool a]\ncolour = red\n", "unknown key 'colour'"},
        {"[pool a]\ncode_kernel = yes\n", "code_kernel must be true or false"},
        {"[daemon]\njunk\n", "expected key = value"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        Error *e = NULL;
        if (parse(cases[i].text, &e) == 0)
            fail_msg("accepted: %s", cases[i].text);
        assert_int_equal(e->category, E_INVALID);
        if (!strstr(e->message, cases[i].needle))
            fail_msg("'%s' does not mention '%s'", e->message, cases[i].needle);
        error_free(e);
    }
}

static void
test_long_line_and_nul(void **state)
{
    (void) state;
    static char big[CONFIG_LINE_MAX_BYTES + 20];
    Error *e = NULL;
    memset(big, '#', sizeof(big) - 1);
    assert_int_equal(parse(big, &e), -1);
    error_free(e);
    e = NULL;
    const char nul[] = "[daemon]\nstate_dir = /a\0b\n";
    config_defaults(&cfg, "/x");
    assert_int_equal(config_parse(&cfg, nul, sizeof(nul) - 1, &e), -1);
    assert_non_null(strstr(e->message, "NUL"));
    error_free(e);
}

/* [cluster] (issue 16): absent = a single host; present, every key is checked at finish. */
static void
test_cluster(void **state)
{
    (void) state;
    Error *e = NULL;
    assert_int_equal(parse("[daemon]\nstate_dir = /srv/stk\n", &e), 0);
    assert_int_equal(config_finish(&cfg, &e), 0);
    assert_false(cluster_config_enabled(&cfg.cluster));
    const char *ok = "[cluster]\ndatabase = host=/run/pg dbname=stockade user=stk\n"
                     "host_id = host-a\nadvertise_url = http://10.0.0.1:8080\n"
                     "host_token_file = /etc/stockade/host.token\nhop_port = 8788\n";
    assert_int_equal(parse(ok, &e), 0);
    assert_int_equal(config_finish(&cfg, &e), 0);
    assert_true(cluster_config_enabled(&cfg.cluster));
    assert_string_equal(cfg.cluster.database, "host=/run/pg dbname=stockade user=stk");
    assert_string_equal(cfg.cluster.host_id, "host-a");
    assert_int_equal(cfg.cluster.lease_s, 0); /* the default (CLUSTER_LEASE_DEFAULT_S) */
    assert_int_equal(cfg.cluster.hop_port, 8788);
    assert_string_equal(cluster_hop_address(&cfg.cluster), "127.0.0.1"); /* the default */
    char hop[512];
    snprintf(hop, sizeof(hop), "%shop_address = 10.0.0.1\n", ok);
    assert_int_equal(parse(hop, &e), 0);
    assert_string_equal(cluster_hop_address(&cfg.cluster), "10.0.0.1");
    snprintf(hop, sizeof(hop), "%shop_port = 0\n", ok); /* out of the key's range */
    assert_int_equal(parse(hop, &e), -1);
    error_free(e);
    e = NULL;
    char leased[512];
    snprintf(leased, sizeof(leased), "%slease_s = 8\n", ok);
    assert_int_equal(parse(leased, &e), 0);
    assert_int_equal(cfg.cluster.lease_s, 8);
    snprintf(leased, sizeof(leased), "%slease_s = 3\n", ok); /* under three heartbeats */
    assert_int_equal(parse(leased, &e), -1);
    error_free(e);
    e = NULL;
    static const struct {
        const char *text, *needle;
    } bad[] = {
        {"[cluster]\nhost_id = a\n", "needs database"},
        {"[cluster]\nlease_s = 8\n", "needs database"},
        {"[cluster]\ndatabase = x\nhost_id = Host_A\nadvertise_url = http://h\n"
         "host_token_file = /t\n", "host_id must be"},
        {"[cluster]\ndatabase = x\nhost_id = -a\nadvertise_url = http://h\n"
         "host_token_file = /t\n", "host_id must be"},
        {"[cluster]\ndatabase = x\nhost_id = a\nadvertise_url = ftp://h\n"
         "host_token_file = /t\n", "advertise_url"},
        {"[cluster]\ndatabase = x\nhost_id = a\nadvertise_url = http://h/\"x\n"
         "host_token_file = /t\n", "advertise_url"},
        {"[cluster]\ndatabase = x\nhost_id = a\nadvertise_url = http://\n"
         "host_token_file = /t\n", "advertise_url"},
        {"[cluster]\ndatabase = x\nhost_id = a\nadvertise_url = http://h\n"
         "host_token_file = t\n", "absolute"},
        {"[cluster]\ndatabase = x\nhost_id = a\nadvertise_url = http://h\n", "absolute"},
        /* the host-to-host listener: required in a cluster, meaningless without one */
        {"[cluster]\ndatabase = x\nhost_id = a\nadvertise_url = http://h\n"
         "host_token_file = /t\n",
         "hop_port"},
        {"[cluster]\nhop_port = 8788\n", "needs database"},
        {"[cluster]\nhop_address = 10.0.0.1\n", "needs database"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        e = NULL;
        if (parse(bad[i].text, &e) < 0 || config_finish(&cfg, &e) == 0)
            fail_msg("accepted or failed to parse: %s", bad[i].text);
        if (!strstr(e->message, bad[i].needle))
            fail_msg("'%s' does not mention '%s'", e->message, bad[i].needle);
        error_free(e);
    }
    e = NULL;
    assert_int_equal(parse("[cluster]\ncolour = red\n", &e), -1);
    error_free(e);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_and_file),
        cmocka_unit_test(test_rejects),
        cmocka_unit_test(test_guest_memory),
        cmocka_unit_test(test_long_line_and_nul),
        cmocka_unit_test(test_cluster),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
