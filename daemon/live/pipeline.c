/* SPDX-License-Identifier: MIT */
/*
 * pipeline: a rank's latest {"type":"pipeline"} record, typed by core's decode_pipeline()
 * (core/decode.h; live reads no JSON itself) and refcounted, so that the snapshots that show it
 * share it with the rank that holds it.
 */
#include "live_int.h"

#include "../core/decode.h"

int live__pipe_new(const struct record *r, struct live_pipe **ret_pipe)
{
    struct live_pipe *pl = malloc(sizeof *pl);
    if (!pl)
        return -ENOMEM;
    int e = decode_pipeline(r->raw, r->raw_len, &pl->p);
    if (e < 0) {
        free(pl);
        return e;
    }
    atomic_init(&pl->refs, 1);
    *ret_pipe = pl;
    return 0;
}

void live__pipe_put(struct live_pipe *pl)
{
    if (pl && atomic_fetch_sub_explicit(&pl->refs, 1, memory_order_acq_rel) == 1) {
        free(pl->p.values);
        free(pl);
    }
}
