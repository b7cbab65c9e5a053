/* The pure half of stockade-appliance-qemu: libguestfs's qemu argv in, the argv qemu runs
 * with out, descriptors obtained through QemuFdOps. No I/O of its own, so the unit test can
 * feed it any argv. See appliance_qemu.h. */
#include "appliance_qemu.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

#define FDSET_PATH "/dev/fdset/"

bool
qemu_opt_find(const char *s, const char *key, size_t *ret_begin, size_t *ret_end)
{
    size_t klen = strlen(key), i = 0;
    while (s[i]) {
        size_t start = i, j = i;
        while (s[j] && !(s[j] == ',' && s[j + 1] != ',')) /* ",," is an escaped comma */
            j += (s[j] == ',') ? 2 : 1;
        if (j - start > klen && strncmp(s + start, key, klen) == 0 && s[start + klen] == '=') {
            *ret_begin = start;
            *ret_end = j;
            return true;
        }
        i = s[j] ? j + 1 : j;
    }
    return false;
}

/* The value of an option found by qemu_opt_find, ",," unescaped. */
static int
opt_value(const char *s, size_t begin, size_t end, const char *key, char *buf, size_t cap)
{
    size_t o = 0;
    for (size_t i = begin + strlen(key) + 1; i < end; i++) {
        if (o + 1 >= cap)
            return -1;
        buf[o++] = s[i];
        i += (s[i] == ',');
    }
    buf[o] = '\0';
    return o > 0 ? 0 : -1;
}

static int fail(QemuArgs *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int
fail(QemuArgs *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->err, sizeof(a->err), fmt, ap);
    va_end(ap);
    return -1;
}

static int
push(QemuArgs *a, char *s)
{
    if (!s)
        return fail(a, "out of memory");
    if (a->argc + 1 >= ELEMENTSOF(a->argv)) {
        free(s);
        return fail(a, "too many arguments");
    }
    a->argv[a->argc++] = s;
    return 0;
}

/* One fd into set `set`: "-add-fd fd=N,set=S". */
static int
add_fd(QemuArgs *a, int fd, unsigned set, const char *what)
{
    char *opt = NULL;
    if (fd < 0)
        return fail(a, "open %s: %s", what, strerror(errno));
    if (++a->n_fds > APPLIANCE_QEMU_MAX_FDS)
        return fail(a, "more than %u descriptors", APPLIANCE_QEMU_MAX_FDS);
    if (push(a, strdup("-add-fd")) < 0 || asprintf(&opt, "fd=%d,set=%u", fd, set) < 0)
        return fail(a, "out of memory");
    return push(a, opt);
}

/* "-drive file.file.filename=OVERLAY,..." -> fdsets for the overlay and its backing disk. */
static char *
drive_rewrite(QemuArgs *a, const char *val, const QemuFdOps *ops)
{
    static const char key[] = "file.file.filename";
    char path[PATH_MAX], backing[PATH_MAX];
    size_t b, e;
    char *out = NULL;

    if (!qemu_opt_find(val, key, &b, &e))
        return strdup(val); /* the appliance's own root: world-readable, snapshot=on */
    if (opt_value(val, b, e, key, path, sizeof(path)) < 0)
        return fail(a, "bad -drive %s", key), NULL;
    unsigned overlay = a->next_set++;
    int ro = ops->open_file(ops->ctx, path, O_RDONLY);
    if (add_fd(a, ops->open_file(ops->ctx, path, O_RDWR), overlay, path) < 0 ||
        add_fd(a, ro, overlay, path) < 0)
        return NULL;
    int has = ops->qcow2_backing(ops->ctx, ro, backing, sizeof(backing));
    if (has < 0)
        return fail(a, "%s: no absolute backing file in its qcow2 header", path), NULL;
    char extra[64] = "";
    if (has) {
        unsigned disk = a->next_set++;
        if (add_fd(a, ops->open_file(ops->ctx, backing, O_RDONLY), disk, backing) < 0)
            return NULL;
        /* Overrides the header's path: qemu reaches the disk through this fd only. */
        snprintf(extra, sizeof(extra), ",file.backing.file.filename=" FDSET_PATH "%u", disk);
    }
    if (asprintf(&out, "%.*s%s=" FDSET_PATH "%u%s%s", (int) b, val, key, overlay, val + e, extra) <
        0)
        return fail(a, "out of memory"), NULL;
    return out;
}

/* "-chardev socket,path=SOCK,..." (a client) -> "socket,fd=N,...". */
static char *
chardev_rewrite(QemuArgs *a, const char *val, const QemuFdOps *ops)
{
    char path[PATH_MAX];
    size_t b, e, sb, se;
    char *out = NULL;

    if (strncmp(val, "socket,", 7) != 0 || !qemu_opt_find(val, "path", &b, &e) ||
        qemu_opt_find(val, "server", &sb, &se))
        return strdup(val);
    if (opt_value(val, b, e, "path", path, sizeof(path)) < 0)
        return fail(a, "bad -chardev path"), NULL;
    int fd = ops->connect_unix(ops->ctx, path);
    if (fd < 0)
        return fail(a, "connect %s: %s", path, strerror(errno)), NULL;
    if (++a->n_fds > APPLIANCE_QEMU_MAX_FDS)
        return fail(a, "more than %u descriptors", APPLIANCE_QEMU_MAX_FDS), NULL;
    if (asprintf(&out, "%.*sfd=%d%s", (int) b, val, fd, val + e) < 0)
        return fail(a, "out of memory"), NULL;
    return out;
}

static int
mem_parse(QemuArgs *a, const char *val)
{
    char *end;
    errno = 0;
    unsigned long long mib = strtoull(val, &end, 10);
    if (errno || end == val || (*end && strcmp(end, "M") != 0) || mib == 0 || mib > (1u << 20))
        return fail(a, "-m %s: want a size in MiB", val);
    a->mem_mib = mib;
    return 0;
}

static char *
value_rewrite(QemuArgs *a, const char *opt, const char *val, const QemuFdOps *ops)
{
    if (strcmp(opt, "-drive") == 0)
        return drive_rewrite(a, val, ops);
    if (strcmp(opt, "-chardev") == 0)
        return chardev_rewrite(a, val, ops);
    return mem_parse(a, val) < 0 ? NULL : strdup(val); /* -m */
}

static bool
takes_our_value(const char *opt)
{
    return strcmp(opt, "-drive") == 0 || strcmp(opt, "-chardev") == 0 || strcmp(opt, "-m") == 0;
}

static int
rest_push(QemuArgs *a, char **rest, size_t *n, char *s)
{
    if (!s)
        return a->err[0] ? -1 : fail(a, "out of memory");
    rest[(*n)++] = s;
    return 0;
}

int
qemu_args_rewrite(int argc, char *const *argv, const QemuFdOps *ops, QemuArgs *ret)
{
    char *rest[APPLIANCE_QEMU_MAX_ARGS];
    size_t n = 0;
    int r;

    memset(ret, 0, sizeof(*ret));
    ret->mem_mib = APPLIANCE_QEMU_DEFAULT_MEM_MIB;
    ret->next_set = 1;
    if (argc < 1 || (size_t) argc > APPLIANCE_QEMU_MAX_ARGS)
        return fail(ret, "%d arguments", argc);
    /* argv[0], then the -add-fd pairs as they are made, then the rest, then -sandbox. */
    r = push(ret, strdup(argv[0]));
    for (int i = 1; r == 0 && i < argc; i++) {
        bool ours = i + 1 < argc && takes_our_value(argv[i]);
        r = rest_push(ret, rest, &n, strdup(argv[i]));
        if (r == 0 && ours) {
            i++;
            r = rest_push(ret, rest, &n, value_rewrite(ret, argv[i - 1], argv[i], ops));
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (r < 0)
            free(rest[i]);
        else
            r = push(ret, rest[i]); /* frees it on failure */
    }
    if (r == 0 &&
        (push(ret, strdup("-sandbox")) < 0 || push(ret, strdup(APPLIANCE_QEMU_SANDBOX)) < 0))
        r = -1;
    ret->argv[ret->argc] = NULL;
    if (r < 0)
        qemu_args_free(ret);
    return r;
}

void
qemu_args_free(QemuArgs *a)
{
    for (size_t i = 0; i < a->argc; i++)
        free(a->argv[i]);
    a->argc = 0;
    a->argv[0] = NULL;
}
