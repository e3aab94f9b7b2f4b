/* SPDX-License-Identifier: MIT */
/*
 * routes_comm: /api/v1/jobs/{job}/cluster/communication and /cluster/links, MindInsight's
 * cluster communication of every rank of a job (API.md; definitions in docs/ANALYSIS.md
 * "Cluster communication"). The figures are the "communication" object of the ranks' hellos
 * (docs/PROTOCOL.md; `stepscope import` sends it from MindSpore's hccl_raw_<rank>.csv). A job
 * without one has no such figures: an empty answer whose "reason" says so.
 */
#include "routes.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../analyse/analyse_comm.h"
#include "json.h"
#include "num.h"
#include "util.h"

#define LINKS_LIMIT_DEFAULT 100

struct rank_comm {
    int64_t rank;
    bool found;           /* the rank's hello has the step (or the average) */
    int64_t cost_ns, wait_ns;
};

struct gather {
    int64_t step;         /* 0: MindSpore's average row */
    struct rank_comm *r;
    size_t n, cap;
    struct analyse_comm_link *l;
    size_t n_l, cap_l;
    int64_t last_step;
    bool any;             /* some rank's hello has a "communication" object */
    int err;
};

/* ["src-dst","TYPE",cost µs,size bytes,bandwidth bytes/s] */
static bool read_link(struct json_reader *j, struct analyse_comm_link *ret)
{
    char sd[40];
    size_t n;
    const char *s;
    if (!json_array_begin(j) || !json_element(j) || !json_read_string(j, sd, sizeof sd, &n) ||
        n >= sizeof sd)
        return false;
    char *dash = strchr(sd, '-');
    if (!dash || num_parse_i64(sd, (size_t)(dash - sd), &ret->src) < 0 ||
        num_parse_i64(dash + 1, strlen(dash + 1), &ret->dst) < 0)
        return false;
    if (!json_element(j) || !json_read_string(j, ret->type, sizeof ret->type, &n) ||
        n >= sizeof ret->type)
        return false;
    if (!json_element(j) || !json_read_number_text(j, &s, &n) ||
        num_us_to_ns(s, n, &ret->cost_ns) < 0)
        return false;
    if (!json_element(j) || !json_read_number_text(j, &s, &n) ||
        num_parse_i64(s, n, &ret->size_bytes) < 0)
        return false;
    if (!json_element(j) || !json_read_number_text(j, &s, &n) ||
        num_parse_i64(s, n, &ret->bw_bytes_per_s) < 0)
        return false;
    return !json_element(j) && !j->bad;
}

/* One row {"step"?,"communication_cost","wait_cost","links"}: taken when want. */
static bool read_row(struct json_reader *j, struct gather *g, struct rank_comm *p, bool want,
                     int64_t *step)
{
    char key[24];
    int64_t cost = -1, wait = -1;
    size_t first_link = g->n_l;
    if (!json_object_begin(j))
        return false;
    while (json_member(j, key, sizeof key)) {
        const char *s;
        size_t n;
        if (strcmp(key, "step") == 0) {
            if (!json_read_number_text(j, &s, &n) || num_parse_i64(s, n, step) < 0)
                return false;
        } else if (strcmp(key, "communication_cost") == 0 || strcmp(key, "wait_cost") == 0) {
            if (!json_read_number_text(j, &s, &n) ||
                num_us_to_ns(s, n, key[0] == 'c' ? &cost : &wait) < 0)
                return false;
        } else if (strcmp(key, "links") == 0 && want) {
            if (!json_array_begin(j))
                return false;
            while (json_element(j)) {
                if (util_grow((void **)&g->l, &g->cap_l, g->n_l + 1, sizeof *g->l) < 0) {
                    g->err = -ENOMEM;
                    return false;
                }
                struct analyse_comm_link *l = &g->l[g->n_l];
                memset(l, 0, sizeof *l);
                l->rank = p->rank;
                if (!read_link(j, l))
                    return false;
                g->n_l++;
            }
        } else if (!json_skip(j)) {
            return false;
        }
        if (j->bad)
            return false;
    }
    if (j->bad || cost < 0 || wait < 0) {
        g->n_l = first_link;
        return false;
    }
    if (want) {
        p->found = true;
        p->cost_ns = cost;
        p->wait_ns = wait;
    } else {
        g->n_l = first_link;
    }
    return true;
}

/* "communication":{"steps":[...],"average":{...}|null}; a rank's later hello replaces what an
 * earlier one gave. */
static void read_comm(struct json_reader *j, struct gather *g, struct rank_comm *p)
{
    char key[16];
    if (!json_object_begin(j))
        return;
    g->any = true;
    while (json_member(j, key, sizeof key)) {
        if (strcmp(key, "steps") == 0 && json_peek(j) == JSON_ARRAY) {
            json_array_begin(j);
            while (json_element(j)) {
                /* a row is read twice: once for its step, once to take it */
                struct json_reader at = *j;
                int64_t step = 0;
                if (!read_row(j, g, p, false, &step))
                    return;
                if (step > g->last_step)
                    g->last_step = step;
                if (g->step > 0 && step == g->step && !read_row(&at, g, p, true, &step))
                    return;
            }
        } else if (strcmp(key, "average") == 0 && json_peek(j) == JSON_OBJECT) {
            int64_t step = 0;
            if (!read_row(j, g, p, g->step == 0, &step))
                return;
        } else if (!json_skip(j)) {
            return;
        }
    }
}

static int on_hello(void *ud, void *elem, const char *line, size_t len)
{
    struct gather *g = ud;
    struct rank_comm *p = elem;
    int64_t rank = p->rank;
    struct json_reader j;
    if (!web__hello_object(&j, line, len, "communication"))
        return 0;
    /* this hello's links replace the rank's earlier ones */
    size_t keep = 0;
    for (size_t i = 0; i < g->n_l; i++)
        if (g->l[i].rank != rank)
            g->l[keep++] = g->l[i];
    g->n_l = keep;
    p->found = false;
    read_comm(&j, g, p);
    return g->err;
}

/* Why a job has no figures at all (an empty answer, not a 404: the Cluster page asks any job). */
static const char no_figures[] = "no communication figures: only MindSpore's hccl_raw files "
                                 "(stepscope import) give them; a torch, Paddle or protocol job "
                                 "has no per-link or wait figures (a torch job's communication "
                                 "time from its kernels is in /cluster/step-trace; "
                                 "docs/ANALYSIS.md)";

static void put_step(struct sbuf *b, const struct gather *g)
{
    if (g->step > 0)
        sbuf_printf(b, "{\"step\":%" PRId64 ",\"average_from\":null", g->step);
    else
        sbuf_printf(b, "{\"step\":\"average\",\"average_from\":%s",
                    g->any ? "\"mindspore\"" : "null");
    sbuf_printf(b, ",\"last_step\":%" PRId64 ",\"reason\":", g->last_step);
    if (g->any)
        sbuf_adds(b, "null");
    else
        sbuf_json_strz(b, no_figures);
}

static void render_comm(struct sbuf *b, enum web_format fmt, const struct gather *g)
{
    bool first = true;
    if (fmt == WEB_FORMAT_CSV)
        sbuf_adds(b, "rank,communication_cost_us,wait_cost_us\n");
    else if (fmt == WEB_FORMAT_JSON) {
        put_step(b, g);
        sbuf_adds(b, ",\"ranks\":[");
    } else
        sbuf_addc(b, '[');
    for (size_t i = 0; i < g->n; i++) {
        const struct rank_comm *p = &g->r[i];
        if (!p->found)
            continue;
        if (fmt == WEB_FORMAT_CSV) {
            sbuf_printf(b, "%" PRId64 ",", p->rank);
            sbuf_json_us(b, p->cost_ns);
            sbuf_addc(b, ',');
            sbuf_json_us(b, p->wait_ns);
            sbuf_addc(b, '\n');
            continue;
        }
        sbuf_printf(b, "%s{\"rank\":%" PRId64 ",\"communication_cost_us\":", first ? "" : ",",
                    p->rank);
        sbuf_json_us(b, p->cost_ns);
        sbuf_adds(b, ",\"wait_cost_us\":");
        sbuf_json_us(b, p->wait_ns);
        sbuf_addc(b, '}');
        first = false;
    }
    if (fmt == WEB_FORMAT_JSON)
        sbuf_adds(b, "]}");
    else if (fmt != WEB_FORMAT_CSV)
        sbuf_addc(b, ']');
}

static void render_links(struct sbuf *b, enum web_format fmt, const struct gather *g,
                         size_t total, size_t from, size_t n)
{
    if (fmt == WEB_FORMAT_CSV)
        sbuf_adds(b, "rank,src_rank,dst_rank,link_type,communication_cost_us,"
                     "communication_size_bytes,band_width_bytes_per_s\n");
    else if (fmt == WEB_FORMAT_JSON) {
        put_step(b, g);
        sbuf_printf(b, ",\"total\":%zu,\"offset\":%zu,\"links\":[", total, from);
    } else
        sbuf_addc(b, '[');
    for (size_t i = from; i < from + n; i++) {
        const struct analyse_comm_link *l = &g->l[i];
        if (fmt == WEB_FORMAT_CSV) {
            /* The type is the client's text: a text cell like a name (render.h). */
            sbuf_printf(b, "%" PRId64 ",%" PRId64 ",%" PRId64 ",", l->rank, l->src, l->dst);
            web__csv_str(b, l->type);
            sbuf_addc(b, ',');
            sbuf_json_us(b, l->cost_ns);
            sbuf_printf(b, ",%" PRId64 ",%" PRId64 "\n", l->size_bytes, l->bw_bytes_per_s);
            continue;
        }
        sbuf_printf(b,
                    "%s{\"rank\":%" PRId64 ",\"src_rank\":%" PRId64 ",\"dst_rank\":%" PRId64
                    ",\"src_dst\":\"%" PRId64 "-%" PRId64 "\",\"link_type\":",
                    i > from ? "," : "", l->rank, l->src, l->dst, l->src, l->dst);
        sbuf_json_strz(b, l->type);
        sbuf_adds(b, ",\"communication_cost_us\":");
        sbuf_json_us(b, l->cost_ns);
        sbuf_printf(b, ",\"communication_size_bytes\":%" PRId64 ",\"band_width_bytes_per_s\":%" PRId64
                       "}",
                    l->size_bytes, l->bw_bytes_per_s);
    }
    if (fmt == WEB_FORMAT_JSON)
        sbuf_adds(b, "]}");
    else if (fmt != WEB_FORMAT_CSV)
        sbuf_addc(b, ']');
}

/* The ranks of job and their hellos' figures for step (0: the average) into *g; g->r and g->l
 * malloc'd (the caller frees both, also on failure). */
static int gather_comm(struct web *w, const struct store_job *job, int64_t step, struct gather *g,
                       const char **what)
{
    *g = (struct gather){.step = step};
    *what = "store_query_ranks/hellos";
    void *v;
    int r = web__rank_hellos(w, job, sizeof *g->r, NULL, on_hello, g, &v, &g->n);
    g->r = v;
    return r < 0 ? r : g->err;
}

int web__cluster_links(struct web *w, const struct store_job *job, struct analyse_comm_link **ret,
                       size_t *ret_n, int64_t **ret_ranks, size_t *ret_n_ranks)
{
    struct gather g;
    const char *what;
    *ret = NULL;
    *ret_ranks = NULL;
    *ret_n = *ret_n_ranks = 0;
    int r = gather_comm(w, job, 0, &g, &what);
    if (r < 0) {
        free(g.r);
        free(g.l);
        return r;
    }
    int64_t *ranks = calloc(g.n ? g.n : 1, sizeof *ranks);
    if (!ranks) {
        free(g.r);
        free(g.l);
        return -ENOMEM;
    }
    size_t n = 0;
    for (size_t i = 0; i < g.n; i++)
        if (g.r[i].found)
            ranks[n++] = g.r[i].rank;
    free(g.r);
    *ret = g.l;
    *ret_n = g.n_l;
    *ret_ranks = ranks;
    *ret_n_ranks = n;
    return 0;
}

int web__route_cluster_comm(struct web *w, const struct web_req *q, struct web_answer *a,
                            const struct store_job *job, bool links)
{
    int64_t step, src = -1, dst = -1, offset = 0, limit = 0;
    enum web_format fmt;
    char type[ANALYSE_COMM_TYPE_MAX + 2] = "", sort_s[24], order_s[8];
    size_t len;
    int key = ANALYSE_COMM_SORT_SRC_DST;
    bool desc = false;
    if (web__param_i64(q, a, "step", 0, INT64_MAX, 0, &step) < 0 ||
        web__param_format(q, a, false, &fmt) < 0)
        return 0;
    if (links) {
        if (web__param_i64(q, a, "src_rank", -1, INT32_MAX, -1, &src) < 0 ||
            web__param_i64(q, a, "dst_rank", -1, INT32_MAX, -1, &dst) < 0 ||
            web__param_i64(q, a, "offset", 0, INT64_MAX, 0, &offset) < 0 ||
            web__param_i64(q, a, "limit", 1, INT32_MAX,
                           fmt == WEB_FORMAT_JSON ? LINKS_LIMIT_DEFAULT : 0, &limit) < 0 ||
            web__param_str(q, a, "link_type", type, sizeof type, &len) < 0)
            return 0;
        int r = web__param_str(q, a, "sort", sort_s, sizeof sort_s, &len);
        if (r < 0)
            return 0;
        if (r == 1 && (key = analyse_comm_sort_parse(sort_s, len)) < 0)
            return web__error(a, WEB_HTTP_BAD_REQUEST, "bad_request",
                              "sort: src_dst, link_type, communication_cost, communication_size "
                              "or band_width");
        r = web__param_str(q, a, "order", order_s, sizeof order_s, &len);
        if (r < 0)
            return 0;
        if (r == 1 && strcmp(order_s, "desc") == 0)
            desc = true;
        else if (r == 1 && strcmp(order_s, "asc") != 0)
            return web__error(a, WEB_HTTP_BAD_REQUEST, "bad_request", "order: asc or desc");
    }
    struct gather g;
    const char *what;
    int r = gather_comm(w, job, step, &g, &what);
    if (r < 0) {
        free(g.r);
        free(g.l);
        return web__store_error(a, r, what);
    }
    bool found = false;
    for (size_t i = 0; i < g.n; i++)
        found = found || g.r[i].found;
    if (!found && g.any) {
        free(g.r);
        free(g.l);
        return web__error(a, WEB_HTTP_NOT_FOUND, "not_found",
                          step > 0 ? "no rank has this step" : "no rank has MindSpore's average row");
    }
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    if (links) {
        struct analyse_comm_filter f = {.src = src, .dst = dst, .type = type};
        size_t total = analyse_comm_links_select(g.l, g.n_l, &f, (enum analyse_comm_sort)key,
                                                 desc);
        size_t from = (uint64_t)offset < total ? (size_t)offset : total;
        size_t n = limit && (uint64_t)limit < total - from ? (size_t)limit : total - from;
        render_links(&b, fmt, &g, total, from, n);
    } else {
        render_comm(&b, fmt, &g);
    }
    free(g.r);
    free(g.l);
    return web__doc_fmt(w, a, &b, fmt);
}
