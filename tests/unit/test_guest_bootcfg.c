/* Unit tests of guest/bootcfg.c: stockade.* keys on the kernel command line and the module
 * list of the initramfs. Table-driven. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "bootcfg.h"

static void
test_cmdline_table(void **state)
{
    (void) state;
    static const struct {
        const char *cmdline, *root, *port;
        bool debug;
        int ignored;
    } cases[] = {
        {"", "", PORT_NAME_DEFAULT, false, 0},
        {"console=ttyS0 quiet panic=-1\n", "", PORT_NAME_DEFAULT, false, 0},
        {"stockade.root=/dev/vda stockade.debug=1", "/dev/vda", PORT_NAME_DEFAULT, true, 0},
        {"stockade.port=org.x.y-1 stockade.root=/dev/vdb\n", "/dev/vdb", "org.x.y-1", false, 0},
        {"stockade.debug=0", "", PORT_NAME_DEFAULT, false, 0},
        {"stockade.root=\"/dev/vda\"", "/dev/vda", PORT_NAME_DEFAULT, false, 0},
        {"stockade.root=/etc/passwd", "", PORT_NAME_DEFAULT, false, 1},
        {"stockade.root=/dev/../etc", "", PORT_NAME_DEFAULT, false, 1},
        {"stockade.root=/dev/vd$a", "", PORT_NAME_DEFAULT, false, 1},
        {"stockade.port=", "", PORT_NAME_DEFAULT, false, 1},
        {"stockade.port=a/b", "", PORT_NAME_DEFAULT, false, 1},
        {"stockade.rootx=/dev/vda xstockade.root=/dev/vdb", "", PORT_NAME_DEFAULT, false, 0},
        {"stockade.root=/dev/vda stockade.root=/dev/vdc", "/dev/vdc", PORT_NAME_DEFAULT, false, 0},
    };
    BootConfig cfg;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int ignored = bootcfg_parse_cmdline(cases[i].cmdline, &cfg);
        if (ignored != cases[i].ignored || strcmp(cfg.root, cases[i].root) != 0 ||
            strcmp(cfg.port, cases[i].port) != 0 || cfg.debug != cases[i].debug)
            fail_msg("case %zu '%s': root '%s' port '%s' debug %d ignored %d", i, cases[i].cmdline,
                     cfg.root, cfg.port, cfg.debug, ignored);
    }
}

static void
test_cmdline_overlong_value(void **state)
{
    (void) state;
    char line[BOOT_VALUE_MAX_BYTES * 2 + 64] = "stockade.port=";
    BootConfig cfg;

    memset(line + strlen(line), 'a', BOOT_VALUE_MAX_BYTES * 2);
    assert_int_equal(bootcfg_parse_cmdline(line, &cfg), 1);
    assert_string_equal(cfg.port, PORT_NAME_DEFAULT);
}

static void
test_modules_list(void **state)
{
    (void) state;
    static const char text[] = "# load order\n"
                               "virtio_ring.ko\n"
                               "\n"
                               "  virtio.ko  \r\n"
                               "../evil.ko\n"
                               "dir/x.ko\n"
                               "\t# indented comment\n"
                               "ext4.ko.xz";
    static const struct {
        ModLine kind;
        const char *name;
    } want[] = {
        {MODLINE_NAME, "virtio_ring.ko"}, {MODLINE_NAME, "virtio.ko"},  {MODLINE_BAD, "../evil.ko"},
        {MODLINE_BAD, "dir/x.ko"},        {MODLINE_NAME, "ext4.ko.xz"}, {MODLINE_END, NULL},
    };
    char name[64];
    size_t cursor = 0;

    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        ModLine kind = bootcfg_next_module(text, &cursor, name, sizeof(name));
        assert_int_equal(kind, want[i].kind);
        if (want[i].name)
            assert_string_equal(name, want[i].name);
    }
}

static void
test_modules_list_truncated_name_is_bad(void **state)
{
    (void) state;
    char name[8];
    size_t cursor = 0;

    assert_int_equal(bootcfg_next_module("a-very-long-module.ko\n", &cursor, name, sizeof(name)),
                     MODLINE_BAD);
    assert_int_equal(bootcfg_next_module("a-very-long-module.ko\n", &cursor, name, sizeof(name)),
                     MODLINE_END);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cmdline_table),
        cmocka_unit_test(test_cmdline_overlong_value),
        cmocka_unit_test(test_modules_list),
        cmocka_unit_test(test_modules_list_truncated_name_is_bad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
