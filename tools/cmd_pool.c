/* stockade pool: the warm pools (GET /v1/pool) and the accelerator in use, with why.
 * --wait POOL polls until that pool has an idle guest (scripts, the quickstart); a daemon
 * that does not listen yet (started a moment ago: no socket, or refused) is waited for
 * within the same --wait-timeout. */
#include <string.h>
#include <time.h>

#include "args.h"
#include "cli.h"
#include "events.h"
#include "output.h"
#include "timeutil.h"

#define POOL_WAIT_DEFAULT_S 600
#define POOL_WAIT_POLL_USEC (500ull * 1000)
#define POOL_REASON_MAX_CHARS 300

static const char pool_help[] =
    "Usage: stockade pool [--wait POOL [--wait-extraction] [--wait-timeout S]] [--json]\n"
    "Shows each pool's guests (warm target, idle, busy, starting, draining, slots, snapshots\n"
    "ready), the accelerator the daemon uses (kvm or tcg) with the reason it chose it, the\n"
    "pool's failure counters, the accel=auto KVM probe apart from them, and the extraction\n"
    "appliance that salvages files after a cancel, timeout or crash.\n\n"
    "  --wait POOL         wait until the daemon listens and POOL has an idle guest,\n"
    "                      then show the pools\n"
    "  --wait-extraction   with --wait: also wait until the extraction appliance is up\n"
    "  --wait-timeout S    give up after S seconds (default 600; exit 125)\n";

/* The pool's own failure counters, then the KVM probe's apart: a probe that failed chose TCG
 * and says nothing about the pool's health. */
static void
pool_print_health(json_t *p)
{
    json_t *g = json_object_get(p, "guests"), *probe = json_object_get(p, "accel_probe");
    long long runs = event_int(probe, "runs", 0), failed = event_int(probe, "failures", 0);

    printf("guests: %lld restores, %lld restore failures, %lld prepare failures, %lld wedged, "
           "%lld broken\n",
           (long long) event_int(g, "restores", 0), (long long) event_int(g, "restore_failures", 0),
           (long long) event_int(g, "prepare_failures", 0), (long long) event_int(g, "wedged", 0),
           (long long) event_int(g, "broken", 0));
    if (runs == 0)
        printf("probe: none this run\n");
    else
        printf("probe: %lld run%s, %lld failed%s\n", runs, runs == 1 ? "" : "s", failed,
               failed ? " (KVM does not work here: a verdict on the host, not a pool failure)"
                      : "");
    json_t *x = json_object_get(p, "extraction");
    const char *xs = event_str(x, "state", "?");
    _cleanup_free_ char *state = term_escape(xs, strlen(xs), 16);
    long long ms = event_int(x, "launch_ms", 0);
    if (ms > 0)
        printf("extraction: %s (last launch %.1f s)\n", state ? state : "?", (double) ms / 1e3);
    else
        printf("extraction: %s\n", state ? state : "?");
}

static void
pool_print(Cli *cli, json_t *p)
{
    const char *accel = event_str(p, "accel", "?"), *reason = event_str(p, "accel_reason", "");
    _cleanup_free_ char *acc = term_escape(accel, strlen(accel), 16);
    _cleanup_free_ char *why = term_escape(reason, strlen(reason), POOL_REASON_MAX_CHARS);
    bool decided = json_is_true(json_object_get(p, "accel_decided"));
    Color c = strcmp(accel, "kvm") == 0 ? COLOR_GREEN : COLOR_YELLOW;

    printf("accel: %s%s%s%s\n", cli->color_out ? color_code(c) : "", acc ? acc : "?",
           cli->color_out ? COLOR_RESET : "", decided ? "" : " (not decided yet: probing KVM)");
    if (why && why[0])
        printf("why:   %s\n", why);
    pool_print_health(p);
    static const char *const headers[] = {"POOL",      "WARM>",     "IDLE>",  "BUSY>",
                                          "STARTING>", "DRAINING>", "SLOTS>", "SNAPSHOTS>"};
    static const char *const keys[] = {"warm",     "idle",  "busy",           "starting",
                                       "draining", "slots", "snapshots_ready"};
    json_t *pools = json_object_get(p, "pools");
    Table *t = table_new(ELEMENTSOF(headers), headers);
    for (size_t i = 0; t && i < json_array_size(pools); i++) {
        json_t *row = json_array_get(pools, i);
        char num[ELEMENTSOF(keys)][24];
        const char *cells[ELEMENTSOF(headers)] = {event_str(row, "name", "?")};
        for (size_t k = 0; k < ELEMENTSOF(keys); k++) {
            snprintf(num[k], sizeof(num[k]), "%lld", (long long) event_int(row, keys[k], 0));
            cells[k + 1] = num[k];
        }
        table_add(t, cells);
        table_color(t, 2, event_int(row, "idle", 0) > 0 ? COLOR_GREEN : COLOR_YELLOW);
    }
    if (t)
        table_render(t, stdout, cli->color_out);
    table_free(t);
}

/* True once pool `name` has an idle guest (and, with extraction, the extraction appliance is
 * up); E_NOT_FOUND if there is no such pool. */
static int
pool_ready(json_t *p, const char *name, bool extraction, bool *ret, Error **errp)
{
    json_t *pools = json_object_get(p, "pools");
    const char *xs = event_str(json_object_get(p, "extraction"), "state", "");
    for (size_t i = 0; i < json_array_size(pools); i++) {
        json_t *row = json_array_get(pools, i);
        if (strcmp(event_str(row, "name", ""), name) == 0) {
            *ret = json_is_true(json_object_get(p, "accel_decided")) &&
                   event_int(row, "idle", 0) > 0 && (!extraction || strcmp(xs, "up") == 0);
            return 0;
        }
    }
    return error_set(errp, E_NOT_FOUND, 0,
                     "the daemon has no pool named '%.32s' (see stockade pool)", name);
}

static void
pool_wait_pause(void)
{
    struct timespec ts = {.tv_nsec = (long) POOL_WAIT_POLL_USEC * 1000};
    nanosleep(&ts, NULL);
}

/* GET /v1/pool once the daemon listens: until then (a start under way) it is polled again;
 * past the deadline, E_TIMEOUT with why it could not be reached. */
static int
pool_wait_get(Client *c, uint64_t deadline_usec, uint64_t timeout_s, json_t **ret, Error **errp)
{
    for (;;) {
        _cleanup_error_ Error *err = NULL;
        if (client_json(c, "GET", "/v1/pool", NULL, ret, &err) == 0)
            return 0;
        if (!client_nobody_listens(c)) {
            *errp = TAKE_PTR(err);
            return -1;
        }
        if (now_usec() > deadline_usec)
            return error_set(errp, E_TIMEOUT, 0,
                             "the daemon did not start listening within "
                             "%llu s (%s)",
                             (unsigned long long) timeout_s, err->message);
        pool_wait_pause();
    }
}

static int
pool_wait(Client *c, const char *name, bool extraction, uint64_t timeout_s, json_t **ret,
          Error **errp)
{
    uint64_t deadline = now_usec() + timeout_s * USEC_PER_SEC;
    for (;;) {
        json_t *p = NULL;
        bool ready = false;
        if (pool_wait_get(c, deadline, timeout_s, &p, errp) < 0)
            return -1;
        if (pool_ready(p, name, extraction, &ready, errp) < 0) {
            json_decref(p);
            return -1;
        }
        if (ready) {
            *ret = p;
            return 0;
        }
        json_decref(p);
        if (now_usec() > deadline)
            return error_set(errp, E_TIMEOUT, 0,
                             "pool %.32s has no idle guest%s after %llu s (first start makes "
                             "snapshots and launches the appliance: see the daemon's log)",
                             name, extraction ? " or the extraction appliance is not up" : "",
                             (unsigned long long) timeout_s);
        pool_wait_pause();
    }
}

enum { OPT_WAIT = CLI_OPT_VERB_BASE, OPT_WAIT_TIMEOUT, OPT_WAIT_EXTRACTION };

int
cmd_pool(Cli *cli, int argc, char **argv)
{
    static const struct option opts[] = {
        {"wait", required_argument, NULL, OPT_WAIT},
        {"wait-timeout", required_argument, NULL, OPT_WAIT_TIMEOUT},
        {"wait-extraction", no_argument, NULL, OPT_WAIT_EXTRACTION},
        CLI_GLOBAL_OPTIONS,
    };
    _cleanup_error_ Error *err = NULL;
    _cleanup_json_ json_t *p = NULL;
    const char *wait = NULL;
    bool wait_extraction = false;
    uint64_t timeout_s = POOL_WAIT_DEFAULT_S;
    Client *c;
    int k;

    cli->verb = "pool";
    cli_getopt_reset(cli, opts);
    while ((k = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (k == OPT_WAIT)
            wait = optarg;
        else if (k == OPT_WAIT_EXTRACTION)
            wait_extraction = true;
        else if (k == OPT_WAIT_TIMEOUT && args_uint(optarg, 1, 86400, &timeout_s) < 0)
            return cli_usage_error(cli, "--wait-timeout wants 1..86400 seconds");
        else if (k != OPT_WAIT_TIMEOUT && k != OPT_WAIT_EXTRACTION &&
                 args_global(cli, k, argc, argv, &err) < 0)
            return cli_usage_error(cli, "%s", err->message);
    }
    if (cli->help)
        return cli_print_help(pool_help);
    if (optind < argc)
        return cli_usage_error(cli, "unexpected operand '%.64s'", argv[optind]);
    if (wait_extraction && !wait)
        return cli_usage_error(cli, "--wait-extraction goes with --wait POOL");
    if (!(c = cli_client(cli, &err)))
        return cli_report(cli, err, false);
    int r = wait ? pool_wait(c, wait, wait_extraction, timeout_s, &p, &err)
                 : client_json(c, "GET", "/v1/pool", NULL, &p, &err);
    if (r < 0) /* no such pool: 1; the wait timed out, or the daemon failed: 125 */
        return cli_report(cli, err, false);
    if (cli->json)
        return cli_print_json(p);
    pool_print(cli, p);
    return CLI_EXIT_OK;
}
