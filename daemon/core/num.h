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

#endif
