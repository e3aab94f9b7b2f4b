/* SPDX-License-Identifier: MIT */
/* Binary ring records to protocol lines (docs/PROTOCOL.md section 2), on the flush thread.
 *
 * Strings are copied byte for byte into JSON string literals: '"', '\\' and control characters
 * are escaped, valid UTF-8 is kept as is, and every byte that does not start a valid UTF-8
 * sequence (stray continuation, overlong form, surrogate, above U+10FFFF, cut short) becomes
 * U+FFFD, so the daemon never sees a line it would reject as malformed. Numbers are written by
 * hand (no printf: the flush thread runs in the user's locale, where the decimal point may be a
 * comma); times go out as microseconds with three exact decimals from integer nanoseconds.
 */
#include "stepscope_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *put_lit(char *p, const char *s)
{
    size_t n = strlen(s);
    memcpy(p, s, n);
    return p + n;
}

static char *put_u64(char *p, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = tmp[--n];
    return p;
}

static char *put_i64(char *p, int64_t v)
{
    if (v < 0) {
        *p++ = '-';
        return put_u64(p, (uint64_t)0 - (uint64_t)v);
    }
    return put_u64(p, (uint64_t)v);
}

/* Nanoseconds as microseconds "q.rrr", exact. */
static char *put_us(char *p, int64_t ns)
{
    uint64_t a;
    if (ns < 0) {
        *p++ = '-';
        a = (uint64_t)0 - (uint64_t)ns;
    } else {
        a = (uint64_t)ns;
    }
    p = put_u64(p, a / 1000);
    unsigned r = (unsigned)(a % 1000);
    *p++ = '.';
    *p++ = (char)('0' + r / 100);
    *p++ = (char)('0' + r / 10 % 10);
    *p++ = (char)('0' + r % 10);
    return p;
}

static char *put_double(char *p, double v)
{
    if (!isfinite(v))
        return put_lit(p, "null");
    if (v == floor(v) && fabs(v) < 9007199254740992.0)
        return put_i64(p, (int64_t)v);
    /* The shortest of 15..17 significant digits that reads back as v (strtod reads what
     * snprintf writes, in whatever locale). */
    char tmp[40];
    int n = 0;
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (n <= 0 || (size_t)n >= sizeof tmp)
            return put_lit(p, "null");
        if (strtod(tmp, NULL) == v)
            break;
    }
    for (int i = 0; i < n; i++) /* a locale's decimal comma is not JSON */
        *p++ = tmp[i] == ',' ? '.' : tmp[i];
    return p;
}

/* Length of the valid UTF-8 sequence at s (n bytes available, s[0] >= 0x80), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t k;
    unsigned char lo = 0x80, hi = 0xBF; /* range of the second byte */
    if (c >= 0xC2 && c <= 0xDF)
        k = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        k = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        k = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else {
        return 0;
    }
    if (n < k || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < k; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return k;
}

char *ss__put_str(char *p, const char *str, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    *p++ = '"';
    size_t i = 0;
    while (i < n) {
        unsigned char ch = s[i];
        if (ch >= 0x20 && ch < 0x80 && ch != '"' && ch != '\\') {
            *p++ = (char)ch;
            i++;
            continue;
        }
        if (ch >= 0x80) {
            size_t k = utf8_seq(s + i, n - i);
            if (k) {
                memcpy(p, s + i, k);
                p += k;
                i += k;
            } else {
                p = put_lit(p, "\xEF\xBF\xBD");
                i++;
            }
            continue;
        }
        *p++ = '\\';
        switch (ch) {
        case '"': *p++ = '"'; break;
        case '\\': *p++ = '\\'; break;
        case '\n': *p++ = 'n'; break;
        case '\r': *p++ = 'r'; break;
        case '\t': *p++ = 't'; break;
        case '\b': *p++ = 'b'; break;
        case '\f': *p++ = 'f'; break;
        default:
            *p++ = 'u';
            *p++ = '0';
            *p++ = '0';
            *p++ = hex[ch >> 4];
            *p++ = hex[ch & 15];
        }
        i++;
    }
    *p++ = '"';
    return p;
}

size_t ss__clamp_utf8(const char *s, size_t n, size_t max)
{
    if (n <= max)
        return n;
    /* Back off continuation bytes so a multi-byte character is not cut in half. */
    size_t k = max;
    while (k > 0 && k > max - 3 && ((unsigned char)s[k] & 0xC0) == 0x80)
        k--;
    return k;
}

static char *put_key_str(char *p, const char *key, const char *s, size_t n)
{
    p = put_lit(p, key);
    return ss__put_str(p, s, n);
}

size_t ss__encode_record(const struct ss_client *c, const struct ss__rec_hdr *hdr, char *out)
{
    const unsigned char *body = (const unsigned char *)(hdr + 1);
    char *p = out;
    switch (hdr->kind) {
    case SS__REC_SPAN: {
        struct ss__rec_span f;
        memcpy(&f, body, sizeof f);
        const char *name = (const char *)body + sizeof f;
        const char *cat = name + hdr->len1;
        int64_t dur = f.end_ns > f.begin_ns ? f.end_ns - f.begin_ns : 0;
        p = put_key_str(p, "{\"ph\":\"X\",\"name\":", name, hdr->len1);
        p = put_key_str(p, ",\"cat\":", cat, f.cat_len);
        p = put_us(put_lit(p, ",\"ts\":"), f.begin_ns);
        p = put_us(put_lit(p, ",\"dur\":"), dur);
        p = put_i64(put_lit(p, ",\"pid\":"), c->pid);
        p = put_i64(put_lit(p, ",\"tid\":"), f.tid);
        break;
    }
    case SS__REC_COUNTER: {
        struct ss__rec_counter f;
        memcpy(&f, body, sizeof f);
        p = put_key_str(p, "{\"ph\":\"C\",\"name\":", (const char *)body + sizeof f, hdr->len1);
        p = put_us(put_lit(p, ",\"ts\":"), f.ts_ns);
        p = put_i64(put_lit(p, ",\"pid\":"), c->pid);
        p = put_i64(put_lit(p, ",\"tid\":"), f.tid);
        p = put_double(put_lit(p, ",\"args\":{\"value\":"), f.value);
        *p++ = '}';
        break;
    }
    case SS__REC_QUEUE: {
        struct ss__rec_queue f;
        memcpy(&f, body, sizeof f);
        p = put_key_str(p, "{\"type\":\"queue\",\"name\":", (const char *)body + sizeof f,
                        hdr->len1);
        p = put_i64(put_lit(p, ",\"size\":"), f.size < 0 ? 0 : f.size);
        if (f.capacity >= 0)
            p = put_i64(put_lit(p, ",\"capacity\":"), f.capacity);
        if (f.step >= 0)
            p = put_i64(put_lit(p, ",\"step\":"), f.step);
        p = put_us(put_lit(p, ",\"ts_us\":"), f.ts_ns);
        break;
    }
    case SS__REC_STEP: {
        struct ss__rec_step f;
        memcpy(&f, body, sizeof f);
        p = put_i64(put_lit(p, "{\"type\":\"step\",\"step\":"), f.step);
        p = put_us(put_lit(p, ",\"begin_us\":"), f.begin_ns);
        p = put_us(put_lit(p, ",\"end_us\":"), f.end_ns > f.begin_ns ? f.end_ns : f.begin_ns);
        if (f.samples >= 0)
            p = put_i64(put_lit(p, ",\"samples\":"), f.samples);
        const unsigned char *q = body + sizeof f;
        if (hdr->len1) {
            p = put_lit(p, ",\"phases\":{");
            for (unsigned i = 0; i < hdr->len1; i++) {
                int64_t dur;
                uint16_t len;
                memcpy(&dur, q, sizeof dur);
                memcpy(&len, q + sizeof dur, sizeof len);
                q += sizeof dur + sizeof len;
                if (i)
                    *p++ = ',';
                p = ss__put_str(p, (const char *)q, len);
                *p++ = ':';
                p = put_us(p, dur < 0 ? 0 : dur);
                q += len;
            }
            *p++ = '}';
        }
        break;
    }
    default:
        return 0;
    }
    *p++ = '}';
    *p++ = '\n';
    return (size_t)(p - out);
}

size_t ss__encode_hello(const struct ss_client *c, uint64_t seq, char *out, size_t cap)
{
    /* Every string is at most 256 bytes (clamped in client.c): 6 * 256 + 2 each fits easily
     * in a 16 KiB scratch; then the length is checked against cap. */
    char tmp[16384];
    char *p = tmp;
    p = put_key_str(p, "{\"hello\":\"stepscope/1\",\"job\":", c->job, strlen(c->job));
    p = put_i64(put_lit(p, ",\"rank\":"), c->rank);
    p = put_i64(put_lit(p, ",\"world_size\":"), c->world_size);
    if (c->local_rank >= 0)
        p = put_i64(put_lit(p, ",\"local_rank\":"), c->local_rank);
    p = put_key_str(p, ",\"host\":", c->host, strlen(c->host));
    p = put_i64(put_lit(p, ",\"pid\":"), c->pid);
    p = put_lit(p, ",\"clock\":\"realtime\",\"collector\":\"stepscope-c/" SS_VERSION "\"");
    if (c->framework)
        p = put_key_str(p, ",\"framework\":", c->framework, strlen(c->framework));
    if (c->framework_version)
        p = put_key_str(p, ",\"framework_version\":", c->framework_version,
                        strlen(c->framework_version));
    if (c->run)
        p = put_key_str(p, ",\"run\":", c->run, strlen(c->run));
    if (c->capture_cb)
        p = put_lit(p, ",\"capabilities\":[\"capture\"]");
    p = put_key_str(p, ",\"stream\":", c->stream, strlen(c->stream));
    p = put_u64(put_lit(p, ",\"seq\":"), seq);
    p = put_lit(p, "}\n");
    size_t n = (size_t)(p - tmp);
    if (n > cap)
        return 0;
    memcpy(out, tmp, n);
    return n;
}
