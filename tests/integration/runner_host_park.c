/* Runner host-mode integration tests of the parked process (runner.proto Prestart and
 * Exec.adopt): started before Hello, silent until adopted, adopted by a matching Exec only,
 * with the adopt header on its stdin. Fixture and helpers: runner_host.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "guest_limits.h"
#include "runner_host.h"
#include "testlib.h"
#include "timeutil.h"

#define ERR(x) STOCKADE__RUNNER__ERROR__CODE__##x
#define PARK_DELAY_MSEC 700 /* the parked shell sleeps this long before it speaks */

/* Echoes its stdin back once it has said it is ready: the adopt header comes back as Output. */
#define PARK_SCRIPT "sleep 0.7; echo parked-ready; cat"
#define PARK_CMDLINE "/bin/sh -c " PARK_SCRIPT /* as rh_count_procs() matches it */
static const char *const park_argv[] = {"/bin/sh", "-c", PARK_SCRIPT, NULL};

static GuestMsg *
park_prestart(const char *const *argv, uint32_t uid)
{
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Stockade__Runner__Prestart p = STOCKADE__RUNNER__PRESTART__INIT;

    while (argv[p.n_argv])
        p.n_argv++;
    p.argv = (char **) argv;
    p.uid = uid;
    p.gid = RH_GID;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_PRESTART;
    m.prestart = &p;
    return rh_call(&m);
}

/* Before Hello: answered by Ack only once the process has written; once only; hidden; a
 * Prepare with warm_parked writes it the warm-up line. */
static void
test_park_prestart(void **state)
{
    (void) state;
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Stockade__Runner__Signal sig = STOCKADE__RUNNER__SIGNAL__INIT;

    uint64_t t0 = now_usec();
    rh_expect_ack(park_prestart(park_argv, RH_UID));
    assert_true(now_usec() - t0 >= (PARK_DELAY_MSEC - 100) * USEC_PER_MSEC);
    rh_expect_error(park_prestart(park_argv, RH_UID), ERR(NOT_READY)); /* once */
    /* the host cannot reach it under its reserved id (Signal needs Hello: a NOT_READY; after
     * Hello, test_park_adopt checks NOT_FOUND) and it sends nothing while parked */
    sig.exec_id = EXEC_ID_PARKED;
    sig.signo = 9;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_SIGNAL;
    m.signal = &sig;
    rh_expect_error(rh_call(&m), ERR(NOT_READY));
    rh_ping(21);
    GuestMsg *stray;
    if (runner_client_next(fx.c, 300, &stray) == 0)
        fail_msg("a message while parked: body %d", stray->body_case);
    assert_int_equal(rh_count_procs(PARK_CMDLINE), 1);

    /* Prepare.warm_parked: the warm-up line reaches it (test_park_adopt reads it back) */
    HostMsg pm = STOCKADE__RUNNER__HOST_MSG__INIT;
    Stockade__Runner__Prepare prep = STOCKADE__RUNNER__PREPARE__INIT;
    uint8_t entropy[HELLO_ENTROPY_BYTES] = {4, 5, 6};
    prep.workspace_device = "/dev/vdb"; /* ignored in host mode */
    prep.wall_time_ns = 1;
    prep.entropy = (ProtobufCBinaryData){sizeof(entropy), entropy};
    prep.warm_parked = true;
    pm.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_PREPARE;
    pm.prepare = &prep;
    rh_expect_ack(rh_call(&pm));
}

static GuestMsg *
park_exec(uint32_t id, const char *const *argv, bool adopt)
{
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Stockade__Runner__Exec x = STOCKADE__RUNNER__EXEC__INIT;
    Stockade__Runner__EnvVar var = STOCKADE__RUNNER__ENV_VAR__INIT, *vars[] = {&var};

    while (argv[x.n_argv])
        x.n_argv++;
    var.name = "EXEC_VAR";
    var.value = "from-exec";
    x.exec_id = id;
    x.argv = (char **) argv;
    x.env = vars;
    x.n_env = 1;
    x.cwd = "/workspace/park-cwd";
    x.stdin_open = true;
    x.adopt = adopt;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_EXEC;
    m.exec = &x;
    return rh_call(&m);
}

static bool
park_has(const char *body, size_t len, const char *entry)
{
    for (size_t off = 0; off < len; off += strlen(body + off) + 1)
        if (strcmp(body + off, entry) == 0)
            return true;
    return false;
}

static void
test_park_adopt(void **state)
{
    (void) state;
    const char *other[] = {"/bin/sh", "-c", "echo fresh", NULL};
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Stockade__Runner__Signal sig = STOCKADE__RUNNER__SIGNAL__INIT;
    ExecResult r;
    char want[1024];

    sig.exec_id = EXEC_ID_PARKED;
    sig.signo = 9;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_SIGNAL;
    m.signal = &sig;
    rh_expect_error(rh_call(&m), ERR(NOT_FOUND)); /* hidden under its reserved id */
    snprintf(want, sizeof(want), "%s/park-cwd", fx.ws);
    assert_int_equal(mkdir(want, 0777), 0);
    assert_int_equal(chown(want, RH_UID, RH_GID), 0);

    /* another argv is no match: started anew, the parked one stays */
    uint32_t fresh = fx.next_exec_id++;
    GuestMsg *g = park_exec(fresh, other, true);
    assert_int_equal(g->body_case, STOCKADE__RUNNER__GUEST_MSG__BODY_EXEC_STARTED);
    assert_false(g->exec_started->adopted);
    msg_free_guest(g);
    rh_collect(fresh, RH_TIMEOUT_MS, &r);
    assert_string_equal(r.out, "fresh\n");
    rh_result_free(&r);
    assert_int_equal(rh_count_procs(PARK_CMDLINE), 1);

    /* the matching Exec adopts it: its words from before, then the header it was given */
    uint32_t id = fx.next_exec_id++;
    g = park_exec(id, park_argv, true);
    assert_int_equal(g->body_case, STOCKADE__RUNNER__GUEST_MSG__BODY_EXEC_STARTED);
    assert_true(g->exec_started->adopted);
    assert_int_equal(g->exec_started->exec_id, id);
    msg_free_guest(g);
    rh_stdin(id, "", 0, true);
    rh_collect(id, RH_TIMEOUT_MS, &r);
    const char *ready = "parked-ready\nSTOCKADE-WARMUP\n"; /* its words, then Prepare's line */
    assert_true(r.out_len > strlen(ready));
    assert_memory_equal(r.out, ready, strlen(ready));
    const char *h = r.out + strlen(ready);
    size_t body;
    int hl;
    assert_int_equal(sscanf(h, "STOCKADE-ADOPT %zu\n%n", &body, &hl), 1);
    assert_int_equal(strlen(ready) + (size_t) hl + body, r.out_len);
    snprintf(want, sizeof(want), "%s/park-cwd", fx.ws); /* the cwd as the exec sees it */
    assert_string_equal(h + hl, want);
    snprintf(want, sizeof(want), "HOME=%s", fx.ws);
    assert_true(park_has(h + hl, body, want));
    assert_true(park_has(h + hl, body, "SESSION_VAR=from-session"));
    assert_true(park_has(h + hl, body, "EXEC_VAR=from-exec"));
    rh_result_free(&r);

    /* adopted once: the next adopt starts anew */
    id = fx.next_exec_id++;
    g = park_exec(id, park_argv, true);
    assert_int_equal(g->body_case, STOCKADE__RUNNER__GUEST_MSG__BODY_EXEC_STARTED);
    assert_false(g->exec_started->adopted);
    msg_free_guest(g);
    rh_signal(id, 9);
    rh_collect(id, RH_TIMEOUT_MS, &r);
    rh_result_free(&r);
}

const struct CMUnitTest rh_park_before_hello[] = {cmocka_unit_test(test_park_prestart)};
const struct CMUnitTest rh_park_after_hello[] = {cmocka_unit_test(test_park_adopt)};
