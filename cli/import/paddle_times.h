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
 * and it has a start_time) and its name without the suffix. Returns the ts sent, in ns
 * (INT64_MIN when the event has none). */
int64_t pdtrace_rewrite(const struct pdtrace *p, const char *ev, size_t len,
                        const struct tscan_event *info, struct sbuf *out);

/* Pass 2's memory of the file so far (docs/PROTOCOL.md 9). Paddle's export writes each host
 * event followed by its runtime events and then the memory events Paddle attributed to it, so
 * a "[memory]" event belongs to the last host event of its thread before it (none: Paddle's
 * root, not counted). */
struct pdtrace_owner {
    int64_t tid;     /* the numeric thread id ("8703" of "8703(C++)") */
    int64_t ts_ns;   /* the host event's ts as sent */
    struct sbuf name; /* its name as sent: the raw JSON string, quotes included */
};

struct pdtrace_walk {
    struct pdtrace_owner *own;
    size_t n, cap;
    bool any;            /* a host event was seen */
    int64_t first_ns, end_ns; /* the host events' earliest ts and latest end */
    char pid[TSCAN_TEXT_MAX]; /* the first host event's pid, raw JSON */
};

void pdtrace_walk_init(struct pdtrace_walk *w);
void pdtrace_walk_free(struct pdtrace_walk *w);

/* Pass 2, after pdtrace_rewrite() put the event ev[0, evlen) in line[0, len) and returned its
 * ts_ns: notes a host event, and appends to out the line as sent: a "[memory]" event with an owner gets
 * "owner" (its name) and "owner_ts" (its ts, µs) first (unless that passes the daemon's line
 * limit); any other line as it is. Returns 0 or
 * -ENOMEM. */
int pdtrace_walk_event(struct pdtrace_walk *w, const char *ev, size_t evlen, const char *line,
                       size_t len, int64_t ts_ns, const struct tscan_event *info, struct sbuf *out);

/* The window's ExtraInfo record (docs/PROTOCOL.md 9) from m's ExtraInfo members, appended to out
 * with its '\n'; nothing when the file has neither figure or no host event. Returns whether a
 * line was appended. */
bool pdtrace_extra_line(const struct pdtrace_walk *w, const struct tscan_meta *m,
                        struct sbuf *out);

#endif
