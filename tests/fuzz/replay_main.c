/* Replays a libFuzzer corpus through a target in an ordinary (gcc) build, so ctest runs
 * every corpus input and every crash reproducer on every build. Arguments: files or
 * directories (walked). Exit 0 when every input ran; the target aborts otherwise. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "fdutil.h"
#include "macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REPLAY_INPUT_MAX_BYTES (4u * 1024u * 1024u)

static int
replay_file(const char *path)
{
    _cleanup_free_ char *buf = NULL;
    size_t len;

    if (read_file_bounded(path, REPLAY_INPUT_MAX_BYTES, &buf, &len) < 0) {
        perror(path);
        return -1;
    }
    LLVMFuzzerTestOneInput((const uint8_t *) buf, len);
    return 0;
}

static int
replay_path(const char *path, unsigned *count)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        perror(path);
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        (*count)++;
        return replay_file(path);
    }
    DIR *d = opendir(path);
    if (!d) {
        perror(path);
        return -1;
    }
    int r = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char *child;
        if (asprintf(&child, "%s/%s", path, e->d_name) < 0) {
            r = -1;
            break;
        }
        if (replay_path(child, count) < 0)
            r = -1;
        free(child);
    }
    closedir(d);
    return r;
}

int
main(int argc, char **argv)
{
    unsigned count = 0;
    int r = 0;
    for (int i = 1; i < argc; i++)
        if (replay_path(argv[i], &count) < 0)
            r = 1;
    if (count == 0) {
        fprintf(stderr, "no corpus inputs found\n");
        return 1;
    }
    printf("replayed %u inputs\n", count);
    return r;
}
