/* SPDX-License-Identifier: MIT */
/*
 * hellos: what the cluster routes (routes_cluster.c, routes_cluster_summary.c, routes_comm.c)
 * read from a job's hellos: one element per rank of the job and each hello given to its rank's
 * element, and the hello's top-level objects ("parallel", "summary", "communication").
 */
#include "routes.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

bool web__hello_object(struct json_reader *j, const char *line, size_t len, const char *name)
{
    json_reader_init(j, line, len);
    char key[16];
    if (!json_object_begin(j))
        return false;
    while (json_member(j, key, sizeof key)) {
        if (strcmp(key, name) == 0 && json_peek(j) == JSON_OBJECT)
            return true;
        if (!json_skip(j))
            return false;
    }
    return false;
}

struct rank_hellos {
    char *v;
    size_t n, elem;
    web_rank_hello_fn on_hello;
    void *ud;
};

static int on_store_hello(void *ud, int64_t rank, const char *line, size_t len)
{
    struct rank_hellos *h = ud;
    for (size_t i = 0; i < h->n; i++) {
        void *e = h->v + i * h->elem;
        int64_t r;
        memcpy(&r, e, sizeof r);
        if (r == rank)
            return h->on_hello(h->ud, e, line, len);
    }
    return 0; /* a rank the job no longer lists */
}

int web__rank_hellos(struct web *w, const struct store_job *job, size_t elem,
                     web_rank_init_fn init, web_rank_hello_fn on_hello, void *ud, void **ret,
                     size_t *ret_n)
{
    *ret = NULL;
    *ret_n = 0;
    struct store_rank *ranks = NULL;
    size_t n = 0;
    int r = store_query_ranks(w->store, job->id, &ranks, &n);
    if (r < 0)
        return r;
    struct rank_hellos h = {.v = calloc(n ? n : 1, elem), .n = n, .elem = elem,
                            .on_hello = on_hello, .ud = ud};
    if (!h.v) {
        free(ranks);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        memcpy(h.v + i * elem, &ranks[i].rank, sizeof ranks[i].rank);
        if (init)
            init(h.v + i * elem, &ranks[i]);
    }
    free(ranks);
    int64_t rh = store_query_hellos(w->store, job->id, on_store_hello, &h);
    if (rh < 0) {
        free(h.v);
        return (int)rh;
    }
    *ret = h.v;
    *ret_n = n;
    return 0;
}
