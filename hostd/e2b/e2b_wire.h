/* Pure mappings between what the E2B SDK sends and Stockade's terms, each unit-tested and
 * safe on hostile input: sandbox ids, the <port>-<id>.<domain> Host, E2B paths to
 * workspace paths, the command line (bash -> sh), the list filters and page tokens.
 * No I/O, no clock. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "runner_limits.h"

/* A sandbox id is the session id without its "ses_": 26 characters of [a-z2-7], so it is
 * alphanumeric (no '-', which E2B hosts use as the separator) and maps back without a table. */
#define E2B_SANDBOX_ID_LEN 26
#define E2B_SANDBOX_ID_BYTES (E2B_SANDBOX_ID_LEN + 1)
#define E2B_SESSION_PREFIX "ses_"
#define E2B_SESSION_ID_BYTES 40 /* SESSION_ID_BYTES: "ses_" + the id, with room */
#define E2B_HOST_MAX_BYTES 255

bool e2b_sandbox_id_is_valid(const char *id);
/* "ses_<26>" -> "<26>"; -1 for anything else. */
int e2b_sandbox_id_from_session(const char *session_id, char out[E2B_SANDBOX_ID_BYTES]);
void e2b_session_id_from_sandbox(const char *sandbox_id, char out[E2B_SESSION_ID_BYTES]);

/* Host "<port>-<sandbox id>.<domain>" with an optional ":port" suffix, the domain compared
 * case-insensitively. -1 when it is not of that form. */
int e2b_host_route(const char *host, const char *domain, unsigned *ret_port,
                   char ret_id[E2B_SANDBOX_ID_BYTES]);

/* Cluster mode (README.md, "Cluster"): whether a request for a sandbox this host does not
 * hold goes to its owner, from its owner's index row (owner_tenant; here: the row names this
 * host; ended: the session ended) and whether the owner runs the face the request is for.
 * tenant: the API key's (the control plane, checked before anything goes on); NULL for envd
 * (its caller showed the sandbox's token first). false: answered here as an unknown sandbox
 * (never a second hop; another tenant's sandbox is not found, never forbidden; an ended one,
 * or one whose owner runs no such face, is not reachable through it). */
bool e2b_forward_target(const char *owner_tenant, bool here, bool ended, bool has_face,
                        const char *tenant);

/* Whether an envd request asks to run as root (issue 28). The SDK names its user in
 * "Authorization: Basic base64(<user>:)" on RPCs (envd >= 0.4.0: only when the caller
 * passed `user`), and in the `username` query on /files (query_user; NULL for RPCs, where it
 * wins over the header when present). True only for exactly "root"; anything else (none,
 * "user", another name, a malformed header, one over E2B_BASIC_AUTH_MAX_BYTES) is the
 * session's user, as every request was before. */
#define E2B_BASIC_AUTH_MAX_BYTES 512
bool e2b_user_is_root(const char *authorization, const char *query_user);

/* The only part of a guest the file calls reach is /workspace, the session user's home.
 * E2B's home, /home/user, is an alias of it (the images link /home/user to /workspace), and
 * relative paths and "~" are relative to it, as envd resolves them. */
#define E2B_WORKSPACE "/workspace"
#define E2B_HOME_ALIAS "/home/user"

typedef struct E2bPath {
    char rel[PATH_MAX_BYTES + 1]; /* workspace-relative, checked; "" = the workspace itself */
    const char *base;             /* E2B_WORKSPACE or E2B_HOME_ALIAS: how the caller wrote it */
} E2bPath;

/* Maps an E2B path. "." segments and repeated slashes are dropped; ".." and anything outside
 * the workspace are refused (-1, *ret_why a static string); "" is the workspace only when
 * allow_root. */
int e2b_path_map(const char *path, bool allow_root, E2bPath *ret, const char **ret_why);
/* base, or base + "/" + rel, and + "/" + child when child is not NULL. -1 if it does not fit. */
int e2b_path_show(const E2bPath *p, const char *child, char *out, size_t cap);
/* The absolute workspace path of an exec's cwd ("" for the default), from an E2B cwd. */
int e2b_cwd_map(const char *cwd, char *out, size_t cap, const char **ret_why);
/* The same for a process (Start), under E2B_HOME_ALIAS instead: the guest mounts the
 * workspace there too (guest/session.c), so getcwd() in the program says what it would in an
 * E2B sandbox. No cwd is E2B's default, the home itself. */
int e2b_process_cwd_map(const char *cwd, char *out, size_t cap, const char **ret_why);

/* The argv to run for a Start request's cmd and args. The SDK always sends
 * /bin/bash -l -c <command>; Stockade's images have busybox sh and no bash, so bash (as
 * /bin/bash, /usr/bin/bash or bash) runs as /bin/sh with the same arguments (ash knows -l
 * and -c). Other programs run as given. A new NULL-terminated array (free each, then it). */
#define E2B_SHELL "/bin/sh"
int e2b_command_argv(const char *cmd, json_t *args, char ***ret_argv, size_t *ret_argc,
                     Error **errp);
void e2b_argv_free(char **argv, size_t argc);

/* Sandbox.list() filters. metadata arrives as the value of the "metadata" query parameter,
 * itself "k=v&k2=v2" with keys and values URI-encoded once more: into an object of strings.
 * At most E2B_METADATA_MAX pairs; -1 if malformed. */
#define E2B_METADATA_MAX 64
#define E2B_METADATA_KEY_MAX_BYTES 256
#define E2B_METADATA_VALUE_MAX_BYTES 4096
int e2b_metadata_query(const char *q, json_t **ret);
/* True if every key of want is in have with the same value. */
bool e2b_metadata_matches(json_t *have, json_t *want);
/* List pages: a token names the last sandbox of the previous page by its start time and id. */
#define E2B_PAGE_TOKEN_BYTES 64
void e2b_page_token(int64_t started_usec, const char *id, char out[E2B_PAGE_TOKEN_BYTES]);
int e2b_page_token_parse(const char *token, int64_t *ret_started_usec,
                         char ret_id[E2B_SANDBOX_ID_BYTES]);
/* RFC 3339 UTC with milliseconds ("2026-11-29T23:13:30.101Z"); and its parse (seconds
 * precision at least; fraction and 'Z' or +00:00 accepted). */
#define E2B_TIME_BYTES 32
void e2b_time_format(int64_t wall_usec, char out[E2B_TIME_BYTES]);
int e2b_time_parse(const char *s, int64_t *ret_wall_usec);
