/* Golden tests of the domain XML builder (hostd/pool/domxml.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "domxml.h"
#include "fdutil.h"

static DomainSpec
base_spec(void)
{
    return (DomainSpec){
        .name = "stockade-python-0",
        .uuid = "3f1c2a9e-6b7d-4e21-9a0b-5c6d7e8f9012",
        .accel = ACCEL_TCG,
        .vcpus = 1,
        .memory_mib = 256,
        .kernel_path = "/var/lib/stockade/images/python/vmlinux",
        .initrd_path = "/var/lib/stockade/images/python/initramfs.cpio",
        .cmdline = "console=ttyS0 quiet panic=-1 stockade.root=/dev/vda",
        .root_disk_path = "/var/lib/stockade/images/python/root.ext4",
        .workspace_disk_path = "/var/lib/stockade/guests/stockade-python-0/workspace.raw",
        .channel_socket_path = "/var/lib/stockade/guests/stockade-python-0/channel.sock",
        .console_log_path = "/var/lib/stockade/guests/stockade-python-0/console.log",
        .tb_cache_mib = 64,
        .cpu_quota_percent = 100,
        .disk_bytes_per_sec = 100ull * 1024 * 1024,
        .disk_iops = 2000,
        .rng_bytes_per_sec = 4096,
    };
}

static void
check_golden(const char *name, const DomainSpec *spec)
{
    char path[4096];
    char *xml = NULL;
    _cleanup_free_ char *want = NULL;
    size_t len;

    assert_int_equal(domxml_build(spec, &xml, NULL), 0);
    snprintf(path, sizeof(path), "%s/%s.xml", getenv("STOCKADE_GOLDEN_DIR"), name);
    if (getenv("STOCKADE_REGEN_GOLDEN")) {
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        fputs(xml, f);
        fclose(f);
    }
    if (read_file_bounded(path, 1 << 20, &want, &len) < 0)
        fail_msg("missing golden %s (run with STOCKADE_REGEN_GOLDEN=1)", path);
    if (strcmp(xml, want) != 0)
        fail_msg("%s differs from its golden file; got:\n%s", path, xml);
    free(xml);
}

static void
test_tcg(void **state)
{
    (void) state;
    DomainSpec s = base_spec();
    check_golden("tcg", &s);
}

static void
test_kvm_uncapped(void **state)
{
    (void) state;
    DomainSpec s = base_spec();
    s.accel = ACCEL_KVM;
    s.vcpus = 2;
    s.memory_mib = 1024;
    s.cpu_quota_percent = 0;
    s.disk_bytes_per_sec = 0;
    s.disk_iops = 0;
    s.rng_bytes_per_sec = 0;
    check_golden("kvm-uncapped", &s);
}

static void
test_escaping(void **state)
{
    (void) state;
    DomainSpec s = base_spec();
    s.root_disk_path = "/srv/a&b/<root>'s \"image\".ext4";
    s.cmdline = "console=ttyS0 x='<&>'";
    check_golden("escaping", &s);
}

/* guest_memory = template: the template guest's RAM is a shared file it fills by booting. */
static void
test_memory_template(void **state)
{
    (void) state;
    DomainSpec s = base_spec();
    s.name = "stockade-python-template";
    s.memory = DOMXML_MEMORY_TEMPLATE;
    s.memory_path = "/dev/shm/stockade-0123456789ab/python.mem.new";
    check_golden("memory-template", &s);
}

/* A clone maps the template privately (copy on write) and waits for its device state. */
static void
test_memory_clone(void **state)
{
    (void) state;
    DomainSpec s = base_spec();
    s.memory = DOMXML_MEMORY_CLONE;
    s.memory_path = "/dev/shm/stockade-0123456789ab/python.mem";
    check_golden("memory-clone", &s);
    s.memory_readonly = true; /* QEMU >= 8.2 */
    s.memory_path = "/srv/t&<'>/python.mem";
    check_golden("memory-clone-readonly", &s);
}

/* A ',' would end QEMU's mem-path and start another option of the backend. */
static void
test_rejects_bad_memory(void **state)
{
    (void) state;
    static const char *const bad_paths[] = {NULL, "relative.mem", "/a,share=on/x.mem",
                                            "/a\nb.mem"};
    for (size_t i = 0; i < sizeof(bad_paths) / sizeof(bad_paths[0]); i++) {
        DomainSpec s = base_spec();
        char *xml = NULL;
        Error *e = NULL;
        s.memory = DOMXML_MEMORY_CLONE;
        s.memory_path = bad_paths[i];
        if (domxml_build(&s, &xml, &e) == 0)
            fail_msg("memory path %zu was accepted", i);
        assert_int_equal(e->category, E_INVALID);
        error_free(e);
    }
    DomainSpec s = base_spec();
    char *xml = NULL;
    Error *e = NULL;
    s.memory = DOMXML_MEMORY_TEMPLATE; /* the template must write its file */
    s.memory_path = "/t/x.mem";
    s.memory_readonly = true;
    assert_int_equal(domxml_build(&s, &xml, &e), -1);
    error_free(e);
}

static void
test_rejects_bad_specs(void **state)
{
    (void) state;
    static const struct {
        const char *what;
        int field;
    } cases[] = {{"upper-case name", 1}, {"short uuid", 2},    {"0 vcpus", 3},
                 {"relative path", 4},  {"newline in cmdline", 5}, {"quota > 100", 6},
                 {"tiny memory", 7}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        DomainSpec s = base_spec();
        char *xml = NULL;
        Error *e = NULL;
        switch (cases[i].field) {
        case 1: s.name = "Stockade-X"; break;
        case 2: s.uuid = "3f1c2a9e"; break;
        case 3: s.vcpus = 0; break;
        case 4: s.workspace_disk_path = "relative.raw"; break;
        case 5: s.cmdline = "a\nb"; break;
        case 6: s.cpu_quota_percent = 101; break;
        case 7: s.memory_mib = 16; break;
        }
        if (domxml_build(&s, &xml, &e) == 0)
            fail_msg("case '%s' was accepted", cases[i].what);
        assert_int_equal(e->category, E_INVALID);
        assert_null(xml);
        error_free(e);
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tcg),
        cmocka_unit_test(test_kvm_uncapped),
        cmocka_unit_test(test_escaping),
        cmocka_unit_test(test_memory_template),
        cmocka_unit_test(test_memory_clone),
        cmocka_unit_test(test_rejects_bad_memory),
        cmocka_unit_test(test_rejects_bad_specs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
