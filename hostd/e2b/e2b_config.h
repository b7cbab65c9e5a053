/* [e2b] in stockaded.conf: its types, defaults and key parser (pure; the config parser and
 * its fuzzer link only this). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define E2B_DEFAULT_ADDRESS "127.0.0.1"
#define E2B_DEFAULT_API_PORT 3000
#define E2B_DEFAULT_ENVD_PORT 49983 /* the SDK's envd port: part of <port>-<id>.<domain> hosts */
#define E2B_DEFAULT_DOMAIN "stockade.local"
#define E2B_DEFAULT_TEMPLATE_MAP "base=python" /* "base" is the SDK's default template */
/* @e2b/code-interpreter's default template: mapped to the data pool when there is one. */
#define E2B_CODE_TEMPLATE "code-interpreter-v1"
#define E2B_DEFAULT_LIFETIME_S 3600
#define E2B_DEFAULT_CREATE_WAIT_S 50 /* under the SDK's 60 s request timeout */

#define E2B_ADDRESS_MAX_BYTES 63
#define E2B_DOMAIN_MAX_BYTES 200
#define E2B_TEMPLATES_MAX 32
#define E2B_TEMPLATE_NAME_MAX_BYTES 64
#define E2B_POOL_NAME_MAX_BYTES 32 /* POOL_SHAPE_NAME_MAX_BYTES */
#define E2B_LIFETIME_MAX_S 86400
#define E2B_CREATE_WAIT_MAX_S 600
#define E2B_PATH_MAX_BYTES 1023 /* tls_cert, tls_key */

typedef struct E2bTemplate {
    char name[E2B_TEMPLATE_NAME_MAX_BYTES + 1]; /* as the SDK sends templateID */
    char pool[E2B_POOL_NAME_MAX_BYTES + 1];     /* a configured pool */
} E2bTemplate;

/* [e2b] in stockaded.conf. */
typedef struct E2bConfig {
    bool enabled;                            /* default false: no listener */
    char address[E2B_ADDRESS_MAX_BYTES + 1]; /* numeric IPv4/IPv6 of both listeners */
    unsigned api_port, envd_port;
    char domain[E2B_DOMAIN_MAX_BYTES + 1];    /* returned as the sandboxes' domain */
    E2bTemplate templates[E2B_TEMPLATES_MAX]; /* template_map; a pool name also works as is */
    size_t n_templates;
    bool template_map_set;     /* template_map was given: the defaults stay out of it */
    uint64_t lifetime_usec;    /* admitted per sandbox (quota, wallet): its TTL may grow to it */
    uint64_t create_wait_usec; /* create answers once the guest runs, or gives up after this */
    /* HTTPS on both listeners: PEM certificate (chain) and key; "" and "": [api]'s (the
     * daemon resolves that), plain HTTP when neither is set. */
    char tls_cert[E2B_PATH_MAX_BYTES + 1];
    char tls_key[E2B_PATH_MAX_BYTES + 1];
} E2bConfig;

void e2b_config_defaults(E2bConfig *c);
/* Sets one [e2b] key from its text (pure: the config parser and its fuzzer call it).
 * E_INVALID naming the key on an unknown key or a bad value; c is unchanged then. */
int e2b_config_set(E2bConfig *c, const char *key, const char *value, Error **errp);
/* Key i of [e2b] (0, 1, ... until false) and its value as the file would write it, into
 * buf[0..cap) (truncated to cap; "" for an empty template map), for --check-config. */
bool e2b_config_format(const E2bConfig *c, size_t i, const char **ret_key, char *buf, size_t cap);
/* Adds name=pool to the default map: not when template_map was given, the name is mapped
 * already or the map is full. */
void e2b_config_default_template(E2bConfig *c, const char *name, const char *pool);
/* The pool a template name maps to, or NULL when the map does not name it. */
const char *e2b_config_template_pool(const E2bConfig *c, const char *template_name);
