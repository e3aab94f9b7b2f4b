/* SPDX-License-Identifier: MIT */
/*
 * web: the HTTP server (libmicrohttpd on its own thread pool). It answers the REST API under
 * /api/v1/ (docs/API.md) and serves the dashboard from static_dir. It reads through store_query.h
 * and the shared counters; it never writes. libmicrohttpd is included nowhere else.
 *
 * Threading: web_start() and web_stop() from one thread (main.c); requests are handled on MHD's
 * own threads, which call store_query_*() concurrently and bump stats->http_* atomically.
 */
#ifndef STEPSCOPE_WEB_H
#define STEPSCOPE_WEB_H

#include <stddef.h>
#include <stdint.h>

#include "../core/stats.h"

#define WEB_ERR_MAX 256

struct analyse_helper_rules;
struct capture_view;
struct live;
struct record;
struct sbuf;
struct store;
struct web;

/* On-demand captures (docs/API.md "Captures"): main.c wires the daemon's registry
 * (daemon/capture), so web parses no JSON body itself and holds no capture state; it renders the
 * copies the registry gives (struct capture_view, capture.h). Both run on HTTP threads. */
struct web_captures {
    /* A POST body for job: sets *ret (one view, freed with capture_views_free(*ret, 1)) and
     * returns 0; -ENOENT: no such job; -EINVAL: a bad body, err (WEB_ERR_MAX bytes) starts with
     * the bad field's name; -EMSGSIZE: body too long; -ENOSPC: too many captures; -ENOMEM; -EIO. */
    int (*create)(void *ud, const char *job, const char *body, size_t len,
                  struct capture_view **ret, char *err);
    /* The job's id and its captures (id < 0) or capture id, into *ret_job_id, *ret and *ret_n
     * (freed with capture_views_free()): 0, -ENOENT (job or capture), -ENOMEM, -EIO. */
    int (*list)(void *ud, const char *job, int64_t id, int64_t *ret_job_id,
                struct capture_view **ret, size_t *ret_n);
    /* Cancels what has not started of the series of capture id of job (capture_reg_cancel()):
     * the number of parts cancelled (>= 0); -ENOENT (job or capture), -EIO. */
    int (*cancel)(void *ud, const char *job, int64_t id);
    void *ud;
};

/* Job deletion (docs/API.md "Delete a job"): main.c runs it on its loop, which owns the store's
 * tables and live. remove() runs on an HTTP thread and blocks until the deletion is committed:
 * 0; -ENOENT (no such job); -EBUSY (a client of the job is connected); -ESHUTDOWN, -ETIMEDOUT,
 * -ENOMEM. */
struct web_jobs {
    int (*remove)(void *ud, const char *job);
    void *ud;
};

struct web_config {
    const char *http;            /* "ADDR:PORT"; port 0 picks a free port (see web_port()) */
    const char *static_dir;      /* dashboard files; "" serves none; copied (resolved) at start */
    unsigned threads;            /* worker threads */
    unsigned max_connections;
    unsigned max_connections_per_ip; /* from one client address; 0: no limit of its own */
    unsigned timeout_s;          /* idle connections closed after this */
    unsigned max_exports;        /* timeline exports streamed at once; 0: 32 */
    unsigned request_timeout_s;  /* a request (headers and body) not fully received this long
                                    after its first byte has its connection closed; 0: never */
    unsigned analysis_timeout_ms; /* an analysis (summaries, benchmark) still reading the store
                                    this long answers 503 deadline; 0: 30000 */
    size_t analysis_max_bytes;   /* memory the running analyses may hold together (estimated,
                                    routes_summary.c); 0: 1 GiB */
    size_t cache_max_bytes;      /* the answer cache's kept answers together (cache.h); 0: 64 MiB */
    size_t max_response_bytes;   /* answers larger than this become 413 response_too_large */
    const char *version;         /* reported by /api/v1/health; copied at start (63 bytes kept) */
    const char *instance;        /* this run of the daemon, reported by /api/v1/health (the same
                                    as its socket's probe answer); copied (63 bytes kept) */
    const char *socket;          /* the ingest socket's absolute path, reported by /api/v1/health
                                    so that a client given only the HTTP address finds it; copied */
    struct store *store;         /* borrowed; read through store_query.h. NULL: the routes that
                                    need it answer 503 "unavailable" (health and stats still
                                    answer, stats with "store":null) */
    struct live *live;           /* borrowed; snapshots read through live_query.h. NULL: the
                                    live routes (steps, step-trace, operators) answer 503 */
    const struct analyse_helper_rules *helper_rules; /* thresholds of /helper and /ranks;
                                    copied at start; NULL: analyse_helper_rules_default() */
    struct stats *stats;         /* borrowed; read, plus http_requests/http_errors bumped */
    const char *auth_token;      /* NULL or "": no authentication, and only a loopback address
                                    may be bound. Else every request but /api/v1/health needs
                                    "Authorization: Bearer <token>" (401 otherwise); copied */
    const char *allowed_hosts;   /* NULL or a comma-separated list of Host names answered
                                    besides 127.0.0.1, localhost, [::1] and the bound address
                                    (any port); "*": any, which needs auth_token. NULL or ""
                                    with a token on a wildcard address: any. Others get 421 */
    size_t metrics_max_ranks;    /* (job, rank) pairs GET /metrics exports at most */
    size_t max_line_bytes;       /* longest stored line the summary and benchmark routes
                                    decode (config max_line_bytes; 0: DECODE_LINE_MAX_DEFAULT) */
    const struct web_captures *captures; /* copied at start; NULL: the capture routes answer 503 */
    const struct web_jobs *jobs; /* copied at start; NULL: DELETE of a job answers 503 */
    const char *node;            /* this node's name in a cluster (ranks_detail's node of its
                                    own ranks); NULL or "": not in one; copied */
};

/* Binds cfg->http (an IPv4 or IPv6 literal, "[v6]:port" for IPv6; no host names) and starts
 * serving on MHD's threads (cfg->threads; 0 counts as 1). Zero max_connections or timeout_s
 * leave MHD's defaults; zero max_response_bytes means no cap. cfg->stats is required; cfg itself
 * is not kept, its strings are copied; store and stats must outlive w. A static_dir that cannot
 * be resolved is logged and no files are served (the API still answers). Returns 0 and sets
 * *ret_web; -EINVAL (bad address, token too long, allowed_hosts too long, or no stats), -EPERM
 * (a non-loopback address, or allowed_hosts "*", without auth_token), -EADDRINUSE, -EADDRNOTAVAIL, -EACCES (from the
 * bind), -ENOMEM, or -EIO (MHD would not start); err (WEB_ERR_MAX) gets the reason. *ret_web is
 * untouched on failure. */
int web_start(const struct web_config *cfg, struct web **ret_web, char *err);

/* The port actually bound (the chosen one when the config said 0). Any thread. */
uint16_t web_port(const struct web *w);

/* Stops serving, waits for running requests to finish, closes the listening socket and frees w.
 * NULL-safe. Call it before closing the store. */
void web_stop(struct web *w);

#endif
