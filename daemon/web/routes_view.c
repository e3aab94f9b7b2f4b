/* SPDX-License-Identifier: MIT */
/*
 * routes_view: the cluster view's part of a job's answers (docs/ARCHITECTURE.md, "The cluster
 * view"; docs/ANALYSIS.md, "The step window"). A job whose ranks came from more than one node
 * (some pulled from ClickHouse by daemon/cluster/pull.c) counts a step in its cross-rank answers
 * (/ranks and its stragglers, /helper) only once every node has shipped past it: the window is
 * the lowest, over the job's nodes, of the last step any rank of that node has here. Each node's
 * last step and how far it is behind are reported, with the ranks two nodes shipped.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../live/live_query.h"
#include "../store/store_query.h"
#include "routes.h"

void web__view_free(struct web_view *v)
{
    free(v->nodes);
    free(v->ranks);
    free(v->conflicts);
    memset(v, 0, sizeof *v);
    v->window = INT64_MAX;
}

int web__view_get(struct web *w, int64_t job_id, const struct live_snapshot *snap,
                  struct web_view *ret)
{
    memset(ret, 0, sizeof *ret);
    ret->window = INT64_MAX;
    if (!w->node[0] || !w->store) /* not in a cluster */
        return 0;
    struct store_rank *ranks = NULL;
    size_t n = 0;
    int r = store_query_ranks(w->store, job_id, &ranks, &n);
    if (r < 0)
        return r;
    r = store_query_conflicts(w->store, job_id, &ret->conflicts, &ret->n_conflicts);
    const struct live_snapshot *own = NULL;
    if (r == 0 && !snap && w->live && live_snapshot_get(w->live, job_id, &own) == 0)
        snap = own;
    int64_t *rk = NULL, *last = NULL;
    size_t nl = 0;
    if (r == 0 && snap) {
        rk = malloc((n + 1) * sizeof *rk);
        last = malloc((n + 1) * sizeof *last);
        if (!rk || !last)
            r = -ENOMEM;
        else
            nl = live_query_last_steps(snap, rk, last, n);
    }
    if (r == 0 && n > 0 && (!(ret->nodes = calloc(n, sizeof *ret->nodes)) ||
                            !(ret->ranks = calloc(n, sizeof *ret->ranks))))
        r = -ENOMEM;
    for (size_t i = 0; r == 0 && i < n; i++) {
        const char *node = ranks[i].node[0] ? ranks[i].node : w->node;
        ret->pulled |= ranks[i].node[0] != '\0';
        struct web_view_rank *vr = &ret->ranks[ret->n_ranks++];
        vr->rank = ranks[i].rank;
        snprintf(vr->node, sizeof vr->node, "%.79s", node);
        snprintf(vr->host, sizeof vr->host, "%.79s", ranks[i].host);
        int64_t l = -1;
        for (size_t k = 0; k < nl; k++)
            if (rk[k] == ranks[i].rank)
                l = last[k];
        size_t j = 0;
        while (j < ret->n_nodes && strcmp(ret->nodes[j].node, node) != 0)
            j++;
        if (j == ret->n_nodes) {
            snprintf(ret->nodes[j].node, sizeof ret->nodes[j].node, "%.79s", node);
            ret->nodes[j].last_step = -1;
            ret->n_nodes++;
        }
        ret->nodes[j].ranks++;
        if (l > ret->nodes[j].last_step)
            ret->nodes[j].last_step = l;
    }
    if (r == 0 && ret->pulled) {
        for (size_t j = 0; j < ret->n_nodes; j++)
            if (ret->nodes[j].last_step < ret->window)
                ret->window = ret->nodes[j].last_step;
    }
    free(rk);
    free(last);
    free(ranks);
    live_snapshot_put(own);
    if (r < 0)
        web__view_free(ret);
    return r;
}

void web__render_view(struct sbuf *b, const struct web_view *v)
{
    int64_t top = -1;
    for (size_t j = 0; j < v->n_nodes; j++)
        if (v->nodes[j].last_step > top)
            top = v->nodes[j].last_step;
    sbuf_adds(b, "{\"step_window\":");
    if (v->window == INT64_MAX)
        sbuf_adds(b, "null");
    else
        sbuf_printf(b, "%" PRId64, v->window);
    sbuf_adds(b, ",\"nodes\":[");
    for (size_t j = 0; j < v->n_nodes; j++) {
        const struct web_view_node *nd = &v->nodes[j];
        sbuf_adds(b, j ? ",{\"node\":" : "{\"node\":");
        sbuf_json_strz(b, nd->node);
        sbuf_printf(b, ",\"ranks\":%" PRId64 ",\"last_step\":", nd->ranks);
        if (nd->last_step < 0)
            sbuf_adds(b, "null");
        else
            sbuf_printf(b, "%" PRId64, nd->last_step);
        sbuf_printf(b, ",\"steps_behind\":%" PRId64 "}",
                    nd->last_step < 0 ? top + 1 : top - nd->last_step);
    }
    sbuf_adds(b, "],\"conflicts\":[");
    for (size_t i = 0; i < v->n_conflicts; i++) {
        const struct store_conflict *c = &v->conflicts[i];
        sbuf_printf(b, "%s{\"rank\":%" PRId64 ",\"node\":", i ? "," : "", c->rank);
        sbuf_json_strz(b, c->node);
        sbuf_adds(b, ",\"kept\":");
        sbuf_json_strz(b, c->kept);
        sbuf_addc(b, '}');
    }
    sbuf_adds(b, "]}");
}

void web__append_member(struct sbuf *b, const char *name, const struct web_view *v,
                        bool window_only)
{
    if (b->error || b->len == 0 || b->data[b->len - 1] != '}')
        return;
    b->len--;
    sbuf_adds(b, ",\"");
    sbuf_adds(b, name);
    sbuf_adds(b, "\":");
    if (!window_only)
        web__render_view(b, v);
    else if (v->window == INT64_MAX)
        sbuf_adds(b, "null");
    else
        sbuf_printf(b, "%" PRId64, v->window);
    sbuf_addc(b, '}');
}
