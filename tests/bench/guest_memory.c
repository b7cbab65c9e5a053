/* See guest_memory.h. Reads /proc/<pid>/smaps of each pooled guest's QEMU and the template
 * directory's files; touches nothing. */
#include "guest_memory.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "virt.h"

#define SMAPS_LINE_BYTES 4352 /* a header line: addresses, flags and a path of up to 4 KiB */

static uint64_t
proc_kib(pid_t pid, const char *file, const char *key)
{
    char path[64], line[256];
    uint64_t v = 0;
    snprintf(path, sizeof(path), "/proc/%d/%s", (int) pid, file);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, key, strlen(key)) == 0) {
            v = strtoull(line + strlen(key), NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

/* One smaps mapping's figures, kept while its lines are read. */
typedef struct {
    bool tcg;      /* anonymous and executable */
    bool template; /* a template RAM file in template_dir */
    uint64_t pss_kib, anon_kib;
} Mapping;

static void
mapping_end(const Mapping *m, uint64_t *tcg_kib, uint64_t *share_kib)
{
    if (m->tcg)
        *tcg_kib += m->pss_kib;
    /* A private file mapping's anonymous pages are the ones this guest wrote (copies of its
     * own); the rest of its Pss is its share of the template's page cache. */
    if (m->template && m->pss_kib > m->anon_kib)
        *share_kib += m->pss_kib - m->anon_kib;
}

/* From /proc/<pid>/smaps: the Pss of TCG's translation cache and of the template's clean
 * pages, in KiB. A header line is "start-end perms offset dev inode [path]". */
static void
smaps_kib(pid_t pid, const char *template_dir, uint64_t *tcg_kib, uint64_t *share_kib)
{
    char path[64], line[SMAPS_LINE_BYTES];
    size_t dir_len = strlen(template_dir);
    Mapping m = {0};
    snprintf(path, sizeof(path), "/proc/%d/smaps", (int) pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    while (fgets(line, sizeof(line), f)) {
        char perms[8], file[SMAPS_LINE_BYTES] = "";
        unsigned long long inode;
        if (sscanf(line, "%*x-%*x %7s %*x %*s %llu %4351[^\n]", perms, &inode, file) >= 2) {
            mapping_end(&m, tcg_kib, share_kib);
            size_t n = strlen(file);
            m = (Mapping){
                .tcg = inode == 0 && file[0] == '\0' && strchr(perms, 'x') != NULL,
                .template = dir_len > 0 && strncmp(file, template_dir, dir_len) == 0 &&
                            file[dir_len] == '/' && n > 4 && strcmp(file + n - 4, ".mem") == 0,
            };
        } else if (strncmp(line, "Pss:", 4) == 0)
            m.pss_kib = strtoull(line + 4, NULL, 10);
        else if (strncmp(line, "Anonymous:", 10) == 0)
            m.anon_kib = strtoull(line + 10, NULL, 10);
    }
    mapping_end(&m, tcg_kib, share_kib);
    fclose(f);
}

/* Means over the pool's idle guests' QEMU processes. */
static void
measure_idle_memory(Harness *h, const char *template_dir, MemoryFigures *f)
{
    char **names = harness_domains(h);
    uint64_t rss = 0, pss = 0, tcg = 0, share = 0, n = 0;
    for (char **p = names; p && *p; p++) {
        pid_t pid = virt_qemu_pid(*p);
        if (pid <= 0)
            continue;
        rss += proc_kib(pid, "status", "VmRSS:");
        pss += proc_kib(pid, "smaps_rollup", "Pss:");
        smaps_kib(pid, template_dir, &tcg, &share);
        n++;
    }
    virt_strv_free(names);
    double per = n ? 1.0 / (double) n / 1024.0 : 0;
    f->rss_mib = (double) rss * per;
    f->pss_mib = (double) pss * per;
    f->tcg_mib = (double) tcg * per;
    f->template_share_mib = (double) share * per;
    f->idle_guests = (unsigned) n;
}

/* MiB of path's pages in the page cache (mincore over a read-only shared mapping). */
static double
page_cache_mib(const char *path)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0 || st.st_size == 0) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    long page = sysconf(_SC_PAGESIZE);
    size_t pages = ((size_t) st.st_size + (size_t) page - 1) / (size_t) page, resident = 0;
    void *m = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    unsigned char *vec = calloc(pages, 1);
    if (m != MAP_FAILED && vec && mincore(m, (size_t) st.st_size, vec) == 0)
        for (size_t i = 0; i < pages; i++)
            resident += vec[i] & 1;
    if (m != MAP_FAILED)
        munmap(m, (size_t) st.st_size);
    free(vec);
    close(fd);
    return (double) resident * (double) page / 1048576.0;
}

/* Allocated MiB of the files in dir whose names end in one of the suffixes; *ret_cache_mib
 * (optional) adds up their pages in the page cache. */
static double
dir_allocated_mib(const char *dir, const char *const *suffixes, double *ret_cache_mib)
{
    DIR *d = dir && dir[0] ? opendir(dir) : NULL;
    double mib = 0, cache = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        bool want = false;
        for (const char *const *sfx = suffixes; *sfx; sfx++)
            want |= n > strlen(*sfx) && strcmp(e->d_name + n - strlen(*sfx), *sfx) == 0;
        char path[2048];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (!want || stat(path, &st) < 0 || !S_ISREG(st.st_mode))
            continue;
        mib += (double) st.st_blocks * 512.0 / 1048576.0;
        cache += page_cache_mib(path);
    }
    if (d)
        closedir(d);
    if (ret_cache_mib)
        *ret_cache_mib = cache;
    return mib;
}

void
measure_memory(Harness *h, MemoryFigures *f)
{
    static const char *const mem[] = {".mem", NULL}, *const state[] = {".state", NULL};
    static const char *const saves[] = {".save", NULL};
    char snaps[1200];
    PoolStatus st;

    pool_status(h->pool, &st);
    measure_idle_memory(h, st.template_dir, f);
    f->template_mib = dir_allocated_mib(st.template_dir, mem, &f->template_cache_mib);
    snprintf(snaps, sizeof(snaps), "%s/snapshots", h->state_dir);
    f->snapshot_disk_mib = dir_allocated_mib(snaps, saves, NULL) + f->template_mib +
                           dir_allocated_mib(st.template_dir, state, NULL);
    if (f->idle_guests == 0)
        return;
    f->host_mib_per_idle_guest = f->pss_mib + f->template_cache_mib / f->idle_guests;
    f->host_exact_mib_per_idle_guest =
        f->pss_mib - f->template_share_mib + f->template_cache_mib / f->idle_guests;
}


void
print_memory(const MemoryFigures *f)
{
    printf("idle pooled guest (mean of %u): QEMU RSS %.1f MiB, PSS %.1f MiB, of which TCG's "
           "translation cache %.1f MiB (none under KVM); PSS less TCG %.1f MiB (target <= 40 "
           "with a template)\n",
           f->idle_guests, f->rss_mib, f->pss_mib, f->tcg_mib, f->pss_mib - f->tcg_mib);
    printf("template RAM files: %.1f MiB allocated, %.1f MiB in the page cache, %.1f MiB of it "
           "mapped per guest (its share)\n",
           f->template_mib, f->template_cache_mib, f->template_share_mib);
    printf("host memory per idle guest: %.1f MiB as issue 15 sums it (mapped template pages "
           "twice), %.1f MiB less TCG (target <= 48 at 16 guests), %.1f MiB counting every page "
           "once; snapshot files %.1f MiB\n",
           f->host_mib_per_idle_guest, f->host_mib_per_idle_guest - f->tcg_mib,
           f->host_exact_mib_per_idle_guest, f->snapshot_disk_mib);
}
