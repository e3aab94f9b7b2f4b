/* SPDX-License-Identifier: MIT */
/*
 * timeline: /api/v1/jobs/{job}/timeline, the job's stored events as one Chrome trace document
 * (Perfetto, chrome://tracing), streamed.
 *
 * The document is produced chunk by chunk by the answer's stream (answer.h), as the client reads: a
 * head, then the events of each selected rank in turn from a store_event_iter (which holds no
 * SQLite connection between blocks and at most one block of lines), then otherData. Nothing but one
 * block and one chunk is ever in memory. The byte cap is kept exactly: before streaming, the tail
 * is rendered once with the longest numbers its counters can take, and that much room stays
 * reserved, so the document never exceeds max_bytes. An event that would not fit ends the events;
 * the rest of the selection is then only counted (cut_events) before the tail is written.
 *
 * Ranks become processes in Perfetto through the events' own pids, left as sent by default
 * (the export is verbatim): the first time a rank's events use a pid, "M" process_name
 * ("rank r") and process_sort_index (r) events for that pid are written just before. A pid an
 * earlier rank already has (the same OS pid on two hosts, "GPU 0" on every node) merges the
 * two ranks into one process: it is not named again and otherData.shared_pids counts it. With
 * ?remap_pids=1 such a pid is instead rewritten, in each event of the later rank, to the string
 * "rank <r> <pid>" and named; remapped_pids counts those.
 *
 * Ranks of several hosts carry several clocks. Where the job's clocks (clocks.c, analyse_clock.h)
 * align a host with the reference host, its ranks' events go out with "ts" less the host's
 * offset, on the reference's clock, so that ranks of different hosts line up; a time window asked
 * (start_us/end_us) is on the reference's clock too, and a step's windows are reported on it.
 * otherData.clock_offsets lists the ranks moved. ?align_clocks=0 leaves every "ts" as stored.
 * Those two rewrites, of "pid" and of "ts", are the only changes ever made to a stored line. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/log.h"
#include "answer.h"
#include "routes.h"

struct tl_rank {
    int64_t rank;
    bool has_window;       /* false: ?step= and this rank has no such step */
    bool from_live;        /* ?step=: the window came from live's step rows */
    int64_t t0_ns, t1_ns;  /* the rank's window, on its own clock */
    int64_t offset_ns;     /* its host's clock less the reference's: its events go out at ts less
                              this (0: as stored) */
};

struct tl_pid {
    int64_t rank;
    size_t len;
    bool remap;            /* an earlier rank has this pid: this rank's events get another */
    bool shared;           /* an earlier rank has this pid and remap_pids is off: not named */
    char text[WEB_TIMELINE_PID_TEXT_MAX]; /* the stored pid's JSON text, [len] */
};

#define TL_HEAD "{\"traceEvents\":["

enum tl_state {
    TL_EVENTS, /* events of ranks[cur] from it; next: TL_TAIL when the ranks are done or cut */
    TL_TAIL,   /* otherData to write; next: TL_DONE */
    TL_DONE,   /* out drained means the end of the stream */
};

struct tl_stream {
    struct web *w;                /* borrowed; outlives the server's connections */
    int64_t job_id;
    char job[RECORD_NAME_MAX + 1];
    struct tl_rank *ranks;        /* owned, [n_ranks] */
    size_t n_ranks, cur;          /* ranks[cur] is being read */
    struct store_event_iter *it;  /* owned; of ranks[cur], NULL between ranks */
    bool has_step, has_t0, has_t1;
    bool slot;                    /* holds one of w->exports_max (released by tl_free()) */
    bool remap_pids;              /* ?remap_pids=1 */
    bool align_clocks;            /* ?align_clocks=1 (the default) */
    int64_t step, t0_ns, t1_ns;   /* as asked, for otherData */
    int64_t limit, max_bytes;
    size_t reserve;               /* room kept for the tail */
    size_t produced;              /* bytes appended to out so far, over the whole document */
    struct sbuf out;              /* bytes not yet handed out: out.data[out_pos, out.len) */
    size_t out_pos;
    int64_t n_events, n_meta, n_cut, n_remapped, n_shared;
    bool truncated;
    enum tl_state state;
    struct tl_pid *pids;          /* owned; (rank, pid) pairs named so far */
    size_t n_pids, last_pid;      /* pids[last_pid]: the entry the last event used */
};

static void tl_free(struct tl_stream *t)
{
    if (!t)
        return;
    if (t->slot)
        web__export_put(t->w);
    store_event_iter_free(t->it);
    sbuf_done(&t->out);
    free(t->ranks);
    free(t->pids);
    free(t);
}

static void on_tl_free(void *cls)
{
    tl_free(cls);
}

static void tl_opt_us(struct sbuf *b, const char *key, bool has, int64_t ns)
{
    sbuf_printf(b, ",\"%s\":", key);
    if (has)
        sbuf_json_us(b, ns);
    else
        sbuf_adds(b, "null");
}

/* ns + d, held within int64 (INT64_MIN and INT64_MAX, the open window's ends, stay). */
static int64_t tl_shift(int64_t ns, int64_t d)
{
    if (ns == INT64_MIN || ns == INT64_MAX)
        return ns;
    int64_t r;
    if (__builtin_add_overflow(ns, d, &r))
        return d > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

/* The tail; worst renders every counter as the longest number it can be. */
static void tl_render_tail(struct sbuf *b, const struct tl_stream *t, bool worst)
{
    int64_t big = INT64_MIN;
    sbuf_adds(b, "],\"displayTimeUnit\":\"ms\",\"otherData\":{");
    sbuf_printf(b, "\"job_id\":%" PRId64 ",\"job\":", t->job_id);
    sbuf_json_strz(b, t->job);
    sbuf_adds(b, ",\"ranks\":[");
    for (size_t i = 0; i < t->n_ranks; i++)
        sbuf_printf(b, "%s%" PRId64, i ? "," : "", t->ranks[i].rank);
    sbuf_addc(b, ']');
    if (t->has_step)
        sbuf_printf(b, ",\"step\":%" PRId64, t->step);
    else
        sbuf_adds(b, ",\"step\":null");
    tl_opt_us(b, "start_us", t->has_t0, t->t0_ns);
    tl_opt_us(b, "end_us", t->has_t1, t->t1_ns);
    if (t->has_step) {
        sbuf_adds(b, ",\"windows\":[");
        bool first = true;
        for (size_t i = 0; i < t->n_ranks; i++) {
            if (!t->ranks[i].has_window)
                continue;
            sbuf_printf(b, "%s{\"rank\":%" PRId64 ",\"start_us\":", first ? "" : ",",
                        t->ranks[i].rank);
            sbuf_json_us(b, tl_shift(t->ranks[i].t0_ns, -t->ranks[i].offset_ns));
            sbuf_adds(b, ",\"end_us\":");
            sbuf_json_us(b, tl_shift(t->ranks[i].t1_ns, -t->ranks[i].offset_ns));
            sbuf_addc(b, '}');
            first = false;
        }
        sbuf_addc(b, ']');
    }
    sbuf_adds(b, t->align_clocks ? ",\"clocks_aligned\":true,\"clock_offsets\":["
                                 : ",\"clocks_aligned\":false,\"clock_offsets\":[");
    bool first_off = true;
    for (size_t i = 0; i < t->n_ranks; i++) {
        if (t->ranks[i].offset_ns == 0)
            continue;
        sbuf_printf(b, "%s{\"rank\":%" PRId64 ",\"offset_us\":", first_off ? "" : ",",
                    t->ranks[i].rank);
        sbuf_json_us(b, t->ranks[i].offset_ns);
        sbuf_addc(b, '}');
        first_off = false;
    }
    sbuf_addc(b, ']');
    sbuf_printf(b, ",\"events\":%" PRId64 ",\"metadata_events\":%" PRId64
                   ",\"remapped_pids\":%" PRId64 ",\"shared_pids\":%" PRId64 ",\"limit\":%" PRId64 ",\"max_bytes\":%" PRId64,
                worst ? big : t->n_events, worst ? big : t->n_meta, worst ? big : t->n_remapped, worst ? big : t->n_shared,
                t->limit, t->max_bytes);
    sbuf_printf(b, ",\"truncated\":%s,\"cut_events\":%" PRId64 "}}",
                worst || !t->truncated ? "false" : "true", worst ? big : t->n_cut);
}

/* Moves to the next rank's iterator when the current one is done. Returns 1 with t->it ready,
 * 0 when every rank is done, or a negative errno. */
static int tl_iter(struct tl_stream *t)
{
    while (!t->it) {
        if (t->cur >= t->n_ranks)
            return 0;
        const struct tl_rank *rk = &t->ranks[t->cur];
        if (!rk->has_window) {
            t->cur++;
            continue;
        }
        int r = store_event_iter_new(t->w->store, t->job_id, rk->rank, rk->t0_ns, rk->t1_ns,
                                     &t->it);
        if (r < 0)
            return r;
    }
    return 1;
}

/* The next event of the selection into *ev. Returns 1, 0 at the end, or a negative errno. */
static int tl_next(struct tl_stream *t, struct store_event *ev)
{
    for (;;) {
        int r = tl_iter(t);
        if (r <= 0)
            return r;
        r = store_event_iter_next(t->it, ev);
        if (r != 0)
            return r;
        store_event_iter_free(t->it);
        t->it = NULL;
        t->cur++;
    }
}

#define TL_PID_OUT_MAX (WEB_TIMELINE_PID_TEXT_MAX + 32) /* a pid as written, remapped or not */

/* The (rank, pid) entry of ev: an existing one, or a new one filled into *fresh (stored by the
 * caller once the event is written). NULL when ev has no pid, a pid too long, or the table is
 * full: such events go out as they are, unnamed. */
static const struct tl_pid *tl_pid_of(struct tl_stream *t, const struct store_event *ev,
                                      struct tl_pid *fresh, bool *ret_new)
{
    *ret_new = false;
    if (!ev->pid || ev->pid_len > WEB_TIMELINE_PID_TEXT_MAX)
        return NULL;
    int64_t rank = t->ranks[t->cur].rank;
    /* Events of a rank mostly share one pid: try the last entry used first. */
    if (t->last_pid < t->n_pids) {
        const struct tl_pid *p = &t->pids[t->last_pid];
        if (p->rank == rank && p->len == ev->pid_len && memcmp(p->text, ev->pid, p->len) == 0)
            return p;
    }
    bool taken = false;
    for (size_t i = 0; i < t->n_pids; i++) {
        const struct tl_pid *p = &t->pids[i];
        if (p->len == ev->pid_len && memcmp(p->text, ev->pid, p->len) == 0) {
            if (p->rank == rank) {
                t->last_pid = i;
                return p;
            }
            taken = taken || !p->remap;
        }
    }
    if (t->n_pids >= WEB_TIMELINE_PIDS_MAX)
        return NULL;
    fresh->rank = rank;
    fresh->len = ev->pid_len;
    fresh->remap = taken && t->remap_pids;
    fresh->shared = taken && !t->remap_pids;
    memcpy(fresh->text, ev->pid, ev->pid_len);
    *ret_new = true;
    return fresh;
}

/* The pid p's events go out with: the stored text, or for a pid an earlier rank already has,
 * the string "rank <r> <pid>" (a string's own text without its quotes). Returns the length. */
static size_t tl_pid_text(const struct tl_pid *p, char out[TL_PID_OUT_MAX])
{
    if (!p->remap) {
        memcpy(out, p->text, p->len);
        return p->len;
    }
    const char *v = p->text;
    size_t n = p->len;
    if (n >= 2 && v[0] == '"') {
        v++;
        n -= 2;
    }
    int k = snprintf(out, TL_PID_OUT_MAX, "\"rank %" PRId64 " ", p->rank);
    memcpy(out + k, v, n);
    out[(size_t)k + n] = '"';
    return (size_t)k + n + 1;
}

/* The naming events of a new (rank, pid) into m, each with a leading comma. */
static void tl_name_pid(struct sbuf *m, const char *pid, size_t pid_len, int64_t rank)
{
    sbuf_adds(m, ",{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":");
    sbuf_add(m, pid, pid_len);
    sbuf_printf(m, ",\"tid\":0,\"args\":{\"name\":\"rank %" PRId64 "\"}}", rank);
    sbuf_adds(m, ",{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":");
    sbuf_add(m, pid, pid_len);
    sbuf_printf(m, ",\"tid\":0,\"args\":{\"sort_index\":%" PRId64 "}}", rank);
}

/* A value of a stored line and what replaces it. */
struct tl_cut {
    const char *at;
    size_t len;
    const char *with;
    size_t with_len;
};

/* Appends ev's line to out with its "pid" value replaced by pid[0, pid_len) when pid is not NULL,
 * and its "ts" value by ts[0, ts_len) when ts is not NULL (both inside the line, not
 * overlapping: two members' values). */
static void tl_write_line(struct sbuf *out, const struct store_event *ev, const char *pid,
                          size_t pid_len, const char *ts, size_t ts_len)
{
    struct tl_cut cut[2];
    size_t n = 0;
    if (pid)
        cut[n++] = (struct tl_cut){ev->pid, ev->pid_len, pid, pid_len};
    if (ts)
        cut[n++] = (struct tl_cut){ev->ts, ev->ts_len, ts, ts_len};
    if (n == 2 && cut[1].at < cut[0].at) {
        struct tl_cut x = cut[0];
        cut[0] = cut[1];
        cut[1] = x;
    }
    const char *from = ev->line;
    for (size_t i = 0; i < n; i++) {
        sbuf_add(out, from, (size_t)(cut[i].at - from));
        sbuf_add(out, cut[i].with, cut[i].with_len);
        from = cut[i].at + cut[i].len;
    }
    sbuf_add(out, from, ev->len - (size_t)(from - ev->line));
}

/* Appends to t->out until it holds at least a chunk or the state moves on. Returns 0 or a
 * negative errno (the stream then ends with an error: the status line has long gone out). */
static int tl_produce(struct tl_stream *t)
{
    if (t->state == TL_TAIL) {
        tl_render_tail(&t->out, t, false);
        t->state = TL_DONE;
        return t->out.error;
    }
    struct sbuf m, ts;
    sbuf_init(&m, 4096);
    sbuf_init(&ts, 64);
    int r = 0;
    while (t->state == TL_EVENTS && t->out.len < WEB_CHUNK) {
        struct store_event ev;
        r = tl_next(t, &ev);
        if (r < 0)
            break;
        if (r == 0) {
            t->state = TL_TAIL;
            break;
        }
        if (t->truncated) {
            t->n_cut++; /* only counted from here on */
            continue;
        }
        struct tl_pid fresh;
        bool is_new = false;
        const struct tl_pid *p = tl_pid_of(t, &ev, &fresh, &is_new);
        char pid[TL_PID_OUT_MAX];
        size_t pid_len = p ? tl_pid_text(p, pid) : 0;
        sbuf_reset(&m);
        if (is_new && !fresh.shared)
            tl_name_pid(&m, pid, pid_len, fresh.rank);
        /* An aligned rank's "ts", on the reference's clock. */
        int64_t offset = t->ranks[t->cur].offset_ns;
        bool shift = offset != 0 && ev.ts;
        sbuf_reset(&ts);
        if (shift)
            sbuf_json_us(&ts, tl_shift(ev.ts_ns, -offset));
        size_t line_len = ev.len;
        if (p && p->remap)
            line_len = line_len - ev.pid_len + pid_len;
        if (shift)
            line_len = line_len - ev.ts_len + ts.len;
        size_t need = m.len + line_len + 1;
        if (t->n_events >= t->limit || t->produced + need + t->reserve > (size_t)t->max_bytes) {
            /* Cut here: count the rest of the selection, then write the tail. */
            t->truncated = true;
            t->n_cut++;
            continue;
        }
        if (is_new) {
            t->last_pid = t->n_pids;
            t->pids[t->n_pids++] = fresh;
            t->n_remapped += fresh.remap;
            t->n_shared += fresh.shared;
            t->n_meta += fresh.shared ? 0 : 2;
        }
        /* The first element of traceEvents has no comma before it. */
        bool first = t->produced == sizeof TL_HEAD - 1;
        if (m.len)
            sbuf_add(&t->out, m.data + first, m.len - first);
        if (!first || m.len)
            sbuf_addc(&t->out, ',');
        tl_write_line(&t->out, &ev, p && p->remap ? pid : NULL, pid_len,
                      shift ? ts.data : NULL, ts.len);
        t->produced += need - first;
        t->n_events++;
        if (t->out.error) {
            r = t->out.error;
            break;
        }
    }
    sbuf_done(&m);
    sbuf_done(&ts);
    return r;
}

/* The next chunk for web__chunks_read(): 1, 0 once the document is complete, or an error (the
 * client sees a cut). */
static int tl_chunk(void *ctx)
{
    struct tl_stream *t = ctx;
    if (t->state == TL_DONE)
        return 0;
    int r = tl_produce(t);
    if (r < 0) {
        log_warn("timeline export of job %" PRId64 " cut by an error: %s", t->job_id,
                 strerror(-r));
        return r;
    }
    return 1;
}

static ssize_t on_tl_read(void *cls, char *buf, size_t max)
{
    struct tl_stream *t = cls;
    return web__chunks_read(&t->out, &t->out_pos, buf, max, tl_chunk, t);
}

static int tl_bad(struct web_answer *a, const char *msg)
{
    return web__error(a, WEB_HTTP_BAD_REQUEST, "bad_request", msg);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* ?ranks=0,2,5 into a sorted set. Returns the count (0: absent) or -1 (answered). */
static int tl_param_ranks(const struct web_req *q, struct web_answer *a, int64_t **ret)
{
    size_t size = WEB_TIMELINE_RANKS_MAX * 12;
    char *buf = malloc(size);
    int64_t *v = malloc(WEB_TIMELINE_RANKS_MAX * sizeof *v);
    size_t len, n = 0;
    int r = -1;
    if (!buf || !v) {
        web__error(a, WEB_HTTP_INTERNAL_SERVER_ERROR, "internal", NULL);
        goto out;
    }
    int got = web__param_str(q, a, "ranks", buf, size, &len);
    if (got <= 0) {
        r = got < 0 ? -1 : 0;
        goto out;
    }
    for (size_t i = 0; i <= len;) {
        const char *comma = memchr(buf + i, ',', len - i);
        size_t e = comma ? (size_t)(comma - buf) : len;
        if (n >= WEB_TIMELINE_RANKS_MAX) {
            tl_bad(a, "ranks: too many ranks");
            goto out;
        }
        if (web__parse_i64(buf + i, e - i, 0, INT32_MAX, &v[n]) < 0) {
            tl_bad(a, "ranks: not a comma-separated list of ranks");
            goto out;
        }
        n++;
        i = e + 1;
        if (!comma)
            break;
    }
    qsort(v, n, sizeof *v, cmp_i64);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (u == 0 || v[u - 1] != v[i])
            v[u++] = v[i];
    *ret = v;
    v = NULL;
    r = (int)u;
out:
    free(buf);
    free(v);
    return r;
}

struct tl_step_scan {
    struct tl_rank *ranks;
    size_t n_ranks;
    int64_t step;
};

static struct tl_rank *tl_find_rank(struct tl_rank *ranks, size_t n, int64_t rank)
{
    for (size_t i = 0; i < n; i++)
        if (ranks[i].rank == rank)
            return &ranks[i];
    return NULL;
}

static void tl_widen(struct tl_rank *rk, int64_t t0, int64_t t1)
{
    if (!rk->has_window || t0 < rk->t0_ns)
        rk->t0_ns = t0;
    if (!rk->has_window || t1 > rk->t1_ns)
        rk->t1_ns = t1;
    rk->has_window = true;
}

static int on_tl_step(void *ud, int64_t rank, const struct record *rec)
{
    struct tl_step_scan *s = ud;
    if (rec->step != s->step)
        return 0;
    struct tl_rank *rk = tl_find_rank(s->ranks, s->n_ranks, rank);
    /* A rank live already answered for keeps live's window. */
    if (rk && !rk->from_live) {
        int64_t end = rec->dur_ns > 0 && rec->ts_ns > INT64_MAX - rec->dur_ns
                          ? INT64_MAX
                          : rec->ts_ns + rec->dur_ns;
        tl_widen(rk, rec->ts_ns, end);
    }
    return 0;
}

/* Sets each rank's window of step: from live's step rows (the rows /steps gives), else from the
 * stored step records. Returns 0, or a negative errno from the store. */
static int tl_step_windows(struct web *w, int64_t job_id, struct tl_rank *ranks, size_t n,
                           int64_t step)
{
    const struct live_snapshot *snap = NULL;
    bool need_store = false;
    if (!w->live || live_snapshot_get(w->live, job_id, &snap) < 0)
        snap = NULL;
    for (size_t i = 0; i < n; i++) {
        int64_t b, e;
        if (snap && live_query_step_window(snap, ranks[i].rank, step, &b, &e))
            tl_widen(&ranks[i], b, e);
        ranks[i].from_live = ranks[i].has_window;
        need_store = need_store || !ranks[i].has_window;
    }
    live_snapshot_put(snap);
    if (!need_store)
        return 0;
    /* Ranks whose step live does not know (none published yet, or dropped past
       LIVE_STEPS_MAX) get it from the stored step records. */
    struct tl_step_scan s = {.ranks = ranks, .n_ranks = n, .step = step};
    int64_t r = store_query_steps(w->store, job_id, on_tl_step, &s);
    return r < 0 ? (int)r : 0;
}

int web__route_timeline(struct web *w, const struct web_req *q, const struct web_route *rt,
                        struct web_answer *a)
{
    /* Parameters first: a bad request is bad whether or not a store is attached. */
    int64_t rank, t0, t1, limit, step, max_bytes, remap, align;
    int64_t bytes_max = w->max_response_bytes > (size_t)INT64_MAX ? INT64_MAX
                                                                    : (int64_t)w->max_response_bytes;
    int64_t bytes_def = bytes_max < WEB_TIMELINE_BYTES_DEFAULT ? bytes_max
                                                               : WEB_TIMELINE_BYTES_DEFAULT;
    if (web__param_i64(q, a, "rank", -1, INT32_MAX, -1, &rank) < 0 ||
        web__param_us(q, a, "start_us", INT64_MIN, INT64_MAX, INT64_MIN, &t0) < 0 ||
        web__param_us(q, a, "end_us", INT64_MIN, INT64_MAX, INT64_MAX, &t1) < 0 ||
        web__param_i64(q, a, "limit", 1, WEB_TIMELINE_LIMIT_MAX, WEB_TIMELINE_LIMIT_MAX,
                       &limit) < 0 ||
        web__param_i64(q, a, "step", 0, INT64_MAX, -1, &step) < 0 ||
        web__param_i64(q, a, "max_bytes", WEB_TIMELINE_BYTES_MIN, bytes_max, bytes_def,
                       &max_bytes) < 0 ||
        web__param_i64(q, a, "remap_pids", 0, 1, 0, &remap) < 0 ||
        web__param_i64(q, a, "align_clocks", 0, 1, 1, &align) < 0)
        return 0;
    if (t1 < t0)
        return tl_bad(a, "end_us: before start_us");
    bool has_t0 = web__param_has(q, "start_us"), has_t1 = web__param_has(q, "end_us");
    if (step >= 0 && (has_t0 || has_t1))
        return tl_bad(a, "step: give step or start_us/end_us, not both");
    int64_t *want = NULL;
    int n_want = tl_param_ranks(q, a, &want);
    if (n_want < 0)
        return 0;
    if (n_want > 0 && rank >= 0) {
        free(want);
        return tl_bad(a, "rank: give rank or ranks, not both");
    }
    if (rank >= 0) {
        free(want);
        if (!(want = malloc(sizeof *want)))
            return web__error(a, WEB_HTTP_INTERNAL_SERVER_ERROR, "internal", NULL);
        want[0] = rank;
        n_want = 1;
    }
    struct tl_stream *t = NULL;
    struct store_rank *have = NULL;
    size_t n_have = 0;
    struct web_clocks clocks = {0};
    if (!w->store) {
        web__no_store(a);
        goto out;
    }
    struct store_job job;
    if (web__find_live_job(w, rt, &job, a) < 0)
        goto out;
    int r = store_query_ranks(w->store, job.id, &have, &n_have);
    if (r < 0) {
        web__store_error(a, r, "store_query_ranks");
        goto out;
    }
    /* Each export in flight holds up to a store block (1 MiB) and a chunk until its reader takes
     * them, however slowly it reads: past exports_max of them the next one is refused. */
    if (!web__export_take(w, a, "timeline exports"))
        goto out;
    t = calloc(1, sizeof *t);
    if (!t)
        web__export_put(w);
    else {
        t->w = w;
        t->slot = true;
    }
    size_t n = n_want > 0 ? (size_t)n_want : n_have;
    if (!t || !(t->ranks = calloc(n ? n : 1, sizeof *t->ranks)) ||
        !(t->pids = calloc(WEB_TIMELINE_PIDS_MAX, sizeof *t->pids))) {
        web__error(a, WEB_HTTP_INTERNAL_SERVER_ERROR, "internal", NULL);
        goto out;
    }
    if (align) {
        r = web__clocks(w, job.id, have, n_have, &clocks);
        if (r < 0) {
            web__store_error(a, r, "the hosts' clocks");
            goto out;
        }
    }
    for (size_t i = 0; i < n; i++) {
        int64_t rk = n_want > 0 ? want[i] : have[i].rank;
        bool found = false;
        int64_t offset = 0;
        for (size_t k = 0; k < n_have && !found; k++)
            if ((found = have[k].rank == rk))
                offset = web__clocks_offset(&clocks, k);
        if (!found) {
            char msg[96];
            snprintf(msg, sizeof msg, "ranks: job has no rank %" PRId64, rk);
            web__error(a, WEB_HTTP_NOT_FOUND, "not_found", msg);
            goto out;
        }
        /* A window asked is on the reference's clock: on the rank's own, it is offset later. */
        t->ranks[i] = (struct tl_rank){.rank = rk, .has_window = step < 0,
                                       .t0_ns = tl_shift(t0, offset),
                                       .t1_ns = tl_shift(t1, offset), .offset_ns = offset};
    }
    t->n_ranks = n;
    if (step >= 0) {
        r = tl_step_windows(w, job.id, t->ranks, n, step);
        if (r < 0) {
            web__store_error(a, r, "store_query_steps");
            goto out;
        }
        bool any = false;
        for (size_t i = 0; i < n; i++)
            any = any || t->ranks[i].has_window;
        if (!any) {
            char msg[96];
            snprintf(msg, sizeof msg, "step: no step %" PRId64 " in the ranks asked", step);
            web__error(a, WEB_HTTP_NOT_FOUND, "not_found", msg);
            goto out;
        }
    }
    t->w = w;
    t->job_id = job.id;
    memcpy(t->job, job.name, sizeof t->job);
    t->has_step = step >= 0;
    t->remap_pids = remap != 0;
    t->align_clocks = align != 0;
    t->step = step;
    t->has_t0 = has_t0;
    t->has_t1 = has_t1;
    t->t0_ns = t0;
    t->t1_ns = t1;
    t->limit = limit;
    t->max_bytes = max_bytes;
    t->state = TL_EVENTS;
    /* Room for the tail at its longest. out never holds more than the document's own cap. */
    sbuf_init(&t->out, (size_t)max_bytes);
    tl_render_tail(&t->out, t, true);
    t->reserve = t->out.len;
    bool tail_ok = !t->out.error;
    sbuf_reset(&t->out);
    t->produced = sizeof TL_HEAD - 1;
    if (!tail_ok || t->produced + t->reserve > (size_t)max_bytes) {
        /* Not even an empty export fits: the caller's max_bytes, or else the daemon's cap. */
        if (!web__param_has(q, "max_bytes")) {
            STATS_ADD(w->stats, http_responses_too_large, 1);
            web__error(a, WEB_HTTP_CONTENT_TOO_LARGE, "response_too_large",
                                  "the export's metadata alone would exceed max_response_bytes");
            goto out;
        }
        char msg[128];
        snprintf(msg, sizeof msg, "max_bytes: too small for this export's metadata (needs %zu)",
                 t->produced + t->reserve);
        tl_bad(a, msg);
        goto out;
    }
    sbuf_adds(&t->out, TL_HEAD);
    char disposition[64];
    snprintf(disposition, sizeof disposition, "attachment; filename=\"%" PRId64 ".trace.json\"",
             job.id);
    web__answer_done(a);
    a->status = WEB_HTTP_OK;
    a->type = "application/json";
    a->cache_control = "no-store";
    web__answer_header(a, "Content-Disposition", "%s", disposition);
    /* The answer owns t now; on_tl_free() frees it, sent, aborted or never sent. */
    a->body = WEB_BODY_STREAM;
    a->stream = (struct web_stream){.read = on_tl_read, .free = on_tl_free, .ctx = t,
                                    .block = WEB_CHUNK};
    t = NULL;
out:
    web__clocks_done(&clocks);
    tl_free(t);
    free(have);
    free(want);
    return 0;
}

