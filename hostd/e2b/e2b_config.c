/* [e2b] config keys (pure: text in, struct out; fuzzed through the daemon's config parser).
 *
 *   enabled       true | false (default false)
 *   address       numeric IPv4 or IPv6 of both listeners (default 127.0.0.1)
 *   api_port      control plane (default 3000; 0: any free port, logged; for tests)
 *   envd_port     envd face (default 49983; 0 likewise)
 *   domain        returned as each sandbox's domain; Hosts <port>-<id>.<domain> route to it
 *   template_map  name=pool[,name=pool...]: replaces the default "base=python" (and
 *                 "code-interpreter-v1=data" when the data pool is configured)
 *   lifetime_s    lifetime admitted per sandbox (default 3600, at most 86400)
 *   create_wait_s how long a create waits for its guest (default 50, at most 600)
 *   tls_cert      HTTPS on both listeners: PEM certificate (chain) file, absolute path
 *   tls_key       its private key (PEM); both or neither (default: [api]'s pair) */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2b_config.h"
#include "macro.h"
#include "timeutil.h"
#include "units.h"

#define TEMPLATE_NAME_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/:"
#define POOL_NAME_CHARS "abcdefghijklmnopqrstuvwxyz0123456789-"

static int parse_template_map(E2bConfig *c, const char *value, Error **errp);

void
e2b_config_defaults(E2bConfig *c)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->address, sizeof(c->address), "%s", E2B_DEFAULT_ADDRESS);
    c->api_port = E2B_DEFAULT_API_PORT;
    c->envd_port = E2B_DEFAULT_ENVD_PORT;
    snprintf(c->domain, sizeof(c->domain), "%s", E2B_DEFAULT_DOMAIN);
    (void) parse_template_map(c, E2B_DEFAULT_TEMPLATE_MAP, NULL);
    c->lifetime_usec = E2B_DEFAULT_LIFETIME_S * USEC_PER_SEC;
    c->create_wait_usec = E2B_DEFAULT_CREATE_WAIT_S * USEC_PER_SEC;
}

static int
parse_uint(const char *v, unsigned long min, unsigned long max, unsigned long *ret)
{
    char *end;
    if (v[0] < '0' || v[0] > '9' || strlen(v) > 10)
        return -1;
    unsigned long n = strtoul(v, &end, 10);
    if (*end || n < min || n > max)
        return -1;
    *ret = n;
    return 0;
}

static bool
is_numeric_address(const char *v)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, v, buf) == 1 || inet_pton(AF_INET6, v, buf) == 1;
}

/* A DNS name: labels of [a-z0-9-] (any case), 1..63 bytes, not starting or ending with '-'. */
static bool
is_domain(const char *v)
{
    size_t n = strlen(v), label = 0;
    if (n == 0 || n > E2B_DOMAIN_MAX_BYTES || v[0] == '.' || v[n - 1] == '.')
        return false;
    for (size_t i = 0; i <= n; i++) {
        char ch = v[i];
        if (ch == '.' || ch == '\0') {
            if (label == 0 || label > 63 || v[i - 1] == '-' || v[i - label] == '-')
                return false;
            label = 0;
            continue;
        }
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-", ch))
            return false;
        label++;
    }
    return true;
}

static bool
is_absolute_path(const char *v)
{
    return v[0] == '/';
}

/* One "name=pool" entry of [start, end) into t. */
static int
parse_template_entry(const char *start, const char *end, E2bTemplate *t)
{
    const char *eq = memchr(start, '=', (size_t) (end - start));
    while (start < end && *start == ' ')
        start++;
    while (end > start && end[-1] == ' ')
        end--;
    if (!eq || eq <= start || eq >= end - 1)
        return -1;
    const char *name_end = eq, *pool = eq + 1;
    while (name_end > start && name_end[-1] == ' ')
        name_end--;
    while (pool < end && *pool == ' ')
        pool++;
    size_t nl = (size_t) (name_end - start), pl = (size_t) (end - pool);
    if (nl == 0 || nl > E2B_TEMPLATE_NAME_MAX_BYTES || pl == 0 || pl > E2B_POOL_NAME_MAX_BYTES)
        return -1;
    memcpy(t->name, start, nl);
    t->name[nl] = '\0';
    memcpy(t->pool, pool, pl);
    t->pool[pl] = '\0';
    if (strspn(t->name, TEMPLATE_NAME_CHARS) != nl || strspn(t->pool, POOL_NAME_CHARS) != pl)
        return -1;
    return 0;
}

static int
parse_template_map(E2bConfig *c, const char *value, Error **errp)
{
    E2bTemplate t[E2B_TEMPLATES_MAX];
    size_t n = 0;

    for (const char *p = value; *p;) {
        const char *comma = strchr(p, ','), *end = comma ? comma : p + strlen(p);
        if (n == E2B_TEMPLATES_MAX)
            return error_set(errp, E_INVALID, 0, "template_map: at most %d entries",
                             E2B_TEMPLATES_MAX);
        if (parse_template_entry(p, end, &t[n]) < 0)
            return error_set(errp, E_INVALID, 0,
                             "template_map: entries are name=pool, names of "
                             "1..%d [A-Za-z0-9._-/:], pools of [a-z0-9-]",
                             E2B_TEMPLATE_NAME_MAX_BYTES);
        for (size_t i = 0; i < n; i++)
            if (strcmp(t[i].name, t[n].name) == 0)
                return error_set(errp, E_INVALID, 0, "template_map: %s is mapped twice", t[n].name);
        n++;
        p = comma ? comma + 1 : end;
    }
    memcpy(c->templates, t, n * sizeof(t[0]));
    c->n_templates = n;
    return 0;
}

static int
set_bool(bool *field, const char *value)
{
    if (strcmp(value, "true") == 0 || strcmp(value, "yes") == 0 || strcmp(value, "1") == 0)
        *field = true;
    else if (strcmp(value, "false") == 0 || strcmp(value, "no") == 0 || strcmp(value, "0") == 0)
        *field = false;
    else
        return -1;
    return 0;
}

static int
set_text(char *field, size_t cap, const char *value, bool (*ok)(const char *))
{
    if (strlen(value) >= cap || !ok(value))
        return -1;
    memcpy(field, value, strlen(value) + 1);
    return 0;
}

int
e2b_config_set(E2bConfig *c, const char *key, const char *value, Error **errp)
{
    unsigned long n;

    if (strcmp(key, "enabled") == 0)
        return set_bool(&c->enabled, value) < 0
                   ? error_set(errp, E_INVALID, 0, "enabled must be true or false")
                   : 0;
    if (strcmp(key, "address") == 0)
        return set_text(c->address, sizeof(c->address), value, is_numeric_address) < 0
                   ? error_set(errp, E_INVALID, 0, "address must be a numeric IPv4 or IPv6 address")
                   : 0;
    if (strcmp(key, "domain") == 0)
        return set_text(c->domain, sizeof(c->domain), value, is_domain) < 0
                   ? error_set(errp, E_INVALID, 0, "domain must be a DNS name")
                   : 0;
    if (strcmp(key, "template_map") == 0) {
        if (parse_template_map(c, value, errp) < 0)
            return -1;
        c->template_map_set = true;
        return 0;
    }
    char *path = strcmp(key, "tls_cert") == 0  ? c->tls_cert
                 : strcmp(key, "tls_key") == 0 ? c->tls_key
                                               : NULL;
    if (path)
        return set_text(path, E2B_PATH_MAX_BYTES + 1, value, is_absolute_path) < 0
                   ? error_set(errp, E_INVALID, 0,
                               "%s must be an absolute path of at most %d bytes", key,
                               E2B_PATH_MAX_BYTES)
                   : 0;
    unsigned *port = strcmp(key, "api_port") == 0    ? &c->api_port
                     : strcmp(key, "envd_port") == 0 ? &c->envd_port
                                                     : NULL;
    if (port)
        return parse_uint(value, 0, 65535, &n) < 0
                   ? error_set(errp, E_INVALID, 0, "%s must be a number in 0..65535", key)
                   : (*port = (unsigned) n, 0);
    bool life = strcmp(key, "lifetime_s") == 0, wait = strcmp(key, "create_wait_s") == 0;
    if (life || wait) {
        uint64_t max = life ? E2B_LIFETIME_MAX_S : E2B_CREATE_WAIT_MAX_S, s;
        if (!unit_parse(value, unit_of_key(key), &s) || s < 1 || s > max)
            return error_set(errp, E_INVALID, 0,
                             "%s must be a number of seconds in 1..%llu (or with a unit: %s)", key,
                             (unsigned long long) max, unit_suffixes(UNIT_DURATION));
        *(life ? &c->lifetime_usec : &c->create_wait_usec) = s * USEC_PER_SEC;
        return 0;
    }
    return error_set(errp, E_INVALID, 0, "unknown key '%.64s' in [e2b]", key);
}

void
e2b_config_default_template(E2bConfig *c, const char *name, const char *pool)
{
    if (c->template_map_set || c->n_templates == E2B_TEMPLATES_MAX ||
        e2b_config_template_pool(c, name) || strlen(name) > E2B_TEMPLATE_NAME_MAX_BYTES ||
        strlen(pool) > E2B_POOL_NAME_MAX_BYTES)
        return;
    E2bTemplate *t = &c->templates[c->n_templates++];
    snprintf(t->name, sizeof(t->name), "%s", name);
    snprintf(t->pool, sizeof(t->pool), "%s", pool);
}

const char *
e2b_config_template_pool(const E2bConfig *c, const char *template_name)
{
    for (size_t i = 0; i < c->n_templates; i++)
        if (strcmp(c->templates[i].name, template_name) == 0)
            return c->templates[i].pool;
    return NULL;
}

bool
e2b_config_format(const E2bConfig *c, size_t i, const char **ret_key, char *buf, size_t cap)
{
    static const char *const names[] = {"enabled",  "address",      "api_port",   "envd_port",
                                        "domain",   "template_map", "lifetime_s", "create_wait_s",
                                        "tls_cert", "tls_key"};
    if (i >= ELEMENTSOF(names))
        return false;
    *ret_key = names[i];
    buf[0] = '\0';
    switch (i) {
    case 0:
        snprintf(buf, cap, "%s", c->enabled ? "true" : "false");
        break;
    case 1:
        snprintf(buf, cap, "%s", c->address);
        break;
    case 2:
        snprintf(buf, cap, "%u", c->api_port);
        break;
    case 3:
        snprintf(buf, cap, "%u", c->envd_port);
        break;
    case 4:
        snprintf(buf, cap, "%s", c->domain);
        break;
    case 5:
        for (size_t t = 0, off = 0; t < c->n_templates && off < cap; t++)
            off += (size_t) snprintf(buf + off, cap - off, "%s%s=%s", t ? "," : "",
                                     c->templates[t].name, c->templates[t].pool);
        break;
    case 6:
        snprintf(buf, cap, "%llu", (unsigned long long) (c->lifetime_usec / USEC_PER_SEC));
        break;
    case 7:
        snprintf(buf, cap, "%llu", (unsigned long long) (c->create_wait_usec / USEC_PER_SEC));
        break;
    case 8:
        snprintf(buf, cap, "%s", c->tls_cert);
        break;
    default:
        snprintf(buf, cap, "%s", c->tls_key);
        break;
    }
    return true;
}
