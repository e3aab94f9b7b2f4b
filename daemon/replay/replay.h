/* SPDX-License-Identifier: MIT */
/*
 * replay: brings what the store holds back into daemon/live. At start-up replay_all() feeds every
 * job, most recently seen first, while live's memory is under its budget, and marks the others
 * evicted; later replay_reload() brings one evicted job back when a request or a new session of it
 * needs it. A job's records come back in the order they arrived: its hellos (so that the FP/BP
 * points their "env" set are in place before any step's points are computed), its steps and rare
 * records (queue, pipeline, host), then each rank's trace events in block order. The aggregates
 * then equal those the job had live (tests/unit/test_replay.c checks that on one record set fed
 * both ways).
 *
 * The hello's env is applied by replay_hello_env(), which main.c also calls for a live hello, so
 * a job's points come from the same hellos in the same order whether it was replayed or not.
 *
 * Threading: the loop thread (or start-up, before the loop runs): the one thread that feeds and
 * publishes live. It holds that thread for the replay's time (docs/ARCHITECTURE.md, "Live
 * memory"). Everything in struct replay_config is borrowed.
 */
#ifndef STEPSCOPE_REPLAY_H
#define STEPSCOPE_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "../core/record.h"
#include "../core/stats.h"

struct store;
struct live;

struct replay_config {
    struct store *store;
    struct live *live;
    struct stats *stats;     /* live_bytes and live_reloads are set here */
    size_t max_line_bytes;   /* longest stored line (config max_line_bytes) */
    uint64_t live_max_bytes; /* replay_all() stops feeding jobs past this many live bytes... */
    uint64_t live_max_jobs;  /* ... or past seven eighths of this many live jobs */
};

/* Start-up: feeds live with what the store holds, most recently seen jobs first, publishing after
 * each, while live's memory is under live_max_bytes and its jobs under 7/8 of live_max_jobs; the
 * other jobs are marked evicted and load on their first request. A job the store cannot give back
 * (a read error) is logged and marked evicted too, so it does not keep the others down. Logs what
 * it replayed. Returns 0 or a negative errno (-ENOMEM; a store error listing the jobs). */
int replay_all(const struct replay_config *cfg);

/* Brings evicted job_id back into live from the store and publishes it (0 at once if it is not
 * evicted: a concurrent request brought it back first). Counts live_reloads and logs the time it
 * took. Returns 0 or a negative errno; the job stays evicted then (what was replayed is dropped). */
int replay_reload(const struct replay_config *cfg, int64_t job_id);

/* The job's own FP/BP points (the hello's "env"), which beat the daemon's fp_point/bp_point:
 * called for each hello of the job, live (main.c's on_hello) and replayed, in the order the
 * sessions opened. Returns 0 or -ENOMEM (the override is not kept). */
int replay_hello_env(struct live *lv, int64_t job_id, const struct record_hello *hello);

#endif
