/* switch_root for a PID 1 that keeps running: empty the initramfs (ramfs/tmpfs only, never
 * crossing into another mount), move the new root onto /, chroot. The runner's own binary
 * is deleted too; its pages stay mapped while it runs. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "init.h"
#include "macro.h"

static void switchroot_delete_at(int dir_fd, dev_t dev);

static void
switchroot_delete_entry(int dir_fd, const char *name, dev_t dev)
{
    struct stat st;

    if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != dev)
        return; /* another filesystem (the new root, a mount point): keep */
    if (!S_ISDIR(st.st_mode)) {
        (void) unlinkat(dir_fd, name, 0);
        return;
    }
    int fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;
    switchroot_delete_at(fd, dev); /* takes fd */
    (void) unlinkat(dir_fd, name, AT_REMOVEDIR);
}

/* Deletes everything below dir_fd on device dev; closes dir_fd. Best effort: what cannot be
 * deleted only costs memory. */
static void
switchroot_delete_at(int dir_fd, dev_t dev)
{
    DIR *d = fdopendir(dir_fd);
    struct dirent *de;

    if (!d) {
        safe_close(dir_fd);
        return;
    }
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            switchroot_delete_entry(dirfd(d), de->d_name, dev);
    closedir(d);
}

int
switchroot_to(const char *newroot, Error **errp)
{
    struct stat root_st, new_st;
    struct statfs sfs;

    if (chdir(newroot) < 0 || stat("/", &root_st) < 0 || stat(".", &new_st) < 0)
        return error_set(errp, E_INTERNAL, errno, "switch root: %s", newroot);
    if (root_st.st_dev == new_st.st_dev)
        return error_set(errp, E_INTERNAL, 0, "switch root: %s is not a mount point", newroot);
    if (statfs("/", &sfs) < 0 || (sfs.f_type != RAMFS_MAGIC && sfs.f_type != TMPFS_MAGIC))
        return error_set(errp, E_INTERNAL, errno, "switch root: / is not an initramfs");
    int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0)
        switchroot_delete_at(fd, root_st.st_dev);
    if (mount(".", "/", NULL, MS_MOVE, NULL) < 0 || chroot(".") < 0 || chdir("/") < 0)
        return error_set(errp, E_INTERNAL, errno, "switch root: move %s to /", newroot);
    return 0;
}
