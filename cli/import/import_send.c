/* SPDX-License-Identifier: MIT */
/*
 * import, pass 2 (import_int.h): each input's lines sent in one session (proto_client.h): from
 * pass 1's temporary file with sendfile(2), in torch's order where the file has them otherwise
 * (span_order.h), from memory for converted MindSpore and Paddle protobuf inputs, or, when no
 * temporary file could hold them, read and scanned again; from the welcome's next_seq, so an
 * import whose connection broke resumes where the daemon's durable state ends, on the next
 * attempt (IMPORT_ATTEMPTS, with backoff) or the next run.
 */
#include "import_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "import.h"
#include "line_spool.h"
#include "proto_client.h"
#include "sbuf.h"
#include "span_order.h"
#include "trace_file.h"

#define IMPORT_ERRORS_SHOWN 10    /* daemon errors printed per file; the rest are counted */
#define IMPORT_ATTEMPTS 6         /* sessions tried per file when connections break */

struct session_ctx {
    struct input *in;
    uint64_t shown;
};

static void on_daemon_error(void *ud, int64_t seq, int64_t line, const char *code,
                            const char *message)
{
    struct session_ctx *ctx = ud;
    ctx->in->n_rejected++;
    if (ctx->shown++ < IMPORT_ERRORS_SHOWN)
        fprintf(stderr, "stepscope import: %s: the daemon rejected event #%lld (line %lld): %s: %s\n",
                ctx->in->arg, (long long)seq, (long long)line, code, message);
}

enum outcome {
    OUT_DONE,         /* every line acked */
    OUT_UNREACHABLE,  /* could not connect */
    OUT_REFUSED,      /* hello refused */
    OUT_BROKEN,       /* the session broke after its welcome: worth another attempt */
    OUT_INPUT,        /* the file changed or failed on the second read */
};

#define RUN_FILE_MIN (64u << 10) /* runs this long go by sendfile(); shorter ones are copied */
#define RUN_WINDOW RUN_FILE_MIN  /* bytes of the spool read at a time for the short runs */
#define RUN_WINDOWS 16           /* windows kept, one per spool region being sent from */

/* The spooled lines are in->spool's bytes, then in->spool2's (pass 1 in two halves): one byte
 * range, [0, spooled_bytes()), of which spooled_piece() tells the file and offset. */
static uint64_t spooled_bytes(const struct input *in)
{
    return spool_bytes(in->spool) + (in->spool2 ? spool_bytes(in->spool2) : 0);
}

/* Byte off of the spooled lines: *ret_fd, the offset there, and how many bytes follow in that
 * file. */
static void spooled_piece(const struct input *in, uint64_t off, int *ret_fd, uint64_t *ret_off,
                          uint64_t *ret_avail)
{
    uint64_t first = spool_bytes(in->spool);
    if (off < first || !in->spool2) {
        *ret_fd = spool_fd(in->spool);
        *ret_off = off;
        *ret_avail = off < first ? first - off : 0;
    } else {
        *ret_fd = spool_fd(in->spool2);
        *ret_off = off - first;
        *ret_avail = off - first < spool_bytes(in->spool2) ? spool_bytes(in->spool2) - (off - first)
                                                           : 0;
    }
}

/* Where line (0-based) of the spooled lines starts. Returns 0 or as spool_line_offset(). */
static int spooled_line_offset(const struct input *in, uint64_t line, uint64_t *ret_off)
{
    uint64_t n1 = spool_lines(in->spool);
    if (!in->spool2 || line <= n1)
        return spool_line_offset(in->spool, line, ret_off);
    int r = spool_line_offset(in->spool2, line - n1, ret_off);
    *ret_off += spool_bytes(in->spool);
    return r;
}

/* Sends the spooled bytes [off, off + len) with sendfile(). Returns 0 or as client_send_file(). */
static int send_spooled(struct client *c, const struct input *in, uint64_t off, uint64_t len,
                        char *err)
{
    while (len > 0) {
        int fd;
        uint64_t at, avail;
        spooled_piece(in, off, &fd, &at, &avail);
        uint64_t n = len < avail ? len : avail;
        if (n == 0) {
            snprintf(err, CLIENT_ERR_MAX, "temporary file: it ended early");
            return -EIO;
        }
        int r = client_send_file(c, fd, at, n, err);
        if (r < 0)
            return r;
        off += n;
        len -= n;
    }
    return 0;
}

/* Reads up to n spooled bytes from off into buf. Returns the bytes read (fewer only at the
 * end), or a negative errno with err set. */
static ssize_t read_spooled(const struct input *in, char *buf, size_t n, uint64_t off, char *err)
{
    size_t got = 0;
    while (got < n) {
        int fd;
        uint64_t at, avail;
        spooled_piece(in, off + got, &fd, &at, &avail);
        if (avail == 0)
            break;
        size_t want = n - got < avail ? n - got : (size_t)avail;
        ssize_t r = pread(fd, buf + got, want, (off_t)at);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(err, CLIENT_ERR_MAX, "temporary file: %s", strerror(errno));
            return -errno;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

/* A window: RUN_WINDOW bytes of the spooled lines from off (len of them read). */
struct run_window {
    uint64_t off, used; /* used: when it last served a run (0: never) */
    size_t len;
    char *buf;
};

struct run_ctx {
    struct client *c;
    const struct input *in;
    char *err;
    struct run_window win[RUN_WINDOWS];
    uint64_t tick;
};

/* order_runs() callback: one run of spooled lines. A reordered thread makes many runs of a line
 * or two, and a sendfile() call each would cost more than the copy: those are read a window at
 * a time and queued like any line, in order with the long runs, which client_send_file() sends
 * only once the queue is out. Each thread's lines lie together in the spool, so a trace whose
 * threads interleave in time jumps between as many regions as it has threads: a window is kept
 * per region (the least recently used one is read anew), and a window is no larger than a run
 * that is copied, so a jump reads what the next runs use rather than a whole MiB (issue 14.5:
 * 73,536 reads of 1 MiB to send the 22 MB of gpu_5steps_rank0). */
static int send_run(void *ud, uint64_t off, uint64_t len)
{
    struct run_ctx *rc = ud;
    if (len >= RUN_FILE_MIN)
        return send_spooled(rc->c, rc->in, off, len, rc->err);
    struct run_window *w = NULL, *lru = &rc->win[0];
    for (struct run_window *x = rc->win; x < rc->win + RUN_WINDOWS && !w; x++) {
        if (x->used && off >= x->off && off + len <= x->off + x->len)
            w = x;
        else if (x->used < lru->used)
            lru = x;
    }
    if (!w) {
        w = lru;
        w->used = 0; /* unusable until it is read whole */
        ssize_t got = read_spooled(rc->in, w->buf, RUN_WINDOW, off, rc->err);
        if (got < 0)
            return (int)got;
        if ((uint64_t)got < len) {
            snprintf(rc->err, CLIENT_ERR_MAX, "temporary file: it ended early");
            return -EIO;
        }
        w->off = off;
        w->len = (size_t)got;
    }
    w->used = ++rc->tick;
    const char *p = w->buf + (off - w->off), *end = p + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        int r = client_send(rc->c, p, (size_t)(le - p), rc->err);
        if (r < 0)
            return r;
        p = nl ? nl + 1 : end;
    }
    return 0;
}

/* Converted lines in memory (a MindSpore folder rank, a Paddle protobuf export): those from
 * next_seq on. Returns OUT_DONE, or OUT_BROKEN with err set. */
static enum outcome send_memory(struct client *c, const struct input *in, uint64_t next_seq,
                                char *err)
{
    const char *p = in->ms ? in->ms->lines : in->mem;
    const char *end = p + (in->ms ? in->ms->len : in->mem_len);
    for (uint64_t i = 0; p < end; i++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        if (i >= next_seq && client_send(c, p, (size_t)(le - p), err) < 0)
            return OUT_BROKEN;
        p = nl ? nl + 1 : end;
    }
    return OUT_DONE;
}

/* Pass 1's lines from next_seq on, straight from the temporary file. Returns OUT_DONE, or
 * OUT_BROKEN / OUT_INPUT with err set. */
static enum outcome send_spool(struct client *c, const struct input *in, uint64_t next_seq,
                               char *err)
{
    uint64_t off, total = spooled_bytes(in);
    int r = spooled_line_offset(in, next_seq < in->n_events ? next_seq : in->n_events, &off);
    if (r < 0) {
        snprintf(err, CLIENT_ERR_MAX, "temporary file: %s", strerror(-r));
        return OUT_INPUT;
    }
    if (in->order) {
        /* Each thread's spans in torch's order: the spool's lines in order_runs()' order. */
        struct run_ctx rc = {.c = c, .in = in, .err = err};
        char *wins = malloc((size_t)RUN_WINDOWS * RUN_WINDOW);
        for (size_t i = 0; wins && i < RUN_WINDOWS; i++)
            rc.win[i].buf = wins + i * RUN_WINDOW;
        r = wins ? order_runs(in->order, next_seq < in->n_events ? next_seq : in->n_events,
                              send_run, &rc)
                 : -ENOMEM;
        free(wins);
        if (r == -ENOMEM)
            snprintf(err, CLIENT_ERR_MAX, "out of memory");
        if (r < 0)
            return OUT_BROKEN;
    } else if (off < total && send_spooled(c, in, off, total - off, err) < 0) {
        return OUT_BROKEN;
    }
    return OUT_DONE;
}

/* The file read and scanned again (no temporary file could hold pass 1's lines, or Paddle's
 * events are rewritten with what the whole file told), its events from next_seq on; for Paddle
 * also the window's ExtraInfo record after them (paddle_times.h), *ret_lines the lines in all.
 * Returns OUT_DONE, or OUT_BROKEN / OUT_INPUT (the file changed since pass 1) with err set. */
static enum outcome send_file(struct client *c, struct input *in, uint64_t next_seq,
                              uint64_t *ret_lines, char *err)
{
    struct tfile *f = NULL;
    struct sbuf line, walked;
    struct pdtrace_walk walk;
    enum outcome out = OUT_BROKEN;
    int r;
    sbuf_init(&line, TSCAN_EVENT_BYTES_MAX + 1);
    sbuf_init(&walked, 2 * TSCAN_EVENT_BYTES_MAX + 64);
    pdtrace_walk_init(&walk);
    char ferr[TFILE_ERR_MAX];
    if (tfile_open(in->arg, &f, ferr) < 0) {
        snprintf(err, CLIENT_ERR_MAX, "%s", ferr);
        out = OUT_INPUT;
        goto done;
    }
    const char *ev;
    size_t len;
    const struct tscan_event *info;
    while ((r = tfile_next(f, &ev, &len, &info)) == 1) {
        if (in->fw == FW_PADDLE) {
            /* Times to the ns and names without the duration suffix, as the live collector;
             * memory events name the host event Paddle gave them to (paddle_times.h). Every
             * event goes through the walk, those the daemon holds already too. */
            sbuf_reset(&line);
            sbuf_reset(&walked);
            int64_t ts = pdtrace_rewrite(&in->pd, ev, len, info, &line);
            if (line.error || pdtrace_walk_event(&walk, ev, len, line.data, line.len, ts, info,
                                                 &walked) < 0) {
                snprintf(err, CLIENT_ERR_MAX, "out of memory");
                goto done;
            }
            ev = walked.data;
            len = walked.len;
        }
        if (info->index < next_seq)
            continue; /* the daemon holds it already */
        if (client_send(c, ev, len, err) < 0)
            goto done;
    }
    if (r < 0 || tfile_meta(f)->n_events != in->n_events) {
        snprintf(err, CLIENT_ERR_MAX, "%s changed since it was validated: %s", in->arg,
                 r < 0 ? tfile_error(f) : "different number of events");
        out = OUT_INPUT;
        goto done;
    }
    /* Paddle's window figures (ExtraInfo, after the events in the file) take the line after
     * the last event. */
    *ret_lines = in->n_events;
    sbuf_reset(&line);
    if (in->fw == FW_PADDLE && pdtrace_extra_line(&walk, tfile_meta(f), &line)) {
        if (line.error) {
            snprintf(err, CLIENT_ERR_MAX, "out of memory");
            goto done;
        }
        if (*ret_lines >= next_seq && client_send(c, line.data, line.len - 1, err) < 0)
            goto done;
        (*ret_lines)++;
    }
    out = OUT_DONE;
done:
    tfile_free(f);
    sbuf_done(&line);
    sbuf_done(&walked);
    pdtrace_walk_free(&walk);
    return out;
}

/* One session: connect, hello, send from next_seq, bye, wait for the final ack. */
static enum outcome import_once(struct input *in, const char *job, const char *sock,
                                bool *ret_welcomed, uint64_t *ret_skipped, char *err)
{
    struct session_ctx ctx = {.in = in};
    struct client *c = NULL;
    struct sbuf hello;
    enum outcome out = OUT_BROKEN;
    sbuf_init(&hello, 1u << 20);
    if (client_open(sock, on_daemon_error, &ctx, &c, err) < 0) {
        out = OUT_UNREACHABLE;
        goto done;
    }
    import_build_hello(&hello, in, job);
    if (hello.error) {
        snprintf(err, CLIENT_ERR_MAX, "out of memory");
        out = OUT_REFUSED;
        goto done;
    }
    uint64_t next_seq;
    int r = client_hello(c, hello.data, hello.len, &next_seq, err);
    if (r == -EPROTO) {
        out = OUT_REFUSED;
        goto done;
    }
    if (r < 0)
        goto done;
    *ret_welcomed = true;
    *ret_skipped = next_seq < in->n_events ? next_seq : in->n_events;
    uint64_t n_lines = in->n_events;
    if (in->ms || in->mem)
        out = send_memory(c, in, next_seq, err);
    else if (in->spool)
        out = send_spool(c, in, next_seq, err);
    else
        out = send_file(c, in, next_seq, &n_lines, err);
    /* Every line took a sequence number (or was below next_seq); the bye takes the next. */
    uint64_t bye_seq = next_seq > n_lines ? next_seq : n_lines;
    if (out == OUT_DONE && client_finish(c, bye_seq + 1, err) < 0)
        out = OUT_BROKEN;
done:
    client_free(c);
    sbuf_done(&hello);
    return out;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

int import_send_file(struct input *in, const char *job, const struct opts *o)
{
    char err[CLIENT_ERR_MAX];
    bool welcomed = false;
    uint64_t skipped = 0, first_skipped = 0;
    long backoff = 100;
    for (int attempt = 1;; attempt++) {
        bool w = false;
        enum outcome out = import_once(in, job, o->socket, &w, &skipped, err);
        if (w && !welcomed)
            first_skipped = skipped;
        welcomed = welcomed || w;
        char sorted[96] = "";
        if (in->order)
            snprintf(sorted, sizeof sorted, "; %llu threads' spans sent in start order",
                     (unsigned long long)in->n_reordered);
        if (in->fw == FW_PADDLE && in->pd.n && !in->pd.exact)
            snprintf(sorted, sizeof sorted, "; ts kept as written (whole us): the args.start_time "
                     "offsets contradict them");
        switch (out) {
        case OUT_DONE:
            if (!o->quiet && in->ms)
                printf("%s (%s): %llu records, job \"%s\" rank %lld of %lld, mindspore "
                       "(mindspore-profiler): %llu sent, %llu already held, %llu rejected\n",
                       in->arg, in->ms->files, (unsigned long long)in->n_events, job,
                       (long long)in->rank, (long long)in->world_size,
                       (unsigned long long)(in->n_events - first_skipped),
                       (unsigned long long)first_skipped, (unsigned long long)in->n_rejected);
            else if (!o->quiet)
                printf("%s: %llu events, job \"%s\" rank %lld of %lld, %s (%s): %llu sent, "
                       "%llu already held, %llu rejected%s\n",
                       in->arg, (unsigned long long)in->n_events, job, (long long)in->rank,
                       (long long)in->world_size, import_fw_names[in->fw], in->format,
                       (unsigned long long)(in->n_events - first_skipped),
                       (unsigned long long)first_skipped, (unsigned long long)in->n_rejected,
                       sorted);
            return in->n_rejected ? IMPORT_EXIT_REJECTED : IMPORT_EXIT_OK;
        case OUT_INPUT:
            fprintf(stderr, "stepscope import: %s\n", err);
            return IMPORT_EXIT_INPUT;
        case OUT_REFUSED:
            fprintf(stderr, "stepscope import: %s: %s\n", in->arg, err);
            return IMPORT_EXIT_DAEMON;
        case OUT_UNREACHABLE:
            /* Only a daemon that was there before is worth waiting for (it may be restarting). */
            if (!welcomed) {
                fprintf(stderr, "stepscope import: %s\n", err);
                return IMPORT_EXIT_DAEMON;
            }
            break;
        case OUT_BROKEN:
            break;
        }
        if (attempt == IMPORT_ATTEMPTS) {
            fprintf(stderr, "stepscope import: %s: giving up after %d attempts: %s\n", in->arg,
                    attempt, err);
            return IMPORT_EXIT_DAEMON;
        }
        fprintf(stderr, "stepscope import: %s: %s; retrying in %ld ms\n", in->arg, err, backoff);
        sleep_ms(backoff);
        backoff *= 3;
    }
}
