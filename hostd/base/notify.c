/* See notify.h. The address rules are sd_notify(3)'s: '/' starts a path, '@' an abstract name
 * (the '@' stands for the leading NUL); nothing else is accepted. */
#include "notify.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

struct Notify {
    int fd;
    struct sockaddr_un addr;
    socklen_t addr_len;
    uint64_t watchdog_usec;
};

static int
notify_address(const char *name, struct sockaddr_un *ret, socklen_t *ret_len, Error **errp)
{
    size_t len = strlen(name);
    if ((name[0] != '/' && name[0] != '@') || len < 2)
        return error_set(errp, E_INVALID, 0, "NOTIFY_SOCKET is neither a path nor an @name");
    if (len > sizeof(ret->sun_path) - (name[0] == '/'))
        return error_set(errp, E_INVALID, 0, "NOTIFY_SOCKET is longer than %zu bytes",
                         sizeof(ret->sun_path) - 1);
    memset(ret, 0, sizeof(*ret));
    ret->sun_family = AF_UNIX;
    memcpy(ret->sun_path, name, len);
    if (name[0] == '@')
        ret->sun_path[0] = '\0'; /* abstract: the length, not a NUL, ends the name */
    *ret_len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + len + (name[0] == '/'));
    return 0;
}

/* $WATCHDOG_USEC when it is for us: systemd sets $WATCHDOG_PID to the main pid, so a child
 * that inherited the variables must not answer for its parent. */
static uint64_t
notify_watchdog_from_env(void)
{
    const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
    char *end;
    if (!usec || !usec[0])
        return 0;
    if (pid && pid[0]) {
        errno = 0;
        long long p = strtoll(pid, &end, 10);
        if (errno || *end || p != (long long) getpid())
            return 0;
    }
    errno = 0;
    unsigned long long v = strtoull(usec, &end, 10);
    if (errno || *end || usec[0] == '-' || v == 0)
        return 0;
    return v;
}

int
notify_open_env(Notify **ret, Error **errp)
{
    const char *name = getenv("NOTIFY_SOCKET");
    _cleanup_free_ Notify *n = NULL;

    if (!name || !name[0]) {
        *ret = NULL;
        return 0;
    }
    if (!(n = calloc(1, sizeof(*n))))
        return error_set(errp, E_INTERNAL, ENOMEM, "notify");
    n->fd = -1;
    if (notify_address(name, &n->addr, &n->addr_len, errp) < 0)
        return -1;
    n->watchdog_usec = notify_watchdog_from_env();
    n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (n->fd < 0)
        return error_set(errp, E_INTERNAL, errno, "NOTIFY_SOCKET: socket");
    (void) unsetenv("NOTIFY_SOCKET");
    (void) unsetenv("WATCHDOG_USEC");
    (void) unsetenv("WATCHDOG_PID");
    *ret = TAKE_PTR(n);
    return 0;
}

uint64_t
notify_watchdog_usec(const Notify *n)
{
    return n ? n->watchdog_usec : 0;
}

int
notify_send(Notify *n, const char *text, Error **errp)
{
    if (!n)
        return 0;
    size_t len = strlen(text);
    if (len > NOTIFY_MAX_BYTES)
        return error_set(errp, E_TOO_LARGE, 0, "notify: %zu bytes", len);
    ssize_t r = sendto(n->fd, text, len, MSG_DONTWAIT | MSG_NOSIGNAL,
                       (const struct sockaddr *) &n->addr, n->addr_len);
    if (r < 0)
        return error_set(errp, E_UNAVAILABLE, errno, "notify: send to NOTIFY_SOCKET");
    return 0;
}

int
notify_status(Notify *n, const char *text, Error **errp)
{
    static const char key[] = "STATUS=";
    char buf[NOTIFY_MAX_BYTES + 1];
    size_t o = sizeof(key) - 1;

    memcpy(buf, key, o);
    for (const unsigned char *p = (const unsigned char *) text; *p && o < NOTIFY_MAX_BYTES; p++)
        buf[o++] = *p >= 0x20 && *p < 0x7f ? (char) *p : '?';
    buf[o] = '\0';
    return notify_send(n, buf, errp);
}

void
notify_free(Notify *n)
{
    if (!n)
        return;
    safe_close(n->fd);
    free(n);
}
