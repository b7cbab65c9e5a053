/* Unit tests of the host channel (hostd/channel) against a scripted fake guest: a thread on
 * the other end of a real unix socket, playing the runner's side byte by byte. */
#include <pthread.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "channel.h"
#include "fdutil.h"
#include "testlib.h"
#include "timeutil.h"

typedef enum {
    SCRIPT_OK,           /* junk, stale echo, echo, Ready, Output, then EOF */
    SCRIPT_WRONG_NONCE,  /* echo, Ready with another nonce */
    SCRIPT_GARBAGE,      /* echo, Ready, then a frame that is not a GuestMsg */
    SCRIPT_SILENT,       /* reads the marker, never answers */
    SCRIPT_FLOOD,        /* 2 MiB of junk instead of an echo */
    SCRIPT_OLD_PROTOCOL, /* echo, Ready of the protocol version before ours */
} Script;

typedef struct {
    Script script;
    int listen_fd;
    char path[108];
    pthread_t thread;
    /* results seen by the host side */
    Loop *loop;
    Channel *ch;
    int ready, messages, broken;
    ErrorCategory broken_category;
    char broken_why[256];
    char last_output[32];
} Fixture;

static void
send_guest(int fd, const GuestMsg *m)
{
    uint8_t buf[1024];
    size_t n;
    assert_int_equal(msg_encode_guest(m, buf, sizeof(buf), &n), 0);
    assert_int_equal(write_all(fd, buf, n), 0);
}

static void
send_ready_of(int fd, uint64_t nonce, uint32_t protocol_version)
{
    GuestMsg m = STOCKADE__RUNNER__GUEST_MSG__INIT;
    Stockade__Runner__Ready r = STOCKADE__RUNNER__READY__INIT;
    r.nonce = nonce;
    r.protocol_version = protocol_version;
    r.runner_version = "test";
    m.body_case = STOCKADE__RUNNER__GUEST_MSG__BODY_READY;
    m.ready = &r;
    send_guest(fd, &m);
}

static void
send_ready(int fd, uint64_t nonce)
{
    send_ready_of(fd, nonce, PROTOCOL_VERSION);
}

static void
send_output(int fd, const char *text)
{
    GuestMsg m = STOCKADE__RUNNER__GUEST_MSG__INIT;
    Stockade__Runner__Output o = STOCKADE__RUNNER__OUTPUT__INIT;
    o.exec_id = 1;
    o.stream = STOCKADE__RUNNER__OUTPUT__STREAM__STDOUT;
    o.data.data = (uint8_t *) text;
    o.data.len = strlen(text);
    m.body_case = STOCKADE__RUNNER__GUEST_MSG__BODY_OUTPUT;
    m.output = &o;
    send_guest(fd, &m);
}

static const char earlier[] = "\x7f\xff junk from an earlier life";

static void *
fake_guest(void *arg)
{
    Fixture *f = arg;
    uint8_t marker[FRAME_SYNC_BYTES], stale[FRAME_SYNC_BYTES];
    size_t got;
    int fd = accept(f->listen_fd, NULL, NULL);

    assert_true(fd >= 0);
    assert_int_equal(read_full(fd, marker, sizeof(marker), &got), 0);
    assert_int_equal(got, sizeof(marker));
    uint64_t nonce = frame_sync_nonce(marker);
    switch (f->script) {
    case SCRIPT_OK:
        assert_int_equal(write_all(fd, earlier, sizeof(earlier) - 1), 0);
        frame_put_sync(stale, nonce ^ 1);
        assert_int_equal(write_all(fd, stale, sizeof(stale)), 0);
        assert_int_equal(write_all(fd, marker, sizeof(marker)), 0);
        send_ready(fd, nonce);
        send_output(fd, "hello");
        break;
    case SCRIPT_WRONG_NONCE:
        assert_int_equal(write_all(fd, marker, sizeof(marker)), 0);
        send_ready(fd, nonce + 1);
        break;
    case SCRIPT_OLD_PROTOCOL:
        assert_int_equal(write_all(fd, marker, sizeof(marker)), 0);
        send_ready_of(fd, nonce, PROTOCOL_VERSION - 1);
        break;
    case SCRIPT_GARBAGE:
        assert_int_equal(write_all(fd, marker, sizeof(marker)), 0);
        send_ready(fd, nonce);
        assert_int_equal(write_all(fd, "\0\0\0\3\xff\xff\xff", 7), 0);
        break;
    case SCRIPT_SILENT:
        usleep(400000);
        break;
    case SCRIPT_FLOOD: {
        static uint8_t junk[64 * 1024];
        memset(junk, 'J', sizeof(junk));
        for (int i = 0; i < 32; i++)
            if (write_all(fd, junk, sizeof(junk)) < 0)
                break; /* the host hung up: expected */
        break;
    }
    }
    usleep(100000);
    close(fd);
    return NULL;
}

static void
on_ready(Channel *c, const Stockade__Runner__Ready *r, void *ud)
{
    Fixture *f = ud;
    (void) c;
    assert_string_equal(r->runner_version, "test");
    f->ready++;
}

static void
on_message(Channel *c, const GuestMsg *m, void *ud)
{
    Fixture *f = ud;
    (void) c;
    f->messages++;
    if (m->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_OUTPUT)
        snprintf(f->last_output, sizeof(f->last_output), "%.*s", (int) m->output->data.len,
                 m->output->data.data);
}

static void
on_broken(Channel *c, const Error *why, void *ud)
{
    Fixture *f = ud;
    f->broken++;
    f->broken_category = why->category;
    snprintf(f->broken_why, sizeof(f->broken_why), "%.200s", why->message);
    channel_free(c); /* freeing from inside the callback must be safe */
    f->ch = NULL;
    loop_quit(f->loop, 0);
}

static const ChannelOps ops = {on_ready, on_message, on_broken};

static void
run_script(Fixture *f, Script s, uint64_t sync_timeout_usec)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    char *dir = test_mkdtemp("stockade-channel");

    memset(f, 0, sizeof(*f));
    f->script = s;
    assert_non_null(dir);
    snprintf(f->path, sizeof(f->path), "%s/g.sock", dir);
    strcpy(sa.sun_path, f->path);
    f->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_int_equal(bind(f->listen_fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
    assert_int_equal(listen(f->listen_fd, 1), 0);
    assert_int_equal(pthread_create(&f->thread, NULL, fake_guest, f), 0);
    assert_int_equal(loop_new(&f->loop, NULL), 0);
    assert_int_equal(
        channel_open(f->loop, f->path, now_usec() + sync_timeout_usec, &ops, f, &f->ch, NULL), 0);
    assert_int_equal(loop_run(f->loop), 0); /* every script ends with the channel broken */
    pthread_join(f->thread, NULL);
    loop_free(f->loop);
    close(f->listen_fd);
    test_rm_rf(dir);
    free(dir);
}

static void
test_sync_skips_stale_bytes(void **state)
{
    (void) state;
    Fixture f;
    run_script(&f, SCRIPT_OK, 5 * USEC_PER_SEC);
    assert_int_equal(f.ready, 1);
    assert_int_equal(f.messages, 1);
    assert_string_equal(f.last_output, "hello");
    assert_int_equal(f.broken, 1); /* then EOF */
    assert_int_equal(f.broken_category, E_GUEST);
}

static void
test_wrong_nonce_breaks(void **state)
{
    (void) state;
    Fixture f;
    run_script(&f, SCRIPT_WRONG_NONCE, 5 * USEC_PER_SEC);
    assert_int_equal(f.ready, 0);
    assert_int_equal(f.broken, 1);
    assert_int_equal(f.broken_category, E_GUEST);
}

/* An adopting daemon refuses a runner it does not speak (issue 30): the channel breaks before
 * Ready reaches its user, so the guest is salvaged rather than guessed at. */
static void
test_old_protocol_breaks(void **state)
{
    (void) state;
    Fixture f;
    run_script(&f, SCRIPT_OLD_PROTOCOL, 5 * USEC_PER_SEC);
    assert_int_equal(f.ready, 0);
    assert_int_equal(f.broken, 1);
    assert_int_equal(f.broken_category, E_GUEST);
    assert_non_null(strstr(f.broken_why, "protocol version"));
}

static void
test_garbage_after_ready_breaks(void **state)
{
    (void) state;
    Fixture f;
    run_script(&f, SCRIPT_GARBAGE, 5 * USEC_PER_SEC);
    assert_int_equal(f.ready, 1);
    assert_int_equal(f.messages, 0);
    assert_int_equal(f.broken, 1);
    assert_int_equal(f.broken_category, E_GUEST);
}

static void
test_silent_guest_times_out(void **state)
{
    (void) state;
    Fixture f;
    run_script(&f, SCRIPT_SILENT, 150 * USEC_PER_MSEC);
    assert_int_equal(f.ready, 0);
    assert_int_equal(f.broken, 1);
    assert_int_equal(f.broken_category, E_TIMEOUT);
}

static void
test_flood_before_sync_breaks(void **state)
{
    (void) state;
    Fixture f;
    run_script(&f, SCRIPT_FLOOD, 5 * USEC_PER_SEC);
    assert_int_equal(f.ready, 0);
    assert_int_equal(f.broken, 1);
    assert_int_equal(f.broken_category, E_GUEST);
}

int
main(void)
{
    signal(SIGPIPE, SIG_IGN); /* the flooding fake guest writes on after the host hung up */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sync_skips_stale_bytes),
        cmocka_unit_test(test_wrong_nonce_breaks),
        cmocka_unit_test(test_old_protocol_breaks),
        cmocka_unit_test(test_garbage_after_ready_breaks),
        cmocka_unit_test(test_silent_guest_times_out),
        cmocka_unit_test(test_flood_before_sync_breaks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
