/* stockade cp: files into and out of a session's workspace.
 *   cp LOCAL ID:PATH   PUT each file (a folder: recursively, under PATH)
 *   cp ID:PATH LOCAL   GET one file (LOCAL may be a directory, or - for stdout)
 *   cp ID: DIR         the whole workspace, extracted safely into a new or empty DIR */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "cli.h"
#include "download.h"
#include "output.h"
#include "upload.h"

static const char cp_help[] =
    "Usage: stockade cp LOCAL ID:PATH     upload a file or folder into the workspace\n"
    "       stockade cp ID:PATH LOCAL     download one file (LOCAL: a file, a directory or -)\n"
    "       stockade cp ID: DIR           download the whole workspace into a new or empty DIR\n"
    "PATH is relative to /workspace. Uploads need a running session; downloads work while it\n"
    "runs (from the guest) and after it ended (from its saved files). A folder's files go\n"
    "under PATH with their relative paths (symlinks and special files are skipped); a file\n"
    "goes to PATH, or into it when PATH is empty or ends with '/'. At most 63 MiB per file\n"
    "upload (the daemon's request cap is 64 MiB). Downloads of the whole workspace keep only\n"
    "regular files and directories, beneath DIR. A local name with a ':' in it: write ./a:b.\n";

static int
cp_put_one(Client *c, const char *id, const UploadEntry *e, Error **errp)
{
    _cleanup_free_ uint8_t *data = NULL;
    _cleanup_free_ char *esc = client_escape_path(e->remote);
    char path[CLIENT_URL_MAX_BYTES];
    size_t len;

    if (!esc)
        return error_set(errp, E_INTERNAL, ENOMEM, "cp");
    if (upload_read(e, &data, &len, errp) < 0)
        return -1;
    if (snprintf(path, sizeof(path), "/v1/sessions/%s/files/%s?mode=0%o", id, esc,
                 (unsigned) e->mode) >= (int) sizeof(path))
        return error_set(errp, E_INVALID, 0, "path too long");
    if (client_put(c, path, data, len, NULL, errp) < 0)
        return error_prefix(errp, "upload %.200s", e->remote);
    return 0;
}

static int
cp_upload(Cli *cli, const char *local, const char *id, const char *rpath, Error **errp)
{
    UploadList u;
    struct stat st;
    Client *c = NULL;
    char size[16];
    int r = 0;

    upload_list_init(&u, CP_UPLOAD_FILE_MAX_BYTES, CP_UPLOAD_TOTAL_MAX_BYTES);
    if (stat(local, &st) < 0)
        return error_set(errp, E_INVALID, errno, "%.200s", local);
    size_t n = strlen(rpath);
    bool into = n == 0 || rpath[n - 1] == '/';
    _cleanup_free_ char *prefix = strndup(rpath, into && n > 0 ? n - 1 : n);
    if (!prefix)
        return error_set(errp, E_INTERNAL, ENOMEM, "cp");
    if (S_ISDIR(st.st_mode) || into)
        r = upload_list_add(&u, local, prefix, errp);
    else
        r = upload_list_add_file(&u, local, prefix, errp);
    if (r == 0 && !(c = cli_client(cli, errp)))
        r = -1;
    for (size_t i = 0; r == 0 && i < u.n; i++)
        r = cp_put_one(c, id, &u.v[i], errp);
    if (r == 0) {
        format_bytes(u.total_bytes, size, sizeof(size));
        printf("uploaded %zu file%s (%s) to %s:%s\n", u.n, u.n == 1 ? "" : "s", size, id, rpath);
        if (u.skipped)
            cli_warn(cli, "%zu symlinks or special files skipped (e.g. %s)", u.skipped,
                     u.first_skipped);
    }
    upload_list_free(&u);
    return r;
}

static int
cp_download_tree(Cli *cli, const char *id, const char *dir, Error **errp)
{
    char path[128], size[16];
    DownloadResult res;
    Client *c = cli_client(cli, errp);
    Progress p = {.enabled = cli->tty_err, .label = "downloading"};

    if (!c)
        return -1;
    snprintf(path, sizeof(path), "/v1/sessions/%s/workspace", id);
    if (download_workspace(c, path, dir, &p, 0, &res, errp) < 0)
        return -1;
    format_bytes(res.bytes, size, sizeof(size));
    printf("downloaded %u file%s (%s) into %s (%s workspace)\n", res.files,
           res.files == 1 ? "" : "s", size, dir, res.workspace[0] ? res.workspace : "?");
    if (res.skipped)
        cli_warn(cli, "%u unsafe entries skipped (links, devices, bad names)", res.skipped);
    if (res.truncated)
        cli_warn(cli, "the download stopped early (%s)", res.stop);
    return 0;
}

static int
cp_download(Cli *cli, const char *id, const char *rpath, const char *local, Error **errp)
{
    struct stat st;
    _cleanup_free_ char *target = NULL, *esc = NULL;
    char path[CLIENT_URL_MAX_BYTES], size[16];
    uint64_t bytes = 0;

    if (rpath[0] == '\0' || strcmp(rpath, ".") == 0 || strcmp(rpath, "./") == 0)
        return cp_download_tree(cli, id, local, errp);
    if (!upload_remote_ok(rpath))
        return error_set(errp, E_INVALID, 0,
                         "'%.200s' is not a workspace path (relative, no "
                         "'.' or '..')",
                         rpath);
    const char *base = strrchr(rpath, '/') ? strrchr(rpath, '/') + 1 : rpath;
    if (strcmp(local, "-") != 0 && stat(local, &st) == 0 && S_ISDIR(st.st_mode)) {
        if (asprintf(&target, "%s/%s", local, base) < 0)
            return error_set(errp, E_INTERNAL, ENOMEM, "cp");
        local = target;
    }
    Client *c = cli_client(cli, errp);
    if (!c || !(esc = client_escape_path(rpath)))
        return c ? error_set(errp, E_INTERNAL, ENOMEM, "cp") : -1;
    snprintf(path, sizeof(path), "/v1/sessions/%s/files/%s", id, esc);
    if (download_file(c, path, local, &bytes, errp) < 0)
        return error_prefix(errp, "download %.200s", rpath);
    format_bytes(bytes, size, sizeof(size));
    fprintf(strcmp(local, "-") == 0 ? stderr : stdout, "downloaded %s:%s (%s) to %s\n", id, rpath,
            size, local);
    return 0;
}

int
cmd_cp(Cli *cli, int argc, char **argv)
{
    _cleanup_error_ Error *err = NULL;
    char src_id[ARGS_ID_MAX_BYTES + 1], dst_id[ARGS_ID_MAX_BYTES + 1];
    const char *src_path = NULL, *dst_path = NULL;
    int first, code;

    cli->verb = "cp";
    if (cli_parse_plain(cli, argc, argv, cp_help, 2, 2, &first, &code) != 0)
        return code;
    const char *src = argv[first], *dst = argv[first + 1];
    bool src_remote = args_remote(src, src_id, &src_path);
    bool dst_remote = args_remote(dst, dst_id, &dst_path);
    if (src_remote == dst_remote)
        return cli_usage_error(cli, "exactly one side must be ID:PATH (the other a local path)");
    int r = dst_remote ? cp_upload(cli, src, dst_id, dst_path, &err)
                       : cp_download(cli, src_id, src_path, dst, &err);
    return r < 0 ? cli_report(cli, err, false) : CLI_EXIT_OK;
}
