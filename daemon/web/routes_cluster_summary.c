/* SPDX-License-Identifier: MIT */
/*
 * routes_cluster_summary: /api/v1/jobs/{job}/cluster/flops and /cluster/memory, MindInsight's
 * cluster FLOPs and peak-memory heatmaps (API.md; definitions in docs/ANALYSIS.md "Cluster FLOPs
 * and memory"). The figures are the "summary" object of each rank's hellos (the importer sends
 * it from flops_summary_<r>.json and memory_usage_summary_<r>.json; docs/PROTOCOL.md), the last
 * hello that has the part winning. A rank without the part is listed in "missing_ranks" (every
 * rank of a job that sent none: an empty table).
 */
#include "routes.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../analyse/analyse_cluster.h"
#include "json.h"
#include "render.h"

enum { SUM_N = 5 };

struct rank_sum {
    int64_t rank;
    bool found;
    double v[SUM_N];
    bool has[SUM_N];
};

struct gather {
    struct rank_sum *r;
    size_t n;
    const char *part;               /* "flops" or "memory" */
    const char *const *keys;        /* its members, SUM_N at most (NULL-terminated) */
};

static const char *const flops_keys[] = {"flops_m", "flops_per_second_g", "flops_utilization",
                                         NULL};
static const char *const mem_keys[] = {"capacity_gb", "peak_gb", "static_gb", "allocations",
                                       "deallocations", NULL};

/* The part's object: {"key":number,...}; a member that is not a number >= 0 is ignored. */
static void read_part(struct json_reader *j, const struct gather *g, struct rank_sum *p)
{
    struct rank_sum t = {.rank = p->rank};
    char key[40];
    if (!json_object_begin(j))
        return;
    while (json_member(j, key, sizeof key)) {
        int k = -1;
        for (int i = 0; g->keys[i] && k < 0; i++)
            if (strcmp(key, g->keys[i]) == 0)
                k = i;
        const char *s;
        size_t n;
        char num[64];
        if (k >= 0 && json_peek(j) == JSON_NUMBER && json_read_number_text(j, &s, &n)) {
            if (n < sizeof num) {
                memcpy(num, s, n);
                num[n] = '\0';
                double d = strtod(num, NULL);
                if (d >= 0) {
                    t.v[k] = d;
                    t.has[k] = true;
                }
            }
        } else if (!json_skip(j)) {
            return;
        }
        if (j->bad)
            return;
    }
    /* the members without which the part says nothing */
    if (!j->bad && t.has[0] && t.has[1]) {
        t.found = true;
        *p = t;
    }
}

static int on_hello(void *ud, void *elem, const char *line, size_t len)
{
    const struct gather *g = ud;
    struct rank_sum *p = elem;
    struct json_reader j;
    if (!web__hello_object(&j, line, len, "summary"))
        return 0;
    char key[16];
    json_object_begin(&j);
    while (json_member(&j, key, sizeof key)) {
        if (strcmp(key, g->part) == 0 && json_peek(&j) == JSON_OBJECT)
            read_part(&j, g, p);
        else if (!json_skip(&j))
            return 0;
        if (j.bad)
            return 0;
    }
    return 0;
}

int web__cluster_summary_rows(struct web *w, const struct store_job *job, bool memory,
                              struct web_cl_sum_row **ret_rows, size_t *ret_n,
                              int64_t **ret_missing, size_t *ret_n_missing)
{
    *ret_rows = NULL;
    *ret_missing = NULL;
    *ret_n = *ret_n_missing = 0;
    struct gather g = {.part = memory ? "memory" : "flops",
                       .keys = memory ? mem_keys : flops_keys};
    void *v;
    int r = web__rank_hellos(w, job, sizeof *g.r, NULL, on_hello, &g, &v, &g.n);
    if (r < 0)
        return r;
    g.r = v;
    struct web_cl_sum_row *rows = calloc(g.n ? g.n : 1, sizeof *rows);
    int64_t *missing = calloc(g.n ? g.n : 1, sizeof *missing);
    if (!rows || !missing) {
        free(g.r);
        free(rows);
        free(missing);
        return -ENOMEM;
    }
    size_t n_rows = 0, n_missing = 0;
    double max_flops = 0;
    for (size_t i = 0; i < g.n; i++)
        if (g.r[i].found && g.r[i].v[0] > max_flops)
            max_flops = g.r[i].v[0];
    for (size_t i = 0; i < g.n; i++) {
        const struct rank_sum *p = &g.r[i];
        if (!p->found) {
            missing[n_missing++] = p->rank;
            continue;
        }
        struct web_cl_sum_row *o = &rows[n_rows++];
        o->rank = p->rank;
        for (int k = 0; k < SUM_N; k++) {
            o->v[k] = p->v[k];
            o->has[k] = p->has[k];
        }
        if (memory) {
            /* capacity, peak, static in bytes; the ratio of peak to capacity */
            for (int k = 0; k < 3; k++)
                o->bytes[k] = p->has[k] ? analyse_cl_gb_bytes(p->v[k]) : -1;
            o->ratio = analyse_cl_ratio(p->v[1], p->v[0]);
        } else {
            o->ratio = analyse_cl_ratio(p->v[0], max_flops);
        }
    }
    free(g.r);
    *ret_rows = rows;
    *ret_n = n_rows;
    *ret_missing = missing;
    *ret_n_missing = n_missing;
    return 0;
}

int web__route_cluster_summary(struct web *w, const struct web_req *q, struct web_answer *a,
                               const struct store_job *job, bool memory)
{
    enum web_format fmt;
    if (web__param_format(q, a, false, &fmt) < 0)
        return 0;
    struct web_cl_sum_row *rows;
    int64_t *missing;
    size_t n_rows, n_missing;
    int r = web__cluster_summary_rows(w, job, memory, &rows, &n_rows, &missing, &n_missing);
    if (r < 0)
        return web__store_error(a, r, "cluster summary");
    /* No rank with the summary is an empty table, not a 404: the Cluster page asks every job. */
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    web__render_cluster_summary(&b, fmt, memory, rows, n_rows, missing, n_missing);
    free(rows);
    free(missing);
    return web__doc_fmt(w, a, &b, fmt);
}
