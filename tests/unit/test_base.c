/* Unit tests of hostd/base: sha256 (FIPS 180-4 vectors), errors, log escaping, /proc reads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "base64.h"
#include "fdutil.h"
#include "error.h"
#include "log.h"
#include "procfs.h"
#include "sha256.h"
#include "units.h"

static void
test_sha256_vectors(void **state)
{
    (void) state;
    static const struct {
        const char *in;
        const char *hex;
    } v[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    };
    char hex[SHA256_HEX_BYTES + 1];
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        sha256_hex(v[i].in, strlen(v[i].in), hex);
        assert_string_equal(hex, v[i].hex);
    }
    /* One million 'a', fed in odd-sized pieces. */
    Sha256 s;
    uint8_t d[SHA256_BYTES];
    char chunk[997];
    memset(chunk, 'a', sizeof(chunk));
    sha256_init(&s);
    size_t left = 1000000;
    while (left) {
        size_t n = left < sizeof(chunk) ? left : sizeof(chunk);
        sha256_update(&s, chunk, n);
        left -= n;
    }
    sha256_final(&s, d);
    hex_encode(d, sizeof(d), hex);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void
test_constant_time_compare(void **state)
{
    (void) state;
    assert_int_equal(memcmp_constant_time("abcd", "abcd", 4), 0);
    assert_int_not_equal(memcmp_constant_time("abcd", "abce", 4), 0);
}

static void
test_error_first_wins(void **state)
{
    (void) state;
    Error *e = NULL;
    assert_int_equal(error_set(&e, E_QUOTA, 0, "first %d", 1), -1);
    assert_int_equal(error_set(&e, E_INTERNAL, 0, "second"), -1);
    assert_int_equal(e->category, E_QUOTA);
    assert_string_equal(e->message, "first 1");
    error_prefix(&e, "ctx");
    assert_string_equal(e->message, "ctx: first 1");
    assert_string_equal(error_category_name(e->category), "quota_exceeded");
    error_free(e);
    assert_int_equal(error_set(NULL, E_IO, 5, "ignored"), -1); /* NULL errp is allowed */
}

static void
test_log_escape(void **state)
{
    (void) state;
    char out[64];
    assert_string_equal(log_escape(out, sizeof(out), "a\nb\x1b[31m\"", 9), "a\\x0ab\\x1b[31m\\x22");
    char small[8];
    log_escape(small, sizeof(small), "abcdefghijkl", 12);
    assert_string_equal(small, "abcd..."); /* 7 chars + NUL fill the 8 bytes */
}

static void
test_base64(void **state)
{
    (void) state;
    static const struct {
        const char *plain, *b64;
    } v[] = {{"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"}, {"foobar", "Zm9vYmFy"}};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        char *e = base64_encode((const uint8_t *) v[i].plain, strlen(v[i].plain));
        assert_string_equal(e, v[i].b64);
        free(e);
        uint8_t *d;
        size_t n;
        assert_int_equal(base64_decode(v[i].b64, strlen(v[i].b64), &d, &n), 0);
        assert_int_equal(n, strlen(v[i].plain));
        assert_memory_equal(d, v[i].plain, n);
        free(d);
    }
    const char *bad[] = {"Zg=", "Z===", "Zg=a", "Zm9v\n", "Zm 9", "=Zg="};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint8_t *d;
        size_t n;
        if (base64_decode(bad[i], strlen(bad[i]), &d, &n) == 0)
            fail_msg("accepted malformed base64 '%s'", bad[i]);
    }
}

/* This very process, whose comm holds neither spaces nor parentheses but whose fields we know. */
static void
test_procfs_self(void **state)
{
    (void) state;
    ProcStat st;
    assert_int_equal(proc_stat_read(getpid(), &st), 0);
    assert_int_equal(st.state, 'R');
    assert_int_equal(st.ppid, getppid());
    assert_int_equal(st.pgid, getpgrp());
    assert_int_equal(st.sid, getsid(0));
    assert_true(proc_cmdline_contains(getpid(), "unit_base"));
    assert_false(proc_cmdline_contains(getpid(), "no-such-argument-anywhere"));
    /* pid_max is at most 2^22: this pid never exists */
    assert_int_equal(proc_stat_read(1 << 23, &st), -1);
    assert_int_not_equal(errno, EINVAL);
    assert_false(proc_cmdline_contains(1 << 23, "x"));
}

/* mkdir_open_dir: makes or keeps a directory and opens it; a symlink in its place (to a
 * directory the caller did not mean) is refused, not followed. */
static void
test_mkdir_open_dir(void **state)
{
    (void) state;
    char base[] = "/tmp/stockade-fdutil-XXXXXX", dir[64], link[64], target[64];
    assert_non_null(mkdtemp(base));
    snprintf(dir, sizeof(dir), "%s/d", base);
    snprintf(link, sizeof(link), "%s/l", base);
    snprintf(target, sizeof(target), "%s/t", base);

    int fd = mkdir_open_dir(dir, 0700); /* made */
    assert_true(fd >= 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0700);
    close(fd);
    fd = mkdir_open_dir(dir, 0700); /* kept */
    assert_true(fd >= 0);
    close(fd);

    assert_int_equal(mkdir(target, 0700), 0);
    assert_int_equal(symlink(target, link), 0);
    assert_int_equal(mkdir_open_dir(link, 0700), -1);
    assert_true(errno == ELOOP || errno == ENOTDIR);

    rmdir(dir), unlink(link), rmdir(target), rmdir(base);
}

/* units.h: a key's name says its unit; a value converts exactly or is refused. */
static void
test_units(void **state)
{
    (void) state;
    static const struct {
        const char *key;
        UnitKind kind;
        uint64_t scale;
    } keys[] = {
        {"boot_s", UNIT_DURATION, 1000000},
        {"refill_holdoff_ms", UNIT_DURATION, 1000},
        {"artifact_max_age_h", UNIT_DURATION, 3600000000ull},
        {"workspace_mib", UNIT_SIZE, 1 << 20},
        {"artifact_max_total_gib", UNIT_SIZE, 1 << 30},
        {"output_bytes", UNIT_SIZE, 1},
        {"disk_bytes_per_sec", UNIT_SIZE, 1},
        {"finalize_ms_per_mib", UNIT_COUNT, 1},
        {"sessions_per_minute", UNIT_COUNT, 1},
        {"max_sessions", UNIT_COUNT, 1},
        {"wallet_guest_seconds", UNIT_COUNT, 1},
        {"cpu_quota_percent", UNIT_COUNT, 1},
        {"s", UNIT_COUNT, 1},
    };
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        Unit u = unit_of_key(keys[i].key);
        if (u.kind != keys[i].kind || u.scale != keys[i].scale)
            fail_msg("%s: kind %d scale %llu", keys[i].key, u.kind, (unsigned long long) u.scale);
    }
    static const struct {
        const char *key, *value;
        bool ok;
        uint64_t want;
    } values[] = {
        {"boot_s", "90", true, 90},
        {"boot_s", "90s", true, 90},
        {"boot_s", "2m", true, 120},
        {"boot_s", "2 min", true, 120},
        {"boot_s", "1h", true, 3600},
        {"boot_s", "1d", true, 86400},
        {"boot_s", "3000ms", true, 3},
        {"boot_s", "1500ms", false, 0}, /* inexact */
        {"boot_s", "10MiB", false, 0},
        {"boot_s", "10x", false, 0},
        {"boot_s", "s", false, 0},
        {"boot_s", "-1", false, 0},
        {"boot_s", " 1", false, 0},
        {"boot_s", "1  s", false, 0},
        {"boot_s", "1s ", false, 0},
        {"boot_s", "", false, 0},
        {"refill_holdoff_ms", "2s", true, 2000},
        {"artifact_max_age_h", "7d", true, 168},
        {"artifact_max_age_h", "90m", false, 0},
        {"workspace_mib", "512", true, 512},
        {"workspace_mib", "2GiB", true, 2048},
        {"workspace_mib", "2G", true, 2048},
        {"workspace_mib", "1024KiB", true, 1},
        {"workspace_mib", "1536KiB", false, 0},
        {"workspace_mib", "1GB", false, 0},
        {"workspace_mib", "1s", false, 0},
        {"output_bytes", "64MiB", true, 64ull << 20},
        {"disk_bytes_per_sec", "200M", true, 200ull << 20},
        {"max_sessions", "16", true, 16},
        {"max_sessions", "16s", false, 0},
        {"finalize_ms_per_mib", "100ms", false, 0},
        {"max_sessions", "18446744073709551615", true, UINT64_MAX},
        {"max_sessions", "18446744073709551616", false, 0},
        {"output_bytes", "17179869184TiB", false, 0}, /* overflows bytes */
        {"boot_s", "213503982334601d", false, 0},     /* overflows microseconds */
    };
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        uint64_t got = 12345;
        bool ok = unit_parse(values[i].value, unit_of_key(values[i].key), &got);
        if (ok != values[i].ok || (ok && got != values[i].want))
            fail_msg("%s = '%s': %s %llu", values[i].key, values[i].value, ok ? "ok" : "refused",
                     (unsigned long long) got);
        if (!ok && got != 12345)
            fail_msg("%s = '%s': the out-param changed on failure", values[i].key, values[i].value);
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256_vectors),   cmocka_unit_test(test_constant_time_compare),
        cmocka_unit_test(test_error_first_wins), cmocka_unit_test(test_log_escape),
        cmocka_unit_test(test_base64),           cmocka_unit_test(test_procfs_self),
        cmocka_unit_test(test_mkdir_open_dir),   cmocka_unit_test(test_units),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
