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
 * max_spans spans per rank are kept (LIVE_BD_SPANS_MAX; an imported job's ranks more, so that a
 * whole trace is analysed within live's memory budget): past that the oldest chunk goes, its latest start
 * becomes the horizon, and steps starting before the horizon are left out of the breakdown (their
 * spans may be gone), so a number shown is never computed from a partial step.
 *
 * Computing: a breakdown over the full window takes a few hundred milliseconds, and a job that
 * is receiving data gets a new snapshot every 100 ms. So the result is not tied to a snapshot:
 * each rank has one cache (live_bd_cache), shared by the rank and all its snapshots, holding the
 * latest result, refcounted, and whether some thread is computing one. The computation runs
 * outside the cache's lock; a reader that needs this very snapshot's result waits for a
 * computation under way and then computes if it still has none; a reader that accepts a recent
 * result (the helper) takes the latest one and computes only when it is old and nobody else is.
 */
#include "live_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/clock.h"

void live__bd_chunk_put(struct live_bd_chunk *ch)
{
    if (ch && atomic_fetch_sub_explicit(&ch->refs, 1, memory_order_acq_rel) == 1)
        free(ch);
}

/* A chunk of cap spans holding a copy of from's (NULL: none). */
static struct live_bd_chunk *chunk_new(size_t cap, const struct live_bd_chunk *from)
{
    struct live_bd_chunk *ch = malloc(LIVE_BD_CHUNK_BYTES(cap));
    if (!ch)
        return NULL;
    atomic_init(&ch->refs, 1);
    ch->cap = cap;
    ch->n = from ? from->n : 0;
    if (from)
        memcpy(ch->v, from->v, from->n * sizeof *ch->v);
    return ch;
}

int live__bd_add(struct live_bd *bd, const struct live_bd_span *sp)
{
    struct live_bd_chunk *last = bd->n_chunks ? bd->chunks[bd->n_chunks - 1] : NULL;
    if (last && last->n == last->cap && last->cap < LIVE_BD_CHUNK) {
        /* Outgrown: a copy four times larger replaces it; the snapshots that show the old one
         * keep their reference to it (they read its first n, which the copy has too). */
        size_t cap = last->cap * 4 < LIVE_BD_CHUNK ? last->cap * 4 : LIVE_BD_CHUNK;
        struct live_bd_chunk *ch = chunk_new(cap, last);
        if (!ch)
            return -ENOMEM;
        bd->chunks[bd->n_chunks - 1] = ch;
        live__bd_chunk_put(last);
        last = ch;
    }
    if (!last || last->n == LIVE_BD_CHUNK) {
        if (bd->n_chunks * LIVE_BD_CHUNK >= (bd->max_spans ? bd->max_spans : LIVE_BD_SPANS_MAX)) {
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
        /* The first chunk starts small; the later ones follow a full one, so are full-sized. */
        last = chunk_new(bd->n_chunks == 0 ? LIVE_BD_CHUNK_FIRST : LIVE_BD_CHUNK, NULL);
        if (!last)
            return -ENOMEM;
        bd->chunks[bd->n_chunks++] = last;
    }
    last->v[last->n++] = *sp;
    bd->n_spans++;
    return 0;
}

void live__bd_result_put(struct live_bd_result *res)
{
    if (res && atomic_fetch_sub_explicit(&res->refs, 1, memory_order_acq_rel) == 1) {
        analyse_breakdown_free(res->bd);
        free(res);
    }
}

void live__bd_cache_put(struct live_bd_cache *cache)
{
    if (cache && atomic_fetch_sub_explicit(&cache->refs, 1, memory_order_acq_rel) == 1) {
        live__bd_result_put(cache->latest);
        pthread_cond_destroy(&cache->done);
        pthread_mutex_destroy(&cache->lock);
        free(cache);
    }
}

void live__bd_done(struct live_bd *bd)
{
    for (size_t i = 0; i < bd->n_chunks; i++)
        live__bd_chunk_put(bd->chunks[i]);
    free(bd->chunks);
    live__bd_cache_put(bd->cache);
    free(bd->streams);
    memset(bd, 0, sizeof *bd);
}

uint8_t live__bd_stream(struct live_bd *bd, int64_t stream)
{
    for (size_t i = 0; i < bd->n_streams; i++) /* a few; the first is the busiest, mostly */
        if (bd->streams[i] == stream)
            return (uint8_t)(i + 1);
    if (bd->n_streams >= LIVE_STREAMS_MAX) {
        bd->n_stream_folded++;
        return LIVE_STREAM_FOLDED;
    }
    if (util_grow((void **)&bd->streams, &bd->cap_streams, bd->n_streams + 1,
                  sizeof *bd->streams) < 0)
        return 0;
    bd->streams[bd->n_streams++] = stream;
    return (uint8_t)bd->n_streams;
}

int live__bd_snap(struct live_bd *bd, struct live_snap_bd *ret)
{
    memset(ret, 0, sizeof *ret);
    if (!bd->cache) {
        struct live_bd_cache *cache = calloc(1, sizeof *cache);
        if (!cache)
            return -ENOMEM;
        atomic_init(&cache->refs, 1);
        pthread_mutex_init(&cache->lock, NULL);
        pthread_cond_init(&cache->done, NULL);
        bd->cache = cache;
    }
    atomic_fetch_add_explicit(&bd->cache->refs, 1, memory_order_relaxed);
    ret->cache = bd->cache;
    ret->horizon_ns = bd->horizon_ns;
    ret->n_spans = bd->n_spans;
    ret->n_evicted = bd->n_evicted;
    ret->max_spans = bd->max_spans ? bd->max_spans : LIVE_BD_SPANS_MAX;
    ret->n_stream_folded = bd->n_stream_folded;
    if (bd->n_streams > 0) {
        ret->streams = malloc(bd->n_streams * sizeof *ret->streams);
        if (!ret->streams)
            return -ENOMEM;
        memcpy(ret->streams, bd->streams, bd->n_streams * sizeof *ret->streams);
        ret->n_streams = bd->n_streams;
    }
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
    free(sb->streams);
    live__bd_cache_put(sb->cache);
    memset(sb, 0, sizeof *sb);
}

int live__bd_spans(const struct live_snapshot *s, const struct live_snap_rank *sr,
                   struct live_bd_spans *ret)
{
    const struct live_snap_bd *sb = &sr->bd;
    memset(ret, 0, sizeof *ret);
    size_t n = 0;
    for (size_t c = 0; c < sb->n_chunks; c++)
        n += c + 1 == sb->n_chunks ? sb->last_n : LIVE_BD_CHUNK;
    size_t n_folded = 0; /* step spans whose name was folded past LIVE_OPS_MAX */
    for (size_t c = 0; c < sb->n_chunks; c++) {
        size_t m = c + 1 == sb->n_chunks ? sb->last_n : LIVE_BD_CHUNK;
        for (size_t i = 0; i < m; i++)
            n_folded += sb->chunks[c]->v[i].role == ANALYSE_ROLE_STEP &&
                        sb->chunks[c]->v[i].op >= s->n_ops;
    }
    struct analyse_span *a = malloc((n ? n : 1) * sizeof *a);
    char(*names)[24] = malloc((n_folded ? n_folded : 1) * sizeof *names);
    if (!a || !names) {
        free(a);
        free(names);
        return -ENOMEM;
    }
    size_t k = 0, f = 0;
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
            } else if (sp->role == ANALYSE_ROLE_STEP && sp->correlation >= 0) {
                /* The number kept at feed time, written as analyse reads it (after '#'). */
                int len = snprintf(names[f], sizeof names[f], "#%lld", (long long)sp->correlation);
                o->name = names[f++];
                o->name_len = (size_t)len;
            } else {
                o->name = LIVE_OTHER_NAME;
                o->name_len = sizeof LIVE_OTHER_NAME - 1;
            }
            o->pid = sp->device;
            o->tid = sp->stream >= 1 && sp->stream <= sb->n_streams ? sb->streams[sp->stream - 1] : -1;
            o->correlation = sp->role == ANALYSE_ROLE_STEP ? -1 : sp->correlation;
            o->external_id = sp->external_id;
            o->role = (enum analyse_role)sp->role;
        }
    }
    ret->v = a;
    ret->n = k;
    ret->names = names;
    int r = live_query_rank_steps(s, sr->rank, sb->horizon_ns, &ret->v, &ret->n, &ret->steps);
    if (r < 0)
        live__bd_spans_done(ret);
    return r;
}

void live__bd_spans_done(struct live_bd_spans *sp)
{
    free(sp->v);
    free(sp->names);
    live_record_steps_done(&sp->steps);
    memset(sp, 0, sizeof *sp);
}

int live_query_rank_steps(const struct live_snapshot *snap, int64_t rank, int64_t after_ns,
                          struct analyse_span **v, size_t *n, struct live_record_steps *rs)
{
    memset(rs, 0, sizeof *rs);
    for (size_t i = 0; i < *n; i++)
        if ((*v)[i].role == ANALYSE_ROLE_STEP)
            return 0;
    const struct live_snap_rank *sr = NULL;
    for (size_t i = 0; i < snap->n_ranks && !sr; i++)
        if (rank < 0 || snap->ranks[i].rank == rank)
            sr = &snap->ranks[i];
    size_t m = 0;
    for (size_t i = 0; sr && i < sr->n_steps; i++)
        m += sr->steps[i].spans > 0 && sr->steps[i].begin_ns > after_ns;
    if (m == 0)
        return 0;
    rs->names = malloc(m * sizeof *rs->names);
    struct analyse_span *a = rs->names ? realloc(*v, (*n + m) * sizeof *a) : NULL;
    if (!a) {
        live_record_steps_done(rs);
        return -ENOMEM;
    }
    *v = a;
    for (size_t i = 0; i < sr->n_steps; i++) {
        const struct live_snap_step *st = &sr->steps[i];
        if (st->spans <= 0 || st->begin_ns <= after_ns)
            continue;
        size_t k = rs->n++;
        int len = snprintf(rs->names[k], sizeof rs->names[k], "ProfilerStep#%lld",
                           (long long)st->step);
        a[*n + k] = (struct analyse_span){
            .ts_ns = st->begin_ns, .dur_ns = st->end_ns - st->begin_ns, .name = rs->names[k],
            .name_len = (size_t)len, .pid = -1, .tid = -1, .correlation = -1,
            .external_id = -1, .role = ANALYSE_ROLE_STEP};
    }
    *n += rs->n;
    return 0;
}

void live_record_steps_done(struct live_record_steps *rs)
{
    free(rs->names);
    memset(rs, 0, sizeof *rs);
}

/* The breakdown of one rank's spans, as analyse wants them. */
static int compute(const struct live_snapshot *s, const struct live_snap_rank *sr,
                   struct analyse_breakdown **ret_bd)
{
    struct live_bd_spans sp;
    int r = live__bd_spans(s, sr, &sp);
    if (r == 0)
        r = analyse_breakdown_compute(sp.v, sp.n, ret_bd);
    live__bd_spans_done(&sp);
    return r;
}

/* A new result (one reference) computed from sb, or NULL with *ret_err set. */
static struct live_bd_result *result_new(const struct live_snapshot *s,
                                         const struct live_snap_rank *sr, int *ret_err)
{
    const struct live_snap_bd *sb = &sr->bd;
    struct live_bd_result *res = calloc(1, sizeof *res);
    if (!res) {
        *ret_err = -ENOMEM;
        return NULL;
    }
    atomic_init(&res->refs, 1);
    res->n_spans = sb->n_spans;
    res->n_evicted = sb->n_evicted;
    res->horizon_ns = sb->horizon_ns;
    int r = compute(s, sr, &res->bd);
    if (r < 0) {
        free(res);
        *ret_err = r;
        return NULL;
    }
    res->computed_ns = clock_mono_ns();
    return res;
}

/* Whether a reader with these needs can take res. */
static bool usable(const struct live_bd_result *res, const struct live_snap_bd *sb,
                   int64_t max_age_ns, bool someone_computing)
{
    if (!res)
        return false;
    if (res->n_spans == sb->n_spans)
        return true;
    if (max_age_ns <= 0)
        return false;
    return someone_computing || clock_mono_ns() - res->computed_ns <= max_age_ns;
}

int live_query_breakdown(const struct live_snapshot *snap, int64_t rank, int64_t max_age_ns,
                         struct live_breakdown_view *ret)
{
    const struct live_snap_rank *sr = NULL;
    for (size_t i = 0; i < snap->n_ranks && !sr; i++)
        if (rank < 0 || snap->ranks[i].rank == rank)
            sr = &snap->ranks[i];
    if (!sr)
        return -ENOENT;
    const struct live_snap_bd *sb = &sr->bd;
    struct live_bd_cache *cache = sb->cache;
    struct live_bd_result *res = NULL;
    int r = 0;
    pthread_mutex_lock(&cache->lock);
    for (;;) {
        if (usable(cache->latest, sb, max_age_ns, cache->computing)) {
            res = cache->latest;
            atomic_fetch_add_explicit(&res->refs, 1, memory_order_relaxed);
            break;
        }
        if (cache->computing) {
            pthread_cond_wait(&cache->done, &cache->lock);
            continue;
        }
        /* Compute outside the lock, so readers content with the latest result never wait. */
        cache->computing = true;
        pthread_mutex_unlock(&cache->lock);
        res = result_new(snap, sr, &r);
        pthread_mutex_lock(&cache->lock);
        cache->computing = false;
        pthread_cond_broadcast(&cache->done);
        if (res && (!cache->latest || cache->latest->n_spans <= res->n_spans)) {
            live__bd_result_put(cache->latest);
            atomic_fetch_add_explicit(&res->refs, 1, memory_order_relaxed);
            cache->latest = res;
        }
        break;
    }
    pthread_mutex_unlock(&cache->lock);
    if (!res)
        return r;
    ret->rank = sr->rank;
    ret->bd = res->bd;
    ret->n_spans = res->n_spans;
    ret->n_evicted = res->n_evicted;
    ret->horizon_ns = res->horizon_ns;
    ret->max_spans = sb->max_spans;
    ret->stale = res->n_spans != sb->n_spans;
    ret->steps_listed = (int64_t)sr->n_steps;
    ret->steps_cut = 0;
    for (size_t i = 0; i < sr->n_steps && res->horizon_ns != INT64_MIN; i++)
        ret->steps_cut += sr->steps[i].begin_ns <= res->horizon_ns;
    ret->res = res;
    return 0;
}

void live_breakdown_view_done(struct live_breakdown_view *v)
{
    live__bd_result_put(v->res);
    v->res = NULL;
    v->bd = NULL;
}
