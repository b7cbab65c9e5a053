/* libvirt calls: see virt.h. libvirt's own error printing is silenced; its last error
 * (thread-local) becomes our Error message. */
#include "virt.h"

#include <fcntl.h>
#include <jansson.h>
#include <libvirt/libvirt-qemu.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <pthread.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "fdutil.h"
#include "procfs.h"
#include "timeutil.h"

#define VIRT_PIDFILE_DIR "/run/libvirt/qemu"
#define VIRT_QMP_REPLY_MAX_BYTES (64 * 1024) /* QEMU's replies we ask for are < 2 KiB */
#define VIRT_MIGRATE_POLL_USEC (2 * 1000)   /* the device state takes 6-10 ms here */
#define VIRT_STATE_FD_NAME "stockade-state"
/* Pause (issue 27): a look at query-migrate when the stream is quiet; read size; QEMU's
 * max-bandwidth during a pause (64 GiB/s: no throttle; its 128 MiB/s default made it slow). */
#define VIRT_PAUSE_POLL_MS 50
#define VIRT_PAUSE_CHUNK_BYTES (256 * 1024)
#define VIRT_PAUSE_BANDWIDTH_BYTES_PER_SEC "68719476736"

struct Virt {
    pthread_mutex_t lock;
    char *uri;
    virConnectPtr conn; /* reopened when libvirtd went away (restart, crash) */
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

/* A referenced live connection, reopening it when the old one died. */
static virConnectPtr
virt_acquire(Virt *v, Error **errp)
{
    pthread_mutex_lock(&v->lock);
    if (v->conn && virConnectIsAlive(v->conn) != 1) {
        virConnectClose(v->conn);
        v->conn = NULL;
    }
    if (!v->conn)
        v->conn = virConnectOpen(v->uri);
    virConnectPtr c = v->conn;
    if (c)
        virConnectRef(c);
    pthread_mutex_unlock(&v->lock);
    if (!c)
        virt_fail(errp, E_UNAVAILABLE, "connect to libvirt", v->uri);
    return c;
}

/* Drops the reference; returns true when the call failed because the connection died
 * (libvirtd restarted under us): the caller may retry once on a new one. */
static bool
virt_release(Virt *v, virConnectPtr c, bool failed)
{
    bool dead = failed && virConnectIsAlive(c) != 1;
    if (dead) {
        pthread_mutex_lock(&v->lock);
        if (v->conn == c) {
            virConnectClose(v->conn);
            v->conn = NULL;
        }
        pthread_mutex_unlock(&v->lock);
    }
    virConnectClose(c);
    return dead;
}

typedef int (*VirtOp)(virConnectPtr c, const void *arg, Error **errp);

/* Runs op on a live connection; if it fails because libvirtd went away, once more on a
 * fresh connection (running guests survive a libvirtd restart). */
static int
virt_run(Virt *v, VirtOp op, const void *arg, Error **errp)
{
    for (int attempt = 0;; attempt++) {
        Error *err = NULL;
        virConnectPtr c = virt_acquire(v, errp);
        if (!c)
            return -1;
        int r = op(c, arg, &err);
        bool dead = virt_release(v, c, r < 0);
        if (r == 0)
            return 0;
        if (!dead || attempt > 0) {
            if (errp && !*errp)
                *errp = err;
            else
                error_free(err);
            return -1;
        }
        error_free(err);
    }
}

int
virt_open(const char *uri, Virt **ret, Error **errp)
{
    Virt *v = calloc(1, sizeof(*v));
    if (!v || !(v->uri = strdup(uri))) {
        free(v);
        return error_set(errp, E_INTERNAL, ENOMEM, "virt");
    }
    pthread_mutex_init(&v->lock, NULL);
    virSetErrorFunc(NULL, virt_silence);
    virConnectPtr c = virt_acquire(v, errp);
    if (!c) {
        virt_close(v);
        return -1;
    }
    virConnectClose(c);
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
    pthread_mutex_destroy(&v->lock);
    free(v->uri);
    free(v);
}

static int
op_create(virConnectPtr c, const void *arg, Error **errp)
{
    virDomainPtr d = virDomainCreateXML(c, arg, VIR_DOMAIN_NONE);
    if (!d)
        return virt_fail(errp, E_INTERNAL, "create domain", NULL);
    virDomainFree(d);
    return 0;
}

int
virt_create(Virt *v, const char *xml, Error **errp)
{
    return virt_run(v, op_create, xml, errp);
}

typedef struct {
    const char *name, *path;
} NamePath;

static int
op_save(virConnectPtr c, const void *arg, Error **errp)
{
    const NamePath *a = arg;
    virDomainPtr d = virDomainLookupByName(c, a->name);
    if (!d)
        return virt_fail(errp, E_NOT_FOUND, "look up domain", a->name);
    int r = virDomainSaveFlags(d, a->path, NULL, VIR_DOMAIN_SAVE_RUNNING);
    if (r < 0)
        virt_fail(errp, E_INTERNAL, "save domain", a->name);
    virDomainFree(d);
    return r < 0 ? -1 : 0;
}

int
virt_save(Virt *v, const char *name, const char *path, Error **errp)
{
    NamePath a = {name, path};
    return virt_run(v, op_save, &a, errp);
}

static int
op_restore(virConnectPtr c, const void *arg, Error **errp)
{
    if (virDomainRestoreFlags(c, arg, NULL, VIR_DOMAIN_SAVE_RUNNING) < 0)
        return virt_fail(errp, E_INTERNAL, "restore", arg);
    return 0;
}

int
virt_restore(Virt *v, const char *path, Error **errp)
{
    return virt_run(v, op_restore, path, errp);
}

static int
op_destroy(virConnectPtr c, const void *arg, Error **errp)
{
    virDomainPtr d = virDomainLookupByName(c, arg);
    if (!d)
        return virConnectIsAlive(c) == 1 ? 0 : virt_fail(errp, E_UNAVAILABLE, "look up", arg);
    int r = 0;
    if (virDomainIsActive(d) == 1 && virDomainDestroy(d) < 0 && virDomainIsActive(d) == 1)
        r = virt_fail(errp, E_INTERNAL, "destroy domain", arg);
    virDomainFree(d);
    return r;
}

int
virt_destroy(Virt *v, const char *name, Error **errp)
{
    return virt_run(v, op_destroy, name, errp); /* a domain that does not exist is fine */
}

static int
op_undefine(virConnectPtr c, const void *arg, Error **errp)
{
    virDomainPtr d = virDomainLookupByName(c, arg);
    if (!d)
        return 0;
    int r = 0;
    if (virDomainIsPersistent(d) == 1 &&
        virDomainUndefineFlags(d, VIR_DOMAIN_UNDEFINE_MANAGED_SAVE) < 0)
        r = virt_fail(errp, E_INTERNAL, "undefine domain", arg);
    virDomainFree(d);
    return r;
}

int
virt_undefine(Virt *v, const char *name, Error **errp)
{
    return virt_run(v, op_undefine, name, errp);
}

static int
op_is_active(virConnectPtr c, const void *arg, Error **errp)
{
    (void) errp;
    virDomainPtr d = virDomainLookupByName(c, arg);
    if (!d)
        return -1;
    bool active = virDomainIsActive(d) == 1;
    virDomainFree(d);
    return active ? 0 : -1;
}

bool
virt_is_active(Virt *v, const char *name)
{
    return virt_run(v, op_is_active, name, NULL) == 0;
}

typedef struct {
    const char *name, *uuid;
} NameUuid;

/* Running, and the UUID the caller expects (a domain of that name made by someone else, or
 * by a pool whose state directory differs, is not it). */
static int
op_is_running_uuid(virConnectPtr c, const void *arg, Error **errp)
{
    const NameUuid *a = arg;
    char uuid[VIR_UUID_STRING_BUFLEN];
    virDomainPtr d = virDomainLookupByName(c, a->name);
    if (!d)
        return virt_fail(errp, E_NOT_FOUND, "look up domain", a->name);
    int r = -1;
    if (virDomainGetUUIDString(d, uuid) < 0)
        virt_fail(errp, E_INTERNAL, "read the UUID of", a->name);
    else if (strcmp(uuid, a->uuid) != 0)
        error_set(errp, E_CONFLICT, 0, "domain %s has UUID %s, not this slot's %s", a->name, uuid,
                  a->uuid);
    else if (virDomainIsActive(d) != 1)
        error_set(errp, E_NOT_FOUND, 0, "domain %s is not running", a->name);
    else
        r = 0;
    virDomainFree(d);
    return r;
}

int
virt_is_running_uuid(Virt *v, const char *name, const char *uuid, Error **errp)
{
    NameUuid a = {name, uuid};
    return virt_run(v, op_is_running_uuid, &a, errp);
}

typedef struct {
    const char *name;
    unsigned limit_mib;
} NameLimit;

static int
op_set_hard_limit(virConnectPtr c, const void *arg, Error **errp)
{
    const NameLimit *a = arg;
    virTypedParameter param = {.type = VIR_TYPED_PARAM_ULLONG};
    snprintf(param.field, sizeof(param.field), "%s", VIR_DOMAIN_MEMORY_HARD_LIMIT);
    param.value.ul = (unsigned long long) a->limit_mib * 1024u; /* KiB */
    virDomainPtr d = virDomainLookupByName(c, a->name);
    if (!d)
        return virt_fail(errp, E_NOT_FOUND, "look up domain", a->name);
    int r = virDomainSetMemoryParameters(d, &param, 1, VIR_DOMAIN_AFFECT_LIVE);
    if (r < 0)
        virt_fail(errp, E_INTERNAL, "set memory hard limit of", a->name);
    virDomainFree(d);
    return r < 0 ? -1 : 0;
}

int
virt_set_memory_hard_limit(Virt *v, const char *name, unsigned limit_mib, Error **errp)
{
    NameLimit a = {name, limit_mib};
    return virt_run(v, op_set_hard_limit, &a, errp);
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

typedef struct {
    const char *prefix;
    char ***ret;
} ListArg;

static int
op_list(virConnectPtr c, const void *arg, Error **errp)
{
    const ListArg *a = arg;
    virDomainPtr *doms = NULL;
    int n = virConnectListAllDomains(c, &doms, 0);
    if (n < 0)
        return virt_fail(errp, E_UNAVAILABLE, "list domains", NULL);
    char **names = calloc((size_t) n + 1, sizeof(char *));
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        const char *name = virDomainGetName(doms[i]);
        if (names && name && strncmp(name, a->prefix, strlen(a->prefix)) == 0)
            names[k++] = strdup(name);
        virDomainFree(doms[i]);
    }
    free(doms);
    if (!names)
        return error_set(errp, E_INTERNAL, ENOMEM, "list domains");
    *a->ret = names;
    return 0;
}

int
virt_list_prefixed(Virt *v, const char *prefix, char ***ret_names, Error **errp)
{
    ListArg a = {prefix, ret_names};
    return virt_run(v, op_list, &a, errp);
}

/* ------------------------------------------------------------------ guest_memory = template */

/* One QMP command through libvirt (with fd passed along when >= 0). QEMU's own error replies
 * come back as a successful call: they become errors here. *ret_return (optional) gets the
 * reply's "return" member, owned by the caller. */
static int
virt_qmp(virDomainPtr d, const char *name, const char *cmd, int fd, json_t **ret_return,
         Error **errp)
{
    char *reply = NULL;
    int r = fd >= 0 ? virDomainQemuMonitorCommandWithFiles(d, cmd, 1, &fd, NULL, NULL, &reply, 0)
                    : virDomainQemuMonitorCommand(d, cmd, &reply, 0);
    if (r < 0)
        return virt_fail(errp, E_INTERNAL, "QEMU monitor command for", name);
    size_t len = strnlen(reply, VIRT_QMP_REPLY_MAX_BYTES + 1);
    json_t *root = len <= VIRT_QMP_REPLY_MAX_BYTES ? json_loadb(reply, len, 0, NULL) : NULL;
    free(reply);
    json_t *ret = json_object_get(root, "return");
    if (!ret) {
        const char *desc = json_string_value(json_object_get(json_object_get(root, "error"),
                                                             "desc"));
        error_set(errp, E_INTERNAL, 0, "QEMU of %s refused %.60s: %s", name, cmd,
                  desc ? desc : "no answer");
        json_decref(root);
        return -1;
    }
    if (ret_return)
        *ret_return = json_incref(ret);
    json_decref(root);
    return 0;
}

/* Capability on, then the state file handed to QEMU under VIRT_STATE_FD_NAME. */
static int
virt_migration_setup(virDomainPtr d, const char *name, int fd, Error **errp)
{
    static const char caps[] =
        "{\"execute\":\"migrate-set-capabilities\",\"arguments\":{\"capabilities\":"
        "[{\"capability\":\"x-ignore-shared\",\"state\":true}]}}";
    static const char getfd[] =
        "{\"execute\":\"getfd\",\"arguments\":{\"fdname\":\"" VIRT_STATE_FD_NAME "\"}}";
    if (virt_qmp(d, name, caps, -1, NULL, errp) < 0)
        return -1;
    return virt_qmp(d, name, getfd, fd, NULL, errp);
}

/* One look at query-migrate: 1 when completed, 0 while it runs, -1 when it failed. */
static int
virt_migration_status(virDomainPtr d, const char *name, char status[32], Error **errp)
{
    json_t *ret = NULL;
    if (virt_qmp(d, name, "{\"execute\":\"query-migrate\"}", -1, &ret, errp) < 0)
        return -1;
    const char *st = json_string_value(json_object_get(ret, "status"));
    snprintf(status, 32, "%s", st ? st : "none");
    const char *why = json_string_value(json_object_get(ret, "error-desc"));
    char reason[256];
    snprintf(reason, sizeof(reason), "%s", why ? why : "no reason given");
    json_decref(ret);
    if (strcmp(status, "completed") == 0)
        return 1;
    if (strcmp(status, "failed") == 0 || strcmp(status, "cancelled") == 0)
        return error_set(errp, E_INTERNAL, 0, "migration of %s %s: %s", name, status, reason);
    return 0;
}

/* Polls query-migrate until "completed"; "failed" or "cancelled" or the deadline fail. */
static int
virt_migration_wait(virDomainPtr d, const char *name, uint64_t timeout_usec, Error **errp)
{
    uint64_t deadline = now_usec() + timeout_usec;
    for (;;) {
        char status[32];
        int r = virt_migration_status(d, name, status, errp);
        if (r != 0)
            return r < 0 ? -1 : 0;
        if (now_usec() >= deadline)
            return error_set(errp, E_TIMEOUT, 0, "migration of %s still %s after %llu ms", name,
                             status, (unsigned long long) (timeout_usec / USEC_PER_MSEC));
        usleep(VIRT_MIGRATE_POLL_USEC);
    }
}

/* The device-state file is named beneath dir_fd (the pool's template folder, held open): never
 * reached through a path another user could redirect. */
typedef struct {
    const char *name_or_xml;
    int dir_fd;
    const char *state_name;
    uint64_t timeout_usec;
} TemplateArg;

static int
template_save_domain(virDomainPtr d, const TemplateArg *a, int fd, Error **errp)
{
    static const char migrate[] =
        "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"fd:" VIRT_STATE_FD_NAME "\"}}";
    if (virDomainSuspend(d) < 0)
        return virt_fail(errp, E_INTERNAL, "suspend", a->name_or_xml);
    if (virt_migration_setup(d, a->name_or_xml, fd, errp) < 0 ||
        virt_qmp(d, a->name_or_xml, migrate, -1, NULL, errp) < 0 ||
        virt_migration_wait(d, a->name_or_xml, a->timeout_usec, errp) < 0)
        return -1;
    if (fsync(fd) < 0)
        return error_set(errp, E_IO, errno, "fsync %s", a->state_name);
    return 0;
}

static int
op_template_save(virConnectPtr c, const void *arg, Error **errp)
{
    const TemplateArg *a = arg;
    (void) unlinkat(a->dir_fd, a->state_name, 0); /* a retry's, or a crashed run's */
    _cleanup_close_ int fd = openat(a->dir_fd, a->state_name,
                                    O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return error_set(errp, E_IO, errno, "create %s", a->state_name);
    virDomainPtr d = virDomainLookupByName(c, a->name_or_xml);
    if (!d)
        return virt_fail(errp, E_NOT_FOUND, "look up domain", a->name_or_xml);
    int r = template_save_domain(d, a, fd, errp);
    /* Saved or not, the template has done its work: its RAM is in the file. */
    if (virDomainDestroy(d) < 0 && virDomainIsActive(d) == 1 && r == 0)
        r = virt_fail(errp, E_INTERNAL, "destroy template domain", a->name_or_xml);
    virDomainFree(d);
    return r;
}

int
virt_template_save(Virt *v, const char *name, int dir_fd, const char *state_name,
                   uint64_t timeout_usec, Error **errp)
{
    TemplateArg a = {name, dir_fd, state_name, timeout_usec};
    return virt_run(v, op_template_save, &a, errp);
}

static int
clone_load(virDomainPtr d, const char *name, const TemplateArg *a, int fd, Error **errp)
{
    static const char incoming[] = "{\"execute\":\"migrate-incoming\",\"arguments\":"
                                   "{\"uri\":\"fd:" VIRT_STATE_FD_NAME "\"}}";
    if (virt_migration_setup(d, name, fd, errp) < 0 ||
        virt_qmp(d, name, incoming, -1, NULL, errp) < 0 ||
        virt_migration_wait(d, name, a->timeout_usec, errp) < 0)
        return -1;
    if (virDomainResume(d) < 0)
        return virt_fail(errp, E_INTERNAL, "resume clone", name);
    return 0;
}

static int
op_clone_start(virConnectPtr c, const void *arg, Error **errp)
{
    const TemplateArg *a = arg;
    _cleanup_close_ int fd = openat(a->dir_fd, a->state_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return error_set(errp, E_IO, errno, "open %s", a->state_name);
    virDomainPtr d = virDomainCreateXML(c, a->name_or_xml, VIR_DOMAIN_START_PAUSED);
    if (!d)
        return virt_fail(errp, E_INTERNAL, "create clone domain", NULL);
    char name[256];
    snprintf(name, sizeof(name), "%s", virDomainGetName(d));
    int r = clone_load(d, name, a, fd, errp);
    if (r < 0)
        (void) virDomainDestroy(d); /* never leave a half-loaded clone behind */
    virDomainFree(d);
    return r;
}

int
virt_clone_start(Virt *v, const char *xml, int dir_fd, const char *state_name,
                 uint64_t timeout_usec, Error **errp)
{
    TemplateArg a = {xml, dir_fd, state_name, timeout_usec};
    return virt_run(v, op_clone_start, &a, errp);
}

/* ------------------------------------------------------------------ pause and resume */

typedef struct {
    const char *name_or_xml;
    VirtStreamSinkFn sink;
    VirtStreamSourceFn source;
    void *userdata;
    uint64_t timeout_usec;
} StreamArg;

/* Reads what QEMU writes to fd into the sink until it closes its end, or (should anyone hold
 * a copy of it) until query-migrate says completed and nothing more is there. */
static int
pause_pump(virDomainPtr d, const StreamArg *a, int fd, Error **errp)
{
    _cleanup_free_ uint8_t *buf = malloc(VIRT_PAUSE_CHUNK_BYTES);
    if (!buf)
        return error_set(errp, E_INTERNAL, ENOMEM, "pause");
    uint64_t deadline = now_usec() + a->timeout_usec;
    bool completed = false;
    for (;;) {
        ssize_t n = read(fd, buf, VIRT_PAUSE_CHUNK_BYTES);
        if (n > 0) {
            if (a->sink(buf, (size_t) n, a->userdata, errp) < 0)
                return -1;
            continue;
        }
        if (n == 0)
            break;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN)
            return error_set(errp, E_IO, errno, "read %s's migration stream", a->name_or_xml);
        if (completed)
            break; /* completed, and drained */
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, VIRT_PAUSE_POLL_MS) > 0)
            continue;
        char status[32];
        int st = virt_migration_status(d, a->name_or_xml, status, errp);
        if (st < 0)
            return -1;
        completed = st == 1;
        if (!completed && now_usec() >= deadline)
            return error_set(errp, E_TIMEOUT, 0, "pause of %s still %s after %llu ms",
                             a->name_or_xml, status,
                             (unsigned long long) (a->timeout_usec / USEC_PER_MSEC));
    }
    return virt_migration_wait(d, a->name_or_xml, a->timeout_usec, errp);
}

static int
pause_domain(virDomainPtr d, const StreamArg *a, Error **errp)
{
    static const char bandwidth[] = "{\"execute\":\"migrate-set-parameters\",\"arguments\":"
                                    "{\"max-bandwidth\":" VIRT_PAUSE_BANDWIDTH_BYTES_PER_SEC "}}";
    static const char migrate[] =
        "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"fd:" VIRT_STATE_FD_NAME "\"}}";
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return error_set(errp, E_INTERNAL, errno, "socketpair");
    _cleanup_close_ int ours = sv[0];
    _cleanup_close_ int qemus = sv[1];
    if (fd_set_nonblock(ours, true) < 0)
        return error_set(errp, E_INTERNAL, errno, "socketpair");
    if (virDomainSuspend(d) < 0)
        return virt_fail(errp, E_INTERNAL, "suspend", a->name_or_xml);
    if (virt_qmp(d, a->name_or_xml, bandwidth, -1, NULL, errp) < 0 ||
        virt_migration_setup(d, a->name_or_xml, qemus, errp) < 0)
        return -1;
    close(TAKE_FD(qemus)); /* QEMU's copy is the one left: its close is our EOF */
    if (virt_qmp(d, a->name_or_xml, migrate, -1, NULL, errp) < 0)
        return -1;
    return pause_pump(d, a, ours, errp);
}

static int
op_clone_pause(virConnectPtr c, const void *arg, Error **errp)
{
    const StreamArg *a = arg;
    virDomainPtr d = virDomainLookupByName(c, a->name_or_xml);
    if (!d)
        return virt_fail(errp, E_NOT_FOUND, "look up domain", a->name_or_xml);
    int r = pause_domain(d, a, errp);
    virDomainFree(d);
    return r;
}

int
virt_clone_pause(Virt *v, const char *name, VirtStreamSinkFn sink, void *userdata,
                 uint64_t timeout_usec, Error **errp)
{
    StreamArg a = {
        .name_or_xml = name, .sink = sink, .userdata = userdata, .timeout_usec = timeout_usec};
    return virt_run(v, op_clone_pause, &a, errp);
}

static int
op_resume(virConnectPtr c, const void *arg, Error **errp)
{
    virDomainPtr d = virDomainLookupByName(c, arg);
    if (!d)
        return virt_fail(errp, E_NOT_FOUND, "look up domain", arg);
    int r = virDomainResume(d) < 0 ? virt_fail(errp, E_INTERNAL, "resume", arg) : 0;
    virDomainFree(d);
    return r;
}

int
virt_resume(Virt *v, const char *name, Error **errp)
{
    return virt_run(v, op_resume, name, errp);
}

static int
resume_load(virDomainPtr d, const char *name, const StreamArg *a, Error **errp)
{
    static const char incoming[] = "{\"execute\":\"migrate-incoming\",\"arguments\":"
                                   "{\"uri\":\"fd:" VIRT_STATE_FD_NAME "\"}}";
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return error_set(errp, E_INTERNAL, errno, "socketpair");
    _cleanup_close_ int ours = sv[0];
    _cleanup_close_ int qemus = sv[1];
    struct timeval tv = {.tv_sec = (time_t) (a->timeout_usec / USEC_PER_SEC),
                         .tv_usec = (suseconds_t) (a->timeout_usec % USEC_PER_SEC)};
    if (setsockopt(ours, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
        return error_set(errp, E_INTERNAL, errno, "socket timeout");
    if (virt_migration_setup(d, name, qemus, errp) < 0)
        return -1;
    close(TAKE_FD(qemus));
    if (virt_qmp(d, name, incoming, -1, NULL, errp) < 0 || a->source(ours, a->userdata, errp) < 0)
        return -1;
    (void) shutdown(ours, SHUT_WR);
    if (virt_migration_wait(d, name, a->timeout_usec, errp) < 0)
        return -1;
    if (virDomainResume(d) < 0)
        return virt_fail(errp, E_INTERNAL, "resume", name);
    return 0;
}

static int
op_clone_resume(virConnectPtr c, const void *arg, Error **errp)
{
    const StreamArg *a = arg;
    virDomainPtr d = virDomainCreateXML(c, a->name_or_xml, VIR_DOMAIN_START_PAUSED);
    if (!d)
        return virt_fail(errp, E_INTERNAL, "create domain to resume into", NULL);
    char name[256];
    snprintf(name, sizeof(name), "%s", virDomainGetName(d));
    int r = resume_load(d, name, a, errp);
    if (r < 0)
        (void) virDomainDestroy(d); /* never leave a half-loaded guest behind */
    virDomainFree(d);
    return r;
}

int
virt_clone_resume(Virt *v, const char *xml, VirtStreamSourceFn source, void *userdata,
                  uint64_t timeout_usec, Error **errp)
{
    StreamArg a = {
        .name_or_xml = xml, .source = source, .userdata = userdata, .timeout_usec = timeout_usec};
    return virt_run(v, op_clone_resume, &a, errp);
}

static int
op_version(virConnectPtr c, const void *arg, Error **errp)
{
    if (virConnectGetVersion(c, (unsigned long *) arg) < 0)
        return virt_fail(errp, E_UNAVAILABLE, "hypervisor version", NULL);
    return 0;
}

int
virt_hypervisor_version(Virt *v, unsigned long *ret, Error **errp)
{
    unsigned long version = 0;
    if (virt_run(v, op_version, &version, errp) < 0)
        return -1;
    *ret = version;
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
    char want[128];

    if (pid <= 1)
        return -1;
    snprintf(want, sizeof(want), "guest=%s,", name);
    if (!proc_cmdline_contains(pid, want))
        return -1;
    return kill(pid, SIGKILL);
}

bool
virt_pid_gone(pid_t pid)
{
    ProcStat st;
    if (proc_stat_read(pid, &st) < 0)
        return errno != EINVAL; /* a line that does not parse is no proof it is gone */
    return st.state == 'Z' || st.state == 'X';
}
