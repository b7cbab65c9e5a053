/* What PID 1 reads at boot: the stockade.* keys of the kernel command line and the module
 * list of the initramfs. Pure text parsing, no I/O (init.c reads the files).
 * Keys (images/README.md): stockade.root=/dev/X (absent: serve from the initramfs),
 * stockade.port=NAME (default PORT_NAME_DEFAULT), stockade.debug=1. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "guest_limits.h"

typedef struct BootConfig {
    char root[BOOT_VALUE_MAX_BYTES]; /* "" = no root device: stay in the initramfs */
    char port[BOOT_VALUE_MAX_BYTES]; /* virtio-serial port name */
    bool debug;
} BootConfig;

/* Fills *ret from the command line text. Values that are over-long or outside their charset
 * are ignored (the default stays); returns how many stockade.* values were ignored. */
int bootcfg_parse_cmdline(const char *cmdline, BootConfig *ret);

typedef enum {
    MODLINE_END,  /* no more lines */
    MODLINE_NAME, /* out holds a module file name */
    MODLINE_BAD,  /* out holds (a prefix of) a line that is not a plain file name */
} ModLine;

/* Next entry of /etc/stockade/modules: one file name per line, blank lines and '#' comments
 * skipped, surrounding blanks trimmed. A name may not contain '/' or start with '.'. */
ModLine bootcfg_next_module(const char *text, size_t *cursor, char *out, size_t cap);
