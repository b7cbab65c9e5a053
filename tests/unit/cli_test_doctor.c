/* Unit tests of doctor's cluster verdict (tools/doctor.c, doctor_cluster_verdict): the answer
 * of GET /v1/admin/hosts in, OK / WARN and the message out. The lease is the answer's
 * lease_ms (the cluster's [cluster] lease_s), the default only when it is absent; a lost host
 * is named with the host that took it over and is not also counted silent. No daemon. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "doctor.h"

typedef struct {
    const char *answer; /* the JSON of GET /v1/admin/hosts */
    DoctorLevel level;
    const char *has[3];   /* substrings the message must hold */
    const char *hasnt[2]; /* and must not */
} VerdictCase;

static const VerdictCase cases[] = {
    /* every heartbeat within the configured lease */
    {"{\"lease_ms\":6000,\"hosts\":[{\"id\":\"host-a\",\"state\":\"live\",\"heartbeat_age_ms\":"
     "1200},{\"id\":\"host-b\",\"state\":\"live\",\"heartbeat_age_ms\":5900}]}",
     DOCTOR_OK,
     {"2 hosts, every heartbeat fresh", "lease 6 s"},
     {"silent"}},
    /* silent 7 s with lease 6: reported, though the default lease (10 s) would not */
    {"{\"lease_ms\":6000,\"hosts\":[{\"id\":\"host-a\",\"state\":\"live\",\"heartbeat_age_ms\":"
     "900},{\"id\":\"host-b\",\"state\":\"live\",\"heartbeat_age_ms\":7000}]}",
     DOCTOR_WARN,
     {"1 of 2 hosts silent for over the 6 s lease", "host-b (7 s)"},
     {"host-a", "lost"}},
    /* no lease_ms (an older daemon): the 10 s default */
    {"{\"hosts\":[{\"id\":\"host-b\",\"state\":\"live\",\"heartbeat_age_ms\":7000}]}",
     DOCTOR_OK,
     {"1 host, every heartbeat fresh", "lease 10 s"},
     {NULL}},
    {"{\"hosts\":[{\"id\":\"host-b\",\"state\":\"live\",\"heartbeat_age_ms\":12000}]}",
     DOCTOR_WARN,
     {"over the 10 s lease", "host-b (12 s)"},
     {NULL}},
    /* a lost host: named with its taker, never "silent" */
    {"{\"lease_ms\":6000,\"hosts\":[{\"id\":\"host-a\",\"state\":\"live\",\"heartbeat_age_ms\":"
     "100},{\"id\":\"host-b\",\"state\":\"lost\",\"heartbeat_age_ms\":60000,\"lost_at\":"
     "\"2026-12-02T08:00:00Z\",\"lost_by\":\"host-a\"}]}",
     DOCTOR_WARN,
     {"1 of 2 hosts lost (silent past the 6 s lease): host-b (taken over by host-a at "
      "2026-12-02T08:00:00Z)"},
     {"60 s)", "silent for"}},
    /* both, and hostile bytes in a host's id are escaped */
    {"{\"lease_ms\":6000,\"hosts\":[{\"id\":\"host-\\u001b[31m\",\"state\":\"live\","
     "\"heartbeat_age_ms\":9000},{\"id\":\"host-b\",\"state\":\"lost\",\"heartbeat_age_ms\":1,"
     "\"lost_at\":\"t\",\"lost_by\":\"host-c\"}]}",
     DOCTOR_WARN,
     {"lease): host-b (taken over by host-c at t)", "1 of 2 hosts silent"},
     {"\x1b"}},
    /* garbage instead of a list: OK with nothing to say, no crash */
    {"{\"lease_ms\":\"x\",\"hosts\":{}}", DOCTOR_OK, {"0 hosts"}, {NULL}},
};

static void
test_verdicts(void **state)
{
    (void) state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const VerdictCase *c = &cases[i];
        json_t *ans = json_loads(c->answer, 0, NULL);
        DoctorResult r = {0};
        assert_non_null(ans);
        doctor_cluster_verdict(ans, &r);
        json_decref(ans);
        if (r.level != c->level)
            fail_msg("case %zu: level %d, want %d: %s", i, r.level, c->level, r.message);
        assert_string_equal(r.check, "cluster");
        for (size_t k = 0; k < 3 && c->has[k]; k++)
            if (!strstr(r.message, c->has[k]))
                fail_msg("case %zu: \"%s\" not in \"%s\"", i, c->has[k], r.message);
        for (size_t k = 0; k < 2 && c->hasnt[k]; k++)
            if (strstr(r.message, c->hasnt[k]))
                fail_msg("case %zu: \"%s\" in \"%s\"", i, c->hasnt[k], r.message);
        assert_true((r.level == DOCTOR_OK) == (r.fix[0] == '\0'));
    }
}

/* Many lost hosts: the message is cut, never overrun, and still says how many. */
static void
test_many_lost(void **state)
{
    (void) state;
    json_t *hosts = json_array();
    for (int i = 0; i < 100; i++)
        json_array_append_new(hosts, json_pack("{s:s+,s:s,s:i,s:s,s:s}", "id", "host-number-",
                                               "xxxxxxxxxxxxxxxxxxxx", "state", "lost",
                                               "heartbeat_age_ms", 99999, "lost_at",
                                               "2026-12-02T08:00:00Z", "lost_by", "host-a"));
    json_t *ans = json_pack("{s:o,s:i}", "hosts", hosts, "lease_ms", 6000);
    DoctorResult r = {0};
    doctor_cluster_verdict(ans, &r);
    json_decref(ans);
    assert_int_equal(r.level, DOCTOR_WARN);
    assert_non_null(strstr(r.message, "100 of 100 hosts lost"));
    assert_true(strlen(r.message) < sizeof(r.message));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verdicts),
        cmocka_unit_test(test_many_lost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
