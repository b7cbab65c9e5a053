/* stockade exec -i / -it: stdin, raw mode and window size (see exec_input.h). */
#include "exec_input.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "client.h"
#include "fdutil.h"

#define EXEC_INPUT_DEFAULT_COLS 80
#define EXEC_INPUT_DEFAULT_ROWS 24

struct ExecInput {
    Client *client;
    char stdin_path[160], resize_path[160];
    bool tty;
    int stop_pipe[2];
    pthread_t thread;
    bool started;
};

/* Raw mode state: one terminal per process. */
static struct termios saved_termios;
static volatile sig_atomic_t raw_active;
static int winch_pipe[2] = {-1, -1};

void
exec_input_term_size(uint32_t *ret_cols, uint32_t *ret_rows)
{
    struct winsize ws = {0};

    if ((ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) < 0 || ws.ws_col == 0 || ws.ws_row == 0) &&
        ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) < 0)
        ws = (struct winsize){0};
    *ret_cols =
        ws.ws_col ? MIN((uint32_t) ws.ws_col, EXEC_INPUT_SIZE_MAX) : EXEC_INPUT_DEFAULT_COLS;
    *ret_rows =
        ws.ws_row ? MIN((uint32_t) ws.ws_row, EXEC_INPUT_SIZE_MAX) : EXEC_INPUT_DEFAULT_ROWS;
}

void
exec_input_raw_end(void)
{
    if (!raw_active)
        return;
    raw_active = 0;
    (void) tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_termios); /* async-signal-safe */
}

static void
exec_input_on_fatal(int sig)
{
    exec_input_raw_end();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void
exec_input_on_winch(int sig)
{
    int saved = errno;
    (void) sig;
    if (winch_pipe[1] >= 0)
        (void) !write(winch_pipe[1], "w", 1); /* full pipe: a resize is pending anyway */
    errno = saved;
}

int
exec_input_raw_begin(Error **errp)
{
    static const int fatal[] = {SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};
    struct termios raw;

    if (!isatty(STDIN_FILENO))
        return error_set(errp, E_INVALID, 0, "-t needs a terminal on stdin (use -i alone)");
    if (tcgetattr(STDIN_FILENO, &saved_termios) < 0)
        return error_set(errp, E_INVALID, errno, "read the terminal's settings");
    raw = saved_termios;
    cfmakeraw(&raw);
    atexit(exec_input_raw_end);
    for (size_t i = 0; i < ELEMENTSOF(fatal); i++)
        signal(fatal[i], exec_input_on_fatal);
    raw_active = 1;
    if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) < 0) {
        raw_active = 0;
        return error_set(errp, E_INVALID, errno, "put the terminal in raw mode");
    }
    return 0;
}

static void
exec_input_resize(ExecInput *in)
{
    uint32_t cols, rows;
    _cleanup_error_ Error *err = NULL;

    exec_input_term_size(&cols, &rows);
    _cleanup_json_ json_t *body = json_pack("{s:i,s:i}", "cols", (int) cols, "rows", (int) rows);
    (void) client_json(in->client, "POST", in->resize_path, body, NULL, &err);
}

/* 0 go on, 1 end of input (or the exec's stdin is gone). */
static int
exec_input_forward(ExecInput *in)
{
    uint8_t buf[EXEC_INPUT_CHUNK_BYTES];
    _cleanup_error_ Error *err = NULL;
    char path[200];

    ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return 0;
    if (n <= 0) { /* end of input: the exec's stdin ends too */
        snprintf(path, sizeof(path), "%s?eof=1", in->stdin_path);
        (void) client_post_bytes(in->client, path, "", 0, NULL, &err);
        return 1;
    }
    return client_post_bytes(in->client, in->stdin_path, buf, (size_t) n, NULL, &err) < 0;
}

static void *
exec_input_main(void *userdata)
{
    ExecInput *in = userdata;
    bool input = true;

    for (;;) {
        struct pollfd pfd[3] = {{.fd = in->stop_pipe[0], .events = POLLIN},
                                {.fd = input ? STDIN_FILENO : -1, .events = POLLIN},
                                {.fd = in->tty ? winch_pipe[0] : -1, .events = POLLIN}};
        if (poll(pfd, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            return NULL;
        }
        if (pfd[0].revents)
            return NULL;
        if (pfd[2].revents) {
            char drain[64];
            (void) !read(winch_pipe[0], drain, sizeof(drain));
            exec_input_resize(in);
        }
        if (pfd[1].revents && exec_input_forward(in) != 0)
            input = false;
    }
}

static int
exec_input_winch_setup(Error **errp)
{
    struct sigaction sa = {.sa_handler = exec_input_on_winch, .sa_flags = SA_RESTART};

    if (winch_pipe[0] < 0 && pipe2(winch_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
        return error_set(errp, E_INTERNAL, errno, "pipe");
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGWINCH, &sa, NULL) < 0)
        return error_set(errp, E_INTERNAL, errno, "SIGWINCH");
    return 0;
}

int
exec_input_start(Cli *cli, const char *session, int64_t exec_id, bool tty, ExecInput **ret,
                 Error **errp)
{
    ExecInput *in = calloc(1, sizeof(*in));
    sigset_t block, old;

    if (!in)
        return error_set(errp, E_INTERNAL, ENOMEM, "stdin");
    *in = (ExecInput){.tty = tty, .stop_pipe = {-1, -1}};
    snprintf(in->stdin_path, sizeof(in->stdin_path), "/v1/sessions/%s/execs/%" PRId64 "/stdin",
             session, exec_id);
    snprintf(in->resize_path, sizeof(in->resize_path), "/v1/sessions/%s/execs/%" PRId64 "/resize",
             session, exec_id);
    if (!(in->client = cli_client_new(cli, errp)) || (tty && exec_input_winch_setup(errp) < 0))
        goto fail_free;
    if (pipe2(in->stop_pipe, O_CLOEXEC) < 0) {
        error_set(errp, E_INTERNAL, errno, "pipe");
        goto fail_free;
    }
    /* Signals stay with the main thread (Ctrl-C handling, the fatal ones above). */
    sigfillset(&block);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    int r = pthread_create(&in->thread, NULL, exec_input_main, in);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r != 0) {
        error_set(errp, E_INTERNAL, r, "thread");
        goto fail_free;
    }
    in->started = true;
    if (tty) /* a size change between the exec's start and now */
        exec_input_on_winch(SIGWINCH);
    *ret = in;
    return 0;

fail_free:
    exec_input_stop(in);
    return -1;
}

void
exec_input_stop(ExecInput *in)
{
    if (!in)
        return;
    if (in->started) {
        (void) !write(in->stop_pipe[1], "s", 1);
        pthread_join(in->thread, NULL);
    }
    safe_close(in->stop_pipe[0]);
    safe_close(in->stop_pipe[1]);
    client_free(in->client);
    free(in);
}
