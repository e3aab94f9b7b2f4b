/* SPDX-License-Identifier: MIT */
/*
 * routes: the handlers http.c dispatches to, one file per family. Each reads its request through
 * answer.h and fills one struct web_answer; none sees libmicrohttpd. They only read: the store
 * through store_query.h, live snapshots through live_query.h, the counters with relaxed loads.
 * Every handler returns 0 (its answer is in a).
 */
#ifndef STEPSCOPE_WEB_ROUTES_H
#define STEPSCOPE_WEB_ROUTES_H

#include <stdbool.h>
#include <stddef.h>

#include "answer.h"
#include "cache.h"
#include "parse.h"
#include "server.h"

#define WEB_POST_BODY_MAX 16384 /* bytes of a POST body (413 past it) */

/* routes.c: an /api route already parsed (GET or HEAD). */
int web__route_api(struct web *w, const struct web_req *q, const struct web_route *r,
                   struct web_answer *a);
/* True for the routes whose 200 answers the cache may keep (the live ones, routes_live.c). */
bool web__route_cached(enum web_route_id id);
/* True for the store-read routes whose 200 answers the cache may keep (routes_summary.c): those
 * of web__route_summary() and web__route_tbprof(), kept under what they were computed from. */
bool web__route_store_cached(enum web_route_id id);
/* The job of the route into *ret_job (its steps as /steps counts them): 0, or -1 with the
 * answer (404 naming it, a store error) in a. */
int web__find_job(struct web *w, const struct web_route *rt, struct store_job *ret_job,
                  struct web_answer *a);
/* web__find_job() for a route that reads the job's live analyses: an evicted job is reloaded
 * first (live_ensure(), waiting); if that fails, 503. */
int web__find_live_job(struct web *w, const struct web_route *rt, struct store_job *ret_job,
                       struct web_answer *a);
/* 503 unavailable: no store attached. */
int web__no_store(struct web_answer *a);

/* routes_view.c: the cluster view's part of a job's answers. A node's last step is the largest
 * step any rank of it has here (-1: none); window is the step window, the lowest of those when
 * the job has ranks pulled from other nodes (a step counts in cross-rank answers once every node
 * shipped past it), INT64_MAX otherwise. */
struct web_view_node {
    char node[80];
    int64_t ranks, last_step;
};
struct web_view_rank {
    int64_t rank;
    char node[80], host[80];
};
struct web_view {
    bool pulled; /* some rank came from another node */
    int64_t window;
    struct web_view_rank *ranks; /* [n_ranks], by rank: each rank's node and host */
    size_t n_ranks;
    struct web_view_node *nodes;
    size_t n_nodes;
    struct store_conflict *conflicts;
    size_t n_conflicts;
};
struct live_snapshot;
/* Fills *ret for job_id (snap may be NULL: the job's latest is taken). A daemon not in a cluster
 * gets pulled false and no nodes. Returns 0 or a negative errno (store_query_ranks()'s). */
int web__view_get(struct web *w, int64_t job_id, const struct live_snapshot *snap,
                  struct web_view *ret);
void web__view_free(struct web_view *v);
/* {"step_window":W|null,"nodes":[{"node","ranks","last_step","steps_behind"}],"conflicts":[...]} */
void web__render_view(struct sbuf *b, const struct web_view *v);
/* Adds member name to the JSON object just rendered at the end of b: the view object, or with
 * window_only the window alone (null: none). */
void web__append_member(struct sbuf *b, const char *name, const struct web_view *v,
                        bool window_only);

/* routes_live.c: steps, step-trace, operators, kernels, queues, pipeline, ranks, helper and
 * breakdown from the job's live snapshot. */
int web__route_live(struct web *w, const struct web_req *q, const struct web_route *r,
                    const struct store_job *job, struct web_answer *a);

/* routes_cluster.c: /cluster/step-trace of job from its live snapshot (NULL: 404) and the
 * ranks' hellos and step records in the store; called by web__route_live(). */
int web__route_cluster(struct web *w, const struct web_req *q, struct web_answer *a,
                       const struct store_job *job, const struct live_snapshot *snap);

/* routes_cluster.c: the cluster step trace's table of job for step (0: the average) and stage
 * (0: all), as /cluster/step-trace answers it; rows malloc'd (free(ret->rows)), n_rows 0 when no
 * rank has the figures. Returns 0, or a negative errno with *what naming the query. */
struct analyse_cl_rank;
struct web_cl_table {
    bool layout_found; /* a rank's hello has a parallel layout */
    int mode;          /* enum analyse_cl_mode */
    int64_t stages, rank_size;
    struct analyse_cl_rank *rows;
    size_t n_rows;
    int64_t last_step;
    bool ms_avg;
    bool device_comm; /* no layout, and a rank has kernels: the device communication figures */
};
int web__cluster_table(struct web *w, const struct store_job *job,
                       const struct live_snapshot *snap, int64_t step, int64_t stage,
                       struct web_cl_table *ret, const char **what);

/* hellos.c: json_reader *j over a hello line, at the value of its top-level member name when
 * that is an object (true); false when it has none. */
struct json_reader;
bool web__hello_object(struct json_reader *j, const char *line, size_t len, const char *name);

/* hellos.c: one element of elem bytes per rank of job (store_query_ranks(): rank ascending),
 * zeroed but for its first member, an int64_t, the rank; init (NULL: none) then sees each with
 * the rank's row. Then every hello of the job's ranks (store_query_hellos(): in the order the
 * sessions began, so a rank's later hello comes after its earlier ones) goes to on_hello with
 * its rank's element; a negative return stops there and is returned. Sets *ret (malloc'd, the
 * caller frees it; room for one element when the job has none) and *ret_n. Returns 0 or a
 * negative errno (*ret then NULL). */
struct store_rank;
typedef void (*web_rank_init_fn)(void *elem, const struct store_rank *rank);
typedef int (*web_rank_hello_fn)(void *ud, void *elem, const char *line, size_t len);
int web__rank_hellos(struct web *w, const struct store_job *job, size_t elem,
                     web_rank_init_fn init, web_rank_hello_fn on_hello, void *ud, void **ret,
                     size_t *ret_n);

/* routes_cluster_summary.c: /cluster/flops (memory false) or /cluster/memory of job from the
 * ranks' hellos' "summary" objects; called by web__route_live(). */
int web__route_cluster_summary(struct web *w, const struct web_req *q, struct web_answer *a,
                               const struct store_job *job, bool memory);
/* Its rows (render.h, struct web_cl_sum_row) for the ranks whose hellos have the part, and the
 * other ranks; both malloc'd. Returns 0 or a negative errno. */
struct web_cl_sum_row;
int web__cluster_summary_rows(struct web *w, const struct store_job *job, bool memory,
                              struct web_cl_sum_row **ret_rows, size_t *ret_n,
                              int64_t **ret_missing, size_t *ret_n_missing);
/* routes_comm.c: /cluster/communication (links false) and /cluster/links of job from the ranks'
 * hellos in the store; called by web__route_live(). */
int web__route_cluster_comm(struct web *w, const struct web_req *q, struct web_answer *a,
                            const struct store_job *job, bool links);

/* routes_diff.c: GET /api/v1/diff, two jobs' operator, kernel and step-time tables side by side
 * (docs/API.md); answers a (always 0). */
int web__route_diff(struct web *w, const struct web_req *q, struct web_answer *a);
/* A side's step time: v's breakdown average (ranged false), else the mean of its steps numbered
 * in [first, last]; out->rank is v's rank. */
void web__diff_bd(const struct live_breakdown_view *v, bool ranged, int64_t first,
                  int64_t last, struct web_diff_bd *out);
/* routes_summary.c: /api/v1/diff with step ranges (struct web_diff_steps, summary.h). */
struct web_diff_steps;
/* Runs the diff on an analysis thread with the summaries' bounds, its connection parked, and
 * takes d's ranks in every case. Answers a (busy, stopping) or parks it; returns 0. */
int web__route_diff_steps(struct web *w, const struct web_req *q, struct web_diff_steps *d,
                          struct web_answer *a);

/* routes_comm.c: the links of the hccl_raw average rows (MindSpore's "-" row) of job's ranks'
 * hellos, each rank's in its file's order (malloc'd, *ret_n may be 0), and the ranks whose hello
 * has that row, ascending (malloc'd). 0, or a negative errno (nothing to free). */
struct analyse_comm_link;
int web__cluster_links(struct web *w, const struct store_job *job, struct analyse_comm_link **ret,
                       size_t *ret_n, int64_t **ret_ranks, size_t *ret_n_ranks);

#define WEB_CLOCK_STEPS 1024 /* each rank's latest steps the hosts' clocks are measured over */
/* clocks.c: the clocks of job_id's hosts over ranks[0..n) (store_query_ranks()'s, their host
 * the ranks_detail host) into *ret (free with web__clocks_done()): with two or more hosts,
 * analyse_clock_compute() over each rank's last WEB_CLOCK_STEPS steps as live lists them (for a
 * rank live does not hold, its stored step records).
 * Returns 0 or a negative errno (-ENOMEM, the store's); *ret is then empty. */
int web__clocks(struct web *w, int64_t job_id, const struct store_rank *ranks, size_t n,
                struct web_clocks *ret);
/* What ranks[i]'s times less are on the reference's clock: its host's offset when aligned, else
 * 0 (one host, or not aligned). */
int64_t web__clocks_offset(const struct web_clocks *c, size_t i);
void web__clocks_done(struct web_clocks *c);

/* timeline.c: /api/v1/jobs/{job}/timeline, the Chrome trace export, streamed. */
#define WEB_TIMELINE_LIMIT_DEFAULT 200000  /* timeline events per answer unless ?limit= says */
#define WEB_TIMELINE_LIMIT_MAX 10000000    /* largest ?limit= accepted */
#define WEB_TIMELINE_BYTES_DEFAULT 20971520 /* timeline export cap unless ?max_bytes= says */
#define WEB_TIMELINE_BYTES_MIN 4096        /* smallest ?max_bytes= accepted */
#define WEB_TIMELINE_RANKS_MAX 4096        /* ranks in one ?ranks= list */
#define WEB_TIMELINE_PIDS_MAX 4096         /* (rank, pid) pairs named by "M" events per export */
#define WEB_TIMELINE_PID_TEXT_MAX 64       /* a longer pid text is not named */
int web__route_timeline(struct web *w, const struct web_req *q, const struct web_route *r,
                        struct web_answer *a);

/* routes_summary.c: /summary/{kind} and /benchmark of job. The analysis runs on a thread of its
 * own while the connection is parked: the answer is then WEB_ANSWER_PARKED, and once the thread
 * wakes the connection http.c asks web__analysis_answer() for the real one. */
/* from (NULL: the answer is not kept) is what the analysis is computed from, taken before it
 * began (cache.h); its 200 answer carries it (answer.h keep, stored, commits). */
int web__route_summary(struct web *w, const struct web_req *q, const struct web_route *r,
                       const struct store_job *job, const struct web_cache_from *from,
                       struct web_answer *a);
/* /kernels/details and /comm-ops (torch-tb-profiler's kernel and communication tables), on the
 * same analysis threads and bounds. */
int web__route_tbprof(struct web *w, const struct web_req *q, const struct web_route *r,
                      const struct store_job *job, const struct web_cache_from *from,
                      struct web_answer *a);
int web__analysis_answer(struct web *w, const struct web_req *q, struct web_answer *a);
/* web_start(): the lock and cond. web_stop(): before the server stops, stops the running
 * analyses (as if their clients had gone) and waits for them; after it, frees what is left. */
int web__analyses_init(struct web *w);
void web__analyses_stop(struct web *w);
void web__analyses_free(struct web *w);

/* metrics.c: GET /metrics (Prometheus text). */
int web__route_metrics(struct web *w, struct web_answer *a);

/* static.c: a dashboard file for the undecoded path. */
int web__route_static(struct web *w, const char *path, struct web_answer *a);

/* captures.c: the routes that take a body. web__post_check() judges a POST before its body is
 * read (405, 415, 413): 0 with its route in *ret_route, or -1 with the answer in a.
 * web__route_post() answers the whole body (too_big: it passed WEB_POST_BODY_MAX).
 * web__route_captures() answers GET of WEB_ROUTE_CAPTURES and WEB_ROUTE_CAPTURE. */
int web__post_check(const struct web_req *q, const char *url, struct web_route *ret_route,
                    struct web_answer *a);
int web__route_post(struct web *w, const struct web_route *r, const char *body, size_t len,
                    bool too_big, struct web_answer *a);
int web__route_captures(struct web *w, const struct web_route *r, struct web_answer *a);

/* login.c: POST /api/v1/session, the dashboard's login (204 with the cookie, 400, 401), and
 * DELETE /api/v1/jobs/{job} (204, 404, 409 connected, 503). */
int web__login_post(struct web *w, const char *body, size_t len, struct web_answer *a);
int web__route_delete(struct web *w, const struct web_route *r, struct web_answer *a);

#endif
