/* The only code in Stockade that talks to libvirt. Every call blocks (0.1–2 s here): call
 * them from the worker queue, never from the loop thread. A Virt is safe to share between
 * worker threads (libvirt connections are thread-safe). Errors carry libvirt's message. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"

typedef struct Virt Virt;

int virt_open(const char *uri, Virt **ret, Error **errp);
void virt_close(Virt *v);
DEFINE_TRIVIAL_CLEANUP_FUNC(Virt, virt_close)

/* Starts a transient domain from XML (a cold boot). */
int virt_create(Virt *v, const char *xml, Error **errp);
/* Saves the running domain's memory and device state to path; the domain stops. */
int virt_save(Virt *v, const char *name, const char *path, Error **errp);
/* Restores a save image as a running transient domain (the name and UUID inside it). */
int virt_restore(Virt *v, const char *path, Error **errp);
/* Hard stop without the guest's help. A domain that does not exist is not an error. */
int virt_destroy(Virt *v, const char *name, Error **errp);
/* Names of every domain (running or defined) that starts with prefix; NULL-terminated. */
int virt_list_prefixed(Virt *v, const char *prefix, char ***ret_names, Error **errp);
/* Removes a persistent definition, if any (leftovers of other tools or crashed saves). */
int virt_undefine(Virt *v, const char *name, Error **errp);
bool virt_is_active(Virt *v, const char *name);
/* 0 when the domain runs with that UUID; E_NOT_FOUND (absent, not running), E_CONFLICT
 * (another UUID). */
int virt_is_running_uuid(Virt *v, const char *name, const char *uuid, Error **errp);
/* Sets the running domain's memory hard limit (cgroup). Applied live rather than in the XML:
 * in the XML libvirt also raises QEMU's RLIMIT_MEMLOCK to it, which needs CAP_SYS_RESOURCE. */
int virt_set_memory_hard_limit(Virt *v, const char *name, unsigned limit_mib, Error **errp);

/* guest_memory = template (domxml.h, notes/templating-2026-12.md). libvirt cannot save or
 * restore with QEMU's x-ignore-shared capability on (it issues migrate-incoming itself with
 * the capability off), so these drive QEMU's monitor through libvirt-qemu; the domains are
 * then marked tainted (custom-argv, custom-monitor) in their logs, which is expected.
 *
 * Saves the device state of the running template domain `name` (its RAM is a shared file and
 * stays there) into state_name beneath dir_fd (made anew 0600, O_EXCL|O_NOFOLLOW, fsynced),
 * then destroys the domain: suspend,
 * x-ignore-shared on, the file handed to QEMU by getfd, `migrate fd:`, wait for completion
 * (at most timeout_usec). On failure the domain is destroyed as well and state_name may hold
 * a partial file. */
int virt_template_save(Virt *v, const char *name, int dir_fd, const char *state_name,
                       uint64_t timeout_usec, Error **errp);
/* Starts a clone from xml (DOMXML_MEMORY_CLONE: -incoming defer) paused, loads state_name
 * beneath dir_fd (never through a symlink) into it (x-ignore-shared on, getfd, `migrate-incoming
 * fd:`, query-migrate until completed, at most timeout_usec) and resumes it. On failure the domain
 * is destroyed. */
int virt_clone_start(Virt *v, const char *xml, int dir_fd, const char *state_name,
                     uint64_t timeout_usec, Error **errp);
/* Pause and resume of a clone (issue 27, notes/pause-2026-12.md). The stream is QEMU's
 * migration stream; what to keep of it is the caller's (pausefile.h).
 *
 * Pauses the running clone `name`: suspend, x-ignore-shared on, max-bandwidth raised (QEMU's
 * default 128 MiB/s made a save ten times slower), a socket handed to QEMU by getfd,
 * `migrate fd:`; the stream is handed to sink as it comes until QEMU is done (query-migrate
 * completed, at most timeout_usec). The domain is left suspended either way: the caller
 * destroys it once what sink kept is safe, or resumes it (virt_resume) when the pause failed,
 * so a failed pause leaves the guest running. */
typedef int (*VirtStreamSinkFn)(const void *buf, size_t len, void *userdata, Error **errp);
int virt_clone_pause(Virt *v, const char *name, VirtStreamSinkFn sink, void *userdata,
                     uint64_t timeout_usec, Error **errp);
/* Resumes a suspended domain (a pause that failed). */
int virt_resume(Virt *v, const char *name, Error **errp);
/* Starts a clone from xml (DOMXML_MEMORY_CLONE) paused and loads into it what source writes to
 * fd (a blocking socket whose writes time out after timeout_usec; source returns after its
 * last byte): x-ignore-shared on, getfd, `migrate-incoming fd:`, query-migrate until
 * completed, resume. On failure the domain is destroyed. */
typedef int (*VirtStreamSourceFn)(int fd, void *userdata, Error **errp);
int virt_clone_resume(Virt *v, const char *xml, VirtStreamSourceFn source, void *userdata,
                      uint64_t timeout_usec, Error **errp);
/* The hypervisor's version as major * 1000000 + minor * 1000 + micro (QEMU's). */
int virt_hypervisor_version(Virt *v, unsigned long *ret, Error **errp);

/* The QEMU process of a running domain, from libvirt's pid file; -1 if unknown. */
pid_t virt_qemu_pid(const char *name);
/* SIGKILLs the QEMU process of domain `name` if pid is still that process (its command line
 * carries libvirt's "-name guest=<name>,"), so a recycled pid is never hit. Returns 0 when the
 * signal was sent, -1 when pid is not (or no longer) that domain's QEMU. Does not block. */
int virt_kill_qemu(pid_t pid, const char *name);
/* True once pid is gone or a zombie (its memory is released; reaping is PID 1's business). */
bool virt_pid_gone(pid_t pid);
void virt_strv_free(char **v);
