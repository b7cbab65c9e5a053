/* Unit tests of hostd/base's log line forms (text, journal priorities, JSON with every byte of
 * a message escaped and the line bounded) and of the sd_notify client (notify.h) against a
 * real unix datagram socket, a path and an abstract name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"
#include "notify.h"

static const struct timespec when = {.tv_sec = 1796292000, .tv_nsec = 123456789};

static void
test_log_text_and_journal(void **state)
{
    char line[LOG_LINE_MAX_BYTES + 1];
    (void) state;
    log_format_line(line, sizeof(line), LOG_STYLE_TEXT, LOG_LEVEL_INFO, &when, "stockaded", 42,
                    "hi");
    assert_string_equal(line, "2026-12-03T10:00:00.123Z stockaded[42] info: hi\n");
    static const struct {
        LogLevel level;
        const char *want;
    } j[] = {{LOG_LEVEL_ERROR, "<3>error: boom\n"},
             {LOG_LEVEL_WARN, "<4>warn: boom\n"},
             {LOG_LEVEL_INFO, "<6>info: boom\n"},
             {LOG_LEVEL_DEBUG, "<7>debug: boom\n"}};
    for (size_t i = 0; i < sizeof(j) / sizeof(j[0]); i++) {
        size_t n = log_format_line(line, sizeof(line), LOG_STYLE_JOURNAL, j[i].level, &when,
                                   "stockaded", 42, "boom");
        assert_string_equal(line, j[i].want); /* no time of ours: journald stamps it */
        assert_int_equal(n, strlen(j[i].want));
    }
    /* a record over the bound is cut and stays one line */
    char big[3000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    size_t n = log_format_line(line, 100, LOG_STYLE_TEXT, LOG_LEVEL_INFO, &when, "s", 1, big);
    assert_int_equal(n, 99);
    assert_string_equal(line + n - 4, "...\n");
}

static void
test_log_json_escapes_every_byte(void **state)
{
    char line[LOG_LINE_MAX_BYTES + 1];
    (void) state;
    /* control bytes, quote and backslash, DEL, valid UTF-8 (é, €, U+1F600), then bytes that are
     * not UTF-8: a lone continuation, a cut sequence, overlong '/' in two and three bytes, a
     * surrogate, 0xff */
    const char *msg = "a\nb\x01\"\\\x7f"
                      "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"
                      "\x80|\xc3(|\xc0\xaf|\xe0\x80\xaf|\xed\xa0\x80|\xff";
    size_t n = log_format_line(line, sizeof(line), LOG_STYLE_JSON, LOG_LEVEL_WARN, &when,
                               "stockaded", 7, msg);
    assert_string_equal(line, "{\"time\":\"2026-12-03T10:00:00.123Z\",\"level\":\"warn\","
                              "\"ident\":\"stockaded\",\"pid\":7,\"message\":\"a\\u000ab\\u0001"
                              "\\\"\\\\\\u007f\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"
                              "\\\\x80|\\\\xc3(|\\\\xc0\\\\xaf|\\\\xe0\\\\x80\\\\xaf|"
                              "\\\\xed\\\\xa0\\\\x80|\\\\xff\"}\n");
    assert_int_equal(n, strlen(line));
}

static void
test_log_json_bounded(void **state)
{
    char line[LOG_LINE_MAX_BYTES + 1];
    char msg[2048];
    (void) state;
    memset(msg, 0x01, sizeof(msg) - 1); /* each byte becomes 6: the escaped text is 12 KiB */
    msg[sizeof(msg) - 1] = '\0';
    size_t n = log_format_line(line, sizeof(line), LOG_STYLE_JSON, LOG_LEVEL_ERROR, &when,
                               "stockaded", 7, msg);
    assert_true(n <= LOG_LINE_MAX_BYTES);
    assert_int_equal(n, strlen(line));
    assert_memory_equal(line, "{\"time\":", 8);
    assert_string_equal(line + n - 6, "...\"}\n"); /* cut between escapes, still one object */
    for (size_t i = 0; i + 1 < n; i++)
        assert_true((unsigned char) line[i] >= 0x20);
    assert_null(strstr(line, "\\u00\""));
}

static void
test_log_journal_detection(void **state)
{
    struct stat st;
    char v[64];
    (void) state;
    assert_int_equal(fstat(STDERR_FILENO, &st), 0);
    snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long) st.st_dev,
             (unsigned long long) st.st_ino);
    setenv("JOURNAL_STREAM", v, 1);
    assert_true(log_stderr_is_journal());
    snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long) st.st_dev,
             (unsigned long long) st.st_ino + 1);
    setenv("JOURNAL_STREAM", v, 1); /* another stream: stderr was redirected */
    assert_false(log_stderr_is_journal());
    setenv("JOURNAL_STREAM", "12:34x", 1);
    assert_false(log_stderr_is_journal());
    unsetenv("JOURNAL_STREAM");
    assert_false(log_stderr_is_journal());
}

/* A bound datagram socket (the service manager's end) at name ('@' = abstract). */
static int
manager_socket(const char *name)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    size_t len = strlen(name);
    assert_true(fd >= 0);
    memcpy(a.sun_path, name, len);
    if (name[0] == '@')
        a.sun_path[0] = '\0';
    else
        len++;
    assert_int_equal(bind(fd, (struct sockaddr *) &a, offsetof(struct sockaddr_un, sun_path) + len),
                     0);
    return fd;
}

static void
expect_datagram(int fd, const char *want)
{
    char buf[NOTIFY_MAX_BYTES + 16];
    ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
    assert_true(n >= 0);
    buf[n] = '\0';
    assert_string_equal(buf, want);
}

static void
notify_round_trip(const char *name)
{
    Error *err = NULL;
    Notify *n = NULL;
    int fd = manager_socket(name);
    char pid[24], big[NOTIFY_MAX_BYTES + 2];

    snprintf(pid, sizeof(pid), "%ld", (long) getpid());
    setenv("NOTIFY_SOCKET", name, 1);
    setenv("WATCHDOG_USEC", "2000000", 1);
    setenv("WATCHDOG_PID", pid, 1);
    assert_int_equal(notify_open_env(&n, &err), 0);
    assert_non_null(n);
    assert_null(getenv("NOTIFY_SOCKET")); /* children never speak for us */
    assert_null(getenv("WATCHDOG_USEC"));
    assert_int_equal(notify_watchdog_usec(n), 2000000);
    assert_int_equal(notify_send(n, "READY=1", &err), 0);
    expect_datagram(fd, "READY=1");
    assert_int_equal(notify_status(n, "pool a: 1/2\nREADY=1\x80", &err), 0);
    expect_datagram(fd, "STATUS=pool a: 1/2?READY=1?"); /* one assignment, whatever the text */
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    assert_int_equal(notify_status(n, big, &err), 0); /* cut to the bound */
    char buf[NOTIFY_MAX_BYTES + 16];
    assert_int_equal(recv(fd, buf, sizeof(buf), MSG_DONTWAIT), NOTIFY_MAX_BYTES);
    assert_int_equal(notify_send(n, big, &err), -1);
    assert_int_equal(err->category, E_TOO_LARGE);
    error_free(err);
    err = NULL;
    close(fd);
    if (name[0] == '/')
        unlink(name);
    /* the listener is gone: an error to log, never a block or a crash */
    assert_int_equal(notify_send(n, "WATCHDOG=1", &err), -1);
    assert_int_equal(err->category, E_UNAVAILABLE);
    error_free(err);
    notify_free(n);
}

static void
test_notify(void **state)
{
    char path[64], abstract[64];
    Error *err = NULL;
    Notify *n = (Notify *) 1;
    (void) state;
    snprintf(path, sizeof(path), "/tmp/stockade-notify-test.%ld", (long) getpid());
    snprintf(abstract, sizeof(abstract), "@stockade-notify-test.%ld", (long) getpid());
    notify_round_trip(path);
    notify_round_trip(abstract);

    unsetenv("NOTIFY_SOCKET");
    assert_int_equal(notify_open_env(&n, &err), 0);
    assert_null(n); /* no manager: every call a no-op */
    assert_int_equal(notify_send(NULL, "READY=1", &err), 0);
    static const char *const bad[] = {"relative/path", "@", "/"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        setenv("NOTIFY_SOCKET", bad[i], 1);
        assert_int_equal(notify_open_env(&n, &err), -1);
        assert_int_equal(err->category, E_INVALID);
        error_free(err);
        err = NULL;
    }
    char longname[200];
    memset(longname, 'a', sizeof(longname) - 1);
    longname[0] = '/';
    longname[sizeof(longname) - 1] = '\0';
    setenv("NOTIFY_SOCKET", longname, 1);
    assert_int_equal(notify_open_env(&n, &err), -1);
    error_free(err);
    err = NULL;
    /* a watchdog meant for another process (a child that inherited it) is not ours */
    setenv("NOTIFY_SOCKET", abstract, 1);
    setenv("WATCHDOG_USEC", "2000000", 1);
    setenv("WATCHDOG_PID", "1", 1);
    assert_int_equal(notify_open_env(&n, &err), 0);
    assert_int_equal(notify_watchdog_usec(n), 0);
    notify_free(n);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log_text_and_journal),
        cmocka_unit_test(test_log_json_escapes_every_byte),
        cmocka_unit_test(test_log_json_bounded),
        cmocka_unit_test(test_log_journal_detection),
        cmocka_unit_test(test_notify),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
