/* What the project adds to an imported tree so that its runner boots it like its own images
 * (images/README.md, "The contract between an image and the runner" and "Imported images"):
 *  - the mount points the runner needs, where missing: /workspace /tmp /run /proc /sys /dev
 *    /root (never replacing what the image has there);
 *  - /home/user -> ../workspace where the image has no /home/user (E2B's home);
 *  - uid/gid 1000 ("user", home /workspace) in /etc/passwd and /etc/group when the image has
 *    no entry for them (the files made if absent);
 *  - the runner's defaults for every exec, from the image config, in IMAGE_DEFAULTS_PATH
 *    (format: guest/imagecfg.h), replacing whatever the layers had at /etc/stockade;
 *  - every directory's and symlink's atime/mtime set to epoch (creating entries moved a
 *    directory's; the tree must not depend on when it was made). Files keep the layers'.
 * Every lookup is confined to the tree (RESOLVE_IN_ROOT), as in oci_apply.h. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "oci_json.h"

#define IMAGE_DEFAULTS_DIR "etc/stockade"
#define IMAGE_DEFAULTS_PATH "etc/stockade/image.conf"
#define OCI_FINISH_ID_FILE_MAX_BYTES (1024u * 1024u) /* the image's /etc/passwd, /etc/group */
#define OCI_SESSION_UID 1000u

typedef struct OciUser {
    bool set; /* a non-root user the execs run as */
    uint32_t uid, gid;
    char note[160]; /* why User was not used, if it was not ("" otherwise) */
} OciUser;

/* Resolves cfg->user against the tree's /etc/passwd and /etc/group: "" and root (uid or gid
 * 0) leave ret->set false (the session's user, uid 1000, runs the execs); a name the files
 * do not have is an error. Pure apart from reading those two files. */
int oci_user_resolve(int root_fd, const char *user, OciUser *ret, Error **errp);

/* Renders the runner's defaults file (guest/imagecfg.h): env, cwd, user, entrypoint, cmd.
 * *ret is malloc'd text. */
int oci_defaults_render(const OciConfig *cfg, const OciUser *user, char **ret, Error **errp);

/* The additions above, then the directory times. */
int oci_finish_tree(int root_fd, const OciConfig *cfg, const OciUser *user, int64_t epoch,
                    Error **errp);
