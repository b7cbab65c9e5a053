/* stockaded: the Stockade host daemon. Arguments, configuration, logging set-up; nothing else
 * (the wiring is daemon.c). */
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.h"
#include "config.h"
#include "daemon.h"
#include "log.h"

#define DEFAULT_CONFIG_PATH "/etc/stockade/stockaded.conf"

static void
usage(FILE *f)
{
    fprintf(f, "Usage: stockaded [OPTIONS]\n"
               "Runs untrusted code in single-use KVM guests restored from a warm pool.\n\n"
               "  -c, --config FILE      configuration file (default " DEFAULT_CONFIG_PATH
               " if it exists)\n"
               "  -s, --state-dir DIR    state directory (snapshots, guests, database)\n"
               "  -i, --image-dir DIR    where images live, as <DIR>/<image>/\n"
               "  -a, --accel MODE       auto (prove KVM, else TCG), kvm, or tcg\n"
               "  -l, --log-level LEVEL  debug, info, warn or error\n"
               "      --check-config     parse the configuration and print the effective one\n"
               "                         (every key, its value, and where it came from:\n"
               "                         default, FILE:LINE or command line), then exit\n"
               "      --create-admin-token\n"
               "                         make an operator API token, print it once, and exit\n"
               "                         (the daemon may be running; revoke with the admin API)\n"
               "  -h, --help             this help\n"
               "  -V, --version          print the version\n\n"
               "Signals: SIGTERM/SIGINT stop cleanly (every guest destroyed); a second one exits\n"
               "at once. SIGHUP rereads [cluster] host_token_file (a credential rotation step).\n"
               "Exit status: 0 clean stop, 1 runtime failure, 2 bad usage or config.\n");
}

typedef struct {
    const char *config_path;
    const char *state_dir, *image_dir, *accel, *log_level;
    bool check_config;
    bool create_admin_token;
} Args;

static int
parse_args(int argc, char **argv, Args *a)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"state-dir", required_argument, NULL, 's'},
        {"image-dir", required_argument, NULL, 'i'},
        {"accel", required_argument, NULL, 'a'},
        {"log-level", required_argument, NULL, 'l'},
        {"check-config", no_argument, NULL, 'C'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {"create-admin-token", no_argument, NULL, 'T'},
        {NULL, 0, NULL, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "c:s:i:a:l:hV", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            a->config_path = optarg;
            break;
        case 's':
            a->state_dir = optarg;
            break;
        case 'i':
            a->image_dir = optarg;
            break;
        case 'a':
            a->accel = optarg;
            break;
        case 'l':
            a->log_level = optarg;
            break;
        case 'C':
            a->check_config = true;
            break;
        case 'T':
            a->create_admin_token = true;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        case 'V':
            printf("stockaded %s\n", STOCKADE_VERSION);
            exit(0);
        default:
            usage(stderr);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "stockaded: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    return 0;
}

static const char *
default_image_dir(void)
{
    /* Installed images first; a binary run from its build tree finds the build's images. */
    if (access(STOCKADE_INSTALL_IMAGE_DIR, R_OK) == 0)
        return STOCKADE_INSTALL_IMAGE_DIR;
    return STOCKADE_BUILD_IMAGE_DIR;
}

static bool
data_image_is_built(const char *image_dir)
{
    _cleanup_free_ char *manifest = NULL;
    if (asprintf(&manifest, "%s/" CONFIG_DATA_POOL "/manifest.json", image_dir) < 0)
        return false;
    return access(manifest, R_OK) == 0;
}

static int
apply_flags(DaemonConfig *cfg, const Args *a, Error **errp)
{
    const char *path = a->config_path;
    if (!path && access(DEFAULT_CONFIG_PATH, F_OK) == 0)
        path = DEFAULT_CONFIG_PATH;
    if (path && config_load_file(cfg, path, errp) < 0)
        return -1;
    static const struct {
        const char *flag, *key;
        size_t offset;
    } flags[] = {
        {"--state-dir", "state_dir", offsetof(Args, state_dir)},
        {"--image-dir", "image_dir", offsetof(Args, image_dir)},
        {"--log-level", "log_level", offsetof(Args, log_level)},
        {"--accel", "accel", offsetof(Args, accel)},
    };
    for (size_t i = 0; i < ELEMENTSOF(flags); i++) {
        const char *v = *(const char *const *) ((const char *) a + flags[i].offset);
        if (v && config_set_flag(cfg, "daemon", flags[i].key, v, errp) < 0)
            return error_prefix(errp, "%s", flags[i].flag);
    }
    if (data_image_is_built(cfg->image_dir))
        config_add_data_pool(cfg);
    return config_finish(cfg, errp);
}

/* Each API connection needs two descriptors and each TCP connection waiting for its head
 * one (see hostd/http/README.md); systemd starts services with a soft limit of 1024. Raise
 * the soft limit to the hard one, and say so: the HTTP layer refuses a config the limit
 * cannot hold. */
static void
raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rlim_t was = rl.rlim_cur;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
            log_info("RLIMIT_NOFILE raised from %llu to %llu", (unsigned long long) was,
                     (unsigned long long) rl.rlim_cur);
        else
            log_warn("cannot raise RLIMIT_NOFILE from %llu: %s", (unsigned long long) was,
                     strerror(errno));
    }
}

static int
print_config(const DaemonConfig *c)
{
    _cleanup_free_ char *text = config_dump(c);
    if (!text || fputs(text, stdout) == EOF || fflush(stdout) != 0) {
        fprintf(stderr, "stockaded: cannot print the configuration\n");
        return 1;
    }
    return 0;
}

/* --create-admin-token: straight into the database (SQLite serialises with a running daemon). */
static int
create_admin_token(const DaemonConfig *c)
{
    _cleanup_error_ Error *err = NULL;
    _cleanup_free_ char *db = NULL;
    _cleanup_(store_closep) Store *s = NULL;
    char token[ADMIT_TOKEN_TEXT_BYTES];
    TokenRecord t;
    _cleanup_close_ int state_fd = -1;

    if (daemon_open_state_dir(c->state_dir, &state_fd, &err) < 0) {
        fprintf(stderr, "stockaded: %s\n", err->message);
        return 1;
    }
    if (asprintf(&db, "%s/stockade.db", c->state_dir) < 0)
        return 1;
    if (store_open(db, &s, &err) < 0 ||
        api_token_issue(s, API_TENANT_DEFAULT, true, token, &t, &err) < 0) {
        fprintf(stderr, "stockaded: %s\n", err->message);
        return 1;
    }
    printf("%s\n", token);
    fprintf(stderr, "operator token %s created; this is the only time it is shown\n", t.id);
    return 0;
}

int
main(int argc, char **argv)
{
    static DaemonConfig cfg; /* large; and the pool config points into it */
    Args args = {0};
    _cleanup_error_ Error *err = NULL;
    Daemon *d = NULL;
    LogLevel level;
    LogFormat format;

    if (parse_args(argc, argv, &args) < 0)
        return 2;
    config_defaults(&cfg, default_image_dir());
    if (apply_flags(&cfg, &args, &err) < 0 || log_level_from_string(cfg.log_level, &level) < 0) {
        fprintf(stderr, "stockaded: %s\n", err ? err->message : "log_level: unknown level");
        return 2;
    }
    if (log_format_from_string(cfg.log_format, &format) < 0) {
        fprintf(stderr, "stockaded: log_format: text or json\n");
        return 2;
    }
    if (args.check_config)
        return print_config(&cfg);
    if (args.create_admin_token)
        return create_admin_token(&cfg);
    log_setup("stockaded", level);
    log_set_format(format);
    raise_fd_limit();
    if (daemon_new(&cfg, &d, &err) < 0) {
        log_error("%s", err->message);
        return err->category == E_INVALID ? 2 : 1;
    }
    int r = daemon_run(d);
    daemon_free(d);
    return r == 0 ? 0 : 1;
}
