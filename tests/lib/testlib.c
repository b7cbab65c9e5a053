/* See testlib.h. */
#include "testlib.h"

#include "fdutil.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool
test_must_work(void)
{
    const char *v = getenv("STOCKADE_MUST_WORK");
    return v && strcmp(v, "1") == 0;
}

void
test_skip(const char *fmt, ...)
{
    va_list ap;
    bool must = test_must_work();

    fprintf(stderr, must ? "FAIL (STOCKADE_MUST_WORK=1, cannot skip): " : "SKIP: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(must ? 1 : TEST_EXIT_SKIP);
}

char *
test_mkdtemp(const char *prefix)
{
    const char *base = getenv("TMPDIR");
    char *path;

    if (asprintf(&path, "%s/%s.XXXXXX", base && *base ? base : "/tmp", prefix) < 0)
        return NULL;
    if (!mkdtemp(path)) {
        free(path);
        return NULL;
    }
    return path;
}

int
test_rm_rf(const char *path)
{
    return rm_rf(path);
}
