/* SPDX-License-Identifier: MIT */
/*
 * The capture routes (docs/API.md "Captures"): POST /api/v1/jobs/{job}/captures, which with
 * POST /api/v1/session (login.c) are the routes that take a body, and GET of the list and of one capture. The body is gathered here (capped at
 * WEB_POST_BODY_MAX) and handed, with the job, to the daemon's registry through web_captures
 * (web.h), which parses and validates it; web keeps no capture state.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <microhttpd.h>

#include "web_int.h"

struct web_post {
    bool too_big;   /* the body passed WEB_POST_BODY_MAX: the rest is skipped, 413 at the end */
    size_t len;
    char body[WEB_POST_BODY_MAX];
    struct web_route route;
};

void web__post_free(void *con_cls)
{
    free(con_cls);
}

int web__post_begin(struct web *w, struct MHD_Connection *c, const char *url, void **con_cls)
{
    struct web_route r;
    if (strlen(url) > WEB_PATH_MAX || web__route_parse(url, &r) < 0)
        r.id = WEB_ROUTE_API_UNKNOWN;
    if (r.id != WEB_ROUTE_CAPTURES && r.id != WEB_ROUTE_LOGIN)
        return web__send_405(w, c, web__route_allow(r.id),
                             "POST only to /api/v1/jobs/{job}/captures and /api/v1/session");
    /* A form a browser may send cross-site without asking is refused (CSRF). */
    if (!web__is_json_type(c))
        return web__send_error(w, c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type",
                               "the body must be sent as Content-Type: application/json");
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_CONTENT_LENGTH);
    int64_t n;
    if (cl && web__parse_i64(cl, strlen(cl), 0, INT64_MAX, &n) == 0 && n > WEB_POST_BODY_MAX)
        return web__send_error(w, c, MHD_HTTP_CONTENT_TOO_LARGE, "body_too_large",
                               "the body is longer than 16384 bytes");
    struct web_post *p = malloc(sizeof *p);
    if (!p)
        return web__send_error(w, c, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal",
                               "out of memory");
    p->too_big = false;
    p->len = 0;
    p->route = r;
    *con_cls = p;
    return MHD_YES;
}

static int create(struct web *w, struct MHD_Connection *c, struct web_post *p)
{
    if (p->too_big)
        return web__send_error(w, c, MHD_HTTP_CONTENT_TOO_LARGE, "body_too_large",
                               "the body is longer than 16384 bytes");
    if (p->route.id == WEB_ROUTE_LOGIN)
        return web__login_post(w, c, p->body, p->len);
    if (!w->has_captures)
        return web__send_error(w, c, MHD_HTTP_SERVICE_UNAVAILABLE, "unavailable",
                               "captures are not available");
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    char err[WEB_ERR_MAX] = "";
    int r = w->captures.create(w->captures.ud, p->route.job, p->body, p->len, &b, err);
    if (r == 0)
        return web__send_json(w, c, MHD_HTTP_CREATED, &b, NULL);
    sbuf_done(&b);
    switch (r) {
    case -ENOENT: {
        char msg[RECORD_NAME_MAX + 16];
        snprintf(msg, sizeof msg, "no job \"%s\"", p->route.job);
        return web__send_error(w, c, MHD_HTTP_NOT_FOUND, "not_found", msg);
    }
    case -EINVAL:
        return web__send_error(w, c, MHD_HTTP_BAD_REQUEST, "bad_request", err);
    case -EMSGSIZE:
        return web__send_error(w, c, MHD_HTTP_CONTENT_TOO_LARGE, "body_too_large", err);
    case -EHOSTDOWN: /* no open session could serve it: the job ended, was imported, ... */
        return web__send_error(w, c, MHD_HTTP_CONFLICT, "no_live_session", err);
    case -EDQUOT: /* capture_max_open captures of the job have not ended */
        return web__send_error(w, c, MHD_HTTP_TOO_MANY_REQUESTS, "too_many_captures", err);
    case -ENOSPC:
        return web__send_error(w, c, MHD_HTTP_SERVICE_UNAVAILABLE, "too_many_captures",
                               "the daemon keeps no more captures");
    default:
        return web__send_store_error(w, c, r, "captures");
    }
}

int web__post_data(struct web *w, struct MHD_Connection *c, void *con_cls, const char *data,
                   size_t *size)
{
    struct web_post *p = con_cls;
    if (*size == 0)
        return create(w, c, p);
    if (p->too_big || *size > sizeof p->body - p->len)
        p->too_big = true;
    else
        memcpy(p->body + p->len, data, *size);
    if (!p->too_big)
        p->len += *size;
    *size = 0;
    return MHD_YES;
}

int web__route_captures(struct web *w, struct MHD_Connection *c, const struct web_route *r)
{
    if (!w->has_captures)
        return web__send_error(w, c, MHD_HTTP_SERVICE_UNAVAILABLE, "unavailable",
                               "captures are not available");
    int64_t id = -1;
    if (r->id == WEB_ROUTE_CAPTURE &&
        web__parse_i64(r->kind, strlen(r->kind), 1, INT64_MAX, &id) < 0)
        return web__send_error(w, c, MHD_HTTP_NOT_FOUND, "not_found", "no such capture");
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    int e = w->captures.list(w->captures.ud, r->job, id, &b);
    if (e == 0)
        return web__send_json(w, c, MHD_HTTP_OK, &b, NULL);
    sbuf_done(&b);
    if (e == -ENOENT)
        return web__send_error(w, c, MHD_HTTP_NOT_FOUND, "not_found",
                               id < 0 ? "no such job" : "no such capture in this job");
    return web__send_store_error(w, c, e, "captures");
}
