/* SPDX-License-Identifier: MIT */
/* The flush thread of libstepscope: one per client. The same semantics as the Python client's
 * sender (collectors/python/stepscope/_sender.py), in C:
 *
 * - every flush_interval_ms it drains all rings, encoding each record as one line appended to
 *   the held buffer; lines are numbered (seq) in the order they are encoded and kept until the
 *   daemon acknowledges them. A line that would take the held bytes past buffer_bytes is dropped
 *   and counted: the new one, never an older line that is already numbered;
 * - it connects with a non-blocking socket and exponential backoff (50 ms doubling to 2 s)
 *   while the daemon is absent; the hello carries the client's stream key and seq = the oldest
 *   held line; after the welcome every held line is written again, contiguously from that seq
 *   (the daemon numbers a connection's lines from the hello's seq and skips those it holds, so
 *   each is stored exactly once);
 * - writes are non-blocking sends of up to 64 KiB, made once 4 KiB wait, the oldest unsent line
 *   waited 10 ms, or a flush or close waits; EAGAIN just waits for POLLOUT;
 * - {"ack":N} frees the lines below N that were written on this connection (so a connection's
 *   numbering never skips); {"error":...} is counted; {"capture":...} goes to the capture
 *   callback when one is set (ss_on_capture); other lines go to the control callback;
 * - flush requests (ss_flush, ss_client_free) are generations: the thread snapshots the request,
 *   drains the rings, and the request is done once every line numbered so far is acknowledged.
 *
 * All of the state is guarded by client->mu, which the thread releases only while it sleeps in
 * poll(), so fork's prepare handler and ss_flush() see it between iterations.
 */
#include "stepscope_int.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static const char bye_line[] = "{\"type\":\"bye\"}\n";

int64_t ss__mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void ss__held_reset(struct ss__held *h)
{
    memset(h, 0, sizeof *h);
}

void ss__held_free(struct ss__held *h)
{
    free(h->buf);
    free(h->ends);
    ss__held_reset(h);
}

static uint64_t held_lines(const struct ss__held *h)
{
    return h->l_n - h->l_head;
}

static uint64_t next_seq(const struct ss__held *h)
{
    return h->base_seq + held_lines(h);
}

/* Room for one more line of up to SS__LINE_MAX bytes at b_end, and one more ends[] slot.
 * Returns false on OOM. */
static bool held_room(struct ss_client *c)
{
    struct ss__held *h = &c->held;
    if (h->l_n == h->ends_alloc) {
        if (h->l_head && h->l_head >= h->ends_alloc / 2) {
            memmove(h->ends, h->ends + h->l_head, (h->l_n - h->l_head) * sizeof *h->ends);
            h->l_n -= h->l_head;
            c->written_line -= h->l_head;
            h->l_head = 0;
        } else {
            size_t n = h->ends_alloc ? h->ends_alloc * 2 : 4096;
            uint64_t *e = realloc(h->ends, n * sizeof *e);
            if (!e)
                return false;
            h->ends = e;
            h->ends_alloc = n;
        }
    }
    size_t used = (size_t)(h->b_end - h->buf_base);
    if (h->alloc - used >= SS__LINE_MAX)
        return true;
    size_t dead = (size_t)(h->b_head - h->buf_base);
    if (dead && dead >= h->alloc / 2) {
        memmove(h->buf, h->buf + dead, used - dead);
        h->buf_base = h->b_head;
        return true;
    }
    size_t n = h->alloc ? h->alloc * 2 : 256 * 1024;
    while (n - used < SS__LINE_MAX)
        n *= 2;
    char *b = realloc(h->buf, n);
    if (!b)
        return false;
    h->buf = b;
    h->alloc = n;
    return true;
}

static void note_unsent(struct ss_client *c)
{
    if (!c->unsent_since_ns)
        c->unsent_since_ns = ss__mono_ns();
}

/* Takes the n bytes just written at the end of the buffer as one held line, or drops it. */
static void held_commit(struct ss_client *c, size_t n)
{
    struct ss__held *h = &c->held;
    if (h->b_end + n - h->b_head > c->buffer_bytes) {
        atomic_fetch_add_explicit(&c->st_dropped_buffer, 1, memory_order_relaxed);
        return;
    }
    h->b_end += n;
    h->ends[h->l_n++] = h->b_end;
    note_unsent(c);
}

static void held_append(struct ss_client *c, const char *line, size_t n)
{
    if (!held_room(c)) {
        atomic_fetch_add_explicit(&c->st_dropped_buffer, 1, memory_order_relaxed);
        return;
    }
    memcpy(c->held.buf + (c->held.b_end - c->held.buf_base), line, n);
    held_commit(c, n);
}

static void drain_ring(struct ss_client *c, struct ss__ring *r)
{
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    uint64_t released = tail;
    while (tail < head) {
        struct ss__rec_hdr hdr;
        const unsigned char *p = r->data + (tail & r->mask);
        memcpy(&hdr, p, sizeof hdr);
        if (hdr.kind != SS__REC_PAD) {
            if (held_room(c)) {
                char *out = c->held.buf + (c->held.b_end - c->held.buf_base);
                size_t n = ss__encode_record(c, (const struct ss__rec_hdr *)(const void *)p, out);
                if (n)
                    held_commit(c, n);
            } else {
                atomic_fetch_add_explicit(&c->st_dropped_buffer, 1, memory_order_relaxed);
            }
        }
        tail += hdr.size;
        if (tail - released >= 64 * 1024) { /* give the producer room early */
            atomic_store_explicit(&r->tail, tail, memory_order_release);
            released = tail;
        }
    }
    atomic_store_explicit(&r->tail, tail, memory_order_release);
}

static void drain_all(struct ss_client *c)
{
    for (struct ss__ring *r = atomic_load_explicit(&c->rings, memory_order_acquire); r;
         r = r->next)
        drain_ring(c, r);
}

int ss__sender_append(struct ss_client *c, const char *line, size_t n)
{
    drain_all(c);
    uint64_t lines = c->held.l_n;
    held_append(c, line, n);
    return c->held.l_n > lines ? 0 : -ENOBUFS;
}

/* The value after "key": in the capture object of line, or NULL. */
static const char *capture_field(const char *obj, const char *key)
{
    const char *p = strstr(obj, key);
    return p ? p + strlen(key) : NULL;
}

static bool capture_int(const char *obj, const char *key, int64_t *ret)
{
    const char *p = capture_field(obj, key);
    if (!p)
        return false;
    if (strncmp(p, "null", 4) == 0) {
        *ret = -1;
        return true;
    }
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (end == p || errno || v < 0 || (*end != ',' && *end != '}'))
        return false;
    *ret = v;
    return true;
}

bool ss__parse_capture(const char *line, struct ss_capture_request *req)
{
    static const char *const names[] = {"cpu",   "cuda",   "device", "shapes",
                                        "stack", "memory", "flops",  "modules"};
    memset(req, 0, sizeof *req);
    req->id = -1;
    const char *obj = capture_field(line, "{\"capture\":{");
    int64_t id;
    if (!obj || !capture_int(obj, "\"id\":", &id))
        return false;
    req->id = id;
    if (!capture_int(obj, "\"start_step\":", &req->start_step) ||
        !capture_int(obj, "\"steps\":", &req->steps) || req->steps < 1)
        return false;
    const char *w = capture_field(obj, "\"what\":[");
    const char *end = w ? strchr(w, ']') : NULL;
    if (!end)
        return false;
    while (w < end) {
        const char *q = *w == '"' ? memchr(w + 1, '"', (size_t)(end - w - 1)) : NULL;
        if (!q)
            return false;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if ((size_t)(q - w - 1) == strlen(names[i]) &&
                memcmp(w + 1, names[i], (size_t)(q - w - 1)) == 0)
                req->what |= 1u << i;
        w = q + 1;
        if (w < end && *w == ',')
            w++;
    }
    return true;
}

/* A capture request: to the capture callback, or failed at once when it cannot be read. */
static void on_capture(struct ss_client *c, const char *line)
{
    struct ss_capture_request req;
    atomic_fetch_add_explicit(&c->st_capture_requests, 1, memory_order_relaxed);
    if (ss__parse_capture(line, &req)) {
        c->capture_cb(c, &req, c->capture_userdata);
        return;
    }
    if (req.id >= 0)
        ss_capture_state(c, req.id, SS_CAPTURE_FAILED, "libstepscope: unreadable capture request");
}

static void check_done(struct ss_client *c)
{
    if (c->pending_gen > c->done_gen && c->held.base_seq >= c->flush_target) {
        c->done_gen = c->pending_gen;
        pthread_cond_broadcast(&c->cond);
    }
}

/* Frees the held lines below min(acked_upto, written on this connection). With all = true
 * (before a new connection) every line below acked_upto, written or not. */
static void free_acked(struct ss_client *c, bool all)
{
    struct ss__held *h = &c->held;
    uint64_t limit = all ? h->l_n : c->written_line;
    uint64_t upto = h->base_seq + (limit - h->l_head);
    if (c->acked_upto < upto)
        upto = c->acked_upto;
    if (upto <= h->base_seq)
        return;
    uint64_t n = upto - h->base_seq;
    h->l_head += n;
    h->b_head = h->ends[h->l_head - 1];
    h->base_seq = upto;
    atomic_fetch_add_explicit(&c->st_acked, n, memory_order_relaxed);
    check_done(c);
}

static void disconnect(struct ss_client *c, bool failed_attempt)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->state = SS__DISCONNECTED;
    c->rlen = 0;
    c->rskip = false;
    atomic_store(&c->st_connected, 0);
    int64_t now = ss__mono_ns();
    if (failed_attempt) {
        atomic_fetch_add_explicit(&c->st_connect_failures, 1, memory_order_relaxed);
        c->next_connect_ns = now + (int64_t)c->backoff_ms * 1000000LL;
        c->backoff_ms = c->backoff_ms * 2 > SS__BACKOFF_MAX_MS ? SS__BACKOFF_MAX_MS
                                                               : c->backoff_ms * 2;
    } else {
        /* A connection that worked broke (daemon restart): try again soon, not in a spin. */
        c->next_connect_ns = now + SS__BACKOFF_MIN_MS * 1000000LL;
    }
}

static int send_some(struct ss_client *c, const char *p, size_t n)
{
    for (;;) {
        ssize_t k = send(c->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (k >= 0) {
            atomic_fetch_add_explicit(&c->st_bytes, (uint64_t)k, memory_order_relaxed);
            atomic_fetch_add_explicit(&c->st_writes, 1, memory_order_relaxed);
            return (int)k;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        return -errno;
    }
}

static void try_connect(struct ss_client *c)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    size_t len = strlen(c->socket_path);
    if (len >= sizeof sa.sun_path) {
        disconnect(c, true);
        return;
    }
    memcpy(sa.sun_path, c->socket_path, len);
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        disconnect(c, true);
        return;
    }
    /* Lines acknowledged on an earlier connection but not rewritten since are durable. */
    free_acked(c, true);
    c->wpos = c->held.b_head;
    c->written_line = c->held.l_head;
    c->hs_len = ss__encode_hello(c, c->held.base_seq, c->hs, sizeof c->hs);
    c->hs_off = 0;
    c->hs_deadline_ns = ss__mono_ns() + SS__HANDSHAKE_NS;
    c->state = SS__HANDSHAKE;
}

static void on_welcome(struct ss_client *c)
{
    c->state = SS__CONNECTED;
    c->backoff_ms = SS__BACKOFF_MIN_MS;
    uint64_t n = atomic_fetch_add(&c->st_connects, 1) + 1;
    if (n > 1)
        atomic_fetch_add(&c->st_replayed, held_lines(&c->held));
    atomic_store(&c->st_connected, 1);
    c->unsent_since_ns = held_lines(&c->held) ? ss__mono_ns() : 0;
}

/* The first key of a daemon line: ack, error, welcome or something for the control callback. */
static void on_line(struct ss_client *c, char *line, size_t len)
{
    size_t i = 0;
    while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
        i++;
    if (i == len)
        return;
    const char *key = NULL;
    size_t klen = 0, j = i;
    if (line[j] == '{') {
        j++;
        while (j < len && (line[j] == ' ' || line[j] == '\t'))
            j++;
        if (j < len && line[j] == '"') {
            key = line + ++j;
            while (j < len && line[j] != '"')
                j++;
            klen = (size_t)(line + j - key);
            j++;
            while (j < len && (line[j] == ' ' || line[j] == '\t' || line[j] == ':'))
                j++;
        }
    }
    if (key && klen == 3 && memcmp(key, "ack", 3) == 0) {
        uint64_t v = 0;
        bool digits = false;
        while (j < len && line[j] >= '0' && line[j] <= '9' && v < UINT64_MAX / 10) {
            v = v * 10 + (uint64_t)(line[j++] - '0');
            digits = true;
        }
        if (digits && v > c->acked_upto) {
            c->acked_upto = v;
            free_acked(c, false);
        }
        return;
    }
    if (key && klen == 5 && memcmp(key, "error", 5) == 0) {
        atomic_fetch_add_explicit(&c->st_errors, 1, memory_order_relaxed);
        if (c->state == SS__HANDSHAKE)
            disconnect(c, true); /* bad_hello, stream_busy: the daemon closes */
        return;
    }
    if (key && klen == 7 && memcmp(key, "welcome", 7) == 0) {
        if (c->state == SS__HANDSHAKE)
            on_welcome(c);
        return;
    }
    if (key && klen == 7 && memcmp(key, "capture", 7) == 0 && c->capture_cb) {
        char saved = line[len];
        line[len] = '\0';
        on_capture(c, line);
        line[len] = saved;
        return;
    }
    atomic_fetch_add_explicit(&c->st_control, 1, memory_order_relaxed);
    if (c->control_cb) {
        char saved = line[len];
        line[len] = '\0';
        c->control_cb(line, len, c->control_userdata);
        line[len] = saved;
    }
}

static void do_read(struct ss_client *c)
{
    for (int rounds = 0; rounds < 64 && c->fd >= 0; rounds++) {
        ssize_t k = recv(c->fd, c->rbuf + c->rlen, sizeof c->rbuf - 1 - c->rlen, MSG_DONTWAIT);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (k <= 0) {
            disconnect(c, c->state == SS__HANDSHAKE);
            return;
        }
        c->rlen += (size_t)k;
        size_t start = 0;
        for (size_t i = c->rlen - (size_t)k; i < c->rlen && c->fd >= 0; i++) {
            if (c->rbuf[i] != '\n')
                continue;
            if (!c->rskip)
                on_line(c, c->rbuf + start, i - start);
            c->rskip = false;
            start = i + 1;
        }
        if (c->fd < 0)
            return;
        memmove(c->rbuf, c->rbuf + start, c->rlen - start);
        c->rlen -= start;
        if (c->rlen == sizeof c->rbuf - 1) { /* a line this long is not ours to understand */
            c->rlen = 0;
            c->rskip = true;
        }
    }
}

/* Returns true when the socket has more to write than it took (wait for POLLOUT). */
static bool do_write(struct ss_client *c, int64_t now)
{
    if (c->state == SS__HANDSHAKE) {
        if (c->hs_off < c->hs_len) {
            int k = send_some(c, c->hs + c->hs_off, c->hs_len - c->hs_off);
            if (k < 0) {
                disconnect(c, true);
                return false;
            }
            c->hs_off += (size_t)k;
        }
        return c->hs_off < c->hs_len;
    }
    if (c->state != SS__CONNECTED)
        return false;
    struct ss__held *h = &c->held;
    uint64_t unsent = h->b_end - c->wpos;
    if (!unsent)
        return false;
    bool urgent = c->pending_gen > c->done_gen || c->closing || c->stop;
    if (unsent < SS__BATCH_MIN && !urgent && now - c->unsent_since_ns < SS__LINGER_NS)
        return false;
    for (int rounds = 0; rounds < 16 && unsent; rounds++) {
        size_t n = unsent < SS__BATCH_MAX ? (size_t)unsent : SS__BATCH_MAX;
        int k = send_some(c, h->buf + (c->wpos - h->buf_base), n);
        if (k < 0) {
            disconnect(c, false);
            return false;
        }
        if (k == 0)
            return true;
        c->wpos += (uint64_t)k;
        unsent -= (uint64_t)k;
        while (c->written_line < h->l_n && h->ends[c->written_line] <= c->wpos)
            c->written_line++;
        uint64_t seq = h->base_seq + (c->written_line - h->l_head);
        if (seq > c->hi_sent_seq) {
            atomic_fetch_add_explicit(&c->st_sent, seq - c->hi_sent_seq, memory_order_relaxed);
            c->hi_sent_seq = seq;
        }
        free_acked(c, false);
    }
    c->unsent_since_ns = unsent ? now : 0;
    return unsent != 0;
}

void *ss__sender_main(void *arg)
{
    struct ss_client *c = arg;
    pthread_mutex_lock(&c->mu);
    while (!c->stop) {
        uint64_t req = c->req_gen; /* records before this request are in the rings by now */
        drain_all(c);
        if (c->capture_changed) { /* the hello must say whether captures are understood */
            c->capture_changed = false;
            if (c->state != SS__DISCONNECTED)
                disconnect(c, false);
            c->next_connect_ns = 0;
        }
        if (c->closing && !c->bye_queued) {
            held_append(c, bye_line, sizeof bye_line - 1);
            c->bye_queued = true;
        }
        if (req > c->seen_gen) {
            c->seen_gen = req;
            c->pending_gen = req;
            c->flush_target = next_seq(&c->held);
        }
        check_done(c);
        int64_t now = ss__mono_ns();
        if (c->state == SS__DISCONNECTED && !(c->closing && !held_lines(&c->held)) &&
            now >= c->next_connect_ns)
            try_connect(c);
        if (c->state == SS__HANDSHAKE && now > c->hs_deadline_ns)
            disconnect(c, true);
        bool want_out = do_write(c, now);
        atomic_store_explicit(&c->st_held_lines, held_lines(&c->held), memory_order_relaxed);
        atomic_store_explicit(&c->st_held_bytes, c->held.b_end - c->held.b_head,
                              memory_order_relaxed);

        struct pollfd pf[2] = {{c->wake_r, POLLIN, 0}, {c->fd, POLLIN, 0}};
        nfds_t n = 1;
        if (c->fd >= 0) {
            pf[1].events = (short)(POLLIN | (want_out ? POLLOUT : 0));
            n = 2;
        }
        int timeout = (int)c->flush_interval_ms;
        pthread_mutex_unlock(&c->mu);
        int pr = poll(pf, n, timeout);
        pthread_mutex_lock(&c->mu);
        if (pr <= 0)
            continue;
        if (pf[0].revents & POLLIN) {
            char junk[256];
            while (read(c->wake_r, junk, sizeof junk) > 0)
                ;
        }
        if (n == 2 && c->fd >= 0 && (pf[1].revents & (POLLIN | POLLHUP | POLLERR)))
            do_read(c);
    }
    /* Whatever is still held is lost with the client; ss_client_free said so. */
    pthread_mutex_unlock(&c->mu);
    return NULL;
}
