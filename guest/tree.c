/* Exec process trees: cgroup v2 backend and pgroup fallback. See tree.h. */
#include "tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "fdutil.h"
#include "procfs.h"

#define CGROUP2_MAGIC 0x63677270
#define TREE_KILL_PASSES 3       /* fallback SIGKILL: re-scan for children forked meanwhile */
#define TREE_READ_MAX_BYTES 4096 /* /proc/meminfo, cgroup.events, cpu.stat */
#define TREE_PROCS_CHUNK_BYTES 4096

typedef struct ProcInfo {
    pid_t pid, ppid, pgid, sid;
} ProcInfo;

static int
cg_write(int dir_fd, const char *file, const char *value)
{
    _cleanup_close_ int fd = openat(dir_fd, file, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    return write_all(fd, value, strlen(value));
}

/* Reads a small file below dir_fd into buf (NUL-terminated). */
static int
cg_read(int dir_fd, const char *file, char *buf, size_t cap)
{
    size_t got;
    _cleanup_close_ int fd = openat(dir_fd, file, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read_full(fd, buf, cap - 1, &got) < 0)
        return -1;
    buf[got] = '\0';
    return 0;
}

static bool
cg_read_key(const char *text, const char *key, uint64_t *ret)
{
    size_t n = strlen(key);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, key, n) == 0 && p[n] == ' ') {
            *ret = strtoull(p + n + 1, NULL, 10);
            return true;
        }
    return false;
}

/* MemAvailable when the runner starts (kernel, runner and page cache already counted), minus
 * the reserve: a hog then hits its own memory.max (its group is OOM-killed alone) before the
 * guest runs out (a global OOM, where only oom_score_adj protects the runner). */
static uint64_t
tree_memory_max(void)
{
    char buf[TREE_READ_MAX_BYTES];
    uint64_t total_kib = 0;
    int fd = open("/proc/meminfo", O_RDONLY | O_CLOEXEC);
    size_t got = 0;

    if (fd >= 0 && read_full(fd, buf, sizeof(buf) - 1, &got) == 0) {
        buf[got] = '\0';
        const char *p = strstr(buf, "MemAvailable:");
        if (p)
            total_kib = strtoull(p + 13, NULL, 10);
    }
    safe_close(fd);
    uint64_t total = total_kib * 1024, reserve = (uint64_t) EXEC_MEMORY_RESERVE_MIB << 20;
    uint64_t floor = (uint64_t) EXEC_MEMORY_MIN_MIB << 20;
    return total > reserve + floor ? total - reserve : MAX(floor, total / 2);
}

int
tree_root_open(const char *cgroup_root, TreeRoot *ret, Error **errp)
{
    struct statfs sfs;

    *ret = (TreeRoot){.dir_fd = -1,
                      .memory_max_bytes = tree_memory_max(),
                      .spare = {.cg_fd = -1, .procs_fd = -1}};
    if (!cgroup_root)
        return 0;
    _cleanup_close_ int fd = open(cgroup_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return error_set(errp, E_INVALID, errno, "cgroup root %s", cgroup_root);
    if (fstatfs(fd, &sfs) < 0 || sfs.f_type != CGROUP2_MAGIC)
        return error_set(errp, E_INVALID, 0, "%s is not a cgroup v2 directory", cgroup_root);
    if (faccessat(fd, "cgroup.procs", W_OK, AT_EACCESS) < 0)
        return error_set(errp, E_INVALID, errno, "%s is not writable", cgroup_root);
    /* Each controller separately: one that is unavailable must not block the others. With
     * cpu, an exec's whole tree is one scheduling entity next to the runner, so a fork bomb
     * of a thousand processes cannot push the runner's turn out by seconds. */
    static const char *const controllers[] = {"+pids", "+memory", "+cpu"};
    for (size_t i = 0; i < ELEMENTSOF(controllers); i++)
        (void) cg_write(fd, "cgroup.subtree_control", controllers[i]);
    ret->dir_fd = TAKE_FD(fd);
    return 0;
}

void
tree_root_close(TreeRoot *root)
{
    tree_destroy(root, &root->spare);
    root->dir_fd = safe_close(root->dir_fd);
}

/* Limits whose controller is not enabled here (ENOENT) are skipped. */
static int
tree_set_limits(const TreeRoot *root, int cg_fd)
{
    char mem[32], pids[32];

    snprintf(mem, sizeof(mem), "%llu", (unsigned long long) root->memory_max_bytes);
    snprintf(pids, sizeof(pids), "%d", EXEC_PIDS_MAX);
    if ((cg_write(cg_fd, "pids.max", pids) < 0 && errno != ENOENT) ||
        (cg_write(cg_fd, "memory.max", mem) < 0 && errno != ENOENT) ||
        (cg_write(cg_fd, "memory.oom.group", "1") < 0 && errno != ENOENT))
        return -1;
    return 0;
}

/* name: "exec-<id>" or "exec-s<n>" (see tree_create, tree_make_spare). */
static int
tree_make(const TreeRoot *root, bool spare, unsigned n, Tree *ret, Error **errp)
{
    Tree t = {.cg_fd = -1, .procs_fd = -1};

    snprintf(t.name, sizeof(t.name), spare ? "exec-s%u" : "exec-%u", n);
    if (root->dir_fd < 0) {
        *ret = t;
        return 0;
    }
    if (mkdirat(root->dir_fd, t.name, 0755) < 0 &&
        (errno != EEXIST || unlinkat(root->dir_fd, t.name, AT_REMOVEDIR) < 0 ||
         mkdirat(root->dir_fd, t.name, 0755) < 0))
        return error_set(errp, E_IO, errno, "create cgroup %s", t.name);
    t.cg_fd = openat(root->dir_fd, t.name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (t.cg_fd < 0 || tree_set_limits(root, t.cg_fd) < 0 ||
        (t.procs_fd = openat(t.cg_fd, "cgroup.procs", O_WRONLY | O_CLOEXEC)) < 0) {
        int e = errno;
        tree_destroy(root, &t);
        return error_set(errp, E_IO, e, "set up cgroup %s", t.name);
    }
    *ret = t;
    return 0;
}

int
tree_create(TreeRoot *root, uint32_t exec_id, Tree *ret, Error **errp)
{
    if (root->spare.cg_fd >= 0) {
        *ret = root->spare;
        root->spare = (Tree){.cg_fd = -1, .procs_fd = -1};
        return 0;
    }
    if (tree_make(root, false, exec_id, ret, errp) < 0)
        return -1;
    root->spare_failed = false;
    return 0;
}

bool
tree_wants_spare(const TreeRoot *root)
{
    return root->dir_fd >= 0 && root->spare.cg_fd < 0 && !root->spare_failed;
}

void
tree_make_spare(TreeRoot *root)
{
    _cleanup_error_ Error *ignored = NULL;
    /* on failure tree_make leaves root->spare as it was: empty */
    if (tree_wants_spare(root) &&
        tree_make(root, true, root->spare_seq++, &root->spare, &ignored) < 0)
        root->spare_failed = true; /* no retry every SERVE_IDLE_MSEC */
}

void
tree_destroy(const TreeRoot *root, Tree *t)
{
    t->procs_fd = safe_close(t->procs_fd);
    if (t->cg_fd >= 0 && root->dir_fd >= 0)
        (void) unlinkat(root->dir_fd, t->name, AT_REMOVEDIR); /* EBUSY: still populated */
    t->cg_fd = safe_close(t->cg_fd);
}

/* Sends signo to every pid listed in cgroup.procs, read in chunks (the list is unbounded). */
static void
tree_cgroup_signal_procs(Tree *t, int signo)
{
    char buf[TREE_PROCS_CHUNK_BYTES + 1];
    size_t keep = 0;
    ssize_t n;
    _cleanup_close_ int fd = openat(t->cg_fd, "cgroup.procs", O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return;
    while ((n = read(fd, buf + keep, TREE_PROCS_CHUNK_BYTES - keep)) > 0) {
        size_t len = keep + (size_t) n, start = 0;
        for (size_t i = 0; i < len; i++)
            if (buf[i] == '\n') {
                buf[i] = '\0';
                (void) kill((pid_t) strtol(buf + start, NULL, 10), signo);
                start = i + 1;
            }
        keep = len - start;
        memmove(buf, buf + start, keep);
    }
}

static int
tree_read_proc(pid_t pid, ProcInfo *ret)
{
    ProcStat st;
    if (proc_stat_read(pid, &st) < 0 || st.state == 'Z')
        return -1; /* zombies cannot be signalled and are reaped anyway */
    *ret = (ProcInfo){.pid = pid, .ppid = st.ppid, .pgid = st.pgid, .sid = st.sid};
    return 0;
}

/* Reads every live process; returns how many (at most cap). */
static size_t
tree_scan(ProcInfo *out, size_t cap)
{
    DIR *d = opendir("/proc");
    struct dirent *de;
    size_t n = 0;

    if (!d)
        return 0;
    while (n < cap && (de = readdir(d))) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end == '\0' && pid > 0 && tree_read_proc((pid_t) pid, &out[n]) == 0)
            n++;
    }
    closedir(d);
    return n;
}

bool
tree_has_pid(const Tree *t, pid_t pid)
{
    if (t->leader_alive && pid == t->leader)
        return true;
    for (size_t i = 0; i < t->n_orphans; i++)
        if (t->orphans[i] == pid)
            return true;
    return false;
}

/* Marks the tree's members in procs (closure over parent links); returns how many. */
static size_t
tree_mark(const Tree *t, const ProcInfo *procs, size_t n, bool *member)
{
    size_t count = 0;
    bool grew = true;

    for (size_t i = 0; i < n; i++) {
        member[i] = tree_has_pid(t, procs[i].pid) || procs[i].pgid == t->leader ||
                    procs[i].sid == t->leader;
        count += member[i];
    }
    while (grew) {
        grew = false;
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; !member[i] && j < n; j++)
                if (member[j] && procs[i].ppid == procs[j].pid) {
                    member[i] = grew = true;
                    count++;
                }
    }
    return count;
}

/* Snapshot first, then signal: a killed leader would otherwise hide its children (a zombie
 * is not scanned, and its orphans move to the runner). */
static void
tree_fallback_signal(Tree *t, int signo)
{
    _cleanup_free_ ProcInfo *procs = calloc(PROC_SCAN_MAX, sizeof(*procs));
    _cleanup_free_ bool *member = calloc(PROC_SCAN_MAX, sizeof(*member));

    for (int pass = 0; procs && member && pass < (signo == SIGKILL ? TREE_KILL_PASSES : 1);
         pass++) {
        size_t n = tree_scan(procs, PROC_SCAN_MAX);
        if (tree_mark(t, procs, n, member) == 0)
            break;
        for (size_t i = 0; i < n; i++)
            if (member[i] && procs[i].pid != getpid())
                (void) kill(procs[i].pid, signo);
    }
    if (t->leader_alive)
        (void) kill(-t->leader, signo);
}

int
tree_signal(Tree *t, int signo)
{
    if (signo == SIGKILL)
        t->killed = true; /* fallback: orphans adopted later are killed on adoption */
    if (t->cg_fd < 0) {
        tree_fallback_signal(t, signo);
        if (t->leader_alive)
            (void) kill(t->leader, signo);
        return 0;
    }
    if (t->leader_alive)
        (void) kill(t->leader, signo); /* it may not have joined its cgroup yet */
    if (signo == SIGKILL && cg_write(t->cg_fd, "cgroup.kill", "1") == 0)
        return 0;
    tree_cgroup_signal_procs(t, signo);
    return 0;
}

bool
tree_is_empty(const Tree *t)
{
    char buf[TREE_READ_MAX_BYTES];
    uint64_t populated = 1;

    if (t->leader_alive || t->n_orphans > 0)
        return false;
    if (t->cg_fd < 0)
        return true;
    if (cg_read(t->cg_fd, "cgroup.events", buf, sizeof(buf)) < 0)
        return true; /* the group is gone */
    return cg_read_key(buf, "populated", &populated) && populated == 0;
}

int
tree_cpu_usec(const Tree *t, uint64_t *ret_user, uint64_t *ret_system)
{
    char buf[TREE_READ_MAX_BYTES];
    uint64_t user, sys;

    if (t->cg_fd < 0 || cg_read(t->cg_fd, "cpu.stat", buf, sizeof(buf)) < 0 ||
        !cg_read_key(buf, "user_usec", &user) || !cg_read_key(buf, "system_usec", &sys))
        return -1;
    *ret_user = user;
    *ret_system = sys;
    return 0;
}

bool
tree_forget_orphan(Tree *t, pid_t pid)
{
    for (size_t i = 0; i < t->n_orphans; i++)
        if (t->orphans[i] == pid) {
            t->orphans[i] = t->orphans[--t->n_orphans];
            return true;
        }
    return false;
}

bool
tree_add_orphan(Tree *t, pid_t pid)
{
    if (t->killed)
        (void) kill(pid, SIGKILL);
    if (t->n_orphans >= EXEC_ORPHANS_MAX)
        return false;
    t->orphans[t->n_orphans++] = pid;
    return true;
}

size_t
tree_scan_children(pid_t parent, pid_t *out, size_t cap)
{
    _cleanup_free_ ProcInfo *procs = calloc(PROC_SCAN_MAX, sizeof(*procs));
    size_t k = 0;

    if (!procs)
        return 0;
    size_t n = tree_scan(procs, PROC_SCAN_MAX);
    for (size_t i = 0; i < n && k < cap; i++)
        if (procs[i].ppid == parent)
            out[k++] = procs[i].pid;
    return k;
}
