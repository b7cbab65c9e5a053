/* Test tool for the workspace tar writer (hostd/api/tarwriter.c) and our tar reader
 * (hostd/extract/tar.c), driven by api_tarwriter_readers.py:
 *   api_tarwriter_tool write DIR   the archive of DIR on stdout, pulled in odd-sized pieces
 *   api_tarwriter_tool list        reads an archive on stdin, one line per entry:
 *                                  "<typeflag> <size> <sha256 of data> <name in hex>", then
 *                                  "end" or "malformed <why>"; a bad name prints "bad". */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fdutil.h"
#include "sha256.h"
#include "tar.h"
#include "tarwriter.h"

static int
cmd_write(const char *dir)
{
    static const size_t caps[] = {1, 3, 100, 511, 512, 513, 1500, 4096, 65536};
    static char buf[65536];
    TarWriter *t = NULL;
    Error *err = NULL;
    if (tarw_new(dir, &t, &err) < 0) {
        fprintf(stderr, "tarw_new: %s\n", err->message);
        return 1;
    }
    for (size_t i = 0;; i++) {
        ssize_t n = tarw_read(t, buf, caps[i % (sizeof(caps) / sizeof(caps[0]))]);
        if (n < 0 || (n > 0 && write_all(STDOUT_FILENO, buf, (size_t) n) < 0)) {
            tarw_free(t);
            return 1;
        }
        if (n == 0)
            break;
    }
    tarw_free(t);
    return 0;
}

static int
stdin_read(void *ctx, void *buf, size_t len, size_t *ret_got)
{
    (void) ctx;
    return read_full(STDIN_FILENO, buf, len, ret_got);
}

static int
cmd_list(void)
{
    static TarReader r;
    static TarEntry e;
    static char data[65536];
    tar_reader_init(&r, stdin_read, NULL);
    for (;;) {
        TarStatus st = tar_reader_next(&r, &e);
        if (st == TAR_END) {
            printf("end\n");
            return 0;
        }
        if (st != TAR_ENTRY) {
            printf("malformed %s\n", r.why ? r.why : "io");
            return 0;
        }
        Sha256 h;
        uint8_t d[SHA256_BYTES];
        size_t got;
        sha256_init(&h);
        while ((st = tar_reader_read(&r, data, sizeof(data), &got)) == TAR_ENTRY && got > 0)
            sha256_update(&h, data, got);
        sha256_final(&h, d);
        printf("%c %llu ", e.typeflag ? e.typeflag : '0', (unsigned long long) e.size);
        for (size_t i = 0; i < SHA256_BYTES; i++)
            printf("%02x", d[i]);
        putchar(' ');
        if (e.path_bad)
            printf("bad");
        for (size_t i = 0; !e.path_bad && i < e.path_len; i++)
            printf("%02x", (unsigned char) e.path[i]);
        putchar('\n');
    }
}

int
main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "write") == 0)
        return cmd_write(argv[2]);
    if (argc == 2 && strcmp(argv[1], "list") == 0)
        return cmd_list();
    fprintf(stderr, "usage: %s write DIR | list\n", argv[0]);
    return 2;
}
