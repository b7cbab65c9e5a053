/* Helpers shared by check_host.c and check_guest.c (internal to proto/). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "message.h"

int check_fail(char *err, size_t errcap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The message carries no unknown fields (both ends are built from one tree). */
bool check_known(const ProtobufCMessage *m);
/* NUL-terminated, at most max bytes, non-empty unless allow_empty. */
bool check_len(const char *s, size_t max, bool allow_empty);
/* Every byte is in [A-Za-z0-9] or in extra. */
bool check_charset(const char *s, const char *extra);
/* Printable ASCII only (0x20..0x7e). */
bool check_printable(const char *s);
bool check_env(Stockade__Runner__EnvVar *const *env, size_t n, size_t *ret_bytes);

/* Tunnel messages (check_tunnel.c), the same rules on both ends. */
int check_tunnel_open(const Stockade__Runner__TunnelOpen *o, char *err, size_t errcap);
int check_tunnel_open_result(const Stockade__Runner__TunnelOpenResult *r, char *err, size_t errcap);
int check_tunnel_data(const Stockade__Runner__TunnelData *d, char *err, size_t errcap);
int check_tunnel_credit(const Stockade__Runner__TunnelCredit *c, char *err, size_t errcap);
int check_tunnel_close(const Stockade__Runner__TunnelClose *c, char *err, size_t errcap);
