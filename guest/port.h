/* Finding the virtio-serial port by name: /sys/class/virtio-ports/<dev>/name holds the
 * name, /dev/<dev> is the character device. */
#pragma once

#include <stddef.h>

#include "error.h"

#define PORT_SYSFS_DIR "/sys/class/virtio-ports"

/* Scans sysfs_dir/<entry>/name for name (trailing newline ignored) and writes
 * "/dev/<entry>" to out. -1 with errno ENOENT when no port has that name. */
int port_find(const char *sysfs_dir, const char *name, char *out, size_t cap);
/* Polls for the port (it appears once virtio_console has probed) for up to timeout_msec,
 * then opens it read-write. Returns the fd. */
int port_open_wait(const char *name, unsigned timeout_msec, Error **errp);
