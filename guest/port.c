/* virtio-serial port lookup: see port.h. */
#include "port.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fdutil.h"
#include "guest_limits.h"
#include "timeutil.h"

#define PORT_NAME_MAX_BYTES 256

static bool
port_name_matches(int dir_fd, const char *entry, const char *name)
{
    char path[PORT_NAME_MAX_BYTES + 32], buf[PORT_NAME_MAX_BYTES + 2];
    size_t got;

    snprintf(path, sizeof(path), "%s/name", entry);
    int fd = openat(dir_fd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    int r = read_full(fd, buf, sizeof(buf) - 1, &got);
    safe_close(fd);
    if (r < 0)
        return false;
    while (got > 0 && (buf[got - 1] == '\n' || buf[got - 1] == '\0'))
        got--;
    buf[got] = '\0';
    return strcmp(buf, name) == 0;
}

int
port_find(const char *sysfs_dir, const char *name, char *out, size_t cap)
{
    DIR *d = opendir(sysfs_dir);
    struct dirent *de;
    int r = -1;

    if (!d)
        return -1;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.' || !port_name_matches(dirfd(d), de->d_name, name))
            continue;
        if ((size_t) snprintf(out, cap, "/dev/%s", de->d_name) < cap)
            r = 0;
        break;
    }
    closedir(d);
    if (r < 0)
        errno = ENOENT;
    return r;
}

int
port_open_wait(const char *name, unsigned timeout_msec, Error **errp)
{
    uint64_t deadline = now_usec() + timeout_msec * USEC_PER_MSEC;
    struct timespec step = {0, BOOT_POLL_STEP_MSEC * 1000000L};
    char dev[PORT_NAME_MAX_BYTES + 8];

    for (;;) {
        if (port_find(PORT_SYSFS_DIR, name, dev, sizeof(dev)) == 0) {
            int fd = open(dev, O_RDWR | O_CLOEXEC | O_NOCTTY);
            if (fd >= 0)
                return fd;
        }
        if (now_usec() >= deadline)
            return error_set(errp, E_UNAVAILABLE, errno, "virtio port %s not found", name);
        nanosleep(&step, NULL);
    }
}
