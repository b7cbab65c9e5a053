/* Exec child setup between the clone and execve: see spawn.h. Runs in a CLONE_VM child of a
 * single-threaded runner; it never returns and never logs (fds 1 and 2 are the pipes). */
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "env.h"
#include "fdutil.h"
#include "guest_limits.h"
#include "macro.h"
#include "runner_limits.h"
#include "wspath.h"

#define SPAWN_EXIT_FAILED 127
#define SPAWN_STACK_BYTES (64u * 1024u) /* the child uses ~6 KiB (a PATH candidate is 4.3) */
#define SPAWN_GUARD_BYTES 4096u        /* below the stack: an overflow faults, never corrupts */

_Noreturn static void
spawn_fail(const SpawnSpec *s, SpawnStage stage, int err)
{
    SpawnReport rep = {.stage = stage, .err = err};
    (void) write_all(s->report_fd, &rep, sizeof(rep));
    _exit(SPAWN_EXIT_FAILED);
}

static int
spawn_reset_signals(void)
{
    sigset_t none;
    struct sigaction dfl = {.sa_handler = SIG_DFL};

    sigemptyset(&none);
    for (int sig = 1; sig < NSIG; sig++)
        (void) sigaction(sig, &dfl, NULL); /* SIGKILL/SIGSTOP and reserved ones fail: fine */
    return sigprocmask(SIG_SETMASK, &none, NULL);
}

static int
spawn_limits(void)
{
    static const struct {
        int resource;
        struct rlimit lim;
    } limits[] = {
        {RLIMIT_CORE, {0, 0}},
        {RLIMIT_NOFILE, {EXEC_NOFILE_SOFT, EXEC_NOFILE_HARD}},
    };
    char adj[16];

    for (size_t i = 0; i < ELEMENTSOF(limits); i++) {
        struct rlimit cur, want = limits[i].lim;
        /* Never above the runner's own hard limit: raising it needs CAP_SYS_RESOURCE, which
         * PID 1 has but a host-mode runner may not. */
        if (getrlimit(limits[i].resource, &cur) < 0)
            return -1;
        want.rlim_max = MIN(want.rlim_max, cur.rlim_max);
        want.rlim_cur = MIN(want.rlim_cur, want.rlim_max);
        if (setrlimit(limits[i].resource, &want) < 0)
            return -1;
    }
    int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int r = write_all(fd, adj, (size_t) snprintf(adj, sizeof(adj), "%d", EXEC_OOM_SCORE_ADJ));
    safe_close(fd);
    return r;
}

static int
spawn_stdio(const SpawnSpec *s)
{
    int in = s->stdin_fd >= 0 ? s->stdin_fd : open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return -1;
    if (dup2(in, STDIN_FILENO) < 0 || dup2(s->stdout_fd, STDOUT_FILENO) < 0 ||
        dup2(s->stderr_fd, STDERR_FILENO) < 0)
        return -1;
    if (s->ctty && ioctl(STDIN_FILENO, TIOCSCTTY, 0) < 0)
        return -1;
    /* Everything else (the runner's port, pipes of other execs, ...) closes at execve. */
    return close_range(3, ~0u, CLOSE_RANGE_CLOEXEC);
}

static int
spawn_drop_ids(const SpawnSpec *s)
{
    if (s->cgroup_procs_fd < 0 && prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
        return -1;
    if (setgroups(0, NULL) < 0 || setgid(s->gid) < 0 || setuid(s->uid) < 0)
        return -1;
    if (getuid() != s->uid || geteuid() != s->uid) {
        errno = EPERM;
        return -1;
    }
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

static int
spawn_chdir(const SpawnSpec *s)
{
    if (s->cwd_abs)
        return chdir(s->cwd_abs);
    int fd = wspath_openat(s->ws_fd, s->cwd_rel, O_PATH | O_DIRECTORY, 0);
    if (fd < 0)
        return -1;
    int r = fchdir(fd);
    safe_close(fd);
    return r;
}

/* execvp over the exec's PATH: EACCES is remembered and the search goes on, like execvp. */
static int
spawn_exec(const SpawnSpec *s)
{
    char candidate[PATH_MAX_BYTES + NAME_MAX_BYTES + 2];
    size_t cursor = 0;
    bool denied = false;

    while (env_path_next(s->path_var, s->argv[0], &cursor, candidate, sizeof(candidate))) {
        execve(candidate, s->argv, s->envp);
        if (errno == EACCES)
            denied = true;
        else if (errno != ENOENT && errno != ENOTDIR)
            return -1;
    }
    errno = denied ? EACCES : ENOENT;
    return -1;
}

_Noreturn static void
spawn_child(const SpawnSpec *s)
{
    if (s->cgroup_procs_fd >= 0 && write_all(s->cgroup_procs_fd, "0", 1) < 0)
        spawn_fail(s, SPAWN_STAGE_CGROUP, errno);
    if (spawn_reset_signals() < 0 || setsid() < 0 || spawn_limits() < 0 || spawn_stdio(s) < 0)
        spawn_fail(s, SPAWN_STAGE_SETUP, errno);
    if (spawn_drop_ids(s) < 0)
        spawn_fail(s, SPAWN_STAGE_IDS, errno);
    umask(022);
    if (spawn_chdir(s) < 0)
        spawn_fail(s, SPAWN_STAGE_CWD, errno);
    (void) spawn_exec(s);
    spawn_fail(s, SPAWN_STAGE_EXEC, errno);
}

static int
spawn_trampoline(void *arg)
{
    spawn_child(arg);
}

pid_t
spawn_start(const SpawnSpec *s)
{
    static uint8_t *stack; /* mapped once, guard page at the bottom; reused by every spawn */

    if (!stack) {
        void *m = mmap(NULL, SPAWN_GUARD_BYTES + SPAWN_STACK_BYTES, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (m == MAP_FAILED)
            return -1;
        if (mprotect(m, SPAWN_GUARD_BYTES, PROT_NONE) < 0) {
            (void) munmap(m, SPAWN_GUARD_BYTES + SPAWN_STACK_BYTES);
            return -1;
        }
        stack = m;
    }
    return clone(spawn_trampoline, stack + SPAWN_GUARD_BYTES + SPAWN_STACK_BYTES,
                 CLONE_VM | CLONE_VFORK | SIGCHLD, (void *) s);
}

const char *
spawn_stage_name(int32_t stage)
{
    switch (stage) {
    case SPAWN_STAGE_SETUP:
        return "setup";
    case SPAWN_STAGE_CGROUP:
        return "cgroup";
    case SPAWN_STAGE_IDS:
        return "uid/gid";
    case SPAWN_STAGE_CWD:
        return "cwd";
    case SPAWN_STAGE_EXEC:
        return "exec";
    default:
        return "spawn";
    }
}
