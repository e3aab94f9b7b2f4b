/* SPDX-License-Identifier: MIT */
/*
 * The ingest socket (see ingest.h): a libuv pipe server whose connections each own an lbuf that
 * reads land in directly, a batch of decoded records, an arena for their unescaped strings and a
 * pair of reply buffers. This file is the loop side of the module; decode.c turns one line into
 * one record and knows nothing about connections.
 *
 * One read is one unit of work: every whole line in it is numbered, decoded and either batched or
 * answered, then the batch goes to the sink once (earlier only if the batch or the arena fills),
 * so the lbuf and arena pointers in the records stay valid for the whole sink call. Replies never
 * block the loop: at most one uv_write is in flight per connection while the next replies gather
 * behind it, error lines beyond a cap are dropped (their counters stay exact) and an ack is a
 * single pending value written with the next write, so it is never lost and never queued twice.
 * Handles are freed only in their close callbacks, and struct ingest itself when the last one
 * closes.
 */
#include "ingest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <uv.h>

#include "../../lib/clock.h"
#include "../../lib/lbuf.h"
#include "../../lib/log.h"
#include "../../lib/sbuf.h"
#include "../core/decode.h"

#define INGEST_OUT_MAX (1u << 20)   /* bytes of replies gathered for one client; errors past it drop */
#define INGEST_BATCH_MAX 4096       /* records per sink call */
#define INGEST_BATCH_MIN 64         /* first allocation of a connection's batch */
#define INGEST_ARENA_MIN 16384      /* first allocation of a connection's arena */
#define INGEST_ERRORS_PER_S 100     /* error lines written per connection per second */
#define INGEST_BACKLOG 1024       /* pending connects (the kernel caps it at somaxconn): a job
                                     * whose ranks all connect at once must not see EAGAIN */
#define NS_PER_S 1000000000LL

enum conn_state {
    CONN_HELLO,   /* waits for the first non-blank line; next CONN_RECORDS, or CONN_CLOSING */
    CONN_RECORDS, /* numbers and decodes lines; next CONN_DRAINING (bye) or CONN_CLOSING (EOF,
                   * error, shutdown) */
    CONN_DRAINING, /* after a bye: takes no input, keeps its stream mapped until the ack that
                    * covers the bye is queued; next CONN_CLOSING */
    CONN_CLOSING, /* takes no input; the handle closes once the queued replies are written */
};

struct out_buf {
    char *data; /* owned */
    size_t len;
    size_t cap; /* bytes allocated */
};

struct ingest_conn {
    uv_pipe_t pipe;                 /* pipe.data == this */
    uv_write_t wreq;                /* in flight iff writing */
    struct ingest *in;
    struct ingest_conn *prev, *next; /* in->conns */
    struct ingest_conn *hprev, *hnext; /* in->hello_head: counted, no hello yet, oldest first */
    bool hello_waiting;             /* in that list */
    int64_t hello_since_ns;         /* accepted (or reading resumed) at; the hello is due by
                                     * hello_since_ns + hello_timeout_ms */
    enum conn_state state;
    bool counted;                   /* in n_conns and connections_open */
    bool reading;                   /* uv_read_start() is in effect */
    bool writing;                   /* wire is being written */
    bool handle_closing;            /* uv_close() was called: no more libuv calls */
    bool session_open;              /* a welcome was sent and on_close is still owed */
    bool out_dead;                  /* a write failed: replies are dropped, reading goes on */
    struct lbuf lines;
    int64_t session_id;
    int64_t stream_id;
    uint64_t next_seq;              /* the number the next non-blank line takes */
    uint64_t welcome_seq;           /* lines numbered below it are duplicates */
    uint64_t sunk_seq;              /* the last next_seq the sink took */
    struct record *batch;           /* records of the current read, [0, n_batch) */
    uint64_t *batch_line;           /* their line numbers, for "unavailable" answers */
    size_t n_batch;
    size_t batch_cap;
    struct json_arena arena;      /* unescaped strings of the batch */
    struct out_buf pend;            /* replies not yet handed to libuv */
    struct out_buf wire;            /* replies being written */
    bool ack_pending;
    uint64_t ack;                   /* the value of the pending ack */
    uint64_t ack_sent;              /* the highest ack queued so far */
    int64_t err_window_ns;          /* start of the current rate-limit second */
    unsigned n_err_window;          /* error lines written in it */
};

struct stream_slot {
    int64_t id;
    struct ingest_conn *conn; /* NULL: free */
};

struct ingest {
    uv_loop_t *loop;
    uv_pipe_t listener;             /* listener.data == this */
    bool listening;                 /* the listener handle is not closed */
    struct ingest_config cfg;       /* socket_path points to path */
    char *path;                     /* owned copy */
    struct stats *stats;            /* cfg.stats, or own_stats */
    struct stats own_stats;
    struct decoder *dec;     /* shared by all connections: only one line is decoded at a time */
    struct ingest_conn *conns;
    size_t n_conns;                 /* counted connections (not the ones being turned away) */
    size_t n_handles;               /* handles not yet closed; in is freed when it drops to 0 */
    bool paused;                    /* the sink asked for backpressure */
    bool stopped;                   /* ingest_stop_reading() */
    bool closing;                   /* ingest_close(): free once n_handles is 0 */
    struct stream_slot *map;        /* stream_id -> connection, linear probing, map_cap slots */
    size_t map_cap;                 /* a power of two > 2 * max_connections */
    struct log_ratelimit rl;
    struct ingest_conn *hello_head, *hello_tail; /* counted connections without a hello yet */
    size_t n_hello_waiting;
    size_t hello_slots;             /* they may hold at most this many: max_connections minus
                                     * reserved_connections, at least 1 */
    uv_timer_t hello_timer;         /* closes those whose hello is late; hello_timer.data == in */
    bool hello_timer_open;
};

/* ---- stream map ---- */

static size_t map_home(const struct ingest *in, int64_t id)
{
    uint64_t h = (uint64_t)id * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 29) & (in->map_cap - 1);
}

static struct ingest_conn *map_get(const struct ingest *in, int64_t id)
{
    for (size_t i = map_home(in, id);; i = (i + 1) & (in->map_cap - 1)) {
        if (!in->map[i].conn)
            return NULL;
        if (in->map[i].id == id)
            return in->map[i].conn;
    }
}

static void map_put(struct ingest *in, int64_t id, struct ingest_conn *c)
{
    /* At most one entry per counted connection, so the table is never more than half full. */
    size_t i = map_home(in, id);
    while (in->map[i].conn && in->map[i].id != id)
        i = (i + 1) & (in->map_cap - 1);
    in->map[i].id = id;
    in->map[i].conn = c;
}

static void map_del(struct ingest *in, int64_t id, const struct ingest_conn *c)
{
    size_t mask = in->map_cap - 1;
    size_t i = map_home(in, id);
    while (in->map[i].conn && in->map[i].id != id)
        i = (i + 1) & mask;
    if (in->map[i].conn != c)
        return; /* absent, or another connection took the stream over */
    /* Backward-shift deletion keeps every probe chain unbroken without tombstones. */
    for (size_t j = i;;) {
        j = (j + 1) & mask;
        if (!in->map[j].conn)
            break;
        size_t k = map_home(in, in->map[j].id);
        bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (!stays) {
            in->map[i] = in->map[j];
            i = j;
        }
    }
    in->map[i].conn = NULL;
}

/* ---- replies ---- */

static bool out_add(struct out_buf *o, const char *p, size_t n, size_t limit)
{
    if (o->len + n > limit)
        return false;
    if (o->len + n > o->cap) {
        size_t cap = o->cap ? o->cap : 256;
        while (cap < o->len + n)
            cap *= 2;
        char *d = realloc(o->data, cap);
        if (!d)
            return false;
        o->data = d;
        o->cap = cap;
    }
    memcpy(o->data + o->len, p, n);
    o->len += n;
    return true;
}

static void on_write(uv_write_t *req, int status);
static void on_conn_closed(uv_handle_t *h);
static void conn_end_session(struct ingest_conn *c, bool clean);

static void hello_wait_del(struct ingest_conn *c);

static void conn_close_now(struct ingest_conn *c)
{
    hello_wait_del(c);
    if (c->handle_closing)
        return;
    c->handle_closing = true;
    c->state = CONN_CLOSING;
    c->reading = false;
    uv_close((uv_handle_t *)&c->pipe, on_conn_closed);
}

/* ---- connections without a hello (issue 18, item 6) ---- */

static void hello_wait_add(struct ingest_conn *c)
{
    struct ingest *in = c->in;
    c->hello_waiting = true;
    c->hello_since_ns = clock_mono_ns();
    c->hprev = in->hello_tail;
    c->hnext = NULL;
    if (in->hello_tail)
        in->hello_tail->hnext = c;
    else
        in->hello_head = c;
    in->hello_tail = c;
    in->n_hello_waiting++;
}

static void hello_wait_del(struct ingest_conn *c)
{
    if (!c->hello_waiting)
        return;
    struct ingest *in = c->in;
    c->hello_waiting = false;
    if (c->hprev)
        c->hprev->hnext = c->hnext;
    else
        in->hello_head = c->hnext;
    if (c->hnext)
        c->hnext->hprev = c->hprev;
    else
        in->hello_tail = c->hprev;
    c->hprev = c->hnext = NULL;
    in->n_hello_waiting--;
}

/* Starts writing what gathered, unless a write is in flight (on_write comes back here). A closing
 * connection is closed once nothing is left to write. */
static void conn_flush(struct ingest_conn *c)
{
    if (c->writing || c->handle_closing)
        return;
    if (c->out_dead) {
        c->pend.len = 0;
        c->ack_pending = false;
    }
    if (c->ack_pending) {
        char line[48];
        int n = snprintf(line, sizeof line, "{\"ack\":%llu}\n", (unsigned long long)c->ack);
        /* Acks go past the cap: they are tiny, one at a time, and must not be lost. */
        if (out_add(&c->pend, line, (size_t)n, SIZE_MAX))
            c->ack_pending = false;
    }
    if (c->pend.len == 0) {
        if (c->state == CONN_CLOSING)
            conn_close_now(c);
        return;
    }
    struct out_buf t = c->wire;
    c->wire = c->pend;
    c->pend = t;
    c->pend.len = 0;
    uv_buf_t b = uv_buf_init(c->wire.data, (unsigned int)c->wire.len);
    c->wreq.data = c;
    int r = uv_write(&c->wreq, (uv_stream_t *)&c->pipe, &b, 1, on_write);
    if (r < 0) {
        c->wire.len = 0;
        c->out_dead = true;
        if (c->state == CONN_CLOSING)
            conn_close_now(c);
        return;
    }
    c->writing = true;
}

static void on_write(uv_write_t *req, int status)
{
    struct ingest_conn *c = req->data;
    c->writing = false;
    c->wire.len = 0;
    if (c->handle_closing)
        return;
    if (status < 0) {
        /* Nothing more can reach the client (EPIPE after it shut its read side, ECONNRESET), but
         * it may still be writing: lines already sent are data. The read side decides when the
         * connection ends; from now on replies are dropped. */
        c->out_dead = true;
    }
    conn_flush(c);
}

/* Queues {"error":{...}}; seq < 0 leaves "seq" out (errors about the hello or the connection).
 * Unless forced, at most INGEST_ERRORS_PER_S a second are written; the rest are only counted. */
static void conn_reply_error(struct ingest_conn *c, uint64_t line_no, int64_t seq, const char *code,
                             const char *msg, bool force)
{
    if (!force) {
        int64_t now = clock_mono_ns();
        if (now - c->err_window_ns >= NS_PER_S) {
            c->err_window_ns = now;
            c->n_err_window = 0;
        }
        if (c->n_err_window >= INGEST_ERRORS_PER_S)
            return;
        c->n_err_window++;
    }
    struct sbuf b;
    sbuf_init(&b, 1024);
    sbuf_printf(&b, "{\"error\":{\"line\":%llu", (unsigned long long)line_no);
    if (seq >= 0)
        sbuf_printf(&b, ",\"seq\":%lld", (long long)seq);
    sbuf_printf(&b, ",\"code\":\"%s\",\"message\":", code);
    sbuf_json_strz(&b, msg);
    sbuf_adds(&b, "}}\n");
    if (!b.error)
        (void)out_add(&c->pend, b.data, b.len, force ? SIZE_MAX : INGEST_OUT_MAX);
    sbuf_done(&b);
}

/* ---- reading ---- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct ingest_conn *c = h->data;
    size_t len;
    (void)suggested; /* the lbuf decides: reads land in its free tail, nothing is allocated */
    buf->base = lbuf_space(&c->lines, &len);
    buf->len = len;
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

static void conn_read_start(struct ingest_conn *c)
{
    if (c->reading || c->handle_closing || c->state >= CONN_DRAINING)
        return;
    if (uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read) == 0)
        c->reading = true;
}

static void conn_read_stop(struct ingest_conn *c)
{
    if (!c->reading)
        return;
    (void)uv_read_stop((uv_stream_t *)&c->pipe);
    c->reading = false;
}

static void ingest_pause(struct ingest *in)
{
    if (in->paused)
        return;
    in->paused = true;
    STATS_ADD(in->stats, pauses, 1);
    for (struct ingest_conn *c = in->conns; c; c = c->next)
        conn_read_stop(c);
}

/* Calls on_close once, then forgets the stream so acks stop finding this connection. */
static void conn_end_session(struct ingest_conn *c, bool clean)
{
    if (!c->session_open)
        return;
    c->session_open = false;
    struct ingest *in = c->in;
    /* The stream stays mapped during the callback: an ack sent from it still reaches the client. */
    if (in->cfg.on_close)
        in->cfg.on_close(in->cfg.ud, c->session_id, clean);
    map_del(in, c->stream_id, c);
}

/* A clean end: the session closes now, but the connection stays (not reading, stream still
 * mapped) until ingest_ack() brings the ack that covers every line, the bye included, so a
 * client that waits for it knows all it sent is durable. */
static void conn_drain(struct ingest_conn *c, bool clean)
{
    struct ingest *in = c->in;
    c->state = CONN_DRAINING;
    conn_read_stop(c);
    if (c->session_open) {
        c->session_open = false;
        if (in->cfg.on_close)
            in->cfg.on_close(in->cfg.ud, c->session_id, clean);
    }
    if (c->ack_sent >= c->next_seq) {
        map_del(in, c->stream_id, c);
        c->state = CONN_CLOSING;
    }
    conn_flush(c);
}

/* No more input: reply what is queued, then close. */
static void conn_shut(struct ingest_conn *c)
{
    hello_wait_del(c);
    c->state = CONN_CLOSING;
    conn_read_stop(c);
    conn_flush(c);
}

/* Hands the batch to the sink with next_seq = upto. Returns false if the connection is closing
 * (the sink failed, or the callback shut ingest down). */
static bool conn_deliver(struct ingest_conn *c, uint64_t upto)
{
    struct ingest *in = c->in;
    if (!c->session_open)
        return false;
    if (c->n_batch == 0 && upto <= c->sunk_seq)
        return true;
    int r = in->cfg.sink(in->cfg.ud, c->session_id, c->batch, c->n_batch, upto);
    bool ok = r == 0 || r == -EAGAIN;
    if (ok) {
        for (size_t i = 0; i < c->n_batch; i++)
            STATS_ADD(in->stats, records[c->batch[i].kind], 1);
        if (upto > c->sunk_seq)
            c->sunk_seq = upto;
    } else {
        /* Answer every record; rejected lines of the read already have their own answer. */
        for (size_t i = 0; i < c->n_batch; i++)
            conn_reply_error(c, c->batch_line[i], (int64_t)c->batch[i].seq, "unavailable",
                             strerror(-r), false);
        if (log_ratelimit(&in->rl, NS_PER_S))
            log_warn("ingest: session %lld: sink failed: %s", (long long)c->session_id,
                     strerror(-r));
    }
    size_t n = c->n_batch;
    c->n_batch = 0;
    c->arena.used = 0;
    if (!ok && n > 0) {
        /* Later lines could not be acknowledged without acknowledging these: end the session,
         * so that the client reconnects and replays from the stream's durable next_seq. */
        conn_end_session(c, false);
        conn_shut(c);
        return false;
    }
    if (r == -EAGAIN)
        ingest_pause(in);
    return !c->handle_closing && c->state != CONN_CLOSING;
}

static bool is_blank_line(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
            return false;
    }
    return true;
}

/* Makes the (empty) arena big enough for any line of len bytes. */
static bool arena_reserve(struct json_arena *a, size_t len)
{
    size_t need = len + 16;
    if (a->cap >= need)
        return true;
    size_t cap = need < INGEST_ARENA_MIN ? INGEST_ARENA_MIN : need;
    char *d = realloc(a->data, cap);
    if (!d)
        return false;
    a->data = d;
    a->cap = cap;
    return true;
}

static void conn_hello(struct ingest_conn *c, char *line, size_t len, uint64_t line_no)
{
    struct ingest *in = c->in;
    char msg[DECODE_MSG_MAX];
    struct record_hello h;
    c->arena.used = 0;
    int r = DECODE_NOSPACE;
    if (arena_reserve(&c->arena, len))
        r = decode_hello(in->dec, line, len, &c->arena, &h, msg);
    const char *code = "bad_hello";
    if (r == DECODE_NOSPACE)
        snprintf(msg, sizeof msg, "out of memory");
    if (r == DECODE_OK && h.probe && in->cfg.probe_answer) {
        (void)out_add(&c->pend, in->cfg.probe_answer, strlen(in->cfg.probe_answer), SIZE_MAX);
        c->arena.used = 0;
        conn_shut(c);
        return;
    }
    if (r == DECODE_OK && h.probe) {
        r = DECODE_BAD_HELLO;
        snprintf(msg, sizeof msg, "probe: not answered here");
    }
    if (r == DECODE_OK) {
        struct record_welcome w = {0};
        char err[INGEST_ERR_MAX] = "";
        int hr = in->cfg.on_hello(in->cfg.ud, &h, &w, err);
        err[INGEST_ERR_MAX - 1] = '\0';
        if (c->handle_closing)
            return; /* the callback shut ingest down */
        if (hr == 0) {
            STATS_ADD(in->stats, hellos, 1);
            c->session_id = w.session_id;
            c->stream_id = w.stream_id;
            c->session_open = true;
            hello_wait_del(c);
            c->welcome_seq = c->sunk_seq = w.next_seq;
            c->next_seq = h.has_seq ? h.seq : w.next_seq;
            map_put(in, c->stream_id, c);
            char wl[192];
            int n = snprintf(wl, sizeof wl,
                             "{\"welcome\":\"stepscope/1\",\"job_id\":%lld,\"session_id\":%lld,"
                             "\"stream_id\":%lld,\"next_seq\":%llu}\n",
                             (long long)w.job_id, (long long)w.session_id, (long long)w.stream_id,
                             (unsigned long long)w.next_seq);
            (void)out_add(&c->pend, wl, (size_t)n, SIZE_MAX);
            c->state = CONN_RECORDS;
            c->arena.used = 0;
            if (w.next_seq > 0) {
                /* A resumed stream: the lines below next_seq are held (durable, or committing).
                 * An empty append puts the stream in the open batch, so the next commit acks
                 * next_seq even if the client only replays lines the daemon already has. */
                int sr = in->cfg.sink(in->cfg.ud, c->session_id, NULL, 0, w.next_seq);
                if (sr == -EAGAIN)
                    ingest_pause(in);
            }
            return;
        }
        code = hr == -EBUSY ? "stream_busy" : "bad_hello";
        snprintf(msg, sizeof msg, "%s", err[0] ? err : strerror(-hr));
    }
    c->arena.used = 0;
    STATS_ADD(in->stats, bad_hellos, 1);
    if (log_ratelimit(&in->rl, NS_PER_S))
        log_warn("ingest: refused a hello: %s: %s", code, msg);
    conn_reply_error(c, line_no, -1, code, msg, true);
    conn_shut(c);
}

static void count_rejected(struct stats *st, int r)
{
    switch (r) {
    case DECODE_MALFORMED:
        STATS_ADD(st, malformed, 1);
        break;
    case DECODE_UNKNOWN:
        STATS_ADD(st, unknown, 1);
        break;
    default:
        STATS_ADD(st, invalid, 1);
        break;
    }
}

static bool batch_reserve(struct ingest_conn *c)
{
    if (c->n_batch < c->batch_cap)
        return true;
    size_t cap = c->batch_cap ? c->batch_cap * 2 : INGEST_BATCH_MIN;
    struct record *b = realloc(c->batch, cap * sizeof *b);
    if (!b)
        return false;
    c->batch = b;
    uint64_t *l = realloc(c->batch_line, cap * sizeof *l);
    if (!l)
        return false;
    c->batch_line = l;
    c->batch_cap = cap;
    return true;
}

/* True when the line may take c->next_seq. A stream's numbers end at INGEST_SEQ_END: past it an
 * ack could not be written back in a hello (its "seq" is a non-negative int64), so the line is
 * refused instead: what came before is delivered, the client is told (seq_exhausted, no "seq"),
 * and the session ends as after a bye but unclean, once the ack covering the earlier lines is
 * queued. */
static bool conn_seq_left(struct ingest_conn *c, uint64_t line_no)
{
    if (c->next_seq < INGEST_SEQ_END)
        return true;
    struct ingest *in = c->in;
    if (!conn_deliver(c, c->next_seq))
        return false;
    char msg[160];
    snprintf(msg, sizeof msg,
             "the stream reached the last sequence number (%llu): the line is not taken; "
             "send the rest on a new stream", (unsigned long long)INGEST_SEQ_END);
    STATS_ADD(in->stats, invalid, 1);
    if (log_ratelimit(&in->rl, NS_PER_S))
        log_warn("ingest: session %lld: %s", (long long)c->session_id, msg);
    conn_reply_error(c, line_no, -1, "seq_exhausted", msg, true);
    conn_drain(c, false);
    return false;
}

static void conn_record(struct ingest_conn *c, char *line, size_t len, uint64_t line_no)
{
    struct ingest *in = c->in;
    if (!conn_seq_left(c, line_no))
        return;
    uint64_t seq = c->next_seq++;
    STATS_ADD(in->stats, lines, 1);
    if (seq < c->welcome_seq) {
        STATS_ADD(in->stats, duplicates, 1);
        return;
    }
    /* Before this line's decode, make room; a delivery now acknowledges up to, not past, it. */
    if (c->n_batch == INGEST_BATCH_MAX && !conn_deliver(c, seq))
        return;
    char msg[DECODE_MSG_MAX];
    int r = DECODE_NOSPACE;
    if (batch_reserve(c))
        r = decode_record(in->dec, line, len, &c->arena, &c->batch[c->n_batch], msg);
    if (r == DECODE_NOSPACE) {
        if (!conn_deliver(c, seq))
            return;
        r = DECODE_NOSPACE;
        if (batch_reserve(c) && arena_reserve(&c->arena, len))
            r = decode_record(in->dec, line, len, &c->arena, &c->batch[c->n_batch], msg);
        if (r == DECODE_NOSPACE) {
            /* Out of memory: the line cannot be taken now; the client may replay it. */
            conn_reply_error(c, line_no, (int64_t)seq, "unavailable", "out of memory", false);
            conn_end_session(c, false);
            conn_shut(c);
            return;
        }
    }
    switch (r) {
    case DECODE_OK:
        c->batch[c->n_batch].seq = seq;
        c->batch_line[c->n_batch] = line_no;
        c->n_batch++;
        return;
    case DECODE_CAPTURE: {
        /* Not stored: its number is acknowledged with the batch around it. */
        const struct record *rec = &c->batch[c->n_batch];
        if (in->cfg.on_capture)
            in->cfg.on_capture(in->cfg.ud, c->session_id, rec->step, rec->samples, &rec->name,
                               &rec->cat);
        return;
    }
    case DECODE_BYE:
        if (!conn_deliver(c, c->next_seq))
            return;
        conn_drain(c, true);
        return;
    default:
        count_rejected(in->stats, r);
        if (log_ratelimit(&in->rl, NS_PER_S))
            log_warn("ingest: session %lld line %llu: %s: %s", (long long)c->session_id,
                     (unsigned long long)line_no, decode_code(r), msg);
        conn_reply_error(c, line_no, (int64_t)seq, decode_code(r), msg, false);
        return;
    }
}

static void conn_oversized(struct ingest_conn *c, uint64_t line_no)
{
    struct ingest *in = c->in;
    char msg[96];
    snprintf(msg, sizeof msg, "line longer than %zu bytes", in->cfg.max_line_bytes);
    if (c->state == CONN_HELLO) {
        STATS_ADD(in->stats, bad_hellos, 1);
        conn_reply_error(c, line_no, -1, "bad_hello", msg, true);
        conn_shut(c);
        return;
    }
    if (!conn_seq_left(c, line_no))
        return;
    uint64_t seq = c->next_seq++;
    STATS_ADD(in->stats, lines, 1);
    if (seq < c->welcome_seq) {
        STATS_ADD(in->stats, duplicates, 1);
        return;
    }
    STATS_ADD(in->stats, oversized, 1);
    conn_reply_error(c, line_no, (int64_t)seq, "oversized", msg, false);
}

static void conn_process(struct ingest_conn *c)
{
    char *line;
    size_t len;
    int r;
    for (;;) {
        if (c->state >= CONN_DRAINING)
            break;
        r = lbuf_next(&c->lines, &line, &len);
        if (r == 0)
            break;
        uint64_t line_no = c->lines.n_lines;
        if (r < 0)
            conn_oversized(c, line_no);
        else if (is_blank_line(line, len))
            continue;
        else if (c->state == CONN_HELLO)
            conn_hello(c, line, len, line_no);
        else
            conn_record(c, line, len, line_no);
    }
    if (c->state == CONN_RECORDS)
        (void)conn_deliver(c, c->next_seq);
    conn_flush(c);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct ingest_conn *c = s->data;
    (void)buf; /* it points into c->lines: nothing to free */
    if (nread == 0)
        return;
    if (nread < 0) {
        if (lbuf_pending(&c->lines) > 0 && !c->lines.discarding)
            STATS_ADD(c->in->stats, partial_lines, 1);
        conn_end_session(c, false);
        conn_shut(c);
        return;
    }
    STATS_ADD(c->in->stats, bytes, (uint64_t)nread);
    lbuf_commit(&c->lines, (size_t)nread);
    conn_process(c);
}

/* ---- accepting ---- */

static void ingest_maybe_free(struct ingest *in)
{
    if (!in->closing || in->n_handles > 0)
        return;
    decoder_free(in->dec);
    free(in->map);
    free(in->path);
    free(in);
}

static void on_conn_closed(uv_handle_t *h)
{
    struct ingest_conn *c = h->data;
    struct ingest *in = c->in;
    map_del(in, c->stream_id, c); /* no-op unless it still holds its stream (draining) */
    if (c->prev)
        c->prev->next = c->next;
    else
        in->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    if (c->counted) {
        in->n_conns--;
        STATS_SUB(in->stats, connections_open, 1);
    }
    lbuf_done(&c->lines);
    free(c->batch);
    free(c->batch_line);
    free(c->arena.data);
    free(c->pend.data);
    free(c->wire.data);
    free(c);
    in->n_handles--;
    ingest_maybe_free(in);
}

/* Closes c, which sent no complete hello: answered with code, uncounted at once so that its slot
 * is free before the reply is written. Counted in bad_hellos, and by the caller in what closed
 * it (connections_hello_timeouts or connections_evicted). */
static void hello_drop(struct ingest_conn *c, const char *code, const char *msg)
{
    struct ingest *in = c->in;
    STATS_ADD(in->stats, bad_hellos, 1);
    if (log_ratelimit(&in->rl, NS_PER_S))
        log_warn("ingest: closing a connection without a hello: %s", code);
    conn_reply_error(c, 0, -1, code, msg, true);
    conn_shut(c);
    if (c->counted) {
        c->counted = false;
        in->n_conns--;
        STATS_SUB(in->stats, connections_open, 1);
    }
}

/* How long a connection without a hello is safe from eviction: 1 s, or half the timeout. */
static int64_t hello_grace_ns(const struct ingest *in)
{
    uint64_t ms = in->cfg.hello_timeout_ms / 2 < 1000 ? in->cfg.hello_timeout_ms / 2 : 1000;
    return (int64_t)ms * 1000000;
}

/* An idle flood must not lock trainers out: connections without a hello hold at most
 * hello_slots, and all connections max_connections, with room left for `room` more; past that
 * the oldest of those without a hello are closed ("evicted"), those that have had their grace
 * only (ranks that connected in one burst have not been read yet and must not be thrown out
 * for each other). */
static void hello_trim(struct ingest *in, size_t room)
{
    int64_t graced = clock_mono_ns() - hello_grace_ns(in);
    while (in->hello_head && in->hello_head->hello_since_ns <= graced &&
           (in->n_hello_waiting + room > in->hello_slots ||
            in->n_conns + room > in->cfg.max_connections)) {
        STATS_ADD(in->stats, connections_evicted, 1);
        hello_drop(in->hello_head, "evicted",
                   "closed to make room: no hello yet, and connections without one may hold "
                   "only max_connections - reserved_connections slots");
    }
}

/* Closes the connections whose hello is late, oldest first (the list is in arrival order).
 * Nothing is late while reading is paused or stopped: their hellos are not being read. */
static void on_hello_timer(uv_timer_t *t)
{
    struct ingest *in = t->data;
    if (in->paused || in->stopped)
        return;
    int64_t due = clock_mono_ns() - (int64_t)in->cfg.hello_timeout_ms * 1000000;
    while (in->hello_head && in->hello_head->hello_since_ns <= due) {
        char msg[96];
        snprintf(msg, sizeof msg, "no complete hello within %llu ms",
                 (unsigned long long)in->cfg.hello_timeout_ms);
        STATS_ADD(in->stats, connections_hello_timeouts, 1);
        hello_drop(in->hello_head, "hello_timeout", msg);
    }
    hello_trim(in, 0);
}

static void on_connection(uv_stream_t *server, int status)
{
    struct ingest *in = server->data;
    if (status < 0) {
        if (log_ratelimit(&in->rl, NS_PER_S))
            log_warn("ingest: accept: %s", uv_strerror(status));
        return;
    }
    struct ingest_conn *c = calloc(1, sizeof *c);
    if (!c) {
        if (log_ratelimit(&in->rl, NS_PER_S))
            log_warn("ingest: accept: out of memory");
        return;
    }
    c->in = in;
    c->pipe.data = c;
    (void)uv_pipe_init(in->loop, &c->pipe, 0); /* cannot fail for a local pipe */
    c->next = in->conns;
    if (in->conns)
        in->conns->prev = c;
    in->conns = c;
    in->n_handles++;
    if (uv_accept(server, (uv_stream_t *)&c->pipe) < 0) {
        conn_close_now(c);
        return;
    }
    hello_trim(in, 1);
    if (in->n_conns >= in->cfg.max_connections) {
        char msg[96];
        snprintf(msg, sizeof msg, "the daemon already serves %zu connections",
                 in->cfg.max_connections);
        STATS_ADD(in->stats, connections_rejected, 1);
        if (log_ratelimit(&in->rl, NS_PER_S))
            log_warn("ingest: %s, refusing one more", msg);
        conn_reply_error(c, 0, -1, "too_many_connections", msg, true);
        conn_shut(c);
        return;
    }
    if (lbuf_init(&c->lines, in->cfg.max_line_bytes) < 0) {
        conn_close_now(c);
        return;
    }
    c->counted = true;
    in->n_conns++;
    STATS_ADD(in->stats, connections_accepted, 1);
    STATS_ADD(in->stats, connections_open, 1);
    c->state = CONN_HELLO;
    hello_wait_add(c);
    if (!in->paused && !in->stopped)
        conn_read_start(c);
}

/* -EADDRINUSE if something answers on path; unlinks a socket nobody listens on. */
static int clear_stale_socket(const char *path, const struct sockaddr_un *sa)
{
    struct stat sb;
    if (lstat(path, &sb) < 0)
        return errno == ENOENT ? 0 : -errno;
    if (!S_ISSOCK(sb.st_mode))
        return -EADDRINUSE; /* not a socket: not ours to remove */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -errno;
    /* Non-blocking, so a live daemon with a full backlog (EAGAIN) cannot stall the start. */
    int r = connect(fd, (const struct sockaddr *)sa, sizeof *sa);
    int err = r < 0 ? errno : 0;
    (void)close(fd);
    if (r == 0 || err == EAGAIN || err == EINPROGRESS)
        return -EADDRINUSE;
    if (err == ENOENT)
        return 0;
    if (err != ECONNREFUSED)
        return -err;
    if (unlink(path) < 0 && errno != ENOENT)
        return -errno;
    return 0;
}

static void on_listener_closed(uv_handle_t *h)
{
    struct ingest *in = h->data;
    in->n_handles--;
    ingest_maybe_free(in);
}

static void hello_timer_close(struct ingest *in)
{
    if (!in->hello_timer_open)
        return;
    in->hello_timer_open = false;
    uv_close((uv_handle_t *)&in->hello_timer, on_listener_closed);
}

static void listener_close(struct ingest *in)
{
    if (!in->listening)
        return;
    in->listening = false;
    uv_close((uv_handle_t *)&in->listener, on_listener_closed);
}

int ingest_start(uv_loop_t *loop, const struct ingest_config *cfg, struct ingest **ret_in)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (!cfg->socket_path || !cfg->socket_path[0] || !cfg->on_hello || !cfg->sink)
        return -EINVAL;
    size_t plen = strlen(cfg->socket_path);
    if (plen >= sizeof sa.sun_path)
        return -ENAMETOOLONG;
    memcpy(sa.sun_path, cfg->socket_path, plen + 1);

    int r = -ENOMEM;
    int fd = -1;
    struct ingest *in = calloc(1, sizeof *in);
    if (!in)
        goto fail;
    in->loop = loop;
    in->cfg = *cfg;
    if (!in->cfg.max_line_bytes)
        in->cfg.max_line_bytes = INGEST_LINE_MAX_DEFAULT;
    if (!in->cfg.max_connections)
        in->cfg.max_connections = INGEST_CONN_MAX_DEFAULT;
    if (!in->cfg.hello_timeout_ms)
        in->cfg.hello_timeout_ms = INGEST_HELLO_TIMEOUT_MS_DEFAULT;
    in->hello_slots = in->cfg.reserved_connections < in->cfg.max_connections
                          ? in->cfg.max_connections - in->cfg.reserved_connections
                          : 1;
    in->stats = cfg->stats ? cfg->stats : &in->own_stats;
    in->path = strdup(cfg->socket_path);
    in->cfg.socket_path = in->path;
    in->map_cap = 16;
    while (in->map_cap <= 2 * in->cfg.max_connections)
        in->map_cap *= 2;
    in->map = calloc(in->map_cap, sizeof *in->map);
    in->dec = decoder_new(in->cfg.max_line_bytes);
    if (!in->path || !in->map || !in->dec)
        goto fail;

    r = clear_stale_socket(in->path, &sa);
    if (r < 0)
        goto fail;
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        r = -errno;
        goto fail;
    }
    if (bind(fd, (const struct sockaddr *)&sa, sizeof sa) < 0) {
        r = -errno;
        goto fail;
    }
    mode_t mode = cfg->socket_mode ? (mode_t)(cfg->socket_mode & 0777) : 0660;
    if (chmod(in->path, mode) < 0 || listen(fd, INGEST_BACKLOG) < 0) {
        r = -errno;
        (void)unlink(in->path);
        goto fail;
    }

    (void)uv_pipe_init(loop, &in->listener, 0);
    in->listener.data = in;
    in->listening = true;
    in->n_handles = 1;
    /* Checked four times per timeout, so a late hello is closed within 1.25 timeouts. */
    uint64_t period = in->cfg.hello_timeout_ms / 4 ? in->cfg.hello_timeout_ms / 4 : 1;
    (void)uv_timer_init(loop, &in->hello_timer);
    in->hello_timer.data = in;
    in->hello_timer_open = true;
    in->n_handles++;
    (void)uv_timer_start(&in->hello_timer, on_hello_timer, period, period);
    uv_unref((uv_handle_t *)&in->hello_timer);
    r = uv_pipe_open(&in->listener, fd);
    if (r == 0) {
        fd = -1; /* the handle owns it now */
        r = uv_listen((uv_stream_t *)&in->listener, INGEST_BACKLOG, on_connection);
    }
    if (r < 0) {
        /* The handle exists now: it must be closed through the loop, which then frees in. */
        (void)unlink(in->path);
        if (fd >= 0)
            (void)close(fd);
        in->closing = true;
        listener_close(in);
        hello_timer_close(in);
        return r;
    }
    *ret_in = in;
    return 0;
fail:
    if (fd >= 0)
        (void)close(fd);
    if (in) {
        decoder_free(in->dec);
        free(in->map);
        free(in->path);
        free(in);
    }
    return r;
}

void ingest_ack(struct ingest *in, int64_t stream_id, uint64_t next_seq)
{
    struct ingest_conn *c = map_get(in, stream_id);
    if (!c || c->handle_closing || next_seq <= c->ack_sent)
        return;
    c->ack = next_seq;
    c->ack_sent = next_seq;
    c->ack_pending = true;
    if (c->state == CONN_DRAINING && next_seq >= c->next_seq) {
        map_del(in, c->stream_id, c);
        c->state = CONN_CLOSING;
    }
    conn_flush(c);
}

int ingest_send(struct ingest *in, int64_t stream_id, const char *line, size_t len)
{
    struct ingest_conn *c = map_get(in, stream_id);
    if (!c || c->handle_closing || c->state != CONN_RECORDS)
        return -ENOENT;
    if (!out_add(&c->pend, line, len, INGEST_OUT_MAX))
        return -ENOBUFS;
    conn_flush(c);
    return 0;
}

void ingest_resume(struct ingest *in)
{
    if (!in->paused)
        return;
    in->paused = false;
    if (in->stopped)
        return;
    /* Their hellos were not read while paused: each gets its whole time again. */
    int64_t now = clock_mono_ns();
    for (struct ingest_conn *c = in->hello_head; c; c = c->hnext)
        c->hello_since_ns = now;
    for (struct ingest_conn *c = in->conns; c; c = c->next) {
        if (c->counted)
            conn_read_start(c);
    }
}

void ingest_stop_reading(struct ingest *in)
{
    in->stopped = true;
    listener_close(in);
    hello_timer_close(in);
    for (struct ingest_conn *c = in->conns; c; c = c->next)
        conn_read_stop(c);
}

void ingest_close(struct ingest *in)
{
    if (!in || in->closing)
        return;
    ingest_stop_reading(in);
    in->closing = true;
    for (struct ingest_conn *c = in->conns; c; c = c->next) {
        conn_end_session(c, false);
        /* uv_write writes at once when the socket has room, so the last acks usually leave
         * before the close below cancels whatever could not be written. */
        c->state = CONN_CLOSING;
        conn_flush(c);
        conn_close_now(c);
    }
    (void)unlink(in->path);
    ingest_maybe_free(in);
}
