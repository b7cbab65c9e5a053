/* Issue 2's real-guest test: boot an image through libvirt (the daemon's own domain XML and
 * libvirt wrapper, no pool), with a workspace disk and the virtio-serial channel, and drive
 * the runner over the raw channel: sync, Hello, compute 6*7, put a file and get it back,
 * kill a tree that double-forks and see every process gone, send a malformed frame and see
 * the runner answer the next valid request. Usage: test_guest minimal|python */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "diskfile.h"
#include "domxml.h"
#include "image.h"
#include "runner_client.h"

static void cleanup(void);
#define TEST_CLEANUP() cleanup()
#include "testlib.h"
#include "timeutil.h"
#include "virt.h"

#define BOOT_TIMEOUT_MS (180 * 1000)
#define CALL_TIMEOUT_MS (60 * 1000)

static Virt *virt;
static char name[64], dir[512];

static void
cleanup(void)
{
    if (virt && name[0])
        (void) virt_destroy(virt, name, NULL);
    if (dir[0])
        test_rm_rf(dir);
}

static int
connect_channel(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path))
        return -1;
    memcpy(sa.sun_path, path, strlen(path) + 1);
    for (int i = 0; i < 200; i++) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *) &sa, sizeof(sa)) == 0)
            return fd;
        close(fd);
        usleep(50000);
    }
    return -1;
}

static void
boot(const char *image, char *sock, size_t sock_cap)
{
    Error *err = NULL;
    Image *img = NULL;
    char img_dir[1024], ws[600], tpl[600], console[600], *xml = NULL;
    uint32_t r;

    if (geteuid() != 0)
        test_skip("needs root (libvirt qemu:///system)");
    snprintf(img_dir, sizeof(img_dir), "%s/%s", STOCKADE_TEST_IMAGE_DIR, image);
    if (image_load(img_dir, &img, &err) < 0)
        test_skip("image %s: %s", image, err->message);
    if (virt_open("qemu:///system", &virt, &err) < 0)
        test_skip("libvirtd: %s", err->message);
    char *d = test_mkdtemp("stockade-guest");
    snprintf(dir, sizeof(dir), "%s", d);
    free(d);
    chmod(dir, 0711); /* QEMU (libvirt-qemu) must reach the disk */
    (void) !getrandom(&r, sizeof(r), 0);
    snprintf(name, sizeof(name), "stkguest%06x-%s", r & 0xffffff, image);
    snprintf(ws, sizeof(ws), "%s/workspace.raw", dir);
    snprintf(tpl, sizeof(tpl), "%s/template.raw", dir);
    snprintf(sock, sock_cap, "%s/channel.sock", dir);
    snprintf(console, sizeof(console), "%s/console.log", dir);
    TEST_CHECK(diskfile_ensure_template(tpl, 64, 1000, 1000, &err) == 0 &&
                   diskfile_reset_in_place(ws, tpl, &err) == 0,
               "workspace: %s", err->message);
    char uuid[37];
    snprintf(uuid, sizeof(uuid), "7d1958f8-0000-4000-8000-0000%08x", r); /* its own */
    DomainSpec spec = {.name = name,
                       .uuid = uuid,
                       .accel = ACCEL_TCG,
                       .vcpus = 1,
                       .memory_mib = 384,
                       .kernel_path = img->kernel_path,
                       .initrd_path = img->initrd_path,
                       .cmdline = img->cmdline,
                       .root_disk_path = img->root_path,
                       .workspace_disk_path = ws,
                       .channel_socket_path = sock,
                       .console_log_path = console,
                       .tb_cache_mib = 64};
    TEST_CHECK(domxml_build(&spec, &xml, &err) == 0, "domxml: %s", err->message);
    TEST_CHECK(virt_create(virt, xml, &err) == 0, "boot: %s", err->message);
    free(xml);
    image_free(img);
}

static GuestMsg *
call(RunnerClient *c, HostMsg *m)
{
    GuestMsg *reply = NULL;
    TEST_CHECK(runner_client_call(c, m, CALL_TIMEOUT_MS, &reply) == 0, "call: %s",
               runner_client_error(c));
    return reply;
}

/* Runs argv, returns stdout (static) and the exit code. */
static const char *
run(RunnerClient *c, uint32_t exec_id, const char *const *argv, int *ret_code)
{
    static char out[8192];
    size_t n = 0, argc = 0;
    Stockade__Runner__Exec e = STOCKADE__RUNNER__EXEC__INIT;
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;

    while (argv[argc])
        argc++;
    e.exec_id = exec_id;
    e.argv = (char **) argv;
    e.n_argv = argc;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_EXEC;
    m.exec = &e;
    GuestMsg *r = call(c, &m);
    TEST_CHECK(r->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_EXEC_STARTED,
               "exec %s not started", argv[0]);
    msg_free_guest(r);
    for (;;) {
        GuestMsg *g = NULL;
        TEST_CHECK(runner_client_next(c, CALL_TIMEOUT_MS, &g) == 0, "exec output: %s",
                   runner_client_error(c));
        if (g->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_OUTPUT &&
            g->output->exec_id == exec_id &&
            g->output->stream == STOCKADE__RUNNER__OUTPUT__STREAM__STDOUT) {
            size_t k = MIN(g->output->data.len, sizeof(out) - 1 - n);
            memcpy(out + n, g->output->data.data, k);
            n += k;
        }
        bool done = g->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_EXEC_EXIT &&
                    g->exec_exit->exec_id == exec_id;
        if (done)
            *ret_code = g->exec_exit->exit_code;
        msg_free_guest(g);
        if (done)
            break;
    }
    out[n] = '\0';
    return out;
}

static void
hello(RunnerClient *c)
{
    Stockade__Runner__Hello h = STOCKADE__RUNNER__HELLO__INIT;
    Stockade__Runner__SessionConfig cfg = STOCKADE__RUNNER__SESSION_CONFIG__INIT;
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    uint8_t entropy[64];

    (void) !getrandom(entropy, sizeof(entropy), 0);
    cfg.session_id = "guest-test";
    cfg.uid = cfg.gid = 1000;
    cfg.workspace_device = "/dev/vdb";
    h.wall_time_ns = wall_usec() * 1000;
    h.entropy.data = entropy;
    h.entropy.len = sizeof(entropy);
    h.config = &cfg;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_HELLO;
    m.hello = &h;
    GuestMsg *r = call(c, &m);
    TEST_CHECK(r->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_ACK, "hello not acked");
    msg_free_guest(r);
}

static void
file_roundtrip(RunnerClient *c)
{
    static uint8_t data[700 * 1024]; /* three chunks */
    Stockade__Runner__FilePut p = STOCKADE__RUNNER__FILE_PUT__INIT;
    Stockade__Runner__FileGet g = STOCKADE__RUNNER__FILE_GET__INIT;
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    size_t off = 0, got = 0;

    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t) (i * 131 + (i >> 9));
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_FILE_PUT;
    m.file_put = &p;
    p.path = "blob.bin";
    while (off < sizeof(data)) {
        size_t n = MIN(sizeof(data) - off, (size_t) FILE_CHUNK_MAX_BYTES);
        p.offset = off;
        p.truncate = off == 0;
        p.data.data = data + off;
        p.data.len = n;
        m.req_id = 0;
        GuestMsg *r = call(c, &m);
        TEST_CHECK(r->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_ACK, "put not acked");
        msg_free_guest(r);
        off += n;
    }
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_FILE_GET;
    m.file_get = &g;
    g.path = "blob.bin";
    g.max_bytes = FILE_CHUNK_MAX_BYTES;
    for (bool eof = false; !eof;) {
        g.offset = got;
        m.req_id = 0;
        GuestMsg *r = call(c, &m);
        TEST_CHECK(r->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_FILE_DATA, "get failed");
        TEST_CHECK(got + r->file_data->data.len <= sizeof(data) &&
                       memcmp(data + got, r->file_data->data.data, r->file_data->data.len) == 0,
                   "content differs at %zu", got);
        got += r->file_data->data.len;
        eof = r->file_data->eof;
        msg_free_guest(r);
    }
    TEST_CHECK(got == sizeof(data), "got %zu of %zu bytes back", got, sizeof(data));
}

static void
kill_tree(RunnerClient *c)
{
    Stockade__Runner__Exec e = STOCKADE__RUNNER__EXEC__INIT;
    Stockade__Runner__Signal sig = STOCKADE__RUNNER__SIGNAL__INIT;
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    const char *argv[] = {"sh", "-c", "sleep 1000 & (setsid sleep 1001 &); sleep 1002", NULL};
    int code;

    e.exec_id = 10;
    e.argv = (char **) argv;
    e.n_argv = 3;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_EXEC;
    m.exec = &e;
    msg_free_guest(call(c, &m));
    const char *ps[] = {"sh", "-c", "sleep 1; ps -o comm,args | grep -c '[s]leep 100'", NULL};
    const char *before = run(c, 11, ps, &code);
    TEST_CHECK(atoi(before) == 3, "expected 3 sleeps before the kill, saw: %s", before);
    sig.exec_id = 10;
    sig.signo = 9;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_SIGNAL;
    m.signal = &sig;
    m.req_id = 0;
    msg_free_guest(call(c, &m));
    GuestMsg *x = NULL;
    TEST_CHECK(runner_client_wait_for(c, STOCKADE__RUNNER__GUEST_MSG__BODY_EXEC_EXIT, 10,
                                      CALL_TIMEOUT_MS, &x) == 0,
               "no exit after kill");
    TEST_CHECK(x->exec_exit->signal == 9, "exit signal %d", x->exec_exit->signal);
    msg_free_guest(x);
    const char *after = run(c, 12, ps, &code);
    TEST_CHECK(atoi(after) == 0, "processes survived the kill: %s", after);
}

static void
malformed_then_ping(RunnerClient *c)
{
    /* a frame whose payload is not a HostMsg, then a valid Ping */
    const uint8_t junk[] = {0, 0, 0, 5, 0xff, 0xff, 0xff, 0xff, 0xff};
    Stockade__Runner__Ping ping = STOCKADE__RUNNER__PING__INIT;
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    GuestMsg *g = NULL;

    TEST_CHECK(runner_client_send_raw(c, junk, sizeof(junk), CALL_TIMEOUT_MS) == 0, "send junk");
    TEST_CHECK(runner_client_wait_for(c, STOCKADE__RUNNER__GUEST_MSG__BODY_ERROR, 0,
                                      CALL_TIMEOUT_MS, &g) == 0,
               "no Error for the malformed frame");
    TEST_CHECK(g->error->code == STOCKADE__RUNNER__ERROR__CODE__BAD_MESSAGE, "error code %d",
               g->error->code);
    msg_free_guest(g);
    ping.nonce = 77;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_PING;
    m.ping = &ping;
    g = call(c, &m);
    TEST_CHECK(g->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_PONG && g->pong->nonce == 77,
               "no Pong after the malformed frame");
    msg_free_guest(g);
}

int
main(int argc, char **argv)
{
    char sock[600];
    GuestMsg *ready = NULL;
    int code;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != 2 || (strcmp(argv[1], "minimal") != 0 && strcmp(argv[1], "python") != 0)) {
        fprintf(stderr, "usage: %s minimal|python\n", argv[0]);
        return 2;
    }
    uint64_t t0 = now_usec();
    boot(argv[1], sock, sizeof(sock));
    int fd = connect_channel(sock);
    TEST_CHECK(fd >= 0, "cannot connect to %s", sock);
    RunnerClient *c = runner_client_new(fd);
    TEST_CHECK(runner_client_sync(c, 0x5eed1234abcdull, BOOT_TIMEOUT_MS, &ready) == 0,
               "no Ready: %s", runner_client_error(c));
    printf("%s: booted to Ready in %.2f s (runner %s)\n", argv[1], (double) (now_usec() - t0) / 1e6,
           ready->ready->runner_version);
    msg_free_guest(ready);
    hello(c);
    bool py = strcmp(argv[1], "python") == 0;
    const char *calc_py[] = {"python3", "-c", "print(6*7)", NULL};
    const char *calc_sh[] = {"sh", "-c", "echo $((6*7))", NULL};
    const char *out = run(c, 1, py ? calc_py : calc_sh, &code);
    TEST_CHECK(code == 0 && strcmp(out, "42\n") == 0, "6*7 gave '%s' (exit %d)", out, code);
    /* favordynmods: an exec's move into its cgroup waits for no RCU grace period (init.c) */
    const char *mounts[] = {"sh", "-c", "grep ' cgroup2 ' /proc/mounts", NULL};
    out = run(c, 2, mounts, &code);
    TEST_CHECK(code == 0 && strstr(out, "favordynmods"), "cgroup2 mount: '%s'", out);
    file_roundtrip(c);
    kill_tree(c);
    malformed_then_ping(c);
    runner_client_free(c);
    cleanup();
    printf("%s: 42, file round trip, tree kill, malformed frame: ok\n", argv[1]);
    return 0;
}
