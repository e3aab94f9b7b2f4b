/* SPDX-License-Identifier: MIT */
/*
 * guard: the request deadline against slow clients (guard.c). http.c tells it about connections
 * (their socket and the context slot the server keeps for each) and about the requests on them;
 * a reaper thread shuts down the socket of a request not fully received in time. No
 * libmicrohttpd.
 */
#ifndef STEPSCOPE_WEB_GUARD_H
#define STEPSCOPE_WEB_GUARD_H

#include <stdbool.h>

#include "../core/stats.h"

#define WEB_GUARD_TICK_MS 250 /* how often guard.c checks request deadlines */

struct web_guard;

/* Starts the reaper thread: a request not fully received timeout_s after its first byte has its
 * connection shut down (stats->http_deadline_closed). 0, -ENOMEM or a pthread error. */
int web__guard_start(struct web_guard **ret, unsigned timeout_s, struct stats *stats);
/* Joins the reaper (before the server stops); web__guard_free() after it has stopped. */
void web__guard_stop_thread(struct web_guard *g);
void web__guard_free(struct web_guard *g);
/* A connection on socket fd started (registered in *socket_context) or closed (forgotten).
 * g may be NULL (no deadline). */
void web__guard_notify(struct web_guard *g, int fd, void **socket_context, bool started);
/* The request on the connection of socket_context is all in (or answered already): its deadline
 * stops. */
void web__guard_received(struct web_guard *g, void *socket_context);
/* That request is completed: the next one's deadline starts at its first byte. */
void web__guard_completed(struct web_guard *g, void *socket_context);

#endif
