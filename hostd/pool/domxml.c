/* See domxml.h. Pure: string in, string out; no libvirt. */
#include "domxml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *
accel_to_string(Accel a)
{
    return a == ACCEL_KVM ? "kvm" : "tcg";
}

static void
xml_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '\'': fputs("&apos;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* Prints prefix, the escaped value, suffix. */
static void
xml_elem(FILE *f, const char *prefix, const char *value, const char *suffix)
{
    fputs(prefix, f);
    xml_text(f, value);
    fputs(suffix, f);
}

static bool
domxml_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > DOMXML_NAME_MAX_BYTES)
        return false;
    return strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == n;
}

static bool
domxml_uuid_ok(const char *s)
{
    if (strlen(s) != 36)
        return false;
    for (int i = 0; i < 36; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !strchr("0123456789abcdef", s[i]))
            return false;
    }
    return true;
}

static bool
domxml_path_ok(const char *p)
{
    return p && p[0] == '/' && strlen(p) < 4096 && !strchr(p, '\n');
}

static int
domxml_check(const DomainSpec *s, Error **errp)
{
    if (!s->name || !domxml_name_ok(s->name))
        return error_set(errp, E_INVALID, 0, "domain name must be 1..%d of [a-z0-9-]",
                         DOMXML_NAME_MAX_BYTES);
    if (!s->uuid || !domxml_uuid_ok(s->uuid))
        return error_set(errp, E_INVALID, 0, "domain uuid must be lower-case canonical form");
    if (s->vcpus < 1 || s->vcpus > 64 || s->memory_mib < 64 || s->memory_mib > 65536)
        return error_set(errp, E_INVALID, 0, "vcpus must be 1..64 and memory_mib 64..65536");
    if (s->cpu_quota_percent > 100)
        return error_set(errp, E_INVALID, 0, "cpu_quota_percent must be 0..100");
    const char *paths[] = {s->kernel_path,         s->initrd_path,
                           s->root_disk_path,      s->workspace_disk_path,
                           s->channel_socket_path, s->console_log_path};
    for (size_t i = 0; i < ELEMENTSOF(paths); i++)
        if (!domxml_path_ok(paths[i]))
            return error_set(errp, E_INVALID, 0, "domain paths must be absolute, one line");
    if (!s->cmdline || strlen(s->cmdline) > 2048 || strchr(s->cmdline, '\n'))
        return error_set(errp, E_INVALID, 0, "kernel command line must be one line <= 2048");
    if (s->memory != DOMXML_MEMORY_PRIVATE &&
        (!domxml_path_ok(s->memory_path) || strchr(s->memory_path, ',')))
        return error_set(errp, E_INVALID, 0, "memory_path must be absolute, one line, no ','");
    if (s->memory_readonly && s->memory != DOMXML_MEMORY_CLONE)
        return error_set(errp, E_INVALID, 0, "only a clone maps its memory read-only");
    return 0;
}

static void
domxml_iotune(FILE *f, const DomainSpec *s)
{
    if (!s->disk_bytes_per_sec && !s->disk_iops)
        return;
    fputs("      <iotune>\n", f);
    if (s->disk_bytes_per_sec)
        fprintf(f, "        <total_bytes_sec>%llu</total_bytes_sec>\n",
                (unsigned long long) s->disk_bytes_per_sec);
    if (s->disk_iops)
        fprintf(f, "        <total_iops_sec>%llu</total_iops_sec>\n",
                (unsigned long long) s->disk_iops);
    fputs("      </iotune>\n", f);
}

static void
domxml_head(FILE *f, const DomainSpec *s)
{
    fprintf(f, "<domain type='%s'%s>\n", s->accel == ACCEL_KVM ? "kvm" : "qemu",
            s->memory == DOMXML_MEMORY_PRIVATE
                ? ""
                : " xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'");
    xml_elem(f, "  <name>", s->name, "</name>\n");
    xml_elem(f, "  <uuid>", s->uuid, "</uuid>\n");
    if (s->memory != DOMXML_MEMORY_PRIVATE)
        fputs("  <genid/>\n", f); /* empty: libvirt makes a fresh one at every start */
    fprintf(f, "  <memory unit='MiB'>%u</memory>\n", s->memory_mib);
    fprintf(f, "  <vcpu placement='static'>%u</vcpu>\n", s->vcpus);
    if (s->cpu_quota_percent)
        fprintf(f, "  <cputune>\n    <period>100000</period>\n    <quota>%u</quota>\n"
                   "  </cputune>\n",
                s->cpu_quota_percent * 1000u);
    fputs("  <os>\n    <type arch='x86_64' machine='pc'>hvm</type>\n", f);
    xml_elem(f, "    <kernel>", s->kernel_path, "</kernel>\n");
    xml_elem(f, "    <initrd>", s->initrd_path, "</initrd>\n");
    xml_elem(f, "    <cmdline>", s->cmdline, "</cmdline>\n");
    fputs("  </os>\n", f);
    /* ACPI: the guest then finds the HPET and the ACPI PM timer. Without them its only
     * clocksources are the TSC and jiffies, and a TSC the kernel distrusts after a restore
     * leaves it on jiffies, whose time runs slow under load and fast as lost ticks catch
     * up (guest sleeps were seen 6x short). No ACPI power button is wired to anything. */
    fputs("  <features>\n    <acpi/>\n", f);
    if (s->accel == ACCEL_TCG && s->tb_cache_mib)
        fprintf(f, "    <tcg>\n      <tb-cache unit='MiB'>%u</tb-cache>\n    </tcg>\n",
                s->tb_cache_mib);
    fputs("  </features>\n", f);
    if (s->accel == ACCEL_KVM)
        fputs("  <cpu mode='host-passthrough' check='none'/>\n", f);
    fputs("  <clock offset='utc'/>\n  <on_poweroff>destroy</on_poweroff>\n"
          "  <on_reboot>destroy</on_reboot>\n  <on_crash>destroy</on_crash>\n",
          f);
}

static void
domxml_devices(FILE *f, const DomainSpec *s)
{
    fputs("  <devices>\n", f);
    /* error_policy report: a full host disk gives the guest an I/O error; QEMU's default
     * (enospc) would pause the VM, which the daemon can only take for a wedged guest. */
    fputs("    <disk type='file' device='disk'>\n      <driver name='qemu' type='raw' "
          "error_policy='report' rerror_policy='report'/>\n",
          f);
    xml_elem(f, "      <source file='", s->root_disk_path, "'>\n");
    fputs("        <seclabel model='dac' relabel='no'/>\n      </source>\n", f);
    fputs("      <target dev='vda' bus='virtio'/>\n      <readonly/>\n", f);
    domxml_iotune(f, s);
    fputs("    </disk>\n", f);
    fputs("    <disk type='file' device='disk'>\n", f);
    fputs("      <driver name='qemu' type='raw' error_policy='report' rerror_policy='report' "
          "discard='unmap'/>\n",
          f);
    xml_elem(f, "      <source file='", s->workspace_disk_path, "'/>\n");
    fputs("      <target dev='vdb' bus='virtio'/>\n", f);
    domxml_iotune(f, s);
    fputs("    </disk>\n", f);
    fputs("    <controller type='usb' model='none'/>\n", f);
    fputs("    <serial type='file'>\n", f);
    xml_elem(f, "      <source path='", s->console_log_path, "' append='off'/>\n");
    fputs("      <target port='0'/>\n    </serial>\n", f);
    fputs("    <channel type='unix'>\n", f);
    xml_elem(f, "      <source mode='bind' path='", s->channel_socket_path, "'/>\n");
    fputs("      <target type='virtio' name='" DOMXML_RUNNER_PORT_NAME "'/>\n    </channel>\n", f);
    fputs("    <rng model='virtio'>\n", f);
    if (s->rng_bytes_per_sec)
        fprintf(f, "      <rate bytes='%u' period='1000'/>\n", s->rng_bytes_per_sec);
    fputs("      <backend model='random'>/dev/urandom</backend>\n    </rng>\n", f);
    fputs("    <memballoon model='none'/>\n  </devices>\n", f);
}

static void
domxml_arg(FILE *f, const char *value)
{
    xml_elem(f, "    <qemu:arg value='", value, "'/>\n");
}

/* The template's or clone's RAM. The later -machine memory-backend= wins over the one libvirt
 * passes, whose own backend stays allocated but untouched. */
static void
domxml_memory_backend(FILE *f, const DomainSpec *s)
{
    if (s->memory == DOMXML_MEMORY_PRIVATE)
        return;
    fputs("  <qemu:commandline>\n", f);
    domxml_arg(f, "-object");
    fputs("    <qemu:arg value='memory-backend-file,id=" DOMXML_MEMORY_BACKEND_ID, f);
    fprintf(f, ",size=%uM,mem-path=", s->memory_mib);
    xml_text(f, s->memory_path);
    fprintf(f, ",share=%s%s'/>\n", s->memory == DOMXML_MEMORY_TEMPLATE ? "on" : "off",
            s->memory_readonly ? ",readonly=on,rom=off" : "");
    domxml_arg(f, "-machine");
    domxml_arg(f, "memory-backend=" DOMXML_MEMORY_BACKEND_ID);
    if (s->memory == DOMXML_MEMORY_CLONE) {
        domxml_arg(f, "-incoming");
        domxml_arg(f, "defer");
    }
    fputs("  </qemu:commandline>\n", f);
}

int
domxml_build(const DomainSpec *spec, char **ret_xml, Error **errp)
{
    char *buf = NULL;
    size_t len = 0;

    if (domxml_check(spec, errp) < 0)
        return -1;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return error_set(errp, E_INTERNAL, errno, "open_memstream");
    domxml_head(f, spec);
    domxml_devices(f, spec);
    domxml_memory_backend(f, spec);
    fputs("</domain>\n", f);
    if (fclose(f) != 0) {
        free(buf);
        return error_set(errp, E_INTERNAL, errno, "render domain XML");
    }
    *ret_xml = buf;
    return 0;
}
