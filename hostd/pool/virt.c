/* libvirt calls: see virt.h. libvirt's own error printing is silenced; its last error
 * (thread-local) becomes our Error message. */
#include "virt.h"

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fdutil.h"

#define VIRT_PIDFILE_DIR "/run/libvirt/qemu"

struct Virt {
    virConnectPtr conn;
};

static void
virt_silence(void *userdata, virErrorPtr err)
{
    (void) userdata;
    (void) err;
}

static int
virt_fail(Error **errp, ErrorCategory cat, const char *what, const char *name)
{
    const char *msg = virGetLastErrorMessage();
    char one_line[ERROR_MESSAGE_MAX];
    snprintf(one_line, sizeof(one_line), "%s", msg ? msg : "unknown");
    for (char *p = one_line; *p; p++) /* QEMU's stderr comes through with newlines */
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    if (name)
        return error_set(errp, cat, 0, "%s %s: %s", what, name, one_line);
    return error_set(errp, cat, 0, "%s: %s", what, one_line);
}

int
virt_open(const char *uri, Virt **ret, Error **errp)
{
    Virt *v = calloc(1, sizeof(*v));
    if (!v)
        return error_set(errp, E_INTERNAL, ENOMEM, "virt");
    virSetErrorFunc(NULL, virt_silence);
    v->conn = virConnectOpen(uri);
    if (!v->conn) {
        free(v);
        return virt_fail(errp, E_UNAVAILABLE, "connect to libvirt", uri);
    }
    *ret = v;
    return 0;
}

void
virt_close(Virt *v)
{
    if (!v)
        return;
    if (v->conn)
        virConnectClose(v->conn);
    free(v);
}

int
virt_create(Virt *v, const char *xml, Error **errp)
{
    virDomainPtr d = virDomainCreateXML(v->conn, xml, VIR_DOMAIN_NONE);
    if (!d)
        return virt_fail(errp, E_INTERNAL, "create domain", NULL);
    virDomainFree(d);
    return 0;
}

int
virt_save(Virt *v, const char *name, const char *path, Error **errp)
{
    virDomainPtr d = virDomainLookupByName(v->conn, name);
    if (!d)
        return virt_fail(errp, E_NOT_FOUND, "look up domain", name);
    int r = virDomainSaveFlags(d, path, NULL, VIR_DOMAIN_SAVE_RUNNING);
    if (r < 0)
        virt_fail(errp, E_INTERNAL, "save domain", name);
    virDomainFree(d);
    return r < 0 ? -1 : 0;
}

int
virt_restore(Virt *v, const char *path, Error **errp)
{
    if (virDomainRestoreFlags(v->conn, path, NULL, VIR_DOMAIN_SAVE_RUNNING) < 0)
        return virt_fail(errp, E_INTERNAL, "restore", path);
    return 0;
}

int
virt_destroy(Virt *v, const char *name, Error **errp)
{
    virDomainPtr d = virDomainLookupByName(v->conn, name);
    if (!d)
        return 0; /* already gone */
    int r = 0;
    if (virDomainIsActive(d) == 1 && virDomainDestroy(d) < 0 && virDomainIsActive(d) == 1)
        r = virt_fail(errp, E_INTERNAL, "destroy domain", name);
    virDomainFree(d);
    return r;
}

int
virt_undefine(Virt *v, const char *name, Error **errp)
{
    virDomainPtr d = virDomainLookupByName(v->conn, name);
    if (!d)
        return 0;
    int r = 0;
    if (virDomainIsPersistent(d) == 1 &&
        virDomainUndefineFlags(d, VIR_DOMAIN_UNDEFINE_MANAGED_SAVE) < 0)
        r = virt_fail(errp, E_INTERNAL, "undefine domain", name);
    virDomainFree(d);
    return r;
}

bool
virt_is_active(Virt *v, const char *name)
{
    virDomainPtr d = virDomainLookupByName(v->conn, name);
    if (!d)
        return false;
    bool active = virDomainIsActive(d) == 1;
    virDomainFree(d);
    return active;
}

int
virt_set_memory_hard_limit(Virt *v, const char *name, unsigned limit_mib, Error **errp)
{
    virTypedParameter param = {.type = VIR_TYPED_PARAM_ULLONG};
    snprintf(param.field, sizeof(param.field), "%s", VIR_DOMAIN_MEMORY_HARD_LIMIT);
    param.value.ul = (unsigned long long) limit_mib * 1024u; /* KiB */
    virDomainPtr d = virDomainLookupByName(v->conn, name);
    if (!d)
        return virt_fail(errp, E_NOT_FOUND, "look up domain", name);
    int r = virDomainSetMemoryParameters(d, &param, 1, VIR_DOMAIN_AFFECT_LIVE);
    if (r < 0)
        virt_fail(errp, E_INTERNAL, "set memory hard limit of", name);
    virDomainFree(d);
    return r < 0 ? -1 : 0;
}

void
virt_strv_free(char **strv)
{
    if (!strv)
        return;
    for (char **p = strv; *p; p++)
        free(*p);
    free(strv);
}

int
virt_list_prefixed(Virt *v, const char *prefix, char ***ret_names, Error **errp)
{
    virDomainPtr *doms = NULL;
    int n = virConnectListAllDomains(v->conn, &doms, 0);
    if (n < 0)
        return virt_fail(errp, E_UNAVAILABLE, "list domains", NULL);
    char **names = calloc((size_t) n + 1, sizeof(char *));
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        const char *name = virDomainGetName(doms[i]);
        if (names && name && strncmp(name, prefix, strlen(prefix)) == 0)
            names[k++] = strdup(name);
        virDomainFree(doms[i]);
    }
    free(doms);
    if (!names)
        return error_set(errp, E_INTERNAL, ENOMEM, "list domains");
    *ret_names = names;
    return 0;
}

pid_t
virt_qemu_pid(const char *name)
{
    char path[512];
    _cleanup_free_ char *buf = NULL;
    size_t len;

    if (snprintf(path, sizeof(path), VIRT_PIDFILE_DIR "/%s.pid", name) >= (int) sizeof(path))
        return -1;
    if (read_file_bounded(path, 32, &buf, &len) < 0)
        return -1;
    long pid = strtol(buf, NULL, 10);
    return pid > 1 ? (pid_t) pid : -1;
}

int
virt_kill_qemu(pid_t pid, const char *name)
{
    char path[64], want[128];
    _cleanup_free_ char *cmdline = NULL;
    size_t len;

    if (pid <= 1)
        return -1;
    snprintf(path, sizeof(path), "/proc/%d/cmdline", (int) pid);
    snprintf(want, sizeof(want), "guest=%s,", name);
    if (read_file_bounded(path, 64 * 1024, &cmdline, &len) < 0)
        return -1;
    for (size_t i = 0; i < len; i++) /* arguments are NUL-separated */
        if (cmdline[i] == '\0')
            cmdline[i] = '\n';
    if (!strstr(cmdline, want))
        return -1;
    return kill(pid, SIGKILL);
}

bool
virt_pid_gone(pid_t pid)
{
    char path[64], state = '?';
    _cleanup_fclose_ FILE *f = NULL;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
    f = fopen(path, "re");
    if (!f)
        return true;
    /* "pid (comm) S ...": comm may hold spaces and parentheses; the state follows the last ')' */
    char line[512];
    if (!fgets(line, sizeof(line), f))
        return true;
    char *rp = strrchr(line, ')');
    if (rp && rp[1] == ' ')
        state = rp[2];
    return state == 'Z' || state == 'X';
}
