/* SPDX-License-Identifier: MIT */
#include "clock.h"

#include <time.h>

static int64_t read_clock(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t clock_now_ns(void)
{
    return read_clock(CLOCK_REALTIME);
}

int64_t clock_mono_ns(void)
{
    return read_clock(CLOCK_MONOTONIC);
}
