/* SPDX-License-Identifier: MIT */
/*
 * Exact decimal scaling for the MindSpore converters (contract in mindspore_decimal.h).
 */
#include "mindspore_decimal.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>

#include "num.h"

int dec_scaled(const char *s, size_t n, int shift, int64_t *ret)
{
    size_t i = 0;
    bool neg = false;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    uint64_t mant = 0;
    long exp10 = 0;
    int ndig = 0, sig = 0, round_digit = -1;
    for (int frac = 0; frac < 2; frac++) {
        if (frac) {
            if (i < n && s[i] == '.')
                i++;
            else
                break;
        }
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, ndig++) {
            int d = s[i] - '0';
            if (sig < 19) {
                if (mant || d)
                    sig++;
                mant = mant * 10 + (uint64_t)d;
                exp10 -= frac;
            } else {
                if (round_digit < 0)
                    round_digit = d;
                exp10 += !frac;
            }
        }
    }
    if (ndig == 0)
        return -EINVAL;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        bool eneg = false;
        if (i < n && (s[i] == '-' || s[i] == '+'))
            eneg = s[i++] == '-';
        size_t st = i;
        long e = 0;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            if (e < 100000)
                e = e * 10 + (s[i] - '0');
        if (i == st)
            return -EINVAL;
        exp10 += eneg ? -e : e;
    }
    if (i != n)
        return -EINVAL;
    exp10 += shift;
    if (mant == 0) {
        *ret = 0;
        return 0;
    }
    if (round_digit < 0)
        round_digit = 0;
    if (exp10 > 0 && round_digit >= 5)
        mant++; /* round at the last digit kept, before scaling it up */
    if (exp10 > 0)
        round_digit = 0;
    for (; exp10 > 0; exp10--) {
        if (mant > UINT64_MAX / 10)
            return -ERANGE;
        mant *= 10;
    }
    for (; exp10 < 0 && mant; exp10++) {
        round_digit = (int)(mant % 10);
        mant /= 10;
    }
    if (exp10 < 0)
        round_digit = 0; /* far below one unit */
    if (round_digit >= 5)
        mant++;
    if (mant > (uint64_t)INT64_MAX)
        return -ERANGE;
    *ret = neg ? -(int64_t)mant : (int64_t)mant;
    return 0;
}

void dec_put_e6(struct sbuf *b, int64_t v)
{
    uint64_t a = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    char frac[8];
    snprintf(frac, sizeof frac, "%06llu", (unsigned long long)(a % 1000000));
    size_t fl = 6;
    while (fl > 0 && frac[fl - 1] == '0')
        fl--;
    frac[fl] = '\0';
    sbuf_printf(b, "%s%llu%s%s", v < 0 ? "-" : "", (unsigned long long)(a / 1000000),
                fl ? "." : "", frac);
}

void dec_put_us(struct sbuf *b, int64_t ns)
{
    if (ns <= NUM_TIME_MIN_NS || ns >= NUM_DUR_MAX_NS) {
        if (!b->error)
            b->error = -ERANGE;
        return;
    }
    sbuf_json_us(b, ns);
}
