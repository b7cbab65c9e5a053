/* See doctor.h. */
#include "doctor.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "events.h"
#include "fdutil.h"
#include "images.h"
#include "log.h"
#include "output.h"

#define DOCTOR_CAPTURE_MAX_BYTES 4096 /* of `qemu --version` */
#define KVM_API_VERSION_EXPECTED 12

static void say(DoctorResult *r, DoctorLevel level, const char *fix, const char *fmt, ...)
    _printf_(4, 5);

static void
say(DoctorResult *r, DoctorLevel level, const char *fix, const char *fmt, ...)
{
    va_list ap;
    r->level = level;
    va_start(ap, fmt);
    vsnprintf(r->message, sizeof(r->message), fmt, ap);
    va_end(ap);
    snprintf(r->fix, sizeof(r->fix), "%s", fix ? fix : "");
}

const char *
doctor_level_name(DoctorLevel l)
{
    return l == DOCTOR_OK ? "OK" : l == DOCTOR_WARN ? "WARN" : "FAIL";
}

void
doctor_check_kvm(DoctorEnv *env, DoctorResult *r)
{
    (void) env;
    r->check = "kvm";
    _cleanup_close_ int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        say(r, DOCTOR_WARN,
            "enable VT-x/AMD-V in the firmware and load kvm_intel or kvm_amd (in a VM: enable "
            "nested virtualisation); production wants [daemon] accel = kvm",
            "no /dev/kvm: guests will run under TCG (software emulation, many times slower)");
        return;
    }
    if (fd < 0) {
        say(r, DOCTOR_WARN, geteuid() ? "run doctor as root (the daemon runs as root)" : NULL,
            "/dev/kvm is present but not usable here: %s", strerror(errno));
        return;
    }
    int v = ioctl(fd, KVM_GET_API_VERSION, 0);
    if (v != KVM_API_VERSION_EXPECTED) {
        say(r, DOCTOR_WARN, "check the host kernel's KVM module",
            "/dev/kvm answers API version %d, not %d", v, KVM_API_VERSION_EXPECTED);
        return;
    }
    say(r, DOCTOR_OK, NULL,
        "/dev/kvm is present and usable (API %d); accel=auto still proves it by booting a guest "
        "when the daemon starts",
        v);
}

/* 0 if something accepts connections on the unix socket path, else -1 with errno. */
static int
unix_connect_probe(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    return connect(fd, (struct sockaddr *) &sa, sizeof(sa));
}

void
doctor_check_libvirtd(DoctorEnv *env, DoctorResult *r)
{
    r->check = "libvirtd";
    if (unix_connect_probe(env->libvirt_socket) < 0) {
        say(r, DOCTOR_FAIL,
            "start it: systemctl start libvirtd (without systemd: libvirtd -d); packages "
            "libvirt-daemon-system and libvirt-daemon-driver-qemu",
            "libvirtd is not reachable at %s: %s", env->libvirt_socket, strerror(errno));
        return;
    }
    say(r, DOCTOR_OK, NULL, "libvirtd answers at %s", env->libvirt_socket);
}

void
doctor_check_virtlogd(DoctorEnv *env, DoctorResult *r)
{
    char path[512];
    const char *slash = strrchr(env->libvirt_socket, '/');
    int dir_len = slash ? (int) (slash - env->libvirt_socket) : 0;

    r->check = "virtlogd";
    snprintf(path, sizeof(path), "%.*s/virtlogd-sock", dir_len, env->libvirt_socket);
    if (unix_connect_probe(path) < 0) {
        say(r, DOCTOR_FAIL,
            "start it: systemctl start virtlogd (without systemd: virtlogd -d); libvirt "
            "cannot start guests without it",
            "virtlogd is not running (no answer at %s: %s)", path, strerror(errno));
        return;
    }
    say(r, DOCTOR_OK, NULL, "virtlogd answers at %s", path);
}

/* First line of `exe --version`, at most DOCTOR_CAPTURE_MAX_BYTES read. */
static int
capture_version(const char *exe, char *out, size_t cap)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(p[1], STDOUT_FILENO);
        int devnull = open("/dev/null", O_RDWR);
        dup2(devnull, STDIN_FILENO);
        dup2(devnull, STDERR_FILENO);
        execl(exe, exe, "--version", (char *) NULL);
        _exit(127);
    }
    safe_close(p[1]);
    char buf[DOCTOR_CAPTURE_MAX_BYTES + 1];
    size_t got = 0;
    if (pid > 0)
        (void) read_full(p[0], buf, DOCTOR_CAPTURE_MAX_BYTES, &got);
    safe_close(p[0]);
    int status = 0;
    while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -1;
    buf[got] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    log_escape(out, cap, buf, strlen(buf));
    return 0;
}

void
doctor_check_qemu(DoctorEnv *env, DoctorResult *r)
{
    char version[160];
    r->check = "qemu";
    if (access(env->qemu, X_OK) < 0) {
        say(r, DOCTOR_FAIL, "apt-get install qemu-system-x86", "no QEMU at %s: %s", env->qemu,
            strerror(errno));
        return;
    }
    if (capture_version(env->qemu, version, sizeof(version)) < 0) {
        say(r, DOCTOR_FAIL, "reinstall qemu-system-x86", "%s --version failed", env->qemu);
        return;
    }
    say(r, DOCTOR_OK, NULL, "%s (%s)", version, env->qemu);
}

void
doctor_check_daemon(DoctorEnv *env, DoctorResult *r)
{
    _cleanup_error_ Error *err = NULL;
    r->check = "daemon";
    if (!env->client ||
        client_json(env->client, "GET", "/v1/health", NULL, &env->health, &err) < 0) {
        say(r, DOCTOR_FAIL,
            "start it: systemctl start stockaded (or stockaded -c /etc/stockade/stockaded.conf); "
            "or point --socket/--url at it",
            "stockaded does not answer: %s", err ? err->message : "no client");
        return;
    }
    (void) client_json(env->client, "GET", "/v1/pool", NULL, &env->pool, NULL);
    char v[64];
    const char *ver = event_str(env->health, "version", "?");
    log_escape(v, sizeof(v), ver, strlen(ver));
    say(r, DOCTOR_OK, NULL, "stockaded %s answers at %s", v, client_where(env->client));
}

/* Appends "sep" then the formatted text to out (cap bytes), cut at the end: a list of hosts
 * that does not fit is shortened, never overrun. */
static void append(char *out, size_t cap, const char *sep, const char *fmt, ...) _printf_(4, 5);

static void
append(char *out, size_t cap, const char *sep, const char *fmt, ...)
{
    size_t used = strlen(out);
    va_list ap;
    if (used + 1 >= cap)
        return;
    if (used > 0)
        used += (size_t) snprintf(out + used, cap - used, "%s", sep);
    if (used + 1 >= cap)
        return;
    va_start(ap, fmt);
    vsnprintf(out + used, cap - used, fmt, ap);
    va_end(ap);
}

/* The host's field as printable text (the database is other hosts' word). */
static const char *
host_field(json_t *h, const char *key, char *out, size_t cap)
{
    const char *raw = event_str(h, key, "?");
    return log_escape(out, cap, raw, strlen(raw));
}

/* Lost hosts as "id (taken over by X at T)" in lost, live hosts silent past the lease as
 * "id (N s)" in silent; their counts. A lost host is only lost: its heartbeat is stale by
 * definition, and what the operator must know is that its sessions were ended elsewhere. */
static void
hosts_classify(json_t *hosts, int64_t lease_ms, char *lost, char *silent, size_t cap,
               size_t *ret_lost, size_t *ret_silent)
{
    char id[64], by[64], at[40];
    *ret_lost = *ret_silent = 0;
    lost[0] = silent[0] = '\0';
    for (size_t i = 0; i < json_array_size(hosts); i++) {
        json_t *h = json_array_get(hosts, i);
        long long age = event_int(h, "heartbeat_age_ms", 0);
        host_field(h, "id", id, sizeof(id));
        if (strcmp(event_str(h, "state", "live"), "lost") == 0) {
            append(lost, cap, ", ", "%s (taken over by %s at %s)", id,
                   host_field(h, "lost_by", by, sizeof(by)),
                   host_field(h, "lost_at", at, sizeof(at)));
            (*ret_lost)++;
        } else if (age > lease_ms) {
            append(silent, cap, ", ", "%s (%lld s)", id, age / 1000);
            (*ret_silent)++;
        }
    }
}

void
doctor_cluster_verdict(json_t *ans, DoctorResult *r)
{
    char lost[DOCTOR_HOSTS_TEXT_BYTES], silent[DOCTOR_HOSTS_TEXT_BYTES];
    char fix[DOCTOR_TEXT_MAX_BYTES] = "", msg[DOCTOR_TEXT_MAX_BYTES] = "";
    json_t *hosts = json_object_get(ans, "hosts");
    int64_t lease_ms = event_int(ans, "lease_ms", 0);
    size_t n = json_array_size(hosts), n_lost, n_silent;

    r->check = "cluster";
    if (lease_ms <= 0) /* a daemon from before lease_ms was answered */
        lease_ms = DOCTOR_CLUSTER_LEASE_MS;
    hosts_classify(hosts, lease_ms, lost, silent, sizeof(lost), &n_lost, &n_silent);
    if (n_lost + n_silent == 0) {
        say(r, DOCTOR_OK, NULL,
            "the database answers; %zu host%s, every heartbeat fresh (lease %lld s)", n,
            n == 1 ? "" : "s", (long long) (lease_ms / 1000));
        return;
    }
    if (n_lost) {
        append(msg, sizeof(msg), "; ", "%zu of %zu hosts lost (silent past the %lld s lease): %s",
               n_lost, n, (long long) (lease_ms / 1000), lost);
        append(fix, sizeof(fix), "; ", "%s",
               "start stockaded on the lost host again (it rejoins; its sessions ended host_lost)");
    }
    if (n_silent) {
        append(msg, sizeof(msg), "; ", "%zu of %zu hosts silent for over the %lld s lease: %s",
               n_silent, n, (long long) (lease_ms / 1000), silent);
        append(fix, sizeof(fix), "; ", "%s",
               "start stockaded there, or remove the host from the cluster");
    }
    say(r, DOCTOR_WARN, fix, "%s", msg);
}

/* Cluster mode (issue 16): the shared database answers through the daemon, no host is lost
 * and every live host beat within the cluster's lease (lease_ms of the answer). A daemon
 * without [cluster] has nothing to check. */
void
doctor_check_cluster(DoctorEnv *env, DoctorResult *r)
{
    _cleanup_error_ Error *err = NULL;
    _cleanup_json_ json_t *ans = NULL;

    r->check = "cluster";
    if (!env->health) {
        say(r, DOCTOR_WARN, "start the daemon", "unknown: the daemon did not answer");
        return;
    }
    if (client_json(env->client, "GET", "/v1/admin/hosts", NULL, &ans, &err) < 0) {
        if (err->category == E_NOT_FOUND)
            say(r, DOCTOR_OK, NULL, "a single host (no [cluster]): nothing to check");
        else if (err->category == E_UNAUTHORIZED || err->category == E_FORBIDDEN)
            say(r, DOCTOR_WARN, "run doctor on the daemon's host (its unix socket)",
                "needs an operator to see the cluster: %s", err->message);
        else
            say(r, DOCTOR_FAIL, "start PostgreSQL, or fix [cluster] database in stockaded.conf",
                "the cluster's database does not answer: %s", err->message);
        return;
    }
    doctor_cluster_verdict(ans, r);
}

void
doctor_check_accel(DoctorEnv *env, DoctorResult *r)
{
    char accel[24], why[240];
    const char *a = event_str(env->pool, "accel", "?"),
               *w = event_str(env->pool, "accel_reason", "");

    r->check = "accel";
    if (!env->pool) {
        say(r, DOCTOR_WARN, "start the daemon to see its choice",
            "unknown: the daemon did not "
            "answer GET /v1/pool");
        return;
    }
    log_escape(accel, sizeof(accel), a, strlen(a));
    log_escape(why, sizeof(why), w, strlen(w));
    if (!json_is_true(json_object_get(env->pool, "accel_decided")))
        say(r, DOCTOR_WARN, "wait a few seconds and run doctor again",
            "the daemon is still deciding (accel=auto proves KVM by booting a guest)");
    else if (strcmp(a, "kvm") == 0)
        say(r, DOCTOR_OK, NULL, "the daemon runs guests under kvm%s%s", why[0] ? ": " : "", why);
    else
        say(r, DOCTOR_WARN,
            "see the kvm check above; with working KVM restart the daemon (accel=auto re-probes "
            "when the host boots again) or set [daemon] accel = kvm",
            "the daemon runs guests under %s (slow): %s", accel, why[0] ? why : "no reason given");
}

/* Pools the daemon has whose name matches no image here. */
static size_t
pools_without_image(json_t *pool, const ImageInfo *v, size_t n, char *names, size_t cap)
{
    json_t *pools = json_object_get(pool, "pools");
    size_t missing = 0;
    names[0] = '\0';
    for (size_t i = 0; i < json_array_size(pools); i++) {
        const char *name = event_str(json_array_get(pools, i), "name", "");
        bool found = false;
        for (size_t k = 0; k < n && !found; k++)
            found = strcmp(v[k].name, name) == 0;
        if (!found && missing++ < 4)
            snprintf(names + strlen(names), cap - strlen(names), "%s%.32s", names[0] ? ", " : "",
                     name);
    }
    return missing;
}

static void
images_verdict(DoctorEnv *env, DoctorResult *r, const ImageInfo *v, size_t n)
{
    char list[200] = "", missing[160];
    for (size_t i = 0; i < n; i++) {
        if (!v[i].ok) {
            say(r, DOCTOR_FAIL,
                "rebuild it: stockade image build NAME (as root), then restart "
                "the daemon",
                "image %s in %s is broken: %s", v[i].name, env->image_dir, v[i].problem);
            return;
        }
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "",
                 v[i].name);
    }
    if (env->pool && pools_without_image(env->pool, v, n, missing, sizeof(missing)) > 0) {
        say(r, DOCTOR_WARN, "check the daemon's image_dir and the pools' image = keys",
            "%zu image%s in %s (%s), but no image named like pool(s) %s", n, n == 1 ? "" : "s",
            env->image_dir, list, missing);
        return;
    }
    say(r, DOCTOR_OK, NULL, "%zu image%s with valid manifests in %s: %s", n, n == 1 ? "" : "s",
        env->image_dir, list);
}

void
doctor_check_images(DoctorEnv *env, DoctorResult *r)
{
    _cleanup_error_ Error *err = NULL;
    ImageInfo *v = NULL;
    size_t n = 0;

    r->check = "images";
    if (images_scan(env->image_dir, env->verify_images, &v, &n, &err) < 0 || n == 0) {
        say(r, DOCTOR_FAIL,
            "build them: cmake --build BUILD (or stockade image build NAME as root); or point "
            "--image-dir at them",
            "no images in %s%s%s", env->image_dir, err ? ": " : "", err ? err->message : "");
        free(v);
        return;
    }
    images_verdict(env, r, v, n);
    free(v);
}

void
doctor_check_snapshots(DoctorEnv *env, DoctorResult *r)
{
    char dir[1100];
    size_t saves = 0;
    struct dirent *de;

    r->check = "snapshots";
    snprintf(dir, sizeof(dir), "%s/snapshots", env->state_dir);
    DIR *d = opendir(dir);
    if (!d) {
        say(r, DOCTOR_WARN,
            "start the daemon: it makes one snapshot per pool slot (under TCG ~30-60 s the "
            "first time); or point --state-dir at its state directory",
            "no snapshots yet (%s: %s)", dir, strerror(errno));
        return;
    }
    while ((de = readdir(d)))
        if (strlen(de->d_name) > 5 && strcmp(de->d_name + strlen(de->d_name) - 5, ".save") == 0)
            saves++;
    closedir(d);
    if (saves == 0) {
        say(r, DOCTOR_WARN, "start the daemon and wait for its pools to fill (stockade pool)",
            "%s holds no snapshots yet", dir);
        return;
    }
    say(r, DOCTOR_OK, NULL, "%zu snapshot%s in %s", saves, saves == 1 ? "" : "s", dir);
}

void
doctor_check_disk(DoctorEnv *env, DoctorResult *r)
{
    char path[1100], size[16];
    struct statvfs vfs;

    r->check = "disk";
    snprintf(path, sizeof(path), "%s", env->state_dir);
    while (statvfs(path, &vfs) < 0) { /* the nearest existing ancestor */
        char *slash = strrchr(path, '/');
        if (!slash || slash == path) {
            snprintf(path, sizeof(path), "/");
            if (statvfs(path, &vfs) < 0) {
                say(r, DOCTOR_FAIL, NULL, "statvfs failed: %s", strerror(errno));
                return;
            }
            break;
        }
        *slash = '\0';
    }
    uint64_t free_bytes = (uint64_t) vfs.f_bavail * vfs.f_frsize;
    format_bytes(free_bytes, size, sizeof(size));
    if (free_bytes < DOCTOR_DISK_FAIL_BYTES)
        say(r, DOCTOR_FAIL, "free space, or move state_dir to a larger disk",
            "only %s free for %s (snapshots, workspaces and artifacts need more than 1 GiB)", size,
            path);
    else if (free_bytes < DOCTOR_DISK_WARN_BYTES)
        say(r, DOCTOR_WARN, "free space, or lower [sessions] artifact_max_total_gib",
            "%s free for %s (less than 5 GiB)", size, path);
    else
        say(r, DOCTOR_OK, NULL, "%s free for %s", size, path);
}
