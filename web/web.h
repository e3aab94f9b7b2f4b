/* SPDX-License-Identifier: MIT */
/*
 * web: the HTTP server (libmicrohttpd on its own thread pool). It answers the REST API under
 * /api/v1/ (docs/API.md) and serves the dashboard from static_dir. It reads through store_query.h
 * and the shared counters; it never writes. libmicrohttpd is included nowhere else.
 */
#ifndef STEPSCOPE_WEB_H
#define STEPSCOPE_WEB_H

#include <stddef.h>
#include <stdint.h>

#include "../daemon/core/stats.h"

#define WEB_ERR_MAX 256

struct store;
struct web;

struct web_config {
    const char *http;            /* "ADDR:PORT"; port 0 picks a free port (see web_port()) */
    const char *static_dir;      /* dashboard files; "" serves none */
    unsigned threads;            /* worker threads */
    unsigned max_connections;
    unsigned timeout_s;          /* idle connections closed after this */
    size_t max_response_bytes;   /* answers larger than this become 413/500 errors */
    const char *version;         /* reported by /api/v1/health */
    struct store *store;         /* borrowed; read through store_query.h */
    struct stats *stats;         /* borrowed; read, plus http_requests/http_errors bumped */
};

/* Binds and starts serving. Returns 0, -EINVAL (bad address), -EADDRINUSE, or another negative
 * errno; err (WEB_ERR_MAX) gets the reason. */
int web_start(const struct web_config *cfg, struct web **ret_web, char *err);

/* The port actually bound (the chosen one when the config said 0). */
uint16_t web_port(const struct web *w);

/* Stops serving, waits for running requests, frees w. NULL-safe. */
void web_stop(struct web *w);

#endif
