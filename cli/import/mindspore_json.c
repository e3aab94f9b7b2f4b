/* SPDX-License-Identifier: MIT */
/*
 * The MindSpore converters' strict JSON walker (contract in mindspore_json.h).
 */
#include "mindspore_json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mindspore_int.h"
#include "num.h"

#define MSF_JSON_DEPTH 64

void mj_init(struct mj *j, const char *data, size_t len)
{
    *j = (struct mj){data, data, data + len, 0};
}

int mj_fail(struct mj *j, struct msf_err *e, const char *why)
{
    uint64_t l, c;
    msf_pos_of(j->base, j->p, &l, &c);
    return msf_fail(e, l, c, -EINVAL, "%s", why);
}

static void mj_ws(struct mj *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

bool mj_eat(struct mj *j, char c)
{
    mj_ws(j);
    if (j->p < j->end && *j->p == c) {
        j->p++;
        return true;
    }
    return false;
}

/* Length of the valid UTF-8 sequence at p (no overlongs or surrogates), 0 if invalid. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0];
    size_t n;
    unsigned min;
    if (c < 0x80)
        return 1;
    if ((c & 0xe0) == 0xc0) {
        n = 2;
        min = 0x80;
        c &= 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
        n = 3;
        min = 0x800;
        c &= 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
        n = 4;
        min = 0x10000;
        c &= 0x07;
    } else {
        return 0;
    }
    if ((size_t)(end - p) < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        c = (c << 6) | (p[i] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return 0;
    return n;
}

int mj_string(struct mj *j, const char **s, size_t *n, bool *plain, struct msf_err *e)
{
    mj_ws(j);
    if (j->p >= j->end || *j->p != '"')
        return mj_fail(j, e, "expected a string");
    const char *st = ++j->p;
    bool pl = true;
    while (j->p < j->end && *j->p != '"') {
        unsigned char c = (unsigned char)*j->p;
        if (c < 0x20)
            return mj_fail(j, e, "control character in a string");
        if (c == '\\') {
            pl = false;
            j->p++;
            if (j->p >= j->end)
                break;
            if (*j->p == 'u') {
                for (int k = 1; k <= 4; k++)
                    if (j->p + k >= j->end ||
                        !strchr("0123456789abcdefABCDEF", j->p[k]) || j->p[k] == '\0')
                        return mj_fail(j, e, "bad \\u escape");
                j->p += 5;
            } else if (strchr("\"\\/bfnrt", *j->p) && *j->p) {
                j->p++;
            } else {
                return mj_fail(j, e, "bad escape");
            }
            continue;
        }
        size_t u = utf8_len((const unsigned char *)j->p, (const unsigned char *)j->end);
        if (!u)
            return mj_fail(j, e, "invalid UTF-8");
        j->p += u;
    }
    if (j->p >= j->end)
        return mj_fail(j, e, "unterminated string");
    *s = st;
    *n = (size_t)(j->p - st);
    *plain = pl;
    j->p++;
    return 0;
}

int mj_number(struct mj *j, const char **s, size_t *n, struct msf_err *e)
{
    mj_ws(j);
    const char *st = j->p;
    while (j->p < j->end && strchr("+-0123456789.eE", *j->p) && *j->p)
        j->p++;
    int64_t ns;
    if (j->p == st || num_us_to_ns(st, (size_t)(j->p - st), &ns) == -EINVAL) {
        j->p = st;
        return mj_fail(j, e, "expected a number");
    }
    *s = st;
    *n = (size_t)(j->p - st);
    return 0;
}

static int mj_skip_container(struct mj *j, char close, bool obj, struct msf_err *e)
{
    if (++j->depth > MSF_JSON_DEPTH)
        return mj_fail(j, e, "nested too deeply");
    if (mj_eat(j, close)) {
        j->depth--;
        return 0;
    }
    for (;;) {
        int r;
        if (obj) {
            const char *s;
            size_t n;
            bool pl;
            if ((r = mj_string(j, &s, &n, &pl, e)) < 0)
                return r;
            if (!mj_eat(j, ':'))
                return mj_fail(j, e, "expected ':'");
        }
        if ((r = mj_skip(j, e)) < 0)
            return r;
        if (mj_eat(j, close))
            break;
        if (!mj_eat(j, ','))
            return mj_fail(j, e, obj ? "expected ',' or '}'" : "expected ',' or ']'");
    }
    j->depth--;
    return 0;
}

int mj_skip(struct mj *j, struct msf_err *e)
{
    mj_ws(j);
    if (j->p >= j->end)
        return mj_fail(j, e, "unexpected end of file");
    const char *s;
    size_t n;
    bool pl;
    switch (*j->p) {
    case '{':
        j->p++;
        return mj_skip_container(j, '}', true, e);
    case '[':
        j->p++;
        return mj_skip_container(j, ']', false, e);
    case '"':
        return mj_string(j, &s, &n, &pl, e);
    default:
        for (size_t k = 0; k < 3; k++) {
            const char *lit = (const char *[]){"true", "false", "null"}[k];
            size_t ln = strlen(lit);
            if ((size_t)(j->end - j->p) >= ln && memcmp(j->p, lit, ln) == 0) {
                j->p += ln;
                return 0;
            }
        }
        return mj_number(j, &s, &n, e);
    }
}

char mj_peek(struct mj *j)
{
    mj_ws(j);
    return j->p < j->end ? *j->p : '\0';
}

const char *mj_here(struct mj *j)
{
    mj_ws(j);
    return j->p;
}

int mj_skip_rest(struct mj *j, char close, struct msf_err *e)
{
    return mj_skip_container(j, close, close == '}', e);
}

int mj_value_raw(struct mj *j, const char **s, size_t *n, struct msf_err *e)
{
    mj_ws(j);
    *s = j->p;
    int r = mj_skip(j, e);
    if (r < 0)
        return r;
    *n = (size_t)(j->p - *s);
    return 0;
}

int mj_end(struct mj *j, struct msf_err *e)
{
    mj_ws(j);
    if (j->p != j->end)
        return mj_fail(j, e, "text after the JSON value");
    return 0;
}

void numv_free(struct numv *v)
{
    free(v->s);
    free(v->n);
    memset(v, 0, sizeof *v);
}

int mj_numbers(struct mj *j, struct numv *v, struct msf_err *e)
{
    if (!mj_eat(j, '['))
        return mj_fail(j, e, "expected an array of numbers");
    v->len = 0;
    if (mj_eat(j, ']'))
        return 0;
    for (;;) {
        const char *s;
        size_t n;
        int r = mj_number(j, &s, &n, e);
        if (r < 0)
            return r;
        if (v->len == v->cap) {
            size_t nc = v->cap ? v->cap * 2 : 64;
            const char **ns = realloc(v->s, nc * sizeof *ns);
            if (ns)
                v->s = ns;
            size_t *nn = realloc(v->n, nc * sizeof *nn);
            if (nn)
                v->n = nn;
            if (!ns || !nn)
                return msf_fail(e, 0, 0, -ENOMEM, "out of memory");
            v->cap = nc;
        }
        v->s[v->len] = s;
        v->n[v->len++] = n;
        if (mj_eat(j, ']'))
            return 0;
        if (!mj_eat(j, ','))
            return mj_fail(j, e, "expected ',' or ']'");
    }
}
