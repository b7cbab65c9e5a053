/* See tarbuild.h. */
#include "tarbuild.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void
tb_free(TarBuf *t)
{
    free(t->buf);
    *t = (TarBuf){0};
}

void
tb_put(TarBuf *t, const void *p, size_t n)
{
    if (t->len + n > t->cap) {
        t->cap = (t->len + n) * 2 + TB_BLOCK;
        t->buf = realloc(t->buf, t->cap);
        if (!t->buf)
            abort();
    }
    memcpy(t->buf + t->len, p, n);
    t->len += n;
}

void
tb_pad(TarBuf *t)
{
    static const uint8_t zero[TB_BLOCK];
    size_t rem = t->len % TB_BLOCK;
    if (rem)
        tb_put(t, zero, TB_BLOCK - rem);
}

void
tb_header(TarBuf *t, const char *name, char type, uint32_t mode, uint64_t size, const char *link,
          bool gnu)
{
    uint8_t h[TB_BLOCK] = {0};
    unsigned sum = 0;

    strncpy((char *) h, name, 100);
    snprintf((char *) h + 100, 8, "%07o", mode);
    snprintf((char *) h + 108, 8, "%07o", 0u);
    snprintf((char *) h + 116, 8, "%07o", 0u);
    snprintf((char *) h + 124, 12, "%011llo", (unsigned long long) (size & 077777777777ull));
    snprintf((char *) h + 136, 12, "%011o", TB_MTIME);
    h[156] = (uint8_t) type;
    if (link)
        strncpy((char *) h + 157, link, 100);
    if (gnu)
        memcpy(h + 257, "ustar  ", 8);
    else
        memcpy(h + 257,
               "ustar\0"
               "00",
               8);
    memset(h + 148, ' ', 8);
    for (size_t i = 0; i < TB_BLOCK; i++)
        sum += h[i];
    snprintf((char *) h + 148, 8, "%06o", sum);
    h[155] = ' ';
    tb_put(t, h, sizeof(h));
}

void
tb_file(TarBuf *t, const char *name, uint32_t mode, const void *data, size_t len)
{
    tb_header(t, name, '0', mode, len, NULL, false);
    tb_put(t, data, len);
    tb_pad(t);
}

void
tb_text(TarBuf *t, const char *name, uint32_t mode, const char *text)
{
    tb_file(t, name, mode, text, strlen(text));
}

void
tb_entry(TarBuf *t, const char *name, char type, uint32_t mode)
{
    tb_header(t, name, type, mode, 0, NULL, false);
}

void
tb_longname(TarBuf *t, const char *name, size_t len)
{
    tb_header(t, "././@LongLink", 'L', 0644, len + 1, NULL, true);
    tb_put(t, name, len);
    tb_put(t, "", 1);
    tb_pad(t);
}

void
tb_pax(TarBuf *t, const char *key, const char *value, size_t value_len)
{
    size_t body = 1 + strlen(key) + 1 + value_len + 1; /* " key=value\n" */
    size_t digits = 1, total;
    for (;;) { /* the length counts its own digits */
        total = body + digits;
        size_t d = (size_t) snprintf(NULL, 0, "%zu", total);
        if (d == digits)
            break;
        digits = d;
    }
    char head[64];
    int hn = snprintf(head, sizeof(head), "%zu %s=", total, key);
    tb_header(t, "PaxHeaders/x", 'x', 0644, total, NULL, false);
    tb_put(t, head, (size_t) hn);
    tb_put(t, value, value_len);
    tb_put(t, "\n", 1);
    tb_pad(t);
}

void
tb_end(TarBuf *t)
{
    static const uint8_t zero[2 * TB_BLOCK];
    tb_put(t, zero, sizeof(zero));
}

int
tb_memfd(const TarBuf *t)
{
    int fd = memfd_create("tar", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    if (write(fd, t->buf, t->len) != (ssize_t) t->len || lseek(fd, 0, SEEK_SET) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}
