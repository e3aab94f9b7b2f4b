/* SPDX-License-Identifier: MIT */
/*
 * guard: the request deadline, the defence against slow clients (slowloris). libmicrohttpd
 * closes a connection only once it has been idle for http_timeout_s, so a client that trickles
 * its headers a byte every few seconds is never idle and holds its connection forever; enough of
 * them fill http_max_connections and the dashboard waits in the listen backlog. The guard closes
 * a connection whose request (headers and body) is not fully in request_timeout_s after its
 * first byte arrived, however steadily the bytes come.
 *
 * MHD has no hook per read, so the guard watches from outside. MHD's connection notifications
 * register every socket; a reaper thread wakes every WEB_GUARD_TICK_MS and, for a connection
 * waiting for a request, asks the kernel how many bytes the socket has received (TCP_INFO
 * tcpi_bytes_received): more than when the last answer was completed means a request has begun,
 * and the reaper notes that instant. The access handler marks the request received at its last
 * call (headers and body in, before the answer is computed, which may take longer than the
 * deadline) or once it queues an answer; MHD's completion callback puts the connection back to
 * waiting with a fresh byte count. A request still not answered at its deadline gets
 * shutdown(SHUT_RDWR) on its socket: MHD's next read sees the end of the stream and MHD closes
 * the connection itself, through its own cleanup and callbacks, freeing the slot.
 *
 * Idle connections (no byte of a new request) are left to MHD's idle timeout, answered ones too:
 * an answer being streamed to a slow reader (a large export, the event stream) is not cut, and a
 * reader that reads nothing is closed by the idle timeout once its socket buffer is full.
 *
 * Concurrency: the list is under one mutex that the reaper holds while it scans and that the
 * CLOSED notification takes; MHD closes the fd only after that notification returns, so the
 * reaper never touches an fd that another connection has reused. A connection's state word is
 * written by its MHD thread (answered, completed) and moved by the reaper from waiting to
 * receiving with a compare-and-swap; the word carries a count of completed requests, so a
 * request that began and was answered between the reaper's look and its swap is not mistaken
 * for a new one.
 */
#include <errno.h>
#include <netinet/in.h>
#include <linux/tcp.h> /* glibc's struct tcp_info lacks tcpi_bytes_received */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "../../lib/clock.h"
#include "../../lib/log.h"
#include "guard.h"

enum {
    GUARD_WAITING = 0,   /* no byte of a request since the last answer was completed */
    GUARD_RECEIVING = 1, /* a request has begun (start_ns); its deadline runs */
    GUARD_ANSWERED = 2,  /* the request is in: the idle timeout's business */
    GUARD_CLOSING = 3,   /* shut down by the reaper; MHD has yet to close it */
};

#define STATE(word) ((unsigned)((word) & 3u))
#define WORD(gen, state) (((gen) << 2) | (uint64_t)(state))

struct web_guard_conn {
    struct web_guard_conn *prev, *next; /* in web_guard.head, under its lock */
    int fd;
    _Atomic uint64_t word;           /* completed requests << 2 | state */
    _Atomic uint64_t base_bytes;     /* tcpi_bytes_received when the last answer completed */
    int64_t start_ns;                /* reaper only: when the request was first seen */
};

struct web_guard {
    pthread_mutex_t lock;
    pthread_cond_t wake;             /* stop */
    bool stop;
    pthread_t thread;
    struct web_guard_conn *head;
    int64_t timeout_ns;
    struct stats *stats;
};

/* Bytes the socket has received so far, or -1 (not TCP, or a kernel without the field). */
static int64_t bytes_received(int fd)
{
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    memset(&ti, 0, sizeof ti);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0 ||
        len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof ti.tcpi_bytes_received)
        return -1;
    return (int64_t)ti.tcpi_bytes_received;
}

static void scan(struct web_guard *g, int64_t now)
{
    for (struct web_guard_conn *k = g->head; k; k = k->next) {
        uint64_t word = atomic_load_explicit(&k->word, memory_order_acquire);
        if (STATE(word) == GUARD_WAITING) {
            int64_t got = bytes_received(k->fd);
            uint64_t base = atomic_load_explicit(&k->base_bytes, memory_order_relaxed);
            if (got < 0 || (uint64_t)got <= base)
                continue;
            uint64_t next = WORD(word >> 2, GUARD_RECEIVING);
            if (!atomic_compare_exchange_strong_explicit(&k->word, &word, next,
                                                         memory_order_acq_rel,
                                                         memory_order_acquire))
                continue; /* answered or completed meanwhile */
            k->start_ns = now;
            word = next;
        }
        if (STATE(word) != GUARD_RECEIVING || now - k->start_ns < g->timeout_ns)
            continue;
        if (!atomic_compare_exchange_strong_explicit(&k->word, &word,
                                                     WORD(word >> 2, GUARD_CLOSING),
                                                     memory_order_acq_rel, memory_order_acquire))
            continue;
        /* MHD owns the fd; shutting it down (not closing) makes its next read end the
         * connection. */
        (void)shutdown(k->fd, SHUT_RDWR);
        STATS_ADD(g->stats, http_deadline_closed, 1);
    }
}

static void *reaper(void *arg)
{
    struct web_guard *g = arg;
    pthread_mutex_lock(&g->lock);
    while (!g->stop) {
        scan(g, clock_mono_ns());
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += (long)WEB_GUARD_TICK_MS * 1000000L;
        while (until.tv_nsec >= 1000000000L) {
            until.tv_nsec -= 1000000000L;
            until.tv_sec++;
        }
        while (!g->stop && pthread_cond_timedwait(&g->wake, &g->lock, &until) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

int web__guard_start(struct web_guard **ret, unsigned timeout_s, struct stats *stats)
{
    struct web_guard *g = calloc(1, sizeof *g);
    if (!g)
        return -ENOMEM;
    g->timeout_ns = (int64_t)timeout_s * 1000000000;
    g->stats = stats;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->wake, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&g->lock, NULL);
    int r = pthread_create(&g->thread, NULL, reaper, g);
    if (r != 0) {
        pthread_cond_destroy(&g->wake);
        pthread_mutex_destroy(&g->lock);
        free(g);
        return -r;
    }
    *ret = g;
    return 0;
}

void web__guard_stop_thread(struct web_guard *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->lock);
    g->stop = true;
    pthread_cond_signal(&g->wake);
    pthread_mutex_unlock(&g->lock);
    pthread_join(g->thread, NULL);
}

void web__guard_free(struct web_guard *g)
{
    if (!g)
        return;
    /* MHD has stopped: every CLOSED notification has emptied the list. */
    while (g->head) {
        struct web_guard_conn *k = g->head;
        g->head = k->next;
        free(k);
    }
    pthread_cond_destroy(&g->wake);
    pthread_mutex_destroy(&g->lock);
    free(g);
}

void web__guard_notify(struct web_guard *g, int fd, void **socket_context, bool started)
{
    if (!g)
        return;
    if (started) {
        struct web_guard_conn *k = fd >= 0 ? calloc(1, sizeof *k) : NULL;
        if (!k)
            return; /* unguarded: still served, closed by the idle timeout only */
        k->fd = fd;
        atomic_init(&k->word, WORD(0, GUARD_WAITING));
        atomic_init(&k->base_bytes, 0);
        pthread_mutex_lock(&g->lock);
        k->next = g->head;
        if (g->head)
            g->head->prev = k;
        g->head = k;
        pthread_mutex_unlock(&g->lock);
        *socket_context = k;
        return;
    }
    struct web_guard_conn *k = *socket_context;
    if (!k)
        return;
    pthread_mutex_lock(&g->lock);
    if (k->prev)
        k->prev->next = k->next;
    else
        g->head = k->next;
    if (k->next)
        k->next->prev = k->prev;
    pthread_mutex_unlock(&g->lock);
    free(k);
    *socket_context = NULL;
}

void web__guard_received(struct web_guard *g, void *socket_context)
{
    struct web_guard_conn *k = g ? socket_context : NULL;
    if (!k)
        return;
    uint64_t word = atomic_load_explicit(&k->word, memory_order_acquire);
    if (STATE(word) == GUARD_ANSWERED || STATE(word) == GUARD_CLOSING)
        return;
    /* Only a failed swap by the reaper can race this; it then sees ANSWERED. */
    while (!atomic_compare_exchange_weak_explicit(&k->word, &word, WORD(word >> 2, GUARD_ANSWERED),
                                                  memory_order_acq_rel, memory_order_acquire))
        if (STATE(word) == GUARD_CLOSING)
            return;
}

void web__guard_completed(struct web_guard *g, void *socket_context)
{
    struct web_guard_conn *k = g ? socket_context : NULL;
    if (!k)
        return;
    int64_t got = bytes_received(k->fd);
    atomic_store_explicit(&k->base_bytes, got < 0 ? 0 : (uint64_t)got, memory_order_relaxed);
    uint64_t word = atomic_load_explicit(&k->word, memory_order_acquire);
    while (STATE(word) != GUARD_CLOSING &&
           !atomic_compare_exchange_weak_explicit(&k->word, &word,
                                                  WORD((word >> 2) + 1, GUARD_WAITING),
                                                  memory_order_acq_rel, memory_order_acquire))
        ;
}
