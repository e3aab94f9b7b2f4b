/* SPDX-License-Identifier: MIT */
/* clock: the two clocks the daemon reads, in int64 nanoseconds. */
#ifndef STEPSCOPE_CLOCK_H
#define STEPSCOPE_CLOCK_H

#include <stdint.h>

/* Wall-clock time since the Unix epoch (CLOCK_REALTIME), for first/last-seen stamps. */
int64_t clock_now_ns(void);

/* Monotonic time (CLOCK_MONOTONIC), for intervals and rate limits. */
int64_t clock_mono_ns(void);

#endif
