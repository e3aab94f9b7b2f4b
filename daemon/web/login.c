/* SPDX-License-Identifier: MIT */
/*
 * The dashboard's write routes besides captures (docs/API.md): its login, POST /api/v1/session,
 * which turns the auth token into an HttpOnly cookie so a browser can load the API and
 * EventSource without an Authorization header (the route keeps its public name; elsewhere in the
 * daemon a "session" is a trainer's connection), and DELETE /api/v1/jobs/{job}, handed to the
 * daemon through web_jobs (web.h), which runs it on its loop.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <microhttpd.h>

#include "web_int.h"

int web__login_post(struct web *w, struct MHD_Connection *c, const char *body, size_t len)
{
    char token[WEB_TOKEN_MAX];
    size_t n;
    int r = web__parse_token_body(body, len, token, sizeof token, &n);
    if (r < 0 && r != -ENAMETOOLONG)
        return web__send_error(w, c, MHD_HTTP_BAD_REQUEST, "bad_request",
                               "the body must be {\"token\": \"<auth token>\"}");
    /* A token longer than any the daemon takes is simply wrong. */
    bool ok = r == 0 && web__token_equal(token, n, w->auth_token, w->auth_token_len);
    explicit_bzero(token, sizeof token);
    if (!ok)
        return web__send_error(w, c, MHD_HTTP_UNAUTHORIZED, "unauthorized", "wrong token");
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!resp)
        return web__queue(w, c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (w->auth_token_len) {
        char cookie[sizeof w->auth_cookie + 96];
        snprintf(cookie, sizeof cookie,
                 "stepscope_token=%s; HttpOnly; SameSite=Strict; Path=/api", w->auth_cookie);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_SET_COOKIE, cookie);
        explicit_bzero(cookie, sizeof cookie);
    }
    return web__queue(w, c, MHD_HTTP_NO_CONTENT, resp);
}

int web__route_delete(struct web *w, struct MHD_Connection *c, const struct web_route *r)
{
    if (!w->has_jobs)
        return web__send_error(w, c, MHD_HTTP_SERVICE_UNAVAILABLE, "unavailable",
                               "jobs cannot be deleted here");
    char msg[RECORD_NAME_MAX + 96];
    int e = w->jobs.remove(w->jobs.ud, r->job);
    switch (e) {
    case 0: {
        struct MHD_Response *resp =
            MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
        return web__queue(w, c, MHD_HTTP_NO_CONTENT, resp);
    }
    case -ENOENT:
        snprintf(msg, sizeof msg, "no job \"%s\"", r->job);
        return web__send_error(w, c, MHD_HTTP_NOT_FOUND, "not_found", msg);
    case -EBUSY:
        snprintf(msg, sizeof msg, "job \"%s\" has connected clients; delete it once they are gone",
                 r->job);
        return web__send_error(w, c, MHD_HTTP_CONFLICT, "conflict", msg);
    case -ESHUTDOWN:
        return web__send_error(w, c, MHD_HTTP_SERVICE_UNAVAILABLE, "unavailable",
                               "the daemon is shutting down");
    case -ETIMEDOUT:
        return web__send_error(w, c, MHD_HTTP_SERVICE_UNAVAILABLE, "busy",
                               "the deletion is not committed yet; retry");
    default:
        return web__send_store_error(w, c, e, "delete job");
    }
}
