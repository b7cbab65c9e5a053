/* Pseudo-terminals of execs: see pty.h. */
#include "pty.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "fdutil.h"

#define PTY_SLAVE_MODE 0620 /* as login(1) leaves a terminal: the owner reads and writes */

static int
pty_set_size(int master_fd, uint32_t cols, uint32_t rows)
{
    struct winsize ws = {.ws_row = (unsigned short) rows, .ws_col = (unsigned short) cols};
    return ioctl(master_fd, TIOCSWINSZ, &ws);
}

int
pty_open(uint32_t cols, uint32_t rows, uid_t uid, gid_t gid, PtyEnds *ret, Error **errp)
{
    _cleanup_close_ int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    _cleanup_close_ int slave = -1;

    if (master < 0)
        return error_set(errp, E_UNAVAILABLE, errno, "pty: open /dev/ptmx");
    if (unlockpt(master) < 0 || fd_set_nonblock(master, true) < 0 ||
        pty_set_size(master, cols, rows) < 0)
        return error_set(errp, E_INTERNAL, errno, "pty: set up the master");
    /* The peer by its master (Linux 4.13+): no path is looked up, none can be swapped. */
    slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (slave < 0)
        return error_set(errp, E_INTERNAL, errno, "pty: open the slave");
    if (fchown(slave, uid, gid) < 0 || fchmod(slave, PTY_SLAVE_MODE) < 0)
        return error_set(errp, E_INTERNAL, errno, "pty: hand the slave to %u:%u", uid, gid);
    *ret = (PtyEnds){.master = TAKE_FD(master), .slave = TAKE_FD(slave)};
    return 0;
}

int
pty_resize(int master_fd, uint32_t cols, uint32_t rows, Error **errp)
{
    if (pty_set_size(master_fd, cols, rows) < 0)
        return error_set(errp, E_IO, errno, "pty: resize");
    return 0;
}
