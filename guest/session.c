/* Hello and Shutdown: the session's start and end.
 *
 * Hello (PID 1 only: clock, entropy, hostname, mount): clock_settime(CLOCK_REALTIME) from
 * the host; RNDADDENTROPY with the 64 host bytes credited as 512 bits, then RNDRESEEDCRNG,
 * so guests restored from one snapshot stop sharing CRNG state (the runner never reads
 * randomness itself); mount the workspace device (ext4, nosuid, nodev) on the workspace;
 * then in every mode chown the workspace root to uid:gid and remember env/uid/gid; start the
 * mirror if asked. The workspace is never opened before Hello or Prepare.
 *
 * Prepare (a restored guest waiting in the pool, before any session): mount the workspace and
 * run one warm-up exec as WARMUP_UID through the whole exec path, so a TCG guest has
 * translated that code before the session's first exec. Hello then skips the mount.
 * The workspace is mounted with commit=1: ext4 commits its journal every second (data=ordered
 * writes data first), so a guest destroyed without warning loses at most ~1 s of closed files.
 * Prepare also proves the workspace writable (syncfs: the mount's own writes reach the disk
 * or fail now), so a guest restored while the host's disk was full fails in the pool instead
 * of handing a read-only workspace to a session. */
#include <errno.h>
#include <fcntl.h>
#include <linux/random.h>
#include <poll.h>
#include <string.h>
#include <stdio.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "guest_limits.h"
#include "serve_internal.h"
#include "timeutil.h"
#include "wspath.h"

/* struct rand_pool_info with its flexible array sized for the Hello entropy. */
typedef struct EntropyPool {
    int entropy_count; /* bits credited */
    int buf_size;      /* bytes */
    uint8_t buf[HELLO_ENTROPY_BYTES];
} EntropyPool;

static int
session_seed_entropy(const uint8_t bytes[HELLO_ENTROPY_BYTES], Error **errp)
{
    EntropyPool pool = {.entropy_count = HELLO_ENTROPY_BYTES * 8, .buf_size = HELLO_ENTROPY_BYTES};

    memcpy(pool.buf, bytes, HELLO_ENTROPY_BYTES);
    /* Opened for writing only: the runner never reads randomness (see init.c). */
    _cleanup_close_ int fd = open("/dev/urandom", O_WRONLY | O_CLOEXEC);
    int r = fd < 0 || ioctl(fd, RNDADDENTROPY, &pool) < 0 || ioctl(fd, RNDRESEEDCRNG) < 0;
    explicit_bzero(&pool, sizeof(pool));
    return r ? error_set(errp, E_IO, errno, "mix in host entropy") : 0;
}

static int
session_set_clock(uint64_t wall_time_ns, Error **errp)
{
    struct timespec ts = {.tv_sec = (time_t) (wall_time_ns / NSEC_PER_SEC),
                          .tv_nsec = (long) (wall_time_ns % NSEC_PER_SEC)};
    return clock_settime(CLOCK_REALTIME, &ts) < 0 ? error_set(errp, E_IO, errno, "set the clock")
                                                  : 0;
}

/* Takes the paths Hello will take (chown of the workspace root, an inotify watch on it) so a
 * TCG guest has them translated before a session waits on them. Effects are undone: Hello
 * chowns again, the watch is closed. */
static void
session_warm_hello_paths(int ws)
{
    if (fchownat(ws, "", WARMUP_UID, WARMUP_UID, AT_EMPTY_PATH) < 0)
        return; /* only a warm-up: Hello does the real chown and reports its failure */
    int in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (in >= 0) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/self/fd/%d", ws);
        (void) inotify_add_watch(in, path, IN_CLOSE_WRITE | IN_CREATE | IN_DELETE);
        close(in);
    }
}

/* E2B's home (issue 28): the workspace bind-mounted on WS_HOME_PATH, so that getcwd() of a
 * program started there, and every path it computes, says /home/user as in an E2B sandbox
 * (a symlink would resolve to /workspace). nosuid and nodev like the workspace's own mount.
 * Only where the image has that directory (the project's images do; an imported one may
 * not): else execs whose cwd names it run in the workspace under its own name. */
static void
session_mount_home(Server *s)
{
    struct stat st;

    if (lstat(WS_HOME_PATH, &st) < 0 || !S_ISDIR(st.st_mode))
        return;
    if (mount(s->cfg->workspace, WS_HOME_PATH, NULL, MS_BIND, NULL) < 0)
        return;
    if (mount(NULL, WS_HOME_PATH, NULL, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV, NULL) < 0) {
        (void) umount2(WS_HOME_PATH, MNT_DETACH);
        return;
    }
    s->session.home_mounted = true;
}

static int
session_mount_workspace(Server *s, const char *device, Error **errp)
{
    if (s->session.mounted)
        return 0;
    if (mount(device, s->cfg->workspace, "ext4", MS_NOSUID | MS_NODEV, "commit=1") < 0)
        return error_set(errp, E_IO, errno, "mount %s on %s", device, s->cfg->workspace);
    s->session.mounted = true;
    session_mount_home(s);
    return 0;
}

int
session_workspace_check(const char *workspace, bool sync, Error **errp)
{
    struct statvfs st;
    _cleanup_close_ int fd = open(workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return error_set(errp, E_IO, errno, "open the workspace");
    if (sync && syncfs(fd) < 0) /* reports the disk's write errors since the mount */
        return error_set(errp, E_IO, errno, "the workspace disk cannot be written");
    if (fstatvfs(fd, &st) < 0)
        return error_set(errp, E_IO, errno, "statvfs the workspace");
    if (st.f_flag & ST_RDONLY) /* ext4 remounts read-only when its journal hits an I/O error */
        return error_set(errp, E_IO, EROFS, "the workspace went read-only (a disk error)");
    return 0;
}

int
session_prepare(Server *s, const Stockade__Runner__Prepare *p, uint32_t req_id, bool *ret_started,
                Error **errp)
{
    Stockade__Runner__Exec x = STOCKADE__RUNNER__EXEC__INIT;
    EnvList none = {0};

    s->session.prepared = true;
    if (s->cfg->pid1 && (session_set_clock(p->wall_time_ns, errp) < 0 ||
                         session_seed_entropy(p->entropy.data, errp) < 0 ||
                         session_mount_workspace(s, p->workspace_device, errp) < 0))
        return -1;
    *ret_started = false;
    _cleanup_close_ int ws = open(s->cfg->workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (ws < 0)
        return error_set(errp, E_IO, errno, "open the workspace");
    session_warm_hello_paths(ws);
    if (p->warm_parked)
        exec_park_warm(s->execs);
    if (s->cfg->pid1 && session_workspace_check(s->cfg->workspace, true, errp) < 0)
        return -1;
    if (p->n_warmup_argv == 0)
        return 0;
    ExecContext ctx = {.ws_fd = ws,
                       .home = s->cfg->workspace,
                       .uid = WARMUP_UID,
                       .gid = WARMUP_UID,
                       .session_env = &none};
    x.exec_id = EXEC_ID_WARMUP;
    x.argv = p->warmup_argv;
    x.n_argv = p->n_warmup_argv;
    x.cwd = "";
    if (exec_start(s->execs, &ctx, &x, req_id, errp) < 0) /* forks here: ws may close after */
        return -1;
    *ret_started = true;
    return 0;
}

int
session_prestart(Server *s, const Stockade__Runner__Prestart *p, uint32_t req_id, Error **errp)
{
    EnvList none = {0};
    /* cwd /: the workspace is not mounted yet (Prepare does it), nor the session's (Hello) */
    _cleanup_close_ int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0)
        return error_set(errp, E_IO, errno, "open /");
    ExecContext ctx = {.ws_fd = root,
                       .home = s->cfg->workspace,
                       .uid = p->uid,
                       .gid = p->gid,
                       .session_env = &none};
    return exec_park(s->execs, &ctx, p->argv, p->n_argv, req_id, errp); /* forks here */
}

static int
session_guest_setup(Server *s, const Stockade__Runner__Hello *h, Error **errp)
{
    const Stockade__Runner__SessionConfig *c = h->config;

    if (session_set_clock(h->wall_time_ns, errp) < 0 ||
        session_seed_entropy(h->entropy.data, errp) < 0)
        return -1;
    if (c->hostname[0] && sethostname(c->hostname, strlen(c->hostname)) < 0)
        return error_set(errp, E_IO, errno, "set the hostname");
    return session_mount_workspace(s, c->workspace_device, errp);
}

/* With egress, every exec gets the proxy in its environment, before the session's own
 * variables (which may replace them). */
static int
session_env_new(const Stockade__Runner__SessionConfig *c, const ImageCfg *image,
                uint16_t proxy_port, EnvList *ret)
{
    static const char *const proxy_vars[] = {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
                                             "https_proxy"};
    EnvList env = {0};
    char url[sizeof(PROXY_URL_FORMAT) + 8];

    snprintf(url, sizeof(url), PROXY_URL_FORMAT, (unsigned) proxy_port);
    for (size_t i = 0; image && i < image->env.n; i++) { /* the image's Env comes first */
        const char *kv = image->env.items[i], *eq = strchr(kv, '=');
        _cleanup_free_ char *name = strndup(kv, (size_t) (eq - kv));
        if (!name || env_list_set(&env, name, eq + 1) < 0)
            goto fail_clear;
    }
    for (size_t i = 0; c->egress && i < ELEMENTSOF(proxy_vars); i++)
        if (env_list_set(&env, proxy_vars[i], url) < 0)
            goto fail_clear;
    if ((c->egress && (env_list_set(&env, "NO_PROXY", PROXY_NO_PROXY) < 0 ||
                       env_list_set(&env, "no_proxy", PROXY_NO_PROXY) < 0)) ||
        env_list_add_vars(&env, c->env, c->n_env) < 0)
        goto fail_clear;
    *ret = env;
    return 0;

fail_clear:
    env_list_clear(&env);
    return -1;
}

int
session_hello(Server *s, const Stockade__Runner__Hello *h, Error **errp)
{
    const Stockade__Runner__SessionConfig *c = h->config;
    Session *ss = &s->session;

    if (s->cfg->pid1 && session_guest_setup(s, h, errp) < 0)
        return -1;
    _cleanup_close_ int ws = open(s->cfg->workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (ws < 0)
        return error_set(errp, E_IO, errno, "open the workspace");
    /* An image with a User of its own runs its execs as that user (imagecfg.h). */
    const ImageCfg *image = s->cfg->image;
    uid_t uid = image && image->has_user ? image->uid : c->uid;
    gid_t gid = image && image->has_user ? image->gid : c->gid;
    if (fchownat(ws, "", uid, gid, AT_EMPTY_PATH) < 0)
        return error_set(errp, E_IO, errno, "chown the workspace");
    EnvList env = {0};
    if (session_env_new(c, image, s->cfg->proxy_port, &env) < 0)
        return error_set(errp, E_INTERNAL, ENOMEM, "session env");
    if (c->egress &&
        !(s->proxy = proxy_new(&s->q, s->cfg->proxy_port, c->egress->max_streams, errp))) {
        env_list_clear(&env);
        return -1;
    }
    if (c->mirror &&
        !(s->mirror = mirror_new(ws, c->mirror->budget_bytes, c->mirror->max_file_bytes, errp))) {
        proxy_free(TAKE_PTR(s->proxy));
        env_list_clear(&env);
        return -1;
    }
    ss->env = env;
    ss->uid = uid;
    ss->gid = gid;
    ss->ws_fd = TAKE_FD(ws);
    ss->ready = true;
    return 0;
}

void
session_clear(Session *ss)
{
    env_list_clear(&ss->env);
    ss->ws_fd = safe_close(ss->ws_fd);
    ss->ready = false;
}

/* Reaps until every exec tree is empty or the deadline passes. */
static void
session_wait_execs(Server *s)
{
    uint64_t deadline = now_usec() + SHUTDOWN_KILL_WAIT_MSEC * USEC_PER_MSEC;
    struct signalfd_siginfo si;

    while (!exec_all_gone(s->execs)) {
        uint64_t now = now_usec();
        if (now >= deadline)
            break;
        struct pollfd p = {.fd = s->sig_fd, .events = POLLIN};
        (void) poll(&p, 1, (int) MIN((deadline - now) / USEC_PER_MSEC + 1, 100u));
        while (read(s->sig_fd, &si, sizeof(si)) > 0)
            ;
        (void) exec_reap(s->execs, NULL);
    }
}

int
session_finalize(Server *s, const Stockade__Runner__Finalize *f, uint32_t req_id, Error **errp)
{
    s->finalizing = true;
    s->finalize_req_id = req_id;
    exec_kill_all(s->execs);
    session_wait_execs(s);
    proxy_free(TAKE_PTR(s->proxy));
    _cleanup_close_ int fd = openat(s->session.ws_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || syncfs(fd) < 0) /* the salvage, should the host need it, sees everything */
        return error_set(errp, E_IO, errno, "sync the workspace");
    if (s->mirror && mirror_on_events(s->mirror, errp) < 0) /* closes of the last moments */
        return -1;
    s->manifest = manifest_walk_new(s->session.ws_fd, f, errp);
    return s->manifest ? 0 : -1;
}

int
session_shutdown(Server *s, Error **errp)
{
    exec_kill_all(s->execs);
    session_wait_execs(s);
    manifest_walk_free(TAKE_PTR(s->manifest));
    mirror_free(s->mirror);
    s->mirror = NULL;
    proxy_free(TAKE_PTR(s->proxy)); /* before the unmount: clients may hold workspace files */
    s->session.ws_fd = safe_close(s->session.ws_fd);
    if (!s->cfg->pid1)
        return 0;
    sync();
    if (!s->session.mounted)
        return 0;
    s->session.mounted = false;
    if (s->session.home_mounted) /* first: the workspace's superblock outlives every mount */
        (void) umount2(WS_HOME_PATH, MNT_DETACH);
    s->session.home_mounted = false;
    if (umount2(s->cfg->workspace, 0) < 0) {
        int e = errno;
        (void) umount2(s->cfg->workspace, MNT_DETACH);
        sync();
        return error_set(errp, E_IO, e, "unmount the workspace (detached instead)");
    }
    return 0;
}
