/* Fuzz target: extract_untar() end to end into a scratch directory, with small caps.
 * Invariants checked after every input, by walking what landed:
 *  - only regular files and directories exist under dest, none with setuid/setgid/sticky
 *    bits or group/other write; nothing at all appears beside dest;
 *  - files + dirs + skipped and bytes respect the caps; truncated is set when stop is.
 * The scratch tree lives in $TMPDIR (or /tmp) and is emptied after every input. */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "extract.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char scratch[4096];
static unsigned long walked_files, walked_dirs, walked_bytes;

static int
walk_check(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void) path;
    (void) type;
    if (ftw->level == 0)
        return 0;
    CHECK(S_ISREG(st->st_mode) || S_ISDIR(st->st_mode));
    CHECK((st->st_mode & (S_ISUID | S_ISGID | S_ISVTX | S_IWGRP | S_IWOTH)) == 0);
    if (S_ISREG(st->st_mode)) {
        walked_files++;
        walked_bytes += (unsigned long) st->st_size;
    } else {
        walked_dirs++;
    }
    return 0;
}

static int
rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void) st;
    (void) type;
    return ftw->level == 0 ? 0 : remove(path);
}

/* Entries in the scratch directory other than dest: must stay none. */
static int
count_beside_dest(void)
{
    DIR *d = opendir(scratch);
    int n = 0;
    CHECK(d != NULL);
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "dest"))
            n++;
    closedir(d);
    return n;
}

static void
remove_scratch(void)
{
    (void) nftw(scratch, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    (void) rmdir(scratch);
}

static void
setup_once(void)
{
    if (scratch[0])
        return;
    const char *base = getenv("TMPDIR");
    snprintf(scratch, sizeof(scratch), "%s/fuzz_untar_fs.XXXXXX", base && *base ? base : "/tmp");
    CHECK(mkdtemp(scratch) != NULL);
    atexit(remove_scratch);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char dest[4200];
    ExtractLimits lim;
    ExtractStats st;
    Error *err = NULL;

    setup_once();
    snprintf(dest, sizeof(dest), "%s/dest", scratch);
    CHECK(mkdir(dest, 0700) == 0);
    int dfd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int in = memfd_create("in", MFD_CLOEXEC);
    CHECK(dfd >= 0 && in >= 0 && write(in, data, size) == (ssize_t) size);
    lseek(in, 0, SEEK_SET);
    extract_limits_default(&lim);
    lim.max_files = 64;
    lim.max_total_bytes = 256 * 1024;
    lim.max_file_bytes = 64 * 1024;
    lim.max_depth = 8;
    lim.max_name_bytes = 256;
    int r = extract_untar(in, dfd, &lim, &st, &err);
    CHECK(r == 0); /* hostile content must never look like a host failure */
    CHECK(st.stop == EXTRACT_STOP_NONE || st.truncated);
    CHECK(st.bytes <= st.streamed_bytes && st.streamed_bytes <= lim.max_total_bytes);
    walked_files = walked_dirs = walked_bytes = 0;
    CHECK(nftw(dest, walk_check, 16, FTW_PHYS) == 0);
    CHECK(count_beside_dest() == 0);
    if (getenv("FUZZ_UNTAR_DEBUG"))
        fprintf(stderr, "walk %lu/%lu/%lu stats %u/%lu/%u skipped %u stop %d\n", walked_files,
                walked_bytes, walked_dirs, st.files, (unsigned long) st.bytes, st.dirs, st.skipped,
                st.stop);
    CHECK(walked_files == st.files && walked_bytes == st.bytes && walked_dirs == st.dirs);
    CHECK(st.files + st.skipped <= lim.max_files);
    error_free(err);
    close(in);
    close(dfd);
    CHECK(nftw(scratch, rm_one, 16, FTW_DEPTH | FTW_PHYS) == 0); /* dest goes too */
    return 0;
}
