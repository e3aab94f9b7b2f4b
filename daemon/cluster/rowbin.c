/* SPDX-License-Identifier: MIT */
/*
 * rowbin: RowBinary encoding and gzip for the shipper's request bodies (cluster_int.h).
 */
#include "cluster_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

static unsigned char *room(struct rb_buf *b, size_t n)
{
    if (b->err)
        return NULL;
    if (b->cap - b->len < n) {
        size_t cap = b->cap ? b->cap : 1 << 16;
        while (cap - b->len < n)
            cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        if (!p) {
            b->err = -ENOMEM;
            return NULL;
        }
        b->p = p;
        b->cap = cap;
    }
    unsigned char *at = b->p + b->len;
    b->len += n;
    return at;
}

void rb_reset(struct rb_buf *b)
{
    b->len = 0;
    b->err = 0;
}

void rb_free(struct rb_buf *b)
{
    free(b->p);
    *b = (struct rb_buf){0};
}

void rb_u64(struct rb_buf *b, uint64_t v)
{
    unsigned char *p = room(b, 8);
    if (p)
        for (int i = 0; i < 8; i++)
            p[i] = (unsigned char)(v >> (8 * i));
}

void rb_f64(struct rb_buf *b, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    rb_u64(b, bits);
}

void rb_i64(struct rb_buf *b, int64_t v)
{
    rb_u64(b, (uint64_t)v);
}

void rb_u32(struct rb_buf *b, uint32_t v)
{
    unsigned char *p = room(b, 4);
    if (p)
        for (int i = 0; i < 4; i++)
            p[i] = (unsigned char)(v >> (8 * i));
}

void rb_u8(struct rb_buf *b, uint8_t v)
{
    unsigned char *p = room(b, 1);
    if (p)
        *p = v;
}

void rb_varuint(struct rb_buf *b, size_t n)
{
    unsigned char tmp[10];
    size_t k = 0;
    do {
        tmp[k] = (unsigned char)(n & 0x7f);
        n >>= 7;
        if (n)
            tmp[k] |= 0x80;
        k++;
    } while (n);
    unsigned char *p = room(b, k);
    if (p)
        memcpy(p, tmp, k);
}

void rb_add(struct rb_buf *b, const void *s, size_t n)
{
    unsigned char *p = room(b, n);
    if (p && n)
        memcpy(p, s, n);
}

void rb_str(struct rb_buf *b, const char *s, size_t n)
{
    rb_varuint(b, n);
    unsigned char *p = room(b, n);
    if (p && n)
        memcpy(p, s, n);
}

static int hex4(const char *s, unsigned *ret)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return -1;
    }
    *ret = v;
    return 0;
}

static size_t put_utf8(unsigned char *o, unsigned v)
{
    if (v < 0x80) {
        o[0] = (unsigned char)v;
        return 1;
    }
    if (v < 0x800) {
        o[0] = (unsigned char)(0xc0 | v >> 6);
        o[1] = (unsigned char)(0x80 | (v & 0x3f));
        return 2;
    }
    if (v < 0x10000) {
        o[0] = (unsigned char)(0xe0 | v >> 12);
        o[1] = (unsigned char)(0x80 | ((v >> 6) & 0x3f));
        o[2] = (unsigned char)(0x80 | (v & 0x3f));
        return 3;
    }
    o[0] = (unsigned char)(0xf0 | v >> 18);
    o[1] = (unsigned char)(0x80 | ((v >> 12) & 0x3f));
    o[2] = (unsigned char)(0x80 | ((v >> 6) & 0x3f));
    o[3] = (unsigned char)(0x80 | (v & 0x3f));
    return 4;
}

/* Ingest validated every stored line (jscan: RFC 8259, escapes and surrogates checked), so the
 * escapes here are well formed; anything odd is copied as it is rather than judged again. */
void rb_json_str(struct rb_buf *b, const char *raw, size_t n)
{
    if (!raw) {
        rb_str(b, "", 0);
        return;
    }
    if (n < 2 || raw[0] != '"') {
        rb_str(b, raw, n);
        return;
    }
    raw++;
    n -= 2;
    if (!memchr(raw, '\\', n)) {
        rb_str(b, raw, n);
        return;
    }
    /* The unescaped text is never longer than the escaped one: write it after a length slot
     * sized for n, then move it left if the length took fewer bytes. */
    size_t at = b->len;
    size_t k = 0;
    for (size_t m = n;; m >>= 7) {
        k++;
        if (m < 0x80)
            break;
    }
    unsigned char *o = room(b, k + n);
    if (!o)
        return;
    unsigned char *out = o + k;
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (raw[i] != '\\' || i + 1 >= n) {
            out[w++] = (unsigned char)raw[i];
            continue;
        }
        char e = raw[++i];
        unsigned v;
        switch (e) {
        case 'b': out[w++] = '\b'; break;
        case 'f': out[w++] = '\f'; break;
        case 'n': out[w++] = '\n'; break;
        case 'r': out[w++] = '\r'; break;
        case 't': out[w++] = '\t'; break;
        case 'u':
            if (i + 4 < n && hex4(raw + i + 1, &v) == 0) {
                i += 4;
                unsigned lo;
                if (v >= 0xd800 && v < 0xdc00 && i + 6 < n && raw[i + 1] == '\\' &&
                    raw[i + 2] == 'u' && hex4(raw + i + 3, &lo) == 0 && lo >= 0xdc00 &&
                    lo < 0xe000) {
                    v = 0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00);
                    i += 6;
                }
                w += put_utf8(out + w, v);
            } else {
                out[w++] = 'u';
            }
            break;
        default: out[w++] = (unsigned char)e; break;
        }
    }
    /* Rewrite the length in as few bytes as it needs, and close the gap. */
    b->len = at;
    rb_varuint(b, w);
    size_t kl = b->len - at;
    memmove(b->p + at + kl, b->p + at + k, w);
    b->len = at + kl + w;
}

int rb_gzip(const unsigned char *in, size_t n, struct rb_buf *out)
{
    rb_reset(out);
    z_stream z = {0};
    if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -ENOMEM;
    size_t bound = deflateBound(&z, (uLong)n);
    unsigned char *p = room(out, bound);
    if (!p) {
        deflateEnd(&z);
        return -ENOMEM;
    }
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)n;
    z.next_out = p;
    z.avail_out = (uInt)bound;
    int rc = deflate(&z, Z_FINISH);
    out->len = rc == Z_STREAM_END ? z.total_out : 0;
    deflateEnd(&z);
    return rc == Z_STREAM_END ? 0 : -ENOMEM;
}
