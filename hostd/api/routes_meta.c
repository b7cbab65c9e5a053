/* GET /metrics (Prometheus text format 0.0.4), /v1/health, /v1/pool. Counts of sessions by
 * state come from the store (reader, connection thread); pool and session counters from the
 * loop thread, where they live. Every label value passes label_value() (the format's escapes
 * of '\\', '"' and newline), names from config and constants alike. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"

typedef struct {
    uint64_t by_state[ST_COUNT_]; /* every recorded state, by the store's names */
} MetricsCtx;

static void
histogram_text(FILE *f, const char *name, const char *help, const Histogram *h)
{
    uint64_t cum = 0;
    fprintf(f, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    for (int i = 0; i < HISTOGRAM_BUCKETS; i++) {
        cum += h->buckets[i];
        if (histogram_bounds_usec[i] == UINT64_MAX)
            fprintf(f, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long) cum);
        else
            fprintf(f, "%s_bucket{le=\"%g\"} %llu\n", name, (double) histogram_bounds_usec[i] / 1e6,
                    (unsigned long long) cum);
    }
    fprintf(f, "%s_sum %.6f\n%s_count %llu\n", name, (double) h->sum_usec / 1e6, name,
            (unsigned long long) h->count);
}

static void
counter(FILE *f, const char *name, const char *help, uint64_t v)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name,
            (unsigned long long) v);
}

/* A label value as the text format writes it: '\\', '"' and newline escaped, any other
 * control byte dropped (a value is text to a scraper, never a line break). */
static void
label_value(FILE *f, const char *v)
{
    for (const unsigned char *p = (const unsigned char *) v; *p; p++) {
        if (*p == '\\' || *p == '"')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p >= 0x20 && *p != 0x7f)
            fputc(*p, f);
    }
}

/* name{label="value"} v */
static void
labelled(FILE *f, const char *name, const char *label, const char *value, uint64_t v)
{
    fprintf(f, "%s{%s=\"", name, label);
    label_value(f, value);
    fprintf(f, "\"} %llu\n", (unsigned long long) v);
}

static void
pool_capacity_text(FILE *f, const PoolStatus *st)
{
    fprintf(f, "# HELP stockade_pool_slots Guests each pool can hold at once (its capacity).\n"
               "# TYPE stockade_pool_slots gauge\n");
    for (size_t i = 0; i < st->n_shapes; i++)
        labelled(f, "stockade_pool_slots", "pool", st->shapes[i].name, st->shapes[i].slots);
    fprintf(f, "# HELP stockade_pool_snapshots_ready Slots whose snapshot (or clone of the "
               "template) is ready.\n# TYPE stockade_pool_snapshots_ready gauge\n");
    for (size_t i = 0; i < st->n_shapes; i++)
        labelled(f, "stockade_pool_snapshots_ready", "pool", st->shapes[i].name,
                 st->shapes[i].snapshots_ready);
}

/* Per end reason and per refusing quota: one series for every name of the store's and the
 * admission's tables, zeros included, so a rate() has a series before the first event. */
static void
sessions_reason_text(FILE *f, const SessionsStats *ss)
{
    fprintf(f, "# HELP stockade_sessions_ended_total Sessions ended this run, by end reason.\n"
               "# TYPE stockade_sessions_ended_total counter\n");
    for (SessionEndReason r = SESSION_END_NONE + 1; r < SESSION_END_COUNT_; r++)
        labelled(f, "stockade_sessions_ended_total", "reason", session_end_reason_name(r),
                 ss->ended_by_reason[r]);
    fprintf(f, "# HELP stockade_admission_refusals_total Session creations refused by a tenant "
               "quota (429), by quota.\n# TYPE stockade_admission_refusals_total counter\n");
    for (AdmitLimit l = ADMIT_OK + 1; l < _ADMIT_LIMIT_MAX; l++)
        labelled(f, "stockade_admission_refusals_total", "quota", admit_limit_name(l),
                 ss->admission_refusals[l]);
}

static void
build_info_text(FILE *f, const PoolStatus *st)
{
    fprintf(f, "# HELP stockade_build_info The daemon's version and guest memory mode; always 1."
               "\n# TYPE stockade_build_info gauge\nstockade_build_info{version=\"");
    label_value(f, STOCKADE_VERSION);
    fprintf(f, "\",guest_memory=\"%s\"} 1\n",
            st->guest_memory == POOL_MEMORY_TEMPLATE ? "template" : "copy");
}

static void
pool_text(FILE *f, const PoolStatus *st)
{
    fprintf(f, "# HELP stockade_pool_guests Guests per pool and state.\n"
               "# TYPE stockade_pool_guests gauge\n");
    for (size_t i = 0; i < st->n_shapes; i++) {
        const PoolShapeStatus *s = &st->shapes[i];
        const struct {
            const char *state;
            unsigned v;
        } rows[] = {{"idle", s->idle},
                    {"busy", s->busy},
                    {"starting", s->starting},
                    {"draining", s->draining}};
        for (size_t k = 0; k < ELEMENTSOF(rows); k++) {
            fputs("stockade_pool_guests{pool=\"", f);
            label_value(f, s->name);
            fprintf(f, "\",state=\"%s\"} %u\n", rows[k].state, rows[k].v);
        }
    }
    fprintf(f, "# HELP stockade_pool_warm_target Idle guests each pool keeps ready.\n"
               "# TYPE stockade_pool_warm_target gauge\n");
    for (size_t i = 0; i < st->n_shapes; i++)
        labelled(f, "stockade_pool_warm_target", "pool", st->shapes[i].name, st->shapes[i].warm);
    pool_capacity_text(f, st);
    fprintf(f,
            "# HELP stockade_accel_kvm 1 when guests run under KVM, 0 under TCG.\n"
            "# TYPE stockade_accel_kvm gauge\nstockade_accel_kvm %d\n",
            st->accel == ACCEL_KVM);
    counter(f, "stockade_pool_restores_total", "Guests restored from snapshots.", st->restores);
    counter(f, "stockade_pool_restore_failures_total", "Restores that failed.",
            st->restore_failures);
    counter(f, "stockade_pool_wedged_total", "Guests destroyed for not answering pings.",
            st->wedged);
    counter(f, "stockade_pool_broken_total", "Guests destroyed for breaking the protocol.",
            st->broken);
    counter(f, "stockade_pool_prepare_failures_total",
            "Restored guests whose Prepare (workspace mount, warm-up) failed or timed out.",
            st->prepare_failures);
    counter(f, "stockade_accel_probes_total",
            "KVM probe boots of accel=auto (not pool guests; 0 with a cached verdict).",
            st->accel_probes);
    counter(f, "stockade_accel_probe_failures_total",
            "KVM probes that failed, so TCG was chosen (a verdict on KVM, not a pool failure).",
            st->accel_probe_failures);
    histogram_text(f, "stockade_restore_seconds", "Restore requested to runner Ready.",
                   &st->restore_to_ready);
    histogram_text(f, "stockade_boot_seconds", "Cold boot to runner Ready (snapshots).",
                   &st->boot_to_ready);
    histogram_text(f, "stockade_destroy_seconds", "Destroy requested to QEMU gone.",
                   &st->destroy_to_gone);
}

/* The body budget every listener shares (hostd/http): what it holds, what its bounds refused. */
static void
body_budget_text(FILE *f, const HttpBudget *b)
{
    HttpBudgetStats st;

    http_budget_stats(b, &st);
    fprintf(f,
            "# HELP stockade_http_body_bytes Request bodies held now, over every listener.\n"
            "# TYPE stockade_http_body_bytes gauge\nstockade_http_body_bytes %zu\n"
            "# HELP stockade_http_body_refused_total Request bodies refused (503, or cut mid-body "
            "if chunked): the body budget was spent, or their caller held its share of it.\n"
            "# TYPE stockade_http_body_refused_total counter\n"
            "stockade_http_body_refused_total{bound=\"budget\"} %llu\n"
            "stockade_http_body_refused_total{bound=\"share\"} %llu\n",
            st.used_bytes, (unsigned long long) st.refused_full,
            (unsigned long long) st.refused_share);
    counter(f, "stockade_http_slow_bodies_cut_total",
            "Connections cut because their body came in below the minimum rate.", st.slow_cut);
}

enum {
    RC_OTHER,
    RC_HEALTH,
    RC_METRICS,
    RC_POOL,
    RC_SESSIONS,
    RC_TASKS,
    RC_EXEC,
    RC_CODE,
    RC_FILES,
    RC_EVENTS,
    RC_ADMIN,
    RC_COUNT_,
};
static const char *const route_class_names[RC_COUNT_] = {
    [RC_OTHER] = "other",   [RC_HEALTH] = "health",     [RC_METRICS] = "metrics",
    [RC_POOL] = "pool",     [RC_SESSIONS] = "sessions", [RC_TASKS] = "tasks",
    [RC_EXEC] = "exec",     [RC_CODE] = "code",         [RC_FILES] = "files",
    [RC_EVENTS] = "events", [RC_ADMIN] = "admin",
};

/* What a session's or task's sub-resource (segments[3]) is about. */
static unsigned
session_part_class(const char *part, unsigned whole)
{
    static const struct {
        const char *name;
        unsigned cls;
    } parts[] = {{"exec", RC_EXEC},     {"execs", RC_EXEC},  {"code", RC_CODE},
                 {"contexts", RC_CODE}, {"files", RC_FILES}, {"workspace", RC_FILES},
                 {"events", RC_EVENTS}};
    for (size_t i = 0; i < ELEMENTSOF(parts); i++)
        if (strcmp(part, parts[i].name) == 0)
            return parts[i].cls;
    return whole;
}

unsigned
api_route_class(const char *const *seg, size_t n)
{
    if (n == 1 && strcmp(seg[0], "metrics") == 0)
        return RC_METRICS;
    if (n < 2 || strcmp(seg[0], "v1") != 0)
        return RC_OTHER;
    if (strcmp(seg[1], "health") == 0)
        return RC_HEALTH;
    if (strcmp(seg[1], "pool") == 0)
        return RC_POOL;
    if (strcmp(seg[1], "admin") == 0)
        return RC_ADMIN;
    if (strcmp(seg[1], "sessions") == 0 || strcmp(seg[1], "tasks") == 0) {
        unsigned whole = seg[1][0] == 's' ? RC_SESSIONS : RC_TASKS;
        return n >= 4 ? session_part_class(seg[3], whole) : whole;
    }
    return RC_OTHER;
}

/* stockade_http_requests_total{class,status}: the API's listeners (TCP and unix), every class
 * and status hundred 2xx..5xx, zeros included. */
static void
requests_text(FILE *f, HttpServer *http)
{
    fprintf(f, "# HELP stockade_http_requests_total Requests the API answered, by route class "
               "and status.\n# TYPE stockade_http_requests_total counter\n");
    for (unsigned cls = 0; cls < RC_COUNT_; cls++)
        for (unsigned h = 2; h < HTTP_STATUS_CLASSES; h++)
            fprintf(f, "stockade_http_requests_total{class=\"%s\",status=\"%uxx\"} %llu\n",
                    route_class_names[cls], h,
                    (unsigned long long) http_server_requests(http, cls, h));
}

static void
metrics_on_loop(ApiCtx *c)
{
    MetricsCtx *m = c->extra;
    PoolStatus ps;
    SessionsStats ss;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    c->api->d.pool_status(c->api->d.pool_userdata, &ps);
    sessions_stats(c->api->d.sessions, &ss);
    if (f) {
        build_info_text(f, &ps);
        pool_text(f, &ps);
        fprintf(f, "# HELP stockade_sessions Sessions by state.\n"
                   "# TYPE stockade_sessions gauge\n");
        for (SessionState i = ST_PENDING; i < ST_COUNT_; i++)
            fprintf(f, "stockade_sessions{state=\"%s\"} %llu\n", session_state_name(i),
                    (unsigned long long) m->by_state[i]);
        counter(f, "stockade_sessions_created_total", "Sessions and tasks created.", ss.created);
        counter(f, "stockade_cancels_total", "Sessions cancelled.", ss.cancels);
        sessions_reason_text(f, &ss);
        counter(f, "stockade_timeouts_total", "Sessions ended by their timeout.", ss.timeouts);
        counter(f, "stockade_extraction_bytes_total", "Bytes salvaged from workspace disks.",
                ss.extraction_bytes);
        counter(f, "stockade_extraction_failures_total", "Salvages that failed.",
                ss.extraction_failures);
        fprintf(f,
                "# HELP stockade_artifacts_total Sessions whose files were brought out, by "
                "path: over the channel at a clean end, or salvaged from the disk.\n"
                "# TYPE stockade_artifacts_total counter\n"
                "stockade_artifacts_total{via=\"channel\"} %llu\n"
                "stockade_artifacts_total{via=\"salvage\"} %llu\n",
                (unsigned long long) ss.artifacts_channel,
                (unsigned long long) ss.artifacts_salvage);
        counter(f, "stockade_finalize_fallbacks_total",
                "Clean ends whose finalize over the channel failed, so the disk was salvaged.",
                ss.finalize_fallbacks);
        histogram_text(f, "stockade_handout_seconds", "Session created to guest ready.",
                       &ss.handout);
        histogram_text(f, "stockade_extraction_seconds", "Salvage of a workspace disk.",
                       &ss.extraction);
        fprintf(f,
                "# HELP stockade_extraction_appliance_up 1 when the extraction appliance is up.\n"
                "# TYPE stockade_extraction_appliance_up gauge\n"
                "stockade_extraction_appliance_up %d\n",
                strcmp(ss.appliance_state, "up") == 0);
        counter(f, "stockade_extraction_appliance_launches_total",
                "Extraction appliance launches that came up.", ss.appliance_launches);
        counter(f, "stockade_extraction_appliance_launch_failures_total",
                "Extraction appliance launches that failed (retried).",
                ss.appliance_launch_failures);
        fprintf(f,
                "# HELP stockade_extraction_appliance_launch_seconds The last launch's duration.\n"
                "# TYPE stockade_extraction_appliance_launch_seconds gauge\n"
                "stockade_extraction_appliance_launch_seconds %.3f\n",
                (double) ss.appliance_launch_usec / 1e6);
        api_forward_metrics(c->api->fwd, f);
        body_budget_text(f, http_server_budget(c->api->http));
        requests_text(f, c->api->http);
        fclose(f);
    }
    free(m);
    http_respond_bytes(c->req, 200, "text/plain; version=0.0.4", text ? text : "", text ? len : 0);
    free(text);
    api_ctx_done(c);
}

void
route_metrics(ApiCtx *c)
{
    MetricsCtx *m = calloc(1, sizeof(*m));
    if (!m) {
        api_reply_errorf(c, E_INTERNAL, "out of memory");
        return;
    }
    Store *s = store_reader_acquire(c->api->d.readers);
    (void) store_count_by_state(s, m->by_state, NULL);
    store_reader_release(c->api->d.readers, s);
    c->extra = m;
    api_on_loop(c, metrics_on_loop);
}

static json_t *
pool_json(const PoolStatus *st)
{
    json_t *pools = json_array();
    for (size_t i = 0; i < st->n_shapes; i++) {
        const PoolShapeStatus *s = &st->shapes[i];
        json_array_append_new(
            pools,
            json_pack("{s:s,s:s?,s:s?,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:s}", "name", s->name,
                      "image", s->image, "content_hash", s->content_hash, "vcpus", s->vcpus,
                      "memory_mib", s->memory_mib, "warm", s->warm, "slots", s->slots, "idle",
                      s->idle, "busy", s->busy, "starting", s->starting, "draining", s->draining,
                      "snapshots_ready", s->snapshots_ready, "code_kernel", s->code_kernel));
    }
    json_t *probe = json_pack("{s:I,s:I}", "runs", (json_int_t) st->accel_probes, "failures",
                              (json_int_t) st->accel_probe_failures);
    json_t *guests = json_pack(
        "{s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "restores", (json_int_t) st->restores, "restore_failures",
        (json_int_t) st->restore_failures, "prepare_failures", (json_int_t) st->prepare_failures,
        "boots", (json_int_t) st->boots, "destroys", (json_int_t) st->destroys, "wedged",
        (json_int_t) st->wedged, "broken", (json_int_t) st->broken);
    return json_pack("{s:s,s:b,s:s,s:s,s:s,s:o,s:o,s:o}", "accel", accel_to_string(st->accel),
                     "accel_decided", st->accel_decided, "accel_reason", st->accel_reason,
                     "guest_memory", pool_guest_memory_to_string(st->guest_memory),
                     "guest_memory_reason", st->guest_memory_reason, "accel_probe", probe, "guests",
                     guests, "pools", pools);
}

/* The extraction appliance that salvages workspaces (its launch starts with the daemon). */
static json_t *
extraction_json(const SessionsStats *ss)
{
    return json_pack("{s:s,s:s,s:I,s:I,s:I}", "state", ss->appliance_state, "accel",
                     ss->appliance_force_tcg ? "tcg" : "kvm", "launch_ms",
                     (json_int_t) (ss->appliance_launch_usec / 1000), "launches",
                     (json_int_t) ss->appliance_launches, "launch_failures",
                     (json_int_t) ss->appliance_launch_failures);
}

static void
pool_on_loop(ApiCtx *c)
{
    PoolStatus st;
    SessionsStats ss;
    c->api->d.pool_status(c->api->d.pool_userdata, &st);
    sessions_stats(c->api->d.sessions, &ss);
    json_t *o = pool_json(&st);
    json_object_set_new(o, "extraction", extraction_json(&ss));
    if (c->extra) { /* health: the short form */
        json_t *h =
            json_pack("{s:s,s:s,s:b,s:b}", "status", ss.draining ? "draining" : "ok", "version",
                      STOCKADE_VERSION, "accel_decided", st.accel_decided, "draining", ss.draining);
        json_object_set(h, "accel", json_object_get(o, "accel"));
        json_decref(o);
        o = h;
    }
    api_reply_json(c, 200, o);
}

void
route_pool(ApiCtx *c)
{
    api_on_loop(c, pool_on_loop);
}

void
route_health(ApiCtx *c)
{
    c->extra = (void *) 1;
    api_on_loop(c, pool_on_loop);
}
