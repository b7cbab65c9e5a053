/* stockade image build -f Dockerfile [CONTEXT] --name NAME: a Dockerfile's steps applied to a
 * tree on this host, then packed like an import (images/README.md, "Building from a
 * Dockerfile").
 *
 * FROM names an image of the image directory (a project image or an imported or built one):
 * its root.ext4 is the project's own output, read back with debugfs rdump into a scratch tree,
 * and an imported image's config (manifest.json) is the starting config. COPY/ADD (local
 * files) go through hostd/oci/oci_copy.c, WORKDIR makes its directory, ENV/ARG/USER/CMD/
 * ENTRYPOINT change the config; then hostd/oci's finish and images/pack-image.py. RUN needs a
 * guest built from the image in progress, which this version does not have: it is refused,
 * naming the line, before anything is done. Progress: "Step i/n : INSTRUCTION", elapsed. */
#include "image_build.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dockerfile.h"
#include "fdutil.h"
#include "log.h"
#include "oci_copy.h"
#include "oci_finish.h"
#include "path.h"
#include "sha256.h"
#include "timeutil.h"

#define BUILD_PATH_MAX_BYTES 4096
#define BUILD_VARS_MAX 512u
#define BUILD_ESC_BYTES 96u

typedef struct Var {
    char *name, *value;
} Var;

typedef struct Build {
    const BuildArgs *a;
    Dockerfile df;
    Var vars[BUILD_VARS_MAX]; /* ARG and ENV values in force, for expansion */
    size_t n_vars;
    OciConfig cfg; /* the image config as the steps leave it */
    OciApply apply;
    uint64_t budget;
    int root_fd, ctx_fd;
    char scratch[BUILD_PATH_MAX_BYTES];
    uint64_t deadline;
} Build;

static const char *
var_lookup(void *ctx, const char *name)
{
    Build *b = ctx;
    for (size_t i = b->n_vars; i-- > 0;)
        if (strcmp(b->vars[i].name, name) == 0)
            return b->vars[i].value;
    return NULL;
}

static int
var_set(Build *b, const char *name, size_t name_len, const char *value, Error **errp)
{
    if (b->n_vars >= BUILD_VARS_MAX)
        return error_set(errp, E_TOO_LARGE, 0, "more than %u ARG and ENV values", BUILD_VARS_MAX);
    Var *v = &b->vars[b->n_vars];
    if (!(v->name = strndup(name, name_len)) || !(v->value = strdup(value)))
        return error_set(errp, E_INTERNAL, ENOMEM, "build variables");
    b->n_vars++;
    return 0;
}

/* Replaces or appends NAME=value in the config's Env. */
static int
cfg_env_set(OciConfig *c, const char *kv, Error **errp)
{
    size_t n = (size_t) (strchr(kv, '=') - kv);
    char *copy = strdup(kv);
    if (!copy)
        return error_set(errp, E_INTERNAL, ENOMEM, "env");
    for (size_t i = 0; i < c->n_env; i++)
        if (strncmp(c->env[i], kv, n + 1) == 0) {
            free(c->env[i]);
            c->env[i] = copy;
            return 0;
        }
    char **v = c->n_env < OCI_ENV_MAX ? realloc(c->env, (c->n_env + 1) * sizeof(*v)) : NULL;
    if (!v) {
        free(copy);
        return error_set(errp, E_TOO_LARGE, 0, "more than %u Env entries", OCI_ENV_MAX);
    }
    c->env = v;
    c->env[c->n_env++] = copy;
    return 0;
}

static int
cfg_argv_set(char ***dst, size_t *n_dst, char *const *src, size_t n, Error **errp)
{
    for (size_t i = 0; i < *n_dst; i++)
        free((*dst)[i]);
    free(*dst);
    *dst = NULL;
    *n_dst = 0;
    if (n && !(*dst = calloc(n, sizeof(char *))))
        return error_set(errp, E_INTERNAL, ENOMEM, "argv");
    for (size_t i = 0; i < n; i++) {
        if (!((*dst)[i] = strdup(src[i])))
            return error_set(errp, E_INTERNAL, ENOMEM, "argv");
        (*n_dst)++;
    }
    return 0;
}

/* A path in the tree: absolute as written, else under WORKDIR; normalised, no "..". */
static int
tree_path(const Build *b, const char *p, char *out, size_t cap, Error **errp)
{
    char joined[BUILD_PATH_MAX_BYTES * 2], esc[BUILD_ESC_BYTES];
    size_t len;
    uint32_t depth;
    const char *wd = b->cfg.working_dir ? b->cfg.working_dir : "";
    if (p[0] == '/')
        snprintf(joined, sizeof(joined), "%s", p + strspn(p, "/"));
    else
        snprintf(joined, sizeof(joined), "%s/%s", wd + strspn(wd, "/"), p);
    if (strlen(joined) >= cap)
        return error_set(errp, E_INVALID, 0, "path too long");
    PathVerdict v = extract_path_normalize(joined, strlen(joined), OCI_APPLY_NAME_MAX_BYTES,
                                           b->apply.max_depth, out, &len, &depth);
    if (v == PATH_ROOT)
        out[0] = '\0';
    else if (v != PATH_OK)
        return error_set(errp, E_INVALID, 0, "path %s: no .. and within the caps",
                         log_escape(esc, sizeof(esc), p, strlen(p)));
    return 0;
}

/* ------------------------------------------------------------------ steps */

static int
step_env(Build *b, const DfInstr *in, Error **errp)
{
    for (size_t i = 0; i < in->n_args; i++) {
        const char *eq = strchr(in->args[i], '=');
        _cleanup_free_ char *value = NULL, *kv = NULL;
        if (dockerfile_expand(eq + 1, var_lookup, b, &value, errp) < 0)
            return -1;
        if (asprintf(&kv, "%.*s=%s", (int) (eq - in->args[i]), in->args[i], value) < 0)
            return error_set(errp, E_INTERNAL, ENOMEM, "env");
        if (strchr(value, '\n'))
            return error_set(errp, E_INVALID, 0, "an ENV value holds a newline");
        if (var_set(b, in->args[i], (size_t) (eq - in->args[i]), value, errp) < 0 ||
            cfg_env_set(&b->cfg, kv, errp) < 0)
            return -1;
    }
    return 0;
}

static int
step_arg(Build *b, const DfInstr *in, Error **errp)
{
    const char *eq = strchr(in->args[0], '=');
    size_t n = eq ? (size_t) (eq - in->args[0]) : strlen(in->args[0]);
    _cleanup_free_ char *name = strndup(in->args[0], n), *value = NULL;
    if (!name)
        return error_set(errp, E_INTERNAL, ENOMEM, "arg");
    if (var_lookup(b, name))
        return 0; /* set before (a build argument, or an earlier ARG) */
    if (dockerfile_expand(eq ? eq + 1 : "", var_lookup, b, &value, errp) < 0)
        return -1;
    return var_set(b, name, n, value, errp);
}

static int
step_workdir(Build *b, const DfInstr *in, Error **errp)
{
    _cleanup_free_ char *w = NULL, *abs = NULL;
    char path[BUILD_PATH_MAX_BYTES];
    _cleanup_close_ int fd = -1;
    if (dockerfile_expand(in->args[0], var_lookup, b, &w, errp) < 0 ||
        tree_path(b, w, path, sizeof(path), errp) < 0)
        return -1;
    if (asprintf(&abs, "/%s", path) < 0)
        return error_set(errp, E_INTERNAL, ENOMEM, "workdir");
    if (path[0] && oci_apply_open_dir(&b->apply, path, true, &fd) < 0)
        return error_set(errp, E_IO, errno, "WORKDIR %s", abs);
    free(b->cfg.working_dir);
    b->cfg.working_dir = TAKE_PTR(abs);
    return 0;
}

static int
step_copy(Build *b, const DfInstr *in, Error **errp)
{
    _cleanup_free_ char *dest_w = NULL, *chown = NULL;
    char dest[BUILD_PATH_MAX_BYTES];
    OciUser u = {0};

    if (dockerfile_expand(in->args[in->n_args - 1], var_lookup, b, &dest_w, errp) < 0 ||
        tree_path(b, dest_w, dest, sizeof(dest), errp) < 0)
        return -1;
    if (in->chown && (dockerfile_expand(in->chown, var_lookup, b, &chown, errp) < 0 ||
                      oci_user_resolve(b->root_fd, chown, &u, errp) < 0))
        return -1;
    bool dir = in->n_args > 2 || dest_w[strlen(dest_w) - 1] == '/';
    for (size_t i = 0; i + 1 < in->n_args; i++) {
        _cleanup_free_ char *src = NULL;
        if (dockerfile_expand(in->args[i], var_lookup, b, &src, errp) < 0)
            return -1;
        OciCopySpec spec = {.src = src,
                            .dest = dest,
                            .dest_is_dir = dir,
                            .uid = u.set ? u.uid : 0,
                            .gid = u.set ? u.gid : 0,
                            .mtime_sec = b->a->epoch};
        if (oci_copy_into(&b->apply, b->ctx_fd, &spec, &b->budget, errp) < 0)
            return -1;
    }
    return 0;
}

static int
step_run(Build *b, const DfInstr *in, Error **errp)
{
    char esc[BUILD_ESC_BYTES];
    (void) b;
    return error_set(errp, E_UNAVAILABLE, 0,
                     "Dockerfile line %u: RUN %s: RUN steps execute inside a build guest, which "
                     "this version cannot start yet (images/README.md, \"Building from a "
                     "Dockerfile\"); build what RUN would install into an image you import",
                     in->line, log_escape(esc, sizeof(esc), in->text, strlen(in->text)));
}

static int
step(Build *b, const DfInstr *in, Error **errp)
{
    _cleanup_free_ char *user = NULL;
    switch (in->kind) {
    case DF_ENV:
        return step_env(b, in, errp);
    case DF_ARG:
        return step_arg(b, in, errp);
    case DF_WORKDIR:
        return step_workdir(b, in, errp);
    case DF_USER:
        if (dockerfile_expand(in->args[0], var_lookup, b, &user, errp) < 0)
            return -1;
        free(b->cfg.user);
        b->cfg.user = TAKE_PTR(user);
        return 0;
    case DF_CMD:
        return cfg_argv_set(&b->cfg.cmd, &b->cfg.n_cmd, in->args, in->n_args, errp);
    case DF_ENTRYPOINT: /* as in Docker, a new ENTRYPOINT drops the CMD it inherited */
        return cfg_argv_set(&b->cfg.cmd, &b->cfg.n_cmd, NULL, 0, errp) < 0
                   ? -1
                   : cfg_argv_set(&b->cfg.entrypoint, &b->cfg.n_entrypoint, in->args, in->n_args,
                                  errp);
    case DF_COPY:
    case DF_ADD:
        return step_copy(b, in, errp);
    case DF_RUN:
        return step_run(b, in, errp);
    default:
        printf("  (%s changes no file of the image: ignored)\n", in->keyword);
        return 0;
    }
}

/* ------------------------------------------------------------------ FROM */

static int
base_strings(json_t *a, char ***dst, size_t *n, size_t max, Error **errp)
{
    for (size_t i = 0; i < json_array_size(a) && i < max; i++) {
        const char *s = json_string_value(json_array_get(a, i));
        char **v = realloc(*dst, (*n + 1) * sizeof(*v));
        if (!s)
            continue;
        if (!v || !(v[*n] = strdup(s)))
            return error_set(errp, E_INTERNAL, ENOMEM, "base config");
        *dst = v;
        (*n)++;
    }
    return 0;
}

/* The base image's config (an imported or built image's manifest has one), as the start. */
static int
base_config(Build *b, const char *base_dir, Error **errp)
{
    char path[BUILD_PATH_MAX_BYTES];
    _cleanup_free_ char *text = NULL;
    size_t len;
    json_t *m, *c;

    if (!path_fmt(path, sizeof(path), "%s/manifest.json", base_dir) ||
        read_file_bounded(path, 1024 * 1024, &text, &len) < 0)
        return error_set(errp, E_NOT_FOUND, errno, "FROM: no manifest in %s", base_dir);
    if (!(m = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL)))
        return error_set(errp, E_INVALID, 0, "FROM: %s is not JSON", path);
    c = json_object_get(m, "config");
    const char *wd = json_string_value(json_object_get(c, "working_dir"));
    const char *user = json_string_value(json_object_get(c, "user"));
    int r = -1;
    if (!(b->cfg.working_dir = strdup(wd ? wd : "")) || !(b->cfg.user = strdup(user ? user : "")))
        error_set(errp, E_INTERNAL, ENOMEM, "base config");
    else if (base_strings(json_object_get(c, "env"), &b->cfg.env, &b->cfg.n_env, OCI_ENV_MAX,
                          errp) == 0 &&
             base_strings(json_object_get(c, "entrypoint"), &b->cfg.entrypoint,
                          &b->cfg.n_entrypoint, OCI_ARGV_MAX, errp) == 0 &&
             base_strings(json_object_get(c, "cmd"), &b->cfg.cmd, &b->cfg.n_cmd, OCI_ARGV_MAX,
                          errp) == 0)
        r = 0;
    for (size_t i = 0; r == 0 && i < b->cfg.n_env; i++) {
        const char *eq = strchr(b->cfg.env[i], '=');
        if (eq && var_set(b, b->cfg.env[i], (size_t) (eq - b->cfg.env[i]), eq + 1, errp) < 0)
            r = -1;
    }
    json_decref(m);
    return r;
}

/* The base image's root.ext4 (the project's own output: a recipe's or an import's) read back
 * into <scratch>/root with debugfs. */
static int
step_from(Build *b, const DfInstr *in, Error **errp)
{
    _cleanup_free_ char *image = NULL;
    char base[BUILD_PATH_MAX_BYTES], ext4[BUILD_PATH_MAX_BYTES], cmd[BUILD_PATH_MAX_BYTES];
    char root[BUILD_PATH_MAX_BYTES], esc[BUILD_ESC_BYTES];

    if (dockerfile_expand(in->args[0], var_lookup, b, &image, errp) < 0)
        return -1;
    if (strspn(image, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(image) || !image[0] ||
        strlen(image) > 32)
        return error_set(errp, E_INVALID, 0,
                         "FROM %s: name an image of the image directory (stockade image ls), "
                         "or import it first (stockade image import)",
                         log_escape(esc, sizeof(esc), image, strlen(image)));
    if (!path_fmt(base, sizeof(base), "%s/%s", b->a->image_dir, image) ||
        !path_fmt(ext4, sizeof(ext4), "%s/root.ext4", base) ||
        !path_fmt(root, sizeof(root), "%s/root", b->scratch) ||
        !path_fmt(cmd, sizeof(cmd), "rdump / %s", root))
        return error_set(errp, E_INVALID, ENAMETOOLONG, "paths");
    if (access(ext4, R_OK) != 0)
        return error_set(errp, E_NOT_FOUND, errno, "FROM %s: no image %s", image, base);
    if (base_config(b, base, errp) < 0)
        return -1;
    const char *argv[] = {"/usr/sbin/debugfs", "-R", cmd, ext4, NULL};
    if (mkdir(root, 0755) < 0 || run_bounded(argv, 0, b->deadline, errp) != 0 ||
        (b->root_fd = mkdir_open_dir(root, 0755)) < 0)
        return error_set(errp, E_IO, errno, "FROM %s: read its root.ext4", image);
    (void) rm_rf_at(b->root_fd, "lost+found"); /* mkfs's; pack-image makes a new one */
    b->apply.root_fd = b->root_fd;
    return 0;
}

/* ------------------------------------------------------------------ the build */

static json_t *
build_meta(const Build *b, const OciUser *u, const char *df_sha256)
{
    const OciConfig *c = &b->cfg;
    const OciApplyStats *s = &b->apply.stats;
    return json_pack(
        "{s:{s:s,s:s,s:s,s:s},s:{s:o,s:s,s:s,s:o*,s:o,s:o,s:s?},s:{s:i,s:I,s:i,s:i,s:n,s:i,s:n}}",
        "origin", "kind", "dockerfile", "source", b->a->dockerfile, "dockerfile_sha256", df_sha256,
        "context", b->a->context, "config", "env", strings_json(c->env, c->n_env), "working_dir",
        c->working_dir ? c->working_dir : "", "user", c->user ? c->user : "", "uid_gid",
        u->set ? json_pack("[i,i]", (int) u->uid, (int) u->gid) : NULL, "entrypoint",
        strings_json(c->entrypoint, c->n_entrypoint), "cmd", strings_json(c->cmd, c->n_cmd),
        "user_note", u->note[0] ? u->note : NULL, "unpack", "entries", (int) s->entries,
        "file_bytes", (json_int_t) s->file_bytes, "skipped_special", (int) s->skipped,
        "stripped_setid", (int) s->stripped, "first_skipped", "whiteouts", 0, "first_stripped");
}

static int
build_steps(Build *b, Error **errp)
{
    size_t n = b->df.n;
    for (size_t i = 0; i < n; i++) {
        const DfInstr *in = &b->df.v[i];
        uint64_t t0 = now_usec();
        char esc[BUILD_ESC_BYTES];
        snprintf(esc, sizeof(esc), "%s", in->text);
        for (char *p = esc; *p; p++) /* the operator's own file, shown as written */
            if ((unsigned char) *p < 0x20 || *p == 0x7f)
                *p = '?';
        printf("Step %zu/%zu : %s %s\n", i + 1, n, in->keyword, esc);
        fflush(stdout);
        if ((in->kind == DF_FROM ? step_from(b, in, errp) : step(b, in, errp)) < 0)
            return error_prefix(errp, "Dockerfile line %u", in->line);
        if (now_usec() >= b->deadline)
            return error_set(errp, E_TIMEOUT, 0, "the build's time ran out");
        printf(" ---> %.2f s, %u entries, %llu bytes so far\n",
               (double) (now_usec() - t0) / (double) USEC_PER_SEC, b->apply.stats.entries,
               (unsigned long long) b->apply.stats.file_bytes);
    }
    return 0;
}

static int
build_finish(Build *b, const char *df_text, size_t df_len, Error **errp)
{
    char hex[SHA256_HEX_BYTES + 1], path[BUILD_PATH_MAX_BYTES];
    OciUser u = {0};
    sha256_hex(df_text, df_len, hex);
    if (oci_user_resolve(b->root_fd, b->cfg.user ? b->cfg.user : "", &u, errp) < 0 ||
        oci_finish_tree(b->root_fd, &b->cfg, &u, b->a->epoch, errp) < 0)
        return -1;
    json_t *meta = build_meta(b, &u, hex);
    int r = !meta || !path_fmt(path, sizeof(path), "%s/meta.json", b->scratch) ||
                    json_dump_file(meta, path, JSON_INDENT(1)) < 0
                ? error_set(errp, E_IO, errno, "meta.json")
                : 0;
    json_decref(meta);
    return r;
}

static void
build_clear(Build *b)
{
    dockerfile_clear(&b->df);
    for (size_t i = 0; i < b->n_vars; i++)
        free(b->vars[i].name), free(b->vars[i].value);
    oci_config_clear(&b->cfg);
    oci_apply_free(&b->apply);
    safe_close(b->root_fd);
    safe_close(b->ctx_fd);
}

static int
build_run(Build *b, const ImportArgs *pack, Error **errp)
{
    _cleanup_free_ char *text = NULL;
    size_t len;

    if (read_file_bounded(b->a->dockerfile, DOCKERFILE_MAX_BYTES, &text, &len) < 0)
        return error_set(errp, E_INVALID, errno, "read %s", b->a->dockerfile);
    if (dockerfile_parse(text, len, &b->df, errp) < 0)
        return -1;
    for (size_t i = 0; i < b->df.n; i++) /* before anything is done */
        if (b->df.v[i].kind == DF_RUN)
            return step_run(b, &b->df.v[i], errp);
    if ((b->ctx_fd = open(b->a->context, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return error_set(errp, E_INVALID, errno, "build context %s", b->a->context);
    if (build_steps(b, errp) < 0 || build_finish(b, text, len, errp) < 0)
        return -1;
    return image_pack(pack, b->scratch, b->deadline, errp);
}

int
image_build_dockerfile(const BuildArgs *a, Error **errp)
{
    _cleanup_free_ Build *b = calloc(1, sizeof(*b));
    char dir[BUILD_PATH_MAX_BYTES];
    uint64_t t0 = now_usec();

    if (!b)
        return error_set(errp, E_INTERNAL, ENOMEM, "build");
    umask(022); /* directories the tree implies are 0755 whatever the operator's umask */
    *b = (Build){.a = a,
                 .root_fd = -1,
                 .ctx_fd = -1,
                 .budget = a->limits.max_bytes,
                 .deadline = t0 + a->limits.max_usec,
                 .apply = {.root_fd = -1,
                           .max_entries = a->limits.max_entries,
                           .max_depth = a->limits.max_depth,
                           .deadline_usec = t0 + a->limits.max_usec,
                           .label = "COPY"}};
    if (!path_fmt(dir, sizeof(dir), "%s/.import", a->image_dir) ||
        !path_fmt(b->scratch, sizeof(b->scratch), "%s/%s.%d", dir, a->name, (int) getpid()))
        return error_set(errp, E_INVALID, ENAMETOOLONG, "image directory path");
    _cleanup_close_ int d = mkdir_open_dir(dir, 0700);
    if (d < 0 || rm_rf(b->scratch) < 0 || mkdir(b->scratch, 0700) < 0)
        return error_set(errp, E_IO, errno, "scratch folder %s", b->scratch);
    ImportArgs pack = {.source = a->dockerfile,
                       .name = a->name,
                       .image_dir = a->image_dir,
                       .kernel_from = a->kernel_from,
                       .packer = a->packer,
                       .epoch = a->epoch};
    int r = build_run(b, &pack, errp);
    b->apply.root_fd = -1;
    build_clear(b);
    if (rm_rf(b->scratch) < 0 && r == 0)
        fprintf(stderr, "stockade image build: could not remove %s: %s\n", b->scratch,
                strerror(errno));
    if (r == 0)
        printf("built image %s from %s in %.1f s\n", a->name, a->dockerfile,
               (double) (now_usec() - t0) / (double) USEC_PER_SEC);
    return r;
}
