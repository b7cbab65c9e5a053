/* Integration tests of the warm pool (issue 3): real libvirtd, real guests restored from the
 * project's minimal image. One scenario per invocation: test_pool <scenario> [copy|template]
 * (guest_memory; issue 15: every scenario runs on copy-on-write template clones too). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "macro.h"
#include "poolharness.h"
#include "testlib.h"
#include "timeutil.h"
#include "virt.h"

#define FILL_TIMEOUT_USEC (240 * USEC_PER_SEC)
#define EXEC_TIMEOUT_USEC (60 * USEC_PER_SEC)

static bool template_mode;

static size_t
count_files(const char *dir, const char *suffix)
{
    char cmd[1400], line[64];
    snprintf(cmd, sizeof(cmd), "ls -1 '%s' 2>/dev/null | grep -c '%s$'", dir, suffix);
    FILE *f = popen(cmd, "r");
    size_t n = f && fgets(line, sizeof(line), f) ? (size_t) strtoul(line, NULL, 10) : 0;
    if (f)
        pclose(f);
    return n;
}

/* Template mode: the pool really runs clones (no silent fallback to copy), from one template
 * of the one shape, and keeps no per-slot save image. */
static void
check_guest_memory(Harness *h)
{
    PoolStatus st;
    char snaps[1200];
    pool_status(h->pool, &st);
    if (!template_mode) {
        TEST_CHECK(st.guest_memory == POOL_MEMORY_COPY, "copy mode: %s", st.guest_memory_reason);
        return;
    }
    TEST_CHECK(st.guest_memory == POOL_MEMORY_TEMPLATE && st.shapes[0].template_ready,
               "template mode not in effect: %s", st.guest_memory_reason);
    snprintf(snaps, sizeof(snaps), "%s/snapshots", h->state_dir);
    TEST_CHECK(count_files(snaps, ".save") == 0, "per-slot save images in template mode");
    TEST_CHECK(count_files(st.template_dir, ".mem") == 1 &&
                   count_files(st.template_dir, ".state") == 1,
               "expected one template (.mem, .state) in %s", st.template_dir);
}

static void
wait_full(Harness *h)
{
    TEST_CHECK(harness_wait_full(h, FILL_TIMEOUT_USEC), "pool not full within %llu s",
               (unsigned long long) (FILL_TIMEOUT_USEC / USEC_PER_SEC));
    check_guest_memory(h);
}

/* sha256 of the shape's template RAM file (template mode), "" if unreadable. */
static void
template_mem_sha256(Harness *h, char out[65])
{
    PoolStatus st;
    char cmd[1400];
    pool_status(h->pool, &st);
    out[0] = '\0';
    snprintf(cmd, sizeof(cmd), "sha256sum '%s/%s.mem'", st.template_dir, h->shape.name);
    FILE *f = popen(cmd, "r");
    if (f && fscanf(f, "%64s", out) != 1)
        out[0] = '\0';
    if (f)
        pclose(f);
}

/* The VM generation id libvirt gave a running domain ("" if none). */
static void
domain_genid(const char *name, char *out, size_t cap)
{
    char cmd[256], line[512];
    out[0] = '\0';
    snprintf(cmd, sizeof(cmd), "virsh -q -c qemu:///system dumpxml %s", name);
    FILE *f = popen(cmd, "r");
    while (f && fgets(line, sizeof(line), f)) {
        char *a = strstr(line, "<genid>"), *b = a ? strstr(a, "</genid>") : NULL;
        if (a && b)
            snprintf(out, cap, "%.*s", (int) (b - a - 7), a + 7);
    }
    if (f)
        pclose(f);
}

/* A guest's clock runs at the host's rate: what it measured across its 2 s sleep (lines 4
 * and 5 of its output) lies within what the host measured around the whole exec (+ one
 * 10 ms step). A clock running fast (a mis-calibrated TSC, ticks caught up) measures more
 * than the host could. */
static void
check_clock_rate(const char *who, const char *out, double bracket_s)
{
    const char *p = out;
    double t1 = 0, t2 = 0;
    for (int line = 0; line < 3 && p; line++)
        p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL;
    TEST_CHECK(p && sscanf(p, "%lf %lf", &t1, &t2) == 2, "%s: no clock readings in: %s", who, out);
    printf("%s: guest measured %.3f s across its 2 s sleep; the host bracket was %.3f s\n", who,
           t2 - t1, bracket_s);
    TEST_CHECK(t2 - t1 >= 1.99 && t2 - t1 <= bracket_s + 0.02,
               "%s: guest clock rate: %.3f s in a host bracket of %.3f s\n%s", who, t2 - t1,
               bracket_s, out);
}

/* Two pools of one host, each making its template at the same time (two daemons, or a daemon
 * and this harness): both must end up on their own template. Their template domains once had
 * one fixed UUID per shape index; the second was refused ("already defined with uuid") and
 * fell back to copy. */
static void
twin_pools(Harness *h)
{
    Harness twin;
    PoolStatus st;
    harness_start(&twin, "minimal", 1, 1, NULL);
    uint64_t deadline = now_usec() + FILL_TIMEOUT_USEC;
    while (!(pool_is_full(h->pool) && pool_is_full(twin.pool)) && now_usec() < deadline) {
        harness_wait_full(h, 100 * USEC_PER_MSEC); /* each loop in turn */
        harness_wait_full(&twin, 100 * USEC_PER_MSEC);
    }
    pool_status(twin.pool, &st);
    TEST_CHECK(st.guest_memory == POOL_MEMORY_TEMPLATE && st.shapes[0].template_ready,
               "the twin pool is not on its template: %s", st.guest_memory_reason);
    harness_stop(&twin);
    harness_cleanup(&twin);
}

/* Two guests restored from one snapshot must read different random bytes at the same time,
 * have different boot ids, and a clock set from the host. */
static void
scenario_clones(void)
{
    Harness h;
    TestSession a, b;
    /* then the guest's clock rate: its uptime (the clocksource that CLOCK_REALTIME runs on,
     * 10 ms steps) around a 2 s sleep, which the host brackets; and that clocksource */
    const char *argv[] = {"sh", "-c",
                          "cat /proc/sys/kernel/random/boot_id; "
                          "head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \\n'; echo; date +%s; "
                          "cut -d' ' -f1 /proc/uptime; sleep 2; cut -d' ' -f1 /proc/uptime; "
                          "cat /sys/devices/system/clocksource/clocksource0/current_clocksource",
                          NULL};

    const char *scribble[] = {"sh", "-c", "dd if=/dev/urandom of=/tmp/scribble bs=1M count=24 "
                                          "2>/dev/null && sync && echo scribbled", NULL};
    char mem_before[65] = "", mem_after[65] = "";

    harness_start(&h, "minimal", 2, 2, NULL);
    if (template_mode)
        twin_pools(&h);
    wait_full(&h);
    if (template_mode)
        template_mem_sha256(&h, mem_before);
    TEST_CHECK(ts_take(&h, &a, "clone-a") && ts_take(&h, &b, "clone-b"), "take: %s %s",
               a.error_message, b.error_message);
    uint64_t bracket_start = now_usec();
    TEST_CHECK(ts_exec_start(&a, argv) && ts_exec_start(&b, argv), "exec start");
    TEST_CHECK(ts_exec_wait(&a, EXEC_TIMEOUT_USEC) && ts_exec_wait(&b, EXEC_TIMEOUT_USEC),
               "exec: a=%s b=%s", a.error_message, b.error_message);
    double bracket_s = (double) (now_usec() - bracket_start) / 1e6;
    TEST_CHECK(a.exit_code == 0 && b.exit_code == 0, "exit codes %d %d (stderr %s / %s)",
               a.exit_code, b.exit_code, a.err, b.err);
    char boot_a[64], rand_a[64], boot_b[64], rand_b[64];
    long long clock_a, clock_b;
    TEST_CHECK(sscanf(a.out, "%63s %63s %lld", boot_a, rand_a, &clock_a) == 3, "output a: %s",
               a.out);
    TEST_CHECK(sscanf(b.out, "%63s %63s %lld", boot_b, rand_b, &clock_b) == 3, "output b: %s",
               b.out);
    printf("a: boot_id=%s urandom=%s\nb: boot_id=%s urandom=%s\n", boot_a, rand_a, boot_b, rand_b);
    TEST_CHECK(strlen(rand_a) == 32 && strlen(boot_a) == 36, "malformed output: %s", a.out);
    TEST_CHECK(strcmp(rand_a, rand_b) != 0, "clones read the same random bytes: %s", rand_a);
    TEST_CHECK(strcmp(boot_a, boot_b) != 0, "clones have the same boot id: %s", boot_a);
    long long host = (long long) time(NULL);
    TEST_CHECK(llabs(clock_a - host) <= 10 && llabs(clock_b - host) <= 10,
               "guest clocks %lld %lld vs host %lld\n--- a ---\n%s--- b ---\n%s", clock_a,
               clock_b, host, a.out, b.out);
    check_clock_rate("a", a.out, bracket_s);
    check_clock_rate("b", b.out, bracket_s);
    if (template_mode) { /* a fresh VM generation id each, in the live XML */
        char gen_a[64], gen_b[64];
        domain_genid(guest_name(a.g), gen_a, sizeof(gen_a));
        domain_genid(guest_name(b.g), gen_b, sizeof(gen_b));
        printf("a: genid=%s\nb: genid=%s\n", gen_a, gen_b);
        TEST_CHECK(strlen(gen_a) == 36 && strcmp(gen_a, gen_b) != 0,
                   "clones' VM generation ids '%s' '%s'", gen_a, gen_b);
        /* what a clone writes stays its own: the template's RAM file is untouched */
        TEST_CHECK(ts_run(&a, scribble, EXEC_TIMEOUT_USEC) == 0, "scribble: %s %s",
                   a.error_message, a.err);
        template_mem_sha256(&h, mem_after);
        printf("template RAM sha256 before %s after %s\n", mem_before, mem_after);
        TEST_CHECK(mem_before[0] && strcmp(mem_before, mem_after) == 0,
                   "a clone's writes reached the template file");
    }
    ts_release(&a);
    ts_release(&b);
    harness_stop(&h);
    TEST_CHECK(harness_domain_count(&h) == 0, "domains left after a clean stop");
    harness_cleanup(&h);
}

static void
print_status(const char *when, const PoolStatus *st)
{
    printf("%s: accel=%s probes=%llu probe_failures=%llu restores=%llu restore_failures=%llu "
           "prepare_failures=%llu boots=%llu destroys=%llu wedged=%llu broken=%llu\n"
           "  reason: %s\n",
           when, accel_to_string(st->accel), (unsigned long long) st->accel_probes,
           (unsigned long long) st->accel_probe_failures, (unsigned long long) st->restores,
           (unsigned long long) st->restore_failures, (unsigned long long) st->prepare_failures,
           (unsigned long long) st->boots,
           (unsigned long long) st->destroys, (unsigned long long) st->wedged,
           (unsigned long long) st->broken, st->accel_reason);
}

/* After N sessions the pool is back at its warm target, with fresh restores each time. */
static void
scenario_refill(void)
{
    Harness h;
    const unsigned n = 4;
    const char *argv[] = {"echo", "hi", NULL};

    harness_start(&h, "minimal", 1, 2, NULL);
    wait_full(&h);
    for (unsigned i = 0; i < n; i++) {
        TestSession s;
        char id[32];
        snprintf(id, sizeof(id), "refill-%u", i);
        TEST_CHECK(ts_take(&h, &s, id), "take %u: %s", i, s.error_message);
        TEST_CHECK(ts_run(&s, argv, EXEC_TIMEOUT_USEC) == 0, "exec %u: %s", i, s.error_message);
        TEST_CHECK(strcmp(s.out, "hi\n") == 0, "output %u: '%s'", i, s.out);
        ts_release(&s);
        wait_full(&h);
    }
    PoolStatus st;
    pool_status(h.pool, &st);
    printf("restores=%llu destroys=%llu idle=%u busy=%u\n", (unsigned long long) st.restores,
           (unsigned long long) st.destroys, st.shapes[0].idle, st.shapes[0].busy);
    TEST_CHECK(st.shapes[0].idle == 1 && st.shapes[0].busy == 0, "not back at target");
    TEST_CHECK(st.restores >= n + 1, "only %llu restores for %u sessions",
               (unsigned long long) st.restores, n);
    print_status("after refills", &st);
    TEST_CHECK(st.restore_failures == 0 && st.broken == 0 && st.wedged == 0 &&
                   st.prepare_failures == 0,
               "pool failures");
    harness_stop(&h);
    TEST_CHECK(harness_domain_count(&h) == 0, "domains left after a clean stop");
    harness_cleanup(&h);
}

/* A crash leaves domains behind; the next start destroys them and removes stale files; a
 * further start after a clean stop has nothing to do and makes no new snapshot. */
static void
scenario_restart(void)
{
    Harness h;
    char leftover[128], ghost[1200];

    harness_start(&h, "minimal", 1, 1, NULL);
    wait_full(&h);
    HarnessOptions again = {.image = "minimal", .warm = 1, .slots = 1};
    char *state = strdup(h.state_dir);
    char prefix[sizeof(h.prefix)];
    memcpy(prefix, h.prefix, sizeof(prefix));
    again.state_dir = state;
    again.prefix = prefix;
    snprintf(leftover, sizeof(leftover), "%sminimal-0", prefix);
    pid_t old_pid = virt_qemu_pid(leftover);
    TEST_CHECK(old_pid > 0, "no QEMU pid for %s", leftover);
    harness_abandon(&h); /* as if the daemon crashed: the domain keeps running */
    TEST_CHECK(!virt_pid_gone(old_pid), "the abandoned guest should still run");
    snprintf(ghost, sizeof(ghost), "%s/snapshots/%sghost-0.save", state, prefix);
    FILE *f = fopen(ghost, "w");
    TEST_CHECK(f != NULL, "create %s", ghost);
    fclose(f);
    char ghost_tmpl[1200] = ""; /* template mode: a template of a pool that no longer exists */
    if (template_mode) {
        TEST_CHECK(h.template_dir != NULL, "no template directory");
        snprintf(ghost_tmpl, sizeof(ghost_tmpl), "%s/ghost.mem", h.template_dir);
        TEST_CHECK((f = fopen(ghost_tmpl, "w")) != NULL, "create %s", ghost_tmpl);
        fclose(f);
    }

    Harness r;
    harness_start_opts(&r, &again);
    wait_full(&r);
    TEST_CHECK(virt_pid_gone(old_pid), "leftover QEMU %d still runs after restart", (int) old_pid);
    TEST_CHECK(access(ghost, F_OK) < 0, "stale snapshot %s was not removed", ghost);
    TEST_CHECK(!ghost_tmpl[0] || access(ghost_tmpl, F_OK) < 0, "stale template %s was not removed",
               ghost_tmpl);
    PoolStatus st;
    pool_status(r.pool, &st);
    TEST_CHECK(st.boots == 0, "the restart made %llu new snapshots instead of reusing",
               (unsigned long long) st.boots);
    TEST_CHECK(harness_domain_count(&r) == 1, "expected exactly the one warm guest");
    char tdir[1200] = "";
    if (template_mode)
        snprintf(tdir, sizeof(tdir), "%s", st.template_dir);
    harness_stop(&r);
    TEST_CHECK(harness_domain_count(&r) == 0, "domains left after a clean stop");
    /* Template mode: a clean stop gives a tmpfs template's memory back (the harness's
     * template_dir is the daemon's own choice, on /dev/shm here). */
    bool tmpfs = tdir[0] && strncmp(tdir, "/dev/shm/", 9) == 0;
    TEST_CHECK(!tmpfs || access(tdir, F_OK) < 0, "templates left on the tmpfs after a clean "
               "stop: %s", tdir);

    /* After a clean stop, a start finds nothing to reconcile and reuses the snapshot (copy),
     * or boots the one template again if the stop removed it from the tmpfs. */
    Harness t;
    harness_start_opts(&t, &again);
    wait_full(&t);
    pool_status(t.pool, &st);
    TEST_CHECK(st.boots == (tmpfs ? 1u : 0u) && st.destroys == 0,
               "second start was not a no-op: boots=%llu "
               "destroys=%llu",
               (unsigned long long) st.boots, (unsigned long long) st.destroys);
    harness_stop(&t);
    printf("restart reconciliation ok (leftover pid %d gone, ghost snapshot removed)\n",
           (int) old_pid);
    harness_cleanup(&t);
    free(state);
}

/* The template path failing at start (here: a template directory QEMU's user cannot reach)
 * drops the pool to copy, loudly and with the reason; the pool fills and serves. */
static void
scenario_fallback(void)
{
    Harness h;
    TestSession s;
    char dir[1200];
    const char *argv[] = {"echo", "copied", NULL};
    const char *state = test_mkdtemp("stockade-pool");
    snprintf(dir, sizeof(dir), "%s/private/templates", state);
    TEST_CHECK(chmod(state, 0711) == 0, "chmod");
    HarnessOptions o = {.image = "minimal", .warm = 1, .slots = 1, .state_dir = state,
                        .guest_memory = "template", .template_dir = dir};
    char private_dir[1200];
    snprintf(private_dir, sizeof(private_dir), "%s/private", state);
    TEST_CHECK(mkdir(private_dir, 0700) == 0, "mkdir %s", private_dir); /* root only */

    template_mode = false; /* what must be in effect once full */
    harness_start_opts(&h, &o);
    wait_full(&h);
    PoolStatus st;
    pool_status(h.pool, &st);
    printf("guest memory in effect: %s: %s\n", pool_guest_memory_to_string(st.guest_memory),
           st.guest_memory_reason);
    TEST_CHECK(strstr(st.guest_memory_reason, "cannot open") != NULL, "reason: %s",
               st.guest_memory_reason);
    TEST_CHECK(ts_take(&h, &s, "fallback"), "take: %s", s.error_message);
    TEST_CHECK(ts_run(&s, argv, EXEC_TIMEOUT_USEC) == 0 && strcmp(s.out, "copied\n") == 0,
               "exec: %s", s.error_message);
    ts_release(&s);
    harness_stop(&h);
    TEST_CHECK(harness_domain_count(&h) == 0, "domains left after a clean stop");
    harness_cleanup(&h);
}

static bool
cond_lost(void *userdata)
{
    return ((TestSession *) userdata)->lost;
}

/* A guest whose QEMU is stopped goes silent: it is destroyed and replaced, and another guest
 * keeps answering throughout. */
static void
scenario_wedged(void)
{
    Harness h;
    TestSession a, b;
    const char *argv[] = {"echo", "alive", NULL};
    HarnessOptions o = {.image = "minimal",
                        .warm = 2,
                        .slots = 3,
                        .health_interval_usec = 1 * USEC_PER_SEC,
                        .ping_timeout_usec = 2 * USEC_PER_SEC};

    harness_start_opts(&h, &o);
    wait_full(&h);
    TEST_CHECK(ts_take(&h, &a, "wedge-a") && ts_take(&h, &b, "wedge-b"), "take");
    TEST_CHECK(ts_run(&a, argv, EXEC_TIMEOUT_USEC) == 0 && ts_run(&b, argv, EXEC_TIMEOUT_USEC) == 0,
               "first execs: %s %s", a.error_message, b.error_message);
    pid_t pid = virt_qemu_pid(guest_name(a.g));
    TEST_CHECK(pid > 0, "no pid for %s", guest_name(a.g));
    TEST_CHECK(kill(pid, SIGSTOP) == 0, "SIGSTOP %d", (int) pid);
    uint64_t t0 = now_usec();
    for (int i = 0; i < 3; i++) /* b answers while a is frozen */
        TEST_CHECK(ts_run(&b, argv, EXEC_TIMEOUT_USEC) == 0, "b stopped answering: %s",
                   b.error_message);
    TEST_CHECK(harness_run_until(&h, cond_lost, &a, 30 * USEC_PER_SEC),
               "the stopped guest was not declared lost");
    printf("wedged guest lost after %.1f s: %s\n", (double) (now_usec() - t0) / 1e6,
           a.error_message);
    ts_release(&a);
    kill(pid, SIGCONT); /* let libvirt finish the destroy */
    TEST_CHECK(ts_run(&b, argv, EXEC_TIMEOUT_USEC) == 0, "b after a's loss: %s", b.error_message);
    ts_release(&b);
    wait_full(&h);
    PoolStatus st;
    pool_status(h.pool, &st);
    TEST_CHECK(st.wedged >= 1, "wedged counter not incremented");
    harness_stop(&h);
    TEST_CHECK(harness_domain_count(&h) == 0, "domains left after a clean stop");
    harness_cleanup(&h);
}

/* ------------------------------------------------------------------ impostor */

/* Waits for a new socket file at `path` (the slot's next restore), connects to it before the
 * daemon does, and writes garbage until told to stop. New: another inode, or the same inode
 * number with another ctime (a clean-clone CI run saw the file system hand the next socket
 * the old one's inode). The old file, relabelled after its QEMU exited, has a new ctime too,
 * but nothing listens on it any more: connect() fails and the impostor tries again. */
typedef struct Impostor {
    char path[sizeof(((struct sockaddr_un *) 0)->sun_path)];
    ino_t old_ino;
    struct timespec old_ctim;
    atomic_bool stop;
    atomic_bool connected;
    atomic_ullong garbage_bytes, guest_bytes;
} Impostor;

static int
impostor_connect(const Impostor *im)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct stat st;

    if (stat(im->path, &st) < 0 ||
        (st.st_ino == im->old_ino && st.st_ctim.tv_sec == im->old_ctim.tv_sec &&
         st.st_ctim.tv_nsec == im->old_ctim.tv_nsec))
        return -1;
    memcpy(sa.sun_path, im->path, sizeof(sa.sun_path));
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void *
impostor_main(void *arg)
{
    Impostor *im = arg;
    int fd = -1;
    unsigned char garbage[4096], in[4096];

    while (!atomic_load(&im->stop) && fd < 0) {
        fd = impostor_connect(im);
        if (fd < 0)
            usleep(200);
    }
    if (fd < 0)
        return NULL;
    atomic_store(&im->connected, true);
    for (size_t i = 0; i < sizeof(garbage); i++) /* a huge length prefix, then noise */
        garbage[i] = (unsigned char) (i < 4 ? 0x7f : (i * 131u) ^ 0x5a);
    while (!atomic_load(&im->stop)) {
        ssize_t w = send(fd, garbage, sizeof(garbage), MSG_NOSIGNAL);
        if (w > 0)
            atomic_fetch_add(&im->garbage_bytes, (unsigned long long) w);
        ssize_t r = recv(fd, in, sizeof(in), 0);
        if (r > 0)
            atomic_fetch_add(&im->guest_bytes, (unsigned long long) r);
        else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
            break; /* QEMU went away: the guest was destroyed */
        usleep(1000);
    }
    close(fd);
    return NULL;
}

typedef struct ImpostorWait {
    Harness *h;
    uint64_t broken_before;
} ImpostorWait;

static bool
cond_broken(void *userdata)
{
    ImpostorWait *w = userdata;
    PoolStatus st;
    pool_status(w->h->pool, &st);
    return st.broken > w->broken_before;
}

/* A process on the host connects to a restored guest's channel socket before the daemon
 * and writes garbage: the daemon's sync goes unanswered, so it destroys that guest and
 * restores a fresh one, while a guest already handed out keeps answering. */
static void
scenario_impostor(void)
{
    Harness h;
    TestSession a, b;
    const char *argv[] = {"echo", "alive", NULL};
    HarnessOptions o = {
        .image = "minimal", .warm = 1, .slots = 2, .sync_timeout_usec = 5 * USEC_PER_SEC};

    harness_start_opts(&h, &o);
    wait_full(&h);
    TEST_CHECK(ts_take(&h, &b, "bystander"), "take b: %s", b.error_message);
    wait_full(&h); /* the other slot is restored and idle */
    TEST_CHECK(ts_take(&h, &a, "victim"), "take a: %s", a.error_message);
    TEST_CHECK(ts_run(&a, argv, EXEC_TIMEOUT_USEC) == 0, "a: %s", a.error_message);

    Impostor im = {0};
    struct stat st0;
    int n = snprintf(im.path, sizeof(im.path), "%s/guests/%s/channel.sock", h.state_dir,
                     guest_name(a.g));
    TEST_CHECK(n > 0 && (size_t) n < sizeof(im.path), "socket path too long for sun_path");
    TEST_CHECK(stat(im.path, &st0) == 0, "no channel socket at %s", im.path);
    im.old_ino = st0.st_ino;
    im.old_ctim = st0.st_ctim;
    PoolStatus before;
    pool_status(h.pool, &before);
    pthread_t t;
    TEST_CHECK(pthread_create(&t, NULL, impostor_main, &im) == 0, "pthread_create");
    ts_release(&a); /* the slot is destroyed and restored: the impostor is waiting for it */

    ImpostorWait w = {.h = &h, .broken_before = before.broken};
    uint64_t t0 = now_usec();
    bool destroyed = harness_run_until(&h, cond_broken, &w, 60 * USEC_PER_SEC);
    double secs = (double) (now_usec() - t0) / 1e6;
    for (int i = 0; i < 3; i++) /* b answers while the impostor is at work */
        TEST_CHECK(ts_run(&b, argv, EXEC_TIMEOUT_USEC) == 0 && strcmp(b.out, "alive\n") == 0,
                   "b stopped answering: %s", b.error_message);
    atomic_store(&im.stop, true);
    pthread_join(t, NULL);
    printf("impostor: connected=%d, wrote %llu bytes of garbage, read %llu bytes meant for the "
           "daemon; slot failed after %.1f s\n",
           (int) atomic_load(&im.connected), (unsigned long long) atomic_load(&im.garbage_bytes),
           (unsigned long long) atomic_load(&im.guest_bytes), secs);
    TEST_CHECK(atomic_load(&im.connected), "the impostor never connected to %s", im.path);
    TEST_CHECK(atomic_load(&im.garbage_bytes) > 0, "the impostor wrote nothing");
    TEST_CHECK(destroyed, "a guest whose channel an impostor took was not failed within 60 s");

    /* The slot comes back with a fresh restore and a clean channel, and serves a session. */
    wait_full(&h);
    PoolStatus after;
    pool_status(h.pool, &after);
    printf("restores %llu -> %llu, destroys %llu -> %llu, broken %llu -> %llu\n",
           (unsigned long long) before.restores, (unsigned long long) after.restores,
           (unsigned long long) before.destroys, (unsigned long long) after.destroys,
           (unsigned long long) before.broken, (unsigned long long) after.broken);
    TEST_CHECK(after.restores >= before.restores + 2, "the failed slot was not restored again");
    TEST_CHECK(after.destroys >= before.destroys + 2, "the impostor's guest was not destroyed");
    TestSession c;
    TEST_CHECK(ts_take(&h, &c, "after-impostor"), "take c: %s", c.error_message);
    TEST_CHECK(ts_run(&c, argv, EXEC_TIMEOUT_USEC) == 0 && strcmp(c.out, "alive\n") == 0,
               "fresh guest after the impostor: %s", c.error_message);
    ts_release(&c);
    ts_release(&b);
    harness_stop(&h);
    TEST_CHECK(harness_domain_count(&h) == 0, "domains left after a clean stop");
    harness_cleanup(&h);
}

/* accel=auto's KVM probe. "host": as this host's KVM has it (QEMU asserts on MSR 0x10a on
 * some machines of this kind, the guest hangs on others, a good host passes). The others are
 * faults made on purpose: the probe boots under TCG with a kernel command line that fails it
 * the same way on every host. */
static const struct {
    const char *mode, *append, *what;
} probe_faults[] = {
    {"host", NULL, "whatever this host's KVM does"},
    {"panic", "rdinit=/nonexistent init=/nonexistent",
     "the kernel panics, reboots and QEMU exits before the channel syncs"},
    {"hang", "rdinit=/nonexistent init=/nonexistent panic=0", "the kernel hangs in boot"},
    {"nosync", "stockade.port=org.stockade.absent",
     "the runner starts but never syncs (it waits for a port that does not exist)"},
};
#define PROBE_TIMEOUT_USEC (8 * USEC_PER_SEC)

typedef struct {
    Harness *h;
    size_t want;
} DomainCountWait;

static bool
cond_domain_count(void *userdata)
{
    DomainCountWait *w = userdata;
    return harness_domain_count(w->h) == w->want;
}


/* However the probe fails, it decides TCG and is counted as a probe failure only: the pool's
 * failure counters and destroys stay 0, the pool fills and serves, and a restart on the same
 * state uses the cached verdict without probing again. */
static void
scenario_probe(const char *mode)
{
    size_t f = 0;
    while (f < ELEMENTSOF(probe_faults) && strcmp(probe_faults[f].mode, mode) != 0)
        f++;
    TEST_CHECK(f < ELEMENTSOF(probe_faults), "unknown probe fault %s", mode);
    const char *append = probe_faults[f].append;
    /* A fault made on purpose runs the probe under TCG whatever this host has; only the
     * host's own probe needs its KVM (without one, integration_accel checks the no-probe
     * path through a daemon). */
    if (!append && access("/dev/kvm", R_OK | W_OK) < 0)
        test_skip("no usable /dev/kvm: accel=auto decides TCG without a probe");
    printf("probe fault %s: %s (appended: %s)\n", mode, probe_faults[f].what,
           append ? append : "nothing");

    Harness h;
    HarnessOptions o = {.image = "minimal", .warm = 1, .slots = 1,
                        .kvm_probe_append = append, .kvm_probe_under_tcg = append != NULL,
                        .kvm_probe_timeout_usec = PROBE_TIMEOUT_USEC};
    harness_start_opts(&h, &o);
    wait_full(&h);
    DomainCountWait dw = {.h = &h, .want = 1};
    TEST_CHECK(harness_run_until(&h, cond_domain_count, &dw, 30 * USEC_PER_SEC),
               "the probe's domain is still there: %zu domains", harness_domain_count(&h));
    PoolStatus st;
    pool_status(h.pool, &st);
    print_status("after fill", &st);
    /* Only the host's own KVM may pass the probe. */
    bool kvm = !append && st.accel == ACCEL_KVM;
    TEST_CHECK(st.accel_decided && (kvm || st.accel == ACCEL_TCG), "accel %s",
               accel_to_string(st.accel));
    TEST_CHECK(st.accel_probes == 1 && st.accel_probe_failures == !kvm, "probe counters");
    TEST_CHECK(kvm || strstr(st.accel_reason, "KVM probe failed") != NULL, "reason: %s",
               st.accel_reason);
    TEST_CHECK(st.restore_failures == 0 && st.broken == 0 && st.wedged == 0 &&
                   st.prepare_failures == 0 && st.destroys == 0,
               "the probe's failure leaked into the pool's counters");

    TestSession s;
    const char *argv[] = {"echo", "after-probe", NULL};
    TEST_CHECK(ts_take(&h, &s, "probe-1"), "take: %s", s.error_message);
    TEST_CHECK(ts_run(&s, argv, EXEC_TIMEOUT_USEC) == 0, "exec: %s", s.error_message);
    TEST_CHECK(strcmp(s.out, "after-probe\n") == 0, "output '%s'", s.out);
    ts_release(&s);
    wait_full(&h);
    pool_status(h.pool, &st);
    print_status("after a session", &st);
    TEST_CHECK(st.destroys == 1 && st.broken == 0 && st.wedged == 0 && st.restore_failures == 0,
               "after one session: destroys=%llu", (unsigned long long) st.destroys);
    char *state = strdup(h.state_dir);
    char prefix[sizeof(h.prefix)];
    memcpy(prefix, h.prefix, sizeof(prefix));
    harness_stop(&h);
    TEST_CHECK(harness_domain_count(&h) == 0, "domains left after a clean stop");

    /* A daemon restart on this boot: the cached verdict, no probe, no 8 s wait. */
    Harness r;
    HarnessOptions again = o;
    again.state_dir = state;
    again.prefix = prefix;
    uint64_t t0 = now_usec();
    harness_start_opts(&r, &again);
    wait_full(&r);
    pool_status(r.pool, &st);
    print_status("restart", &st);
    printf("restart to a full pool: %.2f s\n", (double) (now_usec() - t0) / 1e6);
    TEST_CHECK(st.accel_decided && st.accel == (kvm ? ACCEL_KVM : ACCEL_TCG) &&
                   st.accel_probes == 0 && st.accel_probe_failures == 0,
               "the restart probed again instead of using the cached verdict");
    TEST_CHECK(strstr(st.accel_reason, "cached verdict") != NULL, "reason: %s", st.accel_reason);
    harness_stop(&r);
    harness_cleanup(&r);
    free(state);
}

int
main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGPIPE, SIG_IGN); /* as the daemon: a libvirtd that dies must not kill the harness
                               * before it destroys its guests */
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: %s clones|refill|restart|fallback|wedged|impostor|probe-MODE "
                        "[copy|template]\n",
                argv[0]);
        return 2;
    }
    harness_default_guest_memory = argc == 3 ? argv[2] : "copy";
    template_mode = strcmp(harness_default_guest_memory, "template") == 0;
    if (strcmp(argv[1], "clones") == 0)
        scenario_clones();
    else if (strcmp(argv[1], "refill") == 0)
        scenario_refill();
    else if (strcmp(argv[1], "restart") == 0)
        scenario_restart();
    else if (strcmp(argv[1], "fallback") == 0)
        scenario_fallback();
    else if (strcmp(argv[1], "wedged") == 0)
        scenario_wedged();
    else if (strcmp(argv[1], "impostor") == 0)
        scenario_impostor();
    else if (strncmp(argv[1], "probe-", 6) == 0)
        scenario_probe(argv[1] + 6);
    else
        return 2;
    printf("ok\n");
    return 0;
}
