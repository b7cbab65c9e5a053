/* Pure command-line pieces shared by the verbs, and the parsers of the verbs with the richest
 * command lines (run, exec), exposed so unit tests can drive them. Nothing here prints; a bad
 * argument is E_INVALID with a message that names the fix. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "error.h"

#define ARGS_ENV_MAX 128 /* the daemon's limit on variables */
#define ARGS_ENV_NAME_MAX_BYTES 256
#define ARGS_UPLOADS_MAX 64
#define ARGS_ID_MAX_BYTES 64
#define ARGS_TIMEOUT_MAX_S 86400 /* the daemon's [sessions] max_timeout_s ceiling */
#define RUN_DEFAULT_POOL "python"
#define RUN_DEFAULT_TIMEOUT_S 120
#define WORKSPACE_ROOT "/workspace"

/* A global option (or -h) met by a verb's getopt loop: 0, or -1 with errp (E_INVALID). */
int args_global(Cli *cli, int key, int argc, char **argv, Error **errp);
/* Strict decimal in [min, max]. */
int args_uint(const char *s, uint64_t min, uint64_t max, uint64_t *ret);
/* "NAME=VALUE" into the env object (NAME: [A-Za-z_][A-Za-z0-9_]*, at most ARGS_ENV_MAX). */
int args_env(const char *assign, json_t *env, Error **errp);
/* A session or task id as the daemon makes them: 1..64 of [a-z0-9_]. */
bool args_id_ok(const char *id);
/* "ID:PATH" -> true with the id copied into ret_id and *ret_path pointing into spec (maybe
 * ""); false for a local path (no ':' or a prefix that is not an id: use ./a:b for such). */
bool args_remote(const char *spec, char ret_id[ARGS_ID_MAX_BYTES + 1], const char **ret_path);
/* --cwd: absolute inside the guest, or relative to /workspace. malloc'd. */
int args_cwd(const char *dir, char **ret, Error **errp);

typedef struct RunArgs {
    const char *pool;
    uint64_t timeout_s;
    json_t *env; /* object, owned */
    const char *uploads[ARGS_UPLOADS_MAX];
    size_t n_uploads;
    const char *download; /* NULL: ./stockade-<id> */
    bool no_download;
    char *cwd;   /* owned; NULL: the daemon's default (/workspace) */
    char **argv; /* points into the caller's argv */
    int argc;
} RunArgs;

/* stockade run [OPTIONS] [--] CMD ARGS... ; global options are taken too. cli->help set
 * means: print the usage (nothing else is checked). */
int run_parse_args(Cli *cli, int argc, char **argv, RunArgs *ret, Error **errp);
void run_args_clear(RunArgs *a);

typedef struct ExecArgs {
    const char *session;
    uint64_t timeout_s; /* 0: the daemon's default */
    json_t *env;
    char *cwd;
    char **argv;
    int argc;
    bool interactive; /* -i: stdin forwarded */
    bool tty;         /* -t: on a terminal in the guest (with -i: raw mode here) */
} ExecArgs;

/* stockade exec [OPTIONS] SESSION [--] CMD ARGS... */
int exec_parse_args(Cli *cli, int argc, char **argv, ExecArgs *ret, Error **errp);
void exec_args_clear(ExecArgs *a);

/* The argv array of a request. */
json_t *args_argv_json(char **argv, int argc);

/* ------------------------------------------------------------------ did you mean */

#define ARGS_SUGGEST_MAX_BYTES 64 /* longer words are never compared */

/* Edit distance of a and b (insertions, deletions, substitutions and swaps of two neighbours
 * count one each: "optimal string alignment"); words over ARGS_SUGGEST_MAX_BYTES count as
 * far. Pure. */
size_t args_edit_distance(const char *a, const char *b);
/* The candidate near word: at distance 1 (2 for words of 5 bytes or more), nearer than every
 * other candidate, and not word itself; else NULL. Pure. */
const char *args_suggest(const char *word, const char *const *candidates, size_t n);

/* ------------------------------------------------------------------ token files */

/* Reads a token from path (--token-file, STOCKADE_TOKEN_FILE), the way ssh treats a key: a
 * regular file that neither group nor others may read, write or run (E_INVALID naming the
 * mode and the chmod that fixes it), whose first line (its end of line stripped, a CR before
 * it too) is the token: not empty, at most cap - 1 bytes, no NUL. ret gets it NUL-terminated;
 * what was read is wiped before returning. */
int args_read_token_file(const char *path, char *ret, size_t cap, Error **errp);
