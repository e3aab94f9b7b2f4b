/* SPDX-License-Identifier: MIT */
/*
 * The parser collects the significant digits into a decimal mantissa and a power of ten, then
 * scales to the wanted unit with integer arithmetic only, checking every step for overflow.
 */
#include "num.h"

#include <errno.h>
#include <stdbool.h>

#define MAX_SIG_DIGITS 19 /* 10^19 overflows uint64 only past 1.8e19: 19 digits are always safe */

struct decimal {
    bool neg;
    uint64_t mant;  /* significant digits */
    int exp10;      /* value = mant * 10^exp10 */
    bool inexact;   /* digits beyond MAX_SIG_DIGITS were dropped (non-zero ones) */
    bool round_up;  /* the first dropped digit was >= 5 */
};

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int parse_decimal(const char *s, size_t n, struct decimal *d)
{
    size_t i = 0;
    while (i < n && is_blank(s[i]))
        i++;
    while (n > i && is_blank(s[n - 1]))
        n--;
    *d = (struct decimal){0};
    if (i < n && s[i] == '-') {
        d->neg = true;
        i++;
    }
    if (i >= n || s[i] < '0' || s[i] > '9')
        return -EINVAL;
    if (s[i] == '0' && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '9')
        return -EINVAL; /* JSON forbids leading zeros */
    int n_sig = 0;
    int dropped_exp = 0;
    bool seen_digit_dropped = false;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
        if (n_sig < MAX_SIG_DIGITS) {
            if (d->mant != 0 || s[i] != '0') {
                d->mant = d->mant * 10 + (uint64_t)(s[i] - '0');
                n_sig++;
            }
        } else {
            if (!seen_digit_dropped)
                d->round_up = s[i] >= '5';
            if (s[i] != '0')
                d->inexact = true;
            seen_digit_dropped = true;
            dropped_exp++;
        }
    }
    int frac_exp = 0;
    if (i < n && s[i] == '.') {
        i++;
        if (i >= n || s[i] < '0' || s[i] > '9')
            return -EINVAL;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
            if (n_sig < MAX_SIG_DIGITS) {
                if (d->mant != 0 || s[i] != '0')
                    n_sig++;
                d->mant = d->mant * 10 + (uint64_t)(s[i] - '0');
                frac_exp--;
            } else {
                if (!seen_digit_dropped)
                    d->round_up = s[i] >= '5';
                if (s[i] != '0')
                    d->inexact = true;
                seen_digit_dropped = true;
            }
        }
    }
    long e = 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        bool eneg = false;
        if (i < n && (s[i] == '+' || s[i] == '-')) {
            eneg = s[i] == '-';
            i++;
        }
        if (i >= n || s[i] < '0' || s[i] > '9')
            return -EINVAL;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
            if (e < 100000)
                e = e * 10 + (s[i] - '0');
        }
        if (eneg)
            e = -e;
    }
    if (i != n)
        return -EINVAL;
    d->exp10 = (int)(e + dropped_exp + frac_exp);
    return 0;
}

/* value * 10^shift as an int64 rounded half away from zero, or -ERANGE. Digits dropped past
 * MAX_SIG_DIGITS lie below the mantissa: they only decide when the rounding point is exactly at
 * its last digit (e == 0); below that, a tie already rounds away from zero. */
static int scale(const struct decimal *d, int shift, int64_t *ret)
{
    uint64_t m = d->mant;
    int e = d->exp10 + shift;
    if (m == 0) {
        *ret = 0;
        return 0;
    }
    if (e > 0) {
        for (int k = 0; k < e; k++) {
            if (m > UINT64_MAX / 10)
                return -ERANGE;
            m *= 10;
        }
    } else if (e == 0) {
        if (d->round_up)
            m++;
    } else if (e < -19) {
        m = 0; /* m < 10^19, so m / 10^20 < 0.5 */
    } else {
        uint64_t p = 1;
        for (int k = 0; k < -e; k++)
            p *= 10;
        uint64_t rem = m % p;
        m /= p;
        if (rem >= p / 2)
            m++;
    }
    if (d->neg) {
        if (m > (uint64_t)INT64_MAX + 1)
            return -ERANGE;
        *ret = m == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)m;
    } else {
        if (m > (uint64_t)INT64_MAX)
            return -ERANGE;
        *ret = (int64_t)m;
    }
    return 0;
}

/* The usual spelling of a trace time, at most 16 digits and at most three decimals
 * ("1693000000000006.500", "23.62", "7"): exact in ns, so read at once. Returns false for
 * anything else (blanks, an exponent, more decimals, leading zeros, a value past INT64_MAX),
 * which the general path decides. */
static bool us_to_ns_plain(const char *s, size_t n, int64_t *ret_ns)
{
    static const uint64_t frac_scale[4] = {1000, 100, 10, 1};
    size_t i = 0;
    bool neg = n > 0 && s[0] == '-';
    if (neg)
        i++;
    size_t d0 = i;
    uint64_t v = 0;
    while (i < n && i - d0 < 17 && s[i] >= '0' && s[i] <= '9')
        v = v * 10 + (uint64_t)(s[i++] - '0');
    size_t nd = i - d0;
    if (nd == 0 || nd > 16 || (nd > 1 && s[d0] == '0'))
        return false;
    uint64_t f = 0;
    size_t nf = 0;
    if (i < n && s[i] == '.') {
        i++;
        while (i < n && nf < 4 && s[i] >= '0' && s[i] <= '9') {
            f = f * 10 + (uint64_t)(s[i++] - '0');
            nf++;
        }
        if (nf == 0 || nf > 3)
            return false;
    }
    if (i != n)
        return false;
    v = v * 1000 + f * frac_scale[nf]; /* < 10^19 < 2^64 */
    if (v > (uint64_t)INT64_MAX)
        return false;
    *ret_ns = neg ? -(int64_t)v : (int64_t)v;
    return true;
}

int num_us_to_ns(const char *s, size_t n, int64_t *ret_ns)
{
    if (us_to_ns_plain(s, n, ret_ns))
        return 0;
    struct decimal d;
    int r = parse_decimal(s, n, &d);
    if (r < 0)
        return r;
    int64_t v;
    r = scale(&d, 3, &v);
    if (r < 0)
        return r;
    *ret_ns = v;
    return 0;
}

int num_parse_i64(const char *s, size_t n, int64_t *ret)
{
    struct decimal d;
    int r = parse_decimal(s, n, &d);
    if (r < 0)
        return r;
    /* Whole only: 10^exp10 must not cut non-zero digits. */
    uint64_t m = d.mant;
    for (int e = d.exp10; e < 0 && m; e++) {
        if (m % 10)
            return -EINVAL;
        m /= 10;
    }
    if (d.inexact)
        return -EINVAL;
    int64_t v;
    r = scale(&d, 0, &v);
    if (r < 0)
        return r;
    *ret = v;
    return 0;
}
