/* SPDX-License-Identifier: MIT */
/*
 * pdtrace: Paddle's export_chrome_tracing events, sent with the times and names the live
 * collector gives them (collectors/python/stepscope/paddle.py stream_chrome_trace).
 *
 * Paddle writes each event's "ts" truncated to whole microseconds, but also its start as an
 * offset from the window's start with nanosecond digits ("args":{"start_time":"917.229 us"}),
 * and "dur" with nanosecond digits. Paddle 3.x computes the offset in float, so past 2^23 ns
 * (8.4 ms into the window) its last digits are rounded: by at most pdtrace_slack_ns() (93 ns
 * at 782 ms). Each event then says window start - ts + start_time in [0, 999] ns, give or take
 * its slack; the window's start is the largest lower bound over the file's events (pass 1,
 * exact when any event of the first 8.4 ms starts on a whole µs), and each event's time that
 * start plus its offset, kept within [ts, ts + 999] ns. The rebuild is used only when
 * consistent: some start satisfies every event, else the file's own ts are kept (the import
 * says so). Names lose Paddle's duration suffix ("matmul dygraph[12.345 us]").
 * Pure: no I/O.
 */
#ifndef STEPSCOPE_IMPORT_PDTRACE_H
#define STEPSCOPE_IMPORT_PDTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sbuf.h"
#include "trace_scan.h"

struct pdtrace {
    uint64_t n;     /* events with a usable ts and start_time */
    int64_t lo, hi; /* smallest ts - start_time + slack, largest ts - start_time - slack, ns */
    bool exact;     /* pdtrace_finish(): the rebuild applies (base = hi) */
};

void pdtrace_init(struct pdtrace *p);

/* Parses Paddle's offset text, the raw JSON string "<digits>[.<digits>] <ns|us|ms|s>" (quotes
 * included; a leading '-' allowed), into ns (digits past the ns are dropped, as Paddle's
 * own formatting never writes them). Returns false for anything else or an overflow. */
bool pdtrace_offset_ns(const char *raw, int64_t *ret_ns);

/* How far Paddle's float rounding may move an offset of off ns from the true one, in ns (0
 * below 2^23 ns). */
int64_t pdtrace_slack_ns(int64_t off);

/* Pass 1: takes one event (its exact bytes ev[0, len) and tscan's description of it). */
void pdtrace_note(struct pdtrace *p, const char *ev, size_t len, const struct tscan_event *info);

/* Pass 1 in two parts: makes *a what notes of a's events then b's would have made. */
void pdtrace_merge(struct pdtrace *a, const struct pdtrace *b);

/* After pass 1: decides whether the times are rebuilt (p->exact). */
void pdtrace_finish(struct pdtrace *p);

/* The length of the raw JSON string raw[0, len) (quotes included) without Paddle's duration
 * suffix "[<-?digits and dots> <ns|us|ms|s>]" (the space optional) before its closing quote,
 * the closing quote excluded; len - 1 when there is none. */
size_t pdtrace_name_keep(const char *raw, size_t len);

/* Pass 2: appends the event ev[0, len) to out as it is sent: its "ts" rebuilt (when p->exact
 * and it has a start_time) and its name without the suffix. */
void pdtrace_rewrite(const struct pdtrace *p, const char *ev, size_t len,
                     const struct tscan_event *info, struct sbuf *out);

#endif
