/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the exact JSON-number converters. Invariants: a number accepted as microseconds agrees
 * with strtod() to within a nanosecond plus double rounding; an integer accepted by
 * num_parse_i64 prints back to the same value; nothing reads past the input.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "num.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 64)
        return 0;
    const char *s = (const char *)data;
    int64_t ns;
    if (num_us_to_ns(s, size, &ns) == 0) {
        char tmp[80];
        memcpy(tmp, s, size);
        tmp[size] = '\0';
        if (strlen(tmp) == size) {
            double d = strtod(tmp, NULL) * 1000.0;
            double diff = fabs(d - (double)ns);
            if (diff > 1.0 && diff > fabs(d) * 1e-15)
                abort();
        }
    }
    int64_t v;
    if (num_parse_i64(s, size, &v) == 0) {
        char tmp[32];
        int n = snprintf(tmp, sizeof tmp, "%lld", (long long)v);
        int64_t back;
        if (num_parse_i64(tmp, (size_t)n, &back) != 0 || back != v)
            abort();
    }
    return 0;
}
