/* Kernel command line and module list parsing: see bootcfg.h. */
#include "bootcfg.h"

#include <string.h>

#include "ascii.h"

/* Copies one whitespace-separated token, dropping double quotes (the kernel's own rule). */
static size_t
bootcfg_token(const char *p, char *out, size_t cap, bool *ret_truncated)
{
    size_t i = 0, o = 0;
    bool quoted = false;

    *ret_truncated = false;
    for (; p[i] && (quoted || (p[i] != ' ' && p[i] != '\t' && p[i] != '\n')); i++) {
        if (p[i] == '"') {
            quoted = !quoted;
            continue;
        }
        if (o + 1 < cap)
            out[o++] = p[i];
        else
            *ret_truncated = true;
    }
    out[o] = '\0';
    return i;
}

static bool
bootcfg_set(char *dst, const char *value, bool truncated, const char *extra)
{
    if (truncated || value[0] == '\0' || !ascii_charset_ok(value, extra))
        return false;
    memcpy(dst, value, strlen(value) + 1);
    return true;
}

static int
bootcfg_apply(BootConfig *c, const char *tok, bool truncated)
{
    static const char root_key[] = "stockade.root=", port_key[] = "stockade.port=",
                      debug_key[] = "stockade.debug=";

    if (strncmp(tok, root_key, sizeof(root_key) - 1) == 0) {
        const char *v = tok + sizeof(root_key) - 1;
        bool ok = strncmp(v, "/dev/", 5) == 0 && !strstr(v, "..");
        return ok && bootcfg_set(c->root, v, truncated, "/_-.") ? 0 : 1;
    }
    if (strncmp(tok, port_key, sizeof(port_key) - 1) == 0)
        return bootcfg_set(c->port, tok + sizeof(port_key) - 1, truncated, "._-") ? 0 : 1;
    if (strncmp(tok, debug_key, sizeof(debug_key) - 1) == 0) {
        c->debug = strcmp(tok + sizeof(debug_key) - 1, "1") == 0;
        return 0;
    }
    return 0;
}

int
bootcfg_parse_cmdline(const char *cmdline, BootConfig *ret)
{
    BootConfig c = {.debug = false};
    char tok[BOOT_VALUE_MAX_BYTES + 32];
    int ignored = 0;

    memcpy(c.port, PORT_NAME_DEFAULT, sizeof(PORT_NAME_DEFAULT));
    for (const char *p = cmdline; *p;) {
        if (*p == ' ' || *p == '\t' || *p == '\n') {
            p++;
            continue;
        }
        bool truncated;
        p += bootcfg_token(p, tok, sizeof(tok), &truncated);
        ignored += bootcfg_apply(&c, tok, truncated);
    }
    *ret = c;
    return ignored;
}

ModLine
bootcfg_next_module(const char *text, size_t *cursor, char *out, size_t cap)
{
    while (text[*cursor]) {
        const char *line = text + *cursor;
        size_t len = strcspn(line, "\n");
        *cursor += len + (line[len] == '\n');
        while (len > 0 && (line[0] == ' ' || line[0] == '\t'))
            line++, len--;
        while (len > 0 && (line[len - 1] == ' ' || line[len - 1] == '\t' || line[len - 1] == '\r'))
            len--;
        if (len == 0 || line[0] == '#')
            continue;
        size_t n = len < cap ? len : cap - 1;
        memcpy(out, line, n);
        out[n] = '\0';
        bool bad = n < len || memchr(line, '/', len) || line[0] == '.';
        return bad ? MODLINE_BAD : MODLINE_NAME;
    }
    return MODLINE_END;
}
