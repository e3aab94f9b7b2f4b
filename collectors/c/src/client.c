/* SPDX-License-Identifier: MIT */
/* The recording side of libstepscope: options, per-thread rings, the hot path, and fork.
 *
 * Each thread that records on a client gets its own struct ss__ring (a power-of-two byte ring
 * of variable-size binary records), pushed once onto the client's lock-free list, and remembers
 * it in a small thread-local cache keyed by (client pointer, client generation). The hot path is
 * therefore: compare the cache, strlen and memcpy the names, compare head against a cached tail,
 * store the record, publish head with one release store. No lock, no system call, no allocation
 * (except the thread's first call) and no shared write other than the ring's own head; a full
 * ring drops the record and bumps a counter only its owner writes.
 *
 * A thread that exits hands its ring back (a pthread key destructor clears "owned"), so the next
 * new thread reuses it instead of growing the list. Registry and fork: every live client is on a
 * global list; pthread_atfork's prepare handler takes every client's locks so that the flush
 * thread is between iterations, and the child handler turns each client into a fresh one (new
 * stream key and generation, empty held buffer and rings, the parent's socket closed on the
 * child's side only) whose flush thread starts with the child's first record.
 */
#include "stepscope.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "stepscope_int.h"

#define TLS_SLOTS 4
#define PHASE_NONE 0xFFFFu
#define RING_MIN (64 * 1024)
#define RING_MAX ((size_t)1 << 31)
#define STR_MAX 256 /* hello strings (PROTOCOL.md section 1) */

struct tls_slot {
    struct ss_client *c;
    uint64_t gen;
    struct ss__ring *r;
};

/* initial-exec: a plain %fs-relative access on the hot path, not a __tls_get_addr() call per
 * record from the shared library (96 bytes of static TLS). */
#if defined(__GNUC__)
#define SS_TLS_MODEL __attribute__((tls_model("initial-exec")))
#else
#define SS_TLS_MODEL
#endif
static _Thread_local struct tls_slot tls[TLS_SLOTS] SS_TLS_MODEL;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER; /* the registry */
static struct ss_client *g_clients;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_key;
static bool g_key_ok;
static _Atomic uint64_t g_gen = 1;

int64_t ss_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void ss_options_init(struct ss_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->rank = -1;
    opt->world_size = -1;
    opt->local_rank = -1;
}

/* ---- the registry, thread exit and fork ------------------------------------------------- */

static bool registered(const struct ss_client *c, uint64_t gen)
{
    for (struct ss_client *x = g_clients; x; x = x->reg_next)
        if (x == c && x->gen == gen)
            return true;
    return false;
}

/* A thread with rings exits: hand them back for reuse. Its records stay for the flush thread. */
static void on_thread_exit(void *unused)
{
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < TLS_SLOTS; i++) {
        if (tls[i].c && registered(tls[i].c, tls[i].gen))
            atomic_store_explicit(&tls[i].r->owned, 0, memory_order_release);
        tls[i].c = NULL;
        tls[i].r = NULL;
    }
    pthread_mutex_unlock(&g_mu);
}

static void atfork_prepare(void)
{
    pthread_mutex_lock(&g_mu);
    for (struct ss_client *c = g_clients; c; c = c->reg_next) {
        pthread_mutex_lock(&c->start_mu);
        pthread_mutex_lock(&c->mu);
    }
}

static void atfork_parent(void)
{
    for (struct ss_client *c = g_clients; c; c = c->reg_next) {
        pthread_mutex_unlock(&c->mu);
        pthread_mutex_unlock(&c->start_mu);
    }
    pthread_mutex_unlock(&g_mu);
}

static int init_sync(struct ss_client *c)
{
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca))
        return -ENOMEM;
    (void)pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int r = pthread_cond_init(&c->cond, &ca);
    pthread_condattr_destroy(&ca);
    if (r)
        return -ENOMEM;
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->start_mu, NULL);
    return 0;
}

static char *make_stream(const struct ss_client *c, bool child)
{
    char key[512];
    int n;
    if (c->given_stream && !child)
        n = snprintf(key, sizeof key, "%s", c->given_stream);
    else if (c->given_stream)
        n = snprintf(key, sizeof key, "%s/%s:%d:%lld", c->given_stream, c->host, c->pid,
                     (long long)ss_now_ns());
    else
        n = snprintf(key, sizeof key, "%s:%d:%lld", c->host, c->pid, (long long)ss_now_ns());
    if (n < 0)
        return NULL;
    size_t len = ss__clamp_utf8(key, strlen(key), STR_MAX);
    key[len] = '\0';
    return strdup(key);
}

/* Everything the flush thread owns, as in a new client (the held buffer must be empty/freed). */
static void reset_flush_state(struct ss_client *c)
{
    c->wake_r = c->wake_w = -1;
    c->stop = c->closing = c->bye_queued = false;
    c->req_gen = c->seen_gen = c->pending_gen = c->done_gen = 0;
    c->flush_target = 0;
    ss__held_reset(&c->held);
    c->fd = -1;
    c->state = SS__DISCONNECTED;
    c->hs_len = c->hs_off = 0;
    c->hs_deadline_ns = c->next_connect_ns = c->unsent_since_ns = 0;
    c->backoff_ms = SS__BACKOFF_MIN_MS;
    c->wpos = c->written_line = c->acked_upto = c->hi_sent_seq = 0;
    c->rlen = 0;
    c->rskip = false;
    atomic_store(&c->running, 0);
    atomic_store(&c->st_dropped_buffer, 0);
    atomic_store(&c->st_dropped_noring, 0);
    atomic_store(&c->st_acked, 0);
    atomic_store(&c->st_replayed, 0);
    atomic_store(&c->st_errors, 0);
    atomic_store(&c->st_connects, 0);
    atomic_store(&c->st_connect_failures, 0);
    atomic_store(&c->st_control, 0);
    atomic_store(&c->st_capture_requests, 0);
    atomic_store(&c->st_bytes, 0);
    atomic_store(&c->st_writes, 0);
    atomic_store(&c->st_sent, 0);
    atomic_store(&c->st_held_lines, 0);
    atomic_store(&c->st_held_bytes, 0);
    atomic_store(&c->st_connected, 0);
}

static void atfork_child(void)
{
    /* Single-threaded now: the parent's flush threads do not exist here. */
    for (struct ss_client *c = g_clients; c; c = c->reg_next) {
        if (c->fd >= 0)
            close(c->fd); /* our copy only: no shutdown(), the parent keeps its connection */
        if (c->wake_r >= 0)
            close(c->wake_r);
        if (c->wake_w >= 0)
            close(c->wake_w);
        ss__held_free(&c->held);
        /* The parent's lock and wait state means nothing here: initialise afresh, without
         * destroying (a destroy could wait for the parent's waiters, which are not here). */
        (void)init_sync(c);
        reset_flush_state(c);
        c->pid = (int)getpid();
        c->gen = atomic_fetch_add(&g_gen, 1);
        char *s = make_stream(c, true);
        if (s) {
            free(c->stream);
            c->stream = s;
        }
        /* The parent's undrained records are the parent's to send. */
        for (struct ss__ring *r = atomic_load(&c->rings); r; r = r->next) {
            atomic_store(&r->tail, atomic_load(&r->head));
            atomic_store(&r->owned, 0);
            atomic_store(&r->n_records, 0);
            atomic_store(&r->n_dropped, 0);
        }
    }
    pthread_mutex_init(&g_mu, NULL);
}

static void init_once(void)
{
    g_key_ok = pthread_key_create(&g_key, on_thread_exit) == 0;
    (void)pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* ---- options ----------------------------------------------------------------------------- */

static int env_int(const char *name, int fallback)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return fallback;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    while (*end == ' ' || *end == '\t' || *end == '\n')
        end++;
    if (errno || *end || x < INT_MIN || x > INT_MAX)
        return fallback;
    return (int)x;
}

/* A hello string: control characters as '_', at most 256 bytes; NULL/empty: fallback. */
static char *clean_dup(const char *s, const char *fallback)
{
    if (!s || !*s)
        s = fallback;
    if (!s)
        return NULL;
    size_t n = ss__clamp_utf8(s, strlen(s), STR_MAX);
    char *d = malloc(n + 1);
    if (!d)
        return NULL;
    for (size_t i = 0; i < n; i++)
        d[i] = ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) ? '_' : s[i];
    d[n] = '\0';
    return d;
}

static char *program_name(void)
{
    char buf[4096];
    size_t n = 0;
    FILE *f = fopen("/proc/self/cmdline", "r");
    if (f) {
        n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
    }
    buf[n] = '\0'; /* argv[0] ends at its NUL */
    const char *base = strrchr(buf, '/');
    base = base ? base + 1 : buf;
    return clean_dup(base, "c");
}

static char *default_socket(void)
{
    const char *v = getenv("STEPSCOPE_SOCKET");
    if (v && *v)
        return strdup(v);
    char path[4096];
    v = getenv("XDG_RUNTIME_DIR");
    if (v && v[0] == '/')
        snprintf(path, sizeof path, "%s/stepscope.sock", v);
    else
        snprintf(path, sizeof path, "/tmp/stepscope-%u.sock", (unsigned)getuid());
    return strdup(path);
}

static size_t pow2_at_least(size_t n)
{
    size_t p = RING_MIN;
    while (p < n && p < RING_MAX)
        p <<= 1;
    return p;
}

static void free_client_mem(struct ss_client *c)
{
    struct ss__ring *r = atomic_load(&c->rings);
    while (r) {
        struct ss__ring *next = r->next;
        free(r->data);
        free(r);
        r = next;
    }
    ss__held_free(&c->held);
    free(c->socket_path);
    free(c->job);
    free(c->given_stream);
    free(c->framework);
    free(c->framework_version);
    free(c->run);
    free(c->stream);
    free(c);
}

/* Starts the flush thread unless running. Returns 0 or a negative errno. */
static int start_thread(struct ss_client *c)
{
    if (atomic_load_explicit(&c->running, memory_order_acquire))
        return 0;
    int r = 0;
    pthread_mutex_lock(&c->start_mu);
    if (atomic_load(&c->running))
        goto out;
    if (c->wake_r < 0) {
        int p[2];
        if (pipe(p) < 0) {
            r = -errno;
            goto out;
        }
        for (int i = 0; i < 2; i++) {
            (void)fcntl(p[i], F_SETFL, fcntl(p[i], F_GETFL) | O_NONBLOCK);
            (void)fcntl(p[i], F_SETFD, FD_CLOEXEC);
        }
        c->wake_r = p[0];
        c->wake_w = p[1];
    }
    /* The flush thread takes no signals: they belong to the application's threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int e = pthread_create(&c->thread, NULL, ss__sender_main, c);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e) {
        r = -e;
        goto out;
    }
    atomic_store_explicit(&c->running, 1, memory_order_release);
out:
    pthread_mutex_unlock(&c->start_mu);
    return r;
}

struct ss_client *ss_client_new(const struct ss_options *opt)
{
    struct ss_options d;
    if (!opt) {
        ss_options_init(&d);
        opt = &d;
    }
    pthread_once(&g_once, init_once);
    struct ss_client *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    if (init_sync(c) < 0) {
        free(c);
        return NULL;
    }
    reset_flush_state(c);
    c->socket_path = opt->socket_path ? strdup(opt->socket_path) : default_socket();
    c->job = opt->job ? clean_dup(opt->job, "c") : NULL;
    if (!c->job)
        c->job = getenv("STEPSCOPE_JOB") && *getenv("STEPSCOPE_JOB")
                     ? clean_dup(getenv("STEPSCOPE_JOB"), "c")
                     : program_name();
    c->rank = opt->rank >= 0 ? opt->rank : env_int("RANK", 0);
    if (c->rank < 0)
        c->rank = 0;
    c->world_size = opt->world_size >= 1 ? opt->world_size : env_int("WORLD_SIZE", 1);
    if (c->world_size < 1)
        c->world_size = 1;
    if (c->world_size <= c->rank)
        c->world_size = c->rank + 1;
    c->local_rank = opt->local_rank >= 0 ? opt->local_rank : env_int("LOCAL_RANK", -1);
    if (gethostname(c->host, sizeof c->host - 1) < 0 || !c->host[0])
        strcpy(c->host, "localhost");
    c->host[ss__clamp_utf8(c->host, strlen(c->host), 255)] = '\0';
    c->given_stream = opt->stream ? clean_dup(opt->stream, NULL) : NULL;
    c->framework = opt->framework ? clean_dup(opt->framework, NULL) : NULL;
    c->framework_version = opt->framework_version ? clean_dup(opt->framework_version, NULL)
                                                  : NULL;
    const char *run = opt->run ? opt->run : getenv("STEPSCOPE_RUN");
    c->run = run && *run ? clean_dup(run, NULL) : NULL;
    c->pid = (int)getpid();
    c->gen = atomic_fetch_add(&g_gen, 1);
    c->stream = make_stream(c, false);
    c->buffer_bytes = opt->buffer_bytes ? opt->buffer_bytes : (size_t)64 << 20;
    c->ring_bytes = pow2_at_least(opt->ring_bytes ? opt->ring_bytes : (size_t)1 << 20);
    c->flush_interval_ms = opt->flush_interval_ms ? opt->flush_interval_ms : 2;
    c->close_timeout_ms = opt->close_timeout_ms ? opt->close_timeout_ms : 5000;
    c->control_cb = opt->control_cb;
    c->control_userdata = opt->control_userdata;
    if (!c->socket_path || !c->job || !c->stream || (opt->stream && !c->given_stream) ||
        (opt->framework && !c->framework) ||
        (opt->framework_version && !c->framework_version) || (run && *run && !c->run))
        goto fail;
    pthread_mutex_lock(&g_mu);
    c->reg_next = g_clients;
    g_clients = c;
    pthread_mutex_unlock(&g_mu);
    if (start_thread(c) < 0) {
        pthread_mutex_lock(&g_mu);
        for (struct ss_client **pp = &g_clients; *pp; pp = &(*pp)->reg_next)
            if (*pp == c) {
                *pp = c->reg_next;
                break;
            }
        pthread_mutex_unlock(&g_mu);
        goto fail;
    }
    return c;
fail:
    if (c->wake_r >= 0)
        close(c->wake_r);
    if (c->wake_w >= 0)
        close(c->wake_w);
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->start_mu);
    free_client_mem(c);
    return NULL;
}

static void wake(struct ss_client *c)
{
    if (c->wake_w >= 0) {
        char b = 1;
        ssize_t r = write(c->wake_w, &b, 1); /* full pipe: the thread is awake anyway */
        (void)r;
    }
}

/* Waits (c->mu held) until done_gen reaches gen or deadline (monotonic ns, < 0: none). */
static int wait_done(struct ss_client *c, uint64_t gen, int64_t deadline)
{
    while (c->done_gen < gen) {
        if (deadline < 0) {
            pthread_cond_wait(&c->cond, &c->mu);
            continue;
        }
        struct timespec ts = {(time_t)(deadline / 1000000000LL), (long)(deadline % 1000000000LL)};
        if (pthread_cond_timedwait(&c->cond, &c->mu, &ts) == ETIMEDOUT && c->done_gen < gen)
            return -ETIMEDOUT;
    }
    return 0;
}

int ss_flush(struct ss_client *c, int64_t timeout_ns)
{
    if (!c)
        return -EINVAL;
    int64_t deadline = timeout_ns < 0 ? -1 : ss__mono_ns() + timeout_ns;
    if (start_thread(c) < 0)
        return -ETIMEDOUT;
    pthread_mutex_lock(&c->mu);
    uint64_t gen = ++c->req_gen;
    wake(c);
    int r = wait_done(c, gen, deadline);
    pthread_mutex_unlock(&c->mu);
    return r;
}

int ss_on_capture(struct ss_client *c, ss_capture_cb cb, void *userdata)
{
    if (!c)
        return -EINVAL;
    if (start_thread(c) < 0)
        return -EINVAL;
    pthread_mutex_lock(&c->mu);
    if ((c->capture_cb != NULL) != (cb != NULL))
        c->capture_changed = true;
    c->capture_cb = cb;
    c->capture_userdata = userdata;
    wake(c);
    pthread_mutex_unlock(&c->mu);
    return 0;
}

int ss_capture_state(struct ss_client *c, int64_t id, int state, const char *reason)
{
    static const char *const names[] = {NULL, "armed", "recording", "done", "failed"};
    if (!c || id < 0 || state < SS_CAPTURE_ARMED || state > SS_CAPTURE_FAILED)
        return -EINVAL;
    /* The longest line: the fixed part, an id, and a reason of SS_NAME_MAX bytes escaped. */
    char line[128 + 6 * SS_NAME_MAX];
    int n = snprintf(line, sizeof line, "{\"type\":\"capture\",\"id\":%lld,\"state\":\"%s\"",
                     (long long)id, names[state]);
    char *p = line + n;
    if (reason) {
        size_t len = ss__clamp_utf8(reason, strlen(reason), SS_NAME_MAX);
        memcpy(p, ",\"reason\":", 10);
        p = ss__put_str(p + 10, reason, len);
    }
    *p++ = '}';
    *p++ = '\n';
    /* From the capture callback the flush thread already holds the lock. */
    bool on_flush_thread = atomic_load(&c->running) && pthread_equal(pthread_self(), c->thread);
    if (!on_flush_thread && start_thread(c) < 0)
        return -ENOBUFS;
    if (!on_flush_thread)
        pthread_mutex_lock(&c->mu);
    int r = ss__sender_append(c, line, (size_t)(p - line));
    if (!on_flush_thread) {
        wake(c);
        pthread_mutex_unlock(&c->mu);
    }
    return r;
}

int ss_client_free(struct ss_client *c)
{
    if (!c)
        return 0;
    pthread_mutex_lock(&g_mu);
    for (struct ss_client **pp = &g_clients; *pp; pp = &(*pp)->reg_next)
        if (*pp == c) {
            *pp = c->reg_next;
            break;
        }
    pthread_mutex_unlock(&g_mu);
    int r = 0;
    if (atomic_load(&c->running)) {
        pthread_mutex_lock(&c->mu);
        int64_t ms = c->close_timeout_ms;
        if (!atomic_load(&c->st_connected) && ms > 1000)
            ms = 1000; /* no daemon now: do not hold up the exit for long */
        c->closing = true;
        uint64_t gen = ++c->req_gen;
        wake(c);
        r = wait_done(c, gen, ss__mono_ns() + ms * 1000000LL);
        c->stop = true;
        wake(c);
        pthread_mutex_unlock(&c->mu);
        pthread_join(c->thread, NULL);
    }
    if (c->fd >= 0)
        close(c->fd);
    if (c->wake_r >= 0)
        close(c->wake_r);
    if (c->wake_w >= 0)
        close(c->wake_w);
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->start_mu);
    free_client_mem(c);
    return r;
}

int ss_stats(struct ss_client *c, struct ss_client_stats *ret_st)
{
    if (!c || !ret_st)
        return -EINVAL;
    struct ss_client_stats s;
    memset(&s, 0, sizeof s);
    for (struct ss__ring *r = atomic_load_explicit(&c->rings, memory_order_acquire); r;
         r = r->next) {
        s.records += atomic_load_explicit(&r->n_records, memory_order_relaxed);
        s.dropped_ring_full += atomic_load_explicit(&r->n_dropped, memory_order_relaxed);
    }
    s.dropped_ring_full += atomic_load(&c->st_dropped_noring);
    s.dropped_buffer_full = atomic_load(&c->st_dropped_buffer);
    s.dropped = s.dropped_ring_full + s.dropped_buffer_full;
    s.sent = atomic_load(&c->st_sent);
    s.acked = atomic_load(&c->st_acked);
    s.replayed = atomic_load(&c->st_replayed);
    s.errors_from_daemon = atomic_load(&c->st_errors);
    s.connects = atomic_load(&c->st_connects);
    s.reconnects = s.connects ? s.connects - 1 : 0;
    s.connect_failures = atomic_load(&c->st_connect_failures);
    s.control_lines = atomic_load(&c->st_control);
    s.capture_requests = atomic_load(&c->st_capture_requests);
    s.bytes_written = atomic_load(&c->st_bytes);
    s.writes = atomic_load(&c->st_writes);
    s.held_lines = atomic_load(&c->st_held_lines);
    s.held_bytes = atomic_load(&c->st_held_bytes);
    s.connected = atomic_load(&c->st_connected) != 0;
    *ret_st = s;
    return 0;
}

const char *ss_client_stream(const struct ss_client *c)
{
    return c->stream;
}

const char *ss_client_socket_path(const struct ss_client *c)
{
    return c->socket_path;
}

/* ---- rings and the hot path ------------------------------------------------------------- */

static void ring_take(struct ss__ring *r)
{
    r->tid = (int32_t)syscall(SYS_gettid);
    r->tail_cache = atomic_load_explicit(&r->tail, memory_order_acquire);
    r->in_step = false;
    r->n_phases = 0;
    r->depth = 0;
}

/* The calling thread's first call on c (or on c after a fork, or after the cache evicted c). */
static struct ss__ring *ring_slow(struct ss_client *c)
{
    for (int i = 1; i < TLS_SLOTS; i++) {
        if (tls[i].c == c && tls[i].gen == c->gen) {
            struct tls_slot t = tls[i];
            tls[i] = tls[0];
            tls[0] = t;
            return t.r;
        }
    }
    if (start_thread(c) < 0)
        goto fail;
    struct ss__ring *r = NULL;
    for (struct ss__ring *x = atomic_load_explicit(&c->rings, memory_order_acquire); x;
         x = x->next) {
        int expect = 0;
        if (atomic_load_explicit(&x->owned, memory_order_relaxed) == 0 &&
            atomic_compare_exchange_strong_explicit(&x->owned, &expect, 1, memory_order_acquire,
                                                    memory_order_relaxed)) {
            r = x;
            break;
        }
    }
    if (!r) {
        r = aligned_alloc(SS__CACHELINE, (sizeof *r + SS__CACHELINE - 1) / SS__CACHELINE *
                                             SS__CACHELINE);
        if (!r)
            goto fail;
        memset(r, 0, sizeof *r);
        r->data = malloc(c->ring_bytes);
        if (!r->data) {
            free(r);
            goto fail;
        }
        /* Touch every page now, so the hot path never takes a page fault on its first lap. */
        memset(r->data, 0, c->ring_bytes);
        r->mask = c->ring_bytes - 1;
        atomic_store_explicit(&r->owned, 1, memory_order_relaxed);
        struct ss__ring *head = atomic_load_explicit(&c->rings, memory_order_relaxed);
        do
            r->next = head;
        while (!atomic_compare_exchange_weak_explicit(&c->rings, &head, r, memory_order_release,
                                                      memory_order_relaxed));
    }
    ring_take(r);
    if (g_key_ok && !pthread_getspecific(g_key))
        (void)pthread_setspecific(g_key, &tls[0]);
    /* Evict the least recent slot; its ring goes back to the pool (all its records are out). */
    struct tls_slot *last = &tls[TLS_SLOTS - 1];
    if (last->c) {
        pthread_mutex_lock(&g_mu);
        if (registered(last->c, last->gen))
            atomic_store_explicit(&last->r->owned, 0, memory_order_release);
        pthread_mutex_unlock(&g_mu);
    }
    memmove(&tls[1], &tls[0], sizeof tls[0] * (TLS_SLOTS - 1));
    tls[0].c = c;
    tls[0].gen = c->gen;
    tls[0].r = r;
    return r;
fail:
    atomic_fetch_add(&c->st_dropped_noring, 1);
    return NULL;
}

static inline struct ss__ring *ring_of(struct ss_client *c)
{
    if (tls[0].c == c && tls[0].gen == c->gen)
        return tls[0].r;
    return ring_slow(c);
}

static inline void bump(_Atomic uint64_t *n)
{
    /* Only the owner writes it: a plain add, no locked read-modify-write. */
    atomic_store_explicit(n, atomic_load_explicit(n, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

/* Room for need bytes (8-aligned) at the ring's head, after a PAD record when the tail end is
 * too short. Returns where to write and sets *ret_next (the head to publish), or NULL: full. */
static inline unsigned char *ring_reserve(struct ss__ring *r, uint32_t need, uint64_t *ret_next)
{
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint64_t size = r->mask + 1;
    uint64_t pos = head & r->mask;
    uint64_t contig = size - pos;
    uint64_t total = need <= contig ? need : contig + need;
    if (head + total - r->tail_cache > size) {
        r->tail_cache = atomic_load_explicit(&r->tail, memory_order_acquire);
        if (head + total - r->tail_cache > size) {
            bump(&r->n_dropped);
            return NULL;
        }
    }
    if (need > contig) {
        struct ss__rec_hdr pad = {(uint32_t)contig, SS__REC_PAD, 0};
        memcpy(r->data + pos, &pad, sizeof pad);
        pos = 0;
    }
    *ret_next = head + total;
    return r->data + pos;
}

static inline void ring_commit(struct ss__ring *r, uint64_t next)
{
    atomic_store_explicit(&r->head, next, memory_order_release);
    bump(&r->n_records);
}

static inline uint32_t align8(size_t n)
{
    return (uint32_t)((n + SS__ALIGN - 1) & ~(size_t)(SS__ALIGN - 1));
}

static inline size_t name_len(const char *s, size_t max)
{
    size_t n = strlen(s);
    return n <= max ? n : ss__clamp_utf8(s, n, max);
}

int ss_span(struct ss_client *c, const char *name, const char *cat, int64_t begin_ns,
            int64_t end_ns)
{
    if (!c || !name)
        return -EINVAL;
    struct ss__ring *r = ring_of(c);
    if (!r)
        return -ENOMEM;
    if (!cat)
        cat = "user_annotation";
    size_t nl = name_len(name, SS_NAME_MAX), cl = name_len(cat, SS_NAME_MAX);
    uint32_t need = align8(sizeof(struct ss__rec_hdr) + sizeof(struct ss__rec_span) + nl + cl);
    uint64_t next;
    unsigned char *p = ring_reserve(r, need, &next);
    if (!p)
        return -ENOBUFS;
    struct ss__rec_hdr h = {need, SS__REC_SPAN, (uint16_t)nl};
    struct ss__rec_span f = {begin_ns, end_ns, (uint32_t)cl, r->tid};
    memcpy(p, &h, sizeof h);
    memcpy(p + sizeof h, &f, sizeof f);
    memcpy(p + sizeof h + sizeof f, name, nl);
    memcpy(p + sizeof h + sizeof f + nl, cat, cl);
    ring_commit(r, next);
    return 0;
}

int ss_counter(struct ss_client *c, const char *name, double value)
{
    if (!c || !name)
        return -EINVAL;
    struct ss__ring *r = ring_of(c);
    if (!r)
        return -ENOMEM;
    size_t nl = name_len(name, SS_NAME_MAX);
    uint32_t need = align8(sizeof(struct ss__rec_hdr) + sizeof(struct ss__rec_counter) + nl);
    uint64_t next;
    unsigned char *p = ring_reserve(r, need, &next);
    if (!p)
        return -ENOBUFS;
    struct ss__rec_hdr h = {need, SS__REC_COUNTER, (uint16_t)nl};
    struct ss__rec_counter f = {ss_now_ns(), value, r->tid, 0};
    memcpy(p, &h, sizeof h);
    memcpy(p + sizeof h, &f, sizeof f);
    memcpy(p + sizeof h + sizeof f, name, nl);
    ring_commit(r, next);
    return 0;
}

int ss_queue(struct ss_client *c, const char *name, int64_t size, int64_t capacity)
{
    if (!c || !name)
        return -EINVAL;
    struct ss__ring *r = ring_of(c);
    if (!r)
        return -ENOMEM;
    size_t nl = name_len(name, SS_NAME_MAX);
    uint32_t need = align8(sizeof(struct ss__rec_hdr) + sizeof(struct ss__rec_queue) + nl);
    uint64_t next;
    unsigned char *p = ring_reserve(r, need, &next);
    if (!p)
        return -ENOBUFS;
    struct ss__rec_hdr h = {need, SS__REC_QUEUE, (uint16_t)nl};
    struct ss__rec_queue f = {ss_now_ns(), size, capacity < 0 ? -1 : capacity,
                              r->in_step ? r->step : -1};
    memcpy(p, &h, sizeof h);
    memcpy(p + sizeof h, &f, sizeof f);
    memcpy(p + sizeof h + sizeof f, name, nl);
    ring_commit(r, next);
    return 0;
}

int ss_step_begin(struct ss_client *c, int64_t step)
{
    if (!c)
        return -EINVAL;
    struct ss__ring *r = ring_of(c);
    if (!r)
        return -ENOMEM;
    for (unsigned i = 0; i < r->n_phases; i++) {
        r->phases[i].touched = false;
        r->phases[i].dur_ns = 0;
    }
    r->step = step < 0 ? 0 : step;
    r->in_step = true;
    r->step_begin_ns = ss_now_ns();
    return 0;
}

int ss_step_end(struct ss_client *c, int64_t samples)
{
    if (!c)
        return -EINVAL;
    int64_t end = ss_now_ns();
    struct ss__ring *r = ring_of(c);
    if (!r)
        return -ENOMEM;
    if (!r->in_step)
        return -ENOENT;
    r->in_step = false;
    size_t n = sizeof(struct ss__rec_hdr) + sizeof(struct ss__rec_step);
    uint16_t np = 0;
    for (unsigned i = 0; i < r->n_phases; i++)
        if (r->phases[i].touched) {
            n += sizeof(int64_t) + sizeof(uint16_t) + r->phases[i].len;
            np++;
        }
    uint32_t need = align8(n);
    uint64_t next;
    unsigned char *p = ring_reserve(r, need, &next);
    if (!p)
        return -ENOBUFS;
    struct ss__rec_hdr h = {need, SS__REC_STEP, np};
    struct ss__rec_step f = {r->step, r->step_begin_ns, end, samples < 0 ? -1 : samples};
    memcpy(p, &h, sizeof h);
    memcpy(p + sizeof h, &f, sizeof f);
    unsigned char *q = p + sizeof h + sizeof f;
    for (unsigned i = 0; i < r->n_phases; i++) {
        struct ss__phase *ph = &r->phases[i];
        if (!ph->touched)
            continue;
        memcpy(q, &ph->dur_ns, sizeof ph->dur_ns);
        memcpy(q + sizeof ph->dur_ns, &ph->len, sizeof ph->len);
        memcpy(q + sizeof ph->dur_ns + sizeof ph->len, ph->name, ph->len);
        q += sizeof ph->dur_ns + sizeof ph->len + ph->len;
    }
    ring_commit(r, next);
    return 0;
}

int ss_phase_begin(struct ss_client *c, const char *name)
{
    if (!c || !name)
        return -EINVAL;
    int64_t t0 = ss_now_ns();
    struct ss__ring *r = ring_of(c);
    if (!r)
        return -ENOMEM;
    if (r->depth >= SS_PHASE_DEPTH_MAX)
        return -EOVERFLOW;
    size_t n = name_len(name, SS_PHASE_NAME_MAX);
    unsigned idx = PHASE_NONE;
    for (unsigned i = 0; i < r->n_phases; i++)
        if (r->phases[i].len == n && memcmp(r->phases[i].name, name, n) == 0) {
            idx = i;
            break;
        }
    int ret = 0;
    if (idx == PHASE_NONE) {
        if (r->n_phases < SS_PHASES_MAX) {
            idx = r->n_phases++;
            struct ss__phase *ph = &r->phases[idx];
            memcpy(ph->name, name, n);
            ph->len = (uint16_t)n;
            ph->touched = false;
            ph->dur_ns = 0;
        } else {
            ret = -ENOSPC;
        }
    }
    r->open[r->depth].idx = (uint16_t)idx;
    r->open[r->depth].t0 = t0;
    r->depth++;
    return ret;
}

int ss_phase_end(struct ss_client *c)
{
    if (!c)
        return -EINVAL;
    int64_t t1 = ss_now_ns();
    struct ss__ring *r = ring_of(c);
    if (!r)
        return -ENOMEM;
    if (!r->depth)
        return -ENOENT;
    r->depth--;
    unsigned idx = r->open[r->depth].idx;
    if (r->in_step && idx != PHASE_NONE) {
        struct ss__phase *ph = &r->phases[idx];
        int64_t d = t1 - r->open[r->depth].t0;
        ph->dur_ns += d > 0 ? d : 0;
        ph->touched = true;
    }
    return 0;
}
