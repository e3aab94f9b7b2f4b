/* SPDX-License-Identifier: MIT */
/*
 * clocks: the clocks of a job's hosts (analyse_clock.h, docs/ANALYSIS.md "Clocks of different
 * hosts") for the routes that show ranks of several hosts side by side: the job's ranks_detail
 * and "clocks", and the timeline export, which moves an aligned host's events onto the
 * reference's clock.
 *
 * A rank's host is its ranks_detail host (the latest hello's, or for a rank a cluster view pulled
 * from another node, that node's hello's); a hello without a host counts as the node the rank
 * came from (ranks_detail's node, else this daemon's own node name). The steps are the rank's last WEB_CLOCK_STEPS steps as
 * live lists them (step records, else step spans, as /steps), else for a rank live does not hold
 * its stored step records. The offsets are taken as constant, so the latest steps measure them as
 * well as all would, and a request costs the same on a job of 10 k steps as of 1 k: 64 ranks of
 * 10 k steps on 8 hosts, about 10 ms (docs/PERFORMANCE.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/util.h"
#include "../analyse/analyse_clock.h"
#include "routes.h"

/* The rows of the ranks with one host, gathered for analyse_clock_compute(). */
struct clk_host {
    struct analyse_clock_step *steps;
    size_t n, cap;
};

static int clk_push(struct clk_host *h, int64_t rank, int64_t step, int64_t begin, int64_t end)
{
    void *p = h->steps;
    if (util_grow(&p, &h->cap, h->n + 1, sizeof *h->steps) < 0)
        return -ENOMEM;
    h->steps = p;
    h->steps[h->n++] = (struct analyse_clock_step){.rank = rank, .step = step, .begin_ns = begin,
                                                   .end_ns = end};
    return 0;
}

struct clk_scan {
    struct web_clocks *c;
    const struct store_rank *ranks;
    const bool *from_live; /* [n_ranks]: live gave the rank's steps */
    struct clk_host *hosts;
    int err;
};

static int on_clk_step(void *ud, int64_t rank, const struct record *rec)
{
    struct clk_scan *s = ud;
    for (size_t i = 0; i < s->c->n_ranks; i++) {
        if (s->ranks[i].rank != rank || s->from_live[i])
            continue;
        int64_t end = rec->dur_ns > 0 && rec->ts_ns > INT64_MAX - rec->dur_ns
                          ? INT64_MAX
                          : rec->ts_ns + (rec->dur_ns > 0 ? rec->dur_ns : 0);
        s->err = clk_push(&s->hosts[s->c->rank_host[i]], rank, rec->step, rec->ts_ns, end);
        return s->err < 0;
    }
    return 0;
}

/* The clock a rank's times are on: its host; for a hello without one, the node it came from (a
 * cluster view's pulled rank), else this node (this daemon's own rank): one machine each. */
static const char *rank_clock_name(const struct web *w, const struct store_rank *r)
{
    if (r->host[0])
        return r->host;
    return r->node[0] ? r->node : w->node;
}

int web__clocks(struct web *w, int64_t job_id, const struct store_rank *ranks, size_t n,
                struct web_clocks *ret)
{
    memset(ret, 0, sizeof *ret);
    ret->n_ranks = n;
    ret->rank_host = calloc(n ? n : 1, sizeof *ret->rank_host);
    ret->names = calloc(n ? n : 1, sizeof *ret->names);
    if (!ret->rank_host || !ret->names) {
        web__clocks_done(ret);
        return -ENOMEM;
    }
    /* The hosts, in the order their first rank comes. */
    for (size_t i = 0; i < n; i++) {
        const char *host = rank_clock_name(w, &ranks[i]);
        size_t h = 0;
        while (h < ret->n_hosts && strcmp(ret->names[h], host) != 0)
            h++;
        if (h == ret->n_hosts)
            snprintf(ret->names[ret->n_hosts++], sizeof ret->names[0], "%s", host);
        ret->rank_host[i] = h;
    }
    if (ret->n_hosts < 2)
        return 0; /* one clock: nothing to align */
    int err = -ENOMEM;
    struct clk_host *hosts = calloc(ret->n_hosts, sizeof *hosts);
    struct analyse_clock_host *in = calloc(ret->n_hosts, sizeof *in);
    bool *from_live = calloc(n, sizeof *from_live);
    bool need_store = false;
    const struct live_snapshot *snap = NULL;
    if (!hosts || !in || !from_live)
        goto out;
    if (w->live && live_snapshot_get(w->live, job_id, &snap) < 0)
        snap = NULL;
    for (size_t i = 0; i < n; i++) {
        struct clk_host *h = &hosts[ret->rank_host[i]];
        void *p = h->steps;
        if (util_grow(&p, &h->cap, h->n + WEB_CLOCK_STEPS, sizeof *h->steps) < 0)
            goto out;
        h->steps = p;
        size_t got = snap ? live_query_clock_steps(snap, ranks[i].rank, WEB_CLOCK_STEPS,
                                                   h->steps + h->n)
                          : 0;
        h->n += got;
        from_live[i] = got > 0;
        need_store = need_store || got == 0;
    }
    if (need_store && w->store) {
        struct clk_scan s = {.c = ret, .ranks = ranks, .from_live = from_live, .hosts = hosts};
        int64_t r = store_query_steps(w->store, job_id, on_clk_step, &s);
        if (s.err < 0 || r < 0) {
            err = s.err < 0 ? s.err : (int)r;
            goto out;
        }
    }
    for (size_t h = 0; h < ret->n_hosts; h++)
        in[h] = (struct analyse_clock_host){.name = ret->names[h], .steps = hosts[h].steps,
                                            .n = hosts[h].n};
    err = analyse_clock_compute(in, ret->n_hosts, NULL, &ret->table);
out:
    live_snapshot_put(snap);
    for (size_t h = 0; hosts && h < ret->n_hosts; h++)
        free(hosts[h].steps);
    free(hosts);
    free(in);
    free(from_live);
    if (err < 0)
        web__clocks_done(ret);
    return err < 0 ? err : 0;
}

int64_t web__clocks_offset(const struct web_clocks *c, size_t i)
{
    if (!c || !c->table || i >= c->n_ranks)
        return 0;
    return c->table->hosts[c->rank_host[i]].offset_ns;
}

void web__clocks_done(struct web_clocks *c)
{
    if (!c)
        return;
    analyse_clock_free(c->table);
    free(c->rank_host);
    free(c->names);
    memset(c, 0, sizeof *c);
}
