/* The image's exec defaults: see imagecfg.h. */
#include "imagecfg.h"

#include <errno.h>
#include <string.h>

#include "ascii.h"

#define IMAGECFG_ENV_MAX_BYTES (ENV_NAME_MAX_BYTES + 1 + ENV_VALUE_MAX_BYTES)

static int
hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Decodes v[0..len) into out (cap bytes with the NUL); false on a bad escape, a NUL or no room. */
static bool
unescape(const char *v, size_t len, char *out, size_t cap, size_t *ret_len)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        char c = v[i];
        if (c == '%') {
            if (i + 2 >= len)
                return false;
            int hi = hexval(v[i + 1]), lo = hexval(v[i + 2]);
            if (hi < 0 || lo < 0)
                return false;
            c = (char) (hi * 16 + lo);
            i += 2;
        }
        if (c == '\0' || o + 1 >= cap)
            return false;
        out[o++] = c;
    }
    out[o] = '\0';
    *ret_len = o;
    return true;
}

static bool
env_name_ok(const char *s, size_t len)
{
    if (len == 0 || len > ENV_NAME_MAX_BYTES || (s[0] >= '0' && s[0] <= '9'))
        return false;
    for (size_t i = 0; i < len; i++)
        if (!(s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
              (s[i] >= '0' && s[i] <= '9')))
            return false;
    return true;
}

static int
cfg_env(ImageCfg *c, char *kv)
{
    char *eq = strchr(kv, '=');
    if (!eq || !env_name_ok(kv, (size_t) (eq - kv)) || strlen(eq + 1) > ENV_VALUE_MAX_BYTES ||
        c->env.n >= ENV_MAX_COUNT)
        return -1;
    *eq = '\0';
    if (env_list_set(&c->env, kv, eq + 1) < 0)
        return -2;
    return 0;
}

static int
cfg_user(ImageCfg *c, const char *v)
{
    const char *colon = strchr(v, ':');
    if (c->has_user || !colon || !ascii_parse_u32(v, (size_t) (colon - v), &c->uid) ||
        !ascii_parse_u32(colon + 1, strlen(colon + 1), &c->gid) || c->uid < EXEC_MIN_UID ||
        c->gid < EXEC_MIN_UID)
        return -1;
    c->has_user = true;
    return 0;
}

/* One "KEY VALUE" line. 0, -1 (bad), -2 (ENOMEM). */
static int
cfg_line(ImageCfg *c, const char *line, size_t len, char *buf)
{
    const char *sp = memchr(line, ' ', len);
    size_t vlen;
    if (!sp ||
        !unescape(sp + 1, len - (size_t) (sp + 1 - line), buf, IMAGECFG_ENV_MAX_BYTES + 1, &vlen))
        return -1;
    size_t klen = (size_t) (sp - line);
    if (klen == 3 && memcmp(line, "env", 3) == 0)
        return cfg_env(c, buf);
    if (klen == 3 && memcmp(line, "cwd", 3) == 0) {
        if (c->cwd[0] || buf[0] != '/' || vlen > PATH_MAX_BYTES)
            return -1;
        memcpy(c->cwd, buf, vlen + 1);
        return 0;
    }
    if (klen == 4 && memcmp(line, "user", 4) == 0)
        return cfg_user(c, buf);
    if ((klen == 10 && memcmp(line, "entrypoint", 10) == 0) ||
        (klen == 3 && memcmp(line, "cmd", 3) == 0))
        return 0;
    return -1;
}

int
imagecfg_parse(const char *text, size_t len, ImageCfg *ret, size_t *ret_line)
{
    static char buf[IMAGECFG_ENV_MAX_BYTES + 1];
    ImageCfg c = {0};
    size_t pos = 0, lineno = 0;

    if (len > IMAGECFG_MAX_BYTES)
        goto fail_clear;
    while (pos < len) {
        const char *line = text + pos, *nl = memchr(line, '\n', len - pos);
        size_t n = nl ? (size_t) (nl - line) : len - pos;
        pos += n + (nl ? 1 : 0);
        lineno++;
        if (n == 0 || line[0] == '#')
            continue;
        int r = cfg_line(&c, line, n, buf);
        if (r == -2) {
            imagecfg_clear(&c);
            errno = ENOMEM;
            return -1;
        }
        if (r < 0)
            goto fail_clear;
    }
    *ret = c;
    return 0;

fail_clear:
    imagecfg_clear(&c);
    *ret_line = lineno;
    errno = EINVAL;
    return -1;
}

void
imagecfg_clear(ImageCfg *c)
{
    env_list_clear(&c->env);
    *c = (ImageCfg){0};
}
