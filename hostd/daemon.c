/* See daemon.h. Also writes <state_dir>/status.json every STATUS_INTERVAL_USEC: accel and
 * why, and per pool its warm/idle/busy counts (the API serves the same later), and how many
 * E2B connection threads are inside a handler (e2b_handlers_running()). */
#include "daemon.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.h"
#include "cluster.h"
#include "cluster_route.h"
#include "daemon_notify.h"
#include "e2b.h"
#include "eventhub.h"
#include "extract_service.h"
#include "fdutil.h"
#include "log.h"
#include "loop.h"
#include "owndir.h"
#include "pool.h"
#include "sessions.h"
#include "sessions_host.h"
#include "store.h"
#include "store_sync.h"
#include "store_tenants.h"
#include "timeutil.h"
#include "workq.h"

#define STATUS_INTERVAL_USEC (2 * USEC_PER_SEC)
/* Cluster mode: how often this host looks for a host past its lease (a takeover), between
 * its heartbeats (STATUS_INTERVAL_USEC): a dead host is taken over within lease + this. */
#define TAKEOVER_INTERVAL_USEC (1 * USEC_PER_SEC)
#define STORE_READERS 8
#define SESSION_WORKERS 3 /* salvages and the appliance launch: kept off the pool's workers */
/* Cluster mode: pulls of the cluster's tenants and tokens (each at most
 * CLUSTER_TENANCY_PULL_MAX_ROWS rows) per status tick; a backlog beyond waits for the next. */
#define TENANCY_PULLS_PER_TICK 8

struct Daemon {
    DaemonConfig *cfg;
    Loop *loop;
    WorkQueue *q, *session_q;
    Pool *pool;
    ExtractService *extract; /* the warm appliance that salvages the pool's disks */
    Store *store;
    Cluster *cluster;        /* [cluster]: the shared ledger; NULL on a single host */
    Cluster *cluster_lookup; /* [cluster]: the API's second connection (owner lookups) */
    StoreReaders *readers;
    EventHub *hub;
    Sessions *sessions;
    Api *api;
    DaemonNotify *notify;    /* the service manager's readiness protocol (NOTIFY_SOCKET) */
    E2b *e2b;                /* [e2b] enabled: the E2B SDK's control plane and envd face */
    HttpBudget *body_budget; /* request bodies in memory, across the API and E2B listeners */
    char *db_path;
    int state_fd; /* the state directory, checked to be the daemon's own */
    int lock_fd;
    int signal_fd;
    LoopSource *signal_src;
    TimerId status_timer;
    uint64_t ticks; /* of the status timer (daemon_on_status_timer) */
    int stop_requests;
    bool heartbeat_failing;  /* logged once per outage */
    int64_t tenancy_seq;     /* the cluster's last tenant or token change copied to the store */
    bool tenancy_failing;    /* logged once per outage */
};

/* SQLite makes its database with the umask's mode (0644 was seen: every session's events
 * readable by any local user, who can pass through the 0711 state directory by name); its -wal
 * and -shm files take the database's mode. So the database is made 0600 first, and files of
 * an earlier run are set to 0600. */
static int
state_db_private(int state_fd, const char *state_dir, Error **errp)
{
    static const char *const names[] = {"stockade.db", "stockade.db-wal", "stockade.db-shm"};
    for (size_t i = 0; i < ELEMENTSOF(names); i++) {
        int flags = O_RDWR | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | (i == 0 ? O_CREAT : 0);
        _cleanup_close_ int fd = openat(state_fd, names[i], flags, 0600);
        if (fd < 0 && i > 0 && errno == ENOENT)
            continue;
        if (fd < 0 || fchmod(fd, 0600) < 0)
            return error_set(errp, E_IO, errno, "%s/%s", state_dir, names[i]);
    }
    return 0;
}

int
daemon_open_state_dir(const char *state_dir, int *ret_fd, Error **errp)
{
    _cleanup_close_ int fd = -1;
    if (owndir_open(state_dir, 0711, OWNDIR_CREATE | OWNDIR_FOLLOW_LAST, &fd, errp) < 0)
        return error_prefix(errp, "state directory");
    if (state_db_private(fd, state_dir, errp) < 0)
        return -1;
    *ret_fd = TAKE_FD(fd);
    return 0;
}

static int
daemon_lock_state(Daemon *d, Error **errp)
{
    if (daemon_open_state_dir(d->cfg->state_dir, &d->state_fd, errp) < 0)
        return -1;
    d->lock_fd =
        openat(d->state_fd, "stockaded.lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (d->lock_fd < 0)
        return error_set(errp, E_IO, errno, "open %s/stockaded.lock", d->cfg->state_dir);
    if (flock(d->lock_fd, LOCK_EX | LOCK_NB) < 0)
        return error_set(errp, E_CONFLICT, errno,
                         "another stockaded already uses %s (lock %s/stockaded.lock)",
                         d->cfg->state_dir, d->cfg->state_dir);
    return 0;
}

static void
daemon_write_status(Daemon *d)
{
    PoolStatus st;
    static const char tmp[] = "status.json.tmp";
    pool_status(d->pool, &st);
    int fd = openat(d->state_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    _cleanup_fclose_ FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        safe_close(fd);
        return;
    }
    fprintf(f, "{\"pid\":%ld,\"accel\":\"%s\",\"accel_decided\":%s,\"accel_reason\":\"",
            (long) getpid(), accel_to_string(st.accel), st.accel_decided ? "true" : "false");
    char esc[512];
    fputs(log_escape(esc, sizeof(esc), st.accel_reason, strlen(st.accel_reason)), f);
    fputs("\",\"pools\":[", f);
    for (size_t i = 0; i < st.n_shapes; i++) {
        const PoolShapeStatus *s = &st.shapes[i];
        fprintf(f, "%s{\"name\":\"%s\",\"warm\":%u,\"slots\":%u,\"idle\":%u,\"busy\":%u,"
                   "\"starting\":%u,\"draining\":%u,\"snapshots_ready\":%u}",
                i ? "," : "", s->name, s->warm, s->slots, s->idle, s->busy, s->starting,
                s->draining, s->snapshots_ready);
    }
    fprintf(f, "],\"restores\":%llu,\"restore_failures\":%llu,\"boots\":%llu,\"destroys\":%llu,"
               "\"wedged\":%llu,\"broken\":%llu,\"prepare_failures\":%llu,"
               "\"accel_probes\":%llu,\"accel_probe_failures\":%llu,"
               "\"e2b_handlers_running\":%u}\n",
            (unsigned long long) st.restores, (unsigned long long) st.restore_failures,
            (unsigned long long) st.boots, (unsigned long long) st.destroys,
            (unsigned long long) st.wedged, (unsigned long long) st.broken,
            (unsigned long long) st.prepare_failures,
            (unsigned long long) st.accel_probes, (unsigned long long) st.accel_probe_failures,
            e2b_handlers_running(d->e2b));
    if (fflush(f) == 0 && renameat(d->state_fd, tmp, d->state_fd, "status.json") == 0)
        return;
    (void) unlinkat(d->state_fd, tmp, 0);
}

/* The pools as the hosts table keeps them: [{"name","warm","slots","idle","busy","accepting"}
 * ...]; accepting is false while this host drains, so placement skips it. Pool names are
 * [a-z0-9-] (config.c), so they need no escaping. */
static char *
pools_json(const PoolStatus *st, bool draining)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    fputc('[', f);
    for (size_t i = 0; i < st->n_shapes; i++) {
        const PoolShapeStatus *s = &st->shapes[i];
        fprintf(f,
                "%s{\"name\":\"%s\",\"warm\":%u,\"slots\":%u,\"idle\":%u,\"busy\":%u,"
                "\"accepting\":%s}",
                i ? "," : "", s->name, s->warm, s->slots, s->idle, s->busy,
                draining ? "false" : "true");
    }
    fputc(']', f);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* Cluster mode: another host declared this one lost (it was cut off from the database for
 * longer than the lease) and ended its sessions there. End them here the same way (host_lost;
 * the ledger is not touched again), then be live again with a new start. */
static void
daemon_rejoin(Daemon *d, const Error *why)
{
    _cleanup_error_ Error *err = NULL;
    size_t n = sessions_end_lost(d->sessions);
    log_error("%s: %zu session(s) another host ended are ended here (host_lost)", why->message, n);
    if (cluster_rejoin(d->cluster, &err) < 0)
        log_error("cluster: not live again yet: %s", err->message);
    else
        log_info("cluster: host %s is live again", d->cfg->cluster.host_id);
}

/* Cluster mode: a host whose heartbeat is past its lease is taken over by one host (the
 * database decides which, and when: hostd/cluster/cluster_takeover.c). One bounded call per
 * TAKEOVER_INTERVAL_USEC, and only while this host's own heartbeat is being written. */
static void
daemon_takeover(Daemon *d)
{
    _cleanup_error_ Error *err = NULL;
    ClusterTakeover t;
    if (!d->cluster || d->heartbeat_failing)
        return;
    if (cluster_takeover(d->cluster, &t, &err) < 0) {
        log_error("cluster: takeover of a lost host: %s", err->message);
        return;
    }
    if (t.host_id[0])
        log_warn("cluster: host %s lost (last heartbeat %.1f s ago): %zu session(s) ended "
                 "host_lost, %zu reservation(s) charged to that heartbeat",
                 t.host_id, (double) t.age_usec / 1e6, t.n_ended, t.n_settled);
}

/* Cluster mode: this host's heartbeat and pool counts in the hosts table. A failure is
 * logged when it starts and when it ends, not every beat. */
static void
daemon_heartbeat(Daemon *d)
{
    _cleanup_error_ Error *err = NULL;
    PoolStatus st;
    if (!d->cluster)
        return;
    SessionsStats ss;
    pool_status(d->pool, &st);
    sessions_stats(d->sessions, &ss);
    _cleanup_free_ char *pools = pools_json(&st, ss.draining);
    if (!pools || cluster_heartbeat(d->cluster, accel_to_string(st.accel), pools, &err) < 0) {
        if (err && err->category == E_CONFLICT) {
            daemon_rejoin(d, err);
            return;
        }
        if (!d->heartbeat_failing)
            log_error("cluster: heartbeat: %s", err ? err->message : "out of memory");
        d->heartbeat_failing = true;
        return;
    }
    if (d->heartbeat_failing)
        log_info("cluster: heartbeat written again");
    d->heartbeat_failing = false;
    sessions_settle_retry(d->sessions); /* what ended while the database was away */
}

/* A tenant removed through another host: its sessions here end as they did there
 * (tenant_removed, their files salvaged). That host answered the removal already; nothing
 * of the tenant is admitted anywhere since (the cluster's admission refuses it). What the
 * pull said is not trusted: only a tenant this host's copy now holds removed counts. */
static void
daemon_end_removed(Daemon *d, const ClusterTenancy *t)
{
    for (size_t i = 0; i < t->n_tenants; i++) {
        TenantRecord here;
        if (t->tenants[i].removed_usec == 0 || !store_sync_tenant_id_is_valid(t->tenants[i].id) ||
            store_tenant_get(d->store, t->tenants[i].id, &here, NULL) < 0 || !here.removed_usec)
            continue; /* live, or a row the store refused (never logged as it came) */
        size_t n = sessions_end_tenant(d->sessions, here.id, SESSION_END_TENANT_REMOVED);
        if (n)
            log_info("cluster: tenant %s was removed: %zu session(s) here cancelled", here.id,
                     n);
    }
}

/* One pull of the cluster's changed tenants and tokens into this host's store. Rows the
 * store's rules refuse are skipped and said once (the cursor moves past them). */
static int
daemon_tenancy_pull(Daemon *d, bool *ret_more, Error **errp)
{
    ClusterTenancy t;
    StoreSyncCounts n;
    if (cluster_tenancy_pull(d->cluster, d->tenancy_seq, &t, errp) < 0)
        return -1;
    int r = store_sync_apply(d->store, t.tenants, t.n_tenants, t.tokens, t.n_tokens, &n, errp);
    if (r == 0) {
        daemon_end_removed(d, &t);
        if (n.invalid + n.conflicts + t.n_invalid > 0)
            log_warn("cluster: %zu tenant or token row(s) not copied (invalid %zu, conflicting "
                     "with this host's %zu)",
                     n.invalid + n.conflicts + t.n_invalid, n.invalid + t.n_invalid,
                     n.conflicts);
        if (t.rewound)
            log_warn("cluster: the database's tenant and token changes went back (restored?); "
                     "pulling them all again");
        d->tenancy_seq = t.last_seq;
        *ret_more = t.more || t.rewound;
    }
    cluster_tenancy_clear(&t);
    return r;
}

/* Cluster mode: this host's copy of the cluster's tenants and tokens, brought in step at
 * start and on every status tick (the bound on how long a revoked token still works here).
 * While the database is away the last copy keeps authenticating; said once per outage. */
static void
daemon_tenancy_sync(Daemon *d)
{
    _cleanup_error_ Error *err = NULL;
    bool more = true;
    if (!d->cluster)
        return;
    for (int i = 0; more && i < TENANCY_PULLS_PER_TICK; i++)
        if (daemon_tenancy_pull(d, &more, &err) < 0) {
            if (!d->tenancy_failing)
                log_error("cluster: tenants and tokens not brought in step (this host "
                          "authenticates with its last copy): %s", err->message);
            d->tenancy_failing = true;
            return;
        }
    if (d->tenancy_failing)
        log_info("cluster: tenants and tokens in step again");
    d->tenancy_failing = false;
}

/* Every TAKEOVER_INTERVAL_USEC: the status file, the heartbeat and the tenancy pull on every
 * STATUS_INTERVAL_USEC-th tick, the look for a lost host on each. */
static void
daemon_on_status_timer(Loop *l, void *userdata)
{
    Daemon *d = userdata;
    if (d->ticks++ % (STATUS_INTERVAL_USEC / TAKEOVER_INTERVAL_USEC) == 0) {
        daemon_write_status(d);
        daemon_heartbeat(d);
        daemon_tenancy_sync(d);
    }
    daemon_notify_progress(d->notify);
    daemon_takeover(d);
    d->status_timer =
        loop_add_timer(l, now_usec() + TAKEOVER_INTERVAL_USEC, daemon_on_status_timer, d);
}

/* What the extraction service knows of the pool: its disks and its accel decision. */
static void
daemon_extract_host_state(void *userdata, ExtractHostState *ret)
{
    PoolStatus st;
    pool_status(userdata, &st);
    *ret = (ExtractHostState){.disks_ready = st.disks_ready,
                              .accel_decided = st.accel_decided,
                              .kvm = st.accel == ACCEL_KVM};
}

static size_t
daemon_extract_host_disks(void *userdata, const char *const **ret)
{
    return pool_workspace_disks(userdata, ret);
}

/* On the sessions' workers: a salvage never waits behind the pool's restores. libguestfs
 * makes its temporary folder (the appliance's overlays of the slots' disks) 0755 and the
 * overlays 0644, for a libvirt backend whose QEMU user opens them by path; ours opens them as
 * root (stockade-appliance-qemu). So they go into <state_dir>/appliance, 0700, the daemon's
 * own (owndir.h): in the state directory itself any local user could read them by name. */
static int
daemon_open_extract(Daemon *d, Error **errp)
{
    ExtractHost host = {.state = daemon_extract_host_state,
                        .disks = daemon_extract_host_disks,
                        .userdata = d->pool};
    _cleanup_free_ char *tmpdir = NULL;
    _cleanup_close_ int fd = -1;
    if (asprintf(&tmpdir, "%s/appliance", d->cfg->state_dir) < 0)
        return error_set(errp, E_INTERNAL, ENOMEM, "path");
    if (owndir_open_at(d->state_fd, "appliance", tmpdir, 0700, OWNDIR_CREATE | OWNDIR_SET_MODE,
                       &fd, errp) < 0)
        return -1;
    return extract_service_new(d->loop, d->session_q, &host, tmpdir, &d->extract, errp);
}

static void
daemon_on_pool_stopped(void *userdata)
{
    Daemon *d = userdata;
    daemon_write_status(d);
    log_info("every guest destroyed; exiting");
    loop_quit(d->loop, 0);
}

static void
daemon_on_extract_stopped(void *userdata)
{
    Daemon *d = userdata;
    log_info("sessions ended; destroying idle guests");
    pool_stop(d->pool, daemon_on_pool_stopped, d);
}

static void
daemon_on_sessions_stopped(void *userdata)
{
    Daemon *d = userdata;
    extract_service_stop(d->extract, daemon_on_extract_stopped, d); /* waits for a launch */
}

static void
daemon_begin_stop(void *userdata)
{
    Daemon *d = userdata;
    if (++d->stop_requests > 1) {
        log_warn("second stop request: exiting without waiting for guests");
        loop_quit(d->loop, 1);
        return;
    }
    bool keep = d->cfg->shutdown_keeps_sessions;
    log_info(keep ? "stopping: keeping running sessions and their guests for the next start "
                    "(shutdown = keep), ending the others (host_shutdown), destroying idle guests"
                  : "stopping: ending live sessions (host_shutdown), then destroying guests");
    daemon_notify_stopping(d->notify);
    sessions_set_shutdown_keep(d->sessions, keep);
    extract_service_wind_down(d->extract); /* no new launch; the sessions' salvages go on */
    sessions_stop(d->sessions, daemon_on_sessions_stopped, d);
}

void
daemon_request_stop(Daemon *d)
{
    if (loop_post(d->loop, daemon_begin_stop, d) < 0)
        loop_quit(d->loop, 1);
}

/* SIGHUP: the host credential is read again (a rotation step, hostd/cluster/README.md);
 * nothing else of the configuration is. */
static void
daemon_reload(Daemon *d)
{
    _cleanup_error_ Error *err = NULL;
    if (!d->cluster) {
        log_info("SIGHUP: configuration reload is not supported; restart to apply changes");
        return;
    }
    if (cluster_reload_credential(d->cluster, &err) < 0)
        log_error("SIGHUP: the host credential in use stays: %s", err->message);
    else
        log_info("SIGHUP: host credential reloaded from %s (the rest of the configuration "
                 "needs a restart)",
                 d->cfg->cluster.host_token_file);
}

static void
daemon_on_signal(LoopSource *s, int fd, uint32_t events, void *userdata)
{
    struct signalfd_siginfo si;
    (void) s;
    (void) events;
    while (read(fd, &si, sizeof(si)) == (ssize_t) sizeof(si)) {
        if (si.ssi_signo == SIGHUP) {
            daemon_reload(userdata);
            continue;
        }
        log_info("signal %u received", si.ssi_signo);
        daemon_begin_stop(userdata);
    }
}

static int
daemon_watch_signals(Daemon *d, Error **errp)
{
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGQUIT);
    sigaddset(&mask, SIGHUP);
    if (pthread_sigmask(SIG_BLOCK, &mask, NULL) != 0)
        return error_set(errp, E_INTERNAL, errno, "block signals");
    d->signal_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (d->signal_fd < 0)
        return error_set(errp, E_INTERNAL, errno, "signalfd");
    return loop_watch_fd(d->loop, d->signal_fd, EPOLLIN, daemon_on_signal, d, &d->signal_src,
                         errp);
}

static int
daemon_open_store(Daemon *d, Error **errp)
{
    if (asprintf(&d->db_path, "%s/stockade.db", d->cfg->state_dir) < 0)
        return error_set(errp, E_INTERNAL, ENOMEM, "path");
    if (store_open(d->db_path, &d->store, errp) < 0 ||
        store_readers_new(d->db_path, STORE_READERS, &d->readers, errp) < 0 ||
        eventhub_new(&d->hub, errp) < 0)
        return error_prefix(errp, "database %s", d->db_path);
    return 0;
}

/* Cluster mode: connect, migrate, register this host. A database that cannot be reached at
 * start is an error (the operator asked for a cluster; running alone would split the
 * ledger); once running, an outage only refuses what needs the database. */
static int
daemon_open_cluster(Daemon *d, Error **errp)
{
    const ClusterConfig *c = &d->cfg->cluster;
    if (!cluster_config_enabled(c))
        return 0;
    if (cluster_open(c, &d->cluster, errp) < 0 || cluster_connect(c, &d->cluster_lookup, errp) < 0)
        return error_prefix(errp, "[cluster]");
    sessions_set_cluster(d->sessions, d->cluster);
    log_info("cluster: host %s (%s), schema version %d", c->host_id, c->advertise_url,
             cluster_schema_latest());
    if (c->insecure_hops)
        log_warn("cluster: insecure_hops: hops to http:// hosts carry the hop credential, "
                 "tenants' identities and bodies in clear");
    /* advertise_url leads to the host-to-host listener, which serves TLS with [api]'s pair. */
    bool https = strncmp(c->advertise_url, "https://", 8) == 0;
    if (https && !d->cfg->http.tls_cert_file)
        log_warn("cluster: advertise_url is https:// but the host-to-host listener serves no "
                 "TLS ([api] tls_cert): other hosts reach it only through a proxy that "
                 "terminates TLS");
    else if (!https && d->cfg->http.tls_cert_file)
        log_warn("cluster: advertise_url is http:// but the host-to-host listener serves "
                 "HTTPS ([api] tls_cert): other hosts' hops to it fail unless a proxy between "
                 "adds TLS; advertise https://");
    daemon_tenancy_sync(d); /* before the API answers: every tenant and revocation so far */
    return 0;
}

/* The HTTP layer's authenticator for every server of both faces (HttpConfig.authenticate):
 * the one token -> tenant lookup, on the caller's thread (a store reader). */
static int
daemon_authenticate(void *userdata, const char *token, HttpIdentity *ret, Error **errp)
{
    _Static_assert(STORE_ID_MAX_BYTES <= HTTP_TENANT_MAX_BYTES, "a tenant id fits");
    Daemon *d = userdata;
    TokenRecord t;

    if (store_readers_credential(d->readers, token, &t, errp) < 0)
        return -1;
    *ret = (HttpIdentity){.admin = t.admin};
    memcpy(ret->tenant, t.tenant_id, sizeof(t.tenant_id));
    return 0;
}

/* The API and E2B read the pool's counts through this, never the Pool itself. */
static void
daemon_pool_status(void *userdata, PoolStatus *ret)
{
    pool_status(userdata, ret);
}

static int
daemon_start_api(Daemon *d, Error **errp)
{
    ApiDeps deps = {.loop = d->loop, .sessions = d->sessions, .pool_status = daemon_pool_status,
                    .pool_userdata = d->pool, .readers = d->readers, .store = d->store,
                    .cluster = d->cluster, .cluster_lookup = d->cluster_lookup,
                    .default_quota = &d->cfg->sessions.default_quota, .hub = d->hub,
                    .state_dir = d->cfg->state_dir};
    HttpConfig hc = d->cfg->http;
    if (http_budget_new(&hc, &d->body_budget, errp) < 0)
        return error_prefix(errp, "[api]");
    hc.body_budget = d->body_budget;
    hc.spool_dir = d->cfg->state_dir; /* large bodies: unlinked files there, not the heap */
    hc.authenticate = daemon_authenticate;
    hc.authenticate_userdata = d;
    hc.route_class = api_route_class;  /* request counts of /metrics */
    if (api_start(&deps, &hc, &d->api, errp) < 0)
        return -1;
    log_info("API on %s%s%s:%u and unix:%s",
             !d->cfg->http.tcp_address    ? ""
             : d->cfg->http.tls_cert_file ? "https://"
                                          : "http://",
             d->cfg->http.tcp_address ? d->cfg->http.tcp_address : "(no TCP)",
             d->cfg->http.tcp_address ? "" : "", d->cfg->http.tcp_port, d->cfg->http.unix_path);
    return 0;
}

/* Cluster mode: where an E2B sandbox of another host lives (the API's lookup, off the
 * loop: any thread). */
static int
daemon_e2b_owner(void *userdata, const char *scope, const char *session_id, E2bOwner *ret,
                 Error **errp)
{
    Daemon *d = userdata;
    ClusterOwner o;
    if (api_session_owner(d->api, scope, session_id, &o, errp) < 0)
        return -1;
    *ret = (E2bOwner){.here = strcmp(o.host_id, cluster_host_id(d->cluster)) == 0,
                      .ended = o.ended,
                      .api_face = o.e2b_api,
                      .envd_face = o.e2b_envd};
    snprintf(ret->tenant, sizeof(ret->tenant), "%s", o.tenant_id);
    snprintf(ret->host_id, sizeof(ret->host_id), "%s", o.host_id);
    snprintf(ret->url, sizeof(ret->url), "%s", o.url);
    return 0;
}

/* Cluster mode: the envd token keys (any thread: the envd guard's check runs on the
 * connection thread; the keys are under the Cluster's own lock). */
static size_t
daemon_e2b_envd_keys(void *userdata, uint8_t ret[E2B_ENVD_KEYS_MAX][E2B_ENVD_KEY_BYTES])
{
    _Static_assert(E2B_ENVD_KEYS_MAX == CLUSTER_SECRETS_MAX, "the rotation's keys");
    _Static_assert(E2B_ENVD_KEY_BYTES == CLUSTER_KEY_BYTES, "one key's size");
    Daemon *d = userdata;
    return cluster_envd_keys(d->cluster, ret);
}

/* ... and the hop to it: the native API's (hostd/api/api_forward_hop.c). */
static void
daemon_e2b_forward(void *userdata, HttpRequest *req, const char *host_id, const char *url,
                   bool envd, const char *tenant, const char *const *pass)
{
    Daemon *d = userdata;
    ApiPassTarget t = {.host_id = host_id,
                       .url = url,
                       .tenant = tenant,
                       .face = envd ? API_HOP_FACE_E2B_ENVD : API_HOP_FACE_E2B_API};
    api_forward_pass(d->api, req, &t, pass);
}

/* Cluster mode: the other hosts learn where this one's E2B faces listen (none: ''). A
 * failure is logged, not fatal: this host's own sandboxes still answer here. */
static void
daemon_publish_e2b(Daemon *d)
{
    _cleanup_error_ Error *err = NULL;
    if (d->cluster && cluster_e2b_publish(d->cluster, d->e2b ? e2b_api_port(d->e2b) : 0,
                                          d->e2b ? e2b_envd_port(d->e2b) : 0,
                                          d->e2b && e2b_tls(d->e2b), &err) < 0)
        log_error("cluster: publishing the E2B listeners: %s", err->message);
}

static int
daemon_start_e2b(Daemon *d, Error **errp)
{
    E2bConfig ec = d->cfg->e2b, *c = &ec;
    if (!c->tls_cert[0]) { /* [api]'s pair unless [e2b] names its own */
        snprintf(c->tls_cert, sizeof(c->tls_cert), "%s", d->cfg->tls_cert);
        snprintf(c->tls_key, sizeof(c->tls_key), "%s", d->cfg->tls_key);
    }
    E2bDeps deps = {.loop = d->loop, .sessions = d->sessions, .pool_status = daemon_pool_status,
                    .pool_userdata = d->pool, .readers = d->readers, .hub = d->hub,
                    .default_quota = &d->cfg->sessions.default_quota,
                    .max_timeout_usec = d->cfg->sessions.max_timeout_usec,
                    .workspace_mib = d->cfg->pool.workspace_mib,
                    .body_budget = d->body_budget,
                    .spool_dir = d->cfg->state_dir,
                    .authenticate = daemon_authenticate,
                    .authenticate_userdata = d};
    if (d->cluster) {
        deps.owner = daemon_e2b_owner;
        deps.forward = daemon_e2b_forward;
        deps.cluster_userdata = d;
        deps.envd_keys = daemon_e2b_envd_keys;
    }
    if (!c->enabled) {
        daemon_publish_e2b(d);
        return 0;
    }
    if (e2b_start(&deps, c, &d->e2b, errp) < 0)
        return -1;
    daemon_publish_e2b(d);
    const char *scheme = e2b_tls(d->e2b) ? "https" : "http";
    log_info("E2B API on %s://%s:%u, envd on %s://%s:%u (domain %s)", scheme, c->address,
             e2b_api_port(d->e2b), scheme, c->address, e2b_envd_port(d->e2b), c->domain);
    return 0;
}

/* Cluster mode: the host-to-host listener, once the faces it hands hops to run. It takes the
 * API's HttpConfig, so with [api] tls_cert/tls_key it serves HTTPS with the API's pair (and
 * its front door waits for a whole ClientHello), whatever [e2b] serves its clients with. */
static int
daemon_start_hop(Daemon *d, Error **errp)
{
    const ClusterConfig *c = &d->cfg->cluster;
    HttpConfig hc = d->cfg->http;
    ApiHopConfig hop = {.address = cluster_hop_address(c), .port = (uint16_t) c->hop_port,
                        .http = &hc};
    E2bFace f;

    if (!d->cluster)
        return 0;
    hc.body_budget = d->body_budget;
    hc.spool_dir = d->cfg->state_dir;
    hc.authenticate = daemon_authenticate; /* the hops' faces authenticate there too */
    hc.authenticate_userdata = d;
    if (d->e2b) {
        e2b_face(d->e2b, false, &f);
        hop.e2b_api = (ApiHopFaceSpec){f.guard, f.handler, d->e2b, f.max_body_bytes};
        e2b_face(d->e2b, true, &f);
        hop.e2b_envd = (ApiHopFaceSpec){f.guard, f.handler, d->e2b, f.max_body_bytes};
    }
    if (api_hop_start(d->api, &hop, errp) < 0)
        return -1;
    log_info("host-to-host listener on %s://%s:%u (advertised as %s)",
             hc.tls_cert_file ? "https" : "http", hop.address, api_hop_port(d->api),
             c->advertise_url);
    return 0;
}

/* The sessions' host: the real pool, guests and salvage service (their fakes are in
 * tests/unit/sessions_fake.c). */
static const SessionsHostOps daemon_sessions_host = {
    .status = pool_status,
    .set_on_idle = pool_set_on_idle,
    .take = pool_take,
    .release = pool_release,
    .recycle = pool_recycle,
    .hold_disk = pool_hold_disk,
    .unhold_disk = pool_unhold_disk,
    .keep = pool_keep,
    .adopt = pool_adopt,
    .hello = guest_hello,
    .send = guest_send,
    .send_backlog_bytes = guest_send_backlog_bytes,
    .name = guest_name,
    .workspace_path = guest_workspace_path,
    .disk_index = guest_disk_index,
    .salvage = extract_service_salvage,
    .salvage_status = extract_service_status,
};

static int
daemon_open_sessions(Daemon *d, Error **errp)
{
    SessionsHost host = {.ops = &daemon_sessions_host, .pool = d->pool, .extract = d->extract};
    return sessions_new(d->loop, d->session_q, &host, d->store, d->hub, &d->cfg->sessions,
                        &d->sessions, errp);
}

int
daemon_new(DaemonConfig *cfg, Daemon **ret, Error **errp)
{
    Daemon *d = calloc(1, sizeof(*d));
    if (!d)
        return error_set(errp, E_INTERNAL, ENOMEM, "daemon");
    d->cfg = cfg;
    d->state_fd = d->lock_fd = d->signal_fd = -1;
    signal(SIGPIPE, SIG_IGN);
    daemon_notify_new(&d->notify); /* unsets the environment: before any thread */
    /* Signals are blocked before any thread starts, so every thread inherits the mask. */
    if (daemon_lock_state(d, errp) < 0 || loop_new(&d->loop, errp) < 0 ||
        daemon_watch_signals(d, errp) < 0 || workq_new(d->loop, cfg->workers, &d->q, errp) < 0 ||
        workq_new(d->loop, SESSION_WORKERS, &d->session_q, errp) < 0 ||
        pool_new(d->loop, d->q, &cfg->pool, &d->pool, errp) < 0 || daemon_open_store(d, errp) < 0 ||
        daemon_open_extract(d, errp) < 0 || daemon_open_sessions(d, errp) < 0 ||
        daemon_open_cluster(d, errp) < 0) {
        daemon_free(d);
        return -1;
    }
    *ret = d;
    return 0;
}

/* The first turn of the loop, every listener accepting: the service manager may start what
 * waits for us (READY=1). */
static void
daemon_on_listening(Loop *l, void *userdata)
{
    Daemon *d = userdata;
    daemon_notify_ready(d->notify, l, d->pool);
}

int
daemon_run(Daemon *d)
{
    log_info("state in %s; %zu pool(s); accel mode %s", d->cfg->state_dir, d->cfg->pool.n_shapes,
             d->cfg->pool.accel == ACCEL_MODE_AUTO  ? "auto"
             : d->cfg->pool.accel == ACCEL_MODE_KVM ? "kvm"
                                                    : "tcg");
    _cleanup_error_ Error *err = NULL;
    sessions_start(d->sessions); /* first: it holds disks an earlier run left unsalvaged */
    pool_start(d->pool);
    extract_service_start(d->extract); /* launches once the pool's disks exist */
    if (daemon_start_api(d, &err) < 0 || daemon_start_e2b(d, &err) < 0 ||
        daemon_start_hop(d, &err) < 0) {
        log_error("%s", err->message);
        return 1;
    }
    d->status_timer = loop_add_timer(d->loop, now_usec(), daemon_on_status_timer, d);
    loop_add_timer(d->loop, now_usec(), daemon_on_listening, d);
    return loop_run(d->loop);
}

void
daemon_free(Daemon *d)
{
    if (!d)
        return;
    if (d->hub)
        eventhub_shutdown(d->hub); /* followers end */
    /* Forwarded transfers (the E2B faces' too) end while both servers still take answers;
     * then the host-to-host listener stops, before the faces it hands hops to. */
    api_stop_forwarding(d->api);
    e2b_stop(d->e2b); /* waits for connection threads; its pending loop calls never run */
    api_stop(d->api); /* the same: the loop no longer runs */
    http_budget_free(d->body_budget); /* no server uses it any more */
    workq_free(d->session_q);  /* then no job may complete into freed state */
    workq_free(d->q);
    sessions_free(d->sessions);
    extract_service_free(d->extract); /* what a stop left running: after the work queues */
    cluster_free(d->cluster); /* after the sessions: they settle in it while they stop */
    cluster_free(d->cluster_lookup); /* after the API: its lookups ran on it */
    store_readers_free(d->readers);
    store_close(d->store);
    eventhub_free(d->hub);
    free(d->db_path);
    pool_free(d->pool);
    loop_source_free(d->signal_src);
    daemon_notify_free(d->notify); /* cancels its timer: before the loop goes */
    loop_free(d->loop);
    safe_close(d->signal_fd);
    safe_close(d->lock_fd);
    safe_close(d->state_fd);
    free(d);
}
