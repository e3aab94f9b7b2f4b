/* SPDX-License-Identifier: MIT */
/*
 * Exact decimal scaling for the MindSpore converters: MindSpore's times come as decimal text
 * in system counts, ms, µs or ns; each becomes int64 ns without going through a double, and
 * goes out as the protocol's microseconds (or a ratio in millionths as a JSON number).
 */
#ifndef STEPSCOPE_IMPORT_MINDSPORE_DECIMAL_H
#define STEPSCOPE_IMPORT_MINDSPORE_DECIMAL_H

#include <stddef.h>
#include <stdint.h>

#include "sbuf.h"

/* The decimal s[0, n) (sign, digits, fraction, exponent) times 10^shift, rounded half away from
 * zero, into *ret. -EINVAL if it is not a number, -ERANGE if the result does not fit int64.
 * Up to 19 significant digits are kept (every int64, so a start in ns is exact); the first digit
 * dropped decides the rounding. */
int dec_scaled(const char *s, size_t n, int shift, int64_t *ret);

/* v / 10^6 as a JSON number, exact. */
void dec_put_e6(struct sbuf *b, int64_t v);

/* ns as the protocol's microseconds (sbuf_json_us()). A time or duration the daemon would not
 * take (outside (NUM_TIME_MIN_NS, NUM_DUR_MAX_NS), core/num.h) sets b->error to -ERANGE, which
 * msf_line_done() reports. */
void dec_put_us(struct sbuf *b, int64_t ns);

#endif
