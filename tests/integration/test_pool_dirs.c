/* The memory templates' folder made first by another user (issue 25, finding 2): real libvirtd,
 * the minimal image, guest_memory = template; no guest runs (the pool is made, not started:
 * the folder is chosen and opened by pool_new()).
 *
 * With template_dir unset the templates go to /dev/shm/stockade-<12 hex of sha256(state_dir)>,
 * a name anybody can predict in a folder anybody can write. Here uid 65534 makes that folder
 * first, 0777 with a minimal.state, .mem and .key of its own; then, in a second round, puts a
 * symlink there to a folder it owns. Each time the pool must leave it alone (owner, mode and
 * contents as they were, nothing created through the symlink), keep guest_memory = template,
 * and use a folder of its own: stockade-<hash>-<random hex>, root's, 0711. A restart on the same
 * state directory finds that folder again. `configured`: a template_dir the configuration
 * names, made by the pool, or refused when uid 65534 owns it. */
#define TEST_CLEANUP cleanup
static void cleanup(void);

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "poolharness.h"
#include "sha256.h"
#include "testlib.h"

#define NOBODY_UID 65534
#define PLANTED_BYTES "uid 65534 was here\n"

static char squat[256];    /* /dev/shm/stockade-<hash of the state directory> */
static char theirs[256];   /* a folder uid 65534 owns, where the symlink points */
static char ours[2][1200]; /* the folders the pool chose */
static char *state;

static void
cleanup(void)
{
    if (squat[0]) {
        (void) unlink(squat);
        test_rm_rf(squat);
    }
    for (size_t i = 0; i < ELEMENTSOF(ours); i++)
        if (ours[i][0])
            test_rm_rf(ours[i]);
    if (theirs[0])
        test_rm_rf(theirs);
    if (state)
        test_rm_rf(state);
}

static void
plant(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0666);
    TEST_CHECK(fd >= 0 && write(fd, PLANTED_BYTES, strlen(PLANTED_BYTES)) > 0, "plant %s", path);
    close(fd);
    TEST_CHECK(chown(path, NOBODY_UID, NOBODY_UID) == 0 && chmod(path, 0666) == 0, "chown %s",
               path);
}

/* What uid 65534 made first: a folder 0777 holding a template of its own. */
static void
squat_folder(void)
{
    TEST_CHECK(mkdir(squat, 0700) == 0, "mkdir %s: %m", squat);
    plant(squat, "minimal.mem");
    plant(squat, "minimal.state");
    plant(squat, "minimal.key");
    TEST_CHECK(chown(squat, NOBODY_UID, NOBODY_UID) == 0 && chmod(squat, 0777) == 0, "chown");
}

static size_t
entries(const char *dir)
{
    char cmd[600], line[32];
    snprintf(cmd, sizeof(cmd), "ls -A1 '%s' | wc -l", dir);
    FILE *f = popen(cmd, "r");
    size_t n = f && fgets(line, sizeof(line), f) ? strtoul(line, NULL, 10) : 999;
    if (f)
        pclose(f);
    return n;
}

static void
check_untouched(const char *dir, size_t want_entries)
{
    struct stat st;
    TEST_CHECK(lstat(dir, &st) == 0 && S_ISDIR(st.st_mode), "%s is gone", dir);
    TEST_CHECK(st.st_uid == NOBODY_UID && (st.st_mode & 07777) == 0777,
               "%s was changed: uid %u mode %04o", dir, (unsigned) st.st_uid,
               (unsigned) (st.st_mode & 07777));
    TEST_CHECK(entries(dir) == want_entries, "%s holds %zu entries, not %zu", dir, entries(dir),
               want_entries);
    if (want_entries == 0)
        return;
    char path[512], buf[64] = "";
    snprintf(path, sizeof(path), "%s/minimal.state", dir);
    FILE *f = fopen(path, "r");
    TEST_CHECK(f && fgets(buf, sizeof(buf), f) && strcmp(buf, PLANTED_BYTES) == 0,
               "%s was rewritten", path);
    fclose(f);
}

/* Starts a pool on state (not the pool: only pool_new), returns the folder it chose. */
static void
choose(const char *label, char *ret_dir, size_t len)
{
    Harness h;
    HarnessOptions o = {.image = "minimal",
                        .warm = 1,
                        .slots = 1,
                        .state_dir = state,
                        .guest_memory = "template",
                        .no_start = true};
    PoolStatus st;
    struct stat ds;
    harness_start_opts(&h, &o);
    pool_status(h.pool, &st);
    printf("%s: %s\n", label, st.guest_memory_reason);
    TEST_CHECK(st.guest_memory == POOL_MEMORY_TEMPLATE, "%s: fell back to copy: %s", label,
               st.guest_memory_reason);
    snprintf(ret_dir, len, "%s", st.template_dir);
    TEST_CHECK(strcmp(st.template_dir, squat) != 0, "%s: the pool took %s, made first by uid %d",
               label, squat, NOBODY_UID);
    TEST_CHECK(strncmp(st.template_dir, squat, strlen(squat)) == 0 &&
                   st.template_dir[strlen(squat)] == '-',
               "%s: template_dir %s is not %s-<random>", label, st.template_dir, squat);
    TEST_CHECK(strstr(st.guest_memory_reason, "was refused") != NULL,
               "%s: the reason does not say the folder was refused: %s", label,
               st.guest_memory_reason);
    TEST_CHECK(lstat(st.template_dir, &ds) == 0 && S_ISDIR(ds.st_mode) && ds.st_uid == 0 &&
                   (ds.st_mode & 07777) == 0711,
               "%s: %s is not root's 0711", label, st.template_dir);
    harness_abandon(&h);
}

static void
scenario_squatted(void)
{
    char hex[SHA256_HEX_BYTES + 1], again[1200];

    state = test_mkdtemp("stockade-pool");
    TEST_CHECK(state != NULL, "mkdtemp");
    sha256_hex(state, strlen(state), hex);
    snprintf(squat, sizeof(squat), "/dev/shm/stockade-%.12s", hex);
    squat_folder();
    choose("folder of uid 65534", ours[0], sizeof(ours[0]));
    check_untouched(squat, 3);
    choose("restart", again, sizeof(again));
    TEST_CHECK(strcmp(again, ours[0]) == 0, "a restart chose %s, not its folder %s", again,
               ours[0]);
    check_untouched(squat, 3);

    /* a symlink in its place, owned by uid 65534, to a folder uid 65534 owns */
    TEST_CHECK(test_rm_rf(squat) == 0 && test_rm_rf(ours[0]) == 0, "rm");
    ours[0][0] = '\0';
    snprintf(theirs, sizeof(theirs), "/dev/shm/stockade-theirs-%.12s", hex);
    TEST_CHECK(mkdir(theirs, 0700) == 0 && chown(theirs, NOBODY_UID, NOBODY_UID) == 0 &&
                   chmod(theirs, 0777) == 0,
               "mkdir %s", theirs);
    TEST_CHECK(symlink(theirs, squat) == 0 && lchown(squat, NOBODY_UID, NOBODY_UID) == 0,
               "symlink %s", squat);
    choose("symlink of uid 65534", ours[1], sizeof(ours[1]));
    char target[256] = "";
    TEST_CHECK(readlink(squat, target, sizeof(target) - 1) > 0 && strcmp(target, theirs) == 0,
               "the symlink %s was changed", squat);
    check_untouched(theirs, 0);
}

/* A configured template_dir: one the pool makes under a fresh state directory (its parent,
 * <state>/templates, made by pool_new() first) is used; one that uid 65534 owns is refused and
 * the pool falls back to copy, saying why. */
static void
scenario_configured(void)
{
    char dir[1200];
    Harness h;
    PoolStatus st;
    HarnessOptions o = {.image = "minimal",
                        .warm = 1,
                        .slots = 1,
                        .guest_memory = "template",
                        .template_dir = dir,
                        .no_start = true};

    state = test_mkdtemp("stockade-pool");
    TEST_CHECK(state != NULL, "mkdtemp");
    o.state_dir = state;
    snprintf(dir, sizeof(dir), "%s/templates/memory", state);
    harness_start_opts(&h, &o);
    pool_status(h.pool, &st);
    TEST_CHECK(st.guest_memory == POOL_MEMORY_TEMPLATE && strcmp(st.template_dir, dir) == 0,
               "configured %s: %s", dir, st.guest_memory_reason);
    harness_abandon(&h);

    snprintf(dir, sizeof(dir), "%s/theirs", state);
    TEST_CHECK(mkdir(dir, 0711) == 0 && chown(dir, NOBODY_UID, NOBODY_UID) == 0, "mkdir %s", dir);
    harness_start_opts(&h, &o);
    pool_status(h.pool, &st);
    printf("configured, uid 65534's: %s\n", st.guest_memory_reason);
    TEST_CHECK(st.guest_memory == POOL_MEMORY_COPY &&
                   strstr(st.guest_memory_reason, "is owned by uid 65534") != NULL,
               "a template_dir of uid 65534 was used: %s", st.guest_memory_reason);
    harness_abandon(&h);
}

int
main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    bool squatted = argc == 2 && strcmp(argv[1], "squatted") == 0;
    if (argc != 2 || (!squatted && strcmp(argv[1], "configured") != 0)) {
        fprintf(stderr, "usage: %s squatted|configured\n", argv[0]);
        return 2;
    }
    if (geteuid() != 0)
        test_skip("needs root (chown to uid %d, libvirt qemu:///system)", NOBODY_UID);
    if (squatted)
        scenario_squatted();
    else
        scenario_configured();
    cleanup();
    printf("ok\n");
    return 0;
}
