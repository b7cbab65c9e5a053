/* Runner host-mode integration tests: execs on a pseudo-terminal (Exec.pty, Resize). A real
 * shell on the runner's terminal: it answers typed commands, its terminal is /dev/pts/N of
 * the size asked, a resize changes it and reaches the shell as SIGWINCH, ^C typed as input
 * interrupts the foreground job through the line discipline, and the exit code is the
 * shell's. Fixture and helpers: runner_host.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner_host.h"
#include "runner_limits.h"
#include "timeutil.h"

#define ERR(x) STOCKADE__RUNNER__ERROR__CODE__##x

typedef struct PtyOut {
    char *buf;
    size_t len;
} PtyOut;

/* Reads the exec's Output until buf holds needle after *from (or fails); *from moves past
 * it, so each answer is looked for only in what came after the question. Every Output of a
 * pty exec is STDOUT. */
static void
pty_expect(uint32_t id, PtyOut *o, size_t *from, const char *needle)
{
    uint64_t deadline = now_usec() + (uint64_t) RH_TIMEOUT_MS * 1000;
    GuestMsg *m;

    for (;;) {
        o->buf[o->len] = '\0';
        const char *hit = strstr(o->buf + *from, needle);
        if (hit) {
            *from = (size_t) (hit - o->buf) + strlen(needle);
            return;
        }
        uint64_t now = now_usec();
        if (now >= deadline ||
            runner_client_wait_for(fx.c, STOCKADE__RUNNER__GUEST_MSG__BODY_OUTPUT, id,
                                   (int) ((deadline - now) / 1000), &m) < 0)
            fail_msg("pty: no \"%s\" in output: %s", needle, o->buf + *from);
        assert_int_equal(m->output->stream, STOCKADE__RUNNER__OUTPUT__STREAM__STDOUT);
        o->buf = realloc(o->buf, o->len + m->output->data.len + 1);
        assert_non_null(o->buf);
        memcpy(o->buf + o->len, m->output->data.data, m->output->data.len);
        o->len += m->output->data.len;
        msg_free_guest(m);
    }
}

static void
pty_type(uint32_t id, const char *s)
{
    rh_stdin(id, s, strlen(s), false);
}

static void
test_pty_shell(void **state)
{
    (void) state;
    const char *sh[] = {"sh", NULL};
    PtyOut o = {.buf = calloc(1, 1)};
    size_t at = 0;
    char cmd[128], needle[64];
    ExecResult r;

    rh_drop_pending();
    uint32_t id = rh_exec_pty(sh, 80, 24);
    /* Answers come after what the terminal echoes, and never appear in the echo itself. */
    pty_type(id, "echo $((6*7))\n");
    pty_expect(id, &o, &at, "42");
    /* /dev/tty opens only for a process with a controlling terminal (else ENXIO). */
    pty_type(id, "tty; : >/dev/tty && echo T$TERM-c''tty\n");
    pty_expect(id, &o, &at, "/dev/pts/");
    pty_expect(id, &o, &at, "Txterm-ctty");
    pty_type(id, "stty size\n");
    pty_expect(id, &o, &at, "24 80");
    /* SIGWINCH reaches the foreground job (a shell waits in read(2) without running traps). */
    pty_type(id, "sh -c 'trap \"echo WIN\"\"CHED; exit\" WINCH; echo RE\"\"ADY; "
                 "while :; do sleep 1; done'\n");
    pty_expect(id, &o, &at, "READY");
    rh_expect_ack(rh_resize(id, 100, 30));
    pty_expect(id, &o, &at, "WINCHED");
    pty_type(id, "stty size\n");
    pty_expect(id, &o, &at, "30 100");
    const char *secs = rh_sleep_secs(0);
    snprintf(cmd, sizeof(cmd), "sleep %s\n", secs);
    snprintf(needle, sizeof(needle), "sleep %s", secs);
    pty_type(id, cmd);
    for (int i = 0; i < 500 && rh_count_procs(needle) == 0; i++)
        usleep(10 * 1000);
    assert_int_equal(rh_count_procs(needle), 1);
    pty_type(id, "\x03"); /* ^C: SIGINT to the foreground group, by the line discipline */
    assert_true(rh_wait_procs_gone(needle, 10000));
    pty_type(id, "echo af''ter\n");
    pty_expect(id, &o, &at, "after");
    pty_type(id, "exit 3\n");
    rh_collect(id, RH_TIMEOUT_MS, &r);
    assert_int_equal(r.exit_code, 3);
    assert_int_equal(r.err_len, 0);
    rh_result_free(&r);
    free(o.buf);
}

/* Resize is for pty execs only; sizes outside 1..PTY_*_MAX are refused as a whole. */
static void
test_pty_resize_refused(void **state)
{
    (void) state;
    const char *cat[] = {"cat", NULL};
    ExecResult r;

    uint32_t id = rh_exec(cat, NULL, NULL, true);
    rh_expect_error(rh_resize(id, 80, 24), ERR(NOT_FOUND));
    rh_expect_error(rh_resize(id + 1000, 80, 24), ERR(NOT_FOUND));
    rh_expect_error(rh_resize(id, 0, 24), ERR(BAD_MESSAGE));
    rh_expect_error(rh_resize(id, 80, PTY_ROWS_MAX + 1), ERR(BAD_MESSAGE));
    rh_expect_error(rh_resize(id, PTY_COLS_MAX + 1, 24), ERR(BAD_MESSAGE));
    rh_stdin(id, "", 0, true);
    rh_collect(id, RH_TIMEOUT_MS, &r);
    assert_int_equal(r.exit_code, 0);
    rh_result_free(&r);
}

/* A program that exits at once: its output comes whole, then the exit (no EIO loss). */
static void
test_pty_output_then_exit(void **state)
{
    (void) state;
    const char *argv[] = {"sh", "-c",
                          "test -t 0 && test -t 1 && test -t 2 && echo all-ttys; "
                          "exit 7",
                          NULL};
    ExecResult r;

    uint32_t id = rh_exec_pty(argv, PTY_COLS_MAX, PTY_ROWS_MAX);
    rh_collect(id, RH_TIMEOUT_MS, &r);
    assert_string_equal(r.out, "all-ttys\r\n");
    assert_int_equal(r.exit_code, 7);
    rh_result_free(&r);
}

const struct CMUnitTest rh_pty_tests[] = {
    cmocka_unit_test(test_pty_shell),
    cmocka_unit_test(test_pty_resize_refused),
    cmocka_unit_test(test_pty_output_then_exit),
};
const size_t rh_pty_tests_count = ELEMENTSOF_RH(rh_pty_tests);
