/* The checks of `stockade doctor`, each OK / WARN / FAIL with what to do about it. They look at
 * this machine (KVM, libvirt's sockets, disk, QEMU, images, snapshots) and at the daemon's
 * public API when it answers; they change nothing. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "client.h"

#define DOCTOR_TEXT_MAX_BYTES 400
#define DOCTOR_CHECKS_MAX 16
#define DOCTOR_DISK_WARN_BYTES (5ull << 30)
#define DOCTOR_DISK_FAIL_BYTES (1ull << 30)
#define DOCTOR_DEFAULT_LIBVIRT_SOCKET "/run/libvirt/libvirt-sock"
#define DOCTOR_DEFAULT_QEMU "/usr/bin/qemu-system-x86_64"
/* The lease when the daemon's hosts list does not say (a daemon from before lease_ms):
 * [cluster] lease_s's default (issue 16). */
#define DOCTOR_CLUSTER_LEASE_MS 10000
#define DOCTOR_HOSTS_TEXT_BYTES 200 /* the hosts named in one verdict; more are cut */

typedef enum DoctorLevel { DOCTOR_OK, DOCTOR_WARN, DOCTOR_FAIL } DoctorLevel;

typedef struct DoctorResult {
    const char *check;
    DoctorLevel level;
    char message[DOCTOR_TEXT_MAX_BYTES];
    char fix[DOCTOR_TEXT_MAX_BYTES]; /* "" when there is nothing to do */
} DoctorResult;

typedef struct DoctorEnv {
    const char *state_dir, *image_dir, *libvirt_socket, *qemu;
    bool verify_images;
    Client *client; /* NULL: the daemon is not asked */
    json_t *health; /* filled by doctor_check_daemon when it answers */
    json_t *pool;
} DoctorEnv;

typedef void (*DoctorCheckFn)(DoctorEnv *env, DoctorResult *r);

void doctor_check_kvm(DoctorEnv *env, DoctorResult *r);
void doctor_check_libvirtd(DoctorEnv *env, DoctorResult *r);
void doctor_check_virtlogd(DoctorEnv *env, DoctorResult *r);
void doctor_check_qemu(DoctorEnv *env, DoctorResult *r);
void doctor_check_daemon(DoctorEnv *env, DoctorResult *r);
void doctor_check_accel(DoctorEnv *env, DoctorResult *r);
void doctor_check_images(DoctorEnv *env, DoctorResult *r);
void doctor_check_snapshots(DoctorEnv *env, DoctorResult *r);
void doctor_check_disk(DoctorEnv *env, DoctorResult *r);
void doctor_check_cluster(DoctorEnv *env, DoctorResult *r);
/* The pure part of doctor_check_cluster: the verdict on an answer of GET /v1/admin/hosts
 * ({"hosts":[...],"lease_ms"}): WARN naming each lost host and who took it over, and each
 * live host whose heartbeat is older than lease_ms (DOCTOR_CLUSTER_LEASE_MS if absent);
 * else OK. */
void doctor_cluster_verdict(json_t *ans, DoctorResult *r);

const char *doctor_level_name(DoctorLevel l);
