/* SPDX-License-Identifier: MIT */
/*
 * events: GET /api/v1/events, a Server-Sent Events stream that tells the dashboard when a job's
 * live snapshot was republished, so open views refetch at once instead of polling.
 *
 * One watcher thread polls live_query_changed() every WEB_EVENTS_POLL_MS (a mutex and a pass
 * over the published jobs) and appends "event: job" to the buffer of every subscriber; every
 * WEB_EVENTS_HEARTBEAT_S it appends "event: ping" so a client (and any proxy) sees the stream is
 * alive. A subscriber is one server stream (answer.h) of unknown size. The callback copies out what
 * its buffer holds; when the buffer is empty it suspends the connection (web__conn_park() from the
 * stream's read, as microhttpd.h prescribes for MHD_suspend_connection()) and returns 0, so no HTTP
 * thread ever waits or spins on a stream. The watcher resumes a suspended subscriber after
 * appending to it.
 *
 * Hang-ups: the server does not poll a suspended connection, so it would see a client that went
 * away (a tab that closed or reloaded) only when the next heartbeat is written to it, up to
 * WEB_EVENTS_HEARTBEAT_S later, and its place would stay taken meanwhile. So on each pass the
 * watcher peeks at the socket of every suspended subscriber (recv() with MSG_PEEK|MSG_DONTWAIT:
 * end of file or an error means the client has gone); such a subscriber is unlinked at once,
 * which frees its place, and resumed so that its callback ends the stream and the server closes
 * the connection. A client that half-closes (shuts down its sending side) counts as gone.
 *
 * Locking: the hub's mutex guards the list; each subscriber's mutex guards its buffer and its
 * suspended flag. The callback suspends while holding the subscriber's mutex, so the watcher,
 * which reads and clears the flag under that mutex, never resumes a connection that is not
 * suspended; it calls MHD_resume_connection() after dropping the mutex (a suspended connection
 * cannot go away meanwhile). MHD's free callback only marks the subscriber closed; the watcher
 * unlinks it, so no MHD callback ever takes the hub's mutex. A subscriber is freed by whichever
 * of the two lets go last (refs).
 *
 * A slow client whose buffer is full misses events (counted in dropped; the next event or ping
 * still gets through once it reads), never blocks the watcher. web_stop() stops the watcher and
 * resumes every subscriber before MHD_stop_daemon(); the callback then ends each stream.
 */
#include "events.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>

#include "../live/live.h"
#include "answer.h"
#include "server.h"

#define WEB_EVENTS_POLL_MS 100
#define WEB_EVENTS_HEARTBEAT_S 10
#define WEB_EVENTS_BUF 8192 /* bytes queued per subscriber at most */
#define WEB_EVENTS_BLOCK 4096

struct web_sub {
    pthread_mutex_t lock;
    struct web_conn *conn;    /* parked by on_read(), woken by the watcher */
    int fd;                   /* conn's socket; open while conn is suspended */
    struct web_events *hub;
    atomic_int refs;  /* the hub's list and MHD's response */
    bool suspended;   /* the callback suspended conn and nobody resumed it yet */
    bool closed;      /* MHD freed the response: unlink */
    bool gone;        /* the client hung up while suspended: end the stream */
    size_t len;
    char buf[WEB_EVENTS_BUF];
    struct web_sub *next;
};

struct web_events {
    pthread_mutex_t lock; /* subs, n_subs, stop, wake */
    pthread_cond_t wake;
    pthread_t thread;
    bool thread_started;
    atomic_bool stop;
    struct live *live;
    struct web_sub *subs;
    size_t n_subs;
    size_t max_subs;
    uint64_t cursor;
    int64_t dropped;
    int64_t *ids; /* the watcher's live_query_changed() answer, grown as needed */
    size_t cap_ids;
};

static void sub_unref(struct web_sub *s)
{
    if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1) {
        pthread_mutex_destroy(&s->lock);
        free(s);
    }
}

/* Appends msg to s; resumes its connection if the callback had suspended it. Returns false if
 * it did not fit. Hub lock held. */
static bool sub_push(struct web_sub *s, const char *msg, size_t n)
{
    pthread_mutex_lock(&s->lock);
    bool fits = !s->closed && s->len + n <= sizeof s->buf;
    if (fits) {
        memcpy(s->buf + s->len, msg, n);
        s->len += n;
    }
    bool resume = s->suspended;
    s->suspended = false;
    pthread_mutex_unlock(&s->lock);
    if (resume)
        web__conn_wake(s->conn);
    return fits;
}

/* True if the client of a suspended subscriber has gone: its socket reads end of file or fails.
 * s locked and suspended, so the connection (and fd) cannot go away meanwhile. */
static bool sub_hung_up(const struct web_sub *s)
{
    if (s->fd < 0)
        return false;
    char c;
    ssize_t r = recv(s->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* Unlinks closed subscribers and those whose client hung up (waking the latter so that the
 * server ends them), then pushes msg to the others. Hub lock held. */
static void broadcast(struct web_events *h, const char *msg, size_t n)
{
    struct web_sub **pp = &h->subs;
    while (*pp) {
        struct web_sub *s = *pp;
        pthread_mutex_lock(&s->lock);
        bool closed = s->closed;
        bool gone = !closed && s->suspended && sub_hung_up(s);
        if (gone) {
            s->gone = true;
            s->suspended = false;
        }
        pthread_mutex_unlock(&s->lock);
        if (gone)
            web__conn_wake(s->conn);
        if (closed || gone) {
            *pp = s->next;
            h->n_subs--;
            sub_unref(s);
            continue;
        }
        if (msg && !sub_push(s, msg, n))
            h->dropped++;
        pp = &s->next;
    }
}

static void *watch(void *arg)
{
    struct web_events *h = arg;
    struct timespec last_ping;
    clock_gettime(CLOCK_MONOTONIC, &last_ping);
    pthread_mutex_lock(&h->lock);
    while (!atomic_load(&h->stop)) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += WEB_EVENTS_POLL_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&h->wake, &h->lock, &until);
        if (atomic_load(&h->stop))
            break;
        size_t n = 0; /* out of memory: none now, the cursor stays, the next pass says them */
        (void)live_query_changed(h->live, &h->cursor, &h->ids, &h->cap_ids, &n);
        char msg[96];
        for (size_t i = 0; i < n; i++) {
            int m = snprintf(msg, sizeof msg, "event: job\ndata: {\"job\":%" PRId64 "}\n\n",
                             h->ids[i]);
            broadcast(h, msg, (size_t)m);
        }
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - last_ping.tv_sec >= WEB_EVENTS_HEARTBEAT_S) {
            last_ping = now;
            static const char ping[] = "event: ping\ndata: {}\n\n";
            broadcast(h, ping, sizeof ping - 1);
        } else if (n == 0) {
            broadcast(h, NULL, 0); /* unlink closed subscribers */
        }
    }
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

int web__events_start(struct web *w, size_t max_subs)
{
    struct web_events *h = calloc(1, sizeof *h);
    if (!h)
        return -ENOMEM;
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->wake, NULL);
    atomic_init(&h->stop, false);
    h->live = w->live;
    h->max_subs = max_subs;
    w->events = h;
    if (pthread_create(&h->thread, NULL, watch, h) != 0)
        return -EAGAIN;
    h->thread_started = true;
    return 0;
}

void web__events_quiesce(struct web *w)
{
    struct web_events *h = w->events;
    if (!h)
        return;
    pthread_mutex_lock(&h->lock);
    atomic_store(&h->stop, true);
    pthread_cond_signal(&h->wake);
    pthread_mutex_unlock(&h->lock);
    if (h->thread_started)
        pthread_join(h->thread, NULL);
    h->thread_started = false;
    /* Wake every stream so its callback sees stop and ends it. */
    pthread_mutex_lock(&h->lock);
    for (struct web_sub *s = h->subs; s; s = s->next)
        (void)sub_push(s, "", 0);
    pthread_mutex_unlock(&h->lock);
}

void web__events_free(struct web *w)
{
    struct web_events *h = w->events;
    if (!h)
        return;
    while (h->subs) {
        struct web_sub *s = h->subs;
        h->subs = s->next;
        sub_unref(s);
    }
    pthread_cond_destroy(&h->wake);
    pthread_mutex_destroy(&h->lock);
    free(h->ids);
    free(h);
    w->events = NULL;
}

static ssize_t on_read(void *cls, char *buf, size_t max)
{
    struct web_sub *s = cls;
    pthread_mutex_lock(&s->lock);
    if (s->gone || atomic_load(&s->hub->stop)) {
        pthread_mutex_unlock(&s->lock);
        return WEB_STREAM_END;
    }
    size_t n = s->len < max ? s->len : max;
    if (n > 0) {
        memcpy(buf, s->buf, n);
        memmove(s->buf, s->buf + n, s->len - n);
        s->len -= n;
    } else {
        s->suspended = true;
        web__conn_park(s->conn);
    }
    pthread_mutex_unlock(&s->lock);
    return (ssize_t)n;
}

static void on_free(void *cls)
{
    struct web_sub *s = cls;
    pthread_mutex_lock(&s->lock);
    s->closed = true;
    s->suspended = false;
    pthread_mutex_unlock(&s->lock);
    sub_unref(s);
}

int web__route_events(struct web *w, const struct web_req *q, struct web_answer *a)
{
    struct web_events *h = w->events;
    if (!h || !w->live)
        return web__error(a, WEB_HTTP_SERVICE_UNAVAILABLE, "unavailable",
                          "no live state attached");
    struct web_sub *s = calloc(1, sizeof *s);
    if (!s)
        return web__error(a, WEB_HTTP_INTERNAL_SERVER_ERROR, "internal", "out of memory");
    pthread_mutex_init(&s->lock, NULL);
    s->conn = web__req_conn(q);
    s->fd = web__conn_fd(s->conn);
    s->hub = h;
    atomic_init(&s->refs, 2);
    /* The client reconnects 2 s after a lost stream; "hello" says the stream is up. */
    static const char hello[] = "retry: 2000\nevent: hello\ndata: {}\n\n";
    memcpy(s->buf, hello, sizeof hello - 1);
    s->len = sizeof hello - 1;

    pthread_mutex_lock(&h->lock);
    bool full = h->n_subs >= h->max_subs || atomic_load(&h->stop);
    if (!full) {
        s->next = h->subs;
        h->subs = s;
        h->n_subs++;
    }
    pthread_mutex_unlock(&h->lock);
    if (full) {
        pthread_mutex_destroy(&s->lock);
        free(s);
        return web__error(a, WEB_HTTP_SERVICE_UNAVAILABLE, "busy", "too many event streams");
    }
    /* The stream's free (on_free(), when the server is done with the answer, or at once if it
     * is never sent) lets go of MHD's reference; the hub's goes at the watcher's next pass after
 * that, or once it finds the client gone. */
    web__answer_done(a);
    a->status = WEB_HTTP_OK;
    a->type = "text/event-stream";
    a->cache_control = "no-store";
    a->body = WEB_BODY_STREAM;
    a->stream = (struct web_stream){.read = on_read, .free = on_free, .ctx = s,
                                    .block = WEB_EVENTS_BLOCK};
    return 0;
}
