/* stockade doctor: runs the checks of doctor.c and prints each as OK / WARN / FAIL with what
 * to do. Exit 0 when nothing FAILed, else 1. */
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "doctor.h"
#include "images.h"
#include "output.h"

static const char doctor_help[] =
    "Usage: stockade doctor [--state-dir DIR] [--image-dir DIR] [--libvirt-socket PATH]\n"
    "                       [--qemu PATH] [--verify] [--json]\n"
    "Checks this machine and the daemon, each line OK, WARN or FAIL with what to do:\n"
    "/dev/kvm, the accelerator the daemon chose and why, libvirtd and virtlogd, the daemon's\n"
    "API, the images and their manifests, the snapshots, free disk space of the state\n"
    "directory (WARN under 5 GiB, FAIL under 1 GiB), the QEMU binary and, in a cluster, its\n"
    "database, hosts lost (taken over by another) and heartbeats older than the cluster's\n"
    "lease ([cluster] lease_s).\n\n"
    "  --state-dir DIR        the daemon's state directory (default: the --socket's folder\n"
    "                         when it ends in /api.sock, else " CLI_DEFAULT_STATE_DIR ")\n"
    "  --image-dir DIR        images to check (default " STOCKADE_CLI_INSTALL_IMAGE_DIR "\n"
    "                         when it exists, else the build's)\n"
    "  --libvirt-socket PATH  libvirtd's socket (default " DOCTOR_DEFAULT_LIBVIRT_SOCKET ", env\n"
    "                         STOCKADE_LIBVIRT_SOCKET); virtlogd's is virtlogd-sock beside it\n"
    "  --qemu PATH            the QEMU binary (default " DOCTOR_DEFAULT_QEMU ")\n"
    "  --verify               also check every image file's sha256 (slower)\n"
    "Exit status: 0 no FAIL, 1 at least one FAIL, 126 bad usage.\n";

enum { OPT_STATE = CLI_OPT_VERB_BASE, OPT_IMAGES, OPT_LIBVIRT, OPT_QEMU, OPT_VERIFY };

static int
doctor_options(Cli *cli, int argc, char **argv, DoctorEnv *env, Error **errp)
{
    static const struct option opts[] = {
        {"state-dir", required_argument, NULL, OPT_STATE},
        {"image-dir", required_argument, NULL, OPT_IMAGES},
        {"libvirt-socket", required_argument, NULL, OPT_LIBVIRT},
        {"qemu", required_argument, NULL, OPT_QEMU},
        {"verify", no_argument, NULL, OPT_VERIFY},
        CLI_GLOBAL_OPTIONS,
    };
    int c;
    cli_getopt_reset(cli, opts);
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case OPT_STATE:
            env->state_dir = optarg;
            break;
        case OPT_IMAGES:
            env->image_dir = optarg;
            break;
        case OPT_LIBVIRT:
            env->libvirt_socket = optarg;
            break;
        case OPT_QEMU:
            env->qemu = optarg;
            break;
        case OPT_VERIFY:
            env->verify_images = true;
            break;
        default:
            if (args_global(cli, c, argc, argv, errp) < 0)
                return -1;
        }
    }
    if (optind < argc)
        return error_set(errp, E_INVALID, 0, "unexpected operand '%.64s'", argv[optind]);
    return 0;
}

/* The state directory: the flag, else the socket's folder when it is <state>/api.sock. */
static char *
default_state_dir(const Cli *cli)
{
    const char *s = cli->socket_path;
    size_t n = s ? strlen(s) : 0;
    if (!cli->url && n > 9 && strcmp(s + n - 9, "/api.sock") == 0)
        return strndup(s, n - 9);
    return strdup(CLI_DEFAULT_STATE_DIR);
}

static void
doctor_print(Cli *cli, const DoctorResult *r)
{
    static const Color colors[] = {COLOR_GREEN, COLOR_YELLOW, COLOR_RED};
    _cleanup_free_ char *msg = term_escape(r->message, strlen(r->message), DOCTOR_TEXT_MAX_BYTES);
    printf("%s%-4s%s  %-10s %s\n", cli->color_out ? color_code(colors[r->level]) : "",
           doctor_level_name(r->level), cli->color_out ? COLOR_RESET : "", r->check,
           msg ? msg : "?");
    if (r->fix[0])
        printf("%-16s fix: %s\n", "", r->fix);
}

static json_t *
doctor_json(const DoctorResult *v, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++)
        json_array_append_new(arr, json_pack("{s:s,s:s,s:s,s:s}", "check", v[i].check, "level",
                                             doctor_level_name(v[i].level), "message", v[i].message,
                                             "fix", v[i].fix));
    return arr;
}

int
cmd_doctor(Cli *cli, int argc, char **argv)
{
    static const DoctorCheckFn checks[] = {
        doctor_check_kvm,    doctor_check_libvirtd,  doctor_check_virtlogd,
        doctor_check_qemu,   doctor_check_daemon,    doctor_check_accel,
        doctor_check_images, doctor_check_snapshots, doctor_check_disk,
        doctor_check_cluster,
    };
    _cleanup_error_ Error *err = NULL;
    _cleanup_free_ char *state = NULL;
    const char *lv = getenv("STOCKADE_LIBVIRT_SOCKET");
    DoctorEnv env = {.image_dir = images_default_dir(),
                     .libvirt_socket = lv && lv[0] ? lv : DOCTOR_DEFAULT_LIBVIRT_SOCKET,
                     .qemu = DOCTOR_DEFAULT_QEMU};
    DoctorResult res[ELEMENTSOF(checks)];
    size_t fails = 0, warns = 0;

    cli->verb = "doctor";
    if (doctor_options(cli, argc, argv, &env, &err) < 0)
        return cli_usage_error(cli, "%s", err->message);
    if (cli->help)
        return cli_print_help(doctor_help);
    if (!env.state_dir && !(env.state_dir = state = default_state_dir(cli)))
        return CLI_EXIT_FAIL;
    env.client = cli_client(cli, &err);
    for (size_t i = 0; i < ELEMENTSOF(checks); i++) {
        res[i] = (DoctorResult){0};
        checks[i](&env, &res[i]);
        fails += res[i].level == DOCTOR_FAIL;
        warns += res[i].level == DOCTOR_WARN;
        if (!cli->json)
            doctor_print(cli, &res[i]);
    }
    json_decref(env.health);
    json_decref(env.pool);
    if (cli->json) {
        _cleanup_json_ json_t *o = doctor_json(res, ELEMENTSOF(checks));
        cli_print_json(o);
    } else {
        printf("%zu FAIL, %zu WARN\n", fails, warns);
    }
    return fails ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
