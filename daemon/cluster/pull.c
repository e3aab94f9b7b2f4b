/* SPDX-License-Identifier: MIT */
/*
 * pull: the cluster view (cluster.h, docs/ARCHITECTURE.md "The cluster view"). A thread of its
 * own reads from ClickHouse what the other nodes shipped (node != this node) and feeds it into
 * this daemon as ordinary sessions, one per (origin node, job, rank), over the daemon's own ingest
 * socket: the rows take the path a trainer's take (store and live), so every route, the jobs
 * list and the timeline answer over all nodes' ranks with the code that answers for local ones.
 *
 * One round: the sessions table (every node's hellos) names the pulled ranks and the ranks two
 * nodes shipped (one kept, the others recorded: store_pull_conflict()); then, per origin node,
 * its stored trace lines verbatim past the cursor in (block, idx) order (stepscope.events; a
 * block of a node older than that table: its spans, rebuilt from their columns), its steps and
 * its queue samples, host samples and pipeline records past theirs in row order (a pipeline
 * record verbatim, a host sample rebuilt from its columns), one table at a time: each stream's lines are
 * written, the daemon's acknowledgements
 * awaited, and then the cursor and the streams' sequence numbers are saved together
 * (store_pull.h says why that is exactly once).
 *
 * A pulled session's hello is its origin's hello verbatim (its env, parallel layout, summary and
 * communication included) with "stream" "cluster:<origin>", "seq" and "origin" set in place of
 * the origin's own; the store reads "origin" (STORE_SQL_ORIGIN) so that the shipper never ships
 * such rows again.
 *
 * Deletes: a node that deleted a job ships a record of it (stepscope.deletes, cluster.c); before
 * an origin's rows, its records past pull_cursors.del are carried out here (apply_deletes():
 * the ranks pulled from it deleted through cluster_ops.drop_ranks, the cursor brought down to the
 * origin's after the delete). A DELETE on this node holds the job (cluster_pull_hold()): its
 * streams closed and not fed until the delete committed.
 *
 * Clocks: pulled rows keep their origin's times, verbatim lines and rebuilt spans alike; the hosts'
 * clocks are aligned when answering (analyse_clock.h, from the step ends they share), so nothing
 * here shifts a time (shifting at feed time too would move them twice).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <zstd.h>

#include "../../lib/clock.h"
#include "../../lib/json.h"
#include "../../lib/log.h"
#include "../../lib/sbuf.h"
#include "../../lib/util.h"
#include "../store/store.h"
#include "../store/store_pull.h"
#include "cluster.h"
#include "cluster_int.h"

#define PULL_BATCH_MAX 65536           /* rows read from ClickHouse per table per request, at
                                          most (cluster_batch_rows when smaller) */
#define PULL_ANSWER_MAX (1u << 30)     /* of a ClickHouse answer */
#define PULL_LINE_MAX (64u << 20)      /* of a stream's lines queued in one batch */
#define PULL_ACK_TIMEOUT_NS (120 * INT64_C(1000000000)) /* no progress this long: give up */
#define PULL_IDLE_CLOSE_NS (10 * INT64_C(1000000000))  /* a stream without rows is closed */
#define PULL_NAME_MAX 512
#define PULL_SIG_MAX 4096              /* of the tables' signature (parts_signature()) */
#define PULL_FULL_NS (10 * INT64_C(1000000000)) /* a round reads the tables at least this often */
#define PULL_BLOCKS_FIRST 16           /* stored blocks (event_blocks rows) per read, before their
                                          lines per block are known */
#define PULL_BLOCKS_MAX 32             /* at most (each up to 1 MiB of lines: PULL_LINE_MAX) */
#define PULL_BLOCK_RAW_MAX (64u << 20) /* of one block's lines: a larger one is not decoded */

/* One pulled stream: (origin node, job, rank). */
struct pull_stream {
    char origin[PULL_NAME_MAX], job[PULL_NAME_MAX];
    int64_t rank;
    char *hello;         /* the origin's hello with stream, seq and origin taken out; owned */
    size_t hello_len;
    uint64_t session_row; /* the origin's session row the hello is from */
    bool conflict;       /* another node's copy of this (job, rank) is the one kept */
    int fd;              /* -1: not connected */
    uint64_t seq;        /* the sequence number the next line takes */
    uint64_t saved_seq;  /* as last saved */
    uint64_t acked;      /* the daemon's last ack */
    struct sbuf out;     /* lines of the batch in hand */
    size_t out_off;      /* written so far */
    uint64_t out_lines;
    char in[4096];       /* a partial reply line */
    size_t in_len;
    int64_t used_ns;     /* last time lines were written */
    bool held;           /* its job is being deleted here (cluster_pull_hold()): not fed */
};

struct cluster_pull {
    char *url, *node, *socket, *user, *password;
    uint64_t poll_ms, retry_max_ms;
    int64_t batch_rows;
    struct store *store;
    struct stats *stats;
    pthread_t thread;
    bool started;
    atomic_bool stop;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    struct cluster_ops ops;

    /* Jobs being deleted here (cluster_pull_hold()), under mu: a request is served (hold_ack
     * reaches hold_req) at the puller's next point between batches. */
    char (*held)[PULL_NAME_MAX];
    size_t n_held, cap_held;
    uint64_t hold_req, hold_ack;
    size_t hold_closed;          /* streams the last request served closed */

    /* Puller thread only. */
    CURL *curl;
    struct rb_buf answer;
    struct store_pull *sp;
    struct pull_stream **streams;
    size_t n_streams, cap_streams;
    struct pollfd *pf;           /* [cap_streams]: flush_origin()'s */
    struct pull_stream **ps;     /* [cap_streams] */
    char (*origins)[PULL_NAME_MAX];
    size_t n_origins, cap_origins;
    uint64_t backoff_ms;
    char last_err[CLUSTER_ERR_MAX];
    char sig[PULL_SIG_MAX];      /* the tables' signature when the last whole round began */
    ZSTD_DCtx *zctx;             /* decodes event_blocks' frames */
    char *raw;                   /* a block's lines, decoded */
    size_t raw_cap;
    uint64_t block_lines;        /* lines per block of the last read that had blocks (0: none) */
    int64_t full_at_ns;          /* when that was */
};

/* ---- small helpers ---- */

/* A hold request waits to be served. Under p->mu. */
static bool hold_asked(void *ud)
{
    const struct cluster_pull *p = ud;
    return p->hold_ack != p->hold_req;
}

static bool pull_nap(struct cluster_pull *p, uint64_t ms)
{
    return cluster__nap(&p->mu, &p->cond, &p->stop, ms, hold_asked, p);
}

/* A node name is what config accepts for `node`; anything else is never put in SQL. */
static bool node_name_ok(const char *s, size_t n)
{
    static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._:";
    if (n == 0 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!s[i] || !strchr(ok, s[i]))
            return false;
    return true;
}

/* ---- RowBinary answers ---- */

struct rb_reader {
    const unsigned char *p, *end;
    bool bad;
};

static uint64_t rd_fixed(struct rb_reader *r, size_t n)
{
    if (r->bad || (size_t)(r->end - r->p) < n) {
        r->bad = true;
        return 0;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)r->p[i] << (8 * i);
    r->p += n;
    return v;
}

static int64_t rd_i64(struct rb_reader *r) { return (int64_t)rd_fixed(r, 8); }
static uint64_t rd_u64(struct rb_reader *r) { return rd_fixed(r, 8); }
static double rd_f64(struct rb_reader *r)
{
    uint64_t bits = rd_fixed(r, 8);
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}
static uint32_t rd_u32(struct rb_reader *r) { return (uint32_t)rd_fixed(r, 4); }

/* A String: its bytes (into the answer) and length. */
static const char *rd_str(struct rb_reader *r, size_t *ret_n)
{
    uint64_t n = 0;
    for (int shift = 0; !r->bad; shift += 7) {
        if (r->p >= r->end || shift > 63) {
            r->bad = true;
            break;
        }
        unsigned char b = *r->p++;
        n |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            break;
    }
    if (r->bad || (uint64_t)(r->end - r->p) < n) {
        r->bad = true;
        *ret_n = 0;
        return "";
    }
    const char *s = (const char *)r->p;
    r->p += n;
    *ret_n = (size_t)n;
    return s;
}

/* ---- ClickHouse ---- */

static size_t on_answer(char *ptr, size_t size, size_t n, void *ud)
{
    struct rb_buf *b = ud;
    size_t len = size * n;
    if (b->len + len > PULL_ANSWER_MAX)
        return 0; /* an answer this large is refused: the batch is too big */
    rb_add(b, ptr, len);
    return b->err ? 0 : len;
}

/* Runs query (its answer in p->answer). Returns 0 or -1 with err set. */
static int ch_query(struct cluster_pull *p, const char *query, char *err)
{
    rb_reset(&p->answer);
    char cerr[CURL_ERROR_SIZE] = "";
    CURL *h = p->curl;
    curl_easy_setopt(h, CURLOPT_URL, p->url);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, query);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(query));
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
    CURLcode rc = curl_easy_perform(h);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
    if (rc != CURLE_OK) {
        snprintf(err, CLUSTER_ERR_MAX, "cannot read from ClickHouse: %s",
                 cerr[0] ? cerr : curl_easy_strerror(rc));
        return -1;
    }
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200) {
        const char *a = (const char *)p->answer.p;
        size_t len = a ? strcspn(a, "\r\n") : 0;
        if (len > p->answer.len)
            len = p->answer.len;
        snprintf(err, CLUSTER_ERR_MAX, "ClickHouse answered %ld: %.*s", status,
                 (int)(len > 300 ? 300 : len), a ? a : "");
        return -1;
    }
    return 0;
}

/* ---- streams ---- */

static struct pull_stream *stream_find(struct cluster_pull *p, const char *origin, size_t on,
                                       const char *job, size_t jn, int64_t rank)
{
    for (size_t i = 0; i < p->n_streams; i++) {
        struct pull_stream *s = p->streams[i];
        if (s->rank == rank && strlen(s->origin) == on && memcmp(s->origin, origin, on) == 0 &&
            strlen(s->job) == jn && memcmp(s->job, job, jn) == 0)
            return s;
    }
    return NULL;
}

static void stream_disconnect(struct pull_stream *s, bool bye)
{
    if (s->fd >= 0) {
        if (bye) {
            static const char b[] = "{\"type\":\"bye\"}\n";
            ssize_t w = send(s->fd, b, sizeof b - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
            (void)w;
        }
        close(s->fd);
    }
    s->fd = -1;
    s->in_len = 0;
}

static void stream_free(struct pull_stream *s)
{
    if (!s)
        return;
    stream_disconnect(s, false);
    sbuf_done(&s->out);
    free(s->hello);
    free(s);
}

/* Frees p->streams[i] and takes it out of the list. */
static void stream_remove(struct cluster_pull *p, size_t i)
{
    stream_free(p->streams[i]);
    p->streams[i] = p->streams[--p->n_streams];
}

/* Whether job is held (cluster_pull_hold()). Under p->mu. */
static bool job_held(const struct cluster_pull *p, const char *job)
{
    for (size_t k = 0; k < p->n_held; k++)
        if (strcmp(p->held[k], job) == 0)
            return true;
    return false;
}

/* Serves a hold request (cluster_pull_hold()), between batches (no stream has lines queued):
 * the streams of a held job are closed, with a bye, and held; the others are let go. */
static void serve_holds(struct cluster_pull *p)
{
    pthread_mutex_lock(&p->mu);
    if (p->hold_ack != p->hold_req) {
        size_t closed = 0;
        for (size_t i = 0; i < p->n_streams; i++) {
            struct pull_stream *s = p->streams[i];
            s->held = job_held(p, s->job);
            if (s->held && s->fd >= 0) {
                stream_disconnect(s, true);
                closed++;
            }
        }
        p->hold_closed = closed;
        p->hold_ack = p->hold_req;
        pthread_cond_broadcast(&p->cond);
    }
    pthread_mutex_unlock(&p->mu);
}

/* The origin's hello without "stream", "seq", "origin" and "capabilities" (the pulled session's
 * own are added at connect), as the members between the braces. NULL on OOM. */
static char *hello_members(const char *raw, size_t n, size_t *ret_len)
{
    struct sbuf b;
    sbuf_init(&b, n + 16);
    struct json_reader r;
    json_reader_init(&r, raw, n);
    bool first = true;
    if (json_object_begin(&r)) {
        char key[256];
        while (json_member(&r, key, sizeof key)) {
            json_peek(&r);
            const char *v = r.p;
            if (!json_skip(&r))
                break;
            if (strlen(key) >= sizeof key - 1 || !strcmp(key, "stream") || !strcmp(key, "seq") || !strcmp(key, "origin") ||
                !strcmp(key, "capabilities"))
                continue;
            if (!first)
                sbuf_addc(&b, ',');
            first = false;
            sbuf_json_strz(&b, key);
            sbuf_addc(&b, ':');
            sbuf_add(&b, v, (size_t)(r.p - v));
        }
    }
    if (b.error || r.bad || first) { /* no readable hello: none */
        sbuf_done(&b);
        *ret_len = 0;
        return strdup("");
    }
    return sbuf_steal(&b, ret_len);
}

/* The hello of a pulled stream when its origin's hello could not be read: from the columns. */
static char *hello_from_columns(const char *job, int64_t rank, int64_t world, size_t *ret_len)
{
    struct sbuf b;
    sbuf_init(&b, 4 * PULL_NAME_MAX);
    sbuf_adds(&b, "\"hello\":\"stepscope/1\",\"job\":");
    sbuf_json_strz(&b, job);
    sbuf_printf(&b, ",\"rank\":%" PRId64 ",\"world_size\":%" PRId64, rank,
                world > rank ? world : rank + 1);
    return sbuf_steal(&b, ret_len);
}

/* Connects s to the daemon's socket and sends its hello, numbering its lines from s->seq.
 * Returns 0 or -1 with err. */
static int stream_connect(struct cluster_pull *p, struct pull_stream *s, char *err)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", p->socket);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        snprintf(err, CLUSTER_ERR_MAX, "cannot reach this daemon's socket %s: %s", p->socket,
                 strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    struct sbuf b;
    sbuf_init(&b, s->hello_len + 4 * PULL_NAME_MAX);
    sbuf_addc(&b, '{');
    sbuf_add(&b, s->hello, s->hello_len);
    sbuf_adds(&b, ",\"stream\":");
    sbuf_printf(&b, "\"cluster:%s\"", s->origin);
    /* The first line that follows: the queued ones are numbered from it (never written on an
     * earlier connection: a failure rewinds them, rewind_origin()). */
    uint64_t first = s->seq - s->out_lines;
    sbuf_printf(&b, ",\"seq\":%" PRIu64 ",\"origin\":", first);
    sbuf_json_strz(&b, s->origin);
    sbuf_adds(&b, "}\n");
    int r = b.error ? -1 : 0;
    for (size_t off = 0; r == 0 && off < b.len;) {
        ssize_t w = send(fd, b.data + off, b.len - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            r = -1;
        else
            off += (size_t)w;
    }
    sbuf_done(&b);
    /* The welcome (or an error). */
    char line[1024];
    size_t n = 0;
    while (r == 0 && (n == 0 || line[n - 1] != '\n')) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int pr = poll(&pf, 1, 10000);
        if (pr <= 0) {
            r = -1;
            break;
        }
        ssize_t got = recv(fd, line + n, sizeof line - 1 - n, 0);
        if (got <= 0 || n + (size_t)got >= sizeof line - 1)
            r = -1;
        else
            n += (size_t)got;
    }
    if (r == 0) {
        line[n] = '\0';
        const char *ns = strstr(line, "\"next_seq\":");
        if (!strstr(line, "\"welcome\"") || !ns) {
            snprintf(err, CLUSTER_ERR_MAX, "this daemon refused pulled rank %" PRId64 " of %.64s "
                     "from %.64s: %.200s", s->rank, s->job, s->origin, line);
            close(fd);
            return -1;
        }
        uint64_t next = strtoull(ns + 11, NULL, 10);
        s->acked = next > first ? next : first; /* lines below next: the daemon holds them */
        if (strchr(line, '\n') + 1 != line + n) { /* nothing follows a welcome unasked */
            close(fd);
            snprintf(err, CLUSTER_ERR_MAX, "unexpected reply after the welcome");
            return -1;
        }
    } else {
        snprintf(err, CLUSTER_ERR_MAX, "no welcome from this daemon's socket %s", p->socket);
        close(fd);
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    s->fd = fd;
    s->in_len = 0;
    return 0;
}

/* Reads what the daemon answered on s: acks move s->acked; errors are logged. Returns 0, or -1
 * when the connection closed. */
static int stream_read(struct pull_stream *s)
{
    for (;;) {
        ssize_t got = recv(s->fd, s->in + s->in_len, sizeof s->in - 1 - s->in_len, 0);
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return -1;
        s->in_len += (size_t)got;
        s->in[s->in_len] = '\0';
        char *nl;
        while ((nl = strchr(s->in, '\n'))) {
            *nl = '\0';
            const char *a = strstr(s->in, "{\"ack\":");
            if (a) {
                uint64_t v = strtoull(a + 7, NULL, 10);
                if (v > s->acked)
                    s->acked = v;
            } else if (strstr(s->in, "\"error\"")) {
                log_warn("cluster view: this daemon refused a line pulled from %s (job %s, rank "
                         "%" PRId64 "): %.200s", s->origin, s->job, s->rank, s->in);
            }
            size_t used = (size_t)(nl + 1 - s->in);
            memmove(s->in, nl + 1, s->in_len - used + 1);
            s->in_len -= used;
        }
        if (s->in_len >= sizeof s->in - 1) /* a reply line this long is none of ours */
            s->in_len = 0;
    }
}

/* Writes every queued line of origin's streams and waits until the daemon acknowledged them.
 * Returns 0, or -1 with err (the streams are disconnected then). */
static int flush_origin(struct cluster_pull *p, const char *origin, char *err)
{
    int64_t progress_at = clock_mono_ns();
    for (;;) {
        if (atomic_load(&p->stop)) {
            snprintf(err, CLUSTER_ERR_MAX, "stopping");
            return -1;
        }
        struct pollfd *pf = p->pf;
        struct pull_stream **ps = p->ps;
        size_t n = 0;
        bool pending = false;
        for (size_t i = 0; i < p->n_streams; i++) {
            struct pull_stream *s = p->streams[i];
            if (strcmp(s->origin, origin) != 0 || s->conflict || s->held)
                continue;
            bool out = s->out_off < s->out.len;
            if (!out && s->acked >= s->seq)
                continue;
            pending = true;
            if (s->fd < 0 && stream_connect(p, s, err) < 0)
                return -1;
            pf[n] = (struct pollfd){.fd = s->fd, .events = POLLIN | (out ? POLLOUT : 0)};
            ps[n++] = s;
        }
        if (!pending)
            return 0;
        if (clock_mono_ns() - progress_at > PULL_ACK_TIMEOUT_NS) {
            snprintf(err, CLUSTER_ERR_MAX, "this daemon did not acknowledge the lines pulled "
                     "from %.64s", origin);
            return -1;
        }
        if (poll(pf, n, 100) < 0 && errno != EINTR) {
            snprintf(err, CLUSTER_ERR_MAX, "poll: %s", strerror(errno));
            return -1;
        }
        for (size_t i = 0; i < n; i++) {
            struct pull_stream *s = ps[i];
            if (pf[i].revents & POLLOUT) {
                ssize_t w = send(s->fd, s->out.data + s->out_off, s->out.len - s->out_off,
                                 MSG_NOSIGNAL | MSG_DONTWAIT);
                if (w > 0) {
                    s->out_off += (size_t)w;
                    progress_at = clock_mono_ns();
                }
            }
            if (pf[i].revents & (POLLIN | POLLHUP | POLLERR)) {
                uint64_t before = s->acked;
                if (stream_read(s) < 0) {
                    snprintf(err, CLUSTER_ERR_MAX, "this daemon closed the stream of rank %"
                             PRId64 " of %.64s pulled from %.64s", s->rank, s->job, origin);
                    return -1;
                }
                if (s->acked != before)
                    progress_at = clock_mono_ns();
            }
        }
    }
}

/* Forgets what the origin's streams sent since the last save (after a failure): they reconnect
 * and send again from their saved sequence numbers, and the daemon drops what it holds. */
static void rewind_origin(struct cluster_pull *p, const char *origin)
{
    for (size_t i = 0; i < p->n_streams; i++) {
        struct pull_stream *s = p->streams[i];
        if (strcmp(s->origin, origin) != 0)
            continue;
        stream_disconnect(s, false);
        s->seq = s->saved_seq;
        sbuf_reset(&s->out);
        s->out_off = 0;
        s->out_lines = 0;
    }
}

/* After the daemon acknowledged them: the cursor and the streams' numbers, saved together. */
static int save_origin(struct cluster_pull *p, const char *origin,
                       const struct store_pull_cursor *cur, char *err)
{
    struct store_pull_seq *seqs = calloc(p->n_streams ? p->n_streams : 1, sizeof *seqs);
    if (!seqs) {
        snprintf(err, CLUSTER_ERR_MAX, "out of memory");
        return -1;
    }
    size_t n = 0;
    for (size_t i = 0; i < p->n_streams; i++) {
        struct pull_stream *s = p->streams[i];
        if (strcmp(s->origin, origin) == 0 && s->seq != s->saved_seq)
            seqs[n++] = (struct store_pull_seq){s->job, s->rank, s->seq};
    }
    int r = store_pull_save(p->sp, origin, cur, seqs, n);
    free(seqs);
    if (r < 0) {
        snprintf(err, CLUSTER_ERR_MAX, "saving the pull cursor of %.64s: %s", origin, strerror(-r));
        return -1;
    }
    int64_t now = clock_mono_ns();
    for (size_t i = 0; i < p->n_streams; i++) {
        struct pull_stream *s = p->streams[i];
        if (strcmp(s->origin, origin) != 0)
            continue;
        STATS_ADD(p->stats, cluster_view_rows, s->out_lines);
        if (s->out_lines)
            s->used_ns = now;
        s->saved_seq = s->seq;
        sbuf_reset(&s->out);
        s->out_off = 0;
        s->out_lines = 0;
    }
    return 0;
}

/* Queues one line (without its '\n') on s. */
static void stream_line(struct pull_stream *s, const struct sbuf *line)
{
    sbuf_add(&s->out, line->data, line->len);
    sbuf_addc(&s->out, '\n');
    s->out_lines++;
    s->seq++;
}

/* ---- sessions ---- */

static int add_origin(struct cluster_pull *p, const char *origin)
{
    for (size_t i = 0; i < p->n_origins; i++)
        if (strcmp(p->origins[i], origin) == 0)
            return 0;
    if (p->n_origins == p->cap_origins) {
        size_t nc = p->cap_origins ? p->cap_origins * 2 : 8;
        void *v = realloc(p->origins, nc * sizeof *p->origins);
        if (!v)
            return -1;
        p->origins = v;
        p->cap_origins = nc;
    }
    snprintf(p->origins[p->n_origins++], PULL_NAME_MAX, "%s", origin);
    return 0;
}

/* Every node's sessions: the streams to pull, and which node's copy of a (job, rank) shipped by
 * more than one is kept (this node's own, else the one this daemon already holds, else the
 * first node by name). Returns 0 or -1 with err. */
static int pull_sessions(struct cluster_pull *p, char *err)
{
    static const char q[] =
        "SELECT node, job, rank, row, world_size, hello FROM stepscope.sessions FINAL "
        "ORDER BY job, rank, node, row FORMAT RowBinary";
    if (ch_query(p, q, err) < 0)
        return -1;
    struct rb_reader r = {p->answer.p, p->answer.p + p->answer.len, false};
    char kept[PULL_NAME_MAX] = "", kept_job[PULL_NAME_MAX] = "";
    int64_t kept_rank = -1;
    size_t self_len = strlen(p->node);
    while (r.p < r.end && !r.bad) {
        size_t nn, jn, hn;
        const char *node = rd_str(&r, &nn);
        const char *job = rd_str(&r, &jn);
        int64_t rank = rd_i64(&r);
        uint64_t row = rd_u64(&r);
        int64_t world = rd_i64(&r);
        const char *hello = rd_str(&r, &hn);
        if (r.bad)
            break;
        if (!node_name_ok(node, nn) || jn == 0 || jn >= PULL_NAME_MAX || rank < 0)
            continue;
        char jobz[PULL_NAME_MAX], nodez[PULL_NAME_MAX];
        memcpy(jobz, job, jn);
        jobz[jn] = '\0';
        memcpy(nodez, node, nn);
        nodez[nn] = '\0';
        if (strcmp(jobz, kept_job) != 0 || rank != kept_rank) {
            /* The first row of a (job, rank): who keeps it. */
            snprintf(kept_job, sizeof kept_job, "%s", jobz);
            kept_rank = rank;
            char holder[PULL_NAME_MAX];
            int o = store_pull_rank_origin(p->sp, jobz, rank, holder, sizeof holder);
            if (o == 0 && holder[0] == '\0')
                snprintf(kept, sizeof kept, "%s", p->node);
            else if (o == 0)
                snprintf(kept, sizeof kept, "%s", holder);
            else
                snprintf(kept, sizeof kept, "%s", nodez);
        }
        bool self = nn == self_len && memcmp(node, p->node, nn) == 0;
        bool conflict = strcmp(nodez, kept) != 0;
        if (conflict && store_pull_conflict(p->sp, jobz, rank, nodez, kept) < 0) {
            snprintf(err, CLUSTER_ERR_MAX, "recording a rank shipped twice: cannot write");
            return -1;
        }
        if (self)
            continue;
        struct pull_stream *s = stream_find(p, node, nn, job, jn, rank);
        if (!s) {
            if (p->n_streams == p->cap_streams) {
                size_t nc = p->cap_streams ? p->cap_streams * 2 : 64;
                void *v = realloc(p->streams, nc * sizeof *p->streams);
                if (v)
                    p->streams = v;
                void *f = v ? realloc(p->pf, nc * sizeof *p->pf) : NULL;
                if (f)
                    p->pf = f;
                void *sv = f ? realloc(p->ps, nc * sizeof *p->ps) : NULL;
                if (!sv)
                    goto oom;
                p->ps = sv;
                p->cap_streams = nc;
            }
            s = calloc(1, sizeof *s);
            if (!s)
                goto oom;
            snprintf(s->origin, sizeof s->origin, "%s", nodez);
            snprintf(s->job, sizeof s->job, "%s", jobz);
            s->rank = rank;
            s->fd = -1;
            s->session_row = UINT64_MAX;
            sbuf_init(&s->out, PULL_LINE_MAX);
            if (store_pull_stream_seq(p->sp, nodez, jobz, rank, &s->seq) < 0) {
                stream_free(s);
                snprintf(err, CLUSTER_ERR_MAX, "reading a pulled stream's number: cannot read");
                return -1;
            }
            s->saved_seq = s->seq;
            pthread_mutex_lock(&p->mu);
            s->held = job_held(p, s->job);
            pthread_mutex_unlock(&p->mu);
            p->streams[p->n_streams++] = s;
            if (add_origin(p, nodez) < 0)
                goto oom;
        }
        s->conflict = conflict;
        if (s->session_row != row) { /* the latest hello of the rank (rows come by row) */
            char *h = hello_members(hello, hn, &s->hello_len);
            if (h && !h[0]) {
                free(h);
                h = hello_from_columns(jobz, rank, world, &s->hello_len);
            }
            if (!h)
                goto oom;
            free(s->hello);
            s->hello = h;
            s->session_row = row;
        }
    }
    if (r.bad) {
        snprintf(err, CLUSTER_ERR_MAX, "ClickHouse's sessions answer is cut short");
        return -1;
    }
    return 0;
oom:
    snprintf(err, CLUSTER_ERR_MAX, "out of memory");
    return -1;
}

/* The nodes that shipped deletes are origins too, sessions or not: a node that deleted its every
 * job has none left in ClickHouse, and a viewer started since must still learn of its deletes.
 * Returns 0 or -1 with err. */
static int delete_origins(struct cluster_pull *p, char *err)
{
    static const char q[] = "SELECT DISTINCT node FROM stepscope.deletes FORMAT RowBinary";
    if (ch_query(p, q, err) < 0)
        return -1;
    struct rb_reader r = {p->answer.p, p->answer.p + p->answer.len, false};
    size_t self_len = strlen(p->node);
    while (r.p < r.end && !r.bad) {
        size_t nn;
        const char *node = rd_str(&r, &nn);
        if (r.bad || !node_name_ok(node, nn) || (nn == self_len && !memcmp(node, p->node, nn)))
            continue;
        char nodez[PULL_NAME_MAX];
        memcpy(nodez, node, nn);
        nodez[nn] = '\0';
        if (add_origin(p, nodez) < 0) {
            snprintf(err, CLUSTER_ERR_MAX, "out of memory");
            return -1;
        }
    }
    if (r.bad) {
        snprintf(err, CLUSTER_ERR_MAX, "ClickHouse's answer is cut short");
        return -1;
    }
    return 0;
}

/* ---- rows ---- */

/* pid and tid as ClickHouse keeps them (a number's text, or a string's bytes): a number again
 * when it reads as one. */
static void put_id(struct sbuf *b, const char *s, size_t n)
{
    size_t i = n > 0 && s[0] == '-' ? 1 : 0;
    bool num = n > i && n < 20;
    for (size_t k = i; k < n && num; k++)
        num = s[k] >= '0' && s[k] <= '9';
    if (num)
        sbuf_add(b, s, n);
    else
        sbuf_json_str(b, s, n);
}

enum pull_table { T_SPANS, T_STEPS, T_QUEUES, T_HOSTS, T_PIPES };

/* The lines of one stored block (an event_blocks row: codec, raw_bytes, data[0, n)) into
 * *ret_lines, *ret_n: data itself, or p->raw decoded. Returns 0, -1 (damaged: why set) or
 * -ENOMEM. */
static int decode_block(struct cluster_pull *p, unsigned codec, uint64_t raw_bytes,
                        const char *data, size_t n, const char **ret_lines, size_t *ret_n,
                        const char **why)
{
    if (codec == 0) { /* the lines as they are */
        if (raw_bytes != n) {
            *why = "raw size does not match";
            return -1;
        }
        *ret_lines = data;
        *ret_n = n;
        return 0;
    }
    if (codec != 1) {
        *why = "unknown codec";
        return -1;
    }
    unsigned long long framed = ZSTD_getFrameContentSize(data, n);
    if (raw_bytes == 0 || raw_bytes > PULL_BLOCK_RAW_MAX || framed != raw_bytes) {
        *why = framed == ZSTD_CONTENTSIZE_ERROR ? "not a zstd frame" : "raw size does not match";
        return -1;
    }
    if (!p->zctx && !(p->zctx = ZSTD_createDCtx()))
        return -ENOMEM;
    if (p->raw_cap < raw_bytes) {
        char *b = realloc(p->raw, (size_t)raw_bytes);
        if (!b)
            return -ENOMEM;
        p->raw = b;
        p->raw_cap = (size_t)raw_bytes;
    }
    size_t z = ZSTD_decompressDCtx(p->zctx, p->raw, (size_t)raw_bytes, data, n);
    if (ZSTD_isError(z) || z != raw_bytes) {
        *why = ZSTD_isError(z) ? "compressed data does not decode" : "raw size does not match";
        return -1;
    }
    *ret_lines = p->raw;
    *ret_n = z;
    return 0;
}

/* One batch of origin's rows of table past *cur: queued on their streams. Returns the rows read
 * (cur moved past them), or -1 with err; *full: whether the rest may hold more (read again). A
 * row of a (job, rank) whose session is not known yet ends the batch before it (it is read again
 * once the session is). */
static int64_t pull_batch(struct cluster_pull *p, const char *origin, enum pull_table t,
                          struct store_pull_cursor *cur, bool *full, char *err)
{
    char q[8192];
    /* Stored blocks read at once: about batch_rows lines' worth. */
    int64_t kblocks = PULL_BLOCKS_FIRST;
    if (p->block_lines)
        kblocks = p->batch_rows / (int64_t)p->block_lines;
    kblocks = kblocks < 1 ? 1 : kblocks > PULL_BLOCKS_MAX ? PULL_BLOCKS_MAX : kblocks;
    /* The query's pieces: origin's rows past the cursor, by (block, idx) or, for a stored block,
     * by (block, its last line's idx); below the kblocks-th block of event_blocks past it. */
    char node[PULL_NAME_MAX + 16], after[160], after_blk[160], lim[PULL_NAME_MAX + 256];
    snprintf(node, sizeof node, "node = '%s'", origin);
    snprintf(after, sizeof after, "(block > %" PRId64 " OR (block = %" PRId64 " AND idx > %" PRId64
             "))", cur->block, cur->block, cur->idx);
    snprintf(after_blk, sizeof after_blk, "(block > %" PRId64 " OR (block = %" PRId64
             " AND lines - 1 > %" PRId64 "))", cur->block, cur->block, cur->idx);
    snprintf(lim, sizeof lim,
             "block <= (SELECT if(count() < %" PRId64 ", 18446744073709551615, max(block)) FROM "
             "(SELECT block FROM stepscope.event_blocks WHERE %s AND block > %" PRId64
             " ORDER BY block LIMIT %" PRId64 "))", kblocks, node, cur->block, kblocks);
    switch (t) {
    case T_SPANS:
        /* Every line origin stored (verbatim, args and all phases), in (block, idx) order, each
         * block from the first of: its event_blocks row (kind 2: the block whole, its idx that
         * of its last line), its events rows (kind 1: a line each; a node of 0004 or 0005), its
         * spans rebuilt from the columns (kind 0; a node older than 0004: no lines anywhere).
         * A node inserts a batch's lines before its spans, so a block whose spans are seen
         * already has its lines when it has any. The read stops at the kblocks-th block of
         * event_blocks past the cursor (the blocks hold thousands of lines each). */
        snprintf(q, sizeof q,
                 "SELECT job, rank, kind, line, codec, raw_bytes, ts_ns, dur_ns, ph, name, cat, "
                 "pid, tid, block, idx FROM ("
                 "SELECT job, rank, toUInt8(2) AS kind, data AS line, codec, raw_bytes, "
                 "toInt64(0) AS ts_ns, toInt64(0) AS dur_ns, '' AS ph, '' AS name, '' AS cat, "
                 "'' AS pid, '' AS tid, block, toUInt32(lines - 1) AS idx "
                 "FROM stepscope.event_blocks WHERE %s AND %s AND %s UNION ALL "
                 "SELECT job, rank, toUInt8(1) AS kind, line, toUInt8(0) AS codec, "
                 "toUInt64(0) AS raw_bytes, toInt64(0) AS ts_ns, toInt64(0) AS dur_ns, '' AS ph, "
                 "'' AS name, '' AS cat, '' AS pid, '' AS tid, block, idx FROM stepscope.events "
                 "WHERE %s AND %s AND %s AND block NOT IN (SELECT block FROM "
                 "stepscope.event_blocks WHERE %s AND block >= %" PRId64 ") UNION ALL "
                 "SELECT job, rank, toUInt8(0) AS kind, '' AS line, toUInt8(0) AS codec, "
                 "toUInt64(0) AS raw_bytes, ts_ns, dur_ns, ph, name, cat, pid, tid, block, idx "
                 "FROM stepscope.spans WHERE %s AND %s AND %s AND block NOT IN (SELECT block FROM "
                 "stepscope.events WHERE %s AND block >= %" PRId64 ") AND block NOT IN (SELECT "
                 "block FROM stepscope.event_blocks WHERE %s AND block >= %" PRId64 ")"
                 ") ORDER BY block, idx LIMIT %" PRId64 " FORMAT RowBinary",
                 node, after_blk, lim, node, after, lim, node, cur->block, node, after, lim, node,
                 cur->block, node, cur->block, p->batch_rows);
        break;
    default: {
        /* The row-keyed tables: their columns in the order the reader below takes them, past
         * the cursor's row id for the table. */
        static const struct {
            const char *cols, *table;
        } rowt[] = {
            [T_STEPS] = {"step, begin_ns, end_ns, samples, phases", "steps"},
            [T_QUEUES] = {"ts_ns, step, name, size, capacity", "queue_samples"},
            [T_HOSTS] = {"ts_ns, cpu_percent, sys_cpu_percent, rss_bytes", "host_samples"},
            [T_PIPES] = {"json", "pipelines"},
        };
        int64_t past = t == T_STEPS ? cur->step : t == T_QUEUES ? cur->queue
                     : t == T_HOSTS ? cur->host : cur->pipe;
        snprintf(q, sizeof q,
                 "SELECT job, rank, %s, row FROM stepscope.%s WHERE node = '%s' AND row > %" PRId64
                 " ORDER BY row LIMIT %" PRId64 " FORMAT RowBinary",
                 rowt[t].cols, rowt[t].table, origin, past, p->batch_rows);
        break;
    }
    }
    if (ch_query(p, q, err) < 0)
        return -1;
    struct rb_reader r = {p->answer.p, p->answer.p + p->answer.len, false};
    struct sbuf line;
    sbuf_init(&line, PULL_LINE_MAX);
    int64_t rows = 0, answered = 0, answered_blocks = 0, blocks = 0;
    uint64_t block_lines = 0;
    size_t on = strlen(origin);
    bool no_session = false, stream_full = false; /* why rows were left for the next read */
    int ret = 0;
    while (r.p < r.end && !r.bad) {
        size_t jn;
        const char *job = rd_str(&r, &jn);
        int64_t rank = rd_i64(&r);
        sbuf_reset(&line);
        struct store_pull_cursor next = *cur;
        const char *blob = NULL; /* a stored block's data (kind 2) */
        size_t blob_n = 0;
        unsigned codec = 0;
        uint64_t raw_bytes = 0;
        if (t == T_SPANS) {
            unsigned kind = (unsigned)rd_fixed(&r, 1);
            size_t ln;
            const char *verbatim = rd_str(&r, &ln);
            codec = (unsigned)rd_fixed(&r, 1);
            raw_bytes = rd_u64(&r);
            int64_t ts = rd_i64(&r), dur = rd_i64(&r);
            size_t phn, nn, cn, pn, tn;
            const char *ph = rd_str(&r, &phn), *name = rd_str(&r, &nn), *cat = rd_str(&r, &cn);
            const char *pid = rd_str(&r, &pn), *tid = rd_str(&r, &tn);
            next.block = (int64_t)rd_u64(&r);
            next.idx = rd_u32(&r);
            if (kind == 2) { /* a stored block, its lines queued below */
                blob = verbatim;
                blob_n = ln;
            } else if (kind == 1) { /* the line as origin stored it */
                sbuf_add(&line, verbatim, ln);
            } else { /* a span of a node older than 0004_events: rebuilt from the columns */
                sbuf_adds(&line, "{\"ph\":");
                sbuf_json_str(&line, ph, phn);
                sbuf_adds(&line, ",\"name\":");
                sbuf_json_str(&line, name, nn);
                if (cn) {
                    sbuf_adds(&line, ",\"cat\":");
                    sbuf_json_str(&line, cat, cn);
                }
                if (pn) {
                    sbuf_adds(&line, ",\"pid\":");
                    put_id(&line, pid, pn);
                }
                if (tn) {
                    sbuf_adds(&line, ",\"tid\":");
                    put_id(&line, tid, tn);
                }
                sbuf_adds(&line, ",\"ts\":");
                sbuf_json_us(&line, ts);
                if (phn == 1 && ph[0] == 'X') {
                    sbuf_adds(&line, ",\"dur\":");
                    sbuf_json_us(&line, dur);
                }
                sbuf_addc(&line, '}');
            }
        } else if (t == T_STEPS) {
            int64_t step = rd_i64(&r), begin = rd_i64(&r), end = rd_i64(&r);
            int64_t samples = rd_i64(&r);
            size_t phn;
            const char *phases = rd_str(&r, &phn);
            next.step = (int64_t)rd_u64(&r);
            sbuf_printf(&line, "{\"type\":\"step\",\"step\":%" PRId64 ",\"begin_us\":", step);
            sbuf_json_us(&line, begin);
            sbuf_adds(&line, ",\"end_us\":");
            sbuf_json_us(&line, end);
            if (samples >= 0)
                sbuf_printf(&line, ",\"samples\":%" PRId64, samples);
            if (phn) {
                sbuf_adds(&line, ",\"phases\":");
                sbuf_add(&line, phases, phn);
            }
            sbuf_addc(&line, '}');
        } else if (t == T_HOSTS) {
            int64_t ts = rd_i64(&r);
            double cpu = rd_f64(&r), sys = rd_f64(&r);
            int64_t rss = rd_i64(&r);
            next.host = (int64_t)rd_u64(&r);
            sbuf_adds(&line, "{\"type\":\"host\",\"ts_us\":");
            sbuf_json_us(&line, ts);
            sbuf_printf(&line, ",\"cpu_percent\":%.17g,\"sys_cpu_percent\":%.17g", cpu, sys);
            sbuf_printf(&line, ",\"rss_bytes\":%" PRId64 "}", rss);
        } else if (t == T_PIPES) { /* the record as origin stored it */
            size_t ln;
            const char *json = rd_str(&r, &ln);
            next.pipe = (int64_t)rd_u64(&r);
            sbuf_add(&line, json, ln);
        } else {
            int64_t ts = rd_i64(&r), step = rd_i64(&r);
            size_t nn;
            const char *name = rd_str(&r, &nn);
            int64_t size = rd_i64(&r), cap = rd_i64(&r);
            next.queue = (int64_t)rd_u64(&r);
            sbuf_adds(&line, "{\"type\":\"queue\",\"name\":");
            sbuf_json_str(&line, name, nn);
            sbuf_printf(&line, ",\"size\":%" PRId64, size);
            if (cap >= 0)
                sbuf_printf(&line, ",\"capacity\":%" PRId64, cap);
            if (step >= 0)
                sbuf_printf(&line, ",\"step\":%" PRId64, step);
            sbuf_adds(&line, ",\"ts_us\":");
            sbuf_json_us(&line, ts);
            sbuf_addc(&line, '}');
        }
        if (r.bad)
            break;
        answered++;
        answered_blocks += blob != NULL;
        /* A row inserted twice (a retried batch: ReplacingMergeTree collapses it only at a
         * merge) comes twice, side by side in identity order: taken once. Reading without FINAL
         * spares ClickHouse a merge of the whole table at each read (18.16: seconds). */
        bool dup = rows > 0 && next.block == cur->block && next.idx == cur->idx &&
                   next.step == cur->step && next.queue == cur->queue &&
                   next.host == cur->host && next.pipe == cur->pipe;
        struct pull_stream *s = dup ? NULL : stream_find(p, origin, on, job, jn, rank);
        if (!s && !dup) {
            no_session = true;
            break; /* its session is not here yet: this row and the rest come next round */
        }
        if (blob && !dup) {
            if (s->out.len + raw_bytes > PULL_LINE_MAX && rows > 0) {
                stream_full = true; /* the stream's batch is full: this block comes next read */
                break;
            }
            const char *lines = NULL, *why = NULL;
            size_t n = 0;
            int d = decode_block(p, codec, raw_bytes, blob, blob_n, &lines, &n, &why);
            if (d == -ENOMEM) {
                ret = -1;
                snprintf(err, CLUSTER_ERR_MAX, "out of memory");
                break;
            }
            if (d < 0) /* not fed, never read again: said, as a damaged block of the store */
                log_warn("cluster view: block %" PRId64 " (job %.*s, rank %" PRId64
                         ") from %s is damaged (%s): its lines are left out", next.block,
                         (int)jn, job, rank, origin, why);
            uint64_t idx = 0;
            for (size_t pos = 0; d == 0 && pos < n; idx++) {
                const char *nl = memchr(lines + pos, '\n', n - pos);
                size_t len = nl ? (size_t)(nl - (lines + pos)) : n - pos;
                /* The lines of a block partly fed as events rows before are not fed twice. */
                if (!s->conflict && !s->held &&
                    (next.block != cur->block || (int64_t)idx > cur->idx)) {
                    sbuf_add(&s->out, lines + pos, len);
                    sbuf_addc(&s->out, '\n');
                    s->out_lines++;
                    s->seq++;
                }
                pos += len + 1;
            }
            blocks++;
            block_lines += idx;
        } else if (!dup && !s->conflict && !s->held) { /* held: being deleted here */
            stream_line(s, &line);
        }
        if (line.error || (s && s->out.error)) {
            ret = -1;
            snprintf(err, CLUSTER_ERR_MAX, "out of memory");
            break;
        }
        *cur = next;
        rows++;
    }
    sbuf_done(&line);
    if (ret < 0)
        return -1;
    if (r.bad) {
        snprintf(err, CLUSTER_ERR_MAX, "ClickHouse's answer is cut short");
        return -1;
    }
    if (blocks > 0)
        p->block_lines = block_lines / (uint64_t)blocks ? block_lines / (uint64_t)blocks : 1;
    /* More to read now: the read was cut at its row limit or its block limit, or by a full
     * stream; not when a session is missing (read next round, once it is there). */
    *full = !no_session && (stream_full || answered == p->batch_rows || answered_blocks >= kblocks);
    return rows;
}

/* ---- jobs deleted on their node ---- */

/* The last delete origin shipped (stepscope.deletes: its ship_deletes id; 0: none) into *ret.
 * Returns 0 or -1 with err. */
static int last_delete(struct cluster_pull *p, const char *origin, int64_t *ret, char *err)
{
    char q[256];
    snprintf(q, sizeof q, "SELECT max(id) FROM stepscope.deletes WHERE node = '%s' "
             "FORMAT RowBinary", origin);
    if (ch_query(p, q, err) < 0)
        return -1;
    struct rb_reader r = {p->answer.p, p->answer.p + p->answer.len, false};
    *ret = rd_i64(&r);
    if (r.bad) {
        snprintf(err, CLUSTER_ERR_MAX, "ClickHouse's answer is cut short");
        return -1;
    }
    return 0;
}

/* Deletes here the ranks of job pulled from origin (origin deleted the job): the job's pulled
 * streams, of every node, are closed first (live drops only a job without a connected session;
 * those of other nodes reconnect with their next rows), then the daemon deletes the ranks
 * (cluster_ops.drop_ranks; the job with them when it has no other). Returns 0, 1 when a session
 * of the job is still open (a trainer of this node: again next round), or -1 with err. */
static int drop_job_ranks(struct cluster_pull *p, const char *origin, const char *job, char *err)
{
    for (size_t i = p->n_streams; i-- > 0;) {
        struct pull_stream *s = p->streams[i];
        if (strcmp(s->job, job) != 0)
            continue;
        if (strcmp(s->origin, origin) == 0) /* its sessions are gone from ClickHouse too */
            stream_remove(p, i);
        else
            stream_disconnect(s, true);
    }
    int64_t *ranks = NULL;
    size_t n = 0, others = 0;
    if (store_pull_job_ranks(p->sp, job, origin, &ranks, &n, &others) < 0) {
        snprintf(err, CLUSTER_ERR_MAX, "reading the ranks of %.64s: cannot read", job);
        return -1;
    }
    int r = 0;
    /* The sessions end as the daemon reads the closes: a few tries. */
    for (int k = 0; n > 0 && p->ops.drop_ranks && k < 30; k++) {
        r = p->ops.drop_ranks(p->ops.ud, job, ranks, n, others == 0);
        serve_holds(p); /* (a hold asked cuts the naps short) */
        if (r != -EBUSY || pull_nap(p, 100))
            break;
    }
    free(ranks);
    if (r == -EBUSY)
        return 1;
    if (r < 0 && r != -ENOENT) {
        snprintf(err, CLUSTER_ERR_MAX, "deleting the ranks of %.64s pulled from %.64s: %s", job,
                 origin, strerror(-r));
        return -1;
    }
    if (n > 0)
        log_info("cluster view: job %s deleted on node %s: its %zu rank%s from there deleted here%s",
                 job, origin, n, n == 1 ? "" : "s", others ? "" : ", and the job with them");
    return 0;
}

static void lower(int64_t *v, int64_t to)
{
    if (*v > to)
        *v = to;
}

/* The jobs origin deleted past cur->del (stepscope.deletes, cluster.c carry_out_deletes()), in
 * order: each one's pulled ranks deleted here, and cur brought down to origin's cursor after it,
 * saved. Only once ClickHouse ran every mutation (ALTER ... DELETE) of the stepscope tables: the
 * rows past the lowered cursor are then the ones origin committed after the delete, not the
 * deleted ones. Returns 0 (*ret_wait: try again next round, nothing more of origin read this
 * round), or -1 with err. */
static int apply_deletes(struct cluster_pull *p, const char *origin, struct store_pull_cursor *cur,
                         bool *ret_wait, char *err)
{
    *ret_wait = false;
    char q[512];
    snprintf(q, sizeof q, "SELECT id, job, last_block, last_step, last_queue, last_host, "
             "last_pipe FROM stepscope.deletes WHERE node = '%s' AND id > %" PRId64
             " ORDER BY id FORMAT RowBinary", origin, cur->del);
    if (ch_query(p, q, err) < 0)
        return -1;
    if (p->answer.len == 0)
        return 0;
    static const char mq[] = "SELECT count() FROM system.mutations WHERE database = 'stepscope' "
                             "AND NOT is_done FORMAT TabSeparated";
    struct rb_buf rows = {0}; /* the answer, kept: the queries below reuse p->answer */
    rb_add(&rows, p->answer.p, p->answer.len);
    int r = rows.err ? -1 : ch_query(p, mq, err);
    if (rows.err)
        snprintf(err, CLUSTER_ERR_MAX, "out of memory");
    if (r == 0 && !(p->answer.len >= 1 && p->answer.p[0] == '0' &&
                    (p->answer.len == 1 || p->answer.p[1] == '\n'))) {
        *ret_wait = true; /* a mutation still running: its rows may still be there */
        rb_free(&rows);
        return 0;
    }
    struct rb_reader rd = {rows.p, rows.p + rows.len, false};
    while (r == 0 && rd.p < rd.end) {
        int64_t id = rd_i64(&rd);
        size_t jn;
        const char *jobp = rd_str(&rd, &jn);
        int64_t block = rd_i64(&rd), step = rd_i64(&rd), queue = rd_i64(&rd);
        int64_t host = rd_i64(&rd), pipe = rd_i64(&rd);
        if (rd.bad) {
            snprintf(err, CLUSTER_ERR_MAX, "ClickHouse's answer is cut short");
            r = -1;
            break;
        }
        if (id <= cur->del || jn == 0 || jn >= PULL_NAME_MAX)
            continue; /* a row inserted twice (side by side: taken once), or no job of ours */
        char job[PULL_NAME_MAX];
        memcpy(job, jobp, jn);
        job[jn] = '\0';
        r = drop_job_ranks(p, origin, job, err);
        if (r == 1) {
            *ret_wait = true;
            r = 0;
            break;
        }
        if (r < 0)
            break;
        /* Origin's later rows take the rowids past its cursor after the delete: from there. */
        struct store_pull_cursor next = *cur;
        if (next.block > block || (next.block == block && next.idx > UINT32_MAX)) {
            next.block = block;
            next.idx = UINT32_MAX; /* block itself was fed whole */
        }
        lower(&next.step, step);
        lower(&next.queue, queue);
        lower(&next.host, host);
        lower(&next.pipe, pipe);
        next.del = id;
        if (store_pull_save(p->sp, origin, &next, NULL, 0) < 0) {
            snprintf(err, CLUSTER_ERR_MAX, "saving the pull cursor of %.64s: cannot write", origin);
            r = -1;
            break;
        }
        *cur = next;
    }
    rb_free(&rows);
    return r;
}

/* Everything origin shipped past its cursor, a batch of one table at a time, after the jobs it
 * deleted. Returns 0 or -1. */
static int pull_origin(struct cluster_pull *p, const char *origin, char *err)
{
    struct store_pull_cursor cur;
    if (store_pull_cursor(p->sp, origin, &cur) < 0) {
        snprintf(err, CLUSTER_ERR_MAX, "reading the pull cursor of %.64s: cannot read", origin);
        return -1;
    }
    bool wait;
    if (apply_deletes(p, origin, &cur, &wait, err) < 0)
        return -1;
    if (wait)
        return 0;
    for (enum pull_table t = T_SPANS; t <= T_PIPES; t++) {
        for (;;) {
            if (atomic_load(&p->stop))
                return 0;
            serve_holds(p);
            struct store_pull_cursor next = cur;
            bool full = false;
            int64_t n = pull_batch(p, origin, t, &next, &full, err);
            /* A delete origin shipped while the batch was read: its rows past the cursor may be
             * from after it, which the delete's lowered cursor reads again. Dropped: the next
             * round carries the delete out first. */
            int64_t del = cur.del;
            if (n > 0 && last_delete(p, origin, &del, err) < 0)
                n = -1;
            if (n > 0 && del > cur.del) {
                rewind_origin(p, origin);
                return 0;
            }
            if (n < 0 || (n > 0 && flush_origin(p, origin, err) < 0) ||
                (n > 0 && save_origin(p, origin, &next, err) < 0)) {
                rewind_origin(p, origin);
                return -1;
            }
            cur = next;
            if (!full)
                break;
        }
    }
    return 0;
}

/* Streams without rows for a while are closed (their sessions end: the rank is not live). */
static void close_idle(struct cluster_pull *p)
{
    int64_t now = clock_mono_ns();
    for (size_t i = 0; i < p->n_streams; i++) {
        struct pull_stream *s = p->streams[i];
        if (s->fd >= 0 && now - s->used_ns > PULL_IDLE_CLOSE_NS)
            stream_disconnect(s, true);
    }
}

/* The stepscope tables' active parts, as one text: (parts, rows, last modification) per table.
 * Any insert changes it (a new part), so a round that finds the signature its last whole round
 * began with has nothing new to read, and skips the tables' scans;
 * a merge changes it too (a harmless extra round), and a round reads everything at least every
 * PULL_FULL_NS whatever the signature says. Returns 0 with sig set, or -1 with err. */
static int parts_signature(struct cluster_pull *p, char *sig, char *err)
{
    static const char q[] =
        "SELECT table, count(), sum(rows), max(modification_time) FROM system.parts "
        "WHERE database = 'stepscope' AND active GROUP BY table ORDER BY table "
        "FORMAT TabSeparated";
    if (ch_query(p, q, err) < 0)
        return -1;
    size_t n = p->answer.len < PULL_SIG_MAX - 1 ? p->answer.len : PULL_SIG_MAX - 1;
    memcpy(sig, p->answer.p ? (const char *)p->answer.p : "", n);
    sig[n] = '\0';
    return 0;
}

static void *pull_main(void *arg)
{
    struct cluster_pull *p = arg;
    char err[CLUSTER_ERR_MAX];
    while (!atomic_load(&p->stop)) {
        serve_holds(p);
        int r = 0;
        if (!p->sp) {
            char serr[STORE_ERR_MAX];
            r = store_pull_open(p->store, &p->sp, serr);
            if (r < 0)
                snprintf(err, sizeof err, "%s", serr);
        }
        char sig[PULL_SIG_MAX];
        if (r == 0)
            r = parts_signature(p, sig, err);
        bool idle = r == 0 && strcmp(sig, p->sig) == 0 &&
                    clock_mono_ns() - p->full_at_ns < PULL_FULL_NS;
        int64_t began = clock_mono_ns();
        if (r == 0 && !idle)
            r = pull_sessions(p, err);
        if (r == 0 && !idle)
            r = delete_origins(p, err);
        for (size_t i = 0; r == 0 && !idle && i < p->n_origins && !atomic_load(&p->stop); i++)
            r = pull_origin(p, p->origins[i], err);
        if (r == 0 && !idle && !atomic_load(&p->stop)) { /* a whole round: its signature holds */
            memcpy(p->sig, sig, sizeof sig);
            p->full_at_ns = began;
        }
        if (r < 0) {
            p->backoff_ms = p->backoff_ms ? p->backoff_ms * 2 : 250;
            if (p->backoff_ms > p->retry_max_ms)
                p->backoff_ms = p->retry_max_ms;
            if (strcmp(err, p->last_err) != 0 || p->backoff_ms == p->retry_max_ms)
                log_warn("cluster view: %s (retrying in %" PRIu64 " ms)", err, p->backoff_ms);
            snprintf(p->last_err, sizeof p->last_err, "%s", err);
            STATS_SET(p->stats, cluster_view_failing, 1);
            stats_note_set(&p->stats->cluster_view_last_error, err);
            if (pull_nap(p, p->backoff_ms))
                break;
            continue;
        }
        if (p->backoff_ms)
            log_info("cluster view: reading from ClickHouse again");
        p->backoff_ms = 0;
        p->last_err[0] = '\0';
        STATS_SET(p->stats, cluster_view_failing, 0);
        close_idle(p);
        if (pull_nap(p, p->poll_ms))
            break;
    }
    for (size_t i = 0; i < p->n_streams; i++)
        stream_disconnect(p->streams[i], true);
    return NULL;
}

/* ---- start and stop ---- */

static void pull_free(struct cluster_pull *p)
{
    for (size_t i = 0; i < p->n_streams; i++)
        stream_free(p->streams[i]);
    free(p->streams);
    free(p->pf);
    free(p->ps);
    free(p->origins);
    free(p->held);
    rb_free(&p->answer);
    ZSTD_freeDCtx(p->zctx);
    free(p->raw);
    if (p->curl)
        curl_easy_cleanup(p->curl);
    store_pull_close(p->sp);
    free(p->url);
    free(p->node);
    free(p->socket);
    if (p->password) {
        explicit_bzero(p->password, strlen(p->password));
        free(p->password);
    }
    free(p->user);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cond);
    free(p);
}

int cluster_pull_start(const struct cluster_config *cfg, const char *socket_path,
                       struct cluster_pull **ret, char *err)
{
    struct cluster_pull *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, CLUSTER_ERR_MAX, "out of memory");
        return -ENOMEM;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cond, NULL);
    p->url = strdup(cfg->url);
    p->node = strdup(cfg->node);
    p->socket = strdup(socket_path);
    p->user = strdup(cfg->user ? cfg->user : "");
    p->password = strdup(cfg->password ? cfg->password : "");
    p->poll_ms = cfg->poll_ms ? cfg->poll_ms : 500;
    p->retry_max_ms = cfg->retry_max_ms > 250 ? cfg->retry_max_ms : 250;
    p->batch_rows = cfg->batch_rows && cfg->batch_rows < PULL_BATCH_MAX ? (int64_t)cfg->batch_rows
                                                                       : PULL_BATCH_MAX;
    p->store = cfg->store;
    p->stats = cfg->stats;
    p->ops = cfg->ops;
    p->curl = curl_easy_init();
    if (!p->url || !p->node || !p->socket || !p->user || !p->password || !p->curl) {
        pull_free(p);
        snprintf(err, CLUSTER_ERR_MAX, "out of memory");
        return -ENOMEM;
    }
    cluster__curl_setup(p->curl, 3000L, 120000L, on_answer, &p->answer, &p->stop, p->user,
                        p->password);
    if (pthread_create(&p->thread, NULL, pull_main, p) != 0) {
        pull_free(p);
        snprintf(err, CLUSTER_ERR_MAX, "cannot start the cluster view's thread");
        return -ENOMEM;
    }
    p->started = true;
    STATS_SET(p->stats, cluster_view_enabled, 1);
    *ret = p;
    return 0;
}

void cluster_pull_stop(struct cluster_pull *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, true);
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->mu);
    if (p->started)
        pthread_join(p->thread, NULL);
    pull_free(p);
}

int cluster_pull_hold(struct cluster_pull *p, const char *job, bool hold)
{
    int r = 0;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 10;
    pthread_mutex_lock(&p->mu);
    size_t k = 0;
    while (k < p->n_held && strcmp(p->held[k], job) != 0)
        k++;
    if (hold && k == p->n_held) {
        void *v = p->held;
        if (util_grow(&v, &p->cap_held, p->n_held + 1, sizeof *p->held) < 0) {
            pthread_mutex_unlock(&p->mu);
            return -ENOMEM;
        }
        p->held = v;
        snprintf(p->held[p->n_held++], PULL_NAME_MAX, "%s", job);
    } else if (!hold && k < p->n_held) {
        memmove(p->held[k], p->held[k + 1], (p->n_held - k - 1) * sizeof *p->held);
        p->n_held--;
    }
    uint64_t want = ++p->hold_req;
    pthread_cond_broadcast(&p->cond);
    while (p->hold_ack < want && !atomic_load(&p->stop) && r == 0)
        if (pthread_cond_timedwait(&p->cond, &p->mu, &ts) == ETIMEDOUT && p->hold_ack < want)
            r = -ETIMEDOUT;
    if (r == 0)
        r = hold ? (int)p->hold_closed : 0;
    pthread_mutex_unlock(&p->mu);
    return r;
}
