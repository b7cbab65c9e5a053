/* Unit tests of stockaded's config parser (hostd/config.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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
    const char *text =
        "# comment\n[daemon]\nstate_dir = /srv/stk\naccel=tcg\n"
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
    assert_int_equal(parse("[pool py]\ncode_kernel = prestart\n", &e), 0);
    assert_true(cfg.shapes[0].code_kernel);
    assert_int_equal(parse("[pool py]\ncode_kernel = fresh\n", &e), 0);
    assert_false(cfg.shapes[0].code_kernel); /* each context starts its own kernel */
    assert_int_equal(parse("[pool py]\ncode_kernel = false\n", &e), 0);
    assert_false(cfg.shapes[0].code_kernel);
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

/* [api]'s per-caller shares and minimum body rate reach HttpConfig; a share that cannot hold
 * one largest body, or is over the budget, and a caller cap over max_connections are refused
 * at finish (where the keys meet). */
static void
test_api_shares(void **state)
{
    (void) state;
    Error *e = NULL;
    assert_int_equal(parse("[api]\n", &e), 0);
    assert_int_equal(config_finish(&cfg, &e), 0);
    assert_int_equal(cfg.http.body_share_bytes, 0); /* the layer's default: half the budget */
    assert_int_equal(cfg.http.body_min_bytes_per_s, HTTP_DEFAULT_BODY_MIN_BYTES_PER_S);
    assert_int_equal(cfg.http.body_rate_window_s, HTTP_DEFAULT_BODY_RATE_WINDOW_S);
    assert_int_equal(cfg.http.max_per_caller, 0);
    assert_int_equal(parse("[api]\nbody_budget_mib = 512\nbody_share_mib = 64\n"
                           "body_min_bytes_per_s = 0\nbody_rate_window_s = 30\n"
                           "max_per_caller = 100\n",
                           &e),
                     0);
    assert_int_equal(config_finish(&cfg, &e), 0);
    assert_int_equal(cfg.http.body_share_bytes, (size_t) 64 << 20);
    assert_int_equal(cfg.http.body_min_bytes_per_s, 0);
    assert_int_equal(cfg.http.body_rate_window_s, 30);
    assert_int_equal(cfg.http.max_per_caller, 100);
    static const char *const bad[] = {
        "[api]\nbody_share_mib = 32\n",                         /* under max_body_mib (64) */
        "[api]\nbody_budget_mib = 128\nbody_share_mib = 256\n", /* over the budget */
        "[api]\nmax_connections = 10\nmax_per_caller = 11\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(parse(bad[i], &e), 0);
        if (config_finish(&cfg, &e) == 0)
            fail_msg("accepted: %s", bad[i]);
        assert_non_null(strstr(e->message, "[api]"));
        error_free(e);
        e = NULL;
    }
    assert_int_equal(parse("[api]\nbody_rate_window_s = 0\n", &e), -1);
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
        {"[pool a]\ncode_kernel = yes\n", "code_kernel must be prestart or fresh"},
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
                     "host_token_file = /etc/stockade/host.token\ninsecure_hops = true\n"
                     "hop_port = 8788\n";
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
         "host_token_file = /t\n",
         "host_id must be"},
        {"[cluster]\ndatabase = x\nhost_id = -a\nadvertise_url = http://h\n"
         "host_token_file = /t\n",
         "host_id must be"},
        {"[cluster]\ndatabase = x\nhost_id = a\nadvertise_url = ftp://h\n"
         "host_token_file = /t\n",
         "advertise_url"},
        {"[cluster]\ndatabase = x\nhost_id = a\nadvertise_url = http://h/\"x\n"
         "host_token_file = /t\n",
         "advertise_url"},
        {"[cluster]\ndatabase = x\nhost_id = a\nadvertise_url = http://\n"
         "host_token_file = /t\n",
         "advertise_url"},
        {"[cluster]\ndatabase = x\nhost_id = a\nadvertise_url = http://h\n"
         "host_token_file = t\n",
         "absolute"},
        {"[cluster]\ndatabase = x\nhost_id = a\nadvertise_url = http://h\n", "absolute"},
        /* Issue 25 finding 9: the credential never crosses a network in clear unless the
         * operator says so. */
        {"[cluster]\ndatabase = x\nhost_id = a\nadvertise_url = http://h\n"
         "host_token_file = /t\n",
         "insecure_hops = true"},
        {"[cluster]\ndatabase = x\nhost_id = a\nadvertise_url = HTTP://h\n"
         "host_token_file = /t\n",
         "advertise_url"},
        {"[cluster]\ndatabase = x\nhost_id = a\nadvertise_url = https://h\n"
         "host_token_file = /t\ntls_ca = ca.pem\n",
         "tls_ca must be an absolute path"},
        {"[cluster]\ntls_ca = /ca.pem\n", "needs database"},
        {"[cluster]\ninsecure_hops = true\n", "needs database"},
        /* the host-to-host listener: required in a cluster, meaningless without one */
        {"[cluster]\ndatabase = x\nhost_id = a\nadvertise_url = https://h\n"
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

/* Issue 30, TLS: [api] and [e2b] tls_cert/tls_key go in pairs of absolute paths (read at
 * start, not here); [cluster] tls_ca and insecure_hops; an https:// advertise_url needs no
 * insecure_hops. */
static void
test_tls(void **state)
{
    (void) state;
    Error *e = NULL;
    const char *ok = "[api]\ntls_cert = /etc/stockade/api.pem\ntls_key = /etc/stockade/api.key\n"
                     "[e2b]\ntls_cert = /etc/stockade/e2b.pem\ntls_key = /etc/stockade/e2b.key\n"
                     "[cluster]\ndatabase = x\nhost_id = a\nadvertise_url = https://10.0.0.1:8080\n"
                     "host_token_file = /t\ntls_ca = /etc/stockade/ca.pem\nhop_port = 8788\n";
    assert_int_equal(parse(ok, &e), 0);
    assert_int_equal(config_finish(&cfg, &e), 0);
    assert_string_equal(cfg.http.tls_cert_file, "/etc/stockade/api.pem");
    assert_string_equal(cfg.http.tls_key_file, "/etc/stockade/api.key");
    assert_string_equal(cfg.e2b.tls_cert, "/etc/stockade/e2b.pem");
    assert_string_equal(cfg.e2b.tls_key, "/etc/stockade/e2b.key");
    assert_string_equal(cfg.cluster.tls_ca, "/etc/stockade/ca.pem");
    assert_false(cfg.cluster.insecure_hops);
    /* The dump parses back to the same pairs. */
    char *dump = config_dump(&cfg);
    assert_non_null(dump);
    DaemonConfig first = cfg;
    assert_int_equal(parse(dump, &e), 0);
    assert_int_equal(config_finish(&cfg, &e), 0);
    assert_string_equal(cfg.tls_cert, first.tls_cert);
    assert_string_equal(cfg.e2b.tls_key, first.e2b.tls_key);
    assert_string_equal(cfg.cluster.tls_ca, first.cluster.tls_ca);
    assert_false(cfg.cluster.insecure_hops);
    assert_int_equal(cfg.cluster.hop_port, 8788);
    free(dump);
    /* Without: plain HTTP, nothing set. */
    assert_int_equal(parse("[daemon]\nstate_dir = /srv/stk\n", &e), 0);
    assert_int_equal(config_finish(&cfg, &e), 0);
    assert_null(cfg.http.tls_cert_file);
    assert_null(cfg.http.tls_key_file);
    static const struct {
        const char *text, *needle;
    } bad[] = {
        {"[api]\ntls_cert = /c.pem\n", "[api] tls_cert and tls_key go together"},
        {"[api]\ntls_key = /c.key\n", "[api] tls_cert and tls_key go together"},
        {"[api]\ntls_cert = c.pem\ntls_key = /c.key\n", "absolute"},
        {"[e2b]\ntls_key = /c.key\n", "[e2b] tls_cert and tls_key go together"},
        {"[e2b]\ntls_cert = c.pem\n", "tls_cert must be an absolute path"},
        {"[cluster]\ninsecure_hops = yes\n", "insecure_hops must be true or false"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        e = NULL;
        if (parse(bad[i].text, &e) == 0 && config_finish(&cfg, &e) == 0)
            fail_msg("accepted: %s", bad[i].text);
        if (!strstr(e->message, bad[i].needle))
            fail_msg("'%s' does not mention '%s'", e->message, bad[i].needle);
        error_free(e);
    }
}

/* Issue 30: a comment after a value is never part of it; a '#' inside a value is. */
static void
test_inline_comments(void **state)
{
    (void) state;
    Error *e = NULL;
    const char *text = "[cluster]   # one PostgreSQL\n"
                       "database = host=db.internal dbname=stockade   # libpq conninfo\n"
                       "host_id = host-a\t# unique in the cluster\n"
                       "advertise_url = http://10.0.0.11:8080 ; how others reach it\n"
                       "host_token_file = /etc/stockade/host#1.token\n"
                       "lease_s = 10   # silent this long: taken over\n"
                       "insecure_hops = true   # a lab network\n"
                       "hop_port = 8788   ; the host-to-host listener\n"
                       "[daemon]\nstate_dir = /srv/stk#x\n";
    assert_int_equal(parse(text, &e), 0);
    assert_int_equal(config_finish(&cfg, &e), 0);
    assert_string_equal(cfg.cluster.database, "host=db.internal dbname=stockade");
    assert_string_equal(cfg.cluster.host_id, "host-a");
    assert_string_equal(cfg.cluster.advertise_url, "http://10.0.0.11:8080");
    assert_string_equal(cfg.cluster.host_token_file, "/etc/stockade/host#1.token");
    assert_int_equal(cfg.cluster.lease_s, 10);
    assert_int_equal(cfg.cluster.hop_port, 8788);
    assert_string_equal(cfg.state_dir, "/srv/stk#x");
    assert_int_equal(parse("[e2b]\naddress = 0.0.0.0        # both listeners\n", &e), 0);
    assert_string_equal(cfg.e2b.address, "0.0.0.0");
    /* a value that is only a comment is empty: an error naming the line, never "# x" */
    assert_int_equal(parse("[daemon]\n\nlibvirt_uri = # none\n", &e), -1);
    assert_non_null(strstr(e->message, "line 3: libvirt_uri must be 1.."));
    error_free(e);
}

/* Sizes and durations: one convention (units.h) in every section, [pool] and [e2b] too. */
static void
test_units_in_config(void **state)
{
    (void) state;
    Error *e = NULL;
    const char *text = "[timeouts]\nboot_s = 2m\n[sessions]\nartifact_max_age_h = 7d\n"
                       "output_limit_mib = 1GiB\n[limits]\ndisk_bytes_per_sec = 100M\n"
                       "[egress]\nmax_bytes_in_mib = 2G\n[quota]\noutput_bytes = 16MiB\n"
                       "[e2b]\nlifetime_s = 1h\n[pool py]\nmemory_mib = 1 GiB\n";
    assert_int_equal(parse(text, &e), 0);
    assert_int_equal(config_finish(&cfg, &e), 0);
    assert_int_equal(cfg.pool.boot_timeout_usec, 120000000ull);
    assert_int_equal(cfg.sessions.artifact_max_age_usec, 168ull * 3600 * 1000000);
    assert_int_equal(cfg.sessions.output_limit_bytes, 1ull << 30);
    assert_int_equal(cfg.pool.disk_bytes_per_sec, 100ull << 20);
    assert_int_equal(cfg.sessions.egress.limits.max_bytes_in, 2ull << 30);
    assert_int_equal(cfg.sessions.default_quota.output_bytes, 16ull << 20);
    assert_int_equal(cfg.e2b.lifetime_usec, 3600ull * 1000000);
    assert_int_equal(cfg.shapes[0].memory_mib, 1024);
    static const struct {
        const char *text, *needle;
    } bad[] = {
        {"[timeouts]\nboot_s = 1500ms\n", "line 2: boot_s must be a number of seconds in 1..3600 "
                                          "(or with a unit: ms, s, m, h, d)"},
        {"[timeouts]\nboot_s = 2h\n", "boot_s must be a number of seconds in 1..3600"},
        {"[daemon]\nworkspace_mib = 10s\n", "workspace_mib must be a number of MiB"},
        {"[pool p]\nmemory_mib = 32MiB\n", "line 2: memory_mib must be a number of MiB in 64.."},
        {"[quota]\nmax_sessions = 4k\n", "max_sessions must be a number in 0.."},
        {"[e2b]\ncreate_wait_s = 11m\n", "line 2: create_wait_s must be a number of seconds"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        e = NULL;
        if (parse(bad[i].text, &e) == 0)
            fail_msg("accepted: %s", bad[i].text);
        if (!strstr(e->message, bad[i].needle))
            fail_msg("'%s' does not mention '%s'", e->message, bad[i].needle);
        error_free(e);
    }
}

/* --check-config: every key, its value and where it came from; the text parses back to the
 * same configuration. */
static void
test_dump(void **state)
{
    (void) state;
    Error *e = NULL;
    const char *text = "[daemon]\naccel = tcg\n\n[api]\ntcp_port = 9000 # here\n"
                       "[egress]\nallow_hosts = pypi.org, *.pythonhosted.org:8443\n"
                       "allow_cidrs = 10.213.0.0/30:8080\n[e2b]\nenabled = true\n"
                       "[pool py]\nwarm = 3\n";
    config_defaults(&cfg, "/usr/share/stockade/images");
    assert_int_equal(config_parse(&cfg, text, strlen(text), &e), 0);
    snprintf(cfg.source_path, sizeof(cfg.source_path), "/etc/s.conf");
    assert_int_equal(config_set_flag(&cfg, "daemon", "state_dir", "/srv/flag", &e), 0);
    assert_int_equal(config_set_flag(&cfg, "daemon", "accel", "fast", &e), -1);
    assert_non_null(strstr(e->message, "accel must be auto, kvm or tcg"));
    error_free(e);
    e = NULL;
    assert_int_equal(config_finish(&cfg, &e), 0);
    char *dump = config_dump(&cfg);
    assert_non_null(dump);
    static const char *const lines[] = {
        "state_dir = /srv/flag ",
        "# command line\n",
        "accel = tcg ",
        "# /etc/s.conf:2\n",
        "tcp_port = 9000 ",
        "# /etc/s.conf:5\n",
        "idle_timeout_s = 30 ",
        "allow_hosts = pypi.org ",
        "allow_hosts = *.pythonhosted.org:8443 ",
        "# /etc/s.conf:7\n",
        "allow_cidrs = 10.213.0.0/30:8080 ",
        "enabled = true ",
        "# /etc/s.conf:10\n",
        "[pool py]\n",
        "warm = 3 ",
        "# /etc/s.conf:12\n",
        "slots = 2 ",
        "# lease_s = ",
        "# template_dir = ",
        "template_map = base=python",
    };
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
        if (!strstr(dump, lines[i]))
            fail_msg("the dump lacks '%s':\n%s", lines[i], dump);
    /* Parsed back (on fresh defaults), it prints the same settings. */
    static DaemonConfig again;
    config_defaults(&again, "/usr/share/stockade/images");
    assert_int_equal(config_parse(&again, dump, strlen(dump), &e), 0);
    assert_int_equal(config_finish(&again, &e), 0);
    char *dump2 = config_dump(&again);
    assert_non_null(dump2);
    for (char *a = dump, *b = dump2; *a || *b;) { /* line by line, without the origins */
        size_t la = strcspn(a, "#\n"), lb = strcspn(b, "#\n");
        if (la != lb || memcmp(a, b, la) != 0)
            fail_msg("differs after a round trip: '%.*s' vs '%.*s'", (int) la, a, (int) lb, b);
        a += strcspn(a, "\n") + (a[strcspn(a, "\n")] != 0);
        b += strcspn(b, "\n") + (b[strcspn(b, "\n")] != 0);
    }
    free(dump);
    free(dump2);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_and_file),
        cmocka_unit_test(test_rejects),
        cmocka_unit_test(test_api_shares),
        cmocka_unit_test(test_guest_memory),
        cmocka_unit_test(test_long_line_and_nul),
        cmocka_unit_test(test_cluster),
        cmocka_unit_test(test_inline_comments),
        cmocka_unit_test(test_tls),
        cmocka_unit_test(test_units_in_config),
        cmocka_unit_test(test_dump),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
