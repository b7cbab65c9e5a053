/* Listening sockets for the HTTP layer: a TCP socket on a numeric address, and a unix
 * socket whose file gets its mode before listen() (no peer can connect in between) and
 * replaces a stale socket file only when nothing answers on it. Both are non-blocking and
 * close-on-exec; MHD owns them once its daemon started. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "http_internal.h"

static int
tcp_sockaddr(const char *address, uint16_t port, struct sockaddr_storage *ss, socklen_t *len,
             Error **errp)
{
    struct sockaddr_in *sin = (struct sockaddr_in *) ss;
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *) ss;

    memset(ss, 0, sizeof(*ss));
    if (inet_pton(AF_INET, address, &sin->sin_addr) == 1) {
        sin->sin_family = AF_INET;
        sin->sin_port = htons(port);
        *len = sizeof(*sin);
        return 0;
    }
    if (inet_pton(AF_INET6, address, &sin6->sin6_addr) == 1) {
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons(port);
        *len = sizeof(*sin6);
        return 0;
    }
    return error_set(errp, E_INVALID, 0, "tcp address is not a numeric IP address");
}

int
http_listen_tcp(const char *address, uint16_t port, int *ret_fd, uint16_t *ret_port, Error **errp)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int one = 1;

    if (tcp_sockaddr(address, port, &ss, &len, errp) < 0)
        return -1;
    _cleanup_close_ int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return error_set(errp, E_IO, errno, "tcp socket");
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
        return error_set(errp, E_IO, errno, "SO_REUSEADDR");
    if (ss.ss_family == AF_INET6 &&
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0)
        return error_set(errp, E_IO, errno, "IPV6_V6ONLY");
    if (bind(fd, (struct sockaddr *) &ss, len) < 0)
        return error_set(errp, E_IO, errno, "bind %s port %u", address, port);
    if (listen(fd, HTTP_LISTEN_BACKLOG) < 0)
        return error_set(errp, E_IO, errno, "listen on %s port %u", address, port);
    len = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *) &ss, &len) < 0)
        return error_set(errp, E_IO, errno, "getsockname");
    *ret_port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *) &ss)->sin_port
                                              : ((struct sockaddr_in6 *) &ss)->sin6_port);
    *ret_fd = TAKE_FD(fd);
    return 0;
}

/* A socket file nobody listens on is left by a daemon that died: remove it. A live one, or
 * anything that is not a socket, is not ours to touch. */
static int
unix_remove_stale(const char *path, const struct sockaddr_un *sa, Error **errp)
{
    struct stat st;

    if (lstat(path, &st) < 0)
        return errno == ENOENT ? 0 : error_set(errp, E_IO, errno, "stat %s", path);
    if (!S_ISSOCK(st.st_mode))
        return error_set(errp, E_CONFLICT, 0, "%s exists and is not a socket", path);
    _cleanup_close_ int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (probe < 0)
        return error_set(errp, E_IO, errno, "unix socket");
    if (connect(probe, (const struct sockaddr *) sa, sizeof(*sa)) == 0 || errno == EAGAIN)
        return error_set(errp, E_CONFLICT, 0, "%s is in use by a running server", path);
    if (errno != ECONNREFUSED)
        return error_set(errp, E_IO, errno, "probe %s", path);
    if (unlink(path) < 0 && errno != ENOENT)
        return error_set(errp, E_IO, errno, "remove stale %s", path);
    return 0;
}

int
http_listen_unix(const char *path, mode_t mode, int *ret_fd, dev_t *ret_dev, ino_t *ret_ino,
                 Error **errp)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct stat st;

    if (strlen(path) >= sizeof(sa.sun_path))
        return error_set(errp, E_INVALID, 0, "unix socket path is longer than %zu bytes",
                         sizeof(sa.sun_path) - 1);
    strcpy(sa.sun_path, path);
    if (unix_remove_stale(path, &sa, errp) < 0)
        return -1;
    _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return error_set(errp, E_IO, errno, "unix socket");
    if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
        return error_set(errp, E_IO, errno, "bind %s", path);
    /* Not listening yet: nobody can connect while the mode is still the umask's. */
    if (chmod(path, mode) < 0 || lstat(path, &st) < 0) {
        int r = error_set(errp, E_IO, errno, "chmod %s", path);
        (void) unlink(path);
        return r;
    }
    if (listen(fd, HTTP_LISTEN_BACKLOG) < 0) {
        int r = error_set(errp, E_IO, errno, "listen on %s", path);
        (void) unlink(path);
        return r;
    }
    *ret_dev = st.st_dev;
    *ret_ino = st.st_ino;
    *ret_fd = TAKE_FD(fd);
    return 0;
}

void
http_unlink_unix(const char *path, dev_t dev, ino_t ino)
{
    struct stat st;

    if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == dev && st.st_ino == ino)
        (void) unlink(path);
}
