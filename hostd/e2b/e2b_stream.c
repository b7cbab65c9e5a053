/* Server-streaming calls: process.Process/Start and Connect, filesystem.Filesystem/WatchDir.
 *
 * The handler posts to the loop thread, which starts the exec (or checks the process, or the
 * sandbox) and begins the stream (or answers the error); the stream then follows the
 * session's committed events from the store on the connection's own thread, exactly like the
 * native events route: an EventHub eventfd wakes it, nothing polls. Each message goes out as
 * its own Connect envelope and is flushed before the next one, so the SDK's onStdout sees
 * output as the guest produced it (events are committed within SESSION_COMMIT_DELAY_USEC). A
 * quiet stream sends a keepalive message every Keepalive-Ping-Interval seconds. The stream
 * ends with an end-stream envelope: {} after the process's end event, or an error:
 * deadline_exceeded (its Connect-Timeout-Ms passed and it was killed), unavailable (the
 * sandbox timed out). A sandbox killed (or ended otherwise) under a stream cuts it instead,
 * once what was queued is sent, without an end: at E2B the VM and its envd vanish mid-stream,
 * and the SDKs read exactly that as "the sandbox was killed" (the JS SDK: a ConnectError
 * `unknown` "terminated" and GET /health 502 make handleRpcErrorWithHealthCheck()'s
 * TimeoutError, e2b-dev/E2B packages/js-sdk/src/envd/rpc.ts; @e2b/code-interpreter: a closed
 * connection and isRunning() false, js/src/sandbox.ts handleRequestError()). A client that
 * goes away ends only its stream: the process runs on (commands.connect(pid) picks it up
 * again).
 *
 * The code interpreter's /execute (e2b_code.c) follows a code run the same way, as NDJSON
 * lines instead of envelopes and without keepalives; it ends after the run's code.done. A
 * client that goes away while its cell runs has the cell interrupted (its context stays
 * usable: the SDK's timeoutMs is only the client giving up), unless runs queued before it
 * in that context are still being served: those are someone else's cells. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e2b_internal.h"
#include "eventhub.h"
#include "timeutil.h"

#define FOLLOW_PAGE 256
#define KEEPALIVE_DEFAULT_S 50 /* what the SDK asks for */
#define KEEPALIVE_MAX_S 3600
#define CONNECT_TIMEOUT_MAX_MS (UINT64_C(24) * 3600 * 1000)

typedef enum { FOLLOW_PROCESS, FOLLOW_WATCH, FOLLOW_CODE } FollowKind;

typedef struct Follower {
    E2b *e;
    FollowKind kind;
    char session_id[E2B_SESSION_ID_BYTES];
    uint32_t pid; /* FOLLOW_PROCESS: its exec id */
    bool pty;     /* FOLLOW_PROCESS: on a terminal: its output is data.pty */
    E2bPath dir;  /* FOLLOW_WATCH */
    bool recursive, include_entry;
    uint32_t context, run;      /* FOLLOW_CODE */
    unsigned ahead, done_ahead; /* runs of the context before it: queued, since done */
    bool aborted;               /* FOLLOW_CODE: a line could not be queued: cut the stream */
    uint64_t after;             /* the last event seq read */
    int sub_fd;
    uint64_t keepalive_usec, last_send_usec;
    uint8_t *out; /* envelopes not yet sent */
    size_t out_len, out_off;
    bool finished; /* the end-stream envelope is queued */
    bool dropped;  /* the sandbox was killed: the connection is cut once the output is out */
} Follower;

static void
follower_free(void *userdata)
{
    Follower *f = userdata;
    if (!f)
        return;
    if (f->kind == FOLLOW_CODE && !f->finished && f->done_ahead >= f->ahead)
        e2b_code_interrupt(f->e, f->session_id, f->context); /* the client left mid-cell */
    eventhub_unsubscribe(f->e->d.hub, f->sub_fd);
    free(f->out);
    free(f);
}

/* Appends msg (stolen) as one NDJSON line; a line that cannot be queued cuts the stream
 * (the client sees a truncated body, never a silent gap). */
static void
queue_line(Follower *f, json_t *msg)
{
    _cleanup_free_ char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
    json_decref(msg);
    size_t n = text ? strlen(text) : 0;
    uint8_t *p = text ? realloc(f->out, f->out_len + n + 1) : NULL;
    if (!p) {
        f->aborted = f->finished = true;
        return;
    }
    f->out = p;
    memcpy(p + f->out_len, text, n);
    p[f->out_len + n] = '\n';
    f->out_len += n + 1;
}

/* Appends msg (stolen) as one envelope. A message that cannot be queued (out of memory)
 * ends the stream with an error instead: never a silent gap. */
static void
queue(Follower *f, uint8_t flags, json_t *msg)
{
    if (f->kind == FOLLOW_CODE) {
        queue_line(f, msg);
        return;
    }
    _cleanup_free_ char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
    json_decref(msg);
    size_t n = text ? strlen(text) : 0;
    uint8_t *p = text ? realloc(f->out, f->out_len + CONNECT_ENVELOPE_HDR_BYTES + n) : NULL;
    if (!p) {
        static const char oom[] = "{\"error\":{\"code\":\"resource_exhausted\",\"message\":"
                                  "\"out of memory\"}}";
        f->out_len = f->out_off = 0; /* what was queued is dropped with the error */
        if (!(p = realloc(f->out, CONNECT_ENVELOPE_HDR_BYTES + sizeof(oom) - 1)))
            return;
        f->out = p;
        connect_envelope_header(CONNECT_FLAG_END_STREAM, sizeof(oom) - 1, p);
        memcpy(p + CONNECT_ENVELOPE_HDR_BYTES, oom, sizeof(oom) - 1);
        f->out_len = CONNECT_ENVELOPE_HDR_BYTES + sizeof(oom) - 1;
        f->finished = true;
        return;
    }
    f->out = p;
    connect_envelope_header(flags, (uint32_t) n, p + f->out_len);
    memcpy(p + f->out_len + CONNECT_ENVELOPE_HDR_BYTES, text, n);
    f->out_len += CONNECT_ENVELOPE_HDR_BYTES + n;
}

static void
finish(Follower *f, bool ok, ConnectCode code, const char *message)
{
    if (f->finished)
        return;
    if (f->kind == FOLLOW_CODE) /* the SDK reads only an error; E2B's server says this too */
        queue_line(f, ok ? NULL
                         : json_pack("{s:s,s:s,s:s,s:s}", "type", "error", "name", "StockadeError",
                                     "value", message, "traceback", ""));
    if (f->kind == FOLLOW_CODE && !ok)
        queue_line(f, json_pack("{s:s}", "type", "unexpected_end_of_execution"));
    else if (f->kind != FOLLOW_CODE)
        queue(f, CONNECT_FLAG_END_STREAM, e2b_end_stream(ok, code, message));
    f->finished = true;
}

/* ------------------------------------------------------------------ events */

static void
on_exec_event(Follower *f, const EventRecord *ev, json_t *attrs)
{
    const char *t = ev->type;
    if (strcmp(t, "exec.stdout") == 0 || strcmp(t, "exec.stderr") == 0) {
        queue(f, 0,
              f->pty ? e2b_event_pty(ev->data, ev->data_len)
                     : e2b_event_data(strcmp(t, "exec.stderr") == 0, ev->data, ev->data_len));
    } else if (strcmp(t, "exec.exited") == 0) {
        const char *reason = json_string_value(json_object_get(attrs, "reason"));
        if (reason && strcmp(reason, "timed_out") == 0) {
            finish(f, false, CONNECT_DEADLINE_EXCEEDED,
                   "the command ran past its timeout "
                   "(Connect-Timeout-Ms) and was killed");
            return;
        }
        int code = (int) json_integer_value(json_object_get(attrs, "exit_code"));
        int signo = (int) json_integer_value(json_object_get(attrs, "signal"));
        queue(f, 0, e2b_event_end(code, signo, NULL));
        finish(f, true, CONNECT_UNKNOWN, NULL);
    } else if (strcmp(t, "exec.failed") == 0) {
        const char *msg = json_string_value(json_object_get(attrs, "message"));
        queue(f, 0, e2b_event_end(127, 0, msg ? msg : "the command could not start"));
        finish(f, true, CONNECT_UNKNOWN, NULL);
    }
}

/* A file.changed of the live mirror under the watched directory. */
static void
on_file_event(Follower *f, json_t *attrs)
{
    const char *path = json_string_value(json_object_get(attrs, "path"));
    const char *outcome = json_string_value(json_object_get(attrs, "mirror"));
    size_t dl = strlen(f->dir.rel);

    if (!path || !outcome)
        return;
    if (dl && (strncmp(path, f->dir.rel, dl) != 0 || path[dl] != '/'))
        return;
    const char *name = path + (dl ? dl + 1 : 0);
    if (!name[0] || (!f->recursive && strchr(name, '/')))
        return;
    bool removed = strcmp(outcome, "removed") == 0;
    json_t *entry = NULL;
    char shown[PATH_MAX_BYTES + 64];
    if (f->include_entry && !removed && e2b_path_show(&f->dir, name, shown, sizeof(shown)) == 0) {
        const char *base = strrchr(name, '/');
        E2bEntry en = {.name = base ? base + 1 : name,
                       .type = E2B_FILE_FILE,
                       .size = (uint64_t) json_integer_value(json_object_get(attrs, "size")),
                       .mode = (uint32_t) json_integer_value(json_object_get(attrs, "mode")),
                       .mtime_ns =
                           (uint64_t) json_integer_value(json_object_get(attrs, "mtime_ms")) *
                           1000000};
        entry = e2b_render_entry(&en, shown);
    }
    queue(f, 0, e2b_render_fs_event(name, removed, entry));
}

/* A code.* event of the followed context: the run's become lines; the runs before it are
 * counted as they finish (then the cell being run is this one). */
static void
on_code_event(Follower *f, const EventRecord *ev, json_t *attrs)
{
    json_int_t ctx = json_integer_value(json_object_get(attrs, "context"));
    json_int_t run = json_integer_value(json_object_get(attrs, "run"));
    const char *state = json_string_value(json_object_get(attrs, "state"));
    bool last = false;

    if (strncmp(ev->type, "code.", 5) != 0 || ctx != (json_int_t) f->context)
        return;
    if (strcmp(ev->type, "code.context") == 0 && state && strcmp(state, "deleted") == 0) {
        finish(f, false, CONNECT_UNKNOWN, "the code context was deleted");
    } else if (run == (json_int_t) f->run) {
        json_t *msg = e2b_code_event_message(ev->type, (const char *) ev->data, ev->data_len, attrs,
                                             ev->ts_usec, &last);
        if (msg)
            queue_line(f, msg);
        if (last)
            f->finished = true;
    } else if (strcmp(ev->type, "code.done") == 0 && run != 0) {
        f->done_ahead++;
    }
}

static void
on_event(Follower *f, const EventRecord *ev)
{
    /* attrs too deep to parse on this stack (a code.result stored before the kernel's lines
     * were bounded) read as none: such an event then matches no follower */
    json_t *attrs = store_event_attrs_parsable(ev) ? json_loads(ev->attrs, 0, NULL) : NULL;
    const char *state = json_string_value(json_object_get(attrs, "state"));
    SessionState st;

    if (strcmp(ev->type, "session.state") == 0 && state && session_state_from_name(state, &st) &&
        (st == ST_STOPPING || st == ST_ENDED)) {
        const char *reason = json_string_value(json_object_get(attrs, "reason"));
        char msg[160];
        snprintf(msg, sizeof(msg), "the sandbox stopped (%s)", reason ? reason : state);
        if (reason && strcmp(reason, "timed_out") == 0)
            finish(f, false, CONNECT_UNAVAILABLE, msg);
        else /* killed (or gone for another reason): its VM's streams just break at E2B */
            f->dropped = f->finished = true;
    } else if (f->kind == FOLLOW_PROCESS && ev->exec_id == f->pid) {
        on_exec_event(f, ev, attrs);
    } else if (f->kind == FOLLOW_WATCH && strcmp(ev->type, "file.changed") == 0) {
        on_file_event(f, attrs);
    } else if (f->kind == FOLLOW_CODE) {
        on_code_event(f, ev, attrs);
    }
    json_decref(attrs);
}

/* Reads the next page of events. Returns how many were read, -1 on a store error. */
static int
fill(Follower *f)
{
    EventRecord *v = NULL;
    size_t n = 0;
    Store *s = store_reader_acquire(f->e->d.readers);
    int r = store_events_read(s, f->session_id, f->after, FOLLOW_PAGE, &v, &n, NULL);
    store_reader_release(f->e->d.readers, s);
    if (r < 0)
        return -1;
    for (size_t i = 0; i < n && !f->finished; i++) {
        on_event(f, &v[i]);
        f->after = v[i].seq;
    }
    event_records_free(v, n);
    return (int) n;
}

/* True when the session ended and every event of it was read. */
static bool
session_over(Follower *f)
{
    uint64_t seq;
    bool ended;
    if (eventhub_peek(f->e->d.hub, f->session_id, &seq, &ended))
        return ended && seq <= f->after;
    return true; /* the hub forgot it: it ended long ago */
}

static ssize_t
drain(Follower *f, uint8_t *buf, size_t cap)
{
    size_t n = MIN(cap, f->out_len - f->out_off);
    memcpy(buf, f->out + f->out_off, n);
    f->out_off += n;
    if (f->out_off == f->out_len)
        f->out_off = f->out_len = 0;
    f->last_send_usec = now_usec();
    return (ssize_t) n;
}

static ssize_t
produce(HttpStream *st, void *userdata, uint8_t *buf, size_t cap)
{
    Follower *f = userdata;
    for (;;) {
        if (f->aborted)
            return -1;
        if (f->out_len > f->out_off)
            return drain(f, buf, cap);
        if (f->finished)
            return f->dropped ? -1 : 0;
        bool over = session_over(f); /* read first: no lost race */
        int n = fill(f);
        if (n < 0)
            finish(f, false, CONNECT_INTERNAL, "the session's events could not be read");
        if (n != 0 || f->finished)
            continue;
        if (over) {
            finish(f, false, CONNECT_UNAVAILABLE, "the sandbox stopped");
            continue;
        }
        bool quiet = f->kind == FOLLOW_CODE; /* NDJSON has no keepalive message */
        int w = http_stream_wait(st, f->sub_fd, quiet ? 0 : f->last_send_usec + f->keepalive_usec);
        if (w < 0)
            return -1; /* the client left: a process runs on, a cell is interrupted */
        if (w == 0) {
            queue(f, 0, e2b_event_keepalive(f->kind == FOLLOW_PROCESS));
            continue;
        }
        uint64_t drained;
        (void) !read(f->sub_fd, &drained, sizeof(drained));
    }
}

/* ------------------------------------------------------------------ answering */

/* An error before the stream began: 502 and 401 as HTTP statuses (the SDK reads those from
 * the status), anything else in an end-stream envelope, which keeps its message. */
static void
stream_error(HttpRequest *req, E2b *e, const Error *err)
{
    if (err->category == E_GUEST || err->category == E_UNAUTHORIZED) {
        e2b_rpc_error(req, err);
        return;
    }
    Follower *f = calloc(1, sizeof(*f));
    if (!f) {
        e2b_rpc_error(req, err);
        return;
    }
    f->e = e;
    f->sub_fd = -1;
    finish(f, false, connect_code_for(err->category), err->message);
    http_respond_stream(req, 200, "application/connect+json", produce, f, follower_free);
}

static uint64_t
keepalive_usec(HttpRequest *req)
{
    const char *h = http_header(req, "Keepalive-Ping-Interval");
    char *end = NULL;
    unsigned long s = h ? strtoul(h, &end, 10) : KEEPALIVE_DEFAULT_S;
    if (!h || !*h || *end || s < 1 || s > KEEPALIVE_MAX_S)
        s = KEEPALIVE_DEFAULT_S;
    return s * USEC_PER_SEC;
}

/* Streams the session's events after `after` (first, the messages already queued in f). */
static void
stream_begin(E2b *e, HttpRequest *req, Follower *f)
{
    _cleanup_error_ Error *err = NULL;
    f->e = e;
    f->keepalive_usec = keepalive_usec(req);
    f->last_send_usec = now_usec();
    if ((f->sub_fd = eventhub_subscribe(e->d.hub, f->session_id, &err)) < 0) {
        bool code = f->kind == FOLLOW_CODE;
        f->finished = true; /* nothing to interrupt: the stream never began */
        follower_free(f);
        if (code)
            e2b_files_error(req, err);
        else
            stream_error(req, e, err);
        return;
    }
    http_respond_stream(
        req, 200, f->kind == FOLLOW_CODE ? "application/x-ndjson" : "application/connect+json",
        produce, f, follower_free);
}

void
e2b_code_stream(E2b *e, HttpRequest *req, const char *session_id, uint32_t context, uint32_t run,
                uint64_t after, unsigned ahead)
{
    Follower *f = calloc(1, sizeof(*f));
    if (!f) {
        http_respond_json(req, 500, e2b_render_api_error(500, "out of memory"));
        return;
    }
    f->kind = FOLLOW_CODE;
    f->sub_fd = -1;
    snprintf(f->session_id, sizeof(f->session_id), "%s", session_id);
    f->context = context;
    f->run = run;
    f->after = after;
    f->ahead = ahead;
    stream_begin(e, req, f);
}

/* ------------------------------------------------------------------ Start, Connect */

typedef struct StreamCall {
    E2bCall c;
    E2bEnvdAuth auth;
    /* Start */
    ExecSpec spec;
    char *tag;
    json_t *config;
    /* Connect */
    E2bSelector sel;
    char sel_tag[E2B_TAG_MAX_BYTES + 1];
    Follower *f; /* the stream's once it begins; zeroed (FOLLOW_PROCESS), WatchDir's filled in */
    /* WatchDir: the directory, the loop's own copy (f may go to a reply on the connection
     * thread while the stat is under way) */
    E2bPath dir;
    /* out */
    char session_id[E2B_SESSION_ID_BYTES];
    uint32_t pid;
    uint64_t after;
} StreamCall;

static void
stream_call_free(E2bCall *c)
{
    StreamCall *sc = (StreamCall *) c;
    e2b_envd_auth_clear(&sc->auth);
    e2b_argv_free(sc->spec.argv, sc->spec.argc);
    for (size_t i = 0; i < sc->spec.n_env; i++)
        free(sc->spec.env[i].name), free(sc->spec.env[i].value);
    free(sc->spec.env);
    free(sc->spec.cwd);
    free(sc->tag);
    json_decref(sc->config);
    free(sc->f); /* never began: nothing queued, no subscription */
}

static uint64_t
committed_seq(E2b *e, const char *session_id)
{
    uint64_t seq;
    bool ended;
    return eventhub_peek(e->d.hub, session_id, &seq, &ended) ? seq : 0;
}

static void
start_on_loop(E2bCall *c)
{
    StreamCall *sc = (StreamCall *) c;
    _cleanup_error_ Error *err = NULL;
    E2bSandbox *sb = e2b_envd_sandbox(c->e, &sc->auth, &err);
    uint32_t exec_id;

    if (sb) {
        sc->after = committed_seq(c->e, sb->session_id); /* before the exec's first event */
        if (sessions_exec(c->e->d.sessions, NULL, sb->session_id, &sc->spec, &exec_id, &err) == 0 &&
            e2b_proc_add(c->e, sb, exec_id, sc->tag, TAKE_PTR(sc->config), &err) == 0) {
            E2bSelector sel = {.pid = exec_id};
            E2bProc *p = e2b_proc_find(sb, &sel);
            if (p)
                p->pty = sc->spec.pty_cols != 0;
            sc->pid = exec_id;
            memcpy(sc->session_id, sb->session_id, sizeof(sc->session_id));
        }
    }
    e2b_call_done(c, err);
}

/* Connect-Timeout-Ms: the process's lifetime (none: as long as the sandbox may live). */
static uint64_t
exec_timeout_usec(E2b *e, HttpRequest *req)
{
    const char *h = http_header(req, "Connect-Timeout-Ms");
    char *end = NULL;
    unsigned long long ms = h ? strtoull(h, &end, 10) : 0;
    if (!h || !*h || *end || ms == 0 || ms > CONNECT_TIMEOUT_MAX_MS)
        return e->d.max_timeout_usec;
    return MIN(ms * USEC_PER_MSEC, e->d.max_timeout_usec);
}

static int
start_spec(E2b *e, HttpRequest *req, json_t *msg, StreamCall *sc, Error **errp)
{
    E2bStart st;
    char cwd[PATH_MAX_BYTES + 16];
    const char *why, *k;
    json_t *v;

    if (e2b_parse_start(msg, &st, errp) < 0 ||
        e2b_parse_pty(msg, &sc->spec.pty_cols, &sc->spec.pty_rows, errp) < 0 ||
        e2b_command_argv(st.cmd, st.args, &sc->spec.argv, &sc->spec.argc, errp) < 0)
        return -1;
    if (e2b_process_cwd_map(st.cwd, cwd, sizeof(cwd), &why) < 0)
        return error_set(errp, E_INVALID, 0, "process.cwd: %s", why);
    if ((cwd[0] && !(sc->spec.cwd = strdup(cwd))) || (st.tag && !(sc->tag = strdup(st.tag))) ||
        !(sc->spec.env = calloc(json_object_size(st.envs) + 2, sizeof(EnvPair))) ||
        !(sc->config = e2b_start_config(&st)))
        return error_set(errp, E_INTERNAL, ENOMEM, "start");
    json_object_foreach(st.envs, k, v)
    {
        EnvPair *p = &sc->spec.env[sc->spec.n_env++];
        if (!(p->name = strdup(k)) || !(p->value = strdup(json_string_value(v))))
            return error_set(errp, E_INTERNAL, ENOMEM, "start");
    }
    /* E2B's HOME, where the workspace is mounted too (a caller's own wins; none is added to a
     * full set, which then keeps the session's) */
    if (!json_object_get(st.envs, "HOME") && sc->spec.n_env < E2B_ENV_MAX) {
        EnvPair *p = &sc->spec.env[sc->spec.n_env++];
        if (!(p->name = strdup("HOME")) || !(p->value = strdup(E2B_HOME_ALIAS)))
            return error_set(errp, E_INTERNAL, ENOMEM, "start");
    }
    sc->spec.stdin_open = st.stdin_open || sc->spec.pty_cols;
    sc->spec.as_root = sc->auth.root; /* Authorization: Basic root: (the SDK's user: 'root') */
    sc->spec.timeout_usec = exec_timeout_usec(e, req);
    return 0;
}

/* The error as the stream's only frame, or a follower from sc->after on, opened with its start
 * message: the process's (Start, Connect), or WatchDir's. */
static void
stream_reply(E2bCall *c, HttpRequest *req, const Error *err)
{
    StreamCall *sc = (StreamCall *) c;
    Follower *f = TAKE_PTR(sc->f);
    if (err) {
        free(f);
        stream_error(req, c->e, err);
        return;
    }
    f->after = sc->after;
    f->sub_fd = -1;
    memcpy(f->session_id, sc->session_id, sizeof(f->session_id));
    if (f->kind == FOLLOW_PROCESS) {
        f->pid = sc->pid;
        queue(f, 0, e2b_event_start(sc->pid));
    } else {
        queue(f, 0, json_pack("{s:{}}", "start"));
    }
    stream_begin(c->e, req, f);
}

/* Posts sc (with fn) unless err: then answers it here. Takes sc. */
static void
stream_post(E2b *e, HttpRequest *req, StreamCall *sc, E2bCallFn fn, E2bReplyFn reply,
            const Error *err)
{
    if (err || !sc || !sc->f) {
        Error oom = {.category = E_INTERNAL};
        snprintf(oom.message, sizeof(oom.message), "out of memory");
        if (sc) {
            sc->c.e = e; /* reply's; and e2b_call_unref() then counts under e's lock */
            sc->c.refs = 1;
            reply(&sc->c, req, err ? err : &oom);
        } else {
            stream_error(req, e, err ? err : &oom);
        }
        e2b_call_unref(sc ? &sc->c : NULL);
        return;
    }
    e2b_post(e, req, &sc->c, fn, reply, E2B_CALL_TIMEOUT_USEC);
}

void
e2b_rpc_start(E2b *e, HttpRequest *req, E2bEnvdAuth *auth, json_t *msg)
{
    _cleanup_error_ Error *err = NULL;
    StreamCall *sc = e2b_call_new(sizeof(*sc), stream_call_free);

    if (!sc || !(sc->f = calloc(1, sizeof(*sc->f)))) {
        error_set(&err, E_INTERNAL, ENOMEM, "start");
    } else {
        sc->auth = *auth;
        *auth = (E2bEnvdAuth){0};
        if (start_spec(e, req, msg, sc, &err) == 0)
            sc->f->pty = sc->spec.pty_cols != 0;
    }
    stream_post(e, req, sc, start_on_loop, stream_reply, err);
}

static void
connect_on_loop(E2bCall *c)
{
    StreamCall *sc = (StreamCall *) c;
    _cleanup_error_ Error *err = NULL;
    SessionsExecState st;
    E2bSandbox *sb = e2b_envd_sandbox(c->e, &sc->auth, &err);
    E2bProc *p = sb ? e2b_proc_find(sb, &sc->sel) : NULL;

    if (sb &&
        (!p || sessions_exec_state(c->e->d.sessions, NULL, sb->session_id, p->pid, &st, NULL) < 0 ||
         st == SESSIONS_EXEC_DONE)) {
        error_set(&err, E_NOT_FOUND, 0, "no running process with that %s",
                  sc->sel.tag ? "tag" : "pid");
    } else if (sb) {
        sc->after = committed_seq(c->e, sb->session_id); /* output from now on */
        sc->pid = p->pid;
        sc->f->pty = p->pty;
        memcpy(sc->session_id, sb->session_id, sizeof(sc->session_id));
    }
    e2b_call_done(c, err);
}

void
e2b_rpc_connect(E2b *e, HttpRequest *req, E2bEnvdAuth *auth, json_t *msg)
{
    _cleanup_error_ Error *err = NULL;
    StreamCall *sc = e2b_call_new(sizeof(*sc), stream_call_free);

    if (!sc || !(sc->f = calloc(1, sizeof(*sc->f)))) {
        error_set(&err, E_INTERNAL, ENOMEM, "connect");
    } else if (e2b_parse_selector(msg, &sc->sel, &err) == 0) {
        if (sc->sel.tag) {
            snprintf(sc->sel_tag, sizeof(sc->sel_tag), "%s", sc->sel.tag);
            sc->sel.tag = sc->sel_tag;
        }
        sc->auth = *auth;
        *auth = (E2bEnvdAuth){0};
    }
    stream_post(e, req, sc, connect_on_loop, stream_reply, err);
}

/* ------------------------------------------------------------------ WatchDir */

/* The stat of the watched path, answered as envd's watchHandler answers (e2b-dev/infra
 * packages/envd/internal/services/filesystem/watch.go): before any message, a missing path is
 * not_found "path P not found: stat P: no such file or directory" (os.Stat's error), anything
 * but a directory (a link is followed, as os.Stat does) invalid_argument "path P not a
 * directory: %!w(<nil>)" (its fmt.Errorf wraps a nil error). */
static void
watch_stat_done(void *userdata, const Error *err, SessionsFsEntry *v, size_t n, bool truncated)
{
    StreamCall *sc = userdata;
    _cleanup_error_ Error *out = NULL;
    char shown[PATH_MAX_BYTES + 64];
    (void) truncated;

    if (e2b_path_show(&sc->dir, NULL, shown, sizeof(shown)) < 0)
        snprintf(shown, sizeof(shown), "%s", sc->dir.base); /* map()ped: it fits */
    bool dir = n == 1 && (v[0].type == SESSIONS_FS_DIR || (v[0].type == SESSIONS_FS_SYMLINK &&
                                                           v[0].target_type == SESSIONS_FS_DIR));
    if (err && err->category == E_NOT_FOUND)
        error_set(&out, E_NOT_FOUND, 0, "path %s not found: stat %s: no such file or directory",
                  shown, shown);
    else if (!err && !dir)
        error_set(&out, E_INVALID, 0, "path %s not a directory: %%!w(<nil>)", shown);
    sessions_fs_entries_free(v, n);
    e2b_call_done(&sc->c, out ? out : err);
}

static void
watch_on_loop(E2bCall *c)
{
    StreamCall *sc = (StreamCall *) c;
    _cleanup_error_ Error *err = NULL;
    E2bSandbox *sb = e2b_envd_sandbox(c->e, &sc->auth, &err);
    if (sb) {
        sc->after = committed_seq(c->e, sb->session_id); /* changes from the call on */
        memcpy(sc->session_id, sb->session_id, sizeof(sc->session_id));
        if (sessions_fs_op(c->e->d.sessions, NULL, sb->session_id, SESSIONS_FS_STAT, sc->dir.rel,
                           NULL, watch_stat_done, sc, &err) == 0)
            return; /* watch_stat_done() finishes the call */
    }
    e2b_call_done(c, err);
}

/* Changes come from the runner's live mirror of /workspace: a file closed after writing is
 * EVENT_TYPE_WRITE, a removed path EVENT_TYPE_REMOVE. Directories made, renames and mode
 * changes are not reported (README.md). */
void
e2b_rpc_watch_dir(E2b *e, HttpRequest *req, E2bEnvdAuth *auth, json_t *msg)
{
    _cleanup_error_ Error *err = NULL;
    StreamCall *sc = e2b_call_new(sizeof(*sc), stream_call_free);
    Follower *f = sc ? (sc->f = calloc(1, sizeof(*sc->f))) : NULL;
    json_t *path = json_object_get(msg, "path");
    const char *why = NULL;

    if (!f) {
        error_set(&err, E_INTERNAL, ENOMEM, "watch");
    } else if (!json_is_string(path) ||
               e2b_path_map(json_string_value(path), true, &f->dir, &why) < 0) {
        error_set(&err, E_INVALID, 0, "path: %s", why ? why : "must be a string");
    } else {
        sc->auth = *auth;
        *auth = (E2bEnvdAuth){0};
        f->kind = FOLLOW_WATCH;
        sc->dir = f->dir;
        f->recursive = json_is_true(json_object_get(msg, "recursive"));
        f->include_entry = json_is_true(json_object_get(msg, "includeEntry")) ||
                           json_is_true(json_object_get(msg, "include_entry"));
    }
    stream_post(e, req, sc, watch_on_loop, stream_reply, err);
}
