/* SPDX-License-Identifier: MIT */
/*
 * stepscoped: the daemon. This is the only file that sees every module, and it only wires them:
 * it has daemon/options read the configuration (defaults < file < environment < command line)
 * and the rule files, opens the store, binds the ingest socket and the HTTP server, and wires
 * them together on one libuv loop:
 *
 *   ingest --on_hello/sink/on_close--> store --on_durable (writer thread)--> uv_async
 *          <------------- ingest_ack(stream, next_seq) <--- store_collect_durable
 *
 * Every batch also goes to daemon/live (live_feed(), by the job and rank daemon/sessions holds for
 * the session), whose snapshots the flush timer republishes for the HTTP threads; at start-up,
 * before the loop runs and so before any client is served, daemon/replay feeds it the store.
 * HTTP threads reach the loop through daemon/loopcall (a job's deletion, an evicted job's reload)
 * and the capture registry (daemon/capture).
 *
 * Backpressure closes the loop: when store_append() says the store is above its watermark,
 * ingest stops reading; each commit wakes the loop, which resumes reading once the backlog has
 * halved. Shutdown (SIGTERM/SIGINT) stops reading, commits what was accepted, sends the last
 * acks, closes the connections, and only then closes the store.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "analyse/analyse_helper.h"
#include "analyse/analyse_roles.h"
#include "cluster/cluster.h"
#include "../lib/clock.h"
#include "core/config.h"
#include "../lib/log.h"
#include "core/stats.h"
#include "capture/capture.h"
#include "ingest/ingest.h"
#include "live/live.h"
#include "live/live_query.h"
#include "loopcall/loopcall.h"
#include "options/options.h"
#include "replay/replay.h"
#include "sessions/sessions.h"
#include "store/store.h"
#include "store/store_query.h"
#include "stepscope_build.h"
#include "daemon/web/web.h"

extern char **environ;

#define SHUTDOWN_DRAIN_NS (10LL * 1000 * 1000 * 1000) /* give up committing after this */
#define LIVE_PUBLISH_NS (100LL * 1000 * 1000) /* live snapshots are rebuilt at most this often */
#define CAPTURE_EXPIRE_TICK_NS 250000000LL /* pending captures are checked for expiry this often */
#define DELETE_WAIT_NS (10LL * 1000 * 1000 * 1000) /* a job deletion waits this long for the loop,
                                                     * then as long again for its commit */
#define RELOAD_WAIT_NS (10LL * 1000 * 1000 * 1000) /* a request for an evicted job waits this long
                                                     * for the loop to start its reload (503 then) */

/* A job whose last session closed: evictable once the batch holding its records is committed,
 * so that a reload from the store sees every record live saw. */
struct job_ticket {
    int64_t job_id;
    uint64_t ticket;    /* store_flush_ticket() at the close */
};

/* DELETE /api/v1/jobs/{job}, handed by an HTTP thread to the loop (which alone may touch the
 * store's tables and live) through daemon.deletes; or, from the cluster view's thread, the
 * deletion of some of a job's ranks (ranks set), then the job's live state dropped (evict). */
struct delete_req {
    const char *job;
    const int64_t *ranks; /* NULL: the whole job */
    size_t n;
    bool evict;           /* after the ranks' deletion committed: live reloads the job */
    int64_t job_id;
    uint64_t ticket;    /* store_wait_committed() */
};

struct daemon {
    uv_loop_t *loop;
    struct config cfg;
    struct stats stats;
    struct store *store;
    struct ingest *ingest;
    struct web *web;
    struct cluster *cluster;  /* NULL without cluster_url */
    struct live *live;
    struct replay_config replay; /* store, live and the budgets it replays under */
    struct analyse_helper_rules helper_rules; /* the defaults, overridden by cfg.helper_rules */
    struct analyse_rules *role_rules;         /* cfg.role_rules parsed; NULL: none */
    struct sessions *sessions; /* the open sessions (sessions.h) */
    int64_t live_published_ns;
    uint64_t live_steps_cursor; /* live_query_changed()'s, for persist_live_steps() */
    int64_t *changed_ids;       /* persist_live_steps()'s live_query_changed() answer */
    size_t cap_changed_ids;
    int64_t *rank_ids;          /* [LIVE_RANKS_MAX] */
    int64_t *rank_steps;        /* [LIVE_RANKS_MAX] */
    int64_t captures_expired_ns; /* monotonic time of the last capture_reg_expire() */
    uv_async_t durable_async; /* the writer thread's wake-up call */
    uv_async_t capture_async; /* an HTTP thread added a capture */
    struct loopcall deletes;  /* HTTP threads' job deletions (web_job_delete()) */
    struct loopcall reloads;  /* evicted jobs' reloads (web_live_reload()) */
    pthread_mutex_t async_lock; /* guards async_open against the writer and HTTP threads */
    struct job_ticket *tickets; /* jobs whose records may not all be committed yet; loop only */
    size_t n_tickets;
    size_t cap_tickets;
    bool async_open;          /* durable_async and capture_async may be sent to, and deletes
                               * and reloads are open */
    struct capture_reg *captures; /* on-demand captures (capture/capture.h) */
    char instance[33];        /* this run's id, in hex: /api/v1/health and the probe answer */
    char socket_abs[PATH_MAX]; /* cfg.socket, absolute: /api/v1/health names it */
    char probe_answer[256];   /* the socket's answer to a probe hello (docs/PROTOCOL.md 1) */
    bool capture_offer;       /* sessions or captures changed: offer captures on the next tick */
    uv_timer_t flush_timer;
    uv_timer_t drain_timer;   /* shutdown: waits for the last commit */
    uv_signal_t sigterm;
    uv_signal_t sigint;
    bool paused;              /* ingest stopped reading for backpressure */
    bool stopping;
    int64_t stop_deadline_ns;
};

static int on_hello(void *ud, const struct record_hello *hello, struct record_welcome *ret_welcome,
                    char *err)
{
    struct daemon *d = ud;
    if (d->stopping) {
        snprintf(err, INGEST_ERR_MAX, "daemon is shutting down");
        return -ESHUTDOWN;
    }
    char serr[STORE_ERR_MAX] = "";
    int r = store_session_open(d->store, hello, ret_welcome, serr);
    if (r < 0) {
        snprintf(err, INGEST_ERR_MAX, "%s", serr[0] ? serr : strerror(-r));
        return r;
    }
    const struct session s = {ret_welcome->session_id, ret_welcome->job_id, hello->rank,
                              ret_welcome->stream_id, hello->can_capture};
    if (sessions_open(d->sessions, &s) < 0) {
        /* The session is open in the store: close it again before refusing. */
        store_session_close(d->store, ret_welcome->session_id, false);
        snprintf(err, INGEST_ERR_MAX, "out of memory");
        return -ENOMEM;
    }
    /* ingest maps the connection to its stream only after this returns: offer on the next tick. */
    d->capture_offer = true;
    /* A job evicted from live memory comes back before its new records, which add to it. */
    if (live_is_evicted(d->live, ret_welcome->job_id) &&
        replay_reload(&d->replay, ret_welcome->job_id) < 0)
        log_warn("live: job %lld: could not be reloaded for its new session; its analyses show "
                 "only what arrives from now on",
                 (long long)ret_welcome->job_id);
    /* A failure only loses the override, never the session. */
    if (replay_hello_env(d->live, ret_welcome->job_id, hello) < 0)
        log_warn("live: job %lld: the hello's FP/BP points were not kept (out of memory)",
                 (long long)ret_welcome->job_id);
    return 0;
}

static int on_records(void *ud, int64_t session_id, const struct record *recs, size_t n,
                      uint64_t next_seq)
{
    struct daemon *d = ud;
    int r = store_append(d->store, session_id, recs, n, next_seq);
    if (r == -EAGAIN)
        d->paused = true;
    /* Only what the store took goes live, so a restart's replay sees the same records. */
    if ((r == 0 || r == -EAGAIN) && n > 0) {
        const struct session *k = sessions_find(d->sessions, session_id);
        if (k)
            (void)live_feed(d->live, k->job_id, k->rank, recs, n);
    }
    return r;
}

/* ---- captures: the registry's changes go to the store, its requests to the sessions ---- */

static int persist_capture(void *ud, const struct record_capture *c)
{
    struct daemon *d = ud;
    return store_capture_put(d->store, c);
}

static int persist_capture_rank(void *ud, const struct record_capture_rank *r)
{
    struct daemon *d = ud;
    return store_capture_rank_put(d->store, r);
}

static int persist_capture_forget(void *ud, int64_t capture_id)
{
    struct daemon *d = ud;
    return store_capture_forget(d->store, capture_id);
}

static void persist_captures(struct daemon *d)
{
    capture_reg_collect(d->captures, persist_capture, persist_capture_rank, persist_capture_forget,
                        d);
}

struct capture_target {
    struct daemon *d;
    int64_t stream_id;
};

static int send_capture(void *ud, const char *line, size_t len)
{
    const struct capture_target *t = ud;
    return t->d->ingest ? ingest_send(t->d->ingest, t->stream_id, line, len) : -ENOENT;
}

/* Sends every open session the captures that wait for its rank. Loop thread. */
static void offer_captures(struct daemon *d)
{
    d->capture_offer = false;
    if (d->stopping)
        return;
    int64_t now = clock_now_ns();
    for (size_t i = 0; i < sessions_count(d->sessions); i++) {
        const struct session *k = sessions_at(d->sessions, i);
        struct capture_target t = {d, k->stream_id};
        capture_reg_offer(d->captures, k->job_id, k->rank, k->session_id, k->can_capture,
                          send_capture, &t, now);
    }
    persist_captures(d);
}

static void on_capture_async(uv_async_t *h)
{
    offer_captures(h->data);
}

static void on_capture_report(void *ud, int64_t session_id, int64_t capture_id, int64_t step,
                              const struct record_text *state, const struct record_text *reason)
{
    struct daemon *d = ud;
    const struct session *k = sessions_find(d->sessions, session_id);
    int s = capture_state_parse(state->ptr, state->len);
    if (!k || s < 0)
        return;
    int r = capture_reg_report(d->captures, k->job_id, k->rank, capture_id, (enum capture_state)s,
                               step, reason->ptr ? reason->ptr : "", reason->len, clock_now_ns());
    if (r == -ENOENT)
        log_warn("capture: job %lld rank %lld reported on capture %lld, which it has no part in",
                 (long long)k->job_id, (long long)k->rank, (long long)capture_id);
    /* A window 0 that started places its series' later windows: send them now. */
    if (r == 0 && s == CAPTURE_RECORDING)
        offer_captures(d);
    else
        persist_captures(d);
}

/* web's POST /captures (HTTP thread): resolve the job, add the capture, wake the loop. */
static int web_capture_create(void *ud, const char *job, const char *body, size_t len,
                              struct capture_view **ret, char *err)
{
    struct daemon *d = ud;
    struct capture_spec *spec = malloc(sizeof *spec);
    if (!spec)
        return -ENOMEM;
    char perr[CAPTURE_ERR_MAX] = "";
    int r = capture_parse(body, len, spec, perr);
    if (r < 0) {
        snprintf(err, WEB_ERR_MAX, "%s", perr[0] ? perr : strerror(-r));
        free(spec);
        return r;
    }
    struct store_job j;
    struct store_rank *ranks = NULL;
    size_t n_ranks = 0;
    r = store_query_job(d->store, job, &j);
    if (r == 0 && spec->all_ranks)
        r = store_query_ranks(d->store, j.id, &ranks, &n_ranks);
    int64_t *known = NULL;
    if (r == 0 && n_ranks > 0) {
        known = malloc(n_ranks * sizeof *known);
        if (!known)
            r = -ENOMEM;
        for (size_t i = 0; known && i < n_ranks; i++)
            known[i] = ranks[i].rank;
    }
    if (r == 0) {
        char cerr[CAPTURE_ERR_MAX] = "";
        int64_t id = capture_reg_add(d->captures, j.id, spec, known, n_ranks,
                                     (size_t)d->cfg.capture_max_open,
                                     (size_t)d->cfg.capture_max_kept, clock_now_ns(), ret, cerr);
        r = id < 0 ? (int)id : 0;
        if (r == -EHOSTDOWN || r == -EDQUOT || r == -ENOSPC) {
            snprintf(err, WEB_ERR_MAX, "%s", cerr);
            STATS_ADD(&d->stats, captures_refused, 1);
        }
    }
    if (r == 0) {
        pthread_mutex_lock(&d->async_lock);
        if (d->async_open)
            uv_async_send(&d->capture_async);
        pthread_mutex_unlock(&d->async_lock);
    }
    free(known);
    free(ranks);
    free(spec);
    return r;
}

static int web_capture_list(void *ud, const char *job, int64_t id, int64_t *ret_job_id,
                            struct capture_view **ret, size_t *ret_n)
{
    struct daemon *d = ud;
    struct store_job j;
    int r = store_query_job(d->store, job, &j);
    if (r < 0)
        return r;
    *ret_job_id = j.id;
    return capture_reg_views(d->captures, j.id, id, ret, ret_n);
}

/* web's POST .../captures/{id}/cancel (HTTP thread): cancel, then wake the loop to tell the
 * clients that hold cancelled windows and to persist them. */
static int web_capture_cancel(void *ud, const char *job, int64_t id)
{
    struct daemon *d = ud;
    struct store_job j;
    int r = store_query_job(d->store, job, &j);
    if (r == 0)
        r = capture_reg_cancel(d->captures, j.id, id, clock_now_ns());
    if (r >= 0) {
        pthread_mutex_lock(&d->async_lock);
        if (d->async_open)
            uv_async_send(&d->capture_async);
        pthread_mutex_unlock(&d->async_lock);
    }
    return r;
}

/* Loop thread: a queued deletion. A job with an open session is refused (-EBUSY); else the
 * store forgets it and queues the deletion of its rows, and live and the capture registry drop
 * theirs. */
static int run_delete(void *ud, void *arg)
{
    struct daemon *d = ud;
    struct delete_req *q = arg;
    if (d->stopping)
        return -ESHUTDOWN;
    if (q->evict) /* a session opened since the ranks went: its job is not evicted (again later) */
        return sessions_job_open(d->sessions, q->job_id) ? -EBUSY
                                                         : live_evict_job(d->live, q->job_id);
    if (q->ranks)
        return store_job_delete_ranks(d->store, q->job, q->ranks, q->n, &q->job_id, &q->ticket);
    int64_t job_id = 0;
    int r = store_job_delete(d->store, q->job, &job_id, &q->ticket);
    if (r == 0) {
        live_drop_job(d->live, job_id);
        capture_reg_drop_job(d->captures, job_id);
        log_info("job \"%s\" (%lld) deleted", q->job, (long long)job_id);
    }
    return r;
}

static void nap_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

/* web's DELETE /api/v1/jobs/{job} (HTTP thread): asks the loop, then waits for the commit. A
 * job whose open sessions are the cluster view's pulled streams has them closed and held first
 * (cluster_hold_job()): their sessions end as the loop reads the closes, then the job goes. */
static int web_job_delete(void *ud, const char *job)
{
    struct daemon *d = ud;
    /* {job} is an id or a name, as for GET; the loop's store forgets jobs by name. */
    struct store_job sj;
    int r = store_query_job(d->store, job, &sj);
    if (r < 0)
        return r;
    struct delete_req q = {.job = sj.name};
    r = loopcall_call(&d->deletes, &q, DELETE_WAIT_NS);
    if (r == -EBUSY && d->cluster) {
        int closed = cluster_hold_job(d->cluster, sj.name, true);
        for (int k = 0; closed > 0 && r == -EBUSY && k < 50; k++) {
            nap_ms(100);
            r = loopcall_call(&d->deletes, &q, DELETE_WAIT_NS);
        }
        if (r == 0)
            r = store_wait_committed(d->store, q.ticket, DELETE_WAIT_NS);
        cluster_hold_job(d->cluster, sj.name, false);
        return r;
    }
    if (r < 0)
        return r;
    return store_wait_committed(d->store, q.ticket, DELETE_WAIT_NS);
}

/* The cluster view's drop_ranks (its thread, cluster.h): a job deleted on the node these ranks
 * were pulled from. All of them: deleted as a DELETE does. Else the ranks are deleted, and once
 * that is committed the job's live state is dropped, so that its next reader reloads it from the
 * store without them. */
static int cluster_drop_ranks(void *ud, const char *job, const int64_t *ranks, size_t n, bool all)
{
    struct daemon *d = ud;
    struct delete_req q = {.job = job, .ranks = all ? NULL : ranks, .n = n};
    int r = loopcall_call(&d->deletes, &q, DELETE_WAIT_NS);
    if (r == 0)
        r = store_wait_committed(d->store, q.ticket, DELETE_WAIT_NS);
    if (r < 0 || all)
        return r;
    q.evict = true;
    for (int k = 0; k < 100; k++) {
        r = loopcall_call(&d->deletes, &q, DELETE_WAIT_NS);
        if (r != -EBUSY)
            break;
        nap_ms(100);
    }
    if (r == -EBUSY) /* a session of the job opened meanwhile, and stayed */
        log_warn("cluster view: job %s: %zu deleted rank%s stay in its analyses until it is next "
                 "loaded", job, n, n == 1 ? "" : "s");
    return r == -EBUSY ? 0 : r;
}

static int load_capture(void *ud, const struct record_capture *c)
{
    struct daemon *d = ud;
    return capture_reg_load(d->captures, c) == -ENOMEM;
}

static int load_capture_rank(void *ud, const struct record_capture_rank *r)
{
    struct daemon *d = ud;
    return capture_reg_load_rank(d->captures, r, clock_now_ns()) == -ENOMEM;
}

static void publish_live(struct daemon *d, int64_t now);

static void on_session_closed(void *ud, int64_t session_id, bool clean)
{
    struct daemon *d = ud;
    store_session_close(d->store, session_id, clean);
    /* A bye: every record of the session was fed to live, and the ack that covers the bye comes
     * after the commit that follows. Publishing now, not at the next 100 ms tick, means that
     * ack (what `stepscope import` waits for) comes after the answers show the whole session. */
    if (clean)
        publish_live(d, clock_mono_ns());
    /* Out of the table before the registry hears of it: a capture added meanwhile (an HTTP
     * thread) is refused rather than counting on this session. */
    struct session k;
    bool was_open = sessions_close(d->sessions, session_id, &k) == 0;
    capture_reg_session_closed(d->captures, session_id, clock_now_ns());
    persist_captures(d);
    if (!was_open || sessions_job_open(d->sessions, k.job_id))
        return;
    int64_t job_id = k.job_id;
    /* The job's last session: it may be evicted once what it sent is committed. */
    size_t i = 0;
    while (i < d->n_tickets && d->tickets[i].job_id != job_id)
        i++;
    if (i == d->n_tickets) {
        if (d->n_tickets == d->cap_tickets) {
            size_t cap = d->cap_tickets ? 2 * d->cap_tickets : 16;
            struct job_ticket *v = realloc(d->tickets, cap * sizeof *v);
            if (!v)
                return; /* no ticket: evictable at once, reload may then miss its last batch */
            d->tickets = v;
            d->cap_tickets = cap;
        }
        d->n_tickets++;
    }
    d->tickets[i] = (struct job_ticket){job_id, store_flush_ticket(d->store)};
}

/* live_evict()'s predicate: a job may leave live memory when no session of it is open and all it
 * sent is committed, so that a reload from the store sees the same records. Loop thread. */
static bool job_evictable(void *ud, int64_t job_id)
{
    struct daemon *d = ud;
    if (sessions_job_open(d->sessions, job_id))
        return false;
    for (size_t i = 0; i < d->n_tickets; i++) {
        if (d->tickets[i].job_id != job_id)
            continue;
        if (!store_committed(d->store, d->tickets[i].ticket))
            return false;
        d->tickets[i] = d->tickets[--d->n_tickets];
        break;
    }
    return true;
}

/* Writer thread: only wake the loop. */
static void on_durable(void *ud)
{
    struct daemon *d = ud;
    pthread_mutex_lock(&d->async_lock);
    if (d->async_open)
        uv_async_send(&d->durable_async);
    pthread_mutex_unlock(&d->async_lock);
}

/* After this the writer thread (which may still commit session ends) no longer wakes the loop. */
static void close_async(struct daemon *d)
{
    pthread_mutex_lock(&d->async_lock);
    bool was_open = d->async_open;
    d->async_open = false;
    pthread_mutex_unlock(&d->async_lock);
    if (was_open) {
        uv_close((uv_handle_t *)&d->durable_async, NULL);
        uv_close((uv_handle_t *)&d->capture_async, NULL);
        loopcall_close(&d->deletes);
        loopcall_close(&d->reloads);
    }
}

static void send_ack(void *ud, int64_t stream_id, uint64_t next_seq)
{
    struct daemon *d = ud;
    if (d->ingest)
        ingest_ack(d->ingest, stream_id, next_seq);
}

static void on_durable_async(uv_async_t *h)
{
    struct daemon *d = h->data;
    store_collect_durable(d->store, send_ack, d);
    if (d->paused && !d->stopping && store_buffered_bytes(d->store) <= d->cfg.max_buffered_bytes / 2) {
        d->paused = false;
        ingest_resume(d->ingest);
    }
}

/* Hands the store each rank's step count as live lists it, for the jobs published since the
 * last call, so that the jobs list says it for a job live does not hold (one not replayed at
 * start-up, or evicted): Kineto's steps are ProfilerStep#N spans, not step records. The store
 * writes only what changed. Loop thread; cheap: one pass per changed job. */
static void persist_live_steps(struct daemon *d)
{
    if (!d->rank_ids) {
        d->rank_ids = malloc(LIVE_RANKS_MAX * sizeof *d->rank_ids);
        d->rank_steps = malloc(LIVE_RANKS_MAX * sizeof *d->rank_steps);
        if (!d->rank_ids || !d->rank_steps) {
            free(d->rank_ids);
            free(d->rank_steps);
            d->rank_ids = d->rank_steps = NULL;
            return; /* the next publish tries again; the counts are not lost, only later */
        }
    }
    uint64_t cursor = d->live_steps_cursor;
    size_t n;
    if (live_query_changed(d->live, &cursor, &d->changed_ids, &d->cap_changed_ids, &n) < 0)
        return; /* out of memory: the cursor stays, the next publish tries again */
    for (size_t i = 0; i < n; i++) {
        size_t m = live_query_rank_step_counts(d->live, d->changed_ids[i], d->rank_ids,
                                               d->rank_steps, LIVE_RANKS_MAX);
        for (size_t k = 0; k < m; k++)
            if (store_rank_live_steps(d->store, d->changed_ids[i], d->rank_ids[k],
                                      d->rank_steps[k]) < 0)
                return; /* out of memory: the cursor stays, the next publish retries */
    }
    d->live_steps_cursor = cursor;
}

/* Evicts past the budget, a bounded step (LIVE_EVICT_STEP jobs looked at) per flush tick, so
 * that a burst of jobs to evict never holds the loop (issue 18); returns at once while under
 * both the byte budget and the job count. Loop thread. */
static void evict_live(struct daemon *d, int64_t now)
{
    /* Forget the tickets already committed (job_evictable() lets their jobs go, as it would
     * without one), so that the tickets left are those of the last flushes, not one per job that
     * ever ended and was not evicted yet: each job_evictable() call scans them (65 000 jobs:
     * 256 scans of ~57 000 tickets per tick). */
    size_t k = 0;
    for (size_t i = 0; i < d->n_tickets; i++)
        if (!store_committed(d->store, d->tickets[i].ticket))
            d->tickets[k++] = d->tickets[i];
    d->n_tickets = k;
    size_t n = live_evict(d->live, d->cfg.live_max_bytes, now, job_evictable, d);
    STATS_ADD(&d->stats, live_evictions, n);
    atomic_store_explicit(&d->stats.live_bytes, live_bytes(d->live), memory_order_relaxed);
    atomic_store_explicit(&d->stats.live_untracked_jobs, live_untracked_jobs(d->live),
                          memory_order_relaxed);
}

/* Publishes live's snapshots now. Loop thread. */
static void publish_live(struct daemon *d, int64_t now)
{
    d->live_published_ns = now;
    (void)live_publish(d->live);
    persist_live_steps(d);
}

static void on_flush_timer(uv_timer_t *h)
{
    struct daemon *d = h->data;
    if (d->capture_offer)
        offer_captures(d);
    store_flush(d->store);
    int64_t now = clock_mono_ns();
    if (now - d->captures_expired_ns >= CAPTURE_EXPIRE_TICK_NS) {
        d->captures_expired_ns = now;
        size_t n = capture_reg_expire(d->captures, clock_now_ns(),
                                      (int64_t)d->cfg.capture_expire_s * 1000000000);
        if (n > 0) {
            STATS_ADD(&d->stats, captures_expired, n);
            persist_captures(d);
        }
    }
    if (now - d->live_published_ns >= LIVE_PUBLISH_NS)
        publish_live(d, now);
    else
        (void)live_flush(d->live);
    evict_live(d, now);
}

/* Loop thread: a queued reload (web_live_reload()). */
static int run_reload(void *ud, void *arg)
{
    struct daemon *d = ud;
    return d->stopping ? -ESHUTDOWN : replay_reload(&d->replay, *(const int64_t *)arg);
}

/* live's reload hook (HTTP thread, live_ensure()): asks the loop to reload the job and waits. A
 * request the loop has not taken within RELOAD_WAIT_NS gives up (-ETIMEDOUT: 503); one it took
 * is waited for to the end. Concurrent requests for one job queue one request each; the first
 * the loop runs reloads it, the others find it back and return at once. */
static int web_live_reload(void *ud, int64_t job_id)
{
    struct daemon *d = ud;
    return loopcall_call(&d->reloads, &job_id, RELOAD_WAIT_NS);
}

static void close_handles(struct daemon *d)
{
    close_async(d);
    uv_close((uv_handle_t *)&d->flush_timer, NULL);
    uv_close((uv_handle_t *)&d->drain_timer, NULL);
    uv_close((uv_handle_t *)&d->sigterm, NULL);
    uv_close((uv_handle_t *)&d->sigint, NULL);
}

/* Shutdown, after reading stopped: wait until everything accepted is committed (or the deadline
 * passed), send the last acks, then close the connections and every handle so uv_run returns. */
static void on_drain_timer(uv_timer_t *h)
{
    struct daemon *d = h->data;
    store_flush(d->store);
    bool drained = store_buffered_bytes(d->store) == 0;
    if (!drained && clock_mono_ns() < d->stop_deadline_ns)
        return;
    if (!drained)
        log_error("shutdown: %llu bytes could not be committed before the deadline",
                  (unsigned long long)store_buffered_bytes(d->store));
    store_collect_durable(d->store, send_ack, d);
    ingest_close(d->ingest);
    d->ingest = NULL;
    close_handles(d);
}

static void on_signal(uv_signal_t *h, int signum)
{
    struct daemon *d = h->data;
    if (d->stopping)
        return;
    log_info("%s: stopping", signum == SIGTERM ? "SIGTERM" : "SIGINT");
    d->stopping = true;
    d->stop_deadline_ns = clock_mono_ns() + SHUTDOWN_DRAIN_NS;
    ingest_stop_reading(d->ingest);
    uv_timer_stop(&d->flush_timer);
    store_flush(d->store);
    uv_timer_start(&d->drain_timer, on_drain_timer, 0, 5);
}

/* 16 random bytes in hex: this run of the daemon. The clock and pid if the kernel has none to
 * give (the id only tells two daemons apart). */
static void make_instance(char out[33])
{
    uint8_t b[16];
    if (getrandom(b, sizeof b, GRND_NONBLOCK) != (ssize_t)sizeof b) {
        uint64_t t = (uint64_t)clock_mono_ns() ^ (uint64_t)clock_now_ns();
        uint64_t p = (uint64_t)getpid() * 0x9e3779b97f4a7c15u;
        memcpy(b, &t, 8);
        memcpy(b + 8, &p, 8);
    }
    for (size_t i = 0; i < sizeof b; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* path made absolute against the working directory (not resolved: the socket is not bound yet). */
static void absolute_path(const char *path, char *out, size_t size)
{
    char cwd[PATH_MAX];
    size_t n = strlen(path), k;
    if (path[0] == '/' || !getcwd(cwd, sizeof cwd) || (k = strlen(cwd)) + 1 + n >= size) {
        snprintf(out, size, "%s", path);
        return;
    }
    memcpy(out, cwd, k);
    out[k] = '/';
    memcpy(out + k + 1, path, n + 1);
}

static int store_exit_code(int r)
{
    return r == -EBUSY ? EXIT_BUSY : EXIT_DATA_DIR;
}

/* Thousands of HTTP and client connections need as many descriptors: the soft limit is raised
 * to the hard one (logged), and a hard limit below what the configured caps could take is
 * reported, since connections past it are refused by accept() rather than by the caps. */
static void raise_fd_limit(const struct config *cfg)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return;
    if (rl.rlim_cur < rl.rlim_max) {
        rlim_t was = rl.rlim_cur;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
            log_warn("fd limit: cannot raise %llu to %llu: %s", (unsigned long long)was,
                     (unsigned long long)rl.rlim_max, strerror(errno));
            rl.rlim_cur = was;
        } else {
            log_info("fd limit raised from %llu to %llu", (unsigned long long)was,
                     (unsigned long long)rl.rlim_cur);
        }
    }
    uint64_t need = cfg->max_connections + cfg->http_max_connections + 64;
    if (rl.rlim_cur != RLIM_INFINITY && (uint64_t)rl.rlim_cur < need)
        log_warn("fd limit %llu is below max_connections + http_max_connections + 64 (%llu): "
                 "connections past it are refused by accept()",
                 (unsigned long long)rl.rlim_cur, (unsigned long long)need);
}

/* Applies the configuration and the rule files (daemon/options), then the log level. Returns
 * EXIT_OK, -1 for "exit 0 now" (--help, --version), or the exit code to leave with. */
static int configure(struct daemon *d, int argc, char **argv)
{
    int code;
    config_init(&d->cfg, environ, (unsigned)getuid(), options_default_static_dir());
    code = options_parse(argc, argv, environ, &d->cfg);
    if (code != EXIT_OK)
        return code;
    code = options_check(&d->cfg);
    if (code != EXIT_OK)
        return code;
    code = options_load_helper_rules(d->cfg.helper_rules, &d->helper_rules);
    if (code != EXIT_OK)
        return code;
    code = options_load_role_rules(d->cfg.role_rules, &d->role_rules);
    if (code != EXIT_OK)
        return code;
    enum log_level level = LOG_LEVEL_INFO;
    (void)log_level_parse(d->cfg.log_level, &level);
    log_set_level(level);
    return EXIT_OK;
}

/* Binds the socket; the probe answer is filled by announce(). Returns an exit code. */
static int start_ingest(struct daemon *d)
{
    struct ingest_config icfg = {
        .socket_path = d->cfg.socket,
        .socket_mode = d->cfg.socket_mode,
        .max_line_bytes = (size_t)d->cfg.max_line_bytes,
        .max_connections = (size_t)d->cfg.max_connections,
        .hello_timeout_ms = d->cfg.hello_timeout_ms,
        .reserved_connections = (size_t)d->cfg.reserved_connections,
        .on_hello = on_hello,
        .sink = on_records,
        .on_close = on_session_closed,
        .on_capture = on_capture_report,
        .ud = d,
        .stats = &d->stats,
        .probe_answer = d->probe_answer, /* filled once HTTP listens, before the loop runs */
    };
    int r = ingest_start(d->loop, &icfg, &d->ingest);
    if (r < 0) {
        if (r == -EADDRINUSE) {
            fprintf(stderr, "stepscoped: another stepscoped is live on socket %s\n",
                    d->cfg.socket);
            return EXIT_BUSY;
        }
        fprintf(stderr, "stepscoped: cannot listen on socket %s: %s\n", d->cfg.socket,
                uv_strerror(r));
        return r == UV_ENAMETOOLONG ? EXIT_USAGE : EXIT_RUNTIME;
    }
    return EXIT_OK;
}

/* The loop's wake-ups (loopcalls, async handles), then the store and the captures it holds.
 * Returns an exit code. */
static int start_store(struct daemon *d)
{
    struct store_config scfg = {
        .data_dir = d->cfg.data_dir,
        .retention_bytes_per_job = d->cfg.retention_bytes_per_job,
        .max_buffered_bytes = d->cfg.max_buffered_bytes,
        .min_free_bytes = d->cfg.min_free_bytes,
        .durability = d->cfg.durability,
        .stats = &d->stats,
        .on_durable = on_durable,
        .ud = d,
    };
    char err[STORE_ERR_MAX] = "";
    int r = loopcall_init(&d->deletes, d->loop, run_delete, d);
    if (r == 0 && (r = loopcall_init(&d->reloads, d->loop, run_reload, d)) < 0)
        loopcall_close(&d->deletes);
    if (r < 0) {
        fprintf(stderr, "stepscoped: %s\n", strerror(-r));
        return EXIT_RUNTIME;
    }
    /* The async handle must exist before the writer thread can call on_durable. */
    uv_async_init(d->loop, &d->durable_async, on_durable_async);
    d->durable_async.data = d;
    uv_async_init(d->loop, &d->capture_async, on_capture_async);
    d->capture_async.data = d;
    d->async_open = true;
    r = store_open(&scfg, &d->store, err);
    if (r < 0) {
        fprintf(stderr, "stepscoped: data dir %s: %s\n", d->cfg.data_dir,
                err[0] ? err : strerror(-r));
        return store_exit_code(r);
    }

    d->sessions = sessions_new();
    d->captures = d->sessions ? capture_reg_new(d->sessions, CAPTURE_MAX) : NULL;
    r = d->captures ? store_query_captures(d->store, load_capture, load_capture_rank, d) : -ENOMEM;
    if (r < 0) {
        fprintf(stderr, "stepscoped: data dir %s: loading the captures: %s\n", d->cfg.data_dir,
                strerror(-r));
        return r == -ENOMEM ? EXIT_RUNTIME : EXIT_DATA_DIR;
    }
    return EXIT_OK;
}

/* Live analysis, fed with what the store holds before any client is served. Returns an exit
 * code. */
static int start_live(struct daemon *d)
{
    struct live_config lcfg = {
        .rules = d->role_rules,
        .fp_point = d->cfg.fp_point,
        .max_jobs = (size_t)d->cfg.live_max_jobs,
        .bp_point = d->cfg.bp_point,
        /* An imported trace is analysed whole: each of its ranks keeps up to an eighth of the
         * live budget of breakdown spans (1 GiB: 128 MiB, 3.3 M spans; docs/API.md). */
        .bd_import_bytes = d->cfg.live_max_bytes / 8,
    };
    d->live = live_new_config(&lcfg);
    if (!d->live) {
        fprintf(stderr, "stepscoped: out of memory\n");
        return EXIT_RUNTIME;
    }
    live_set_reload(d->live, web_live_reload, d);
    d->replay = (struct replay_config){
        .store = d->store,
        .live = d->live,
        .stats = &d->stats,
        .max_line_bytes = (size_t)d->cfg.max_line_bytes,
        .live_max_bytes = d->cfg.live_max_bytes,
        .live_max_jobs = d->cfg.live_max_jobs,
    };
    int r = replay_all(&d->replay);
    if (r < 0) {
        fprintf(stderr, "stepscoped: data dir %s: replaying the store into live analysis: %s\n",
                d->cfg.data_dir, strerror(-r));
        return EXIT_DATA_DIR;
    }
    return EXIT_OK;
}

/* The cluster shipper (when configured), then the HTTP server. Returns an exit code. */
static int start_web(struct daemon *d)
{
    char err[WEB_ERR_MAX] = "";
    const struct web_captures captures = {
        .create = web_capture_create,
        .list = web_capture_list,
        .cancel = web_capture_cancel,
        .ud = d,
    };
    const struct web_jobs jobs = {.remove = web_job_delete, .ud = d};
    /* Before the web server: /stats shows the backlog from the first answer. */
    char cerr[CLUSTER_ERR_MAX] = "";
    const struct cluster_ops ops = {.drop_ranks = cluster_drop_ranks, .ud = d};
    int r = cluster_start_config(&d->cfg, d->store, d->live, &d->stats, &ops, &d->cluster, cerr);
    if (r < 0) {
        fprintf(stderr, "stepscoped: %s\n", cerr);
        return EXIT_USAGE;
    }

    struct web_config wcfg = {
        .http = d->cfg.http,
        .static_dir = d->cfg.static_dir,
        .threads = (unsigned)d->cfg.http_threads,
        .max_connections = (unsigned)d->cfg.http_max_connections,
        .max_connections_per_ip = (unsigned)d->cfg.http_max_connections_per_ip,
        .timeout_s = (unsigned)d->cfg.http_timeout_s,
        .request_timeout_s = (unsigned)d->cfg.http_request_timeout_s,
        .max_exports = (unsigned)d->cfg.http_max_exports,
        .analysis_timeout_ms = (unsigned)d->cfg.http_analysis_timeout_ms,
        .analysis_max_bytes = (size_t)d->cfg.http_analysis_max_bytes,
        .cache_max_bytes = (size_t)d->cfg.http_cache_max_bytes,
        .max_response_bytes = (size_t)d->cfg.max_response_bytes,
        .version = STEPSCOPE_VERSION,
        .instance = d->instance,
        .socket = d->socket_abs,
        .store = d->store,
        .live = d->live,
        .helper_rules = &d->helper_rules,
        .stats = &d->stats,
        .auth_token = d->cfg.auth_token,
        .allowed_hosts = d->cfg.http_allowed_hosts,
        .metrics_max_ranks = (size_t)d->cfg.metrics_max_ranks,
        .max_line_bytes = (size_t)d->cfg.max_line_bytes,
        .captures = &captures,
        .jobs = &jobs,
        .node = d->cfg.cluster_url[0] ? d->cfg.node : NULL,
    };
    err[0] = '\0';
    r = web_start(&wcfg, &d->web, err);
    explicit_bzero(d->cfg.auth_token, sizeof d->cfg.auth_token); /* web keeps its own copy */
    if (r < 0) {
        fprintf(stderr, "stepscoped: http %s: %s\n", d->cfg.http, err[0] ? err : strerror(-r));
        return EXIT_HTTP;
    }
    return EXIT_OK;
}

/* The flush and drain timers and the signals, on the loop. */
static void start_handles(struct daemon *d)
{
    uv_timer_init(d->loop, &d->flush_timer);
    d->flush_timer.data = d;
    uv_timer_start(&d->flush_timer, on_flush_timer, d->cfg.flush_interval_ms,
                   d->cfg.flush_interval_ms);
    uv_timer_init(d->loop, &d->drain_timer);
    d->drain_timer.data = d;
    uv_signal_init(d->loop, &d->sigterm);
    d->sigterm.data = d;
    uv_signal_start(&d->sigterm, on_signal, SIGTERM);
    uv_signal_init(d->loop, &d->sigint);
    d->sigint.data = d;
    uv_signal_start(&d->sigint, on_signal, SIGINT);
}

/* Says where the daemon listens (stdout and the socket's probe answer). */
static void announce(struct daemon *d)
{
    char addr[64];
    uint16_t port;
    (void)config_parse_hostport(d->cfg.http, addr, sizeof addr, &port);
    bool v6 = strchr(addr, ':') != NULL;
    printf("stepscoped: listening on socket %s, dashboard http://%s%s%s:%u/\n", d->cfg.socket,
           v6 ? "[" : "", addr, v6 ? "]" : "", (unsigned)web_port(d->web));
    snprintf(d->probe_answer, sizeof d->probe_answer,
             "{\"probe\":\"stepscope/1\",\"version\":\"%s\",\"instance\":\"%s\","
             "\"http\":\"%s%s%s:%u\"}\n",
             STEPSCOPE_VERSION, d->instance, v6 ? "[" : "", addr, v6 ? "]" : "",
             (unsigned)web_port(d->web));
    fflush(stdout);
    log_info("data dir %s, static dir %s", d->cfg.data_dir, d->cfg.static_dir);
}

/* After the loop returned: stops what runs, frees what was started. Returns the exit code. */
static int stop(struct daemon *d)
{
    int code = EXIT_OK;
    web_stop(d->web);
    d->web = NULL;
    loopcall_destroy(&d->deletes); /* no HTTP thread is left to call them */
    loopcall_destroy(&d->reloads);
    cluster_stop(d->cluster);
    persist_live_steps(d);
    free(d->changed_ids);
    free(d->rank_ids);
    free(d->rank_steps);
    live_free(d->live);
    d->live = NULL;
    analyse_rules_free(d->role_rules);
    d->role_rules = NULL;
    free(d->tickets);
    store_close(d->store);
    d->store = NULL;
    capture_reg_free(d->captures);
    sessions_free(d->sessions); /* after ingest_close() closed the last session */
    int r = uv_loop_close(d->loop);
    if (r < 0) {
        log_error("event loop did not close cleanly: %s", uv_strerror(r));
        code = EXIT_RUNTIME;
    }
    log_info("stopped");
    return code;
}

/* Start-up failed: undo what was started, in reverse order. */
static void undo_start(struct daemon *d)
{
    cluster_stop(d->cluster);
    web_stop(d->web);
    live_free(d->live);
    analyse_rules_free(d->role_rules);
    store_close(d->store);
    capture_reg_free(d->captures);
    if (d->ingest)
        ingest_close(d->ingest);
    close_async(d);
    uv_run(d->loop, UV_RUN_DEFAULT);
    sessions_free(d->sessions);
    (void)uv_loop_close(d->loop);
}

int main(int argc, char **argv)
{
    static struct daemon d; /* static: zeroed, and stats live as long as any thread */
    int code = configure(&d, argc, argv);
    if (code != EXIT_OK)
        return code < 0 ? EXIT_OK : code;
    raise_fd_limit(&d.cfg);
    signal(SIGPIPE, SIG_IGN);
    pthread_mutex_init(&d.async_lock, NULL);
    d.loop = uv_default_loop();

    /* Which daemon this is, for clients that were given only one of its addresses: the socket
     * answers a probe with the HTTP address and /api/v1/health names the socket, each with the
     * instance, so that a client given both can check they are the same daemon. */
    make_instance(d.instance);
    absolute_path(d.cfg.socket, d.socket_abs, sizeof d.socket_abs);

    /* The socket first: if another daemon is live there, say so before touching its data dir. */
    if ((code = start_ingest(&d)) != EXIT_OK || (code = start_store(&d)) != EXIT_OK ||
        (code = start_live(&d)) != EXIT_OK || (code = start_web(&d)) != EXIT_OK) {
        undo_start(&d);
        return code;
    }
    start_handles(&d);
    announce(&d);
    uv_run(d.loop, UV_RUN_DEFAULT);
    return stop(&d);
}
