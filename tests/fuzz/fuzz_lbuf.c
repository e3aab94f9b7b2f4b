/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes line framing. Invariant: the lines (and rejections) that come out do not depend on how
 * the input was split into reads. The first input byte picks max_line and a read-size pattern;
 * the rest is framed twice, in 1-byte reads and in pattern-sized reads, and the outputs compared.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lbuf.h"
#include "sbuf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void frame(const uint8_t *in, size_t n, size_t max_line, unsigned seed, struct sbuf *out)
{
    struct lbuf b;
    if (lbuf_init(&b, max_line) < 0)
        abort();
    size_t pos = 0;
    unsigned step = 0;
    while (pos < n) {
        size_t room;
        char *dst = lbuf_space(&b, &room);
        if (room == 0)
            abort();
        size_t want = seed == 0 ? 1 : 1 + ((seed * 2654435761u + step++ * 40503u) % 97);
        size_t k = want < room ? want : room;
        if (k > n - pos)
            k = n - pos;
        memcpy(dst, in + pos, k);
        lbuf_commit(&b, k);
        pos += k;
        char *line;
        size_t len;
        int r;
        while ((r = lbuf_next(&b, &line, &len)) != 0) {
            if (r < 0) {
                sbuf_adds(out, "\x01!");
                continue;
            }
            if (len > max_line || line[len] != '\0')
                abort();
            sbuf_addc(out, '\x01');
            sbuf_add(out, line, len);
        }
    }
    sbuf_printf(out, "\x02%zu", lbuf_pending(&b) ? (size_t)1 : (size_t)0);
    lbuf_done(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t max_line = 1 + data[0] % 64;
    struct sbuf a, b;
    sbuf_init(&a, 1 << 24);
    sbuf_init(&b, 1 << 24);
    frame(data + 1, size - 1, max_line, 0, &a);
    frame(data + 1, size - 1, max_line, data[0], &b);
    if (a.len != b.len || memcmp(a.data, b.data, a.len) != 0)
        abort();
    sbuf_done(&a);
    sbuf_done(&b);
    return 0;
}
