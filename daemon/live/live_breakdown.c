/* SPDX-License-Identifier: MIT */
/*
 * live_breakdown: the spans a step-time breakdown needs, kept per rank while a job runs, and the
 * breakdown of one snapshot (analyse_breakdown_compute() over them, computed on first use).
 *
 * Why spans and not running totals: torch-tb-profiler's breakdown is not additive per event. A
 * step is stretched to the end of the device work its runtime calls launched, the next step
 * starts where it ended, trailing steps are trimmed by their device-event counts, and every
 * instant goes to the first busy category in priority order. Kineto also delivers a profiling
 * cycle's device events after its host events, so no step is final when its host span ends. The
 * analysis therefore runs over the spans themselves, kept compact (40 bytes: interval, links,
 * role, op, device) in chunks of LIVE_BD_CHUNK.
 *
 * Sharing: the loop appends to the last chunk and never touches a span below a chunk's count; a
 * snapshot takes a reference to every chunk and remembers the count of the last one, so
 * publishing copies no span, and an evicted chunk lives on until no snapshot shows it. At most
 * LIVE_BD_SPANS_MAX spans per rank are kept: past that the oldest chunk goes, its latest start
 * becomes the horizon, and steps starting before the horizon are left out of the breakdown (their
 * spans may be gone), so a number shown is never computed from a partial step.
 */
#include "live_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void live__bd_chunk_put(struct live_bd_chunk *ch)
{
    if (ch && atomic_fetch_sub_explicit(&ch->refs, 1, memory_order_acq_rel) == 1)
        free(ch);
}

int live__bd_add(struct live_bd *bd, const struct live_bd_span *sp)
{
    struct live_bd_chunk *last = bd->n_chunks ? bd->chunks[bd->n_chunks - 1] : NULL;
    if (!last || last->n == LIVE_BD_CHUNK) {
        if (bd->n_chunks * LIVE_BD_CHUNK >= LIVE_BD_SPANS_MAX) {
            struct live_bd_chunk *old = bd->chunks[0];
            for (size_t i = 0; i < old->n; i++)
                if (old->v[i].ts_ns > bd->horizon_ns)
                    bd->horizon_ns = old->v[i].ts_ns;
            bd->n_evicted += (int64_t)old->n;
            memmove(bd->chunks, bd->chunks + 1, (bd->n_chunks - 1) * sizeof *bd->chunks);
            bd->n_chunks--;
            live__bd_chunk_put(old);
        }
        if (bd->n_chunks == bd->cap_chunks) {
            size_t cap = bd->cap_chunks ? 2 * bd->cap_chunks : 8;
            struct live_bd_chunk **v = realloc(bd->chunks, cap * sizeof *v);
            if (!v)
                return -ENOMEM;
            bd->chunks = v;
            bd->cap_chunks = cap;
        }
        last = malloc(sizeof *last);
        if (!last)
            return -ENOMEM;
        atomic_init(&last->refs, 1);
        last->n = 0;
        bd->chunks[bd->n_chunks++] = last;
    }
    last->v[last->n++] = *sp;
    bd->n_spans++;
    return 0;
}

void live__bd_done(struct live_bd *bd)
{
    for (size_t i = 0; i < bd->n_chunks; i++)
        live__bd_chunk_put(bd->chunks[i]);
    free(bd->chunks);
    memset(bd, 0, sizeof *bd);
}

int live__bd_snap(const struct live_bd *bd, struct live_snap_bd *ret)
{
    memset(ret, 0, sizeof *ret);
    ret->horizon_ns = bd->horizon_ns;
    ret->n_spans = bd->n_spans;
    ret->n_evicted = bd->n_evicted;
    if (bd->n_chunks == 0)
        return 0;
    ret->chunks = malloc(bd->n_chunks * sizeof *ret->chunks);
    if (!ret->chunks)
        return -ENOMEM;
    for (size_t i = 0; i < bd->n_chunks; i++) {
        atomic_fetch_add_explicit(&bd->chunks[i]->refs, 1, memory_order_relaxed);
        ret->chunks[i] = bd->chunks[i];
    }
    ret->n_chunks = bd->n_chunks;
    ret->last_n = bd->chunks[bd->n_chunks - 1]->n;
    return 0;
}

void live__snap_bd_done(struct live_snap_bd *sb)
{
    for (size_t i = 0; i < sb->n_chunks; i++)
        live__bd_chunk_put(sb->chunks[i]);
    free(sb->chunks);
    analyse_breakdown_free(sb->result);
    memset(sb, 0, sizeof *sb);
}

/* The breakdown of one rank's spans, as analyse wants them. */
static int compute(const struct live_snapshot *s, const struct live_snap_bd *sb,
                   struct analyse_breakdown **ret_bd)
{
    size_t n = 0;
    for (size_t c = 0; c < sb->n_chunks; c++)
        n += c + 1 == sb->n_chunks ? sb->last_n : LIVE_BD_CHUNK;
    struct analyse_span *a = malloc((n ? n : 1) * sizeof *a);
    if (!a)
        return -ENOMEM;
    size_t k = 0;
    for (size_t c = 0; c < sb->n_chunks; c++) {
        size_t m = c + 1 == sb->n_chunks ? sb->last_n : LIVE_BD_CHUNK;
        for (size_t i = 0; i < m; i++) {
            const struct live_bd_span *sp = &sb->chunks[c]->v[i];
            /* A step that began before the horizon may have lost spans: leave it out. */
            if (sp->role == ANALYSE_ROLE_STEP && sp->ts_ns <= sb->horizon_ns)
                continue;
            struct analyse_span *o = &a[k++];
            memset(o, 0, sizeof *o);
            o->ts_ns = sp->ts_ns;
            o->dur_ns = sp->end_ns - sp->ts_ns;
            if (sp->op < s->n_ops) {
                o->name = s->ops[sp->op].name;
                o->name_len = s->ops[sp->op].name_len;
            } else {
                o->name = LIVE_OTHER_NAME;
                o->name_len = sizeof LIVE_OTHER_NAME - 1;
            }
            o->pid = sp->device;
            o->correlation = sp->correlation;
            o->external_id = sp->external_id;
            o->role = (enum analyse_role)sp->role;
        }
    }
    int r = analyse_breakdown_compute(a, k, ret_bd);
    free(a);
    return r;
}

int live_query_breakdown(const struct live_snapshot *snap, int64_t rank,
                         struct live_breakdown_view *ret)
{
    const struct live_snap_rank *sr = NULL;
    for (size_t i = 0; i < snap->n_ranks && !sr; i++)
        if (rank < 0 || snap->ranks[i].rank == rank)
            sr = &snap->ranks[i];
    if (!sr)
        return -ENOENT;
    /* The snapshot is immutable but for this cache, which bd_lock guards: the first reader
     * computes, concurrent readers of the same snapshot wait for it instead of computing too. */
    struct live_snapshot *s = (struct live_snapshot *)snap;
    struct live_snap_bd *sb = (struct live_snap_bd *)&sr->bd;
    pthread_mutex_lock(&s->bd_lock);
    if (!sb->done) {
        sb->err = compute(snap, sb, &sb->result);
        sb->done = sb->err != -ENOMEM; /* out of memory: a later reader tries again */
    }
    int r = sb->err;
    pthread_mutex_unlock(&s->bd_lock);
    if (r < 0)
        return r;
    ret->rank = sr->rank;
    ret->bd = sb->result;
    ret->n_spans = sb->n_spans;
    ret->n_evicted = sb->n_evicted;
    ret->horizon_ns = sb->horizon_ns;
    return 0;
}
