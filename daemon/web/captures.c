/* SPDX-License-Identifier: MIT */
/*
 * The capture routes (docs/API.md "Captures"): POST /api/v1/jobs/{job}/captures, which with
 * POST /api/v1/session (login.c) are the routes that take a body, POST .../captures/{id}/cancel
 * (its body is ignored), and GET of the list and of one capture. A POST is judged before its body is read (web__post_check()); http.c gathers the
 * body (capped at WEB_POST_BODY_MAX) and web__route_post() hands it, with the job, to the
 * daemon's registry through web_captures (web.h), which parses and validates it; web keeps no
 * capture state, and renders the copies of captures the registry gives (render_capture()).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "answer.h"
#include "routes.h"
#include "../capture/capture.h"

/* A capture as docs/API.md "Captures" shows it. */
static void render_capture(struct sbuf *b, const struct capture_view *c)
{
    sbuf_printf(b, "{\"id\":%lld,\"job_id\":%lld,\"created_us\":", (long long)c->id,
                (long long)c->job_id);
    sbuf_json_us(b, c->created_ns);
    if (c->start_step < 0)
        sbuf_adds(b, ",\"start\":\"next\"");
    else
        sbuf_printf(b, ",\"start\":%lld", (long long)c->start_step);
    sbuf_printf(b,
                ",\"steps\":%lld,\"series\":%lld,\"window\":%lld,\"every\":%lld,\"repeat\":%lld,"
                "\"what\":",
                (long long)c->steps, (long long)c->series, (long long)c->window,
                (long long)c->every, (long long)c->repeat);
    capture_what_json(b, c->what);
    sbuf_printf(b, ",\"all_ranks\":%s,\"state\":\"%s\",\"ranks\":[",
                c->all_ranks ? "true" : "false", capture_state_name(c->state));
    for (size_t i = 0; i < c->n_parts; i++) {
        const struct capture_view_part *p = &c->parts[i];
        sbuf_printf(b, "%s{\"rank\":%lld,\"state\":\"%s\",\"first_step\":", i ? "," : "",
                    (long long)p->rank, capture_state_name(p->state));
        if (p->first_step < 0)
            sbuf_adds(b, "null,\"last_step\":null");
        else
            sbuf_printf(b, "%lld,\"last_step\":%lld", (long long)p->first_step,
                        (long long)(p->first_step + c->steps - 1));
        sbuf_adds(b, ",\"reason\":");
        if (p->reason[0])
            sbuf_json_strz(b, p->reason);
        else
            sbuf_adds(b, "null");
        sbuf_adds(b, ",\"updated_us\":");
        sbuf_json_us(b, p->updated_ns);
        sbuf_addc(b, '}');
    }
    sbuf_adds(b, "]}");
}

/* POST .../captures/{id}/cancel: {"cancelled":N,"captures":[the series' windows]}. */
static int cancel(struct web *w, const struct web_route *r, struct web_answer *a)
{
    int64_t id = -1, job_id = 0;
    if (web__parse_i64(r->kind, strlen(r->kind), 1, INT64_MAX, &id) < 0)
        return web__error(a, WEB_HTTP_NOT_FOUND, "not_found", "no such capture");
    int n = w->captures.cancel(w->captures.ud, r->job, id);
    struct capture_view *v = NULL;
    size_t nv = 0;
    int e = n < 0 ? n : w->captures.list(w->captures.ud, r->job, -1, &job_id, &v, &nv);
    if (e == -ENOENT)
        return web__error(a, WEB_HTTP_NOT_FOUND, "not_found", "no such capture in this job");
    if (e < 0)
        return web__store_error(a, e, "captures");
    int64_t series = id;
    for (size_t i = 0; i < nv; i++)
        if (v[i].id == id)
            series = v[i].series;
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    sbuf_printf(&b, "{\"job_id\":%lld,\"series\":%lld,\"cancelled\":%d,\"captures\":[",
                (long long)job_id, (long long)series, n);
    bool first = true;
    for (size_t i = 0; i < nv; i++) {
        if (v[i].series != series)
            continue;
        if (!first)
            sbuf_addc(&b, ',');
        first = false;
        render_capture(&b, &v[i]);
    }
    sbuf_adds(&b, "]}");
    capture_views_free(v, nv);
    return web__json(w, a, WEB_HTTP_OK, &b);
}

int web__post_check(const struct web_req *q, const char *url, struct web_route *ret_route,
                    struct web_answer *a)
{
    struct web_route r;
    if (strlen(url) > WEB_PATH_MAX || web__route_parse(url, &r) < 0)
        r.id = WEB_ROUTE_API_UNKNOWN;
    if (r.id != WEB_ROUTE_CAPTURES && r.id != WEB_ROUTE_CAPTURE_CANCEL &&
        r.id != WEB_ROUTE_LOGIN) {
        web__error_405(a, web__route_allow(r.id),
                       "POST only to /api/v1/jobs/{job}/captures, "
                       "/api/v1/jobs/{job}/captures/{id}/cancel and /api/v1/session");
        return -1;
    }
    /* A form a browser may send cross-site without asking is refused (CSRF). */
    if (!web__req_is_json(q)) {
        web__error(a, WEB_HTTP_UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type",
                   "the body must be sent as Content-Type: application/json");
        return -1;
    }
    const char *cl = web__req_header(q, "Content-Length");
    int64_t n;
    if (cl && web__parse_i64(cl, strlen(cl), 0, INT64_MAX, &n) == 0 && n > WEB_POST_BODY_MAX) {
        web__error(a, WEB_HTTP_CONTENT_TOO_LARGE, "body_too_large",
                   "the body is longer than 16384 bytes");
        return -1;
    }
    *ret_route = r;
    return 0;
}

int web__route_post(struct web *w, const struct web_route *r, const char *body, size_t len,
                    bool too_big, struct web_answer *a)
{
    if (too_big)
        return web__error(a, WEB_HTTP_CONTENT_TOO_LARGE, "body_too_large",
                          "the body is longer than 16384 bytes");
    if (r->id == WEB_ROUTE_LOGIN)
        return web__login_post(w, body, len, a);
    if (!w->has_captures)
        return web__error(a, WEB_HTTP_SERVICE_UNAVAILABLE, "unavailable",
                          "captures are not available");
    if (r->id == WEB_ROUTE_CAPTURE_CANCEL)
        return cancel(w, r, a);
    char err[WEB_ERR_MAX] = "";
    struct capture_view *v = NULL;
    int e = w->captures.create(w->captures.ud, r->job, body, len, &v, err);
    if (e == 0) {
        struct sbuf b;
        sbuf_init(&b, w->max_response_bytes);
        render_capture(&b, v);
        capture_views_free(v, 1);
        return web__json(w, a, WEB_HTTP_CREATED, &b);
    }
    switch (e) {
    case -ENOENT: {
        char msg[RECORD_NAME_MAX + 16];
        snprintf(msg, sizeof msg, "no job \"%s\"", r->job);
        return web__error(a, WEB_HTTP_NOT_FOUND, "not_found", msg);
    }
    case -EINVAL:
        return web__error(a, WEB_HTTP_BAD_REQUEST, "bad_request", err);
    case -EMSGSIZE:
        return web__error(a, WEB_HTTP_CONTENT_TOO_LARGE, "body_too_large", err);
    case -EHOSTDOWN: /* no open session could serve it: the job ended, was imported, ... */
        return web__error(a, WEB_HTTP_CONFLICT, "no_live_session", err);
    case -EDQUOT: /* capture_max_open captures of the job have not ended */
        return web__error(a, WEB_HTTP_TOO_MANY_REQUESTS, "too_many_captures", err);
    case -ENOSPC:
        return web__error(a, WEB_HTTP_SERVICE_UNAVAILABLE, "too_many_captures",
                          err[0] ? err : "the daemon keeps no more captures");
    default:
        return web__store_error(a, e, "captures");
    }
}

int web__route_captures(struct web *w, const struct web_route *r, struct web_answer *a)
{
    if (!w->has_captures)
        return web__error(a, WEB_HTTP_SERVICE_UNAVAILABLE, "unavailable",
                          "captures are not available");
    int64_t id = -1;
    if (r->id == WEB_ROUTE_CAPTURE &&
        web__parse_i64(r->kind, strlen(r->kind), 1, INT64_MAX, &id) < 0)
        return web__error(a, WEB_HTTP_NOT_FOUND, "not_found", "no such capture");
    int64_t job_id = 0;
    struct capture_view *v = NULL;
    size_t n = 0;
    int e = w->captures.list(w->captures.ud, r->job, id, &job_id, &v, &n);
    if (e == 0) {
        struct sbuf b;
        sbuf_init(&b, w->max_response_bytes);
        if (id >= 0) {
            render_capture(&b, &v[0]);
        } else {
            sbuf_printf(&b, "{\"job_id\":%lld,\"captures\":[", (long long)job_id);
            for (size_t i = 0; i < n; i++) {
                if (i)
                    sbuf_addc(&b, ',');
                render_capture(&b, &v[i]);
            }
            sbuf_adds(&b, "]}");
        }
        capture_views_free(v, n);
        return web__json(w, a, WEB_HTTP_OK, &b);
    }
    if (e == -ENOENT)
        return web__error(a, WEB_HTTP_NOT_FOUND, "not_found",
                          id < 0 ? "no such job" : "no such capture in this job");
    return web__store_error(a, e, "captures");
}
