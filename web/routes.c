/* SPDX-License-Identifier: MIT */
/*
 * routes: the /api/v1/ handlers. Each one reads query parameters strictly (a bad one is a 400
 * that names it), asks the store through store_query.h, renders with render.c into an sbuf capped
 * at max_response_bytes, and answers through http.c. They only read: no handler writes to the
 * store or holds SQL. Without a store (cfg->store NULL, as in unit tests or while the daemon
 * starts), every route that needs one answers 503 unavailable; health and stats still answer.
 */
#include "web_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

static int no_store(struct web *w, struct MHD_Connection *c)
{
    return web__send_error(w, c, MHD_HTTP_SERVICE_UNAVAILABLE, "unavailable",
                           "no store attached");
}

static int get_health(struct web *w, struct MHD_Connection *c)
{
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    web__render_health(&b, w->version);
    return web__send_json(w, c, MHD_HTTP_OK, &b, NULL);
}

static int get_stats(struct web *w, struct MHD_Connection *c)
{
    struct store_info info;
    bool have_info = false;
    if (w->store) {
        int r = store_query_info(w->store, &info);
        if (r < 0)
            return web__send_store_error(w, c, r, "store_query_info");
        have_info = true;
    }
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    web__render_stats(&b, w->stats, have_info ? &info : NULL);
    return web__send_json(w, c, MHD_HTTP_OK, &b, NULL);
}

/* The document is compiled in (openapi_json.c), so it always matches the binary's routes. */
static int get_openapi(struct web *w, struct MHD_Connection *c)
{
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    sbuf_add(&b, web__openapi_json, web__openapi_json_len);
    return web__send_json(w, c, MHD_HTTP_OK, &b, NULL);
}

static int get_jobs(struct web *w, struct MHD_Connection *c)
{
    if (!w->store)
        return no_store(w, c);
    bool csv;
    int mhd;
    if (web__param_format(w, c, &csv, &mhd) < 0)
        return mhd;
    struct store_job *jobs = NULL;
    size_t n = 0;
    int r = store_query_jobs(w->store, &jobs, &n);
    if (r < 0)
        return web__send_store_error(w, c, r, "store_query_jobs");
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    if (csv)
        web__render_jobs_csv(&b, jobs, n);
    else
        web__render_jobs(&b, jobs, n);
    free(jobs);
    return csv ? web__send_csv(w, c, &b) : web__send_json(w, c, MHD_HTTP_OK, &b, NULL);
}

/* Finds the job of the route; answers 404 naming it (escaped by the renderer) if there is none.
 * Returns 0 with *ret_job set, or -1 with *ret_mhd holding the answer's MHD result. */
static int find_job(struct web *w, struct MHD_Connection *c, const struct web_route *rt,
                    struct store_job *ret_job, int *ret_mhd)
{
    int r = store_query_job(w->store, rt->job, ret_job);
    if (r == -ENOENT) {
        char msg[RECORD_NAME_MAX + 16];
        snprintf(msg, sizeof msg, "no job \"%s\"", rt->job);
        *ret_mhd = web__send_error(w, c, MHD_HTTP_NOT_FOUND, "not_found", msg);
        return -1;
    }
    if (r < 0) {
        *ret_mhd = web__send_store_error(w, c, r, "store_query_job");
        return -1;
    }
    return 0;
}

static int get_job(struct web *w, struct MHD_Connection *c, const struct web_route *rt)
{
    if (!w->store)
        return no_store(w, c);
    struct store_job job;
    bool csv;
    int mhd;
    if (web__param_format(w, c, &csv, &mhd) < 0 || find_job(w, c, rt, &job, &mhd) < 0)
        return mhd;
    struct store_rank *ranks = NULL;
    size_t n = 0;
    int r = store_query_ranks(w->store, job.id, &ranks, &n);
    if (r < 0)
        return web__send_store_error(w, c, r, "store_query_ranks");
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    /* The CSV form is the job's one table, ranks_detail. */
    if (csv)
        web__render_ranks_csv(&b, ranks, n);
    else
        web__render_job(&b, &job, ranks, n);
    free(ranks);
    return csv ? web__send_csv(w, c, &b) : web__send_json(w, c, MHD_HTTP_OK, &b, NULL);
}

struct timeline_ctx {
    struct sbuf *b;
    bool first;
};

static int on_event(void *ud, const char *line, size_t len)
{
    struct timeline_ctx *t = ud;
    web__render_timeline_event(t->b, line, len, t->first);
    t->first = false;
    /* Once the cap is hit nothing more can be added: stop the scan early. */
    return t->b->error != 0;
}

static int get_timeline(struct web *w, struct MHD_Connection *c, const struct web_route *rt)
{
    /* Parameters first: a bad request is bad whether or not a store is attached. */
    int64_t rank, t0, t1, limit;
    int mhd;
    if (web__param_i64(w, c, "rank", -1, INT32_MAX, -1, &rank, &mhd) < 0 ||
        web__param_us(w, c, "start_us", INT64_MIN, INT64_MAX, INT64_MIN, &t0, &mhd) < 0 ||
        web__param_us(w, c, "end_us", INT64_MIN, INT64_MAX, INT64_MAX, &t1, &mhd) < 0 ||
        web__param_i64(w, c, "limit", 1, WEB_TIMELINE_LIMIT_MAX, WEB_TIMELINE_LIMIT_DEFAULT,
                       &limit, &mhd) < 0)
        return mhd;
    if (t1 < t0)
        return web__send_error(w, c, MHD_HTTP_BAD_REQUEST, "bad_request",
                               "end_us: before start_us");
    if (!w->store)
        return no_store(w, c);
    struct store_job job;
    if (find_job(w, c, rt, &job, &mhd) < 0)
        return mhd;
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    web__render_timeline_begin(&b);
    struct timeline_ctx t = {.b = &b, .first = true};
    int64_t n = store_query_events(w->store, job.id, rank, t0, t1, limit, on_event, &t);
    if (n < 0) {
        sbuf_done(&b);
        return web__send_store_error(w, c, (int)n, "store_query_events");
    }
    web__render_timeline_end(&b, &job, n, limit);
    char disposition[64];
    snprintf(disposition, sizeof disposition, "attachment; filename=\"%" PRId64 ".trace.json\"",
             job.id);
    return web__send_json(w, c, MHD_HTTP_OK, &b, disposition);
}

static int get_live(struct web *w, struct MHD_Connection *c, const struct web_route *rt)
{
    if (!w->store)
        return no_store(w, c);
    struct store_job job;
    int mhd;
    if (find_job(w, c, rt, &job, &mhd) < 0)
        return mhd;
    return web__route_live(w, c, rt, &job);
}

int web__route_api(struct web *w, struct MHD_Connection *c, const struct web_route *r)
{
    switch (r->id) {
    case WEB_ROUTE_HEALTH:
        return get_health(w, c);
    case WEB_ROUTE_STATS:
        return get_stats(w, c);
    case WEB_ROUTE_OPENAPI:
        return get_openapi(w, c);
    case WEB_ROUTE_JOBS:
        return get_jobs(w, c);
    case WEB_ROUTE_JOB:
        return get_job(w, c, r);
    case WEB_ROUTE_TIMELINE:
        return get_timeline(w, c, r);
    case WEB_ROUTE_STEPS:
    case WEB_ROUTE_STEP_TRACE:
    case WEB_ROUTE_OPERATORS:
    case WEB_ROUTE_KERNELS:
    case WEB_ROUTE_QUEUES:
    case WEB_ROUTE_PIPELINE:
    case WEB_ROUTE_RANKS:
    case WEB_ROUTE_HELPER:
        return get_live(w, c, r);
    case WEB_ROUTE_STATIC:
    case WEB_ROUTE_API_UNKNOWN:
        break;
    }
    return web__send_error(w, c, MHD_HTTP_NOT_FOUND, "not_found", "no such API route");
}
