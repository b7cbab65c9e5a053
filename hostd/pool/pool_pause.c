/* Pause and resume of a template clone (issue 27, notes/pause-2026-12.md): the stored state
 * is QEMU's stream less every page equal to the template's (pausefile.h), so a paused idle
 * guest costs its private pages, and a resumed one maps the template again for the rest.
 *
 * A delta is only good against the template's exact bytes (pitfall 5): the file carries the
 * template's identity — the SHA-256 of its key (what it was made from) and of its device
 * state (which differs at every boot of a template) — and a resume against any other is
 * refused before QEMU sees a byte. The pool remakes its templates (a clean stop removes those on
 * a tmpfs, a start boots new ones), so the first pause against a template keeps a copy of it
 * — RAM (sparse), device state and key — in <state_dir>/templates/kept/<id>/, shared by every
 * state paused against it, and a resume maps that copy: a paused session outlives the
 * template it was cloned from, and a daemon restart. Blocking (libvirt, disk): worker threads or a
 * test's own thread; they read only what stays fixed while the pool runs (its Virt, the templates'
 * folder, the shape's paths). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdutil.h"
#include "pausefile.h"
#include "pool_internal.h"
#include "sha256.h"
#include "timeutil.h"

#define PAUSE_TIMEOUT_USEC (120 * USEC_PER_SEC) /* 0.16 s idle, 0.3 s for 64 MiB here */
#define PAUSE_TEMPLATE_KEY_MAX_BYTES 128
#define PAUSE_TEMPLATE_STATE_MAX_BYTES (16u << 20) /* 320 KB measured */
#define PAUSE_TMP_SUFFIX ".tmp"
#define PAUSE_KEPT_DIR "templates/kept" /* beneath the state directory */
#define PAUSE_KEPT_NAME_BYTES 33        /* 32 hex digits of the template's identity, NUL */
#define PAUSE_COPY_CHUNK_BYTES (1u << 20)

static Shape *
pause_shape(Pool *p, const char *shape, Error **errp)
{
    for (size_t i = 0; i < p->n_shapes; i++)
        if (strcmp(p->shapes[i].name, shape) == 0) {
            if (p->memory != POOL_MEMORY_TEMPLATE || !p->shapes[i].template_ok)
                break;
            return &p->shapes[i];
        }
    error_set(errp, E_UNAVAILABLE, 0,
              "pool shape %s runs no memory template: only template "
              "clones can be paused",
              shape);
    return NULL;
}

/* A resume needs the shape (its image, size, limits) and the kept template, not the shape's
 * present one: it works while the pool remakes that, or has fallen back to copy. */
static Shape *
resume_shape(Pool *p, const char *shape, Error **errp)
{
    for (size_t i = 0; i < p->n_shapes; i++)
        if (strcmp(p->shapes[i].name, shape) == 0)
            return &p->shapes[i];
    error_set(errp, E_NOT_FOUND, 0, "no pool shape %s", shape);
    return NULL;
}

/* What a stored stream may be at most: the guest's RAM twice over (ROMs, video RAM and a
 * record header per page come on top of the RAM) and some. */
static uint64_t
pause_stream_max_bytes(const Shape *s)
{
    return (uint64_t) s->memory_mib * 2 * 1024 * 1024 + (64u << 20);
}

static int
identity_at(int dir, const char *key_name, const char *state_name,
            uint8_t ret[PAUSEFILE_TEMPLATE_ID_BYTES], Error **errp)
{
    _cleanup_free_ char *key = NULL, *state = NULL;
    size_t key_len, state_len;
    if (read_file_bounded_at(dir, key_name, PAUSE_TEMPLATE_KEY_MAX_BYTES, &key, &key_len) < 0 ||
        read_file_bounded_at(dir, state_name, PAUSE_TEMPLATE_STATE_MAX_BYTES, &state, &state_len) <
            0)
        return error_set(errp, E_UNAVAILABLE, errno, "read a template's %s and %s", key_name,
                         state_name);
    Sha256 h;
    sha256_init(&h);
    sha256_update(&h, "stockade-template-id\n", 21);
    sha256_update(&h, key, key_len);
    sha256_update(&h, "\n", 1);
    sha256_update(&h, state, state_len);
    sha256_final(&h, ret);
    return 0;
}

static int
template_identity(Pool *p, const Shape *s, uint8_t ret[PAUSEFILE_TEMPLATE_ID_BYTES], Error **errp)
{
    return identity_at(p->template_dir_fd, path_base(s->tkey_path), path_base(s->state_path), ret,
                       errp);
}

int
pool_template_identity(Pool *p, const char *shape, uint8_t ret[32], Error **errp)
{
    Shape *s = pause_shape(p, shape, errp);
    return s ? template_identity(p, s, ret, errp) : -1;
}

/* pread, not a mapping: a read of a hole through a mapping of a tmpfs file allocates it
 * (pitfall 4), read(2) of a hole does not. */
static int
template_page(uint64_t offset, uint8_t page[PAUSEFILE_PAGE_BYTES], void *userdata)
{
    int fd = *(const int *) userdata;
    ssize_t n = pread(fd, page, PAUSEFILE_PAGE_BYTES, (off_t) offset);
    return n == PAUSEFILE_PAGE_BYTES ? 0 : -1;
}

/* ------------------------------------------------------------------ kept templates */

static void
kept_name(const uint8_t id[PAUSEFILE_TEMPLATE_ID_BYTES], char out[PAUSE_KEPT_NAME_BYTES])
{
    hex_encode(id, (PAUSE_KEPT_NAME_BYTES - 1) / 2, out);
}

static int
kept_root_open(Pool *p, Error **errp)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof(path), "%s/" PAUSE_KEPT_DIR, p->cfg.state_dir) >= (int) sizeof(path))
        return error_set(errp, E_INVALID, 0, "state directory path too long");
    int fd = mkdir_open_dir(path, 0711);
    if (fd < 0)
        return error_set(errp, E_IO, errno, "make or open %s", path);
    return fd;
}

static bool
page_is_zero(const uint8_t *b, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (b[i])
            return false;
    return true;
}

/* Copies src (beneath sdir) to a new dst (beneath ddir, 0600), fsync'd. Zero pages stay holes:
 * a tmpfs template whose holes a full read of a clone filled (pitfall 4) is kept sparse. */
static int
copy_sparse(int sdir, const char *src, int ddir, const char *dst, Error **errp)
{
    _cleanup_close_ int in = openat(sdir, src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    _cleanup_close_ int out =
        openat(ddir, dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    struct stat st;
    if (in < 0 || out < 0 || fstat(in, &st) < 0 || ftruncate(out, st.st_size) < 0)
        return error_set(errp, E_IO, errno, "keep the template's %s", src);
    _cleanup_free_ uint8_t *buf = malloc(PAUSE_COPY_CHUNK_BYTES);
    if (!buf)
        return error_set(errp, E_INTERNAL, ENOMEM, "keep the template");
    for (off_t off = 0; off < st.st_size;) {
        ssize_t n = pread(in, buf, PAUSE_COPY_CHUNK_BYTES, off);
        if (n <= 0)
            return error_set(errp, E_IO, n < 0 ? errno : EIO, "read the template's %s", src);
        for (ssize_t k = 0; k < n; k += PAUSEFILE_PAGE_BYTES) {
            size_t len = MIN((size_t) (n - k), (size_t) PAUSEFILE_PAGE_BYTES);
            if (!page_is_zero(buf + k, len) && pwrite(out, buf + k, len, off + k) != (ssize_t) len)
                return error_set(errp, E_IO, errno, "write the kept template's %s", dst);
        }
        off += n;
    }
    if (fsync(out) < 0)
        return error_set(errp, E_IO, errno, "fsync the kept template's %s", dst);
    return 0;
}

static int
keep_files(Pool *p, const Shape *s, int d, Error **errp)
{
    uid_t uid;
    gid_t gid;
    int t = p->template_dir_fd;
    if (qemu_user(&uid, &gid, errp) < 0 ||
        copy_sparse(t, path_base(s->mem_path), d, "mem", errp) < 0 ||
        copy_sparse(t, path_base(s->state_path), d, "state", errp) < 0 ||
        copy_sparse(t, path_base(s->tkey_path), d, "key", errp) < 0)
        return -1;
    /* QEMU 7.2 opens a clone's RAM file read-write by path (notes pitfall 8) */
    if (fchownat(d, "mem", uid, gid, AT_SYMLINK_NOFOLLOW) < 0 || fsync(d) < 0)
        return error_set(errp, E_IO, errno, "own the kept template's RAM");
    return 0;
}

/* Keeps the shape's present template (identity id) unless it is kept already: made under a
 * name of this thread's, renamed into place when complete, so a kept folder is whole. */
static int
template_keep(Pool *p, const Shape *s, const uint8_t id[PAUSEFILE_TEMPLATE_ID_BYTES], Error **errp)
{
    char name[PAUSE_KEPT_NAME_BYTES], tmp[PAUSE_KEPT_NAME_BYTES + 32];
    kept_name(id, name);
    snprintf(tmp, sizeof(tmp), "%s.tmp%ld", name, (long) gettid());
    _cleanup_close_ int root = kept_root_open(p, errp);
    if (root < 0)
        return -1;
    if (faccessat(root, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
        return 0;
    (void) rm_rf_at(root, tmp);
    if (mkdirat(root, tmp, 0711) < 0)
        return error_set(errp, E_IO, errno, "make a kept template's folder");
    _cleanup_close_ int d = openat(root, tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    int r = d < 0 ? error_set(errp, E_IO, errno, "open a kept template's folder")
                  : keep_files(p, s, d, errp);
    if (r == 0 && renameat(root, tmp, root, name) < 0 &&
        faccessat(root, name, F_OK, AT_SYMLINK_NOFOLLOW) < 0) /* not kept by another pause */
        r = error_set(errp, E_IO, errno, "install a kept template");
    (void) rm_rf_at(root, tmp); /* left only when another pause kept it first, or on failure */
    if (r == 0 && fsync(root) < 0)
        r = error_set(errp, E_IO, errno, "fsync the kept templates' folder");
    return r;
}

static int
pause_sink(const void *buf, size_t len, void *userdata, Error **errp)
{
    return pause_writer_feed(userdata, buf, len, errp);
}

/* The kept template named id, opened (-1 when there is none); *ret_mem_path its RAM's path. */
static int
kept_open(Pool *p, const uint8_t id[PAUSEFILE_TEMPLATE_ID_BYTES], char **ret_mem_path, Error **errp)
{
    char name[PAUSE_KEPT_NAME_BYTES];
    kept_name(id, name);
    _cleanup_close_ int root = kept_root_open(p, errp);
    if (root < 0)
        return -1;
    int d = openat(root, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (d < 0)
        return error_set(errp, E_CONFLICT, errno, "the template %s is not kept", name);
    if (ret_mem_path &&
        asprintf(ret_mem_path, "%s/" PAUSE_KEPT_DIR "/%s/mem", p->cfg.state_dir, name) < 0) {
        close(d);
        return error_set(errp, E_INTERNAL, ENOMEM, "kept template path");
    }
    return d;
}

/* The stream into tmp_name, complete and fsync'd, filtered against the kept copy of the
 * template `from` (kept now if it is the shape's present one). */
static int
pause_write(Pool *p, const Shape *s, const char *domain, const uint8_t *from, int dir_fd,
            const char *tmp_name, PauseStats *ret_stats, Error **errp)
{
    uint8_t now[PAUSEFILE_TEMPLATE_ID_BYTES], kept[PAUSEFILE_TEMPLATE_ID_BYTES];
    uint64_t t0 = now_usec();
    if (template_identity(p, s, now, NULL) == 0 && memcmp(now, from, sizeof(now)) == 0 &&
        template_keep(p, s, now, errp) < 0)
        return -1;
    uint64_t t_keep = now_usec();
    _cleanup_close_ int kd = kept_open(p, from, NULL, errp);
    if (kd < 0 || identity_at(kd, "key", "state", kept, errp) < 0)
        return -1;
    if (memcmp(kept, from, sizeof(kept)) != 0)
        return error_set(errp, E_CONFLICT, 0, "the kept template does not match its name");
    _cleanup_close_ int mem = openat(kd, "mem", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (mem < 0)
        return error_set(errp, E_UNAVAILABLE, errno, "open the kept template's RAM");
    (void) unlinkat(dir_fd, tmp_name, 0); /* a crashed pause's */
    _cleanup_close_ int fd =
        openat(dir_fd, tmp_name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return error_set(errp, E_IO, errno, "create %s", tmp_name);
    _cleanup_(pause_writer_freep) PauseWriter *w = NULL;
    if (pause_writer_new(fd, from, DOMXML_MEMORY_BACKEND_ID, pause_stream_max_bytes(s),
                         template_page, &mem, &w, errp) < 0 ||
        virt_clone_pause(p->virt, domain, pause_sink, w, PAUSE_TIMEOUT_USEC, errp) < 0)
        return -1;
    uint64_t t_stream = now_usec();
    if (pause_writer_finish(w, ret_stats, errp) < 0)
        return -1;
    ret_stats->keep_usec = t_keep - t0;
    ret_stats->stream_usec = t_stream - t_keep;
    ret_stats->finish_usec = now_usec() - t_stream; /* the rename's part is added after */
    return 0;
}

int
pool_pause_domain(Pool *p, const char *shape, const char *domain, const uint8_t from_template[32],
                  int dir_fd, const char *state_name, PauseStats *ret_stats, Error **errp)
{
    Shape *s = pause_shape(p, shape, errp);
    char tmp[256];
    if (!s)
        return -1;
    if (snprintf(tmp, sizeof(tmp), "%s" PAUSE_TMP_SUFFIX, state_name) >= (int) sizeof(tmp))
        return error_set(errp, E_INVALID, 0, "paused state name too long");
    PauseStats st = {0};
    int r = pause_write(p, s, domain, from_template, dir_fd, tmp, &st, errp);
    uint64_t t_rename = now_usec();
    if (r == 0 && (renameat(dir_fd, tmp, dir_fd, state_name) < 0 || fsync(dir_fd) < 0))
        r = error_set(errp, E_IO, errno, "install %s", state_name);
    st.finish_usec += now_usec() - t_rename;
    if (r < 0) {
        (void) unlinkat(dir_fd, tmp, 0);
        /* The guest goes on running; if it cannot (it died), the caller learns it from the
         * channel, as for any guest. */
        (void) virt_resume(p->virt, domain, NULL);
        return -1;
    }
    /* Stored: the guest is now the file. A destroy that fails leaves a suspended domain the
     * pool's sweep removes; the state is safe either way. */
    uint64_t t_destroy = now_usec();
    (void) virt_destroy(p->virt, domain, NULL);
    st.destroy_usec = now_usec() - t_destroy;
    if (ret_stats)
        *ret_stats = st;
    return 0;
}

typedef struct {
    const PauseBody *body;
} ResumeFeed;

static int
resume_send(const void *buf, size_t len, void *userdata, Error **errp)
{
    int fd = *(const int *) userdata;
    const uint8_t *b = buf;
    while (len > 0) {
        ssize_t n = send(fd, b, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return error_set(errp, E_INTERNAL, errno, "feed the paused state to QEMU");
        b += n;
        len -= (size_t) n;
    }
    return 0;
}

static int
resume_feed(int fd, void *userdata, Error **errp)
{
    const ResumeFeed *f = userdata;
    return pausefile_inflate(f->body, resume_send, &fd, errp);
}

static int paused_xml(Pool *p, const Shape *s, const char *name, const char *dir,
                      const char *mem_path, char **ret_xml, Error **errp);

int
pool_resume_domain(Pool *p, const char *shape, const char *name, const char *dir, int dir_fd,
                   const char *state_name, uint8_t ret_template[32], Error **errp)
{
    Shape *s = resume_shape(p, shape, errp);
    if (!s)
        return -1;
    _cleanup_close_ int fd = openat(dir_fd, state_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return error_set(errp, errno == ENOENT ? E_NOT_FOUND : E_IO, errno,
                         "paused state %s is missing", state_name);
    /* The header names its template; the checksum and the kept copy's own identity decide. A
     * template not kept is refused as another template's would be, after the file's checks. */
    uint8_t named[PAUSEFILE_TEMPLATE_ID_BYTES] = {0}, want[PAUSEFILE_TEMPLATE_ID_BYTES];
    (void) !pread(fd, named, sizeof(named), 32);
    memset(want, 0xff, sizeof(want));
    _cleanup_free_ char *mem_path = NULL;
    _cleanup_close_ int kd = kept_open(p, named, &mem_path, NULL);
    if (kd >= 0 && identity_at(kd, "key", "state", want, NULL) < 0)
        memset(want, 0xff, sizeof(want));
    PauseBody body = {0};
    _cleanup_free_ char *xml = NULL;
    if (pausefile_load(fd, want, pause_stream_max_bytes(s), &body, errp) < 0)
        return -1;
    ResumeFeed feed = {&body};
    int r = paused_xml(p, s, name, dir, mem_path, &xml, errp);
    if (r == 0)
        r = virt_clone_resume(p->virt, xml, resume_feed, &feed, PAUSE_TIMEOUT_USEC, errp);
    pause_body_clear(&body);
    if (r == 0)
        memcpy(ret_template, want, PAUSEFILE_TEMPLATE_ID_BYTES);
    return r;
}

static void
random_uuid(char out[37])
{
    uint8_t d[16] = {0};
    if (getrandom(d, sizeof(d), 0) != (ssize_t) sizeof(d)) /* never short for 16 bytes */
        abort();
    d[6] = (uint8_t) ((d[6] & 0x0f) | 0x40);
    d[8] = (uint8_t) ((d[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", d[0],
             d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11], d[12], d[13],
             d[14], d[15]);
}

/* The clone XML of a guest `name` whose workspace disk, channel socket and console log are
 * dir/workspace.raw, channel.sock, console.log, and whose RAM maps mem_path. */
static int
paused_xml(Pool *p, const Shape *s, const char *name, const char *dir, const char *mem_path,
           char **ret_xml, Error **errp)
{
    _cleanup_free_ char *disk = NULL, *sock = NULL, *console = NULL;
    if (asprintf(&disk, "%s/workspace.raw", dir) < 0 ||
        asprintf(&sock, "%s/channel.sock", dir) < 0 ||
        asprintf(&console, "%s/console.log", dir) < 0)
        return error_set(errp, E_INTERNAL, ENOMEM, "paused guest's paths");
    char uuid[37];
    random_uuid(uuid);
    DomainSpec spec = {
        .name = name,
        .uuid = uuid,
        .accel = p->accel,
        .vcpus = s->vcpus,
        .memory_mib = s->memory_mib,
        .kernel_path = s->image->kernel_path,
        .initrd_path = s->image->initrd_path,
        .cmdline = s->image->cmdline,
        .root_disk_path = s->image->root_path,
        .workspace_disk_path = disk,
        .channel_socket_path = sock,
        .console_log_path = console,
        .tb_cache_mib = p->cfg.tb_cache_mib,
        .cpu_quota_percent = p->cfg.cpu_quota_percent,
        .disk_bytes_per_sec = p->cfg.disk_bytes_per_sec,
        .disk_iops = p->cfg.disk_iops,
        .rng_bytes_per_sec = p->cfg.rng_bytes_per_sec,
        .memory = DOMXML_MEMORY_CLONE,
        .memory_path = mem_path,
        .memory_readonly = p->qemu_version >= POOL_QEMU_READONLY_MEMORY_VERSION,
    };
    return domxml_build(&spec, ret_xml, errp);
}
