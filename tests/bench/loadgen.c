/* SPDX-License-Identifier: MIT */
/*
 * loadgen: the ingest benchmark's client, and its baseline.
 *
 *   loadgen --socket PATH [--connections 8] [--events N] [--event-bytes 240] [--mode daemon|raw]
 *           [--job NAME] [--batch-bytes 65536] [--timeout S] [--step-every K] [--rate R]
 *   loadgen --socket PATH --mode replay [--connections 8] [--events N] [--rate R] [--ring-bytes B]
 *           [--progress-ms MS] [--report FILE] [--job NAME] [--timeout S]
 *   loadgen --sink PATH | --sink-ack PATH
 *
 * Each connection's whole byte stream (a hello line, then its share of N Chrome-trace "X" events
 * of event-bytes bytes each, '\n' included) is generated in memory before anything is timed, so
 * the figure is the receiver's cost, not ours. All connections then start together behind a
 * barrier and write their stream in batch-bytes writes.
 *
 * In daemon mode the clock stops when every connection has read {"ack":K} with K equal to the
 * number of record lines it sent: acks mean durable, so the figure is "events stored per second".
 * In raw mode the peer is `loadgen --sink`, which reads and discards, then answers with the byte
 * count it read and closes; the clock stops when every connection has that answer. Raw mode is
 * the ceiling the same machine, kernel and socket buffers allow, measured with the same bytes.
 *
 * --step-every K adds a "ProfilerStep#N" span covering every K events of a connection (the API
 * benchmark's steps); --rate R paces the writes to about R events per second over all
 * connections (the API benchmark's background ingest). Both are off by default.
 *
 * Replay mode (the kill -9 test's clients, tests/reliability/test_kill9.py) survives the daemon's
 * death: each connection is a rank that keeps its unacknowledged lines, reconnects and replays them
 * (see "Replay mode" below). Its records are shorter kernel spans whose ts are distinct per rank.
 * --progress-ms prints "progress t= acked= sent= resent= connects= cpu=" lines while it runs;
 * --report writes one JSON line per rank with its counts and a checksum of the ts it had
 * acknowledged. `--sink-ack` is a sink that also welcomes and acknowledges every line at once:
 * replay mode's own ceiling, with nothing behind the socket.
 *
 * Prints one line on stdout: events=N seconds=S events_per_s=R (replay mode adds its counts and
 * client_cpu_s, and prints it even on failure). Exits 0 on success, 1 when a connection failed
 * (error lines, early close, short ack, timeout; in replay mode also a welcome that says the daemon
 * lost an acknowledged line), 2 on bad usage.
 *
 * Standalone on purpose (C11 + POSIX threads and sockets, no project code): it must be able to
 * measure a daemon it shares nothing with.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

enum mode {
    MODE_DAEMON, /* talk the stepscope protocol; wait for acks */
    MODE_RAW,    /* write to a discard sink; wait for its byte count */
    MODE_REPLAY, /* daemon mode that survives the daemon's death: reconnect and replay */
};

struct options {
    const char *socket;  /* where to connect (or, with --sink, where to listen) */
    bool sink;           /* run the discard sink instead of the client */
    unsigned connections;
    uint64_t events;     /* total over all connections */
    size_t event_bytes;  /* per event line, '\n' included */
    size_t batch_bytes;  /* largest single write() */
    enum mode mode;
    const char *job;
    int timeout_s;       /* a connection with no progress for this long fails */
    uint64_t step_every; /* a step span every this many events; 0: none */
    uint64_t rate;       /* events per second over all connections; 0: as fast as possible */
    size_t ring_bytes;   /* replay: most bytes written and not yet acknowledged, per connection */
    unsigned progress_ms; /* replay: a progress line on stdout this often; 0: none */
    const char *report;  /* replay: per-connection figures as JSON lines to this file */
    bool sink_ack;       /* --sink-ack: the sink also welcomes and acknowledges */
};

struct conn {
    unsigned index;      /* also the rank in the hello */
    uint64_t events;     /* trace events in buf */
    uint64_t lines;      /* record lines in buf (the hello excluded): events and step spans */
    char *buf;           /* the whole stream, malloc'd */
    size_t len;
    int fd;
    uint64_t last_ack;   /* highest {"ack":K} seen */
    uint64_t errors;     /* {"error":...} lines seen */
    double end;          /* seconds (monotonic) when this connection was done */
    bool ok;
    char why[160];       /* the reason when !ok */
    /* Replay mode only. The fields the progress printer reads are atomic (written here, relaxed). */
    size_t *off;              /* off[i]: where record line i starts in buf; off[lines] = len */
    _Atomic uint64_t acked;   /* highest {"ack":K}: lines [0, K) are durable */
    _Atomic uint64_t sent_hi; /* lines [0, sent_hi) were written whole at least once */
    _Atomic uint64_t resent;  /* whole lines written again after a reconnect */
    _Atomic uint64_t connects;
    uint64_t held_dups;  /* over all welcomes: next_seq - hello seq, lines resent that the daemon had */
    uint64_t lost_acked; /* over all welcomes: acknowledged lines the daemon said it did not hold */
    uint64_t ahead;      /* welcomes whose next_seq was past every line ever written */
};

static struct options opt = {
    .connections = 8,
    .events = 2000000,
    .event_bytes = 240,
    .batch_bytes = 65536,
    .mode = MODE_DAEMON,
    .job = "loadgen",
    .timeout_s = 600,
    .ring_bytes = (size_t)64 << 20,
};

static pthread_barrier_t start_barrier;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt, ...);
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("loadgen: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static void usage(FILE *f)
{
    fputs("usage: loadgen --socket PATH [--connections 8] [--events 2000000] [--event-bytes 240]\n"
          "               [--mode daemon|raw] [--job NAME] [--batch-bytes 65536] [--timeout S]\n"
          "               [--step-every K] [--rate EVENTS_PER_S]\n"
          "       loadgen --socket PATH --mode replay [--connections 8] [--events N] [--job NAME]\n"
          "               [--rate EVENTS_PER_S] [--ring-bytes 67108864] [--progress-ms MS]\n"
          "               [--report FILE] [--timeout S] [--batch-bytes 65536]\n"
          "       loadgen --sink PATH | --sink-ack PATH\n",
          f);
}

__attribute__((format(printf, 2, 3))) static void fail(struct conn *c, const char *fmt, ...);
static void fail(struct conn *c, const char *fmt, ...)
{
    va_list ap;
    if (!c->ok)
        return;
    c->ok = false;
    va_start(ap, fmt);
    vsnprintf(c->why, sizeof c->why, fmt, ap);
    va_end(ap);
}

static uint64_t parse_u64(const char *flag, const char *s)
{
    char *end;
    unsigned long long v;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-') {
        fprintf(stderr, "loadgen: %s wants a non-negative integer, got '%s'\n", flag, s);
        exit(2);
    }
    return v;
}

/* Names seen in real Kineto traces, so line lengths and byte mixes look like the real thing. None
 * needs JSON escaping. */
static const char *const kernel_names[] = {
    "volta_sgemm_128x64_nn",
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>",
    "ampere_fp16_s1688gemm_fp16_256x128_ldg8_f2f_stages_32x1_nn",
    "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1>",
    "ncclKernel_AllReduce_RING_LL_Sum_float",
    "Memcpy HtoD (Pageable -> Device)",
    "void at::native::reduce_kernel<512, 1>",
    "implicit_convolve_sgemm",
};

/* Appends one event line to buf at *off: exactly opt.event_bytes bytes whenever the event without
 * its optional args fits, longer otherwise. The optional args are dropped, last first, until the
 * line fits, then a "pad" string fills it to the size. */
static void gen_event(char *buf, size_t *off, unsigned conn, uint64_t i)
{
    static const char *const extras[] = {
        ",\"stream\":7",
        ",\"device\":0",
        ",\"grid\":[128,1,1]",
        ",\"block\":[256,1,1]",
    };
    static const char pad_open[] = ",\"pad\":\"";
    /* pad_open, the pad's closing quote, the closing braces of args and of the event, '\n'. */
    const size_t pad_fixed = sizeof pad_open - 1 + 1 + 2 + 1;
    /* Timestamps rise by 1.375 µs per event; each connection starts at its own second. */
    uint64_t ts_ns = 1700000000000000000ull + (uint64_t)conn * 1000000000ull + i * 1375ull;
    uint64_t dur_ns = 1000ull + (i % 997ull) * 250ull;
    const char *name = kernel_names[i % (sizeof kernel_names / sizeof kernel_names[0])];
    char *p = buf + *off;
    size_t len = (size_t)sprintf(p,
                                 "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"%s\",\"pid\":0,\"tid\":%u,"
                                 "\"ts\":%" PRIu64 ".%03" PRIu64 ",\"dur\":%" PRIu64 ".%03" PRIu64
                                 ",\"args\":{\"correlation\":%" PRIu64,
                                 name, 7 + conn, ts_ns / 1000, ts_ns % 1000, dur_ns / 1000,
                                 dur_ns % 1000, i);
    for (size_t k = 0; k < sizeof extras / sizeof extras[0]; k++) {
        size_t n = strlen(extras[k]);
        if (len + n + pad_fixed <= opt.event_bytes) {
            memcpy(p + len, extras[k], n);
            len += n;
        }
    }
    if (len + pad_fixed <= opt.event_bytes) {
        size_t pad = opt.event_bytes - len - pad_fixed;
        memcpy(p + len, pad_open, sizeof pad_open - 1);
        len += sizeof pad_open - 1;
        memset(p + len, 'x', pad);
        len += pad;
        p[len++] = '"';
    }
    memcpy(p + len, "}}\n", 3);
    *off += len + 3;
}

static void gen_stream(struct conn *c)
{
    size_t cap = 1024 + (size_t)c->events * (opt.event_bytes + 512);
    if (opt.step_every)
        cap += (size_t)(c->events / opt.step_every + 1) * 256;
    size_t off = 0;
    c->buf = malloc(cap);
    if (!c->buf)
        die("cannot allocate %zu bytes for connection %u", cap, c->index);
    /* Raw mode writes the hello too, so both modes move the same bytes. */
    off += (size_t)snprintf(c->buf, 1024,
                            "{\"hello\":\"stepscope/1\",\"job\":\"%s\",\"rank\":%u,"
                            "\"world_size\":%u,\"host\":\"loadgen\",\"pid\":%ld,"
                            "\"framework\":\"loadgen\"}\n",
                            opt.job, c->index, opt.connections, (long)getpid());
    for (uint64_t i = 0; i < c->events; i++) {
        if (opt.step_every && i % opt.step_every == 0) {
            /* The step span starts with its first event and ends 1 ns before the next step's. */
            uint64_t ts_ns = 1700000000000000000ull + (uint64_t)c->index * 1000000000ull + i * 1375ull;
            uint64_t dur_ns = opt.step_every * 1375ull - 1;
            off += (size_t)sprintf(c->buf + off,
                                   "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#%" PRIu64
                                   "\",\"pid\":0,\"tid\":%u,\"ts\":%" PRIu64 ".%03" PRIu64
                                   ",\"dur\":%" PRIu64 ".%03" PRIu64 "}\n",
                                   i / opt.step_every, 7 + c->index, ts_ns / 1000, ts_ns % 1000,
                                   dur_ns / 1000, dur_ns % 1000);
            c->lines++;
        }
        gen_event(c->buf, &off, c->index, i);
        c->lines++;
    }
    c->len = off;
}

/* A connected Unix stream socket, or -1 with errno set (nothing to connect to yet). */
static int try_connect_unix(const char *path)
{
    struct sockaddr_un sa;
    int fd;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof sa.sun_path)
        die("socket path too long: %s", path);
    strcpy(sa.sun_path, path);
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0)
        die("socket: %s", strerror(errno));
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

static int connect_unix(const char *path)
{
    int fd = try_connect_unix(path);
    if (fd < 0)
        die("connect %s: %s", path, strerror(errno));
    return fd;
}

/* Reads the peer's lines in daemon mode: acks advance last_ack, errors are counted (the first
 * few echoed to stderr). rbuf holds an unfinished line between calls. */
static void scan_replies(struct conn *c, char *rbuf, size_t *rlen)
{
    char *p = rbuf, *end = rbuf + *rlen, *nl;
    while ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        *nl = '\0';
        if (strncmp(p, "{\"ack\":", 7) == 0) {
            uint64_t k = strtoull(p + 7, NULL, 10);
            if (k > c->last_ack)
                c->last_ack = k;
        } else if (strstr(p, "\"error\"") != NULL) {
            if (c->errors++ < 3)
                fprintf(stderr, "loadgen: connection %u: %s\n", c->index, p);
        }
        p = nl + 1;
    }
    *rlen = (size_t)(end - p);
    memmove(rbuf, p, *rlen);
}

/* Writes c's stream while reading what comes back, until done or failed. Non-blocking with
 * poll(), so a peer that answers while we write can never deadlock us. */
static void run_conn(struct conn *c)
{
    char rbuf[65536];
    size_t rlen = 0;
    size_t sent = 0;
    bool wr_closed = false;
    double t_start = now_s();
    /* --rate: this connection's share, in bytes per second of its own stream. */
    double pace_bps = opt.rate ? (double)opt.rate / opt.connections * ((double)c->len / (double)c->lines) : 0;
    int fl = fcntl(c->fd, F_GETFL);
    fcntl(c->fd, F_SETFL, fl | O_NONBLOCK);

    for (;;) {
        struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
        int timeout_ms = opt.timeout_s * 1000;
        bool paced = pace_bps > 0 && (double)sent >= (now_s() - t_start) * pace_bps;
        int r;
        if (sent < c->len && !paced)
            pfd.events |= POLLOUT;
        if (sent < c->len && paced)
            timeout_ms = 2;
        r = poll(&pfd, 1, timeout_ms);
        if (r == 0 && paced)
            continue;
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            fail(c, "poll: %s", strerror(errno));
            return;
        }
        if (r == 0) {
            fail(c, "no progress for %d s (sent %zu of %zu bytes, ack %" PRIu64 " of %" PRIu64
                 ")", opt.timeout_s, sent, c->len, c->last_ack, c->lines);
            return;
        }
        if ((pfd.revents & POLLOUT) && sent < c->len) {
            size_t n = c->len - sent;
            ssize_t w;
            if (n > opt.batch_bytes)
                n = opt.batch_bytes;
            if (pace_bps > 0 && n > 16384)
                n = 16384; /* smooth pacing: small writes */
            w = write(c->fd, c->buf + sent, n);
            if (w < 0 && errno != EAGAIN && errno != EINTR) {
                fail(c, "write after %zu bytes: %s", sent, strerror(errno));
                return;
            }
            if (w > 0)
                sent += (size_t)w;
        }
        if (sent == c->len && opt.mode == MODE_RAW && !wr_closed) {
            /* The sink reads to EOF, then answers with its byte count. */
            shutdown(c->fd, SHUT_WR);
            wr_closed = true;
        }
        if (pfd.revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = read(c->fd, rbuf + rlen, sizeof rbuf - 1 - rlen);
            if (n < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            if (n < 0) {
                fail(c, "read: %s (sent %zu of %zu bytes)", strerror(errno), sent, c->len);
                return;
            }
            if (n == 0) {
                if (opt.mode == MODE_RAW && sent == c->len) {
                    uint64_t got;
                    rbuf[rlen] = '\0';
                    got = strtoull(rbuf, NULL, 10);
                    if (got != c->len)
                        fail(c, "sink read %" PRIu64 " bytes, we sent %zu", got, c->len);
                } else {
                    fail(c, "peer closed after %zu of %zu bytes, ack %" PRIu64 " of %" PRIu64,
                         sent, c->len, c->last_ack, c->lines);
                }
                return;
            }
            rlen += (size_t)n;
            if (opt.mode == MODE_DAEMON) {
                scan_replies(c, rbuf, &rlen);
                if (rlen == sizeof rbuf - 1)
                    rlen = 0; /* an absurdly long reply line: drop it rather than stall */
                if (c->last_ack >= c->lines && sent == c->len)
                    return;
            } else if (rlen == sizeof rbuf - 1) {
                fail(c, "sink sent too much");
                return;
            }
        }
    }
}

/* ---- Replay mode ------------------------------------------------------------------------------
 *
 * A replaying rank is what a collector that loses nothing does (docs/PROTOCOL.md section 3) when
 * the daemon dies under it. The rank's record lines are generated before the clock starts (the
 * training process's output; our cost must stay the write) and are "produced" at --rate over
 * time. The lines written and not yet acknowledged, [acked, written), form the rank's ring: at
 * most --ring-bytes of them, after which the rank writes nothing more until acks free room. When
 * the connection breaks it reconnects with backoff (5 ms doubling to 200 ms), says hello with its
 * stream and seq = its oldest unacknowledged line, and writes every line from there again: the
 * daemon numbers the connection's lines from that seq and drops the ones it holds. The welcome's
 * next_seq is checked: below seq, the daemon lost acknowledged lines (lost_acked); past every line
 * ever written, it claims lines it was never sent (ahead). */

/* The records: tests/reliability/replayclient.py's shape, a kernel span per line whose ts (integer
 * microseconds) is distinct within the rank. */
#define REPLAY_TS0 1700000000000000ull
#define REPLAY_TICK_S 0.002

static uint64_t replay_ts(uint64_t i)
{
    return REPLAY_TS0 + i * 10u;
}

static void gen_replay_stream(struct conn *c)
{
    size_t cap = (size_t)c->events * 160 + 1;
    size_t len = 0;
    c->buf = malloc(cap);
    c->off = malloc(((size_t)c->events + 1) * sizeof *c->off);
    if (!c->buf || !c->off)
        die("cannot allocate %zu bytes for connection %u", cap, c->index);
    for (uint64_t i = 0; i < c->events; i++) {
        c->off[i] = len;
        len += (size_t)snprintf(c->buf + len, cap - len,
                                "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"kernel_%u\",\"pid\":%u,"
                                "\"tid\":1,\"ts\":%" PRIu64 ",\"dur\":3,\"args\":{\"seq\":%" PRIu64
                                "}}\n",
                                (unsigned)(i % 13), c->index, replay_ts(i), i);
    }
    c->off[c->events] = len;
    c->len = len;
    c->lines = c->events;
}

/* Takes the daemon's whole lines from rbuf: acks, the welcome (checked against seq0, the hello's
 * seq), errors (counted, the first few echoed). rbuf keeps an unfinished line. */
static void replay_replies(struct conn *c, char *rbuf, size_t *rlen, uint64_t seq0)
{
    char *p = rbuf, *end = rbuf + *rlen, *nl;
    while ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        *nl = '\0';
        if (strncmp(p, "{\"ack\":", 7) == 0) {
            uint64_t k = strtoull(p + 7, NULL, 10);
            if (k > c->lines)
                k = c->lines;
            if (k > atomic_load_explicit(&c->acked, memory_order_relaxed))
                atomic_store_explicit(&c->acked, k, memory_order_relaxed);
        } else if (strncmp(p, "{\"welcome\":", 11) == 0 && strstr(p, "\"next_seq\":")) {
            uint64_t ns = strtoull(strstr(p, "\"next_seq\":") + 11, NULL, 10);
            if (ns < seq0)
                c->lost_acked += seq0 - ns;
            else
                c->held_dups += ns - seq0;
            if (ns > atomic_load_explicit(&c->sent_hi, memory_order_relaxed))
                c->ahead++;
        } else if (strstr(p, "\"error\"") != NULL) {
            if (c->errors++ < 3)
                fprintf(stderr, "loadgen: connection %u: %s\n", c->index, p);
        }
        p = nl + 1;
    }
    *rlen = (size_t)(end - p);
    memmove(rbuf, p, *rlen);
}

/* Counts the lines that the bytes written up to pos complete: the first write of a line raises
 * sent_hi, a later one counts as resent. *line is the first line not yet written whole. */
static void replay_written(struct conn *c, size_t pos, uint64_t *line)
{
    uint64_t from = *line, to = from;
    uint64_t hi = atomic_load_explicit(&c->sent_hi, memory_order_relaxed);
    while (to < c->lines && c->off[to + 1] <= pos)
        to++;
    if (hi > from)
        atomic_fetch_add_explicit(&c->resent, (hi < to ? hi : to) - from, memory_order_relaxed);
    if (to > hi)
        atomic_store_explicit(&c->sent_hi, to, memory_order_relaxed);
    *line = to;
}

/* One connection of a replaying rank, fd connected: hello, then the lines from the oldest
 * unacknowledged one, paced by --rate from t0 and bounded by the ring, while acks free the ring.
 * Returns when every line is acknowledged, the connection broke, or the rank failed (timeout:
 * no ack for --timeout s, *last_ack being when the last one came). */
static void replay_session(struct conn *c, int fd, double t0, double *last_ack)
{
    char rbuf[65536];
    char hello[768];
    size_t rlen = 0, hsent = 0;
    uint64_t seq0 = atomic_load_explicit(&c->acked, memory_order_relaxed);
    uint64_t line = seq0;       /* the first line not yet written whole on this connection */
    size_t pos = c->off[seq0];  /* the next byte of buf to write on this connection */
    double conn_rate = opt.rate ? (double)opt.rate / opt.connections : 0;
    size_t hlen = (size_t)snprintf(hello, sizeof hello,
                                   "{\"hello\":\"stepscope/1\",\"job\":\"%s\",\"rank\":%u,"
                                   "\"world_size\":%u,\"host\":\"loadgen\",\"pid\":%ld,"
                                   "\"framework\":\"loadgen\",\"stream\":\"loadgen-%u\",\"seq\":%" PRIu64
                                   "}\n",
                                   opt.job, c->index, opt.connections, (long)getpid(), c->index, seq0);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    for (;;) {
        uint64_t acked = atomic_load_explicit(&c->acked, memory_order_relaxed);
        double t = now_s();
        uint64_t produced = c->lines;
        size_t limit;
        bool want;
        int wait_ms = 1;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int r;
        if (acked >= c->lines)
            return;
        if (t - *last_ack > opt.timeout_s) {
            fail(c, "no ack for %d s (acked %" PRIu64 " of %" PRIu64 " lines)", opt.timeout_s, acked,
                 c->lines);
            return;
        }
        /* Paced lines are produced in ticks of REPLAY_TICK_S, so that writes are a tick's worth
         * of lines, not one line per wakeup. */
        if (conn_rate > 0) {
            double ticks = floor((t - t0) / REPLAY_TICK_S);
            if (ticks * REPLAY_TICK_S * conn_rate < (double)c->lines)
                produced = (uint64_t)(ticks * REPLAY_TICK_S * conn_rate);
            wait_ms = (int)ceil(((ticks + 1) * REPLAY_TICK_S - (t - t0)) * 1000);
        }
        limit = c->off[produced];
        if (limit > c->off[acked] + opt.ring_bytes)
            limit = c->off[acked] + opt.ring_bytes;
        want = hsent < hlen || pos < limit;
        if (want)
            pfd.events |= POLLOUT;
        /* Waiting for the next tick or for acks to free the ring (acks wake us anyway). */
        r = poll(&pfd, 1, !want && pos < c->len ? (wait_ms < 1 ? 1 : wait_ms) : 1000);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            fail(c, "poll: %s", strerror(errno));
            return;
        }
        if ((pfd.revents & POLLOUT) && want) {
            bool is_hello = hsent < hlen;
            size_t n = is_hello ? hlen - hsent : limit - pos;
            ssize_t w;
            if (n > opt.batch_bytes)
                n = opt.batch_bytes;
            w = write(fd, is_hello ? hello + hsent : c->buf + pos, n);
            if (w < 0 && errno != EAGAIN && errno != EINTR)
                return; /* the daemon went away: reconnect */
            if (w > 0 && is_hello) {
                hsent += (size_t)w;
            } else if (w > 0) {
                pos += (size_t)w;
                replay_written(c, pos, &line);
            }
        }
        if (pfd.revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = read(fd, rbuf + rlen, sizeof rbuf - 1 - rlen);
            uint64_t before = acked;
            if (n < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            if (n <= 0)
                return; /* closed or reset: reconnect */
            rlen += (size_t)n;
            replay_replies(c, rbuf, &rlen, seq0);
            if (rlen == sizeof rbuf - 1)
                rlen = 0; /* an absurdly long reply line: drop it rather than stall */
            if (atomic_load_explicit(&c->acked, memory_order_relaxed) > before)
                *last_ack = now_s();
        }
    }
}

static void run_replay(struct conn *c)
{
    double t0 = now_s(), last_ack = t0;
    long backoff_ms = 5;
    while (c->ok && atomic_load_explicit(&c->acked, memory_order_relaxed) < c->lines) {
        int fd = try_connect_unix(opt.socket);
        if (fd < 0) {
            struct timespec ts = {.tv_sec = 0, .tv_nsec = backoff_ms * 1000000L};
            if (now_s() - last_ack > opt.timeout_s) {
                fail(c, "cannot connect for %d s: %s", opt.timeout_s, strerror(errno));
                return;
            }
            nanosleep(&ts, NULL);
            backoff_ms = backoff_ms * 2 > 200 ? 200 : backoff_ms * 2;
            continue;
        }
        backoff_ms = 5;
        atomic_fetch_add_explicit(&c->connects, 1, memory_order_relaxed);
        replay_session(c, fd, t0, &last_ack);
        close(fd);
    }
    if (c->ok && (c->lost_acked || c->ahead))
        fail(c, "the daemon lost %" PRIu64 " acknowledged lines; %" PRIu64 " welcomes were ahead",
             c->lost_acked, c->ahead);
}

static double cpu_s(void);

static atomic_uint threads_done;

/* Every --progress-ms until every connection is done: one line of sums over the connections. */
static void replay_progress(struct conn *conns, double t0, double cpu0)
{
    struct timespec ts = {.tv_sec = opt.progress_ms / 1000,
                          .tv_nsec = (long)(opt.progress_ms % 1000) * 1000000L};
    while (atomic_load(&threads_done) < opt.connections) {
        uint64_t acked = 0, sent = 0, resent = 0, connects = 0;
        nanosleep(&ts, NULL);
        for (unsigned i = 0; i < opt.connections; i++) {
            acked += atomic_load_explicit(&conns[i].acked, memory_order_relaxed);
            sent += atomic_load_explicit(&conns[i].sent_hi, memory_order_relaxed);
            resent += atomic_load_explicit(&conns[i].resent, memory_order_relaxed);
            connects += atomic_load_explicit(&conns[i].connects, memory_order_relaxed);
        }
        printf("progress t=%.3f acked=%" PRIu64 " sent=%" PRIu64 " resent=%" PRIu64
               " connects=%" PRIu64 " cpu=%.3f\n",
               now_s() - t0, acked, sent, resent, connects, cpu_s() - cpu0);
        fflush(stdout);
    }
}

/* --report: one JSON line per connection, with the count, sum and sum of squares (mod 2^64) of the
 * ts of its acknowledged lines, for the caller to compare with what the daemon stored. */
static void replay_report(const struct conn *conns)
{
    FILE *f = fopen(opt.report, "w");
    if (!f)
        die("cannot write %s: %s", opt.report, strerror(errno));
    for (unsigned i = 0; i < opt.connections; i++) {
        const struct conn *c = &conns[i];
        uint64_t acked = atomic_load(&c->acked), sum = 0, sumsq = 0;
        for (uint64_t k = 0; k < acked; k++) {
            sum += replay_ts(k);
            sumsq += replay_ts(k) * replay_ts(k);
        }
        fprintf(f,
                "{\"rank\":%u,\"lines\":%" PRIu64 ",\"acked\":%" PRIu64 ",\"sent\":%" PRIu64
                ",\"resent\":%" PRIu64 ",\"connects\":%" PRIu64 ",\"held_dups\":%" PRIu64
                ",\"lost_acked\":%" PRIu64 ",\"ahead\":%" PRIu64 ",\"errors\":%" PRIu64
                ",\"ts_count\":%" PRIu64 ",\"ts_sum\":%" PRIu64 ",\"ts_sumsq\":%" PRIu64 "}\n",
                c->index, c->lines, acked, atomic_load(&c->sent_hi), atomic_load(&c->resent),
                atomic_load(&c->connects), c->held_dups, c->lost_acked, c->ahead, c->errors, acked,
                sum, sumsq);
    }
    if (fclose(f) != 0)
        die("cannot write %s: %s", opt.report, strerror(errno));
}

static void *conn_thread(void *arg)
{
    struct conn *c = arg;
    pthread_barrier_wait(&start_barrier);
    if (opt.mode == MODE_REPLAY)
        run_replay(c);
    else
        run_conn(c);
    c->end = now_s();
    if (c->ok && opt.mode != MODE_RAW && c->errors)
        fail(c, "%" PRIu64 " error lines", c->errors);
    atomic_fetch_add(&threads_done, 1);
    return NULL;
}

/* User + system CPU seconds this process has used so far. */
static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec / 1e6;
}

static const char *mode_name(void)
{
    return opt.mode == MODE_DAEMON ? "daemon" : opt.mode == MODE_RAW ? "raw" : "replay";
}

/* Replay mode's summary line (always printed: the figures matter most when something failed). */
static void replay_summary(const struct conn *conns, double secs, double cpu)
{
    uint64_t acked = 0, sent = 0, resent = 0, connects = 0, held = 0, lost = 0, ahead = 0, errors = 0;
    for (unsigned i = 0; i < opt.connections; i++) {
        const struct conn *c = &conns[i];
        acked += atomic_load(&c->acked);
        sent += atomic_load(&c->sent_hi);
        resent += atomic_load(&c->resent);
        connects += atomic_load(&c->connects);
        held += c->held_dups;
        lost += c->lost_acked;
        ahead += c->ahead;
        errors += c->errors;
    }
    printf("events=%" PRIu64 " seconds=%.3f events_per_s=%.0f acked=%" PRIu64 " sent=%" PRIu64
           " resent=%" PRIu64 " connects=%" PRIu64 " held_dups=%" PRIu64 " lost_acked=%" PRIu64
           " ahead=%" PRIu64 " errors=%" PRIu64 " client_cpu_s=%.3f\n",
           opt.events, secs, (double)acked / secs, acked, sent, resent, connects, held, lost, ahead,
           errors, cpu);
    fflush(stdout);
}

static int run_client(void)
{
    struct conn *conns = calloc(opt.connections, sizeof *conns);
    pthread_t *th = calloc(opt.connections, sizeof *th);
    uint64_t total_bytes = 0;
    double t0, t1 = 0, cpu0;
    int rc = 0;

    if (!conns || !th)
        die("out of memory");
    for (unsigned i = 0; i < opt.connections; i++) {
        struct conn *c = &conns[i];
        c->index = i;
        c->ok = true;
        c->fd = -1;
        c->events = opt.events / opt.connections + (i < opt.events % opt.connections ? 1 : 0);
        if (opt.mode == MODE_REPLAY)
            gen_replay_stream(c);
        else
            gen_stream(c);
        total_bytes += c->len;
    }
    /* Replay connects in each connection's thread (and again after every break). */
    for (unsigned i = 0; i < opt.connections && opt.mode != MODE_REPLAY; i++)
        conns[i].fd = connect_unix(opt.socket);

    if (pthread_barrier_init(&start_barrier, NULL, opt.connections + 1) != 0)
        die("pthread_barrier_init failed");
    for (unsigned i = 0; i < opt.connections; i++)
        if (pthread_create(&th[i], NULL, conn_thread, &conns[i]) != 0)
            die("pthread_create failed");
    cpu0 = cpu_s();
    pthread_barrier_wait(&start_barrier);
    t0 = now_s();
    if (opt.mode == MODE_REPLAY && opt.progress_ms)
        replay_progress(conns, t0, cpu0);
    for (unsigned i = 0; i < opt.connections; i++) {
        struct conn *c = &conns[i];
        pthread_join(th[i], NULL);
        if (c->end > t1)
            t1 = c->end;
        if (!c->ok) {
            fprintf(stderr, "loadgen: connection %u failed: %s\n", i, c->why);
            rc = 1;
        }
        if (c->fd >= 0)
            close(c->fd);
    }
    pthread_barrier_destroy(&start_barrier);
    if (opt.mode == MODE_REPLAY) {
        replay_summary(conns, t1 - t0, cpu_s() - cpu0);
        if (opt.report)
            replay_report(conns);
    } else if (rc == 0) {
        double secs = t1 - t0;
        fprintf(stderr, "loadgen: mode=%s connections=%u bytes=%" PRIu64 " MB_per_s=%.1f\n",
                mode_name(), opt.connections, total_bytes, (double)total_bytes / secs / 1e6);
        printf("events=%" PRIu64 " seconds=%.3f events_per_s=%.0f\n", opt.events, secs,
               (double)opt.events / secs);
        fflush(stdout);
    }
    for (unsigned i = 0; i < opt.connections; i++) {
        free(conns[i].buf);
        free(conns[i].off);
    }
    free(conns);
    free(th);
    return rc;
}

/* The discard sink: one thread per connection reads to EOF, answers "<bytes read>\n", closes. */
static const char *sink_path;

static void sink_stop(int sig)
{
    (void)sig;
    unlink(sink_path);
    _exit(0);
}

static void *sink_thread(void *arg)
{
    int fd = (int)(intptr_t)arg;
    size_t cap = (size_t)1 << 18;
    char *buf = malloc(cap);
    uint64_t total = 0;
    char reply[32];
    int n;
    if (!buf) {
        close(fd);
        return NULL;
    }
    for (;;) {
        ssize_t r = read(fd, buf, cap);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        total += (uint64_t)r;
    }
    free(buf);
    n = snprintf(reply, sizeof reply, "%" PRIu64 "\n", total);
    if (write(fd, reply, (size_t)n) < 0) {
        /* The client went away; nothing to tell anyone. */
    }
    close(fd);
    return NULL;
}

/* --sink-ack: a daemon that does nothing (replay mode's ceiling). It takes the hello's seq, answers
 * with a welcome whose next_seq is that seq, then after every read acknowledges every whole line
 * read so far. */
static void *sink_ack_thread(void *arg)
{
    int fd = (int)(intptr_t)arg;
    size_t cap = (size_t)1 << 18;
    char *buf = malloc(cap);
    char hello[1024], reply[160];
    size_t hlen = 0;
    bool welcomed = false;
    uint64_t seq = 0;
    while (buf) {
        ssize_t r = read(fd, buf, cap);
        char *p = buf, *end, *nl;
        uint64_t lines = 0;
        int n;
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        end = buf + r;
        if (!welcomed) {
            const char *q;
            size_t take;
            nl = memchr(p, '\n', (size_t)r);
            take = nl ? (size_t)(nl - p) + 1 : (size_t)r;
            if (take > sizeof hello - 1 - hlen)
                take = sizeof hello - 1 - hlen;
            memcpy(hello + hlen, p, take);
            hlen += take;
            if (!nl)
                continue;
            p = nl + 1;
            hello[hlen] = '\0';
            q = strstr(hello, "\"seq\":");
            seq = q ? strtoull(q + 6, NULL, 10) : 0;
            welcomed = true;
            n = snprintf(reply, sizeof reply,
                         "{\"welcome\":\"stepscope/1\",\"job_id\":1,\"session_id\":1,\"stream_id\":1,"
                         "\"next_seq\":%" PRIu64 "}\n",
                         seq);
            if (write(fd, reply, (size_t)n) != n)
                break;
        }
        while (p < end && (nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
            lines++;
            p = nl + 1;
        }
        if (lines == 0)
            continue;
        seq += lines;
        n = snprintf(reply, sizeof reply, "{\"ack\":%" PRIu64 "}\n", seq);
        if (write(fd, reply, (size_t)n) != n)
            break;
    }
    free(buf);
    close(fd);
    return NULL;
}

static int run_sink(void)
{
    struct sockaddr_un sa;
    struct sigaction sa_stop;
    pthread_attr_t attr;
    int lfd;

    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(opt.socket) >= sizeof sa.sun_path) {
        fprintf(stderr, "loadgen: socket path too long: %s\n", opt.socket);
        return 2;
    }
    strcpy(sa.sun_path, opt.socket);
    sink_path = opt.socket;
    unlink(opt.socket);
    lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(lfd, 128) < 0)
        die("sink %s: %s", opt.socket, strerror(errno));

    memset(&sa_stop, 0, sizeof sa_stop);
    sa_stop.sa_handler = sink_stop;
    sigaction(SIGTERM, &sa_stop, NULL);
    sigaction(SIGINT, &sa_stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    printf("loadgen: sink listening on %s\n", opt.socket);
    fflush(stdout);
    for (;;) {
        pthread_t t;
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            die("accept: %s", strerror(errno));
        }
        if (pthread_create(&t, &attr, opt.sink_ack ? sink_ack_thread : sink_thread,
                           (void *)(intptr_t)fd) != 0)
            close(fd);
    }
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (!v) {
            fprintf(stderr, "loadgen: %s needs a value\n", a);
            usage(stderr);
            return 2;
        }
        i++;
        if (strcmp(a, "--socket") == 0) {
            opt.socket = v;
        } else if (strcmp(a, "--sink") == 0 || strcmp(a, "--sink-ack") == 0) {
            opt.socket = v;
            opt.sink = true;
            opt.sink_ack = strcmp(a, "--sink-ack") == 0;
        } else if (strcmp(a, "--ring-bytes") == 0) {
            opt.ring_bytes = (size_t)parse_u64(a, v);
            if (opt.ring_bytes < 4096) {
                fprintf(stderr, "loadgen: --ring-bytes must be at least 4096\n");
                return 2;
            }
        } else if (strcmp(a, "--progress-ms") == 0) {
            uint64_t ms = parse_u64(a, v);
            opt.progress_ms = ms > 60000 ? 60000 : (unsigned)ms;
        } else if (strcmp(a, "--report") == 0) {
            opt.report = v;
        } else if (strcmp(a, "--connections") == 0) {
            uint64_t n = parse_u64(a, v);
            if (n < 1 || n > 4096) {
                fprintf(stderr, "loadgen: --connections must be 1..4096\n");
                return 2;
            }
            opt.connections = (unsigned)n;
        } else if (strcmp(a, "--events") == 0) {
            opt.events = parse_u64(a, v);
        } else if (strcmp(a, "--event-bytes") == 0) {
            opt.event_bytes = (size_t)parse_u64(a, v);
        } else if (strcmp(a, "--batch-bytes") == 0) {
            opt.batch_bytes = (size_t)parse_u64(a, v);
            if (opt.batch_bytes == 0) {
                fprintf(stderr, "loadgen: --batch-bytes must be > 0\n");
                return 2;
            }
        } else if (strcmp(a, "--timeout") == 0) {
            uint64_t t = parse_u64(a, v);
            opt.timeout_s = t < 1 ? 1 : t > 86400 ? 86400 : (int)t;
        } else if (strcmp(a, "--step-every") == 0) {
            opt.step_every = parse_u64(a, v);
        } else if (strcmp(a, "--rate") == 0) {
            opt.rate = parse_u64(a, v);
        } else if (strcmp(a, "--job") == 0) {
            if (strlen(v) < 1 || strlen(v) > 256 || strpbrk(v, "\"\\")) {
                fprintf(stderr, "loadgen: --job must be 1..256 bytes without quotes or '\\'\n");
                return 2;
            }
            opt.job = v;
        } else if (strcmp(a, "--mode") == 0) {
            if (strcmp(v, "daemon") == 0) {
                opt.mode = MODE_DAEMON;
            } else if (strcmp(v, "raw") == 0) {
                opt.mode = MODE_RAW;
            } else if (strcmp(v, "replay") == 0) {
                opt.mode = MODE_REPLAY;
            } else {
                fprintf(stderr, "loadgen: --mode is daemon, raw or replay\n");
                return 2;
            }
        } else {
            fprintf(stderr, "loadgen: unknown option %s\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!opt.socket) {
        usage(stderr);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    return opt.sink ? run_sink() : run_client();
}
