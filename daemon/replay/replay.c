/* SPDX-License-Identifier: MIT */
/* The store-to-live replay (replay.h). */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"

#include "../../lib/clock.h"
#include "../../lib/log.h"
#include "../core/decode.h"
#include "../live/live.h"
#include "../store/store_query.h"

#define REPLAY_FLUSH_EVENTS 65536 /* replay hands live a batch this big at a time */

struct replay_ctx {
    struct live *live;
    struct store *store;
    struct line_decoder *ld;
    int64_t job_id;
    int64_t rank;
    int64_t n_steps;
    int64_t n_queue;
    int64_t n_events;
    int64_t n_bad;
};

int replay_hello_env(struct live *lv, int64_t job_id, const struct record_hello *hello)
{
    struct live_job_env env = {
        .stepscope_fp = hello->stepscope_fp_point, .stepscope_bp = hello->stepscope_bp_point,
        .profiling_fp = hello->profiling_fp_start, .profiling_bp = hello->profiling_bp_end,
        .mindspore_fp = hello->fp_point_env, .mindspore_bp = hello->bp_point_env,
        .imported = hello->imported,
    };
    return live_job_env(lv, job_id, &env);
}

/* A stored hello: its env points apply again, before the job's steps and spans come back. */
static int on_replay_hello(void *ud, int64_t rank, const char *line, size_t len)
{
    struct replay_ctx *c = ud;
    (void)rank;
    struct record_hello h;
    if (decode_hello_line(c->ld, line, len, &h) < 0 ||
        replay_hello_env(c->live, c->job_id, &h) < 0)
        c->n_bad++;
    return 0;
}

static int on_replay_step(void *ud, int64_t rank, const struct record *rec)
{
    struct replay_ctx *c = ud;
    (void)live_feed(c->live, c->job_id, rank, rec, 1);
    c->n_steps++;
    return 0;
}

/* Queue samples, pipeline records and host samples: rare records fed one at a time. */
static int on_replay_queue(void *ud, int64_t rank, const struct record *rec)
{
    struct replay_ctx *c = ud;
    (void)live_feed(c->live, c->job_id, rank, rec, 1);
    c->n_queue++;
    return 0;
}

static int on_replay_event(void *ud, const char *line, size_t len)
{
    struct replay_ctx *c = ud;
    struct record rec;
    if (decode_line(c->ld, line, len, &rec) < 0) {
        c->n_bad++;
        return 0;
    }
    (void)live_feed(c->live, c->job_id, c->rank, &rec, 1);
    if (++c->n_events % REPLAY_FLUSH_EVENTS == 0)
        (void)live_flush(c->live);
    return 0;
}

/* Feeds live with what the store holds of job c->job_id, in the order replay.h states. Returns 0
 * or a negative errno. */
static int replay_job(struct replay_ctx *c)
{
    struct store *st = c->store;
    int64_t n = store_query_hellos(st, c->job_id, on_replay_hello, c);
    if (n >= 0)
        n = store_query_steps(st, c->job_id, on_replay_step, c);
    if (n >= 0)
        n = store_query_queue_samples(st, c->job_id, on_replay_queue, c);
    if (n >= 0)
        n = store_query_pipelines(st, c->job_id, on_replay_queue, c);
    if (n >= 0)
        n = store_query_host_samples(st, c->job_id, on_replay_queue, c);
    if (n < 0)
        return (int)n;
    struct store_rank *ranks = NULL;
    size_t n_ranks = 0;
    int r = store_query_ranks(st, c->job_id, &ranks, &n_ranks);
    for (size_t k = 0; k < n_ranks && r == 0; k++) {
        c->rank = ranks[k].rank;
        n = store_query_events(st, c->job_id, c->rank, INT64_MIN, INT64_MAX, -1, on_replay_event,
                               c);
        if (n < 0)
            r = (int)n;
    }
    free(ranks);
    return r;
}

int replay_reload(const struct replay_config *cfg, int64_t job_id)
{
    struct live *lv = cfg->live;
    if (!live_is_evicted(lv, job_id))
        return 0;
    int64_t t0 = clock_mono_ns();
    struct replay_ctx c = {.live = lv, .store = cfg->store, .job_id = job_id};
    c.ld = line_decoder_new(cfg->max_line_bytes);
    int r = c.ld ? replay_job(&c) : -ENOMEM;
    line_decoder_free(c.ld);
    (void)live_publish(lv);
    if (r < 0) {
        (void)live_mark_evicted(lv, job_id); /* drops what was replayed; the mark stays */
        log_warn("live: job %lld: reload from the store failed: %s", (long long)job_id,
                 strerror(-r));
        return r;
    }
    live_reload_done(lv, job_id);
    STATS_ADD(cfg->stats, live_reloads, 1);
    atomic_store_explicit(&cfg->stats->live_bytes, live_bytes(lv), memory_order_relaxed);
    log_info("live: job %lld reloaded from the store (%lld trace events) in %.3f s",
             (long long)job_id, (long long)c.n_events, (double)(clock_mono_ns() - t0) / 1e9);
    return 0;
}

int replay_all(const struct replay_config *cfg)
{
    struct live *lv = cfg->live;
    int64_t t0 = clock_mono_ns();
    struct store_job *jobs = NULL;
    size_t n_jobs = 0, n_lazy = 0;
    struct replay_ctx c = {.live = lv, .store = cfg->store};
    int r = store_query_jobs(cfg->store, &jobs, &n_jobs);
    if (r < 0)
        return r;
    c.ld = line_decoder_new(cfg->max_line_bytes);
    if (!c.ld) {
        r = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n_jobs && r == 0; i++) {
        if (live_bytes(lv) >= cfg->live_max_bytes ||
            live_jobs(lv) >= cfg->live_max_jobs - cfg->live_max_jobs / 8) {
            r = live_mark_evicted(lv, jobs[i].id);
            n_lazy++;
            continue;
        }
        c.job_id = jobs[i].id;
        r = replay_job(&c);
        if (r < 0 && r != -ENOMEM) {
            /* One job the store cannot give back (a damaged block is skipped by the store
             * itself; this is any other read error) must not keep the others down: it is
             * named, and loads on first use instead, where the error is answered. */
            log_error("live: job %lld (%s): replaying the store failed: %s; the job loads on "
                      "first use", (long long)jobs[i].id, jobs[i].name, strerror(-r));
            r = live_mark_evicted(lv, jobs[i].id);
            n_lazy++;
            continue;
        }
        if (r == 0)
            r = live_publish(lv); /* accounts the job's bytes */
    }
    atomic_store_explicit(&cfg->stats->live_bytes, live_bytes(lv), memory_order_relaxed);
    if (r == 0 && n_jobs > 0)
        log_info("live: replayed %lld steps, %lld queue and pipeline records and %lld trace events of %zu jobs "
                 "in %.3f s%s; %zu jobs past live_max_bytes load on first use",
                 (long long)c.n_steps, (long long)c.n_queue, (long long)c.n_events,
                 n_jobs - n_lazy, (double)(clock_mono_ns() - t0) / 1e9,
                 c.n_bad ? " (some lines undecodable)" : "", n_lazy);
out:
    line_decoder_free(c.ld);
    free(jobs);
    return r;
}
