/* See e2b_wire.h. */
#include "e2b_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base64.h"
#include "macro.h"

#define BASE32 "abcdefghijklmnopqrstuvwxyz234567"

bool
e2b_sandbox_id_is_valid(const char *id)
{
    return strnlen(id, E2B_SANDBOX_ID_BYTES) == E2B_SANDBOX_ID_LEN &&
           strspn(id, BASE32) == E2B_SANDBOX_ID_LEN;
}

int
e2b_sandbox_id_from_session(const char *session_id, char out[E2B_SANDBOX_ID_BYTES])
{
    if (strncmp(session_id, E2B_SESSION_PREFIX, 4) != 0 || !e2b_sandbox_id_is_valid(session_id + 4))
        return -1;
    memcpy(out, session_id + 4, E2B_SANDBOX_ID_BYTES);
    return 0;
}

void
e2b_session_id_from_sandbox(const char *sandbox_id, char out[E2B_SESSION_ID_BYTES])
{
    snprintf(out, E2B_SESSION_ID_BYTES, "%s%.*s", E2B_SESSION_PREFIX, E2B_SANDBOX_ID_LEN,
             sandbox_id);
}

int
e2b_host_route(const char *host, const char *domain, unsigned *ret_port,
               char ret_id[E2B_SANDBOX_ID_BYTES])
{
    size_t n = strnlen(host, E2B_HOST_MAX_BYTES + 1), dn = strlen(domain);
    const char *colon = memchr(host, ':', n);
    if (n > E2B_HOST_MAX_BYTES || host[0] == '[')
        return -1;
    if (colon) {
        if (colon[1] == '\0' || strspn(colon + 1, "0123456789") != n - (size_t) (colon - host) - 1)
            return -1;
        n = (size_t) (colon - host);
    }
    /* "<port>-" + id + "." + domain */
    size_t digits = strspn(host, "0123456789");
    if (digits == 0 || digits > 5 || host[digits] != '-' ||
        n != digits + 1 + E2B_SANDBOX_ID_LEN + 1 + dn || host[n - dn - 1] != '.' ||
        strncasecmp(host + n - dn, domain, dn) != 0)
        return -1;
    char id[E2B_SANDBOX_ID_BYTES];
    memcpy(id, host + digits + 1, E2B_SANDBOX_ID_LEN);
    id[E2B_SANDBOX_ID_LEN] = '\0';
    for (size_t i = 0; i < E2B_SANDBOX_ID_LEN; i++)
        if (id[i] >= 'A' && id[i] <= 'Z') /* hosts are case-insensitive; ids are lower-case */
            id[i] = (char) (id[i] - 'A' + 'a');
    unsigned long port = strtoul(host, NULL, 10);
    if (!e2b_sandbox_id_is_valid(id) || port == 0 || port > 65535)
        return -1;
    *ret_port = (unsigned) port;
    memcpy(ret_id, id, E2B_SANDBOX_ID_BYTES);
    return 0;
}

/* The rest of path after prefix when prefix is a whole leading component run ("/a/b" is a
 * prefix of "/a/b" and "/a/b/c", not of "/a/bc"); NULL otherwise. */
static const char *
after_prefix(const char *path, const char *prefix)
{
    size_t n = strlen(prefix);
    if (strncmp(path, prefix, n) != 0 || (path[n] != '\0' && path[n] != '/'))
        return NULL;
    return path + n;
}

/* Appends the components of rest to out (normalised). */
static int
path_components(const char *rest, char out[PATH_MAX_BYTES + 1], const char **ret_why)
{
    size_t len = 0, depth = 0;
    for (const char *p = rest; *p;) {
        size_t c = strcspn(p, "/");
        if (c == 0 || (c == 1 && p[0] == '.')) {
            p += c + (p[c] == '/');
            continue;
        }
        if (c == 2 && p[0] == '.' && p[1] == '.')
            return *ret_why = "'..' is not allowed in paths", -1;
        if (c > NAME_MAX_BYTES || ++depth > PATH_MAX_DEPTH || len + (len > 0) + c > PATH_MAX_BYTES)
            return *ret_why = "the path is too long or too deep", -1;
        if (len > 0)
            out[len++] = '/';
        memcpy(out + len, p, c);
        len += c;
        p += c + (p[c] == '/');
    }
    out[len] = '\0';
    return 0;
}

int
e2b_path_map(const char *path, bool allow_root, E2bPath *ret, const char **ret_why)
{
    E2bPath p = {.base = E2B_WORKSPACE};
    const char *rest = path;

    if (strnlen(path, 2 * PATH_MAX_BYTES + 1) > 2 * PATH_MAX_BYTES)
        return *ret_why = "the path is too long", -1;
    if (path[0] == '~' && (path[1] == '\0' || path[1] == '/')) {
        rest = path + 1;
        p.base = E2B_HOME_ALIAS;
    } else if (path[0] == '/') {
        const char *r;
        if ((r = after_prefix(path, E2B_WORKSPACE))) {
            rest = r;
        } else if ((r = after_prefix(path, E2B_HOME_ALIAS))) {
            rest = r;
            p.base = E2B_HOME_ALIAS;
        } else {
            return *ret_why = "only /workspace (alias /home/user, the sandbox user's home) is "
                              "reachable through file calls on Stockade",
                   -1;
        }
    }
    if (path_components(rest, p.rel, ret_why) < 0)
        return -1;
    if (!p.rel[0] && !allow_root)
        return *ret_why = "the path names the home directory itself", -1;
    *ret = p;
    return 0;
}

int
e2b_path_show(const E2bPath *p, const char *child, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%s%s%s%s%s", p->base, p->rel[0] ? "/" : "", p->rel,
                     child ? "/" : "", child ? child : "");
    return n < 0 || (size_t) n >= cap ? -1 : 0;
}

int
e2b_cwd_map(const char *cwd, char *out, size_t cap, const char **ret_why)
{
    E2bPath p;
    if (!cwd || !cwd[0]) {
        out[0] = '\0';
        return 0;
    }
    if (e2b_path_map(cwd, true, &p, ret_why) < 0)
        return -1;
    int n = snprintf(out, cap, "%s%s%s", E2B_WORKSPACE, p.rel[0] ? "/" : "", p.rel);
    if (n < 0 || (size_t) n >= cap)
        return *ret_why = "cwd is too long", -1;
    return 0;
}

int
e2b_process_cwd_map(const char *cwd, char *out, size_t cap, const char **ret_why)
{
    E2bPath p = {.rel = ""};
    if (cwd && cwd[0] && e2b_path_map(cwd, true, &p, ret_why) < 0)
        return -1;
    int n = snprintf(out, cap, "%s%s%s", E2B_HOME_ALIAS, p.rel[0] ? "/" : "", p.rel);
    if (n < 0 || (size_t) n >= cap)
        return *ret_why = "cwd is too long", -1;
    return 0;
}

void
e2b_argv_free(char **argv, size_t argc)
{
    for (size_t i = 0; argv && i < argc; i++)
        free(argv[i]);
    free(argv);
}

int
e2b_command_argv(const char *cmd, json_t *args, char ***ret_argv, size_t *ret_argc, Error **errp)
{
    static const char *const bash[] = {"/bin/bash", "/usr/bin/bash", "bash"};
    size_t n = args ? json_array_size(args) : 0;

    if (!cmd || !cmd[0] || (args && !json_is_array(args)) || n >= ARGV_MAX_COUNT)
        return error_set(errp, E_INVALID, 0,
                         "process.cmd must be a program and process.args "
                         "at most %u strings",
                         ARGV_MAX_COUNT - 1);
    char **argv = calloc(n + 2, sizeof(char *));
    if (!argv)
        return error_set(errp, E_INTERNAL, ENOMEM, "argv");
    const char *prog = cmd;
    for (size_t i = 0; i < ELEMENTSOF(bash); i++)
        if (strcmp(cmd, bash[i]) == 0)
            prog = E2B_SHELL;
    size_t argc = 0;
    argv[argc++] = strdup(prog);
    for (size_t i = 0; i < n; i++) {
        json_t *a = json_array_get(args, i);
        if (!json_is_string(a) || strlen(json_string_value(a)) != json_string_length(a)) {
            e2b_argv_free(argv, argc);
            return error_set(errp, E_INVALID, 0, "process.args[%zu] must be a string", i);
        }
        argv[argc++] = strdup(json_string_value(a));
    }
    for (size_t i = 0; i < argc; i++)
        if (!argv[i]) {
            e2b_argv_free(argv, argc);
            return error_set(errp, E_INTERNAL, ENOMEM, "argv");
        }
    *ret_argv = argv;
    *ret_argc = argc;
    return 0;
}

static int
hexval(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* Percent-decodes [s, s + n) into out (cap incl. NUL); '+' is a space when form. */
static int
pct_decode(const char *s, size_t n, bool form, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (ch == '%') {
            int hi, lo;
            if (i + 2 >= n || (hi = hexval(s[i + 1])) < 0 || (lo = hexval(s[i + 2])) < 0)
                return -1;
            ch = (char) (hi << 4 | lo);
            i += 2;
        } else if (ch == '+' && form) {
            ch = ' ';
        }
        if (ch == '\0' || o + 1 >= cap)
            return -1;
        out[o++] = ch;
    }
    out[o] = '\0';
    return 0;
}

/* One "k=v" of the metadata filter: form-decoded, then URI-decoded (the SDK encodes twice). */
static int
metadata_pair(const char *s, size_t n, json_t *obj)
{
    char k1[E2B_METADATA_KEY_MAX_BYTES * 3 + 1], v1[E2B_METADATA_VALUE_MAX_BYTES * 3 + 1];
    char k[E2B_METADATA_KEY_MAX_BYTES + 1], v[E2B_METADATA_VALUE_MAX_BYTES + 1];
    const char *eq = memchr(s, '=', n);
    if (!eq || eq == s)
        return -1;
    size_t kn = (size_t) (eq - s), vn = n - kn - 1;
    if (pct_decode(s, kn, true, k1, sizeof(k1)) < 0 ||
        pct_decode(eq + 1, vn, true, v1, sizeof(v1)) < 0 ||
        pct_decode(k1, strlen(k1), false, k, sizeof(k)) < 0 ||
        pct_decode(v1, strlen(v1), false, v, sizeof(v)) < 0)
        return -1;
    json_t *js = json_string(v);
    return js && json_object_set_new(obj, k, js) == 0 ? 0 : -1; /* set_new checks k's UTF-8 */
}

int
e2b_metadata_query(const char *q, json_t **ret)
{
    json_t *obj = json_object();
    size_t pairs = 0;
    if (!obj)
        return -1;
    for (const char *p = q; *p;) {
        size_t n = strcspn(p, "&");
        if (n > 0 && (++pairs > E2B_METADATA_MAX || metadata_pair(p, n, obj) < 0)) {
            json_decref(obj);
            return -1;
        }
        p += n + (p[n] == '&');
    }
    *ret = obj;
    return 0;
}

bool
e2b_metadata_matches(json_t *have, json_t *want)
{
    const char *k;
    json_t *v;
    json_object_foreach(want, k, v)
    {
        json_t *h = json_object_get(have, k);
        if (!h || !json_equal(h, v))
            return false;
    }
    return true;
}

void
e2b_page_token(int64_t started_usec, const char *id, char out[E2B_PAGE_TOKEN_BYTES])
{
    snprintf(out, E2B_PAGE_TOKEN_BYTES, "%lld.%.*s", (long long) started_usec, E2B_SANDBOX_ID_LEN,
             id);
}

int
e2b_page_token_parse(const char *token, int64_t *ret_started_usec,
                     char ret_id[E2B_SANDBOX_ID_BYTES])
{
    size_t digits = strspn(token, "0123456789");
    if (digits == 0 || digits > 18 || token[digits] != '.' ||
        !e2b_sandbox_id_is_valid(token + digits + 1))
        return -1;
    *ret_started_usec = strtoll(token, NULL, 10);
    memcpy(ret_id, token + digits + 1, E2B_SANDBOX_ID_BYTES);
    return 0;
}

void
e2b_time_format(int64_t wall_usec, char out[E2B_TIME_BYTES])
{
    time_t secs = (time_t) (wall_usec / 1000000);
    struct tm tm;
    if (wall_usec < 0 || !gmtime_r(&secs, &tm)) {
        snprintf(out, E2B_TIME_BYTES, "1970-01-01T00:00:00.000Z");
        return;
    }
    size_t n = strftime(out, E2B_TIME_BYTES, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, E2B_TIME_BYTES - n, ".%03dZ", (int) (wall_usec % 1000000 / 1000));
}

int
e2b_time_parse(const char *s, int64_t *ret_wall_usec)
{
    struct tm tm = {0};
    int len = 0;
    if (strnlen(s, E2B_TIME_BYTES * 2) >= E2B_TIME_BYTES * 2 ||
        sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &tm.tm_sec, &len) != 6 ||
        len != 19)
        return -1;
    const char *p = s + len;
    long frac_usec = 0, scale = 100000;
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
            frac_usec += scale > 0 ? (*p - '0') * scale : 0;
    if (strcmp(p, "Z") != 0 && strcmp(p, "+00:00") != 0)
        return -1;
    if (tm.tm_year < 1970 || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
        tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    time_t t = timegm(&tm);
    if (t < 0)
        return -1;
    *ret_wall_usec = (int64_t) t * 1000000 + frac_usec;
    return 0;
}

bool
e2b_forward_target(const char *owner_tenant, bool here, bool ended, bool has_face,
                   const char *tenant)
{
    return !here && !ended && has_face && (!tenant || strcmp(tenant, owner_tenant) == 0);
}

/* ------------------------------------------------------------------ users */

bool
e2b_user_is_root(const char *authorization, const char *query_user)
{
    static const char scheme[] = "Basic ";
    _cleanup_free_ uint8_t *raw = NULL;
    size_t len;

    if (query_user)
        return strcmp(query_user, "root") == 0;
    if (!authorization ||
        strnlen(authorization, E2B_BASIC_AUTH_MAX_BYTES + 1) > E2B_BASIC_AUTH_MAX_BYTES)
        return false;
    if (strncasecmp(authorization, scheme, strlen(scheme)) != 0)
        return false;
    const char *b64 = authorization + strlen(scheme);
    if (base64_decode(b64, strlen(b64), &raw, &len) < 0)
        return false;
    /* "root:" then a password the SDK leaves empty (envd ignores it); the name ends at ':' */
    return len >= 5 && memcmp(raw, "root:", 5) == 0;
}
