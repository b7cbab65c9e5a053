/* Integration test of hostd/extract against real libguestfs (root, TCG). One appliance is
 * launched (in a thread, while the workspace images are built) with two slot disks, and
 * every case reuses it, resetting a slot in place (cp --sparse=always: same inode):
 *  - hostile:  symlinks to /etc, FIFO, device nodes, a 1 TiB sparse file, names with newlines
 *              and ANSI escapes, a setuid file, a hard link, directories deeper than the cap:
 *              only regular files and dirs land, inside dest, within the caps;
 *  - many:     100 000 small files: the file cap stops it in seconds, the handle survives;
 *  - garbage:  a disk that does not mount fails with E_GUEST and leaves the appliance alive;
 *  - killed:   files written through a loop mount, image copied while mounted (journal only),
 *              then the slot reset in place with a second killed image (EXT4_IOC_SHUTDOWN)
 *              holding new content: both come back whole, the second with the NEW content
 *              (journal replay must not have poisoned libguestfs's overlay);
 *  - cold:     the one-shot fallback on the second killed image;
 *  - sandbox:  the appliance's qemu (started through stockade-appliance-qemu) runs without
 *              root, capabilities or new privileges, under seccomp and an address-space
 *              limit, and holds every slot disk read-only; checked right after launch and
 *              again after all the salvages (their RSS and the launch time are printed).
 * Everything it makes (appliance, loop mounts, temp dirs) is removed, also on failure. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "extract.h"
#include "procfs.h"
#include "testlib.h"
#include "timeutil.h"

#define SLOT_SIZE "1G"
#define N_SLOTS 3 /* slot 2 holds a marker: a disk-order mix-up shows up as wrong content */
#define MANY_FILES 100000
#define MANY_DIRS 400
#define MANY_CAP 2000u
#define MANY_MAX_USEC (60 * USEC_PER_SEC) /* "must not take minutes" */
#define TIME_CAP_USEC (4 * USEC_PER_SEC)
#define TIME_CAP_SLACK_USEC (6 * USEC_PER_SEC) /* cancel, drain, unmount */
#define KILLED_FILES 40
#define DEEP_LEVELS 40
#define EXT4_IOC_SHUTDOWN_ _IOR('X', 125, uint32_t)
#define EXT4_GOING_FLAGS_NOLOGFLUSH_ 0x2

static char *scratch;
static char mnt[4096];
static bool mounted;
static int failures, checks;

#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        checks++;                                                                                  \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            fprintf(stderr, "FAILED: %s (%s:%d)\n", #cond, __FILE__, __LINE__);                    \
        }                                                                                          \
    } while (0)

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int
sh(const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    int r = system(cmd);
    if (r != 0)
        fprintf(stderr, "command failed (%d): %s\n", r, cmd);
    return r;
}

static void
write_file(const char *path, const char *content, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    bool ok = fd >= 0 && write(fd, content, strlen(content)) == (ssize_t) strlen(content) &&
              fchmod(fd, mode) == 0;
    if (!ok) { /* counted as a failure, not as a check: there are 100 000 of them */
        perror(path);
        failures++;
    }
    if (fd >= 0)
        close(fd);
}

static char *path_in(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *
path_in(const char *fmt, ...)
{
    static char bufs[8][4096];
    static int next;
    char rel[3000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rel, sizeof(rel), fmt, ap);
    va_end(ap);
    char *b = bufs[next++ % 8];
    snprintf(b, sizeof(bufs[0]), "%s/%s", scratch, rel);
    return b;
}

/* ------------------------------------------------------------------ images */

static void
build_hostile(void)
{
    char p[4096];
    sh("mkdir -p %s/hostile/dir/sub %s/hostile/deep", scratch, scratch);
    write_file(path_in("hostile/normal.txt"), "normal\n", 0644);
    write_file(path_in("hostile/dir/sub/file.txt"), "nested\n", 0600);
    write_file(path_in("hostile/suid.sh"), "#!/bin/sh\n", 04755);
    write_file(path_in("hostile/hard-target.txt"), "hard\n", 0644);
    EXPECT(link(path_in("hostile/hard-target.txt"), path_in("hostile/hard.txt")) == 0);
    write_file(path_in("hostile/new\nline.txt"), "nl\n", 0644);
    write_file(path_in("hostile/\x1b[31mred\x1b[0m.txt"), "ansi\n", 0644);
    EXPECT(symlink("/etc", path_in("hostile/etc-link")) == 0);
    EXPECT(symlink("../../../etc/passwd", path_in("hostile/dir/rel-link")) == 0);
    EXPECT(mkfifo(path_in("hostile/fifo"), 0644) == 0);
    EXPECT(mknod(path_in("hostile/null-dev"), S_IFCHR | 0666, makedev(1, 3)) == 0);
    EXPECT(mknod(path_in("hostile/loop-dev"), S_IFBLK | 0660, makedev(7, 0)) == 0);
    EXPECT(sh("truncate -s 1T %s/hostile/huge.sparse", scratch) == 0);
    snprintf(p, sizeof(p), "%s/hostile/deep", scratch);
    for (int i = 0; i < DEEP_LEVELS; i++) {
        strcat(p, "/d");
        EXPECT(mkdir(p, 0755) == 0);
        if (i == 4)
            write_file(strcat(strcpy((char[4096]){0}, p), "/shallow.txt"), "5\n", 0644);
    }
    write_file(strcat(p, "/leaf.txt"), "deep\n", 0644);
}

/* The 100 000 files go to tmpfs when there is one: creating them costs syscalls, not disk. */
static char many_src[4096];

static void
build_many(void)
{
    char p[4200];
    snprintf(many_src, sizeof(many_src), "%s",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm/extract-many.XXXXXX"
                                           : path_in("many.XXXXXX"));
    if (!mkdtemp(many_src)) {
        perror(many_src);
        many_src[0] = '\0';
        EXPECT(false);
        return;
    }
    for (int d = 0; d < MANY_DIRS; d++) {
        snprintf(p, sizeof(p), "%s/d%d", many_src, d);
        EXPECT(mkdir(p, 0755) == 0);
        for (int i = 0; i < MANY_FILES / MANY_DIRS; i++) {
            snprintf(p, sizeof(p), "%s/d%d/f%d", many_src, d, i);
            write_file(p, "x", 0644);
        }
    }
}

/* Spread over many directories: mke2fs -d adds entries by a linear scan of the directory. */
static int
mkfs(const char *img, const char *src_abs)
{
    return sh("truncate -s " SLOT_SIZE " '%s/%s' && "
              "mkfs.ext4 -q -F -N 131072 -O inline_data %s%s%s '%s/%s'",
              scratch, img, src_abs ? "-d '" : "", src_abs ? src_abs : "", src_abs ? "'" : "",
              scratch, img);
}

/* Writes KILLED_FILES files with content "<tag>-<i>" through a loop mount, syncs, then
 * leaves the image needing journal replay: by copying it while mounted (copy=true) or by
 * EXT4_IOC_SHUTDOWN without a log flush. Result in out_img. */
static int
build_killed(const char *tag, bool copy, const char *out_img)
{
    char buf[64];
    if (mkfs("killed-base.img", NULL) != 0 || sh("mkdir -p %s", mnt) != 0 ||
        sh("mount -o loop %s/killed-base.img %s", scratch, mnt) != 0)
        return -1;
    mounted = true;
    for (int i = 0; i < KILLED_FILES; i++) {
        snprintf(buf, sizeof(buf), "%s-%d", tag, i);
        char p[4200];
        snprintf(p, sizeof(p), "%s/f%d.txt", mnt, i);
        write_file(p, buf, 0644);
    }
    if (sh("sync -f %s/f0.txt", mnt) != 0)
        return -1;
    if (copy) {
        if (sh("cp --sparse=always %s/killed-base.img %s/%s", scratch, scratch, out_img) != 0)
            return -1;
    } else {
        int fd = open(mnt, O_RDONLY | O_DIRECTORY);
        uint32_t flag = EXT4_GOING_FLAGS_NOLOGFLUSH_;
        EXPECT(fd >= 0 && ioctl(fd, EXT4_IOC_SHUTDOWN_, &flag) == 0);
        close(fd);
    }
    if (sh("umount %s", mnt) != 0)
        return -1;
    mounted = false;
    if (!copy && sh("mv %s/killed-base.img %s/%s", scratch, scratch, out_img) != 0)
        return -1;
    /* The copy must really need replay, or the test proves nothing. */
    return sh("dumpe2fs -h %s/%s 2>/dev/null | grep -q needs_recovery", scratch, out_img);
}

static int
reset_slot(int slot, const char *img)
{
    return sh("cp --sparse=always %s/%s %s/slot%d.img", scratch, img, scratch, slot);
}

/* ------------------------------------------------------------------ checks */

static int walk_bad, walk_files;

static int
walk_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void) type;
    if (ftw->level == 0)
        return 0;
    if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode)) {
        fprintf(stderr, "not a file or dir: %s\n", path);
        walk_bad++;
    }
    if (st->st_mode & (S_ISUID | S_ISGID | S_ISVTX | S_IWGRP | S_IWOTH)) {
        fprintf(stderr, "bad mode %o: %s\n", st->st_mode, path);
        walk_bad++;
    }
    walk_files += S_ISREG(st->st_mode);
    return 0;
}

/* A fresh jail/dest pair; returns an fd on dest. */
static int
new_dest(const char *name, char *ret_dest, size_t cap)
{
    snprintf(ret_dest, cap, "%s/%s-jail/dest", scratch, name);
    if (sh("mkdir -p '%s'", ret_dest) != 0)
        return -1;
    return open(ret_dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* Only regular files and dirs under dest, nothing beside it in its jail. */
static void
check_tree(const char *dest)
{
    char jail[4096];
    walk_bad = walk_files = 0;
    EXPECT(nftw(dest, walk_one, 32, FTW_PHYS) == 0);
    EXPECT(walk_bad == 0);
    snprintf(jail, sizeof(jail), "%s", dest);
    *strrchr(jail, '/') = '\0';
    DIR *d = opendir(jail);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    EXPECT(n == 1);
}

static void
expect_content(int dfd, const char *path, const char *want)
{
    char buf[256] = {0};
    int fd = openat(dfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n < 0 || strcmp(buf, want) != 0)
        fprintf(stderr, "content of %s: got \"%s\", want \"%s\"\n", path, buf, want);
    EXPECT(n >= 0 && strcmp(buf, want) == 0);
}

static bool
exists_at(int dfd, const char *path)
{
    struct stat st;
    return fstatat(dfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static void
print_stats(const char *what, int r, const ExtractStats *s, const Error *e, uint64_t usec)
{
    printf("%-10s r=%d %.2f s (mount %.2f scan %.2f stream %.2f cleanup %.2f) files=%u dirs=%u "
           "skipped=%u bytes=%llu truncated=%d stop=%s%s%s\n",
           what, r, (double) usec / 1e6, (double) s->mount_usec / 1e6, (double) s->scan_usec / 1e6,
           (double) s->stream_usec / 1e6, (double) s->cleanup_usec / 1e6, s->files, s->dirs,
           s->skipped, (unsigned long long) s->bytes, s->truncated, extract_stop_name(s->stop),
           e ? " error=" : "", e ? e->message : "");
    fflush(stdout);
}

static int
salvage(ExtractAppliance *a, size_t slot, const char *name, const ExtractLimits *lim, int *ret_fd,
        ExtractStats *st, Error **err)
{
    char dest[4096];
    *ret_fd = new_dest(name, dest, sizeof(dest));
    if (*ret_fd < 0)
        return -2;
    uint64_t t0 = now_usec();
    int r = extract_salvage(a, slot, *ret_fd, lim, st, err);
    print_stats(name, r, st, *err, now_usec() - t0);
    check_tree(dest);
    return r;
}

/* ------------------------------------------------------------------ cases */

static void
case_hostile(ExtractAppliance *a)
{
    ExtractLimits lim;
    ExtractStats st;
    Error *err = NULL;
    int dfd;
    extract_limits_default(&lim);
    EXPECT(reset_slot(0, "hostile.img") == 0);
    EXPECT(salvage(a, 0, "hostile", &lim, &dfd, &st, &err) == 0);
    EXPECT(st.truncated && st.stop == EXTRACT_STOP_NONE); /* 1 TiB file + deep dirs */
    expect_content(dfd, "normal.txt", "normal\n");
    expect_content(dfd, "dir/sub/file.txt", "nested\n");
    expect_content(dfd, "new\nline.txt", "nl\n");
    expect_content(dfd, "\x1b[31mred\x1b[0m.txt", "ansi\n");
    expect_content(dfd, "deep/d/d/d/d/d/shallow.txt", "5\n");
    struct stat sb;
    EXPECT(fstatat(dfd, "suid.sh", &sb, AT_SYMLINK_NOFOLLOW) == 0 && (sb.st_mode & 07777) == 0744);
    /* GNU tar stores the first name of a hard-linked pair as a file, the second as a link. */
    EXPECT(exists_at(dfd, "hard.txt") != exists_at(dfd, "hard-target.txt"));
    static const char *const absent[] = {"etc-link", "dir/rel-link", "fifo",      "null-dev",
                                         "loop-dev", "huge.sparse",  "lost+found"};
    for (size_t i = 0; i < sizeof(absent) / sizeof(absent[0]); i++)
        EXPECT(!exists_at(dfd, absent[i]));
    EXPECT(st.skipped >= 7); /* 2 symlinks, fifo, 2 devices, hard link, sparse, deep leaf */
    EXPECT(st.bytes < 1024 * 1024);
    close(dfd);
    error_free(err);
}

static void
case_many_then_garbage(ExtractAppliance *a)
{
    ExtractLimits lim;
    ExtractStats st;
    Error *err = NULL;
    int dfd;
    extract_limits_default(&lim);
    lim.max_files = MANY_CAP;
    EXPECT(reset_slot(0, "many.img") == 0);
    uint64_t t0 = now_usec();
    EXPECT(salvage(a, 0, "many", &lim, &dfd, &st, &err) == 0);
    EXPECT(now_usec() - t0 < MANY_MAX_USEC);
    EXPECT(st.stop == EXTRACT_STOP_FILES && st.truncated);
    EXPECT(st.files + st.dirs + st.skipped <= MANY_CAP + MANY_DIRS && st.files > 0);
    EXPECT(walk_files == (int) st.files);
    EXPECT(extract_appliance_alive(a)); /* cancelling tar_out leaves the handle usable */
    close(dfd);
    error_free(err);
    err = NULL;

    /* The time cap, with the entry cap out of reach: stops by time, the handle survives. The
     * cap leaves TIME_CAP_USEC for streaming beyond what mount and scan took just now, so a
     * loaded machine (slow mounts) still streams some files before the deadline. */
    lim.max_files = 10 * MANY_FILES;
    lim.max_usec = st.mount_usec + st.scan_usec + TIME_CAP_USEC;
    t0 = now_usec();
    EXPECT(salvage(a, 0, "many-time", &lim, &dfd, &st, &err) == 0);
    EXPECT(now_usec() - t0 < lim.max_usec + TIME_CAP_SLACK_USEC);
    EXPECT(st.stop == EXTRACT_STOP_TIME && st.truncated && st.files > 0);
    EXPECT(extract_appliance_alive(a));
    close(dfd);
    error_free(err);
    err = NULL;
    lim.max_usec = MANY_MAX_USEC;

    /* Same inode, superblock wiped: the mount fails, the appliance lives on. */
    EXPECT(sh("dd if=/dev/zero of=%s/slot0.img bs=1M count=4 conv=notrunc status=none", scratch) ==
           0);
    EXPECT(salvage(a, 0, "garbage", &lim, &dfd, &st, &err) == -1);
    EXPECT(err && err->category == E_GUEST);
    EXPECT(extract_appliance_alive(a));
    close(dfd);
    error_free(err);
}

static void
expect_killed(int dfd, const char *tag)
{
    char name[32], want[64];
    for (int i = 0; i < KILLED_FILES; i++) {
        snprintf(name, sizeof(name), "f%d.txt", i);
        snprintf(want, sizeof(want), "%s-%d", tag, i);
        expect_content(dfd, name, want);
    }
}

static void
case_killed(ExtractAppliance *a)
{
    ExtractLimits lim;
    ExtractStats st;
    Error *err = NULL;
    int dfd;
    extract_limits_default(&lim);
    EXPECT(reset_slot(1, "killed-v1.img") == 0);
    EXPECT(salvage(a, 1, "killed-v1", &lim, &dfd, &st, &err) == 0);
    EXPECT(st.files == KILLED_FILES && !st.truncated);
    expect_killed(dfd, "v1");
    close(dfd);
    EXPECT(reset_slot(1, "killed-v2.img") == 0); /* in place, as the pool does */
    EXPECT(salvage(a, 1, "killed-v2", &lim, &dfd, &st, &err) == 0);
    EXPECT(st.files == KILLED_FILES);
    expect_killed(dfd, "v2"); /* overlay poisoning would show v1 here */
    close(dfd);
    error_free(err);
}

/* Salvages every slot in reverse order and checks each is the disk it was attached as. */
static void
case_disk_order(ExtractAppliance *a)
{
    ExtractLimits lim;
    ExtractStats st;
    Error *err = NULL;
    int dfd;
    extract_limits_default(&lim);
    EXPECT(salvage(a, 2, "marker", &lim, &dfd, &st, &err) == 0);
    expect_content(dfd, "slot", "slot2\n");
    close(dfd);
    EXPECT(salvage(a, 1, "order-1", &lim, &dfd, &st, &err) == 0);
    expect_killed(dfd, "v2");
    close(dfd);
    error_free(err);
}

static void
case_cold(const ExtractConfig *cfg)
{
    ExtractLimits lim;
    ExtractStats st;
    Error *err = NULL;
    char dest[4096];
    extract_limits_default(&lim);
    int dfd = new_dest("cold", dest, sizeof(dest));
    uint64_t t0 = now_usec();
    int r = extract_salvage_cold(path_in("killed-v2.img"), cfg, dfd, &lim, &st, &err);
    print_stats("cold", r, &st, err, now_usec() - t0);
    EXPECT(r == 0 && st.files == KILLED_FILES);
    expect_killed(dfd, "v2");
    check_tree(dest);
    close(dfd);
    error_free(err);
}

/* Our children whose argv[0] names a qemu binary (the appliance's, nothing else here). */
static int
count_qemu_children(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "exit $(pgrep -c -P %d qemu)", (int) getpid());
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A launch that outlives its deadline is killed (not left to libguestfs's own 20-minute
 * wait): E_TIMEOUT naming the kill, and no qemu left behind. 2 s is well inside the ~20 s a
 * TCG launch takes, so the deadline always passes mid-launch. */
static void
case_launch_deadline(const ExtractConfig *base)
{
    ExtractConfig cfg = *base;
    ExtractAppliance *a = NULL;
    Error *err = NULL;
    char disk[4096];
    const char *disks[] = {disk};

    cfg.launch_timeout_usec = 2 * USEC_PER_SEC;
    snprintf(disk, sizeof(disk), "%s/slot0.img", scratch);
    uint64_t t0 = now_usec();
    int r = extract_appliance_start(disks, 1, &cfg, &a, &err);
    double s = (double) (now_usec() - t0) / 1e6;
    printf("launch with a 2 s deadline: r=%d after %.1f s: %s\n", r, s, err ? err->message : "-");
    EXPECT(r < 0 && a == NULL);
    EXPECT(err && err->category == E_TIMEOUT && strstr(err->message, "within 2 s; qemu killed"));
    EXPECT(count_qemu_children() == 0);
    extract_appliance_free(a);
    error_free(err);
}

/* ------------------------------------------------------------------ sandbox */

/* Our child running a qemu binary (comm "qemu-system-x86"): the appliance's, nothing else. */
static pid_t
find_qemu_child(void)
{
    pid_t found = 0;
    DIR *d = opendir("/proc");
    for (struct dirent *e; d && (e = readdir(d));) {
        pid_t pid = (pid_t) atoi(e->d_name);
        ProcStat st;
        char path[64], comm[32] = {0};
        if (pid <= 1 || proc_stat_read(pid, &st) < 0 || st.ppid != getpid())
            continue;
        snprintf(path, sizeof(path), "/proc/%d/comm", (int) pid);
        FILE *f = fopen(path, "r");
        if (f && fgets(comm, sizeof(comm), f) && strncmp(comm, "qemu", 4) == 0)
            found = pid;
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
    return found;
}

/* The value after "key:" in /proc/<pid>/status, or "" if absent. */
static void
status_field(pid_t pid, const char *key, char *buf, size_t cap)
{
    char path[64], line[256];
    size_t klen = strlen(key);
    snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
            char *v = line + klen + 1;
            v += strspn(v, " \t");
            v[strcspn(v, "\n")] = '\0';
            snprintf(buf, cap, "%s", v);
        }
    if (f)
        fclose(f);
}

/* The soft "Max address space" of pid in MiB (/proc/<pid>/limits: prlimit() would need
 * CAP_SYS_RESOURCE, which containers may not grant), 0 for unlimited or unreadable. */
static unsigned long long
as_limit_mib(pid_t pid)
{
    char path[64], line[256];
    unsigned long long v = 0;
    snprintf(path, sizeof(path), "/proc/%d/limits", (int) pid);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, "Max address space", 17) == 0)
            v = strtoull(line + 17 + strspn(line + 17, " "), NULL, 10) >> 20; /* "unlimited": 0 */
    if (f)
        fclose(f);
    return v;
}

/* Every fd of pid on a slot disk is read-only (O_RDONLY); returns how many there are. */
static int
slot_fds_readonly(pid_t pid, int *ret_writable)
{
    char dir[64], slot_prefix[4200];
    int n = 0;
    *ret_writable = 0;
    snprintf(dir, sizeof(dir), "/proc/%d/fd", (int) pid);
    snprintf(slot_prefix, sizeof(slot_prefix), "%s/slot", scratch);
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        char link[4200], target[4200] = {0}, info[320], line[128];
        snprintf(link, sizeof(link), "%s/%s", dir, e->d_name);
        if (readlink(link, target, sizeof(target) - 1) <= 0 ||
            strncmp(target, slot_prefix, strlen(slot_prefix)) != 0)
            continue;
        n++;
        snprintf(info, sizeof(info), "/proc/%d/fdinfo/%s", (int) pid, e->d_name);
        FILE *f = fopen(info, "r");
        while (f && fgets(line, sizeof(line), f))
            if (strncmp(line, "flags:", 6) == 0 &&
                (strtoul(line + 6, NULL, 8) & O_ACCMODE) != O_RDONLY) {
                fprintf(stderr, "writable fd %s on %s: %s", e->d_name, target, line);
                (*ret_writable)++;
            }
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
    return n;
}

/* The appliance's qemu parses what hostile guests wrote: it must hold no privilege. */
static void
case_sandbox(const char *when)
{
    char uid[128], gid[128], groups[128], capeff[64], capprm[64], capbnd[64], seccomp[16], nnp[16],
        rss[64], peak[64];
    pid_t pid = find_qemu_child();
    EXPECT(pid > 0);
    if (pid <= 0)
        return;
    status_field(pid, "Uid", uid, sizeof(uid));
    status_field(pid, "Gid", gid, sizeof(gid));
    status_field(pid, "Groups", groups, sizeof(groups));
    status_field(pid, "CapEff", capeff, sizeof(capeff));
    status_field(pid, "CapPrm", capprm, sizeof(capprm));
    status_field(pid, "CapBnd", capbnd, sizeof(capbnd));
    status_field(pid, "Seccomp", seccomp, sizeof(seccomp));
    status_field(pid, "NoNewPrivs", nnp, sizeof(nnp));
    status_field(pid, "VmRSS", rss, sizeof(rss));
    status_field(pid, "VmPeak", peak, sizeof(peak));
    unsigned long long as_mib = as_limit_mib(pid);
    int writable, n_slot_fds = slot_fds_readonly(pid, &writable);
    printf("appliance qemu %d %s: Uid %s | Gid %s | Groups [%s] | CapEff %s CapPrm %s CapBnd %s | "
           "Seccomp %s NoNewPrivs %s | RLIMIT_AS %llu MiB | VmPeak %s VmRSS %s | slot fds %d (%d "
           "writable)\n",
           (int) pid, when, uid, gid, groups, capeff, capprm, capbnd, seccomp, nnp, as_mib, peak,
           rss, n_slot_fds, writable);
    fflush(stdout);
    EXPECT(uid[0] && strncmp(uid, "0", 1) != 0 && strstr(uid, "\t0") == NULL);
    EXPECT(gid[0] && strncmp(gid, "0", 1) != 0 && strstr(gid, "\t0") == NULL);
    EXPECT(groups[0] == '\0');
    EXPECT(strcmp(capeff, "0000000000000000") == 0);
    EXPECT(strcmp(capprm, "0000000000000000") == 0);
    EXPECT(strcmp(capbnd, "0000000000000000") == 0);
    EXPECT(strcmp(seccomp, "2") == 0);
    EXPECT(strcmp(nnp, "1") == 0);
    EXPECT(as_mib > 0);
    EXPECT(n_slot_fds >= N_SLOTS && writable == 0); /* qemu dups each fdset member once */
}

/* ------------------------------------------------------------------ main */

typedef struct Launch {
    const ExtractConfig *cfg;
    ExtractAppliance *a;
    Error *err;
    uint64_t usec;
} Launch;

static void *
launch_main(void *p)
{
    Launch *l = p;
    char paths[N_SLOTS][4096];
    const char *disks[N_SLOTS];
    for (int i = 0; i < N_SLOTS; i++) {
        snprintf(paths[i], sizeof(paths[i]), "%s/slot%d.img", scratch, i);
        disks[i] = paths[i];
    }
    uint64_t t0 = now_usec();
    if (extract_appliance_start(disks, N_SLOTS, l->cfg, &l->a, &l->err) < 0)
        l->a = NULL;
    l->usec = now_usec() - t0;
    return NULL;
}

static void
require_environment(void)
{
    if (geteuid() != 0)
        test_skip("needs root (loop mounts, mknod, libguestfs appliance)");
    if (system("command -v mkfs.ext4 >/dev/null && command -v dumpe2fs >/dev/null") != 0)
        test_skip("needs e2fsprogs");
    if (access("/usr/lib/x86_64-linux-gnu/guestfs", F_OK) != 0 &&
        system("ls /usr/lib/*/guestfs/supermin.d >/dev/null 2>&1") != 0)
        test_skip("needs the libguestfs appliance (libguestfs0, supermin)");
}

static int
build_images(void)
{
    build_hostile();
    build_many();
    int r = mkfs("hostile.img", path_in("hostile")) | mkfs("many.img", many_src);
    sh("rm -rf '%s'", many_src);
    many_src[0] = '\0';
    if (r != 0)
        return -1;
    if (sh("mkdir -p %s/marker && echo slot2 > %s/marker/slot", scratch, scratch) != 0 ||
        mkfs("marker.img", path_in("marker")) != 0 || reset_slot(2, "marker.img") != 0)
        return -1;
    if (build_killed("v1", true, "killed-v1.img") != 0 ||
        build_killed("v2", false, "killed-v2.img") != 0)
        return -1;
    return sh("rm -f %s/killed-base.img", scratch);
}

int
main(void)
{
    require_environment();
    scratch = test_mkdtemp("extract-integ");
    if (!scratch)
        return 1;
    snprintf(mnt, sizeof(mnt), "%s/mnt", scratch);
    ExtractConfig cfg = {
        .force_tcg = true, .state_dir = scratch, .qemu_wrapper = STOCKADE_APPLIANCE_QEMU};
    Launch l = {.cfg = &cfg};
    pthread_t t;
    bool launched = false;

    if (sh("truncate -s " SLOT_SIZE " %s/slot0.img %s/slot1.img %s/slot2.img", scratch, scratch,
           scratch) == 0 &&
        pthread_create(&t, NULL, launch_main, &l) == 0)
        launched = true;
    EXPECT(launched);
    uint64_t t0 = now_usec();
    int built = build_images();
    printf("images built in %.1f s\n", (double) (now_usec() - t0) / 1e6);
    EXPECT(built == 0);
    if (launched)
        pthread_join(t, NULL);
    printf("appliance launch %.1f s%s%s\n", (double) l.usec / 1e6, l.err ? ": " : "",
           l.err ? l.err->message : "");
    EXPECT(l.a != NULL);
    if (l.a)
        case_sandbox("after launch");
    if (l.a && built == 0) {
        case_hostile(l.a);
        case_many_then_garbage(l.a);
        case_killed(l.a);
        case_disk_order(l.a);
        EXPECT(extract_appliance_alive(l.a));
        case_sandbox("after the salvages");
    }
    extract_appliance_free(l.a);
    if (built == 0)
        case_cold(&cfg);
    case_launch_deadline(&cfg);
    error_free(l.err);
    if (mounted)
        sh("umount -l %s", mnt);
    if (many_src[0])
        sh("rm -rf '%s'", many_src);
    test_rm_rf(scratch);
    free(scratch);
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
