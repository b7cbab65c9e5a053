/* Runner host-mode integration tests: FilePut/FileGet round trips, confinement against a
 * hostile workspace (symlinks, FIFOs, "..", absolute paths), FsOp, and the live mirror.
 * Fixture and helpers: runner_host.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runner_host.h"

#define ERR(x) STOCKADE__RUNNER__ERROR__CODE__##x
#define FSOP(x) STOCKADE__RUNNER__FS_OP__KIND__##x
#define RH_BIG_FILE_BYTES (700u * 1024u + 123u)
#define RH_GET_CHUNK_BYTES (200u * 1024u)

static GuestMsg *
rh_put(const char *path, uint64_t offset, const uint8_t *data, size_t len, bool truncate,
       uint32_t mode)
{
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Stockade__Runner__FilePut p = STOCKADE__RUNNER__FILE_PUT__INIT;

    p.path = (char *) path;
    p.offset = offset;
    p.data = (ProtobufCBinaryData){len, (uint8_t *) data};
    p.truncate = truncate;
    p.mode = mode;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_FILE_PUT;
    m.file_put = &p;
    return rh_call(&m);
}

static GuestMsg *
rh_get(const char *path, uint64_t offset, uint32_t max_bytes)
{
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Stockade__Runner__FileGet g = STOCKADE__RUNNER__FILE_GET__INIT;

    g.path = (char *) path;
    g.offset = offset;
    g.max_bytes = max_bytes;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_FILE_GET;
    m.file_get = &g;
    return rh_call(&m);
}

static GuestMsg *
rh_fsop(int kind, const char *path, const char *path2)
{
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Stockade__Runner__FsOp op = STOCKADE__RUNNER__FS_OP__INIT;

    op.kind = kind;
    op.path = (char *) path;
    op.path2 = (char *) (path2 ? path2 : "");
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_FS_OP;
    m.fs_op = &op;
    return rh_call(&m);
}

static char *
rh_ws_path(const char *rel)
{
    char *p;
    assert_true(asprintf(&p, "%s/%s", fx.ws, rel) > 0);
    return p;
}

static void
test_file_roundtrip(void **state)
{
    (void) state;
    uint8_t *data = malloc(RH_BIG_FILE_BYTES), *back = calloc(1, RH_BIG_FILE_BYTES);
    uint32_t x = 2463534242u;
    struct stat st;

    for (size_t i = 0; i < RH_BIG_FILE_BYTES; i++) /* xorshift: incompressible, reproducible */
        x ^= x << 13, x ^= x >> 17, x ^= x << 5, data[i] = (uint8_t) x;
    for (size_t off = 0; off < RH_BIG_FILE_BYTES; off += FILE_CHUNK_MAX_BYTES) {
        size_t n = RH_BIG_FILE_BYTES - off < FILE_CHUNK_MAX_BYTES ? RH_BIG_FILE_BYTES - off
                                                                  : FILE_CHUNK_MAX_BYTES;
        rh_expect_ack(rh_put("big.bin", off, data + off, n, off == 0, 0640));
    }
    size_t got = 0;
    for (bool eof = false; !eof;) {
        GuestMsg *r = rh_get("big.bin", got, RH_GET_CHUNK_BYTES);
        assert_int_equal(r->body_case, STOCKADE__RUNNER__GUEST_MSG__BODY_FILE_DATA);
        assert_int_equal(r->file_data->offset, got);
        assert_int_equal(r->file_data->size, RH_BIG_FILE_BYTES);
        assert_true(got + r->file_data->data.len <= RH_BIG_FILE_BYTES);
        memcpy(back + got, r->file_data->data.data, r->file_data->data.len);
        got += r->file_data->data.len;
        eof = r->file_data->eof;
        msg_free_guest(r);
    }
    assert_int_equal(got, RH_BIG_FILE_BYTES);
    assert_memory_equal(data, back, RH_BIG_FILE_BYTES);
    char *path = rh_ws_path("big.bin");
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_uid, RH_UID);
    assert_int_equal(st.st_gid, RH_GID);
    assert_int_equal(st.st_mode & 0777, 0640);
    rh_expect_error(rh_get("big.bin", RH_BIG_FILE_BYTES + 1, 16), ERR(TOO_LARGE));
    rh_expect_error(rh_get("missing.bin", 0, 16), ERR(NOT_FOUND));
    free(path);
    free(data);
    free(back);
}

static void
rh_expect_fs_result(GuestMsg *r)
{
    if (r->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_ERROR)
        fail_msg("expected FsResult, got Error %d: %s", r->error->code, r->error->message);
    assert_int_equal(r->body_case, STOCKADE__RUNNER__GUEST_MSG__BODY_FS_RESULT);
    msg_free_guest(r);
}

static void
rh_assert_file_is(const char *path, const char *content)
{
    char buf[256] = {0};
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_true(read(fd, buf, sizeof(buf) - 1) >= 0);
    close(fd);
    assert_string_equal(buf, content);
}

static void
test_file_confinement(void **state)
{
    (void) state;
    char outside_dir[] = "/tmp/stockade-rh-outside.XXXXXX";
    char *secret, *link_dir = rh_ws_path("escape"), *link_file = rh_ws_path("secret-link");
    char *fifo = rh_ws_path("fifo");
    const uint8_t evil[] = "evil";

    /* A directory and a file outside the workspace, and links to them planted inside. */
    assert_non_null(mkdtemp(outside_dir));
    assert_true(asprintf(&secret, "%s/secret", outside_dir) > 0);
    int fd = open(secret, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0 && write(fd, "secret", 6) == 6);
    close(fd);
    assert_int_equal(symlink(outside_dir, link_dir), 0);
    assert_int_equal(symlink(secret, link_file), 0);
    assert_int_equal(mkfifo(fifo, 0666), 0);

    rh_expect_error(rh_get("escape/secret", 0, 16), ERR(INVALID_PATH));
    rh_expect_error(rh_get("secret-link", 0, 16), ERR(INVALID_PATH));
    rh_expect_error(rh_put("escape/new", 0, evil, 4, true, 0), ERR(INVALID_PATH));
    rh_expect_error(rh_put("secret-link", 0, evil, 4, true, 0), ERR(INVALID_PATH));
    rh_expect_error(rh_fsop(FSOP(LIST), "escape", NULL), ERR(INVALID_PATH));
    rh_expect_error(rh_fsop(FSOP(MKDIR), "escape/sub", NULL), ERR(INVALID_PATH));
    rh_expect_error(rh_fsop(FSOP(MOVE), "escape/secret", "stolen"), ERR(INVALID_PATH));
    rh_expect_error(rh_get("fifo", 0, 16), ERR(INVALID_PATH)); /* and it did not block */
    rh_expect_error(rh_put("fifo", 0, evil, 4, false, 0), ERR(INVALID_PATH));
    /* proto/ refuses these before the runner looks at the filesystem */
    rh_expect_error(rh_get("../etc/passwd", 0, 16), ERR(BAD_MESSAGE));
    rh_expect_error(rh_get("/etc/passwd", 0, 16), ERR(BAD_MESSAGE));
    rh_expect_error(rh_get("a/./b", 0, 16), ERR(BAD_MESSAGE));

    GuestMsg *r = rh_fsop(FSOP(STAT), "secret-link", NULL); /* a link is described, not followed */
    assert_int_equal(r->body_case, STOCKADE__RUNNER__GUEST_MSG__BODY_FS_RESULT);
    assert_int_equal(r->fs_result->entries[0]->type, STOCKADE__RUNNER__FS_ENTRY__TYPE__SYMLINK);
    assert_string_equal(r->fs_result->entries[0]->symlink_target, secret);
    msg_free_guest(r);
    rh_expect_fs_result(rh_fsop(FSOP(REMOVE), "escape", NULL)); /* the link, not its target */
    rh_expect_fs_result(rh_fsop(FSOP(REMOVE), "secret-link", NULL));
    rh_expect_fs_result(rh_fsop(FSOP(REMOVE), "fifo", NULL));
    rh_assert_file_is(secret, "secret"); /* untouched, and nothing was created next to it */
    assert_int_equal(access(link_dir, F_OK), -1);
    char *created;
    assert_true(asprintf(&created, "%s/new", outside_dir) > 0);
    assert_int_equal(access(created, F_OK), -1);
    unlink(secret);
    rmdir(outside_dir);
    free(created);
    free(secret);
    free(link_dir);
    free(link_file);
    free(fifo);
}

/* More entries than LIST_MAX_ENTRIES: the reply stays a legal frame and says truncated. */
static void
rh_list_truncated(void)
{
    ExecResult x;

    rh_sh("mkdir many && cd many && i=0; while [ $i -lt 4200 ]; do : > f$i; i=$((i+1)); done", &x);
    assert_int_equal(x.exit_code, 0);
    rh_result_free(&x);
    GuestMsg *r = rh_fsop(FSOP(LIST), "many", NULL);
    assert_int_equal(r->body_case, STOCKADE__RUNNER__GUEST_MSG__BODY_FS_RESULT);
    assert_true(r->fs_result->truncated);
    assert_int_equal(r->fs_result->n_entries, LIST_MAX_ENTRIES);
    msg_free_guest(r);
    rh_expect_fs_result(rh_fsop(FSOP(REMOVE), "many", NULL));
    rh_drop_pending(); /* thousands of mirror records */
}

static void
test_fsops(void **state)
{
    (void) state;
    struct stat st;
    GuestMsg *r;

    rh_expect_fs_result(rh_fsop(FSOP(MKDIR), "t/a/b", NULL));
    rh_expect_fs_result(rh_fsop(FSOP(MKDIR), "t/a/b", NULL)); /* existing is fine */
    char *b = rh_ws_path("t/a/b");
    assert_int_equal(stat(b, &st), 0);
    assert_int_equal(st.st_uid, RH_UID);
    rh_expect_ack(rh_put("t/a/f.txt", 0, (const uint8_t *) "12345", 5, true, 0));
    rh_expect_error(rh_fsop(FSOP(MKDIR), "t/a/f.txt/x", NULL), ERR(EXISTS));

    r = rh_fsop(FSOP(LIST), "t/a", NULL);
    assert_int_equal(r->body_case, STOCKADE__RUNNER__GUEST_MSG__BODY_FS_RESULT);
    assert_int_equal(r->fs_result->n_entries, 2); /* sorted: b, f.txt */
    assert_string_equal(r->fs_result->entries[0]->name, "b");
    assert_int_equal(r->fs_result->entries[0]->type, STOCKADE__RUNNER__FS_ENTRY__TYPE__DIR);
    assert_string_equal(r->fs_result->entries[1]->name, "f.txt");
    assert_int_equal(r->fs_result->entries[1]->size, 5);
    assert_int_equal(r->fs_result->entries[1]->mode, 0644);
    msg_free_guest(r);

    r = rh_fsop(FSOP(STAT), "", NULL); /* the workspace itself */
    assert_int_equal(r->fs_result->entries[0]->type, STOCKADE__RUNNER__FS_ENTRY__TYPE__DIR);
    msg_free_guest(r);

    rh_expect_fs_result(rh_fsop(FSOP(MOVE), "t/a/f.txt", "t/g.txt"));
    rh_expect_error(rh_get("t/a/f.txt", 0, 16), ERR(NOT_FOUND));
    r = rh_get("t/g.txt", 0, 16);
    assert_int_equal(r->file_data->data.len, 5);
    assert_true(r->file_data->eof);
    msg_free_guest(r);
    rh_expect_fs_result(rh_fsop(FSOP(REMOVE), "t", NULL));
    assert_int_equal(access(b, F_OK), -1);
    rh_list_truncated();
    rh_expect_error(rh_fsop(FSOP(STAT), "t", NULL), ERR(NOT_FOUND));
    free(b);
}

typedef struct MirrorSeen {
    bool hello, big_over_budget, small, removed, small2, dir_gone, moved_file;
} MirrorSeen;

static void
rh_mirror_note(const Stockade__Runner__FileChanged *c, MirrorSeen *s)
{
    if (strcmp(c->path, "m/d/f.txt") == 0 && c->removed)
        s->removed = true;
    else if (strcmp(c->path, "m/d/f.txt") == 0 && c->last && c->offset == 0 && c->size == 5 &&
             c->data.len == 5 && memcmp(c->data.data, "hello", 5) == 0)
        s->hello = true;
    else if (strcmp(c->path, "m/big.bin") == 0 && c->over_budget && c->size == 200000)
        s->big_over_budget = true;
    else if (strcmp(c->path, "m/small") == 0 && !c->removed && c->data.len == 1)
        s->small = true;
    else if (strcmp(c->path, "m/small2") == 0 && c->last && c->data.len == 1)
        s->small2 = true;
    else if (strcmp(c->path, "m/x") == 0 && c->removed) /* a directory moved away */
        s->dir_gone = true;
    else if (strcmp(c->path, "m/w/y/z") == 0 && c->last && c->data.len == 1)
        s->moved_file = true; /* ...and its files announced at the new place */
}

static void
rh_mirror_wait(MirrorSeen *s, bool (*done)(const MirrorSeen *))
{
    GuestMsg *m;

    while (!done(s)) {
        if (runner_client_wait_for(fx.c, STOCKADE__RUNNER__GUEST_MSG__BODY_FILE_CHANGED, 0,
                                   RH_TIMEOUT_MS, &m) < 0)
            fail_msg("mirror: %s", runner_client_error(fx.c));
        rh_mirror_note(m->file_changed, s);
        msg_free_guest(m);
    }
}

static bool
rh_mirror_written(const MirrorSeen *s)
{
    return s->hello && s->big_over_budget && s->small;
}

static bool
rh_mirror_changed(const MirrorSeen *s)
{
    return s->removed && s->small2;
}

static bool
rh_mirror_moved(const MirrorSeen *s)
{
    return s->dir_gone && s->moved_file;
}

static void
test_mirror(void **state)
{
    (void) state;
    MirrorSeen seen = {0};
    ExecResult r;

    rh_drop_pending();
    rh_sh("mkdir -p m/d && printf hello > m/d/f.txt && head -c 200000 /dev/zero > m/big.bin &&"
          " printf x > m/small",
          &r);
    assert_int_equal(r.exit_code, 0);
    rh_result_free(&r);
    rh_mirror_wait(&seen, rh_mirror_written);
    rh_sh("rm m/d/f.txt && mv m/small m/small2", &r);
    rh_result_free(&r);
    rh_mirror_wait(&seen, rh_mirror_changed);
    rh_sh("mkdir -p m/x/y && printf z > m/x/y/z && sleep 0.2 && mv m/x m/w", &r);
    rh_result_free(&r);
    rh_mirror_wait(&seen, rh_mirror_moved);
}

const struct CMUnitTest rh_files_tests[] = {
    cmocka_unit_test(test_file_roundtrip),
    cmocka_unit_test(test_file_confinement),
    cmocka_unit_test(test_fsops),
    cmocka_unit_test(test_mirror),
};
const size_t rh_files_tests_count = ELEMENTSOF_RH(rh_files_tests);
