/* Stateful code contexts: a kernel exec per context, its stdout reassembled into lines
 * (bounded by CODE_LINE_MAX_BYTES; an overlong line is dropped up to its newline), each line
 * checked by code_wire.c and turned into code.* events of the run at the head of the
 * context's queue. A line for any other run is dropped: the kernel serves runs in order, so
 * only a misbehaving guest sends one. See sessions.h for the events. Loop thread only. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "code_wire.h"
#include "runner_limits.h"
#include "session_internal.h"

/* A result the kernel's line may carry must be readable by the faces that render its event. */
_Static_assert(CODE_LINE_MAX_DEPTH == STORE_EVENT_ATTRS_MAX_DEPTH,
               "the readers' bound is the deepest event attrs written");

typedef struct CodeContext CodeContext;

struct CodeContext {
    uint32_t id, exec_id; /* exec_id 0: no kernel (exited); the next run starts one */
    CodeLanguage lang;
    char *cwd; /* NULL = /workspace */
    EnvPair *env;
    size_t n_env;
    uint32_t runs[SESSIONS_CODE_QUEUED_MAX]; /* runs[0] is being served */
    size_t n_runs;
    unsigned results; /* of runs[0] */
    char *line;       /* stdout not yet ended by a newline */
    size_t line_len;
    bool line_overflow; /* dropping up to the next newline */
    CodeContext *next;
};

struct SessionCode {
    CodeContext *contexts;
    uint32_t next_context_id, next_run_id;
    uint32_t default_context[CODE_LANG_COUNT]; /* the context a run names by language alone */
};

static void kernel_over(Session *s, uint32_t exec_id);
static bool kernel_output(Session *s, uint32_t exec_id, const Stockade__Runner__Output *o);
/* A kernel's exec is read here, not recorded as exec.stdout (session_exec.c). */
static const SessionExecSink kernel_sink = {kernel_output, kernel_over};

static void
context_free(CodeContext *c)
{
    free(c->cwd);
    for (size_t i = 0; i < c->n_env; i++) {
        free(c->env[i].name);
        free(c->env[i].value);
    }
    free(c->env);
    free(c->line);
    free(c);
}

int
session_code_new(Session *s)
{
    return (s->code = calloc(1, sizeof(*s->code))) ? 0 : -1;
}

void
session_code_free(Session *s)
{
    if (!s->code)
        return;
    while (s->code->contexts) {
        CodeContext *c = s->code->contexts;
        s->code->contexts = c->next;
        context_free(c);
    }
    free(s->code);
    s->code = NULL;
}

static CodeContext *
context_by_id(Session *s, uint32_t id)
{
    for (CodeContext *c = s->code->contexts; c; c = c->next)
        if (c->id == id)
            return c;
    return NULL;
}

static CodeContext *
context_by_exec(Session *s, uint32_t exec_id)
{
    for (CodeContext *c = exec_id ? s->code->contexts : NULL; c; c = c->next)
        if (c->exec_id == exec_id)
            return c;
    return NULL;
}

static void
context_event(Session *s, CodeContext *c, const char *state)
{
    session_event(s, "code.context", c->exec_id, NULL, 0,
                  json_pack("{s:I,s:s}", "context", (json_int_t) c->id, "state", state));
}

static json_t *
run_attrs(CodeContext *c, uint32_t run, json_t *attrs /* stolen, may be NULL */)
{
    json_t *o = attrs ? attrs : json_object();
    json_object_set_new(o, "context", json_integer(c->id));
    json_object_set_new(o, "run", json_integer(run));
    return o;
}

/* Each language's kernel, beside python's (POOL_CODE_KERNEL_PATH). JavaScript's protocol
 * leaves on fd 3 and its fd 1 is the exec's stderr, so that a child process writing to its
 * inherited stdout cannot corrupt it (kernel.js's header). */
#define CODE_KERNEL_DIR "/usr/lib/stockade/"
static const struct {
    const char *argv[3];
    size_t argc;
} kernels[CODE_LANG_COUNT] = {
    [CODE_LANG_PYTHON] = {{POOL_CODE_KERNEL_ARGV}, 2},
    [CODE_LANG_JAVASCRIPT] = {{"/bin/sh", "-c",
                               "exec 3>&1 1>&2; exec node " CODE_KERNEL_DIR "kernel.js"},
                              3},
    [CODE_LANG_BASH] = {{"python3", CODE_KERNEL_DIR "kernel_bash.py"}, 2},
};

static int
kernel_start(Session *s, CodeContext *c, Error **errp)
{
    char *argv[ELEMENTSOF(kernels[0].argv)];
    for (size_t i = 0; i < kernels[c->lang].argc; i++)
        argv[i] = (char *) kernels[c->lang].argv[i];
    /* adopt: the first python context of a guest whose pool pre-started the kernel takes that
     * one, imports done; any other starts its own (runner.proto Prestart, Exec.adopt) */
    ExecSpec spec = {.argv = argv,
                     .argc = kernels[c->lang].argc,
                     .env = c->env,
                     .n_env = c->n_env,
                     .cwd = c->cwd,
                     .timeout_usec = s->mgr->cfg.max_timeout_usec,
                     .stdin_open = true,
                     .adopt = c->lang == CODE_LANG_PYTHON};
    uint32_t exec_id;
    if (session_exec_start(s, &spec, false, &kernel_sink, &exec_id, errp) < 0)
        return -1;
    c->exec_id = exec_id;
    c->line_len = 0;
    c->line_overflow = false;
    return 0;
}

static void
kernel_signal(Session *s, CodeContext *c, int signo)
{
    Stockade__Runner__Signal sig = STOCKADE__RUNNER__SIGNAL__INIT;
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    sig.exec_id = c->exec_id;
    sig.signo = signo;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_SIGNAL;
    m.signal = &sig;
    (void) session_send(s, &m, NULL, NULL); /* a lost guest ends the session anyway */
}

/* Every queued run ends with an error: its kernel is gone. */
static void
context_fail_runs(Session *s, CodeContext *c, const char *name, const char *value)
{
    for (size_t i = 0; i < c->n_runs; i++) {
        session_event(
            s, "code.error", c->exec_id, NULL, 0,
            run_attrs(c, c->runs[i],
                      json_pack("{s:s,s:s,s:s}", "name", name, "value", value, "traceback", "")));
        session_event(s, "code.done", c->exec_id, NULL, 0,
                      run_attrs(c, c->runs[i], json_pack("{s:n}", "execution_count")));
    }
    c->n_runs = 0;
    c->results = 0;
}

/* Kills the context's kernel, if it has one (its exit then belongs to no context); its
 * queued runs end with name. */
static void
context_kill(Session *s, CodeContext *c, const char *name, const char *value)
{
    if (!c->exec_id)
        return;
    kernel_signal(s, c, SIGKILL);
    context_fail_runs(s, c, name, value);
}

/* The kernel exited (or never started): its queued runs fail; the next run starts another. A
 * kernel killed by a restart or a delete belongs to no context any more. */
static void
kernel_over(Session *s, uint32_t exec_id)
{
    CodeContext *c = context_by_exec(s, exec_id);
    if (!c)
        return;
    context_fail_runs(s, c, "KernelExited", "the context's interpreter exited");
    context_event(s, c, "exited");
    c->exec_id = 0;
}

static void
line_drop(Session *s, CodeContext *c, const char *why)
{
    session_guest_event(s, "code.line_dropped",
                        json_pack("{s:I,s:s}", "context", (json_int_t) c->id, "reason", why));
}

static void
on_run_msg(Session *s, CodeContext *c, CodeMsg *m)
{
    if (c->n_runs == 0 || m->run != c->runs[0]) {
        line_drop(s, c, "a line for a run that is not being served");
        return;
    }
    switch (m->type) {
    case CODE_MSG_STDOUT:
    case CODE_MSG_STDERR:
        session_event(s, m->type == CODE_MSG_STDOUT ? "code.stdout" : "code.stderr", c->exec_id,
                      m->text, m->text_len, run_attrs(c, m->run, NULL));
        break;
    case CODE_MSG_RESULT:
        if (c->results++ >= CODE_RESULTS_MAX) {
            line_drop(s, c, "more results than CODE_RESULTS_MAX");
            break;
        }
        session_event(s, "code.result", c->exec_id, NULL, 0,
                      run_attrs(c, m->run, TAKE_PTR(m->attrs)));
        break;
    case CODE_MSG_ERROR:
        session_event(s, "code.error", c->exec_id, NULL, 0,
                      run_attrs(c, m->run, TAKE_PTR(m->attrs)));
        break;
    default: /* CODE_MSG_DONE */
        session_event(s, "code.done", c->exec_id, NULL, 0,
                      run_attrs(c, m->run, TAKE_PTR(m->attrs)));
        memmove(c->runs, c->runs + 1, (c->n_runs - 1) * sizeof(c->runs[0]));
        c->n_runs--;
        c->results = 0;
        break;
    }
}

static void
on_line(Session *s, CodeContext *c, const char *line, size_t len)
{
    _cleanup_error_ Error *err = NULL;
    CodeMsg m;

    if (code_msg_parse(line, len, &m, &err) < 0) {
        line_drop(s, c, err->message);
        return;
    }
    if (m.type == CODE_MSG_READY)
        context_event(s, c, "ready");
    else
        on_run_msg(s, c, &m);
    code_msg_clear(&m);
}

/* Appends to the pending line; a line that would pass CODE_LINE_MAX_BYTES is dropped. */
static void
on_stdout(Session *s, CodeContext *c, const uint8_t *p, size_t n)
{
    while (n > 0) {
        const uint8_t *nl = memchr(p, '\n', n);
        size_t take = nl ? (size_t) (nl - p) : n;
        if (!c->line_overflow && c->line_len + take > CODE_LINE_MAX_BYTES) {
            c->line_overflow = true;
            line_drop(s, c, "a line over CODE_LINE_MAX_BYTES");
        }
        if (!c->line_overflow) {
            char *grown = realloc(c->line, c->line_len + take + 1);
            if (!grown) {
                c->line_overflow = true;
                line_drop(s, c, "out of memory");
            } else {
                c->line = grown;
                memcpy(c->line + c->line_len, p, take);
                c->line_len += take;
            }
        }
        if (!nl)
            return;
        if (!c->line_overflow)
            on_line(s, c, c->line, c->line_len);
        c->line_len = 0;
        c->line_overflow = false;
        p += take + 1;
        n -= take + 1;
    }
}

/* A kernel's output: its stdout is the line protocol; false for one no context has any more
 * (recorded as an exec's). */
static bool
kernel_output(Session *s, uint32_t exec_id, const Stockade__Runner__Output *o)
{
    CodeContext *c = context_by_exec(s, exec_id);
    if (!c)
        return false;
    if (o->stream == STOCKADE__RUNNER__OUTPUT__STREAM__STDERR) /* fd-level output of a cell */
        session_event(s, "code.stderr", c->exec_id, o->data.data, o->data.len,
                      run_attrs(c, c->n_runs ? c->runs[0] : 0, NULL));
    else
        on_stdout(s, c, o->data.data, o->data.len);
    return true;
}

/* ------------------------------------------------------------------ entry points */

static int
env_copy(CodeContext *c, const EnvPair *env, size_t n)
{
    if (n == 0)
        return 0;
    if (!(c->env = calloc(n, sizeof(*c->env))))
        return -1;
    for (size_t i = 0; i < n; i++, c->n_env++)
        if (!(c->env[i].name = strdup(env[i].name)) || !(c->env[i].value = strdup(env[i].value))) {
            free(c->env[i].name);
            return -1;
        }
    return 0;
}

static CodeContext *
context_new(Session *s, CodeLanguage lang, const char *cwd, const EnvPair *env, size_t n_env,
            Error **errp)
{
    unsigned n = 0;
    for (CodeContext *c = s->code->contexts; c; c = c->next)
        n++;
    if (n >= SESSIONS_CODE_CONTEXTS_MAX)
        return error_set(errp, E_QUOTA, 0, "at most %d code contexts a session",
                         SESSIONS_CODE_CONTEXTS_MAX),
               NULL;
    char *argv[] = {"python3"};
    if (argv_check(argv, 1, env, n_env, cwd, errp) < 0)
        return NULL;
    CodeContext *c = calloc(1, sizeof(*c));
    if (!c || (cwd && !(c->cwd = strdup(cwd))) || env_copy(c, env, n_env) < 0) {
        if (c)
            context_free(c);
        return error_set(errp, E_INTERNAL, ENOMEM, "code context"), NULL;
    }
    c->id = ++s->code->next_context_id;
    c->lang = lang;
    if (kernel_start(s, c, errp) < 0) {
        context_free(c);
        return NULL;
    }
    c->next = s->code->contexts;
    s->code->contexts = c;
    context_event(s, c, "started");
    return c;
}

/* The language's default context, made on first use (in cwd; NULL: the workspace). */
static CodeContext *
default_context(Session *s, CodeLanguage lang, const char *cwd, Error **errp)
{
    CodeContext *c = context_by_id(s, s->code->default_context[lang]);
    if (!c && (c = context_new(s, lang, cwd, NULL, 0, errp)))
        s->code->default_context[lang] = c->id;
    return c;
}

static Session *
code_session(Sessions *m, const char *tenant, const char *id, Error **errp)
{
    Session *s = session_running(m, tenant, id, errp);
    if (s && s->spec.is_task)
        return error_set(errp, E_CONFLICT, 0, "a task runs its own command only"), NULL;
    return s;
}

static CodeContext *
code_context(Sessions *m, const char *tenant, const char *id, uint32_t context, Session **ret_s,
             Error **errp)
{
    Session *s = code_session(m, tenant, id, errp);
    if (!s)
        return NULL;
    CodeContext *c = context_by_id(s, context);
    if (!c)
        return error_set(errp, E_NOT_FOUND, 0, "no code context %u", context), NULL;
    *ret_s = s;
    return c;
}

int
sessions_code_context_new(Sessions *m, const char *tenant, const char *id, CodeLanguage lang,
                          const char *cwd, const EnvPair *env, size_t n_env, uint32_t *ret_context,
                          Error **errp)
{
    Session *s = code_session(m, tenant, id, errp);
    CodeContext *c = s ? context_new(s, lang, cwd, env, n_env, errp) : NULL;
    if (!c)
        return -1;
    *ret_context = c->id;
    return 0;
}

int
sessions_code_context_restart(Sessions *m, const char *tenant, const char *id, uint32_t context,
                              Error **errp)
{
    Session *s;
    CodeContext *c = code_context(m, tenant, id, context, &s, errp);
    if (!c)
        return -1;
    context_kill(s, c, "KernelRestarted", "the context was restarted");
    if (kernel_start(s, c, errp) < 0)
        return -1;
    context_event(s, c, "restarted");
    return 0;
}

int
sessions_code_context_delete(Sessions *m, const char *tenant, const char *id, uint32_t context,
                             Error **errp)
{
    Session *s;
    CodeContext *c = code_context(m, tenant, id, context, &s, errp);
    if (!c)
        return -1;
    context_kill(s, c, "KernelDeleted", "the context was deleted");
    context_event(s, c, "deleted");
    for (CodeContext **pp = &s->code->contexts; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    if (s->code->default_context[c->lang] == c->id)
        s->code->default_context[c->lang] = 0;
    context_free(c);
    return 0;
}

int
sessions_code_interrupt(Sessions *m, const char *tenant, const char *id, uint32_t context,
                        Error **errp)
{
    Session *s;
    CodeContext *c = code_context(m, tenant, id, context, &s, errp);
    if (!c)
        return -1;
    if (c->exec_id && c->n_runs)
        kernel_signal(s, c, SIGINT);
    return 0;
}

int
sessions_code_contexts(Sessions *m, const char *tenant, const char *id, json_t **ret, Error **errp)
{
    Session *s = code_session(m, tenant, id, errp);
    if (!s)
        return -1;
    json_t *a = json_array();
    for (CodeContext *c = s->code->contexts; c; c = c->next)
        json_array_append_new(
            a, json_pack("{s:I,s:s,s:I,s:s,s:I,s:b}", "context", (json_int_t) c->id, "language",
                         code_language_name(c->lang), "exec_id", (json_int_t) c->exec_id, "cwd",
                         c->cwd ? c->cwd : "/workspace", "queued", (json_int_t) c->n_runs,
                         "default", c->id == s->code->default_context[c->lang]));
    *ret = a;
    return 0;
}

int
sessions_code_default_contexts(Sessions *m, const char *tenant, const char *id,
                               const CodeLanguage *langs, size_t n, const char *cwd, Error **errp)
{
    Session *s = code_session(m, tenant, id, errp);
    if (!s)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (!default_context(s, langs[i], cwd, errp))
            return -1;
    return 0;
}

/* Stdin in chunks the runner takes; the kernel reads up to the newline. */
static int
kernel_write(Session *s, CodeContext *c, const char *line, size_t len, Error **errp)
{
    for (size_t off = 0; off < len; off += STDIN_CHUNK_MAX_BYTES) {
        Stockade__Runner__Stdin in = STOCKADE__RUNNER__STDIN__INIT;
        HostMsg msg = STOCKADE__RUNNER__HOST_MSG__INIT;
        in.exec_id = c->exec_id;
        in.data.data = (uint8_t *) line + off;
        in.data.len = MIN(len - off, (size_t) STDIN_CHUNK_MAX_BYTES);
        msg.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_STDIN;
        msg.stdin = &in;
        if (session_send(s, &msg, NULL, errp) < 0)
            return -1;
    }
    return 0;
}

static CodeContext *
run_context(Session *s, uint32_t context, CodeLanguage lang, Error **errp)
{
    if (context == 0) {
        CodeContext *c = default_context(s, lang, NULL, errp);
        if (c && c->exec_id == 0 && kernel_start(s, c, errp) < 0)
            return NULL;
        return c;
    }
    CodeContext *c = context_by_id(s, context);
    if (!c)
        return error_set(errp, E_NOT_FOUND, 0, "no code context %u", context), NULL;
    if (c->exec_id == 0 && kernel_start(s, c, errp) < 0) /* it exited: a fresh interpreter */
        return NULL;
    return c;
}

int
sessions_code_run(Sessions *m, const char *tenant, const char *id, uint32_t context,
                  CodeLanguage lang, const char *code, size_t len, uint64_t timeout_ms, json_t *env,
                  SessionsCodeRun *ret, Error **errp)
{
    Session *s = code_session(m, tenant, id, errp);
    if (!s)
        return -1;
    if (len > CODE_SOURCE_MAX_BYTES || timeout_ms > CODE_TIMEOUT_MAX_MS)
        return error_set(errp, E_INVALID, 0, "code over %u bytes or timeout over %llu ms",
                         CODE_SOURCE_MAX_BYTES, (unsigned long long) CODE_TIMEOUT_MAX_MS);
    CodeContext *c = run_context(s, context, lang, errp);
    if (!c)
        return -1;
    if (c->n_runs >= SESSIONS_CODE_QUEUED_MAX)
        return error_set(errp, E_QUOTA, 0,
                         "at most %d runs in a context, the one being served included",
                         SESSIONS_CODE_QUEUED_MAX);
    uint32_t run = s->code->next_run_id + 1;
    size_t n;
    _cleanup_free_ char *line = code_request_line(run, code, len, timeout_ms, env, &n);
    if (!line)
        return error_set(errp, E_INVALID, 0, "code must be UTF-8 text");
    uint64_t after = s->rec.last_seq;
    if (kernel_write(s, c, line, n, errp) < 0)
        return -1;
    s->code->next_run_id = run;
    c->runs[c->n_runs++] = run;
    session_event(s, "code.requested", c->exec_id, NULL, 0,
                  run_attrs(c, run, json_pack("{s:I}", "timeout_ms", (json_int_t) timeout_ms)));
    *ret =
        (SessionsCodeRun){.context = c->id, .run = run, .exec_id = c->exec_id, .after_seq = after};
    return 0;
}
