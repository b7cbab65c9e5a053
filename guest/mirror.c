/* Live workspace mirror over inotify: see mirror.h. */
#include "mirror.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files.h"
#include "guest_limits.h"
#include "reply.h"
#include "wspath.h"

#define MIRROR_MASK                                                                                \
    (IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE | IN_ONLYDIR |           \
     IN_EXCL_UNLINK)

typedef struct Watch {
    int wd;
    char *path; /* workspace-relative, "" for the root */
} Watch;

typedef struct Pending {
    char *path;
    bool removed;
} Pending;

struct Mirror {
    int ws_fd; /* borrowed */
    int in_fd;
    uint64_t budget_left;
    uint64_t max_file;
    uint64_t dropped;                  /* events lost: overflow or pending set full */
    Watch watches[MIRROR_MAX_WATCHES]; /* sorted by wd */
    size_t n_watches;
    Pending pending[MIRROR_PENDING_MAX]; /* FIFO */
    size_t n_pending;
    int cur_fd; /* the file being sent, or -1 */
    char *cur_path;
    uint64_t cur_size, cur_off, cur_mtime_ns;
    uint32_t cur_mode;
    uint8_t buf[FILE_CHUNK_MAX_BYTES];
    uint8_t events[MIRROR_EVENT_BUF_BYTES] __attribute__((aligned(8)));
};

/* ------------------------------------------------------------------ watch table */

static size_t
mirror_watch_index(const Mirror *m, int wd)
{
    size_t lo = 0, hi = m->n_watches;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->watches[mid].wd < wd)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static Watch *
mirror_watch_find(Mirror *m, int wd)
{
    size_t i = mirror_watch_index(m, wd);
    return i < m->n_watches && m->watches[i].wd == wd ? &m->watches[i] : NULL;
}

static void
mirror_watch_remove_at(Mirror *m, size_t i)
{
    free(m->watches[i].path);
    memmove(&m->watches[i], &m->watches[i + 1], (m->n_watches - i - 1) * sizeof(Watch));
    m->n_watches--;
}

/* Records wd -> path (an inode watched again keeps its wd: the path is updated). */
static int
mirror_watch_set(Mirror *m, int wd, const char *path)
{
    char *copy = strdup(path);
    if (!copy)
        return -1;
    size_t i = mirror_watch_index(m, wd);
    if (i < m->n_watches && m->watches[i].wd == wd) {
        free(m->watches[i].path);
        m->watches[i].path = copy;
        return 0;
    }
    memmove(&m->watches[i + 1], &m->watches[i], (m->n_watches - i) * sizeof(Watch));
    m->watches[i] = (Watch){wd, copy};
    m->n_watches++;
    return 0;
}

/* A directory moved away: drop the watches of its whole subtree. */
static void
mirror_unwatch_prefix(Mirror *m, const char *path)
{
    size_t n = strlen(path);
    for (size_t i = 0; i < m->n_watches;) {
        const char *p = m->watches[i].path;
        if (strncmp(p, path, n) == 0 && (p[n] == '\0' || p[n] == '/')) {
            (void) inotify_rm_watch(m->in_fd, m->watches[i].wd);
            mirror_watch_remove_at(m, i);
        } else {
            i++;
        }
    }
}

/* ------------------------------------------------------------------ pending set */

static void
mirror_pending_add(Mirror *m, const char *path, bool removed)
{
    for (size_t i = 0; i < m->n_pending; i++)
        if (strcmp(m->pending[i].path, path) == 0) {
            m->pending[i].removed = removed; /* the latest event wins */
            return;
        }
    char *copy = m->n_pending < MIRROR_PENDING_MAX ? strdup(path) : NULL;
    if (!copy) {
        m->dropped++;
        return;
    }
    m->pending[m->n_pending++] = (Pending){copy, removed};
}

static Pending
mirror_pending_pop(Mirror *m)
{
    Pending p = m->pending[0];
    memmove(&m->pending[0], &m->pending[1], (m->n_pending - 1) * sizeof(Pending));
    m->n_pending--;
    return p;
}

/* ------------------------------------------------------------------ scanning */

static int
mirror_add_watch(Mirror *m, int dir_fd, const char *path)
{
    char proc_path[64];

    if (m->n_watches >= MIRROR_MAX_WATCHES) {
        m->dropped++;
        return -1;
    }
    snprintf(proc_path, sizeof(proc_path), "/proc/self/fd/%d", dir_fd);
    int wd = inotify_add_watch(m->in_fd, proc_path, MIRROR_MASK);
    if (wd < 0 || mirror_watch_set(m, wd, path) < 0)
        return -1;
    return 0;
}

static bool
mirror_entry_is_dir(int dir_fd, const struct dirent *de, bool *ret_is_reg)
{
    struct stat st;
    if (de->d_type != DT_UNKNOWN) {
        *ret_is_reg = de->d_type == DT_REG;
        return de->d_type == DT_DIR;
    }
    if (fstatat(dir_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return *ret_is_reg = false;
    *ret_is_reg = S_ISREG(st.st_mode);
    return S_ISDIR(st.st_mode);
}

/* Watches one directory; appends its subdirectories to todo and (if send_files) queues its
 * regular files. */
static void
mirror_scan_dir(Mirror *m, const char *path, bool send_files, char **todo, size_t *n_todo)
{
    char child[PATH_MAX_BYTES + 1];
    struct dirent *de;

    int fd = wspath_openat(m->ws_fd, path, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return; /* gone or swapped for a symlink meanwhile: nothing to mirror */
    if (mirror_add_watch(m, fd, path) < 0) {
        safe_close(fd);
        return;
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        safe_close(fd);
        return;
    }
    while ((de = readdir(d))) {
        bool is_reg;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
            !wspath_join(path, de->d_name, child, sizeof(child)))
            continue;
        if (mirror_entry_is_dir(dirfd(d), de, &is_reg)) {
            if (*n_todo < MIRROR_MAX_WATCHES && (todo[*n_todo] = strdup(child)))
                (*n_todo)++;
        } else if (is_reg && send_files) {
            mirror_pending_add(m, child, false);
        }
    }
    closedir(d);
}

/* Breadth first, one directory open at a time, bounded by MIRROR_MAX_WATCHES. */
static int
mirror_scan_tree(Mirror *m, const char *path, bool send_files)
{
    _cleanup_free_ char **todo = calloc(MIRROR_MAX_WATCHES, sizeof(*todo));
    size_t n_todo = 0, next = 0;

    if (!todo || !(todo[n_todo++] = strdup(path)))
        return -1;
    for (; next < n_todo; next++) {
        if (m->n_watches < MIRROR_MAX_WATCHES)
            mirror_scan_dir(m, todo[next], send_files, todo, &n_todo);
        free(todo[next]);
    }
    return 0;
}

Mirror *
mirror_new(int ws_fd, uint64_t budget_bytes, uint64_t max_file_bytes, Error **errp)
{
    _cleanup_(mirror_freep) Mirror *m = calloc(1, sizeof(*m));

    if (!m) {
        error_set(errp, E_INTERNAL, ENOMEM, "mirror");
        return NULL;
    }
    m->ws_fd = ws_fd;
    m->cur_fd = -1;
    m->budget_left = budget_bytes;
    m->max_file = max_file_bytes;
    m->in_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (m->in_fd < 0) {
        error_set(errp, E_INTERNAL, errno, "inotify");
        return NULL;
    }
    if (mirror_scan_tree(m, "", false) < 0 || m->n_watches == 0) {
        error_set(errp, E_IO, errno, "watch the workspace");
        return NULL;
    }
    return TAKE_PTR(m);
}

void
mirror_free(Mirror *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n_watches; i++)
        free(m->watches[i].path);
    for (size_t i = 0; i < m->n_pending; i++)
        free(m->pending[i].path);
    free(m->cur_path);
    safe_close(m->cur_fd);
    safe_close(m->in_fd);
    free(m);
}

int
mirror_fd(const Mirror *m)
{
    return m->in_fd;
}

bool
mirror_has_work(const Mirror *m)
{
    return m->cur_fd >= 0 || m->n_pending > 0;
}

/* ------------------------------------------------------------------ events */

static void
mirror_on_event(Mirror *m, const struct inotify_event *ev)
{
    char path[PATH_MAX_BYTES + 1];

    if (ev->mask & IN_Q_OVERFLOW) {
        m->dropped++;
        return;
    }
    Watch *w = mirror_watch_find(m, ev->wd);
    if (ev->mask & IN_IGNORED) {
        if (w)
            mirror_watch_remove_at(m, (size_t) (w - m->watches));
        return;
    }
    if (!w || ev->len == 0 || !wspath_join(w->path, ev->name, path, sizeof(path)))
        return;
    if (ev->mask & IN_ISDIR) {
        if (ev->mask & IN_MOVED_FROM)
            mirror_unwatch_prefix(m, path);
        if (ev->mask & (IN_MOVED_FROM | IN_DELETE))
            mirror_pending_add(m, path, true);
        if (ev->mask & (IN_CREATE | IN_MOVED_TO))
            (void) mirror_scan_tree(m, path, true);
        return;
    }
    if (ev->mask & (IN_CLOSE_WRITE | IN_MOVED_TO))
        mirror_pending_add(m, path, false);
    if (ev->mask & (IN_MOVED_FROM | IN_DELETE))
        mirror_pending_add(m, path, true);
}

int
mirror_on_events(Mirror *m, Error **errp)
{
    for (;;) {
        ssize_t n = read(m->in_fd, m->events, sizeof(m->events));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return 0;
        if (n <= 0)
            return error_set(errp, E_INTERNAL, n < 0 ? errno : 0, "inotify read");
        for (ssize_t off = 0; off + (ssize_t) sizeof(struct inotify_event) <= n;) {
            const struct inotify_event *ev = (const void *) (m->events + off);
            mirror_on_event(m, ev);
            off += (ssize_t) (sizeof(*ev) + ev->len);
        }
    }
}

/* ------------------------------------------------------------------ sending */

static int
mirror_push(OutQueue *q, Stockade__Runner__FileChanged *c)
{
    GuestMsg msg = STOCKADE__RUNNER__GUEST_MSG__INIT;
    msg.body_case = GBODY(FILE_CHANGED);
    msg.file_changed = c;
    return outq_push_msg(q, &msg);
}

static void
mirror_end_file(Mirror *m)
{
    m->cur_fd = safe_close(m->cur_fd);
    free(m->cur_path);
    m->cur_path = NULL;
}

static int
mirror_send_chunk(Mirror *m, OutQueue *q)
{
    Stockade__Runner__FileChanged c = STOCKADE__RUNNER__FILE_CHANGED__INIT;
    size_t want = (size_t) MIN((uint64_t) FILE_CHUNK_MAX_BYTES, m->cur_size - m->cur_off);
    ssize_t n = want ? pread(m->cur_fd, m->buf, want, (off_t) m->cur_off) : 0;

    if (n < 0)
        n = 0; /* unreadable now: end the file here; a later write sends it again */
    c.path = m->cur_path;
    c.size = m->cur_size;
    c.mode = m->cur_mode;
    c.mtime_ns = m->cur_mtime_ns;
    c.offset = m->cur_off;
    c.data.data = m->buf;
    c.data.len = (size_t) n;
    c.last = n == 0 || m->cur_off + (uint64_t) n >= m->cur_size;
    m->cur_off += (uint64_t) n;
    int r = mirror_push(q, &c);
    if (c.last)
        mirror_end_file(m);
    return r;
}

/* Starts sending a changed file; returns 1 if a record was queued, 0 if it was skipped. */
static int
mirror_start_file(Mirror *m, OutQueue *q, char *path)
{
    Stockade__Runner__FileChanged c = STOCKADE__RUNNER__FILE_CHANGED__INIT;
    struct stat st;
    _cleanup_error_ Error *ignored = NULL;

    int fd = files_open_regular(m->ws_fd, path, &st, &ignored);
    if (fd < 0) {
        free(path); /* gone, a symlink, not regular: a removal record follows if it matters */
        return 0;
    }
    m->cur_fd = fd;
    m->cur_path = path;
    m->cur_size = (uint64_t) st.st_size;
    m->cur_off = 0;
    m->cur_mode = st.st_mode & 0777;
    m->cur_mtime_ns = (uint64_t) st.st_mtim.tv_sec * 1000000000u + (uint64_t) st.st_mtim.tv_nsec;
    if (m->cur_size <= m->max_file && m->cur_size <= m->budget_left) {
        m->budget_left -= m->cur_size;
        return mirror_send_chunk(m, q) < 0 ? -1 : 1;
    }
    c.path = m->cur_path;
    c.size = m->cur_size;
    c.mode = m->cur_mode;
    c.mtime_ns = m->cur_mtime_ns;
    c.over_budget = true;
    int r = mirror_push(q, &c);
    mirror_end_file(m);
    return r < 0 ? -1 : 1;
}

int
mirror_send_next(Mirror *m, OutQueue *q, Error **errp)
{
    int r = 0;

    if (m->cur_fd >= 0)
        r = mirror_send_chunk(m, q) < 0 ? -1 : 1;
    while (r == 0 && m->n_pending > 0) {
        Pending p = mirror_pending_pop(m);
        if (p.removed) {
            Stockade__Runner__FileChanged c = STOCKADE__RUNNER__FILE_CHANGED__INIT;
            c.path = p.path;
            c.removed = true;
            r = mirror_push(q, &c) < 0 ? -1 : 1;
            free(p.path);
        } else {
            r = mirror_start_file(m, q, p.path);
        }
    }
    return r < 0 ? error_set(errp, E_INTERNAL, errno, "mirror: queue file_changed") : 0;
}
