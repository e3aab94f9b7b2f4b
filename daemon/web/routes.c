/* SPDX-License-Identifier: MIT */
/*
 * routes: the /api/v1/ handlers. Each one reads query parameters strictly (a bad one is a 400 that
 * names it), asks the store through store_query.h, renders with render.c into an sbuf capped at
 * max_response_bytes, and fills its answer (answer.h), which http.c sends. They only read: no
 * handler writes to the store or holds SQL. Without a store (cfg->store NULL, as in unit tests or
 * while the daemon starts), every route that needs one answers 503 unavailable; health and stats
 * still answer.
 */
#include "routes.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "render.h"

int web__no_store(struct web_answer *a)
{
    return web__error(a, WEB_HTTP_SERVICE_UNAVAILABLE, "unavailable", "no store attached");
}

static int get_health(struct web *w, struct web_answer *a)
{
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    struct store_space space;
    bool have_space = w->store && store_query_space(w->store, &space) == 0;
    web__render_health(&b, w->version, w->instance, w->socket, w->stats,
                       have_space ? &space : NULL);
    return web__json(w, a, WEB_HTTP_OK, &b);
}

static int get_stats(struct web *w, struct web_answer *a)
{
    struct store_info info;
    bool have_info = false;
    if (w->store) {
        int r = store_query_info(w->store, &info);
        if (r < 0)
            return web__store_error(a, r, "store_query_info");
        have_info = true;
    }
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    web__render_stats(&b, w->stats, have_info ? &info : NULL);
    return web__json(w, a, WEB_HTTP_OK, &b);
}

/* The document is compiled in (openapi_json.c), so it always matches the binary's routes. */
static int get_openapi(struct web *w, struct web_answer *a)
{
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    sbuf_add(&b, web__openapi_json, web__openapi_json_len);
    return web__json(w, a, WEB_HTTP_OK, &b);
}

/* A job's steps as /steps lists them. The store counts step records only; live also lists the
 * steps of step spans (Kineto's ProfilerStep#N), a step record winning over a span of the same
 * number, so it lists at least as many unless LIVE_STEPS_MAX dropped old ones: the larger. */
static void live_steps(struct web *w, struct store_job *j)
{
    int64_t n = live_query_step_count(w->live, j->id, -1);
    if (n > j->steps)
        j->steps = n;
}

static void live_rank_steps(struct web *w, int64_t job_id, struct store_rank *r)
{
    int64_t n = live_query_step_count(w->live, job_id, r->rank);
    if (n > r->steps)
        r->steps = n;
}

static int get_jobs(struct web *w, const struct web_req *q, struct web_answer *a)
{
    if (!w->store)
        return web__no_store(a);
    enum web_format fmt;
    if (web__param_format(q, a, false, &fmt) < 0)
        return 0;
    struct store_job *jobs = NULL;
    size_t n = 0;
    int r = store_query_jobs(w->store, &jobs, &n);
    if (r < 0)
        return web__store_error(a, r, "store_query_jobs");
    for (size_t i = 0; i < n; i++)
        live_steps(w, &jobs[i]);
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    if (fmt == WEB_FORMAT_CSV)
        web__render_jobs_csv(&b, jobs, n);
    else if (fmt == WEB_FORMAT_RECORDS)
        web__render_jobs_records(&b, jobs, n);
    else
        web__render_jobs(&b, jobs, n);
    free(jobs);
    return web__doc_fmt(w, a, &b, fmt);
}

int web__find_job(struct web *w, const struct web_route *rt, struct store_job *ret_job,
                  struct web_answer *a)
{
    int r = store_query_job(w->store, rt->job, ret_job);
    if (r == -ENOENT) {
        char msg[RECORD_NAME_MAX + 16];
        snprintf(msg, sizeof msg, "no job \"%s\"", rt->job);
        web__error(a, WEB_HTTP_NOT_FOUND, "not_found", msg);
        return -1;
    }
    if (r < 0) {
        web__store_error(a, r, "store_query_job");
        return -1;
    }
    live_steps(w, ret_job);
    return 0;
}

int web__find_live_job(struct web *w, const struct web_route *rt, struct store_job *ret_job,
                       struct web_answer *a)
{
    if (web__find_job(w, rt, ret_job, a) < 0)
        return -1;
    int r = live_ensure(w->live, ret_job->id);
    if (r < 0) {
        char msg[96];
        snprintf(msg, sizeof msg, "the job's analyses are being reloaded from the store: %s",
                 strerror(-r));
        web__error(a, WEB_HTTP_SERVICE_UNAVAILABLE, "unavailable", msg);
        return -1;
    }
    return 0;
}

static int get_job(struct web *w, const struct web_req *q, const struct web_route *rt,
                   struct web_answer *a)
{
    if (!w->store)
        return web__no_store(a);
    struct store_job job;
    enum web_format fmt;
    if (web__param_format(q, a, false, &fmt) < 0 || web__find_job(w, rt, &job, a) < 0)
        return 0;
    struct store_rank *ranks = NULL;
    size_t n = 0;
    int r = store_query_ranks(w->store, job.id, &ranks, &n);
    if (r < 0)
        return web__store_error(a, r, "store_query_ranks");
    for (size_t i = 0; i < n; i++) {
        live_rank_steps(w, job.id, &ranks[i]);
        if (!ranks[i].node[0]) /* this node's own rank */
            snprintf(ranks[i].node, sizeof ranks[i].node, "%s", w->node);
    }
    struct web_clocks clocks;
    r = web__clocks(w, job.id, ranks, n, &clocks);
    if (r < 0) {
        free(ranks);
        return web__store_error(a, r, "the hosts' clocks");
    }
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    /* The CSV and records forms are the job's one table, ranks_detail. */
    if (fmt == WEB_FORMAT_CSV)
        web__render_ranks_csv(&b, ranks, n, &clocks);
    else if (fmt == WEB_FORMAT_RECORDS)
        web__render_ranks_records(&b, ranks, n, &clocks);
    else
        web__render_job(&b, &job, ranks, n, &clocks);
    web__clocks_done(&clocks);
    free(ranks);
    if (fmt == WEB_FORMAT_JSON && w->node[0]) { /* in a cluster: its nodes, window, conflicts */
        struct web_view v;
        r = web__view_get(w, job.id, NULL, &v);
        if (r < 0) {
            sbuf_done(&b);
            return web__store_error(a, r, "store_query_conflicts");
        }
        web__append_member(&b, "cluster_view", &v, false);
        web__view_free(&v);
    }
    return web__doc_fmt(w, a, &b, fmt);
}

bool web__route_cached(enum web_route_id id)
{
    switch (id) {
    case WEB_ROUTE_STEPS:
    case WEB_ROUTE_STEP_TRACE:
    case WEB_ROUTE_OPERATORS:
    case WEB_ROUTE_KERNELS:
    case WEB_ROUTE_QUEUES:
    case WEB_ROUTE_PIPELINE:
    case WEB_ROUTE_RANKS:
    case WEB_ROUTE_HELPER:
    case WEB_ROUTE_BREAKDOWN:
    case WEB_ROUTE_CLUSTER_STEP_TRACE:
    case WEB_ROUTE_CLUSTER_FLOPS:
    case WEB_ROUTE_CLUSTER_MEMORY:
    case WEB_ROUTE_CLUSTER_COMM:
    case WEB_ROUTE_CLUSTER_LINKS:
    case WEB_ROUTE_GPU_TEMPORAL:
    case WEB_ROUTE_GPU_KERNEL_TYPES:
    case WEB_ROUTE_GPU_OVERLAP:
    case WEB_ROUTE_GPU_LAUNCHES:
    case WEB_ROUTE_GPU_IDLE:
    case WEB_ROUTE_GPU_QUEUE:
        return true;
    default:
        return false;
    }
}

bool web__route_store_cached(enum web_route_id id)
{
    switch (id) {
    case WEB_ROUTE_SUMMARY:
    case WEB_ROUTE_BENCHMARK:
    case WEB_ROUTE_MEMORY:
    case WEB_ROUTE_TREE:
    case WEB_ROUTE_OPERATOR_VIEW:
    case WEB_ROUTE_KERNEL_DETAILS:
    case WEB_ROUTE_COMM_OPS:
        return true;
    default:
        return false;
    }
}

/* A live route, computed by routes_live.c. http.c has served it from the answer cache already
 * if the job's snapshot was unchanged, and keeps this 200 answer if routes_live.c says so. */
static int get_live(struct web *w, const struct web_req *q, const struct web_route *rt,
                    struct web_answer *a)
{
    if (!w->store)
        return web__no_store(a);
    struct store_job job;
    if (web__find_live_job(w, rt, &job, a) < 0)
        return 0;
    if (live_is_untracked(w->live, job.id))
        return web__error(a, WEB_HTTP_SERVICE_UNAVAILABLE, "untracked",
                          "this job is not analysed live: it began while live_max_jobs jobs "
                          "were tracked (counted in /api/v1/stats live.untracked_jobs); its "
                          "records are stored (timeline, summaries) and a restart analyses "
                          "it if there is room");
    return web__route_live(w, q, rt, &job, a);
}

/* A store-read route, computed on an analysis thread by routes_summary.c. What it is computed
 * from is taken before it reads (cache.h): the job's store commit count before any read of the
 * job's rows (the job's own row gave only its id, which never changes), then its snapshot's
 * serial before the analysis reads live; its 200 answer is kept under both. */
static int get_summary(struct web *w, const struct web_req *q, const struct web_route *rt,
                       struct web_answer *a)
{
    if (!w->store)
        return web__no_store(a);
    struct store_job job;
    if (web__find_live_job(w, rt, &job, a) < 0)
        return 0;
    struct web_cache_from from = {.job_id = job.id, .stored = true,
                                  .commits = store_query_job_commits(w->store, job.id)};
    const struct live_snapshot *snap;
    bool keep = live_snapshot_get(w->live, job.id, &snap) == 0;
    if (keep) {
        from.serial = live_snapshot_serial(snap);
        live_snapshot_put(snap);
    }
    if (rt->id == WEB_ROUTE_KERNEL_DETAILS || rt->id == WEB_ROUTE_COMM_OPS)
        return web__route_tbprof(w, q, rt, &job, keep ? &from : NULL, a);
    return web__route_summary(w, q, rt, &job, keep ? &from : NULL, a);
}

/* The routes whose one form is JSON: they refuse ?format= other than json. Every other
 * JSON route reads format itself (web__param_format()); /metrics and /api/v1/events answer
 * their own fixed formats (Prometheus text, text/event-stream). */
static bool route_json_only(enum web_route_id id)
{
    switch (id) {
    case WEB_ROUTE_HEALTH:
    case WEB_ROUTE_STATS:
    case WEB_ROUTE_OPENAPI:
    case WEB_ROUTE_TIMELINE:
    case WEB_ROUTE_STEP_TRACE:
    case WEB_ROUTE_HELPER:
    case WEB_ROUTE_CAPTURES:
    case WEB_ROUTE_CAPTURE:
        return true;
    default:
        return false;
    }
}

int web__route_api(struct web *w, const struct web_req *q, const struct web_route *r,
                   struct web_answer *a)
{
    if (route_json_only(r->id) && web__param_json_only(q, a) < 0)
        return 0;
    if (web__route_cached(r->id))
        return get_live(w, q, r, a);
    if (web__route_store_cached(r->id))
        return get_summary(w, q, r, a);
    switch (r->id) {
    case WEB_ROUTE_HEALTH:
        return get_health(w, a);
    case WEB_ROUTE_STATS:
        return get_stats(w, a);
    case WEB_ROUTE_OPENAPI:
        return get_openapi(w, a);
    case WEB_ROUTE_METRICS:
        return web__route_metrics(w, a);
    case WEB_ROUTE_EVENTS:
        return web__route_events(w, q, a);
    case WEB_ROUTE_JOBS:
        return get_jobs(w, q, a);
    case WEB_ROUTE_JOB:
        return get_job(w, q, r, a);
    case WEB_ROUTE_TIMELINE:
        return web__route_timeline(w, q, r, a);
    case WEB_ROUTE_CAPTURES:
    case WEB_ROUTE_CAPTURE:
        return web__route_captures(w, r, a);
    case WEB_ROUTE_DIFF:
        return web__route_diff(w, q, a);
    default: /* the live and store-read routes above; STATIC and LOGIN (POST): in http.c */
        break;
    }
    return web__error(a, WEB_HTTP_NOT_FOUND, "not_found", "no such API route");
}
