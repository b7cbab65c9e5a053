/* See args.h. */
#include "args.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdutil.h"
#include "log.h"

int
args_uint(const char *s, uint64_t min, uint64_t max, uint64_t *ret)
{
    char *end;
    if (!s || s[0] < '0' || s[0] > '9')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *ret = v;
    return 0;
}

int
args_env(const char *assign, json_t *env, Error **errp)
{
    const char *eq = strchr(assign, '=');
    size_t n = eq ? (size_t) (eq - assign) : 0;
    char esc[80];

    log_escape(esc, sizeof(esc), assign, strlen(assign));
    if (!eq || n == 0 || n > ARGS_ENV_NAME_MAX_BYTES ||
        !((assign[0] >= 'A' && assign[0] <= 'Z') || (assign[0] >= 'a' && assign[0] <= 'z') ||
          assign[0] == '_') ||
        strspn(assign, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != n)
        return error_set(errp, E_INVALID, 0,
                         "--env wants NAME=VALUE with NAME of [A-Za-z0-9_] "
                         "(got '%s')",
                         esc);
    if (json_object_size(env) >= ARGS_ENV_MAX)
        return error_set(errp, E_INVALID, 0, "at most %d --env variables", ARGS_ENV_MAX);
    char name[ARGS_ENV_NAME_MAX_BYTES + 1];
    memcpy(name, assign, n);
    name[n] = '\0';
    json_t *v = json_string(eq + 1);
    if (!v)
        return error_set(errp, E_INVALID, 0, "--env %.64s: the value must be UTF-8", name);
    if (json_object_set_new(env, name, v) < 0)
        return error_set(errp, E_INTERNAL, ENOMEM, "env");
    return 0;
}

bool
args_id_ok(const char *id)
{
    size_t n = strlen(id);
    return n > 0 && n <= ARGS_ID_MAX_BYTES &&
           strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789_") == n;
}

bool
args_remote(const char *spec, char ret_id[ARGS_ID_MAX_BYTES + 1], const char **ret_path)
{
    const char *colon = strchr(spec, ':');
    size_t n = colon ? (size_t) (colon - spec) : 0;
    if (!colon || n == 0 || n > ARGS_ID_MAX_BYTES)
        return false;
    memcpy(ret_id, spec, n);
    ret_id[n] = '\0';
    if (!args_id_ok(ret_id))
        return false;
    *ret_path = colon + 1;
    return true;
}

int
args_cwd(const char *dir, char **ret, Error **errp)
{
    char *s = NULL;
    if (dir[0] == '\0' || strlen(dir) > 1024)
        return error_set(errp, E_INVALID, 0, "--cwd must be a directory path of 1..1024 bytes");
    if (dir[0] == '/')
        s = strdup(dir);
    else if (asprintf(&s, "%s/%s", WORKSPACE_ROOT, dir) < 0)
        s = NULL;
    if (!s)
        return error_set(errp, E_INTERNAL, ENOMEM, "cwd");
    *ret = s;
    return 0;
}

json_t *
args_argv_json(char **argv, int argc)
{
    json_t *a = json_array();
    for (int i = 0; a && i < argc; i++) {
        json_t *s = json_string(argv[i]);
        if (!s || json_array_append_new(a, s) < 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

int
args_global(Cli *cli, int key, int argc, char **argv, Error **errp)
{
    int r = cli_global_option(cli, key, optarg, argc, argv, errp);
    if (r > 0)
        return error_set(errp, E_INVALID, 0, "unexpected option");
    return r;
}

/* ------------------------------------------------------------------ run */

enum { OPT_NO_DOWNLOAD = CLI_OPT_VERB_BASE, OPT_CWD, OPT_TIMEOUT };

static int
timeout_arg(const char *s, uint64_t *ret, Error **errp)
{
    if (args_uint(s, 1, ARGS_TIMEOUT_MAX_S, ret) < 0)
        return error_set(errp, E_INVALID, 0,
                         "--timeout wants whole seconds in 1..%d (got "
                         "'%.32s')",
                         ARGS_TIMEOUT_MAX_S, s);
    return 0;
}

static int
run_option(Cli *cli, RunArgs *a, int c, int argc, char **argv, Error **errp)
{
    switch (c) {
    case 'p':
        a->pool = optarg;
        return 0;
    case 't':
        return timeout_arg(optarg, &a->timeout_s, errp);
    case 'e':
        return args_env(optarg, a->env, errp);
    case 'u':
        if (a->n_uploads == ARGS_UPLOADS_MAX)
            return error_set(errp, E_INVALID, 0, "at most %d --upload options; upload a folder",
                             ARGS_UPLOADS_MAX);
        a->uploads[a->n_uploads++] = optarg;
        return 0;
    case 'd':
        a->download = optarg;
        return 0;
    case OPT_NO_DOWNLOAD:
        a->no_download = true;
        return 0;
    case OPT_CWD:
        free(a->cwd);
        a->cwd = NULL;
        return args_cwd(optarg, &a->cwd, errp);
    default:
        return args_global(cli, c, argc, argv, errp);
    }
}

int
run_parse_args(Cli *cli, int argc, char **argv, RunArgs *ret, Error **errp)
{
    static const struct option opts[] = {
        {"pool", required_argument, NULL, 'p'},
        {"timeout", required_argument, NULL, 't'},
        {"env", required_argument, NULL, 'e'},
        {"upload", required_argument, NULL, 'u'},
        {"download", required_argument, NULL, 'd'},
        {"no-download", no_argument, NULL, OPT_NO_DOWNLOAD},
        {"cwd", required_argument, NULL, OPT_CWD},
        CLI_GLOBAL_OPTIONS,
    };
    int c;

    *ret = (RunArgs){
        .pool = RUN_DEFAULT_POOL, .timeout_s = RUN_DEFAULT_TIMEOUT_S, .env = json_object()};
    if (!ret->env)
        return error_set(errp, E_INTERNAL, ENOMEM, "args");
    cli_getopt_reset(cli, opts);
    while ((c = getopt_long(argc, argv, "+p:t:e:u:d:h", opts, NULL)) != -1)
        if (run_option(cli, ret, c, argc, argv, errp) < 0)
            return -1;
    if (cli->help)
        return 0;
    if (optind >= argc)
        return error_set(errp, E_INVALID, 0, "no command: stockade run [OPTIONS] -- CMD ARGS...");
    if (ret->download && ret->no_download)
        return error_set(errp, E_INVALID, 0, "--download and --no-download exclude each other");
    size_t pn = strlen(ret->pool);
    if (pn == 0 || pn > 32 || ret->pool[0] == '-' ||
        strspn(ret->pool, "abcdefghijklmnopqrstuvwxyz0123456789-") != pn)
        return error_set(errp, E_INVALID, 0, "--pool wants a pool name (see stockade pool)");
    ret->argv = argv + optind;
    ret->argc = argc - optind;
    return 0;
}

void
run_args_clear(RunArgs *a)
{
    json_decref(a->env);
    free(a->cwd);
    *a = (RunArgs){0};
}

/* ------------------------------------------------------------------ exec */

static int
exec_option(Cli *cli, ExecArgs *a, int c, int argc, char **argv, Error **errp)
{
    switch (c) {
    case OPT_TIMEOUT:
        return timeout_arg(optarg, &a->timeout_s, errp);
    case 'i':
        a->interactive = true;
        return 0;
    case 't':
        a->tty = true;
        return 0;
    case 'e':
        return args_env(optarg, a->env, errp);
    case OPT_CWD:
        free(a->cwd);
        a->cwd = NULL;
        return args_cwd(optarg, &a->cwd, errp);
    default:
        return args_global(cli, c, argc, argv, errp);
    }
}

int
exec_parse_args(Cli *cli, int argc, char **argv, ExecArgs *ret, Error **errp)
{
    static const struct option opts[] = {
        {"timeout", required_argument, NULL, OPT_TIMEOUT}, /* -t is --tty, as docker exec's */
        {"interactive", no_argument, NULL, 'i'},
        {"tty", no_argument, NULL, 't'},
        {"env", required_argument, NULL, 'e'},
        {"cwd", required_argument, NULL, OPT_CWD},
        CLI_GLOBAL_OPTIONS,
    };
    int c;

    *ret = (ExecArgs){.env = json_object()};
    if (!ret->env)
        return error_set(errp, E_INTERNAL, ENOMEM, "args");
    cli_getopt_reset(cli, opts);
    while ((c = getopt_long(argc, argv, "+ite:h", opts, NULL)) != -1)
        if (exec_option(cli, ret, c, argc, argv, errp) < 0)
            return -1;
    if (cli->help)
        return 0;
    if (optind >= argc || !args_id_ok(argv[optind]))
        return error_set(errp, E_INVALID, 0,
                         "the first argument must be a session id (see stockade sessions ls)");
    ret->session = argv[optind++];
    if (optind < argc && strcmp(argv[optind], "--") == 0)
        optind++;
    if (optind >= argc)
        return error_set(errp, E_INVALID, 0,
                         "no command: stockade exec [OPTIONS] SESSION -- CMD ARGS...");
    ret->argv = argv + optind;
    ret->argc = argc - optind;
    return 0;
}

void
exec_args_clear(ExecArgs *a)
{
    json_decref(a->env);
    free(a->cwd);
    *a = (ExecArgs){0};
}

/* ------------------------------------------------------------------ did you mean */

size_t
args_edit_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    size_t rows[3][ARGS_SUGGEST_MAX_BYTES + 1];
    size_t *two = rows[0], *one = rows[1], *cur = rows[2]; /* rows i-2, i-1, i of the table */

    if (n > ARGS_SUGGEST_MAX_BYTES || m > ARGS_SUGGEST_MAX_BYTES)
        return SIZE_MAX;
    for (size_t j = 0; j <= m; j++)
        one[j] = j;
    for (size_t i = 1; i <= n; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t d = MIN(MIN(one[j] + 1, cur[j - 1] + 1), one[j - 1] + (a[i - 1] != b[j - 1]));
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d = MIN(d, two[j - 2] + 1); /* two neighbours swapped */
            cur[j] = d;
        }
        size_t *t = two;
        two = one;
        one = cur;
        cur = t;
    }
    return one[m];
}

const char *
args_suggest(const char *word, const char *const *candidates, size_t n)
{
    size_t best = SIZE_MAX, limit = strlen(word) >= 5 ? 2 : 1;
    const char *pick = NULL;
    bool tie = false;
    for (size_t i = 0; i < n; i++) {
        size_t d = args_edit_distance(word, candidates[i]);
        if (d == 0 || d > limit)
            continue;
        if (d < best) {
            best = d;
            pick = candidates[i];
            tie = false;
        } else if (d == best && strcmp(pick, candidates[i]) != 0) {
            tie = true;
        }
    }
    return tie ? NULL : pick;
}

/* ------------------------------------------------------------------ token files */

/* The first line of fd into ret (cap bytes with its NUL); E_INVALID when it is empty, too
 * long or holds a NUL. */
static int
token_first_line(int fd, const char *path, char *ret, size_t cap, Error **errp)
{
    size_t len = 0;
    bool eol = false;
    while (len < cap && !eol) {
        ssize_t k = read(fd, ret + len, cap - len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return error_set(errp, E_INVALID, errno, "token file %.200s", path);
        if (k == 0)
            break;
        char *nl = memchr(ret + len, '\n', (size_t) k);
        len = nl ? (size_t) (nl - ret) : len + (size_t) k;
        eol = nl != NULL;
    }
    if (!eol && len >= cap)
        return error_set(errp, E_INVALID, 0, "token file %.200s: its first line is over %zu bytes",
                         path, cap - 1);
    if (len > 0 && ret[len - 1] == '\r')
        len--;
    explicit_bzero(ret + len, cap - len); /* the line's end, and whatever came after it */
    if (len == 0)
        return error_set(errp, E_INVALID, 0,
                         "token file %.200s is empty: its first line must be the token", path);
    if (strlen(ret) != len)
        return error_set(errp, E_INVALID, 0, "token file %.200s holds a NUL byte", path);
    return 0;
}

int
args_read_token_file(const char *path, char *ret, size_t cap, Error **errp)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    struct stat st;
    if (fd < 0)
        return error_set(errp, E_INVALID, errno, "token file %.200s", path);
    if (fstat(fd, &st) < 0)
        return error_set(errp, E_INVALID, errno, "token file %.200s", path);
    if (!S_ISREG(st.st_mode))
        return error_set(errp, E_INVALID, 0, "token file %.200s is not a regular file", path);
    if (st.st_mode & (S_IRWXG | S_IRWXO))
        return error_set(errp, E_INVALID, 0,
                         "token file %.200s is open to others (mode %04o): it holds a secret; "
                         "make it yours only: chmod 600 %.200s",
                         path, (unsigned) (st.st_mode & 07777), path);
    int r = token_first_line(fd, path, ret, cap, errp);
    if (r < 0)
        explicit_bzero(ret, cap);
    return r;
}
