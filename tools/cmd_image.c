/* stockade image ls|build|import|rm: the guest images. ls joins the daemon's pools (GET
 * /v1/pool) with the manifests of a local image directory; build runs the project's image
 * builder (images/build-image.py, installed under libexec) on this machine; import brings an
 * OCI image in (image_import.c); rm removes an imported image no pool uses. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "events.h"
#include "fdutil.h"
#include "image_build.h"
#include "image_import.h"
#include "images.h"
#include "output.h"
#include "timeutil.h"
#include "units.h"

#define IMAGE_PATH_MAX_BYTES 4096

static const char image_help[] =
    "Usage: stockade image ls [--image-dir DIR] [--verify] [--json]\n"
    "       stockade image build NAME [--image-dir DIR] [--force]\n"
    "       stockade image build --file DOCKERFILE [CONTEXT] --name NAME [--image-dir DIR]\n"
    "                            [--kernel-from IMAGE] [--max-bytes SIZE] [--max-entries N]\n"
    "                            [--timeout SECONDS] [--force]\n"
    "       stockade image import SOURCE --name NAME [--image-dir DIR] [--kernel-from IMAGE]\n"
    "                             [--authfile FILE] [--max-bytes SIZE] [--max-blob-bytes SIZE]\n"
    "                             [--max-entries N] [--timeout SECONDS] [--force]\n"
    "       stockade image rm NAME [--image-dir DIR]\n"
    "  ls      the images the daemon's pools use and those in DIR, with their manifests checked\n"
    "          (--verify also checks every file's sha256) and where each came from\n"
    "  build   builds image NAME (a recipe: minimal, python) into DIR/NAME with the project's\n"
    "          builder, from Debian packages through this machine's apt; with --file, builds\n"
    "          --name NAME from a Dockerfile: FROM an image of DIR, COPY/ADD of CONTEXT's files\n"
    "          (default .), ENV, ARG, WORKDIR, USER, CMD, ENTRYPOINT (RUN is refused: it needs a\n"
    "          build guest, which this version does not start yet)\n"
    "  import  makes image NAME in DIR/NAME from an OCI image: SOURCE is oci:DIR[:TAG] (an OCI\n"
    "          layout), docker-archive:FILE (a `docker save` tarball) or docker://REF (a\n"
    "          registry this host reaches; credentials from skopeo's usual auth file or\n"
    "          --authfile). Every digest is verified; layers are applied without device nodes\n"
    "          or setuid bits, within --max-bytes (16G) unpacked, --max-blob-bytes (8G) per\n"
    "          blob, --max-entries (1000000) and --timeout (1800 s). The kernel, initramfs and\n"
    "          runner are those of --kernel-from (default minimal). --force replaces an image\n"
    "          of that name that an earlier import made.\n"
    "  rm      removes an imported image that no pool of the daemon uses\n"
    "build and import are LOCAL operator actions: they need root, and the daemon uses a new\n"
    "image only after a restart (systemctl restart stockaded), which remakes its snapshots;\n"
    "a pool names an image with `image = NAME` in its [pool NAME] section.\n"
    "DIR defaults to " STOCKADE_CLI_INSTALL_IMAGE_DIR " when it exists, else the build's.\n";

enum {
    OPT_IMAGE_DIR = CLI_OPT_VERB_BASE,
    OPT_VERIFY,
    OPT_FORCE,
    OPT_NAME,
    OPT_KERNEL_FROM,
    OPT_AUTHFILE,
    OPT_MAX_BYTES,
    OPT_MAX_BLOB_BYTES,
    OPT_MAX_ENTRIES,
    OPT_TIMEOUT,
    OPT_FILE,
};

typedef struct ImageArgs {
    const char *dir;
    bool verify, force;
    const char *name, *kernel_from, *authfile;
    const char *max_bytes, *max_blob_bytes, *max_entries, *timeout;
    const char *file; /* build --file: a Dockerfile */
} ImageArgs;

static int
image_options(Cli *cli, int argc, char **argv, ImageArgs *a, Error **errp)
{
    static const struct option opts[] = {
        {"image-dir", required_argument, NULL, OPT_IMAGE_DIR},
        {"verify", no_argument, NULL, OPT_VERIFY},
        {"force", no_argument, NULL, OPT_FORCE},
        {"name", required_argument, NULL, OPT_NAME},
        {"kernel-from", required_argument, NULL, OPT_KERNEL_FROM},
        {"authfile", required_argument, NULL, OPT_AUTHFILE},
        {"max-bytes", required_argument, NULL, OPT_MAX_BYTES},
        {"max-blob-bytes", required_argument, NULL, OPT_MAX_BLOB_BYTES},
        {"max-entries", required_argument, NULL, OPT_MAX_ENTRIES},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"file", required_argument, NULL, OPT_FILE},
        CLI_GLOBAL_OPTIONS,
    };
    int c;
    a->dir = images_default_dir();
    cli_getopt_reset(cli, opts);
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == OPT_IMAGE_DIR)
            a->dir = optarg;
        else if (c == OPT_VERIFY)
            a->verify = true;
        else if (c == OPT_FORCE)
            a->force = true;
        else if (c == OPT_NAME)
            a->name = optarg;
        else if (c == OPT_KERNEL_FROM)
            a->kernel_from = optarg;
        else if (c == OPT_AUTHFILE)
            a->authfile = optarg;
        else if (c == OPT_MAX_BYTES)
            a->max_bytes = optarg;
        else if (c == OPT_MAX_BLOB_BYTES)
            a->max_blob_bytes = optarg;
        else if (c == OPT_MAX_ENTRIES)
            a->max_entries = optarg;
        else if (c == OPT_TIMEOUT)
            a->timeout = optarg;
        else if (c == OPT_FILE)
            a->file = optarg;
        else if (args_global(cli, c, argc, argv, errp) < 0)
            return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ ls */

static const char *
pools_using(json_t *pool, const char *image, char *out, size_t cap)
{
    json_t *pools = json_object_get(pool, "pools");
    out[0] = '\0';
    for (size_t i = 0; i < json_array_size(pools); i++) {
        json_t *p = json_array_get(pools, i);
        const char *name = event_str(p, "name", "");
        /* a daemon from before pools reported their image: a pool named as the image */
        if (strcmp(event_str(p, "image", name), image) == 0)
            snprintf(out + strlen(out), cap - strlen(out), "%s%s", out[0] ? "," : "", name);
    }
    return out[0] ? out : (pool ? "-" : "?");
}

static void
ls_table(Cli *cli, const ImageInfo *v, size_t n, json_t *pool)
{
    static const char *const headers[] = {"IMAGE",  "POOLS",   "STATUS", "SIZE>",
                                          "KERNEL", "CONTENT", "BUILT",  "ORIGIN"};
    Table *t = table_new(ELEMENTSOF(headers), headers);
    for (size_t i = 0; t && i < n; i++) {
        char pools[128], size[16], hash[16], built[32] = "-";
        struct tm tm;
        time_t b = (time_t) v[i].built_sec;
        format_bytes(v[i].bytes, size, sizeof(size));
        snprintf(hash, sizeof(hash), "%.12s", v[i].content_hash[0] ? v[i].content_hash : "-");
        if (b > 0 && gmtime_r(&b, &tm))
            strftime(built, sizeof(built), "%Y-%m-%d %H:%M", &tm);
        const char *cells[] = {v[i].name,
                               pools_using(pool, v[i].name, pools, sizeof(pools)),
                               v[i].ok ? "ok" : "BROKEN",
                               size,
                               v[i].kernel[0] ? v[i].kernel : "-",
                               hash,
                               built,
                               v[i].origin};
        table_add(t, cells);
        table_color(t, 2, v[i].ok ? COLOR_GREEN : COLOR_RED);
    }
    if (t)
        table_render(t, stdout, cli->color_out);
    table_free(t);
    for (size_t i = 0; i < n; i++)
        if (!v[i].ok)
            printf("%s: %s\n", v[i].name, v[i].problem);
}

/* Pools whose name matches no local image. */
static void
ls_orphan_pools(json_t *pool, const ImageInfo *v, size_t n, const char *dir)
{
    json_t *pools = json_object_get(pool, "pools");
    for (size_t i = 0; i < json_array_size(pools); i++) {
        const char *name = event_str(json_array_get(pools, i), "name", "");
        bool found = false;
        const char *img = event_str(json_array_get(pools, i), "image", name);
        for (size_t k = 0; k < n && !found; k++)
            found = strcmp(v[k].name, img) == 0;
        if (!found) {
            _cleanup_free_ char *e = term_escape(name, strlen(name), 32);
            printf("pool %s: no image of that name in %s (the daemon may use another image "
                   "directory, or the pool another image name)\n",
                   e ? e : "?", dir);
        }
    }
}

static json_t *
ls_json(const ImageInfo *v, size_t n, json_t *pool)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++)
        json_array_append_new(
            arr, json_pack("{s:s,s:b,s:s,s:I,s:s,s:s,s:s}", "name", v[i].name, "ok", v[i].ok,
                           "problem", v[i].problem, "bytes", (json_int_t) v[i].bytes, "kernel",
                           v[i].kernel, "content_hash", v[i].content_hash, "origin", v[i].origin));
    return json_pack("{s:o,s:O?}", "images", arr, "pool", pool);
}

static int
image_ls(Cli *cli, int argc, char **argv)
{
    _cleanup_error_ Error *err = NULL, *perr = NULL;
    _cleanup_json_ json_t *pool = NULL;
    ImageArgs a = {0};
    ImageInfo *v = NULL;
    size_t n = 0;
    Client *c;

    if (image_options(cli, argc, argv, &a, &err) < 0)
        return cli_usage_error(cli, "%s", err->message);
    if (cli->help)
        return cli_print_help(image_help);
    if (optind < argc)
        return cli_usage_error(cli, "unexpected operand '%.64s'", argv[optind]);
    if (images_scan(a.dir, a.verify, &v, &n, &err) < 0)
        return cli_report(cli, err, false);
    if (!(c = cli_client(cli, &perr)) || client_json(c, "GET", "/v1/pool", NULL, &pool, &perr) < 0)
        cli_warn(cli, "pools unknown: %s", perr->message);
    int code = CLI_EXIT_OK;
    for (size_t i = 0; i < n; i++)
        if (!v[i].ok)
            code = CLI_EXIT_FAIL;
    if (cli->json) {
        _cleanup_json_ json_t *o = ls_json(v, n, pool);
        cli_print_json(o);
    } else {
        printf("image directory: %s\n", a.dir);
        ls_table(cli, v, n, pool);
        ls_orphan_pools(pool, v, n, a.dir);
    }
    free(v);
    return code;
}

/* ------------------------------------------------------------------ build */

static bool
running_from_build_tree(void)
{
    char self[IMAGE_PATH_MAX_BYTES];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0)
        return false;
    self[n] = '\0';
    size_t b = strlen(STOCKADE_CLI_BUILD_DIR);
    return b > 0 && strncmp(self, STOCKADE_CLI_BUILD_DIR "/", b + 1) == 0;
}

static int
image_build_exec(const char *builder, const char *recipe, const char *runner, const char *out,
                 const char *work, bool force)
{
    const char *argv[] = {"/usr/bin/python3",
                          builder,
                          "--recipe",
                          recipe,
                          "--runner",
                          runner,
                          "--out",
                          out,
                          "--work",
                          work,
                          force ? "--force" : NULL,
                          NULL};
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        execv(argv[0], (char *const *) argv);
        fprintf(stderr, "stockade image build: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int image_build_file(Cli *cli, const ImageArgs *o, int argc, char **argv);

static int
image_build(Cli *cli, int argc, char **argv)
{
    _cleanup_error_ Error *err = NULL;
    ImageArgs a = {0};
    char recipe[IMAGE_PATH_MAX_BYTES], out[IMAGE_PATH_MAX_BYTES], work[IMAGE_PATH_MAX_BYTES];

    if (image_options(cli, argc, argv, &a, &err) < 0)
        return cli_usage_error(cli, "%s", err->message);
    if (cli->help)
        return cli_print_help(image_help);
    if (a.file)
        return image_build_file(cli, &a, argc, argv);
    if (optind != argc - 1 || !args_id_ok(argv[optind]) || strchr(argv[optind], '_'))
        return cli_usage_error(cli, "one image name is needed (a recipe: minimal, python)");
    const char *name = argv[optind];
    bool tree = running_from_build_tree();
    const char *base = tree ? STOCKADE_CLI_SOURCE_IMAGES : STOCKADE_CLI_LIBEXEC_DIR "/images";
    const char *runner =
        tree ? STOCKADE_CLI_BUILD_RUNNER : STOCKADE_CLI_LIBEXEC_DIR "/stockade-runner";
    snprintf(recipe, sizeof(recipe), "%s/%s", base, name);
    snprintf(out, sizeof(out), "%s/%s", a.dir, name);
    snprintf(work, sizeof(work), "%s/.build", a.dir);
    if (access(recipe, R_OK) != 0)
        return cli_usage_error(cli, "no recipe %s (known recipes are folders of %s)", recipe, base);
    if (geteuid() != 0) {
        error_set(&err, E_FORBIDDEN, 0,
                  "building an image needs root (it writes %s and uses "
                  "chroot): run it with sudo",
                  out);
        return cli_report(cli, err, false);
    }
    char builder[IMAGE_PATH_MAX_BYTES];
    snprintf(builder, sizeof(builder), "%s/build-image.py", base);
    printf("building image %s into %s (builder %s)\n", name, out, builder);
    int r = image_build_exec(builder, recipe, runner, out, work, a.force);
    if (r != 0) {
        error_set(&err, E_INTERNAL, 0, "the image builder failed (exit %d); see its output above",
                  r);
        cli_report(cli, err, false);
        return CLI_EXIT_FAIL; /* a local failure: no daemon failed (125) */
    }
    printf("image %s is ready in %s. The daemon uses it after a restart (systemctl restart "
           "stockaded), which remakes its snapshots.\n",
           name, out);
    return CLI_EXIT_OK;
}

/* ------------------------------------------------------------------ import, rm */

#define IMAGE_NAME_MAX 32
#define IMAGE_DEFAULT_EPOCH 1767225600 /* images/common.json source_date_epoch */

static bool
image_name_ok(const char *name)
{
    size_t n = strlen(name);
    return n > 0 && n <= IMAGE_NAME_MAX &&
           strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-") == n && name[0] != '-';
}

/* "a size" (units.h: 16G, 512MiB) or a plain count. */
static int
image_limit(const char *text, const char *flag, bool size, uint64_t *ret, Error **errp)
{
    Unit u = unit_of_key(size ? "x_bytes" : "x");
    if (!text)
        return 0;
    if (!unit_parse(text, u, ret) || *ret == 0)
        return error_set(errp, E_INVALID, 0, "--%s: %.32s is not a %s", flag, text,
                         size ? "size (e.g. 16G, 512MiB)" : "positive number");
    return 0;
}

static int
image_import_limits(const ImageArgs *o, OciLimits *lim, Error **errp)
{
    uint64_t entries = 0, secs = 0;
    oci_limits_default(lim);
    if (image_limit(o->max_bytes, "max-bytes", true, &lim->max_bytes, errp) < 0 ||
        image_limit(o->max_blob_bytes, "max-blob-bytes", true, &lim->max_blob_bytes, errp) < 0 ||
        image_limit(o->max_entries, "max-entries", false, &entries, errp) < 0 ||
        image_limit(o->timeout, "timeout", false, &secs, errp) < 0)
        return -1;
    if (entries)
        lim->max_entries = (uint32_t) MIN(entries, (uint64_t) UINT32_MAX);
    if (secs)
        lim->max_usec = MIN(secs, (uint64_t) 7 * 24 * 3600) * USEC_PER_SEC;
    return 0;
}

/* An image already at DIR/NAME may be replaced only with --force, and never a recipe's. */
static int
image_import_target_ok(const ImageArgs *o, Error **errp)
{
    char path[IMAGE_PATH_MAX_BYTES];
    ImageInfo info;
    snprintf(path, sizeof(path), "%s/%s", o->dir, o->name);
    if (access(path, F_OK) != 0)
        return 0;
    image_check(o->dir, o->name, false, &info);
    if (!info.imported && info.ok)
        return error_set(errp, E_CONFLICT, 0,
                         "%s is one of the project's images (built from a "
                         "recipe): choose another --name",
                         o->name);
    if (!o->force)
        return error_set(errp, E_CONFLICT, 0, "image %s exists in %s: --force replaces it", o->name,
                         o->dir);
    return 0;
}

static int
image_import(Cli *cli, int argc, char **argv)
{
    _cleanup_error_ Error *err = NULL;
    ImageArgs o = {0};
    ImportArgs a = {0};
    char packer[IMAGE_PATH_MAX_BYTES];
    const char *sde = getenv("SOURCE_DATE_EPOCH");
    /* another skopeo (tests put one that copies a layout as it is, lies included) */
    const char *skopeo = getenv("STOCKADE_SKOPEO") ?: "/usr/bin/skopeo";

    if (image_options(cli, argc, argv, &o, &err) < 0)
        return cli_usage_error(cli, "%s", err->message);
    if (cli->help)
        return cli_print_help(image_help);
    if (optind != argc - 1 || !image_import_source_ok(argv[optind]))
        return cli_usage_error(cli, "one SOURCE is needed: oci:DIR[:TAG], docker-archive:FILE or "
                                    "docker://REF");
    if (!o.name || !image_name_ok(o.name))
        return cli_usage_error(cli, "--name NAME is needed: 1-%d of a-z, 0-9 and - (not first)",
                               IMAGE_NAME_MAX);
    if (image_import_limits(&o, &a.limits, &err) < 0)
        return cli_usage_error(cli, "%s", err->message);
    snprintf(packer, sizeof(packer), "%s/pack-image.py",
             running_from_build_tree() ? STOCKADE_CLI_SOURCE_IMAGES
                                       : STOCKADE_CLI_LIBEXEC_DIR "/images");
    a = (ImportArgs){.source = argv[optind],
                     .name = o.name,
                     .image_dir = o.dir,
                     .kernel_from = o.kernel_from ? o.kernel_from : "minimal",
                     .authfile = o.authfile,
                     .skopeo = skopeo,
                     .packer = packer,
                     .epoch = sde && *sde ? strtoll(sde, NULL, 10) : IMAGE_DEFAULT_EPOCH,
                     .limits = a.limits};
    if (!image_name_ok(a.kernel_from))
        return cli_usage_error(cli, "--kernel-from names an image of %s", o.dir);
    if (geteuid() != 0) {
        error_set(&err, E_FORBIDDEN, 0,
                  "importing an image needs root (it writes %s and sets "
                  "the owners of the image's files): run it with sudo",
                  o.dir);
        return cli_report(cli, err, false);
    }
    if (access(a.skopeo, X_OK) != 0) {
        error_set(&err, E_UNAVAILABLE, 0, "%s is missing: apt-get install skopeo", a.skopeo);
        return cli_report(cli, err, false);
    }
    if (image_import_target_ok(&o, &err) < 0 || image_import_run(&a, &err) < 0) {
        cli_report(cli, err, false);
        return CLI_EXIT_FAIL; /* a local failure: no daemon failed (125) */
    }
    printf("a pool uses it with `image = %s` in a [pool NAME] section of stockaded.conf, after "
           "a restart of the daemon\n",
           o.name);
    return CLI_EXIT_OK;
}

/* build --file DOCKERFILE [CONTEXT] --name NAME */
static int
image_build_file(Cli *cli, const ImageArgs *o, int argc, char **argv)
{
    _cleanup_error_ Error *err = NULL;
    char packer[IMAGE_PATH_MAX_BYTES];
    const char *sde = getenv("SOURCE_DATE_EPOCH");
    BuildArgs b = {0};

    if (optind < argc - 1)
        return cli_usage_error(cli, "at most one CONTEXT folder after the options");
    if (!o->name || !image_name_ok(o->name))
        return cli_usage_error(cli, "--name NAME is needed: 1-%d of a-z, 0-9 and - (not first)",
                               IMAGE_NAME_MAX);
    if (image_import_limits(o, &b.limits, &err) < 0)
        return cli_usage_error(cli, "%s", err->message);
    snprintf(packer, sizeof(packer), "%s/pack-image.py",
             running_from_build_tree() ? STOCKADE_CLI_SOURCE_IMAGES
                                       : STOCKADE_CLI_LIBEXEC_DIR "/images");
    b.dockerfile = o->file;
    b.context = optind < argc ? argv[optind] : ".";
    b.name = o->name;
    b.image_dir = o->dir;
    b.kernel_from = o->kernel_from ? o->kernel_from : "minimal";
    b.packer = packer;
    b.epoch = sde && *sde ? strtoll(sde, NULL, 10) : IMAGE_DEFAULT_EPOCH;
    if (!image_name_ok(b.kernel_from))
        return cli_usage_error(cli, "--kernel-from names an image of %s", o->dir);
    if (geteuid() != 0) {
        error_set(&err, E_FORBIDDEN, 0, "building an image needs root (it writes %s and sets "
                                        "the owners of the image's files): run it with sudo",
                  o->dir);
        return cli_report(cli, err, false);
    }
    if (image_import_target_ok(o, &err) < 0 || image_build_dockerfile(&b, &err) < 0) {
        cli_report(cli, err, false);
        return CLI_EXIT_FAIL;
    }
    printf("a pool uses it with `image = %s` in a [pool NAME] section of stockaded.conf, after "
           "a restart of the daemon\n", o->name);
    return CLI_EXIT_OK;
}

static int
image_rm(Cli *cli, int argc, char **argv)
{
    _cleanup_error_ Error *err = NULL, *perr = NULL;
    _cleanup_json_ json_t *pool = NULL;
    ImageArgs o = {0};
    ImageInfo info;
    char path[IMAGE_PATH_MAX_BYTES], users[128];
    Client *c;

    if (image_options(cli, argc, argv, &o, &err) < 0)
        return cli_usage_error(cli, "%s", err->message);
    if (cli->help)
        return cli_print_help(image_help);
    if (optind != argc - 1 || !image_name_ok(argv[optind]))
        return cli_usage_error(cli, "one image name is needed");
    const char *name = argv[optind];
    snprintf(path, sizeof(path), "%s/%s", o.dir, name);
    image_check(o.dir, name, false, &info);
    if (access(path, F_OK) != 0)
        error_set(&err, E_NOT_FOUND, 0, "no image %s in %s", name, o.dir);
    else if (!info.imported)
        error_set(&err, E_CONFLICT, 0, "%s was built from a recipe, not imported: it stays", name);
    else if (!(c = cli_client(cli, &perr)) ||
             client_json(c, "GET", "/v1/pool", NULL, &pool, &perr) < 0)
        error_set(&err, E_UNAVAILABLE, 0,
                  "cannot tell whether a pool uses %s (%s): the daemon "
                  "must answer",
                  name, perr->message);
    else if (strcmp(pools_using(pool, name, users, sizeof(users)), "-") != 0)
        error_set(&err, E_CONFLICT, 0,
                  "pool %s uses image %s: change its `image =` and restart "
                  "the daemon first",
                  users, name);
    else if (rm_rf(path) < 0)
        error_set(&err, E_IO, errno, "remove %s", path);
    if (err)
        return cli_report(cli, err, false);
    printf("removed image %s from %s\n", name, o.dir);
    return CLI_EXIT_OK;
}

int
cmd_image(Cli *cli, int argc, char **argv)
{
    static const SubVerb subs[] = {
        {"ls", image_ls}, {"build", image_build}, {"import", image_import}, {"rm", image_rm}};
    return cli_dispatch(cli, argc, argv, subs, ELEMENTSOF(subs), image_help);
}
