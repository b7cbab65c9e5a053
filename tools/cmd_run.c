/* stockade run: a one-shot task. Files in (inline in POST /v1/tasks), the command's output
 * streamed live from its events, the workspace downloaded and extracted safely, a one-line
 * summary on stderr, and the task's exit code as ours. Ctrl-C cancels the task, keeps
 * following until it ended and still downloads what was saved (then exits 130); a second
 * Ctrl-C stops waiting. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "download.h"
#include "events.h"
#include "output.h"
#include "upload.h"
#include "watch.h"

static const char run_help[] =
    "Usage: stockade run [OPTIONS] -- CMD [ARGS...]\n"
    "Runs CMD once in a fresh single-use guest (a task), prints its stdout and stderr as they\n"
    "arrive, downloads the workspace, prints a one-line summary on stderr and exits with\n"
    "CMD's exit code.\n\n"
    "  -p, --pool NAME        guest pool to use (default " RUN_DEFAULT_POOL "; see stockade pool)\n"
    "  -t, --timeout SECONDS  bound on the whole task (default 120, at most 86400)\n"
    "  -e, --env NAME=VALUE   environment variable for CMD (repeatable)\n"
    "  -u, --upload PATH      file or folder to put into /workspace before CMD runs\n"
    "                         (repeatable; a folder's contents land at the workspace root with\n"
    "                         their relative paths; symlinks and special files are skipped;\n"
    "                         at most 32 MiB per file, 44 MiB and 1024 files in all)\n"
    "  -d, --download DIR     where the workspace goes afterwards (default ./stockade-ID/);\n"
    "                         DIR must be new or empty\n"
    "      --no-download      leave the files on the daemon (stockade cp ID: DIR gets them)\n"
    "      --cwd DIR          working directory in the guest (relative to /workspace)\n"
    "      --json             events as NDJSON on stdout, then one {\"type\":\"cli.result\"} line\n"
    "  -h, --help             this help\n\n"
    "Only regular files and directories are downloaded, beneath DIR: no absolute paths, no\n"
    "'..', no symlinks, devices or FIFOs (skipped and counted in the summary).\n\n"
    "Ctrl-C cancels the task (the guest is destroyed), waits until it ended and still\n"
    "downloads what it saved, then exits 130. A second Ctrl-C stops waiting at once.\n\n"
    "Exit status:\n"
    "  N    the command's own exit code (0..123 and the rest of 0..255 it chose)\n"
    "  124  the task timed out (--timeout)\n"
    "  125  the task could not start (the daemon refused it: no such pool, quota; no guest\n"
    "       in time; the program could not be run) or the daemon failed or could not be\n"
    "       reached\n"
    "  126  bad usage: refused before anything was sent (the message names the fix)\n"
    "  127  the program was not found in the guest (its PATH)\n"
    "  128+N  the command was killed by signal N\n"
    "  130  interrupted by Ctrl-C (the task was cancelled), or cancelled by someone else\n";

typedef struct RunState {
    Cli *cli;
    Client *client;
    Watch watch;
    char id[ARGS_ID_MAX_BYTES + 1];
    int handled;    /* Ctrl-Cs acted upon */
    bool cancelled; /* we cancelled the task */
    Progress progress;
} RunState;

static bool
run_interrupted(void *userdata)
{
    RunState *st = userdata;
    return cli_interrupts > st->handled;
}

static void
run_progress(void *userdata, uint64_t down, uint64_t down_total, uint64_t up, uint64_t up_total)
{
    RunState *st = userdata;
    (void) down;
    (void) down_total;
    if (up_total > 0 && up < up_total)
        progress_update(&st->progress, up, up_total);
}

static int
run_on_event(void *userdata, json_t *ev, uint64_t seq, Error **errp)
{
    RunState *st = userdata;
    (void) seq;
    return watch_event(&st->watch, ev, errp);
}

static void
run_on_resume(void *userdata, uint64_t after, const char *why)
{
    RunState *st = userdata;
    if (!st->cli->json)
        cli_warn(st->cli, "lost the event stream (%s); resuming after event %" PRIu64, why, after);
}

/* The POST /v1/tasks body. Symlinks and special files in uploaded folders are skipped: says so. */
static int
run_body(Cli *cli, const RunArgs *a, json_t **ret, Error **errp)
{
    UploadList u;
    json_t *files = NULL;

    upload_list_init(&u, RUN_UPLOAD_FILE_MAX_BYTES, RUN_UPLOAD_TOTAL_MAX_BYTES);
    for (size_t i = 0; i < a->n_uploads; i++)
        if (upload_list_add(&u, a->uploads[i], "", errp) < 0) {
            upload_list_free(&u);
            return -1;
        }
    if (u.skipped)
        cli_warn(cli, "%zu symlink%s or special file%s not uploaded (e.g. %s)", u.skipped,
                 u.skipped == 1 ? "" : "s", u.skipped == 1 ? "" : "s", u.first_skipped);
    int r = upload_files_json(&u, &files, errp);
    upload_list_free(&u);
    if (r < 0)
        return -1;
    json_t *argv = args_argv_json(a->argv, a->argc);
    json_t *body = json_pack("{s:s,s:o,s:I,s:O,s:o}", "pool", a->pool, "argv", argv, "timeout_s",
                             (json_int_t) a->timeout_s, "env", a->env, "files", files);
    if (body && a->cwd)
        json_object_set_new(body, "cwd", json_string(a->cwd));
    if (!body)
        return error_set(errp, E_INVALID, 0, "the command line is not valid UTF-8");
    *ret = body;
    return 0;
}

static int
run_create(RunState *st, json_t *body, Error **errp)
{
    json_t *ans = NULL;
    client_set_progress(st->client, run_progress, st);
    int r = client_json(st->client, "POST", "/v1/tasks", body, &ans, errp);
    client_set_progress(st->client, NULL, NULL);
    progress_end(&st->progress);
    if (r < 0)
        return error_prefix(errp, "create the task");
    const char *id = event_str(ans, "id", "");
    if (!args_id_ok(id)) {
        json_decref(ans);
        return error_set(errp, E_INTERNAL, 0, "the daemon answered without a valid task id");
    }
    snprintf(st->id, sizeof(st->id), "%s", id);
    json_decref(ans);
    return 0;
}

static void
run_cancel(RunState *st)
{
    char path[128];
    _cleanup_error_ Error *err = NULL;

    snprintf(path, sizeof(path), "/v1/tasks/%s/cancel", st->id);
    if (!st->cli->json)
        fprintf(stderr,
                "%s run: cancelling %s; waiting until it ended to download what it "
                "saved (Ctrl-C again to stop waiting)\n",
                st->cli->prog, st->id);
    st->handled = cli_interrupts; /* the POST below must not be interrupted by this Ctrl-C */
    if (client_json(st->client, "POST", path, NULL, NULL, &err) < 0)
        cli_warn(st->cli, "cancel %s: %s", st->id, err->message);
    st->cancelled = true;
}

/* Follows the task's events until it ended. -1: failed; 1: the user stopped waiting. */
static int
run_follow(RunState *st, Error **errp)
{
    Follow f = {.client = st->client,
                .follow = true,
                .on_event = run_on_event,
                .on_resume = run_on_resume,
                .userdata = st};
    snprintf(f.id, sizeof(f.id), "%s", st->id);
    for (;;) {
        FollowEnd end;
        int r = follow_events(&f, &end, errp);
        if (r < 0 || end != FOLLOW_INTERRUPTED) {
            follow_free(&f);
            return r;
        }
        if (st->cancelled) {
            follow_free(&f);
            return 1;
        }
        run_cancel(st);
    }
}

typedef struct Final {
    int64_t duration_ms;
    uint64_t files, bytes;
    bool truncated;
} Final;

static void
run_final(RunState *st, Final *fin)
{
    char path[128];
    json_t *s = NULL;
    int64_t t0, t1;

    *fin = (Final){.duration_ms = -1,
                   .files = st->watch.art_files,
                   .bytes = st->watch.art_bytes,
                   .truncated = st->watch.art_truncated};
    snprintf(path, sizeof(path), "/v1/tasks/%s", st->id);
    if (client_json(st->client, "GET", path, NULL, &s, NULL) < 0)
        return;
    if (parse_rfc3339_ms(event_str(s, "created_at", ""), &t0) == 0 &&
        parse_rfc3339_ms(event_str(s, "ended_at", ""), &t1) == 0 && t1 >= t0)
        fin->duration_ms = t1 - t0;
    json_t *art = json_object_get(s, "artifacts");
    if (json_is_object(art)) {
        fin->files = (uint64_t) MAX(event_int(art, "files", 0), 0);
        fin->bytes = (uint64_t) MAX(event_int(art, "bytes", 0), 0);
        fin->truncated = json_is_true(json_object_get(art, "truncated"));
    }
    json_t *code = json_object_get(s, "exit_code");
    if (json_is_integer(code) && !st->watch.has_session_exit) {
        st->watch.has_session_exit = true;
        st->watch.session_exit = (int) json_integer_value(code);
    }
    const char *reason = event_str(s, "end_reason", "");
    if (!st->watch.end_reason[0] && strlen(reason) < sizeof(st->watch.end_reason) &&
        strspn(reason, "abcdefghijklmnopqrstuvwxyz_") == strlen(reason))
        snprintf(st->watch.end_reason, sizeof(st->watch.end_reason), "%s", reason);
    json_decref(s);
}

static int
run_download(RunState *st, const char *dir, const Final *fin, DownloadResult *res, Error **errp)
{
    char path[128];
    snprintf(path, sizeof(path), "/v1/tasks/%s/workspace", st->id);
    st->progress =
        (Progress){.enabled = st->cli->tty_err && !st->cli->json, .label = "downloading"};
    return download_workspace(st->client, path, dir, &st->progress, fin->bytes, res, errp);
}

static void
run_summary_text(RunState *st, const Final *fin, const char *dir, const DownloadResult *res,
                 bool downloaded, int code)
{
    const Watch *w = &st->watch;
    char dur[24], size[16];
    format_duration_ms(fin->duration_ms, dur, sizeof(dur));
    format_bytes(downloaded ? res->bytes : fin->bytes, size, sizeof(size));
    Color c = code == 0 ? COLOR_GREEN : COLOR_RED;
    fprintf(stderr, "%s: %s %s%s%s", st->cli->prog, st->id, st->cli->color_err ? color_code(c) : "",
            watch_outcome(w, st->cancelled), st->cli->color_err ? COLOR_RESET : "");
    if (w->failed)
        fprintf(stderr, " (%s: %s)",
                w->not_found ? "no such program in the guest" : "the command could not start",
                w->fail_message);
    else if (w->guest_error[0])
        fprintf(stderr, " (guest error: %s)", w->guest_error);
    fprintf(stderr, ", exit %d, %s", code, dur);
    if (downloaded)
        fprintf(stderr, "; %u file%s (%s) saved in %s%s", res->files, res->files == 1 ? "" : "s",
                size, dir, dir[0] && dir[strlen(dir) - 1] == '/' ? "" : "/");
    else if (fin->files > 0)
        fprintf(stderr, "; %llu file%s (%s) not downloaded (stockade cp %s: DIR gets them)",
                (unsigned long long) fin->files, fin->files == 1 ? "" : "s", size, st->id);
    else
        fprintf(stderr, "; no files");
    if (downloaded && res->skipped)
        fprintf(stderr, "; %u unsafe entries skipped", res->skipped);
    if (fin->truncated || (downloaded && res->truncated))
        fprintf(stderr, "; TRUNCATED (a size or count cap was hit)");
    fputc('\n', stderr);
}

static void
run_summary_json(RunState *st, const Final *fin, const char *dir, const DownloadResult *res,
                 bool downloaded, int code)
{
    json_t *o = json_pack("{s:s,s:s,s:s,s:i,s:I}", "type", "cli.result", "id", st->id, "outcome",
                          watch_outcome(&st->watch, st->cancelled), "exit_code", code,
                          "duration_ms", (json_int_t) fin->duration_ms);
    if (o && downloaded)
        json_object_set_new(o, "download",
                            json_pack("{s:s,s:i,s:I,s:i,s:b}", "dir", dir, "files",
                                      (int) res->files, "bytes", (json_int_t) res->bytes, "skipped",
                                      (int) res->skipped, "truncated", res->truncated));
    if (o) {
        json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
        fputc('\n', stdout);
    }
    json_decref(o);
}

/* After the task ended: final record, download, summary. Returns the exit code. */
static int
run_finish(RunState *st, const RunArgs *a)
{
    Final fin;
    DownloadResult res = {0};
    _cleanup_free_ char *dflt = NULL;
    const char *dir = a->download;
    bool downloaded = false;

    run_final(st, &fin);
    int code = watch_exit_code(&st->watch, st->cancelled);
    if (!dir && asprintf(&dflt, "./stockade-%s", st->id) >= 0)
        dir = dflt;
    if (!a->no_download && dir && (fin.files > 0 || a->download)) {
        _cleanup_error_ Error *err = NULL;
        int r = run_download(st, dir, &fin, &res, &err);
        downloaded = r == 0 || res.files > 0;
        if (r < 0) {
            cli_warn(st->cli, "download into %s: %s", dir, err->message);
            if (!res.interrupted && code == 0)
                code = CLI_EXIT_DAEMON;
            if (res.interrupted)
                code = CLI_EXIT_INTERRUPTED;
        }
    }
    if (st->cli->json)
        run_summary_json(st, &fin, dir, &res, downloaded, code);
    else
        run_summary_text(st, &fin, dir, &res, downloaded, code);
    return code;
}

static int
run_task(Cli *cli, RunArgs *a)
{
    _cleanup_error_ Error *err = NULL;
    _cleanup_json_ json_t *body = NULL;
    RunState st = {.cli = cli};

    if (!a->no_download && a->download && download_dir_check(a->download, &err) < 0)
        return cli_usage_error(cli, "%s", err->message);
    if (run_body(cli, a, &body, &err) < 0)
        return cli_report(cli, err, true);
    if (!(st.client = cli_client(cli, &err)))
        return cli_report(cli, err, true);
    watch_init(&st.watch, STDOUT_FILENO, STDERR_FILENO);
    st.watch.json_out = cli->json ? stdout : NULL;
    st.progress = (Progress){.enabled = cli->tty_err && !cli->json, .label = "uploading"};
    cli_catch_sigint();
    if (run_create(&st, body, &err) < 0)
        return cli_report(cli, err, true);
    client_set_interrupt(st.client, run_interrupted, &st);
    if (cli_interrupts > 0) /* Ctrl-C while the task was being created */
        run_cancel(&st);
    int r = run_follow(&st, &err);
    if (r < 0)
        return cli_report(cli, err, true);
    if (r > 0) {
        fprintf(stderr,
                "%s run: stopped waiting; %s was cancelled. Its files: stockade cp %s: "
                "DIR\n",
                cli->prog, st.id, st.id);
        return CLI_EXIT_INTERRUPTED;
    }
    return run_finish(&st, a);
}

int
cmd_run(Cli *cli, int argc, char **argv)
{
    _cleanup_error_ Error *err = NULL;
    RunArgs a;

    cli->verb = "run";
    if (run_parse_args(cli, argc, argv, &a, &err) < 0) {
        run_args_clear(&a);
        return cli_usage_error(cli, "%s", err->message);
    }
    int code = cli->help ? cli_print_help(run_help) : run_task(cli, &a);
    run_args_clear(&a);
    return code;
}
