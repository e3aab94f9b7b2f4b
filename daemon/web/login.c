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

#include "answer.h"
#include "routes.h"

int web__login_post(struct web *w, const char *body, size_t len, struct web_answer *a)
{
    char token[WEB_TOKEN_MAX];
    size_t n;
    int r = web__parse_token_body(body, len, token, sizeof token, &n);
    if (r < 0 && r != -ENAMETOOLONG)
        return web__error(a, WEB_HTTP_BAD_REQUEST, "bad_request",
                          "the body must be {\"token\": \"<auth token>\"}");
    /* A token longer than any the daemon takes is simply wrong. */
    bool ok = r == 0 && web__token_equal(token, n, w->auth_token, w->auth_token_len);
    explicit_bzero(token, sizeof token);
    if (!ok)
        return web__error(a, WEB_HTTP_UNAUTHORIZED, "unauthorized", "wrong token");
    web__answer_done(a);
    a->status = WEB_HTTP_NO_CONTENT;
    a->cache_control = "no-store";
    /* The cookie's value is wiped with the answer (web__answer_done()). */
    if (w->auth_token_len &&
        web__answer_header(a, "Set-Cookie",
                           "stepscope_token=%s; HttpOnly; SameSite=Strict; Path=/api",
                           w->auth_cookie) < 0)
        return web__error(a, WEB_HTTP_INTERNAL_SERVER_ERROR, "internal", NULL);
    return 0;
}

int web__route_delete(struct web *w, const struct web_route *r, struct web_answer *a)
{
    if (!w->has_jobs)
        return web__error(a, WEB_HTTP_SERVICE_UNAVAILABLE, "unavailable",
                          "jobs cannot be deleted here");
    char msg[RECORD_NAME_MAX + 96];
    int e = w->jobs.remove(w->jobs.ud, r->job);
    switch (e) {
    case 0:
        web__answer_done(a);
        a->status = WEB_HTTP_NO_CONTENT;
        return 0;
    case -ENOENT:
        snprintf(msg, sizeof msg, "no job \"%s\"", r->job);
        return web__error(a, WEB_HTTP_NOT_FOUND, "not_found", msg);
    case -EBUSY:
        snprintf(msg, sizeof msg, "job \"%s\" has connected clients; delete it once they are gone",
                 r->job);
        return web__error(a, WEB_HTTP_CONFLICT, "conflict", msg);
    case -ESHUTDOWN:
        return web__error(a, WEB_HTTP_SERVICE_UNAVAILABLE, "unavailable",
                          "the daemon is shutting down");
    case -ETIMEDOUT:
        return web__error(a, WEB_HTTP_SERVICE_UNAVAILABLE, "busy",
                          "the deletion is not committed yet; retry");
    default:
        return web__store_error(a, e, "delete job");
    }
}
