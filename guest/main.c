/* stockade-runner: arguments and process setup only.
 *
 *   stockade-runner                    as PID 1 in a guest: boot (init.h), then serve the port
 *   stockade-runner --serve-fd FD --workspace DIR [--cgroup-root DIR] [--proxy-port N]
 *                   [--debug]          serve the protocol on FD as an ordinary process (tests):
 *                                      Hello does not set the clock, touch the entropy pool,
 *                                      set the hostname or mount anything (DIR is already the
 *                                      workspace); exec trees use DIR's cgroup v2 children with
 *                                      --cgroup-root, else process groups (tree.h); the egress
 *                                      proxy listens on 127.0.0.1:N (default PROXY_PORT).
 * Exit status (not PID 1): 0 after Shutdown or when the peer closed FD, 1 on failure, 2 on
 * bad usage. PID 1 never exits: it powers the guest off on Shutdown or on any failure. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "fdutil.h"
#include "guest_limits.h"
#include "imagecfg.h"
#include "init.h"
#include "log.h"
#include "serve.h"

#define RUNNER_IDENT "stockade-runner"
#define RUNNER_MMAP_THRESHOLD_BYTES (128 * 1024) /* fixed: bulk buffers go back to the kernel */
#define RUNNER_TRIM_THRESHOLD_BYTES (256 * 1024)

typedef struct Args {
    int serve_fd;
    const char *workspace;
    const char *cgroup_root;
    uint16_t proxy_port;
    const char *image_cfg; /* host mode: an image defaults file to serve with (tests) */
    bool debug;
} Args;

static void
usage(FILE *out)
{
    fprintf(out,
            "usage: %s --serve-fd FD --workspace DIR [--cgroup-root DIR] [--proxy-port N] "
            "[--image-config FILE] [--debug]\n"
            "       (as PID 1 it takes no arguments and boots from the kernel command "
            "line)\n",
            RUNNER_IDENT);
}

static int
parse_args(int argc, char **argv, Args *ret)
{
    static const struct option opts[] = {
        {"serve-fd", required_argument, NULL, 'f'},
        {"workspace", required_argument, NULL, 'w'},
        {"cgroup-root", required_argument, NULL, 'c'},
        {"proxy-port", required_argument, NULL, 'p'},
        {"debug", no_argument, NULL, 'd'},
        {"image-config", required_argument, NULL, 'i'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {0},
    };
    Args a = {.serve_fd = -1, .proxy_port = PROXY_PORT};
    long port;
    char *end;
    int c;

    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            errno = 0;
            a.serve_fd = (int) strtol(optarg, &end, 10);
            if (errno || *end || a.serve_fd < 0)
                return -1;
            break;
        case 'w':
            a.workspace = optarg;
            break;
        case 'c':
            a.cgroup_root = optarg;
            break;
        case 'p':
            errno = 0;
            port = strtol(optarg, &end, 10);
            if (errno || *end || port < 1 || port > TUNNEL_PORT_MAX)
                return -1;
            a.proxy_port = (uint16_t) port;
            break;
        case 'd':
            a.debug = true;
            break;
        case 'i':
            a.image_cfg = optarg;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        case 'V':
            printf("%s %s (protocol %d)\n", RUNNER_IDENT, STOCKADE_VERSION, PROTOCOL_VERSION);
            exit(0);
        default:
            return -1;
        }
    }
    if (optind != argc || a.serve_fd < 0 || !a.workspace)
        return -1;
    *ret = a;
    return 0;
}

/* Signals and memory, before any child exists. SIGCHLD is read from a signalfd (serve.c);
 * SIGPIPE would kill the runner when the host or a child closes a pipe. */
static void
process_setup(void)
{
    sigset_t chld;

    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    signal(SIGPIPE, SIG_IGN);
    mallopt(M_MMAP_THRESHOLD, RUNNER_MMAP_THRESHOLD_BYTES);
    mallopt(M_TRIM_THRESHOLD, RUNNER_TRIM_THRESHOLD_BYTES);
    /* Up to 4 pipes and 2 cgroup fds per exec, plus a deep REMOVE: lift the soft fd limit to
     * the hard one (the children get their own defaults in spawn.c). */
    struct rlimit nofile;
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
        nofile.rlim_cur = nofile.rlim_max;
        (void) setrlimit(RLIMIT_NOFILE, &nofile);
    }
}

_Noreturn static void
main_pid1_fatal(Error *err)
{
    log_error("fatal: %s; powering off", err ? err->message : "unknown error");
    init_power_off();
}

/* The image's exec defaults (imagecfg.h), if its root has them. A file that does not parse
 * is logged and ignored: the runner still serves, with the defaults of the project's images. */
static void
main_load_image_cfg(const char *path, ImageCfg *ret)
{
    _cleanup_free_ char *text = NULL;
    size_t len, line = 0;

    *ret = (ImageCfg){0};
    if (read_file_bounded(path, IMAGECFG_MAX_BYTES, &text, &len) < 0) {
        if (errno != ENOENT)
            log_error("image defaults %s: %m; execs get none", path);
        return;
    }
    if (imagecfg_parse(text, len, ret, &line) < 0)
        log_error("image defaults %s: line %zu is not valid (%m); execs get none", path, line);
    else
        log_debug("image defaults: %zu variables, cwd %s, user %s", ret->env.n,
                  ret->cwd[0] ? ret->cwd : "(workspace)", ret->has_user ? "set" : "(session's)");
}

_Noreturn static void
main_pid1(void)
{
    BootConfig boot;
    InitResult init;
    ServeEnd end;
    _cleanup_error_ Error *err = NULL;

    process_setup();
    log_setup(RUNNER_IDENT, LOG_LEVEL_ERROR);
    if (init_early(&boot, &err) < 0)
        main_pid1_fatal(err);
    log_setup(RUNNER_IDENT, boot.debug ? LOG_LEVEL_DEBUG : LOG_LEVEL_ERROR);
    log_debug("boot: root=%s port=%s", boot.root[0] ? boot.root : "(initramfs)", boot.port);
    if (init_boot(&boot, &init, &err) < 0)
        main_pid1_fatal(err);
    static ImageCfg image;
    main_load_image_cfg(IMAGECFG_PATH, &image);
    ServeConfig cfg = {.pid1 = true,
                       .port_fd = init.port_fd,
                       .workspace = INIT_WORKSPACE,
                       .cgroup_root = init.cgroups ? INIT_CGROUP_ROOT : NULL,
                       .proxy_port = PROXY_PORT,
                       .image = &image};
    log_debug("serving %s", boot.port);
    if (serve_run(&cfg, &end, &err) < 0)
        main_pid1_fatal(err);
    log_info(end == SERVE_SHUTDOWN ? "shutdown: powering off" : "port gone: powering off");
    init_power_off();
}

/* fds 0-2 must be taken, or a pipe could land on them and be dup2'ed over in a child. */
static int
ensure_std_fds(void)
{
    for (int i = 0; i < 3; i++)
        if (fcntl(i, F_GETFD) < 0 && open("/dev/null", O_RDWR) != i)
            return -1;
    return 0;
}

int
main(int argc, char **argv)
{
    Args args;
    ServeEnd end;
    _cleanup_error_ Error *err = NULL;

    if (getpid() == 1)
        main_pid1();
    if (parse_args(argc, argv, &args) < 0) {
        usage(stderr);
        return 2;
    }
    log_setup(RUNNER_IDENT, args.debug ? LOG_LEVEL_DEBUG : LOG_LEVEL_WARN);
    process_setup();
    if (ensure_std_fds() < 0 || fd_set_cloexec(args.serve_fd, true) < 0 ||
        prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
        log_error("setup: %m");
        return 1;
    }
    static ImageCfg image;
    if (args.image_cfg)
        main_load_image_cfg(args.image_cfg, &image);
    ServeConfig cfg = {.pid1 = false,
                       .port_fd = args.serve_fd,
                       .workspace = args.workspace,
                       .cgroup_root = args.cgroup_root,
                       .proxy_port = args.proxy_port,
                       .image = &image};
    if (serve_run(&cfg, &end, &err) < 0) {
        log_error("%s", err->message);
        return 1;
    }
    log_info(end == SERVE_SHUTDOWN ? "shutdown" : "peer closed the channel");
    return 0;
}
