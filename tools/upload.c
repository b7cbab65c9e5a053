/* See upload.h. */
#include "upload.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base64.h"
#include "fdutil.h"
#include "log.h"

void
upload_list_init(UploadList *u, uint64_t max_file_bytes, uint64_t max_total_bytes)
{
    *u = (UploadList){.max_file_bytes = max_file_bytes, .max_total_bytes = max_total_bytes};
}

void
upload_list_free(UploadList *u)
{
    for (size_t i = 0; i < u->n; i++) {
        free(u->v[i].local);
        free(u->v[i].remote);
    }
    free(u->v);
    u->v = NULL;
    u->n = u->cap = 0;
}

bool
upload_remote_ok(const char *remote)
{
    size_t n = strlen(remote);
    if (n == 0 || n > UPLOAD_PATH_MAX_BYTES || remote[0] == '/')
        return false;
    for (const char *p = remote; *p;) {
        size_t c = strcspn(p, "/");
        if (c == 0 || (c == 1 && p[0] == '.') || (c == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        p += c;
        if (*p == '/' && *++p == '\0')
            return false;
    }
    return true;
}

static char *
join(const char *a, const char *b)
{
    char *s = NULL;
    if (asprintf(&s, "%s%s%s", a, a[0] && b[0] ? "/" : "", b) < 0)
        return NULL;
    return s;
}

static void
note_skipped(UploadList *u, const char *local)
{
    if (u->skipped++ == 0)
        log_escape(u->first_skipped, sizeof(u->first_skipped), local, strlen(local));
}

/* The caps, each refused with the limit and what to do instead. */
static int
check_caps(const UploadList *u, const char *esc, const char *remote, uint64_t size, Error **errp)
{
    if (!upload_remote_ok(remote))
        return error_set(errp, E_INVALID, 0,
                         "upload %s: '%.100s' is not a workspace path (relative, no '.' or '..', "
                         "at most %d bytes)",
                         esc, remote, UPLOAD_PATH_MAX_BYTES);
    if (u->n == UPLOAD_FILES_MAX)
        return error_set(errp, E_INVALID, 0,
                         "upload: more than %d files; pack them into an archive and upload that",
                         UPLOAD_FILES_MAX);
    if (size > u->max_file_bytes)
        return error_set(errp, E_INVALID, 0,
                         "upload %s: %llu bytes is over the cap of %llu MiB per file; fetch large "
                         "inputs from inside the job or compress them",
                         esc, (unsigned long long) size,
                         (unsigned long long) (u->max_file_bytes >> 20));
    if (u->total_bytes + size > u->max_total_bytes)
        return error_set(errp, E_INVALID, 0,
                         "upload: over the cap of %llu MiB in all (at %s); upload less, or fetch "
                         "large inputs from inside the job",
                         (unsigned long long) (u->max_total_bytes >> 20), esc);
    return 0;
}

static int
add_entry(UploadList *u, const char *local, const char *remote, const struct stat *st, Error **errp)
{
    char esc[160];
    log_escape(esc, sizeof(esc), local, strlen(local));
    if (check_caps(u, esc, remote, (uint64_t) st->st_size, errp) < 0)
        return -1;
    for (size_t i = 0; i < u->n; i++)
        if (strcmp(u->v[i].remote, remote) == 0)
            return error_set(errp, E_INVALID, 0,
                             "upload: two files would land on %.200s; rename one", remote);
    if (u->n == u->cap) {
        size_t cap = u->cap ? u->cap * 2 : 16;
        UploadEntry *v = realloc(u->v, cap * sizeof(*v));
        if (!v)
            return error_set(errp, E_INTERNAL, ENOMEM, "upload");
        u->v = v;
        u->cap = cap;
    }
    UploadEntry *e = &u->v[u->n];
    *e = (UploadEntry){.local = strdup(local),
                       .remote = strdup(remote),
                       .size = (uint64_t) st->st_size,
                       .mode = st->st_mode & 0755};
    if (!e->local || !e->remote) {
        free(e->local);
        free(e->remote);
        return error_set(errp, E_INTERNAL, ENOMEM, "upload");
    }
    u->n++;
    u->total_bytes += e->size;
    return 0;
}

static int
cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The sorted entry names of directory `local` (without "." and ".."). */
static int
list_dir(const char *local, char ***ret, size_t *ret_n, Error **errp)
{
    DIR *d = opendir(local);
    char **v = NULL;
    size_t n = 0;
    struct dirent *de;

    if (!d)
        return error_set(errp, E_INVALID, errno, "upload: cannot read directory %.200s", local);
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char **nv = n < UPLOAD_FILES_MAX * 4 ? realloc(v, (n + 1) * sizeof(*v)) : NULL;
        if (!nv || !(nv[n] = strdup(de->d_name))) {
            v = nv ? nv : v;
            for (size_t i = 0; i < n; i++)
                free(v[i]);
            free(v);
            closedir(d);
            return error_set(errp, E_INVALID, 0, "upload: directory %.200s has too many entries",
                             local);
        }
        v = nv;
        n++;
    }
    closedir(d);
    qsort(v, n, sizeof(*v), cmp_names);
    *ret = v;
    *ret_n = n;
    return 0;
}

static int add_tree(UploadList *u, const char *local, const char *remote, unsigned depth,
                    Error **errp);

static int
add_dir(UploadList *u, const char *local, const char *remote, unsigned depth, Error **errp)
{
    char **names = NULL;
    size_t n = 0;
    int r = 0;

    if (depth > UPLOAD_DEPTH_MAX)
        return error_set(errp, E_INVALID, 0, "upload: %.200s is nested deeper than %d levels",
                         local, UPLOAD_DEPTH_MAX);
    if (list_dir(local, &names, &n, errp) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        _cleanup_free_ char *l = join(local, names[i]), *rm = join(remote, names[i]);
        if (r == 0 && (!l || !rm))
            r = error_set(errp, E_INTERNAL, ENOMEM, "upload");
        if (r == 0)
            r = add_tree(u, l, rm, depth + 1, errp);
        free(names[i]);
    }
    free(names);
    return r;
}

static int
add_tree(UploadList *u, const char *local, const char *remote, unsigned depth, Error **errp)
{
    struct stat st;
    if (lstat(local, &st) < 0)
        return error_set(errp, E_INVALID, errno, "upload: %.200s", local);
    if (S_ISDIR(st.st_mode))
        return add_dir(u, local, remote, depth, errp);
    if (!S_ISREG(st.st_mode)) { /* symlink, device, FIFO, socket: never sent */
        note_skipped(u, local);
        return 0;
    }
    return add_entry(u, local, remote, &st, errp);
}

int
upload_list_add(UploadList *u, const char *local, const char *prefix, Error **errp)
{
    struct stat st;
    if (stat(local, &st) < 0) /* the named path itself may be a symlink the user meant */
        return error_set(errp, E_INVALID, errno, "upload: %.200s", local);
    if (S_ISDIR(st.st_mode))
        return add_dir(u, local, prefix, 0, errp);
    _cleanup_free_ char *copy = strdup(local);
    if (!copy)
        return error_set(errp, E_INTERNAL, ENOMEM, "upload");
    char *base = strrchr(copy, '/');
    base = base ? base + 1 : copy;
    _cleanup_free_ char *remote = join(prefix, base);
    if (!remote)
        return error_set(errp, E_INTERNAL, ENOMEM, "upload");
    return upload_list_add_file(u, local, remote, errp);
}

int
upload_list_add_file(UploadList *u, const char *local, const char *remote, Error **errp)
{
    struct stat st;
    if (stat(local, &st) < 0)
        return error_set(errp, E_INVALID, errno, "upload: %.200s", local);
    if (!S_ISREG(st.st_mode))
        return error_set(errp, E_INVALID, 0, "upload: %.200s is not a regular file", local);
    return add_entry(u, local, remote, &st, errp);
}

int
upload_read(const UploadEntry *e, uint8_t **ret, size_t *ret_len, Error **errp)
{
    _cleanup_close_ int fd = open(e->local, O_RDONLY | O_CLOEXEC);
    struct stat st;
    size_t got;

    if (fd < 0 || fstat(fd, &st) < 0)
        return error_set(errp, E_INVALID, errno, "upload: %.200s", e->local);
    _cleanup_free_ uint8_t *buf = malloc(e->size + 1);
    if (!buf)
        return error_set(errp, E_INTERNAL, ENOMEM, "upload");
    if (read_full(fd, buf, e->size + 1, &got) < 0)
        return error_set(errp, E_INVALID, errno, "upload: read %.200s", e->local);
    if (got != e->size || (uint64_t) st.st_size != e->size)
        return error_set(errp, E_INVALID, 0, "upload: %.200s changed size while being read",
                         e->local);
    *ret = TAKE_PTR(buf);
    *ret_len = got;
    return 0;
}

static json_t *
file_json(const UploadEntry *e, const uint8_t *data, size_t len)
{
    json_t *text = memchr(data, '\0', len) ? NULL : json_stringn((const char *) data, len);
    if (text)
        return json_pack("{s:s,s:o,s:i}", "path", e->remote, "content", text, "mode",
                         (int) e->mode);
    _cleanup_free_ char *b64 = base64_encode(data, len);
    if (!b64)
        return NULL;
    return json_pack("{s:s,s:s,s:i}", "path", e->remote, "content_b64", b64, "mode", (int) e->mode);
}

int
upload_files_json(const UploadList *u, json_t **ret, Error **errp)
{
    json_t *arr = json_array();
    if (!arr)
        return error_set(errp, E_INTERNAL, ENOMEM, "upload");
    for (size_t i = 0; i < u->n; i++) {
        _cleanup_free_ uint8_t *data = NULL;
        size_t len;
        if (upload_read(&u->v[i], &data, &len, errp) < 0) {
            json_decref(arr);
            return -1;
        }
        json_t *f = file_json(&u->v[i], data, len);
        if (!f || json_array_append_new(arr, f) < 0) {
            json_decref(arr);
            return error_set(errp, E_INTERNAL, ENOMEM, "upload");
        }
    }
    *ret = arr;
    return 0;
}
