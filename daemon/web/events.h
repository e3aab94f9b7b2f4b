/* SPDX-License-Identifier: MIT */
/*
 * events: the Server-Sent Events hub of /api/v1/events (events.c). No libmicrohttpd: a stream
 * parks its connection through answer.h when it has nothing to send.
 */
#ifndef STEPSCOPE_WEB_EVENTS_H
#define STEPSCOPE_WEB_EVENTS_H

#include <stddef.h>

struct web;
struct web_answer;
struct web_req;

/* _start creates the hub and its watcher thread (w->live read from then on; at most max_subs
 * streams at once); returns 0, -ENOMEM or -EAGAIN (w->events may then be set:
 * web__events_free() it). _quiesce stops the watcher and ends every stream; call it before the
 * server stops. _free frees the hub after the server stopped. web__route_events() answers the
 * route: 200 text/event-stream, or 503 (no live, too many). */
#define WEB_EVENTS_MAX_STREAMS 64
int web__events_start(struct web *w, size_t max_subs);
void web__events_quiesce(struct web *w);
void web__events_free(struct web *w);
int web__route_events(struct web *w, const struct web_req *q, struct web_answer *a);

#endif
