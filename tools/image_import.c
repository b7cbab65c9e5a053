/* stockade image import SOURCE --name NAME: an OCI image (an OCI layout, a `docker save`
 * tarball or a registry reference) → a Stockade image in the image directory, booted by the
 * project's kernel and runner (images/README.md, "Imported images").
 *
 * 1. skopeo copies SOURCE into a scratch OCI layout (the ecosystem's tool for every
 *    transport and format: registries with the usual auth file, docker-archive, oci), picking
 *    linux/amd64; it runs with RLIMIT_FSIZE = the blob cap and under the time budget;
 * 2. hostd/oci reads that layout (every digest, size and diff_id checked) and applies the
 *    layers into a scratch tree, confined and bounded (oci_apply.h), then adds what the
 *    runner needs (oci_finish.h);
 * 3. images/pack-image.py packs the tree into root.ext4 (reproducible, as the builder does),
 *    copies the kernel and initramfs of a project image and writes manifest.json.
 * The scratch folder (<image_dir>/.import/NAME.PID, 0700) is removed at the end, always. */
#include "image_import.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fdutil.h"
#include "log.h"
#include "oci_finish.h"
#include "oci_import.h"
#include "output.h"
#include "timeutil.h"

#define IMPORT_PATH_MAX_BYTES 4096
#define IMPORT_TAG "import"
#define IMPORT_WAIT_STEP_MS 100

bool
path_fmt(char *out, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, cap, fmt, ap);
    va_end(ap);
    return n >= 0 && (size_t) n < cap;
}

static const char *const source_prefixes[] = {"oci:", "docker-archive:", "docker://"};

bool
image_import_source_ok(const char *source)
{
    for (size_t i = 0; i < ELEMENTSOF(source_prefixes); i++)
        if (strncmp(source, source_prefixes[i], strlen(source_prefixes[i])) == 0 &&
            source[strlen(source_prefixes[i])] != '\0')
            return strlen(source) < IMPORT_PATH_MAX_BYTES && !strchr(source, '\n');
    return false;
}

int
run_bounded(const char *const *argv, uint64_t fsize_bytes, uint64_t deadline_usec, Error **errp)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return error_set(errp, E_INTERNAL, errno, "fork");
    if (pid == 0) {
        struct rlimit rl = {fsize_bytes, fsize_bytes};
        int null = open("/dev/null", O_RDONLY);
        if (null >= 0)
            dup2(null, 0);
        if (fsize_bytes)
            setrlimit(RLIMIT_FSIZE, &rl);
        execv(argv[0], (char *const *) argv);
        fprintf(stderr, "stockade image import: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    for (;;) {
        int status;
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (w < 0 && errno != EINTR)
            return error_set(errp, E_INTERNAL, errno, "waitpid");
        if (now_usec() >= deadline_usec) {
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
            return error_set(errp, E_TIMEOUT, 0, "%s ran out of the import's time", argv[0]);
        }
        poll(NULL, 0, IMPORT_WAIT_STEP_MS);
    }
}

static int
import_skopeo(const ImportArgs *a, const char *layout, uint64_t deadline, Error **errp)
{
    char dest[IMPORT_PATH_MAX_BYTES + 16];
    const char *argv[16];
    size_t n = 0;

    if (!path_fmt(dest, sizeof(dest), "oci:%s:%s", layout, IMPORT_TAG))
        return error_set(errp, E_INVALID, ENAMETOOLONG, "layout path");
    argv[n++] = a->skopeo;
    argv[n++] = "--override-os";
    argv[n++] = "linux";
    argv[n++] = "--override-arch";
    argv[n++] = "amd64";
    argv[n++] = "copy";
    argv[n++] = "--quiet";
    argv[n++] = "--remove-signatures";
    if (a->authfile) {
        argv[n++] = "--authfile";
        argv[n++] = a->authfile;
    }
    argv[n++] = a->source;
    argv[n++] = dest;
    argv[n] = NULL;
    printf("fetching %s with skopeo\n", a->source);
    int r = run_bounded(argv, a->limits.max_blob_bytes, deadline, errp);
    if (r < 0)
        return -1;
    if (r == 128 + SIGXFSZ)
        return error_set(errp, E_TOO_LARGE, 0, "a blob of %s is larger than --max-blob-bytes",
                         a->source);
    if (r != 0)
        return error_set(errp, E_INVALID, 0,
                         "skopeo could not copy %s (exit %d; its message is "
                         "above)",
                         a->source, r);
    return 0;
}

static void
import_progress(void *ctx, size_t i, size_t n, const OciLayerInfo *l)
{
    char packed[16], unpacked[16];
    (void) ctx;
    format_bytes(l->desc.size, packed, sizeof(packed));
    format_bytes(l->unpacked_bytes, unpacked, sizeof(unpacked));
    printf("layer %zu/%zu %.19s  %s -> %s  %.1f s  verified\n", i + 1, n, l->desc.digest, packed,
           unpacked, (double) l->usec / (double) USEC_PER_SEC);
    fflush(stdout);
}

json_t *
strings_json(char *const *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

/* What pack-image.py writes into the manifest: origin and config. */
static json_t *
import_meta(const ImportArgs *a, const OciImport *imp, const OciUser *u)
{
    json_t *layers = json_array();
    for (size_t i = 0; layers && i < imp->manifest.n_layers; i++)
        json_array_append_new(layers,
                              json_pack("{s:s,s:I,s:s,s:s}", "digest", imp->layers[i].desc.digest,
                                        "size", (json_int_t) imp->layers[i].desc.size, "diff_id",
                                        imp->layers[i].diff_id, "media_type",
                                        imp->layers[i].desc.media_type));
    const OciApplyStats *s = &imp->stats;
    return json_pack(
        "{s:{s:s,s:s,s:s,s:s,s:o},s:{s:o,s:s,s:s,s:o*,s:o,s:o,s:s?},s:{s:i,s:I,s:i,s:i,s:s?,s:i,"
        "s:s?}}",
        "origin", "kind", "import", "source", a->source, "manifest_digest", imp->manifest_digest,
        "config_digest", imp->manifest.config.digest, "layers", layers, "config", "env",
        strings_json(imp->config.env, imp->config.n_env), "working_dir", imp->config.working_dir,
        "user", imp->config.user, "uid_gid",
        u->set ? json_pack("[i,i]", (int) u->uid, (int) u->gid) : NULL, "entrypoint",
        strings_json(imp->config.entrypoint, imp->config.n_entrypoint), "cmd",
        strings_json(imp->config.cmd, imp->config.n_cmd), "user_note", u->note[0] ? u->note : NULL,
        "unpack", "entries", (int) s->entries, "file_bytes", (json_int_t) s->file_bytes,
        "skipped_special", (int) s->skipped, "stripped_setid", (int) s->stripped, "first_skipped",
        s->skipped ? s->first_skipped : NULL, "whiteouts", (int) s->whiteouts, "first_stripped",
        s->stripped ? s->first_stripped : NULL);
}

static void
import_report(const OciImport *imp, const OciUser *u)
{
    const OciApplyStats *s = &imp->stats;
    char bytes[16];
    format_bytes(s->file_bytes, bytes, sizeof(bytes));
    printf("tree: %u entries (%u files, %s; %u dirs, %u symlinks, %u hard links), %u whiteouts\n",
           s->entries, s->files, bytes, s->dirs, s->symlinks, s->hardlinks, s->whiteouts);
    if (s->skipped)
        printf("skipped %u device node(s)/FIFO(s), first %s: guests never get device nodes from "
               "an image\n",
               s->skipped, s->first_skipped);
    if (s->stripped)
        printf("removed setuid/setgid from %u entr%s, first %s\n", s->stripped,
               s->stripped == 1 ? "y" : "ies", s->first_stripped);
    if (u->note[0])
        printf("%s\n", u->note);
}

static int
import_tree(const ImportArgs *a, const char *scratch, uint64_t deadline, Error **errp)
{
    char path[IMPORT_PATH_MAX_BYTES];
    OciLimits lim = a->limits;
    OciImport imp = {0};
    OciUser user = {0};
    int r = -1;

    _cleanup_close_ int layout = -1, root = -1;
    if (path_fmt(path, sizeof(path), "%s/layout", scratch))
        layout = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (path_fmt(path, sizeof(path), "%s/root", scratch) && mkdir(path, 0755) == 0)
        root = mkdir_open_dir(path, 0755);
    if (layout < 0 || root < 0)
        return error_set(errp, E_IO, errno, "scratch folder %s", scratch);
    uint64_t now = now_usec();
    lim.max_usec = deadline > now ? deadline - now : 0;
    if (oci_import_layout(layout, IMPORT_TAG, root, &lim, import_progress, NULL, &imp, errp) < 0)
        return -1;
    if (oci_user_resolve(root, imp.config.user, &user, errp) < 0 ||
        oci_finish_tree(root, &imp.config, &user, a->epoch, errp) < 0)
        goto fail_clear;
    import_report(&imp, &user);
    json_t *meta = import_meta(a, &imp, &user);
    if (!meta || !path_fmt(path, sizeof(path), "%s/meta.json", scratch) ||
        json_dump_file(meta, path, JSON_INDENT(1)) < 0)
        error_set(errp, E_IO, errno, "write %s", path);
    else
        r = 0;
    json_decref(meta);

fail_clear:
    oci_import_clear(&imp);
    return r;
}

int
image_pack(const ImportArgs *a, const char *scratch, uint64_t deadline, Error **errp)
{
    char tree[IMPORT_PATH_MAX_BYTES], meta[IMPORT_PATH_MAX_BYTES], out[IMPORT_PATH_MAX_BYTES];
    char base[IMPORT_PATH_MAX_BYTES], epoch[24];
    if (!path_fmt(tree, sizeof(tree), "%s/root", scratch) ||
        !path_fmt(meta, sizeof(meta), "%s/meta.json", scratch) ||
        !path_fmt(out, sizeof(out), "%s/%s", a->image_dir, a->name) ||
        !path_fmt(base, sizeof(base), "%s/%s", a->image_dir, a->kernel_from))
        return error_set(errp, E_INVALID, ENAMETOOLONG, "image directory path");
    snprintf(epoch, sizeof(epoch), "%lld", (long long) a->epoch);
    const char *argv[] = {"/usr/bin/python3", a->packer, "--tree",        tree,  "--meta", meta,
                          "--name",           a->name,   "--kernel-from", base,  "--out",  out,
                          "--work",           scratch,   "--epoch",       epoch, NULL};
    printf("packing root.ext4\n");
    int r = run_bounded(argv, 0, deadline, errp);
    if (r < 0)
        return -1;
    if (r != 0)
        return error_set(errp, E_INTERNAL, 0, "pack-image.py failed (exit %d; see above)", r);
    return 0;
}

int
image_import_run(const ImportArgs *a, Error **errp)
{
    char dir[IMPORT_PATH_MAX_BYTES], scratch[IMPORT_PATH_MAX_BYTES];
    uint64_t t0 = now_usec(), deadline = t0 + a->limits.max_usec;
    int r;

    umask(022); /* directories the tree implies are 0755 whatever the operator's umask */
    if (!path_fmt(dir, sizeof(dir), "%s/.import", a->image_dir) ||
        !path_fmt(scratch, sizeof(scratch), "%s/%s.%d", dir, a->name, (int) getpid()))
        return error_set(errp, E_INVALID, ENAMETOOLONG, "image directory path");
    _cleanup_close_ int d = mkdir_open_dir(dir, 0700);
    if (d < 0 || (rm_rf(scratch) < 0) || mkdir(scratch, 0700) < 0)
        return error_set(errp, E_IO, errno, "scratch folder %s", scratch);
    char layout[IMPORT_PATH_MAX_BYTES + 8];
    r = path_fmt(layout, sizeof(layout), "%s/layout", scratch)
            ? import_skopeo(a, layout, deadline, errp)
            : error_set(errp, E_INVALID, ENAMETOOLONG, "layout path");
    if (r == 0)
        r = import_tree(a, scratch, deadline, errp);
    if (r == 0)
        r = image_pack(a, scratch, deadline, errp);
    if (rm_rf(scratch) < 0 && r == 0)
        fprintf(stderr, "stockade image import: could not remove %s: %s\n", scratch,
                strerror(errno));
    if (r == 0)
        printf("imported %s as image %s in %.1f s\n", a->source, a->name,
               (double) (now_usec() - t0) / (double) USEC_PER_SEC);
    return r;
}
