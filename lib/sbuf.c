/* SPDX-License-Identifier: MIT */
#include "sbuf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sbuf_init(struct sbuf *b, size_t max)
{
    memset(b, 0, sizeof *b);
    b->max = max;
}

void sbuf_done(struct sbuf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

void sbuf_reset(struct sbuf *b)
{
    b->len = 0;
    b->error = 0;
    if (b->data)
        b->data[0] = '\0';
}

char *sbuf_steal(struct sbuf *b, size_t *ret_len)
{
    if (b->error || !b->data)
        return NULL;
    char *p = b->data;
    if (ret_len)
        *ret_len = b->len;
    b->data = NULL;
    b->len = b->alloc = 0;
    return p;
}

static bool reserve(struct sbuf *b, size_t n)
{
    if (b->error)
        return false;
    if (n > b->max - b->len) {
        b->error = -EMSGSIZE;
        return false;
    }
    size_t need = b->len + n + 1;
    if (need <= b->alloc)
        return true;
    size_t a = b->alloc ? b->alloc : 256;
    while (a < need)
        a *= 2;
    char *p = realloc(b->data, a);
    if (!p) {
        b->error = -ENOMEM;
        return false;
    }
    b->data = p;
    b->alloc = a;
    return true;
}

void sbuf_add(struct sbuf *b, const void *p, size_t n)
{
    if (!reserve(b, n))
        return;
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void sbuf_adds(struct sbuf *b, const char *s)
{
    sbuf_add(b, s, strlen(s));
}

void sbuf_addc(struct sbuf *b, char c)
{
    sbuf_add(b, &c, 1);
}

void sbuf_printf(struct sbuf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        sbuf_add(b, small, (size_t)n);
        return;
    }
    if (!reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

size_t sbuf_utf8_len(const void *p, size_t n)
{
    const unsigned char *s = p;
    unsigned char c = s[0];
    size_t len;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

void sbuf_add_escaped(struct sbuf *b, const char *s, size_t n, sbuf_escape_cb esc_of,
                      const char *bad_utf8)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t run = 0; /* bytes at p[i - run, i) that need no escaping */
    size_t i = 0;
    while (i < n) {
        unsigned char c = p[i];
        const char *esc;
        char ubuf[SBUF_ESCAPE_MAX];
        if (c >= 0x80) {
            size_t l = sbuf_utf8_len(p + i, n - i);
            if (l > 0) {
                run += l;
                i += l;
                continue;
            }
            esc = bad_utf8;
        } else if (!(esc = esc_of(c, ubuf))) {
            run++;
            i++;
            continue;
        }
        sbuf_add(b, p + i - run, run);
        run = 0;
        sbuf_adds(b, esc);
        i++;
    }
    sbuf_add(b, p + i - run, run);
}

static const char *json_escape(unsigned char c, char *ubuf)
{
    static const char hex[] = "0123456789abcdef";
    if (c >= 0x20 && c != 0x7f && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&')
        return NULL; /* the common case first */
    switch (c) {
    case '"':
        return "\\\"";
    case '\\':
        return "\\\\";
    case '\n':
        return "\\n";
    case '\r':
        return "\\r";
    case '\t':
        return "\\t";
    default:
        break;
    }
    snprintf(ubuf, SBUF_ESCAPE_MAX, "\\u00%c%c", hex[c >> 4], hex[c & 15]);
    return ubuf;
}

void sbuf_json_str(struct sbuf *b, const char *s, size_t n)
{
    sbuf_addc(b, '"');
    sbuf_add_escaped(b, s, n, json_escape, "\\ufffd");
    sbuf_addc(b, '"');
}

void sbuf_json_strz(struct sbuf *b, const char *s)
{
    if (!s)
        sbuf_adds(b, "null");
    else
        sbuf_json_str(b, s, strlen(s));
}

void sbuf_json_us(struct sbuf *b, int64_t ns)
{
    /* Split without overflow: INT64_MIN has no positive counterpart. */
    int64_t whole = ns / 1000;
    int64_t frac = ns % 1000;
    bool neg = ns < 0;
    if (neg) {
        whole = -whole;
        frac = -frac;
    }
    char tmp[32];
    int n;
    if (frac == 0) {
        n = snprintf(tmp, sizeof tmp, "%s%lld", neg ? "-" : "", (long long)whole);
    } else {
        n = snprintf(tmp, sizeof tmp, "%s%lld.%03lld", neg ? "-" : "", (long long)whole,
                     (long long)frac);
        while (tmp[n - 1] == '0')
            n--;
    }
    sbuf_add(b, tmp, (size_t)n);
}
