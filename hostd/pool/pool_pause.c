/* Pause and resume of a template clone (issue 27, notes/pause-2026-12.md): the stored state
 * is QEMU's stream less every page equal to the template's (pausefile.h), so a paused idle
 * guest costs its private pages, and a resumed one maps the template again for the rest.
 *
 * A delta is only good against the template's exact bytes (pitfall 5): the file carries the
 * template's identity — the SHA-256 of its key (what it was made from) and of its device
 * state (which differs at every boot of a template) — and a resume against any other is
 * refused before QEMU sees a byte. Blocking (libvirt, disk): worker threads or a test's own
 * thread; they read only what stays fixed while the pool runs (its Virt, the templates'
 * folder, the shape's paths). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fdutil.h"
#include "pausefile.h"
#include "pool_internal.h"
#include "timeutil.h"
#include "sha256.h"

#define PAUSE_TIMEOUT_USEC (120 * USEC_PER_SEC) /* 0.16 s idle, 0.3 s for 64 MiB here */
#define PAUSE_TEMPLATE_KEY_MAX_BYTES 128
#define PAUSE_TEMPLATE_STATE_MAX_BYTES (16u << 20) /* 320 KB measured */
#define PAUSE_TMP_SUFFIX ".tmp"

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

/* What a stored stream may be at most: the guest's RAM twice over (ROMs, video RAM and a
 * record header per page come on top of the RAM) and some. */
static uint64_t
pause_stream_max_bytes(const Shape *s)
{
    return (uint64_t) s->memory_mib * 2 * 1024 * 1024 + (64u << 20);
}

static int
template_identity(Pool *p, const Shape *s, uint8_t ret[PAUSEFILE_TEMPLATE_ID_BYTES], Error **errp)
{
    _cleanup_free_ char *key = NULL, *state = NULL;
    size_t key_len, state_len;
    int dir = p->template_dir_fd;
    if (read_file_bounded_at(dir, path_base(s->tkey_path), PAUSE_TEMPLATE_KEY_MAX_BYTES, &key,
                             &key_len) < 0 ||
        read_file_bounded_at(dir, path_base(s->state_path), PAUSE_TEMPLATE_STATE_MAX_BYTES, &state,
                             &state_len) < 0)
        return error_set(errp, E_UNAVAILABLE, errno, "read the template of %s", s->name);
    Sha256 h;
    sha256_init(&h);
    sha256_update(&h, "stockade-template-id\n", 21);
    sha256_update(&h, key, key_len);
    sha256_update(&h, "\n", 1);
    sha256_update(&h, state, state_len);
    sha256_final(&h, ret);
    return 0;
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

static int
pause_sink(const void *buf, size_t len, void *userdata, Error **errp)
{
    return pause_writer_feed(userdata, buf, len, errp);
}

/* The stream into tmp_name, complete and fsync'd. */
static int
pause_write(Pool *p, const Shape *s, const char *domain, int dir_fd, const char *tmp_name,
            PauseStats *ret_stats, Error **errp)
{
    uint8_t id[PAUSEFILE_TEMPLATE_ID_BYTES];
    if (template_identity(p, s, id, errp) < 0)
        return -1;
    _cleanup_close_ int mem =
        openat(p->template_dir_fd, path_base(s->mem_path), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (mem < 0)
        return error_set(errp, E_UNAVAILABLE, errno, "open the template RAM of %s", s->name);
    (void) unlinkat(dir_fd, tmp_name, 0); /* a crashed pause's */
    _cleanup_close_ int fd =
        openat(dir_fd, tmp_name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return error_set(errp, E_IO, errno, "create %s", tmp_name);
    _cleanup_(pause_writer_freep) PauseWriter *w = NULL;
    if (pause_writer_new(fd, id, DOMXML_MEMORY_BACKEND_ID, pause_stream_max_bytes(s), template_page,
                         &mem, &w, errp) < 0 ||
        virt_clone_pause(p->virt, domain, pause_sink, w, PAUSE_TIMEOUT_USEC, errp) < 0)
        return -1;
    return pause_writer_finish(w, ret_stats, errp);
}

int
pool_pause_domain(Pool *p, const char *shape, const char *domain, int dir_fd,
                  const char *state_name, PauseStats *ret_stats, Error **errp)
{
    Shape *s = pause_shape(p, shape, errp);
    char tmp[256];
    if (!s)
        return -1;
    if (snprintf(tmp, sizeof(tmp), "%s" PAUSE_TMP_SUFFIX, state_name) >= (int) sizeof(tmp))
        return error_set(errp, E_INVALID, 0, "paused state name too long");
    int r = pause_write(p, s, domain, dir_fd, tmp, ret_stats, errp);
    if (r == 0 && (renameat(dir_fd, tmp, dir_fd, state_name) < 0 || fsync(dir_fd) < 0))
        r = error_set(errp, E_IO, errno, "install %s", state_name);
    if (r < 0) {
        (void) unlinkat(dir_fd, tmp, 0);
        /* The guest goes on running; if it cannot (it died), the caller learns it from the
         * channel, as for any guest. */
        (void) virt_resume(p->virt, domain, NULL);
        return -1;
    }
    /* Stored: the guest is now the file. A destroy that fails leaves a suspended domain the
     * pool's sweep removes; the state is safe either way. */
    (void) virt_destroy(p->virt, domain, NULL);
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

int
pool_resume_domain(Pool *p, const char *shape, const char *xml, int dir_fd, const char *state_name,
                   Error **errp)
{
    Shape *s = pause_shape(p, shape, errp);
    if (!s)
        return -1;
    uint8_t id[PAUSEFILE_TEMPLATE_ID_BYTES];
    if (template_identity(p, s, id, errp) < 0)
        return -1;
    _cleanup_close_ int fd = openat(dir_fd, state_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return error_set(errp, errno == ENOENT ? E_NOT_FOUND : E_IO, errno,
                         "paused state %s is missing", state_name);
    PauseBody body = {0};
    if (pausefile_load(fd, id, pause_stream_max_bytes(s), &body, errp) < 0)
        return -1;
    ResumeFeed feed = {&body};
    int r = virt_clone_resume(p->virt, xml, resume_feed, &feed, PAUSE_TIMEOUT_USEC, errp);
    pause_body_clear(&body);
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

int
pool_paused_xml(Pool *p, const char *shape, const char *name, const char *dir, char **ret_xml,
                Error **errp)
{
    Shape *s = pause_shape(p, shape, errp);
    if (!s)
        return -1;
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
        .memory_path = s->mem_path,
        .memory_readonly = p->qemu_version >= POOL_QEMU_READONLY_MEMORY_VERSION,
    };
    return domxml_build(&spec, ret_xml, errp);
}
