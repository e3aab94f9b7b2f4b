/* SPDX-License-Identifier: MIT */
/*
 * num: exact conversions of JSON number text. Chrome traces give times in microseconds, often
 * with a fraction ("1700000000123456.789"); a double cannot hold that to the nanosecond, so the
 * text itself is converted, digit by digit, into int64 nanoseconds.
 */
#ifndef STEPSCOPE_NUM_H
#define STEPSCOPE_NUM_H

#include <stddef.h>
#include <stdint.h>

/* Parses the JSON number at s[0, n) (sign, digits, fraction, exponent; surrounding blanks allowed)
 * as microseconds and sets *ret_ns to it in nanoseconds, rounded half away from zero.
 * Returns 0, -EINVAL if the text is not a JSON number, -ERANGE if it does not fit int64 ns. */
int num_us_to_ns(const char *s, size_t n, int64_t *ret_ns);

/* Parses a JSON integer (no fraction unless it is zero, exponent allowed if the result is whole).
 * Returns 0, -EINVAL or -ERANGE. */
int num_parse_i64(const char *s, size_t n, int64_t *ret);

/* Times lie in (-2^60, 2^62) ns (1933 to 2116) and durations below 3 * 2^60 ns (109 years):
 * then every end (ts + dur < 2^63 - 2^60) and every difference of an end and a start
 * (< 2^63) the analyses take fits in int64 (UBSan checks it in CI). The decoder refuses
 * anything else as invalid, and the importers check the same. */
#define NUM_TIME_MAX_NS (INT64_C(1) << 62)
#define NUM_TIME_MIN_NS (-(INT64_C(1) << 60))
#define NUM_DUR_MAX_NS (INT64_C(3) << 60)

/* a + b, saturated at INT64_MIN and INT64_MAX: sums of hostile times never overflow. */
static inline int64_t num_sat_add(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b)
        return INT64_MAX;
    if (b < 0 && a < INT64_MIN - b)
        return INT64_MIN;
    return a + b;
}

#endif
