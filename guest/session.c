/* Hello and Shutdown: the session's start and end.
 *
 * Hello (PID 1 only: clock, entropy, hostname, mount): clock_settime(CLOCK_REALTIME) from
 * the host; RNDADDENTROPY with the 64 host bytes credited as 512 bits, then RNDRESEEDCRNG,
 * so guests restored from one snapshot stop sharing CRNG state (the runner never reads
 * randomness itself); mount the workspace device (ext4, nosuid, nodev) on the workspace;
 * then in every mode chown the workspace root to uid:gid and remember env/uid/gid; start the
 * mirror if asked. The workspace is never opened before Hello. */
#include <errno.h>
#include <fcntl.h>
#include <linux/random.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "guest_limits.h"
#include "serve_int.h"
#include "timeutil.h"

/* struct rand_pool_info with its flexible array sized for the Hello entropy. */
typedef struct EntropyPool {
    int entropy_count; /* bits credited */
    int buf_size;      /* bytes */
    uint8_t buf[HELLO_ENTROPY_BYTES];
} EntropyPool;

static int
session_seed_entropy(const Stockade__Runner__Hello *h, Error **errp)
{
    EntropyPool pool = {.entropy_count = HELLO_ENTROPY_BYTES * 8, .buf_size = HELLO_ENTROPY_BYTES};

    memcpy(pool.buf, h->entropy.data, HELLO_ENTROPY_BYTES);
    /* Opened for writing only: the runner never reads randomness (see init.c). */
    _cleanup_close_ int fd = open("/dev/urandom", O_WRONLY | O_CLOEXEC);
    int r = fd < 0 || ioctl(fd, RNDADDENTROPY, &pool) < 0 || ioctl(fd, RNDRESEEDCRNG) < 0;
    explicit_bzero(&pool, sizeof(pool));
    return r ? error_set(errp, E_IO, errno, "mix in host entropy") : 0;
}

static int
session_guest_setup(Server *s, const Stockade__Runner__Hello *h, Error **errp)
{
    const Stockade__Runner__SessionConfig *c = h->config;
    struct timespec ts = {.tv_sec = (time_t) (h->wall_time_ns / NSEC_PER_SEC),
                          .tv_nsec = (long) (h->wall_time_ns % NSEC_PER_SEC)};

    if (clock_settime(CLOCK_REALTIME, &ts) < 0)
        return error_set(errp, E_IO, errno, "set the clock");
    if (session_seed_entropy(h, errp) < 0)
        return -1;
    if (c->hostname[0] && sethostname(c->hostname, strlen(c->hostname)) < 0)
        return error_set(errp, E_IO, errno, "set the hostname");
    if (!s->session.mounted) {
        if (mount(c->workspace_device, s->cfg->workspace, "ext4", MS_NOSUID | MS_NODEV, NULL) < 0)
            return error_set(errp, E_IO, errno, "mount %s on %s", c->workspace_device,
                             s->cfg->workspace);
        s->session.mounted = true;
    }
    return 0;
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
    if (fchownat(ws, "", c->uid, c->gid, AT_EMPTY_PATH) < 0)
        return error_set(errp, E_IO, errno, "chown the workspace");
    EnvList env = {0};
    if (env_list_add_vars(&env, c->env, c->n_env) < 0) {
        env_list_clear(&env);
        return error_set(errp, E_INTERNAL, ENOMEM, "session env");
    }
    if (c->mirror &&
        !(s->mirror = mirror_new(ws, c->mirror->budget_bytes, c->mirror->max_file_bytes, errp))) {
        env_list_clear(&env);
        return -1;
    }
    ss->env = env;
    ss->uid = c->uid;
    ss->gid = c->gid;
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
session_shutdown(Server *s, Error **errp)
{
    exec_kill_all(s->execs);
    session_wait_execs(s);
    mirror_free(s->mirror);
    s->mirror = NULL;
    s->session.ws_fd = safe_close(s->session.ws_fd);
    if (!s->cfg->pid1)
        return 0;
    sync();
    if (!s->session.mounted)
        return 0;
    s->session.mounted = false;
    if (umount2(s->cfg->workspace, 0) < 0) {
        int e = errno;
        (void) umount2(s->cfg->workspace, MNT_DETACH);
        sync();
        return error_set(errp, E_IO, e, "unmount the workspace (detached instead)");
    }
    return 0;
}
