/* SPDX-License-Identifier: MIT */
/*
 * order: sends each thread's complete ('X') events in torch's order, (ts, -dur).
 *
 * The daemon's live operator table nests a thread's spans with torch's exact walk
 * (_populate_cpu_children) only when they arrive sorted by (start, -end); otherwise with a by-end
 * heuristic whose result depends on where its flushes cut the stream, so that an import and a
 * replay of the same data could differ (docs/ARCHITECTURE.md, "Live analysis"). Kineto writes a
 * thread's host spans out of that order. Pass 1 notes every spooled line here: its offset and
 * length in the spool, its thread (the raw "pid" and "tid" texts) and, for an X event, its start
 * and end in ns; and, per thread, whether the X events came in (ts, -dur) order.
 *
 * If they all did, nothing changes (the spool is sent as it is). Otherwise the lines are sent in
 * a new order: every line that is not an X event (metadata, counters, flows, instants...) keeps
 * its place, and so does the pattern of which thread's X event comes at each place; each thread's
 * X events are sorted stably by (ts, -dur) into the places its events held. The order depends on
 * the file alone, so a session that resumes at sequence number k skips the first k lines of the
 * same order. Memory: 36 bytes per line, 32 more while order_finish() sorts, and one entry per
 * thread. order_finish() sorts only the threads out of order, on two CPUs when it pays.
 */
#ifndef STEPSCOPE_IMPORT_ORDER_H
#define STEPSCOPE_IMPORT_ORDER_H

#include <stddef.h>
#include <stdint.h>

#include "trace_scan.h"

struct order;

/* An empty index, or NULL when out of memory. Free with order_free(); NULL-safe. */
struct order *order_new(void);
void order_free(struct order *o);

/* Notes the next line: the event tscan scanned as info, spooled at byte off with len bytes
 * before its '\n'. Threads are told apart by the raw "pid" and "tid" texts tscan kept (their
 * first TSCAN_TEXT_MAX - 1 bytes). Returns 0 or -ENOMEM (then o is unusable). */
int order_note(struct order *o, const struct tscan_event *info, uint64_t off, uint32_t len);

/* Appends b's lines after o's, as if order_note() had been called for each, their offsets moved
 * by shift bytes (b indexed the lines of a file that follows o's): for pass 1 in two parts. b's
 * threads are matched to o's by key; a thread whose first X event in b sorts before its last in
 * o counts as out of order. Neither may be finished. Returns 0, -EINVAL, or -ENOMEM (then o is
 * unusable). */
int order_append(struct order *o, const struct order *b, uint64_t shift);

/* After the last line. Returns 0 when every thread's X events were in (ts, -dur) order (the
 * index is freed: send the lines as they are), 1 when they are to be sent in order_runs()'s
 * order (the number of threads out of order in *ret_unordered), or -ENOMEM. */
int order_finish(struct order *o, uint64_t *ret_unordered);

/* After order_finish() returned 1: calls fn with each run of lines, in the sending order, that
 * lie back to back in the spool (off and length in bytes, '\n's included), from the from-th line
 * (0-based) on. Stops at and returns fn's first non-zero result; else 0. */
int order_runs(const struct order *o, uint64_t from,
               int (*fn)(void *ud, uint64_t off, uint64_t len), void *ud);

#endif
