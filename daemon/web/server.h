/* SPDX-License-Identifier: MIT */
/*
 * server: the state of one HTTP server (struct web) that every file of daemon/web/ reads, and
 * the limits they share. Never included from outside daemon/web/ and tests/; no libmicrohttpd
 * (the daemon handle is a pointer only http.c dereferences).
 *
 * The files, by layer (docs/ARCHITECTURE.md):
 *   parse.c parse.h        pure request parsing (the fuzzer's)
 *   render.c render.h      documents from store structs, live views and the counters
 *   answer.c answer.h      what a route answers; request.c reads query parameters
 *   http.c                 libmicrohttpd: the daemon, dispatch, auth, answers into responses
 *   routes*.c routes.h     the handlers, one file per family; timeline.c the trace export
 *   cache.c cache.h        the live routes' answer cache
 *   guard.c guard.h        the request deadline; events.c events.h the event stream
 */
#ifndef STEPSCOPE_WEB_SERVER_H
#define STEPSCOPE_WEB_SERVER_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../analyse/analyse_helper.h"
#include "../live/live_query.h"
#include "../core/stats.h"
#include "parse.h"
#include "web.h"

#define WEB_HOSTS_MAX 1280                 /* web->hosts: the defaults and http_allowed_hosts */
#define WEB_HOST_NAME_MAX 136              /* the bound address as a Host names it, "[v6]" */

struct MHD_Daemon;
struct web_analysis;
struct web_cache;
struct web_events;
struct web_guard;

struct web {
    struct MHD_Daemon *mhd;         /* http.c's only */
    uint16_t port;                 /* bound port */
    struct store *store;           /* borrowed; NULL: API answers 503 */
    struct live *live;             /* borrowed; NULL: live routes answer 503 */
    struct analyse_helper_rules helper_rules; /* copied from the config, or the defaults */
    struct stats *stats;           /* borrowed */
    size_t max_line_bytes;         /* the stored lines' line_decoder (core/decode.h) */
    size_t max_response_bytes;
    char version[64];
    char instance[64];
    char socket[PATH_MAX];
    char node[80];                 /* this node's name in a cluster; "" when not in one */
    char static_root[PATH_MAX];    /* realpath() of static_dir; "" serves no files */
    size_t static_root_len;
    char auth_token[WEB_TOKEN_MAX]; /* "" : no authentication */
    size_t auth_token_len;
    char auth_cookie[2 * WEB_TOKEN_MAX]; /* the token in hex: the stepscope_token cookie */
    char hosts[WEB_HOSTS_MAX];     /* Host names answered, lower case, each followed by ',' */
    bool any_host;                 /* every Host is answered (a token guards the daemon) */
    bool has_jobs;
    struct web_jobs jobs;          /* copied from the config when has_jobs */
    size_t metrics_max_ranks;
    struct web_cache *cache;       /* live answers (cache.c); NULL: none */
    struct web_events *events;     /* events.c's hub; NULL until web__events_start() */
    bool has_captures;
    struct web_captures captures;  /* copied from the config when has_captures */
    struct web_guard *guard;       /* guard.c's request deadline; NULL: none */
    _Atomic unsigned exports_active; /* streamed answers in flight (answer.h web__export_take()) */
    unsigned exports_max;          /* past it a new export answers 503 busy */
    _Atomic unsigned analyses_active; /* summaries and benchmarks being computed */
    pthread_mutex_t analyses_lock; /* guards analyses and their done flags (routes_summary.c) */
    pthread_cond_t analyses_cond;  /* an analysis finished */
    struct web_analysis *analyses; /* running, or done and not yet answered */
    _Atomic bool analyses_stopping; /* web_stop(): running analyses stop, new ones are refused */
    bool analyses_ready;           /* the lock and cond are initialised */
    unsigned analyses_max;         /* past it a new one answers 503 busy: threads - 1, so one
                                      worker is always left for /health and the dashboard */
    int64_t analysis_timeout_ns;   /* an analysis still reading this long answers 503 deadline */
    _Atomic uint64_t analyses_bytes; /* what the running analyses are charged, together */
    uint64_t analysis_max_bytes;   /* their budget: a charge past it stops the analysis */
};

/* Compares given[0, n) with token[0, len) in time that depends on len only (http.c). */
bool web__token_equal(const char *given, size_t n, const char *token, size_t len);

#endif
